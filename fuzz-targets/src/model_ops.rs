//! `model_ops`: bytes → a configuration and a holder schedule of 2–4 holders, each the one
//! holder every driver runs ([`leaselab_gen::holders`]: its timers firing, its statements going
//! on, clock advances, pauses, crashes, publishes with a holder's token, reads) → the model and
//! every checker.
//!
//! Under the correct configuration (the scope fence, a logged lease table, versioned
//! publishes, no renew after expiry) a violation of any check is a finding; under every other
//! configuration the checkers still run, and only a panic is. In every configuration the facts
//! the checkers derive must equal what the model committed (the second oracle).

use crate::bytes::{byte, pick, wide, wide_bytes};
use crate::Finding;
use arbitrary::{Arbitrary, Unstructured};
use leaselab_checkers::facts::derive;
use leaselab_checkers::{check_with, ledger};
use leaselab_gen::holders::{Harness, Step};
use leaselab_model::{Config, DbName, FenceMode, LeaseDurability, PublishMode};
use leaselab_trace::Trace;

/// Longest schedule a fuzz input decodes to: past this, bytes are ignored (a longer schedule
/// finds nothing a shorter one cannot and slows every execution).
pub const MAX_STEPS: usize = 160;

/// The clock advances at most this much in one step (the TTL is 1,500 ms).
const MAX_ADVANCE_MS: u64 = 4_000;

/// One decoded input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Input {
    /// The configuration's selector (see [`config`]).
    pub config: u8,
    /// 2–4.
    pub holders: usize,
    /// The schedule.
    pub steps: Vec<Step>,
}

/// Selector → configuration: the fence mode, then the lease table, the publish mode and
/// renew-after-expiry, each a digit of the selector (0 is the correct configuration).
pub fn config(selector: u8) -> Config {
    let s = usize::from(selector);
    let n = FenceMode::ALL.len();
    Config {
        fence: FenceMode::ALL[s % n],
        lease_table: if (s / n) % 2 == 0 {
            LeaseDurability::Logged
        } else {
            LeaseDurability::Unlogged
        },
        publish: if (s / (2 * n)) % 2 == 0 {
            PublishMode::Versioned
        } else {
            PublishMode::BusinessKey
        },
        renew_after_expiry: (s / (4 * n)) % 2 == 1,
        ..Config::default()
    }
}

/// Whether every check must hold under `c`.
pub fn must_hold(c: &Config) -> bool {
    c.fence == FenceMode::Scope
        && c.lease_table == LeaseDurability::Logged
        && c.publish == PublishMode::Versioned
        && !c.renew_after_expiry
}

const DBS: [DbName; 2] = [DbName::Lease, DbName::Res];

fn step(u: &mut Unstructured<'_>) -> arbitrary::Result<Step> {
    let tag = pick(u, 8)?;
    let mut b = || byte(u).map(usize::from);
    Ok(match tag {
        0 => Step::Timer(b()?),
        1 => Step::Run(b()?),
        2 => Step::Advance(wide(u)? % (MAX_ADVANCE_MS + 1)),
        3 => Step::Pause(b()?),
        4 => Step::Resume(b()?),
        5 => Step::Crash(DBS[pick(u, 2)?]),
        6 => Step::Publish(b()?),
        _ => Step::ReadPart(b()?),
    })
}

impl<'a> Arbitrary<'a> for Input {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let config = byte(u)?;
        let holders = 2 + pick(u, 3)?;
        let mut steps = Vec::new();
        while !u.is_empty() && steps.len() < MAX_STEPS {
            steps.push(step(u)?);
        }
        Ok(Input {
            config,
            holders,
            steps,
        })
    }
}

/// The bytes that decode to `input` (indices above 255 are taken modulo 256).
pub fn encode(input: &Input) -> Vec<u8> {
    let mut v = vec![input.config, (input.holders.clamp(2, 4) - 2) as u8];
    for st in &input.steps {
        let b = |x: usize| (x % 256) as u8;
        let db = |d: DbName| u8::from(d == DbName::Res);
        match *st {
            Step::Timer(h) => v.extend([0, b(h)]),
            Step::Run(h) => v.extend([1, b(h)]),
            Step::Advance(ms) => {
                v.push(2);
                v.extend(wide_bytes(ms.min(MAX_ADVANCE_MS)));
            }
            Step::Pause(h) => v.extend([3, b(h)]),
            Step::Resume(h) => v.extend([4, b(h)]),
            Step::Crash(d) => v.extend([5, db(d)]),
            Step::Publish(h) => v.extend([6, b(h)]),
            Step::ReadPart(p) => v.extend([7, b(p)]),
        }
    }
    v
}

/// Runs `input`; a finding names the step and carries the history as a trace.
pub fn run(input: &Input) -> Result<(), Finding> {
    run_judged(input, must_hold(&config(input.config)))
}

/// Runs `input` and, when `strict`, treats any violation as a finding (whatever the
/// configuration: the tests use this to show the check fires on the negative controls).
pub fn run_judged(input: &Input, strict: bool) -> Result<(), Finding> {
    let cfg = config(input.config);
    let mut h = Harness::new(cfg.clone(), input.holders);
    let found = |h: &Harness, i: usize, what: String| {
        let mut t = Trace::new("fuzz-model-ops", cfg.clone(), h.w.history.clone());
        t.title = format!("model_ops finding after step {}", i + 1);
        Finding(format!(
            "after step {} ({:?}): {what}\n{}",
            i + 1,
            input.steps[i],
            t.to_text()
        ))
    };
    for (i, st) in input.steps.iter().enumerate() {
        h.apply(st);
        let facts = derive(&h.w.history);
        let d = ledger::cross_check(&facts, &h.w.model.ledger());
        if !d.is_empty() {
            return Err(found(
                &h,
                i,
                format!(
                    "the checkers' facts and the model's ledger disagree: {}",
                    d.join("; ")
                ),
            ));
        }
        let report = check_with(&h.w.history, &facts);
        if strict && !report.violations.is_empty() {
            let v: Vec<String> = report
                .violations
                .iter()
                .map(|v| format!("{}: {}", v.check, v.message))
                .collect();
            return Err(found(&h, i, v.join("; ")));
        }
    }
    Ok(())
}

/// What the fuzz binary calls: decode, run, panic on a finding.
pub fn fuzz(data: &[u8]) {
    let Ok(input) = Input::arbitrary_take_rest(Unstructured::new(data)) else {
        return;
    };
    if let Err(f) = run(&input) {
        panic!("model_ops: {f}");
    }
}
