//! The `always` properties. Each violation says, in plain words, which events conflict and
//! when, so a learner can find them in the timeline.

use crate::facts::{Certainty, Facts, LeaseChange, ReadKey, WriteFact};
use crate::verdict::{Check, Violation};
use leaselab_model::{Expiry, Holder, LeaseName, Outcome, Scope, Token};
use std::collections::{BTreeMap, BTreeSet};

fn describe_write(w: &WriteFact) -> String {
    format!(
        "{}'s write to {}/{} with token {} ({} at t={}, event #{})",
        w.writer,
        w.scope,
        w.part,
        w.token,
        match w.certainty {
            Certainty::Accepted => "accepted",
            Certainty::Maybe => "maybe applied",
        },
        w.at,
        w.window.latest
    )
}

/// One granted token of a lease: the grant's window and expiry, then every renewal or release:
/// where it committed and the expiry it set.
struct Holding<'f> {
    holder: &'f Holder,
    token: Token,
    versions: Vec<(crate::facts::Window, Expiry)>,
}

/// I1: by the database clock, at most one unexpired holder per lease at any instant. Checked at
/// every committed grant, at the grant's own `now()`, against the holding granted most
/// recently *definitely before* it. Renewals and releases take effect at their commit, not
/// when their client collects the reply: one whose commit window overlaps the grant's may
/// have come before it, so the holding's expiry at the grant is any of the expiries it may
/// have had then, and only when *every* one of them is unexpired is it a violation. A grant
/// whose commit window overlaps the other grant's (a blocked acquire collected later) is
/// concurrent with it: no order — a verdict only when it holds in either order
/// (`unordered_grants`).
pub fn i1(f: &Facts, out: &mut Vec<Violation>) {
    use crate::facts::Window;
    struct Grant<'f> {
        holder: &'f Holder,
        token: Token,
        now: leaselab_model::Millis,
        window: Window,
    }
    // Per lease: holdings in grant order (ascending `window.latest`, as `derive` records them).
    let mut leases: BTreeMap<&LeaseName, Vec<Holding>> = BTreeMap::new();
    let mut grants: Vec<(&LeaseName, Grant)> = Vec::new();
    for lf in &f.lease_changes {
        let held = leases.entry(&lf.lease).or_default();
        match &lf.change {
            LeaseChange::Granted {
                holder,
                token,
                expires,
                now,
            } => {
                grants.push((
                    &lf.lease,
                    Grant {
                        holder,
                        token: *token,
                        now: *now,
                        window: lf.window,
                    },
                ));
                held.push(Holding {
                    holder,
                    token: *token,
                    versions: vec![(lf.window, *expires)],
                });
            }
            LeaseChange::Renewed { token, expires } => {
                if let Some(h) = held.iter_mut().rev().find(|h| h.token == *token) {
                    h.versions.push((lf.window, *expires));
                }
            }
            LeaseChange::Released { token } => {
                if let Some(h) = held.iter_mut().rev().find(|h| h.token == *token) {
                    h.versions.push((lf.window, Expiry::NegInfinity));
                }
            }
        }
    }
    // Holdings in ascending `latest` of their grant (how `derive` records them; sorted here so
    // that nothing rests on it): those definitely before g are then a prefix, and the last of
    // it is the holding granted most recently definitely before g — a binary search.
    for held in leases.values_mut() {
        held.sort_by_key(|h| h.versions[0].0.latest);
    }
    for (lease, g) in grants {
        let held = &leases[lease];
        let k = held.partition_point(|h| h.versions[0].0.before(&g.window));
        let c = k.checked_sub(1).map(|k| &held[k]);
        let Some(c) = c else {
            continue;
        };
        // The versions c may have had at g: each one committed before g's commit could be the
        // last unless another one definitely came after it and before g.
        let before: Vec<&(Window, Expiry)> = c
            .versions
            .iter()
            .filter(|(w, _)| !g.window.before(w))
            .collect();
        let possible = before.iter().filter(|(w, _)| {
            !before
                .iter()
                .any(|(x, _)| w.before(x) && x.before(&g.window))
        });
        let mut all_unexpired = true;
        let mut witness: Option<&(Window, Expiry)> = None;
        for v in possible {
            if v.1.is_expired_at(g.now) {
                all_unexpired = false;
                break;
            }
            if witness.is_none_or(|w| v.0.latest > w.0.latest) {
                witness = Some(v);
            }
        }
        // A renewal or release of c nobody heard back from, issued before g committed, may
        // have set an expiry nobody saw: the overlap is then not shown.
        let unknown = f
            .lease_unknown
            .iter()
            .any(|u| u.holder == *c.holder && u.token == c.token && u.since < g.window.latest);
        if unknown {
            continue;
        }
        if let (true, Some((w, expires))) = (all_unexpired, witness) {
            let seq = g.window.latest;
            out.push(Violation {
                check: Check::I1,
                message: format!(
                    "lease {lease}: {} was granted token {} at t={} (event #{seq}) while {}'s token {} was still unexpired until t={expires} (granted or renewed at event #{})",
                    g.holder, g.token, g.now, c.holder, c.token, w.latest
                ),
                events: vec![w.latest, seq],
            });
        }
    }
    unordered_grants(f, &leases, out);
}

/// Two grants of one lease whose commits are not ordered by the history (an operation paused
/// or waiting between its request and its answer while the other was granted): if each one's
/// expiry is later than the time the other was reported — the latest its commit can have been
/// — then whichever committed second took a lease that was still held, in every order. Only
/// grants nothing else changed before both were reported (no renewal or release that might
/// have ended one early, none whose answer nobody heard).
fn unordered_grants(
    f: &Facts,
    leases: &BTreeMap<&LeaseName, Vec<Holding<'_>>>,
    out: &mut Vec<Violation>,
) {
    // When each grant was reported: the latest its commit can have been.
    let reported: BTreeMap<(&LeaseName, Token, u64), leaselab_model::Millis> = f
        .grants
        .iter()
        .map(|g| ((&g.lease, g.token, g.window.latest), g.at))
        .collect();
    // A grant reported by the event that made it is ordered against every other reported
    // likewise; only one that waited or paused (its window wider than one event) can overlap.
    let wide = |h: &Holding<'_>| h.versions[0].0.earliest < h.versions[0].0.latest;
    for (lease, held) in leases {
        // In ascending `latest`, the grants a wide one can overlap lie between the first not
        // definitely before it and the first that starts after it — and none starts after it
        // while its `latest` is within the widest window of the lease past a's end.
        let widest = held
            .iter()
            .map(|h| h.versions[0].0.latest - h.versions[0].0.earliest)
            .max()
            .unwrap_or(0);
        for (i, a) in held.iter().enumerate().filter(|(_, a)| wide(a)) {
            let wa = a.versions[0].0;
            let from = held.partition_point(|h| h.versions[0].0.before(&wa));
            let end = wa.latest.saturating_add(widest);
            let to = held.partition_point(|h| h.versions[0].0.latest <= end);
            for (j, b) in held.iter().enumerate().take(to).skip(from) {
                // Each pair once: two wide grants are taken from the earlier one.
                if j == i || (wide(b) && j < i) {
                    continue;
                }
                let ((wa, ea), (wb, eb)) = (a.versions[0], b.versions[0]);
                if wa.before(&wb) || wb.before(&wa) {
                    continue;
                }
                let both = wa.latest.max(wb.latest);
                let changed = |h: &Holding<'_>| {
                    h.versions[1..].iter().any(|(w, _)| w.earliest <= both)
                        || f.lease_unknown
                            .iter()
                            .any(|u| u.holder == *h.holder && u.token == h.token && u.since <= both)
                };
                if changed(a) || changed(b) {
                    continue;
                }
                let (Some(ra), Some(rb)) = (
                    reported.get(&(*lease, a.token, wa.latest)),
                    reported.get(&(*lease, b.token, wb.latest)),
                ) else {
                    continue;
                };
                if ea.is_expired_at(*rb) || eb.is_expired_at(*ra) {
                    continue;
                }
                out.push(Violation {
                    check: Check::I1,
                    message: format!(
                        "lease {lease}: {} was granted token {} (reported at t={ra}, event #{}, unexpired until t={ea}) and {} token {} (reported at t={rb}, event #{}, unexpired until t={eb}); neither grant is definitely before the other, and in either order the second took a lease the first still held",
                        a.holder, a.token, wa.latest, b.holder, b.token, wb.latest
                    ),
                    events: vec![wa.latest.min(wb.latest), both],
                });
            }
        }
    }
}

/// I2: per lease, granted tokens strictly increase and are never handed out twice — a crash
/// included (the model's unlogged lease table is the negative control).
pub fn i2(f: &Facts, out: &mut Vec<Violation>) {
    // A grant is recorded when its outcome is known, so `window.latest` ascends and the grants
    // definitely before g form a prefix. Per lease, the tokens seen so far and a running maximum
    // by position tell whether g violates without comparing all pairs; only then does the
    // pairwise scan run, to name the first culprit. Out-of-order windows (not produced by
    // `derive`) fall back to the pairwise scan for every grant.
    let ascending = f
        .grants
        .windows(2)
        .all(|w| w[0].window.latest <= w[1].window.latest);
    let mut seen: BTreeSet<(&LeaseName, Token)> = BTreeSet::new();
    let mut prefix: BTreeMap<&LeaseName, Vec<(u64, Token)>> = BTreeMap::new();
    for (j, g) in f.grants.iter().enumerate() {
        if ascending {
            let reused = seen.contains(&(&g.lease, g.token));
            let decreased = prefix.get(&g.lease).is_some_and(|v| {
                let k = v.partition_point(|(latest, _)| *latest < g.window.earliest);
                k > 0 && v[k - 1].1 > g.token
            });
            seen.insert((&g.lease, g.token));
            let v = prefix.entry(&g.lease).or_default();
            let max = v.last().map_or(g.token, |(_, m)| (*m).max(g.token));
            v.push((g.window.latest, max));
            if !reused && !decreased {
                continue;
            }
        }
        i2_culprit(f, j, out);
    }
}

/// The first earlier grant that grant `j` reuses the token of or lies below, reported.
fn i2_culprit(f: &Facts, j: usize, out: &mut Vec<Violation>) {
    let g = &f.grants[j];
    for p in f.grants[..j].iter().filter(|p| p.lease == g.lease) {
        let reused = p.token == g.token;
        let decreased = p.window.before(&g.window) && p.token > g.token;
        if reused || decreased {
            out.push(Violation {
                check: Check::I2,
                message: format!(
                    "lease {}: token {} granted to {} at t={} (event #{}) {} token {} granted to {} at t={} (event #{})",
                    g.lease,
                    g.token,
                    g.holder,
                    g.at,
                    g.window.latest,
                    if reused { "reuses" } else { "is below" },
                    p.token,
                    p.holder,
                    p.at,
                    p.window.latest
                ),
                events: vec![p.window.latest, g.window.latest],
            });
            return;
        }
    }
}

/// For every accepted write, the newest-holding accepted write of the same scope that
/// definitely committed before it: the highest token, and among equal tokens one from another
/// writer if there is one. Sorting by commit window makes this O(n log n) instead of comparing
/// every pair — sweeps judge hundreds of writes per run.
struct Earlier<'a> {
    /// Per write index: (highest-token write before it, same-token write by another writer).
    best: Vec<(Option<&'a WriteFact>, Option<&'a WriteFact>)>,
}

fn earlier(f: &Facts) -> Earlier<'_> {
    let acc: Vec<(usize, &WriteFact)> = f
        .writes
        .iter()
        .enumerate()
        .filter(|(_, w)| w.certainty == Certainty::Accepted)
        .collect();
    let mut best = vec![(None, None); f.writes.len()];
    let mut scopes: BTreeMap<&Scope, Vec<(usize, &WriteFact)>> = BTreeMap::new();
    for (i, w) in &acc {
        scopes.entry(&w.scope).or_default().push((*i, *w));
    }
    for (_, ws) in scopes {
        let mut by_latest: Vec<&WriteFact> = ws.iter().map(|(_, w)| *w).collect();
        by_latest.sort_by_key(|w| w.window.latest);
        // prefix[k]: over by_latest[..k], the highest-token write (latest among equals) and,
        // for that token, a write by a different writer than the first one found.
        let mut prefix: Vec<(Option<&WriteFact>, Option<&WriteFact>)> =
            Vec::with_capacity(by_latest.len() + 1);
        let (mut top, mut other): (Option<&WriteFact>, Option<&WriteFact>) = (None, None);
        prefix.push((None, None));
        for w in &by_latest {
            match top {
                Some(t) if t.token > w.token => {}
                Some(t) if t.token == w.token => {
                    if t.writer != w.writer && other.is_none() {
                        other = Some(w);
                    }
                    if t.writer == w.writer {
                        top = Some(w);
                    }
                }
                _ => {
                    top = Some(w);
                    other = None;
                }
            }
            prefix.push((top, other));
        }
        for (i, w) in ws {
            let k = by_latest.partition_point(|h| h.window.latest < w.window.earliest);
            best[i] = prefix[k];
        }
    }
    Earlier { best }
}

/// I3: per scope, the tokens of accepted writes never decrease in commit order, whatever part
/// they target; and an observed floor never goes down.
pub fn i3(f: &Facts, out: &mut Vec<Violation>) {
    let e = earlier(f);
    for (i, w) in f.writes.iter().enumerate() {
        let Some(hi) = e.best[i].0.filter(|hi| hi.token > w.token) else {
            continue;
        };
        out.push(Violation {
            check: Check::I3,
            message: format!(
                "scope {}: {} was accepted after {} — tokens of accepted writes went down from {} to {}",
                w.scope,
                describe_write(w),
                describe_write(hi),
                hi.token,
                w.token
            ),
            events: vec![hi.window.latest, w.window.latest],
        });
    }
    // An observed floor never goes down. A read observes the committed floor only as of its
    // snapshot (see `Sees`), and not at all where its own transaction set the floor; a later
    // observation below an earlier one — the first's snapshot definitely before the second's —
    // is a regression. Per scope: (latest snapshot position, highest floor up to it, where).
    let mut seen: BTreeMap<&Scope, Vec<(u64, Token, u64, leaselab_model::Millis)>> =
        BTreeMap::new();
    for r in &f.reads {
        let (ReadKey::Floor(scope), Outcome::Floor(Some(t)), Some(w)) =
            (&r.key, &r.value, r.committed())
        else {
            continue;
        };
        let v = seen.entry(scope).or_default();
        let k = v.partition_point(|(latest, ..)| *latest < w.earliest);
        if let Some((_, max, seq, at)) = k.checked_sub(1).map(|k| v[k]) {
            if *t < max {
                out.push(Violation {
                    check: Check::I3,
                    message: format!(
                        "scope {scope}: the fence floor regressed from {max} (read at t={at}, event #{seq}) to {t} (read at t={}, event #{}) — every later write with a token >= {t} would pass",
                        r.at, r.seq
                    ),
                    events: vec![seq, r.seq],
                });
                continue;
            }
        }
        // Reads come in history order, so `latest` ascends; keep the running maximum.
        let best = match v.last() {
            Some(last) if last.1 > *t => *last,
            _ => (w.latest, *t, r.seq, r.at),
        };
        v.push((w.latest, best.1, best.2, best.3));
    }
}

/// Acceptance: a paused old holder that resumes cannot have its write kept. A write is stale
/// when a write of a *newer holding* was accepted before it: a higher token, or the same token
/// from another holder (only possible when a token was reused, i.e. I2 failed). Side effects
/// without a token (F9) count too: a newer publish dropped while an older one is kept.
pub fn acceptance(f: &Facts, out: &mut Vec<Violation>) {
    let e = earlier(f);
    for (i, w) in f.writes.iter().enumerate() {
        let newer = match e.best[i] {
            (Some(top), _) if top.token > w.token => Some(top),
            (Some(top), _) if top.token == w.token && top.writer != w.writer => Some(top),
            (Some(top), Some(other)) if top.token == w.token && other.writer != w.writer => {
                Some(other)
            }
            _ => None,
        };
        if let Some(hi) = newer {
            let message = if hi.token == w.token {
                format!(
                    "token {} was used by two holders: {} came after {} — with a reused token the resource cannot tell the stale holder from the new one",
                    w.token,
                    describe_write(w),
                    describe_write(hi)
                )
            } else {
                format!(
                    "stale holder's write kept: {} came after {}",
                    describe_write(w),
                    describe_write(hi)
                )
            };
            out.push(Violation {
                check: Check::Acceptance,
                message,
                events: vec![hi.window.latest, w.window.latest],
            });
        }
    }
    let mut kept: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, p) in f.publishes.iter().enumerate() {
        if p.accepted {
            kept.insert(p.key.as_str(), i);
            continue;
        }
        if let Some(k) = kept.get(p.key.as_str()).map(|&k| &f.publishes[k]) {
            if k.token < p.token {
                out.push(Violation {
                    check: Check::Acceptance,
                    message: format!(
                        "publish {}: {}'s newer publish with token {} was dropped at t={} (event #{}) while {}'s stale publish with token {} (t={}, event #{}) is kept",
                        p.key, p.writer, p.token, p.at, p.window.latest, k.writer, k.token, k.at, k.window.latest
                    ),
                    events: vec![k.window.latest, p.window.latest],
                });
            }
        }
    }
}

/// Final state: every read of a part's committed state must show content from the highest
/// token accepted for it before the read's snapshot (a read that may see its own transaction's
/// uncommitted write observes nothing of the committed state; see `Sees`).
pub fn final_state(f: &Facts, out: &mut Vec<Violation>) {
    for r in &f.reads {
        let (ReadKey::Part(scope, part), Outcome::Part(row), Some(snap)) =
            (&r.key, &r.value, r.committed())
        else {
            continue;
        };
        let best = f
            .writes
            .iter()
            .filter(|w| {
                w.certainty == Certainty::Accepted
                    && &w.scope == scope
                    && &w.part == part
                    && w.window.latest < snap.earliest
            })
            .max_by_key(|w| (w.token, w.window.latest));
        let Some(best) = best else { continue };
        let bad = match row {
            None => Some(format!("{scope}/{part} is absent")),
            Some(x) if x.token < best.token => Some(format!(
                "{scope}/{part} holds {}'s content `{}` with token {}",
                x.writer, x.content, x.token
            )),
            Some(_) => None,
        };
        if let Some(what) = bad {
            out.push(Violation {
                check: Check::Final,
                message: format!(
                    "at t={} (event #{}) {what}, but {} was accepted before that read — the final content must come from the highest accepted token",
                    r.at,
                    r.seq,
                    describe_write(best)
                ),
                events: vec![best.window.latest, r.seq],
            });
        }
    }
}
