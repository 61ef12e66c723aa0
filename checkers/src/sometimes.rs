//! `sometimes` properties: events that must happen at least once in a sweep, or the faults did
//! not really fire and a clean verdict proves nothing (stateright's naming).

use crate::facts::Facts;
use leaselab_model::{Expiry, History, Holder, Op, Outcome, Token};
use std::collections::BTreeMap;
use std::fmt;

/// A pause landed after a passed local-deadline check and before the holder's next write.
pub const PAUSE_BETWEEN_CHECK_AND_WRITE: &str = "pause-between-check-and-write";
/// The holder's lease expired (by the database clock) while it was paused.
pub const EXPIRED_WHILE_PAUSED: &str = "expired-while-paused";
/// A lease was taken over: a grant with token > 1.
pub const TAKEOVER: &str = "takeover";
/// A write or publish carried a token lower than one already granted.
pub const STALE_WRITE_ATTEMPTED: &str = "stale-write-attempted";
/// A fence statement waited on the floor row lock.
pub const BLOCKED_ON_FLOOR_LOCK: &str = "blocked-on-floor-lock";
/// A database crashed and came back.
pub const DB_RESTART: &str = "db-restart";
/// An actor's local clock disagreed with the database clock.
pub const SKEWED_CLOCK: &str = "skewed-clock";

/// Every property name, in report order.
pub const ALL: [&str; 7] = [
    PAUSE_BETWEEN_CHECK_AND_WRITE,
    EXPIRED_WHILE_PAUSED,
    TAKEOVER,
    STALE_WRITE_ATTEMPTED,
    BLOCKED_ON_FLOOR_LOCK,
    DB_RESTART,
    SKEWED_CLOCK,
];

/// How often each property fired.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts(pub BTreeMap<&'static str, u64>);

impl Counts {
    /// The count of one property (0 if it never fired).
    pub fn get(&self, name: &str) -> u64 {
        self.0.get(name).copied().unwrap_or(0)
    }

    /// Adds another run's counts (for sweeps).
    pub fn add(&mut self, other: &Counts) {
        for (k, v) in &other.0 {
            *self.0.entry(k).or_insert(0) += v;
        }
    }
}

impl fmt::Display for Counts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = ALL.iter().map(|n| format!("{n}={}", self.get(n))).collect();
        f.write_str(&parts.join(" "))
    }
}

/// Per-run tallies indexed like [`ALL`]: bumped once per event, so a plain array rather than a
/// map keyed by the names (the map is built once at the end).
#[derive(Default)]
struct Tally([u64; ALL.len()]);

impl Tally {
    fn bump(&mut self, name: &'static str) {
        let i = ALL.iter().position(|n| *n == name);
        debug_assert!(i.is_some(), "`{name}` is missing from ALL");
        if let Some(i) = i {
            self.0[i] += 1;
        }
    }
}

/// Counts the `sometimes` properties of a history.
pub fn count(h: &History, f: &Facts) -> Counts {
    let mut c = Tally::default();
    let mut checked: BTreeMap<&Holder, bool> = BTreeMap::new();
    let mut expiry: BTreeMap<&Holder, Expiry> = BTreeMap::new();
    let mut paused_at: BTreeMap<&Holder, (u64, Expiry)> = BTreeMap::new();
    let mut max_granted = Token(0);
    for g in &f.grants {
        if g.token.0 > 1 {
            c.bump(TAKEOVER);
        }
    }
    for e in &h.events {
        if e.local != e.at {
            c.bump(SKEWED_CLOCK);
        }
        match (&e.op, &e.outcome) {
            (Op::Check { .. }, o) => {
                checked.insert(&e.actor, *o == Outcome::Valid);
            }
            (Op::Pause, _) => {
                if checked.get(&e.actor).copied().unwrap_or(false) {
                    c.bump(PAUSE_BETWEEN_CHECK_AND_WRITE);
                }
                let exp = expiry.get(&e.actor).copied().unwrap_or(Expiry::NegInfinity);
                paused_at.insert(&e.actor, (e.at.0, exp));
            }
            (Op::Resume, _) => {
                if let Some((t1, Expiry::At(x))) = paused_at.remove(&e.actor) {
                    if t1 < x.0 && x <= e.at {
                        c.bump(EXPIRED_WHILE_PAUSED);
                    }
                }
            }
            (Op::Acquire { holder, .. }, Outcome::Granted { token, expires }) => {
                expiry.insert(holder, *expires);
                max_granted = max_granted.max(*token);
            }
            (Op::Renew { holder, .. }, Outcome::Renewed { expires }) => {
                expiry.insert(holder, *expires);
            }
            (Op::Restart { .. }, Outcome::Ok) => c.bump(DB_RESTART),
            _ => {}
        }
        let token = match &e.op {
            Op::Write { token, .. }
            | Op::Fence { token, .. }
            | Op::Upsert { token, .. }
            | Op::Publish { token, .. } => Some(*token),
            _ => None,
        };
        if let Some(t) = token {
            checked.insert(&e.actor, false);
            if t < max_granted
                && matches!(
                    e.op,
                    Op::Write { .. } | Op::Fence { .. } | Op::Publish { .. }
                )
            {
                c.bump(STALE_WRITE_ATTEMPTED);
            }
            if matches!(e.op, Op::Write { .. } | Op::Fence { .. }) && e.outcome == Outcome::Blocked
            {
                c.bump(BLOCKED_ON_FLOOR_LOCK);
            }
        }
    }
    Counts(ALL.iter().copied().zip(c.0).collect())
}
