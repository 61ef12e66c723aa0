//! The seam between a holder and its lease service: acquire, renew and release, each answered
//! with what the history records — a token and the server's expiry, a refusal — whatever keeps
//! the lease. The holder machine (`leaselab_model::holder`) asks for these three calls on its
//! lease connections; [`LeaseConn`] carries them to PostgreSQL (the source design's lease
//! table), to Redis (a recipe's Lua scripts), to etcd (its lock recipe) or to Redlock's
//! instances. The fenced resource is always PostgreSQL.

use crate::etcd::{EtcdConn, TokenFrom};
use crate::redis::RedisRecipe;
use crate::redlock::Redlock;
use crate::LiveError;
use leaselab_model::{Op, Outcome, Token};
use leaselab_pg::recording::Recording;
use std::sync::Arc;

/// Which service keeps the lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreKind {
    /// The source design's lease table on PostgreSQL: token = the row's counter.
    Pg,
    /// A Redis key set by a recipe's scripts: token = a counter the acquire script INCRs.
    Redis,
    /// etcd's lock recipe: token = the lock key's create revision.
    Etcd,
    /// etcd's lock recipe with the lease's ID as the token — deliberately wrong: lease IDs
    /// are ordered by grant, not by lock (`docs/store-etcd.md`).
    EtcdLeaseId,
    /// Redlock over several Redis instances: no token at all ([`crate::redlock`]).
    Redlock,
}

impl StoreKind {
    /// Spelling on the command line and in output.
    pub fn as_str(self) -> &'static str {
        match self {
            StoreKind::Pg => "pg",
            StoreKind::Redis => "redis",
            StoreKind::Etcd => "etcd",
            StoreKind::EtcdLeaseId => "etcd-lease-id",
            StoreKind::Redlock => "redlock",
        }
    }

    /// The TTL its holders ask for, ms: the source design's, except on etcd, which counts
    /// leases in whole seconds and raises any TTL to its minimum (1.5 election timeouts: 2 s
    /// with its defaults) — asked as granted, so a holder's deadline is the server's.
    pub fn ttl_ms(self) -> u64 {
        match self {
            StoreKind::Pg | StoreKind::Redis => leaselab_model::names::defaults::TTL_MS,
            StoreKind::Etcd | StoreKind::EtcdLeaseId => 2_000,
            // The keys get the source design's TTL; the client holds them for less.
            StoreKind::Redlock => {
                crate::redlock::validity_ms(leaselab_model::names::defaults::TTL_MS)
            }
        }
    }

    /// From its spelling.
    pub fn parse(s: &str) -> Option<StoreKind> {
        match s {
            "pg" => Some(StoreKind::Pg),
            "redis" => Some(StoreKind::Redis),
            "etcd" => Some(StoreKind::Etcd),
            "etcd-lease-id" => Some(StoreKind::EtcdLeaseId),
            "redlock" => Some(StoreKind::Redlock),
            _ => None,
        }
    }
}

/// Where a holder finds its lease service: the kind, its address (a libpq connection string,
/// `redis://host:port/`, or etcd's `http://host:port`) and, for Redis, the recipe.
#[derive(Clone, Debug)]
pub struct Store {
    /// The service.
    pub kind: StoreKind,
    /// Its address.
    pub addr: String,
    /// The scripts, for Redis.
    pub recipe: Option<RedisRecipe>,
}

/// A recipe's scripts, shared by a process's connections.
pub struct Scripts {
    acquire: redis::Script,
    renew: redis::Script,
    release: redis::Script,
}

/// One connection to the lease service.
pub enum LeaseConn {
    /// A PostgreSQL session on the lease database.
    Pg(tokio_postgres::Client),
    /// A Redis connection and the recipe's scripts.
    Redis(redis::aio::MultiplexedConnection, Arc<Scripts>),
    /// An etcd member's address (each call opens a connection of its own).
    Etcd(EtcdConn),
    /// Redlock's instances.
    Redlock(Redlock),
}

impl LeaseConn {
    /// Opens a connection to `store`.
    pub async fn connect(store: &Store) -> Result<LeaseConn, LiveError> {
        match store.kind {
            StoreKind::Pg => Ok(LeaseConn::Pg(
                leaselab_pg::real::connect(&store.addr).await?,
            )),
            StoreKind::Redis => {
                let recipe = store.recipe.as_ref().ok_or_else(|| {
                    LiveError::Unexpected("a Redis lease needs its recipe".into())
                })?;
                let client = redis::Client::open(store.addr.as_str())
                    .map_err(|e| LiveError::redis("connect", e))?;
                let conn = client
                    .get_multiplexed_async_connection()
                    .await
                    .map_err(|e| LiveError::redis("connect", e))?;
                let scripts = Scripts {
                    acquire: redis::Script::new(&recipe.acquire),
                    renew: redis::Script::new(&recipe.renew),
                    release: redis::Script::new(&recipe.release),
                };
                Ok(LeaseConn::Redis(conn, Arc::new(scripts)))
            }
            StoreKind::Etcd => Ok(LeaseConn::Etcd(EtcdConn::new(
                &store.addr,
                TokenFrom::Revision,
            ))),
            StoreKind::EtcdLeaseId => Ok(LeaseConn::Etcd(EtcdConn::new(
                &store.addr,
                TokenFrom::LeaseId,
            ))),
            StoreKind::Redlock => Ok(LeaseConn::Redlock(Redlock::new(&store.addr)?)),
        }
    }

    /// Runs a lease call (`acquire`, `renew`, `release`); its outcome, with expiries on `rec`'s
    /// clock. Any other operation is not the lease service's.
    pub async fn call(&self, op: &Op, rec: &Recording) -> Result<Outcome, LiveError> {
        Ok(match op {
            Op::Acquire {
                lease,
                holder,
                ttl_ms,
            } => match self
                .acquire(lease.as_str(), holder.as_str(), *ttl_ms, rec)
                .await?
            {
                Some((token, expires)) => Outcome::Granted {
                    token,
                    expires: rec.at(expires),
                },
                None => Outcome::Refused,
            },
            Op::Renew {
                lease,
                holder,
                token,
                ttl_ms,
            } => match self
                .renew(lease.as_str(), holder.as_str(), *token, *ttl_ms)
                .await?
            {
                Some(expires) => Outcome::Renewed {
                    expires: rec.at(expires),
                },
                None => Outcome::Refused,
            },
            Op::Release {
                lease,
                holder,
                token,
            } => {
                if self
                    .release(lease.as_str(), holder.as_str(), *token)
                    .await?
                {
                    Outcome::Released
                } else {
                    Outcome::Refused
                }
            }
            other => return Err(not_a_lease_call(other)),
        })
    }

    /// The grant — its token and expiry (ms since the epoch, the server's clock) — or `None`
    /// while another holder's lease is valid. (`rec`'s clock gives Redlock's stand-in token.)
    pub async fn acquire(
        &self,
        lease: &str,
        holder: &str,
        ttl_ms: u64,
        rec: &Recording,
    ) -> Result<Option<(Token, i64)>, LiveError> {
        match self {
            LeaseConn::Pg(c) => Ok(leaselab_pg::real::acquire(c, lease, holder, ttl_ms).await?),
            LeaseConn::Redis(c, s) => {
                let answer: Option<(i64, i64)> = s
                    .acquire
                    .key(&keys(lease))
                    .arg(holder)
                    .arg(ttl_ms)
                    .invoke_async(&mut c.clone())
                    .await
                    .map_err(|e| LiveError::redis("acquire", e))?;
                answer
                    .map(|(token, expires)| {
                        u64::try_from(token)
                            .map(|t| (Token(t), expires))
                            .map_err(|_| {
                                LiveError::Unexpected(format!("acquire answered token {token}"))
                            })
                    })
                    .transpose()
            }
            LeaseConn::Etcd(c) => c.acquire(lease, holder, ttl_ms).await,
            LeaseConn::Redlock(c) => c.acquire(lease, holder, ttl_ms, rec).await,
        }
    }

    /// The new expiry (ms since the epoch), or `None` when the lease is no longer this holder's
    /// under this token.
    pub async fn renew(
        &self,
        lease: &str,
        holder: &str,
        token: Token,
        ttl_ms: u64,
    ) -> Result<Option<i64>, LiveError> {
        match self {
            LeaseConn::Pg(c) => {
                Ok(leaselab_pg::real::renew(c, lease, holder, token, ttl_ms).await?)
            }
            LeaseConn::Redis(c, s) => s
                .renew
                .key(&keys(lease))
                .arg(holder)
                .arg(ttl_ms)
                .arg(token.0)
                .invoke_async(&mut c.clone())
                .await
                .map_err(|e| LiveError::redis("renew", e)),
            LeaseConn::Etcd(c) => c.renew(lease, holder, token).await,
            LeaseConn::Redlock(c) => c.renew(lease, token, ttl_ms).await,
        }
    }

    /// Whether the lease was still this holder's under this token, and is ended.
    pub async fn release(
        &self,
        lease: &str,
        holder: &str,
        token: Token,
    ) -> Result<bool, LiveError> {
        match self {
            LeaseConn::Pg(c) => Ok(leaselab_pg::real::release(c, lease, holder, token).await?),
            LeaseConn::Redis(c, s) => {
                let answer: i64 = s
                    .release
                    .key(&keys(lease))
                    .arg(holder)
                    .arg(0)
                    .arg(token.0)
                    .invoke_async(&mut c.clone())
                    .await
                    .map_err(|e| LiveError::redis("release", e))?;
                Ok(answer == 1)
            }
            LeaseConn::Etcd(c) => c.release(lease, holder, token).await,
            LeaseConn::Redlock(c) => c.release(lease, token).await,
        }
    }
}

/// The lease's two keys: the lock itself and its token counter.
fn keys(lease: &str) -> [String; 2] {
    [format!("lease:{lease}"), format!("lease:{lease}:token")]
}

fn not_a_lease_call(op: &Op) -> LiveError {
    LiveError::Unexpected(format!("`{op}` is not a call of the lease service"))
}
