//! The lease system as a stateright [`Model`]: K holders — each the one holder every driver
//! runs ([`leaselab_model::holder`]), with its own state kept in the explored state — abstract
//! time in ticks, and a crash-restart of both databases as an action.
//!
//! The explorer owns only what a driver owns: a compact view of the two databases that answers
//! the holders' statements, and the scheduling. Its actions are a tick of database time, a
//! crash, a holder's timer firing ([`Action::Timer`]: it starts a job with an acquire, renews,
//! …) and a holder's deferred statement running ([`Action::Run`]). Every statement a holder
//! sends is answered at once, and the reply handed straight back, unless it follows one of the
//! holder's code points
//! ([`Point`](leaselab_model::holder::Point)) — then it waits for a `Run`, so that time can pass right
//! there (a pause between check and write, F4) — or it would have to wait for a row lock — then
//! it waits for a `Run` that can go. A timer that is due need not fire at once either: a holder
//! not scheduled while time ticks is a paused or slow one.
//!
//! Every answer of the view is taken by the model's own rule functions — `rules::acquire`,
//! `rules::renew`, `rules::release`, `rules::floor_passes`, `rules::row_guard_passes` — on rows
//! built from the view, and when a statement waits is asked of the model's lock protocol
//! (`leaselab_model::protocol`): the fence `UPDATE` of the scope fence evaluates its `WHERE` on
//! the committed floor first and waits for the floor's row lock only if that qualifies; the
//! guarded upsert and the part upserts always wait for a locked row. What the view keeps itself
//! is which holder holds which lock (until commit or rollback) and whose transaction a crash cut.
//! Every counterexample is re-run on the model itself, statement by statement, and the outcomes
//! compared ([`crate::trace`]), so the view cannot drift from the model unnoticed.
//!
//! Skew is a holder whose clock advances at another rate ([`Bounds::slow`]).

use leaselab_checkers::sometimes::Sometimes;
use leaselab_model::holder::{Carrier, HolderCfg, HolderMachine, HolderState};
use leaselab_model::names::defaults;
use leaselab_model::{
    protocol, rules, ConnId, DbName, Expiry, FenceMode, Holder, LeaseDurability, LeaseName,
    LeaseRow, Millis, Op, Outcome, Part, Reason, Scope, Token,
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
    /// Leases granted to it (bounded by [`Bounds::acquires`]).
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
    /// `sometimes` events seen on the way here (bits, see [`SOMETIMES`]).
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
    fn key(&self) -> (HolderState, Option<Stmt>, u8, bool, bool) {
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
    /// The holder's timers that are due fire (a job starts with an acquire, the renewer
    /// renews), and what they send runs.
    Timer(u8),
    /// The holder's deferred statement runs, and what its reply makes the holder send.
    Run(u8),
    /// Both databases crash and restart.
    Crash,
}

/// What a step did, in the order it happened: what the trace of a path is made of.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// Database time advanced one tick.
    Tick,
    /// Both databases crashed and restarted.
    Crash,
    /// Holder `holder` sent `op` on `conn`, and the view answered `outcome`.
    Sent {
        /// Holder index.
        holder: u8,
        /// Connection.
        conn: ConnId,
        /// Statement.
        op: Op,
        /// The view's answer.
        outcome: Outcome,
    },
    /// Holder `holder` recorded a client-side event (`check`, `lost`).
    Record {
        /// Holder index.
        holder: u8,
        /// The event.
        op: Op,
    },
    /// Holder `holder` closed connection `conn` (its server rolls back what it had open).
    Abandon {
        /// Holder index.
        holder: u8,
        /// Database.
        db: DbName,
        /// Connection.
        conn: ConnId,
    },
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
    /// Each holder's configuration, made once from the bounds.
    cfgs: Vec<HolderCfg>,
    /// States whose successors were asked for: stateright 0.31 reports distinct states but not
    /// its queue, so a search's queue is its distinct states less these.
    pub expanded: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl LeaseSystem {
    /// The system for a search: every property reported at its first (shortest) path.
    pub fn new(b: Bounds) -> Self {
        LeaseSystem {
            cfgs: cfgs(&b),
            b,
            first_only: Some(std::sync::Arc::new(Default::default())),
            expanded: Default::default(),
        }
    }

    /// The system for the Explorer: every state judged on its own.
    pub fn for_explorer(b: Bounds) -> Self {
        LeaseSystem {
            cfgs: cfgs(&b),
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

    /// Holder `i`'s configuration.
    pub fn cfg(&self, i: u8) -> &HolderCfg {
        &self.cfgs[i as usize]
    }

    /// Holder `i` in state `h`, ready to take an input.
    pub fn machine(&self, i: u8, h: HolderState) -> HolderMachine<&HolderCfg> {
        HolderMachine::with_state(self.cfg(i), h)
    }
}

fn ms(b: &Bounds, ticks: u8) -> u64 {
    ticks as u64 * b.tick_ms
}

/// The holders' configuration in ticks of the bounds. A request's reply never times out: the
/// search answers every statement, or lets it wait for a lock that another holder releases
/// when it is scheduled, and a timeout would only add states in which a holder gives up on a
/// reply the scheduler delays. So the timeout is the end of time (`Millis::plus` saturates),
/// the same in every state, and distinguishes none. A refused or ended job starts again as soon
/// as the holder is scheduled.
fn cfgs(b: &Bounds) -> Vec<HolderCfg> {
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

/// Where a step's events go: nowhere for the search.
struct Log<'a>(Option<&'a mut dyn FnMut(Event)>);

impl Log<'_> {
    fn on(&self) -> bool {
        self.0.is_some()
    }

    fn push(&mut self, e: Event) {
        if let Some(f) = &mut self.0 {
            f(e);
        }
    }
}

impl Stmt {
    /// The compact form of a statement of holder `cfg`.
    fn of(op: &Op, cfg: &HolderCfg) -> Stmt {
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
    fn op(self, m: &HolderMachine<&HolderCfg>) -> Op {
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

    fn on_res(self) -> bool {
        !matches!(self, Stmt::Acquire | Stmt::Renew(_) | Stmt::Release(_))
    }
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

    fn local_ms(&self, s: &State, i: u8) -> Millis {
        Millis(ms(&self.b, self.local(s, i)))
    }

    fn row(&self, r: &Row) -> LeaseRow {
        LeaseRow {
            holder: self.cfgs[r.holder as usize].name.clone(),
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

    /// Whether `i`'s statement would have to wait on a row lock (it then stays deferred until
    /// the lock is released), by the model's lock protocol (`leaselab_model::protocol`). A
    /// statement on a connection a crash cut is answered at once.
    fn waits(&self, s: &State, i: u8, stmt: Stmt) -> bool {
        if s.holders[i as usize].cut && stmt.on_res() {
            return false;
        }
        let other = |lock: Option<(u8, u8)>| lock.is_some_and(|(h, _)| h != i);
        match stmt {
            Stmt::Fence(token) => match self.b.fence {
                // A plain UPDATE: its WHERE on the committed floor first.
                FenceMode::Scope | FenceMode::Strict => protocol::update_waits(
                    rules::floor_passes(
                        self.b.fence,
                        Some(Token(s.floor as u64)),
                        Token(token as u64),
                    ),
                    other(s.floor_lock),
                ),
                FenceMode::ScopeUpsert => protocol::upsert_waits(other(s.floor_lock)),
                _ => false,
            },
            Stmt::Upsert { part, .. } => match self.b.fence {
                FenceMode::Row | FenceMode::Off => {
                    protocol::upsert_waits(other(s.part_locks[part as usize]))
                }
                // The floor's lock, held until commit, already serialises the writers:
                // whoever holds a part lock holds the floor too.
                _ => false,
            },
            _ => false,
        }
    }

    /// Whether [`LeaseSystem::step`] can take `a` in `s`: time and crashes within the bounds,
    /// a timer that is due (one that would start a job only while the holder has acquires
    /// left), a deferred statement that would not wait.
    fn can_take(&self, s: &State, a: Action) -> bool {
        let b = &self.b;
        match a {
            Action::Tick => s.now < b.max_ticks,
            Action::Crash => b.crash && s.crashes == 0,
            Action::Timer(i) => {
                let slot = &s.holders[i as usize];
                (i as usize) < b.holders
                    && self
                        .machine(i, slot.h)
                        .next_timer()
                        .is_some_and(|t| t <= self.local_ms(s, i))
                    && (!slot.h.between_jobs() || slot.acquired < b.acquires)
            }
            Action::Run(i) => s.holders[i as usize]
                .pending
                .is_some_and(|p| !self.waits(s, i, p.stmt)),
        }
    }

    /// Whether `a` is offered in `s`: it can be taken and changes something. (The one step
    /// that changes nothing is a job starting while the lease is held and unexpired: the
    /// acquire is refused and the holder is where it was, up to its counters.)
    pub fn enabled(&self, s: &State, a: Action) -> bool {
        let held = || {
            s.lease
                .is_some_and(|r| r.expires.is_some_and(|e| e > s.now))
        };
        self.can_take(s, a)
            && match a {
                Action::Timer(i) => !(s.holders[i as usize].h.between_jobs() && held()),
                _ => true,
            }
    }

    /// Runs `a` on `s`: the next state. `log` is told every event of the step.
    pub fn step(&self, s: &State, a: Action, log: &mut dyn FnMut(Event)) -> Option<State> {
        self.step_logged(s, a, &mut Log(Some(log)))
    }

    fn step_logged(&self, s: &State, a: Action, log: &mut Log<'_>) -> Option<State> {
        if !self.can_take(s, a) {
            return None;
        }
        let b = &self.b;
        let mut n = s.clone();
        match a {
            Action::Tick => {
                n.now += 1;
                // A holder sits between its check and its write while time passes.
                let after_check = |x: &Slot| x.pending.is_some_and(|p| p.stmt == Stmt::Begin);
                if n.holders.iter().take(b.holders).any(after_check) {
                    n.seen |= 4;
                }
                log.push(Event::Tick);
            }
            Action::Crash => {
                n.crashes += 1;
                n.seen |= 8;
                if b.lease_table == LeaseDurability::Unlogged {
                    n.ghost = s.lease;
                    n.lease = None;
                }
                // Open transactions are gone; their connections answer `conn-lost` next.
                n.floor_lock = None;
                n.part_locks = [None, None];
                for x in n.holders.iter_mut().take(b.holders) {
                    x.cut |= x.txn;
                    x.txn = false;
                }
                log.push(Event::Crash);
            }
            Action::Timer(i) => {
                let now = self.local_ms(s, i);
                let mut m = self.machine(i, s.holders[i as usize].h);
                let mut effects = Vec::new();
                m.on_timer(now, &mut effects);
                m.carry(
                    now,
                    effects,
                    &mut View {
                        sys: self,
                        n: &mut n,
                        i,
                        log,
                    },
                );
                n.holders[i as usize].h = *m.state();
            }
            Action::Run(i) => {
                let p = n.holders[i as usize].pending.take()?;
                self.answer_and_reply(&mut n, i, p, log);
            }
        }
        for i in 0..b.holders as u8 {
            let now = self.local_ms(&n, i);
            n.holders[i as usize].h.settle(now);
        }
        Some(n)
    }

    /// Runs a deferred statement and hands its reply to the holder.
    fn answer_and_reply(&self, n: &mut State, i: u8, p: Pending, log: &mut Log<'_>) {
        let now = self.local_ms(n, i);
        let mut m = self.machine(i, n.holders[i as usize].h);
        // The statement in full only for a log: a search does not need it.
        let sent = log.on().then(|| (m.res_conn(), p.stmt.op(&m)));
        let outcome = self.answer(n, i, p.stmt);
        if let Some((conn, op)) = sent {
            log.push(Event::Sent {
                holder: i,
                conn,
                op,
                outcome: outcome.clone(),
            });
        }
        let mut more = Vec::new();
        m.on_reply(now, p.req, &outcome, &mut more);
        m.carry(
            now,
            more,
            &mut View {
                sys: self,
                n,
                i,
                log,
            },
        );
        n.holders[i as usize].h = *m.state();
    }

    /// Ends holder `i`'s transaction: on commit its locked rows take what it wrote; either
    /// way its locks are released.
    fn end_txn(&self, n: &mut State, i: u8, commit: bool) {
        if let Some((o, t)) = n.floor_lock {
            if o == i {
                if commit {
                    n.floor = t;
                }
                n.floor_lock = None;
            }
        }
        for p in 0..2 {
            if let Some((o, t)) = n.part_locks[p] {
                if o == i {
                    if commit && t > 0 {
                        n.parts[p] = Some((i, t));
                    }
                    n.part_locks[p] = None;
                }
            }
        }
        n.holders[i as usize].txn = false;
    }

    /// The view's answer to holder `i`'s statement (one that does not wait), and its effect
    /// on the view.
    fn answer(&self, n: &mut State, i: u8, stmt: Stmt) -> Outcome {
        let b = &self.b;
        let iu = i as usize;
        if stmt.on_res() && n.holders[iu].cut {
            n.holders[iu].cut = false;
            return Outcome::Error(Reason::ConnLost);
        }
        let now = Millis(ms(b, n.now));
        let row = n.lease.map(|r| self.row(&r));
        let name = &self.cfgs[iu].name;
        match stmt {
            Stmt::Acquire => match rules::acquire(row.as_ref(), name, ms(b, b.ttl), 0, now) {
                Some(r) => {
                    let c = self.compact(&r, i);
                    // I1, judged on the view: the row taken over must have expired.
                    if let Some(old) = n.lease.or(n.ghost) {
                        if old.expires.is_some_and(|e| e > n.now) {
                            n.broken |= broke::I1;
                        }
                        if old.holder != i {
                            n.seen |= 2;
                        }
                    }
                    if c.token <= n.max_granted {
                        n.broken |= broke::I2;
                    }
                    n.max_granted = n.max_granted.max(c.token);
                    n.lease = Some(c);
                    n.ghost = None;
                    n.holders[iu].acquired += 1;
                    Outcome::Granted {
                        token: r.token,
                        expires: r.expires_at,
                    }
                }
                None => Outcome::Refused,
            },
            Stmt::Renew(t) => {
                match rules::renew(
                    row.as_ref(),
                    name,
                    Token(t as u64),
                    ms(b, b.ttl),
                    now,
                    false,
                ) {
                    Some(r) => {
                        n.lease = Some(self.compact(&r, i));
                        Outcome::Renewed {
                            expires: r.expires_at,
                        }
                    }
                    None => Outcome::Refused,
                }
            }
            Stmt::Release(t) => match rules::release(row.as_ref(), name, Token(t as u64)) {
                Some(r) => {
                    n.lease = Some(self.compact(&r, i));
                    Outcome::Released
                }
                None => Outcome::Refused,
            },
            Stmt::Begin => {
                // Check-then-write runs every statement in autocommit.
                n.holders[iu].txn = b.fence != FenceMode::CheckThenWrite;
                Outcome::Ok
            }
            Stmt::Fence(t) => {
                if t < n.max_granted {
                    n.seen |= 1;
                }
                let pass = match b.fence {
                    FenceMode::Row | FenceMode::Off => true,
                    f => rules::floor_passes(f, Some(Token(n.floor as u64)), Token(t as u64)),
                };
                if pass {
                    if matches!(
                        b.fence,
                        FenceMode::Scope | FenceMode::Strict | FenceMode::ScopeUpsert
                    ) {
                        n.floor_lock = Some((i, t));
                    }
                    Outcome::Passed
                } else {
                    if self.current(n, i, t) {
                        n.broken |= broke::PROGRESS;
                    }
                    Outcome::Failed
                }
            }
            Stmt::Upsert { part, token } => {
                let pi = part as usize;
                match b.fence {
                    FenceMode::CheckThenWrite => {
                        // Two autocommitted statements: set the floor, upsert the part.
                        n.floor = token;
                        n.parts[pi] = Some((i, token));
                        accept(n, i, token);
                        Outcome::Accepted
                    }
                    FenceMode::Row => {
                        let existing = n.parts[pi].map(|(_, t)| Token(t as u64));
                        if rules::row_guard_passes(existing, Token(token as u64)) {
                            n.part_locks[pi] = Some((i, token));
                            Outcome::Ok
                        } else {
                            // The row stays locked (without a write) until the rollback.
                            n.part_locks[pi] = Some((i, 0));
                            Outcome::Failed
                        }
                    }
                    _ => {
                        n.part_locks[pi] = Some((i, token));
                        Outcome::Ok
                    }
                }
            }
            Stmt::Commit => {
                if n.holders[iu].txn {
                    // The token its transaction wrote into a part.
                    let written = n
                        .part_locks
                        .iter()
                        .flatten()
                        .find(|(o, t)| *o == i && *t > 0)
                        .map(|(_, t)| *t);
                    self.end_txn(n, i, true);
                    if let Some(token) = written {
                        accept(n, i, token);
                    }
                }
                Outcome::Ok
            }
            Stmt::Rollback => {
                self.end_txn(n, i, false);
                Outcome::Ok
            }
        }
    }

    /// Whether `i` holds the newest token `token` and its lease is unexpired by the database
    /// clock: a refusal of its write is then a refusal of the rightful holder.
    fn current(&self, s: &State, i: u8, token: u8) -> bool {
        s.lease.is_some_and(|r| {
            r.holder == i && r.token == token && r.expires.is_some_and(|e| e > s.now)
        }) && token == s.max_granted
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
        let slots = [0u8, 1, 2].map(|i| Slot {
            h: *HolderMachine::new(self.cfg(i)).state(),
            pending: None,
            acquired: 0,
            txn: false,
            cut: false,
        });
        vec![State {
            now: 0,
            lease: None,
            ghost: None,
            floor: 0,
            floor_lock: None,
            parts: [None, None],
            part_locks: [None, None],
            holders: slots,
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
        let holders = (0..self.b.holders as u8).flat_map(|i| [Action::Timer(i), Action::Run(i)]);
        for a in [Action::Tick, Action::Crash].into_iter().chain(holders) {
            if self.enabled(s, a) {
                out.push(a);
            }
        }
    }

    fn next_state(&self, s: &State, a: Action) -> Option<State> {
        self.step_logged(s, a, &mut Log(None))
    }

    fn format_action(&self, a: &Action) -> String {
        self.action_text(*a)
    }

    /// The Explorer shows this beside each step: what it sent and got back, and the state
    /// after it.
    fn format_step(&self, last: &State, a: Action) -> Option<String> {
        let mut events = Vec::new();
        let next = self.step(last, a, &mut |e| events.push(e))?;
        let said = self.events_text(&events);
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

/// The view as the place a holder's effects go ([`HolderMachine::carry`]): each statement is
/// answered by the view at once, unless it would wait for a row lock; a statement held at a
/// code point, or waiting, stays deferred for the holder's next [`Action::Run`].
struct View<'a, 'l> {
    sys: &'a LeaseSystem,
    n: &'a mut State,
    i: u8,
    log: &'a mut Log<'l>,
}

impl Carrier for View<'_, '_> {
    fn record(&mut self, op: Op) {
        self.log.push(Event::Record { holder: self.i, op });
    }

    fn abandon(&mut self, db: DbName, conn: ConnId) {
        if db == DbName::Res {
            // The server rolls back what the connection had open; a statement deferred for it
            // never goes out.
            self.sys.end_txn(self.n, self.i, false);
            let slot = &mut self.n.holders[self.i as usize];
            slot.cut = false;
            slot.pending = None;
        }
        self.log.push(Event::Abandon {
            holder: self.i,
            db,
            conn,
        });
    }

    fn hold(&mut self, req: u64, _db: DbName, _conn: ConnId, op: Op) {
        let stmt = Stmt::of(&op, self.sys.cfg(self.i));
        self.n.holders[self.i as usize].pending = Some(Pending { req, stmt });
    }

    fn send(&mut self, req: u64, _db: DbName, conn: ConnId, op: Op) -> Option<Outcome> {
        let stmt = Stmt::of(&op, self.sys.cfg(self.i));
        if self.sys.waits(self.n, self.i, stmt) {
            self.n.holders[self.i as usize].pending = Some(Pending { req, stmt });
            return None;
        }
        let outcome = self.sys.answer(self.n, self.i, stmt);
        self.log.push(Event::Sent {
            holder: self.i,
            conn,
            op,
            outcome: outcome.clone(),
        });
        Some(outcome)
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
