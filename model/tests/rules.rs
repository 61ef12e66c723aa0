//! Every lease and fence rule the README states (the invariants and the cases), one test each.

use leaselab_model::prelude::*;
use leaselab_model::Reason;

const A: &str = "holder-a";
const B: &str = "holder-b";

fn granted(o: &Outcome) -> u64 {
    match o {
        Outcome::Granted { token, .. } => token.0,
        other => panic!("expected granted, got {other:?}"),
    }
}

#[test]
fn acquire_inserts_token_1_and_refuses_while_held() {
    let mut w = World::new(Config::default());
    assert_eq!(
        w.run(A, Op::acquire(A, 100)),
        Outcome::Granted {
            token: Token(1),
            expires: Expiry::At(Millis(100))
        }
    );
    w.advance(99);
    assert_eq!(w.run(B, Op::acquire(B, 100)), Outcome::Refused);
    let row = w
        .model
        .lease_row(&LeaseName::new("report-job"))
        .expect("row");
    assert_eq!(
        (row.holder.as_str(), row.token),
        (A, Token(1)),
        "refused acquire leaves the row unchanged"
    );
}

#[test]
fn expired_iff_expires_at_le_now_and_takeover_adds_one() {
    let mut w = World::new(Config::default());
    w.run(A, Op::acquire(A, 100));
    w.advance(100); // expires_at == now: expired
    assert_eq!(granted(&w.run(B, Op::acquire(B, 100))), 2);
}

#[test]
fn release_sets_neg_infinity_and_keeps_token() {
    let mut w = World::new(Config::default());
    w.run(A, Op::acquire(A, 1000));
    assert_eq!(w.run(A, Op::release(A, 1)), Outcome::Released);
    let row = w
        .model
        .lease_row(&LeaseName::new("report-job"))
        .expect("row");
    assert_eq!(row.expires_at, Expiry::NegInfinity);
    assert_eq!(row.token, Token(1));
    assert_eq!(
        granted(&w.run(B, Op::acquire(B, 1000))),
        2,
        "released lease is free at once"
    );
}

#[test]
fn renew_keeps_token_and_is_refused_after_expiry_or_on_mismatch() {
    let mut w = World::new(Config::default());
    w.run(A, Op::acquire(A, 100));
    w.advance(30);
    assert_eq!(
        w.run(A, Op::renew(A, 1, 100)),
        Outcome::Renewed {
            expires: Expiry::At(Millis(130))
        }
    );
    assert_eq!(
        w.run(A, Op::renew(A, 2, 100)),
        Outcome::Refused,
        "wrong token"
    );
    assert_eq!(
        w.run(B, Op::renew(B, 1, 100)),
        Outcome::Refused,
        "wrong holder"
    );
    w.advance(100); // t=130: expired
    assert_eq!(
        w.run(A, Op::renew(A, 1, 100)),
        Outcome::Refused,
        "never after expiry"
    );
    assert_eq!(
        granted(&w.run(A, Op::acquire(A, 100))),
        2,
        "must acquire again: new token"
    );
}

#[test]
fn renew_after_expiry_knob_accepts_late_renew() {
    let mut w = World::new(Config {
        renew_after_expiry: true,
        ..Config::default()
    });
    w.run(A, Op::acquire(A, 100));
    w.advance(500);
    assert!(matches!(
        w.run(A, Op::renew(A, 1, 100)),
        Outcome::Renewed { .. }
    ));
}

#[test]
fn scope_fence_accepts_equal_rejects_lower_across_parts() {
    let mut w = World::new(Config::default());
    assert_eq!(w.run(B, Op::write("summary", "b1", 2)), Outcome::Accepted);
    assert_eq!(
        w.run(B, Op::write("detail", "b2", 2)),
        Outcome::Accepted,
        "equal token accepted"
    );
    assert_eq!(
        w.run(A, Op::write("detail", "a", 1)),
        Outcome::Rejected,
        "lower token rejected on any part"
    );
    assert_eq!(w.model.floor(&Scope::new("daily-report")), Some(Token(2)));
    assert_eq!(
        w.run(A, Op::count(A, AttemptOutcome::Rejected)),
        Outcome::Count(1)
    );
    assert_eq!(
        w.run(B, Op::count(B, AttemptOutcome::Accepted)),
        Outcome::Count(2)
    );
}

#[test]
fn strict_fence_rejects_equal_token() {
    let mut w = World::new(Config::with_fence(FenceMode::Strict));
    assert_eq!(w.run(B, Op::write("summary", "b1", 2)), Outcome::Accepted);
    assert_eq!(w.run(B, Op::write("detail", "b2", 2)), Outcome::Rejected);
}

#[test]
fn scope_without_floor_row_rejects_every_write() {
    let mut w = World::new(Config::default());
    let op = Op::Write {
        scope: Scope::new("other"),
        part: Part::new("x"),
        content: "c".into(),
        token: Token(5),
    };
    assert_eq!(w.run(A, op), Outcome::Rejected);
}

#[test]
fn row_fence_lets_stale_token_write_an_untouched_part() {
    let mut w = World::new(Config::with_fence(FenceMode::Row));
    assert_eq!(w.run(A, Op::write("summary", "a", 1)), Outcome::Accepted);
    assert_eq!(w.run(B, Op::write("summary", "b", 2)), Outcome::Accepted);
    assert_eq!(w.run(A, Op::write("summary", "a2", 1)), Outcome::Rejected);
    assert_eq!(w.run(A, Op::write("detail", "a3", 1)), Outcome::Accepted);
}

#[test]
fn off_accepts_everything() {
    let mut w = World::new(Config::with_fence(FenceMode::Off));
    assert_eq!(w.run(B, Op::write("summary", "b", 2)), Outcome::Accepted);
    assert_eq!(w.run(A, Op::write("summary", "a", 1)), Outcome::Accepted);
    assert_eq!(w.model.floor(&Scope::new("daily-report")), Some(Token(0)));
}

#[test]
fn check_then_write_floor_regresses_when_interleaved() {
    let mut w = World::new(Config::with_fence(FenceMode::CheckThenWrite));
    assert_eq!(w.run(A, Op::fence(1)), Outcome::Passed);
    assert_eq!(w.run(B, Op::fence(2)), Outcome::Passed);
    assert_eq!(w.run(B, Op::upsert("summary", "new", 2)), Outcome::Accepted);
    assert_eq!(w.run(A, Op::upsert("summary", "old", 1)), Outcome::Accepted);
    assert_eq!(
        w.model.floor(&Scope::new("daily-report")),
        Some(Token(1)),
        "2 -> 1"
    );
}

fn f6b(a_first: bool) -> World {
    let mut w = World::new(Config::default());
    let res = DbName::Res;
    let (first, ft, second, st) = if a_first { (A, 1, B, 2) } else { (B, 2, A, 1) };
    w.run(first, Op::begin(res));
    assert_eq!(w.run(first, Op::fence(ft)), Outcome::Passed);
    w.run(second, Op::begin(res));
    assert_eq!(
        w.run(second, Op::fence(st)),
        Outcome::Blocked,
        "waits on the floor row lock"
    );
    assert_eq!(
        w.run(second, Op::await_(res)),
        Outcome::Error(Reason::StillBlocked)
    );
    assert_eq!(
        w.run(first, Op::upsert("summary", "first", ft)),
        Outcome::Ok
    );
    assert_eq!(w.run(first, Op::commit(res)), Outcome::Ok);
    w
}

#[test]
fn scope_fence_waiter_reevaluates_against_committed_floor() {
    // A (1) first: B waits, then re-evaluates 1 <= 2 and passes.
    let mut w = f6b(true);
    assert_eq!(w.run(B, Op::await_(DbName::Res)), Outcome::Passed);
    assert_eq!(w.run(B, Op::upsert("summary", "new", 2)), Outcome::Ok);
    assert_eq!(w.run(B, Op::commit(DbName::Res)), Outcome::Ok);
    assert_eq!(w.model.floor(&Scope::new("daily-report")), Some(Token(2)));
    // B (2) first: A waits, then re-evaluates 2 <= 1: refused.
    let mut w = f6b(false);
    assert_eq!(w.run(A, Op::await_(DbName::Res)), Outcome::Failed);
    assert_eq!(w.run(A, Op::rollback(DbName::Res)), Outcome::Ok);
    assert_eq!(
        w.run(A, Op::count(A, AttemptOutcome::Rejected)),
        Outcome::Count(1)
    );
}

/// A plain UPDATE evaluates its WHERE on the row version it sees before it waits for a row
/// lock (`leaselab_model::protocol`): a stale fence and a renew with a wrong token fail at
/// once while another transaction holds the row, and only a qualifying one waits.
#[test]
fn a_plain_update_whose_where_is_false_does_not_wait_for_the_lock() {
    const C: &str = "holder-c";
    let (res, lease) = (DbName::Res, DbName::Lease);
    let mut w = World::new(Config::default());
    // The floor is 2, committed; C's transaction then holds the floor row at 3.
    w.run(B, Op::begin(res));
    assert_eq!(w.run(B, Op::fence(2)), Outcome::Passed);
    assert_eq!(w.run(B, Op::commit(res)), Outcome::Ok);
    w.run(C, Op::begin(res));
    assert_eq!(w.run(C, Op::fence(3)), Outcome::Passed);
    w.run(A, Op::begin(res));
    assert_eq!(
        w.run(A, Op::fence(1)),
        Outcome::Failed,
        "1 <= 2 is false: no wait"
    );
    w.run(A, Op::rollback(res));
    w.run(B, Op::begin(res));
    assert_eq!(
        w.run(B, Op::fence(2)),
        Outcome::Blocked,
        "2 <= 2 qualifies: waits"
    );
    // The lease row: A holds token 1; B's transaction renews it, holding the row.
    assert_eq!(granted(&w.run(A, Op::acquire(A, 1000))), 1);
    w.run_on(A, "tx", Op::begin(lease));
    assert!(matches!(
        w.run_on(A, "tx", Op::renew(A, 1, 1000)),
        Outcome::Renewed { .. }
    ));
    assert_eq!(
        w.run(C, Op::renew(C, 1, 1000)),
        Outcome::Refused,
        "not C's: no wait"
    );
    assert_eq!(
        w.run(A, Op::renew(A, 1, 1000)),
        Outcome::Blocked,
        "A's: waits"
    );
}

#[test]
fn rollback_of_blocker_lets_waiter_see_original_row() {
    let mut w = World::new(Config::default());
    w.run(B, Op::begin(DbName::Res));
    assert_eq!(w.run(B, Op::fence(2)), Outcome::Passed);
    assert_eq!(w.run(A, Op::write("summary", "a", 1)), Outcome::Blocked);
    w.run(B, Op::rollback(DbName::Res));
    assert_eq!(
        w.run(A, Op::await_(DbName::Res)),
        Outcome::Accepted,
        "floor is 0 again"
    );
}

#[test]
fn waiters_are_served_first_come_first_served() {
    let mut w = World::new(Config::default());
    w.run_on(A, "s1", Op::begin(DbName::Res));
    w.run_on(A, "s1", Op::fence(1));
    assert_eq!(
        w.run_on(B, "s2", Op::write("summary", "b3", 3)),
        Outcome::Blocked
    );
    assert_eq!(
        w.run_on(B, "s3", Op::write("summary", "b2", 2)),
        Outcome::Blocked
    );
    w.run_on(A, "s1", Op::commit(DbName::Res));
    assert_eq!(
        w.run_on(B, "s2", Op::await_(DbName::Res)),
        Outcome::Accepted
    );
    assert_eq!(
        w.run_on(B, "s3", Op::await_(DbName::Res)),
        Outcome::Rejected,
        "3 committed first"
    );
}

#[test]
fn inside_a_transaction_lease_rules_see_the_start_time() {
    let mut w = World::new(Config::default());
    w.run(A, Op::acquire(A, 100));
    w.run_on(B, "long", Op::begin(DbName::Lease));
    w.advance(200);
    assert_eq!(
        w.run_on(B, "long", Op::Now { db: DbName::Lease }),
        Outcome::Now(Millis(0))
    );
    assert_eq!(
        w.run_on(B, "long", Op::acquire(B, 100)),
        Outcome::Refused,
        "txn start: still held"
    );
    w.run_on(B, "long", Op::commit(DbName::Lease));
    assert_eq!(granted(&w.run_on(B, "auto", Op::acquire(B, 100))), 2);
}

#[test]
fn losing_acquire_in_open_transaction_blocks_renew() {
    let mut w = World::new(Config::default());
    w.run(A, Op::acquire(A, 1000));
    w.run_on(B, "tx", Op::begin(DbName::Lease));
    assert_eq!(w.run_on(B, "tx", Op::acquire(B, 1000)), Outcome::Refused);
    assert_eq!(
        w.run(A, Op::renew(A, 1, 1000)),
        Outcome::Blocked,
        "ON CONFLICT locked the row"
    );
    w.advance(2000);
    w.run_on(B, "tx", Op::rollback(DbName::Lease));
    // The renew keeps its pre-wait now(): it still succeeds after the TTL ran out.
    assert_eq!(
        w.run(A, Op::await_(DbName::Lease)),
        Outcome::Renewed {
            expires: Expiry::At(Millis(1000))
        }
    );
}

#[test]
fn crash_keeps_committed_rolls_back_open_and_ttl_keeps_running() {
    let mut w = World::new(Config::default());
    w.run(A, Op::acquire(A, 1000));
    w.run(A, Op::write("summary", "a", 1));
    w.run(B, Op::begin(DbName::Res));
    w.run(B, Op::upsert("detail", "uncommitted", 1));
    w.run("admin", Op::Crash { db: DbName::Res });
    w.run("admin", Op::Crash { db: DbName::Lease });
    assert_eq!(w.run(A, Op::read_lease()), Outcome::Unavailable);
    w.advance(1500);
    w.run("admin", Op::Restart { db: DbName::Res });
    w.run("admin", Op::Restart { db: DbName::Lease });
    assert_eq!(
        w.run(B, Op::commit(DbName::Res)),
        Outcome::Error(Reason::ConnLost)
    );
    assert_eq!(w.run(B, Op::read_part("detail")), Outcome::Part(None));
    assert!(matches!(
        w.run(B, Op::read_part("summary")),
        Outcome::Part(Some(_))
    ));
    assert_eq!(
        granted(&w.run(B, Op::acquire(B, 1000))),
        2,
        "expired during the outage, no reuse"
    );
}

#[test]
fn unlogged_lease_table_reuses_tokens_after_crash() {
    let mut w = World::new(Config {
        lease_table: LeaseDurability::Unlogged,
        ..Config::default()
    });
    w.run(A, Op::acquire(A, 100));
    w.run("admin", Op::Crash { db: DbName::Lease });
    w.run("admin", Op::Restart { db: DbName::Lease });
    assert_eq!(granted(&w.run(B, Op::acquire(B, 100))), 1);
}

#[test]
fn publish_business_key_keeps_first_versioned_keeps_newest() {
    let mut w = World::new(Config::default());
    assert_eq!(w.run(A, Op::publish("k", "A-stale", 1)), Outcome::Accepted);
    assert_eq!(w.run(B, Op::publish("k", "B-new", 2)), Outcome::Rejected);
    let mut w = World::new(Config {
        publish: PublishMode::Versioned,
        ..Config::default()
    });
    assert_eq!(w.run(A, Op::publish("k", "A-stale", 1)), Outcome::Accepted);
    assert_eq!(w.run(B, Op::publish("k", "B-new", 2)), Outcome::Accepted);
    assert_eq!(w.run(A, Op::publish("k", "A-stale", 1)), Outcome::Rejected);
}

#[test]
fn a_connection_runs_one_statement_at_a_time() {
    let mut w = World::new(Config::default());
    w.run(B, Op::begin(DbName::Res));
    w.run(B, Op::fence(2));
    assert_eq!(w.run(A, Op::write("summary", "a", 3)), Outcome::Blocked);
    assert_eq!(
        w.run(A, Op::write("summary", "a", 3)),
        Outcome::Error(Reason::Busy)
    );
    assert_eq!(
        w.run(A, Op::await_(DbName::Res)),
        Outcome::Error(Reason::StillBlocked)
    );
}

#[test]
fn disconnect_rolls_back_and_releases_locks() {
    let mut w = World::new(Config::default());
    w.run(A, Op::begin(DbName::Res));
    assert_eq!(w.run(A, Op::fence(5)), Outcome::Passed);
    assert_eq!(w.run(B, Op::write("summary", "b", 2)), Outcome::Blocked);
    assert!(w.model.is_blocked(DbName::Res, &ConnId::new(B)));
    assert_eq!(w.run(A, Op::Disconnect { db: DbName::Res }), Outcome::Ok);
    assert!(!w.model.is_blocked(DbName::Res, &ConnId::new(B)));
    assert!(w.model.has_result(DbName::Res, &ConnId::new(B)));
    assert_eq!(
        w.run(B, Op::await_(DbName::Res)),
        Outcome::Accepted,
        "floor back to 0"
    );
}

#[test]
fn the_authority_clock_is_set_explicitly_and_never_goes_back() {
    let mut w = World::new(Config::default());
    assert_eq!(w.advance(250), Millis(250));
    assert_eq!(w.set_now(Millis(100)), Millis(250), "never backwards");
    assert_eq!(w.set_now(Millis(300)), Millis(300));
    assert_eq!(w.now(), Millis(300));
}

#[test]
fn a_local_check_is_valid_strictly_before_the_deadline() {
    let mut w = World::new(Config::default());
    w.advance(99);
    assert_eq!(w.run("a", Op::check(Millis(100))), Outcome::Valid);
    w.advance(1);
    assert_eq!(
        w.run("a", Op::check(Millis(100))),
        Outcome::Expired,
        "at the deadline"
    );
}

/// Chubby's lock-delay: an expired (not released) lease is taken over only `lock_delay_ms`
/// after its expiry, the boundary instant included; a released one at once.
#[test]
fn lock_delay_holds_an_expired_lease_back_but_not_a_released_one() {
    let cfg = Config {
        lock_delay_ms: 500,
        ..Config::default()
    };
    let mut w = World::new(cfg.clone());
    w.run(A, Op::acquire(A, 100));
    w.advance(100); // expired at 100
    assert_eq!(w.run(B, Op::acquire(B, 100)), Outcome::Refused);
    w.advance(499);
    assert_eq!(w.run(B, Op::acquire(B, 100)), Outcome::Refused);
    w.advance(1); // 600 = expiry + delay
    assert_eq!(granted(&w.run(B, Op::acquire(B, 100))), 2);

    let mut w = World::new(cfg);
    w.run(A, Op::acquire(A, 100));
    w.run(A, Op::release(A, 1));
    assert_eq!(granted(&w.run(B, Op::acquire(B, 100))), 2);
    // And the holder itself is held back like anyone else after its own expiry.
    w.advance(100);
    assert_eq!(w.run(A, Op::acquire(A, 100)), Outcome::Refused);
}

/// A plain UPDATE that waited for a row lock locks the newest version before its re-check and
/// keeps it when the re-check fails (PostgreSQL's `ExecUpdate` → `table_tuple_lock` with
/// `TUPLE_LOCK_FLAG_FIND_LAST_VERSION`, then `EvalPlanQual`): inside a transaction a third
/// session queued on the row waits until that transaction ends. Scope and strict fence.
#[test]
fn a_fence_whose_recheck_failed_after_a_wait_keeps_the_floor_locked() {
    for fence in [FenceMode::Scope, FenceMode::Strict] {
        let mut w = World::new(Config::with_fence(fence));
        w.run_on(B, "tb", Op::begin(DbName::Res));
        assert_eq!(w.run_on(B, "tb", Op::fence(2)), Outcome::Passed);
        w.run_on(A, "ta", Op::begin(DbName::Res));
        // Token 1 passes against the committed floor 0: it waits for b's lock.
        assert_eq!(w.run_on(A, "ta", Op::fence(1)), Outcome::Blocked);
        w.run_on(B, "tb", Op::commit(DbName::Res));
        assert_eq!(
            w.run_on(A, "ta", Op::await_(DbName::Res)),
            Outcome::Failed,
            "{fence:?}: re-checked against floor 2"
        );
        // c's token 3 passes against floor 2, but a's failed fence still holds the row.
        assert_eq!(
            w.run_on("holder-c", "tc", Op::write("summary", "c", 3)),
            Outcome::Blocked,
            "{fence:?}"
        );
        w.run_on(A, "ta", Op::rollback(DbName::Res));
        assert_eq!(
            w.run_on("holder-c", "tc", Op::await_(DbName::Res)),
            Outcome::Accepted,
            "{fence:?}"
        );
    }
}

/// The same for renew: a renew that waited behind a release and then found the lease released
/// keeps the lease row locked, so an acquire waits for its transaction.
#[test]
fn a_renew_whose_recheck_failed_after_a_wait_keeps_the_lease_row_locked() {
    let mut w = World::new(Config::default());
    w.run(A, Op::acquire(A, 1000));
    w.run_on(A, "tr", Op::begin(DbName::Lease));
    assert_eq!(w.run_on(A, "tr", Op::release(A, 1)), Outcome::Released);
    w.run_on(A, "ta", Op::begin(DbName::Lease));
    assert_eq!(w.run_on(A, "ta", Op::renew(A, 1, 1000)), Outcome::Blocked);
    w.run_on(A, "tr", Op::commit(DbName::Lease));
    assert_eq!(
        w.run_on(A, "ta", Op::await_(DbName::Lease)),
        Outcome::Refused
    );
    assert_eq!(w.run(B, Op::acquire(B, 1000)), Outcome::Blocked);
    w.run_on(A, "ta", Op::commit(DbName::Lease));
    assert_eq!(granted(&w.run(B, Op::await_(DbName::Lease))), 2);
}

/// And for release: a release that waited behind a takeover keeps the row; in autocommit the
/// statement's own transaction ends at once, so nobody waits for it.
#[test]
fn a_release_whose_recheck_failed_keeps_the_row_until_its_transaction_ends() {
    for in_txn in [true, false] {
        let mut w = World::new(Config::default());
        w.run(A, Op::acquire(A, 100));
        w.advance(100);
        w.run_on(B, "tb", Op::begin(DbName::Lease));
        assert_eq!(granted(&w.run_on(B, "tb", Op::acquire(B, 1000))), 2);
        if in_txn {
            w.run_on(A, "ta", Op::begin(DbName::Lease));
        }
        assert_eq!(w.run_on(A, "ta", Op::release(A, 1)), Outcome::Blocked);
        w.run_on(B, "tb", Op::commit(DbName::Lease));
        assert_eq!(
            w.run_on(A, "ta", Op::await_(DbName::Lease)),
            Outcome::Refused
        );
        let c = w.run_on("holder-c", "tc", Op::renew(B, 2, 1000));
        if in_txn {
            assert_eq!(c, Outcome::Blocked, "a's transaction holds the row");
            w.run_on(A, "ta", Op::rollback(DbName::Lease));
            assert!(matches!(
                w.run_on("holder-c", "tc", Op::await_(DbName::Lease)),
                Outcome::Renewed { .. }
            ));
        } else {
            assert!(matches!(c, Outcome::Renewed { .. }), "{c:?}");
        }
    }
}

/// The negative control keeps the old, wrong rule: the row is free after a failed re-check.
#[test]
fn the_wrong_rule_releases_the_row_after_a_failed_recheck() {
    let mut w = World::with_backend(
        leaselab_model::model::Model::new(Config::default())
            .with_wrong_rule(leaselab_model::model::WrongRule::FailedRecheckReleasesRow),
    );
    w.run_on(B, "tb", Op::begin(DbName::Res));
    w.run_on(B, "tb", Op::fence(2));
    w.run_on(A, "ta", Op::begin(DbName::Res));
    assert_eq!(w.run_on(A, "ta", Op::fence(1)), Outcome::Blocked);
    w.run_on(B, "tb", Op::commit(DbName::Res));
    assert_eq!(w.run_on(A, "ta", Op::await_(DbName::Res)), Outcome::Failed);
    assert_eq!(
        w.run_on("holder-c", "tc", Op::write("summary", "c", 3)),
        Outcome::Accepted
    );
}

/// REPEATABLE READ: a fence whose snapshot version of the floor was already replaced by a
/// committed update fails with 40001 at once, even while a third transaction holds the newest
/// version (PostgreSQL's `heap_update` reports the snapshot's tuple as updated; it does not
/// wait for the newest version's locker). Found by `diff --gen 20000 --seed 7`.
#[test]
fn a_repeatable_read_fence_on_a_floor_replaced_since_its_snapshot_fails_without_waiting() {
    let mut w = World::new(Config::default());
    w.run_on(B, "tb", Op::BeginRepeatableRead { db: DbName::Res });
    assert_eq!(
        w.run_on(B, "tb", Op::read_floor()),
        Outcome::Floor(Some(Token(0)))
    );
    // A committed change of the floor after b's snapshot, then a holder of the newest version.
    assert_eq!(
        w.run_on(A, "ta", Op::write("summary", "a", 2)),
        Outcome::Accepted
    );
    w.run_on(A, "ta", Op::begin(DbName::Res));
    assert_eq!(w.run_on(A, "ta", Op::fence(3)), Outcome::Passed);
    assert_eq!(
        w.run_on(B, "tb", Op::fence(4)),
        Outcome::Error(Reason::SERIALIZATION_FAILURE)
    );
}

/// A renew or release whose WHERE is false without any wait locks nothing, even inside a
/// transaction: the next session's statement on the row goes through at once.
#[test]
fn a_refused_update_that_did_not_wait_locks_nothing() {
    let mut w = World::new(Config::default());
    w.run(A, Op::acquire(A, 1000));
    w.run_on(B, "tb", Op::begin(DbName::Lease));
    assert_eq!(w.run_on(B, "tb", Op::renew(B, 1, 1000)), Outcome::Refused);
    assert_eq!(w.run_on(B, "tb", Op::release(B, 1)), Outcome::Refused);
    assert!(matches!(
        w.run(A, Op::renew(A, 1, 1000)),
        Outcome::Renewed { .. }
    ));
    assert_eq!(w.run(A, Op::release(A, 1)), Outcome::Released);
}

/// REPEATABLE READ and a lease row changed since the snapshot: ON CONFLICT (acquire) fails with
/// 40001 even when its WHERE is false (`ExecCheckTupleVisible`), while a renew whose snapshot
/// version does not qualify is simply refused (it never targets the row).
#[test]
fn repeatable_read_on_a_changed_lease_row_acquire_fails_renew_is_refused() {
    let mut w = World::new(Config::default());
    w.run(A, Op::acquire(A, 1000));
    w.run_on(B, "tb", Op::BeginRepeatableRead { db: DbName::Lease });
    assert!(matches!(
        w.run_on(B, "tb", Op::read_lease()),
        Outcome::Lease(Some(_))
    ));
    w.advance(10);
    assert!(matches!(
        w.run(A, Op::renew(A, 1, 1000)),
        Outcome::Renewed { .. }
    ));
    assert_eq!(w.run_on(B, "tb", Op::renew(B, 1, 1000)), Outcome::Refused);
    assert_eq!(
        w.run_on(B, "tb", Op::acquire(B, 1000)),
        Outcome::Error(Reason::SERIALIZATION_FAILURE)
    );
    // The error aborted the transaction: every statement fails with 25P02 until it ends.
    assert_eq!(
        w.run_on(B, "tb", Op::read_lease()),
        Outcome::Error(Reason::IN_FAILED_SQL_TRANSACTION)
    );
    assert_eq!(w.run_on(B, "tb", Op::rollback(DbName::Lease)), Outcome::Ok);
    assert!(matches!(
        w.run_on(B, "tb", Op::read_lease()),
        Outcome::Lease(Some(_))
    ));
}

/// Each wrong rule has one spelling, read back by the command line.
#[test]
fn wrong_rules_round_trip_through_their_names() {
    use leaselab_model::model::WrongRule;
    let names: Vec<&str> = WrongRule::ALL.iter().map(|r| r.as_str()).collect();
    assert_eq!(
        names,
        [
            "update-waits-before-where",
            "repeatable-read-reads-latest",
            "disconnect-drops-waiter",
            "failed-recheck-releases-row",
            "waiters-in-queue-order"
        ]
    );
    for r in WrongRule::ALL {
        assert_eq!(r.as_str().parse::<WrongRule>(), Ok(r));
    }
    assert!("no-such-rule".parse::<WrongRule>().is_err());
}

/// A one-shot write on a connection whose client holds a transaction open is refused
/// (`in-transaction`) and changes nothing: its own BEGIN … COMMIT would end the holder's
/// transaction. After the holder's COMMIT the same write goes through.
#[test]
fn a_one_shot_write_inside_an_open_transaction_is_refused() {
    let mut w = World::new(Config::default());
    w.run(A, Op::begin(DbName::Res));
    assert_eq!(
        w.run(A, Op::write("summary", "a", 1)),
        Outcome::Error(Reason::InTransaction)
    );
    assert_eq!(w.model.floor(&Scope::new("daily-report")), Some(Token(0)));
    w.run(A, Op::commit(DbName::Res));
    assert_eq!(w.run(A, Op::write("summary", "a", 1)), Outcome::Accepted);
    assert_eq!(
        leaselab_model::protocol::refuse_one_shot_write(false),
        None,
        "no transaction open: nothing to refuse"
    );
}

/// A BEGIN on a connection whose transaction is open is refused (`in-transaction`) on either
/// database and leaves that transaction as it was: its COMMIT still ends it.
#[test]
fn a_begin_inside_an_open_transaction_is_refused() {
    for db in [DbName::Lease, DbName::Res] {
        let mut w = World::new(Config::default());
        assert_eq!(w.run(A, Op::begin(db)), Outcome::Ok);
        assert_eq!(
            w.run(A, Op::begin(db)),
            Outcome::Error(Reason::InTransaction),
            "{db:?}"
        );
        assert_eq!(w.run(A, Op::commit(db)), Outcome::Ok);
        assert_eq!(
            w.run(A, Op::begin(db)),
            Outcome::Ok,
            "{db:?}: closed, a new one"
        );
    }
    assert_eq!(leaselab_model::protocol::refuse_begin(false), None);
}

/// The attempt log counts one writer's attempts of one outcome: not the other writer's, not
/// the other outcome's (a count of a holder's rejected writes is how a stale holder's fence
/// refusals are seen).
#[test]
fn attempts_are_counted_by_writer_and_outcome_together() {
    let mut w = World::new(Config::default());
    assert_eq!(w.run(B, Op::write("summary", "b", 2)), Outcome::Accepted);
    assert_eq!(w.run(A, Op::write("summary", "a", 1)), Outcome::Rejected);
    let count = |w: &mut World, writer: &str, outcome| {
        w.run(
            A,
            Op::CountAttempts {
                writer: Holder::new(writer),
                outcome,
            },
        )
    };
    assert_eq!(
        count(&mut w, A, AttemptOutcome::Rejected),
        Outcome::Count(1)
    );
    assert_eq!(
        count(&mut w, A, AttemptOutcome::Accepted),
        Outcome::Count(0)
    );
    assert_eq!(
        count(&mut w, B, AttemptOutcome::Accepted),
        Outcome::Count(1)
    );
    assert_eq!(
        count(&mut w, B, AttemptOutcome::Rejected),
        Outcome::Count(0)
    );
}
