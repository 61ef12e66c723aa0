//! `leaselab judge` on recorded histories: the known answers in `examples/histories/` (each
//! verdict written before the checkers ran), bad input named by file, line and field without
//! losing the other files, and `export` → `judge` on a committed trace.

mod common;
use common::leaselab_apart as leaselab;
use leaselab::judge_cmd::read_recorded;
use leaselab_checkers::Check;
use std::path::PathBuf;

fn example(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/histories")
        .join(format!("{name}.jsonl"))
}

/// Each history: the checks certainly broken, and those broken only if an operation whose
/// outcome nobody learned turned out a certain way (*possible*).
type Known = (&'static str, &'static [Check], &'static [Check]);
const KNOWN: [Known; 21] = [
    ("clean-handover", &[], &[]),
    (
        "stale-write-kept",
        &[Check::I3, Check::Acceptance, Check::Final],
        &[],
    ),
    ("stale-write-fenced", &[], &[]),
    // The same lines, but the read shows the write answered `fail`: the resource kept it.
    (
        "fenced-but-kept",
        &[Check::I3, Check::Acceptance, Check::Final],
        &[],
    ),
    ("two-holders", &[Check::I1], &[]),
    ("token-reused", &[Check::I2], &[]),
    ("release-then-acquire", &[], &[]),
    // If the renewal took effect, holder-a held the lease past holder-b's grant.
    ("renewal-reply-lost", &[], &[Check::I1]),
    // If the release did not take effect, holder-b was granted a held lease.
    ("release-reply-lost", &[], &[Check::I1]),
    // Both acquires were waiting while the other was granted, each unexpired past the other's
    // answer: whichever committed second took a held lease.
    ("unordered-grants", &[Check::I1], &[]),
    // The unknown write came before the later writer's: applied or not, nothing breaks.
    ("unknown-write-superseded", &[], &[]),
    // A stale write timed out after the newer one: stale, if it took effect.
    (
        "unknown-write-possibly-stale",
        &[],
        &[Check::I3, Check::Acceptance],
    ),
    // ...and a read shows it did: the stale write certainly took effect, after the newer one.
    (
        "unknown-write-shown-by-read",
        &[Check::I3, Check::Acceptance, Check::Final],
        &[],
    ),
    ("write-never-answered", &[], &[Check::I3, Check::Acceptance]),
    ("final-from-lower-token", &[Check::Final], &[]),
    ("renewed-then-taken", &[Check::I1], &[]),
    ("crash-restart-clean", &[], &[]),
    ("late-renew-refused", &[], &[]),
    // holder-a's grant was answered at 1005 by its clock, 10 ms at most behind the server's:
    // it may have been granted at 1015, after holder-b's lease expired at 1010.
    ("clock-bound-covers-the-gap", &[], &[]),
    // Within 2 ms, it was granted by 1007, while holder-b's lease was held.
    ("clock-bound-too-small", &[Check::I1], &[]),
    // The server's clock recorded: no bound applies.
    ("server-time-recorded", &[Check::I1], &[]),
];

#[test]
fn the_known_histories_are_judged_right() {
    for (name, certain, possible) in KNOWN {
        let r = read_recorded(&example(name)).unwrap_or_else(|e| panic!("{e}"));
        let report = leaselab_checkers::check(&r.history);
        assert_eq!(report.verdict(), certain, "{name}: {:?}", report.violations);
        let found = &report.possible;
        let mut checks: Vec<Check> = found.iter().map(|p| p.violation.check).collect();
        checks.sort();
        checks.dedup();
        assert_eq!(checks, possible, "{name}: {found:?}");
        assert!(report.undecided.is_empty(), "{name}");
    }
    let files = std::fs::read_dir(example("x").parent().expect("dir"))
        .expect("examples/histories")
        .filter(|e| e.as_ref().is_ok_and(|e| e.path().is_file()))
        .count();
    assert_eq!(
        files,
        KNOWN.len(),
        "every example history has its known answer"
    );
    // Exit 6 when a violation is only possible, and the operation that decides it is named.
    let f = example("release-reply-lost");
    let (code, out, _) = leaselab(&["judge", &f.display().to_string()]);
    assert_eq!(code, Some(6), "{out}");
    assert!(
        out.contains("POSSIBLE I1 if holder-a's release (event #2 at")
            && out.contains("release-reply-lost.jsonl:4")
            && out.contains("did not take effect"),
        "{out}"
    );
}

#[test]
fn judge_names_lines_and_keeps_judging_after_a_bad_file() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("judge-bad");
    std::fs::create_dir_all(&dir).expect("tmp");
    let head = "{\"format\":\"leaselab-history\",\"version\":1}\n";
    let acquire = "{\"type\":\"invoke\",\"process\":\"a\",\"time\":0,\"op\":\"acquire\",\"lease\":\"l\",\"ttl_ms\":10}\n";
    let cases: [(&str, String, &str); 9] = [
        (
            "shared-conn",
            format!("{head}{acquire}{{\"type\":\"fail\",\"process\":\"a\",\"time\":1,\"op\":\"acquire\"}}\n{{\"type\":\"invoke\",\"process\":\"b\",\"conn\":\"a\",\"time\":2,\"op\":\"now\",\"db\":\"lease\"}}\n"),
            ":4: field `conn`: connection `a` is used by process `b` and by `a`",
        ),
        (
            "empty-name",
            format!("{head}{}", acquire.replace("\"ttl_ms\"", "\"\":1,\"ttl_ms\"")),
            ":2: field `line`: a field with an empty name",
        ),
        (
            "bound",
            "{\"format\":\"leaselab-history\",\"version\":1,\"clock_bounds_ms\":{\"a\":-5}}\n".into(),
            ":1: field `clock_bounds_ms.a`",
        ),
        ("version", "{\"format\":\"leaselab-history\",\"version\":2}\n".into(), ":1: field `version`"),
        ("typo", format!("{head}{}", acquire.replace("ttl_ms", "ttl")), ":2: field `ttl`: unknown field"),
        ("no-token", format!("{head}{acquire}{{\"type\":\"ok\",\"process\":\"a\",\"time\":1,\"op\":\"acquire\",\"expires\":10}}\n"), ":3: field `token`: missing"),
        ("orphan", format!("{head}{{\"type\":\"ok\",\"process\":\"a\",\"time\":1,\"op\":\"release\"}}\n"), ":2: field `type`: a completion of `release`"),
        ("wrong-op", format!("{head}{acquire}{{\"type\":\"ok\",\"process\":\"a\",\"time\":1,\"op\":\"renew\",\"expires\":10}}\n"), ":3: field `op`: `renew` completes"),
        ("not-json", format!("{head}{{\"type\":\n"), ":2: field `line`: not JSON"),
    ];
    for (name, text, expected) in &cases {
        let file = dir.join(format!("{name}.jsonl"));
        std::fs::write(&file, text).expect("write");
        let good = example("two-holders");
        let (code, out, err) = leaselab(&[
            "judge",
            &file.display().to_string(),
            &good.display().to_string(),
        ]);
        assert!(
            err.contains(&format!("{}{expected}", file.display())),
            "{name}: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{name}: one error: {err}");
        // The good file after it is still judged: its violation decides the exit.
        assert!(out.contains("VIOLATION I1"), "{name}: {out}");
        assert_eq!(code, Some(1), "{name}");
        let (code, _, _) = leaselab(&["judge", &file.display().to_string()]);
        assert_eq!(code, Some(2), "{name}");
    }
}

#[test]
fn an_exported_trace_is_judged_to_its_verdict_and_drawn() {
    let trace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../traces/F5.trace");
    let (code, jsonl, err) = leaselab(&["export", &trace.display().to_string(), "--jsonl"]);
    assert_eq!(code, Some(0), "{err}");
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("judge-export");
    std::fs::create_dir_all(&dir).expect("tmp");
    let file = dir.join("F5.jsonl");
    std::fs::write(&file, &jsonl).expect("write");
    let f = file.display().to_string();
    let (code, out, _) = leaselab(&["judge", &f]);
    assert_eq!(code, Some(1));
    assert!(
        out.contains("verdict: I3, acceptance, final broken"),
        "{out}"
    );
    // Each violation names the lines of its events.
    assert!(out.contains(&format!("{f}:26 and {f}:27")), "{out}");
    let (code, out, _) = leaselab(&["diagram", &f]);
    assert_eq!(code, Some(0));
    assert!(out.contains("STALE"), "{out}");
    let (code, out, _) = leaselab(&["explain", &f]);
    assert_eq!(code, Some(0));
    assert!(out.contains("Recorded from a deployment"), "{out}");
    let (code, out, _) = leaselab(&["judge", &example("clean-handover").display().to_string()]);
    assert_eq!(code, Some(0));
    assert!(out.contains("every check holds"), "{out}");
}

/// A deployment's processes each record their own calls: alone, each file is clean; merged by
/// the server's clock, holder-a's token-1 write landed after holder-b's token-2 write.
#[test]
fn records_of_several_processes_are_judged_as_one_history() {
    let dir = example("x").parent().expect("dir").join("per-process");
    let a = dir.join("holder-a.jsonl").display().to_string();
    let b = dir.join("holder-b.jsonl").display().to_string();
    let (code, out, _) = leaselab(&["judge", &a, &b]);
    assert_eq!(code, Some(0), "{out}");
    let (code, out, err) = leaselab(&["judge", "--merge", &a, &b]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(
        // Merged, every call keeps its window: an invoke and an answer event each.
        out.starts_with(&format!("{a} + {b}: 8 events from 8 lines")),
        "{out}"
    );
    assert!(out.contains("VIOLATION I3"), "{out}");
    // Each event is named by the file it was read from.
    assert!(
        out.contains(&format!("event #6 at {b}:5; event #8 at {a}:5")),
        "{out}"
    );
    assert!(out.contains("verdict: I3, acceptance broken"), "{out}");
    // A process in two files cannot be ordered against itself: an error naming both.
    let (code, out, err) = leaselab(&["judge", "--merge", &a, &b, &a]);
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(
        err.contains(&format!(
            "{a}:2: field `process`: process `holder-a` is also recorded in {a}"
        )),
        "{err}"
    );
    assert!(
        out.is_empty(),
        "nothing judged from part of a deployment: {out}"
    );
}

/// The exact verdict from the command line: a violation certain across an unknown renewal
/// (exit 1), one undecided over the limit (exit 7, naming its unknown operations), a read that
/// settles an `info` write (named), and a server time beyond its bound (a warning on stderr).
#[test]
fn judge_prints_certain_undecided_settled_and_warnings() {
    let histories = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../checkers/tests/histories");
    let h = |name: &str| {
        histories
            .join(format!("{name}.jsonl"))
            .display()
            .to_string()
    };
    let (code, out, _) = leaselab(&["judge", &h("renew-lost-then-grant-before-old-expiry")]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("VIOLATION I1") && out.contains("whichever way"),
        "{out}"
    );
    let (code, out, _) = leaselab(&["judge", &h("unknown-renewals-over-the-limit")]);
    assert_eq!(code, Some(7), "{out}");
    assert!(out.contains("UNDECIDED I1"), "{out}");
    assert!(out.contains("unknown operations: #2, #4,"), "{out}");
    assert!(
        out.contains("verdict: undecided — I1 not decided within the limits"),
        "{out}"
    );
    let (code, out, _) = leaselab(&["judge", &h("read-proves-a-newer-info-write")]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("SETTLED holder-b's write (event #3 at") && out.contains("took effect"),
        "{out}"
    );
    assert!(out.contains("verdict: I3, acceptance broken"), "{out}");
    // Undecided in one file, broken in another: the worst decides, 1.
    let (code, _, _) = leaselab(&[
        "judge",
        &h("unknown-renewals-over-the-limit"),
        &h("final-phantom-token"),
    ]);
    assert_eq!(code, Some(1));
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("judge-warn");
    std::fs::create_dir_all(&dir).expect("tmp");
    let file = dir.join("skew.jsonl");
    std::fs::write(
        &file,
        "{\"format\":\"leaselab-history\",\"version\":1,\"clock_bounds_ms\":{\"a\":10}}\n\
         {\"type\":\"invoke\",\"process\":\"a\",\"time\":100,\"server_time\":150,\"op\":\"now\",\"db\":\"lease\"}\n\
         {\"type\":\"ok\",\"process\":\"a\",\"time\":101,\"op\":\"now\",\"value\":150}\n",
    )
    .expect("write");
    let f = file.display().to_string();
    let (code, out, err) = leaselab(&["judge", &f]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert_eq!(
        err.trim(),
        format!("leaselab judge: warning: {f}:2: field `server_time`: 150 is 50 ms from the recorder's time 100, beyond process `a`'s clock bound of 10 ms")
    );
}

/// Every input that cannot happen: exit 2, one line naming file, line and field.
#[test]
fn judge_refuses_what_cannot_happen() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("judge-impossible");
    std::fs::create_dir_all(&dir).expect("tmp");
    let head = "{\"format\":\"leaselab-history\",\"version\":1}\n";
    let inv = |time: u64| {
        format!("{{\"type\":\"invoke\",\"process\":\"a\",\"time\":{time},\"op\":\"acquire\",\"lease\":\"l\",\"ttl_ms\":10}}\n")
    };
    let ok = |time: u64, token: &str, expires: u64| {
        format!("{{\"type\":\"ok\",\"process\":\"a\",\"time\":{time},\"op\":\"acquire\",\"token\":{token},\"expires\":{expires}}}\n")
    };
    let cases: [(&str, String, &str); 5] = [
        ("before-invoke", format!("{head}{}{}", inv(10), ok(5, "1", 20)), ":3: field `time`"),
        ("clock-back", format!("{head}{}{}{}", inv(10), ok(12, "1", 20), inv(11)), ":4: field `time`"),
        ("bigint", format!("{head}{}{}", inv(10), ok(12, "9223372036854775808", 20)), ":3: field `token`"),
        ("expires-early", format!("{head}{}{}", inv(100), ok(120, "1", 50)), ":3: field `expires`"),
        ("two-open", format!("{head}{}{{\"type\":\"invoke\",\"process\":\"b\",\"time\":10,\"op\":\"now\",\"db\":\"lease\"}}\n{{\"type\":\"ok\",\"process\":\"b\",\"time\":10,\"op\":\"now\",\"value\":10}}\n{}", inv(10), inv(11)), ":5: field `type`"),
    ];
    for (name, text, want) in cases {
        let file = dir.join(format!("{name}.jsonl"));
        std::fs::write(&file, &text).expect("write");
        let f = file.display().to_string();
        let (code, out, err) = leaselab(&["judge", &f]);
        assert_eq!(code, Some(2), "{name}: {out}{err}");
        assert_eq!(err.lines().count(), 1, "{name}: {err}");
        assert!(
            err.starts_with(&format!("leaselab judge: {f}{want}")),
            "{name}: {err}"
        );
    }
}
