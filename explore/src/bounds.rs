//! The bounds of one search ([`Bounds`]) and the holders' configuration they make: times in
//! ticks of the bounds, and no reply ever timed out.

use leaselab_model::holder::HolderCfg;
use leaselab_model::names::defaults;
use leaselab_model::{FenceMode, Holder, LeaseDurability, LeaseName, Part, Scope};

/// The most holders a state has room for.
pub const MAX_HOLDERS: usize = 3;

/// The bounds and settings of one search.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bounds {
    /// Holders (1–3).
    pub holders: usize,
    /// The resource's fence.
    pub fence: FenceMode,
    /// The lease table's durability (unlogged: the I2 negative control, with `crash`).
    pub lease_table: LeaseDurability,
    /// Whether a crash-restart of both databases is an action (at most once).
    pub crash: bool,
    /// The last tick time may reach.
    pub max_ticks: u8,
    /// Milliseconds per tick (for the trace a counterexample becomes).
    pub tick_ms: u64,
    /// Lease TTL in ticks.
    pub ttl: u8,
    /// Renew period in ticks.
    pub renew: u8,
    /// Local safety margin in ticks.
    pub margin: u8,
    /// Parts each job writes (1 or 2: `summary`, `detail`).
    pub parts: u8,
    /// Acquires each holder may make (bounds the tokens).
    pub acquires: u8,
    /// Holder 0's clock runs at `slow.0 / slow.1` of the database clock's rate (1/1: none).
    pub slow: (u8, u8),
}

impl Default for Bounds {
    /// Two holders, the sources' TTL 1500 ms, renew 400 ms, margin 300 ms at 100 ms ticks, for
    /// 3 s of database time.
    fn default() -> Self {
        Bounds {
            holders: 2,
            fence: FenceMode::Scope,
            lease_table: LeaseDurability::Logged,
            crash: false,
            max_ticks: 30,
            tick_ms: 100,
            ttl: 15,
            renew: 4,
            margin: 3,
            parts: 2,
            acquires: 2,
            slow: (1, 1),
        }
    }
}

pub(crate) fn ms(b: &Bounds, ticks: u8) -> u64 {
    ticks as u64 * b.tick_ms
}

/// The holders' configuration in ticks of the bounds. A request's reply never times out: the
/// search answers every statement, or lets it wait for a lock that another holder releases
/// when it is scheduled, and a timeout would only add states in which a holder gives up on a
/// reply the scheduler delays. So the timeout is the end of time (`Millis::plus` saturates),
/// the same in every state, and distinguishes none. A refused or ended job starts again as soon
/// as the holder is scheduled.
pub(crate) fn cfgs(b: &Bounds) -> Vec<HolderCfg> {
    let parts = [defaults::SUMMARY, defaults::DETAIL];
    (0..MAX_HOLDERS)
        .map(|i| HolderCfg {
            name: Holder::new(leaselab_model::names::holder_name(i)),
            lease: LeaseName::new(defaults::LEASE),
            scope: Scope::new(defaults::SCOPE),
            parts: parts
                .iter()
                .take(b.parts.clamp(1, 2) as usize)
                .map(|p| Part::new(*p))
                .collect(),
            ttl_ms: ms(b, b.ttl),
            renew_ms: ms(b, b.renew),
            margin_ms: ms(b, b.margin),
            rpc_timeout_ms: u64::MAX,
            retry_ms: 0,
            job_gap_ms: 0,
            start_ms: 0,
            whole_writes: false,
        })
        .collect()
}
