//! Sessions and lock waits: one statement at a time per connection, run as a task; whether it
//! waits is asked of the server; every statement the server no longer blocks is settled after
//! each operation; orphans (a client gone while its statement waits) run on.

use super::super::error::*;
use super::super::statements::*;
use super::super::PgBackend;
use super::{Pause, Session};
use crate::sql;
use leaselab_model::Reason;
use leaselab_model::{ConnId, Ctx, DbName, FenceMode, Millis, Outcome, Part, Scope, Token};
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;
use tokio_postgres::{Client, NoTls, Statement};

/// How long a statement may neither finish nor be reported blocked with every blocker settled
/// (the isolation tester's own bound is 300 s). A verdict must not depend on how busy the
/// machine is: this is a last resort for a server that hangs, not a way to decide.
pub(in crate::adapter) const STUCK: Duration = Duration::from_secs(120);

pub(in crate::adapter) async fn connect(
    conninfo: &str,
    virtual_time: bool,
) -> Result<(Client, i32), tokio_postgres::Error> {
    connect_owned(conninfo, virtual_time)
        .await
        .map(|(c, pid, _)| (c, pid))
}

/// Connects and returns the task that owns the socket too: aborting it closes the socket, as a
/// client process that exits or drops its connection does.
pub(in crate::adapter) async fn connect_owned(
    conninfo: &str,
    virtual_time: bool,
) -> Result<(Client, i32, JoinHandle<()>), tokio_postgres::Error> {
    let info = if virtual_time {
        format!("{conninfo} options='-c search_path=lab,pg_catalog,public'")
    } else {
        conninfo.to_string()
    };
    let (client, conn) = tokio_postgres::connect(&info, NoTls).await?;
    let socket = tokio::spawn(async move {
        let _ = conn.await;
    });
    let pid: i32 = client
        .query_one("SELECT pg_backend_pid()", &[])
        .await?
        .get(0);
    Ok((client, pid, socket))
}

pub(in crate::adapter) enum Waited {
    Done(Out),
    Blocked(JoinHandle<Out>),
    Stuck,
}

/// Waits for a statement task: its result if it finishes, `Blocked` as soon as the server says
/// it waits on one of `others`. Completion is awaited directly (most statements finish in well
/// under a millisecond); only a statement still running after 1 ms, or one that was already
/// pending (`ask_first`), is asked about.
pub(in crate::adapter) async fn wait_or_blocked(
    mut h: JoinHandle<Out>,
    admin: (Arc<Client>, Statement),
    pid: i32,
    others: Vec<i32>,
    ask_first: bool,
    paused: Option<Arc<std::sync::atomic::AtomicBool>>,
) -> Waited {
    let start = Instant::now();
    let mut ask = ask_first;
    loop {
        // A holder paused inside its operation (`leaselab audit`): pending until `await`.
        if paused
            .as_ref()
            .is_some_and(|p| p.load(std::sync::atomic::Ordering::SeqCst))
            && !h.is_finished()
        {
            return Waited::Blocked(h);
        }
        if ask && !h.is_finished() && !others.is_empty() {
            if let Ok(r) = admin.0.query_one(&admin.1, &[&pid, &others]).await {
                if r.get::<_, i32>(0) == 1 {
                    return Waited::Blocked(h);
                }
            }
        }
        ask = true;
        tokio::select! {
            biased;
            r = &mut h => {
                return match r {
                    Ok(o) => Waited::Done(o),
                    Err(_) => Waited::Done(Outcome::Error(Reason::Other("task-failed".into())).into()),
                };
            }
            _ = tokio::time::sleep(Duration::from_millis(1)) => {}
        }
        if start.elapsed() > STUCK {
            h.abort();
            return Waited::Stuck;
        }
    }
}

/// Polls until backend `pid` has ended (bounded by [`STUCK`]); whether it has.
pub(in crate::adapter) async fn wait_backend_gone(admin: &Client, pid: i32) -> bool {
    let start = Instant::now();
    while start.elapsed() < STUCK {
        if backend_gone(admin, pid).await {
            return true;
        }
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
    false
}

/// Whether backend `pid` has ended (an admin connection that fails cannot wait for it either).
async fn backend_gone(admin: &Client, pid: i32) -> bool {
    match admin
        .query_one(
            "SELECT count(*) FROM pg_stat_activity WHERE pid = $1",
            &[&pid],
        )
        .await
    {
        Ok(r) => r.get::<_, i64>(0) == 0,
        Err(_) => true,
    }
}

/// Whether orphan `pid` ends: polled until it is gone (true) or waits on a lock for good
/// (false: blocked by sessions that are idle or waiting themselves, answer 1 of
/// [`PgBackend::SETTLED_BLOCKED`]); `None` when neither was seen within [`STUCK`].
///
/// Both are asked again on every pass, never one after the other: when the lock an orphan
/// waits for is released, the orphan and another waiter race for it. Seen not blocked in that
/// instant, the orphan may lose and wait again — now on a session that sits idle in its
/// transaction — and a wait for it to end would last the whole bound (120 s a schedule, seen in
/// `diff --gen` with three waiters on one floor row).
async fn orphan_ends(
    admin: &Client,
    blocked_q: &Statement,
    pid: i32,
    others: &[i32],
) -> Option<bool> {
    let start = Instant::now();
    loop {
        let state = match admin.query_one(blocked_q, &[&pid, &others]).await {
            Ok(r) => r.get::<_, i32>(0),
            Err(_) => 0,
        };
        if state == 1 {
            return Some(false);
        }
        if state == 0 && backend_gone(admin, pid).await {
            return Some(true);
        }
        if start.elapsed() > STUCK {
            return None;
        }
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
}

macro_rules! session_or_return {
    ($self:ident, $db:expr, $cx:ident) => {{
        if let Some(o) = $self.admit($db, $cx.conn) {
            return o;
        }
        match $self.session($db, $cx.conn) {
            Ok(s) => s,
            Err(o) => return o,
        }
    }};
}

impl PgBackend {
    /// Admission (down, a connection a crash cut, busy): the model's rule,
    /// `leaselab_model::protocol::admit`, on this side's sessions.
    pub(in crate::adapter) fn admit(&mut self, db: DbName, conn: &ConnId) -> Option<Outcome> {
        leaselab_model::protocol::admit(&mut self.sides[db.index()], conn)
    }

    /// The backends a statement of `conn` on side `i` can wait on: every other one of
    /// [`Self::backends`].
    pub(in crate::adapter) fn others(&self, i: usize, conn: &ConnId) -> Vec<i32> {
        let own = self.sides[i].session(conn).map(Session::pid);
        let mut v = self.backends(i);
        v.retain(|p| Some(*p) != own);
        v
    }

    /// Every backend of ours that can hold a lock on side `i`'s database: its sessions and
    /// orphans, and with one database (`linked`) the other side's too.
    fn backends(&self, i: usize) -> Vec<i32> {
        let sides: &[usize] = if self.linked() { &[i, 1 - i] } else { &[i] };
        sides
            .iter()
            .flat_map(|&j| {
                let side = &self.sides[j];
                side.sessions
                    .values()
                    .map(|s| s.pid)
                    .chain(side.orphans.iter().copied())
            })
            .collect()
    }

    /// How many waits so far ran out their 120 s bound instead of ending in an answer: a
    /// statement neither finished nor seen blocked, an orphan neither ended nor seen blocked,
    /// a closed session whose backend did not end. Each is a defect of the adapter's lock-wait
    /// detection (the run's histories stay right, a bounded wait counts as blocked or as an
    /// error, but each such step lasts the whole bound), so a full-speed run has none.
    pub fn waits_out_of_bound(&self) -> u64 {
        self.out_of_bound
    }

    /// Both sides are one database (a spec with `databases = "one"`).
    pub(in crate::adapter) fn linked(&self) -> bool {
        self.spec
            .as_ref()
            .is_some_and(|r| r.spec.databases == crate::spec::Databases::One)
    }

    /// Waits until every orphan that no longer waits on a lock has ended (its statement ran,
    /// then it found its socket closed): only then are its locks free for the others, as the
    /// model frees them at once.
    pub(in crate::adapter) fn reap_orphans(&mut self, i: usize) {
        if self.sides[i].orphans.is_empty() {
            return;
        }
        let Ok((admin, blocked_q)) = self.admin(i) else {
            return;
        };
        // The other side's backends too when both sides are one database: an orphan waiting on
        // one of them is blocked for good just the same.
        let all = self.backends(i);
        let mut gone = Vec::new();
        for pid in self.sides[i].orphans.clone() {
            let others: Vec<i32> = all.iter().copied().filter(|p| *p != pid).collect();
            // A held orphan still waiting stays stopped; one the server no longer blocks goes
            // on, alone (see `hold.rs`).
            if self.is_held(i, pid) {
                if self.blocked_state(i, pid, &others) == 1 {
                    continue;
                }
                self.release(i, pid);
            }
            let (a, q) = (admin.clone(), blocked_q.clone());
            let ends = self
                .rt
                .block_on(async move { orphan_ends(&a, &q, pid, &others).await });
            match ends {
                Some(true) => gone.push(pid),
                Some(false) => {
                    self.hold(i, pid);
                }
                None => self.out_of_bound += 1,
            }
        }
        self.sides[i].orphans.retain(|p| !gone.contains(p));
    }

    /// The lock-wait question ([`PgBackend::SETTLED_BLOCKED`]) for backend `pid` of side `i`
    /// against `others`: 0 not blocked, 1 blocked for now, 2 not final yet; 0 when it cannot be
    /// asked.
    fn blocked_state(&mut self, i: usize, pid: i32, others: &[i32]) -> i32 {
        let Ok((admin, q)) = self.admin(i) else {
            return 0;
        };
        let others = others.to_vec();
        self.rt.block_on(async move {
            match admin.query_one(&q, &[&pid, &others]).await {
                Ok(r) => r.get::<_, i32>(0),
                Err(_) => 0,
            }
        })
    }

    /// Runs a task for `conn`: its outcome, or `Blocked` if the server says it waits on a lock.
    pub(in crate::adapter) fn run<F>(&mut self, db: DbName, conn: &ConnId, fut: F) -> Outcome
    where
        F: Future<Output = Out> + Send + 'static,
    {
        self.run_task(db, conn, fut, None)
    }

    /// [`Self::run`] for a task that may stop at `pause` (it sets the pause's flag there):
    /// then it is pending, as a statement that waits on a lock is, until `await` resumes it.
    /// The pause belongs to the session while the operation is pending.
    pub(in crate::adapter) fn run_pausable<F>(
        &mut self,
        db: DbName,
        conn: &ConnId,
        fut: F,
        pause: Option<Pause>,
    ) -> Outcome
    where
        F: Future<Output = Out> + Send + 'static,
    {
        let i = db.index();
        let flag = pause.as_ref().map(|p| p.at.clone());
        // Before the task runs: `settle` must know of the pause point from the start.
        if let Some(s) = self.sides[i].sessions.get_mut(conn) {
            s.paused = pause;
        }
        let o = self.run_task(db, conn, fut, flag);
        if o != Outcome::Blocked {
            if let Some(s) = self.sides[i].sessions.get_mut(conn) {
                s.paused = None;
            }
        }
        o
    }

    fn run_task<F>(
        &mut self,
        db: DbName,
        conn: &ConnId,
        fut: F,
        paused: Option<Arc<std::sync::atomic::AtomicBool>>,
    ) -> Outcome
    where
        F: Future<Output = Out> + Send + 'static,
    {
        let i = db.index();
        let Some(pid) = self.sides[i].session(conn).map(Session::pid) else {
            return Outcome::Error(Reason::Other("no-session".into()));
        };
        let others = self.others(i, conn);
        let admin = match self.admin(i) {
            Ok(a) => a,
            Err(e) => return Outcome::Error(Reason::other(format!("admin:{e}"))),
        };
        let handle = self.rt.spawn(fut);
        let at = paused.clone();
        let r = self
            .rt
            .block_on(wait_or_blocked(handle, admin, pid, others, false, paused));
        let out = match r {
            Waited::Done(out) => self.book(i, conn, out),
            Waited::Blocked(h) => {
                let seq = self.sides[i].next_wait();
                if let Some(s) = self.sides[i].sessions.get_mut(conn) {
                    s.pending = Some(h);
                    s.wait_seq = seq;
                }
                // Waiting on a lock (not at its pause point): held until the server no longer
                // blocks it and every older wait has gone on.
                if !at.is_some_and(|a| a.load(std::sync::atomic::Ordering::SeqCst)) {
                    self.hold(i, pid);
                }
                if std::env::var_os("LEASELAB_DEBUG_LOCKS").is_some() {
                    if let Ok((a, _)) = self.admin(i) {
                        let rows = self.rt.block_on(async move {
                            a.query("SELECT pid, state, coalesce(wait_event_type,''), coalesce(wait_event,''), pg_blocking_pids(pid)::text, left(query, 40) FROM pg_stat_activity WHERE backend_type = 'client backend' ORDER BY pid", &[]).await
                        });
                        if let Ok(rows) = rows {
                            for r in rows {
                                eprintln!(
                                    "      pid {} {} {} {} blocked-by {} :: {}",
                                    r.get::<_, i32>(0),
                                    r.get::<_, String>(1),
                                    r.get::<_, String>(2),
                                    r.get::<_, String>(3),
                                    r.get::<_, String>(4),
                                    r.get::<_, String>(5)
                                );
                            }
                        }
                    }
                }
                Outcome::Blocked
            }
            Waited::Stuck => {
                self.out_of_bound += 1;
                Outcome::Error(Reason::Other("stuck-neither-finished-nor-blocked".into()))
            }
        };
        self.settle_both(i);
        if out == Outcome::Blocked {
            // A wait that ended within this same step — it closed a deadlock cycle and the
            // detector aborted it (40P01) after `deadlock_timeout` — is this step's answer, as
            // the model's `Db::submit` gives it; not a result left for a later `await`.
            if let Some(s) = self.sides[i].sessions.get_mut(conn) {
                if s.pending.is_none() {
                    if let Some(o) = s.finished.take() {
                        return o;
                    }
                }
            }
        }
        out
    }

    /// Applies a finished task's bookkeeping and returns its outcome.
    pub(in crate::adapter) fn book(&mut self, i: usize, conn: &ConnId, out: Out) -> Outcome {
        if let Some(s) = self.sides[i].sessions.get_mut(conn) {
            s.drafts.extend(out.drafts);
            // Any error inside a transaction aborts it (manual 3.4: "the transaction is
            // aborted"; later statements fail with 25P02 and COMMIT rolls back).
            if s.in_txn && matches!(&out.outcome, Outcome::Error(r) if r.is_sql_error()) {
                s.aborted = true;
            }
        }
        out.outcome
    }

    /// [`Self::settle`] side `i` and, when both sides are one database, the other side too,
    /// until neither moves: a statement of one may wait on a held backend of the other.
    pub(in crate::adapter) fn settle_both(&mut self, i: usize) {
        if !self.linked() {
            self.settle(i);
            return;
        }
        while self.settle(i) | self.settle(1 - i) {}
    }

    /// Lets every pending statement that the server no longer blocks run to its end, one at a
    /// time and the oldest wait first, repeating while one finishing may free another (the
    /// model's synchronous wake, in its FIFO order: see `hold.rs`). Whether any ended.
    pub(in crate::adapter) fn settle(&mut self, i: usize) -> bool {
        let mut any = false;
        loop {
            self.reap_orphans(i);
            let mut progressed = false;
            let mut conns: Vec<(u64, ConnId)> = self.sides[i]
                .sessions
                .iter()
                .filter(|(_, s)| {
                    s.pending.is_some() && !s.paused.as_ref().is_some_and(Pause::reached)
                })
                .map(|(k, s)| (s.wait_seq, k.clone()))
                .collect();
            conns.sort();
            for (_, c) in conns {
                let pid = self.sides[i].sessions.get(&c).map(|s| s.pid).unwrap_or(0);
                let others = self.others(i, &c);
                if self.is_held(i, pid) {
                    if self.blocked_state(i, pid, &others) == 1 {
                        continue;
                    }
                    self.release(i, pid);
                }
                let Some(h) = self.sides[i]
                    .sessions
                    .get_mut(&c)
                    .and_then(|s| s.pending.take())
                else {
                    continue;
                };
                let at = self.sides[i]
                    .sessions
                    .get(&c)
                    .and_then(|s| s.paused.as_ref().map(|p| p.at.clone()));
                let paused = at.clone();
                let Ok(admin) = self.admin(i) else { return any };
                let w = self
                    .rt
                    .block_on(wait_or_blocked(h, admin, pid, others.clone(), true, at));
                if std::env::var_os("LEASELAB_DEBUG_STEPS").is_some() {
                    let what = match &w {
                        Waited::Done(o) => format!("done {}", o.outcome),
                        Waited::Blocked(_) => "blocked".into(),
                        Waited::Stuck => "stuck".into(),
                    };
                    eprintln!("    settle {c} pid {pid} others {others:?}: {what}");
                }
                match w {
                    Waited::Done(out) => {
                        let o = self.book(i, &c, out);
                        if let Some(s) = self.sides[i].sessions.get_mut(&c) {
                            s.finished = Some(o);
                        }
                        progressed = true;
                    }
                    Waited::Blocked(h) => {
                        if let Some(s) = self.sides[i].sessions.get_mut(&c) {
                            s.pending = Some(h);
                        }
                        if !paused.is_some_and(|a| a.load(std::sync::atomic::Ordering::SeqCst)) {
                            self.hold(i, pid);
                        }
                    }
                    Waited::Stuck => {
                        self.out_of_bound += 1;
                        if let Some(s) = self.sides[i].sessions.get_mut(&c) {
                            s.finished = Some(Outcome::Error(Reason::Other(
                                "stuck-neither-finished-nor-blocked".into(),
                            )));
                        }
                    }
                }
                if progressed {
                    // Its end may have freed an older wait: the oldest goes first again.
                    break;
                }
            }
            if !progressed {
                break;
            }
            any = true;
        }
        any
    }

    pub(in crate::adapter) fn set_in_txn(&mut self, db: DbName, conn: &ConnId, v: bool) {
        if let Some(s) = self.sides[db.index()].sessions.get_mut(conn) {
            s.in_txn = v;
            s.aborted = false;
            if !v {
                s.began = None;
            }
        }
    }

    /// Marks the session's transaction as begun at virtual time `now` (its `now()`).
    pub(in crate::adapter) fn set_began(&mut self, db: DbName, conn: &ConnId, now: Option<Millis>) {
        if let Some(s) = self.sides[db.index()].sessions.get_mut(conn) {
            s.began = now;
        }
    }

    /// The virtual time the session's open transaction began at, if it began under one.
    pub(in crate::adapter) fn began(&self, db: DbName, conn: &ConnId) -> Option<Millis> {
        self.sides[db.index()]
            .sessions
            .get(conn)
            .and_then(|s| s.began)
    }

    /// Ends the session's transaction bookkeeping: logs the drafts (accepted only on commit).
    /// The log rows are written outside any transaction of the session: on its own connection
    /// once its transaction has ended, or on the admin connection when it is still busy.
    pub(in crate::adapter) fn log_drafts(
        &mut self,
        conn: &ConnId,
        commit: bool,
        via_admin: bool,
    ) -> Outcome {
        let Some(s) = self.sides[1].sessions.get_mut(conn) else {
            return Outcome::Ok;
        };
        let drafts = std::mem::take(&mut s.drafts);
        let (client, stmts) = (s.client.clone(), s.st.clone());
        let todo: Vec<(W, bool)> = drafts
            .into_iter()
            .filter(|(_, acc)| commit || !acc)
            .collect();
        if todo.is_empty() {
            return Outcome::Ok;
        }
        let admin = if via_admin {
            match self.admin(1) {
                Ok((a, _)) => Some(a),
                Err(e) => return Outcome::Error(Reason::other(format!("admin:{e}"))),
            }
        } else {
            None
        };
        self.rt.block_on(async move {
            for (w, acc) in &todo {
                let r = match &admin {
                    Some(a) => a
                        .execute(sql::ATTEMPT, &[&w.scope, &w.part, &w.writer, &w.token, acc])
                        .await
                        .map(|_| ())
                        .map_err(stmt_err),
                    None => log_attempt(&client, &stmts, w, *acc).await,
                };
                if let Err(o) = r {
                    return o;
                }
            }
            Outcome::Ok
        })
    }

    pub(in crate::adapter) fn now_for(&self, in_txn: bool, now: Millis) -> Option<Millis> {
        (self.virtual_time && !in_txn).then_some(now)
    }

    pub(in crate::adapter) fn write_args(
        cx: &Ctx<'_>,
        scope: &Scope,
        part: &Part,
        content: &str,
        token: Token,
    ) -> W {
        W {
            scope: scope.to_string(),
            part: part.to_string(),
            content: content.to_string(),
            token: token.0 as i64,
            writer: cx.actor.to_string(),
        }
    }

    pub(in crate::adapter) fn uses_txn(&self, db: DbName) -> bool {
        db == DbName::Lease || self.config.fence != FenceMode::CheckThenWrite
    }

    /// Whether a session waits on one of ours, and whether that is final: 0 = not blocked, 1 =
    /// blocked by sessions that are themselves idle or waiting on a lock, 2 = not final yet. A
    /// backend sends an error to its client before it aborts its transaction and releases its
    /// locks (`PostgresMain`'s error path: `EmitErrorReport`, then `AbortCurrentTransaction`),
    /// and a disconnected orphan runs on after its lock frees: until every session in the
    /// chain of blockers has settled, the answer may still change. The isolation tester avoids
    /// this by writing its permutations so; generated schedules must wait for it.
    ///
    /// A wait that is part of a cycle is not final either: the deadlock detector will abort one
    /// member after `deadlock_timeout`, and the model resolves the cycle at once. The lock
    /// state is read live while `pg_stat_activity` is read once: a blocker seen idle may have
    /// released its locks after the chain was read, so the wait is asked about once more last
    /// (it ended meanwhile: ask again).
    pub const SETTLED_BLOCKED: &str = "SELECT CASE \
    WHEN NOT pg_isolation_test_session_is_blocked($1::int, $2::int[]) THEN 0 \
    WHEN EXISTS (WITH RECURSIVE chain(pid, depth) AS ( \
                   SELECT b, 1 FROM unnest(pg_blocking_pids($1::int)) AS b \
                   UNION \
                   SELECT b, c.depth + 1 FROM chain c, unnest(pg_blocking_pids(c.pid)) AS b \
                   WHERE c.depth < 8) \
                 SELECT 1 FROM chain ch LEFT JOIN pg_stat_activity a ON a.pid = ch.pid \
                 WHERE ch.pid = $1::int \
                    OR (a.state = 'active' AND a.wait_event_type IS DISTINCT FROM 'Lock')) THEN 2 \
    WHEN NOT pg_isolation_test_session_is_blocked($1::int, $2::int[]) THEN 2 \
    ELSE 1 END";

    /// The admin connection of side `i`'s database. With one database (`linked`) both sides
    /// share side 0's: a second admin backend on the same database would be ended by the
    /// other side's reset ([`Self::wipe`] spares only its own), and every lock-wait question
    /// asked on it would fail, so a wait on the resource side would never be seen as one and
    /// would last the whole bound.
    pub(in crate::adapter) fn admin(
        &mut self,
        i: usize,
    ) -> Result<(Arc<Client>, Statement), PgError> {
        let i = if self.linked() { 0 } else { i };
        if let Some(a) = &self.sides[i].admin {
            return Ok(a.clone());
        }
        let info = self.sides[i].conninfo.clone();
        let a = self.rt.block_on(async {
            let (c, _) = connect(&info, false)
                .await
                .map_err(|e| pe("admin connect", e))?;
            let s = c
                .prepare(Self::SETTLED_BLOCKED)
                .await
                .map_err(|e| pe("prepare", e))?;
            Ok::<_, PgError>((Arc::new(c), s))
        })?;
        self.sides[i].admin = Some(a.clone());
        Ok(a)
    }
}
