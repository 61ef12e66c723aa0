//! The backend seam implemented on PostgreSQL with the source design's SQL.
//!
//! Every trace connection is a real PostgreSQL session. A statement runs as a task on a
//! current-thread runtime; whether it waits on a lock is asked of the server
//! (`pg_isolation_test_session_is_blocked`, as PostgreSQL's isolation tester does), never
//! guessed from a timeout. A blocked statement stays pending and is collected by `await`;
//! after every operation the adapter lets every statement the server no longer blocks finish,
//! which is what the model does synchronously when a lock is released.
//!
//! The client-side rules (one statement per connection, `busy`, `in-transaction`, attempts
//! logged when the write's outcome is known, a connection cut by a crash reporting
//! `conn-lost` once) are the same as the model's; the data semantics are PostgreSQL's.
//!
//! - `state`: what the adapter holds; `throwaway`: clusters, schema, reset, crash-restart;
//! - `sessions`: the sessions layer (per database a side, per connection a session, their
//!   fields private to it): lock waits, settling, orphans, the pool; `admin`: the seam's
//!   transactions, sessions and faults; `snapshot`: committed state; `error`: the adapter's
//!   errors and statement errors as outcomes;
//! - `seam`: the two statement sets and which one an operation runs; the source design's:
//!   `statements` (its SQL), `lease_store`, `fenced_resource`; a user's spec: `spec_run` (the
//!   checked spec, prepared), `spec_ops` (running an operation's statements), `spec_seam`.

// `sessions` first: its `session_or_return!` is used by the trait impls below.
#[macro_use]
mod sessions;
mod admin;
mod error;
mod fenced_resource;
mod lease_store;
mod seam;
mod snapshot;
mod spec_ops;
mod spec_run;
mod spec_seam;
mod state;
mod statements;
mod throwaway;

pub use error::PgError;
pub use spec_run::SpecRun;
pub use state::{PgBackend, Target};
