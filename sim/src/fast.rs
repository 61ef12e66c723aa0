//! The discrete-event driver: a time-ordered queue, no tokio. Same holder machine, same database
//! hosts, same fault plan and same trace as the turmoil driver, at a fraction of the cost (turmoil
//! pays per tick, this pays per event).
//!
//! Network: one FIFO link per (holder, database, direction), as a TCP connection is; latency is
//! drawn per message; a partition holds messages until it heals (a write that left before expiry
//! arrives after it); a delay window adds latency.

use crate::clock::{NodeClock, PauseKind};
use crate::driver_core::{carry, pause_begins, pause_ends, Carry, HolderSide, PointCounts};
use crate::faults::{LinkWindow, Timed};
use crate::host::{DbHosts, Reply, Request};
use crate::scenario::{finish, Driver, Setup, SimRun};
use leaselab_model::holder::{Effect, HolderMachine};
use leaselab_model::{Backend, ConnId, DbName, Holder, Millis, Model, Op, Outcome, Waits};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

#[derive(Clone, Debug)]
enum Ev {
    ToDb {
        holder: usize,
        req: u64,
        conn: ConnId,
        op: Op,
    },
    ToHolder {
        holder: usize,
        req: u64,
        outcome: Outcome,
    },
    Wake {
        holder: usize,
    },
    PauseStart {
        holder: usize,
        dur_ms: u64,
        kind: PauseKind,
    },
    PauseEnd {
        holder: usize,
        id: u64,
    },
    Crash {
        db: DbName,
        down_ms: u64,
    },
    Restart {
        db: DbName,
    },
    Heal,
    End,
}

/// The event queue: a binary heap of small `(time, insertion order, slot)` keys over a slab of
/// events, so sifting moves 24 bytes rather than whole statements. Ties run first-in first-out
/// (the insertion order decides before the slot is ever compared).
#[derive(Default)]
struct Queue {
    heap: BinaryHeap<Reverse<(Millis, u64, u32)>>,
    slab: Vec<Option<Ev>>,
    free: Vec<u32>,
    seq: u64,
}

impl Queue {
    fn push(&mut self, t: Millis, ev: Ev) {
        self.seq += 1;
        let slot = match self.free.pop() {
            Some(i) => {
                self.slab[i as usize] = Some(ev);
                i
            }
            None => {
                self.slab.push(Some(ev));
                (self.slab.len() - 1) as u32
            }
        };
        self.heap.push(Reverse((t, self.seq, slot)));
    }

    fn pop(&mut self) -> Option<(Millis, Ev)> {
        loop {
            let Reverse((t, _, slot)) = self.heap.pop()?;
            self.free.push(slot);
            if let Some(ev) = self.slab[slot as usize].take() {
                return Some((t, ev));
            }
        }
    }
}

struct Node {
    m: HolderMachine,
    name: Holder,
    clock: NodeClock,
    /// `Some((pause id, kind))` while paused.
    paused: Option<(u64, PauseKind)>,
    inbox: VecDeque<(u64, Outcome)>,
    stash: Vec<Effect>,
    points: PointCounts,
    wake_at: Option<Millis>,
}

/// The fast simulation of one setup, on the model unless another backend is given.
pub struct FastSim<B = Model> {
    setup: Setup,
    hosts: DbHosts<B>,
    nodes: Vec<Node>,
    names: Vec<Holder>,
    queue: Queue,
    net: ChaCha8Rng,
    /// Link fault windows, indexed by `link_index`.
    windows: Vec<Vec<LinkWindow>>,
    /// Last delivery time per link and direction (FIFO links), indexed by `link_index`.
    last: Vec<[Millis; 2]>,
    /// Every holder's clock reading at the current instant (refilled per request).
    locals: Vec<Millis>,
    /// Reused buffers: a holder's effects, a database's replies.
    effects: Vec<Effect>,
    replies: Vec<Reply>,
    healed: bool,
    pause_ids: u64,
    now: Millis,
}

fn link_index(holder: usize, db: DbName) -> usize {
    holder * 2 + db.index()
}

impl FastSim {
    /// Prepares a run on the model.
    pub fn new(setup: Setup) -> Self {
        let hosts = DbHosts::new(setup.config());
        FastSim::on(setup, hosts)
    }
}

impl<B: Backend + Waits> FastSim<B> {
    /// Prepares a run of `setup` whose databases are `hosts` (freshly reset).
    pub fn on(setup: Setup, hosts: DbHosts<B>) -> Self {
        let mut net = ChaCha8Rng::seed_from_u64(setup.seed);
        net.set_stream(1);
        let nodes: Vec<Node> = setup
            .holders
            .iter()
            .map(|cfg| Node {
                m: HolderMachine::new(cfg.clone()),
                name: cfg.name.clone(),
                clock: NodeClock::default(),
                paused: None,
                inbox: VecDeque::new(),
                stash: Vec::new(),
                points: PointCounts::default(),
                wake_at: None,
            })
            .collect();
        let names = nodes.iter().map(|n| n.name.clone()).collect();
        let mut sim = FastSim {
            hosts,
            nodes,
            names,
            queue: Queue::default(),
            net,
            windows: Vec::new(),
            last: Vec::new(),
            locals: Vec::new(),
            effects: Vec::new(),
            replies: Vec::new(),
            healed: false,
            pause_ids: 0,
            now: Millis::ZERO,
            setup,
        };
        sim.plan();
        sim
    }

    fn at(&mut self, t: Millis, ev: Ev) {
        self.queue.push(t, ev);
    }

    fn plan(&mut self) {
        for (n, c) in self
            .nodes
            .iter_mut()
            .zip(self.setup.plan.clocks(self.setup.holders.len()))
        {
            n.clock = c;
        }
        let links = self.nodes.len() * 2;
        self.windows = vec![Vec::new(); links];
        self.last = vec![[Millis::ZERO; 2]; links];
        let faults = self.setup.plan.clone();
        for w in faults
            .faults
            .iter()
            .filter_map(|f| f.link_window(self.setup.opts.heal()))
        {
            self.windows[link_index(w.holder, w.db)].push(w);
        }
        let heal = self.setup.opts.heal();
        for (_, at, t) in faults.timed(heal) {
            let ev = match t {
                Timed::ClockStep { holder } => Ev::Wake { holder },
                Timed::Pause {
                    holder,
                    dur_ms,
                    kind,
                } => Ev::PauseStart {
                    holder,
                    dur_ms,
                    kind,
                },
                Timed::Crash { db, down_ms } => Ev::Crash { db, down_ms },
            };
            self.queue.push(at, ev);
        }
        for h in 0..self.nodes.len() {
            self.reschedule(h);
        }
        let o = &self.setup.opts;
        let heal = o.heal();
        let end = heal.plus(o.liveness_ms);
        self.at(heal, Ev::Heal);
        self.at(end, Ev::End);
    }

    /// Sends over the (holder, db) link in one direction; returns the delivery time.
    fn link(&mut self, t: Millis, holder: usize, db: DbName, to_db: bool) -> Millis {
        let (lo, hi) = self.setup.latency_ms;
        let mut deliver = t.plus(self.net.random_range(lo..=hi));
        let li = link_index(holder, db);
        if !self.healed {
            for w in &self.windows[li] {
                if w.from <= t && t < w.end {
                    match w.extra_ms {
                        None => deliver = deliver.max(w.end.plus(lo)),
                        Some(extra) => deliver = deliver.plus(extra),
                    }
                }
            }
        }
        let last = &mut self.last[li][usize::from(to_db)];
        let deliver = deliver.max(*last);
        *last = deliver;
        deliver
    }

    fn reply(&mut self, t: Millis, replies: &mut Vec<Reply>, db: DbName) {
        for (holder, req, outcome) in replies.drain(..) {
            let when = self.link(t, holder, db, false);
            self.at(
                when,
                Ev::ToHolder {
                    holder,
                    req,
                    outcome,
                },
            );
        }
    }

    fn reschedule(&mut self, h: usize) {
        let now = self.now;
        let n = &self.nodes[h];
        if n.paused.is_some() {
            return;
        }
        let Some(local) = n.m.next_timer() else {
            return;
        };
        let Some(at) = n.clock.when(now, local) else {
            return;
        };
        let at = at.max(self.now);
        if self.nodes[h].wake_at != Some(at) {
            self.nodes[h].wake_at = Some(at);
            self.at(at, Ev::Wake { holder: h });
        }
    }

    /// Executes a holder's effects in order; a matching point pause stops it right there.
    fn feed(&mut self, h: usize, effects: &mut Vec<Effect>) {
        let mut it = effects.drain(..);
        while let Some(e) = it.next() {
            let n = &mut self.nodes[h];
            let side = HolderSide {
                hosts: &mut self.hosts,
                clock: &n.clock,
                name: &n.name,
                idx: h,
                points: &mut n.points,
                plan: &self.setup.plan,
            };
            match carry(side, self.now, e) {
                Carry::Send { req, db, conn, op } => {
                    let when = self.link(self.now, h, db, true);
                    self.at(
                        when,
                        Ev::ToDb {
                            holder: h,
                            req,
                            conn,
                            op,
                        },
                    );
                }
                Carry::Pause(_, _) if self.healed => {}
                Carry::Pause(dur, kind) => {
                    self.nodes[h].stash = it.collect();
                    self.pause(h, dur, kind);
                    return;
                }
                Carry::Done => {}
            }
        }
        self.reschedule(h);
    }

    fn pause(&mut self, h: usize, dur_ms: u64, kind: PauseKind) {
        if self.nodes[h].paused.is_some() {
            return;
        }
        let n = &mut self.nodes[h];
        pause_begins(&mut self.hosts, &mut n.clock, &n.name, self.now, kind);
        self.pause_ids += 1;
        let id = self.pause_ids;
        let n = &mut self.nodes[h];
        n.paused = Some((id, kind));
        n.wake_at = None;
        let end = self.now.plus(dur_ms);
        self.at(end, Ev::PauseEnd { holder: h, id });
    }

    fn resume(&mut self, h: usize) {
        let n = &mut self.nodes[h];
        if n.paused.take().is_none() {
            return;
        }
        pause_ends(&mut self.hosts, &mut n.clock, &n.name, self.now);
        let mut stash = std::mem::take(&mut self.nodes[h].stash);
        self.feed(h, &mut stash);
        while self.nodes[h].paused.is_none() {
            let Some((req, outcome)) = self.nodes[h].inbox.pop_front() else {
                break;
            };
            let local = self.nodes[h].clock.local(self.now);
            self.on_reply(h, local, req, &outcome);
        }
        if self.nodes[h].paused.is_none() {
            self.timer(h);
        }
    }

    fn timer(&mut self, h: usize) {
        let local = self.nodes[h].clock.local(self.now);
        let mut buf = std::mem::take(&mut self.effects);
        self.nodes[h].m.on_timer(local, &mut buf);
        self.feed(h, &mut buf);
        self.effects = buf;
    }

    fn on_reply(&mut self, h: usize, local: Millis, req: u64, outcome: &Outcome) {
        let mut buf = std::mem::take(&mut self.effects);
        self.nodes[h].m.on_reply(local, req, outcome, &mut buf);
        self.feed(h, &mut buf);
        self.effects = buf;
    }

    /// Runs to the end and judges the history.
    pub fn run(self) -> SimRun {
        self.run_keeping().0
    }

    /// [`Self::run`], giving the backend back (a PostgreSQL one is reset for the next seed).
    pub fn run_keeping(mut self) -> (SimRun, B) {
        let mut delivered = 0u64;
        while let Some((t, ev)) = self.queue.pop() {
            self.now = t;
            delivered += 1;
            match ev {
                Ev::End => break,
                Ev::ToDb {
                    holder,
                    req,
                    conn,
                    op,
                } => {
                    let db = op.db().unwrap_or(DbName::Res);
                    self.locals.clear();
                    self.locals
                        .extend(self.nodes.iter().map(|n| n.clock.local(t)));
                    let mut replies = std::mem::take(&mut self.replies);
                    self.hosts.request(
                        t,
                        &self.locals,
                        &self.names,
                        Request {
                            holder,
                            req,
                            conn,
                            op,
                        },
                        &mut replies,
                    );
                    self.reply(t, &mut replies, db);
                    self.replies = replies;
                }
                Ev::ToHolder {
                    holder,
                    req,
                    outcome,
                } => {
                    if self.nodes[holder].paused.is_some() {
                        self.nodes[holder].inbox.push_back((req, outcome));
                    } else {
                        let local = self.nodes[holder].clock.local(t);
                        self.on_reply(holder, local, req, &outcome);
                    }
                }
                Ev::Wake { holder } => {
                    if self.nodes[holder].wake_at == Some(t) || self.nodes[holder].wake_at.is_none()
                    {
                        self.nodes[holder].wake_at = None;
                        if self.nodes[holder].paused.is_none() {
                            self.timer(holder);
                        }
                    } else if self.nodes[holder].paused.is_none() {
                        // A clock step: timers may be due earlier or later than planned.
                        self.reschedule(holder);
                    }
                }
                Ev::PauseStart {
                    holder,
                    dur_ms,
                    kind,
                } => {
                    if !self.healed {
                        self.pause(holder, dur_ms, kind);
                    }
                }
                Ev::PauseEnd { holder, id } => {
                    if matches!(self.nodes[holder].paused, Some((i, _)) if i == id) {
                        self.resume(holder);
                    }
                }
                Ev::Crash { db, down_ms } => {
                    if !self.healed {
                        let mut replies = self.hosts.crash(t, db);
                        self.reply(t, &mut replies, db);
                        self.at(t.plus(down_ms), Ev::Restart { db });
                    }
                }
                Ev::Restart { db } => self.hosts.restart(t, db),
                Ev::Heal => {
                    self.healed = true;
                    for db in [DbName::Lease, DbName::Res] {
                        self.hosts.restart(t, db);
                    }
                    for h in 0..self.nodes.len() {
                        self.resume(h);
                    }
                }
            }
        }
        let stats = self.nodes.iter().map(|n| n.m.stats).collect();
        let history = self.hosts.world.history;
        let mut run = finish(self.setup, Driver::Fast, history, stats);
        run.queue_events = delivered;
        (run, self.hosts.world.model)
    }
}
