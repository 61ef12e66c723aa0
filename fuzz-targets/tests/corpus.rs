//! Every committed corpus input of every fuzz target, replayed on stable through the function
//! the fuzz binary calls; plus the targets' own checks: the decoders read back what the seed
//! encoders write, and each target's check fires when its property is broken.

use arbitrary::{Arbitrary, Unstructured};
use leaselab_fuzz_targets::{fuzz, model_ops, model_vs_threaded, sim_plan, trace_parse, TARGETS};
use leaselab_gen::holders::Step;
use leaselab_model::FenceMode;
use std::path::PathBuf;

fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let b = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (p, b)
        })
        .collect()
}

fn replay_corpus(target: &str) {
    let inputs = corpus(target);
    assert!(
        !inputs.is_empty(),
        "{target}: the committed corpus is empty"
    );
    for (p, bytes) in inputs {
        if std::panic::catch_unwind(|| fuzz(target, &bytes)).is_err() {
            panic!(
                "{target}: {} fails; reproduce with `cargo +nightly fuzz run {target} ../{}` in fuzz/",
                p.display(),
                p.strip_prefix(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".."))
                    .unwrap_or(&p)
                    .display()
            );
        }
    }
}

#[test]
fn model_ops_corpus() {
    replay_corpus("model_ops");
}

#[test]
fn trace_parse_corpus() {
    replay_corpus("trace_parse");
}

#[test]
fn model_vs_threaded_corpus() {
    replay_corpus("model_vs_threaded");
}

#[test]
fn sim_plan_corpus() {
    replay_corpus("sim_plan");
}

#[test]
fn history_parse_corpus() {
    replay_corpus("history_parse");
}

#[test]
fn every_target_has_a_corpus_and_a_binary() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz");
    for t in TARGETS {
        assert!(root.join("corpus").join(t).is_dir(), "fuzz/corpus/{t}");
        let bin = root.join("fuzz_targets").join(format!("{t}.rs"));
        let src =
            std::fs::read_to_string(&bin).unwrap_or_else(|e| panic!("{}: {e}", bin.display()));
        assert!(
            src.contains(&format!("leaselab_fuzz_targets::{t}::fuzz(")),
            "{} calls the function this test replays",
            bin.display()
        );
    }
}

/// holder-a passes its local check and stops before its write; its lease expires; holder-b
/// takes over and writes a part (in one `write`); holder-a resumes and writes with its old
/// token, statement by statement.
fn f5_like() -> Vec<Step> {
    vec![
        Step::Timer(0),
        Step::Pause(0),
        Step::Advance(1500),
        Step::Timer(1),
        Step::Run(1),
        Step::Resume(0),
        Step::Run(0),
        Step::Run(0),
        Step::Run(0),
    ]
}

#[test]
fn model_ops_decodes_what_it_encodes() {
    let input = model_ops::Input {
        config: 7,
        holders: 3,
        steps: vec![
            Step::Timer(2),
            Step::Advance(4000),
            Step::Crash(leaselab_model::DbName::Res),
            Step::Run(1),
            Step::Pause(2),
            Step::Resume(2),
            Step::Publish(0),
            Step::ReadPart(1),
        ],
    };
    let bytes = model_ops::encode(&input);
    let back = model_ops::Input::arbitrary_take_rest(Unstructured::new(&bytes)).expect("decodes");
    assert_eq!(back, input);
}

#[test]
fn model_ops_flags_a_violation_only_where_every_check_must_hold() {
    let off = (0..=u8::MAX)
        .find(|s| {
            model_ops::config(*s).fence == FenceMode::Off
                && !model_ops::must_hold(&model_ops::config(*s))
        })
        .expect("an unfenced selector");
    let input = |config| model_ops::Input {
        config,
        holders: 2,
        steps: f5_like(),
    };
    assert!(model_ops::must_hold(&model_ops::config(0)));
    assert_eq!(
        model_ops::run(&input(0)),
        Ok(()),
        "the scope fence stops the stale write"
    );
    assert_eq!(
        model_ops::run(&input(off)),
        Ok(()),
        "unfenced: only a panic is a finding"
    );
    let strict = model_ops::run_judged(&input(off), true).expect_err("unfenced, judged strictly");
    assert!(strict.0.contains("I3"), "{strict}");
    assert!(
        strict.0.contains("leaselab-trace v1"),
        "the finding carries the trace: {strict}"
    );
}

#[test]
fn model_vs_threaded_decodes_what_it_encodes_and_agrees_on_the_lab_cases() {
    use model_vs_threaded::Step as T;
    let input = model_vs_threaded::Input {
        mode: 2,
        holders: 4,
        steps: vec![
            T::Acquire(3),
            T::Advance(65_535),
            T::Renew(3),
            T::Write(3, 1),
            T::Release(0),
        ],
    };
    let bytes = model_vs_threaded::encode(&input);
    let back =
        model_vs_threaded::Input::arbitrary_take_rest(Unstructured::new(&bytes)).expect("decodes");
    assert_eq!(back, input);
    assert_eq!(model_vs_threaded::run(&input), Ok(()));
}

#[test]
fn model_vs_threaded_reports_a_difference() {
    // Two writes with one token: the scope store takes both, a strict model rejects the
    // second; the target must say so.
    use model_vs_threaded::Step as T;
    let input = model_vs_threaded::Input {
        mode: 0,
        holders: 2,
        steps: vec![T::Acquire(0), T::Write(0, 0), T::Write(0, 1)],
    };
    assert_eq!(model_vs_threaded::run(&input), Ok(()));
    let f =
        model_vs_threaded::run_paired(&input, leaselab_sync::StoreMode::Scope, FenceMode::Strict)
            .expect_err("a strict model beside a scope store");
    assert!(
        f.0.contains("step 3") && f.0.contains("Rejected") && f.0.contains("Accepted"),
        "{f}"
    );
}

#[test]
fn sim_plan_decodes_what_it_encodes() {
    for (p, bytes) in corpus("sim_plan").into_iter().take(8) {
        let input =
            sim_plan::Input::arbitrary_take_rest(Unstructured::new(&bytes)).expect("decodes");
        let again = sim_plan::encode(&input);
        let back =
            sim_plan::Input::arbitrary_take_rest(Unstructured::new(&again)).expect("decodes");
        assert_eq!(back, input, "{}", p.display());
    }
}

#[test]
fn sim_plan_flags_a_broken_invariant() {
    // As traces/sim-off-seed-3.trace: a holder frozen for longer than the TTL while the other
    // takes over. With the scope fence every run passes; unfenced, some seed lets the stale
    // write through, and the target reports it.
    let mut found = None;
    for seed in 0..32 {
        let input = sim_plan::Input {
            seed,
            holders: 2,
            faults: vec![leaselab_sim::Fault::PauseAtTime {
                holder: (seed % 2) as usize,
                at: leaselab_model::Millis(805),
                dur_ms: 2_443,
                kind: leaselab_sim::clock::PauseKind::Freeze,
            }],
        };
        assert_eq!(sim_plan::run(&input), Ok(()), "seed {seed}");
        let mut s = sim_plan::setup(&input);
        s.opts.fence = FenceMode::Off;
        if let Err(f) = sim_plan::run_checked(&s) {
            found = Some(f);
            break;
        }
    }
    let f = found.expect("an unfenced run with a stale write among 32 seeds");
    assert!(f.0.contains("I3") || f.0.contains("acceptance"), "{f}");
    assert!(
        f.0.contains("fault pause"),
        "the finding names its plan: {f}"
    );
}

#[test]
fn trace_parse_accepts_what_it_writes_and_rejects_with_a_place() {
    let good = leaselab_trace::Trace::new(
        "t",
        leaselab_model::Config::default(),
        leaselab_model::History::default(),
    )
    .to_text();
    assert_eq!(trace_parse::run(good.as_bytes()), Ok(()));
    let t = "leaselab-trace v1\nname x\nseed 0\n";
    assert_eq!(trace_parse::run(t.as_bytes()), Ok(()));
    let e = leaselab_trace::Trace::parse(t, trace_parse::FILE).expect_err("no events line");
    assert!(e.line >= 1 && !e.field.is_empty(), "{e:?}");
}

#[test]
fn any_bytes_are_some_input() {
    for bytes in [
        &b""[..],
        b"\xff",
        b"\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09",
    ] {
        let m = model_ops::Input::arbitrary_take_rest(Unstructured::new(bytes)).expect("model_ops");
        assert!((2..=4).contains(&m.holders));
        let t = model_vs_threaded::Input::arbitrary_take_rest(Unstructured::new(bytes))
            .expect("model_vs_threaded");
        assert!((2..=4).contains(&t.holders));
        let s = sim_plan::Input::arbitrary_take_rest(Unstructured::new(bytes)).expect("sim_plan");
        assert!(s.faults.len() <= sim_plan::MAX_FAULTS);
        for t in TARGETS {
            fuzz(t, bytes);
        }
    }
}
