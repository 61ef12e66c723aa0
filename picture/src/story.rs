//! The story of a run: the facts a picture shows, derived once from a History, its
//! configuration and the checkers' report, so that every picture tells the same story.
//!
//! Only what the checkers count is drawn as accepted: a write is accepted when the checkers'
//! facts say it committed (a step-wise write at its commit), so a rolled-back upsert never
//! appears as a kept write.

use leaselab_checkers::facts::{self, Certainty, LeaseChange};
use leaselab_checkers::{Report, Violation};
use leaselab_model::Reason;
use leaselab_model::{Config, DbName, Expiry, History, Holder, Millis, Op, Outcome, Token};
use std::collections::BTreeSet;

/// How a holding ended, by the database clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// Released (`expires_at = -infinity`) at `until`.
    Released,
    /// Expired at `until` without a renewal.
    Expired,
    /// Still held when the history ends.
    Open,
}

/// One continuous holding of a lease: one token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Holding {
    /// Who held it.
    pub holder: Holder,
    /// The token of this holding.
    pub token: Token,
    /// When it was granted (database clock).
    pub from: Millis,
    /// When it stopped being held by the database clock (release or last expiry).
    pub until: Millis,
    /// How it ended.
    pub end: End,
    /// The holder's own view: the latest local deadline it checked against, placed on the
    /// database clock's axis with the offset of that check (`None`: it never checked).
    pub local_until: Option<Millis>,
    /// The clock `local_until` was read on.
    pub local_clock: Clock,
    /// The granting event.
    pub seq: u64,
    /// A release that waited for a row lock took effect at its commit, somewhere between
    /// `until` and this instant, when its client learned of it (`None`: at `until` exactly).
    pub release_reported: Option<Millis>,
}

/// A span in which a holder ran nothing (SIGSTOP, GC, VM freeze).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pause {
    /// Who.
    pub holder: Holder,
    /// From (database clock).
    pub from: Millis,
    /// Until it resumed (the end of the history if it never did).
    pub to: Millis,
    /// Whether it resumed within the history.
    pub resumed: bool,
    /// The events that stopped and resumed it (`to_seq` 0: never resumed).
    pub seqs: (u64, u64),
    /// The local deadline of the check the holder had just passed when it stopped (F4's spot:
    /// between the local check and the write), if that is where the pause landed.
    pub after_check: Option<Millis>,
    /// What of a write it had sent when it stopped, its commit still to come: a write started
    /// in time can land late. `None`: no statement of a write was out.
    pub before_commit: Option<InFlight>,
}

/// The statements of a write a holder had sent when a pause stopped it, before their commit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InFlight {
    /// The last statement sent: `fence` or `upsert`.
    pub last: &'static str,
    /// When it was sent (database clock).
    pub sent: Millis,
    /// The event that sent it.
    pub seq: u64,
    /// The token it carried.
    pub token: Token,
    /// When the commit went out, if it did within the history.
    pub commit: Option<Millis>,
}

/// What the resource did with a write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Committed (and kept, for a publish).
    Accepted,
    /// Refused (the fence, a guarded upsert, a business key already taken).
    Rejected,
    /// May or may not have committed (the connection was lost during commit).
    Maybe,
}

/// One write attempt (a part or a publish) with its verdict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Write {
    /// Writer.
    pub holder: Holder,
    /// Token carried.
    pub token: Token,
    /// The part (`summary`) or publish key (`publish:<key>`) written.
    pub target: String,
    /// When it was decided (database clock).
    pub at: Millis,
    /// The event that reported it.
    pub seq: u64,
    /// What the resource did.
    pub verdict: Verdict,
    /// A higher token had been granted before this write: its writer no longer held the lease.
    pub stale: bool,
    /// Named by a violation.
    pub violating: bool,
}

/// Which of a holder's clocks a reading is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clock {
    /// Its own clock, as the history's `local` records it.
    Own,
    /// Its wall clock after a step (a `clock-step` event): a deadline compared with it moved
    /// with the step, while the holder's monotonic clock did not.
    Wall,
    /// Its monotonic clock, told apart from a wall clock that was stepped: the step did not
    /// move it.
    Monotonic,
}

impl Clock {
    /// How the pictures name it.
    pub const fn words(self) -> &'static str {
        match self {
            Clock::Own => "own clock",
            Clock::Wall => "wall clock",
            Clock::Monotonic => "monotonic clock",
        }
    }
}

/// Other moments worth a mark.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mark {
    /// A database crashed.
    Crash(DbName),
    /// A database restarted.
    Restart(DbName),
    /// The holder marked its lease lost (a renew failed).
    Lost(Holder),
    /// A renew was refused.
    RenewRefused(Holder, Token),
    /// The holder's local check said its deadline had passed: the deadline, the holder's
    /// clock reading when it is not the database's, and the clock it read (as
    /// [`Mark::CheckPassed`]).
    CheckExpired(Holder, Millis, Option<Millis>, Clock),
    /// The holder's local check passed: by its own clock, its lease was valid until this
    /// deadline. The check a stale write follows is the moment the lesson is about — it was
    /// true when it ran. With the holder's clock reading when it is not the database's, and
    /// which clock that was.
    CheckPassed(Holder, Millis, Option<Millis>, Clock),
    /// The holder's wall clock was stepped: it read the first value, then the second.
    ClockStep(Holder, Millis, Millis),
    /// Check-then-write's fence step: the holder read the floor and found its token not
    /// below it — a read that takes no lock, so another writer can pass the same check.
    FloorCheckPassed(Holder, Token),
    /// The holder's statement waits for a row lock another transaction holds.
    Waits(Holder),
    /// The holder's fence passed inside its open write transaction: the floor row stays
    /// locked until it commits or rolls back. Told where another holder's write then waits on
    /// it — the uncommitted UPDATE the wait is for (F6b).
    HoldsFloor(Holder, Token),
    /// A read of the floor found this value; the second value is the higher one an earlier
    /// read found, when the floor went back.
    Floor(Token, Option<Token>),
}

/// A moment with its mark.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Moment {
    /// When (database clock).
    pub at: Millis,
    /// The event.
    pub seq: u64,
    /// What.
    pub mark: Mark,
}

/// Everything a picture draws.
#[derive(Clone, Debug)]
pub struct Story {
    /// The run's configuration (what the fence was, which knobs were wrong).
    pub config: Config,
    /// The lease spec the run used instead (`leaselab audit`): then `config` describes nothing
    /// of the statements, and the pictures say only what the history shows.
    pub spec: Option<String>,
    /// The recorded history this story was read from (`leaselab judge`'s format): then
    /// neither `config` nor a spec describes the statements — only the history speaks.
    pub recorded: Option<String>,
    /// One lane per holder, in order of first appearance.
    pub lanes: Vec<Holder>,
    /// Every holding, in grant order.
    pub holdings: Vec<Holding>,
    /// Every pause, in start order.
    pub pauses: Vec<Pause>,
    /// Every write attempt with a verdict, in history order.
    pub writes: Vec<Write>,
    /// Crashes, lost leases, refused renews, expired checks.
    pub moments: Vec<Moment>,
    /// The checkers' violations, as reported.
    pub violations: Vec<Violation>,
    /// The events the violations name.
    pub violating: BTreeSet<u64>,
    /// The last instant of the history.
    pub end: Millis,
    /// A simulation run's liveness, when it failed: why, in words (the caller judges it: the
    /// checkers judge safety only, and a history alone does not say when the faults healed).
    pub liveness: Option<String>,
}

fn is_holder(h: &Holder) -> bool {
    !matches!(h.as_str(), "lab" | "admin" | "clock")
}

impl Story {
    /// Whether the time between two shown moments is skipped time worth saying so: more than
    /// five seconds and more than a quarter of the run, so that a jump of 43 s in a 50 s run is
    /// not read as the next instant.
    pub fn is_gap(&self, from: u64, to: u64) -> bool {
        let d = to.saturating_sub(from);
        d > 5_000 && d > self.end.0 / 4
    }

    /// This story told of the recorded history `name` (`leaselab judge`'s format). A call there
    /// shown `blocked` was only in flight — sent, its answer to come (a merge keeps every call's
    /// window) — not waiting on a row lock the history cannot see: no mark says it did.
    pub fn recorded_from(&mut self, name: String) {
        self.recorded = Some(name);
        self.moments.retain(|m| !matches!(m.mark, Mark::Waits(_)));
    }

    /// Which fence the resource ran, as far as the story knows: its configuration's, unless the
    /// statements were a spec's or the history was recorded — then the configuration is a
    /// default that describes nothing of the run.
    pub fn fence_label(&self) -> String {
        match (&self.recorded, &self.spec) {
            (Some(_), _) => "not recorded (the history says what the resource answered)".into(),
            (None, Some(spec)) => format!("the statements of {spec}"),
            (None, None) => self.config.fence.as_str().to_string(),
        }
    }

    /// Reads the story of `history` run under `config`, judged as `report`.
    pub fn new(history: &History, config: &Config, report: &Report) -> Story {
        let f = facts::derive(history);
        let at_of = |seq: u64| {
            history
                .events
                .get(seq.saturating_sub(1) as usize)
                .map_or(Millis::ZERO, |e| e.at)
        };
        let end = history.events.last().map_or(Millis::ZERO, |e| e.at);
        let violating: BTreeSet<u64> = report
            .violations
            .iter()
            .flat_map(|v| v.events.iter().copied())
            .collect();

        // One order of lanes for every run of the same holders, whoever acted first (F6b's two
        // orders drew holder-a on the left in one and on the right in the other).
        let mut lanes: Vec<Holder> = Vec::new();
        for e in &history.events {
            if is_holder(&e.actor) && !lanes.contains(&e.actor) {
                lanes.push(e.actor.clone());
            }
        }
        lanes.sort();

        // Holdings from the committed lease changes: a grant, its renewals, its release.
        let mut holdings: Vec<Holding> = Vec::new();
        for lf in &f.lease_changes {
            match &lf.change {
                LeaseChange::Granted {
                    holder,
                    token,
                    expires,
                    ..
                } => holdings.push(Holding {
                    holder: holder.clone(),
                    token: *token,
                    from: at_of(lf.window.latest),
                    until: match expires {
                        Expiry::At(x) => *x,
                        Expiry::NegInfinity => at_of(lf.window.latest),
                    },
                    end: End::Open,
                    local_until: None,
                    local_clock: Clock::Own,
                    seq: lf.window.latest,
                    release_reported: None,
                }),
                LeaseChange::Renewed { token, expires } => {
                    if let Some(h) = holdings.iter_mut().rev().find(|h| h.token == *token) {
                        if let Expiry::At(x) = expires {
                            h.until = *x;
                        }
                    }
                }
                LeaseChange::Released { token } => {
                    // At its commit, not at its reply: the earliest instant it can have
                    // committed, and when its client was told if that came later.
                    if let Some(h) = holdings.iter_mut().rev().find(|h| h.token == *token) {
                        let (from, told) = (at_of(lf.window.earliest), at_of(lf.window.latest));
                        h.until = from.min(h.until);
                        h.end = End::Released;
                        h.release_reported = (told > from).then_some(told);
                    }
                }
            }
        }
        for h in &mut holdings {
            if h.end == End::Open && h.until <= end {
                h.end = End::Expired;
            }
        }

        let mut pauses: Vec<Pause> = Vec::new();
        let mut moments = Vec::new();
        let mut writes = Vec::new();
        // Statements that wait for a lock, by (actor, connection, database), until collected.
        type Key = (Holder, Option<leaselab_model::ConnId>, Option<DbName>);
        let mut waiting: Vec<(Key, Op)> = Vec::new();
        // The highest floor any read has found so far.
        let mut floor_seen: Option<Token> = None;
        // Each holder's last passed check, cleared by anything else it does.
        let mut last_check: Vec<(Holder, Option<Millis>)> = Vec::new();
        // Each open write transaction on the resource, by actor and connection: its last
        // statement sent, and the pause (an index into `pauses`) that stopped it before commit.
        type OpenKey = (Holder, Option<leaselab_model::ConnId>);
        type Open = (OpenKey, Option<InFlight>, Option<usize>);
        let mut open: Vec<Open> = Vec::new();
        // Each passed fence inside an open write transaction, by actor and connection: its
        // moment (not yet told), until the transaction ends.
        let mut floor_held: Vec<(OpenKey, Option<Moment>)> = Vec::new();
        // Each holder whose wall clock was stepped: that clock's offset from the database's
        // (authority − local) since the step. A reading with that offset is on the wall clock.
        let mut stepped: Vec<(Holder, i128)> = Vec::new();
        for e in &history.events {
            let conn = (e.actor.clone(), e.conn.clone());
            match &e.op {
                Op::Begin {
                    db: DbName::Res, ..
                } => {
                    open.retain(|(k, _, _)| *k != conn);
                    open.push((conn.clone(), None, None));
                }
                Op::Fence { token, .. } | Op::Upsert { token, .. } => {
                    if let Some(o) = open.iter_mut().find(|(k, _, _)| *k == conn) {
                        o.1 = Some(InFlight {
                            last: if matches!(e.op, Op::Fence { .. }) {
                                "fence"
                            } else {
                                "upsert"
                            },
                            sent: e.at,
                            seq: e.seq,
                            token: *token,
                            commit: None,
                        });
                    }
                }
                Op::Commit { db: DbName::Res } => {
                    floor_held.retain(|(k, _)| *k != conn);
                    if let Some(i) = open.iter().position(|(k, _, _)| *k == conn) {
                        if let (_, _, Some(p)) = open.remove(i) {
                            if let Some(w) =
                                pauses.get_mut(p).and_then(|p| p.before_commit.as_mut())
                            {
                                w.commit = Some(e.at);
                            }
                        }
                    }
                }
                Op::Rollback { db: DbName::Res } | Op::Disconnect { db: DbName::Res } => {
                    open.retain(|(k, _, _)| *k != conn);
                    floor_held.retain(|(k, _)| *k != conn);
                }
                Op::Crash { db: DbName::Res } => {
                    open.clear();
                    floor_held.clear();
                }
                _ => {}
            }
            let passed = match (&e.op, &e.outcome) {
                (Op::Check { deadline }, Outcome::Valid) => Some(*deadline),
                _ => None,
            };
            let before = last_check
                .iter()
                .find(|(h, _)| *h == e.actor)
                .and_then(|(_, d)| *d);
            if !matches!(e.op, Op::Pause) {
                last_check.retain(|(h, _)| *h != e.actor);
                last_check.push((e.actor.clone(), passed));
            }
            let mark = |m: Mark| Moment {
                at: e.at,
                seq: e.seq,
                mark: m,
            };
            // An `await` reports the statement that waited: judge that statement.
            let key = (e.actor.clone(), e.conn.clone(), e.op.db());
            let op = match (&e.op, &e.outcome) {
                (_, Outcome::Blocked) => {
                    waiting.retain(|(k, _)| *k != key);
                    waiting.push((key, e.op.clone()));
                    // A write that waits at its fence waits for another writer's floor lock.
                    if matches!(e.op, Op::Fence { .. } | Op::Write { .. }) {
                        for (k, m) in &mut floor_held {
                            if k.0 != e.actor {
                                moments.extend(m.take());
                            }
                        }
                    }
                    moments.push(mark(Mark::Waits(e.actor.clone())));
                    continue;
                }
                (Op::Await { .. }, Outcome::Error(Reason::StillBlocked)) => continue,
                (Op::Await { .. }, _) => match waiting.iter().position(|(k, _)| *k == key) {
                    Some(i) => waiting.remove(i).1,
                    None => e.op.clone(),
                },
                _ => e.op.clone(),
            };
            match (&op, &e.outcome) {
                (Op::Pause, _) => {
                    let sent = open
                        .iter_mut()
                        .find(|((h, _), w, _)| *h == e.actor && w.is_some());
                    let before_commit = sent.and_then(|o| {
                        o.2 = Some(pauses.len());
                        o.1.clone()
                    });
                    pauses.push(Pause {
                        holder: e.actor.clone(),
                        from: e.at,
                        to: end,
                        resumed: false,
                        seqs: (e.seq, 0),
                        after_check: before,
                        before_commit,
                    })
                }
                (Op::Resume, _) => {
                    if let Some(p) = pauses
                        .iter_mut()
                        .rev()
                        .find(|p| p.holder == e.actor && !p.resumed)
                    {
                        p.to = e.at;
                        p.resumed = true;
                        p.seqs.1 = e.seq;
                    }
                }
                (Op::ClockStep { from }, _) => {
                    stepped.retain(|(h, _)| *h != e.actor);
                    stepped.push((e.actor.clone(), e.at.0 as i128 - e.local.0 as i128));
                    moments.push(mark(Mark::ClockStep(e.actor.clone(), *from, e.local)));
                }
                (Op::Check { deadline }, o) => {
                    // The holder's deadline, moved onto the database clock by this reading's
                    // offset (local − authority), so both views share one axis.
                    let offset = e.at.0 as i128 - e.local.0 as i128;
                    let shown = Millis((deadline.0 as i128 + offset).max(0) as u64);
                    let clock = match stepped.iter().find(|(h, _)| *h == e.actor) {
                        Some((_, o)) if *o == offset => Clock::Wall,
                        Some(_) => Clock::Monotonic,
                        None => Clock::Own,
                    };
                    if let Some(h) = holdings
                        .iter_mut()
                        .rev()
                        .find(|h| h.holder == e.actor && h.from <= e.at)
                    {
                        if h.local_until.is_none_or(|x| shown > x) {
                            h.local_until = Some(shown);
                            h.local_clock = clock;
                        }
                    }
                    // Beside a stepped clock, a monotonic reading is worth showing even where it
                    // agrees with the database's.
                    let reading = (e.local != e.at || clock != Clock::Own).then_some(e.local);
                    match o {
                        Outcome::Expired => moments.push(mark(Mark::CheckExpired(
                            e.actor.clone(),
                            *deadline,
                            reading,
                            clock,
                        ))),
                        Outcome::Valid => moments.push(mark(Mark::CheckPassed(
                            e.actor.clone(),
                            *deadline,
                            reading,
                            clock,
                        ))),
                        _ => {}
                    }
                }
                (Op::Fence { token, .. }, Outcome::Passed)
                    if config.fence == leaselab_model::FenceMode::CheckThenWrite =>
                {
                    moments.push(mark(Mark::FloorCheckPassed(e.actor.clone(), *token)))
                }
                (Op::Fence { token, .. }, Outcome::Passed)
                    if open.iter().any(|(k, _, _)| *k == conn) =>
                {
                    floor_held.retain(|(k, _)| *k != conn);
                    floor_held.push((
                        conn.clone(),
                        Some(mark(Mark::HoldsFloor(e.actor.clone(), *token))),
                    ));
                }
                (Op::ReadFloor { .. }, Outcome::Floor(Some(t))) => {
                    let back = floor_seen.filter(|high| high > t);
                    floor_seen = floor_seen.max(Some(*t));
                    moments.push(mark(Mark::Floor(*t, back)));
                }
                (Op::Crash { db }, _) => moments.push(mark(Mark::Crash(*db))),
                (Op::Restart { db }, _) => moments.push(mark(Mark::Restart(*db))),
                (Op::Lost, _) => moments.push(mark(Mark::Lost(e.actor.clone()))),
                (Op::Renew { token, .. }, Outcome::Refused) => {
                    moments.push(mark(Mark::RenewRefused(e.actor.clone(), *token)))
                }
                (Op::Write { part, token, .. }, Outcome::Rejected)
                | (Op::Upsert { part, token, .. }, Outcome::Failed) => {
                    writes.push(rejected(e, part.as_str(), *token))
                }
                (Op::Fence { scope, token }, Outcome::Failed) => {
                    // A step-wise write refused at its fence, before it named a part.
                    writes.push(rejected(e, &format!("{scope} (fence)"), *token))
                }
                _ => {}
            }
        }
        for w in &f.writes {
            writes.push(Write {
                holder: w.writer.clone(),
                token: w.token,
                target: w.part.to_string(),
                at: w.at,
                seq: w.window.latest,
                verdict: match w.certainty {
                    Certainty::Accepted => Verdict::Accepted,
                    Certainty::Maybe => Verdict::Maybe,
                },
                stale: false,
                violating: false,
            });
        }
        for p in &f.publishes {
            writes.push(Write {
                holder: p.writer.clone(),
                token: p.token,
                target: format!("publish:{}", p.key),
                at: p.at,
                seq: p.window.latest,
                verdict: if p.accepted {
                    Verdict::Accepted
                } else {
                    Verdict::Rejected
                },
                stale: false,
                violating: false,
            });
        }
        writes.sort_by_key(|w| w.seq);
        // A held floor is told at its fence, before the wait that revealed it.
        moments.sort_by_key(|m: &Moment| m.seq);
        // Stale: a higher token had been granted before it — or, where the run shows no
        // grants (a resource-only case such as F6), the resource had already accepted a write
        // with a higher token.
        let accepted: Vec<(Token, u64)> = writes
            .iter()
            .filter(|w| w.verdict == Verdict::Accepted)
            .map(|w| (w.token, w.seq))
            .collect();
        for w in &mut writes {
            w.stale = holdings.iter().any(|h| h.token > w.token && h.seq < w.seq)
                || accepted.iter().any(|(t, seq)| *t > w.token && *seq < w.seq);
            w.violating = violating.contains(&w.seq);
        }
        Story {
            config: config.clone(),
            spec: None,
            recorded: None,
            lanes,
            holdings,
            pauses,
            writes,
            moments,
            violations: report.violations.clone(),
            violating,
            end,
            liveness: None,
        }
    }

    /// The pause of `holder` that covers instant `t`, if any.
    pub fn paused_at(&self, holder: &Holder, t: Millis) -> Option<&Pause> {
        self.pauses
            .iter()
            .find(|p| &p.holder == holder && p.from <= t && t < p.to)
    }

    /// Whether a holder's local check passed after the database had expired its lease: it
    /// believed it held a lease nobody granted it any more (a stepped or slow clock, G3).
    pub fn believed_after_expiry(&self) -> bool {
        self.moments.iter().any(|m| match &m.mark {
            Mark::CheckPassed(h, ..) => self
                .holdings
                .iter()
                .rev()
                .find(|x| x.holder == *h && x.from <= m.at)
                .is_some_and(|x| x.end == End::Expired && x.until < m.at),
            _ => false,
        })
    }

    /// The stale write a violation names (the lower-token one), if any: the write a learner
    /// should look at first.
    pub fn stale_violating_write(&self) -> Option<&Write> {
        self.writes
            .iter()
            .filter(|w| w.violating && w.verdict != Verdict::Rejected)
            .min_by_key(|w| (w.token, std::cmp::Reverse(w.seq)))
    }
}

fn rejected(e: &leaselab_model::Event, target: &str, token: Token) -> Write {
    Write {
        holder: e.actor.clone(),
        token,
        target: target.to_string(),
        at: e.at,
        seq: e.seq,
        verdict: Verdict::Rejected,
        stale: false,
        violating: false,
    }
}
