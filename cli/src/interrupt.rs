//! Ctrl-C and SIGTERM, the same for every command. A command that can stop between units of
//! work (a seed, a schedule, a case) asks [`requested`] before each: the first signal lets the
//! running unit finish, and the command writes what it found, its summary and a resume point,
//! and exits 5. A second signal — or the first, for a command with nothing to keep — stops at
//! once: every throwaway PostgreSQL cluster this process started is stopped and removed first,
//! since a process that exits from here runs no destructor.

use crate::args::Exit;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);
static SIGNALS: AtomicU32 = AtomicU32::new(0);
/// The handler is stopping the clusters and will exit the process: nobody else may exit first.
static ABANDONING: AtomicBool = AtomicBool::new(false);

/// How a command reacts to its first signal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnFirst {
    /// Finish the running unit of work (named here, e.g. "seeds"), then stop and report.
    Finish(&'static str),
    /// Nothing to keep: stop at once.
    Exit,
}

/// Installs the handler for `command` (`sim`, `diff`, …); once per process.
pub fn install(command: &'static str, first: OnFirst) {
    let _ = ctrlc::set_handler(move || {
        let n = SIGNALS.fetch_add(1, Ordering::SeqCst);
        match (n, first) {
            (0, OnFirst::Finish(unit)) => {
                STOP.store(true, Ordering::SeqCst);
                eprintln!(
                    "\nleaselab {command}: stopping — finishing the running {unit} (Ctrl-C again to abandon them)"
                );
            }
            _ => {
                ABANDONING.store(true, Ordering::SeqCst);
                eprintln!("\nleaselab {command}: interrupted");
                leaselab_pg::real::kill_holders();
                leaselab_pg::cluster::stop_all();
                if let Err(e) = crate::summary::finish(Exit::Interrupted) {
                    eprintln!("leaselab {command}: {e}");
                }
                std::process::exit(Exit::Interrupted as i32);
            }
        }
    });
}

/// Called by `main` before it returns: if the handler is abandoning the run, it is stopping the
/// clusters and will exit with 5 — the process must not end under it (a server left running).
pub fn wait_if_abandoning() {
    while ABANDONING.load(Ordering::SeqCst) {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// Whether a signal asked the command to stop.
pub fn requested() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// The flag itself, for code that takes one (the sweep).
pub fn flag() -> &'static AtomicBool {
    &STOP
}
