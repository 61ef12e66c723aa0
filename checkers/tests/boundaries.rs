//! The edges of the rules that settle unknown outcomes and of the final token order, on facts
//! built by hand: a window one position either side of a read's snapshot, a known change that
//! sets the very value a read shows, equal keys among one part's writes. Each case states the
//! rule it pins; a history reaches most of these edges only by accident.

use leaselab_checkers::facts::{
    Certainty, Facts, LeaseChange, LeaseFact, PublishFact, ReadFact, ReadKey, Sees, UnknownLease,
    UnknownPublish, Window, WriteFact,
};
use leaselab_checkers::safety::{acceptance, final_token_order};
use leaselab_checkers::unknown::settle;
use leaselab_checkers::Settled;
use leaselab_model::{
    Expiry, Holder, LeaseName, LeaseRow, Millis, Outcome, Part, PartRow, Scope, Token,
};
use std::borrow::Cow;

fn w(earliest: u64, latest: u64) -> Window {
    Window { earliest, latest }
}

fn settled(f: Facts) -> Vec<Settled> {
    settle(Cow::Owned(f)).0
}

// ---- lease reads -------------------------------------------------------------------------

/// Holder a's grant (token 1, expiry 1000) at `grant`; then whatever `more` adds.
fn lease_facts(grant: Window, more: Vec<LeaseFact>, unknown: Vec<UnknownLease>) -> Facts {
    let mut lease_changes = vec![LeaseFact {
        lease: LeaseName::new("l"),
        change: LeaseChange::Granted {
            holder: Holder::new("a"),
            token: Token(1),
            expires: Expiry::At(Millis(1_000)),
            now: Millis(0),
        },
        window: grant,
    }];
    lease_changes.extend(more);
    Facts {
        lease_changes,
        lease_unknown: unknown,
        ..Facts::default()
    }
}

/// A renewal of a's token 1 by 1000 ms, issued at server time 500, its commit in `window`
/// (server time up to 600): the expiry it set lies in 1500..=1600.
fn unknown_renewal(window: Window) -> UnknownLease {
    UnknownLease {
        lease: LeaseName::new("l"),
        holder: Holder::new("a"),
        token: Token(1),
        since: window.earliest.saturating_sub(1),
        renew_ttl: Some(1_000),
        window,
        from: Millis(500),
        to: Millis(600),
    }
}

fn renewed(expires: u64, window: Window) -> LeaseFact {
    LeaseFact {
        lease: LeaseName::new("l"),
        change: LeaseChange::Renewed {
            token: Token(1),
            expires: Expiry::At(Millis(expires)),
        },
        window,
    }
}

fn lease_read(seq: u64, snapshot: Window, expires: u64) -> ReadFact {
    ReadFact {
        seq,
        at: Millis(seq * 100),
        key: ReadKey::Lease(LeaseName::new("l")),
        value: Outcome::Lease(Some(LeaseRow {
            holder: Holder::new("a"),
            token: Token(1),
            expires_at: Expiry::At(Millis(expires)),
        })),
        sees: Sees::Committed(snapshot),
    }
}

/// A read showing an expiry the unknown renewal can have set settles it as applied — unless a
/// known change that can have committed before the read (its window starting before the
/// snapshot's end) set the same value: then either can be what the read saw.
#[test]
fn a_known_change_setting_the_shown_expiry_keeps_the_renewal_open() {
    let case = |known_at: Window| {
        let mut f = lease_facts(
            w(1, 1),
            vec![renewed(1_550, known_at)],
            vec![unknown_renewal(w(3, 4))],
        );
        f.reads.push(lease_read(6, w(6, 6), 1_550));
        settled(f)
    };
    // The known renewal committed before the read: nothing settled.
    assert!(case(w(2, 2)).is_empty(), "{:?}", case(w(2, 2)));
    assert!(case(w(5, 5)).is_empty(), "{:?}", case(w(5, 5)));
    // It commits at the read's position or later: the read cannot have seen it; only the
    // unknown renewal can have set 1550.
    for after in [w(6, 6), w(7, 8)] {
        let s = case(after);
        assert_eq!(s.len(), 1, "{s:?}");
        assert!(s[0].applied);
        assert_eq!((s[0].event, s[0].by), (2, 6));
    }
}

/// A read still showing the grant's expiry, definitely after the unknown renewal, settles it as
/// not applied — only when the shown version committed strictly before the renewal's window,
/// no other change can have committed between, and the renewal's window ends strictly before
/// the read's snapshot begins.
#[test]
fn a_renewal_is_ruled_out_only_strictly_inside_its_bounds() {
    let not_applied = |f: Facts| {
        let s = settled(f);
        assert!(s.iter().all(|s| !s.applied), "{s:?}");
        s.len()
    };
    let with = |grant: Window, more: Vec<LeaseFact>, u: Window, read: Window| {
        let mut f = lease_facts(grant, more, vec![unknown_renewal(u)]);
        f.reads.push(lease_read(read.latest, read, 1_000));
        not_applied(f)
    };
    // The plain case: grant at 1, renewal in 3..=4, read at 6.
    assert_eq!(with(w(1, 1), vec![], w(3, 4), w(6, 6)), 1);
    // The shown version may have committed at the renewal's first position: it may be the
    // renewal's successor, not its predecessor.
    assert_eq!(with(w(1, 3), vec![], w(3, 4), w(6, 6)), 0);
    assert_eq!(with(w(1, 2), vec![], w(3, 4), w(6, 6)), 1);
    // The renewal's window ends where the read's snapshot begins: it may be after the read.
    assert_eq!(with(w(1, 1), vec![], w(3, 6), w(6, 6)), 0);
    assert_eq!(with(w(1, 1), vec![], w(3, 5), w(6, 6)), 1);
    // Another known change of the holding, not definitely before the renewal (its window
    // ends at the renewal's first position), that can have committed before the read: the
    // read may show what came back after it.
    assert_eq!(
        with(w(1, 1), vec![renewed(1_200, w(2, 3))], w(3, 4), w(6, 6)),
        0
    );
    // Definitely before the renewal: it does not stand between.
    assert_eq!(
        with(w(1, 1), vec![renewed(1_200, w(2, 2))], w(3, 4), w(6, 6)),
        1
    );
    // A known change whose window starts at the read's snapshot end cannot be before it.
    assert_eq!(
        with(w(1, 1), vec![renewed(1_200, w(6, 7))], w(3, 4), w(6, 6)),
        1
    );
    assert_eq!(
        with(w(1, 1), vec![renewed(1_200, w(5, 7))], w(3, 4), w(6, 6)),
        0
    );
}

// ---- part reads --------------------------------------------------------------------------

fn part_write(content: &str, token: u64, window: Window, certainty: Certainty) -> WriteFact {
    WriteFact {
        scope: Scope::new("s"),
        part: Part::new("p"),
        content: content.into(),
        writer: Holder::new("a"),
        token: Token(token),
        window,
        at: Millis(window.latest * 100),
        certainty,
        issued: window.earliest,
        unanswered: false,
        kept_after_fail: None,
    }
}

fn part_read(seq: u64, content: &str, token: u64) -> ReadFact {
    ReadFact {
        seq,
        at: Millis(seq * 100),
        key: ReadKey::Part(Scope::new("s"), Part::new("p")),
        value: Outcome::Part(Some(PartRow {
            content: content.into(),
            writer: Holder::new("a"),
            token: Token(token),
        })),
        sees: Sees::Committed(w(seq, seq)),
    }
}

/// A read settles a write nobody heard back from only when that write is the one candidate:
/// when the only write with that version that can have committed before the read was
/// accepted, the read shows the accepted one and settles nothing.
#[test]
fn a_read_of_an_accepted_version_settles_no_unknown_write() {
    let f = |maybe: Window| Facts {
        writes: vec![
            part_write("x", 1, w(1, 1), Certainty::Accepted),
            part_write("x", 1, maybe, Certainty::Maybe),
        ],
        reads: vec![part_read(5, "x", 1)],
        ..Facts::default()
    };
    // The unknown one can only have committed after the read.
    assert!(settled(f(w(6, 7))).is_empty());
    // Both can have: neither is shown to be the one.
    assert!(settled(f(w(2, 3))).is_empty());
    // Alone, the unknown one is settled by the read.
    let alone = Facts {
        writes: vec![part_write("x", 1, w(2, 7), Certainty::Maybe)],
        reads: vec![part_read(5, "x", 1)],
        ..Facts::default()
    };
    let s = settled(alone);
    assert_eq!(s.len(), 1, "{s:?}");
    assert!(s[0].applied && s[0].by == 5);
}

/// One part's writes with equal tokens committed at one position (two upserts of one
/// transaction): the later statement's version is the row's, and the one a final-order
/// violation names (here by its writer).
#[test]
fn among_equal_tokens_at_one_commit_the_later_write_is_named() {
    let mut second = part_write("second", 2, w(3, 3), Certainty::Accepted);
    second.writer = Holder::new("b");
    let f = Facts {
        writes: vec![part_write("first", 2, w(3, 3), Certainty::Accepted), second],
        reads: vec![part_read(5, "old", 1)],
        ..Facts::default()
    };
    let mut out = Vec::new();
    final_token_order(&f, &mut out);
    assert_eq!(out.len(), 1, "{out:?}");
    assert!(
        out[0].message.contains("but b's write"),
        "{}",
        out[0].message
    );
}

// ---- publishes ---------------------------------------------------------------------------

fn publish(writer: &str, token: u64, accepted: bool, seq: u64) -> PublishFact {
    PublishFact {
        key: "report-1".into(),
        writer: Holder::new(writer),
        token: Token(token),
        accepted,
        window: w(seq, seq),
        at: Millis(seq * 100),
    }
}

/// A certain acceptance violation of publishes names the older publishes nobody heard back
/// from only when there are some.
#[test]
fn a_certain_dropped_publish_names_unknown_older_ones_only_when_there_are() {
    let judged = |unknown: Vec<UnknownPublish>| {
        let f = Facts {
            publishes: vec![publish("a", 1, true, 1), publish("b", 3, false, 4)],
            unknown_publishes: unknown,
            ..Facts::default()
        };
        let mut out = Vec::new();
        acceptance(&f, &mut out);
        assert_eq!(out.len(), 1, "{out:?}");
        out.remove(0).message
    };
    let plain = judged(vec![]);
    assert!(!plain.contains("nobody heard back from"), "{plain}");
    let older = judged(vec![UnknownPublish {
        fact: publish("c", 2, true, 2),
        issued: 2,
    }]);
    assert!(
        older.contains("one of the publishes nobody heard back from (event #2)"),
        "{older}"
    );
}

// ---- final content -----------------------------------------------------------------------

/// A final read shows only what a statement issued before its snapshot could end wrote: one
/// issued at the very position where the snapshot is taken comes too late.
#[test]
fn a_version_attempted_at_the_snapshot_end_is_not_visible() {
    use leaselab_checkers::facts::derive;
    use leaselab_checkers::safety::final_state;
    use leaselab_model::{History, Op};
    let mut h = History::default();
    let a = Holder::new("a");
    h.push(
        Millis(10),
        Millis(10),
        a.clone(),
        None,
        Op::write("p", "x", 1),
        Outcome::Accepted,
    );
    let row = PartRow {
        content: "x".into(),
        writer: a.clone(),
        token: Token(1),
    };
    h.push(
        Millis(20),
        Millis(20),
        a,
        None,
        Op::read_part("p"),
        Outcome::Part(Some(row)),
    );
    let judged = |snapshot: Window| {
        let mut f = derive(&h);
        assert_eq!(f.reads.len(), 1, "{:?}", f.reads);
        f.reads[0].sees = Sees::Committed(snapshot);
        let mut out = Vec::new();
        final_state(&f, &mut out);
        out
    };
    assert!(judged(w(2, 2)).is_empty());
    let early = judged(w(1, 1));
    assert_eq!(early.len(), 1, "{early:?}");
    assert!(early[0].message.contains("no statement before it wrote"));
}
