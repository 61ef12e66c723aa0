//! The differential mode: one trace, replayed step by step against the model and against
//! PostgreSQL; every step's outcome is compared, then the final committed state (lease rows,
//! floors, parts, publishes, the attempt log — not `written_at`). The first divergence is
//! reported with both sides.

use crate::adapter::{PgBackend, PgError};
use leaselab_gen::{Client, Schedule};
use leaselab_model::allowed::Allowed;
use leaselab_model::model::{Snapshot, WrongRule};
use leaselab_model::{apply_event, Config, Event, History, Model, Outcome, World};
use leaselab_trace::compare::{Comparison, Divergence, Sides};
use leaselab_trace::{event_line, Trace};

/// Replays `trace` on both sides. `model_config` replaces the trace's configuration on the
/// model side only — how a deliberately wrong model rule is shown to be caught.
pub fn diff(
    pg: &mut PgBackend,
    trace: &Trace,
    model_config: Option<&Config>,
) -> Result<Comparison, PgError> {
    diff_with_rule(pg, trace, model_config, None)
}

/// [`diff`] with, in addition, a deliberately wrong rule on the model side: how a divergence
/// found by `diff --gen --wrong-rule` is reproduced from its trace.
pub fn diff_with_rule(
    pg: &mut PgBackend,
    trace: &Trace,
    model_config: Option<&Config>,
    wrong: Option<WrongRule>,
) -> Result<Comparison, PgError> {
    let cfg = model_config.unwrap_or(&trace.config);
    let mut model = Model::new(cfg.clone());
    if let Some(r) = wrong {
        model = model.with_wrong_rule(r);
    }
    let mut run = Lockstep::start(pg, &trace.config, model)?;
    for e in &trace.history.events {
        if run.step(pg, e).is_err() {
            break;
        }
    }
    run.finish(pg)
}

/// One run on both sides at once: every step is executed on PostgreSQL and compared with every
/// outcome the model allows there ([`Allowed`]).
struct Lockstep {
    worlds: Allowed,
    report: Comparison,
    /// The steps with PostgreSQL's outcomes.
    history: History,
}

impl Lockstep {
    fn start(pg: &mut PgBackend, config: &Config, model: Model) -> Result<Self, PgError> {
        pg.reset(config)?;
        Ok(Lockstep {
            worlds: Allowed::new(World::with_backend(model)),
            report: Comparison::new(Sides::DIFF),
            history: History::default(),
        })
    }

    /// Runs `e` on both sides; `Err` with PostgreSQL's outcome at the first divergence.
    fn step(&mut self, pg: &mut PgBackend, e: &Event) -> Result<Outcome, Outcome> {
        let t0 = std::time::Instant::now();
        let got = apply_event(pg, e);
        if std::env::var_os("LEASELAB_DEBUG_STEPS").is_some() {
            eprintln!(
                "{:>8.1}ms {} => {}",
                t0.elapsed().as_secs_f64() * 1e3,
                event_line(e),
                got
            );
        }
        self.report.steps += 1;
        let mut recorded = e.clone();
        recorded.outcome = got.clone();
        self.history.events.push(recorded);
        match self.worlds.step(e, |m| *m == got) {
            Ok(_) => Ok(got),
            Err(allowed) => {
                self.report.divergences.push(Divergence {
                    seq: e.seq,
                    line: event_line(e),
                    reference: got.clone(),
                    candidate: allowed.into_iter().next().unwrap_or(Outcome::Ok),
                });
                Err(got)
            }
        }
    }

    /// Compares the final committed state (when every step agreed): equal to any allowed world.
    fn finish(mut self, pg: &mut PgBackend) -> Result<Comparison, PgError> {
        if self.report.divergences.is_empty() {
            let p = pg.snapshot()?;
            let mut best: Option<Vec<String>> = None;
            for w in self.worlds.worlds() {
                let d = state_differences(&w.model.snapshot(), &p);
                if d.is_empty() || best.is_none() {
                    best = Some(d.clone());
                }
                if d.is_empty() {
                    break;
                }
            }
            self.report.final_state = Some(best.unwrap_or_default());
        }
        Ok(self.report)
    }
}

/// A generated schedule run on both sides.
pub struct ScheduleRun {
    /// The comparison.
    pub report: Comparison,
    /// What ran, with PostgreSQL's outcomes (up to and including a diverging step): written as
    /// a trace, it reproduces the run with `leaselab diff FILE`.
    pub history: History,
    /// The configuration.
    pub config: Config,
    /// What the first allowed model world committed ([`Model::ledger`]): the checkers' facts
    /// of `history` must equal it.
    pub ledger: Vec<leaselab_model::model::LedgerEntry>,
}

/// Runs a generated schedule step by step on PostgreSQL and the model; the client turns each
/// intent into an operation from PostgreSQL's answers so far. `wrong` switches on a
/// deliberately wrong rule on the model side (the generator's negative controls).
pub fn diff_schedule(
    pg: &mut PgBackend,
    schedule: &Schedule,
    wrong: Option<WrongRule>,
) -> Result<ScheduleRun, PgError> {
    let mut model = Model::new(schedule.config.clone());
    if let Some(r) = wrong {
        model = model.with_wrong_rule(r);
    }
    let mut run = Lockstep::start(pg, &schedule.config, model)?;
    let mut client = Client::new(schedule.actors);
    for intent in &schedule.intents {
        let Some(e) = client.event(intent) else {
            continue;
        };
        match run.step(pg, &e) {
            Ok(got) => client.observe(&e, &got),
            Err(_) => break,
        }
    }
    let history = run.history.clone();
    let ledger = run.worlds.first().model.ledger();
    Ok(ScheduleRun {
        report: run.finish(pg)?,
        history,
        config: schedule.config.clone(),
        ledger,
    })
}

/// Where the model's committed state and PostgreSQL's differ, one line per table.
/// Where the final states differ, table by table, each row in the trace format's words
/// (`scope=daily-report max_token=2`), never Rust's `Debug`.
fn state_differences(m: &Snapshot, p: &Snapshot) -> Vec<String> {
    use leaselab_model::text::kv;
    fn differs<T: PartialEq>(
        out: &mut Vec<String>,
        what: &str,
        m: &[T],
        p: &[T],
        row: impl Fn(&T) -> String,
    ) {
        if m != p {
            let rows = |v: &[T]| -> String {
                let r: Vec<String> = v.iter().map(|x| row(x).trim_start().to_string()).collect();
                format!("[{}]", r.join("; "))
            };
            out.push(format!("{what}: model {}, postgres {}", rows(m), rows(p)));
        }
    }
    let mut out = Vec::new();
    differs(&mut out, "lease rows", &m.leases, &p.leases, |(name, r)| {
        let mut s = String::new();
        kv(&mut s, "lease", name);
        kv(&mut s, "holder", &r.holder);
        kv(&mut s, "token", r.token);
        kv(&mut s, "expires", r.expires_at);
        s
    });
    differs(&mut out, "floors", &m.floors, &p.floors, |(scope, t)| {
        let mut s = String::new();
        kv(&mut s, "scope", scope);
        kv(&mut s, "max_token", t);
        s
    });
    let part = |s: &mut String, r: &leaselab_model::PartRow| {
        kv(s, "content", &r.content);
        kv(s, "writer", &r.writer);
        kv(s, "token", r.token);
    };
    differs(&mut out, "parts", &m.parts, &p.parts, |(scope, name, r)| {
        let mut s = String::new();
        kv(&mut s, "scope", scope);
        kv(&mut s, "part", name);
        part(&mut s, r);
        s
    });
    differs(
        &mut out,
        "publishes",
        &m.publishes,
        &p.publishes,
        |(key, r)| {
            let mut s = String::new();
            kv(&mut s, "key", key);
            part(&mut s, r);
            s
        },
    );
    differs(&mut out, "attempt log", &m.attempts, &p.attempts, |a| {
        let mut s = String::new();
        kv(&mut s, "scope", &a.scope);
        kv(&mut s, "part", &a.part);
        kv(&mut s, "writer", &a.writer);
        kv(&mut s, "token", a.token);
        kv(&mut s, "outcome", a.outcome.as_str());
        s
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use leaselab_model::{Scope, Token};

    #[test]
    fn a_final_state_difference_is_reported_by_table() {
        let mut w = World::new(Config::default());
        w.run("holder-a", leaselab_model::Op::acquire("holder-a", 100));
        w.run("holder-a", leaselab_model::Op::write("summary", "x", 1));
        let m = w.model.snapshot();
        assert!(m.floors.len() == 1 && m.parts.len() == 1, "{m:?}");
        assert!(state_differences(&m, &m.clone()).is_empty());
        let mut p = m.clone();
        p.floors = vec![(Scope::new("daily-report"), Token(7))];
        let d = state_differences(&m, &p);
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(
            d[0],
            "floors: model [scope=daily-report max_token=1], postgres [scope=daily-report max_token=7]"
        );
    }
}

/// A generated schedule's run that diverged: what its trace needs, kept as it was.
#[derive(Clone, Debug)]
pub struct Diverged {
    /// What ran, with PostgreSQL's outcomes.
    pub history: History,
    /// The configuration.
    pub config: Config,
    /// What diverged (the comparison's description, or the facts' disagreement).
    pub what: String,
}

/// One schedule of a `diff --gen` search: run on PostgreSQL and the model (with `wrong`), and
/// judged — a divergence, or the checkers' facts of PostgreSQL's history against what the model
/// committed.
pub fn judge_schedule(
    pg: &mut PgBackend,
    schedule: &Schedule,
    wrong: Option<WrongRule>,
) -> Result<leaselab_gen::search::Case<Diverged>, PgError> {
    use leaselab_gen::search::{Case, Verdict};
    let r = diff_schedule(pg, schedule, wrong)?;
    let steps = r.report.steps as u64;
    let case = |what: Option<String>| Case {
        steps,
        tally: Vec::new(),
        verdict: match what {
            Some(what) => Verdict::Fail(Diverged {
                history: r.history.clone(),
                config: r.config.clone(),
                what,
            }),
            None => Verdict::Pass,
        },
    };
    if !r.report.ok() {
        // A negative control looks for a divergence the wrong rule makes whatever PostgreSQL's
        // timing: one at or after a step the right model says PostgreSQL's timing may decide
        // (waiters released together, a deadlock's victim) is not kept — a rerun of its trace
        // may take the other order and agree. Without a wrong rule every divergence counts: it
        // is an outcome the model does not allow.
        if wrong.is_some() {
            let upto = r.report.divergences.first().map_or(u64::MAX, |d| d.seq);
            let before: Vec<_> = r
                .history
                .events
                .iter()
                .filter(|e| e.seq <= upto)
                .cloned()
                .collect();
            let right = World::with_backend(Model::new(r.config.clone()));
            if leaselab_model::allowed::timing_decides(right, &before) {
                return Ok(case(None));
            }
        }
        return Ok(case(Some(r.report.describe())));
    }
    // The second oracle on PostgreSQL's own history: the checkers' facts are what the
    // (agreeing) model committed — with the snapshot windows the configuration allows.
    let exact = r.config.fence != leaselab_model::FenceMode::CheckThenWrite;
    let facts = leaselab_checkers::facts::derive_with(&r.history, exact, None);
    let d = leaselab_checkers::ledger::cross_check(&facts, &r.ledger);
    Ok(case((!d.is_empty()).then(|| {
        format!("FACTS DISAGREE WITH THE LEDGER: {}", d.join("; "))
    })))
}

/// Saves what a `diff --gen` search (drawn from `seed`) found: the shrunk schedule's diverging
/// run as `out/gen-<seed>.trace`, with the schedule itself in its setup so that `--replay` runs
/// exactly it again; the trace's path.
pub fn save_found(
    found: &leaselab_gen::search::Found<Diverged>,
    seed: u64,
    out: &std::path::Path,
) -> Result<std::path::PathBuf, leaselab_trace::TraceFileError> {
    let d = &found.failure;
    let name = format!("gen-{seed}");
    let mut t = Trace::new(&name, d.config.clone(), d.history.clone());
    t.seed = seed;
    t.setup = found.minimal.setup_lines();
    t.title = format!(
        "diff --gen divergence, shrunk: {}",
        d.what.lines().next().unwrap_or("")
    );
    t.expect = leaselab_checkers::check(&t.history).verdict();
    std::fs::create_dir_all(out).map_err(|error| leaselab_trace::TraceFileError::Write {
        path: out.display().to_string(),
        error,
    })?;
    let file = out.join(format!("{name}.trace"));
    t.save(&file)?;
    Ok(file)
}
