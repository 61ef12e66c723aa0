//! proptest over the model: random schedules of 2–4 holders, each the one holder every driver
//! runs (`leaselab_gen::holders`) — its timers firing and its statements going on in any
//! interleaving, clock advances, pauses, database crash-restarts, publishes with a holder's
//! token and reads — with every checker run after every step.
//!
//! - `correct_configuration_keeps_every_invariant`: the scope fence, a logged lease table and
//!   versioned publishes: I1, I2, I3, acceptance and final hold after every step.
//! - one test per negative control asserting that proptest *finds* the violation of the
//!   invariant the control targets, and that the shrunk counterexample is short.
//!
//! A failing case is written as a trace (`target/proptest-traces/*.trace`, replayable with
//! `leaselab replay`) besides proptest's own regression file (`proptest-regressions/`).

use leaselab_checkers::{check, Check};
use leaselab_gen::holders::{steps, Harness, Step};
use leaselab_model::prelude::*;
use leaselab_trace::Trace;
use proptest::prelude::*;
use proptest::test_runner::{Config as RunnerConfig, RngAlgorithm, TestError, TestRng, TestRunner};
use std::path::PathBuf;

fn trace_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("../proptest-traces")
}

/// Runs `steps`, checking after every step; returns the trace at the first violation of any
/// of `checks`.
fn first_violation(
    config: &Config,
    holders: usize,
    steps: &[Step],
    checks: &[Check],
    name: &str,
) -> Option<Trace> {
    let mut h = Harness::new(config.clone(), holders);
    for st in steps {
        h.apply(st);
        // The second oracle: the facts behind every verdict are what the model committed.
        let d = leaselab_checkers::ledger::cross_check(
            &leaselab_checkers::facts::derive(&h.w.history),
            &h.w.model.ledger(),
        );
        assert!(d.is_empty(), "facts and ledger disagree: {}", d.join("\n"));
        let r = check(&h.w.history);
        if checks.iter().any(|c| r.violated(*c)) {
            let mut t = Trace::new(name, config.clone(), h.w.history.clone());
            t.title = format!("proptest counterexample: {steps:?}");
            t.expect = r.verdict();
            return Some(t);
        }
    }
    None
}

fn save(t: &Trace) -> PathBuf {
    let dir = trace_dir();
    let _ = std::fs::create_dir_all(&dir);
    let p = dir.join(format!("{}.trace", t.name));
    let _ = std::fs::write(&p, t.to_text());
    p
}

/// The correct configuration — with the fence `LEASELAB_FENCE` names, when a learner switches
/// it (leaselab_picture::lesson).
fn correct() -> Config {
    let fence = leaselab_picture::lesson::fence_under_test().unwrap_or_else(|e| panic!("{e}"));
    Config {
        fence,
        publish: PublishMode::Versioned,
        ..Config::default()
    }
}

proptest! {
    // 2,048 cases unless PROPTEST_CASES says otherwise (an explicit `cases` would ignore it).
    // A learner's switched fence (LEASELAB_FENCE) writes no regression file into the tree.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(2048),
        failure_persistence: if leaselab_picture::lesson::switched() {
            None
        } else {
            ProptestConfig::default().failure_persistence
        },
        ..ProptestConfig::default()
    })]

    #[test]
    fn correct_configuration_keeps_every_invariant((holders, steps) in steps()) {
        let config = correct();
        if let Some(t) = first_violation(&config, holders, &steps, &Check::ALL, "proptest-correct") {
            let p = save(&t);
            let picture = leaselab_picture::lesson::failure_text(
                &t.history,
                &t.config,
                &check(&t.history),
                &format!("leaselab replay {}", p.display()),
            );
            prop_assert!(false, "invariant violated (fence={}), trace written to {}:\n{picture}", config.fence, p.display());
        }
    }
}

/// Searches with a deterministic runner until `target` is violated; returns the shrunk
/// counterexample's steps and its trace.
fn find(config: Config, target: Check, name: &str) -> Option<(Vec<Step>, Trace)> {
    let mut runner = TestRunner::new_with_rng(
        RunnerConfig {
            cases: 20_000,
            failure_persistence: None,
            ..RunnerConfig::default()
        },
        TestRng::deterministic_rng(RngAlgorithm::ChaCha),
    );
    let cfg = config.clone();
    let result = runner.run(&steps(), move |(holders, steps)| {
        prop_assert!(first_violation(&cfg, holders, &steps, &[target], "probe").is_none());
        Ok(())
    });
    match result {
        Err(TestError::Fail(_, (holders, mut steps))) => {
            // proptest shrinks a union toward its first alternatives, which can leave no-op
            // steps behind; drop single steps greedily while the violation stays.
            let mut i = 0;
            while i < steps.len() {
                let mut fewer = steps.clone();
                fewer.remove(i);
                if first_violation(&config, holders, &fewer, &[target], "probe").is_some() {
                    steps = fewer;
                    i = 0;
                } else {
                    i += 1;
                }
            }
            let t = first_violation(&config, holders, &steps, &[target], name)?;
            save(&t);
            Some((steps, t))
        }
        _ => None,
    }
}

fn replays(t: &Trace) -> bool {
    leaselab_trace::replay::replay(t).ok()
}

fn control(config: Config, target: Check, name: &str, bound: usize) {
    let (steps, t) = find(config, target, name)
        .unwrap_or_else(|| panic!("{name}: proptest did not find a {target} violation"));
    assert!(
        steps.len() <= bound,
        "{name}: shrunk counterexample has {} steps (bound {bound}): {steps:?}",
        steps.len()
    );
    assert!(
        replays(&t),
        "{name}: the written trace replays with its verdict"
    );
}

#[test]
fn unfenced_resource_breaks_i3_in_at_most_7_steps() {
    control(
        Config::with_fence(FenceMode::Off),
        Check::I3,
        "proptest-off",
        7,
    );
}

#[test]
fn row_fence_breaks_i3_in_at_most_8_steps() {
    control(
        Config::with_fence(FenceMode::Row),
        Check::I3,
        "proptest-row",
        8,
    );
}

#[test]
fn check_then_write_breaks_i3_in_at_most_6_steps() {
    control(
        Config::with_fence(FenceMode::CheckThenWrite),
        Check::I3,
        "proptest-check-then-write",
        6,
    );
}

#[test]
fn unlogged_lease_table_breaks_i2_in_at_most_3_steps() {
    let config = Config {
        lease_table: LeaseDurability::Unlogged,
        ..Config::default()
    };
    control(config, Check::I2, "proptest-unlogged", 3);
}

#[test]
fn business_key_publish_breaks_acceptance_in_at_most_5_steps() {
    // Scope fence for writes; only the side effect lacks a token.
    control(
        Config::default(),
        Check::Acceptance,
        "proptest-business-key",
        5,
    );
}

#[test]
fn with_the_bugs_removed_the_same_searches_find_nothing() {
    // The controls above pass *because* a violation is found: the correct configuration, searched
    // the same way, yields none.
    for target in [Check::I2, Check::I3, Check::Acceptance] {
        assert!(
            find(correct(), target, "unused").is_none(),
            "{target} violated by the correct configuration"
        );
    }
}

/// `LEASELAB_FENCE=off` makes the correct-configuration property fail with the shrunk
/// timeline, the replay command and the exercise: run in a child process of this binary.
#[test]
fn the_fence_switch_fails_the_property_with_a_timeline() {
    if leaselab_picture::lesson::switched() {
        return; // the child itself
    }
    let (passed, out) = leaselab_picture::lesson::rerun_switched(
        "correct_configuration_keeps_every_invariant",
        FenceMode::Off,
        // Under `off` a random case breaks I3 about once in 250: a fixed seed (its first
        // failure comes after 52 passing cases) and the suite's 2,048 cases make the child's
        // failure certain, not likely.
        &[("PROPTEST_CASES", "2048"), ("PROPTEST_RNG_SEED", "7")],
    );
    assert!(!passed, "the switched property must fail:\n{out}");
    for want in [
        "invariant violated (fence=off)",
        "t ms │ holder-",
        "STALE",
        "✗ I3",
        "replay: leaselab replay ",
        "explained in EXERCISES.md, exercise 1 (switch the fence off)",
    ] {
        assert!(out.contains(want), "missing `{want}`:\n{out}");
    }
}
