//! Virtual time. Nothing in the model reads the OS clock: every transition takes `now` as an
//! argument, and the only source of `now` in a lab run is a [`ManualClock`] that a test or a
//! driver advances explicitly. That is what makes a run reproducible from its trace.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

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

/// A shared, explicitly advanced clock (the seed-003 `ManualClock`).
///
/// Clones share one counter, so a case can hand the clock to several actors and advance it
/// once for all of them. Atomic rather than `Cell` so the loom/threaded implementations can
/// share it too; the model itself never needs more than `Relaxed` because it is driven from one
/// thread.
#[derive(Clone, Debug, Default)]
pub struct ManualClock(Arc<AtomicU64>);

impl ManualClock {
    /// A clock at time 0.
    pub fn new() -> Self {
        Self::default()
    }

    /// The current virtual time.
    pub fn now(&self) -> Millis {
        Millis(self.0.load(Ordering::Relaxed))
    }

    /// Moves time forward by `ms` and returns the new time.
    pub fn advance(&self, ms: u64) -> Millis {
        let new = self.0.fetch_add(ms, Ordering::Relaxed).saturating_add(ms);
        Millis(new)
    }

    /// Sets the time. Used by replay, which takes each event's recorded time as authoritative.
    /// Time never goes backwards on the authority clock, so a smaller value is ignored and the
    /// current time is returned.
    pub fn set(&self, at: Millis) -> Millis {
        let prev = self.0.fetch_max(at.0, Ordering::Relaxed);
        Millis(prev.max(at.0))
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

    #[test]
    fn manual_clock_is_shared_and_monotonic() {
        let c = ManualClock::new();
        let d = c.clone();
        c.advance(250);
        assert_eq!(d.now(), Millis(250));
        assert_eq!(d.set(Millis(100)), Millis(250));
        assert_eq!(d.set(Millis(300)), Millis(300));
    }
}
