//! The verdict's vocabulary: the checks ([`Check`], one enum for the checkers, a trace's
//! `expect` line, the shrinker's target and the exit codes), a violation, a report.

use crate::sometimes;
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
