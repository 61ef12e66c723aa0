//! `leaselab sim`: one seed with its timeline, or a sweep with progress, reproduce commands,
//! saved and shrunk failing traces.

use leaselab_checkers::sometimes;
use leaselab_model::trace::event_line;
use leaselab_sim::sweep::{sweep, Seeds};
use leaselab_sim::{run_seed, Driver, SimOptions, SimRun};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

/// Parses `A..B`.
pub fn parse_range(s: &str) -> Result<(u64, u64), String> {
    let (a, b) = s
        .split_once("..")
        .ok_or_else(|| format!("--seeds: expected A..B, found `{s}`"))?;
    let a: u64 = a
        .parse()
        .map_err(|_| format!("--seeds: `{a}` is not a seed"))?;
    let b: u64 = b
        .parse()
        .map_err(|_| format!("--seeds: `{b}` is not a seed"))?;
    if b <= a {
        return Err(format!("--seeds: empty range {a}..{b}"));
    }
    Ok((a, b))
}

/// Parses `K/N`.
pub fn parse_shard(s: &str) -> Result<(u64, u64), String> {
    let (k, n) = s
        .split_once('/')
        .ok_or_else(|| format!("--shard: expected K/N, found `{s}`"))?;
    let k: u64 = k
        .parse()
        .map_err(|_| format!("--shard: `{k}` is not a number"))?;
    let n: u64 = n
        .parse()
        .map_err(|_| format!("--shard: `{n}` is not a number"))?;
    if n == 0 || k >= n {
        return Err(format!("--shard: need 0 <= K < N, found {k}/{n}"));
    }
    Ok((k, n))
}

/// A readable timeline of a run.
pub fn timeline(run: &SimRun) -> String {
    let mut s = String::new();
    for e in &run.trace.history.events {
        let line = event_line(e);
        let _ = writeln!(s, "  {line}");
    }
    s
}

fn verdict_lines(run: &SimRun) -> String {
    let mut s = String::new();
    if run.report.violations.is_empty() {
        let _ = writeln!(s, "safety: I1 I2 I3 acceptance final all hold");
    }
    for v in &run.report.violations {
        let _ = writeln!(s, "VIOLATION {v}");
    }
    match &run.liveness {
        Ok(()) => {
            let _ = writeln!(s, "liveness: ok");
        }
        Err(e) => {
            let _ = writeln!(s, "LIVENESS FAILED: {e}");
        }
    }
    let _ = writeln!(s, "sometimes: {}", run.report.sometimes);
    s
}

/// One seed: settings, timeline, verdict. Returns (text, failed).
pub fn one(seed: u64, opts: &SimOptions, driver: Driver, quiet: bool) -> (String, SimRun) {
    let run = run_seed(seed, opts, driver);
    let mut s = String::new();
    let _ = writeln!(s, "SEED {seed} :: {}", run.setup.command(driver));
    for l in run.setup.settings(driver) {
        let _ = writeln!(s, "  {l}");
    }
    if !quiet {
        let _ = writeln!(s, "timeline ({} events):", run.trace.history.events.len());
        s.push_str(&timeline(&run));
    }
    s.push_str(&verdict_lines(&run));
    if run.failed() {
        let _ = writeln!(s, "reproduce: {}", run.setup.command(driver));
    }
    (s, run)
}

fn save(dir: &Path, name: &str, run: &SimRun) -> Result<String, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let path = dir.join(name);
    std::fs::write(&path, run.trace.to_text())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(path.display().to_string())
}

/// A sweep. Prints progress to stderr, failures and the summary to stdout. Returns whether
/// any seed failed.
pub fn many(
    seeds: Seeds,
    opts: &SimOptions,
    driver: Driver,
    out: &Path,
    shrink: bool,
    jobs: usize,
) -> Result<bool, String> {
    let mut last_pct = u64::MAX;
    let mut progress = |done: u64, total: u64, failing: usize| {
        let pct = done * 100 / total.max(1);
        if pct / 5 != last_pct / 5 || done == total {
            last_pct = pct;
            let bar: String = (0..20)
                .map(|i| if i < pct / 5 { '#' } else { '.' })
                .collect();
            eprint!("\r[{bar}] {done}/{total} seeds, {failing} failing ");
            let _ = std::io::stderr().flush();
        }
    };
    let res = sweep(seeds, opts, driver, shrink, jobs, &mut progress);
    eprintln!();
    for f in &res.failures {
        let r = &f.run;
        let first = r
            .report
            .violations
            .first()
            .map(|v| v.to_string())
            .or_else(|| {
                r.liveness
                    .as_ref()
                    .err()
                    .map(|e| format!("liveness failed: {e}"))
            })
            .unwrap_or_default();
        println!("FAIL seed={} {first}", r.setup.seed);
        println!("  reproduce: {}", r.setup.command(driver));
        let p = save(out, &format!("seed-{}.trace", r.setup.seed), r)?;
        println!(
            "  trace: {p} ({} steps, {} faults)",
            r.trace.history.events.len(),
            r.setup.plan.faults.len()
        );
        if let Some(s) = &f.shrunk {
            let p = save(out, &format!("seed-{}.shrunk.trace", r.setup.seed), s)?;
            println!(
                "  shrunk: {p} ({} steps, {} faults: {})",
                s.trace.history.events.len(),
                s.setup.plan.faults.len(),
                s.setup
                    .plan
                    .faults
                    .iter()
                    .map(|f| f.line(&s.setup.names()))
                    .collect::<Vec<_>>()
                    .join("; ")
            );
        }
    }
    println!(
        "SUMMARY seeds={} failed={} events={} fence={} driver={}",
        res.runs,
        res.failures.len(),
        res.events,
        opts.fence,
        driver.as_str()
    );
    let fired: Vec<String> = sometimes::ALL
        .iter()
        .map(|n| format!("{n}={}/{}", res.runs_with.get(n), res.sometimes.get(n)))
        .collect();
    println!("sometimes (runs with / total): {}", fired.join(" "));
    Ok(!res.failures.is_empty())
}
