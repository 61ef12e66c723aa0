//! Sweeps over seed ranges (optionally one shard of them) and shrinking of failing runs.
//!
//! Shrinking keeps the seed (so latencies and start offsets keep their draws) and edits the
//! plan: drop faults, shorten pauses and partitions, shrink skews and steps, cut the run right
//! after the violation, drop holders — accepting each change that still fails the same check.

use crate::faults::FaultPlan;
use crate::run_setup;
use crate::scenario::{Driver, Setup, SimOptions, SimRun};
use leaselab_checkers::sometimes::Counts;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

/// Which seeds a sweep runs: `range`, every `of`-th from `index` (`--shard index/of`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seeds {
    /// First seed.
    pub start: u64,
    /// One past the last seed.
    pub end: u64,
    /// Shard index (0-based) and shard count.
    pub shard: (u64, u64),
}

impl Seeds {
    /// Every seed in `start..end` that belongs to the shard.
    pub fn iter(self) -> impl Iterator<Item = u64> {
        let (k, n) = (self.shard.0, self.shard.1.max(1));
        (self.start..self.end).filter(move |s| s % n == k % n)
    }

    /// How many seeds the shard runs.
    pub fn count(self) -> u64 {
        self.iter().count() as u64
    }
}

/// A failing seed, with its shrunk counterpart.
#[derive(Clone, Debug)]
pub struct Failure {
    /// The run as found.
    pub run: SimRun,
    /// The smallest run found that still fails the same check.
    pub shrunk: Option<SimRun>,
}

/// What a sweep found.
#[derive(Clone, Debug, Default)]
pub struct SweepResult {
    /// Seeds run.
    pub runs: u64,
    /// Failing seeds.
    pub failures: Vec<Failure>,
    /// Sum of the `sometimes` counts over all runs.
    pub sometimes: Counts,
    /// Runs in which each `sometimes` property fired at least once.
    pub runs_with: Counts,
    /// Events recorded over all runs.
    pub events: u64,
}

/// What one seed contributes to a sweep (a passing run keeps only its counts).
struct SeedResult {
    events: u64,
    sometimes: Counts,
    failure: Option<Failure>,
}

fn run_one(seed: u64, opts: &SimOptions, driver: Driver, shrink_failures: bool) -> SeedResult {
    let run = run_setup(Setup::derive(seed, opts), driver);
    let events = run.trace.history.events.len() as u64;
    let sometimes = run.report.sometimes.clone();
    let failure = run.failed().then(|| {
        let shrunk = shrink_failures.then(|| shrink(&run));
        Failure { run, shrunk }
    });
    SeedResult {
        events,
        sometimes,
        failure,
    }
}

/// Runs every seed on `jobs` worker threads; `progress(done, total, failures)` is called on
/// the calling thread after each run. Seeds are independent and each is deterministic, and the
/// results are folded in seed order, so the result is the same for any `jobs`: only the
/// wall time changes.
pub fn sweep(
    seeds: Seeds,
    opts: &SimOptions,
    driver: Driver,
    shrink_failures: bool,
    jobs: usize,
    progress: &mut dyn FnMut(u64, u64, usize),
) -> SweepResult {
    let list: Vec<u64> = seeds.iter().collect();
    let total = list.len() as u64;
    let jobs = jobs.clamp(1, list.len().max(1));
    let mut slots: Vec<Option<SeedResult>> = Vec::new();
    slots.resize_with(list.len(), || None);
    let next = AtomicUsize::new(0);
    let (tx, rx) = mpsc::channel::<(usize, SeedResult)>();
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            let tx = tx.clone();
            let (list, next) = (&list, &next);
            scope.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&seed) = list.get(i) else { break };
                if tx
                    .send((i, run_one(seed, opts, driver, shrink_failures)))
                    .is_err()
                {
                    break;
                }
            });
        }
        drop(tx);
        let (mut done, mut failing) = (0u64, 0usize);
        for (i, r) in rx {
            done += 1;
            failing += usize::from(r.failure.is_some());
            slots[i] = Some(r);
            progress(done, total, failing);
        }
    });
    let mut res = SweepResult::default();
    for r in slots.into_iter().flatten() {
        res.runs += 1;
        res.events += r.events;
        res.sometimes.add(&r.sometimes);
        for (k, v) in &r.sometimes.0 {
            if *v > 0 {
                *res.runs_with.0.entry(k).or_insert(0) += 1;
            }
        }
        res.failures.extend(r.failure);
    }
    res
}

/// Worker threads for a sweep when the user does not say: one per core.
pub fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn still_fails(run: &SimRun, target: &str) -> bool {
    if target == "liveness" {
        return run.liveness.is_err();
    }
    run.report
        .violations
        .iter()
        .any(|v| v.check.as_str() == target)
}

/// The authority time just after the first violation of `target` (its last named event).
fn violation_end(run: &SimRun, target: &str) -> Option<u64> {
    let v = run
        .report
        .violations
        .iter()
        .find(|v| v.check.as_str() == target)?;
    let last = v.events.iter().max()?;
    let e = run
        .trace
        .history
        .events
        .get((*last as usize).checked_sub(1)?)?;
    Some(e.at.0 + 1)
}

/// Shrinks a failing run (always with the fast driver) to a smaller one failing the same check.
pub fn shrink(run: &SimRun) -> SimRun {
    let Some(target) = run.first_failure() else {
        return run.clone();
    };
    let mut best = run.clone();
    let attempt = |setup: Setup| -> Option<SimRun> {
        let r = run_setup(setup, Driver::Fast);
        still_fails(&r, &target).then_some(r)
    };
    let mut budget = 400;
    let mut changed = true;
    while changed && budget > 0 {
        changed = false;
        let mut candidates: Vec<Setup> = Vec::new();
        let base = best.setup.clone();
        if target != "liveness" {
            if let Some(end) = violation_end(&best, &target) {
                if end < base.opts.safety_ms || base.opts.liveness_ms > 0 {
                    let mut s = base.clone();
                    s.opts.safety_ms = end.min(base.opts.safety_ms);
                    s.opts.liveness_ms = 0;
                    candidates.push(s);
                }
            }
        }
        for i in 0..base.plan.faults.len() {
            let mut s = base.clone();
            s.plan.faults.remove(i);
            candidates.push(s);
        }
        for i in 0..base.plan.faults.len() {
            if let Some(f) = base.plan.faults[i].smaller() {
                let mut s = base.clone();
                s.plan.faults[i] = f;
                candidates.push(s);
            }
        }
        if base.holders.len() > 2 {
            let mut s = base.clone();
            let last = s.holders.len() - 1;
            s.holders.pop();
            s.opts.holders -= 1;
            s.plan = FaultPlan {
                kinds: s.plan.kinds.clone(),
                faults: s
                    .plan
                    .faults
                    .iter()
                    .filter(|f| !mentions(f, last))
                    .cloned()
                    .collect(),
            };
            candidates.push(s);
        }
        for c in candidates {
            budget -= 1;
            if budget == 0 {
                break;
            }
            if let Some(r) = attempt(c) {
                if size(&r) < size(&best) {
                    best = r;
                    changed = true;
                    break;
                }
            }
        }
    }
    best
}

fn mentions(f: &crate::faults::Fault, holder: usize) -> bool {
    use crate::faults::Fault::*;
    match f {
        PauseAtPoint { holder: h, .. }
        | PauseAtTime { holder: h, .. }
        | Partition { holder: h, .. }
        | Delay { holder: h, .. }
        | Skew { holder: h, .. }
        | Step { holder: h, .. } => *h == holder,
        Crash { .. } => false,
    }
}

/// Smaller is better: fewer faults, then fewer steps, then gentler faults.
fn size(r: &SimRun) -> (usize, usize, u64) {
    let gentleness: u64 = r
        .setup
        .plan
        .faults
        .iter()
        .map(|f| {
            use crate::faults::Fault::*;
            match f {
                PauseAtPoint { dur_ms, .. }
                | PauseAtTime { dur_ms, .. }
                | Partition { dur_ms, .. } => *dur_ms,
                Delay { extra_ms, .. } => *extra_ms,
                Skew { offset_ms, ppm, .. } => offset_ms.unsigned_abs() + ppm.unsigned_abs(),
                Step { delta_ms, .. } => delta_ms.unsigned_abs(),
                Crash { down_ms, .. } => *down_ms,
            }
        })
        .sum();
    (
        r.setup.plan.faults.len(),
        r.trace.history.events.len(),
        gentleness,
    )
}
