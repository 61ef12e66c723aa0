//! # leaselab-sim
//!
//! Deterministic simulation of the report job: N holders, a lease database and a resource
//! database, with seeded faults — pauses at chosen code points (SIGSTOP- or VM-freeze-style),
//! partitions, delays, per-node clock offset/skew/steps, database crash-restart. One seed
//! reproduces one run exactly: the same seed gives byte-identical traces.
//!
//! ```
//! use leaselab_sim::{run_seed, Driver, SimOptions};
//! use leaselab_model::FenceMode;
//!
//! let opts = SimOptions { fence: FenceMode::Scope, safety_ms: 5_000, liveness_ms: 5_000, ..SimOptions::default() };
//! let run = run_seed(7, &opts, Driver::Fast);
//! assert!(run.report.violations.is_empty());
//! assert_eq!(run.trace.to_text(), run_seed(7, &opts, Driver::Fast).trace.to_text());
//! ```
//!
//! - the holder is the model's sans-IO state machine (`leaselab_model::holder`: events in,
//!   effects out), which both drivers run.
//! - [`fast`]: the discrete-event driver used for sweeps.
//! - [`turmoil_driver`]: the same holders and hosts on turmoil.
//! - [`host`]: the database hosts around the model.
//! - `driver_core` (inside the crate): what both drivers do alike with a holder's effects
//!   and pauses.
//! - [`clock`]: per-node clocks (offset, skew, steps, freeze).
//! - `faults` (inside the crate): fault kinds, swarm plans from a seed.
//! - [`scenario`]: options, derived setup, run results, liveness.
//! - `setup_text` (inside the crate): a run's setup as trace header lines and back (`--from-trace`).
//! - [`sweep`]: seed ranges, shards, shrinking.
//!
//! ## Build flags
//!
//! The turmoil driver needs `--cfg tokio_unstable` (turmoil then seeds tokio's own randomness);
//! `.cargo/config.toml` sets it for rustc and rustdoc. A `RUSTFLAGS` (`RUSTDOCFLAGS`)
//! environment variable replaces that list: add the cfg there, or the build stops with a
//! message saying so.

#![warn(missing_docs, unreachable_pub)]

pub mod clock;
mod driver_core;
pub mod envelope;
pub mod fast;
mod faults;
pub mod host;
pub mod scenario;
mod setup_text;
pub mod sweep;
pub mod turmoil_driver;

pub use faults::{Fault, FaultKind, FaultPlan, LinkWindow, Point};
pub use scenario::{Driver, Setup, SimOptions, SimRun};

/// Runs one setup with the chosen driver.
pub fn run_setup(setup: Setup, driver: Driver) -> SimRun {
    match driver {
        Driver::Fast => fast::FastSim::new(setup).run(),
        Driver::Turmoil => turmoil_driver::run(setup),
    }
}

/// Runs one seed.
pub fn run_seed(seed: u64, opts: &SimOptions, driver: Driver) -> SimRun {
    run_setup(Setup::derive(seed, opts), driver)
}
