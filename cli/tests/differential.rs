//! The differential against a real PostgreSQL beyond the committed traces: 200 simulation
//! seeds with `sim`'s own settings, generated multi-session schedules (fixed seeds, so the
//! same schedules every run) agree step by step with the model, and every deliberately wrong
//! model rule is found and shrunk. Without PostgreSQL binaries the test says so and skips
//! — unless `LEASELAB_REQUIRE_PG=1` (set by `.ci/run`).

use leaselab::diff_cmd::run_gen;
use leaselab_model::model::WrongRule;
use leaselab_model::Outcome;
use leaselab_pg::cluster::postgres_for_test;
use leaselab_pg::PgBackend;
use leaselab_trace::Trace;
use std::path::PathBuf;

/// A search as the commands run it, but with 300 shrinking runs instead of 2,000: enough for
/// the sizes asserted below, and most of a failing search's time is its shrinking.
fn search(schedules: u32, seed: u64) -> leaselab_gen::search::Plan {
    leaselab_gen::search::Plan {
        shrink_iters: 300,
        ..leaselab::gen_search::plan(schedules, seed)
    }
}

fn postgres(name: &str) -> Option<(PgBackend, PathBuf)> {
    if !postgres_for_test(&format!("cli::differential::{name}")) {
        return None;
    }
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let pg = PgBackend::throwaway(&tmp.join(format!("leaselab-pg-{name}")))
        .unwrap_or_else(|e| panic!("cannot start PostgreSQL: {e}"));
    Some((pg, tmp.join(format!("{name}-failures"))))
}

/// `leaselab diff --sim-seeds 0..200`: the same runs as `leaselab sim --seed N` (one set of
/// defaults), every fault kind, crash-restart included. Four tests of 50 seeds, so that the
/// harness runs them side by side (one loop of 200 was the last test of the binary to end).
fn simulation_seeds_agree_with_postgres(seeds: std::ops::Range<u64>) {
    use leaselab_sim::{run_seed, Driver, SimOptions};
    let Some((mut pg, _)) = postgres(&format!("sim-{}", seeds.start)) else {
        return;
    };
    for seed in seeds {
        let t = run_seed(seed, &SimOptions::default(), Driver::Fast).trace;
        let r = leaselab_pg::diff(&mut pg, &t, None).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        assert!(
            r.ok(),
            "sim seed {seed}: {}\nreproduce: leaselab diff --sim-seeds {seed}..{}",
            r.describe(),
            seed + 1
        );
    }
}

#[test]
fn simulation_seeds_0_to_50_agree_with_postgres() {
    simulation_seeds_agree_with_postgres(0..50);
}

#[test]
fn simulation_seeds_50_to_100_agree_with_postgres() {
    simulation_seeds_agree_with_postgres(50..100);
}

#[test]
fn simulation_seeds_100_to_150_agree_with_postgres() {
    simulation_seeds_agree_with_postgres(100..150);
}

#[test]
fn simulation_seeds_150_to_200_agree_with_postgres() {
    simulation_seeds_agree_with_postgres(150..200);
}

/// 300 schedules of up to 40 intents, every fence mode, both lease tables.
#[test]
fn generated_schedules_agree_with_postgres() {
    let Some((mut pg, out)) = postgres("gen") else {
        return;
    };
    let r = run_gen(
        std::slice::from_mut(&mut pg),
        search(300, 7),
        None,
        &out,
        false,
    )
    .expect("postgres runs");
    // The divergence first: it is what a failure must show (the trace holds its reproduce
    // command in its title; the count alone says nothing).
    if let Some((file, what)) = &r.divergence {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        panic!(
            "divergence after {} schedules (shrunk to {}): {what}\nreproduce: leaselab diff {}\n{text}",
            r.schedules,
            file.display(),
            file.display()
        );
    }
    assert!(r.schedules >= 300, "{} schedules", r.schedules);
}

// One test per wrong rule, so that the test harness runs them side by side: each waits on
// PostgreSQL far more than it computes, and run in one loop they were the suite's longest test.
// `waiters-in-queue-order` has none: PostgreSQL takes a non-queue order by timing alone (3 runs
// of 20 with three waiters), so whether a given run shows it is not for a test to require;
// `model/tests/allowed.rs` shows the rule removes those orders from the allowed set.
macro_rules! wrong_rules {
    ($($test:ident: $rule:expr),* $(,)?) => {
        $(
            #[test]
            fn $test() {
                wrong_rule_is_found_and_shrunk($rule);
            }
        )*

        /// Every wrong rule but `waiters-in-queue-order` has its test above.
        #[test]
        fn every_wrong_rule_has_a_test() {
            let tested = [$($rule),*];
            for rule in WrongRule::ALL {
                assert_eq!(
                    tested.contains(&rule),
                    rule != WrongRule::WaitersInQueueOrder,
                    "{}",
                    rule.as_str()
                );
            }
        }
    };
}

wrong_rules! {
    update_waits_before_where_is_found_and_shrunk: WrongRule::UpdateWaitsBeforeWhere,
    repeatable_read_reads_latest_is_found_and_shrunk: WrongRule::RepeatableReadReadsLatest,
    disconnect_drops_waiter_is_found_and_shrunk: WrongRule::DisconnectDropsWaiter,
    failed_recheck_releases_row_is_found_and_shrunk: WrongRule::FailedRecheckReleasesRow,
}

/// The wrong rule is found within 1,000 schedules, shrunk to at most 12 steps, and the printed
/// reproduce command diverges again, while the right rules agree on the same trace.
fn wrong_rule_is_found_and_shrunk(rule: WrongRule) {
    let Some((mut pg, out)) = postgres(&format!("wrong-{}", rule.as_str())) else {
        return;
    };
    let dir = out.join(rule.as_str());
    let r = run_gen(
        std::slice::from_mut(&mut pg),
        search(1_000, 1),
        Some(rule),
        &dir,
        false,
    )
    .expect("postgres runs");
    let (file, what) = r
        .divergence
        .unwrap_or_else(|| panic!("{}: not found in {} schedules", rule.as_str(), r.schedules));
    // The search's own schedules and the runs that shrank its divergence are counted apart.
    assert!(r.schedules <= 1_000, "{} schedules", r.schedules);
    assert!(r.shrink_runs >= 1, "{}: no shrinking run", rule.as_str());
    let text = std::fs::read_to_string(&file).expect("trace written");
    let t = Trace::parse(&text, &file.display().to_string()).expect("parses");
    // The printed reproduce command, `leaselab diff FILE --wrong-rule RULE`, diverges again.
    let again = leaselab_pg::diff_with_rule(&mut pg, &t, None, Some(rule)).expect("diff runs");
    assert!(
        !again.ok(),
        "{}: the trace does not reproduce: {}",
        rule.as_str(),
        again.describe()
    );
    // ... and with the right rules the same trace agrees with PostgreSQL.
    let right = leaselab_pg::diff(&mut pg, &t, None).expect("diff runs");
    assert!(right.ok(), "{}: {}", rule.as_str(), right.describe());
    assert!(
        t.history.events.len() <= 12,
        "{}: shrunk to {} steps: {what}\n{text}",
        rule.as_str(),
        t.history.events.len()
    );
}

/// The failed re-check keeps its row for every statement kind: each committed trace of that
/// place (fences, renew, release) diverges under the wrong rule at the third session's step,
/// and agrees with the right rules.
#[test]
fn a_failed_recheck_keeps_its_row_in_every_committed_trace_of_it() {
    let Some((mut pg, _)) = postgres("wrong-recheck-traces") else {
        return;
    };
    for name in [
        "trust2-failed-fence-keeps-floor-scope",
        "trust2-failed-fence-keeps-floor-strict",
        "trust2-failed-renew-keeps-lease-row",
        "trust2-failed-release-keeps-lease-row",
    ] {
        let file = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../traces")
            .join(format!("{name}.trace"));
        let text = std::fs::read_to_string(&file).expect("committed trace");
        let t = Trace::parse(&text, &file.display().to_string()).expect("parses");
        let wrong = leaselab_pg::diff_with_rule(
            &mut pg,
            &t,
            None,
            Some(WrongRule::FailedRecheckReleasesRow),
        )
        .expect("diff runs");
        assert!(!wrong.ok(), "{name}: the wrong rule is not caught");
        let d = wrong.divergences.first().expect("a divergence at a step");
        assert_eq!(
            d.reference,
            Outcome::Blocked,
            "{name}: {}",
            wrong.describe()
        );
        let right = leaselab_pg::diff(&mut pg, &t, None).expect("diff runs");
        assert!(right.ok(), "{name}: {}", right.describe());
    }
}

/// Runs the binary; returns (exit code, stdout).
fn leaselab(args: &[&str]) -> (Option<i32>, String) {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_leaselab"))
        .args(args)
        .output()
        .expect("runs");
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
    )
}

/// Every command `diff --sim-seeds` prints is run as printed: the reproduce command of a
/// diverging simulation seed diverges again at the same step, and the timeline command
/// recreates the diffed trace byte for byte.
#[test]
fn every_command_diff_prints_does_what_it_says() {
    let Some((pg, out)) = postgres("printed") else {
        return;
    };
    drop(pg);
    let pg_dir = out.with_extension("pg");
    let (d, p) = (
        out.to_string_lossy().into_owned(),
        pg_dir.to_string_lossy().into_owned(),
    );
    // Seed 46 (10 s) has a stale write; a model without the fence disagrees with PostgreSQL.
    let (code, text) = leaselab(&[
        "diff",
        "--sim-seeds",
        "46..47",
        "--safety-ms",
        "10000",
        "--model-fence",
        "off",
        "--out",
        &d,
        "--pg-dir",
        &p,
    ]);
    assert_eq!(code, Some(4), "{text}");
    let field = |name: &str| -> String {
        text.lines()
            .find_map(|l| l.trim_start().strip_prefix(name))
            .unwrap_or_else(|| panic!("no `{name}` in {text}"))
            .to_string()
    };
    let first = text.lines().next().expect("DIFF line").to_string();
    let saved = PathBuf::from(field("trace: "));
    let reproduce = field("reproduce: ");
    let words: Vec<&str> = reproduce.split_whitespace().collect();
    assert_eq!(&words[..2], ["leaselab", "diff"], "{reproduce}");
    let mut args = words[1..].to_vec();
    args.extend(["--pg-dir", &p]);
    let (code, again) = leaselab(&args);
    assert_eq!(code, Some(4), "{again}");
    let step = first.split(" :: ").nth(1).expect("verdict");
    assert!(
        again.contains(step),
        "`{reproduce}` gives {again}, not {step}"
    );
    let timeline = field("timeline: ");
    let words: Vec<&str> = timeline.split_whitespace().collect();
    let x = out.join("timeline.trace");
    let mut args = words[1..].to_vec();
    let xs = x.to_string_lossy().into_owned();
    args.extend(["--quiet", "--trace-out", &xs]);
    leaselab(&args);
    assert!(
        std::fs::read(&x).expect("timeline trace") == std::fs::read(&saved).expect("saved"),
        "`{timeline}` recreates {}",
        saved.display()
    );
}

/// `leaselab diff --gen … --wrong-rule …` finds and shrinks a divergence, and the `reproduce:`
/// command it prints diverges again. (Apart from the test above, so that the two run side by
/// side.) Schedules of at most 12 intents and the wrong rule found soonest: what is under test is
/// the printed command, and `update_waits_before_where_is_found_and_shrunk` already searches the
/// full size; seed 0 finds it at schedule 10 and shrinks it in about 300 runs.
#[test]
fn every_command_diff_gen_prints_does_what_it_says() {
    printed_gen_command_diverges_again(
        "printed-gen",
        &["--steps", "12"],
        "update-waits-before-where",
    );
}

/// The same through the full search the README shows (1,000 schedules of up to 40 intents,
/// 2,000 shrinking runs, the wrong rule that takes longest to find): about 3 minutes alone.
/// It proves nothing the two tests above do not, so it is in the long tier:
/// `cargo test --release --test differential -- --ignored`.
#[test]
#[ignore = "long tier: the full `diff --gen 1000` search of the README (about 3 minutes)"]
fn every_command_diff_gen_prints_does_what_it_says_at_full_size() {
    printed_gen_command_diverges_again("printed-gen-full", &[], "disconnect-drops-waiter");
}

fn printed_gen_command_diverges_again(name: &str, size: &[&str], rule: &str) {
    let Some((pg, out)) = postgres(name) else {
        return;
    };
    drop(pg);
    let p = out.with_extension("pg").to_string_lossy().into_owned();
    // A shrunk generated schedule of a wrong rule.
    let gen_out = out.join("gen");
    let g = gen_out.to_string_lossy().into_owned();
    let mut args = vec!["diff", "--gen", "1000"];
    args.extend(size);
    args.extend(["--wrong-rule", rule, "--out", &g, "--pg-dir", &p]);
    let (code, text) = leaselab(&args);
    assert_eq!(code, Some(4), "{text}");
    let reproduce = text
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("reproduce: "))
        .unwrap_or_else(|| panic!("no reproduce line: {text}"));
    let words: Vec<&str> = reproduce.split_whitespace().collect();
    assert_eq!(&words[..2], ["leaselab", "diff"], "{reproduce}");
    assert!(
        reproduce.contains(&format!("--wrong-rule {rule}")),
        "{reproduce}"
    );
    let mut args = words[1..].to_vec();
    args.extend(["--pg-dir", &p]);
    let (code, again) = leaselab(&args);
    assert_eq!(code, Some(4), "`{reproduce}`: {again}");
    assert!(
        again.contains("DIVERGED at step #") || again.contains("FINAL STATE DIFFERS"),
        "{again}"
    );
    // The schedule itself, run again: the client decides again on PostgreSQL's answers, and
    // every step answers as the trace recorded.
    let schedule = text
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("schedule: "))
        .unwrap_or_else(|| panic!("no schedule line: {text}"));
    let words: Vec<&str> = schedule.split_whitespace().collect();
    assert_eq!(&words[..3], ["leaselab", "diff", "--replay"], "{schedule}");
    assert!(
        schedule.contains(&format!("--wrong-rule {rule}")),
        "{schedule}"
    );
    let (code, again) = leaselab(&words[1..]);
    assert_eq!(code, Some(4), "`{schedule}`: {again}");
    assert!(
        again.starts_with("DIVERGENCE :: replayed ")
            && again.contains("every step answered as recorded"),
        "{again}"
    );
    // Without the wrong rule, the same schedule agrees.
    let right: Vec<&str> = words[1..]
        .iter()
        .copied()
        .filter(|w| *w != "--wrong-rule" && *w != rule)
        .collect();
    let (code, again) = leaselab(&right);
    assert_eq!(code, Some(0), "{again}");
    assert!(again.starts_with("AGREE :: replayed "), "{again}");
}

/// Every committed `diff --gen` divergence (`traces/diff/RULE.trace`) replays from its schedule
/// with the same answer: with its wrong rule the model diverges from PostgreSQL again and every
/// step answers as recorded; with the right model the same schedule agrees.
#[test]
fn every_committed_diff_failure_replays_from_its_schedule() {
    let Some((pg, out)) = postgres("committed-diff") else {
        return;
    };
    drop(pg);
    let p = out.with_extension("pg").to_string_lossy().into_owned();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../traces/diff");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("traces/diff/")
        .map(|e| e.expect("entry").path())
        .filter(|f| f.extension().is_some_and(|x| x == "trace"))
        .collect();
    files.sort();
    assert!(files.len() >= 3, "{files:?}");
    for file in files {
        let rule = file
            .file_stem()
            .and_then(|s| s.to_str())
            .expect("named by its rule")
            .to_string();
        let f = file.display().to_string();
        let (code, text) = leaselab(&[
            "diff",
            "--replay",
            &f,
            "--wrong-rule",
            &rule,
            "--pg-dir",
            &p,
        ]);
        assert_eq!(code, Some(4), "{rule}: {text}");
        assert!(
            text.starts_with("DIVERGENCE :: replayed ")
                && text.contains("every step answered as recorded"),
            "{rule}: {text}"
        );
        let (code, text) = leaselab(&["diff", "--replay", &f, "--pg-dir", &p]);
        assert_eq!(code, Some(0), "{rule}: {text}");
        assert!(text.starts_with("AGREE :: replayed "), "{rule}: {text}");
    }
}
