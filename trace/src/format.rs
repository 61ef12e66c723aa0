//! What a trace is: its fields, its magic first line, and the error a malformed one gives.

use leaselab_checkers::Check;
use leaselab_model::{Config, History};

/// The first line of every v1 trace.
pub const MAGIC: &str = "leaselab-trace v1";

/// A parsed trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    /// Short name (the lab case id, or `sim-<seed>`).
    pub name: String,
    /// One human line.
    pub title: String,
    /// The seed that produced it (0 for staged cases).
    pub seed: u64,
    /// Database configuration.
    pub config: Config,
    /// The lease spec the history was recorded on (`leaselab audit`), as its path was given:
    /// the statements were the user's, and `config` describes none of them.
    pub spec: Option<String>,
    /// Setup lines (settings a simulation run was made from), kept verbatim (`key=value`
    /// words); the simulation defines and parses them (`leaselab sim --from-trace`).
    pub setup: Vec<String>,
    /// Fault plan lines, kept verbatim (`key=value` words); the simulation defines them.
    pub faults: Vec<String>,
    /// The checks this history is expected to violate, in canonical order; empty means all hold.
    pub expect: Vec<Check>,
    /// The recorded history.
    pub history: History,
}

/// A trace file that could not be read, parsed or written: the file and what went wrong.
#[derive(Debug, thiserror::Error)]
pub enum TraceFileError {
    /// The file could not be read.
    #[error("{path}: cannot read: {error}")]
    Read {
        /// The file, as given.
        path: String,
        /// Why.
        error: std::io::Error,
    },
    /// The file could not be written.
    #[error("cannot write {path}: {error}")]
    Write {
        /// The file, as given.
        path: String,
        /// Why.
        error: std::io::Error,
    },
    /// The text is not a trace (file, line and field named).
    #[error(transparent)]
    Parse(#[from] leaselab_model::text::TextError),
}

impl Trace {
    /// Reads and parses a trace file; errors name the file (and the line and field).
    pub fn read(path: &std::path::Path) -> Result<Trace, TraceFileError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|error| TraceFileError::Read {
            path: name.clone(),
            error,
        })?;
        Ok(Trace::parse(&text, &name)?)
    }

    /// The header lines of `kind` (`setup`, `fault`) in a trace's `text`, each with its line
    /// number (from 1) and without its first word: what a reader of those lines needs to name
    /// the line at fault. The header ends at `events`.
    pub fn header_lines<'a>(text: &'a str, kind: &str) -> Vec<(usize, &'a str)> {
        text.lines()
            .map(|l| l.trim_end_matches('\r'))
            .take_while(|l| *l != "events")
            .enumerate()
            .filter_map(|(i, l)| {
                l.strip_prefix(kind)
                    .and_then(|r| r.strip_prefix(' '))
                    .map(|r| (i + 1, r))
            })
            .collect()
    }

    /// Writes the trace's canonical text to `path` (every command that writes a trace writes
    /// it this way, so `read` gives back the same trace).
    pub fn save(&self, path: &std::path::Path) -> Result<(), TraceFileError> {
        std::fs::write(path, self.to_text()).map_err(|error| TraceFileError::Write {
            path: path.display().to_string(),
            error,
        })
    }
}
