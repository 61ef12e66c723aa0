//! Cases F1–F9 from `000_2e4560dda188126a.txt`, on the model. F4/F5 use the ManualClock in
//! place of SIGSTOP: the holder simply stops issuing operations (renewer included) while the
//! database clock runs on. Real processes and PostgreSQL come with the pg issue.

use super::{brief, s, Case, Lab, LabWorld};
use leaselab_checkers::Check;
use leaselab_model::client::LocalDeadline;
use leaselab_model::names::defaults::{
    DETAIL, HOLDER_A as A, HOLDER_B as B, MARGIN_MS, RENEW_MS, SUMMARY, TTL_MS,
};
use leaselab_model::prelude::*;

pub(super) fn cases() -> Vec<Case> {
    vec![
        Case { id: "F1", title: "normal path: acquire -> write -> renew -> release -> next holder acquires a larger token and writes", run: f1 },
        Case { id: "F2", title: "now() inside a long transaction is the transaction's start time; equal-token rewrite accepted", run: f2 },
        Case { id: "F3", title: "16 sessions race acquire on a barrier: new / held / expired rounds", run: f3 },
        Case { id: "F4", title: "main experiment: A paused between its local check and its write; B takes over; A resumes", run: f4 },
        Case { id: "F5", title: "negative control: F4's timeline, resource without token check (fence=off)", run: f5 },
        Case { id: "F6", title: "(a) negative control: check-then-write regresses the floor 2 -> 1; (b) the scope fence as one conditional UPDATE, both orders", run: f6 },
        Case { id: "F7", title: "fence granularity: stale holder writes a part the new holder never touched (row vs scope)", run: f7 },
        Case { id: "F8", title: "database crash (immediate stop, WAL recovery): lease and floor survive, no token reuse", run: f8 },
        Case { id: "F9", title: "side effect without a token: publish deduplicated by business key, and its fix", run: f9 },
    ]
}

fn f1(lab: &mut Lab) {
    let mut w = lab.world(lab.config(FenceMode::Scope));
    let o = w.run(A, Op::acquire(A, TTL_MS));
    lab.expect(
        "holder-a acquires the lease",
        s("granted token=1"),
        brief(&o),
    );
    let o = w.run(A, Op::write(SUMMARY, "rows=100(A)", 1));
    lab.expect("holder-a's write with token=1", s("accepted"), brief(&o));
    w.advance(RENEW_MS);
    let o = w.run(A, Op::renew(A, 1, TTL_MS));
    lab.expect("renew succeeds", s("renewed"), brief(&o));
    let o = w.run(A, Op::read_lease());
    lab.expect("token unchanged by renew", s("holder-a token=1"), brief(&o));
    let o = w.run(A, Op::release(A, 1));
    lab.expect("holder-a releases", s("released"), brief(&o));
    let o = w.run(B, Op::acquire(B, TTL_MS));
    lab.expect(
        "holder-b acquires at once after the release",
        s("granted token=2"),
        brief(&o),
    );
    let o = w.run(B, Op::write(SUMMARY, "rows=101(B)", 2));
    lab.expect("holder-b's write with token=2", s("accepted"), brief(&o));
    let o = w.run("lab", Op::read_floor());
    lab.expect("resource fence_floor", s("2"), brief(&o));
    lab.judge("F1", "normal path", &w, &[]);
}

fn f2(lab: &mut Lab) {
    let mut w = lab.world(lab.config(FenceMode::Scope));
    let db = DbName::Lease;
    // A holding that ends at t=1000; the long transaction starts at t=500, before it ends.
    w.run(A, Op::acquire(A, 1000));
    w.advance(500);
    w.run_on(B, "long", Op::begin(db));
    let t0 = w.run_on(B, "long", Op::Now { db });
    w.advance(1000); // t=1500: the lease expired at 1000
    let t1 = w.run_on(B, "long", Op::Now { db });
    lab.expect(
        "now() does not move inside one transaction",
        t0.to_string(),
        t1.to_string(),
    );
    let clock_ts = w.now();
    lab.expect_that(
        &format!("clock_timestamp() (t={clock_ts}) has passed the transaction's now() ({t1})"),
        Outcome::Now(clock_ts) != t1,
    );
    let auto = w.run_on(B, "auto", Op::read_lease());
    let expired_auto =
        matches!(&auto, Outcome::Lease(Some(r)) if r.expires_at.is_expired_at(w.now()));
    let inside = w.run_on(B, "long", Op::acquire(B, 1000));
    lab.expect_that(
        &format!("autocommit sees the lease expired, but acquire inside the long transaction is refused by its start time (got {inside})"),
        expired_auto && inside == Outcome::Refused,
    );
    w.run_on(B, "long", Op::commit(db));
    let o = w.run_on(B, "auto", Op::acquire(B, 1000));
    lab.expect(
        "the same acquire in autocommit succeeds",
        s("granted token=2"),
        brief(&o),
    );
    let o = w.run(B, Op::write(SUMMARY, "v1", 2));
    lab.expect("write with token=2", s("accepted"), brief(&o));
    let o = w.run(B, Op::write(SUMMARY, "v2", 2));
    lab.expect(
        "repeated write with an equal token (one holding, many writes)",
        s("accepted"),
        brief(&o),
    );
    lab.note(
        "the source's run shows token 4 because its table had history; here the table starts empty",
    );
    lab.judge("F2", "now() in a long transaction", &w, &[]);
    if let Some((lease, _)) = lab.real_pg(&Config::default()) {
        match leaselab_pg::real::long_txn_experiment(&lease) {
            Ok(r) => {
                lab.expect_that(
                    "real: inside one transaction now() does not move (400 ms later)",
                    r.now_frozen,
                );
                lab.expect_that("real: clock_timestamp() has passed now()", r.clock_moved);
                lab.expect_that(
                    "real: autocommit sees the 300 ms lease expired, the acquire inside the long transaction is refused",
                    r.expired_in_autocommit && r.refused_inside,
                );
                lab.expect(
                    "real: the same acquire in autocommit, token",
                    2,
                    r.token_in_autocommit.unwrap_or(0),
                );
            }
            Err(e) => {
                lab.expect_that(
                    &format!("real: long-transaction experiment ran ({e})"),
                    false,
                );
            }
        }
    }
}

fn f3(lab: &mut Lab) {
    let mut w = lab.world(lab.config(FenceMode::Scope));
    let threads: Vec<(String, String)> = (1..=16)
        .map(|i| (format!("t{i:02}"), format!("c{i:02}")))
        .collect();
    let mut attempts = 0;
    // One round: every session sends one autocommit acquire at the same instant (the source's
    // barrier). Each is one atomic statement; exactly the ones that find the row free or
    // expired win.
    let round = |w: &mut LabWorld, attempts: &mut usize| -> usize {
        let mut wins = 0;
        for (t, c) in &threads {
            *attempts += 1;
            if matches!(
                w.run_on(t, c, Op::acquire(t, TTL_MS)),
                Outcome::Granted { .. }
            ) {
                wins += 1;
            }
        }
        wins
    };
    let n = round(&mut w, &mut attempts);
    lab.expect("new lease: winners", 1, n);
    w.advance(100);
    let n = round(&mut w, &mut attempts);
    lab.expect("while held: winners", 0, n);
    w.advance(TTL_MS);
    let n = round(&mut w, &mut attempts);
    lab.expect("after expiry: winners", 1, n);
    let o = w.run("lab", Op::read_lease());
    let token = match &o {
        Outcome::Lease(Some(r)) => r.token.0,
        _ => 0,
    };
    lab.expect(&format!("token after {attempts} attempts"), 2, token);
    lab.judge("F3", "acquire race", &w, &[]);
    if let Some((lease, _)) = lab.real_pg(&Config::default()) {
        match leaselab_pg::real::race_experiment(&lease, TTL_MS) {
            Ok((winners, token)) => {
                lab.expect(
                    "real: 16 connections on a barrier, winners new / held / expired",
                    s("1/0/1"),
                    format!("{}/{}/{}", winners[0], winners[1], winners[2]),
                );
                lab.expect("real: token after 48 attempts", 2, token);
            }
            Err(e) => {
                lab.expect_that(&format!("real: race experiment ran ({e})"), false);
            }
        }
    } else {
        lab.note("the statements run one at a time here; `--backend pg` adds the real 16-connection race");
    }
}

/// F4's timeline, with the resource configured by `config`.
struct PauseRun {
    w: LabWorld,
    held_at_3000: Outcome,
    check: Outcome,
    b_acquire: Outcome,
    b_write: Outcome,
    a_write: Outcome,
    a_renew: Outcome,
    summary: Outcome,
    floor: Outcome,
    a_rejected: Outcome,
    /// When holder-a's renewer renewed (database clock), before the pause.
    renewed: Vec<u64>,
}

fn pause_timeline(mut w: LabWorld) -> PauseRun {
    let sent = w.local(&Holder::new(A));
    w.run(A, Op::acquire(A, TTL_MS));
    let mut deadline = LocalDeadline::from_request_start(sent, TTL_MS, MARGIN_MS);
    // The background renewer keeps the lease for 3000 ms (two TTLs).
    let mut renewed = Vec::new();
    while w.now().0 + RENEW_MS <= 3000 {
        w.advance(RENEW_MS);
        let sent = w.local(&Holder::new(A));
        if matches!(w.run(A, Op::renew(A, 1, TTL_MS)), Outcome::Renewed { .. }) {
            deadline = deadline.renewed(sent, TTL_MS, MARGIN_MS);
            renewed.push(w.now().0);
        }
    }
    w.advance(3000 - w.now().0);
    let held_at_3000 = w.run("lab", Op::read_lease());
    // A passes its local-deadline check, then stops right before writing (SIGSTOP).
    let check = w.run(A, Op::check(deadline.deadline));
    w.run(A, Op::Pause);
    // The renewer is stopped too: the lease expires by the database clock at 2800 + 1500.
    w.advance(1400);
    let b_acquire = w.run(B, Op::acquire(B, TTL_MS));
    let b_write = w.run(B, Op::write(SUMMARY, "rows=201(B)", 2));
    w.advance(100);
    w.run(B, Op::renew(B, 2, TTL_MS));
    w.run(B, Op::release(B, 2));
    w.advance(500);
    w.run(A, Op::Resume);
    let a_write = w.run(A, Op::write(SUMMARY, "rows=200(A)", 1));
    let a_renew = w.run(A, Op::renew(A, 1, TTL_MS));
    let summary = w.run("lab", Op::read_part(SUMMARY));
    let floor = w.run("lab", Op::read_floor());
    let a_rejected = w.run("lab", Op::count(A, AttemptOutcome::Rejected));
    PauseRun {
        w,
        held_at_3000,
        check,
        b_acquire,
        b_write,
        a_write,
        a_renew,
        summary,
        floor,
        a_rejected,
        renewed,
    }
}

fn f4(lab: &mut Lab) {
    let w = lab.world(lab.config(FenceMode::Scope));
    let r = pause_timeline(w);
    lab.expect(
        "while not paused (3000 ms, TTL=1500 ms) renewals keep the lease",
        s("holder-a token=1"),
        brief(&r.held_at_3000),
    );
    lab.expect(
        "A passes its local-deadline check, then is paused (renewer too)",
        s("valid"),
        brief(&r.check),
    );
    lab.expect("B acquires", s("granted token=2"), brief(&r.b_acquire));
    lab.expect("B's write", s("accepted"), brief(&r.b_write));
    lab.expect(
        "A's write after resume, token=1, lease free at that moment",
        s("rejected"),
        brief(&r.a_write),
    );
    lab.expect("A's renew after the write", s("refused"), brief(&r.a_renew));
    lab.expect(
        "final summary",
        s("rows=201(B) by holder-b token=2"),
        brief(&r.summary),
    );
    lab.expect("fence_floor", s("2"), brief(&r.floor));
    lab.expect(
        "write_attempt holds one rejected attempt by A",
        s("1"),
        brief(&r.a_rejected),
    );
    lab.observed.insert(super::table::SCOPE, brief(&r.a_write));
    lab.judge("F4", "main experiment", &r.w, &[]);
    real_pause(lab, true);
}

/// Why the real-time crash experiment could not run: a statement failed, or the clusters did
/// not stop and restart.
#[derive(Debug, thiserror::Error)]
enum RealCrashError {
    #[error(transparent)]
    Statement(#[from] leaselab_pg::real::RealError),
    #[error("crash-restart of the clusters: {0}")]
    Restart(#[from] leaselab_pg::PgError),
}

/// F8 as the source ran it: real `now()`, `pg_ctl stop -m immediate`, restart, WAL recovery.
fn real_crash(lab: &mut Lab) {
    let Some((lease, res)) = lab.real_pg(&Config::default()) else {
        return;
    };
    let Some(pg) = lab.pg.clone() else { return };
    let run = || -> Result<leaselab_pg::real::CrashReport, RealCrashError> {
        leaselab_pg::real::crash_prefix(&lease, &res)?;
        pg.borrow_mut().crash_restart_all()?;
        Ok(leaselab_pg::real::crash_suffix(&lease, &res)?)
    };
    match run() {
        Ok(r) => {
            lab.expect(
                "real: after pg_ctl stop -m immediate and restart, the lease row",
                s("holder-a/2"),
                format!("{}/{}", r.lease_after.0, r.lease_after.1),
            );
            lab.expect("real: fence_floor recovered", 2, r.floor_after);
            lab.expect(
                "real: next acquire once expired: no reuse",
                3,
                r.next_token.unwrap_or(0),
            );
            lab.expect_that(
                "real: holder-b's token-3 write accepted, holder-a's token-2 write rejected",
                r.new_write && !r.stale_write,
            );
        }
        Err(e) => {
            lab.expect_that(&format!("real: crash experiment ran ({e})"), false);
        }
    }
}

/// F4/F5 as the source ran them: two real processes, SIGSTOP/SIGCONT, real `now()`.
fn real_pause(lab: &mut Lab, fenced: bool) {
    let Some(real) = lab.real.clone() else {
        return;
    };
    let cfg = Config::with_fence(if fenced {
        FenceMode::Scope
    } else {
        FenceMode::Off
    });
    let Some((lease, res)) = lab.real_pg(&cfg) else {
        return;
    };
    let records = real.records.join(if fenced { "F4" } else { "F5" });
    let r = match leaselab_pg::real::pause_experiment(
        &real.exe,
        &lease,
        &res,
        fenced,
        Some(&records),
    ) {
        Ok(r) => r,
        Err(e) => {
            lab.expect_that(&format!("real: two-process experiment ran ({e})"), false);
            return;
        }
    };
    let (h, t, held) = &r.held_after_wait;
    lab.expect(
        "real: A (own process) keeps the lease by renewing for 3000 ms, TTL=1500 ms",
        s("holder-a token=1 held"),
        format!("{h} token={t} {}", if *held { "held" } else { "expired" }),
    );
    lab.expect(
        "real: A passes its local-deadline check",
        s("CHECK valid=true"),
        r.a_check.clone(),
    );
    lab.expect(
        "real: after SIGSTOP /proc/<pid>/stat shows A stopped (renewer thread too)",
        'T',
        r.state_after_stop,
    );
    let b_acq = r.b_lines.first().cloned().unwrap_or_default();
    lab.expect("real: B acquires", s("ACQUIRED token=2"), b_acq);
    let line = |lines: &[String], word: &str| {
        lines
            .iter()
            .rfind(|l| l.starts_with(word))
            .cloned()
            .unwrap_or_default()
    };
    let b_write = line(&r.b_lines, "WRITE");
    lab.expect("real: B's write", s("WRITE accepted=true token=2"), b_write);
    let a_write = line(&r.a_after, "WRITE");
    // The renewer's last renew: the one overdue when A resumed.
    let a_renew = line(&r.a_after, "RENEW");
    lab.note(format!("real: A after SIGCONT: {a_write}; {a_renew}"));
    let summary = r
        .summary
        .as_ref()
        .map(|(c, w, t)| format!("{c} by {w} token={t}"))
        .unwrap_or_default();
    if fenced {
        lab.expect(
            "real: A's write after resume",
            s("WRITE accepted=false token=1"),
            a_write,
        );
        lab.expect("real: A's renew after resume", s("RENEW ok=false"), a_renew);
        lab.expect(
            "real: final summary",
            s("holder-b-t2-j1 by holder-b token=2"),
            summary,
        );
        lab.expect("real: fence_floor", 2, r.floor);
        lab.expect(
            "real: write_attempt holds one rejected attempt by A",
            1,
            r.a_rejected,
        );
    } else {
        lab.expect(
            "real: the break: A's stale write",
            s("WRITE accepted=true token=1"),
            a_write,
        );
        lab.expect(
            "real: final summary",
            s("holder-a-t1-j1 by holder-a token=1"),
            summary,
        );
        lab.expect("real: fence_floor", 0, r.floor);
    }
    judge_records(lab, &r.records, fenced);
}

/// The holders' own records (each process its own file, as a service would write them), judged
/// together by the checkers alone: what `leaselab judge` says of a deployment that did this.
fn judge_records(lab: &mut Lab, files: &[std::path::PathBuf], fenced: bool) {
    let judged = crate::judge_cmd::judge(files, true);
    let verdict = judged
        .text
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("verdict: "))
        .unwrap_or("none (the records could not be judged)")
        .to_string();
    let expected = if fenced {
        "every check holds (I1, I2, I3, acceptance, final)"
    } else {
        "I3, acceptance, final broken"
    };
    lab.expect(
        "real: the processes' own records, judged alone",
        s(expected),
        verdict,
    );
    for e in &judged.errors {
        lab.note(format!("real: record: {e}"));
    }
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    lab.note(format!("judge: leaselab judge --merge {}", names.join(" ")));
}

fn f5(lab: &mut Lab) {
    let r = pause_timeline(lab.world(Config::with_fence(FenceMode::Off)));
    let last = r.renewed.last().copied().unwrap_or(0);
    lab.note(format!(
        "lease: TTL {TTL_MS} ms; holder-a's renewer renewed every {RENEW_MS} ms ({} times, the \
         last at t={last}) until the pause stopped it with the holder, so the lease ends at \
         t={} by the database clock",
        r.renewed.len(),
        last + TTL_MS
    ));
    lab.note(format!(
        "A after resume: WRITE {} token=1; RENEW_AFTER_WRITE {}",
        brief(&r.a_write),
        brief(&r.a_renew)
    ));
    lab.note(format!(
        "final summary = {}; fence_floor={} (the floor is the highest token a fenced write \
         set; with no fence nothing sets it)",
        brief(&r.summary),
        brief(&r.floor)
    ));
    lab.expect(
        "lease behaviour identical to F4: B acquires",
        s("granted token=2"),
        brief(&r.b_acquire),
    );
    lab.expect(
        "the break: A's stale write",
        s("accepted"),
        brief(&r.a_write),
    );
    lab.observed
        .insert(super::table::CLIENT_CHECK, brief(&r.a_write));
    lab.judge(
        "F5",
        "unfenced resource",
        &r.w,
        &[Check::I3, Check::Acceptance, Check::Final],
    );
    real_pause(lab, false);
}

fn f6(lab: &mut Lab) {
    f6a(lab);
    f6b(lab);
}

fn f6a(lab: &mut Lab) {
    let mut w = lab.world(Config::with_fence(FenceMode::CheckThenWrite));
    let o = w.run(A, Op::fence(1));
    lab.expect(
        "F6a: A (token 1) reads floor 0 and passes",
        s("passed"),
        brief(&o),
    );
    w.run(A, Op::Pause);
    let o = w.run(B, Op::fence(2));
    lab.expect(
        "F6a: B (token 2) reads floor 0 and passes",
        s("passed"),
        brief(&o),
    );
    let o = w.run(B, Op::upsert(SUMMARY, "new(B)", 2));
    lab.expect(
        "F6a: B sets floor 2 and writes new(B)",
        s("accepted"),
        brief(&o),
    );
    let before = w.run("lab", Op::read_floor());
    w.run(A, Op::Resume);
    let o = w.run(A, Op::upsert(SUMMARY, "old(A)", 1));
    lab.observed
        .insert(super::table::CHECK_THEN_WRITE, brief(&o));
    let after = w.run("lab", Op::read_floor());
    let part = w.run("lab", Op::read_part(SUMMARY));
    lab.note(format!(
        "F6a check-then-write: B accepted=true, A {}, final {}, fence_floor={}",
        brief(&o),
        brief(&part),
        brief(&after)
    ));
    lab.expect(
        "F6a: the break: floor regresses",
        s("2 -> 1"),
        format!("{} -> {}", brief(&before), brief(&after)),
    );
    lab.judge(
        "F6a",
        "check-then-write",
        &w,
        &[Check::I3, Check::Acceptance, Check::Final],
    );
}

fn f6b(lab: &mut Lab) {
    let res = DbName::Res;
    // Order 1: A advances the floor to 1 and pauses uncommitted; B waits on the row lock.
    let mut w = lab.world(lab.config(FenceMode::Scope));
    w.run(A, Op::begin(res));
    let o = w.run(A, Op::fence(1));
    lab.expect(
        "A-first: A's UPDATE advances the floor to 1 (uncommitted)",
        s("passed"),
        brief(&o),
    );
    w.run(A, Op::Pause);
    w.run(B, Op::begin(res));
    let o = w.run(B, Op::fence(2));
    lab.expect(
        "A-first: B's UPDATE waits on the floor row lock (wait_event_type = 'Lock')",
        s("blocked"),
        brief(&o),
    );
    w.run(A, Op::Resume);
    w.run(A, Op::upsert(SUMMARY, "old(A)", 1));
    w.run(A, Op::commit(res));
    let o = w.run(B, Op::await_(res));
    lab.expect(
        "A-first: after A commits, B re-evaluates 1 <= 2",
        s("passed"),
        brief(&o),
    );
    w.run(B, Op::upsert(SUMMARY, "new(B)", 2));
    w.run(B, Op::commit(res));
    let part = w.run("lab", Op::read_part(SUMMARY));
    lab.expect(
        "A-first: final content",
        s("new(B) by holder-b token=2"),
        brief(&part),
    );
    lab.judge("F6b-a-first", "scope fence, A first", &w, &[]);

    // Order 2: B advances to 2 first; A's token 1 is refused after the wait.
    let mut w = lab.world(lab.config(FenceMode::Scope));
    w.run(B, Op::begin(res));
    w.run(B, Op::fence(2));
    w.run(A, Op::begin(res));
    let o = w.run(A, Op::fence(1));
    lab.expect(
        "B-first: A's UPDATE waits on the floor row lock",
        s("blocked"),
        brief(&o),
    );
    w.run(B, Op::upsert(SUMMARY, "new(B)", 2));
    w.run(B, Op::commit(res));
    let o = w.run(A, Op::await_(res));
    lab.expect(
        "B-first: A re-evaluates 2 <= 1 and is refused",
        s("failed"),
        brief(&o),
    );
    let obs = if o == Outcome::Failed {
        "rejected".to_string()
    } else {
        brief(&o)
    };
    lab.observed.insert(super::table::SCOPE_F6B, obs);
    w.run(A, Op::rollback(res));
    let part = w.run("lab", Op::read_part(SUMMARY));
    lab.expect(
        "B-first: final content",
        s("new(B) by holder-b token=2"),
        brief(&part),
    );
    lab.judge("F6b-b-first", "scope fence, B first", &w, &[]);
}

fn granularity(mut w: LabWorld) -> (LabWorld, Outcome) {
    w.run(A, Op::acquire(A, TTL_MS));
    w.run(A, Op::write(SUMMARY, "A-summary", 1));
    w.advance(TTL_MS);
    w.run(B, Op::acquire(B, TTL_MS));
    w.run(B, Op::write(SUMMARY, "B-summary", 2));
    let o = w.run(A, Op::write(DETAIL, "A-detail", 1));
    (w, o)
}

fn f7(lab: &mut Lab) {
    let (w, o) = granularity(lab.world(Config::with_fence(FenceMode::Row)));
    lab.note(format!(
        "FENCED_ROW: B summary accepted, A(token=1) detail {}",
        brief(&o)
    ));
    lab.expect(
        "the break: row fence has no old token for a new row",
        s("accepted"),
        brief(&o),
    );
    lab.observed.insert(super::table::ROW, brief(&o));
    lab.judge("F7-row", "row fence", &w, &[Check::I3, Check::Acceptance]);
    let cfg = lab.config(FenceMode::Scope);
    let (w, o) = granularity(lab.world(cfg));
    lab.expect("FENCED_SCOPE: A(token=1) detail", s("rejected"), brief(&o));
    lab.observed.insert(super::table::SCOPE_F7, brief(&o));
    lab.judge("F7-scope", "scope fence", &w, &[]);
}

/// F8 up to the restart; returns the world at t=110, both databases back up.
fn crash_prefix(config: Config, lab: &mut Lab, tag: &str) -> LabWorld {
    let mut w = lab.world(config);
    w.run(B, Op::acquire(B, TTL_MS));
    w.run(B, Op::release(B, 1));
    let o = w.run(A, Op::acquire(A, TTL_MS));
    lab.expect(
        &format!("{tag}: holder-a holds"),
        s("granted token=2"),
        brief(&o),
    );
    w.run(A, Op::write(SUMMARY, "A-2", 2));
    w.advance(10);
    w.run("admin", Op::Crash { db: DbName::Lease });
    w.run("admin", Op::Crash { db: DbName::Res });
    w.advance(50);
    let o = w.run(A, Op::read_lease());
    lab.expect(&format!("{tag}: while down"), s("unavailable"), brief(&o));
    w.advance(50);
    w.run("admin", Op::Restart { db: DbName::Lease });
    w.run("admin", Op::Restart { db: DbName::Res });
    w
}

fn f8(lab: &mut Lab) {
    let mut w = crash_prefix(lab.config(FenceMode::Scope), lab, "logged");
    let o = w.run("lab", Op::read_lease());
    lab.expect(
        "lease row recovered: a lease does not end with the connection",
        s("holder-a token=2"),
        brief(&o),
    );
    let o = w.run("lab", Op::read_floor());
    lab.expect("fence_floor recovered", s("2"), brief(&o));
    w.advance(TTL_MS); // the TTL kept running through the outage
    let o = w.run(B, Op::acquire(B, TTL_MS));
    lab.expect(
        "next acquire after expiry: no reuse",
        s("granted token=3"),
        brief(&o),
    );
    let o = w.run(B, Op::write(SUMMARY, "B-3", 3));
    lab.expect("holder-b's token-3 write", s("accepted"), brief(&o));
    let o = w.run(A, Op::write(SUMMARY, "A-2-late", 2));
    lab.expect("holder-a's token-2 write", s("rejected"), brief(&o));
    lab.judge("F8", "crash and recovery", &w, &[]);
    real_crash(lab);

    // Negative control for I2: an UNLOGGED lease table comes back empty.
    let mut cfg = lab.config(FenceMode::Scope);
    cfg.lease_table = LeaseDurability::Unlogged;
    let mut w = crash_prefix(cfg, lab, "unlogged");
    let o = w.run("lab", Op::read_lease());
    lab.expect(
        "unlogged: lease table after restart",
        s("lease absent"),
        brief(&o),
    );
    w.advance(TTL_MS);
    let o = w.run(B, Op::acquire(B, TTL_MS));
    lab.expect(
        "unlogged: token handed out again",
        s("granted token=1"),
        brief(&o),
    );
    let o = w.run(B, Op::write(SUMMARY, "B-1", 1));
    lab.note(format!(
        "unlogged: the floor (2) still refuses the reused token 1: B's write {}",
        brief(&o)
    ));
    w.advance(TTL_MS);
    w.run(B, Op::acquire(B, TTL_MS));
    w.run(B, Op::write(SUMMARY, "B-2", 2));
    let o = w.run(A, Op::write(SUMMARY, "A-2-stale", 2));
    lab.expect(
        "unlogged: the break: stale holder-a's token 2 equals B's reused token 2",
        s("accepted"),
        brief(&o),
    );
    lab.judge(
        "F8-unlogged",
        "unlogged lease table (non-durable token counter)",
        &w,
        &[Check::I2, Check::Acceptance],
    );
}

fn publish_world(mut w: LabWorld) -> LabWorld {
    w.run(A, Op::acquire(A, TTL_MS));
    w.run(A, Op::Pause);
    w.advance(TTL_MS + 100);
    w.run(B, Op::acquire(B, TTL_MS));
    w
}

const KEY: &str = "report-ready:daily-report";

fn f9(lab: &mut Lab) {
    let mut w = publish_world(lab.world(Config::default()));
    w.run(B, Op::publish(KEY, "B-new", 2));
    w.run(A, Op::Resume);
    let o = w.run(A, Op::publish(KEY, "A-stale", 1));
    lab.expect(
        "order B->A: A's duplicate publish is dropped by the business key",
        s("rejected"),
        brief(&o),
    );
    lab.judge("F9-b-first", "business key, B first", &w, &[]);

    let mut w = publish_world(lab.world(Config::default()));
    w.run(A, Op::Resume);
    let a = w.run(A, Op::publish(KEY, "A-stale", 1));
    let b = w.run(B, Op::publish(KEY, "B-new", 2));
    let kept = w.run("lab", Op::ReadPublish { key: KEY.into() });
    lab.note(format!(
        "order A->B: A {}, B {}, kept {}",
        brief(&a),
        brief(&b),
        brief(&kept)
    ));
    lab.expect(
        "the break: idempotence keeps the first to arrive",
        s("A-stale by holder-a token=1"),
        brief(&kept),
    );
    lab.judge(
        "F9-a-first",
        "business key, A first",
        &w,
        &[Check::Acceptance],
    );

    let versioned = Config {
        publish: PublishMode::Versioned,
        ..Config::default()
    };
    let mut w = publish_world(lab.world(versioned));
    w.run(A, Op::Resume);
    w.run(A, Op::publish(KEY, "A-stale", 1));
    w.run(B, Op::publish(KEY, "B-new", 2));
    let kept = w.run("lab", Op::ReadPublish { key: KEY.into() });
    lab.expect(
        "fix: the publish carries its token and downstream keeps only >=",
        s("B-new by holder-b token=2"),
        brief(&kept),
    );
    lab.note("the other fix, an outbox (write to a fenced local table, forward later), is the scope fence again");
    lab.judge("F9-versioned", "versioned publish, A first", &w, &[]);
}
