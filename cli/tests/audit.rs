//! `leaselab audit` on real PostgreSQL: the source design as a spec holds over generated
//! schedules, every mistake in `examples/leases/` that a history can show is found and shrunk,
//! each kind of bad spec gets one clear error, and every command `audit` prints runs as
//! printed. Without PostgreSQL binaries the tests say so and skip — unless
//! `LEASELAB_REQUIRE_PG=1` (set by `.ci/run`).

mod common;
use common::leaselab_apart as leaselab;
use leaselab::audit_cmd::run_gen;
use leaselab::audit_spec::load;
use leaselab::gen_search::plan;
use leaselab_checkers::Check;
use leaselab_pg::cluster::postgres_for_test;
use std::path::{Path, PathBuf};

fn tmp(name: &str) -> Option<PathBuf> {
    if !postgres_for_test(&format!("cli::audit::{name}")) {
        return None;
    }
    Some(PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("audit-{name}")))
}

fn example(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/leases")
        .join(format!("{name}.toml"))
}

#[test]
fn the_seed_spec_holds_over_generated_schedules() {
    let Some(dir) = tmp("seed") else { return };
    let mut audit = load(&example("seed"), &dir.join("pg")).expect("the seed spec loads");
    let r = run_gen(&mut audit, plan(100, 1), &dir.join("out"), false).expect("runs");
    assert!(r.violation.is_none(), "{:?}", r.violation);
    assert_eq!(r.schedules, 100);
    assert!(r.steps > 1_000, "{} steps", r.steps);
    assert_eq!(r.waits_out_of_bound, 0);
}

/// A correct one-database design whose write takes `FOR SHARE` on the lease row
/// (`lease-row-share.toml`): no violation, and every lock wait — an acquire behind a paused
/// write's share lock, a write behind a paused write's row — is seen as one, never waited out
/// to the 120 s bound (which is what once made such designs run at 0.05 schedules/s: the
/// resource side asked its lock-wait questions on an admin connection the lease side's reset
/// had ended).
#[test]
fn a_design_whose_write_locks_the_lease_row_audits_without_waiting_out_a_bound() {
    let Some(dir) = tmp("lease-row-share") else {
        return;
    };
    let mut audit = load(&example("lease-row-share"), &dir.join("pg")).expect("loads");
    let r = run_gen(&mut audit, plan(300, 1), &dir.join("out"), false).expect("runs");
    assert!(r.violation.is_none(), "{:?}", r.violation);
    assert_eq!(r.schedules, 300);
    assert_eq!(r.waits_out_of_bound, 0);
}

/// The seed spec runs the same SQL as the adapter's built-in statements: on the same
/// generated schedules, its answers equal the built-in adapter's and the model's, step by step
/// and in the final reads — so an audit's verdicts are the model's.
#[test]
fn the_seed_spec_answers_as_the_built_in_adapter_and_the_model() {
    let Some(dir) = tmp("cross") else { return };
    let mut audit = load(&example("seed"), &dir.join("spec")).expect("loads");
    let mut builtin = leaselab_pg::PgBackend::throwaway(&dir.join("builtin")).expect("starts");
    let client = audit.client();
    assert!(client.ops.publish && client.ops.read_part);
    let spec_pg = audit.first_backend().expect("the audit's backend");
    let steps = std::cell::Cell::new(0usize);
    // Also with held lease transactions and a second lease connection per holder.
    let both = leaselab_gen::Service {
        lease_txn: true,
        second_conn: true,
        ..client
    };
    for (client, seed) in [(client, 1), (both, 2)] {
        for s in leaselab_gen::search::schedules(&plan(100, seed)) {
            let s = s.expect("draws");
            steps.set(steps.get() + s.intents.len());
            let d = leaselab_pg::audit::cross_check(spec_pg, &mut builtin, &s, client)
                .expect("postgres runs");
            assert!(d.is_none(), "{d:?}");
        }
    }
    assert!(steps.get() > 2_000, "{} intents", steps.get());
}

/// Each mistake a history can show: the checks its shrunk history breaks (either of a pair for
/// a lease mistake: two holders at once and a token handed out twice come together, and
/// shrinking keeps whichever shows first), and within how many schedules of seed 1 it shows
/// (the README's table).
const LEASE: &[Check] = &[Check::I1, Check::I2];
type Mistake = (&'static str, &'static [Check], u64);
const OF_THE_WRITE: [Mistake; 5] = [
    ("unfenced-write", &[Check::I3], 10),
    ("check-then-write", &[Check::I3], 200),
    ("advisory-fence", &[Check::Final, Check::I3], 250),
    ("row-guard", &[Check::I3], 10),
    ("lease-row-key-share", &[Check::I3, Check::Final], 150),
];
const OF_THE_LEASE: [Mistake; 9] = [
    ("unlogged-lease", LEASE, 10),
    ("advisory-lock", LEASE, 10),
    ("timestamp-token", LEASE, 30),
    ("max-plus-one", LEASE, 100),
    ("select-for-update-autocommit", &[Check::I1], 150),
    ("renew-any-holder", &[Check::I1], 100),
    ("lease-no-key", LEASE, 150),
    ("token-drawn-before-wait", &[Check::I2], 550),
    ("release-any-grant", &[Check::I1], 250),
];

// One test per mistake, so that the test harness runs them side by side: each waits on
// PostgreSQL far more than it computes, and run in one loop they were the suite's longest test.
macro_rules! mistakes {
    ($($test:ident: $name:literal),* $(,)?) => {
        $(
            #[test]
            fn $test() {
                found_and_shrunk($name);
            }
        )*

        /// Every mistake of the table has its test above.
        #[test]
        fn every_mistake_of_the_table_has_a_test() {
            let mut tested = vec![$($name),*];
            let mut table: Vec<&str> = OF_THE_WRITE.iter().chain(&OF_THE_LEASE).map(|m| m.0).collect();
            tested.sort_unstable();
            table.sort_unstable();
            assert_eq!(tested, table);
        }
    };
}

mistakes! {
    unfenced_write_is_found_and_shrunk: "unfenced-write",
    check_then_write_is_found_and_shrunk: "check-then-write",
    advisory_fence_is_found_and_shrunk: "advisory-fence",
    row_guard_is_found_and_shrunk: "row-guard",
    lease_row_key_share_is_found_and_shrunk: "lease-row-key-share",
    unlogged_lease_is_found_and_shrunk: "unlogged-lease",
    advisory_lock_is_found_and_shrunk: "advisory-lock",
    timestamp_token_is_found_and_shrunk: "timestamp-token",
    max_plus_one_is_found_and_shrunk: "max-plus-one",
    select_for_update_autocommit_is_found_and_shrunk: "select-for-update-autocommit",
    renew_any_holder_is_found_and_shrunk: "renew-any-holder",
    lease_no_key_is_found_and_shrunk: "lease-no-key",
    token_drawn_before_wait_is_found_and_shrunk: "token-drawn-before-wait",
    release_any_grant_is_found_and_shrunk: "release-any-grant",
}

/// Each found as the README's table says, shrunk as the command shrinks (its full budget: the
/// sizes asserted are the table's), and rerun from its psql scripts on fresh databases.
fn found_and_shrunk(name: &str) {
    let &(name, check, within) = OF_THE_WRITE
        .iter()
        .chain(&OF_THE_LEASE)
        .find(|m| m.0 == name)
        .unwrap_or_else(|| panic!("{name}: not a mistake of the table"));
    let Some(dir) = tmp(&format!("mistake-{name}")) else {
        return;
    };
    let fresh = Fresh::start(&dir);
    let mut audit = load(&example(name), &dir.join("pg")).unwrap_or_else(|e| panic!("{name}: {e}"));
    let out = dir.join(name);
    let r = run_gen(&mut audit, plan(within as u32, 1), &out, false)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(r.waits_out_of_bound, 0, "{name}");
    let (file, report) = r
        .violation
        .unwrap_or_else(|| panic!("{name}: not found in {within} schedules"));
    assert!(
        check.iter().any(|c| report.violated(*c)),
        "{name}: {:?}",
        report.violations
    );
    assert!(
        r.first.is_some_and(|f| f <= within),
        "{name}: {:?}",
        r.first
    );
    // The written trace holds the shrunk history, judged as the run judged it.
    let text = std::fs::read_to_string(&file).expect("trace written");
    let t = leaselab_trace::Trace::parse(&text, &file.display().to_string()).expect("parses");
    assert!(t.history.events.len() <= 10, "{name}: {text}");
    // The README table's figures, for whoever reruns this to update it.
    eprintln!(
        "{name}: found at schedule {:?}, shrunk to {} steps, {:?}",
        r.first,
        t.history.events.len(),
        t.expect
    );
    assert_eq!(t.expect, report.verdict(), "{name}");
    assert!(leaselab_trace::replay::replay(&t).ok(), "{name}: {text}");
    // Its psql scripts rerun it on fresh databases with the same outcomes.
    let shapes = audit.backends()[0]
        .spec_shapes()
        .expect("a spec backend")
        .to_vec();
    fresh.rerun(
        name,
        &file.with_extension("psql"),
        audit.spec(),
        &shapes,
        &t.history,
    );
}

/// `release-any-grant` needs the second lease connection its spec asks for: with one, the
/// schedules within which two connections find it (the table's bound) are clean.
#[test]
fn release_any_grant_needs_a_second_connection() {
    let Some(dir) = tmp("one-conn") else { return };
    let o = leaselab::audit_spec::Overrides {
        lease_conns: Some(1),
        ..Default::default()
    };
    let mut audit =
        leaselab::audit_spec::load_as(&example("release-any-grant"), &dir.join("pg"), &o)
            .expect("loads");
    assert!(!audit.client().second_conn && audit.client().lease_txn);
    let r = run_gen(&mut audit, plan(250, 1), &dir.join("out"), false).expect("runs");
    assert!(r.violation.is_none(), "{:?}", r.first);
    assert_eq!(r.schedules, 250);
}

/// A spec's `lease` and `ttl_ms`: every lease call names that lease and asks for that TTL,
/// `:lease` in a write is that lease (so the one-database lease-row guard accepts writes under
/// another name), and `--lease` / `--ttl-ms` override them.
#[test]
fn a_specs_lease_name_and_ttl_reach_every_call() {
    let Some(dir) = tmp("terms") else { return };
    std::fs::create_dir_all(&dir).expect("dir");
    let text = std::fs::read_to_string(example("lease-row-share")).expect("spec");
    let text = text.replacen(
        "databases = \"one\"",
        "databases = \"one\"\nlease = \"nightly-job\"\nttl_ms = 1000",
        1,
    );
    let file = dir.join("terms.toml");
    std::fs::write(&file, &text).expect("write");
    for (o, lease, ttl) in [
        (Default::default(), "nightly-job", 1000),
        (
            leaselab::audit_spec::Overrides {
                lease: Some("weekly-job".into()),
                ttl_ms: Some(700),
                lease_txn: false,
                lease_conns: None,
                aim: leaselab_gen::Aim::Uniform,
            },
            "weekly-job",
            700,
        ),
    ] {
        let mut audit = leaselab::audit_spec::load_as(&file, &dir.join(format!("pg-{ttl}")), &o)
            .expect("loads");
        let (mut calls, mut accepted) = (0, 0);
        for s in leaselab_gen::search::schedules(&plan(40, 1)) {
            let s = s.expect("draws");
            let (h, _) = audit.run(&s).expect("runs");
            assert!(leaselab_checkers::check(&h).violations.is_empty());
            for e in &h.events {
                match &e.op {
                    leaselab_model::Op::Acquire {
                        lease: l, ttl_ms, ..
                    }
                    | leaselab_model::Op::Renew {
                        lease: l, ttl_ms, ..
                    } => {
                        assert_eq!((l.as_str(), *ttl_ms), (lease, ttl));
                        calls += 1;
                    }
                    leaselab_model::Op::Release { lease: l, .. } => assert_eq!(l.as_str(), lease),
                    leaselab_model::Op::Write { .. }
                        if e.outcome == leaselab_model::Outcome::Accepted =>
                    {
                        accepted += 1
                    }
                    _ => {}
                }
            }
        }
        assert!(
            calls > 40 && accepted > 10,
            "{calls} calls, {accepted} writes accepted"
        );
    }
}

/// Two workers (each its own databases) find the same first failing schedule as one, shrink it
/// to the same schedule and write the same trace: `--jobs` changes only the time.
#[test]
fn two_workers_find_and_shrink_what_one_does() {
    let Some(dir) = tmp("two-workers") else {
        return;
    };
    let mut traces = Vec::new();
    for jobs in [1, 2] {
        let mut audit = load(
            &example("check-then-write"),
            &dir.join(format!("pg-{jobs}")),
        )
        .expect("loads");
        let pg_dir = dir.join(format!("pg-{jobs}"));
        leaselab::audit_cmd::workers(&mut audit, &pg_dir, jobs).expect("start");
        assert_eq!(audit.backends().len(), jobs);
        let out = dir.join(format!("out-{jobs}"));
        let r = run_gen(&mut audit, plan(300, 1), &out, false).expect("runs");
        let (file, _) = r.violation.expect("found");
        let text = std::fs::read_to_string(&file).expect("trace");
        traces.push((r.first, r.schedules, r.shrink_runs, text));
    }
    assert_eq!(traces[0], traces[1]);
}

/// Two fresh clusters (lease, resource) on which a failure's psql scripts run, each in new
/// databases, without leaselab.
struct Fresh {
    lease: leaselab_pg::cluster::Cluster,
    res: leaselab_pg::cluster::Cluster,
    pg_ctl: PathBuf,
}

impl Fresh {
    fn start(dir: &Path) -> Fresh {
        let lease = leaselab_pg::cluster::Cluster::start(dir, "fresh-lease").expect("starts");
        let res = leaselab_pg::cluster::Cluster::start(dir, "fresh-res").expect("starts");
        let pg_ctl = dir.join("pg_ctl.sh");
        std::fs::write(
            &pg_ctl,
            format!("#!/bin/sh\nexec {} \"$@\"\n", lease.pg_ctl_shell()),
        )
        .expect("write");
        std::process::Command::new("chmod")
            .arg("+x")
            .arg(&pg_ctl)
            .status()
            .expect("chmod");
        Fresh { lease, res, pg_ctl }
    }

    /// Runs the scripts in `scripts` (a copy) on new databases; asserts that every step ended
    /// or waited as the history says and that each operation's printed result reads as its
    /// outcome in the history.
    fn rerun(
        &self,
        name: &str,
        scripts: &Path,
        spec: &leaselab_pg::spec::Spec,
        shapes: &[leaselab_pg::spec::Shape],
        h: &leaselab_model::History,
    ) {
        use leaselab_pg::spec::psql;
        let db = name.replace('-', "_");
        let psql = self.lease.bin_dir().join("psql");
        for (c, n) in [(&self.lease, "lease"), (&self.res, "res")] {
            let ok = std::process::Command::new(&psql)
                .args(["-X", "-q", "-d", &c.conninfo("postgres"), "-c"])
                .arg(format!("CREATE DATABASE {n}_{db}"))
                .status()
                .expect("psql runs");
            assert!(ok.success(), "{name}: create database");
        }
        let path = format!(
            "{}:{}",
            self.lease.bin_dir().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let o = std::process::Command::new("bash")
            .arg(scripts.join("run.sh"))
            .env("PATH", path)
            .env("LEASE_DB", self.lease.conninfo(&format!("lease_{db}")))
            .env("RES_DB", self.res.conninfo(&format!("res_{db}")))
            .env("PG_CTL", &self.pg_ctl)
            .env("LEASE_PGDATA", self.lease.data_dir())
            .env("RES_PGDATA", self.res.data_dir())
            .output()
            .expect("bash runs");
        let said = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success() && said.contains("ran as recorded"),
            "{name}: {said}{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let mut outputs = Vec::new();
        for f in std::fs::read_dir(scripts.join("out")).expect("out/") {
            let p = f.expect("entry").path();
            if p.extension().is_some_and(|x| x == "out") {
                outputs.push(std::fs::read_to_string(&p).expect("read"));
            }
        }
        let got = psql::outcomes(spec, shapes, h, &outputs);
        let want = psql::expected(h);
        assert!(!want.is_empty(), "{name}");
        for (step, words) in &want {
            assert_eq!(
                got.get(step),
                Some(words),
                "{name}: step {step}\n{}",
                outputs.join("\n")
            );
        }
    }
}

/// Ten kinds of bad spec, one clear error each: the file, the line or statement, and what is
/// wrong — PostgreSQL's own message where the server found it.
#[test]
fn each_kind_of_bad_spec_gets_one_clear_error() {
    let Some(dir) = tmp("bad") else { return };
    std::fs::create_dir_all(&dir).expect("dir");
    let seed = std::fs::read_to_string(example("seed")).expect("seed spec");
    let cases: [(&str, String, &[&str]); 11] = [
        (
            "missing-statement",
            seed.replace("\nrelease = ", "\n# release = "),
            &["release", "missing statement"],
        ),
        (
            "unknown-parameter",
            seed.replace(
                "holder = :holder AND token = :token\"",
                "holder = :who AND token = :token\"",
            ),
            &["release", "unknown parameter :who", ":holder"],
        ),
        (
            "wall-clock",
            seed.replacen(
                "now() + make_interval",
                "clock_timestamp() + make_interval",
                1,
            ),
            &["acquire", "clock_timestamp", "now()"],
        ),
        (
            "not-toml",
            seed.replace("[statements]", "[statements"),
            &["not TOML"],
        ),
        (
            "unknown-key",
            seed.replace("[statements]\n", "[statements]\nacquier = \"SELECT 1\"\n"),
            &["acquier", "unknown statement"],
        ),
        (
            "two-in-one-string",
            seed.replace("release = \"UPDATE", "release = \"SELECT 1; UPDATE"),
            &["release", "more than one statement"],
        ),
        (
            "sql-syntax",
            seed.replace(
                "UPDATE fence_floor SET max_token",
                "UPDAT fence_floor SET max_token",
            ),
            &["write[1]", "PostgreSQL", "syntax error"],
        ),
        (
            "ddl-fails",
            seed.replace(
                "CREATE TABLE fence_floor",
                "CREATE TABLE fence_floor (x int); CREATE TABLE fence_floor",
            ),
            &["schema.resource", "the DDL fails", "already exists"],
        ),
        (
            "wrong-shape",
            seed.replace("RETURNING l.token, l.expires_at", "RETURNING l.holder"),
            &["acquire", "wrong result shape", "`token`"],
        ),
        (
            "unknown-table",
            seed.replace("FROM report_part WHERE", "FROM report_parts WHERE"),
            &["read-part", "PostgreSQL", "report_parts"],
        ),
        (
            "three-connections",
            format!("lease_conns = 3\n{seed}"),
            &["lease_conns", "1 or 2"],
        ),
    ];
    for (name, text, words) in cases {
        let file = dir.join(format!("{name}.toml"));
        std::fs::write(&file, text).expect("write spec");
        let Err(e) = load(&file, &dir.join("pg")) else {
            panic!("{name}: accepted");
        };
        // A bad spec, not a failure of PostgreSQL.
        assert!(
            matches!(e, leaselab::error::CliError::Spec(_)),
            "{name}: {e:?}"
        );
        let e = e.to_string();
        assert!(e.contains(&file.display().to_string()), "{name}: {e}");
        for w in words {
            assert!(e.contains(w), "{name}: `{w}` not in: {e}");
        }
        assert_eq!(e.lines().count(), 1, "{name}: one line: {e}");
    }
}

/// `audit` prints the trace and the commands that draw and explain it; each runs as printed.
#[test]
fn every_command_audit_prints_runs_as_printed() {
    let Some(dir) = tmp("printed") else { return };
    let spec = example("unfenced-write");
    let (out, pg) = (dir.join("out"), dir.join("pg"));
    // What an earlier run of this test found would take the names this one checks.
    let _ = std::fs::remove_dir_all(&out);
    let s = |p: &Path| p.display().to_string();
    // The audit this test runs, with `extra` arguments.
    let audit = |extra: &[&str]| {
        let (spec, out, pg) = (s(&spec), s(&out), s(&pg));
        let mut args = vec![
            "audit", &spec, "--gen", "50", "--out", &out, "--pg-dir", &pg,
        ];
        args.extend(extra);
        leaselab(&args)
    };
    let (code, text, err) = audit(&[]);
    assert_eq!(code, Some(1), "{text}{err}");
    assert!(text.contains("VIOLATION I3"), "{text}");
    let mut ran = 0;
    for line in text.lines() {
        let Some(cmd) = line
            .strip_prefix("timeline: leaselab ")
            .or_else(|| line.strip_prefix("explain: leaselab "))
        else {
            continue;
        };
        let args: Vec<&str> = cmd.split(' ').collect();
        let (code, shown, err) = leaselab(&args);
        assert_eq!(code, Some(0), "{cmd}: {err}");
        assert!(shown.contains("STALE"), "{cmd}: {shown}");
        ran += 1;
    }
    assert_eq!(ran, 2, "{text}");
    // `reproduce:` runs the saved schedule again, on the same spec: the same violation.
    let reproduce = text
        .lines()
        .find_map(|l| l.strip_prefix("reproduce: leaselab "))
        .unwrap_or_else(|| panic!("no reproduce line: {text}"));
    let args: Vec<&str> = reproduce.split(' ').collect();
    let (code, again, err) = leaselab(&args);
    assert_eq!(code, Some(1), "{reproduce}: {again}{err}");
    let verdict = |t: &str| t.split(" :: ").next().unwrap_or_default().to_string();
    assert_eq!(verdict(&again), verdict(&text), "{again}");
    // ... and on the fixed spec (the seed design) the same schedule is clean.
    let trace = args[args
        .iter()
        .position(|a| *a == "--replay")
        .expect("--replay")
        + 1];
    let (code, fixed, err) = leaselab(&[
        "audit",
        &s(&example("seed")),
        "--replay",
        trace,
        "--pg-dir",
        &s(&pg),
    ]);
    assert_eq!(code, Some(0), "{fixed}{err}");
    assert!(fixed.starts_with("CLEAN :: replayed "), "{fixed}");
    // Named by the spec and the seed; the same audit run again into the same folder keeps the
    // first one's files and writes its own beside them.
    assert!(trace.ends_with("audit-unfenced-write-1.trace"), "{trace}");
    let json = dir.join("summary.json");
    let (code, second, err) = audit(&["--json", &s(&json)]);
    assert_eq!(code, Some(1), "{second}{err}");
    assert!(
        second.contains("audit-unfenced-write-1-2.trace"),
        "{second}"
    );
    // The JSON summary's `reproduce` is the printed `reproduce:` line.
    let summary = std::fs::read_to_string(&json).expect("the summary");
    let printed = second
        .lines()
        .find_map(|l| l.strip_prefix("reproduce: "))
        .expect("a reproduce line");
    assert!(
        summary.contains(&format!("\"reproduce\":\"{printed}\"")),
        "{printed}\n{summary}"
    );
    for f in [
        "audit-unfenced-write-1.trace",
        "audit-unfenced-write-1.psql/run.sh",
        "audit-unfenced-write-1-2.trace",
        "audit-unfenced-write-1-2.psql/run.sh",
    ] {
        assert!(out.join(f).is_file(), "{f}");
    }
    // A trace without a schedule, and a schedule line that is wrong: exit 2, file, line, field.
    let text = std::fs::read_to_string(trace).expect("trace");
    let intents = text
        .lines()
        .filter(|l| l.starts_with("setup intent "))
        .count();
    assert!(
        again.contains(&format!("({intents} intents)")),
        "{intents}: {again}"
    );
    let bad_trace = dir.join("bad.trace");
    let line = text
        .lines()
        .position(|l| l.contains(" kind="))
        .expect("an intent line")
        + 1;
    for (edit, want) in [
        (
            text.lines()
                .filter(|l| !l.starts_with("setup "))
                .map(|l| format!("{l}\n"))
                .collect::<String>(),
            format!("{}: no `setup schedule` line", bad_trace.display()),
        ),
        (
            text.replacen(" kind=", " kind=jump-", 1),
            format!(
                "{}:{line}: field `kind`: unknown kind `jump-",
                bad_trace.display()
            ),
        ),
    ] {
        std::fs::write(&bad_trace, &edit).expect("write");
        let (code, _, err) = leaselab(&[
            "audit",
            &s(&spec),
            "--replay",
            &s(&bad_trace),
            "--pg-dir",
            &s(&pg),
        ]);
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains(&want), "{want}: {err}");
    }
    // A bad spec: exit 2, one line naming the file.
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, "[schema]\nlease = \"\"\n").expect("write");
    let (code, _, err) = leaselab(&["audit", &s(&bad), "--gen", "1", "--pg-dir", &s(&pg)]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(&s(&bad)) && err.contains("schema.resource"),
        "{err}"
    );
}

/// Every committed audit failure (`traces/audit/*.trace`) is judged as recorded with the
/// verdict it records, and runs again from the schedule it holds, on the spec its `spec` line
/// names, with that verdict and the exit that goes with it.
#[test]
fn every_committed_audit_failure_replays_with_its_verdict() {
    let Some(dir) = tmp("replay") else { return };
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let pg = dir.join("pg").display().to_string();
    let mut replayed = Vec::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join("traces/audit"))
        .expect("traces/audit/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "trace"))
        .collect();
    files.sort();
    for file in files {
        let t = leaselab_trace::Trace::read(&file).expect("parses");
        let judged = leaselab_trace::replay::replay(&t);
        assert!(judged.ok(), "{}: {}", file.display(), judged.describe());
        let spec = root.join(t.spec.as_deref().expect("an audit trace has a spec line"));
        let want = if t.expect.is_empty() {
            "CLEAN".to_string()
        } else {
            let checks: Vec<&str> = t.expect.iter().map(|c| c.as_str()).collect();
            format!("VIOLATION {}", checks.join(","))
        };
        let f = file.display().to_string();
        let (code, out, err) = leaselab(&[
            "audit",
            &spec.display().to_string(),
            "--replay",
            &f,
            "--pg-dir",
            &pg,
        ]);
        assert!(out.starts_with(&format!("{want} :: ")), "{f}: {out}{err}");
        assert_eq!(code, Some(if t.expect.is_empty() { 0 } else { 1 }), "{f}");
        replayed.push(f);
    }
    assert!(replayed.len() >= 3, "{replayed:?}");
}

/// `--sim-seeds`: the simulation's holders on PostgreSQL running the spec. The seed spec holds;
/// an unfenced write is found (I3) and a strict fence starves every job (liveness, exit 3),
/// each within five seeds, shrunk; the printed reproduce command runs as printed and fails the
/// same way.
#[test]
fn the_simulation_holders_audit_a_spec() {
    let Some(dir) = tmp("sim") else { return };
    let s = |p: &Path| p.display().to_string();
    let pg = s(&dir.join("pg"));
    let (code, text, err) = leaselab(&[
        "audit",
        &s(&example("seed")),
        "--sim-seeds",
        "0..5",
        "--pg-dir",
        &pg,
    ]);
    assert_eq!(code, Some(0), "{text}{err}");
    assert!(
        text.contains("seeds=5 ") && text.contains("failures=0"),
        "{text}"
    );
    for (name, code_want, first) in [
        ("unfenced-write", 1, "VIOLATION I3"),
        ("strict-fence", 3, "VIOLATION liveness"),
    ] {
        let out = s(&dir.join(name));
        let (code, text, err) = leaselab(&[
            "audit",
            &s(&example(name)),
            "--sim-seeds",
            "0..5",
            "--out",
            &out,
            "--pg-dir",
            &pg,
        ]);
        assert_eq!(code, Some(code_want), "{name}: {text}{err}");
        assert!(text.starts_with(first), "{name}: {text}");
        let trace = text
            .lines()
            .find_map(|l| l.strip_prefix("trace: "))
            .unwrap_or_else(|| panic!("{name}: {text}"));
        let t = leaselab_trace::Trace::parse(
            &std::fs::read_to_string(trace).expect("trace written"),
            trace,
        )
        .expect("parses");
        assert!(t.spec.is_some() && t.setup.iter().any(|l| l.contains("whole_writes=1")));
        // The `explain:` it prints names the verdict it printed: for the strict fence, that
        // liveness broke, and the writes the fence refused after the heal.
        let explain = text
            .lines()
            .find_map(|l| l.strip_prefix("explain: leaselab "))
            .unwrap_or_else(|| panic!("{name}: {text}"));
        let (code, told, err) = leaselab(&explain.split(' ').collect::<Vec<_>>());
        assert_eq!(code, Some(0), "{explain}: {err}");
        if code_want == 3 {
            assert!(
                told.contains("all hold, but liveness broke: no holder finished a job")
                    && told.contains("the resource refused"),
                "{told}"
            );
        } else {
            assert!(!told.contains("liveness broke"), "{told}");
        }
        let cmd = text
            .lines()
            .find_map(|l| l.strip_prefix("reproduce: leaselab "))
            .unwrap_or_else(|| panic!("{name}: {text}"));
        let mut args: Vec<&str> = cmd.split(' ').collect();
        args.extend(["--out", &out, "--pg-dir", &pg]);
        let (again, shown, err) = leaselab(&args);
        assert_eq!(again, Some(code_want), "{cmd}: {shown}{err}");
        assert!(shown.starts_with(first), "{cmd}: {shown}");
    }
}

/// A reset that restores the spec's seed rows (tables truncated and refilled, sequences set
/// back, every session's prepared statements kept) answers as one that rebuilds the schema from
/// its DDL: the same generated schedules give the same histories, on the seed spec and on a
/// variant whose tokens come from a sequence the DDL already advanced and whose lease table has
/// an identity column and a seed row.
#[test]
fn a_restored_schema_answers_as_a_rebuilt_one() {
    let Some(dir) = tmp("restore") else { return };
    let seed = std::fs::read_to_string(example("seed")).expect("seed spec");
    let sequence = seed
        .replace(
            "  expires_at  timestamptz NOT NULL\n);",
            "  expires_at  timestamptz NOT NULL,\n  n bigint GENERATED ALWAYS AS IDENTITY\n);\n\
             CREATE SEQUENCE token_seq START 5; SELECT nextval('token_seq');\n\
             INSERT INTO lease (name, holder, token, expires_at) VALUES ('other-job', 'x', 1, '-infinity');",
        )
        .replace("VALUES (:lease, :holder, 1,", "VALUES (:lease, :holder, nextval('token_seq'),")
        .replace("token = l.token + 1,", "token = nextval('token_seq'),");
    assert_ne!(sequence, seed, "the variant differs");
    std::fs::create_dir_all(&dir).expect("dir");
    let variant = dir.join("sequence.toml");
    std::fs::write(&variant, &sequence).expect("write spec");
    for (name, file) in [("seed", example("seed")), ("sequence", variant)] {
        let mut restored = load(&file, &dir.join(format!("{name}-restored"))).expect("loads");
        let mut rebuilt = load(&file, &dir.join(format!("{name}-rebuilt"))).expect("loads");
        rebuilt
            .first_backend()
            .expect("the audit's backend")
            .rebuild_every_reset(true);
        let plan = leaselab_gen::search::Plan {
            steps: 30,
            ..plan(60, 1)
        };
        let mut granted = 0;
        for (k, s) in leaselab_gen::search::schedules(&plan).enumerate() {
            let s = s.expect("generates");
            let (a, _) = restored.run(&s).expect("runs");
            let (b, _) = rebuilt.run(&s).expect("runs");
            let text = |h: &leaselab_model::History| {
                leaselab_trace::Trace::new("h", leaselab_model::Config::default(), h.clone())
                    .to_text()
            };
            assert_eq!(text(&a), text(&b), "{name}: schedule {k}");
            granted += a
                .events
                .iter()
                .filter(|e| matches!(e.outcome, leaselab_model::Outcome::Granted { .. }))
                .count();
        }
        assert!(granted > 60, "{name}: {granted} grants");
    }
}

/// The psql scripts of a history in which a statement waits on a row lock (a write stopped
/// after its fence holds the floor row; another holder's fence waits for it) rerun on fresh
/// databases: the waiting session is seen waiting in `pg_stat_activity`, and every operation
/// reads as in the history.
#[test]
fn psql_scripts_rerun_a_lock_wait() {
    let Some(dir) = tmp("lockwait") else { return };
    let mut audit = load(&example("seed"), &dir.join("pg")).expect("loads");
    let mut found = None;
    for s in leaselab_gen::search::schedules(&plan(400, 1)) {
        let s = s.expect("generates");
        let (h, pauses) = audit.run(&s).expect("runs");
        let waits = h.events.iter().any(|e| {
            e.outcome == leaselab_model::Outcome::Blocked
                && !pauses.contains_key(&e.seq)
                && matches!(e.op, leaselab_model::Op::Write { .. })
        });
        if waits {
            found = Some((h, pauses));
            break;
        }
    }
    let (h, pauses) = found.expect("a lock wait within 400 schedules");
    let t = leaselab_trace::Trace::new("lockwait", leaselab_model::Config::default(), h.clone());
    std::fs::write(dir.join("lockwait.trace"), t.to_text()).expect("trace written");
    let scripts = dir.join("lockwait.psql");
    let files = leaselab_pg::spec::psql::scripts(audit.spec(), &h, &pauses, "a lock wait");
    leaselab_pg::audit::write_scripts(&scripts, &files).expect("written");
    let run_sh = std::fs::read_to_string(scripts.join("run.sh")).expect("run.sh");
    assert!(run_sh.contains("; expect_wait "), "{run_sh}");
    // Its holder-a leaves while its write, let go by holder-b's commit, is still running: the
    // scripts let it end first, as the adapter did (killed mid-way it rolled back, once, under
    // load): among the settles just before a disconnect, one of the session that goes.
    let lines: Vec<&str> = run_sh.lines().collect();
    let settled_before_leaving = lines.iter().enumerate().any(|(i, l)| {
        let Some(s) = l.strip_prefix("disconnect ") else {
            return false;
        };
        lines[..i]
            .iter()
            .rev()
            .take_while(|p| p.starts_with("settle "))
            .any(|p| p.ends_with(&format!(" {s}")))
    });
    assert!(settled_before_leaving, "{run_sh}");
    let shapes = audit.backends()[0]
        .spec_shapes()
        .expect("a spec backend")
        .to_vec();
    Fresh::start(&dir).rerun("lockwait", &scripts, audit.spec(), &shapes, &h);
}

/// With `--lease-conns 2` a holder calls the lease on a second connection too, while its first
/// holds a lease transaction open: on the seed spec such a call waits on the holder's own
/// transaction and is collected once that ends, no check fails, and the psql scripts of such a
/// run rerun it, the second connection a session of its own.
#[test]
fn a_holder_calls_the_lease_on_a_second_connection() {
    let Some(dir) = tmp("second-conn") else {
        return;
    };
    let o = leaselab::audit_spec::Overrides {
        lease_txn: true,
        lease_conns: Some(2),
        ..Default::default()
    };
    let mut audit =
        leaselab::audit_spec::load_as(&example("seed"), &dir.join("pg"), &o).expect("loads");
    assert!(audit.client().second_conn);
    let second = |e: &leaselab_model::Event| {
        e.conn
            .as_ref()
            .is_some_and(|c| c.as_str() == format!("{}-2", e.actor))
    };
    let (mut calls, mut own_waits, mut shown) = (0, 0, None);
    for s in leaselab_gen::search::schedules(&plan(80, 1)) {
        let s = s.expect("draws");
        let (h, pauses) = audit.run(&s).expect("runs");
        let report = leaselab_checkers::check(&h);
        assert!(report.violations.is_empty(), "{:?}", report.violations);
        // Whose first connection holds a transaction open, as the history shows it.
        let mut open: Vec<String> = Vec::new();
        let mut own_wait = false;
        for e in &h.events {
            let who = e.actor.to_string();
            match (&e.op, second(e)) {
                (
                    leaselab_model::Op::Begin {
                        db: leaselab_model::DbName::Lease,
                    }
                    | leaselab_model::Op::BeginRepeatableRead {
                        db: leaselab_model::DbName::Lease,
                    },
                    false,
                ) if e.outcome == leaselab_model::Outcome::Ok => open.push(who),
                (
                    leaselab_model::Op::Commit {
                        db: leaselab_model::DbName::Lease,
                    }
                    | leaselab_model::Op::Rollback {
                        db: leaselab_model::DbName::Lease,
                    },
                    false,
                ) => open.retain(|w| *w != who),
                (_, true) => {
                    assert!(
                        matches!(e.op.db(), Some(leaselab_model::DbName::Lease)),
                        "{e:?}"
                    );
                    calls += 1;
                    if e.outcome == leaselab_model::Outcome::Blocked && open.contains(&who) {
                        own_wait = true;
                    }
                }
                _ => {}
            }
        }
        if own_wait {
            own_waits += 1;
            if shown.is_none() {
                shown = Some((h, pauses));
            }
        }
    }
    assert!(
        calls > 50 && own_waits > 2,
        "{calls} calls, {own_waits} own waits"
    );
    // The scripts of a run whose second connection waited on its own first one.
    let (h, pauses) = shown.expect("a run with such a wait");
    let scripts = leaselab_pg::spec::psql::scripts(audit.spec(), &h, &pauses, "second-conn");
    assert!(
        scripts
            .iter()
            .any(|(f, _)| f.contains("holder-") && f.ends_with("-2.sql")),
        "{:?}",
        scripts.iter().map(|(f, _)| f).collect::<Vec<_>>()
    );
    let at = dir.join("second-conn.psql");
    leaselab_pg::audit::write_scripts(&at, &scripts).expect("written");
    let shapes = audit.backends()[0]
        .spec_shapes()
        .expect("a spec backend")
        .to_vec();
    Fresh::start(&dir).rerun("second-conn", &at, audit.spec(), &shapes, &h);
}

/// A clean audit says how hard it tried: over 100 schedules of the seed spec with held lease
/// transactions, every interleaving counted was reached, the `--json` summary has the same
/// counts, and what was not tried is named — held lease transactions too, without
/// `--lease-txn`.
#[test]
fn a_clean_audit_says_how_hard_it_tried() {
    use leaselab_pg::audit::contention::Contention;
    let Some(dir) = tmp("contention") else { return };
    std::fs::create_dir_all(&dir).expect("dir");
    let spec = example("seed").display().to_string();
    let pg = dir.join("pg").display().to_string();
    let json = dir.join("summary.json");
    let json_arg = json.display().to_string();
    let (code, out, err) = leaselab(&[
        "--json",
        &json_arg,
        "audit",
        &spec,
        "--gen",
        "100",
        "--lease-txn",
        "--pg-dir",
        &pg,
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    let line = out
        .lines()
        .find(|l| l.starts_with("contention, occurrences over the 100 schedules: "))
        .unwrap_or_else(|| panic!("no contention line:\n{out}"));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("json written")).expect("json");
    for c in Contention::ALL {
        let n: u64 = line
            .split(' ')
            .find_map(|w| w.strip_prefix(&format!("{}=", c.name())))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {} in {line}", c.name()));
        assert!(n > 0, "{line}");
        assert_eq!(summary["counts"][c.name()], n, "{summary}");
    }
    let untried = out
        .lines()
        .find(|l| l.starts_with("not tried: "))
        .unwrap_or_else(|| panic!("no `not tried` line:\n{out}"));
    assert!(untried.contains("a second lease connection"), "{untried}");
    assert!(!untried.contains("--lease-txn"), "{untried}");
    // Uniform and aimed at contention, one lease connection each: the aimed search puts a
    // holder where another's write is in flight far more often.
    let count = |out: &str, c: Contention| -> u64 {
        out.lines()
            .find(|l| l.starts_with("contention, "))
            .and_then(|l| {
                l.split(' ')
                    .find_map(|w| w.strip_prefix(&format!("{}=", c.name())))
            })
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {}:\n{out}", c.name()))
    };
    let (code, uniform, err) = leaselab(&[
        "audit", &spec, "--gen", "100", "--aim", "uniform", "--pg-dir", &pg,
    ]);
    assert_eq!(code, Some(0), "{uniform}{err}");
    assert!(
        uniform
            .lines()
            .any(|l| l.starts_with("not tried: held lease transactions")
                && l.contains("--lease-txn")),
        "{uniform}"
    );
    // The default mix steers a quarter of the intents: a takeover while a write is open comes
    // more often than uniform draws bring it.
    let (code, mixed, err) = leaselab(&["audit", &spec, "--gen", "100", "--pg-dir", &pg]);
    assert_eq!(code, Some(0), "{mixed}{err}");
    let takeovers = |out: &str| count(out, Contention::TakeoverDuringOpenWrite);
    assert!(takeovers(&mixed) > takeovers(&uniform), "{uniform}{mixed}");
    let (code, aimed, err) = leaselab(&[
        "audit",
        &spec,
        "--gen",
        "100",
        "--aim",
        "contention",
        "--pg-dir",
        &pg,
    ]);
    assert_eq!(code, Some(0), "{aimed}{err}");
    for c in [
        Contention::TakeoverDuringOpenWrite,
        Contention::WaitedOnAPausedHolder,
    ] {
        assert!(
            count(&aimed, c) > 2 * count(&uniform, c),
            "{}: {uniform}{aimed}",
            c.name()
        );
    }
}

/// `--aim contention` steers the holders toward contention: on check-then-write it finds the
/// mistake within fewer schedules than the uniform search (132, the README's table), the saved
/// trace says how its client aimed, and `--replay` without `--aim` runs it the same way.
#[test]
fn an_audit_aimed_at_contention_finds_sooner_and_replays_as_it_ran() {
    let Some(dir) = tmp("aim") else { return };
    let spec = example("check-then-write");
    let o = leaselab::audit_spec::Overrides {
        aim: leaselab_gen::Aim::Contention,
        ..Default::default()
    };
    let mut audit = leaselab::audit_spec::load_as(&spec, &dir.join("pg"), &o).expect("loads");
    let out = dir.join("out");
    let _ = std::fs::remove_dir_all(&out);
    let r = run_gen(
        &mut audit,
        leaselab_gen::search::Plan {
            shrink_iters: 100,
            ..plan(131, 1)
        },
        &out,
        false,
    )
    .expect("runs");
    let (file, report) = r.violation.expect("found within 131 schedules");
    assert!(report.violated(Check::Final) || report.violated(Check::I3));
    let text = std::fs::read_to_string(&file).expect("trace");
    assert!(text.contains("\nsetup aim contention\n"), "{text}");
    drop(audit);
    let (code, stdout, err) = leaselab(&[
        "audit",
        &spec.display().to_string(),
        "--replay",
        &file.display().to_string(),
        "--pg-dir",
        &dir.join("pg").display().to_string(),
    ]);
    assert_eq!(code, Some(1), "{stdout}{err}");
    assert!(
        stdout.contains("every step answered as recorded"),
        "{stdout}"
    );
}

/// `--shard K/4`, K = 0 … 3, run every schedule of one `--gen` and `--seed` once between them:
/// `deploy/merge-gen-shards.sh` adds their summary lines up to the figures one unsharded run
/// prints; a search started at `--from I` runs the schedules from I on, and each shard says
/// which it is.
#[test]
fn four_shards_add_up_to_one_search() {
    let Some(dir) = tmp("shards") else { return };
    let spec = example("seed").display().to_string();
    let pg = dir.join("pg").display().to_string();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "audit", &spec, "--gen", "40", "--seed", "3", "--jobs", "1", "--pg-dir", &pg,
        ];
        args.extend_from_slice(extra);
        let (code, out, err) = leaselab(&args);
        assert_eq!(code, Some(0), "{args:?}\n{out}{err}");
        out
    };
    let field = |line: &str, key: &str| -> u64 {
        line.split(' ')
            .find_map(|w| w.strip_prefix(&format!("{key}=")))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {key} in {line}"))
    };
    let summary = |out: &str| {
        out.lines()
            .find(|l| l.starts_with("SUMMARY "))
            .unwrap_or_else(|| panic!("no summary:\n{out}"))
            .to_string()
    };
    let whole_out = run(&[]);
    let whole = summary(&whole_out);
    std::fs::create_dir_all(&dir).expect("dir");
    let mut files = Vec::new();
    for k in 0..4 {
        let shard = format!("{k}/4");
        let out = run(&["--shard", &shard]);
        assert!(summary(&out).ends_with(&format!(" shard={k}/4")), "{out}");
        assert_eq!(field(&summary(&out), "generated"), 10, "{out}");
        let f = dir.join(format!("audit-{k}.txt"));
        std::fs::write(&f, &out).expect("write");
        files.push(f.display().to_string());
    }
    let merge = std::process::Command::new("bash")
        .arg(common::root().join("deploy/merge-gen-shards.sh"))
        .args(&files)
        .output()
        .expect("bash");
    let merged = String::from_utf8_lossy(&merge.stdout).into_owned();
    assert_eq!(merge.status.code(), Some(0), "{merged}");
    let total = merged
        .lines()
        .find(|l| l.starts_with("SUMMARY shards=4 "))
        .unwrap_or_else(|| panic!("no merged summary:\n{merged}"));
    for key in ["generated", "violations", "shrink_runs"] {
        assert_eq!(
            field(total, key),
            field(&whole, key),
            "{key}\n{merged}{whole}"
        );
    }
    assert_eq!(field(total, "unfinished"), 0, "{merged}");
    // The contention counts add up to the whole search's too.
    let contention = |out: &str| {
        out.lines()
            .find(|l| l.starts_with("contention, occurrences over the 40 schedules: "))
            .unwrap_or_else(|| panic!("no contention line:\n{out}"))
            .to_string()
    };
    assert_eq!(
        contention(&merged),
        contention(&whole_out),
        "{merged}{whole_out}"
    );
    let counts: u64 = leaselab_pg::audit::contention::Contention::ALL
        .iter()
        .map(|c| field(&contention(&merged), c.name()))
        .sum();
    assert!(counts > 0, "{merged}");
    let rest = summary(&run(&["--from", "31"]));
    assert!(rest.ends_with(" from=31"), "{rest}");
    assert_eq!(field(&rest, "generated"), 10, "{rest}");
}
