//! # leaselab-checkers
//!
//! Judges a recorded [`History`] — from the model, the simulation or PostgreSQL alike — against
//! the invariants the README states (I1–I3, acceptance, final), and counts the `sometimes` properties that prove a run's faults
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
//! - [`unknown`]: the verdict over every way the operations nobody heard back from can have
//!   turned out: certain, possible, undecided; and the outcomes the history's reads settle.
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
pub mod unknown;
mod verdict;

pub use verdict::{Check, Condition, Possible, Report, Settled, Undecided, Violation};

use leaselab_model::History;

/// Runs every checker on `history`.
pub fn check(history: &History) -> Report {
    let facts = facts::derive(history);
    let sometimes = sometimes::count(history, &facts);
    report(std::borrow::Cow::Owned(facts), sometimes)
}

/// Runs every checker on `history` whose facts the caller already derived (a simulation run
/// also needs them for its liveness check).
pub fn check_with(history: &History, facts: &facts::Facts) -> Report {
    let sometimes = sometimes::count(history, facts);
    report(std::borrow::Cow::Borrowed(facts), sometimes)
}

/// [`check`] on a history that arrives event by event and is never held whole: what `judge`
/// does with a file of any length. The same report as [`check`] on the same events; memory
/// grows with the writes, the unknown operations and the reads a check can use, not with the
/// events ([`facts::Deriver::for_judging`]).
#[derive(Debug)]
pub struct Judging {
    facts: facts::Deriver,
    sometimes: sometimes::Counter,
}

impl Default for Judging {
    fn default() -> Self {
        Judging {
            facts: facts::Deriver::for_judging(),
            sometimes: sometimes::Counter::default(),
        }
    }
}

impl Judging {
    /// Takes the next event (in history order, numbered from 1).
    pub fn push(&mut self, e: &leaselab_model::Event) {
        self.facts.push(e);
        self.sometimes.push(e);
    }

    /// The report, once every event is in.
    pub fn finish(self) -> Report {
        let facts = self.facts.finish();
        let sometimes = self.sometimes.finish(&facts);
        report(std::borrow::Cow::Owned(facts), sometimes)
    }
}

fn report(facts: std::borrow::Cow<'_, facts::Facts>, sometimes: sometimes::Counts) -> Report {
    let (found, settled) = unknown::judge(facts);
    Report {
        violations: found.certain,
        possible: found.possible,
        undecided: found.undecided,
        settled,
        sometimes,
    }
}
