//! What the adapter holds: the backend, per database its side (cluster, admin connection,
//! sessions, orphaned backends), per trace connection its session.

use super::sessions::Side;
use leaselab_model::Config;
use std::sync::Arc;
use tokio::runtime::Runtime;

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
    /// Waits that ran out their bound ([`super::sessions::STUCK`]) instead of ending in an
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
