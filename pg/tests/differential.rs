//! The differential suite against a real PostgreSQL (throwaway clusters under `target/`):
//! every committed trace replays with 0 divergences, and a deliberately wrong model rule is
//! reported at the first step where it matters. (Simulation seeds and generated schedules are
//! diffed by the CLI's tests: this crate does not depend on the simulation.)
//!
//! One test owns the clusters so they are stopped at the end. Without PostgreSQL binaries the
//! test says so in one line and skips — unless `LEASELAB_REQUIRE_PG=1` (set by `.ci/run`),
//! which turns their absence into a failure.

use leaselab_model::{Config, FenceMode};
use leaselab_pg::cluster::postgres_for_test;
use leaselab_pg::{diff, PgBackend};
use leaselab_trace::Trace;
use std::path::PathBuf;

fn traces() -> Vec<(PathBuf, Trace)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../traces");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("traces/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "trace"))
        .collect();
    v.sort();
    v.into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("readable");
            let t = Trace::parse(&text, &p.display().to_string()).expect("parses");
            (p, t)
        })
        .collect()
}

fn trace(name: &str) -> Trace {
    traces()
        .into_iter()
        .find(|(p, _)| p.file_stem().is_some_and(|s| s == name))
        .map(|(_, t)| t)
        .unwrap_or_else(|| panic!("no traces/{name}.trace"))
}

#[test]
fn postgres_agrees_with_the_model() {
    if !postgres_for_test("pg::postgres_agrees_with_the_model") {
        return;
    }
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("leaselab-pg");
    let mut pg =
        PgBackend::throwaway(&dir).unwrap_or_else(|e| panic!("cannot start PostgreSQL: {e}"));

    // Every committed trace.
    let mut bad = Vec::new();
    let all = traces();
    assert!(all.len() >= 13);
    for (p, t) in &all {
        let r = diff(&mut pg, t, None).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        if !r.ok() {
            bad.push(format!(
                "{}: {}\n  reproduce: leaselab diff {}",
                p.display(),
                r.describe(),
                p.display()
            ));
        }
    }
    assert!(bad.is_empty(), "divergences:\n{}", bad.join("\n"));

    // A deliberately wrong model rule — `<` for `<=` in the fence — is caught at the first
    // step that writes twice with one token (F2's equal-token rewrite, step 10).
    let f2 = trace("F2");
    let wrong = Config {
        fence: FenceMode::Strict,
        ..f2.config.clone()
    };
    let r = diff(&mut pg, &f2, Some(&wrong)).expect("diff runs");
    let described = r.describe();
    let d = r.divergences.first().expect("the wrong rule is reported");
    assert_eq!(d.seq, 10, "{described}");
    assert!(
        d.line.contains("write") && d.line.contains("content=v2"),
        "{}",
        d.line
    );

    // A connection lost before its COMMIT came back: the outcome is indeterminate, never a
    // panic, and what was committed before stays.
    pg.reset(&Config::default()).expect("reset");
    let (a, conn) = (
        leaselab_model::Holder::new("holder-a"),
        leaselab_model::ConnId::new("holder-a"),
    );
    let cx = leaselab_model::Ctx {
        now: leaselab_model::Millis(0),
        local: leaselab_model::Millis(0),
        actor: &a,
        conn: &conn,
    };
    use leaselab_model::{apply, DbName, Op, Outcome};
    assert_eq!(
        apply(&mut pg, &cx, &Op::write("summary", "kept", 1)),
        Outcome::Accepted
    );
    assert_eq!(apply(&mut pg, &cx, &Op::begin(DbName::Res)), Outcome::Ok);
    assert_eq!(apply(&mut pg, &cx, &Op::fence(2)), Outcome::Passed);
    assert_eq!(
        apply(&mut pg, &cx, &Op::upsert("summary", "lost", 2)),
        Outcome::Ok
    );
    pg.terminate(DbName::Res, &conn).expect("terminate");
    let o = apply(&mut pg, &cx, &Op::commit(DbName::Res));
    assert!(matches!(o, Outcome::Indeterminate(_)), "{o:?}");
    let other = leaselab_model::ConnId::new("reader");
    let rcx = leaselab_model::Ctx { conn: &other, ..cx };
    match apply(&mut pg, &rcx, &Op::read_part("summary")) {
        Outcome::Part(Some(r)) => assert_eq!(r.content, "kept"),
        o => panic!("{o:?}"),
    }

    // And an unfenced model is caught at A's stale write in the main experiment (step 17).
    let f4 = trace("F4");
    let wrong = Config {
        fence: FenceMode::Off,
        ..f4.config.clone()
    };
    let r = diff(&mut pg, &f4, Some(&wrong)).expect("diff runs");
    assert_eq!(r.divergences.first().map(|d| d.seq), Some(17));
}
