//! What a read is to the checks: which reads a check can use, what a read could see (its
//! snapshot, or its own transaction's writes), and what a read settles about a write nobody
//! heard back from.

use super::derive::{attempt_of, Conns, Pending, Txn, WrongFacts};
use super::*;
use leaselab_model::{Event, Holder, Op, Outcome};
use std::collections::BTreeMap;

/// A committed read of a part, definitely after the commit window of a write nobody heard back
/// from, that shows another row version (or none) which no write after that window can have
/// put there: the write did not take effect ([`Excluded`]). Decided when the read arrives —
/// every write of the version it shows was issued before it — so the read need not be kept.
/// A version some transaction's upsert wrote, or that a statement still waiting writes, has
/// no bound on when it was written: it settles nothing. A write the read does not settle is
/// not weighed again by a later read (its window begins before a write of what the row
/// shows, or it is the version shown): each unknown write is looked at O(1) times, apart from
/// those whose window the read's snapshot overlaps.
pub(super) fn exclude(
    f: &mut Facts,
    r: &ReadFact,
    attempted: &BTreeMap<u64, Vec<usize>>,
    blocked: &Conns<Pending>,
    maybe_open: &mut BTreeMap<(Scope, Part), Vec<usize>>,
) {
    let (ReadKey::Part(scope, part), Outcome::Part(row), Some(snap)) =
        (&r.key, &r.value, r.committed())
    else {
        return;
    };
    let Some(open) = maybe_open.get_mut(&(scope.clone(), part.clone())) else {
        return;
    };
    // Where the writes of what the row shows can have committed, at the latest.
    let reach = match row {
        None => 0,
        Some(x) => {
            let v = RowVersion::shown(scope, part, x);
            let a = attempt_of(attempted, &f.attempts, &v).map(|i| &f.attempts[i]);
            let waiting = blocked
                .values()
                .any(|p| RowVersion::written(&p.op, &p.actor) == Some(v));
            match a {
                Some(a) if !a.upsert && !waiting => a.last.max(a.reach),
                // Nobody wrote it (a `final` violation of its own), or no bound.
                _ => u64::MAX,
            }
        }
    };
    open.retain(|&i| {
        let w = &f.writes[i];
        if w.window.latest >= snap.earliest {
            return true;
        }
        // (One of what the row shows: the write is one of its writers, so `reach` covers it.)
        if w.window.earliest > reach {
            f.excluded.push(Excluded {
                write: i,
                by: r.seq,
                shown: row.clone(),
            });
        }
        false
    });
}

/// Whether a check of [`crate::check`] can use read `r`, from what the history so far shows
/// ([`Deriver::for_judging`] says why each rule is safe).
#[allow(clippy::too_many_arguments)]
pub(super) fn matters(
    r: &ReadFact,
    f: &Facts,
    attempted: &BTreeMap<u64, Vec<usize>>,
    part_max: &BTreeMap<(Scope, Part), Token>,
    accepted: &mut BTreeMap<u64, Vec<usize>>,
    accepted_seen: &mut usize,
    lease_unknown: &mut std::collections::BTreeSet<(LeaseName, Token)>,
    lease_unknown_seen: &mut (usize, usize),
    blocked: &Conns<Pending>,
) -> bool {
    let Some(snap) = r.committed() else {
        return false;
    };
    match (&r.key, &r.value) {
        (ReadKey::Part(scope, part), Outcome::Part(row)) => {
            let max = part_max.get(&(scope.clone(), part.clone()));
            let Some(x) = row else {
                return max.is_some();
            };
            if max.is_some_and(|m| *m > x.token) {
                return true;
            }
            let v = RowVersion::shown(scope, part, x);
            let hash = v.hash();
            let first = attempt_of(attempted, &f.attempts, &v).map(|i| f.attempts[i].seq);
            if first.is_none_or(|seq| seq >= snap.latest) {
                return true;
            }
            for (i, w) in f.writes.iter().enumerate().skip(*accepted_seen) {
                if w.certainty == Certainty::Accepted {
                    accepted.entry(w.version().hash()).or_default().push(i);
                }
            }
            *accepted_seen = f.writes.len();
            let shown_by_accepted = accepted.get(&hash).is_some_and(|ws| {
                ws.iter()
                    .map(|i| &f.writes[*i])
                    .any(|w| w.version() == v && w.window.earliest < snap.latest)
            });
            !shown_by_accepted
        }
        (ReadKey::Lease(lease), Outcome::Lease(Some(row))) => {
            // The unknown ones, and those answered `fail`.
            let new = (f.lease_unknown.iter().skip(lease_unknown_seen.0))
                .chain(f.lease_refused.iter().skip(lease_unknown_seen.1));
            for u in new {
                lease_unknown.insert((u.lease.clone(), u.token));
            }
            *lease_unknown_seen = (f.lease_unknown.len(), f.lease_refused.len());
            lease_unknown.contains(&(lease.clone(), row.token))
                || blocked.values().any(|p| match &p.op {
                    Op::Renew {
                        lease: l, token, ..
                    }
                    | Op::Release {
                        lease: l, token, ..
                    } => l == lease && *token == row.token,
                    _ => false,
                })
        }
        (ReadKey::Lease(_), _) => false,
        _ => true,
    }
}

/// The row a statement writes when it takes effect (a fence writes the floor, an upsert its
/// part, a lease statement the lease row, a publish its key).
pub(super) fn written_key(op: &Op) -> Option<ReadKey> {
    Some(match op {
        Op::Acquire { lease, .. } | Op::Renew { lease, .. } | Op::Release { lease, .. } => {
            ReadKey::Lease(lease.clone())
        }
        Op::Fence { scope, .. } => ReadKey::Floor(scope.clone()),
        Op::Upsert { scope, part, .. } => ReadKey::Part(scope.clone(), part.clone()),
        Op::Publish { key, .. } => ReadKey::Publish(key.clone()),
        _ => return None,
    })
}

/// Inside an open transaction, remembers the row version a statement wrote: what a later read
/// of the same row in that transaction returns instead of the committed state.
pub(super) fn note_own(t: &mut Txn, op: &Op, actor: &Holder, out: &Outcome) {
    if !t.open {
        return;
    }
    use leaselab_model::{LeaseRow, PartRow};
    let lease_row = |holder: &Holder, token: Token, expires_at| {
        Some(Outcome::Lease(Some(LeaseRow {
            holder: holder.clone(),
            token,
            expires_at,
        })))
    };
    let value = match (op, out) {
        (Op::Acquire { holder, .. }, Outcome::Granted { token, expires }) => {
            lease_row(holder, *token, *expires)
        }
        (Op::Renew { holder, token, .. }, Outcome::Renewed { expires }) => {
            lease_row(holder, *token, *expires)
        }
        (Op::Release { holder, token, .. }, Outcome::Released) => {
            lease_row(holder, *token, leaselab_model::Expiry::NegInfinity)
        }
        (Op::Fence { token, .. }, Outcome::Passed) => Some(Outcome::Floor(Some(*token))),
        (Op::Upsert { content, token, .. }, Outcome::Ok | Outcome::Accepted) => {
            Some(Outcome::Part(Some(PartRow {
                content: content.clone(),
                writer: actor.clone(),
                token: *token,
            })))
        }
        (Op::Publish { content, token, .. }, Outcome::Accepted) => {
            Some(Outcome::Published(Some(PartRow {
                content: content.clone(),
                writer: actor.clone(),
                token: *token,
            })))
        }
        _ => return,
    };
    if let Some(k) = written_key(op) {
        t.own.push((k, value));
    }
}

/// A read that returned a row, with what it could see.
/// `exact`: the database keeps real transactions, so a REPEATABLE READ snapshot is exactly at
/// the transaction's first statement.
pub(super) fn read_fact(
    t: &Txn,
    e: &Event,
    exact: bool,
    wrong: Option<WrongFacts>,
) -> Option<ReadFact> {
    let key = match (&e.op, &e.outcome) {
        (Op::ReadLease { lease }, Outcome::Lease(_)) => ReadKey::Lease(lease.clone()),
        (Op::ReadFloor { scope }, Outcome::Floor(_)) => ReadKey::Floor(scope.clone()),
        (Op::ReadPart { scope, part }, Outcome::Part(_)) => {
            ReadKey::Part(scope.clone(), part.clone())
        }
        (Op::ReadPublish { key }, Outcome::Published(_)) => ReadKey::Publish(key.clone()),
        _ => return None,
    };
    let rr = t.open && t.repeatable && wrong != Some(WrongFacts::RepeatableReadIsCurrent);
    let window = match (rr, t.first) {
        (true, Some(first)) => Window {
            earliest: first,
            latest: if exact {
                t.first_sql.unwrap_or(e.seq)
            } else {
                e.seq
            },
        },
        _ => Window::at(e.seq),
    };
    let own: Vec<&Option<Outcome>> = if t.open {
        t.own
            .iter()
            .filter(|(k, _)| *k == key)
            .map(|(_, v)| v)
            .collect()
    } else {
        Vec::new()
    };
    let sees = if own.is_empty() {
        Sees::Committed(window)
    } else {
        Sees::Own {
            window,
            own: own.iter().filter_map(|v| (*v).clone()).collect(),
            unknown: own.iter().any(|v| v.is_none()),
        }
    };
    Some(ReadFact {
        seq: e.seq,
        at: e.at,
        key,
        value: e.outcome.clone(),
        sees,
    })
}
