//! `leaselab judge FILE…`: judges histories recorded from a real deployment (the JSON-lines
//! format of `leaselab-record`, `docs/history-jsonl.md`) with the checkers alone — no model
//! runs, so the verdict is about what the deployment did, whatever its SQL. And
//! `leaselab export TRACE --jsonl`: a trace's history in that format.

use crate::args::Exit;
use leaselab_checkers::check;
use leaselab_model::{Op, Outcome};
use leaselab_record::read::{self, Recorded};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Reads one recorded history; errors name the file, line and field.
pub fn read_recorded(path: &Path) -> Result<Recorded, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    read::parse(&text, &path.display().to_string()).map_err(|e| e.to_string())
}

/// What `judge` prints and how it exits.
pub struct Judged {
    /// The verdicts, file by file.
    pub text: String,
    /// Files that could not be read, one message each (the other files are still judged).
    pub errors: Vec<String>,
    /// 1 if any history broke a check; otherwise 2 if a file could not be read; otherwise 0.
    pub exit: Exit,
}

/// Judges every file; one bad file does not stop the others.
pub fn judge(files: &[PathBuf]) -> Judged {
    let mut text = String::new();
    let mut errors = Vec::new();
    let mut broke = false;
    for path in files {
        let r = match read_recorded(path) {
            Ok(r) => r,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        broke |= judge_one(path, &r, &mut text);
    }
    let exit = if broke {
        Exit::Violation
    } else if errors.is_empty() {
        Exit::Clean
    } else {
        Exit::Usage
    };
    Judged { text, errors, exit }
}

/// Appends one file's verdict; true if a check broke.
fn judge_one(path: &Path, r: &Recorded, out: &mut String) -> bool {
    let file = path.display();
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
        r.lines.iter().map(Vec::len).sum::<usize>(),
    );
    let report = check(h);
    for v in &report.violations {
        let _ = writeln!(out, "  VIOLATION {}: {}", v.check, v.message);
        let at: Vec<String> = v
            .events
            .iter()
            .map(|seq| {
                let lines: Vec<String> = r
                    .lines_of(*seq)
                    .iter()
                    .map(|l| format!("{file}:{l}"))
                    .collect();
                format!("event #{seq} at {}", lines.join(" and "))
            })
            .collect();
        let _ = writeln!(out, "    {}", at.join("; "));
    }
    let verdict = report.verdict();
    if verdict.is_empty() {
        let _ = writeln!(
            out,
            "  verdict: every check holds (I1, I2, I3, acceptance, final)"
        );
    } else {
        let names: Vec<&str> = verdict.iter().map(|c| c.as_str()).collect();
        let _ = writeln!(out, "  verdict: {} broken", names.join(", "));
    }
    !verdict.is_empty()
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
pub fn export_jsonl(path: &Path) -> Result<String, String> {
    let t = crate::picture_cmd::read_trace(path)?;
    Ok(leaselab_record::write::history(&t.history))
}
