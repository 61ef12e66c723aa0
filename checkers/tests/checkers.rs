//! Checkers on histories built for the purpose: each check fires when its invariant breaks and
//! stays quiet on the concurrency the history cannot order.

use leaselab_checkers::sometimes::Sometimes;
use leaselab_checkers::{check, Check, Condition};
use leaselab_model::prelude::*;
use leaselab_model::Reason;

#[test]
fn i1_fires_when_an_unlogged_table_forgets_a_live_lease() {
    let mut w = World::new(Config {
        lease_table: LeaseDurability::Unlogged,
        ..Config::default()
    });
    w.run("holder-a", Op::acquire("holder-a", 1000));
    w.run("admin", Op::Crash { db: DbName::Lease });
    w.advance(10);
    w.run("admin", Op::Restart { db: DbName::Lease });
    w.run("holder-b", Op::acquire("holder-b", 1000));
    let r = check(&w.history);
    assert!(r.violated(Check::I1), "{:?}", r.violations);
    assert!(r.violated(Check::I2));
    let v = r.of(Check::I1).next().expect("I1");
    assert!(
        v.message.contains("holder-b was granted token 1 at t=10"),
        "{}",
        v.message
    );
    assert_eq!(v.events, vec![1, 4]);
}

#[test]
fn a_write_awaited_late_is_not_misordered() {
    // W2 (token 2) blocks behind an open transaction with token 1 and commits when it ends;
    // W3 (token 3) commits next; only then does W2's client collect its result. The history
    // cannot tell where W2 committed, so no I3 violation may be claimed.
    let mut w = write_blocked_on_the_floor();
    w.run_on("holder-a", "t", Op::upsert("summary", "a", 1));
    w.run_on("holder-a", "t", Op::commit(DbName::Res));
    assert_eq!(
        w.run("holder-c", Op::write("summary", "c", 3)),
        Outcome::Accepted
    );
    assert_eq!(
        w.run("holder-b", Op::await_(DbName::Res)),
        Outcome::Accepted
    );
    let r = check(&w.history);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert_eq!(r.sometimes.get(Sometimes::BlockedOnFloorLock), 1);
}

#[test]
fn uncommitted_and_rolled_back_upserts_are_not_accepted_writes() {
    let mut w = World::new(Config::with_fence(FenceMode::Off));
    w.run("holder-b", Op::write("summary", "b", 2));
    w.run("holder-a", Op::begin(DbName::Res));
    w.run("holder-a", Op::upsert("summary", "a", 1));
    w.run("holder-a", Op::rollback(DbName::Res));
    let r = check(&w.history);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    w.run("holder-a", Op::begin(DbName::Res));
    w.run("holder-a", Op::upsert("summary", "a", 1));
    w.run("holder-a", Op::commit(DbName::Res));
    assert!(
        check(&w.history).violated(Check::I3),
        "committed stale upsert must count"
    );
}

#[test]
fn indeterminate_writes_never_prove_a_violation() {
    let mut w = World::new(Config::default());
    w.run("holder-b", Op::write("summary", "b", 2));
    let mut h = w.history.clone();
    h.push(
        Millis(5),
        Millis(5),
        Holder::new("holder-a"),
        None,
        Op::write("summary", "a", 1),
        Outcome::Indeterminate("timeout".into()),
    );
    assert!(check(&h).violations.is_empty());
    // ...but they are facts: maybe applied, so the ledger may hold them.
    let f = leaselab_checkers::facts::derive(&h);
    assert_eq!(f.writes.len(), 2);
    assert_eq!(
        f.writes[1].certainty,
        leaselab_checkers::facts::Certainty::Maybe
    );
}

#[test]
fn floor_regression_is_an_i3_violation_by_itself() {
    let mut h = History::default();
    for t in [2, 1] {
        h.push(
            Millis(0),
            Millis(0),
            Holder::new("lab"),
            None,
            Op::read_floor(),
            Outcome::Floor(Some(Token(t))),
        );
    }
    let r = check(&h);
    assert!(r.violated(Check::I3));
    assert!(r
        .of(Check::I3)
        .any(|v| v.message.contains("regressed from 2")));
}

#[test]
fn every_check_can_fire() {
    // A checker that can never fire is worthless: each is seen firing somewhere above or in
    // the lab's negative controls; this pins the last one, `final`, on its own.
    let mut h = History::default();
    let a = Holder::new("holder-a");
    h.push(
        Millis(0),
        Millis(0),
        a.clone(),
        None,
        Op::write("summary", "x", 3),
        Outcome::Accepted,
    );
    h.push(
        Millis(1),
        Millis(1),
        a,
        None,
        Op::read_part("summary"),
        Outcome::Part(None),
    );
    let r = check(&h);
    assert_eq!(r.verdict(), vec![Check::Final]);
}

/// A hand-written history (no database hands out tokens like this): grants of 5 then 3 by the
/// database's word. The second lies below the first without reusing it, the case I2 finds by its
/// running maximum rather than by the set of tokens seen.
fn grants(blocked_first: bool) -> History {
    let mut h = History::default();
    let grant = |token| Outcome::Granted {
        token: Token(token),
        expires: Expiry::At(Millis(10_000)),
    };
    let (acq_a, acq_b) = (Op::acquire("holder-a", 1000), Op::acquire("holder-b", 1000));
    if blocked_first {
        // holder-a's grant of 5 is only collected after holder-b's grant of 3: the history cannot
        // order the two, so no decrease may be claimed.
        at(&mut h, 1, "holder-a", acq_a, Outcome::Blocked);
        at(&mut h, 2, "holder-b", acq_b, grant(3));
        at(
            &mut h,
            3,
            "holder-a",
            Op::Await { db: DbName::Lease },
            grant(5),
        );
    } else {
        at(&mut h, 1, "holder-a", acq_a, grant(5));
        at(&mut h, 2, "holder-b", acq_b, grant(3));
    }
    h
}

#[test]
fn i2_fires_on_a_token_below_an_earlier_grant() {
    let r = check(&grants(false));
    let v = r
        .of(Check::I2)
        .next()
        .expect("I2 must fire on a decreasing token");
    assert!(
        v.message.contains("token 3 granted to holder-b"),
        "{}",
        v.message
    );
    assert!(v.message.contains("is below token 5"), "{}", v.message);
    assert_eq!(v.events, vec![1, 2]);
}

#[test]
fn i2_stays_quiet_when_the_grants_cannot_be_ordered() {
    let r = check(&grants(true));
    assert!(!r.violated(Check::I2), "{:?}", r.violations);
}

/// The facts of one history, for the rules that say what counts.
fn facts_of(w: &World) -> leaselab_checkers::facts::Facts {
    leaselab_checkers::facts::derive(&w.history)
}

fn unreported(f: &leaselab_checkers::facts::Facts, db: DbName) -> u64 {
    f.unreported
        .iter()
        .find(|(d, _)| *d == db)
        .map_or(0, |(_, n)| *n)
}

#[test]
fn a_window_is_before_another_only_when_it_ends_strictly_earlier() {
    use leaselab_checkers::facts::Window;
    let a = Window {
        earliest: 2,
        latest: 4,
    };
    let touching = Window {
        earliest: 4,
        latest: 6,
    };
    let after = Window {
        earliest: 5,
        latest: 6,
    };
    assert!(!a.before(&touching));
    assert!(a.before(&after));
    assert!(!after.before(&a));
}

#[test]
fn an_awaited_statement_took_effect_after_it_blocked_and_still_blocked_resolves_nothing() {
    let mut w = World::new(Config::default());
    w.run_on("holder-a", "t", Op::begin(DbName::Res));
    w.run_on("holder-a", "t", Op::fence(1)); // #2
    assert_eq!(
        w.run("holder-b", Op::write("summary", "b", 2)),
        Outcome::Blocked
    ); // #3
    assert_eq!(
        w.run("holder-b", Op::await_(DbName::Res)),
        Outcome::Error(Reason::StillBlocked)
    ); // #4
    w.run_on("holder-a", "t", Op::commit(DbName::Res)); // #5
    assert_eq!(
        w.run("holder-b", Op::await_(DbName::Res)),
        Outcome::Accepted
    ); // #6
    let f = facts_of(&w);
    assert_eq!(f.writes.len(), 1, "{:?}", f.writes);
    assert_eq!(
        (f.writes[0].window.earliest, f.writes[0].window.latest),
        (4, 6)
    );
    assert_eq!(unreported(&f, DbName::Res), 0);
}

/// A statement that waited stays its connection's statement until its reply is collected:
/// `busy` before and after it finished, then `await` hands over the outcome, and the facts
/// count the write once, as reported.
#[test]
fn a_finished_statement_is_busy_until_collected_and_counted_once() {
    let mut w = write_blocked_on_the_floor();
    assert_eq!(
        w.run("holder-b", Op::read_floor()),
        Outcome::Error(Reason::Busy)
    );
    w.run_on("holder-a", "t", Op::commit(DbName::Res));
    // The write finished; its client sends another statement instead of collecting it.
    assert_eq!(
        w.run("holder-b", Op::read_floor()),
        Outcome::Error(Reason::Busy)
    );
    let f = facts_of(&w);
    // Not collected: a maybe-write, counted among the unreported statements too.
    assert!(
        f.writes
            .iter()
            .all(|w| w.certainty == leaselab_checkers::facts::Certainty::Maybe && w.unanswered),
        "{:?}",
        f.writes
    );
    assert_eq!(unreported(&f, DbName::Res), 1);
    let got = w.run("holder-b", Op::await_(DbName::Res));
    assert!(
        matches!(got, Outcome::Accepted | Outcome::Rejected),
        "{got:?}"
    );
    let f = facts_of(&w);
    assert_eq!(f.writes.len(), 1, "{:?}", f.writes);
    assert_eq!(unreported(&f, DbName::Res), 0);
    // Collected once: a second await finds nothing.
    assert_eq!(
        w.run("holder-b", Op::await_(DbName::Res)),
        Outcome::Error(Reason::NotBlocked)
    );
    assert_eq!(facts_of(&w).writes.len(), 1);
}

#[test]
fn an_error_collected_by_await_aborts_the_transaction() {
    // holder-b's REPEATABLE READ fence waits for holder-a's floor update; holder-a commits a
    // change, so the awaited fence fails with 40001: holder-b's earlier upsert never commits.
    let mut w = World::new(Config::default());
    w.run_on(
        "holder-b",
        "tb",
        Op::BeginRepeatableRead { db: DbName::Res },
    );
    assert_eq!(
        w.run_on("holder-b", "tb", Op::upsert("detail", "b", 5)),
        Outcome::Ok
    );
    w.run_on("holder-a", "ta", Op::begin(DbName::Res));
    assert_eq!(w.run_on("holder-a", "ta", Op::fence(2)), Outcome::Passed);
    assert_eq!(w.run_on("holder-b", "tb", Op::fence(5)), Outcome::Blocked);
    w.run_on("holder-a", "ta", Op::commit(DbName::Res));
    assert_eq!(
        w.run_on("holder-b", "tb", Op::await_(DbName::Res)),
        Outcome::Error(Reason::SERIALIZATION_FAILURE)
    );
    assert_eq!(
        w.run_on("holder-b", "tb", Op::commit(DbName::Res)),
        Outcome::Ok
    );
    let f = facts_of(&w);
    assert!(f.writes.is_empty(), "{:?}", f.writes);
}

#[test]
fn work_of_a_rolled_back_disconnected_or_crashed_transaction_never_reaches_a_later_commit() {
    // Each time the same connection name opens a new transaction afterwards and commits it:
    // nothing of the old transaction may be counted then.
    let mut w = World::new(Config::with_fence(FenceMode::Off));
    for end in [
        Op::rollback(DbName::Res),
        Op::Disconnect { db: DbName::Res },
    ] {
        w.run("holder-a", Op::begin(DbName::Res));
        assert_eq!(
            w.run("holder-a", Op::upsert("summary", "gone", 1)),
            Outcome::Ok
        );
        w.run("holder-a", Op::publish("report-1", "gone", 1));
        w.run("holder-a", end);
        w.run("holder-a", Op::begin(DbName::Res));
        w.run("holder-a", Op::commit(DbName::Res));
    }
    w.run("holder-b", Op::begin(DbName::Lease));
    assert!(matches!(
        w.run("holder-b", Op::acquire("holder-b", 100)),
        Outcome::Granted { .. }
    ));
    w.run("admin", Op::Crash { db: DbName::Lease });
    w.run("admin", Op::Restart { db: DbName::Lease });
    w.run("holder-b", Op::begin(DbName::Lease));
    w.run("holder-b", Op::commit(DbName::Lease));
    let f = facts_of(&w);
    assert!(f.writes.is_empty(), "{:?}", f.writes);
    assert!(f.publishes.is_empty(), "{:?}", f.publishes);
    assert!(f.grants.is_empty(), "{:?}", f.grants);
    assert!(f.lease_changes.is_empty(), "{:?}", f.lease_changes);
    let d = leaselab_checkers::ledger::cross_check(&f, &w.model.ledger());
    assert!(d.is_empty(), "{d:?}");
}

#[test]
fn a_statement_refused_as_busy_leaves_the_waiting_one_to_its_await() {
    let mut w = write_blocked_on_the_floor();
    assert_eq!(
        w.run("holder-b", Op::read_floor()),
        Outcome::Error(Reason::Busy)
    );
    w.run_on("holder-a", "t", Op::commit(DbName::Res));
    assert_eq!(
        w.run("holder-b", Op::await_(DbName::Res)),
        Outcome::Accepted
    );
    let f = facts_of(&w);
    assert_eq!(f.writes.len(), 1, "{:?}", f.writes);
    assert_eq!(unreported(&f, DbName::Res), 0);
}

/// A history written by hand, for outcomes only PostgreSQL gives (a commit whose answer was
/// lost, a connection the server ended without a crash).
/// Appends an event at `t` (the server's time and the actor's alike) on the actor's own connection.
fn at(h: &mut History, t: u64, actor: &str, op: Op, out: Outcome) {
    h.push(Millis(t), Millis(t), Holder::new(actor), None, op, out);
}

fn hand(events: &[(&str, Op, Outcome)]) -> History {
    let mut h = History::default();
    for (actor, op, out) in events {
        h.push(
            Millis(0),
            Millis(0),
            Holder::new(actor),
            None,
            op.clone(),
            out.clone(),
        );
    }
    h
}

#[test]
fn a_commit_whose_answer_was_lost_makes_its_writes_maybe_unless_the_transaction_was_aborted() {
    use leaselab_checkers::facts::{derive, Certainty};
    let lost = || Outcome::Indeterminate("conn-lost-during-commit".into());
    let h = hand(&[
        ("holder-a", Op::begin(DbName::Res), Outcome::Ok),
        ("holder-a", Op::upsert("summary", "x", 1), Outcome::Ok),
        ("holder-a", Op::commit(DbName::Res), lost()),
    ]);
    let f = derive(&h);
    assert_eq!(f.writes.len(), 1);
    assert_eq!(f.writes[0].certainty, Certainty::Maybe);
    let h = hand(&[
        ("holder-a", Op::begin(DbName::Res), Outcome::Ok),
        ("holder-a", Op::upsert("summary", "x", 1), Outcome::Ok),
        (
            "holder-a",
            Op::upsert("detail", "y", 1),
            Outcome::Error(Reason::SERIALIZATION_FAILURE),
        ),
        ("holder-a", Op::commit(DbName::Res), lost()),
    ]);
    assert!(derive(&h).writes.is_empty());
}

#[test]
fn a_lease_transaction_counts_at_its_commit_and_a_lost_connection_ends_it() {
    use leaselab_checkers::facts::derive;
    let granted = Outcome::Granted {
        token: Token(1),
        expires: Expiry::At(Millis(100)),
    };
    let h = hand(&[
        ("holder-a", Op::begin(DbName::Lease), Outcome::Ok),
        ("holder-a", Op::acquire("holder-a", 100), granted.clone()),
        ("holder-a", Op::commit(DbName::Lease), Outcome::Ok),
    ]);
    let f = derive(&h);
    assert_eq!(f.grants.len(), 1);
    assert_eq!(
        (f.grants[0].window.earliest, f.grants[0].window.latest),
        (3, 3)
    );
    // The server ended the connection (no crash in the history): the transaction is gone, and
    // a new one on the same name commits nothing of it.
    let h = hand(&[
        ("holder-a", Op::begin(DbName::Lease), Outcome::Ok),
        ("holder-a", Op::acquire("holder-a", 100), granted),
        (
            "holder-a",
            Op::read_lease(),
            Outcome::Error(Reason::ConnLost),
        ),
        ("holder-a", Op::begin(DbName::Lease), Outcome::Ok),
        ("holder-a", Op::commit(DbName::Lease), Outcome::Ok),
        ("holder-b", Op::begin(DbName::Res), Outcome::Ok),
        ("holder-b", Op::upsert("summary", "x", 1), Outcome::Ok),
        (
            "holder-b",
            Op::read_floor(),
            Outcome::Error(Reason::ConnLost),
        ),
        ("holder-b", Op::begin(DbName::Res), Outcome::Ok),
        ("holder-b", Op::commit(DbName::Res), Outcome::Ok),
    ]);
    let f = derive(&h);
    assert!(f.grants.is_empty(), "{:?}", f.grants);
    assert!(f.writes.is_empty(), "{:?}", f.writes);
}

#[test]
fn a_publish_of_a_transaction_that_did_not_commit_is_unreported_not_kept() {
    use leaselab_checkers::facts::derive;
    let h = hand(&[
        ("holder-a", Op::begin(DbName::Res), Outcome::Ok),
        (
            "holder-a",
            Op::publish("report-1", "x", 1),
            Outcome::Accepted,
        ),
        ("holder-a", Op::rollback(DbName::Res), Outcome::Ok),
    ]);
    let f = derive(&h);
    assert!(f.publishes.is_empty());
    assert_eq!(unreported(&f, DbName::Res), 1);
}

/// holder-a's open transaction holds the floor (token 1); holder-b's write (token 2) waits.
fn write_blocked_on_the_floor() -> World {
    let mut w = World::new(Config::default());
    w.run_on("holder-a", "t", Op::begin(DbName::Res));
    w.run_on("holder-a", "t", Op::fence(1));
    assert_eq!(
        w.run("holder-b", Op::write("summary", "b", 2)),
        Outcome::Blocked
    );
    w
}

/// A release that waited commits when the lock holder commits (t=300), and its client collects
/// the reply only after another holder's grant (t=400): the release took effect first, so the
/// grant is no I1 — taking effects in reply order would make it one.
#[test]
fn a_release_collected_after_a_grant_took_effect_at_its_commit() {
    use leaselab_checkers::check_with;
    use leaselab_checkers::facts::{derive_with, WrongFacts};
    let mut w = World::new(Config::default());
    w.run("holder-a", Op::acquire("holder-a", 1000));
    w.set_now(Millis(100));
    w.run_on("holder-c", "tc", Op::begin(DbName::Lease));
    assert_eq!(
        w.run_on("holder-c", "tc", Op::acquire("holder-c", 1000)),
        Outcome::Refused,
        "held: refused, and the row is locked"
    );
    w.set_now(Millis(200));
    assert_eq!(
        w.run("holder-a", Op::release("holder-a", 1)),
        Outcome::Blocked
    );
    w.set_now(Millis(300));
    w.run_on("holder-c", "tc", Op::commit(DbName::Lease));
    w.set_now(Millis(400));
    assert!(matches!(
        w.run("holder-b", Op::acquire("holder-b", 1000)),
        Outcome::Granted { .. }
    ));
    w.set_now(Millis(500));
    assert_eq!(
        w.run("holder-a", Op::await_(DbName::Lease)),
        Outcome::Released
    );
    let r = check(&w.history);
    assert!(!r.violated(Check::I1), "{:?}", r.violations);
    let wrong = check_with(
        &w.history,
        &derive_with(&w.history, true, Some(WrongFacts::ReplyOrder)),
    );
    assert!(wrong.violated(Check::I1), "the negative control fires I1");
}

/// A REPEATABLE READ read sees its snapshot: a write accepted after the snapshot is not
/// missing from it. Taking the read for the current state gives a false `final`.
#[test]
fn a_repeatable_read_part_read_observes_its_snapshot_only() {
    use leaselab_checkers::check_with;
    use leaselab_checkers::facts::{derive_with, WrongFacts};
    let mut w = World::new(Config::default());
    w.run_on(
        "holder-a",
        "ta",
        Op::BeginRepeatableRead { db: DbName::Res },
    );
    assert_eq!(
        w.run_on("holder-a", "ta", Op::read_part("summary")),
        Outcome::Part(None)
    );
    w.run("holder-b", Op::acquire("holder-b", 1000));
    assert_eq!(
        w.run("holder-b", Op::write("summary", "B", 1)),
        Outcome::Accepted
    );
    assert_eq!(
        w.run_on("holder-a", "ta", Op::read_part("summary")),
        Outcome::Part(None),
        "the snapshot"
    );
    assert!(
        check(&w.history).violations.is_empty(),
        "{:?}",
        check(&w.history).violations
    );
    let wrong = check_with(
        &w.history,
        &derive_with(&w.history, true, Some(WrongFacts::RepeatableReadIsCurrent)),
    );
    assert!(
        wrong.violated(Check::Final),
        "the negative control fires final"
    );
}

/// A transaction that reads its own uncommitted part (a stale token, unfenced) and then rolls
/// back observed nothing of the committed state: no `final`.
#[test]
fn a_read_of_ones_own_uncommitted_part_is_no_observation() {
    let mut w = World::new(Config::with_fence(FenceMode::Off));
    assert_eq!(
        w.run("holder-b", Op::write("summary", "B", 3)),
        Outcome::Accepted
    );
    w.run_on("holder-a", "ta", Op::begin(DbName::Res));
    assert_eq!(
        w.run_on("holder-a", "ta", Op::upsert("summary", "A", 2)),
        Outcome::Ok
    );
    let own = w.run_on("holder-a", "ta", Op::read_part("summary"));
    assert!(
        matches!(&own, Outcome::Part(Some(r)) if r.token == Token(2)),
        "{own:?}"
    );
    w.run_on("holder-a", "ta", Op::rollback(DbName::Res));
    let r = check(&w.history);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
}

/// Lease reads are facts too, and the lease database always keeps real transactions: a
/// REPEATABLE READ read's snapshot is its transaction's first statement exactly — not an
/// `await` that found nothing to wait for, nor a statement refused as `busy` — and the ledger
/// cross-check tells one lease's versions from another's.
#[test]
fn a_repeatable_read_lease_read_sees_the_snapshot_of_its_first_statement() {
    use leaselab_checkers::facts::{derive, ReadKey, Sees, Window};
    use leaselab_checkers::ledger::cross_check;
    let mut w = World::new(Config::default());
    w.run_on(
        "holder-b",
        "tb",
        Op::BeginRepeatableRead { db: DbName::Lease },
    );
    assert_eq!(
        w.run_on("holder-b", "tb", Op::await_(DbName::Lease)),
        Outcome::Error(Reason::NotBlocked)
    );
    w.run("holder-a", Op::acquire("holder-a", 1000));
    assert!(matches!(
        w.run_on("holder-b", "tb", Op::read_lease()),
        Outcome::Lease(Some(_))
    ));
    w.run("holder-a", Op::release("holder-a", 1));
    let second = w.run_on("holder-b", "tb", Op::read_lease());
    let f = derive(&w.history);
    let lease = LeaseName::new("report-job");
    let reads: Vec<(&ReadKey, &Sees)> = f.reads.iter().map(|r| (&r.key, &r.sees)).collect();
    let snap = Sees::Committed(Window {
        earliest: 4,
        latest: 4,
    });
    assert_eq!(
        reads,
        vec![
            (&ReadKey::Lease(lease.clone()), &snap),
            (&ReadKey::Lease(lease.clone()), &snap)
        ]
    );
    assert_eq!(f.reads[1].value, second);
    let ledger = w.model.ledger();
    assert!(
        cross_check(&f, &ledger).is_empty(),
        "{:?}",
        cross_check(&f, &ledger)
    );
    // Another lease's versions in the ledger say nothing of this one.
    let mut other = ledger.clone();
    for e in &mut other {
        if let leaselab_model::model::Committed::Lease(n, _) = &mut e.what {
            *n = LeaseName::new("another-job");
        }
    }
    let d = cross_check(&f, &other);
    assert!(
        d.iter().any(|x| x.contains("the read at event #4")),
        "the reads of report-job cannot come from another-job's rows: {d:?}"
    );
}

/// A renewal nobody heard back from may have set any expiry (a holder paused after sending
/// it): a later grant to another holder does not prove an overlap. Issued after that grant,
/// it changes nothing, and the overlap stays a violation.
#[test]
fn an_uncollected_renewal_before_a_grant_leaves_the_overlap_unproven() {
    // holder-a granted until 300; its renewal to t+100 is never answered; holder-b granted at
    // t=100 — the renewal sent before that grant, or after it.
    let history = |renew_first: bool| {
        let mut h = History::default();
        let renew = Op::Renew {
            lease: LeaseName::new("report-job"),
            holder: Holder::new("holder-a"),
            token: Token(1),
            ttl_ms: 100,
        };
        at(
            &mut h,
            0,
            "holder-a",
            Op::acquire("holder-a", 300),
            granted(1, 300),
        );
        if renew_first {
            at(&mut h, 0, "holder-a", renew.clone(), Outcome::Blocked);
        }
        at(
            &mut h,
            100,
            "holder-b",
            Op::acquire("holder-b", 100),
            granted(2, 200),
        );
        if !renew_first {
            at(&mut h, 100, "holder-a", renew, Outcome::Blocked);
        }
        h
    };
    let h = history(true);
    let f = leaselab_checkers::facts::derive(&h);
    assert_eq!(f.lease_unknown.len(), 1);
    assert!(!check(&h).violated(Check::I1), "{:?}", check(&h).violations);
    // Sent after the grant: holder-a's lease ran to 300 at t=100.
    let h = history(false);
    assert_eq!(leaselab_checkers::facts::derive(&h).lease_unknown.len(), 1);
    assert!(check(&h).violated(Check::I1));
}

/// holder-a's acquire waits; meanwhile holder-b is granted token 2 until `b_expires`.
fn a_waits_while_b_is_granted(b_expires: u64) -> History {
    let mut h = History::default();
    let a = Op::acquire("holder-a", 1500);
    at(&mut h, 0, "holder-a", a, Outcome::Blocked);
    let b = Op::acquire("holder-b", 1500);
    at(&mut h, 0, "holder-b", b, granted(2, b_expires));
    h
}

/// Two grants the history cannot order (holder-a's acquire waited, holder-b was granted
/// meanwhile, holder-a's grant was collected later): I1 fires only when it holds in either
/// order — each one unexpired beyond the time the other was reported — and nothing (a release,
/// a renewal) may have ended one early.
#[test]
fn i1_fires_on_unordered_grants_only_when_either_order_overlaps() {
    let history = |b_expires: u64, b_releases: bool| {
        let mut h = a_waits_while_b_is_granted(b_expires);
        if b_releases {
            let release = Op::Release {
                lease: LeaseName::new("report-job"),
                holder: Holder::new("holder-b"),
                token: Token(2),
            };
            at(&mut h, 50, "holder-b", release, Outcome::Released);
        }
        at(
            &mut h,
            100,
            "holder-a",
            Op::Await { db: DbName::Lease },
            granted(3, 1600),
        );
        h
    };
    let r = check(&history(1500, false));
    let v = r.of(Check::I1).next().expect("either order overlaps");
    assert!(v.message.contains("in either order"), "{}", v.message);
    assert_eq!(v.events, vec![2, 3]);
    // holder-b's lease ended before holder-a's grant was reported: holder-a may have been
    // granted after it expired.
    assert!(!check(&history(80, false)).violated(Check::I1));
    // holder-b released before holder-a's grant was reported: the same.
    assert!(!check(&history(1500, true)).violated(Check::I1));

    // Both acquires waited, so neither grant is ordered against the other: still found, once.
    let mut h = History::default();
    for actor in ["holder-a", "holder-b"] {
        at(&mut h, 0, actor, Op::acquire(actor, 1500), Outcome::Blocked);
    }
    let awaited = Op::Await { db: DbName::Lease };
    at(&mut h, 100, "holder-a", awaited.clone(), granted(2, 1600));
    at(&mut h, 110, "holder-b", awaited, granted(3, 1610));
    let r = check(&h);
    let found: Vec<_> = r.of(Check::I1).collect();
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].message.contains("in either order"),
        "{}",
        found[0].message
    );

    // A grant that waited while another session acted, reported before the other grant was
    // asked for: ordered, so only the ordinary rule speaks, once.
    let mut h = History::default();
    at(
        &mut h,
        0,
        "holder-a",
        Op::acquire("holder-a", 1500),
        Outcome::Blocked,
    );
    at(
        &mut h,
        5,
        "holder-c",
        Op::Now { db: DbName::Lease },
        Outcome::Now(Millis(5)),
    );
    at(
        &mut h,
        10,
        "holder-a",
        Op::Await { db: DbName::Lease },
        granted(2, 1510),
    );
    at(
        &mut h,
        20,
        "holder-b",
        Op::acquire("holder-b", 1500),
        granted(3, 1520),
    );
    let r = check(&h);
    let found: Vec<_> = r.of(Check::I1).collect();
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        !found[0].message.contains("in either order"),
        "{}",
        found[0].message
    );
}

/// A renewal of one of two unordered grants whose answer nobody heard may have set an expiry
/// before the other was granted: the overlap is then not shown, and nothing is reported — but
/// only for that holder's own token, and only for a renewal asked before both were reported.
#[test]
fn i1_unordered_grants_are_not_judged_across_an_unknown_renewal() {
    let history = |renewer: &str, token: u64, renew_at: u64| {
        let mut h = a_waits_while_b_is_granted(1500);
        let renew = Op::Renew {
            lease: LeaseName::new("report-job"),
            holder: Holder::new(renewer),
            token: Token(token),
            ttl_ms: 10,
        };
        let lose = |h: &mut History| {
            at(h, renew_at, "holder-b", renew.clone(), Outcome::Blocked);
            at(
                h,
                renew_at,
                "holder-b",
                Op::Disconnect { db: DbName::Lease },
                Outcome::Ok,
            );
        };
        if renew_at < 100 {
            lose(&mut h);
        }
        at(
            &mut h,
            100,
            "holder-a",
            Op::Await { db: DbName::Lease },
            granted(3, 1600),
        );
        if renew_at >= 100 {
            lose(&mut h);
        }
        h
    };
    assert!(!check(&history("holder-b", 2, 10)).violated(Check::I1));
    // Another holder's or another token's renewal says nothing about holder-b's grant.
    assert!(check(&history("holder-c", 2, 10)).violated(Check::I1));
    assert!(check(&history("holder-b", 1, 10)).violated(Check::I1));
    // Asked after both grants were reported: the overlap was already there.
    assert!(check(&history("holder-b", 2, 200)).violated(Check::I1));
}

/// A grant of token `t` until `e`.
fn granted(t: u64, e: u64) -> Outcome {
    Outcome::Granted {
        token: Token(t),
        expires: Expiry::At(Millis(e)),
    }
}

fn a_granted_token_1_until_1000() -> History {
    let mut h = History::default();
    let a = Op::acquire("holder-a", 1000);
    at(&mut h, 0, "holder-a", a, granted(1, 1000));
    h
}

/// A release answered `indeterminate` may have ended the lease: no overlap is certain across
/// it, but one is possible — if it did not take effect — and `unknown::possible` names it.
#[test]
fn an_unknown_release_makes_an_overlap_possible_not_certain() {
    let history = |release: Outcome| {
        let mut h = a_granted_token_1_until_1000();
        let op = Op::Release {
            lease: LeaseName::new("report-job"),
            holder: Holder::new("holder-a"),
            token: Token(1),
        };
        at(&mut h, 300, "holder-a", op, release);
        at(
            &mut h,
            500,
            "holder-b",
            Op::acquire("holder-b", 1000),
            granted(2, 1500),
        );
        h
    };
    let unknown = history(Outcome::Indeterminate("timeout".into()));
    let r = check(&unknown);
    assert!(!r.violated(Check::I1), "{:?}", r.violations);
    let possible = &r.possible;
    assert_eq!(possible.len(), 1, "{possible:?}");
    assert_eq!(possible[0].violation.check, Check::I1);
    assert_eq!(
        possible[0].conditions,
        [Condition {
            event: 2,
            applied: false
        }]
    );
    // Known either way, nothing is left to resolve.
    assert!(!check(&history(Outcome::Released)).violated(Check::I1));
    let refused = history(Outcome::Error(Reason::Other("not applied".into())));
    assert!(check(&refused).violated(Check::I1));
    assert!(leaselab_checkers::unknown::unknowns(&refused).is_empty());
}

/// A renewal answered `indeterminate` may have set the latest expiry it could: its answer's
/// time plus its TTL.
#[test]
fn an_unknown_renewal_is_resolved_to_the_latest_expiry_it_can_have_set() {
    let mut h = a_granted_token_1_until_1000();
    let renew = Op::Renew {
        lease: LeaseName::new("report-job"),
        holder: Holder::new("holder-a"),
        token: Token(1),
        ttl_ms: 1000,
    };
    at(
        &mut h,
        800,
        "holder-a",
        renew,
        Outcome::Indeterminate("timeout".into()),
    );
    // Granted at 1799: before 800 + 1000.
    at(
        &mut h,
        1799,
        "holder-b",
        Op::acquire("holder-b", 1000),
        granted(2, 2799),
    );
    let r = check(&h);
    assert!(!r.violated(Check::I1));
    let possible = &r.possible;
    assert_eq!(possible.len(), 1, "{possible:?}");
    assert!(possible[0].conditions[0].applied);
    assert!(
        possible[0].violation.message.contains("until t=1800"),
        "{}",
        possible[0].violation.message
    );
    // Granted at 1800: the renewal cannot have reached it.
    h.events[2].at = Millis(1800);
    h.events[2].local = Millis(1800);
    h.events[2].outcome = granted(2, 2800);
    assert!(check(&h).possible.is_empty());
}

/// The operations nobody heard back from are found where every other fact is: a write whose
/// `await` said `still-blocked` and whose connection then dropped, a renewal its client moved
/// on from without collecting, a release answered `indeterminate` through its `await`, a write
/// lost in a crash — and nothing answered for certain.
#[test]
fn unknown_operations_are_every_kind_nobody_heard_back_from() {
    use leaselab_checkers::unknown::{unknowns, Unknown};
    let res = DbName::Res;
    let lease = DbName::Lease;
    let h = hand(&[
        ("a", Op::write("summary", "a", 1), Outcome::Blocked), // #1
        ("a", Op::await_(res), Outcome::Error(Reason::StillBlocked)), // #2
        ("a", Op::Disconnect { db: res }, Outcome::Ok),        // #3: #1 dropped
        ("b", Op::renew("b", 2, 100), Outcome::Blocked),       // #4
        ("b", Op::read_lease(), Outcome::Lease(None)),         // #5: #4 never collected
        ("c", Op::release("c", 3), Outcome::Blocked),          // #6
        (
            "c",
            Op::await_(lease),
            Outcome::Indeterminate("timeout".into()),
        ), // #7
        ("d", Op::write("summary", "d", 4), Outcome::Blocked), // #8
        ("admin", Op::Crash { db: res }, Outcome::Ok),         // #9: #8 lost
        ("e", Op::write("summary", "e", 5), Outcome::Accepted), // #10: known
        (
            "e",
            Op::publish("k", "e", 5),
            Outcome::Indeterminate("timeout".into()),
        ), // #11
        (
            "f",
            Op::acquire("f", 100),
            Outcome::Indeterminate("timeout".into()),
        ), // #12: not one
    ]);
    let got = unknowns(&h);
    let want = [
        (1, None),
        (4, None),
        (6, Some(7)),
        (8, None),
        (11, Some(11)),
    ]
    .map(|(issued, answered)| Unknown { issued, answered });
    assert_eq!(got, want);
}

/// Two grants that both waited, the second one's window the widest of the lease and ending
/// exactly where the search for partners of the first stops (its end plus the widest window):
/// the pair is still judged. (The scan is bounded so that I1 is not quadratic; the bound must
/// not cut off a pair that can overlap.)
#[test]
fn i1_judges_unordered_grants_at_the_edge_of_the_widest_window() {
    let mut h = History::default();
    let observe = |h: &mut History, t: u64| {
        at(h, t, "observer", Op::read_lease(), Outcome::Lease(None));
    };
    at(
        &mut h,
        1,
        "holder-a",
        Op::acquire("holder-a", 1500),
        Outcome::Blocked,
    ); // #1
    for t in 2..=8 {
        observe(&mut h, t);
    }
    at(
        &mut h,
        9,
        "holder-b",
        Op::acquire("holder-b", 1500),
        Outcome::Blocked,
    ); // #9
    let lease = DbName::Lease;
    at(
        &mut h,
        10,
        "holder-a",
        Op::await_(lease),
        granted(1, 10_000),
    ); // #10: window 2..10
    for t in 11..=29 {
        observe(&mut h, t);
    }
    at(
        &mut h,
        30,
        "holder-b",
        Op::await_(lease),
        granted(2, 10_000),
    ); // #30: window 10..30
    let r = check(&h);
    assert!(r.violated(Check::I1), "{:?}", r.violations);
    let v = &r.violations[0];
    assert!(
        v.message
            .contains("neither grant is definitely before the other"),
        "{}",
        v.message
    );
    assert_eq!(v.events, vec![10, 30]);
}

/// A stale write whose answer was lost is never counted as accepted — but if it was, the
/// tokens of accepted writes went down: `possible` names it, decided by that write taking
/// effect.
#[test]
fn an_unknown_stale_write_makes_i3_possible_if_it_took_effect() {
    let mut h = a_granted_token_1_until_1000();
    at(
        &mut h,
        1100,
        "holder-b",
        Op::acquire("holder-b", 1000),
        granted(2, 2100),
    );
    let b = Op::write("summary", "b", 2);
    at(&mut h, 1200, "holder-b", b, Outcome::Accepted);
    let a = Op::write("summary", "a", 1);
    at(
        &mut h,
        1300,
        "holder-a",
        a,
        Outcome::Indeterminate("timeout".into()),
    ); // #4
    let r = check(&h);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    let possible = &r.possible;
    let found: Vec<(Check, u64, bool)> = possible
        .iter()
        .map(|p| {
            (
                p.violation.check,
                p.conditions[0].event,
                p.conditions[0].applied,
            )
        })
        .collect();
    assert_eq!(
        found,
        [(Check::I3, 4, true), (Check::Acceptance, 4, true)],
        "{possible:?}"
    );
}

/// Each row version some statement tried to write is kept once, with its first event and a
/// hash of its own; a look-up compares the version itself (kept with it: no history needed).
#[test]
fn each_attempted_row_version_is_kept_once_with_its_first_event() {
    use leaselab_checkers::facts::RowVersion;
    let h = hand(&[
        ("a", Op::write("summary", "x", 1), Outcome::Accepted), // #1
        ("a", Op::write("summary", "x", 1), Outcome::Accepted), // #2: the same version
        ("a", Op::write("summary", "y", 1), Outcome::Rejected), // #3: another
    ]);
    let f = leaselab_checkers::facts::derive(&h);
    assert_eq!(f.attempts.len(), 2, "{:?}", f.attempts);
    assert_ne!(
        f.attempts[0].hash, f.attempts[1].hash,
        "two versions, two hashes"
    );
    let (scope, part, a) = (
        Scope::new("daily-report"),
        Part::new("summary"),
        Holder::new("a"),
    );
    let v = |content| RowVersion {
        scope: &scope,
        part: &part,
        token: Token(1),
        writer: &a,
        content,
    };
    assert_eq!(f.attempted(&v("x")), Some(1));
    assert_eq!(f.attempted(&v("y")), Some(3));
    assert_eq!(f.attempted(&v("z")), None);
}

/// Of the versions one commit made (two renewals in one transaction), I1 names the last
/// statement's: the one the commit kept.
#[test]
fn i1_names_the_version_a_commit_kept() {
    let lease = DbName::Lease;
    let renew = |ttl| Op::renew("holder-a", 1, ttl);
    let h = hand(&[
        ("holder-a", Op::acquire("holder-a", 1000), granted(1, 1000)),
        ("holder-a", Op::begin(lease), Outcome::Ok),
        (
            "holder-a",
            renew(1500),
            Outcome::Renewed {
                expires: Expiry::At(Millis(1500)),
            },
        ),
        (
            "holder-a",
            renew(1800),
            Outcome::Renewed {
                expires: Expiry::At(Millis(1800)),
            },
        ),
        ("holder-a", Op::commit(lease), Outcome::Ok),
        ("holder-b", Op::acquire("holder-b", 1000), granted(2, 1000)),
    ]);
    let r = check(&h);
    assert_eq!(r.verdict(), [Check::I1], "{:?}", r.violations);
    assert!(
        r.violations[0].message.contains("unexpired until t=1800"),
        "{}",
        r.violations[0].message
    );
}

/// The ledger cross-check excuses one unexplained committed row per write whose answer was
/// unknown, and one per statement nobody collected — a write never answered is the second
/// kind, counted once.
#[test]
fn an_unanswered_write_excuses_one_row_not_two() {
    use leaselab_checkers::ledger::cross_check;
    let mut w = World::new(Config::default());
    w.run("holder-a", Op::acquire("holder-a", 5_000));
    w.run("holder-a", Op::write("summary", "a", 1));
    let l = w.model.ledger();
    let mut f = leaselab_checkers::facts::derive(&w.history);
    // The history says nothing of the write: the ledger's row is unexplained.
    let mut unknown = f.writes[0].clone();
    f.writes.clear();
    assert_eq!(cross_check(&f, &l).len(), 1);
    // A write never answered and counted among the unreported statements excuses it once.
    unknown.certainty = leaselab_checkers::facts::Certainty::Maybe;
    unknown.unanswered = true;
    unknown.content = "other".into();
    f.writes.push(unknown.clone());
    assert_eq!(
        cross_check(&f, &l).len(),
        1,
        "not excused by the maybe-write itself"
    );
    f.unreported = vec![(DbName::Res, 1)];
    assert!(cross_check(&f, &l).is_empty());
    // Answered `info`, it excuses one row of its own.
    f.unreported.clear();
    f.writes[0].unanswered = false;
    assert!(cross_check(&f, &l).is_empty());
}

fn lease_row(holder: &str, token: u64, expires: Expiry) -> Outcome {
    Outcome::Lease(Some(leaselab_model::LeaseRow {
        holder: Holder::new(holder),
        token: Token(token),
        expires_at: expires,
    }))
}

fn timeout() -> Outcome {
    Outcome::Indeterminate("timeout".into())
}

/// holder-a holds token 1 until 1000; its renewal (TTL 1000) times out at t=500 (event #2);
/// `between` happens next; holder-c reads the lease row (`shown`); holder-b is granted at 1100.
fn renewal_then_read(between: &[(&str, Op, Outcome)], shown: Outcome) -> History {
    let mut h = a_granted_token_1_until_1000();
    at(
        &mut h,
        500,
        "holder-a",
        Op::renew("holder-a", 1, 1000),
        timeout(),
    );
    for (actor, op, out) in between {
        at(&mut h, 600, actor, op.clone(), out.clone());
    }
    at(&mut h, 700, "holder-c", Op::read_lease(), shown);
    let b = Op::acquire("holder-b", 1000);
    at(&mut h, 1100, "holder-b", b, granted(2, 2100));
    h
}

/// A read after the renewal still showing the expiry before it proves it did not take effect:
/// holder-b's grant at 1100 is clean. Not when something else could have changed the row in
/// between (a known renewal, another unknown one), nor when the read shows a value the renewal
/// itself could have set, nor another holder's row.
#[test]
fn a_lease_read_rules_out_an_unknown_renewal_only_when_nothing_else_explains_it() {
    let old = lease_row("holder-a", 1, Expiry::At(Millis(1000)));
    let r = check(&renewal_then_read(&[], old.clone()));
    assert_eq!(r.settled.len(), 1, "{:?}", r.settled);
    assert_eq!(
        (r.settled[0].event, r.settled[0].applied, r.settled[0].by),
        (2, false, 3)
    );
    assert!(r.possible.is_empty() && r.violations.is_empty(), "{r:?}");
    // Without the read: possible I1 (if the renewal took effect, until 1500).
    let mut h = a_granted_token_1_until_1000();
    at(
        &mut h,
        500,
        "holder-a",
        Op::renew("holder-a", 1, 1000),
        timeout(),
    );
    at(
        &mut h,
        1100,
        "holder-b",
        Op::acquire("holder-b", 1000),
        granted(2, 2100),
    );
    assert_eq!(check(&h).possible.len(), 1);
    // A known renewal to 1000 again between: the read may show it.
    let renewed = Outcome::Renewed {
        expires: Expiry::At(Millis(1000)),
    };
    let again = [("holder-a", Op::renew("holder-a", 1, 400), renewed)];
    let r = check(&renewal_then_read(&again, old.clone()));
    assert!(r.settled.is_empty(), "{:?}", r.settled);
    // Another unknown renewal of the holding that can have committed before the read.
    let other = [("holder-a", Op::renew("holder-a", 1, 2000), timeout())];
    let r = check(&renewal_then_read(&other, old.clone()));
    assert!(r.settled.iter().all(|s| s.applied), "{:?}", r.settled);
    // Another holder's row says nothing of holder-a's renewal.
    let r = check(&renewal_then_read(
        &[],
        lease_row("holder-x", 1, Expiry::At(Millis(1000))),
    ));
    assert!(r.settled.is_empty(), "{:?}", r.settled);
    // Showing 1500, the renewal's own value: it took effect.
    let r = check(&renewal_then_read(
        &[],
        lease_row("holder-a", 1, Expiry::At(Millis(1500))),
    ));
    assert_eq!(
        (r.settled.len(), r.settled[0].applied),
        (1, true),
        "{:?}",
        r.settled
    );
    assert_eq!(r.verdict(), [Check::I1]);
}

/// A read settles a never-answered renewal with the expiry it shows, committed no later than
/// the read: the grant after the read is then judged against that expiry alone.
#[test]
fn a_settled_renewal_committed_before_the_read_that_shows_it() {
    let mut h = a_granted_token_1_until_1000();
    at(
        &mut h,
        500,
        "holder-a",
        Op::renew("holder-a", 1, 1000),
        Outcome::Blocked,
    ); // #2
       // A read right after it cannot see it: its commit comes after its own event.
    at(
        &mut h,
        600,
        "holder-x",
        Op::read_floor(),
        Outcome::Floor(None),
    ); // #3
    at(
        &mut h,
        700,
        "holder-c",
        Op::read_lease(),
        lease_row("holder-a", 1, Expiry::At(Millis(1550))),
    ); // #4
    at(
        &mut h,
        1200,
        "holder-b",
        Op::acquire("holder-b", 1000),
        granted(2, 2200),
    ); // #5
    let r = check(&h);
    assert_eq!(r.settled.len(), 1, "{:?}", r.settled);
    assert_eq!(r.verdict(), [Check::I1], "{r:?}");
    assert!(
        r.violations[0].message.contains("until t=1550"),
        "{}",
        r.violations[0].message
    ); // Read right after the renewal was sent, the row cannot show it: nothing settled.
    let mut h = a_granted_token_1_until_1000();
    at(
        &mut h,
        500,
        "holder-a",
        Op::renew("holder-a", 1, 1000),
        Outcome::Blocked,
    );
    at(
        &mut h,
        700,
        "holder-c",
        Op::read_lease(),
        lease_row("holder-a", 1, Expiry::At(Millis(1550))),
    );
    assert!(check(&h).settled.is_empty());
}

/// A read settles a never-answered write, committed no later than the read: a write accepted
/// after the read with a lower token is then certainly stale. A read of a value two unknown
/// writes carry settles neither; an accepted write of the same value settles nothing.
#[test]
fn a_settled_write_committed_before_the_read_that_shows_it() {
    let row = |token: u64| {
        Outcome::Part(Some(leaselab_model::PartRow {
            content: "a".into(),
            writer: Holder::new("holder-a"),
            token: Token(token),
        }))
    };
    let history = |second: Option<Outcome>| {
        let mut h = History::default();
        at(
            &mut h,
            0,
            "holder-a",
            Op::write("summary", "a", 2),
            Outcome::Blocked,
        ); // #1
        at(
            &mut h,
            5,
            "holder-x",
            Op::read_floor(),
            Outcome::Floor(None),
        );
        if let Some(out) = &second {
            at(
                &mut h,
                5,
                "holder-d",
                Op::write("summary", "a", 2),
                out.clone(),
            );
        }
        at(&mut h, 10, "holder-c", Op::read_part("summary"), row(2));
        at(
            &mut h,
            20,
            "holder-b",
            Op::write("summary", "b", 1),
            Outcome::Accepted,
        );
        h
    };
    let r = check(&history(None));
    assert_eq!(r.settled.len(), 1, "{:?}", r.settled);
    assert_eq!(r.verdict(), [Check::I3, Check::Acceptance], "{r:?}");
    // holder-d's write of the same version is another writer's: still only holder-a's matches.
    let r = check(&history(Some(timeout())));
    assert_eq!(r.settled.len(), 1, "{:?}", r.settled);
    // Read right after the write was sent, while it waited, the value can be its (a recorder's
    // invoke, another process's read, no answer): settled, at the read.
    let mut h = History::default();
    at(
        &mut h,
        0,
        "holder-a",
        Op::write("summary", "a", 2),
        Outcome::Blocked,
    );
    at(&mut h, 10, "holder-c", Op::read_part("summary"), row(2));
    let r = check(&h);
    assert_eq!(
        r.settled
            .iter()
            .map(|s| (s.event, s.by))
            .collect::<Vec<_>>(),
        [(1, 2)]
    );
    // Sent after the read: not its.
    let mut h = History::default();
    at(&mut h, 10, "holder-c", Op::read_part("summary"), row(2));
    at(
        &mut h,
        20,
        "holder-a",
        Op::write("summary", "a", 2),
        Outcome::Blocked,
    );
    assert!(check(&h).settled.is_empty());
}
