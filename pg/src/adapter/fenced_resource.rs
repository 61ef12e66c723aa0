//! `FencedResource` with the source design's SQL: one-shot and step-wise writes under every fence mode,
//! publishes and reads.

use super::error::*;
use super::seam::SourceSql;
use super::state::*;
use super::statements::*;
use leaselab_model::{
    AttemptOutcome, Ctx, DbName, FencedResource, Holder, Outcome, Part, PartRow, Scope, Token,
};

impl FencedResource for SourceSql<'_> {
    fn write(
        &mut self,
        cx: &Ctx<'_>,
        scope: &Scope,
        part: &Part,
        content: &str,
        token: Token,
    ) -> Outcome {
        let be = &mut *self.0;
        let (c, s, in_txn) = session_or_return!(be, DbName::Res, cx);
        if let Some(o) = leaselab_model::protocol::refuse_one_shot_write(in_txn) {
            return o;
        }
        let now = be.now_for(false, cx.now);
        let mode = be.config.fence;
        let txn = be.uses_txn(DbName::Res);
        let w = PgBackend::write_args(cx, scope, part, content, token);
        be.run(DbName::Res, cx.conn, async move {
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
        let be = &mut *self.0;
        let (c, s, in_txn) = session_or_return!(be, DbName::Res, cx);
        let now = be.now_for(in_txn, cx.now);
        let mode = be.config.fence;
        let w = PgBackend::write_args(cx, scope, &Part::new(""), "", token);
        be.run(DbName::Res, cx.conn, async move {
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
        let be = &mut *self.0;
        let (c, s, in_txn) = session_or_return!(be, DbName::Res, cx);
        let now = be.now_for(in_txn, cx.now);
        let mode = be.config.fence;
        let w = PgBackend::write_args(cx, scope, part, content, token);
        be.run(DbName::Res, cx.conn, async move {
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
        let be = &mut *self.0;
        let (c, s, in_txn) = session_or_return!(be, DbName::Res, cx);
        let now = be.now_for(in_txn, cx.now);
        let (k, ct, wr, t) = (
            key.to_string(),
            content.to_string(),
            cx.actor.to_string(),
            token.0 as i64,
        );
        be.run(DbName::Res, cx.conn, async move {
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
        let be = &mut *self.0;
        let (c, s, _) = session_or_return!(be, DbName::Res, cx);
        let sc = scope.to_string();
        be.rt.block_on(async move {
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
        let be = &mut *self.0;
        let (c, s, _) = session_or_return!(be, DbName::Res, cx);
        let (sc, p) = (scope.to_string(), part.to_string());
        be.rt.block_on(async move {
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
        let be = &mut *self.0;
        let (c, s, _) = session_or_return!(be, DbName::Res, cx);
        let k = key.to_string();
        be.rt.block_on(async move {
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
        let be = &mut *self.0;
        let (c, s, _) = session_or_return!(be, DbName::Res, cx);
        let (w, acc) = (writer.to_string(), outcome == AttemptOutcome::Accepted);
        be.rt.block_on(async move {
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
