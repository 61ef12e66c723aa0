//! Whatever ends this process — a return from `main`, a panic, a signal's default action,
//! SIGKILL from a test harness or a CI timeout — the servers, helper programs and holder
//! processes it started end within seconds, and their folders are removed.
//!
//! How: the first time this process starts something that must not outlive it, it starts a
//! watchdog — a small `sh` in a process group of its own (neither a terminal's Ctrl-C nor a
//! kill of this process's group reaches it; it also ignores SIGINT, SIGTERM, SIGHUP and
//! SIGQUIT) — whose standard input is a pipe that only this process writes to. The pipe's
//! write end is close-on-exec, so no child holds it: when this process ends, however it ends,
//! the kernel closes it, the watchdog reads the end of the file, runs the cleanup script this
//! process kept up to date (one line per holder: `kill -KILL`; per helper program: a kill of
//! its process group; per server: `pg_ctl stop -m immediate`, then its folder removed), and
//! deletes the script. A process that ends normally has stopped everything itself: what is left
//! in the script then are only the `rmdir`s of the folders it made to hold clusters.
//! `docs/design.md` says why not `PR_SET_PDEATHSIG`.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Mutex;

/// The watchdog of this process, once started: the pipe it waits on, its cleanup script, and
/// what the script does now, by entry.
struct Watch {
    /// Never written to: its closing (at this process's end) is the message.
    _pipe: std::process::ChildStdin,
    script: PathBuf,
    /// Each entry's shell command, in the order the script runs them: holders (killed) before
    /// helpers before servers (whose folders the helpers may be writing) before the folders
    /// that held them.
    entries: BTreeMap<(Order, u64), String>,
    next: u64,
}

/// What an entry stops; the script runs them in this order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Order {
    /// A holder process (`kill -KILL`).
    Holder,
    /// A helper program's process group (`initdb`, `pg_ctl`).
    Helper,
    /// A server and its folder.
    Server,
    /// A folder this process made to hold servers' folders (`rmdir`: removed only once
    /// empty), run at every end of the process, however it ends.
    Folder,
}

static WATCH: Mutex<Option<Watch>> = Mutex::new(None);

fn watch() -> std::sync::MutexGuard<'static, Option<Watch>> {
    WATCH
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The last line of every script written: a script that ends with it was written whole.
const END: &str = "# end";

/// The watchdog's own program: wait for the end of the pipe, run the script, delete it. A
/// process killed while it rewrote its script leaves the new version beside the old one: that
/// one is run if it was written whole (it ends with [`END`]; it is written in one call), since
/// the entry it adds (a holder just started) is in no other; otherwise the old one.
fn program() -> String {
    format!(
        r#"trap '' INT TERM HUP QUIT; cat >/dev/null; if [ "$(tail -n 1 "$1.new" 2>/dev/null)" = {end} ]; then sh "$1.new"; elif [ -f "$1" ]; then sh "$1"; fi; rm -f "$1" "$1.new""#,
        end = quote(END)
    )
}

/// `s` quoted for `sh`.
pub fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

fn start() -> std::io::Result<Watch> {
    use std::os::unix::process::CommandExt;
    let script = std::env::temp_dir().join(format!("leaselab-watchdog-{}.sh", std::process::id()));
    // std makes the pipe close-on-exec on this side: no later child inherits the write end.
    let mut child = std::process::Command::new("sh")
        .arg("-c")
        .arg(program())
        .arg("leaselab-watchdog")
        .arg(&script)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn()?;
    let pipe = child
        .stdin
        .take()
        .ok_or_else(|| std::io::Error::other("the watchdog has no standard input"))?;
    Ok(Watch {
        _pipe: pipe,
        script,
        entries: BTreeMap::new(),
        next: 0,
    })
}

impl Watch {
    /// Writes the script whole and renames it into place: the watchdog never runs half of it.
    fn write(&self) -> std::io::Result<()> {
        let tmp = self.script.with_extension("sh.new");
        let mut text = String::new();
        for cmd in self.entries.values() {
            text.push_str(cmd);
            text.push('\n');
        }
        text.push_str(END);
        text.push('\n');
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(text.as_bytes())?;
        std::fs::rename(&tmp, &self.script)
    }
}

/// An entry of the cleanup script; [`forget`] it once what it stops has stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry((Order, u64));

/// Adds `cmd` (a shell command) to what runs if this process ends before it [`forget`]s it.
/// `None` when no watchdog can run here (no `sh`, no temporary folder): then nothing outlives
/// a clean end, as before, and a killed process leaves what it left before.
pub fn guard(order: Order, cmd: String) -> Option<Entry> {
    let mut w = watch();
    if w.is_none() {
        *w = start().ok();
    }
    let w = w.as_mut()?;
    let key = (order, w.next);
    w.next += 1;
    w.entries.insert(key, cmd);
    w.write().ok()?;
    Some(Entry(key))
}

/// Removes an entry: what it stops has stopped.
pub fn forget(entry: Entry) {
    if let Some(w) = watch().as_mut() {
        if w.entries.remove(&entry.0).is_some() {
            let _ = w.write();
        }
    }
}

/// The cleanup script's path, if a watchdog runs (for tests).
pub fn script() -> Option<PathBuf> {
    watch().as_ref().map(|w| w.script.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the watchdog's program on `script` with its pipe already closed (its owner gone).
    fn run_watchdog(script: &std::path::Path) {
        let st = std::process::Command::new("sh")
            .arg("-c")
            .arg(program())
            .arg("leaselab-watchdog")
            .arg(script)
            .stdin(std::process::Stdio::null())
            .status()
            .expect("sh runs");
        assert!(st.success());
    }

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "leaselab-watchdog-test-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("scratch");
        d
    }

    /// A script that touches `marker`, written whole.
    fn touching(marker: &std::path::Path) -> String {
        format!("touch {}\n{END}\n", quote(&marker.to_string_lossy()))
    }

    #[test]
    fn the_script_runs_once_its_owner_is_gone_and_is_deleted() {
        let d = scratch("plain");
        let script = d.join("w.sh");
        std::fs::write(&script, touching(&d.join("old"))).expect("write");
        run_watchdog(&script);
        assert!(d.join("old").exists());
        assert!(!script.exists());
        let _ = std::fs::remove_dir_all(&d);
    }

    /// An old script and, beside it, the new version `new` a killed owner left: which of the
    /// two ran (old, new). Neither file is left.
    fn after_a_kill_mid_rewrite(
        name: &str,
        new: impl Fn(&std::path::Path) -> String,
    ) -> (bool, bool) {
        let d = scratch(name);
        let script = d.join("w.sh");
        std::fs::write(&script, touching(&d.join("old"))).expect("write");
        std::fs::write(d.join("w.sh.new"), new(&d.join("new"))).expect("write");
        run_watchdog(&script);
        let ran = (d.join("old").exists(), d.join("new").exists());
        assert!(!script.exists() && !d.join("w.sh.new").exists());
        let _ = std::fs::remove_dir_all(&d);
        ran
    }

    /// Killed while rewriting its script after the new version was written whole: the new
    /// one runs (its newest entry is in no other).
    #[test]
    fn a_new_script_written_whole_runs_instead_of_the_old() {
        assert_eq!(after_a_kill_mid_rewrite("whole", touching), (false, true));
    }

    /// Killed before the new version was written whole (no end line): the old one runs, and
    /// no line of the partial one (a truncated pid could name another process).
    #[test]
    fn a_partial_new_script_is_not_run() {
        let partial = |marker: &std::path::Path| {
            let whole = touching(marker);
            whole[..whole.len() - END.len() - 1].to_string()
        };
        assert_eq!(after_a_kill_mid_rewrite("partial", partial), (true, false));
    }

    /// What the process writes is what the watchdog takes as whole.
    #[test]
    fn every_script_written_ends_with_the_end_line() {
        let d = scratch("written");
        let mut cat = std::process::Command::new("cat")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("cat");
        let w = Watch {
            _pipe: cat.stdin.take().expect("stdin"),
            script: d.join("w.sh"),
            entries: BTreeMap::from([((Order::Holder, 0), "true".to_string())]),
            next: 1,
        };
        w.write().expect("written");
        drop(w);
        let _ = cat.wait();
        let text = std::fs::read_to_string(d.join("w.sh")).expect("read");
        assert_eq!(text, format!("true\n{END}\n"));
        let _ = std::fs::remove_dir_all(&d);
    }
}
