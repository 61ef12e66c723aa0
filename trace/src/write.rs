//! Writing: a trace's canonical text, one header line per field, one line per event.

use crate::format::{Trace, MAGIC};
use leaselab_checkers::Check;
use leaselab_model::text::{escape, kv, op_text, outcome_text};
use leaselab_model::{Config, Event, History};
use std::fmt::Write as _;

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
    // Written only when set, so that every trace of the source design keeps its bytes.
    if c.lock_delay_ms > 0 {
        kv(&mut s, "lock_delay_ms", c.lock_delay_ms);
    }
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
            spec: None,
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
        if let Some(p) = &self.spec {
            let _ = writeln!(s, "spec {}", escape(p));
        }
        for l in &self.setup {
            let _ = writeln!(s, "setup {l}");
        }
        for f in &self.faults {
            let _ = writeln!(s, "fault {f}");
        }
        if self.expect.is_empty() {
            let _ = writeln!(s, "expect ok");
        } else {
            let _ = writeln!(s, "expect {}", Check::list(&self.expect));
        }
        let _ = writeln!(s, "events");
        for e in &self.history.events {
            let _ = writeln!(s, "{}", event_line(e));
        }
        let _ = writeln!(s, "end");
        s
    }
}
