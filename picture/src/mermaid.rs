//! A Mermaid `sequenceDiagram` of a story, like the source's figure 26-2: the holders, the
//! lease database and the resource as participants; grants, writes and their verdicts as
//! messages; pauses as notes; the violating pair boxed (the stale write red, the newer one blue);
//! skipped time as a note.

use crate::key::{self, Kind};
use crate::story::{Clock, Mark, Story, Verdict};
use leaselab_model::Millis;
use std::fmt::Write as _;

/// The most key events a diagram shows.
pub const MAX_EVENTS: usize = 40;

/// Mermaid reads `;` as the end of a statement and `#…;` as an entity: keep them out of text.
fn safe(s: &str) -> String {
    s.replace(';', ",").replace('#', "no. ")
}

fn id(i: usize) -> String {
    format!("H{i}")
}

/// The diagram's text (paste it into any Mermaid renderer, or a Markdown ```mermaid block).
pub fn render(story: &Story) -> String {
    let (keys, total) = key::select(story, MAX_EVENTS);
    let mut s = String::from("sequenceDiagram\n");
    for (i, l) in story.lanes.iter().enumerate() {
        let _ = writeln!(s, "    participant {} as {}", id(i), l);
    }
    let _ = writeln!(s, "    participant L as lease db");
    let _ = writeln!(
        s,
        "    participant R as resource (fence={})",
        story.fence_label()
    );
    if total > keys.len() {
        let _ = writeln!(
            s,
            "    Note over L,R: {} of {} key events",
            keys.len(),
            total
        );
    }
    let mut last_at: Option<u64> = None;
    for k in &keys {
        let h = k.lane.map(id).unwrap_or_else(|| "L".to_string());
        let t = k.at.0;
        if let Some(prev) = last_at.filter(|p| story.is_gap(*p, t)) {
            let secs = (t - prev) as f64 / 1000.0;
            let _ = writeln!(
                s,
                "    Note over L,R: ⋮ {secs:.1} s later (what happened in between is not drawn)"
            );
        }
        last_at = Some(t);
        match &k.kind {
            Kind::Grant(tok) => {
                let _ = writeln!(s, "    {h}->>L: acquire (t={t})");
                let _ = writeln!(s, "    L-->>{h}: granted token {}", tok.0);
            }
            Kind::Expire(tok) => {
                let _ = writeln!(
                    s,
                    "    Note over L: t={t} token {} expires (db clock)",
                    tok.0
                );
            }
            Kind::Deadline(tok, clock) => {
                let _ = writeln!(
                    s,
                    "    Note over {h}: t={t} token {} deadline passes ({})",
                    tok.0,
                    clock.words()
                );
            }
            Kind::Release(tok) => {
                let _ = writeln!(s, "    {h}->>L: release token {} (t={t})", tok.0);
            }
            Kind::Pause(ms, before_commit) => {
                let how = ms.map_or("never resumes".to_string(), |m| format!("{m} ms"));
                let spot = if *before_commit { " before commit" } else { "" };
                let _ = writeln!(s, "    Note over {h}: t={t} PAUSED{spot} ({how})");
            }
            Kind::Resume(ms) => {
                let _ = writeln!(s, "    Note over {h}: t={t} resumes after {ms} ms");
            }
            Kind::Write(w) => {
                let verdict = match w.verdict {
                    Verdict::Accepted => "accepted",
                    Verdict::Rejected => "rejected",
                    Verdict::Maybe => "maybe applied",
                };
                let stale = if w.stale { " STALE" } else { "" };
                // The two writes of a violating pair apart, as the HTML page colours them:
                // the stale one red, the newer one it came after blue.
                let (colour, role) = if w.stale {
                    (
                        "255, 205, 205",
                        "the STALE write: an older token after a newer one",
                    )
                } else {
                    ("205, 222, 255", "the newer write the stale one came after")
                };
                if w.violating {
                    let _ = writeln!(s, "    rect rgb({colour})");
                }
                let _ = writeln!(
                    s,
                    "    {h}->>R: write {} token {} (t={t}){stale}",
                    w.target, w.token.0
                );
                let _ = writeln!(s, "    R-->>{h}: {verdict}");
                if w.violating {
                    let _ = writeln!(
                        s,
                        "    Note right of R: violating (event {}): {role}",
                        w.seq
                    );
                    let _ = writeln!(s, "    end");
                }
            }
            Kind::Mark(m) => {
                let text = match m {
                    Mark::Crash(db) => format!("{} database crashes", db.as_str()),
                    Mark::Restart(db) => format!("{} database restarts", db.as_str()),
                    Mark::Lost(_) => "renew failed: lease lost".to_string(),
                    Mark::RenewRefused(_, tok) => format!("renew token {} refused", tok.0),
                    Mark::CheckExpired(_, d, own, c) => {
                        check_note("local check: expired", *d, *own, *c)
                    }
                    Mark::CheckPassed(_, d, own, c) => check_note("local check passed", *d, *own, *c),
                    Mark::ClockStep(_, from, to) => format!(
                        "its wall clock is stepped from {from} to {to} (NTP); its monotonic clock runs on"
                    ),
                    Mark::FloorCheckPassed(_, tok) => {
                        format!(
                            "reads the floor: token {} is not below it, passes (no lock)",
                            tok.0
                        )
                    }
                    Mark::Waits(_) => "its statement waits for a row lock".to_string(),
                    Mark::HoldsFloor(_, tok) => format!(
                        "fence token {} passes: the floor row stays locked until its commit",
                        tok.0
                    ),
                    Mark::Floor(tok, None) => format!("the floor is {}", tok.0),
                    Mark::Floor(tok, Some(high)) => {
                        format!("the floor is {}: it went back from {}", tok.0, high.0)
                    }
                };
                let over = if k.lane.is_some() {
                    h
                } else {
                    "L,R".to_string()
                };
                let _ = writeln!(s, "    Note over {over}: t={t} {text}");
            }
        }
    }
    let _ = writeln!(
        s,
        "    Note over L,R: {}",
        safe(&crate::timeline::verdict_line(story))
    );
    s
}

/// A local check's note: the deadline it compared with, and the clock it read with that
/// clock's reading when it is not the database's.
fn check_note(head: &str, d: Millis, own: Option<Millis>, c: Clock) -> String {
    match own {
        None => format!("{head} (deadline {} by its {})", d.0, c.words()),
        Some(own) => format!("{head}: its {} read {}, deadline {}", c.words(), own.0, d.0),
    }
}
