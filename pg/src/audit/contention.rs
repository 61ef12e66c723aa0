//! How hard an audit tried: how often its runs reached the interleavings where lease bugs live,
//! counted from what PostgreSQL answered and where operations paused. A clean audit whose
//! counts are zero proves little: the schedules never put a holder where a mistake shows.
//!
//! A statement is in flight on its connection (a holder may call the lease on two); *another*
//! holder's statement is one of a different holder, whichever connection it used.
//!
//! Each count is of one run's history; an audit sums them over its drawn schedules (the runs
//! that shrink a failure are not counted). A statement whose answer was `blocked` is *in
//! flight* until its holder's `await` on that database collects it (or its connection ends); it
//! paused inside itself when the schedule said so ([`Pauses`]), else it waited on a lock.

use super::Pauses;
use leaselab_model::{ConnId, DbName, Event, Expiry, History, Holder, Op, Outcome, Reason};
use std::collections::BTreeMap;

/// The interleavings counted, in report order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Contention {
    /// A statement waited on a lock while another holder's operation on the same database was
    /// paused inside itself (its transaction, and the locks it took, held open).
    WaitedOnAPausedHolder,
    /// A holder was granted the lease while another holder's write with an older token was in
    /// flight (paused inside itself, or waiting on a lock).
    TakeoverDuringOpenWrite,
    /// A write was sent with a token below one already granted to another holder.
    StaleWriteAfterGrant,
    /// An acquire waited on a lock while another holder's acquire was in flight and the lease
    /// it last granted had expired (or none was granted yet): two acquires racing for a free
    /// row.
    AcquiresRacedOnAFreeRow,
}

impl Contention {
    /// Every count, in report order.
    pub const ALL: [Contention; 4] = [
        Contention::WaitedOnAPausedHolder,
        Contention::TakeoverDuringOpenWrite,
        Contention::StaleWriteAfterGrant,
        Contention::AcquiresRacedOnAFreeRow,
    ];

    /// The name summaries print.
    pub const fn name(self) -> &'static str {
        match self {
            Contention::WaitedOnAPausedHolder => "waited-on-a-paused-holder",
            Contention::TakeoverDuringOpenWrite => "takeover-during-open-write",
            Contention::StaleWriteAfterGrant => "stale-write-after-grant",
            Contention::AcquiresRacedOnAFreeRow => "acquires-raced-on-a-free-row",
        }
    }
}

/// A statement in flight: its event and whether it paused (else it waits on a lock).
#[derive(Clone, Copy)]
struct InFlight<'a> {
    event: &'a Event,
    paused: bool,
}

/// How often `history` (a run whose operations paused where `pauses` says) reached each
/// interleaving of [`Contention::ALL`], in that order.
pub fn count(history: &History, pauses: &Pauses) -> [(Contention, u64); 4] {
    let mut n: BTreeMap<Contention, u64> = BTreeMap::new();
    let mut in_flight: BTreeMap<(ConnId, DbName), InFlight<'_>> = BTreeMap::new();
    // The highest token granted so far, with its holder, and the last grant's expiry.
    let mut newest: Option<(u64, &Holder)> = None;
    let mut expires: Option<Expiry> = None;
    for e in &history.events {
        let others = |db: DbName| {
            in_flight
                .iter()
                .filter(move |((_, d), f)| f.event.actor != e.actor && *d == db)
                .map(|(_, f)| *f)
        };
        let conn = e.conn_id();
        if let Op::Write { token, .. } = &e.op {
            if newest.is_some_and(|(t, h)| t > token.0 && h != &e.actor) {
                *n.entry(Contention::StaleWriteAfterGrant).or_default() += 1;
            }
        }
        if e.outcome == Outcome::Blocked {
            let paused = pauses.contains_key(&e.seq);
            if let Some(db) = e.op.db() {
                if !paused && others(db).any(|f| f.paused) {
                    *n.entry(Contention::WaitedOnAPausedHolder).or_default() += 1;
                }
                let free = expires.is_none_or(|x| x.is_expired_at(e.at));
                if !paused
                    && matches!(e.op, Op::Acquire { .. })
                    && free
                    && others(db).any(|f| matches!(f.event.op, Op::Acquire { .. }))
                {
                    *n.entry(Contention::AcquiresRacedOnAFreeRow).or_default() += 1;
                }
                in_flight.insert((conn, db), InFlight { event: e, paused });
            }
            continue;
        }
        // What answered: the statement itself, or the one an `await` collected.
        let answered = match &e.op {
            Op::Await { db } => match &e.outcome {
                Outcome::Error(Reason::StillBlocked) => None,
                _ => in_flight.remove(&(conn.clone(), *db)).map(|f| f.event),
            },
            _ => Some(e),
        };
        if let Op::Disconnect { db } = &e.op {
            in_flight.remove(&(conn.clone(), *db));
        }
        if matches!(e.outcome, Outcome::Error(Reason::ConnLost)) {
            if let Some(db) = e.op.db() {
                in_flight.remove(&(conn.clone(), db));
            }
        }
        if let Op::Crash { db } = &e.op {
            in_flight.retain(|(_, d), _| d != db);
        }
        let Some(granted) = answered else { continue };
        if let Outcome::Granted { token, expires: x } = &e.outcome {
            let open_write = in_flight.iter().any(|(_, f)| {
                f.event.actor != granted.actor
                    && matches!(f.event.op, Op::Write { token: w, .. } if w < *token)
            });
            if open_write {
                *n.entry(Contention::TakeoverDuringOpenWrite).or_default() += 1;
            }
            if newest.is_none_or(|(t, _)| token.0 > t) {
                newest = Some((token.0, &granted.actor));
            }
            expires = Some(*x);
        }
        if let Outcome::Renewed { expires: x } = &e.outcome {
            expires = Some(*x);
        }
        if e.outcome == Outcome::Released {
            expires = Some(Expiry::NegInfinity);
        }
    }
    Contention::ALL.map(|c| (c, n.get(&c).copied().unwrap_or(0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn history(events: &str) -> History {
        let text = format!(
            "leaselab-trace v1\nname t\ntitle t\nseed 1\nconfig fence=scope lease_table=logged renew_after_expiry=false publish=business-key client_expiry=monotonic scopes=daily-report\nexpect ok\nevents\n{events}end\n"
        );
        leaselab_trace::Trace::parse(&text, "t")
            .expect("a trace")
            .history
    }

    fn counts(events: &str, paused: &[u64]) -> Vec<u64> {
        let pauses: Pauses = paused.iter().map(|s| (*s, 0)).collect();
        count(&history(events), &pauses)
            .iter()
            .map(|(_, n)| *n)
            .collect()
    }

    /// check-then-write's shrunk failure: holder-a's write pauses, holder-b takes the lease
    /// over and writes, holder-a writes again with its old token.
    #[test]
    fn a_takeover_while_a_write_is_paused_and_a_stale_write_after_it() {
        let events = "\
1 t=0 local=0 holder-a acquire lease=report-job holder=holder-a ttl_ms=100 => granted token=1 expires=100
2 t=100 local=100 holder-a write scope=daily-report part=detail content=a1 token=1 => blocked
3 t=100 local=100 holder-b acquire lease=report-job holder=holder-b ttl_ms=100 => granted token=2 expires=200
4 t=100 local=100 holder-b write scope=daily-report part=summary content=b2 token=2 => accepted
5 t=100 local=100 holder-a await db=res => accepted
6 t=100 local=100 holder-a write scope=daily-report part=summary content=a4 token=1 => accepted
";
        // In report order: waited-on-a-paused-holder, takeover-during-open-write,
        // stale-write-after-grant, acquires-raced-on-a-free-row.
        assert_eq!(counts(events, &[2]), [0, 1, 1, 0]);
        // The write collected before the takeover: no write was open during it.
        let collected = "\
1 t=0 local=0 holder-a acquire lease=report-job holder=holder-a ttl_ms=100 => granted token=1 expires=100
2 t=100 local=100 holder-a write scope=daily-report part=detail content=a1 token=1 => blocked
3 t=100 local=100 holder-a await db=res => accepted
4 t=100 local=100 holder-b acquire lease=report-job holder=holder-b ttl_ms=100 => granted token=2 expires=200
";
        assert_eq!(counts(collected, &[2]), [0, 0, 0, 0]);
    }

    /// A write waits behind a paused write's lock; an acquire waits behind another holder's
    /// paused acquire on an expired lease.
    #[test]
    fn waits_on_paused_holders_and_acquires_racing_for_a_free_row() {
        let events = "\
1 t=0 local=0 holder-a acquire lease=report-job holder=holder-a ttl_ms=100 => granted token=1 expires=100
2 t=50 local=50 holder-a write scope=daily-report part=summary content=a1 token=1 => blocked
3 t=50 local=50 holder-b write scope=daily-report part=summary content=b1 token=1 => blocked
4 t=150 local=150 holder-c acquire lease=report-job holder=holder-c ttl_ms=100 => blocked
5 t=150 local=150 holder-d acquire lease=report-job holder=holder-d ttl_ms=100 => blocked
";
        assert_eq!(counts(events, &[2, 4]), [2, 0, 0, 1]);
        // Nothing paused: the waits are on running statements, and holder-c's acquire is a
        // lock wait of its own, not one a race can be counted behind twice.
        assert_eq!(counts(events, &[]), [0, 0, 0, 1]);
        // Before the lease expired, the second acquire waits on a held row, not a free one.
        let early = events.replace("t=150 local=150", "t=60 local=60");
        assert_eq!(counts(&early, &[2, 4]), [2, 0, 0, 0]);
        // A wait on the lease database is no wait on a write paused on the resource's.
        let apart = "\
1 t=0 local=0 holder-a acquire lease=report-job holder=holder-a ttl_ms=100 => granted token=1 expires=100
2 t=50 local=50 holder-a write scope=daily-report part=summary content=a1 token=1 => blocked
3 t=150 local=150 holder-b acquire lease=report-job holder=holder-b ttl_ms=100 => blocked
";
        assert_eq!(counts(apart, &[2]), [0, 0, 0, 0]);
    }

    /// A holder's two lease connections each have their statement in flight: an `await` on the
    /// first collects the first's, and the second's stays in flight; a holder's own paused
    /// statement is no other holder's.
    #[test]
    fn a_statement_is_in_flight_on_its_connection() {
        let events = "\
1 t=0 local=0 holder-a acquire lease=report-job holder=holder-a ttl_ms=100 => granted token=1 expires=100
2 t=150 local=150 holder-a acquire lease=report-job holder=holder-a ttl_ms=100 => blocked
3 t=150 local=150 holder-a conn=holder-a-2 acquire lease=report-job holder=holder-a ttl_ms=100 => blocked
4 t=150 local=150 holder-a await db=lease => granted token=2 expires=250
5 t=300 local=300 holder-b acquire lease=report-job holder=holder-b ttl_ms=100 => blocked
";
        assert_eq!(counts(events, &[2]), [0, 0, 0, 1]);
        // Once the second connection's statement is collected too, nothing of holder-a's is in
        // flight.
        let collected = events.replace(
            "5 t=300",
            "5 t=300 local=300 holder-a conn=holder-a-2 await db=lease => refused\n6 t=300",
        );
        assert_eq!(counts(&collected, &[2]), [0, 0, 0, 0]);
    }

    /// The names the summaries and `--json` print: the counts' public spelling.
    #[test]
    fn each_count_has_its_name() {
        let names: Vec<&str> = Contention::ALL.iter().map(|c| c.name()).collect();
        assert_eq!(
            names,
            [
                "waited-on-a-paused-holder",
                "takeover-during-open-write",
                "stale-write-after-grant",
                "acquires-raced-on-a-free-row"
            ]
        );
    }

    /// What leaves a statement in flight and what ends it; whose grant is a takeover and whose
    /// write is stale.
    #[test]
    fn in_flight_ends_only_when_answered_and_a_holder_never_takes_over_from_itself() {
        let grant = |seq: u64, t: u64, who: &str, token: u64| {
            format!(
                "{seq} t={t} local={t} {who} acquire lease=report-job holder={who} ttl_ms=100 => granted token={token} expires={}\n",
                t + 100
            )
        };
        let write = |seq: u64, t: u64, who: &str, token: u64, out: &str| {
            format!(
                "{seq} t={t} local={t} {who} write scope=daily-report part=summary content=x token={token} => {out}\n"
            )
        };
        // An `await` that finds the write still waiting leaves it in flight: the grant after
        // it is a takeover during an open write.
        let still = grant(1, 0, "holder-a", 1)
            + &write(2, 0, "holder-a", 1, "blocked")
            + "3 t=0 local=0 holder-a await db=res => error reason=still-blocked\n"
            + &grant(4, 100, "holder-b", 2);
        assert_eq!(counts(&still, &[]), [0, 1, 0, 0]);
        // A crash of the resource database ends it: no write is open any more.
        let crashed = grant(1, 0, "holder-a", 1)
            + &write(2, 0, "holder-a", 1, "blocked")
            + "3 t=0 local=0 admin crash db=res => ok\n"
            + &grant(4, 100, "holder-b", 2);
        assert_eq!(counts(&crashed, &[]), [0, 0, 0, 0]);
        // A crash of the lease database does not.
        let other = crashed.replace("crash db=res", "crash db=lease");
        assert_eq!(counts(&other, &[]), [0, 1, 0, 0]);
        // A holder granted the lease again while its own write is paused takes over from no
        // one.
        let own = grant(1, 0, "holder-a", 1)
            + &write(2, 0, "holder-a", 1, "blocked")
            + &grant(3, 100, "holder-a", 2);
        assert_eq!(counts(&own, &[2]), [0, 0, 0, 0]);
        // A write with a holder's own older token after its own newer grant is not stale
        // after *another's* grant; the same token handed out twice (a broken lease) makes the
        // newest grant the first one's.
        let twice = grant(1, 0, "holder-a", 2)
            + &grant(2, 0, "holder-b", 2)
            + &grant(3, 0, "holder-a", 3)
            + &write(4, 0, "holder-a", 2, "accepted")
            + &write(5, 0, "holder-b", 2, "accepted");
        assert_eq!(counts(&twice, &[]), [0, 0, 1, 0]);
        let dup = grant(1, 0, "holder-a", 2)
            + &grant(2, 0, "holder-b", 2)
            + &write(3, 0, "holder-a", 1, "accepted");
        assert_eq!(counts(&dup, &[]), [0, 0, 0, 0]);
    }
}
