//! `sometimes` properties: events that must happen at least once in a sweep, or the faults did
//! not really fire and a clean verdict proves nothing (stateright's naming).

use crate::facts::Facts;
use leaselab_model::{DbName, Event, Expiry, History, Holder, Op, Outcome, Token};
use std::collections::BTreeMap;
use std::fmt;

/// One `sometimes` property. Every tool names them by this type (the sweep's tallies, `lab`'s
/// notes, the exhaustive checker's properties), so one spelling is shared by all.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Sometimes {
    /// A pause landed after a passed local-deadline check and before the holder's next write.
    PauseBetweenCheckAndWrite,
    /// A pause landed inside a write's transaction after its statements were sent, before its
    /// commit: a write sent while the lease was valid can still land after it ended.
    PauseBeforeCommit,
    /// The holder's lease expired (by the database clock) while it was paused.
    ExpiredWhilePaused,
    /// A lease was taken over: a grant with token > 1.
    Takeover,
    /// A write or publish reached the resource with a token lower than one already granted:
    /// one of its statements was sent then, or its commit was (a write sent in time and
    /// committed late) — once per write.
    StaleWriteAttempted,
    /// A fence statement waited on the floor row lock.
    BlockedOnFloorLock,
    /// A database crashed and came back.
    DbRestart,
    /// An actor's local clock disagreed with the database clock.
    SkewedClock,
}

impl Sometimes {
    /// Every property, in report order.
    pub const ALL: [Sometimes; 8] = [
        Sometimes::PauseBetweenCheckAndWrite,
        Sometimes::PauseBeforeCommit,
        Sometimes::ExpiredWhilePaused,
        Sometimes::Takeover,
        Sometimes::StaleWriteAttempted,
        Sometimes::BlockedOnFloorLock,
        Sometimes::DbRestart,
        Sometimes::SkewedClock,
    ];

    /// The name reports print.
    pub const fn name(self) -> &'static str {
        match self {
            Sometimes::PauseBetweenCheckAndWrite => "pause-between-check-and-write",
            Sometimes::PauseBeforeCommit => "pause-before-commit",
            Sometimes::ExpiredWhilePaused => "expired-while-paused",
            Sometimes::Takeover => "takeover",
            Sometimes::StaleWriteAttempted => "stale-write-attempted",
            Sometimes::BlockedOnFloorLock => "blocked-on-floor-lock",
            Sometimes::DbRestart => "db-restart",
            Sometimes::SkewedClock => "skewed-clock",
        }
    }
}

impl fmt::Display for Sometimes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How often each property fired, in report order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts([u64; Sometimes::ALL.len()]);

impl Counts {
    /// The count of one property (0 if it never fired).
    pub fn get(&self, p: Sometimes) -> u64 {
        self.0[p as usize]
    }

    /// Adds another run's counts (for sweeps).
    pub fn add(&mut self, other: &Counts) {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a += b;
        }
    }

    /// 1 for each property that fired at all, 0 for the others: summed over a sweep's runs,
    /// the number of runs in which each fired.
    pub fn fired(&self) -> Counts {
        Counts(self.0.map(|n| u64::from(n > 0)))
    }

    /// Every property with its count, in report order.
    pub fn iter(&self) -> impl Iterator<Item = (Sometimes, u64)> + '_ {
        Sometimes::ALL.into_iter().zip(self.0)
    }

    fn bump(&mut self, p: Sometimes) {
        self.0[p as usize] += 1;
    }
}

impl fmt::Display for Counts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.iter().map(|(p, n)| format!("{p}={n}")).collect();
        f.write_str(&parts.join(" "))
    }
}

/// Counts the `sometimes` properties of a history.
pub fn count(h: &History, f: &Facts) -> Counts {
    let mut c = Counter::default();
    for e in &h.events {
        c.push(e);
    }
    c.finish(f)
}

/// The `sometimes` counts taken event by event (what a history read as a stream needs).
#[derive(Debug, Default)]
pub struct Counter {
    c: Counts,
    checked: BTreeMap<Holder, bool>,
    expiry: BTreeMap<Holder, Expiry>,
    paused_at: BTreeMap<Holder, (u64, Expiry)>,
    max_granted: Token,
    /// Each open transaction on the resource, by actor and connection: the token its
    /// statements carried (once one was sent), and whether it was already counted stale.
    writes: BTreeMap<(Holder, String), Writing>,
}

/// A write transaction under way.
#[derive(Debug, Default)]
struct Writing {
    token: Option<Token>,
    counted: bool,
}

impl Counter {
    /// Takes the next event.
    pub fn push(&mut self, e: &Event) {
        let c = &mut self.c;
        if e.local != e.at {
            c.bump(Sometimes::SkewedClock);
        }
        match (&e.op, &e.outcome) {
            (Op::Check { .. }, o) => {
                self.checked.insert(e.actor.clone(), *o == Outcome::Valid);
            }
            (Op::Pause, _) => {
                if self.checked.get(&e.actor).copied().unwrap_or(false) {
                    c.bump(Sometimes::PauseBetweenCheckAndWrite);
                }
                if self
                    .writes
                    .iter()
                    .any(|((a, _), w)| *a == e.actor && w.token.is_some())
                {
                    c.bump(Sometimes::PauseBeforeCommit);
                }
                let exp = self
                    .expiry
                    .get(&e.actor)
                    .copied()
                    .unwrap_or(Expiry::NegInfinity);
                self.paused_at.insert(e.actor.clone(), (e.at.0, exp));
            }
            (Op::Resume, _) => {
                if let Some((t1, Expiry::At(x))) = self.paused_at.remove(&e.actor) {
                    if t1 < x.0 && x <= e.at {
                        c.bump(Sometimes::ExpiredWhilePaused);
                    }
                }
            }
            (Op::Acquire { holder, .. }, Outcome::Granted { token, expires }) => {
                self.expiry.insert(holder.clone(), *expires);
                self.max_granted = self.max_granted.max(*token);
            }
            (Op::Renew { holder, .. }, Outcome::Renewed { expires }) => {
                self.expiry.insert(holder.clone(), *expires);
            }
            (Op::Restart { .. }, Outcome::Ok) => c.bump(Sometimes::DbRestart),
            (
                Op::Begin {
                    db: DbName::Res, ..
                },
                _,
            ) => {
                self.writes.insert(
                    (e.actor.clone(), e.conn_str().to_string()),
                    Writing::default(),
                );
            }
            (Op::Commit { db: DbName::Res }, _) => {
                // The commit is when the write reaches the resource: stale if a newer token
                // was granted since its statements went out.
                let key = (e.actor.clone(), e.conn_str().to_string());
                if let Some(w) = self.writes.remove(&key) {
                    if w.token.is_some_and(|t| t < self.max_granted) && !w.counted {
                        c.bump(Sometimes::StaleWriteAttempted);
                    }
                }
            }
            (Op::Rollback { db: DbName::Res } | Op::Disconnect { db: DbName::Res }, _) => {
                self.writes
                    .remove(&(e.actor.clone(), e.conn_str().to_string()));
            }
            (Op::Crash { db: DbName::Res }, _) => self.writes.clear(),
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
            self.checked.insert(e.actor.clone(), false);
            let stale = t < self.max_granted;
            match self
                .writes
                .get_mut(&(e.actor.clone(), e.conn_str().to_string()))
            {
                // A statement of an open transaction: the write is counted once, at the first
                // of its statements sent stale, else at its commit.
                Some(w) => {
                    w.token = Some(t);
                    if stale && !w.counted {
                        w.counted = true;
                        c.bump(Sometimes::StaleWriteAttempted);
                    }
                }
                // A write on its own (one call, or an autocommitted statement).
                None if stale => c.bump(Sometimes::StaleWriteAttempted),
                None => {}
            }
            if matches!(e.op, Op::Write { .. } | Op::Fence { .. }) && e.outcome == Outcome::Blocked
            {
                c.bump(Sometimes::BlockedOnFloorLock);
            }
        }
    }

    /// The counts, with the takeovers among `f`'s grants.
    pub fn finish(mut self, f: &Facts) -> Counts {
        for g in &f.grants {
            if g.token.0 > 1 {
                self.c.bump(Sometimes::Takeover);
            }
        }
        self.c
    }
}
