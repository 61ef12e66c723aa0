//! The checkers' second oracle: the facts derived from a History must equal what the model's
//! databases committed ([`leaselab_model::model::Model::ledger`]). The checkers never run the
//! model; a test hands them both and this module says where they disagree.
//!
//! Rules: every acknowledged write, grant, renewal, release and kept publish in the facts is a
//! committed row version in the ledger at a position inside the fact's window; every committed
//! part, grant, renewal, release and publish in the ledger is a fact — except what a client was
//! never told: writes whose outcome was indeterminate, and statements whose client left while
//! they waited (`Facts::unreported`). And every read returned a value the ledger had at some
//! position of its snapshot window (`Sees`), or, for a read that may see its own transaction's
//! uncommitted write, that write's version.

use crate::facts::{Certainty, Facts, LeaseChange, ReadFact, ReadKey, Sees, Window};
use leaselab_model::model::{Committed, LedgerEntry};
use leaselab_model::{DbName, Expiry, Holder, LeaseName, Outcome, Token};

/// What a lease row's committed version means, given the version before it.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Lease {
    Grant(Holder, Token),
    Renew(Token, Expiry),
    Release(Token),
}

struct LeaseFactRef<'f> {
    lease: &'f LeaseName,
    window: Window,
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
    // A transaction that changed one row several times commits one version: collapse the
    // facts of one commit per row the same way (a grant stays a grant, else the last change).
    let mut collapsed: Vec<(&LeaseName, Lease, Window)> = Vec::new();
    for lf in &facts.lease_changes {
        let change = match &lf.change {
            LeaseChange::Granted { holder, token, .. } => Lease::Grant(holder.clone(), *token),
            LeaseChange::Renewed { token, expires } => Lease::Renew(*token, *expires),
            LeaseChange::Released { token } => Lease::Release(*token),
        };
        let same_commit = |(n, _, w): &&mut (&LeaseName, Lease, Window)| {
            **n == lf.lease && w.earliest == w.latest && *w == lf.window
        };
        match collapsed.iter_mut().rev().find(same_commit) {
            // A grant stays a grant whatever followed it in the same transaction.
            Some((_, Lease::Grant(..), _)) if !matches!(change, Lease::Grant(..)) => {}
            Some((_, prev, _)) => *prev = change,
            None => collapsed.push((&lf.lease, change, lf.window)),
        }
    }
    for (lease, want, window) in collapsed {
        let lf = LeaseFactRef { lease, window };
        let hit = leases.iter_mut().find(|(s, n, k, used)| {
            !*used && n == lf.lease && *k == want && in_window(*s, &lf.window)
        });
        match hit {
            Some(h) => h.3 = true,
            None => out.push(format!(
                "the history says lease {} had {want:?} committed in events #{}..#{}, the databases committed no such change there",
                lf.lease, lf.window.earliest, lf.window.latest
            )),
        }
    }
    let unreported = |db: DbName| {
        facts
            .unreported
            .iter()
            .find(|(d, _)| *d == db)
            .map_or(0, |(_, n)| *n as usize)
    };
    let unmatched: Vec<String> = leases
        .iter()
        .filter(|(_, _, _, used)| !used)
        .map(|(s, n, k, _)| format!("lease {n}: {k:?} at event #{s}"))
        .collect();
    if unmatched.len() > unreported(DbName::Lease) {
        out.push(format!(
            "the databases committed lease changes the history never reported: {}",
            unmatched.join("; ")
        ));
    }
    // One commit keeps one version per part: the last write of that part in the transaction.
    let last_of_commit = |i: usize, w: &crate::facts::WriteFact| {
        w.window.earliest != w.window.latest
            || !facts.writes[i + 1..]
                .iter()
                .any(|x| x.window == w.window && x.scope == w.scope && x.part == w.part)
    };
    for (i, w) in facts.writes.iter().enumerate() {
        if !last_of_commit(i, w) {
            continue;
        }
        let hit = parts.iter_mut().find(|(s, c, used)| {
            !*used
                && in_window(*s, &w.window)
                && matches!(c, Committed::Part(sc, p, r) if *sc == w.scope && *p == w.part && r.writer == w.writer && r.token == w.token && r.content == w.content)
        });
        match (hit, w.certainty) {
            (Some(h), _) => h.2 = true,
            // A maybe-write need not be in the ledger.
            (None, Certainty::Maybe) => {}
            (None, Certainty::Accepted) => out.push(format!(
                "the history says {}'s write to {}/{} with token {} was accepted in events #{}..#{}, the databases committed no such row there",
                w.writer, w.scope, w.part, w.token, w.window.earliest, w.window.latest
            )),
        }
    }
    let unmatched: Vec<String> = parts
        .iter()
        .filter(|(_, _, used)| !used)
        .map(|(s, c, _)| format!("{c:?} at event #{s}"))
        .collect();
    let unknown = unreported(DbName::Res)
        + facts
            .writes
            .iter()
            .filter(|w| w.certainty == Certainty::Maybe && !w.unanswered)
            .count();
    if unmatched.len() > unknown {
        out.push(format!(
            "the databases committed writes the history never reported as accepted: {}",
            unmatched.join("; ")
        ));
    }
    // One commit keeps one version per key; a check-then-write marker transaction (which the
    // history cannot tell from a real one) keeps each: the earlier ones may or may not match.
    let kept: Vec<&crate::facts::PublishFact> =
        facts.publishes.iter().filter(|p| p.accepted).collect();
    let mut collapsed = 0;
    for (i, p) in kept.iter().enumerate() {
        let superseded = p.window.earliest != p.window.latest
            && kept[i + 1..]
                .iter()
                .any(|x| x.key == p.key && x.window.latest == p.window.latest);
        if superseded {
            collapsed += 1;
            continue;
        }
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
    if unmatched > unreported(DbName::Res) + collapsed {
        out.push(format!(
            "the databases kept {unmatched} publishes the history never reported as kept"
        ));
    }
    for r in &facts.reads {
        if let Some(why) = read_disagrees(r, ledger) {
            out.push(why);
        }
    }
    out
}

/// The version of `key` a read returns, from one ledger row (`None`: another row).
fn version_of(key: &ReadKey, c: &Committed) -> Option<Outcome> {
    Some(match (key, c) {
        (ReadKey::Lease(n), Committed::Lease(m, row)) if n == m => Outcome::Lease(row.clone()),
        (ReadKey::Floor(s), Committed::Floor(t, tok)) if s == t => Outcome::Floor(Some(*tok)),
        (ReadKey::Part(s, p), Committed::Part(t, q, row)) if s == t && p == q => {
            Outcome::Part(Some(row.clone()))
        }
        (ReadKey::Publish(k), Committed::Publish(j, row)) if k == j => {
            Outcome::Published(Some(row.clone()))
        }
        _ => return None,
    })
}

/// What a read of an absent row returns.
fn absent(key: &ReadKey) -> Outcome {
    match key {
        ReadKey::Lease(_) => Outcome::Lease(None),
        ReadKey::Floor(_) => Outcome::Floor(None),
        ReadKey::Part(..) => Outcome::Part(None),
        ReadKey::Publish(_) => Outcome::Published(None),
    }
}

/// Why the value `r` returned cannot be what it could see, if so: the committed version at some
/// position of its snapshot window (the newest one committed before that position), or one of
/// its own uncommitted versions.
fn read_disagrees(r: &ReadFact, ledger: &[LedgerEntry]) -> Option<String> {
    let (window, own, any) = match &r.sees {
        Sees::Committed(w) => (*w, &[][..], false),
        Sees::Own {
            window,
            own,
            unknown,
        } => (*window, &own[..], *unknown),
    };
    if any || own.contains(&r.value) {
        return None;
    }
    let mut current = absent(&r.key);
    let mut possible = Vec::new();
    for e in ledger {
        let Some(v) = version_of(&r.key, &e.what) else {
            continue;
        };
        if e.seq >= window.latest {
            break;
        }
        if e.seq >= window.earliest && !possible.contains(&current) {
            possible.push(current.clone());
        }
        current = v;
    }
    possible.push(current);
    (!possible.contains(&r.value)).then(|| {
        format!(
            "the read at event #{} returned {:?}; the databases had committed {:?} between events #{} and #{}{}",
            r.seq,
            r.value,
            possible,
            window.earliest,
            window.latest,
            if own.is_empty() { "" } else { ", and its own transaction wrote none of it" }
        )
    })
}
