//! The backend seam on the user's own SQL (a [`Spec`]): each operation runs its statements —
//! as one transaction when the spec lists several — and its outcome is read by the spec's
//! conventions from what PostgreSQL answered. Sessions, lock-wait detection, settling, crashes
//! and the virtual clock are the adapter's, unchanged.

use super::error::*;
use super::seam::SpecSql;
use super::sessions::Pause;
use super::statements::*;
use crate::spec::{OpKind, Param, Shape, StatementKind};
use leaselab_model::Reason;
use leaselab_model::{Ctx, Expiry, Millis, Outcome, Token};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio_postgres::types::{FromSql, ToSql, Type};
use tokio_postgres::{Client, Statement};

/// The values of one operation's parameters.
#[derive(Clone, Debug, Default)]
pub(super) struct Args {
    pub(super) lease: String,
    pub(super) holder: String,
    pub(super) ttl_ms: i64,
    pub(super) token: i64,
    pub(super) scope: String,
    pub(super) part: String,
    pub(super) content: String,
    pub(super) key: String,
}

impl Args {
    fn value(&self, p: Param) -> Value {
        match p {
            Param::Lease => Value::Text(self.lease.clone()),
            Param::Holder => Value::Text(self.holder.clone()),
            Param::TtlMs => Value::Int(self.ttl_ms),
            Param::Token => Value::Int(self.token),
            Param::Scope => Value::Text(self.scope.clone()),
            Param::Part => Value::Text(self.part.clone()),
            Param::Content => Value::Text(self.content.clone()),
            Param::Key => Value::Text(self.key.clone()),
        }
    }
}

#[derive(Clone, Debug)]
enum Value {
    Text(String),
    Int(i64),
}

impl Value {
    fn sql(&self) -> &(dyn ToSql + Sync) {
        match self {
            Value::Text(s) => s,
            Value::Int(i) => i,
        }
    }
}

/// A timestamp as PostgreSQL sends it: microseconds since 2000-01-01, `±infinity` as the
/// extreme values (`timestamp.h`: `DT_NOBEGIN`, `DT_NOEND`).
struct RawTime(i64);

impl<'a> FromSql<'a> for RawTime {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        let b: [u8; 8] = raw.try_into()?;
        Ok(RawTime(i64::from_be_bytes(b)))
    }

    fn accepts(ty: &Type) -> bool {
        matches!(*ty, Type::TIMESTAMPTZ | Type::TIMESTAMP)
    }
}

/// Virtual time 0 (`sql::EPOCH`, 2026-01-01 UTC) in PostgreSQL's microseconds since 2000-01-01.
const EPOCH_US: i64 = 9_497 * 86_400 * 1_000_000;

fn expiry_of(t: RawTime) -> Result<Expiry, Outcome> {
    match t.0 {
        i64::MIN => Ok(Expiry::NegInfinity),
        i64::MAX => Err(Outcome::Error(Reason::Other("expiry-infinity".into()))),
        us => ms_of_us(Some(us - EPOCH_US)),
    }
}

/// What the statements of an operation did.
struct Ran {
    /// The last statement that counts affected or returned a row (and a transaction, if any,
    /// committed).
    done: bool,
    /// The first row of the last statement that returned rows.
    row: Option<tokio_postgres::Row>,
}

/// Runs one operation's statements on `c`. A list in a transaction stops at the first
/// statement that affects or returns nothing and rolls back; so does any error.
/// A pause point: after statement `after` (0-based), set `at` and wait for `resume`.
struct PauseAt {
    after: usize,
    at: Arc<AtomicBool>,
    resume: tokio::sync::oneshot::Receiver<Millis>,
}

/// How an operation's statements stand to transactions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Each statement is its own transaction (one statement, or a list the spec runs in
    /// autocommit).
    Autocommit,
    /// The list is one transaction of its own: `BEGIN` … `COMMIT`.
    Own,
    /// Inside the transaction the holder holds open on the connection (`begin db=lease`): a
    /// list runs as a savepoint, so that "stop at the first statement that does nothing and
    /// roll back" takes back only this operation (`ROLLBACK TO SAVEPOINT`, manual
    /// "SAVEPOINT"); an error aborts the holder's whole transaction, as PostgreSQL does
    /// (manual 3.4), and its COMMIT rolls back. `now()` stays the transaction's start.
    Held { list: bool },
}

/// The savepoint a list runs in inside a held transaction.
const SAVEPOINT: &str = "lab_op";

async fn exec(
    c: Arc<Client>,
    st: Stmts,
    now: Option<Millis>,
    sql: Vec<(StatementKind, String, Option<Statement>, Vec<Value>)>,
    mode: Mode,
    mut pause: Option<PauseAt>,
) -> Result<Ran, Outcome> {
    let own = mode == Mode::Own;
    let savepoint = mode == Mode::Held { list: true };
    set_now(&c, &st, now).await.map_err(stmt_err)?;
    if own {
        c.batch_execute("BEGIN").await.map_err(stmt_err)?;
    }
    if savepoint {
        c.batch_execute(&format!("SAVEPOINT {SAVEPOINT}"))
            .await
            .map_err(stmt_err)?;
    }
    let abort = |o: Outcome| {
        let c = c.clone();
        async move {
            if own {
                let _ = c.batch_execute("ROLLBACK").await;
            }
            o
        }
    };
    let mut ran = Ran {
        done: false,
        row: None,
    };
    for (i, (kind, text, prepared, values)) in sql.into_iter().enumerate() {
        // The holder stops here (a GC pause, SIGSTOP) with its transaction open, if any.
        if let Some(p) = pause.take_if(|p| p.after + 1 == i) {
            p.at.store(true, Ordering::SeqCst);
            let Ok(resumed) = p.resume.await else {
                return Err(Outcome::Error(Reason::ConnLost));
            };
            // Each statement of an autocommit list is its own transaction: its `now()` is
            // when it runs, after the pause. In a transaction `now()` stays its start.
            if mode == Mode::Autocommit && now.is_some() {
                set_now(&c, &st, Some(resumed)).await.map_err(stmt_err)?;
            }
        }
        let params: Vec<&(dyn ToSql + Sync)> = values.iter().map(Value::sql).collect();
        let done = match (kind, prepared) {
            (StatementKind::Utility, _) | (_, None) => {
                if let Err(e) = c.batch_execute(&text).await {
                    return Err(abort(stmt_err(e)).await);
                }
                continue;
            }
            (_, Some(p)) if !p.columns().is_empty() => match c.query(&p, &params).await {
                Ok(rows) => {
                    let got = !rows.is_empty();
                    ran.row = rows.into_iter().next();
                    got
                }
                Err(e) => return Err(abort(stmt_err(e)).await),
            },
            (_, Some(p)) => match c.execute(&p, &params).await {
                Ok(n) => n > 0,
                Err(e) => return Err(abort(stmt_err(e)).await),
            },
        };
        ran.done = done;
        if !done {
            if own {
                c.batch_execute("ROLLBACK").await.map_err(stmt_err)?;
            }
            if savepoint {
                c.batch_execute(&format!(
                    "ROLLBACK TO SAVEPOINT {SAVEPOINT}; RELEASE SAVEPOINT {SAVEPOINT}"
                ))
                .await
                .map_err(stmt_err)?;
            }
            return Ok(ran);
        }
    }
    if let Some(p) = pause {
        p.at.store(true, Ordering::SeqCst);
        if p.resume.await.is_err() {
            return Err(Outcome::Error(Reason::ConnLost));
        }
    }
    if own {
        c.batch_execute("COMMIT").await.map_err(commit_err)?;
    }
    if savepoint {
        c.batch_execute(&format!("RELEASE SAVEPOINT {SAVEPOINT}"))
            .await
            .map_err(stmt_err)?;
    }
    Ok(ran)
}

impl SpecSql<'_> {
    /// Runs the spec's `kind` for `cx` with `args`.
    pub(super) fn op(&mut self, cx: &Ctx<'_>, kind: OpKind, args: Args) -> Outcome {
        let run = self.run.clone();
        // A pause belongs to this operation even if it never reaches the server (a database
        // down, a lost connection): it must not move on to a later one.
        let pause_next = self.pause.take();
        let be = &mut *self.be;
        let Some(at) = run.spec.ops.iter().position(|o| o.kind == kind) else {
            return Outcome::Error(Reason::other(format!("spec-has-no-{}", kind.as_str())));
        };
        let db = kind.db();
        if let Some(o) = be.admit(db, cx.conn) {
            return o;
        }
        let (c, st, in_txn) = match be.session(db, cx.conn) {
            Ok(s) => s,
            Err(o) => return o,
        };
        let op = &run.spec.ops[at];
        let shape = run.shapes[at].clone();
        let prepared = st.spec.get(at).cloned().unwrap_or_default();
        let sql: Vec<_> = op
            .statements
            .iter()
            .enumerate()
            .map(|(i, s)| {
                (
                    s.kind,
                    s.sql.clone(),
                    prepared.get(i).cloned().flatten(),
                    s.params.iter().map(|p| args.value(*p)).collect(),
                )
            })
            .collect();
        let list = op.transaction && op.statements.len() > 1;
        let mode = match (in_txn, list) {
            (true, list) => Mode::Held { list },
            (false, true) => Mode::Own,
            (false, false) => Mode::Autocommit,
        };
        // Inside a held transaction `now()` is its start, set at its BEGIN.
        let now = be.now_for(in_txn, cx.now);
        let began = match in_txn {
            true => be.began(db, cx.conn),
            false => now,
        };
        let ttl = args.ttl_ms;
        let (pause, hold) = match pause_next {
            Some(k) => {
                let (hold, at, resume) = Pause::new();
                let after = k.min(sql.len().saturating_sub(1));
                (Some(PauseAt { after, at, resume }), Some(hold))
            }
            None => (None, None),
        };
        be.run_pausable(
            db,
            cx.conn,
            async move {
                let r = exec(c, st, now, sql, mode, pause).await;
                let outcome = match (kind, r) {
                    (_, Err(o)) => o,
                    (OpKind::Acquire, Ok(Ran { done: true, row })) => {
                        match grant(row.as_ref(), &shape, began, ttl) {
                            Ok(o) | Err(o) => o,
                        }
                    }
                    (
                        OpKind::Acquire | OpKind::Renew | OpKind::Release,
                        Ok(Ran { done: false, .. }),
                    ) => Outcome::Refused,
                    (OpKind::Renew, Ok(Ran { row, .. })) => {
                        match renewed(row.as_ref(), &shape, began, ttl) {
                            Ok(o) | Err(o) => o,
                        }
                    }
                    (OpKind::Release, Ok(_)) => Outcome::Released,
                    (OpKind::Write, Ok(r)) => {
                        if r.done {
                            Outcome::Accepted
                        } else {
                            Outcome::Rejected
                        }
                    }
                    (OpKind::Publish, Ok(r)) => {
                        if r.done {
                            Outcome::Accepted
                        } else {
                            Outcome::Rejected
                        }
                    }
                    (OpKind::ReadPart, Ok(r)) => match part_row(r.row.as_ref(), &shape) {
                        Ok(o) | Err(o) => o,
                    },
                };
                outcome.into()
            },
            hold,
        )
    }
}

/// An acquire's row: its `token`, and `expires_at` if returned (else the expiry the caller
/// asked for: the statement's `now()` plus the TTL).
fn grant(
    row: Option<&tokio_postgres::Row>,
    shape: &Shape,
    now: Option<Millis>,
    ttl_ms: i64,
) -> Result<Outcome, Outcome> {
    let row = row.ok_or_else(|| Outcome::Error(Reason::Other("acquire-returned-no-row".into())))?;
    let col = shape
        .token
        .ok_or_else(|| Outcome::Error(Reason::Other("acquire-has-no-token".into())))?;
    let token = int_at(row, col)?;
    if token <= 0 {
        return Err(Outcome::Error(Reason::other(format!(
            "token-not-positive-{token}"
        ))));
    }
    Ok(Outcome::Granted {
        token: Token(token as u64),
        expires: expires(row, shape, now, ttl_ms)?,
    })
}

fn renewed(
    row: Option<&tokio_postgres::Row>,
    shape: &Shape,
    now: Option<Millis>,
    ttl_ms: i64,
) -> Result<Outcome, Outcome> {
    let expires = match row {
        Some(r) => expires(r, shape, now, ttl_ms)?,
        None => asked(now, ttl_ms)?,
    };
    Ok(Outcome::Renewed { expires })
}

fn expires(
    row: &tokio_postgres::Row,
    shape: &Shape,
    now: Option<Millis>,
    ttl_ms: i64,
) -> Result<Expiry, Outcome> {
    match shape.expires_at {
        Some(i) => {
            let t: RawTime = row.try_get(i).map_err(|e| {
                Outcome::Error(Reason::other(format!("expires_at:{e}").replace(' ', "_")))
            })?;
            expiry_of(t)
        }
        None => asked(now, ttl_ms),
    }
}

fn asked(now: Option<Millis>, ttl_ms: i64) -> Result<Expiry, Outcome> {
    let now = now.ok_or_else(|| Outcome::Error(Reason::Other("no-virtual-time".into())))?;
    Ok(Expiry::At(Millis(now.0 + ttl_ms.max(0) as u64)))
}

fn int_at(row: &tokio_postgres::Row, i: usize) -> Result<i64, Outcome> {
    let v = match *row.columns()[i].type_() {
        Type::INT2 => row.try_get::<_, i16>(i).map(i64::from),
        Type::INT4 => row.try_get::<_, i32>(i).map(i64::from),
        _ => row.try_get::<_, i64>(i),
    };
    v.map_err(|e| Outcome::Error(Reason::other(format!("token:{e}").replace(' ', "_"))))
}

fn part_row(row: Option<&tokio_postgres::Row>, shape: &Shape) -> Result<Outcome, Outcome> {
    let Some(r) = row else {
        return Ok(Outcome::Part(None));
    };
    let (Some(c), Some(w), Some(t)) = (shape.content, shape.writer, shape.token) else {
        return Err(Outcome::Error(Reason::Other("read-part-shape".into())));
    };
    let text = |i: usize| {
        r.try_get::<_, String>(i)
            .map_err(|e| Outcome::Error(Reason::other(format!("read-part:{e}").replace(' ', "_"))))
    };
    Ok(Outcome::Part(Some(leaselab_model::PartRow {
        content: text(c)?,
        writer: leaselab_model::Holder::new(text(w)?),
        token: Token(int_at(r, t)?.max(0) as u64),
    })))
}
