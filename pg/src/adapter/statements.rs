//! The source design's statements, prepared per session, and the steps of a write (fence,
//! upsert, attempt log) as the client runs them.

use super::error::*;
use crate::sql;
use leaselab_model::Reason;
use leaselab_model::{Config, DbName, FenceMode, Millis, Outcome, PublishMode};
use tokio_postgres::{Client, Statement};

#[derive(Clone)]
pub(super) struct Stmts {
    pub(super) set_now: Statement,
    pub(super) now: Statement,
    pub(super) acquire: Option<Statement>,
    pub(super) renew: Option<Statement>,
    pub(super) release: Option<Statement>,
    pub(super) read_lease: Option<Statement>,
    pub(super) fence: Option<Statement>,
    pub(super) floor_read: Option<Statement>,
    pub(super) floor_set: Option<Statement>,
    pub(super) upsert: Option<Statement>,
    pub(super) publish: Option<Statement>,
    pub(super) attempt: Option<Statement>,
    pub(super) read_part: Option<Statement>,
    pub(super) read_publish: Option<Statement>,
    pub(super) count: Option<Statement>,
    /// A spec's statements, per operation (empty without a spec).
    pub(super) spec: super::spec_run::Prepared,
}

pub(super) fn st(s: &Option<Statement>) -> Result<&Statement, Outcome> {
    s.as_ref().ok_or_else(not_prepared)
}

/// The answer to a statement the session has not prepared: not this database's, or one a
/// user's spec does not define.
pub(super) fn not_prepared() -> Outcome {
    Outcome::Error(Reason::Other("statement-not-prepared".into()))
}

/// A write's arguments (writer = the calling actor).
#[derive(Clone, Debug)]
pub(super) struct W {
    pub(super) scope: String,
    pub(super) part: String,
    pub(super) content: String,
    pub(super) token: i64,
    pub(super) writer: String,
}

/// What a finished task leaves for the session's bookkeeping.
pub(super) struct Out {
    pub(super) outcome: Outcome,
    /// Attempts to remember until the transaction ends: (write, accepted).
    pub(super) drafts: Vec<(W, bool)>,
}

impl From<Outcome> for Out {
    fn from(outcome: Outcome) -> Self {
        Out {
            outcome,
            drafts: Vec::new(),
        }
    }
}

pub(super) async fn prepare(
    c: &Client,
    db: DbName,
    cfg: &Config,
    spec: Option<&super::spec_run::SpecRun>,
) -> Result<Stmts, tokio_postgres::Error> {
    if let Some(run) = spec {
        // The user's schema has none of the source's tables: only the clock statements.
        let now_sql = sql::now_us();
        let (set_now, now) = tokio::try_join!(c.prepare(sql::SET_NOW), c.prepare(&now_sql))?;
        return Ok(Stmts {
            set_now,
            now,
            acquire: None,
            renew: None,
            release: None,
            read_lease: None,
            fence: None,
            floor_read: None,
            floor_set: None,
            upsert: None,
            publish: None,
            attempt: None,
            read_part: None,
            read_publish: None,
            count: None,
            spec: super::spec_run::prepare_spec(c, db, run).await?,
        });
    }
    let lease = db == DbName::Lease;
    // Only this database's statements; all sent at once (tokio-postgres pipelines requests
    // that are polled together), so a new session costs one round trip, not thirteen.
    let p = |cond: bool, sql: String| async move {
        if cond {
            c.prepare(&sql).await.map(Some)
        } else {
            Ok(None)
        }
    };
    let fence_sql = match cfg.fence {
        FenceMode::Strict => sql::FENCE_STRICT,
        FenceMode::ScopeUpsert => sql::FENCE_UPSERT,
        _ => sql::FENCE_SCOPE,
    };
    let upsert_sql = if cfg.fence == FenceMode::Row {
        sql::UPSERT_ROW
    } else {
        sql::UPSERT
    };
    let publish_sql = match cfg.publish {
        PublishMode::BusinessKey => sql::PUBLISH_KEY,
        PublishMode::Versioned => sql::PUBLISH_VERSIONED,
    };
    let now_sql = sql::now_us();
    let (set_now, now, acquire, renew, release, read_lease, fence) = tokio::try_join!(
        c.prepare(sql::SET_NOW),
        c.prepare(&now_sql),
        p(lease, sql::acquire(cfg.lock_delay_ms)),
        p(lease, sql::renew(cfg.renew_after_expiry)),
        p(lease, sql::RELEASE.to_string()),
        p(lease, sql::read_lease()),
        p(!lease, fence_sql.to_string()),
    )?;
    let (floor_read, floor_set, upsert, publish, attempt, read_part, read_publish, count) = tokio::try_join!(
        p(!lease, sql::FLOOR_READ.to_string()),
        p(!lease, sql::FLOOR_SET.to_string()),
        p(!lease, upsert_sql.to_string()),
        p(!lease, publish_sql.to_string()),
        p(!lease, sql::ATTEMPT.to_string()),
        p(!lease, sql::READ_PART.to_string()),
        p(!lease, sql::READ_PUBLISH.to_string()),
        p(!lease, sql::COUNT_ATTEMPTS.to_string()),
    )?;
    Ok(Stmts {
        set_now,
        now,
        acquire,
        renew,
        release,
        read_lease,
        fence,
        floor_read,
        floor_set,
        upsert,
        publish,
        attempt,
        read_part,
        read_publish,
        count,
        spec: Vec::new(),
    })
}

pub(super) async fn set_now(
    c: &Client,
    s: &Stmts,
    now: Option<Millis>,
) -> Result<(), tokio_postgres::Error> {
    if let Some(t) = now {
        c.query_one(&s.set_now, &[&t.0.to_string()]).await?;
    }
    Ok(())
}

pub(super) async fn log_attempt(
    c: &Client,
    s: &Stmts,
    w: &W,
    accepted: bool,
) -> Result<(), Outcome> {
    c.execute(
        st(&s.attempt)?,
        &[&w.scope, &w.part, &w.writer, &w.token, &accepted],
    )
    .await
    .map_err(stmt_err)?;
    Ok(())
}

/// The fence statement of `mode`: Ok(true) passed.
pub(super) async fn fence(c: &Client, s: &Stmts, mode: FenceMode, w: &W) -> Result<bool, Outcome> {
    match mode {
        FenceMode::Scope | FenceMode::Strict | FenceMode::ScopeUpsert => {
            let n = c
                .execute(st(&s.fence)?, &[&w.token, &w.scope])
                .await
                .map_err(stmt_err)?;
            Ok(n == 1)
        }
        FenceMode::CheckThenWrite => {
            let row = c
                .query_opt(st(&s.floor_read)?, &[&w.scope])
                .await
                .map_err(stmt_err)?;
            let floor: Option<i64> = row.map(|r| r.get(0));
            Ok(floor.is_some_and(|f| f <= w.token))
        }
        FenceMode::Row | FenceMode::Off => Ok(true),
    }
}

/// The upsert of `mode` (check-then-write first sets the floor, autocommitted): Ok(true) done.
pub(super) async fn upsert(c: &Client, s: &Stmts, mode: FenceMode, w: &W) -> Result<bool, Outcome> {
    if mode == FenceMode::CheckThenWrite {
        c.execute(st(&s.floor_set)?, &[&w.token, &w.scope])
            .await
            .map_err(stmt_err)?;
    }
    let n = c
        .execute(
            st(&s.upsert)?,
            &[&w.scope, &w.part, &w.content, &w.writer, &w.token],
        )
        .await
        .map_err(stmt_err)?;
    Ok(n == 1)
}

/// One statement (after setting the virtual clock when given): `yes` if it touched exactly one
/// row, `no` otherwise — the shape of release and publish.
pub(super) async fn one_row(
    c: &Client,
    s: &Stmts,
    now: Option<Millis>,
    stmt: &Option<Statement>,
    params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    yes: Outcome,
    no: Outcome,
) -> Outcome {
    let r: Result<Outcome, Outcome> = async {
        set_now(c, s, now).await.map_err(stmt_err)?;
        let n = c.execute(st(stmt)?, params).await.map_err(stmt_err)?;
        Ok(if n == 1 { yes } else { no })
    }
    .await;
    r.unwrap_or_else(|o| o)
}

/// A statement returning at most one row, run at virtual time `now`: `found` reads the row,
/// `none` is the answer when no row came back.
pub(super) async fn opt_row(
    c: &Client,
    s: &Stmts,
    now: Option<Millis>,
    stmt: &Option<Statement>,
    params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    found: impl FnOnce(&tokio_postgres::Row) -> Result<Outcome, Outcome>,
    none: Outcome,
) -> Outcome {
    let r: Result<Outcome, Outcome> = async {
        set_now(c, s, now).await.map_err(stmt_err)?;
        match c.query_opt(st(stmt)?, params).await.map_err(stmt_err)? {
            Some(row) => found(&row),
            None => Ok(none),
        }
    }
    .await;
    r.unwrap_or_else(|o| o)
}

pub(super) fn flatten<T>(r: Result<T, Outcome>) -> Result<T, Out> {
    r.map_err(Out::from)
}
