//! How a client takes an intent: the differential's client sends any statement with any token
//! ([`Statements`]); a service's client sends whole lease calls with the token its own acquire
//! returned ([`Service`]). One type per behaviour, so the client's steps hold no mode check.

use super::{Client, LEASE, RES, SECOND};
use crate::{Intent, Kind};
use leaselab_model::Token;

/// What a client of one behaviour decides on its own; the rest of the [`Client`] is shared.
pub trait Behaviour: Clone + std::fmt::Debug {
    /// The intent as this client takes it.
    fn take(&self, c: &Client<Self>, i: &Intent) -> Intent;
    /// The token a write, fence or publish of `actor` names (`a`: the intent's first argument).
    fn token(&self, c: &Client<Self>, actor: usize, a: u8) -> Token;
    /// Whether a grant made inside an open lease transaction becomes the holder's only once
    /// that transaction commits (until then it is held back: a holder never writes with a
    /// token another holder cannot see yet, nor with one a rollback took back).
    fn grant_at_commit(&self) -> bool;
    /// Whether `taken` (drawn as `drawn`) runs on `actor`'s second lease connection (none by
    /// default: a holder calls the lease on one connection).
    fn second_conn(&self, _c: &Client<Self>, _drawn: &Intent, _taken: &Intent) -> bool {
        false
    }

    /// Where a clock move drawn to land on an expiry lands for `actor`: the expiry of its own
    /// grant (the default), or of another's.
    fn expiry_to_reach(&self, c: &Client<Self>, actor: usize) -> Option<u64> {
        c.held_grant[actor]
            .or(c.grant[actor])
            .and_then(|(_, e)| e)
            .filter(|e| *e > c.now)
    }
}

/// The differential's client (`leaselab diff --gen`): every operation of the trace format as
/// drawn, tokens its own, another's or made up — whatever a session can send.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Statements;

impl Behaviour for Statements {
    fn take(&self, _: &Client<Self>, i: &Intent) -> Intent {
        *i
    }

    fn token(&self, c: &Client<Self>, actor: usize, a: u8) -> Token {
        match (a % 4, c.grant[actor]) {
            (0..=1, Some((t, _))) => Token(t),
            (2, _) => Token(c.max_token.saturating_sub(u64::from(a / 4 % 2))),
            _ => Token(u64::from(a / 4 % 4) + 1),
        }
        .max(Token(1))
    }

    fn grant_at_commit(&self) -> bool {
        false
    }
}

/// A service's client (`leaselab audit`): only whole operations — acquire, renew, release, a
/// one-shot write, publish and reads where the lease has them — with awaits, disconnects,
/// crashes and clock moves. Tokens are symbolic: a holder renews, releases and writes with the
/// token *its* last acquire returned, also after that lease expired (a paused holder waking
/// up); before any grant it acquires.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Service {
    /// The operations the lease offers besides the four.
    pub ops: WholeOps,
    /// Held lease transactions (`leaselab audit --lease-txn`): a holder may open a
    /// transaction on its lease connection (`begin db=lease`, READ COMMITTED or REPEATABLE
    /// READ), run several lease calls in it, hold it open across other holders' steps, and
    /// commit or roll it back. A grant made inside counts for the holder's writes only once its
    /// transaction committed. And a contention intent becomes an acquire by another holder while
    /// one holds the lease row in its open transaction: the queue a value drawn before the lock
    /// wait needs.
    pub lease_txn: bool,
    /// A second lease connection per holder (`leaselab audit --lease-conns 2`): a holder's
    /// acquire, renew and release go to either of its two lease connections (a connection
    /// pool, a renewal thread of its own), the second always in autocommit — so a holder
    /// calls the lease while its own first connection holds a lease transaction open, and its
    /// call may wait on that transaction as another holder's would. The second connection
    /// renews and releases the holder's committed grant.
    pub second_conn: bool,
    /// How the intents are taken: as drawn, or steered toward contention.
    pub aim: Aim,
}

/// What a service's client aims at (`leaselab audit --aim`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Aim {
    /// The intents as drawn.
    Uniform,
    /// The default mix: a quarter of the intents steered as [`Aim::Contention`] steers half,
    /// the rest as drawn — so an audit without `--aim` reaches contention without giving up
    /// the uniform draws that find the other mistakes.
    #[default]
    Mixed,
    /// Half the intents steered toward the interleavings where lease bugs live: while another
    /// holder's write is in flight (paused inside itself, or waiting on a lock), the clock
    /// moves to the lease's expiry, a holder takes the lease over and the new holder writes —
    /// so the stale write lands after the newer one, or waits on the lock the paused one
    /// holds — and a holder with an older grant writes too; while another holder's acquire is
    /// in flight, a holder acquires too, on the expired lease — two acquires racing for a
    /// free row.
    Contention,
}

impl Aim {
    /// Every aim, in `--aim`'s order.
    pub const ALL: [Aim; 3] = [Aim::Uniform, Aim::Contention, Aim::Mixed];

    /// Its name on the command line and in a saved failure's `setup aim` line.
    pub const fn name(self) -> &'static str {
        match self {
            Aim::Uniform => "uniform",
            Aim::Contention => "contention",
            Aim::Mixed => "mixed",
        }
    }

    /// The aim named `name`, if any.
    pub fn named(name: &str) -> Option<Aim> {
        Aim::ALL.into_iter().find(|a| a.name() == name)
    }

    /// Whether intent `i` (by its second argument) is one this aim steers.
    fn steers(self, i: &Intent) -> bool {
        match self {
            Aim::Uniform => false,
            Aim::Contention => i.b % 2 == 0,
            Aim::Mixed => i.b % 4 == 0,
        }
    }
}

impl Service {
    /// `i` steered toward contention (see [`Aim::Contention`]); as drawn when nothing is in
    /// flight, for the intents the aim does not steer, and for a holder's own waits, crashes
    /// and restarts.
    fn steer(&self, c: &Client<Self>, i: &Intent) -> Intent {
        let actor = usize::from(i.actor) % c.actors;
        if !self.aim.steers(i) || matches!(i.kind, Kind::Crash | Kind::Await | Kind::Disconnect) {
            return *i;
        }
        let in_flight = |db: usize| (0..c.actors).any(|x| x != actor && c.waits_on(x, db));
        let newest = newest_grant(c);
        let free = newest.is_none_or(|((_, e), _)| e.is_none_or(|e| c.now >= e));
        let mine = newest.is_some_and(|(_, x)| x == actor);
        let granted = c.grant[actor].is_some();
        let kind = if in_flight(1) {
            match (mine, free) {
                (true, _) => Kind::Write,
                // A holder whose grant is older writes now, half the time: a stale write sent
                // while the newer holder's write is in flight (and waits on its locks).
                (false, _) if granted && i.a % 2 == 0 => Kind::Write,
                (false, false) => Kind::Advance,
                (false, true) => Kind::Acquire,
            }
        } else if in_flight(0) && !mine {
            if free {
                Kind::Acquire
            } else {
                Kind::Advance
            }
        } else {
            return *i;
        };
        // A clock move lands on an expiry (`a % 3 == 0`; see `Client::event`).
        let a = if kind == Kind::Advance { 3 } else { i.a };
        Intent { kind, a, ..*i }
    }
}

/// The grant with the highest token any holder has seen (in its open lease transaction or
/// committed), and whose it is: the lease as the client knows it.
type Grant = (u64, Option<u64>);

fn newest_grant<B: Behaviour>(c: &Client<B>) -> Option<(Grant, usize)> {
    (0..c.actors)
        .filter_map(|x| c.held_grant[x].or(c.grant[x]).map(|g| (g, x)))
        .max_by_key(|((t, _), _)| *t)
}

/// What a user's lease offers besides acquire, renew, release and write.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WholeOps {
    /// A `publish` statement.
    pub publish: bool,
    /// A `read-part` statement (read mid-run too, not only for the final state).
    pub read_part: bool,
}

impl Behaviour for Service {
    fn take(&self, c: &Client<Self>, i: &Intent) -> Intent {
        let steered = self.steer(c, i);
        let i = &steered;
        let ops = self.ops;
        let lease_txn = self.lease_txn;
        let actor = usize::from(i.actor) % c.actors;
        let granted = c.grant[actor].is_some() || c.held_grant[actor].is_some();
        // A write or publish names only a committed grant: a token still inside an open lease
        // transaction may yet be rolled back and handed out again.
        let committed = c.grant[actor].is_some();
        let lease_open = c.sessions[actor][LEASE].in_txn;
        let kind = match i.kind {
            // With lease transactions, a third of the acquires start one (and a holder granted
            // the lease in its transaction goes on to end it a third of the time, below): the
            // steps that make transactions overlap on the lease row.
            Kind::Acquire if lease_txn && !lease_open && !granted && i.a % 3 == 0 => {
                Kind::BeginLease
            }
            Kind::Acquire | Kind::Await | Kind::Disconnect | Kind::Crash | Kind::Advance => i.kind,
            // Each does one thing (no toggling), so that dropping one while shrinking leaves
            // what the others do unchanged.
            Kind::BeginLease if lease_txn && !lease_open => i.kind,
            Kind::EndLease if lease_txn && lease_open => i.kind,
            // One contender at a time: the waiters one commit wakes take the row in an order
            // PostgreSQL does not fix, and a schedule's outcome should be the schedule's.
            // With a second connection, the holder's own open transaction is a row holder too:
            // the contender is then its second connection (see `second_conn`).
            Kind::Contend
                if lease_txn
                    && (c.lease_row_held_by_other(actor)
                        || (self.second_conn && c.holds_lease_row(actor)))
                    && !c.lease_statement_waits() =>
            {
                Kind::Acquire
            }
            k if writes(k)
                && lease_txn
                && lease_open
                && c.held_grant[actor].is_some()
                && i.a % 3 == 0 =>
            {
                Kind::EndLease
            }
            Kind::Renew | Kind::Release if granted => i.kind,
            Kind::Publish if committed && ops.publish => Kind::Publish,
            Kind::Read if ops.read_part => Kind::Read,
            k if writes(k) && committed => Kind::Write,
            Kind::Now | Kind::BeginLease | Kind::EndLease | Kind::Read => Kind::Advance,
            _ => Kind::Acquire,
        };
        // A read is of a part (`a % 5 == 2` in `session_op`).
        let a = if kind == Kind::Read {
            (i.a % 50) * 5 + 2
        } else {
            i.a
        };
        Intent { kind, a, ..*i }
    }

    fn token(&self, c: &Client<Self>, actor: usize, _: u8) -> Token {
        // A write names only a committed grant.
        Token(c.grant[actor].map_or(1, |(t, _)| t))
    }

    fn grant_at_commit(&self) -> bool {
        true
    }

    /// A lease call drawn with the high bit of `b` goes to the second connection, and so does
    /// a contending acquire while the holder's own first connection holds the lease row; an
    /// `await` or `disconnect` goes where the holder's statement waits, the second connection
    /// when only it waits (or the high bit says so).
    fn second_conn(&self, c: &Client<Self>, drawn: &Intent, taken: &Intent) -> bool {
        if !self.second_conn {
            return false;
        }
        let actor = usize::from(taken.actor) % c.actors;
        let s = &c.sessions[actor];
        let high = drawn.b >= 128;
        match taken.kind {
            Kind::Acquire if drawn.kind == Kind::Contend => c.holds_lease_row(actor) || high,
            Kind::Acquire | Kind::Renew | Kind::Release => high,
            Kind::Await | Kind::Disconnect => {
                s[SECOND].blocked && (high || !(s[LEASE].blocked || s[RES].blocked))
            }
            _ => false,
        }
    }

    fn expiry_to_reach(&self, c: &Client<Self>, actor: usize) -> Option<u64> {
        let in_flight = (0..c.actors).any(|x| x != actor && (c.waits_on(x, 0) || c.waits_on(x, 1)));
        let target = match self.aim {
            Aim::Uniform => c.held_grant[actor].or(c.grant[actor]),
            // The lease's: a takeover needs the newest grant to have lapsed.
            Aim::Contention => newest_grant(c).map(|(g, _)| g),
            // The lease's while another holder's statement is in flight (where the mix steers),
            // else the holder's own.
            Aim::Mixed if in_flight => newest_grant(c).map(|(g, _)| g),
            Aim::Mixed => c.held_grant[actor].or(c.grant[actor]),
        };
        target.and_then(|(_, e)| e).filter(|e| *e > c.now)
    }
}

/// The kinds a whole-operation client takes as a write when it holds a committed grant.
fn writes(k: Kind) -> bool {
    matches!(
        k,
        Kind::Write
            | Kind::Upsert
            | Kind::Fence
            | Kind::Contend
            | Kind::BeginRes
            | Kind::EndRes
            | Kind::Publish
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each aim reads back from its name (`--aim`, a saved failure's `setup aim` line); the mix
    /// steers a quarter of the intents, the aimed search half, uniform draws none.
    #[test]
    fn aims_by_name_and_share() {
        for a in Aim::ALL {
            assert_eq!(Aim::named(a.name()), Some(a));
        }
        assert_eq!(Aim::named("random"), None);
        assert_eq!(Aim::default(), Aim::Mixed);
        let share = |a: Aim| {
            (0..=255u8)
                .filter(|b| {
                    a.steers(&Intent {
                        actor: 0,
                        kind: Kind::Write,
                        a: 0,
                        b: *b,
                    })
                })
                .count()
        };
        assert_eq!(
            [Aim::Uniform, Aim::Mixed, Aim::Contention].map(share),
            [0, 64, 128]
        );
    }
}
