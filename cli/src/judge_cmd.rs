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
/// to judge, since a history without one process's calls would be judged wrongly. Without it,
/// each file is judged as it is read, never held whole ([`leaselab_checkers::Judging`]).
pub fn judge(files: &[PathBuf], merge: bool) -> Judged {
    let mut text = String::new();
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    let mut worst = Verdict::Clean;
    let mut events = 0u64;
    if merge {
        let mut read = Vec::new();
        for path in files {
            match read::read_file_for_merge(path) {
                Ok(r) => read.push(r),
                Err(e) => errors.push(e.to_string()),
            }
        }
        if errors.is_empty() && !read.is_empty() {
            match leaselab_record::merge::merge(read) {
                Ok(r) => {
                    warnings.extend(r.warnings.iter().cloned());
                    let report = check(&r.history);
                    let seen = Seen::of(&r);
                    events += seen.events;
                    let again = format!("leaselab judge --merge {}", r.files.join(" "));
                    let name = r.files.join(" + ");
                    worst = worst.max(judge_one(&name, &again, &seen, &report, &mut text));
                }
                Err(e) => errors.push(e.to_string()),
            }
        }
    } else {
        for path in files {
            match judge_streamed(path) {
                Ok((seen, report, w)) => {
                    warnings.extend(w);
                    events += seen.events;
                    let name = path.display().to_string();
                    let again = format!("leaselab judge {name}");
                    worst = worst.max(judge_one(&name, &again, &seen, &report, &mut text));
                }
                Err(e) => errors.push(e.to_string()),
            }
        }
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

/// What a verdict's text needs of the history besides the report: where each event was read,
/// who issued the operations a verdict can name, and a few counts. For a streamed file this is
/// all that is kept of its events.
#[derive(Default)]
struct Seen {
    events: u64,
    lines: u64,
    /// Per event: its invoke's and its completion's line (0: none), as read.
    at: Vec<[u32; 2]>,
    /// Per event, the index of its file in `files` (empty: all from the first).
    file_of: Vec<u32>,
    files: Vec<String>,
    clock_bounds: std::collections::BTreeMap<String, u64>,
    /// Who issued each operation whose outcome is unknown, and what it was: the only events a
    /// condition or a settled outcome names.
    unknown_ops: std::collections::BTreeMap<u64, (leaselab_model::Holder, &'static str)>,
    /// Answers `indeterminate`.
    indeterminate: usize,
    /// Connections whose last statement is still waiting at the end.
    open: std::collections::BTreeSet<String>,
}

impl Seen {
    fn event(&mut self, e: &leaselab_model::Event, lines: [usize; 2]) {
        self.events += 1;
        self.lines += 1 + u64::from(lines[1] != 0);
        let narrow = |l: usize| u32::try_from(l).unwrap_or(u32::MAX);
        self.at.push([narrow(lines[0]), narrow(lines[1])]);
        match (&e.op, &e.outcome) {
            (Op::Await { .. }, o) if *o != Outcome::Blocked => {
                self.open.remove(e.conn_str());
            }
            (_, Outcome::Blocked) => {
                self.open.insert(e.conn_str().to_string());
            }
            _ => {}
        }
        if matches!(e.outcome, Outcome::Indeterminate(_)) {
            self.indeterminate += 1;
        }
        if matches!(e.outcome, Outcome::Indeterminate(_) | Outcome::Blocked) {
            self.unknown_ops.insert(
                e.seq,
                (e.actor.clone(), leaselab_record::write::word(&e.op)),
            );
        }
    }

    fn of(r: &Recorded) -> Seen {
        let mut s = Seen {
            files: r.files.clone(),
            file_of: r.file_of.clone(),
            clock_bounds: r.clock_bounds.clone(),
            ..Seen::default()
        };
        for (e, l) in r.history.events.iter().zip(&r.lines) {
            s.event(e, *l);
        }
        s
    }

    /// `file:line` of event `seq`'s invoke and of its completion.
    fn places(&self, seq: u64) -> Vec<String> {
        let i = usize::try_from(seq).ok().and_then(|s| s.checked_sub(1));
        let file = i
            .map(|i| self.file_of.get(i).copied().unwrap_or(0))
            .and_then(|f| self.files.get(f as usize))
            .map_or("?", String::as_str);
        let Some(l) = i.and_then(|i| self.at.get(i)) else {
            return Vec::new();
        };
        let lines = if l[1] == 0 { &l[..1] } else { &l[..] };
        lines.iter().map(|l| format!("{file}:{l}")).collect()
    }
}

/// Reads and judges one file as a stream.
fn judge_streamed(
    path: &Path,
) -> Result<(Seen, leaselab_checkers::Report, Vec<String>), read::ReadError> {
    let mut seen = Seen {
        files: vec![path.display().to_string()],
        ..Seen::default()
    };
    let mut judging = leaselab_checkers::Judging::default();
    let meta = read::stream_file(path, &mut |e, lines| {
        seen.event(&e, lines);
        judging.push(&e);
    })?;
    seen.clock_bounds = meta.clock_bounds;
    Ok((seen, judging.finish(), meta.warnings))
}

/// Appends one file's verdict: whether a check broke, possibly broke, or is undecided.
fn judge_one(
    file: &str,
    again: &str,
    r: &Seen,
    report: &leaselab_checkers::Report,
    out: &mut String,
) -> Verdict {
    let _ = writeln!(
        out,
        "{file}: {} events from {} lines; {} with an unknown outcome, {} never answered",
        r.events,
        r.lines,
        r.indeterminate,
        r.open.len(),
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
        r.unknown_ops
            .get(&seq)
            .map_or(String::new(), |(actor, word)| format!("{actor}'s {word}"))
    };
    for s in &report.settled {
        // A write answered `fail` is no unknown operation: its message names it.
        let who = match op_of(s.event) {
            w if w.is_empty() => at(s.event),
            w => format!("{w} ({})", at(s.event)),
        };
        let _ = writeln!(
            out,
            "  SETTLED {who} {}: {}",
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

/// `leaselab export TRACE --jsonl`: the trace's history as JSON lines.
pub fn export_jsonl(path: &Path) -> Result<String, CliError> {
    let t = crate::picture_cmd::read_trace(path)?;
    Ok(leaselab_record::write::history(&t.history))
}
