//! `leaselab audit SPEC --gen N`: generated schedules run on the user's own lease SQL on a
//! throwaway PostgreSQL; the checkers judge what PostgreSQL answered. The first violation is
//! shrunk by proptest and written as a trace, with its timeline and explanation.

use crate::args::Exit;
use crate::audit_spec::{flags, load_as, Overrides};
use crate::error::CliError;
use leaselab_checkers::Report;
use leaselab_gen::search::Plan;
use leaselab_pg::audit::Audit;
use leaselab_trace::Trace;
use std::path::{Path, PathBuf};

/// `leaselab audit`'s arguments.
#[derive(clap::Args, Debug)]
pub struct AuditArgs {
    /// The lease spec (TOML).
    pub spec: PathBuf,
    /// Run N generated schedules; shrink the first violation and write it as a trace.
    #[arg(
        long,
        value_name = "N",
        required_unless_present_any = ["sim_seeds", "replay"],
        conflicts_with_all = ["sim_seeds", "replay"],
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    pub gen: Option<u32>,
    /// Run the simulation's holders (job loop, faults, pauses, clock skew, crashes) on
    /// the spec for seeds A..B, with `sim`'s options; shrink the first failing seed.
    #[arg(long, value_name = "A..B", value_parser = crate::sim_cmd::parse_range,
          conflicts_with = "replay")]
    pub sim_seeds: Option<(u64, u64)>,
    /// Run again exactly the schedule a `--gen` search saved as FILE (its `setup` lines), on
    /// the spec given (the same one, or one you changed), and judge it.
    #[arg(long, value_name = "FILE")]
    pub replay: Option<PathBuf>,
    /// How each simulated run is set up (`--sim-seeds`; the spec decides the fence and
    /// the lease table).
    #[command(flatten)]
    pub run: crate::args::AuditSimArgs,
    /// Seed of the generated schedules (same seed, same schedules).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Most intents per generated schedule, 1 to 1,000.
    #[arg(long, default_value_t = 40,
          value_parser = clap::value_parser!(u64).range(1..=crate::args::MAX_STEPS))]
    pub steps: u64,
    /// Schedules run at once (--gen), each on its own throwaway databases: 1 to 16
    /// [default: the machine's cores, at most 4]. The schedules drawn, the first failure
    /// found and its shrinking are the same for every value; only the time differs.
    #[arg(long, value_name = "J", requires = "gen",
          value_parser = clap::value_parser!(u64).range(1..=16))]
    pub jobs: Option<u64>,
    /// The lease name the holders compete for, instead of the spec's `lease` (--gen,
    /// --replay).
    #[arg(long, value_name = "NAME", conflicts_with = "sim_seeds",
          value_parser = clap::builder::NonEmptyStringValueParser::new())]
    pub lease: Option<String>,
    /// Every lease call's TTL in milliseconds, 1 to 3,600,000, instead of the spec's `ttl_ms`
    /// (--gen, --replay) [default: the spec's, else drawn from 100, 300 and 1,500].
    #[arg(long, value_name = "MS", conflicts_with = "sim_seeds",
          value_parser = clap::value_parser!(u64).range(1..=leaselab_pg::spec::MAX_TTL_MS))]
    pub ttl_ms: Option<u64>,
    /// Holders may call the lease inside transactions they hold open on their lease
    /// connection (begin, several lease calls, other holders' steps, commit or rollback), as
    /// the spec's `lease_txn = true` says (--gen, --replay).
    #[arg(long, conflicts_with = "sim_seeds")]
    pub lease_txn: bool,
    /// On how many connections each holder calls the lease, 1 or 2, instead of the spec's
    /// `lease_conns` (--gen, --replay): with 2, a holder's acquire, renew and release go to
    /// either of its lease connections — the second in autocommit, while the first may hold a
    /// lease transaction open (with --lease-txn) [default: the spec's, else 1].
    #[arg(long, value_name = "N", conflicts_with = "sim_seeds",
          value_parser = clap::value_parser!(u8).range(1..=2))]
    pub lease_conns: Option<u8>,
    /// Where the generated holders aim (--gen, --replay): `uniform` takes the drawn intents as
    /// they are; `contention` steers half of them toward the interleavings where lease bugs
    /// live — while another holder's write or acquire is in flight, the lease lapses, is taken
    /// over, and the new holder writes or acquires too; `mixed` steers a quarter [default:
    /// mixed; for --replay, as the saved failure says].
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(leaselab_gen::Aim::ALL.map(leaselab_gen::Aim::name)), conflicts_with = "sim_seeds")]
    pub aim: Option<String>,
    /// Where a violation's trace (and its psql scripts) is written: `audit-SPEC-SEED.trace`
    /// (`audit-sim-SPEC-seed-N.trace` for --sim-seeds), with `-2`, `-3`, … added where an
    /// earlier audit's failure already has the name — nothing found before is replaced.
    #[arg(long, default_value = "audit-failures", value_name = "DIR")]
    pub out: PathBuf,
    /// Where the throwaway clusters live.
    #[arg(long, default_value = "target/leaselab-audit", value_name = "DIR")]
    pub pg_dir: PathBuf,
    /// Which of the drawn schedules to run (--gen).
    #[command(flatten)]
    pub share: crate::gen_search::ShareArgs,
}

/// `leaselab audit`: generated schedules (`--gen`) or the simulation's holders
/// (`--sim-seeds`) on the user's spec.
pub fn main(a: AuditArgs) -> Exit {
    let aim = a.aim.as_deref().and_then(leaselab_gen::Aim::named);
    let o = Overrides {
        lease: a.lease.clone(),
        ttl_ms: a.ttl_ms,
        lease_txn: a.lease_txn,
        lease_conns: a.lease_conns,
        aim: aim.unwrap_or_default(),
    };
    let r = match (a.gen, a.sim_seeds, &a.replay) {
        (Some(n), _, _) => run_gen_cmd(
            &a.spec,
            &o,
            Plan {
                steps: crate::gen_search::steps(a.steps),
                share: a.share.share(),
                ..crate::gen_search::plan(n, a.seed)
            },
            a.jobs
                .map_or_else(crate::workers::default_jobs, |j| j as usize),
            &a.out,
            &a.pg_dir,
        ),
        (None, Some(seeds), _) => a.run.options().and_then(|opts| {
            crate::audit_sim::run_seeds_cmd(&a.spec, seeds, &opts, &a.out, &a.pg_dir)
        }),
        (None, None, Some(file)) => replay_cmd(&a.spec, &o, aim, file, &a.pg_dir),
        (None, None, None) => Err(CliError::Input(
            "give --gen N, --sim-seeds A..B or --replay FILE".into(),
        )),
    };
    match r {
        Ok(e) => e,
        Err(e) => {
            eprintln!("leaselab audit: {e}");
            Exit::Usage
        }
    }
}

/// What a run found.
pub struct AuditOutcome {
    /// Schedules of the search run (the shrinking runs not counted).
    pub schedules: u64,
    /// Their steps.
    pub steps: u64,
    /// Runs spent shrinking the violation.
    pub shrink_runs: u64,
    /// The shrunk violation: its trace file and the report on it.
    pub violation: Option<(PathBuf, Report)>,
    /// The generated schedule (1-based) where the first violation showed, before shrinking.
    pub first: Option<u64>,
    /// Ctrl-C or SIGTERM stopped the search after `schedules` schedules.
    pub interrupted: bool,
    /// Waits that ran out their bound ([`Audit::waits_out_of_bound`]): 0 at full speed.
    pub waits_out_of_bound: u64,
    /// The interrupt stopped the shrinking of the violation: a smaller schedule may fail too.
    pub shrink_cut_short: bool,
    /// Where an interrupted search goes on ([`crate::gen_search::GenRuns::resume_at`]).
    pub resume_at: u64,
    /// How often the search's schedules reached each interleaving of
    /// [`leaselab_pg::audit::contention::Contention`], in its order.
    pub contention: leaselab_gen::search::Tally,
}

/// Runs `n` generated schedules of at most `steps` intents on every backend of `audit`;
/// shrinks the first violation and writes it to `out/audit-<spec>-<seed>.trace`.
pub fn run_gen(
    audit: &mut Audit,
    plan: Plan,
    out: &Path,
    progress: bool,
) -> Result<AuditOutcome, CliError> {
    let seed = plan.seed;
    let mut counts = crate::gen_search::GenRuns::new(
        plan.share.count(u64::from(plan.schedules)),
        "violation",
        progress,
    );
    let mut first: Option<u64> = None;
    let result = audit.search(
        &plan,
        |phase, case| {
            if let Some(i) = counts.observe(phase, case) {
                first = Some(i);
            }
        },
        crate::interrupt::requested,
    );
    counts.finish();
    let runs = counts;
    let resume_at = runs.resume_at(plan.share);
    let found = crate::workers::settled(result)?;
    let shrink_cut_short = found.as_ref().is_some_and(|f| f.cut_short);
    let violation = match found {
        None => None,
        Some(f) => {
            let file = audit.save(&f, seed, out)?;
            Some((file, f.failure.report))
        }
    };
    let waits_out_of_bound = audit.waits_out_of_bound();
    Ok(AuditOutcome {
        schedules: runs.schedules,
        steps: runs.steps,
        shrink_runs: runs.shrink_runs,
        violation,
        first,
        interrupted: crate::interrupt::requested(),
        waits_out_of_bound,
        shrink_cut_short,
        resume_at,
        contention: runs.tally.clone(),
    })
}

/// Starts backends for `jobs` workers in all (the audit has the first), side by side, each in
/// its own folder under `pg_dir`.
pub fn workers(audit: &mut Audit, pg_dir: &Path, jobs: usize) -> Result<(), CliError> {
    let more = crate::workers::start_more(pg_dir, jobs, |dir| audit.start_backend(dir))?;
    audit.add_backends(more);
    Ok(())
}

/// `leaselab audit SPEC --gen N`: prints the verdict, the shrunk trace and the commands that
/// show it: `Exit::Violation`, `Exit::Clean`, or `Exit::Interrupted` (Ctrl-C, nothing found so far).
pub fn run_gen_cmd(
    file: &Path,
    o: &Overrides,
    plan: Plan,
    jobs: usize,
    out: &Path,
    pg_dir: &Path,
) -> Result<crate::args::Exit, CliError> {
    let n = plan.schedules;
    let mut audit = load_as(file, pg_dir, o)?;
    workers(&mut audit, pg_dir, jobs)?;
    let t0 = std::time::Instant::now();
    let r = run_gen(&mut audit, plan, out, true)?;
    let secs = t0.elapsed().as_secs_f64().max(1e-9);
    if let Some((trace, report)) = &r.violation {
        let t = Trace::read(trace)?;
        println!(
            "VIOLATION {} :: found at schedule {}, shrunk to {} steps{}",
            report.verdict_list(),
            r.first.unwrap_or(0),
            t.history.events.len(),
            crate::gen_search::cut_short_note(r.shrink_cut_short)
        );
        for v in &report.violations {
            println!("  {}: {}", v.check.as_str(), v.message);
        }
        println!("trace: {}", trace.display());
        let reproduce = format!(
            "leaselab audit {} --replay {}{} --pg-dir {}",
            file.display(),
            trace.display(),
            flags(o),
            pg_dir.display()
        );
        // The JSON summary's `reproduce` is the printed `reproduce:` line.
        crate::summary::failure(
            &format!(
                "{}: found at schedule {}",
                report.verdict_list(),
                r.first.unwrap_or(0)
            ),
            Some(trace),
            Some(&reproduce),
            None,
        );
        println!(
            "psql: LEASE_DB='…' RES_DB='…' bash {}",
            trace.with_extension("psql").join("run.sh").display()
        );
        println!("timeline: leaselab diagram {}", trace.display());
        println!("explain: leaselab explain {}", trace.display());
        println!("reproduce: {reproduce}");
    }
    if r.waits_out_of_bound > 0 {
        eprintln!(
            "warning: {} lock waits ran out their 120 s bound: the lock-wait detection missed \
             them, the run was slow, and its histories count each as blocked or as an error \
             (please report it with the spec)",
            r.waits_out_of_bound
        );
    }
    println!(
        "contention, occurrences over the {} schedules: {}",
        r.schedules,
        r.contention
            .iter()
            .map(|(k, n)| format!("{k}={n}"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    for (k, n) in &r.contention {
        crate::summary::count(k, *n);
    }
    let untried = untried(&audit);
    if !untried.is_empty() {
        println!("not tried: {}", untried.join("; "));
    }
    crate::summary::count("schedules", r.schedules);
    crate::summary::count("steps", r.steps);
    crate::summary::count("violations", u64::from(r.violation.is_some()));
    crate::summary::count("shrink_runs", r.shrink_runs);
    println!(
        "SUMMARY spec={} generated={} steps={} violations={} shrink_runs={} schedules/s={:.1} steps/s={:.0}{}{}",
        file.display(),
        r.schedules,
        r.steps,
        usize::from(r.violation.is_some()),
        r.shrink_runs,
        r.schedules as f64 / secs,
        r.steps as f64 / secs,
        crate::gen_search::share_note(plan.share),
        crate::gen_search::interrupted_note(r.interrupted, n)
    );
    if r.interrupted && r.violation.is_none() {
        let again = format!(
            "leaselab audit {} --gen {n} --seed {} --steps {}{} --jobs {jobs} --out {} --pg-dir {}",
            file.display(),
            plan.seed,
            plan.steps,
            flags(o),
            out.display(),
            pg_dir.display()
        );
        if let Some(line) = crate::gen_search::resume_line(&again, &plan, r.resume_at) {
            println!("{line}");
        }
    }
    Ok(crate::gen_search::search_exit(
        r.violation.is_some(),
        Exit::Violation,
        r.interrupted,
    ))
}

/// The client behaviours this audit's schedules never tried, each with what would try it.
fn untried(audit: &Audit) -> Vec<String> {
    let c = audit.client();
    let mut not = Vec::new();
    if !c.lease_txn {
        not.push(
            "held lease transactions (several lease calls in one transaction held open across \
             other holders' steps: give --lease-txn, or `lease_txn = true` in the spec)"
                .to_string(),
        );
    }
    if !c.ops.publish {
        not.push("publish (the spec has no `publish` operation)".to_string());
    }
    if !c.ops.read_part {
        not.push("reads of a part mid-run (the spec has no `read-part` operation)".to_string());
    }
    if !c.second_conn {
        not.push(
            "a second lease connection per holder (lease calls on another connection while the \
             first holds a transaction open: give --lease-conns 2, or `lease_conns = 2` in the \
             spec)"
                .to_string(),
        );
    }
    not
}

/// `leaselab audit SPEC --replay FILE`: the schedule a search saved in FILE, run once more on
/// SPEC and judged — with the client aimed as `aim` says, or as the search that saved it was
/// (its `setup aim` line); whether PostgreSQL answered every step as the trace recorded. Exit
/// `Violation` or `Clean` by the new run's verdict.
pub fn replay_cmd(
    file: &Path,
    o: &Overrides,
    aim: Option<leaselab_gen::Aim>,
    trace_file: &Path,
    pg_dir: &Path,
) -> Result<Exit, CliError> {
    let (t, schedule) = crate::schedule_file::read(trace_file, "audit --gen")?;
    let o = Overrides {
        aim: aim.unwrap_or_else(|| leaselab_pg::audit::aim_of(&t.setup)),
        lease_conns: o
            .lease_conns
            .or_else(|| leaselab_pg::audit::lease_conns_of(&t.setup)),
        ..o.clone()
    };
    let mut audit = load_as(file, pg_dir, &o)?;
    let (h, _) = audit.run(&schedule)?;
    let report = leaselab_checkers::check(&h);
    let verdict = if report.violations.is_empty() {
        "CLEAN".to_string()
    } else {
        format!("VIOLATION {}", report.verdict_list())
    };
    let same = crate::schedule_file::compare(&t.history.events, &h.events);
    println!(
        "{verdict} :: replayed {} ({} intents) on {}: {same}",
        trace_file.display(),
        schedule.intents.len(),
        file.display()
    );
    for v in &report.violations {
        println!("  {}: {}", v.check.as_str(), v.message);
    }
    Ok(if report.violations.is_empty() {
        Exit::Clean
    } else {
        Exit::Violation
    })
}
