//! Running a search: stateright's breadth-first (shortest counterexamples) or depth-first
//! checker over [`LeaseSystem`], with symmetry reduction for interchangeable holders, and what
//! it found in a form the command line and the tests read.

use crate::system::{representative, Action, Always, Bounds, LeaseSystem, State, SOMETIMES};
use leaselab_checkers::sometimes::Sometimes;
use stateright::{Checker, HasDiscoveries, Model};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Search order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Breadth-first: every counterexample found is a shortest one.
    Bfs,
    /// Depth-first: less memory, counterexamples not shortest.
    Dfs,
}

/// How to search.
#[derive(Clone, Debug)]
pub struct Options {
    /// The system's bounds.
    pub bounds: Bounds,
    /// Search order.
    pub order: Order,
    /// Worker threads.
    pub threads: usize,
    /// Symmetry reduction (holders are interchangeable).
    pub symmetry: bool,
    /// Explore everything and report every property; otherwise stop at the first violation
    /// of an `always` property, as TLC does.
    pub all: bool,
    /// Stop after this many states (generated, with repeats).
    pub max_states: Option<usize>,
    /// Stop when the process's resident memory passes this many MiB.
    pub max_memory_mb: Option<u64>,
}

impl Options {
    /// A search of `bounds` in `order`: one thread, stop at the first violation, no caps.
    pub fn new(bounds: Bounds, order: Order) -> Self {
        Options {
            bounds,
            order,
            threads: 1,
            symmetry: false,
            all: false,
            max_states: None,
            max_memory_mb: None,
        }
    }
}

/// Why a search ended before its bounds were exhausted (apart from a violation, where it stops
/// unless [`Options::all`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stopped {
    /// Ctrl-C or SIGTERM.
    Interrupted,
    /// [`Options::max_states`] was reached.
    MaxStates(usize),
    /// [`Options::max_memory_mb`] was passed.
    Memory(u64),
}

/// A search's figures while it runs.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    /// States generated (with repeats).
    pub states: usize,
    /// Distinct states.
    pub unique: usize,
    /// Distinct states not yet expanded (found, waiting for their successors).
    pub queue: usize,
    /// Deepest path so far.
    pub depth: usize,
    /// Since the start.
    pub elapsed: Duration,
    /// The process's resident memory, MiB (0 where `/proc` cannot tell).
    pub memory_mb: u64,
}

/// The process's resident memory in MiB, from `/proc/self/statm` (0 if unreadable).
pub fn resident_mb() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096 / (1024 * 1024))
}

/// What a search found.
#[derive(Clone, Debug)]
pub struct Found {
    /// States generated (with repeats).
    pub states: usize,
    /// Distinct states.
    pub unique: usize,
    /// Deepest path explored.
    pub depth: usize,
    /// Wall time.
    pub elapsed: Duration,
    /// Each `always` property that failed, with the actions of its counterexample.
    pub violations: Vec<(&'static str, Vec<Action>)>,
    /// Each `sometimes` property, with the length of the path that reached it (`None`: never).
    pub sometimes: Vec<(Sometimes, Option<usize>)>,
    /// Why the search ended early, if it did.
    pub stopped: Option<Stopped>,
    /// The search ended at its first violation (its `sometimes` figures are partial).
    pub stopped_at_violation: bool,
}

impl Found {
    /// Distinct states per second.
    pub fn rate(&self) -> f64 {
        self.unique as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// Runs the search to the end of its bounds (or its first violation, or a cap).
pub fn run(o: &Options) -> Found {
    run_with(o, &AtomicBool::new(false), &mut |_| {})
}

/// Runs the search, calling `progress` about once a second, and stopping early when `stop` is
/// set (Ctrl-C), a cap of `o` is reached, or — unless `o.all` — at the first violation.
pub fn run_with(o: &Options, stop: &AtomicBool, progress: &mut dyn FnMut(&Progress)) -> Found {
    let sys = LeaseSystem::new(o.bounds.clone());
    let expanded = std::sync::Arc::clone(&sys.expanded);
    let holders = o.bounds.holders;
    let fixed_first = o.bounds.slow != (1, 1);
    let mut builder = sys.checker().threads(o.threads.max(1));
    if o.symmetry && holders > 1 {
        builder = builder.symmetry_fn(match (holders, fixed_first) {
            (2, false) => |s: &State| representative(s, 2, false),
            (2, true) => |s: &State| representative(s, 2, true),
            (_, false) => |s: &State| representative(s, 3, false),
            (_, true) => |s: &State| representative(s, 3, true),
        });
    }
    if !o.all {
        builder = builder.finish_when(HasDiscoveries::AnyFailures);
    }
    if let Some(n) = o.max_states {
        builder = builder.target_state_count(n);
    }
    let start = Instant::now();
    let watch = Watch {
        o,
        stop,
        start,
        progress,
        expanded: &expanded,
    };
    let (states, unique, depth, d, stopped) = match o.order {
        Order::Bfs => watch.drive(builder.spawn_bfs()),
        Order::Dfs => watch.drive(builder.spawn_dfs()),
    };
    let elapsed = start.elapsed();
    let mut violations = Vec::new();
    for name in Always::ALL.map(Always::name) {
        if let Some(p) = d.get(name) {
            violations.push((name, p.clone()));
        }
    }
    let sometimes = SOMETIMES
        .iter()
        .filter(|(n, _)| *n != Sometimes::DbRestart || o.bounds.crash)
        .map(|(n, _)| (*n, d.get(n.name()).map(Vec::len)))
        .collect();
    let stopped_at_violation = !o.all && !violations.is_empty() && stopped.is_none();
    Found {
        states,
        unique,
        depth,
        elapsed,
        violations,
        sometimes,
        stopped,
        stopped_at_violation,
    }
}

/// Watches a running search: progress, Ctrl-C, the memory cap.
struct Watch<'a> {
    o: &'a Options,
    stop: &'a AtomicBool,
    start: Instant,
    progress: &'a mut dyn FnMut(&Progress),
    expanded: &'a std::sync::atomic::AtomicUsize,
}

impl Watch<'_> {
    fn drive(
        self,
        mut c: impl Checker<LeaseSystem>,
    ) -> (usize, usize, usize, Discoveries, Option<Stopped>) {
        let handles = c.handles();
        let mut stopped = None;
        let tick = Duration::from_millis(50);
        let mut last = Instant::now();
        while !handles.iter().all(|h| h.is_finished()) {
            std::thread::sleep(tick);
            if self.stop.load(Ordering::SeqCst) {
                // Stateright's threads cannot be stopped: they are left to the process's exit.
                stopped = Some(Stopped::Interrupted);
                break;
            }
            let memory_mb = resident_mb();
            if let Some(cap) = self.o.max_memory_mb.filter(|cap| memory_mb > *cap) {
                stopped = Some(Stopped::Memory(cap));
                break;
            }
            if last.elapsed() >= Duration::from_secs(1) {
                last = Instant::now();
                let unique = c.unique_state_count();
                (self.progress)(&Progress {
                    states: c.state_count(),
                    unique,
                    queue: unique.saturating_sub(self.expanded.load(Ordering::Relaxed)),
                    depth: c.max_depth(),
                    elapsed: self.start.elapsed(),
                    memory_mb,
                });
            }
        }
        if stopped.is_none() {
            for h in handles {
                let _ = h.join();
            }
            if let Some(n) = self.o.max_states.filter(|n| c.state_count() >= *n) {
                stopped = Some(Stopped::MaxStates(n));
            }
        }
        let (states, unique, depth, d) = summary(&c);
        (states, unique, depth, d, stopped)
    }
}

type Discoveries = std::collections::HashMap<&'static str, Vec<Action>>;

fn summary(c: &impl Checker<LeaseSystem>) -> (usize, usize, usize, Discoveries) {
    let d = c
        .discoveries()
        .into_iter()
        .map(|(k, p)| (k, p.into_actions()))
        .collect();
    (c.state_count(), c.unique_state_count(), c.max_depth(), d)
}

/// Serves stateright's Explorer for these bounds on `addr` (blocks until the process ends).
///
/// The Explorer's own checker computes nothing until asked, so its status panel would say
/// `States: 1` and every property `Searching:` beside a state that is already broken. Once the
/// server listens, it is asked to run its search to completion (what its "Run to completion"
/// button asks), so the panel counts the states and names each property's discovery.
pub fn serve(bounds: &Bounds, addr: &str) {
    let sys = LeaseSystem::for_explorer(bounds.clone());
    let at = addr.to_string();
    std::thread::spawn(move || run_to_completion(&at));
    sys.checker().serve(addr);
}

/// Posts the Explorer's `/.runtocompletion` on `addr` as soon as it accepts connections (for
/// up to ten seconds); a server that never listens is the caller's error to report.
fn run_to_completion(addr: &str) {
    use std::io::{Read, Write};
    for _ in 0..200 {
        if let Ok(mut c) = std::net::TcpStream::connect(addr) {
            let ask = format!(
                "POST /.runtocompletion HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
            if c.write_all(ask.as_bytes()).is_ok() {
                let _ = c.read_to_end(&mut Vec::new());
            }
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}
