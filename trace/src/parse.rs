//! Reading: a trace's text back into a [`Trace`], and one operation or outcome in event-line
//! syntax (the simulation's wire protocol). Malformed input is an error naming the file, the
//! line and the field — never a panic.

use crate::fields::Fields;
use crate::format::{Trace, TraceError, MAGIC};
use leaselab_checkers::Check;
use leaselab_model::text::{escape, unescape};
use leaselab_model::Reason;
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

/// Header lines in the only order a trace has them.
const HEADERS: [&str; 9] = [
    "name", "title", "seed", "config", "spec", "setup", "fault", "expect", "events",
];

/// The header lines a trace cannot leave out.
const REQUIRED: [&str; 5] = ["name", "seed", "config", "expect", "events"];

struct Parser<'f> {
    file: &'f str,
}

impl<'f> Parser<'f> {
    /// An error always names a field (a part of the line when no field can be named), so a
    /// person knows where to look.
    fn err(&self, line: usize, field: &str, message: impl Into<String>) -> TraceError {
        TraceError::at(self.file, line, field, message)
    }

    fn trace(&self, text: &str) -> Result<Trace, TraceError> {
        if text.is_empty() {
            return Err(self.err(1, "header", "empty file"));
        }
        let mut name = None;
        let mut title = String::new();
        let mut seed = None;
        let mut config = None;
        let mut spec = None;
        let mut setup = Vec::new();
        let mut faults = Vec::new();
        let mut expect = None;
        let mut history = History::default();
        // How far through HEADERS the lines read so far have come (1 = `name` read).
        let mut rank = 0;
        let mut ended = false;
        let mut last = 1;
        for (i, raw) in text.split_inclusive('\n').enumerate() {
            let n = i + 1;
            last = n;
            let line = raw.strip_suffix('\n').unwrap_or(raw);
            if line.ends_with('\r') {
                return Err(self.err(
                    n,
                    "line",
                    "the line ends with CR (a trace's lines end with `\\n` alone)",
                ));
            }
            if n == 1 && line != MAGIC {
                let found = line.escape_debug();
                return Err(self.err(n, "header", format!("expected `{MAGIC}`, found `{found}`")));
            }
            if line.len() == raw.len() {
                return Err(self.err(
                    n,
                    "newline",
                    "the last line has no newline (every line ends with `\\n`)",
                ));
            }
            if n == 1 {
                continue;
            }
            self.spacing(n, line)?;
            if ended {
                return Err(self.err(n, "end", "text after `end`"));
            }
            if rank == HEADERS.len() {
                if line == "end" {
                    ended = true;
                } else {
                    self.push_event(n, line, &mut history)?;
                }
                continue;
            }
            let (kind, rest) = line.split_once(' ').unwrap_or((line, ""));
            let Some(r) = HEADERS.iter().position(|h| *h == kind).map(|r| r + 1) else {
                if !kind.is_empty() && kind.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(self.err(n, "events", "an event line before the `events` line"));
                }
                return Err(self.err(
                    n,
                    kind,
                    format!(
                        "unknown header line (expected one of {})",
                        HEADERS.join(", ")
                    ),
                ));
            };
            self.header_order(n, kind, r, rank)?;
            rank = r;
            if rest.is_empty() && kind != "events" {
                return Err(self.err(n, kind, format!("empty `{kind}` line")));
            }
            match kind {
                "name" => name = Some(self.unesc(n, "name", rest)?),
                "title" => title = rest.to_string(),
                "seed" => seed = Some(self.num(n, "seed", rest)?),
                "config" => config = Some(self.config(n, rest)?),
                "spec" => spec = Some(self.unesc(n, "spec", rest)?),
                "setup" => setup.push(rest.to_string()),
                "fault" => faults.push(rest.to_string()),
                "expect" => expect = Some(self.expect(n, rest)?),
                _ if !rest.is_empty() => {
                    return Err(self.err(n, "events", "the `events` line has nothing after it"))
                }
                _ => {}
            }
        }
        if !ended {
            let what = if rank == HEADERS.len() {
                "end"
            } else {
                HEADERS[rank..]
                    .iter()
                    .find(|h| REQUIRED.contains(h))
                    .unwrap_or(&"events")
            };
            return Err(self.err(
                last,
                what,
                format!("missing `{what}` line (file truncated?)"),
            ));
        }
        let t = Trace {
            // `header_order` saw every required line, so these are all set.
            name: name.unwrap_or_default(),
            title,
            seed: seed.unwrap_or_default(),
            config: config.unwrap_or_default(),
            spec,
            setup,
            faults,
            expect: expect.unwrap_or_default(),
            history,
        };
        self.canonical(text, &t)?;
        Ok(t)
    }

    fn push_event(&self, n: usize, line: &str, history: &mut History) -> Result<(), TraceError> {
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
        Ok(())
    }

    /// Header lines come in [`HEADERS`] order, each once (`setup` and `fault` may repeat), and
    /// only `title`, `setup` and `fault` may be left out: any other text would not write back
    /// to the same bytes.
    fn header_order(&self, n: usize, kind: &str, r: usize, rank: usize) -> Result<(), TraceError> {
        let order = HEADERS.join(", ");
        if r < rank || (r == rank && !matches!(kind, "setup" | "fault")) {
            let why = if r == rank {
                format!("a second `{kind}` line")
            } else {
                format!("`{kind}` after `{}`", HEADERS[rank - 1])
            };
            return Err(self.err(
                n,
                kind,
                format!("{why}: header lines come once each, in the order {order}"),
            ));
        }
        // The lines between the last one read and this one (none when a `setup` repeats).
        let skipped = HEADERS.get(rank..r - 1).unwrap_or_default();
        match skipped.iter().find(|h| REQUIRED.contains(h)) {
            Some(missing) => Err(self.err(
                n,
                missing,
                format!("missing `{missing}` line (it comes before `{kind}`)"),
            )),
            None => Ok(()),
        }
    }

    /// Words are separated by exactly one space and a line neither starts nor ends with one;
    /// a title is free text.
    fn spacing(&self, n: usize, line: &str) -> Result<(), TraceError> {
        if line.is_empty() {
            return Err(self.err(n, "line", "blank line (a trace has none)"));
        }
        if line.starts_with("title ") {
            return Ok(());
        }
        // The field a column belongs to: the key of the last word that starts before it.
        let field = |col: usize| {
            line[..col]
                .split(' ')
                .rfind(|w| !w.is_empty())
                .map(|w| w.split('=').next().unwrap_or(w).to_string())
                .unwrap_or_else(|| "line".to_string())
        };
        let (col, what) = if line.starts_with(' ') {
            (0, "a leading space")
        } else if line.ends_with(' ') {
            (line.trim_end_matches(' ').len(), "a trailing space")
        } else if let Some(col) = line.find("  ") {
            (col, "two spaces")
        } else if let Some(col) = line.find('\t') {
            (col, "a tab (a value writes it %09)")
        } else {
            return Ok(());
        };
        Err(self.err(n, &field(col), format!("{what} at column {}", col + 1)))
    }

    /// `ok`, or the violated checks in [`Check::ALL`] order, each once.
    fn expect(&self, n: usize, rest: &str) -> Result<Vec<Check>, TraceError> {
        if rest == "ok" {
            return Ok(Vec::new());
        }
        let all: Vec<&str> = Check::ALL.iter().map(|c| c.as_str()).collect();
        let mut v: Vec<Check> = Vec::new();
        for word in rest.split(',') {
            let c = Check::ALL
                .into_iter()
                .find(|c| c.as_str() == word)
                .ok_or_else(|| {
                    self.err(
                        n,
                        "expect",
                        format!(
                            "unknown check `{word}`; expected `ok` or a comma list of {}",
                            all.join(",")
                        ),
                    )
                })?;
            if let Some(prev) = v.last() {
                if v.contains(&c) {
                    return Err(self.err(n, "expect", format!("`{c}` is listed twice")));
                }
                if Check::ALL.iter().position(|x| x == prev)
                    > Check::ALL.iter().position(|x| *x == c)
                {
                    return Err(self.err(
                        n,
                        "expect",
                        format!(
                            "`{c}` after `{prev}`: checks are listed in the order {}",
                            all.join(",")
                        ),
                    ));
                }
            }
            v.push(c);
        }
        Ok(v)
    }

    /// The last word: every value was read back as what it means, so the only text left that
    /// would not write back the same is a line whose fields are in another order (or that
    /// spells out a default the writer leaves out). Names the line, the field and the form.
    fn canonical(&self, text: &str, t: &Trace) -> Result<(), TraceError> {
        fn key<'a>(w: &&'a str) -> Option<&'a str> {
            w.split_once('=').map(|(k, _)| k).filter(|k| !k.is_empty())
        }
        let canon = t.to_text();
        if canon == text {
            return Ok(());
        }
        for (i, (found, want)) in text.split('\n').zip(canon.split('\n')).enumerate() {
            if found == want {
                continue;
            }
            // An event line is two parts, the operation and the outcome: compare the one that
            // differs, so the message lists that part's fields.
            let (found, want) = match (found.split_once(" => "), want.split_once(" => ")) {
                (Some((fl, fr)), Some((wl, wr))) if fl == wl => (fr, wr),
                (Some((fl, _)), Some((wl, _))) => (fl, wl),
                _ => (found, want),
            };
            let fw: Vec<&str> = found.split(' ').collect();
            let ww: Vec<&str> = want.split(' ').collect();
            let at = fw.iter().zip(&ww).position(|(a, b)| a != b).unwrap_or(0);
            let field = fw
                .get(at)
                .and_then(key)
                .or_else(|| ww.get(at).and_then(key));
            let own = |k: &&str| !matches!(*k, "t" | "local" | "conn");
            let mut fk: Vec<&str> = fw.iter().filter_map(key).filter(own).collect();
            let mut wk: Vec<&str> = ww.iter().filter_map(key).filter(own).collect();
            let order = wk.join(" ");
            fk.sort_unstable();
            wk.sort_unstable();
            let message = if fk == wk {
                format!("fields out of order: this line's fields go {order}")
            } else {
                format!("not the form a trace is written in; expected `{want}`")
            };
            return Err(self.err(i + 1, field.unwrap_or("line"), message));
        }
        Err(self.err(1, "line", "not the form a trace is written in"))
    }

    /// A value is percent-escaped one way only (what [`escape`] writes), so it reads back and
    /// writes again as the same bytes.
    fn unesc(&self, line: usize, field: &str, v: &str) -> Result<String, TraceError> {
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

    fn num(&self, line: usize, field: &str, v: &str) -> Result<u64, TraceError> {
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

    fn fields<'a>(&self, line: usize, words: &[&'a str]) -> Result<Fields<'a>, TraceError>
    where
        'f: 'a,
    {
        Fields::read(self.file, line, words)
    }

    fn take(&self, f: &mut Fields<'_>, key: &str) -> Result<String, TraceError> {
        let v = f.take(key)?;
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
        match f.leftover() {
            None => Ok(()),
            Some(k) => Err(self.err(f.line, k, format!("unexpected field for `{what}`"))),
        }
    }

    fn config(&self, line: usize, rest: &str) -> Result<Config, TraceError> {
        let words: Vec<&str> = rest.split(' ').collect();
        let mut f = self.fields(line, &words)?;
        let fence: FenceMode = self.take_parsed(&mut f, "fence")?;
        let lease_table: LeaseDurability = self.take_parsed(&mut f, "lease_table")?;
        let renew_after_expiry: bool = self.take_parsed(&mut f, "renew_after_expiry")?;
        let publish: PublishMode = self.take_parsed(&mut f, "publish")?;
        let client_expiry: ClientExpiry = self.take_parsed(&mut f, "client_expiry")?;
        let lock_delay_ms = if f.has("lock_delay_ms") {
            let d = self.take_num(&mut f, "lock_delay_ms")?;
            if d == 0 {
                return Err(self.err(
                    line,
                    "lock_delay_ms",
                    "0 is the default: leave the field out",
                ));
            }
            d
        } else {
            0
        };
        let raw = f.take("scopes")?;
        let mut scopes = Vec::new();
        for s in raw.split(',').filter(|_| !raw.is_empty()) {
            if s.is_empty() {
                return Err(self.err(line, "scopes", "an empty scope name in the list"));
            }
            scopes.push(Scope::new(self.unesc(line, "scopes", s)?));
        }
        self.done(f, "config")?;
        Ok(Config {
            fence,
            renew_after_expiry,
            lease_table,
            publish,
            client_expiry,
            lock_delay_ms,
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
        if words[3].starts_with("conn=") {
            return Err(self.conn_misplaced(n));
        }
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

    fn conn_misplaced(&self, n: usize) -> TraceError {
        self.err(
            n,
            "conn",
            "`conn=` belongs right after the actor, before the operation",
        )
    }

    fn op(&self, n: usize, word: &str, args: &[&str]) -> Result<Op, TraceError> {
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
