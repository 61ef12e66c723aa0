//! Holder-side rules that do not touch the database: the local deadline and seed 003's
//! `LeaseGuard`. They decide when a holder *stops starting* writes; safety never depends on
//! them — only the resource's fence gives that (F4).

use crate::config::ClientExpiry;
use crate::time::Millis;

/// The holder's own idea of when its lease ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LocalDeadline {
    /// On the holder's clock; writes may start while `local < deadline`.
    pub deadline: Millis,
}

impl LocalDeadline {
    /// The correct rule: the holder's monotonic clock read *before* sending the request, plus
    /// ttl − margin. The server computes `expires_at` no earlier than the request left, so a
    /// deadline from an earlier start can only be earlier than the server's.
    pub fn from_request_start(sent_at_local: Millis, ttl_ms: u64, margin_ms: u64) -> Self {
        LocalDeadline {
            deadline: sent_at_local.plus(ttl_ms.saturating_sub(margin_ms)),
        }
    }

    /// Renewal moves the deadline (G1): a client that keeps the deadline recorded at acquire
    /// gives up a lease the server still holds for it.
    pub fn renewed(self, sent_at_local: Millis, ttl_ms: u64, margin_ms: u64) -> Self {
        Self::from_request_start(sent_at_local, ttl_ms, margin_ms)
    }

    /// Whether a write may start now.
    pub fn allows(self, local_now: Millis) -> bool {
        local_now < self.deadline
    }
}

/// G3: whether a client believes its lease valid, by either rule. `wall_now` is the client's
/// wall clock (it may step backwards, hence signed); `server_expires_at` is the absolute
/// expiry the server reported at acquire.
pub fn client_thinks_valid(
    rule: ClientExpiry,
    wall_now: i64,
    server_expires_at: i64,
    mono_now: Millis,
    local: LocalDeadline,
) -> bool {
    match rule {
        ClientExpiry::WallClock => wall_now < server_expires_at,
        ClientExpiry::Monotonic => local.allows(mono_now),
    }
}

/// Seed 003's `LeaseGuard`: a renewer every TTL/3 sets `lost` on a failed renew; the worker
/// checks `lost` before each write, aborts and re-queues instead of reclaiming.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LeaseGuard {
    lost: bool,
}

impl LeaseGuard {
    /// The renew period the source uses for a given TTL.
    pub fn renew_every(ttl_ms: u64) -> u64 {
        (ttl_ms / 3).max(1)
    }

    /// Records a renew result; a failure (refused or timed out) sets `lost` for good.
    pub fn on_renew(&mut self, ok: bool) {
        if !ok {
            self.lost = true;
        }
    }

    /// Whether the lease was observed lost.
    pub fn is_lost(&self) -> bool {
        self.lost
    }

    /// Checked before each write: no new write starts once `lost` is set.
    pub fn may_start_write(&self) -> bool {
        !self.lost
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadline_from_request_start_subtracts_margin() {
        let d = LocalDeadline::from_request_start(Millis(10), 1500, 300);
        assert_eq!(d.deadline, Millis(1210));
        assert!(d.allows(Millis(1209)));
        assert!(!d.allows(Millis(1210)));
    }

    #[test]
    fn guard_stays_lost() {
        let mut g = LeaseGuard::default();
        assert!(g.may_start_write());
        g.on_renew(false);
        g.on_renew(true);
        assert!(g.is_lost() && !g.may_start_write());
        assert_eq!(LeaseGuard::renew_every(1500), 500);
    }
}
