//! Operations whose outcome nobody learned — an `indeterminate` answer (a timeout, a lost
//! connection), or a statement still waiting when its connection was dropped or the history
//! ended — and the verdict over every way they can have turned out.
//!
//! The checkers treat such an operation as Jepsen treats `:info`: it may or may not have taken
//! effect. A violation is **certain** when it holds under every outcome of the unknown
//! operations together, **possible** when it holds under some, absent when under none; where
//! the judgement would have to try more outcomes than it is allowed, the check is
//! **undecided** and says which operations it rests on. `docs/history-jsonl.md` states the
//! algorithm for users; in short:
//!
//! 1. **Observations settle outcomes** ([`settle`]): a committed read of a part that shows the
//!    exact content, writer and token of a write nobody heard back from — and of no other
//!    write that could have committed before it — proves that write took effect; a read of a
//!    lease row that shows the expiry only one unknown renewal (or the `-infinity` only one
//!    unknown release) of that holding can have set proves it took effect, with that expiry;
//!    a read of the row definitely after an unknown renewal or release, still showing the
//!    version the operation would have replaced and nothing else able to change it, proves it
//!    did not. Settled operations are known from then on, and the verdict names the read.
//! 2. **Writes** (I3, acceptance, the final token order) only find more when more writes took
//!    effect, so two judgements bound every outcome: the accepted writes alone give the
//!    certain violations, every write that may have taken effect the possible ones. Linear.
//! 3. **Renewals and releases** (I1) interact only within one holding: at each grant, the
//!    unknown operations on the holding before it are tried both ways together, a renewal at
//!    the earliest and the latest expiry it can have set (a later expiry only makes an overlap
//!    likelier, so these two bound every value between). Exponential in the number of unknown
//!    operations on *one holding before one grant* — at most
//!    [`crate::safety::I1_UNKNOWNS_LIMIT`], beyond which that grant is undecided.
//! 4. **Publishes** (acceptance): a dropped publish breaks acceptance when the kept one is
//!    older; the kept one is the last known kept or any unknown publish after it, so a scan in
//!    order decides certain and possible. Linear.
//!
//! What does not depend on unknown outcomes is certain as before: I2 (an acquire whose answer
//! was lost is not resolved: its holder does not know its token and cannot act on it), the
//! floor's regressions, and a final read of a value no statement wrote.

use crate::facts::{Certainty, Facts, LeaseChange, LeaseFact, ReadKey, RowVersion, Window};
use crate::safety::{self, Counted, WriteViolation};
use crate::verdict::{Condition, Findings, Possible, Settled, Violation};
use leaselab_model::{Expiry, History, LeaseName, Outcome, Token};
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

pub use crate::facts::Unknown;

/// The unknown operations a resolution can change the verdict of, in the order they were
/// issued (found where every other fact is: [`crate::facts::derive`]).
pub fn unknowns(h: &History) -> Vec<Unknown> {
    crate::facts::derive(h).unknown
}

/// The whole verdict on `f`: certain, possible and undecided violations, and the unknown
/// outcomes the history settles.
pub(crate) fn judge(f: Cow<'_, Facts>) -> (Findings, Vec<Settled>) {
    let (settled, f) = settle(f);
    let f: &Facts = &f;
    let mut found = Findings::default();
    safety::i1_found(f, &mut found);
    safety::i2(f, &mut found.certain);
    safety::i3_floor(f, &mut found.certain);
    safety::acceptance_publishes(f, &mut found);
    safety::final_content(f, &mut found.certain);
    safety::kept_after_fail(f, &mut found.certain);
    // Against the writes `prefix` counts, those `culprits` counts.
    let writes = |prefix: Counted, culprits: Counted| {
        let mut out: Vec<WriteViolation> = Vec::new();
        safety::i3_writes(f, prefix, culprits, &mut out);
        safety::acceptance_writes(f, prefix, culprits, &mut out);
        if prefix == culprits {
            safety::final_order(f, prefix, &mut out);
        }
        out
    };
    let certain = writes(Counted::Accepted, Counted::Accepted);
    let key = |v: &Violation| (v.check, v.events.last().copied());
    if f.writes.iter().any(|w| w.certainty == Certainty::Maybe) {
        // What is certain, by this rule or another of the same check, is not also possible.
        let mut seen: BTreeSet<_> = certain
            .iter()
            .map(|w| &w.violation)
            .chain(&found.certain)
            .map(key)
            .collect();
        // An unknown write made stale by accepted ones first: it rests on that write alone.
        let maybe = Counted::AcceptedOrMaybe;
        let runs = writes(Counted::Accepted, maybe)
            .into_iter()
            .chain(writes(maybe, maybe));
        for w in runs {
            if !seen.insert(key(&w.violation)) {
                continue;
            }
            let mut conditions: Vec<Condition> = w
                .writes
                .iter()
                .map(|i| &f.writes[*i])
                .filter(|x| x.certainty == Certainty::Maybe)
                .map(|x| Condition {
                    event: x.issued,
                    applied: true,
                })
                .collect();
            conditions.dedup();
            found.possible.push(Possible {
                violation: w.violation,
                conditions,
            });
        }
    }
    found
        .certain
        .extend(certain.into_iter().map(|w| w.violation));
    // Certain by one rule and possible by another (two unordered grants, one of them also
    // checked against the holding before it): certain.
    let sure: BTreeSet<_> = found.certain.iter().map(key).collect();
    found
        .possible
        .retain(|p| !sure.contains(&key(&p.violation)));
    found.certain.sort_by_key(|v| v.check);
    found.possible.sort_by_key(|p| p.violation.check);
    (found, settled)
}

/// The unknown outcomes the history's own reads show, and the facts with them known: a
/// settled write counted as accepted (its commit no later than the read), a settled renewal
/// or release made a lease change of its own or dropped. Borrowed facts are copied only when
/// something is settled.
pub fn settle(mut f: Cow<'_, Facts>) -> (Vec<Settled>, Cow<'_, Facts>) {
    let mut settled = Vec::new();
    if !f.refused.is_empty() || f.writes.iter().any(|w| w.certainty == Certainty::Maybe) {
        let found = settle_writes(&f, &mut settled);
        if !found.is_empty() {
            let out = f.to_mut();
            for (c, latest, by) in found {
                let w = match c {
                    Candidate::Write(i) => &mut out.writes[i],
                    Candidate::Refused(i) => {
                        let mut w = out.refused[i].clone();
                        w.kept_after_fail = Some(by);
                        out.writes.push(w);
                        out.writes.last_mut().expect("pushed just above")
                    }
                };
                w.certainty = Certainty::Accepted;
                w.window.latest = w.window.latest.min(latest).max(w.window.earliest);
            }
        }
    }
    if !f.excluded.is_empty() {
        exclude_writes(&mut f, &mut settled);
    }
    if !f.lease_unknown.is_empty() || !f.lease_refused.is_empty() {
        let decided = settle_leases(&f, &mut settled);
        if !decided.is_empty() {
            apply_leases(f.to_mut(), decided);
        }
    }
    settled.sort_by_key(|s| s.event);
    (settled, f)
}

/// The writes a read shows did not take effect ([`Facts::excluded`]), unless another read
/// showed they did (what was seen outweighs what is inferred): dropped from the writes.
fn exclude_writes(f: &mut Cow<'_, Facts>, settled: &mut Vec<Settled>) {
    let mut gone = BTreeSet::new();
    for x in &f.excluded {
        let w = &f.writes[x.write];
        if w.certainty != Certainty::Maybe || !gone.insert(x.write) {
            continue;
        }
        let shown = match &x.shown {
            None => format!("no row of {}/{}", w.scope, w.part),
            Some(r) => format!(
                "{}'s content `{}` with token {}",
                r.writer, r.content, r.token
            ),
        };
        settled.push(Settled {
            event: w.issued,
            applied: false,
            by: x.by,
            message: format!(
                "{}'s write to {}/{} with token {} did not take effect: the read at event #{}, after it, shows {shown}, which no write after it can have put there",
                w.writer, w.scope, w.part, w.token, x.by
            ),
        });
    }
    if gone.is_empty() {
        return;
    }
    let out = f.to_mut();
    let mut i = 0;
    out.writes.retain(|_| {
        i += 1;
        !gone.contains(&(i - 1))
    });
}

/// A write that may have put a row version there: one nobody heard back from, or one answered
/// `fail` (an index into [`Facts::writes`] or [`Facts::refused`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Candidate {
    Write(usize),
    Refused(usize),
}

/// A part read showing exactly one unknown write's row version, which no accepted write could
/// have put there before the read: that write took effect. The same for a write answered
/// `fail`: a `fail` is a claim that it did not, and the read shows the claim false — the
/// resource kept what it said it refused (counted against acceptance,
/// [`crate::safety::kept_after_fail`]). Returns each such write with the latest its commit can
/// now have been, and the read.
fn settle_writes(f: &Facts, settled: &mut Vec<Settled>) -> Vec<(Candidate, u64, u64)> {
    let mut found = Vec::new();
    // The writes of every row version some unknown or refused write carries.
    let mut versions: BTreeMap<RowVersion, Vec<Candidate>> = BTreeMap::new();
    for (i, w) in f.writes.iter().enumerate() {
        if w.certainty == Certainty::Maybe {
            versions
                .entry(w.version())
                .or_default()
                .push(Candidate::Write(i));
        }
    }
    for (i, w) in f.refused.iter().enumerate() {
        versions
            .entry(w.version())
            .or_default()
            .push(Candidate::Refused(i));
    }
    for (i, w) in f.writes.iter().enumerate() {
        if w.certainty == Certainty::Accepted {
            if let Some(v) = versions.get_mut(&w.version()) {
                v.push(Candidate::Write(i));
            }
        }
    }
    let write = |c: Candidate| match c {
        Candidate::Write(i) => &f.writes[i],
        Candidate::Refused(i) => &f.refused[i],
    };
    let mut done: BTreeSet<Candidate> = BTreeSet::new();
    for r in &f.reads {
        let (ReadKey::Part(scope, part), Outcome::Part(Some(x)), Some(snap)) =
            (&r.key, &r.value, r.committed())
        else {
            continue;
        };
        let Some(v) = versions.get(&RowVersion::shown(scope, part, x)) else {
            continue;
        };
        // A statement that waited from event k (its window begins at k + 1) may be what a read
        // at k + 1 shows: a recorder's invoke, then another process's read, then its answer —
        // the write may have committed before the read. (In the model a read at k + 1 cannot
        // see it, as only a commit at k + 1 can wake it; nor would a read then show its row.)
        let mut could = v
            .iter()
            .filter(|c| write(**c).window.earliest <= snap.latest);
        let (Some(&only), None) = (could.next(), could.next()) else {
            continue;
        };
        let w = write(only);
        let refused = matches!(only, Candidate::Refused(_));
        if (w.certainty != Certainty::Maybe && !refused) || !done.insert(only) {
            continue;
        }
        found.push((only, snap.latest - 1, r.seq));
        settled.push(Settled {
            event: w.issued,
            applied: true,
            by: r.seq,
            message: format!(
                "{}'s write to {scope}/{part} with token {}{} took effect: the read at event #{} shows its content `{}`, which no other write could have put there",
                w.writer,
                w.token,
                if refused { ", answered `fail`," } else { "" },
                r.seq,
                w.content
            ),
        });
    }
    found
}

/// More unknown renewals and releases than this on one holding, and its reads settle none of
/// them: each read would weigh every one (a verdict that stays possible is never wrong).
pub const SETTLE_LIMIT: usize = 64;

/// A lease read showing what only one unknown renewal or release of that holding can have
/// set: it took effect. A lease read definitely after one, still showing the version before
/// it, with nothing else able to change the row between: it did not.
fn settle_leases(f: &Facts, settled: &mut Vec<Settled>) -> Decided {
    // Known versions per (lease, token), in ascending `latest`, with the smallest `earliest`
    // from each one on (is there a change after x that can have committed before y?); and per
    // (lease, token, expiry) the smallest `earliest` and `latest` of a version setting it.
    type Versions = (Vec<Window>, Vec<u64>);
    let mut known: BTreeMap<(&LeaseName, Token), Versions> = BTreeMap::new();
    let mut by_value: BTreeMap<(&LeaseName, Token, Expiry), (u64, u64)> = BTreeMap::new();
    for lf in &f.lease_changes {
        let (token, expires) = match &lf.change {
            LeaseChange::Granted { token, expires, .. } => (*token, *expires),
            LeaseChange::Renewed { token, expires } => (*token, *expires),
            LeaseChange::Released { token } => (*token, Expiry::NegInfinity),
        };
        known
            .entry((&lf.lease, token))
            .or_default()
            .0
            .push(lf.window);
        let v = by_value
            .entry((&lf.lease, token, expires))
            .or_insert((u64::MAX, u64::MAX));
        *v = (v.0.min(lf.window.earliest), v.1.min(lf.window.latest));
    }
    for (windows, suffix) in known.values_mut() {
        windows.sort_by_key(|w| w.latest);
        *suffix = windows
            .iter()
            .rev()
            .scan(u64::MAX, |m, w| {
                *m = (*m).min(w.earliest);
                Some(*m)
            })
            .collect();
        suffix.reverse();
    }
    // The unknown renewals and releases, then (from index `n`) those answered `fail`: a read
    // can show one of those took effect after all.
    let n = f.lease_unknown.len();
    let lu = |i: usize| match i.checked_sub(n) {
        None => &f.lease_unknown[i],
        Some(k) => &f.lease_refused[k],
    };
    let mut unknown: BTreeMap<(&LeaseName, Token), Vec<usize>> = BTreeMap::new();
    for (i, u) in f.lease_unknown.iter().chain(&f.lease_refused).enumerate() {
        unknown.entry((&u.lease, u.token)).or_default().push(i);
    }
    let mut decided = Decided::new();
    let none: Versions = (Vec::new(), Vec::new());
    for r in &f.reads {
        let (ReadKey::Lease(lease), Outcome::Lease(Some(row)), Some(snap)) =
            (&r.key, &r.value, r.committed())
        else {
            continue;
        };
        let Some(us) = unknown
            .get(&(lease, row.token))
            .filter(|us| us.len() <= SETTLE_LIMIT)
        else {
            continue;
        };
        let shown = row.expires_at;
        let in_range = |i: usize| {
            let u = lu(i);
            match (u.renew_ttl, shown) {
                (None, Expiry::NegInfinity) => true,
                (Some(_), Expiry::At(_)) => u.expiry(false) <= shown && shown <= u.expiry(true),
                _ => false,
            }
        };
        let before_read = |w: &Window| w.earliest < snap.latest;
        let value = by_value.get(&(lease, row.token, shown));
        let known_shows = value.is_some_and(|(earliest, _)| *earliest < snap.latest);
        let could: Vec<usize> = us
            .iter()
            .copied()
            .filter(|i| lu(*i).holder == row.holder)
            .filter(|i| before_read(&lu(*i).window) && in_range(*i))
            .collect();
        let kind = |i: usize| match (lu(i).renew_ttl, i >= n) {
            (Some(_), false) => "renewal",
            (None, false) => "release",
            (Some(_), true) => "renewal, answered `fail`,",
            (None, true) => "release, answered `fail`,",
        };
        if !known_shows && could.len() == 1 && !decided.contains_key(&could[0]) {
            decided.insert(could[0], Some((shown, snap.latest - 1)));
            let u = lu(could[0]);
            settled.push(Settled {
                event: u.since,
                applied: true,
                by: r.seq,
                message: format!(
                    "{}'s {} of lease {lease} token {} took effect: the read at event #{} shows expiry {shown}, which nothing else could have set",
                    u.holder, kind(could[0]), u.token, r.seq
                ),
            });
            continue;
        }
        // Not applied: the read, definitely after the operation, shows a version that
        // committed before the operation was issued and that the operation could not have
        // set itself, and nothing else can have changed the holding in between.
        let (windows, suffix) = known.get(&(lease, row.token)).unwrap_or(&none);
        // (One answered `fail` is not applied by its answer: nothing to settle.)
        for &i in us.iter().filter(|i| **i < n) {
            let u = lu(i);
            if decided.contains_key(&i) || u.holder != row.holder || in_range(i) {
                continue;
            }
            let shows_older = value.is_some_and(|(_, latest)| *latest < u.window.earliest);
            // A known change not definitely before u that can have committed before the read.
            let k = windows.partition_point(|w| w.latest < u.window.earliest);
            let changed = suffix.get(k).is_some_and(|e| *e < snap.latest);
            let others = us
                .iter()
                .any(|j| *j != i && *j < n && before_read(&lu(*j).window));
            if shows_older && !changed && !others && u.window.latest < snap.earliest {
                decided.insert(i, None);
                settled.push(Settled {
                    event: u.since,
                    applied: false,
                    by: r.seq,
                    message: format!(
                        "{}'s {} of lease {lease} token {} did not take effect: the read at event #{}, after it, still shows expiry {shown}",
                        u.holder, kind(i), u.token, r.seq
                    ),
                });
            }
        }
    }
    decided
}

/// Per unknown renewal or release (its index in [`Facts::lease_unknown`], or past its end, in
/// [`Facts::lease_refused`]): applied with an expiry and a commit no later than, or not.
type Decided = BTreeMap<usize, Option<(Expiry, u64)>>;

/// The settled renewals and releases made known: a lease change of their own, or dropped.
fn apply_leases(out: &mut Facts, decided: Decided) {
    // Taken out in one pass: removing them one at a time moved the rest once per settled one.
    let all = std::mem::take(&mut out.lease_unknown);
    let n = all.len();
    let mut taken = Vec::with_capacity(decided.len());
    for (i, u) in all.into_iter().enumerate() {
        match decided.get(&i) {
            Some(how) => taken.push((u, how)),
            None => out.lease_unknown.push(u),
        }
    }
    // Answered `fail`, shown applied by a read.
    for (&i, how) in decided.range(n..) {
        if let Some(u) = out.lease_refused.get(i - n) {
            taken.push((u.clone(), how));
        }
    }
    for (u, how) in taken {
        let Some((expires, by)) = how else { continue };
        let change = match u.renew_ttl {
            Some(_) => LeaseChange::Renewed {
                token: u.token,
                expires: *expires,
            },
            None => LeaseChange::Released { token: u.token },
        };
        out.lease_changes.push(LeaseFact {
            lease: u.lease.clone(),
            change,
            window: Window {
                earliest: u.window.earliest,
                latest: u.window.latest.min(*by).max(u.window.earliest),
            },
        });
    }
}
