//! A tiny single-node database engine with exactly the PostgreSQL READ COMMITTED behaviour the
//! source design relies on, and nothing more:
//!
//! - each connection runs one statement at a time, in autocommit or inside `BEGIN … COMMIT`;
//! - `now()` is the transaction's start time inside a transaction, the statement's start time
//!   in autocommit (F2) — and a statement that waited on a lock keeps its pre-wait `now()`;
//! - a writing statement takes the row lock of the key it touches and keeps it until the end of
//!   the transaction; a second writer of that key *blocks*, and when the holder commits or
//!   rolls back it re-evaluates its condition against the newly committed row (a plain
//!   `UPDATE` first checks its `WHERE` against the row it can see and blocks only if that
//!   qualifies: see `model/lease_db.rs` and `model/res_db.rs`);
//! - uncommitted changes are visible only to their own connection;
//! - the order in which waiters proceed is not fixed. Waiters on an existing row queue on its
//!   tuple lock (`heap_acquire_tuplock` in `src/backend/access/heap/heapam.c`), but waiters on
//!   a key that another transaction
//!   *inserted* wait on that transaction's id (`XactLockTableWait` from
//!   `check_exclusion_or_unique_constraint`), and when it ends they all wake at once and race.
//!   Waiters on an existing row were also seen to overtake each other once the lock holder's
//!   transaction ended (6 of 15 runs of one generated schedule, `diff --gen --seed 7`, where
//!   two autocommit fences waited on a transaction whose client disconnected), though not in
//!   smaller schedules (60 of 60 FIFO): the order depends on timing. So whenever a lock with
//!   two or more waiters is released the engine asks its [`Choices`] for the order: by default
//!   the FIFO one (so the simulation and the lab stay deterministic); the PostgreSQL
//!   differential enumerates every order and accepts whichever PostgreSQL took. A waiter that
//!   then keeps the lock (it wrote, or its re-check failed inside a transaction, see below)
//!   makes the others wait again, and when *its* transaction ends they race once more;
//! - a plain `UPDATE` that waited locks the newest row version before it re-evaluates its
//!   WHERE, and keeps that lock when the re-check fails (`ExecUpdate` → `table_tuple_lock`
//!   with `TUPLE_LOCK_FLAG_FIND_LAST_VERSION`, then `EvalPlanQual`): inside a transaction the
//!   row stays locked until it ends (the statement tasks apply this with `Effect::LockOnly`);
//! - waits that form a cycle (each statement waits for a row another one's transaction holds)
//!   are a deadlock: PostgreSQL's detector, run by whichever waiter's `deadlock_timeout` fires
//!   first, aborts that waiter with SQLSTATE 40P01 (`DeadLockCheck` in
//!   `src/backend/storage/lmgr/deadlock.c`, manual 13.3.4: "which transaction is aborted is
//!   difficult to predict"); the engine asks its [`Choices`] which member of the cycle it is
//!   (by default the one that closed it);
//! - a crash drops every open transaction and every waiting statement; committed rows survive;
//! - REPEATABLE READ reads come from the snapshot taken at the transaction's first statement
//!   (manual 13.2.2: "a query in a repeatable read transaction sees a snapshot as of the start
//!   of the first non-transaction-control statement in the transaction");
//! - a client that goes away while its statement waits is not noticed until the statement
//!   ends (the backend only reads the socket between statements, `PostgresMain` in
//!   `src/backend/tcop/postgres.c`): the statement stays in the lock queue as an *orphan*, and
//!   when it gets its lock an autocommit statement runs and commits, while a transaction rolls
//!   back (the backend then reads EOF and aborts it, `AbortCurrentTransaction` in
//!   `proc_exit`'s path).
//!
//! Statements are tasks that can stop at a lock and resume later, so a one-shot fenced write
//! (begin, fence, upsert, commit) and its step-by-step form share one implementation.

use crate::names::{ConnId, LeaseName, Part, Scope};
use crate::rows::{LeaseRow, PartRow};
use crate::time::Millis;
use std::collections::BTreeMap;

/// The primary key of a row; row locks are taken per key, existing or not (an uncommitted
/// insert locks its key just like an update locks its row).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Key {
    Lease(LeaseName),
    Floor(Scope),
    Part(Scope, Part),
    Publish(String),
}

/// A row value. Floors are bare tokens; parts and publishes share a shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Row {
    Lease(LeaseRow),
    Floor(crate::names::Token),
    Part(PartRow),
}

/// An open transaction.
#[derive(Clone, Debug)]
pub(crate) struct Txn {
    /// `now()` for every statement of the transaction.
    pub start: Millis,
    /// Uncommitted row versions (`None` = deleted), one per key. A transaction touches two or
    /// three keys, so a list beats a tree here.
    pub overlay: Vec<(Key, Option<Row>)>,
    /// Keys locked by this transaction, each once.
    pub locks: Vec<Key>,
    /// REPEATABLE READ (else READ COMMITTED).
    pub repeatable: bool,
    /// The commit sequence number at the transaction's first statement (REPEATABLE READ).
    pub snapshot: Option<u64>,
    /// The committed rows at that moment: what every read of a REPEATABLE READ transaction sees
    /// (besides its own changes). The tables hold a handful of rows, so a copy is cheap.
    pub snapshot_rows: Option<BTreeMap<Key, Row>>,
    /// An error aborted the transaction: statements fail until ROLLBACK (or COMMIT, which
    /// then rolls back).
    pub aborted: bool,
}

/// A statement waiting for a row lock, with the continuation to run when it can proceed.
#[derive(Clone, Debug)]
pub(crate) struct Waiting<T> {
    pub key: Key,
    /// The statement's `now()`, fixed when it started.
    pub now: Millis,
    pub task: T,
}

/// Per-connection state.
#[derive(Clone, Debug)]
pub(crate) struct Conn<T, X> {
    pub txn: Option<Txn>,
    /// Extra per-transaction bookkeeping owned by the database wrapper (e.g. attempt drafts).
    pub extra: X,
    pub waiting: Option<Waiting<T>>,
    /// Outcome of a statement that was blocked and has since finished, for `await`.
    pub finished: Option<crate::history::Outcome>,
    /// The server went away while this connection had work open: the next call reports it.
    pub lost: bool,
    /// The client went away while a statement of this connection waited (see the module doc).
    pub orphan: bool,
}

impl<T, X: Default> Default for Conn<T, X> {
    fn default() -> Self {
        Conn {
            txn: None,
            extra: X::default(),
            waiting: None,
            finished: None,
            lost: false,
            orphan: false,
        }
    }
}

/// What a statement did to one key.
pub(crate) enum Effect {
    /// Read only, or a plain UPDATE whose WHERE was false before any wait: no lock is kept.
    None,
    /// Lock the key but leave the row (ON CONFLICT whose WHERE was false still locks).
    LockOnly,
    /// Write this row version and lock the key.
    Write(Option<Row>),
}

/// Storage, locks and connections of one database. Generic over the task type `T` (what a
/// blocked statement resumes with) and the per-connection extra state `X`.
#[derive(Clone, Debug)]
pub(crate) struct Engine<T, X> {
    pub committed: BTreeMap<Key, Row>,
    pub locks: BTreeMap<Key, ConnId>,
    pub conns: BTreeMap<ConnId, Conn<T, X>>,
    /// Blocked connections in the order they blocked (the lock queue).
    pub queue: Vec<ConnId>,
    pub up: bool,
    /// Commits so far; `key_seq` says which commit last wrote each key (REPEATABLE READ's
    /// "concurrent update" rule).
    pub commit_seq: u64,
    pub key_seq: BTreeMap<Key, u64>,
    /// Who wins such a race.
    pub choices: Choices,
    /// Orphans made so far (their connection names must not collide).
    pub orphans: u64,
    /// A deliberately wrong rule (negative control): REPEATABLE READ reads the newest
    /// committed rows instead of its snapshot.
    pub rr_reads_latest: bool,
    /// A deliberately wrong rule (negative control): released waiters proceed in queue order.
    pub queue_order_only: bool,
    /// Every committed row version, in commit order, stamped with the history position of the
    /// operation during which it committed (`None`: the row is gone). The model's own ledger,
    /// against which the checkers' facts are cross-checked.
    pub log: Vec<(u64, Key, Option<Row>)>,
    /// The history position of the operation running now.
    pub stamp: u64,
}

/// The source of the engine's nondeterministic decisions: the order in which the waiters of an
/// ended inserting transaction proceed. Each decision with `n` waiters picks one of the `n!`
/// orders; `script` gives the picks in sequence (missing picks are 0, the FIFO order) and
/// `seen` records the number of orders of every decision made, so a caller can enumerate the
/// alternatives.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Choices {
    /// Picks to use, in order.
    pub script: Vec<usize>,
    /// The number of alternatives of each decision taken so far.
    pub seen: Vec<usize>,
}

impl Choices {
    fn pick(&mut self, n: usize) -> usize {
        let i = self.seen.len();
        self.seen.push(n);
        self.script.get(i).copied().filter(|p| *p < n).unwrap_or(0)
    }
}

/// The `k`-th permutation (in lexicographic order) of `items`.
fn permute<T>(mut items: Vec<T>, mut k: usize) -> Vec<T> {
    let mut out = Vec::with_capacity(items.len());
    while !items.is_empty() {
        let f: usize = (1..items.len()).product();
        let i = (k / f.max(1)).min(items.len() - 1);
        k %= f.max(1);
        out.push(items.remove(i));
    }
    out
}

impl<T, X: Default> Default for Engine<T, X> {
    fn default() -> Self {
        Engine {
            committed: BTreeMap::new(),
            locks: BTreeMap::new(),
            conns: BTreeMap::new(),
            queue: Vec::new(),
            up: true,
            commit_seq: 0,
            key_seq: BTreeMap::new(),
            choices: Choices::default(),
            orphans: 0,
            rr_reads_latest: false,
            queue_order_only: false,
            log: Vec::new(),
            stamp: 0,
        }
    }
}

impl<T: Clone, X: Default> Engine<T, X> {
    /// The connection, created on first use (a client connects lazily).
    pub(crate) fn conn(&mut self, id: &ConnId) -> &mut Conn<T, X> {
        // Look up before inserting: `entry` would clone the name on every call.
        if !self.conns.contains_key(id) {
            return self.conns.entry(id.clone()).or_default();
        }
        self.conns.get_mut(id).expect("present: checked just above")
    }

    /// Whether `key` is locked by a connection other than `id`.
    pub(crate) fn locked_by_other(&self, id: &ConnId, key: &Key) -> bool {
        matches!(self.locks.get(key), Some(owner) if owner != id)
    }

    /// The row as `id` sees it: its own uncommitted version, else the committed one.
    /// Borrowed: most statements only look at a token in the row, and a part row carries its
    /// content text.
    pub(crate) fn read(&self, id: &ConnId, key: &Key) -> Option<&Row> {
        if let Some(txn) = self.conns.get(id).and_then(|c| c.txn.as_ref()) {
            if let Some((_, v)) = txn.overlay.iter().find(|(k, _)| k == key) {
                return v.as_ref();
            }
            if let Some(rows) = txn.snapshot_rows.as_ref().filter(|_| !self.rr_reads_latest) {
                return rows.get(key);
            }
        }
        self.committed.get(key)
    }

    /// `now()` for a statement of `id` starting at `now`.
    pub(crate) fn stmt_now(&self, id: &ConnId, now: Millis) -> Millis {
        match self.conns.get(id).and_then(|c| c.txn.as_ref()) {
            Some(txn) => txn.start,
            None => now,
        }
    }

    /// Applies a statement's effect on `key` for `id`. In a transaction the change is private
    /// and the lock is kept; in autocommit it is committed at once and no lock remains.
    pub(crate) fn apply(&mut self, id: &ConnId, key: Key, effect: Effect) {
        let in_txn = self.conns.get(id).is_some_and(|c| c.txn.is_some());
        match (effect, in_txn) {
            (Effect::None, _) => {}
            (Effect::LockOnly, false) => {}
            (Effect::Write(row), false) => self.commit_row(key, row),
            (Effect::LockOnly, true) => self.lock(id, key),
            (Effect::Write(row), true) => {
                self.lock(id, key.clone());
                if let Some(txn) = self.conn(id).txn.as_mut() {
                    match txn.overlay.iter_mut().find(|(k, _)| *k == key) {
                        Some((_, v)) => *v = row,
                        None => txn.overlay.push((key, row)),
                    }
                }
            }
        }
    }

    fn lock(&mut self, id: &ConnId, key: Key) {
        self.locks.insert(key.clone(), id.clone());
        if let Some(txn) = self.conn(id).txn.as_mut() {
            if !txn.locks.contains(&key) {
                txn.locks.push(key);
            }
        }
    }

    /// Writes a row version as committed.
    pub(crate) fn commit_row(&mut self, key: Key, row: Option<Row>) {
        self.commit_seq += 1;
        self.key_seq.insert(key.clone(), self.commit_seq);
        self.log.push((self.stamp, key.clone(), row.clone()));
        match row {
            Some(r) => {
                self.committed.insert(key, r);
            }
            None => {
                self.committed.remove(&key);
            }
        }
    }

    /// Starts a transaction on `id` at `now`.
    pub(crate) fn begin(&mut self, id: &ConnId, now: Millis, repeatable: bool) {
        self.conn(id).txn = Some(Txn {
            start: now,
            overlay: Vec::new(),
            locks: Vec::new(),
            repeatable,
            snapshot: None,
            snapshot_rows: None,
            aborted: false,
        });
    }

    /// A REPEATABLE READ transaction takes its snapshot at its first statement.
    pub(crate) fn take_snapshot(&mut self, id: &ConnId) {
        let seq = self.commit_seq;
        let needs = self
            .conns
            .get(id)
            .and_then(|c| c.txn.as_ref())
            .is_some_and(|t| t.repeatable && t.snapshot.is_none());
        if needs {
            let rows = self.committed.clone();
            if let Some(t) = self.conn(id).txn.as_mut() {
                t.snapshot = Some(seq);
                t.snapshot_rows = Some(rows);
            }
        }
    }

    /// REPEATABLE READ: `key` was committed by another transaction after `id`'s snapshot, so
    /// updating it fails with SQLSTATE 40001.
    pub(crate) fn serialization_conflict(&self, id: &ConnId, key: &Key) -> bool {
        let Some(t) = self.conns.get(id).and_then(|c| c.txn.as_ref()) else {
            return false;
        };
        match (t.repeatable, t.snapshot) {
            (true, Some(snap)) => self.key_seq.get(key).is_some_and(|s| *s > snap),
            _ => false,
        }
    }

    /// Marks `id`'s transaction aborted by an error.
    ///
    /// The transaction's work is undone and its locks are released at the error, not at the
    /// later ROLLBACK: PostgreSQL calls `AbortTransaction` when the statement fails and only
    /// leaves the block in `TBLOCK_ABORT` until the client ends it (`src/backend/access/
    /// transam/xact.c`). The caller must then wake the waiters.
    pub(crate) fn abort_txn(&mut self, id: &ConnId) {
        let locks = match self.conn(id).txn.as_mut() {
            Some(t) => {
                t.aborted = true;
                t.overlay.clear();
                std::mem::take(&mut t.locks)
            }
            None => return,
        };
        self.release(id, locks);
    }

    /// Whether `id`'s transaction was aborted by an error.
    pub(crate) fn is_aborted(&self, id: &ConnId) -> bool {
        self.conns
            .get(id)
            .and_then(|c| c.txn.as_ref())
            .is_some_and(|t| t.aborted)
    }

    /// Ends `id`'s transaction, publishing its changes if `commit`, and releases its locks.
    /// The caller must then wake the waiters.
    pub(crate) fn end(&mut self, id: &ConnId, commit: bool) {
        let Some(txn) = self.conn(id).txn.take() else {
            return;
        };
        if commit {
            // In key order, as a tree would give them: commit sequence numbers stay the same.
            let mut overlay = txn.overlay;
            overlay.sort_by(|a, b| a.0.cmp(&b.0));
            for (k, v) in overlay {
                self.commit_row(k, v);
            }
        }
        self.release(id, txn.locks);
    }

    fn release(&mut self, id: &ConnId, locks: Vec<Key>) {
        let mut freed = Vec::new();
        for k in locks {
            if self.locks.get(&k) == Some(id) {
                self.locks.remove(&k);
                freed.push(k);
            }
        }
        self.race(&freed);
    }

    /// The waiters of the keys whose locks one transaction end just released may proceed in
    /// any order (see the module doc): their order in the queue becomes the [`Choices`]' pick.
    /// Waiters on *different* keys race too: PostgreSQL wakes them together and runs them
    /// concurrently, so a waiter's later statements (a one-shot write's upsert after its fence)
    /// can come after another waiter's, whoever queued first.
    fn race(&mut self, keys: &[Key]) {
        let racers: Vec<usize> = (0..self.queue.len())
            .filter(|&i| {
                self.conns
                    .get(&self.queue[i])
                    .and_then(|c| c.waiting.as_ref())
                    .is_some_and(|w| keys.contains(&w.key))
            })
            .collect();
        if racers.len() < 2 || self.queue_order_only {
            return;
        }
        let n: usize = (1..=racers.len()).product();
        let k = self.choices.pick(n);
        let ids: Vec<ConnId> = racers.iter().map(|&i| self.queue[i].clone()).collect();
        for (slot, id) in racers.iter().zip(permute(ids, k)) {
            self.queue[*slot] = id;
        }
    }

    /// The client of `id` went away while its statement waits: the statement stays queued
    /// under a fresh name (so the client's name can be used again by a new connection), with
    /// its transaction and locks. Returns the orphan's name.
    pub(crate) fn orphan(&mut self, id: &ConnId) -> Option<ConnId> {
        let mut c = self.conns.remove(id)?;
        self.orphans += 1;
        let new = ConnId::new(format!("{}\u{1}orphan{}", id.as_str(), self.orphans));
        c.orphan = true;
        for owner in self.locks.values_mut() {
            if owner == id {
                *owner = new.clone();
            }
        }
        for q in self.queue.iter_mut() {
            if q == id {
                *q = new.clone();
            }
        }
        self.conns.insert(new.clone(), c);
        Some(new)
    }

    /// Drops a connection whose client went away: its waiting statement leaves the lock queue.
    /// The caller ends its transaction first.
    pub(crate) fn forget(&mut self, id: &ConnId) {
        self.conns.remove(id);
        self.queue.retain(|q| q != id);
    }

    /// The waiters `id` waits for, transitively, back to `id`: a deadlock cycle (`id` first),
    /// or nothing.
    fn cycle(&self, id: &ConnId) -> Option<Vec<ConnId>> {
        let mut members = vec![id.clone()];
        let mut at = id.clone();
        loop {
            let key = &self.conns.get(&at)?.waiting.as_ref()?.key;
            let holder = self.locks.get(key)?;
            if holder == id {
                return Some(members);
            }
            if members.contains(holder) {
                // A cycle that does not pass through `id`: found when it closed.
                return None;
            }
            members.push(holder.clone());
            at = holder.clone();
        }
    }

    /// The members of `id`'s cycle PostgreSQL's detector may abort: the cycle, and on an
    /// existing row the waiters queued ahead of a member (the first waiter holds the row's
    /// tuple lock while it waits, so later ones wait for it: `heap_acquire_tuplock`).
    fn cycle_members(&self, id: &ConnId) -> Option<Vec<ConnId>> {
        let core = self.cycle(id)?;
        let mut all = core.clone();
        for m in &core {
            let Some(key) = self
                .conns
                .get(m)
                .and_then(|c| c.waiting.as_ref())
                .map(|w| &w.key)
            else {
                continue;
            };
            if !self.committed.contains_key(key) {
                continue;
            }
            for q in self.queue.iter().take_while(|q| *q != m) {
                let same = self
                    .conns
                    .get(q)
                    .and_then(|c| c.waiting.as_ref())
                    .is_some_and(|w| w.key == *key);
                if same && !all.contains(q) {
                    all.push(q.clone());
                }
            }
        }
        Some(all)
    }

    /// After `id` parked: if its wait closed a cycle, the member the detector aborts (see the
    /// module doc), taken out of the queue. The caller fails its statement and aborts its
    /// transaction; a victim ahead of the cycle leaves it standing, so the caller asks again.
    pub(crate) fn deadlock_victim(&mut self, id: &ConnId) -> Option<(ConnId, Option<Waiting<T>>)> {
        let members = self.cycle_members(id)?;
        let victim = members[self.choices.pick(members.len())].clone();
        self.queue.retain(|q| *q != victim);
        let w = self.conn(&victim).waiting.take();
        Some((victim, w))
    }

    /// Whether a waiting statement's transaction holds a lock: a later wait may then close a
    /// cycle through it.
    pub(crate) fn waiter_holds_locks(&self) -> bool {
        self.queue.iter().any(|q| {
            self.conns
                .get(q)
                .and_then(|c| c.txn.as_ref())
                .is_some_and(|t| !t.locks.is_empty())
        })
    }

    /// Parks `id`'s statement until `key` is free.
    pub(crate) fn park(&mut self, id: &ConnId, waiting: Waiting<T>) {
        self.conn(id).waiting = Some(waiting);
        if !self.queue.contains(id) {
            self.queue.push(id.clone());
        }
    }

    /// The first queued connection whose key is now free, removed from the queue together
    /// with its continuation. FIFO: the earliest waiter gets the lock first.
    pub(crate) fn next_runnable(&mut self) -> Option<(ConnId, Waiting<T>)> {
        let pos = self.queue.iter().position(|id| {
            self.conns
                .get(id)
                .and_then(|c| c.waiting.as_ref())
                .is_some_and(|w| !self.locked_by_other(id, &w.key))
        })?;
        let id = self.queue.remove(pos);
        let w = self.conn(&id).waiting.take()?;
        Some((id, w))
    }

    /// Immediate stop: every open transaction and waiting statement is gone; committed rows
    /// stay. Connections that had work open are marked lost, so the client learns of it.
    /// Returns the connections whose blocked statement was cut off.
    pub(crate) fn crash(&mut self) -> Vec<ConnId> {
        self.up = false;
        self.locks.clear();
        self.queue.clear();
        self.conns.retain(|_, c| !c.orphan);
        let mut cut = Vec::new();
        for (id, c) in self.conns.iter_mut() {
            if c.waiting.take().is_some() {
                cut.push(id.clone());
            }
            if c.txn.take().is_some() || cut.last() == Some(id) {
                c.lost = true;
            }
            c.extra = X::default();
            c.finished = None;
        }
        cut
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_picks_of_n_items_are_its_n_factorial_orders_fifo_first() {
        let all: Vec<Vec<u8>> = (0..6).map(|k| permute(vec![1, 2, 3], k)).collect();
        assert_eq!(all[0], vec![1, 2, 3]);
        assert_eq!(all[1], vec![1, 3, 2]);
        assert_eq!(all[5], vec![3, 2, 1]);
        let mut sorted = all.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), 6, "{all:?}");
        assert_eq!(permute(vec![7, 8], 1), vec![8, 7]);
    }

    #[test]
    fn a_pick_follows_the_script_records_the_choice_and_falls_back_to_fifo() {
        let mut c = Choices {
            script: vec![1, 5],
            seen: Vec::new(),
        };
        assert_eq!(c.pick(2), 1);
        assert_eq!(c.pick(2), 0, "out of range: FIFO");
        assert_eq!(c.pick(6), 0, "no script left: FIFO");
        assert_eq!(c.seen, vec![2, 2, 6]);
    }
}
