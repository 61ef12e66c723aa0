//! Replay: re-executes a trace against a fresh model, compares every step's outcome with the
//! recorded one, then has the checkers judge the replayed history against the trace's
//! `expect` line. One definition of "this trace replays", for the CLI, the committed-trace
//! tests and every test that saves a trace.

use crate::compare::{Comparison, Divergence, Judged, Sides};
use crate::format::Trace;
use crate::write::event_line;
use leaselab_checkers::check;
use leaselab_model::allowed::Allowed;
use leaselab_model::model::LedgerEntry;
use leaselab_model::{History, Outcome, World};

/// The replayed history and every step that diverged.
#[derive(Clone, Debug)]
pub struct Reexecution {
    /// What the model recorded while replaying.
    pub history: History,
    /// Diverging steps, in order (reference: the recording; candidate: the model).
    pub divergences: Vec<Divergence>,
    /// What the model committed while replaying ([`leaselab_model::Model::ledger`]).
    pub ledger: Vec<LedgerEntry>,
}

/// Replays `trace` on a model configured as the trace says: each event at its recorded time,
/// on its recorded connection, with its recorded local clock.
///
/// Where PostgreSQL races, any outcome an allowed order gives matches ([`Allowed`]).
///
/// A recorded `indeterminate` outcome (a client that never learned the result) matches any
/// replayed outcome: the model knows what really happened, the client did not.
pub fn reexecute(trace: &Trace) -> Reexecution {
    let mut worlds = Allowed::new(World::new(trace.config.clone()));
    let mut divergences = Vec::new();
    for e in &trace.history.events {
        let accept =
            |got: &Outcome| *got == e.outcome || matches!(e.outcome, Outcome::Indeterminate(_));
        if let Err(allowed) = worlds.step(e, accept) {
            divergences.push(Divergence {
                line: event_line(e),
                seq: e.seq,
                reference: e.outcome.clone(),
                candidate: allowed.into_iter().next().unwrap_or(Outcome::Ok),
            });
        }
    }
    Reexecution {
        history: worlds.first().history.clone(),
        divergences,
        ledger: worlds.first().model.ledger(),
    }
}

/// Replays a parsed trace against the model and judges the replayed history.
///
/// A trace recorded on a user's lease spec (`spec` line) ran statements the model does not
/// have: its recorded history is judged as it stands, and no step is re-executed.
pub fn replay(trace: &Trace) -> Comparison {
    if trace.spec.is_some() {
        return Comparison {
            steps: 0,
            judged: Some(Judged {
                expected: trace.expect.clone(),
                report: check(&trace.history),
            }),
            ..Comparison::new(Sides::REPLAY)
        };
    }
    let r = reexecute(trace);
    Comparison {
        steps: trace.history.events.len(),
        divergences: r.divergences,
        judged: Some(Judged {
            expected: trace.expect.clone(),
            report: check(&r.history),
        }),
        ..Comparison::new(Sides::REPLAY)
    }
}
