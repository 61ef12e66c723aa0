//! `leaselab audit SPEC --sim-seeds A..B`: the simulation's holders — the same job loop, fault
//! plan, pauses at code points, clock skew and crashes as `leaselab sim` — with their databases
//! being a throwaway PostgreSQL running the spec. The fast driver's hosts take the backend
//! through the same seam as the model ([`leaselab_sim::host::DbHosts::on`]); each part is one
//! `write` operation (the spec's own statements). A failing seed is shrunk by the sweep's
//! shrinker, every candidate run on PostgreSQL.

use crate::args::Exit;
use crate::audit_spec::load;
use crate::error::{CliError, FileOp};
use leaselab_model::Op;
use leaselab_pg::audit::Audit;
use leaselab_pg::spec::Spec;
use leaselab_pg::PgBackend;
use leaselab_sim::fast::FastSim;
use leaselab_sim::host::DbHosts;
use leaselab_sim::scenario::LivenessFailure;
use leaselab_sim::{Setup, SimOptions, SimRun};
use std::path::{Path, PathBuf};

/// Candidate runs a shrink may spend (each is a whole simulated run on PostgreSQL).
const SHRINK_BUDGET: u32 = 60;

/// What a `--sim-seeds` audit found.
pub struct SimAudit {
    /// Seeds run (shrinking not counted).
    pub seeds: u64,
    /// Statements and client events recorded.
    pub steps: u64,
    /// The first failing seed, shrunk: its run and the trace file written.
    pub failure: Option<(SimRun, PathBuf)>,
    /// Ctrl-C or SIGTERM stopped the run before this seed (the resume point).
    pub interrupted_at: Option<u64>,
}

/// Runs `setup` with whole-operation holders on `pg` (one of `audit`'s backends, reset first),
/// appends the final reads of every part written, and judges the history. The backend comes
/// back for the next run.
pub fn run_setup_on(
    pg: PgBackend,
    audit: &Audit,
    mut setup: Setup,
) -> Result<(SimRun, PgBackend), CliError> {
    for h in &mut setup.holders {
        h.whole_writes = true;
    }
    let mut pg = pg;
    pg.reset(&setup.config())?;
    let (mut run, mut pg) = FastSim::on(setup, DbHosts::on(pg)).run_keeping();
    if audit.client().ops.read_part {
        leaselab_pg::audit::read_back(&mut pg, &mut run.trace.history);
    }
    run.report = leaselab_checkers::check(&run.trace.history);
    run.liveness = job_liveness(&run);
    run.trace.expect = run.report.verdict();
    run.trace.spec = Some(audit.spec().file.clone());
    Ok((run, pg))
}

/// An audit's liveness is stricter than the simulation's "some write committed": after the
/// faults heal, some holder must finish a whole job — every part written, then its lease
/// released (the holder releases only then). A fence that refuses a holder's second part with
/// the token of its first (`<` for `<=`) lets single writes through, and no job ever ends.
fn job_liveness(run: &SimRun) -> Result<(), LivenessFailure> {
    job_liveness_of(&run.trace.history, &run.setup)
}

/// [`job_liveness`] of a history run under `setup` (what `explain` of an audit's trace asks).
pub(crate) fn job_liveness_of(
    history: &leaselab_model::History,
    setup: &Setup,
) -> Result<(), LivenessFailure> {
    let (heal, ms) = (setup.opts.heal(), setup.opts.liveness_ms);
    if ms == 0 {
        return Ok(());
    }
    let names = setup.names();
    let finished = history.events.iter().any(|e| {
        matches!(e.op, Op::Release { .. })
            && names.iter().any(|n| n == e.actor.as_str())
            && e.at >= heal
            && e.at <= heal.plus(ms)
    });
    if finished {
        Ok(())
    } else {
        Err(LivenessFailure {
            heal,
            liveness_ms: ms,
        })
    }
}

/// The flags of `opts` that an audit takes (the spec decides the fence and the lease table).
pub fn audit_flags(opts: &SimOptions) -> String {
    let all = opts.flags(leaselab_sim::Driver::Fast);
    let fence = format!("--fence {}", opts.fence);
    all.strip_prefix(&fence).unwrap_or(&all).trim().to_string()
}

/// Runs seeds `a..b` in order; stops at the first failing one, shrinks it and writes its trace
/// to `out/audit-sim-seed-<seed>.trace`.
pub fn run_seeds(
    audit: &mut Audit,
    (a, b): (u64, u64),
    opts: &SimOptions,
    out: &Path,
    progress: bool,
) -> Result<SimAudit, CliError> {
    let mut found = SimAudit {
        seeds: 0,
        steps: 0,
        failure: None,
        interrupted_at: None,
    };
    let mut shown = progress.then(crate::progress::Progress::always);
    for seed in a..b {
        if crate::interrupt::requested() {
            found.interrupted_at = Some(seed);
            break;
        }
        let backend = audit
            .take_backend()
            .ok_or_else(|| CliError::Input("postgres backend lost".into()))?;
        let (run, back) = run_setup_on(backend, audit, Setup::derive(seed, opts))?;
        audit.put_backend(back);
        found.seeds += 1;
        found.steps += run.trace.history.events.len() as u64;
        if let Some(p) = &mut shown {
            p.show(
                found.seeds,
                b - a,
                "seeds",
                &format!("{} steps, 0 failing", found.steps),
            );
        }
        if !run.failed() {
            continue;
        }
        if let Some(p) = &shown {
            p.finish();
        }
        if progress {
            eprintln!("seed {seed} failed; shrinking on PostgreSQL");
        }
        let mut infra: Option<CliError> = None;
        let shrunk = leaselab_sim::sweep::shrink_with(&run, SHRINK_BUDGET, &mut |setup| {
            let backend = audit.take_backend()?;
            match run_setup_on(backend, audit, setup) {
                Ok((r, back)) => {
                    audit.put_backend(back);
                    Some(r)
                }
                Err(e) => {
                    infra = Some(e);
                    None
                }
            }
        });
        if let Some(e) = infra {
            return Err(e);
        }
        let spec = audit.spec();
        let mut t = shrunk.trace.clone();
        t.name = leaselab_pg::audit::unused_name(
            out,
            &format!(
                "audit-sim-{}-seed-{seed}",
                leaselab_pg::audit::spec_stem(&spec.file)
            ),
        );
        t.title = format!(
            "audit of {} with the simulation's holders: seed {seed}{}",
            spec_name(spec),
            if shrunk.setup == run.setup {
                ""
            } else {
                ", shrunk"
            }
        );
        std::fs::create_dir_all(out).map_err(CliError::file(FileOp::Create, out))?;
        let file = out.join(format!("{}.trace", t.name));
        t.save(&file)?;
        found.failure = Some((shrunk, file));
        return Ok(found);
    }
    if let Some(p) = &shown {
        p.finish();
    }
    Ok(found)
}

fn spec_name(spec: &Spec) -> String {
    Path::new(&spec.file)
        .file_name()
        .map_or(spec.file.clone(), |f| f.to_string_lossy().into_owned())
}

/// `leaselab audit SPEC --sim-seeds A..B`: prints the verdict, the shrunk trace and the
/// commands that show it, and returns the exit class (liveness alone: [`Exit::Liveness`]).
pub fn run_seeds_cmd(
    file: &Path,
    seeds: (u64, u64),
    opts: &SimOptions,
    out: &Path,
    pg_dir: &Path,
) -> Result<Exit, CliError> {
    let mut audit = load(file, pg_dir)?;
    let spec = audit.spec();
    if spec.lease != leaselab_pg::spec::LEASE || spec.ttl_ms.is_some() {
        return Err(CliError::Input(format!(
            "{}: `lease` and `ttl_ms` apply to --gen and --replay; the simulation's holders \
             compete for `{}` with the simulation's TTL",
            file.display(),
            leaselab_pg::spec::LEASE
        )));
    }
    let t0 = std::time::Instant::now();
    let r = run_seeds(&mut audit, seeds, opts, out, true)?;
    let secs = t0.elapsed().as_secs_f64().max(1e-9);
    let flags = audit_flags(opts);
    let sep = if flags.is_empty() { "" } else { " " };
    if let Some((run, trace)) = &r.failure {
        let seed = run.setup.seed;
        let what = match run.report.verdict_list() {
            v if v.is_empty() => "liveness".to_string(),
            v => v,
        };
        println!(
            "VIOLATION {what} :: seed {seed}, {} steps{}",
            run.trace.history.events.len(),
            if run.setup.plan.faults.len() < Setup::derive(seed, opts).plan.faults.len() {
                format!(
                    " after shrinking to {} fault(s)",
                    run.setup.plan.faults.len()
                )
            } else {
                String::new()
            }
        );
        for v in &run.report.violations {
            println!("  {}: {}", v.check.as_str(), v.message);
        }
        if let Err(l) = &run.liveness {
            println!(
                "  liveness: no holder finished a job (every part written, then the lease released) within {} ms after the faults healed at t={}",
                l.liveness_ms, l.heal
            );
        }
        println!("trace: {}", trace.display());
        let again = format!(
            "leaselab audit {} --sim-seeds {seed}..{}{sep}{flags}",
            file.display(),
            seed + 1
        );
        println!("reproduce: {again}");
        crate::summary::failure(&what, Some(trace), Some(&again), Some(seed));
        println!(
            "  (where PostgreSQL releases several waiters at once, a rerun may order them differently; the trace records the order it chose)"
        );
        println!("timeline: leaselab diagram {}", trace.display());
        println!("explain: leaselab explain {}", trace.display());
    }
    crate::summary::count("seeds", r.seeds);
    crate::summary::count("steps", r.steps);
    crate::summary::count("failures", u64::from(r.failure.is_some()));
    println!(
        "SUMMARY spec={} seeds={} steps={} failures={} seeds/s={:.2} steps/s={:.0}{}",
        file.display(),
        r.seeds,
        r.steps,
        usize::from(r.failure.is_some()),
        r.seeds as f64 / secs,
        r.steps as f64 / secs,
        if r.interrupted_at.is_some() {
            " interrupted"
        } else {
            ""
        }
    );
    Ok(match (&r.failure, r.interrupted_at) {
        (Some((run, _)), _) => crate::sim_cmd::exit_of(run),
        (None, Some(next)) => {
            let again = format!(
                "leaselab audit {} --sim-seeds {next}..{}{sep}{flags} --out {}",
                file.display(),
                seeds.1,
                out.display()
            );
            println!("resume: {again}");
            crate::summary::resume(&again);
            Exit::Interrupted
        }
        (None, None) => Exit::Clean,
    })
}
