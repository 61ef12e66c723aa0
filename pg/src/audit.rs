//! A generated schedule run on a user's lease (a spec): the history is recorded from
//! PostgreSQL's answers alone — no model runs beside it — for the checkers to judge.

use crate::adapter::{PgBackend, PgError};
use leaselab_gen::{Client, Schedule, WholeOps};
use leaselab_model::{apply_event, DbName, Event, History, Holder, Op, Outcome, Part, Scope};

/// Runs `schedule` with a whole-operation client on `pg` (which runs a spec) and returns what
/// PostgreSQL answered, followed by a read of every part written (when the spec can read
/// parts): the final state the checkers compare with the accepted writes.
pub fn audit_schedule(
    pg: &mut PgBackend,
    schedule: &Schedule,
    ops: WholeOps,
) -> Result<History, PgError> {
    pg.reset(&schedule.config)?;
    let mut client = Client::whole_operations(schedule.actors, ops);
    let mut history = History::default();
    for intent in &schedule.intents {
        let Some(e) = client.event(intent) else {
            continue;
        };
        // One operation in five pauses inside itself — after its first, second or third
        // statement (or before its COMMIT) — until the holder's next `await`.
        if intent.b % 5 == 4
            && matches!(
                e.op,
                Op::Acquire { .. }
                    | Op::Renew { .. }
                    | Op::Release { .. }
                    | Op::Write { .. }
                    | Op::Publish { .. }
            )
        {
            pg.pause_next(usize::from(intent.a % 3));
        }
        let got = apply_event(pg, &e);
        client.observe(&e, &got);
        let mut recorded = e;
        recorded.outcome = got;
        history.events.push(recorded);
    }
    if ops.read_part {
        read_back(pg, &mut history);
    }
    Ok(history)
}

/// Appends `lab` reads of every part any write named, after restarting a database that is
/// down (recovery keeps exactly what was committed).
fn read_back(pg: &mut PgBackend, h: &mut History) {
    let mut parts: Vec<(Scope, Part)> = Vec::new();
    for e in &h.events {
        if let Op::Write { scope, part, .. } = &e.op {
            if !parts.contains(&(scope.clone(), part.clone())) {
                parts.push((scope.clone(), part.clone()));
            }
        }
    }
    let at = h.events.last().map(|e| e.at).unwrap_or_default();
    let push = |pg: &mut PgBackend, h: &mut History, op: Op| {
        let e = Event {
            seq: h.events.len() as u64 + 1,
            at,
            local: at,
            actor: Holder::new("lab"),
            conn: Some(leaselab_model::ConnId::new("lab")),
            op,
            outcome: Outcome::Ok,
        };
        let got = apply_event(pg, &e);
        let mut recorded = e;
        recorded.outcome = got.clone();
        h.events.push(recorded);
        got
    };
    if !parts.is_empty() {
        let probe = push(
            pg,
            h,
            Op::ReadPart {
                scope: parts[0].0.clone(),
                part: parts[0].1.clone(),
            },
        );
        if probe == Outcome::Unavailable {
            h.events.pop();
            push(pg, h, Op::Restart { db: DbName::Res });
        } else {
            parts.remove(0);
        }
    }
    for (scope, part) in parts {
        push(pg, h, Op::ReadPart { scope, part });
    }
}
