//! The teaching switch for `cargo test`: `LEASELAB_FENCE=MODE` makes the invariant tests (the
//! correct-configuration property and the simulation's many-seeds test) run against that fence
//! instead of the scope fence, so a learner watches them fail; the failure prints the shrunk
//! run's timeline, the command that replays it, and the exercise of `EXERCISES.md` that
//! explains it. Unset, the tests run as always.

use crate::{timeline, Story};
use leaselab_checkers::Report;
use leaselab_model::{Config, FenceMode, History};

/// The environment variable.
pub const VAR: &str = "LEASELAB_FENCE";

/// The fence the invariant tests run against: `LEASELAB_FENCE`, or the scope fence when unset.
/// A value that is not a fence mode is an error naming the variable and every mode.
pub fn fence_under_test() -> Result<FenceMode, String> {
    match std::env::var(VAR) {
        Err(_) => Ok(FenceMode::Scope),
        Ok(v) => v.parse().map_err(|e| format!("{VAR}={v}: {e}")),
    }
}

/// Whether a learner switched the fence: the tests then expect to fail.
pub fn switched() -> bool {
    std::env::var(VAR).is_ok()
}

/// The exercise of `EXERCISES.md` that explains what breaks under `fence`.
pub fn exercise_for(fence: FenceMode) -> &'static str {
    match fence {
        FenceMode::Off => "EXERCISES.md, exercise 1 (switch the fence off)",
        FenceMode::CheckThenWrite => "EXERCISES.md, exercise 2 (check, then write)",
        FenceMode::Row => "EXERCISES.md, exercise 3 (a fence per row)",
        FenceMode::Strict => "EXERCISES.md, exercise 4 (the strict fence and two parts)",
        FenceMode::Scope | FenceMode::ScopeUpsert => {
            "EXERCISES.md (the scope fence is the correct one: nothing should break)"
        }
    }
}

/// What a failing invariant test prints: the timeline of the (shrunk) run, the command that
/// replays it, and the exercise that explains it.
pub fn failure_text(history: &History, config: &Config, report: &Report, replay: &str) -> String {
    let story = Story::new(history, config, report);
    format!(
        "{}replay: {replay}\nexplained in {}\n",
        timeline::render(&story),
        exercise_for(config.fence)
    )
}

/// For the tests that show the switch works: runs test `name` of the current test binary again
/// in a child process with `LEASELAB_FENCE=fence` (and `env`), and returns whether it passed
/// and what it printed. Call it only when [`switched`] is false (the child is the switched run).
pub fn rerun_switched(name: &str, fence: FenceMode, env: &[(&str, &str)]) -> (bool, String) {
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => return (false, format!("no test binary: {e}")),
    };
    let mut c = std::process::Command::new(exe);
    c.env(VAR, fence.as_str())
        .args([name, "--exact", "--nocapture"]);
    for (k, v) in env {
        c.env(k, v);
    }
    match c.output() {
        Ok(o) => (
            o.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            ),
        ),
        Err(e) => (false, format!("cannot run the test binary: {e}")),
    }
}
