//! A lease spec: the user's own schema and statements, which `leaselab audit` runs on
//! PostgreSQL in place of the source design's (`docs/lease-spec.md`).
//!
//! A spec names its statements by what they do — `acquire`, `renew`, `release`, `write`, and
//! optionally `read-part` and `publish` — and passes the run's values as named parameters
//! (`:lease`, `:holder`, …). Its outcomes are read by fixed conventions, so the checkers judge
//! what PostgreSQL answered, not what a model predicts.
//!
//! - `sqltext`: code, strings and comments told apart as PostgreSQL's lexer does;
//! - `parse`: the TOML file, parameters, wall-clock functions — everything decided without a
//!   server;
//! - `check`: what only PostgreSQL can say (DDL that fails, syntax, result shapes);
//! - [`psql`]: a history on a spec as psql scripts that rerun it without leaselab.

mod check;
mod parse;
pub mod psql;
mod sqltext;

pub use check::{check, param_types, Shape};
pub use parse::parse;

use std::fmt;

/// One or two databases: the lease table and the protected resource apart (as the source
/// design, so each can crash alone) or in one database.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Databases {
    /// `lease` and `resource` in their own clusters.
    Two,
    /// Both schemas in one database: the resource side's statements run there too.
    One,
}

/// What an operation does, as the history names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum OpKind {
    /// `acquire`: a returned row carries the token (column `token`, and `expires_at` if the
    /// statement returns it); no row = refused.
    Acquire,
    /// `renew`: a row affected (or returned) = renewed.
    Renew,
    /// `release`: a row affected (or returned) = released.
    Release,
    /// `write`: accepted when the transaction commits with its last statement affecting (or
    /// returning) a row.
    Write,
    /// `read-part`: the part's committed row (`content`, `writer`, `token`), for the final
    /// state.
    ReadPart,
    /// `publish`: a side effect outside the resource: a row affected = published.
    Publish,
}

impl OpKind {
    /// All, in the order a spec lists them.
    pub const ALL: [OpKind; 6] = [
        OpKind::Acquire,
        OpKind::Renew,
        OpKind::Release,
        OpKind::Write,
        OpKind::ReadPart,
        OpKind::Publish,
    ];

    /// The key in the spec file.
    pub fn as_str(self) -> &'static str {
        match self {
            OpKind::Acquire => "acquire",
            OpKind::Renew => "renew",
            OpKind::Release => "release",
            OpKind::Write => "write",
            OpKind::ReadPart => "read-part",
            OpKind::Publish => "publish",
        }
    }

    /// The parameters its statements may use.
    pub fn params(self) -> &'static [Param] {
        use Param::*;
        match self {
            OpKind::Acquire => &[Lease, Holder, TtlMs],
            OpKind::Renew => &[Lease, Holder, Token, TtlMs],
            OpKind::Release => &[Lease, Holder, Token],
            OpKind::Write => &[Lease, Holder, Token, Scope, Part, Content],
            OpKind::ReadPart => &[Lease, Scope, Part],
            OpKind::Publish => &[Lease, Holder, Token, Key, Content],
        }
    }

    /// Whether a spec must have it.
    pub fn required(self) -> bool {
        !matches!(self, OpKind::ReadPart | OpKind::Publish)
    }

    /// The database its statements run on: the lease calls on the lease database, the rest
    /// on the resource's (with [`Databases::One`], both are one cluster).
    pub fn db(self) -> leaselab_model::DbName {
        match self {
            OpKind::Acquire | OpKind::Renew | OpKind::Release => leaselab_model::DbName::Lease,
            OpKind::Write | OpKind::ReadPart | OpKind::Publish => leaselab_model::DbName::Res,
        }
    }
}

/// The lease the holders compete for unless the spec names another (`lease = "…"`).
pub const LEASE: &str = leaselab_model::names::defaults::LEASE;

/// The longest `ttl_ms` a spec may set: one hour.
pub const MAX_TTL_MS: u64 = 3_600_000;

/// A named parameter, passed with a fixed type so that PostgreSQL never has to guess it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Param {
    /// `:lease`, text: the lease operated on; in a write, publish or read-part, the lease the
    /// run's holders compete for ([`Spec::lease`]), so that a design that guards its write by
    /// the lease row (one database) names it as its lease calls do.
    Lease,
    /// `:holder`, text: the acting holder (the writer, for a write).
    Holder,
    /// `:ttl_ms`, bigint milliseconds.
    TtlMs,
    /// `:token`, bigint: the token the holder's acquire returned.
    Token,
    /// `:scope`, text.
    Scope,
    /// `:part`, text.
    Part,
    /// `:content`, text.
    Content,
    /// `:key`, text: a publish's business key.
    Key,
}

impl Param {
    /// Every parameter.
    pub const ALL: [Param; 8] = [
        Param::Lease,
        Param::Holder,
        Param::TtlMs,
        Param::Token,
        Param::Scope,
        Param::Part,
        Param::Content,
        Param::Key,
    ];

    /// Its name without the colon.
    pub fn name(self) -> &'static str {
        match self {
            Param::Lease => "lease",
            Param::Holder => "holder",
            Param::TtlMs => "ttl_ms",
            Param::Token => "token",
            Param::Scope => "scope",
            Param::Part => "part",
            Param::Content => "content",
            Param::Key => "key",
        }
    }

    /// The SQL type it is cast to.
    pub fn sql_type(self) -> &'static str {
        match self {
            Param::TtlMs | Param::Token => "bigint",
            _ => "text",
        }
    }
}

/// How a statement's result counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatementKind {
    /// Returns rows (`SELECT`, `WITH`, `VALUES`, or a change with `RETURNING`): counts by
    /// whether a row came back.
    Query,
    /// `INSERT`, `UPDATE`, `DELETE`, `MERGE` without `RETURNING`: counts by rows affected.
    Change,
    /// `SET`, `LOCK`, `SAVEPOINT`…: counts neither way.
    Utility,
}

/// One statement of an operation.
#[derive(Clone, Debug)]
pub struct Statement {
    /// As written in the spec.
    pub source: String,
    /// With each named parameter replaced by `$n::type`.
    pub sql: String,
    /// The parameter behind `$1`, `$2`, …
    pub params: Vec<Param>,
    /// How its result counts (a `Query` is told apart from a `Change` by PostgreSQL's row
    /// description, see [`check`]).
    pub kind: StatementKind,
    /// Line of the spec file where it starts.
    pub line: usize,
}

/// An operation: one statement, or a list.
#[derive(Clone, Debug)]
pub struct Operation {
    /// Which.
    pub kind: OpKind,
    /// In order.
    pub statements: Vec<Statement>,
    /// A list runs as one transaction (the default), or each statement commits on its own
    /// (`transaction = false`: the two-autocommit-statements mistake).
    pub transaction: bool,
    /// Line of the spec file where it is defined.
    pub line: usize,
}

/// A parsed spec.
#[derive(Clone, Debug)]
pub struct Spec {
    /// The file it was read from (for messages).
    pub file: String,
    /// One database or two.
    pub databases: Databases,
    /// The lease name the holders compete for (`lease = "…"`, default [`LEASE`]): every
    /// acquire, renew and release names it, and `:lease` in a write, publish or read-part is it.
    pub lease: String,
    /// Every lease call's TTL (`ttl_ms = …`), for a design written for one TTL (a grace period,
    /// a skew allowance); without it the generated schedules draw 100, 300 or 1,500 ms.
    pub ttl_ms: Option<u64>,
    /// Holders may call the lease inside transactions they hold open on their lease connection
    /// (`lease_txn = true`, or `leaselab audit --lease-txn`): the generated schedules then open,
    /// hold, commit and roll back such transactions around acquire, renew and release.
    pub lease_txn: bool,
    /// On how many connections each holder calls the lease, 1 or 2 (`lease_conns = 2`, or
    /// `leaselab audit --lease-conns 2`): with 2, a holder's acquire, renew and release go to
    /// either connection, the second in autocommit while the first may hold a transaction.
    pub lease_conns: u8,
    /// DDL (and seed rows) of the lease side.
    pub lease_schema: String,
    /// DDL (and seed rows) of the resource side.
    pub resource_schema: String,
    /// The operations, in [`OpKind::ALL`] order; the optional ones may be missing.
    pub ops: Vec<Operation>,
    /// Where `[schema]` starts, for messages about the DDL.
    pub schema_line: usize,
}

impl Spec {
    /// The operation `kind`, if the spec has it.
    pub fn op(&self, kind: OpKind) -> Option<&Operation> {
        self.ops.iter().find(|o| o.kind == kind)
    }
}

/// A bad spec: the file, the line, the statement, and what is wrong (PostgreSQL's own message
/// where the server found it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecError {
    /// The spec file.
    pub file: String,
    /// 1-based line, where known.
    pub line: Option<usize>,
    /// The statement or section concerned (`acquire`, `write[2]`, `schema.lease`).
    pub place: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
        }
        if let Some(p) = &self.place {
            write!(f, ": {p}")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for SpecError {}
