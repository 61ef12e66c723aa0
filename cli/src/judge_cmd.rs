//! `leaselab judge FILE…`: judges histories recorded from a real deployment (the JSON-lines
//! format of `leaselab-record`, `docs/history-jsonl.md`) with the checkers alone — no model
//! runs, so the verdict is about what the deployment did, whatever its SQL. And
//! `leaselab export TRACE --jsonl`: a trace's history in that format.

use crate::args::Exit;
use crate::error::CliError;
use leaselab_checkers::{check, Check};
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
    for w in &j.warnings {
        eprintln!("leaselab judge: warning: {w}");
    }
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
    /// What the files say that is possible but doubtful, one line each (judged all the same).
    pub warnings: Vec<String>,
    /// 1 if any history broke a check; otherwise 2 if a file could not be read; otherwise 7
    /// if a check is undecided; otherwise 6 if a violation is possible; otherwise 0.
    pub exit: Exit,
}

/// Judges every file; one bad file does not stop the others. With `merge`, the files are the
/// records of several processes of one deployment, judged as one history in the order of the
/// server's clock (`leaselab_record::merge`); a file that cannot be read then leaves nothing
/// to judge, since a history without one process's calls would be judged wrongly.
pub fn judge(files: &[PathBuf], merge: bool) -> Judged {
    let mut text = String::new();
    let mut errors = Vec::new();
    let mut worst = Verdict::Clean;
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
    let warnings: Vec<String> = read.iter().flat_map(|(_, r)| r.warnings.clone()).collect();
    for (name, mut r) in read {
        events += r.history.events.len() as u64;
        let again = if merge {
            format!("leaselab judge --merge {}", r.files.join(" "))
        } else {
            format!("leaselab judge {name}")
        };
        worst = worst.max(judge_one(&name, &again, &mut r, &mut text));
    }
    crate::summary::count("files", files.len() as u64);
    crate::summary::count("unreadable", errors.len() as u64);
    crate::summary::count("events", events);
    let exit = match worst {
        Verdict::Broken => Exit::Violation,
        _ if !errors.is_empty() => Exit::Usage,
        Verdict::Undecided => Exit::Undecided,
        Verdict::Possible => Exit::Possible,
        Verdict::Clean => Exit::Clean,
    };
    Judged {
        text,
        errors,
        warnings,
        exit,
    }
}

/// Appends one file's verdict: whether a check broke, possibly broke, or is undecided.
fn judge_one(file: &str, again: &str, r: &mut Recorded, out: &mut String) -> Verdict {
    let report = check(&r.history);
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
    let op_of = |seq: u64| {
        usize::try_from(seq)
            .ok()
            .and_then(|s| s.checked_sub(1))
            .and_then(|i| h.events.get(i))
            .map_or(String::new(), |e| {
                format!("{}'s {}", e.actor, leaselab_record::write::word(&e.op))
            })
    };
    for s in &report.settled {
        let _ = writeln!(
            out,
            "  SETTLED {} ({}) {}: {}",
            op_of(s.event),
            at(s.event),
            took_effect(s.applied),
            s.message
        );
        let _ = writeln!(out, "    shown by {}", at(s.by));
    }
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
    for p in &report.possible {
        crate::summary::failure(
            &format!("possibly {}: {}", p.violation.check, p.violation.message),
            None,
            Some(again),
            None,
        );
        let conditions: Vec<String> = p
            .conditions
            .iter()
            .map(|c| {
                format!(
                    "{} ({}) {}",
                    op_of(c.event),
                    at(c.event),
                    took_effect(c.applied)
                )
            })
            .collect();
        let _ = writeln!(
            out,
            "  POSSIBLE {} if {}: {}",
            p.violation.check,
            conditions.join(" and "),
            p.violation.message
        );
        let events: Vec<String> = p.violation.events.iter().map(|s| at(*s)).collect();
        let _ = writeln!(out, "    {}", events.join("; "));
    }
    for u in &report.undecided {
        crate::summary::failure(
            &format!("undecided {}: {}", u.check, u.message),
            None,
            Some(again),
            None,
        );
        let _ = writeln!(out, "  UNDECIDED {}: {}", u.check, u.message);
        let unknowns: Vec<String> = u.unknowns.iter().map(|s| format!("#{s}")).collect();
        let _ = writeln!(out, "    unknown operations: {}", unknowns.join(", "));
        let events: Vec<String> = u.events.iter().map(|s| at(*s)).collect();
        let _ = writeln!(out, "    {}", events.join("; "));
    }
    let names = |checks: &mut Vec<Check>| {
        checks.sort();
        checks.dedup();
        checks
            .iter()
            .map(|c| c.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let verdict = report.verdict();
    let mut possible: Vec<Check> = report.possible.iter().map(|p| p.violation.check).collect();
    let mut undecided: Vec<Check> = report.undecided.iter().map(|u| u.check).collect();
    if !verdict.is_empty() {
        let mut v = verdict.clone();
        let _ = writeln!(out, "  verdict: {} broken", names(&mut v));
        return Verdict::Broken;
    }
    if !undecided.is_empty() {
        let _ = writeln!(
            out,
            "  verdict: undecided — {} not decided within the limits{}; no check is certainly broken",
            names(&mut undecided),
            if possible.is_empty() {
                String::new()
            } else {
                format!(", {} possibly broken", names(&mut possible))
            }
        );
        return Verdict::Undecided;
    }
    if !possible.is_empty() {
        let _ = writeln!(
            out,
            "  verdict: no check is certainly broken; {} possibly, depending on an unknown outcome",
            names(&mut possible)
        );
        return Verdict::Possible;
    }
    let _ = writeln!(
        out,
        "  verdict: every check holds (I1, I2, I3, acceptance, final)"
    );
    Verdict::Clean
}

fn took_effect(applied: bool) -> &'static str {
    if applied {
        "took effect"
    } else {
        "did not take effect"
    }
}

/// One file's verdict, from the best to the worst.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    /// Every check holds whatever the unknown operations did.
    Clean,
    /// A check is broken under some outcomes of the unknown operations.
    Possible,
    /// A check could not be decided within the limits.
    Undecided,
    /// A check is broken whatever they did.
    Broken,
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
