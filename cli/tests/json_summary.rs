//! `--json FILE`: one object per run, with the keys and types docs/json-summary.md gives, and
//! reproduce and resume commands that are the ones the text prints.

use serde_json::Value;
use std::path::PathBuf;

mod common;
use common::leaselab;

fn summary(name: &str, args: &[&str]) -> (i32, String, Value) {
    let file = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}.json"));
    let _ = std::fs::remove_file(&file);
    let f = file.display().to_string();
    let mut all = args.to_vec();
    all.extend(["--json", &f]);
    let (code, out) = leaselab(&all);
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{name}: {e}\n{out}"));
    assert_eq!(text.lines().count(), 1, "{name}: one line");
    let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}: {text}"));
    schema(name, &v, code);
    (code, out, v)
}

/// The schema: every key, its type, and the verdict that names the exit status.
fn schema(name: &str, v: &Value, code: i32) {
    let o = v
        .as_object()
        .unwrap_or_else(|| panic!("{name}: not an object"));
    let keys: Vec<&str> = o.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        ["command", "counts", "exit", "failures", "format", "resume", "verdict", "version"],
        "{name}"
    );
    assert_eq!(v["format"], "leaselab-summary");
    assert_eq!(v["version"], 1);
    assert!(v["command"]
        .as_array()
        .is_some_and(|a| a.iter().all(Value::is_string)));
    assert_eq!(v["exit"].as_i64(), Some(i64::from(code)), "{name}");
    let verdict = match code {
        0 => "clean",
        1 => "violation",
        2 => "error",
        3 => "liveness",
        4 => "divergence",
        5 => "interrupted",
        6 => "possible",
        _ => "undecided",
    };
    // `envelope` exits 0 whatever its runs found; its verdict is what they found.
    if v["command"][0] == "envelope" {
        let broke = !v["failures"].as_array().is_some_and(Vec::is_empty);
        assert_eq!(
            v["verdict"],
            if broke { "violation" } else { "clean" },
            "{name}"
        );
    } else {
        assert_eq!(v["verdict"], verdict, "{name}");
    }
    assert!(v["counts"]
        .as_object()
        .is_some_and(|c| c.values().all(Value::is_u64)));
    for f in v["failures"].as_array().expect("failures") {
        let keys: Vec<&str> = f
            .as_object()
            .expect("object")
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, ["reproduce", "seed", "trace", "what"], "{name}");
        assert!(f["what"].is_string());
        for k in ["reproduce", "trace"] {
            assert!(f[k].is_string() || f[k].is_null(), "{name}: {k}");
        }
        assert!(f["seed"].is_u64() || f["seed"].is_null());
    }
    assert!(v["resume"].is_string() || v["resume"].is_null());
}

#[test]
fn every_summary_has_the_documented_keys_and_the_printed_commands() {
    let (_, _, v) = summary(
        "judge-clean",
        &["judge", "examples/histories/clean-handover.jsonl"],
    );
    assert_eq!(v["verdict"], "clean");
    assert_eq!(v["failures"].as_array().map(Vec::len), Some(0));
    let (_, _, v) = summary(
        "judge-possible",
        &["judge", "examples/histories/release-reply-lost.jsonl"],
    );
    assert_eq!(v["verdict"], "possible");
    let (_, out, v) = summary("check", &["check", "--lease-table", "unlogged", "--crash"]);
    assert_eq!(
        v["counts"]["distinct_states"].as_u64().map(|n| n > 0),
        Some(true)
    );
    assert!(
        out.contains("shortest counterexample: I1 in 3 steps"),
        "{out}"
    );
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("json-sweep");
    let _ = std::fs::remove_dir_all(&dir);
    let d = dir.display().to_string();
    let (_, out, v) = summary(
        "sim",
        &[
            "sim",
            "--seeds",
            "0..40",
            "--fence",
            "off",
            "--no-shrink",
            "--max-failures",
            "2",
            "--out",
            &d,
        ],
    );
    let failures = v["failures"].as_array().expect("failures");
    assert!(failures.len() >= 2, "{v}");
    for f in failures {
        let again = f["reproduce"].as_str().expect("reproduce");
        assert!(
            out.contains(&format!("    reproduce: {again}\n")),
            "{again}\n{out}"
        );
        assert!(f["seed"].is_u64() && f["trace"].is_string());
    }
    let resume = v["resume"]
        .as_str()
        .expect("a capped sweep says how to go on");
    assert!(out.contains(&format!("to go on: {resume}")), "{out}");
    assert_eq!(v["counts"]["failed"].as_u64(), Some(failures.len() as u64));
}

/// `envelope --fence off` exits 0 (it describes runs), and its summary says what the table
/// says: a stale write got through — each probe that let one through is a failure.
#[test]
fn the_envelope_summary_says_a_stale_write_got_through() {
    let (code, out, v) = summary("envelope", &["envelope", "--fence", "off"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(v["verdict"], "violation", "{v}\n{out}");
    let failures = v["failures"].as_array().expect("failures");
    assert!(!failures.is_empty(), "{v}");
    for f in failures {
        let what = f["what"].as_str().expect("what");
        let probe = what.split(':').next().expect("a probe");
        assert!(
            out.lines()
                .any(|l| l.starts_with(probe) && !l.contains(" none (tried")),
            "{what}\n{out}"
        );
    }
    let (code, out, v) = summary("envelope-scope", &["envelope", "--fence", "scope"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(v["verdict"], "clean", "{v}\n{out}");
}
