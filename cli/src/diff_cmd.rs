//! `leaselab diff`: traces or simulation seeds against the model and PostgreSQL.

use crate::args::Exit;
use crate::error::{CliError, FileOp};
use crate::gen_search::{cut_short_note, interrupted_note, search_exit, GenRuns};
use leaselab_gen::search::Plan;
use leaselab_model::FenceMode;
use leaselab_pg::{diff_schedule, diff_with_rule, PgBackend};
use leaselab_sim::{run_seed, Driver, SimOptions};
use leaselab_trace::Trace;
use std::path::{Path, PathBuf};

/// `leaselab diff`'s arguments.
#[derive(clap::Args, Debug)]
pub struct DiffArgs {
    /// Trace files (their setups are their own: the simulation flags do not apply).
    #[arg(conflicts_with_all = sim_run_ids())]
    pub files: Vec<PathBuf>,
    /// Diff the traces of these simulation seeds, A..B, run exactly as `leaselab sim` runs
    /// them with the same flags.
    #[arg(long, value_name = "A..B", value_parser = crate::sim_cmd::parse_range)]
    pub sim_seeds: Option<(u64, u64)>,
    /// How the --sim-seeds runs are set up (the same flags as `sim`).
    #[command(flatten)]
    pub run: crate::args::RunArgs,
    /// Driver of the --sim-seeds runs.
    #[arg(long, value_enum, default_value_t = Driver::Fast)]
    pub driver: Driver,
    /// Run N generated multi-session schedules against the model and PostgreSQL; shrink
    /// the first divergence and write it as a trace (see --out). Not with trace files,
    /// --sim-seeds or the simulation flags.
    /// N is 1 to 4,294,967,295.
    #[arg(long, value_name = "N", conflicts_with_all = gen_conflicts(),
          value_parser = clap::value_parser!(u32).range(1..))]
    pub gen: Option<u32>,
    /// Seed of the generated schedules (same seed, same schedules; --gen only) [default: 1]
    #[arg(long, requires = "gen", conflicts_with_all = ["files", "sim_seeds"])]
    pub seed: Option<u64>,
    /// Most intents per generated schedule, 1 to 1,000 (--gen only) [default: 40]
    #[arg(long, requires = "gen", conflicts_with_all = ["files", "sim_seeds"],
          value_parser = clap::value_parser!(u64).range(1..=crate::args::MAX_STEPS))]
    pub steps: Option<u64>,
    /// Schedules run at once (--gen), each on its own throwaway databases: 1 to 16
    /// [default: the machine's cores, at most 4]. The schedules drawn, the first divergence
    /// found and its shrinking are the same for every value; only the time differs.
    #[arg(long, value_name = "J", requires = "gen",
          value_parser = clap::value_parser!(u64).range(1..=16))]
    pub jobs: Option<u64>,
    /// Negative control: run the model with a deliberately wrong rule.
    #[arg(long, value_enum, value_name = "RULE")]
    pub wrong_rule: Option<leaselab_model::model::WrongRule>,
    /// Where diverging runs are written (a shrunk --gen schedule, a --sim-seeds trace).
    #[arg(long, default_value = "diff-failures", value_name = "DIR")]
    pub out: PathBuf,
    /// Run the model side with this fence instead of the trace's (a deliberately wrong rule).
    #[arg(long, value_enum)]
    pub model_fence: Option<FenceMode>,
    /// Run once more the generated schedule a `--gen` search saved in this trace (its
    /// `setup` lines: the same intents, the client deciding again on what PostgreSQL answers),
    /// against the model (with --wrong-rule, if given) and PostgreSQL, and say whether each
    /// step answered as recorded.
    #[arg(long, value_name = "FILE",
          conflicts_with_all = ["files", "sim_seeds", "gen", "seed", "steps", "model_fence"])]
    pub replay: Option<PathBuf>,
    /// Where the throwaway clusters live.
    #[arg(long, default_value = "target/leaselab-pg", value_name = "DIR")]
    pub pg_dir: PathBuf,
    /// Which of the drawn schedules to run (--gen).
    #[command(flatten)]
    pub share: crate::gen_search::ShareArgs,
}

/// The flags that set up a simulated run (`diff --sim-seeds`): meaningless for trace files,
/// which carry their own setup, and for generated schedules.
fn sim_run_ids() -> Vec<&'static str> {
    let mut ids = crate::args::RunArgs::IDS.to_vec();
    ids.push("driver");
    ids
}

/// What `diff --gen` does not go with: it generates its own schedules.
fn gen_conflicts() -> Vec<&'static str> {
    let mut ids = sim_run_ids();
    ids.extend(["files", "sim_seeds", "model_fence"]);
    ids
}

/// `leaselab diff`: generated schedules, or trace files and simulation seeds.
pub fn main(a: DiffArgs) -> Exit {
    if let Some(file) = &a.replay {
        return match replay_cmd(file, a.wrong_rule, &a.pg_dir) {
            Ok(e) => e,
            Err(e) => {
                eprintln!("leaselab diff: {e}");
                Exit::Usage
            }
        };
    }
    let r = match a.gen {
        Some(n) => run_gen_cmd(
            Plan {
                steps: crate::gen_search::steps(a.steps.unwrap_or(40)),
                share: a.share.share(),
                ..crate::gen_search::plan(n, a.seed.unwrap_or(1))
            },
            a.jobs
                .map_or_else(crate::workers::default_jobs, |j| j as usize),
            a.wrong_rule,
            &a.out,
            &a.pg_dir,
        ),
        None => a.run.options().and_then(|opts| {
            run(
                &a.files,
                a.sim_seeds.map(|(x, y)| (x, y, opts, a.driver)),
                ModelSide {
                    fence: a.model_fence,
                    wrong: a.wrong_rule,
                },
                &a.out,
                &a.pg_dir,
            )
        }),
    };
    match r {
        Ok(e) => e,
        Err(e) => {
            eprintln!("leaselab diff: {e}");
            Exit::Usage
        }
    }
}

/// Deliberately wrong rules for the model side only: how a diff is shown to catch them.
#[derive(Clone, Copy, Debug, Default)]
pub struct ModelSide {
    /// Run the model with this fence instead of the trace's.
    pub fence: Option<FenceMode>,
    /// Run the model with this wrong database rule.
    pub wrong: Option<leaselab_model::model::WrongRule>,
}

/// Simulation seeds to diff: `start..end`, run exactly as `leaselab sim` runs them.
pub type SimSeeds = (u64, u64, SimOptions, Driver);

/// Runs the diffs: `Exit::Clean` when every one agreed, `Exit::Divergence` when one did not,
/// `Exit::Interrupted` when Ctrl-C or SIGTERM stopped it after the running one (the rest are
/// named by a resume command). A diverging simulation seed's trace is written to `out` and
/// printed with the command that diffs it again and the one that shows its timeline. The
/// seeds are run one at a time, each just before its diff.
pub fn run(
    files: &[PathBuf],
    sim_seeds: Option<SimSeeds>,
    model: ModelSide,
    out: &Path,
    pg_dir: &Path,
) -> Result<crate::args::Exit, CliError> {
    let ModelSide {
        fence: model_fence,
        wrong,
    } = model;
    if files.is_empty() && sim_seeds.is_none() {
        return Err(CliError::Input(
            "give trace files or --sim-seeds A..B".into(),
        ));
    }
    // (name, trace, the sim command of a seed's run)
    let mut traces: Vec<(String, Trace, Option<String>)> = Vec::new();
    for f in files {
        let t = Trace::read(f)?;
        traces.push((f.display().to_string(), t, None));
    }
    let seeds = sim_seeds.as_ref().map_or(0..0, |(a, b, _, _)| *a..*b);
    let mut flags = String::new();
    if let Some(f) = model_fence {
        flags.push_str(&format!(" --model-fence {f}"));
    }
    if let Some(w) = wrong {
        flags.push_str(&format!(" --wrong-rule {}", w.as_str()));
    }
    let mut pg = PgBackend::throwaway(pg_dir)?;
    let (mut ok, mut bad) = (0, 0);
    let total = traces.len() as u64 + (seeds.end - seeds.start);
    let items = traces
        .into_iter()
        .map(Some)
        .chain(seeds.clone().map(|_| None));
    let mut next_seed = seeds.start;
    let mut interrupted = false;
    let mut progress = crate::progress::Progress::always();
    let mut steps = 0u64;
    for item in items {
        progress.show(
            (ok + bad) as u64,
            total,
            "runs",
            &format!("{steps} steps, {bad} divergences"),
        );
        if crate::interrupt::requested() {
            interrupted = true;
            break;
        }
        let (name, t, sim_cmd) = match (item, &sim_seeds) {
            (Some(file), _) => file,
            (None, Some((_, _, opts, driver))) => {
                let run = run_seed(next_seed, opts, *driver);
                next_seed += 1;
                let cmd = run.setup.command(*driver);
                (format!("sim seed {}", next_seed - 1), run.trace, cmd)
            }
            (None, None) => break,
        };
        let model_cfg = model_fence.map(|f| leaselab_model::Config {
            fence: f,
            ..t.config.clone()
        });
        let r = diff_with_rule(&mut pg, &t, model_cfg.as_ref(), wrong).map_err(|source| {
            CliError::PostgresOn {
                what: name.clone(),
                source,
            }
        })?;
        println!("DIFF {name} :: {}", r.describe());
        steps += r.steps as u64;
        if r.ok() {
            ok += 1;
            continue;
        }
        bad += 1;
        match sim_cmd {
            Some(cmd) => {
                std::fs::create_dir_all(out).map_err(CliError::file(FileOp::Create, out))?;
                let p = out.join(format!("sim-seed-{}.trace", t.seed));
                t.save(&p)?;
                println!("  trace: {}", p.display());
                let again = format!("leaselab diff {}{flags}", p.display());
                println!("    reproduce: {again}");
                println!("    timeline: {cmd}");
                crate::summary::failure(&r.describe(), Some(&p), Some(&again), Some(t.seed));
            }
            None => {
                let again = format!("leaselab diff {name}{flags}");
                println!("  reproduce: {again}");
                crate::summary::failure(&r.describe(), Some(Path::new(&name)), Some(&again), None);
            }
        }
    }
    progress.show(
        (ok + bad) as u64,
        total,
        "runs",
        &format!("{steps} steps, {bad} divergences"),
    );
    progress.finish();
    crate::summary::count("diffed", (ok + bad) as u64);
    crate::summary::count("divergences", bad as u64);
    if interrupted {
        println!(
            "SUMMARY diffed={} of {total} divergences={bad} interrupted",
            ok + bad
        );
        match &sim_seeds {
            Some((_, end, opts, driver)) if next_seed < *end => {
                let again = format!(
                    "leaselab diff --sim-seeds {next_seed}..{end} {}{flags} --out {}",
                    opts.flags(*driver),
                    out.display()
                );
                println!("resume: {again}");
                crate::summary::resume(&again);
            }
            _ => {}
        }
        return Ok(Exit::Interrupted);
    }
    println!("SUMMARY diffed={} divergences={bad}", ok + bad);
    Ok(if bad == 0 {
        Exit::Clean
    } else {
        Exit::Divergence
    })
}

/// What `diff --gen` found.
pub struct GenOutcome {
    /// Schedules run (the shrinking runs not counted).
    pub schedules: u64,
    /// Steps run on both sides.
    pub steps: u64,
    /// Runs spent shrinking the divergence.
    pub shrink_runs: u64,
    /// The shrunk divergence: its trace file and description.
    pub divergence: Option<(PathBuf, String)>,
    /// Ctrl-C or SIGTERM stopped the search after `schedules` schedules.
    pub interrupted: bool,
    /// The interrupt stopped the shrinking of the divergence: a smaller one may exist.
    pub shrink_cut_short: bool,
    /// Where an interrupted search goes on ([`GenRuns::resume_at`]).
    pub resume_at: u64,
}

/// Runs the search's generated schedules against the model (with `wrong`, if given) and PostgreSQL;
/// shrinks the first divergence, writes it to `out/gen-<seed>.trace`.
pub fn run_gen(
    pgs: &mut [PgBackend],
    plan: Plan,
    wrong: Option<leaselab_model::model::WrongRule>,
    out: &Path,
    progress: bool,
) -> Result<GenOutcome, CliError> {
    let seed = plan.seed;
    let mut counts = GenRuns::new(
        plan.share.count(u64::from(plan.schedules)),
        "divergence",
        progress,
    );
    let result = leaselab_gen::search::search(
        pgs,
        &plan,
        |pg, s| {
            // Interrupted: the remaining schedules are not run, and this one is no pass.
            if crate::interrupt::requested() {
                return Ok(leaselab_gen::search::Case::interrupted());
            }
            leaselab_pg::diff::judge_schedule(pg, s, wrong)
        },
        |phase, case| {
            counts.observe(phase, case);
        },
        crate::interrupt::requested,
    );
    counts.finish();
    let runs = counts;
    let resume_at = runs.resume_at(plan.share);
    let found = crate::workers::settled(result)?;
    let shrink_cut_short = found.as_ref().is_some_and(|f| f.cut_short);
    let divergence = match found {
        None => None,
        Some(f) => {
            let file = leaselab_pg::diff::save_found(&f, seed, out)?;
            Some((file, f.failure.what))
        }
    };
    Ok(GenOutcome {
        schedules: runs.schedules,
        steps: runs.steps,
        shrink_runs: runs.shrink_runs,
        divergence,
        interrupted: crate::interrupt::requested(),
        shrink_cut_short,
        resume_at,
    })
}

/// `leaselab diff --gen N`: prints the figures and the reproduce command of a divergence.
pub fn run_gen_cmd(
    plan: Plan,
    jobs: usize,
    wrong: Option<leaselab_model::model::WrongRule>,
    out: &Path,
    pg_dir: &Path,
) -> Result<crate::args::Exit, CliError> {
    let (n, seed) = (plan.schedules, plan.seed);
    let pg = PgBackend::throwaway(pg_dir)?;
    let mut pgs = vec![pg];
    pgs.extend(crate::workers::start_more(
        pg_dir,
        jobs,
        PgBackend::throwaway,
    )?);
    let t0 = std::time::Instant::now();
    let r = run_gen(&mut pgs, plan, wrong, out, true)?;
    let secs = t0.elapsed().as_secs_f64().max(1e-9);
    if let Some((file, what)) = &r.divergence {
        println!(
            "DIVERGENCE (shrunk{}) :: {what}",
            cut_short_note(r.shrink_cut_short)
        );
        println!("trace: {}", file.display());
        let again = match wrong {
            Some(w) => format!(
                "leaselab diff {} --wrong-rule {}",
                file.display(),
                w.as_str()
            ),
            None => format!("leaselab diff {}", file.display()),
        };
        println!("reproduce: {again}");
        let wrong_arg = wrong.map_or(String::new(), |w| format!(" --wrong-rule {}", w.as_str()));
        println!(
            "schedule: leaselab diff --replay {}{wrong_arg} --pg-dir {}",
            file.display(),
            pg_dir.display()
        );
        crate::summary::failure(what, Some(file), Some(&again), None);
    }
    crate::summary::count("schedules", r.schedules);
    crate::summary::count("steps", r.steps);
    crate::summary::count("divergences", u64::from(r.divergence.is_some()));
    crate::summary::count("shrink_runs", r.shrink_runs);
    println!(
        "SUMMARY generated={} steps={} divergences={} shrink_runs={} schedules/s={:.1} steps/s={:.0}{}{}",
        r.schedules,
        r.steps,
        usize::from(r.divergence.is_some()),
        r.shrink_runs,
        r.schedules as f64 / secs,
        r.steps as f64 / secs,
        crate::gen_search::share_note(plan.share),
        interrupted_note(r.interrupted, n)
    );
    if r.interrupted && r.divergence.is_none() {
        let wrong_arg = wrong.map_or(String::new(), |w| format!(" --wrong-rule {}", w.as_str()));
        let again = format!(
            "leaselab diff --gen {n} --seed {seed} --steps {}{wrong_arg} --jobs {jobs} --out {} --pg-dir {}",
            plan.steps,
            out.display(),
            pg_dir.display()
        );
        if let Some(line) = crate::gen_search::resume_line(&again, &plan, r.resume_at) {
            println!("{line}");
        }
    }
    Ok(search_exit(
        r.divergence.is_some(),
        Exit::Divergence,
        r.interrupted,
    ))
}

/// `leaselab diff --replay FILE`: the schedule a `--gen` search saved in FILE, run once more on
/// the model and PostgreSQL. Exit 4 when they diverge, as the search's run did.
pub fn replay_cmd(
    trace_file: &Path,
    wrong: Option<leaselab_model::model::WrongRule>,
    pg_dir: &Path,
) -> Result<Exit, CliError> {
    let (t, schedule) = crate::schedule_file::read(trace_file, "diff --gen")?;
    let mut pg = PgBackend::throwaway(pg_dir)?;
    let r = diff_schedule(&mut pg, &schedule, wrong)?;
    let same = crate::schedule_file::compare(&t.history.events, &r.history.events);
    let verdict = if r.report.ok() { "AGREE" } else { "DIVERGENCE" };
    println!(
        "{verdict} :: replayed {} ({} intents): {same}",
        trace_file.display(),
        schedule.intents.len()
    );
    if !r.report.ok() {
        println!("  {}", r.report.describe().replace('\n', "\n  "));
    }
    Ok(if r.report.ok() {
        Exit::Clean
    } else {
        Exit::Divergence
    })
}
