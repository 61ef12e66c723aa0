//! `FencedResource` on PostgreSQL: one-shot and step-wise writes under every fence mode,
//! publishes and reads.

use super::error::*;
use super::spec_ops::Args;
use super::state::*;
use super::statements::*;
use crate::spec::OpKind;
use leaselab_model::Reason;
use leaselab_model::{
    AttemptOutcome, Ctx, DbName, FencedResource, Holder, Outcome, Part, PartRow, Scope, Token,
};

impl FencedResource for PgBackend {
    fn write(
        &mut self,
        cx: &Ctx<'_>,
        scope: &Scope,
        part: &Part,
        content: &str,
        token: Token,
    ) -> Outcome {
        let args = Args {
            lease: self.spec_lease(),
            holder: cx.actor.to_string(),
            token: token.0 as i64,
            scope: scope.to_string(),
            part: part.to_string(),
            content: content.to_string(),
            ..Args::default()
        };
        if let Some(o) = self.spec_op(cx, OpKind::Write, args) {
            return o;
        }
        let (c, s, in_txn) = session_or_return!(self, DbName::Res, cx);
        if in_txn {
            return Outcome::Error(Reason::InTransaction);
        }
        let now = self.now_for(false, cx.now);
        let mode = self.config.fence;
        let txn = self.uses_txn(DbName::Res);
        let w = Self::write_args(cx, scope, part, content, token);
        self.run(DbName::Res, cx.conn, async move {
            let r: Result<Outcome, Outcome> = async {
                set_now(&c, &s, now).await.map_err(stmt_err)?;
                if txn {
                    c.batch_execute("BEGIN").await.map_err(stmt_err)?;
                }
                // An error inside the write's own transaction (a deadlock: 40P01) ends it, as
                // its client does; the connection is then free again.
                let steps = async {
                    let mut pass = fence(&c, &s, mode, &w).await?;
                    if pass {
                        pass = upsert(&c, &s, mode, &w).await?;
                    }
                    Ok::<bool, Outcome>(pass)
                };
                let pass = match steps.await {
                    Ok(p) => p,
                    Err(o) => {
                        if txn {
                            let _ = c.batch_execute("ROLLBACK").await;
                        }
                        return Err(o);
                    }
                };
                if txn {
                    c.batch_execute(if pass { "COMMIT" } else { "ROLLBACK" })
                        .await
                        .map_err(if pass { commit_err } else { stmt_err })?;
                }
                log_attempt(&c, &s, &w, pass).await?;
                Ok(if pass {
                    Outcome::Accepted
                } else {
                    Outcome::Rejected
                })
            }
            .await;
            r.unwrap_or_else(|o| o).into()
        })
    }

    fn fence(&mut self, cx: &Ctx<'_>, scope: &Scope, token: Token) -> Outcome {
        if self.spec.is_some() {
            return Outcome::Error(Reason::Other("spec-writes-are-one-shot".into()));
        }
        let (c, s, in_txn) = session_or_return!(self, DbName::Res, cx);
        let now = self.now_for(in_txn, cx.now);
        let mode = self.config.fence;
        let w = Self::write_args(cx, scope, &Part::new(""), "", token);
        self.run(DbName::Res, cx.conn, async move {
            let r: Result<Out, Out> = async {
                flatten(set_now(&c, &s, now).await.map_err(stmt_err))?;
                if flatten(fence(&c, &s, mode, &w).await)? {
                    return Ok(Outcome::Passed.into());
                }
                if in_txn {
                    return Ok(Out {
                        outcome: Outcome::Failed,
                        drafts: vec![(w, false)],
                    });
                }
                flatten(log_attempt(&c, &s, &w, false).await)?;
                Ok(Outcome::Failed.into())
            }
            .await;
            r.unwrap_or_else(|o| o)
        })
    }

    fn upsert(
        &mut self,
        cx: &Ctx<'_>,
        scope: &Scope,
        part: &Part,
        content: &str,
        token: Token,
    ) -> Outcome {
        if self.spec.is_some() {
            return Outcome::Error(Reason::Other("spec-writes-are-one-shot".into()));
        }
        let (c, s, in_txn) = session_or_return!(self, DbName::Res, cx);
        let now = self.now_for(in_txn, cx.now);
        let mode = self.config.fence;
        let w = Self::write_args(cx, scope, part, content, token);
        self.run(DbName::Res, cx.conn, async move {
            let r: Result<Out, Out> = async {
                flatten(set_now(&c, &s, now).await.map_err(stmt_err))?;
                let pass = flatten(upsert(&c, &s, mode, &w).await)?;
                if in_txn {
                    return Ok(Out {
                        outcome: if pass { Outcome::Ok } else { Outcome::Failed },
                        drafts: vec![(w, pass)],
                    });
                }
                flatten(log_attempt(&c, &s, &w, pass).await)?;
                Ok(if pass {
                    Outcome::Accepted
                } else {
                    Outcome::Rejected
                }
                .into())
            }
            .await;
            r.unwrap_or_else(|o| o)
        })
    }

    fn publish(&mut self, cx: &Ctx<'_>, key: &str, content: &str, token: Token) -> Outcome {
        let args = Args {
            lease: self.spec_lease(),
            holder: cx.actor.to_string(),
            token: token.0 as i64,
            key: key.to_string(),
            content: content.to_string(),
            ..Args::default()
        };
        if let Some(o) = self.spec_op(cx, OpKind::Publish, args) {
            return o;
        }
        let (c, s, in_txn) = session_or_return!(self, DbName::Res, cx);
        let now = self.now_for(in_txn, cx.now);
        let (k, ct, wr, t) = (
            key.to_string(),
            content.to_string(),
            cx.actor.to_string(),
            token.0 as i64,
        );
        self.run(DbName::Res, cx.conn, async move {
            one_row(
                &c,
                &s,
                now,
                &s.publish,
                &[&k, &ct, &wr, &t],
                Outcome::Accepted,
                Outcome::Rejected,
            )
            .await
            .into()
        })
    }

    fn read_floor(&mut self, cx: &Ctx<'_>, scope: &Scope) -> Outcome {
        let (c, s, _) = session_or_return!(self, DbName::Res, cx);
        let sc = scope.to_string();
        self.rt.block_on(async move {
            match st(&s.floor_read) {
                Ok(q) => match c.query_opt(q, &[&sc]).await {
                    Ok(r) => Outcome::Floor(r.map(|r| Token(r.get::<_, i64>(0) as u64))),
                    Err(e) => stmt_err(e),
                },
                Err(o) => o,
            }
        })
    }

    fn read_part(&mut self, cx: &Ctx<'_>, scope: &Scope, part: &Part) -> Outcome {
        let args = Args {
            lease: self.spec_lease(),
            scope: scope.to_string(),
            part: part.to_string(),
            ..Args::default()
        };
        if let Some(o) = self.spec_op(cx, OpKind::ReadPart, args) {
            return o;
        }
        let (c, s, _) = session_or_return!(self, DbName::Res, cx);
        let (sc, p) = (scope.to_string(), part.to_string());
        self.rt.block_on(async move {
            match st(&s.read_part) {
                Ok(q) => match c.query_opt(q, &[&sc, &p]).await {
                    Ok(r) => Outcome::Part(r.map(|r| PartRow {
                        content: r.get(0),
                        writer: Holder::new(r.get::<_, String>(1)),
                        token: Token(r.get::<_, i64>(2) as u64),
                    })),
                    Err(e) => stmt_err(e),
                },
                Err(o) => o,
            }
        })
    }

    fn read_publish(&mut self, cx: &Ctx<'_>, key: &str) -> Outcome {
        let (c, s, _) = session_or_return!(self, DbName::Res, cx);
        let k = key.to_string();
        self.rt.block_on(async move {
            match st(&s.read_publish) {
                Ok(q) => match c.query_opt(q, &[&k]).await {
                    Ok(r) => Outcome::Published(r.map(|r| PartRow {
                        content: r.get(0),
                        writer: Holder::new(r.get::<_, String>(1)),
                        token: Token(r.get::<_, i64>(2) as u64),
                    })),
                    Err(e) => stmt_err(e),
                },
                Err(o) => o,
            }
        })
    }

    fn count_attempts(
        &mut self,
        cx: &Ctx<'_>,
        writer: &Holder,
        outcome: AttemptOutcome,
    ) -> Outcome {
        let (c, s, _) = session_or_return!(self, DbName::Res, cx);
        let (w, acc) = (writer.to_string(), outcome == AttemptOutcome::Accepted);
        self.rt.block_on(async move {
            match st(&s.count) {
                Ok(q) => match c.query_one(q, &[&w, &acc]).await {
                    Ok(r) => Outcome::Count(r.get::<_, i64>(0) as u64),
                    Err(e) => stmt_err(e),
                },
                Err(o) => o,
            }
        })
    }
}
