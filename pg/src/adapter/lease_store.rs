//! `LeaseStore` with the source design's SQL: acquire, renew, release, read the lease.

use super::error::*;
use super::seam::SourceSql;
use super::statements::*;
use leaselab_model::{Ctx, DbName, Holder, LeaseName, LeaseRow, LeaseStore, Outcome, Token};

impl LeaseStore for SourceSql<'_> {
    fn acquire(
        &mut self,
        cx: &Ctx<'_>,
        lease: &LeaseName,
        holder: &Holder,
        ttl_ms: u64,
    ) -> Outcome {
        let be = &mut *self.0;
        let (c, s, in_txn) = session_or_return!(be, DbName::Lease, cx);
        let now = be.now_for(in_txn, cx.now);
        let (name, h) = (lease.to_string(), holder.to_string());
        be.run(DbName::Lease, cx.conn, async move {
            let grant = |r: &tokio_postgres::Row| {
                let t: i64 = r.get(0);
                Ok(Outcome::Granted {
                    token: Token(t as u64),
                    expires: ms_of_us(r.get(1))?,
                })
            };
            let ttl = ttl_ms as f64;
            opt_row(
                &c,
                &s,
                now,
                &s.acquire,
                &[&name, &h, &ttl],
                grant,
                Outcome::Refused,
            )
            .await
            .into()
        })
    }

    fn renew(
        &mut self,
        cx: &Ctx<'_>,
        lease: &LeaseName,
        holder: &Holder,
        token: Token,
        ttl_ms: u64,
    ) -> Outcome {
        let be = &mut *self.0;
        let (c, s, in_txn) = session_or_return!(be, DbName::Lease, cx);
        let now = be.now_for(in_txn, cx.now);
        let (name, h, t) = (lease.to_string(), holder.to_string(), token.0 as i64);
        be.run(DbName::Lease, cx.conn, async move {
            let renewed = |r: &tokio_postgres::Row| {
                Ok(Outcome::Renewed {
                    expires: ms_of_us(r.get(0))?,
                })
            };
            let ttl = ttl_ms as f64;
            opt_row(
                &c,
                &s,
                now,
                &s.renew,
                &[&ttl, &name, &h, &t],
                renewed,
                Outcome::Refused,
            )
            .await
            .into()
        })
    }

    fn release(
        &mut self,
        cx: &Ctx<'_>,
        lease: &LeaseName,
        holder: &Holder,
        token: Token,
    ) -> Outcome {
        let be = &mut *self.0;
        let (c, s, in_txn) = session_or_return!(be, DbName::Lease, cx);
        let now = be.now_for(in_txn, cx.now);
        let (name, h, t) = (lease.to_string(), holder.to_string(), token.0 as i64);
        be.run(DbName::Lease, cx.conn, async move {
            one_row(
                &c,
                &s,
                now,
                &s.release,
                &[&name, &h, &t],
                Outcome::Released,
                Outcome::Refused,
            )
            .await
            .into()
        })
    }

    fn read_lease(&mut self, cx: &Ctx<'_>, lease: &LeaseName) -> Outcome {
        let be = &mut *self.0;
        let (c, s, _) = session_or_return!(be, DbName::Lease, cx);
        let name = lease.to_string();
        be.rt.block_on(async move {
            let r: Result<Outcome, Outcome> = async {
                let row = c
                    .query_opt(st(&s.read_lease)?, &[&name])
                    .await
                    .map_err(stmt_err)?;
                Ok(match row {
                    Some(r) => {
                        let t: i64 = r.get(1);
                        Outcome::Lease(Some(LeaseRow {
                            holder: Holder::new(r.get::<_, String>(0)),
                            token: Token(t as u64),
                            expires_at: ms_of_us(r.get(2))?,
                        }))
                    }
                    None => Outcome::Lease(None),
                })
            }
            .await;
            r.unwrap_or_else(|o| o)
        })
    }
}
