//! What both databases share: submitting a statement on a connection, parking it when it
//! blocks, resuming waiters whenever locks may have been released, collecting results.

use crate::engine::{Engine, Key, Waiting};
use crate::history::Outcome;
use crate::names::ConnId;
use crate::time::Millis;
use crate::Reason;

/// How one step ended: an outcome, or a wait on a key with the continuation.
pub(super) type Step<T> = Result<Outcome, (Key, T)>;

/// Shared driving logic for both databases: submit a task on a connection, park it when it
/// blocks, and resume waiters whenever locks may have been released.
pub(super) trait Db {
    type Task: Clone;
    type Extra: Default;
    fn engine(&mut self) -> &mut Engine<Self::Task, Self::Extra>;
    /// Runs `task` on `id`. `resumed` says the statement waited for a row lock and now holds
    /// it: a plain UPDATE whose re-check then fails keeps that lock (see `lease_db`).
    fn step(
        &mut self,
        id: &ConnId,
        task: Self::Task,
        now: Millis,
        resumed: bool,
    ) -> Step<Self::Task>;
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
        self.step(id, task, now, true)
    }

    /// Admission (down, a connection a crash cut, busy): `crate::protocol::admit`.
    fn admit(&mut self, id: &ConnId) -> Option<Outcome> {
        crate::protocol::admit(self.engine(), id)
    }

    /// A statement in a transaction that an error aborted fails until the transaction ends.
    fn aborted(&mut self, id: &ConnId) -> Option<Outcome> {
        self.engine()
            .is_aborted(id)
            .then_some(Outcome::Error(Reason::IN_FAILED_SQL_TRANSACTION))
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
        let out = match self.step(id, task, now, false) {
            Ok(o) => o,
            Err((key, task)) => {
                self.engine().park(id, Waiting { key, now, task });
                match self.deadlock(id) {
                    Some(o) => o,
                    None => Outcome::Blocked,
                }
            }
        };
        self.wake();
        // Another member of a cycle it closed was aborted, and the statement went on: the
        // server answers it within the step (a wait PostgreSQL resolves is not a wait).
        if out == Outcome::Blocked && self.engine().conn(id).waiting.is_none() {
            if let Some(o) = self.engine().conn(id).finished.take() {
                return o;
            }
        }
        out
    }

    /// `id` just parked: if that closed a wait cycle, the detector aborts one member — its
    /// statement fails with 40P01 and its transaction is aborted, freeing its locks. Returns
    /// `id`'s own outcome when it is the one aborted.
    fn deadlock(&mut self, id: &ConnId) -> Option<Outcome> {
        while let Some((victim, w)) = self.engine().deadlock_victim(id) {
            let out = Outcome::Error(Reason::DEADLOCK_DETECTED);
            let e = self.engine();
            if e.conns.get(&victim).is_some_and(|c| c.orphan) {
                // Nobody reads the error: the backend finds the socket closed and is gone.
                e.end(&victim, false);
                e.forget(&victim);
                continue;
            }
            self.deadlock_aborted(&victim, w.map(|w| w.task));
            if victim == *id {
                return Some(out);
            }
            self.engine().conn(&victim).finished = Some(out);
        }
        None
    }

    /// The deadlock victim's transaction after the error: aborted, its locks free. A one-shot
    /// operation that opened the transaction itself rolls it back (as its client does).
    fn deadlock_aborted(&mut self, victim: &ConnId, _task: Option<Self::Task>) {
        self.engine().abort_txn(victim);
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
            match self.step(&id, w.task, w.now, true) {
                Ok(o) => self.engine().conn(&id).finished = Some(o),
                Err((key, task)) => {
                    self.engine().park(
                        &id,
                        Waiting {
                            key,
                            now: w.now,
                            task,
                        },
                    );
                    if let Some(o) = self.deadlock(&id) {
                        self.engine().conn(&id).finished = Some(o);
                    }
                }
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
            return Outcome::Error(Reason::StillBlocked);
        }
        if let Some(o) = c.finished.take() {
            return o;
        }
        if c.lost {
            c.lost = false;
            return Outcome::Error(Reason::ConnLost);
        }
        Outcome::Error(Reason::NotBlocked)
    }
}
