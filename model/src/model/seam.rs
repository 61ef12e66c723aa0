//! The backend seam on the in-memory databases: `LeaseStore`, `FencedResource` and `Admin`
//! for [`Model`].

use super::db::Db;
use super::lease_db::LeaseTask;
use super::res_db::ResDb;
use super::res_db::ResTask;
use super::wrong::WrongRule;
use super::Model;
use crate::backend::{Admin, Backend, Ctx, FencedResource, LeaseStore, SessionStep};
use crate::config::{Config, LeaseDurability};
use crate::engine::{Key, Row};
use crate::history::{DbName, Outcome};
use crate::names::{ConnId, Holder, LeaseName, Part, Scope, Token};
use crate::rows::{AttemptOutcome, PartRow};
use crate::Reason;

impl LeaseStore for Model {
    fn acquire(
        &mut self,
        cx: &Ctx<'_>,
        lease: &LeaseName,
        holder: &Holder,
        ttl_ms: u64,
    ) -> Outcome {
        let task = LeaseTask::Acquire {
            lease: lease.clone(),
            holder: holder.clone(),
            ttl_ms,
        };
        self.lease.submit(cx.conn, task, cx.now)
    }

    fn renew(
        &mut self,
        cx: &Ctx<'_>,
        lease: &LeaseName,
        holder: &Holder,
        token: Token,
        ttl_ms: u64,
    ) -> Outcome {
        let task = LeaseTask::Renew {
            lease: lease.clone(),
            holder: holder.clone(),
            token,
            ttl_ms,
        };
        self.lease.submit(cx.conn, task, cx.now)
    }

    fn release(
        &mut self,
        cx: &Ctx<'_>,
        lease: &LeaseName,
        holder: &Holder,
        token: Token,
    ) -> Outcome {
        let task = LeaseTask::Release {
            lease: lease.clone(),
            holder: holder.clone(),
            token,
        };
        self.lease.submit(cx.conn, task, cx.now)
    }

    fn read_lease(&mut self, cx: &Ctx<'_>, lease: &LeaseName) -> Outcome {
        if let Some(o) = self
            .lease
            .admit(cx.conn)
            .or_else(|| self.lease.aborted(cx.conn))
        {
            return o;
        }
        self.lease.engine.take_snapshot(cx.conn);
        match self.lease.engine.read(cx.conn, &Key::Lease(lease.clone())) {
            Some(Row::Lease(r)) => Outcome::Lease(Some(r.clone())),
            _ => Outcome::Lease(None),
        }
    }
}

impl FencedResource for Model {
    fn write(
        &mut self,
        cx: &Ctx<'_>,
        scope: &Scope,
        part: &Part,
        content: &str,
        token: Token,
    ) -> Outcome {
        if let Some(o) = self.res.admit(cx.conn) {
            return o;
        }
        if let Some(o) = crate::protocol::refuse_one_shot_write(self.res.in_txn(cx.conn)) {
            return o;
        }
        if self.res.uses_txn() {
            self.res.engine.begin(cx.conn, cx.now, false);
        }
        let w = ResDb::write_args(cx, scope, part, content, token);
        self.res.submit(cx.conn, ResTask::WriteFence(w), cx.now)
    }

    fn fence(&mut self, cx: &Ctx<'_>, scope: &Scope, token: Token) -> Outcome {
        let w = ResDb::write_args(cx, scope, &Part::new(""), "", token);
        self.res.submit(cx.conn, ResTask::Fence(w), cx.now)
    }

    fn upsert(
        &mut self,
        cx: &Ctx<'_>,
        scope: &Scope,
        part: &Part,
        content: &str,
        token: Token,
    ) -> Outcome {
        let w = ResDb::write_args(cx, scope, part, content, token);
        self.res.submit(cx.conn, ResTask::Upsert(w, false), cx.now)
    }

    fn publish(&mut self, cx: &Ctx<'_>, key: &str, content: &str, token: Token) -> Outcome {
        let row = PartRow {
            content: content.to_string(),
            writer: cx.actor.clone(),
            token,
        };
        let task = ResTask::Publish {
            key: key.to_string(),
            row,
        };
        self.res.submit(cx.conn, task, cx.now)
    }

    fn read_floor(&mut self, cx: &Ctx<'_>, scope: &Scope) -> Outcome {
        self.read_res(cx.conn, Key::Floor(scope.clone()))
            .unwrap_or(Outcome::Floor(None))
    }

    fn read_part(&mut self, cx: &Ctx<'_>, scope: &Scope, part: &Part) -> Outcome {
        self.read_res(cx.conn, Key::Part(scope.clone(), part.clone()))
            .unwrap_or(Outcome::Part(None))
    }

    fn read_publish(&mut self, cx: &Ctx<'_>, key: &str) -> Outcome {
        self.read_res(cx.conn, Key::Publish(key.to_string()))
            .unwrap_or(Outcome::Published(None))
    }

    fn count_attempts(
        &mut self,
        cx: &Ctx<'_>,
        writer: &Holder,
        outcome: AttemptOutcome,
    ) -> Outcome {
        if let Some(o) = self
            .res
            .admit(cx.conn)
            .or_else(|| self.res.aborted(cx.conn))
        {
            return o;
        }
        self.res.snapshot(cx.conn);
        // The log only grows, so a REPEATABLE READ snapshot of it is a prefix.
        let seen = self
            .res
            .engine
            .conns
            .get(cx.conn)
            .and_then(|c| c.extra.attempts_at_snapshot)
            .unwrap_or(self.res.attempts.len());
        let n = self.res.attempts[..seen]
            .iter()
            .filter(|a| &a.writer == writer && a.outcome == outcome)
            .count();
        Outcome::Count(n as u64)
    }
}

impl Admin for Model {
    fn session(&mut self, cx: &Ctx<'_>, db: DbName, step: SessionStep) -> Outcome {
        let id = cx.conn;
        if step == SessionStep::Disconnect {
            let up = match db {
                DbName::Lease => self.lease.engine.up,
                DbName::Res => self.res.engine.up,
            };
            if !up {
                return Outcome::Unavailable;
            }
            // The client closed its socket. Idle (in a transaction or not), the backend reads
            // EOF at once and rolls back. Waiting on a lock, it notices only when the statement
            // ends: the statement stays queued as an orphan (see the engine's module doc).
            let waiting =
                self.is_blocked(db, id) && self.wrong != Some(WrongRule::DisconnectDropsWaiter);
            match db {
                DbName::Lease => {
                    if waiting {
                        self.lease.engine.orphan(id);
                    } else {
                        self.lease.engine.end(id, false);
                        self.lease.engine.forget(id);
                    }
                    self.lease.wake();
                }
                DbName::Res => {
                    // The client logs its rejected attempts as it leaves, in both cases.
                    let drafts = std::mem::take(&mut self.res.engine.conn(id).extra);
                    for w in &drafts.rejected {
                        self.res.log(w.attempt(AttemptOutcome::Rejected));
                    }
                    if waiting {
                        self.res.engine.orphan(id);
                    } else {
                        self.res.engine.end(id, false);
                        self.res.engine.forget(id);
                    }
                    self.res.wake();
                }
            }
            return Outcome::Ok;
        }
        if step == SessionStep::Await {
            return match db {
                DbName::Lease => self.lease.await_result(id),
                DbName::Res => self.res.await_result(id),
            };
        }
        let admitted = match db {
            DbName::Lease => self.lease.admit(id),
            DbName::Res => self.res.admit(id),
        };
        if let Some(o) = admitted {
            return o;
        }
        // Check-then-write keeps no transaction: BEGIN/COMMIT are markers for it.
        let txn_db = db == DbName::Lease || self.res.uses_txn();
        let out = match step {
            SessionStep::Now if self.is_aborted(db, id) => {
                Outcome::Error(Reason::IN_FAILED_SQL_TRANSACTION)
            }
            SessionStep::Now => {
                // `SELECT now()` is a statement: a REPEATABLE READ snapshot is taken here.
                match db {
                    DbName::Lease => self.lease.snapshot(id),
                    DbName::Res => self.res.snapshot(id),
                }
                let t = match db {
                    DbName::Lease => self.lease.engine.stmt_now(id, cx.now),
                    DbName::Res => self.res.engine.stmt_now(id, cx.now),
                };
                Outcome::Now(t)
            }
            SessionStep::Begin | SessionStep::BeginRepeatableRead => {
                let repeatable = step == SessionStep::BeginRepeatableRead;
                let open = match db {
                    DbName::Lease => self.lease.engine.conn(id).txn.is_some(),
                    DbName::Res => self.res.in_txn(id),
                };
                if let Some(o) = crate::protocol::refuse_begin(open) {
                    o
                } else {
                    if txn_db {
                        match db {
                            DbName::Lease => self.lease.engine.begin(id, cx.now, repeatable),
                            DbName::Res => self.res.engine.begin(id, cx.now, repeatable),
                        }
                    }
                    Outcome::Ok
                }
            }
            SessionStep::Commit | SessionStep::Rollback => {
                // COMMIT of a transaction an error aborted rolls back (PostgreSQL answers
                // ROLLBACK without an error).
                let aborted = match db {
                    DbName::Lease => self.lease.engine.is_aborted(id),
                    DbName::Res => self.res.engine.is_aborted(id),
                };
                let commit = step == SessionStep::Commit && !aborted;
                match db {
                    DbName::Lease => {
                        self.lease.engine.end(id, commit);
                        Outcome::Ok
                    }
                    DbName::Res => self.res.end_txn(id, commit),
                }
            }
            SessionStep::Await | SessionStep::Disconnect => Outcome::Error(Reason::NotBlocked),
        };
        match db {
            DbName::Lease => self.lease.wake(),
            DbName::Res => self.res.wake(),
        }
        out
    }

    fn crash(&mut self, _cx: &Ctx<'_>, db: DbName) -> Outcome {
        match db {
            DbName::Lease => {
                if !self.lease.engine.up {
                    return Outcome::Error(Reason::AlreadyDown);
                }
                self.lease.engine.crash();
                if self.lease.durability == LeaseDurability::Unlogged {
                    let stamp = self.lease.engine.stamp;
                    for k in std::mem::take(&mut self.lease.engine.committed).into_keys() {
                        self.lease.engine.log.push((stamp, k, None));
                    }
                }
            }
            DbName::Res => {
                if !self.res.engine.up {
                    return Outcome::Error(Reason::AlreadyDown);
                }
                self.res.engine.crash();
            }
        }
        Outcome::Ok
    }

    fn restart(&mut self, _cx: &Ctx<'_>, db: DbName) -> Outcome {
        let e_up = match db {
            DbName::Lease => &mut self.lease.engine.up,
            DbName::Res => &mut self.res.engine.up,
        };
        if *e_up {
            return Outcome::Error(Reason::NotDown);
        }
        *e_up = true;
        Outcome::Ok
    }
}

impl Backend for Model {
    fn config(&self) -> Config {
        Model::config(self).clone()
    }
    fn stamp(&mut self, seq: u64) {
        Model::stamp(self, seq)
    }
}

impl crate::backend::Waits for Model {
    fn is_blocked(&self, db: DbName, conn: &ConnId) -> bool {
        Model::is_blocked(self, db, conn)
    }
    fn has_result(&self, db: DbName, conn: &ConnId) -> bool {
        Model::has_result(self, db, conn)
    }
}
