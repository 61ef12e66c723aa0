//! Why a command could not do its work.

use std::path::{Path, PathBuf};

/// What a command was doing to a file when it failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileOp {
    /// Reading it (or listing a folder).
    Read,
    /// Writing it.
    Write,
    /// Creating it, or a folder.
    Create,
    /// Opening it to append.
    Open,
    /// Removing it.
    Remove,
}

impl FileOp {
    fn verb(self) -> &'static str {
        match self {
            FileOp::Read => "read",
            FileOp::Write => "write",
            FileOp::Create => "create",
            FileOp::Open => "open",
            FileOp::Remove => "remove",
        }
    }
}

/// Why a command could not do its work: printed as one line, `leaselab CMD: …`, with exit
/// status 2 ([`crate::args::Exit::Usage`]). Each variant keeps its cause (`source()`), so that
/// a caller tells a bad argument from a missing file or an unreachable server by its type.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// An argument or input value cannot be used; the text names it and says why.
    #[error("{0}")]
    Input(String),
    /// A file or folder could not be read, written, created, opened or removed.
    #[error("cannot {verb} {path}: {source}", verb = .op.verb(), path = .path.display())]
    File {
        /// What was being done.
        op: FileOp,
        /// To which file.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// A trace file could not be read or written.
    #[error(transparent)]
    Trace(#[from] leaselab_trace::TraceFileError),
    /// A trace's text is malformed (the error names the file, line and field).
    #[error(transparent)]
    TraceText(#[from] leaselab_trace::TextError),
    /// A recorded history could not be read.
    #[error(transparent)]
    Record(#[from] leaselab_record::read::ReadError),
    /// PostgreSQL could not be started or used.
    #[error("postgres: {0}")]
    Postgres(#[from] leaselab_pg::PgError),
    /// PostgreSQL failed while running the named trace or seed.
    #[error("{what}: {source}")]
    PostgresOn {
        /// What was running.
        what: String,
        /// What failed.
        #[source]
        source: leaselab_pg::PgError,
    },
    /// A user's lease spec could not be used.
    #[error(transparent)]
    Spec(#[from] leaselab_pg::spec::SpecError),
    /// A case of the lab could not run (its database failed under it).
    #[error("case {case}: {why}")]
    CaseCouldNotRun {
        /// The case.
        case: String,
        /// What failed.
        why: String,
    },
    /// A generator gave up drawing schedules (its filters rejected too many).
    #[error("generator aborted: {0}")]
    GeneratorAborted(String),
    /// The explorer's view and the model disagree: a defect of the tool, not of the input.
    #[error("the explorer and the model disagree: {0}")]
    Disagreement(#[from] leaselab_explore::trace::Disagreement),
}

impl CliError {
    /// The error of `op` on `path`, for `map_err`.
    pub fn file(op: FileOp, path: &Path) -> impl FnOnce(std::io::Error) -> CliError + '_ {
        move |source| CliError::File {
            op,
            path: path.to_path_buf(),
            source,
        }
    }
}
