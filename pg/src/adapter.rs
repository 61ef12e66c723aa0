//! The backend seam implemented on PostgreSQL with the source design's SQL.
//!
//! Every trace connection is a real PostgreSQL session. A statement runs as a task on a
//! current-thread runtime; whether it waits on a lock is asked of the server
//! (`pg_isolation_test_session_is_blocked`, as PostgreSQL's isolation tester does), never
//! guessed from a timeout. A blocked statement stays pending and is collected by `await`;
//! after every operation the adapter lets every statement the server no longer blocks finish,
//! which is what the model does synchronously when a lock is released.
//!
//! The client-side rules (one statement per connection, `busy`, `in-transaction`, attempts
//! logged when the write's outcome is known, a connection cut by a crash reporting
//! `conn-lost` once) are the same as the model's; the data semantics are PostgreSQL's.

use crate::cluster::{Cluster, ClusterError};
use crate::sql;
use leaselab_model::{
    Admin, Attempt, AttemptOutcome, Config, ConnId, Ctx, DbName, Expiry, FenceMode, FencedResource,
    Holder, LeaseDurability, LeaseName, LeaseRow, LeaseStore, Millis, Outcome, Part, PartRow,
    PublishMode, Scope, SessionStep, Token,
};
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::runtime::Runtime;
use tokio::task::JoinHandle;
use tokio_postgres::{Client, NoTls, Statement};

/// How long a statement may neither finish nor be reported blocked.
const STUCK: Duration = Duration::from_secs(10);

/// Errors of the adapter itself (not outcomes of statements, which are [`Outcome`]s).
#[derive(Debug, thiserror::Error)]
pub enum PgError {
    /// The throwaway clusters could not be had or driven.
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    /// The database answered an adapter statement (setup, reset, snapshot) with an error.
    #[error("{what}: {source}")]
    Sql {
        /// What the adapter was doing.
        what: String,
        /// The driver's error (its SQLSTATE, where the server sent one, is `source.code()`).
        source: tokio_postgres::Error,
    },
    /// The server is not set up as the adapter needs it.
    #[error("{0}")]
    Setup(String),
    /// A value read back is not what the schema allows.
    #[error("{0}")]
    Data(String),
}

fn pe(what: &str, source: tokio_postgres::Error) -> PgError {
    PgError::Sql {
        what: what.to_string(),
        source,
    }
}

/// A statement error as an outcome: definitely not applied unless the connection broke.
fn stmt_err(e: tokio_postgres::Error) -> Outcome {
    match e.code() {
        Some(c) => Outcome::Error(format!("sqlstate-{}", c.code())),
        None if e.is_closed() => Outcome::Error("conn-lost".into()),
        None => Outcome::Error(format!("pg:{}", e.to_string().replace(' ', "_"))),
    }
}

/// A COMMIT whose connection broke: the client cannot know whether it took effect (Jepsen's
/// `:info`); any other error is definite.
fn commit_err(e: tokio_postgres::Error) -> Outcome {
    // Connection exceptions (class 08) and operator intervention (57P0x: the backend was
    // terminated or the server is shutting down) leave the client not knowing.
    let lost = match e.code() {
        None => e.is_closed(),
        Some(c) => c.code().starts_with("08") || c.code().starts_with("57P"),
    };
    if lost {
        Outcome::Indeterminate("conn-lost-during-commit".into())
    } else {
        stmt_err(e)
    }
}

fn ms_of_us(us: Option<i64>) -> Result<Expiry, Outcome> {
    match us {
        None => Ok(Expiry::NegInfinity),
        Some(us) if us >= 0 && us % 1000 == 0 => Ok(Expiry::At(Millis((us / 1000) as u64))),
        Some(us) => Err(Outcome::Error(format!("sub-millisecond-time-{us}us"))),
    }
}

#[derive(Clone)]
struct Stmts {
    set_now: Statement,
    now: Statement,
    acquire: Option<Statement>,
    renew: Option<Statement>,
    release: Option<Statement>,
    read_lease: Option<Statement>,
    fence: Option<Statement>,
    floor_read: Option<Statement>,
    floor_set: Option<Statement>,
    upsert: Option<Statement>,
    publish: Option<Statement>,
    attempt: Option<Statement>,
    read_part: Option<Statement>,
    read_publish: Option<Statement>,
    count: Option<Statement>,
}

fn st(s: &Option<Statement>) -> Result<&Statement, Outcome> {
    s.as_ref()
        .ok_or_else(|| Outcome::Error("statement-not-prepared".into()))
}

/// A write's arguments (writer = the calling actor).
#[derive(Clone, Debug)]
struct W {
    scope: String,
    part: String,
    content: String,
    token: i64,
    writer: String,
}

/// What a finished task leaves for the session's bookkeeping.
struct Out {
    outcome: Outcome,
    /// Attempts to remember until the transaction ends: (write, accepted).
    drafts: Vec<(W, bool)>,
}

impl From<Outcome> for Out {
    fn from(outcome: Outcome) -> Self {
        Out {
            outcome,
            drafts: Vec::new(),
        }
    }
}

struct Session {
    client: Arc<Client>,
    /// The task that owns the socket.
    socket: JoinHandle<()>,
    pid: i32,
    st: Stmts,
    in_txn: bool,
    /// An error aborted the open transaction: COMMIT will roll it back.
    aborted: bool,
    pending: Option<JoinHandle<Out>>,
    finished: Option<Outcome>,
    drafts: Vec<(W, bool)>,
}

struct Side {
    dbname: &'static str,
    cluster: Option<Cluster>,
    conninfo: String,
    admin: Option<(Arc<Client>, Statement)>,
    sessions: BTreeMap<ConnId, Session>,
    lost: BTreeSet<ConnId>,
    /// Backends whose client closed its socket while their statement waited on a lock: they
    /// run on until the statement ends (see the model's engine), holding their locks.
    orphans: Vec<i32>,
    up: bool,
}

/// Where the databases are.
pub enum Target {
    /// Two throwaway clusters under this directory (one per database, so each can crash alone).
    Throwaway(std::path::PathBuf),
    /// An existing server (`LEASELAB_PG_CONNINFO`, without `dbname`); crash/restart unsupported.
    Existing(String),
}

/// The PostgreSQL backend.
pub struct PgBackend {
    rt: Runtime,
    config: Config,
    sides: [Side; 2],
    /// Virtual time (replay) or the real `now()` (experiments).
    virtual_time: bool,
}

async fn connect(
    conninfo: &str,
    virtual_time: bool,
) -> Result<(Client, i32), tokio_postgres::Error> {
    connect_owned(conninfo, virtual_time)
        .await
        .map(|(c, pid, _)| (c, pid))
}

/// Connects and returns the task that owns the socket too: aborting it closes the socket, as a
/// client process that exits or drops its connection does.
async fn connect_owned(
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

async fn prepare(c: &Client, db: DbName, cfg: &Config) -> Result<Stmts, tokio_postgres::Error> {
    let lease = db == DbName::Lease;
    // Only this database's statements; all sent at once (tokio-postgres pipelines requests
    // that are polled together), so a new session costs one round trip, not thirteen.
    let p = |cond: bool, sql: String| async move {
        if cond {
            c.prepare(&sql).await.map(Some)
        } else {
            Ok(None)
        }
    };
    let fence_sql = match cfg.fence {
        FenceMode::Strict => sql::FENCE_STRICT,
        FenceMode::ScopeUpsert => sql::FENCE_UPSERT,
        _ => sql::FENCE_SCOPE,
    };
    let upsert_sql = if cfg.fence == FenceMode::Row {
        sql::UPSERT_ROW
    } else {
        sql::UPSERT
    };
    let publish_sql = match cfg.publish {
        PublishMode::BusinessKey => sql::PUBLISH_KEY,
        PublishMode::Versioned => sql::PUBLISH_VERSIONED,
    };
    let now_sql = sql::now_us();
    let (set_now, now, acquire, renew, release, read_lease, fence) = tokio::try_join!(
        c.prepare(sql::SET_NOW),
        c.prepare(&now_sql),
        p(lease, sql::acquire()),
        p(lease, sql::renew(cfg.renew_after_expiry)),
        p(lease, sql::RELEASE.to_string()),
        p(lease, sql::read_lease()),
        p(!lease, fence_sql.to_string()),
    )?;
    let (floor_read, floor_set, upsert, publish, attempt, read_part, read_publish, count) = tokio::try_join!(
        p(!lease, sql::FLOOR_READ.to_string()),
        p(!lease, sql::FLOOR_SET.to_string()),
        p(!lease, upsert_sql.to_string()),
        p(!lease, publish_sql.to_string()),
        p(!lease, sql::ATTEMPT.to_string()),
        p(!lease, sql::READ_PART.to_string()),
        p(!lease, sql::READ_PUBLISH.to_string()),
        p(!lease, sql::COUNT_ATTEMPTS.to_string()),
    )?;
    Ok(Stmts {
        set_now,
        now,
        acquire,
        renew,
        release,
        read_lease,
        fence,
        floor_read,
        floor_set,
        upsert,
        publish,
        attempt,
        read_part,
        read_publish,
        count,
    })
}

async fn set_now(c: &Client, s: &Stmts, now: Option<Millis>) -> Result<(), tokio_postgres::Error> {
    if let Some(t) = now {
        c.query_one(&s.set_now, &[&t.0.to_string()]).await?;
    }
    Ok(())
}

async fn log_attempt(c: &Client, s: &Stmts, w: &W, accepted: bool) -> Result<(), Outcome> {
    c.execute(
        st(&s.attempt)?,
        &[&w.scope, &w.part, &w.writer, &w.token, &accepted],
    )
    .await
    .map_err(stmt_err)?;
    Ok(())
}

/// The fence statement of `mode`: Ok(true) passed.
async fn fence(c: &Client, s: &Stmts, mode: FenceMode, w: &W) -> Result<bool, Outcome> {
    match mode {
        FenceMode::Scope | FenceMode::Strict | FenceMode::ScopeUpsert => {
            let n = c
                .execute(st(&s.fence)?, &[&w.token, &w.scope])
                .await
                .map_err(stmt_err)?;
            Ok(n == 1)
        }
        FenceMode::CheckThenWrite => {
            let row = c
                .query_opt(st(&s.floor_read)?, &[&w.scope])
                .await
                .map_err(stmt_err)?;
            let floor: Option<i64> = row.map(|r| r.get(0));
            Ok(floor.is_some_and(|f| f <= w.token))
        }
        FenceMode::Row | FenceMode::Off => Ok(true),
    }
}

/// The upsert of `mode` (check-then-write first sets the floor, autocommitted): Ok(true) done.
async fn upsert(c: &Client, s: &Stmts, mode: FenceMode, w: &W) -> Result<bool, Outcome> {
    if mode == FenceMode::CheckThenWrite {
        c.execute(st(&s.floor_set)?, &[&w.token, &w.scope])
            .await
            .map_err(stmt_err)?;
    }
    let n = c
        .execute(
            st(&s.upsert)?,
            &[&w.scope, &w.part, &w.content, &w.writer, &w.token],
        )
        .await
        .map_err(stmt_err)?;
    Ok(n == 1)
}

/// One statement (after setting the virtual clock when given): `yes` if it touched exactly one
/// row, `no` otherwise — the shape of release and publish.
async fn one_row(
    c: &Client,
    s: &Stmts,
    now: Option<Millis>,
    stmt: &Option<Statement>,
    params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    yes: Outcome,
    no: Outcome,
) -> Outcome {
    let r: Result<Outcome, Outcome> = async {
        set_now(c, s, now).await.map_err(stmt_err)?;
        let n = c.execute(st(stmt)?, params).await.map_err(stmt_err)?;
        Ok(if n == 1 { yes } else { no })
    }
    .await;
    r.unwrap_or_else(|o| o)
}

/// A statement returning at most one row, run at virtual time `now`: `found` reads the row,
/// `none` is the answer when no row came back.
async fn opt_row(
    c: &Client,
    s: &Stmts,
    now: Option<Millis>,
    stmt: &Option<Statement>,
    params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    found: impl FnOnce(&tokio_postgres::Row) -> Result<Outcome, Outcome>,
    none: Outcome,
) -> Outcome {
    let r: Result<Outcome, Outcome> = async {
        set_now(c, s, now).await.map_err(stmt_err)?;
        match c.query_opt(st(stmt)?, params).await.map_err(stmt_err)? {
            Some(row) => found(&row),
            None => Ok(none),
        }
    }
    .await;
    r.unwrap_or_else(|o| o)
}

fn flatten<T>(r: Result<T, Outcome>) -> Result<T, Out> {
    r.map_err(Out::from)
}

impl PgBackend {
    /// Starts (or connects to) the databases and creates the schema. `config` is the first
    /// trace's configuration; [`PgBackend::reset`] switches it.
    pub fn start(target: Target, virtual_time: bool) -> Result<PgBackend, PgError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| PgError::Setup(format!("tokio runtime: {e}")))?;
        let mk = |dbname: &'static str, cluster: Option<Cluster>, conninfo: String| Side {
            dbname,
            cluster,
            conninfo,
            admin: None,
            sessions: BTreeMap::new(),
            lost: BTreeSet::new(),
            orphans: Vec::new(),
            up: true,
        };
        let sides = match target {
            Target::Throwaway(root) => {
                let lc = Cluster::start(&root, "lease26")?;
                let rc = Cluster::start(&root, "res26")?;
                let (li, ri) = (lc.conninfo("lease26"), rc.conninfo("res26"));
                let (lp, rp) = (lc.conninfo("postgres"), rc.conninfo("postgres"));
                let mut be = [mk("lease26", Some(lc), li), mk("res26", Some(rc), ri)];
                for (side, p) in be.iter_mut().zip([lp, rp]) {
                    create_db(&rt, &p, side.dbname)?;
                }
                be
            }
            Target::Existing(info) => {
                let p = format!("{info} dbname=postgres");
                for d in ["lease26", "res26"] {
                    create_db(&rt, &p, d)?;
                }
                [
                    mk("lease26", None, format!("{info} dbname=lease26")),
                    mk("res26", None, format!("{info} dbname=res26")),
                ]
            }
        };
        let mut be = PgBackend {
            rt,
            config: Config::default(),
            sides,
            virtual_time,
        };
        be.install_schema()?;
        Ok(be)
    }

    /// Starts two throwaway clusters under `dir` (absolute or relative to the working directory).
    pub fn throwaway(dir: &Path) -> Result<PgBackend, PgError> {
        match std::env::var("LEASELAB_PG_CONNINFO") {
            Ok(info) if !info.is_empty() => Self::start(Target::Existing(info), true),
            _ => Self::start(Target::Throwaway(dir.to_path_buf()), true),
        }
    }

    fn install_schema(&mut self) -> Result<(), PgError> {
        for i in 0..2 {
            let info = self.sides[i].conninfo.clone();
            let ddl = if i == 0 {
                format!(
                    "{}\nDROP TABLE IF EXISTS lease;\n{}",
                    sql::LAB_SCHEMA,
                    sql::lease_table(false)
                )
            } else {
                format!(
                    "{}\nDROP TABLE IF EXISTS fence_floor, report_part, write_attempt, publish;\n{}",
                    sql::LAB_SCHEMA,
                    sql::RES_SCHEMA
                )
            };
            self.rt.block_on(async {
                let (c, _) = connect(&info, false).await.map_err(|e| pe("connect", e))?;
                c.batch_execute(&ddl).await.map_err(|e| pe("schema", e))
            })?;
        }
        self.config.lease_table = LeaseDurability::Logged;
        // The redirection must be active: now() must be the virtual clock.
        if self.virtual_time {
            let info = self.sides[0].conninfo.clone();
            self.rt.block_on(async {
                let (c, _) = connect(&info, true).await.map_err(|e| pe("connect", e))?;
                c.query_one(sql::SET_NOW, &[&"1234".to_string()])
                    .await
                    .map_err(|e| pe("set lab.now", e))?;
                let ok: bool = c
                    .query_one(
                        &format!("SELECT now() = {} + interval '1.234 seconds'", sql::EPOCH),
                        &[],
                    )
                    .await
                    .map_err(|e| pe("now() check", e))?
                    .get(0);
                if ok {
                    Ok(())
                } else {
                    Err(PgError::Setup(
                        "now() is not redirected to lab.now(): check the search_path option".into(),
                    ))
                }
            })?;
        }
        Ok(())
    }

    /// Back to an empty state for a new trace with `config`: sessions closed, rows deleted,
    /// floors reseeded (DELETE + reseed: fast and honest). Crashed clusters are restarted.
    pub fn reset(&mut self, config: &Config) -> Result<(), PgError> {
        for i in 0..2 {
            self.drop_sessions(i);
            if !self.sides[i].up {
                if let Some(c) = self.sides[i].cluster.as_mut() {
                    c.boot()?;
                }
                self.sides[i].up = true;
            }
            self.sides[i].lost.clear();
        }
        let recreate = config.lease_table != self.config.lease_table;
        let lease_sql = if recreate {
            format!(
                "DROP TABLE lease; {}",
                sql::lease_table(config.lease_table == LeaseDurability::Unlogged)
            )
        } else {
            "DELETE FROM lease;".to_string()
        };
        let mut res_sql = "DELETE FROM report_part; DELETE FROM write_attempt; DELETE FROM publish; DELETE FROM fence_floor;".to_string();
        for s in &config.scopes {
            res_sql.push_str(&format!(
                " INSERT INTO fence_floor VALUES ('{}', 0);",
                s.as_str().replace('\'', "''")
            ));
        }
        for (i, q) in [lease_sql, res_sql].into_iter().enumerate() {
            let (admin, _) = self.admin(i)?;
            let dbname = self.sides[i].dbname;
            self.rt.block_on(async move {
                admin
                    .execute(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
                        &[&dbname],
                    )
                    .await
                    .map_err(|e| pe("terminate sessions", e))?;
                admin.batch_execute(&q).await.map_err(|e| pe("reset", e))
            })?;
        }
        self.config = config.clone();
        Ok(())
    }

    /// Fault injection: the server ends `conn`'s backend (`pg_terminate_backend`), as a
    /// server-side kill or a network cut would. The client learns of it at its next statement.
    pub fn terminate(&mut self, db: DbName, conn: &ConnId) -> Result<(), PgError> {
        let i = db.index();
        let Some(pid) = self.sides[i].sessions.get(conn).map(|s| s.pid) else {
            return Ok(());
        };
        let (admin, _) = self.admin(i)?;
        self.rt.block_on(async move {
            admin
                .execute("SELECT pg_terminate_backend($1)", &[&pid])
                .await
                .map_err(|e| pe("terminate", e))
        })?;
        Ok(())
    }

    /// `pg_ctl stop -m immediate` on both clusters, then restart them (WAL recovery). Every
    /// session of the adapter is gone afterwards. For the real-time F8.
    pub fn crash_restart_all(&mut self) -> Result<(), PgError> {
        for i in 0..2 {
            self.drop_sessions(i);
            self.sides[i].admin = None;
            if let Some(c) = self.sides[i].cluster.as_mut() {
                c.stop_immediate()?;
            } else {
                return Err(PgError::Setup(
                    "crash-restart needs the throwaway clusters".into(),
                ));
            }
        }
        for i in 0..2 {
            if let Some(c) = self.sides[i].cluster.as_mut() {
                c.boot()?;
            }
            self.sides[i].up = true;
        }
        Ok(())
    }

    /// The connection string of a database (real `now()`: no redirection option).
    pub fn conninfo(&self, db: DbName) -> String {
        self.sides[db.index()].conninfo.clone()
    }

    fn drop_sessions(&mut self, i: usize) {
        for (_, s) in std::mem::take(&mut self.sides[i].sessions) {
            if let Some(h) = s.pending {
                h.abort();
            }
            s.socket.abort();
        }
        self.sides[i].orphans.clear();
    }

    fn admin(&mut self, i: usize) -> Result<(Arc<Client>, Statement), PgError> {
        if let Some(a) = &self.sides[i].admin {
            return Ok(a.clone());
        }
        let info = self.sides[i].conninfo.clone();
        let a = self.rt.block_on(async {
            let (c, _) = connect(&info, false)
                .await
                .map_err(|e| pe("admin connect", e))?;
            let s = c
                .prepare("SELECT pg_isolation_test_session_is_blocked($1::int, $2::int[])")
                .await
                .map_err(|e| pe("prepare", e))?;
            Ok::<_, PgError>((Arc::new(c), s))
        })?;
        self.sides[i].admin = Some(a.clone());
        Ok(a)
    }

    /// Admission, as the model does it: down, a connection cut by a crash, busy.
    fn admit(&mut self, db: DbName, conn: &ConnId) -> Option<Outcome> {
        let side = &mut self.sides[db.index()];
        if !side.up {
            return Some(Outcome::Unavailable);
        }
        if side.lost.remove(conn) {
            return Some(Outcome::Error("conn-lost".into()));
        }
        if let Some(s) = side.sessions.get_mut(conn) {
            if s.pending.is_some() {
                return Some(Outcome::Error("busy".into()));
            }
            s.finished = None;
        }
        None
    }

    /// The session for `conn`, connecting and preparing on first use.
    fn session(
        &mut self,
        db: DbName,
        conn: &ConnId,
    ) -> Result<(Arc<Client>, Stmts, bool), Outcome> {
        let i = db.index();
        if let Some(s) = self.sides[i].sessions.get(conn) {
            return Ok((s.client.clone(), s.st.clone(), s.in_txn));
        }
        let info = self.sides[i].conninfo.clone();
        let vt = self.virtual_time;
        let cfg = self.config.clone();
        let r = self.rt.block_on(async move {
            let (c, pid, socket) = connect_owned(&info, vt).await?;
            let st = prepare(&c, db, &cfg).await?;
            Ok::<_, tokio_postgres::Error>((c, pid, st, socket))
        });
        let (c, pid, st, socket) = r.map_err(stmt_err)?;
        let client = Arc::new(c);
        self.sides[i].sessions.insert(
            conn.clone(),
            Session {
                client: client.clone(),
                socket,
                pid,
                st: st.clone(),
                in_txn: false,
                aborted: false,
                pending: None,
                finished: None,
                drafts: Vec::new(),
            },
        );
        Ok((client, st, false))
    }

    fn others(&self, i: usize, conn: &ConnId) -> Vec<i32> {
        let side = &self.sides[i];
        side.sessions
            .iter()
            .filter(|(k, _)| *k != conn)
            .map(|(_, s)| s.pid)
            .chain(side.orphans.iter().copied())
            .collect()
    }

    /// Waits until every orphan that no longer waits on a lock has ended (its statement ran,
    /// then it found its socket closed): only then are its locks free for the others, as the
    /// model frees them at once.
    fn reap_orphans(&mut self, i: usize) {
        if self.sides[i].orphans.is_empty() {
            return;
        }
        let Ok((admin, blocked_q)) = self.admin(i) else {
            return;
        };
        let side = &self.sides[i];
        let all: Vec<i32> = side
            .sessions
            .values()
            .map(|s| s.pid)
            .chain(side.orphans.iter().copied())
            .collect();
        let orphans = side.orphans.clone();
        let gone: Vec<i32> = self.rt.block_on(async move {
            let mut gone = Vec::new();
            for pid in orphans {
                let others: Vec<i32> = all.iter().copied().filter(|p| *p != pid).collect();
                let blocked = match admin.query_one(&blocked_q, &[&pid, &others]).await {
                    Ok(r) => r.get::<_, bool>(0),
                    Err(_) => false,
                };
                if !blocked {
                    wait_backend_gone(&admin, pid).await;
                    gone.push(pid);
                }
            }
            gone
        });
        self.sides[i].orphans.retain(|p| !gone.contains(p));
    }

    /// Runs a task for `conn`: its outcome, or `Blocked` if the server says it waits on a lock.
    fn run<F>(&mut self, db: DbName, conn: &ConnId, fut: F) -> Outcome
    where
        F: Future<Output = Out> + Send + 'static,
    {
        let i = db.index();
        let Some(pid) = self.sides[i].sessions.get(conn).map(|s| s.pid) else {
            return Outcome::Error("no-session".into());
        };
        let others = self.others(i, conn);
        let admin = match self.admin(i) {
            Ok(a) => a,
            Err(e) => return Outcome::Error(format!("admin:{e}")),
        };
        let handle = self.rt.spawn(fut);
        let r = self
            .rt
            .block_on(wait_or_blocked(handle, admin, pid, others, false));
        let out = match r {
            Waited::Done(out) => self.book(i, conn, out),
            Waited::Blocked(h) => {
                if let Some(s) = self.sides[i].sessions.get_mut(conn) {
                    s.pending = Some(h);
                }
                Outcome::Blocked
            }
            Waited::Stuck => Outcome::Error("stuck-neither-finished-nor-blocked".into()),
        };
        self.settle(i);
        out
    }

    /// Applies a finished task's bookkeeping and returns its outcome.
    fn book(&mut self, i: usize, conn: &ConnId, out: Out) -> Outcome {
        if let Some(s) = self.sides[i].sessions.get_mut(conn) {
            s.drafts.extend(out.drafts);
            // Any error inside a transaction aborts it (manual 3.4: "the transaction is
            // aborted"; later statements fail with 25P02 and COMMIT rolls back).
            if s.in_txn && matches!(&out.outcome, Outcome::Error(r) if r.starts_with("sqlstate-")) {
                s.aborted = true;
            }
        }
        out.outcome
    }

    /// Lets every pending statement that the server no longer blocks run to its end, repeating
    /// while one finishing may free another (the model's synchronous wake).
    fn settle(&mut self, i: usize) {
        loop {
            self.reap_orphans(i);
            let mut progressed = false;
            let conns: Vec<ConnId> = self.sides[i]
                .sessions
                .iter()
                .filter(|(_, s)| s.pending.is_some())
                .map(|(k, _)| k.clone())
                .collect();
            for c in conns {
                let Some(h) = self.sides[i]
                    .sessions
                    .get_mut(&c)
                    .and_then(|s| s.pending.take())
                else {
                    continue;
                };
                let pid = self.sides[i].sessions.get(&c).map(|s| s.pid).unwrap_or(0);
                let others = self.others(i, &c);
                let Ok(admin) = self.admin(i) else { return };
                let w = self
                    .rt
                    .block_on(wait_or_blocked(h, admin, pid, others.clone(), true));
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
                    }
                    Waited::Stuck => {
                        if let Some(s) = self.sides[i].sessions.get_mut(&c) {
                            s.finished =
                                Some(Outcome::Error("stuck-neither-finished-nor-blocked".into()));
                        }
                    }
                }
            }
            if !progressed {
                break;
            }
        }
    }

    fn set_in_txn(&mut self, db: DbName, conn: &ConnId, v: bool) {
        if let Some(s) = self.sides[db.index()].sessions.get_mut(conn) {
            s.in_txn = v;
            s.aborted = false;
        }
    }

    /// Ends the session's transaction bookkeeping: logs the drafts (accepted only on commit).
    /// The log rows are written outside any transaction of the session: on its own connection
    /// once its transaction has ended, or on the admin connection when it is still busy.
    fn log_drafts(&mut self, conn: &ConnId, commit: bool, via_admin: bool) -> Outcome {
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
                Err(e) => return Outcome::Error(format!("admin:{e}")),
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

    /// The committed state of both databases, for the final comparison with the model. A
    /// database that is down is restarted first: recovery keeps exactly what was committed.
    pub fn snapshot(&mut self) -> Result<leaselab_model::model::Snapshot, PgError> {
        for i in 0..2 {
            if !self.sides[i].up {
                if let Some(c) = self.sides[i].cluster.as_mut() {
                    c.boot()?;
                }
                self.sides[i].up = true;
                self.sides[i].admin = None;
            }
        }
        let (la, _) = self.admin(0)?;
        let (ra, _) = self.admin(1)?;
        self.rt.block_on(async move {
            let q = |e| pe("snapshot", e);
            let mut snap = leaselab_model::model::Snapshot::default();
            for r in la
                .query(&format!("SELECT name, holder, token, {} FROM lease ORDER BY name", sql::expiry_us("expires_at")), &[])
                .await
                .map_err(q)?
            {
                let exp = ms_of_us(r.get(3)).map_err(|o| PgError::Data(format!("lease expiry: {o}")))?;
                let token: i64 = r.get(2);
                snap.leases.push((
                    LeaseName::new(r.get::<_, String>(0)),
                    LeaseRow {
                        holder: Holder::new(r.get::<_, String>(1)),
                        token: Token(token as u64),
                        expires_at: exp,
                    },
                ));
            }
            for r in ra.query("SELECT scope, max_token FROM fence_floor ORDER BY scope", &[]).await.map_err(q)? {
                let t: i64 = r.get(1);
                snap.floors.push((Scope::new(r.get::<_, String>(0)), Token(t as u64)));
            }
            for r in ra
                .query("SELECT scope, part, content, writer, token FROM report_part ORDER BY scope, part", &[])
                .await
                .map_err(q)?
            {
                let t: i64 = r.get(4);
                snap.parts.push((
                    Scope::new(r.get::<_, String>(0)),
                    Part::new(r.get::<_, String>(1)),
                    PartRow {
                        content: r.get(2),
                        writer: Holder::new(r.get::<_, String>(3)),
                        token: Token(t as u64),
                    },
                ));
            }
            for r in ra.query("SELECT key, content, writer, token FROM publish ORDER BY key", &[]).await.map_err(q)? {
                let t: i64 = r.get(3);
                snap.publishes.push((
                    r.get(0),
                    PartRow {
                        content: r.get(1),
                        writer: Holder::new(r.get::<_, String>(2)),
                        token: Token(t as u64),
                    },
                ));
            }
            for r in ra
                .query("SELECT scope, part, writer, token, accepted FROM write_attempt ORDER BY id", &[])
                .await
                .map_err(q)?
            {
                let t: i64 = r.get(3);
                let acc: bool = r.get(4);
                snap.attempts.push(Attempt {
                    scope: Scope::new(r.get::<_, String>(0)),
                    part: Part::new(r.get::<_, String>(1)),
                    writer: Holder::new(r.get::<_, String>(2)),
                    token: Token(t as u64),
                    outcome: if acc { AttemptOutcome::Accepted } else { AttemptOutcome::Rejected },
                });
            }
            snap.attempts.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
            Ok(snap)
        })
    }

    fn now_for(&self, in_txn: bool, now: Millis) -> Option<Millis> {
        (self.virtual_time && !in_txn).then_some(now)
    }

    fn write_args(cx: &Ctx<'_>, scope: &Scope, part: &Part, content: &str, token: Token) -> W {
        W {
            scope: scope.to_string(),
            part: part.to_string(),
            content: content.to_string(),
            token: token.0 as i64,
            writer: cx.actor.to_string(),
        }
    }

    fn uses_txn(&self, db: DbName) -> bool {
        db == DbName::Lease || self.config.fence != FenceMode::CheckThenWrite
    }
}

enum Waited {
    Done(Out),
    Blocked(JoinHandle<Out>),
    Stuck,
}

/// Waits for a statement task: its result if it finishes, `Blocked` as soon as the server says
/// it waits on one of `others`. Completion is awaited directly (most statements finish in well
/// under a millisecond); only a statement still running after 1 ms, or one that was already
/// pending (`ask_first`), is asked about.
async fn wait_or_blocked(
    mut h: JoinHandle<Out>,
    admin: (Arc<Client>, Statement),
    pid: i32,
    others: Vec<i32>,
    ask_first: bool,
) -> Waited {
    let start = Instant::now();
    let mut ask = ask_first;
    loop {
        if ask && !h.is_finished() && !others.is_empty() {
            if let Ok(r) = admin.0.query_one(&admin.1, &[&pid, &others]).await {
                if r.get::<_, bool>(0) {
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
                    Err(_) => Waited::Done(Outcome::Error("task-failed".into()).into()),
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

/// Polls until backend `pid` has ended (bounded by [`STUCK`]).
async fn wait_backend_gone(admin: &Client, pid: i32) {
    let start = Instant::now();
    while start.elapsed() < STUCK {
        match admin
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE pid = $1",
                &[&pid],
            )
            .await
        {
            Ok(r) if r.get::<_, i64>(0) == 0 => break,
            Err(_) => break,
            _ => tokio::time::sleep(Duration::from_micros(200)).await,
        }
    }
}

fn create_db(rt: &Runtime, conninfo: &str, name: &str) -> Result<(), PgError> {
    rt.block_on(async {
        let (c, _) = connect(conninfo, false)
            .await
            .map_err(|e| pe("connect", e))?;
        let exists = c
            .query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&name])
            .await
            .map_err(|e| pe("pg_database", e))?
            .is_some();
        if !exists {
            c.batch_execute(&format!("CREATE DATABASE {name}"))
                .await
                .map_err(|e| pe("create database", e))?;
        }
        Ok(())
    })
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

impl leaselab_model::Backend for PgBackend {
    fn config(&self) -> Config {
        self.config.clone()
    }
}

impl LeaseStore for PgBackend {
    fn acquire(
        &mut self,
        cx: &Ctx<'_>,
        lease: &LeaseName,
        holder: &Holder,
        ttl_ms: u64,
    ) -> Outcome {
        let (c, s, in_txn) = session_or_return!(self, DbName::Lease, cx);
        let now = self.now_for(in_txn, cx.now);
        let (name, h) = (lease.to_string(), holder.to_string());
        self.run(DbName::Lease, cx.conn, async move {
            let grant = |r: &tokio_postgres::Row| {
                let t: i64 = r.get(0);
                Ok(Outcome::Granted {
                    token: Token(t as u64),
                    expires: ms_of_us(r.get(1))?,
                })
            };
            let ttl = ttl_ms as f64;
            opt_row(
                &c,
                &s,
                now,
                &s.acquire,
                &[&name, &h, &ttl],
                grant,
                Outcome::Refused,
            )
            .await
            .into()
        })
    }

    fn renew(
        &mut self,
        cx: &Ctx<'_>,
        lease: &LeaseName,
        holder: &Holder,
        token: Token,
        ttl_ms: u64,
    ) -> Outcome {
        let (c, s, in_txn) = session_or_return!(self, DbName::Lease, cx);
        let now = self.now_for(in_txn, cx.now);
        let (name, h, t) = (lease.to_string(), holder.to_string(), token.0 as i64);
        self.run(DbName::Lease, cx.conn, async move {
            let renewed = |r: &tokio_postgres::Row| {
                Ok(Outcome::Renewed {
                    expires: ms_of_us(r.get(0))?,
                })
            };
            let ttl = ttl_ms as f64;
            opt_row(
                &c,
                &s,
                now,
                &s.renew,
                &[&ttl, &name, &h, &t],
                renewed,
                Outcome::Refused,
            )
            .await
            .into()
        })
    }

    fn release(
        &mut self,
        cx: &Ctx<'_>,
        lease: &LeaseName,
        holder: &Holder,
        token: Token,
    ) -> Outcome {
        let (c, s, in_txn) = session_or_return!(self, DbName::Lease, cx);
        let now = self.now_for(in_txn, cx.now);
        let (name, h, t) = (lease.to_string(), holder.to_string(), token.0 as i64);
        self.run(DbName::Lease, cx.conn, async move {
            one_row(
                &c,
                &s,
                now,
                &s.release,
                &[&name, &h, &t],
                Outcome::Released,
                Outcome::Refused,
            )
            .await
            .into()
        })
    }

    fn read_lease(&mut self, cx: &Ctx<'_>, lease: &LeaseName) -> Outcome {
        let (c, s, _) = session_or_return!(self, DbName::Lease, cx);
        let name = lease.to_string();
        self.rt.block_on(async move {
            let r: Result<Outcome, Outcome> = async {
                let row = c
                    .query_opt(st(&s.read_lease)?, &[&name])
                    .await
                    .map_err(stmt_err)?;
                Ok(match row {
                    Some(r) => {
                        let t: i64 = r.get(1);
                        Outcome::Lease(Some(LeaseRow {
                            holder: Holder::new(r.get::<_, String>(0)),
                            token: Token(t as u64),
                            expires_at: ms_of_us(r.get(2))?,
                        }))
                    }
                    None => Outcome::Lease(None),
                })
            }
            .await;
            r.unwrap_or_else(|o| o)
        })
    }
}

impl FencedResource for PgBackend {
    fn write(
        &mut self,
        cx: &Ctx<'_>,
        scope: &Scope,
        part: &Part,
        content: &str,
        token: Token,
    ) -> Outcome {
        let (c, s, in_txn) = session_or_return!(self, DbName::Res, cx);
        if in_txn {
            return Outcome::Error("in-transaction".into());
        }
        let now = self.now_for(false, cx.now);
        let mode = self.config.fence;
        let txn = self.uses_txn(DbName::Res);
        let w = Self::write_args(cx, scope, part, content, token);
        self.run(DbName::Res, cx.conn, async move {
            let r: Result<Outcome, Outcome> = async {
                set_now(&c, &s, now).await.map_err(stmt_err)?;
                if txn {
                    c.batch_execute("BEGIN").await.map_err(stmt_err)?;
                }
                let mut pass = fence(&c, &s, mode, &w).await?;
                if pass {
                    pass = upsert(&c, &s, mode, &w).await?;
                }
                if txn {
                    c.batch_execute(if pass { "COMMIT" } else { "ROLLBACK" })
                        .await
                        .map_err(if pass { commit_err } else { stmt_err })?;
                }
                log_attempt(&c, &s, &w, pass).await?;
                Ok(if pass {
                    Outcome::Accepted
                } else {
                    Outcome::Rejected
                })
            }
            .await;
            r.unwrap_or_else(|o| o).into()
        })
    }

    fn fence(&mut self, cx: &Ctx<'_>, scope: &Scope, token: Token) -> Outcome {
        let (c, s, in_txn) = session_or_return!(self, DbName::Res, cx);
        let now = self.now_for(in_txn, cx.now);
        let mode = self.config.fence;
        let w = Self::write_args(cx, scope, &Part::new(""), "", token);
        self.run(DbName::Res, cx.conn, async move {
            let r: Result<Out, Out> = async {
                flatten(set_now(&c, &s, now).await.map_err(stmt_err))?;
                if flatten(fence(&c, &s, mode, &w).await)? {
                    return Ok(Outcome::Passed.into());
                }
                if in_txn {
                    return Ok(Out {
                        outcome: Outcome::Failed,
                        drafts: vec![(w, false)],
                    });
                }
                flatten(log_attempt(&c, &s, &w, false).await)?;
                Ok(Outcome::Failed.into())
            }
            .await;
            r.unwrap_or_else(|o| o)
        })
    }

    fn upsert(
        &mut self,
        cx: &Ctx<'_>,
        scope: &Scope,
        part: &Part,
        content: &str,
        token: Token,
    ) -> Outcome {
        let (c, s, in_txn) = session_or_return!(self, DbName::Res, cx);
        let now = self.now_for(in_txn, cx.now);
        let mode = self.config.fence;
        let w = Self::write_args(cx, scope, part, content, token);
        self.run(DbName::Res, cx.conn, async move {
            let r: Result<Out, Out> = async {
                flatten(set_now(&c, &s, now).await.map_err(stmt_err))?;
                let pass = flatten(upsert(&c, &s, mode, &w).await)?;
                if in_txn {
                    return Ok(Out {
                        outcome: if pass { Outcome::Ok } else { Outcome::Failed },
                        drafts: vec![(w, pass)],
                    });
                }
                flatten(log_attempt(&c, &s, &w, pass).await)?;
                Ok(if pass {
                    Outcome::Accepted
                } else {
                    Outcome::Rejected
                }
                .into())
            }
            .await;
            r.unwrap_or_else(|o| o)
        })
    }

    fn publish(&mut self, cx: &Ctx<'_>, key: &str, content: &str, token: Token) -> Outcome {
        let (c, s, in_txn) = session_or_return!(self, DbName::Res, cx);
        let now = self.now_for(in_txn, cx.now);
        let (k, ct, wr, t) = (
            key.to_string(),
            content.to_string(),
            cx.actor.to_string(),
            token.0 as i64,
        );
        self.run(DbName::Res, cx.conn, async move {
            one_row(
                &c,
                &s,
                now,
                &s.publish,
                &[&k, &ct, &wr, &t],
                Outcome::Accepted,
                Outcome::Rejected,
            )
            .await
            .into()
        })
    }

    fn read_floor(&mut self, cx: &Ctx<'_>, scope: &Scope) -> Outcome {
        let (c, s, _) = session_or_return!(self, DbName::Res, cx);
        let sc = scope.to_string();
        self.rt.block_on(async move {
            match st(&s.floor_read) {
                Ok(q) => match c.query_opt(q, &[&sc]).await {
                    Ok(r) => Outcome::Floor(r.map(|r| Token(r.get::<_, i64>(0) as u64))),
                    Err(e) => stmt_err(e),
                },
                Err(o) => o,
            }
        })
    }

    fn read_part(&mut self, cx: &Ctx<'_>, scope: &Scope, part: &Part) -> Outcome {
        let (c, s, _) = session_or_return!(self, DbName::Res, cx);
        let (sc, p) = (scope.to_string(), part.to_string());
        self.rt.block_on(async move {
            match st(&s.read_part) {
                Ok(q) => match c.query_opt(q, &[&sc, &p]).await {
                    Ok(r) => Outcome::Part(r.map(|r| PartRow {
                        content: r.get(0),
                        writer: Holder::new(r.get::<_, String>(1)),
                        token: Token(r.get::<_, i64>(2) as u64),
                    })),
                    Err(e) => stmt_err(e),
                },
                Err(o) => o,
            }
        })
    }

    fn read_publish(&mut self, cx: &Ctx<'_>, key: &str) -> Outcome {
        let (c, s, _) = session_or_return!(self, DbName::Res, cx);
        let k = key.to_string();
        self.rt.block_on(async move {
            match st(&s.read_publish) {
                Ok(q) => match c.query_opt(q, &[&k]).await {
                    Ok(r) => Outcome::Published(r.map(|r| PartRow {
                        content: r.get(0),
                        writer: Holder::new(r.get::<_, String>(1)),
                        token: Token(r.get::<_, i64>(2) as u64),
                    })),
                    Err(e) => stmt_err(e),
                },
                Err(o) => o,
            }
        })
    }

    fn count_attempts(
        &mut self,
        cx: &Ctx<'_>,
        writer: &Holder,
        outcome: AttemptOutcome,
    ) -> Outcome {
        let (c, s, _) = session_or_return!(self, DbName::Res, cx);
        let (w, acc) = (writer.to_string(), outcome == AttemptOutcome::Accepted);
        self.rt.block_on(async move {
            match st(&s.count) {
                Ok(q) => match c.query_one(q, &[&w, &acc]).await {
                    Ok(r) => Outcome::Count(r.get::<_, i64>(0) as u64),
                    Err(e) => stmt_err(e),
                },
                Err(o) => o,
            }
        })
    }
}

impl Admin for PgBackend {
    fn session(&mut self, cx: &Ctx<'_>, db: DbName, step: SessionStep) -> Outcome {
        let i = db.index();
        match step {
            SessionStep::Await => {
                if !self.sides[i].up {
                    return Outcome::Unavailable;
                }
                self.settle(i);
                let side = &mut self.sides[i];
                if let Some(s) = side.sessions.get_mut(cx.conn) {
                    if s.pending.is_some() {
                        return Outcome::Error("still-blocked".into());
                    }
                    if let Some(o) = s.finished.take() {
                        return o;
                    }
                }
                if side.lost.remove(cx.conn) {
                    return Outcome::Error("conn-lost".into());
                }
                return Outcome::Error("not-blocked".into());
            }
            SessionStep::Disconnect => {
                if !self.sides[i].up {
                    return Outcome::Unavailable;
                }
                if db == DbName::Res {
                    // As the server will: the open transaction ends without committing. Its
                    // rejected attempts are logged outside it.
                    let busy = self.sides[i]
                        .sessions
                        .get(cx.conn)
                        .is_some_and(|s| s.pending.is_some());
                    self.log_drafts(
                        cx.conn,
                        false,
                        busy || self.sides[i]
                            .sessions
                            .get(cx.conn)
                            .is_some_and(|s| s.in_txn),
                    );
                }
                self.sides[i].lost.remove(cx.conn);
                if let Some(s) = self.sides[i].sessions.remove(cx.conn) {
                    // The client closes its socket for real: the task that owns it ends.
                    let waiting = s.pending.is_some();
                    if let Some(h) = s.pending {
                        h.abort();
                    }
                    s.socket.abort();
                    let pid = s.pid;
                    drop(s.client);
                    if waiting {
                        // The backend does not read its socket while the statement waits.
                        self.sides[i].orphans.push(pid);
                    } else if let Ok((admin, _)) = self.admin(i) {
                        // Idle, it reads EOF at once and ends (rolling back): its locks are
                        // free when it is gone.
                        self.rt
                            .block_on(async move { wait_backend_gone(&admin, pid).await });
                    }
                }
                self.settle(i);
                return Outcome::Ok;
            }
            _ => {}
        }
        let (c, s, in_txn) = session_or_return!(self, db, cx);
        let txn_db = self.uses_txn(db);
        let out = match step {
            SessionStep::Now => {
                let now = self.now_for(in_txn, cx.now);
                self.rt.block_on(async move {
                    let r: Result<Outcome, Outcome> = async {
                        set_now(&c, &s, now).await.map_err(stmt_err)?;
                        let us: i64 = c.query_one(&s.now, &[]).await.map_err(stmt_err)?.get(0);
                        match ms_of_us(Some(us))? {
                            Expiry::At(t) => Ok(Outcome::Now(t)),
                            Expiry::NegInfinity => Ok(Outcome::Error("bad-now".into())),
                        }
                    }
                    .await;
                    r.unwrap_or_else(|o| o)
                })
            }
            SessionStep::Begin | SessionStep::BeginRepeatableRead if in_txn => {
                Outcome::Error("in-transaction".into())
            }
            SessionStep::Begin | SessionStep::BeginRepeatableRead if !txn_db => Outcome::Ok,
            SessionStep::Begin | SessionStep::BeginRepeatableRead => {
                let now = self.now_for(false, cx.now);
                let begin = if step == SessionStep::BeginRepeatableRead {
                    "BEGIN ISOLATION LEVEL REPEATABLE READ"
                } else {
                    "BEGIN"
                };
                let o = self.rt.block_on(async move {
                    let r: Result<Outcome, Outcome> = async {
                        set_now(&c, &s, now).await.map_err(stmt_err)?;
                        c.batch_execute(begin).await.map_err(stmt_err)?;
                        Ok(Outcome::Ok)
                    }
                    .await;
                    r.unwrap_or_else(|o| o)
                });
                if o == Outcome::Ok {
                    self.set_in_txn(db, cx.conn, true);
                }
                o
            }
            SessionStep::Commit | SessionStep::Rollback => {
                let commit = step == SessionStep::Commit;
                // PostgreSQL answers COMMIT of an aborted transaction with ROLLBACK, no error.
                let aborted = self.sides[i]
                    .sessions
                    .get(cx.conn)
                    .is_some_and(|s| s.aborted);
                let o = if in_txn {
                    self.rt.block_on(async move {
                        match c
                            .batch_execute(if commit { "COMMIT" } else { "ROLLBACK" })
                            .await
                        {
                            Ok(()) => Outcome::Ok,
                            Err(e) if commit => commit_err(e),
                            Err(e) => stmt_err(e),
                        }
                    })
                } else {
                    Outcome::Ok
                };
                self.set_in_txn(db, cx.conn, false);
                if db == DbName::Res {
                    if o != Outcome::Ok {
                        // The transaction's fate is unknown or it failed: nothing to log, as
                        // after a crash.
                        if let Some(s) = self.sides[i].sessions.get_mut(cx.conn) {
                            s.drafts.clear();
                        }
                        return o;
                    }
                    let l = self.log_drafts(cx.conn, commit && !aborted, false);
                    if l != Outcome::Ok {
                        return l;
                    }
                }
                o
            }
            SessionStep::Await | SessionStep::Disconnect => Outcome::Error("not-blocked".into()),
        };
        self.settle(i);
        out
    }

    fn crash(&mut self, _cx: &Ctx<'_>, db: DbName) -> Outcome {
        let i = db.index();
        if !self.sides[i].up {
            return Outcome::Error("already-down".into());
        }
        let Some(cl) = self.sides[i].cluster.as_mut() else {
            return Outcome::Error("crash-unsupported-on-an-existing-server".into());
        };
        if let Err(e) = cl.crash() {
            return Outcome::Error(format!("crash-failed:{}", e.to_string().replace(' ', "_")));
        }
        let side = &mut self.sides[i];
        side.up = false;
        side.admin = None;
        side.orphans.clear();
        for (k, s) in std::mem::take(&mut side.sessions) {
            if s.in_txn || s.pending.is_some() {
                side.lost.insert(k);
            }
            if let Some(h) = s.pending {
                h.abort();
            }
        }
        Outcome::Ok
    }

    fn restart(&mut self, _cx: &Ctx<'_>, db: DbName) -> Outcome {
        let i = db.index();
        if self.sides[i].up {
            return Outcome::Error("not-down".into());
        }
        let Some(cl) = self.sides[i].cluster.as_mut() else {
            return Outcome::Error("restart-unsupported-on-an-existing-server".into());
        };
        if let Err(e) = cl.boot() {
            return Outcome::Error(format!(
                "restart-failed:{}",
                e.to_string().replace(' ', "_")
            ));
        }
        self.sides[i].up = true;
        Outcome::Ok
    }
}
