//! The `always` properties. Each violation says, in plain words, which events conflict and
//! when, so a learner can find them in the timeline.

use crate::facts::{
    Certainty, Facts, LeaseChange, PublishFact, ReadKey, UnknownLease, UnknownPublish, Window,
    WriteFact,
};
use crate::verdict::{Check, Condition, Findings, Possible, Undecided, Violation};
use leaselab_model::{Expiry, Holder, LeaseName, Millis, Outcome, Scope, Token};
use std::collections::{BTreeMap, BTreeSet};

fn describe_write(w: &WriteFact) -> String {
    format!(
        "{}'s write to {}/{} with token {} ({} at t={}, event #{})",
        w.writer,
        w.scope,
        w.part,
        w.token,
        match (w.certainty, w.kept_after_fail) {
            (_, Some(_)) => "answered fail, yet kept",
            (Certainty::Accepted, None) => "accepted",
            (Certainty::Maybe, None) => "maybe applied",
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
    versions: Vec<(Window, Expiry)>,
}

/// More unknown renewals and releases than this on one holding before one grant, and I1 at that
/// grant is `undecided`: each is tried both ways, so the work doubles with each one.
pub const I1_UNKNOWNS_LIMIT: usize = 10;

/// I1: by the database clock, at most one unexpired holder per lease at any instant; the
/// violations certain whatever the unknown operations did (see [`crate::unknown`] for what
/// the others are).
pub fn i1(f: &Facts, out: &mut Vec<Violation>) {
    let mut found = Findings::default();
    i1_found(f, &mut found);
    out.append(&mut found.certain);
}

/// I1, checked at every committed grant, at the grant's own `now()`, against the holding
/// granted most recently *definitely before* it. Renewals and releases take effect at their
/// commit, not when their client collects the reply: one whose commit window overlaps the
/// grant's may have come before it, so the holding's expiry at the grant is any of the
/// expiries it may have had then, and only when *every* one of them is unexpired is it a
/// violation. A renewal or release nobody heard back from is tried both ways (and a renewal
/// that took effect at the earliest and the latest expiry it can have set: a later expiry
/// only makes an overlap likelier, so those two bound every value between); the grant is a
/// certain violation when every way breaks it, possible when one does. A grant whose commit
/// window overlaps the other grant's (a blocked acquire collected later) is concurrent with
/// it: no order — a verdict only when it holds in either order (`unordered_grants`).
pub(crate) fn i1_found(f: &Facts, found: &mut Findings) {
    struct Grant<'f> {
        holder: &'f Holder,
        token: Token,
        now: Millis,
        window: Window,
    }
    // Per lease: holdings in grant order (ascending `window.latest`, as `derive` records them).
    let mut leases: BTreeMap<&LeaseName, Vec<Holding>> = BTreeMap::new();
    let mut grants: Vec<(&LeaseName, Grant)> = Vec::new();
    // The holdings of each (lease, token) so far, by index: a renewal or release belongs to the
    // latest (a reused token, I2's failure, has several). Searching the holdings backwards
    // instead cost a pass over every later one for each change recorded out of grant order (a
    // settled renewal is recorded after all the others).
    let mut of_token: BTreeMap<(&LeaseName, Token), usize> = BTreeMap::new();
    for lf in &f.lease_changes {
        let held = leases.entry(&lf.lease).or_default();
        let latest = |token: &Token| of_token.get(&(&lf.lease, *token)).copied();
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
                of_token.insert((&lf.lease, *token), held.len());
                held.push(Holding {
                    holder,
                    token: *token,
                    versions: vec![(lf.window, *expires)],
                });
            }
            LeaseChange::Renewed { token, expires } => {
                if let Some(i) = latest(token) {
                    held[i].versions.push((lf.window, *expires));
                }
            }
            LeaseChange::Released { token } => {
                if let Some(i) = latest(token) {
                    held[i].versions.push((lf.window, Expiry::NegInfinity));
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
    // Unknown renewals and releases per holding.
    let mut unknown: BTreeMap<(&LeaseName, &Holder, Token), Vec<&UnknownLease>> = BTreeMap::new();
    for u in &f.lease_unknown {
        unknown
            .entry((&u.lease, &u.holder, u.token))
            .or_default()
            .push(u);
    }
    for (lease, g) in grants {
        let held = &leases[lease];
        let k = held.partition_point(|h| h.versions[0].0.before(&g.window));
        let Some(c) = k.checked_sub(1).map(|k| &held[k]) else {
            continue;
        };
        let describe = |(w, expires): (Window, Expiry)| {
            Violation {
            check: Check::I1,
            message: format!(
                "lease {lease}: {} was granted token {} at t={} (event #{}) while {}'s token {} was still unexpired until t={expires} (granted or renewed at event #{})",
                g.holder, g.token, g.now, g.window.latest, c.holder, c.token, w.latest
            ),
            events: vec![w.latest, g.window.latest],
        }
        };
        // Those that can have committed before g did.
        let us: Vec<&UnknownLease> = unknown
            .get(&(lease, c.holder, c.token))
            .map(|v| {
                v.iter()
                    .copied()
                    .filter(|u| !g.window.before(&u.window))
                    .collect()
            })
            .unwrap_or_default();
        if us.is_empty() {
            if let Some(w) = unexpired_at(&c.versions, &g.window, g.now) {
                found.certain.push(describe(w));
            }
            continue;
        }
        let events: Vec<u64> = us.iter().map(|u| u.since).collect();
        if us.len() > I1_UNKNOWNS_LIMIT {
            found.undecided.push(Undecided {
                check: Check::I1,
                message: format!(
                    "lease {lease}: whether {}'s token {} was still unexpired when {} was granted token {} at t={} (event #{}) depends on {} renewals and releases nobody heard back from, more than the {I1_UNKNOWNS_LIMIT} tried both ways",
                    c.holder, c.token, g.holder, g.token, g.now, g.window.latest, us.len()
                ),
                unknowns: events,
                events: vec![c.versions[0].0.latest, g.window.latest],
            });
            continue;
        }
        let mut every = true;
        let mut certain: Option<Violation> = None;
        let mut some: Option<(Violation, Vec<Condition>)> = None;
        let mut versions = c.versions.clone();
        for pattern in 0u32..(1 << us.len()) {
            let applied = |i: usize| pattern & (1 << i) != 0;
            for latest in [false, true] {
                versions.truncate(c.versions.len());
                for (_, u) in us.iter().enumerate().filter(|(i, _)| applied(*i)) {
                    versions.push((u.window, u.expiry(latest)));
                }
                let hit = unexpired_at(&versions, &g.window, g.now);
                match (latest, hit) {
                    (false, None) => every = false,
                    (false, Some(w)) => {
                        certain.get_or_insert_with(|| describe(w));
                    }
                    (true, Some(w)) if some.is_none() => {
                        let conditions = us
                            .iter()
                            .enumerate()
                            .map(|(i, u)| Condition {
                                event: u.since,
                                applied: applied(i),
                            })
                            .collect();
                        some = Some((describe(w), conditions));
                    }
                    _ => {}
                }
            }
        }
        match (every, certain, some) {
            (true, Some(mut v), _) => {
                v.message.push_str(&format!(
                    " — whichever way {} nobody heard back from went (event {})",
                    if us.len() == 1 {
                        "the renewal or release"
                    } else {
                        "the renewals and releases"
                    },
                    list(&events)
                ));
                found.certain.push(v);
            }
            (_, _, Some((violation, conditions))) => found.possible.push(Possible {
                violation,
                conditions,
            }),
            _ => {}
        }
    }
    unordered_grants(f, &leases, found);
}

/// `#3, #5 and #9`.
pub(crate) fn list(events: &[u64]) -> String {
    let names: Vec<String> = events.iter().map(|e| format!("#{e}")).collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        Some((last, _)) => last.clone(),
        None => String::new(),
    }
}

/// Whether a holding whose versions are `versions` was unexpired at a grant in `g` made at
/// `now` whatever order the overlapping commits took: the versions it may have had then — each
/// one committed before g's commit could be the last unless another one definitely came after
/// it and before g — are all unexpired. Returns the newest such version. One pass: a version is
/// replaced exactly when it is definitely before the latest `earliest` of the versions
/// definitely before g.
fn unexpired_at(
    versions: &[(Window, Expiry)],
    g: &Window,
    now: Millis,
) -> Option<(Window, Expiry)> {
    let cut = versions
        .iter()
        .filter(|(w, _)| w.before(g))
        .map(|(w, _)| w.earliest)
        .max();
    let mut witness: Option<&(Window, Expiry)> = None;
    for v in versions
        .iter()
        .filter(|(w, _)| !g.before(w) && cut.is_none_or(|c| w.latest >= c))
    {
        if v.1.is_expired_at(now) {
            return None;
        }
        // The newest; of one commit's versions, the last statement's (the one it kept).
        if witness.is_none_or(|w| v.0.latest >= w.0.latest) {
            witness = Some(v);
        }
    }
    witness.copied()
}

/// Two grants of one lease whose commits are not ordered by the history (an operation paused
/// or waiting between its request and its answer while the other was granted): if each one's
/// expiry is later than the time the other was reported — the latest its commit can have been
/// — then whichever committed second took a lease that was still held, in every order. Only
/// grants nothing else changed before both were reported: a renewal or release might have
/// ended one early. One nobody heard back from makes the violation possible — if it did not
/// take effect.
fn unordered_grants(
    f: &Facts,
    leases: &BTreeMap<&LeaseName, Vec<Holding<'_>>>,
    found: &mut Findings,
) {
    // When each grant was reported: the latest its commit can have been.
    let reported: BTreeMap<(&LeaseName, Token, u64), Millis> = f
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
                let changed =
                    |h: &Holding<'_>| h.versions[1..].iter().any(|(w, _)| w.earliest <= both);
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
                let violation = Violation {
                    check: Check::I1,
                    message: format!(
                        "lease {lease}: {} was granted token {} (reported at t={ra}, event #{}, unexpired until t={ea}) and {} token {} (reported at t={rb}, event #{}, unexpired until t={eb}); neither grant is definitely before the other, and in either order the second took a lease the first still held",
                        a.holder, a.token, wa.latest, b.holder, b.token, wb.latest
                    ),
                    events: vec![wa.latest.min(wb.latest), both],
                };
                let conditions: Vec<Condition> = f
                    .lease_unknown
                    .iter()
                    .filter(|u| {
                        u.lease == **lease
                            && [a, b]
                                .iter()
                                .any(|h| u.holder == *h.holder && u.token == h.token)
                            && u.window.earliest <= both
                    })
                    .map(|u| Condition {
                        event: u.since,
                        applied: false,
                    })
                    .collect();
                if conditions.is_empty() {
                    found.certain.push(violation);
                } else {
                    found.possible.push(Possible {
                        violation,
                        conditions,
                    });
                }
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

/// Which writes a run of the write checks counts as having taken effect: the accepted ones
/// (what is certain), or those and every write nobody heard back from (what is possible: the
/// write checks only find more when more writes took effect, so these two runs bound every
/// outcome of the unknown writes between them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Counted {
    /// Accepted writes only.
    Accepted,
    /// Accepted writes and maybe-writes.
    AcceptedOrMaybe,
}

impl Counted {
    fn counts(self, w: &WriteFact) -> bool {
        w.certainty == Certainty::Accepted || self == Counted::AcceptedOrMaybe
    }
}

/// A violation of a write check, with the writes (indices into [`Facts::writes`]) it rests on.
pub(crate) struct WriteViolation {
    pub(crate) violation: Violation,
    pub(crate) writes: Vec<usize>,
}

/// For every counted write, the newest-holding counted write of the same scope that
/// definitely committed before it: the highest token, and among equal tokens one from another
/// writer if there is one. Sorting by commit window makes this O(n log n) instead of comparing
/// every pair — sweeps judge hundreds of writes per run.
struct Earlier {
    /// Per write index: (highest-token write before it, same-token write by another writer).
    best: Vec<(Option<usize>, Option<usize>)>,
}

fn earlier(f: &Facts, counted: Counted) -> Earlier {
    let mut best = vec![(None, None); f.writes.len()];
    // Per scope: every write (each gets its best), and those counted (the prefix).
    let mut scopes: BTreeMap<&Scope, (Vec<usize>, Vec<usize>)> = BTreeMap::new();
    for (i, w) in f.writes.iter().enumerate() {
        let s = scopes.entry(&w.scope).or_default();
        s.0.push(i);
        if counted.counts(w) {
            s.1.push(i);
        }
    }
    for (_, (ws, mut by_latest)) in scopes {
        by_latest.sort_by_key(|i| f.writes[*i].window.latest);
        // prefix[k]: over by_latest[..k], the highest-token write (latest among equals) and,
        // for that token, a write by a different writer than the first one found.
        let mut prefix: Vec<(Option<usize>, Option<usize>)> =
            Vec::with_capacity(by_latest.len() + 1);
        let (mut top, mut other): (Option<usize>, Option<usize>) = (None, None);
        prefix.push((None, None));
        for &i in &by_latest {
            let w = &f.writes[i];
            match top.map(|t| &f.writes[t]) {
                Some(t) if t.token > w.token => {}
                Some(t) if t.token == w.token => {
                    if t.writer != w.writer && other.is_none() {
                        other = Some(i);
                    }
                    if t.writer == w.writer {
                        top = Some(i);
                    }
                }
                _ => {
                    top = Some(i);
                    other = None;
                }
            }
            prefix.push((top, other));
        }
        for i in ws {
            let w = &f.writes[i];
            let k = by_latest.partition_point(|h| f.writes[*h].window.latest < w.window.earliest);
            best[i] = prefix[k];
        }
    }
    Earlier { best }
}

/// I3: per scope, the tokens of accepted writes never decrease in commit order, whatever part
/// they target; and an observed floor never goes down.
pub fn i3(f: &Facts, out: &mut Vec<Violation>) {
    let mut found = Vec::new();
    i3_writes(f, Counted::Accepted, Counted::Accepted, &mut found);
    out.extend(found.into_iter().map(|w| w.violation));
    i3_floor(f, out);
}

/// I3 against the writes `prefix` counts before each of those `culprits` counts.
pub(crate) fn i3_writes(
    f: &Facts,
    prefix: Counted,
    culprits: Counted,
    out: &mut Vec<WriteViolation>,
) {
    let e = earlier(f, prefix);
    for (i, w) in f.writes.iter().enumerate() {
        if !culprits.counts(w) {
            continue;
        }
        let Some(hi) = e.best[i].0.filter(|hi| f.writes[*hi].token > w.token) else {
            continue;
        };
        let h = &f.writes[hi];
        out.push(WriteViolation {
            violation: Violation {
                check: Check::I3,
                message: format!(
                    "scope {}: {} was accepted after {} — tokens of accepted writes went down from {} to {}",
                    w.scope,
                    describe_write(w),
                    describe_write(h),
                    h.token,
                    w.token
                ),
                events: vec![h.window.latest, w.window.latest],
            },
            writes: vec![hi, i],
        });
    }
}

/// An observed floor never goes down. A read observes the committed floor only as of its
/// snapshot (see `Sees`), and not at all where its own transaction set the floor; a later
/// observation below an earlier one — the first's snapshot definitely before the second's —
/// is a regression.
pub(crate) fn i3_floor(f: &Facts, out: &mut Vec<Violation>) {
    // Per scope: (latest snapshot position, highest floor up to it, where).
    let mut seen: BTreeMap<&Scope, Vec<(u64, Token, u64, Millis)>> = BTreeMap::new();
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
    let mut found = Vec::new();
    acceptance_writes(f, Counted::Accepted, Counted::Accepted, &mut found);
    out.extend(found.into_iter().map(|w| w.violation));
    let mut publishes = Findings::default();
    acceptance_publishes(f, &mut publishes);
    out.append(&mut publishes.certain);
    kept_after_fail(f, out);
}

/// Acceptance: a write the resource answered `fail` ("rejected", "fenced") must not take
/// effect — a writer told its write was refused goes on as if it had not happened (it does not
/// retry, it reports the refusal), so a kept one is data nobody stands behind. Jepsen's Elle
/// names the same shape (a read of an aborted write) an anomaly of its own. A read that shows
/// such a write's row, which no other write can have put there, makes the `fail` false
/// ([`crate::unknown::settle`] marks the write, and counts it as accepted from then on for I3
/// and the final state).
pub(crate) fn kept_after_fail(f: &Facts, out: &mut Vec<Violation>) {
    for w in &f.writes {
        let Some(by) = w.kept_after_fail else {
            continue;
        };
        out.push(Violation {
            check: Check::Acceptance,
            message: format!(
                "the resource answered fail but kept the write: {}'s write to {}/{} with token {} (answered fail, event #{}) is what the read at event #{by} shows",
                w.writer, w.scope, w.part, w.token, w.issued
            ),
            events: vec![w.issued, by],
        });
    }
}

/// Acceptance against the writes `prefix` counts before each of those `culprits` counts.
pub(crate) fn acceptance_writes(
    f: &Facts,
    prefix: Counted,
    culprits: Counted,
    out: &mut Vec<WriteViolation>,
) {
    let e = earlier(f, prefix);
    for (i, w) in f.writes.iter().enumerate() {
        if !culprits.counts(w) {
            continue;
        }
        let top = e.best[i].0.map(|t| (t, &f.writes[t]));
        let newer = match (top, e.best[i].1.map(|o| (o, &f.writes[o]))) {
            (Some((t, top)), _) if top.token > w.token => Some(t),
            (Some((t, top)), _) if top.token == w.token && top.writer != w.writer => Some(t),
            (Some((_, top)), Some((o, other)))
                if top.token == w.token && other.writer != w.writer =>
            {
                Some(o)
            }
            _ => None,
        };
        let Some(hi) = newer else { continue };
        let h = &f.writes[hi];
        let message = if h.token == w.token {
            format!(
                "token {} was used by two holders: {} came after {} — with a reused token the resource cannot tell the stale holder from the new one",
                w.token,
                describe_write(w),
                describe_write(h)
            )
        } else {
            format!(
                "stale holder's write kept: {} came after {}",
                describe_write(w),
                describe_write(h)
            )
        };
        out.push(WriteViolation {
            violation: Violation {
                check: Check::Acceptance,
                message,
                events: vec![h.window.latest, w.window.latest],
            },
            writes: vec![hi, i],
        });
    }
}

/// A publish dropped while an older-token one is the kept one: the kept one is the last kept
/// before it — or any publish nobody heard back from that can have committed before the
/// dropped one and not before that last kept one. Certain when every candidate is older than
/// the dropped one; possible when one is, if every newer unknown candidate did not take
/// effect. Per dropped publish, a scan of its key's unknown publishes.
pub(crate) fn acceptance_publishes(f: &Facts, found: &mut Findings) {
    let mut unknown: BTreeMap<&str, Vec<&UnknownPublish>> = BTreeMap::new();
    for u in &f.unknown_publishes {
        unknown.entry(u.fact.key.as_str()).or_default().push(u);
    }
    let mut kept: BTreeMap<&str, &PublishFact> = BTreeMap::new();
    for p in &f.publishes {
        if p.accepted {
            kept.insert(p.key.as_str(), p);
            continue;
        }
        let k = kept.get(p.key.as_str()).copied();
        let us: Vec<&UnknownPublish> = unknown
            .get(p.key.as_str())
            .map(|v| {
                v.iter()
                    .copied()
                    .filter(|u| !p.window.before(&u.fact.window))
                    .filter(|u| k.is_none_or(|k| !u.fact.window.before(&k.window)))
                    .collect()
            })
            .unwrap_or_default();
        let older = |t: Token| t < p.token;
        let describe = |kept: &PublishFact, how: String| {
            Violation {
            check: Check::Acceptance,
            message: format!(
                "publish {}: {}'s newer publish with token {} was dropped at t={} (event #{}) while {}'s stale publish with token {} ({how}) is kept",
                p.key, p.writer, p.token, p.at, p.window.latest, kept.writer, kept.token
            ),
            events: vec![kept.window.latest, p.window.latest],
        }
        };
        let known = |k: &PublishFact| format!("t={}, event #{}", k.at, k.window.latest);
        let newer: Vec<Condition> = us
            .iter()
            .filter(|u| !older(u.fact.token))
            .map(|u| Condition {
                event: u.issued,
                applied: false,
            })
            .collect();
        match k.filter(|k| older(k.token)) {
            Some(k) if newer.is_empty() => {
                let mut v = describe(k, known(k));
                if !us.is_empty() {
                    let events: Vec<u64> = us.iter().map(|u| u.issued).collect();
                    v.message.push_str(&format!(
                        " — or, if they took effect, one of the publishes nobody heard back from (event {}), every one older too",
                        list(&events)
                    ));
                }
                found.certain.push(v);
            }
            Some(k) => found.possible.push(Possible {
                violation: describe(k, known(k)),
                conditions: newer,
            }),
            None => {
                if let Some(u) = us.iter().find(|u| older(u.fact.token)) {
                    let mut conditions = vec![Condition {
                        event: u.issued,
                        applied: true,
                    }];
                    conditions.extend(newer);
                    found.possible.push(Possible {
                        violation: describe(
                            &u.fact,
                            format!("if it took effect, event #{}", u.issued),
                        ),
                        conditions,
                    });
                }
            }
        }
    }
}

/// Final state: every read of a part's committed state must show content from the highest
/// token accepted for it before the read's snapshot (a read that may see its own transaction's
/// uncommitted write observes nothing of the committed state; see `Sees`), and a row some
/// statement wrote: the content and writer of a write with that token to that part, issued
/// before the read — a token nobody was granted nor wrote is a phantom.
pub fn final_state(f: &Facts, out: &mut Vec<Violation>) {
    final_token_order(f, out);
    final_content(f, out);
}

/// The first half of [`final_state`]: each read of a part shows at least the highest token
/// accepted for it before the read's snapshot. A higher token is no loophole: it is a write the
/// read shows took effect — settled as applied if nobody heard back from it, counted against
/// acceptance if it was answered `fail` ([`kept_after_fail`]) — or one nobody wrote
/// ([`final_content`]). So the final content comes from the highest token that took effect.
pub fn final_token_order(f: &Facts, out: &mut Vec<Violation>) {
    let mut found = Vec::new();
    final_order(f, Counted::Accepted, &mut found);
    out.extend(found.into_iter().map(|w| w.violation));
}

/// The token order of final reads, against the writes `counted`: per part, the writes in
/// commit order with a running maximum, so each read is one binary search.
pub(crate) fn final_order(f: &Facts, counted: Counted, out: &mut Vec<WriteViolation>) {
    // The counted writes by (scope, part, latest), each with the best write of its part up to
    // it: one vector, whatever the number of parts.
    let mut order: Vec<usize> = (0..f.writes.len())
        .filter(|i| counted.counts(&f.writes[*i]))
        .collect();
    let place = |i: usize| {
        let w = &f.writes[i];
        (&w.scope, &w.part, w.window.latest)
    };
    order.sort_by(|a, b| place(*a).cmp(&place(*b)));
    let key = |j: usize| (f.writes[j].token, f.writes[j].window.latest);
    let mut best: Vec<usize> = Vec::with_capacity(order.len());
    for (k, &i) in order.iter().enumerate() {
        let w = &f.writes[i];
        let same_part = k > 0 && {
            let p = &f.writes[order[k - 1]];
            p.scope == w.scope && p.part == w.part
        };
        best.push(match best.last() {
            Some(&b) if same_part && key(b) > key(i) => b,
            _ => i,
        });
    }
    for r in &f.reads {
        let (ReadKey::Part(scope, part), Outcome::Part(row), Some(snap)) =
            (&r.key, &r.value, r.committed())
        else {
            continue;
        };
        // The part's writes committed definitely before the snapshot end at `k`.
        let from = order.partition_point(|i| {
            let w = &f.writes[*i];
            (&w.scope, &w.part) < (scope, part)
        });
        let k = order.partition_point(|i| {
            let w = &f.writes[*i];
            (&w.scope, &w.part, w.window.latest) < (scope, part, snap.earliest)
        });
        let Some(bi) = k.checked_sub(1).filter(|k| *k >= from).map(|k| best[k]) else {
            continue;
        };
        let best = &f.writes[bi];
        let what = match row {
            None => format!("{scope}/{part} is absent"),
            Some(x) if x.token < best.token => format!(
                "{scope}/{part} holds {}'s content `{}` with token {}",
                x.writer, x.content, x.token
            ),
            Some(_) => continue,
        };
        out.push(WriteViolation {
            violation: Violation {
                check: Check::Final,
                message: format!(
                    "at t={} (event #{}) {what}, but {} was accepted before that read — the final content must come from the highest accepted token",
                    r.at,
                    r.seq,
                    describe_write(best)
                ),
                events: vec![best.window.latest, r.seq],
            },
            writes: vec![bi],
        });
    }
}

/// What a final read shows must have been written: by a statement that wrote that content,
/// writer and token to that part and was issued before the read's snapshot could end. Every
/// statement counts, whatever its answer (a transaction the history cannot tell from a marker
/// may have kept it): what this finds is a value nobody wrote, not a lost one.
pub(crate) fn final_content(f: &Facts, out: &mut Vec<Violation>) {
    let mut tokens: BTreeSet<Token> = f.grants.iter().map(|g| g.token).collect();
    tokens.extend(f.written_tokens.iter().copied());
    for r in &f.reads {
        let (ReadKey::Part(scope, part), Outcome::Part(Some(x)), Some(snap)) =
            (&r.key, &r.value, r.committed())
        else {
            continue;
        };
        let version = crate::facts::RowVersion::shown(scope, part, x);
        if f.attempted(&version).is_some_and(|seq| seq < snap.latest) {
            continue;
        }
        let why = if tokens.contains(&x.token) {
            format!(
                "no statement before it wrote {}'s content `{}` with token {} to {scope}/{part}",
                x.writer, x.content, x.token
            )
        } else {
            format!(
                "token {} is a phantom: no acquire was granted it and no statement wrote it",
                x.token
            )
        };
        out.push(Violation {
            check: Check::Final,
            message: format!(
                "at t={} (event #{}) {scope}/{part} holds {}'s content `{}` with token {}, but {why}",
                r.at, r.seq, x.writer, x.content, x.token
            ),
            events: vec![r.seq],
        });
    }
}
