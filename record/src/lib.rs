//! # leaselab-record
//!
//! The history format for what a real deployment did: JSON lines, one event per line, an
//! operation's invoke and its completion as separate events (`type`: `invoke`, `ok`, `fail`,
//! `info`), in the style of Knossos and elle-cli — so any service can write it without
//! leaselab, and `leaselab judge` can judge it with the same checkers that judge the model and
//! PostgreSQL. The format is specified in `docs/history-jsonl.md`.
//!
//! - [`merge`]: several processes' files as one history, in the order of the server's clock.
//! - [`read`]: a file's lines into a [`leaselab_model::History`], with the file line of every
//!   event (verdicts name lines, not positions), and errors that name the line and the field.
//! - [`write`](mod@write): a `History` (a trace's, a simulation's) into the format.
//! - [`recorder`]: a service records its own calls as they happen.
//!
//! Why invokes and completions, when a trace has one line per event: a recorder does not know
//! when its operation took effect, only that it was after the call and before the answer. A
//! completion that is not the very next line after its invoke therefore becomes the history's
//! *waiting* shape — the operation `blocked` at the invoke, its outcome at an `await` — which is
//! exactly the commit window the checkers already reason about.

#![warn(missing_docs, unreachable_pub)]

pub mod merge;
pub mod read;
pub mod recorder;
mod schema;
mod strict;
pub mod write;

/// The first line of every file: `{"format":"leaselab-history","version":1}`.
pub const FORMAT: &str = "leaselab-history";

/// The version this crate reads and writes.
pub const VERSION: u64 = 1;
