//! # leaselab-explore
//!
//! `leaselab check`: a bounded exhaustive search over the lease system — every interleaving of
//! K holders (the one holder every driver runs: its timers and its statements), clock ticks and
//! (optionally) a crash-restart, within a bound on time — with stateright. Breadth-first search
//! makes every counterexample a shortest one.
//!
//! - [`system`]: stateright's `Model` — the system, its actions, its steps and its typed
//!   properties ([`system::Always`], the `sometimes` table) — re-exporting the parts it is made
//!   of: `bounds.rs` (a search's bounds, the holders' configuration in ticks), `state.rs` (the
//!   explored state: each holder's own state beside a packed view of the databases, its hash,
//!   the bits of what broke and was seen, the symmetry representative) and `db_view.rs` (how
//!   that view answers a holder's statements with the model's rule functions and lock
//!   protocol).
//! - [`search`]: BFS/DFS, threads, symmetry reduction, what a search found.
//! - [`view`]: what the Explorer shows — named actions, states in milliseconds, the address
//!   of a path.
//! - [`trace`]: a counterexample run again on the model itself, step by step, as a trace that
//!   `leaselab replay`, `leaselab diff` and the History checkers take.

#![warn(missing_docs, unreachable_pub)]

mod bounds;
mod db_view;
pub mod search;
mod state;
pub mod system;
pub mod trace;
pub mod view;
