//! `leaselab check` from the outside: each negative control's shortest counterexample has its
//! known length, becomes the committed trace byte for byte (`traces/check-*.trace`, whose
//! title is the command that makes it), replays with the printed command, and is judged by the
//! History checkers as the search judged it; the scope fence is clean within a bound small
//! enough for `cargo test`, also for 3 holders with symmetry reduction; the Explorer serves its
//! status over HTTP. (`pg/tests/differential.rs` diffs every committed trace, these included,
//! on PostgreSQL.)

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{leaselab, root};

/// (committed trace, property found first, its shortest length, the checks both judge broken)
const CONTROLS: [(&str, &str, usize, &str); 5] = [
    ("check-off", "I3", 23, "I3, acceptance"),
    ("check-check-then-write", "I3", 21, "I3, acceptance"),
    ("check-row", "I3", 26, "I3, acceptance"),
    ("check-strict", "progress", 5, "none"),
    ("check-unlogged", "I1", 3, "I1, I2"),
];

#[test]
fn each_negative_control_has_its_shortest_counterexample_as_the_committed_trace() {
    for (name, prop, len, checks) in CONTROLS {
        let committed = root().join(format!("traces/{name}.trace"));
        let text = std::fs::read_to_string(&committed).expect("committed trace");
        // The title carries the command that made it.
        let title = text.lines().nth(2).expect("title line");
        let cmd = title
            .split(" of: ")
            .nth(1)
            .expect("a command in the title")
            .replace(" --trace-out FILE", "");
        let out_file = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}.trace"));
        let mut args: Vec<String> = cmd.split_whitespace().skip(1).map(String::from).collect();
        args.push("--trace-out".into());
        args.push(out_file.to_string_lossy().into());
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, out) = leaselab(&a);
        assert_eq!(code, 1, "{name}: a violation exits 1\n{out}");
        assert!(
            out.contains(&format!("shortest counterexample: {prop} in {len} steps")),
            "{name}:\n{out}"
        );
        // The time a holder was held back between its steps is said where the ticks are, and
        // the trace pauses it there: every view shades the span, and it resumes before its
        // next step.
        if name == "check-off" {
            for row in ["0 │ PAUSED for 1500 ms ┐", "1500 │ resumes after 1500 ms ┘"] {
                assert!(out.contains(row), "{name}: no `{row}`\n{out}");
            }
            assert!(
                out.contains("17  holder-a resume; holder-a begin db=res"),
                "{name}:\n{out}"
            );
            assert!(
                out.contains("15 ticks: t=0 → 1500 ms — holder-a took no step for these 1500 ms (held back by the search: paused at #3)  #3"),
                "{name}:\n{out}"
            );
        }
        // The search's depth (in states, at least the path's steps + 1) is told as such.
        let depth: usize = out
            .split("), depth ")
            .nth(1)
            .and_then(|r| r.split(',').next())
            .and_then(|d| d.parse().ok())
            .unwrap_or_else(|| panic!("{name}: no depth\n{out}"));
        assert!(depth > len, "{name}: depth {depth}, {len} steps\n{out}");
        assert!(
            out.contains(&format!(
                "(depth {depth} is the deepest state the search visited, the initial state being depth 1: a path of N steps ends at depth N + 1)"
            )),
            "{name}:\n{out}"
        );
        assert!(
            out.contains(&format!(
                "the search says broken: {checks}; the History checkers judge the trace: {checks}"
            )),
            "{name}:\n{out}"
        );
        assert!(
            out.contains("◀ #") || prop == "progress" || prop == "I1",
            "{name}: {out}"
        );
        steps_are_all_listed(
            name,
            &out,
            len,
            text.lines()
                .filter(|l| l.starts_with(|c: char| c.is_ascii_digit()))
                .count(),
        );
        assert_eq!(
            std::fs::read_to_string(&out_file).expect("written"),
            text,
            "{name}: the search no longer makes the committed trace"
        );
        // The printed replay command replays it, as printed.
        let replay = out
            .lines()
            .find_map(|l| l.trim().strip_prefix("replay: leaselab "))
            .expect("a replay command");
        let words: Vec<&str> = replay.split_whitespace().collect();
        let (rc, rout) = leaselab(&words);
        assert_eq!(rc, 0, "{name}: {rout}");
        for l in [
            "on PostgreSQL: leaselab diff ",
            "in plain words: leaselab explain ",
        ] {
            assert!(out.contains(l), "{name}: {out}");
        }
    }
}

/// The counterexample's listing numbers every one of its `len` actions exactly once, in order
/// (a run of ticks as `A–B`), and points at each of the trace's `events` once, in order.
fn steps_are_all_listed(name: &str, out: &str, len: usize, events: usize) {
    let head = format!("the {len} steps (a tick is ");
    let at = out
        .find(&head)
        .unwrap_or_else(|| panic!("{name}: no step list\n{out}"));
    let (mut next, mut next_event) = (1usize, 1usize);
    for l in out[at..].lines().skip(1) {
        let l = l.trim();
        let Some(num) = l.split_whitespace().next() else {
            break;
        };
        let (a, b) = match num.split_once('–') {
            Some((a, b)) => (a.parse::<usize>(), b.parse::<usize>()),
            None => (num.parse::<usize>(), num.parse::<usize>()),
        };
        let (Ok(a), Ok(b)) = (a, b) else { break };
        assert_eq!(a, next, "{name}: step {next} missing\n{out}");
        next = b + 1;
        if let Some((_, refs)) = l.rsplit_once("  #") {
            let (x, y) = refs.split_once("–#").unwrap_or((refs, refs));
            assert_eq!(x.parse::<usize>().ok(), Some(next_event), "{name}: {l}");
            next_event = y.parse::<usize>().expect("an event number") + 1;
        }
    }
    assert_eq!(
        next,
        len + 1,
        "{name}: the list stops before step {len}\n{out}"
    );
    assert_eq!(
        next_event,
        events + 1,
        "{name}: not every event is pointed at\n{out}"
    );
}

#[test]
fn the_strict_controls_counterexample_refuses_the_holders_own_second_part() {
    let text = std::fs::read_to_string(root().join("traces/check-strict.trace")).expect("trace");
    let fences: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(" fence scope="))
        .collect();
    assert_eq!(fences.len(), 2, "{text}");
    assert!(fences[0].contains("holder-a") && fences[0].ends_with("token=1 => passed"));
    assert!(fences[1].contains("holder-a") && fences[1].ends_with("token=1 => failed"));
}

#[test]
fn the_scope_fence_is_clean_within_the_test_bound_and_every_sometimes_is_reached() {
    let (code, out) = leaselab(&["check", "--fence", "scope", "--max-ticks", "17"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("no violation of I1, I2, I3, acceptance, progress within the bounds:"),
        "{out}"
    );
    assert!(
        out.contains("distinct states") && out.contains("states/s"),
        "{out}"
    );
    assert!(
        !out.contains("NEVER"),
        "a sometimes property was not reached:\n{out}"
    );
    for s in [
        "stale-write-attempted (in ",
        "takeover (in ",
        "pause-between-check-and-write (in ",
    ] {
        assert!(out.contains(s), "{out}");
    }
    let (code, out) = leaselab(&["check", "--fence", "scope", "--crash", "--max-ticks", "12"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("db-restart (in "), "{out}");
}

#[test]
fn three_holders_use_symmetry_reduction() {
    let (code, out) = leaselab(&["check", "--holders", "3", "--max-ticks", "6"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("holders=3") && out.contains("dfs") && out.contains("symmetry"),
        "{out}"
    );
    let (_, bfs) = leaselab(&["check", "--holders", "3", "--max-ticks", "6", "--bfs"]);
    let states = |o: &str| -> usize {
        o.split(" distinct states")
            .next()
            .and_then(|x| x.rsplit(' ').next())
            .and_then(|x| x.parse().ok())
            .unwrap_or_else(|| panic!("no state count in {o}"))
    };
    assert!(
        states(&out) * 3 < states(&bfs),
        "symmetry should cut the 3! orders: {} vs {}",
        states(&out),
        states(&bfs)
    );
}

fn get(port: u16, path: &str) -> Option<String> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    // A busy machine answers slowly; a minute is a bound on a hang, not a measure of speed.
    s.set_read_timeout(Some(Duration::from_secs(60))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut body = String::new();
    s.read_to_string(&mut body).ok()?;
    Some(body)
}

#[test]
fn the_explorer_serves_its_status_on_loopback() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let addr = format!("127.0.0.1:{port}");
    let mut child = Command::new(env!("CARGO_BIN_EXE_leaselab"))
        .args([
            "check",
            "--fence",
            "off",
            "--max-ticks",
            "17",
            "--serve",
            &addr,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("starts");
    // Before serving, it prints where the shortest counterexample opens.
    let mut out = child.stdout.take().expect("stdout");
    let mut printed = String::new();
    let mut buf = [0u8; 512];
    while !printed.contains("the last state says") {
        let n = out.read(&mut buf).expect("reads stdout");
        assert!(n > 0, "ended early: {printed}");
        printed.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    let path = printed
        .split(&format!("http://{addr}/#/steps"))
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("no path: {printed}"))
        .to_string();
    assert!(
        printed.contains("the shortest counterexample (I3, 23 steps) opens at"),
        "{printed}"
    );
    let start = Instant::now();
    let mut status = None;
    while start.elapsed() < Duration::from_secs(120) {
        if let Some(b) = get(port, "/.status") {
            if b.contains("200 OK") {
                status = Some(b);
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let index = get(port, "/");
    // The path is the Explorer's own: its last step, asked of the Explorer, is the broken
    // state, told with holder names and milliseconds.
    assert_eq!(path.matches('/').count(), 24, "init and 23 steps: {path}");
    let (before, last) = path.rsplit_once('/').expect("a last step");
    let steps = get(port, &format!("/.states{before}")).expect("the Explorer answers");
    let step = steps
        .split("{\"action\"")
        .find(|x| x.contains(&format!("\"actionIndex\":{last}}}")))
        .unwrap_or_else(|| panic!("no step {last}: {steps}"));
    assert!(
        step.contains("holder-a sends its COMMIT")
            && step.contains("summary: holder-a token 1")
            && step.contains("commit db=res")
            && step.contains("BROKEN: I3")
            && step.contains(" ms"),
        "{step}"
    );
    // Opened in a browser as a learner would: the page lists the 23 actions by holder and
    // shows the broken state.
    if let Some(browser) = common::chromium("check::explorer_in_a_browser") {
        let url = format!("http://{addr}/#/steps{path}");
        let dom = common::headless(
            browser,
            &url,
            "explorer",
            &["--virtual-time-budget=10000", "--dump-dom"],
        );
        assert!(
            dom.contains("holder-a timer") && dom.contains("tick (+100 ms)"),
            "the path of actions: {dom}"
        );
        assert!(dom.contains("BROKEN: I3"), "the broken state: {dom}");
    }
    let _ = child.kill();
    let _ = child.wait();
    let status = status.expect("the Explorer answered /.status");
    for field in ["\"done\"", "\"model\"", "\"state_count\"", "\"properties\""] {
        assert!(status.contains(field), "{field} missing: {status}");
    }
    assert!(
        status.contains("I3") && status.contains("takeover"),
        "{status}"
    );
    assert!(index.is_some_and(|b| b.contains("200 OK")), "the UI page");
}

#[test]
fn a_slow_holder_clock_is_searched_too_and_the_fence_still_holds() {
    let (code, out) = leaselab(&["check", "--skew", "1/2", "--max-ticks", "14"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("skew=1/2") && out.contains("no violation"),
        "{out}"
    );
    let (code, out) = leaselab(&["check", "--skew", "0/2"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("from 1 to 10"), "{out}");
}

/// The search stops at its first violation (the unlogged lease table's 3-step counterexample
/// within seconds, not after the whole space), and bounds that cannot reach an expiry say
/// that a clean result proves nothing about fencing.
#[test]
fn check_stops_at_the_first_violation_and_warns_about_bounds_that_prove_nothing() {
    let (code, out) = leaselab(&["check", "--lease-table", "unlogged", "--crash"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("shortest counterexample: I1 in 3 steps"),
        "{out}"
    );
    assert!(
        out.contains("the search stopped at its first violation"),
        "{out}"
    );
    // Decided early: a few thousand states, not the whole space of the bounds.
    let explored: u64 = out
        .split("VIOLATION I1")
        .nth(1)
        .and_then(|r| r.split(" distinct states").next())
        .and_then(|r| r.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no state count\n{out}"));
    assert!(explored < 1_000_000, "{explored} states\n{out}");
    let (code, out) = leaselab(&["check", "--max-ticks", "0"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("WARNING: no lease can expire within --max-ticks 0")
            && out.contains("--max-ticks 16 is the smallest bound"),
        "{out}"
    );
    let (code, out) = leaselab(&["check", "--max-states", "2000"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("cut at --max-states 2000"), "{out}");
    assert!(
        out.contains("NOT fully explored") && !out.contains("WARNING"),
        "{out}"
    );
}

/// `--serve` on an address that cannot be served: one line naming it, exit 2, no panic.
#[test]
fn serve_errors_are_one_clear_line() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let busy = taken.local_addr().expect("addr").to_string();
    for (addr, says) in [
        ("127.0.0.1:99999", "not an address to listen on"),
        ("not-an-address", "not an address to listen on"),
        (busy.as_str(), "cannot listen there"),
    ] {
        let (code, out, err) = common::leaselab_apart(&["check", "--serve", addr]);
        assert_eq!(code, Some(2), "{addr}: {out}{err}");
        assert_eq!(err.lines().count(), 1, "{addr}: {err}");
        assert!(err.contains(&format!("--serve {addr}: {says}")), "{err}");
    }
}

/// Ctrl-C during a long search: progress was shown on stderr, and what was found so far is
/// printed, marked as not a full exploration, with exit 5.
#[test]
fn ctrl_c_during_a_search_prints_the_partial_result() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_leaselab"))
        .args(["check", "--holders", "3", "--max-ticks", "30", "--bfs"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts");
    // Wait for the first progress line: the search is under way.
    let mut err = child.stderr.take().expect("stderr");
    let mut seen = Vec::new();
    let mut buf = [0u8; 256];
    while !String::from_utf8_lossy(&seen).contains(" queued), depth ") {
        let n = err.read(&mut buf).expect("reads stderr");
        assert!(
            n > 0,
            "ended before any progress: {}",
            String::from_utf8_lossy(&seen)
        );
        seen.extend_from_slice(&buf[..n]);
    }
    let st = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(st.success());
    let mut rest = String::new();
    err.read_to_string(&mut rest).expect("rest of stderr");
    let out = child.wait_with_output().expect("waits");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(5), "{stdout}{rest}");
    assert!(rest.contains("leaselab check: stopping"), "{rest}");
    assert!(
        stdout.contains("no violation found before the search was interrupted (Ctrl-C)")
            && stdout.contains("NOT fully explored"),
        "{stdout}"
    );
}
