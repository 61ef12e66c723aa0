//! Merging several processes' files: one clock orders them, each file keeps its own order, and
//! a tie goes to the file named first — so the same files always give the same history.

use leaselab_record::{merge::merge, read::parse};

const HEAD: &str = "{\"format\":\"leaselab-history\",\"version\":1}\n";

fn now(process: &str, invoke: u64, answer: u64) -> String {
    format!(
        "{{\"type\":\"invoke\",\"process\":\"{process}\",\"time\":{invoke},\"op\":\"now\",\"db\":\"lease\"}}\n\
         {{\"type\":\"ok\",\"process\":\"{process}\",\"time\":{answer},\"op\":\"now\",\"result\":\"ok\"}}\n"
    )
}

fn order(files: &[(&str, String)]) -> Vec<(String, u64, String)> {
    let parts = files
        .iter()
        .map(|(name, text)| parse(text, name).unwrap_or_else(|e| panic!("{e}")))
        .collect();
    let m = merge(parts).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(m.file_of.len(), m.history.events.len());
    m.history
        .events
        .iter()
        .map(|e| {
            let places = m.places(e.seq).join(" ");
            (e.actor.to_string(), e.at.0, places)
        })
        .collect()
}

#[test]
fn events_merge_by_server_time_each_file_in_its_own_order() {
    let a = format!("{HEAD}{}{}", now("a", 0, 10), now("a", 30, 30));
    let b = format!("{HEAD}{}{}", now("b", 5, 10), now("b", 20, 20));
    let got = order(&[("a.jsonl", a.clone()), ("b.jsonl", b.clone())]);
    let want = [
        ("a", 10, "a.jsonl:2 a.jsonl:3"),
        ("b", 10, "b.jsonl:2 b.jsonl:3"),
        ("b", 20, "b.jsonl:4 b.jsonl:5"),
        ("a", 30, "a.jsonl:4 a.jsonl:5"),
    ];
    let want: Vec<(String, u64, String)> = want
        .iter()
        .map(|(p, t, l)| (p.to_string(), *t, l.to_string()))
        .collect();
    assert_eq!(got, want);
    // Named the other way round, the tie at t=10 goes to b.
    let got = order(&[("b.jsonl", b), ("a.jsonl", a)]);
    assert_eq!(got[0].0, "b");
    assert_eq!(got[1].0, "a");
}

#[test]
fn a_file_whose_server_clock_goes_back_is_not_reordered() {
    // The recorder's clock goes on, the server time it records steps back (another server
    // answered): its second call is placed earlier than its first. Merging must not put the
    // second before the first. (The recorder's own clock going back is refused on reading.)
    let at = |time: u64, server: u64| {
        format!(
            "{{\"type\":\"invoke\",\"process\":\"a\",\"time\":{time},\"server_time\":{server},\"op\":\"now\",\"db\":\"lease\"}}\n\
             {{\"type\":\"ok\",\"process\":\"a\",\"time\":{time},\"server_time\":{server},\"op\":\"now\",\"result\":\"ok\"}}\n"
        )
    };
    let a = format!("{HEAD}{}{}", at(50, 50), at(51, 10));
    let b = format!("{HEAD}{}", now("b", 20, 20));
    let got = order(&[("a.jsonl", a), ("b.jsonl", b)]);
    let seen: Vec<(&str, u64)> = got.iter().map(|(p, t, _)| (p.as_str(), *t)).collect();
    assert_eq!(seen, [("b", 20), ("a", 50), ("a", 10)]);
    // The recorder's own clock going back is refused, naming the line.
    let back = format!("{HEAD}{}{}", now("a", 50, 50), now("a", 10, 10));
    let e = parse(&back, "a.jsonl").expect_err("clock back");
    assert_eq!((e.line, e.field.as_str()), (4, "time"), "{e}");
}

#[test]
fn a_connection_two_processes_use_is_an_error_naming_the_file_and_line() {
    let a = format!("{HEAD}{}", now("a", 0, 1));
    let b = format!(
        "{HEAD}{}{}",
        now("b", 0, 1),
        "{\"type\":\"invoke\",\"process\":\"b\",\"conn\":\"a\",\"time\":2,\"op\":\"now\",\"db\":\"lease\"}\n"
    );
    let parts = vec![
        parse(&a, "a.jsonl").expect("a"),
        parse(&b, "b.jsonl").expect("b"),
    ];
    let e = merge(parts).expect_err("shared connection");
    assert_eq!(
        (e.file.as_str(), e.line, e.field.as_str()),
        ("b.jsonl", 4, "conn")
    );
    assert!(
        e.message.contains("connection `a` is used by process `b`"),
        "{e}"
    );
}

#[test]
fn a_process_recorded_in_two_files_is_an_error_naming_both() {
    let a = format!("{HEAD}{}", now("a", 0, 1));
    let again = format!("{HEAD}{}{}", now("b", 0, 1), now("a", 2, 3));
    let parts = vec![
        parse(&a, "a.jsonl").expect("a"),
        parse(&again, "b.jsonl").expect("b"),
    ];
    let e = merge(parts).expect_err("one process, two files");
    assert_eq!(
        (e.file.as_str(), e.line, e.field.as_str()),
        ("b.jsonl", 4, "process")
    );
    assert!(
        e.message
            .contains("process `a` is also recorded in a.jsonl"),
        "{e}"
    );
}

/// Read for a merge, a call keeps its window even when answered on the next line, and at one
/// time an invoke goes before the answers: holder-c's release answered at t=194 and holder-a's
/// acquire answered at t=194 overlap in the merged history, whichever file is named first — the
/// server may have taken the release first, so no I1 violation is certain.
#[test]
fn calls_answered_at_the_same_time_in_two_files_overlap() {
    use leaselab_record::read::parse_for_merge;
    let c = format!(
        "{HEAD}{}{}{}{}{}{}",
        r#"{"type":"invoke","process":"holder-c","time":191,"op":"acquire","lease":"job","holder":"holder-c","ttl_ms":1500}"#.to_string() + "\n",
        r#"{"type":"ok","process":"holder-c","time":191,"op":"acquire","token":16,"expires":1691}"#.to_string() + "\n",
        r#"{"type":"invoke","process":"holder-c","conn":"c/res","time":192,"op":"write","scope":"s","part":"p","content":"x","token":16}"#.to_string() + "\n",
        r#"{"type":"ok","process":"holder-c","conn":"c/res","time":194,"op":"write"}"#.to_string() + "\n",
        r#"{"type":"invoke","process":"holder-c","time":194,"op":"release","lease":"job","holder":"holder-c","token":16}"#.to_string() + "\n",
        r#"{"type":"ok","process":"holder-c","time":194,"op":"release"}"#.to_string() + "\n",
    );
    let a = format!(
        "{HEAD}{}{}{}{}",
        r#"{"type":"invoke","process":"holder-a","time":194,"op":"acquire","lease":"job","holder":"holder-a","ttl_ms":1500}"#.to_string() + "\n",
        r#"{"type":"ok","process":"holder-a","time":194,"op":"acquire","token":17,"expires":1694}"#.to_string() + "\n",
        r#"{"type":"invoke","process":"holder-a","conn":"a/res","time":194,"op":"write","scope":"s","part":"p","content":"y","token":17}"#.to_string() + "\n",
        r#"{"type":"ok","process":"holder-a","conn":"a/res","time":195,"op":"write"}"#.to_string() + "\n",
    );
    for files in [
        [("a.jsonl", &a), ("c.jsonl", &c)],
        [("c.jsonl", &c), ("a.jsonl", &a)],
    ] {
        let parts = files
            .iter()
            .map(|(n, t)| parse_for_merge(t, n).unwrap_or_else(|e| panic!("{e}")))
            .collect();
        let m = merge(parts).unwrap_or_else(|e| panic!("{e}"));
        let r = leaselab_checkers::check(&m.history);
        assert!(r.violations.is_empty(), "{:?}", r.violations);
        // Read as files alone would read them, the same lines break I1 when a comes first.
        let parts = files
            .iter()
            .map(|(n, t)| parse(t, n).unwrap_or_else(|e| panic!("{e}")))
            .collect();
        let m = merge(parts).unwrap_or_else(|e| panic!("{e}"));
        let collapsed = leaselab_checkers::check(&m.history);
        if files[0].0 == "a.jsonl" {
            assert!(
                collapsed
                    .violations
                    .iter()
                    .any(|v| v.check == leaselab_checkers::Check::I1),
                "{:?}",
                collapsed.violations
            );
        }
    }
}

/// At one time, a file's second invoke (after an answer of its own) still goes before another
/// file's answers at that time: holder-b renews and then releases at t=200 while holder-a is
/// granted at t=200; named first, holder-a's grant must not be placed wholly before the release.
#[test]
fn a_second_invoke_at_one_time_goes_before_the_other_files_answers() {
    use leaselab_record::read::parse_for_merge;
    let line = |s: &str| format!("{s}\n");
    let b = format!(
        "{HEAD}{}{}{}{}{}{}",
        line(
            r#"{"type":"invoke","process":"holder-b","time":100,"op":"acquire","lease":"job","holder":"holder-b","ttl_ms":1500}"#
        ),
        line(
            r#"{"type":"ok","process":"holder-b","time":100,"op":"acquire","token":1,"expires":1600}"#
        ),
        line(
            r#"{"type":"invoke","process":"holder-b","time":200,"op":"renew","lease":"job","holder":"holder-b","token":1,"ttl_ms":1500}"#
        ),
        line(r#"{"type":"ok","process":"holder-b","time":200,"op":"renew","expires":1700}"#),
        line(
            r#"{"type":"invoke","process":"holder-b","time":200,"op":"release","lease":"job","holder":"holder-b","token":1}"#
        ),
        line(r#"{"type":"ok","process":"holder-b","time":200,"op":"release"}"#),
    );
    let a = format!(
        "{HEAD}{}{}",
        line(
            r#"{"type":"invoke","process":"holder-a","time":200,"op":"acquire","lease":"job","holder":"holder-a","ttl_ms":1500}"#
        ),
        line(
            r#"{"type":"ok","process":"holder-a","time":200,"op":"acquire","token":2,"expires":1700}"#
        ),
    );
    let parts = [("a.jsonl", &a), ("b.jsonl", &b)]
        .iter()
        .map(|(n, t)| parse_for_merge(t, n).unwrap_or_else(|e| panic!("{e}")))
        .collect();
    let m = merge(parts).unwrap_or_else(|e| panic!("{e}"));
    let r = leaselab_checkers::check(&m.history);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
}

/// Two files that each answer and then invoke within one millisecond cannot both be placed
/// right on a millisecond clock: holder-b writes, then releases at t=3996, while holder-a's
/// acquire — sent at 3994 — is answered at 3996 with the next token. Named first, holder-a's
/// answer goes before holder-b's release, and the grant reads as taken while the lease was
/// held (a false I1, seen in a live run on a loaded machine). The lines' `time_us` order them
/// as they happened: the release was sent before the grant was answered, and nothing is
/// certain — whichever file is named first.
#[test]
fn microseconds_order_two_files_within_one_millisecond() {
    use leaselab_record::read::parse_for_merge;
    let line = |s: String| format!("{s}\n");
    let at = |ms: u64, us: Option<u64>| match us {
        Some(us) => format!(r#""time":{ms},"time_us":{}"#, ms * 1000 + us),
        None => format!(r#""time":{ms}"#),
    };
    let files = |us: bool| {
        let t = |ms: u64, sub: u64| at(ms, us.then_some(sub));
        let b = [
            format!(
                r#"{{"type":"invoke","process":"holder-b",{},"op":"acquire","lease":"job","holder":"holder-b","ttl_ms":1500}}"#,
                t(3994, 100)
            ),
            format!(
                r#"{{"type":"ok","process":"holder-b",{},"op":"acquire","token":272,"expires":5494}}"#,
                t(3995, 50)
            ),
            format!(
                r#"{{"type":"invoke","process":"holder-b","conn":"b/res",{},"op":"write","scope":"s","part":"p","content":"x","token":272}}"#,
                t(3995, 60)
            ),
            format!(
                r#"{{"type":"ok","process":"holder-b","conn":"b/res",{},"op":"write"}}"#,
                t(3996, 100)
            ),
            format!(
                r#"{{"type":"invoke","process":"holder-b",{},"op":"release","lease":"job","holder":"holder-b","token":272}}"#,
                t(3996, 120)
            ),
            format!(
                r#"{{"type":"ok","process":"holder-b",{},"op":"release"}}"#,
                t(3996, 300)
            ),
        ];
        let a = [
            format!(
                r#"{{"type":"invoke","process":"holder-a",{},"op":"acquire","lease":"job","holder":"holder-a","ttl_ms":1500}}"#,
                t(3994, 200)
            ),
            format!(
                r#"{{"type":"ok","process":"holder-a",{},"op":"acquire","token":273,"expires":5496}}"#,
                t(3996, 500)
            ),
            format!(
                r#"{{"type":"invoke","process":"holder-a","conn":"a/res",{},"op":"write","scope":"s","part":"p","content":"y","token":273}}"#,
                t(3996, 510)
            ),
            format!(
                r#"{{"type":"ok","process":"holder-a","conn":"a/res",{},"op":"write"}}"#,
                t(3998, 0)
            ),
        ];
        (
            format!("{HEAD}{}", a.map(line).concat()),
            format!("{HEAD}{}", b.map(line).concat()),
        )
    };
    let judged = |a: &str, b: &str, a_first: bool| {
        let named = if a_first {
            [("a.jsonl", a), ("b.jsonl", b)]
        } else {
            [("b.jsonl", b), ("a.jsonl", a)]
        };
        let parts = named
            .iter()
            .map(|(n, t)| parse_for_merge(t, n).unwrap_or_else(|e| panic!("{e}")))
            .collect();
        let m = merge(parts).unwrap_or_else(|e| panic!("{e}"));
        leaselab_checkers::check(&m.history).violations
    };
    let (a, b) = files(false);
    let v = judged(&a, &b, true);
    assert!(
        v.iter().any(|v| v.check == leaselab_checkers::Check::I1),
        "a millisecond clock alone places the grant first: {v:?}"
    );
    let (a, b) = files(true);
    for a_first in [true, false] {
        let v = judged(&a, &b, a_first);
        assert!(v.is_empty(), "a first: {a_first}: {v:?}");
    }
}

/// `time_us` is the same clock reading as `time`: one outside its millisecond is refused,
/// naming the file, the line and the field.
#[test]
fn time_us_outside_its_millisecond_is_refused() {
    let text = format!(
        "{HEAD}{}\n",
        r#"{"type":"invoke","process":"a","time":12,"time_us":13001,"op":"now","db":"lease"}"#
    );
    let e = parse(&text, "r.jsonl").expect_err("refused");
    let e = e.to_string();
    assert!(e.starts_with("r.jsonl:2: field `time_us`:"), "{e}");
    assert!(e.contains("not within `time`'s millisecond 12"), "{e}");
}
