//! The terminal timeline: one lane per holder, one line per key event, the violating pair
//! marked, at most [`MAX_LINES`] lines — readable in ten seconds.

use crate::key::{self, Kind};
use crate::story::{Clock, Mark, Story, Verdict, Write};
use leaselab_model::Millis;
use std::fmt::Write as _;

/// The most lines a timeline takes, header and verdict included.
pub const MAX_LINES: usize = 12;

const LANE: usize = 38;

/// How a write shows in a lane.
pub fn write_cell(w: &Write) -> String {
    let v = match w.verdict {
        Verdict::Accepted => "✓ accepted",
        Verdict::Rejected => "✗ rejected",
        Verdict::Maybe => "? maybe",
    };
    // A write refused at its fence named no part yet: "fence token 1 ✗ rejected" fits a lane.
    let mut s = if w.target.ends_with(" (fence)") {
        format!("fence token {} {v}", w.token.0)
    } else {
        format!("write {} token {} {v}", w.target, w.token.0)
    };
    if w.stale {
        s.push_str(" STALE");
    }
    s
}

fn cell(k: &Kind) -> String {
    match k {
        Kind::Grant(t) => format!("acquire → token {}", t.0),
        Kind::Expire(t) => format!("token {} expires (db clock)", t.0),
        Kind::Release(t) => format!("release token {}", t.0),
        Kind::Deadline(t, clock) => format!("token {} deadline ({})", t.0, clock.words()),
        Kind::Pause(Some(ms), false) => format!("PAUSED for {ms} ms ┐"),
        Kind::Pause(None, false) => "PAUSED (never resumes) ┐".to_string(),
        Kind::Pause(Some(ms), true) => format!("PAUSED before commit for {ms} ms ┐"),
        Kind::Pause(None, true) => "PAUSED before commit (never resumes) ┐".to_string(),
        Kind::Resume(ms) => format!("resumes after {ms} ms ┘"),
        Kind::Write(w) => write_cell(w),
        Kind::Mark(m) => match m {
            Mark::Crash(db) => format!("── {} database crashes ──", db.as_str()),
            Mark::Restart(db) => format!("── {} database restarts ──", db.as_str()),
            Mark::Lost(_) => "renew failed: lease lost".to_string(),
            Mark::RenewRefused(_, t) => format!("renew token {} refused", t.0),
            Mark::CheckExpired(_, d, own, clock) => check_cell("✗", ">", *d, *own, *clock),
            Mark::CheckPassed(_, d, own, clock) => check_cell("✓", "≤", *d, *own, *clock),
            Mark::ClockStep(_, from, to) => format!("wall clock stepped: {from} → {to}"),
            Mark::FloorCheckPassed(_, t) => format!("reads floor: token {} ≥ it, passes", t.0),
            Mark::Waits(_) => "waits for a row lock…".to_string(),
            Mark::HoldsFloor(_, t) => format!("fence token {} ✓, floor row locked", t.0),
            Mark::Floor(t, None) => format!("── floor is {} ──", t.0),
            Mark::Floor(t, Some(high)) => {
                format!("── floor is {}: it went back from {} ──", t.0, high.0)
            }
        },
    }
}

/// A local check's cell: the deadline it compared with, and the holder's clock reading (and
/// which clock) when it is not the database's. Both numbers must show: a long pair drops
/// words, never a digit.
fn check_cell(
    sign: &str,
    cmp: &str,
    deadline: Millis,
    own: Option<Millis>,
    clock: Clock,
) -> String {
    let Some(own) = own else {
        return format!("local check {sign} (deadline {})", deadline.0);
    };
    let c = clock.words();
    let short = c.split(' ').next().unwrap_or(c);
    let (own, d) = (own.0, deadline.0);
    [
        format!("local check {sign} ({c} {own} {cmp} {d})"),
        format!("check {sign} ({c} {own} {cmp} {d})"),
        format!("check {sign} ({short} {own} {cmp} {d})"),
    ]
    .into_iter()
    .find(|s| s.chars().count() <= LANE)
    .unwrap_or_else(|| format!("{sign} {short} {own} {cmp} {d}"))
}

fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut c: String = s.chars().take(n - 1).collect();
        c.push('…');
        c
    }
}

fn pad(s: &str, n: usize) -> String {
    let c = s.chars().count();
    format!("{s}{}", " ".repeat(n.saturating_sub(c)))
}

/// The one-line verdict under a picture.
pub fn verdict_line(story: &Story) -> String {
    match (story.violations.first(), &story.liveness) {
        (None, None) => "✓ I1 I2 I3 acceptance final all hold".to_string(),
        (None, Some(why)) => {
            format!("✓ I1 I2 I3 acceptance final all hold; ✗ liveness broke: {why}")
        }
        (Some(v), liveness) => {
            let mut names: Vec<String> = Vec::new();
            for x in &story.violations {
                let n = x.check.to_string();
                if !names.contains(&n) {
                    names.push(n);
                }
            }
            let ev: Vec<String> = v.events.iter().map(|e| format!("#{e}")).collect();
            if liveness.is_some() {
                names.push("liveness".to_string());
            }
            format!(
                "✗ {} broken; the first: {} between events {}",
                names.join(", "),
                v.check,
                ev.join(" and ")
            )
        }
    }
}

/// The timeline of `story`, at most [`MAX_LINES`] lines, each ending in `\n`.
pub fn render(story: &Story) -> String {
    // Gap rows take lines too: fewer key events until both fit.
    let mut cap = MAX_LINES - 2;
    let (keys, total) = loop {
        let (keys, total) = key::select(story, cap);
        let gaps = keys
            .windows(2)
            .filter(|w| story.is_gap(w[0].at.0, w[1].at.0))
            .count();
        if keys.len() + gaps <= MAX_LINES - 2 || cap <= 2 {
            break (keys, total);
        }
        cap -= 1;
    };
    let mut s = String::new();
    let mut head = format!("{:>7} │", "t ms");
    for l in &story.lanes {
        head.push_str(&format!(" {} │", pad(&clip(l.as_str(), LANE), LANE)));
    }
    if total > keys.len() {
        let _ = write!(head, " {} of {} key events", keys.len(), total);
    }
    let _ = writeln!(s, "{}", head.trim_end());
    let mut shown = 0;
    for (n, k) in keys.iter().enumerate() {
        if n > 0 && story.is_gap(keys[n - 1].at.0, k.at.0) && shown + 1 < MAX_LINES - 2 {
            let secs = k.at.since(keys[n - 1].at) as f64 / 1000.0;
            let _ = writeln!(s, "{:>7} │ ⋮ {secs:.1} s later", "⋮");
            shown += 1;
        }
        shown += 1;
        let mut line = format!("{:>7} │", k.at.0);
        let text = cell(&k.kind);
        let marked = matches!(&k.kind, Kind::Write(w) if w.violating)
            || (matches!(k.kind, Kind::Grant(_)) && story.violating.contains(&k.seq));
        match k.lane {
            None => {
                line.push(' ');
                line.push_str(&text);
            }
            Some(i) => {
                for (j, l) in story.lanes.iter().enumerate() {
                    let c = if i == j {
                        clip(&text, LANE)
                    } else if story.paused_at(l, k.at).is_some() {
                        "┆".to_string()
                    } else {
                        String::new()
                    };
                    line.push_str(&format!(" {} │", pad(&c, LANE)));
                }
            }
        }
        let mut line = line.trim_end().to_string();
        if marked {
            let _ = write!(line, " ◀ #{}", k.seq);
        }
        let _ = writeln!(s, "{line}");
    }
    let _ = writeln!(s, "{}", verdict_line(story));
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use leaselab_model::Holder;

    /// A check's numbers always show whole: a long pair drops words instead (a cell once read
    /// `≤ 1289…`).
    #[test]
    fn a_checks_numbers_are_never_clipped() {
        for (own, deadline) in [
            (50, 100),
            (1234, 1289),
            (12_345, 12_890),
            (123_456, 128_900),
            (12_345_678, 12_890_000),
        ] {
            for clock in [Clock::Own, Clock::Wall, Clock::Monotonic] {
                let (h, d, o) = (Holder::new("holder-a"), Millis(deadline), Some(Millis(own)));
                for m in [
                    Mark::CheckPassed(h.clone(), d, o, clock),
                    Mark::CheckExpired(h, d, o, clock),
                ] {
                    let c = clip(&cell(&Kind::Mark(m)), LANE);
                    assert!(
                        !c.contains('…')
                            && c.contains(&own.to_string())
                            && c.contains(&deadline.to_string())
                            && c.contains(clock.words().split(' ').next().unwrap_or("")),
                        "{c}"
                    );
                }
            }
        }
        let short = cell(&Kind::Mark(Mark::CheckPassed(
            Holder::new("holder-a"),
            Millis(100),
            Some(Millis(50)),
            Clock::Own,
        )));
        assert_eq!(short, "local check ✓ (own clock 50 ≤ 100)");
    }
}
