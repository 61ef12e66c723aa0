//! Waiters held still, so that PostgreSQL's choice among woken waiters is made the same way
//! every run.
//!
//! When a transaction ends, every backend that waits for it is woken at once: the lock manager
//! grants all of their share locks on its transaction id together (`ProcLockWakeup`,
//! `lock.c`), and those that waited there without a tuple lock — an `INSERT … ON CONFLICT`
//! that met an uncommitted row in the unique index (`_bt_check_unique` →
//! `XactLockTableWait`) — then race for the row. Which one the kernel runs first decides who
//! gets it, so one schedule could answer one way on one run and another way on the next, and
//! a search's shrink could end on different schedules (issue: failures that shrink the same way
//! every time).
//!
//! So a backend that is seen waiting on a lock is stopped (`SIGSTOP`; it sleeps on its latch
//! in `ProcSleep` and holds no lightweight lock there), and [`super::PgBackend::settle`] lets
//! the stopped ones go on one at a time, oldest wait first, each only once the server no longer
//! blocks it and the one before it has finished or waits again: the order of a FIFO queue, the
//! order the model wakes waiters in. A stopped backend whose lock is granted stays granted and
//! asleep until then. A wait that closes a deadlock cycle is never stopped (the lock-wait
//! question answers "not final" for it until the detector, run by the waiter that closed the
//! cycle, has aborted one).
//!
//! The hazards: a backend stopped while it holds the lock manager's partition locks (inside
//! `CheckDeadLock`, which runs `deadlock_timeout` after its wait began) would stop every other
//! lock query; and one stopped just outside its sleep — `ProcSleep` between `CheckDeadLock` and
//! its next `WaitLatch`, still queued for the lock but with no wait event — would look to the
//! lock-wait question like a running blocker, so every wait behind it would answer "not final"
//! until its 120 s bound (seen with a holder's two lease connections, whose waits outlast
//! `deadlock_timeout`). After each stop the lock table is read (`pg_locks`, which takes each
//! partition lock) and the backend's wait event with it; unless that answers within [`PROBE`]
//! with a wait on a lock, the backend is let go again and stays unordered until it is seen
//! waiting once more.
//!
//! Only the adapter's own throwaway clusters' backends are stopped (their process ids are this
//! machine's); on an existing server (`LEASELAB_PG_CONNINFO`), or with
//! `LEASELAB_WAKE_ORDER=server`, the server's own wake order stands.

use super::super::PgBackend;
use std::time::Duration;

/// How long the lock table may take to answer after a stop before the stop is undone.
const PROBE: Duration = Duration::from_millis(200);

/// Whether stopped backend `$1` sleeps waiting on a lock: its wait event (frozen by the stop)
/// says so. Reading `pg_locks` first takes every partition lock, so the answer comes only if
/// the stop caught none of them held.
const ASLEEP_ON_A_LOCK: &str = "SELECT (SELECT count(*) FROM pg_locks) >= 0 \
    AND coalesce((SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = $1::int), false)";

/// Whether this process may stop backends of its throwaway clusters: not when told to leave the
/// wake order to the server.
pub(super) fn holds_allowed() -> bool {
    std::env::var("LEASELAB_WAKE_ORDER").map_or(true, |v| v != "server")
}

fn signal(pid: i32, sig: libc::c_int) -> bool {
    // SAFETY: `kill` has no memory effects; `pid` is a backend of a cluster this process
    // started (never 0 or negative: no process group is signalled).
    pid > 0 && unsafe { libc::kill(pid, sig) } == 0
}

impl PgBackend {
    /// Stops backend `pid` of side `i`, seen waiting on a lock, until [`Self::release`]; whether
    /// it is held.
    pub(in crate::adapter) fn hold(&mut self, i: usize, pid: i32) -> bool {
        if !self.sides[i].can_hold || self.sides[i].held.contains(&pid) {
            return self.sides[i].held.contains(&pid);
        }
        if !signal(pid, libc::SIGSTOP) {
            // Not ours to signal after all: leave the order to the server from now on.
            self.sides[i].can_hold = false;
            return false;
        }
        let Ok((admin, _)) = self.admin(i) else {
            signal(pid, libc::SIGCONT);
            return false;
        };
        let answered = self.rt.block_on(async move {
            let params: [&(dyn tokio_postgres::types::ToSql + Sync); 1] = [&pid];
            let probe = admin.query_one(ASLEEP_ON_A_LOCK, &params);
            tokio::pin!(probe);
            let asleep = match tokio::time::timeout(PROBE, &mut probe).await {
                Ok(Ok(r)) => r.get::<_, bool>(0),
                Ok(Err(_)) => false,
                Err(_) => {
                    signal(pid, libc::SIGCONT);
                    let _ = probe.await;
                    return false;
                }
            };
            if !asleep {
                signal(pid, libc::SIGCONT);
            }
            asleep
        });
        if answered {
            self.sides[i].held.push(pid);
        }
        answered
    }

    /// Lets held backend `pid` of side `i` go on (nothing if it is not held).
    pub(in crate::adapter) fn release(&mut self, i: usize, pid: i32) {
        let held = &mut self.sides[i].held;
        if let Some(k) = held.iter().position(|p| *p == pid) {
            held.remove(k);
            signal(pid, libc::SIGCONT);
        }
    }

    /// Every held backend of side `i` goes on: before its sessions are closed or ended, its
    /// server is stopped or a reset ends every backend (a stopped one would not act on the
    /// signal that ends it).
    pub(in crate::adapter) fn release_all(&mut self, i: usize) {
        for pid in std::mem::take(&mut self.sides[i].held) {
            signal(pid, libc::SIGCONT);
        }
    }

    pub(in crate::adapter) fn is_held(&self, i: usize, pid: i32) -> bool {
        self.sides[i].held.contains(&pid)
    }
}

impl Drop for super::Side {
    /// A held backend goes on before its cluster is stopped.
    fn drop(&mut self) {
        for pid in std::mem::take(&mut self.held) {
            signal(pid, libc::SIGCONT);
        }
    }
}
