//! The pictures of a run, from the outside: `leaselab diagram` (timeline, Mermaid, HTML) and
//! `leaselab explain` on committed traces, the HTML page rendered by a real headless Chromium
//! (Debian's `chromium`, which `.ci/run` installs), and the timeline a sweep prints, including
//! the `leaselab diagram` command it prints (run as printed).

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::{chromium, headless, leaselab, root};

#[test]
fn timeline_of_f5_marks_the_violating_pair_in_at_most_12_lines() {
    let (code, out) = leaselab(&["diagram", "traces/F5.trace"]);
    assert_eq!(code, 0, "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines.len() <= 12, "{out}");
    assert!(
        lines[0].contains("holder-a") && lines[0].contains("holder-b"),
        "{out}"
    );
    let marked: Vec<&&str> = lines.iter().filter(|l| l.contains('◀')).collect();
    assert_eq!(marked.len(), 2, "the violating pair: {out}");
    assert!(
        marked[0].contains("#13") && marked[0].contains("token 2 ✓ accepted"),
        "{out}"
    );
    assert!(
        marked[1].contains("#17") && marked[1].contains("token 1 ✓ accepted STALE"),
        "{out}"
    );
    assert!(
        out.contains("PAUSED for 2000 ms") && out.contains("token 1 expires"),
        "{out}"
    );
    // The lesson's moment: the local check passed before the pause, then the holder's own
    // deadline and the database's expiry went by while it slept — each a labelled row, in
    // that order.
    let row = |needle: &str| {
        lines
            .iter()
            .position(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no `{needle}` row\n{out}"))
    };
    let (check, pause, deadline, expiry) = (
        row("3000 │ local check ✓ (deadline 4000)"),
        row("PAUSED for 2000 ms"),
        row("4000 │ token 1 deadline (own clock)"),
        row("4300 │ token 1 expires (db clock)"),
    );
    assert!(
        check < pause && pause < deadline && deadline < expiry,
        "{out}"
    );
    assert!(lines[lines.len() - 1].starts_with("✗ I3"), "{out}");
}

#[test]
fn every_committed_trace_draws_within_12_lines() {
    let mut n = 0;
    for dir in ["traces", "traces/golden"] {
        for e in std::fs::read_dir(root().join(dir)).expect("traces") {
            let p = e.expect("entry").path();
            if p.extension().is_none_or(|x| x != "trace") {
                continue;
            }
            let rel = p.strip_prefix(root()).unwrap_or(&p).display().to_string();
            let (code, out) = leaselab(&["diagram", &rel]);
            assert_eq!(code, 0, "{rel}: {out}");
            assert!(out.lines().count() <= 12, "{rel}: {out}");
            n += 1;
        }
    }
    assert!(n > 40, "{n} traces");
}

#[test]
fn mermaid_of_f5_is_a_sequence_diagram_with_the_stale_write_boxed() {
    let (code, out) = leaselab(&["diagram", "traces/F5.trace", "--mermaid"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.starts_with("sequenceDiagram\n"), "{out}");
    for want in [
        "participant H0 as holder-a",
        "participant H1 as holder-b",
        "L-->>H0: granted token 1",
        "L-->>H1: granted token 2",
        "Note over H0: t=3000 PAUSED (2000 ms)",
        "H0->>R: write summary token 1 (t=5000) STALE",
        // The lesson's instants: the check that passed, the holder's deadline, the expiry.
        "Note over H0: t=3000 local check passed (deadline 4000 by its own clock)",
        "Note over H0: t=4000 token 1 deadline passes (own clock)",
        "Note over L: t=4300 token 1 expires (db clock)",
    ] {
        assert!(out.contains(want), "missing `{want}`:\n{out}");
    }
    // The pair boxed apart, each box closed: the stale write red, the newer one blue, each
    // note saying which it is; no `;` (a Mermaid statement end) in any text.
    assert_eq!(out.matches("rect rgb(255, 205, 205)").count(), 1, "{out}");
    assert_eq!(out.matches("rect rgb(205, 222, 255)").count(), 1, "{out}");
    assert!(
        out.contains("violating (event 17): the STALE write: an older token after a newer one")
            && out.contains("violating (event 13): the newer write the stale one came after"),
        "{out}"
    );
    assert_eq!(out.matches("\n    end\n").count(), 2, "{out}");
    assert!(!out.contains(';'), "{out}");
}

#[test]
fn explain_f5_names_the_pause_the_stale_write_the_reason_and_the_fix() {
    let (code, out) = leaselab(&["explain", "traces/F5.trace"]);
    assert_eq!(code, 0, "{out}");
    for want in [
        "holder-a acquired the lease with token 1",
        "was paused, right after its local check passed (deadline t=4000 on its own clock) and before its write, for 2000 ms",
        "token 1 expired at t=4300 while it was paused",
        "holder-b took over with token 2 at t=4400",
        "holder-a wrote summary with token 1, but holder-b had been granted token 2 at t=4400: the write was stale (event #17)",
        "The resource ACCEPTED it: the resource checks no token.",
        "- I3 broke:",
        "What would have stopped it: the scope fence",
        // The knobs a question turns on, as the trace's own config line.
        "\nConfiguration: config fence=off lease_table=logged renew_after_expiry=false publish=business-key client_expiry=monotonic scopes=daily-report\n",
    ] {
        assert!(out.contains(want), "missing `{want}`:\n{out}");
    }
    let (_, f4) = leaselab(&["explain", "traces/F4.trace"]);
    assert!(f4.contains("The resource REJECTED it"), "{f4}");
    assert!(
        f4.contains("Verdict: I1, I2, I3, acceptance and final all hold."),
        "{f4}"
    );
}

#[test]
fn a_missing_trace_is_an_input_error_naming_the_file() {
    let (code, out) = leaselab(&["diagram", "traces/no-such.trace"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("traces/no-such.trace"), "{out}");
}

#[test]
fn html_of_f5_renders_in_chromium_with_the_stale_write_highlighted() {
    let (page, html) = html_of("F5");
    // Offline: nothing is fetched.
    for net in ["http://", "https://", "src=", "href=", "@import", "url("] {
        let hits: Vec<&str> = html
            .lines()
            .filter(|l| l.contains(net) && !l.contains("http://www.w3.org/2000/svg"))
            .collect();
        assert!(hits.is_empty(), "`{net}` in the page: {hits:?}");
    }
    // The marks are drawn by the page's script: the served text has none.
    assert!(
        !html.contains("class=\"mark"),
        "marks must come from the script"
    );
    let Some(browser) = chromium("pictures::html") else {
        return;
    };
    let dom = dom_of(browser, &page);
    assert!(dom.contains("<svg"), "no picture drawn:\n{dom}");
    // The violating pair, both accepted, told apart: the stale write and the newer one it
    // overtook, each with its own colour in the legend.
    assert!(
        dom.contains("<g class=\"mark accepted violating stale\" data-seq=\"17\">"),
        "{dom}"
    );
    assert!(
        dom.contains("<g class=\"mark accepted violating newer\" data-seq=\"13\">"),
        "{dom}"
    );
    for legend in [
        "color:#d50000\">◉ stale write",
        "color:#1565c0\">◉ the newer write it overtook",
        "color:#2e7d32\">● accepted write",
        "│ check ✓ local check passed",
        "│ expires (database clock)",
        "│ deadline (holder's own clock)",
        "\"floor N\" — the fence floor a read found",
    ] {
        assert!(dom.contains(legend), "legend `{legend}`: {dom}");
    }
    // The local check that passed, and both clocks' instants, drawn and labelled.
    assert!(
        dom.contains("<g class=\"check\" data-seq=\"10\">"),
        "the passed check (#10): {dom}"
    );
    assert!(dom.contains(">check ✓</text>"), "{dom}");
    assert!(
        dom.contains("<g class=\"instant expiry\">") && dom.contains(">expires</text>"),
        "{dom}"
    );
    assert!(
        dom.contains("<g class=\"instant deadline\">") && dom.contains(">deadline</text>"),
        "{dom}"
    );
    // The writes' labels say token, the axis says whose clock it is, and the picture scales
    // to the window instead of scrolling.
    assert!(
        dom.contains(">token 1 ✓ stale</text>") && dom.contains(">token 2 ✓</text>"),
        "{dom}"
    );
    assert!(
        dom.contains("class=\"tick\" data-box=") && dom.contains(">db clock</text>"),
        "{dom}"
    );
    assert!(
        dom.contains("viewBox=\"0 0 1130 ") && dom.contains("width=\"100%\""),
        "{dom}"
    );
    // Round axis ticks.
    for t in ["0 ms", "1000 ms", "2000 ms", "5000 ms"] {
        let drawn = dom
            .split("class=\"tick\"")
            .skip(1)
            .filter_map(|r| r.split("</text>").next())
            .any(|l| l.ends_with(&format!(">{t}")));
        assert!(drawn, "tick {t}: {dom}");
    }
    assert!(
        dom.contains(
            "<li>event #17: holder-a wrote summary with token 1 at 5000 ms — accepted</li>"
        ),
        "{dom}"
    );
    assert!(
        dom.contains(
            "<li>event #13: holder-b wrote summary with token 2 at 4400 ms — accepted</li>"
        ),
        "{dom}"
    );
    assert!(
        dom.contains("class=\"pause\""),
        "the pause is shaded: {dom}"
    );
    assert!(
        dom.contains("class=\"local-lease\""),
        "holder's own clock: {dom}"
    );
    assert!(dom.contains("id=\"verdict\" class=\"bad\""), "{dom}");
}

#[test]
fn a_sweep_prints_the_first_failures_timeline_and_a_diagram_command_that_works() {
    let out_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("pictures-sweep");
    let _ = std::fs::remove_dir_all(&out_dir);
    let (code, out) = leaselab(&[
        "sim",
        "--seeds",
        "0..10",
        "--fence",
        "off",
        "--out",
        &out_dir.to_string_lossy(),
    ]);
    assert_eq!(code, 1, "{out}");
    let start = out
        .find("picture of the first failure")
        .expect("picture printed");
    let block: Vec<&str> = out[start..]
        .lines()
        .skip(1)
        .take_while(|l| l.starts_with("    "))
        .collect();
    let timeline: Vec<&&str> = block
        .iter()
        .filter(|l| !l.contains("leaselab diagram"))
        .collect();
    assert!(timeline.len() <= 12 && timeline.len() >= 4, "{block:?}");
    assert!(timeline.iter().any(|l| l.contains('◀')), "{block:?}");
    let cmd = block
        .iter()
        .find_map(|l| l.trim().strip_prefix("leaselab "))
        .expect("a diagram command");
    // Run as printed, in a folder of its own (the page's name is relative).
    let words: Vec<&str> = cmd.split_whitespace().collect();
    let i = words.iter().position(|a| *a == "--html").expect("--html");
    let html = out_dir.join(words[i + 1]);
    let o = Command::new(env!("CARGO_BIN_EXE_leaselab"))
        .current_dir(&out_dir)
        .args(&words)
        .output()
        .expect("runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(std::fs::read_to_string(&html).is_ok_and(|h| h.contains("\"violating\":true")));
}

#[test]
fn replay_prints_the_recordings_timeline_when_a_trace_stops_reproducing() {
    let text = std::fs::read_to_string(root().join("traces/F5.trace")).expect("F5");
    let edited = text.replace("expect I3,acceptance,final", "expect ok");
    let p = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("F5-edited.trace");
    std::fs::write(&p, edited).expect("written");
    let (code, out) = leaselab(&["replay", &p.to_string_lossy()]);
    assert_eq!(code, 1, "a changed verdict: {out}");
    assert!(out.contains("timeline of the recording:"), "{out}");
    assert_eq!(out.matches('◀').count(), 2, "{out}");
}

#[test]
fn the_envelope_finds_the_boundary_unfenced_and_none_with_the_scope_fence() {
    let page = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("envelope.html");
    let (code, out) = leaselab(&[
        "envelope",
        "--fence",
        "off",
        "--margin",
        "--html",
        &page.to_string_lossy(),
    ]);
    assert_eq!(code, 0, "{out}");
    for row in [
        "pause    1499 ms",
        "skew     744705 ppm slow",
        "margin   margin ≤ 1254 ms",
    ] {
        assert!(out.contains(row), "missing `{row}`:\n{out}");
    }
    // The boundary run's picture draws the upsert holder-a sent while its lease was valid, and
    // the pause that held its commit back.
    let html = std::fs::read_to_string(&page).expect("page written");
    let sent: u64 = html
        .split("\"sent\":{\"at\":")
        .nth(1)
        .and_then(|r| r.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no statement sent before the pause: {html}"));
    assert!(html.contains("\"label\":\"upsert sent\""), "{html}");
    let token_2 = html
        .split("\"token\":2,\"from\":")
        .nth(1)
        .and_then(|r| {
            let from: u64 = r.split(',').next()?.parse().ok()?;
            let until: u64 = r
                .split("\"until\":")
                .nth(1)?
                .split(',')
                .next()?
                .parse()
                .ok()?;
            Some((from, until))
        })
        .unwrap_or_else(|| panic!("no holding of token 2: {html}"));
    assert!(
        token_2.0 <= sent && sent < token_2.1,
        "sent at {sent}, token 2 held {token_2:?}"
    );
    if let Some(browser) = chromium("pictures::envelope") {
        let dom = dom_of(browser, &page);
        assert!(dom.contains(">upsert sent</text>"), "{dom}");
    }
    let (code, out) = leaselab(&["envelope", "--fence", "scope", "--margin"]);
    assert_eq!(code, 0, "{out}");
    let rows: Vec<&str> = out
        .lines()
        .filter(|l| {
            ["pause ", "skew ", "margin "]
                .iter()
                .any(|p| l.starts_with(p))
        })
        .collect();
    assert_eq!(rows.len(), 3, "{out}");
    assert!(
        rows.iter().all(|r| r.contains("none (tried 13 sizes")),
        "{out}"
    );
    // Stale writes were sent and refused: the column says how many, the takeaway says why.
    let sent: Vec<u64> = rows
        .iter()
        .filter_map(|r| r.split_whitespace().rev().nth(1)?.parse().ok())
        .collect();
    assert!(sent.len() == 3 && sent.iter().all(|n| *n > 0), "{out}");
    assert!(
        out.lines()
            .last()
            .is_some_and(|l| l
                .starts_with("takeaway: with fence=scope no size tried let a stale write through")),
        "{out}"
    );
    // The lock-delay moves the pause boundary by the delay, no more.
    let (_, out) = leaselab(&["envelope", "--fence", "off", "--lock-delay-ms", "1000"]);
    assert!(out.contains("pause    2502 ms"), "{out}");
}

/// Writes the whole run of `sim --seed 3 --fence off` (1,264 steps, two violating pairs 43 s
/// apart) to `name` under the test's scratch folder.
fn seed_3_unfenced(name: &str) -> PathBuf {
    let trace = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let (code, out) = leaselab(&[
        "sim",
        "--seed",
        "3",
        "--fence",
        "off",
        "--quiet",
        "--trace-out",
        &trace.to_string_lossy(),
    ]);
    assert_eq!(code, 1, "{out}");
    trace
}

/// A whole simulation run with two violating pairs 43 s apart: the timeline marks the skipped
/// time with a gap row and shows both pairs; `explain` tells its bullets in time order and
/// names every violating event the picture marks.
#[test]
fn a_whole_run_shows_its_gaps_and_every_violation_in_time_order() {
    let trace = seed_3_unfenced("sim-3-off.trace");
    let t = trace.to_string_lossy();
    let (_, picture) = leaselab(&["diagram", &t]);
    let rows: Vec<(Option<u64>, &str)> = picture
        .lines()
        .skip(1)
        .filter(|l| l.contains('│'))
        .map(|l| (l.split('│').next().and_then(|t| t.trim().parse().ok()), l))
        .collect();
    let marked: Vec<u64> = picture
        .lines()
        .filter_map(|l| l.rsplit_once("◀ #").and_then(|(_, n)| n.parse().ok()))
        .collect();
    assert!(marked.len() >= 4, "two violating pairs:\n{picture}");
    let mut gaps = 0;
    for w in rows.windows(2) {
        match (w[0].0, w[1].0) {
            // The run is about 50 s long: a quarter of it is a gap.
            (Some(a), Some(b)) => assert!(
                b - a <= 15_000,
                "{} s skipped without a gap row:\n{picture}",
                (b - a) / 1000
            ),
            (Some(_), None) => {
                assert!(w[1].1.contains("s later"), "{picture}");
                gaps += 1;
            }
            _ => {}
        }
    }
    assert!(gaps >= 1, "{picture}");
    assert!(picture.lines().count() <= 12, "{picture}");
    // The Mermaid diagram says where it skips time, as the timeline does.
    let (_, mermaid) = leaselab(&["diagram", "--mermaid", &t]);
    assert!(
        mermaid.contains(" s later (what happened in between is not drawn)"),
        "{mermaid}"
    );
    let (_, words) = leaselab(&["explain", &t]);
    let times: Vec<u64> = words
        .lines()
        .filter_map(|l| l.strip_prefix("- t=")?.split(':').next()?.parse().ok())
        .collect();
    assert!(times.len() >= 3, "{words}");
    assert!(
        times.windows(2).all(|w| w[0] <= w[1]),
        "out of time order: {times:?}\n{words}"
    );
    for seq in marked {
        assert!(
            words.contains(&format!("#{seq}")),
            "#{seq} is not told:\n{words}"
        );
    }
    // The second violation of a check is told with what it is.
    assert!(words.contains("\n  also: scope daily-report: "), "{words}");
}

/// The HTML page of a whole simulation run (1,264 steps) is cropped to the span around its
/// first violating pair, both of whose marks are drawn inside the axis; every label was
/// measured by the browser, and none covers another or any mark but its own. `--whole` draws
/// the whole run, and keeps to that at twice the device scale too.
#[test]
fn html_of_a_long_run_is_cropped_to_the_violating_pair_with_no_label_overlapping() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let trace = seed_3_unfenced("sim-3-off-html.trace");
    let page = dir.join("sim-3-off.html");
    let (code, out) = leaselab(&[
        "diagram",
        &trace.to_string_lossy(),
        "--html",
        &page.to_string_lossy(),
    ]);
    assert_eq!(code, 0, "{out}");
    let html = std::fs::read_to_string(&page).expect("page");
    assert!(
        html.contains("<div id=\"window\">showing t="),
        "not cropped"
    );
    let whole = dir.join("sim-3-off-whole.html");
    let (code, _) = leaselab(&[
        "diagram",
        &trace.to_string_lossy(),
        "--html",
        &whole.to_string_lossy(),
        "--whole",
    ]);
    assert_eq!(code, 0);
    assert!(!std::fs::read_to_string(&whole)
        .expect("page")
        .contains("id=\"window\""));
    let Some(browser) = chromium("pictures::html") else {
        return;
    };
    let dom = dom_of(browser, &page);
    // The first violating pair (#40, the newer write; #50, the stale one), inside the axis.
    for (seq, role) in [(40, "newer"), (50, "stale")] {
        let at = dom
            .find(&format!(
                "class=\"mark accepted violating {role}\" data-seq=\"{seq}\""
            ))
            .unwrap_or_else(|| panic!("#{seq} not drawn:\n{dom}"));
        let cx: f64 = dom[at..]
            .split("cx=\"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .and_then(|v| v.parse().ok())
            .expect("a circle");
        assert!((110.0..=1010.0).contains(&cx), "#{seq} at x={cx}");
    }
    assert_labels_cover_nothing(&dom, "cropped");
    for scale in ["1", "2"] {
        let profile = format!("sim-3-off-whole-{scale}x");
        let dom = headless(
            browser,
            &whole.to_string_lossy(),
            &profile,
            &[
                "--dump-dom",
                "--window-size=1200,450",
                &format!("--force-device-scale-factor={scale}"),
            ],
        );
        assert_labels_cover_nothing(&dom, &format!("whole at {scale}x"));
    }
}

/// The boxes of a page's `attr` (`data-box`: a placed label; `data-mark`: a mark), each with
/// the value of `id` on the same element (`data-own`, `data-mark-id`) when it has one.
fn boxes_of(dom: &str, attr: &str, id: &str) -> Vec<([f64; 4], Option<String>)> {
    dom.split('<')
        .filter_map(|tag| {
            let tag = tag.split('>').next()?;
            let value = |k: &str| {
                tag.split(&format!(" {k}=\""))
                    .nth(1)
                    .and_then(|r| r.split('"').next())
                    .map(str::to_string)
            };
            let v: Vec<f64> = value(attr)?
                .split(',')
                .filter_map(|n| n.parse().ok())
                .collect();
            Some(([v[0], v[1], v[2], v[3]], value(id)))
        })
        .collect()
}

/// Every label of `dom` was placed, and none covers another label or a mark other than its
/// own (rounded to whole pixels: touching is not covering).
fn assert_labels_cover_nothing(dom: &str, what: &str) {
    let labels = boxes_of(dom, "data-box", "data-own");
    let marks = boxes_of(dom, "data-mark", "data-mark-id");
    assert!(labels.len() > 10 && marks.len() > 10, "{what}: {dom}");
    assert_eq!(
        labels.len(),
        dom.matches("<text").count(),
        "{what}: a label the page did not place"
    );
    let apart = |a: &[f64; 4], b: &[f64; 4]| {
        a[0] + a[2] <= b[0] + 1.0
            || b[0] + b[2] <= a[0] + 1.0
            || a[1] + a[3] <= b[1] + 1.0
            || b[1] + b[3] <= a[1] + 1.0
    };
    for (i, (a, own)) in labels.iter().enumerate() {
        for (b, _) in &labels[i + 1..] {
            assert!(apart(a, b), "{what}: labels overlap: {a:?} {b:?}");
        }
        for (m, id) in &marks {
            assert!(
                apart(a, m) || (own.is_some() && own == id),
                "{what}: a label covers a mark: {a:?} {m:?}"
            );
        }
    }
}

/// F6a is told by its race: both floor reads pass, B's write raises the floor to 2, A's stale
/// write is marked stale and the floor goes back to 1 — with no pause of zero length; F6b's
/// B-first order shows A's fence waiting and then refused as stale.
#[test]
fn f6_shows_the_floor_reads_the_regression_and_the_wait() {
    let (code, out) = leaselab(&["diagram", "traces/F6a.trace"]);
    assert_eq!(code, 0, "{out}");
    let order = [
        "reads floor: token 1 ≥ it, passes",
        "reads floor: token 2 ≥ it, passes",
        "write summary token 2 ✓ accepted",
        "── floor is 2 ──",
        "write summary token 1 ✓ accepted STALE",
        "── floor is 1: it went back from 2 ──",
    ];
    let at: Vec<usize> = order
        .iter()
        .map(|n| out.find(n).unwrap_or_else(|| panic!("no `{n}`\n{out}")))
        .collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{out}");
    assert!(!out.contains("PAUSED for 0 ms"), "{out}");
    let (_, words) = leaselab(&["explain", "traces/F6a.trace"]);
    assert!(
        words.contains("but holder-b's write with token 2 had already been accepted (event #4)")
            && !words.contains("paused for 0 ms"),
        "{words}"
    );
    // A second violation of the same check says what it is, not only its events.
    assert!(
        words.contains("\n  also: ") && !words.contains("more time"),
        "{words}"
    );
    let (code, out) = leaselab(&["diagram", "traces/F6b-b-first.trace"]);
    assert_eq!(code, 0, "{out}");
    let wait = out.find("waits for a row lock").expect("the wait");
    let refused = out
        .find("fence token 1 ✗ rejected STALE")
        .expect("the refusal");
    assert!(wait < refused, "{out}");
    // Both orders: holder-a's lane on the left, and the uncommitted fence the other holder
    // waits on is drawn before the wait.
    for (trace, holds) in [
        (
            "traces/F6b-b-first.trace",
            "fence token 2 ✓, floor row locked",
        ),
        (
            "traces/F6b-a-first.trace",
            "fence token 1 ✓, floor row locked",
        ),
    ] {
        let (code, out) = leaselab(&["diagram", trace]);
        assert_eq!(code, 0, "{out}");
        let head = out.lines().next().unwrap_or_default();
        assert!(
            head.find("holder-a") < head.find("holder-b") && head.contains("holder-a"),
            "{trace}: {out}"
        );
        let held = out.find(holds).unwrap_or_else(|| panic!("{trace}: {out}"));
        assert!(
            held < out.find("waits for a row lock").unwrap_or(0),
            "{trace}: {out}"
        );
        let (_, mermaid) = leaselab(&["diagram", "--mermaid", trace]);
        assert!(
            mermaid.contains("passes: the floor row stays locked until its commit"),
            "{trace}: {mermaid}"
        );
    }
}

/// The DOM of `page` once its script has drawn it, in a Chromium profile named after the page.
fn dom_of(browser: &str, page: &Path) -> String {
    let stem = page
        .file_stem()
        .map_or("page".into(), |s| s.to_string_lossy().into_owned());
    headless(browser, &page.to_string_lossy(), &stem, &["--dump-dom"])
}

/// Where each pause landed, told: over `sim --seeds 0..50 --fence off`, every failing seed's
/// shrunk trace is explained with its pause's spot — after the local check, before a commit
/// with what was already sent, or with no write in flight — and a pause the shrunk setup puts
/// at the before-commit point is told as one, with its statement sent while the lease was
/// valid, and drawn as one.
#[test]
fn every_failing_seed_says_where_its_pause_landed() {
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("pause-spots");
    let _ = std::fs::remove_dir_all(&out);
    let o = out.display().to_string();
    let (code, printed) = leaselab(&["sim", "--seeds", "0..50", "--fence", "off", "--out", &o]);
    assert_eq!(code, 1, "{printed}");
    let mut before_commit = 0;
    let mut failing = 0;
    for line in printed
        .lines()
        .filter(|l| l.trim_start().starts_with("shrunk: "))
    {
        failing += 1;
        let file = line
            .trim_start()
            .strip_prefix("shrunk: ")
            .and_then(|r| r.split(' ').next())
            .expect("a file");
        let (code, told) = leaselab(&["explain", file]);
        assert_eq!(code, 0, "{told}");
        for paused in told.lines().filter(|l| l.contains(" was paused")) {
            assert!(
                paused.contains("right after its local check passed")
                    || paused.contains(" before its commit — its ")
                    || paused.contains("with no write of its in flight"),
                "{file}: {paused}"
            );
        }
        if line.contains("point=before-commit") {
            before_commit += 1;
            assert!(
                told.contains("was paused before its commit — its upsert with token")
                    && told.contains("while its lease was valid"),
                "{file}:\n{told}"
            );
            let (_, drawn) = leaselab(&["diagram", file]);
            assert!(drawn.contains("PAUSED before commit for "), "{drawn}");
        }
    }
    assert!(failing >= 3, "{printed}");
    assert!(
        before_commit >= 2,
        "{before_commit} shrunk pauses before a commit"
    );
}

/// `explain` of an unfenced seed whose paused holder was told its lease was lost and wrote
/// anyway says why (a holder checks before it starts a write, not during one); a lease
/// released early is not told as one the holder still counted on.
#[test]
fn explain_says_why_a_holder_told_its_lease_was_lost_still_wrote() {
    let trace = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("lost-still-wrote.trace");
    let t = trace.display().to_string();
    let (code, out) = leaselab(&["sim", "--seed", "3", "--fence", "off", "--trace-out", &t]);
    assert_eq!(code, 1, "{out}");
    let (code, told) = leaselab(&["explain", &t]);
    assert_eq!(code, 0, "{told}");
    assert!(
        told.contains("holder-a noted its lease lost, yet the write went on: a holder checks that before it starts a write, not while one is under way"),
        "{told}"
    );
    assert!(
        told.contains("released it at t=2805; by its own clock it could have counted on it until t=3540, had it kept it"),
        "{told}"
    );
    assert!(
        !told.contains("released it at t=2805; by its own clock it counted on"),
        "{told}"
    );
}

/// G3's clock step is drawn in every view: a Mermaid note where it happened, the HTML page's
/// mark with its tooltip, and each check and deadline naming the clock it read.
#[test]
fn g3s_clock_step_is_drawn_in_mermaid_and_html() {
    let (code, out) = leaselab(&["diagram", "--mermaid", "traces/G3.trace"]);
    assert_eq!(code, 0, "{out}");
    for note in [
        "Note over H0: t=250 its wall clock is stepped from 250 to 50 (NTP); its monotonic clock runs on",
        "Note over H0: t=250 local check passed: its wall clock read 50, deadline 100",
        "Note over H0: t=250 local check: expired: its monotonic clock read 250, deadline 100",
        "Note over H0: t=300 token 1 deadline passes (wall clock)",
    ] {
        assert!(out.contains(note), "no `{note}`:\n{out}");
    }
    let (_, html) = html_of("G3");
    for part in [
        "\"label\":\"clock stepped\"",
        "holder-a's wall clock is stepped from 250 to 50 ms (NTP); its monotonic clock runs on",
        "\"clock\":\"wall clock\"",
    ] {
        assert!(html.contains(part), "no `{part}` in the page");
    }
}

/// `leaselab diagram traces/NAME.trace --html`: the page's path and text.
fn html_of(name: &str) -> (PathBuf, String) {
    let page = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}.html"));
    let (code, out) = leaselab(&[
        "diagram",
        &format!("traces/{name}.trace"),
        "--html",
        &page.to_string_lossy(),
    ]);
    assert_eq!(code, 0, "{out}");
    let html = std::fs::read_to_string(&page).expect("page written");
    (page, html)
}
