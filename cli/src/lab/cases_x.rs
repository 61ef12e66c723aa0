//! Cases beyond the sources (`leaselab lab --beyond`), each with its expected outcome, run on
//! the model and — with `--backend pg` — on PostgreSQL, where they pin behaviour the model must
//! share with the real database.

use super::cases_f::brief;
use super::{Case, Lab};
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
    ]
}

fn s(x: &str) -> String {
    x.to_string()
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
