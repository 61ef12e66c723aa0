//! Cases beyond the sources (`leaselab lab --beyond`), each with its expected outcome, run on
//! the model and — with `--backend pg` — on PostgreSQL, where they pin behaviour the model must
//! share with the real database.

use super::{brief, s, Case, Lab, LabWorld};
use leaselab_checkers::Check;
use leaselab_model::prelude::*;

pub(super) fn cases() -> Vec<Case> {
    vec![
        Case {
            id: "X1",
            title: "a losing acquire inside an open transaction stalls the holder's renew; the renew that waited past expiry still succeeds on its pre-wait now()",
            run: x1,
        },
        Case {
            id: "X2",
            title: "-infinity round trip: release stores -infinity, reads it back, and the next acquire takes over with token + 1",
            run: x2,
        },
        Case {
            id: "X3",
            title: "a scope with no floor row rejects every write, even the current holder's (the floor must be seeded)",
            run: x3,
        },
        Case {
            id: "X4",
            title: "the fence UPDATE under REPEATABLE READ fails with 40001 on a concurrent update even when its guard would pass; retried, it passes",
            run: x4,
        },
        Case {
            id: "X6",
            title: "Chubby-style lock-delay narrows the window, never closes it: a pause longer than TTL plus the delay still breaks an unfenced resource",
            run: x6,
        },
        Case {
            id: "X7",
            title: "renew after expiry allowed: a paused holder's late renew revives its token across a gap; I1 and I3 still hold, the guard no longer trips",
            run: x7,
        },
        Case {
            id: "X5",
            title: "the guarded floor upsert: the first write of a new scope creates its floor; racing a stale token, the higher token wins in both orders",
            run: x5,
        },
    ]
}

fn x1(lab: &mut Lab) {
    let mut w = lab.world(Config::default());
    let o = w.run("holder-a", Op::acquire("holder-a", 1000));
    lab.expect("A acquires, TTL 1000", s("granted token=1"), brief(&o));
    w.run_on("holder-b", "tx", Op::begin(DbName::Lease));
    let o = w.run_on("holder-b", "tx", Op::acquire("holder-b", 1000));
    lab.expect(
        "B's acquire inside an open transaction loses (the row stays locked)",
        s("refused"),
        brief(&o),
    );
    let o = w.run("holder-a", Op::renew("holder-a", 1, 1000));
    lab.expect("A's renew waits on that row lock", s("blocked"), brief(&o));
    w.advance(2000);
    w.run_on("holder-b", "tx", Op::rollback(DbName::Lease));
    let o = w.run("holder-a", Op::await_(DbName::Lease));
    lab.expect(
        "after 2000 ms the renew still succeeds on its pre-wait now(): expires_at = 0 + 1000",
        s("renewed expires=1000"),
        o.to_string(),
    );
    lab.note("the renewed lease is already expired at t=2000: a renew that waited must not be trusted by its caller's clock");
    lab.judge("X1", "renew stalled by a losing acquire", &w, &[]);
}

fn x2(lab: &mut Lab) {
    let mut w = lab.world(Config::default());
    w.run("holder-a", Op::acquire("holder-a", 1000));
    let o = w.run("holder-a", Op::release("holder-a", 1));
    lab.expect("release", s("released"), brief(&o));
    let o = w.run("lab", Op::read_lease());
    lab.expect(
        "the row keeps holder and token, expires_at = -infinity",
        s("lease holder=holder-a token=1 expires=-infinity"),
        o.to_string(),
    );
    let o = w.run("holder-b", Op::acquire("holder-b", 1000));
    lab.expect(
        "-infinity <= now(): the next acquire takes over at once",
        s("granted token=2"),
        brief(&o),
    );
    lab.judge("X2", "-infinity round trip", &w, &[]);
}

fn x3(lab: &mut Lab) {
    let cfg = Config {
        scopes: vec![],
        ..Config::default()
    };
    let mut w = lab.world(cfg);
    w.run("holder-a", Op::acquire("holder-a", 1000));
    let o = w.run("holder-a", Op::write("summary", "A", 1));
    lab.expect(
        "the current holder's write to a scope without a floor row",
        s("rejected"),
        brief(&o),
    );
    let o = w.run("lab", Op::read_floor());
    lab.expect(
        "no floor row was created by the failed UPDATE",
        s("floor absent"),
        o.to_string(),
    );
    lab.note("the fence UPDATE matches no row, so the write rolls back: a liveness trap, not a safety hole");
    lab.judge("X3", "scope without a floor row", &w, &[]);
}

fn x4(lab: &mut Lab) {
    let res = DbName::Res;
    let mut w = lab.world(Config::default());
    w.run_on("holder-b", "b", Op::begin(res));
    let o = w.run_on("holder-b", "b", Op::fence(2));
    lab.expect(
        "B (READ COMMITTED) advances the floor to 2, uncommitted",
        s("passed"),
        brief(&o),
    );
    w.run_on("holder-c", "c", Op::BeginRepeatableRead { db: res });
    let o = w.run_on("holder-c", "c", Op::fence(3));
    lab.expect(
        "C (REPEATABLE READ, token 3) waits on the floor row lock",
        s("blocked"),
        brief(&o),
    );
    w.run_on("holder-b", "b", Op::upsert("summary", "B", 2));
    w.run_on("holder-b", "b", Op::commit(res));
    let o = w.run_on("holder-c", "c", Op::await_(res));
    lab.expect(
        "after B commits, C's UPDATE fails although 2 <= 3 would pass",
        s("error reason=sqlstate-40001"),
        o.to_string(),
    );
    let o = w.run_on("holder-c", "c", Op::upsert("summary", "C", 3));
    lab.expect(
        "the aborted transaction refuses further statements",
        s("error reason=sqlstate-25P02"),
        o.to_string(),
    );
    w.run_on("holder-c", "c", Op::rollback(res));
    w.run_on("holder-c", "c", Op::BeginRepeatableRead { db: res });
    let o = w.run_on("holder-c", "c", Op::fence(3));
    lab.expect(
        "retried in a new transaction, the fence passes",
        s("passed"),
        brief(&o),
    );
    w.run_on("holder-c", "c", Op::upsert("summary", "C", 3));
    w.run_on("holder-c", "c", Op::commit(res));
    let o = w.run("lab", Op::read_floor());
    lab.expect("floor", s("3"), brief(&o));
    lab.note("map 40001 to \"retry the write in a new transaction\"; READ COMMITTED (F6b) re-evaluates instead");
    lab.judge("X4", "40001 under REPEATABLE READ", &w, &[]);
}

fn x5(lab: &mut Lab) {
    let res = DbName::Res;
    let cfg = || Config {
        fence: FenceMode::ScopeUpsert,
        scopes: vec![],
        ..Config::default()
    };
    let mut w = lab.world(cfg());
    let o = w.run("holder-a", Op::write("summary", "A", 1));
    lab.expect(
        "first write of a scope with no floor row: the upsert creates the floor",
        s("accepted"),
        brief(&o),
    );
    let o = w.run("lab", Op::read_floor());
    lab.expect("floor created", s("1"), brief(&o));
    lab.judge("X5-first", "guarded floor upsert, first write", &w, &[]);

    for (first, ft, second, st, name) in [
        ("holder-b", 2, "holder-a", 1, "X5-new-first"),
        ("holder-a", 1, "holder-b", 2, "X5-stale-first"),
    ] {
        let mut w = lab.world(cfg());
        w.run(first, Op::begin(res));
        let o = w.run(first, Op::fence(ft));
        lab.expect(
            &format!("{name}: {first} (token {ft}) inserts the floor row, uncommitted"),
            s("passed"),
            brief(&o),
        );
        w.run(second, Op::begin(res));
        let o = w.run(second, Op::fence(st));
        lab.expect(
            &format!("{name}: {second}'s upsert waits on the uncommitted insert"),
            s("blocked"),
            brief(&o),
        );
        w.run(first, Op::upsert("summary", first, ft));
        w.run(first, Op::commit(res));
        let o = w.run(second, Op::await_(res));
        let want = if st > ft { "passed" } else { "failed" };
        lab.expect(
            &format!("{name}: {second} (token {st}) re-checks against the committed floor {ft}"),
            s(want),
            brief(&o),
        );
        if o == Outcome::Passed {
            w.run(second, Op::upsert("summary", second, st));
            w.run(second, Op::commit(res));
        } else {
            w.run(second, Op::rollback(res));
        }
        let o = w.run("lab", Op::read_part("summary"));
        lab.expect(
            &format!("{name}: final content"),
            s("holder-b by holder-b token=2"),
            brief(&o),
        );
        lab.judge(name, "guarded floor upsert, racing a stale token", &w, &[]);
    }
}

/// A paused holder, a lock-delay of 1000 ms on a 1500 ms lease: B is refused during the delay,
/// takes over after it, and A, paused for longer than TTL + delay, writes with token 1.
fn lock_delay_run(lab: &mut Lab, fence: FenceMode) -> (LabWorld, [Outcome; 4]) {
    let mut w = lab.world(Config {
        lock_delay_ms: 1000,
        ..Config::with_fence(fence)
    });
    w.run("holder-a", Op::acquire("holder-a", 1500));
    w.run("holder-a", Op::check(Millis(1200)));
    w.run("holder-a", Op::Pause);
    w.advance(1600);
    let early = w.run("holder-b", Op::acquire("holder-b", 1500));
    w.advance(900);
    let late = w.run("holder-b", Op::acquire("holder-b", 1500));
    let b = w.run("holder-b", Op::write("summary", "B-new", 2));
    w.advance(600);
    w.run("holder-a", Op::Resume);
    let a = w.run("holder-a", Op::write("summary", "A-stale", 1));
    w.run("lab", Op::read_part("summary"));
    (w, [early, late, b, a])
}

fn x6(lab: &mut Lab) {
    let (w, [early, late, b, a]) = lock_delay_run(lab, FenceMode::Off);
    lab.expect(
        "B at t=1600, 100 ms after A's lease expired: the 1000 ms lock-delay refuses it",
        s("refused"),
        brief(&early),
    );
    lab.expect(
        "B at t=2500, when expiry + delay has passed: granted",
        s("granted token=2"),
        brief(&late),
    );
    lab.expect("B's write", s("accepted"), brief(&b));
    lab.expect(
        "the break: A, paused 3100 ms > TTL + delay, writes with token 1 to the unfenced resource",
        s("accepted"),
        brief(&a),
    );
    lab.note("the delay only moved the takeover later; any pause longer than TTL + delay still lands after it (leaselab envelope --fence off --lock-delay-ms 1000)");
    lab.observed.insert(super::table::LOCK_DELAY, brief(&a));
    lab.judge(
        "X6-off",
        "lock-delay without a fence",
        &w,
        &[Check::I3, Check::Acceptance, Check::Final],
    );
    let (w, [_, _, _, a]) = lock_delay_run(lab, FenceMode::Scope);
    lab.expect(
        "with the scope fence: A's token-1 write",
        s("rejected"),
        brief(&a),
    );
    lab.judge("X6-scope", "lock-delay with the scope fence", &w, &[]);
}

fn x7(lab: &mut Lab) {
    let mut w = lab.world(Config {
        renew_after_expiry: true,
        ..Config::default()
    });
    w.run("holder-a", Op::acquire("holder-a", 1500));
    w.run("holder-a", Op::Pause);
    w.advance(1700);
    w.run("holder-a", Op::Resume);
    let late = w.run("holder-a", Op::renew("holder-a", 1, 1500));
    lab.expect(
        "A's renew at t=1700, 200 ms after its lease expired: accepted (the mistake)",
        s("renewed"),
        brief(&late),
    );
    let a = w.run("holder-a", Op::write("summary", "A", 1));
    lab.expect(
        "A keeps writing with token 1: nobody else was granted in the gap",
        s("accepted"),
        brief(&a),
    );
    lab.note("the lease was free from t=1500 to t=1700, yet token 1 came back: one token no longer means one continuous holding, and the guard's failed renew never fires");
    w.advance(1000);
    let b = w.run("holder-b", Op::acquire("holder-b", 1500));
    lab.expect("B during A's revived lease", s("refused"), brief(&b));
    lab.judge("X7", "renew after expiry, nobody in the gap", &w, &[]);

    let mut w = lab.world(Config {
        renew_after_expiry: true,
        ..Config::default()
    });
    w.run("holder-a", Op::acquire("holder-a", 1500));
    w.run("holder-a", Op::Pause);
    w.advance(1600);
    w.run("holder-b", Op::acquire("holder-b", 1500));
    w.run("holder-b", Op::write("summary", "B", 2));
    w.advance(100);
    w.run("holder-a", Op::Resume);
    let late = w.run("holder-a", Op::renew("holder-a", 1, 1500));
    lab.expect(
        "when B took over in the gap, A's late renew names a token the row no longer has",
        s("refused"),
        brief(&late),
    );
    let a = w.run("holder-a", Op::write("summary", "A-stale", 1));
    lab.expect(
        "and the fence still rejects A's token 1",
        s("rejected"),
        brief(&a),
    );
    lab.judge(
        "X7-takeover",
        "renew after expiry after a takeover",
        &w,
        &[],
    );
}
