//! Where PostgreSQL races, the model allows every order: two autocommit fences wait on one
//! transaction's floor lock; when it commits, either may go first.

use leaselab_model::allowed::Allowed;
use leaselab_model::prelude::*;

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
