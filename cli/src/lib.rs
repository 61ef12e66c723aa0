//! # leaselab (the binary's library half)
//!
//! Each command is one module owning its arguments (`…Args`, a clap `Args`) and its `main`;
//! the binary (`src/main.rs`) parses, installs the Ctrl-C handling and dispatches.
//!
//! - [`lab_cmd`]: `leaselab lab`, over [`lab`]: the cases F1–F9 and G1–G4 on the model, with
//!   their output and traces.
//! - [`sim_cmd`]: `leaselab sim`, one seed or a sweep.
//! - [`diff_cmd`]: `leaselab diff` against PostgreSQL.
//! - [`audit_cmd`]: `leaselab audit`: the user's own lease SQL on PostgreSQL, judged by the
//!   checkers; [`audit_sim`]: the same with the simulation's holders (`--sim-seeds`);
//!   [`audit_spec`]: the spec both start from, as the command line sets it.
//! - [`gen_search`]: what `diff --gen` and `audit --gen` share around the library's search:
//!   the plan, the count of runs and its progress, the words of an interrupted search.
//! - [`workers`]: the databases a generated search runs on, started side by side.
//! - [`schedule_file`]: the schedule a saved trace carries, for `--replay`.
//! - [`holder_cmd`]: `leaselab holder`, one process of the real-time F4/F5 experiment and of a
//!   live run.
//! - [`live_cmd`]: `leaselab live`, a live run on a real lease service, judged.
//! - [`picture_cmd`]: `diagram` and `explain`, and the timeline printed with a failure.
//! - [`judge_cmd`]: `leaselab judge` (recorded histories, one file or several merged) and
//!   `leaselab export --jsonl`.
//! - [`envelope_cmd`]: `leaselab envelope`, the safety envelope by bisection.
//! - [`check_cmd`]: `leaselab check`, the exhaustive search, its progress and its caps.
//! - [`replay`]: `leaselab replay`: re-executes a trace against the model and re-judges it.
//! - [`args`]: what several commands share: a simulation run's arguments, exit codes.
//! - [`error`]: why a command could not do its work (`CliError`, exit status 2).
//! - [`summary`]: `--json FILE`, one JSON object saying how a run ended.
//! - [`interrupt`]: Ctrl-C and SIGTERM for every command (results kept, clusters removed).
//! - [`progress`]: the progress line on stderr of a long run.

#![warn(missing_docs, unreachable_pub)]

pub mod args;
pub mod audit_cmd;
pub mod audit_sim;
pub mod audit_spec;
pub mod check_cmd;
pub mod diff_cmd;
pub mod envelope_cmd;
pub mod error;
pub mod gen_search;
pub mod holder_cmd;
pub mod interrupt;
pub mod judge_cmd;
pub mod lab;
pub mod lab_cmd;
pub mod live_cmd;
pub mod picture_cmd;
pub mod progress;
pub mod replay;
pub mod schedule_file;
pub mod sim_cmd;
pub mod summary;
pub mod workers;
