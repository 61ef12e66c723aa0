//! The seam's statements from a user's spec: each operation the spec defines runs its
//! statements (`spec_ops.rs`); what a spec does not define answers as the source design's
//! client would where its statement is missing.

use super::seam::SpecSql;
use super::spec_ops::Args;
use crate::spec::OpKind;
use leaselab_model::{
    AttemptOutcome, Ctx, DbName, FencedResource, Holder, LeaseName, LeaseStore, Outcome, Part,
    Reason, Scope, Token,
};

impl SpecSql<'_> {
    /// The lease a spec's holders compete for (`:lease` of a write, publish or read-part).
    fn lease(&self) -> String {
        self.run.spec.lease.clone()
    }

    /// A read the spec has no statement for: admitted and given a session like any statement
    /// (so a down database or a lost connection answers as it would), then
    /// `statement-not-prepared`.
    fn not_prepared(&mut self, cx: &Ctx<'_>, db: DbName) -> Outcome {
        let be = &mut *self.be;
        let _ = session_or_return!(be, db, cx);
        super::statements::not_prepared()
    }

    /// A step-wise write's fence or upsert: a spec's write is one operation, with no steps.
    fn one_shot() -> Outcome {
        Outcome::Error(Reason::Other("spec-writes-are-one-shot".into()))
    }
}

impl LeaseStore for SpecSql<'_> {
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
        self.op(cx, OpKind::Acquire, args)
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
        self.op(cx, OpKind::Renew, args)
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
        self.op(cx, OpKind::Release, args)
    }

    fn read_lease(&mut self, cx: &Ctx<'_>, _lease: &LeaseName) -> Outcome {
        self.not_prepared(cx, DbName::Lease)
    }
}

impl FencedResource for SpecSql<'_> {
    fn write(
        &mut self,
        cx: &Ctx<'_>,
        scope: &Scope,
        part: &Part,
        content: &str,
        token: Token,
    ) -> Outcome {
        let args = Args {
            lease: self.lease(),
            holder: cx.actor.to_string(),
            token: token.0 as i64,
            scope: scope.to_string(),
            part: part.to_string(),
            content: content.to_string(),
            ..Args::default()
        };
        self.op(cx, OpKind::Write, args)
    }

    fn fence(&mut self, _cx: &Ctx<'_>, _scope: &Scope, _token: Token) -> Outcome {
        Self::one_shot()
    }

    fn upsert(
        &mut self,
        _cx: &Ctx<'_>,
        _scope: &Scope,
        _part: &Part,
        _content: &str,
        _token: Token,
    ) -> Outcome {
        Self::one_shot()
    }

    fn publish(&mut self, cx: &Ctx<'_>, key: &str, content: &str, token: Token) -> Outcome {
        let args = Args {
            lease: self.lease(),
            holder: cx.actor.to_string(),
            token: token.0 as i64,
            key: key.to_string(),
            content: content.to_string(),
            ..Args::default()
        };
        self.op(cx, OpKind::Publish, args)
    }

    fn read_floor(&mut self, cx: &Ctx<'_>, _scope: &Scope) -> Outcome {
        self.not_prepared(cx, DbName::Res)
    }

    fn read_part(&mut self, cx: &Ctx<'_>, scope: &Scope, part: &Part) -> Outcome {
        let args = Args {
            lease: self.lease(),
            scope: scope.to_string(),
            part: part.to_string(),
            ..Args::default()
        };
        self.op(cx, OpKind::ReadPart, args)
    }

    fn read_publish(&mut self, cx: &Ctx<'_>, _key: &str) -> Outcome {
        self.not_prepared(cx, DbName::Res)
    }

    fn count_attempts(
        &mut self,
        cx: &Ctx<'_>,
        _writer: &Holder,
        _outcome: AttemptOutcome,
    ) -> Outcome {
        self.not_prepared(cx, DbName::Res)
    }
}
