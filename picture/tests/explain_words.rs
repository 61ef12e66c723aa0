//! `explain` says only what the history shows, from the facts the checkers use: a release that
//! waited took effect at its commit (not at its reply), and a reused token is named as a cause
//! only when I2 saw one.

use leaselab_checkers::check;
use leaselab_model::prelude::*;
use leaselab_picture::{explain, Story};

#[test]
fn a_release_that_waited_is_told_at_its_commit_window_and_breaks_nothing() {
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../traces/trust2-release-collected-after-grant.trace"
    );
    let text = std::fs::read_to_string(file).expect("committed trace");
    let t = leaselab_trace::Trace::parse(&text, file).expect("parses");
    let report = check(&t.history);
    let story = Story::new(&t.history, &t.config, &report);
    let text = explain::render(&story, "release collected late");
    assert!(
        text.contains("took effect when it committed, between t=300 and t=500"),
        "{text}"
    );
    assert!(!text.contains("released it at t=500"), "{text}");
    assert!(text.contains("all hold"), "{text}");
}

#[test]
fn a_stale_write_kept_under_the_scope_fence_blames_a_reused_token_only_when_i2_saw_one() {
    // The unlogged lease table forgets token 1 at the crash: holder-b gets token 1 again.
    let cfg = Config {
        lease_table: LeaseDurability::Unlogged,
        ..Config::default()
    };
    let mut w = World::new(cfg.clone());
    w.run("holder-a", Op::acquire("holder-a", 100));
    w.run("admin", Op::Crash { db: DbName::Lease });
    w.run("admin", Op::Restart { db: DbName::Lease });
    w.run("holder-b", Op::acquire("holder-b", 100));
    w.run("holder-b", Op::write("summary", "B", 1));
    w.run("holder-a", Op::write("summary", "A", 1));
    let report = check(&w.history);
    let text = explain::render(&Story::new(&w.history, &cfg, &report), "reuse");
    assert!(
        report.violated(leaselab_checkers::Check::I2),
        "{:?}",
        report.violations
    );
    assert!(text.contains("ACCEPTED"), "{text}");
    assert!(text.contains("handed out again"), "{text}");
    // The same writes without any lease event: nothing was handed out again.
    let mut w = World::new(Config::default());
    w.run("holder-b", Op::write("summary", "B", 1));
    w.run("holder-a", Op::write("summary", "A", 1));
    let report = check(&w.history);
    let text = explain::render(&Story::new(&w.history, &Config::default(), &report), "none");
    assert!(!text.contains("handed out again"), "{text}");
}
