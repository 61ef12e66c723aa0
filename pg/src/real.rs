//! Real-time experiments, exactly as the source ran them: real `now()`, real connections, and
//! for F4/F5 two real OS processes of our own binary (`leaselab holder …`) that the parent
//! stops with SIGSTOP and resumes with SIGCONT.

use crate::sql;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
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

fn runtime() -> Result<tokio::runtime::Runtime, RealError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ctx("runtime")
}

async fn connect(info: &str) -> Result<Client, RealError> {
    let (c, conn) = tokio_postgres::connect(info, NoTls).await.ctx("connect")?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(c)
}

const ACQUIRE_REAL: &str = "INSERT INTO lease AS l (name, holder, token, expires_at)
VALUES ($1, $2, 1, now() + make_interval(secs => $3::float8 / 1000))
ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, token = l.token + 1, expires_at = EXCLUDED.expires_at
WHERE l.expires_at <= now() RETURNING l.token";
const RENEW_REAL: &str =
    "UPDATE lease SET expires_at = now() + make_interval(secs => $1::float8 / 1000)
WHERE name = $2 AND holder = $3 AND token = $4 AND expires_at > now()";

/// Arguments of `leaselab holder`.
#[derive(Clone, Debug)]
pub struct HolderArgs {
    /// `a` (acquire, renew in the background, check, wait for the release line, write, renew)
    /// or `b` (acquire, write, renew, release).
    pub role: String,
    /// Holder name.
    pub name: String,
    /// Connection string of lease26.
    pub lease: String,
    /// Connection string of res26.
    pub res: String,
    /// Fenced (scope) or not (off).
    pub fenced: bool,
    /// TTL.
    pub ttl_ms: u64,
    /// Renew period.
    pub renew_ms: u64,
    /// Local margin.
    pub margin_ms: u64,
}

async fn write(
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

/// The child process. Prints one line per step; the parent reads them.
pub fn holder_main(a: &HolderArgs) -> Result<(), RealError> {
    let rt = runtime()?;
    let out = |s: String| {
        println!("{s}");
        let _ = std::io::stdout().flush();
    };
    rt.block_on(async {
        let lease = connect(&a.lease).await?;
        let res = connect(&a.res).await?;
        let ttl = a.ttl_ms as f64;
        // The local deadline starts from the monotonic clock read *before* sending.
        let start = Instant::now();
        let mut token: Option<i64> = None;
        let give_up = Instant::now() + Duration::from_secs(20);
        while token.is_none() && Instant::now() < give_up {
            let row = lease
                .query_opt(ACQUIRE_REAL, &[&"report-job", &a.name, &ttl])
                .await
                .ctx("acquire")?;
            token = row.map(|r| r.get(0));
            if token.is_none() {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        let token = token.ok_or_else(|| RealError::Unexpected("never acquired".into()))?;
        out(format!("ACQUIRED token={token}"));
        if a.role == "b" {
            let ok = write(&res, a.fenced, &a.name, token, "rows=201(B)").await?;
            out(format!("WRITE accepted={ok} token={token}"));
            let n = lease
                .execute(RENEW_REAL, &[&ttl, &"report-job", &a.name, &token])
                .await
                .ctx("renew")?;
            out(format!("RENEW ok={}", n == 1));
            lease
                .execute(sql::RELEASE, &[&"report-job", &a.name, &token])
                .await
                .ctx("release")?;
            out("RELEASED".into());
            return Ok(());
        }
        // Holder A: a background renewer thread with its own connection.
        let deadline_ms = Arc::new(AtomicU64::new(a.ttl_ms.saturating_sub(a.margin_ms)));
        let lost = Arc::new(AtomicBool::new(false));
        {
            let (deadline_ms, lost, info, name) = (
                deadline_ms.clone(),
                lost.clone(),
                a.lease.clone(),
                a.name.clone(),
            );
            let (renew_ms, ttl_ms, margin_ms) = (a.renew_ms, a.ttl_ms, a.margin_ms);
            std::thread::spawn(move || {
                let Ok(rt) = runtime() else { return };
                rt.block_on(async move {
                    let Ok(c) = connect(&info).await else { return };
                    loop {
                        tokio::time::sleep(Duration::from_millis(renew_ms)).await;
                        let sent = start.elapsed().as_millis() as u64;
                        match c
                            .execute(
                                RENEW_REAL,
                                &[&(ttl_ms as f64), &"report-job", &name, &token],
                            )
                            .await
                        {
                            Ok(1) => deadline_ms.store(sent + ttl_ms - margin_ms, Ordering::SeqCst),
                            _ => {
                                lost.store(true, Ordering::SeqCst);
                                return;
                            }
                        }
                    }
                });
            });
        }
        // Wait for the parent's go-ahead to check, then wait for the release line right after
        // the check: that is where the parent stops this process.
        let mut line = String::new();
        let stdin = std::io::stdin();
        stdin.lock().read_line(&mut line).ctx("stdin")?;
        let valid = !lost.load(Ordering::SeqCst)
            && (start.elapsed().as_millis() as u64) < deadline_ms.load(Ordering::SeqCst);
        out(format!("CHECK valid={valid}"));
        out("READY".into());
        line.clear();
        stdin.lock().read_line(&mut line).ctx("stdin")?;
        let ok = write(&res, a.fenced, &a.name, token, "rows=200(A)").await?;
        out(format!("WRITE accepted={ok} token={token}"));
        let n = lease
            .execute(RENEW_REAL, &[&ttl, &"report-job", &a.name, &token])
            .await
            .ctx("renew")?;
        out(format!("RENEW_AFTER_WRITE ok={}", n == 1));
        Ok(())
    })
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
    /// A's lines after SIGCONT.
    pub a_after: Vec<String>,
    /// Final summary: (content, writer, token).
    pub summary: Option<(String, String, i64)>,
    /// Final floor.
    pub floor: i64,
    /// Rejected attempts logged for A.
    pub a_rejected: i64,
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

fn spawn_holder(
    exe: &Path,
    role: &str,
    name: &str,
    lease: &str,
    res: &str,
    fenced: bool,
) -> Result<Child, RealError> {
    Command::new(exe)
        .args([
            "holder", "--role", role, "--name", name, "--lease", lease, "--res", res,
        ])
        .args(["--fence", if fenced { "scope" } else { "off" }])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .ctx(&format!("spawn {}", exe.display()))
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
pub fn pause_experiment(
    exe: &Path,
    lease: &str,
    res: &str,
    fenced: bool,
) -> Result<PauseReport, RealError> {
    let rt = runtime()?;
    let mut rep = PauseReport::default();
    let mut a = spawn_holder(exe, "a", "holder-a", lease, res, fenced)?;
    let mut a_in = a
        .stdin
        .take()
        .ok_or_else(|| RealError::Unexpected("no stdin".into()))?;
    let mut a_out = BufReader::new(
        a.stdout
            .take()
            .ok_or_else(|| RealError::Unexpected("no stdout".into()))?,
    );
    rep.a_acquired = next_line(&mut a_out)?;
    // Renewals must keep the lease for 3000 ms (two TTLs).
    std::thread::sleep(Duration::from_millis(3000));
    let lease_c = rt.block_on(connect(lease))?;
    let res_c = rt.block_on(connect(res))?;
    let row = rt
        .block_on(lease_c.query_one(
            "SELECT holder, token, expires_at > now() FROM lease WHERE name = 'report-job'",
            &[],
        ))
        .ctx("lease row")?;
    rep.held_after_wait = (row.get(0), row.get(1), row.get(2));
    writeln!(a_in, "check").ctx("stdin")?;
    rep.a_check = next_line(&mut a_out)?;
    let ready = next_line(&mut a_out)?;
    if ready != "READY" {
        return Err(RealError::Unexpected(format!("A said `{ready}`")));
    }
    // A passed its check and now waits right before writing: stop the whole process.
    signal(a.id(), "-STOP")?;
    let t = Instant::now();
    rep.state_after_stop = loop {
        let s = proc_state(a.id());
        if s == 'T' || t.elapsed() > Duration::from_secs(2) {
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
        if expired || t.elapsed() > Duration::from_secs(10) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut b = spawn_holder(exe, "b", "holder-b", lease, res, fenced)?;
    let mut b_out = BufReader::new(
        b.stdout
            .take()
            .ok_or_else(|| RealError::Unexpected("no stdout".into()))?,
    );
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
    let part = rt
        .block_on(res_c.query_opt("SELECT content, writer, token FROM report_part WHERE scope = 'daily-report' AND part = 'summary'", &[]))
        .ctx("part")?;
    rep.summary = part.map(|r| (r.get(0), r.get(1), r.get(2)));
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
                    let stmt = c.prepare(ACQUIRE_REAL).await.ok()?;
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
        auto.query_opt(ACQUIRE_REAL, &[&"report-job", &"holder-a", &300f64])
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
            .query_opt(ACQUIRE_REAL, &[&"report-job", &"holder-b", &300f64])
            .await
            .ctx("acquire inside")?;
        long.batch_execute("COMMIT").await.ctx("commit")?;
        let outside = auto
            .query_opt(ACQUIRE_REAL, &[&"report-job", &"holder-b", &300f64])
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
        l.query_opt(ACQUIRE_REAL, &[&"report-job", &"holder-b", &1500f64])
            .await
            .ctx("acquire b")?;
        l.execute(sql::RELEASE, &[&"report-job", &"holder-b", &1i64])
            .await
            .ctx("release")?;
        l.query_opt(ACQUIRE_REAL, &[&"report-job", &"holder-a", &1500f64])
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
        let give_up = Instant::now() + Duration::from_secs(10);
        while rep.next_token.is_none() && Instant::now() < give_up {
            rep.next_token = l
                .query_opt(ACQUIRE_REAL, &[&"report-job", &"holder-b", &1500f64])
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
