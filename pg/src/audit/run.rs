//! A generated schedule run on a user's lease (a spec): the history is recorded from
//! PostgreSQL's answers alone — no model runs beside it — for the checkers to judge.

use crate::adapter::{PgBackend, PgError};
use leaselab_gen::{Client, Intent, Schedule, Service, Terms};
use leaselab_model::{
    apply_event, Admin, Config, DbName, Event, FencedResource, History, Holder, LeaseStore, Model,
    Op, Outcome, Part, PublishMode, Scope,
};

/// Runs `schedule` with a service's client calling the lease on `terms` on `pg` (which runs a
/// spec) and returns what PostgreSQL answered, followed by a read of every part written (when
/// the spec can read parts): the final state the checkers compare with the accepted writes.
pub(super) fn audit_schedule(
    pg: &mut PgBackend,
    schedule: &Schedule,
    client: Service,
    terms: &Terms,
) -> Result<(History, Pauses), PgError> {
    pg.reset(&schedule.config)?;
    // One operation in five pauses inside itself — after its first, second or third statement
    // (or before its COMMIT) — until the holder's next `await`.
    let mut pauses = Pauses::new();
    let mut history = whole_ops(pg, schedule, client, terms, |pg, intent, e| {
        if intent.b % 5 == 4 && pausable(&e.op) {
            let after = usize::from(intent.a % 3);
            pauses.insert(e.seq, after);
            pg.apply_paused(e, after)
        } else {
            apply_event(pg, e)
        }
    });
    if client.ops.read_part {
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

/// A service's client's run of `schedule` on any backend; `apply` runs each event
/// (`apply_event`, or with a pause inside it).
fn whole_ops<B: LeaseStore + FencedResource + Admin>(
    b: &mut B,
    schedule: &Schedule,
    service: Service,
    terms: &Terms,
    mut apply: impl FnMut(&mut B, &Intent, &Event) -> Outcome,
) -> History {
    let mut client = Client::service(schedule.actors, service).with_terms(terms);
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
    client: Service,
) -> Result<Option<String>, PgError> {
    let config = Config {
        publish: PublishMode::Versioned,
        ..Config::default()
    };
    let run_pg = |pg: &mut PgBackend| -> Result<History, PgError> {
        pg.reset(&config)?;
        let mut h = whole_ops(pg, schedule, client, &Terms::default(), |b, _, e| {
            apply_event(b, e)
        });
        if client.ops.read_part {
            read_back(pg, &mut h);
        }
        Ok(h)
    };
    let a = run_pg(spec)?;
    let b = run_pg(builtin)?;
    let mut model = Model::new(config.clone());
    let mut m = whole_ops(
        &mut model,
        schedule,
        client,
        &Terms::default(),
        |b, _, e| apply_event(b, e),
    );
    if client.ops.read_part {
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
pub(super) fn judge_schedule(
    pg: &mut PgBackend,
    schedule: &Schedule,
    client: Service,
    terms: &Terms,
) -> Result<leaselab_gen::search::Case<Failure>, PgError> {
    use leaselab_gen::search::{Case, Verdict};
    let (history, pauses) = audit_schedule(pg, schedule, client, terms)?;
    let report = leaselab_checkers::check(&history);
    let steps = history.events.len() as u64;
    let tally = super::contention::count(&history, &pauses)
        .iter()
        .map(|(c, n)| (c.name(), *n))
        .collect();
    let verdict = if report.violations.is_empty() {
        Verdict::Pass
    } else {
        Verdict::Fail(Failure {
            history,
            pauses,
            report,
        })
    };
    Ok(Case {
        steps,
        tally,
        verdict,
    })
}
