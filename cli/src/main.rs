//! `leaselab`: parses the command line and dispatches to the command's module (each owns its
//! arguments and its run, see the library's `lib.rs`).

use clap::{Parser, Subcommand};
use leaselab::args::Exit;
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
    Diff(leaselab::diff_cmd::DiffArgs),
    /// Audit your own lease: generated schedules (several holders, pauses, disconnects,
    /// crashes, clock moves onto expiries) run your spec's SQL on a throwaway PostgreSQL, and
    /// the checkers judge what PostgreSQL answered. The spec is a TOML file (`[schema]` with
    /// `lease` and `resource` DDL; `[statements]` with `acquire`, `renew`, `release`, `write`
    /// and optionally `read-part` and `publish`, using `:lease`, `:holder`, `:ttl_ms`,
    /// `:token`, `:scope`, `:part`, `:content`, `:key`); see docs/lease-spec.md and
    /// examples/leases/.
    Audit(leaselab::audit_cmd::AuditArgs),
    /// A live run on a real lease service (PostgreSQL or Redis): holder processes in real
    /// time under a nemesis (pauses after the local check), their records judged by the
    /// checkers; the verdict, the history, and the commands to judge it and to run it again.
    /// Starts its own throwaway servers.
    Live(leaselab::live_cmd::LiveArgs),
    /// One holder process of the real-time F4/F5 experiment and of `live` (started by them).
    #[command(hide = true)]
    Holder(leaselab::holder_cmd::HolderArgs),
    /// Draw a trace: a terminal timeline (default), a Mermaid sequenceDiagram (--mermaid), or
    /// one self-contained offline HTML page (--html OUT.html).
    Diagram(leaselab::picture_cmd::DiagramArgs),
    /// Judge histories recorded from a real deployment (JSON lines: one invoke or completion
    /// per line, see docs/history-jsonl.md) with the checkers alone: I1, I2, I3, acceptance,
    /// final. Each violation names the file and lines of its events. A file that cannot be
    /// read is reported and the others are still judged. Exit 1 if any history broke a check,
    /// else 2 if a file could not be read, else 6 if a check is possibly broken (it depends on
    /// an operation whose outcome is unknown), else 0.
    Judge(leaselab::judge_cmd::JudgeArgs),
    /// Write a trace's history in another format.
    Export(leaselab::judge_cmd::ExportArgs),
    /// Tell a trace in plain words: who held which token when, where the pause landed, which
    /// write was stale, why the resource kept or refused it, what broke, what would stop it.
    Explain(leaselab::picture_cmd::ExplainArgs),
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
    Envelope(leaselab::envelope_cmd::EnvelopeArgs),
    /// Exhaustive model checking (stateright): every interleaving of the holders' job-loop
    /// steps, clock ticks and crashes within the bounds; a violation's shortest counterexample
    /// as a trace (exit 1).
    Check(leaselab::check_cmd::CheckArgs),
    /// Re-execute traces against the model; non-zero exit on a divergence or unexpected verdict.
    Replay(leaselab::replay::ReplayArgs),
}

/// Output piped into `head` or `grep -m1` ends the process quietly, as for any Unix tool
/// (Rust ignores SIGPIPE by default, which turns a closed pipe into a panic in `println!`).
/// Only a closed *output* does: a write into the stdin of a holder process this process just
/// killed, or into the socket of a server it just stopped (an abandoned run does both while its
/// main thread goes on), must come back as an error, not end the process by a signal with its
/// cleanup half done. So SIGPIPE gets a handler that restores the default action and raises it
/// again only when standard output or error has lost its reader.
fn die_quietly_on_closed_output() {
    #[cfg(unix)]
    // SAFETY: installs a handler for one signal before any thread starts; the handler makes
    // only async-signal-safe calls (poll, signal, raise) and restores errno.
    unsafe {
        libc::signal(
            libc::SIGPIPE,
            on_sigpipe as extern "C" fn(libc::c_int) as libc::sighandler_t,
        );
    }
}

/// A pipe's write end polls as POLLERR once no reader is left (a socket's as POLLHUP): then the
/// signal came from, or at least finds, an output nobody reads, and the process ends by it as
/// it would by default (the signal is blocked while this runs and is delivered on return).
#[cfg(unix)]
extern "C" fn on_sigpipe(_: libc::c_int) {
    // SAFETY: async-signal-safe calls on this thread's errno and two standard descriptors.
    unsafe {
        let errno = *libc::__errno_location();
        let mut out = [1, 2].map(|fd| libc::pollfd {
            fd,
            events: 0,
            revents: 0,
        });
        let ready = libc::poll(out.as_mut_ptr(), out.len() as libc::nfds_t, 0);
        if ready > 0
            && out
                .iter()
                .any(|p| p.revents & (libc::POLLERR | libc::POLLHUP) != 0)
        {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
            libc::raise(libc::SIGPIPE);
        }
        *libc::__errno_location() = errno;
    }
}

fn main() -> ExitCode {
    die_quietly_on_closed_output();
    leaselab::interrupt::install();
    let words: Vec<String> = std::env::args().skip(1).collect();
    let cli = Cli::parse();
    if let Some(path) = &cli.json {
        leaselab::summary::write_to(path, words);
    }
    configure_interrupt(&cli.cmd);
    if let Err(e) = leaselab::progress::check_env() {
        eprintln!("leaselab: {e}");
        return Exit::Usage.into();
    }
    let exit = dispatch(cli.cmd);
    leaselab::interrupt::finishing();
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
        Cmd::Sim(a) => leaselab::sim_cmd::main(a),
        Cmd::Diff(a) => leaselab::diff_cmd::main(a),
        Cmd::Audit(a) => leaselab::audit_cmd::main(a),
        Cmd::Live(a) => leaselab::live_cmd::main(a),
        Cmd::Holder(a) => leaselab::holder_cmd::main(a),
        Cmd::Diagram(a) => leaselab::picture_cmd::diagram_main(a),
        Cmd::Judge(a) => leaselab::judge_cmd::main(a),
        Cmd::Export(a) => leaselab::judge_cmd::export_main(a),
        Cmd::Explain(a) => leaselab::picture_cmd::explain_main(a),
        Cmd::Envelope(a) => leaselab::envelope_cmd::main(a),
        Cmd::Check(a) => leaselab::check_cmd::main(a),
        Cmd::Replay(a) => leaselab::replay::main(a),
    }
}

/// Ctrl-C and SIGTERM: a command with units of work to finish (seeds, schedules, cases) stops
/// after the running one and reports; the others stop at once. Either way no cluster is left.
fn configure_interrupt(cmd: &Cmd) {
    use leaselab::interrupt::{configure, OnFirst};
    let (name, first) = match cmd {
        Cmd::Sim(a) if a.seeds.is_some() => ("sim", OnFirst::Finish("seeds")),
        Cmd::Sim(_) => ("sim", OnFirst::Exit),
        Cmd::Diff(a) if a.gen.is_some() => ("diff", OnFirst::Finish("schedule")),
        Cmd::Diff(a) if a.sim_seeds.is_some() => ("diff", OnFirst::Finish("seed")),
        Cmd::Diff(_) => ("diff", OnFirst::Finish("trace")),
        Cmd::Audit(_) => ("audit", OnFirst::Finish("schedule")),
        Cmd::Lab(_) => ("lab", OnFirst::Finish("case")),
        Cmd::Check(a) if a.serve.is_some() => ("check", OnFirst::Exit),
        Cmd::Check(_) => ("check", OnFirst::Finish("search")),
        Cmd::Replay(_) => ("replay", OnFirst::Exit),
        Cmd::Live(_) => ("live", OnFirst::Finish("jobs")),
        Cmd::Holder(_) => ("holder", OnFirst::Exit),
        Cmd::Diagram(_) => ("diagram", OnFirst::Exit),
        Cmd::Judge(_) => ("judge", OnFirst::Exit),
        Cmd::Export(_) => ("export", OnFirst::Exit),
        Cmd::Explain(_) => ("explain", OnFirst::Exit),
        Cmd::Envelope(_) => ("envelope", OnFirst::Exit),
    };
    configure(name, first);
}
