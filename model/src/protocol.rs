//! The connection and row-lock protocol of PostgreSQL, written once: how a statement is
//! admitted on a connection, and how a row-changing statement meets a row another transaction
//! has locked. The model's databases apply it through `Gate`, the exhaustive checker's
//! compact view asks [`update_waits`] and [`upsert_waits`], and the PostgreSQL adapter admits
//! with [`admit`] — so the three cannot disagree about when a statement waits.
//!
//! The rules, with the PostgreSQL sources they follow:
//! - **Admission**: a database that is down answers nothing; a connection a crash cut reports
//!   it once (`conn-lost`); a connection carries one statement at a time, and a statement that
//!   waited stays the connection's until its reply is collected (`busy`): the frontend/backend
//!   protocol answers each query in turn, so sending another would drop a reply.
//! - **A plain `UPDATE … WHERE`** evaluates its WHERE on the row version it can see (the newest
//!   committed one, or its REPEATABLE READ snapshot's) and waits for the row lock only if that
//!   version qualifies (manual 13.2.1: the second updater waits for rows "found by the search
//!   condition"; `ExecScan` filters before `ExecUpdate` locks). Under REPEATABLE READ a
//!   qualifying version that a committed update already replaced fails at once with 40001
//!   (`heap_update` → `TM_Updated`; manual 13.2.2), before any wait. After a wait, the newest
//!   version is locked *before* the WHERE is re-checked, and a failed re-check keeps the lock
//!   until the transaction ends (`ExecUpdate` → `table_tuple_lock` with
//!   `TUPLE_LOCK_FLAG_FIND_LAST_VERSION`, then `EvalPlanQual`, `nodeModifyTable.c`).
//! - **`INSERT … ON CONFLICT`** finds the conflicting row by the unique index, before any
//!   WHERE, so it always waits for a locked row (`ExecOnConflictUpdate`); under REPEATABLE READ
//!   a conflicting row newer than the snapshot is a 40001 (`ExecCheckTupleVisible`).

use crate::history::Outcome;
use crate::names::ConnId;
use crate::reason::Reason;

/// What admission needs to know of a database and a connection.
pub trait Admits {
    /// Whether the database is up.
    fn is_up(&self) -> bool;
    /// Of connection `conn` (one lookup): whether a crash cut it since the client last heard
    /// of it, which hearing of it clears; and whether it has a statement in flight (waiting,
    /// or finished and not yet collected).
    fn take_lost_and_in_flight(&mut self, conn: &ConnId) -> (bool, bool);
}

/// Admission of a statement on `conn`: the refusal, or `None` when the statement may run.
pub fn admit(db: &mut impl Admits, conn: &ConnId) -> Option<Outcome> {
    if !db.is_up() {
        return Some(Outcome::Unavailable);
    }
    match db.take_lost_and_in_flight(conn) {
        (true, _) => Some(Outcome::Error(Reason::ConnLost)),
        (false, true) => Some(Outcome::Error(Reason::Busy)),
        (false, false) => None,
    }
}

/// A one-shot write (fence and upsert as one operation) on a connection whose client holds a
/// transaction open: refused (`in-transaction`). The one-shot write is its own transaction —
/// `BEGIN` … `COMMIT`, or each statement autocommitted — and inside an open one its `BEGIN`
/// would only warn (manual, BEGIN: "Issuing BEGIN when already inside a transaction block will
/// provoke a warning") while its `COMMIT` would end the holder's transaction with it; a holder
/// inside a transaction writes step by step (`fence`, `upsert`) instead.
pub fn refuse_one_shot_write(in_txn: bool) -> Option<Outcome> {
    in_txn.then_some(Outcome::Error(Reason::InTransaction))
}

/// A `BEGIN` on a connection whose client holds a transaction open: refused
/// (`in-transaction`). PostgreSQL would only warn ("there is already a transaction in
/// progress", manual, BEGIN) and go on in the open transaction, so a client that sends it has
/// lost track of its transaction; the seam makes that a visible answer, never a silent nesting.
pub fn refuse_begin(in_txn: bool) -> Option<Outcome> {
    in_txn.then_some(Outcome::Error(Reason::InTransaction))
}

/// Whether a plain UPDATE waits: its WHERE qualifies the version it sees and another
/// transaction holds the row lock. (A REPEATABLE READ conflict fails before this.)
pub fn update_waits(qualifies: bool, locked_by_other: bool) -> bool {
    qualifies && locked_by_other
}

/// Whether an `INSERT … ON CONFLICT` waits: whenever another transaction holds the row lock.
pub fn upsert_waits(locked_by_other: bool) -> bool {
    locked_by_other
}

/// How a row-changing statement meets the row it targets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Gate {
    /// Another transaction holds the row lock: the statement waits.
    Wait,
    /// REPEATABLE READ serialization failure (40001); the transaction is already aborted.
    SerializationFailure,
    /// A plain UPDATE whose WHERE is false: 0 rows. `keep_lock`: it had waited, so it holds
    /// the newest version's lock until the transaction ends.
    NoRow {
        /// The statement holds the row lock it waited for.
        keep_lock: bool,
    },
    /// The statement changes (or locks) the row.
    Go,
}

/// The deliberately wrong variants of the lock protocol the differential's negative controls
/// switch on (each must make the model diverge from PostgreSQL).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Deviations {
    /// A plain UPDATE waits for a locked row before evaluating its WHERE.
    pub update_waits_before_where: bool,
    /// A failed re-check after a wait releases the row at once.
    pub failed_recheck_releases_row: bool,
}

impl<T: Clone, X: Default> crate::engine::Engine<T, X> {
    /// A plain UPDATE of `key` by `id`. `qualifies`: its WHERE on the version `id` sees (after
    /// a wait, the newest version, which `resumed` says it already holds locked).
    pub(crate) fn update_gate(
        &mut self,
        id: &ConnId,
        key: &crate::engine::Key,
        qualifies: bool,
        resumed: bool,
        dev: Deviations,
    ) -> Gate {
        let locked = self.locked_by_other(id, key);
        if !qualifies {
            if dev.update_waits_before_where && locked {
                return Gate::Wait;
            }
            return Gate::NoRow {
                keep_lock: resumed && !dev.failed_recheck_releases_row,
            };
        }
        if self.serialization_conflict(id, key) {
            self.abort_txn(id);
            return Gate::SerializationFailure;
        }
        if update_waits(qualifies, locked) {
            return Gate::Wait;
        }
        Gate::Go
    }

    /// An `INSERT … ON CONFLICT` on `key` by `id`: it waits for a locked row whatever its
    /// WHERE, and under REPEATABLE READ fails on a row newer than its snapshot.
    pub(crate) fn upsert_gate(&mut self, id: &ConnId, key: &crate::engine::Key) -> Gate {
        if upsert_waits(self.locked_by_other(id, key)) {
            return Gate::Wait;
        }
        if self.serialization_conflict(id, key) {
            self.abort_txn(id);
            return Gate::SerializationFailure;
        }
        Gate::Go
    }
}

/// The model's engine admits by the same rule as the PostgreSQL adapter.
impl<T: Clone, X: Default> Admits for crate::engine::Engine<T, X> {
    fn is_up(&self) -> bool {
        self.up
    }

    fn take_lost_and_in_flight(&mut self, conn: &ConnId) -> (bool, bool) {
        let c = self.conn(conn);
        let in_flight = c.waiting.is_some() || c.finished.is_some();
        (std::mem::take(&mut c.lost), in_flight)
    }
}
