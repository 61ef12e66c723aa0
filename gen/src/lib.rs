//! # leaselab-gen
//!
//! Multi-session schedules for the PostgreSQL differential (`leaselab diff --gen`) and for the
//! checkers' second oracle: 2–4 sessions per database issuing every operation of the trace
//! format — lease statements in autocommit and inside `begin db=lease` transactions, one-shot
//! and step-wise writes under READ COMMITTED and REPEATABLE READ, publishes, every read,
//! `now`, `await`, `disconnect` (idle, in a transaction, while waiting on a lock), crash and
//! restart of either database (also while statements wait), clock advances that land exactly
//! on an expiry — under every fence mode, both lease tables and both publish modes.
//!
//! A schedule is a list of *intents* ([`Intent`]), which proptest draws and shrinks. A
//! [`Client`] turns each intent into a concrete operation from what the client has seen so far
//! (its grants, which of its statements wait, which transactions are open, which database is
//! down), so every schedule is valid by construction: a session whose statement waits is asked
//! to `await` or `disconnect`, a `begin` inside a transaction becomes a `commit`, a crash of a
//! database that is down becomes its restart. Shrinking removes intents; the client keeps the
//! rest valid.
//!
//! ## Environment
//!
//! - `PROPTEST_CASES=N`: how many schedules `tests/oracle.rs` checks facts against the ledger on
//!   (default 3,000).

#![warn(missing_docs, unreachable_pub)]

mod client;
pub mod holders;
pub mod search;
mod text;

pub use client::{Aim, Behaviour, Client, Service, Statements, Terms, WholeOps};

use leaselab_model::Config;
#[cfg(feature = "strategies")]
use leaselab_model::{FenceMode, LeaseDurability, PublishMode};
#[cfg(feature = "strategies")]
use proptest::prelude::*;

/// What a session means to do next; the [`Client`] makes it concrete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `acquire`.
    Acquire,
    /// `renew`.
    Renew,
    /// `release`.
    Release,
    /// `begin db=lease` (READ COMMITTED or, with an odd argument, REPEATABLE READ).
    BeginLease,
    /// `commit db=lease` (or `rollback`, with an odd argument).
    EndLease,
    /// One-shot fenced `write`.
    Write,
    /// `begin db=res`.
    BeginRes,
    /// `fence`.
    Fence,
    /// `upsert`.
    Upsert,
    /// `commit db=res` (or `rollback`).
    EndRes,
    /// `publish`.
    Publish,
    /// A read: lease, floor, part, publish or attempt count.
    Read,
    /// `now`.
    Now,
    /// `await`.
    Await,
    /// `disconnect`.
    Disconnect,
    /// `crash` (or `restart` when the database is down).
    Crash,
    /// The clock moves: by a step, or exactly onto the expiry the client last saw.
    Advance,
    /// A statement on a row another session's open transaction holds: a fence on a floor it
    /// fenced (with a token just below or above its token, so the re-check after the wait
    /// fails or passes; inside a transaction, which opens first, or as a one-shot write), or a
    /// lease statement on a lease row it locked. So three or more sessions queue on one row,
    /// and a waiter whose re-check failed keeps its transaction (and the row) open.
    Contend,
}

/// One drawn intent: who, what, and two small arguments the client interprets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Intent {
    /// Which session (an index into the schedule's actors).
    pub actor: u8,
    /// What.
    pub kind: Kind,
    /// First argument (token choice, TTL, isolation, database…).
    pub a: u8,
    /// Second argument (part, scope, key…).
    pub b: u8,
}

/// A generated schedule: the databases' configuration, the sessions, the intents.
#[derive(Clone, Debug)]
pub struct Schedule {
    /// Configuration of both databases.
    pub config: Config,
    /// Number of sessions per database (2–4), named `holder-a`…
    pub actors: usize,
    /// The intents in order.
    pub intents: Vec<Intent>,
}

const NAMES: [&str; 4] = ["holder-a", "holder-b", "holder-c", "holder-d"];
const TTLS: [u64; 3] = [100, 300, 1500];
const STEPS: [u64; 8] = [0, 1, 50, 99, 100, 299, 300, 1500];

#[cfg(feature = "strategies")]
fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        8 => Just(Kind::Acquire),
        4 => Just(Kind::Renew),
        3 => Just(Kind::Release),
        3 => Just(Kind::BeginLease),
        3 => Just(Kind::EndLease),
        4 => Just(Kind::Write),
        5 => Just(Kind::BeginRes),
        6 => Just(Kind::Fence),
        6 => Just(Kind::Upsert),
        5 => Just(Kind::EndRes),
        2 => Just(Kind::Publish),
        4 => Just(Kind::Read),
        1 => Just(Kind::Now),
        4 => Just(Kind::Await),
        2 => Just(Kind::Disconnect),
        1 => Just(Kind::Crash),
        6 => Just(Kind::Advance),
        30 => Just(Kind::Contend),
    ]
}

/// A configuration drawn from every fence mode, both lease tables, both publish modes, with
/// and without the renew-after-expiry mistake.
#[cfg(feature = "strategies")]
pub fn config() -> impl Strategy<Value = Config> {
    (
        prop::sample::select(FenceMode::ALL.to_vec()),
        any::<bool>(),
        any::<bool>(),
        prop::bool::weighted(0.15),
    )
        .prop_map(|(fence, unlogged, versioned, rae)| Config {
            fence,
            lease_table: if unlogged {
                LeaseDurability::Unlogged
            } else {
                LeaseDurability::Logged
            },
            publish: if versioned {
                PublishMode::Versioned
            } else {
                PublishMode::BusinessKey
            },
            renew_after_expiry: rae,
            ..Config::default()
        })
}

/// Schedules of 2–4 sessions and up to `max_steps` intents.
#[cfg(feature = "strategies")]
pub fn schedule(max_steps: usize) -> impl Strategy<Value = Schedule> {
    (config(), 2usize..=4).prop_flat_map(move |(config, actors)| {
        let intent = (0..actors as u8, kind(), any::<u8>(), any::<u8>())
            .prop_map(|(actor, kind, a, b)| Intent { actor, kind, a, b });
        prop::collection::vec(intent, 1..=max_steps.max(1)).prop_map(move |intents| Schedule {
            config: config.clone(),
            actors,
            intents,
        })
    })
}
