//! The source design's lease calls and fenced write as a holder process makes them: the
//! adapter's SQL (`crate::sql`) on a real connection, with real `now()`, each answer with its
//! expiry by the server's clock (what the recorders write).

use super::{Context, RealError};
use crate::recording::Recording;
use crate::sql;
use leaselab_model::{Op, Outcome, Token};
use std::future::Future;
use tokio_postgres::Client;

/// The source design's acquire (`sql::acquire`), its expiry in ms since the Unix epoch by the
/// server's clock: what the recorders write.
pub(super) fn acquire_sql() -> String {
    sql::acquire_returning(0, &sql::expiry_epoch_ms("l.expires_at"))
}

/// The source design's renew, returning its expiry as [`acquire_sql`] does.
fn renew_sql() -> String {
    sql::renew_returning(false, &sql::expiry_epoch_ms("expires_at"))
}

/// The source design's acquire on the lease table: the new token and the expiry it set (ms
/// since the epoch, by the server's `now()`), or `None` while another holder's lease is valid.
pub async fn acquire(
    client: &Client,
    lease: &str,
    holder: &str,
    ttl_ms: u64,
) -> Result<Option<(Token, i64)>, RealError> {
    let args: [&(dyn tokio_postgres::types::ToSql + Sync); 3] = [&lease, &holder, &(ttl_ms as f64)];
    Ok(client
        .query_opt(&acquire_sql(), &args)
        .await
        .ctx("acquire")?
        .map(|r| (Token(r.get::<_, i64>(0) as u64), r.get(1))))
}

/// The source design's renew: the new expiry (ms since the epoch), or `None` when the lease is
/// no longer this holder's under this token, or has expired.
pub async fn renew(
    client: &Client,
    lease: &str,
    holder: &str,
    token: Token,
    ttl_ms: u64,
) -> Result<Option<i64>, RealError> {
    let args: [&(dyn tokio_postgres::types::ToSql + Sync); 4] =
        [&(ttl_ms as f64), &lease, &holder, &(token.0 as i64)];
    Ok(client
        .query_opt(&renew_sql(), &args)
        .await
        .ctx("renew")?
        .map(|r| r.get(0)))
}

/// The source design's release: whether the lease was still this holder's to end.
pub async fn release(
    client: &Client,
    lease: &str,
    holder: &str,
    token: Token,
) -> Result<bool, RealError> {
    let args: [&(dyn tokio_postgres::types::ToSql + Sync); 3] =
        [&lease, &holder, &(token.0 as i64)];
    Ok(client.execute(sql::RELEASE, &args).await.ctx("release")? == 1)
}

/// Runs `call` recorded as `op` on `rec` (see [`Recording::around`]).
pub async fn recorded<T>(
    rec: &Recording,
    conn: Option<&str>,
    op: &Op,
    call: impl Future<Output = Result<T, RealError>>,
    outcome: impl FnOnce(&T) -> Outcome,
) -> Result<T, RealError> {
    rec.around(conn, op, call, outcome).await.ctx("record")?
}

/// The source design's write of the summary part as holder `name` with `token`: with the scope
/// fence, BEGIN, the fence, the upsert, COMMIT (or ROLLBACK when the fence refuses); unfenced,
/// the upsert alone; then the attempt log. Whether the write was accepted.
pub async fn write(
    res: &Client,
    fenced: bool,
    name: &str,
    token: i64,
    content: &str,
) -> Result<bool, RealError> {
    let ok = if fenced {
        res.batch_execute("BEGIN").await.ctx("write")?;
        let n = res
            .execute(sql::FENCE_SCOPE, &[&token, &"daily-report"])
            .await
            .ctx("write")?;
        if n == 1 {
            res.execute(
                sql::UPSERT,
                &[&"daily-report", &"summary", &content, &name, &token],
            )
            .await
            .ctx("write")?;
            res.batch_execute("COMMIT").await.ctx("write")?;
            true
        } else {
            res.batch_execute("ROLLBACK").await.ctx("write")?;
            false
        }
    } else {
        res.execute(
            sql::UPSERT,
            &[&"daily-report", &"summary", &content, &name, &token],
        )
        .await
        .ctx("write")?;
        true
    };
    res.execute(
        sql::ATTEMPT,
        &[&"daily-report", &"summary", &name, &token, &ok],
    )
    .await
    .ctx("write")?;
    Ok(ok)
}
