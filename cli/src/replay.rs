//! `leaselab replay`: reads trace files and replays them ([`leaselab_trace::replay`]).

pub use leaselab_trace::compare::Comparison;
pub use leaselab_trace::replay::replay;
use leaselab_trace::Trace;
use std::path::Path;

/// Reads, parses and replays one file. Errors name the file (and for parse errors the line and
/// field).
pub fn replay_file(path: &Path) -> Result<Comparison, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    let trace = Trace::parse(&text, &path.display().to_string()).map_err(|e| e.to_string())?;
    Ok(replay(&trace))
}
