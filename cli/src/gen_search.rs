//! What `diff --gen` and `audit --gen` share around [`leaselab_gen::search`]: the plan the
//! commands run, the count of what ran with its progress line, and the words and exit status
//! of an interrupted or cut-short search. Both commands depend on this file, neither on the
//! other.

use crate::args::Exit;
use leaselab_gen::search::Plan;

/// Shrinking runs a found failure gets from the commands: enough to reach a handful of steps.
/// Tests that only need "shrunk to at most N steps" give less, which is most of their time.
pub const SHRINK_ITERS: u32 = 2_000;

/// `schedules` from `seed`, as the commands run them: 40 intents, the full shrink budget.
pub fn plan(schedules: u32, seed: u64) -> Plan {
    Plan {
        schedules,
        seed,
        steps: 40,
        shrink_iters: SHRINK_ITERS,
    }
}

/// `--steps`, checked to lie in 1..=[`crate::args::MAX_STEPS`], as the generator takes it.
pub(crate) fn steps(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

/// What a generated search has run: the search's own schedules, and apart from them the runs
/// that shrink its first failure (proptest runs smaller and smaller schedules), with its
/// progress on stderr (`diff --gen`, `audit --gen`).
pub struct GenRuns {
    /// Schedules of the search that ran (the shrinking runs not counted).
    pub schedules: u64,
    /// Their steps.
    pub steps: u64,
    /// Runs spent shrinking the first failure.
    pub shrink_runs: u64,
    failing: bool,
    total: u64,
    /// What a failure is called (`divergence`, `violation`).
    found: &'static str,
    progress: Option<crate::progress::Progress>,
}

impl GenRuns {
    /// A search of `total` schedules; with `progress`, shown on stderr.
    pub fn new(total: u32, found: &'static str, progress: bool) -> Self {
        GenRuns {
            schedules: 0,
            steps: 0,
            shrink_runs: 0,
            failing: false,
            total: u64::from(total),
            found,
            progress: progress.then(crate::progress::Progress::always),
        }
    }

    /// One run of `steps` steps: a schedule of the search, or once one failed, a shrinking run.
    fn ran(&mut self, steps: u64) {
        if self.failing {
            self.shrink_runs += 1;
        } else {
            self.schedules += 1;
            self.steps += steps;
        }
        let (found, failing) = (self.found, self.failing);
        let line = format!(
            "{} steps, {} {found}{}",
            self.steps,
            u8::from(failing),
            if failing { "" } else { "s" }
        );
        let shrinking = format!(
            "{} schedules, {} steps: 1 {found} found at schedule {}, shrinking it: {} runs so far",
            self.schedules, self.steps, self.schedules, self.shrink_runs
        );
        if let Some(p) = &mut self.progress {
            if failing {
                p.note(&shrinking);
            } else {
                p.show(self.schedules, self.total, "schedules", &line);
            }
        }
    }

    /// A run the search reports: counted, and a drawn schedule's failure switches to
    /// shrinking. Returns that schedule's number (1-based) when it is one.
    pub fn observe<F>(
        &mut self,
        phase: leaselab_gen::search::Phase,
        case: &leaselab_gen::search::Case<F>,
    ) -> Option<u64> {
        self.ran(case.steps);
        match (phase, case.failure()) {
            (leaselab_gen::search::Phase::Drawn(i), Some(_)) => {
                self.failed();
                Some(i)
            }
            _ => None,
        }
    }

    /// The run just counted failed: the runs from now on shrink it.
    fn failed(&mut self) {
        self.failing = true;
    }

    /// Ends the progress line.
    pub fn finish(&self) {
        if let Some(p) = &self.progress {
            p.finish();
        }
    }
}

/// What a generated search interrupted by Ctrl-C adds to its summary line (the same words
/// for `diff --gen` and `audit --gen`).
pub fn interrupted_note(interrupted: bool, n: u32) -> String {
    if interrupted {
        format!(" interrupted (of {n}: schedules are drawn in order from the seed, so a rerun with the same --seed runs the same ones again)")
    } else {
        String::new()
    }
}

/// How a generated search exits: interrupted (Ctrl-C, SIGTERM) is 5 whatever it found so far,
/// as `sim` exits — its search, or the shrinking of what it found, did not finish; else what it
/// found (a divergence, a violation), else clean.
pub fn search_exit(found: bool, found_exit: Exit, interrupted: bool) -> Exit {
    match (found, interrupted) {
        (_, true) => Exit::Interrupted,
        (true, false) => found_exit,
        (false, false) => Exit::Clean,
    }
}

/// What the verdict line of a found failure adds when the interrupt stopped its shrinking.
pub fn cut_short_note(cut_short: bool) -> &'static str {
    if cut_short {
        " (shrinking cut short by the interrupt: a smaller schedule may fail too)"
    } else {
        ""
    }
}
