//! Errors of the adapter itself, and statement errors turned into outcomes (SQLSTATE codes as
//! the model spells them; a connection lost during COMMIT is indeterminate).

use crate::cluster::ClusterError;
use leaselab_model::Reason;
use leaselab_model::{Expiry, Millis, Outcome};

/// Errors of the adapter itself (not outcomes of statements, which are [`Outcome`]s).
#[derive(Debug, thiserror::Error)]
pub enum PgError {
    /// The throwaway clusters could not be had or driven.
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    /// The database answered an adapter statement (setup, reset, snapshot) with an error.
    #[error("{what}: {}", db_detail(source))]
    Sql {
        /// What the adapter was doing.
        what: String,
        /// The driver's error (its SQLSTATE, where the server sent one, is `source.code()`).
        source: tokio_postgres::Error,
    },
    /// The server is not set up as the adapter needs it.
    #[error("{0}")]
    Setup(String),
    /// A value read back is not what the schema allows.
    #[error("{0}")]
    Data(String),
    /// The lease spec is wrong (`leaselab audit`).
    #[error(transparent)]
    Spec(#[from] crate::spec::SpecError),
}

/// The server's own message where it sent one (the driver's `Display` says only "db error").
fn db_detail(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(d) => format!(
            "{}: {} (SQLSTATE {})",
            d.severity(),
            d.message(),
            d.code().code()
        ),
        None => e.to_string(),
    }
}

pub(super) fn pe(what: &str, source: tokio_postgres::Error) -> PgError {
    PgError::Sql {
        what: what.to_string(),
        source,
    }
}

/// A statement error as an outcome: definitely not applied unless the connection broke.
pub(super) fn stmt_err(e: tokio_postgres::Error) -> Outcome {
    match e.code() {
        Some(c) => Outcome::Error(Reason::other(format!("sqlstate-{}", c.code()))),
        None if e.is_closed() => Outcome::Error(Reason::ConnLost),
        None => Outcome::Error(Reason::other(format!(
            "pg:{}",
            e.to_string().replace(' ', "_")
        ))),
    }
}

/// A COMMIT whose connection broke: the client cannot know whether it took effect (Jepsen's
/// `:info`); any other error is definite.
pub(super) fn commit_err(e: tokio_postgres::Error) -> Outcome {
    // Connection exceptions (class 08) and operator intervention (57P0x: the backend was
    // terminated or the server is shutting down) leave the client not knowing.
    let lost = match e.code() {
        None => e.is_closed(),
        Some(c) => c.code().starts_with("08") || c.code().starts_with("57P"),
    };
    if lost {
        Outcome::Indeterminate("conn-lost-during-commit".into())
    } else {
        stmt_err(e)
    }
}

pub(super) fn ms_of_us(us: Option<i64>) -> Result<Expiry, Outcome> {
    match us {
        None => Ok(Expiry::NegInfinity),
        Some(us) if us >= 0 && us % 1000 == 0 => Ok(Expiry::At(Millis((us / 1000) as u64))),
        Some(us) => Err(Outcome::Error(Reason::other(format!(
            "sub-millisecond-time-{us}us"
        )))),
    }
}
