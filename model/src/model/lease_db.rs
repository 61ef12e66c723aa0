//! `lease26`: the lease table's statements (acquire, renew, release) on the engine.

use super::db::{Db, Step};
use super::wrong::WrongRule;
use crate::config::LeaseDurability;
use crate::engine::{Effect, Engine, Key, Row};
use crate::history::Outcome;
use crate::names::{ConnId, Holder, LeaseName, Token};
use crate::rows::LeaseRow;
use crate::rules;
use crate::time::Millis;
use crate::Reason;

/// A lease statement, kept whole so it can resume after a lock wait.
#[derive(Clone, Debug)]
pub(crate) enum LeaseTask {
    Acquire {
        lease: LeaseName,
        holder: Holder,
        ttl_ms: u64,
    },
    Renew {
        lease: LeaseName,
        holder: Holder,
        token: Token,
        ttl_ms: u64,
    },
    Release {
        lease: LeaseName,
        holder: Holder,
        token: Token,
    },
}

/// `lease26`.
#[derive(Clone, Debug)]
pub(super) struct LeaseDb {
    pub(super) engine: Engine<LeaseTask, ()>,
    pub(super) durability: LeaseDurability,
    pub(super) renew_after_expiry: bool,
    pub(super) lock_delay_ms: u64,
    pub(super) wrong: Option<WrongRule>,
}

impl Db for LeaseDb {
    type Task = LeaseTask;
    type Extra = ();
    fn engine(&mut self) -> &mut Engine<LeaseTask, ()> {
        &mut self.engine
    }

    fn step(
        &mut self,
        id: &ConnId,
        task: LeaseTask,
        now: Millis,
        resumed: bool,
    ) -> Step<LeaseTask> {
        let lease = match &task {
            LeaseTask::Acquire { lease, .. }
            | LeaseTask::Renew { lease, .. }
            | LeaseTask::Release { lease, .. } => lease.clone(),
        };
        let key = Key::Lease(lease);
        let t = self.engine.stmt_now(id, now);
        let is_update = !matches!(task, LeaseTask::Acquire { .. });
        if self.engine.locked_by_other(id, &key) {
            // A plain UPDATE evaluates its WHERE against the row version it can see first and
            // waits for the row lock only if that version qualifies (manual 13.2.1: "the
            // second updater … will wait for the first updating transaction to commit or roll
            // back" applies to rows "found by the search condition"; `ExecScan` filters before
            // `ExecUpdate` locks). INSERT … ON CONFLICT always waits: the conflict is found by
            // the unique index, before any WHERE (`ExecOnConflictUpdate`).
            let qualifies = |row: Option<&LeaseRow>| match &task {
                LeaseTask::Acquire { .. } => true,
                LeaseTask::Renew {
                    holder,
                    token,
                    ttl_ms,
                    ..
                } => {
                    rules::renew(row, holder, *token, *ttl_ms, t, self.renew_after_expiry).is_some()
                }
                LeaseTask::Release { holder, token, .. } => {
                    rules::release(row, holder, *token).is_some()
                }
            };
            let seen = match self.engine.read(id, &key) {
                Some(Row::Lease(r)) => Some(r),
                _ => None,
            };
            if self.wrong == Some(WrongRule::UpdateWaitsBeforeWhere) || qualifies(seen) {
                // REPEATABLE READ: the version in the snapshot was already replaced by a
                // committed update, so the UPDATE fails at once rather than waiting for the
                // newest version's locker (`heap_update` returns `TM_Updated` for the
                // snapshot's tuple, and `ExecUpdate` raises SQLSTATE 40001 under
                // `IsolationUsesXactSnapshot`). ON CONFLICT locks the newest version first.
                if is_update && self.engine.serialization_conflict(id, &key) {
                    self.engine.abort_txn(id);
                    return Ok(Outcome::Error(Reason::SERIALIZATION_FAILURE));
                }
                return Err((key, task));
            }
            return Ok(Outcome::Refused);
        }
        let row = match self.engine.read(id, &key) {
            Some(Row::Lease(r)) => Some(r.clone()),
            _ => None,
        };
        let lease_row = |r: LeaseRow| Effect::Write(Some(Row::Lease(r)));
        // A plain UPDATE that waited for the row lock locks the newest row version *before* it
        // re-evaluates its WHERE, and a failed re-check returns 0 rows without unlocking: the
        // lock stays until the transaction ends (`ExecUpdate` → `table_tuple_lock` with
        // `TUPLE_LOCK_FLAG_FIND_LAST_VERSION`, then `EvalPlanQual` in
        // `src/backend/executor/nodeModifyTable.c`; `pgrowlocks` shows `For No Key Update`).
        // A statement that did not wait evaluates its WHERE first and locks nothing.
        let refused = if resumed && self.wrong != Some(WrongRule::FailedRecheckReleasesRow) {
            Effect::LockOnly
        } else {
            Effect::None
        };
        let (effect, out) = match task {
            LeaseTask::Acquire { holder, ttl_ms, .. } => {
                match rules::acquire(row.as_ref(), &holder, ttl_ms, self.lock_delay_ms, t) {
                    Some(r) => {
                        let out = Outcome::Granted {
                            token: r.token,
                            expires: r.expires_at,
                        };
                        (lease_row(r), out)
                    }
                    // ON CONFLICT locks the conflicting row even when its WHERE is false.
                    None => (Effect::LockOnly, Outcome::Refused),
                }
            }
            LeaseTask::Renew {
                holder,
                token,
                ttl_ms,
                ..
            } => match rules::renew(
                row.as_ref(),
                &holder,
                token,
                ttl_ms,
                t,
                self.renew_after_expiry,
            ) {
                Some(r) => {
                    let out = Outcome::Renewed {
                        expires: r.expires_at,
                    };
                    (lease_row(r), out)
                }
                None => (refused, Outcome::Refused),
            },
            LeaseTask::Release { holder, token, .. } => {
                match rules::release(row.as_ref(), &holder, token) {
                    Some(r) => (lease_row(r), Outcome::Released),
                    None => (refused, Outcome::Refused),
                }
            }
        };
        // REPEATABLE READ: a row another transaction changed since the snapshot cannot be
        // updated or locked (SQLSTATE 40001, manual 13.2.2) — for an UPDATE only when the
        // snapshot's version qualified (otherwise it was never a target); for ON CONFLICT
        // whenever the conflicting row is newer than the snapshot (`ExecCheckTupleVisible`).
        let targets = !is_update || matches!(effect, Effect::Write(_));
        if targets && self.engine.serialization_conflict(id, &key) {
            self.engine.abort_txn(id);
            return Ok(Outcome::Error(Reason::SERIALIZATION_FAILURE));
        }
        self.engine.apply(id, key, effect);
        Ok(out)
    }
}
