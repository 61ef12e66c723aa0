//! `leaselab`: run the lab cases, replay traces.

use clap::{Parser, Subcommand};
use leaselab::args::{Exit, RunArgs};
use leaselab_model::FenceMode;
use leaselab_sim::Driver;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "leaselab",
    about = "Leases with fencing tokens: prove, break and teach",
    version,
    after_help = leaselab::args::Exit::HELP
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
    /// Also write a JSON summary of the run to FILE: verdict, exit status, counts, each
    /// failure with its trace and reproduce command, the resume command (docs/json-summary.md).
    #[arg(long, global = true, value_name = "FILE")]
    json: Option<PathBuf>,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run the cases F1–F9 and G1–G4 on the in-memory model.
    Lab(leaselab::lab_cmd::LabArgs),
    /// Simulate holders and databases under seeded faults: one seed, or a sweep.
    Sim(leaselab::sim_cmd::SimArgs),
    /// Replay traces (or simulation seeds) against the model and a real PostgreSQL, step by
    /// step; report the first divergence. Starts its own throwaway clusters.
    Diff {
        /// Trace files (their setups are their own: the simulation flags do not apply).
        #[arg(conflicts_with_all = sim_run_ids())]
        files: Vec<PathBuf>,
        /// Diff the traces of these simulation seeds, A..B, run exactly as `leaselab sim` runs
        /// them with the same flags.
        #[arg(long, value_name = "A..B", value_parser = leaselab::sim_cmd::parse_range)]
        sim_seeds: Option<(u64, u64)>,
        /// How the --sim-seeds runs are set up (the same flags as `sim`).
        #[command(flatten)]
        run: RunArgs,
        /// Driver of the --sim-seeds runs.
        #[arg(long, value_enum, default_value_t = Driver::Fast)]
        driver: Driver,
        /// Run N generated multi-session schedules against the model and PostgreSQL; shrink
        /// the first divergence and write it as a trace (see --out). Not with trace files,
        /// --sim-seeds or the simulation flags.
        #[arg(long, value_name = "N", conflicts_with_all = gen_conflicts())]
        gen: Option<u32>,
        /// Seed of the generated schedules (same seed, same schedules; --gen only) [default: 1]
        #[arg(long, requires = "gen", conflicts_with_all = ["files", "sim_seeds"])]
        seed: Option<u64>,
        /// Most intents per generated schedule (--gen only) [default: 40]
        #[arg(long, requires = "gen", conflicts_with_all = ["files", "sim_seeds"])]
        steps: Option<usize>,
        /// Negative control: run the model with a deliberately wrong rule.
        #[arg(long, value_enum, value_name = "RULE")]
        wrong_rule: Option<leaselab_model::model::WrongRule>,
        /// Where diverging runs are written (a shrunk --gen schedule, a --sim-seeds trace).
        #[arg(long, default_value = "diff-failures", value_name = "DIR")]
        out: PathBuf,
        /// Run the model side with this fence instead of the trace's (a deliberately wrong rule).
        #[arg(long, value_enum)]
        model_fence: Option<FenceMode>,
        /// Where the throwaway clusters live.
        #[arg(long, default_value = "target/leaselab-pg", value_name = "DIR")]
        pg_dir: PathBuf,
    },
    /// Audit your own lease: generated schedules (several holders, pauses, disconnects,
    /// crashes, clock moves onto expiries) run your spec's SQL on a throwaway PostgreSQL, and
    /// the checkers judge what PostgreSQL answered. The spec is a TOML file (`[schema]` with
    /// `lease` and `resource` DDL; `[statements]` with `acquire`, `renew`, `release`, `write`
    /// and optionally `read-part` and `publish`, using `:lease`, `:holder`, `:ttl_ms`,
    /// `:token`, `:scope`, `:part`, `:content`, `:key`); see docs/lease-spec.md and
    /// examples/leases/.
    Audit {
        /// The lease spec (TOML).
        spec: PathBuf,
        /// Run N generated schedules; shrink the first violation and write it as a trace.
        #[arg(
            long,
            value_name = "N",
            required_unless_present = "sim_seeds",
            conflicts_with = "sim_seeds"
        )]
        gen: Option<u32>,
        /// Run the simulation's holders (job loop, faults, pauses, clock skew, crashes) on
        /// the spec for seeds A..B, with `sim`'s options; shrink the first failing seed.
        #[arg(long, value_name = "A..B", value_parser = leaselab::sim_cmd::parse_range)]
        sim_seeds: Option<(u64, u64)>,
        /// How each simulated run is set up (`--sim-seeds`; the spec decides the fence and
        /// the lease table).
        #[command(flatten)]
        run: leaselab::args::AuditSimArgs,
        /// Seed of the generated schedules (same seed, same schedules).
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Most intents per generated schedule.
        #[arg(long, default_value_t = 40)]
        steps: usize,
        /// Where a violation's trace is written.
        #[arg(long, default_value = "audit-failures", value_name = "DIR")]
        out: PathBuf,
        /// Where the throwaway clusters live.
        #[arg(long, default_value = "target/leaselab-audit", value_name = "DIR")]
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
        /// Record every call this process makes to FILE (JSON lines, `leaselab judge`).
        #[arg(long, value_name = "FILE")]
        record: Option<PathBuf>,
        /// Time 0 of the recording, in ms since the Unix epoch (the same for every process of
        /// one experiment, so their files merge).
        #[arg(long, default_value_t = 0)]
        clock_origin_ms: u64,
    },
    /// Draw a trace: a terminal timeline (default), a Mermaid sequenceDiagram (--mermaid), or
    /// one self-contained offline HTML page (--html OUT.html).
    Diagram {
        /// A trace file or a recorded history (JSON lines); or several recorded histories, one
        /// per process of a deployment, drawn merged by the server's clock.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Print a Mermaid `sequenceDiagram`.
        #[arg(long, conflicts_with = "html")]
        mermaid: bool,
        /// Write an HTML page: lanes on a time axis, leases by both clocks, pauses, writes;
        /// a long run cropped to the span around its violating pair.
        #[arg(long, value_name = "OUT.html")]
        html: Option<PathBuf>,
        /// With --html: draw the whole run, not the span around the violating pair.
        #[arg(long, requires = "html")]
        whole: bool,
    },
    /// Judge histories recorded from a real deployment (JSON lines: one invoke or completion
    /// per line, see docs/history-jsonl.md) with the checkers alone: I1, I2, I3, acceptance,
    /// final. Each violation names the file and lines of its events. A file that cannot be
    /// read is reported and the others are still judged. Exit 1 if any history broke a check,
    /// else 2 if a file could not be read, else 6 if a check is possibly broken (it depends on
    /// an operation whose outcome is unknown), else 0.
    Judge {
        /// History files (JSON lines).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// The files are one deployment's processes, each recording its own calls: judge them
        /// as one history, merged by the server's clock (a process in one file only).
        #[arg(long)]
        merge: bool,
    },
    /// Write a trace's history in another format.
    Export {
        /// Trace file.
        file: PathBuf,
        /// JSON lines (docs/history-jsonl.md), the format `judge` reads.
        #[arg(long, required = true)]
        jsonl: bool,
    },
    /// Tell a trace in plain words: who held which token when, where the pause landed, which
    /// write was stale, why the resource kept or refused it, what broke, what would stop it.
    Explain {
        /// A trace file or a recorded history; or several recorded histories, merged.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// The safety envelope: the smallest pause and the smallest clock-rate skew (and, with
    /// --margin, the largest safety margin) that let a stale write through, by bisection over
    /// simulation runs. With the scope fence: none at every size tried.
    ///
    /// The table's columns: `a stale write got through at` — the boundary size (a pause of
    /// holder-a, its clock running slow, or its safety margin under a slow clock); `nearest
    /// size that held` — the size on the safe side of it that the search tried (for a pause or
    /// a skew the largest, for a margin the smallest); `runs` — simulation runs the bisection
    /// took; `stale writes` — in the run shown, writes sent with a token older than one
    /// already granted or accepted, whatever the resource did with them (a fence that holds
    /// refuses them all); `broke` — the checks that run broke. A skew in ppm slow is how many
    /// millionths of each second the holder's clock loses: 750000 ppm slow counts 250 ms per
    /// real second, so its deadline comes four times too late.
    Envelope {
        /// The resource's fence.
        #[arg(long, value_enum, default_value_t = FenceMode::Off)]
        fence: FenceMode,
        /// Also search the holder's safety margin under a slow clock.
        #[arg(long)]
        margin: bool,
        /// Chubby's lock-delay on the lease table: an expired lease is taken over only this
        /// long after its expiry (0: none, the source design).
        #[arg(long, default_value_t = 0, value_name = "MS")]
        lock_delay_ms: u64,
        /// Write the HTML picture of the boundary case.
        #[arg(long, value_name = "OUT.html")]
        html: Option<PathBuf>,
        /// Write the boundary case as a trace (`leaselab explain FILE`, `leaselab sim
        /// --from-trace FILE`).
        #[arg(long, value_name = "FILE")]
        trace_out: Option<PathBuf>,
    },
    /// Exhaustive model checking (stateright): every interleaving of the holders' job-loop
    /// steps, clock ticks and crashes within the bounds; a violation's shortest counterexample
    /// as a trace (exit 1).
    Check(leaselab::check_cmd::CheckArgs),
    /// Re-execute traces against the model; non-zero exit on a divergence or unexpected verdict.
    Replay {
        /// Trace files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

/// The flags that set up a simulated run (`diff --sim-seeds`): meaningless for trace files,
/// which carry their own setup, and for generated schedules.
fn sim_run_ids() -> Vec<&'static str> {
    let mut ids = RunArgs::IDS.to_vec();
    ids.push("driver");
    ids
}

/// What `diff --gen` does not go with: it generates its own schedules.
fn gen_conflicts() -> Vec<&'static str> {
    let mut ids = sim_run_ids();
    ids.extend(["files", "sim_seeds", "model_fence"]);
    ids
}

/// Output piped into `head` or `grep -m1` ends the process quietly, as for any Unix tool
/// (Rust ignores SIGPIPE by default, which turns a closed pipe into a panic in `println!`).
fn die_quietly_on_closed_pipe() {
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of one signal before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn main() -> ExitCode {
    die_quietly_on_closed_pipe();
    let words: Vec<String> = std::env::args().skip(1).collect();
    let cli = Cli::parse();
    if let Some(path) = &cli.json {
        leaselab::summary::write_to(path, words);
    }
    install_interrupt(&cli.cmd);
    let exit = dispatch(cli.cmd);
    leaselab::interrupt::wait_if_abandoning();
    if let Err(e) = leaselab::summary::finish(exit) {
        eprintln!("leaselab: {e}");
        return Exit::Usage.into();
    }
    exit.into()
}

/// Runs one command; its exit class.
fn dispatch(cmd: Cmd) -> Exit {
    match cmd {
        Cmd::Lab(a) => leaselab::lab_cmd::main(a),
        Cmd::Replay { files } => leaselab::replay::main(&files),
        Cmd::Diagram {
            files,
            mermaid,
            html,
            whole,
        } => {
            use leaselab::picture_cmd::{diagram, Form};
            let form = match (mermaid, html) {
                (true, _) => Form::Mermaid,
                (false, Some(out)) if whole => Form::HtmlWhole(out),
                (false, Some(out)) => Form::Html(out),
                (false, None) => Form::Timeline,
            };
            print_or_fail("diagram", diagram(&files, &form))
        }
        Cmd::Envelope {
            fence,
            margin,
            lock_delay_ms,
            html,
            trace_out,
        } => {
            let (table, found) = leaselab::envelope_cmd::run(fence, margin, lock_delay_ms);
            print!("{table}");
            let mut said = Ok(String::new());
            if let Some(out) = html {
                said = leaselab::envelope_cmd::write_html(&found, &out);
            }
            if let (Ok(s), Some(out)) = (&said, trace_out) {
                said = leaselab::envelope_cmd::write_trace(&found, &out).map(|t| format!("{s}{t}"));
            }
            print_or_fail("envelope", said)
        }
        Cmd::Check(a) => leaselab::check_cmd::main(a),
        Cmd::Judge { files, merge } => {
            let j = leaselab::judge_cmd::judge(&files, merge);
            print!("{}", j.text);
            for e in &j.errors {
                eprintln!("leaselab judge: {e}");
            }
            j.exit
        }
        Cmd::Export { file, jsonl: _ } => {
            print_or_fail("export", leaselab::judge_cmd::export_jsonl(&file))
        }
        Cmd::Explain { files } => print_or_fail("explain", leaselab::picture_cmd::explain(&files)),
        Cmd::Holder {
            role,
            name,
            lease,
            res,
            fence,
            ttl_ms,
            renew_ms,
            margin_ms,
            record,
            clock_origin_ms,
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
                record,
                clock_origin_ms,
            };
            match leaselab_pg::real::holder_main(&a) {
                Ok(()) => Exit::Clean,
                Err(e) => {
                    eprintln!("leaselab holder: {e}");
                    Exit::Usage
                }
            }
        }
        Cmd::Diff {
            files,
            sim_seeds,
            run,
            driver,
            model_fence,
            pg_dir,
            gen,
            seed,
            steps,
            out,
            wrong_rule,
        } => {
            let r = match gen {
                Some(n) => leaselab::diff_cmd::run_gen_cmd(
                    n,
                    seed.unwrap_or(1),
                    steps.unwrap_or(40),
                    wrong_rule,
                    &out,
                    &pg_dir,
                ),
                None => run.options().and_then(|opts| {
                    leaselab::diff_cmd::run(
                        &files,
                        sim_seeds.map(|(a, b)| (a, b, opts, driver)),
                        leaselab::diff_cmd::ModelSide {
                            fence: model_fence,
                            wrong: wrong_rule,
                        },
                        &out,
                        &pg_dir,
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
        Cmd::Audit {
            spec,
            gen,
            sim_seeds,
            run,
            seed,
            steps,
            out,
            pg_dir,
        } => {
            let r = match (gen, sim_seeds) {
                (Some(n), _) => {
                    leaselab::audit_cmd::run_gen_cmd(&spec, n, seed, steps, &out, &pg_dir)
                }
                (None, Some(seeds)) => run.options().and_then(|opts| {
                    leaselab::audit_sim::run_seeds_cmd(&spec, seeds, &opts, &out, &pg_dir)
                }),
                (None, None) => Err("give --gen N or --sim-seeds A..B".into()),
            };
            match r {
                Ok(e) => e,
                Err(e) => {
                    eprintln!("leaselab audit: {e}");
                    Exit::Usage
                }
            }
        }
        Cmd::Sim(args) => leaselab::sim_cmd::main(args),
    }
}

/// Ctrl-C and SIGTERM: a command with units of work to finish (seeds, schedules, cases) stops
/// after the running one and reports; the others stop at once. Either way no cluster is left.
fn install_interrupt(cmd: &Cmd) {
    use leaselab::interrupt::{install, OnFirst};
    let (name, first) = match cmd {
        Cmd::Sim(a) if a.seeds.is_some() => ("sim", OnFirst::Finish("seeds")),
        Cmd::Sim(_) => ("sim", OnFirst::Exit),
        Cmd::Diff { gen: Some(_), .. } => ("diff", OnFirst::Finish("schedule")),
        Cmd::Diff {
            sim_seeds: Some(_), ..
        } => ("diff", OnFirst::Finish("seed")),
        Cmd::Diff { .. } => ("diff", OnFirst::Finish("trace")),
        Cmd::Audit { .. } => ("audit", OnFirst::Finish("schedule")),
        Cmd::Lab(_) => ("lab", OnFirst::Finish("case")),
        Cmd::Check(a) if a.serve.is_some() => ("check", OnFirst::Exit),
        Cmd::Check(_) => ("check", OnFirst::Finish("search")),
        Cmd::Replay { .. } => ("replay", OnFirst::Exit),
        Cmd::Holder { .. } => ("holder", OnFirst::Exit),
        Cmd::Diagram { .. } => ("diagram", OnFirst::Exit),
        Cmd::Judge { .. } => ("judge", OnFirst::Exit),
        Cmd::Export { .. } => ("export", OnFirst::Exit),
        Cmd::Explain { .. } => ("explain", OnFirst::Exit),
        Cmd::Envelope { .. } => ("envelope", OnFirst::Exit),
    };
    install(name, first);
}

fn print_or_fail(cmd: &str, r: Result<String, String>) -> Exit {
    match r {
        Ok(text) => {
            print!("{text}");
            Exit::Clean
        }
        Err(e) => {
            eprintln!("leaselab {cmd}: {e}");
            Exit::Usage
        }
    }
}
