//! The safety checkers against their definitions. `i2`, `i3` and `acceptance` are written for
//! speed (prefix maxima over commit windows instead of comparing every pair); here random
//! facts — overlapping windows, equal tokens, several writers, scopes and leases, windows in
//! and out of order — are judged both ways, the fast way and the definition written plainly
//! as a pairwise scan, and must agree. Hand-made cases pin the rest: which holding a renewal
//! or release moves (I1), which floor reads are observations (I3), a publish dropped with the
//! kept token (acceptance).

use leaselab_checkers::facts::{
    derive, Certainty, Facts, GrantFact, LeaseChange, LeaseFact, PublishFact, Window, WriteFact,
};
use leaselab_checkers::safety::{acceptance, final_state, final_token_order, i1, i2, i3};
use leaselab_checkers::{Check, Violation};
use leaselab_model::{
    DbName, Expiry, History, Holder, LeaseName, Millis, Op, Outcome, Part, Scope, Token,
};
use proptest::prelude::*;

fn window() -> impl Strategy<Value = Window> {
    (1u64..30, 0u64..4).prop_map(|(e, d)| Window {
        earliest: e,
        latest: e + d,
    })
}

fn write() -> impl Strategy<Value = WriteFact> {
    (
        0usize..2,
        0usize..2,
        0usize..3,
        1u64..6,
        window(),
        prop::bool::weighted(0.85),
    )
        .prop_map(|(s, p, w, t, window, sure)| WriteFact {
            scope: Scope::new(["s1", "s2"][s]),
            part: Part::new(["p1", "p2"][p]),
            content: format!("c{t}"),
            writer: Holder::new(["a", "b", "c"][w]),
            token: Token(t),
            window,
            at: Millis(window.latest),
            certainty: if sure {
                Certainty::Accepted
            } else {
                Certainty::Maybe
            },
            issued: window.earliest,
            unanswered: false,
            kept_after_fail: None,
        })
}

fn grant() -> impl Strategy<Value = GrantFact> {
    (0usize..2, 0usize..3, 1u64..7, window()).prop_map(|(l, h, t, window)| GrantFact {
        lease: LeaseName::new(["l1", "l2"][l]),
        holder: Holder::new(["a", "b", "c"][h]),
        token: Token(t),
        window,
        at: Millis(window.latest),
    })
}

/// Grants as `derive` reports them (ascending by the end of their window), or in any order.
fn grants() -> impl Strategy<Value = Vec<GrantFact>> {
    (prop::collection::vec(grant(), 0..10), 0u8..3).prop_map(|(mut g, order)| {
        match order {
            0 => g.sort_by_key(|x| x.window.latest),
            1 => g.sort_by_key(|x| std::cmp::Reverse(x.window.latest)),
            _ => {}
        }
        g
    })
}

fn run(f: &Facts, check: fn(&Facts, &mut Vec<Violation>)) -> Vec<Violation> {
    let mut out = Vec::new();
    check(f, &mut out);
    out
}

/// I2 by definition: a grant violates when an earlier-reported grant of the same lease has
/// its token, or definitely committed before it with a higher one; the first such is named.
fn i2_reference(f: &Facts) -> Vec<Vec<u64>> {
    let mut out = Vec::new();
    for (j, g) in f.grants.iter().enumerate() {
        let culprit = f.grants[..j].iter().find(|p| {
            p.lease == g.lease
                && (p.token == g.token || (p.window.before(&g.window) && p.token > g.token))
        });
        if let Some(p) = culprit {
            out.push(vec![p.window.latest, g.window.latest]);
        }
    }
    out
}

/// The accepted writes of `w`'s scope that definitely committed before it.
fn before<'f>(f: &'f Facts, w: &WriteFact) -> Vec<&'f WriteFact> {
    f.writes
        .iter()
        .filter(|h| {
            h.certainty == Certainty::Accepted && h.scope == w.scope && h.window.before(&w.window)
        })
        .collect()
}

/// Reads of parts, each with a snapshot window and the row it showed (or none).
fn reads() -> impl Strategy<Value = Vec<leaselab_checkers::facts::ReadFact>> {
    use leaselab_checkers::facts::{ReadFact, ReadKey, Sees};
    let read = (0usize..2, 0usize..2, window(), 0u64..7, 0usize..3).prop_map(
        |(s, p, window, token, writer)| ReadFact {
            seq: window.latest,
            at: Millis(window.latest),
            key: ReadKey::Part(Scope::new(["s1", "s2"][s]), Part::new(["p1", "p2"][p])),
            value: Outcome::Part((token > 0).then(|| leaselab_model::PartRow {
                content: format!("c{token}"),
                writer: Holder::new(["a", "b", "c"][writer]),
                token: Token(token),
            })),
            sees: Sees::Committed(window),
        },
    );
    prop::collection::vec(read, 0..8)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, failure_persistence: None, ..ProptestConfig::default() })]

    /// A read shows too low a token (or nothing) exactly when an accepted write of its part
    /// committed definitely before its snapshot with a higher one; the violation names the
    /// highest (the latest among equals).
    #[test]
    fn final_token_order_is_its_definition(ws in prop::collection::vec(write(), 0..12), rs in reads()) {
        let f = Facts { writes: ws, reads: rs, ..Facts::default() };
        let got = run(&f, final_token_order);
        let mut k = 0;
        for r in &f.reads {
            let (leaselab_checkers::facts::ReadKey::Part(scope, part), Outcome::Part(row), Some(snap)) =
                (&r.key, &r.value, r.committed()) else { continue };
            let best = f.writes.iter()
                .filter(|w| w.certainty == Certainty::Accepted && &w.scope == scope && &w.part == part && w.window.latest < snap.earliest)
                .max_by_key(|w| (w.token, w.window.latest));
            let Some(best) = best else { continue };
            if row.as_ref().is_none_or(|x| x.token < best.token) {
                let v = got.get(k).expect("a final violation for this read");
                prop_assert_eq!(v.check, Check::Final);
                prop_assert_eq!(&v.events, &vec![best.window.latest, r.seq]);
                prop_assert!(v.message.contains(&format!("with token {} (accepted", best.token)), "{}", v.message);
                k += 1;
            }
        }
        prop_assert_eq!(got.len(), k, "{:?}", got);
    }

    #[test]
    fn i2_is_its_definition(g in grants()) {
        let f = Facts { grants: g, ..Facts::default() };
        let fast: Vec<Vec<u64>> = run(&f, i2).into_iter().map(|v| v.events).collect();
        prop_assert_eq!(fast, i2_reference(&f));
    }

    #[test]
    fn i3_and_acceptance_are_their_definitions(ws in prop::collection::vec(write(), 0..12)) {
        let f = Facts { writes: ws, ..Facts::default() };
        let mut got_i3 = Vec::new();
        i3(&f, &mut got_i3);
        let got_acc = run(&f, acceptance);
        let (mut k3, mut ka) = (0, 0);
        for w in &f.writes {
            if w.certainty != Certainty::Accepted {
                continue;
            }
            let b = before(&f, w);
            // I3: some write definitely before it has a higher token.
            if b.iter().any(|h| h.token > w.token) {
                let v = got_i3.get(k3).expect("an I3 violation for this write");
                prop_assert_eq!(v.check, Check::I3);
                prop_assert_eq!(v.events[1], w.window.latest);
                let top = b.iter().map(|h| h.token).max().expect("some");
                prop_assert!(
                    b.iter().any(|h| h.token == top && h.window.latest == v.events[0]),
                    "I3 names a highest-token write before it: {:?}", v
                );
                k3 += 1;
            }
            // Acceptance: a newer holding's write came before it — a higher token, or the
            // same token from another writer.
            let newer = |h: &&&WriteFact| h.token > w.token || (h.token == w.token && h.writer != w.writer);
            if b.iter().any(|h| newer(&h)) {
                let v = got_acc.get(ka).expect("an acceptance violation for this write");
                prop_assert_eq!(v.events[1], w.window.latest);
                prop_assert!(
                    b.iter().filter(newer).any(|h| h.window.latest == v.events[0]),
                    "acceptance names a newer holding's write: {:?}", v
                );
                ka += 1;
            }
        }
        prop_assert_eq!(got_i3.len(), k3, "{:?}", got_i3);
        prop_assert_eq!(got_acc.len(), ka, "{:?}", got_acc);
    }
}

fn lease_fact(lease: &str, change: LeaseChange, seq: u64) -> LeaseFact {
    LeaseFact {
        lease: LeaseName::new(lease),
        change,
        window: Window {
            earliest: seq,
            latest: seq,
        },
    }
}

fn grant_change(holder: &str, token: u64, expires: u64, now: u64) -> LeaseChange {
    LeaseChange::Granted {
        holder: Holder::new(holder),
        token: Token(token),
        expires: Expiry::At(Millis(expires)),
        now: Millis(now),
    }
}

/// A renewal or release moves the holding of its own lease and token — not another lease's
/// holding with the same token, nor its lease's holding with another token.
#[test]
fn renewals_and_releases_move_only_their_own_holding() {
    let renew = |token: u64, to: u64| LeaseChange::Renewed {
        token: Token(token),
        expires: Expiry::At(Millis(to)),
    };
    let base = |then: LeaseChange, lease: &str| Facts {
        lease_changes: vec![
            lease_fact("l1", grant_change("a", 1, 100, 0), 1),
            lease_fact("l2", grant_change("b", 1, 100, 0), 2),
            lease_fact("l1", grant_change("c", 2, 5_000, 4_000), 3),
            lease_fact(lease, then, 4),
            lease_fact("l1", grant_change("d", 3, 9_000, 6_000), 5),
        ],
        ..Facts::default()
    };
    let i1_of = |f: &Facts| run(f, i1).len();
    // l1's token 2 (holder c) renewed to 7000: d's grant at 6000 overlaps it.
    assert_eq!(i1_of(&base(renew(2, 7_000), "l1")), 1);
    // The same renewal of l2, or of l1's expired token 1, moves nothing of c's holding.
    assert_eq!(i1_of(&base(renew(2, 7_000), "l2")), 0);
    assert_eq!(i1_of(&base(renew(1, 7_000), "l1")), 0);
    // Released: c's holding ends, d's grant is fine; a release of another lease or token
    // leaves c's renewed holding live.
    let two = |then: LeaseChange, lease: &str| {
        let mut f = base(renew(2, 7_000), "l1");
        f.lease_changes.insert(4, lease_fact(lease, then, 4));
        for (i, lf) in f.lease_changes.iter_mut().enumerate() {
            lf.window = Window {
                earliest: i as u64 + 1,
                latest: i as u64 + 1,
            };
        }
        f
    };
    let release = |token: u64| LeaseChange::Released {
        token: Token(token),
    };
    assert_eq!(i1_of(&two(release(2), "l1")), 0);
    assert_eq!(i1_of(&two(release(2), "l2")), 1);
    assert_eq!(i1_of(&two(release(1), "l1")), 1);
}

/// A publish dropped because the kept one has the same token (a retry) is no violation; one
/// with a newer token is.
#[test]
fn a_dropped_publish_is_stale_only_with_a_newer_token() {
    let publish = |writer: &str, token: u64, accepted: bool, seq: u64| PublishFact {
        key: "report-1".into(),
        writer: Holder::new(writer),
        token: Token(token),
        accepted,
        window: Window {
            earliest: seq,
            latest: seq,
        },
        at: Millis(seq),
    };
    let f = |p: Vec<PublishFact>| Facts {
        publishes: p,
        ..Facts::default()
    };
    assert!(run(
        &f(vec![publish("a", 1, true, 1), publish("a", 1, false, 2)]),
        acceptance
    )
    .is_empty());
    assert_eq!(
        run(
            &f(vec![publish("a", 1, true, 1), publish("b", 2, false, 2)]),
            acceptance
        )
        .len(),
        1
    );
}

fn hand(events: &[(&str, &str, Op, Outcome)]) -> History {
    let mut h = History::default();
    for (i, (actor, conn, op, out)) in events.iter().enumerate() {
        h.push(
            Millis(i as u64),
            Millis(i as u64),
            Holder::new(actor),
            Some(leaselab_model::ConnId::new(conn)),
            op.clone(),
            out.clone(),
        );
    }
    h
}

fn floor(t: u64) -> Outcome {
    Outcome::Floor(Some(Token(t)))
}

fn i3_of(h: &History) -> usize {
    let mut out = Vec::new();
    i3(&derive(h), &mut out);
    out.len()
}

/// A floor read inside a transaction that passed its own fence (directly or after waiting)
/// sees its own uncommitted floor: no observation. Once the transaction ends — commit,
/// rollback, disconnect, crash — reads on that connection observe the committed floor again.
#[test]
fn floor_reads_observe_the_committed_floor_only_outside_an_own_fence() {
    for passed in [
        vec![("a", "t", Op::fence(5), Outcome::Passed)],
        vec![
            ("a", "t", Op::fence(5), Outcome::Blocked),
            ("a", "t", Op::Await { db: DbName::Res }, Outcome::Passed),
        ],
    ] {
        let mut ev = vec![("a", "t", Op::begin(DbName::Res), Outcome::Ok)];
        ev.extend(passed);
        ev.push(("a", "t", Op::read_floor(), floor(5)));
        for end in [
            Op::rollback(DbName::Res),
            Op::Disconnect { db: DbName::Res },
            Op::Crash { db: DbName::Res },
        ] {
            let mut e = ev.clone();
            e.push(("a", "t", end.clone(), Outcome::Ok));
            e.push(("b", "u", Op::read_floor(), floor(2)));
            assert_eq!(i3_of(&hand(&e)), 0, "own floor is no observation ({end:?})");
            // After the end, reads on the same connection are observations again.
            e.push(("a", "t", Op::read_floor(), floor(3)));
            e.push(("a", "t", Op::read_floor(), floor(2)));
            assert_eq!(i3_of(&hand(&e)), 1, "a regression after {end:?}");
        }
    }
    // A plain read-committed transaction without a fence observes the committed floor.
    let e = hand(&[
        ("a", "t", Op::begin(DbName::Res), Outcome::Ok),
        ("a", "t", Op::read_floor(), floor(3)),
        ("a", "t", Op::read_floor(), floor(2)),
    ]);
    assert_eq!(i3_of(&e), 1);
    let e = hand(&[
        ("a", "t", Op::begin(DbName::Res), Outcome::Ok),
        ("a", "t", Op::read_floor(), floor(3)),
        ("a", "t", Op::commit(DbName::Res), Outcome::Ok),
        ("a", "t", Op::read_floor(), floor(2)),
    ]);
    assert_eq!(i3_of(&e), 1);
}

/// The acceptance message says which kind of newer holding it was: a reused token (two holders
/// with one token, I2's failure) or a higher one.
#[test]
fn acceptance_names_a_reused_token_apart_from_a_higher_one() {
    let w = |writer: &str, token: u64, seq: u64| WriteFact {
        scope: Scope::new("s"),
        part: Part::new("p"),
        content: "c".into(),
        writer: Holder::new(writer),
        token: Token(token),
        window: Window {
            earliest: seq,
            latest: seq,
        },
        at: Millis(seq),
        certainty: Certainty::Accepted,
        issued: seq,
        unanswered: false,
        kept_after_fail: None,
    };
    let judge = |ws: Vec<WriteFact>| {
        run(
            &Facts {
                writes: ws,
                ..Facts::default()
            },
            acceptance,
        )
    };
    let reused = judge(vec![w("b", 2, 1), w("a", 2, 2)]);
    assert!(
        reused[0]
            .message
            .starts_with("token 2 was used by two holders"),
        "{reused:?}"
    );
    let stale = judge(vec![w("b", 3, 1), w("a", 2, 2)]);
    assert!(
        stale[0].message.starts_with("stale holder's write kept"),
        "{stale:?}"
    );
}

/// I1 at a grant considers every version the previous holding may have had then: a renewal
/// whose commit window overlaps the grant may have come first. Unexpired in every one: a
/// violation, naming the newest possible version; expired (or released) in any one: none.
#[test]
fn i1_judges_every_version_the_previous_holding_may_have_had() {
    let renew = |to: u64| LeaseChange::Renewed {
        token: Token(1),
        expires: Expiry::At(Millis(to)),
    };
    let with = |then: LeaseChange, to_before: u64| {
        let mut late = lease_fact("l1", then, 5);
        late.window.earliest = 2;
        let mut before = lease_fact("l1", renew(to_before), 2);
        before.window.earliest = 2;
        Facts {
            lease_changes: vec![
                lease_fact("l1", grant_change("a", 1, 1_000, 0), 1),
                before,
                lease_fact("l1", grant_change("b", 2, 2_000, 500), 4),
                late,
            ],
            ..Facts::default()
        }
    };
    // Versions possible at b's grant (t=500): a's renewal to 900 (event 2, definitely before),
    // and the late renewal to 1100 (window 2..5). Both unexpired: I1, naming the late one.
    let v = run(&with(renew(1_100), 900), i1);
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(v[0].events, vec![5, 4]);
    // The late change a release (or a renewal to an expired instant): it may have come first.
    let released = LeaseChange::Released { token: Token(1) };
    assert!(run(&with(released, 900), i1).is_empty());
    assert!(run(&with(renew(400), 900), i1).is_empty());
    // The grant's own version (1000) was definitely replaced before b's grant and does not
    // count; the renewal to 400 may be the last version then, and it had expired: none.
    assert_eq!(run(&with(renew(1_100), 400), i1).len(), 0);
}

/// The floor's running maximum: a read whose snapshot window overlaps an earlier one is not
/// ordered after it, but a read definitely after both is compared with the highest of them,
/// and the violation names the latest read that saw that highest floor.
#[test]
fn a_floor_read_is_compared_with_the_highest_floor_seen_definitely_before_it() {
    use leaselab_checkers::facts::{ReadFact, ReadKey, Sees};
    let read = |seq: u64, from: u64, floor: u64| ReadFact {
        seq,
        at: Millis(seq),
        key: ReadKey::Floor(Scope::new("s")),
        value: leaselab_model::Outcome::Floor(Some(Token(floor))),
        sees: Sees::Committed(Window {
            earliest: from,
            latest: seq,
        }),
    };
    let f = |reads: Vec<ReadFact>| Facts {
        reads,
        ..Facts::default()
    };
    // 5 at #1; 3 somewhere in #1..#3 (not after #1: no verdict); 4 at #4: below 5.
    let v = run(&f(vec![read(1, 1, 5), read(3, 1, 3), read(4, 4, 4)]), i3);
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(v[0].events, vec![1, 4]);
    // 5 at #1 and at #2, then 4 at #3: the latest read of the highest floor is named.
    let v = run(&f(vec![read(1, 1, 5), read(2, 2, 5), read(3, 3, 4)]), i3);
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(v[0].events, vec![2, 3]);
}

/// `final_state` is both halves: the token order, and a row some statement wrote.
#[test]
fn final_state_checks_the_order_and_what_was_written() {
    let h = hand(&[
        ("a", "a", Op::write("summary", "x", 2), Outcome::Accepted),
        (
            "b",
            "b",
            Op::read_part("summary"),
            Outcome::Part(Some(leaselab_model::PartRow {
                content: "x".into(),
                writer: Holder::new("a"),
                token: Token(1),
            })),
        ),
    ]);
    let f = derive(&h);
    let mut v = Vec::new();
    final_state(&f, &mut v);
    assert_eq!(v.len(), 2, "{v:?}");
    assert!(v[0]
        .message
        .contains("the final content must come from the highest accepted token"));
    assert!(
        v[1].message.contains("token 1 is a phantom"),
        "{}",
        v[1].message
    );
}
