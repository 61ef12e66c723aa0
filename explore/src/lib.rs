//! # leaselab-explore
//!
//! `leaselab check`: a bounded exhaustive search over the lease system — every interleaving of
//! K holders (the one holder every driver runs: its timers and its statements), clock ticks and
//! (optionally) a crash-restart, within a bound on time — with stateright. Breadth-first search
//! makes every counterexample a shortest one.
//!
//! - [`system`]: the explored state (each holder's own state beside a compact view of the
//!   databases that answers its statements with the model's rule functions) and its
//!   transitions; stateright's `Model`.
//! - [`search`]: BFS/DFS, threads, symmetry reduction, what a search found.
//! - [`view`]: what the Explorer shows — named actions, states in milliseconds, the address
//!   of a path.
//! - [`trace`]: a counterexample run again on the model itself, step by step, as a trace that
//!   `leaselab replay`, `leaselab diff` and the History checkers take.

#![warn(missing_docs, unreachable_pub)]

pub mod search;
pub mod system;
pub mod trace;
pub mod view;
