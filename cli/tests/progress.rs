//! Long PostgreSQL-bound runs show progress on stderr also when it is not a terminal (a log,
//! CI), throttled; their summaries count the runs that shrank a failure apart from the
//! schedules asked for.

use leaselab_pg::cluster::postgres_for_test;
use std::process::Command;

mod common;

/// Runs `args` with progress every 100 ms; (exit code, stdout, stderr).
fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_leaselab"))
        .current_dir(common::root())
        .args(args)
        .env("LEASELAB_PROGRESS_MS", "100")
        .output()
        .expect("leaselab runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn pg_dir(name: &str) -> String {
    let d = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("progress")
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    d.display().to_string()
}

#[test]
fn diff_gen_and_audit_show_progress_off_a_terminal() {
    if !postgres_for_test("cli::diff_gen_and_audit_show_progress") {
        return;
    }
    let d = pg_dir("diff");
    let (code, out, err) = run(&["diff", "--gen", "30", "--pg-dir", &d]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(err.contains("/30 schedules ("), "{err}");
    assert!(err.contains("0 divergences, ETA "), "{err}");
    assert!(
        out.contains("SUMMARY generated=30 ") && out.contains(" divergences=0 shrink_runs=0 "),
        "{out}"
    );
    let d = pg_dir("audit");
    let (code, out, err) = run(&[
        "audit",
        "examples/leases/seed.toml",
        "--gen",
        "30",
        "--pg-dir",
        &d,
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(err.contains("/30 schedules ("), "{err}");
    assert!(err.contains("0 violations, ETA "), "{err}");
    assert!(out.contains(" violations=0 shrink_runs=0 "), "{out}");
}

#[test]
fn diff_sim_seeds_shows_progress_off_a_terminal() {
    if !postgres_for_test("cli::diff_sim_seeds_shows_progress") {
        return;
    }
    let d = pg_dir("sim-seeds");
    let (code, out, err) = run(&["diff", "--sim-seeds", "0..3", "--pg-dir", &d]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(err.contains("/3 runs ("), "{err}");
    assert!(err.contains("0 divergences, ETA "), "{err}");
}
