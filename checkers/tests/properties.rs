//! proptest over the model: random operation sequences of 2–4 holders — acquire, renew,
//! release, one-shot writes of any part, clock advances, pauses, database crash-restarts,
//! step-wise write transactions on up to 3 concurrent sessions in any order, publishes and
//! reads — with every checker run after every step.
//!
//! - `correct_configuration_keeps_every_invariant`: the scope fence, a logged lease table and
//!   versioned publishes: I1, I2, I3, acceptance and final hold after every step.
//! - one test per negative control asserting that proptest *finds* the violation of the
//!   invariant the control targets, and that the shrunk counterexample is short.
//!
//! A failing case is written as a trace (`target/proptest-traces/*.trace`, replayable with
//! `leaselab replay`) besides proptest's own regression file (`proptest-regressions/`).

use leaselab_checkers::{check, Check};
use leaselab_model::prelude::*;
use leaselab_trace::Trace;
use proptest::prelude::*;
use proptest::test_runner::{Config as RunnerConfig, RngAlgorithm, TestError, TestRng, TestRunner};
use std::path::PathBuf;

const TTL: u64 = 1500;

#[derive(Clone, Debug)]
enum Step {
    Acquire(usize),
    Renew(usize),
    Release(usize),
    Write(usize, usize),
    Advance(u64),
    Pause(usize),
    Resume(usize),
    Crash(DbName),
    Begin(usize),
    Fence(usize),
    Upsert(usize, usize),
    Commit(usize),
    Rollback(usize),
    Await(usize),
    Publish(usize),
    ReadPart(usize),
}

const PARTS: [&str; 2] = ["summary", "detail"];

fn holder(i: usize) -> String {
    format!("holder-{}", (b'a' + i as u8) as char)
}

fn step(holders: usize) -> impl Strategy<Value = Step> {
    let h = 0..holders;
    let s = 0..3usize;
    let p = 0..2usize;
    prop_oneof![
        3 => h.clone().prop_map(Step::Acquire),
        2 => h.clone().prop_map(Step::Renew),
        1 => h.clone().prop_map(Step::Release),
        3 => (h.clone(), p.clone()).prop_map(|(h, p)| Step::Write(h, p)),
        3 => prop_oneof![Just(1u64), Just(100), Just(400), Just(1500), Just(3000)].prop_map(Step::Advance),
        1 => h.clone().prop_map(Step::Pause),
        1 => h.clone().prop_map(Step::Resume),
        1 => prop_oneof![Just(DbName::Lease), Just(DbName::Res)].prop_map(Step::Crash),
        1 => s.clone().prop_map(Step::Begin),
        1 => s.clone().prop_map(Step::Fence),
        1 => (s.clone(), p.clone()).prop_map(|(s, p)| Step::Upsert(s, p)),
        1 => s.clone().prop_map(Step::Commit),
        1 => s.clone().prop_map(Step::Rollback),
        1 => s.clone().prop_map(Step::Await),
        1 => h.clone().prop_map(Step::Publish),
        1 => p.prop_map(Step::ReadPart),
    ]
}

fn steps() -> impl Strategy<Value = (usize, Vec<Step>)> {
    (2..=4usize).prop_flat_map(|h| (Just(h), proptest::collection::vec(step(h), 1..40)))
}

/// Where a step-wise session is in its own code. Sessions interleave in any order, but each one
/// follows the client's code: begin, fence, upsert only after a passed fence (with the token the
/// fence carried), commit — or roll back. An upsert with no fence in its transaction would be a
/// client bypassing the fence (the source's "writing the table around ReportStore"), which no
/// resource-side check can stop; it is not a schedule of the design.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sess {
    Idle,
    Begun,
    FencePending(u64),
    Fenced(u64),
    UpsertPending(u64),
    Written(u64),
    Failed,
}

/// The client side: what each holder believes its token is (stale after expiry — that is how
/// stale writes happen), who is paused, and where each session is.
struct Harness {
    w: World,
    holders: usize,
    believed: Vec<Option<u64>>,
    paused: Vec<bool>,
    sessions: [Sess; 3],
}

impl Harness {
    fn new(config: Config, holders: usize) -> Self {
        Harness {
            w: World::new(config),
            holders,
            believed: vec![None; holders],
            paused: vec![false; holders],
            sessions: [Sess::Idle; 3],
        }
    }

    /// Session `s` belongs to holder `s % holders` and is its second connection.
    fn session(&self, s: usize) -> (String, String) {
        let a = holder(s % self.holders);
        let c = format!("{a}/tx{s}");
        (a, c)
    }

    fn token(&self, h: usize) -> Option<u64> {
        if self.paused[h] {
            None
        } else {
            self.believed[h]
        }
    }

    fn apply(&mut self, st: &Step) {
        match *st {
            Step::Acquire(h) if !self.paused[h] => {
                let a = holder(h);
                if let Outcome::Granted { token, .. } = self.w.run(&a, Op::acquire(&a, TTL)) {
                    self.believed[h] = Some(token.0);
                }
            }
            Step::Renew(h) => {
                if let Some(t) = self.token(h) {
                    let a = holder(h);
                    self.w.run(&a, Op::renew(&a, t, TTL));
                }
            }
            Step::Release(h) => {
                if let Some(t) = self.token(h) {
                    let a = holder(h);
                    self.w.run(&a, Op::release(&a, t));
                    self.believed[h] = None;
                }
            }
            Step::Write(h, p) => {
                if let Some(t) = self.token(h) {
                    let a = holder(h);
                    self.w.run(&a, Op::write(PARTS[p], &format!("{a}-t{t}"), t));
                }
            }
            Step::Advance(ms) => {
                self.w.advance(ms);
            }
            Step::Pause(h) if !self.paused[h] => {
                self.w.run(&holder(h), Op::Pause);
                self.paused[h] = true;
            }
            Step::Resume(h) if self.paused[h] => {
                self.w.run(&holder(h), Op::Resume);
                self.paused[h] = false;
            }
            Step::Crash(db) => {
                self.w.run("admin", Op::Crash { db });
                self.w.run("admin", Op::Restart { db });
                if db == DbName::Res {
                    self.sessions = [Sess::Idle; 3];
                }
            }
            Step::Begin(s) if self.sessions[s] == Sess::Idle => {
                let (a, c) = self.session(s);
                if self.w.run_on(&a, &c, Op::begin(DbName::Res)) == Outcome::Ok {
                    self.sessions[s] = Sess::Begun;
                }
            }
            Step::Fence(s) if self.sessions[s] == Sess::Begun => {
                let (a, c) = self.session(s);
                if let Some(t) = self.token(s % self.holders) {
                    let o = self.w.run_on(&a, &c, Op::fence(t));
                    self.sessions[s] = match o {
                        Outcome::Passed => Sess::Fenced(t),
                        Outcome::Blocked => Sess::FencePending(t),
                        Outcome::Failed => Sess::Failed,
                        _ => Sess::Idle,
                    };
                }
            }
            Step::Upsert(s, p) => {
                let t = match self.sessions[s] {
                    Sess::Fenced(t) | Sess::Written(t) => t,
                    _ => return,
                };
                let (a, c) = self.session(s);
                let o = self
                    .w
                    .run_on(&a, &c, Op::upsert(PARTS[p], &format!("{a}-t{t}"), t));
                self.sessions[s] = match o {
                    Outcome::Ok | Outcome::Accepted => Sess::Written(t),
                    Outcome::Blocked => Sess::UpsertPending(t),
                    Outcome::Failed | Outcome::Rejected => Sess::Failed,
                    _ => Sess::Idle,
                };
            }
            Step::Await(s) => {
                let (a, c) = self.session(s);
                let o = self.w.run_on(&a, &c, Op::await_(DbName::Res));
                self.sessions[s] = match (self.sessions[s], o) {
                    (Sess::FencePending(t), Outcome::Passed) => Sess::Fenced(t),
                    (Sess::UpsertPending(t), Outcome::Ok | Outcome::Accepted) => Sess::Written(t),
                    (Sess::FencePending(_) | Sess::UpsertPending(_), Outcome::Error(e))
                        if e == "still-blocked" =>
                    {
                        self.sessions[s]
                    }
                    (Sess::FencePending(_) | Sess::UpsertPending(_), _) => Sess::Failed,
                    (other, _) => other,
                };
            }
            Step::Commit(s)
                if matches!(
                    self.sessions[s],
                    Sess::Begun | Sess::Fenced(_) | Sess::Written(_)
                ) =>
            {
                let (a, c) = self.session(s);
                self.w.run_on(&a, &c, Op::commit(DbName::Res));
                self.sessions[s] = Sess::Idle;
            }
            Step::Rollback(s)
                if !matches!(
                    self.sessions[s],
                    Sess::FencePending(_) | Sess::UpsertPending(_)
                ) =>
            {
                let (a, c) = self.session(s);
                self.w.run_on(&a, &c, Op::rollback(DbName::Res));
                self.sessions[s] = Sess::Idle;
            }
            Step::Publish(h) => {
                if let Some(t) = self.token(h) {
                    let a = holder(h);
                    self.w
                        .run(&a, Op::publish("report-ready", &format!("{a}-t{t}"), t));
                }
            }
            Step::ReadPart(p) => {
                self.w.run("lab", Op::read_part(PARTS[p]));
            }
            _ => {}
        }
    }
}

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

fn correct() -> Config {
    Config {
        publish: PublishMode::Versioned,
        ..Config::default()
    }
}

proptest! {
    // 2,048 cases unless PROPTEST_CASES says otherwise (an explicit `cases` would ignore it).
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(2048),
        ..ProptestConfig::default()
    })]

    #[test]
    fn correct_configuration_keeps_every_invariant((holders, steps) in steps()) {
        if let Some(t) = first_violation(&correct(), holders, &steps, &Check::ALL, "proptest-correct") {
            let p = save(&t);
            prop_assert!(false, "invariant violated, trace written to {}:\n{}", p.display(), t.to_text());
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
fn unfenced_resource_breaks_i3_in_at_most_6_steps() {
    control(
        Config::with_fence(FenceMode::Off),
        Check::I3,
        "proptest-off",
        6,
    );
}

#[test]
fn row_fence_breaks_i3_in_at_most_6_steps() {
    control(
        Config::with_fence(FenceMode::Row),
        Check::I3,
        "proptest-row",
        6,
    );
}

#[test]
fn check_then_write_breaks_i3_in_at_most_8_steps() {
    control(
        Config::with_fence(FenceMode::CheckThenWrite),
        Check::I3,
        "proptest-check-then-write",
        8,
    );
}

#[test]
fn unlogged_lease_table_breaks_i2_in_at_most_4_steps() {
    let config = Config {
        lease_table: LeaseDurability::Unlogged,
        ..Config::default()
    };
    control(config, Check::I2, "proptest-unlogged", 4);
}

#[test]
fn business_key_publish_breaks_acceptance_in_at_most_6_steps() {
    // Scope fence for writes; only the side effect lacks a token.
    control(
        Config::default(),
        Check::Acceptance,
        "proptest-business-key",
        6,
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
