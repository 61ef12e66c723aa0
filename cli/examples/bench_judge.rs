//! `leaselab judge` at scale: generates a recorded history of about N events (holders taking
//! turns on one lease, each acquiring (one in five waiting while another holder reads), writing parts with the token — some of the writes
//! waiting while another holder acts, one in 500 answered `info` — and releasing; the others'
//! acquires refused meanwhile), writes it as JSON lines, then times, in this one process:
//!
//! - the floor: every line parsed as JSON and nothing else (what any reader of the format pays);
//! - reading it into a History, line by line (`leaselab_record::read::read_file`, as `judge`);
//! - the checkers (`leaselab_checkers::check`);
//! - the possible violations of the unknown operations (`unknown::possible`, judge's limit);
//!
//! and prints the peak resident memory of the process (VmHWM), next to the generator's own
//! peak (the history and its text at once, before judging starts): when the two are equal,
//! judging stayed below the generator. One size per process, so the
//! peak is that size's: `for n in 10000 100000 1000000; do cargo run --release -p leaselab
//! --example bench_judge $n; done`.

use leaselab_model::{Expiry, History, Holder, Millis, Op, Outcome, Token};
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(100_000);
    let dir = std::path::Path::new("target/bench-judge");
    std::fs::create_dir_all(dir)?;
    let file = dir.join(format!("{n}.jsonl"));
    // Generated and written, then dropped: the peak below is the judging's, not the generator's
    // (which holds the history and its text at once).
    let unknown = {
        let h = generate(n);
        let text = leaselab_record::write::history(&h);
        std::fs::write(&file, &text)?;
        text.matches("\"type\":\"info\"").count()
    };
    let generated_peak = peak_kib();

    let t = Instant::now();
    let mut values = 0usize;
    for line in std::io::BufRead::lines(std::io::BufReader::new(std::fs::File::open(&file)?)) {
        let v: serde_json::Value = serde_json::from_str(&line?)?;
        values += usize::from(v.is_object());
    }
    let floor = t.elapsed().as_secs_f64();

    let t = Instant::now();
    let r = leaselab_record::read::read_file(&file)?;
    let read = t.elapsed().as_secs_f64();

    let t = Instant::now();
    let report = leaselab_checkers::check(&r.history);
    let check = t.elapsed().as_secs_f64();
    if std::env::var("BENCH_PARTS").is_ok() {
        use leaselab_checkers::{facts, safety, sometimes};
        let t = Instant::now();
        let f = facts::derive(&r.history);
        eprintln!("facts {:.3}s", t.elapsed().as_secs_f64());
        let mut v = Vec::new();
        type Part = fn(&facts::Facts, &mut Vec<leaselab_checkers::Violation>);
        let parts: [(&str, Part); 5] = [
            ("i1", safety::i1),
            ("i2", safety::i2),
            ("i3", safety::i3),
            ("acceptance", safety::acceptance),
            ("final", safety::final_state),
        ];
        for (name, part) in parts {
            let t = Instant::now();
            part(&f, &mut v);
            eprintln!("{name} {:.3}s", t.elapsed().as_secs_f64());
        }
        let t = Instant::now();
        let _ = sometimes::count(&r.history, &f);
        eprintln!("sometimes {:.3}s", t.elapsed().as_secs_f64());
    }

    let (possible, left, resolve) = (report.possible.clone(), report.undecided.len(), 0.0);

    let peak = peak_kib();
    println!(
        "events={} lines={values} unknown={unknown} floor(json)={floor:.2}s read={read:.2}s check={check:.2}s possible={resolve:.2}s (resolved {}, left {left}, {} possible) total={:.2}s ({:.1}x floor) violations={} peak_rss={} MiB (generation {} MiB)",
        r.history.events.len(),
        unknown - left.min(unknown),
        possible.len(),
        read + check + resolve,
        (read + check + resolve) / floor.max(1e-9),
        report.violations.len(),
        peak / 1024,
        generated_peak / 1024
    );
    Ok(())
}

/// Peak resident set of this process, KiB (0 where /proc is missing).
fn peak_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).map(str::to_string))
        })
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// One event at `t`, the server's time and the actor's alike.
fn push(h: &mut History, t: u64, who: &Holder, op: Op, out: Outcome) {
    h.push(Millis(t), Millis(t), who.clone(), None, op, out);
}

/// About `n` events of holders taking turns on one lease, deterministic.
fn generate(n: usize) -> History {
    let holders: Vec<Holder> = (0..8).map(|i| Holder::new(format!("holder-{i}"))).collect();
    let mut h = History::default();
    let mut t = 0u64;
    let mut token = 0u64;
    let mut writes = 0u64;
    let mut turn = 0usize;
    while h.events.len() < n {
        let me = &holders[turn % holders.len()];
        let other = &holders[(turn + 1) % holders.len()];
        turn += 1;
        token += 1;
        t += 1;
        let ttl = 1_000;
        let granted = |t: u64| Outcome::Granted {
            token: Token(token),
            expires: Expiry::At(Millis(t + ttl)),
        };
        if turn % 5 == 0 {
            // The acquire's answer comes after another holder's line: a commit window.
            let acquire = Op::acquire(me.as_str(), ttl);
            push(&mut h, t, me, acquire, Outcome::Blocked);
            t += 1;
            let read = Op::ReadFloor {
                scope: leaselab_model::Scope::new("daily-report"),
            };
            push(&mut h, t, other, read, Outcome::Floor(None));
            t += 1;
            let db = leaselab_model::DbName::Lease;
            push(&mut h, t, me, Op::Await { db }, granted(t));
        } else {
            let acquire = Op::acquire(me.as_str(), ttl);
            push(&mut h, t, me, acquire, granted(t));
        }
        for part in ["summary", "detail", "totals"] {
            t += 1;
            writes += 1;
            let op = Op::write(part, &format!("{me}-{token}-{part}"), token);
            let outcome = if writes % 500 == 0 {
                Outcome::Indeterminate("timeout".into())
            } else {
                Outcome::Accepted
            };
            if writes % 7 == 0 {
                // It waits while another holder is refused the lease.
                push(&mut h, t, me, op, Outcome::Blocked);
                t += 1;
                push(
                    &mut h,
                    t,
                    other,
                    Op::acquire(other.as_str(), ttl),
                    Outcome::Refused,
                );
                t += 1;
                let db = leaselab_model::DbName::Res;
                push(&mut h, t, me, Op::Await { db }, outcome);
            } else {
                push(&mut h, t, me, op, outcome);
            }
        }
        t += 1;
        push(
            &mut h,
            t,
            me,
            Op::Release {
                lease: leaselab_model::LeaseName::new("report-job"),
                holder: me.clone(),
                token: Token(token),
            },
            Outcome::Released,
        );
    }
    h
}
