//! Writes the seed corpora of the fuzz targets into `fuzz/corpus/<target>/` (run from the
//! workspace root: `cargo run -p leaselab-fuzz-targets --example seed_corpora`), from:
//!
//! - `trace_parse`: every committed trace under `traces/` (the lab cases, the simulation's and
//!   proptest's counterexamples, the differential's shrunk schedules, the legacy files);
//! - `model_ops`: the proptest counterexamples kept in `traces/proptest-*.trace` (their titles
//!   list the holder steps) under their own configuration and the correct one, and the lab's
//!   main experiment told as holder steps (with publishes), and a write that waits on another's
//!   transaction until its request times out and its connection is dropped, with crashes of
//!   both databases, under every fence mode;
//! - `model_vs_threaded`: the lab's lease cases (takeover after a pause, renewal that finds the
//!   lease lost, release) under each store mode;
//! - `sim_plan`: the fault plans the simulation draws for seeds 0–31 (with this target's phase
//!   lengths and 2–4 holders).
//!
//! Then `cargo +nightly fuzz cmin <target>` (in `fuzz/`) keeps the inputs that add coverage.

use leaselab_fuzz_targets::{model_ops, model_vs_threaded, sim_plan};
use leaselab_gen::holders::Step;
use leaselab_model::{Config, DbName, FenceMode, LeaseDurability, PublishMode};
use leaselab_sim::{FaultKind, Setup, SimOptions};
use std::path::{Path, PathBuf};

fn write(dir: &Path, name: &str, bytes: &[u8]) {
    let p = dir.join(name);
    if let Err(e) = std::fs::write(&p, bytes) {
        eprintln!("cannot write {}: {e}", p.display());
        std::process::exit(1);
    }
}

/// `[Timer(1), Crash(Lease), Run(0)]` → steps; `None` for anything else.
fn steps_of(title: &str) -> Option<Vec<Step>> {
    let list = title.split_once('[')?.1.strip_suffix(']')?;
    let mut v = Vec::new();
    for item in list.split("), ") {
        let item = item.trim_end_matches(')');
        let (name, args) = item.split_once('(')?;
        let n: Vec<usize> = args.split(", ").filter_map(|a| a.parse().ok()).collect();
        let a = |i: usize| n.get(i).copied();
        v.push(match name {
            "Timer" => Step::Timer(a(0)?),
            "Run" => Step::Run(a(0)?),
            "Advance" => Step::Advance(a(0)? as u64),
            "Pause" => Step::Pause(a(0)?),
            "Resume" => Step::Resume(a(0)?),
            "Crash" => Step::Crash(if args == "Lease" {
                DbName::Lease
            } else {
                DbName::Res
            }),
            "Publish" => Step::Publish(a(0)?),
            "ReadPart" => Step::ReadPart(a(0)?),
            _ => return None,
        });
    }
    Some(v)
}

/// The selector of `model_ops::config` that gives `c`'s fence, lease table and publish mode.
fn selector(c: &Config) -> u8 {
    (0..=u8::MAX)
        .find(|s| {
            let d = model_ops::config(*s);
            d.fence == c.fence
                && d.lease_table == c.lease_table
                && d.publish == c.publish
                && d.renew_after_expiry == c.renew_after_expiry
        })
        .unwrap_or(0)
}

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let corpus = root.join("fuzz/corpus");
    for t in leaselab_fuzz_targets::TARGETS {
        if let Err(e) = std::fs::create_dir_all(corpus.join(t)) {
            eprintln!("cannot create {}: {e}", corpus.join(t).display());
            std::process::exit(1);
        }
    }
    let mut traces: Vec<PathBuf> = Vec::new();
    for dir in [root.join("traces"), root.join("traces/legacy-v1")] {
        if let Ok(rd) = std::fs::read_dir(&dir) {
            traces.extend(
                rd.filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|x| x == "trace")),
            );
        }
    }
    traces.sort();
    let mut n = [0usize; 4];
    for p in &traces {
        let Ok(text) = std::fs::read_to_string(p) else {
            continue;
        };
        let stem = p
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let legacy = p.parent().is_some_and(|d| d.ends_with("legacy-v1"));
        let name = if legacy {
            format!("legacy-{stem}")
        } else {
            stem.clone()
        };
        write(
            &corpus.join("trace_parse"),
            &format!("seed-{name}"),
            text.as_bytes(),
        );
        n[1] += 1;
        if stem.starts_with("proptest-") && !legacy {
            if let (Ok(t), Some(title)) = (
                leaselab_trace::Trace::parse(&text, &p.display().to_string()),
                text.lines().find_map(|l| l.strip_prefix("title ")),
            ) {
                if let Some(steps) = steps_of(title) {
                    let holders = steps
                        .iter()
                        .filter_map(|s| match s {
                            Step::Timer(h) | Step::Run(h) => Some(*h + 1),
                            _ => None,
                        })
                        .max()
                        .unwrap_or(2)
                        .clamp(2, 4);
                    for (tag, config) in [("own", selector(&t.config)), ("correct", 0)] {
                        let input = model_ops::Input {
                            config,
                            holders,
                            steps: steps.clone(),
                        };
                        write(
                            &corpus.join("model_ops"),
                            &format!("seed-{stem}-{tag}"),
                            &model_ops::encode(&input),
                        );
                        n[0] += 1;
                    }
                }
            }
        }
    }
    // The lab's main experiment as holder steps: a passes its check and stops before its
    // write, its lease expires, b takes over and writes both parts (in one `write` each) and
    // publishes, a wakes (its overdue renew refused) and writes with its old token, statement
    // by statement. Then a write that waits: a's transaction holds the floor, c's fence waits
    // on it until c's request times out and c disconnects while waiting; crashes of both
    // databases with jobs under way.
    let f5 = vec![
        Step::Timer(0),
        Step::Pause(0),
        Step::Advance(1500),
        Step::Timer(1),
        Step::Run(1),
        Step::Run(1),
        Step::Publish(1),
        Step::Resume(0),
        Step::Timer(0),
        Step::Run(0),
        Step::Run(0),
        Step::Run(0),
        Step::Publish(0),
        Step::ReadPart(0),
        Step::ReadPart(1),
    ];
    let lock_wait = leaselab_gen::holders::lock_wait();
    for (i, fence) in FenceMode::ALL.iter().enumerate() {
        for (what, steps) in [("f5", &f5), ("lock-wait", &lock_wait)] {
            let c = Config {
                fence: *fence,
                lease_table: LeaseDurability::Logged,
                publish: PublishMode::Versioned,
                ..Config::default()
            };
            let input = model_ops::Input {
                config: selector(&c),
                holders: 2 + i % 3,
                steps: steps.clone(),
            };
            write(
                &corpus.join("model_ops"),
                &format!("seed-lab-{what}-{fence}"),
                &model_ops::encode(&input),
            );
            n[0] += 1;
        }
    }
    use model_vs_threaded::Step as T;
    let lease_cases: [(&str, Vec<T>); 3] = [
        (
            "takeover",
            vec![
                T::Acquire(0),
                T::Write(0, 0),
                T::Advance(1500),
                T::Acquire(1),
                T::Write(1, 0),
                T::Write(0, 1),
                T::Renew(0),
                T::Write(0, 1),
            ],
        ),
        (
            "renewals",
            vec![
                T::Acquire(0),
                T::Advance(400),
                T::Renew(0),
                T::Advance(1499),
                T::Acquire(1),
                T::Renew(0),
                T::Write(0, 0),
                T::Write(0, 0),
            ],
        ),
        (
            "release",
            vec![
                T::Acquire(0),
                T::Write(0, 1),
                T::Release(0),
                T::Acquire(1),
                T::Write(1, 1),
                T::Release(1),
                T::Advance(3000),
                T::Acquire(2),
            ],
        ),
    ];
    for mode in 0..3u8 {
        for (name, steps) in &lease_cases {
            let input = model_vs_threaded::Input {
                mode,
                holders: 3,
                steps: steps.clone(),
            };
            write(
                &corpus.join("model_vs_threaded"),
                &format!("seed-{name}-mode{mode}"),
                &model_vs_threaded::encode(&input),
            );
            n[2] += 1;
        }
    }
    for seed in 0..32u64 {
        let holders = 2 + (seed % 3) as usize;
        let opts = SimOptions {
            holders,
            faults: FaultKind::ALL.to_vec(),
            safety_ms: sim_plan::SAFETY_MS,
            liveness_ms: sim_plan::LIVENESS_MS,
            ..SimOptions::default()
        };
        let s = Setup::derive(seed, &opts);
        let input = sim_plan::Input {
            seed,
            holders,
            faults: s
                .plan
                .faults
                .into_iter()
                .take(sim_plan::MAX_FAULTS)
                .collect(),
        };
        write(
            &corpus.join("sim_plan"),
            &format!("seed-sim-{seed}"),
            &sim_plan::encode(&input),
        );
        n[3] += 1;
    }
    println!(
        "seed inputs written to {}: model_ops {}, trace_parse {}, model_vs_threaded {}, sim_plan {}",
        corpus.display(),
        n[0],
        n[1],
        n[2],
        n[3]
    );
}
