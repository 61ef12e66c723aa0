//! The checkers' second oracle: the facts derived from a History must equal what the model's
//! databases committed ([`leaselab_model::model::Model::ledger`]). The checkers never run the
//! model; a test hands them both and this module says where they disagree.
//!
//! Rules: every acknowledged write, grant, renewal, release and kept publish in the facts is a
//! committed row version in the ledger at a position inside the fact's window; every committed
//! part, grant, renewal, release and publish in the ledger is a fact — except what a client was
//! never told: writes whose outcome was indeterminate, and statements whose client left while
//! they waited (`Facts::orphans`).

use crate::facts::{Certainty, Facts, LeaseChange, Window};
use leaselab_model::model::{Committed, LedgerEntry};
use leaselab_model::{DbName, Expiry, Holder, LeaseName, Token};

/// What a lease row's committed version means, given the version before it.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Lease {
    Grant(Holder, Token),
    Renew(Token, Expiry),
    Release(Token),
}

fn in_window(seq: u64, w: &Window) -> bool {
    w.earliest <= seq && seq <= w.latest
}

/// Every disagreement between `facts` and `ledger`, in words (empty: they agree).
pub fn cross_check(facts: &Facts, ledger: &[LedgerEntry]) -> Vec<String> {
    let mut out = Vec::new();
    // The ledger's lease versions, read as grants, renewals and releases.
    let mut last: Vec<(LeaseName, Option<leaselab_model::LeaseRow>)> = Vec::new();
    let mut leases: Vec<(u64, LeaseName, Lease, bool)> = Vec::new();
    let mut parts: Vec<(u64, &Committed, bool)> = Vec::new();
    let mut publishes: Vec<(u64, &Committed, bool)> = Vec::new();
    for e in ledger {
        match &e.what {
            Committed::Lease(name, row) => {
                let prev = match last.iter_mut().find(|(n, _)| n == name) {
                    Some((_, p)) => p,
                    None => {
                        last.push((name.clone(), None));
                        &mut last.last_mut().expect("just pushed").1
                    }
                };
                if let Some(r) = row {
                    let kind = match prev {
                        Some(p) if p.token == r.token => match r.expires_at {
                            Expiry::NegInfinity => Lease::Release(r.token),
                            e => Lease::Renew(r.token, e),
                        },
                        _ => Lease::Grant(r.holder.clone(), r.token),
                    };
                    leases.push((e.seq, name.clone(), kind, false));
                }
                *prev = row.clone();
            }
            Committed::Part(..) => parts.push((e.seq, &e.what, false)),
            Committed::Publish(..) => publishes.push((e.seq, &e.what, false)),
            Committed::Floor(..) => {}
        }
    }
    for lf in &facts.lease_changes {
        let want = match &lf.change {
            LeaseChange::Granted { holder, token, .. } => Lease::Grant(holder.clone(), *token),
            LeaseChange::Renewed { token, expires } => Lease::Renew(*token, *expires),
            LeaseChange::Released { token } => Lease::Release(*token),
        };
        let hit = leases
            .iter_mut()
            .find(|(s, n, k, used)| !*used && *n == lf.lease && *k == want && in_window(*s, &lf.window));
        match hit {
            Some(h) => h.3 = true,
            None => out.push(format!(
                "the history says lease {} had {want:?} committed in events #{}..#{}, the databases committed no such change there",
                lf.lease, lf.window.earliest, lf.window.latest
            )),
        }
    }
    let orphans = |db: DbName| {
        facts
            .orphans
            .iter()
            .find(|(d, _)| *d == db)
            .map_or(0, |(_, n)| *n as usize)
    };
    let unmatched: Vec<String> = leases
        .iter()
        .filter(|(_, _, _, used)| !used)
        .map(|(s, n, k, _)| format!("lease {n}: {k:?} at event #{s}"))
        .collect();
    if unmatched.len() > orphans(DbName::Lease) {
        out.push(format!(
            "the databases committed lease changes the history never reported: {}",
            unmatched.join("; ")
        ));
    }
    let mut maybe = 0;
    for w in &facts.writes {
        let hit = parts.iter_mut().find(|(s, c, used)| {
            !*used
                && in_window(*s, &w.window)
                && matches!(c, Committed::Part(sc, p, r) if *sc == w.scope && *p == w.part && r.writer == w.writer && r.token == w.token && r.content == w.content)
        });
        match (hit, w.certainty) {
            (Some(h), _) => h.2 = true,
            (None, Certainty::Maybe) => maybe += 1,
            (None, Certainty::Accepted) => out.push(format!(
                "the history says {}'s write to {}/{} with token {} was accepted in events #{}..#{}, the databases committed no such row there",
                w.writer, w.scope, w.part, w.token, w.window.earliest, w.window.latest
            )),
        }
    }
    let _ = maybe;
    let unmatched: Vec<String> = parts
        .iter()
        .filter(|(_, _, used)| !used)
        .map(|(s, c, _)| format!("{c:?} at event #{s}"))
        .collect();
    let unknown = orphans(DbName::Res)
        + facts
            .writes
            .iter()
            .filter(|w| w.certainty == Certainty::Maybe)
            .count();
    if unmatched.len() > unknown {
        out.push(format!(
            "the databases committed writes the history never reported as accepted: {}",
            unmatched.join("; ")
        ));
    }
    for p in facts.publishes.iter().filter(|p| p.accepted) {
        let hit = publishes.iter_mut().find(|(s, c, used)| {
            !*used
                && in_window(*s, &p.window)
                && matches!(c, Committed::Publish(k, r) if *k == p.key && r.writer == p.writer && r.token == p.token)
        });
        match hit {
            Some(h) => h.2 = true,
            None => out.push(format!(
                "the history says {}'s publish of {} with token {} was kept at event #{}, the databases kept no such row",
                p.writer, p.key, p.token, p.window.latest
            )),
        }
    }
    let unmatched = publishes.iter().filter(|(_, _, used)| !used).count();
    if unmatched > orphans(DbName::Res) {
        out.push(format!(
            "the databases kept {unmatched} publishes the history never reported as kept"
        ));
    }
    out
}
