//! `leaselab sim` end to end: exit status, reproduce commands, saved and shrunk traces,
//! byte-identical traces for one seed under both drivers.

use std::path::PathBuf;
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

#[test]
fn sweep_with_fence_off_reports_reproduces_and_shrinks() {
    let dir = tmp("sweep-off");
    let d = dir.to_string_lossy().into_owned();
    let (code, out) = leaselab(&["sim", "--seeds", "0..20", "--fence", "off", "--out", &d]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("FAIL seed=") && out.contains("I3 violated"),
        "{out}"
    );
    assert!(out.contains("reproduce: leaselab sim --seed "), "{out}");
    let shrunk: Vec<_> = std::fs::read_dir(&dir)
        .expect("failure folder")
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".shrunk.trace"))
        .collect();
    assert!(!shrunk.is_empty());
    let p = shrunk[0].path();
    let (code, out) = leaselab(&["replay", &p.to_string_lossy()]);
    assert_eq!(code, 0, "the saved shrunk trace replays: {out}");
}

#[test]
fn sweep_with_scope_fence_passes() {
    let dir = tmp("sweep-scope");
    let (code, out) = leaselab(&["sim", "--seeds", "0..50", "--out", &dir.to_string_lossy()]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("SUMMARY seeds=50 failed=0"), "{out}");
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
fn bad_arguments_are_clear_errors() {
    let (code, _) = leaselab(&["sim", "--seeds", "5..2"]);
    assert_eq!(code, 2);
    let (code, _) = leaselab(&["sim", "--seeds", "0..2", "--shard", "3/3"]);
    assert_eq!(code, 2);
    let (code, _) = leaselab(&["sim", "--seed", "1", "--faults", "pause,meteor"]);
    assert_eq!(code, 2);
}
