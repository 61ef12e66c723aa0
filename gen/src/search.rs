//! The search over generated schedules that `diff --gen` and `audit --gen` share: draw
//! schedules from a seed, run each, and shrink the first that fails — with the schedules run by
//! several workers at once (each its own databases), yet the same schedules drawn, the same one
//! found first and the same one shrunk as proptest's own runner would, whatever the number of
//! workers.
//!
//! Why not `TestRunner::run`: it runs one case at a time, and a schedule on PostgreSQL spends
//! half its time waiting on the server (a reset, a crash and restart, a lock-wait question), so
//! one worker leaves a 2-core machine half idle. The drawing here is the runner's, step for step
//! (before each case it reseeds its generator from itself, as `TestRunner` does to persist a
//! failing seed; a test compares the two), and the shrinking is `TestRunner::shrink`'s
//! simplify/complicate loop, run on one worker after the parallel part has settled which
//! schedule fails first.

//!
//! The types of a search's answer (a run's [`Case`], what was [`Found`]) are also what the
//! PostgreSQL adapter returns for one schedule, and it builds without proptest: only the
//! drawing and the search itself need the `strategies` feature.

use crate::Schedule;
#[cfg(feature = "strategies")]
use proptest::prelude::Rng;
#[cfg(feature = "strategies")]
use proptest::strategy::{Strategy, ValueTree};
#[cfg(feature = "strategies")]
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
#[cfg(feature = "strategies")]
use std::collections::BTreeMap;
#[cfg(feature = "strategies")]
use std::sync::mpsc;

/// What a search draws and how far it shrinks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Schedules to run (the first failure ends the drawing).
    pub schedules: u32,
    /// Seed of the drawing: the same seed draws the same schedules.
    pub seed: u64,
    /// Most intents per schedule.
    pub steps: usize,
    /// Most runs spent shrinking a failure.
    pub shrink_iters: u32,
    /// Which drawn schedules this search runs ([`Share`]): every one, or a shard's, from a
    /// resume point on.
    pub share: Share,
}

/// The drawn schedules one search runs: of schedules 1, 2, … (in drawing order), those at or
/// after `from` whose number is `k` modulo `n` (counting from 0, as `sim --shard K/N` does), so
/// that `n` searches of one plan, `k = 0 … n−1`, run every schedule once between them, and a
/// search cut short goes on at `from`. The others are still drawn — the schedules are one
/// sequence from the seed — and cost no run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Share {
    /// `(k, n)`: the k-th of n shards.
    pub shard: (u64, u64),
    /// The first schedule (1-based) to run.
    pub from: u64,
}

impl Share {
    /// Every schedule.
    pub const ALL: Share = Share {
        shard: (0, 1),
        from: 1,
    };

    /// Whether schedule `i` (1-based) is this search's to run.
    pub fn runs(self, i: u64) -> bool {
        let (k, n) = self.shard;
        i >= self.from && i >= 1 && (i - 1) % n.max(1) == k
    }

    /// How many of schedules `1..=total` it runs.
    pub fn count(self, total: u64) -> u64 {
        (1..=total).filter(|&i| self.runs(i)).count() as u64
    }
}

/// How one schedule's run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict<F> {
    /// It passes.
    Pass,
    /// It fails: the failing run itself (what the caller needs to report and save it).
    Fail(F),
    /// It was stopped before it could say (a Ctrl-C): neither a pass nor a failure. The search
    /// hands out no more schedules, and a shrinking ends on its last failing schedule.
    Interrupted,
}

/// Named counts a run reports beside its verdict: how often it reached what a search aims at
/// (`audit`'s contention counts), summed over the drawn schedules by whoever observes them.
pub type Tally = Vec<(&'static str, u64)>;

/// One schedule's run: how many steps it took, what it reached, and how it ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Case<F> {
    /// Its steps (for progress and the summary).
    pub steps: u64,
    /// Its counts (empty where a search counts nothing).
    pub tally: Tally,
    /// Pass, fail, or interrupted.
    pub verdict: Verdict<F>,
}

impl<F> Case<F> {
    /// A run stopped before it could say.
    pub fn interrupted() -> Self {
        Case {
            steps: 0,
            tally: Tally::new(),
            verdict: Verdict::Interrupted,
        }
    }

    /// The failing run, when it failed.
    pub fn failure(&self) -> Option<&F> {
        match &self.verdict {
            Verdict::Fail(f) => Some(f),
            Verdict::Pass | Verdict::Interrupted => None,
        }
    }
}

/// Which run a [`Case`] reported to the search's observer was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Drawn schedule number `n` (1-based).
    Drawn(u64),
    /// A run of the shrinking.
    Shrinking,
}

/// The first failing schedule, shrunk.
#[derive(Clone, Debug)]
pub struct Found<F> {
    /// Its number among the drawn schedules (1-based).
    pub first: u64,
    /// The smallest failing schedule the shrinking reached.
    pub minimal: Schedule,
    /// The run of `minimal` that failed — the one the search saw, never a run again (which may
    /// answer otherwise where PostgreSQL's order is its own).
    pub failure: F,
    /// The shrinking was stopped (`stop`, a Ctrl-C, an interrupted run) before it ran out of
    /// steps or budget: a smaller failing schedule may exist.
    pub cut_short: bool,
}

#[cfg(feature = "strategies")]
/// proptest's runner for this plan: ChaCha seeded with the seed's bytes.
pub fn runner(plan: &Plan) -> TestRunner {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&plan.seed.to_le_bytes());
    let config = Config {
        cases: plan.schedules,
        failure_persistence: None,
        max_shrink_iters: plan.shrink_iters,
        ..Config::default()
    };
    TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &bytes))
}

#[cfg(feature = "strategies")]
/// The next schedule `runner` draws, exactly as `TestRunner::run` draws its next case: it first
/// replaces its generator by one seeded from 32 of its own values (`TestRng::gen_get_seed`,
/// ChaCha: each byte one `next_u32` truncated), then draws the tree.
fn draw<S: Strategy>(runner: &mut TestRunner, strategy: &S) -> Result<S::Tree, String> {
    let mut seed = [0u8; 32];
    for b in &mut seed {
        *b = runner.rng().next_u32() as u8;
    }
    *runner.rng() = TestRng::from_seed(RngAlgorithm::ChaCha, &seed);
    strategy.new_tree(runner).map_err(|r| r.to_string())
}

#[cfg(feature = "strategies")]
/// The schedules `plan` draws, in order: what [`search`] runs when none fails.
pub fn schedules(plan: &Plan) -> impl Iterator<Item = Result<Schedule, String>> {
    let strategy = crate::schedule(plan.steps);
    let mut runner = runner(plan);
    (0..plan.schedules).map(move |_| draw(&mut runner, &strategy).map(|t| t.current()))
}

#[cfg(feature = "strategies")]
/// Runs `plan`'s schedules on `workers` (at least one; each runs one schedule at a time with
/// `run`), reports every run to `observe` in the order the schedules were drawn, and shrinks the
/// first failing one on the first worker. `stop` is asked before each schedule is handed out
/// and before each shrinking run: once it says yes, no more are ([`Found::cut_short`]); a run
/// that says it was interrupted counts the same, and is reported to no one. An `Err` of `run`
/// (the databases failed, not the schedule) ends the search with it.
pub fn search<W, F, E, R, O, X>(
    workers: &mut [W],
    plan: &Plan,
    run: R,
    mut observe: O,
    stop: X,
) -> Result<Option<Found<F>>, SearchError<E>>
where
    W: Send,
    F: Clone + Send,
    E: Send,
    R: Fn(&mut W, &Schedule) -> Result<Case<F>, E> + Sync,
    O: FnMut(Phase, &Case<F>),
    X: Fn() -> bool,
{
    let strategy = crate::schedule(plan.steps);
    let mut runner = runner(plan);
    let (first, tree, failure) = {
        let Some((head, rest)) = workers.split_first_mut() else {
            return Ok(None);
        };
        match drawn(
            head,
            rest,
            &mut runner,
            &strategy,
            plan,
            &run,
            &mut observe,
            &stop,
        )? {
            Some(f) => f,
            None => return Ok(None),
        }
    };
    let (tree, failure, cut_short) = shrink(
        &mut workers[0],
        tree,
        failure,
        plan,
        &run,
        &mut observe,
        &stop,
    )?;
    Ok(Some(Found {
        first,
        minimal: tree.current(),
        failure,
        cut_short,
    }))
}

/// A search that could not finish.
#[derive(Debug)]
pub enum SearchError<E> {
    /// The generator gave up (proptest's `Abort`).
    Aborted(String),
    /// A run failed (not the schedule: what runs it).
    Run(E),
}

#[cfg(feature = "strategies")]
/// The first failing drawn schedule: its number, its tree, its failing run.
type Drawn<T, F, E> = Result<Option<(u64, T, F)>, SearchError<E>>;

#[cfg(feature = "strategies")]
/// The drawn schedules, on every worker: the first failing one (its number, its tree, its
/// run), settled in drawing order — a failure is the first only once every schedule drawn
/// before it has passed. An interrupted run ends the drawing, and nothing drawn after it counts.
#[allow(clippy::too_many_arguments)]
fn drawn<S, W, F, E, R, O, X>(
    head: &mut W,
    rest: &mut [W],
    runner: &mut TestRunner,
    strategy: &S,
    plan: &Plan,
    run: &R,
    observe: &mut O,
    stop: &X,
) -> Drawn<S::Tree, F, E>
where
    S: Strategy<Value = Schedule>,
    W: Send,
    F: Send,
    E: Send,
    R: Fn(&mut W, &Schedule) -> Result<Case<F>, E> + Sync,
    O: FnMut(Phase, &Case<F>),
    X: Fn() -> bool,
{
    let n_workers = 1 + rest.len();
    std::thread::scope(|scope| {
        let (done_tx, done_rx) = mpsc::channel::<(usize, u64, Result<Case<F>, E>)>();
        let mut inboxes = Vec::new();
        for (k, w) in std::iter::once(head).chain(rest.iter_mut()).enumerate() {
            let (tx, rx) = mpsc::channel::<(u64, Schedule)>();
            inboxes.push(tx);
            let done = done_tx.clone();
            scope.spawn(move || {
                for (i, s) in rx {
                    if done.send((k, i, run(w, &s))).is_err() {
                        return;
                    }
                }
            });
        }
        drop(done_tx);
        let mut trees: BTreeMap<u64, S::Tree> = BTreeMap::new();
        let mut results: BTreeMap<u64, Result<Case<F>, E>> = BTreeMap::new();
        let mut next_draw: u64 = 1;
        let mut next_report: u64 = 1;
        let mut idle: Vec<usize> = (0..n_workers).rev().collect();
        let mut found: Option<(u64, F)> = None;
        let mut interrupted = false;
        let mut drawing = true;
        loop {
            // Hand a schedule to every idle worker while drawing goes on.
            while drawing && !idle.is_empty() {
                if next_draw > u64::from(plan.schedules) || found.is_some() || interrupted || stop()
                {
                    drawing = false;
                    break;
                }
                let tree = draw(runner, strategy).map_err(SearchError::Aborted)?;
                if !plan.share.runs(next_draw) {
                    // Another shard's, or before the resume point: drawn, not run.
                    next_draw += 1;
                    continue;
                }
                let k = idle.pop().unwrap_or(0);
                if inboxes[k].send((next_draw, tree.current())).is_err() {
                    drawing = false;
                    break;
                }
                trees.insert(next_draw, tree);
                next_draw += 1;
            }
            if idle.len() == n_workers {
                break;
            }
            let Ok((k, i, r)) = done_rx.recv() else {
                break;
            };
            idle.push(k);
            results.insert(i, r);
            // Report in drawing order; the first failure ends the drawing.
            loop {
                while next_report < next_draw && !plan.share.runs(next_report) {
                    next_report += 1;
                }
                let Some(r) = results.remove(&next_report) else {
                    break;
                };
                let case = r.map_err(SearchError::Run)?;
                let i = next_report;
                next_report += 1;
                if found.is_some() || interrupted {
                    // Drawn after the first failure (or an interrupted run) while it was
                    // running: not reported.
                    trees.remove(&i);
                    continue;
                }
                if matches!(case.verdict, Verdict::Interrupted) {
                    interrupted = true;
                    trees.remove(&i);
                    continue;
                }
                observe(Phase::Drawn(i), &case);
                match case.verdict {
                    Verdict::Fail(f) => found = Some((i, f)),
                    Verdict::Pass | Verdict::Interrupted => {
                        trees.remove(&i);
                    }
                }
            }
        }
        drop(inboxes);
        Ok(found.and_then(|(i, f)| trees.remove(&i).map(|t| (i, t, f))))
    })
}

#[cfg(feature = "strategies")]
/// `TestRunner::shrink`: simplify while the schedule still fails, complicate when it passes,
/// at most `plan.shrink_iters` runs; the tree ends on the smallest failing schedule, returned
/// with its failing run. `stop`, or a run that says it was interrupted, ends it early (a run
/// stopped part-way would be counted as a pass it is not): the tree goes back to the last
/// failing schedule, and the third value says it was cut short.
fn shrink<T, W, F, E, R, O, X>(
    worker: &mut W,
    mut tree: T,
    failure: F,
    plan: &Plan,
    run: &R,
    observe: &mut O,
    stop: &X,
) -> Result<(T, F, bool), SearchError<E>>
where
    T: ValueTree<Value = Schedule>,
    F: Clone,
    R: Fn(&mut W, &Schedule) -> Result<Case<F>, E>,
    O: FnMut(Phase, &Case<F>),
    X: Fn() -> bool,
{
    // Schedules already seen to fail, and their failing runs. After a pass, `complicate` moves
    // back to the last failing schedule; running it again would ask PostgreSQL a question it
    // already answered, and its answer may differ (the waiters one commit wakes take the row
    // in an order the server does not fix), which ended the shrinking at its first step.
    let mut failed: BTreeMap<Vec<String>, F> = BTreeMap::new();
    failed.insert(tree.current().setup_lines(), failure.clone());
    let mut last = failure;
    if plan.shrink_iters == 0 || !tree.simplify() {
        return Ok((tree, last, false));
    }
    let mut iterations = 0;
    let mut cut_short = false;
    loop {
        let stopped = iterations < plan.shrink_iters && stop();
        if iterations >= plan.shrink_iters || stopped {
            // Back to the most recent failing schedule.
            while tree.complicate() {}
            cut_short = stopped;
            break;
        }
        iterations += 1;
        let schedule = tree.current();
        let key = schedule.setup_lines();
        let failure = match failed.get(&key) {
            Some(f) => Some(f.clone()),
            None => {
                let case = run(worker, &schedule).map_err(SearchError::Run)?;
                if matches!(case.verdict, Verdict::Interrupted) {
                    while tree.complicate() {}
                    cut_short = true;
                    break;
                }
                observe(Phase::Shrinking, &case);
                match case.verdict {
                    Verdict::Fail(f) => {
                        failed.insert(key, f.clone());
                        Some(f)
                    }
                    Verdict::Pass | Verdict::Interrupted => None,
                }
            }
        };
        match failure {
            None => {
                if !tree.complicate() {
                    break;
                }
            }
            Some(f) => {
                last = f;
                if !tree.simplify() {
                    break;
                }
            }
        }
    }
    // The run of the schedule the tree ends on (seen to fail: every schedule it rests on was).
    let run_of_minimal = failed.remove(&tree.current().setup_lines()).unwrap_or(last);
    Ok((tree, run_of_minimal, cut_short))
}

#[cfg(all(test, feature = "strategies"))]
mod tests {
    use super::*;
    use std::cell::RefCell;

    /// A rule that fails some schedules: more than `k` intents of one kind.
    fn fails(s: &Schedule, k: usize) -> Option<String> {
        let writes = s
            .intents
            .iter()
            .filter(|i| i.kind == crate::Kind::Write)
            .count();
        (writes > k).then(|| format!("{writes} writes"))
    }

    /// The same schedules in the same order as `TestRunner::run`, and the same one found and
    /// shrunk to the same schedule — with one worker and with three.
    #[test]
    fn it_draws_finds_and_shrinks_as_proptests_runner_does() {
        let mut founds = 0;
        for (seed, k) in [(1, 3), (7, 5), (42, 2), (5, 1), (9, 4)] {
            let plan = Plan {
                schedules: 200,
                seed,
                steps: 40,
                shrink_iters: 500,
                share: Share::ALL,
            };
            let seen = RefCell::new(Vec::new());
            let mut reference = runner(&plan);
            let result = reference.run(&crate::schedule(plan.steps), |s| {
                if seen.borrow().len() < 300 {
                    seen.borrow_mut().push(s.setup_lines());
                }
                match fails(&s, k) {
                    Some(why) => Err(proptest::test_runner::TestCaseError::fail(why)),
                    None => Ok(()),
                }
            });
            let minimal = match result {
                Err(proptest::test_runner::TestError::Fail(_, m)) => Some(m.setup_lines()),
                _ => None,
            };
            let first = seen
                .borrow()
                .iter()
                .position(|l| {
                    let numbered: Vec<(usize, &str)> =
                        l.iter().map(String::as_str).enumerate().collect();
                    let s = Schedule::from_setup_lines(&Default::default(), "drawn", &numbered)
                        .ok()
                        .flatten();
                    s.is_some_and(|s| fails(&s, k).is_some())
                })
                .map(|p| p as u64 + 1);
            for n in [1, 3] {
                let mut workers = vec![(); n];
                let mut drawn = Vec::new();
                let found = search(
                    &mut workers,
                    &plan,
                    |_, s| {
                        Ok::<_, ()>(Case {
                            steps: s.intents.len() as u64,
                            tally: Tally::new(),
                            verdict: fails(s, k).map_or(Verdict::Pass, Verdict::Fail),
                        })
                    },
                    |p, _| drawn.push(p),
                    || false,
                )
                .expect("runs");
                assert_eq!(
                    found.as_ref().map(|f| f.first),
                    first,
                    "seed {seed}, {n} workers"
                );
                assert_eq!(
                    found.as_ref().map(|f| f.minimal.setup_lines()),
                    minimal,
                    "seed {seed}"
                );
                let Some(found) = found else { continue };
                founds += 1;
                let shown: Vec<u64> = drawn
                    .iter()
                    .filter_map(|p| match p {
                        Phase::Drawn(i) => Some(*i),
                        Phase::Shrinking => None,
                    })
                    .collect();
                assert_eq!(shown, (1..=found.first).collect::<Vec<_>>(), "in order");
            }
        }
        assert!(founds >= 6, "{founds} searches found a failure");
    }

    /// Four shards run every schedule once between them, each the ones numbered its own
    /// modulo four, in order; a search resumed at `from` runs the rest; a shard's first
    /// failure is the first failing schedule of its share (its number the unsharded one's).
    #[test]
    fn shards_and_a_resume_point_split_the_schedules() {
        let base = Plan {
            schedules: 60,
            seed: 7,
            steps: 40,
            shrink_iters: 0,
            share: Share::ALL,
        };
        let failing: Vec<u64> = schedules(&base)
            .enumerate()
            .filter(|(_, s)| s.as_ref().is_ok_and(|s| fails(s, 2).is_some()))
            .map(|(i, _)| i as u64 + 1)
            .collect();
        assert!(!failing.is_empty(), "seed 7 draws a failing schedule");
        let run_share = |share: Share, k: usize| {
            let plan = Plan { share, ..base };
            let mut workers = vec![(); 2];
            let mut ran = Vec::new();
            let found = search(
                &mut workers,
                &plan,
                |_, s| {
                    Ok::<_, ()>(Case {
                        steps: 1,
                        tally: Tally::new(),
                        verdict: fails(s, k).map_or(Verdict::Pass, Verdict::Fail),
                    })
                },
                |p, _| {
                    if let Phase::Drawn(i) = p {
                        ran.push(i);
                    }
                },
                || false,
            )
            .expect("runs");
            (ran, found.map(|f| f.first))
        };
        let mut all = Vec::new();
        let mut shards_failing = 0;
        for k in 0..4 {
            let share = Share {
                shard: (k, 4),
                from: 1,
            };
            // Nothing fails (no schedule has more than 40 writes): every one of the share runs.
            let (ran, found) = run_share(share, 40);
            assert_eq!(found, None);
            assert_eq!(
                ran,
                (1..=60).filter(|i| (i - 1) % 4 == k).collect::<Vec<_>>()
            );
            assert_eq!(share.count(60), ran.len() as u64);
            all.extend(ran);
            // The first failing schedule of the share is the one found.
            let (_, found) = run_share(share, 2);
            let first = failing.iter().copied().find(|&i| share.runs(i));
            assert_eq!(found, first, "shard {k}/4");
            shards_failing += u32::from(found.is_some());
        }
        assert!(
            shards_failing >= 2,
            "{shards_failing} shards found a failure"
        );
        all.sort_unstable();
        assert_eq!(all, (1..=60).collect::<Vec<_>>());
        let (ran, _) = run_share(
            Share {
                shard: (0, 1),
                from: 45,
            },
            40,
        );
        assert_eq!(ran, (45..=60).collect::<Vec<_>>());
    }

    /// [`schedules`] lists what the runner draws.
    #[test]
    fn schedules_are_the_runners_in_order() {
        let plan = Plan {
            schedules: 30,
            seed: 11,
            steps: 40,
            shrink_iters: 0,
            share: Share::ALL,
        };
        let seen = RefCell::new(Vec::new());
        let _ = runner(&plan).run(&crate::schedule(plan.steps), |s| {
            seen.borrow_mut().push(s.setup_lines());
            Ok(())
        });
        let listed: Vec<_> = schedules(&plan)
            .map(|s| s.expect("draws").setup_lines())
            .collect();
        assert_eq!(listed, seen.into_inner());
    }

    /// Without a failure every schedule runs once; `stop` hands out no more.
    #[test]
    fn it_runs_each_schedule_once_and_stops_when_told() {
        let plan = Plan {
            schedules: 50,
            seed: 3,
            steps: 20,
            shrink_iters: 10,
            share: Share::ALL,
        };
        let mut workers = vec![0u32; 2];
        let mut n = 0;
        let found = search(
            &mut workers,
            &plan,
            |w, _| {
                *w += 1;
                Ok::<_, ()>(Case::<String> {
                    steps: 0,
                    tally: Tally::new(),
                    verdict: Verdict::Pass,
                })
            },
            |_, _| n += 1,
            || false,
        )
        .expect("runs");
        assert!(found.is_none());
        assert_eq!(n, 50);
        assert_eq!(workers.iter().sum::<u32>(), 50);
        let asked = std::cell::Cell::new(0);
        let mut workers = vec![0u32; 2];
        let _ = search(
            &mut workers,
            &plan,
            |w, _| {
                *w += 1;
                Ok::<_, ()>(Case::<String> {
                    steps: 0,
                    tally: Tally::new(),
                    verdict: Verdict::Pass,
                })
            },
            |_, _| {},
            || {
                asked.set(asked.get() + 1);
                asked.get() > 10
            },
        );
        assert_eq!(workers.iter().sum::<u32>(), 10);
    }

    /// A stop asked for while a failure shrinks ends the shrinking at once, on a schedule seen
    /// to fail, and says it was cut short; without it the same search runs its shrinking out.
    #[test]
    fn a_stop_during_shrinking_ends_it_on_a_failing_schedule_and_says_so() {
        let plan = Plan {
            schedules: 100,
            seed: 5,
            steps: 40,
            shrink_iters: 500,
            share: Share::ALL,
        };
        let run = |_: &mut (), s: &Schedule| {
            Ok::<_, ()>(Case {
                steps: s.intents.len() as u64,
                tally: Tally::new(),
                verdict: fails(s, 1).map_or(Verdict::Pass, Verdict::Fail),
            })
        };
        let shrinking = std::cell::Cell::new(0u32);
        let whole = search(
            &mut [()],
            &plan,
            run,
            |p, _| shrinking.set(shrinking.get() + u32::from(p == Phase::Shrinking)),
            || false,
        )
        .expect("runs")
        .expect("found");
        assert!(!whole.cut_short);
        let all = shrinking.get();
        assert!(all > 5, "{all} shrinking runs");
        // Stopped after three shrinking runs.
        shrinking.set(0);
        let cut = search(
            &mut [()],
            &plan,
            run,
            |p, _| shrinking.set(shrinking.get() + u32::from(p == Phase::Shrinking)),
            || shrinking.get() >= 3,
        )
        .expect("runs")
        .expect("found");
        assert!(cut.cut_short);
        assert_eq!(shrinking.get(), 3);
        assert!(fails(&cut.minimal, 1).is_some(), "{:?}", cut.minimal);
        assert!(cut.minimal.intents.len() >= whole.minimal.intents.len());
    }

    /// A run that says it was interrupted is no pass: it is reported to no one, nothing drawn
    /// after it runs, and during a shrinking it ends the shrinking on a failing schedule.
    #[test]
    fn an_interrupted_run_is_not_a_pass() {
        let plan = Plan {
            schedules: 50,
            seed: 3,
            steps: 20,
            shrink_iters: 10,
            share: Share::ALL,
        };
        let ran = std::sync::atomic::AtomicU32::new(0);
        let mut observed = Vec::new();
        let found = search(
            &mut [()],
            &plan,
            |_, _| {
                let n = ran.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                Ok::<_, ()>(Case::<String> {
                    steps: 1,
                    tally: Tally::new(),
                    verdict: if n == 5 {
                        Verdict::Interrupted
                    } else {
                        Verdict::Pass
                    },
                })
            },
            |p, _| observed.push(p),
            || false,
        )
        .expect("runs");
        assert!(found.is_none());
        assert_eq!(observed, (1..=4).map(Phase::Drawn).collect::<Vec<_>>());
        assert_eq!(ran.load(std::sync::atomic::Ordering::SeqCst), 5);
        // Interrupted in the middle of a shrinking.
        let plan = Plan {
            schedules: 100,
            seed: 5,
            steps: 40,
            shrink_iters: 500,
            share: Share::ALL,
        };
        let shrinking = std::cell::Cell::new(0u32);
        let runs = std::sync::atomic::AtomicU32::new(0);
        let found = search(
            &mut [()],
            &plan,
            |_, s: &Schedule| {
                let failing = fails(s, 1);
                // The third run after the first failure is interrupted.
                let n = if failing.is_some() || runs.load(std::sync::atomic::Ordering::SeqCst) > 0 {
                    runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1
                } else {
                    0
                };
                Ok::<_, ()>(Case {
                    steps: s.intents.len() as u64,
                    tally: Tally::new(),
                    verdict: if n == 4 {
                        Verdict::Interrupted
                    } else {
                        failing.map_or(Verdict::Pass, Verdict::Fail)
                    },
                })
            },
            |p, _| shrinking.set(shrinking.get() + u32::from(p == Phase::Shrinking)),
            || false,
        )
        .expect("runs")
        .expect("found");
        assert!(found.cut_short);
        assert_eq!(shrinking.get(), 2);
        assert_eq!(fails(&found.minimal, 1), Some(found.failure));
    }
}
