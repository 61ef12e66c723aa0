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
        /// Replace the scope fence in the cases that use it: scope, strict, row, check-then-write, off.
        #[arg(long)]
        fence: Option<FenceMode>,
        /// Write each run's trace to DIR/<name>.trace.
        #[arg(long, value_name = "DIR")]
        trace_out: Option<PathBuf>,
        /// Print table 26-1 from the outcomes this run observed.
        #[arg(long)]
        table: bool,
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
        } => run_lab(case.as_deref(), fence, trace_out, table),
        Cmd::Replay { files } => run_replay(&files),
    }
}

fn run_lab(
    case: Option<&str>,
    fence: Option<FenceMode>,
    out: Option<PathBuf>,
    table: bool,
) -> ExitCode {
    let res = match lab::run(case, fence) {
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
