//! Live runs (`leaselab live`) as their known results: on each store, the scope fence keeps
//! every check under the pause nemesis, and without it a holder paused past its TTL writes
//! stale data that the resource keeps (I3, acceptance). The records a run writes are judged by
//! `judge --merge` to the verdict the run printed, and no server of the run is left.

mod common;

use leaselab_live::server::{etcd_for_test, redis_for_test};
use leaselab_pg::cluster::postgres_for_test;
use std::path::{Path, PathBuf};

/// A folder of the test's own, emptied: what an earlier run left (its records) must not be
/// taken for this run's.
fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("live-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Processes whose command line names `dir` or that run in it (a `redis-server` runs in its
/// `--dir`; a postmaster names its data directory).
fn processes_under(dir: &Path) -> Vec<String> {
    let needle = format!("{}/", dir.display());
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        if e.file_name().to_string_lossy().parse::<u32>().is_err() {
            continue;
        }
        let cmd = std::fs::read(e.path().join("cmdline"))
            .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
            .unwrap_or_default();
        let cwd = std::fs::read_link(e.path().join("cwd"))
            .map(|p| format!("{}/", p.display()))
            .unwrap_or_default();
        if cmd.contains(&needle) || cwd.starts_with(&needle) {
            found.push(format!("{}: {cmd}", e.file_name().to_string_lossy()));
        }
    }
    found
}

/// Runs `leaselab live` with `args` in a folder of its own; its exit status and output. Then
/// checks that `judge --merge` of its records gives the verdict it printed, with the same exit
/// status, and that none of its servers or holders is left running.
fn live(name: &str, args: &[&str]) -> (i32, String) {
    let dir = scratch(name);
    let d = dir.display().to_string();
    let mut all = vec!["live", "--dir", &d];
    all.extend_from_slice(args);
    let (code, out) = common::leaselab(&all);
    let verdict = |text: &str| {
        text.lines()
            .find_map(|l| l.trim_start().strip_prefix("verdict: "))
            .map(str::to_string)
    };
    let printed = verdict(&out).unwrap_or_else(|| panic!("no verdict:\n{out}"));
    let judge = out
        .lines()
        .find_map(|l| l.strip_prefix("judge:   leaselab "))
        .unwrap_or_else(|| panic!("no judge command:\n{out}"));
    let words: Vec<&str> = judge.split(' ').collect();
    let (jcode, jout) = common::leaselab(&words);
    assert_eq!(
        (jcode, verdict(&jout)),
        (code, Some(printed)),
        "judge --merge of the run's records:\n{jout}\nthe run:\n{out}"
    );
    // The picture it promises: one offline page.
    let picture = out
        .lines()
        .find_map(|l| l.strip_prefix("picture: leaselab "))
        .unwrap_or_else(|| panic!("no picture command:\n{out}"));
    let words: Vec<&str> = picture.split(' ').collect();
    let (pcode, pout) = common::leaselab(&words);
    assert_eq!(pcode, 0, "{pout}");
    let page = std::fs::read_to_string(dir.join("live.html")).expect("the page");
    assert!(page.contains("<html"), "not a page");
    // A recorded history does not say which fence the resource ran: the page must not guess.
    assert!(
        page.contains("fence: not recorded"),
        "the page claims a fence"
    );
    let t0 = std::time::Instant::now();
    while !processes_under(&dir).is_empty() && t0.elapsed() < std::time::Duration::from_secs(60) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(processes_under(&dir), Vec::<String>::new(), "left running");
    (code, out)
}

fn clean(out: &str) -> bool {
    out.contains("verdict: every check holds (I1, I2, I3, acceptance, final)")
}

#[test]
fn redis_with_the_scope_fence_holds_under_pauses() {
    if !postgres_for_test("cli::live::redis_scope") || !redis_for_test("cli::live::redis_scope") {
        return;
    }
    let (code, out) = live(
        "redis-scope",
        &["--store", "redis", "--time", "6s", "--seed", "1"],
    );
    assert!(clean(&out), "{out}");
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("persistence always"), "{out}");
}

#[test]
fn redis_unfenced_keeps_a_paused_holders_stale_write() {
    if !postgres_for_test("cli::live::redis_off") || !redis_for_test("cli::live::redis_off") {
        return;
    }
    let (code, out) = live(
        "redis-off",
        &[
            "--store", "redis", "--fence", "off", "--time", "10s", "--seed", "1",
        ],
    );
    assert!(out.contains("VIOLATION I3"), "{out}");
    assert!(out.contains("VIOLATION acceptance"), "{out}");
    assert_eq!(code, 1, "{out}");
}

#[test]
fn pg_with_the_scope_fence_holds_under_pauses() {
    if !postgres_for_test("cli::live::pg_scope") {
        return;
    }
    let (code, out) = live(
        "pg-scope",
        &["--store", "pg", "--time", "6s", "--seed", "2"],
    );
    assert!(clean(&out), "{out}");
    assert_eq!(code, 0, "{out}");
}

#[test]
fn pg_unfenced_keeps_a_paused_holders_stale_write() {
    if !postgres_for_test("cli::live::pg_off") {
        return;
    }
    let (code, out) = live(
        "pg-off",
        &[
            "--store", "pg", "--fence", "off", "--time", "10s", "--seed", "2",
        ],
    );
    assert!(out.contains("VIOLATION I3"), "{out}");
    assert_eq!(code, 1, "{out}");
}

#[test]
fn a_bad_recipe_is_named_with_its_line() {
    let dir = scratch("bad-recipe");
    let _ = std::fs::create_dir_all(&dir);
    let recipe = dir.join("r.toml");
    std::fs::write(&recipe, "persistence = \"sometimes\"\n").expect("write");
    let r = recipe.display().to_string();
    let d = dir.join("run").display().to_string();
    let (code, out) = common::leaselab(&[
        "live", "--store", "redis", "--recipe", &r, "--dir", &d, "--time", "1s",
    ]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains(&format!("{r}:1: persistence: must be")),
        "{out}"
    );
    let (code, out) = common::leaselab(&["live", "--store", "pg", "--recipe", &r]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("--recipe applies only to --store redis"),
        "{out}"
    );
}

/// Abandoned (two SIGTERMs, more than a second apart) while holders run and the nemesis may
/// hold one stopped: every holder, the Redis server and the clusters are gone, and the run
/// exits 5.
#[test]
fn an_abandoned_live_run_leaves_no_process() {
    if !postgres_for_test("cli::live::abandoned") || !redis_for_test("cli::live::abandoned") {
        return;
    }
    let dir = scratch("abandoned");
    let d = dir.display().to_string();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_leaselab"))
        .current_dir(common::root())
        .args(["live", "--store", "redis", "--time", "60s", "--dir", &d])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("leaselab live");
    // Once the holders have recorded something, the run is under way (its two clusters may
    // take minutes to start on a busy machine: the bound is against a hang only).
    let first = dir.join("records/holder-a.jsonl");
    let t0 = std::time::Instant::now();
    while std::fs::metadata(&first).map_or(true, |m| m.len() == 0) {
        if let Some(st) = child.try_wait().expect("try_wait") {
            panic!("the run ended before its holders started: {st}");
        }
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(600),
            "the run never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let term = || {
        std::process::Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .expect("kill")
    };
    term();
    std::thread::sleep(std::time::Duration::from_millis(1300));
    term();
    let status = child.wait().expect("wait");
    let t0 = std::time::Instant::now();
    while !processes_under(&dir).is_empty() && t0.elapsed() < std::time::Duration::from_secs(60) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(processes_under(&dir), Vec::<String>::new(), "left running");
    use std::os::unix::process::ExitStatusExt;
    assert_eq!((status.code(), status.signal()), (Some(5), None));
}

/// The server killed (kill -9) and started again on its folder: without persistence it comes
/// back empty and hands out token 1 again — I2, certain from the grants alone.
#[test]
fn redis_without_persistence_reuses_a_token_after_a_kill() {
    if !postgres_for_test("cli::live::redis_kill_none")
        || !redis_for_test("cli::live::redis_kill_none")
    {
        return;
    }
    let recipe = common::root()
        .join("examples/stores/redis-no-persistence.toml")
        .display()
        .to_string();
    let (code, out) = live(
        "redis-kill-none",
        &[
            "--store",
            "redis",
            "--recipe",
            &recipe,
            "--nemesis",
            "kill",
            "--time",
            "10s",
            "--seed",
            "1",
        ],
    );
    assert!(out.contains("the lease server: killed 1 times"), "{out}");
    assert!(out.contains("VIOLATION I2"), "{out}");
    assert!(out.contains("persistence none"), "{out}");
    assert_eq!(code, 1, "{out}");
}

/// With the append-only file fsynced before each reply, kills, pauses and partitions break
/// nothing: no check is certainly broken. A call in flight when the server died has an unknown outcome, and
/// the judgement may say what would break if it took effect (exit 6) — never a certain
/// violation, never I2.
#[test]
fn redis_with_persistence_survives_kills_pauses_and_partitions() {
    if !postgres_for_test("cli::live::redis_kill_always")
        || !redis_for_test("cli::live::redis_kill_always")
    {
        return;
    }
    let (code, out) = live(
        "redis-kill-always",
        &[
            "--store",
            "redis",
            "--nemesis",
            "pause,kill,partition",
            "--time",
            "10s",
            "--seed",
            "2",
        ],
    );
    assert!(out.contains("the lease server: killed 2 times"), "{out}");
    assert!(
        out.contains("cut off from its lease server 1 times"),
        "{out}"
    );
    assert!(!out.contains("VIOLATION"), "{out}");
    assert!(!out.contains("POSSIBLE I2"), "{out}");
    assert!(code == 0 || code == 6, "{out}");
}

/// etcd's lock recipe with the key's create revision as the token: pauses, member kills and
/// partitions break nothing certain (a call in flight when a member died may leave a possible
/// violation: exit 6), and never I2.
#[test]
fn etcd_with_the_scope_fence_holds_under_pauses_kills_and_partitions() {
    if !postgres_for_test("cli::live::etcd_scope") || !etcd_for_test("cli::live::etcd_scope") {
        return;
    }
    let (code, out) = live(
        "etcd-scope",
        &[
            "--store",
            "etcd",
            "--nemesis",
            "pause,kill,partition",
            "--time",
            "8s",
            "--seed",
            "2",
        ],
    );
    assert!(
        out.contains("the lease server (a member drawn each time): killed 1 times"),
        "{out}"
    );
    assert!(
        out.contains("3 members; token: the lock key's create revision"),
        "{out}"
    );
    assert!(!out.contains("VIOLATION"), "{out}");
    assert!(!out.contains("POSSIBLE I2"), "{out}");
    assert!(code == 0 || code == 6, "{out}");
}

#[test]
fn etcd_unfenced_keeps_a_paused_holders_stale_write() {
    if !postgres_for_test("cli::live::etcd_off") || !etcd_for_test("cli::live::etcd_off") {
        return;
    }
    let (code, out) = live(
        "etcd-off",
        &[
            "--store", "etcd", "--fence", "off", "--time", "10s", "--seed", "1",
        ],
    );
    assert!(out.contains("VIOLATION I3"), "{out}");
    assert!(out.contains("VIOLATION acceptance"), "{out}");
    assert_eq!(code, 1, "{out}");
}

/// The lease ID as the token: each member draws IDs under a prefix of its own member ID, so a
/// grant by one member is below an earlier grant by another — I2, from the grants alone — and
/// the fence then refuses the later holder's every write.
#[test]
fn etcd_lease_ids_are_no_tokens() {
    if !postgres_for_test("cli::live::etcd_lease_id") || !etcd_for_test("cli::live::etcd_lease_id")
    {
        return;
    }
    let (code, out) = live(
        "etcd-lease-id",
        &[
            "--store",
            "etcd-lease-id",
            "--nemesis",
            "none",
            "--time",
            "5s",
        ],
    );
    assert!(out.contains("VIOLATION I2"), "{out}");
    assert!(!out.contains("VIOLATION I3"), "{out}");
    assert_eq!(code, 1, "{out}");
}

/// The Redis server's clock jumped forward while a paused holder holds the lease: its key
/// expires early and another holder is granted the lease before the first one's expiry, by the
/// history's real clock — I1 — yet the scope fence still keeps every stale write out (no I3,
/// no acceptance violation).
#[test]
fn redis_clock_jumps_give_two_holders_at_once_and_the_fence_holds() {
    if !postgres_for_test("cli::live::redis_clock") || !redis_for_test("cli::live::redis_clock") {
        return;
    }
    let (code, out) = live(
        "redis-clock",
        &[
            "--store",
            "redis",
            "--nemesis",
            "pause,clock",
            "--time",
            "10s",
            "--seed",
            "1",
        ],
    );
    assert!(
        out.contains("the lease server's clock: jumped forward"),
        "{out}"
    );
    assert!(out.contains("VIOLATION I1"), "{out}");
    assert!(!out.contains("VIOLATION I3"), "{out}");
    assert!(!out.contains("VIOLATION acceptance"), "{out}");
    assert_eq!(code, 1, "{out}");
    // Not on PostgreSQL: it keeps the resource too.
    let (code, out) = common::leaselab(&["live", "--store", "pg", "--nemesis", "clock"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("applies to --store redis and etcd"), "{out}");
}

/// etcd's clock is out of libfaketime's reach (a Go binary): the clock nemesis pauses a member
/// instead, and says so; with the scope fence nothing certain breaks, I2 not even possibly.
#[test]
fn etcd_with_a_member_paused_for_its_clock_holds() {
    if !postgres_for_test("cli::live::etcd_clock") || !etcd_for_test("cli::live::etcd_clock") {
        return;
    }
    let (code, out) = live(
        "etcd-clock",
        &[
            "--store",
            "etcd",
            "--nemesis",
            "pause,clock",
            "--time",
            "8s",
            "--seed",
            "2",
        ],
    );
    assert!(
        out.contains("the lease server's clock: out of reach")
            && out.contains("a member paused instead (SIGSTOP, a member drawn each time) ")
            && !out.contains("drawn each time) 0 times"),
        "{out}"
    );
    assert!(!out.contains("VIOLATION"), "{out}");
    assert!(!out.contains("POSSIBLE I2"), "{out}");
    assert!(code == 0 || code == 6, "{out}");
}

/// Redlock with no fault: three holders over five instances, every check holds — the
/// recorded holdings end a drift allowance before their keys can, so no grant is early.
#[test]
fn redlock_without_faults_holds() {
    if !postgres_for_test("cli::live::redlock_clean") || !redis_for_test("cli::live::redlock_clean")
    {
        return;
    }
    let (code, out) = live(
        "redlock-clean",
        &["--store", "redlock", "--nemesis", "none", "--time", "4s"],
    );
    assert!(
        out.contains(
            "redlock (5 Redis instances, persistence always; no token: its value is random"
        ),
        "{out}"
    );
    assert!(clean(&out), "{out}");
    assert_eq!(code, 0, "{out}");
}

/// Redlock and a holder paused past its validity: its value cannot fence, the resource keeps
/// its stale write (I3, acceptance). A fence is refused: there is no token to give it.
#[test]
fn redlock_keeps_a_paused_holders_stale_write() {
    if !postgres_for_test("cli::live::redlock_pause") || !redis_for_test("cli::live::redlock_pause")
    {
        return;
    }
    let (code, out) = live(
        "redlock-pause",
        &["--store", "redlock", "--time", "10s", "--seed", "1"],
    );
    assert!(out.contains(", fence off, "), "{out}");
    assert!(out.contains("VIOLATION I3"), "{out}");
    assert!(out.contains("VIOLATION acceptance"), "{out}");
    assert_eq!(code, 1, "{out}");
    let (code, out) = common::leaselab(&["live", "--store", "redlock", "--fence", "scope"]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("Redlock hands out no token to fence with"),
        "{out}"
    );
}

/// Kleppmann's example on three instances: holder-a locks a bare majority (cut off from the
/// third), that majority's last instance jumps its clock, and holder-b locks it and the one
/// holder-a never reached — two holders at once by real time (I1); holder-a's write then lands
/// after holder-b's (I3).
#[test]
fn redlock_kleppmanns_example_gives_two_holders_at_once() {
    if !postgres_for_test("cli::live::redlock_kleppmann")
        || !redis_for_test("cli::live::redlock_kleppmann")
    {
        return;
    }
    let (code, out) = live(
        "redlock-kleppmann",
        &[
            "--store",
            "redlock",
            "--instances",
            "3",
            "--holders",
            "2",
            "--nemesis",
            "kleppmann",
            "--time",
            "4s",
        ],
    );
    assert!(
        out.contains("Kleppmann's example: cut off from the last 1 instances until it held the lock on the others, then the last of those had its clock jumped forward 1500 ms"),
        "{out}"
    );
    // The two grants overlap by real time; which of them the message names first depends on
    // whether holder-b's acquire was already under way when holder-a's returned (then neither
    // is definitely first), which the servers' real timing decides.
    let two_holders = out
        .lines()
        .filter(|l| l.contains("VIOLATION I1: lease report-job: "))
        .any(|l| l.contains("holder-a") && l.contains("holder-b"));
    assert!(two_holders, "{out}");
    assert_eq!(code, 1, "{out}");
    let (code, out) = common::leaselab(&["live", "--store", "redis", "--nemesis", "kleppmann"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("it needs --store redlock"), "{out}");
}

/// The Redis server's clock running fast for a while (`drift`: its keys' time to live running
/// down faster) while holders pause: leases end early by the server's clock — two holders at
/// once by the history's real clock (I1) — and the scope fence still keeps every stale write
/// out. Not on etcd (its clock is out of reach).
#[test]
fn redis_clock_running_fast_gives_two_holders_at_once_and_the_fence_holds() {
    if !postgres_for_test("cli::live::redis_drift") || !redis_for_test("cli::live::redis_drift") {
        return;
    }
    let (code, out) = live(
        "redis-drift",
        &[
            "--store",
            "redis",
            "--nemesis",
            "pause,drift",
            "--time",
            "10s",
            "--seed",
            "1",
        ],
    );
    assert!(
        out.contains("the lease server's clock rate: fast "),
        "{out}"
    );
    assert!(!out.contains("clock rate: fast 0 times"), "{out}");
    assert!(out.contains("VIOLATION I1"), "{out}");
    assert!(!out.contains("VIOLATION I3"), "{out}");
    assert!(!out.contains("VIOLATION acceptance"), "{out}");
    assert_eq!(code, 1, "{out}");
    let (code, out) = common::leaselab(&["live", "--store", "etcd", "--nemesis", "drift"]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("applies to --store redis and redlock"),
        "{out}"
    );
}

/// The source design with its lease database crashed now and then (an immediate stop, then WAL
/// recovery) while holders pause: the logged lease table keeps its counter, so no token comes
/// twice, and nothing certain breaks (a call in flight at a crash may leave a violation
/// possible: exit 6).
#[test]
fn pg_with_the_scope_fence_holds_under_pauses_and_lease_database_crashes() {
    if !postgres_for_test("cli::live::pg_kill") {
        return;
    }
    let (code, out) = live(
        "pg-kill",
        &[
            "--store",
            "pg",
            "--nemesis",
            "pause,kill",
            "--time",
            "10s",
            "--seed",
            "2",
        ],
    );
    assert!(
        out.contains("the lease database (PostgreSQL's lease26 cluster: an immediate stop, then WAL recovery; the resource's cluster goes on): killed ")
            && !out.contains("goes on): killed 0 times"),
        "{out}"
    );
    assert!(!out.contains("VIOLATION"), "{out}");
    assert!(!out.contains("POSSIBLE I2"), "{out}");
    assert!(code == 0 || code == 6, "{out}");
}
