//! `res26`: the fenced resource's statements (one-shot and step-wise writes under every fence
//! mode, publishes) and the write-attempt log, on the engine.

use super::db::{Db, Step};
use super::wrong::{deviations, WrongRule};
use crate::backend::Ctx;
use crate::config::{FenceMode, PublishMode};
use crate::engine::{Effect, Engine, Key, Row};
use crate::history::Outcome;
use crate::names::{ConnId, Holder, Part, Scope, Token};
use crate::protocol::{update_waits, Gate};
use crate::rows::{Attempt, AttemptOutcome, PartRow};
use crate::rules;
use crate::time::Millis;
use crate::Reason;

/// The arguments of one write; the writer is the calling actor.
#[derive(Clone, Debug)]
pub(crate) struct WriteArgs {
    pub(super) scope: Scope,
    pub(super) part: Part,
    pub(super) content: String,
    pub(super) token: Token,
    pub(super) writer: Holder,
}

impl WriteArgs {
    pub(super) fn attempt(&self, outcome: AttemptOutcome) -> Attempt {
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
    pub(super) accepted: Vec<WriteArgs>,
    pub(super) rejected: Vec<WriteArgs>,
    /// The length of `write_attempt` when a REPEATABLE READ transaction took its snapshot.
    pub(super) attempts_at_snapshot: Option<usize>,
}

/// `res26`.
#[derive(Clone, Debug)]
pub(super) struct ResDb {
    pub(super) engine: Engine<ResTask, Drafts>,
    pub(super) fence: FenceMode,
    pub(super) publish: PublishMode,
    pub(super) attempts: Vec<Attempt>,
    pub(super) wrong: Option<WrongRule>,
    /// Set while an orphaned statement runs: its client, which logs attempts, is gone.
    pub(super) quiet: bool,
}

impl ResDb {
    /// Appends to `write_attempt` (the client logs it, so an orphan logs nothing).
    pub(super) fn log(&mut self, a: Attempt) {
        if !self.quiet {
            self.attempts.push(a);
        }
    }

    /// Check-then-write runs every statement in autocommit, as the source's F6a does.
    pub(super) fn uses_txn(&self) -> bool {
        self.fence != FenceMode::CheckThenWrite
    }

    pub(super) fn in_txn(&self, id: &ConnId) -> bool {
        self.engine.conns.get(id).is_some_and(|c| c.txn.is_some())
    }

    /// The fence statement for the configured mode: `Ok(Some(true))` passed, `Ok(Some(false))`
    /// refused, `Ok(None)` a REPEATABLE READ serialization failure (SQLSTATE 40001).
    /// `resumed`: the statement waited for the floor's row lock and now holds it.
    pub(super) fn fence_stmt(
        &mut self,
        id: &ConnId,
        w: &WriteArgs,
        resumed: bool,
    ) -> Result<Option<bool>, Key> {
        let key = Key::Floor(w.scope.clone());
        let floor_of = |r: Option<&Row>| match r {
            Some(Row::Floor(f)) => Some(*f),
            _ => None,
        };
        match self.fence {
            FenceMode::Scope | FenceMode::Strict => {
                // A plain UPDATE (`crate::protocol`): a stale token against the floor it sees
                // fails at once even while another writer holds the floor.
                let seen = floor_of(self.engine.read(id, &key));
                let pass = rules::floor_passes(self.fence, seen, w.token);
                let dev = deviations(self.wrong);
                match self.engine.update_gate(id, &key, pass, resumed, dev) {
                    Gate::Wait => Err(key),
                    Gate::SerializationFailure => Ok(None),
                    Gate::NoRow { keep_lock } => {
                        if keep_lock {
                            self.engine.apply(id, key, Effect::LockOnly);
                        }
                        Ok(Some(false))
                    }
                    Gate::Go => {
                        self.engine
                            .apply(id, key, Effect::Write(Some(Row::Floor(w.token))));
                        Ok(Some(true))
                    }
                }
            }
            FenceMode::ScopeUpsert => {
                // INSERT … ON CONFLICT (`crate::protocol`): it waits for a locked floor, and
                // locks it even when the WHERE is false.
                match self.engine.upsert_gate(id, &key) {
                    Gate::Wait => return Err(key),
                    Gate::SerializationFailure => return Ok(None),
                    Gate::NoRow { .. } | Gate::Go => {}
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
    pub(super) fn upsert_stmt(
        &mut self,
        id: &ConnId,
        w: &WriteArgs,
        floor_set: bool,
    ) -> Result<Option<bool>, (Key, bool)> {
        if self.fence == FenceMode::CheckThenWrite && !floor_set {
            let fkey = Key::Floor(w.scope.clone());
            // `UPDATE fence_floor SET max_token = $1 WHERE scope = $2`, a plain UPDATE whose
            // WHERE qualifies any existing floor row (`crate::protocol`). Autocommitted in
            // check-then-write's client, so it has no snapshot to conflict with.
            let exists = matches!(self.engine.read(id, &fkey), Some(Row::Floor(_)));
            if update_waits(exists, self.engine.locked_by_other(id, &fkey)) {
                return Err((fkey, false));
            }
            if exists {
                self.engine
                    .apply(id, fkey, Effect::Write(Some(Row::Floor(w.token))));
            }
        }
        // The part upsert is an INSERT … ON CONFLICT (`crate::protocol`).
        let key = Key::Part(w.scope.clone(), w.part.clone());
        match self.engine.upsert_gate(id, &key) {
            Gate::Wait => return Err((key, true)),
            Gate::SerializationFailure => return Ok(None),
            Gate::NoRow { .. } | Gate::Go => {}
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
    pub(super) fn finish_write(&mut self, id: &ConnId, w: &WriteArgs, accepted: bool) -> Outcome {
        self.engine.end(id, accepted);
        if accepted {
            self.log(w.attempt(AttemptOutcome::Accepted));
            Outcome::Accepted
        } else {
            self.log(w.attempt(AttemptOutcome::Rejected));
            Outcome::Rejected
        }
    }

    pub(super) fn draft(&mut self, id: &ConnId, w: WriteArgs, accepted: bool) {
        let d = &mut self.engine.conn(id).extra;
        if accepted {
            d.accepted.push(w);
        } else {
            d.rejected.push(w);
        }
    }

    pub(super) fn end_txn(&mut self, id: &ConnId, commit: bool) -> Outcome {
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

    pub(super) fn write_args(
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

    /// A one-shot write opened its transaction itself: its client rolls it back after the
    /// error (so the connection is free again), as after a serialization failure.
    fn deadlock_aborted(&mut self, victim: &ConnId, task: Option<ResTask>) {
        match task {
            Some(ResTask::WriteFence(_) | ResTask::WriteUpsert(..)) => {
                self.engine.end(victim, false)
            }
            _ => self.engine.abort_txn(victim),
        }
    }

    // The resource's statements do not read the clock (only `written_at`, which is not
    // modelled), so `now` is unused here.
    fn step(&mut self, id: &ConnId, task: ResTask, _now: Millis, resumed: bool) -> Step<ResTask> {
        match task {
            ResTask::WriteFence(w) => match self.fence_stmt(id, &w, resumed) {
                Err(k) => Err((k, ResTask::WriteFence(w))),
                Ok(None) => {
                    self.engine.end(id, false);
                    Ok(Outcome::Error(Reason::SERIALIZATION_FAILURE))
                }
                Ok(Some(false)) => Ok(self.finish_write(id, &w, false)),
                Ok(Some(true)) => self.step(id, ResTask::WriteUpsert(w, false), _now, false),
            },
            ResTask::WriteUpsert(w, floor_set) => match self.upsert_stmt(id, &w, floor_set) {
                Err((k, fs)) => Err((k, ResTask::WriteUpsert(w, fs))),
                Ok(None) => {
                    self.engine.end(id, false);
                    Ok(Outcome::Error(Reason::SERIALIZATION_FAILURE))
                }
                Ok(Some(pass)) => Ok(self.finish_write(id, &w, pass)),
            },
            ResTask::Fence(w) => match self.fence_stmt(id, &w, resumed) {
                Err(k) => Err((k, ResTask::Fence(w))),
                Ok(None) => Ok(Outcome::Error(Reason::SERIALIZATION_FAILURE)),
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
                Ok(None) => Ok(Outcome::Error(Reason::SERIALIZATION_FAILURE)),
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
                // INSERT … ON CONFLICT (`crate::protocol`); under REPEATABLE READ a conflicting
                // row newer than the snapshot is a serialization failure for DO NOTHING too
                // (`ExecCheckTIDVisible`).
                match self.engine.upsert_gate(id, &k) {
                    Gate::Wait => return Err((k, ResTask::Publish { key, row })),
                    Gate::SerializationFailure => {
                        return Ok(Outcome::Error(Reason::SERIALIZATION_FAILURE))
                    }
                    Gate::NoRow { .. } | Gate::Go => {}
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
        let r = self.step(id, task, now, true);
        self.quiet = false;
        r
    }
}
