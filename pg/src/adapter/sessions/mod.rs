//! The sessions layer: per database a [`Side`] (its cluster, admin connection, the trace
//! connections' sessions, orphaned backends, pooled connections, whether it is up), per trace
//! connection a [`Session`]. Their fields are private to this module: the statement sets, the
//! transactions and the resets above ask and change them through the methods here, so that
//! what a crash, a disconnect or a reset does to a session is written once.
//!
//! - `run`: connecting, running a statement as a task, asking the server whether it waits,
//!   settling what no longer waits, orphans, the admin connection;
//! - `hold`: backends seen waiting on a lock stopped, and let go one at a time, oldest wait
//!   first, so that the server's choice among woken waiters is the same every run;
//! - `pool`: a session opened (or taken from the pool), the sessions pooled or closed at a reset.

// `run` first: its `session_or_return!` is used by the modules after it.
#[macro_use]
mod run;
mod hold;
mod pool;

pub(super) use run::*;

use super::statements::{Out, Stmts, W};
use crate::cluster::Cluster;
use leaselab_model::{Config, ConnId, Millis, Outcome, Reason};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio::task::JoinHandle;
use tokio_postgres::{Client, Statement};

/// A trace connection's PostgreSQL session.
pub(super) struct Session {
    client: Arc<Client>,
    /// The task that owns the socket.
    socket: JoinHandle<()>,
    pid: i32,
    st: Stmts,
    in_txn: bool,
    /// An error aborted the open transaction: COMMIT will roll it back.
    aborted: bool,
    /// The virtual time of the open transaction's `BEGIN`: its statements' `now()`.
    began: Option<Millis>,
    pending: Option<JoinHandle<Out>>,
    finished: Option<Outcome>,
    drafts: Vec<(W, bool)>,
    /// The pending operation pauses between two of its statements (`leaselab audit`).
    paused: Option<Pause>,
    /// The server was told to end this backend ([`super::PgBackend::terminate`]): it may still
    /// answer for a moment, but it is never pooled.
    terminated: bool,
    /// When its pending statement began to wait ([`Side::next_wait`]): the older goes on first.
    wait_seq: u64,
}

impl Session {
    /// The server process serving this session.
    pub(super) fn pid(&self) -> i32 {
        self.pid
    }

    /// Its statement waits (on a lock, or at a pause point) for a later `await`.
    pub(super) fn is_pending(&self) -> bool {
        self.pending.is_some()
    }

    /// A statement that waited has ended and its outcome waits for the client's `await`.
    pub(super) fn has_result(&self) -> bool {
        self.finished.is_some()
    }

    pub(super) fn in_txn(&self) -> bool {
        self.in_txn
    }

    /// An error aborted the open transaction: PostgreSQL answers its COMMIT with ROLLBACK.
    pub(super) fn aborted(&self) -> bool {
        self.aborted
    }
}

/// A pause point of a pending operation: the operation's task stops after one of its
/// statements, its transaction and locks held, until the holder's `await`.
pub(super) struct Pause {
    /// Set by the task when it reached the point and waits there.
    at: Arc<AtomicBool>,
    /// Resumes it, at the virtual time of the `await`.
    resume: tokio::sync::oneshot::Sender<Millis>,
}

impl Pause {
    /// A pause point and what the task holds of it: the flag it sets when it waits there and
    /// the receiver of the time it resumes at.
    pub(super) fn new() -> (
        Pause,
        Arc<AtomicBool>,
        tokio::sync::oneshot::Receiver<Millis>,
    ) {
        let at = Arc::new(AtomicBool::new(false));
        let (resume, rx) = tokio::sync::oneshot::channel();
        (
            Pause {
                at: at.clone(),
                resume,
            },
            at,
            rx,
        )
    }

    /// Whether the task waits at its pause point (not on a lock before it).
    fn reached(&self) -> bool {
        self.at.load(Ordering::SeqCst)
    }
}

/// One database as the adapter sees it.
pub(super) struct Side {
    dbname: &'static str,
    cluster: Option<Cluster>,
    conninfo: String,
    admin: Option<(Arc<Client>, Statement)>,
    sessions: BTreeMap<ConnId, Session>,
    lost: BTreeSet<ConnId>,
    /// Backends whose client closed its socket while their statement waited on a lock: they
    /// run on until the statement ends (see the model's engine), holding their locks.
    orphans: Vec<i32>,
    /// Connections of the previous schedule, reset to a new session's state (`DISCARD ALL`),
    /// that the next schedule's sessions take before opening new ones (see
    /// [`super::PgBackend::pool_sessions`]).
    pool: Vec<Pooled>,
    up: bool,
    /// Backends stopped while they wait on a lock (`hold.rs`).
    held: Vec<i32>,
    /// Whether its backends may be stopped: they are processes of a cluster this process
    /// started, and `LEASELAB_WAKE_ORDER` does not say `server`.
    can_hold: bool,
    /// Waits begun so far: a pending statement's [`Session::wait_seq`].
    waits: u64,
}

/// A connection waiting in [`Side::pool`]: its backend is idle and in its initial state but
/// for the statements it prepared, which the next session on it takes as they are while they
/// still fit: prepared for the same configuration and the same build of the schema.
struct Pooled {
    client: Arc<Client>,
    socket: JoinHandle<()>,
    pid: i32,
    st: Option<(Fit, Stmts)>,
}

/// What a connection's prepared statements were made for: a statement describes its result
/// with the type OIDs of the schema it was prepared against, and the built-in statements differ
/// by configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Fit {
    pub(super) config: Config,
    /// [`super::PgBackend::schema_builds`] when they were prepared.
    pub(super) schema_build: u64,
}

/// What closing a session left to wait for.
pub(super) enum Closed {
    /// Its statement waited on a lock: the backend does not read its socket meanwhile and runs
    /// on as an orphan.
    Orphaned,
    /// It was idle: its backend reads EOF at once and ends (rolling back); its locks are free
    /// when this backend is gone.
    Idle(i32),
}

impl Side {
    pub(super) fn new(dbname: &'static str, cluster: Option<Cluster>, conninfo: String) -> Side {
        Side {
            can_hold: cluster.is_some() && hold::holds_allowed(),
            held: Vec::new(),
            waits: 0,
            dbname,
            cluster,
            conninfo,
            admin: None,
            sessions: BTreeMap::new(),
            lost: BTreeSet::new(),
            orphans: Vec::new(),
            pool: Vec::new(),
            up: true,
        }
    }

    /// The place of a wait that begins now among this side's waits.
    fn next_wait(&mut self) -> u64 {
        self.waits += 1;
        self.waits
    }

    pub(super) fn dbname(&self) -> &'static str {
        self.dbname
    }

    /// Where its sessions connect (real `now()`: no redirection option).
    pub(super) fn conninfo(&self) -> &str {
        &self.conninfo
    }

    /// Its sessions connect to `conninfo` from now on (both sides one database), with an admin
    /// connection of that database.
    pub(super) fn connect_to(&mut self, conninfo: String) {
        self.conninfo = conninfo;
        self.admin = None;
    }

    /// The throwaway cluster it runs on; `None` on an existing server.
    pub(super) fn cluster_mut(&mut self) -> Option<&mut Cluster> {
        self.cluster.as_mut()
    }

    pub(super) fn is_up(&self) -> bool {
        self.up
    }

    /// The server is up again after a crash or a stop (WAL recovery kept what was committed):
    /// the old admin connection died with it.
    pub(super) fn booted(&mut self) {
        self.up = true;
        self.admin = None;
    }

    /// Boots a database that is down (recovery keeps what was committed).
    pub(super) fn boot_if_down(&mut self) -> Result<(), super::PgError> {
        if !self.up {
            if let Some(c) = self.cluster.as_mut() {
                c.boot()?;
            }
            self.booted();
        }
        Ok(())
    }

    /// The server crashed: every session and pooled connection is gone, orphans with them; a
    /// connection that had a transaction open or a statement running reports `conn-lost` once.
    pub(super) fn crashed(&mut self) {
        self.up = false;
        self.admin = None;
        self.orphans.clear();
        for p in std::mem::take(&mut self.pool) {
            p.socket.abort();
        }
        for (k, s) in std::mem::take(&mut self.sessions) {
            if s.in_txn || s.pending.is_some() {
                self.lost.insert(k);
            }
            if let Some(h) = s.pending {
                h.abort();
            }
        }
    }

    /// A new schedule: no connection is lost any more.
    pub(super) fn forget_lost(&mut self) {
        self.lost.clear();
    }

    /// The admin connection's link is dropped (its server is about to stop).
    pub(super) fn forget_admin(&mut self) {
        self.admin = None;
    }

    pub(super) fn session(&self, conn: &ConnId) -> Option<&Session> {
        self.sessions.get(conn)
    }

    /// Resumes `conn`'s operation if it waits at its pause point, at virtual time `now`.
    pub(super) fn resume(&mut self, conn: &ConnId, now: Millis) {
        if let Some(s) = self.sessions.get_mut(conn) {
            if s.paused.as_ref().is_some_and(Pause::reached) {
                if let Some(p) = s.paused.take() {
                    p.at.store(false, Ordering::SeqCst);
                    let _ = p.resume.send(now);
                }
            }
        }
    }

    /// The answer to `conn`'s `await`, once everything that could settle has: its waiting
    /// statement's outcome, `still-blocked`, `conn-lost` after a crash, or `not-blocked`.
    pub(super) fn await_result(&mut self, conn: &ConnId) -> Outcome {
        if let Some(s) = self.sessions.get_mut(conn) {
            if s.pending.is_some() {
                return Outcome::Error(Reason::StillBlocked);
            }
            if let Some(o) = s.finished.take() {
                return o;
            }
        }
        if self.lost.remove(conn) {
            return Outcome::Error(Reason::ConnLost);
        }
        Outcome::Error(Reason::NotBlocked)
    }

    /// The client closes `conn`'s socket for real (the task that owns it ends); what is left to
    /// wait for, if it had a session.
    pub(super) fn disconnect(&mut self, conn: &ConnId) -> Option<Closed> {
        self.lost.remove(conn);
        let s = self.sessions.remove(conn)?;
        let waiting = s.pending.is_some();
        if let Some(h) = s.pending {
            h.abort();
        }
        s.socket.abort();
        let pid = s.pid;
        drop(s.client);
        if waiting {
            self.orphans.push(pid);
            Some(Closed::Orphaned)
        } else {
            Some(Closed::Idle(pid))
        }
    }

    /// The transaction's fate is unknown or it failed: nothing of it is logged.
    pub(super) fn forget_drafts(&mut self, conn: &ConnId) {
        if let Some(s) = self.sessions.get_mut(conn) {
            s.drafts.clear();
        }
    }

    /// Marks `conn`'s session as one the server is told to end (never pooled); its backend.
    pub(super) fn mark_terminated(&mut self, conn: &ConnId) -> Option<i32> {
        self.sessions.get_mut(conn).map(|s| {
            s.terminated = true;
            s.pid
        })
    }
}

impl leaselab_model::protocol::Admits for Side {
    fn is_up(&self) -> bool {
        self.up
    }

    /// A session that waited stays the connection's statement until its reply is collected.
    fn take_lost_and_in_flight(&mut self, conn: &ConnId) -> (bool, bool) {
        let in_flight = self
            .sessions
            .get(conn)
            .is_some_and(|s| s.pending.is_some() || s.finished.is_some());
        (self.lost.remove(conn), in_flight)
    }
}
