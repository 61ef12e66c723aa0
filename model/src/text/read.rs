//! Reading event-line text back: the operations and outcomes [`super`] writes, and the
//! helpers every line reader of a trace shares (escapes, numbers, `key=value` fields). Malformed
//! input is a [`TextError`] naming the file, the line and the field — never a panic.

use super::fields::Fields;
use super::{escape, unescape};
use crate::history::{DbName, Op, Outcome};
use crate::names::{Holder, LeaseName, Part, Scope, Token};
use crate::reason::Reason;
use crate::rows::{AttemptOutcome, LeaseRow, PartRow};
use crate::time::{Expiry, Millis};

/// Text that cannot be read: where and what. Shown as `file:line: field `f`: what`, or
/// without the line when it is 0 (the fault is the file's as a whole: a line it lacks).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextError {
    /// File name as given by the caller.
    pub file: String,
    /// 1-based line number (0 if the file ended too early).
    pub line: usize,
    /// The field (or line kind) at fault.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for TextError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line == 0 {
            write!(f, "{}: field `{}`: {}", self.file, self.field, self.message)
        } else {
            write!(
                f,
                "{}:{}: field `{}`: {}",
                self.file, self.line, self.field, self.message
            )
        }
    }
}

impl std::error::Error for TextError {}

/// Reads the lines of one file (`file` is only used in error messages).
#[derive(Clone, Copy, Debug)]
pub struct LineReader<'f> {
    /// The file the lines come from.
    pub file: &'f str,
}

impl<'f> LineReader<'f> {
    /// An error always names a field (a part of the line when no field can be named), so a
    /// person knows where to look.
    pub fn err(&self, line: usize, field: &str, message: impl Into<String>) -> TextError {
        TextError::at(self.file, line, field, message)
    }

    /// A value is percent-escaped one way only (what [`escape`] writes), so it reads back and
    /// writes again as the same bytes.
    pub fn unesc(&self, line: usize, field: &str, v: &str) -> Result<String, TextError> {
        let s = unescape(v).ok_or_else(|| {
            self.err(
                line,
                field,
                format!("bad %-escape in `{v}` (write `%XX` with two hex digits)"),
            )
        })?;
        let canon = escape(&s);
        if canon != v {
            return Err(self.err(
                line,
                field,
                format!(
                    "`{v}` is escaped another way than a trace writes it: `{canon}` (only %, =, \
                     space, tab, CR and LF are escaped, as %XX in upper-case hex)"
                ),
            ));
        }
        Ok(s)
    }

    /// A non-negative integer written the one way a trace writes it.
    pub fn num(&self, line: usize, field: &str, v: &str) -> Result<u64, TextError> {
        let n = v.parse::<u64>().map_err(|_| {
            self.err(
                line,
                field,
                format!("expected a non-negative integer, found `{v}`"),
            )
        })?;
        if n.to_string() != v {
            return Err(self.err(
                line,
                field,
                format!("write `{v}` as `{n}` (no sign, no leading zeros)"),
            ));
        }
        Ok(n)
    }

    /// The `key=value` words of line `line`.
    pub fn fields<'a>(&self, line: usize, words: &[&'a str]) -> Result<Fields<'a>, TextError>
    where
        'f: 'a,
    {
        Fields::read(self.file, line, words)
    }

    /// Takes `key`'s value, unescaped.
    pub fn take(&self, f: &mut Fields<'_>, key: &str) -> Result<String, TextError> {
        let v = f.take(key)?;
        self.unesc(f.line, key, v)
    }

    /// Takes `key` as a non-negative integer.
    pub fn take_num(&self, f: &mut Fields<'_>, key: &str) -> Result<u64, TextError> {
        let v = self.take(f, key)?;
        self.num(f.line, key, &v)
    }

    /// Takes `key` and parses it with its type's `FromStr`.
    pub fn take_parsed<T: std::str::FromStr>(
        &self,
        f: &mut Fields<'_>,
        key: &str,
    ) -> Result<T, TextError>
    where
        T::Err: std::fmt::Display,
    {
        let v = self.take(f, key)?;
        v.parse::<T>()
            .map_err(|e| self.err(f.line, key, e.to_string()))
    }

    /// Takes `db` (`lease` or `res`).
    pub fn take_db(&self, f: &mut Fields<'_>) -> Result<DbName, TextError> {
        match self.take(f, "db")?.as_str() {
            "lease" => Ok(DbName::Lease),
            "res" => Ok(DbName::Res),
            other => Err(self.err(
                f.line,
                "db",
                format!("expected `lease` or `res`, found `{other}`"),
            )),
        }
    }

    /// Takes `key` as an expiry (`-infinity` or milliseconds).
    pub fn take_expiry(&self, f: &mut Fields<'_>, key: &str) -> Result<Expiry, TextError> {
        let v = self.take(f, key)?;
        if v == "-infinity" {
            return Ok(Expiry::NegInfinity);
        }
        Ok(Expiry::At(Millis(self.num(f.line, key, &v)?)))
    }

    /// Fails on the first field nobody took (`what`: the operation or outcome it was for).
    pub fn done(&self, f: Fields<'_>, what: &str) -> Result<(), TextError> {
        match f.leftover() {
            None => Ok(()),
            Some(k) => Err(self.err(f.line, k, format!("unexpected field for `{what}`"))),
        }
    }

    /// `conn=` anywhere but right after the actor.
    pub fn conn_misplaced(&self, n: usize) -> TextError {
        self.err(
            n,
            "conn",
            "`conn=` belongs right after the actor, before the operation",
        )
    }

    /// The operation `word` with its fields `args`, on line `n`.
    pub fn op(&self, n: usize, word: &str, args: &[&str]) -> Result<Op, TextError> {
        if word.starts_with("conn=") || args.iter().any(|w| w.starts_with("conn=")) {
            return Err(self.conn_misplaced(n));
        }
        let mut f = self.fields(n, args)?;
        let op = match word {
            "acquire" => Op::Acquire {
                lease: LeaseName::new(self.take(&mut f, "lease")?),
                holder: Holder::new(self.take(&mut f, "holder")?),
                ttl_ms: self.take_num(&mut f, "ttl_ms")?,
            },
            "renew" => Op::Renew {
                lease: LeaseName::new(self.take(&mut f, "lease")?),
                holder: Holder::new(self.take(&mut f, "holder")?),
                token: Token(self.take_num(&mut f, "token")?),
                ttl_ms: self.take_num(&mut f, "ttl_ms")?,
            },
            "release" => Op::Release {
                lease: LeaseName::new(self.take(&mut f, "lease")?),
                holder: Holder::new(self.take(&mut f, "holder")?),
                token: Token(self.take_num(&mut f, "token")?),
            },
            "write" | "upsert" => {
                let scope = Scope::new(self.take(&mut f, "scope")?);
                let part = Part::new(self.take(&mut f, "part")?);
                let content = self.take(&mut f, "content")?;
                let token = Token(self.take_num(&mut f, "token")?);
                if word == "write" {
                    Op::Write {
                        scope,
                        part,
                        content,
                        token,
                    }
                } else {
                    Op::Upsert {
                        scope,
                        part,
                        content,
                        token,
                    }
                }
            }
            "fence" => Op::Fence {
                scope: Scope::new(self.take(&mut f, "scope")?),
                token: Token(self.take_num(&mut f, "token")?),
            },
            "publish" => Op::Publish {
                key: self.take(&mut f, "key")?,
                content: self.take(&mut f, "content")?,
                token: Token(self.take_num(&mut f, "token")?),
            },
            "begin" => {
                let db = self.take_db(&mut f)?;
                if f.has("isolation") {
                    match self.take(&mut f, "isolation")?.as_str() {
                        "repeatable-read" => Op::BeginRepeatableRead { db },
                        "read-committed" => Op::Begin { db },
                        other => {
                            return Err(self.err(
                                n,
                                "isolation",
                                format!(
                                    "expected read-committed or repeatable-read, found `{other}`"
                                ),
                            ))
                        }
                    }
                } else {
                    Op::Begin { db }
                }
            }
            "commit" => Op::Commit {
                db: self.take_db(&mut f)?,
            },
            "rollback" => Op::Rollback {
                db: self.take_db(&mut f)?,
            },
            "await" => Op::Await {
                db: self.take_db(&mut f)?,
            },
            "now" => Op::Now {
                db: self.take_db(&mut f)?,
            },
            "disconnect" => Op::Disconnect {
                db: self.take_db(&mut f)?,
            },
            "crash" => Op::Crash {
                db: self.take_db(&mut f)?,
            },
            "restart" => Op::Restart {
                db: self.take_db(&mut f)?,
            },
            "read-lease" => Op::ReadLease {
                lease: LeaseName::new(self.take(&mut f, "lease")?),
            },
            "read-floor" => Op::ReadFloor {
                scope: Scope::new(self.take(&mut f, "scope")?),
            },
            "read-part" => Op::ReadPart {
                scope: Scope::new(self.take(&mut f, "scope")?),
                part: Part::new(self.take(&mut f, "part")?),
            },
            "read-publish" => Op::ReadPublish {
                key: self.take(&mut f, "key")?,
            },
            "count-attempts" => {
                let writer = Holder::new(self.take(&mut f, "writer")?);
                let outcome = match self.take(&mut f, "outcome")?.as_str() {
                    "accepted" => AttemptOutcome::Accepted,
                    "rejected" => AttemptOutcome::Rejected,
                    other => {
                        return Err(self.err(
                            n,
                            "outcome",
                            format!("expected `accepted` or `rejected`, found `{other}`"),
                        ))
                    }
                };
                Op::CountAttempts { writer, outcome }
            }
            "check" => Op::Check {
                deadline: Millis(self.take_num(&mut f, "deadline")?),
            },
            "pause" => Op::Pause,
            "resume" => Op::Resume,
            "lost" => Op::Lost,
            "clock-step" => Op::ClockStep {
                from: Millis(self.take_num(&mut f, "from")?),
            },
            other => return Err(self.err(n, "op", format!("unknown operation `{other}`"))),
        };
        self.done(f, word)?;
        Ok(op)
    }

    /// A part row's `content`, `writer` and `token`.
    pub fn part_row(&self, f: &mut Fields<'_>) -> Result<PartRow, TextError> {
        Ok(PartRow {
            content: self.take(f, "content")?,
            writer: Holder::new(self.take(f, "writer")?),
            token: Token(self.take_num(f, "token")?),
        })
    }

    /// The outcome `word` with its fields `args`, on line `n`.
    pub fn outcome(&self, n: usize, word: &str, args: &[&str]) -> Result<Outcome, TextError> {
        let absent = args == ["absent"];
        if absent && !matches!(word, "floor" | "part" | "published" | "lease") {
            return Err(self.err(
                n,
                "outcome",
                format!("`{word} absent`: only floor, part, published and lease can be absent"),
            ));
        }
        let args = if absent { &[][..] } else { args };
        let mut f = self.fields(n, args)?;
        let o = match word {
            "granted" => Outcome::Granted {
                token: Token(self.take_num(&mut f, "token")?),
                expires: self.take_expiry(&mut f, "expires")?,
            },
            "refused" => Outcome::Refused,
            "renewed" => Outcome::Renewed {
                expires: self.take_expiry(&mut f, "expires")?,
            },
            "released" => Outcome::Released,
            "accepted" => Outcome::Accepted,
            "rejected" => Outcome::Rejected,
            "passed" => Outcome::Passed,
            "failed" => Outcome::Failed,
            "ok" => Outcome::Ok,
            "blocked" => Outcome::Blocked,
            "now" => Outcome::Now(Millis(self.take_num(&mut f, "at")?)),
            "floor" if absent => Outcome::Floor(None),
            "floor" => Outcome::Floor(Some(Token(self.take_num(&mut f, "max_token")?))),
            "part" if absent => Outcome::Part(None),
            "part" => Outcome::Part(Some(self.part_row(&mut f)?)),
            "published" if absent => Outcome::Published(None),
            "published" => Outcome::Published(Some(self.part_row(&mut f)?)),
            "lease" if absent => Outcome::Lease(None),
            "lease" => Outcome::Lease(Some(LeaseRow {
                holder: Holder::new(self.take(&mut f, "holder")?),
                token: Token(self.take_num(&mut f, "token")?),
                expires_at: self.take_expiry(&mut f, "expires")?,
            })),
            "count" => Outcome::Count(self.take_num(&mut f, "n")?),
            "valid" => Outcome::Valid,
            "expired" => Outcome::Expired,
            "unavailable" => Outcome::Unavailable,
            "error" => Outcome::Error(Reason::other(self.take(&mut f, "reason")?)),
            "indeterminate" => Outcome::Indeterminate(self.take(&mut f, "reason")?),
            other => return Err(self.err(n, "outcome", format!("unknown outcome `{other}`"))),
        };
        self.done(f, word)?;
        Ok(o)
    }
}

/// One operation in event-line syntax (`acquire lease=… holder=… ttl_ms=…`), as the
/// simulation's wire protocol carries it.
impl std::str::FromStr for Op {
    type Err = TextError;

    fn from_str(text: &str) -> Result<Op, TextError> {
        let r = LineReader { file: "<wire>" };
        let words: Vec<&str> = text.split(' ').collect();
        let (word, args) = words
            .split_first()
            .ok_or_else(|| r.err(1, "op", "missing operation"))?;
        r.op(1, word, args)
    }
}

/// One outcome in event-line syntax (`granted token=… expires=…`).
impl std::str::FromStr for Outcome {
    type Err = TextError;

    fn from_str(text: &str) -> Result<Outcome, TextError> {
        let r = LineReader { file: "<wire>" };
        let words: Vec<&str> = text.split(' ').collect();
        let (word, args) = words
            .split_first()
            .ok_or_else(|| r.err(1, "outcome", "missing outcome"))?;
        r.outcome(1, word, args)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_round_trip() {
        let op = Op::Write {
            scope: Scope::new("s"),
            part: Part::new("p q"),
            content: "a=b".into(),
            token: Token(3),
        };
        assert_eq!(op.to_string().parse::<Op>(), Ok(op));
        let o = Outcome::Granted {
            token: Token(2),
            expires: Expiry::NegInfinity,
        };
        assert_eq!(o.to_string().parse::<Outcome>(), Ok(o));
    }
}
