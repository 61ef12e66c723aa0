//! `Admin` on PostgreSQL: transactions, sessions (disconnect), `await`, clock, crash and
//! restart of one database.

use super::error::*;
use super::sessions::*;
use super::state::*;
use super::statements::*;
use leaselab_model::Reason;
use leaselab_model::{Admin, Config, ConnId, Ctx, DbName, Expiry, Outcome, SessionStep};

impl Admin for PgBackend {
    fn session(&mut self, cx: &Ctx<'_>, db: DbName, step: SessionStep) -> Outcome {
        let i = db.index();
        match step {
            SessionStep::Await => {
                if !self.sides[i].is_up() {
                    return Outcome::Unavailable;
                }
                // A paused operation goes on from where it stopped.
                self.sides[i].resume(cx.conn, cx.now);
                self.settle_both(i);
                return self.sides[i].await_result(cx.conn);
            }
            SessionStep::Disconnect => {
                if !self.sides[i].is_up() {
                    return Outcome::Unavailable;
                }
                if db == DbName::Res {
                    // As the server will: the open transaction ends without committing. Its
                    // rejected attempts are logged outside it (on the admin connection while
                    // the session is busy or in its transaction).
                    let busy = self.sides[i]
                        .session(cx.conn)
                        .is_some_and(|s| s.is_pending() || s.in_txn());
                    self.log_drafts(cx.conn, false, busy);
                }
                if let Some(Closed::Idle(pid)) = self.sides[i].disconnect(cx.conn) {
                    if let Ok((admin, _)) = self.admin(i) {
                        if !self
                            .rt
                            .block_on(async move { wait_backend_gone(&admin, pid).await })
                        {
                            self.out_of_bound += 1;
                        }
                    }
                }
                self.settle_both(i);
                return Outcome::Ok;
            }
            _ => {}
        }
        let (c, s, in_txn) = session_or_return!(self, db, cx);
        let txn_db = self.uses_txn(db);
        let begin = matches!(step, SessionStep::Begin | SessionStep::BeginRepeatableRead);
        let refused = leaselab_model::protocol::refuse_begin(in_txn).filter(|_| begin);
        let out = match refused {
            Some(o) => o,
            None => match step {
                SessionStep::Now => {
                    let now = self.now_for(in_txn, cx.now);
                    self.rt.block_on(async move {
                        let r: Result<Outcome, Outcome> = async {
                            set_now(&c, &s, now).await.map_err(stmt_err)?;
                            let us: i64 = c.query_one(&s.now, &[]).await.map_err(stmt_err)?.get(0);
                            match ms_of_us(Some(us))? {
                                Expiry::At(t) => Ok(Outcome::Now(t)),
                                Expiry::NegInfinity => {
                                    Ok(Outcome::Error(Reason::Other("bad-now".into())))
                                }
                            }
                        }
                        .await;
                        r.unwrap_or_else(|o| o)
                    })
                }
                SessionStep::Begin | SessionStep::BeginRepeatableRead if !txn_db => Outcome::Ok,
                SessionStep::Begin | SessionStep::BeginRepeatableRead => {
                    let now = self.now_for(false, cx.now);
                    let begin = if step == SessionStep::BeginRepeatableRead {
                        "BEGIN ISOLATION LEVEL REPEATABLE READ"
                    } else {
                        "BEGIN"
                    };
                    let o = self.rt.block_on(async move {
                        let r: Result<Outcome, Outcome> = async {
                            set_now(&c, &s, now).await.map_err(stmt_err)?;
                            c.batch_execute(begin).await.map_err(stmt_err)?;
                            Ok(Outcome::Ok)
                        }
                        .await;
                        r.unwrap_or_else(|o| o)
                    });
                    if o == Outcome::Ok {
                        self.set_in_txn(db, cx.conn, true);
                        self.set_began(db, cx.conn, now);
                    }
                    o
                }
                SessionStep::Commit | SessionStep::Rollback => {
                    let commit = step == SessionStep::Commit;
                    // PostgreSQL answers COMMIT of an aborted transaction with ROLLBACK, no error.
                    let aborted = self.sides[i].session(cx.conn).is_some_and(Session::aborted);
                    let o = if in_txn {
                        self.rt.block_on(async move {
                            match c
                                .batch_execute(if commit { "COMMIT" } else { "ROLLBACK" })
                                .await
                            {
                                Ok(()) => Outcome::Ok,
                                Err(e) if commit => commit_err(e),
                                Err(e) => stmt_err(e),
                            }
                        })
                    } else {
                        Outcome::Ok
                    };
                    self.set_in_txn(db, cx.conn, false);
                    if db == DbName::Res {
                        if o != Outcome::Ok {
                            // The transaction's fate is unknown or it failed: nothing to log, as
                            // after a crash.
                            self.sides[i].forget_drafts(cx.conn);
                            return o;
                        }
                        let l = self.log_drafts(cx.conn, commit && !aborted, false);
                        if l != Outcome::Ok {
                            return l;
                        }
                    }
                    o
                }
                SessionStep::Await | SessionStep::Disconnect => Outcome::Error(Reason::NotBlocked),
            },
        };
        self.settle_both(i);
        out
    }

    fn crash(&mut self, _cx: &Ctx<'_>, db: DbName) -> Outcome {
        // One database (a spec's `databases = "one"`): its one cluster is the lease side's,
        // and both sides go down with it.
        let i = if self.linked() { 0 } else { db.index() };
        if !self.sides[i].is_up() {
            return Outcome::Error(Reason::AlreadyDown);
        }
        if self.sides[i].cluster_mut().is_none() {
            return Outcome::Error(Reason::Other(
                "crash-unsupported-on-an-existing-server".into(),
            ));
        }
        // A stopped backend would not act on the server's shutdown signal.
        self.release_all(0);
        self.release_all(1);
        let Some(cl) = self.sides[i].cluster_mut() else {
            return Outcome::Error(Reason::Other(
                "crash-unsupported-on-an-existing-server".into(),
            ));
        };
        if let Err(e) = cl.crash() {
            return Outcome::Error(Reason::other(format!(
                "crash-failed:{}",
                e.to_string().replace(' ', "_")
            )));
        }
        let sides = if self.linked() { vec![0, 1] } else { vec![i] };
        for j in sides {
            self.sides[j].crashed();
        }
        Outcome::Ok
    }

    fn restart(&mut self, _cx: &Ctx<'_>, db: DbName) -> Outcome {
        let i = if self.linked() { 0 } else { db.index() };
        if self.sides[i].is_up() {
            return Outcome::Error(Reason::NotDown);
        }
        let Some(cl) = self.sides[i].cluster_mut() else {
            return Outcome::Error(Reason::Other(
                "restart-unsupported-on-an-existing-server".into(),
            ));
        };
        if let Err(e) = cl.boot() {
            return Outcome::Error(Reason::other(format!(
                "restart-failed:{}",
                e.to_string().replace(' ', "_")
            )));
        }
        self.sides[i].booted();
        if self.linked() {
            self.sides[1].booted();
        }
        Outcome::Ok
    }
}

impl leaselab_model::Backend for PgBackend {
    fn config(&self) -> Config {
        self.config.clone()
    }
}

/// A statement that waited is pending until the settle after some other statement sees it end
/// (`PgBackend::settle`); its result is then kept for the client's `await`.
impl leaselab_model::Waits for PgBackend {
    fn is_blocked(&self, db: DbName, conn: &ConnId) -> bool {
        self.sides[db.index()]
            .session(conn)
            .is_some_and(Session::is_pending)
    }
    fn has_result(&self, db: DbName, conn: &ConnId) -> bool {
        self.sides[db.index()]
            .session(conn)
            .is_some_and(Session::has_result)
    }
}
