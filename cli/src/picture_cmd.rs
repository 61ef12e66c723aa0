//! `leaselab diagram` and `leaselab explain`: the pictures of a trace file, and the short
//! timeline that `lab`, `sim` and `replay` print on a failure.

use crate::args::{print_or_fail, Exit};
use crate::error::{CliError, FileOp};
use leaselab_checkers::check;
use leaselab_model::{Config, History};
use leaselab_picture::{explain, html, mermaid, timeline, Story};
use leaselab_trace::Trace;
use std::path::{Path, PathBuf};

/// `leaselab diagram`'s arguments.
#[derive(clap::Args, Debug)]
pub struct DiagramArgs {
    /// A trace file or a recorded history (JSON lines); or several recorded histories, one
    /// per process of a deployment, drawn merged by the server's clock.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Print a Mermaid `sequenceDiagram`.
    #[arg(long, conflicts_with = "html")]
    pub mermaid: bool,
    /// Write an HTML page: lanes on a time axis, leases by both clocks, pauses, writes;
    /// a long run cropped to the span around its violating pair.
    #[arg(long, value_name = "OUT.html")]
    pub html: Option<PathBuf>,
    /// With --html: draw the whole run, not the span around the violating pair.
    #[arg(long, requires = "html")]
    pub whole: bool,
}

/// `leaselab diagram`: the form the flags ask for.
pub fn diagram_main(a: DiagramArgs) -> Exit {
    let form = match (a.mermaid, a.html) {
        (true, _) => Form::Mermaid,
        (false, Some(out)) if a.whole => Form::HtmlWhole(out),
        (false, Some(out)) => Form::Html(out),
        (false, None) => Form::Timeline,
    };
    print_or_fail("diagram", diagram(&a.files, &form))
}

/// `leaselab explain`'s arguments.
#[derive(clap::Args, Debug)]
pub struct ExplainArgs {
    /// A trace file or a recorded history; or several recorded histories, merged.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
}

/// `leaselab explain`.
pub fn explain_main(a: ExplainArgs) -> Exit {
    print_or_fail("explain", explain(&a.files))
}

/// The story of a recorded run, judged by the checkers (never by running the model).
pub fn story(history: &History, config: &Config) -> Story {
    Story::new(history, config, &check(history))
}

/// The short timeline of a run, each line indented by `indent`.
pub fn timeline_of(history: &History, config: &Config, indent: &str) -> String {
    indented(&story(history, config), indent)
}

/// The timeline of `story`, each line indented by `indent` (how every command embeds it).
pub fn indented(story: &Story, indent: &str) -> String {
    timeline::render(story)
        .lines()
        .map(|l| format!("{indent}{l}\n"))
        .collect()
}

/// Reads and parses a trace file — or a recorded history in JSON lines (its first character
/// is `{`), judged by the checkers for its `expect`; errors name the file, line and field.
pub fn read_trace(path: &Path) -> Result<Trace, CliError> {
    read_any(path).map(|(t, _)| t)
}

/// One trace or recorded history; or several recorded histories — one deployment's processes,
/// each its own file — merged into one (`leaselab_record::merge`, as `judge --merge` does).
/// With the name of what was recorded, when it was.
fn read_all(paths: &[std::path::PathBuf]) -> Result<(Trace, Option<String>), CliError> {
    let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    match paths {
        [] => Err(CliError::Input(
            "give a trace file or recorded histories".into(),
        )),
        [one] => read_any(one).map(|(t, recorded)| (t, recorded.then(|| names.join("")))),
        many => {
            let mut parts = Vec::new();
            for p in many {
                let (_, recorded) = read_any(p)?;
                if !recorded {
                    return Err(CliError::Input(format!(
                        "{}: a trace; several files are drawn together only as recorded histories (JSON lines), one per process",
                        p.display()
                    )));
                }
                parts.push(leaselab_record::read::read_file_for_merge(p)?);
            }
            let r = leaselab_record::merge::merge(parts)?;
            let title = format!("the recorded histories of {} processes", many.len());
            let t = recorded_trace("merged".into(), title, r.history);
            Ok((t, Some(names.join(" + "))))
        }
    }
}

/// A recorded history as a trace to draw: judged by the checkers for its `expect`.
fn recorded_trace(name: String, title: String, history: History) -> Trace {
    Trace {
        name,
        title,
        seed: 0,
        config: Config::default(),
        spec: None,
        setup: Vec::new(),
        faults: Vec::new(),
        expect: check(&history).verdict(),
        history,
    }
}

/// [`read_trace`], also telling whether the file was a recorded history.
fn read_any(path: &Path) -> Result<(Trace, bool), CliError> {
    let text = std::fs::read_to_string(path).map_err(CliError::file(FileOp::Read, path))?;
    let name = path.display().to_string();
    if text.trim_start().starts_with('{') {
        let r = leaselab_record::read::parse(&text, &name)?;
        let stem = path
            .file_stem()
            .map_or(name.clone(), |s| s.to_string_lossy().into_owned());
        return Ok((
            recorded_trace(stem, "a recorded history".into(), r.history),
            true,
        ));
    }
    Ok((Trace::parse(&text, &name)?, false))
}

/// What `leaselab diagram` draws.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Form {
    /// The terminal timeline.
    Timeline,
    /// A Mermaid `sequenceDiagram` on stdout.
    Mermaid,
    /// A self-contained HTML page written to this file, cropped to the violating pair.
    Html(std::path::PathBuf),
    /// The same page over the whole run.
    HtmlWhole(std::path::PathBuf),
}

fn title(t: &Trace) -> String {
    if t.title.is_empty() {
        t.name.clone()
    } else {
        format!("{}: {}", t.name, t.title)
    }
}

/// `leaselab diagram TRACE [--mermaid | --html OUT]`: the text to print. Several recorded
/// histories are drawn merged.
pub fn diagram(paths: &[std::path::PathBuf], form: &Form) -> Result<String, CliError> {
    let (t, recorded) = read_all(paths)?;
    let mut s = story(&t.history, &t.config);
    if let Some(name) = recorded {
        s.recorded_from(name);
    }
    s.liveness = liveness_note(paths, &t, &s);
    match form {
        Form::Timeline => Ok(timeline::render(&s)),
        Form::Mermaid => Ok(mermaid::render(&s)),
        Form::Html(out) | Form::HtmlWhole(out) => {
            let page = if matches!(form, Form::HtmlWhole(_)) {
                html::render_whole(&s, &title(&t))
            } else {
                html::render(&s, &title(&t))
            };
            std::fs::write(out, page).map_err(CliError::file(FileOp::Write, out))?;
            Ok(format!("wrote {}\n", out.display()))
        }
    }
}

/// A simulation run's liveness, where `paths` is one trace of one and it failed: why, and the
/// writes the resource refused after the faults healed (a fence that refuses every holder's
/// write starves every job, and that is the story of such a run). The checkers judge safety
/// only; the trace's setup says when the faults healed and how long liveness had.
fn liveness_note(paths: &[std::path::PathBuf], t: &Trace, s: &Story) -> Option<String> {
    let [path] = paths else { return None };
    let text = std::fs::read_to_string(path).ok()?;
    let ft = leaselab_sim::Setup::from_trace_text(&text, &path.display().to_string()).ok()?;
    let o = &ft.setup.opts;
    // An audit's holders must finish whole jobs; the simulation's, commit a write.
    let e = if t.spec.is_some() {
        crate::audit_sim::job_liveness_of(&t.history, &ft.setup)
            .err()
            .map(|e| {
                format!(
                    "no holder finished a job (every part written, then the lease released) within {} ms after the faults healed at t={}",
                    e.liveness_ms, e.heal
                )
            })?
    } else {
        let facts = leaselab_checkers::facts::derive(&t.history);
        leaselab_sim::scenario::liveness(&facts, o.heal(), o.liveness_ms)
            .err()?
            .to_string()
    };
    let refused: Vec<String> = s
        .writes
        .iter()
        .filter(|w| w.verdict == leaselab_picture::story::Verdict::Rejected && w.at >= o.heal())
        .map(|w| {
            format!(
                "{}'s {} with token {} at t={} (event #{})",
                w.holder, w.target, w.token, w.at, w.seq
            )
        })
        .collect();
    Some(match refused.as_slice() {
        [] => format!("{e}; no write was refused after the heal"),
        [first, rest @ ..] if rest.len() > 2 => format!(
            "{e}; the resource refused {} writes after the heal, the first {first}, then {} and {} more",
            refused.len(),
            rest[0],
            rest.len() - 1
        ),
        all => format!(
            "{e}; the resource refused every write after the heal: {}",
            all.join("; ")
        ),
    })
}

/// `leaselab explain TRACE`: the run in plain words, then its timeline. Several recorded
/// histories are told merged.
pub fn explain(paths: &[std::path::PathBuf]) -> Result<String, CliError> {
    let (t, recorded) = read_all(paths)?;
    let mut s = story(&t.history, &t.config);
    s.spec = t.spec.clone();
    if let Some(name) = recorded {
        s.recorded_from(name);
    }
    s.liveness = liveness_note(paths, &t, &s);
    Ok(format!(
        "{}\n{}",
        explain::render(&s, &title(&t)),
        timeline::render(&s)
    ))
}
