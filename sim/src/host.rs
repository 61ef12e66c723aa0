//! The two database hosts (`lease-db`, `res-db`) around one model world. Both drivers use this,
//! so a request means the same thing whichever network carried it. The host records every
//! statement in the world's history at the authority time it executes, and answers a blocked
//! statement only when it finishes (recorded as that connection's `await`), as a PostgreSQL
//! backend answers its client when the lock wait ends.

use leaselab_model::Reason;
use leaselab_model::{
    Backend, Config, ConnId, DbName, Holder, Millis, Model, Op, Outcome, Waits, World,
};
use std::collections::BTreeMap;

/// A reply to deliver: (holder index, request id, outcome).
pub type Reply = (usize, u64, Outcome);

/// One statement from a holder: which holder, its request id (echoed in the reply), the
/// connection and the statement.
#[derive(Clone, Debug)]
pub struct Request {
    /// Holder index.
    pub holder: usize,
    /// Request id.
    pub req: u64,
    /// Connection.
    pub conn: ConnId,
    /// Statement.
    pub op: Op,
}

/// Both database hosts, on the model unless another backend is given (`leaselab audit
/// --sim-seeds` runs them on PostgreSQL with a user's lease).
#[derive(Clone, Debug)]
pub struct DbHosts<B = Model> {
    /// The databases, the clock and the run's history.
    pub world: World<B>,
    waiting: BTreeMap<(DbName, ConnId), (usize, u64)>,
    down: [bool; 2],
}

impl DbHosts {
    /// Fresh model databases.
    pub fn new(config: Config) -> Self {
        DbHosts::on(leaselab_model::Model::new(config))
    }
}

impl<B: Backend + Waits> DbHosts<B> {
    /// Hosts around `backend`, which must be freshly reset.
    pub fn on(backend: B) -> Self {
        let mut world = World::with_backend(backend);
        // A standard run records about 2,000 events: growing the history by doubling would copy
        // it a dozen times.
        world.history.events.reserve(4096);
        DbHosts {
            world,
            waiting: BTreeMap::new(),
            down: [false; 2],
        }
    }

    /// Executes a request arriving at authority time `t`. `locals[i]` is holder i's clock at `t`
    /// (recorded with each event), `names[i]` its name. The replies (the request's own, unless
    /// it blocked, and those of waiters it released) are appended to `replies`.
    pub fn request(
        &mut self,
        t: Millis,
        locals: &[Millis],
        names: &[Holder],
        r: Request,
        replies: &mut Vec<Reply>,
    ) {
        let Request {
            holder,
            req,
            conn,
            op,
        } = r;
        self.world.set_now(t);
        let db = op.db().unwrap_or(DbName::Res);
        if matches!(op, Op::Disconnect { .. }) {
            self.waiting.remove(&(db, conn.clone()));
        }
        let outcome = self.exec_for(t, locals, names, holder, conn.clone(), op);
        if outcome == Outcome::Blocked {
            self.waiting.insert((db, conn), (holder, req));
        } else {
            replies.push((holder, req, outcome));
        }
        if !self.waiting.is_empty() {
            self.collect_finished(t, locals, names, replies);
        }
    }

    /// Answers every waiting statement that has finished, recording its `await`.
    fn collect_finished(
        &mut self,
        t: Millis,
        locals: &[Millis],
        names: &[Holder],
        replies: &mut Vec<Reply>,
    ) {
        loop {
            let ready = self
                .waiting
                .iter()
                .find(|((db, conn), _)| {
                    !self.world.model.is_blocked(*db, conn)
                        && self.world.model.has_result(*db, conn)
                })
                .map(|(k, v)| (k.clone(), *v));
            let Some(((db, conn), (holder, req))) = ready else {
                break;
            };
            self.waiting.remove(&(db, conn.clone()));
            let o = self.exec_for(t, locals, names, holder, conn, Op::Await { db });
            replies.push((holder, req, o));
        }
    }

    /// Executes `op` for holder `holder` on `conn`, recorded with that holder's name and clock.
    fn exec_for(
        &mut self,
        t: Millis,
        locals: &[Millis],
        names: &[Holder],
        holder: usize,
        conn: ConnId,
        op: Op,
    ) -> Outcome {
        let local = locals.get(holder).copied().unwrap_or(t);
        let actor = names
            .get(holder)
            .cloned()
            .unwrap_or_else(|| Holder::new("?"));
        self.world
            .exec_at_local(actor, Some(conn), op, local)
            .outcome
            .clone()
    }

    /// Records a client-side event (`check`, `pause`, `resume`, `lost`).
    pub fn record_client(&mut self, t: Millis, local: Millis, actor: &Holder, op: Op) -> Outcome {
        self.world.set_now(t);
        self.world
            .exec_at_local(actor.clone(), None, op, local)
            .outcome
            .clone()
    }

    /// Immediate stop: the waiting clients' connections break (they hear `conn-lost`).
    pub fn crash(&mut self, t: Millis, db: DbName) -> Vec<Reply> {
        if self.down[db.index()] {
            return Vec::new();
        }
        self.world.set_now(t);
        self.world
            .exec_at_local(Holder::new("admin"), None, Op::Crash { db }, t);
        self.down[db.index()] = true;
        let cut: Vec<(DbName, ConnId)> = self
            .waiting
            .keys()
            .filter(|(d, _)| *d == db)
            .cloned()
            .collect();
        let mut replies = Vec::new();
        for k in cut {
            if let Some((h, req)) = self.waiting.remove(&k) {
                replies.push((h, req, Outcome::Error(Reason::ConnLost)));
            }
        }
        replies
    }

    /// Restart with recovery (no-op if up).
    pub fn restart(&mut self, t: Millis, db: DbName) {
        if !self.down[db.index()] {
            return;
        }
        self.world.set_now(t);
        self.world
            .exec_at_local(Holder::new("admin"), None, Op::Restart { db }, t);
        self.down[db.index()] = false;
    }
}
