//! The in-memory implementation of the backend seam: the lease table and the fenced resource,
//! built on the [`engine`](crate::engine) so that locking, blocking and crash behave as
//! PostgreSQL's READ COMMITTED does for the source's statements.

use crate::backend::{Admin, Ctx, FencedResource, LeaseStore, SessionStep};
use crate::config::{Config, FenceMode, LeaseDurability, PublishMode};
pub use crate::engine::Choices;
use crate::engine::{Effect, Engine, Key, Row, Waiting};
use crate::history::{DbName, Outcome};
use crate::names::{ConnId, Holder, LeaseName, Part, Scope, Token};
use crate::rows::{Attempt, AttemptOutcome, LeaseRow, PartRow};
use crate::rules;
use crate::time::Millis;

/// A lease statement, kept whole so it can resume after a lock wait.
#[derive(Clone, Debug)]
pub(crate) enum LeaseTask {
    Acquire {
        lease: LeaseName,
        holder: Holder,
        ttl_ms: u64,
    },
    Renew {
        lease: LeaseName,
        holder: Holder,
        token: Token,
        ttl_ms: u64,
    },
    Release {
        lease: LeaseName,
        holder: Holder,
        token: Token,
    },
}

/// The arguments of one write; the writer is the calling actor.
#[derive(Clone, Debug)]
pub(crate) struct WriteArgs {
    scope: Scope,
    part: Part,
    content: String,
    token: Token,
    writer: Holder,
}

impl WriteArgs {
    fn attempt(&self, outcome: AttemptOutcome) -> Attempt {
        Attempt {
            scope: self.scope.clone(),
            part: self.part.clone(),
            writer: self.writer.clone(),
            token: self.token,
            outcome,
        }
    }
}

/// A resource statement or statement sequence, resumable after a lock wait.
#[derive(Clone, Debug)]
pub(crate) enum ResTask {
    /// One-shot write, stopped before its fence step.
    WriteFence(WriteArgs),
    /// One-shot write, stopped before (`false`) or inside (`true`, floor already set by
    /// check-then-write) its upsert step.
    WriteUpsert(WriteArgs, bool),
    /// Step-wise fence.
    Fence(WriteArgs),
    /// Step-wise upsert.
    Upsert(WriteArgs, bool),
    /// Publish.
    Publish { key: String, row: PartRow },
}

/// Write attempts of the open transaction, logged to `write_attempt` when it ends.
#[derive(Clone, Debug, Default)]
pub(crate) struct Drafts {
    accepted: Vec<WriteArgs>,
    rejected: Vec<WriteArgs>,
    /// The length of `write_attempt` when a REPEATABLE READ transaction took its snapshot.
    attempts_at_snapshot: Option<usize>,
}

/// How one step ended: an outcome, or a wait on a key with the continuation.
type Step<T> = Result<Outcome, (Key, T)>;

/// Shared driving logic for both databases: submit a task on a connection, park it when it
/// blocks, and resume waiters whenever locks may have been released.
trait Db {
    type Task: Clone;
    type Extra: Default;
    fn engine(&mut self) -> &mut Engine<Self::Task, Self::Extra>;
    fn step(&mut self, id: &ConnId, task: Self::Task, now: Millis) -> Step<Self::Task>;
    /// Whether the task sends a statement to the server at all (a fence step of the row fence
    /// or of no fence is decided in the client: no statement, so no snapshot either).
    fn sends_sql(&self, _task: &Self::Task) -> bool {
        true
    }
    /// A statement of `id` starts: a REPEATABLE READ transaction takes its snapshot now.
    fn snapshot(&mut self, id: &ConnId) {
        self.engine().take_snapshot(id);
    }
    /// Runs `step` for a statement whose client is gone: nothing of it reaches the client, so
    /// nothing is logged on the client's behalf.
    fn step_unlogged(&mut self, id: &ConnId, task: Self::Task, now: Millis) -> Step<Self::Task> {
        self.step(id, task, now)
    }

    /// Common admission: down → `Unavailable`; a connection cut by a crash reports it once;
    /// one statement at a time per connection.
    fn admit(&mut self, id: &ConnId) -> Option<Outcome> {
        let e = self.engine();
        if !e.up {
            return Some(Outcome::Unavailable);
        }
        let c = e.conn(id);
        if c.lost {
            c.lost = false;
            return Some(Outcome::Error("conn-lost".into()));
        }
        if c.waiting.is_some() {
            return Some(Outcome::Error("busy".into()));
        }
        c.finished = None;
        None
    }

    /// A statement in a transaction that an error aborted fails until the transaction ends.
    fn aborted(&mut self, id: &ConnId) -> Option<Outcome> {
        self.engine()
            .is_aborted(id)
            .then(|| Outcome::Error("sqlstate-25P02".into()))
    }

    fn submit(&mut self, id: &ConnId, task: Self::Task, now: Millis) -> Outcome {
        if let Some(o) = self.admit(id) {
            return o;
        }
        if self.sends_sql(&task) {
            if let Some(o) = self.aborted(id) {
                return o;
            }
            self.snapshot(id);
        }
        let out = match self.step(id, task, now) {
            Ok(o) => o,
            Err((key, task)) => {
                self.engine().park(id, Waiting { key, now, task });
                Outcome::Blocked
            }
        };
        self.wake();
        out
    }

    /// Runs every waiter whose lock became free, earliest first, until none can move.
    fn wake(&mut self) {
        while let Some((id, w)) = self.engine().next_runnable() {
            if self.engine().conns.get(&id).is_some_and(|c| c.orphan) {
                // The orphan got its lock. In a transaction the statement runs and the backend
                // then finds the socket closed and rolls back: nothing stays. In autocommit the
                // statement commits (its Sync was already read).
                let in_txn = self.engine().conn(&id).txn.is_some();
                if !in_txn {
                    let _ = self.step_unlogged(&id, w.task, w.now);
                }
                self.engine().end(&id, false);
                self.engine().forget(&id);
                continue;
            }
            match self.step(&id, w.task, w.now) {
                Ok(o) => self.engine().conn(&id).finished = Some(o),
                Err((key, task)) => self.engine().park(
                    &id,
                    Waiting {
                        key,
                        now: w.now,
                        task,
                    },
                ),
            }
        }
    }

    fn await_result(&mut self, id: &ConnId) -> Outcome {
        let e = self.engine();
        if !e.up {
            return Outcome::Unavailable;
        }
        let c = e.conn(id);
        if c.waiting.is_some() {
            return Outcome::Error("still-blocked".into());
        }
        if let Some(o) = c.finished.take() {
            return o;
        }
        if c.lost {
            c.lost = false;
            return Outcome::Error("conn-lost".into());
        }
        Outcome::Error("not-blocked".into())
    }
}

/// `lease26`.
#[derive(Clone, Debug)]
pub struct LeaseDb {
    engine: Engine<LeaseTask, ()>,
    durability: LeaseDurability,
    renew_after_expiry: bool,
    wrong: Option<WrongRule>,
}

impl Db for LeaseDb {
    type Task = LeaseTask;
    type Extra = ();
    fn engine(&mut self) -> &mut Engine<LeaseTask, ()> {
        &mut self.engine
    }

    fn step(&mut self, id: &ConnId, task: LeaseTask, now: Millis) -> Step<LeaseTask> {
        let lease = match &task {
            LeaseTask::Acquire { lease, .. }
            | LeaseTask::Renew { lease, .. }
            | LeaseTask::Release { lease, .. } => lease.clone(),
        };
        let key = Key::Lease(lease);
        let t = self.engine.stmt_now(id, now);
        let is_update = !matches!(task, LeaseTask::Acquire { .. });
        if self.engine.locked_by_other(id, &key) {
            // A plain UPDATE evaluates its WHERE against the row version it can see first and
            // waits for the row lock only if that version qualifies (manual 13.2.1: "the
            // second updater … will wait for the first updating transaction to commit or roll
            // back" applies to rows "found by the search condition"; `ExecScan` filters before
            // `ExecUpdate` locks). INSERT … ON CONFLICT always waits: the conflict is found by
            // the unique index, before any WHERE (`ExecOnConflictUpdate`).
            let qualifies = |row: Option<&LeaseRow>| match &task {
                LeaseTask::Acquire { .. } => true,
                LeaseTask::Renew {
                    holder,
                    token,
                    ttl_ms,
                    ..
                } => {
                    rules::renew(row, holder, *token, *ttl_ms, t, self.renew_after_expiry).is_some()
                }
                LeaseTask::Release { holder, token, .. } => {
                    rules::release(row, holder, *token).is_some()
                }
            };
            let seen = match self.engine.read(id, &key) {
                Some(Row::Lease(r)) => Some(r),
                _ => None,
            };
            if self.wrong == Some(WrongRule::UpdateWaitsBeforeWhere) || qualifies(seen) {
                return Err((key, task));
            }
            return Ok(Outcome::Refused);
        }
        let row = match self.engine.read(id, &key) {
            Some(Row::Lease(r)) => Some(r.clone()),
            _ => None,
        };
        let lease_row = |r: LeaseRow| Effect::Write(Some(Row::Lease(r)));
        let (effect, out) = match task {
            LeaseTask::Acquire { holder, ttl_ms, .. } => {
                match rules::acquire(row.as_ref(), &holder, ttl_ms, t) {
                    Some(r) => {
                        let out = Outcome::Granted {
                            token: r.token,
                            expires: r.expires_at,
                        };
                        (lease_row(r), out)
                    }
                    // ON CONFLICT locks the conflicting row even when its WHERE is false.
                    None => (Effect::LockOnly, Outcome::Refused),
                }
            }
            LeaseTask::Renew {
                holder,
                token,
                ttl_ms,
                ..
            } => match rules::renew(
                row.as_ref(),
                &holder,
                token,
                ttl_ms,
                t,
                self.renew_after_expiry,
            ) {
                Some(r) => {
                    let out = Outcome::Renewed {
                        expires: r.expires_at,
                    };
                    (lease_row(r), out)
                }
                None => (Effect::None, Outcome::Refused),
            },
            LeaseTask::Release { holder, token, .. } => {
                match rules::release(row.as_ref(), &holder, token) {
                    Some(r) => (lease_row(r), Outcome::Released),
                    None => (Effect::None, Outcome::Refused),
                }
            }
        };
        // REPEATABLE READ: a row another transaction changed since the snapshot cannot be
        // updated or locked (SQLSTATE 40001, manual 13.2.2) — for an UPDATE only when the
        // snapshot's version qualified (otherwise it was never a target); for ON CONFLICT
        // whenever the conflicting row is newer than the snapshot (`ExecCheckTupleVisible`).
        let targets = !is_update || !matches!(effect, Effect::None);
        if targets && self.engine.serialization_conflict(id, &key) {
            self.engine.abort_txn(id);
            return Ok(Outcome::Error("sqlstate-40001".into()));
        }
        self.engine.apply(id, key, effect);
        Ok(out)
    }
}

/// `res26`.
#[derive(Clone, Debug)]
pub struct ResDb {
    engine: Engine<ResTask, Drafts>,
    fence: FenceMode,
    publish: PublishMode,
    attempts: Vec<Attempt>,
    wrong: Option<WrongRule>,
    /// Set while an orphaned statement runs: its client, which logs attempts, is gone.
    quiet: bool,
}

impl ResDb {
    /// Appends to `write_attempt` (the client logs it, so an orphan logs nothing).
    fn log(&mut self, a: Attempt) {
        if !self.quiet {
            self.attempts.push(a);
        }
    }

    /// Check-then-write runs every statement in autocommit, as the source's F6a does.
    fn uses_txn(&self) -> bool {
        self.fence != FenceMode::CheckThenWrite
    }

    fn in_txn(&self, id: &ConnId) -> bool {
        self.engine.conns.get(id).is_some_and(|c| c.txn.is_some())
    }

    /// The fence statement for the configured mode: `Ok(Some(true))` passed, `Ok(Some(false))`
    /// refused, `Ok(None)` a REPEATABLE READ serialization failure (SQLSTATE 40001).
    fn fence_stmt(&mut self, id: &ConnId, w: &WriteArgs) -> Result<Option<bool>, Key> {
        let key = Key::Floor(w.scope.clone());
        let floor_of = |r: Option<&Row>| match r {
            Some(Row::Floor(f)) => Some(*f),
            _ => None,
        };
        match self.fence {
            FenceMode::Scope | FenceMode::Strict => {
                // A plain UPDATE: the WHERE is evaluated on the version this statement can see
                // (the newest committed one, or the REPEATABLE READ snapshot); only a
                // qualifying row is locked, waited for, and re-checked after the wait
                // (EvalPlanQual, manual 13.2.1). A stale token against a committed floor fails
                // at once even while another writer holds the floor.
                let seen = floor_of(self.engine.read(id, &key));
                let pass = rules::floor_passes(self.fence, seen, w.token);
                if !pass {
                    if self.wrong == Some(WrongRule::UpdateWaitsBeforeWhere)
                        && self.engine.locked_by_other(id, &key)
                    {
                        return Err(key);
                    }
                    return Ok(Some(false));
                }
                if self.engine.locked_by_other(id, &key) {
                    return Err(key);
                }
                if self.engine.serialization_conflict(id, &key) {
                    self.engine.abort_txn(id);
                    return Ok(None);
                }
                self.engine
                    .apply(id, key, Effect::Write(Some(Row::Floor(w.token))));
                Ok(Some(true))
            }
            FenceMode::ScopeUpsert => {
                // INSERT … ON CONFLICT: the unique index finds the conflicting row whatever
                // the WHERE says, so it always waits for a locked floor, and locks it even
                // when the WHERE is false.
                if self.engine.locked_by_other(id, &key) {
                    return Err(key);
                }
                if self.engine.serialization_conflict(id, &key) {
                    self.engine.abort_txn(id);
                    return Ok(None);
                }
                let floor = floor_of(self.engine.read(id, &key));
                let pass = rules::floor_passes(self.fence, floor, w.token);
                if pass {
                    self.engine
                        .apply(id, key, Effect::Write(Some(Row::Floor(w.token))));
                } else if floor.is_some() {
                    self.engine.apply(id, key, Effect::LockOnly);
                }
                Ok(Some(pass))
            }
            // A plain SELECT: never waits, takes no lock, and its answer can be stale by the
            // time the client acts on it — which is the whole point of F6a.
            FenceMode::CheckThenWrite => {
                let floor = floor_of(self.engine.read(id, &key));
                Ok(Some(rules::floor_passes(self.fence, floor, w.token)))
            }
            FenceMode::Row | FenceMode::Off => Ok(Some(true)),
        }
    }

    /// The upsert for the configured mode. `floor_set` carries check-then-write's progress
    /// between its two autocommitted statements.
    fn upsert_stmt(
        &mut self,
        id: &ConnId,
        w: &WriteArgs,
        floor_set: bool,
    ) -> Result<Option<bool>, (Key, bool)> {
        if self.fence == FenceMode::CheckThenWrite && !floor_set {
            let fkey = Key::Floor(w.scope.clone());
            // `UPDATE fence_floor SET max_token = $1 WHERE scope = $2`: its WHERE qualifies
            // any existing floor row, so it waits whenever the row is locked.
            let exists = matches!(self.engine.read(id, &fkey), Some(Row::Floor(_)));
            if exists && self.engine.locked_by_other(id, &fkey) {
                return Err((fkey, false));
            }
            if exists {
                self.engine
                    .apply(id, fkey, Effect::Write(Some(Row::Floor(w.token))));
            }
        }
        let key = Key::Part(w.scope.clone(), w.part.clone());
        if self.engine.locked_by_other(id, &key) {
            return Err((key, true));
        }
        if self.engine.serialization_conflict(id, &key) {
            self.engine.abort_txn(id);
            return Ok(None);
        }
        let new = Row::Part(PartRow {
            content: w.content.clone(),
            writer: w.writer.clone(),
            token: w.token,
        });
        let pass = match (self.fence, self.engine.read(id, &key)) {
            (FenceMode::Row, Some(Row::Part(old))) => {
                rules::row_guard_passes(Some(old.token), w.token)
            }
            _ => true,
        };
        let effect = if pass {
            Effect::Write(Some(new))
        } else {
            Effect::LockOnly
        };
        self.engine.apply(id, key, effect);
        Ok(Some(pass))
    }

    /// Ends a one-shot write's transaction and logs the attempt.
    fn finish_write(&mut self, id: &ConnId, w: &WriteArgs, accepted: bool) -> Outcome {
        self.engine.end(id, accepted);
        if accepted {
            self.log(w.attempt(AttemptOutcome::Accepted));
            Outcome::Accepted
        } else {
            self.log(w.attempt(AttemptOutcome::Rejected));
            Outcome::Rejected
        }
    }

    fn draft(&mut self, id: &ConnId, w: WriteArgs, accepted: bool) {
        let d = &mut self.engine.conn(id).extra;
        if accepted {
            d.accepted.push(w);
        } else {
            d.rejected.push(w);
        }
    }

    fn end_txn(&mut self, id: &ConnId, commit: bool) -> Outcome {
        let drafts = std::mem::take(&mut self.engine.conn(id).extra);
        self.engine.end(id, commit);
        if commit {
            for w in &drafts.accepted {
                self.attempts.push(w.attempt(AttemptOutcome::Accepted));
            }
        }
        for w in &drafts.rejected {
            self.attempts.push(w.attempt(AttemptOutcome::Rejected));
        }
        Outcome::Ok
    }

    fn write_args(
        cx: &Ctx<'_>,
        scope: &Scope,
        part: &Part,
        content: &str,
        token: Token,
    ) -> WriteArgs {
        WriteArgs {
            scope: scope.clone(),
            part: part.clone(),
            content: content.to_string(),
            token,
            writer: cx.actor.clone(),
        }
    }
}

impl Db for ResDb {
    type Task = ResTask;
    type Extra = Drafts;
    fn engine(&mut self) -> &mut Engine<ResTask, Drafts> {
        &mut self.engine
    }

    // The resource's statements do not read the clock (only `written_at`, which is not
    // modelled), so `now` is unused here.
    fn step(&mut self, id: &ConnId, task: ResTask, _now: Millis) -> Step<ResTask> {
        const SERIALIZATION: &str = "sqlstate-40001";
        match task {
            ResTask::WriteFence(w) => match self.fence_stmt(id, &w) {
                Err(k) => Err((k, ResTask::WriteFence(w))),
                Ok(None) => {
                    self.engine.end(id, false);
                    Ok(Outcome::Error(SERIALIZATION.into()))
                }
                Ok(Some(false)) => Ok(self.finish_write(id, &w, false)),
                Ok(Some(true)) => self.step(id, ResTask::WriteUpsert(w, false), _now),
            },
            ResTask::WriteUpsert(w, floor_set) => match self.upsert_stmt(id, &w, floor_set) {
                Err((k, fs)) => Err((k, ResTask::WriteUpsert(w, fs))),
                Ok(None) => {
                    self.engine.end(id, false);
                    Ok(Outcome::Error(SERIALIZATION.into()))
                }
                Ok(Some(pass)) => Ok(self.finish_write(id, &w, pass)),
            },
            ResTask::Fence(w) => match self.fence_stmt(id, &w) {
                Err(k) => Err((k, ResTask::Fence(w))),
                Ok(None) => Ok(Outcome::Error(SERIALIZATION.into())),
                Ok(Some(true)) => Ok(Outcome::Passed),
                Ok(Some(false)) if self.in_txn(id) => {
                    self.draft(id, w, false);
                    Ok(Outcome::Failed)
                }
                Ok(Some(false)) => {
                    self.log(w.attempt(AttemptOutcome::Rejected));
                    Ok(Outcome::Failed)
                }
            },
            ResTask::Upsert(w, floor_set) => match self.upsert_stmt(id, &w, floor_set) {
                Err((k, fs)) => Err((k, ResTask::Upsert(w, fs))),
                Ok(None) => Ok(Outcome::Error(SERIALIZATION.into())),
                Ok(Some(pass)) if self.in_txn(id) => {
                    self.draft(id, w, pass);
                    Ok(if pass { Outcome::Ok } else { Outcome::Failed })
                }
                // Autocommit (always so for check-then-write): the upsert is the commit.
                Ok(Some(pass)) => {
                    let o = if pass {
                        AttemptOutcome::Accepted
                    } else {
                        AttemptOutcome::Rejected
                    };
                    self.log(w.attempt(o));
                    Ok(if pass {
                        Outcome::Accepted
                    } else {
                        Outcome::Rejected
                    })
                }
            },
            ResTask::Publish { key, row } => {
                let k = Key::Publish(key.clone());
                if self.engine.locked_by_other(id, &k) {
                    return Err((k, ResTask::Publish { key, row }));
                }
                // REPEATABLE READ: a conflicting row newer than the snapshot is a
                // serialization failure for DO NOTHING too (`ExecCheckTIDVisible`).
                if self.engine.serialization_conflict(id, &k) {
                    self.engine.abort_txn(id);
                    return Ok(Outcome::Error(SERIALIZATION.into()));
                }
                let old = self.engine.read(id, &k);
                let pass = match (self.publish, old) {
                    (_, None) => true,
                    (PublishMode::BusinessKey, Some(_)) => false,
                    (PublishMode::Versioned, Some(Row::Part(p))) => p.token <= row.token,
                    (PublishMode::Versioned, Some(_)) => false,
                };
                let effect = match (pass, self.publish) {
                    (true, _) => Effect::Write(Some(Row::Part(row))),
                    (false, PublishMode::Versioned) => Effect::LockOnly,
                    (false, PublishMode::BusinessKey) => Effect::None,
                };
                self.engine.apply(id, k, effect);
                Ok(if pass {
                    Outcome::Accepted
                } else {
                    Outcome::Rejected
                })
            }
        }
    }

    fn snapshot(&mut self, id: &ConnId) {
        self.engine.take_snapshot(id);
        let n = self.attempts.len();
        if let Some(c) = self.engine.conns.get_mut(id) {
            let rr = c.txn.as_ref().is_some_and(|t| t.snapshot.is_some());
            if rr && c.extra.attempts_at_snapshot.is_none() {
                c.extra.attempts_at_snapshot = Some(n);
            }
        }
    }

    fn sends_sql(&self, task: &ResTask) -> bool {
        !matches!(
            (task, self.fence),
            (ResTask::Fence(_), FenceMode::Row | FenceMode::Off)
        )
    }

    fn step_unlogged(&mut self, id: &ConnId, task: ResTask, now: Millis) -> Step<ResTask> {
        self.quiet = true;
        let r = self.step(id, task, now);
        self.quiet = false;
        r
    }
}

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

/// A deliberately wrong database rule, switched on only by the negative controls of the
/// differential (never by a trace): each must make the model diverge from PostgreSQL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum WrongRule {
    /// A plain `UPDATE … WHERE …` waits for a locked row before evaluating its WHERE.
    UpdateWaitsBeforeWhere,
    /// A REPEATABLE READ transaction reads the newest committed rows, not its snapshot.
    RepeatableReadReadsLatest,
    /// A statement waiting on a lock is dropped when its client disconnects.
    DisconnectDropsWaiter,
}

impl WrongRule {
    /// Every wrong rule.
    pub const ALL: [WrongRule; 3] = [
        WrongRule::UpdateWaitsBeforeWhere,
        WrongRule::RepeatableReadReadsLatest,
        WrongRule::DisconnectDropsWaiter,
    ];

    /// The spelling on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            WrongRule::UpdateWaitsBeforeWhere => "update-waits-before-where",
            WrongRule::RepeatableReadReadsLatest => "repeatable-read-reads-latest",
            WrongRule::DisconnectDropsWaiter => "disconnect-drops-waiter",
        }
    }
}

impl std::str::FromStr for WrongRule {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        WrongRule::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = WrongRule::ALL.iter().map(|r| r.as_str()).collect();
                format!(
                    "unknown wrong rule `{s}`; expected one of: {}",
                    names.join(", ")
                )
            })
    }
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
        for s in &config.scopes {
            res.engine
                .committed
                .insert(Key::Floor(s.clone()), Row::Floor(Token(0)));
        }
        Model {
            lease: LeaseDb {
                engine: Engine::default(),
                durability: config.lease_table,
                renew_after_expiry: config.renew_after_expiry,
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

    /// Whether the next operation may make the database decide a race: only when two or more
    /// statements already wait (an operation adds at most one waiter).
    pub fn race_possible(&self) -> bool {
        self.lease.engine.queue.len() + self.res.engine.queue.len() >= 2
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

impl LeaseStore for Model {
    fn acquire(
        &mut self,
        cx: &Ctx<'_>,
        lease: &LeaseName,
        holder: &Holder,
        ttl_ms: u64,
    ) -> Outcome {
        let task = LeaseTask::Acquire {
            lease: lease.clone(),
            holder: holder.clone(),
            ttl_ms,
        };
        self.lease.submit(cx.conn, task, cx.now)
    }

    fn renew(
        &mut self,
        cx: &Ctx<'_>,
        lease: &LeaseName,
        holder: &Holder,
        token: Token,
        ttl_ms: u64,
    ) -> Outcome {
        let task = LeaseTask::Renew {
            lease: lease.clone(),
            holder: holder.clone(),
            token,
            ttl_ms,
        };
        self.lease.submit(cx.conn, task, cx.now)
    }

    fn release(
        &mut self,
        cx: &Ctx<'_>,
        lease: &LeaseName,
        holder: &Holder,
        token: Token,
    ) -> Outcome {
        let task = LeaseTask::Release {
            lease: lease.clone(),
            holder: holder.clone(),
            token,
        };
        self.lease.submit(cx.conn, task, cx.now)
    }

    fn read_lease(&mut self, cx: &Ctx<'_>, lease: &LeaseName) -> Outcome {
        if let Some(o) = self
            .lease
            .admit(cx.conn)
            .or_else(|| self.lease.aborted(cx.conn))
        {
            return o;
        }
        self.lease.engine.take_snapshot(cx.conn);
        match self.lease.engine.read(cx.conn, &Key::Lease(lease.clone())) {
            Some(Row::Lease(r)) => Outcome::Lease(Some(r.clone())),
            _ => Outcome::Lease(None),
        }
    }
}

impl FencedResource for Model {
    fn write(
        &mut self,
        cx: &Ctx<'_>,
        scope: &Scope,
        part: &Part,
        content: &str,
        token: Token,
    ) -> Outcome {
        if let Some(o) = self.res.admit(cx.conn) {
            return o;
        }
        if self.res.in_txn(cx.conn) {
            return Outcome::Error("in-transaction".into());
        }
        if self.res.uses_txn() {
            self.res.engine.begin(cx.conn, cx.now, false);
        }
        let w = ResDb::write_args(cx, scope, part, content, token);
        self.res.submit(cx.conn, ResTask::WriteFence(w), cx.now)
    }

    fn fence(&mut self, cx: &Ctx<'_>, scope: &Scope, token: Token) -> Outcome {
        let w = ResDb::write_args(cx, scope, &Part::new(""), "", token);
        self.res.submit(cx.conn, ResTask::Fence(w), cx.now)
    }

    fn upsert(
        &mut self,
        cx: &Ctx<'_>,
        scope: &Scope,
        part: &Part,
        content: &str,
        token: Token,
    ) -> Outcome {
        let w = ResDb::write_args(cx, scope, part, content, token);
        self.res.submit(cx.conn, ResTask::Upsert(w, false), cx.now)
    }

    fn publish(&mut self, cx: &Ctx<'_>, key: &str, content: &str, token: Token) -> Outcome {
        let row = PartRow {
            content: content.to_string(),
            writer: cx.actor.clone(),
            token,
        };
        let task = ResTask::Publish {
            key: key.to_string(),
            row,
        };
        self.res.submit(cx.conn, task, cx.now)
    }

    fn read_floor(&mut self, cx: &Ctx<'_>, scope: &Scope) -> Outcome {
        self.read_res(cx.conn, Key::Floor(scope.clone()))
            .unwrap_or(Outcome::Floor(None))
    }

    fn read_part(&mut self, cx: &Ctx<'_>, scope: &Scope, part: &Part) -> Outcome {
        self.read_res(cx.conn, Key::Part(scope.clone(), part.clone()))
            .unwrap_or(Outcome::Part(None))
    }

    fn read_publish(&mut self, cx: &Ctx<'_>, key: &str) -> Outcome {
        self.read_res(cx.conn, Key::Publish(key.to_string()))
            .unwrap_or(Outcome::Published(None))
    }

    fn count_attempts(
        &mut self,
        cx: &Ctx<'_>,
        writer: &Holder,
        outcome: AttemptOutcome,
    ) -> Outcome {
        if let Some(o) = self
            .res
            .admit(cx.conn)
            .or_else(|| self.res.aborted(cx.conn))
        {
            return o;
        }
        self.res.snapshot(cx.conn);
        // The log only grows, so a REPEATABLE READ snapshot of it is a prefix.
        let seen = self
            .res
            .engine
            .conns
            .get(cx.conn)
            .and_then(|c| c.extra.attempts_at_snapshot)
            .unwrap_or(self.res.attempts.len());
        let n = self.res.attempts[..seen]
            .iter()
            .filter(|a| &a.writer == writer && a.outcome == outcome)
            .count();
        Outcome::Count(n as u64)
    }
}

impl Admin for Model {
    fn session(&mut self, cx: &Ctx<'_>, db: DbName, step: SessionStep) -> Outcome {
        let id = cx.conn;
        if step == SessionStep::Disconnect {
            let up = match db {
                DbName::Lease => self.lease.engine.up,
                DbName::Res => self.res.engine.up,
            };
            if !up {
                return Outcome::Unavailable;
            }
            // The client closed its socket. Idle (in a transaction or not), the backend reads
            // EOF at once and rolls back. Waiting on a lock, it notices only when the statement
            // ends: the statement stays queued as an orphan (see the engine's module doc).
            let waiting =
                self.is_blocked(db, id) && self.wrong != Some(WrongRule::DisconnectDropsWaiter);
            match db {
                DbName::Lease => {
                    if waiting {
                        self.lease.engine.orphan(id);
                    } else {
                        self.lease.engine.end(id, false);
                        self.lease.engine.forget(id);
                    }
                    self.lease.wake();
                }
                DbName::Res => {
                    // The client logs its rejected attempts as it leaves, in both cases.
                    let drafts = std::mem::take(&mut self.res.engine.conn(id).extra);
                    for w in &drafts.rejected {
                        self.res.log(w.attempt(AttemptOutcome::Rejected));
                    }
                    if waiting {
                        self.res.engine.orphan(id);
                    } else {
                        self.res.engine.end(id, false);
                        self.res.engine.forget(id);
                    }
                    self.res.wake();
                }
            }
            return Outcome::Ok;
        }
        if step == SessionStep::Await {
            return match db {
                DbName::Lease => self.lease.await_result(id),
                DbName::Res => self.res.await_result(id),
            };
        }
        let admitted = match db {
            DbName::Lease => self.lease.admit(id),
            DbName::Res => self.res.admit(id),
        };
        if let Some(o) = admitted {
            return o;
        }
        // Check-then-write keeps no transaction: BEGIN/COMMIT are markers for it.
        let txn_db = db == DbName::Lease || self.res.uses_txn();
        let out = match step {
            SessionStep::Now if self.is_aborted(db, id) => Outcome::Error("sqlstate-25P02".into()),
            SessionStep::Now => {
                // `SELECT now()` is a statement: a REPEATABLE READ snapshot is taken here.
                match db {
                    DbName::Lease => self.lease.snapshot(id),
                    DbName::Res => self.res.snapshot(id),
                }
                let t = match db {
                    DbName::Lease => self.lease.engine.stmt_now(id, cx.now),
                    DbName::Res => self.res.engine.stmt_now(id, cx.now),
                };
                Outcome::Now(t)
            }
            SessionStep::Begin | SessionStep::BeginRepeatableRead => {
                let repeatable = step == SessionStep::BeginRepeatableRead;
                let open = match db {
                    DbName::Lease => self.lease.engine.conn(id).txn.is_some(),
                    DbName::Res => self.res.in_txn(id),
                };
                if open {
                    Outcome::Error("in-transaction".into())
                } else {
                    if txn_db {
                        match db {
                            DbName::Lease => self.lease.engine.begin(id, cx.now, repeatable),
                            DbName::Res => self.res.engine.begin(id, cx.now, repeatable),
                        }
                    }
                    Outcome::Ok
                }
            }
            SessionStep::Commit | SessionStep::Rollback => {
                // COMMIT of a transaction an error aborted rolls back (PostgreSQL answers
                // ROLLBACK without an error).
                let aborted = match db {
                    DbName::Lease => self.lease.engine.is_aborted(id),
                    DbName::Res => self.res.engine.is_aborted(id),
                };
                let commit = step == SessionStep::Commit && !aborted;
                match db {
                    DbName::Lease => {
                        self.lease.engine.end(id, commit);
                        Outcome::Ok
                    }
                    DbName::Res => self.res.end_txn(id, commit),
                }
            }
            SessionStep::Await | SessionStep::Disconnect => Outcome::Error("not-blocked".into()),
        };
        match db {
            DbName::Lease => self.lease.wake(),
            DbName::Res => self.res.wake(),
        }
        out
    }

    fn crash(&mut self, _cx: &Ctx<'_>, db: DbName) -> Outcome {
        match db {
            DbName::Lease => {
                if !self.lease.engine.up {
                    return Outcome::Error("already-down".into());
                }
                self.lease.engine.crash();
                if self.lease.durability == LeaseDurability::Unlogged {
                    let stamp = self.lease.engine.stamp;
                    for k in std::mem::take(&mut self.lease.engine.committed).into_keys() {
                        self.lease.engine.log.push((stamp, k, None));
                    }
                }
            }
            DbName::Res => {
                if !self.res.engine.up {
                    return Outcome::Error("already-down".into());
                }
                self.res.engine.crash();
            }
        }
        Outcome::Ok
    }

    fn restart(&mut self, _cx: &Ctx<'_>, db: DbName) -> Outcome {
        let e_up = match db {
            DbName::Lease => &mut self.lease.engine.up,
            DbName::Res => &mut self.res.engine.up,
        };
        if *e_up {
            return Outcome::Error("not-down".into());
        }
        *e_up = true;
        Outcome::Ok
    }
}
