//! Sweeps over seed ranges (optionally one shard of them) and shrinking of failing runs.
//!
//! Shrinking keeps the seed (so latencies and start offsets keep their draws) and edits the
//! plan: drop faults, shorten pauses and partitions, shrink skews and steps, cut the run right
//! after the violation, drop holders — accepting each change that still fails the same check.

use crate::faults::FaultPlan;
use crate::run_setup;
use crate::scenario::{Driver, Failing, Setup, SimOptions, SimRun};
use leaselab_checkers::sometimes::Counts;
use leaselab_checkers::Check;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Condvar, Mutex};
use std::time::Duration;

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
    fn step(self) -> u64 {
        self.shard.1.max(1)
    }

    /// The shard's first seed in the range.
    fn first(self) -> Option<u64> {
        let n = self.step();
        let k = self.shard.0 % n;
        let r = self.start % n;
        let s = self.start.checked_add((k + n - r) % n)?;
        (s < self.end).then_some(s)
    }

    /// How many seeds the shard runs (computed, not counted: ranges may be huge).
    pub fn count(self) -> u64 {
        match self.first() {
            Some(f) => (self.end - 1 - f) / self.step() + 1,
            None => 0,
        }
    }

    /// The shard's `i`-th seed (0-based).
    pub fn nth(self, i: u64) -> Option<u64> {
        let s = self.first()?.checked_add(i.checked_mul(self.step())?)?;
        (s < self.end).then_some(s)
    }

    /// Every seed in `start..end` that belongs to the shard, lazily.
    pub fn iter(self) -> impl Iterator<Item = u64> {
        (0..self.count()).filter_map(move |i| self.nth(i))
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

/// Running totals of a sweep, over the seeds folded so far (in seed order).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Seeds run.
    pub runs: u64,
    /// Seeds that failed a check.
    pub failures: u64,
    /// Events recorded over all runs.
    pub events: u64,
    /// Occurrences: the sum of each `sometimes` property's count over all runs.
    pub sometimes: Counts,
    /// Runs in which each `sometimes` property fired at least once.
    pub runs_with: Counts,
}

/// What a sweep found, failures collected (for small ranges and tests; the CLI streams them).
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

/// How a streamed sweep ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SweepEnd {
    /// Totals over every seed covered.
    pub tally: Tally,
    /// The first seed of the shard *not* covered when the sweep was stopped (`--seeds N..`
    /// resumes there); `None` when every seed ran.
    pub resume_at: Option<u64>,
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
    let sometimes = run.report.sometimes;
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

/// What a streamed sweep runs.
#[derive(Clone, Copy, Debug)]
pub struct SweepSpec<'a> {
    /// The seeds.
    pub seeds: Seeds,
    /// The options every seed runs with.
    pub opts: &'a SimOptions,
    /// The driver.
    pub driver: Driver,
    /// Shrink each failing seed.
    pub shrink: bool,
    /// Worker threads.
    pub jobs: usize,
}

/// Runs a sweep in bounded memory: seeds are handed out lazily, workers run at most a window of
/// seeds ahead of the oldest unfinished one, and results are folded in seed order — so the
/// result does not depend on `jobs`, and `on_failure` sees each failing seed (in seed order) as
/// soon as every earlier seed is done. `progress` is called after each folded seed. When `stop`
/// becomes true, no new seed starts, the running ones finish, and nothing after the seed whose
/// fold set it (or was folded when it was set) is counted or reported — the seeds other workers
/// ran ahead are dropped, to run again on resuming — so a cap ends the sweep at exactly its
/// seed for any `jobs`; [`SweepEnd::resume_at`] names the first seed not covered. An error from
/// `on_failure` stops the sweep and is returned.
pub fn sweep_streaming<E>(
    spec: SweepSpec<'_>,
    stop: &AtomicBool,
    on_failure: &mut dyn FnMut(Failure) -> Result<(), E>,
    progress: &mut dyn FnMut(&Tally, u64),
) -> Result<SweepEnd, E> {
    let SweepSpec {
        seeds,
        opts,
        driver,
        shrink,
        jobs,
    } = spec;
    let total = seeds.count();
    let jobs = jobs.max(1);
    let window = (jobs as u64 * 16).max(64);
    let next = AtomicU64::new(0);
    // The number of seeds folded so far: workers wait rather than run too far ahead of it.
    let folded_gate = (Mutex::new(0u64), Condvar::new());
    let (tx, rx) = mpsc::channel::<(u64, SeedResult)>();
    let mut tally = Tally::default();
    let mut folded = 0u64;
    let mut error: Option<E> = None;
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            let tx = tx.clone();
            let (next, gate) = (&next, &folded_gate);
            scope.spawn(move || loop {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(seed) = (i < total).then(|| seeds.nth(i)).flatten() else {
                    break;
                };
                {
                    let mut f = gate.0.lock().unwrap_or_else(|p| p.into_inner());
                    while i >= *f + window && !stop.load(Ordering::SeqCst) {
                        f = gate
                            .1
                            .wait_timeout(f, Duration::from_millis(50))
                            .unwrap_or_else(|p| p.into_inner())
                            .0;
                    }
                }
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                if tx.send((i, run_one(seed, opts, driver, shrink))).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        let mut pending: BTreeMap<u64, SeedResult> = BTreeMap::new();
        // Once stopped, the results still coming in are drained, not folded.
        let mut halted = false;
        for (i, r) in rx {
            if halted {
                continue;
            }
            pending.insert(i, r);
            while let Some(r) = pending.remove(&folded) {
                folded += 1;
                tally.runs += 1;
                tally.events += r.events;
                tally.sometimes.add(&r.sometimes);
                tally.runs_with.add(&r.sometimes.fired());
                if let Some(f) = r.failure {
                    tally.failures += 1;
                    if error.is_none() {
                        if let Err(e) = on_failure(f) {
                            error = Some(e);
                            stop.store(true, Ordering::SeqCst);
                        }
                    }
                }
                progress(&tally, total);
                if stop.load(Ordering::SeqCst) {
                    halted = true;
                    pending.clear();
                    break;
                }
            }
            *folded_gate.0.lock().unwrap_or_else(|p| p.into_inner()) = folded;
            folded_gate.1.notify_all();
        }
    });
    if let Some(e) = error {
        return Err(e);
    }
    Ok(SweepEnd {
        tally,
        resume_at: (folded < total).then(|| seeds.nth(folded)).flatten(),
    })
}

/// Runs every seed on `jobs` worker threads and collects the failures; `progress(done, total,
/// failures)` is called on the calling thread after each seed. The result is the same for any
/// `jobs`: only the wall time changes. For long ranges use [`sweep_streaming`].
pub fn sweep(
    seeds: Seeds,
    opts: &SimOptions,
    driver: Driver,
    shrink_failures: bool,
    jobs: usize,
    progress: &mut dyn FnMut(u64, u64, usize),
) -> SweepResult {
    let mut failures = Vec::new();
    let spec = SweepSpec {
        seeds,
        opts,
        driver,
        shrink: shrink_failures,
        jobs,
    };
    let end = sweep_streaming::<std::convert::Infallible>(
        spec,
        &AtomicBool::new(false),
        &mut |f| {
            failures.push(f);
            Ok(())
        },
        &mut |t, total| progress(t.runs, total, t.failures as usize),
    );
    let tally = match end {
        Ok(e) => e.tally,
        Err(never) => match never {},
    };
    SweepResult {
        runs: tally.runs,
        failures,
        sometimes: tally.sometimes,
        runs_with: tally.runs_with,
        events: tally.events,
    }
}

/// Worker threads for a sweep when the user does not say: one per core.
pub fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The authority time just after the first violation of `target` (its last named event).
fn violation_end(run: &SimRun, target: Check) -> Option<u64> {
    let v = run.report.violations.iter().find(|v| v.check == target)?;
    let last = v.events.iter().max()?;
    let e = run
        .trace
        .history
        .events
        .get((*last as usize).checked_sub(1)?)?;
    Some(e.at.0 + 1)
}

/// Shrinks a failing run, with the driver that found it, to a smaller one failing the same
/// check.
pub fn shrink(run: &SimRun) -> SimRun {
    shrink_with(run, 400, &mut |setup| Some(run_setup(setup, run.driver)))
}

/// [`shrink`] with another way to run a candidate setup (`None`: it could not run) and a
/// budget of candidate runs: `leaselab audit --sim-seeds` runs each on PostgreSQL.
pub fn shrink_with(
    run: &SimRun,
    budget: u32,
    run_one: &mut dyn FnMut(Setup) -> Option<SimRun>,
) -> SimRun {
    let Some(target) = run.first_failure() else {
        return run.clone();
    };
    let mut best = run.clone();
    let mut attempt = |setup: Setup| -> Option<SimRun> {
        let r = run_one(setup)?;
        r.fails(target).then_some(r)
    };
    let mut budget = budget;
    let mut changed = true;
    while changed && budget > 0 {
        changed = false;
        let mut candidates: Vec<Setup> = Vec::new();
        let base = best.setup.clone();
        if let Failing::Check(check) = target {
            if let Some(end) = violation_end(&best, check) {
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
