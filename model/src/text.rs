//! The text form of the vocabulary: how an [`Op`] and an [`Outcome`] are written in an event
//! line (`acquire lease=… holder=… ttl_ms=…`, `granted token=… expires=…`), with values
//! percent-escaped. `Display` of both uses it; the trace format (`leaselab-trace`) writes event
//! lines with it and parses them back, and the simulation's wire protocol carries it.

use crate::history::{DbName, Op, Outcome};
use crate::rows::PartRow;
use crate::time::Expiry;
use std::fmt::Write as _;

/// Percent-escapes `%`, `=`, space, tab and newlines, so a value never splits a line
/// into the wrong words.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '%' | '=' | ' ' | '\t' | '\n' | '\r' => {
                let _ = write!(out, "%{:02X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// Undoes [`escape`]; `None` for a malformed `%XX`.
pub fn unescape(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn expiry_str(e: Expiry) -> String {
    e.to_string()
}

/// Appends ` key=value` with the value escaped.
pub fn kv(out: &mut String, k: &str, v: impl std::fmt::Display) {
    let _ = write!(out, " {k}={}", escape(&v.to_string()));
}

/// The canonical text of an operation (word and fields), as in an event line.
pub fn op_text(op: &Op) -> String {
    let mut s = String::new();
    match op {
        Op::Acquire {
            lease,
            holder,
            ttl_ms,
        } => {
            s.push_str("acquire");
            kv(&mut s, "lease", lease);
            kv(&mut s, "holder", holder);
            kv(&mut s, "ttl_ms", ttl_ms);
        }
        Op::Renew {
            lease,
            holder,
            token,
            ttl_ms,
        } => {
            s.push_str("renew");
            kv(&mut s, "lease", lease);
            kv(&mut s, "holder", holder);
            kv(&mut s, "token", token);
            kv(&mut s, "ttl_ms", ttl_ms);
        }
        Op::Release {
            lease,
            holder,
            token,
        } => {
            s.push_str("release");
            kv(&mut s, "lease", lease);
            kv(&mut s, "holder", holder);
            kv(&mut s, "token", token);
        }
        Op::Write {
            scope,
            part,
            content,
            token,
        } => {
            s.push_str("write");
            kv(&mut s, "scope", scope);
            kv(&mut s, "part", part);
            kv(&mut s, "content", content);
            kv(&mut s, "token", token);
        }
        Op::Fence { scope, token } => {
            s.push_str("fence");
            kv(&mut s, "scope", scope);
            kv(&mut s, "token", token);
        }
        Op::Upsert {
            scope,
            part,
            content,
            token,
        } => {
            s.push_str("upsert");
            kv(&mut s, "scope", scope);
            kv(&mut s, "part", part);
            kv(&mut s, "content", content);
            kv(&mut s, "token", token);
        }
        Op::Publish {
            key,
            content,
            token,
        } => {
            s.push_str("publish");
            kv(&mut s, "key", key);
            kv(&mut s, "content", content);
            kv(&mut s, "token", token);
        }
        Op::Begin { db } => db_op(&mut s, "begin", *db),
        Op::BeginRepeatableRead { db } => {
            db_op(&mut s, "begin", *db);
            kv(&mut s, "isolation", "repeatable-read");
        }
        Op::Commit { db } => db_op(&mut s, "commit", *db),
        Op::Rollback { db } => db_op(&mut s, "rollback", *db),
        Op::Await { db } => db_op(&mut s, "await", *db),
        Op::Now { db } => db_op(&mut s, "now", *db),
        Op::Disconnect { db } => db_op(&mut s, "disconnect", *db),
        Op::Crash { db } => db_op(&mut s, "crash", *db),
        Op::Restart { db } => db_op(&mut s, "restart", *db),
        Op::ReadLease { lease } => {
            s.push_str("read-lease");
            kv(&mut s, "lease", lease);
        }
        Op::ReadFloor { scope } => {
            s.push_str("read-floor");
            kv(&mut s, "scope", scope);
        }
        Op::ReadPart { scope, part } => {
            s.push_str("read-part");
            kv(&mut s, "scope", scope);
            kv(&mut s, "part", part);
        }
        Op::ReadPublish { key } => {
            s.push_str("read-publish");
            kv(&mut s, "key", key);
        }
        Op::CountAttempts { writer, outcome } => {
            s.push_str("count-attempts");
            kv(&mut s, "writer", writer);
            kv(&mut s, "outcome", outcome.as_str());
        }
        Op::Check { deadline } => {
            s.push_str("check");
            kv(&mut s, "deadline", deadline);
        }
        Op::Pause => s.push_str("pause"),
        Op::Resume => s.push_str("resume"),
        Op::Lost => s.push_str("lost"),
    }
    s
}

fn db_op(s: &mut String, word: &str, db: DbName) {
    s.push_str(word);
    kv(s, "db", db.as_str());
}

fn row_fields(s: &mut String, r: &PartRow) {
    kv(s, "content", &r.content);
    kv(s, "writer", &r.writer);
    kv(s, "token", r.token);
}

/// The canonical text of an outcome.
pub fn outcome_text(o: &Outcome) -> String {
    let mut s = String::new();
    match o {
        Outcome::Granted { token, expires } => {
            s.push_str("granted");
            kv(&mut s, "token", token);
            kv(&mut s, "expires", expiry_str(*expires));
        }
        Outcome::Refused => s.push_str("refused"),
        Outcome::Renewed { expires } => {
            s.push_str("renewed");
            kv(&mut s, "expires", expiry_str(*expires));
        }
        Outcome::Released => s.push_str("released"),
        Outcome::Accepted => s.push_str("accepted"),
        Outcome::Rejected => s.push_str("rejected"),
        Outcome::Passed => s.push_str("passed"),
        Outcome::Failed => s.push_str("failed"),
        Outcome::Ok => s.push_str("ok"),
        Outcome::Blocked => s.push_str("blocked"),
        Outcome::Now(t) => {
            s.push_str("now");
            kv(&mut s, "at", t);
        }
        Outcome::Floor(Some(t)) => {
            s.push_str("floor");
            kv(&mut s, "max_token", t);
        }
        Outcome::Floor(None) => s.push_str("floor absent"),
        Outcome::Part(Some(r)) => {
            s.push_str("part");
            row_fields(&mut s, r);
        }
        Outcome::Part(None) => s.push_str("part absent"),
        Outcome::Published(Some(r)) => {
            s.push_str("published");
            row_fields(&mut s, r);
        }
        Outcome::Published(None) => s.push_str("published absent"),
        Outcome::Lease(Some(r)) => {
            s.push_str("lease");
            kv(&mut s, "holder", &r.holder);
            kv(&mut s, "token", r.token);
            kv(&mut s, "expires", expiry_str(r.expires_at));
        }
        Outcome::Lease(None) => s.push_str("lease absent"),
        Outcome::Count(n) => {
            s.push_str("count");
            kv(&mut s, "n", n);
        }
        Outcome::Valid => s.push_str("valid"),
        Outcome::Expired => s.push_str("expired"),
        Outcome::Unavailable => s.push_str("unavailable"),
        Outcome::Error(r) => {
            s.push_str("error");
            kv(&mut s, "reason", r);
        }
        Outcome::Indeterminate(r) => {
            s.push_str("indeterminate");
            kv(&mut s, "reason", r);
        }
    }
    s
}

impl std::fmt::Display for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&op_text(self))
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&outcome_text(self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_round_trip() {
        for s in ["plain", "with space", "a=b", "100%", "", "ünï"] {
            assert_eq!(unescape(&escape(s)).as_deref(), Some(s));
        }
    }
}
