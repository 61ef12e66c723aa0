//! The explored state: each holder's own state beside a packed view of the two databases, its
//! hash (the canonical form of each holder), the bits of what broke and what was seen on the
//! way, and the representative of its symmetry class.

use crate::bounds::MAX_HOLDERS;
use leaselab_checkers::sometimes::Sometimes;
use leaselab_model::holder::{HolderCfg, HolderMachine, HolderState};
use leaselab_model::{DbName, Op, Token};

/// A statement a holder sends, compactly (tokens fit a byte within the bounds).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stmt {
    /// Acquire the lease.
    Acquire,
    /// Renew with this token.
    Renew(u8),
    /// Release with this token.
    Release(u8),
    /// Begin the write's transaction.
    Begin,
    /// The fence statement with this token.
    Fence(u8),
    /// The upsert of part `part` with `token`.
    Upsert {
        /// Part index.
        part: u8,
        /// Token.
        token: u8,
    },
    /// Commit.
    Commit,
    /// Roll back.
    Rollback,
}

/// A statement the holder sent that the view has not run yet: it follows a code point, or it
/// would wait for a row lock. `req` is the holder's request id (the holder's own state already
/// says which request it awaits, so only the statement is hashed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pending {
    /// The holder's request id.
    pub req: u64,
    /// The statement.
    pub stmt: Stmt,
}

/// One holder: its own state and what the explorer keeps about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    /// The holder's state.
    pub h: HolderState,
    /// Its statement waiting for a [`Action::Run`].
    pub pending: Option<Pending>,
    /// Leases granted to it (bounded by [`Bounds::acquires`](crate::system::Bounds::acquires)).
    pub acquired: u8,
    /// Its resource connection has a transaction open.
    pub txn: bool,
    /// A crash cut that transaction: the connection's next statement is answered `conn-lost`.
    pub cut: bool,
}

/// The lease row, compactly.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Row {
    /// Holder index.
    pub holder: u8,
    /// Token.
    pub token: u8,
    /// Expiry tick; `None` is `-infinity` (released).
    pub expires: Option<u8>,
}

/// Everything one explored state holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct State {
    /// Database time, in ticks.
    pub now: u8,
    /// The committed lease row.
    pub lease: Option<Row>,
    /// The row an unlogged lease table lost in a crash: its holding has not expired by the
    /// clock, whatever the table says (what I1 judges).
    pub ghost: Option<Row>,
    /// The committed floor of the scope.
    pub floor: u8,
    /// Who holds the floor's row lock (an open transaction), and the token it wrote there.
    pub floor_lock: Option<(u8, u8)>,
    /// Committed parts: (writer, token).
    pub parts: [Option<(u8, u8)>; 2],
    /// Part row locks: (holder, token written; 0 for a lock without a write).
    pub part_locks: [Option<(u8, u8)>; 2],
    /// The holders.
    pub holders: [Slot; MAX_HOLDERS],
    /// Crashes so far.
    pub crashes: u8,
    /// Highest token ever granted.
    pub max_granted: u8,
    /// Highest token of an accepted write.
    pub max_accepted: u8,
    /// Whose write carried it.
    pub accepted_by: Option<u8>,
    /// Invariants broken on the way here (bits: I1, I2, I3, progress).
    pub broken: u8,
    /// `sometimes` events seen on the way here (bits: [`seen`]).
    pub seen: u8,
}

/// The state hashes as the packed view, then each holder in its canonical form
/// ([`HolderState::canonical`]): states that differ only in job numbers, connection
/// generations or request ids do the same from here on, and merge. (Equal states hash equal;
/// the converse is what merging means.)
impl std::hash::Hash for State {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        const NONE: u8 = u8::MAX;
        let row = |r: Option<Row>| match r {
            None => [NONE; 3],
            Some(r) => [r.holder, r.token, r.expires.unwrap_or(NONE - 1)],
        };
        let pair = |p: Option<(u8, u8)>| p.map_or([NONE; 2], |(a, b)| [a, b]);
        let mut b = [0u8; 26];
        b[0] = self.now;
        b[1..4].copy_from_slice(&row(self.lease));
        b[4..7].copy_from_slice(&row(self.ghost));
        b[7] = self.floor;
        b[8..10].copy_from_slice(&pair(self.floor_lock));
        b[10..12].copy_from_slice(&pair(self.parts[0]));
        b[12..14].copy_from_slice(&pair(self.parts[1]));
        b[14..16].copy_from_slice(&pair(self.part_locks[0]));
        b[16..18].copy_from_slice(&pair(self.part_locks[1]));
        b[18] = self.crashes;
        b[19] = self.max_granted;
        b[20] = self.max_accepted;
        b[21] = self.accepted_by.unwrap_or(NONE);
        b[22] = self.broken;
        b[23] = self.seen;
        state.write(&b);
        for slot in &self.holders {
            slot.key().hash(state);
        }
    }
}

impl Slot {
    /// What of the slot decides what happens next (its hash, and its place when holders are
    /// sorted for symmetry).
    pub(crate) fn key(&self) -> (HolderState, Option<Stmt>, u8, bool, bool) {
        (
            self.h.canonical(),
            self.pending.map(|p| p.stmt),
            self.acquired,
            self.txn,
            self.cut,
        )
    }
}

/// Bits of [`State::broken`].
pub mod broke {
    /// Two unexpired holders.
    pub const I1: u8 = 1;
    /// A token granted again.
    pub const I2: u8 = 2;
    /// An accepted write's token below one accepted before it.
    pub const I3: u8 = 4;
    /// The current holder's own write refused (the strict fence with two parts).
    pub const PROGRESS: u8 = 8;
    /// A stale holder's write kept: below a token accepted before it, or a token accepted
    /// for two holders.
    pub const ACCEPTANCE: u8 = 16;
}

/// An `always` property of the search: a check of the History checkers, or progress (which
/// they have no check for). Its name is the check's own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Always {
    /// At most one unexpired holder.
    I1,
    /// No token granted twice.
    I2,
    /// Accepted writes' tokens never go down.
    I3,
    /// No stale holder's write kept.
    Acceptance,
    /// The current holder's own write is not refused.
    Progress,
}

impl Always {
    /// Every one, in the order the search lists them.
    pub const ALL: [Always; 5] = [
        Always::I1,
        Always::I2,
        Always::I3,
        Always::Acceptance,
        Always::Progress,
    ];

    /// The check of the History checkers it is (`progress` has none).
    pub fn check(self) -> Option<leaselab_checkers::Check> {
        use leaselab_checkers::Check;
        match self {
            Always::I1 => Some(Check::I1),
            Always::I2 => Some(Check::I2),
            Always::I3 => Some(Check::I3),
            Always::Acceptance => Some(Check::Acceptance),
            Always::Progress => None,
        }
    }

    /// Its name: the check's, or `progress`.
    pub fn name(self) -> &'static str {
        self.check()
            .map_or("progress", leaselab_checkers::Check::as_str)
    }

    /// Its bit of [`State::broken`].
    pub fn bit(self) -> u8 {
        match self {
            Always::I1 => broke::I1,
            Always::I2 => broke::I2,
            Always::I3 => broke::I3,
            Always::Acceptance => broke::ACCEPTANCE,
            Always::Progress => broke::PROGRESS,
        }
    }
}

/// Bits of [`State::seen`], one per `sometimes` property the search follows.
pub mod seen {
    /// [`Sometimes::StaleWriteAttempted`](leaselab_checkers::sometimes::Sometimes).
    pub const STALE_WRITE_ATTEMPTED: u8 = 1;
    /// [`Sometimes::Takeover`](leaselab_checkers::sometimes::Sometimes).
    pub const TAKEOVER: u8 = 2;
    /// [`Sometimes::PauseBetweenCheckAndWrite`](leaselab_checkers::sometimes::Sometimes).
    pub const PAUSE_BETWEEN_CHECK_AND_WRITE: u8 = 4;
    /// [`Sometimes::DbRestart`](leaselab_checkers::sometimes::Sometimes).
    pub const DB_RESTART: u8 = 8;
}

/// The `sometimes` properties, named as the History checkers name them: name and bit of
/// [`State::seen`].
pub const SOMETIMES: [(Sometimes, u8); 4] = [
    (Sometimes::StaleWriteAttempted, seen::STALE_WRITE_ATTEMPTED),
    (Sometimes::Takeover, seen::TAKEOVER),
    (
        Sometimes::PauseBetweenCheckAndWrite,
        seen::PAUSE_BETWEEN_CHECK_AND_WRITE,
    ),
    (Sometimes::DbRestart, seen::DB_RESTART),
];

/// One step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// Database time advances one tick.
    Tick,
    /// The holder's timers that are due fire (a job starts with an acquire, the renewer
    /// renews), and what they send runs.
    Timer(u8),
    /// The holder's deferred statement (named, so that a path reads as what each step sent)
    /// runs, and what its reply makes the holder send.
    Run(u8, Stmt),
    /// Both databases crash and restart.
    Crash,
}

impl Stmt {
    /// The compact form of a statement of holder `cfg`.
    pub(crate) fn of(op: &Op, cfg: &HolderCfg) -> Stmt {
        let t = |t: &Token| t.0 as u8;
        match op {
            Op::Acquire { .. } => Stmt::Acquire,
            Op::Renew { token, .. } => Stmt::Renew(t(token)),
            Op::Release { token, .. } => Stmt::Release(t(token)),
            Op::Fence { token, .. } => Stmt::Fence(t(token)),
            Op::Upsert { part, token, .. } => Stmt::Upsert {
                part: cfg.parts.iter().position(|p| p == part).unwrap_or(0) as u8,
                token: t(token),
            },
            Op::Commit { .. } => Stmt::Commit,
            Op::Rollback { .. } => Stmt::Rollback,
            // `Op::Begin`; a holder configured as here (writes statement by statement) sends
            // nothing else.
            _ => Stmt::Begin,
        }
    }

    /// The statement in full, as holder `m` sends it.
    pub(crate) fn op(self, m: &HolderMachine<&HolderCfg>) -> Op {
        let cfg = m.cfg();
        let token = |t: u8| Token(t as u64);
        match self {
            Stmt::Acquire => Op::Acquire {
                lease: cfg.lease.clone(),
                holder: cfg.name.clone(),
                ttl_ms: cfg.ttl_ms,
            },
            Stmt::Renew(t) => Op::Renew {
                lease: cfg.lease.clone(),
                holder: cfg.name.clone(),
                token: token(t),
                ttl_ms: cfg.ttl_ms,
            },
            Stmt::Release(t) => Op::Release {
                lease: cfg.lease.clone(),
                holder: cfg.name.clone(),
                token: token(t),
            },
            Stmt::Begin => Op::Begin { db: DbName::Res },
            Stmt::Fence(t) => Op::Fence {
                scope: cfg.scope.clone(),
                token: token(t),
            },
            Stmt::Upsert { part, token: t } => Op::Upsert {
                scope: cfg.scope.clone(),
                part: cfg.parts[part as usize].clone(),
                content: m.content(token(t)),
                token: token(t),
            },
            Stmt::Commit => Op::Commit { db: DbName::Res },
            Stmt::Rollback => Op::Rollback { db: DbName::Res },
        }
    }

    pub(crate) fn on_res(self) -> bool {
        !matches!(self, Stmt::Acquire | Stmt::Renew(_) | Stmt::Release(_))
    }
}

/// Symmetry reduction: holders are interchangeable except holder 0 when its clock is slow.
/// The representative sorts the holders (by a hash of what decides their future, which is a
/// total order on distinct slots up to the hasher's collisions, where merging only stops) and
/// renames every holder index with them.
pub fn representative(s: &State, holders: usize, fixed_first: bool) -> State {
    use std::hash::{Hash, Hasher};
    let key = |slot: &Slot| {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        slot.key().hash(&mut h);
        h.finish()
    };
    let start = usize::from(fixed_first);
    let mut order: Vec<usize> = (0..holders).collect();
    order[start..].sort_by_key(|&i| key(&s.holders[i]));
    // new index of old holder i
    let mut rename = [0u8; MAX_HOLDERS];
    for (new, &old) in order.iter().enumerate() {
        rename[old] = new as u8;
    }
    let mut n = s.clone();
    for (new, &old) in order.iter().enumerate() {
        n.holders[new] = s.holders[old];
    }
    let r = |h: u8| {
        if (h as usize) < holders {
            rename[h as usize]
        } else {
            h
        }
    };
    n.lease = s.lease.map(|l| Row {
        holder: r(l.holder),
        ..l
    });
    n.ghost = s.ghost.map(|l| Row {
        holder: r(l.holder),
        ..l
    });
    n.accepted_by = s.accepted_by.map(r);
    n.floor_lock = s.floor_lock.map(|(h, t)| (r(h), t));
    n.parts = s.parts.map(|x| x.map(|(h, t)| (r(h), t)));
    n.part_locks = s.part_locks.map(|x| x.map(|(h, t)| (r(h), t)));
    n
}
