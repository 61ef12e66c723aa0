//! `leaselab live`: a live run on a real lease service ([`leaselab_live::run`]), its records
//! judged by the checkers alone — what `judge --merge` says of them — and the commands that
//! judge, draw and run it again.

use crate::args::Exit;
use leaselab_live::run::{live, LiveCfg, LiveReport, Nemesis};
use leaselab_live::store::StoreKind;
use leaselab_model::{FenceMode, Op, Outcome};
use std::fmt::Write as _;
use std::path::PathBuf;

/// `leaselab live`'s arguments.
#[derive(clap::Args, Debug)]
pub struct LiveArgs {
    /// Where the lease is kept: pg (the source design's lease table), redis (a recipe of Lua
    /// scripts, docs/store-redis.md), etcd (its lock recipe, token = the key's create
    /// revision, docs/store-etcd.md), etcd-lease-id (the same with the lease's ID as the
    /// token: deliberately wrong) or redlock (over --instances Redis servers; no token,
    /// docs/store-redlock.md).
    #[arg(long, value_parser = ["pg", "redis", "etcd", "etcd-lease-id", "redlock"])]
    pub store: String,
    /// Redlock's instances: 5 as published, or 3 (with --store redlock).
    #[arg(long, value_parser = clap::value_parser!(u64).range(3..=9))]
    pub instances: Option<u64>,
    /// The Redis recipe (TOML: `persistence`, `[scripts]` acquire, renew, release); default
    /// the built-in examples/stores/redis-counter.toml.
    #[arg(long, value_name = "FILE")]
    pub recipe: Option<PathBuf>,
    /// The resource's fence: scope (the source design; the default) or off (the default, and
    /// the only choice, on Redlock: it has no token to fence with).
    #[arg(long, value_parser = ["scope", "off"])]
    pub fence: Option<String>,
    /// Holder processes, 1 to 26.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=26))]
    pub holders: u64,
    /// How long the holders start jobs: 20s, 1500ms, 2m (1 s to 1 h).
    #[arg(long, default_value = "20s", value_parser = duration_ms)]
    pub time: u64,
    /// The faults, joined by commas: pause (holders stopped with SIGSTOP right after their
    /// local check, for up to three TTLs), kill (the Redis or etcd server killed with SIGKILL
    /// every two to six TTLs, and started again on its folder; on pg the lease database
    /// stopped at once and recovered), clock (the Redis server's clock
    /// jumped forward by half a TTL to two TTLs every one to four TTLs; on etcd, whose clock
    /// libfaketime cannot reach, a member paused that long instead), drift (the Redis server's
    /// clock running 1.5 to 4 times fast for one to three TTLs, every one to four TTLs),
    /// partition (each holder
    /// cut off from its lease server, Redis or etcd, or from a minority of Redlock's instances,
    /// for half a TTL to three TTLs every two to six TTLs: nothing crosses until it heals); or
    /// none. On Redlock, kleppmann plays Kleppmann's example instead of clock and partition
    /// (docs/store-redlock.md).
    #[arg(long, default_value = "pause", value_parser = nemesis)]
    pub nemesis: Nemesis,
    /// The fault schedule's seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Where the servers and the records go (made anew).
    #[arg(long, default_value = "target/leaselab-live", value_name = "DIR")]
    pub dir: PathBuf,
}

fn nemesis(s: &str) -> Result<Nemesis, String> {
    Nemesis::parse(s).ok_or_else(|| {
        format!(
            "`{s}`: the faults are pause, kill, clock, drift, partition and kleppmann, joined by commas (pause,kill), or none"
        )
    })
}

/// `20s`, `1500ms`, `2m` in milliseconds, 1 s to 1 h.
fn duration_ms(s: &str) -> Result<u64, String> {
    let (n, unit) = match s.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => s.split_at(i),
        None => (s, ""),
    };
    let n: u64 = n
        .parse()
        .map_err(|_| format!("`{s}` is not a duration (20s, 1500ms, 2m)"))?;
    let ms = match unit {
        "ms" => Some(n),
        "s" => n.checked_mul(1_000),
        "m" => n.checked_mul(60_000),
        _ => return Err(format!("`{s}`: a duration needs a unit: ms, s or m")),
    };
    match ms {
        Some(ms) if (1_000..=3_600_000).contains(&ms) => Ok(ms),
        _ => Err(format!("`{s}` is out of range: 1s to 60m")),
    }
}

impl LiveArgs {
    /// The fence as run: as given, else scope — but on Redlock, which has no token.
    fn fence(&self) -> &str {
        match (&self.fence, self.store.as_str()) {
            (Some(f), _) => f,
            (None, "redlock") => "off",
            (None, _) => "scope",
        }
    }

    /// Redlock's instances as run.
    fn instances(&self) -> usize {
        self.instances.unwrap_or(5) as usize
    }
}

/// The run's settings in the command's own words, to run it again.
fn again(a: &LiveArgs) -> String {
    let mut c = format!("leaselab live --store {}", a.store);
    if a.store == "redlock" {
        let _ = write!(c, " --instances {}", a.instances());
    }
    if let Some(r) = &a.recipe {
        let _ = write!(c, " --recipe {}", r.display());
    }
    let _ = write!(
        c,
        " --fence {} --holders {} --time {}ms --nemesis {} --seed {} --dir {}",
        a.fence(),
        a.holders,
        a.time,
        a.nemesis.as_str(),
        a.seed,
        a.dir.display()
    );
    c
}

/// Runs `leaselab live`.
pub fn main(a: LiveArgs) -> Exit {
    let Some(store) = StoreKind::parse(&a.store) else {
        eprintln!("leaselab live: --store {}: not a store", a.store);
        return Exit::Usage;
    };
    if a.recipe.is_some() && store != StoreKind::Redis {
        eprintln!("leaselab live: --recipe applies only to --store redis");
        return Exit::Usage;
    }
    if a.instances.is_some() && store != StoreKind::Redlock {
        eprintln!("leaselab live: --instances applies only to --store redlock");
        return Exit::Usage;
    }
    if store == StoreKind::Redlock && a.fence.as_deref() == Some("scope") {
        eprintln!("leaselab live: --fence scope: Redlock hands out no token to fence with (its value is random); run it with --fence off (the default on Redlock) and see what the resource keeps");
        return Exit::Usage;
    }
    if a.nemesis.kleppmann
        && (store != StoreKind::Redlock
            || a.holders < 2
            || a.nemesis.clock
            || a.nemesis.drift
            || a.nemesis.partition)
    {
        eprintln!("leaselab live: --nemesis kleppmann plays Kleppmann's example on Redlock: it needs --store redlock and two holders or more, and takes the place of clock, drift and partition (it cuts and jumps itself)");
        return Exit::Usage;
    }
    if a.nemesis.drift && !matches!(store, StoreKind::Redis | StoreKind::Redlock) {
        eprintln!("leaselab live: --nemesis drift runs the Redis server's clock fast: it applies to --store redis and redlock (etcd's clock is out of reach: --nemesis clock pauses a member instead)");
        return Exit::Usage;
    }
    if a.nemesis.clock && store == StoreKind::Pg {
        eprintln!("leaselab live: --nemesis clock moves the lease server's clock: it applies to --store redis and etcd (PostgreSQL keeps the resource too)");
        return Exit::Usage;
    }
    if a.nemesis.partition && store == StoreKind::Pg {
        eprintln!("leaselab live: --nemesis partition cuts holders off from the lease server: it applies to --store redis and etcd so far");
        return Exit::Usage;
    }
    let Ok(exe) = std::env::current_exe() else {
        eprintln!("leaselab live: cannot find this program to start holder processes");
        return Exit::Usage;
    };
    let cfg = LiveCfg {
        store,
        recipe: a.recipe.clone(),
        fence: if a.fence() == "off" {
            FenceMode::Off
        } else {
            FenceMode::Scope
        },
        holders: a.holders as usize,
        time_ms: a.time,
        nemesis: a.nemesis,
        seed: a.seed,
        dir: a.dir.clone(),
        instances: a.instances(),
        exe,
    };
    eprintln!(
        "leaselab live: {} holders on {} for {} ms, nemesis {} (seed {}), fence {} …",
        cfg.holders,
        store.as_str(),
        cfg.time_ms,
        cfg.nemesis.as_str(),
        cfg.seed,
        a.fence()
    );
    let report = match live(&cfg, crate::interrupt::flag()) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("leaselab live: {e}");
            return Exit::Usage;
        }
    };
    let (text, exit) = judged(&a, &report);
    print!("{text}");
    if crate::interrupt::requested() {
        return Exit::Interrupted;
    }
    exit
}

/// Which of several servers a fault hit, in the report's words.
fn drawn(a: &LiveArgs) -> &'static str {
    match StoreKind::parse(&a.store) {
        Some(StoreKind::Etcd | StoreKind::EtcdLeaseId) => " (a member drawn each time)",
        Some(StoreKind::Redlock) => " (an instance drawn each time)",
        _ => "",
    }
}

/// The run's report: the judgement of its records, its counts, and the commands.
fn judged(a: &LiveArgs, r: &LiveReport) -> (String, Exit) {
    let judged = crate::judge_cmd::judge(&r.records, true);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "live: store {}, fence {}, {} holders, {} ms, nemesis {} (seed {})",
        r.store,
        a.fence(),
        a.holders,
        a.time,
        a.nemesis.as_str(),
        a.seed
    );
    if a.nemesis.kill {
        let _ = writeln!(
            out,
            "  the lease {}{}: killed {} times ({} ms down in all)",
            if a.store == "pg" {
                "database (PostgreSQL's lease26 cluster: an immediate stop, then WAL recovery; the resource's cluster goes on)"
            } else {
                "server"
            },
            drawn(a),
            r.kills.len(),
            r.kills.iter().sum::<u64>()
        );
    }
    if a.nemesis.clock && r.clock_is_pause {
        let _ = writeln!(
            out,
            "  the lease server's clock: out of reach (etcd is a Go binary that reads the clock without libc, which libfaketime cannot move); a member paused instead (SIGSTOP, a member drawn each time) {} times ({} ms in all) — its clock stood still while the others' ran on",
            r.jumps.len(),
            r.jumps.iter().sum::<u64>()
        );
    } else if a.nemesis.clock {
        let _ = writeln!(
            out,
            "  the lease server's clock{}: jumped forward {} times ({} ms in all; every key's time to live cut by the jump — the history's times are the machine's real clock, the server's expiries fell that much earlier)",
            drawn(a),
            r.jumps.len(),
            r.jumps.iter().sum::<u64>()
        );
    }
    if a.nemesis.drift {
        let rates: Vec<String> = r
            .drifts
            .iter()
            .map(|(ms, tenths)| format!("{}.{}× for {ms} ms", tenths / 10, tenths % 10))
            .collect();
        let _ = writeln!(
            out,
            "  the lease server's clock rate{}: fast {} times ({}; every key's time to live ran down that much faster — the history's times are the machine's real clock)",
            drawn(a),
            r.drifts.len(),
            if rates.is_empty() { "never".to_string() } else { rates.join(", ") }
        );
    }
    for h in &r.holders {
        let paused: u64 = h.pauses.iter().sum();
        let _ = write!(
            out,
            "  {}: {} grants, {} writes accepted, {} refused; paused {} times ({} ms in all)",
            h.name,
            h.acquired,
            h.accepted,
            h.refused,
            h.pauses.len(),
            paused
        );
        match &h.kleppmann {
            Some(Ok(ms)) => {
                let _ = write!(
                    out,
                    "; Kleppmann's example: cut off from the last {} instances until it held the lock on the others, then the last of those had its clock jumped forward {ms} ms while it held the lock",
                    a.instances() / 2
                );
            }
            Some(Err(e)) => {
                let _ = write!(out, "; Kleppmann's example not played: {e}");
            }
            None => {}
        }
        if a.nemesis.partition {
            let _ = write!(
                out,
                "; cut off from {} {} times ({} ms in all)",
                if a.store == "redlock" {
                    "a minority of the instances"
                } else {
                    "its lease server"
                },
                h.partitions.len(),
                h.partitions.iter().sum::<u64>()
            );
        }
        let _ = writeln!(out);
    }
    match counts(&r.records) {
        Some((ops, stale)) => {
            let _ = writeln!(
                out,
                "  operations {ops}; stale writes attempted {stale} (a write whose token is below one already granted)"
            );
            crate::summary::count("operations", ops);
            crate::summary::count("stale-writes", stale);
        }
        None => {
            let _ = writeln!(out, "  (the records could not be read back to count)");
        }
    }
    for line in judged.text.lines() {
        let _ = writeln!(out, "  {line}");
    }
    for e in &judged.errors {
        let _ = writeln!(out, "  record: {e}");
    }
    let files: Vec<String> = r.records.iter().map(|f| f.display().to_string()).collect();
    let _ = writeln!(out, "history: {}", files.join(" "));
    let _ = writeln!(out, "judge:   leaselab judge --merge {}", files.join(" "));
    let page = a.dir.join("live.html");
    let _ = writeln!(
        out,
        "picture: leaselab diagram --html {} {}",
        page.display(),
        files.join(" ")
    );
    let _ = writeln!(
        out,
        "again:   {} (the same fault schedule; the servers' timing is real, so the run can differ)",
        again(a)
    );
    (out, judged.exit)
}

/// Operations in the merged history, and the writes sent with a token below the highest
/// granted before them (in the merged order: the server's clock).
fn counts(files: &[PathBuf]) -> Option<(u64, u64)> {
    let mut read = Vec::new();
    for f in files {
        read.push(leaselab_record::read::read_file_for_merge(f).ok()?);
    }
    let merged = leaselab_record::merge::merge(read).ok()?;
    let mut granted = 0u64;
    let mut stale = 0u64;
    for e in &merged.history.events {
        match (&e.op, &e.outcome) {
            // A grant is answered on its own `await` (the merge keeps every call's window).
            (_, Outcome::Granted { token, .. }) => granted = granted.max(token.0),
            (Op::Write { token, .. }, _) if token.0 < granted => stale += 1,
            _ => {}
        }
    }
    let ops = merged
        .history
        .events
        .iter()
        .filter(|e| !matches!(e.op, Op::Await { .. }))
        .count();
    Some((ops as u64, stale))
}

#[cfg(test)]
mod tests {
    use super::duration_ms;

    #[test]
    fn durations_read_with_their_unit_and_range() {
        assert_eq!(duration_ms("20s"), Ok(20_000));
        assert_eq!(duration_ms("1500ms"), Ok(1_500));
        assert_eq!(duration_ms("2m"), Ok(120_000));
        assert!(duration_ms("20").is_err());
        assert!(duration_ms("500ms").is_err());
        assert!(duration_ms("2h").is_err());
        assert!(duration_ms("s").is_err());
    }
}
