//! The `sometimes` tallies count exactly what they name: one hand-made history in which every
//! property fires a known number of times, next to near misses that must not count (a pause
//! after a failed check or after the write, a pause that starts exactly at the expiry, a
//! write with the newest token, a pause in a transaction that sent nothing yet, a stale
//! write's commit counted again, a restart that failed).

use leaselab_checkers::facts::derive;
use leaselab_checkers::sometimes::{count, Counts, Sometimes};
use leaselab_model::{DbName, Expiry, History, Holder, Millis, Op, Outcome, Reason, Token};

fn history(events: &[(&str, u64, u64, Op, Outcome)]) -> History {
    let mut h = History::default();
    for (actor, at, local, op, out) in events {
        h.push(
            Millis(*at),
            Millis(*local),
            Holder::new(actor),
            None,
            op.clone(),
            out.clone(),
        );
    }
    h
}

fn granted(token: u64, expires: u64) -> Outcome {
    Outcome::Granted {
        token: Token(token),
        expires: Expiry::At(Millis(expires)),
    }
}

#[test]
fn every_property_counts_exactly_its_occurrences() {
    let h = history(&[
        ("a", 0, 0, Op::acquire("a", 1000), granted(1, 1000)),
        ("a", 10, 10, Op::check(Millis(900)), Outcome::Valid),
        ("a", 20, 20, Op::Pause, Outcome::Ok), // pause between check and write
        ("b", 1500, 1500, Op::acquire("b", 1000), granted(2, 2500)), // takeover
        ("a", 1600, 1600, Op::Resume, Outcome::Ok), // expired while paused
        (
            "a",
            1610,
            1610,
            Op::write("summary", "a", 1),
            Outcome::Accepted,
        ), // stale
        (
            "b",
            1620,
            1625, // skewed clock
            Op::renew("b", 2, 1380),
            Outcome::Renewed {
                expires: Expiry::At(Millis(3000)),
            },
        ),
        ("a", 1630, 1630, Op::check(Millis(900)), Outcome::Expired),
        ("a", 1640, 1640, Op::Pause, Outcome::Ok), // after a failed check: no
        ("a", 1700, 1700, Op::Resume, Outcome::Ok), // paused after its expiry: no
        ("a", 1710, 1710, Op::fence(1), Outcome::Blocked), // stale, blocked
        ("b", 1720, 1720, Op::upsert("summary", "b", 2), Outcome::Ok),
        ("c", 1730, 1730, Op::publish("k", "c", 1), Outcome::Rejected), // stale
        ("c", 1740, 1740, Op::upsert("detail", "c", 1), Outcome::Ok),   // autocommitted, stale
        (
            "x",
            1750,
            1750,
            Op::Restart { db: DbName::Res },
            Outcome::Ok,
        ), // restart
        (
            "x",
            1760,
            1760,
            Op::Restart { db: DbName::Res },
            Outcome::Error(Reason::NotDown),
        ),
        (
            "b",
            1770,
            1770,
            Op::write("detail", "b", 2),
            Outcome::Blocked,
        ), // blocked
        ("b", 2590, 2590, Op::check(Millis(9000)), Outcome::Valid),
        ("b", 2600, 2600, Op::Pause, Outcome::Ok), // pause between check and write
        ("b", 3500, 3500, Op::Resume, Outcome::Ok), // the renewal's expiry passed: yes
        ("d", 5000, 5000, Op::acquire("d", 100), granted(3, 5100)), // takeover
        ("d", 5100, 5100, Op::Pause, Outcome::Ok), // starts at the expiry: no
        ("d", 5200, 5200, Op::Resume, Outcome::Ok),
        ("e", 6000, 6000, Op::acquire("e", 100), granted(4, 6100)), // takeover
        ("e", 6050, 6050, Op::Pause, Outcome::Ok),
        ("e", 6100, 6100, Op::Resume, Outcome::Ok), // resumes at the expiry: yes
        ("a", 6200, 6200, Op::check(Millis(9000)), Outcome::Valid),
        (
            "a",
            6210,
            6210,
            Op::write("summary", "a", 4),
            Outcome::Accepted,
        ), // newest: no
        ("a", 6220, 6220, Op::Pause, Outcome::Ok), // after the write: no
        ("a", 6230, 6230, Op::Resume, Outcome::Ok),
        // A write sent in time and committed late: the upsert carries the newest token, the
        // holder pauses before its commit, a takeover happens meanwhile, the commit lands.
        ("a", 6300, 6300, Op::Begin { db: DbName::Res }, Outcome::Ok),
        ("a", 6310, 6310, Op::upsert("summary", "a", 4), Outcome::Ok), // newest: no
        ("a", 6320, 6320, Op::Pause, Outcome::Ok),                     // before commit: yes
        ("f", 7000, 7000, Op::acquire("f", 1000), granted(5, 8000)),   // takeover
        ("a", 7100, 7100, Op::Resume, Outcome::Ok),
        ("a", 7110, 7110, Op::Commit { db: DbName::Res }, Outcome::Ok), // stale at commit
        // In time, once: a pause inside a transaction that sent nothing yet is no pause before
        // a commit, and a write committed with the newest token is not stale.
        ("f", 7200, 7200, Op::Begin { db: DbName::Res }, Outcome::Ok),
        ("f", 7205, 7205, Op::Pause, Outcome::Ok), // nothing sent: no
        ("f", 7206, 7206, Op::Resume, Outcome::Ok),
        ("f", 7210, 7210, Op::fence(5), Outcome::Ok),
        ("f", 7215, 7215, Op::upsert("summary", "f", 5), Outcome::Ok),
        ("f", 7220, 7220, Op::Commit { db: DbName::Res }, Outcome::Ok), // newest: no
        // A stale fence and its transaction's commit: one write, counted once.
        ("a", 7300, 7300, Op::Begin { db: DbName::Res }, Outcome::Ok),
        ("a", 7310, 7310, Op::fence(4), Outcome::Ok), // stale
        ("a", 7320, 7320, Op::upsert("summary", "a", 4), Outcome::Ok),
        ("a", 7330, 7330, Op::Commit { db: DbName::Res }, Outcome::Ok), // counted already
    ]);
    let c = count(&h, &derive(&h));
    let want = [
        (Sometimes::PauseBetweenCheckAndWrite, 2),
        (Sometimes::PauseBeforeCommit, 1),
        (Sometimes::ExpiredWhilePaused, 3),
        (Sometimes::Takeover, 4),
        (Sometimes::StaleWriteAttempted, 6),
        (Sometimes::BlockedOnFloorLock, 2),
        (Sometimes::DbRestart, 1),
        (Sometimes::SkewedClock, 1),
    ];
    for (name, n) in want {
        assert_eq!(c.get(name), n, "{name}: {c}");
    }
    assert_eq!(
        c.to_string(),
        "pause-between-check-and-write=2 pause-before-commit=1 expired-while-paused=3 \
         takeover=4 stale-write-attempted=6 blocked-on-floor-lock=2 db-restart=1 skewed-clock=1"
    );
}

#[test]
fn counts_add_up_per_property() {
    let mut a = Counts::default();
    assert_eq!(a.get(Sometimes::Takeover), 0);
    let granted = |t: u64| Outcome::Granted {
        token: Token(t),
        expires: Expiry::At(Millis(1000 * t)),
    };
    let h = history(&[
        ("a", 0, 0, Op::acquire("a", 1000), granted(1)),
        ("b", 1000, 1000, Op::acquire("b", 1000), granted(2)),
        ("a", 2000, 2000, Op::acquire("a", 1000), granted(3)),
        (
            "admin",
            2100,
            2100,
            Op::Crash { db: DbName::Res },
            Outcome::Ok,
        ),
        (
            "admin",
            2200,
            2200,
            Op::Restart { db: DbName::Res },
            Outcome::Ok,
        ),
    ]);
    let run = count(&h, &derive(&h));
    assert_eq!(run.get(Sometimes::Takeover), 2, "{run}");
    assert_eq!(run.get(Sometimes::DbRestart), 1, "{run}");
    a.add(&run);
    a.add(&run);
    assert_eq!(a.get(Sometimes::Takeover), 4);
    assert_eq!(a.get(Sometimes::DbRestart), 2);
    assert_eq!(a.get(Sometimes::SkewedClock), 0);
    let mut runs = Counts::default();
    runs.add(&run.fired());
    runs.add(&Counts::default().fired());
    runs.add(&run.fired());
    assert_eq!(runs.get(Sometimes::Takeover), 2);
    assert_eq!(runs.get(Sometimes::DbRestart), 2);
    assert_eq!(runs.get(Sometimes::StaleWriteAttempted), 0);
}
