//! Running a search: stateright's breadth-first (shortest counterexamples) or depth-first
//! checker over [`LeaseSystem`], with symmetry reduction for interchangeable holders, and what
//! it found in a form the command line and the tests read.

use crate::system::{representative, Action, Bounds, LeaseSystem, State, SOMETIMES};
use stateright::{Checker, Model};
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
    pub sometimes: Vec<(&'static str, Option<usize>)>,
}

impl Found {
    /// Distinct states per second.
    pub fn rate(&self) -> f64 {
        self.unique as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

const ALWAYS: [&str; 5] = ["I1", "I2", "I3", "acceptance", "progress"];

/// Runs the search to the end of its bounds.
pub fn run(o: &Options) -> Found {
    let sys = LeaseSystem::new(o.bounds.clone());
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
    let start = Instant::now();
    let (states, unique, depth, d) = match o.order {
        Order::Bfs => summary(builder.spawn_bfs().join()),
        Order::Dfs => summary(builder.spawn_dfs().join()),
    };
    let elapsed = start.elapsed();
    let mut violations = Vec::new();
    for name in ALWAYS {
        if let Some(p) = d.get(name) {
            violations.push((name, p.clone()));
        }
    }
    let sometimes = SOMETIMES
        .iter()
        .filter(|(n, _)| *n != "crash-restart" || o.bounds.crash)
        .map(|(n, _)| (*n, d.get(n).map(Vec::len)))
        .collect();
    Found {
        states,
        unique,
        depth,
        elapsed,
        violations,
        sometimes,
    }
}

type Discoveries = std::collections::HashMap<&'static str, Vec<Action>>;

fn summary(c: impl Checker<LeaseSystem>) -> (usize, usize, usize, Discoveries) {
    let d = c
        .discoveries()
        .into_iter()
        .map(|(k, p)| (k, p.into_actions()))
        .collect();
    (c.state_count(), c.unique_state_count(), c.max_depth(), d)
}

/// Serves stateright's Explorer for these bounds on `addr` (blocks until the process ends).
pub fn serve(bounds: &Bounds, addr: &str) {
    let sys = LeaseSystem::for_explorer(bounds.clone());
    sys.checker().serve(addr);
}
