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
//!
//! The parts live in files of their own: the bounds and the holders' configuration
//! (`bounds.rs`), the packed state with its hash, its bits and its symmetry (`state.rs`), and the
//! database view that answers statements (`db_view.rs`); this file is the stateright `Model`:
//! the system, its actions and steps, and its properties.

pub use crate::bounds::{Bounds, MAX_HOLDERS};
pub use crate::state::{
    broke, representative, seen, Action, Always, Pending, Row, Slot, State, Stmt, SOMETIMES,
};

use crate::bounds::{cfgs, ms};
use crate::db_view::View;
use leaselab_checkers::sometimes::Sometimes;
use leaselab_model::holder::{HolderCfg, HolderMachine, HolderState};
use leaselab_model::{ConnId, DbName, LeaseDurability, Millis, Op, Outcome};
use stateright::{Model, Property};

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
    /// judge every state on its own. One slot per property: the `always` ones in
    /// [`Always::ALL`]'s order, then [`SOMETIMES`]'.
    pub first_only: Option<std::sync::Arc<[std::sync::atomic::AtomicBool; 9]>>,
    /// Each holder's configuration, made once from the bounds.
    pub(crate) cfgs: Vec<HolderCfg>,
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

    /// Whether property `k` (its slot in [`LeaseSystem::first_only`]) is decided at a state
    /// where `hit` holds: always when judging each state on its own, else only the first time.
    fn decides(&self, k: usize, hit: bool) -> bool {
        match &self.first_only {
            None => hit,
            Some(f) => hit && !f[k].swap(true, std::sync::atomic::Ordering::SeqCst),
        }
    }

    /// Whether `always` property `p` is decided broken at `s`.
    fn broke(&self, s: &State, p: Always) -> bool {
        self.decides(p as usize, s.broken & p.bit() != 0)
    }

    /// Whether `sometimes` property `p` is decided reached at `s` (one the search does not
    /// follow never is).
    fn reached(&self, s: &State, p: Sometimes) -> bool {
        match SOMETIMES.iter().position(|(q, _)| *q == p) {
            Some(k) => self.decides(Always::ALL.len() + k, s.seen & SOMETIMES[k].1 != 0),
            None => false,
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

/// Where a step's events go: nowhere for the search.
pub(crate) struct Log<'a>(Option<&'a mut dyn FnMut(Event)>);

impl Log<'_> {
    pub(crate) fn on(&self) -> bool {
        self.0.is_some()
    }

    pub(crate) fn push(&mut self, e: Event) {
        if let Some(f) = &mut self.0 {
            f(e);
        }
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
            Action::Run(i, stmt) => s.holders[i as usize]
                .pending
                .is_some_and(|p| p.stmt == stmt && !self.waits(s, i, p.stmt)),
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
                    n.seen |= seen::PAUSE_BETWEEN_CHECK_AND_WRITE;
                }
                log.push(Event::Tick);
            }
            Action::Crash => {
                n.crashes += 1;
                n.seen |= seen::DB_RESTART;
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
            Action::Run(i, stmt) => {
                let p = n.holders[i as usize]
                    .pending
                    .take()
                    .filter(|p| p.stmt == stmt)?;
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
        let holders = (0..self.b.holders as u8).flat_map(|i| {
            let run = s.holders[i as usize]
                .pending
                .map(|p| Action::Run(i, p.stmt));
            std::iter::once(Action::Timer(i)).chain(run)
        });
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
            Property::always(Always::I1.name(), |m: &Self, s: &State| {
                !m.broke(s, Always::I1)
            }),
            Property::always(Always::I2.name(), |m: &Self, s: &State| {
                !m.broke(s, Always::I2)
            }),
            Property::always(Always::I3.name(), |m: &Self, s: &State| {
                !m.broke(s, Always::I3)
            }),
            Property::always(Always::Acceptance.name(), |m: &Self, s: &State| {
                !m.broke(s, Always::Acceptance)
            }),
            Property::always(Always::Progress.name(), |m: &Self, s: &State| {
                !m.broke(s, Always::Progress)
            }),
            Property::sometimes(
                Sometimes::StaleWriteAttempted.name(),
                |m: &Self, s: &State| m.reached(s, Sometimes::StaleWriteAttempted),
            ),
            Property::sometimes(Sometimes::Takeover.name(), |m: &Self, s: &State| {
                m.reached(s, Sometimes::Takeover)
            }),
            Property::sometimes(
                Sometimes::PauseBetweenCheckAndWrite.name(),
                |m: &Self, s: &State| m.reached(s, Sometimes::PauseBetweenCheckAndWrite),
            ),
        ];
        if self.b.crash {
            v.push(Property::sometimes(
                Sometimes::DbRestart.name(),
                |m: &Self, s: &State| m.reached(s, Sometimes::DbRestart),
            ));
        }
        v
    }
}
