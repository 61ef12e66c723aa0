//! The key events of a story: what a short picture keeps when a run has hundreds of events.
//! The stale write the checkers name (or, in a clean run, the stale write the fence refused)
//! comes first, then what made it stale — its holding, the pause before it, the expiry, the
//! takeover — then everything else by kind.

use crate::story::{Clock, End, Mark, Story, Verdict, Write};
use leaselab_model::{Millis, Token};

/// What happened at a key moment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A lease was granted with this token.
    Grant(Token),
    /// A holding expired by the database clock without a renewal.
    Expire(Token),
    /// A holding was released.
    Release(Token),
    /// The holder's own deadline for this token passed, by the clock it read (placed on the
    /// database clock's axis).
    Deadline(Token, Clock),
    /// The holder stopped (`ms` long, `None` if it never resumed); `true`: before a commit,
    /// statements of its write already sent.
    Pause(Option<u64>, bool),
    /// The holder ran again after `ms`.
    Resume(u64),
    /// A write attempt and its verdict.
    Write(Write),
    /// Anything else the story marks.
    Mark(Mark),
}

/// One key event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyEvent {
    /// When (database clock).
    pub at: Millis,
    /// The history event it comes from (for ordering and for pointing at).
    pub seq: u64,
    /// The lane (holder index in [`Story::lanes`]); `None` for database-wide events.
    pub lane: Option<usize>,
    /// What.
    pub kind: Kind,
    /// 0 is the most telling.
    rank: u8,
}

/// The write the picture is about: the stale write a violation names, else the first stale
/// write at all (the one a fence refused).
pub fn focus(story: &Story) -> Option<&Write> {
    story
        .stale_violating_write()
        .or_else(|| story.writes.iter().find(|w| w.stale))
}

/// The span a picture crops to: from the first moment that explains the focus write (the
/// grant it carried, the check it passed, the pause, the newer grant) to the last write of its
/// violating pair, padded by a tenth on each side. `None` when that is most of the run anyway,
/// or nothing is stale.
pub fn window(story: &Story) -> Option<(Millis, Millis)> {
    let w = focus(story)?;
    let mut from = w.at;
    let mut to = w.at;
    let mut take = |t: Millis| {
        from = from.min(t);
        to = to.max(t);
    };
    for h in &story.holdings {
        if (h.holder == w.holder && h.token == w.token) || (h.token > w.token && h.seq < w.seq) {
            take(h.from);
        }
    }
    for p in &story.pauses {
        if p.holder == w.holder && p.from <= w.at && w.at <= p.to {
            take(p.from);
        }
    }
    for v in story
        .violations
        .iter()
        .filter(|v| v.events.contains(&w.seq))
    {
        for x in story.writes.iter().filter(|x| v.events.contains(&x.seq)) {
            take(x.at);
        }
    }
    let pad = Millis(((to.0 - from.0) / 10).max(100));
    let (from, to) = (
        Millis(from.0.saturating_sub(pad.0)),
        Millis((to.0 + pad.0).min(story.end.0)),
    );
    (to.0 - from.0 < story.end.0 / 2).then_some((from, to))
}

/// Every key event of `story`, ranked, in time order.
pub fn all(story: &Story) -> Vec<KeyEvent> {
    let lane = |h: &leaselab_model::Holder| story.lanes.iter().position(|l| l == h);
    let focus = focus(story);
    // The holding the focus write carried, and the first one that made it stale.
    let own = focus.and_then(|w| {
        story
            .holdings
            .iter()
            .rev()
            .find(|h| h.holder == w.holder && h.token == w.token)
    });
    let newer = focus.and_then(|w| {
        story
            .holdings
            .iter()
            .find(|h| h.token > w.token && h.seq < w.seq)
    });
    let pause_before = focus.and_then(|w| {
        story
            .pauses
            .iter()
            .filter(|p| p.holder == w.holder && p.from <= w.at)
            .max_by_key(|p| p.from)
    });
    let mut out = Vec::new();
    let mut push = |at, seq, lane, kind, rank| {
        out.push(KeyEvent {
            at,
            seq,
            lane,
            kind,
            rank,
        })
    };
    for h in &story.holdings {
        let key = Some(h) == own || Some(h) == newer || story.violating.contains(&h.seq);
        push(
            h.from,
            h.seq,
            lane(&h.holder),
            Kind::Grant(h.token),
            if story.violating.contains(&h.seq) {
                0
            } else if key {
                1
            } else {
                3
            },
        );
        match h.end {
            End::Expired => push(
                h.until,
                h.seq,
                lane(&h.holder),
                Kind::Expire(h.token),
                if Some(h) == own { 1 } else { 5 },
            ),
            End::Released => push(
                h.until,
                h.seq,
                lane(&h.holder),
                Kind::Release(h.token),
                if Some(h) == newer { 4 } else { 6 },
            ),
            End::Open => {}
        }
        if let Some(d) = h.local_until {
            push(
                d,
                h.seq,
                lane(&h.holder),
                Kind::Deadline(h.token, h.local_clock),
                // After the takeover: the newer grant is what made the write stale.
                if Some(h) == own { 2 } else { 7 },
            );
        }
    }
    // The last check the focus write's holder passed before it: what it believed.
    let check_before = focus.and_then(|w| {
        story
            .moments
            .iter()
            .filter(|m| {
                matches!(&m.mark, Mark::CheckPassed(h, ..) if *h == w.holder) && m.seq < w.seq
            })
            .max_by_key(|m| m.seq)
    });
    for p in &story.pauses {
        if p.resumed && p.to == p.from {
            // A pause of no length (a step that yields, not a stop) shows nothing.
            continue;
        }
        let key = Some(p) == pause_before;
        let r = if key { 1 } else { 4 };
        push(
            p.from,
            p.seqs.0,
            lane(&p.holder),
            Kind::Pause(
                p.resumed.then(|| p.to.since(p.from)),
                p.before_commit.is_some(),
            ),
            r,
        );
        if p.resumed {
            push(
                p.to,
                p.seqs.1,
                lane(&p.holder),
                Kind::Resume(p.to.since(p.from)),
                r,
            );
        }
    }
    for w in &story.writes {
        let rank = if w.violating || Some(w) == focus {
            0
        } else if newer.is_some_and(|n| n.holder == w.holder && n.token == w.token) {
            2
        } else if w.stale {
            3
        } else if w.verdict == Verdict::Rejected {
            4
        } else {
            5
        };
        push(w.at, w.seq, lane(&w.holder), Kind::Write(w.clone()), rank);
    }
    for m in &story.moments {
        let (l, rank) = match &m.mark {
            Mark::Crash(_) | Mark::Restart(_) => (None, 2),
            Mark::Lost(h) => (lane(h), 3),
            Mark::RenewRefused(h, _) | Mark::CheckExpired(h, ..) => (lane(h), 6),
            Mark::CheckPassed(h, ..) => (lane(h), if Some(m) == check_before { 1 } else { 8 }),
            Mark::FloorCheckPassed(h, _) | Mark::ClockStep(h, ..) => (lane(h), 1),
            Mark::Waits(h) | Mark::HoldsFloor(h, _) => (lane(h), 2),
            Mark::Floor(_, back) => (None, if back.is_some() { 0 } else { 7 }),
        };
        push(m.at, m.seq, l, Kind::Mark(m.mark.clone()), rank);
    }
    out.sort_by_key(|k| (k.at, k.seq, k.rank));
    out
}

/// At most `cap` key events, the most telling ones, in time order; and how many there were.
pub fn select(story: &Story, cap: usize) -> (Vec<KeyEvent>, usize) {
    let all = all(story);
    let total = all.len();
    let mut idx: Vec<usize> = (0..total).collect();
    idx.sort_by_key(|&i| (all[i].rank, all[i].at, all[i].seq));
    idx.truncate(cap);
    idx.sort_unstable();
    (idx.into_iter().map(|i| all[i].clone()).collect(), total)
}
