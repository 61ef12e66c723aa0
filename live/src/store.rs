//! The seam between a holder and its lease service: acquire, renew and release, each answered
//! with what the history records — a token and the server's expiry, a refusal — whatever keeps
//! the lease. The holder machine (`leaselab_model::holder`) asks for these three calls on its
//! lease connections; [`LeaseConn`] carries them to PostgreSQL (the source design's lease
//! table) or to Redis (a recipe's Lua scripts). The fenced resource is always PostgreSQL.

use crate::redis::RedisRecipe;
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
}

impl StoreKind {
    /// Spelling on the command line and in output.
    pub fn as_str(self) -> &'static str {
        match self {
            StoreKind::Pg => "pg",
            StoreKind::Redis => "redis",
        }
    }

    /// From its spelling.
    pub fn parse(s: &str) -> Option<StoreKind> {
        match s {
            "pg" => Some(StoreKind::Pg),
            "redis" => Some(StoreKind::Redis),
            _ => None,
        }
    }
}

/// Where a holder finds its lease service: the kind, its address (a libpq connection string,
/// or `redis://host:port/`) and, for Redis, the recipe.
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
        }
    }

    /// Runs a lease call (`acquire`, `renew`, `release`); its outcome, with expiries on `rec`'s
    /// clock. Any other operation is not the lease service's.
    pub async fn call(&self, op: &Op, rec: &Recording) -> Result<Outcome, LiveError> {
        match self {
            LeaseConn::Pg(c) => pg_call(c, op, rec).await,
            LeaseConn::Redis(c, s) => redis_call(c.clone(), s, op, rec).await,
        }
    }
}

async fn pg_call(
    c: &tokio_postgres::Client,
    op: &Op,
    rec: &Recording,
) -> Result<Outcome, LiveError> {
    use leaselab_pg::real;
    Ok(match op {
        Op::Acquire {
            lease,
            holder,
            ttl_ms,
        } => match real::acquire(c, lease.as_str(), holder.as_str(), *ttl_ms).await? {
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
        } => match real::renew(c, lease.as_str(), holder.as_str(), *token, *ttl_ms).await? {
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
            if real::release(c, lease.as_str(), holder.as_str(), *token).await? {
                Outcome::Released
            } else {
                Outcome::Refused
            }
        }
        other => return Err(not_a_lease_call(other)),
    })
}

/// The lease's two keys: the lock itself and its token counter.
fn keys(lease: &str) -> [String; 2] {
    [format!("lease:{lease}"), format!("lease:{lease}:token")]
}

async fn redis_call(
    mut c: redis::aio::MultiplexedConnection,
    s: &Scripts,
    op: &Op,
    rec: &Recording,
) -> Result<Outcome, LiveError> {
    Ok(match op {
        Op::Acquire {
            lease,
            holder,
            ttl_ms,
        } => {
            let answer: Option<(i64, i64)> = s
                .acquire
                .key(&keys(lease.as_str()))
                .arg(holder.as_str())
                .arg(*ttl_ms)
                .invoke_async(&mut c)
                .await
                .map_err(|e| LiveError::redis("acquire", e))?;
            match answer {
                Some((token, expires)) => Outcome::Granted {
                    token: Token(u64::try_from(token).map_err(|_| {
                        LiveError::Unexpected(format!("acquire answered token {token}"))
                    })?),
                    expires: rec.at(expires),
                },
                None => Outcome::Refused,
            }
        }
        Op::Renew {
            lease,
            holder,
            token,
            ttl_ms,
        } => {
            let answer: Option<i64> = s
                .renew
                .key(&keys(lease.as_str()))
                .arg(holder.as_str())
                .arg(*ttl_ms)
                .arg(token.0)
                .invoke_async(&mut c)
                .await
                .map_err(|e| LiveError::redis("renew", e))?;
            match answer {
                Some(expires) => Outcome::Renewed {
                    expires: rec.at(expires),
                },
                None => Outcome::Refused,
            }
        }
        Op::Release {
            lease,
            holder,
            token,
        } => {
            let answer: i64 = s
                .release
                .key(&keys(lease.as_str()))
                .arg(holder.as_str())
                .arg(0)
                .arg(token.0)
                .invoke_async(&mut c)
                .await
                .map_err(|e| LiveError::redis("release", e))?;
            if answer == 1 {
                Outcome::Released
            } else {
                Outcome::Refused
            }
        }
        other => return Err(not_a_lease_call(other)),
    })
}

fn not_a_lease_call(op: &Op) -> LiveError {
    LiveError::Unexpected(format!("`{op}` is not a call of the lease service"))
}
