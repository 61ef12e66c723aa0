//! Facts derived from a history, once, for all checkers: which writes were accepted (and
//! where their commit can lie), which tokens were granted, what final reads saw.
//!
//! Concurrency: a statement that blocked finishes inside some later event (the blocker's commit
//! or rollback) that the history does not name; the client only sees it at `await`. So every
//! fact has a *window* `[earliest, latest]` of event positions where it took effect. Writes
//! that complete in one event have a window of one position. A checker reports "A before B"
//! only when A's window ends before B's begins — the Jepsen stance on concurrent operations.

use leaselab_model::{DbName, Holder, LeaseName, Millis, Op, Outcome, Part, Scope, Token};

mod derive;
mod reads;
pub use derive::{derive, derive_with, Deriver, WrongFacts};

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
