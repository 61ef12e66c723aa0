//! # leaselab-trace
//!
//! Trace format v1: a history plus what is needed to reproduce and judge it — and replay,
//! which re-executes one.
//!
//! Line-oriented text, one event a line, stable under re-serialisation (writing, reading and
//! writing again gives the same bytes), documented in `traces/README.md`:
//!
//! ```text
//! leaselab-trace v1
//! name F4
//! title main experiment
//! seed 0
//! config fence=scope lease_table=logged renew_after_expiry=false publish=business-key client_expiry=monotonic scopes=daily-report
//! expect ok
//! events
//! 1 t=0 local=0 holder-a acquire lease=report-job holder=holder-a ttl_ms=1500 => granted token=1 expires=1500
//! end
//! ```
//!
//! Values are percent-escaped so they never contain a space, `=` or `%`. Malformed input is an
//! error naming the file, the line and the field — never a panic.
//!
//! - [`write`](Trace::to_text): the canonical text; [`parse`](Trace::parse): back again.
//! - [`replay`]: re-executes a trace on the model, step by step, and judges the replayed
//!   history against the trace's `expect` line.
//! - [`compare`]: one divergence type and one report format for a replay (recording against
//!   model) and a differential run (PostgreSQL against model).
//!
//! The vocabulary's own text form (one operation, one outcome, escaping) is
//! `leaselab_model::text`; the verdict's vocabulary is [`leaselab_checkers::Check`].

#![warn(missing_docs, unreachable_pub)]

pub mod compare;
mod parse;
pub mod replay;
mod write;

pub use parse::{canonical_checks, parse_op, parse_outcome};
pub use write::{config_text, event_line};

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
