//! `--json FILE`: one JSON object that says how a run ended, for CI and other programs — the
//! verdict and exit status, the counts the summary line prints, every failure with its trace
//! and the command that reproduces it, and where to resume. The human output is unchanged; the
//! commands note what they print here as they print it. The schema is `docs/json-summary.md`.

use crate::args::Exit;
use crate::error::{CliError, FileOp};
use serde_json::{json, Map, Value};
use std::path::Path;
use std::sync::Mutex;

/// The format's name, in every summary.
pub const FORMAT: &str = "leaselab-summary";
/// The schema version.
pub const VERSION: u64 = 1;

struct Noted {
    /// Where to write it, and the command's words (`--json FILE`).
    to: Option<(std::path::PathBuf, Vec<String>)>,
    /// In the order first noted (an object's keys come out in that order).
    counts: Vec<(String, u64)>,
    failures: Vec<Value>,
    resume: Option<String>,
    /// The verdict of the run a describing command shows, where it differs from its exit's.
    described: Option<&'static str>,
}

static NOTED: Mutex<Noted> = Mutex::new(Noted {
    to: None,
    counts: Vec::new(),
    failures: Vec::new(),
    resume: None,
    described: None,
});

fn with(f: impl FnOnce(&mut Noted)) {
    let mut n = match NOTED.lock() {
        Ok(n) => n,
        Err(poisoned) => poisoned.into_inner(),
    };
    f(&mut n);
}

/// A figure of the summary line (`schedules`, `steps`, `seeds`, …).
pub fn count(name: &str, n: u64) {
    with(|s| match s.counts.iter_mut().find(|(k, _)| k == name) {
        Some((_, v)) => *v = n,
        None => s.counts.push((name.to_string(), n)),
    });
}

/// One failure: what broke, its trace file and the command that reproduces it, where there
/// are; the seed, for a simulation run.
pub fn failure(what: &str, trace: Option<&Path>, reproduce: Option<&str>, seed: Option<u64>) {
    with(|s| {
        s.failures.push(json!({
            "what": what,
            "trace": trace.map(|p| p.display().to_string()),
            "reproduce": reproduce,
            "seed": seed,
        }))
    });
}

/// A command that describes runs (`envelope`; it exits 0 whatever they did) says what they
/// found: the summary's `verdict` is that word (`violation`: a stale write got through), not
/// its exit status's.
pub fn described(verdict: &'static str) {
    with(|s| s.described = Some(verdict));
}

/// The command that goes on from where the run stopped.
pub fn resume(command: &str) {
    with(|s| s.resume = Some(command.to_string()));
}

/// The word for an exit status.
pub fn verdict(exit: Exit) -> &'static str {
    match exit {
        Exit::Clean => "clean",
        Exit::Violation => "violation",
        Exit::Usage => "error",
        Exit::Liveness => "liveness",
        Exit::Divergence => "divergence",
        Exit::Interrupted => "interrupted",
        Exit::Possible => "possible",
        Exit::Undecided => "undecided",
    }
}

/// The summary object of a run of `command` (its words, e.g. `["diff", "--gen", "5"]`).
pub fn object(command: &[String], exit: Exit) -> Value {
    let mut out = Value::Null;
    with(|s| {
        let counts: Map<String, Value> = s
            .counts
            .iter()
            .map(|(k, v)| (k.clone(), json!(v)))
            .collect();
        out = json!({
            "format": FORMAT,
            "version": VERSION,
            "command": command,
            "verdict": s.described.unwrap_or(verdict(exit)),
            "exit": exit as u8,
            "counts": Value::Object(counts),
            "failures": s.failures.clone(),
            "resume": s.resume,
        });
    });
    out
}

/// Asks for the summary of this run of `command` to be written to `path` when it ends.
pub fn write_to(path: &Path, command: Vec<String>) {
    with(|s| s.to = Some((path.to_path_buf(), command)));
}

/// Writes the summary (one line) where [`write_to`] said, if it did: at the end of a run, or
/// from the signal handler before an interrupted command exits.
pub fn finish(exit: Exit) -> Result<(), CliError> {
    let mut to = None;
    with(|s| to = s.to.take());
    let Some((path, command)) = to else {
        return Ok(());
    };
    let text = format!("{}\n", object(&command, exit));
    std::fs::write(&path, text).map_err(CliError::file(FileOp::Write, &path))
}
