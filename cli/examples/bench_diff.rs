//! The generative differential's speed next to its floor, measured in one run:
//!
//! 1. `diff --gen`: generated schedules run in lockstep on PostgreSQL and the model (every
//!    allowed world), with blocked-statement detection and the final-state comparison;
//! 2. the same schedules' operations on PostgreSQL alone, through the same adapter (sessions,
//!    virtual clock, blocked detection, resets, crashes), without the model: what the
//!    differential costs beyond the database side;
//! 3. the floor: the same prepared statements of the source design (acquire, renew, release,
//!    `BEGIN` / fence / upsert / `COMMIT`, publish, a floor read), in a loop on one connection
//!    per database, nothing else — what PostgreSQL itself costs per statement here.
//!
//! `cargo run --release -p leaselab --example bench_diff [SCHEDULES]` (default 300).

use leaselab::diff_cmd::run_gen;
use leaselab::gen_search::plan;
use leaselab_model::DbName;
use leaselab_pg::{sql, PgBackend};
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: u32 = std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(300);
    let dir = std::path::PathBuf::from("target/bench-pg");
    let mut pg = PgBackend::throwaway(&dir)?;
    let out = std::env::temp_dir().join("leaselab-bench-gen");
    let rounds = 3;
    for round in 1..=rounds {
        let t = Instant::now();
        let r = run_gen(std::slice::from_mut(&mut pg), plan(n, 1), None, &out, false)?;
        let secs = t.elapsed().as_secs_f64();
        let diff_steps = r.steps as f64 / secs;
        let (alone_steps, alone_secs) = pg_alone(&mut pg, n)?;
        let raw = raw_rate(&pg, 3_000)?;
        println!(
            "round {round}: diff --gen: {} schedules, {} steps in {secs:.2} s = {:.1} schedules/s, {diff_steps:.0} steps/s | PostgreSQL alone (same operations, same adapter): {:.0} steps/s | raw prepared statements, one connection: {raw:.0}/s | diff / alone {:.2}, diff / raw {:.3}",
            r.schedules,
            r.steps,
            r.schedules as f64 / secs,
            alone_steps as f64 / alone_secs,
            diff_steps / (alone_steps as f64 / alone_secs),
            diff_steps / raw
        );
        if r.divergence.is_some() {
            println!("  (a divergence was found: see {})", out.display());
        }
    }
    Ok(())
}

/// The first `n` generated schedules' operations (as the differential ran them) on PostgreSQL
/// alone: reset, every step, the final snapshot. Returns (steps, seconds).
fn pg_alone(pg: &mut PgBackend, n: u32) -> Result<(u64, f64), Box<dyn std::error::Error>> {
    let mut runs = Vec::new();
    for s in leaselab_gen::search::schedules(&plan(n, 1)) {
        let s = s?;
        let r = leaselab_pg::diff_schedule(pg, &s, None)?;
        runs.push((s.config.clone(), r.history));
    }
    let t = Instant::now();
    let mut steps = 0u64;
    for (config, history) in &runs {
        pg.reset(config)?;
        for e in &history.events {
            leaselab_model::apply_event(pg, e);
            steps += 1;
        }
        pg.snapshot()?;
    }
    Ok((steps, t.elapsed().as_secs_f64()))
}

/// Statements per second of the source design's statements on one connection per database.
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
        let acquire = l.prepare(&sql::acquire(0)).await?;
        let renew = l.prepare(&sql::renew(false)).await?;
        let release = l.prepare(sql::RELEASE).await?;
        let fence = r.prepare(sql::FENCE_SCOPE).await?;
        let upsert = r.prepare(sql::UPSERT).await?;
        let publish = r.prepare(sql::PUBLISH_KEY).await?;
        let floor = r.prepare(sql::FLOOR_READ).await?;
        r.batch_execute("INSERT INTO fence_floor VALUES ('bench', 0) ON CONFLICT DO NOTHING")
            .await?;
        let (name, holder, ttl, scope) = ("bench-lease", "bench", 1500f64, "bench");
        let t = Instant::now();
        let mut statements = 0usize;
        for i in 0..n {
            let tok = i as i64 + 1;
            match i % 6 {
                0 => {
                    l.query_opt(&acquire, &[&name, &holder, &ttl]).await?;
                }
                1 => {
                    l.query_opt(&renew, &[&ttl, &name, &holder, &1i64]).await?;
                }
                2 => {
                    l.execute(&release, &[&name, &holder, &1i64]).await?;
                }
                3 => {
                    r.batch_execute("BEGIN").await?;
                    r.execute(&fence, &[&tok, &scope]).await?;
                    r.execute(&upsert, &[&scope, &"p", &"c", &holder, &tok])
                        .await?;
                    r.batch_execute("COMMIT").await?;
                    statements += 3;
                }
                4 => {
                    r.execute(&publish, &[&"k", &"c", &holder, &tok]).await?;
                }
                _ => {
                    r.query_opt(&floor, &[&scope]).await?;
                }
            }
            statements += 1;
        }
        Ok(statements as f64 / t.elapsed().as_secs_f64())
    })
}
