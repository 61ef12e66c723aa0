//! Reading: a trace's text back into a [`Trace`]. Its header lines and the shape of an event
//! line are read here; operations and outcomes are read by the model's text reader
//! (`leaselab_model::text::read`), next to the code that writes them. Malformed input is an
//! error naming the file, the line and the field — never a panic.

use crate::format::{Trace, MAGIC};
use leaselab_checkers::Check;
use leaselab_model::text::{LineReader, TextError};
use leaselab_model::{
    ClientExpiry, Config, ConnId, Event, FenceMode, History, Holder, LeaseDurability, Millis,
    PublishMode, Scope,
};

impl Trace {
    /// Parses a trace; `file` is only used in error messages.
    pub fn parse(text: &str, file: &str) -> Result<Trace, TextError> {
        Parser {
            r: LineReader { file },
        }
        .trace(text)
    }
}

/// Header lines in the only order a trace has them.
const HEADERS: [&str; 9] = [
    "name", "title", "seed", "config", "spec", "setup", "fault", "expect", "events",
];

/// The header lines a trace cannot leave out.
const REQUIRED: [&str; 5] = ["name", "seed", "config", "expect", "events"];

struct Parser<'f> {
    r: LineReader<'f>,
}

impl<'f> Parser<'f> {
    fn trace(&self, text: &str) -> Result<Trace, TextError> {
        if text.is_empty() {
            return Err(self.r.err(1, "header", "empty file"));
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
                return Err(self.r.err(
                    n,
                    "line",
                    "the line ends with CR (a trace's lines end with `\\n` alone)",
                ));
            }
            if n == 1 && line != MAGIC {
                let found = line.escape_debug();
                return Err(self.r.err(
                    n,
                    "header",
                    format!("expected `{MAGIC}`, found `{found}`"),
                ));
            }
            if line.len() == raw.len() {
                return Err(self.r.err(
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
                return Err(self.r.err(n, "end", "text after `end`"));
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
                    return Err(self
                        .r
                        .err(n, "events", "an event line before the `events` line"));
                }
                return Err(self.r.err(
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
                return Err(self.r.err(n, kind, format!("empty `{kind}` line")));
            }
            match kind {
                "name" => name = Some(self.r.unesc(n, "name", rest)?),
                "title" => title = rest.to_string(),
                "seed" => seed = Some(self.r.num(n, "seed", rest)?),
                "config" => config = Some(self.config(n, rest)?),
                "spec" => spec = Some(self.r.unesc(n, "spec", rest)?),
                "setup" => setup.push(rest.to_string()),
                "fault" => faults.push(rest.to_string()),
                "expect" => expect = Some(self.expect(n, rest)?),
                _ if !rest.is_empty() => {
                    return Err(self
                        .r
                        .err(n, "events", "the `events` line has nothing after it"))
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
            return Err(self.r.err(
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

    fn push_event(&self, n: usize, line: &str, history: &mut History) -> Result<(), TextError> {
        let e = self.event(n, line)?;
        if e.seq != history.events.len() as u64 + 1 {
            return Err(self.r.err(
                n,
                "seq",
                format!("expected {}, found {}", history.events.len() + 1, e.seq),
            ));
        }
        if let Some(prev) = history.events.last() {
            if e.at < prev.at {
                return Err(self.r.err(
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
    fn header_order(&self, n: usize, kind: &str, r: usize, rank: usize) -> Result<(), TextError> {
        let order = HEADERS.join(", ");
        if r < rank || (r == rank && !matches!(kind, "setup" | "fault")) {
            let why = if r == rank {
                format!("a second `{kind}` line")
            } else {
                format!("`{kind}` after `{}`", HEADERS[rank - 1])
            };
            return Err(self.r.err(
                n,
                kind,
                format!("{why}: header lines come once each, in the order {order}"),
            ));
        }
        // The lines between the last one read and this one (none when a `setup` repeats).
        let skipped = HEADERS.get(rank..r - 1).unwrap_or_default();
        match skipped.iter().find(|h| REQUIRED.contains(h)) {
            Some(missing) => Err(self.r.err(
                n,
                missing,
                format!("missing `{missing}` line (it comes before `{kind}`)"),
            )),
            None => Ok(()),
        }
    }

    /// Words are separated by exactly one space and a line neither starts nor ends with one;
    /// a title is free text.
    fn spacing(&self, n: usize, line: &str) -> Result<(), TextError> {
        if line.is_empty() {
            return Err(self.r.err(n, "line", "blank line (a trace has none)"));
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
        Err(self
            .r
            .err(n, &field(col), format!("{what} at column {}", col + 1)))
    }

    /// `ok`, or the violated checks in [`Check::ALL`] order, each once.
    fn expect(&self, n: usize, rest: &str) -> Result<Vec<Check>, TextError> {
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
                    self.r.err(
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
                    return Err(self.r.err(n, "expect", format!("`{c}` is listed twice")));
                }
                if Check::ALL.iter().position(|x| x == prev)
                    > Check::ALL.iter().position(|x| *x == c)
                {
                    return Err(self.r.err(
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
    fn canonical(&self, text: &str, t: &Trace) -> Result<(), TextError> {
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
            return Err(self.r.err(i + 1, field.unwrap_or("line"), message));
        }
        Err(self.r.err(1, "line", "not the form a trace is written in"))
    }

    fn config(&self, line: usize, rest: &str) -> Result<Config, TextError> {
        let words: Vec<&str> = rest.split(' ').collect();
        let mut f = self.r.fields(line, &words)?;
        let fence: FenceMode = self.r.take_parsed(&mut f, "fence")?;
        let lease_table: LeaseDurability = self.r.take_parsed(&mut f, "lease_table")?;
        let renew_after_expiry: bool = self.r.take_parsed(&mut f, "renew_after_expiry")?;
        let publish: PublishMode = self.r.take_parsed(&mut f, "publish")?;
        let client_expiry: ClientExpiry = self.r.take_parsed(&mut f, "client_expiry")?;
        let lock_delay_ms = if f.has("lock_delay_ms") {
            let d = self.r.take_num(&mut f, "lock_delay_ms")?;
            if d == 0 {
                return Err(self.r.err(
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
                return Err(self
                    .r
                    .err(line, "scopes", "an empty scope name in the list"));
            }
            scopes.push(Scope::new(self.r.unesc(line, "scopes", s)?));
        }
        self.r.done(f, "config")?;
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

    fn event(&self, n: usize, line: &str) -> Result<Event, TextError> {
        let (lhs, rhs) = line.split_once(" => ").ok_or_else(|| {
            self.r
                .err(n, "outcome", "missing ` => ` between operation and outcome")
        })?;
        let words: Vec<&str> = lhs.split(' ').collect();
        if words.len() < 5 {
            return Err(self.r.err(
                n,
                "event",
                "expected `<seq> t=<ms> local=<ms> <actor> <op> …`",
            ));
        }
        let seq = self.r.num(n, "seq", words[0])?;
        let at = Millis(self.prefixed(n, "t", words[1])?);
        let local = Millis(self.prefixed(n, "local", words[2])?);
        if words[3].starts_with("conn=") {
            return Err(self.r.conn_misplaced(n));
        }
        let actor = Holder::new(self.r.unesc(n, "actor", words[3])?);
        let mut rest = &words[4..];
        let mut conn = None;
        if let Some(c) = rest.first().and_then(|w| w.strip_prefix("conn=")) {
            conn = Some(ConnId::new(self.r.unesc(n, "conn", c)?));
            rest = &rest[1..];
        }
        let (word, args) = rest
            .split_first()
            .ok_or_else(|| self.r.err(n, "op", "missing operation"))?;
        let op = self.r.op(n, word, args)?;
        let owords: Vec<&str> = rhs.split(' ').collect();
        let (oword, oargs) = owords
            .split_first()
            .ok_or_else(|| self.r.err(n, "outcome", "missing outcome"))?;
        let outcome = self.r.outcome(n, oword, oargs)?;
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

    fn prefixed(&self, n: usize, key: &str, word: &str) -> Result<u64, TextError> {
        let v = word
            .strip_prefix(key)
            .and_then(|w| w.strip_prefix('='))
            .ok_or_else(|| {
                self.r
                    .err(n, key, format!("expected `{key}=<ms>`, found `{word}`"))
            })?;
        self.r.num(n, key, v)
    }
}
