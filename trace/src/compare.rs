//! One divergence type and one report format for every comparison of a run with a reference:
//! a replay (the recording against the model) and a differential run (PostgreSQL against the
//! model). Each names its two sides; the words of the report are the same.

use leaselab_checkers::{Check, Report};
use leaselab_model::Outcome;

/// The two sides a comparison holds against each other, as its report names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sides {
    /// The side that is right by definition (the recording, PostgreSQL).
    pub reference: &'static str,
    /// The side under test (the model).
    pub candidate: &'static str,
}

impl Sides {
    /// `leaselab replay`: the recorded outcome against the model's.
    pub const REPLAY: Sides = Sides {
        reference: "recorded",
        candidate: "replayed",
    };
    /// `leaselab diff`: PostgreSQL's outcome against the model's.
    pub const DIFF: Sides = Sides {
        reference: "postgres",
        candidate: "model",
    };
}

/// A step whose outcomes differ.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Divergence {
    /// Step number.
    pub seq: u64,
    /// The step's event line.
    pub line: String,
    /// The reference's outcome.
    pub reference: Outcome,
    /// The candidate's outcome (the first allowed one, where several are).
    pub candidate: Outcome,
}

/// The checkers' judgement of the compared history next to the verdict the trace expects.
#[derive(Clone, Debug)]
pub struct Judged {
    /// The verdict the trace expects.
    pub expected: Vec<Check>,
    /// The checkers' report on the history.
    pub report: Report,
}

/// What a comparison found.
#[derive(Clone, Debug)]
pub struct Comparison {
    /// How the report names the two sides.
    pub sides: Sides,
    /// Steps compared.
    pub steps: usize,
    /// Every diverging step, in order (the first is the one that matters).
    pub divergences: Vec<Divergence>,
    /// Whether the final committed state was compared (a differential run, when every step
    /// agreed), and where it differs, one line per table.
    pub final_state: Option<Vec<String>>,
    /// The verdict, when the history was judged (a replay).
    pub judged: Option<Judged>,
}

impl Comparison {
    /// An empty comparison of `sides`.
    pub fn new(sides: Sides) -> Self {
        Comparison {
            sides,
            steps: 0,
            divergences: Vec::new(),
            final_state: None,
            judged: None,
        }
    }

    /// The checkers' verdict, when judged.
    pub fn verdict(&self) -> Option<Vec<Check>> {
        self.judged.as_ref().map(|j| j.report.verdict())
    }

    /// No diverging step, no final-state difference, the expected verdict.
    pub fn ok(&self) -> bool {
        self.divergences.is_empty()
            && self.final_state.as_ref().is_none_or(|d| d.is_empty())
            && self
                .judged
                .as_ref()
                .is_none_or(|j| j.report.verdict() == j.expected)
    }

    /// A human summary: one line if all is well; else the first divergence with both sides,
    /// the final-state differences and a changed verdict, each on lines of their own.
    pub fn describe(&self) -> String {
        let names = |v: &[Check]| {
            if v.is_empty() {
                "ok".to_string()
            } else {
                Check::list(v)
            }
        };
        if self.ok() {
            let mut s = format!("ok ({} steps", self.steps);
            if let Some(j) = &self.judged {
                s.push_str(&format!(", verdict {}", names(&j.expected)));
            }
            if self.final_state.is_some() {
                s.push_str(", final state equal");
            }
            s.push(')');
            return s;
        }
        let mut parts: Vec<String> = Vec::new();
        if let Some(d) = self.divergences.first() {
            let mut p = format!(
                "DIVERGED at step #{}: {} `{}`, {} `{}`\n    step: {}",
                d.seq, self.sides.reference, d.reference, self.sides.candidate, d.candidate, d.line
            );
            if self.divergences.len() > 1 {
                p.push_str(&format!(
                    "\n    ({} more diverging steps after it)",
                    self.divergences.len() - 1
                ));
            }
            parts.push(p);
        }
        if let Some(d) = self.final_state.as_ref().filter(|d| !d.is_empty()) {
            parts.push(format!("FINAL STATE DIFFERS:\n    {}", d.join("\n    ")));
        }
        if let Some(j) = &self.judged {
            let actual = j.report.verdict();
            if actual != j.expected {
                let mut p = format!(
                    "UNEXPECTED VERDICT: expected={} actual={}",
                    names(&j.expected),
                    names(&actual)
                );
                for v in &j.report.violations {
                    p.push_str(&format!("\n      {v}"));
                }
                parts.push(p);
            }
        }
        parts.join("\n    ")
    }
}
