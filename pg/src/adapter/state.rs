//! What the adapter holds: the backend, per database its side (cluster, admin connection,
//! sessions, orphaned backends), per trace connection its session.

use super::statements::*;
use crate::cluster::Cluster;
use leaselab_model::{Config, ConnId, Outcome};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use tokio::runtime::Runtime;
use tokio::task::JoinHandle;
use tokio_postgres::{Client, Statement};

pub(super) struct Session {
    pub(super) client: Arc<Client>,
    /// The task that owns the socket.
    pub(super) socket: JoinHandle<()>,
    pub(super) pid: i32,
    pub(super) st: Stmts,
    pub(super) in_txn: bool,
    /// An error aborted the open transaction: COMMIT will roll it back.
    pub(super) aborted: bool,
    /// The virtual time of the open transaction's `BEGIN`: its statements' `now()`.
    pub(super) began: Option<leaselab_model::Millis>,
    pub(super) pending: Option<JoinHandle<Out>>,
    pub(super) finished: Option<Outcome>,
    pub(super) drafts: Vec<(W, bool)>,
    /// The pending operation pauses between two of its statements (`leaselab audit`).
    pub(super) paused: Option<Pause>,
    /// The server was told to end this backend ([`super::PgBackend::terminate`]): it may still
    /// answer for a moment, but it is never pooled.
    pub(super) terminated: bool,
}

/// A pause point of a pending operation.
pub(super) struct Pause {
    /// Set by the task when it reached the point and waits there.
    pub(super) at: Arc<std::sync::atomic::AtomicBool>,
    /// Resumes it, at the virtual time of the `await`.
    pub(super) resume: tokio::sync::oneshot::Sender<leaselab_model::Millis>,
}

impl Pause {
    /// Whether the task waits at its pause point (not on a lock before it).
    pub(super) fn reached(&self) -> bool {
        self.at.load(std::sync::atomic::Ordering::SeqCst)
    }
}

pub(super) struct Side {
    pub(super) dbname: &'static str,
    pub(super) cluster: Option<Cluster>,
    pub(super) conninfo: String,
    pub(super) admin: Option<(Arc<Client>, Statement)>,
    pub(super) sessions: BTreeMap<ConnId, Session>,
    pub(super) lost: BTreeSet<ConnId>,
    /// Backends whose client closed its socket while their statement waited on a lock: they
    /// run on until the statement ends (see the model's engine), holding their locks.
    pub(super) orphans: Vec<i32>,
    /// Connections of the previous schedule, reset to a new session's state (`DISCARD ALL`),
    /// that the next schedule's sessions take before opening new ones (see
    /// [`super::PgBackend::pool_sessions`]).
    pub(super) pool: Vec<Pooled>,
    pub(super) up: bool,
}

/// A connection waiting in [`Side::pool`]: its backend is idle and in its initial state but
/// for the statements it prepared, which the next session on it takes as they are while they
/// still fit: prepared for the same configuration and the same build of the schema.
pub(super) struct Pooled {
    pub(super) client: Arc<Client>,
    pub(super) socket: JoinHandle<()>,
    pub(super) pid: i32,
    pub(super) st: Option<(Fit, Stmts)>,
}

/// What a connection's prepared statements were made for: a statement describes its result
/// with the type OIDs of the schema it was prepared against, and the built-in statements differ
/// by configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Fit {
    pub(super) config: Config,
    /// [`PgBackend::schema_builds`] when they were prepared.
    pub(super) schema_build: u64,
}

/// Where the databases are.
pub enum Target {
    /// Two throwaway clusters under this directory (one per database, so each can crash alone).
    Throwaway(std::path::PathBuf),
    /// An existing server (`LEASELAB_PG_CONNINFO`, without `dbname`); crash/restart unsupported.
    Existing(String),
}

/// The PostgreSQL backend.
pub struct PgBackend {
    pub(super) rt: Runtime,
    pub(super) config: Config,
    pub(super) sides: [Side; 2],
    /// Virtual time (replay) or the real `now()` (experiments).
    pub(super) virtual_time: bool,
    /// The user's schema and statements instead of the source design's (`leaselab audit`).
    pub(super) spec: Option<Arc<super::spec_run::SpecRun>>,
    /// Waits that ran out their bound ([`super::session::STUCK`]) instead of ending in an
    /// answer: each made a step as slow as the bound, so a run with any is not at full speed
    /// (see [`super::PgBackend::waits_out_of_bound`]).
    pub(super) out_of_bound: u64,
    /// How many times a spec's schema was built (its DDL run on an emptied `public`); a reset
    /// that only restores the seed rows keeps the build, and with it every pooled connection's
    /// prepared statements ([`Fit`]).
    pub(super) schema_builds: u64,
    /// Per side, the SQL that puts a spec's tables back to their seed rows (see
    /// [`PgBackend::reset_spec`]); `None` until the schema was built, or where it cannot.
    pub(super) restore: [Option<String>; 2],
    /// Rebuild a spec's schema at every reset instead (`LEASELAB_RESET=rebuild`, or
    /// [`PgBackend::rebuild_every_reset`]).
    pub(super) rebuild_always: bool,
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
