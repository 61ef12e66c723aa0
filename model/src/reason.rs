//! Why a statement was definitely not applied: one typed name for every reason the model, the
//! PostgreSQL adapter, the simulation and a recording report, so that the checkers decide on a
//! variant instead of comparing spellings. The text form (`busy`, `conn-lost`,
//! `sqlstate-40001`, …) is the one traces and recordings have always carried; it round-trips
//! through `Display` and `FromStr`, and a reason nobody here names (an adapter's own failure, a
//! recording's free text) is kept as written in [`Reason::Other`].

use std::fmt;

/// A PostgreSQL error code (SQLSTATE, Appendix A "PostgreSQL Error Codes" of the manual): five
/// digits or upper-case letters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SqlState([u8; 5]);

impl SqlState {
    /// 40001 `serialization_failure`: a REPEATABLE READ transaction tried to change a row a
    /// transaction committed after its snapshot (manual 13.2.2).
    pub const SERIALIZATION_FAILURE: SqlState = SqlState(*b"40001");
    /// 40P01 `deadlock_detected`: this transaction was the deadlock's victim.
    pub const DEADLOCK_DETECTED: SqlState = SqlState(*b"40P01");
    /// 25P02 `in_failed_sql_transaction`: an earlier statement of the transaction failed, and
    /// every statement until ROLLBACK is refused.
    pub const IN_FAILED_SQL_TRANSACTION: SqlState = SqlState(*b"25P02");

    /// The code from its five characters; `None` if it is not five digits or upper-case
    /// letters.
    pub fn new(code: &str) -> Option<SqlState> {
        let b: [u8; 5] = code.as_bytes().try_into().ok()?;
        b.iter()
            .all(|c| c.is_ascii_digit() || c.is_ascii_uppercase())
            .then_some(SqlState(b))
    }

    /// The five characters.
    pub fn code(&self) -> &str {
        // Only ASCII is ever stored (`new` and the constants).
        std::str::from_utf8(&self.0).unwrap_or("?????")
    }
}

/// Why a statement was definitely not applied.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Reason {
    /// `busy`: the connection still has a statement in flight, waiting or finished but not
    /// collected; a client reads replies in order, so nothing else may be sent on it.
    Busy,
    /// `conn-lost`: the connection is closed (its server crashed, or the client closed it).
    ConnLost,
    /// `still-blocked`: `await` on a statement that still waits for a row lock.
    StillBlocked,
    /// `not-blocked`: `await` or a disconnect-while-waiting on a connection with nothing in
    /// flight.
    NotBlocked,
    /// `in-transaction`: a one-shot operation on a connection inside a transaction, or a
    /// transaction begun twice.
    InTransaction,
    /// `already-down`: a crash of a database that is down.
    AlreadyDown,
    /// `not-down`: a restart of a database that is up.
    NotDown,
    /// `sqlstate-XXXXX`: PostgreSQL refused the statement with this error code.
    SqlState(SqlState),
    /// Any other reason, kept as written (no spaces: the trace format is whitespace-separated).
    Other(String),
}

impl Reason {
    /// `sqlstate-40001`.
    pub const SERIALIZATION_FAILURE: Reason = Reason::SqlState(SqlState::SERIALIZATION_FAILURE);
    /// `sqlstate-40P01`.
    pub const DEADLOCK_DETECTED: Reason = Reason::SqlState(SqlState::DEADLOCK_DETECTED);
    /// `sqlstate-25P02`.
    pub const IN_FAILED_SQL_TRANSACTION: Reason =
        Reason::SqlState(SqlState::IN_FAILED_SQL_TRANSACTION);

    /// A reason of the adapter's or a recording's own (`Other`), or the named reason its text
    /// spells.
    pub fn other(text: impl Into<String>) -> Reason {
        let text = text.into();
        text.parse().unwrap_or(Reason::Other(text))
    }

    /// Whether PostgreSQL refused the statement with an error code: inside a transaction, that
    /// aborts it (every later statement gets 25P02 until ROLLBACK).
    pub fn is_sql_error(&self) -> bool {
        matches!(self, Reason::SqlState(_))
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::Busy => f.write_str("busy"),
            Reason::ConnLost => f.write_str("conn-lost"),
            Reason::StillBlocked => f.write_str("still-blocked"),
            Reason::NotBlocked => f.write_str("not-blocked"),
            Reason::InTransaction => f.write_str("in-transaction"),
            Reason::AlreadyDown => f.write_str("already-down"),
            Reason::NotDown => f.write_str("not-down"),
            Reason::SqlState(c) => write!(f, "sqlstate-{}", c.code()),
            Reason::Other(s) => f.write_str(s),
        }
    }
}

impl std::str::FromStr for Reason {
    type Err = std::convert::Infallible;

    /// Never fails: a text no variant names is `Other`.
    fn from_str(s: &str) -> Result<Reason, Self::Err> {
        Ok(match s {
            "busy" => Reason::Busy,
            "conn-lost" => Reason::ConnLost,
            "still-blocked" => Reason::StillBlocked,
            "not-blocked" => Reason::NotBlocked,
            "in-transaction" => Reason::InTransaction,
            "already-down" => Reason::AlreadyDown,
            "not-down" => Reason::NotDown,
            _ => match s.strip_prefix("sqlstate-").and_then(SqlState::new) {
                Some(c) => Reason::SqlState(c),
                None => Reason::Other(s.to_string()),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_named_reason_is_read_as_its_variant() {
        for (text, r) in [
            ("busy", Reason::Busy),
            ("conn-lost", Reason::ConnLost),
            ("still-blocked", Reason::StillBlocked),
            ("not-blocked", Reason::NotBlocked),
            ("in-transaction", Reason::InTransaction),
            ("already-down", Reason::AlreadyDown),
            ("not-down", Reason::NotDown),
            ("sqlstate-40001", Reason::SERIALIZATION_FAILURE),
            ("sqlstate-40P01", Reason::DEADLOCK_DETECTED),
            ("sqlstate-25P02", Reason::IN_FAILED_SQL_TRANSACTION),
        ] {
            assert_eq!(Reason::other(text), r, "{text}");
            assert_eq!(r.to_string(), text);
        }
        assert_eq!(Reason::other("pg:x"), Reason::Other("pg:x".into()));
        assert_eq!(SqlState::SERIALIZATION_FAILURE.code(), "40001");
        assert_eq!(SqlState::new("40p01"), None);
    }

    #[test]
    fn every_reason_reads_back_as_written() {
        for text in [
            "busy",
            "conn-lost",
            "still-blocked",
            "not-blocked",
            "in-transaction",
            "already-down",
            "not-down",
            "sqlstate-40001",
            "sqlstate-40P01",
            "sqlstate-25P02",
            "pg:db_error",
            "sqlstate-4001",
            "sqlstate-4000a",
        ] {
            let r: Reason = text.parse().unwrap_or(Reason::Other(String::new()));
            assert_eq!(r.to_string(), text);
        }
        assert_eq!(Reason::other("busy"), Reason::Busy);
        assert_eq!(
            Reason::other("sqlstate-40001"),
            Reason::SERIALIZATION_FAILURE
        );
        assert!(Reason::other("sqlstate-40P01").is_sql_error());
        assert!(!Reason::other("sqlstate-4001").is_sql_error());
    }
}
