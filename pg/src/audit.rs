//! A generated schedule run on a user's lease (a spec): the history is recorded from
//! PostgreSQL's answers alone — no model runs beside it — for the checkers to judge; and what
//! an audit search found, saved as a trace with its psql scripts.

use crate::adapter::{PgBackend, PgError};
use leaselab_gen::{Client, Intent, Schedule, Terms, WholeOps};
use leaselab_model::{
    apply_event, Admin, Config, DbName, Event, FencedResource, History, Holder, LeaseStore, Model,
    Op, Outcome, Part, PublishMode, Scope,
};
use leaselab_trace::TraceFileError;

/// Runs `schedule` with a whole-operation client on `pg` (which runs a spec) and returns what
/// PostgreSQL answered, followed by a read of every part written (when the spec can read
/// parts): the final state the checkers compare with the accepted writes.
pub fn audit_schedule(
    pg: &mut PgBackend,
    schedule: &Schedule,
    ops: WholeOps,
) -> Result<(History, Pauses), PgError> {
    pg.reset(&schedule.config)?;
    let terms = pg.spec_terms();
    // One operation in five pauses inside itself — after its first, second or third statement
    // (or before its COMMIT) — until the holder's next `await`.
    let mut pauses = Pauses::new();
    let mut history = whole_ops(pg, schedule, ops, &terms, |pg, intent, e| {
        if intent.b % 5 == 4 && pausable(&e.op) {
            let after = usize::from(intent.a % 3);
            pauses.insert(e.seq, after);
            pg.apply_paused(e, after)
        } else {
            apply_event(pg, e)
        }
    });
    if ops.read_part {
        read_back(pg, &mut history);
    }
    Ok((history, pauses))
}

/// Where operations paused: event `seq` → after its statement `after` (0-based; past its last
/// one, before COMMIT). The trace does not say it; the psql scripts need it.
pub type Pauses = std::collections::BTreeMap<u64, usize>;

fn pausable(op: &Op) -> bool {
    matches!(
        op,
        Op::Acquire { .. }
            | Op::Renew { .. }
            | Op::Release { .. }
            | Op::Write { .. }
            | Op::Publish { .. }
    )
}

/// The whole-operation client's run of `schedule` on any backend; `apply` runs each event
/// (`apply_event`, or with a pause inside it).
fn whole_ops<B: LeaseStore + FencedResource + Admin>(
    b: &mut B,
    schedule: &Schedule,
    ops: WholeOps,
    terms: &Terms,
    mut apply: impl FnMut(&mut B, &Intent, &Event) -> Outcome,
) -> History {
    let mut client = Client::whole_operations(schedule.actors, ops).with_terms(terms);
    let mut history = History::default();
    for intent in &schedule.intents {
        let Some(e) = client.event(intent) else {
            continue;
        };
        let got = apply(b, intent, &e);
        client.observe(&e, &got);
        let mut recorded = e;
        recorded.outcome = got;
        history.events.push(recorded);
    }
    history
}

/// The source design's spec against the adapter's built-in statements and the model: one
/// generated schedule (without pauses inside operations, which the built-in adapter and the
/// model do not have), run by the whole-operation client on each under the source design's
/// configuration with the publish that keeps an equal or newer token (the seed spec's). `Ok(None)` when all three histories are equal, event by event and outcome by
/// outcome, final reads included; otherwise where they first differ.
pub fn cross_check(
    spec: &mut PgBackend,
    builtin: &mut PgBackend,
    schedule: &Schedule,
    ops: WholeOps,
) -> Result<Option<String>, PgError> {
    let config = Config {
        publish: PublishMode::Versioned,
        ..Config::default()
    };
    let run_pg = |pg: &mut PgBackend| -> Result<History, PgError> {
        pg.reset(&config)?;
        let mut h = whole_ops(pg, schedule, ops, &Terms::default(), |b, _, e| {
            apply_event(b, e)
        });
        if ops.read_part {
            read_back(pg, &mut h);
        }
        Ok(h)
    };
    let a = run_pg(spec)?;
    let b = run_pg(builtin)?;
    let mut model = Model::new(config.clone());
    let mut m = whole_ops(&mut model, schedule, ops, &Terms::default(), |b, _, e| {
        apply_event(b, e)
    });
    if ops.read_part {
        read_back(&mut model, &mut m);
    }
    Ok(first_difference(&[
        ("spec", &a),
        ("built-in", &b),
        ("model", &m),
    ]))
}

/// Where histories recorded from the same schedule first differ, or `None`.
fn first_difference(sides: &[(&str, &History)]) -> Option<String> {
    let (first, reference) = sides.first()?;
    for (name, h) in &sides[1..] {
        for (i, (x, y)) in reference.events.iter().zip(&h.events).enumerate() {
            if x != y {
                return Some(format!(
                    "step {}: {first} `{}` => {}, {name} `{}` => {}",
                    i + 1,
                    leaselab_model::text::op_text(&x.op),
                    x.outcome,
                    leaselab_model::text::op_text(&y.op),
                    y.outcome
                ));
            }
        }
        if reference.events.len() != h.events.len() {
            return Some(format!(
                "{first} ran {} steps, {name} {}",
                reference.events.len(),
                h.events.len()
            ));
        }
    }
    None
}

/// Appends `lab` reads of every part any write named, after restarting a database that is
/// down (recovery keeps exactly what was committed).
pub fn read_back<B: LeaseStore + FencedResource + Admin>(b: &mut B, h: &mut History) {
    let mut parts: Vec<(Scope, Part)> = Vec::new();
    for e in &h.events {
        if let Op::Write { scope, part, .. } = &e.op {
            if !parts.contains(&(scope.clone(), part.clone())) {
                parts.push((scope.clone(), part.clone()));
            }
        }
    }
    let at = h.events.last().map(|e| e.at).unwrap_or_default();
    let push = |b: &mut B, h: &mut History, op: Op| {
        let e = Event {
            seq: h.events.len() as u64 + 1,
            at,
            local: at,
            actor: Holder::new("lab"),
            conn: Some(leaselab_model::ConnId::new("lab")),
            op,
            outcome: Outcome::Ok,
        };
        let got = apply_event(b, &e);
        let mut recorded = e;
        recorded.outcome = got.clone();
        h.events.push(recorded);
        got
    };
    if !parts.is_empty() {
        let probe = push(
            b,
            h,
            Op::ReadPart {
                scope: parts[0].0.clone(),
                part: parts[0].1.clone(),
            },
        );
        if probe == Outcome::Unavailable {
            h.events.pop();
            push(b, h, Op::Restart { db: DbName::Res });
        } else {
            parts.remove(0);
        }
    }
    for (scope, part) in parts {
        push(b, h, Op::ReadPart { scope, part });
    }
}

/// What the spec's client may do besides the four required operations: the generator's
/// client behaviours, from the spec alone.
pub fn ops_of(spec: &crate::spec::Spec) -> WholeOps {
    WholeOps {
        publish: spec.op(crate::spec::OpKind::Publish).is_some(),
        read_part: spec.op(crate::spec::OpKind::ReadPart).is_some(),
        lease_txn: spec.lease_txn,
    }
}

/// A schedule's run that broke a check: what PostgreSQL answered, where operations paused,
/// and the checkers' report — kept as it was, so the trace saved is the run that failed.
#[derive(Clone, Debug)]
pub struct Failure {
    /// The history recorded from PostgreSQL's answers.
    pub history: History,
    /// Where operations paused.
    pub pauses: Pauses,
    /// The checkers' report on `history` (at least one violation).
    pub report: leaselab_checkers::Report,
}

/// One schedule of an audit search: run on the spec and judged by the checkers alone.
pub fn judge_schedule(
    pg: &mut PgBackend,
    schedule: &Schedule,
    ops: WholeOps,
) -> Result<leaselab_gen::search::Case<Failure>, PgError> {
    use leaselab_gen::search::{Case, Verdict};
    let (history, pauses) = audit_schedule(pg, schedule, ops)?;
    let report = leaselab_checkers::check(&history);
    let steps = history.events.len() as u64;
    let verdict = if report.violations.is_empty() {
        Verdict::Pass
    } else {
        Verdict::Fail(Failure {
            history,
            pauses,
            report,
        })
    };
    Ok(Case { steps, verdict })
}

/// A spec file's name without `.toml`: what names its failures.
pub fn spec_stem(file: &str) -> String {
    std::path::Path::new(file)
        .file_stem()
        .map_or_else(|| "spec".to_string(), |s| s.to_string_lossy().into_owned())
}

/// `base`, or `base-2`, `base-3`, … — the first whose trace (`.trace`) and scripts (`.psql`)
/// `out` does not hold yet: a second audit never replaces what an earlier one found.
pub fn unused_name(out: &std::path::Path, base: &str) -> String {
    let taken =
        |n: &str| out.join(format!("{n}.trace")).exists() || out.join(format!("{n}.psql")).exists();
    std::iter::once(base.to_string())
        .chain((2u64..).map(|k| format!("{base}-{k}")))
        .find(|n| !taken(n))
        .unwrap_or_else(|| base.to_string())
}

fn cannot_write(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> TraceFileError + '_ {
    move |error| TraceFileError::Write {
        path: path.display().to_string(),
        error,
    }
}

/// Writes the psql scripts of a failure into `dir` (emptied first).
pub fn write_scripts(
    dir: &std::path::Path,
    files: &crate::spec::psql::Files,
) -> Result<(), TraceFileError> {
    let _ = std::fs::remove_dir_all(dir);
    for (name, text) in files {
        let p = dir.join(name);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).map_err(cannot_write(parent))?;
        }
        std::fs::write(&p, text).map_err(cannot_write(&p))?;
    }
    Ok(())
}

/// Saves what an audit search of `spec` (drawn from `seed`) found: the shrunk schedule's
/// failing run as `out/audit-<spec>-<seed>.trace` (the schedule itself in its setup, so that
/// `--replay` runs exactly it) and its psql scripts beside it; the trace's path.
pub fn save_found(
    spec: &crate::spec::Spec,
    found: &leaselab_gen::search::Found<Failure>,
    seed: u64,
    out: &std::path::Path,
) -> Result<std::path::PathBuf, TraceFileError> {
    let f = &found.failure;
    let name = unused_name(out, &format!("audit-{}-{seed}", spec_stem(&spec.file)));
    let scripts = crate::spec::psql::scripts(
        spec,
        &f.history,
        &f.pauses,
        &format!("{name}: a history of `leaselab audit {}`", spec.file),
    );
    // Its configuration is not written: a spec's statements read none of it.
    let mut t = leaselab_trace::Trace::new(&name, Config::default(), f.history.clone());
    t.seed = seed;
    t.spec = Some(spec.file.clone());
    t.setup = found.minimal.setup_lines();
    t.title = format!(
        "audit of {}: a generated schedule, shrunk",
        std::path::Path::new(&spec.file)
            .file_name()
            .map_or(spec.file.clone(), |f| f.to_string_lossy().into_owned())
    );
    t.expect = f.report.verdict();
    std::fs::create_dir_all(out).map_err(cannot_write(out))?;
    let file = out.join(format!("{name}.trace"));
    t.save(&file)?;
    write_scripts(&out.join(format!("{name}.psql")), &scripts)?;
    Ok(file)
}
