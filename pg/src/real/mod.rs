//! Real-time experiments, as the source ran them: real `now()`, real connections, and for
//! F4/F5 two real OS processes of our own binary (`leaselab holder …`) that the parent stops
//! with SIGSTOP and resumes with SIGCONT. Those processes run the model crate's holder — the
//! one the simulation and the exhaustive checker run — through a tokio driver.
//!
//! - [`calls`]: the source design's lease calls and fenced write, as a holder process makes
//!   them (the adapter's SQL), recorded.
//! - [`procs`]: holder processes — started in the registry of children, signalled, reaped.
//! - [`experiments`]: the parents of the real-time cases (F3's race, F4/F5's pause, the long
//!   transaction, the crash between prefix and suffix).

mod calls;
mod experiments;
mod procs;

pub use calls::{acquire, recorded, release, renew, write};
pub use experiments::{
    crash_prefix, crash_suffix, long_txn_experiment, pause_experiment, race_experiment,
    CrashReport, LongTxnReport, PauseReport,
};
pub use procs::{HolderProc, Spawned};

use tokio_postgres::{Client, NoTls};

/// Why a real-time experiment could not run (not an outcome of it).
#[derive(Debug, thiserror::Error)]
pub enum RealError {
    /// A statement or connection failed; its SQLSTATE, where the server sent one, is
    /// `source.code()`.
    #[error("{what}: {source}")]
    Sql {
        /// What the experiment was doing.
        what: String,
        /// The driver's error.
        source: tokio_postgres::Error,
    },
    /// A process, pipe or file could not be used.
    #[error("{what}: {source}")]
    Io {
        /// What the experiment was doing.
        what: String,
        /// What the OS said.
        source: std::io::Error,
    },
    /// A holder process or the server did something the experiment does not expect.
    #[error("{0}")]
    Unexpected(String),
}

/// Names what failed, keeping the error itself.
trait Context<T> {
    fn ctx(self, what: &str) -> Result<T, RealError>;
}

impl<T> Context<T> for Result<T, tokio_postgres::Error> {
    fn ctx(self, what: &str) -> Result<T, RealError> {
        self.map_err(|source| RealError::Sql {
            what: what.to_string(),
            source,
        })
    }
}

impl<T> Context<T> for Result<T, std::io::Error> {
    fn ctx(self, what: &str) -> Result<T, RealError> {
        self.map_err(|source| RealError::Io {
            what: what.to_string(),
            source,
        })
    }
}

/// A current-thread runtime with time and IO, as every real-time process here runs.
pub fn runtime() -> Result<tokio::runtime::Runtime, RealError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ctx("runtime")
}

/// A connection to `info`, its driver task spawned on the current runtime.
pub async fn connect(info: &str) -> Result<Client, RealError> {
    let (c, conn) = tokio_postgres::connect(info, NoTls).await.ctx("connect")?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(c)
}
