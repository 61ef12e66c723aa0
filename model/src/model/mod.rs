//! The in-memory implementation of the backend seam: the lease table and the fenced resource,
//! built on the engine (`engine.rs`) so that locking, blocking and crash behave as
//! PostgreSQL's READ COMMITTED does for the source's statements.
//!
//! - [`db`](self): what both databases share (submit, park, wake, await);
//! - `lease_db`: `lease26`; `res_db`: `res26`;
//! - this file: the pair ([`Model`]), its committed state ([`Snapshot`], [`Model::ledger`]) and
//!   the deliberately wrong rules of the negative controls ([`WrongRule`]);
//! - `seam`: the backend seam's traits for [`Model`].

mod db;
mod lease_db;
mod res_db;
mod seam;
mod wrong;

pub use wrong::WrongRule;

use crate::config::Config;
pub use crate::engine::Choices;
use crate::engine::{Engine, Key, Row};
use crate::history::{DbName, Outcome};
use crate::names::{ConnId, LeaseName, Part, Scope, Token};
use crate::rows::{Attempt, LeaseRow, PartRow};
use db::Db;
use lease_db::LeaseDb;
use res_db::ResDb;

/// The committed state of both databases, in a stable order: what a differential replay
/// compares at the end (`written_at` and attempt ids are wall-clock artefacts and left out).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// Lease rows by name.
    pub leases: Vec<(LeaseName, LeaseRow)>,
    /// Floors by scope.
    pub floors: Vec<(Scope, Token)>,
    /// Parts by (scope, part).
    pub parts: Vec<(Scope, Part, PartRow)>,
    /// Kept publishes by key.
    pub publishes: Vec<(String, PartRow)>,
    /// The attempt log, sorted (as a multiset).
    pub attempts: Vec<Attempt>,
}

/// The whole in-memory world: both databases, configured by one [`Config`].
#[derive(Clone, Debug)]
pub struct Model {
    config: Config,
    lease: LeaseDb,
    res: ResDb,
    wrong: Option<WrongRule>,
}

/// One committed row version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Committed {
    /// A lease row (`None`: gone, as an unlogged table after a crash).
    Lease(LeaseName, Option<LeaseRow>),
    /// A fence floor.
    Floor(Scope, Token),
    /// A report part.
    Part(Scope, Part, PartRow),
    /// A kept publish.
    Publish(String, PartRow),
}

/// A committed row version and the history position of the operation it committed in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LedgerEntry {
    /// History position (`seq`) of the operation.
    pub seq: u64,
    /// What committed.
    pub what: Committed,
}

impl Model {
    /// Fresh databases: no lease rows, a floor of 0 for every configured scope.
    pub fn new(config: Config) -> Self {
        let mut res = ResDb {
            engine: Engine::default(),
            fence: config.fence,
            publish: config.publish,
            attempts: Vec::new(),
            wrong: None,
            quiet: false,
        };
        // The schema's seed rows: in the ledger at position 0, before any operation, so that
        // a read's value can be derived from the ledger alone.
        for s in &config.scopes {
            res.engine
                .commit_row(Key::Floor(s.clone()), Some(Row::Floor(Token(0))));
        }
        res.engine.commit_seq = 0;
        res.engine.key_seq.clear();
        Model {
            lease: LeaseDb {
                engine: Engine::default(),
                durability: config.lease_table,
                renew_after_expiry: config.renew_after_expiry,
                lock_delay_ms: config.lock_delay_ms,
                wrong: None,
            },
            res,
            config,
            wrong: None,
        }
    }

    /// The same model with one deliberately wrong database rule: the negative controls of the
    /// PostgreSQL differential, which must find it.
    pub fn with_wrong_rule(mut self, rule: WrongRule) -> Self {
        self.wrong = Some(rule);
        self.lease.wrong = Some(rule);
        self.res.wrong = Some(rule);
        let rr = rule == WrongRule::RepeatableReadReadsLatest;
        self.lease.engine.rr_reads_latest = rr;
        self.res.engine.rr_reads_latest = rr;
        let fifo = rule == WrongRule::WaitersInQueueOrder;
        self.lease.engine.queue_order_only = fifo;
        self.res.engine.queue_order_only = fifo;
        self
    }

    /// Sets the picks for the engine's nondeterministic decisions from now on, and forgets the
    /// decisions taken so far (see [`Choices`]).
    pub fn set_choices(&mut self, script: Vec<usize>) {
        self.lease.engine.choices = Choices {
            script: script.clone(),
            seen: Vec::new(),
        };
        self.res.engine.choices = Choices {
            script,
            seen: Vec::new(),
        };
    }

    /// The decisions taken since [`Model::set_choices`]: for each, how many alternatives it had.
    /// At most one database moves per operation, so at most one of the two lists is non-empty.
    pub fn choices_seen(&self) -> Vec<usize> {
        let mut v = self.lease.engine.choices.seen.clone();
        v.extend_from_slice(&self.res.engine.choices.seen);
        v
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The committed floor of a scope (test and lab convenience; replays use `ReadFloor`).
    pub fn floor(&self, scope: &Scope) -> Option<Token> {
        match self.res.engine.committed.get(&Key::Floor(scope.clone())) {
            Some(Row::Floor(t)) => Some(*t),
            _ => None,
        }
    }

    /// The committed lease row.
    pub fn lease_row(&self, lease: &LeaseName) -> Option<LeaseRow> {
        match self.lease.engine.committed.get(&Key::Lease(lease.clone())) {
            Some(Row::Lease(r)) => Some(r.clone()),
            _ => None,
        }
    }

    /// Whether `conn`'s statement on `db` is still waiting for a row lock. A server host uses
    /// this to know when to answer a blocked client (it then records an `await`).
    pub fn is_blocked(&self, db: DbName, conn: &ConnId) -> bool {
        self.conn_has(db, conn, |waiting, _| waiting)
    }

    /// Whether `conn` on `db` has a finished result that nobody collected yet.
    pub fn has_result(&self, db: DbName, conn: &ConnId) -> bool {
        self.conn_has(db, conn, |_, finished| finished)
    }

    /// Asks `f(waiting, finished)` of `conn` on `db` (false for an unknown connection).
    fn conn_has(&self, db: DbName, conn: &ConnId, f: impl Fn(bool, bool) -> bool) -> bool {
        fn probe<T, X>(e: &Engine<T, X>, conn: &ConnId, f: impl Fn(bool, bool) -> bool) -> bool {
            e.conns
                .get(conn)
                .is_some_and(|c| f(c.waiting.is_some(), c.finished.is_some()))
        }
        match db {
            DbName::Lease => probe(&self.lease.engine, conn, f),
            DbName::Res => probe(&self.res.engine, conn, f),
        }
    }

    /// Stamps what commits from now on with history position `seq` (the world calls this
    /// before each operation).
    pub fn stamp(&mut self, seq: u64) {
        self.lease.engine.stamp = seq;
        self.res.engine.stamp = seq;
    }

    /// The ledger: every row version both databases committed, in commit order, with the
    /// history position of the operation during which it committed. Unlike a history, it is
    /// what the databases *did*, not what a client was told.
    pub fn ledger(&self) -> Vec<LedgerEntry> {
        let mut out = Vec::new();
        for (seq, k, row) in self.lease.engine.log.iter().chain(&self.res.engine.log) {
            let what = match (k, row) {
                (Key::Lease(l), Some(Row::Lease(r))) => {
                    Committed::Lease(l.clone(), Some(r.clone()))
                }
                (Key::Lease(l), None) => Committed::Lease(l.clone(), None),
                (Key::Floor(sc), Some(Row::Floor(t))) => Committed::Floor(sc.clone(), *t),
                (Key::Part(sc, p), Some(Row::Part(r))) => {
                    Committed::Part(sc.clone(), p.clone(), r.clone())
                }
                (Key::Publish(key), Some(Row::Part(r))) => {
                    Committed::Publish(key.clone(), r.clone())
                }
                _ => continue,
            };
            out.push(LedgerEntry { seq: *seq, what });
        }
        // Each operation commits on one database, so ordering by position keeps commit order.
        out.sort_by_key(|e| e.seq);
        out
    }

    /// Whether the next operation may make the database decide a race: when two or more
    /// statements already wait (an operation adds at most one waiter), or when one waits while
    /// its transaction holds a lock (the next wait may close a deadlock cycle).
    pub fn race_possible(&self) -> bool {
        self.lease.engine.queue.len() + self.res.engine.queue.len() >= 2
            || self.lease.engine.waiter_holds_locks()
            || self.res.engine.waiter_holds_locks()
    }

    fn is_aborted(&self, db: DbName, id: &ConnId) -> bool {
        match db {
            DbName::Lease => self.lease.engine.is_aborted(id),
            DbName::Res => self.res.engine.is_aborted(id),
        }
    }

    /// The committed state of both databases.
    pub fn snapshot(&self) -> Snapshot {
        let mut s = Snapshot::default();
        for (k, v) in self.lease.engine.committed.iter() {
            if let (Key::Lease(n), Row::Lease(r)) = (k, v) {
                s.leases.push((n.clone(), r.clone()));
            }
        }
        for (k, v) in self.res.engine.committed.iter() {
            match (k, v) {
                (Key::Floor(sc), Row::Floor(t)) => s.floors.push((sc.clone(), *t)),
                (Key::Part(sc, p), Row::Part(r)) => {
                    s.parts.push((sc.clone(), p.clone(), r.clone()))
                }
                (Key::Publish(key), Row::Part(r)) => s.publishes.push((key.clone(), r.clone())),
                _ => {}
            }
        }
        s.attempts = self.res.attempts.clone();
        s.attempts
            .sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
        s
    }

    /// The `write_attempt` log.
    pub fn attempts(&self) -> &[Attempt] {
        &self.res.attempts
    }

    fn read_res(&mut self, id: &ConnId, key: Key) -> Option<Outcome> {
        if let Some(o) = self.res.admit(id).or_else(|| self.res.aborted(id)) {
            return Some(o);
        }
        self.res.snapshot(id);
        let row = self.res.engine.read(id, &key).cloned();
        Some(match (key, row) {
            (Key::Floor(_), Some(Row::Floor(t))) => Outcome::Floor(Some(t)),
            (Key::Floor(_), _) => Outcome::Floor(None),
            (Key::Publish(_), Some(Row::Part(p))) => Outcome::Published(Some(p)),
            (Key::Publish(_), _) => Outcome::Published(None),
            (_, Some(Row::Part(p))) => Outcome::Part(Some(p)),
            (_, _) => Outcome::Part(None),
        })
    }
}
