//! # leaselab-model
//!
//! A pure, deterministic model of a lease table that hands out fencing tokens, and of the
//! resource those tokens protect. It is *sans-IO*: no tokio, no rand, no OS clock. Every
//! transition takes `now`; whoever drives a [`World`] (a case, a replay, a simulated host) sets it.
//!
//! ```
//! use leaselab_model::prelude::*;
//!
//! let mut w = World::new(Config::default());
//! let a = w.run("holder-a", Op::acquire("holder-a", 1500));
//! assert!(matches!(a, Outcome::Granted { token: Token(1), .. }));
//! w.advance(1500); // expired iff expires_at <= now
//! let b = w.run("holder-b", Op::acquire("holder-b", 1500));
//! assert!(matches!(b, Outcome::Granted { token: Token(2), .. }));
//! assert_eq!(w.run("holder-b", Op::write("summary", "new", 2)), Outcome::Accepted);
//! // The paused old holder wakes up and writes with token 1: the scope fence rejects it.
//! assert_eq!(w.run("holder-a", Op::write("summary", "stale", 1)), Outcome::Rejected);
//! ```
//!
//! ## Map
//!
//! - [`time`]: virtual milliseconds, `-infinity` expiry.
//! - [`names`]: typed [`Token`], holder, lease, scope, part and connection names.
//! - [`config`]: fence modes and every known mistake as a plain value.
//! - [`history`]: [`Op`], [`Outcome`], [`Event`], [`History`] — what every run records.
//! - [`backend`]: the seam ([`LeaseStore`], [`FencedResource`], [`Admin`]) and [`apply`].
//! - [`rules`]: the lease and fence rules as pure functions.
//! - [`model`]: the in-memory implementation with READ COMMITTED row locks and crashes.
//! - [`world`]: model + clock + history, the harness cases and replays drive.
//! - [`clock`]: a node's own clock (offset, rate skew, NTP steps, freeze).
//! - [`client`]: holder-side helpers: local deadline, `LeaseGuard`.
//! - [`text`]: the text form of an operation and an outcome (event-line syntax).
//! - [`allowed`]: every model state a run can be in where PostgreSQL races.

#![warn(missing_docs, unreachable_pub)]

pub mod allowed;
pub mod backend;
pub mod client;
pub mod clock;
pub mod config;
mod engine;
pub mod history;
pub mod holder;
pub mod model;
pub mod names;
pub mod ops;
pub mod protocol;
pub mod reason;
pub mod rows;
pub mod rules;
pub mod text;
pub mod time;
pub mod world;

pub use backend::{
    apply, apply_event, Admin, Backend, Ctx, FencedResource, LeaseStore, SessionStep, Waits,
};
pub use config::{ClientExpiry, Config, FenceMode, LeaseDurability, PublishMode};
pub use history::{DbName, Event, History, Op, Outcome};
pub use model::Model;
pub use names::{ConnId, Holder, LeaseName, Part, Scope, Token};
pub use reason::{Reason, SqlState};
pub use rows::{Attempt, AttemptOutcome, LeaseRow, PartRow};
pub use time::{Expiry, Millis};
pub use world::World;

/// Everything a case or a test usually needs.
pub mod prelude {
    pub use crate::{
        apply, AttemptOutcome, ClientExpiry, Config, ConnId, DbName, Event, Expiry, FenceMode,
        History, Holder, LeaseDurability, LeaseName, LeaseRow, Millis, Op, Outcome, Part, PartRow,
        PublishMode, Scope, Token, World,
    };
}
