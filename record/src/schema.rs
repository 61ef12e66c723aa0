//! The operation schema of the format: which fields each operation word carries, how a line's
//! fields read into an [`Op`], an [`Outcome`] and their values, and the names a history repeats
//! (kept once). [`crate::read`] pairs the lines this reads into events.

use crate::read::ReadError;
use crate::write::default_result;
use leaselab_model::Reason;
use leaselab_model::{
    AttemptOutcome, ConnId, DbName, Expiry, Holder, LeaseName, LeaseRow, Millis, Op, Outcome, Part,
    PartRow, Scope, Token,
};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The names read so far, each kept once.
#[derive(Default)]
pub(crate) struct Names {
    holders: std::cell::RefCell<BTreeMap<String, Holder>>,
    leases: std::cell::RefCell<BTreeMap<String, LeaseName>>,
    scopes: std::cell::RefCell<BTreeMap<String, Scope>>,
    parts: std::cell::RefCell<BTreeMap<String, Part>>,
    conns: std::cell::RefCell<BTreeMap<String, ConnId>>,
}

fn shared<T: Clone>(
    cache: &std::cell::RefCell<BTreeMap<String, T>>,
    name: &str,
    make: impl Fn(&str) -> T,
) -> T {
    let mut c = cache.borrow_mut();
    if let Some(v) = c.get(name) {
        return v.clone();
    }
    let v = make(name);
    c.insert(name.to_string(), v.clone());
    v
}

impl Names {
    pub(crate) fn holder(&self, s: &str) -> Holder {
        shared(&self.holders, s, |n| Holder::new(n))
    }
    pub(crate) fn lease(&self, s: &str) -> LeaseName {
        shared(&self.leases, s, |n| LeaseName::new(n))
    }
    pub(crate) fn scope(&self, s: &str) -> Scope {
        shared(&self.scopes, s, |n| Scope::new(n))
    }
    pub(crate) fn part(&self, s: &str) -> Part {
        shared(&self.parts, s, |n| Part::new(n))
    }
    pub(crate) fn conn(&self, s: &str) -> ConnId {
        shared(&self.conns, s, |n| ConnId::new(n))
    }
}

/// The fields a line may carry besides the operation's own.
pub(crate) const COMMON: [&str; 7] = [
    "type",
    "process",
    "conn",
    "time",
    "time_us",
    "server_time",
    "op",
];
pub(crate) const RESULT: [&str; 5] = ["result", "token", "expires", "value", "error"];

/// Every operation word, with its argument fields.
const OPS: [(&str, &[&str]); 25] = [
    ("acquire", &["lease", "holder", "ttl_ms"]),
    ("renew", &["lease", "holder", "token", "ttl_ms"]),
    ("release", &["lease", "holder", "token"]),
    ("write", &["scope", "part", "content", "token"]),
    ("fence", &["scope", "token"]),
    ("upsert", &["scope", "part", "content", "token"]),
    ("publish", &["key", "content", "token"]),
    ("begin", &["db", "isolation"]),
    ("commit", &["db"]),
    ("rollback", &["db"]),
    ("await", &["db"]),
    ("disconnect", &["db"]),
    ("now", &["db"]),
    ("crash", &["db"]),
    ("restart", &["db"]),
    ("read-lease", &["lease"]),
    ("read-floor", &["scope"]),
    ("read-part", &["scope", "part"]),
    ("read-publish", &["key"]),
    ("count-attempts", &["writer", "outcome"]),
    ("check", &["deadline"]),
    ("pause", &[]),
    ("resume", &[]),
    ("lost", &[]),
    ("clock-step", &["from"]),
];

pub(crate) fn args_of(word: &str) -> Option<&'static [&'static str]> {
    OPS.iter().find(|(w, _)| *w == word).map(|(_, a)| *a)
}

pub(crate) fn words() -> String {
    OPS.iter().map(|(w, _)| *w).collect::<Vec<_>>().join(", ")
}

/// A line's fields, read one at a time.
pub(crate) struct Fields<'a> {
    file: &'a str,
    names: &'a Names,
    line: usize,
    obj: &'a Map<String, Value>,
}

impl<'a> Fields<'a> {
    /// Line `line` of `file`, its names kept in `names`.
    pub(crate) fn new(
        file: &'a str,
        names: &'a Names,
        line: usize,
        obj: &'a Map<String, Value>,
    ) -> Self {
        Fields {
            file,
            names,
            line,
            obj,
        }
    }
    pub(crate) fn err(&self, field: &str, message: impl Into<String>) -> ReadError {
        ReadError {
            file: self.file.to_string(),
            line: self.line,
            field: field.to_string(),
            message: message.into(),
        }
    }
    pub(crate) fn opt(&self, k: &str) -> Option<&'a Value> {
        self.obj.get(k)
    }
    pub(crate) fn get(&self, k: &str) -> Result<&'a Value, ReadError> {
        self.opt(k).ok_or_else(|| self.err(k, "missing"))
    }
    pub(crate) fn str(&self, k: &str) -> Result<&'a str, ReadError> {
        self.get(k)?
            .as_str()
            .ok_or_else(|| self.err(k, "expected a string"))
    }
    pub(crate) fn opt_str(&self, k: &str) -> Result<Option<&'a str>, ReadError> {
        match self.opt(k) {
            None => Ok(None),
            Some(_) => self.str(k).map(Some),
        }
    }
    pub(crate) fn u64(&self, k: &str) -> Result<u64, ReadError> {
        as_u64(self.get(k)?).ok_or_else(|| {
            self.err(
                k,
                "expected a whole number of milliseconds or a count, 0 to 9223372036854775807 (PostgreSQL's bigint)",
            )
        })
    }
    pub(crate) fn db(&self) -> Result<DbName, ReadError> {
        match self.str("db")? {
            "lease" => Ok(DbName::Lease),
            "res" => Ok(DbName::Res),
            other => Err(self.err("db", format!("`{other}`: expected lease or res"))),
        }
    }
    /// Every field is one this line may carry.
    pub(crate) fn only(&self, args: &[&str], extra: &[&str]) -> Result<(), ReadError> {
        for k in self.obj.keys() {
            let k = k.as_str();
            let known = COMMON.contains(&k) || args.contains(&k) || extra.contains(&k);
            if k.is_empty() {
                return Err(self.err("line", "a field with an empty name (`\"\": …`)"));
            }
            if !known {
                return Err(self.err(k, "unknown field"));
            }
        }
        Ok(())
    }

    pub(crate) fn holder(&self, k: &str) -> Result<Holder, ReadError> {
        match self.opt(k) {
            Some(_) => Ok(self.names.holder(self.str(k)?)),
            // The process acts for itself unless the line says otherwise.
            None => Ok(self.names.holder(self.str("process")?)),
        }
    }

    pub(crate) fn op(&self, word: &str) -> Result<Op, ReadError> {
        let lease = || self.str("lease").map(|l| self.names.lease(l));
        let scope = || self.str("scope").map(|s| self.names.scope(s));
        let token = || self.u64("token").map(Token);
        Ok(match word {
            "acquire" => Op::Acquire {
                lease: lease()?,
                holder: self.holder("holder")?,
                ttl_ms: self.u64("ttl_ms")?,
            },
            "renew" => Op::Renew {
                lease: lease()?,
                holder: self.holder("holder")?,
                token: token()?,
                ttl_ms: self.u64("ttl_ms")?,
            },
            "release" => Op::Release {
                lease: lease()?,
                holder: self.holder("holder")?,
                token: token()?,
            },
            "write" => Op::Write {
                scope: scope()?,
                part: self.names.part(self.str("part")?),
                content: self.str("content")?.to_string(),
                token: token()?,
            },
            "upsert" => Op::Upsert {
                scope: scope()?,
                part: self.names.part(self.str("part")?),
                content: self.str("content")?.to_string(),
                token: token()?,
            },
            "fence" => Op::Fence {
                scope: scope()?,
                token: token()?,
            },
            "publish" => Op::Publish {
                key: self.str("key")?.to_string(),
                content: self.str("content")?.to_string(),
                token: token()?,
            },
            "begin" => match self.opt_str("isolation")? {
                None | Some("read-committed") => Op::Begin { db: self.db()? },
                Some("repeatable-read") => Op::BeginRepeatableRead { db: self.db()? },
                Some(other) => {
                    return Err(self.err(
                        "isolation",
                        format!("`{other}`: expected read-committed or repeatable-read"),
                    ))
                }
            },
            "commit" => Op::Commit { db: self.db()? },
            "rollback" => Op::Rollback { db: self.db()? },
            "await" => Op::Await { db: self.db()? },
            "disconnect" => Op::Disconnect { db: self.db()? },
            "now" => Op::Now { db: self.db()? },
            "crash" => Op::Crash { db: self.db()? },
            "restart" => Op::Restart { db: self.db()? },
            "read-lease" => Op::ReadLease { lease: lease()? },
            "read-floor" => Op::ReadFloor { scope: scope()? },
            "read-part" => Op::ReadPart {
                scope: scope()?,
                part: self.names.part(self.str("part")?),
            },
            "read-publish" => Op::ReadPublish {
                key: self.str("key")?.to_string(),
            },
            "count-attempts" => Op::CountAttempts {
                writer: self.names.holder(self.str("writer")?),
                outcome: match self.str("outcome")? {
                    "accepted" => AttemptOutcome::Accepted,
                    "rejected" => AttemptOutcome::Rejected,
                    other => {
                        return Err(self.err(
                            "outcome",
                            format!("`{other}`: expected accepted or rejected"),
                        ))
                    }
                },
            },
            "check" => Op::Check {
                deadline: Millis(self.u64("deadline")?),
            },
            "pause" => Op::Pause,
            "resume" => Op::Resume,
            "clock-step" => Op::ClockStep {
                from: Millis(self.u64("from")?),
            },
            _ => Op::Lost,
        })
    }

    pub(crate) fn expiry(&self, v: &Value, field: &str) -> Result<Expiry, ReadError> {
        match v {
            Value::String(s) if s == "-infinity" => Ok(Expiry::NegInfinity),
            v => as_u64(v).map(|t| Expiry::At(Millis(t))).ok_or_else(|| {
                self.err(
                    field,
                    "expected milliseconds (0 to 9223372036854775807) or \"-infinity\"",
                )
            }),
        }
    }

    pub(crate) fn row(&self, v: &Value) -> Result<Option<PartRow>, ReadError> {
        let Some(m) = self.obj_or_null(v)? else {
            return Ok(None);
        };
        let s = |k: &str| {
            m.get(k)
                .and_then(Value::as_str)
                .ok_or_else(|| self.err(&format!("value.{k}"), "expected a string"))
        };
        Ok(Some(PartRow {
            content: s("content")?.to_string(),
            writer: self.names.holder(s("writer")?),
            token: Token(m.get("token").and_then(as_u64).ok_or_else(|| {
                self.err(
                    "value.token",
                    "expected a token: 0 to 9223372036854775807 (PostgreSQL's bigint)",
                )
            })?),
        }))
    }

    pub(crate) fn obj_or_null(
        &self,
        v: &'a Value,
    ) -> Result<Option<&'a Map<String, Value>>, ReadError> {
        match v {
            Value::Null => Ok(None),
            Value::Object(m) => Ok(Some(m)),
            _ => Err(self.err("value", "expected an object or null")),
        }
    }

    pub(crate) fn outcome(&self, word: &str, kind: &str) -> Result<Outcome, ReadError> {
        let result = match self.opt_str("result")? {
            Some(r) => r,
            None => default_result(word, kind),
        };
        let want = match result {
            "granted" | "renewed" | "released" | "accepted" | "passed" | "ok" | "now" | "floor"
            | "part" | "published" | "lease" | "count" | "valid" | "expired" => "ok",
            "refused" | "rejected" | "failed" | "unavailable" | "error" => "fail",
            "indeterminate" => "info",
            other => return Err(self.err("result", format!("`{other}`: unknown result"))),
        };
        if want != kind {
            return Err(self.err(
                "result",
                format!("`{result}` is a `{want}` completion, not `{kind}`"),
            ));
        }
        let value = || self.get("value");
        let reason = |default: &str| -> Result<String, ReadError> {
            Ok(self.opt_str("error")?.unwrap_or(default).to_string())
        };
        Ok(match result {
            "granted" => Outcome::Granted {
                token: Token(self.u64("token")?),
                expires: self.expiry(self.get("expires")?, "expires")?,
            },
            "renewed" => Outcome::Renewed {
                expires: self.expiry(self.get("expires")?, "expires")?,
            },
            "released" => Outcome::Released,
            "accepted" => Outcome::Accepted,
            "passed" => Outcome::Passed,
            "ok" => Outcome::Ok,
            "valid" => Outcome::Valid,
            "expired" => Outcome::Expired,
            "refused" => Outcome::Refused,
            "rejected" => Outcome::Rejected,
            "failed" => Outcome::Failed,
            "unavailable" => Outcome::Unavailable,
            "error" => Outcome::Error(Reason::other(reason("failed")?)),
            "indeterminate" => Outcome::Indeterminate(reason("unknown")?),
            "now" => Outcome::Now(Millis(self.u64("value")?)),
            "count" => Outcome::Count(self.u64("value")?),
            "floor" => Outcome::Floor(match value()? {
                Value::Null => None,
                v => Some(Token(as_u64(v).ok_or_else(|| {
                    self.err(
                        "value",
                        "expected a token (0 to 9223372036854775807) or null",
                    )
                })?)),
            }),
            "part" => Outcome::Part(self.row(value()?)?),
            "published" => Outcome::Published(self.row(value()?)?),
            _ => Outcome::Lease(match self.obj_or_null(value()?)? {
                None => None,
                Some(m) => Some(LeaseRow {
                    holder: Holder::new(
                        m.get("holder")
                            .and_then(Value::as_str)
                            .ok_or_else(|| self.err("value.holder", "expected a string"))?,
                    ),
                    token: Token(m.get("token").and_then(as_u64).ok_or_else(|| {
                        self.err(
                            "value.token",
                            "expected a token: 0 to 9223372036854775807 (PostgreSQL's bigint)",
                        )
                    })?),
                    expires_at: self.expiry(
                        m.get("expires")
                            .ok_or_else(|| self.err("value.expires", "missing"))?,
                        "value.expires",
                    )?,
                }),
            }),
        })
    }
}

/// The largest number the format takes — a time, a token, a TTL, a count: PostgreSQL's
/// `bigint` ends there (`docs/history-jsonl.md`), and no database this judges could send more.
pub const MAX_NUMBER: u64 = i64::MAX as u64;

pub(crate) fn as_u64(v: &Value) -> Option<u64> {
    v.as_u64().filter(|n| *n <= MAX_NUMBER)
}
