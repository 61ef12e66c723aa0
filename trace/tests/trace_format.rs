//! Trace format v1: canonical round trip and errors that name file, line and field.

use leaselab_model::prelude::*;
use leaselab_trace::Trace;

fn sample() -> Trace {
    let mut w = World::new(Config::default());
    w.run("holder-a", Op::acquire("holder-a", 100));
    w.run("holder-a", Op::write("summary", "with space = and %", 1));
    w.run_on("holder-b", "s1", Op::begin(DbName::Res));
    w.run_on("holder-b", "s1", Op::fence(2));
    w.run("holder-a", Op::write("summary", "x", 3));
    w.run("holder-a", Op::release("holder-a", 1));
    w.run("lab", Op::read_lease());
    w.run("lab", Op::read_part("detail"));
    w.run("admin", Op::Crash { db: DbName::Res });
    w.run("holder-a", Op::await_(DbName::Res));
    // One of every remaining kind, so the round trip covers the whole grammar.
    w.run("admin", Op::Restart { db: DbName::Res });
    w.run("holder-a", Op::publish("k", "v", 1));
    w.run("lab", Op::ReadPublish { key: "k".into() });
    w.run("lab", Op::count("holder-a", AttemptOutcome::Rejected));
    w.run("lab", Op::read_floor());
    w.run("holder-a", Op::Now { db: DbName::Lease });
    w.run("holder-a", Op::renew("holder-a", 1, 100));
    w.run("holder-a", Op::check(Millis(5)));
    w.run("holder-a", Op::Pause);
    w.run("holder-a", Op::Resume);
    w.run("holder-a", Op::Lost);
    w.run("holder-a", Op::ClockStep { from: Millis(7) });
    w.run("holder-a", Op::Disconnect { db: DbName::Lease });
    w.run("holder-a", Op::upsert("summary", "u", 4));
    w.run("holder-a", Op::rollback(DbName::Res));
    w.run("holder-a", Op::commit(DbName::Res));
    let mut t = Trace::new("sample", w.model.config().clone(), w.history);
    t.title = "a sample: all kinds".into();
    t.seed = 42;
    t.faults = vec!["pause actor=holder-a at=check".into()];
    t.expect = vec![leaselab_checkers::Check::I3];
    t
}

#[test]
fn write_read_write_is_byte_identical() {
    let t = sample();
    let text = t.to_text();
    let back = Trace::parse(&text, "sample.trace").expect("parses");
    assert_eq!(back, t);
    assert_eq!(back.to_text(), text);
    assert!(text.contains("release lease=report-job holder=holder-a token=1 => released"));
    assert!(text.contains("lease holder=holder-a token=1 expires=-infinity"));
    assert!(text.contains("holder-a clock-step from=7 => ok"), "{text}");
}

fn err_of(text: &str) -> leaselab_trace::TextError {
    Trace::parse(text, "bad.trace").expect_err("must be rejected")
}

#[test]
fn malformed_input_names_file_line_and_field() {
    let good = sample().to_text();
    let cases: Vec<(String, usize, &str)> = vec![
        (
            good.replacen("leaselab-trace v1", "leaselab-trace v9", 1),
            1,
            "header",
        ),
        (good.replace("seed 42", "seed forty"), 4, "seed"),
        (good.replace("fence=scope", "fence=sideways"), 5, "fence"),
        (good.replace("expect I3", "expect I4"), 7, "expect"),
        (good.replace("ttl_ms=100 =>", "ttl_ms=abc =>"), 9, "ttl_ms"),
        (good.replace("2 t=0 local=0", "3 t=0 local=0"), 10, "seq"),
        (
            good.replace("=> granted token=1", "=> grunted token=1"),
            9,
            "outcome",
        ),
        (
            good.replace("holder-a acquire lease", "holder-a acquire bogus=1 lease"),
            9,
            "bogus",
        ),
        (good.replace(" => released", " -> released"), 14, "outcome"),
        (good.replace("\nend\n", "\n"), 34, "end"),
    ];
    for (text, line, field) in cases {
        let e = err_of(&text);
        assert_eq!((e.line, e.field.as_str()), (line, field), "{e}");
        assert!(
            e.to_string()
                .starts_with(&format!("bad.trace:{line}: field `{field}`")),
            "{e}"
        );
    }
}

#[test]
fn garbage_is_an_error_not_a_panic() {
    let head = "leaselab-trace v1\nname g\nseed 0\nconfig fence=scope lease_table=logged \
                renew_after_expiry=false publish=business-key client_expiry=monotonic \
                scopes=daily-report\nexpect ok\nevents\n";
    for (text, line, field) in [
        ("".to_string(), 1, "header"),
        ("\n".to_string(), 1, "header"),
        ("leaselab-trace v1\nevents\n1 t=x".to_string(), 2, "name"),
        (format!("{head}1 t=x\n"), 7, "outcome"),
        (format!("{head}1 t=0 local=0 a => ok\nend\n"), 7, "event"),
        ("\u{0}\u{ff}".to_string(), 1, "header"),
    ] {
        match Trace::parse(&text, "g.trace") {
            Ok(_) => panic!("{text:?} parsed as a trace"),
            Err(e) => {
                assert_eq!(e.file, "g.trace", "{text:?}");
                assert_eq!((e.line, e.field.as_str()), (line, field), "{text:?}: {e}");
            }
        }
    }
}

/// Whatever the parser accepts writes back byte for byte, so anything else is rejected — with
/// a message that says what a person should write instead.
#[test]
fn errors_say_what_to_write_instead() {
    let good = sample().to_text();
    let acquire = "holder-a acquire lease=report-job holder=holder-a ttl_ms=100 =>";
    let cases: Vec<(String, usize, &str, &str)> = vec![
        // The lock-delay has one spelling: absent when 0.
        (
            good.replace(
                "client_expiry=monotonic",
                "client_expiry=monotonic lock_delay_ms=0",
            ),
            5,
            "lock_delay_ms",
            "0 is the default: leave the field out",
        ),
        // Found by the fuzzer (fuzz/corpus/trace_parse/regression-no-field-name): the error
        // named an empty field.
        (
            good.replace(
                "renew_after_expiry=false",
                "renew_after_expiry=false => refused",
            ),
            5,
            "=>",
            "has no field name before `=`",
        ),
        (
            good.replace("content=with%20space", "content=with space"),
            10,
            "content",
            "values are percent-escaped",
        ),
        (
            good.replace("ttl_ms=100 =>", "ttl_ms=100  =>"),
            9,
            "ttl_ms",
            "two spaces at column",
        ),
        (
            good.replace("seed 42\n", "seed 42 \n"),
            4,
            "42",
            "a trailing space at column 8",
        ),
        (
            good.replace("ttl_ms=100 =>", "ttl_ms=100 ttl_ms=100 =>"),
            9,
            "ttl_ms",
            "duplicate field `ttl_ms`",
        ),
        (
            good.replace(
                "holder-b conn=s1 fence scope=daily-report",
                "holder-b fence conn=s1 scope=daily-report",
            ),
            12,
            "conn",
            "belongs right after the actor",
        ),
        (
            good.replace("events\n", ""),
            8,
            "events",
            "before the `events` line",
        ),
        (
            good.replace(
                "title a sample: all kinds\nseed 42\n",
                "seed 42\ntitle a sample: all kinds\n",
            ),
            4,
            "title",
            "`title` after `seed`",
        ),
        (
            good.replace("expect I3", "expect I3,I1"),
            7,
            "expect",
            "`I1` after `I3`: checks are listed in the order",
        ),
        (
            good.replace("expect I3", "expect I3,I3"),
            7,
            "expect",
            "listed twice",
        ),
        (
            good.replace("name sample\n", "name sample\nname again\n"),
            3,
            "name",
            "a second `name` line",
        ),
        (
            good.replace("name sample\n", ""),
            2,
            "name",
            "missing `name` line",
        ),
        (
            good.replace("ttl_ms=100 =>", "ttl_ms=0100 =>"),
            9,
            "ttl_ms",
            "as `100`",
        ),
        (
            good.replace("holder=holder-a ttl_ms=100", "holder=holder%2Da ttl_ms=100"),
            9,
            "holder",
            "escaped another way",
        ),
        (
            good.replace(
                acquire,
                "holder-a acquire holder=holder-a lease=report-job ttl_ms=100 =>",
            ),
            9,
            "holder",
            "fields out of order: this line's fields go lease holder ttl_ms",
        ),
        (good.replace("end\n", "end"), 35, "newline", "no newline"),
        (good.replace("\n", "\r\n"), 1, "line", "CR"),
        (
            good.replace("events\n", "events\n\n"),
            9,
            "line",
            "blank line",
        ),
        (
            good.replace("=> released", "=> released absent"),
            14,
            "outcome",
            "only floor, part, published and lease can be absent",
        ),
    ];
    for (text, line, field, says) in cases {
        let e = err_of(&text);
        assert_eq!((e.line, e.field.as_str()), (line, field), "{e}");
        assert!(e.message.contains(says), "{e}\n  should say: {says}");
    }
}

#[test]
fn a_lock_delay_is_written_only_when_set_and_reads_back() {
    let mut t = sample();
    assert!(!t.to_text().contains("lock_delay_ms"));
    t.config.lock_delay_ms = 1000;
    let text = t.to_text();
    assert!(
        text.contains("client_expiry=monotonic lock_delay_ms=1000 scopes="),
        "{text}"
    );
    let back = Trace::parse(&text, "x.trace").expect("parses");
    assert_eq!(back.config.lock_delay_ms, 1000);
    assert_eq!(back.to_text(), text);
}
