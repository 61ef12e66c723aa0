//! The differential mode: one trace, replayed step by step against the model and against
//! PostgreSQL; every step's outcome is compared, then the final committed state (lease rows,
//! floors, parts, publishes, the attempt log — not `written_at`). The first divergence is
//! reported with both sides.

use crate::adapter::{PgBackend, PgError};
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
        w.clock.set(e.at);
        let model = w
            .exec_at_local(e.actor.clone(), e.conn.clone(), e.op.clone(), e.local)
            .outcome
            .clone();
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
    let (m, p) = (w.model.snapshot(), pg.snapshot()?);
    let mut differs = |what: &str, model: String, pg: String| {
        if model != pg {
            report
                .state
                .push(format!("{what}: model {model}, postgres {pg}"));
        }
    };
    differs(
        "lease rows",
        format!("{:?}", m.leases),
        format!("{:?}", p.leases),
    );
    differs(
        "floors",
        format!("{:?}", m.floors),
        format!("{:?}", p.floors),
    );
    differs("parts", format!("{:?}", m.parts), format!("{:?}", p.parts));
    differs(
        "publishes",
        format!("{:?}", m.publishes),
        format!("{:?}", p.publishes),
    );
    differs(
        "attempt log",
        format!("{:?}", m.attempts),
        format!("{:?}", p.attempts),
    );
    Ok(report)
}
