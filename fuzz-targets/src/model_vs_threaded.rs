//! `model_vs_threaded`: one schedule of acquires, renewer ticks, releases, guarded writes and
//! clock advances, run against the model ([`leaselab_model::World`]) and against the
//! thread-safe implementation ([`leaselab_sync`]: `LeaseService`, `FencedStore`, `LeaseGuard`,
//! driven from one thread). Every outcome and, after every step, the lease row, the floor and
//! every part must be the same on both.
//!
//! The guard's `lost` flag is the client's own knowledge: a holder whose renew failed starts
//! no write ([`Attempt::NotStarted`]), so the model is not asked to write for it either.

use crate::bytes::{byte, pick, wide, wide_bytes};
use crate::Finding;
use arbitrary::{Arbitrary, Unstructured};
use leaselab_gen::holders::{PARTS, TTL};
use leaselab_model::names::{defaults, holder_name as holder};
use leaselab_model::{Config, FenceMode, Op, Outcome, World};
use leaselab_sync::{Attempt, Clock, FencedStore, LeaseGuard, LeaseService, StoreMode};
use std::sync::Arc;

/// Longest schedule decoded.
pub const MAX_STEPS: usize = 200;

/// One step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Holder acquires.
    Acquire(u8),
    /// One tick of the holder's renewer.
    Renew(u8),
    /// Holder releases (and drops its guard).
    Release(u8),
    /// Holder's guarded write of part `.1`.
    Write(u8, u8),
    /// The clock advances, ms (below 65,536).
    Advance(u64),
}

/// One decoded input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Input {
    /// The store's fence: 0 scope, 1 strict, 2 check-then-write.
    pub mode: u8,
    /// 2–4.
    pub holders: usize,
    /// The schedule.
    pub steps: Vec<Step>,
}

const MODES: [(StoreMode, FenceMode); 3] = [
    (StoreMode::Scope, FenceMode::Scope),
    (StoreMode::Strict, FenceMode::Strict),
    (StoreMode::CheckThenWrite, FenceMode::CheckThenWrite),
];

impl<'a> Arbitrary<'a> for Input {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let mode = pick(u, MODES.len())? as u8;
        let holders = 2 + pick(u, 3)?;
        let mut steps = Vec::new();
        while !u.is_empty() && steps.len() < MAX_STEPS {
            let tag = pick(u, 5)?;
            steps.push(match tag {
                0 => Step::Acquire(byte(u)?),
                1 => Step::Renew(byte(u)?),
                2 => Step::Release(byte(u)?),
                3 => Step::Write(byte(u)?, byte(u)?),
                _ => Step::Advance(wide(u)?),
            });
        }
        Ok(Input {
            mode,
            holders,
            steps,
        })
    }
}

/// The bytes that decode to `input`.
pub fn encode(input: &Input) -> Vec<u8> {
    let mut v = vec![input.mode, (input.holders.clamp(2, 4) - 2) as u8];
    for st in &input.steps {
        match *st {
            Step::Acquire(h) => v.extend([0, h]),
            Step::Renew(h) => v.extend([1, h]),
            Step::Release(h) => v.extend([2, h]),
            Step::Write(h, p) => v.extend([3, h, p]),
            Step::Advance(ms) => {
                v.push(4);
                v.extend(wide_bytes(ms));
            }
        }
    }
    v
}

fn finding(input: &Input, i: usize, cfg: &Config, w: &World, what: String) -> Finding {
    let t = leaselab_trace::Trace::new("fuzz-model-vs-threaded", cfg.clone(), w.history.clone());
    Finding(format!(
        "step {} ({:?}) of {input:?}: {what}\nthe model's history:\n{}",
        i + 1,
        input.steps[i],
        t.to_text()
    ))
}

/// Runs `input` on both; the first difference is the finding.
pub fn run(input: &Input) -> Result<(), Finding> {
    let (store_mode, fence) = MODES[usize::from(input.mode) % MODES.len()];
    run_paired(input, store_mode, fence)
}

/// Runs `input` with the store fencing as `store_mode` and the model as `fence` (the tests
/// pair two different modes to show that a difference is reported).
pub fn run_paired(input: &Input, store_mode: StoreMode, fence: FenceMode) -> Result<(), Finding> {
    let n = input.holders.clamp(2, 4);
    let cfg = Config::with_fence(fence);
    let mut w = World::new(cfg.clone());
    let clock = Clock::new();
    let svc = Arc::new(LeaseService::new(clock.clone()));
    let store = FencedStore::new(store_mode);
    let mut guards: Vec<Option<LeaseGuard>> = vec![None; n];
    for (i, st) in input.steps.iter().enumerate() {
        let differ = |w: &World, what: String| finding(input, i, &cfg, w, what);
        match *st {
            Step::Acquire(h) => {
                let h = usize::from(h) % n;
                let a = holder(h);
                let m = w.run(&a, Op::acquire(&a, TTL));
                let t = svc.acquire(defaults::LEASE, &a, TTL);
                match (&m, &t) {
                    (Outcome::Granted { token, .. }, Some(g)) if *token == g.token => {
                        guards[h] = Some(LeaseGuard::new(g.clone(), svc.clone()));
                    }
                    (Outcome::Refused, None) => {}
                    _ => return Err(differ(&w, format!("model {m:?}, threaded {t:?}"))),
                }
            }
            Step::Renew(h) => {
                let h = usize::from(h) % n;
                if let Some(g) = guards[h].as_ref() {
                    let a = holder(h);
                    let m = w.run(&a, Op::renew(&a, g.grant().token.0, TTL));
                    let t = g.renew_once();
                    match (&m, t) {
                        (Outcome::Renewed { .. }, true) | (Outcome::Refused, false) => {}
                        _ => return Err(differ(&w, format!("model {m:?}, threaded {t}"))),
                    }
                }
            }
            Step::Release(h) => {
                let h = usize::from(h) % n;
                if let Some(g) = guards[h].take() {
                    let a = holder(h);
                    let m = w.run(&a, Op::release(&a, g.grant().token.0));
                    let t = svc.release(g.grant());
                    match (&m, t) {
                        (Outcome::Released, true) | (Outcome::Refused, false) => {}
                        _ => return Err(differ(&w, format!("model {m:?}, threaded {t}"))),
                    }
                }
            }
            Step::Write(h, p) => {
                let h = usize::from(h) % n;
                let part = PARTS[usize::from(p) % PARTS.len()];
                if let Some(g) = guards[h].as_ref() {
                    let a = holder(h);
                    let token = g.grant().token.0;
                    let content = format!("{a}-t{token}-{}", i + 1);
                    let lost = g.is_lost();
                    let t = g.write(&store, part, &content);
                    let m = (!lost).then(|| w.run(&a, Op::write(part, &content, token)));
                    match (&m, t) {
                        (None, Attempt::NotStarted)
                        | (Some(Outcome::Accepted), Attempt::Accepted)
                        | (Some(Outcome::Rejected), Attempt::Rejected) => {}
                        _ => return Err(differ(&w, format!("model {m:?}, threaded {t:?}"))),
                    }
                }
            }
            Step::Advance(ms) => {
                w.advance(ms);
                clock.advance(ms);
            }
        }
        // The state, read on both sides.
        let lease = w.run("lab", Op::read_lease());
        let row = svc.row(defaults::LEASE);
        if lease != Outcome::Lease(row.clone()) {
            return Err(differ(
                &w,
                format!("lease row: model {lease:?}, threaded {row:?}"),
            ));
        }
        let floor = w.run("lab", Op::read_floor());
        if floor != Outcome::Floor(Some(store.floor())) {
            return Err(differ(
                &w,
                format!("floor: model {floor:?}, threaded {:?}", store.floor()),
            ));
        }
        for part in PARTS {
            let m = w.run("lab", Op::read_part(part));
            let t = store.part(part);
            let same = match (&m, &t) {
                (Outcome::Part(None), None) => true,
                (Outcome::Part(Some(r)), Some((c, tok, who))) => {
                    r.content == *c && r.token == *tok && r.writer.as_str() == who
                }
                _ => false,
            };
            if !same {
                return Err(differ(
                    &w,
                    format!("part {part}: model {m:?}, threaded {t:?}"),
                ));
            }
        }
        if w.now() != clock.now() {
            return Err(differ(
                &w,
                format!("clock: model {:?}, threaded {:?}", w.now(), clock.now()),
            ));
        }
    }
    Ok(())
}

/// What the fuzz binary calls: panics on a finding.
pub fn fuzz(data: &[u8]) {
    let Ok(input) = Input::arbitrary_take_rest(Unstructured::new(data)) else {
        return;
    };
    if let Err(f) = run(&input) {
        panic!("model_vs_threaded: {f}");
    }
}
