//! A live run: throwaway servers under one folder (PostgreSQL for the fenced resource, and for
//! the lease when it is the store; `redis-server` or `etcd` for theirs), one OS process per
//! holder running jobs for the run's time, and a nemesis whose schedule derives from the seed.
//! Every holder records its calls, and this process its final read of the resource, each to a
//! file of its own under `records/`: `leaselab judge --merge` judges them together.
//!
//! The pause nemesis acts where a pause hurts: every holder waits for this process right
//! after each local check (`READY`), and the nemesis then either lets it go at once or stops
//! it (SIGSTOP) for a while — up to several TTLs — and resumes it (SIGCONT); the holder records
//! the pause and the resume in its history. Whether and how
//! long is drawn for each holder from its own stream of the seed, so the schedule is the
//! seed's: the k-th check of holder-b is paused as long in every run of that seed. The servers'
//! timing is real, so the interleaving around it is not: a run again can differ.

use crate::redis::{Persistence, RedisRecipe};
use crate::server::{Program, Server};
use crate::store::StoreKind;
use crate::LiveError;
use leaselab_model::names::defaults;
use leaselab_model::{Config, DbName, FenceMode, Op, Outcome, PartRow, Token};
use leaselab_pg::adapter::PgBackend;
use leaselab_pg::real::{HolderProc, Spawned};
use leaselab_pg::recording::{epoch_ms, Recording};
use rand::{Rng, SeedableRng};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// What the nemesis does: any of pausing holders, killing the lease server, jumping its clock
/// and cutting holders off from it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Nemesis {
    /// Pauses holders right after their local check (SIGSTOP, SIGCONT).
    pub pause: bool,
    /// Kills the lease server (kill -9) every few TTLs and starts it again on its folder (Redis,
    /// etcd).
    pub kill: bool,
    /// Jumps the lease server's clock forward every few TTLs (Redis; see [`crate::redis::jump`]).
    /// etcd is a Go binary that reads the clock without libc, out of libfaketime's reach: there
    /// a member is paused (SIGSTOP) instead — its clock stands still while the others' runs on.
    pub clock: bool,
    /// Runs the lease server's clock fast now and then (Redis, Redlock: [`drift_now_and_then`]).
    pub drift: bool,
    /// Partitions holders from the lease server now and then ([`crate::proxy`]; Redis, etcd;
    /// on Redlock from a minority of its instances, drawn each time).
    pub partition: bool,
    /// Kleppmann's example, scripted (Redlock only; [`Kleppmann`]).
    pub kleppmann: bool,
}

impl Nemesis {
    /// From its spelling: `none`, or faults joined by commas (`pause`, `kill`, `clock`,
    /// `partition`: `pause,kill`, …).
    pub fn parse(s: &str) -> Option<Nemesis> {
        let mut n = Nemesis::default();
        if s == "none" {
            return Some(n);
        }
        for f in s.split(',') {
            match f {
                "pause" => n.pause = true,
                "kill" => n.kill = true,
                "clock" => n.clock = true,
                "drift" => n.drift = true,
                "partition" => n.partition = true,
                "kleppmann" => n.kleppmann = true,
                _ => return None,
            }
        }
        Some(n)
    }

    /// Its spelling.
    pub fn as_str(self) -> String {
        let on: Vec<&str> = [
            (self.pause, "pause"),
            (self.kill, "kill"),
            (self.clock, "clock"),
            (self.drift, "drift"),
            (self.partition, "partition"),
            (self.kleppmann, "kleppmann"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect();
        if on.is_empty() {
            "none".to_string()
        } else {
            on.join(",")
        }
    }
}

/// A live run's settings.
#[derive(Clone, Debug)]
pub struct LiveCfg {
    /// The lease service.
    pub store: StoreKind,
    /// The Redis recipe (a file); `None`: the built-in one, `examples/stores/redis-counter.toml`.
    pub recipe: Option<PathBuf>,
    /// The resource's fence: `Scope` (the source design) or `Off`.
    pub fence: FenceMode,
    /// Holder processes.
    pub holders: usize,
    /// How long the holders start jobs, ms.
    pub time_ms: u64,
    /// The fault schedule's kind.
    pub nemesis: Nemesis,
    /// Redlock's instances (3 or more; 5 as published).
    pub instances: usize,
    /// The fault schedule's seed.
    pub seed: u64,
    /// The folder for the servers and the records (made anew).
    pub dir: PathBuf,
    /// This program, to start holder processes with (`leaselab holder`).
    pub exe: PathBuf,
}

/// The members of a live run's etcd cluster: a majority survives one killed.
pub const ETCD_MEMBERS: usize = 3;

/// The built-in Redis recipe.
pub const REDIS_COUNTER: &str = include_str!("../../examples/stores/redis-counter.toml");

/// What one holder process did, from the lines it printed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HolderSummary {
    /// Its name.
    pub name: String,
    /// Grants it got.
    pub acquired: u64,
    /// Writes the resource accepted.
    pub accepted: u64,
    /// Writes the resource refused (the fence).
    pub refused: u64,
    /// Pauses the nemesis gave it: (ms).
    pub pauses: Vec<u64>,
    /// How long each partition from its lease server lasted (ms).
    pub partitions: Vec<u64>,
    /// Kleppmann's example, played on this holder: how far the clock jumped (ms), or why not.
    pub kleppmann: Option<Result<u64, String>>,
}

/// What a live run leaves: where its records are and what each holder did.
#[derive(Clone, Debug)]
pub struct LiveReport {
    /// How long the lease server was down each time the nemesis killed it (ms).
    pub kills: Vec<u64>,
    /// How far the nemesis jumped the server's clock forward each time (ms) — on etcd, how
    /// long it paused a member each time instead ([`LiveReport::clock_is_pause`]).
    pub jumps: Vec<u64>,
    /// The clock nemesis paused a member instead of jumping a clock (etcd).
    pub clock_is_pause: bool,
    /// Each spell of a fast server clock: how long it lasted (ms) and how fast it ran (tenths
    /// of real time).
    pub drifts: Vec<(u64, u64)>,
    /// The record files: one per holder, then the observer's final read.
    pub records: Vec<PathBuf>,
    /// Each holder, in order.
    pub holders: Vec<HolderSummary>,
    /// The store as run: `pg`, `redis (recipe FILE, persistence P)`, `etcd (token: …)`.
    pub store: String,
}

/// The holders' names: holder-a, holder-b, …
pub fn holder_name(i: usize) -> String {
    let letters = "abcdefghijklmnopqrstuvwxyz";
    match letters.get(i..=i) {
        Some(l) => format!("holder-{l}"),
        None => format!("holder-{}", i + 1),
    }
}

/// One stream of the fault schedule, drawn from the seed: one per holder (its pauses), one for
/// the server (its kills), so that one decision never shifts another stream's.
struct Schedule(rand_chacha::ChaCha8Rng);

/// The server's stream (a holder's is its index).
const SERVER_STREAM: u64 = u64::MAX;

/// The server clock's stream.
const CLOCK_STREAM: u64 = u64::MAX - 1;

/// The server clock's rate's stream.
const DRIFT_STREAM: u64 = u64::MAX - 2;

/// Holder i's partitions come from stream `PARTITION_STREAMS + i`.
const PARTITION_STREAMS: u64 = 1 << 32;

impl Schedule {
    fn new(seed: u64, stream: u64) -> Schedule {
        let mut key = [0u8; 32];
        key[..8].copy_from_slice(&seed.to_le_bytes());
        key[8..16].copy_from_slice(&stream.to_le_bytes());
        Schedule(rand_chacha::ChaCha8Rng::from_seed(key))
    }

    /// Whether and how long to pause a holder at its next check: a third of the checks, each
    /// for half a TTL to three TTLs (both drawn every time, so one answer never shifts the next).
    fn next_pause(&mut self, nemesis: Nemesis, ttl_ms: u64) -> Option<u64> {
        let pause = self.0.random_ratio(1, 3);
        let ms = self.0.random_range(ttl_ms / 2..=ttl_ms * 3);
        (nemesis.pause && pause).then_some(ms)
    }

    /// When to cut a holder off next (ms after the last heal: two to six TTLs), for how long
    /// (half a TTL to three TTLs), and from which of its `n` servers: all of one; of several
    /// (Redlock's instances) a minority, drawn — what keeps a holder from a majority is a
    /// partition it cannot lock through, while one that leaves it a bare majority is the
    /// opening of Kleppmann's example.
    fn next_partition(&mut self, ttl_ms: u64, n: usize) -> (u64, u64, Vec<usize>) {
        let wait = self.0.random_range(ttl_ms * 2..=ttl_ms * 6);
        let cut = self.0.random_range(ttl_ms / 2..=ttl_ms * 3);
        let which = match n {
            0 | 1 => (0..n).collect(),
            _ => rand::seq::index::sample(&mut self.0, n, n / 2).into_vec(),
        };
        (wait, cut, which)
    }

    /// When to jump the clock next (ms after the last jump: one to four TTLs), by how much
    /// (half a TTL to two TTLs), and on which of `n` servers (drawn only when there is a choice:
    /// one server's schedule is the same as before clusters were).
    fn next_jump(&mut self, ttl_ms: u64, n: usize) -> (u64, u64, usize) {
        let wait = self.0.random_range(ttl_ms..=ttl_ms * 4);
        let by = self.0.random_range(ttl_ms / 2..=ttl_ms * 2);
        let which = if n > 1 { self.0.random_range(0..n) } else { 0 };
        (wait, by, which)
    }

    /// When the server's clock runs fast next (ms after the last spell: one to four TTLs), for
    /// how long (one to three TTLs), how fast (1.5 to 4 times real time, in tenths), and on
    /// which of `n` servers (drawn only when there is a choice).
    fn next_drift(&mut self, ttl_ms: u64, n: usize) -> (u64, u64, u64, usize) {
        let wait = self.0.random_range(ttl_ms..=ttl_ms * 4);
        let spell = self.0.random_range(ttl_ms..=ttl_ms * 3);
        let tenths = self.0.random_range(15..=40);
        let which = if n > 1 { self.0.random_range(0..n) } else { 0 };
        (wait, spell, tenths, which)
    }

    /// When to kill a server next (ms after it came up: two to six TTLs), how long it stays
    /// down (a tenth of a TTL to one TTL), and which of the `n` (drawn only when there is a
    /// choice: one server's schedule is the same as before clusters were).
    fn next_kill(&mut self, ttl_ms: u64, n: usize) -> (u64, u64, usize) {
        let up = self.0.random_range(ttl_ms * 2..=ttl_ms * 6);
        let down = self.0.random_range(ttl_ms / 10..=ttl_ms);
        let which = if n > 1 { self.0.random_range(0..n) } else { 0 };
        (up, down, which)
    }
}

/// Runs a live run; `stop` (a first Ctrl-C) ends it early: no more pauses, and every holder
/// finishes the job it is in and exits.
pub fn live(cfg: &LiveCfg, stop: &'static AtomicBool) -> Result<LiveReport, LiveError> {
    let _ = std::fs::remove_dir_all(&cfg.dir);
    let records = cfg.dir.join("records");
    std::fs::create_dir_all(&records)
        .map_err(|e| LiveError::io(&format!("create {}", records.display()), e))?;
    // The recipe first: a bad one is named before any server starts.
    let recipe = match cfg.store {
        StoreKind::Redis => {
            let file = match &cfg.recipe {
                Some(f) => f.clone(),
                None => {
                    let f = cfg.dir.join("redis-counter.toml");
                    std::fs::write(&f, REDIS_COUNTER)
                        .map_err(|e| LiveError::io(&format!("write {}", f.display()), e))?;
                    f
                }
            };
            Some((RedisRecipe::load(&file)?, file))
        }
        StoreKind::Pg | StoreKind::Etcd | StoreKind::EtcdLeaseId | StoreKind::Redlock => None,
    };
    let mut pg =
        PgBackend::throwaway(&cfg.dir.join("pg")).map_err(|e| LiveError::Pg(e.to_string()))?;
    pg.reset(&Config::with_fence(cfg.fence))
        .map_err(|e| LiveError::Pg(e.to_string()))?;
    let res = pg.conninfo(DbName::Res);
    // The lease servers, kept until the holders are done (the killer holds them meanwhile).
    let (servers, store) = match (&recipe, cfg.store) {
        (Some((recipe, file)), _) => (
            vec![Server::start(
                &cfg.dir,
                "redis",
                Program::Redis(recipe.persistence),
            )?],
            format!(
                "redis (recipe {}, persistence {})",
                file.display(),
                recipe.persistence.as_str()
            ),
        ),
        (None, StoreKind::Etcd) => (
            Server::start_etcd(&cfg.dir, ETCD_MEMBERS)?,
            format!("etcd ({ETCD_MEMBERS} members; token: the lock key's create revision)"),
        ),
        (None, StoreKind::EtcdLeaseId) => (
            Server::start_etcd(&cfg.dir, ETCD_MEMBERS)?,
            format!(
                "etcd-lease-id ({ETCD_MEMBERS} members; token: the lease's ID — ordered by \
                 grant on one member, not by lock)"
            ),
        ),
        (None, StoreKind::Redlock) => (
            (1..=cfg.instances)
                .map(|k| {
                    Server::start(
                        &cfg.dir,
                        &format!("redis-{k}"),
                        Program::Redis(Persistence::Always),
                    )
                })
                .collect::<Result<Vec<_>, _>>()?,
            format!(
                "redlock ({} Redis instances, persistence always; no token: its value is random — \
                 the history numbers each grant by the microsecond it was decided on this \
                 machine's clock, which no resource elsewhere could fence with)",
                cfg.instances
            ),
        ),
        (None, _) => (Vec::new(), "pg".to_string()),
    };
    let urls: Vec<String> = servers.iter().map(Server::url).collect();
    // The servers holder i talks to: every Redlock instance; else server i mod n (on etcd each
    // member grants leases of its own), or PostgreSQL's lease database.
    let reaches = |i: usize| -> Vec<String> {
        match (cfg.store, urls.get(i % urls.len().max(1))) {
            (StoreKind::Redlock, _) => urls.clone(),
            (_, Some(u)) => vec![u.clone()],
            (_, None) => vec![pg.conninfo(DbName::Lease)],
        }
    };
    let per_holder = reaches(0).len();
    // Shared by the killer and the clock nemesis; dropped (stopped) once the holders are done.
    let servers = std::sync::Arc::new(std::sync::Mutex::new(servers));
    // Holder i's way to each of its servers: straight, or through a proxy the nemesis cuts
    // (proxy i·n + k for its k-th server).
    let proxies = match cfg.nemesis.partition || cfg.nemesis.kleppmann {
        true => {
            let ups: Vec<String> = (0..cfg.holders)
                .flat_map(reaches)
                .map(|u| host_port(&u).to_string())
                .collect();
            Some(crate::proxy::Proxies::start(&ups)?)
        }
        false => None,
    };
    let address = |i: usize| {
        let each: Vec<String> = reaches(i)
            .into_iter()
            .enumerate()
            .map(
                |(k, direct)| match proxies.as_ref().and_then(|p| p.port(i * per_holder + k)) {
                    Some(port) => direct.replace(host_port(&direct), &format!("127.0.0.1:{port}")),
                    None => direct,
                },
            )
            .collect();
        each.join(",")
    };
    let recipe_file = recipe.map(|(_, f)| f);
    let origin = epoch_ms();
    let ttl = cfg.store.ttl_ms();
    let fenced = cfg.fence != FenceMode::Off;
    let mut threads = Vec::new();
    for i in 0..cfg.holders {
        let name = holder_name(i);
        let mut cmd = std::process::Command::new(&cfg.exe);
        cmd.args(["holder", "--role", "live", "--name", &name])
            .args(["--until-ms", &cfg.time_ms.to_string()])
            .args(["--ttl-ms", &ttl.to_string()])
            .args([
                "--store",
                cfg.store.as_str(),
                "--lease",
                &address(i),
                "--res",
                &res,
            ])
            .args(["--fence", if fenced { "scope" } else { "off" }])
            .arg("--record")
            .arg(records.join(format!("{name}.jsonl")))
            .args(["--clock-origin-ms", &origin.to_string()]);
        if let Some(f) = &recipe_file {
            cmd.arg("--recipe").arg(f);
        }
        // Kleppmann's example: holder-a cut off from the last instances before it starts.
        let script = match (cfg.nemesis.kleppmann, i, &proxies) {
            (true, 0, Some(p)) => Some(Kleppmann::start(p, per_holder, servers.clone(), ttl)?),
            _ => None,
        };
        let spawned = HolderProc::spawn(cmd)?;
        let schedule = Schedule::new(cfg.seed, i as u64);
        let nemesis = cfg.nemesis;
        threads.push(std::thread::spawn(move || {
            drive(name, spawned, schedule, (nemesis, ttl), script, stop)
        }));
    }
    // The server killer, while the holders run.
    let mut kills = Vec::new();
    let killer = match cfg.nemesis.kill && !urls.is_empty() {
        true => {
            let (seed, time_ms, all) = (cfg.seed, cfg.time_ms, servers.clone());
            Some(std::thread::spawn(move || {
                let schedule = Schedule::new(seed, SERVER_STREAM);
                let n = lock(&all).len();
                let act = |which, up| kill_or_boot(&all, which, up);
                kill_now_and_then(n, act, schedule, (time_ms, ttl), stop)
            }))
        }
        false => None,
    };
    // On PostgreSQL the lease database is the server the killer crashes: the backend goes to
    // the killer's thread and comes back with it.
    let mut pg = Some(pg);
    let pg_killer = match (cfg.nemesis.kill, cfg.store, pg.take()) {
        (true, StoreKind::Pg, Some(mut lease_pg)) => {
            let (seed, time_ms) = (cfg.seed, cfg.time_ms);
            Some(std::thread::spawn(move || {
                let schedule = Schedule::new(seed, SERVER_STREAM);
                let act = |_, up| crash_or_restart(&mut lease_pg, up);
                let (downs, up) = kill_now_and_then(1, act, schedule, (time_ms, ttl), stop);
                (lease_pg, downs, up)
            }))
        }
        (_, _, kept) => {
            pg = kept;
            None
        }
    };
    // The partitions, one thread per holder.
    let partitioners: Vec<_> = (0..cfg.holders)
        .filter(|_| cfg.nemesis.partition)
        .filter_map(|i| {
            let p = proxies.as_ref()?;
            let cutter = (0..per_holder)
                .map(|k| p.cutter(i * per_holder + k))
                .collect::<Option<Vec<_>>>()?;
            let (seed, time_ms) = (cfg.seed, cfg.time_ms);
            Some(std::thread::spawn(move || {
                let schedule = Schedule::new(seed, PARTITION_STREAMS + i as u64);
                partition_now_and_then(&cutter, schedule, (time_ms, ttl), stop)
            }))
        })
        .collect();
    // The clock jumper, while the holders run (Redis; on etcd a member's pauser: the caller
    // refuses PostgreSQL).
    let clock_is_pause = matches!(cfg.store, StoreKind::Etcd | StoreKind::EtcdLeaseId);
    let jumper = match cfg.nemesis.clock && !urls.is_empty() {
        true => {
            let (seed, time_ms, all) = (cfg.seed, cfg.time_ms, servers.clone());
            Some(std::thread::spawn(move || {
                let schedule = Schedule::new(seed, CLOCK_STREAM);
                jump_now_and_then(&all, clock_is_pause, schedule, (time_ms, ttl), stop)
            }))
        }
        false => None,
    };
    // The clock's rate, while the holders run (Redis, Redlock: the caller checks).
    let drifter = match cfg.nemesis.drift && !urls.is_empty() {
        true => {
            let (seed, time_ms, all) = (cfg.seed, cfg.time_ms, servers.clone());
            Some(std::thread::spawn(move || {
                let schedule = Schedule::new(seed, DRIFT_STREAM);
                drift_now_and_then(&all, schedule, (time_ms, ttl), stop)
            }))
        }
        false => None,
    };
    // Every thread is waited for, whatever an earlier one says: the first error is the run's.
    let mut failed = None;
    let mut holders = Vec::new();
    for t in threads {
        if let Some(h) = joined(t, "a holder's", &mut failed).and_then(|r| keep(r, &mut failed)) {
            holders.push(h);
        }
    }
    if let Some((downs, up)) = killer.and_then(|k| joined(k, "the server killer's", &mut failed)) {
        kills = downs;
        keep(up, &mut failed);
    }
    if let Some((back, downs, up)) =
        pg_killer.and_then(|k| joined(k, "the lease database's killer", &mut failed))
    {
        pg = Some(back);
        kills = downs;
        keep(up, &mut failed);
    }
    for (i, p) in partitioners.into_iter().enumerate() {
        if let (Some(cuts), Some(h)) = (joined(p, "a partition", &mut failed), holders.get_mut(i)) {
            h.partitions = cuts;
        }
    }
    drop(proxies);
    let jumps = jumper
        .and_then(|j| joined(j, "the clock jumper's", &mut failed))
        .unwrap_or_default();
    let drifts = drifter
        .and_then(|d| joined(d, "the clock drifter's", &mut failed))
        .unwrap_or_default();
    if let Some(e) = failed {
        return Err(e);
    }
    let mut files: Vec<PathBuf> = holders
        .iter()
        .map(|h| records.join(format!("{}.jsonl", h.name)))
        .collect();
    let observer = records.join("observer.jsonl");
    observe(&res, &observer, origin)?;
    files.push(observer);
    // Stopped only now: the holders are done (and the nemeses' threads, which held the others).
    drop(servers);
    drop(pg);
    Ok(LiveReport {
        kills,
        jumps,
        drifts,
        clock_is_pause,
        records: files,
        holders,
        store,
    })
}

/// What thread `t` (`whose` thread, in an error) returned; `None` if it panicked, which is
/// `failed` unless an earlier error is.
fn joined<T>(
    t: std::thread::JoinHandle<T>,
    whose: &str,
    failed: &mut Option<LiveError>,
) -> Option<T> {
    match t.join() {
        Ok(v) => Some(v),
        Err(_) => {
            let e = LiveError::Unexpected(format!("{whose} thread panicked"));
            *failed = failed.take().or(Some(e));
            None
        }
    }
}

/// `r`'s value, or `None` with its error kept in `failed` unless an earlier error is.
fn keep<T>(r: Result<T, LiveError>, failed: &mut Option<LiveError>) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(e) => {
            *failed = failed.take().or(Some(e));
            None
        }
    }
}

/// The servers, for one nemesis at a time.
fn lock(servers: &Servers) -> std::sync::MutexGuard<'_, Vec<Server>> {
    servers
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The lease servers, shared by the nemeses that act on them.
type Servers = std::sync::Mutex<Vec<Server>>;

/// Kills one of `n` servers (kill -9; of several, one drawn from the schedule) and starts it
/// again as the schedule says, until the run's time is up or it is stopped; how long one was
/// down each time, and whether it came up again every time. `act(which, false)` kills server
/// `which`, `act(which, true)` starts it again.
fn kill_now_and_then(
    n: usize,
    mut act: impl FnMut(usize, bool) -> Result<(), LiveError>,
    mut schedule: Schedule,
    (time_ms, ttl_ms): (u64, u64),
    stop: &AtomicBool,
) -> (Vec<u64>, Result<(), LiveError>) {
    let start = std::time::Instant::now();
    let over = |extra: u64| {
        stop.load(Ordering::SeqCst)
            || start.elapsed() + Duration::from_millis(extra) >= Duration::from_millis(time_ms)
    };
    let mut downs = Vec::new();
    loop {
        let (up, down, which) = schedule.next_kill(ttl_ms, n);
        let t = std::time::Instant::now();
        while t.elapsed() < Duration::from_millis(up) {
            if over(0) {
                return (downs, Ok(()));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        if over(down) {
            return (downs, Ok(()));
        }
        if let Err(e) = act(which, false) {
            return (downs, Err(e));
        }
        std::thread::sleep(Duration::from_millis(down));
        downs.push(down);
        if let Err(e) = act(which, true) {
            return (downs, Err(e));
        }
    }
}

/// A live server killed (`up` false) or started again on its folder.
fn kill_or_boot(servers: &Servers, which: usize, up: bool) -> Result<(), LiveError> {
    match (lock(servers).get_mut(which), up) {
        (Some(s), true) => s.boot(),
        (Some(s), false) => {
            s.kill();
            Ok(())
        }
        (None, _) => Ok(()),
    }
}

/// The PostgreSQL lease database crashed (an immediate stop: every backend killed at once,
/// no checkpoint — what `pg_ctl stop -m immediate` does; F8) or started again with WAL
/// recovery. The resource database, a cluster of its own, goes on.
fn crash_or_restart(pg: &mut PgBackend, up: bool) -> Result<(), LiveError> {
    use leaselab_model::Admin;
    let (actor, conn) = (
        leaselab_model::Holder::new("admin"),
        leaselab_model::ConnId::new("admin"),
    );
    let cx = leaselab_model::Ctx {
        now: leaselab_model::Millis::ZERO,
        local: leaselab_model::Millis::ZERO,
        actor: &actor,
        conn: &conn,
    };
    let out = match up {
        true => pg.restart(&cx, DbName::Lease),
        false => pg.crash(&cx, DbName::Lease),
    };
    match out {
        Outcome::Ok => Ok(()),
        other => Err(LiveError::Pg(format!(
            "the lease database's {}: {other}",
            if up { "restart" } else { "crash" }
        ))),
    }
}

/// `host:port` of a server's address (`redis://host:port/`, `http://host:port`).
fn host_port(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.trim_end_matches('/')
}

/// Cuts a holder off from its server and heals it as the schedule says, until the run's time
/// is up or it is stopped (then heals it for good); how long each cut lasted.
fn partition_now_and_then(
    cutters: &[tokio::sync::watch::Sender<bool>],
    mut schedule: Schedule,
    (time_ms, ttl_ms): (u64, u64),
    stop: &AtomicBool,
) -> Vec<u64> {
    let start = std::time::Instant::now();
    let over = || stop.load(Ordering::SeqCst) || start.elapsed() >= Duration::from_millis(time_ms);
    let mut cuts = Vec::new();
    'run: loop {
        let (wait, cut, which) = schedule.next_partition(ttl_ms, cutters.len());
        let t = std::time::Instant::now();
        while t.elapsed() < Duration::from_millis(wait) {
            if over() {
                break 'run;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        for &k in &which {
            if let Some(c) = cutters.get(k) {
                let _ = c.send(true);
            }
        }
        let t = std::time::Instant::now();
        while t.elapsed() < Duration::from_millis(cut) && !stop.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(10));
        }
        for c in cutters {
            let _ = c.send(false);
        }
        cuts.push(t.elapsed().as_millis() as u64);
    }
    for c in cutters {
        let _ = c.send(false);
    }
    cuts
}

/// Jumps the Redis server's clock forward as the schedule says, until the run's time is up or
/// it is stopped; how far each jump that reached the server went (a jump while the server is
/// down is skipped). With `pause` (etcd, whose clock libfaketime cannot reach) a member drawn
/// from the schedule is paused (SIGSTOP) that long instead and resumed: its clock stands still
/// while the others' runs on — leases it leads time out late, calls to it wait.
fn jump_now_and_then(
    servers: &Servers,
    pause: bool,
    mut schedule: Schedule,
    (time_ms, ttl_ms): (u64, u64),
    stop: &AtomicBool,
) -> Vec<u64> {
    let start = std::time::Instant::now();
    let over = || stop.load(Ordering::SeqCst) || start.elapsed() >= Duration::from_millis(time_ms);
    let mut jumps = Vec::new();
    let n = lock(servers).len();
    loop {
        let (wait, by, which) = schedule.next_jump(ttl_ms, n);
        let t = std::time::Instant::now();
        while t.elapsed() < Duration::from_millis(wait) {
            if over() {
                return jumps;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        if !pause {
            let url = lock(servers).get(which).map(Server::url);
            if url.is_some_and(|u| crate::redis::jump(&u, by).is_ok()) {
                jumps.push(by);
            }
            continue;
        }
        // Stopped and resumed under the lock's protection from the killer: a member killed
        // meanwhile is a new process, which a SIGCONT leaves as it is.
        if !lock(servers).get(which).is_some_and(|s| s.signal("-STOP")) {
            continue;
        }
        let t = std::time::Instant::now();
        while t.elapsed() < Duration::from_millis(by) && !stop.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(10));
        }
        if let Some(s) = lock(servers).get(which) {
            s.signal("-CONT");
        }
        jumps.push(t.elapsed().as_millis() as u64);
    }
}

/// Runs a Redis server's clock fast as the schedule says — drawn spells of 1.5 to 4 times real
/// time — until the run's time is up or it is stopped; each spell that reached the server,
/// its length and rate. A fast clock, as far as the leases can tell, is one that jumps a
/// little at every tick: every 50 ms of a spell, every key's time to live is cut by the time
/// the clock ran ahead in them ([`crate::redis::jump`]), so a key of TTL t lives t / rate.
fn drift_now_and_then(
    servers: &Servers,
    mut schedule: Schedule,
    (time_ms, ttl_ms): (u64, u64),
    stop: &AtomicBool,
) -> Vec<(u64, u64)> {
    const TICK: u64 = 50;
    let start = std::time::Instant::now();
    let over = || stop.load(Ordering::SeqCst) || start.elapsed() >= Duration::from_millis(time_ms);
    let n = lock(servers).len();
    let mut spells = Vec::new();
    loop {
        let (wait, spell, tenths, which) = schedule.next_drift(ttl_ms, n);
        let t = std::time::Instant::now();
        while t.elapsed() < Duration::from_millis(wait) {
            if over() {
                return spells;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let Some(url) = lock(servers).get(which).map(Server::url) else {
            return spells;
        };
        let t = std::time::Instant::now();
        let mut reached = false;
        while t.elapsed() < Duration::from_millis(spell) && !over() {
            std::thread::sleep(Duration::from_millis(TICK));
            // The clock ran (rate − 1) × TICK ahead of real time in this tick.
            reached |= crate::redis::jump(&url, TICK * (tenths - 10) / 10).is_ok();
        }
        if reached {
            spells.push((t.elapsed().as_millis() as u64, tenths));
        }
    }
}

/// Reads a holder's lines, answers each `READY` (after a pause when the schedule says so),
/// and waits for the process to end.
fn drive(
    name: String,
    s: Spawned,
    mut schedule: Schedule,
    (nemesis, ttl): (Nemesis, u64),
    mut script: Option<Kleppmann>,
    stop: &AtomicBool,
) -> Result<HolderSummary, LiveError> {
    let Spawned {
        proc,
        mut stdin,
        stdout,
    } = s;
    let mut sum = HolderSummary {
        name,
        ..HolderSummary::default()
    };
    // A pause asked for and not yet done: the holder records it and says PAUSING first.
    let mut pausing: Option<u64> = None;
    for line in BufReader::new(stdout).lines() {
        let line = line.map_err(|e| LiveError::io("read a holder's line", e))?;
        // A holder that died (killed by an abandoning Ctrl-C) reads nothing: its end of the
        // pipe is gone, and a write fails; the loop then ends at its last line.
        if line == "READY" {
            if let Some(k) = script.take() {
                sum.kleppmann = Some(k.act(stop));
            }
            let pause = schedule.next_pause(nemesis, ttl);
            let answer = match pause {
                _ if stop.load(Ordering::SeqCst) => "stop",
                Some(ms) => {
                    pausing = Some(ms);
                    "pause"
                }
                None => "go",
            };
            let _ = writeln!(stdin, "{answer}");
        } else if line == "PAUSING" {
            let ms = pausing.take();
            let answer = if stop.load(Ordering::SeqCst) {
                "stop"
            } else {
                if let Some(ms) = ms {
                    proc.signal("-STOP")?;
                    std::thread::sleep(Duration::from_millis(ms));
                    proc.signal("-CONT")?;
                    sum.pauses.push(ms);
                }
                "go"
            };
            let _ = writeln!(stdin, "{answer}");
        } else if line.starts_with("ACQUIRED ") {
            sum.acquired += 1;
        } else if line.starts_with("WRITE accepted=true") {
            sum.accepted += 1;
        } else if line.starts_with("WRITE accepted=false") {
            sum.refused += 1;
        }
    }
    drop(stdin);
    match proc.wait() {
        Some(status) if !status.success() && !stop.load(Ordering::SeqCst) => {
            Err(LiveError::Unexpected(format!(
                "{} ended with {status} before its time was up (what it said is above)",
                sum.name
            )))
        }
        _ => Ok(sum),
    }
}

/// Kleppmann's example against Redlock ("How to do distributed locking", 2016), scripted on
/// holder-a and the instances: holder-a is cut off from the last ⌊n/2⌋ instances from the
/// start, so that it locks a bare majority; once it holds the lock (its first `READY`, after
/// its local check) the last instance of that majority has its clock jumped forward a TTL —
/// its key of the lock is gone — and holder-a is held there, running, for a TTL more while the
/// other holders, cut off from nothing, lock that instance and the ones holder-a never reached:
/// two holders at once by real time, each within its validity. Then the cut heals and
/// holder-a goes on to its write.
pub struct Kleppmann {
    servers: std::sync::Arc<Servers>,
    cut: Vec<tokio::sync::watch::Sender<bool>>,
    jumped: usize,
    ttl_ms: u64,
}

impl Kleppmann {
    /// Cuts holder-a (proxies `0..n`, one per instance) off from the last ⌊n/2⌋ instances.
    fn start(
        proxies: &crate::proxy::Proxies,
        n: usize,
        servers: std::sync::Arc<Servers>,
        ttl_ms: u64,
    ) -> Result<Kleppmann, LiveError> {
        let cut = (n - n / 2..n)
            .map(|k| proxies.cutter(k))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| LiveError::Unexpected("Kleppmann's example: no proxy".into()))?;
        for c in &cut {
            let _ = c.send(true);
        }
        Ok(Kleppmann {
            servers,
            cut,
            jumped: n - n / 2 - 1,
            ttl_ms,
        })
    }

    /// The jump, the wait and the heal, while holder-a holds the lock; how far the clock
    /// jumped, or why it could not.
    fn act(self, stop: &AtomicBool) -> Result<u64, String> {
        let url = lock(&self.servers).get(self.jumped).map(Server::url);
        // Past the keys' whole time to live: the lock's key there is gone at once.
        let by = crate::redlock::key_ttl_ms(self.ttl_ms);
        let jumped = match url {
            Some(u) => crate::redis::jump(&u, by)
                .map(|()| by)
                .map_err(|e| e.to_string()),
            None => Err("no such instance".into()),
        };
        let t = std::time::Instant::now();
        while t.elapsed() < Duration::from_millis(self.ttl_ms) && !stop.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(10));
        }
        for c in &self.cut {
            let _ = c.send(false);
        }
        jumped
    }
}

/// The final read of the resource, recorded as an observer process of its own.
fn observe(res: &str, file: &Path, origin: u64) -> Result<(), LiveError> {
    let rt = leaselab_pg::real::runtime()?;
    let rec = Recording::open(Some(file), "observer", origin)
        .map_err(|e| LiveError::io("open the record file", e))?;
    rt.block_on(async {
        let c = leaselab_pg::real::connect(res).await?;
        let read = async {
            c.query_opt(
                leaselab_pg::sql::READ_PART,
                &[&defaults::SCOPE, &defaults::SUMMARY],
            )
            .await
            .map(|r| {
                r.map(|r| PartRow {
                    content: r.get::<_, String>(0),
                    writer: r.get::<_, String>(1).as_str().into(),
                    token: Token(r.get::<_, i64>(2) as u64),
                })
            })
        };
        rec.around(None, &Op::read_part(defaults::SUMMARY), read, |p| {
            Outcome::Part(p.clone())
        })
        .await
        .map_err(|e| LiveError::io("record", e))?
        .map_err(|e| LiveError::Pg(format!("the final read: {e}")))?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::Nemesis;

    /// The spelling a run prints (its `again:` command) reads back as the same faults, for
    /// every combination.
    #[test]
    fn every_nemesis_reads_back_as_printed() {
        for bits in 0u8..64 {
            let n = Nemesis {
                pause: bits & 1 != 0,
                kill: bits & 2 != 0,
                clock: bits & 4 != 0,
                partition: bits & 8 != 0,
                kleppmann: bits & 16 != 0,
                drift: bits & 32 != 0,
            };
            assert_eq!(Nemesis::parse(&n.as_str()), Some(n), "{}", n.as_str());
        }
        assert_eq!(Nemesis::parse("pause,bogus"), None);
    }
}
