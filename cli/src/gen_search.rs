//! What `diff --gen` and `audit --gen` share around [`leaselab_gen::search`]: the plan the
//! commands run, the count of what ran with its progress line, and the words and exit status
//! of an interrupted or cut-short search. Both commands depend on this file, neither on the
//! other.

use crate::args::Exit;
use leaselab_gen::search::{Plan, Share};

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
        share: Share::ALL,
    }
}

/// `--shard K/N` and `--from I`: which of the drawn schedules a generated search runs.
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct ShareArgs {
    /// Run only the schedules numbered K modulo N (counting from 0, as `sim --shard`): N
    /// searches of one --gen and --seed, K = 0 … N−1, run every schedule once between them
    /// (deploy/merge-gen-shards.sh adds up their summary lines).
    #[arg(long, value_name = "K/N", default_value = "0/1", requires = "gen",
          value_parser = crate::sim_cmd::parse_shard)]
    pub shard: (u64, u64),
    /// Start at schedule I (1-based): where an interrupted search's `resume:` line goes on.
    #[arg(long, value_name = "I", default_value_t = 1, requires = "gen",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub from: u64,
}

impl ShareArgs {
    /// As the search takes it.
    pub fn share(&self) -> Share {
        Share {
            shard: self.shard,
            from: self.from,
        }
    }
}

/// `share` as flags to repeat in a printed command: empty for every schedule, else
/// ` --shard K/N` and ` --from I` where they are not the defaults.
pub fn share_flags(share: Share) -> String {
    let mut f = String::new();
    if share.shard.1 > 1 {
        f.push_str(&format!(" --shard {}/{}", share.shard.0, share.shard.1));
    }
    if share.from > 1 {
        f.push_str(&format!(" --from {}", share.from));
    }
    f
}

/// What a summary line adds for a share that is not every schedule: ` shard=K/N`, ` from=I`.
pub fn share_note(share: Share) -> String {
    share_flags(share)
        .replace(" --shard ", " shard=")
        .replace(" --from ", " from=")
}

/// The `resume:` line of an interrupted search that left schedules unrun: `command` (the
/// search as run, without its share) with its share from `from` ([`GenRuns::resume_at`]).
/// `None` when there is nothing left to run.
pub fn resume_line(command: &str, plan: &Plan, from: u64) -> Option<String> {
    let left = Share { from, ..plan.share }.count(u64::from(plan.schedules));
    // `--from` even where it is 1: the line says where it goes on.
    (left > 0).then(|| {
        format!(
            "resume: {command}{} --from {from}",
            share_flags(Share {
                from: 1,
                ..plan.share
            })
        )
    })
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
    /// The search's schedules' counts ([`leaselab_gen::search::Case::tally`]) summed, in the
    /// order the runs name them (the shrinking runs not counted).
    pub tally: leaselab_gen::search::Tally,
    /// The last of the search's own schedules reported (its number, 1-based).
    last: Option<u64>,
    failing: bool,
    total: u64,
    /// What a failure is called (`divergence`, `violation`).
    found: &'static str,
    progress: Option<crate::progress::Progress>,
}

impl GenRuns {
    /// A search of `total` schedules; with `progress`, shown on stderr.
    pub fn new(total: u64, found: &'static str, progress: bool) -> Self {
        GenRuns {
            schedules: 0,
            steps: 0,
            shrink_runs: 0,
            tally: Vec::new(),
            last: None,
            failing: false,
            total,
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
        // Counted as the search's schedules are: up to its first failure.
        let counted = !self.failing;
        self.ran(case.steps);
        if let leaselab_gen::search::Phase::Drawn(i) = phase {
            self.last = Some(i);
        }
        if counted {
            for &(name, n) in &case.tally {
                match self.tally.iter_mut().find(|(k, _)| *k == name) {
                    Some((_, sum)) => *sum += n,
                    None => self.tally.push((name, n)),
                }
            }
        }
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

    /// Where a search of `share` goes on: after the last schedule it reported (schedules are
    /// reported in order, so every one before it ran).
    pub fn resume_at(&self, share: Share) -> u64 {
        self.last.map_or(share.from, |i| i + 1)
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
