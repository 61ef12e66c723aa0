//! Facts derived from a history, once, for all checkers: which writes were accepted (and
//! where their commit can lie), which tokens were granted, what final reads saw.
//!
//! Concurrency: a statement that blocked finishes inside some later event (the blocker's commit
//! or rollback) that the history does not name; the client only sees it at `await`. So every
//! fact has a *window* `[earliest, latest]` of event positions where it took effect. Writes
//! that complete in one event have a window of one position. A checker reports "A before B"
//! only when A's window ends before B's begins — the Jepsen stance on concurrent operations.

use leaselab_model::Reason;
use leaselab_model::{
    DbName, Event, History, Holder, LeaseName, Millis, Op, Outcome, Part, Scope, Token,
};
use std::collections::BTreeMap;

/// Where a fact took effect, as history positions (event `seq`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// Earliest possible position.
    pub earliest: u64,
    /// Latest possible position (the event that reported it).
    pub latest: u64,
}

impl Window {
    fn at(seq: u64) -> Self {
        Window {
            earliest: seq,
            latest: seq,
        }
    }
    /// Definitely before `other`.
    pub fn before(&self, other: &Window) -> bool {
        self.latest < other.earliest
    }
}

/// How sure we are that a write took effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Certainty {
    /// Acknowledged.
    Accepted,
    /// Outcome unknown (timeout, connection lost during commit).
    Maybe,
}

/// One write that took (or may have taken) effect.
#[derive(Clone, Debug)]
pub struct WriteFact {
    /// Scope.
    pub scope: Scope,
    /// Part.
    pub part: Part,
    /// Content written.
    pub content: String,
    /// Writer.
    pub writer: Holder,
    /// Token carried.
    pub token: Token,
    /// Where it committed.
    pub window: Window,
    /// Authority time of the reporting event.
    pub at: Millis,
    /// Acknowledged or not.
    pub certainty: Certainty,
    /// The event that decides it: a whole write's own (its invoke, when it waited), a
    /// transaction's write's commit. What a verdict names when the outcome is unknown.
    pub issued: u64,
    /// Never answered at all (its connection dropped, its database crashed, the history
    /// ended): a maybe-write the history counts among its `unreported` statements too.
    pub unanswered: bool,
    /// Answered `fail`, yet the read at this event shows its row version, which no other
    /// write can have put there: the resource kept what it said it refused
    /// ([`crate::unknown::settle`] counts it, accepted, from there on).
    pub kept_after_fail: Option<u64>,
}

/// One grant of a lease.
#[derive(Clone, Debug)]
pub struct GrantFact {
    /// Lease.
    pub lease: LeaseName,
    /// Holder.
    pub holder: Holder,
    /// Token.
    pub token: Token,
    /// Where it took effect.
    pub window: Window,
    /// Authority time of the reporting event.
    pub at: Millis,
}

/// One publish attempt with a definite result.
#[derive(Clone, Debug)]
pub struct PublishFact {
    /// Business key.
    pub key: String,
    /// Publisher.
    pub writer: Holder,
    /// Token carried.
    pub token: Token,
    /// Kept (`true`) or dropped.
    pub accepted: bool,
    /// Where.
    pub window: Window,
    /// Authority time.
    pub at: Millis,
}

/// What a committed lease statement did to its row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LeaseChange {
    /// A new token (insert or takeover), valid until `expires`.
    Granted {
        /// Holder.
        holder: Holder,
        /// Token.
        token: Token,
        /// New expiry.
        expires: leaselab_model::Expiry,
        /// The statement's `now()` (the transaction's start inside a transaction).
        now: Millis,
    },
    /// Same token, new expiry.
    Renewed {
        /// Token.
        token: Token,
        /// New expiry.
        expires: leaselab_model::Expiry,
    },
    /// `-infinity`.
    Released {
        /// Token.
        token: Token,
    },
}

/// One committed change of a lease row.
#[derive(Clone, Debug)]
pub struct LeaseFact {
    /// Lease.
    pub lease: LeaseName,
    /// What changed.
    pub change: LeaseChange,
    /// Where it took effect (its commit).
    pub window: Window,
}

/// The row a read asked for.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ReadKey {
    /// A lease row.
    Lease(LeaseName),
    /// A fence floor.
    Floor(Scope),
    /// A report part.
    Part(Scope, Part),
    /// The kept publish of a business key.
    Publish(String),
}

/// What a read could see. A read observes the committed state only as of its snapshot, and
/// not at all where its own transaction changed the row (its uncommitted version is no
/// committed state, and a rollback undoes it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sees {
    /// The committed state just before one event position inside this window: the read's own
    /// position under READ COMMITTED (a statement snapshot); under REPEATABLE READ the
    /// transaction's snapshot, taken at its first statement (manual 13.2.2). A history cannot
    /// tell a real resource transaction from check-then-write's BEGIN marker, which keeps none,
    /// so there the window runs from the first statement up to the read; where the database
    /// surely keeps transactions (the lease database, or a resource the caller vouches for in
    /// [`derive_with`]) it ends at the first statement that surely sent SQL (a fence of the row
    /// fence or of none is decided in the client).
    Committed(Window),
    /// The reader's transaction wrote, or may have written, this row before the read: the value
    /// is that uncommitted version (one of `own`, or any value when `unknown`: a statement
    /// whose result was never collected), or, if that write did not happen, the committed
    /// state at the snapshot `window`. No observation of the committed state.
    Own {
        /// Where the snapshot lies, as for `Committed`.
        window: Window,
        /// The versions the transaction's own statements wrote, as a read would return them.
        own: Vec<Outcome>,
        /// A statement of the transaction may have written the row with a value nobody saw.
        unknown: bool,
    },
}

/// One read that returned a row (or its absence).
#[derive(Clone, Debug)]
pub struct ReadFact {
    /// Its position.
    pub seq: u64,
    /// Authority time.
    pub at: Millis,
    /// Which row.
    pub key: ReadKey,
    /// What it returned (`Floor`, `Part`, `Lease` or `Published`).
    pub value: Outcome,
    /// What it could see.
    pub sees: Sees,
}

impl ReadFact {
    /// The snapshot window of a read of the committed state (`None`: it may have seen its own
    /// uncommitted write).
    pub fn committed(&self) -> Option<Window> {
        match &self.sees {
            Sees::Committed(w) => Some(*w),
            Sees::Own { .. } => None,
        }
    }
}

/// Everything the checkers need. Only what was committed counts: work of a transaction that
/// rolled back, was aborted by an error, or whose connection disconnected or lost its server
/// never does. A statement that blocked and whose outcome the client never collected (it
/// disconnected while the statement waited, or sent its next statement without `await`, or
/// the history ends first) is not counted either: nobody learned what it did (`unreported`
/// says how many there were, per database: they may have committed).
#[derive(Clone, Debug, Default)]
pub struct Facts {
    /// Accepted or possibly accepted writes, in reporting order.
    pub writes: Vec<WriteFact>,
    /// Grants, in reporting order.
    pub grants: Vec<GrantFact>,
    /// Publishes, in reporting order.
    pub publishes: Vec<PublishFact>,
    /// Committed lease changes (grants, renewals, releases), in commit order.
    pub lease_changes: Vec<LeaseFact>,
    /// Statements whose outcome nobody collected, per database.
    pub unreported: Vec<(DbName, u64)>,
    /// Publishes nobody learned the outcome of: kept if they took effect, absent if not.
    pub unknown_publishes: Vec<UnknownPublish>,
    /// Every row version some statement tried to write (a `write` or an `upsert` that was
    /// sent, whatever its answer), with the first event that tried, sorted by the version's
    /// hash: what a final read may show ([`Facts::attempted`]).
    pub attempts: Vec<Attempt>,
    /// Every token a statement carried to a write.
    pub written_tokens: std::collections::BTreeSet<Token>,
    /// Renewals and releases whose outcome nobody collected: each may have changed its
    /// holding's expiry, to a value nobody saw, anywhere in its window.
    pub lease_unknown: Vec<UnknownLease>,
    /// Reads of a lease, floor, part or publish, in history order, with what each could see.
    pub reads: Vec<ReadFact>,
    /// Whole writes, publishes, renewals and releases nobody learned the outcome of, in the
    /// order they were issued: the operations [`crate::unknown`] decides the verdict over.
    pub unknown: Vec<Unknown>,
    /// Writes and upserts answered with a definite failure (`rejected`, `failed`, an error,
    /// `unavailable`): not counted — unless a read shows what they wrote
    /// ([`crate::unknown::settle`]).
    pub refused: Vec<WriteFact>,
    /// Writes nobody heard back from that a later read shows cannot have taken effect.
    pub excluded: Vec<Excluded>,
    /// Renewals and releases answered with a definite failure: not applied — unless a lease
    /// read shows what only one of them can have set ([`crate::unknown::settle`]).
    pub lease_refused: Vec<UnknownLease>,
}

/// A write nobody heard back from, and the read that shows it did not take effect: the read's
/// snapshot is definitely after the write's commit window, and it shows a row version (or no
/// row) that no write after that window can have put there — had the write taken effect, the
/// row would be its version or a later write's. (A part row is never deleted.)
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Excluded {
    /// The write (an index into [`Facts::writes`]).
    pub write: usize,
    /// The read.
    pub by: u64,
    /// What the read showed.
    pub shown: Option<leaselab_model::PartRow>,
}

/// An operation nobody learned the outcome of: where it was issued, and where its unknown
/// answer is (none when no answer ever came: its connection was dropped, its database
/// crashed, its client moved on, or the history ended first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unknown {
    /// The event that issued it.
    pub issued: u64,
    /// The event that answered `indeterminate`, if any.
    pub answered: Option<u64>,
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

/// A renewal or release nobody learned the outcome of.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownLease {
    /// Which lease.
    pub lease: LeaseName,
    /// Whose holding.
    pub holder: Holder,
    /// Its token.
    pub token: Token,
    /// The event that issued it (what a verdict names).
    pub since: u64,
    /// A renewal's TTL (`None`: a release).
    pub renew_ttl: Option<u64>,
    /// Where its commit can lie, if it took effect: after its issue, up to its answer (or,
    /// never answered, up to the end of the history).
    pub window: Window,
    /// The server time when it was issued and at the end of its window: a renewal's `now()`
    /// lies between, so the expiry it set lies between `from + ttl` and `to + ttl`.
    pub from: Millis,
    /// See `from`.
    pub to: Millis,
}

/// A row version: where, with which token, as whom, what.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct RowVersion<'a> {
    /// Scope.
    pub scope: &'a Scope,
    /// Part.
    pub part: &'a Part,
    /// Token.
    pub token: Token,
    /// Writer.
    pub writer: &'a Holder,
    /// Content.
    pub content: &'a str,
}

impl<'a> RowVersion<'a> {
    /// The version a read of `scope`/`part` shows as `row`.
    pub fn shown(scope: &'a Scope, part: &'a Part, row: &'a leaselab_model::PartRow) -> Self {
        RowVersion {
            scope,
            part,
            token: row.token,
            writer: &row.writer,
            content: &row.content,
        }
    }

    /// std's SipHash with its fixed keys: the same in every process.
    fn hash(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        #[allow(deprecated)]
        let mut hasher = std::hash::SipHasher::new();
        (
            self.scope.as_str(),
            self.part.as_str(),
            self.token,
            self.writer.as_str(),
            self.content,
        )
            .hash(&mut hasher);
        hasher.finish()
    }

    /// The version `op` writes as `writer`, if it is a write or an upsert.
    fn written(op: &'a Op, writer: &'a Holder) -> Option<RowVersion<'a>> {
        match op {
            Op::Write {
                scope,
                part,
                content,
                token,
            }
            | Op::Upsert {
                scope,
                part,
                content,
                token,
            } => Some(RowVersion {
                scope,
                part,
                token: *token,
                writer,
                content,
            }),
            _ => None,
        }
    }
}

impl Facts {
    /// The first event whose statement tried to write `v`.
    pub fn attempted(&self, v: &RowVersion<'_>) -> Option<u64> {
        let k = v.hash();
        let from = self.attempts.partition_point(|a| a.hash < k);
        self.attempts[from..]
            .iter()
            .take_while(|a| a.hash == k)
            .find(|a| a.version() == *v)
            .map(|a| a.seq)
    }
}

/// A row version some statement tried to write, and the first event that tried.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attempt {
    /// The version's hash ([`RowVersion`]), for look-ups.
    pub hash: u64,
    /// The first event whose statement tried to write it.
    pub seq: u64,
    /// Scope.
    pub scope: Scope,
    /// Part.
    pub part: Part,
    /// Token.
    pub token: Token,
    /// Writer.
    pub writer: Holder,
    /// Content.
    pub content: String,
    /// The last event whose statement tried to write it.
    pub last: u64,
    /// The latest position a write of it can have committed at, among the writes whose
    /// answer is known (accepted, unknown, or answered `fail`): with `last`, the end of its
    /// writers' reach, unless `upsert`.
    pub reach: u64,
    /// Some statement that tried is a transaction's upsert, whose commit the history places
    /// only with its transaction's: no bound on its reach is claimed.
    pub upsert: bool,
}

impl Attempt {
    /// The version itself.
    pub fn version(&self) -> RowVersion<'_> {
        RowVersion {
            scope: &self.scope,
            part: &self.part,
            token: self.token,
            writer: &self.writer,
            content: &self.content,
        }
    }
}

impl WriteFact {
    /// The row version it wrote.
    pub fn version(&self) -> RowVersion<'_> {
        RowVersion {
            scope: &self.scope,
            part: &self.part,
            token: self.token,
            writer: &self.writer,
            content: &self.content,
        }
    }
}

impl UnknownLease {
    /// The expiry it set, had it taken effect: a release's `-infinity`; a renewal's, the
    /// earliest (`latest == false`) or latest it can have set, from where its `now()` can lie.
    pub fn expiry(&self, latest: bool) -> leaselab_model::Expiry {
        match self.renew_ttl {
            None => leaselab_model::Expiry::NegInfinity,
            Some(ttl) => {
                let now = if latest { self.to } else { self.from };
                leaselab_model::Expiry::At(Millis(now.0.saturating_add(ttl)))
            }
        }
    }
}

/// A publish nobody learned the outcome of.
#[derive(Clone, Debug)]
pub struct UnknownPublish {
    /// What it would be, had it taken effect (`accepted`).
    pub fact: PublishFact,
    /// The event that issued it.
    pub issued: u64,
}

#[derive(Clone, Debug)]
struct Pending {
    op: Op,
    actor: Holder,
    since: u64,
    at: Millis,
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
struct Conns<T>(BTreeMap<DbName, BTreeMap<String, T>>);

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
    fn values(&self) -> impl Iterator<Item = &T> {
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
struct Txn {
    open: bool,
    /// An error aborted it: nothing of it will commit.
    aborted: bool,
    /// Lease changes waiting for the commit.
    lease: Vec<(LeaseName, LeaseChange)>,
    /// Publishes waiting for the commit (their window is moved to it).
    publishes: Vec<PublishFact>,
    /// `BEGIN ISOLATION LEVEL REPEATABLE READ`.
    repeatable: bool,
    /// The position of the transaction's first statement (where its snapshot is taken), and
    /// of its first one that is not a fence (a fence of the row fence or of none sends no
    /// SQL, so the snapshot may come only then).
    first: Option<u64>,
    first_sql: Option<u64>,
    /// Rows the transaction wrote or may have written: the version a read of it returns
    /// (`None`: unknown).
    own: Vec<(ReadKey, Option<Outcome>)>,
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
fn attempt_of(
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

/// A committed read of a part, definitely after the commit window of a write nobody heard back
/// from, that shows another row version (or none) which no write after that window can have
/// put there: the write did not take effect ([`Excluded`]). Decided when the read arrives —
/// every write of the version it shows was issued before it — so the read need not be kept.
/// A version some transaction's upsert wrote, or that a statement still waiting writes, has
/// no bound on when it was written: it settles nothing. A write the read does not settle is
/// not weighed again by a later read (its window begins before a write of what the row
/// shows, or it is the version shown): each unknown write is looked at O(1) times, apart from
/// those whose window the read's snapshot overlaps.
fn exclude(
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
fn matters(
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

/// The row a statement writes when it takes effect (a fence writes the floor, an upsert its
/// part, a lease statement the lease row, a publish its key).
fn written_key(op: &Op) -> Option<ReadKey> {
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
fn note_own(t: &mut Txn, op: &Op, actor: &Holder, out: &Outcome) {
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
fn read_fact(t: &Txn, e: &Event, exact: bool, wrong: Option<WrongFacts>) -> Option<ReadFact> {
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
