//! One self-contained HTML page of a story, for a browser with no network: the story as JSON,
//! and a small inline script that draws it as SVG — a lane per holder on a time axis, lease
//! intervals by the database clock and by the holder's own clock, pauses shaded, writes as
//! marks with token and verdict, the violating pair highlighted, and a legend. Nothing is
//! fetched: no fonts, no scripts, no images from elsewhere.

use crate::story::{End, Mark, Story, Verdict};
use leaselab_model::Millis;
use std::fmt::Write as _;

/// A JSON string literal that is also safe inside `<script>` (no `<`, `>` or `&` verbatim).
fn js(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '<' | '>' | '&' => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// Text for HTML element content.
fn text(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn data(story: &Story, title: &str, window: (u64, u64)) -> String {
    let lane = |h: &leaselab_model::Holder| {
        story
            .lanes
            .iter()
            .position(|l| l == h)
            .map_or(-1, |i| i as i64)
    };
    // A run that happens at one instant (the lab's resource-only cases, F6) is laid out by
    // event number instead of time: otherwise every mark sits on the same spot.
    let last_seq = story
        .writes
        .iter()
        .map(|w| w.seq)
        .chain(story.moments.iter().map(|m| m.seq))
        .chain(story.holdings.iter().map(|h| h.seq))
        .max()
        .unwrap_or(0);
    let ordinal = story.end.0 == 0 && last_seq > 1;
    let pos = |at: Millis, seq: u64| if ordinal { seq } else { at.0 };
    let (end, window) = if ordinal {
        (last_seq + 1, (0, last_seq + 1))
    } else {
        (story.end.0, window)
    };
    let mut d = String::from("{");
    let _ = write!(
        d,
        "\"title\":{},\"fence\":{},\"end\":{},\"from\":{},\"to\":{},\"axis\":{},\"verdict\":{},",
        js(title),
        js(story.config.fence.as_str()),
        end,
        window.0,
        window.1,
        js(if ordinal { "event" } else { "ms" }),
        js(&crate::timeline::verdict_line(story))
    );
    let lanes: Vec<String> = story.lanes.iter().map(|l| js(l.as_str())).collect();
    let _ = write!(d, "\"lanes\":[{}],", lanes.join(","));
    let hs: Vec<String> = story
        .holdings
        .iter()
        .map(|h| {
            format!(
                "{{\"lane\":{},\"token\":{},\"from\":{},\"until\":{},\"end\":{},\"local\":{},\"clock\":{}}}",
                lane(&h.holder),
                h.token.0,
                pos(h.from, h.seq),
                if ordinal { end } else { h.until.0 },
                js(match h.end {
                    End::Released => "released",
                    End::Expired => "expired",
                    End::Open => "open",
                }),
                h.local_until
                    .filter(|_| !ordinal)
                    .map_or("null".to_string(), |x| x.0.to_string()),
                js(h.local_clock.words())
            )
        })
        .collect();
    let _ = write!(d, "\"holdings\":[{}],", hs.join(","));
    let ps: Vec<String> = story
        .pauses
        .iter()
        .map(|p| {
            let spot = match &p.before_commit {
                Some(w) => format!(
                    " before commit ({} with token {} sent at t={})",
                    w.last, w.token, w.sent
                ),
                None if p.after_check.is_some() => " after the local check".to_string(),
                None => String::new(),
            };
            // The statement already sent before the pause, drawn where it was sent: inside
            // the lease, for a write that was on time and committed late.
            let sent = p.before_commit.as_ref().map_or("null".to_string(), |w| {
                format!(
                    "{{\"at\":{},\"label\":\"{} sent\",\"tip\":{}}}",
                    pos(w.sent, w.seq),
                    w.last,
                    js(&format!(
                        "{}'s {} with token {} sent at t={}; its commit waited for the pause",
                        p.holder, w.last, w.token.0, w.sent.0
                    ))
                )
            });
            format!(
                "{{\"lane\":{},\"spot\":\"{spot}\",\"sent\":{sent},\"from\":{},\"to\":{}}}",
                lane(&p.holder),
                pos(p.from, p.seqs.0),
                if ordinal && p.seqs.1 == 0 {
                    end
                } else {
                    pos(p.to, p.seqs.1)
                }
            )
        })
        .collect();
    let _ = write!(d, "\"pauses\":[{}],", ps.join(","));
    let ws: Vec<String> = story
        .writes
        .iter()
        .map(|w| {
            format!(
                "{{\"lane\":{},\"token\":{},\"target\":{},\"at\":{},\"seq\":{},\"verdict\":{},\"stale\":{},\"violating\":{}}}",
                lane(&w.holder),
                w.token.0,
                js(&w.target),
                pos(w.at, w.seq),
                w.seq,
                js(match w.verdict {
                    Verdict::Accepted => "accepted",
                    Verdict::Rejected => "rejected",
                    Verdict::Maybe => "maybe",
                }),
                w.stale,
                w.violating
            )
        })
        .collect();
    let _ = write!(d, "\"writes\":[{}],", ws.join(","));
    let cs: Vec<String> = story
        .moments
        .iter()
        .filter_map(|m| match &m.mark {
            Mark::CheckPassed(h, deadline, _, clock) => Some(format!(
                "{{\"lane\":{},\"at\":{},\"seq\":{},\"label\":\"check ✓\",\"tip\":{}}}",
                lane(h),
                pos(m.at, m.seq),
                m.seq,
                js(&format!(
                    "local check passed at {} ms: valid until {} ms by {h}'s {}",
                    m.at.0,
                    deadline.0,
                    clock.words()
                ))
            )),
            Mark::ClockStep(h, from, to) => Some(format!(
                "{{\"lane\":{},\"at\":{},\"seq\":{},\"label\":\"clock stepped\",\"tip\":{}}}",
                lane(h),
                pos(m.at, m.seq),
                m.seq,
                js(&format!(
                    "{h}'s wall clock is stepped from {} to {} ms (NTP); its monotonic clock runs on",
                    from.0, to.0
                ))
            )),
            Mark::FloorCheckPassed(h, token) => Some(format!(
                "{{\"lane\":{},\"at\":{},\"seq\":{},\"label\":\"reads floor ✓\",\"tip\":{}}}",
                lane(h),
                pos(m.at, m.seq),
                m.seq,
                js(&format!(
                    "{h} read the floor: token {} is not below it (a read, no lock)",
                    token.0
                ))
            )),
            Mark::Waits(h) => Some(format!(
                "{{\"lane\":{},\"at\":{},\"seq\":{},\"label\":\"waits…\",\"tip\":{}}}",
                lane(h),
                pos(m.at, m.seq),
                m.seq,
                js(&format!("{h}'s statement waits for a row lock"))
            )),
            Mark::HoldsFloor(h, token) => Some(format!(
                "{{\"lane\":{},\"at\":{},\"seq\":{},\"label\":\"fence ✓ locks floor\",\"tip\":{}}}",
                lane(h),
                pos(m.at, m.seq),
                m.seq,
                js(&format!(
                    "{h}'s fence with token {} passed: the floor row stays locked until its commit",
                    token.0
                ))
            )),
            _ => None,
        })
        .collect();
    let _ = write!(d, "\"checks\":[{}],", cs.join(","));
    let ms: Vec<String> = story
        .moments
        .iter()
        .filter_map(|m| {
            let t = match &m.mark {
                Mark::Crash(db) => format!("{} db crash", db.as_str()),
                Mark::Restart(db) => format!("{} db restart", db.as_str()),
                Mark::Lost(h) => format!("{h}: lease lost"),
                Mark::Floor(t, None) => format!("floor {}", t.0),
                Mark::Floor(t, Some(high)) => format!("floor back to {} (was {})", t.0, high.0),
                _ => return None,
            };
            Some(format!(
                "{{\"at\":{},\"text\":{}}}",
                pos(m.at, m.seq),
                js(&t)
            ))
        })
        .collect();
    let _ = write!(d, "\"moments\":[{}]}}", ms.join(","));
    d
}

const STYLE: &str = r#"
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; }
h1 { font-size: 18px; margin: 0 0 4px; }
#verdict { margin: 4px 0 12px; font-weight: 600; }
#verdict.bad { color: #b00020; } #verdict.good { color: #1b5e20; }
svg text { font: 11px system-ui, sans-serif; }
.lane-name { font-weight: 600; font-size: 12px; }
.db-lease { fill: #4a78c2; } .local-lease { fill: #f0a030; }
.pause { fill: #888; opacity: 0.25; }
.mark.accepted circle { fill: #2e7d32; } .mark.rejected circle { fill: #fff; stroke: #555; stroke-width: 2; }
.mark.maybe circle { fill: #bbb; }
.mark.violating circle { stroke-width: 4; }
.mark.violating.stale circle { stroke: #d50000; }
.mark.violating.stale text { fill: #d50000; font-weight: 700; }
.mark.violating.newer circle { stroke: #1565c0; }
.mark.violating.newer text { fill: #1565c0; font-weight: 700; }
.check line { stroke: #2e7d32; stroke-width: 2; } .check text { fill: #2e7d32; }
.sent line { stroke: #555; stroke-width: 2; } .sent text { fill: #555; font-size: 10px; }
.instant line { stroke-width: 2; } .instant text { font-size: 10px; }
.instant.expiry line { stroke: #4a78c2; } .instant.expiry text { fill: #4a78c2; }
.instant.deadline line { stroke: #c77800; } .instant.deadline text { fill: #c77800; }
.moment { stroke: #6a1b9a; stroke-dasharray: 4 3; }
#legend span { display: inline-block; margin-right: 16px; }
.sw { display: inline-block; width: 14px; height: 10px; margin-right: 4px; vertical-align: middle; }
#violating-pair li { color: #b00020; }
"#;

const SCRIPT: &str = r#"
(function () {
  const d = JSON.parse(document.getElementById('story').textContent);
  const NS = 'http://www.w3.org/2000/svg';
  const left = 110, width = 900, laneH = 90, top = 30;
  // The window drawn: the whole run, or the span around the violating pair.
  const span = Math.max(d.to - d.from, 1) * 1.08;
  const x = t => left + ((t - d.from) / span) * width;
  const inside = t => t >= d.from && t <= d.to;
  const clipT = t => Math.max(d.from, Math.min(t, d.to));
  const svg = document.createElementNS(NS, 'svg');
  // Drawn in fixed user units, shown at the page's width (never wider than drawn): a narrow
  // window scales the picture down instead of scrolling it.
  const W = left + width + 120, H = top + d.lanes.length * laneH + 30;
  svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
  svg.setAttribute('width', '100%');
  svg.setAttribute('style', 'max-width: ' + W + 'px');
  // Attached first, so that labels can be measured as they are placed.
  document.getElementById('picture').appendChild(svg);
  const el = (name, attrs, parent, txt) => {
    const e = document.createElementNS(NS, name);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (txt !== undefined) e.textContent = txt;
    (parent || svg).appendChild(e);
    return e;
  };
  // Every label is placed where it covers no other label and no mark but its own (a lease's
  // bar, a deadline's tick, a write's dot): moved down a row at a time within its lane, or
  // left out (its mark keeps the tooltip) when no row is free. Labels are placed once every
  // mark is drawn, in the order they were asked for, so that a later mark is not covered by
  // an earlier label either — at any size the page is drawn at (`--whole` at 2×).
  const placed = [];
  const marks = [];
  // The violating pair's labels first: theirs are the ones that must get a place.
  const early = [], jobs = [];
  const overlaps = (a, b) => a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
  const box = e => { const b = e.getBBox(); return {x: b.x, y: b.y, width: b.width, height: b.height}; };
  const rounded = b => [b.x, b.y, b.width, b.height].map(Math.round).join(',');
  // A mark no label may cover; its index, for the label that belongs to it.
  const mark = e => {
    const b = box(e);
    e.setAttribute('data-mark', rounded(b));
    e.setAttribute('data-mark-id', marks.length);
    marks.push(b);
    return marks.length - 1;
  };
  const place = (t, rows, own, first) => (first ? early : jobs).push([t, rows, own]);
  const placeNow = (t, rows, own) => {
    const y0 = Number(t.getAttribute('y'));
    for (let r = 0; r < rows; r++) {
      t.setAttribute('y', y0 + r * 12);
      const b = box(t);
      if (!placed.some(p => overlaps(p, b)) && !marks.some((m, i) => i !== own && overlaps(m, b))) {
        placed.push(b);
        t.setAttribute('data-box', rounded(b));
        if (own !== undefined) t.setAttribute('data-own', own);
        return true;
      }
    }
    t.remove();
    return false;
  };
  // Axis ticks on round values: a step of 1, 2 or 5 times a power of ten, about ten of them.
  const raw = Math.max(d.to - d.from, 1) / 10, pow = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = Math.max([1, 2, 5, 10].map(m => m * pow).find(v => v >= raw), d.axis === 'event' ? 1 : 0);
  // The axis says which clock it is: the database's (holders' own clocks are drawn as their
  // deadlines, placed on it).
  place(el('text', {x: 4, y: top - 12, class: 'tick'}, null, d.axis === 'event' ? 'event' : 'db clock'), 1);
  for (let t = Math.ceil(d.from / step) * step; t <= d.to; t += step) {
    el('line', {x1: x(t), x2: x(t), y1: top - 8, y2: top + d.lanes.length * laneH, stroke: '#eee'});
    place(el('text', {x: x(t), y: top - 12, 'text-anchor': 'middle', class: 'tick'}, null, d.axis === 'event' ? '#' + t : t + ' ms'), 1);
  }
  const instant = (cls, lane, at, y, label, tip) => {
    const g = el('g', {class: 'instant ' + cls});
    const own = mark(el('line', {x1: x(at), x2: x(at), y1: y - 4, y2: y + 4}, g));
    place(el('text', {x: x(at) + 2, y: y + 13}, g, label), 2, own);
    el('title', {}, g, tip);
  };
  d.lanes.forEach((name, i) => {
    const y = top + i * laneH;
    el('line', {x1: left, x2: left + width, y1: y + laneH, y2: y + laneH, stroke: '#ccc'});
    place(el('text', {x: 4, y: y + 30, class: 'lane-name'}, null, name), 1);
  });
  d.pauses.forEach(p => {
    if (p.lane < 0 || p.to < d.from || p.from > d.to) return;
    const y = top + p.lane * laneH;
    const r = el('rect', {x: x(clipT(p.from)), y: y + 2, width: Math.max(x(clipT(p.to)) - x(clipT(p.from)), 1), height: laneH - 4, class: 'pause'});
    el('title', {}, r, 'paused' + p.spot + ' ' + p.from + '–' + p.to + ' ms');
    if (p.sent && inside(p.sent.at)) {
      const g = el('g', {class: 'sent'});
      const own = mark(el('line', {x1: x(p.sent.at), x2: x(p.sent.at), y1: y + 33, y2: y + 43}, g));
      place(el('text', {x: x(p.sent.at) + 2, y: y + 43}, g, p.sent.label), 2, own);
      el('title', {}, g, p.sent.tip);
    }
  });
  d.holdings.forEach(h => {
    if (h.lane < 0 || h.until < d.from || h.from > d.to) return;
    const y = top + h.lane * laneH;
    const from = clipT(h.from), until = clipT(h.until);
    const b = el('rect', {x: x(from), y: y + 10, width: Math.max(x(until) - x(from), 2), height: 12, class: 'db-lease'});
    el('title', {}, b, 'token ' + h.token + ' held ' + h.from + '–' + h.until + ' ms by the database clock (' + h.end + ')');
    const own = mark(b);
    const narrow = x(until) - x(from) < 56;
    place(el('text', {x: narrow ? x(until) + 3 : x(from) + 3, y: y + 20, fill: narrow ? '#4a78c2' : '#fff'}, null, 'token ' + h.token), 1, own);
    if (h.end === 'expired' && inside(h.until)) {
      instant('expiry', h.lane, h.until, y + 16, 'expires', 'token ' + h.token + ' expires at ' + h.until + ' ms by the database clock');
    }
    if (h.local !== null) {
      // The holder's own view ends at its deadline, or sooner when it released the lease.
      const local = clipT(h.end === 'released' ? Math.min(h.local, h.until) : h.local);
      const l = el('rect', {x: x(from), y: y + 25, width: Math.max(x(local) - x(from), 2), height: 5, class: 'local-lease'});
      mark(l);
      el('title', {}, l, 'token ' + h.token + ': valid until ' + h.local + ' ms by ' + d.lanes[h.lane] + "'s " + h.clock);
      if (inside(h.local) && !(h.end === 'released' && h.until < h.local)) {
        instant('deadline', h.lane, h.local, y + 27, 'deadline', 'token ' + h.token + ': the deadline ' + h.local + ' ms by ' + d.lanes[h.lane] + "'s " + h.clock);
      }
    }
  });
  d.moments.forEach(m => {
    if (!inside(m.at)) return;
    el('line', {x1: x(m.at), x2: x(m.at), y1: top, y2: top + d.lanes.length * laneH, class: 'moment'});
    place(el('text', {x: x(m.at) + 3, y: top + d.lanes.length * laneH + 14, fill: '#6a1b9a'}, null, m.text), 1);
  });
  d.checks.forEach(c => {
    if (c.lane < 0 || !inside(c.at)) return;
    const y = top + c.lane * laneH;
    const g = el('g', {class: 'check', 'data-seq': c.seq});
    const own = mark(el('line', {x1: x(c.at), x2: x(c.at), y1: y + 33, y2: y + 43}, g));
    place(el('text', {x: x(c.at) + 2, y: y + 43}, g, c.label), 1, own);
    el('title', {}, g, '#' + c.seq + ' ' + c.tip);
  });
  const pair = document.getElementById('violating-pair');
  // The violating writes first, so that theirs are the labels that get a place.
  const order = d.writes.map((w, n) => [w, n]).sort((a, b) => (b[0].violating - a[0].violating) || (a[1] - b[1]));
  order.forEach(([w, n]) => {
    if (w.violating) {
      const li = document.createElement('li');
      li.textContent = 'event #' + w.seq + ': ' + d.lanes[w.lane] + ' wrote ' + w.target + ' with token ' + w.token + (d.axis === 'event' ? '' : ' at ' + w.at + ' ms') + ' — ' + w.verdict;
      pair.appendChild(li);
    }
    if (w.lane < 0 || !inside(w.at)) return;
    const y = top + w.lane * laneH + 56;
    const role = w.violating ? (w.stale ? ' violating stale' : ' violating newer') : (w.stale ? ' stale' : '');
    const g = el('g', {class: 'mark ' + w.verdict + role, 'data-seq': w.seq});
    const own = mark(el('circle', {cx: x(w.at), cy: y, r: 5}, g));
    const sign = w.verdict === 'accepted' ? '✓' : (w.verdict === 'rejected' ? '✗' : '?');
    place(el('text', {x: x(w.at) + 8, y: y + 4}, g, 'token ' + w.token + ' ' + sign + (w.stale ? ' stale' : '')), 3, own, w.violating);
    el('title', {}, g, '#' + w.seq + ' write ' + w.target + ' token ' + w.token + ' ' + w.verdict + (d.axis === 'event' ? '' : ' at ' + w.at + ' ms'));
  });
  early.concat(jobs).forEach(([t, rows, own]) => placeNow(t, rows, own));
  const v = document.getElementById('verdict');
  v.textContent = d.verdict;
  v.className = d.verdict.startsWith('✗') ? 'bad' : 'good';
})();
"#;

/// The page for `story`, titled `title`.
pub fn render(story: &Story, title: &str) -> String {
    page(story, title, crate::key::window(story))
}

/// The page for `story` over the whole run, however long.
pub fn render_whole(story: &Story, title: &str) -> String {
    page(story, title, None)
}

fn page(story: &Story, title: &str, window: Option<(Millis, Millis)>) -> String {
    let shown = window.map_or((0, story.end.0), |(a, b)| (a.0, b.0));
    let crop = match window {
        Some((a, b)) => format!(
            "<div id=\"window\">showing t={}–{} ms of a run of {} ms, around the violating pair (the whole run: add --whole)</div>\n",
            a.0, b.0, story.end.0
        ),
        None => String::new(),
    };
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{}</h1>\n<div>fence: {}</div>\n<div id=\"verdict\"></div>\n{crop}<div id=\"picture\"></div>\n<div id=\"legend\"><span><i class=\"sw\" style=\"background:#4a78c2\"></i>lease held (database clock)</span><span><i class=\"sw\" style=\"background:#f0a030\"></i>lease valid (holder's own clock)</span><span><i class=\"sw\" style=\"background:#888;opacity:.35\"></i>paused</span><span style=\"color:#2e7d32\">● accepted write</span><span>○ rejected write</span><span style=\"color:#d50000\">◉ stale write (an older token, after a newer one)</span><span style=\"color:#1565c0\">◉ the newer write it overtook</span><span style=\"color:#2e7d32\">│ check ✓ local check passed</span><span style=\"color:#4a78c2\">│ expires (database clock)</span><span style=\"color:#c77800\">│ deadline (holder's own clock)</span><span style=\"color:#6a1b9a\">┆ a moment of the run: a crash, a lost lease, or \"floor N\" — the fence floor a read found (the highest token the resource's fence has let through; 0 before any)</span></div>\n<ul id=\"violating-pair\"></ul>\n<script type=\"application/json\" id=\"story\">{}</script>\n<script>{SCRIPT}</script>\n</body>\n</html>\n",
        text(title),
        text(title),
        text(&story.fence_label()),
        data(story, title, shown)
    );
    s
}
