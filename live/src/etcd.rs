//! The etcd lease, as etcd's own lock recipe keeps it: a lease granted with the TTL, the lock
//! key created only if absent in one transaction and attached to that lease; renew is a
//! keep-alive of the lease, release deletes the key and revokes the lease. Spoken through
//! etcd's JSON gateway (`/v3/lease/grant`, `/v3/kv/txn`, …: [`crate::http`]).
//!
//! **The token is the key's create revision**: etcd's revision counts every change of the
//! whole store, is kept in the fsynced log and never goes back, and the key is created in the
//! same transaction that takes the lock — so a later holder's token is always greater.
//!
//! **The lease ID is no token** ([`TokenFrom::LeaseId`], the deliberately wrong variant): etcd
//! draws it (`pkg/idutil/id.go`) as 2 bytes of the member's ID, 5 bytes of the member's clock
//! in ms at its start, and a counter that every request of that member (not only grants)
//! increases. So IDs are ordered only among grants of one member since its start, and only
//! by when the *grant* was asked — not by when the lock was taken: a holder that is granted a
//! lease, is delayed, and creates the key after a later holder has held and lost it, holds
//! the lock with the smaller number. A member restarted with its clock behind, or another
//! member of a cluster, hands out smaller IDs too.
//!
//! Times: etcd says how long a lease lives (whole seconds, raised to its minimum of
//! `1.5 × election timeout`, 2 s by default), not when it ends. The expiry returned is the
//! machine's clock when a keep-alive left plus the TTL: the server restarted the TTL later,
//! and keeps the key until its lessor's next sweep (every 500 ms) — a bound on the early side,
//! as a holder needs it. Why the acquire keeps the lease alive once more: [`EtcdConn::acquire`].

use crate::http::{post, HttpError};
use crate::LiveError;
use base64::Engine;
use leaselab_model::Token;
use serde_json::{json, Value};
use std::time::Duration;

/// Where the token comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenFrom {
    /// The lock key's create revision: what fences.
    Revision,
    /// The lease's ID: ordered by grant, not by lock (see the module's doc).
    LeaseId,
}

/// How long a call may take before the holder counts it as lost in doubt: a server stopped or
/// killed answers nothing, and the holder's own time limit is longer than a run.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// One holder's way to an etcd member: its address and what its tokens are. Each call opens a
/// connection of its own.
#[derive(Clone, Debug)]
pub struct EtcdConn {
    base: String,
    token: TokenFrom,
}

/// The lock key: what the lease's holder is written to.
fn key(lease: &str) -> String {
    b64(&format!("leaselab/lease/{lease}"))
}

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

/// A 64-bit field of a gateway answer: etcd writes them as strings, and leaves out a zero.
fn int(v: &Value, field: &str) -> Result<i64, LiveError> {
    match v.get(field) {
        None | Some(Value::Null) => Ok(0),
        Some(Value::String(s)) => s.parse().map_err(|_| bad(field, v)),
        Some(Value::Number(n)) => n.as_i64().ok_or_else(|| bad(field, v)),
        Some(_) => Err(bad(field, v)),
    }
}

fn bad(field: &str, v: &Value) -> LiveError {
    LiveError::Unexpected(format!("etcd answered no integer `{field}`: {v}"))
}

/// The lock key as found: who holds it, its create revision, its lease.
struct Held {
    holder: String,
    create_revision: i64,
    lease: i64,
}

impl EtcdConn {
    /// A holder's connection to the member at `base` (`http://host:port`).
    pub fn new(base: &str, token: TokenFrom) -> EtcdConn {
        EtcdConn {
            base: base.to_string(),
            token,
        }
    }

    async fn call(&self, what: &str, path: &str, body: Value) -> Result<Value, LiveError> {
        post(&self.base, path, &body, CALL_TIMEOUT)
            .await
            .map_err(|e: HttpError| LiveError::Unexpected(format!("etcd {what}: {e}")))
    }

    /// The token this holder's lock carries.
    fn token_of(&self, h: &Held) -> i64 {
        match self.token {
            TokenFrom::Revision => h.create_revision,
            TokenFrom::LeaseId => h.lease,
        }
    }

    /// Grants a lease of `ttl_ms` (whole seconds, rounded up); its ID.
    async fn grant(&self, ttl_ms: u64) -> Result<i64, LiveError> {
        let ttl_s = ttl_ms.div_ceil(1000).max(1);
        let a = self
            .call("grant", "/v3/lease/grant", json!({ "TTL": ttl_s }))
            .await?;
        let id = int(&a, "ID")?;
        if id == 0 {
            return Err(LiveError::Unexpected(format!("etcd granted no lease: {a}")));
        }
        Ok(id)
    }

    /// Keeps a lease alive: its expiry (ms since the epoch) from when the request left — the
    /// server restarts the TTL later, when it gets there — or `None` when it has ended.
    async fn keep_alive(&self, id: i64) -> Result<Option<i64>, LiveError> {
        let sent = leaselab_pg::recording::epoch_ms() as i64;
        let a = self
            .call(
                "keep-alive",
                "/v3/lease/keepalive",
                json!({ "ID": id.to_string() }),
            )
            .await?;
        // One message per message sent, under `result`; a lease that has ended answers no TTL.
        let ttl = int(a.get("result").unwrap_or(&a), "TTL")?;
        Ok((ttl > 0).then_some(sent + ttl * 1000))
    }

    /// Revokes a lease (deleting the keys attached to it); a lease already gone is no error.
    async fn revoke(&self, id: i64) -> Result<(), LiveError> {
        let path = "/v3/lease/revoke";
        match post(
            &self.base,
            path,
            &json!({ "ID": id.to_string() }),
            CALL_TIMEOUT,
        )
        .await
        {
            Ok(_) => Ok(()),
            Err(HttpError::Status { body, .. }) if body.contains("lease not found") => Ok(()),
            Err(e) => Err(LiveError::Unexpected(format!("etcd revoke: {e}"))),
        }
    }

    /// The lock key as it is now, if it exists.
    async fn held(&self, lease: &str) -> Result<Option<Held>, LiveError> {
        let a = self
            .call("range", "/v3/kv/range", json!({ "key": key(lease) }))
            .await?;
        let Some(kv) = a.get("kvs").and_then(|k| k.get(0)) else {
            return Ok(None);
        };
        let value = kv.get("value").and_then(Value::as_str).unwrap_or("");
        let holder = base64::engine::general_purpose::STANDARD
            .decode(value)
            .ok()
            .and_then(|v| String::from_utf8(v).ok())
            .ok_or_else(|| LiveError::Unexpected(format!("etcd: the lock key's value: {kv}")))?;
        Ok(Some(Held {
            holder,
            create_revision: int(kv, "create_revision")?,
            lease: int(kv, "lease")?,
        }))
    }

    /// The grant — its token and expiry — or `None` while the key exists (another holder's
    /// lease has not ended). A lease granted for a lock not taken is revoked.
    ///
    /// The lock taken, the lease is kept alive once more, and the expiry is the keep-alive's:
    /// the history reads a grant's expiry minus its TTL as the moment the server decided
    /// (exact on PostgreSQL and Redis, whose expiry is the server's `now` plus the TTL). Here
    /// that moment is the transaction's, somewhere between its request and its answer; the
    /// keep-alive leaves after the answer, so its time is no earlier than the decision, and
    /// the lease lasts at least the TTL from it — the expiry is then safe both as the end of
    /// this holding and as the time of this grant. (The grant's own time would put the
    /// decision too early whenever the transaction was delayed: a false I1.)
    pub async fn acquire(
        &self,
        lease: &str,
        holder: &str,
        ttl_ms: u64,
    ) -> Result<Option<(Token, i64)>, LiveError> {
        let id = self.grant(ttl_ms).await?;
        let k = key(lease);
        let put = json!({ "request_put": {
            "key": k, "value": b64(holder), "lease": id.to_string() } });
        let Some(a) = self.txn_if_created(&k, 0, put).await? else {
            self.revoke(id).await?;
            return Ok(None);
        };
        let revision = a.get("header").map_or(Ok(0), |h| int(h, "revision"))?;
        // Ended already (the transaction came late): the key went with it, nobody holds it.
        let Some(expires) = self.keep_alive(id).await? else {
            return Ok(None);
        };
        let token = match self.token {
            TokenFrom::Revision => revision,
            TokenFrom::LeaseId => id,
        };
        u64::try_from(token)
            .ok()
            .filter(|t| *t > 0)
            .map(|t| Some((Token(t), expires)))
            .ok_or_else(|| LiveError::Unexpected(format!("etcd: token {token} from {a}")))
    }

    /// The new expiry, or `None` when the key is no longer this holder's under this token or
    /// its lease has ended.
    pub async fn renew(
        &self,
        lease: &str,
        holder: &str,
        token: Token,
    ) -> Result<Option<i64>, LiveError> {
        match self.held_by(lease, holder, token).await? {
            Some(h) => self.keep_alive(h.lease).await,
            None => Ok(None),
        }
    }

    /// Whether the key was this holder's under this token and is now deleted (its lease
    /// revoked).
    pub async fn release(
        &self,
        lease: &str,
        holder: &str,
        token: Token,
    ) -> Result<bool, LiveError> {
        let Some(h) = self.held_by(lease, holder, token).await? else {
            return Ok(false);
        };
        let k = key(lease);
        let delete = json!({ "request_delete_range": { "key": k } });
        let deleted = self
            .txn_if_created(&k, h.create_revision, delete)
            .await?
            .is_some();
        if deleted {
            self.revoke(h.lease).await?;
        }
        Ok(deleted)
    }

    /// The lock key, when it is this holder's under this token.
    async fn held_by(
        &self,
        lease: &str,
        holder: &str,
        token: Token,
    ) -> Result<Option<Held>, LiveError> {
        Ok(self
            .held(lease)
            .await?
            .filter(|h| h.holder == holder && self.token_of(h) as u64 == token.0))
    }

    /// One transaction: `then` if key `k`'s create revision is `revision` (0: the key does not
    /// exist); the answer when it ran, `None` when the comparison failed.
    async fn txn_if_created(
        &self,
        k: &str,
        revision: i64,
        then: Value,
    ) -> Result<Option<Value>, LiveError> {
        let a = self
            .call(
                "txn",
                "/v3/kv/txn",
                json!({
                    "compare": [{ "key": k, "target": "CREATE",
                                  "create_revision": revision.to_string() }],
                    "success": [then],
                }),
            )
            .await?;
        Ok((a.get("succeeded") == Some(&Value::Bool(true))).then_some(a))
    }
}
