//! The run in plain words: who held which token when, where the pause landed, which write was
//! stale, why the resource kept or refused it, which invariant broke, and which safeguard
//! would have stopped it.

use crate::key;
use crate::story::{End, Mark, Story, Verdict, Write};
use leaselab_checkers::Check;
use leaselab_model::{ClientExpiry, FenceMode, LeaseDurability, PublishMode};
use std::fmt::Write as _;

/// How many further violations of one check `explain` spells out.
const MORE_SHOWN: usize = 3;

/// What the resource's fence does, in one sentence.
pub fn fence_words(f: FenceMode) -> &'static str {
    match f {
        FenceMode::Scope => "the scope fence: `UPDATE fence_floor SET max_token = t WHERE scope = s AND max_token <= t` in the write's own transaction, holding the floor's row lock until commit",
        FenceMode::Strict => "the strict scope fence (`max_token < t`): like the scope fence, but an equal token is refused too",
        FenceMode::ScopeUpsert => "the scope fence as a guarded upsert of the floor row (`ON CONFLICT … WHERE max_token <= EXCLUDED.max_token`)",
        FenceMode::Row => "a per-row fence: the upsert compares with the token already in that part's row (`WHERE part.token <= new.token`)",
        FenceMode::CheckThenWrite => "check-then-write: read the floor, compare in the client, then set the floor and write, each step autocommitted",
        FenceMode::Off => "no fence at all: a plain upsert that never looks at the token",
    }
}

/// Why the resource kept a stale write, under `story`'s configuration.
fn why_accepted(story: &Story, w: &Write) -> String {
    if story.recorded.is_some() {
        return "nothing the recorded deployment did compared the write's token with the newer one that had already committed (or the comparison and the write were not one atomic step)".into();
    }
    if story.spec.is_some() {
        return "nothing in the spec's statements compared the write's token with the newer one that had already committed (or the comparison and the write were not one atomic step)".into();
    }
    if w.target.starts_with("publish:") {
        return match story.config.publish {
            PublishMode::BusinessKey => "the publish is deduplicated by business key (`ON CONFLICT DO NOTHING`): the first copy to arrive is kept, not the newest".into(),
            PublishMode::Versioned => "the versioned publish keeps any copy whose token is at least the kept one's".into(),
        };
    }
    match story.config.fence {
        FenceMode::Off => "the resource checks no token".into(),
        FenceMode::CheckThenWrite => "the floor was read, compared and written in separate autocommitted steps, so a newer writer could commit in between and the stale one then set the floor back".into(),
        FenceMode::Row => format!("the row fence compares only with the token in the row of `{}`; a part the new holder never wrote has no token to compare with", w.target),
        // Only what the history shows: a reused token is the cause only when I2 saw one.
        FenceMode::Scope | FenceMode::Strict | FenceMode::ScopeUpsert
            if story.violations.iter().any(|v| v.check == Check::I2) =>
        {
            "the scope's floor was not above its token: the token was handed out again (the lease table lost its counter), so the fence could not tell old from new".into()
        }
        FenceMode::Scope | FenceMode::Strict | FenceMode::ScopeUpsert => "the scope's floor was not above its token when its fence ran: no write with a newer token had committed to the scope before it".into(),
    }
}

/// The safeguard that stops what `check` caught, under `story`'s configuration.
fn safeguard(story: &Story, check: Check) -> String {
    let c = &story.config;
    if story.spec.is_some() || story.recorded.is_some() {
        return match check {
            Check::I2 => "a token that never repeats: a durable counter that every acquire raises in the statement that grants (examples/leases/seed.toml)".into(),
            Check::I1 => "an acquire that takes over only an expired or released lease, and a renew refused once the lease expired (`AND expires_at > now()`) (examples/leases/seed.toml)".into(),
            _ => "a fence in the write's own transaction: one conditional `UPDATE` of a per-scope floor (`… WHERE max_token <= :token`) before the write, so the check and the write are one atomic step (examples/leases/seed.toml)".into(),
        };
    }
    match check {
        Check::I2 if c.lease_table == LeaseDurability::Unlogged => "a durable (logged) lease table: the token counter must survive a crash, or tokens are reused (F8)".into(),
        Check::I1 if c.renew_after_expiry => "refuse a renew once the lease expired (`AND expires_at > now()`): the holder must acquire again and get a new token".into(),
        Check::Acceptance if c.publish == PublishMode::BusinessKey && story.writes.iter().any(|w| w.violating && w.target.starts_with("publish:")) => "carry the token with the side effect and keep only `>=` downstream (`--publish versioned`), or write to a fenced table and forward it (outbox) (F9)".into(),
        _ => match c.fence {
            FenceMode::Off | FenceMode::CheckThenWrite | FenceMode::Row => "the scope fence: one conditional `UPDATE fence_floor … WHERE max_token <= t` in the write's own transaction, so the check and the write are one atomic step over the whole scope (F4, F6b, F7)".into(),
            _ if c.client_expiry == ClientExpiry::WallClock => "a local deadline on the holder's monotonic clock, read before sending acquire (G3)".into(),
            _ => "a monotonic, never-reused token (a durable lease table) with the scope fence".into(),
        },
    }
}

/// The explanation of `story` (its title first), as lines of plain text.
pub fn render(story: &Story, title: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{title}");
    match (&story.spec, &story.recorded) {
        (_, Some(file)) => {
            let _ = writeln!(
                s,
                "Recorded from a deployment ({file}): its statements are its own, and the history is what its clients saw."
            );
        }
        (Some(spec), None) => {
            let _ = writeln!(
                s,
                "The lease and the resource ran the statements of {spec} (`leaselab audit`); the history is what PostgreSQL answered."
            );
        }
        (None, None) => {
            let _ = writeln!(
                s,
                "The resource ran with {}.",
                fence_words(story.config.fence)
            );
            // The knobs a question about the run turns on, as the trace writes them.
            let _ = writeln!(
                s,
                "Configuration: config {}",
                leaselab_trace::config_text(&story.config)
            );
        }
    }
    let (keys, _) = key::select(story, 16);
    let shown = |seq: u64| keys.iter().any(|k| k.seq == seq);
    // (when, sentence), told in time order.
    let mut told: Vec<(leaselab_model::Millis, String)> = Vec::new();
    // The story up to the write it is about (what came later does not explain it).
    let until = key::focus(story).map(|w| w.at);
    for h in &story.holdings {
        if !shown(h.seq) || until.is_some_and(|t| h.from > t) {
            continue;
        }
        let until = match h.end {
            End::Released => match h.release_reported {
                None => format!("released it at t={}", h.until),
                Some(told) => format!(
                    "released it: the release waited for a row lock and took effect when it committed, between t={} and t={told}, when its reply came",
                    h.until
                ),
            },
            End::Expired => format!(
                "held it until it expired at t={} by the database clock",
                h.until
            ),
            End::Open => format!("still held it (valid until t={})", h.until),
        };
        let clock = h.local_clock.words();
        let own = match (h.local_until, h.end) {
            (None, _) => String::new(),
            (Some(l), End::Released) => {
                format!("; by its {clock} it could have counted on it until t={l}, had it kept it")
            }
            (Some(l), _) => format!("; by its {clock} it counted on the lease until t={l}"),
        };
        told.push((
            h.from,
            format!(
                "- t={}: {} acquired the lease with token {} and {until}{own}.",
                h.from, h.holder, h.token
            ),
        ));
    }
    // A stepped wall clock moves every deadline compared with it: say where, and by how much.
    for m in &story.moments {
        if let Mark::ClockStep(h, from, to) = &m.mark {
            let (way, by) = match to.0 < from.0 {
                true => ("back", from.0 - to.0),
                false => ("forward", to.0 - from.0),
            };
            told.push((
                m.at,
                format!(
                    "- t={}: {h}'s wall clock was stepped {way} {by} ms (it read {from}, then {to}): a deadline compared with the wall clock moved {by} ms with it; its monotonic clock ran on.",
                    m.at
                ),
            ));
        }
    }
    let focus_writer = key::focus(story).map(|w| w.holder.clone());
    for p in &story.pauses {
        let during: Vec<String> = story
            .holdings
            .iter()
            .filter(|h| {
                h.holder == p.holder
                    && h.end == End::Expired
                    && p.from <= h.until
                    && h.until <= p.to
            })
            .map(|h| {
                format!(
                    "token {} expired at t={} while it was paused",
                    h.token, h.until
                )
            })
            .collect();
        let taken: Vec<String> = story
            .holdings
            .iter()
            .filter(|h| h.holder != p.holder && p.from <= h.from && h.from <= p.to)
            .map(|h| {
                format!(
                    "{} took over with token {} at t={}",
                    h.holder, h.token, h.from
                )
            })
            .collect();
        if during.is_empty() && taken.is_empty() && focus_writer.as_ref() != Some(&p.holder) {
            continue;
        }
        if until.is_some_and(|t| p.from > t) || (p.resumed && p.to == p.from) {
            continue;
        }
        let spot = match (&p.before_commit, p.after_check) {
            (Some(w), _) => {
                // Whether the statement went out while its lease was still held.
                let lease = story
                    .holdings
                    .iter()
                    .find(|h| h.holder == p.holder && h.token == w.token);
                let when = match lease {
                    Some(h) if w.sent <= h.until => {
                        format!(" while its lease was valid (until t={})", h.until)
                    }
                    Some(h) => format!(" after its lease ended at t={}", h.until),
                    None => String::new(),
                };
                format!(
                    " before its commit — its {} with token {} already sent at t={}{when} —",
                    w.last, w.token, w.sent
                )
            }
            (None, Some(d)) => format!(
                ", right after its local check passed (deadline t={d} on its own clock) and before its write,"
            ),
            (None, None) => ", with no write of its in flight,".to_string(),
        };
        let mut line = if p.resumed {
            format!(
                "- t={}: {} was paused{spot} for {} ms, until t={}",
                p.from,
                p.holder,
                p.to.since(p.from),
                p.to
            )
        } else {
            format!(
                "- t={}: {} was paused{spot} and never resumed",
                p.from, p.holder
            )
        };
        for x in during.iter().chain(taken.iter()) {
            let _ = write!(line, "; {x}");
        }
        if let Some(c) = p.before_commit.as_ref().and_then(|w| w.commit) {
            let _ = write!(
                line,
                "; its commit went out at t={c}: a write sent in time can still land late"
            );
        }
        told.push((p.from, format!("{line}.")));
    }
    if let Some(w) = key::focus(story) {
        told.push((w.at, focus_lines(story, w)));
    }
    // Stable: at one instant, the order the history has.
    told.sort_by_key(|(t, _)| *t);
    for (_, line) in told {
        let _ = writeln!(s, "{line}");
    }
    if key::focus(story).is_none() {
        let _ = writeln!(
            s,
            "- No holder wrote with a token older than one already granted: no write was stale."
        );
    }
    verdict(story, &mut s);
    s
}

/// The stale write the story is about, and what the resource did with it (two lines).
fn focus_lines(story: &Story, w: &Write) -> String {
    let newer = story
        .holdings
        .iter()
        .filter(|h| h.token > w.token && h.seq < w.seq)
        .min_by_key(|h| h.token);
    let overtaken = story
        .writes
        .iter()
        .filter(|x| x.verdict == Verdict::Accepted && x.token > w.token && x.seq < w.seq)
        .min_by_key(|x| x.seq);
    let why_stale = match (newer, overtaken) {
        (Some(h), _) => format!(
            ", but {} had been granted token {} at t={}",
            h.holder, h.token, h.from
        ),
        (None, Some(x)) => format!(
            ", but {}'s write with token {} had already been accepted (event #{})",
            x.holder, x.token, x.seq
        ),
        (None, None) => String::new(),
    };
    let verdict = match w.verdict {
        Verdict::Rejected => {
            "The resource REJECTED it: the floor already held a higher token, so the fence's condition matched no row and the write rolled back.".to_string()
        }
        Verdict::Accepted => format!("The resource ACCEPTED it: {}.", why_accepted(story, w)),
        Verdict::Maybe => "Its commit may or may not have happened (the connection was lost during commit).".to_string(),
    };
    // Told its lease was lost, and wrote anyway: the write was already under way.
    let told_lost = story
        .moments
        .iter()
        .filter(|m| m.seq < w.seq)
        .filter_map(|m| match &m.mark {
            Mark::Lost(h) if *h == w.holder => Some((m.at, "noted its lease lost".to_string())),
            Mark::RenewRefused(h, t) if *h == w.holder && *t == w.token => {
                Some((m.at, format!("had its renew of token {t} refused")))
            }
            _ => None,
        })
        .rfind(|(at, _)| {
            story
                .holdings
                .iter()
                .any(|h| h.holder == w.holder && h.token == w.token && h.from <= *at)
        })
        .map_or(String::new(), |(at, what)| {
            format!(
                "\n  At t={at} {} {what}, yet the write went on: a holder checks that before it starts a write, not while one is under way — statements already sent go on to their commit.",
                w.holder
            )
        });
    format!(
        "- t={}: {} wrote {} with token {}{why_stale}: the write was stale (event #{}).\n  {verdict}{told_lost}",
        w.at, w.holder, w.target, w.token, w.seq
    )
}

/// Every violation, grouped by check: the first in full, the others by their events, so a
/// run that broke twice says so.
fn verdict(story: &Story, s: &mut String) {
    if let (true, Some(why)) = (story.violations.is_empty(), &story.liveness) {
        let _ = writeln!(
            s,
            "Verdict: I1, I2, I3, acceptance and final all hold, but liveness broke: {why}"
        );
    } else if story.violations.is_empty() {
        let _ = writeln!(s, "Verdict: I1, I2, I3, acceptance and final all hold.");
    } else {
        let _ = writeln!(s, "Verdict:");
        let mut seen: Vec<Check> = Vec::new();
        let mut fixes: Vec<String> = Vec::new();
        for v in &story.violations {
            if seen.contains(&v.check) {
                continue;
            }
            seen.push(v.check);
            let _ = writeln!(s, "- {} broke: {}", v.check, v.message);
            // Each further violation of the check says what it is, not only where: the same
            // check can break between two reads of the floor and again between two writes.
            let more: Vec<_> = story
                .violations
                .iter()
                .filter(|x| x.check == v.check)
                .skip(1)
                .collect();
            for x in more.iter().take(MORE_SHOWN) {
                let _ = writeln!(s, "  also: {}", x.message);
            }
            if more.len() > MORE_SHOWN {
                let rest = more.len() - MORE_SHOWN;
                let _ = writeln!(
                    s,
                    "  and {rest} more time{} of the same check",
                    if rest == 1 { "" } else { "s" },
                );
            }
            let fix = safeguard(story, v.check);
            if !fixes.contains(&fix) {
                fixes.push(fix);
            }
        }
        if let Some(why) = &story.liveness {
            let _ = writeln!(s, "- liveness broke: {why}");
        }
        for fix in fixes {
            let _ = writeln!(s, "What would have stopped it: {fix}.");
        }
    }
}
