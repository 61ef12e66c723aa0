//! `leaselab diff`: traces or simulation seeds against the model and PostgreSQL.

use leaselab_model::trace::Trace;
use leaselab_model::FenceMode;
use leaselab_pg::{diff, PgBackend};
use leaselab_sim::{run_seed, Driver, SimOptions};
use std::path::{Path, PathBuf};

/// Runs the diffs; `Ok(true)` when every one agreed.
pub fn run(
    files: &[PathBuf],
    sim_seeds: Option<&str>,
    fence: FenceMode,
    safety_ms: u64,
    liveness_ms: u64,
    model_fence: Option<FenceMode>,
    pg_dir: &Path,
) -> Result<bool, String> {
    if files.is_empty() && sim_seeds.is_none() {
        return Err("give trace files or --sim-seeds A..B".into());
    }
    let mut traces: Vec<(String, Trace)> = Vec::new();
    for f in files {
        let text =
            std::fs::read_to_string(f).map_err(|e| format!("{}: cannot read: {e}", f.display()))?;
        let t = Trace::parse(&text, &f.display().to_string()).map_err(|e| e.to_string())?;
        traces.push((f.display().to_string(), t));
    }
    if let Some(r) = sim_seeds {
        let (a, b) = crate::sim_cmd::parse_range(r)?;
        let opts = SimOptions {
            fence,
            safety_ms,
            liveness_ms,
            ..SimOptions::default()
        };
        for seed in a..b {
            traces.push((
                format!("sim seed {seed}"),
                run_seed(seed, &opts, Driver::Fast).trace,
            ));
        }
    }
    let mut pg = PgBackend::throwaway(pg_dir).map_err(|e| e.to_string())?;
    let (mut ok, mut bad) = (0, 0);
    for (name, t) in &traces {
        let model_cfg = model_fence.map(|f| leaselab_model::Config {
            fence: f,
            ..t.config.clone()
        });
        let r = diff(&mut pg, t, model_cfg.as_ref()).map_err(|e| format!("{name}: {e}"))?;
        println!("DIFF {name} :: {}", r.describe());
        if r.ok() {
            ok += 1;
        } else {
            bad += 1;
        }
    }
    println!("SUMMARY diffed={} divergences={bad}", ok + bad);
    Ok(bad == 0)
}
