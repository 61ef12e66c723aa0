//! Trace format v1: a history plus what is needed to reproduce and judge it.
//!
//! Line-oriented text, one event a line, stable under re-serialisation (writing, reading and
//! writing again gives the same bytes), documented in `traces/README.md`:
//!
//! ```text
//! leaselab-trace v1
//! name F4
//! title main experiment
//! seed 0
//! config fence=scope lease_table=logged renew_after_expiry=false publish=business-key client_expiry=monotonic scopes=daily-report
//! expect ok
//! events
//! 1 t=0 local=0 holder-a acquire lease=report-job holder=holder-a ttl_ms=1500 => granted token=1 expires=1500
//! end
//! ```
//!
//! Values are percent-escaped so they never contain a space, `=` or `%`. Malformed input is an
//! error naming the file, the line and the field — never a panic.

use crate::config::{ClientExpiry, Config, FenceMode, LeaseDurability, PublishMode};
use crate::history::{DbName, Event, History, Op, Outcome};
use crate::names::{ConnId, Holder, LeaseName, Part, Scope, Token};
use crate::rows::{AttemptOutcome, LeaseRow, PartRow};
use crate::time::{Expiry, Millis};
use std::fmt::Write as _;

/// The first line of every v1 trace.
pub const MAGIC: &str = "leaselab-trace v1";

/// Names of the checks a verdict can list, in canonical order.
pub const CHECK_NAMES: [&str; 5] = ["I1", "I2", "I3", "acceptance", "final"];

/// A parsed trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    /// Short name (the lab case id, or `sim-<seed>`).
    pub name: String,
    /// One human line.
    pub title: String,
    /// The seed that produced it (0 for staged cases).
    pub seed: u64,
    /// Database configuration.
    pub config: Config,
    /// Setup lines (settings a simulation run was made from), kept verbatim (`key=value`
    /// words); the simulation defines and parses them (`leaselab sim --from-trace`).
    pub setup: Vec<String>,
    /// Fault plan lines, kept verbatim (`key=value` words); the simulation defines them.
    pub faults: Vec<String>,
    /// The checks this history is expected to violate, in canonical order; empty means all hold.
    pub expect: Vec<String>,
    /// The recorded history.
    pub history: History,
}

/// A malformed trace: where and what.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: field `{field}`: {message}")]
pub struct TraceError {
    /// File name as given by the caller.
    pub file: String,
    /// 1-based line number (0 if the file ended too early).
    pub line: usize,
    /// The field (or line kind) at fault.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

// ---------------------------------------------------------------- escaping

fn escape(s: &str) -> String {
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

fn unescape(s: &str) -> Option<String> {
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

// ---------------------------------------------------------------- writing

fn expiry_str(e: Expiry) -> String {
    e.to_string()
}

fn kv(out: &mut String, k: &str, v: impl std::fmt::Display) {
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

/// The canonical line of one event.
pub fn event_line(e: &Event) -> String {
    let mut s = format!(
        "{} t={} local={} {}",
        e.seq,
        e.at,
        e.local,
        escape(e.actor.as_str())
    );
    if let Some(c) = &e.conn {
        kv(&mut s, "conn", c);
    }
    let _ = write!(s, " {} => {}", op_text(&e.op), outcome_text(&e.outcome));
    s
}

/// The `config` line's fields.
pub fn config_text(c: &Config) -> String {
    let scopes: Vec<&str> = c.scopes.iter().map(|s| s.as_str()).collect();
    let mut s = String::new();
    kv(&mut s, "fence", c.fence);
    kv(&mut s, "lease_table", c.lease_table);
    kv(&mut s, "renew_after_expiry", c.renew_after_expiry);
    kv(&mut s, "publish", c.publish);
    kv(&mut s, "client_expiry", c.client_expiry);
    let _ = write!(
        s,
        " scopes={}",
        scopes
            .iter()
            .map(|x| escape(x))
            .collect::<Vec<_>>()
            .join(",")
    );
    s.trim_start().to_string()
}

impl Trace {
    /// A trace of `history` with an empty title, seed 0 and no faults.
    pub fn new(name: &str, config: Config, history: History) -> Self {
        Trace {
            name: name.to_string(),
            title: String::new(),
            seed: 0,
            config,
            setup: Vec::new(),
            faults: Vec::new(),
            expect: Vec::new(),
            history,
        }
    }

    /// The canonical text.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "{MAGIC}");
        let _ = writeln!(s, "name {}", escape(&self.name));
        if !self.title.is_empty() {
            let _ = writeln!(s, "title {}", self.title.replace('\n', " "));
        }
        let _ = writeln!(s, "seed {}", self.seed);
        let _ = writeln!(s, "config {}", config_text(&self.config));
        for l in &self.setup {
            let _ = writeln!(s, "setup {l}");
        }
        for f in &self.faults {
            let _ = writeln!(s, "fault {f}");
        }
        if self.expect.is_empty() {
            let _ = writeln!(s, "expect ok");
        } else {
            let _ = writeln!(s, "expect {}", self.expect.join(","));
        }
        let _ = writeln!(s, "events");
        for e in &self.history.events {
            let _ = writeln!(s, "{}", event_line(e));
        }
        let _ = writeln!(s, "end");
        s
    }

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

/// Puts check names into canonical order and rejects unknown ones.
pub fn canonical_checks<'a>(
    names: impl IntoIterator<Item = &'a str>,
) -> Result<Vec<String>, String> {
    let mut v: Vec<&str> = Vec::new();
    for n in names {
        if !CHECK_NAMES.contains(&n) {
            return Err(format!(
                "unknown check `{n}`; expected `ok` or a comma list of {}",
                CHECK_NAMES.join(", ")
            ));
        }
        if !v.contains(&n) {
            v.push(n);
        }
    }
    let mut out: Vec<String> = CHECK_NAMES
        .iter()
        .filter(|c| v.contains(c))
        .map(|c| c.to_string())
        .collect();
    out.dedup();
    Ok(out)
}

// ---------------------------------------------------------------- parsing

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

    #[test]
    fn escape_round_trip() {
        for s in ["plain", "with space", "a=b", "100%", "", "ünï"] {
            assert_eq!(unescape(&escape(s)).as_deref(), Some(s));
        }
    }
}
