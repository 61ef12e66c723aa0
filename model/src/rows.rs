//! The rows of the two databases, shaped like the source schema so the PostgreSQL adapter can
//! map them one to one (`lease` in `lease26`; `fence_floor`, `report_part`, `write_attempt` and
//! the publish stand-in in `res26`). `written_at` is deliberately absent: it is wall-clock in the
//! source and never compared.

use crate::names::{Holder, Token};
use crate::time::Expiry;

/// A row of `lease`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseRow {
    /// Current (or last) holder.
    pub holder: Holder,
    /// Token of the current (or last) holding.
    pub token: Token,
    /// Held iff `expires_at > now`.
    pub expires_at: Expiry,
}

/// A row of `report_part`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartRow {
    /// What was written.
    pub content: String,
    /// Who wrote it.
    pub writer: Holder,
    /// With which token.
    pub token: Token,
}

/// How a write attempt ended, as recorded in `write_attempt`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AttemptOutcome {
    /// Committed.
    Accepted,
    /// The fence (or the row guard) refused it and it was rolled back.
    Rejected,
}

impl AttemptOutcome {
    /// The spelling used in traces.
    pub fn as_str(self) -> &'static str {
        match self {
            AttemptOutcome::Accepted => "accepted",
            AttemptOutcome::Rejected => "rejected",
        }
    }
}

/// A row of `write_attempt`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attempt {
    /// Scope written.
    pub scope: crate::names::Scope,
    /// Part written.
    pub part: crate::names::Part,
    /// Writer.
    pub writer: Holder,
    /// Token the write carried.
    pub token: Token,
    /// How it ended.
    pub outcome: AttemptOutcome,
}
