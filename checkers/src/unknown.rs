//! Operations whose outcome nobody learned — an `indeterminate` answer (a timeout, a lost
//! connection), or a statement still waiting when its connection was dropped or the history
//! ended — and the violations that depend on how one of them turned out.
//!
//! The checkers treat such an operation as Jepsen treats `:info`: a write may have been
//! applied (a read may show it) but is never counted as accepted; a renewal or release may
//! have moved its holding's expiry, so no overlap is claimed across it. What they report is
//! therefore certain — it holds whatever the unknown operations did. This module asks the
//! other question: what *could* have broken? Each unknown operation is resolved both ways in
//! turn (applied: a write accepted, a renewal's expiry the latest it can have set, a release
//! done; not applied), the history judged again, and every violation the base judgement did
//! not report is *possible*, decided by that operation. Only one unknown is resolved at a
//! time: a violation that needs two of them to turn out a certain way is not found.

use crate::verdict::Violation;
use crate::Report;
use leaselab_model::{Expiry, History, Millis, Op, Outcome};
use std::collections::BTreeSet;

/// A violation that holds if one unknown operation turned out a certain way.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Possible {
    /// What would be broken.
    pub violation: Violation,
    /// The event that issued the unknown operation.
    pub decided_by: u64,
    /// Whether it is broken if that operation took effect (`true`) or if it did not.
    pub if_applied: bool,
}

/// One unknown operation: where it was issued, and where its unknown answer is (none when no
/// answer ever came).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unknown {
    /// The event that issued it.
    pub issued: u64,
    /// The event that answered `indeterminate`, if any.
    pub answered: Option<u64>,
}

/// The unknown operations a resolution can change the verdict of: whole writes, publishes,
/// renewals and releases. (An acquire whose answer was lost is not among them: its holder does
/// not know its token and cannot act on it; a step of a transaction is decided by the
/// transaction's commit.)
pub fn unknowns(h: &History) -> Vec<Unknown> {
    let mut out = Vec::new();
    // Per connection, the statement waiting for its answer.
    let mut waiting: std::collections::BTreeMap<&str, u64> = Default::default();
    for e in &h.events {
        let conn = e.conn_str();
        match (&e.op, &e.outcome) {
            (Op::Await { .. }, o) if *o != Outcome::Blocked => {
                if let Some(issued) = waiting.remove(conn) {
                    if matches!(o, Outcome::Indeterminate(_)) {
                        out.push(Unknown {
                            issued,
                            answered: Some(e.seq),
                        });
                    }
                }
            }
            (op, Outcome::Blocked) if resolvable(op) => {
                waiting.insert(conn, e.seq);
            }
            // Dropped with its connection: nobody will hear what it did.
            (Op::Disconnect { .. }, _) => {
                if let Some(issued) = waiting.remove(conn) {
                    out.push(Unknown {
                        issued,
                        answered: None,
                    });
                }
            }
            (op, Outcome::Indeterminate(_)) if resolvable(op) => out.push(Unknown {
                issued: e.seq,
                answered: Some(e.seq),
            }),
            _ => {}
        }
    }
    // Never answered: dropped with their connection, or still waiting at the end.
    out.extend(waiting.into_values().map(|issued| Unknown {
        issued,
        answered: None,
    }));
    out.sort_by_key(|u| u.issued);
    out
}

fn resolvable(op: &Op) -> bool {
    matches!(
        op,
        Op::Write { .. } | Op::Publish { .. } | Op::Renew { .. } | Op::Release { .. }
    )
}

/// The violations that depend on one unknown operation, beyond the certain ones in `base`;
/// at most `limit` unknown operations are resolved (each costs a judgement). Returns them and
/// how many unknown operations were left unresolved. `h` is changed one outcome at a time and
/// put back as it was: no copy of a long history.
pub fn possible(h: &mut History, base: &Report, limit: usize) -> (Vec<Possible>, usize) {
    let all = unknowns(h);
    let key = |v: &Violation| (v.check, v.events.clone());
    let mut seen: BTreeSet<_> = base.violations.iter().map(key).collect();
    let mut out = Vec::new();
    for u in all.iter().take(limit) {
        for applied in [true, false] {
            let Some((i, outcome)) = resolution(h, *u, applied) else {
                continue;
            };
            let kept = std::mem::replace(&mut h.events[i].outcome, outcome);
            for v in crate::check(h).violations {
                if seen.insert(key(&v)) {
                    out.push(Possible {
                        violation: v,
                        decided_by: u.issued,
                        if_applied: applied,
                    });
                }
            }
            h.events[i].outcome = kept;
        }
    }
    (out, all.len().saturating_sub(limit))
}

/// Which event's outcome changes, and to what, to resolve `u` (applied, or not); `None` when
/// that resolution says nothing new: a write that did not happen is what the checkers already
/// assume of it for every rule (and a read may even show that it did happen).
fn resolution(h: &History, u: Unknown, applied: bool) -> Option<(usize, Outcome)> {
    let index = |seq: u64| usize::try_from(seq).ok()?.checked_sub(1);
    let op = &h.events.get(index(u.issued)?)?.op;
    let i = index(u.answered.unwrap_or(u.issued))?;
    let answer = h.events.get(i)?;
    let outcome = match (op, applied) {
        (Op::Write { .. } | Op::Publish { .. }, true) => Outcome::Accepted,
        (Op::Write { .. } | Op::Publish { .. }, false) => return None,
        // The latest expiry it can have set: its commit can be as late as the answer.
        (Op::Renew { ttl_ms, .. }, true) => Outcome::Renewed {
            expires: Expiry::At(Millis(answer.at.0.saturating_add(*ttl_ms))),
        },
        (Op::Release { .. }, true) => Outcome::Released,
        (Op::Renew { .. } | Op::Release { .. }, false) => Outcome::Error("not applied".into()),
        _ => return None,
    };
    Some((i, outcome))
}
