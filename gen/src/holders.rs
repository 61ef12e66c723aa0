//! Holder-level schedules: 2–4 holders — each the one holder every driver runs
//! ([`leaselab_model::holder`]) — on one model [`World`], and the steps a scheduler, the world
//! and other clients take between them: a holder's due timers fire, a holder's next statement
//! goes on, the clock advances, a holder pauses and resumes, a database crashes, someone
//! publishes the report with a holder's token or reads a part. proptest draws them
//! ([`steps`]); the fuzz target `model_ops` decodes them from bytes; both run them through one
//! [`Harness`], so a schedule means the same thing to both.
//!
//! A statement a holder sends right after one of its code points waits for the holder's next
//! [`Step::Run`], so that the clock can advance right there (between its local check and its
//! write: F4); every other statement is sent at once. A statement that blocks on a row lock
//! waits in the server, and a later `Run` collects its result once it has one. holder-b writes
//! each part in one `write` (as a user's lease spec does), the others statement by statement, so
//! both kinds of write meet in every schedule. Under the correct configuration (the scope fence,
//! a logged lease table, versioned publishes) no schedule may violate a check.

use leaselab_model::holder::{Carrier, Effect, HolderCfg, HolderMachine};
use leaselab_model::names::{defaults, holder_name as holder};
use leaselab_model::{
    Config, ConnId, DbName, Holder, LeaseName, Millis, Op, Outcome, Part, Reason, Scope, World,
};
#[cfg(feature = "strategies")]
use proptest::prelude::*;

/// Every holder's lease TTL.
pub const TTL: u64 = defaults::TTL_MS;

/// The parts holders write.
pub const PARTS: [&str; 2] = [defaults::SUMMARY, defaults::DETAIL];

/// One step of a holder schedule. Holder and part indices are taken modulo the schedule's
/// counts by [`Harness::apply`]; a step with nothing to do (a holder with no timer due, no
/// statement to run, or paused) does nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// The holder's due timers fire: a job starts with an acquire, the renewer renews, a
    /// request unanswered for too long is abandoned.
    Timer(usize),
    /// The holder's statement held at a code point is sent, or the result of its statement that
    /// waited on a row lock is collected.
    Run(usize),
    /// The clock advances, ms.
    Advance(u64),
    /// The holder stops (GC, SIGSTOP): neither its job nor its renewer moves until it resumes.
    Pause(usize),
    /// The holder resumes.
    Resume(usize),
    /// A database crashes and restarts.
    Crash(DbName),
    /// Someone publishes the report with the token the holder believes it holds.
    Publish(usize),
    /// Someone reads part `.0`.
    ReadPart(usize),
}

#[cfg(feature = "strategies")]
fn step(holders: usize) -> impl Strategy<Value = Step> {
    let h = 0..holders;
    prop_oneof![
        4 => h.clone().prop_map(Step::Timer),
        6 => h.clone().prop_map(Step::Run),
        3 => prop_oneof![Just(1u64), Just(100), Just(400), Just(1500), Just(3000)].prop_map(Step::Advance),
        1 => h.clone().prop_map(Step::Pause),
        1 => h.clone().prop_map(Step::Resume),
        1 => prop_oneof![Just(DbName::Lease), Just(DbName::Res)].prop_map(Step::Crash),
        1 => h.prop_map(Step::Publish),
        1 => (0..PARTS.len()).prop_map(Step::ReadPart),
    ]
}

/// 2–4 holders and 1–59 steps.
#[cfg(feature = "strategies")]
pub fn steps() -> impl Strategy<Value = (usize, Vec<Step>)> {
    (2..=4usize).prop_flat_map(|h| (Just(h), proptest::collection::vec(step(h), 1..60)))
}

/// Holder `i`'s configuration: the sources' TTL, renew period and margin; a request unanswered
/// for a second is abandoned; a refused or ended job starts again as soon as its timer fires.
fn cfg(i: usize) -> HolderCfg {
    HolderCfg {
        name: Holder::new(holder(i)),
        lease: LeaseName::new(defaults::LEASE),
        scope: Scope::new(defaults::SCOPE),
        parts: PARTS.iter().map(|p| Part::new(*p)).collect(),
        ttl_ms: TTL,
        renew_ms: defaults::RENEW_MS,
        margin_ms: defaults::MARGIN_MS,
        rpc_timeout_ms: 1000,
        retry_ms: 0,
        job_gap_ms: 0,
        start_ms: 0,
        whole_writes: i == 1,
    }
}

/// A request of a holder on its way: held at a code point, or waiting in the server.
#[derive(Clone, Debug)]
struct Request {
    req: u64,
    db: DbName,
    conn: ConnId,
}

/// One holder and what the harness carries for it.
struct Driven {
    m: HolderMachine,
    /// Sent right after a code point: goes out at the holder's next `Run`.
    held: Option<(Request, Op)>,
    /// Blocked on a row lock in the server, oldest first.
    waiting: Vec<Request>,
    paused: bool,
}

/// The holders around a model [`World`]: each one's machine, its statement held at a code
/// point, its statements waiting in the server, and whether it is paused.
pub struct Harness {
    /// The databases and the history so far.
    pub w: World,
    hs: Vec<Driven>,
}

impl Harness {
    /// `holders` holders (at least 1) on a fresh world with `config`.
    pub fn new(config: Config, holders: usize) -> Self {
        Harness {
            w: World::new(config),
            hs: (0..holders.max(1))
                .map(|i| Driven {
                    m: HolderMachine::new(cfg(i)),
                    held: None,
                    waiting: Vec::new(),
                    paused: false,
                })
                .collect(),
        }
    }

    fn name(&self, h: usize) -> Holder {
        self.hs[h].m.cfg().name.clone()
    }

    /// Runs `op` as holder `h` (on its own clock, which is the world's).
    fn exec(&mut self, h: usize, conn: Option<ConnId>, op: Op) -> Outcome {
        let name = self.name(h);
        self.w.exec(name, conn, op).outcome.clone()
    }

    /// Hands holder `h` the answer to request `req` and carries out what it does next.
    fn reply(&mut self, h: usize, req: u64, outcome: &Outcome) {
        let now = self.w.now();
        let mut effects = Vec::new();
        self.hs[h].m.on_reply(now, req, outcome, &mut effects);
        self.carry(h, now, effects);
    }

    fn carry(&mut self, h: usize, now: Millis, effects: Vec<Effect>) {
        let (m, mut on) = self.split(h);
        m.carry(now, effects, &mut on);
    }

    /// Holder `h`'s machine, and the world as the place its effects go.
    fn split(&mut self, h: usize) -> (&mut HolderMachine, OnWorld<'_>) {
        let Driven {
            m, held, waiting, ..
        } = &mut self.hs[h];
        let name = m.cfg().name.clone();
        let on = OnWorld {
            w: &mut self.w,
            name,
            held,
            waiting,
        };
        (m, on)
    }

    /// Holder `h`'s next statement: the one held at a code point goes out, or else the oldest
    /// waiting one's result is collected if it has one.
    fn run(&mut self, h: usize) {
        if let Some((r, op)) = self.hs[h].held.take() {
            let answered = self.split(h).1.send(r.req, r.db, r.conn, op);
            if let Some(outcome) = answered {
                self.reply(h, r.req, &outcome);
            }
            return;
        }
        let Some(r) = self.hs[h].waiting.first().cloned() else {
            return;
        };
        let outcome = self.exec(h, Some(r.conn.clone()), Op::Await { db: r.db });
        if outcome != Outcome::Error(Reason::StillBlocked) {
            self.hs[h].waiting.remove(0);
            self.reply(h, r.req, &outcome);
        }
    }

    /// Runs one step.
    pub fn apply(&mut self, st: &Step) {
        let n = self.hs.len();
        let hn = |h: usize| h % n;
        match *st {
            Step::Timer(h) if !self.hs[hn(h)].paused => {
                let h = hn(h);
                let now = self.w.now();
                if self.hs[h].m.next_timer().is_some_and(|t| t <= now) {
                    let mut effects = Vec::new();
                    self.hs[h].m.on_timer(now, &mut effects);
                    self.carry(h, now, effects);
                }
            }
            Step::Run(h) if !self.hs[hn(h)].paused => self.run(hn(h)),
            Step::Advance(ms) => {
                self.w.advance(ms);
            }
            Step::Pause(h) if !self.hs[hn(h)].paused => {
                self.exec(hn(h), None, Op::Pause);
                self.hs[hn(h)].paused = true;
            }
            Step::Resume(h) if self.hs[hn(h)].paused => {
                self.exec(hn(h), None, Op::Resume);
                self.hs[hn(h)].paused = false;
            }
            Step::Crash(db) => {
                self.w.run("admin", Op::Crash { db });
                self.w.run("admin", Op::Restart { db });
            }
            Step::Publish(h) if !self.hs[hn(h)].paused => {
                let h = hn(h);
                if let Some(t) = self.hs[h].m.state().token() {
                    let a = self.name(h);
                    let op = Op::publish("report-ready", &format!("{a}-t{t}"), t.0);
                    self.exec(h, None, op);
                }
            }
            Step::ReadPart(p) => {
                self.w.run("lab", Op::read_part(PARTS[p % PARTS.len()]));
            }
            _ => {}
        }
    }
}

/// The world as the place a holder's effects go ([`HolderMachine::carry`]): statements run on
/// it as the holder (on its own clock, which is the world's); one that blocks waits in the
/// server, one held at a code point waits for the holder's next `Run`.
struct OnWorld<'a> {
    w: &'a mut World,
    name: Holder,
    held: &'a mut Option<(Request, Op)>,
    waiting: &'a mut Vec<Request>,
}

impl Carrier for OnWorld<'_> {
    fn record(&mut self, op: Op) {
        self.w.exec(self.name.clone(), None, op);
    }

    fn abandon(&mut self, db: DbName, conn: ConnId) {
        // What waits on the connection is gone with it; a statement held at a code point for
        // it never goes out (the holder gave its request up: sent later under the same name, it
        // would run on a new connection, unfenced).
        self.waiting.retain(|r| r.conn != conn);
        if self.held.as_ref().is_some_and(|(r, _)| r.conn == conn) {
            *self.held = None;
        }
        self.w
            .exec(self.name.clone(), Some(conn), Op::Disconnect { db });
    }

    fn hold(&mut self, req: u64, db: DbName, conn: ConnId, op: Op) {
        *self.held = Some((Request { req, db, conn }, op));
    }

    fn send(&mut self, req: u64, db: DbName, conn: ConnId, op: Op) -> Option<Outcome> {
        let outcome = self
            .w
            .exec(self.name.clone(), Some(conn.clone()), op)
            .outcome
            .clone();
        if outcome == Outcome::Blocked {
            self.waiting.push(Request { req, db, conn });
            return None;
        }
        Some(outcome)
    }
}

/// A schedule that tells a known situation (a seed of the `model_ops` corpus, and a test here):
/// holder-a's transaction holds the floor; holder-c's fence waits on it, `Run` finds it still
/// waiting, its request times out and holder-c drops the connection while it waits; then
/// holder-a commits, and both databases crash with jobs under way. For 3 holders.
pub fn lock_wait() -> Vec<Step> {
    vec![
        Step::Timer(0),
        Step::Run(0),
        Step::Run(0),
        Step::Advance(1500),
        Step::Timer(2),
        Step::Run(2),
        Step::Run(2),
        Step::Advance(1000),
        Step::Timer(2),
        Step::Run(2),
        Step::Run(0),
        Step::Crash(DbName::Lease),
        Step::Timer(1),
        Step::Run(1),
        Step::Crash(DbName::Res),
        Step::Run(1),
        Step::Timer(1),
        Step::Run(1),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(h: &Harness) -> Vec<String> {
        h.w.history
            .events
            .iter()
            .map(|e| {
                let conn = e.conn.as_ref().map_or("", |c| c.as_str());
                format!("{} {} {conn} {} => {}", e.at.0, e.actor, e.op, e.outcome)
            })
            .collect()
    }

    fn run(holders: usize, steps: &[Step]) -> Harness {
        let mut h = Harness::new(Config::default(), holders);
        for st in steps {
            h.apply(st);
        }
        h
    }

    /// The statement after the local check waits for the holder's next `Run`: time passes
    /// between check and write, and the write goes out at the later time.
    #[test]
    fn a_statement_after_a_code_point_waits_for_run() {
        let h = run(2, &[Step::Timer(0), Step::Advance(700)]);
        let l = lines(&h);
        assert!(l.last().is_some_and(|x| x.contains("check")), "{l:#?}");
        let h = run(2, &[Step::Timer(0), Step::Advance(700), Step::Run(0)]);
        let l = lines(&h);
        assert!(
            l[2].starts_with("700 holder-a holder-a/res/0 begin"),
            "{l:#?}"
        );
        assert!(l[3].contains("fence") && l[3].ends_with("passed"), "{l:#?}");
    }

    /// A statement that blocks waits in the server; `Run` collects nothing while it waits; its
    /// request times out, the holder drops the connection while it waits, and nothing of it
    /// comes back.
    #[test]
    fn a_blocked_statement_waits_until_its_request_times_out() {
        let steps = lock_wait();
        let h = run(3, &steps);
        let l = lines(&h);
        let c: Vec<&String> = l.iter().filter(|x| x.contains("holder-c/res/0")).collect();
        assert!(
            c.iter()
                .any(|x| x.contains("fence") && x.ends_with("blocked")),
            "{l:#?}"
        );
        assert!(
            c.iter()
                .any(|x| x.contains("await") && x.contains("still-blocked")),
            "{l:#?}"
        );
        assert!(
            c.last()
                .is_some_and(|x| x.starts_with("2500 holder-c") && x.contains("disconnect")),
            "{l:#?}"
        );
        // The lock's holder was never held up by the waiter: it commits when it goes on.
        assert!(
            l.iter()
                .any(|x| x.contains("holder-a/res/0 commit") && x.ends_with("ok")),
            "{l:#?}"
        );
        // The crashes cut nothing that was open, and the next job of holder-b goes on.
        assert!(
            l.iter().any(|x| x.contains("holder-b/lease/0 acquire")),
            "{l:#?}"
        );
    }

    /// A statement held at a code point for a connection the holder then abandons never goes
    /// out: sent later under the same name, it would run unfenced on a new connection.
    #[test]
    fn a_held_statement_of_an_abandoned_connection_is_dropped() {
        let h = run(
            2,
            &[
                Step::Timer(0),
                Step::Advance(1000),
                Step::Timer(0),
                Step::Run(0),
            ],
        );
        let l = lines(&h);
        assert!(
            l.iter().any(|x| x.contains("holder-a/res/0 disconnect")),
            "{l:#?}"
        );
        assert!(!l.iter().any(|x| x.contains("begin")), "{l:#?}");
    }

    /// A paused holder neither fires its timers, nor goes on, nor publishes; a resume of a
    /// holder that is not paused is no step; a read is recorded.
    #[test]
    fn a_paused_holder_does_nothing_until_it_resumes() {
        let steps = [
            Step::Resume(0),
            Step::Timer(0),
            Step::Publish(0),
            Step::Pause(0),
        ];
        let mut h = run(2, &steps);
        let before = lines(&h);
        assert!(!before.iter().any(|x| x.contains("resume")), "{before:#?}");
        assert!(before.iter().any(|x| x.contains("publish")), "{before:#?}");
        for st in [
            Step::Advance(700),
            Step::Timer(0),
            Step::Run(0),
            Step::Publish(0),
        ] {
            h.apply(&st);
        }
        assert_eq!(lines(&h).len(), before.len(), "{:#?}", lines(&h));
        h.apply(&Step::Resume(0));
        h.apply(&Step::Run(0));
        h.apply(&Step::ReadPart(1));
        let l = lines(&h);
        assert!(l[before.len()].contains("resume"), "{l:#?}");
        assert!(l[before.len() + 1].contains("begin"), "{l:#?}");
        assert!(
            l.last()
                .is_some_and(|x| x.contains("read") && x.contains("detail")),
            "{l:#?}"
        );
    }
}
