//! Generated schedules on the model alone: the checkers' facts equal the model's ledger of
//! what was committed (the second oracle), over thousands of schedules in every configuration.

use leaselab_checkers::{facts::derive, ledger::cross_check};
use leaselab_gen::{schedule, Client};
use leaselab_model::{Model, World};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(3000),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn checker_facts_equal_the_model_ledger(s in schedule(60)) {
        let mut w = World::with_backend(Model::new(s.config.clone()));
        let mut client = Client::new(s.actors);
        for intent in &s.intents {
            let Some(e) = client.event(intent) else { continue };
            let got = w.rerun(&e);
            client.observe(&e, &got);
        }
        let d = cross_check(&derive(&w.history), &w.model.ledger());
        let text: Vec<String> = w.history.events.iter().map(leaselab_model::trace::event_line).collect();
        prop_assert!(d.is_empty(), "{}\n--- history:\n{}", d.join("\n"), text.join("\n"));
    }
}
