//! Replay: re-executes a trace against a fresh model, compares every step's outcome with the
//! recorded one, re-runs the checkers on the replayed history and compares their verdict with
//! the trace's `expect` line. One definition of "this trace replays", for the CLI, the
//! committed-trace tests and every test that saves a trace.

use crate::{check, Report};
use leaselab_model::replay::{reexecute, Divergence};
use leaselab_model::trace::Trace;

/// The result of replaying one trace.
pub struct ReplayReport {
    /// Every diverging step, in order (the first is the one that matters).
    pub divergences: Vec<Divergence>,
    /// The checkers' report on the replayed history.
    pub report: Report,
    /// The verdict the trace expects.
    pub expected: Vec<String>,
    /// Number of steps replayed.
    pub steps: usize,
}

impl ReplayReport {
    /// The verdict the checkers gave.
    pub fn verdict(&self) -> Vec<String> {
        self.report.verdict()
    }

    /// No divergence and the expected verdict.
    pub fn ok(&self) -> bool {
        self.divergences.is_empty() && self.verdict() == self.expected
    }

    /// A human summary: one line if all is well, the first divergence and the verdict
    /// difference otherwise.
    pub fn describe(&self) -> String {
        let verdict = |v: &[String]| {
            if v.is_empty() {
                "ok".to_string()
            } else {
                v.join(",")
            }
        };
        if self.ok() {
            return format!(
                "ok ({} steps, verdict {})",
                self.steps,
                verdict(&self.expected)
            );
        }
        let mut s = String::new();
        if let Some(d) = self.divergences.first() {
            s.push_str(&format!(
                "DIVERGED at step #{}: recorded `{}`, replayed `{}`\n    step: {}",
                d.seq, d.recorded, d.replayed, d.line
            ));
            if self.divergences.len() > 1 {
                s.push_str(&format!(
                    "\n    ({} more diverging steps after it)",
                    self.divergences.len() - 1
                ));
            }
        }
        if self.verdict() != self.expected {
            if !s.is_empty() {
                s.push('\n');
                s.push_str("    ");
            }
            s.push_str(&format!(
                "UNEXPECTED VERDICT: expected={} actual={}",
                verdict(&self.expected),
                verdict(&self.verdict())
            ));
            for v in &self.report.violations {
                s.push_str(&format!("\n      {v}"));
            }
        }
        s
    }
}

/// Replays a parsed trace against the model and judges the replayed history.
pub fn replay(trace: &Trace) -> ReplayReport {
    let r = reexecute(trace);
    ReplayReport {
        divergences: r.divergences,
        report: check(&r.history),
        expected: trace.expect.clone(),
        steps: trace.history.events.len(),
    }
}
