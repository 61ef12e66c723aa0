//! What a trace is: its fields, its magic first line, and the error a malformed one gives.

use leaselab_checkers::Check;
use leaselab_model::{Config, History};

/// The first line of every v1 trace.
pub const MAGIC: &str = "leaselab-trace v1";

/// A parsed trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    /// Short name (the lab case id, or `sim-<seed>`).
    pub name: String,
    /// One human line.
    pub title: String,
    /// The seed that produced it (0 for staged cases).
    pub seed: u64,
    /// Database configuration.
    pub config: Config,
    /// The lease spec the history was recorded on (`leaselab audit`), as its path was given:
    /// the statements were the user's, and `config` describes none of them.
    pub spec: Option<String>,
    /// Setup lines (settings a simulation run was made from), kept verbatim (`key=value`
    /// words); the simulation defines and parses them (`leaselab sim --from-trace`).
    pub setup: Vec<String>,
    /// Fault plan lines, kept verbatim (`key=value` words); the simulation defines them.
    pub faults: Vec<String>,
    /// The checks this history is expected to violate, in canonical order; empty means all hold.
    pub expect: Vec<Check>,
    /// The recorded history.
    pub history: History,
}

/// A malformed trace: where and what.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: field `{field}`: {message}")]
pub struct TraceError {
    /// File name as given by the caller.
    pub file: String,
    /// 1-based line number (0 if the file ended too early).
    pub line: usize,
    /// The field (or line kind) at fault.
    pub field: String,
    /// What is wrong.
    pub message: String,
}
