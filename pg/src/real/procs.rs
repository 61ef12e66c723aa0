//! Holder processes of our own binary (`leaselab holder …`): started in a process group of
//! their own and listed in the registry of children ([`crate::children`]), stopped and resumed
//! with signals, reaped — or killed and reaped when dropped first.

use super::{Context, RealError};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};

pub(super) fn proc_state(pid: u32) -> char {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .and_then(|(_, rest)| rest.trim_start().chars().next())
        })
        .unwrap_or('?')
}

pub(super) fn signal(pid: u32, sig: &str) -> Result<(), RealError> {
    let st = Command::new("kill")
        .arg(sig)
        .arg(pid.to_string())
        .status()
        .ctx("kill")?;
    if st.success() {
        Ok(())
    } else {
        Err(RealError::Unexpected(format!("kill {sig} {pid} failed")))
    }
}

/// Where and from when the processes of one experiment record their calls.
#[derive(Clone, Debug)]
pub(super) struct Records {
    pub(super) dir: PathBuf,
    pub(super) origin_ms: u64,
}

impl Records {
    pub(super) fn file(&self, process: &str) -> PathBuf {
        self.dir.join(format!("{process}.jsonl"))
    }
}

/// A running holder process: reaped by [`HolderProc::wait`], killed and reaped when dropped
/// first (an error part-way, with the process perhaps stopped).
pub struct HolderProc(pub(super) Child);

impl HolderProc {
    /// Starts `cmd` (this binary's `holder` command) as a holder process: in a process group
    /// of its own, listed in the registry of children ([`crate::children`]).
    pub fn spawn(cmd: Command) -> Result<Spawned, RealError> {
        let mut child = spawn_listed(cmd)?;
        let (stdin, stdout) = (child.stdin.take(), child.stdout.take());
        let proc = HolderProc(child);
        match (stdin, stdout) {
            (Some(stdin), Some(stdout)) => Ok(Spawned {
                proc,
                stdin,
                stdout,
            }),
            _ => Err(RealError::Unexpected("a holder without its pipes".into())),
        }
    }

    /// Its pid.
    pub fn id(&self) -> u32 {
        self.0.id()
    }

    /// Stops (SIGSTOP) or resumes (SIGCONT) it, `sig` as `kill` spells it.
    pub fn signal(&self, sig: &str) -> Result<(), RealError> {
        signal(self.id(), sig)
    }

    /// Waits for a holder that runs to its end (not stopped): how it ended, if that could be
    /// learnt. Unlisted first: once reaped, its pid may belong to another process, which
    /// [`crate::children::kill_all`] must never signal.
    pub fn wait(mut self) -> Option<std::process::ExitStatus> {
        crate::children::unlist(self.0.id());
        self.0.wait().ok()
    }
}

impl Drop for HolderProc {
    fn drop(&mut self) {
        let id = self.0.id();
        if crate::children::listed(id) {
            let _ = self.0.kill();
            let _ = self.0.wait();
            crate::children::unlist(id);
        }
    }
}

pub(super) fn spawn_holder(
    exe: &Path,
    role: &str,
    name: &str,
    lease: &str,
    res: &str,
    fenced: bool,
    records: Option<&Records>,
) -> Result<Child, RealError> {
    let mut cmd = Command::new(exe);
    cmd.args([
        "holder", "--role", role, "--name", name, "--lease", lease, "--res", res,
    ])
    .args(["--fence", if fenced { "scope" } else { "off" }]);
    if let Some(r) = records {
        cmd.arg("--record")
            .arg(r.file(name))
            .args(["--clock-origin-ms", &r.origin_ms.to_string()]);
    }
    spawn_listed(cmd)
}

/// Starts a holder process (`cmd`, its standard input and output piped) in a process group of
/// its own — a Ctrl-C at the terminal reaches the parent alone, which decides what becomes of
/// its holders (killed when it abandons the run: one stopped with SIGSTOP would wait for ever)
/// — listed in the registry of children and the watchdog's script.
fn spawn_listed(mut cmd: Command) -> Result<Child, RealError> {
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped());
    crate::children::spawn(
        &mut cmd,
        crate::children::Reach::Process,
        crate::watchdog::Order::Holder,
    )
    .map_err(|e| match e {
        crate::children::SpawnError::Closed => RealError::Unexpected(e.to_string()),
        crate::children::SpawnError::Io(source) => RealError::Io {
            what: format!("spawn {}", cmd.get_program().to_string_lossy()),
            source,
        },
    })
}

/// A holder process started by [`HolderProc::spawn`], with its pipes.
pub struct Spawned {
    /// The process: killed and reaped when dropped before [`HolderProc::wait`].
    pub proc: HolderProc,
    /// Its standard input (the parent's lines).
    pub stdin: std::process::ChildStdin,
    /// Its standard output (one line per step).
    pub stdout: ChildStdout,
}

pub(super) fn next_line(r: &mut BufReader<ChildStdout>) -> Result<String, RealError> {
    let mut l = String::new();
    let n = r.read_line(&mut l).ctx("read child")?;
    if n == 0 {
        return Err(RealError::Unexpected("child exited early".into()));
    }
    Ok(l.trim_end().to_string())
}
