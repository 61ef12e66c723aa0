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
        let text: Vec<String> = w.history.events.iter().map(leaselab_trace::event_line).collect();
        prop_assert!(d.is_empty(), "{}\n--- history:\n{}", d.join("\n"), text.join("\n"));
    }
}

/// The generator reaches the corners it exists for: every statement kind finds its row locked
/// by another transaction, a client disconnects while its statement waits, a database crashes
/// while statements wait, REPEATABLE READ transactions read, and the clock lands exactly on an
/// expiry.
#[test]
fn generated_schedules_reach_every_corner() {
    use leaselab_model::{Op, Outcome};
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
    use std::collections::BTreeMap;
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &[3; 32]),
    );
    let mut seen: BTreeMap<&'static str, u32> = BTreeMap::new();
    for _ in 0..2000 {
        let s = schedule(40).new_tree(&mut runner).expect("draws").current();
        let mut w = World::with_backend(Model::new(s.config.clone()));
        let mut client = Client::new(s.actors);
        let mut waiting = 0usize;
        let mut rr = std::collections::BTreeSet::new();
        for intent in &s.intents {
            let Some(e) = client.event(intent) else {
                continue;
            };
            let got = w.rerun(&e);
            client.observe(&e, &got);
            let mut hit = |k: &'static str| *seen.entry(k).or_default() += 1;
            if got == Outcome::Blocked {
                waiting += 1;
                hit(match e.op {
                    Op::Acquire { .. } => "blocked acquire",
                    Op::Renew { .. } => "blocked renew",
                    Op::Release { .. } => "blocked release",
                    Op::Write { .. } => "blocked write",
                    Op::Fence { .. } => "blocked fence",
                    Op::Upsert { .. } => "blocked upsert",
                    Op::Publish { .. } => "blocked publish",
                    _ => "blocked other",
                });
            }
            match (&e.op, &got) {
                (Op::Disconnect { db }, Outcome::Ok)
                    if w.history.events.iter().rev().skip(1).any(|x| {
                        x.actor == e.actor
                            && x.op.db() == Some(*db)
                            && x.outcome == Outcome::Blocked
                    }) && waiting > 0 =>
                {
                    hit("disconnect after a wait")
                }
                (Op::Crash { .. }, Outcome::Ok) if waiting > 0 => hit("crash with waiters"),
                (Op::BeginRepeatableRead { .. }, Outcome::Ok) => {
                    rr.insert(e.actor.as_str().to_string());
                }
                (Op::ReadFloor { .. } | Op::ReadLease { .. } | Op::ReadPart { .. }, _)
                    if rr.contains(e.actor.as_str()) =>
                {
                    hit("read in repeatable read")
                }
                (_, Outcome::Error(r)) if r == "sqlstate-40001" => hit("serialization failure"),
                (Op::Acquire { .. }, Outcome::Granted { .. }) => {
                    let prev =
                        w.history
                            .events
                            .iter()
                            .rev()
                            .skip(1)
                            .find_map(|x| match x.outcome {
                                Outcome::Granted { expires, .. } | Outcome::Renewed { expires } => {
                                    Some(expires)
                                }
                                _ => None,
                            });
                    if prev == Some(leaselab_model::Expiry::At(e.at)) {
                        hit("acquire exactly at expiry");
                    }
                }
                _ => {}
            }
        }
    }
    for corner in [
        "blocked acquire",
        "blocked renew",
        "blocked release",
        "blocked write",
        "blocked fence",
        "blocked upsert",
        "blocked publish",
        "disconnect after a wait",
        "crash with waiters",
        "read in repeatable read",
        "serialization failure",
        "acquire exactly at expiry",
    ] {
        assert!(
            seen.get(corner).copied().unwrap_or(0) > 0,
            "never reached: {corner}; reached: {seen:?}"
        );
    }
    println!("corners reached in 2,000 schedules: {seen:?}");
}
