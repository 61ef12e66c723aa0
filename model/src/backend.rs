//! The seam between the model and real storage (the backend seam): a lease store and a fenced
//! resource, plus the session and fault controls a replay needs. The model implements them; the
//! PostgreSQL adapter implements them with the source design's SQL; [`apply`] drives either from
//! a recorded [`Op`], which is how one trace replays against both unchanged.

use crate::history::{DbName, Op, Outcome};
use crate::names::{ConnId, Holder, LeaseName, Part, Scope, Token};
use crate::rows::AttemptOutcome;
use crate::time::Millis;

/// Who is calling, on which connection, at what time.
#[derive(Clone, Copy, Debug)]
pub struct Ctx<'a> {
    /// Authority (database) time: the model's `now()`.
    pub now: Millis,
    /// The caller's own clock reading; only client-side checks use it.
    pub local: Millis,
    /// The caller.
    pub actor: &'a Holder,
    /// The connection the statement runs on.
    pub conn: &'a ConnId,
}

/// Transaction control of one connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionStep {
    /// `BEGIN`.
    Begin,
    /// `BEGIN ISOLATION LEVEL REPEATABLE READ`.
    BeginRepeatableRead,
    /// `COMMIT`.
    Commit,
    /// `ROLLBACK`.
    Rollback,
    /// Collect the result of the connection's blocked statement.
    Await,
    /// `SELECT now()`.
    Now,
    /// The client closed its socket (see [`crate::Op::Disconnect`]).
    Disconnect,
}

/// The lease table (`lease26`). Every method is one atomic statement; inside a transaction it
/// sees the transaction's start time as `now()`.
pub trait LeaseStore {
    /// Acquire: `Granted` with token 1 on insert or old token + 1 on takeover of an expired or
    /// released row; `Refused` (row unchanged) while held.
    fn acquire(&mut self, cx: &Ctx<'_>, lease: &LeaseName, holder: &Holder, ttl_ms: u64)
        -> Outcome;
    /// Renew: `Renewed` only if holder and token match and the lease has not expired.
    fn renew(
        &mut self,
        cx: &Ctx<'_>,
        lease: &LeaseName,
        holder: &Holder,
        token: Token,
        ttl_ms: u64,
    ) -> Outcome;
    /// Release: sets `expires_at = -infinity`; the token stays.
    fn release(
        &mut self,
        cx: &Ctx<'_>,
        lease: &LeaseName,
        holder: &Holder,
        token: Token,
    ) -> Outcome;
    /// Reads the lease row.
    fn read_lease(&mut self, cx: &Ctx<'_>, lease: &LeaseName) -> Outcome;
}

/// The protected resource (`res26`). The writer of every write is `cx.actor`.
pub trait FencedResource {
    /// A whole write: begin, fence, upsert, commit — `Accepted` or `Rejected`.
    fn write(
        &mut self,
        cx: &Ctx<'_>,
        scope: &Scope,
        part: &Part,
        content: &str,
        token: Token,
    ) -> Outcome;
    /// Step: the fence statement of the open transaction.
    fn fence(&mut self, cx: &Ctx<'_>, scope: &Scope, token: Token) -> Outcome;
    /// Step: the upsert of one part.
    fn upsert(
        &mut self,
        cx: &Ctx<'_>,
        scope: &Scope,
        part: &Part,
        content: &str,
        token: Token,
    ) -> Outcome;
    /// F9's side effect, deduplicated by business key (or by version, the fix).
    fn publish(&mut self, cx: &Ctx<'_>, key: &str, content: &str, token: Token) -> Outcome;
    /// Reads a floor.
    fn read_floor(&mut self, cx: &Ctx<'_>, scope: &Scope) -> Outcome;
    /// Reads a part.
    fn read_part(&mut self, cx: &Ctx<'_>, scope: &Scope, part: &Part) -> Outcome;
    /// Reads the kept publish of a key.
    fn read_publish(&mut self, cx: &Ctx<'_>, key: &str) -> Outcome;
    /// Counts `write_attempt` rows.
    fn count_attempts(&mut self, cx: &Ctx<'_>, writer: &Holder, outcome: AttemptOutcome)
        -> Outcome;
}

/// Sessions and faults of either database.
pub trait Admin {
    /// Transaction control and `await` on `cx.conn` of database `db`.
    fn session(&mut self, cx: &Ctx<'_>, db: DbName, step: SessionStep) -> Outcome;
    /// Immediate stop without checkpoint.
    fn crash(&mut self, cx: &Ctx<'_>, db: DbName) -> Outcome;
    /// Restart with WAL recovery.
    fn restart(&mut self, cx: &Ctx<'_>, db: DbName) -> Outcome;
}

/// What a database host asks about a connection whose statement waited on a lock: is it still
/// waiting, or has it finished with a result its client has not collected? A simulated host
/// answers such a client when the statement ends, as a PostgreSQL backend does.
pub trait Waits {
    /// Whether the statement on `conn` of `db` still waits.
    fn is_blocked(&self, db: DbName, conn: &ConnId) -> bool;
    /// Whether `conn` on `db` has a finished result nobody collected.
    fn has_result(&self, db: DbName, conn: &ConnId) -> bool;
}

/// A whole backend: both databases, and the configuration they were reset to.
pub trait Backend: LeaseStore + FencedResource + Admin {
    /// The configuration in force.
    fn config(&self) -> crate::config::Config;
    /// The operation at history position `seq` runs next (the model stamps its ledger).
    fn stamp(&mut self, _seq: u64) {}
}

/// Implements the backend traits for a wrapper by delegating every method to `$inner`
/// (an expression over `$self` that yields something implementing them), e.g. a `Box<dyn
/// Backend>` or an `Rc<RefCell<…>>` shared between lab cases.
#[macro_export]
macro_rules! delegate_backend {
    ($ty:ty, $self:ident => $inner:expr) => {
        $crate::delegate_statements!($ty, $self => $inner);
        impl $crate::Admin for $ty {
            fn session(&mut $self, cx: &$crate::Ctx<'_>, db: $crate::DbName, step: $crate::SessionStep) -> $crate::Outcome {
                $inner.session(cx, db, step)
            }
            fn crash(&mut $self, cx: &$crate::Ctx<'_>, db: $crate::DbName) -> $crate::Outcome {
                $inner.crash(cx, db)
            }
            fn restart(&mut $self, cx: &$crate::Ctx<'_>, db: $crate::DbName) -> $crate::Outcome {
                $inner.restart(cx, db)
            }
        }
    };
}

/// Implements [`LeaseStore`] and [`FencedResource`] (not [`Admin`]) for `$ty` by delegating
/// every method to `$inner`: a backend that keeps its own sessions but picks the statements
/// an operation runs (the PostgreSQL adapter: the source design's or a user's).
#[macro_export]
macro_rules! delegate_statements {
    ($ty:ty, $self:ident => $inner:expr) => {
        impl $crate::LeaseStore for $ty {
            fn acquire(&mut $self, cx: &$crate::Ctx<'_>, lease: &$crate::LeaseName, holder: &$crate::Holder, ttl_ms: u64) -> $crate::Outcome {
                $inner.acquire(cx, lease, holder, ttl_ms)
            }
            fn renew(&mut $self, cx: &$crate::Ctx<'_>, lease: &$crate::LeaseName, holder: &$crate::Holder, token: $crate::Token, ttl_ms: u64) -> $crate::Outcome {
                $inner.renew(cx, lease, holder, token, ttl_ms)
            }
            fn release(&mut $self, cx: &$crate::Ctx<'_>, lease: &$crate::LeaseName, holder: &$crate::Holder, token: $crate::Token) -> $crate::Outcome {
                $inner.release(cx, lease, holder, token)
            }
            fn read_lease(&mut $self, cx: &$crate::Ctx<'_>, lease: &$crate::LeaseName) -> $crate::Outcome {
                $inner.read_lease(cx, lease)
            }
        }
        impl $crate::FencedResource for $ty {
            fn write(&mut $self, cx: &$crate::Ctx<'_>, scope: &$crate::Scope, part: &$crate::Part, content: &str, token: $crate::Token) -> $crate::Outcome {
                $inner.write(cx, scope, part, content, token)
            }
            fn fence(&mut $self, cx: &$crate::Ctx<'_>, scope: &$crate::Scope, token: $crate::Token) -> $crate::Outcome {
                $inner.fence(cx, scope, token)
            }
            fn upsert(&mut $self, cx: &$crate::Ctx<'_>, scope: &$crate::Scope, part: &$crate::Part, content: &str, token: $crate::Token) -> $crate::Outcome {
                $inner.upsert(cx, scope, part, content, token)
            }
            fn publish(&mut $self, cx: &$crate::Ctx<'_>, key: &str, content: &str, token: $crate::Token) -> $crate::Outcome {
                $inner.publish(cx, key, content, token)
            }
            fn read_floor(&mut $self, cx: &$crate::Ctx<'_>, scope: &$crate::Scope) -> $crate::Outcome {
                $inner.read_floor(cx, scope)
            }
            fn read_part(&mut $self, cx: &$crate::Ctx<'_>, scope: &$crate::Scope, part: &$crate::Part) -> $crate::Outcome {
                $inner.read_part(cx, scope, part)
            }
            fn read_publish(&mut $self, cx: &$crate::Ctx<'_>, key: &str) -> $crate::Outcome {
                $inner.read_publish(cx, key)
            }
            fn count_attempts(&mut $self, cx: &$crate::Ctx<'_>, writer: &$crate::Holder, outcome: $crate::AttemptOutcome) -> $crate::Outcome {
                $inner.count_attempts(cx, writer, outcome)
            }
        }
    };
}

/// Executes a recorded event against any backend: its operation, at its time, on its
/// connection, by its actor.
pub fn apply_event<B: LeaseStore + FencedResource + Admin + ?Sized>(
    b: &mut B,
    e: &crate::history::Event,
) -> Outcome {
    let conn = e.conn_id();
    let cx = Ctx {
        now: e.at,
        local: e.local,
        actor: &e.actor,
        conn: &conn,
    };
    apply(b, &cx, &e.op)
}

/// Executes one recorded operation against any backend. Client-side events are evaluated
/// from their own arguments (a local-deadline check is `local < deadline`), so a replay can
/// verify them too.
pub fn apply<B: LeaseStore + FencedResource + Admin + ?Sized>(
    b: &mut B,
    cx: &Ctx<'_>,
    op: &Op,
) -> Outcome {
    match op {
        Op::Acquire {
            lease,
            holder,
            ttl_ms,
        } => b.acquire(cx, lease, holder, *ttl_ms),
        Op::Renew {
            lease,
            holder,
            token,
            ttl_ms,
        } => b.renew(cx, lease, holder, *token, *ttl_ms),
        Op::Release {
            lease,
            holder,
            token,
        } => b.release(cx, lease, holder, *token),
        Op::ReadLease { lease } => b.read_lease(cx, lease),
        Op::Write {
            scope,
            part,
            content,
            token,
        } => b.write(cx, scope, part, content, *token),
        Op::Fence { scope, token } => b.fence(cx, scope, *token),
        Op::Upsert {
            scope,
            part,
            content,
            token,
        } => b.upsert(cx, scope, part, content, *token),
        Op::Publish {
            key,
            content,
            token,
        } => b.publish(cx, key, content, *token),
        Op::ReadFloor { scope } => b.read_floor(cx, scope),
        Op::ReadPart { scope, part } => b.read_part(cx, scope, part),
        Op::ReadPublish { key } => b.read_publish(cx, key),
        Op::CountAttempts { writer, outcome } => b.count_attempts(cx, writer, *outcome),
        Op::Begin { db } => b.session(cx, *db, SessionStep::Begin),
        Op::BeginRepeatableRead { db } => b.session(cx, *db, SessionStep::BeginRepeatableRead),
        Op::Commit { db } => b.session(cx, *db, SessionStep::Commit),
        Op::Rollback { db } => b.session(cx, *db, SessionStep::Rollback),
        Op::Await { db } => b.session(cx, *db, SessionStep::Await),
        Op::Now { db } => b.session(cx, *db, SessionStep::Now),
        Op::Disconnect { db } => b.session(cx, *db, SessionStep::Disconnect),
        Op::Crash { db } => b.crash(cx, *db),
        Op::Restart { db } => b.restart(cx, *db),
        // The holder's own rule, the same one its deadline is kept by.
        Op::Check { deadline } => {
            let d = crate::client::LocalDeadline {
                deadline: *deadline,
            };
            if d.allows(cx.local) {
                Outcome::Valid
            } else {
                Outcome::Expired
            }
        }
        Op::Pause | Op::Resume | Op::Lost | Op::ClockStep { .. } => Outcome::Ok,
    }
}

delegate_backend!(Box<dyn Backend>, self => (**self));

impl Backend for Box<dyn Backend> {
    fn config(&self) -> crate::config::Config {
        (**self).config()
    }
}
