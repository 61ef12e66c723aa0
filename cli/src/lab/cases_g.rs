//! Cases G1–G4 from `003_6cfd396ce8eeab35.txt` (the Java teaching lab), on the model.

use super::{brief, s, Case, Lab, LabWorld};
use leaselab_checkers::Check;
use leaselab_model::client::{client_thinks_valid, LeaseGuard, LocalDeadline};
use leaselab_model::names::defaults::{DETAIL, HOLDER_A as A, HOLDER_B as B, SUMMARY};
use leaselab_model::prelude::*;

pub(super) fn cases() -> Vec<Case> {
    vec![
        Case { id: "G1", title: "renew watchdog and the client's stale expiry record", run: g1 },
        Case { id: "G2", title: "resurrected holder on a ManualClock: without and with a (strict) fence", run: g2 },
        Case { id: "G3", title: "client clock stepped back: a wall-clock deadline across machines is wrong", run: g3 },
        Case { id: "G4", title: "LeaseGuard: a failed renew sets lost; a pause between check and write is stopped only by the fence", run: g4 },
    ]
}

fn g1(lab: &mut Lab) {
    let mut w = lab.world(Config::default());
    let a = w.run(A, Op::acquire(A, 100));
    let record = match a {
        Outcome::Granted {
            expires: Expiry::At(t),
            ..
        } => t.0,
        _ => 0,
    };
    let mut local = LocalDeadline::from_request_start(Millis(0), 100, 0);
    w.advance(30);
    let r = w.run(A, Op::renew(A, 1, 100));
    let renewed = matches!(r, Outcome::Renewed { .. });
    if renewed {
        local = local.renewed(Millis(30), 100, 0);
    }
    let owner = match w.run("lab", Op::read_lease()) {
        Outcome::Lease(Some(r)) => r.holder.to_string(),
        o => o.to_string(),
    };
    lab.expect(
        "acquire fence=1, renew at t=30",
        s("renewed=true serverOwner=holder-a"),
        format!("renewed={renewed} serverOwner={owner}"),
    );
    w.advance(80);
    let server = match w.run("lab", Op::read_lease()) {
        Outcome::Lease(Some(r)) => r.expires_at,
        _ => Expiry::NegInfinity,
    };
    let now = w.now();
    let by_record = now.0 < record;
    let by_server = !server.is_expired_at(now);
    lab.expect(
        "the expiry recorded at acquire says expired, the server says valid",
        s("now=110 localRecordExpiry=100 serverExpiry=130 validByRecord=false validByServer=true"),
        format!("now={now} localRecordExpiry={record} serverExpiry={server} validByRecord={by_record} validByServer={by_server}"),
    );
    let stale = w.run(A, Op::check(Millis(record)));
    let moved = w.run(A, Op::check(local.deadline));
    lab.expect(
        "the client must move its local deadline on every successful renew",
        s("stale=expired moved=valid"),
        format!("stale={} moved={}", brief(&stale), brief(&moved)),
    );
    lab.judge("G1", "renew watchdog", &w, &[]);
}

fn resurrection(lab: &mut Lab, fence: FenceMode) -> (LabWorld, String) {
    let mut w = lab.world(Config::with_fence(fence));
    w.run(A, Op::acquire(A, 100));
    w.run(A, Op::write(SUMMARY, "A-old", 1));
    w.advance(250); // A stops: stop-the-world or partition, its watchdog too
    let b = w.run(B, Op::acquire(B, 100));
    let b_ok = w.run(B, Op::write(SUMMARY, "B-new", 2)) == Outcome::Accepted;
    let a_ok = w.run(A, Op::write(SUMMARY, "A-stale", 1)) == Outcome::Accepted;
    let owner = match w.run("lab", Op::read_lease()) {
        Outcome::Lease(Some(r)) => r.holder.to_string(),
        o => o.to_string(),
    };
    let fin = match w.run("lab", Op::read_part(SUMMARY)) {
        Outcome::Part(Some(r)) => r.content,
        o => o.to_string(),
    };
    let rejected = match w.run("lab", Op::count(A, AttemptOutcome::Rejected)) {
        Outcome::Count(n) => n,
        _ => u64::MAX,
    };
    let b_fence = match b {
        Outcome::Granted { token, .. } => token.0,
        _ => 0,
    };
    let line = format!(
        "useFence={} owner={owner} A.fence=1 B.fence={b_fence} bWrote={b_ok} aWrote={a_ok} final={fin} rejected={rejected}",
        fence != FenceMode::Off
    );
    (w, line)
}

fn g2(lab: &mut Lab) {
    let (w, line) = resurrection(lab, FenceMode::Off);
    lab.expect("without fence", s("useFence=false owner=holder-b A.fence=1 B.fence=2 bWrote=true aWrote=true final=A-stale rejected=0"), line);
    lab.judge(
        "G2-off",
        "resurrection without fence",
        &w,
        &[Check::I3, Check::Acceptance, Check::Final],
    );
    let (mut w, line) = resurrection(lab, FenceMode::Strict);
    lab.expect("with fence (strict: fence <= last is rejected)", s("useFence=true owner=holder-b A.fence=1 B.fence=2 bWrote=true aWrote=false final=B-new rejected=1"), line);
    // Why multi-part writes need `<=`: B's second part carries the same token.
    let strict = w.run(B, Op::write(DETAIL, "B-detail", 2));
    lab.judge("G2-strict", "resurrection with the strict fence", &w, &[]);
    let (mut w, _) = resurrection(lab, FenceMode::Scope);
    let scope = w.run(B, Op::write(DETAIL, "B-detail", 2));
    lab.expect(
        "a holding writing its second part with the same token: strict vs scope fence",
        s("strict=rejected scope=accepted"),
        format!("strict={} scope={}", brief(&strict), brief(&scope)),
    );
    lab.judge("G2-scope", "resurrection with the scope fence", &w, &[]);
}

fn g3(lab: &mut Lab) {
    let mut w = lab.world(Config::default());
    let g = w.run(A, Op::acquire(A, 100));
    // The client records the absolute expiry (clocks agree at acquire) ...
    let client_deadline = match g {
        Outcome::Granted {
            expires: Expiry::At(t),
            ..
        } => t.0 as i64,
        _ => 0,
    };
    let mono = LocalDeadline::from_request_start(Millis(0), 100, 0);
    w.advance(250);
    let server_now = w.now().0 as i64;
    // ... then NTP steps the client's wall clock back 200 ms.
    let client_now = server_now - 200;
    let thinks = client_thinks_valid(
        ClientExpiry::WallClock,
        client_now,
        client_deadline,
        w.now(),
        mono,
    );
    // The step is an event of the history: the wall clock read 250, then 50.
    w.exec_at_local(
        leaselab_model::Holder::new(A),
        None,
        Op::ClockStep {
            from: Millis(server_now as u64),
        },
        Millis(client_now as u64),
    );
    // The wall-clock check as the history records it: its clock reads 50 at server time 250.
    w.exec_at_local(
        leaselab_model::Holder::new(A),
        None,
        Op::check(Millis(client_deadline as u64)),
        Millis(client_now as u64),
    );
    let server_valid = matches!(w.run("lab", Op::read_lease()), Outcome::Lease(Some(r)) if !r.expires_at.is_expired_at(w.now()));
    lab.expect(
        "wall-clock deadline after an NTP step back",
        s("clientDeadline=100 serverNow=250 clientNow=50 clientThinksValid=true serverSaysValid=false"),
        format!("clientDeadline={client_deadline} serverNow={server_now} clientNow={client_now} clientThinksValid={thinks} serverSaysValid={server_valid}"),
    );
    let by_mono = client_thinks_valid(
        ClientExpiry::Monotonic,
        client_now,
        client_deadline,
        w.now(),
        mono,
    );
    let o = w.run(A, Op::check(mono.deadline));
    lab.expect(
        "a monotonic deadline read before the request is not fooled by the step",
        s("thinksValid=false check=expired"),
        format!("thinksValid={by_mono} check={}", brief(&o)),
    );
    lab.note(format!(
        "[G3] two clocks of {A} at t={server_now}: its wall clock, stepped back 200 ms, reads \
         {client_now} (the first check, against the wall-clock deadline {client_deadline}); its \
         monotonic clock reads {} since the request (the second check, against {})",
        server_now, mono.deadline.0
    ));
    lab.judge("G3", "client clock step", &w, &[]);
}

fn g4(lab: &mut Lab) {
    const TTL: u64 = 1500;
    let mut w = lab.world(Config::default());
    let mut guard = LeaseGuard::default();
    lab.expect("renewer period TTL/3", 500, LeaseGuard::renew_every(TTL));
    w.run(A, Op::acquire(A, TTL));
    if guard.may_start_write() {
        w.run(A, Op::write(SUMMARY, "A-1", 1));
    }
    w.advance(500);
    guard.on_renew(matches!(
        w.run(A, Op::renew(A, 1, TTL)),
        Outcome::Renewed { .. }
    ));
    // The next renew is delayed in the network until t=2100; the lease ended at 2000.
    w.advance(1550);
    w.run(B, Op::acquire(B, TTL));
    w.run(B, Op::write(DETAIL, "B-2", 2));
    w.advance(50);
    guard.on_renew(matches!(
        w.run(A, Op::renew(A, 1, TTL)),
        Outcome::Renewed { .. }
    ));
    if guard.is_lost() {
        w.run(A, Op::Lost);
    }
    lab.expect("the failed renew sets lost", true, guard.is_lost());
    // The worker checks lost before its next write: it aborts and re-queues, no reclaim.
    w.advance(100);
    let started = guard.may_start_write();
    if started {
        w.run(A, Op::write(DETAIL, "A-1-detail", 1));
    }
    lab.expect("new writes started by A after lost", false, started);
    w.run(B, Op::release(B, 2));
    let again = w.run(A, Op::acquire(A, TTL));
    lab.expect(
        "re-queued A acquires again with a new token",
        s("granted token=3"),
        brief(&again),
    );
    let mut guard = LeaseGuard::default();
    // Second holding: the guard checks, then the whole process stops (renewer included).
    let ok_to_write = guard.may_start_write();
    w.run(A, Op::Pause);
    w.advance(TTL + 100);
    w.run(B, Op::acquire(B, TTL));
    w.run(B, Op::write(SUMMARY, "B-4", 4));
    w.run(A, Op::Resume);
    let stale = if ok_to_write {
        w.run(A, Op::write(DETAIL, "A-3-detail", 3))
    } else {
        Outcome::Ok
    };
    lab.expect(
        "guard saw nothing during the pause (renewer frozen too)",
        false,
        guard.is_lost(),
    );
    lab.expect(
        "the stale write after the pause is stopped only by the fence",
        s("rejected"),
        brief(&stale),
    );
    guard.on_renew(matches!(
        w.run(A, Op::renew(A, 3, TTL)),
        Outcome::Renewed { .. }
    ));
    lab.expect("its next renew fails and sets lost", true, guard.is_lost());
    lab.judge("G4", "LeaseGuard", &w, &[]);
}
