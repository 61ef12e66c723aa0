//! `leaselab replay`: reads trace files and replays them ([`leaselab_trace::replay`]).

pub use leaselab_trace::compare::Comparison;
pub use leaselab_trace::replay::replay;
use leaselab_trace::{Trace, TraceFileError};
use std::path::{Path, PathBuf};

/// `leaselab replay`'s arguments.
#[derive(clap::Args, Debug)]
pub struct ReplayArgs {
    /// Trace files.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
}

/// Reads, parses and replays one file. Errors name the file (and for parse errors the line and
/// field).
pub fn replay_file(path: &Path) -> Result<Comparison, TraceFileError> {
    let trace = Trace::read(path)?;
    Ok(replay(&trace))
}

/// `leaselab replay FILE…`: replays every file; the exit class is the worst one met (input
/// error, divergence, changed verdict).
pub fn main(a: ReplayArgs) -> crate::args::Exit {
    let files = &a.files;
    use crate::args::Exit;
    let (mut ok, mut bad) = (0, 0);
    let (mut unreadable, mut diverged, mut verdict) = (false, false, false);
    for f in files {
        match replay_file(f) {
            Ok(r) => {
                println!("REPLAY {} :: {}", f.display(), r.describe());
                if r.ok() {
                    ok += 1;
                } else {
                    if let Ok(t) = crate::picture_cmd::read_trace(f) {
                        println!("  timeline of the recording:");
                        print!(
                            "{}",
                            crate::picture_cmd::timeline_of(&t.history, &t.config, "    ")
                        );
                    }
                    bad += 1;
                    if r.divergences.is_empty() {
                        verdict = true;
                    } else {
                        diverged = true;
                    }
                }
            }
            Err(e) => {
                eprintln!("REPLAY {} :: ERROR {e}", f.display());
                bad += 1;
                unreadable = true;
            }
        }
    }
    println!("SUMMARY replayed={ok} failed={bad}");
    if unreadable {
        Exit::Usage
    } else if diverged {
        Exit::Divergence
    } else if verdict {
        Exit::Violation
    } else {
        Exit::Clean
    }
}
