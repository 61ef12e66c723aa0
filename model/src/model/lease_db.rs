//! `lease26`: the lease table's statements (acquire, renew, release) on the engine.

use super::db::{Db, Step};
use super::wrong::{deviations, WrongRule};
use crate::config::LeaseDurability;
use crate::engine::{Effect, Engine, Key, Row};
use crate::history::Outcome;
use crate::names::{ConnId, Holder, LeaseName, Token};
use crate::protocol::Gate;
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
        let row = match self.engine.read(id, &key) {
            Some(Row::Lease(r)) => Some(r.clone()),
            _ => None,
        };
        // Renew and release are plain UPDATEs, acquire an INSERT … ON CONFLICT; how each
        // meets a locked row is `crate::protocol`'s rule. `updated`: the row a renew or
        // release would leave (`None`: its WHERE is false).
        let dev = deviations(self.wrong);
        let (gate, updated) = match &task {
            LeaseTask::Acquire { .. } => (self.engine.upsert_gate(id, &key), None),
            LeaseTask::Renew {
                holder,
                token,
                ttl_ms,
                ..
            } => {
                let r = rules::renew(
                    row.as_ref(),
                    holder,
                    *token,
                    *ttl_ms,
                    t,
                    self.renew_after_expiry,
                );
                let gate = self.engine.update_gate(id, &key, r.is_some(), resumed, dev);
                (gate, r)
            }
            LeaseTask::Release { holder, token, .. } => {
                let r = rules::release(row.as_ref(), holder, *token);
                let gate = self.engine.update_gate(id, &key, r.is_some(), resumed, dev);
                (gate, r)
            }
        };
        match gate {
            Gate::Wait => return Err((key, task)),
            Gate::SerializationFailure => return Ok(Outcome::Error(Reason::SERIALIZATION_FAILURE)),
            Gate::NoRow { keep_lock } => {
                if keep_lock {
                    self.engine.apply(id, key, Effect::LockOnly);
                }
                return Ok(Outcome::Refused);
            }
            Gate::Go => {}
        }
        let lease_row = |r: LeaseRow| Effect::Write(Some(Row::Lease(r)));
        let (effect, out) = match (task, updated) {
            (LeaseTask::Acquire { holder, ttl_ms, .. }, _) => {
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
            (LeaseTask::Renew { .. }, Some(r)) => {
                let out = Outcome::Renewed {
                    expires: r.expires_at,
                };
                (lease_row(r), out)
            }
            (LeaseTask::Release { .. }, Some(r)) => (lease_row(r), Outcome::Released),
            // The gate lets an UPDATE through only when its WHERE qualified.
            (_, None) => (Effect::None, Outcome::Refused),
        };
        self.engine.apply(id, key, effect);
        Ok(out)
    }
}
