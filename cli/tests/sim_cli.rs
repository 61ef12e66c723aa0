//! `leaselab sim` end to end: exit status per outcome class, reproduce commands that recreate
//! their traces byte for byte (full and shrunk, both drivers), sweeps that write their failures
//! into a folder of their own, shards that add up to the whole range, Ctrl-C with a resume
//! point, and clear errors for bad arguments.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn leaselab(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_leaselab"))
        .args(args)
        .output()
        .expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

fn tmp(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// Every (saved trace, printed reproduce command) pair of a sweep's output.
fn printed_pairs(out: &str) -> Vec<(PathBuf, String)> {
    let mut pairs = Vec::new();
    let mut saved: Option<PathBuf> = None;
    for line in out.lines() {
        let l = line.trim_start();
        if let Some(rest) = l
            .strip_prefix("trace: ")
            .or_else(|| l.strip_prefix("shrunk: "))
        {
            let path = rest.split(" (").next().expect("path");
            saved = Some(PathBuf::from(path));
        } else if let Some(cmd) = l.strip_prefix("reproduce: ") {
            let p = saved
                .take()
                .unwrap_or_else(|| panic!("a reproduce line without its trace: {line}"));
            pairs.push((p, cmd.to_string()));
        }
    }
    pairs
}

/// Runs a printed command as printed (plus `--trace-out`) and compares the trace it writes
/// with the saved one.
fn reproduces(saved: &Path, cmd: &str, scratch: &Path) {
    let words: Vec<&str> = cmd.split_whitespace().collect();
    assert_eq!(words.first(), Some(&"leaselab"), "{cmd}");
    let again = scratch.join("again.trace");
    let mut args: Vec<&str> = words[1..].to_vec();
    let out_arg = again.to_string_lossy().into_owned();
    args.extend(["--quiet", "--trace-out", &out_arg]);
    let (code, out) = leaselab(&args);
    assert!(
        code == 0 || code == 1 || code == 3,
        "{cmd}: exit {code}: {out}"
    );
    let (a, b) = (
        std::fs::read(saved).expect("saved trace"),
        std::fs::read(&again).expect("trace written again"),
    );
    assert!(a == b, "`{cmd}` does not recreate {}", saved.display());
}

#[test]
fn every_reproduce_command_a_sweep_prints_recreates_its_trace() {
    for (driver, range) in [("fast", "0..40"), ("turmoil", "0..12")] {
        let dir = tmp(&format!("repro-{driver}"));
        let d = dir.to_string_lossy().into_owned();
        let (code, out) = leaselab(&[
            "sim", "--seeds", range, "--fence", "off", "--driver", driver, "--out", &d,
        ]);
        assert_eq!(code, 1, "{out}");
        let pairs = printed_pairs(&out);
        assert!(
            pairs.iter().any(|(_, c)| c.contains("--from-trace"))
                && pairs.iter().any(|(_, c)| c.contains("--seed ")),
            "{driver}: both a full and a shrunk failure were printed: {out}"
        );
        for (saved, cmd) in &pairs {
            reproduces(saved, cmd, &dir);
        }
    }
}

#[test]
fn a_trace_runs_again_from_its_setup_under_the_other_driver() {
    let dir = tmp("from-trace-driver");
    std::fs::create_dir_all(&dir).expect("dir");
    let fast = dir.join("fast.trace");
    let (code, out) = leaselab(&[
        "sim",
        "--seed",
        "4",
        "--safety-ms",
        "10000",
        "--quiet",
        "--trace-out",
        &fast.to_string_lossy(),
    ]);
    assert_eq!(code, 0, "{out}");
    let tur = dir.join("turmoil.trace");
    let (code, out) = leaselab(&[
        "sim",
        "--from-trace",
        &fast.to_string_lossy(),
        "--driver",
        "turmoil",
        "--quiet",
        "--trace-out",
        &tur.to_string_lossy(),
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(
            "SEED 4 :: leaselab sim --seed 4 --fence scope --safety-ms 10000 --driver turmoil"
        ),
        "{out}"
    );
    let direct = dir.join("direct.trace");
    let (code, _) = leaselab(&[
        "sim",
        "--seed",
        "4",
        "--safety-ms",
        "10000",
        "--driver",
        "turmoil",
        "--quiet",
        "--trace-out",
        &direct.to_string_lossy(),
    ]);
    assert_eq!(code, 0);
    assert!(
        std::fs::read(&tur).expect("t") == std::fs::read(&direct).expect("d"),
        "the setup read back is the setup the seed derives"
    );
}

#[test]
fn sweep_with_scope_fence_passes() {
    let dir = tmp("sweep-scope");
    let (code, out) = leaselab(&["sim", "--seeds", "0..50", "--out", &dir.to_string_lossy()]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("SUMMARY seeds=50 failed=0"), "{out}");
    assert!(
        out.contains("sometimes, runs in which it fired (of 50):")
            && out.contains("sometimes, occurrences over all runs:"),
        "{out}"
    );
}

fn fail_seeds(out: &str) -> BTreeSet<u64> {
    out.lines()
        .filter_map(|l| l.strip_prefix("FAIL seed="))
        .filter_map(|r| r.split(' ').next()?.parse().ok())
        .collect()
}

/// The folder a sweep writes into, from its summary line.
fn folder(out: &str) -> PathBuf {
    let l = out
        .lines()
        .find(|l| l.starts_with("SUMMARY "))
        .expect("summary");
    PathBuf::from(l.split("folder=").nth(1).expect("folder="))
}

#[test]
fn a_sweep_again_into_the_same_folder_leaves_no_stale_failures() {
    let dir = tmp("stale");
    let d = dir.to_string_lossy().into_owned();
    let args = [
        "sim",
        "--seeds",
        "0..20",
        "--fence",
        "off",
        "--no-shrink",
        "--out",
        &d,
    ];
    let (_, out) = leaselab(&args);
    let f = folder(&out);
    std::fs::write(f.join("seed-999.trace"), "stale").expect("plant");
    let (code, out) = leaselab(&args);
    assert_eq!(code, 1, "{out}");
    let on_disk: BTreeSet<String> = std::fs::read_dir(&f)
        .expect("folder")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".trace"))
        .collect();
    let manifest = std::fs::read_to_string(f.join("MANIFEST")).expect("manifest");
    let listed: BTreeSet<String> = manifest
        .lines()
        .filter_map(|l| l.split("trace=").nth(1))
        .map(|p| {
            Path::new(p.split(' ').next().expect("path"))
                .file_name()
                .expect("name")
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    assert_eq!(
        on_disk, listed,
        "only this sweep's failures are in its folder"
    );
    assert!(
        manifest.lines().any(|l| l == "status complete"),
        "{manifest}"
    );
    let other = leaselab(&["sim", "--seeds", "20..40", "--fence", "off", "--out", &d]).1;
    assert_ne!(folder(&other), f, "another range gets a folder of its own");
}

#[test]
fn shards_of_a_range_find_exactly_the_failures_of_the_whole_range() {
    let dir = tmp("shards");
    let run = |shard: &str, out: &Path| {
        let (_, out) = leaselab(&[
            "sim",
            "--seeds",
            "0..90",
            "--fence",
            "off",
            "--no-shrink",
            "--shard",
            shard,
            "--out",
            &out.to_string_lossy(),
        ]);
        out
    };
    let whole = run("0/1", &dir.join("whole"));
    let whole_dir = folder(&whole);
    let mut union = BTreeSet::new();
    for k in 0..3 {
        let out = run(&format!("{k}/3"), &dir.join("shards"));
        let seeds = fail_seeds(&out);
        for s in &seeds {
            assert_eq!(s % 3, k, "shard {k}/3 ran seed {s}");
            let name = format!("seed-{s}.trace");
            assert!(
                std::fs::read(folder(&out).join(&name)).expect("shard trace")
                    == std::fs::read(whole_dir.join(&name)).expect("whole trace"),
                "{name}: same bytes from the shard and the whole range"
            );
        }
        union.extend(seeds);
    }
    let expected = fail_seeds(&whole);
    assert!(!expected.is_empty());
    assert_eq!(union, expected);
    // The scale-out recipes merge shard folders with deploy/collect.sh.
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../deploy/collect.sh");
    let out = Command::new("bash")
        .arg(&script)
        .arg(dir.join("shards"))
        .output()
        .expect("bash runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "failures found: {text}");
    assert!(
        text.contains(&format!(
            "TOTAL shards=3 seeds=90 failures={} unfinished=0",
            expected.len()
        )),
        "{text}"
    );
    for s in &expected {
        assert!(text.contains(&format!("seed={s} trace=")), "{text}");
    }
}

/// Starts `leaselab ARGS`, waits until its `manifest` lists 3 failures, sends `signal`, and
/// returns its exit code and stdout.
#[cfg(unix)]
fn signal_once_failures_are_written(
    args: &[&str],
    manifest: &Path,
    signal: &str,
) -> (Option<i32>, String) {
    use std::io::Read as _;
    let mut child = Command::new(env!("CARGO_BIN_EXE_leaselab"))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("starts");
    // Waits for the event itself, for up to three minutes: a busy machine sweeps slowly.
    let found_some = (0..9000).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::read_to_string(manifest).is_ok_and(|m| m.matches("failure ").count() >= 3)
    });
    assert!(found_some, "the sweep wrote failures while running");
    let st = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(st.success());
    let code = child.wait().expect("exits").code();
    let mut out = String::new();
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut out)
        .expect("read");
    (code, out)
}

#[cfg(unix)]
#[test]
fn ctrl_c_leaves_the_failures_found_a_summary_and_the_resume_point() {
    let dir = tmp("interrupt");
    let d = dir.to_string_lossy().into_owned();
    let manifest = dir.join("off-fast-seeds-0../MANIFEST");
    let (code, out) = signal_once_failures_are_written(
        &[
            "sim",
            "--seeds",
            "0..",
            "--fence",
            "off",
            "--no-shrink",
            "--out",
            &d,
        ],
        &manifest,
        "-INT",
    );
    assert_eq!(code, Some(5), "interrupted: {out}");
    let line = out
        .lines()
        .find(|l| l.starts_with("INTERRUPTED: seeds from "))
        .unwrap_or_else(|| panic!("no resume point: {out}"));
    let next: u64 = line["INTERRUPTED: seeds from ".len()..]
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .expect("seed");
    // The resume command is the sweep's own command (every option of the run, the open range
    // still open, the same --out) with --resume: it goes on in the same folder.
    assert!(
        line.ends_with(&format!(
            "resume: leaselab sim --seeds 0.. --fence off --out {d} --no-shrink --resume"
        )),
        "{line}"
    );
    let m = std::fs::read_to_string(&manifest).expect("manifest");
    assert!(
        m.contains(&format!(
            "command leaselab sim --seeds 0.. --fence off --out {d} --no-shrink\n"
        )),
        "{m}"
    );
    assert!(out.contains(&format!("SUMMARY seeds={next} ")), "{out}");
    let m = std::fs::read_to_string(&manifest).expect("manifest");
    assert!(
        m.contains(&format!("status interrupted resume_at={next}")),
        "{m}"
    );
    // Exactly the failures of the seeds before the resume point were written.
    let (_, again) = leaselab(&[
        "sim",
        "--seeds",
        &format!("0..{next}"),
        "--fence",
        "off",
        "--no-shrink",
        "--out",
        &d,
    ]);
    assert_eq!(fail_seeds(&out), fail_seeds(&again));
    for s in fail_seeds(&out) {
        assert!(
            manifest
                .parent()
                .expect("dir")
                .join(format!("seed-{s}.trace"))
                .exists(),
            "seed {s}"
        );
    }
}

#[test]
fn one_seed_twice_gives_identical_trace_files_under_both_drivers() {
    let dir = tmp("one-seed");
    std::fs::create_dir_all(&dir).expect("dir");
    for driver in ["fast", "turmoil"] {
        let a = dir.join(format!("{driver}-a.trace"));
        let b = dir.join(format!("{driver}-b.trace"));
        for p in [&a, &b] {
            let (code, out) = leaselab(&[
                "sim",
                "--seed",
                "4",
                "--driver",
                driver,
                "--safety-ms",
                "10000",
                "--trace-out",
                &p.to_string_lossy(),
            ]);
            assert_eq!(code, 0, "{out}");
            assert!(out.contains("timeline ("), "prints its timeline");
        }
        let (x, y) = (std::fs::read(&a).expect("a"), std::fs::read(&b).expect("b"));
        assert!(x == y, "{driver}: traces differ");
    }
}

#[test]
fn exit_status_says_which_check_failed() {
    // Liveness only: no faults heal into a phase too short for any write.
    let (code, out) = leaselab(&[
        "sim",
        "--seed",
        "1",
        "--faults",
        "none",
        "--safety-ms",
        "1",
        "--liveness-ms",
        "1",
        "--quiet",
    ]);
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("LIVENESS FAILED"), "{out}");
    let (code, out) = leaselab(&["sim", "--seed", "3", "--fence", "off", "--quiet"]);
    assert_eq!(code, 1, "{out}");
}

#[test]
fn bad_arguments_are_clear_errors() {
    for args in [
        &["sim", "--seeds", "5..2"][..],
        &["sim", "--seeds", "0..2", "--shard", "3/3"],
        &["sim", "--seed", "1", "--faults", "pause,meteor"],
        &["sim", "--seed", "1", "--faults", ""],
        &["sim", "--seed", "1", "--faults", "all,pause"],
        &["sim", "--seed", "1", "--tick-ms", "0"],
        &["sim", "--seed", "1", "--holders", "0"],
        &["sim", "--seed", "1", "--fence", "sometimes"],
        &["sim", "--from-trace", "x.trace", "--fence", "off"],
        &["sim", "--from-trace", "/nonexistent/x.trace"],
        &["lab", "--backend", "oracle"],
    ] {
        let (code, out) = leaselab(args);
        assert_eq!(code, 2, "{args:?}: {out}");
    }
}

#[test]
fn a_setup_line_that_cannot_be_read_names_file_line_and_field() {
    let dir = tmp("bad-setup");
    std::fs::create_dir_all(&dir).expect("dir");
    let good = dir.join("good.trace");
    leaselab(&[
        "sim",
        "--seed",
        "2",
        "--safety-ms",
        "2000",
        "--quiet",
        "--trace-out",
        &good.to_string_lossy(),
    ]);
    let text = std::fs::read_to_string(&good).expect("trace");
    let bad = dir.join("bad.trace");
    std::fs::write(&bad, text.replacen("retry_ms=", "retry_ms=soon", 1)).expect("w");
    let out = Command::new(env!("CARGO_BIN_EXE_leaselab"))
        .args(["sim", "--from-trace", &bad.to_string_lossy()])
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    let line = text
        .lines()
        .position(|l| l.starts_with("setup holder"))
        .expect("holder line")
        + 1;
    assert!(
        err.contains(&format!("bad.trace:{line}: field `retry_ms`")),
        "{err}"
    );
}

/// `--max-failures` ends a sweep cleanly: the failures found so far are written, the summary
/// states the cap and the command that goes on, the exit is that of a finished sweep, and the
/// MANIFEST says it was capped (deploy/collect.sh counts it as finished).
#[test]
fn a_sweep_stops_cleanly_at_its_failure_cap() {
    let dir = tmp("capped");
    let d = dir.to_string_lossy().into_owned();
    let (code, out) = leaselab(&[
        "sim",
        "--seeds",
        "0..1000",
        "--fence",
        "off",
        "--no-shrink",
        "--jobs",
        "1",
        "--max-failures",
        "2",
        "--out",
        &d,
    ]);
    assert_eq!(code, 1, "a finished sweep with failures: {out}");
    let fails = fail_seeds(&out);
    assert!(fails.len() >= 2, "{out}");
    let capped = out
        .lines()
        .find(|l| l.starts_with("CAPPED: --max-failures 2 reached; seeds from "))
        .unwrap_or_else(|| panic!("no cap line: {out}"));
    assert!(
        capped.contains(" --fence off ")
            && capped.ends_with(&format!(" --out {d} --no-shrink --max-failures 2 --resume")),
        "{capped}"
    );
    // The command that goes on does: from the seed the cap stopped at, in the same folder.
    let next: u64 = capped
        .split("seeds from ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .expect("seed");
    let go_on: Vec<&str> = capped
        .split("to go on: leaselab ")
        .nth(1)
        .expect("command")
        .split(' ')
        .collect();
    let (code, more) = leaselab(&go_on);
    assert_eq!(code, 1, "{more}");
    assert!(
        more.starts_with(&format!("RESUME: going on from seed {next} ")),
        "{more}"
    );
    assert!(fail_seeds(&more).iter().all(|s| *s >= next), "{more}");
    let m = std::fs::read_to_string(dir.join("off-fast-seeds-0..1000/MANIFEST")).expect("manifest");
    assert!(
        m.contains("status capped (--max-failures 2) resume_at="),
        "{m}"
    );
    let collect = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../deploy/collect.sh");
    let c = Command::new("bash")
        .arg(collect)
        .arg(&dir)
        .output()
        .expect("collect runs");
    let text = String::from_utf8_lossy(&c.stdout);
    assert_eq!(
        c.status.code(),
        Some(1),
        "failures, no unfinished shard: {text}"
    );
    assert!(text.contains("unfinished=0"), "{text}");
}

/// `--max-failures 3` reports exactly the first 3 failing seeds and stops there, with the same
/// output — every FAIL line, the cap and its resume point, the SUMMARY — for 1, 2 and 4 jobs:
/// the seeds other workers ran ahead of the cap are not counted (they run on resuming).
#[test]
fn the_failure_cap_is_exact_for_any_number_of_jobs() {
    let dir = tmp("capped-jobs");
    let d = dir.to_string_lossy().into_owned();
    let run = |jobs: &str| {
        let (code, out) = leaselab(&[
            "sim",
            "--seeds",
            "0..400",
            "--fence",
            "off",
            "--no-shrink",
            "--jobs",
            jobs,
            "--max-failures",
            "3",
            "--out",
            &d,
        ]);
        assert_eq!(code, 1, "{out}");
        out
    };
    let one = run("1");
    assert_eq!(fail_seeds(&one).len(), 3, "{one}");
    assert_eq!(
        one.matches("\nFAIL seed=").count() + usize::from(one.starts_with("FAIL")),
        3
    );
    let summary = one
        .lines()
        .find(|l| l.starts_with("SUMMARY "))
        .unwrap_or_else(|| panic!("{one}"));
    assert!(summary.contains(" failed=3 "), "{summary}");
    for jobs in ["2", "4"] {
        assert_eq!(run(jobs), one, "--jobs {jobs}");
    }
}

/// A sweep stopped by SIGTERM (a batch job's pod being replaced) goes on with `--resume` — the
/// command it printed — from its resume point, in the same folder, and ends with exactly the
/// failures of an uninterrupted sweep; run again, it has nothing left to do.
#[cfg(unix)]
#[test]
fn a_resumed_sweep_goes_on_where_it_stopped_and_finds_the_same_failures() {
    let dir = tmp("resume");
    let d = dir.to_string_lossy().into_owned();
    let args = [
        "sim",
        "--seeds",
        "0..6000",
        "--fence",
        "off",
        "--no-shrink",
        "--jobs",
        "1",
        "--out",
        &d,
    ];
    let manifest = dir.join("off-fast-seeds-0..6000/MANIFEST");
    let (code, first) = signal_once_failures_are_written(&args, &manifest, "-TERM");
    assert_eq!(code, Some(5), "stopped by SIGTERM: {first}");
    let resume = first
        .lines()
        .find_map(|l| l.split("resume: leaselab ").nth(1))
        .unwrap_or_else(|| panic!("no resume command: {first}"));
    let a: Vec<&str> = resume.split(' ').collect();
    let (code, second) = leaselab(&a);
    assert_eq!(code, 1, "{second}");
    assert!(
        second.starts_with("RESUME: going on from seed "),
        "{second}"
    );
    let m = std::fs::read_to_string(&manifest).expect("manifest");
    assert!(m.trim_end().ends_with("status complete"), "{m}");
    let listed: BTreeSet<u64> = m
        .lines()
        .filter_map(|l| l.strip_prefix("failure seed="))
        .filter_map(|r| r.split(' ').next()?.parse().ok())
        .collect();
    let mut both = fail_seeds(&first);
    both.extend(fail_seeds(&second));
    assert_eq!(listed, both, "{m}");
    let fresh = tmp("resume-fresh");
    let f = fresh.to_string_lossy().into_owned();
    let (_, whole) = leaselab(&[
        "sim",
        "--seeds",
        "0..6000",
        "--fence",
        "off",
        "--no-shrink",
        "--out",
        &f,
    ]);
    assert_eq!(both, fail_seeds(&whole), "resumed vs uninterrupted");
    let (code, third) = leaselab(&a);
    assert_eq!(code, 1, "{third}");
    assert!(
        third.contains("is complete") && third.contains("nothing to run"),
        "{third}"
    );
}

/// Starts `args` (its output dropped) and sends `signal` once `manifest` lists at least `n`
/// failure lines; returns the exit code.
#[cfg(unix)]
fn signal_at_failures(args: &[&str], manifest: &Path, n: usize, signal: &str) -> Option<i32> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_leaselab"))
        .args(args)
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("starts");
    let reached = (0..9000).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(10));
        std::fs::read_to_string(manifest).is_ok_and(|m| m.matches("\nfailure ").count() >= n)
            || child.try_wait().ok().flatten().is_some()
    });
    assert!(reached, "the sweep wrote {n} failures while running");
    let _ = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status();
    child.wait().expect("exits").code()
}

/// The failing seeds a manifest lists, each line once (a seed listed twice would be counted
/// twice by deploy/collect.sh's readers).
fn manifest_failures(manifest: &Path) -> Vec<u64> {
    std::fs::read_to_string(manifest)
        .expect("manifest")
        .lines()
        .filter_map(|l| l.strip_prefix("failure seed="))
        .filter_map(|r| r.split(' ').next()?.parse().ok())
        .collect()
}

/// The Kubernetes path: SIGTERM, `--resume`, that one SIGKILLed (no status written), `--resume`
/// SIGKILLed again, `--resume` to the end — and a fresh sweep SIGKILLed before its first
/// status, resumed. Each ends with exactly the failures of an uninterrupted sweep, every seed
/// listed once in the MANIFEST, and deploy/collect.sh counting them once.
#[cfg(unix)]
#[test]
fn a_sweep_killed_and_resumed_in_any_order_lists_each_failure_once() {
    let run = |name: &str| {
        let dir = tmp(name);
        let d = dir.to_string_lossy().into_owned();
        let args: Vec<String> = [
            "sim",
            "--seeds",
            "0..3000",
            "--fence",
            "off",
            "--no-shrink",
            "--jobs",
            "2",
            "--out",
            &d,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        (dir.join("off-fast-seeds-0..3000/MANIFEST"), args, dir)
    };
    let (whole_manifest, whole_args, _) = run("kill-whole");
    let a: Vec<&str> = whole_args.iter().map(String::as_str).collect();
    let (code, _) = leaselab(&a);
    assert_eq!(code, 1);
    let whole = manifest_failures(&whole_manifest);
    assert!(whole.len() > 20, "{whole:?}");
    let collect = |dir: &Path| {
        let c = Command::new("bash")
            .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../deploy/collect.sh"))
            .arg(dir)
            .output()
            .expect("collect runs");
        String::from_utf8_lossy(&c.stdout).into_owned()
    };
    for (name, first) in [("kill-term", "-TERM"), ("kill-fresh", "-KILL")] {
        let (manifest, args, dir) = run(name);
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut resumed = a.clone();
        resumed.push("--resume");
        let code = signal_at_failures(&a, &manifest, 3, first);
        assert_eq!(code, if first == "-TERM" { Some(5) } else { None });
        if first == "-KILL" {
            let (_, out) = leaselab(&resumed);
            assert!(
                out.starts_with("RESUME: ") && out.contains("starting over"),
                "{out}"
            );
        } else {
            for k in [6, 9] {
                assert_eq!(signal_at_failures(&resumed, &manifest, k, "-KILL"), None);
            }
            let (code, _) = leaselab(&resumed);
            assert_eq!(code, 1);
        }
        let listed = manifest_failures(&manifest);
        assert_eq!(listed, whole, "{name}");
        let text = collect(&dir);
        assert!(
            text.contains(&format!(" failures={} ", whole.len())),
            "{name}: {text}"
        );
    }
}

/// The arguments of a slow sweep into `out`: the turmoil driver, `safety_ms` of virtual time a
/// seed (200,000: about two seconds of real time).
#[cfg(unix)]
fn slow_sweep<'a>(safety_ms: &'a str, out: &'a str) -> [&'a str; 14] {
    [
        "sim",
        "--seeds",
        "0..50",
        "--fence",
        "off",
        "--no-shrink",
        "--jobs",
        "1",
        "--driver",
        "turmoil",
        "--safety-ms",
        safety_ms,
        "--out",
        out,
    ]
}

/// A slow sweep (the turmoil driver, minutes of virtual time a seed: seconds each) started in a
/// process group of its own, the group signalled by `send` once it runs; its exit code, its
/// output and its MANIFEST.
#[cfg(unix)]
fn slow_sweep_signalled(
    name: &str,
    safety_ms: &str,
    send: impl FnOnce(u32),
) -> (Option<i32>, String, String) {
    use std::os::unix::process::CommandExt as _;
    let dir = tmp(name);
    let d = dir.to_string_lossy().into_owned();
    let child = Command::new(env!("CARGO_BIN_EXE_leaselab"))
        .args(slow_sweep(safety_ms, &d))
        .stdout(std::process::Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("starts");
    let manifest = dir.join("off-turmoil-seeds-0..50/MANIFEST");
    assert!(
        (0..3000).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(10));
            manifest.exists()
        }),
        "the sweep started"
    );
    std::thread::sleep(std::time::Duration::from_millis(300));
    send(child.id());
    let out = child.wait_with_output().expect("exits");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        std::fs::read_to_string(&manifest).expect("manifest"),
    )
}

#[cfg(unix)]
fn kill_group(pgid: u32) {
    let st = Command::new("kill")
        .args(["-INT", "--", &format!("-{pgid}")])
        .status()
        .expect("kill");
    assert!(st.success());
}

/// Two signals 50 ms apart — what `timeout -s INT` and a supervisor that signals the process
/// and then its group deliver — are one Ctrl-C: the running seed finishes, and the summary,
/// the resume point and the MANIFEST status are written. A second one a person sends on
/// purpose, later, abandons the running seed — and still writes all three.
#[cfg(unix)]
#[test]
fn two_signals_close_together_are_one_interrupt_and_a_second_still_writes_what_is_known() {
    let (code, out, m) = slow_sweep_signalled("twice-50ms", "200000", |pgid| {
        kill_group(pgid);
        std::thread::sleep(std::time::Duration::from_millis(50));
        kill_group(pgid);
    });
    assert_eq!(code, Some(5), "{out}");
    assert!(
        out.contains("SUMMARY seeds=") && out.contains("INTERRUPTED: seeds from "),
        "{out}"
    );
    assert!(!out.contains("abandoned"), "{out}");
    assert!(m.contains("\nstatus interrupted resume_at="), "{m}");
    let (code, out, m) = slow_sweep_signalled("twice-on-purpose", "600000", |pgid| {
        kill_group(pgid);
        std::thread::sleep(std::time::Duration::from_millis(1500));
        kill_group(pgid);
    });
    assert_eq!(code, Some(5), "{out}");
    assert!(out.contains("SUMMARY seeds="), "{out}");
    assert!(
        out.contains("INTERRUPTED: seeds from 0 were not run (the running ones abandoned); resume: leaselab sim --seeds 0..50 "),
        "{out}"
    );
    assert!(m.contains("\nstatus interrupted resume_at=0"), "{m}");
}

/// `timeout -s INT` signals the process and then its group: one interrupt, not two.
#[cfg(unix)]
#[test]
fn timeout_s_int_is_one_interrupt() {
    let dir = tmp("timeout-int");
    let d = dir.to_string_lossy().into_owned();
    let out = Command::new("timeout")
        .args([
            "--preserve-status",
            "-s",
            "INT",
            "1",
            env!("CARGO_BIN_EXE_leaselab"),
        ])
        .args(slow_sweep("200000", &d))
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(5), "{text}");
    assert!(
        text.contains("INTERRUPTED: seeds from ") && !text.contains("abandoned"),
        "{text}"
    );
    let m = std::fs::read_to_string(dir.join("off-turmoil-seeds-0..50/MANIFEST")).expect("m");
    assert!(m.contains("\nstatus interrupted resume_at="), "{m}");
}

/// A run that failed only liveness is explained and drawn as one: the verdict names liveness,
/// why it broke and what the resource refused after the heal — never "every check holds".
#[test]
fn explain_and_diagram_of_a_liveness_failure_name_it() {
    let dir = tmp("liveness-explained");
    let d = dir.to_string_lossy().into_owned();
    let (code, out) = leaselab(&[
        "sim",
        "--seeds",
        "0..1",
        "--liveness-ms",
        "3",
        "--no-shrink",
        "--out",
        &d,
    ]);
    assert_eq!(code, 3, "only liveness failed: {out}");
    let trace = dir.join("scope-fast-seeds-0..1/seed-0.trace");
    let t = trace.display().to_string();
    let (code, told) = leaselab(&["explain", &t]);
    assert_eq!(code, 0, "{told}");
    assert!(
        told.contains("Verdict: I1, I2, I3, acceptance and final all hold, but liveness broke: no holder completed a write within 3 ms after the faults healed at t=50000"),
        "{told}"
    );
    let (code, drawn) = leaselab(&["diagram", &t]);
    assert_eq!(code, 0, "{drawn}");
    assert!(
        drawn.contains(
            "✓ I1 I2 I3 acceptance final all hold; ✗ liveness broke: no holder completed a write"
        ),
        "{drawn}"
    );
}

/// A single run draws the same short picture as every other command; `--events` adds the
/// whole event log, `--quiet` leaves the picture out of a passing run.
#[test]
fn a_single_run_prints_its_picture_and_the_event_log_on_request() {
    let (code, out) = leaselab(&["sim", "--seed", "7"]);
    assert_eq!(code, 0, "{out}");
    let header = out
        .lines()
        .find(|l| l.starts_with("timeline (") && l.ends_with(" events; the telling ones):"))
        .unwrap_or_else(|| panic!("no picture\n{out}"));
    let events: usize = header["timeline (".len()..]
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .expect("an event count");
    assert!(events > 1000, "{header}");
    assert!(out.lines().count() < 50, "the whole log was printed\n{out}");
    assert!(out.contains("(every event: add --events)"), "{out}");
    let (code, all) = leaselab(&["sim", "--seed", "7", "--events"]);
    assert_eq!(code, 0);
    assert!(all.contains(&format!("events ({events}):")), "{all}");
    assert!(
        all.lines()
            .any(|l| l.starts_with(&format!("  {events} t="))),
        "the last event is missing"
    );
    assert!(all.contains(header) && !all.contains("add --events"));
    let (code, quiet) = leaselab(&["sim", "--seed", "7", "--quiet"]);
    assert_eq!(code, 0);
    assert!(
        !quiet.contains("timeline (") && quiet.contains("safety: I1 I2 I3"),
        "{quiet}"
    );
    let (code, both) = leaselab(&["sim", "--seed", "7", "--quiet", "--events"]);
    assert_eq!(code, 2, "{both}");
}
