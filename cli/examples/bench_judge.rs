//! `leaselab judge` at scale: generates a recorded history of about N events (holders taking
//! turns on one lease, each acquiring (one in five waiting while another holder reads), writing parts with the token — some of the writes
//! waiting while another holder acts, one in 500 answered `info` — and releasing; the others'
//! acquires refused meanwhile), writes it as JSON lines, then times, in this one process:
//!
//! - the floor: every line parsed as JSON and nothing else (what any reader of the format pays);
//! - judging it as `judge` does: read as a stream and checked as it comes
//!   (`leaselab_record::read::stream_file` into `leaselab_checkers::Judging`, the exact verdict
//!   over the unknown operations included), never held whole;
//!
//! and prints the peak resident memory of the process (VmHWM) after it. With `--batch`, it then
//! also reads the file into a History (`read_file`) and checks that (`check`), the way `judge
//! --merge` and the library's callers do, and prints those times (the peak then is the
//! batch's). One size per process, so the peak is that size's: `for n in 10000 100000 1000000;
//! do cargo run --release -p leaselab --example bench_judge $n; done`.
//!
//! A second argument picks the history's shape (`default` above), each stressing one index of
//! the checkers: `read-heavy` (30 part and lease reads per holding), `many-parts` (every holding
//! writes parts of its own, each read back), `many-unknowns` (one write in three, one renewal
//! in four and one release in ten answered `info`; two renewals per holding), `many-leases`
//! (a thousand leases and scopes, turns interleaved), `settled-then-unknown` (the first half's
//! holdings renew once, answered `info`, and a lease read settles it; the second half's renew
//! once, answered `info`, and nothing settles it), `mix` (`many-unknowns` with six part and lease
//! reads per holding, each lease read settling the holding's unknown renewal when it can).
//! `--generate-only` writes the file and stops (for `/usr/bin/time leaselab judge` on it).

use leaselab_model::{Expiry, History, Holder, Millis, Op, Outcome, Token};
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n: usize = args
        .first()
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(100_000);
    let shape = match args.get(1).map(String::as_str) {
        None | Some("default") => Shape::Default,
        Some("read-heavy") => Shape::ReadHeavy,
        Some("many-parts") => Shape::ManyParts,
        Some("many-unknowns") => Shape::ManyUnknowns,
        Some("many-leases") => Shape::ManyLeases,
        Some("settled-then-unknown") => Shape::SettledThenUnknown,
        Some("mix") => Shape::Mix,
        Some(other) => {
            return Err(format!(
            "unknown shape `{other}`: default, read-heavy, many-parts, many-unknowns, many-leases, settled-then-unknown, mix"
        )
            .into())
        }
    };
    let dir = std::path::Path::new("target/bench-judge");
    std::fs::create_dir_all(dir)?;
    let name = args.get(1).map_or("default", String::as_str);
    let file = dir.join(format!("{name}-{n}.jsonl"));
    // Generated and written line by line, never held whole: the peak below is the judging's.
    let unknown = generate(n, shape, &file)?;
    let generated_peak = peak_kib();
    if args.iter().any(|a| a == "--generate-only") {
        println!("{}", file.display());
        return Ok(());
    }

    let t = Instant::now();
    let mut values = 0usize;
    for line in std::io::BufRead::lines(std::io::BufReader::new(std::fs::File::open(&file)?)) {
        let v: serde_json::Value = serde_json::from_str(&line?)?;
        values += usize::from(v.is_object());
    }
    let floor = t.elapsed().as_secs_f64();

    let t = Instant::now();
    let mut judging = leaselab_checkers::Judging::default();
    let mut events = 0u64;
    leaselab_record::read::stream_file(&file, &mut |e, _| {
        events += 1;
        judging.push(&e);
    })?;
    let report = judging.finish();
    let streamed = t.elapsed().as_secs_f64();
    let streamed_peak = peak_kib();
    println!(
        "events={events} lines={values} unknown={unknown} floor(json)={floor:.2}s judged(stream)={streamed:.2}s ({:.1}x floor) certain={} possible={} undecided={} settled={} peak_rss={} MiB (generation {} MiB)",
        streamed / floor.max(1e-9),
        report.violations.len(),
        report.possible.len(),
        report.undecided.len(),
        report.settled.len(),
        streamed_peak / 1024,
        generated_peak / 1024
    );
    if !args.iter().any(|a| a == "--batch") {
        return Ok(());
    }

    let t = Instant::now();
    let r = leaselab_record::read::read_file(&file)?;
    let read = t.elapsed().as_secs_f64();
    let read_peak = peak_kib();
    let t = Instant::now();
    let batch = leaselab_checkers::check(&r.history);
    let check = t.elapsed().as_secs_f64();
    assert_eq!(
        format!("{batch:?}"),
        format!("{report:?}"),
        "the stream and the whole history judge alike"
    );
    if std::env::var("BENCH_PARTS").is_ok() {
        use leaselab_checkers::{facts, safety, sometimes};
        let t = Instant::now();
        let f = facts::derive(&r.history);
        eprintln!("facts {:.3}s", t.elapsed().as_secs_f64());
        let mut v = Vec::new();
        type Part<'a> = Box<dyn Fn(&facts::Facts, &mut Vec<leaselab_checkers::Violation>) + 'a>;
        let parts: [(&str, Part); 5] = [
            ("i1", Box::new(safety::i1)),
            ("i2", Box::new(safety::i2)),
            ("i3", Box::new(safety::i3)),
            ("acceptance", Box::new(safety::acceptance)),
            ("final", Box::new(safety::final_state)),
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
    println!(
        "batch: read={read:.2}s check={check:.2}s total={:.2}s ({:.1}x floor) peak_rss={} MiB (after reading {} MiB)",
        read + check,
        (read + check) / floor.max(1e-9),
        peak_kib() / 1024,
        read_peak / 1024,
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

/// The kind of history to generate.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    Default,
    ReadHeavy,
    ManyParts,
    ManyUnknowns,
    ManyLeases,
    SettledThenUnknown,
    Mix,
}

/// Writes events as they are made: `write::Writer` turns each into its lines.
struct Out {
    h: History,
    w: leaselab_record::write::Writer,
    file: std::io::BufWriter<std::fs::File>,
    events: usize,
    info: usize,
    text: String,
}

impl Out {
    /// One event at `t`, the server's time and the actor's alike.
    fn push(&mut self, t: u64, who: &Holder, op: Op, out: Outcome) -> std::io::Result<()> {
        use std::io::Write;
        self.info += usize::from(matches!(out, Outcome::Indeterminate(_)));
        self.h
            .push(Millis(t), Millis(t), who.clone(), None, op, out);
        self.text.clear();
        if let Some(e) = self.h.events.pop() {
            self.w.event(&e, &mut self.text);
        }
        self.events += 1;
        self.file.write_all(self.text.as_bytes())
    }
}

/// About `n` events of holders taking turns, deterministic, written to `file`; returns how
/// many were answered `info`.
fn generate(n: usize, shape: Shape, file: &std::path::Path) -> std::io::Result<usize> {
    use leaselab_model::{DbName, LeaseName, Part, PartRow, Scope};
    let mut o = Out {
        h: History::default(),
        w: leaselab_record::write::Writer::default(),
        file: std::io::BufWriter::new(std::fs::File::create(file)?),
        events: 0,
        info: 0,
        text: String::new(),
    };
    {
        use std::io::Write;
        o.file
            .write_all(leaselab_record::write::header().as_bytes())?;
    }
    let holders: Vec<Holder> = (0..8).map(|i| Holder::new(format!("holder-{i}"))).collect();
    let leases = if shape == Shape::ManyLeases { 1000 } else { 1 };
    let mut tokens = vec![0u64; leases];
    let mut t = 0u64;
    let mut writes = 0u64;
    let mut renewals = 0u64;
    let mut turn = 0usize;
    while o.events < n {
        let l = turn % leases;
        let lease = LeaseName::new(if leases == 1 {
            "report-job".to_string()
        } else {
            format!("job-{l}")
        });
        let scope = Scope::new(if leases == 1 {
            "daily-report".to_string()
        } else {
            format!("report-{l}")
        });
        let me = &holders[(turn / leases) % holders.len()];
        let other = &holders[(turn / leases + 1) % holders.len()];
        turn += 1;
        tokens[l] += 1;
        let token = tokens[l];
        t += 1;
        let ttl = 1_000_000;
        let granted = |t: u64| Outcome::Granted {
            token: Token(token),
            expires: Expiry::At(Millis(t + ttl)),
        };
        let acquire = Op::Acquire {
            lease: lease.clone(),
            holder: me.clone(),
            ttl_ms: ttl,
        };
        if turn % 5 == 0 {
            // The acquire's answer comes after another holder's line: a commit window.
            o.push(t, me, acquire, Outcome::Blocked)?;
            t += 1;
            let read = Op::ReadFloor {
                scope: scope.clone(),
            };
            o.push(t, other, read, Outcome::Floor(None))?;
            t += 1;
            o.push(t, me, Op::Await { db: DbName::Lease }, granted(t))?;
        } else {
            o.push(t, me, acquire, granted(t))?;
        }
        let parts: Vec<Part> = match shape {
            Shape::ManyParts => (0..3)
                .map(|k| Part::new(format!("part-{token}-{k}")))
                .collect(),
            _ => ["summary", "detail", "totals"].map(Part::new).to_vec(),
        };
        let mut rows = Vec::new();
        for part in &parts {
            t += 1;
            writes += 1;
            let content = format!("{me}-{token}-{part}");
            let op = Op::Write {
                scope: scope.clone(),
                part: part.clone(),
                content: content.clone(),
                token: Token(token),
            };
            let every = if matches!(shape, Shape::ManyUnknowns | Shape::Mix) {
                3
            } else {
                500
            };
            let outcome = if writes % every == 0 {
                Outcome::Indeterminate("timeout".into())
            } else {
                Outcome::Accepted
            };
            rows.push((part.clone(), content, outcome == Outcome::Accepted));
            if writes % 7 == 0 {
                // It waits while another holder is refused the lease.
                o.push(t, me, op, Outcome::Blocked)?;
                t += 1;
                let refused = Op::Acquire {
                    lease: lease.clone(),
                    holder: other.clone(),
                    ttl_ms: ttl,
                };
                o.push(t, other, refused, Outcome::Refused)?;
                t += 1;
                o.push(t, me, Op::Await { db: DbName::Res }, outcome)?;
            } else {
                o.push(t, me, op, outcome)?;
            }
        }
        let mut expires = t - 1 + ttl;
        if shape == Shape::SettledThenUnknown {
            t += 1;
            let op = Op::Renew {
                lease: lease.clone(),
                holder: me.clone(),
                token: Token(token),
                ttl_ms: ttl,
            };
            o.push(t, me, op, Outcome::Indeterminate("timeout".into()))?;
            if o.events < n / 2 {
                // What only the renewal can have set: it took effect.
                t += 1;
                let row = leaselab_model::LeaseRow {
                    holder: me.clone(),
                    token: Token(token),
                    expires_at: Expiry::At(Millis(t - 1 + ttl)),
                };
                let read = Op::ReadLease {
                    lease: lease.clone(),
                };
                o.push(t, other, read, Outcome::Lease(Some(row)))?;
            }
        }
        if matches!(shape, Shape::ManyUnknowns | Shape::Mix) {
            for _ in 0..2 {
                t += 1;
                renewals += 1;
                let op = Op::Renew {
                    lease: lease.clone(),
                    holder: me.clone(),
                    token: Token(token),
                    ttl_ms: ttl,
                };
                let outcome = if renewals % 4 == 0 {
                    // The expiry it would set, for a lease read to show.
                    expires = t + ttl;
                    Outcome::Indeterminate("timeout".into())
                } else {
                    expires = t + ttl;
                    Outcome::Renewed {
                        expires: Expiry::At(Millis(t + ttl)),
                    }
                };
                o.push(t, me, op, outcome)?;
            }
        }
        let reads = match shape {
            Shape::ReadHeavy => 30,
            Shape::ManyParts => 3,
            Shape::Mix => 6,
            _ => 0,
        };
        for k in 0..reads {
            t += 1;
            let (part, content, accepted) = &rows[k % rows.len()];
            let lease_read = if shape == Shape::Mix {
                k % 2 == 1
            } else {
                k % 10 == 9
            };
            if lease_read {
                let row = leaselab_model::LeaseRow {
                    holder: me.clone(),
                    token: Token(token),
                    expires_at: Expiry::At(Millis(expires)),
                };
                let read = Op::ReadLease {
                    lease: lease.clone(),
                };
                o.push(t, other, read, Outcome::Lease(Some(row)))?;
                continue;
            }
            if !accepted {
                continue;
            }
            let row = PartRow {
                content: content.clone(),
                writer: me.clone(),
                token: Token(token),
            };
            let read = Op::ReadPart {
                scope: scope.clone(),
                part: part.clone(),
            };
            o.push(t, other, read, Outcome::Part(Some(row)))?;
        }
        t += 1;
        let released = if matches!(shape, Shape::ManyUnknowns | Shape::Mix) && token % 10 == 0 {
            Outcome::Indeterminate("timeout".into())
        } else {
            Outcome::Released
        };
        let release = Op::Release {
            lease: lease.clone(),
            holder: me.clone(),
            token: Token(token),
        };
        o.push(t, me, release, released)?;
    }
    use std::io::Write;
    o.file.flush()?;
    Ok(o.info)
}
