//! # leaselab-pg
//!
//! The source design *is* PostgreSQL; this crate proves that the model means what the database
//! does, step by step.
//!
//! - [`cluster`]: throwaway clusters (own data dir under `target/`, absolute socket dir,
//!   `fsync=off`, `full_page_writes=off`, `synchronous_commit` on; `initdb` as `postgres` when
//!   root). One cluster per database (`lease26`, `res26`), so a trace can crash one database
//!   alone as the simulation does.
//! - [`sql`]: the source's schema and statements; `now()` redirected to a virtual clock in
//!   replay mode.
//! - [`adapter`]: the backend seam on PostgreSQL, with lock waits detected by asking the server.
//! - [`diff()`]: the differential replay of a trace against the model and PostgreSQL; what
//!   `diff --gen` judges of each generated schedule and saves of what it found.
//! - [`spec`]: a lease spec, the user's own schema and statements, read and checked against
//!   PostgreSQL's description of each statement.
//! - [`audit`]: the one owner of an audit (the spec, its client and terms, its backends); a
//!   generated schedule run on a spec, recorded from PostgreSQL's answers alone for the
//!   checkers; what an audit search found, saved as a trace with its psql scripts.
//! - [`real`]: real-time experiments: F3's 16-connection race, F4/F5 with real processes.
//! - [`recording`]: what each real process saw, written as it happens in the JSON-lines
//!   history format.
//! - [`children`]: the one registry of the child processes that must not outlive this one (a
//!   cluster's helper programs, holder processes), killed by an abandoning command.
//! - [`watchdog`]: whatever ends this process, the servers and processes it started end
//!   within seconds and their folders go.
//!
//! Set `LEASELAB_PG_CONNINFO` (e.g. `host=/tmp port=5432 user=postgres`) to use an existing
//! server instead of throwaway clusters (crash steps are then unsupported).
//!
//! ## Environment
//!
//! - `LEASELAB_PG_BIN`: the directory of `initdb`, `pg_ctl` and `postgres` (else
//!   `pg_config --bindir`, `/usr/lib/postgresql/<newest>/bin`, then `PATH`).
//! - `LEASELAB_PG_CONNINFO`: use this server instead of throwaway clusters.
//! - `LEASELAB_REQUIRE_PG=1`: a database test without PostgreSQL fails instead of skipping
//!   (`.ci/run` sets it); [`cluster::postgres_for_test`].
//! - `LEASELAB_SKIP_LOG=FILE`: a skipping database test appends a line there
//!   (`scripts/test.sh` prints the file at the end).
//! - `LEASELAB_DEBUG_STEPS=1`: print each differential step with its wall time (profiling).
//! - `LEASELAB_DEBUG_LOCKS=1`: when a statement is reported blocked, print every client
//!   backend's state and blockers (`pg_stat_activity`, `pg_blocking_pids`).

#![warn(missing_docs, unreachable_pub)]

pub mod adapter;
pub mod audit;
pub mod children;
pub mod cluster;
pub mod diff;
pub mod real;
pub mod recording;
pub mod spec;
pub mod sql;
pub mod watchdog;

pub use adapter::{PgBackend, PgError};
pub use diff::{diff, diff_schedule, diff_with_rule, ScheduleRun};
