//! The differential mode: one trace, replayed step by step against the model and against
//! PostgreSQL; every step's outcome is compared, then the final committed state (lease rows,
//! floors, parts, publishes, the attempt log — not `written_at`). The first divergence is
//! reported with both sides.

use crate::adapter::{PgBackend, PgError};
use leaselab_model::model::Snapshot;
use leaselab_model::trace::{event_line, Trace};
use leaselab_model::{apply, Config, Ctx, Outcome, World};

/// The first step where the two sides disagree.
#[derive(Clone, Debug)]
pub struct StepDiff {
    /// Step number.
    pub seq: u64,
    /// The trace line.
    pub line: String,
    /// The model's outcome.
    pub model: Outcome,
    /// PostgreSQL's outcome.
    pub pg: Outcome,
}

/// The result of one differential replay.
#[derive(Clone, Debug)]
pub struct DiffReport {
    /// Trace name.
    pub name: String,
    /// Steps compared.
    pub steps: usize,
    /// First diverging step, if any (the replay stops there).
    pub first: Option<StepDiff>,
    /// Final-state differences (checked only when every step agreed).
    pub state: Vec<String>,
}

impl DiffReport {
    /// No divergence.
    pub fn ok(&self) -> bool {
        self.first.is_none() && self.state.is_empty()
    }

    /// Human summary.
    pub fn describe(&self) -> String {
        if let Some(d) = &self.first {
            return format!(
                "DIVERGED at step #{}: model `{}`, postgres `{}`\n    step: {}",
                d.seq, d.model, d.pg, d.line
            );
        }
        if !self.state.is_empty() {
            return format!("FINAL STATE DIFFERS:\n    {}", self.state.join("\n    "));
        }
        format!("ok ({} steps, final state equal)", self.steps)
    }
}

/// Replays `trace` on both sides. `model_config` replaces the trace's configuration on the
/// model side only — how a deliberately wrong model rule is shown to be caught.
pub fn diff(
    pg: &mut PgBackend,
    trace: &Trace,
    model_config: Option<&Config>,
) -> Result<DiffReport, PgError> {
    pg.reset(&trace.config)?;
    let mut w = World::new(
        model_config
            .cloned()
            .unwrap_or_else(|| trace.config.clone()),
    );
    let mut report = DiffReport {
        name: trace.name.clone(),
        steps: 0,
        first: None,
        state: Vec::new(),
    };
    for e in &trace.history.events {
        let model = w.rerun(e);
        let conn = e.conn_id();
        let cx = Ctx {
            now: e.at,
            local: e.local,
            actor: &e.actor,
            conn: &conn,
        };
        let got = apply(pg, &cx, &e.op);
        report.steps += 1;
        if got != model {
            report.first = Some(StepDiff {
                seq: e.seq,
                line: event_line(e),
                model,
                pg: got,
            });
            return Ok(report);
        }
    }
    report.state = state_differences(&w.model.snapshot(), &pg.snapshot()?);
    Ok(report)
}

/// Where the model's committed state and PostgreSQL's differ, one line per table.
pub fn state_differences(m: &Snapshot, p: &Snapshot) -> Vec<String> {
    fn differs<T: PartialEq + std::fmt::Debug>(out: &mut Vec<String>, what: &str, m: &T, p: &T) {
        if m != p {
            out.push(format!("{what}: model {m:?}, postgres {p:?}"));
        }
    }
    let mut out = Vec::new();
    differs(&mut out, "lease rows", &m.leases, &p.leases);
    differs(&mut out, "floors", &m.floors, &p.floors);
    differs(&mut out, "parts", &m.parts, &p.parts);
    differs(&mut out, "publishes", &m.publishes, &p.publishes);
    differs(&mut out, "attempt log", &m.attempts, &p.attempts);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use leaselab_model::{Scope, Token};

    #[test]
    fn a_final_state_difference_is_reported_by_table() {
        let mut w = World::new(Config::default());
        w.run("holder-a", leaselab_model::Op::acquire("holder-a", 100));
        w.run("holder-a", leaselab_model::Op::write("summary", "x", 1));
        let m = w.model.snapshot();
        assert!(m.floors.len() == 1 && m.parts.len() == 1, "{m:?}");
        assert!(state_differences(&m, &m.clone()).is_empty());
        let mut p = m.clone();
        p.floors = vec![(Scope::new("daily-report"), Token(7))];
        let d = state_differences(&m, &p);
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].starts_with("floors: model "), "{d:?}");
        assert!(d[0].contains("Token(7)"), "{d:?}");
    }
}
