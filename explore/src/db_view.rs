//! The database view: how the explored state answers a holder's statements — the model's rule
//! functions on rows built from the view, the model's lock protocol for when a statement
//! waits — and the [`Carrier`] that takes a holder's effects to it.

use crate::bounds::ms;
use crate::state::{broke, seen, Pending, Row, State, Stmt};
use crate::system::{Event, LeaseSystem, Log};
use leaselab_model::holder::Carrier;
use leaselab_model::{
    protocol, rules, ConnId, DbName, Expiry, FenceMode, LeaseRow, Millis, Op, Outcome, Reason,
    Token,
};

impl LeaseSystem {
    pub(crate) fn row(&self, r: &Row) -> LeaseRow {
        LeaseRow {
            holder: self.cfgs[r.holder as usize].name.clone(),
            token: Token(r.token as u64),
            expires_at: match r.expires {
                None => Expiry::NegInfinity,
                Some(t) => Expiry::At(Millis(ms(&self.b, t))),
            },
        }
    }

    pub(crate) fn compact(&self, r: &LeaseRow, holder: u8) -> Row {
        Row {
            holder,
            token: r.token.0 as u8,
            expires: match r.expires_at {
                Expiry::NegInfinity => None,
                Expiry::At(x) => Some((x.0 / self.b.tick_ms) as u8),
            },
        }
    }

    /// Whether `i`'s statement would have to wait on a row lock (it then stays deferred until
    /// the lock is released), by the model's lock protocol (`leaselab_model::protocol`). A
    /// statement on a connection a crash cut is answered at once.
    pub(crate) fn waits(&self, s: &State, i: u8, stmt: Stmt) -> bool {
        if s.holders[i as usize].cut && stmt.on_res() {
            return false;
        }
        let other = |lock: Option<(u8, u8)>| lock.is_some_and(|(h, _)| h != i);
        match stmt {
            Stmt::Fence(token) => match self.b.fence {
                // A plain UPDATE: its WHERE on the committed floor first.
                FenceMode::Scope | FenceMode::Strict => protocol::update_waits(
                    rules::floor_passes(
                        self.b.fence,
                        Some(Token(s.floor as u64)),
                        Token(token as u64),
                    ),
                    other(s.floor_lock),
                ),
                FenceMode::ScopeUpsert => protocol::upsert_waits(other(s.floor_lock)),
                _ => false,
            },
            Stmt::Upsert { part, .. } => match self.b.fence {
                FenceMode::Row | FenceMode::Off => {
                    protocol::upsert_waits(other(s.part_locks[part as usize]))
                }
                // The floor's lock, held until commit, already serialises the writers:
                // whoever holds a part lock holds the floor too.
                _ => false,
            },
            _ => false,
        }
    }

    /// Ends holder `i`'s transaction: on commit its locked rows take what it wrote; either
    /// way its locks are released.
    pub(crate) fn end_txn(&self, n: &mut State, i: u8, commit: bool) {
        if let Some((o, t)) = n.floor_lock {
            if o == i {
                if commit {
                    n.floor = t;
                }
                n.floor_lock = None;
            }
        }
        for p in 0..2 {
            if let Some((o, t)) = n.part_locks[p] {
                if o == i {
                    if commit && t > 0 {
                        n.parts[p] = Some((i, t));
                    }
                    n.part_locks[p] = None;
                }
            }
        }
        n.holders[i as usize].txn = false;
    }

    /// The view's answer to holder `i`'s statement (one that does not wait), and its effect
    /// on the view.
    pub(crate) fn answer(&self, n: &mut State, i: u8, stmt: Stmt) -> Outcome {
        let b = &self.b;
        let iu = i as usize;
        if stmt.on_res() && n.holders[iu].cut {
            n.holders[iu].cut = false;
            return Outcome::Error(Reason::ConnLost);
        }
        let now = Millis(ms(b, n.now));
        let row = n.lease.map(|r| self.row(&r));
        let name = &self.cfgs[iu].name;
        match stmt {
            Stmt::Acquire => match rules::acquire(row.as_ref(), name, ms(b, b.ttl), 0, now) {
                Some(r) => {
                    let c = self.compact(&r, i);
                    // I1, judged on the view: the row taken over must have expired.
                    if let Some(old) = n.lease.or(n.ghost) {
                        if old.expires.is_some_and(|e| e > n.now) {
                            n.broken |= broke::I1;
                        }
                        if old.holder != i {
                            n.seen |= seen::TAKEOVER;
                        }
                    }
                    if c.token <= n.max_granted {
                        n.broken |= broke::I2;
                    }
                    n.max_granted = n.max_granted.max(c.token);
                    n.lease = Some(c);
                    n.ghost = None;
                    n.holders[iu].acquired += 1;
                    Outcome::Granted {
                        token: r.token,
                        expires: r.expires_at,
                    }
                }
                None => Outcome::Refused,
            },
            Stmt::Renew(t) => {
                match rules::renew(
                    row.as_ref(),
                    name,
                    Token(t as u64),
                    ms(b, b.ttl),
                    now,
                    false,
                ) {
                    Some(r) => {
                        n.lease = Some(self.compact(&r, i));
                        Outcome::Renewed {
                            expires: r.expires_at,
                        }
                    }
                    None => Outcome::Refused,
                }
            }
            Stmt::Release(t) => match rules::release(row.as_ref(), name, Token(t as u64)) {
                Some(r) => {
                    n.lease = Some(self.compact(&r, i));
                    Outcome::Released
                }
                None => Outcome::Refused,
            },
            Stmt::Begin => {
                // Check-then-write runs every statement in autocommit.
                n.holders[iu].txn = b.fence != FenceMode::CheckThenWrite;
                Outcome::Ok
            }
            Stmt::Fence(t) => {
                if t < n.max_granted {
                    n.seen |= seen::STALE_WRITE_ATTEMPTED;
                }
                let pass = match b.fence {
                    FenceMode::Row | FenceMode::Off => true,
                    f => rules::floor_passes(f, Some(Token(n.floor as u64)), Token(t as u64)),
                };
                if pass {
                    if matches!(
                        b.fence,
                        FenceMode::Scope | FenceMode::Strict | FenceMode::ScopeUpsert
                    ) {
                        n.floor_lock = Some((i, t));
                    }
                    Outcome::Passed
                } else {
                    if self.current(n, i, t) {
                        n.broken |= broke::PROGRESS;
                    }
                    Outcome::Failed
                }
            }
            Stmt::Upsert { part, token } => {
                let pi = part as usize;
                match b.fence {
                    FenceMode::CheckThenWrite => {
                        // Two autocommitted statements: set the floor, upsert the part.
                        n.floor = token;
                        n.parts[pi] = Some((i, token));
                        accept(n, i, token);
                        Outcome::Accepted
                    }
                    FenceMode::Row => {
                        let existing = n.parts[pi].map(|(_, t)| Token(t as u64));
                        if rules::row_guard_passes(existing, Token(token as u64)) {
                            n.part_locks[pi] = Some((i, token));
                            Outcome::Ok
                        } else {
                            // The row stays locked (without a write) until the rollback.
                            n.part_locks[pi] = Some((i, 0));
                            Outcome::Failed
                        }
                    }
                    _ => {
                        n.part_locks[pi] = Some((i, token));
                        Outcome::Ok
                    }
                }
            }
            Stmt::Commit => {
                if n.holders[iu].txn {
                    // The token its transaction wrote into a part.
                    let written = n
                        .part_locks
                        .iter()
                        .flatten()
                        .find(|(o, t)| *o == i && *t > 0)
                        .map(|(_, t)| *t);
                    self.end_txn(n, i, true);
                    if let Some(token) = written {
                        accept(n, i, token);
                    }
                }
                Outcome::Ok
            }
            Stmt::Rollback => {
                self.end_txn(n, i, false);
                Outcome::Ok
            }
        }
    }

    /// Whether `i` holds the newest token `token` and its lease is unexpired by the database
    /// clock: a refusal of its write is then a refusal of the rightful holder.
    pub(crate) fn current(&self, s: &State, i: u8, token: u8) -> bool {
        s.lease.is_some_and(|r| {
            r.holder == i && r.token == token && r.expires.is_some_and(|e| e > s.now)
        }) && token == s.max_granted
    }
}

/// An accepted write of holder `i` with `token`: I3 and acceptance break if a higher token was
/// accepted before it; acceptance also if another holder's write was accepted with the same
/// token (a token handed out twice).
pub(crate) fn accept(n: &mut State, i: u8, token: u8) {
    if token < n.max_accepted {
        n.broken |= broke::I3 | broke::ACCEPTANCE;
    }
    if token == n.max_accepted && n.accepted_by.is_some_and(|h| h != i) {
        n.broken |= broke::ACCEPTANCE;
    }
    if token >= n.max_accepted {
        n.accepted_by = Some(i);
    }
    n.max_accepted = n.max_accepted.max(token);
}

/// The view as the place a holder's effects go ([`HolderMachine::carry`]): each statement is
/// answered by the view at once, unless it would wait for a row lock; a statement held at a
/// code point, or waiting, stays deferred for the holder's next [`Action::Run`].
pub(crate) struct View<'a, 'l> {
    pub(crate) sys: &'a LeaseSystem,
    pub(crate) n: &'a mut State,
    pub(crate) i: u8,
    pub(crate) log: &'a mut Log<'l>,
}

impl Carrier for View<'_, '_> {
    fn record(&mut self, op: Op) {
        self.log.push(Event::Record { holder: self.i, op });
    }

    fn abandon(&mut self, db: DbName, conn: ConnId) {
        if db == DbName::Res {
            // The server rolls back what the connection had open; a statement deferred for it
            // never goes out.
            self.sys.end_txn(self.n, self.i, false);
            let slot = &mut self.n.holders[self.i as usize];
            slot.cut = false;
            slot.pending = None;
        }
        self.log.push(Event::Abandon {
            holder: self.i,
            db,
            conn,
        });
    }

    fn hold(&mut self, req: u64, _db: DbName, _conn: ConnId, op: Op) {
        let stmt = Stmt::of(&op, self.sys.cfg(self.i));
        self.n.holders[self.i as usize].pending = Some(Pending { req, stmt });
    }

    fn send(&mut self, req: u64, _db: DbName, conn: ConnId, op: Op) -> Option<Outcome> {
        let stmt = Stmt::of(&op, self.sys.cfg(self.i));
        if self.sys.waits(self.n, self.i, stmt) {
            self.n.holders[self.i as usize].pending = Some(Pending { req, stmt });
            return None;
        }
        let outcome = self.sys.answer(self.n, self.i, stmt);
        self.log.push(Event::Sent {
            holder: self.i,
            conn,
            op,
            outcome: outcome.clone(),
        });
        Some(outcome)
    }
}
