//! # leaselab-explore
//!
//! `leaselab check`: a bounded exhaustive search over the lease system — every interleaving of
//! K holders' job-loop steps, clock ticks and (optionally) a crash-restart, within a bound on
//! time — with stateright. Breadth-first search makes every counterexample a shortest one.
//!
//! - [`system`]: the explored state (a compact view) and its transitions, decided by the
//!   model's rule functions; stateright's `Model`.
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
