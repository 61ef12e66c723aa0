//! What an audit step spends, measured in one run on `examples/leases/seed.toml`:
//!
//! 1. `audit --gen N`: generated schedules of whole operations on the spec (pauses, waits,
//!    disconnects, crashes), with the counts a schedule implies — resets, sessions opened,
//!    crash-restarts, steps;
//! 2. each part alone, on the same backend: a reset; opening a session (the first statement
//!    on a new connection: a backend fork and the spec's `PREPARE`s); a crash and restart of
//!    one database; a step on a warm session through the adapter (the virtual clock set, the
//!    statement, the lock-wait question); the lock-wait question alone; and the floor — the
//!    spec's statements prepared on one connection, in a loop, nothing else;
//! 3. the run's time rebuilt from the parts, so the share of each shows, next to the floor;
//! 4. the same audit on two workers (`audit --jobs 2`).
//!
//! `cargo run --release -p leaselab --example bench_audit [SCHEDULES]` (default 300).

use leaselab::audit_cmd::run_gen;
use leaselab::audit_spec::load;
use leaselab::gen_search::plan;
use leaselab_model::{apply_event, ConnId, DbName, Event, Holder, LeaseName, Millis, Op, Outcome};
use leaselab_pg::audit::Audit;
use leaselab_pg::PgBackend;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: u32 = std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(300);
    let spec_file =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/leases/seed.toml");
    let mut audit = load(&spec_file, std::path::Path::new("target/bench-audit"))?;
    let out = std::env::temp_dir().join("leaselab-bench-audit");

    // 1. The audit, and what its schedules did.
    let t = Instant::now();
    let r = run_gen(&mut audit, plan(n, 1), &out, false)?;
    let audit_s = t.elapsed().as_secs_f64();
    let (sessions, crashes) = counts(&mut audit, n)?;
    let pg = audit.first_backend().ok_or("the audit's backend is lent")?;

    // 2. Each part alone.
    let reset_ms = per_ms(30, || {
        pg.reset(&leaselab_model::Config::default()).map(|_| ())
    })?;
    pg.reset(&leaselab_model::Config::default())?;
    let mut i = 0u64;
    let connect_ms = per_ms(60, || {
        i += 1;
        // A new connection each time: its first statement opens the session.
        step(pg, &format!("fresh-{i}"), i);
        Ok(())
    })? - per_ms(60, || {
        i += 1;
        step(pg, "warm", i);
        Ok(())
    })?;
    pg.reset(&leaselab_model::Config::default())?;
    let mut k = 0u64;
    let warm_ms = per_ms(600, || {
        k += 1;
        step(pg, "warm", k);
        Ok(())
    })?;
    let crash_ms = per_ms(6, || {
        for op in [
            Op::Crash { db: DbName::Res },
            Op::Restart { db: DbName::Res },
        ] {
            apply_event(pg, &event("admin", "admin", 0, op));
        }
        Ok(())
    })?;
    let probe_ms = 1e3 / probe_rate(pg, 2_000)?;
    let raw = raw_rate(pg, 3_000)?;

    // 3. The run rebuilt from its parts.
    let steps = r.steps as f64;
    let parts = [
        ("resets", r.schedules as f64 * reset_ms),
        ("sessions opened", sessions as f64 * connect_ms.max(0.0)),
        ("crash-restarts", crashes as f64 * crash_ms),
        ("steps on warm sessions", steps * warm_ms),
    ];
    let rebuilt: f64 = parts.iter().map(|(_, ms)| ms).sum::<f64>() / 1e3;
    println!(
        "audit --gen {n} on seed.toml: {} schedules (shrinking included), {} steps in {audit_s:.1} s = {:.0} steps/s",
        r.schedules,
        r.steps,
        steps / audit_s
    );
    println!(
        "per part: reset {reset_ms:.1} ms | session opened {connect_ms:.2} ms | crash+restart {crash_ms:.0} ms | warm step {warm_ms:.2} ms ({:.0}/s) | lock-wait question {probe_ms:.2} ms | floor: raw prepared statements on one connection {raw:.0}/s",
        1e3 / warm_ms
    );
    println!(
        "counts: {} resets, {sessions} sessions opened, {crashes} crash-restarts, {} steps",
        r.schedules, r.steps
    );
    for (what, ms) in parts {
        println!(
            "  {what:<24} {:>7.1} s  {:>4.0}%",
            ms / 1e3,
            100.0 * ms / 1e3 / rebuilt
        );
    }
    println!(
        "rebuilt {rebuilt:.1} s of the measured {audit_s:.1} s; best case with no reset, session or crash: {:.0} steps/s; warm step / floor {:.3}",
        1e3 / warm_ms,
        (1e3 / warm_ms) / raw
    );

    // 4. The same audit on two workers (`audit --jobs 2`): the same schedules, side by side.
    let second = audit.start_backend(std::path::Path::new("target/bench-audit/worker-1"))?;
    audit.add_backends([second]);
    let t = Instant::now();
    let r2 = run_gen(&mut audit, plan(n, 1), &out, false)?;
    let two_s = t.elapsed().as_secs_f64();
    println!(
        "audit --gen {n} --jobs 2: {} schedules, {} steps in {two_s:.1} s = {:.1} schedules/s ({:.1} with one worker, {:.2}x)",
        r2.schedules,
        r2.steps,
        r2.schedules as f64 / two_s,
        r.schedules as f64 / audit_s,
        audit_s / two_s
    );
    Ok(())
}

/// Mean milliseconds of `f` over `n` calls.
fn per_ms(
    n: u32,
    mut f: impl FnMut() -> Result<(), leaselab_pg::PgError>,
) -> Result<f64, Box<dyn std::error::Error>> {
    let t = Instant::now();
    for _ in 0..n {
        f()?;
    }
    Ok(t.elapsed().as_secs_f64() * 1e3 / f64::from(n))
}

fn event(actor: &str, conn: &str, at: u64, op: Op) -> Event {
    Event {
        seq: 1,
        at: Millis(at),
        local: Millis(at),
        actor: Holder::new(actor),
        conn: Some(ConnId::new(conn)),
        op,
        outcome: Outcome::Ok,
    }
}

/// One acquire through the adapter on connection `conn` (a new lease name each time, so it is
/// granted and nothing waits).
fn step(pg: &mut PgBackend, conn: &str, i: u64) -> Outcome {
    let op = Op::Acquire {
        lease: LeaseName::new(format!("bench-{i}")),
        holder: Holder::new("bench"),
        ttl_ms: 1_500,
    };
    apply_event(pg, &event("bench", conn, i, op))
}

/// Sessions opened and crash-restarts in the first `n` schedules the audit ran.
fn counts(audit: &mut Audit, n: u32) -> Result<(u64, u64), Box<dyn std::error::Error>> {
    let (mut sessions, mut crashes) = (0u64, 0u64);
    for s in leaselab_gen::search::schedules(&plan(n, 1)) {
        let s = s?;
        let (h, _) = audit.run(&s)?;
        let mut seen = std::collections::BTreeSet::new();
        for e in &h.events {
            match &e.op {
                Op::Crash { .. } => crashes += 1,
                Op::Disconnect { db } => {
                    seen.remove(&(*db, e.conn_id()));
                }
                op => {
                    if let Some(db) = op.db() {
                        if seen.insert((db, e.conn_id())) {
                            sessions += 1;
                        }
                    }
                }
            }
        }
    }
    Ok((sessions, crashes))
}

/// The adapter's lock-wait question ([`PgBackend::SETTLED_BLOCKED`]) per second, on one
/// connection, about a session that does not wait (its cheapest answer).
fn probe_rate(pg: &PgBackend, n: usize) -> Result<f64, Box<dyn std::error::Error>> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let res = pg.conninfo(DbName::Res);
    rt.block_on(async move {
        let (c, conn) = tokio_postgres::connect(&res, tokio_postgres::NoTls).await?;
        tokio::spawn(conn);
        let q = c.prepare(PgBackend::SETTLED_BLOCKED).await?;
        let pid: i32 = c.query_one("SELECT pg_backend_pid()", &[]).await?.get(0);
        let others: Vec<i32> = vec![pid];
        let t = Instant::now();
        for _ in 0..n {
            c.query_one(&q, &[&pid, &others]).await?;
        }
        Ok(n as f64 / t.elapsed().as_secs_f64())
    })
}

/// The seed spec's acquire and write (fence, upsert in one transaction) prepared on one
/// connection per database, in a loop: statements per second.
fn raw_rate(pg: &PgBackend, n: usize) -> Result<f64, Box<dyn std::error::Error>> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (lease, res) = (pg.conninfo(DbName::Lease), pg.conninfo(DbName::Res));
    rt.block_on(async move {
        let (l, lc) = tokio_postgres::connect(&lease, tokio_postgres::NoTls).await?;
        tokio::spawn(lc);
        let (r, rc) = tokio_postgres::connect(&res, tokio_postgres::NoTls).await?;
        tokio::spawn(rc);
        let acquire = l
            .prepare(
                "INSERT INTO lease AS l (name, holder, token, expires_at) VALUES ($1, $2, 1, now() + make_interval(secs => $3::float8 / 1000)) ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, token = l.token + 1, expires_at = EXCLUDED.expires_at WHERE l.expires_at <= now() RETURNING l.token, l.expires_at",
            )
            .await?;
        let fence = r
            .prepare("UPDATE fence_floor SET max_token = $1 WHERE scope = $2 AND max_token <= $1")
            .await?;
        let upsert = r
            .prepare(
                "INSERT INTO report_part (scope, part, content, writer, token) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (scope, part) DO UPDATE SET content = EXCLUDED.content, writer = EXCLUDED.writer, token = EXCLUDED.token",
            )
            .await?;
        let t = Instant::now();
        let mut statements = 0usize;
        for i in 0..n {
            let tok = i as i64 + 1;
            if i % 2 == 0 {
                l.query_opt(&acquire, &[&format!("raw-{i}"), &"bench", &1500f64])
                    .await?;
                statements += 1;
            } else {
                r.batch_execute("BEGIN").await?;
                r.execute(&fence, &[&tok, &"daily-report"]).await?;
                r.execute(&upsert, &[&"daily-report", &"p", &"c", &"bench", &tok])
                    .await?;
                r.batch_execute("COMMIT").await?;
                statements += 4;
            }
        }
        Ok(statements as f64 / t.elapsed().as_secs_f64())
    })
}
