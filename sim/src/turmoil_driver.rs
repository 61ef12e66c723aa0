//! The turmoil driver: the same holder machine and database hosts, with holders and databases
//! as turmoil hosts talking over turmoil's simulated TCP (one connection per holder and
//! database, carrying the trace syntax line by line). turmoil decides latencies, holds links
//! for partitions and crashes/bounces database hosts; what turmoil cannot do is built here:
//! pausing a holder (its task simply stops reading its sockets and firing its timers — messages
//! wait in the socket, as with SIGSTOP) and per-node clocks (each holder reads time and sets
//! timers through its [`NodeClock`]).
//!
//! Determinism: `Builder::rng_seed(seed)`, a fixed `epoch`, tokio's own rng seeded (the
//! workspace builds with `--cfg tokio_unstable`), `biased` selects, ordered maps only.

// Without tokio_unstable, turmoil cannot seed tokio's own randomness (`select!` branch order
// and the like), so the same seed would not give the same trace. A RUSTFLAGS environment
// variable replaces the `rustflags` of `.cargo/config.toml`; refuse to build rather than run
// silently nondeterministic.
#[cfg(not(tokio_unstable))]
compile_error!(
    "leaselab-sim's turmoil driver needs `--cfg tokio_unstable` for deterministic runs: \
     .cargo/config.toml sets it, but a RUSTFLAGS environment variable replaces that list — \
     add `--cfg tokio_unstable` to your RUSTFLAGS"
);

use crate::clock::{NodeClock, PauseKind};
use crate::driver_core::{carry, pause_begins, pause_ends, Carry, HolderSide, PointCounts};
use crate::faults::Timed;
use crate::host::{DbHosts, Reply, Request};
use crate::scenario::{finish, Driver, Setup, SimRun};
use leaselab_model::holder::{Effect, HolderMachine, HolderStats};
use leaselab_model::text::{op_text, outcome_text};
use leaselab_model::{ConnId, DbName, Holder, Millis, Op, Outcome};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::rc::Rc;
use std::time::{Duration, UNIX_EPOCH};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::sync::mpsc;
use turmoil::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use turmoil::net::{TcpListener, TcpStream};

const PORT: u16 = 5432;

fn host_name(db: DbName) -> &'static str {
    match db {
        DbName::Lease => "lease-db",
        DbName::Res => "res-db",
    }
}

struct Shared {
    hosts: DbHosts,
    clocks: Vec<NodeClock>,
    names: Vec<Holder>,
    /// Per database, per holder: where to send that holder's replies.
    outbox: [BTreeMap<usize, mpsc::UnboundedSender<String>>; 2],
    stats: Vec<HolderStats>,
    /// What went wrong in the driver itself (an unreadable wire message, a simulation that
    /// stopped early): such a run is reported as an error, never as a clean run.
    errors: Vec<String>,
}

type Sh = Rc<RefCell<Shared>>;

/// The authority time: turmoil's simulated elapsed time.
fn authority_now() -> Millis {
    Millis(turmoil::elapsed().as_millis() as u64)
}

fn locals(sh: &Shared, t: Millis) -> Vec<Millis> {
    sh.clocks.iter().map(|c| c.local(t)).collect()
}

fn route(sh: &Shared, db: DbName, replies: Vec<Reply>) {
    for (h, req, o) in replies {
        if let Some(tx) = sh.outbox[db.index()].get(&h) {
            let _ = tx.send(format!("{req} {}", outcome_text(&o)));
        }
    }
}

/// One database host: accepts holder connections and executes their lines against the hosts.
async fn serve_db(sh: Sh, db: DbName) -> turmoil::Result {
    let listener = TcpListener::bind((IpAddr::V4(Ipv4Addr::UNSPECIFIED), PORT)).await?;
    loop {
        let (stream, _) = listener.accept().await?;
        tokio::task::spawn_local(serve_conn(sh.clone(), db, stream));
    }
}

async fn serve_conn(sh: Sh, db: DbName, stream: TcpStream) {
    let (rd, mut wr) = stream.into_split();
    let mut lines = BufReader::new(rd).lines();
    let Ok(Some(hello)) = lines.next_line().await else {
        return;
    };
    let Some(holder) = hello
        .strip_prefix("hello ")
        .and_then(|h| h.parse::<usize>().ok())
    else {
        return;
    };
    let (tx, mut rx) = mpsc::unbounded_channel::<String>();
    sh.borrow_mut().outbox[db.index()].insert(holder, tx);
    tokio::task::spawn_local(async move {
        while let Some(line) = rx.recv().await {
            if wr.write_all(format!("{line}\n").as_bytes()).await.is_err() {
                break;
            }
        }
    });
    while let Ok(Some(line)) = lines.next_line().await {
        let mut it = line.splitn(3, ' ');
        let (Some(req), Some(conn), Some(op)) = (it.next(), it.next(), it.next()) else {
            sh.borrow_mut().errors.push(format!(
                "database {} got an unreadable request from holder {holder} at t={}: `{line}` (expected `REQ CONN OP`)",
                db.as_str(),
                authority_now()
            ));
            continue;
        };
        let (req, op) = match (req.parse::<u64>(), op.parse::<Op>()) {
            (Ok(req), Ok(op)) => (req, op),
            (r, o) => {
                let why = match (r, o) {
                    (Err(e), _) => format!("request id: {e}"),
                    (_, Err(e)) => e.to_string(),
                    _ => String::new(),
                };
                sh.borrow_mut().errors.push(format!(
                    "database {} got an unreadable request from holder {holder} at t={}: `{line}` ({why})",
                    db.as_str(),
                    authority_now()
                ));
                continue;
            }
        };
        let t = authority_now();
        let mut s = sh.borrow_mut();
        let ls = locals(&s, t);
        let names = s.names.clone();
        let mut replies = Vec::new();
        s.hosts.request(
            t,
            &ls,
            &names,
            Request {
                holder,
                req,
                conn: ConnId::new(conn),
                op,
            },
            &mut replies,
        );
        route(&s, db, replies);
    }
}

struct Link {
    lines: Lines<BufReader<OwnedReadHalf>>,
    wr: OwnedWriteHalf,
}

async fn connect(db: DbName, holder: usize) -> Option<Link> {
    let stream = TcpStream::connect((host_name(db), PORT)).await.ok()?;
    let (rd, mut wr) = stream.into_split();
    wr.write_all(format!("hello {holder}\n").as_bytes())
        .await
        .ok()?;
    Some(Link {
        lines: BufReader::new(rd).lines(),
        wr,
    })
}

async fn next_line(link: &mut Option<Link>) -> Option<String> {
    match link {
        Some(l) => l.lines.next_line().await.ok().flatten(),
        None => std::future::pending().await,
    }
}

/// One holder's task.
struct Client {
    idx: usize,
    sh: Sh,
    m: HolderMachine,
    name: Holder,
    links: [Option<Link>; 2],
    plan: crate::faults::FaultPlan,
    points: PointCounts,
    /// Time-based pauses of this holder not yet taken: (at, dur, kind).
    timed: Vec<(Millis, u64, PauseKind)>,
    steps: Vec<Millis>,
    heal: Millis,
    end: Millis,
    /// A line the holder writes to the lease database first (tests of the driver's own error
    /// reporting only).
    garbage: Option<String>,
}

impl Client {
    fn local(&self) -> Millis {
        self.sh.borrow().clocks[self.idx].local(authority_now())
    }

    /// SIGSTOP/freeze: nothing of this holder runs until the pause ends.
    async fn pause(&mut self, dur_ms: u64, kind: PauseKind) {
        let start = authority_now();
        if start >= self.heal {
            return;
        }
        {
            let mut s = self.sh.borrow_mut();
            let s = &mut *s;
            pause_begins(
                &mut s.hosts,
                &mut s.clocks[self.idx],
                &self.name,
                start,
                kind,
            );
        }
        let end = start.plus(dur_ms).min(self.heal);
        tokio::time::sleep(Duration::from_millis(end.since(start))).await;
        let mut s = self.sh.borrow_mut();
        let s = &mut *s;
        pause_ends(
            &mut s.hosts,
            &mut s.clocks[self.idx],
            &self.name,
            authority_now(),
        );
    }

    async fn send(&mut self, req: u64, db: DbName, conn: &ConnId, op: &Op) -> Option<Outcome> {
        let i = db.index();
        if self.links[i].is_none() {
            self.links[i] = connect(db, self.idx).await;
        }
        let line = format!("{req} {conn} {}\n", op_text(op));
        let ok = match &mut self.links[i] {
            Some(l) => l.wr.write_all(line.as_bytes()).await.is_ok(),
            None => false,
        };
        if ok {
            None
        } else {
            self.links[i] = None;
            Some(Outcome::Unavailable)
        }
    }

    async fn feed(&mut self, effects: Vec<Effect>) {
        let mut queue: std::collections::VecDeque<Effect> = effects.into();
        while let Some(e) = queue.pop_front() {
            let todo = {
                let mut s = self.sh.borrow_mut();
                let s = &mut *s;
                let side = HolderSide {
                    hosts: &mut s.hosts,
                    clock: &s.clocks[self.idx],
                    name: &self.name,
                    idx: self.idx,
                    points: &mut self.points,
                    plan: &self.plan,
                };
                carry(side, authority_now(), e)
            };
            match todo {
                Carry::Send { req, db, conn, op } => {
                    if let Some(o) = self.send(req, db, &conn, &op).await {
                        let local = self.local();
                        let mut more = Vec::new();
                        self.m.on_reply(local, req, &o, &mut more);
                        queue.extend(more);
                    }
                }
                Carry::Pause(dur, kind) => self.pause(dur, kind).await,
                Carry::Done => {}
            }
        }
    }

    /// The authority instant of the next thing to do: a holder timer, a planned pause, a
    /// clock step (timers move with it), or the end.
    fn next_wake(&self) -> Millis {
        let now = authority_now();
        let mut at = self.end;
        if let Some(l) = self.m.next_timer() {
            if let Some(t) = self.sh.borrow().clocks[self.idx].when(now, l) {
                at = at.min(t.max(now));
            }
        }
        for (p, _, _) in &self.timed {
            at = at.min((*p).max(now));
        }
        for s in &self.steps {
            if *s > now {
                at = at.min(*s);
            }
        }
        at
    }

    async fn run(mut self) -> turmoil::Result {
        for db in [DbName::Lease, DbName::Res] {
            self.links[db.index()] = connect(db, self.idx).await;
        }
        if let (Some(g), Some(l)) = (self.garbage.take(), &mut self.links[0]) {
            let _ = l.wr.write_all(format!("{g}\n").as_bytes()).await;
        }
        loop {
            let now = authority_now();
            if now >= self.end {
                break;
            }
            if let Some(pos) = self.timed.iter().position(|(at, _, _)| *at <= now) {
                let (_, dur, kind) = self.timed.remove(pos);
                self.pause(dur, kind).await;
                continue;
            }
            let wake = self.next_wake();
            let sleep = tokio::time::sleep(Duration::from_millis(wake.since(now)));
            let [lease, res] = &mut self.links;
            let got = tokio::select! {
                biased;
                l = next_line(lease) => Some((DbName::Lease, l)),
                l = next_line(res) => Some((DbName::Res, l)),
                _ = sleep => None,
            };
            match got {
                Some((_, Some(line))) => {
                    let parsed = line.split_once(' ').and_then(|(req, out)| {
                        Some((req.parse::<u64>().ok()?, out.parse::<Outcome>().ok()?))
                    });
                    let Some((req, o)) = parsed else {
                        self.sh.borrow_mut().errors.push(format!(
                            "holder {} got an unreadable reply at t={}: `{line}`",
                            self.name,
                            authority_now()
                        ));
                        continue;
                    };
                    let local = self.local();
                    let mut effects = Vec::new();
                    self.m.on_reply(local, req, &o, &mut effects);
                    self.feed(effects).await;
                }
                Some((db, None)) => {
                    // Connection broken (the database crashed): reconnect lazily.
                    self.links[db.index()] = None;
                }
                None => {
                    let local = self.local();
                    let mut effects = Vec::new();
                    self.m.on_timer(local, &mut effects);
                    self.feed(effects).await;
                }
            }
        }
        self.sh.borrow_mut().stats[self.idx] = self.m.stats;
        Ok(())
    }
}

#[derive(Clone, Copy)]
enum Ctl {
    Crash(DbName),
    Restart(DbName),
    Hold(usize, DbName),
    Release(usize, DbName),
    Slow(usize, DbName, u64),
    Heal,
}

/// Runs one setup under turmoil.
pub fn run(setup: Setup) -> SimRun {
    run_with(setup, None)
}

/// Runs one setup under turmoil; the first holder first writes `garbage` to the lease
/// database, if given (how the tests show that an unreadable message is an error).
#[doc(hidden)]
pub fn run_with(setup: Setup, garbage: Option<&str>) -> SimRun {
    let o = setup.opts.clone();
    let heal = o.heal();
    let end = heal.plus(o.liveness_ms);
    let (lo, hi) = setup.latency_ms;
    let clocks: Vec<NodeClock> = setup.plan.clocks(setup.holders.len());
    let names: Vec<Holder> = setup.holders.iter().map(|h| h.name.clone()).collect();
    let sh: Sh = Rc::new(RefCell::new(Shared {
        hosts: DbHosts::new(setup.config()),
        clocks,
        names: names.clone(),
        outbox: [BTreeMap::new(), BTreeMap::new()],
        stats: vec![HolderStats::default(); setup.holders.len()],
        errors: Vec::new(),
    }));

    let mut sim = turmoil::Builder::new()
        .rng_seed(setup.seed)
        .epoch(UNIX_EPOCH + Duration::from_secs(1_767_225_600))
        .tick_duration(Duration::from_millis(o.tick_ms.max(1)))
        .simulation_duration(Duration::from_millis(end.0 + 60_000))
        .min_message_latency(Duration::from_millis(lo))
        .max_message_latency(Duration::from_millis(hi))
        .build();

    for db in [DbName::Lease, DbName::Res] {
        let sh = sh.clone();
        sim.host(host_name(db), move || serve_db(sh.clone(), db));
    }
    for (i, cfg) in setup.holders.iter().enumerate() {
        let mut timed = Vec::new();
        let mut steps = Vec::new();
        for (_, at, t) in setup.plan.timed(heal) {
            match t {
                Timed::Pause {
                    holder,
                    dur_ms,
                    kind,
                } if holder == i => timed.push((at, dur_ms, kind)),
                Timed::ClockStep { holder } if holder == i => steps.push(at),
                _ => {}
            }
        }
        let client = Client {
            idx: i,
            sh: sh.clone(),
            m: HolderMachine::new(cfg.clone()),
            name: cfg.name.clone(),
            links: [None, None],
            plan: setup.plan.clone(),
            points: PointCounts::default(),
            timed,
            steps,
            heal,
            end,
            garbage: garbage.filter(|_| i == 0).map(str::to_string),
        };
        sim.client(cfg.name.as_str(), client.run());
    }

    // Faults turmoil carries out itself, in time order; on the same instant in plan order, a
    // fault's start before its end, and the heal last.
    let mut ctl: Vec<(Millis, (usize, u8), Ctl)> = Vec::new();
    for (i, at, t) in setup.plan.timed(heal) {
        if let Timed::Crash { db, down_ms } = t {
            ctl.push((at, (i, 0), Ctl::Crash(db)));
            ctl.push((at.plus(down_ms).min(heal), (i, 1), Ctl::Restart(db)));
        }
    }
    for (i, f) in setup.plan.faults.iter().enumerate() {
        if let Some(w) = f.link_window(heal) {
            let (on, off) = match w.extra_ms {
                None => (Ctl::Hold(w.holder, w.db), Ctl::Release(w.holder, w.db)),
                Some(extra) => (
                    Ctl::Slow(w.holder, w.db, hi + extra),
                    Ctl::Slow(w.holder, w.db, hi),
                ),
            };
            ctl.push((w.from, (i, 0), on));
            ctl.push((w.end, (i, 1), off));
        }
    }
    ctl.push((heal, (usize::MAX, 0), Ctl::Heal));
    ctl.sort_by_key(|(t, n, _)| (*t, *n));
    let mut ctl = ctl.into_iter().peekable();
    let mut down = [false; 2];
    loop {
        let t = Millis(sim.elapsed().as_millis() as u64);
        while let Some((_, _, c)) = ctl.next_if(|(at, _, _)| *at <= t) {
            match c {
                Ctl::Crash(db) if !down[db.index()] => {
                    down[db.index()] = true;
                    sim.crash(host_name(db));
                    let mut s = sh.borrow_mut();
                    let replies = s.hosts.crash(t, db);
                    route(&s, db, replies);
                    s.outbox[db.index()].clear();
                }
                Ctl::Restart(db) if down[db.index()] => {
                    down[db.index()] = false;
                    sh.borrow_mut().hosts.restart(t, db);
                    sim.bounce(host_name(db));
                }
                Ctl::Hold(h, db) => sim.hold(names[h].as_str(), host_name(db)),
                Ctl::Release(h, db) => sim.release(names[h].as_str(), host_name(db)),
                Ctl::Slow(h, db, ms) => sim.set_link_max_message_latency(
                    names[h].as_str(),
                    host_name(db),
                    Duration::from_millis(ms.max(lo)),
                ),
                Ctl::Heal => {
                    for db in [DbName::Lease, DbName::Res] {
                        if down[db.index()] {
                            down[db.index()] = false;
                            sh.borrow_mut().hosts.restart(t, db);
                            sim.bounce(host_name(db));
                        }
                    }
                }
                _ => {}
            }
        }
        match sim.step() {
            Ok(true) => break,
            Ok(false) => {}
            Err(e) => {
                sh.borrow_mut().errors.push(format!(
                    "turmoil stopped the simulation at t={}: {e}",
                    sim.elapsed().as_millis()
                ));
                break;
            }
        }
    }
    let stopped_at = Millis(sim.elapsed().as_millis() as u64);
    if stopped_at < end {
        sh.borrow_mut().errors.push(format!(
            "the history is cut short: the simulation ended at t={stopped_at}, before the run's end at t={end}"
        ));
    }
    drop(sim);
    let (history, stats, errors) = {
        let s = sh.borrow();
        (
            s.hosts.world.history.clone(),
            s.stats.clone(),
            s.errors.clone(),
        )
    };
    let mut run = finish(setup, Driver::Turmoil, history, stats);
    run.driver_errors = errors;
    run
}
