//! Where PostgreSQL races, the model allows every order: two autocommit fences wait on one
//! transaction's floor lock; when it commits, either may go first.

use leaselab_model::allowed::Allowed;
use leaselab_model::prelude::*;
use leaselab_model::Reason;

/// The history up to the commit that releases the two waiters, and the two `await`s after it.
fn schedule() -> Vec<Event> {
    let mut w = World::new(Config::default());
    w.run_on("holder-b", "tb", Op::begin(DbName::Res));
    assert_eq!(w.run_on("holder-b", "tb", Op::fence(1)), Outcome::Passed);
    assert_eq!(w.run("holder-c", Op::fence(3)), Outcome::Blocked);
    assert_eq!(w.run("holder-a", Op::fence(2)), Outcome::Blocked);
    w.run_on("holder-b", "tb", Op::commit(DbName::Res));
    // FIFO: holder-c's token 3 first, so holder-a's token 2 then fails.
    assert_eq!(w.run("holder-a", Op::await_(DbName::Res)), Outcome::Failed);
    assert_eq!(w.run("holder-c", Op::await_(DbName::Res)), Outcome::Passed);
    w.history.events
}

fn run(events: &[Event], a_sees: Outcome) -> Result<(), Vec<Outcome>> {
    let mut worlds = Allowed::new(World::new(Config::default()));
    for e in events {
        let want = if e.actor.as_str() == "holder-a" && matches!(e.op, Op::Await { .. }) {
            a_sees.clone()
        } else {
            e.outcome.clone()
        };
        worlds.step(e, |o| *o == want)?;
    }
    Ok(())
}

#[test]
fn either_waiter_may_go_first_and_nothing_else_is_allowed() {
    let events = schedule();
    // The FIFO order and the other one (holder-a's token 2 first: it passes) are both allowed.
    assert_eq!(run(&events, Outcome::Failed), Ok(()));
    assert_eq!(run(&events, Outcome::Passed), Ok(()));
    // An outcome no order gives is a divergence, and the allowed ones are reported.
    let Err(allowed) = run(&events, Outcome::Rejected) else {
        panic!("`rejected` is not an outcome of a fence");
    };
    assert!(
        allowed.contains(&Outcome::Failed) && allowed.contains(&Outcome::Passed),
        "{allowed:?}"
    );
}

/// Holder `b`'s open transaction holds the `summary` row; `writers` each wait with a one-shot
/// unfenced write of it (as `(actor, connection, content)`); then `b` commits.
fn writers_waiting(writers: &[(&str, &str, &str)]) -> Vec<Event> {
    let cfg = Config {
        fence: FenceMode::Off,
        ..Config::default()
    };
    let mut w = World::new(cfg);
    w.run_on("holder-b", "tb", Op::begin(DbName::Res));
    w.run_on("holder-b", "tb", Op::upsert("summary", "b", 1));
    for (actor, conn, content) in writers {
        assert_eq!(
            w.run_on(actor, conn, Op::write("summary", content, 1)),
            Outcome::Blocked
        );
    }
    w.run_on("holder-b", "tb", Op::commit(DbName::Res));
    w.history.events
}

fn worlds_after(events: &[Event]) -> Allowed {
    worlds_after_in(
        Config {
            fence: FenceMode::Off,
            ..Config::default()
        },
        events,
    )
}

/// Every world the model allows after `events`, accepting every outcome.
fn worlds_after_in(cfg: Config, events: &[Event]) -> Allowed {
    let mut worlds = Allowed::new(World::new(cfg));
    for e in events {
        worlds.step(e, |_| true).expect("every outcome accepted");
    }
    worlds
}

/// Every order of the released waiters is a world of its own — three waiters, six orders —
/// and the worlds are there to compare the final state with.
#[test]
fn three_waiters_race_in_all_six_orders() {
    let events = writers_waiting(&[("a", "ca", "a"), ("c", "cc", "c"), ("d", "cd", "d")]);
    let worlds = worlds_after(&events);
    assert_eq!(worlds.worlds().len(), 6);
    let contents: std::collections::BTreeSet<String> = worlds
        .into_worlds()
        .into_iter()
        .map(|w| format!("{:?}", w.model.ledger()))
        .collect();
    assert_eq!(contents.len(), 6, "six different commit orders");
}

/// Orders that end in the same database state are one world, not several.
#[test]
fn orders_that_end_alike_are_one_world() {
    let events = writers_waiting(&[("a", "c1", "same"), ("a", "c2", "same")]);
    assert_eq!(worlds_after(&events).worlds().len(), 1);
}

/// At most 16 worlds are kept: four transactions wait on the floor lock with their fence;
/// the commit that frees it lets one of them take it in any of 24 orders (the other three keep
/// waiting, in the order the pick gave), all different.
#[test]
fn the_number_of_worlds_is_capped() {
    let mut w = World::new(Config::default());
    w.run_on("holder-b", "tb", Op::begin(DbName::Res));
    assert_eq!(w.run_on("holder-b", "tb", Op::fence(1)), Outcome::Passed);
    for (actor, token) in [("a", 2), ("c", 3), ("d", 4), ("e", 5)] {
        w.run_on(actor, actor, Op::begin(DbName::Res));
        assert_eq!(w.run_on(actor, actor, Op::fence(token)), Outcome::Blocked);
    }
    w.run_on("holder-b", "tb", Op::commit(DbName::Res));
    let mut worlds = Allowed::new(World::new(Config::default()));
    for e in &w.history.events {
        worlds.step(e, |_| true).expect("every outcome accepted");
    }
    assert_eq!(worlds.worlds().len(), 16);
}

/// A client that disconnects while its statement waits leaves an orphan that runs on (an
/// autocommit statement commits); a new connection of the same name can wait again and
/// disconnect again — each orphan keeps its own statement, and the waiter queued before them
/// keeps its own.
#[test]
fn orphans_keep_their_statements_apart_from_the_other_waiters() {
    let cfg = Config {
        publish: PublishMode::Versioned,
        ..Config::default()
    };
    let mut w = World::new(cfg);
    w.run_on("holder-b", "tb", Op::begin(DbName::Res));
    w.run_on("holder-b", "tb", Op::publish("report-1", "b", 1));
    assert_eq!(
        w.run_on("holder-c", "cc", Op::publish("report-1", "c", 3)),
        Outcome::Blocked
    );
    for (content, token) in [("first", 4), ("second", 5)] {
        assert_eq!(
            w.run_on("holder-a", "ca", Op::publish("report-1", content, token)),
            Outcome::Blocked
        );
        assert_eq!(
            w.run_on("holder-a", "ca", Op::Disconnect { db: DbName::Res }),
            Outcome::Ok
        );
    }
    w.run_on("holder-b", "tb", Op::commit(DbName::Res));
    assert_eq!(
        w.run_on("holder-c", "cc", Op::await_(DbName::Res)),
        Outcome::Accepted,
        "the waiter that stayed gets its answer"
    );
    let kept: Vec<String> = w
        .model
        .ledger()
        .into_iter()
        .filter_map(|e| match e.what {
            leaselab_model::model::Committed::Publish(_, r) => Some(r.content),
            _ => None,
        })
        .collect();
    assert_eq!(
        kept,
        ["b", "c", "first", "second"],
        "both orphans committed, in queue order"
    );
}

/// Three sessions wait on one floor; the first to lock after the commit may be any of them. A
/// transaction whose fence then fails its re-check keeps the row, so the ones queued behind it
/// wait again until it ends, and then race once more: every order PostgreSQL can take is
/// allowed, and a waiter passing while the failed one still holds the row is not.
#[test]
fn waiters_behind_a_failed_recheck_wait_for_its_transaction_then_race_again() {
    let mut w = World::new(Config::default());
    w.run_on("holder-b", "tb", Op::begin(DbName::Res));
    assert_eq!(w.run_on("holder-b", "tb", Op::fence(2)), Outcome::Passed);
    w.run_on("holder-a", "ta", Op::begin(DbName::Res));
    assert_eq!(w.run_on("holder-a", "ta", Op::fence(1)), Outcome::Blocked);
    for (actor, token) in [("holder-c", 3), ("holder-d", 4)] {
        w.run_on(actor, actor, Op::begin(DbName::Res));
        assert_eq!(w.run_on(actor, actor, Op::fence(token)), Outcome::Blocked);
    }
    let commit = w.run_on("holder-b", "tb", Op::commit(DbName::Res));
    assert_eq!(commit, Outcome::Ok);
    let events = w.history.events.clone();
    let at = |actor: &str, op: Op| Event {
        seq: events.len() as u64 + 1,
        at: Millis(0),
        local: Millis(0),
        actor: Holder::new(actor),
        conn: Some(ConnId::new(actor)),
        op,
        outcome: Outcome::Ok,
    };
    let start = || {
        let mut worlds = Allowed::new(World::new(Config::default()));
        for e in &events {
            worlds.step(e, |o| *o == e.outcome).expect("as recorded");
        }
        worlds
    };
    let mut a_first = at("holder-a", Op::await_(DbName::Res));
    a_first.conn = Some(ConnId::new("ta"));
    // a locked first (FIFO) or c or d did: a's re-check fails in the first order only.
    let mut worlds = start();
    worlds
        .step(&a_first, |o| *o == Outcome::Failed)
        .expect("a first: its re-check against floor 2 fails");
    // ... and then c still waits: a's transaction holds the floor.
    let c_waits = at("holder-c", Op::await_(DbName::Res));
    worlds
        .step(&c_waits, |o| *o == Outcome::Error(Reason::StillBlocked))
        .expect("c waits behind a");
    assert!(
        worlds
            .clone()
            .step(&c_waits, |o| *o == Outcome::Passed)
            .is_err(),
        "c cannot pass while a's failed fence holds the row"
    );
    let mut end_a = at("holder-a", Op::rollback(DbName::Res));
    end_a.conn = Some(ConnId::new("ta"));
    worlds.step(&end_a, |_| true).expect("rollback");
    // Now c and d race: c may have locked first (passed) or still wait behind d.
    for c_sees in [Outcome::Passed, Outcome::Error(Reason::StillBlocked)] {
        worlds
            .clone()
            .step(&c_waits, |o| *o == c_sees)
            .unwrap_or_else(|e| panic!("c may see {c_sees:?}: allowed {e:?}"));
    }
    // Or c locked first of all three, before a: then a waits behind c.
    let mut worlds = start();
    worlds
        .step(&c_waits, |o| *o == Outcome::Passed)
        .expect("c first");
    worlds
        .step(&a_first, |o| *o == Outcome::Error(Reason::StillBlocked))
        .expect("a waits behind c");
}

/// The negative control allows the queue order only.
#[test]
fn queue_order_only_is_a_wrong_rule() {
    use leaselab_model::model::{Model, WrongRule};
    let events = schedule();
    let mut worlds = Allowed::new(World::with_backend(
        Model::new(Config::default()).with_wrong_rule(WrongRule::WaitersInQueueOrder),
    ));
    let mut diverged = false;
    for e in &events {
        let want = if e.actor.as_str() == "holder-a" && matches!(e.op, Op::Await { .. }) {
            Outcome::Passed
        } else {
            e.outcome.clone()
        };
        diverged |= worlds.step(e, |o| *o == want).is_err();
    }
    assert!(diverged, "holder-a's fence first is not in queue order");
}

/// One rollback frees two rows: a one-shot write waits on the floor, an upsert on the part. In
/// PostgreSQL both wake and run concurrently, so either may commit the part last: both final
/// contents are allowed worlds, whoever queued first.
#[test]
fn waiters_on_different_rows_freed_by_one_rollback_race_too() {
    let mut w = World::new(Config::default());
    w.run_on("holder-c", "tc", Op::begin(DbName::Res));
    assert_eq!(w.run_on("holder-c", "tc", Op::fence(1)), Outcome::Passed);
    assert_eq!(
        w.run("holder-a", Op::write("detail", "a", 3)),
        Outcome::Blocked
    );
    assert_eq!(
        w.run_on("holder-c", "tc", Op::upsert("detail", "c", 4)),
        Outcome::Ok
    );
    assert_eq!(
        w.run("holder-d", Op::upsert("detail", "d", 2)),
        Outcome::Blocked
    );
    w.run_on("holder-c", "tc", Op::rollback(DbName::Res));
    let worlds = worlds_after_in(Config::default(), &w.history.events);
    let last: std::collections::BTreeSet<String> = worlds
        .into_worlds()
        .into_iter()
        .filter_map(|w| {
            w.model
                .ledger()
                .into_iter()
                .rev()
                .find_map(|e| match e.what {
                    leaselab_model::model::Committed::Part(_, _, r) => Some(r.content),
                    _ => None,
                })
        })
        .collect();
    assert_eq!(last, ["a", "d"].map(String::from).into_iter().collect());
}

/// A negative control counts only a divergence no order of PostgreSQL's could avoid: timing
/// decides a run where waiters were released together with different results, not one with a
/// single waiter, nor one whose orders all end alike.
#[test]
fn timing_decides_only_where_orders_end_differently() {
    use leaselab_model::allowed::timing_decides;
    let events = schedule();
    let world = || World::new(Config::default());
    // Up to the commit the run is the same whatever the timing; the commit releases both.
    assert!(!timing_decides(world(), &events[..4]));
    assert!(timing_decides(world(), &events));
    // One waiter: nothing to race.
    let mut w = world();
    w.run_on("holder-b", "tb", Op::begin(DbName::Res));
    w.run_on("holder-b", "tb", Op::fence(1));
    assert_eq!(w.run("holder-a", Op::fence(2)), Outcome::Blocked);
    w.run_on("holder-b", "tb", Op::commit(DbName::Res));
    assert_eq!(w.run("holder-a", Op::await_(DbName::Res)), Outcome::Passed);
    assert!(!timing_decides(world(), &w.history.events));
    // One holder writing the same content on two connections: either order ends alike.
    let cfg = Config {
        fence: FenceMode::Off,
        ..Config::default()
    };
    let same = writers_waiting(&[("a", "c1", "same"), ("a", "c2", "same")]);
    assert!(!timing_decides(World::new(cfg.clone()), &same));
    let differ = writers_waiting(&[("a", "c1", "x"), ("a", "c2", "y")]);
    assert!(timing_decides(World::new(cfg), &differ));
}

/// Two transactions each wait for a row the other holds: a deadlock. PostgreSQL aborts one of
/// them (40P01) — whichever waiter's `deadlock_timeout` fires first — and the other goes on.
/// By default the one whose wait closed the cycle is aborted; the other is allowed too.
#[test]
fn a_wait_cycle_aborts_one_member_either_one() {
    let mut w = World::new(Config::default());
    w.run_on("holder-a", "ta", Op::begin(DbName::Res));
    assert_eq!(
        w.run_on("holder-a", "ta", Op::upsert("summary", "a", 2)),
        Outcome::Ok
    );
    w.run_on("holder-b", "tb", Op::begin(DbName::Res));
    assert_eq!(w.run_on("holder-b", "tb", Op::fence(3)), Outcome::Passed);
    assert_eq!(w.run_on("holder-a", "ta", Op::fence(2)), Outcome::Blocked);
    let dead = Outcome::Error(Reason::DEADLOCK_DETECTED);
    // B's upsert closes the cycle: it is aborted, its fence undone, and A's fence passes.
    assert_eq!(
        w.run_on("holder-b", "tb", Op::upsert("summary", "b", 3)),
        dead
    );
    assert_eq!(
        w.run_on("holder-a", "ta", Op::await_(DbName::Res)),
        Outcome::Passed
    );
    let events = w.history.events;
    let run = |b_sees: Outcome, a_sees: Outcome| {
        let mut worlds = Allowed::new(World::new(Config::default()));
        for e in &events {
            let want = match (e.actor.as_str(), e.seq) {
                ("holder-b", 6) => b_sees.clone(),
                ("holder-a", 7) => a_sees.clone(),
                _ => e.outcome.clone(),
            };
            worlds.step(e, |o| *o == want)?;
        }
        Ok::<(), Vec<Outcome>>(())
    };
    assert_eq!(run(dead.clone(), Outcome::Passed), Ok(()));
    // Or A is the one aborted: B's upsert goes on, and A's await reports the deadlock.
    assert_eq!(run(Outcome::Ok, dead.clone()), Ok(()));
    // Both blocked for ever is not an outcome PostgreSQL has.
    assert!(run(Outcome::Blocked, Outcome::Error(Reason::StillBlocked)).is_err());
}

/// C fences the floor, D and then B wait for it, B holding the `detail` part: C's upsert of
/// `detail` then closes a cycle through D's place in the floor's queue.
fn queue_behind_a_fence(w: &mut World) {
    for (a, c) in [("holder-c", "tc"), ("holder-b", "tb"), ("holder-d", "td")] {
        w.run_on(a, c, Op::begin(DbName::Res));
    }
    assert_eq!(
        w.run_on("holder-b", "tb", Op::upsert("detail", "b", 1)),
        Outcome::Ok
    );
    assert_eq!(w.run_on("holder-c", "tc", Op::fence(1)), Outcome::Passed);
    assert_eq!(w.run_on("holder-d", "td", Op::fence(2)), Outcome::Blocked);
    assert_eq!(w.run_on("holder-b", "tb", Op::fence(1)), Outcome::Blocked);
}

/// A cycle through a row's queue: the first waiter for the floor holds its tuple lock, so a
/// later waiter waits for it too. PostgreSQL may abort that first waiter as well — and the
/// cycle it leaves behind is then broken by aborting one more.
#[test]
fn a_waiter_ahead_in_the_queue_may_be_the_victim_and_the_cycle_is_broken_again() {
    let mut w = World::new(Config::default());
    queue_behind_a_fence(&mut w);
    let dead = Outcome::Error(Reason::DEADLOCK_DETECTED);
    assert_eq!(
        w.run_on("holder-c", "tc", Op::upsert("detail", "c", 1)),
        dead
    );
    let events = w.history.events;
    let last = events.len() - 1;
    let outcomes = |w: &Allowed| -> Vec<Outcome> {
        let mut seen = Vec::new();
        for world in w.worlds() {
            let mut x = world.clone();
            let o = x.run_on("holder-d", "td", Op::await_(DbName::Res));
            if !seen.contains(&o) {
                seen.push(o);
            }
        }
        seen
    };
    let mut worlds = Allowed::new(World::new(Config::default()));
    for e in &events[..last] {
        worlds.step(e, |o| *o == e.outcome).expect("as recorded");
    }
    // C's upsert: aborted, or it goes on because B (or D, then B) was aborted.
    let mut ok = worlds.clone();
    assert!(ok.step(&events[last], |o| *o == Outcome::Ok).is_ok());
    assert!(worlds.step(&events[last], |o| *o == dead).is_ok());
    // Where C goes on, D may be the one aborted first: its await reports the deadlock.
    assert!(outcomes(&ok).contains(&dead), "{:?}", outcomes(&ok));
}

/// A one-shot write aborted as a deadlock's victim ends its own transaction, as its client
/// rolls back: the connection is free for the holder's next write. (C holds the part, the
/// write holds the floor and waits for the part, C's fence closes the cycle.)
#[test]
fn a_one_shot_write_aborted_by_a_deadlock_leaves_its_connection_free() {
    let mut w = World::new(Config::default());
    w.run_on("holder-c", "tc", Op::begin(DbName::Res));
    assert_eq!(
        w.run_on("holder-c", "tc", Op::upsert("summary", "c", 1)),
        Outcome::Ok
    );
    assert_eq!(
        w.run("holder-a", Op::write("summary", "a", 2)),
        Outcome::Blocked
    );
    let dead = Outcome::Error(Reason::DEADLOCK_DETECTED);
    assert_eq!(w.run_on("holder-c", "tc", Op::fence(1)), dead);
    w.run("holder-a", Op::await_(DbName::Res));
    let mut events = w.history.events;
    // The other victim: the write. C's fence then passes, A's await reports the deadlock, and
    // A writes again on the same connection.
    events[3].outcome = Outcome::Passed;
    events[4].outcome = dead;
    let mut worlds = Allowed::new(World::new(Config::default()));
    for e in &events {
        worlds.step(e, |o| *o == e.outcome).expect("allowed");
    }
    let mut next = worlds.first().clone();
    let again = next.run("holder-a", Op::write("summary", "a2", 2));
    assert_eq!(
        again,
        Outcome::Blocked,
        "waits for C's floor lock, no 25P02: {again:?}"
    );
}

/// Only a waiter for the same row as a cycle member holds that row's tuple lock: a waiter
/// queued earlier on another row is never the deadlock's victim.
#[test]
fn a_waiter_on_another_row_is_never_a_deadlock_victim() {
    let mut w = World::new(Config::default());
    assert_eq!(
        w.run("holder-x", Op::upsert("summary", "x", 1)),
        Outcome::Accepted
    );
    w.run_on("holder-f", "tf", Op::begin(DbName::Res));
    assert_eq!(
        w.run_on("holder-f", "tf", Op::upsert("summary", "f", 1)),
        Outcome::Ok
    );
    assert_eq!(
        w.run_on("holder-e", "te", Op::upsert("summary", "e", 1)),
        Outcome::Blocked
    );
    queue_behind_a_fence(&mut w);
    w.run_on("holder-c", "tc", Op::upsert("detail", "c", 1));
    let mut worlds = Allowed::new(World::new(Config::default()));
    for e in &w.history.events {
        worlds.step(e, |_| true).expect("every outcome accepted");
    }
    assert!(worlds.worlds().len() > 1, "the victims give several worlds");
    for world in worlds.worlds() {
        let mut x = world.clone();
        assert_eq!(
            x.run_on("holder-e", "te", Op::await_(DbName::Res)),
            Outcome::Error(Reason::StillBlocked)
        );
    }
}
