//! Replays every committed trace in `traces/` (raft-rs `datadriven` style): `cargo test` fails
//! as soon as one stops reproducing its steps or its expected verdict.

use leaselab::replay::replay_file;
use leaselab_trace::Trace;
use std::path::PathBuf;

fn trace_files() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../traces");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "trace"))
        .collect();
    v.sort();
    v
}

#[test]
fn every_committed_trace_replays_with_its_verdict() {
    let files = trace_files();
    assert!(
        files.len() >= 13,
        "expected a trace per lab case, found {}",
        files.len()
    );
    let mut failures = Vec::new();
    for f in &files {
        match replay_file(f) {
            Ok(r) if r.ok() => {}
            Ok(r) => failures.push(format!("{}: {}", f.display(), r.describe())),
            Err(e) => failures.push(e.to_string()),
        }
    }
    assert!(
        failures.is_empty(),
        "traces that no longer reproduce:\n{}",
        failures.join("\n")
    );
}

#[test]
fn every_committed_trace_is_canonical_text() {
    for f in trace_files() {
        let text = std::fs::read_to_string(&f).expect("readable");
        let t = Trace::parse(&text, &f.display().to_string()).expect("parses");
        assert_eq!(
            t.to_text(),
            text,
            "{} is not in canonical form",
            f.display()
        );
    }
}

#[test]
fn every_lab_run_has_a_committed_trace() {
    let res = leaselab::lab::run(None, None).expect("lab runs");
    let names: Vec<String> = trace_files()
        .iter()
        .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .collect();
    for r in &res.runs {
        assert!(
            names.contains(&r.trace.name),
            "no traces/{}.trace: run `cargo run -- lab --trace-out traces`",
            r.trace.name
        );
    }
}

/// The checkers' second oracle: on every committed trace and every lab run (all fence modes),
/// the facts the checkers derive from the history equal what the model's databases committed.
#[test]
fn checker_facts_equal_the_model_ledger_on_every_trace_and_lab_run() {
    use leaselab_checkers::{facts::derive, ledger::cross_check};
    use leaselab_trace::replay::reexecute;
    let mut bad = Vec::new();
    let mut traces: Vec<(String, Trace)> = trace_files()
        .into_iter()
        .map(|f| {
            let text = std::fs::read_to_string(&f).expect("readable");
            let t = Trace::parse(&text, &f.display().to_string()).expect("parses");
            (f.display().to_string(), t)
        })
        .collect();
    for fence in leaselab_model::FenceMode::ALL {
        let res = leaselab::lab::run(None, Some(fence)).expect("lab runs");
        for r in res.runs {
            traces.push((format!("lab {} --fence {fence}", r.trace.name), r.trace));
        }
    }
    for (name, t) in &traces {
        let r = reexecute(t);
        let d = cross_check(&derive(&r.history), &r.ledger);
        if !d.is_empty() {
            bad.push(format!("{name}:\n  {}", d.join("\n  ")));
        }
    }
    assert!(
        bad.is_empty(),
        "facts and ledger disagree:\n{}",
        bad.join("\n")
    );
}
