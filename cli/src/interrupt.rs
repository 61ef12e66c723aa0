//! Ctrl-C and SIGTERM, the same for every command. A command that can stop between units of
//! work (a seed, a schedule, a case) asks [`requested`] before each: the first signal lets the
//! running unit finish, and the command writes what it found, its summary and a resume point,
//! and exits 5. A second signal — or the first, for a command with nothing to keep — stops at
//! once: every holder process is killed and every throwaway PostgreSQL cluster this process
//! started is stopped and removed first, since a process that exits from here runs no
//! destructor; what the command knows so far is written ([`on_abandon`]: a sweep's summary,
//! resume point and MANIFEST status); then the summary line, exit 5.
//!
//! A signal within [`SAME_INTERRUPT`] of the first is the same interrupt, not a second one:
//! `timeout -s INT`, a terminal's Ctrl-C reaching the whole process group, a supervisor that
//! signals the process and then its group — each delivers one interrupt more than once.
//!
//! The handler is installed before anything else in `main` ([`install`]) and the command's
//! reaction chosen later ([`configure`]): a signal during start-up is an interruption like
//! any other, never the default action that kills the process where it stands. Exactly one
//! thread ends the process: `main` when it returns, or the handler when it abandons the run —
//! whichever claims the end first ([`finishing`]); the other stands aside. Two threads in
//! `exit` at once (the handler abandoning while `main` returned) tear the process down by a
//! signal, with its cleanup half done. Whatever kills the process anyway (SIGKILL, a third
//! party), the servers and holders still end: `leaselab_pg::watchdog`.

use crate::args::Exit;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU8, Ordering};
use std::sync::Mutex;

static STOP: AtomicBool = AtomicBool::new(false);
static SIGNALS: AtomicU32 = AtomicU32::new(0);
/// Who ends the process: [`RUNNING`] until `main` returns or the handler abandons the run.
static END: AtomicU8 = AtomicU8::new(RUNNING);
const RUNNING: u8 = 0;
/// `main` is returning: its work is over and its clusters dropped; a signal changes nothing.
const MAIN_ENDS: u8 = 1;
/// The handler is killing holders, stopping clusters and will exit with 5.
const HANDLER_ENDS: u8 = 2;
/// The command's name and its reaction to a first signal, once known.
static COMMAND: Mutex<Option<(&'static str, OnFirst)>> = Mutex::new(None);
/// When the first signal came.
static FIRST_AT: Mutex<Option<std::time::Instant>> = Mutex::new(None);
/// What an abandoning handler runs first: the command writes what it knows so far.
type Hook = Box<dyn Fn() + Send>;
static ON_ABANDON: Mutex<Option<Hook>> = Mutex::new(None);

/// Signals this close to the first are the same interrupt (a person pressing Ctrl-C twice to
/// mean it takes longer than this).
pub const SAME_INTERRUPT: std::time::Duration = std::time::Duration::from_millis(1000);

/// What the command knows so far, written by the handler when it abandons the run: a sweep's
/// results, its resume point and its MANIFEST status. Replaces an earlier one.
pub fn on_abandon(hook: impl Fn() + Send + 'static) {
    *ON_ABANDON
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Box::new(hook));
}

/// The command has written what it knows itself: nothing for the handler to write.
pub fn clear_on_abandon() {
    *ON_ABANDON
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
}

/// How a command reacts to its first signal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnFirst {
    /// Finish the running unit of work (named here, e.g. "seeds"), then stop and report.
    Finish(&'static str),
    /// Nothing to keep: stop at once.
    Exit,
}

/// Installs the handler; once per process, first thing in `main`. Until [`configure`] names
/// the command, a signal stops the process at once (with the same cleanup).
pub fn install() {
    let _ = ctrlc::set_handler(on_signal);
}

/// Names the command and how its first signal is taken.
pub fn configure(command: &'static str, first: OnFirst) {
    *COMMAND
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some((command, first));
}

fn on_signal() {
    let now = std::time::Instant::now();
    {
        let mut first = FIRST_AT
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match *first {
            Some(t) if now.duration_since(t) < SAME_INTERRUPT => return,
            Some(_) => {}
            None => *first = Some(now),
        }
    }
    let n = SIGNALS.fetch_add(1, Ordering::SeqCst);
    let (command, first) = COMMAND
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .unwrap_or(("leaselab", OnFirst::Exit));
    match (n, first) {
        (0, OnFirst::Finish(unit)) => {
            STOP.store(true, Ordering::SeqCst);
            eprintln!(
                "\nleaselab {command}: stopping — finishing the running {unit} (Ctrl-C again to abandon them)"
            );
        }
        _ => abandon(command),
    }
}

/// Stops at once, unless `main` is already returning (then its work is over and nothing of it
/// is left to stop: the signal changes nothing, and `main` exits as it was going to).
fn abandon(command: &str) {
    STOP.store(true, Ordering::SeqCst);
    if END
        .compare_exchange(RUNNING, HANDLER_ENDS, Ordering::SeqCst, Ordering::SeqCst)
        .is_err()
    {
        return;
    }
    eprintln!("\nleaselab {command}: interrupted");
    // Every child first (holders, a cluster's helpers): a stopped holder would wait for ever.
    leaselab_pg::children::kill_all();
    leaselab_pg::cluster::stop_all();
    leaselab_live::server::stop_all();
    let hook = ON_ABANDON
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take();
    if let Some(hook) = hook {
        hook();
    }
    if let Err(e) = crate::summary::finish(Exit::Interrupted) {
        eprintln!("leaselab {command}: {e}");
    }
    std::process::exit(Exit::Interrupted as i32);
}

/// Called by `main` before it writes its summary and returns: claims the end of the process.
/// If the handler claimed it first, it is stopping the clusters and will exit with 5: this
/// thread waits for that and never returns (the process must not end under the handler).
pub fn finishing() {
    if END
        .compare_exchange(RUNNING, MAIN_ENDS, Ordering::SeqCst, Ordering::SeqCst)
        .is_err()
    {
        loop {
            std::thread::park();
        }
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
