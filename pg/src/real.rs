//! Real-time experiments, as the source ran them: real `now()`, real connections, and for
//! F4/F5 two real OS processes of our own binary (`leaselab holder …`) that the parent stops
//! with SIGSTOP and resumes with SIGCONT. Those processes run the model crate's holder — the
//! one the simulation and the exhaustive checker run — through a tokio driver.

use crate::recording::{epoch_ms, Recording};
use crate::sql;
use leaselab_model::names::defaults;
use leaselab_model::{Op, Outcome, PartRow, Token};
use std::future::Future;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_postgres::{Client, NoTls};

/// Why a real-time experiment could not run (not an outcome of it).
#[derive(Debug, thiserror::Error)]
pub enum RealError {
    /// A statement or connection failed; its SQLSTATE, where the server sent one, is
    /// `source.code()`.
    #[error("{what}: {source}")]
    Sql {
        /// What the experiment was doing.
        what: String,
        /// The driver's error.
        source: tokio_postgres::Error,
    },
    /// A process, pipe or file could not be used.
    #[error("{what}: {source}")]
    Io {
        /// What the experiment was doing.
        what: String,
        /// What the OS said.
        source: std::io::Error,
    },
    /// A holder process or the server did something the experiment does not expect.
    #[error("{0}")]
    Unexpected(String),
}

/// Names what failed, keeping the error itself.
trait Context<T> {
    fn ctx(self, what: &str) -> Result<T, RealError>;
}

impl<T> Context<T> for Result<T, tokio_postgres::Error> {
    fn ctx(self, what: &str) -> Result<T, RealError> {
        self.map_err(|source| RealError::Sql {
            what: what.to_string(),
            source,
        })
    }
}

impl<T> Context<T> for Result<T, std::io::Error> {
    fn ctx(self, what: &str) -> Result<T, RealError> {
        self.map_err(|source| RealError::Io {
            what: what.to_string(),
            source,
        })
    }
}

/// A current-thread runtime with time and IO, as every real-time process here runs.
pub fn runtime() -> Result<tokio::runtime::Runtime, RealError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ctx("runtime")
}

/// A connection to `info`, its driver task spawned on the current runtime.
pub async fn connect(info: &str) -> Result<Client, RealError> {
    let (c, conn) = tokio_postgres::connect(info, NoTls).await.ctx("connect")?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(c)
}

/// The source design's acquire (`sql::acquire`), its expiry in ms since the Unix epoch by the
/// server's clock: what the recorders write.
fn acquire_sql() -> String {
    sql::acquire_returning(0, &sql::expiry_epoch_ms("l.expires_at"))
}

/// The source design's renew, returning its expiry as [`acquire_sql`] does.
fn renew_sql() -> String {
    sql::renew_returning(false, &sql::expiry_epoch_ms("expires_at"))
}

/// The source design's acquire on the lease table: the new token and the expiry it set (ms
/// since the epoch, by the server's `now()`), or `None` while another holder's lease is valid.
pub async fn acquire(
    client: &Client,
    lease: &str,
    holder: &str,
    ttl_ms: u64,
) -> Result<Option<(Token, i64)>, RealError> {
    let args: [&(dyn tokio_postgres::types::ToSql + Sync); 3] = [&lease, &holder, &(ttl_ms as f64)];
    Ok(client
        .query_opt(&acquire_sql(), &args)
        .await
        .ctx("acquire")?
        .map(|r| (Token(r.get::<_, i64>(0) as u64), r.get(1))))
}

/// The source design's renew: the new expiry (ms since the epoch), or `None` when the lease is
/// no longer this holder's under this token, or has expired.
pub async fn renew(
    client: &Client,
    lease: &str,
    holder: &str,
    token: Token,
    ttl_ms: u64,
) -> Result<Option<i64>, RealError> {
    let args: [&(dyn tokio_postgres::types::ToSql + Sync); 4] =
        [&(ttl_ms as f64), &lease, &holder, &(token.0 as i64)];
    Ok(client
        .query_opt(&renew_sql(), &args)
        .await
        .ctx("renew")?
        .map(|r| r.get(0)))
}

/// The source design's release: whether the lease was still this holder's to end.
pub async fn release(
    client: &Client,
    lease: &str,
    holder: &str,
    token: Token,
) -> Result<bool, RealError> {
    let args: [&(dyn tokio_postgres::types::ToSql + Sync); 3] =
        [&lease, &holder, &(token.0 as i64)];
    Ok(client.execute(sql::RELEASE, &args).await.ctx("release")? == 1)
}

/// Runs `call` recorded as `op` on `rec` (see [`Recording::around`]).
pub async fn recorded<T>(
    rec: &Recording,
    conn: Option<&str>,
    op: &Op,
    call: impl Future<Output = Result<T, RealError>>,
    outcome: impl FnOnce(&T) -> Outcome,
) -> Result<T, RealError> {
    rec.around(conn, op, call, outcome).await.ctx("record")?
}

/// The source design's write of the summary part as holder `name` with `token`: with the scope
/// fence, BEGIN, the fence, the upsert, COMMIT (or ROLLBACK when the fence refuses); unfenced,
/// the upsert alone; then the attempt log. Whether the write was accepted.
pub async fn write(
    res: &Client,
    fenced: bool,
    name: &str,
    token: i64,
    content: &str,
) -> Result<bool, RealError> {
    let ok = if fenced {
        res.batch_execute("BEGIN").await.ctx("write")?;
        let n = res
            .execute(sql::FENCE_SCOPE, &[&token, &"daily-report"])
            .await
            .ctx("write")?;
        if n == 1 {
            res.execute(
                sql::UPSERT,
                &[&"daily-report", &"summary", &content, &name, &token],
            )
            .await
            .ctx("write")?;
            res.batch_execute("COMMIT").await.ctx("write")?;
            true
        } else {
            res.batch_execute("ROLLBACK").await.ctx("write")?;
            false
        }
    } else {
        res.execute(
            sql::UPSERT,
            &[&"daily-report", &"summary", &content, &name, &token],
        )
        .await
        .ctx("write")?;
        true
    };
    res.execute(
        sql::ATTEMPT,
        &[&"daily-report", &"summary", &name, &token, &ok],
    )
    .await
    .ctx("write")?;
    Ok(ok)
}

/// What the parent observed in F4/F5.
#[derive(Clone, Debug, Default)]
pub struct PauseReport {
    /// A's first lines.
    pub a_acquired: String,
    /// After 3000 ms: (holder, token, still unexpired by the database clock).
    pub held_after_wait: (String, i64, bool),
    /// A's check result.
    pub a_check: String,
    /// `/proc/<pid>/stat` state after SIGSTOP.
    pub state_after_stop: char,
    /// B's lines.
    pub b_lines: Vec<String>,
    /// A's lines after READY: its renewer's while it waited, then those after SIGCONT.
    pub a_after: Vec<String>,
    /// Final summary: (content, writer, token).
    pub summary: Option<(String, String, i64)>,
    /// Final floor.
    pub floor: i64,
    /// Rejected attempts logged for A.
    pub a_rejected: i64,
    /// The recorded histories, one file per process (holder-a, holder-b, and the observer's
    /// final read), when the experiment was asked to record.
    pub records: Vec<PathBuf>,
}

fn proc_state(pid: u32) -> char {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .and_then(|(_, rest)| rest.trim_start().chars().next())
        })
        .unwrap_or('?')
}

fn signal(pid: u32, sig: &str) -> Result<(), RealError> {
    let st = Command::new("kill")
        .arg(sig)
        .arg(pid.to_string())
        .status()
        .ctx("kill")?;
    if st.success() {
        Ok(())
    } else {
        Err(RealError::Unexpected(format!("kill {sig} {pid} failed")))
    }
}

/// Where and from when the processes of one experiment record their calls.
#[derive(Clone, Debug)]
struct Records {
    dir: PathBuf,
    origin_ms: u64,
}

impl Records {
    fn file(&self, process: &str) -> PathBuf {
        self.dir.join(format!("{process}.jsonl"))
    }
}

/// The holder processes this process started and has not reaped. None may outlive the run:
/// one stopped with SIGSTOP would wait for ever. An abandoned run kills them
/// ([`kill_holders`]); a run that returns early drops its [`HolderProc`]s, which kill theirs.
static HOLDERS: std::sync::Mutex<Vec<(u32, Option<crate::watchdog::Entry>)>> =
    std::sync::Mutex::new(Vec::new());

/// Set by [`kill_holders`]: the run is abandoned, and no holder may be started any more.
static HOLDERS_CLOSED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn holders() -> std::sync::MutexGuard<'static, Vec<(u32, Option<crate::watchdog::Entry>)>> {
    HOLDERS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Whether holder `pid` is still listed (started, not yet reaped).
fn listed(pid: u32) -> bool {
    holders().iter().any(|(p, _)| *p == pid)
}

/// Takes holder `pid` off the list and out of the watchdog's script: it is about to be reaped,
/// after which its pid may name another process.
fn unlist(pid: u32) {
    let gone: Vec<_> = {
        let mut h = holders();
        let (gone, kept) = std::mem::take(&mut *h)
            .into_iter()
            .partition(|(p, _)| *p == pid);
        *h = kept;
        gone
    };
    for (_, e) in gone {
        if let Some(e) = e {
            crate::watchdog::forget(e);
        }
    }
}

/// Kills every holder process this process started and has not reaped (SIGKILL ends a stopped
/// process too). For a run abandoned by a second Ctrl-C, whose own code will not run again.
pub fn kill_holders() {
    let pids = {
        let mut h = holders();
        // Under the list's lock, so that no holder is started and listed after the list was
        // taken (the run's own thread goes on while an abandoning handler stops the clusters).
        HOLDERS_CLOSED.store(true, std::sync::atomic::Ordering::SeqCst);
        std::mem::take(&mut *h)
    };
    for (pid, _) in pids {
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .stderr(Stdio::null())
            .status();
    }
}

/// A running holder process: reaped by [`HolderProc::wait`], killed and reaped when dropped
/// first (an error part-way, with the process perhaps stopped).
pub struct HolderProc(Child);

impl HolderProc {
    /// Starts `cmd` (this binary's `holder` command) as a holder process: in a process group
    /// of its own, listed for [`kill_holders`] and guarded by the watchdog.
    pub fn spawn(cmd: Command) -> Result<Spawned, RealError> {
        let mut child = spawn_listed(cmd)?;
        let (stdin, stdout) = (child.stdin.take(), child.stdout.take());
        let proc = HolderProc(child);
        match (stdin, stdout) {
            (Some(stdin), Some(stdout)) => Ok(Spawned {
                proc,
                stdin,
                stdout,
            }),
            _ => Err(RealError::Unexpected("a holder without its pipes".into())),
        }
    }

    /// Its pid.
    pub fn id(&self) -> u32 {
        self.0.id()
    }

    /// Stops (SIGSTOP) or resumes (SIGCONT) it, `sig` as `kill` spells it.
    pub fn signal(&self, sig: &str) -> Result<(), RealError> {
        signal(self.id(), sig)
    }

    /// Waits for a holder that runs to its end (not stopped): how it ended, if that could be
    /// learnt. Unregistered first: once reaped, its pid may belong to another process, which
    /// [`kill_holders`] must never signal.
    pub fn wait(mut self) -> Option<std::process::ExitStatus> {
        unlist(self.0.id());
        self.0.wait().ok()
    }
}

impl Drop for HolderProc {
    fn drop(&mut self) {
        let id = self.0.id();
        if listed(id) {
            let _ = self.0.kill();
            let _ = self.0.wait();
            unlist(id);
        }
    }
}

fn spawn_holder(
    exe: &Path,
    role: &str,
    name: &str,
    lease: &str,
    res: &str,
    fenced: bool,
    records: Option<&Records>,
) -> Result<Child, RealError> {
    let mut cmd = Command::new(exe);
    cmd.args([
        "holder", "--role", role, "--name", name, "--lease", lease, "--res", res,
    ])
    .args(["--fence", if fenced { "scope" } else { "off" }]);
    if let Some(r) = records {
        cmd.arg("--record")
            .arg(r.file(name))
            .args(["--clock-origin-ms", &r.origin_ms.to_string()]);
    }
    spawn_listed(cmd)
}

/// Starts a holder process (`cmd`, its standard input and output piped) in a process group of
/// its own — a Ctrl-C at the terminal reaches the parent alone, which decides what becomes of
/// its holders (killed when it abandons the run) — listed for [`kill_holders`] and the watchdog.
fn spawn_listed(mut cmd: Command) -> Result<Child, RealError> {
    use std::os::unix::process::CommandExt;
    // Started and listed under the list's lock: [`kill_holders`] either sees it or has already
    // closed the list, and then it is not started.
    let mut listed = holders();
    if HOLDERS_CLOSED.load(std::sync::atomic::Ordering::SeqCst) {
        return Err(RealError::Unexpected(
            "not started: the run was abandoned".into(),
        ));
    }
    let child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .process_group(0)
        .spawn()
        .ctx(&format!("spawn {}", cmd.get_program().to_string_lossy()))?;
    let watched = crate::watchdog::guard(
        crate::watchdog::Order::Holder,
        format!("kill -KILL {} 2>/dev/null", child.id()),
    );
    listed.push((child.id(), watched));
    Ok(child)
}

/// A holder process started by [`HolderProc::spawn`], with its pipes.
pub struct Spawned {
    /// The process: killed and reaped when dropped before [`HolderProc::wait`].
    pub proc: HolderProc,
    /// Its standard input (the parent's lines).
    pub stdin: std::process::ChildStdin,
    /// Its standard output (one line per step).
    pub stdout: ChildStdout,
}

fn next_line(r: &mut BufReader<ChildStdout>) -> Result<String, RealError> {
    let mut l = String::new();
    let n = r.read_line(&mut l).ctx("read child")?;
    if n == 0 {
        return Err(RealError::Unexpected("child exited early".into()));
    }
    Ok(l.trim_end().to_string())
}

/// F4 (fenced) / F5 (unfenced) with two real processes. The databases must be freshly reset.
/// With `record_dir`, each holder process records its calls to `record_dir/<holder>.jsonl`
/// and this process records its final read to `record_dir/observer.jsonl`.
pub fn pause_experiment(
    exe: &Path,
    lease: &str,
    res: &str,
    fenced: bool,
    record_dir: Option<&Path>,
) -> Result<PauseReport, RealError> {
    let rt = runtime()?;
    let mut rep = PauseReport::default();
    let records = match record_dir {
        Some(dir) => {
            std::fs::create_dir_all(dir).ctx(&format!("create {}", dir.display()))?;
            Some(Records {
                dir: dir.to_path_buf(),
                origin_ms: epoch_ms(),
            })
        }
        None => None,
    };
    let records = records.as_ref();
    let mut a = spawn_holder(exe, "a", "holder-a", lease, res, fenced, records)?;
    let (a_in, a_out) = (a.stdin.take(), a.stdout.take());
    let a = HolderProc(a);
    let mut a_in = a_in.ok_or_else(|| RealError::Unexpected("no stdin".into()))?;
    let mut a_out = BufReader::new(a_out.ok_or_else(|| RealError::Unexpected("no stdout".into()))?);
    rep.a_acquired = next_line(&mut a_out)?;
    let lease_c = rt.block_on(connect(lease))?;
    let res_c = rt.block_on(connect(res))?;
    // A checks right after its grant and waits at the point after the check.
    rep.a_check = next_line(&mut a_out)?;
    let ready = next_line(&mut a_out)?;
    if ready != "READY" {
        return Err(RealError::Unexpected(format!("A said `{ready}`")));
    }
    // Its renewer must keep the lease for 3000 ms (two TTLs): its renews are read as they
    // come, and A is stopped right after one was answered, so no renew is in flight when it
    // stops (the next is a renew period away) and the one it sends on resume is refused.
    let renewals = 3000u64.div_ceil(defaults::RENEW_MS);
    for _ in 0..renewals {
        let l = next_line(&mut a_out)?;
        let renewed = l == "RENEW ok=true";
        rep.a_after.push(l);
        if !renewed {
            break;
        }
    }
    let row = rt
        .block_on(lease_c.query_one(
            "SELECT holder, token, expires_at > now() FROM lease WHERE name = 'report-job'",
            &[],
        ))
        .ctx("lease row")?;
    rep.held_after_wait = (row.get(0), row.get(1), row.get(2));
    // A passed its check and now waits right before writing: stop the whole process.
    signal(a.id(), "-STOP")?;
    let t = Instant::now();
    rep.state_after_stop = loop {
        let s = proc_state(a.id());
        if s == 'T' || t.elapsed() > Duration::from_secs(60) {
            break s;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    // The lease expires by the database clock.
    let t = Instant::now();
    loop {
        let expired: bool = rt
            .block_on(lease_c.query_one(
                "SELECT expires_at <= now() FROM lease WHERE name = 'report-job'",
                &[],
            ))
            .ctx("expiry")?
            .get(0);
        if expired || t.elapsed() > Duration::from_secs(60) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut b = spawn_holder(exe, "b", "holder-b", lease, res, fenced, records)?;
    let b_out = b.stdout.take();
    let b = HolderProc(b);
    let mut b_out = BufReader::new(b_out.ok_or_else(|| RealError::Unexpected("no stdout".into()))?);
    while let Ok(l) = next_line(&mut b_out) {
        rep.b_lines.push(l);
    }
    let _ = b.wait();
    // Release line, then SIGCONT.
    writeln!(a_in, "release").ctx("stdin")?;
    signal(a.id(), "-CONT")?;
    while let Ok(l) = next_line(&mut a_out) {
        rep.a_after.push(l);
    }
    let _ = a.wait();
    let observer = Recording::open(
        records.map(|r| r.file("observer")).as_deref(),
        "observer",
        records.map_or(0, |r| r.origin_ms),
    )
    .ctx("open the record file")?;
    let read = async {
        res_c
            .query_opt("SELECT content, writer, token FROM report_part WHERE scope = 'daily-report' AND part = 'summary'", &[])
            .await
            .ctx("part")
            .map(|p| p.map(|r| (r.get::<_, String>(0), r.get::<_, String>(1), r.get::<_, i64>(2))))
    };
    rep.summary = rt.block_on(recorded(
        &observer,
        None,
        &Op::read_part("summary"),
        read,
        |p| {
            Outcome::Part(p.as_ref().map(|(content, writer, token)| PartRow {
                content: content.clone(),
                writer: writer.as_str().into(),
                token: Token(*token as u64),
            }))
        },
    ))?;
    if let Some(r) = records {
        rep.records = ["holder-a", "holder-b", "observer"]
            .iter()
            .map(|p| r.file(p))
            .collect();
    }
    rep.floor = rt
        .block_on(res_c.query_one(
            "SELECT max_token FROM fence_floor WHERE scope = 'daily-report'",
            &[],
        ))
        .ctx("floor")?
        .get(0);
    rep.a_rejected = rt
        .block_on(res_c.query_one(
            "SELECT count(*) FROM write_attempt WHERE writer = 'holder-a' AND NOT accepted",
            &[],
        ))
        .ctx("attempts")?
        .get(0);
    Ok(rep)
}

/// F3 with real connections: 16 sessions released together by a barrier, three rounds (new,
/// held, after expiry). Returns the winners per round and the final token.
pub fn race_experiment(lease: &str, ttl_ms: u64) -> Result<(Vec<usize>, i64), RealError> {
    let rt = runtime()?;
    rt.block_on(async {
        let mut clients = Vec::new();
        for _ in 0..16 {
            clients.push(Arc::new(connect(lease).await?));
        }
        let mut winners = Vec::new();
        for round in 0..3 {
            if round == 2 {
                tokio::time::sleep(Duration::from_millis(ttl_ms + 100)).await;
            }
            let barrier = Arc::new(tokio::sync::Barrier::new(16));
            let mut hs = Vec::new();
            for (i, c) in clients.iter().enumerate() {
                let (c, barrier) = (c.clone(), barrier.clone());
                hs.push(tokio::spawn(async move {
                    let stmt = c.prepare(&acquire_sql()).await.ok()?;
                    barrier.wait().await;
                    c.query_opt(
                        &stmt,
                        &[&"report-job", &format!("t{i:02}"), &(ttl_ms as f64)],
                    )
                    .await
                    .ok()?
                }));
            }
            let mut n = 0;
            for h in hs {
                if let Ok(Some(_)) = h.await {
                    n += 1;
                }
            }
            winners.push(n);
        }
        let token: i64 = clients[0]
            .query_one("SELECT token FROM lease WHERE name = 'report-job'", &[])
            .await
            .ctx("token")?
            .get(0);
        Ok((winners, token))
    })
}

/// What the real-time F2 observed.
#[derive(Clone, Debug, Default)]
pub struct LongTxnReport {
    /// `now()` did not move inside the transaction.
    pub now_frozen: bool,
    /// `clock_timestamp()` moved past `now()`.
    pub clock_moved: bool,
    /// Autocommit saw the lease expired.
    pub expired_in_autocommit: bool,
    /// The acquire inside the long transaction was refused.
    pub refused_inside: bool,
    /// The token the same acquire got in autocommit.
    pub token_in_autocommit: Option<i64>,
}

/// F2 with the real `now()`: a lease of 300 ms; a transaction begun while it is held still sees
/// it held 400 ms later, while autocommit sees it expired.
pub fn long_txn_experiment(lease: &str) -> Result<LongTxnReport, RealError> {
    let rt = runtime()?;
    rt.block_on(async {
        let long = connect(lease).await?;
        let auto = connect(lease).await?;
        auto.query_opt(&acquire_sql(), &[&"report-job", &"holder-a", &300f64])
            .await
            .ctx("acquire")?;
        long.batch_execute("BEGIN").await.ctx("begin")?;
        let r0 = long
            .query_one("SELECT now(), clock_timestamp()", &[])
            .await
            .ctx("now")?;
        tokio::time::sleep(Duration::from_millis(400)).await;
        let r1 = long
            .query_one(
                "SELECT now() = $1, clock_timestamp() > now()",
                &[&r0.get::<_, std::time::SystemTime>(0)],
            )
            .await
            .ctx("now again")?;
        let expired: bool = auto
            .query_one(
                "SELECT expires_at <= now() FROM lease WHERE name = 'report-job'",
                &[],
            )
            .await
            .ctx("expired")?
            .get(0);
        let inside = long
            .query_opt(&acquire_sql(), &[&"report-job", &"holder-b", &300f64])
            .await
            .ctx("acquire inside")?;
        long.batch_execute("COMMIT").await.ctx("commit")?;
        let outside = auto
            .query_opt(&acquire_sql(), &[&"report-job", &"holder-b", &300f64])
            .await
            .ctx("acquire outside")?;
        Ok(LongTxnReport {
            now_frozen: r1.get(0),
            clock_moved: r1.get(1),
            expired_in_autocommit: expired,
            refused_inside: inside.is_none(),
            token_in_autocommit: outside.map(|r| r.get(0)),
        })
    })
}

/// What the real-time F8 observed.
#[derive(Clone, Debug, Default)]
pub struct CrashReport {
    /// Lease row after recovery: (holder, token).
    pub lease_after: (String, i64),
    /// Floor after recovery.
    pub floor_after: i64,
    /// Whether the lease was still held right after the restart (the TTL ran through the outage).
    pub held_after_restart: bool,
    /// Token of the next acquire once expired.
    pub next_token: Option<i64>,
    /// The new holder's write.
    pub new_write: bool,
    /// holder-a's token-2 write afterwards.
    pub stale_write: bool,
}

/// Before the crash: holder-b holds token 1 and releases, holder-a acquires token 2 and writes.
pub fn crash_prefix(lease: &str, res: &str) -> Result<(), RealError> {
    let rt = runtime()?;
    rt.block_on(async {
        let l = connect(lease).await?;
        let r = connect(res).await?;
        l.query_opt(&acquire_sql(), &[&"report-job", &"holder-b", &1500f64])
            .await
            .ctx("acquire b")?;
        l.execute(sql::RELEASE, &[&"report-job", &"holder-b", &1i64])
            .await
            .ctx("release")?;
        l.query_opt(&acquire_sql(), &[&"report-job", &"holder-a", &1500f64])
            .await
            .ctx("acquire a")?;
        write(&r, true, "holder-a", 2, "A-2").await?;
        Ok(())
    })
}

/// After `pg_ctl stop -m immediate` and restart: what survived, and no token reuse.
pub fn crash_suffix(lease: &str, res: &str) -> Result<CrashReport, RealError> {
    let rt = runtime()?;
    rt.block_on(async {
        let l = connect(lease).await?;
        let r = connect(res).await?;
        let row = l
            .query_one(
                "SELECT holder, token, expires_at > now() FROM lease WHERE name = 'report-job'",
                &[],
            )
            .await
            .ctx("lease row")?;
        let mut rep = CrashReport {
            lease_after: (row.get(0), row.get(1)),
            held_after_restart: row.get(2),
            ..CrashReport::default()
        };
        rep.floor_after = r
            .query_one(
                "SELECT max_token FROM fence_floor WHERE scope = 'daily-report'",
                &[],
            )
            .await
            .ctx("floor")?
            .get(0);
        let give_up = Instant::now() + Duration::from_secs(60);
        while rep.next_token.is_none() && Instant::now() < give_up {
            rep.next_token = l
                .query_opt(&acquire_sql(), &[&"report-job", &"holder-b", &1500f64])
                .await
                .ctx("acquire")?
                .map(|r| r.get(0));
            if rep.next_token.is_none() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        let t = rep.next_token.unwrap_or(0);
        rep.new_write = write(&r, true, "holder-b", t, "B-3").await?;
        rep.stale_write = write(&r, true, "holder-a", 2, "A-2-late").await?;
        Ok(rep)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Once an abandoning handler has killed the listed holders, no holder may start: one
    /// started then would be on no list and, if the process ends before its watchdog entry is
    /// written, in no cleanup script either — a holder that outlives the run.
    #[test]
    fn no_holder_starts_once_the_holders_were_killed() {
        kill_holders();
        let started = spawn_holder(
            Path::new("/bin/true"),
            "b",
            "holder-b",
            "host=/nowhere",
            "host=/nowhere",
            true,
            None,
        );
        match started {
            Err(RealError::Unexpected(m)) => assert!(m.contains("abandoned"), "{m}"),
            Err(e) => panic!("another error: {e}"),
            Ok(mut c) => {
                let _ = c.kill();
                let _ = c.wait();
                panic!("a holder started after kill_holders");
            }
        }
        assert!(holders().is_empty());
    }
}
