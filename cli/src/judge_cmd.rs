//! `leaselab judge FILE…`: judges histories recorded from a real deployment (the JSON-lines
//! format of `leaselab-record`, `docs/history-jsonl.md`) with the checkers alone — no model
//! runs, so the verdict is about what the deployment did, whatever its SQL. And
//! `leaselab export TRACE --jsonl`: a trace's history in that format.

use crate::args::Exit;
use crate::error::CliError;
use leaselab_checkers::check;
use leaselab_model::{Op, Outcome};
use leaselab_record::read::{self, Recorded};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// `leaselab judge`'s arguments.
#[derive(clap::Args, Debug)]
pub struct JudgeArgs {
    /// History files (JSON lines).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// The files are one deployment's processes, each recording its own calls: judge them
    /// as one history, merged by the server's clock (a process in one file only).
    #[arg(long)]
    pub merge: bool,
}

/// `leaselab judge`: the verdicts on stdout, unreadable files on stderr.
pub fn main(a: JudgeArgs) -> Exit {
    let j = judge(&a.files, a.merge);
    print!("{}", j.text);
    for e in &j.errors {
        eprintln!("leaselab judge: {e}");
    }
    j.exit
}

/// `leaselab export`'s arguments.
#[derive(clap::Args, Debug)]
pub struct ExportArgs {
    /// Trace file.
    pub file: PathBuf,
    /// JSON lines (docs/history-jsonl.md), the format `judge` reads.
    #[arg(long, required = true)]
    pub jsonl: bool,
}

/// `leaselab export --jsonl`.
pub fn export_main(a: ExportArgs) -> Exit {
    crate::args::print_or_fail("export", export_jsonl(&a.file))
}

/// Reads one recorded history; errors name the file, line and field.
pub fn read_recorded(path: &Path) -> Result<Recorded, read::ReadError> {
    read::read_file(path)
}

/// What `judge` prints and how it exits.
pub struct Judged {
    /// The verdicts, file by file.
    pub text: String,
    /// Files that could not be read, one message each (the other files are still judged).
    pub errors: Vec<String>,
    /// 1 if any history broke a check; otherwise 2 if a file could not be read; otherwise 6
    /// if a violation is possible; otherwise 0.
    pub exit: Exit,
}

/// Judges every file; one bad file does not stop the others. With `merge`, the files are the
/// records of several processes of one deployment, judged as one history in the order of the
/// server's clock (`leaselab_record::merge`); a file that cannot be read then leaves nothing
/// to judge, since a history without one process's calls would be judged wrongly.
pub fn judge(files: &[PathBuf], merge: bool) -> Judged {
    let mut text = String::new();
    let mut errors = Vec::new();
    let mut broke = false;
    let mut possible = false;
    let mut read = Vec::new();
    for path in files {
        match read_recorded(path) {
            Ok(r) => read.push((path.display().to_string(), r)),
            Err(e) => errors.push(e.to_string()),
        }
    }
    if merge && !errors.is_empty() {
        read.clear();
    }
    if merge && !read.is_empty() {
        let names: Vec<String> = read.iter().map(|(n, _)| n.clone()).collect();
        let parts = read.into_iter().map(|(_, r)| r).collect();
        read = match leaselab_record::merge::merge(parts) {
            Ok(r) => vec![(names.join(" + "), r)],
            Err(e) => {
                errors.push(e.to_string());
                Vec::new()
            }
        };
    }
    let mut events = 0u64;
    for (name, mut r) in read {
        events += r.history.events.len() as u64;
        let again = if merge {
            format!("leaselab judge --merge {}", r.files.join(" "))
        } else {
            format!("leaselab judge {name}")
        };
        let (b, p) = judge_one(&name, &again, &mut r, &mut text);
        broke |= b;
        possible |= p;
    }
    crate::summary::count("files", files.len() as u64);
    crate::summary::count("unreadable", errors.len() as u64);
    crate::summary::count("events", events);
    let exit = if broke {
        Exit::Violation
    } else if !errors.is_empty() {
        Exit::Usage
    } else if possible {
        Exit::Possible
    } else {
        Exit::Clean
    };
    Judged { text, errors, exit }
}

/// How many unknown operations are resolved one by one at most (each costs a judgement of the
/// whole history); the rest are counted and said to be left.
pub const RESOLVE_LIMIT: usize = 200;

/// Events judged again, in all, to resolve unknown operations: what keeps a long history's
/// resolution within a few judgements of it.
pub const RESOLVE_BUDGET_EVENTS: usize = 4_000_000;

/// How many unknown operations a history of `events` events gets resolved.
pub fn resolve_limit(events: usize) -> usize {
    (RESOLVE_BUDGET_EVENTS / events.max(1)).clamp(1, RESOLVE_LIMIT)
}

/// Appends one file's verdict: whether a check broke, and whether one possibly did.
fn judge_one(file: &str, again: &str, r: &mut Recorded, out: &mut String) -> (bool, bool) {
    let report = check(&r.history);
    let events = r.history.events.len();
    let (possible, left) =
        leaselab_checkers::unknown::possible(&mut r.history, &report, resolve_limit(events));
    let r = &*r;
    let h = &r.history;
    let unknown = h
        .events
        .iter()
        .filter(|e| matches!(e.outcome, Outcome::Indeterminate(_)))
        .count();
    let unanswered = unanswered(r);
    let _ = writeln!(
        out,
        "{file}: {} events from {} lines; {unknown} with an unknown outcome, {unanswered} never answered",
        h.events.len(),
        r.lines.iter().map(|l| 1 + usize::from(l[1] != 0)).sum::<usize>(),
    );
    if !r.clock_bounds.is_empty() {
        let b: Vec<String> = r
            .clock_bounds
            .iter()
            .map(|(p, ms)| format!("{p} ±{ms} ms"))
            .collect();
        let _ = writeln!(
            out,
            "  clock bounds: {} (answers taken at the latest server time they allow)",
            b.join(", ")
        );
    }
    let at = |seq: u64| format!("event #{seq} at {}", r.places(seq).join(" and "));
    for v in &report.violations {
        crate::summary::failure(
            &format!("{}: {}", v.check, v.message),
            None,
            Some(again),
            None,
        );
        let _ = writeln!(out, "  VIOLATION {}: {}", v.check, v.message);
        let events: Vec<String> = v.events.iter().map(|s| at(*s)).collect();
        let _ = writeln!(out, "    {}", events.join("; "));
    }
    for p in &possible {
        crate::summary::failure(
            &format!("possibly {}: {}", p.violation.check, p.violation.message),
            None,
            Some(again),
            None,
        );
        let op = h
            .events
            .get(p.decided_by as usize - 1)
            .map_or(String::new(), |e| {
                format!("{}'s {}", e.actor, leaselab_record::write::word(&e.op))
            });
        let _ = writeln!(
            out,
            "  POSSIBLE {} if {op} ({}) {}: {}",
            p.violation.check,
            at(p.decided_by),
            if p.if_applied {
                "took effect"
            } else {
                "did not take effect"
            },
            p.violation.message
        );
        let events: Vec<String> = p.violation.events.iter().map(|s| at(*s)).collect();
        let _ = writeln!(out, "    {}", events.join("; "));
    }
    if left > 0 {
        let _ = writeln!(
            out,
            "  ({left} more operations with an unknown outcome were not resolved one by one)"
        );
    }
    let verdict = report.verdict();
    if verdict.is_empty() && possible.is_empty() {
        let _ = writeln!(
            out,
            "  verdict: every check holds (I1, I2, I3, acceptance, final)"
        );
    } else if verdict.is_empty() {
        let mut names: Vec<&str> = possible
            .iter()
            .map(|p| p.violation.check.as_str())
            .collect();
        names.dedup();
        let _ = writeln!(
            out,
            "  verdict: no check is certainly broken; {} possibly, depending on an unknown outcome",
            names.join(", ")
        );
    } else {
        let names: Vec<&str> = verdict.iter().map(|c| c.as_str()).collect();
        let _ = writeln!(out, "  verdict: {} broken", names.join(", "));
    }
    (!verdict.is_empty(), !possible.is_empty())
}

/// Operations whose invoke never got a completion: still `blocked` at the end.
fn unanswered(r: &Recorded) -> usize {
    let mut open = std::collections::BTreeMap::new();
    for e in &r.history.events {
        match (&e.op, &e.outcome) {
            (Op::Await { .. }, o) if *o != Outcome::Blocked => {
                open.remove(e.conn_str());
            }
            (_, Outcome::Blocked) => {
                open.insert(e.conn_str(), ());
            }
            _ => {}
        }
    }
    open.len()
}

/// `leaselab export TRACE --jsonl`: the trace's history as JSON lines.
pub fn export_jsonl(path: &Path) -> Result<String, CliError> {
    let t = crate::picture_cmd::read_trace(path)?;
    Ok(leaselab_record::write::history(&t.history))
}
