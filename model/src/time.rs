//! Virtual time. Nothing in the model reads the OS clock: every transition takes `now` as an
//! argument, and the only source of `now` is whoever drives the run (a case, a replay, a
//! simulated host) setting it explicitly. That is what makes a run reproducible from its trace.

use std::fmt;

/// An instant on a virtual clock, in milliseconds since the start of the run.
///
/// Milliseconds because the sources' parameters (TTL 100–1500 ms, renew 400 ms, margin 300 ms)
/// are all whole milliseconds, and PostgreSQL's microseconds must be a whole multiple of them
/// for the differential mode to compare exactly.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Millis(pub u64);

impl Millis {
    /// The start of every run.
    pub const ZERO: Millis = Millis(0);

    /// This instant plus `ms` milliseconds (saturating: virtual time never wraps).
    pub fn plus(self, ms: u64) -> Millis {
        Millis(self.0.saturating_add(ms))
    }

    /// Milliseconds from `earlier` to `self`, 0 if `earlier` is later.
    pub fn since(self, earlier: Millis) -> u64 {
        self.0.saturating_sub(earlier.0)
    }
}

impl fmt::Display for Millis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// When a lease row stops being held.
///
/// A released lease holds `-infinity` (as in the source's SQL), which is a special case of
/// expired: it compares below every instant, so `expires_at <= now` is true for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Expiry {
    /// `-infinity`: the lease was released.
    NegInfinity,
    /// Expires at this instant (expired iff `at <= now`).
    At(Millis),
}

impl Expiry {
    /// Expired iff `expires_at <= now` — the boundary instant itself is already expired.
    pub fn is_expired_at(self, now: Millis) -> bool {
        match self {
            Expiry::NegInfinity => true,
            Expiry::At(at) => at <= now,
        }
    }
}

impl fmt::Display for Expiry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expiry::NegInfinity => f.write_str("-infinity"),
            Expiry::At(at) => write!(f, "{}", at.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_boundary_is_expired() {
        assert!(Expiry::At(Millis(100)).is_expired_at(Millis(100)));
        assert!(!Expiry::At(Millis(100)).is_expired_at(Millis(99)));
        assert!(Expiry::NegInfinity.is_expired_at(Millis(0)));
        assert!(Expiry::NegInfinity < Expiry::At(Millis(0)));
    }
}
