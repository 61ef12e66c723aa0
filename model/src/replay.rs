//! Re-executing a trace against a fresh model: the first half of every replay (the CLI's
//! `leaselab replay`, the trace tests, the simulation and property tests). The second half —
//! judging the replayed history — is the checkers' job.

use crate::allowed::Allowed;
use crate::history::{History, Outcome};
use crate::trace::{event_line, Trace};
use crate::world::World;

/// A step whose replayed outcome differs from the recorded one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Divergence {
    /// The recorded event's line.
    pub line: String,
    /// Step number.
    pub seq: u64,
    /// What the trace says.
    pub recorded: Outcome,
    /// What the model did.
    pub replayed: Outcome,
}

/// The replayed history and every step that diverged.
#[derive(Clone, Debug)]
pub struct Reexecution {
    /// What the model recorded while replaying.
    pub history: History,
    /// Diverging steps, in order (the first is the one that matters).
    pub divergences: Vec<Divergence>,
    /// What the model committed while replaying ([`crate::model::Model::ledger`]).
    pub ledger: Vec<crate::model::LedgerEntry>,
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
                recorded: e.outcome.clone(),
                replayed: allowed.into_iter().next().unwrap_or(Outcome::Ok),
            });
        }
    }
    Reexecution {
        history: worlds.first().history.clone(),
        divergences,
        ledger: worlds.first().model.ledger(),
    }
}
