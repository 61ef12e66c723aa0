//! Holder-level schedules: 2–4 holders that run the source's client code step by step (acquire,
//! renew, release, one-shot and step-wise fenced writes, publishes, pauses, clock advances,
//! crashes, disconnects), believing the token they were last granted. proptest draws them
//! ([`steps`]); the fuzz target `model_ops` decodes them from bytes; both run them through one
//! [`Harness`], so a schedule means the same thing to both.
//!
//! Unlike [`crate::Schedule`], which issues any statement the trace format allows, a holder
//! schedule only does what the design's client does. Under the correct configuration (the scope
//! fence, a logged lease table, versioned publishes) no such schedule may violate a check.

use leaselab_model::names::{defaults, holder_name as holder};
use leaselab_model::Reason;
use leaselab_model::{Config, DbName, Op, Outcome, World};
#[cfg(feature = "strategies")]
use proptest::prelude::*;

/// Every holder's lease TTL.
pub const TTL: u64 = defaults::TTL_MS;

/// The parts holders write.
pub const PARTS: [&str; 2] = [defaults::SUMMARY, defaults::DETAIL];

/// Step-wise write sessions (session `s` belongs to holder `s % holders`).
const SESSIONS: usize = 3;

/// One step of a holder schedule. Holder and session indices are taken modulo the schedule's
/// counts by [`Harness::apply`]; a step that the client's code would not take in its state
/// (renewing with no token, committing a session that waits) does nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Holder acquires the lease.
    Acquire(usize),
    /// Holder renews with the token it believes it holds.
    Renew(usize),
    /// Holder releases.
    Release(usize),
    /// Holder writes part `.1` in one fenced write.
    Write(usize, usize),
    /// The clock advances, ms.
    Advance(u64),
    /// Holder stops (GC, SIGSTOP): it uses no token until resumed.
    Pause(usize),
    /// Holder resumes.
    Resume(usize),
    /// A database crashes and restarts.
    Crash(DbName),
    /// Session begins a resource transaction.
    Begin(usize),
    /// Session runs the fence statement with its holder's token.
    Fence(usize),
    /// Session upserts part `.1` after a passed fence.
    Upsert(usize, usize),
    /// Session commits.
    Commit(usize),
    /// Session rolls back.
    Rollback(usize),
    /// Session collects the outcome of its waiting statement.
    Await(usize),
    /// Session's client closes its socket (idle, in a transaction or while waiting).
    Disconnect(usize),
    /// Holder publishes the report with its token.
    Publish(usize),
    /// Someone reads part `.0`.
    ReadPart(usize),
}

#[cfg(feature = "strategies")]
fn step(holders: usize) -> impl Strategy<Value = Step> {
    let h = 0..holders;
    let s = 0..SESSIONS;
    let p = 0..PARTS.len();
    prop_oneof![
        3 => h.clone().prop_map(Step::Acquire),
        2 => h.clone().prop_map(Step::Renew),
        1 => h.clone().prop_map(Step::Release),
        3 => (h.clone(), p.clone()).prop_map(|(h, p)| Step::Write(h, p)),
        3 => prop_oneof![Just(1u64), Just(100), Just(400), Just(1500), Just(3000)].prop_map(Step::Advance),
        1 => h.clone().prop_map(Step::Pause),
        1 => h.clone().prop_map(Step::Resume),
        1 => prop_oneof![Just(DbName::Lease), Just(DbName::Res)].prop_map(Step::Crash),
        1 => s.clone().prop_map(Step::Begin),
        1 => s.clone().prop_map(Step::Fence),
        1 => (s.clone(), p.clone()).prop_map(|(s, p)| Step::Upsert(s, p)),
        1 => s.clone().prop_map(Step::Commit),
        1 => s.clone().prop_map(Step::Rollback),
        1 => s.clone().prop_map(Step::Await),
        1 => h.clone().prop_map(Step::Publish),
        1 => p.prop_map(Step::ReadPart),
    ]
}

/// 2–4 holders and 1–39 steps. (`Disconnect` is not drawn here, so the shrunk lengths the
/// negative-control tests assert stay those measured; the fuzz target draws it.)
#[cfg(feature = "strategies")]
pub fn steps() -> impl Strategy<Value = (usize, Vec<Step>)> {
    (2..=4usize).prop_flat_map(|h| (Just(h), proptest::collection::vec(step(h), 1..40)))
}

/// Where a step-wise session is in its own code. Sessions interleave in any order, but each one
/// follows the client's code: begin, fence, upsert only after a passed fence (with the token the
/// fence carried), commit — or roll back. An upsert with no fence in its transaction would be a
/// client bypassing the fence (the source's "writing the table around ReportStore"), which no
/// resource-side check can stop; it is not a schedule of the design.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sess {
    Idle,
    Begun,
    FencePending(u64),
    Fenced(u64),
    UpsertPending(u64),
    Written(u64),
    Failed,
}

/// The client side around a model [`World`]: what each holder believes its token is (stale
/// after expiry — that is how stale writes happen), who is paused, and where each session is.
pub struct Harness {
    /// The databases and the history so far.
    pub w: World,
    holders: usize,
    believed: Vec<Option<u64>>,
    paused: Vec<bool>,
    sessions: [Sess; SESSIONS],
}

impl Harness {
    /// `holders` holders (at least 1) on a fresh world with `config`.
    pub fn new(config: Config, holders: usize) -> Self {
        let holders = holders.max(1);
        Harness {
            w: World::new(config),
            holders,
            believed: vec![None; holders],
            paused: vec![false; holders],
            sessions: [Sess::Idle; SESSIONS],
        }
    }

    /// Session `s` belongs to holder `s % holders` and is its second connection.
    fn session(&self, s: usize) -> (String, String) {
        let a = holder(s % self.holders);
        let c = format!("{a}/tx{s}");
        (a, c)
    }

    fn token(&self, h: usize) -> Option<u64> {
        if self.paused[h] {
            None
        } else {
            self.believed[h]
        }
    }

    /// Runs one step as the holders' client code would.
    pub fn apply(&mut self, st: &Step) {
        let hn = |h: usize| h % self.holders;
        let sn = |s: usize| s % SESSIONS;
        let pn = |p: usize| PARTS[p % PARTS.len()];
        match *st {
            Step::Acquire(h) if !self.paused[hn(h)] => {
                let a = holder(hn(h));
                if let Outcome::Granted { token, .. } = self.w.run(&a, Op::acquire(&a, TTL)) {
                    self.believed[hn(h)] = Some(token.0);
                }
            }
            Step::Renew(h) => {
                if let Some(t) = self.token(hn(h)) {
                    let a = holder(hn(h));
                    self.w.run(&a, Op::renew(&a, t, TTL));
                }
            }
            Step::Release(h) => {
                if let Some(t) = self.token(hn(h)) {
                    let a = holder(hn(h));
                    self.w.run(&a, Op::release(&a, t));
                    self.believed[hn(h)] = None;
                }
            }
            Step::Write(h, p) => {
                if let Some(t) = self.token(hn(h)) {
                    let a = holder(hn(h));
                    self.w.run(&a, Op::write(pn(p), &format!("{a}-t{t}"), t));
                }
            }
            Step::Advance(ms) => {
                self.w.advance(ms);
            }
            Step::Pause(h) if !self.paused[hn(h)] => {
                self.w.run(&holder(hn(h)), Op::Pause);
                self.paused[hn(h)] = true;
            }
            Step::Resume(h) if self.paused[hn(h)] => {
                self.w.run(&holder(hn(h)), Op::Resume);
                self.paused[hn(h)] = false;
            }
            Step::Crash(db) => {
                self.w.run("admin", Op::Crash { db });
                self.w.run("admin", Op::Restart { db });
                if db == DbName::Res {
                    self.sessions = [Sess::Idle; SESSIONS];
                }
            }
            Step::Begin(s) if self.sessions[sn(s)] == Sess::Idle => {
                let (a, c) = self.session(sn(s));
                if self.w.run_on(&a, &c, Op::begin(DbName::Res)) == Outcome::Ok {
                    self.sessions[sn(s)] = Sess::Begun;
                }
            }
            Step::Fence(s) if self.sessions[sn(s)] == Sess::Begun => {
                let (a, c) = self.session(sn(s));
                if let Some(t) = self.token(sn(s) % self.holders) {
                    let o = self.w.run_on(&a, &c, Op::fence(t));
                    self.sessions[sn(s)] = match o {
                        Outcome::Passed => Sess::Fenced(t),
                        Outcome::Blocked => Sess::FencePending(t),
                        Outcome::Failed => Sess::Failed,
                        _ => Sess::Idle,
                    };
                }
            }
            Step::Upsert(s, p) => {
                let t = match self.sessions[sn(s)] {
                    Sess::Fenced(t) | Sess::Written(t) => t,
                    _ => return,
                };
                let (a, c) = self.session(sn(s));
                let o = self
                    .w
                    .run_on(&a, &c, Op::upsert(pn(p), &format!("{a}-t{t}"), t));
                self.sessions[sn(s)] = match o {
                    Outcome::Ok | Outcome::Accepted => Sess::Written(t),
                    Outcome::Blocked => Sess::UpsertPending(t),
                    Outcome::Failed | Outcome::Rejected => Sess::Failed,
                    _ => Sess::Idle,
                };
            }
            Step::Await(s) => {
                let (a, c) = self.session(sn(s));
                let o = self.w.run_on(&a, &c, Op::await_(DbName::Res));
                let now = self.sessions[sn(s)];
                self.sessions[sn(s)] = match (now, o) {
                    (Sess::FencePending(t), Outcome::Passed) => Sess::Fenced(t),
                    (Sess::UpsertPending(t), Outcome::Ok | Outcome::Accepted) => Sess::Written(t),
                    (
                        Sess::FencePending(_) | Sess::UpsertPending(_),
                        Outcome::Error(Reason::StillBlocked),
                    ) => now,
                    (Sess::FencePending(_) | Sess::UpsertPending(_), _) => Sess::Failed,
                    (other, _) => other,
                };
            }
            Step::Disconnect(s) => {
                let (a, c) = self.session(sn(s));
                self.w.run_on(&a, &c, Op::Disconnect { db: DbName::Res });
                self.sessions[sn(s)] = Sess::Idle;
            }
            Step::Commit(s)
                if matches!(
                    self.sessions[sn(s)],
                    Sess::Begun | Sess::Fenced(_) | Sess::Written(_)
                ) =>
            {
                let (a, c) = self.session(sn(s));
                self.w.run_on(&a, &c, Op::commit(DbName::Res));
                self.sessions[sn(s)] = Sess::Idle;
            }
            Step::Rollback(s)
                if !matches!(
                    self.sessions[sn(s)],
                    Sess::FencePending(_) | Sess::UpsertPending(_)
                ) =>
            {
                let (a, c) = self.session(sn(s));
                self.w.run_on(&a, &c, Op::rollback(DbName::Res));
                self.sessions[sn(s)] = Sess::Idle;
            }
            Step::Publish(h) => {
                if let Some(t) = self.token(hn(h)) {
                    let a = holder(hn(h));
                    self.w
                        .run(&a, Op::publish("report-ready", &format!("{a}-t{t}"), t));
                }
            }
            Step::ReadPart(p) => {
                self.w.run("lab", Op::read_part(pn(p)));
            }
            _ => {}
        }
    }
}
