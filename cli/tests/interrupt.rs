//! Ctrl-C (SIGINT) and SIGTERM on the commands that run throwaway PostgreSQL clusters: the
//! first signal lets the running unit finish and the command reports what it did (a summary,
//! exit 5); a second abandons it at once. Either way no server of it is left running and its
//! cluster folders are gone. A run killed outright (SIGKILL: none of its own code runs) leaves
//! nothing either: its watchdog stops what it started.

use leaselab_pg::cluster::postgres_for_test;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;

fn scratch(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("interrupt")
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch dir");
    d
}

fn start(args: &[&str], dir: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_leaselab"))
        .current_dir(common::root())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("leaselab {args:?} in {}: {e}", dir.display()))
}

/// Processes whose command line names `dir` (the postmasters of its clusters).
fn servers_under(dir: &Path) -> Vec<String> {
    // With the separator: `…/lab` must not match `…/lab-once`'s servers.
    let needle = format!("{}/", dir.display());
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if name.parse::<u32>().is_err() {
            continue;
        }
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        if cmd.contains("postgres") && cmd.contains(&needle) {
            found.push(format!("{name}: {cmd}"));
        }
    }
    found
}

/// Waits until both clusters of `pid` under `dir` are up (their servers are running), then
/// `settle` more: the command is mid-run.
fn wait_running(dir: &Path, pid: u32, settle: Duration) {
    let t0 = Instant::now();
    let up = |name: &str| {
        dir.join(format!("{name}-{pid}"))
            .join("data")
            .join("postmaster.pid")
            .exists()
    };
    while !(up("lease26") && up("res26")) {
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "the clusters under {} never came up",
            dir.display()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(settle);
}

fn signal(child: &Child, sig: &str) {
    let st = Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(st.success(), "kill {sig}");
}

/// How far apart the signals of one test are: farther than the handler's window in which a
/// signal is the same interrupt as the first (`timeout -s INT` and group signals deliver one
/// twice), so that a second one is a second Ctrl-C.
const APART: Duration =
    Duration::from_millis(leaselab::interrupt::SAME_INTERRUPT.as_millis() as u64 + 300);

/// Runs `args` (with `--pg-dir DIR`), sends `signals` once it is mid-run, and returns its exit
/// code and output, after checking that nothing of it is left under DIR.
fn interrupted(name: &str, args: &[&str], signals: &[&str]) -> (Option<i32>, String, String) {
    interrupted_apart(name, args, signals, APART)
}

/// [`interrupted`], the signals `apart`.
fn interrupted_apart(
    name: &str,
    args: &[&str],
    signals: &[&str],
    apart: Duration,
) -> (Option<i32>, String, String) {
    let dir = scratch(name);
    let mut all: Vec<&str> = args.to_vec();
    let d = dir.display().to_string();
    all.extend(["--pg-dir", &d]);
    let child = start(&all, &dir);
    wait_running(&dir, child.id(), Duration::from_secs(3));
    for s in signals {
        signal(&child, s);
        std::thread::sleep(apart);
    }
    let out = child.wait_with_output().expect("waits");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert_eq!(
        servers_under(&dir),
        Vec::<String>::new(),
        "{name}: servers left running\n{stdout}{stderr}"
    );
    let left: Vec<_> = std::fs::read_dir(&dir)
        .expect("dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.starts_with("lease26-") || n.starts_with("res26-"))
        .collect();
    assert!(left.is_empty(), "{name}: cluster folders left: {left:?}");
    (out.status.code(), stdout, stderr)
}

#[test]
fn ctrl_c_on_diff_gen_finishes_the_schedule_reports_and_leaves_no_server() {
    if !postgres_for_test("cli::ctrl_c_on_diff_gen") {
        return;
    }
    let (code, out, err) = interrupted(
        "diff-gen",
        &["diff", "--gen", "5000", "--seed", "3"],
        &["-INT"],
    );
    assert_eq!(code, Some(5), "{out}{err}");
    assert!(
        err.contains("leaselab diff: stopping — finishing the running schedule"),
        "{err}"
    );
    assert!(out.starts_with("SUMMARY generated="), "{out}");
    assert!(out.contains("divergences=0"), "{out}");
    assert!(out.contains(" interrupted (of 5000"), "{out}");
    let resume = out
        .lines()
        .find_map(|l| l.strip_prefix("resume: leaselab diff --gen 5000 --seed 3 --steps 40 "))
        .unwrap_or_else(|| panic!("no resume line: {out}"));
    assert!(resume.contains(" --from "), "{resume}");
}

/// Two SIGTERMs 50 ms apart (a supervisor's, to the process and to its group) are one: the
/// lab finishes its running case, leaves its JSON summary, exits 5, and nothing is left.
/// (A second one later abandons it: `abandoning_the_lab_while_a_holder_is_stopped…`.)
#[test]
fn sigterm_twice_at_once_on_the_lab_is_one_interrupt_and_leaves_no_server() {
    if !postgres_for_test("cli::sigterm_twice_on_the_lab") {
        return;
    }
    let json = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("interrupt-lab.json");
    let _ = std::fs::remove_file(&json);
    let j = json.display().to_string();
    let (code, out, err) = interrupted_apart(
        "lab",
        &["lab", "--backend", "pg", "--json", &j],
        &["-TERM", "-TERM"],
        Duration::from_millis(50),
    );
    assert_eq!(code, Some(5), "{out}{err}");
    assert!(
        err.contains("leaselab lab: stopping") && !err.contains("leaselab lab: interrupted"),
        "{err}"
    );
    let summary = std::fs::read_to_string(&json).expect("the summary is written");
    assert!(
        summary.contains("\"verdict\":\"interrupted\"") && summary.contains("\"exit\":5"),
        "{summary}"
    );
}

#[test]
fn ctrl_c_on_the_lab_finishes_the_case_and_prints_what_ran() {
    if !postgres_for_test("cli::ctrl_c_on_the_lab") {
        return;
    }
    let (code, out, err) = interrupted("lab-once", &["lab", "--backend", "pg"], &["-INT"]);
    assert_eq!(code, Some(5), "{out}{err}");
    // Which case was running when the signal came is the machine's business; that every case
    // is either reported whole or counted as not run is not.
    let summary = out.lines().last().unwrap_or_default();
    let n = |key: &str| -> usize {
        summary
            .split([' ', '='])
            .skip_while(|w| *w != key)
            .nth(1)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {key} in {summary:?}"))
    };
    let not_run: usize = summary
        .split("interrupted: ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("not an interrupted summary: {summary:?}"));
    assert!(summary.ends_with(" of 13 cases not run"), "{summary}");
    assert!(not_run >= 1, "{summary}");
    assert_eq!(n("passed") + n("failed") + not_run, 13, "{summary}");
    assert_eq!(
        out.matches("CASE ").count(),
        n("passed") + n("failed"),
        "{out}"
    );
}

#[test]
fn ctrl_c_on_audit_reports_what_ran() {
    if !postgres_for_test("cli::ctrl_c_on_audit") {
        return;
    }
    let (code, out, err) = interrupted(
        "audit",
        &["audit", "examples/leases/seed.toml", "--gen", "5000"],
        &["-INT"],
    );
    assert_eq!(code, Some(5), "{out}{err}");
    assert!(
        out.contains("SUMMARY spec=examples/leases/seed.toml generated="),
        "{out}"
    );
    assert!(out.contains(" interrupted (of 5000"), "{out}");
    // Where it goes on: after the schedules it ran, as printed — and the printed command runs,
    // from there (interrupted in its turn).
    let ran: u64 = out
        .split("generated=")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count: {out}"));
    let resume = out
        .lines()
        .find_map(|l| l.strip_prefix("resume: leaselab "))
        .unwrap_or_else(|| panic!("no resume line: {out}"));
    let from = format!(" --from {}", ran + 1);
    assert!(resume.ends_with(&from), "{resume}");
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("interrupt")
        .join("audit");
    let args: Vec<&str> = resume.split(' ').collect();
    let child = start(&args, &dir);
    wait_running(&dir, child.id(), Duration::from_secs(2));
    signal(&child, "-INT");
    let again = child.wait_with_output().expect("waits");
    let again_out = String::from_utf8_lossy(&again.stdout);
    assert_eq!(again.status.code(), Some(5), "{again_out}");
    // (A summary names a start other than the first schedule.)
    let from_note = match ran {
        0 => String::new(),
        _ => format!(" from={}", ran + 1),
    };
    assert!(
        again_out.contains(&format!("{from_note} interrupted (of 5000")),
        "{again_out}"
    );
    assert_eq!(servers_under(&dir), Vec::<String>::new(), "{again_out}");
}

/// Polls until `gone` holds (what a killed owner left has ended), for at most two minutes.
fn until_gone(what: &str, gone: impl Fn() -> bool) {
    let t0 = Instant::now();
    while !gone() {
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "{what} still there two minutes after its owner was killed"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The folders left in `dir`.
fn folders(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .expect("dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

/// SIGKILL: the command runs no code of its own, yet its watchdog stops both servers and
/// removes their folders; the next run in the same folder finds nothing to reap.
#[test]
fn a_killed_run_leaves_no_server() {
    if !postgres_for_test("cli::a_killed_run_leaves_no_server") {
        return;
    }
    let dir = scratch("killed");
    let d = dir.display().to_string();
    let mut child = start(&["diff", "--gen", "5000", "--pg-dir", &d], &dir);
    wait_running(&dir, child.id(), Duration::from_millis(500));
    signal(&child, "-KILL");
    let st = child.wait().expect("waits");
    assert_eq!(st.code(), None, "killed by the signal");
    until_gone("a server", || servers_under(&dir).is_empty());
    until_gone("a cluster folder", || folders(&dir).is_empty());
    let (code, out) = common::leaselab(&["diff", "traces/F4.trace", "--pg-dir", &d]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(servers_under(&dir), Vec::<String>::new(), "{out}");
    assert_eq!(folders(&dir), Vec::<String>::new(), "{out}");
}

/// A search on two workers ends with nothing under its folder: the second worker's clusters sit
/// in a folder of their own (`worker-1`), which goes with them.
#[test]
fn a_finished_run_on_two_workers_leaves_no_folder() {
    if !postgres_for_test("cli::a_finished_run_on_two_workers_leaves_no_folder") {
        return;
    }
    let dir = scratch("two-workers-done");
    let d = dir.display().to_string();
    let (code, out) = common::leaselab(&["diff", "--gen", "3", "--jobs", "2", "--pg-dir", &d]);
    assert_eq!(code, 0, "{out}");
    until_gone("a worker's folder", || folders(&dir).is_empty());
}

/// Two signals 50 ms apart on the PostgreSQL-bound searches — a supervisor signalling the
/// process and then its group — are one interrupt: the running schedule finishes, the summary
/// line is written, exit 5, nothing left (checked by [`interrupted_apart`]). (A second Ctrl-C
/// later abandons a run whose unit is still running: the lab tests below, and a slow sweep in
/// `sim_cli.rs`.)
#[test]
fn two_signals_close_together_on_diff_gen_are_one_interrupt_and_leave_no_server() {
    if !postgres_for_test("cli::a_second_signal_on_diff_gen") {
        return;
    }
    let (code, out, err) = interrupted_apart(
        "diff-gen-twice",
        &["diff", "--gen", "5000", "--seed", "4"],
        &["-TERM", "-TERM"],
        Duration::from_millis(50),
    );
    assert_eq!(code, Some(5), "{out}{err}");
    assert!(!err.contains("leaselab diff: interrupted"), "{err}");
    assert!(
        out.contains("SUMMARY generated=") && out.contains(" interrupted (of 5000"),
        "{out}"
    );
}

#[test]
fn two_signals_close_together_on_audit_gen_are_one_interrupt_and_leave_no_server() {
    if !postgres_for_test("cli::a_second_signal_on_audit_gen") {
        return;
    }
    let (code, out, err) = interrupted_apart(
        "audit-twice",
        &["audit", "examples/leases/seed.toml", "--gen", "5000"],
        &["-INT", "-INT"],
        Duration::from_millis(50),
    );
    assert_eq!(code, Some(5), "{out}{err}");
    assert!(!err.contains("leaselab audit: interrupted"), "{err}");
    assert!(
        out.contains("SUMMARY spec=") && out.contains(" interrupted (of 5000"),
        "{out}"
    );
}

/// A `leaselab holder` process of a lab run under `dir`: its pid, its state and its command
/// line (for a failure's message).
#[derive(Debug, PartialEq, Eq)]
struct HolderProcess {
    pid: u32,
    state: char,
    cmdline: String,
}

/// Every `leaselab holder` process whose command line names `dir` (its connection strings do).
/// The subcommand itself is matched, not a word anywhere in the line: a folder named
/// `…-holder` must not make a server or a shell under it count as a holder.
fn holders_under(dir: &Path) -> Vec<HolderProcess> {
    let needle = format!("{}/", dir.display());
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let argv: Vec<String> = cmd
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        let cmdline = argv.join(" ");
        if argv.get(1).map(String::as_str) != Some("holder") || !cmdline.contains(&needle) {
            continue;
        }
        // `/proc/PID/stat`: "pid (comm) S …" — the state follows the last ')'.
        let state = std::fs::read_to_string(e.path().join("stat"))
            .ok()
            .and_then(|s| {
                s.rsplit_once(')')
                    .and_then(|(_, r)| r.trim().chars().next())
            })
            .unwrap_or('?');
        found.push(HolderProcess {
            pid,
            state,
            cmdline,
        });
    }
    found
}

/// When a signal of [`lab_with_a_stopped_holder`] is sent.
#[derive(Clone, Copy)]
enum When {
    /// [`APART`] after the one before (the first: as soon as holder-a is stopped).
    Apart,
    /// Once holder-b has started (its record file exists), and at least [`APART`] after the one
    /// before: the lab's main thread then talks to holder-b, and next to holder-a's stdin.
    HolderBRuns,
}

/// Runs F4 of the lab until holder-a is stopped with SIGSTOP, sends `signals`, and returns the
/// lab's exit status once it ended, after checking that no holder process and no server of it
/// is left (a killed process may take a moment to be reaped by init, a killed owner's watchdog
/// a moment to stop its servers).
fn lab_with_a_stopped_holder(name: &str, signals: &[(&str, When)]) -> std::process::ExitStatus {
    let dir = scratch(name);
    let d = dir.display().to_string();
    let mut child = start(
        &["lab", "--backend", "pg", "--case", "F4", "--pg-dir", &d],
        &dir,
    );
    let t0 = Instant::now();
    loop {
        let stopped = holders_under(&dir).iter().any(|h| h.state == 'T');
        if stopped {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(180),
            "holder-a was never stopped"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let holder_b = dir.join("records/F4/holder-b.jsonl");
    let mut last: Option<Instant> = None;
    for (s, when) in signals {
        if let Some(last) = last {
            std::thread::sleep(APART.saturating_sub(last.elapsed()));
        }
        if let When::HolderBRuns = when {
            let t0 = Instant::now();
            while !holder_b.exists() {
                assert!(
                    t0.elapsed() < Duration::from_secs(60),
                    "holder-b never started"
                );
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        signal(&child, s);
        last = Some(Instant::now());
    }
    // Not `wait_with_output`: a holder left behind keeps the inherited stderr open.
    let t0 = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().expect("try_wait") {
            break st;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "the lab did not stop"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let t0 = Instant::now();
    while !holders_under(&dir).is_empty() && t0.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let left = holders_under(&dir);
    for h in &left {
        let _ = Command::new("kill")
            .args(["-KILL", &h.pid.to_string()])
            .status();
    }
    assert_eq!(left, Vec::new(), "holder processes outlived the lab");
    until_gone("a server", || servers_under(&dir).is_empty());
    status
}

/// Abandoned (two SIGTERMs) while F4's holder-a is stopped with SIGSTOP: the lab kills its
/// holder processes too — a stopped one would otherwise wait for ever — and leaves no server.
#[test]
fn abandoning_the_lab_while_a_holder_is_stopped_leaves_no_process() {
    if !postgres_for_test("cli::abandoning_the_lab_while_a_holder_is_stopped") {
        return;
    }
    let status = lab_with_a_stopped_holder(
        "lab-stopped-holder",
        &[("-TERM", When::Apart), ("-TERM", When::Apart)],
    );
    assert_eq!((status.code(), status.signal()), (Some(5), None));
}

/// Abandoned once holder-b runs: the handler kills both holders while the lab's main thread
/// goes on to tell holder-a (dead now) to release. That write into a closed pipe is an error
/// the run reports, not a SIGPIPE that ends the lab by a signal before it exits 5.
#[test]
fn abandoning_the_lab_while_holder_b_runs_exits_5() {
    if !postgres_for_test("cli::abandoning_the_lab_while_holder_b_runs") {
        return;
    }
    let status = lab_with_a_stopped_holder(
        "lab-holder-b",
        &[("-TERM", When::Apart), ("-TERM", When::HolderBRuns)],
    );
    assert_eq!((status.code(), status.signal()), (Some(5), None));
}

/// The same lab killed outright: its watchdog kills the holders and stops the servers.
#[test]
fn a_killed_lab_leaves_no_holder_and_no_server() {
    if !postgres_for_test("cli::a_killed_lab_leaves_no_holder_and_no_server") {
        return;
    }
    let status = lab_with_a_stopped_holder("lab-killed", &[("-KILL", When::Apart)]);
    assert_eq!(status.code(), None, "killed by the signal");
}

/// Ctrl-C at a terminal signals the whole foreground process group. During F4 (two holder
/// processes, holder-a stopped) it reaches the lab alone — its holders run in process groups
/// of their own — so the running case finishes whole and the lab exits 5 with the cases so far
/// reported and the rest counted as not run.
#[test]
fn ctrl_c_at_the_terminal_during_f4_finishes_the_case() {
    use std::os::unix::process::CommandExt;
    if !postgres_for_test("cli::ctrl_c_at_the_terminal_during_f4") {
        return;
    }
    let dir = scratch("lab-terminal");
    let d = dir.display().to_string();
    let child = Command::new(env!("CARGO_BIN_EXE_leaselab"))
        .current_dir(common::root())
        .args(["lab", "--backend", "pg", "--pg-dir", &d])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("leaselab lab");
    let t0 = Instant::now();
    while !holders_under(&dir).iter().any(|h| h.state == 'T') {
        assert!(
            t0.elapsed() < Duration::from_secs(180),
            "holder-a was never stopped"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let st = Command::new("kill")
        .args(["-INT", "--", &format!("-{}", child.id())])
        .status()
        .expect("kill runs");
    assert!(st.success());
    let out = child.wait_with_output().expect("waits");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(5), "{stdout}{stderr}");
    assert!(!stdout.contains("exited early"), "{stdout}");
    assert!(!stdout.contains("FAIL"), "{stdout}");
    assert!(stdout.contains("CASE F4 "), "{stdout}");
    let summary = stdout.lines().last().unwrap_or_default();
    assert!(
        summary.contains(" failed=0 ") && summary.ends_with(" of 13 cases not run"),
        "{stdout}{stderr}"
    );
    assert_eq!(servers_under(&dir), Vec::<String>::new());
    assert!(holders_under(&dir).is_empty());
}

/// Output into a pipe nobody reads any more (`leaselab lab | head -1` once `head` is done) ends
/// the process by SIGPIPE, quietly, as any Unix tool — and only that: a closed pipe to a killed
/// holder is an error the run reports (`abandoning_the_lab_while_holder_b_runs_exits_5`).
#[test]
fn output_nobody_reads_ends_the_process_quietly() {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_leaselab"))
        .current_dir(common::root())
        .arg("lab")
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .expect("leaselab lab runs");
    assert_eq!(
        (out.status.code(), out.status.signal()),
        (None, Some(13)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}

/// Ctrl-C while the first clusters of a four-worker search start: no other worker's clusters
/// are started after it (on a loaded machine each pair can take a minute), the search runs no
/// schedule, reports the interruption and exits 5, and nothing is left. The signal goes as soon
/// as the first cluster's folder appears; `worker-K` folders are watched until the end.
#[test]
fn ctrl_c_while_the_clusters_start_starts_no_more() {
    if !postgres_for_test("cli::ctrl_c_while_the_clusters_start") {
        return;
    }
    let dir = scratch("starting");
    let d = dir.display().to_string();
    let mut child = start(
        &[
            "audit",
            "examples/leases/seed.toml",
            "--gen",
            "5000",
            "--jobs",
            "4",
            "--pg-dir",
            &d,
        ],
        &dir,
    );
    let first = dir.join(format!("lease26-{}", child.id()));
    let t0 = Instant::now();
    while !first.exists() {
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "{} never appeared",
            first.display()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    signal(&child, "-INT");
    let mut workers_seen = Vec::new();
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait") {
            break st;
        }
        workers_seen.extend(
            folders(&dir)
                .into_iter()
                .filter(|f| f.starts_with("worker-")),
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    let out = child.wait_with_output().expect("output");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(status.code(), Some(5), "{stdout}{stderr}");
    workers_seen.dedup();
    assert_eq!(workers_seen, Vec::<String>::new(), "{stdout}{stderr}");
    assert!(
        stdout.contains("SUMMARY spec=examples/leases/seed.toml generated=0 ")
            && stdout.contains(" interrupted (of 5000"),
        "{stdout}{stderr}"
    );
    until_gone("a server", || servers_under(&dir).is_empty());
    until_gone("a cluster folder", || folders(&dir).is_empty());
}
