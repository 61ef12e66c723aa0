//! Reading: a trace's text back into a [`Trace`], and one operation or outcome in event-line
//! syntax (the simulation's wire protocol). Malformed input is an error naming the file, the
//! line and the field — never a panic.

use crate::format::{Trace, TraceError, MAGIC};
use leaselab_checkers::Check;
use leaselab_model::text::unescape;
use leaselab_model::{
    AttemptOutcome, ClientExpiry, Config, ConnId, DbName, Event, Expiry, FenceMode, History,
    Holder, LeaseDurability, LeaseName, LeaseRow, Millis, Op, Outcome, Part, PartRow, PublishMode,
    Scope, Token,
};

impl Trace {
    /// Parses a trace; `file` is only used in error messages.
    pub fn parse(text: &str, file: &str) -> Result<Trace, TraceError> {
        Parser { file }.trace(text)
    }
}

/// Parses one operation in event-line syntax (`acquire lease=… holder=… ttl_ms=…`), as the
/// simulation's wire protocol carries it.
pub fn parse_op(text: &str) -> Result<Op, TraceError> {
    let p = Parser { file: "<wire>" };
    let words: Vec<&str> = text.split(' ').collect();
    let (word, args) = words
        .split_first()
        .ok_or_else(|| p.err(1, "op", "missing operation"))?;
    p.op(1, word, args)
}

/// Parses one outcome in event-line syntax (`granted token=… expires=…`).
pub fn parse_outcome(text: &str) -> Result<Outcome, TraceError> {
    let p = Parser { file: "<wire>" };
    let words: Vec<&str> = text.split(' ').collect();
    let (word, args) = words
        .split_first()
        .ok_or_else(|| p.err(1, "outcome", "missing outcome"))?;
    p.outcome(1, word, args)
}

/// Puts check names into canonical order ([`Check::ALL`]) and rejects unknown ones.
pub fn canonical_checks<'a>(
    names: impl IntoIterator<Item = &'a str>,
) -> Result<Vec<Check>, String> {
    let mut v: Vec<Check> = Vec::new();
    for n in names {
        let c = Check::ALL
            .into_iter()
            .find(|c| c.as_str() == n)
            .ok_or_else(|| {
                let all: Vec<&str> = Check::ALL.iter().map(|c| c.as_str()).collect();
                format!(
                    "unknown check `{n}`; expected `ok` or a comma list of {}",
                    all.join(", ")
                )
            })?;
        if !v.contains(&c) {
            v.push(c);
        }
    }
    Ok(Check::ALL.into_iter().filter(|c| v.contains(c)).collect())
}

struct Parser<'f> {
    file: &'f str,
}

/// `key=value` words of one line, consumed field by field so leftovers can be reported.
struct Fields<'a> {
    line: usize,
    items: Vec<(&'a str, &'a str)>,
}

impl<'f> Parser<'f> {
    fn err(&self, line: usize, field: &str, message: impl Into<String>) -> TraceError {
        TraceError {
            file: self.file.to_string(),
            line,
            field: field.to_string(),
            message: message.into(),
        }
    }

    fn trace(&self, text: &str) -> Result<Trace, TraceError> {
        let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l));
        let (n, first) = lines
            .next()
            .ok_or_else(|| self.err(1, "header", "empty file"))?;
        if first.trim_end() != MAGIC {
            return Err(self.err(n, "header", format!("expected `{MAGIC}`, found `{first}`")));
        }
        let mut name = None;
        let mut title = String::new();
        let mut seed = None;
        let mut config = None;
        let mut setup = Vec::new();
        let mut faults = Vec::new();
        let mut expect = None;
        let mut in_events = false;
        let mut ended = false;
        let mut history = History::default();
        let mut last_line = n;
        for (n, raw) in lines {
            last_line = n;
            let line = raw.trim_end_matches('\r');
            if ended {
                if line.trim().is_empty() {
                    continue;
                }
                return Err(self.err(n, "end", "text after `end`"));
            }
            if in_events {
                if line == "end" {
                    ended = true;
                    continue;
                }
                let e = self.event(n, line)?;
                if e.seq != history.events.len() as u64 + 1 {
                    return Err(self.err(
                        n,
                        "seq",
                        format!("expected {}, found {}", history.events.len() + 1, e.seq),
                    ));
                }
                if let Some(prev) = history.events.last() {
                    if e.at < prev.at {
                        return Err(self.err(
                            n,
                            "t",
                            format!("time goes backwards ({} after {})", e.at, prev.at),
                        ));
                    }
                }
                history.events.push(e);
                continue;
            }
            let (kind, rest) = line.split_once(' ').unwrap_or((line, ""));
            match kind {
                "name" => name = Some(self.unesc(n, "name", rest)?),
                "title" => title = rest.to_string(),
                "seed" => seed = Some(self.num(n, "seed", rest)?),
                "config" => config = Some(self.config(n, rest)?),
                "setup" => setup.push(rest.to_string()),
                "fault" => faults.push(rest.to_string()),
                "expect" => {
                    let v = if rest == "ok" {
                        Vec::new()
                    } else {
                        canonical_checks(rest.split(',')).map_err(|m| self.err(n, "expect", m))?
                    };
                    expect = Some(v);
                }
                "events" => in_events = true,
                "" => {}
                other => {
                    return Err(self.err(n, other, "unknown header line (expected name, title, seed, config, setup, fault, expect or events)"))
                }
            }
        }
        if !ended {
            return Err(self.err(last_line, "end", "missing `end` line (file truncated?)"));
        }
        Ok(Trace {
            name: name.ok_or_else(|| self.err(0, "name", "missing `name` line"))?,
            title,
            seed: seed.ok_or_else(|| self.err(0, "seed", "missing `seed` line"))?,
            config: config.ok_or_else(|| self.err(0, "config", "missing `config` line"))?,
            setup,
            faults,
            expect: expect.ok_or_else(|| self.err(0, "expect", "missing `expect` line"))?,
            history,
        })
    }

    fn unesc(&self, line: usize, field: &str, v: &str) -> Result<String, TraceError> {
        unescape(v).ok_or_else(|| self.err(line, field, format!("bad %-escape in `{v}`")))
    }

    fn num(&self, line: usize, field: &str, v: &str) -> Result<u64, TraceError> {
        v.parse::<u64>().map_err(|_| {
            self.err(
                line,
                field,
                format!("expected a non-negative integer, found `{v}`"),
            )
        })
    }

    fn fields<'a>(&self, line: usize, words: &[&'a str]) -> Result<Fields<'a>, TraceError> {
        let mut items = Vec::new();
        for w in words {
            let (k, v) = w
                .split_once('=')
                .ok_or_else(|| self.err(line, w, "expected `key=value`"))?;
            items.push((k, v));
        }
        Ok(Fields { line, items })
    }

    fn take<'a>(&self, f: &mut Fields<'a>, key: &str) -> Result<String, TraceError> {
        let pos = f
            .items
            .iter()
            .position(|(k, _)| *k == key)
            .ok_or_else(|| self.err(f.line, key, "missing"))?;
        let (_, v) = f.items.remove(pos);
        self.unesc(f.line, key, v)
    }

    fn take_num(&self, f: &mut Fields<'_>, key: &str) -> Result<u64, TraceError> {
        let v = self.take(f, key)?;
        self.num(f.line, key, &v)
    }

    fn take_parsed<T: std::str::FromStr>(
        &self,
        f: &mut Fields<'_>,
        key: &str,
    ) -> Result<T, TraceError>
    where
        T::Err: std::fmt::Display,
    {
        let v = self.take(f, key)?;
        v.parse::<T>()
            .map_err(|e| self.err(f.line, key, e.to_string()))
    }

    fn take_db(&self, f: &mut Fields<'_>) -> Result<DbName, TraceError> {
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

    fn take_expiry(&self, f: &mut Fields<'_>, key: &str) -> Result<Expiry, TraceError> {
        let v = self.take(f, key)?;
        if v == "-infinity" {
            return Ok(Expiry::NegInfinity);
        }
        Ok(Expiry::At(Millis(self.num(f.line, key, &v)?)))
    }

    fn done(&self, f: Fields<'_>, what: &str) -> Result<(), TraceError> {
        match f.items.first() {
            None => Ok(()),
            Some((k, _)) => Err(self.err(f.line, k, format!("unexpected field for `{what}`"))),
        }
    }

    fn config(&self, line: usize, rest: &str) -> Result<Config, TraceError> {
        let words: Vec<&str> = rest.split_whitespace().collect();
        let mut f = self.fields(line, &words)?;
        let fence: FenceMode = self.take_parsed(&mut f, "fence")?;
        let lease_table: LeaseDurability = self.take_parsed(&mut f, "lease_table")?;
        let renew_after_expiry: bool = self.take_parsed(&mut f, "renew_after_expiry")?;
        let publish: PublishMode = self.take_parsed(&mut f, "publish")?;
        let client_expiry: ClientExpiry = self.take_parsed(&mut f, "client_expiry")?;
        let pos = f
            .items
            .iter()
            .position(|(k, _)| *k == "scopes")
            .ok_or_else(|| self.err(line, "scopes", "missing"))?;
        let (_, raw) = f.items.remove(pos);
        let mut scopes = Vec::new();
        for s in raw.split(',').filter(|s| !s.is_empty()) {
            scopes.push(Scope::new(self.unesc(line, "scopes", s)?));
        }
        self.done(f, "config")?;
        Ok(Config {
            fence,
            renew_after_expiry,
            lease_table,
            publish,
            client_expiry,
            scopes,
        })
    }

    fn event(&self, n: usize, line: &str) -> Result<Event, TraceError> {
        let (lhs, rhs) = line.split_once(" => ").ok_or_else(|| {
            self.err(n, "outcome", "missing ` => ` between operation and outcome")
        })?;
        let words: Vec<&str> = lhs.split(' ').collect();
        if words.len() < 5 {
            return Err(self.err(
                n,
                "event",
                "expected `<seq> t=<ms> local=<ms> <actor> <op> …`",
            ));
        }
        let seq = self.num(n, "seq", words[0])?;
        let at = Millis(self.prefixed(n, "t", words[1])?);
        let local = Millis(self.prefixed(n, "local", words[2])?);
        let actor = Holder::new(self.unesc(n, "actor", words[3])?);
        let mut rest = &words[4..];
        let mut conn = None;
        if let Some(c) = rest.first().and_then(|w| w.strip_prefix("conn=")) {
            conn = Some(ConnId::new(self.unesc(n, "conn", c)?));
            rest = &rest[1..];
        }
        let (word, args) = rest
            .split_first()
            .ok_or_else(|| self.err(n, "op", "missing operation"))?;
        let op = self.op(n, word, args)?;
        let owords: Vec<&str> = rhs.split(' ').collect();
        let (oword, oargs) = owords
            .split_first()
            .ok_or_else(|| self.err(n, "outcome", "missing outcome"))?;
        let outcome = self.outcome(n, oword, oargs)?;
        Ok(Event {
            seq,
            at,
            local,
            actor,
            conn,
            op,
            outcome,
        })
    }

    fn prefixed(&self, n: usize, key: &str, word: &str) -> Result<u64, TraceError> {
        let v = word
            .strip_prefix(key)
            .and_then(|w| w.strip_prefix('='))
            .ok_or_else(|| self.err(n, key, format!("expected `{key}=<ms>`, found `{word}`")))?;
        self.num(n, key, v)
    }

    fn op(&self, n: usize, word: &str, args: &[&str]) -> Result<Op, TraceError> {
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
                if f.items.iter().any(|(k, _)| *k == "isolation") {
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
            other => return Err(self.err(n, "op", format!("unknown operation `{other}`"))),
        };
        self.done(f, word)?;
        Ok(op)
    }

    fn part_row(&self, f: &mut Fields<'_>) -> Result<PartRow, TraceError> {
        Ok(PartRow {
            content: self.take(f, "content")?,
            writer: Holder::new(self.take(f, "writer")?),
            token: Token(self.take_num(f, "token")?),
        })
    }

    fn outcome(&self, n: usize, word: &str, args: &[&str]) -> Result<Outcome, TraceError> {
        let absent = args == ["absent"];
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
            "error" => Outcome::Error(self.take(&mut f, "reason")?),
            "indeterminate" => Outcome::Indeterminate(self.take(&mut f, "reason")?),
            other => return Err(self.err(n, "outcome", format!("unknown outcome `{other}`"))),
        };
        self.done(f, word)?;
        Ok(o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use leaselab_model::text::{op_text, outcome_text};

    #[test]
    fn wire_round_trip() {
        let op = Op::Write {
            scope: Scope::new("s"),
            part: Part::new("p q"),
            content: "a=b".into(),
            token: Token(3),
        };
        assert_eq!(parse_op(&op_text(&op)), Ok(op));
        let o = Outcome::Granted {
            token: Token(2),
            expires: Expiry::NegInfinity,
        };
        assert_eq!(parse_outcome(&outcome_text(&o)), Ok(o));
    }
}
