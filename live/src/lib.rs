//! Live runs on the lease services people use: holders as real OS processes, in real time,
//! against a real lease service (the source design's PostgreSQL lease table, Redis with a
//! recipe of Lua scripts, or etcd's lock recipe) and the source design's fenced PostgreSQL resource, under a nemesis
//! whose schedule derives from a seed. Every process records what it saw as a JSON-lines
//! history, which the checkers judge alone (`leaselab judge`).
//!
//! - [`store`]: the seam — acquire, renew, release on whichever service keeps the lease;
//! - [`redis`]: the Redis recipe (its file);
//! - [`etcd`]: etcd's lock recipe, spoken through [`http`] to etcd's JSON gateway;
//! - [`proxy`]: a TCP proxy per holder that the partition nemesis cuts and heals;
//! - [`server`]: throwaway `redis-server`s and `etcd`s, killed and restarted by the nemesis;
//! - [`holder`]: the holder process (`leaselab holder`), the model crate's one holder driven
//!   in real time;
//! - [`run`]: a live run — the servers, the holder processes, the nemesis, the records.

pub mod etcd;
pub mod holder;
pub mod http;
pub mod proxy;
pub mod redis;
pub mod redlock;
pub mod run;
pub mod server;
pub mod store;

/// Why a live run (or one of its holder processes) could not go on — not an outcome of it.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// A PostgreSQL call, a process or a pipe of the real-time machinery failed.
    #[error(transparent)]
    Real(#[from] leaselab_pg::real::RealError),
    /// A PostgreSQL cluster or the schema could not be set up.
    #[error("{0}")]
    Pg(String),
    /// A Redis call failed.
    #[error("{what}: {source}")]
    Redis {
        /// What was being done.
        what: String,
        /// The client's error.
        source: ::redis::RedisError,
    },
    /// A file, a process or a pipe could not be used.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// What the OS said.
        source: std::io::Error,
    },
    /// A bad recipe: its file, line and key.
    #[error("{0}")]
    Recipe(leaselab_pg::spec::SpecError),
    /// Something the run does not expect.
    #[error("{0}")]
    Unexpected(String),
}

impl LiveError {
    fn io(what: &str, source: std::io::Error) -> LiveError {
        LiveError::Io {
            what: what.to_string(),
            source,
        }
    }

    fn redis(what: &str, source: ::redis::RedisError) -> LiveError {
        LiveError::Redis {
            what: what.to_string(),
            source,
        }
    }
}
