//! How the facts are derived: one pass over the history, following each connection's
//! transaction and each statement that waited, to the window where each one took effect.

use super::reads::{exclude, matters, note_own, read_fact, written_key};
use super::*;
use leaselab_model::Reason;
use leaselab_model::{DbName, Event, History, Holder, LeaseName, Millis, Op, Outcome};
use std::collections::BTreeMap;

#[derive(Clone, Debug)]
pub(super) struct Pending {
    pub(super) op: Op,
    pub(super) actor: Holder,
    pub(super) since: u64,
    pub(super) at: Millis,
}

/// Where an operation nobody will hear back from can have taken effect, at the latest: the
/// event position and its server time.
#[derive(Clone, Copy, Debug)]
struct Until(u64, Millis);

/// "The end of the history", before the end is known: a client that disconnected leaves its
/// waiting statement unreported up to the end. [`Deriver::finish`] puts the last event's
/// position and time in its place (no event position or server time can be `u64::MAX`: the
/// format stops at 2⁶³ − 1).
const TO_THE_END: Until = Until(u64::MAX, Millis(u64::MAX));

/// Per (database, connection) state, looked up by the borrowed name: no allocation per event.
#[derive(Debug)]
pub(super) struct Conns<T>(pub(super) BTreeMap<DbName, BTreeMap<String, T>>);

impl<T> Default for Conns<T> {
    fn default() -> Self {
        Conns(BTreeMap::new())
    }
}

impl<T> Conns<T> {
    fn get_mut(&mut self, db: DbName, conn: &str) -> Option<&mut T> {
        self.0.get_mut(&db)?.get_mut(conn)
    }
    fn remove(&mut self, db: DbName, conn: &str) -> Option<T> {
        self.0.get_mut(&db)?.remove(conn)
    }
    fn insert(&mut self, db: DbName, conn: &str, v: T) {
        self.0.entry(db).or_default().insert(conn.to_string(), v);
    }
    fn entry(&mut self, db: DbName, conn: &str) -> &mut T
    where
        T: Default,
    {
        let m = self.0.entry(db).or_default();
        if !m.contains_key(conn) {
            m.insert(conn.to_string(), T::default());
        }
        m.get_mut(conn).expect("inserted just above")
    }
    /// Every entry of `db`, taken out, in connection order.
    fn take_db(&mut self, db: DbName) -> BTreeMap<String, T> {
        self.0.remove(&db).unwrap_or_default()
    }
    pub(super) fn values(&self) -> impl Iterator<Item = &T> {
        self.0.values().flat_map(|m| m.values())
    }
    /// Every entry, in (database, connection) order.
    fn into_entries(self) -> impl Iterator<Item = (DbName, T)> {
        self.0
            .into_iter()
            .flat_map(|(db, m)| m.into_values().map(move |v| (db, v)))
    }
}

/// Upserts done inside an open transaction, per connection: accepted at commit.
type Drafts = BTreeMap<String, Vec<(Op, Holder, u64)>>;

/// Per (database, connection): the open transaction as the client knows it.
#[derive(Default, Debug)]
pub(super) struct Txn {
    pub(super) open: bool,
    /// An error aborted it: nothing of it will commit.
    pub(super) aborted: bool,
    /// Lease changes waiting for the commit.
    pub(super) lease: Vec<(LeaseName, LeaseChange)>,
    /// Publishes waiting for the commit (their window is moved to it).
    pub(super) publishes: Vec<PublishFact>,
    /// `BEGIN ISOLATION LEVEL REPEATABLE READ`.
    pub(super) repeatable: bool,
    /// The position of the transaction's first statement (where its snapshot is taken), and
    /// of its first one that is not a fence (a fence of the row fence or of none sends no
    /// SQL, so the snapshot may come only then).
    pub(super) first: Option<u64>,
    pub(super) first_sql: Option<u64>,
    /// Rows the transaction wrote or may have written: the version a read of it returns
    /// (`None`: unknown).
    pub(super) own: Vec<(ReadKey, Option<Outcome>)>,
}

/// A deliberately wrong way of deriving facts: the negative controls of the checkers' second
/// oracle (the ledger cross-check must notice each).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WrongFacts {
    /// A statement that waited takes effect when its client collects the reply, not when it
    /// committed.
    ReplyOrder,
    /// A REPEATABLE READ read shows the current committed state, not its snapshot.
    RepeatableReadIsCurrent,
}

impl WrongFacts {
    /// Every wrong rule.
    pub const ALL: [WrongFacts; 2] = [WrongFacts::ReplyOrder, WrongFacts::RepeatableReadIsCurrent];
}

/// Derives the facts of a history.
pub fn derive(h: &History) -> Facts {
    derive_with(h, false, None)
}

/// Derives the facts of a history. `res_transactions`: the caller knows that the resource
/// database keeps real transactions (any fence but check-then-write, whose `BEGIN` is a marker
/// a history cannot tell from a real one), so a REPEATABLE READ read there sees the snapshot of
/// its transaction's first statement exactly. `wrong`: one deliberately wrong rule (negative
/// controls only).
pub fn derive_with(h: &History, res_transactions: bool, wrong: Option<WrongFacts>) -> Facts {
    let mut d = Deriver::new(res_transactions, wrong, true);
    for e in &h.events {
        d.push(e);
    }
    d.finish()
}

/// The facts of a history derived event by event, keeping nothing of an event but what a fact
/// needs: what `judge` uses to read a file of any length in bounded memory. With every read
/// kept it gives exactly [`derive_with`]'s facts; for judging alone ([`Deriver::for_judging`])
/// it drops, as each arrives, the reads no check of [`crate::check`] can use (see
/// [`Deriver::for_judging`]).
#[derive(Debug)]
pub struct Deriver {
    f: Facts,
    /// Statements that blocked, per (db, connection): resolved by the next `await`.
    blocked: Conns<Pending>,
    drafts: Drafts,
    txns: Conns<Txn>,
    res_transactions: bool,
    wrong: Option<WrongFacts>,
    /// The last event so far.
    end: Until,
    /// Keep every read (`false`: only those a check can use).
    all_reads: bool,
    /// The first attempt of each row version, by hash (indices into `f.attempts`).
    attempted: BTreeMap<u64, Vec<usize>>,
    /// The highest token any statement carried to each part so far.
    part_max: BTreeMap<(Scope, Part), Token>,
    /// Accepted writes by their version's hash (indices into `f.writes`), and how many of
    /// `f.writes` are indexed.
    accepted: BTreeMap<u64, Vec<usize>>,
    accepted_seen: usize,
    /// (lease, token) of every unknown renewal or release so far, and how many of
    /// `f.lease_unknown` and of `f.lease_refused` that covers.
    lease_unknown: std::collections::BTreeSet<(LeaseName, Token)>,
    lease_unknown_seen: (usize, usize),
    /// How many of `f.writes` and `f.refused` have reached their attempts' `reach`.
    writes_seen: usize,
    refused_seen: usize,
    /// Per part, the writes nobody heard back from that no read has yet settled or passed
    /// over (indices into `f.writes`): those a later read may show did not take effect.
    maybe_open: BTreeMap<(Scope, Part), Vec<usize>>,
}

impl Deriver {
    fn new(res_transactions: bool, wrong: Option<WrongFacts>, all_reads: bool) -> Deriver {
        Deriver {
            f: Facts::default(),
            blocked: Conns::default(),
            drafts: Drafts::new(),
            txns: Conns::default(),
            res_transactions,
            wrong,
            end: Until(0, Millis(0)),
            all_reads,
            attempted: BTreeMap::new(),
            part_max: BTreeMap::new(),
            accepted: BTreeMap::new(),
            accepted_seen: 0,
            lease_unknown: std::collections::BTreeSet::new(),
            lease_unknown_seen: (0, 0),
            writes_seen: 0,
            refused_seen: 0,
            maybe_open: BTreeMap::new(),
        }
    }

    /// For [`crate::check`]'s checks alone: a read is kept only if one of them can use it.
    /// Every write a read can count against was issued before the read, so when it arrives
    /// the history so far decides: a part read is dropped when no statement carried a token
    /// above the one it shows to that part (the final token order cannot fire), the version
    /// it shows was attempted before its snapshot (nor can the final content), and an
    /// accepted write of that version can have committed before it (so it cannot be the one
    /// read that settles an unknown write: it shows the accepted one, or either); a lease read
    /// is dropped when no renewal or release of the holding it shows is unknown, still
    /// waiting, or answered `fail` (a read can show it took effect after all); a read of a
    /// transaction's own write observes nothing committed. Floor and publish reads are kept.
    /// What a part read shows of an unknown write that did not take effect is decided as it
    /// arrives ([`Excluded`]), so that needs no read kept either.
    pub fn for_judging() -> Deriver {
        Deriver::new(false, None, false)
    }

    /// Takes the next event (events come in history order, numbered from 1).
    pub fn push(&mut self, e: &Event) {
        self.end = Until(e.seq, e.at);
        let conn = e.conn_str();
        let db = e.op.db();
        // A new statement on a connection whose blocked statement was never collected: that
        // statement had finished (else this one would be `busy`), and its outcome is lost.
        if let Some(d) = db {
            let lost_result = !matches!(
                e.op,
                Op::Await { .. } | Op::Disconnect { .. } | Op::Crash { .. } | Op::Restart { .. }
            ) && !matches!(&e.outcome, Outcome::Error(Reason::Busy))
                && e.outcome != Outcome::Unavailable;
            if lost_result {
                if let Some(p) = self.blocked.remove(d, conn) {
                    lost(&mut self.f, d, &p, Until(e.seq, e.at));
                    if let Some(t) = self.txns.get_mut(d, conn).filter(|t| t.open) {
                        if let Some(k) = written_key(&p.op) {
                            t.own.push((k, None));
                        }
                    }
                }
            }
            // The first statement of a transaction takes its snapshot.
            let sent = !matches!(
                e.op,
                Op::Begin { .. }
                    | Op::BeginRepeatableRead { .. }
                    | Op::Commit { .. }
                    | Op::Rollback { .. }
                    | Op::Await { .. }
                    | Op::Disconnect { .. }
                    | Op::Crash { .. }
                    | Op::Restart { .. }
            ) && !matches!(&e.outcome, Outcome::Error(Reason::Busy | Reason::ConnLost))
                && e.outcome != Outcome::Unavailable;
            if sent {
                if let Some(t) = self.txns.get_mut(d, conn).filter(|t| t.open) {
                    t.first.get_or_insert(e.seq);
                    if !matches!(e.op, Op::Fence { .. }) {
                        t.first_sql.get_or_insert(e.seq);
                    }
                }
            }
        }
        // `busy`: the connection's statement still waits; this one was never sent.
        if matches!(&e.outcome, Outcome::Error(Reason::Busy)) {
            return;
        }
        if let Some(v) = RowVersion::written(&e.op, &e.actor) {
            if e.outcome != Outcome::Unavailable {
                // A transaction's upsert (or one still waiting) commits with its transaction.
                let upsert = matches!(e.op, Op::Upsert { .. })
                    && matches!(
                        e.outcome,
                        Outcome::Ok | Outcome::Blocked | Outcome::Indeterminate(_)
                    );
                self.attempt(&v, e.seq, upsert);
            }
        }
        let f = &mut self.f;
        let wrong = self.wrong;
        match (&e.op, &e.outcome) {
            // `still-blocked`: the statement is still waiting; a later `await` resolves it.
            (Op::Await { .. }, Outcome::Error(Reason::StillBlocked)) => {}
            (Op::Await { db }, out) => {
                if let Some(p) = self.blocked.remove(*db, conn) {
                    let w = if wrong == Some(WrongFacts::ReplyOrder) {
                        Window::at(e.seq)
                    } else {
                        Window {
                            earliest: p.since + 1,
                            latest: e.seq,
                        }
                    };
                    let t = self.txns.entry(*db, conn);
                    note_unknown(f, &p.op, out, p.since, e.seq);
                    if t.open && matches!(out, Outcome::Error(r) if r.is_sql_error()) {
                        abort(f, t, &mut self.drafts, *db, conn);
                    } else {
                        note_own(t, &p.op, &p.actor, out);
                        let issued = (p.since, p.at);
                        record(
                            f,
                            &mut self.drafts,
                            t,
                            conn,
                            &p.op,
                            &p.actor,
                            out,
                            w,
                            e,
                            issued,
                        );
                    }
                }
            }
            (op, Outcome::Blocked) => {
                if let Some(db) = op.db() {
                    self.blocked.insert(
                        db,
                        conn,
                        Pending {
                            op: op.clone(),
                            actor: e.actor.clone(),
                            since: e.seq,
                            at: e.at,
                        },
                    );
                }
            }
            (Op::Begin { db } | Op::BeginRepeatableRead { db }, Outcome::Ok) => {
                let t = self.txns.entry(*db, conn);
                if !t.open {
                    *t = Txn {
                        open: true,
                        repeatable: matches!(e.op, Op::BeginRepeatableRead { .. }),
                        ..Txn::default()
                    };
                }
            }
            (Op::Commit { db }, out) => {
                let t = self.txns.remove(*db, conn).unwrap_or_default();
                let ds = if *db == DbName::Res {
                    self.drafts.remove(conn).unwrap_or_default()
                } else {
                    Vec::new()
                };
                // COMMIT of an aborted transaction answers without an error but rolls back.
                let certainty = match out {
                    Outcome::Ok if !t.aborted => Some(Certainty::Accepted),
                    Outcome::Indeterminate(_) if !t.aborted => Some(Certainty::Maybe),
                    _ => None,
                };
                if let Some(c) = certainty {
                    for (op, actor, _) in ds {
                        let w = Window::at(e.seq);
                        f.writes.extend(write_fact(&op, &actor, w, e.at, c, e.seq));
                    }
                }
                if certainty == Some(Certainty::Accepted) {
                    for (lease, change) in t.lease {
                        push_lease(f, lease, change, Window::at(e.seq), e.at);
                    }
                    // Between the statement and the commit: in check-then-write mode the
                    // resource keeps no transactions (BEGIN and COMMIT are markers the history
                    // cannot tell from real ones), and the publish took effect at once.
                    for mut p in t.publishes {
                        p.window.latest = e.seq;
                        f.publishes.push(p);
                    }
                }
            }
            (Op::Rollback { db }, _) => {
                // Publishes of a rolled-back transaction did not happen — unless it was a
                // check-then-write marker, which the history cannot tell: unknown.
                if let Some(t) = self.txns.remove(*db, conn) {
                    discard(f, &t, *db);
                }
                if *db == DbName::Res {
                    self.drafts.remove(conn);
                }
            }
            (Op::Disconnect { db }, Outcome::Ok) => {
                // The client left: its transaction rolls back; a statement it left waiting is
                // never reported (an autocommit one may still commit: counted as an orphan).
                if let Some(t) = self.txns.remove(*db, conn) {
                    discard(f, &t, *db);
                }
                if *db == DbName::Res {
                    self.drafts.remove(conn);
                }
                if let Some(p) = self.blocked.remove(*db, conn) {
                    lost(f, *db, &p, TO_THE_END);
                }
            }
            (Op::Crash { db }, Outcome::Ok) => {
                for (_, t) in self.txns.take_db(*db) {
                    discard(f, &t, *db);
                }
                if *db == DbName::Res {
                    self.drafts.clear();
                }
                // A waiting statement may have finished before the crash: nobody will know.
                for (_, p) in self.blocked.take_db(*db) {
                    lost(f, *db, &p, Until(e.seq, e.at));
                }
            }
            (op, out) => {
                let d = db.unwrap_or(DbName::Res);
                let t = self.txns.entry(d, conn);
                if db.is_some() && t.open && matches!(out, Outcome::Error(r) if r.is_sql_error()) {
                    abort(f, t, &mut self.drafts, d, conn);
                } else {
                    note_unknown(f, op, out, e.seq, e.seq);
                    if db.is_some() {
                        let exact = self.res_transactions || db == Some(DbName::Lease);
                        if let Some(r) = read_fact(t, e, exact, wrong) {
                            exclude(f, &r, &self.attempted, &self.blocked, &mut self.maybe_open);
                            let keep = self.all_reads
                                || matters(
                                    &r,
                                    f,
                                    &self.attempted,
                                    &self.part_max,
                                    &mut self.accepted,
                                    &mut self.accepted_seen,
                                    &mut self.lease_unknown,
                                    &mut self.lease_unknown_seen,
                                    &self.blocked,
                                );
                            if keep {
                                f.reads.push(r);
                            }
                        }
                        note_own(t, op, &e.actor, out);
                    }
                    record(
                        f,
                        &mut self.drafts,
                        t,
                        conn,
                        op,
                        &e.actor,
                        out,
                        Window::at(e.seq),
                        e,
                        (e.seq, e.at),
                    );
                }
            }
        }
        if let (Outcome::Error(Reason::ConnLost), Some(db)) = (&e.outcome, db) {
            if let Some(t) = self.txns.remove(db, conn) {
                discard(&mut self.f, &t, db);
            }
            if db == DbName::Res {
                self.drafts.remove(conn);
            }
        }
        self.index_writes();
    }

    /// The writes this event made known: each widens its version's reach, and one nobody
    /// heard back from waits for a read that shows it did not take effect.
    fn index_writes(&mut self) {
        let f = &mut self.f;
        let new = f.writes[self.writes_seen..]
            .iter()
            .chain(&f.refused[self.refused_seen..]);
        for w in new {
            if let Some(a) = attempt_of(&self.attempted, &f.attempts, &w.version()) {
                let a = &mut f.attempts[a];
                a.reach = a.reach.max(w.window.latest);
            }
        }
        for (i, w) in f.writes.iter().enumerate().skip(self.writes_seen) {
            if w.certainty == Certainty::Maybe {
                self.maybe_open
                    .entry((w.scope.clone(), w.part.clone()))
                    .or_default()
                    .push(i);
            }
        }
        self.writes_seen = f.writes.len();
        self.refused_seen = f.refused.len();
    }

    /// The first attempt of each row version is kept (with the version itself, so a look-up
    /// needs no history), and the highest token carried to each part.
    fn attempt(&mut self, v: &RowVersion<'_>, seq: u64, upsert: bool) {
        self.f.written_tokens.insert(v.token);
        let max = self
            .part_max
            .entry((v.scope.clone(), v.part.clone()))
            .or_insert(v.token);
        *max = (*max).max(v.token);
        let hash = v.hash();
        let same = self.attempted.entry(hash).or_default();
        if let Some(i) = same
            .iter()
            .copied()
            .find(|i| self.f.attempts[*i].version() == *v)
        {
            let a = &mut self.f.attempts[i];
            a.last = a.last.max(seq);
            a.upsert |= upsert;
            return;
        }
        same.push(self.f.attempts.len());
        self.f.attempts.push(Attempt {
            hash,
            seq,
            scope: v.scope.clone(),
            part: v.part.clone(),
            token: v.token,
            writer: v.writer.clone(),
            content: v.content.to_string(),
            last: seq,
            reach: seq,
            upsert,
        });
    }

    /// The facts, once every event is in.
    pub fn finish(self) -> Facts {
        let Deriver {
            mut f,
            blocked,
            txns,
            end,
            ..
        } = self;
        for (db, p) in blocked.into_entries() {
            lost(&mut f, db, &p, end);
        }
        // What waited "to the end" now knows where the end is.
        let to_end = |w: &mut Window| {
            if w.latest == TO_THE_END.0 {
                w.latest = end.0.max(w.earliest);
            }
        };
        for w in &mut f.writes {
            to_end(&mut w.window);
        }
        for u in &mut f.lease_unknown {
            to_end(&mut u.window);
            if u.to == TO_THE_END.1 {
                u.to = end.1;
            }
        }
        for u in &mut f.unknown_publishes {
            to_end(&mut u.fact.window);
        }
        f.attempts.sort_unstable_by_key(|a| (a.hash, a.seq));
        f.attempts.shrink_to_fit();
        f.unknown.sort_by_key(|u| u.issued);
        // Publishes of a transaction still open at the end: a check-then-write marker's took
        // effect, a real one's did not; the history cannot tell which.
        for (db, t) in txns.into_entries() {
            discard(&mut f, &t, db);
        }
        f
    }
}

/// Where in `attempts` the first attempt of row version `v` is, by the index of hashes.
pub(super) fn attempt_of(
    attempted: &BTreeMap<u64, Vec<usize>>,
    attempts: &[Attempt],
    v: &RowVersion<'_>,
) -> Option<usize> {
    attempted
        .get(&v.hash())?
        .iter()
        .copied()
        .find(|i| attempts[*i].version() == *v)
}

/// A transaction ends without committing. Its publishes did not happen — unless it was a
/// check-then-write marker (the resource then keeps no transactions and each publish took
/// effect at once), which a history cannot tell from a real transaction: they count as
/// unreported.
fn discard(f: &mut Facts, t: &Txn, db: DbName) {
    for _ in &t.publishes {
        bump_unreported(f, db);
    }
}

fn abort(f: &mut Facts, t: &mut Txn, drafts: &mut Drafts, db: DbName, conn: &str) {
    discard(f, t, db);
    t.aborted = true;
    t.lease.clear();
    t.publishes.clear();
    t.own.clear();
    if db == DbName::Res {
        drafts.remove(conn);
    }
}

/// A statement whose outcome nobody will collect.
/// It may have taken effect anywhere after it was issued, up to `until`.
fn lost(f: &mut Facts, db: DbName, p: &Pending, until: Until) {
    bump_unreported(f, db);
    if resolvable(&p.op) {
        f.unknown.push(Unknown {
            issued: p.since,
            answered: None,
        });
    }
    let w = Window {
        earliest: p.since + 1,
        latest: until.0.max(p.since + 1),
    };
    match &p.op {
        Op::Renew { .. } | Op::Release { .. } => {
            unknown_lease(f, &p.op, p.since, w, p.at, until.1);
        }
        Op::Write { .. } => {
            let fact = write_fact(&p.op, &p.actor, w, p.at, Certainty::Maybe, p.since);
            f.writes.extend(fact.map(|x| WriteFact {
                unanswered: true,
                ..x
            }));
        }
        Op::Publish { .. } => unknown_publish(f, &p.op, &p.actor, w, p.at, p.since),
        _ => {}
    }
}

/// A renewal or release nobody learned the outcome of, issued at server time `from`, and
/// whose commit can lie in `w`, up to server time `to`.
fn unknown_lease(f: &mut Facts, op: &Op, since: u64, w: Window, from: Millis, to: Millis) {
    if let Some(u) = lease_op(op, since, w, from, to) {
        f.lease_unknown.push(u);
    }
}

/// A renewal or release as one whose outcome a read may settle.
fn lease_op(op: &Op, since: u64, w: Window, from: Millis, to: Millis) -> Option<UnknownLease> {
    let (lease, holder, token, renew_ttl) = match op {
        Op::Renew {
            lease,
            holder,
            token,
            ttl_ms,
        } => (lease, holder, token, Some(*ttl_ms)),
        Op::Release {
            lease,
            holder,
            token,
        } => (lease, holder, token, None),
        _ => return None,
    };
    Some(UnknownLease {
        lease: lease.clone(),
        holder: holder.clone(),
        token: *token,
        since,
        renew_ttl,
        window: w,
        from,
        to,
    })
}

fn unknown_publish(f: &mut Facts, op: &Op, actor: &Holder, w: Window, at: Millis, issued: u64) {
    if let Op::Publish { key, token, .. } = op {
        f.unknown_publishes.push(UnknownPublish {
            fact: PublishFact {
                key: key.clone(),
                writer: actor.clone(),
                token: *token,
                accepted: true,
                window: w,
                at,
            },
            issued,
        });
    }
}

fn bump_unreported(f: &mut Facts, db: DbName) {
    match f.unreported.iter_mut().find(|(d, _)| *d == db) {
        Some((_, n)) => *n += 1,
        None => f.unreported.push((db, 1)),
    }
}

fn push_lease(f: &mut Facts, lease: LeaseName, change: LeaseChange, w: Window, at: Millis) {
    if let LeaseChange::Granted { holder, token, .. } = &change {
        f.grants.push(GrantFact {
            lease: lease.clone(),
            holder: holder.clone(),
            token: *token,
            window: w,
            at,
        });
    }
    f.lease_changes.push(LeaseFact {
        lease,
        change,
        window: w,
    });
}

#[allow(clippy::too_many_arguments)]
fn record(
    f: &mut Facts,
    drafts: &mut Drafts,
    t: &mut Txn,
    conn: &str,
    op: &Op,
    actor: &Holder,
    out: &Outcome,
    w: Window,
    e: &Event,
    issued: (u64, Millis),
) {
    let at = e.at;
    let change = match (op, out) {
        (Op::Acquire { holder, ttl_ms, .. }, Outcome::Granted { token, expires }) => {
            let now = match expires {
                leaselab_model::Expiry::At(x) => Millis(x.0.saturating_sub(*ttl_ms)),
                leaselab_model::Expiry::NegInfinity => at,
            };
            Some(LeaseChange::Granted {
                holder: holder.clone(),
                token: *token,
                expires: *expires,
                now,
            })
        }
        (Op::Renew { token, .. }, Outcome::Renewed { expires }) => Some(LeaseChange::Renewed {
            token: *token,
            expires: *expires,
        }),
        (Op::Release { token, .. }, Outcome::Released) => {
            Some(LeaseChange::Released { token: *token })
        }
        _ => None,
    };
    if let (
        Some(change),
        Op::Acquire { lease, .. } | Op::Renew { lease, .. } | Op::Release { lease, .. },
    ) = (change, op)
    {
        if t.open {
            t.lease.push((lease.clone(), change));
        } else {
            push_lease(f, lease.clone(), change, w, at);
        }
        return;
    }
    match (op, out) {
        // Answered, but nobody knows what it did (a timeout, a connection lost mid-call): like
        // one never answered, it may have moved its holding's expiry anywhere from its issue on.
        (Op::Renew { .. } | Op::Release { .. }, Outcome::Indeterminate(_)) => {
            unknown_lease(f, op, issued.0, w, issued.1, at)
        }
        (
            Op::Renew { .. } | Op::Release { .. },
            Outcome::Refused | Outcome::Error(_) | Outcome::Unavailable,
        ) => f
            .lease_refused
            .extend(lease_op(op, issued.0, w, issued.1, at)),
        (Op::Write { .. }, Outcome::Accepted) | (Op::Upsert { .. }, Outcome::Accepted) => f
            .writes
            .extend(write_fact(op, actor, w, at, Certainty::Accepted, issued.0)),
        (Op::Write { .. }, Outcome::Indeterminate(_))
        | (Op::Upsert { .. }, Outcome::Indeterminate(_)) => {
            f.writes
                .extend(write_fact(op, actor, w, at, Certainty::Maybe, issued.0))
        }
        // Answered with a definite failure: not counted, unless a read shows what it wrote.
        (
            Op::Write { .. } | Op::Upsert { .. },
            Outcome::Rejected | Outcome::Failed | Outcome::Error(_) | Outcome::Unavailable,
        ) => {
            let fact = write_fact(op, actor, w, at, Certainty::Accepted, issued.0);
            f.refused.extend(fact);
        }
        (Op::Publish { .. }, Outcome::Indeterminate(_)) => {
            unknown_publish(f, op, actor, w, at, issued.0)
        }
        (Op::Upsert { .. }, Outcome::Ok) => {
            let d = match drafts.get_mut(conn) {
                Some(d) => d,
                None => drafts.entry(conn.to_string()).or_default(),
            };
            d.push((op.clone(), actor.clone(), w.latest));
        }
        (Op::Publish { key, token, .. }, Outcome::Accepted | Outcome::Rejected) => {
            let p = PublishFact {
                key: key.clone(),
                writer: actor.clone(),
                token: *token,
                accepted: *out == Outcome::Accepted,
                window: w,
                at,
            };
            if t.open {
                t.publishes.push(p);
            } else {
                f.publishes.push(p);
            }
        }
        _ => {}
    }
}

/// The fact of a write or upsert `op` by `actor`, committed in `w` (none for other ops).
fn write_fact(
    op: &Op,
    actor: &Holder,
    w: Window,
    at: Millis,
    c: Certainty,
    issued: u64,
) -> Option<WriteFact> {
    RowVersion::written(op, actor).map(|v| WriteFact {
        scope: v.scope.clone(),
        part: v.part.clone(),
        content: v.content.to_string(),
        writer: actor.clone(),
        token: v.token,
        window: w,
        at,
        certainty: c,
        issued,
        unanswered: false,
        kept_after_fail: None,
    })
}

/// Whether the outcome of `op`, unknown, can change a verdict: whole writes, publishes,
/// renewals and releases. (An acquire whose answer was lost is not: its holder does not know
/// its token and cannot act on it; a step of a transaction is decided by the transaction's
/// commit.)
fn resolvable(op: &Op) -> bool {
    matches!(
        op,
        Op::Write { .. } | Op::Publish { .. } | Op::Renew { .. } | Op::Release { .. }
    )
}

/// Notes an `indeterminate` answer to `op`, issued at `issued` and answered at `answered`.
fn note_unknown(f: &mut Facts, op: &Op, out: &Outcome, issued: u64, answered: u64) {
    if matches!(out, Outcome::Indeterminate(_)) && resolvable(op) {
        f.unknown.push(Unknown {
            issued,
            answered: Some(answered),
        });
    }
}
