//! The text form of the vocabulary: how an [`Op`] and an [`Outcome`] are written in an event
//! line (`acquire lease=… holder=… ttl_ms=…`, `granted token=… expires=…`), with values
//! percent-escaped. `Display` of both uses it; the trace format (`leaselab-trace`) writes event
//! lines with it and parses them back, and the simulation's wire protocol carries it.

pub mod fields;
pub mod read;

pub use fields::Fields;
pub use read::{LineReader, TextError};

use crate::history::{Op, Outcome};
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

/// One field value of an operation: text, or a number (the JSON-lines history format keeps
/// the two apart; an event line writes both as words).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field<'a> {
    /// A name or content.
    Text(&'a str),
    /// A token, a duration or a time.
    Num(u64),
}

/// An operation's word, as every text form writes it (`acquire`, `read-part`, `begin`, …).
pub fn op_word(op: &Op) -> &'static str {
    match op {
        Op::Acquire { .. } => "acquire",
        Op::Renew { .. } => "renew",
        Op::Release { .. } => "release",
        Op::Write { .. } => "write",
        Op::Fence { .. } => "fence",
        Op::Upsert { .. } => "upsert",
        Op::Publish { .. } => "publish",
        Op::Begin { .. } | Op::BeginRepeatableRead { .. } => "begin",
        Op::Commit { .. } => "commit",
        Op::Rollback { .. } => "rollback",
        Op::Await { .. } => "await",
        Op::Disconnect { .. } => "disconnect",
        Op::Now { .. } => "now",
        Op::Crash { .. } => "crash",
        Op::Restart { .. } => "restart",
        Op::ReadLease { .. } => "read-lease",
        Op::ReadFloor { .. } => "read-floor",
        Op::ReadPart { .. } => "read-part",
        Op::ReadPublish { .. } => "read-publish",
        Op::CountAttempts { .. } => "count-attempts",
        Op::Check { .. } => "check",
        Op::Pause => "pause",
        Op::Resume => "resume",
        Op::Lost => "lost",
        Op::ClockStep { .. } => "clock-step",
    }
}

/// An operation's fields, in their written order: the one list that an event line (here) and
/// a JSON-lines history (`leaselab-record`) both write.
pub fn op_fields<'a>(op: &'a Op, mut field: impl FnMut(&'static str, Field<'a>)) {
    use Field::{Num, Text};
    match op {
        Op::Acquire {
            lease,
            holder,
            ttl_ms,
        } => {
            field("lease", Text(lease.as_str()));
            field("holder", Text(holder.as_str()));
            field("ttl_ms", Num(*ttl_ms));
        }
        Op::Renew {
            lease,
            holder,
            token,
            ttl_ms,
        } => {
            field("lease", Text(lease.as_str()));
            field("holder", Text(holder.as_str()));
            field("token", Num(token.0));
            field("ttl_ms", Num(*ttl_ms));
        }
        Op::Release {
            lease,
            holder,
            token,
        } => {
            field("lease", Text(lease.as_str()));
            field("holder", Text(holder.as_str()));
            field("token", Num(token.0));
        }
        Op::Write {
            scope,
            part,
            content,
            token,
        }
        | Op::Upsert {
            scope,
            part,
            content,
            token,
        } => {
            field("scope", Text(scope.as_str()));
            field("part", Text(part.as_str()));
            field("content", Text(content));
            field("token", Num(token.0));
        }
        Op::Fence { scope, token } => {
            field("scope", Text(scope.as_str()));
            field("token", Num(token.0));
        }
        Op::Publish {
            key,
            content,
            token,
        } => {
            field("key", Text(key));
            field("content", Text(content));
            field("token", Num(token.0));
        }
        Op::BeginRepeatableRead { db } => {
            field("db", Text(db.as_str()));
            field("isolation", Text("repeatable-read"));
        }
        Op::Begin { db }
        | Op::Commit { db }
        | Op::Rollback { db }
        | Op::Await { db }
        | Op::Now { db }
        | Op::Disconnect { db }
        | Op::Crash { db }
        | Op::Restart { db } => field("db", Text(db.as_str())),
        Op::ReadLease { lease } => field("lease", Text(lease.as_str())),
        Op::ReadFloor { scope } => field("scope", Text(scope.as_str())),
        Op::ReadPart { scope, part } => {
            field("scope", Text(scope.as_str()));
            field("part", Text(part.as_str()));
        }
        Op::ReadPublish { key } => field("key", Text(key)),
        Op::CountAttempts { writer, outcome } => {
            field("writer", Text(writer.as_str()));
            field("outcome", Text(outcome.as_str()));
        }
        Op::Check { deadline } => field("deadline", Num(deadline.0)),
        Op::ClockStep { from } => field("from", Num(from.0)),
        Op::Pause | Op::Resume | Op::Lost => {}
    }
}

/// The canonical text of an operation (word and fields), as in an event line.
pub fn op_text(op: &Op) -> String {
    let mut s = op_word(op).to_string();
    op_fields(op, |k, v| match v {
        Field::Text(t) => kv(&mut s, k, t),
        Field::Num(n) => kv(&mut s, k, n),
    });
    s
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
