//! How a paused holder's clock behaves. The clock itself — offset, rate skew, NTP steps,
//! freeze — is the model's [`NodeClock`] (turmoil has a single clock for all hosts).

pub use leaselab_model::clock::NodeClock;

/// How a paused node's clock behaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PauseKind {
    /// SIGSTOP: the clock keeps running; timers that came due fire on resume.
    Sigstop,
    /// VM freeze: the clock stands still while frozen, then jumps to the right time on resume.
    Freeze,
}

impl PauseKind {
    /// Spelling in fault lines.
    pub fn as_str(self) -> &'static str {
        match self {
            PauseKind::Sigstop => "sigstop",
            PauseKind::Freeze => "freeze",
        }
    }
}
