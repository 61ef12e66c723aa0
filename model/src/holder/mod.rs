//! The holder, written once as a sans-IO state machine (quinn-proto style): inputs in
//! (`on_timer`, `on_reply`), effects out (requests to send, client events to record, code
//! points reached), `now` — the holder's *own* clock reading — passed in. It lives in the model
//! crate, beside the rules it follows, so that every driver runs the same code: the
//! simulation's fast and turmoil drivers, the real-process holder of F4/F5 (`pg`), the
//! exhaustive checker (`explore`) and the generator's harness (`gen`); the last two carry its
//! effects with [`HolderMachine::carry`].
//!
//! The job loop is the sources': acquire (local deadline = own clock read *before* sending +
//! ttl − margin); a renewer every `renew_ms` on its own connection; before each part, check the
//! deadline and the `lost` flag; write the part statement by statement (begin, fence, upsert,
//! commit) with the token; release. A failed renew sets `lost`: no new write starts, the job
//! re-queues and acquires again (seed 003's LeaseGuard). A timed-out request abandons its
//! connection (the server rolls it back on disconnect) and the job re-queues.

use crate::client::{LeaseGuard, LocalDeadline};
use crate::history::{DbName, Op, Outcome};
use crate::names::{ConnId, Holder, LeaseName, Part, Scope, Token};
use crate::time::Millis;
use std::borrow::Borrow;

/// Where in the holder's code a pause can land.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Point {
    /// After the local-deadline check passed, before the write's first statement (F4).
    AfterCheck,
    /// After the fence statement, before the upsert (inside the transaction: the floor lock is
    /// held; for check-then-write, between the read and the write — F6).
    AfterFence,
    /// After the upsert, before commit.
    BeforeCommit,
}

impl Point {
    /// All points.
    pub const ALL: [Point; 3] = [Point::AfterCheck, Point::AfterFence, Point::BeforeCommit];
    /// Spelling in fault lines.
    pub fn as_str(self) -> &'static str {
        match self {
            Point::AfterCheck => "after-check",
            Point::AfterFence => "after-fence",
            Point::BeforeCommit => "before-commit",
        }
    }
}

/// Parameters of a holder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HolderCfg {
    /// Name (the actor in the history).
    pub name: Holder,
    /// Lease competed for.
    pub lease: LeaseName,
    /// Scope written.
    pub scope: Scope,
    /// Parts written per job, in order.
    pub parts: Vec<Part>,
    /// Lease TTL.
    pub ttl_ms: u64,
    /// Renew period.
    pub renew_ms: u64,
    /// Local safety margin.
    pub margin_ms: u64,
    /// A request with no reply after this long (own clock) is abandoned.
    pub rpc_timeout_ms: u64,
    /// Wait before acquiring again after a refusal or an abort.
    pub retry_ms: u64,
    /// Pause between finished jobs.
    pub job_gap_ms: u64,
    /// When the first job starts (own clock).
    pub start_ms: u64,
    /// Each part is written by one `write` operation (a user's lease spec runs its own
    /// statements for it) instead of BEGIN, fence, upsert, COMMIT. The pause points inside
    /// the transaction are then never reached; the one after the local check is.
    pub whole_writes: bool,
}

/// What the holder asks its driver to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Send a statement to a database on a connection; the reply comes back with `req`.
    Send {
        /// Request id, echoed in the reply.
        req: u64,
        /// Target database.
        db: DbName,
        /// Connection.
        conn: ConnId,
        /// Statement.
        op: Op,
    },
    /// Close a connection whose reply never came (the server rolls it back).
    Abandon {
        /// Database.
        db: DbName,
        /// Connection.
        conn: ConnId,
    },
    /// Record a client-side event (`check`, `lost`) in the history.
    Record(Op),
    /// A code point was reached; the driver may pause the holder right here, before the
    /// effects that follow.
    Point(Point),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum WStep {
    /// One `write` operation: fence and upsert in the spec's own statements.
    Whole,
    Begin,
    Fence,
    Upsert,
    Commit,
    Rollback,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Work {
    /// Waiting to (re)start the job at this local time.
    Idle {
        until: Millis,
    },
    Acquiring {
        req: u64,
        sent: Millis,
    },
    Writing {
        part: usize,
        step: WStep,
        req: u64,
    },
    Releasing {
        req: u64,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Holding {
    token: Token,
    deadline: LocalDeadline,
}

/// The job's request awaiting its reply (at most one: the job sends its next statement only
/// on the reply to the last, and a timeout or an error ends the wait).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct WorkWait {
    req: u64,
    timeout_at: Millis,
    db: DbName,
}

/// The renewer's request awaiting its reply (at most one: it renews again only after it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct RenewWait {
    req: u64,
    timeout_at: Millis,
    sent: Millis,
    token: Token,
}

/// Counts of what the holder did, for the run summary.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HolderStats {
    /// Jobs completed (all parts committed and released).
    pub jobs: u64,
    /// Parts committed.
    pub commits: u64,
    /// Aborted jobs.
    pub aborts: u64,
}

/// Everything the holder remembers between two inputs, apart from its configuration: `Copy`,
/// hashable and without heap data, so that a driver can keep one per holder and a search can keep
/// it in every state it explores (as a stateright actor's state is kept apart from the actor).
/// What the holder writes into a part (`name-tTOKEN-jJOB`) and its connections' names are
/// derived from it, not stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HolderState {
    work: Work,
    holding: Option<Holding>,
    /// Seed 003's guard of the current holding: a failed renew sets `lost` for good.
    guard: LeaseGuard,
    renew_at: Option<Millis>,
    work_wait: Option<WorkWait>,
    renew_wait: Option<RenewWait>,
    next_req: u64,
    /// Connection generations: a new connection replaces an abandoned one.
    gen: [u32; 3],
    job: u64,
}

impl HolderState {
    /// Between jobs until `start` on its own clock.
    fn starting_at(start: Millis) -> Self {
        HolderState {
            work: Work::Idle { until: start },
            holding: None,
            guard: LeaseGuard::default(),
            renew_at: None,
            work_wait: None,
            renew_wait: None,
            next_req: 1,
            gen: [0; 3],
            job: 0,
        }
    }

    /// The same situation with the counters that only name things set aside: the job number
    /// (it only names the content written), the connection generations (they only name the
    /// connections) and the request ids (only their order matters: each awaited one becomes its
    /// distance below the next id). Two states with equal canonical forms do the same from here
    /// on, up to those names; a search hashes this form so that they merge.
    pub fn canonical(&self) -> HolderState {
        let back = |req: u64| self.next_req - req;
        HolderState {
            work: match self.work {
                Work::Acquiring { req, sent } => Work::Acquiring {
                    req: back(req),
                    sent,
                },
                Work::Writing { part, step, req } => Work::Writing {
                    part,
                    step,
                    req: back(req),
                },
                Work::Releasing { req } => Work::Releasing { req: back(req) },
                idle @ Work::Idle { .. } => idle,
            },
            work_wait: self.work_wait.map(|w| WorkWait {
                req: back(w.req),
                ..w
            }),
            renew_wait: self.renew_wait.map(|w| RenewWait {
                req: back(w.req),
                ..w
            }),
            next_req: 0,
            gen: [0; 3],
            job: 0,
            ..*self
        }
    }

    /// Timers that fell due before `now` are due at `now`. Every timer is compared with
    /// `<=` the time it is asked at, and only the order of requests (not of their timeouts)
    /// matters, so the holder does the same from `now` on; a search keeps one state instead of
    /// one per instant a timer fell due.
    pub fn settle(&mut self, now: Millis) {
        if let Work::Idle { until } = &mut self.work {
            *until = (*until).max(now);
        }
        if let Some(r) = &mut self.renew_at {
            *r = (*r).max(now);
        }
        if let Some(w) = &mut self.work_wait {
            w.timeout_at = w.timeout_at.max(now);
        }
        if let Some(w) = &mut self.renew_wait {
            w.timeout_at = w.timeout_at.max(now);
        }
    }

    /// Between jobs: its next timer starts a job with an acquire.
    pub fn between_jobs(&self) -> bool {
        matches!(self.work, Work::Idle { .. })
    }

    /// The token it believes it holds.
    pub fn token(&self) -> Option<Token> {
        self.holding.map(|h| h.token)
    }

    /// Its local deadline for the current holding.
    pub fn deadline(&self) -> Option<Millis> {
        self.holding.map(|h| h.deadline.deadline)
    }

    /// A renew of the current holding failed (seed 003's `lost`).
    pub fn lost(&self) -> bool {
        self.guard.is_lost()
    }
}

/// Where a scheduler that runs holders step by step (the exhaustive checker, the generator's
/// harness) puts a holder's effects: [`HolderMachine::carry`] calls it for each, in order.
pub trait Carrier {
    /// A client-side event (`check`, `lost`) to record.
    fn record(&mut self, op: Op);
    /// The holder closes `conn` (its server rolls back what it had open); whatever waits or is
    /// held for that connection is dropped.
    fn abandon(&mut self, db: DbName, conn: ConnId);
    /// A statement sent right after one of the holder's code points: kept until the scheduler
    /// lets the holder go on, so that time can pass right there.
    fn hold(&mut self, req: u64, db: DbName, conn: ConnId, op: Op);
    /// Sends a statement: its answer, or `None` when it waits for a row lock (the scheduler
    /// answers it later, through [`HolderMachine::on_reply`]).
    fn send(&mut self, req: u64, db: DbName, conn: ConnId, op: Op) -> Option<Outcome>;
}

/// The holder state machine: its configuration (owned, or borrowed by a search that keeps only
/// the state) and its state.
#[derive(Clone, Debug)]
pub struct HolderMachine<C: Borrow<HolderCfg> = HolderCfg> {
    cfg: C,
    s: HolderState,
    /// Connection names made so far, by the generation they were made for (a name goes into
    /// every request; the state keeps only the generation).
    conns: [Option<(u32, ConnId)>; 3],
    /// What it did.
    pub stats: HolderStats,
}

/// A request the holder awaits, by the connection it went out on.
enum Wait {
    Work,
    Renew(RenewWait),
}

fn conn_name(holder: &Holder, which: usize, gen: u32) -> ConnId {
    // A search makes a machine for every step, so this runs for most requests it sends:
    // written out by hand, which costs a fifth of `format!`'s machinery.
    let kind = ["lease", "renew", "res"][which];
    let h = holder.as_str();
    let mut s = String::with_capacity(h.len() + kind.len() + 12);
    s.push_str(h);
    s.push('/');
    s.push_str(kind);
    s.push('/');
    match u8::try_from(gen) {
        Ok(g) if g < 10 => s.push(char::from(b'0' + g)),
        _ => s.push_str(&gen.to_string()),
    }
    ConnId::new(s)
}

const CONN_LEASE: usize = 0;
const CONN_RENEW: usize = 1;
const CONN_RES: usize = 2;

impl<C: Borrow<HolderCfg>> HolderMachine<C> {
    /// A holder that starts its first job at `cfg.start_ms` on its own clock.
    pub fn new(cfg: C) -> Self {
        let start = Millis(cfg.borrow().start_ms);
        Self::with_state(cfg, HolderState::starting_at(start))
    }

    /// A holder in state `s` (one a search kept, or one taken from [`HolderMachine::state`]).
    pub fn with_state(cfg: C, s: HolderState) -> Self {
        HolderMachine {
            cfg,
            s,
            conns: [None, None, None],
            stats: HolderStats::default(),
        }
    }

    /// Its configuration.
    pub fn cfg(&self) -> &HolderCfg {
        self.cfg.borrow()
    }

    /// The connection its writes go out on now.
    pub fn res_conn(&mut self) -> ConnId {
        self.conn(CONN_RES)
    }

    /// The name of its current connection `which` (a new one replaces an abandoned one).
    fn conn(&mut self, which: usize) -> ConnId {
        let gen = self.s.gen[which];
        match &self.conns[which] {
            Some((g, c)) if *g == gen => c.clone(),
            _ => {
                let c = conn_name(&self.cfg().name, which, gen);
                self.conns[which] = Some((gen, c.clone()));
                c
            }
        }
    }

    /// Its state: everything that decides what it does next.
    pub fn state(&self) -> &HolderState {
        &self.s
    }

    /// Whether a request it sent still awaits its reply: a driver that ends the holder waits
    /// for these, so every call it began is answered (and recorded).
    pub fn awaits_reply(&self) -> bool {
        self.s.work_wait.is_some() || self.s.renew_wait.is_some()
    }

    /// The earliest local time at which `on_timer` has something to do.
    pub fn next_timer(&self) -> Option<Millis> {
        let s = &self.s;
        let idle = match s.work {
            Work::Idle { until } => Some(until),
            _ => None,
        };
        // Asked after every input of every holder: plain comparisons, no iterator chain.
        let earlier = |a: Option<Millis>, b: Option<Millis>| match (a, b) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, None) => x,
            (None, y) => y,
        };
        earlier(
            earlier(idle, s.renew_at),
            earlier(
                s.work_wait.map(|w| w.timeout_at),
                s.renew_wait.map(|w| w.timeout_at),
            ),
        )
    }

    fn take_wait(&mut self, req: u64) -> Option<Wait> {
        if self.s.work_wait.is_some_and(|w| w.req == req) {
            self.s.work_wait = None;
            return Some(Wait::Work);
        }
        if self.s.renew_wait.is_some_and(|w| w.req == req) {
            return self.s.renew_wait.take().map(Wait::Renew);
        }
        None
    }

    /// What the current holding writes into every part: who wrote it, with which token, in
    /// which job.
    pub fn content(&self, token: Token) -> String {
        format!("{}-t{}-j{}", self.cfg().name, token, self.s.job)
    }

    fn send(&mut self, now: Millis, which: usize, op: Op, out: &mut Vec<Effect>) -> u64 {
        let req = self.s.next_req;
        self.s.next_req += 1;
        let db = if which == CONN_RES {
            DbName::Res
        } else {
            DbName::Lease
        };
        let timeout_at = now.plus(self.cfg().rpc_timeout_ms);
        if which == CONN_RENEW {
            self.s.renew_wait = Some(RenewWait {
                req,
                timeout_at,
                sent: now,
                token: self.token(),
            });
        } else {
            self.s.work_wait = Some(WorkWait {
                req,
                timeout_at,
                db,
            });
        }
        out.push(Effect::Send {
            req,
            db,
            conn: self.conn(which),
            op,
        });
        req
    }

    /// Handles every timer due at local time `now`, appending the effects to `out` (a buffer
    /// the driver may reuse).
    pub fn on_timer(&mut self, now: Millis, out: &mut Vec<Effect>) {
        // Timed-out requests first, oldest first: their connections are abandoned.
        let work = self.s.work_wait.filter(|w| w.timeout_at <= now);
        let renew = self.s.renew_wait.filter(|w| w.timeout_at <= now);
        let renew_first = match (work, renew) {
            (Some(w), Some(r)) => r.req < w.req,
            _ => true,
        };
        if renew_first {
            self.renew_timed_out(renew, out);
        }
        if let Some(w) = work {
            self.s.work_wait = None;
            let which = if w.db == DbName::Res {
                CONN_RES
            } else {
                CONN_LEASE
            };
            self.abandon(which, out);
            self.abort(now);
        }
        if !renew_first {
            self.renew_timed_out(renew, out);
        }
        if let Work::Idle { until } = self.s.work {
            if until <= now {
                self.start_acquire(now, out);
            }
        }
        if let Some(r) = self.s.renew_at {
            if r <= now && self.s.renew_wait.is_none() {
                self.s.renew_at = None;
                if let (Some(h), false) = (self.s.holding, self.s.guard.is_lost()) {
                    let op = Op::Renew {
                        lease: self.cfg().lease.clone(),
                        holder: self.cfg().name.clone(),
                        token: h.token,
                        ttl_ms: self.cfg().ttl_ms,
                    };
                    self.send(now, CONN_RENEW, op, out);
                }
            }
        }
    }

    fn renew_timed_out(&mut self, timed_out: Option<RenewWait>, out: &mut Vec<Effect>) {
        if timed_out.is_some() {
            self.s.renew_wait = None;
            self.abandon(CONN_RENEW, out);
            self.mark_lost(out);
        }
    }

    fn abandon(&mut self, which: usize, out: &mut Vec<Effect>) {
        let db = if which == CONN_RES {
            DbName::Res
        } else {
            DbName::Lease
        };
        out.push(Effect::Abandon {
            db,
            conn: self.conn(which),
        });
        self.s.gen[which] += 1;
        // Replies on the old connection are no longer awaited.
        if which == CONN_RENEW {
            self.s.renew_wait = None;
        } else if self.s.work_wait.is_some_and(|w| w.db == db) {
            self.s.work_wait = None;
        }
    }

    fn mark_lost(&mut self, out: &mut Vec<Effect>) {
        if !self.s.guard.is_lost() && self.s.holding.is_some() {
            self.s.guard.on_renew(false);
            out.push(Effect::Record(Op::Lost));
        }
        self.s.renew_at = None;
    }

    fn start_acquire(&mut self, now: Millis, out: &mut Vec<Effect>) {
        self.s.job += 1;
        let op = Op::Acquire {
            lease: self.cfg().lease.clone(),
            holder: self.cfg().name.clone(),
            ttl_ms: self.cfg().ttl_ms,
        };
        // The local deadline starts from the clock read *before* sending.
        let req = self.send(now, CONN_LEASE, op, out);
        self.s.work = Work::Acquiring { req, sent: now };
    }

    /// Ends the current job without finishing it: stop renewing, forget the holding, re-queue.
    /// Callers that may leave a transaction open abandon its connection first, so the server
    /// rolls it back; the job never reclaims the old holding (seed 003's LeaseGuard).
    fn abort(&mut self, now: Millis) {
        self.stats.aborts += 1;
        self.end_job(now.plus(self.cfg().retry_ms));
    }

    /// Forgets the holding, stops renewing and waits until `until` for the next job.
    fn end_job(&mut self, until: Millis) {
        self.s.holding = None;
        self.s.guard = LeaseGuard::default();
        self.s.renew_at = None;
        self.s.work = Work::Idle { until };
    }

    /// The token of the current holding (0 when none: such a write is refused by any fence).
    fn token(&self) -> Token {
        self.s.holding.map(|h| h.token).unwrap_or_default()
    }

    /// Before each part: check the local deadline and `lost`, then begin the write.
    fn start_part(&mut self, now: Millis, part: usize, out: &mut Vec<Effect>) {
        let Some(h) = self.s.holding else {
            self.abort(now);
            return;
        };
        out.push(Effect::Record(Op::Check {
            deadline: h.deadline.deadline,
        }));
        if !self.s.guard.may_start_write() || !h.deadline.allows(now) {
            self.abort(now);
            return;
        }
        out.push(Effect::Point(Point::AfterCheck));
        if self.cfg().whole_writes {
            let op = Op::Write {
                scope: self.cfg().scope.clone(),
                part: self.cfg().parts[part].clone(),
                content: self.content(h.token),
                token: h.token,
            };
            self.step(now, part, WStep::Whole, op, out);
            return;
        }
        self.step(now, part, WStep::Begin, Op::Begin { db: DbName::Res }, out);
    }

    fn step(&mut self, now: Millis, part: usize, step: WStep, op: Op, out: &mut Vec<Effect>) {
        let req = self.send(now, CONN_RES, op, out);
        self.s.work = Work::Writing { part, step, req };
    }

    /// Carries `effects` out through `c`, in order: a statement right after a code point is
    /// held, any other is sent, and an answer goes straight back to the holder at `now` (the
    /// effects of that reply follow the rest). The simulation's drivers carry effects their own
    /// way (over a network, pausing where the fault plan says).
    pub fn carry(&mut self, now: Millis, effects: Vec<Effect>, c: &mut impl Carrier) {
        let mut queue = std::collections::VecDeque::from(effects);
        let mut after_point = false;
        while let Some(e) = queue.pop_front() {
            match e {
                Effect::Point(_) => after_point = true,
                Effect::Record(op) => c.record(op),
                Effect::Abandon { db, conn } => c.abandon(db, conn),
                Effect::Send { req, db, conn, op } => {
                    if std::mem::take(&mut after_point) {
                        c.hold(req, db, conn, op);
                    } else if let Some(outcome) = c.send(req, db, conn, op) {
                        let mut more = Vec::new();
                        self.on_reply(now, req, &outcome, &mut more);
                        queue.extend(more);
                    }
                }
            }
        }
    }

    /// Handles the reply to request `req` at local time `now`, appending the effects to `out`.
    pub fn on_reply(&mut self, now: Millis, req: u64, outcome: &Outcome, out: &mut Vec<Effect>) {
        match self.take_wait(req) {
            None => {} // abandoned or unknown: ignore
            Some(Wait::Renew(w)) => self.on_renewed(now, w, outcome, out),
            Some(Wait::Work) => self.on_work_reply(now, req, outcome, out),
        }
    }

    fn on_renewed(&mut self, now: Millis, w: RenewWait, outcome: &Outcome, out: &mut Vec<Effect>) {
        match (outcome, self.s.holding) {
            (Outcome::Renewed { .. }, Some(h)) if h.token == w.token => {
                let deadline = h
                    .deadline
                    .renewed(w.sent, self.cfg().ttl_ms, self.cfg().margin_ms);
                self.s.holding = Some(Holding {
                    token: w.token,
                    deadline,
                });
                if !self.s.guard.is_lost() {
                    self.s.renew_at = Some(now.plus(self.cfg().renew_ms));
                }
            }
            (_, Some(h)) if h.token == w.token => {
                if matches!(outcome, Outcome::Error(_)) {
                    self.abandon(CONN_RENEW, out);
                }
                self.mark_lost(out);
            }
            _ => {}
        }
    }

    fn on_work_reply(&mut self, now: Millis, req: u64, outcome: &Outcome, out: &mut Vec<Effect>) {
        let conn_error = matches!(
            outcome,
            Outcome::Error(_) | Outcome::Unavailable | Outcome::Indeterminate(_)
        );
        match self.s.work {
            Work::Acquiring { req: r, sent } if r == req => match outcome {
                Outcome::Granted { token, .. } => {
                    let deadline = LocalDeadline::from_request_start(
                        sent,
                        self.cfg().ttl_ms,
                        self.cfg().margin_ms,
                    );
                    self.s.holding = Some(Holding {
                        token: *token,
                        deadline,
                    });
                    self.s.guard = LeaseGuard::default();
                    self.s.renew_at = Some(now.plus(self.cfg().renew_ms));
                    self.start_part(now, 0, out);
                }
                _ => {
                    if conn_error {
                        self.abandon(CONN_LEASE, out);
                    }
                    self.s.work = Work::Idle {
                        until: now.plus(self.cfg().retry_ms),
                    };
                }
            },
            Work::Writing { part, step, req: r } if r == req => {
                if conn_error {
                    self.abandon(CONN_RES, out);
                    self.abort(now);
                    return;
                }
                let scope = self.cfg().scope.clone();
                let token = self.token();
                match (step, outcome) {
                    (WStep::Begin, _) => {
                        self.step(now, part, WStep::Fence, Op::Fence { scope, token }, out);
                    }
                    (WStep::Fence, Outcome::Passed) => {
                        out.push(Effect::Point(Point::AfterFence));
                        let op = Op::Upsert {
                            scope,
                            part: self.cfg().parts[part].clone(),
                            content: self.content(token),
                            token,
                        };
                        self.step(now, part, WStep::Upsert, op, out);
                    }
                    (WStep::Upsert, Outcome::Ok | Outcome::Accepted) => {
                        out.push(Effect::Point(Point::BeforeCommit));
                        self.step(
                            now,
                            part,
                            WStep::Commit,
                            Op::Commit { db: DbName::Res },
                            out,
                        );
                    }
                    (WStep::Fence | WStep::Upsert, _) => {
                        // Refused by the fence or the row guard: this holding is stale.
                        self.step(
                            now,
                            part,
                            WStep::Rollback,
                            Op::Rollback { db: DbName::Res },
                            out,
                        );
                    }
                    (WStep::Whole, Outcome::Accepted) | (WStep::Commit, _) => {
                        self.stats.commits += 1;
                        if part + 1 < self.cfg().parts.len() {
                            self.start_part(now, part + 1, out);
                        } else if let Some(h) = self.s.holding {
                            let op = Op::Release {
                                lease: self.cfg().lease.clone(),
                                holder: self.cfg().name.clone(),
                                token: h.token,
                            };
                            let req = self.send(now, CONN_LEASE, op, out);
                            self.s.work = Work::Releasing { req };
                        }
                    }
                    (WStep::Rollback, _) | (WStep::Whole, _) => self.abort(now),
                }
            }
            Work::Releasing { req: r } if r == req => {
                if conn_error {
                    self.abandon(CONN_LEASE, out);
                }
                self.stats.jobs += 1;
                self.end_job(now.plus(self.cfg().job_gap_ms));
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests;
