//! The holder, written once as a sans-IO state machine (quinn-proto style): inputs in
//! (`on_timer`, `on_reply`), effects out (requests to send, client events to record, code
//! points reached), `now` — the holder's *own* clock reading — passed in. It lives in the model
//! crate, beside the rules it follows, so that every driver can run the same code: the
//! simulation's fast and turmoil drivers do today.
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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WStep {
    /// One `write` operation: fence and upsert in the spec's own statements.
    Whole,
    Begin,
    Fence,
    Upsert,
    Commit,
    Rollback,
}

#[derive(Clone, Debug, PartialEq, Eq)]
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

#[derive(Clone, Copy, Debug)]
struct Holding {
    token: Token,
    deadline: LocalDeadline,
}

#[derive(Clone, Copy, Debug)]
enum Pending {
    Work {
        timeout_at: Millis,
        db: DbName,
    },
    Renew {
        timeout_at: Millis,
        sent: Millis,
        token: Token,
    },
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

/// The holder state machine.
#[derive(Clone, Debug)]
pub struct HolderMachine {
    cfg: HolderCfg,
    work: Work,
    holding: Option<Holding>,
    /// What the current holding writes into every part (formatted once per grant).
    content: String,
    /// Seed 003's guard of the current holding: a failed renew sets `lost` for good.
    guard: LeaseGuard,
    renew_at: Option<Millis>,
    renew_inflight: Option<u64>,
    /// Requests awaiting a reply, in request order (ids only grow, so pushing keeps the order;
    /// there are at most a few, so a list beats a map).
    pending: Vec<(u64, Pending)>,
    next_req: u64,
    /// Connection generations: a new connection replaces an abandoned one.
    gen: [u32; 3],
    /// The current connection ids (cached: they go into every request).
    conns: [ConnId; 3],
    job: u64,
    /// What it did.
    pub stats: HolderStats,
}

fn conn_name(holder: &Holder, which: usize, gen: u32) -> ConnId {
    let kind = ["lease", "renew", "res"][which];
    ConnId::new(format!("{holder}/{kind}/{gen}"))
}

const CONN_LEASE: usize = 0;
const CONN_RENEW: usize = 1;
const CONN_RES: usize = 2;

impl HolderMachine {
    /// A holder that starts its first job at `cfg.start_ms` on its own clock.
    pub fn new(cfg: HolderCfg) -> Self {
        let start = Millis(cfg.start_ms);
        let cfg_name = cfg.name.clone();
        HolderMachine {
            cfg,
            work: Work::Idle { until: start },
            holding: None,
            content: String::new(),
            guard: LeaseGuard::default(),
            renew_at: None,
            renew_inflight: None,
            pending: Vec::new(),
            next_req: 1,
            gen: [0; 3],
            conns: [0, 1, 2].map(|w| conn_name(&cfg_name, w, 0)),
            job: 0,
            stats: HolderStats::default(),
        }
    }

    /// The earliest local time at which `on_timer` has something to do.
    pub fn next_timer(&self) -> Option<Millis> {
        let mut t: Option<Millis> = None;
        let mut min = |x: Millis| t = Some(t.map_or(x, |y: Millis| y.min(x)));
        if let Work::Idle { until } = self.work {
            min(until);
        }
        if let Some(r) = self.renew_at {
            min(r);
        }
        for (_, p) in &self.pending {
            match p {
                Pending::Work { timeout_at, .. } | Pending::Renew { timeout_at, .. } => {
                    min(*timeout_at)
                }
            }
        }
        t
    }

    fn take_pending(&mut self, req: u64) -> Option<Pending> {
        let i = self.pending.iter().position(|(r, _)| *r == req)?;
        Some(self.pending.remove(i).1)
    }

    fn conn(&self, which: usize) -> ConnId {
        self.conns[which].clone()
    }

    fn send(&mut self, now: Millis, which: usize, op: Op, out: &mut Vec<Effect>) -> u64 {
        let req = self.next_req;
        self.next_req += 1;
        let db = if which == CONN_RES {
            DbName::Res
        } else {
            DbName::Lease
        };
        let timeout_at = now.plus(self.cfg.rpc_timeout_ms);
        let p = if which == CONN_RENEW {
            let token = self.holding.map(|h| h.token).unwrap_or_default();
            Pending::Renew {
                timeout_at,
                sent: now,
                token,
            }
        } else {
            Pending::Work { timeout_at, db }
        };
        self.pending.push((req, p));
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
        // Timed-out requests first: their connections are abandoned.
        let expired: Vec<(u64, Pending)> = self
            .pending
            .iter()
            .filter(|(_, p)| match p {
                Pending::Work { timeout_at, .. } | Pending::Renew { timeout_at, .. } => {
                    *timeout_at <= now
                }
            })
            .map(|(k, p)| (*k, *p))
            .collect();
        for (req, p) in expired {
            self.take_pending(req);
            match p {
                Pending::Renew { .. } => {
                    self.abandon(CONN_RENEW, out);
                    self.renew_inflight = None;
                    self.mark_lost(out);
                }
                Pending::Work { db, .. } => {
                    let which = if db == DbName::Res {
                        CONN_RES
                    } else {
                        CONN_LEASE
                    };
                    self.abandon(which, out);
                    self.abort(now);
                }
            }
        }
        if let Work::Idle { until } = self.work {
            if until <= now {
                self.start_acquire(now, out);
            }
        }
        if let Some(r) = self.renew_at {
            if r <= now && self.renew_inflight.is_none() {
                self.renew_at = None;
                if let (Some(h), false) = (self.holding, self.guard.is_lost()) {
                    let op = Op::Renew {
                        lease: self.cfg.lease.clone(),
                        holder: self.cfg.name.clone(),
                        token: h.token,
                        ttl_ms: self.cfg.ttl_ms,
                    };
                    let req = self.send(now, CONN_RENEW, op, out);
                    self.renew_inflight = Some(req);
                }
            }
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
        self.gen[which] += 1;
        self.conns[which] = conn_name(&self.cfg.name, which, self.gen[which]);
        // Replies on the old connection are no longer awaited.
        let stale: Vec<u64> = self
            .pending
            .iter()
            .filter(|(_, p)| match p {
                Pending::Work { db: d, .. } => which != CONN_RENEW && *d == db,
                Pending::Renew { .. } => which == CONN_RENEW,
            })
            .map(|(k, _)| *k)
            .collect();
        for k in stale {
            self.take_pending(k);
        }
    }

    fn mark_lost(&mut self, out: &mut Vec<Effect>) {
        if !self.guard.is_lost() && self.holding.is_some() {
            self.guard.on_renew(false);
            out.push(Effect::Record(Op::Lost));
        }
        self.renew_at = None;
    }

    fn start_acquire(&mut self, now: Millis, out: &mut Vec<Effect>) {
        self.job += 1;
        let op = Op::Acquire {
            lease: self.cfg.lease.clone(),
            holder: self.cfg.name.clone(),
            ttl_ms: self.cfg.ttl_ms,
        };
        // The local deadline starts from the clock read *before* sending.
        let req = self.send(now, CONN_LEASE, op, out);
        self.work = Work::Acquiring { req, sent: now };
    }

    /// Ends the current job without finishing it: stop renewing, forget the holding, re-queue.
    /// Callers that may leave a transaction open abandon its connection first, so the server
    /// rolls it back; the job never reclaims the old holding (seed 003's LeaseGuard).
    fn abort(&mut self, now: Millis) {
        self.stats.aborts += 1;
        self.end_job(now.plus(self.cfg.retry_ms));
    }

    /// Forgets the holding, stops renewing and waits until `until` for the next job.
    fn end_job(&mut self, until: Millis) {
        self.holding = None;
        self.guard = LeaseGuard::default();
        self.renew_at = None;
        self.work = Work::Idle { until };
    }

    /// The token of the current holding (0 when none: such a write is refused by any fence).
    fn token(&self) -> Token {
        self.holding.map(|h| h.token).unwrap_or_default()
    }

    /// Before each part: check the local deadline and `lost`, then begin the write.
    fn start_part(&mut self, now: Millis, part: usize, out: &mut Vec<Effect>) {
        let Some(h) = self.holding else {
            self.abort(now);
            return;
        };
        out.push(Effect::Record(Op::Check {
            deadline: h.deadline.deadline,
        }));
        if !self.guard.may_start_write() || !h.deadline.allows(now) {
            self.abort(now);
            return;
        }
        out.push(Effect::Point(Point::AfterCheck));
        if self.cfg.whole_writes {
            let op = Op::Write {
                scope: self.cfg.scope.clone(),
                part: self.cfg.parts[part].clone(),
                content: self.content.clone(),
                token: h.token,
            };
            self.step(now, part, WStep::Whole, op, out);
            return;
        }
        let req = self.send(now, CONN_RES, Op::Begin { db: DbName::Res }, out);
        self.work = Work::Writing {
            part,
            step: WStep::Begin,
            req,
        };
    }

    fn step(&mut self, now: Millis, part: usize, step: WStep, op: Op, out: &mut Vec<Effect>) {
        let req = self.send(now, CONN_RES, op, out);
        self.work = Work::Writing { part, step, req };
    }

    /// Handles the reply to request `req` at local time `now`, appending the effects to `out`.
    pub fn on_reply(&mut self, now: Millis, req: u64, outcome: &Outcome, out: &mut Vec<Effect>) {
        let Some(p) = self.take_pending(req) else {
            return; // abandoned or unknown: ignore
        };
        if let Pending::Renew { sent, token, .. } = p {
            self.renew_inflight = None;
            match (outcome, self.holding) {
                (Outcome::Renewed { .. }, Some(h)) if h.token == token => {
                    let deadline = h
                        .deadline
                        .renewed(sent, self.cfg.ttl_ms, self.cfg.margin_ms);
                    self.holding = Some(Holding { token, deadline });
                    if !self.guard.is_lost() {
                        self.renew_at = Some(now.plus(self.cfg.renew_ms));
                    }
                }
                (_, Some(h)) if h.token == token => {
                    if matches!(outcome, Outcome::Error(_)) {
                        self.abandon(CONN_RENEW, out);
                    }
                    self.mark_lost(out);
                }
                _ => {}
            }
            return;
        }
        let conn_error = matches!(
            outcome,
            Outcome::Error(_) | Outcome::Unavailable | Outcome::Indeterminate(_)
        );
        match self.work.clone() {
            Work::Acquiring { req: r, sent } if r == req => match outcome {
                Outcome::Granted { token, .. } => {
                    let deadline = LocalDeadline::from_request_start(
                        sent,
                        self.cfg.ttl_ms,
                        self.cfg.margin_ms,
                    );
                    self.holding = Some(Holding {
                        token: *token,
                        deadline,
                    });
                    // Who wrote a part, with which token, in which job.
                    self.content = format!("{}-t{}-j{}", self.cfg.name, token, self.job);
                    self.guard = LeaseGuard::default();
                    self.renew_at = Some(now.plus(self.cfg.renew_ms));
                    self.start_part(now, 0, out);
                }
                _ => {
                    if conn_error {
                        self.abandon(CONN_LEASE, out);
                    }
                    self.work = Work::Idle {
                        until: now.plus(self.cfg.retry_ms),
                    };
                }
            },
            Work::Writing { part, step, req: r } if r == req => {
                if conn_error {
                    self.abandon(CONN_RES, out);
                    self.abort(now);
                    return;
                }
                let scope = self.cfg.scope.clone();
                match (step, outcome) {
                    (WStep::Begin, _) => {
                        let token = self.token();
                        self.step(now, part, WStep::Fence, Op::Fence { scope, token }, out);
                    }
                    (WStep::Fence, Outcome::Passed) => {
                        out.push(Effect::Point(Point::AfterFence));
                        let op = Op::Upsert {
                            scope,
                            part: self.cfg.parts[part].clone(),
                            content: self.content.clone(),
                            token: self.token(),
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
                        if part + 1 < self.cfg.parts.len() {
                            self.start_part(now, part + 1, out);
                        } else if let Some(h) = self.holding {
                            let op = Op::Release {
                                lease: self.cfg.lease.clone(),
                                holder: self.cfg.name.clone(),
                                token: h.token,
                            };
                            let req = self.send(now, CONN_LEASE, op, out);
                            self.work = Work::Releasing { req };
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
                self.end_job(now.plus(self.cfg.job_gap_ms));
            }
            _ => {}
        }
    }
}
