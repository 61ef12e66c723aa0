//! The second oracle's own tests: `ledger::cross_check` agrees on what really committed, and
//! notices any single change of the ledger or of the facts — a row dropped, duplicated, moved
//! outside its window, or with another token, writer or content; a fact dropped or changed.
//! The inputs are every committed trace whose client learned every outcome, plus hand-made
//! lease transactions and unreported statements.

use leaselab_checkers::facts::{derive, Certainty, Facts, LeaseChange};
use leaselab_checkers::ledger::cross_check;
use leaselab_model::model::{Committed, LedgerEntry};
use leaselab_model::{Config, DbName, Holder, Op, Token, World};
use leaselab_trace::replay::reexecute;
use leaselab_trace::Trace;
use std::path::PathBuf;

/// (name, facts, ledger) of every committed trace where nothing is unreported or uncertain, so
/// that every change below must show.
fn exact_cases() -> Vec<(String, Facts, Vec<LedgerEntry>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../traces");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("traces/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "trace"))
        .collect();
    files.sort();
    let mut v = Vec::new();
    for p in files {
        let text = std::fs::read_to_string(&p).expect("readable");
        let t = Trace::parse(&text, &p.display().to_string()).expect("parses");
        let r = reexecute(&t);
        let f = derive(&r.history);
        let exact = f.unreported.iter().all(|(_, n)| *n == 0)
            && f.writes.iter().all(|w| w.certainty == Certainty::Accepted);
        if exact {
            assert!(
                cross_check(&f, &r.ledger).is_empty(),
                "{}: {:?}",
                p.display(),
                cross_check(&f, &r.ledger)
            );
            v.push((p.display().to_string(), f, r.ledger));
        }
    }
    assert!(v.len() >= 20, "enough exact traces: {}", v.len());
    v
}

fn bump(t: &mut Token) {
    t.0 += 1000;
}

/// Every single change of one ledger row is noticed.
#[test]
fn any_changed_ledger_row_is_a_disagreement() {
    let mut tried = [0usize; 3];
    for (name, f, ledger) in exact_cases() {
        for i in 0..ledger.len() {
            let kind = match &ledger[i].what {
                Committed::Floor(..) => continue,
                Committed::Lease(_, None) => continue,
                Committed::Lease(..) => 0,
                Committed::Part(..) => 1,
                Committed::Publish(..) => 2,
            };
            tried[kind] += 1;
            let mut changes: Vec<(&str, Vec<LedgerEntry>)> = Vec::new();
            let mut l = ledger.clone();
            l.remove(i);
            changes.push(("dropped", l));
            let mut l = ledger.clone();
            l.insert(i + 1, ledger[i].clone());
            changes.push(("duplicated", l));
            let mut l = ledger.clone();
            l[i].seq = 0;
            changes.push(("moved before its window", l));
            let mut l = ledger.clone();
            l[i].seq = u64::MAX;
            changes.push(("moved after its window", l));
            let mut l = ledger.clone();
            match &mut l[i].what {
                Committed::Lease(_, Some(r)) => bump(&mut r.token),
                Committed::Part(_, _, r) | Committed::Publish(_, r) => bump(&mut r.token),
                _ => {}
            }
            changes.push(("another token", l));
            let mut l = ledger.clone();
            match &mut l[i].what {
                Committed::Lease(_, Some(r)) => r.holder = Holder::new("holder-z"),
                Committed::Part(_, _, r) | Committed::Publish(_, r) => {
                    r.writer = Holder::new("holder-z")
                }
                _ => {}
            }
            changes.push(("another writer", l));
            if let Committed::Part(..) = &ledger[i].what {
                let mut l = ledger.clone();
                if let Committed::Part(_, _, r) = &mut l[i].what {
                    r.content.push('!');
                }
                changes.push(("another content", l));
            }
            // A lease version names its holder only as a grant: a renewal or release keeps the
            // token of the version before it, and says nothing of who did it.
            let renews_or_releases = match &ledger[i].what {
                Committed::Lease(name, Some(r)) => {
                    ledger[..i].iter().rev().find_map(|e| match &e.what {
                        Committed::Lease(n, prev) if n == name => {
                            Some(prev.as_ref().is_some_and(|p| p.token == r.token))
                        }
                        _ => None,
                    }) == Some(true)
                }
                _ => false,
            };
            for (what, l) in changes {
                if what == "another writer" && renews_or_releases {
                    continue;
                }
                assert!(
                    !cross_check(&f, &l).is_empty(),
                    "{name}: ledger row #{i} ({:?}) {what}, and cross_check saw nothing",
                    ledger[i]
                );
            }
        }
    }
    assert!(
        tried.iter().all(|n| *n > 0),
        "lease, part and publish rows all tried: {tried:?}"
    );
}

/// Every dropped or changed fact is noticed.
#[test]
fn any_changed_fact_is_a_disagreement() {
    for (name, f, ledger) in exact_cases() {
        for i in 0..f.writes.len() {
            let mut g = f.clone();
            g.writes.remove(i);
            // Only the last write of a part in one commit is a row of its own.
            let superseded = f.writes[i + 1..].iter().any(|x| {
                x.window == f.writes[i].window
                    && x.scope == f.writes[i].scope
                    && x.part == f.writes[i].part
            });
            if !superseded {
                assert!(
                    !cross_check(&g, &ledger).is_empty(),
                    "{name}: write #{i} dropped"
                );
            }
            let mut g = f.clone();
            bump(&mut g.writes[i].token);
            if !superseded {
                assert!(
                    !cross_check(&g, &ledger).is_empty(),
                    "{name}: write #{i} token"
                );
            }
        }
        for i in 0..f.lease_changes.len() {
            let mut g = f.clone();
            g.lease_changes.remove(i);
            assert!(
                !cross_check(&g, &ledger).is_empty(),
                "{name}: lease change #{i} dropped"
            );
            let mut g = f.clone();
            match &mut g.lease_changes[i].change {
                LeaseChange::Granted { token, .. }
                | LeaseChange::Renewed { token, .. }
                | LeaseChange::Released { token } => bump(token),
            }
            assert!(
                !cross_check(&g, &ledger).is_empty(),
                "{name}: lease change #{i} token"
            );
        }
        for i in 0..f.publishes.len() {
            if !f.publishes[i].accepted {
                continue;
            }
            let mut g = f.clone();
            bump(&mut g.publishes[i].token);
            assert!(
                !cross_check(&g, &ledger).is_empty(),
                "{name}: publish #{i} token"
            );
        }
    }
}

/// A lease transaction that grants and then renews or releases the same lease commits one row
/// version: the grant (with the last expiry). The facts collapse the same way.
#[test]
fn a_lease_transaction_commits_one_version_per_row() {
    for then in [Op::renew("holder-a", 1, 900), Op::release("holder-a", 1)] {
        let mut w = World::new(Config::default());
        w.run_on("holder-a", "t", Op::begin(DbName::Lease));
        w.run_on("holder-a", "t", Op::acquire("holder-a", 500));
        w.advance(10);
        w.run_on("holder-a", "t", then.clone());
        w.run_on("holder-a", "t", Op::commit(DbName::Lease));
        w.advance(2_000);
        // A later grant to another holder, outside the transaction.
        w.run("holder-b", Op::acquire("holder-b", 500));
        let f = derive(&w.history);
        let l = w.model.ledger();
        assert_eq!(f.lease_changes.len(), 3, "{:?}", f.lease_changes);
        assert!(
            cross_check(&f, &l).is_empty(),
            "{then:?}: {:?}",
            cross_check(&f, &l)
        );
        let mut g = f.clone();
        g.lease_changes.remove(1);
        assert!(
            cross_check(&g, &l).is_empty(),
            "{then:?}: the second change of the same commit collapses into the grant"
        );
        g.lease_changes.remove(0);
        assert!(
            !cross_check(&g, &l).is_empty(),
            "{then:?}: the grant itself matters"
        );
    }
}

/// Rows nobody was told about are allowed exactly up to the number of unreported statements.
#[test]
fn unreported_statements_excuse_exactly_as_many_rows() {
    let mut w = World::new(Config::default());
    w.run("holder-a", Op::acquire("holder-a", 5_000));
    w.run("holder-a", Op::write("summary", "a", 1));
    w.run("holder-a", Op::publish("report-1", "a", 1));
    let f = derive(&w.history);
    let l = w.model.ledger();
    assert!(cross_check(&f, &l).is_empty());
    let mut extra = l.clone();
    let mut copies = 0;
    for e in &l {
        if matches!(
            e.what,
            Committed::Part(..) | Committed::Publish(..) | Committed::Lease(..)
        ) {
            let mut c = e.clone();
            c.seq = 1_000 + copies;
            match &mut c.what {
                Committed::Part(_, _, r) | Committed::Publish(_, r) => bump(&mut r.token),
                Committed::Lease(_, Some(r)) => bump(&mut r.token),
                _ => {}
            }
            extra.push(c);
            copies += 1;
        }
    }
    assert_eq!(copies, 3);
    let with = |lease: u64, res: u64| {
        let mut g = f.clone();
        g.unreported = vec![(DbName::Lease, lease), (DbName::Res, res)];
        cross_check(&g, &extra).len()
    };
    assert_eq!(with(0, 0), 3, "lease, part and publish rows unexplained");
    assert_eq!(with(1, 0), 2, "the lease row excused");
    assert_eq!(with(0, 1), 1, "the part and the publish row excused");
    assert_eq!(with(1, 1), 0);
    // Two unexplained part rows need two unreported statements.
    let mut two = extra.clone();
    let mut c = two
        .iter()
        .find(|e| matches!(e.what, Committed::Part(..)))
        .cloned()
        .expect("a part row");
    c.seq = 2_000;
    two.push(c);
    let mut g = f.clone();
    g.unreported = vec![(DbName::Lease, 1), (DbName::Res, 1)];
    assert_eq!(
        cross_check(&g, &two).len(),
        1,
        "one of two part rows excused"
    );
    g.unreported = vec![(DbName::Lease, 1), (DbName::Res, 2)];
    assert_eq!(cross_check(&g, &two).len(), 0);
}

/// A write the client could not be sure of need not be in the ledger, and counts as one
/// unexplained part row.
#[test]
fn a_maybe_write_excuses_its_absence_and_one_row() {
    let mut w = World::new(Config::default());
    w.run("holder-a", Op::acquire("holder-a", 5_000));
    w.run("holder-a", Op::write("summary", "a", 1));
    let mut f = derive(&w.history);
    let l = w.model.ledger();
    f.writes[0].certainty = Certainty::Maybe;
    assert!(cross_check(&f, &l).is_empty());
    let without: Vec<LedgerEntry> = l
        .iter()
        .filter(|e| !matches!(e.what, Committed::Part(..)))
        .cloned()
        .collect();
    assert!(cross_check(&f, &without).is_empty(), "absent is fine");
    f.writes[0].certainty = Certainty::Accepted;
    assert!(
        !cross_check(&f, &without).is_empty(),
        "but not for an accepted write"
    );
}

/// One commit keeps one row per part and per publish key: a transaction that writes the same
/// part twice and publishes the same key twice commits the last of each, and the facts say so.
#[test]
fn a_transaction_that_rewrites_a_part_and_a_key_commits_one_row_each() {
    let cfg = Config {
        publish: leaselab_model::PublishMode::Versioned,
        ..Config::default()
    };
    let mut w = World::new(cfg);
    w.run("holder-a", Op::acquire("holder-a", 5_000));
    w.run_on("holder-a", "t", Op::begin(DbName::Res));
    w.run_on("holder-a", "t", Op::fence(1));
    w.run_on("holder-a", "t", Op::upsert("summary", "one", 1));
    w.run_on("holder-a", "t", Op::upsert("detail", "d", 1));
    w.run_on("holder-a", "t", Op::upsert("summary", "two", 1));
    w.run_on("holder-a", "t", Op::publish("report-1", "p1", 1));
    w.run_on("holder-a", "t", Op::publish("report-1", "p2", 1));
    w.run_on("holder-a", "t", Op::commit(DbName::Res));
    let f = derive(&w.history);
    let l = w.model.ledger();
    assert_eq!(f.writes.len(), 3, "{:?}", f.writes);
    let parts = l
        .iter()
        .filter(|e| matches!(e.what, Committed::Part(..)))
        .count();
    assert_eq!(parts, 2, "one row per part");
    assert!(cross_check(&f, &l).is_empty(), "{:?}", cross_check(&f, &l));
    // The kept rows are the last ones: naming the first as kept disagrees.
    let mut g = f.clone();
    g.writes.swap(0, 2);
    assert!(!cross_check(&g, &l).is_empty());
    // The kept publish must be in the ledger: dropping its row disagrees.
    let without: Vec<LedgerEntry> = l
        .iter()
        .filter(|e| !matches!(e.what, Committed::Publish(..)))
        .cloned()
        .collect();
    assert!(
        !cross_check(&f, &without).is_empty(),
        "the kept publish row is missing"
    );
    // Two extra publish rows are more than the one collapsed publish explains.
    let mut extra = l.clone();
    let p = l
        .iter()
        .find(|e| matches!(e.what, Committed::Publish(..)))
        .cloned()
        .expect("a publish row");
    let mut one = p.clone();
    one.seq = 900;
    extra.push(one.clone());
    assert!(
        cross_check(&f, &extra).is_empty(),
        "one extra row: the collapsed publish"
    );
    let mut two = one;
    two.seq = 901;
    extra.push(two);
    assert!(
        !cross_check(&f, &extra).is_empty(),
        "a second one is unexplained"
    );
}

/// Maybe-writes and unreported statements add up to the rows they can explain.
#[test]
fn maybe_writes_and_unreported_statements_add_up() {
    let mut w = World::new(Config::default());
    w.run("holder-a", Op::acquire("holder-a", 5_000));
    w.run("holder-a", Op::write("summary", "a", 1));
    let mut f = derive(&w.history);
    f.writes[0].certainty = Certainty::Maybe;
    let l = w.model.ledger();
    let part = l
        .iter()
        .find(|e| matches!(e.what, Committed::Part(..)))
        .cloned()
        .expect("a part row");
    let mut extra = l.clone();
    for seq in [800, 801] {
        let mut c = part.clone();
        c.seq = seq;
        extra.push(c);
    }
    // Two rows nobody reported, one unknown outcome (the maybe-write, counted whether or not
    // its row is there): one row too many.
    assert!(!cross_check(&f, &extra).is_empty());
    // One more statement whose outcome nobody collected explains the second.
    f.unreported = vec![(DbName::Res, 1)];
    assert!(cross_check(&f, &extra).is_empty());
}

/// Two publishes of different keys in one resource transaction commit together (one window
/// end): each is its own row, and a change to either one shows. Only a later publish of the
/// *same* key in the same commit supersedes an earlier one.
#[test]
fn publishes_of_one_commit_are_each_checked() {
    let mut w = World::new(Config::default());
    w.run("holder-a", Op::acquire("holder-a", 5_000));
    w.run("holder-a", Op::begin(DbName::Res));
    w.run("holder-a", Op::publish("report-1", "a", 1));
    w.run("holder-a", Op::publish("report-2", "a", 1));
    w.run("holder-a", Op::commit(DbName::Res));
    let f = derive(&w.history);
    let l = w.model.ledger();
    let kept: Vec<_> = f.publishes.iter().filter(|p| p.accepted).collect();
    assert_eq!(kept.len(), 2, "{:?}", f.publishes);
    assert_eq!(kept[0].window.latest, kept[1].window.latest, "one commit");
    assert_ne!(kept[0].window.earliest, kept[0].window.latest);
    assert!(cross_check(&f, &l).is_empty(), "{:?}", cross_check(&f, &l));
    for i in 0..f.publishes.len() {
        if !f.publishes[i].accepted {
            continue;
        }
        let mut g = f.clone();
        bump(&mut g.publishes[i].token);
        assert!(!cross_check(&g, &l).is_empty(), "publish #{i} token");
    }
}
