//! `Judging` — the checks on a history that arrives event by event, keeping only the reads a
//! check can use — gives exactly `check`'s report: on every hand-written history, every
//! committed trace, the model's own runs under every fence (violations included), and random
//! event sequences full of unknown outcomes, waiting statements and reads of every version.

use leaselab_checkers::{check, Judging, Report};
use leaselab_model::{
    Config, DbName, Expiry, FenceMode, History, Holder, LeaseName, LeaseRow, Millis, Op, Outcome,
    Part, PartRow, Scope, Token,
};
use proptest::prelude::*;
use std::path::PathBuf;

fn streamed(h: &History) -> Report {
    let mut j = Judging::default();
    for e in &h.events {
        j.push(e);
    }
    j.finish()
}

fn same(h: &History, what: &str) {
    let (batch, stream) = (format!("{:#?}", check(h)), format!("{:#?}", streamed(h)));
    assert!(
        batch == stream,
        "{what}: batch\n{batch}\nstreamed\n{stream}"
    );
}

#[test]
fn every_hand_written_history_streams_to_the_same_report() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/histories");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).expect("histories") {
        let p = e.expect("entry").path();
        let r = leaselab_record::read::read_file(&p).unwrap_or_else(|e| panic!("{e}"));
        same(&r.history, &p.display().to_string());
        n += 1;
    }
    assert!(n >= 21, "{n} histories");
}

#[test]
fn every_committed_trace_streams_to_the_same_report() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../traces");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).expect("traces") {
        let p = e.expect("entry").path();
        if p.extension().is_none_or(|x| x != "trace") {
            continue;
        }
        let t = leaselab_trace::Trace::read(&p).unwrap_or_else(|e| panic!("{e}"));
        same(&t.history, &p.display().to_string());
        n += 1;
    }
    assert!(n >= 50, "{n} traces");
}

/// One random event: writes, reads and lease calls of three holders on two parts and one
/// lease, answered in every way a history allows (accepted, refused, `indeterminate`, left
/// waiting and collected later or never), in no particular order.
fn event() -> impl Strategy<Value = (usize, Op, Outcome)> {
    let holder = 0usize..3;
    let part = prop_oneof![Just("p1"), Just("p2")];
    // Few versions, so that reads often show one that was written.
    let content = prop_oneof![Just("a"), Just("b")];
    let token = 1u64..5;
    let write_out = prop_oneof![
        3 => Just(Outcome::Accepted),
        1 => Just(Outcome::Rejected),
        1 => Just(Outcome::Indeterminate("timeout".into())),
        1 => Just(Outcome::Blocked),
    ];
    let row = (0usize..2, content.clone(), 1u64..4).prop_map(|(w, c, t)| PartRow {
        content: c.to_string(),
        writer: Holder::new(NAMES[w]),
        token: Token(t),
    });
    let lease_row = (holder.clone(), token.clone(), 0u64..3000).prop_map(|(w, t, x)| LeaseRow {
        holder: Holder::new(NAMES[w]),
        token: Token(t),
        expires_at: if x < 100 {
            Expiry::NegInfinity
        } else {
            Expiry::At(Millis(x))
        },
    });
    let lease_out = prop_oneof![
        2 => (500u64..3000).prop_map(|x| Outcome::Renewed { expires: Expiry::At(Millis(x)) }),
        1 => Just(Outcome::Refused),
        1 => Just(Outcome::Released),
        1 => Just(Outcome::Indeterminate("timeout".into())),
        1 => Just(Outcome::Blocked),
    ];
    prop_oneof![
        4 => (0usize..2, part.clone(), content, 1u64..4, write_out).prop_map(
            |(h, p, c, t, out)| (h, Op::write(p, c, t), out)
        ),
        2 => (holder.clone(), prop_oneof![
            Just(Outcome::Accepted),
            Just(Outcome::Rejected),
            Just(Outcome::Indeterminate("conn-lost".into())),
            Just(Outcome::Renewed { expires: Expiry::At(Millis(2000)) }),
            Just(Outcome::Released),
        ])
        .prop_map(|(h, out)| (h, Op::Await { db: DbName::Res }, out)),
        1 => (holder.clone(), prop_oneof![
            Just(Outcome::Renewed { expires: Expiry::At(Millis(1800)) }),
            Just(Outcome::Released),
            Just(Outcome::Indeterminate("timeout".into())),
        ])
        .prop_map(|(h, out)| (h, Op::Await { db: DbName::Lease }, out)),
        5 => (part, prop::option::of(row)).prop_map(|(p, r)| (3, Op::read_part(p), Outcome::Part(r))),
        2 => (holder.clone(), token.clone(), 1000u64..2500).prop_map(|(h, t, x)| (
            h,
            Op::acquire(NAMES[h], 1000),
            Outcome::Granted { token: Token(t), expires: Expiry::At(Millis(x)) },
        )),
        3 => (holder.clone(), token.clone(), lease_out).prop_map(|(h, t, out)| {
            let op = if matches!(out, Outcome::Released) {
                Op::release(NAMES[h], t)
            } else {
                Op::renew(NAMES[h], t, 1000)
            };
            (h, op, out)
        }),
        3 => prop::option::of(lease_row).prop_map(|r| (
            3,
            Op::ReadLease { lease: LeaseName::new("report-job") },
            Outcome::Lease(r),
        )),
        1 => (holder, prop_oneof![Just(DbName::Res), Just(DbName::Lease)])
            .prop_map(|(h, db)| (h, Op::Disconnect { db }, Outcome::Ok)),
    ]
}

const NAMES: [&str; 4] = ["holder-a", "holder-b", "holder-c", "observer"];

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(2048),
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_histories_stream_to_the_same_report(events in prop::collection::vec(event(), 1..40)) {
        let mut h = History::default();
        for (i, (who, op, out)) in events.into_iter().enumerate() {
            let t = Millis(100 * (i as u64 + 1));
            h.push(t, t, Holder::new(NAMES[who]), None, op, out);
        }
        let (batch, stream) = (format!("{:#?}", check(&h)), format!("{:#?}", streamed(&h)));
        prop_assert!(batch == stream, "batch\n{}\nstreamed\n{}", batch, stream);
    }
}

/// The model's own runs (the one holder, every step interleaved, crashes), correct and with
/// each fence that lets stale writes through.
#[test]
fn model_runs_stream_to_the_same_report() {
    use leaselab_gen::holders::{steps, Harness};
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{Config as RunnerConfig, RngAlgorithm, TestRng, TestRunner};
    let configs = [
        Config::default(),
        Config::with_fence(FenceMode::Off),
        Config::with_fence(FenceMode::Row),
        Config::with_fence(FenceMode::CheckThenWrite),
    ];
    for (k, config) in configs.iter().enumerate() {
        let mut runner = TestRunner::new_with_rng(
            RunnerConfig::default(),
            TestRng::from_seed(RngAlgorithm::ChaCha, &[k as u8 + 1; 32]),
        );
        for _ in 0..64 {
            let (holders, steps) = steps().new_tree(&mut runner).expect("a schedule").current();
            let mut h = Harness::new(config.clone(), holders);
            for st in &steps {
                h.apply(st);
            }
            same(&h.w.history, &format!("{} {steps:?}", config.fence));
        }
    }
}

#[test]
fn a_part_or_scope_name_never_confuses_the_streamed_reads() {
    // Two scopes with the same part name: the highest token per part is kept per scope.
    let mut h = History::default();
    let a = Holder::new("holder-a");
    let write = |scope: &str, token: u64| Op::Write {
        scope: Scope::new(scope),
        part: Part::new("p"),
        content: "x".into(),
        token: Token(token),
    };
    h.push(
        Millis(1),
        Millis(1),
        a.clone(),
        None,
        write("s1", 5),
        Outcome::Accepted,
    );
    h.push(
        Millis(2),
        Millis(2),
        a.clone(),
        None,
        write("s2", 1),
        Outcome::Accepted,
    );
    let read = Op::ReadPart {
        scope: Scope::new("s2"),
        part: Part::new("p"),
    };
    let row = PartRow {
        content: "x".into(),
        writer: a.clone(),
        token: Token(1),
    };
    h.push(
        Millis(3),
        Millis(3),
        a,
        None,
        read,
        Outcome::Part(Some(row)),
    );
    same(&h, "two scopes");
    assert!(check(&h).violations.is_empty());
}

/// What streaming saves: reads of what an accepted write put there, with nothing above it,
/// are not kept; a read older than a token carried to the part, of a version nobody wrote, or
/// of an absent row where a write was, is.
#[test]
fn reads_no_check_can_use_are_not_kept() {
    use leaselab_checkers::facts::{derive, Deriver};
    let mut h = History::default();
    let a = Holder::new("holder-a");
    h.push(
        Millis(1),
        Millis(1),
        a.clone(),
        None,
        Op::write("p", "x", 2),
        Outcome::Accepted,
    );
    let row = |content: &str, token: u64| PartRow {
        content: content.into(),
        writer: a.clone(),
        token: Token(token),
    };
    for i in 0..100 {
        let t = Millis(2 + i);
        h.push(
            t,
            t,
            a.clone(),
            None,
            Op::read_part("p"),
            Outcome::Part(Some(row("x", 2))),
        );
    }
    let t = Millis(200);
    h.push(
        t,
        t,
        a.clone(),
        None,
        Op::write("q", "old", 1),
        Outcome::Accepted,
    );
    h.push(
        t,
        t,
        a.clone(),
        None,
        Op::write("q", "new", 2),
        Outcome::Accepted,
    );
    h.push(
        t,
        t,
        a.clone(),
        None,
        Op::read_part("q"),
        Outcome::Part(Some(row("old", 1))),
    );
    h.push(
        t,
        t,
        a.clone(),
        None,
        Op::read_part("p"),
        Outcome::Part(Some(row("y", 2))),
    );
    h.push(
        t,
        t,
        a.clone(),
        None,
        Op::read_part("p"),
        Outcome::Part(Some(row("x", 1))),
    );
    h.push(
        t,
        t,
        a.clone(),
        None,
        Op::read_part("p"),
        Outcome::Part(None),
    );
    // A lease read of an absent row: nothing settles by it.
    let lease = Op::ReadLease {
        lease: LeaseName::new("report-job"),
    };
    h.push(t, t, a.clone(), None, lease.clone(), Outcome::Lease(None));
    // holder-b's renewal of token 9 still waits: a read of token 9's row may settle it, one of
    // token 1's cannot.
    let b = Holder::new("holder-b");
    h.push(
        t,
        t,
        b,
        None,
        Op::renew("holder-b", 9, 1000),
        Outcome::Blocked,
    );
    let row_of = |token: u64| {
        Outcome::Lease(Some(LeaseRow {
            holder: Holder::new("holder-b"),
            token: Token(token),
            expires_at: Expiry::At(Millis(5000)),
        }))
    };
    h.push(t, t, a.clone(), None, lease.clone(), row_of(1));
    h.push(t, t, a.clone(), None, lease, row_of(9));
    let mut d = Deriver::for_judging();
    for e in &h.events {
        d.push(e);
    }
    let kept: Vec<u64> = d.finish().reads.iter().map(|r| r.seq).collect();
    // The stale read of q (a token above it was accepted), a version nobody wrote, one never
    // written with that token, an absent row where a write was; the lease read of the holding
    // whose renewal waits.
    assert_eq!(kept, vec![104, 105, 106, 107, 111]);
    assert_eq!(derive(&h).reads.len(), 107);
    same(&h, "read-heavy");
    let mut finals: Vec<u64> = check(&h)
        .violations
        .iter()
        .filter(|v| v.check == leaselab_checkers::Check::Final)
        .filter_map(|v| v.events.last().copied())
        .collect();
    finals.sort_unstable();
    finals.dedup();
    assert_eq!(finals, kept[..4], "each kept part read breaks `final`");
}
