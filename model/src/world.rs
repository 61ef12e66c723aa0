//! A recording harness: a backend (the model unless another is given — the PostgreSQL adapter
//! runs the lab cases through the same harness), an explicitly set authority time and the
//! [`History`] of
//! everything done to it. Lab cases, proptest and replay drive the backend through this, so
//! every run leaves the same kind of record.

use crate::backend::{apply, Backend, Ctx};
use crate::clock::NodeClock;
use crate::config::Config;
use crate::history::{Event, History, Op, Outcome};
use crate::model::Model;
use crate::names::{ConnId, Holder};
use crate::time::Millis;
use std::collections::BTreeMap;

/// A backend plus its clock and history.
#[derive(Clone, Debug)]
pub struct World<B = Model> {
    /// The databases (named `model` because it is the model unless another backend is given).
    pub model: B,
    /// The authority clock.
    /// The authority time: set explicitly by whoever drives the world (a case, a replay, a
    /// simulated host), never read from the OS.
    now: Millis,
    /// Everything done so far.
    pub history: History,
    /// Per-actor local clocks (a client whose clock runs ahead or behind).
    clocks: BTreeMap<Holder, NodeClock>,
}

impl World<Model> {
    /// A fresh model world at time 0.
    pub fn new(config: Config) -> Self {
        World::with_backend(Model::new(config))
    }
}

impl<B: Backend> World<B> {
    /// A world at time 0 on `backend`, which must be freshly reset.
    pub fn with_backend(backend: B) -> Self {
        World {
            model: backend,
            now: Millis::ZERO,
            history: History::default(),
            clocks: BTreeMap::new(),
        }
    }

    /// The authority time.
    pub fn now(&self) -> Millis {
        self.now
    }

    /// Sets the authority time. Time never goes backwards on the authority clock, so a smaller
    /// value is ignored; returns the time now.
    pub fn set_now(&mut self, at: Millis) -> Millis {
        self.now = self.now.max(at);
        self.now
    }

    /// Advances the authority clock.
    pub fn advance(&mut self, ms: u64) -> Millis {
        self.now = self.now.plus(ms);
        self.now
    }

    /// `actor`'s local clock reading now (never below 0).
    pub fn local(&self, actor: &Holder) -> Millis {
        match self.clocks.get(actor) {
            Some(c) => c.local(self.now()),
            None => self.now(),
        }
    }

    /// Runs `op` as `actor` on its default connection, records and returns the outcome.
    pub fn run(&mut self, actor: &str, op: Op) -> Outcome {
        self.exec(Holder::new(actor), None, op).outcome.clone()
    }

    /// Runs `op` as `actor` on the named connection.
    pub fn run_on(&mut self, actor: &str, conn: &str, op: Op) -> Outcome {
        self.exec(Holder::new(actor), Some(ConnId::new(conn)), op)
            .outcome
            .clone()
    }

    /// Runs and records one operation; returns the recorded event.
    pub fn exec(&mut self, actor: Holder, conn: Option<ConnId>, op: Op) -> &Event {
        let local = self.local(&actor);
        self.exec_at_local(actor, conn, op, local)
    }

    /// Runs and records one operation with an explicit local clock reading (replay uses the
    /// recorded one; a simulation uses its per-node clock).
    pub fn exec_at_local(
        &mut self,
        actor: Holder,
        conn: Option<ConnId>,
        op: Op,
        local: Millis,
    ) -> &Event {
        let now = self.now();
        let conn_id = conn.clone().unwrap_or_else(|| ConnId::new(actor.as_str()));
        let cx = Ctx {
            now,
            local,
            actor: &actor,
            conn: &conn_id,
        };
        self.model.stamp(self.history.events.len() as u64 + 1);
        let outcome = apply(&mut self.model, &cx, &op);
        self.history.push(now, local, actor, conn, op, outcome)
    }

    /// Runs a recorded event again as it was recorded: at its time, by its actor, on its
    /// connection, with its local clock reading; returns the new outcome. Replay and the
    /// PostgreSQL differential both step a trace this way.
    pub fn rerun(&mut self, e: &Event) -> Outcome {
        self.set_now(e.at);
        self.exec_at_local(e.actor.clone(), e.conn.clone(), e.op.clone(), e.local)
            .outcome
            .clone()
    }
}
