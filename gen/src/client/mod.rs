//! The client side of a schedule: turns intents into operations from what it has seen so far
//! (its grants, which of its statements wait, which transactions are open, which database is
//! down), so every schedule is valid by construction. What differs between the differential's
//! client and a service's is its [`Behaviour`].

mod behaviour;

pub use behaviour::{Aim, Behaviour, Service, Statements, WholeOps};

use crate::{Intent, Kind, NAMES, STEPS, TTLS};
use leaselab_model::names::defaults;
use leaselab_model::Reason;
use leaselab_model::{
    AttemptOutcome, ConnId, DbName, Event, Holder, LeaseName, Millis, Op, Outcome, Part, Scope,
    Token,
};

/// A holder's sessions: its lease connection, its resource connection, and its second lease
/// connection (a service's client whose holders call the lease on either of two connections:
/// [`Behaviour::second_conn`]).
const LEASE: usize = 0;
const RES: usize = 1;
const SECOND: usize = 2;

/// The second lease connection of `actor`, as histories name it (`conn=holder-a-2`).
fn second_conn_id(actor: usize) -> ConnId {
    ConnId::new(format!("{}-2", NAMES[actor]))
}

#[derive(Clone, Debug, Default)]
struct Session {
    /// The statement of this session on this database waits.
    blocked: bool,
    /// A transaction is open (as far as the client knows).
    in_txn: bool,
    /// The statement that waits (`blocked`), to learn what it did when it is collected.
    pending: Option<Op>,
    /// Rows this session's open transaction holds: floors (scope, token) and the lease row.
    floors: Vec<(Scope, Token)>,
    lease_row: bool,
    /// The rows it holds were locked by a statement that waited and then failed its re-check:
    /// a contender that passes the committed row's WHERE must wait for this transaction.
    kept: bool,
    /// An error aborted the open transaction (its COMMIT rolls back).
    aborted: bool,
    /// The holder's second lease connection was granted the lease while this (first)
    /// connection's transaction was open: that grant is newer than one the COMMIT makes good.
    overtaken: bool,
}

/// The client side of a schedule: turns intents into operations from what was observed.
#[derive(Clone, Debug)]
pub struct Client<B = Statements> {
    actors: usize,
    now: u64,
    seq: u64,
    /// Per actor: its last grant's token and the expiry it last saw.
    grant: Vec<Option<(u64, Option<u64>)>>,
    /// Per actor: a grant made inside its open lease transaction, which becomes its grant when
    /// that transaction commits (only where [`Behaviour::grant_at_commit`]).
    held_grant: Vec<Option<(u64, Option<u64>)>>,
    /// Per actor: its lease session, its resource session, its second lease session.
    sessions: Vec<[Session; 3]>,
    down: [bool; 2],
    max_token: u64,
    written: u64,
    /// How it takes an intent.
    behaviour: B,
    /// The lease every lease call names.
    lease: LeaseName,
    /// Every lease call's TTL, if fixed (else drawn from [`TTLS`]).
    ttl_ms: Option<u64>,
}

/// What a user's lease is called and how long it lasts (`leaselab audit`'s spec): the lease
/// name every call names, and a TTL every call asks for instead of the drawn ones.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Terms {
    /// The lease name.
    pub lease: LeaseName,
    /// The TTL, if fixed.
    pub ttl_ms: Option<u64>,
}

impl Default for Terms {
    fn default() -> Self {
        Terms {
            lease: LeaseName::new(defaults::LEASE),
            ttl_ms: None,
        }
    }
}

impl Client<Statements> {
    /// The differential's client for `actors` sessions at time 0.
    pub fn new(actors: usize) -> Self {
        Client::with_behaviour(actors, Statements)
    }
}

impl Client<Service> {
    /// A service's client for `actors` sessions at time 0 (see [`Service`]).
    pub fn service(actors: usize, service: Service) -> Self {
        Client::with_behaviour(actors, service)
    }
}

impl<B: Behaviour> Client<B> {
    /// A client of `behaviour` for `actors` sessions at time 0.
    pub fn with_behaviour(actors: usize, behaviour: B) -> Self {
        let actors = actors.clamp(1, NAMES.len());
        Client {
            actors,
            now: 0,
            seq: 0,
            grant: vec![None; actors],
            held_grant: vec![None; actors],
            sessions: vec![Default::default(); actors],
            down: [false; 2],
            max_token: 0,
            written: 0,
            behaviour,
            lease: LeaseName::new(defaults::LEASE),
            ttl_ms: None,
        }
    }

    /// The same client, naming `terms`' lease and asking for its TTL.
    pub fn with_terms(self, terms: &Terms) -> Self {
        Client {
            lease: terms.lease.clone(),
            ttl_ms: terms.ttl_ms,
            ..self
        }
    }

    /// The TTL a lease call drawn with `x` asks for.
    fn ttl(&self, x: u8) -> u64 {
        self.ttl_ms.unwrap_or(TTLS[usize::from(x) % TTLS.len()])
    }

    /// A contending acquire, half the time, comes once the grant another holder took inside
    /// its still-open lease transaction has lapsed: the acquire waits on that transaction's row
    /// lock and, when it commits, finds the lease free — where a value the acquire computed
    /// before the wait (its snapshot's) meets the row the wait let it update.
    /// An acquire on the holder's second connection (`own`) waits on its own first
    /// connection's transaction as well as on another holder's.
    fn lapse_held_grant(&mut self, intent: &Intent, own: bool) {
        let actor = usize::from(intent.actor) % self.actors;
        if intent.a % 2 != 0 {
            return;
        }
        let lapse = (0..self.actors)
            .filter(|&x| (own || x != actor) && self.sessions[x][LEASE].in_txn)
            .filter_map(|x| self.held_grant[x].and_then(|(_, e)| e))
            .max();
        if let Some(e) = lapse {
            self.now = self.now.max(e);
        }
    }

    /// Whether a session other than `actor`'s holds the lease row in its open transaction.
    fn lease_row_held_by_other(&self, actor: usize) -> bool {
        (0..self.actors).any(|x| x != actor && self.holds_lease_row(x))
    }

    /// Whether `actor`'s (first) lease connection holds the lease row in its open transaction.
    fn holds_lease_row(&self, actor: usize) -> bool {
        let s = &self.sessions[actor][LEASE];
        s.in_txn && s.lease_row
    }

    /// Whether a lease statement of any holder waits (on either of its lease connections).
    fn lease_statement_waits(&self) -> bool {
        self.sessions
            .iter()
            .any(|s| s[LEASE].blocked || s[SECOND].blocked)
    }

    /// Whether `actor`'s statement on `db` waits (on its second lease connection too).
    fn waits_on(&self, actor: usize, db: usize) -> bool {
        let s = &self.sessions[actor];
        s[db].blocked || (db == LEASE && s[SECOND].blocked)
    }

    /// The token a renew or release names: inside its open lease transaction a holder renews
    /// and releases what it acquired there.
    fn lease_token(&self, actor: usize, a: u8) -> Token {
        match self.held_grant[actor] {
            Some((t, _)) => Token(t),
            None => self.token(actor, a),
        }
    }

    fn token(&self, actor: usize, a: u8) -> Token {
        self.behaviour.token(self, actor, a)
    }

    fn scope(b: u8) -> Scope {
        if b % 7 == 6 {
            Scope::new("other-report")
        } else {
            Scope::new(defaults::SCOPE)
        }
    }

    fn part(b: u8) -> Part {
        Part::new(if b % 2 == 0 { "summary" } else { "detail" })
    }

    /// The next event for `intent` (its outcome is a placeholder), or `None` when the intent
    /// only moves the clock.
    pub fn event(&mut self, intent: &Intent) -> Option<Event> {
        let taken = self.behaviour.take(self, intent);
        let second = self.behaviour.second_conn(self, intent, &taken);
        if taken.kind == Kind::Acquire && intent.kind == Kind::Contend {
            self.lapse_held_grant(intent, second);
        }
        let intent = &taken;
        let mut conn = None;
        let actor = usize::from(intent.actor) % self.actors;
        let (a, b) = (intent.a, intent.b);
        let name = NAMES[actor];
        let lease_name = self.lease.clone();
        let lease = || lease_name.clone();
        let db_of = |x: u8| {
            if x % 2 == 0 {
                DbName::Lease
            } else {
                DbName::Res
            }
        };
        let mut who = Holder::new(name);
        let op = match intent.kind {
            Kind::Advance => {
                let to_expiry = self.behaviour.expiry_to_reach(self, actor);
                match to_expiry {
                    Some(e) if a % 3 == 0 => self.now = e,
                    _ => self.now += STEPS[usize::from(a) % STEPS.len()],
                }
                return None;
            }
            Kind::Crash => {
                let db = db_of(a);
                who = Holder::new("admin");
                if self.down[db.index()] {
                    Op::Restart { db }
                } else {
                    Op::Crash { db }
                }
            }
            _ if intent.kind != Kind::Advance && self.down.iter().any(|d| *d) && a % 3 == 0 => {
                // A database that is down comes back soon: otherwise most steps after a crash
                // would only say `unavailable`.
                who = Holder::new("admin");
                let db = if self.down[DbName::Lease.index()] {
                    DbName::Lease
                } else {
                    DbName::Res
                };
                Op::Restart { db }
            }
            Kind::Contend => {
                let (x, op) = self.contend(actor, a, b);
                who = Holder::new(NAMES[x]);
                op
            }
            _ => {
                let op = self.session_op(actor, intent.kind, a, b, lease, second);
                let s = &self.sessions[actor];
                let slot = |db: DbName| match db {
                    DbName::Lease if second => SECOND,
                    db => db.index(),
                };
                if second {
                    conn = Some(second_conn_id(actor));
                }
                match op.db() {
                    // A session whose statement waits gets to wait for it (mostly) or leave.
                    Some(db)
                        if s[slot(db)].blocked
                            && !matches!(op, Op::Await { .. } | Op::Disconnect { .. }) =>
                    {
                        if a % 8 == 7 {
                            op // `busy`: the client-side rule is checked too
                        } else if b % 5 == 4 {
                            Op::Disconnect { db }
                        } else {
                            Op::Await { db }
                        }
                    }
                    _ => op,
                }
            }
        };
        self.seq += 1;
        Some(Event {
            seq: self.seq,
            at: Millis(self.now),
            local: Millis(self.now),
            actor: who,
            conn,
            op,
            outcome: Outcome::Ok,
        })
    }

    fn session_op(
        &mut self,
        actor: usize,
        kind: Kind,
        a: u8,
        b: u8,
        lease: impl Fn() -> LeaseName,
        second: bool,
    ) -> Op {
        let holder = Holder::new(NAMES[actor]);
        let s = &self.sessions[actor];
        let ttl = self.ttl(a);
        // The second lease connection sees only what was committed: it renews and releases the
        // holder's committed grant, never one its first connection's open transaction holds.
        let lease_token = |c: &Self, x: u8| {
            if second {
                c.token(actor, x)
            } else {
                c.lease_token(actor, x)
            }
        };
        match kind {
            Kind::Acquire => Op::Acquire {
                lease: lease(),
                holder,
                ttl_ms: ttl,
            },
            Kind::Renew => Op::Renew {
                lease: lease(),
                holder,
                token: lease_token(self, b),
                ttl_ms: ttl,
            },
            Kind::Release => Op::Release {
                lease: lease(),
                holder,
                token: lease_token(self, a),
            },
            Kind::BeginLease | Kind::EndLease => txn_op(DbName::Lease, s[LEASE].in_txn, a),
            Kind::BeginRes | Kind::EndRes => txn_op(DbName::Res, s[RES].in_txn, a),
            Kind::Write | Kind::Upsert => {
                self.written += 1;
                let content = format!("{}{}", &NAMES[actor][7..], self.written);
                let (scope, part, token) = (Self::scope(b), Self::part(b), self.token(actor, a));
                // A one-shot write inside an open transaction is refused client-side; make it
                // the step-wise upsert instead, which is what the session can do there.
                if kind == Kind::Write && !s[RES].in_txn {
                    Op::Write {
                        scope,
                        part,
                        content,
                        token,
                    }
                } else {
                    Op::Upsert {
                        scope,
                        part,
                        content,
                        token,
                    }
                }
            }
            Kind::Fence => Op::Fence {
                scope: Self::scope(b),
                token: self.token(actor, a),
            },
            Kind::Publish => Op::Publish {
                key: if b % 2 == 0 { "report-1" } else { "report-2" }.to_string(),
                content: format!("{}-p{}", NAMES[actor], a % 4),
                token: self.token(actor, a),
            },
            Kind::Read => match a % 5 {
                0 => Op::ReadLease { lease: lease() },
                1 => Op::ReadFloor {
                    scope: Self::scope(b),
                },
                2 => Op::ReadPart {
                    scope: Self::scope(b),
                    part: Self::part(b),
                },
                3 => Op::ReadPublish {
                    key: if b % 2 == 0 { "report-1" } else { "report-2" }.to_string(),
                },
                _ => Op::CountAttempts {
                    writer: Holder::new(NAMES[usize::from(b) % self.actors]),
                    outcome: if b % 2 == 0 {
                        AttemptOutcome::Accepted
                    } else {
                        AttemptOutcome::Rejected
                    },
                },
            },
            Kind::Now => Op::Now {
                db: if a % 2 == 0 {
                    DbName::Lease
                } else {
                    DbName::Res
                },
            },
            Kind::Await | Kind::Disconnect => {
                // Prefer the database where this session waits.
                let db = if second || s[LEASE].blocked {
                    DbName::Lease
                } else if s[RES].blocked || a % 2 == 1 {
                    DbName::Res
                } else {
                    DbName::Lease
                };
                if kind == Kind::Await {
                    Op::Await { db }
                } else {
                    Op::Disconnect { db }
                }
            }
            Kind::Contend => unreachable_op(),
            Kind::Crash | Kind::Advance => unreachable_op(),
        }
    }

    /// A statement on a row another session's transaction holds (see [`Kind::Contend`]). The
    /// intent's actor is only where the search for a session starts: the statement goes to
    /// the first session that is free and placed to make it (already in a transaction when a
    /// floor is held), so that queues form within a few intents.
    fn contend(&mut self, hint: usize, a: u8, b: u8) -> (usize, Op) {
        let lease_name = self.lease.clone();
        let lease = || lease_name.clone();
        let order: Vec<usize> = (0..self.actors).map(|i| (hint + i) % self.actors).collect();
        let free =
            |c: &Self, x: usize| !c.sessions[x][LEASE].blocked && !c.sessions[x][RES].blocked;
        if b % 2 == 1 {
            if let Some(step) = self.move_queue(&order, a) {
                return step;
            }
        }
        // A row kept by a failed re-check first: that is where a contender shows whether the
        // lock was kept.
        let by_kept = |o: &usize| std::cmp::Reverse(self.sessions[*o][RES].kept);
        let mut holders = order.clone();
        holders.sort_by_key(by_kept);
        let held: Option<(usize, Scope, Token)> = holders.iter().find_map(|&o| {
            let f = &self.sessions[o][RES].floors;
            (!f.is_empty()).then(|| {
                (
                    o,
                    f[usize::from(b) % f.len()].0.clone(),
                    f[usize::from(b) % f.len()].1,
                )
            })
        });
        if let Some((h, scope, token)) = held.clone() {
            // Just below the holder's token: passes the committed floor now and fails the
            // re-check after the holder commits; or just above it: passes both. A row kept by
            // a failed re-check holds the committed floor already: at or above it, so that the
            // contender's WHERE passes and it waits.
            let token = if b % 3 == 0 || (self.sessions[h][RES].kept && b % 3 == 1) {
                Token(token.0 + 1)
            } else if self.sessions[h][RES].kept {
                token
            } else {
                Token(token.0.saturating_sub(1).max(1))
            };
            let ready = order.iter().copied().find(|&x| {
                x != h
                    && free(self, x)
                    && self.sessions[x][RES].in_txn
                    && !self.sessions[x][RES]
                        .floors
                        .iter()
                        .any(|(s, _)| *s == scope)
            });
            if let Some(x) = ready {
                return (x, Op::Fence { scope, token });
            }
            if let Some(x) = order
                .iter()
                .copied()
                .find(|&x| x != h && free(self, x) && !self.sessions[x][RES].in_txn)
            {
                if a % 4 == 1 {
                    self.written += 1;
                    let content = format!("{}{}", &NAMES[x][7..], self.written);
                    let part = Self::part(b);
                    return (
                        x,
                        Op::Write {
                            scope,
                            part,
                            content,
                            token,
                        },
                    );
                }
                return (x, txn_op(DbName::Res, false, a / 4));
            }
        }
        let mut holders = order.clone();
        holders.sort_by_key(|o| std::cmp::Reverse(self.sessions[*o][LEASE].kept));
        let lease_holder = holders
            .iter()
            .copied()
            .find(|&o| self.sessions[o][LEASE].lease_row);
        if let Some(h) = lease_holder.filter(|_| a % 2 == 0 || held.is_none()) {
            if let Some(x) = order.iter().copied().find(|&x| x != h && free(self, x)) {
                if !self.sessions[x][LEASE].in_txn && a % 4 == 2 {
                    return (x, txn_op(DbName::Lease, false, 0));
                }
                let holder = Holder::new(NAMES[x]);
                let ttl_ms = self.ttl(b);
                let token = self.token(x, 0);
                // An acquire waits for any lock on the row (its ON CONFLICT locks the row
                // before its WHERE); a renew or release only when it matches the committed row.
                let pick = if self.sessions[h][LEASE].kept && a % 3 != 0 {
                    0
                } else {
                    a % 3
                };
                return (
                    x,
                    match pick {
                        0 => Op::Acquire {
                            lease: lease(),
                            holder,
                            ttl_ms,
                        },
                        1 => Op::Renew {
                            lease: lease(),
                            holder,
                            token,
                            ttl_ms,
                        },
                        _ => Op::Release {
                            lease: lease(),
                            holder,
                            token,
                        },
                    },
                );
            }
        }
        // Nobody holds a row yet: take one, in a transaction.
        let x = order
            .iter()
            .copied()
            .find(|&x| free(self, x))
            .unwrap_or(hint);
        let (in_res, in_lease) = (self.sessions[x][RES].in_txn, self.sessions[x][LEASE].in_txn);
        let holder = Holder::new(NAMES[x]);
        let op = match (in_res, in_lease, a % 3) {
            (true, _, _) => Op::Fence {
                scope: Self::scope(b),
                token: self.token(x, a),
            },
            (false, _, 0 | 1) => txn_op(DbName::Res, false, 0),
            (false, false, _) => txn_op(DbName::Lease, false, 0),
            (false, true, _) => Op::Acquire {
                lease: lease(),
                holder,
                ttl_ms: self.ttl(b),
            },
        };
        (x, op)
    }

    /// Moves a queue on: a session whose statement waits is collected once no other session's
    /// open transaction holds a row on its database; otherwise the first such transaction ends
    /// (mostly with COMMIT, so that a waiter's re-check runs against the committed row). So the
    /// waiter's re-check fails or passes while its own transaction stays open, and the next
    /// contender finds the row it kept.
    fn move_queue(&self, order: &[usize], a: u8) -> Option<(usize, Op)> {
        let (w, db) = order.iter().find_map(|&w| {
            (0..2)
                .find(|&d| self.sessions[w][d].blocked)
                .map(|d| (w, d))
        })?;
        let holds = |x: usize| {
            let s = &self.sessions[x][db];
            x != w && s.in_txn && !s.blocked && (s.lease_row || !s.floors.is_empty())
        };
        let db_name = if db == 0 { DbName::Lease } else { DbName::Res };
        Some(match order.iter().copied().find(|&x| holds(x)) {
            Some(h) => (h, txn_op(db_name, true, u8::from(a % 5 == 4))),
            None => (w, Op::Await { db: db_name }),
        })
    }

    /// Learns from the outcome the databases gave to `e`.
    pub fn observe(&mut self, e: &Event, out: &Outcome) {
        if let Op::Crash { db } = e.op {
            if *out == Outcome::Ok {
                self.down[db.index()] = true;
                for s in &mut self.sessions {
                    s[db.index()] = Session::default();
                    if db == DbName::Lease {
                        s[SECOND] = Session::default();
                    }
                }
                if db == DbName::Lease {
                    self.held_grant.iter_mut().for_each(|g| *g = None);
                }
            }
            return;
        }
        if let Op::Restart { db } = e.op {
            if *out == Outcome::Ok {
                self.down[db.index()] = false;
            }
            return;
        }
        let Some(actor) = NAMES.iter().position(|n| *n == e.actor.as_str()) else {
            return;
        };
        let Some(db) = e.op.db() else { return };
        let slot = match db {
            DbName::Lease if e.conn.as_ref() == Some(&second_conn_id(actor)) => SECOND,
            db => db.index(),
        };
        // A grant inside an open lease transaction waits for COMMIT, where the behaviour says so.
        let held = self.behaviour.grant_at_commit()
            && db == DbName::Lease
            && self.sessions[actor][slot].in_txn;
        if let Outcome::Granted { token, expires } = out {
            self.max_token = self.max_token.max(token.0);
            let g = Some((token.0, expiry_ms(expires)));
            if slot == SECOND {
                let first = &mut self.sessions[actor][LEASE];
                first.overtaken = first.in_txn;
            }
            if held {
                self.held_grant[actor] = g;
            } else {
                self.grant[actor] = g;
            }
        }
        if let Outcome::Renewed { expires } = out {
            let e = expiry_ms(expires);
            if held {
                // Of what it acquired in the transaction, or of its committed grant: either
                // lasts longer only once the transaction commits.
                let base = self.held_grant[actor].or(self.grant[actor]);
                self.held_grant[actor] = base.map(|(t, _)| (t, e));
            } else if let Some(g) = self.grant[actor].as_mut() {
                g.1 = e;
            }
        }
        let s = &mut self.sessions[actor][slot];
        if held && matches!(out, Outcome::Error(r) if r.is_sql_error()) {
            // PostgreSQL aborted the transaction: its COMMIT rolls back.
            s.aborted = true;
        }
        // Only a grant held back for COMMIT is in `held_grant`; only the first lease connection
        // holds lease transactions.
        if slot == LEASE {
            match (&e.op, out) {
                (Op::Commit { .. }, Outcome::Ok) if !s.aborted => {
                    if let Some(g) = self.held_grant[actor].take() {
                        if !s.overtaken {
                            self.grant[actor] = Some(g);
                        }
                    }
                }
                (Op::Commit { .. } | Op::Rollback { .. } | Op::Disconnect { .. }, _)
                | (_, Outcome::Error(Reason::ConnLost)) => self.held_grant[actor] = None,
                _ => {}
            }
        }
        // What the statement did: an `await` reports the one that waited.
        let waited = matches!(e.op, Op::Await { .. });
        let done = match (&e.op, out) {
            (_, Outcome::Blocked) => None,
            (Op::Await { .. }, Outcome::Error(Reason::StillBlocked)) => None,
            (Op::Await { .. }, _) => s.pending.take(),
            (op, _) => Some(op.clone()),
        };
        match (&e.op, out) {
            (_, Outcome::Blocked) => {
                s.blocked = true;
                s.pending = Some(e.op.clone());
            }
            (Op::Await { .. }, Outcome::Error(Reason::StillBlocked)) => {}
            (Op::Await { .. }, _) => s.blocked = false,
            (Op::Disconnect { .. }, _) => *s = Session::default(),
            (_, Outcome::Error(Reason::ConnLost)) => *s = Session::default(),
            (Op::Begin { .. } | Op::BeginRepeatableRead { .. }, Outcome::Ok) => s.in_txn = true,
            (Op::Commit { .. } | Op::Rollback { .. }, _) => {
                s.in_txn = false;
                s.floors.clear();
                s.lease_row = false;
                s.kept = false;
                s.aborted = false;
                s.overtaken = false;
            }
            _ => {}
        }
        // Rows the open transaction now holds: a fence that passed, or one that waited and
        // failed its re-check (it keeps the row); any lease statement that waited, or an
        // acquire, renew or release that took effect.
        if s.in_txn {
            match (done, out) {
                (Some(Op::Fence { scope, token }), Outcome::Passed) => {
                    s.floors.push((scope, token))
                }
                // It failed against a higher floor: a contender's token must be higher too.
                (Some(Op::Fence { scope, token }), Outcome::Failed) if waited => {
                    s.floors.push((scope, Token(token.0 + 1)));
                    s.kept = true;
                }
                (Some(Op::Renew { .. } | Op::Release { .. }), Outcome::Refused) if waited => {
                    s.lease_row = true;
                    s.kept = true;
                }
                (
                    Some(Op::Acquire { .. } | Op::Renew { .. } | Op::Release { .. }),
                    Outcome::Granted { .. } | Outcome::Renewed { .. } | Outcome::Released,
                ) => s.lease_row = true,
                (Some(Op::Acquire { .. }), Outcome::Refused) => s.lease_row = true,
                _ => {}
            }
        }
    }
}

/// Opens a transaction (READ COMMITTED, or REPEATABLE READ for an odd `a`) or ends the open
/// one (COMMIT, or ROLLBACK for an odd `a`).
fn txn_op(db: DbName, in_txn: bool, a: u8) -> Op {
    match (in_txn, a % 2 == 1) {
        (false, false) => Op::Begin { db },
        (false, true) => Op::BeginRepeatableRead { db },
        (true, false) => Op::Commit { db },
        (true, true) => Op::Rollback { db },
    }
}

fn expiry_ms(e: &leaselab_model::Expiry) -> Option<u64> {
    match e {
        leaselab_model::Expiry::At(m) => Some(m.0),
        leaselab_model::Expiry::NegInfinity => None,
    }
}

fn unreachable_op() -> Op {
    // `event` handles these kinds before asking for a session operation.
    Op::Now { db: DbName::Lease }
}
