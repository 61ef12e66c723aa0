//! Arguments that would be silently ignored are refused instead, naming both sides: a run
//! must never look as if it honoured a flag it did not read.

mod common;
use common::leaselab;

#[test]
fn arguments_that_do_not_apply_are_refused_not_ignored() {
    for (args, names) in [
        (
            &["diff", "traces/F4.trace", "--gen", "3"][..],
            ["[FILES]...", "--gen <N>"],
        ),
        (
            &["diff", "traces/F4.trace", "--fence", "off"],
            ["[FILES]...", "--fence"],
        ),
        (
            &["diff", "traces/F4.trace", "--driver", "turmoil"],
            ["[FILES]...", "--driver"],
        ),
        (
            &["diff", "--gen", "3", "--holders", "3"],
            ["--gen <N>", "--holders"],
        ),
        (
            &["diff", "--gen", "3", "--sim-seeds", "0..2"],
            ["--gen <N>", "--sim-seeds"],
        ),
        (
            &["diff", "traces/F4.trace", "--seed", "4"],
            ["[FILES]...", "--seed"],
        ),
        (
            &["diff", "--sim-seeds", "0..1", "--steps", "5"],
            ["--sim-seeds", "--steps"],
        ),
        (
            &["diff", "--replay", "x.trace", "--gen", "3"],
            ["--replay <FILE>", "--gen <N>"],
        ),
        (
            &["diff", "--replay", "x.trace", "traces/F4.trace"],
            ["--replay <FILE>", "[FILES]..."],
        ),
        (
            &[
                "check",
                "--serve",
                "127.0.0.1:3000",
                "--trace-out",
                "x.trace",
            ],
            ["--serve <ADDR>", "--trace-out"],
        ),
    ] {
        let (code, out) = leaselab(args);
        assert_eq!(code, 2, "{args:?}: {out}");
        assert!(out.contains("cannot be used with"), "{args:?}: {out}");
        for n in names {
            assert!(out.contains(n), "{args:?} should name {n}: {out}");
        }
    }
}

/// Every numeric option has a documented range; a value outside it is refused (exit 2) with
/// the option and the range named — never a run that does nothing, runs something else, hangs,
/// or ends with a summary that says something false.
#[test]
fn numbers_out_of_range_are_refused_with_the_range() {
    for (args, option, range) in [
        (&["diff", "--gen", "0"][..], "--gen <N>", "1.."),
        (
            &["audit", "examples/leases/seed.toml", "--gen", "0"],
            "--gen <N>",
            "1..",
        ),
        (
            &["diff", "--gen", "3", "--steps", "0"],
            "--steps",
            "1..=1000",
        ),
        (
            &["diff", "--gen", "3", "--steps", "1001"],
            "--steps",
            "1..=1000",
        ),
        (
            &[
                "audit",
                "examples/leases/seed.toml",
                "--gen",
                "3",
                "--steps",
                "0",
            ],
            "--steps",
            "1..=1000",
        ),
        (&["check", "--threads", "0"], "--threads", "1 to 1024"),
        (&["check", "--threads", "1025"], "--threads", "1 to 1024"),
        (&["check", "--max-states", "0"], "--max-states", "1 or more"),
        (&["check", "--max-memory-mb", "0"], "--max-memory-mb", "1.."),
        (
            &["sim", "--seed", "1", "--liveness-ms", "99999999999999999"],
            "--liveness-ms",
            "0..=3600000",
        ),
        (
            &["sim", "--seed", "1", "--safety-ms", "3600001"],
            "--safety-ms",
            "1..=3600000",
        ),
        (
            &["sim", "--seed", "1", "--tick-ms", "0"],
            "--tick-ms",
            "1..=60000",
        ),
        (
            &[
                "envelope",
                "--fence",
                "off",
                "--lock-delay-ms",
                "99999999999",
            ],
            "--lock-delay-ms",
            "0..=600000",
        ),
    ] {
        let (code, out) = leaselab(args);
        assert_eq!(code, 2, "{args:?}: {out}");
        assert!(out.contains(option), "{args:?} should name {option}: {out}");
        assert!(out.contains(range), "{args:?} should name {range}: {out}");
    }
}

/// With no fence, a run where no stale write got through owes it to the lease's timing, and
/// says so — not "the fence refused every stale write".
#[test]
fn envelope_without_a_fence_does_not_credit_one() {
    let (code, out) = leaselab(&["envelope", "--fence", "off", "--lock-delay-ms", "600000"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("there is no fence"), "{out}");
    assert!(!out.contains("the fence refused"), "{out}");
}

/// Errors go to stderr and name the file the way the user gave it, without a line that does
/// not exist: a missing file is not "line 1, field line"; a trace without the line a command
/// needs is not "line 0".
#[test]
fn errors_name_the_file_without_an_invented_line() {
    let (code, out, err) = common::leaselab_apart(&["replay", "no-such.trace"]);
    assert_eq!(code, Some(2));
    assert_eq!(out.trim(), "SUMMARY replayed=0 failed=1", "{out}");
    assert!(err.contains("no-such.trace: cannot read"), "{err}");
    let (code, out, err) = common::leaselab_apart(&["judge", "no-such.jsonl"]);
    assert_eq!(code, Some(2), "{out}");
    assert!(
        err.contains("leaselab judge: no-such.jsonl: cannot read:"),
        "{err}"
    );
    assert!(!err.contains(":1:"), "{err}");
    let lab_trace = common::root().join("traces/F4.trace");
    let lab_trace = lab_trace.display().to_string();
    let (code, _, err) = common::leaselab_apart(&["sim", "--from-trace", &lab_trace]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("F4.trace: field `setup`: no `setup sim"),
        "{err}"
    );
}

/// `diff --replay` needs a trace a `diff --gen` search wrote: a lab trace has no schedule in
/// it, and a damaged `setup intent` line is named by its line and field. Both before any
/// server starts.
#[test]
fn diff_replay_names_what_is_missing_or_wrong_in_the_trace() {
    let lab_trace = common::root().join("traces/F4.trace");
    let lab_trace = lab_trace.display().to_string();
    let (code, _, err) = common::leaselab_apart(&["diff", "--replay", &lab_trace]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("F4.trace: no `setup schedule` line: only the traces `diff --gen` writes"),
        "{err}"
    );
    let dir = std::env::temp_dir().join(format!("leaselab-diff-replay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let bad = dir.join("bad.trace");
    let text = "leaselab-trace v1\nname bad\nseed 1\nconfig fence=scope lease_table=logged renew_after_expiry=false \
                publish=business-key client_expiry=monotonic scopes=daily-report\nsetup schedule actors=2\n\
                setup intent actor=0 kind=fly a=0 b=0\nexpect ok\nevents\nend\n";
    std::fs::write(&bad, text).expect("write");
    let (code, _, err) = common::leaselab_apart(&["diff", "--replay", &bad.display().to_string()]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("bad.trace:6: field `kind`: unknown kind `fly`"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A replay file knows its kind: an audit's trace names its spec, a differential's none, and
/// each command refuses the other's with the command that takes it — before any server starts.
#[test]
fn each_replay_refuses_the_other_commands_trace() {
    let audit_trace = common::root().join("traces/audit/advisory-lock.trace");
    let audit_trace = audit_trace.display().to_string();
    let diff_trace = common::root().join("traces/diff/failed-recheck-releases-row.trace");
    let diff_trace = diff_trace.display().to_string();
    let (code, out, err) = common::leaselab_apart(&["diff", "--replay", &audit_trace]);
    assert_eq!(code, Some(2), "{out}{err}");
    assert_eq!(
        err.trim(),
        format!("leaselab diff: {audit_trace}: the trace of an audit of examples/leases/advisory-lock.toml: replay it with `leaselab audit examples/leases/advisory-lock.toml --replay {audit_trace}`")
    );
    let spec = common::root().join("examples/leases/seed.toml");
    let spec = spec.display().to_string();
    let (code, out, err) = common::leaselab_apart(&["audit", &spec, "--replay", &diff_trace]);
    assert_eq!(code, Some(2), "{out}{err}");
    assert_eq!(
        err.trim(),
        format!("leaselab audit: {diff_trace}: the trace of a `diff --gen` search (it names no spec): replay it with `leaselab diff --replay {diff_trace}`")
    );
}

/// An interrupted search exits 5 whatever it found so far, as `sim` does: its search, or the
/// shrinking of what it found, did not finish — and the verdict line says a cut-short shrink.
#[test]
fn an_interrupted_search_exits_5_even_with_a_failure_found() {
    use leaselab::args::Exit;
    use leaselab::gen_search::{cut_short_note, search_exit};
    assert_eq!(search_exit(true, Exit::Violation, true), Exit::Interrupted);
    assert_eq!(search_exit(false, Exit::Violation, true), Exit::Interrupted);
    assert_eq!(search_exit(true, Exit::Divergence, false), Exit::Divergence);
    assert_eq!(search_exit(false, Exit::Violation, false), Exit::Clean);
    assert!(cut_short_note(true).contains("shrinking cut short"));
    assert_eq!(cut_short_note(false), "");
}

/// A progress interval that is not milliseconds is an error, not silently the default.
#[test]
fn a_bad_progress_interval_is_an_error() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_leaselab"))
        .args(["sim", "--seed", "1"])
        .env("LEASELAB_PROGRESS_MS", "abc")
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(
        err.trim(),
        "leaselab: LEASELAB_PROGRESS_MS=`abc`: expected the milliseconds between progress lines, a whole number from 1"
    );
}
