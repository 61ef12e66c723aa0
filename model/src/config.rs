//! The configuration of one run, including every known mistake as a plain value (the README
//! "Options" of `lab`). A teaching exercise or a negative control flips a field; it never forks code.

use crate::names::Scope;
use std::fmt;
use std::str::FromStr;

/// How the resource decides whether to accept a write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum FenceMode {
    /// The source design: one conditional `UPDATE fence_floor SET max_token = t WHERE scope = s
    /// AND max_token <= t` in the write's transaction, holding the floor row lock until commit.
    Scope,
    /// Seed 003's `FencedStore`: like `Scope` but `max_token < t`, so an equal token is
    /// rejected — which breaks a holder writing two parts with one token.
    Strict,
    /// The scope fence as a guarded upsert of the floor row (`INSERT … ON CONFLICT (scope) DO
    /// UPDATE … WHERE max_token <= EXCLUDED.max_token`): the first write of a scope creates its
    /// floor instead of being rejected, and a racing stale token still loses.
    ScopeUpsert,
    /// Per-row compare in the upsert (`WHERE part.token <= new.token`): a part the new holder
    /// never wrote has no old token to compare, so a stale write to it passes (F7).
    Row,
    /// Read the floor, compare in the client, then set the floor and write, each step
    /// autocommitted (F6a): another writer can commit between the read and the write.
    CheckThenWrite,
    /// Plain upsert, no token check at all (F5, G2 without fence).
    Off,
}

impl FenceMode {
    /// Every mode, in a stable order.
    pub const ALL: [FenceMode; 6] = [
        FenceMode::Scope,
        FenceMode::Strict,
        FenceMode::ScopeUpsert,
        FenceMode::Row,
        FenceMode::CheckThenWrite,
        FenceMode::Off,
    ];

    /// The spelling used on the command line and in traces.
    pub fn as_str(self) -> &'static str {
        match self {
            FenceMode::Scope => "scope",
            FenceMode::Strict => "strict",
            FenceMode::ScopeUpsert => "scope-upsert",
            FenceMode::Row => "row",
            FenceMode::CheckThenWrite => "check-then-write",
            FenceMode::Off => "off",
        }
    }
}

/// What survives a crash of the lease database.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum LeaseDurability {
    /// WAL-logged, `synchronous_commit = on`: every acknowledged token survives (the source).
    Logged,
    /// An UNLOGGED lease table: it comes back empty after a crash, so the next acquire hands
    /// out token 1 again. The negative control for I2.
    Unlogged,
}

impl LeaseDurability {
    /// The spelling used in traces.
    pub fn as_str(self) -> &'static str {
        match self {
            LeaseDurability::Logged => "logged",
            LeaseDurability::Unlogged => "unlogged",
        }
    }
}

/// How the side-effect publisher (F9) deduplicates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum PublishMode {
    /// `INSERT … ON CONFLICT DO NOTHING` by business key: keeps the first to arrive.
    BusinessKey,
    /// The fix: the publish carries its source token and the downstream keeps only `>=`.
    Versioned,
}

impl PublishMode {
    /// The spelling used in traces.
    pub fn as_str(self) -> &'static str {
        match self {
            PublishMode::BusinessKey => "business-key",
            PublishMode::Versioned => "versioned",
        }
    }
}

/// How a client decides its lease is still valid (used by client helpers, not by the database).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ClientExpiry {
    /// Local deadline on the client's monotonic clock, read before sending acquire (correct).
    Monotonic,
    /// Compare the client's wall clock with the server's absolute `expires_at` (G3's mistake).
    WallClock,
}

impl ClientExpiry {
    /// The spelling used in traces.
    pub fn as_str(self) -> &'static str {
        match self {
            ClientExpiry::Monotonic => "monotonic",
            ClientExpiry::WallClock => "wall-clock",
        }
    }
}

/// Error for a configuration value that is not one of the known spellings.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} `{value}`; expected one of: {expected}")]
pub struct ParseEnumError {
    /// Which setting was being parsed.
    pub what: &'static str,
    /// The text that did not match.
    pub value: String,
    /// The accepted spellings.
    pub expected: &'static str,
}

macro_rules! enum_from_str {
    ($t:ty, $what:literal, $expected:literal, [$($v:expr),*]) => {
        impl FromStr for $t {
            type Err = ParseEnumError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                $(if s == $v.as_str() { return Ok($v); })*
                Err(ParseEnumError { what: $what, value: s.to_string(), expected: $expected })
            }
        }
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

enum_from_str!(
    FenceMode,
    "fence mode",
    "scope, strict, scope-upsert, row, check-then-write, off",
    [
        FenceMode::Scope,
        FenceMode::Strict,
        FenceMode::ScopeUpsert,
        FenceMode::Row,
        FenceMode::CheckThenWrite,
        FenceMode::Off
    ]
);
enum_from_str!(
    LeaseDurability,
    "lease table durability",
    "logged, unlogged",
    [LeaseDurability::Logged, LeaseDurability::Unlogged]
);
enum_from_str!(
    PublishMode,
    "publish mode",
    "business-key, versioned",
    [PublishMode::BusinessKey, PublishMode::Versioned]
);
enum_from_str!(
    ClientExpiry,
    "client expiry",
    "monotonic, wall-clock",
    [ClientExpiry::Monotonic, ClientExpiry::WallClock]
);

/// Everything that shapes how the databases behave in one run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// The resource's fence.
    pub fence: FenceMode,
    /// Known mistake: accept a renew after the lease expired (if nobody took it over).
    pub renew_after_expiry: bool,
    /// What the lease table keeps across a crash.
    pub lease_table: LeaseDurability,
    /// How side effects are deduplicated.
    pub publish: PublishMode,
    /// How client helpers judge their own lease.
    pub client_expiry: ClientExpiry,
    /// Chubby's lock-delay: a lease that expired without a release cannot be taken over until
    /// this long after its expiry (a released lease is free at once). 0 (the source design):
    /// none. It narrows the window in which a paused holder's write can meet a new holder's;
    /// it never closes it — a pause longer than TTL plus the delay still gets through an
    /// unfenced resource.
    pub lock_delay_ms: u64,
    /// Scopes whose `fence_floor` row is seeded with 0. A scope with no floor row rejects every
    /// write under the scope fence, as the source's UPDATE matches no row.
    pub scopes: Vec<Scope>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            fence: FenceMode::Scope,
            renew_after_expiry: false,
            lease_table: LeaseDurability::Logged,
            publish: PublishMode::BusinessKey,
            client_expiry: ClientExpiry::Monotonic,
            lock_delay_ms: 0,
            scopes: vec![Scope::new(crate::names::defaults::SCOPE)],
        }
    }
}

impl Config {
    /// The default configuration with another fence mode.
    pub fn with_fence(fence: FenceMode) -> Self {
        Config {
            fence,
            ..Config::default()
        }
    }
}
