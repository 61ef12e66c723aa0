//! The lease system as a stateright [`Model`]: K holders stepping through the source's job loop
//! (acquire, local deadline check, fence, upsert, commit, renew on its own, release), abstract
//! time in ticks, and a crash-restart of both databases as an action.
//!
//! The state is a compact view (a few bytes per holder) so that it hashes and clones cheaply;
//! every decision in it is taken by the model's own rule functions — `rules::acquire`,
//! `rules::renew`, `rules::release`, `rules::floor_passes`, `rules::row_guard_passes` and
//! `LocalDeadline` — on rows built from the view, and when a statement waits is asked of the
//! model's lock protocol (`leaselab_model::protocol`): the fence `UPDATE` of the scope fence
//! evaluates its `WHERE` on the committed floor first and waits for the floor's row lock only
//! if that qualifies; the guarded upsert and the part upserts always wait for a locked row.
//! What the view keeps itself is which holder holds which lock (until commit). A waiting statement is an action that is
//! not enabled yet. Every counterexample is re-run on the model itself, step by step, and the
//! outcomes compared ([`crate::trace`]), so the view cannot drift from the model unnoticed.
//!
//! A pause is a holder that is not scheduled while time ticks (its renewer too); skew is a
//! holder whose clock advances at another rate ([`Bounds::slow`]).

use leaselab_checkers::sometimes::Sometimes;
use leaselab_model::client::LocalDeadline;
use leaselab_model::{
    protocol, rules, Expiry, FenceMode, Holder, LeaseDurability, LeaseRow, Millis, Token,
};
use stateright::{Model, Property};

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

/// Where a holder is in its job loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Pc {
    /// Wants the lease.
    Idle,
    /// Holds a token; next: the local check before part `n`.
    Check(u8),
    /// The check passed; next: the fence of part `n` (a pause here is F4's).
    Checked(u8),
    /// The fence passed (inside the write's transaction, or read for check-then-write).
    Fenced(u8),
    /// The part is upserted, the transaction still open; next: commit.
    Upserted(u8),
    /// Every part written; next: release.
    Release,
    /// Out of acquires.
    Done,
}

/// One holder, in a few bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HolderState {
    /// Job loop position.
    pub pc: Pc,
    /// Token held (0: none).
    pub token: u8,
    /// Local deadline, in local ticks.
    pub deadline: u8,
    /// When the renewer fires next, in local ticks.
    pub renew_at: u8,
    /// A renew failed (seed 003's `lost`).
    pub lost: bool,
    /// Acquires made.
    pub acquired: u8,
    /// Time ticked while it sat between its check and its write.
    pub paused_after_check: bool,
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
    pub holders: [HolderState; MAX_HOLDERS],
    /// Crashes so far (also the generation of every connection).
    pub crashes: u8,
    /// Highest token ever granted.
    pub max_granted: u8,
    /// Highest token of an accepted write.
    pub max_accepted: u8,
    /// Whose write carried it.
    pub accepted_by: Option<u8>,
    /// Invariants broken on the way here (bits: I1, I2, I3, progress).
    pub broken: u8,
    /// `sometimes` events seen on the way here (bits, see [`SOMETIMES`]).
    pub seen: u8,
}

impl Pc {
    fn code(self) -> u8 {
        match self {
            Pc::Idle => 0,
            Pc::Check(p) => 1 + p,
            Pc::Checked(p) => 3 + p,
            Pc::Fenced(p) => 5 + p,
            Pc::Upserted(p) => 7 + p,
            Pc::Release => 9,
            Pc::Done => 10,
        }
    }
}

/// The state hashes as one packed byte string: the search fingerprints every state it meets,
/// and one write of 44 bytes is much cheaper than a hasher call per field. The packing is
/// injective, so equal hashes of unequal states are only the hasher's own collisions.
impl std::hash::Hash for State {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        const NONE: u8 = u8::MAX;
        let row = |r: Option<Row>| match r {
            None => [NONE; 3],
            Some(r) => [r.holder, r.token, r.expires.unwrap_or(NONE - 1)],
        };
        let pair = |p: Option<(u8, u8)>| p.map_or([NONE; 2], |(a, b)| [a, b]);
        let mut b = [0u8; 44];
        b[0] = self.now;
        b[1..4].copy_from_slice(&row(self.lease));
        b[4..7].copy_from_slice(&row(self.ghost));
        b[7] = self.floor;
        b[8..10].copy_from_slice(&pair(self.floor_lock));
        b[10..12].copy_from_slice(&pair(self.parts[0]));
        b[12..14].copy_from_slice(&pair(self.parts[1]));
        b[14..16].copy_from_slice(&pair(self.part_locks[0]));
        b[16..18].copy_from_slice(&pair(self.part_locks[1]));
        for (i, h) in self.holders.iter().enumerate() {
            let o = 18 + 6 * i;
            b[o] = h.pc.code();
            b[o + 1] = h.token;
            b[o + 2] = h.deadline;
            b[o + 3] = h.renew_at;
            b[o + 4] = u8::from(h.lost) | (u8::from(h.paused_after_check) << 1);
            b[o + 5] = h.acquired;
        }
        b[36] = self.crashes;
        b[37] = self.max_granted;
        b[38] = self.max_accepted;
        b[39] = self.accepted_by.unwrap_or(NONE);
        b[40] = self.broken;
        b[41] = self.seen;
        state.write(&b);
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

    /// The checks of the History checkers each bit stands for (`progress` has none).
    pub const CHECKS: [(u8, leaselab_checkers::Check); 4] = [
        (I1, leaselab_checkers::Check::I1),
        (I2, leaselab_checkers::Check::I2),
        (I3, leaselab_checkers::Check::I3),
        (ACCEPTANCE, leaselab_checkers::Check::Acceptance),
    ];
}

/// The `sometimes` properties, named as the History checkers name them: name and bit of
/// [`State::seen`].
pub const SOMETIMES: [(Sometimes, u8); 4] = [
    (Sometimes::StaleWriteAttempted, 1),
    (Sometimes::Takeover, 2),
    (Sometimes::PauseBetweenCheckAndWrite, 4),
    (Sometimes::DbRestart, 8),
];

/// One step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// Database time advances one tick.
    Tick,
    /// Holder acquires.
    Acquire(u8),
    /// Holder checks its local deadline and `lost` before a part.
    Check(u8),
    /// Holder's fence statement (beginning the write's transaction).
    Fence(u8),
    /// Holder's upsert of the part.
    Upsert(u8),
    /// Holder commits.
    Commit(u8),
    /// Holder's renewer renews.
    Renew(u8),
    /// Holder releases.
    Release(u8),
    /// Both databases crash and restart.
    Crash,
}

impl Action {
    /// Every step holder `i` can take, in the order the search offers them.
    pub fn of_holder(i: u8) -> [Action; 7] {
        [
            Action::Acquire(i),
            Action::Check(i),
            Action::Fence(i),
            Action::Upsert(i),
            Action::Commit(i),
            Action::Renew(i),
            Action::Release(i),
        ]
    }
}

/// What a step returned, as the model must return it too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Said {
    /// Nothing to compare (a tick, a crash).
    Nothing,
    /// Granted with this token, expiring at this tick.
    Granted(u8, u8),
    /// Acquire, renew or release changed nothing.
    Refused,
    /// Renewed until this tick.
    Renewed(u8),
    /// Released.
    Released,
    /// The local check: valid or not.
    Valid(bool),
    /// A fence: passed or failed (then rolled back).
    Fence(bool),
    /// An upsert: done inside the transaction, or refused (then rolled back), or — for
    /// check-then-write, which autocommits — accepted.
    Upsert(bool),
    /// Commit done.
    Committed,
}

/// The lease system under `Bounds`.
#[derive(Clone, Debug)]
pub struct LeaseSystem {
    /// The bounds.
    pub b: Bounds,
    /// Report each property at the first state that decides it, and never again. stateright
    /// 0.31 keeps the *last* path it met for a property (`discoveries.insert` on every
    /// matching state); breadth-first, the first is a shortest one. `None` (the Explorer):
    /// judge every state on its own.
    pub first_only: Option<std::sync::Arc<[std::sync::atomic::AtomicBool; 9]>>,
    /// The holders' names, made once (the rule functions take rows with names).
    names: Vec<Holder>,
    /// States whose successors were asked for: stateright 0.31 reports distinct states but not
    /// its queue, so a search's queue is its distinct states less these.
    pub expanded: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl LeaseSystem {
    /// The system for a search: every property reported at its first (shortest) path.
    pub fn new(b: Bounds) -> Self {
        LeaseSystem {
            names: names(&b),
            b,
            first_only: Some(std::sync::Arc::new(Default::default())),
            expanded: Default::default(),
        }
    }

    /// The system for the Explorer: every state judged on its own.
    pub fn for_explorer(b: Bounds) -> Self {
        LeaseSystem {
            names: names(&b),
            b,
            first_only: None,
            expanded: Default::default(),
        }
    }

    /// Whether property `k` is decided at a state where `hit` holds: always when judging each
    /// state on its own, else only the first time.
    fn decides(&self, k: usize, hit: bool) -> bool {
        match &self.first_only {
            None => hit,
            Some(f) => hit && !f[k].swap(true, std::sync::atomic::Ordering::SeqCst),
        }
    }
}

fn ms(b: &Bounds, ticks: u8) -> u64 {
    ticks as u64 * b.tick_ms
}

fn names(b: &Bounds) -> Vec<Holder> {
    (0..b.holders.max(MAX_HOLDERS))
        .map(|i| Holder::new(leaselab_model::names::holder_name(i)))
        .collect()
}

impl LeaseSystem {
    /// Holder `i`'s clock now, in its own ticks.
    pub fn local(&self, s: &State, i: u8) -> u8 {
        if i == 0 {
            (s.now as u16 * self.b.slow.0 as u16 / self.b.slow.1.max(1) as u16) as u8
        } else {
            s.now
        }
    }

    fn row(&self, r: &Row) -> LeaseRow {
        LeaseRow {
            holder: self.names[r.holder as usize].clone(),
            token: Token(r.token as u64),
            expires_at: match r.expires {
                None => Expiry::NegInfinity,
                Some(t) => Expiry::At(Millis(ms(&self.b, t))),
            },
        }
    }

    fn compact(&self, r: &LeaseRow, holder: u8) -> Row {
        Row {
            holder,
            token: r.token.0 as u8,
            expires: match r.expires_at {
                Expiry::NegInfinity => None,
                Expiry::At(x) => Some((x.0 / self.b.tick_ms) as u8),
            },
        }
    }

    fn deadline(&self, sent_local: u8) -> u8 {
        let d = LocalDeadline::from_request_start(
            Millis(ms(&self.b, sent_local)),
            ms(&self.b, self.b.ttl),
            ms(&self.b, self.b.margin),
        );
        (d.deadline.0 / self.b.tick_ms) as u8
    }

    /// Whether `i`'s statement for `a` would have to wait on a row lock (the action is then
    /// not enabled until the lock is released), by the model's lock protocol
    /// (`leaselab_model::protocol`).
    fn waits(&self, s: &State, a: Action) -> bool {
        let other = |lock: Option<(u8, u8)>, i: u8| lock.is_some_and(|(h, _)| h != i);
        match a {
            Action::Fence(i) => {
                let h = &s.holders[i as usize];
                match self.b.fence {
                    // A plain UPDATE: its WHERE on the committed floor first.
                    FenceMode::Scope | FenceMode::Strict => protocol::update_waits(
                        rules::floor_passes(
                            self.b.fence,
                            Some(Token(s.floor as u64)),
                            Token(h.token as u64),
                        ),
                        other(s.floor_lock, i),
                    ),
                    FenceMode::ScopeUpsert => protocol::upsert_waits(other(s.floor_lock, i)),
                    _ => false,
                }
            }
            Action::Upsert(i) => {
                let p = match s.holders[i as usize].pc {
                    Pc::Fenced(p) => p as usize,
                    _ => return false,
                };
                match self.b.fence {
                    FenceMode::Row | FenceMode::Off => {
                        protocol::upsert_waits(other(s.part_locks[p], i))
                    }
                    // The floor's lock, held until commit, already serialises the writers:
                    // whoever holds a part lock holds the floor too.
                    _ => false,
                }
            }
            _ => false,
        }
    }

    /// Whether `a` can be taken in `s` — the preconditions of [`LeaseSystem::step`] without
    /// building the next state (the search asks this of every candidate). An acquire of a
    /// lease that is held is left out: it changes nothing.
    pub fn enabled(&self, s: &State, a: Action) -> bool {
        let b = &self.b;
        let h = |i: u8| &s.holders[i as usize];
        match a {
            Action::Tick => s.now < b.max_ticks,
            Action::Crash => b.crash && s.crashes == 0,
            Action::Acquire(i) => {
                h(i).pc == Pc::Idle
                    && h(i).acquired < b.acquires
                    && s.lease.is_none_or(|r| r.expires.is_none_or(|e| e <= s.now))
            }
            Action::Check(i) => matches!(h(i).pc, Pc::Check(_)),
            Action::Fence(i) => matches!(h(i).pc, Pc::Checked(_)) && !self.waits(s, a),
            Action::Upsert(i) => matches!(h(i).pc, Pc::Fenced(_)) && !self.waits(s, a),
            Action::Commit(i) => matches!(h(i).pc, Pc::Upserted(_)),
            Action::Renew(i) => {
                let x = h(i);
                x.token != 0
                    && !x.lost
                    && self.local(s, i) >= x.renew_at
                    && !matches!(x.pc, Pc::Idle | Pc::Done)
            }
            Action::Release(i) => h(i).pc == Pc::Release,
        }
    }

    /// Runs `a` on `s`: the next state and what the step returned.
    pub fn step(&self, s: &State, a: Action) -> Option<(State, Said)> {
        let b = &self.b;
        let mut n = s.clone();
        let said = match a {
            Action::Tick => {
                if s.now >= b.max_ticks {
                    return None;
                }
                n.now += 1;
                for h in n.holders.iter_mut().take(b.holders) {
                    if matches!(h.pc, Pc::Checked(_)) {
                        h.paused_after_check = true;
                    }
                }
                if n.holders.iter().any(|h| h.paused_after_check) {
                    n.seen |= 4;
                }
                Said::Nothing
            }
            Action::Crash => {
                if !b.crash || s.crashes > 0 {
                    return None;
                }
                n.crashes += 1;
                n.seen |= 8;
                if b.lease_table == LeaseDurability::Unlogged {
                    n.ghost = s.lease;
                    n.lease = None;
                }
                // Open transactions roll back; their holders reconnect and re-queue the job.
                n.floor_lock = None;
                n.part_locks = [None, None];
                for h in n.holders.iter_mut().take(b.holders) {
                    if matches!(h.pc, Pc::Fenced(_) | Pc::Upserted(_)) {
                        requeue(h, b);
                    }
                }
                Said::Nothing
            }
            Action::Acquire(i) => {
                let h = s.holders[i as usize];
                if h.pc != Pc::Idle || h.acquired >= b.acquires {
                    return None;
                }
                let local = self.local(s, i);
                let row = s.lease.map(|r| self.row(&r));
                let now = Millis(ms(b, s.now));
                match rules::acquire(row.as_ref(), &self.names[i as usize], ms(b, b.ttl), 0, now) {
                    Some(r) => {
                        let c = self.compact(&r, i);
                        // I1, judged on the view: the row taken over must have expired.
                        if let Some(old) = s.lease.or(s.ghost) {
                            if old.expires.is_some_and(|e| e > s.now) {
                                n.broken |= broke::I1;
                            }
                            if old.holder != i {
                                n.seen |= 2;
                            }
                        }
                        if c.token <= s.max_granted {
                            n.broken |= broke::I2;
                        }
                        n.max_granted = n.max_granted.max(c.token);
                        n.lease = Some(c);
                        n.ghost = None;
                        let nh = &mut n.holders[i as usize];
                        nh.acquired += 1;
                        nh.token = c.token;
                        nh.deadline = self.deadline(local);
                        nh.renew_at = local.saturating_add(b.renew);
                        nh.lost = false;
                        nh.pc = Pc::Check(0);
                        Said::Granted(c.token, c.expires.unwrap_or(0))
                    }
                    // Nothing changes: the holder retries later (the same state again).
                    None => Said::Refused,
                }
            }
            Action::Check(i) => {
                let h = s.holders[i as usize];
                let Pc::Check(p) = h.pc else { return None };
                let local = Millis(ms(b, self.local(s, i)));
                let ok = !h.lost
                    && LocalDeadline {
                        deadline: Millis(ms(b, h.deadline)),
                    }
                    .allows(local);
                let nh = &mut n.holders[i as usize];
                if ok {
                    nh.pc = Pc::Checked(p);
                    nh.paused_after_check = false;
                } else {
                    requeue(nh, b);
                }
                Said::Valid(ok)
            }
            Action::Fence(i) => {
                let h = s.holders[i as usize];
                let Pc::Checked(p) = h.pc else { return None };
                if self.waits(s, a) {
                    return None;
                }
                if h.token < s.max_granted {
                    n.seen |= 1;
                }
                let token = Token(h.token as u64);
                let pass = match b.fence {
                    FenceMode::Row | FenceMode::Off => true,
                    f => rules::floor_passes(f, Some(Token(s.floor as u64)), token),
                };
                let nh = &mut n.holders[i as usize];
                if pass {
                    nh.pc = Pc::Fenced(p);
                    if matches!(
                        b.fence,
                        FenceMode::Scope | FenceMode::Strict | FenceMode::ScopeUpsert
                    ) {
                        n.floor_lock = Some((i, h.token));
                    }
                } else {
                    // Refused: the client rolls back at once and re-queues the job.
                    requeue(nh, b);
                    if self.current(s, i) {
                        n.broken |= broke::PROGRESS;
                    }
                }
                Said::Fence(pass)
            }
            Action::Upsert(i) => {
                let h = s.holders[i as usize];
                let Pc::Fenced(p) = h.pc else { return None };
                if self.waits(s, a) {
                    return None;
                }
                let pi = p as usize;
                let token = Token(h.token as u64);
                let nh = &mut n.holders[i as usize];
                match b.fence {
                    FenceMode::CheckThenWrite => {
                        // Two autocommitted statements: set the floor, upsert the part.
                        n.floor = h.token;
                        n.parts[pi] = Some((i, h.token));
                        nh.pc = next_part(p, b.parts);
                        accept(&mut n, i, h.token);
                        Said::Upsert(true)
                    }
                    FenceMode::Row => {
                        let existing = s.parts[pi].map(|(_, t)| Token(t as u64));
                        if rules::row_guard_passes(existing, token) {
                            n.part_locks[pi] = Some((i, h.token));
                            nh.pc = Pc::Upserted(p);
                            Said::Upsert(true)
                        } else {
                            // Never the current holder: a higher token is in the row.
                            requeue(nh, b);
                            Said::Upsert(false)
                        }
                    }
                    _ => {
                        n.part_locks[pi] = Some((i, h.token));
                        nh.pc = Pc::Upserted(p);
                        Said::Upsert(true)
                    }
                }
            }
            Action::Commit(i) => {
                let h = s.holders[i as usize];
                let Pc::Upserted(p) = h.pc else { return None };
                if let Some((o, t)) = s.floor_lock {
                    if o == i {
                        n.floor = t;
                        n.floor_lock = None;
                    }
                }
                let pi = p as usize;
                if let Some((o, t)) = s.part_locks[pi] {
                    if o == i {
                        n.parts[pi] = Some((i, t));
                        n.part_locks[pi] = None;
                    }
                }
                accept(&mut n, i, h.token);
                n.holders[i as usize].pc = next_part(p, b.parts);
                Said::Committed
            }
            Action::Renew(i) => {
                let h = s.holders[i as usize];
                let local = self.local(s, i);
                if h.token == 0
                    || h.lost
                    || local < h.renew_at
                    || matches!(h.pc, Pc::Idle | Pc::Done)
                {
                    return None;
                }
                let row = s.lease.map(|r| self.row(&r));
                let now = Millis(ms(b, s.now));
                let r = rules::renew(
                    row.as_ref(),
                    &self.names[i as usize],
                    Token(h.token as u64),
                    ms(b, b.ttl),
                    now,
                    false,
                );
                let nh = &mut n.holders[i as usize];
                match r {
                    Some(r) => {
                        let c = self.compact(&r, i);
                        n.lease = Some(c);
                        let nh = &mut n.holders[i as usize];
                        nh.deadline = self.deadline(local);
                        nh.renew_at = local.saturating_add(b.renew);
                        Said::Renewed(c.expires.unwrap_or(0))
                    }
                    None => {
                        nh.lost = true;
                        Said::Refused
                    }
                }
            }
            Action::Release(i) => {
                let h = s.holders[i as usize];
                if h.pc != Pc::Release {
                    return None;
                }
                let row = s.lease.map(|r| self.row(&r));
                let r =
                    rules::release(row.as_ref(), &self.names[i as usize], Token(h.token as u64));
                let nh = &mut n.holders[i as usize];
                requeue(nh, b);
                match r {
                    Some(r) => {
                        n.lease = Some(self.compact(&r, i));
                        Said::Released
                    }
                    None => Said::Refused,
                }
            }
        };
        Some((n, said))
    }

    /// Whether `i` holds the newest token and its lease is unexpired by the database clock: a
    /// refusal of its write is then a refusal of the rightful holder.
    fn current(&self, s: &State, i: u8) -> bool {
        let h = &s.holders[i as usize];
        s.lease.is_some_and(|r| {
            r.holder == i && r.token == h.token && r.expires.is_some_and(|e| e > s.now)
        }) && h.token == s.max_granted
    }
}

/// The job is given up (a failed check or fence, a refused upsert, a release): the holder
/// drops its token and wants the lease again, if it has acquires left.
fn requeue(h: &mut HolderState, b: &Bounds) {
    h.pc = if h.acquired >= b.acquires {
        Pc::Done
    } else {
        Pc::Idle
    };
    h.token = 0;
}

fn next_part(p: u8, parts: u8) -> Pc {
    if p + 1 < parts {
        Pc::Check(p + 1)
    } else {
        Pc::Release
    }
}

/// An accepted write of holder `i` with `token`: I3 and acceptance break if a higher token was
/// accepted before it; acceptance also if another holder's write was accepted with the same
/// token (a token handed out twice).
fn accept(n: &mut State, i: u8, token: u8) {
    if token < n.max_accepted {
        n.broken |= broke::I3 | broke::ACCEPTANCE;
    }
    if token == n.max_accepted && n.accepted_by.is_some_and(|h| h != i) {
        n.broken |= broke::ACCEPTANCE;
    }
    if token >= n.max_accepted {
        n.accepted_by = Some(i);
    }
    n.max_accepted = n.max_accepted.max(token);
}

impl Model for LeaseSystem {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        let idle = HolderState {
            pc: Pc::Idle,
            token: 0,
            deadline: 0,
            renew_at: 0,
            lost: false,
            acquired: 0,
            paused_after_check: false,
        };
        let mut holders = [idle; MAX_HOLDERS];
        for h in holders.iter_mut().skip(self.b.holders) {
            h.pc = Pc::Done;
        }
        vec![State {
            now: 0,
            lease: None,
            ghost: None,
            floor: 0,
            floor_lock: None,
            parts: [None, None],
            part_locks: [None, None],
            holders,
            crashes: 0,
            max_granted: 0,
            max_accepted: 0,
            accepted_by: None,
            broken: 0,
            seen: 0,
        }]
    }

    fn actions(&self, s: &State, out: &mut Vec<Action>) {
        self.expanded
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // A broken state is a counterexample's end: nothing after it is explored.
        if s.broken != 0 {
            return;
        }
        let candidates = (0..self.b.holders as u8).flat_map(Action::of_holder);
        for a in [Action::Tick, Action::Crash].into_iter().chain(candidates) {
            if self.enabled(s, a) {
                out.push(a);
            }
        }
    }

    fn next_state(&self, s: &State, a: Action) -> Option<State> {
        self.step(s, a).map(|(n, _)| n)
    }

    fn format_action(&self, a: &Action) -> String {
        self.action_text(*a)
    }

    /// The Explorer shows this beside each step: what it returned and the state after it.
    fn format_step(&self, last: &State, a: Action) -> Option<String> {
        let (next, said) = self.step(last, a)?;
        let said = self.said_text(said);
        let sep = if said.is_empty() { "" } else { " → " };
        Some(format!("{said}{sep}{}", self.state_text(&next)))
    }

    fn properties(&self) -> Vec<Property<Self>> {
        let mut v = vec![
            Property::always("I1", |m: &Self, s: &State| {
                !m.decides(0, s.broken & broke::I1 != 0)
            }),
            Property::always("I2", |m: &Self, s: &State| {
                !m.decides(1, s.broken & broke::I2 != 0)
            }),
            Property::always("I3", |m: &Self, s: &State| {
                !m.decides(2, s.broken & broke::I3 != 0)
            }),
            Property::always("acceptance", |m: &Self, s: &State| {
                !m.decides(8, s.broken & broke::ACCEPTANCE != 0)
            }),
            Property::always("progress", |m: &Self, s: &State| {
                !m.decides(3, s.broken & broke::PROGRESS != 0)
            }),
            Property::sometimes(
                Sometimes::StaleWriteAttempted.name(),
                |m: &Self, s: &State| m.decides(4, s.seen & 1 != 0),
            ),
            Property::sometimes(Sometimes::Takeover.name(), |m: &Self, s: &State| {
                m.decides(5, s.seen & 2 != 0)
            }),
            Property::sometimes(
                Sometimes::PauseBetweenCheckAndWrite.name(),
                |m: &Self, s: &State| m.decides(6, s.seen & 4 != 0),
            ),
        ];
        if self.b.crash {
            v.push(Property::sometimes(
                Sometimes::DbRestart.name(),
                |m: &Self, s: &State| m.decides(7, s.seen & 8 != 0),
            ));
        }
        v
    }
}

/// Symmetry reduction: holders are interchangeable except holder 0 when its clock is slow.
/// The representative sorts the holders' states and renames every holder index with them.
pub fn representative(s: &State, holders: usize, fixed_first: bool) -> State {
    let start = usize::from(fixed_first);
    let mut order: Vec<usize> = (0..holders).collect();
    order[start..].sort_by_key(|&i| s.holders[i]);
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
