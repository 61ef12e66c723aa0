//! # leaselab-checkers
//!
//! Judges a recorded [`History`] — from the model, the simulation or PostgreSQL alike — against
//! the invariants of CASES.md, and counts the `sometimes` properties that prove a run's faults
//! really fired. Checkers read only the history: never model internals.
//!
//! ```
//! use leaselab_model::prelude::*;
//! use leaselab_checkers::{check, Check};
//!
//! let mut w = World::new(Config::with_fence(FenceMode::Off));
//! w.run("holder-a", Op::acquire("holder-a", 100));
//! w.advance(250);
//! w.run("holder-b", Op::acquire("holder-b", 100));
//! w.run("holder-b", Op::write("summary", "B-new", 2));
//! w.run("holder-a", Op::write("summary", "A-stale", 1)); // unfenced: accepted
//! let report = check(&w.history);
//! assert!(report.violated(Check::I3));
//! ```
//!
//! - [`facts`]: accepted writes, grants and publishes with their commit windows.
//! - [`safety`]: the `always` checks I1, I2, I3, acceptance, final state.
//! - [`sometimes`]: counts of the events that show faults landed.
//! - [`ledger`]: the second oracle: facts against what the model's databases committed.
//!
//! ## Environment
//!
//! - `PROPTEST_CASES=N`: cases per property in `tests/properties.rs` (proptest's own variable;
//!   the suite's default is 2,048 for the correct configuration).

#![warn(missing_docs, unreachable_pub)]

pub mod facts;
pub mod ledger;
pub mod safety;
pub mod sometimes;

use leaselab_model::History;
use std::fmt;

/// One `always` property.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Check {
    /// At most one unexpired holder per lease by the database clock (efficiency only).
    I1,
    /// Tokens strictly increase and are never reused, across crashes too.
    I2,
    /// Per scope, tokens of accepted writes never decrease (and an observed floor never drops).
    I3,
    /// No stale holder's write or side effect is kept over a newer one.
    Acceptance,
    /// Final content of each part comes from the highest accepted token.
    Final,
}

impl Check {
    /// All checks in canonical order: the order of a verdict and of a trace's `expect` line.
    pub const ALL: [Check; 5] = [
        Check::I1,
        Check::I2,
        Check::I3,
        Check::Acceptance,
        Check::Final,
    ];

    /// The name used in traces and output.
    pub fn as_str(self) -> &'static str {
        match self {
            Check::I1 => "I1",
            Check::I2 => "I2",
            Check::I3 => "I3",
            Check::Acceptance => "acceptance",
            Check::Final => "final",
        }
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One violation, in plain words, with the events that conflict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Which property.
    pub check: Check,
    /// What happened, naming the events and their times.
    pub message: String,
    /// The conflicting events' `seq`.
    pub events: Vec<u64>,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} violated: {}", self.check, self.message)
    }
}

/// Everything the checkers found in one history.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Every violation found, grouped by check in canonical order.
    pub violations: Vec<Violation>,
    /// How often each `sometimes` property fired.
    pub sometimes: sometimes::Counts,
}

impl Report {
    /// Whether `check` was violated.
    pub fn violated(&self, check: Check) -> bool {
        self.violations.iter().any(|v| v.check == check)
    }

    /// The verdict: the violated checks in canonical order (empty = all hold). This is what a
    /// trace's `expect` line records.
    pub fn verdict(&self) -> Vec<Check> {
        Check::ALL
            .into_iter()
            .filter(|c| self.violated(*c))
            .collect()
    }

    /// The violations of one check.
    pub fn of(&self, check: Check) -> impl Iterator<Item = &Violation> {
        self.violations.iter().filter(move |v| v.check == check)
    }
}

/// Runs every checker on `history`.
pub fn check(history: &History) -> Report {
    check_with(history, &facts::derive(history))
}

/// Runs every checker on `history` whose facts the caller already derived (a simulation run
/// also needs them for its liveness check).
pub fn check_with(history: &History, facts: &facts::Facts) -> Report {
    let mut violations = Vec::new();
    safety::i1(facts, &mut violations);
    safety::i2(facts, &mut violations);
    safety::i3(history, facts, &mut violations);
    safety::acceptance(facts, &mut violations);
    safety::final_state(history, facts, &mut violations);
    violations.sort_by_key(|v| v.check);
    Report {
        violations,
        sometimes: sometimes::count(history, facts),
    }
}
