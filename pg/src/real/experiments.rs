//! The parents of the real-time cases: F3's race of 16 connections, F4/F5's two holder
//! processes with one stopped by SIGSTOP, the long transaction, and the crash between a
//! prefix and a suffix.

use super::calls::{acquire_sql, recorded, write};
use super::procs::{next_line, proc_state, signal, spawn_holder, HolderProc, Records};
use super::{connect, runtime, Context, RealError};
use crate::recording::{epoch_ms, Recording};
use crate::sql;
use leaselab_model::names::defaults;
use leaselab_model::{Op, Outcome, PartRow, Token};
use std::io::{BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

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
