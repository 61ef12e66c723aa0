//! `leaselab`: run the lab cases, replay traces.

use clap::{Parser, Subcommand};
use leaselab::{lab, replay};
use leaselab_model::FenceMode;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "leaselab",
    about = "Leases with fencing tokens: prove, break and teach",
    version
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run the cases F1–F9 and G1–G4 on the in-memory model.
    Lab {
        /// Run one case only (e.g. F4).
        #[arg(long)]
        case: Option<String>,
        /// Replace the scope fence in the cases that use it: scope, strict, scope-upsert, row, check-then-write, off.
        #[arg(long)]
        fence: Option<FenceMode>,
        /// Write each run's trace to DIR/<name>.trace.
        #[arg(long, value_name = "DIR")]
        trace_out: Option<PathBuf>,
        /// Print table 26-1 from the outcomes this run observed.
        #[arg(long)]
        table: bool,
        /// Where the cases run: model (in memory) or pg (PostgreSQL with the source SQL, two
        /// throwaway clusters).
        #[arg(long, default_value = "model")]
        backend: String,
        /// Where the throwaway clusters live (`--backend pg`).
        #[arg(long, default_value = "target/leaselab-pg", value_name = "DIR")]
        pg_dir: PathBuf,
        /// Also run the cases beyond the sources (X1–X3).
        #[arg(long)]
        beyond: bool,
    },
    /// Simulate holders and databases under seeded faults: one seed, or a sweep.
    Sim(SimArgs),
    /// Replay traces (or simulation seeds) against the model and a real PostgreSQL, step by
    /// step; report the first divergence. Starts its own throwaway clusters.
    Diff {
        /// Trace files.
        files: Vec<PathBuf>,
        /// Diff the traces of these simulation seeds, A..B (fast driver).
        #[arg(long)]
        sim_seeds: Option<String>,
        /// Fence for --sim-seeds: scope, strict, scope-upsert, row, check-then-write, off.
        #[arg(long, default_value = "scope")]
        fence: FenceMode,
        /// Safety phase length for --sim-seeds, virtual ms [default: as `sim`, 50000].
        #[arg(long)]
        safety_ms: Option<u64>,
        /// Liveness phase length for --sim-seeds, virtual ms [default: as `sim`, 10000].
        #[arg(long)]
        liveness_ms: Option<u64>,
        /// Run N generated multi-session schedules against the model and PostgreSQL; shrink
        /// the first divergence and write it as a trace (see --out).
        #[arg(long, value_name = "N")]
        gen: Option<u32>,
        /// Seed of the generated schedules (same seed, same schedules).
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Most intents per generated schedule.
        #[arg(long, default_value_t = 40)]
        steps: usize,
        /// Negative control: run the model with a deliberately wrong rule
        /// (update-waits-before-where, repeatable-read-reads-latest, disconnect-drops-waiter).
        #[arg(long, value_name = "RULE")]
        wrong_rule: Option<leaselab_model::model::WrongRule>,
        /// Where a shrunk divergence of --gen is written.
        #[arg(long, default_value = "diff-failures", value_name = "DIR")]
        out: PathBuf,
        /// Run the model side with this fence instead of the trace's (a deliberately wrong rule).
        #[arg(long)]
        model_fence: Option<FenceMode>,
        /// Where the throwaway clusters live.
        #[arg(long, default_value = "target/leaselab-pg", value_name = "DIR")]
        pg_dir: PathBuf,
    },
    /// One holder process of the real-time F4/F5 experiment (started by `lab --backend pg`).
    #[command(hide = true)]
    Holder {
        /// a or b.
        #[arg(long)]
        role: String,
        /// Holder name.
        #[arg(long)]
        name: String,
        /// lease26 connection string.
        #[arg(long)]
        lease: String,
        /// res26 connection string.
        #[arg(long)]
        res: String,
        /// scope or off.
        #[arg(long, default_value = "scope")]
        fence: String,
        /// TTL.
        #[arg(long, default_value_t = 1500)]
        ttl_ms: u64,
        /// Renew period.
        #[arg(long, default_value_t = 400)]
        renew_ms: u64,
        /// Local margin.
        #[arg(long, default_value_t = 300)]
        margin_ms: u64,
    },
    /// Re-execute traces against the model; non-zero exit on a divergence or unexpected verdict.
    Replay {
        /// Trace files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Lab {
            case,
            fence,
            trace_out,
            table,
            backend,
            pg_dir,
            beyond,
        } => {
            let pg = match backend.as_str() {
                "model" => None,
                "pg" => match leaselab_pg::PgBackend::throwaway(&pg_dir) {
                    Ok(p) => Some(p),
                    Err(e) => {
                        eprintln!("leaselab lab: {e}");
                        return ExitCode::from(2);
                    }
                },
                other => {
                    eprintln!("leaselab lab: --backend: expected model or pg, found `{other}`");
                    return ExitCode::from(2);
                }
            };
            run_lab(case.as_deref(), beyond, fence, trace_out, table, pg)
        }
        Cmd::Replay { files } => run_replay(&files),
        Cmd::Holder {
            role,
            name,
            lease,
            res,
            fence,
            ttl_ms,
            renew_ms,
            margin_ms,
        } => {
            let a = leaselab_pg::real::HolderArgs {
                role,
                name,
                lease,
                res,
                fenced: fence != "off",
                ttl_ms,
                renew_ms,
                margin_ms,
            };
            match leaselab_pg::real::holder_main(&a) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("leaselab holder: {e}");
                    ExitCode::from(2)
                }
            }
        }
        Cmd::Diff {
            files,
            sim_seeds,
            fence,
            safety_ms,
            liveness_ms,
            model_fence,
            pg_dir,
            gen,
            seed,
            steps,
            out,
            wrong_rule,
        } => {
            let d = leaselab_sim::SimOptions::default();
            let r = match gen {
                Some(n) => {
                    leaselab::diff_cmd::run_gen_cmd(n, seed, steps, wrong_rule, &out, &pg_dir)
                }
                None => leaselab::diff_cmd::run(
                    &files,
                    sim_seeds.as_deref(),
                    fence,
                    safety_ms.unwrap_or(d.safety_ms),
                    liveness_ms.unwrap_or(d.liveness_ms),
                    leaselab::diff_cmd::ModelSide {
                        fence: model_fence,
                        wrong: wrong_rule,
                    },
                    &pg_dir,
                ),
            };
            match r {
                Ok(true) => ExitCode::SUCCESS,
                Ok(false) => ExitCode::from(4),
                Err(e) => {
                    eprintln!("leaselab diff: {e}");
                    ExitCode::from(2)
                }
            }
        }
        Cmd::Sim(args) => match run_sim(args) {
            Ok(true) => ExitCode::FAILURE,
            Ok(false) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("leaselab sim: {e}");
                ExitCode::from(2)
            }
        },
    }
}

fn run_lab(
    case: Option<&str>,
    beyond: bool,
    fence: Option<FenceMode>,
    out: Option<PathBuf>,
    table: bool,
    pg: Option<leaselab_pg::PgBackend>,
) -> ExitCode {
    if pg.is_some() {
        println!("BACKEND postgres: the source SQL on two throwaway clusters (lease26, res26), virtual now()\n");
    }
    let exe = std::env::current_exe().ok();
    let res = match lab::run_select(case, beyond, fence, pg, exe) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("leaselab lab: {e}");
            return ExitCode::from(2);
        }
    };
    print!("{}", res.text);
    if table {
        println!();
        print!("{}", lab::table::render(&res.observed));
    }
    if let Some(dir) = out {
        if let Err(e) = std::fs::create_dir_all(&dir) {
            eprintln!("leaselab lab: cannot create {}: {e}", dir.display());
            return ExitCode::from(2);
        }
        for r in &res.runs {
            let path = dir.join(format!("{}.trace", r.trace.name));
            if let Err(e) = std::fs::write(&path, r.trace.to_text()) {
                eprintln!("leaselab lab: cannot write {}: {e}", path.display());
                return ExitCode::from(2);
            }
        }
        println!("wrote {} traces to {}", res.runs.len(), dir.display());
    }
    if res.failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn run_replay(files: &[PathBuf]) -> ExitCode {
    let (mut ok, mut bad) = (0, 0);
    for f in files {
        match replay::replay_file(f) {
            Ok(r) => {
                println!("REPLAY {} :: {}", f.display(), r.describe());
                if r.ok() {
                    ok += 1;
                } else {
                    bad += 1;
                }
            }
            Err(e) => {
                println!("REPLAY {} :: ERROR {e}", f.display());
                bad += 1;
            }
        }
    }
    println!("SUMMARY replayed={ok} failed={bad}");
    if bad == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

#[derive(clap::Args)]
struct SimArgs {
    /// Run one seed and print its timeline.
    #[arg(long, conflicts_with = "seeds")]
    seed: Option<u64>,
    /// Sweep a range of seeds, A..B.
    #[arg(long)]
    seeds: Option<String>,
    /// Run every N-th seed from K (K/N), so a sweep splits across machines.
    #[arg(long, default_value = "0/1")]
    shard: String,
    /// The resource's fence: scope, strict, scope-upsert, row, check-then-write, off.
    #[arg(long, default_value = "scope")]
    fence: FenceMode,
    /// Number of holders.
    #[arg(long, default_value_t = 2)]
    holders: usize,
    /// Fault kinds the swarm may use: all, none, or a comma list of pause, pause-time, partition, delay, skew, step, crash.
    #[arg(long, default_value = "all")]
    faults: String,
    /// Lease table durability: logged or unlogged (the I2 negative control).
    #[arg(long, default_value = "logged")]
    lease_table: leaselab_model::LeaseDurability,
    /// Safety phase length (faults active), virtual ms.
    #[arg(long)]
    safety_ms: Option<u64>,
    /// Liveness phase length after healing, virtual ms (0: no liveness check).
    #[arg(long)]
    liveness_ms: Option<u64>,
    /// fast (discrete-event) or turmoil.
    #[arg(long, default_value = "fast")]
    driver: String,
    /// turmoil tick in ms (turmoil driver only).
    #[arg(long, default_value_t = 1)]
    tick_ms: u64,
    /// Write the single run's trace to FILE.
    #[arg(long, value_name = "FILE")]
    trace_out: Option<PathBuf>,
    /// Folder for failing traces of a sweep.
    #[arg(long, default_value = "sim-failures", value_name = "DIR")]
    out: PathBuf,
    /// Do not shrink failing seeds.
    #[arg(long)]
    no_shrink: bool,
    /// Single seed: print settings and verdict only, no timeline.
    #[arg(long)]
    quiet: bool,
    /// Worker threads for a sweep [default: one per core]. The result and the saved traces
    /// are the same for any number; only the wall time changes.
    #[arg(long)]
    jobs: Option<usize>,
}

/// Returns whether a check failed.
fn run_sim(a: SimArgs) -> Result<bool, String> {
    use leaselab_sim::{Driver, FaultKind, SimOptions};
    let driver = match a.driver.as_str() {
        "fast" => Driver::Fast,
        "turmoil" => Driver::Turmoil,
        other => {
            return Err(format!(
                "--driver: expected fast or turmoil, found `{other}`"
            ))
        }
    };
    if a.holders == 0 || a.holders > 26 {
        return Err(format!("--holders: expected 1..=26, found {}", a.holders));
    }
    let d = SimOptions::default();
    let opts = SimOptions {
        fence: a.fence,
        lease_table: a.lease_table,
        holders: a.holders,
        faults: FaultKind::parse_list(&a.faults)?,
        safety_ms: a.safety_ms.unwrap_or(d.safety_ms),
        liveness_ms: a.liveness_ms.unwrap_or(d.liveness_ms),
        tick_ms: a.tick_ms.max(1),
        ..d
    };
    let shard = leaselab::sim_cmd::parse_shard(&a.shard)?;
    match (a.seed, a.seeds) {
        (Some(seed), _) => {
            let (text, run) = leaselab::sim_cmd::one(seed, &opts, driver, a.quiet);
            print!("{text}");
            if let Some(f) = a.trace_out {
                std::fs::write(&f, run.trace.to_text())
                    .map_err(|e| format!("cannot write {}: {e}", f.display()))?;
                println!("trace: {}", f.display());
            }
            Ok(run.failed())
        }
        (None, Some(r)) => {
            let (start, end) = leaselab::sim_cmd::parse_range(&r)?;
            let seeds = leaselab_sim::sweep::Seeds { start, end, shard };
            let jobs = a.jobs.unwrap_or_else(leaselab_sim::sweep::default_jobs);
            if jobs == 0 {
                return Err("--jobs: expected at least 1, found 0".into());
            }
            leaselab::sim_cmd::many(seeds, &opts, driver, &a.out, !a.no_shrink, jobs)
        }
        (None, None) => Err("give --seed N or --seeds A..B".into()),
    }
}
