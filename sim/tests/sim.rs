//! The simulation's promises: determinism (same seed, same bytes, under both drivers), negative
//! controls *found* (not staged) and shrunk, the scope fence clean over many seeds, faults that
//! really fire, and a failing run's trace replaying to the same violation.

use leaselab_checkers::sometimes::Sometimes;
use leaselab_checkers::Check;
use leaselab_model::{FenceMode, LeaseDurability};
use leaselab_sim::sweep::{default_jobs, shrink, sweep, Seeds};
use leaselab_sim::{run_seed, Driver, FaultKind, SimOptions};
use leaselab_trace::Trace;

fn opts(fence: FenceMode) -> SimOptions {
    SimOptions {
        fence,
        ..SimOptions::default()
    }
}

fn seeds(start: u64, end: u64) -> Seeds {
    Seeds {
        start,
        end,
        shard: (0, 1),
    }
}

#[test]
fn same_seed_same_bytes_over_200_seeds() {
    let o = opts(FenceMode::Scope);
    for seed in 0..200 {
        let a = run_seed(seed, &o, Driver::Fast).trace.to_text();
        let b = run_seed(seed, &o, Driver::Fast).trace.to_text();
        assert!(a == b, "seed {seed}: traces differ");
    }
}

#[test]
fn turmoil_driver_is_deterministic_and_replays() {
    let o = SimOptions {
        tick_ms: 1,
        ..opts(FenceMode::Scope)
    };
    for seed in [1, 2] {
        let a = run_seed(seed, &o, Driver::Turmoil);
        let b = run_seed(seed, &o, Driver::Turmoil);
        assert_eq!(a.trace.to_text(), b.trace.to_text(), "seed {seed}");
        assert!(
            !a.failed(),
            "scope fence under turmoil, seed {seed}: {:?}",
            a.report.violations
        );
        assert!(a.trace.history.events.len() > 100, "the holders did work");
        let back = Trace::parse(&a.trace.to_text(), "mem").expect("parses");
        let r = replays(&back);
        assert!(r, "seed {seed}: turmoil trace does not replay on the model");
    }
}

/// The trace reproduces on the model step by step, with its recorded verdict.
fn replays(t: &Trace) -> bool {
    leaselab_trace::replay::replay(t).ok()
}

fn found_and_shrunk(fence: FenceMode, max_steps: usize) {
    let res = sweep(
        seeds(0, 300),
        &opts(fence),
        Driver::Fast,
        false,
        default_jobs(),
        &mut |_, _, _| {},
    );
    let first = res
        .failures
        .iter()
        .find(|f| f.run.report.violated(Check::I3))
        .unwrap_or_else(|| panic!("fence {fence}: no I3 violation found in 300 seeds"));
    let s = shrink(&first.run);
    assert!(
        s.report.violated(Check::I3),
        "shrunk run must fail the same check"
    );
    assert!(s.setup.plan.faults.len() <= first.run.setup.plan.faults.len());
    assert!(
        s.trace.history.events.len() <= max_steps,
        "fence {fence}: shrunk to {} steps (bound {max_steps})",
        s.trace.history.events.len()
    );
    assert!(replays(&s.trace), "shrunk trace replays with its verdict");
}

#[test]
fn unfenced_resource_violation_is_found_and_shrunk() {
    found_and_shrunk(FenceMode::Off, 200);
}

#[test]
fn check_then_write_violation_is_found_and_shrunk() {
    found_and_shrunk(FenceMode::CheckThenWrite, 200);
}

#[test]
fn row_fence_violation_is_found_and_shrunk() {
    found_and_shrunk(FenceMode::Row, 200);
}

/// The scope fence — or the fence `LEASELAB_FENCE` names, when a learner switches it; then the
/// first failure is shrunk, saved, and printed as a timeline with its replay command and the
/// exercise that explains it.
#[test]
fn scope_fence_holds_over_many_seeds() {
    let fence = leaselab_picture::lesson::fence_under_test().unwrap_or_else(|e| panic!("{e}"));
    let res = sweep(
        seeds(0, 1000),
        &opts(fence),
        Driver::Fast,
        false,
        default_jobs(),
        &mut |_, _, _| {},
    );
    if let Some(f) = res.failures.first() {
        let s = shrink(&f.run);
        let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("lesson");
        let _ = std::fs::create_dir_all(&dir);
        let p = dir.join(format!("seed-{}.shrunk.trace", s.setup.seed));
        let _ = std::fs::write(&p, s.trace.to_text());
        panic!(
            "fence={fence}: {} of 1000 seeds failed; the first, seed {}, shrunk: {}\n{}",
            res.failures.len(),
            s.setup.seed,
            s.report
                .violations
                .first()
                .map_or("liveness".to_string(), |v| v.to_string()),
            leaselab_picture::lesson::failure_text(
                &s.trace.history,
                &s.trace.config,
                &s.report,
                &format!("leaselab sim --from-trace {}", p.display()),
            )
        );
    }
    let bad: Vec<String> = res
        .failures
        .iter()
        .map(|f| {
            format!(
                "{}: {:?} {:?}",
                f.run.setup.title(Driver::Fast),
                f.run.report.violations.first(),
                f.run.liveness
            )
        })
        .collect();
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    // ...and the faults that could have broken it did fire: every `sometimes` property.
    for p in Sometimes::ALL {
        assert!(res.runs_with.get(p) > 0, "{p} never fired in 1000 seeds");
    }
}

#[test]
fn unlogged_lease_table_is_found_to_reuse_tokens() {
    let o = SimOptions {
        lease_table: LeaseDurability::Unlogged,
        faults: vec![FaultKind::Crash],
        ..opts(FenceMode::Scope)
    };
    let res = sweep(
        seeds(0, 50),
        &o,
        Driver::Fast,
        false,
        default_jobs(),
        &mut |_, _, _| {},
    );
    assert!(
        res.failures
            .iter()
            .any(|f| f.run.report.violated(Check::I2)),
        "no I2 violation with an unlogged lease table"
    );
}

#[test]
fn a_failing_run_round_trips_through_its_trace() {
    let o = opts(FenceMode::Off);
    let run = (0..300)
        .map(|s| run_seed(s, &o, Driver::Fast))
        .find(|r| r.report.violated(Check::I3))
        .expect("a failing seed");
    let text = run.trace.to_text();
    let back = Trace::parse(&text, "saved.trace").expect("parses");
    assert_eq!(back.to_text(), text);
    assert!(replays(&back));
    let replayed = leaselab_checkers::check(&back.history);
    let (a, b) = (
        run.report.of(Check::I3).next().expect("I3"),
        replayed.of(Check::I3).next().expect("I3 again"),
    );
    assert_eq!(a, b, "same violation, same events");
    // And the seed alone reproduces the run.
    assert_eq!(
        run_seed(run.setup.seed, &o, Driver::Fast).trace.to_text(),
        text
    );
}

#[test]
fn shards_partition_the_seed_range() {
    let mut all: Vec<u64> = (0..3)
        .flat_map(|k| {
            Seeds {
                start: 10,
                end: 40,
                shard: (k, 3),
            }
            .iter()
        })
        .collect();
    all.sort();
    assert_eq!(all, (10..40).collect::<Vec<_>>());
}

#[test]
fn no_faults_means_no_failures_and_steady_progress() {
    let o = SimOptions {
        faults: vec![],
        ..opts(FenceMode::Off)
    };
    let run = run_seed(3, &o, Driver::Fast);
    assert!(!run.failed(), "{:?}", run.report.violations);
    assert!(
        run.stats.iter().map(|s| s.jobs).sum::<u64>() > 20,
        "{:?}",
        run.stats
    );
}

#[test]
fn a_sweep_gives_the_same_result_on_any_number_of_threads() {
    let o = opts(FenceMode::Off);
    let run = |jobs| {
        let mut calls = 0u64;
        let res = sweep(
            seeds(0, 60),
            &o,
            Driver::Fast,
            true,
            jobs,
            &mut |done, total, _| {
                calls += 1;
                assert!(done <= total);
            },
        );
        assert_eq!(calls, 60, "progress is reported once per seed");
        res
    };
    let (one, three) = (run(1), run(3));
    assert!(
        !one.failures.is_empty(),
        "the unfenced sweep must fail somewhere"
    );
    assert_eq!(one.runs, three.runs);
    assert_eq!(one.events, three.events);
    assert_eq!(one.sometimes, three.sometimes);
    assert_eq!(one.runs_with, three.runs_with);
    let texts = |r: &leaselab_sim::sweep::SweepResult| -> Vec<(String, Option<String>)> {
        r.failures
            .iter()
            .map(|f| {
                (
                    f.run.trace.to_text(),
                    f.shrunk.as_ref().map(|s| s.trace.to_text()),
                )
            })
            .collect()
    };
    assert_eq!(
        texts(&one),
        texts(&three),
        "same failures, in seed order, same bytes"
    );
}

/// The checkers' second oracle on simulation runs: for 200 seeds under the scope fence and 200
/// without a fence, the facts the checkers derive from each history equal what the model's
/// databases committed while the run was replayed.
#[test]
fn checker_facts_equal_the_model_ledger_on_simulation_runs() {
    use leaselab_checkers::{facts::derive, ledger::cross_check};
    use leaselab_trace::replay::reexecute;
    for fence in [
        leaselab_model::FenceMode::Scope,
        leaselab_model::FenceMode::Off,
    ] {
        let opts = leaselab_sim::SimOptions {
            fence,
            ..leaselab_sim::SimOptions::default()
        };
        for seed in 0..200 {
            let run = leaselab_sim::run_seed(seed, &opts, leaselab_sim::Driver::Fast);
            let r = reexecute(&run.trace);
            assert!(r.divergences.is_empty(), "seed {seed} does not replay");
            let d = cross_check(&derive(&run.trace.history), &r.ledger);
            assert!(
                d.is_empty(),
                "seed {seed} --fence {fence}: {}",
                d.join("\n")
            );
        }
    }
}

/// The turmoil driver reports an unreadable wire message as an error of the run, never as a
/// clean run.
#[test]
fn an_unreadable_wire_message_is_a_driver_error_not_a_clean_run() {
    let o = SimOptions {
        safety_ms: 3_000,
        liveness_ms: 1_000,
        ..opts(FenceMode::Scope)
    };
    let clean = leaselab_sim::turmoil_driver::run(leaselab_sim::Setup::derive(1, &o));
    assert!(clean.driver_errors.is_empty(), "{:?}", clean.driver_errors);
    let bad = leaselab_sim::turmoil_driver::run_with(
        leaselab_sim::Setup::derive(1, &o),
        Some("7 holder-a/lease/0 acquire lease=report-job holder"),
    );
    assert!(bad.failed(), "a run with a bad message must not pass");
    assert_eq!(
        bad.first_failure(),
        Some(leaselab_sim::scenario::Failing::Driver)
    );
    assert!(
        bad.driver_errors[0].contains("unreadable request"),
        "{:?}",
        bad.driver_errors
    );
}

/// A build whose RUSTFLAGS drop `--cfg tokio_unstable` (a RUSTFLAGS environment variable
/// replaces `.cargo/config.toml`'s list) must not silently lose tokio's seeding: the turmoil
/// driver refuses to compile and says why.
#[test]
fn a_build_without_tokio_unstable_is_refused_with_the_reason() {
    let target = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("no-tokio-unstable");
    let out = std::process::Command::new(env!("CARGO"))
        .args(["check", "--quiet", "--lib", "-p", "leaselab-sim"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("RUSTFLAGS", "--cfg leaselab_without_tokio_unstable")
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .expect("cargo runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "it built: {err}");
    assert!(
        err.contains("needs `--cfg tokio_unstable`") && err.contains("RUSTFLAGS"),
        "{err}"
    );
}

/// The simulation the user asked for runs under turmoil: each negative control is found by a
/// turmoil sweep (on known seeds: the first failing seed of `leaselab sim --seeds 0..300
/// --driver turmoil` for each, see BENCHMARKS.md) and shrunk with the turmoil driver, to a run
/// that still fails the same check and replays on the model.
#[test]
fn turmoil_finds_and_shrinks_each_negative_control() {
    let unlogged = SimOptions {
        lease_table: LeaseDurability::Unlogged,
        ..opts(FenceMode::Scope)
    };
    for (o, seed, check) in [
        (opts(FenceMode::Off), 1, Check::I3),
        (opts(FenceMode::CheckThenWrite), 7, Check::I3),
        (opts(FenceMode::Row), 1, Check::I3),
        (unlogged, 3, Check::I2),
    ] {
        let run = run_seed(seed, &o, Driver::Turmoil);
        assert!(
            run.report.violated(check),
            "{}: turmoil seed {seed} no longer fails {check:?}",
            o.fence
        );
        let s = shrink(&run);
        assert_eq!(
            s.driver,
            Driver::Turmoil,
            "shrunk with the driver that found it"
        );
        assert!(
            s.report.violated(check),
            "{}: the shrunk run fails {check:?}",
            o.fence
        );
        assert!(
            s.setup.plan.faults.len() <= run.setup.plan.faults.len()
                && s.trace.history.events.len() < run.trace.history.events.len(),
            "{}: shrinking made it smaller",
            o.fence
        );
        assert!(
            replays(&s.trace),
            "{}: the shrunk turmoil trace replays",
            o.fence
        );
    }
}

#[test]
fn an_unknown_fault_kind_is_named_with_every_kind_there_is() {
    let e = FaultKind::parse_list("pause,meteor").expect_err("meteor is no fault kind");
    let text = e.to_string();
    assert!(text.contains("`meteor`"), "{text}");
    for k in FaultKind::ALL {
        assert!(text.contains(k.as_str()), "{text} lacks {k}");
    }
}

/// `LEASELAB_FENCE=off` makes the many-seeds test fail on I3 with a readable picture: this
/// test runs that test again in a child process of this very test binary, with the switch set.
#[test]
fn the_fence_switch_fails_the_invariant_test_with_a_timeline() {
    if leaselab_picture::lesson::switched() {
        return; // the child itself
    }
    let (passed, out) = leaselab_picture::lesson::rerun_switched(
        "scope_fence_holds_over_many_seeds",
        FenceMode::Off,
        &[],
    );
    assert!(!passed, "the switched test must fail:\n{out}");
    for want in [
        "fence=off:",
        "I3 violated",
        "t ms │ holder-",
        "◀ #",
        "✗ I3",
        "replay: leaselab sim --from-trace ",
        "explained in EXERCISES.md, exercise 1 (switch the fence off)",
    ] {
        assert!(out.contains(want), "missing `{want}`:\n{out}");
    }
    // The printed replay command recreates the shrunk run: its file is there and replays the
    // same violation.
    let file = out
        .lines()
        .find_map(|l| l.strip_prefix("replay: leaselab sim --from-trace "))
        .expect("replay line");
    let text = std::fs::read_to_string(file.trim()).expect("the shrunk trace was written");
    let t = Trace::parse(&text, file).expect("parses");
    assert!(t.expect.contains(&Check::I3), "{text}");
    assert!(replays(&t));
}

/// Holders that write each part as one `write` operation (how `leaselab audit --sim-seeds`
/// drives a user's spec) on the model: the scope fence holds, every part is one `write`, and
/// jobs finish.
#[test]
fn whole_write_holders_hold_under_the_scope_fence() {
    use leaselab_model::Op;
    use leaselab_sim::fast::FastSim;
    let mut jobs = 0;
    for seed in 0..100 {
        let mut setup = leaselab_sim::Setup::derive(seed, &opts(FenceMode::Scope));
        for h in &mut setup.holders {
            h.whole_writes = true;
        }
        let run = FastSim::new(setup.clone()).run();
        assert!(!run.failed(), "seed {seed}: {:?}", run.report.violations);
        // The trace carries the holders' write mode: `sim --from-trace` runs them again.
        let back = leaselab_sim::Setup::from_trace_text(&run.trace.to_text(), "t").expect("parses");
        assert_eq!(back.setup, setup, "seed {seed}");
        let ops = &run.trace.history.events;
        assert!(
            ops.iter().any(|e| matches!(e.op, Op::Write { .. })),
            "seed {seed}"
        );
        assert!(
            !ops.iter()
                .any(|e| matches!(e.op, Op::Fence { .. } | Op::Begin { .. })),
            "seed {seed}"
        );
        jobs += run.stats.iter().map(|s| s.jobs).sum::<u64>();
    }
    assert!(jobs > 1_000, "{jobs} jobs");
}

/// The same holders break an unfenced resource: the negative control of the seam.
#[test]
fn whole_write_holders_break_an_unfenced_resource() {
    use leaselab_sim::fast::FastSim;
    let found = (0..200).any(|seed| {
        let mut setup = leaselab_sim::Setup::derive(seed, &opts(FenceMode::Off));
        for h in &mut setup.holders {
            h.whole_writes = true;
        }
        FastSim::new(setup).run().report.violated(Check::I3)
    });
    assert!(found);
}

/// A holder whose statement waited on a lock gets its answer once the lock is gone: the
/// simulation awaits exactly the statements that stopped waiting and have a result — never
/// one still waiting (it would be answered `blocked` again) nor one with nothing to collect.
/// (A holder may also give up on a wait and disconnect, or a crash may end it.)
#[test]
fn every_statement_that_waited_is_answered() {
    use leaselab_model::{Op, Outcome};
    use leaselab_sim::fast::FastSim;
    let mut answered = 0;
    for seed in 0..200 {
        let setup = leaselab_sim::Setup::derive(seed, &opts(FenceMode::Scope));
        let holders = setup.holders.len();
        let run = FastSim::new(setup).run();
        let events = &run.trace.history.events;
        let mut still_waiting = 0;
        for (i, e) in events.iter().enumerate() {
            if e.outcome != Outcome::Blocked {
                continue;
            }
            let next = events[i + 1..]
                .iter()
                .find(|x| x.conn_str() == e.conn_str() || matches!(x.op, Op::Crash { .. }));
            match next.map(|x| (&x.op, &x.outcome)) {
                None => still_waiting += 1,
                Some((Op::Await { .. }, o)) => {
                    assert!(
                        !matches!(o, Outcome::Blocked | Outcome::Error(_)),
                        "seed {seed}: #{} {} answered {o}",
                        e.seq,
                        e.op
                    );
                    answered += 1;
                }
                Some((Op::Disconnect { .. } | Op::Crash { .. }, _)) => {}
                Some((op, o)) => panic!("seed {seed}: #{} {} waits, then {op} => {o}", e.seq, e.op),
            }
        }
        assert!(
            still_waiting <= holders,
            "seed {seed}: {still_waiting} never answered"
        );
    }
    assert!(answered > 20, "{answered} answered after waiting");
}

/// The counters tell the truth: over `sim --seeds 0..50 --fence off`, every run whose verdict
/// has a stale write kept (I3, acceptance) also counts a stale-write attempt — the write that
/// was sent while the lease was valid and committed after it ended included — and the sweep
/// sees pauses before a commit at all.
#[test]
fn every_run_that_kept_a_stale_write_counts_a_stale_write_attempt() {
    let o = opts(FenceMode::Off);
    let (mut kept, mut paused_before_commit) = (0, 0);
    for seed in 0..50 {
        let r = run_seed(seed, &o, Driver::Fast);
        paused_before_commit += r.report.sometimes.get(Sometimes::PauseBeforeCommit);
        if r.report.violated(Check::I3) || r.report.violated(Check::Acceptance) {
            kept += 1;
            assert!(
                r.report.sometimes.get(Sometimes::StaleWriteAttempted) > 0,
                "seed {seed}: a stale write kept, none counted: {}",
                r.report.sometimes
            );
        }
    }
    assert!(kept >= 3, "{kept} runs kept a stale write");
    assert!(paused_before_commit > 0);
}
