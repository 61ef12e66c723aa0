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
use leaselab_model::Reason;
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

pub use crate::facts::Unknown;

/// The unknown operations a resolution can change the verdict of, in the order they were
/// issued (found where every other fact is: [`crate::facts::derive`]).
pub fn unknowns(h: &History) -> Vec<Unknown> {
    crate::facts::derive(h).unknown
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
/// assume of it for every rule (and a read may even show that it did happen); a release that
/// did happen only ends a holding sooner, which breaks nothing that its not happening does not.
fn resolution(h: &History, u: Unknown, applied: bool) -> Option<(usize, Outcome)> {
    let index = |seq: u64| usize::try_from(seq).ok()?.checked_sub(1);
    let op = &h.events.get(index(u.issued)?)?.op;
    let i = index(u.answered.unwrap_or(u.issued))?;
    let answer = h.events.get(i)?;
    let outcome = match (op, applied) {
        (Op::Write { .. } | Op::Publish { .. }, true) => Outcome::Accepted,
        // The latest expiry it can have set: its commit can be as late as the answer.
        (Op::Renew { ttl_ms, .. }, true) => Outcome::Renewed {
            expires: Expiry::At(Millis(answer.at.0.saturating_add(*ttl_ms))),
        },
        (Op::Renew { .. } | Op::Release { .. }, false) => {
            Outcome::Error(Reason::Other("not applied".into()))
        }
        _ => return None,
    };
    Some((i, outcome))
}
