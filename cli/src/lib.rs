//! # leaselab (the binary's library half)
//!
//! - [`args`]: the argument set of a simulation run, value enums, exit codes.
//! - [`lab`]: the cases F1–F9 and G1–G4 of the README on the model, with their output and traces;
//!   [`lab_cmd`]: `leaselab lab`'s arguments and what it prints and writes.
//! - [`replay`]: `leaselab replay`: re-executes a trace against the model and re-judges it.
//! - [`sim_cmd`]: `leaselab sim`.
//! - [`diff_cmd`]: `leaselab diff` against PostgreSQL.
//! - [`summary`]: `--json FILE`, one JSON object saying how a run ended.
//! - [`interrupt`]: Ctrl-C and SIGTERM for every command (results kept, clusters removed).
//! - [`audit_cmd`]: `leaselab audit`: the user's own lease SQL on PostgreSQL, judged by the
//!   checkers; [`audit_sim`]: the same with the simulation's holders (`--sim-seeds`).
//! - [`check_cmd`]: `leaselab check`, the exhaustive search, its progress and its caps.
//! - [`judge_cmd`]: `leaselab judge` (recorded histories, one file or several merged) and
//!   `leaselab export --jsonl`.
//! - [`picture_cmd`]: `diagram` and `explain`, and the timeline printed with a failure.
//! - [`envelope_cmd`]: `leaselab envelope`, the safety envelope by bisection.
//!
//! The binary (`src/main.rs`) only parses arguments and prints.

#![warn(missing_docs, unreachable_pub)]

pub mod args;
pub mod audit_cmd;
pub mod audit_sim;
pub mod check_cmd;
pub mod diff_cmd;
pub mod envelope_cmd;
pub mod interrupt;
pub mod judge_cmd;
pub mod lab;
pub mod lab_cmd;
pub mod picture_cmd;
pub mod replay;
pub mod sim_cmd;
pub mod summary;
