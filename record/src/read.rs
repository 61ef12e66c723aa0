//! Reading: JSON lines into a [`History`], remembering the file line of every event. Bad
//! input is an error naming the file, the line and the field — never a panic, never a guess.
//!
//! How invokes and completions become events (the module doc of the crate says why):
//! - an invoke whose completion is the very next line is one event, at the completion's time
//!   (the latest the operation can have taken effect);
//! - otherwise the invoke is the operation `blocked` at its own line, and the completion is an
//!   `await` on the same connection carrying the outcome — the commit window in between;
//! - an invoke never completed stays `blocked`: what it did is unknown, as with a statement
//!   still waiting when a trace ends.

pub use crate::schema::MAX_NUMBER;
use crate::schema::{args_of, as_u64, words, Fields, Names, RESULT};
use crate::{FORMAT, VERSION};
use leaselab_model::{ConnId, Event, Expiry, History, Holder, Millis, Op, Outcome};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt;

/// A history read from a file, with where each event came from.
#[derive(Clone, Debug)]
pub struct Recorded {
    /// The events, in file order.
    pub history: History,
    /// For each event (index `seq - 1`), the file lines it was read from: its invoke and its
    /// completion (0 when it has none on another line). Two numbers, not a list: a recorded
    /// history can have millions of events.
    pub lines: Vec<[usize; 2]>,
    /// How far each listed process's clock may be from the server's, ms (the first line's
    /// `clock_bounds_ms`).
    pub clock_bounds: BTreeMap<String, u64>,
    /// The files read, as the user named them: one, unless several processes' records were
    /// merged into one history ([`crate::merge`]).
    pub files: Vec<String>,
    /// For each event, the index in `files` of the file it was read from.
    pub file_of: Vec<u32>,
    /// For each event, the microseconds within its millisecond, from its line's `time_us` (0
    /// without one): what orders two processes' events of one millisecond when their files are
    /// merged ([`crate::merge`]).
    pub micros: Vec<u16>,
    /// What the file says that is possible but doubtful (a `server_time` farther from the
    /// recorder's clock than its bound), one line each, naming file and line.
    pub warnings: Vec<String>,
}

impl Recorded {
    /// The file lines of event `seq`, for messages.
    pub fn lines_of(&self, seq: u64) -> &[usize] {
        usize::try_from(seq)
            .ok()
            .and_then(|s| s.checked_sub(1))
            .and_then(|i| self.lines.get(i))
            .map_or(&[], |l| if l[1] == 0 { &l[..1] } else { &l[..] })
    }

    /// Where event `seq` was read: `file:line` of its invoke and of its completion.
    pub fn places(&self, seq: u64) -> Vec<String> {
        let file = usize::try_from(seq)
            .ok()
            .and_then(|s| s.checked_sub(1))
            .and_then(|i| self.file_of.get(i))
            .and_then(|f| self.files.get(*f as usize))
            .map_or("?", String::as_str);
        self.lines_of(seq)
            .iter()
            .map(|l| format!("{file}:{l}"))
            .collect()
    }
}

/// Malformed input: where, which field, what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadError {
    /// The file as the user named it.
    pub file: String,
    /// 1-based line (0: the file as a whole could not be read).
    pub line: usize,
    /// The field (`line` when none can be named).
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ReadError {
    /// Line 0: the file itself could not be read (no line, no field to name).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            return write!(f, "{}: {}", self.file, self.message);
        }
        write!(
            f,
            "{}:{}: field `{}`: {}",
            self.file, self.line, self.field, self.message
        )
    }
}

impl std::error::Error for ReadError {}

/// Parses a whole text; `file` is used only in messages.
pub fn parse(text: &str, file: &str) -> Result<Recorded, ReadError> {
    parse_lines(text.lines().map(|l| Ok(l.to_string())), file)
}

fn open(
    path: &std::path::Path,
) -> Result<impl Iterator<Item = std::io::Result<String>>, ReadError> {
    use std::io::BufRead;
    let f = std::fs::File::open(path).map_err(|e| ReadError {
        file: path.display().to_string(),
        line: 0,
        field: String::new(),
        message: format!("cannot read: {e}"),
    })?;
    Ok(std::io::BufReader::new(f).lines())
}

/// Reads and parses a file line by line: the file is never held whole in memory.
pub fn read_file(path: &std::path::Path) -> Result<Recorded, ReadError> {
    parse_lines(open(path)?, &path.display().to_string())
}

/// [`read_file`] for a merge with other processes' files ([`crate::merge`]): every call that
/// changes the lease or the resource (acquire, renew, release, write, publish) keeps its
/// window — `blocked` at its invoke, then its answer — even when answered on the next line. Alone in its file, an operation answered on the next line can be taken
/// to act at its answer: nothing of its process happened in between. Beside other processes
/// it cannot: their calls answered at the same millisecond, or between its invoke and its
/// answer, may have reached the server before or after it.
pub fn read_file_for_merge(path: &std::path::Path) -> Result<Recorded, ReadError> {
    parse_with(open(path)?, &path.display().to_string(), true)
}

/// [`parse`] for a merge ([`read_file_for_merge`]).
pub fn parse_for_merge(text: &str, file: &str) -> Result<Recorded, ReadError> {
    parse_with(text.lines().map(|l| Ok(l.to_string())), file, true)
}

/// Parses lines as they come.
pub fn parse_lines(
    lines: impl Iterator<Item = std::io::Result<String>>,
    file: &str,
) -> Result<Recorded, ReadError> {
    parse_with(lines, file, false)
}

fn parse_with(
    lines: impl Iterator<Item = std::io::Result<String>>,
    file: &str,
    windows: bool,
) -> Result<Recorded, ReadError> {
    let mut history = History::default();
    let mut at = Vec::new();
    let mut micros = Vec::new();
    let meta = stream_with(lines, file, windows, &mut |e, l, us| {
        history.events.push(e);
        at.push(l);
        micros.push(us);
    })?;
    Ok(Recorded {
        history,
        file_of: vec![0; at.len()],
        micros,
        lines: at,
        clock_bounds: meta.clock_bounds,
        files: vec![file.to_string()],
        warnings: meta.warnings,
    })
}

/// What a streamed read tells besides its events.
#[derive(Clone, Debug, Default)]
pub struct Streamed {
    /// How far each listed process's clock may be from the server's, ms.
    pub clock_bounds: BTreeMap<String, u64>,
    /// What the file says that is possible but doubtful, one line each ([`Recorded::warnings`]).
    pub warnings: Vec<String>,
}

/// Reads a file line by line and hands each event to `sink` as soon as it is final, with its
/// file lines (invoke, completion; 0 when none): nothing is kept of an event once handed on,
/// so a history of any length is read in the memory of its open operations. The events, their
/// numbers and lines are exactly [`read_file`]'s.
pub fn stream_file(
    path: &std::path::Path,
    sink: &mut dyn FnMut(Event, [usize; 2]),
) -> Result<Streamed, ReadError> {
    stream_lines(open(path)?, &path.display().to_string(), sink)
}

/// [`stream_file`] on lines that come from elsewhere; `file` names them in messages.
pub fn stream_lines(
    lines: impl Iterator<Item = std::io::Result<String>>,
    file: &str,
    sink: &mut dyn FnMut(Event, [usize; 2]),
) -> Result<Streamed, ReadError> {
    stream_with(lines, file, false, &mut |e, l, _| sink(e, l))
}

fn stream_with(
    lines: impl Iterator<Item = std::io::Result<String>>,
    file: &str,
    windows: bool,
    sink: &mut dyn FnMut(Event, [usize; 2], u16),
) -> Result<Streamed, ReadError> {
    let mut r = Reader {
        file,
        windows,
        meta: Streamed::default(),
        sink,
        pending: std::collections::VecDeque::new(),
        first: 0,
        events: 0,
        held: None,
        clocks: BTreeMap::new(),
        waiting: BTreeMap::new(),
        owners: BTreeMap::new(),
        names: Names::default(),
        order: Vec::with_capacity(2),
    };
    let mut header = false;
    for (i, raw) in lines.enumerate() {
        let line = i + 1;
        let raw = raw.map_err(|e| r.err(line, "line", format!("cannot read: {e}")))?;
        if raw.trim().is_empty() {
            continue;
        }
        let obj = match serde_json::from_str::<crate::strict::Strict>(&raw) {
            Ok(crate::strict::Strict {
                duplicate: Some(k), ..
            }) => {
                return Err(r.err(
                    line,
                    &k,
                    "given twice in one object: which one is meant? (JSON readers differ; \
                     leaselab takes neither)",
                ))
            }
            Ok(crate::strict::Strict {
                value: Value::Object(m),
                ..
            }) => m,
            Ok(_) => return Err(r.err(line, "line", "not a JSON object")),
            // serde_json places its error in the text it was given, which is this one line:
            // its "line 1" would contradict the file's line named before it.
            Err(e) => {
                let what = e.to_string();
                let what = match what.rfind(" at line ") {
                    Some(k) => &what[..k],
                    None => &what,
                };
                return Err(r.err(
                    line,
                    "line",
                    format!("not JSON at column {}: {what}", e.column()),
                ));
            }
        };
        if !header {
            r.header(line, obj)?;
            header = true;
            continue;
        }
        let rec = r.record(line, obj)?;
        r.take(rec)?;
    }
    if !header {
        return Err(r.err(1, "format", "empty file: the first line names the format"));
    }
    r.flush();
    r.release(usize::MAX);
    Ok(r.meta)
}

/// One line, parsed.
struct Rec {
    line: usize,
    kind: Kind,
    actor: Holder,
    conn: Option<ConnId>,
    local: Millis,
    at: Millis,
    /// The earliest the server's clock can have read at this line.
    earliest: Millis,
    /// A `server_time` farther from `time` than the process's clock bound: how far.
    skew: Option<u64>,
    /// The microseconds within `time`'s millisecond (`time_us`), 0 without them.
    micros: u16,
}

enum Kind {
    Invoke(Op),
    Completion {
        word: String,
        outcome: Outcome,
        /// The invoke's arguments the completion repeats: each must be the invoke's own.
        args: Vec<(&'static str, Value)>,
    },
}

/// An invoke whose completion is not the next line: its operation, the event that shows it
/// `blocked`, its line, and its clocks (the recorder's, and the earliest the server's can have
/// read).
struct Waiting {
    op: Op,
    event: usize,
    line: usize,
    local: Millis,
    earliest: Millis,
}

/// An invoke not yet known to be answered on the next line.
struct Held {
    rec: Rec,
    op: Op,
}

struct Reader<'f, 's> {
    file: &'f str,
    /// Every database operation keeps its window ([`read_file_for_merge`]).
    windows: bool,
    /// One shared copy of each name (process, lease, scope, part, connection): a long history
    /// repeats a few names millions of times.
    names: Names,
    meta: Streamed,
    sink: &'s mut dyn FnMut(Event, [usize; 2], u16),
    /// Events not yet handed on, from event index `first`: one that a later line may still
    /// complete (a client-side step, answered on a later line, takes that answer as its
    /// outcome) holds back those after it.
    pending: std::collections::VecDeque<(Event, [usize; 2], u16)>,
    first: usize,
    /// Events made so far.
    events: usize,
    held: Option<Held>,
    /// Per (process, connection): the operation waiting for its completion, and the event
    /// that shows it `blocked` (once the next line turned out to be something else).
    waiting: BTreeMap<(String, String), Vec<Waiting>>,
    /// Which process each connection name belongs to: the history knows a connection by its
    /// name alone, so two processes sharing one would be read as one session.
    owners: BTreeMap<ConnId, Holder>,
    /// Per process: its clock at its last line, and that line (a clock never goes back).
    clocks: BTreeMap<Holder, (u64, usize)>,
    /// The latest "the server's clock read at least this" of the lines so far, and its line,
    /// for the process that gave it and for the latest other process: a line of another
    /// process cannot have happened before it ([`Reader::in_order`]).
    order: Vec<(Millis, usize, Holder)>,
}

impl Reader<'_, '_> {
    fn err(&self, line: usize, field: &str, message: impl Into<String>) -> ReadError {
        ReadError {
            file: self.file.to_string(),
            line,
            field: field.to_string(),
            message: message.into(),
        }
    }

    fn header(&mut self, line: usize, obj: Map<String, Value>) -> Result<(), ReadError> {
        let f = Fields::new(self.file, &self.names, line, &obj);
        let format = f.str("format")?;
        if format != FORMAT {
            return Err(self.err(
                line,
                "format",
                format!("`{format}`: expected `{FORMAT}` (the first line names the format)"),
            ));
        }
        let version = f.u64("version")?;
        if version != VERSION {
            return Err(self.err(
                line,
                "version",
                format!("{version}: this leaselab reads version {VERSION}"),
            ));
        }
        let mut bounds = BTreeMap::new();
        match f.opt("clock_bounds_ms") {
            None => {}
            Some(Value::Object(m)) => {
                for (process, v) in m {
                    let field = format!("clock_bounds_ms.{process}");
                    let b = as_u64(v).ok_or_else(|| {
                        self.err(line, &field, "expected milliseconds, 0 or more")
                    })?;
                    bounds.insert(process.clone(), b);
                }
            }
            Some(_) => {
                return Err(self.err(
                    line,
                    "clock_bounds_ms",
                    "expected an object: process name to milliseconds",
                ))
            }
        }
        f.only(&["format", "version", "clock_bounds_ms"], &[])?;
        self.meta.clock_bounds = bounds;
        Ok(())
    }

    fn record(&self, line: usize, obj: Map<String, Value>) -> Result<Rec, ReadError> {
        let f = Fields::new(self.file, &self.names, line, &obj);
        let kind = f.str("type")?;
        let actor = self.names.holder(f.str("process")?);
        let conn = f.opt_str("conn")?.map(|c| self.names.conn(c));
        let local = Millis(f.u64("time")?);
        // The same clock read in microseconds: it must be `time`'s millisecond.
        let micros = match f.opt("time_us") {
            None => 0,
            Some(_) => {
                let us = f.u64("time_us")?;
                if us / 1000 != local.0 {
                    return Err(self.err(
                        line,
                        "time_us",
                        format!(
                            "{us} µs is not within `time`'s millisecond {} (time_us / 1000 must equal time)",
                            local.0
                        ),
                    ));
                }
                (us % 1000) as u16
            }
        };
        // Without the server's clock, the latest it can have read: a grant or an answer
        // reported then is taken at its latest, which is the cautious side for "was it still
        // held when the other was granted?".
        let bound = self.meta.clock_bounds.get(actor.as_str()).copied();
        let mut skew = None;
        let (at, earliest) = match f.opt("server_time") {
            Some(_) => {
                let t = Millis(f.u64("server_time")?);
                let off = t.0.abs_diff(local.0);
                skew = bound.filter(|b| off > *b).map(|_| off);
                (t, t)
            }
            None => (
                Millis(local.0.saturating_add(bound.unwrap_or(0))),
                Millis(local.0.saturating_sub(bound.unwrap_or(0))),
            ),
        };
        let word = f.str("op")?;
        let args = args_of(word).ok_or_else(|| {
            self.err(
                line,
                "op",
                format!("`{word}`: unknown operation (expected one of {})", words()),
            )
        })?;
        let kind = match kind {
            "invoke" => {
                f.only(args, &[])?;
                Kind::Invoke(f.op(word)?)
            }
            "ok" | "fail" | "info" => {
                f.only(args, &RESULT)?;
                let outcome = f.outcome(word, kind)?;
                let args = args
                    .iter()
                    .filter_map(|k| f.opt(k).map(|v| (*k, v.clone())))
                    .collect();
                Kind::Completion {
                    word: word.to_string(),
                    outcome,
                    args,
                }
            }
            other => {
                return Err(self.err(
                    line,
                    "type",
                    format!("`{other}`: expected invoke, ok, fail or info"),
                ))
            }
        };
        Ok(Rec {
            line,
            kind,
            actor,
            conn,
            local,
            at,
            earliest,
            skew,
            micros,
        })
    }

    fn push(&mut self, rec: &Rec, op: Op, outcome: Outcome, lines: [usize; 2]) -> usize {
        let i = self.events;
        self.events += 1;
        let e = Event {
            seq: i as u64 + 1,
            at: rec.at,
            local: rec.local,
            actor: rec.actor.clone(),
            conn: rec.conn.clone(),
            op,
            outcome,
        };
        self.pending.push_back((e, lines, rec.micros));
        let open = self
            .waiting
            .values()
            .flatten()
            .filter(|w| w.op.db().is_none())
            .map(|w| w.event)
            .min()
            .unwrap_or(usize::MAX);
        // Not `i` itself: a `blocked` event's wait is registered just after this returns.
        self.release(open.min(i));
        i
    }

    /// Hands on every pending event before index `until`.
    fn release(&mut self, until: usize) {
        while self.first < until {
            let Some((e, lines, us)) = self.pending.pop_front() else {
                break;
            };
            (self.sink)(e, lines, us);
            self.first += 1;
        }
    }

    /// The held invoke, now known not to be answered on the next line (or answered `info`),
    /// becomes `blocked`, at the earliest its server can have received it: the operation may
    /// have taken effect from then on (a renewal's `now()` too, widened by the clock bound).
    fn flush(&mut self) {
        if let Some(mut h) = self.held.take() {
            h.rec.at = h.rec.earliest;
            let i = self.push(&h.rec, h.op.clone(), Outcome::Blocked, [h.rec.line, 0]);
            self.waiting.entry(key(&h.rec)).or_default().push(Waiting {
                op: h.op,
                event: i,
                line: h.rec.line,
                local: h.rec.local,
                earliest: h.rec.earliest,
            });
        }
    }

    /// A connection name (a process's own name when it gives no `conn`) belongs to one process.
    fn own(&mut self, rec: &Rec) -> Result<(), ReadError> {
        let conn = rec
            .conn
            .clone()
            .unwrap_or_else(|| self.names.conn(rec.actor.as_str()));
        match self.owners.get(&conn) {
            Some(owner) if *owner == rec.actor => Ok(()),
            Some(owner) => Err(self.err(
                rec.line,
                if rec.conn.is_some() {
                    "conn"
                } else {
                    "process"
                },
                format!(
                    "connection `{conn}` is used by process `{}` and by `{owner}`: a connection \
                     belongs to one process (one without `conn` is known by its process's name)",
                    rec.actor
                ),
            )),
            None => {
                self.owners.insert(conn, rec.actor.clone());
                Ok(())
            }
        }
    }

    /// The open operation of `rec`'s process and connection that `rec` completes: the one
    /// whose word it names (a process may have one open per database).
    fn take_waiting(&mut self, rec: &Rec, word: &str) -> Result<Option<Waiting>, ReadError> {
        let k = key(rec);
        let Some(v) = self.waiting.get_mut(&k).filter(|v| !v.is_empty()) else {
            return Ok(None);
        };
        let named: Vec<usize> = (0..v.len())
            .filter(|i| crate::write::word(&v[*i].op) == word)
            .collect();
        let i = match named[..] {
            [i] => i,
            // None named: the oldest, so that the word's mismatch is reported.
            [] => 0,
            _ => {
                let lines = (v[named[0]].line, v[named[1]].line);
                return Err(self.err(
                    rec.line,
                    "op",
                    format!(
                        "`{word}` completes one of several `{word}` invokes open on {} (lines {} and {}): give each its own `conn`",
                        conn_name(rec),
                        lines.0,
                        lines.1
                    ),
                ));
            }
        };
        let w = v.remove(i);
        if v.is_empty() {
            self.waiting.remove(&k);
        }
        Ok(Some(w))
    }

    /// What cannot happen, refused with the line and field: a completion earlier than its
    /// invoke; an acquire granted with an expiry before it was sent.
    fn possible(
        &self,
        rec: &Rec,
        word: &str,
        outcome: &Outcome,
        invoke: &Waiting,
    ) -> Result<(), ReadError> {
        if rec.local < invoke.local {
            return Err(self.err(
                rec.line,
                "time",
                format!(
                    "the completion of `{word}` at {} is earlier than its invoke at {} (line {})",
                    rec.local, invoke.local, invoke.line
                ),
            ));
        }
        if let (
            Op::Acquire { .. },
            Outcome::Granted {
                expires: Expiry::At(x),
                ..
            },
        ) = (&invoke.op, outcome)
        {
            if *x < invoke.earliest {
                return Err(self.err(
                    rec.line,
                    "expires",
                    format!(
                        "the acquire was granted until {x}, before it was sent (line {}, at {} by the server's clock at the earliest)",
                        invoke.line, invoke.earliest
                    ),
                ));
            }
        }
        Ok(())
    }

    /// A completion may repeat its invoke's arguments, never change them: the `ok` of a write
    /// with token 3 for an invoke with token 1 says two things, and taking either would be a
    /// guess.
    fn same_args(
        &self,
        rec: &Rec,
        args: &[(&'static str, Value)],
        op: &Op,
        invoke_line: usize,
    ) -> Result<(), ReadError> {
        use leaselab_model::text::{op_fields, Field};
        for (k, v) in args {
            let mut invoked: Option<Field<'_>> = None;
            op_fields(op, |name, f| {
                if name == *k {
                    invoked = Some(f);
                }
            });
            let same = match (&invoked, v) {
                (Some(Field::Text(t)), Value::String(s)) => t == s,
                (Some(Field::Num(n)), v) => as_u64(v) == Some(*n),
                // A `begin` without `isolation` is read committed.
                (None, Value::String(s)) => *k == "isolation" && s == "read-committed",
                _ => false,
            };
            if !same {
                let was = match invoked {
                    Some(Field::Text(t)) => Value::String(t.to_string()).to_string(),
                    Some(Field::Num(n)) => n.to_string(),
                    None => "the default".to_string(),
                };
                return Err(self.err(
                    rec.line,
                    k,
                    format!(
                        "{v} here, but {was} in its invoke (line {invoke_line}): a completion may repeat its invoke's arguments, not change them"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// A process's clock never goes back; a `server_time` beyond its bound is a warning.
    fn clock(&mut self, rec: &Rec) -> Result<(), ReadError> {
        if let Some((t, line)) = self.clocks.get(&rec.actor) {
            if rec.local.0 < *t {
                return Err(self.err(
                    rec.line,
                    "time",
                    format!(
                        "process `{}`'s clock goes back: {} after {t} on line {line}",
                        rec.actor, rec.local
                    ),
                ));
            }
        }
        self.clocks
            .insert(rec.actor.clone(), (rec.local.0, rec.line));
        if let Some(off) = rec.skew {
            let w = self.err(
                rec.line,
                "server_time",
                format!(
                    "{} is {off} ms from the recorder's time {}, beyond process `{}`'s clock bound of {} ms",
                    rec.at,
                    rec.local,
                    rec.actor,
                    self.meta.clock_bounds.get(rec.actor.as_str()).copied().unwrap_or(0)
                ),
            );
            self.meta.warnings.push(w.to_string());
        }
        Ok(())
    }

    /// Lines come in the order things happened, across processes too: a line whose server
    /// time is at most `t` cannot come after another process's line whose server time was at
    /// least `t' > t`. The checkers order operations by their lines (which committed first,
    /// which read came after which write), so such a file would be judged by an order that did
    /// not happen, and another interleaving of the same lines could be judged otherwise. Equal
    /// times, or times within the clock bounds, may come in either order: the file's order is
    /// then the order.
    fn in_order(&mut self, at: Millis, new: (Millis, usize, Holder)) -> Result<(), ReadError> {
        if let Some((t, line, p)) = self.order.iter().find(|(_, _, p)| *p != new.2) {
            if at < *t {
                return Err(self.err(
                    new.1,
                    "time",
                    format!(
                        "out of order: the server's clock read at most {at} at this line of process `{}`, but at least {t} at line {line} of process `{p}` before it — lines must come in the order they happened (a file per process: `judge --merge`)",
                        new.2
                    ),
                ));
            }
        }
        let rec_actor = new.2.clone();
        match self.order.first() {
            Some(top) if top.2 == rec_actor => {
                if new.0 > top.0 {
                    self.order[0] = new;
                }
            }
            Some(top) if new.0 > top.0 => self.order.insert(0, new),
            Some(_) => match self.order.get(1) {
                Some(second) if second.0 >= new.0 => {}
                _ => {
                    self.order.truncate(1);
                    self.order.push(new);
                }
            },
            None => self.order.push(new),
        }
        self.order.truncate(2);
        Ok(())
    }

    /// One line: its own checks first (they name what is wrong more exactly), then its order
    /// against the other processes' lines.
    fn take(&mut self, rec: Rec) -> Result<(), ReadError> {
        let (at, order) = (rec.at, (rec.earliest, rec.line, rec.actor.clone()));
        self.take_line(rec)?;
        self.in_order(at, order)
    }

    fn take_line(&mut self, rec: Rec) -> Result<(), ReadError> {
        self.own(&rec)?;
        match rec.kind {
            Kind::Invoke(ref op) => {
                self.clock(&rec)?;
                self.flush();
                // One open operation per database: a client that sends another while one
                // waits has given it up (`disconnect`, `crash`, `restart`) or collects it
                // (`await`); anything else is two at once, which no connection does.
                let db = op.db();
                let abandons = matches!(
                    op,
                    Op::Disconnect { .. }
                        | Op::Crash { .. }
                        | Op::Restart { .. }
                        | Op::Await { .. }
                );
                let open = self
                    .waiting
                    .get(&key(&rec))
                    .and_then(|v| v.iter().find(|w| db.is_some() && w.op.db() == db));
                if let Some(w) = open.filter(|_| !abandons) {
                    return Err(self.err(
                        rec.line,
                        "type",
                        format!(
                            "a second invoke on {} while its `{}` (line {}) has no completion: one operation at a time per process and connection",
                            conn_name(&rec),
                            crate::write::word(&w.op),
                            w.line
                        ),
                    ));
                }
                // A crash ends every statement waiting on its database, whoever sent it: none
                // will be answered now; each stays `blocked`.
                if let Op::Crash { db: crashed } = op {
                    for v in self.waiting.values_mut() {
                        v.retain(|w| w.op.db() != Some(*crashed));
                    }
                    self.waiting.retain(|_, v| !v.is_empty());
                }
                // Given up: no completion can come for it now; it stays `blocked`.
                if abandons && !matches!(op, Op::Await { .. }) {
                    if let Some(v) = self.waiting.get_mut(&key(&rec)) {
                        v.retain(|w| w.op.db() != db);
                    }
                }
                let op = op.clone();
                self.held = Some(Held { rec, op });
                Ok(())
            }
            Kind::Completion {
                ref word,
                ref outcome,
                ref args,
            } => {
                if let Some(h) = self.held.take() {
                    // An `info` answer says nothing of when the operation took effect, if it
                    // did: anywhere from its invoke to its answer, as for one that waited.
                    let unknown = matches!(outcome, Outcome::Indeterminate(_));
                    // The calls that change the lease or the resource; a read still shows
                    // what it read at its answer, as in a file read alone.
                    let window = self.windows
                        && matches!(
                            h.op,
                            Op::Acquire { .. }
                                | Op::Renew { .. }
                                | Op::Release { .. }
                                | Op::Write { .. }
                                | Op::Publish { .. }
                        );
                    if key(&h.rec) == key(&rec) && !unknown && !window {
                        check_word(self, &rec, word, &h.op)?;
                        self.same_args(&rec, args, &h.op, h.rec.line)?;
                        let invoke = Waiting {
                            op: h.op.clone(),
                            event: 0,
                            line: h.rec.line,
                            local: h.rec.local,
                            earliest: h.rec.earliest,
                        };
                        self.possible(&rec, word, outcome, &invoke)?;
                        self.clock(&rec)?;
                        let lines = [h.rec.line, rec.line];
                        self.push(&rec, h.op, outcome.clone(), lines);
                        return Ok(());
                    }
                    self.held = Some(h);
                    self.flush();
                }
                let Some(w) = self.take_waiting(&rec, word)? else {
                    return Err(self.err(
                        rec.line,
                        "type",
                        format!(
                            "a completion of `{word}` on {} with no invoke waiting for it",
                            conn_name(&rec)
                        ),
                    ));
                };
                check_word(self, &rec, word, &w.op)?;
                self.same_args(&rec, args, &w.op, w.line)?;
                self.possible(&rec, word, outcome, &w)?;
                self.clock(&rec)?;
                let (op, i) = (w.op, w.event);
                let db = op.db();
                match db {
                    Some(db) => {
                        self.push(&rec, Op::Await { db }, outcome.clone(), [rec.line, 0]);
                    }
                    // A client-side step has no commit to place: it happened when answered.
                    None => {
                        if let Some((e, lines, _)) = i
                            .checked_sub(self.first)
                            .and_then(|k| self.pending.get_mut(k))
                        {
                            e.outcome = outcome.clone();
                            lines[1] = rec.line;
                        }
                    }
                }
                Ok(())
            }
        }
    }
}

fn key(r: &Rec) -> (String, String) {
    (
        r.actor.as_str().to_string(),
        r.conn.as_ref().map_or("", |c| c.as_str()).to_string(),
    )
}

fn conn_name(r: &Rec) -> String {
    match &r.conn {
        Some(c) => format!("process `{}` connection `{}`", r.actor, c),
        None => format!("process `{}`", r.actor),
    }
}

fn check_word(r: &Reader<'_, '_>, rec: &Rec, word: &str, op: &Op) -> Result<(), ReadError> {
    let expected = crate::write::word(op);
    if word == expected {
        Ok(())
    } else {
        Err(r.err(
            rec.line,
            "op",
            format!(
                "`{word}` completes {}'s `{expected}` invoke",
                conn_name(rec)
            ),
        ))
    }
}
