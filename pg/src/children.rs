//! The one registry of the child processes this process starts that must not outlive it: a
//! cluster's helper programs (`initdb`, `pg_ctl`) and the holder processes of the real-time
//! experiments and live runs. Each is also in the watchdog's script ([`crate::watchdog`]),
//! which kills it should this process die by a signal no handler sees; an abandoning command
//! calls [`kill_all`], after which the registry is closed and nothing more starts.
//!
//! A child is started and listed under the registry's lock, so that [`kill_all`] either sees
//! it or has closed the registry first and it is never started: a child started as the
//! command is being abandoned is never missed.

use crate::watchdog::{self, Order};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// What a kill of a listed child reaches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// The process alone (a holder: SIGKILL ends a stopped process too).
    Process,
    /// Its whole process group: as root a helper's child is `runuser`, and the `initdb` it
    /// started would go on writing into a removed folder after this process is gone.
    Group,
}

struct Listed {
    pid: u32,
    reach: Reach,
    watched: Option<watchdog::Entry>,
}

/// The children started and not yet reaped; `closed` once [`kill_all`] ran.
struct Registry {
    closed: bool,
    children: Vec<Listed>,
}

static CHILDREN: Mutex<Registry> = Mutex::new(Registry {
    closed: false,
    children: Vec::new(),
});

fn registry() -> MutexGuard<'static, Registry> {
    CHILDREN.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Why a child was not started.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    /// [`kill_all`] ran: the command is being abandoned.
    #[error("not started: the run was abandoned")]
    Closed,
    /// The OS refused.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Starts `cmd` in a process group of its own (a Ctrl-C at the terminal reaches this process
/// alone, which decides what becomes of its children), lists it, and puts it in the
/// watchdog's script under `order`. Its standard streams are as `cmd` sets them.
pub fn spawn(cmd: &mut Command, reach: Reach, order: Order) -> Result<Child, SpawnError> {
    use std::os::unix::process::CommandExt;
    let mut r = registry();
    if r.closed {
        return Err(SpawnError::Closed);
    }
    let child = cmd.process_group(0).spawn()?;
    let pid = child.id();
    let kill = match reach {
        Reach::Process => format!("kill -KILL {pid} 2>/dev/null"),
        Reach::Group => format!("kill -KILL -- -{pid} 2>/dev/null"),
    };
    let watched = watchdog::guard(order, kill);
    r.children.push(Listed {
        pid,
        reach,
        watched,
    });
    Ok(child)
}

/// Whether child `pid` is still listed (started, not yet reaped).
pub fn listed(pid: u32) -> bool {
    registry().children.iter().any(|c| c.pid == pid)
}

/// Takes child `pid` off the list and out of the watchdog's script: it is about to be reaped,
/// after which its pid may name another process, which [`kill_all`] must never signal.
pub fn unlist(pid: u32) {
    let gone: Vec<Listed> = {
        let mut r = registry();
        let (gone, kept) = std::mem::take(&mut r.children)
            .into_iter()
            .partition(|c| c.pid == pid);
        r.children = kept;
        gone
    };
    for e in gone.into_iter().filter_map(|c| c.watched) {
        watchdog::forget(e);
    }
}

/// Kills every child still listed, each as far as its [`Reach`], and closes the registry: for
/// a command abandoned by a second Ctrl-C (or SIGTERM), whose own code will not run again.
pub fn kill_all() {
    let children = {
        let mut r = registry();
        r.closed = true;
        std::mem::take(&mut r.children)
    };
    for c in children {
        let target = match c.reach {
            Reach::Process => c.pid.to_string(),
            Reach::Group => format!("-{}", c.pid),
        };
        let _ = Command::new("kill")
            .args(["-KILL", "--", &target])
            .stderr(Stdio::null())
            .status();
    }
}
