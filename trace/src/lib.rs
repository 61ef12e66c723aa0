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
mod format;
mod parse;
pub mod replay;
mod write;

pub use format::{Trace, TraceFileError, MAGIC};
pub use leaselab_model::text::{Fields, TextError};
pub use write::{config_text, event_line};
