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

    /// Checks as a trace's `expect` line and a `VIOLATION` line name them: their names joined
    /// by commas (empty for none).
    pub fn list(checks: &[Check]) -> String {
        checks
            .iter()
            .map(|c| c.as_str())
            .collect::<Vec<_>>()
            .join(",")
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

/// One way an operation nobody heard back from may have turned out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Condition {
    /// The event that issued it (for a transaction's write, its commit).
    pub event: u64,
    /// Took effect (`true`) or not.
    pub applied: bool,
}

/// A violation that holds under some outcomes of the unknown operations, not under all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Possible {
    /// What would be broken.
    pub violation: Violation,
    /// One outcome under which it is: how each operation it depends on turned out.
    pub conditions: Vec<Condition>,
}

/// A check the judgement did not decide: more unknown operations bear on it than it tries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Undecided {
    /// Which property.
    pub check: Check,
    /// What is undecided, and why.
    pub message: String,
    /// The unknown operations it depends on (the events that issued them).
    pub unknowns: Vec<u64>,
    /// The events the question is about.
    pub events: Vec<u64>,
}

/// An operation nobody heard back from whose outcome the history shows after all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settled {
    /// The event that issued it.
    pub event: u64,
    /// It took effect (`true`) or it did not.
    pub applied: bool,
    /// The observation that shows it.
    pub by: u64,
    /// How, in plain words.
    pub message: String,
}

/// What the checks found, sorted by how sure it is.
#[derive(Clone, Debug, Default)]
pub(crate) struct Findings {
    pub(crate) certain: Vec<Violation>,
    pub(crate) possible: Vec<Possible>,
    pub(crate) undecided: Vec<Undecided>,
}

/// Everything the checkers found in one history.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Every violation certain whatever the operations nobody heard back from did, grouped
    /// by check in canonical order.
    pub violations: Vec<Violation>,
    /// Violations under some outcomes of those operations, not all.
    pub possible: Vec<Possible>,
    /// Checks not decided within the judgement's limits.
    pub undecided: Vec<Undecided>,
    /// Unknown outcomes the history itself shows (a read of the value, a lease row).
    pub settled: Vec<Settled>,
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

    /// The verdict as a trace's `expect` line and a `VIOLATION` line name it ([`Check::list`]).
    pub fn verdict_list(&self) -> String {
        Check::list(&self.verdict())
    }

    /// The violations of one check.
    pub fn of(&self, check: Check) -> impl Iterator<Item = &Violation> {
        self.violations.iter().filter(move |v| v.check == check)
    }
}

#[cfg(test)]
mod list_tests {
    use super::Check;

    /// The names as a trace's `expect` line writes them, in the order given; none is empty.
    #[test]
    fn checks_list_by_name_joined_by_commas() {
        assert_eq!(Check::list(&[]), "");
        assert_eq!(Check::list(&[Check::I1]), "I1");
        assert_eq!(
            Check::list(&[Check::I3, Check::Acceptance, Check::Final]),
            "I3,acceptance,final"
        );
    }

    /// A report's verdict in that form: its violated checks in canonical order, each once.
    #[test]
    fn a_reports_verdict_lists_its_broken_checks_once_in_order() {
        use super::{Report, Violation};
        let v = |check| Violation {
            check,
            message: String::new(),
            events: Vec::new(),
        };
        let report = Report {
            violations: vec![v(Check::Final), v(Check::I1), v(Check::Final)],
            ..Report::default()
        };
        assert_eq!(report.verdict_list(), "I1,final");
        assert_eq!(Report::default().verdict_list(), "");
    }
}
