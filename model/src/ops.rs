//! Short constructors for the operations cases write most, using the sources' names
//! (lease `report-job`, scope `daily-report`). Anything else is spelled out with [`Op`]'s
//! variants directly.

use crate::history::{DbName, Op};
use crate::names::{defaults, Holder, LeaseName, Part, Scope, Token};
use crate::rows::AttemptOutcome;
use crate::time::Millis;

impl Op {
    /// Acquire `report-job` for `holder`.
    pub fn acquire(holder: &str, ttl_ms: u64) -> Op {
        Op::Acquire {
            lease: LeaseName::new(defaults::LEASE),
            holder: Holder::new(holder),
            ttl_ms,
        }
    }
    /// Renew `report-job`.
    pub fn renew(holder: &str, token: u64, ttl_ms: u64) -> Op {
        Op::Renew {
            lease: LeaseName::new(defaults::LEASE),
            holder: Holder::new(holder),
            token: Token(token),
            ttl_ms,
        }
    }
    /// Release `report-job`.
    pub fn release(holder: &str, token: u64) -> Op {
        Op::Release {
            lease: LeaseName::new(defaults::LEASE),
            holder: Holder::new(holder),
            token: Token(token),
        }
    }
    /// One-shot write of a part of `daily-report`.
    pub fn write(part: &str, content: &str, token: u64) -> Op {
        Op::Write {
            scope: Scope::new(defaults::SCOPE),
            part: Part::new(part),
            content: content.to_string(),
            token: Token(token),
        }
    }
    /// Fence step on `daily-report`.
    pub fn fence(token: u64) -> Op {
        Op::Fence {
            scope: Scope::new(defaults::SCOPE),
            token: Token(token),
        }
    }
    /// Upsert step of a part of `daily-report`.
    pub fn upsert(part: &str, content: &str, token: u64) -> Op {
        Op::Upsert {
            scope: Scope::new(defaults::SCOPE),
            part: Part::new(part),
            content: content.to_string(),
            token: Token(token),
        }
    }
    /// Publish under a business key.
    pub fn publish(key: &str, content: &str, token: u64) -> Op {
        Op::Publish {
            key: key.to_string(),
            content: content.to_string(),
            token: Token(token),
        }
    }
    /// Read `report-job`.
    pub fn read_lease() -> Op {
        Op::ReadLease {
            lease: LeaseName::new(defaults::LEASE),
        }
    }
    /// Read the floor of `daily-report`.
    pub fn read_floor() -> Op {
        Op::ReadFloor {
            scope: Scope::new(defaults::SCOPE),
        }
    }
    /// Read a part of `daily-report`.
    pub fn read_part(part: &str) -> Op {
        Op::ReadPart {
            scope: Scope::new(defaults::SCOPE),
            part: Part::new(part),
        }
    }
    /// Count attempts.
    pub fn count(writer: &str, outcome: AttemptOutcome) -> Op {
        Op::CountAttempts {
            writer: Holder::new(writer),
            outcome,
        }
    }
    /// Client-side deadline check.
    pub fn check(deadline: Millis) -> Op {
        Op::Check { deadline }
    }
    /// BEGIN on `db`.
    pub fn begin(db: DbName) -> Op {
        Op::Begin { db }
    }
    /// COMMIT on `db`.
    pub fn commit(db: DbName) -> Op {
        Op::Commit { db }
    }
    /// ROLLBACK on `db`.
    pub fn rollback(db: DbName) -> Op {
        Op::Rollback { db }
    }
    /// Await on `db`.
    pub fn await_(db: DbName) -> Op {
        Op::Await { db }
    }
}
