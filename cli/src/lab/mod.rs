//! The lab: every case of the README's table as a named, runnable case whose output shows its outcome.
//!
//! Output follows the source's style: `CASE <id> :: <title>`, then `ok`/`FAIL`/`note` lines with
//! `(expected=…, actual=…)`, then `SUMMARY passed=N failed=M`. A negative control passes only
//! when its break is seen *and* the checker that targets it reports it.

mod cases_f;
mod cases_g;
mod cases_x;
pub mod table;

use crate::error::CliError;
use leaselab_checkers::{check, Check, Report};
use leaselab_model::{Backend, Config, FenceMode, Model, World};
use leaselab_pg::PgBackend;
use leaselab_trace::Trace;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

/// The world a case runs in: the model, or PostgreSQL (`--backend pg`).
pub type LabWorld = World<Box<dyn Backend>>;

/// The PostgreSQL backend shared by every case of one lab run (one pair of clusters).
pub struct SharedPg(pub Rc<RefCell<PgBackend>>);

leaselab_model::delegate_backend!(SharedPg, self => self.0.borrow_mut());

impl Backend for SharedPg {
    fn config(&self) -> Config {
        self.0.borrow().config()
    }
}
use std::fmt::Display;

/// One case of the catalogue.
pub struct Case {
    /// `F1` … `G4`.
    pub id: &'static str,
    /// One line.
    pub title: &'static str,
    /// Runs it.
    pub run: fn(&mut Lab),
}

/// Every case of the catalogue (F1–F9, G1–G4), in order.
pub fn cases() -> Vec<Case> {
    let mut v = cases_f::cases();
    v.extend(cases_g::cases());
    v
}

/// The cases beyond the sources (X1…), run with `--beyond` or `--case X…`.
pub fn beyond_cases() -> Vec<Case> {
    cases_x::cases()
}

/// A `String` from a literal, for the expected side of `Lab::expect`.
pub(super) fn s(x: &str) -> String {
    x.to_string()
}

/// A short, comparable rendering of an outcome: `granted token=N` without the expiry, a row as
/// `content by writer token=N`.
pub(super) fn brief(o: &leaselab_model::Outcome) -> String {
    use leaselab_model::Outcome;
    match o {
        Outcome::Granted { token, .. } => format!("granted token={token}"),
        Outcome::Renewed { .. } => "renewed".into(),
        Outcome::Part(Some(r)) | Outcome::Published(Some(r)) => {
            format!("{} by {} token={}", r.content, r.writer, r.token)
        }
        Outcome::Lease(Some(r)) => format!("{} token={}", r.holder, r.token),
        Outcome::Floor(Some(t)) => t.to_string(),
        Outcome::Count(n) => n.to_string(),
        o => o.to_string(),
    }
}

/// One recorded run of a case (a case may run several: both orders, with and without fence).
pub struct RunRecord {
    /// The trace, with the verdict the checkers gave.
    pub trace: Trace,
    /// The checkers' report.
    pub report: Report,
}

/// The real-process experiment (F4/F5 on PostgreSQL): the binary its holder processes run,
/// and where their recorded histories go (`<records>/F4`, `<records>/F5`).
#[derive(Clone, Debug)]
pub struct RealProcs {
    /// The `leaselab` binary (`leaselab holder …`).
    pub exe: std::path::PathBuf,
    /// The directory of the recorded histories.
    pub records: std::path::PathBuf,
}

/// Collects a case's output lines, its failures, its runs, and observations for table 26-1.
#[derive(Default)]
pub struct Lab {
    /// `--fence`: replaces the scope fence in the cases that use it.
    pub fence_override: Option<FenceMode>,
    /// Output lines of the current case.
    pub lines: Vec<String>,
    /// Failed expectations in the current case.
    pub failed: usize,
    /// Runs recorded so far (all cases).
    pub runs: Vec<RunRecord>,
    /// What stale writes actually got, keyed by table row (see [`table`]).
    pub observed: BTreeMap<&'static str, String>,
    /// `--backend pg`: every case's world runs on this PostgreSQL.
    pub pg: Option<Rc<RefCell<PgBackend>>>,
    /// A backend that could not be reset: the run stops with this error.
    pub infra_error: Option<String>,
    /// The real-process experiments on PostgreSQL, when asked for.
    pub real: Option<RealProcs>,
    /// Print the timeline of every run with a stale write or a violation (one case asked for
    /// with `--case`); a failed run always prints its timeline.
    pub pictures: bool,
    /// Negative controls that broke what they target, as they must: `F5 (I3,acceptance,final)`.
    pub controls: Vec<String>,
}

impl Lab {
    /// The configuration for a run whose design uses `base`; the scope fence is the one
    /// `--fence` overrides, so `--case F4 --fence off` becomes F5.
    pub fn config(&self, base: FenceMode) -> Config {
        let fence = match (base, self.fence_override) {
            (FenceMode::Scope, Some(f)) => f,
            (b, _) => b,
        };
        Config::with_fence(fence)
    }

    /// A fresh world for `config` on the lab's backend.
    pub fn world(&mut self, config: Config) -> LabWorld {
        if let Some(pg) = &self.pg {
            match pg.borrow_mut().reset(&config) {
                Ok(()) => return World::with_backend(Box::new(SharedPg(pg.clone()))),
                Err(e) => self.infra_error = Some(format!("PostgreSQL reset failed: {e}")),
            }
        }
        World::with_backend(Box::new(Model::new(config)))
    }

    /// On PostgreSQL: reset to `config` and return the two connection strings (real `now()`).
    pub fn real_pg(&mut self, config: &Config) -> Option<(String, String)> {
        let pg = self.pg.clone()?;
        let mut pg = pg.borrow_mut();
        if let Err(e) = pg.reset(config) {
            self.infra_error = Some(format!("PostgreSQL reset failed: {e}"));
            return None;
        }
        Some((
            pg.conninfo(leaselab_model::DbName::Lease),
            pg.conninfo(leaselab_model::DbName::Res),
        ))
    }

    fn line(&mut self, s: String) {
        self.lines.push(format!("  {s}"));
    }

    /// An expectation with values: `ok` if equal, else `FAIL`.
    pub fn expect<T: PartialEq + Display>(&mut self, label: &str, expected: T, actual: T) -> bool {
        let pass = expected == actual;
        if !pass {
            self.failed += 1;
        }
        let word = if pass { "ok  " } else { "FAIL" };
        self.line(format!(
            "{word} {label} (expected={expected}, actual={actual})"
        ));
        pass
    }

    /// An expectation without values.
    pub fn expect_that(&mut self, label: &str, pass: bool) -> bool {
        if !pass {
            self.failed += 1;
        }
        let word = if pass { "ok  " } else { "FAIL" };
        self.line(format!("{word} {label}"));
        pass
    }

    /// Information that is not itself an expectation.
    pub fn note(&mut self, text: impl Display) {
        self.line(format!("note {text}"));
    }

    /// Runs the checkers on `world`'s history and compares their verdict with `expect`.
    /// For a negative control (`expect` non-empty) it prints what the targeted checkers said:
    /// the control passes only if exactly those checks fire.
    pub fn judge(&mut self, name: &str, title: &str, world: &LabWorld, expect: &[Check]) {
        let report = check(&world.history);
        let mut want: Vec<Check> = expect.to_vec();
        want.sort();
        let got: Vec<Check> = Check::ALL
            .iter()
            .copied()
            .filter(|c| report.violated(*c))
            .collect();
        let names = |v: &[Check]| -> String {
            if v.is_empty() {
                "all hold".into()
            } else {
                Check::list(v)
            }
        };
        if want == got {
            if !want.is_empty() {
                self.controls.push(format!("{name} ({})", names(&want)));
            }
            if want.is_empty() {
                self.line(format!(
                    "ok   [{name}] checkers: I1 I2 I3 acceptance final all hold"
                ));
            } else {
                for c in &want {
                    if let Some(v) = report.of(*c).next() {
                        let msg = v.message.clone();
                        self.line(format!("ok   [{name}] negative control exposes {c}: {msg}"));
                    }
                }
            }
        } else {
            self.failed += 1;
            self.line(format!(
                "FAIL [{name}] checkers (expected={}, actual={})",
                names(&want),
                names(&got)
            ));
            for v in &report.violations {
                self.line(format!("       {v}"));
            }
        }
        // By name: the order this line has always had (a sweep's lines keep report order).
        let mut fired: Vec<String> = report
            .sometimes
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(k, n)| format!("{k}={n}"))
            .collect();
        fired.sort();
        if !fired.is_empty() {
            self.note(format!("[{name}] sometimes: {}", fired.join(" ")));
        }
        let story = leaselab_picture::Story::new(&world.history, &world.model.config(), &report);
        // A violation, a stale write, a check passed after expiry (G3), or a statement that
        // waited for a lock (F6b's lesson).
        let telling = !story.violations.is_empty()
            || story.writes.iter().any(|w| w.stale)
            || story.believed_after_expiry()
            || story
                .moments
                .iter()
                .any(|m| matches!(m.mark, leaselab_picture::story::Mark::Waits(_)));
        if want != got || (self.pictures && telling) {
            self.line(format!("timeline [{name}]:"));
            for l in leaselab_picture::timeline::render(&story).lines() {
                self.line(format!("  {l}"));
            }
        }
        let mut trace = Trace::new(name, world.model.config(), world.history.clone());
        trace.title = title.to_string();
        trace.expect = report.verdict();
        self.runs.push(RunRecord { trace, report });
    }
}

/// Result of running a selection of cases.
pub struct LabResult {
    /// Printed text.
    pub text: String,
    /// Cases that passed.
    pub passed: usize,
    /// Cases that failed.
    pub failed: usize,
    /// All runs, for `--trace-out`.
    pub runs: Vec<RunRecord>,
    /// Observations for `--table`.
    pub observed: BTreeMap<&'static str, String>,
    /// Ctrl-C or SIGTERM stopped the lab before every selected case ran.
    pub interrupted: bool,
}

/// Runs the catalogue cases whose id is in `only` (all when `None`) on the model.
pub fn run(only: Option<&str>, fence_override: Option<FenceMode>) -> Result<LabResult, CliError> {
    run_select(only, false, fence_override, None, None)
}

/// The full entry point. `beyond` adds the X cases to a run of all cases (`--case X1` always
/// finds them); `pg` runs every case on PostgreSQL, and with `real` F4 and F5 also run as
/// two real processes, whose own records are then judged.
pub fn run_select(
    only: Option<&str>,
    beyond: bool,
    fence_override: Option<FenceMode>,
    pg: Option<PgBackend>,
    real: Option<RealProcs>,
) -> Result<LabResult, CliError> {
    let mut all = cases();
    if beyond || only.is_some() {
        all.extend(beyond_cases());
    }
    let selected: Vec<&Case> = match only {
        None => all.iter().collect(),
        Some(id) => {
            let c: Vec<&Case> = all
                .iter()
                .filter(|c| c.id.eq_ignore_ascii_case(id))
                .collect();
            if c.is_empty() {
                let ids: Vec<&str> = all.iter().map(|c| c.id).collect();
                return Err(CliError::Input(format!(
                    "unknown case `{id}`; known cases: {}",
                    ids.join(" ")
                )));
            }
            c
        }
    };
    let mut lab = Lab {
        fence_override,
        pg: pg.map(|p| Rc::new(RefCell::new(p))),
        real,
        pictures: only.is_some(),
        controls: Vec::new(),
        ..Lab::default()
    };
    let mut text = String::new();
    let (mut passed, mut failed) = (0, 0);
    let total = selected.len();
    for case in selected {
        // Ctrl-C or SIGTERM: the running case finished; the rest are not started.
        if crate::interrupt::requested() {
            break;
        }
        lab.lines.clear();
        lab.failed = 0;
        (case.run)(&mut lab);
        if let Some(e) = lab.infra_error.take() {
            return Err(CliError::CaseCouldNotRun {
                case: case.id.to_string(),
                why: e,
            });
        }
        text.push_str(&format!("CASE {} :: {}\n", case.id, case.title));
        for l in &lab.lines {
            text.push_str(l);
            text.push('\n');
        }
        if lab.failed == 0 {
            passed += 1;
        } else {
            failed += 1;
        }
        text.push('\n');
    }
    let not_run = total - passed - failed;
    let interrupted = not_run > 0;
    if interrupted {
        text.push_str(&format!(
            "SUMMARY passed={passed} failed={failed} interrupted: {not_run} of {total} cases not run\n"
        ));
    } else {
        text.push_str(&format!("SUMMARY passed={passed} failed={failed}\n"));
    }
    if !lab.controls.is_empty() {
        text.push_str(&format!(
            "({} negative control{} broke what {} target{}, as {} must — so {} passed: {})\n",
            lab.controls.len(),
            if lab.controls.len() == 1 { "" } else { "s" },
            if lab.controls.len() == 1 {
                "it"
            } else {
                "they"
            },
            if lab.controls.len() == 1 { "s" } else { "" },
            if lab.controls.len() == 1 {
                "it"
            } else {
                "they"
            },
            if lab.controls.len() == 1 {
                "it"
            } else {
                "they"
            },
            lab.controls.join(", ")
        ));
    }
    Ok(LabResult {
        text,
        passed,
        failed,
        runs: lab.runs,
        observed: lab.observed,
        interrupted,
    })
}
