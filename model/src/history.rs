//! The `History`: what every run produces, whoever ran it — a lab case, the simulation, a
//! proptest failure, a PostgreSQL replay. Checkers read only this, never model internals, so
//! one checker judges the model and the real database alike.

use crate::names::{ConnId, Holder, LeaseName, Part, Scope, Token};
use crate::reason::Reason;
use crate::rows::{AttemptOutcome, LeaseRow, PartRow};
use crate::time::{Expiry, Millis};

/// Which of the two databases an operation addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DbName {
    /// `lease26`: the lease table.
    Lease,
    /// `res26`: fence floors, report parts, write attempts, the publish stand-in.
    Res,
}

impl DbName {
    /// Both databases, in index order.
    pub const ALL: [DbName; 2] = [DbName::Lease, DbName::Res];

    /// A dense index (0 for the lease database, 1 for the resource database), for per-database
    /// arrays.
    pub fn index(self) -> usize {
        match self {
            DbName::Lease => 0,
            DbName::Res => 1,
        }
    }

    /// The spelling used in traces.
    pub fn as_str(self) -> &'static str {
        match self {
            DbName::Lease => "lease",
            DbName::Res => "res",
        }
    }
}

/// One operation, with its arguments. The writer of a write is the event's actor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// `INSERT … ON CONFLICT DO UPDATE … WHERE l.expires_at <= now() RETURNING token`.
    Acquire {
        /// Lease.
        lease: LeaseName,
        /// Who asks.
        holder: Holder,
        /// Requested TTL.
        ttl_ms: u64,
    },
    /// `UPDATE lease SET expires_at = now() + ttl WHERE name, holder, token AND expires_at > now()`.
    Renew {
        /// Lease.
        lease: LeaseName,
        /// Holder named in the grant.
        holder: Holder,
        /// Token of the grant.
        token: Token,
        /// New TTL from now.
        ttl_ms: u64,
    },
    /// `UPDATE lease SET expires_at = '-infinity' WHERE name, holder, token`.
    Release {
        /// Lease.
        lease: LeaseName,
        /// Holder named in the grant.
        holder: Holder,
        /// Token of the grant.
        token: Token,
    },
    /// A whole fenced write in one call: begin, fence, upsert, commit (or the mode's variant).
    Write {
        /// Scope.
        scope: Scope,
        /// Part.
        part: Part,
        /// Content.
        content: String,
        /// Token carried.
        token: Token,
    },
    /// Step: the fence statement of the current transaction (mode-dependent).
    Fence {
        /// Scope.
        scope: Scope,
        /// Token carried.
        token: Token,
    },
    /// Step: the upsert of the part (mode-dependent).
    Upsert {
        /// Scope.
        scope: Scope,
        /// Part.
        part: Part,
        /// Content.
        content: String,
        /// Token carried.
        token: Token,
    },
    /// F9: publish a side effect under a business key.
    Publish {
        /// Business key.
        key: String,
        /// Content.
        content: String,
        /// The publisher's token (ignored by the business-key mode).
        token: Token,
    },
    /// `BEGIN` on this connection.
    Begin {
        /// Database.
        db: DbName,
    },
    /// `BEGIN ISOLATION LEVEL REPEATABLE READ`: the snapshot is taken at the transaction's
    /// first statement; a fence UPDATE on a floor another transaction committed since then fails
    /// with SQLSTATE 40001 (the model covers that rule only).
    BeginRepeatableRead {
        /// Database.
        db: DbName,
    },
    /// `COMMIT`.
    Commit {
        /// Database.
        db: DbName,
    },
    /// `ROLLBACK`.
    Rollback {
        /// Database.
        db: DbName,
    },
    /// Wait for this connection's blocked statement to finish; the outcome is the statement's.
    Await {
        /// Database.
        db: DbName,
    },
    /// The client closes its socket. Idle (in a transaction or not), the backend reads EOF at
    /// once and rolls back; a statement still waiting on a lock is not noticed until it ends:
    /// it keeps its locks and its place, an autocommit one then commits, a transaction then
    /// rolls back (see the engine's module doc). Nobody learns the orphan's outcome.
    Disconnect {
        /// Database.
        db: DbName,
    },
    /// `SELECT now()`: the statement (or transaction) time this connection sees.
    Now {
        /// Database.
        db: DbName,
    },
    /// Read a lease row.
    ReadLease {
        /// Lease.
        lease: LeaseName,
    },
    /// Read a floor.
    ReadFloor {
        /// Scope.
        scope: Scope,
    },
    /// Read a part.
    ReadPart {
        /// Scope.
        scope: Scope,
        /// Part.
        part: Part,
    },
    /// Read the kept publish of a business key.
    ReadPublish {
        /// Business key.
        key: String,
    },
    /// Count `write_attempt` rows of one writer with one outcome.
    CountAttempts {
        /// Writer.
        writer: Holder,
        /// Outcome.
        outcome: AttemptOutcome,
    },
    /// Immediate stop of a database (no checkpoint): open transactions roll back.
    Crash {
        /// Database.
        db: DbName,
    },
    /// Restart after a crash (WAL recovery).
    Restart {
        /// Database.
        db: DbName,
    },
    /// Client-side: the holder compares its local clock with its local deadline.
    Check {
        /// The local deadline (on the actor's own clock).
        deadline: Millis,
    },
    /// Client-side: the actor is frozen (SIGSTOP, GC, VM freeze).
    Pause,
    /// Client-side: the actor runs again.
    Resume,
    /// Client-side: the holder marks its lease lost (a renew failed) and stops starting writes.
    Lost,
    /// Client-side: the actor's wall clock was stepped (NTP, an operator): it read `from` just
    /// before, and reads the event's `local` after. Its monotonic clock does not move; a
    /// deadline kept on the wall clock moves with the step, so a history that tells a wall-clock
    /// check from a monotonic one must say where the step was.
    ClockStep {
        /// The wall clock's reading just before the step.
        from: Millis,
    },
}

impl Op {
    /// The database this operation is executed against, or `None` for client-side events.
    pub fn db(&self) -> Option<DbName> {
        match self {
            Op::Acquire { .. } | Op::Renew { .. } | Op::Release { .. } | Op::ReadLease { .. } => {
                Some(DbName::Lease)
            }
            Op::Write { .. }
            | Op::Fence { .. }
            | Op::Upsert { .. }
            | Op::Publish { .. }
            | Op::ReadFloor { .. }
            | Op::ReadPart { .. }
            | Op::ReadPublish { .. }
            | Op::CountAttempts { .. } => Some(DbName::Res),
            Op::Begin { db }
            | Op::BeginRepeatableRead { db }
            | Op::Commit { db }
            | Op::Rollback { db }
            | Op::Await { db }
            | Op::Disconnect { db }
            | Op::Now { db }
            | Op::Crash { db }
            | Op::Restart { db } => Some(*db),
            Op::Check { .. } | Op::Pause | Op::Resume | Op::Lost | Op::ClockStep { .. } => None,
        }
    }
}

/// What an operation returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Acquire succeeded.
    Granted {
        /// New token.
        token: Token,
        /// New expiry.
        expires: Expiry,
    },
    /// Acquire, renew or release changed nothing.
    Refused,
    /// Renew succeeded.
    Renewed {
        /// New expiry.
        expires: Expiry,
    },
    /// Release succeeded.
    Released,
    /// Write or publish committed (and so did a check-then-write upsert, which autocommits).
    Accepted,
    /// Write or publish refused.
    Rejected,
    /// Fence step: passed (the floor was advanced inside the transaction, or the read passed).
    Passed,
    /// Fence step or guarded upsert: refused; the client must roll back.
    Failed,
    /// Done, nothing to report.
    Ok,
    /// The statement waits on a row lock held by another connection. `await` finishes it.
    Blocked,
    /// `now()` as this connection sees it.
    Now(Millis),
    /// A floor read (`None`: the scope has no floor row).
    Floor(Option<Token>),
    /// A part read.
    Part(Option<PartRow>),
    /// A lease read.
    Lease(Option<LeaseRow>),
    /// A publish read.
    Published(Option<PartRow>),
    /// A count.
    Count(u64),
    /// Client check: local clock before the deadline.
    Valid,
    /// Client check: local clock at or past the deadline.
    Expired,
    /// The database is down: definitely not applied.
    Unavailable,
    /// Definitely not applied, for the stated reason (`conn-lost`, `not-blocked`, `in-transaction`, …).
    Error(Reason),
    /// May or may not have been applied (a timeout, a connection lost while a commit was in
    /// flight). Checkers treat it as Jepsen treats `:info`.
    Indeterminate(String),
}

/// One recorded step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// Position in the history, from 1.
    pub seq: u64,
    /// Authority (database) time when the operation was executed.
    pub at: Millis,
    /// The actor's own clock reading at that moment (equal to `at` without skew).
    pub local: Millis,
    /// Who acted: a holder, or `admin` / `clock` for faults.
    pub actor: Holder,
    /// The connection used; `None` means the actor's default connection.
    pub conn: Option<ConnId>,
    /// What was done.
    pub op: Op,
    /// What came back.
    pub outcome: Outcome,
}

impl Event {
    /// The connection this event used (the actor's default one when unnamed).
    pub fn conn_id(&self) -> ConnId {
        match &self.conn {
            Some(c) => c.clone(),
            None => ConnId::new(self.actor.as_str()),
        }
    }

    /// The connection's name, borrowed: what checkers key their per-connection state by
    /// (no allocation per event).
    pub fn conn_str(&self) -> &str {
        match &self.conn {
            Some(c) => c.as_str(),
            None => self.actor.as_str(),
        }
    }
}

/// An ordered list of events.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct History {
    /// Events in execution order.
    pub events: Vec<Event>,
}

impl History {
    /// Appends an event and numbers it.
    pub fn push(
        &mut self,
        at: Millis,
        local: Millis,
        actor: Holder,
        conn: Option<ConnId>,
        op: Op,
        outcome: Outcome,
    ) -> &Event {
        let seq = self.events.len() as u64 + 1;
        self.events.push(Event {
            seq,
            at,
            local,
            actor,
            conn,
            op,
            outcome,
        });
        &self.events[self.events.len() - 1]
    }
}
