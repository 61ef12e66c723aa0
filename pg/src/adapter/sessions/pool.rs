//! A session opened on first use (a pooled connection first), and at a reset the sessions
//! pooled for the next schedule or closed.

use super::super::error::*;
use super::super::statements::*;
use super::super::PgBackend;
use super::{connect_owned, Fit, Pooled, Session};
use leaselab_model::{ConnId, DbName, Outcome};
use std::sync::Arc;
use tokio_postgres::Client;

/// At most this many connections wait in a side's pool (more sessions than this at the end of a
/// schedule are closed).
const POOL_MAX: usize = 16;

/// `DISCARD ALL` but `DEALLOCATE ALL` (see [`PgBackend::pool_sessions`]). Each of these may run
/// inside the implicit transaction of a multi-statement query; `DISCARD ALL` may not.
const SESSION_RESET: &str = "CLOSE ALL; SET SESSION AUTHORIZATION DEFAULT; RESET ALL; \
    UNLISTEN *; SELECT pg_advisory_unlock_all(); DISCARD PLANS; DISCARD TEMP; DISCARD SEQUENCES";

impl PgBackend {
    /// The session for `conn`, connecting and preparing on first use.
    pub(in crate::adapter) fn session(
        &mut self,
        db: DbName,
        conn: &ConnId,
    ) -> Result<(Arc<Client>, Stmts, bool), Outcome> {
        let i = db.index();
        if let Some(s) = self.sides[i].sessions.get(conn) {
            return Ok((s.client.clone(), s.st.clone(), s.in_txn));
        }
        let info = self.sides[i].conninfo.clone();
        let vt = self.virtual_time;
        let cfg = self.config.clone();
        let spec = self.spec.clone();
        let pooled = self.sides[i].pool.pop();
        let fit = self.fit();
        let r = self.rt.block_on(async move {
            // A pooled connection first (reset as a new one, see `pool_sessions`), with the
            // statements it prepared if they still fit; one that fails here (its backend ended
            // meanwhile) is closed and a new one opened.
            if let Some(p) = pooled {
                match p.st {
                    Some((f, st)) if f == fit => return Ok((p.client, p.pid, st, p.socket)),
                    Some(_) => p.client.clear_type_cache(),
                    None => {}
                }
                match prepare(&p.client, db, &cfg, spec.as_deref()).await {
                    Ok(st) => return Ok((p.client, p.pid, st, p.socket)),
                    Err(_) => p.socket.abort(),
                }
            }
            let (c, pid, socket) = connect_owned(&info, vt).await?;
            let st = prepare(&c, db, &cfg, spec.as_deref()).await?;
            Ok::<_, tokio_postgres::Error>((Arc::new(c), pid, st, socket))
        });
        let (client, pid, st, socket) = r.map_err(stmt_err)?;
        self.sides[i].sessions.insert(
            conn.clone(),
            Session {
                client: client.clone(),
                socket,
                pid,
                st: st.clone(),
                in_txn: false,
                aborted: false,
                began: None,
                pending: None,
                finished: None,
                drafts: Vec::new(),
                paused: None,
                terminated: false,
                wait_seq: 0,
            },
        );
        Ok((client, st, false))
    }

    pub(in crate::adapter) fn drop_sessions(&mut self, i: usize) {
        for (_, s) in std::mem::take(&mut self.sides[i].sessions) {
            if let Some(h) = s.pending {
                h.abort();
            }
            s.socket.abort();
        }
        self.sides[i].orphans.clear();
        self.drop_pool(i);
    }

    /// Closes the pooled connections of side `i` (its server crashed or stops).
    pub(in crate::adapter) fn drop_pool(&mut self, i: usize) {
        for p in std::mem::take(&mut self.sides[i].pool) {
            p.socket.abort();
        }
    }

    /// At the end of a schedule, the sessions of side `i` that are idle on a working connection
    /// go to its pool, reset to a new session's state; the others are closed as
    /// [`Self::drop_sessions`] closes them.
    ///
    /// A backend started for every session of every schedule was most of a schedule's cost
    /// (about 8 per schedule: a `fork` of the postmaster, its start-up and exit, and its catalog
    /// caches filled again). `DISCARD ALL` returns a session to the state a new one has: it is
    /// `CLOSE ALL; SET SESSION AUTHORIZATION DEFAULT; RESET ALL; DEALLOCATE ALL; UNLISTEN *;
    /// SELECT pg_advisory_unlock_all(); DISCARD PLANS; DISCARD TEMP; DISCARD SEQUENCES;`
    /// (PostgreSQL manual, "DISCARD"; what connection poolers run between clients). The reset
    /// here, [`SESSION_RESET`], is all of it but `DEALLOCATE ALL`: the prepared statements stay
    /// for the next session on the connection when they still [`Fit`] (preparing them again
    /// was a round trip per spec statement), and `DISCARD PLANS` drops their cached plans, so
    /// they are planned afresh as a new session's are. `RESET ALL` returns `search_path` to
    /// the connection's start-up option. What stays is only what no statement can observe:
    /// warm caches, the process id, and statements parsed against the same schema. A
    /// statement still running, a backend the server ended, or a connection a reset fails on is
    /// never pooled. `LEASELAB_NO_POOL=1` opens a new backend for every session again, and
    /// `LEASELAB_NO_KEPT_STATEMENTS=1` prepares every statement again (the comparisons in
    /// BENCHMARKS.md).
    pub(in crate::adapter) fn pool_sessions(&mut self, i: usize) {
        let mut keep = Vec::new();
        let fit = self.fit();
        let no_keep = std::env::var_os("LEASELAB_NO_KEPT_STATEMENTS").is_some();
        for (_, s) in std::mem::take(&mut self.sides[i].sessions) {
            let running = s.pending.is_some();
            if let Some(h) = s.pending {
                h.abort();
            }
            if running
                || s.terminated
                || s.client.is_closed()
                || self.sides[i].pool.len() + keep.len() >= POOL_MAX
                || std::env::var_os("LEASELAB_NO_POOL").is_some()
            {
                s.socket.abort();
            } else {
                let st = (!no_keep).then_some((fit.clone(), s.st));
                keep.push((s.client, s.socket, s.pid, st));
            }
        }
        self.sides[i].orphans.clear();
        let reset = self.rt.block_on(async move {
            let tasks: Vec<_> = keep
                .into_iter()
                .map(|(client, socket, pid, st)| {
                    tokio::spawn(async move {
                        // ROLLBACK outside a transaction is only a warning.
                        let ok = client.batch_execute("ROLLBACK").await.is_ok()
                            && client.batch_execute(SESSION_RESET).await.is_ok();
                        if st.is_none() {
                            // Statements not kept are closed (`Close` for each) when dropped;
                            // types a rebuilt schema created again get new OIDs.
                            client.clear_type_cache();
                        }
                        (client, socket, pid, st, ok)
                    })
                })
                .collect();
            let mut reset = Vec::new();
            for t in tasks {
                if let Ok(r) = t.await {
                    reset.push(r);
                }
            }
            reset
        });
        for (client, socket, pid, st, ok) in reset {
            if ok {
                self.sides[i].pool.push(Pooled {
                    client,
                    socket,
                    pid,
                    st,
                });
            } else {
                socket.abort();
            }
        }
    }

    /// What statements prepared now are made for.
    pub(in crate::adapter) fn fit(&self) -> Fit {
        Fit {
            config: self.config.clone(),
            schema_build: self.schema_builds,
        }
    }

    /// Every pooled backend of both sides: kept when a reset ends the others.
    pub(in crate::adapter) fn pooled_pids(&self) -> Vec<i32> {
        self.sides
            .iter()
            .flat_map(|s| s.pool.iter().map(|p| p.pid))
            .collect()
    }
}
