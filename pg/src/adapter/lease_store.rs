//! `LeaseStore` on PostgreSQL: acquire, renew, release with the source's SQL.

use super::error::*;
use super::spec_ops::Args;
use super::state::*;
use super::statements::*;
use crate::spec::OpKind;
use leaselab_model::{Ctx, DbName, Holder, LeaseName, LeaseRow, LeaseStore, Outcome, Token};

impl LeaseStore for PgBackend {
    fn acquire(
        &mut self,
        cx: &Ctx<'_>,
        lease: &LeaseName,
        holder: &Holder,
        ttl_ms: u64,
    ) -> Outcome {
        let args = Args {
            lease: lease.to_string(),
            holder: holder.to_string(),
            ttl_ms: ttl_ms as i64,
            ..Args::default()
        };
        if let Some(o) = self.spec_op(cx, OpKind::Acquire, args) {
            return o;
        }
        let (c, s, in_txn) = session_or_return!(self, DbName::Lease, cx);
        let now = self.now_for(in_txn, cx.now);
        let (name, h) = (lease.to_string(), holder.to_string());
        self.run(DbName::Lease, cx.conn, async move {
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
        let args = Args {
            lease: lease.to_string(),
            holder: holder.to_string(),
            ttl_ms: ttl_ms as i64,
            token: token.0 as i64,
            ..Args::default()
        };
        if let Some(o) = self.spec_op(cx, OpKind::Renew, args) {
            return o;
        }
        let (c, s, in_txn) = session_or_return!(self, DbName::Lease, cx);
        let now = self.now_for(in_txn, cx.now);
        let (name, h, t) = (lease.to_string(), holder.to_string(), token.0 as i64);
        self.run(DbName::Lease, cx.conn, async move {
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
        let args = Args {
            lease: lease.to_string(),
            holder: holder.to_string(),
            token: token.0 as i64,
            ..Args::default()
        };
        if let Some(o) = self.spec_op(cx, OpKind::Release, args) {
            return o;
        }
        let (c, s, in_txn) = session_or_return!(self, DbName::Lease, cx);
        let now = self.now_for(in_txn, cx.now);
        let (name, h, t) = (lease.to_string(), holder.to_string(), token.0 as i64);
        self.run(DbName::Lease, cx.conn, async move {
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
        let (c, s, _) = session_or_return!(self, DbName::Lease, cx);
        let name = lease.to_string();
        self.rt.block_on(async move {
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
