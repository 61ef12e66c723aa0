//! Writing: a [`History`] as JSON lines. An event answered at once becomes an invoke and its
//! completion on adjacent lines; a statement that waited becomes its invoke where it started
//! waiting and its completion where the `await` collected the answer. Keys come in a fixed
//! order, so the same history always gives the same bytes.

use crate::{FORMAT, VERSION};
use leaselab_model::text::{op_fields, Field};
use leaselab_model::{Event, Expiry, History, Op, Outcome, PartRow};
use std::collections::BTreeMap;

/// The whole file: the header line, then every event's lines.
pub fn history(h: &History) -> String {
    let mut out = header();
    let mut w = Writer::default();
    for e in &h.events {
        w.event(e, &mut out);
    }
    out
}

/// The first line of every file.
pub fn header() -> String {
    format!("{{\"format\":\"{FORMAT}\",\"version\":{VERSION}}}\n")
}

/// Which connections have a statement waiting for its answer (the op word it will complete).
#[derive(Default)]
pub struct Writer {
    waiting: BTreeMap<String, &'static str>,
}

impl Writer {
    /// Appends the lines of one event (none for an `await` that is still waiting).
    ///
    /// A statement answered `busy` was never sent (its connection's statement still waited):
    /// it has no line, as a client that knew better would not have sent it — and the format
    /// takes one open operation per connection and database.
    pub fn event(&mut self, e: &Event, out: &mut String) {
        if matches!(&e.outcome, Outcome::Error(leaselab_model::Reason::Busy)) {
            return;
        }
        let conn = e.conn_str().to_string();
        match (&e.op, &e.outcome) {
            (Op::Await { .. }, outcome) if self.waiting.contains_key(&conn) => {
                if *outcome == Outcome::Blocked {
                    return;
                }
                let word = self.waiting.remove(&conn).unwrap_or("await");
                completion(e, word, out);
            }
            (op, Outcome::Blocked) => {
                invoke(e, op, out);
                self.waiting.insert(conn, word(op));
            }
            (op, _) => {
                invoke(e, op, out);
                completion(e, word(op), out);
            }
        }
    }
}

/// The operation's word: the trace's (`acquire`, `read-part`, `begin`, …).
pub fn word(op: &Op) -> &'static str {
    leaselab_model::text::op_word(op)
}

/// One JSON object built key by key.
struct Line<'o> {
    out: &'o mut String,
    first: bool,
}

impl<'o> Line<'o> {
    fn new(out: &'o mut String) -> Self {
        out.push('{');
        Line { out, first: true }
    }
    fn key(&mut self, k: &str) {
        if !self.first {
            self.out.push(',');
        }
        self.first = false;
        self.out.push('"');
        self.out.push_str(k);
        self.out.push_str("\":");
    }
    fn str(&mut self, k: &str, v: &str) {
        self.key(k);
        self.out.push_str(&quote(v));
    }
    fn num(&mut self, k: &str, v: u64) {
        self.key(k);
        self.out.push_str(&v.to_string());
    }
    fn raw(&mut self, k: &str, v: &str) {
        self.key(k);
        self.out.push_str(v);
    }
    fn end(self) {
        self.out.push_str("}\n");
    }
}

fn quote(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

fn expiry(e: Expiry) -> String {
    match e {
        Expiry::NegInfinity => quote("-infinity"),
        Expiry::At(t) => t.0.to_string(),
    }
}

fn row(r: &PartRow) -> String {
    format!(
        "{{\"content\":{},\"writer\":{},\"token\":{}}}",
        quote(&r.content),
        quote(r.writer.as_str()),
        r.token.0
    )
}

/// Who acted and when: what every line starts with.
#[derive(Clone, Copy, Debug)]
pub struct Head<'a> {
    /// The process (holder).
    pub process: &'a str,
    /// Its connection, when it has more than one.
    pub conn: Option<&'a str>,
    /// The recorder's clock, ms.
    pub time: u64,
    /// The same reading in µs, when the recorder has it (`time` is its millisecond).
    pub time_us: Option<u64>,
    /// The server's clock, when known.
    pub server_time: Option<u64>,
}

impl<'a> Head<'a> {
    fn of(e: &'a Event) -> Self {
        Head {
            process: e.actor.as_str(),
            conn: e.conn.as_ref().map(|c| c.as_str()),
            time: e.local.0,
            time_us: None,
            server_time: (e.at != e.local).then_some(e.at.0),
        }
    }
}

fn start<'o>(h: Head<'_>, kind: &str, word: &str, out: &'o mut String) -> Line<'o> {
    let mut l = Line::new(out);
    l.str("type", kind);
    l.str("process", h.process);
    if let Some(c) = h.conn {
        l.str("conn", c);
    }
    l.num("time", h.time);
    if let Some(us) = h.time_us {
        l.num("time_us", us);
    }
    if let Some(t) = h.server_time {
        l.num("server_time", t);
    }
    l.str("op", word);
    l
}

fn invoke(e: &Event, op: &Op, out: &mut String) {
    invoke_line(Head::of(e), op, out)
}

fn completion(e: &Event, word: &'static str, out: &mut String) {
    completion_line(Head::of(e), word, &e.outcome, out)
}

/// An invoke line of `op`: its fields are the event line's (`leaselab_model::text::op_fields`),
/// names and contents as strings, tokens and times as numbers.
pub fn invoke_line(h: Head<'_>, op: &Op, out: &mut String) {
    let mut l = start(h, "invoke", word(op), out);
    op_fields(op, |k, v| match v {
        Field::Text(t) => l.str(k, t),
        Field::Num(n) => l.num(k, n),
    });
    l.end();
}

/// The outcome word a completion of `word` and `kind` means when it names none: what a
/// recorder that knows only success and failure would mean.
pub fn default_result(word: &str, kind: &str) -> &'static str {
    match (word, kind) {
        ("acquire", "ok") => "granted",
        ("renew", "ok") => "renewed",
        ("release", "ok") => "released",
        ("write" | "publish", "ok") => "accepted",
        ("fence", "ok") => "passed",
        ("check", "ok") => "valid",
        ("acquire" | "renew" | "release", "fail") => "refused",
        ("write" | "publish", "fail") => "rejected",
        ("fence" | "upsert", "fail") => "failed",
        (_, "fail") => "error",
        (_, "info") => "indeterminate",
        ("now", "ok") => "now",
        ("read-lease", "ok") => "lease",
        ("read-floor", "ok") => "floor",
        ("read-part", "ok") => "part",
        ("read-publish", "ok") => "published",
        ("count-attempts", "ok") => "count",
        _ => "ok",
    }
}

/// The completion's type and outcome word.
fn kind_and_word(o: &Outcome) -> (&'static str, &'static str) {
    match o {
        Outcome::Granted { .. } => ("ok", "granted"),
        Outcome::Renewed { .. } => ("ok", "renewed"),
        Outcome::Released => ("ok", "released"),
        Outcome::Accepted => ("ok", "accepted"),
        Outcome::Passed => ("ok", "passed"),
        Outcome::Ok => ("ok", "ok"),
        Outcome::Now(_) => ("ok", "now"),
        Outcome::Floor(_) => ("ok", "floor"),
        Outcome::Part(_) => ("ok", "part"),
        Outcome::Lease(_) => ("ok", "lease"),
        Outcome::Published(_) => ("ok", "published"),
        Outcome::Count(_) => ("ok", "count"),
        Outcome::Valid => ("ok", "valid"),
        Outcome::Expired => ("ok", "expired"),
        Outcome::Blocked => ("ok", "blocked"),
        Outcome::Refused => ("fail", "refused"),
        Outcome::Rejected => ("fail", "rejected"),
        Outcome::Failed => ("fail", "failed"),
        Outcome::Unavailable => ("fail", "unavailable"),
        Outcome::Error(_) => ("fail", "error"),
        Outcome::Indeterminate(_) => ("info", "indeterminate"),
    }
}

/// The completion line of a `word` operation that answered `outcome`.
pub fn completion_line(h: Head<'_>, word: &str, outcome: &Outcome, out: &mut String) {
    let (kind, result) = kind_and_word(outcome);
    let mut l = start(h, kind, word, out);
    if result != default_result(word, kind) {
        l.str("result", result);
    }
    match outcome {
        Outcome::Granted { token, expires } => {
            l.num("token", token.0);
            l.raw("expires", &expiry(*expires));
        }
        Outcome::Renewed { expires } => l.raw("expires", &expiry(*expires)),
        Outcome::Now(t) => l.num("value", t.0),
        Outcome::Floor(t) => l.raw("value", &t.map_or("null".into(), |t| t.0.to_string())),
        Outcome::Part(r) | Outcome::Published(r) => {
            l.raw("value", &r.as_ref().map_or("null".into(), row))
        }
        Outcome::Lease(r) => {
            let v = r.as_ref().map_or("null".into(), |r| {
                format!(
                    "{{\"holder\":{},\"token\":{},\"expires\":{}}}",
                    quote(r.holder.as_str()),
                    r.token.0,
                    expiry(r.expires_at)
                )
            });
            l.raw("value", &v);
        }
        Outcome::Count(n) => l.num("value", *n),
        Outcome::Error(r) => l.str("error", &r.to_string()),
        Outcome::Indeterminate(r) => l.str("error", r),
        _ => {}
    }
    l.end();
}
