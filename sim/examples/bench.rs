//! Speed of the simulation (a benchmark, not a test: wall time is measured here and nowhere in
//! the simulation itself). `cargo run --release -p leaselab-sim --example bench`
//!
//! Prints: fast-driver runs/s on the standard scenario next to the bare event loop's floor;
//! turmoil-driver runs/s next to turmoil's
//! own idle floor (the same hosts doing nothing) at the same tick; wall time until each negative
//! control is first found by a sweep from seed 0.

use leaselab_model::{FenceMode, LeaseDurability};
use leaselab_sim::{run_seed, Driver, FaultKind, SimOptions};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::hint::black_box;
use std::time::{Duration, Instant, UNIX_EPOCH};

/// The bare event loop of the floor measurement (a binary heap and one ChaCha8 draw per event, nothing
/// else: no holder, no database model, no history, no checkers), run for exactly as many events
/// as the fast driver's queue delivered for the same seed, with that seed's latency range and a
/// queue as deep as the driver's. No simulator of this scenario can beat it, so it is the fast
/// driver's floor, as turmoil's idle run is the turmoil driver's.
fn bare_loop(seed: u64, events: u64, (lo, hi): (u64, u64)) -> u64 {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut heap = BinaryHeap::with_capacity(16);
    let mut seq = 0u64;
    for _ in 0..8 {
        seq += 1;
        heap.push(Reverse((rng.random_range(0..500u64), seq)));
    }
    let mut acc = 0u64;
    for _ in 0..events {
        let Some(Reverse((t, s))) = heap.pop() else {
            break;
        };
        acc = acc.wrapping_add(s ^ t);
        seq += 1;
        heap.push(Reverse((t + rng.random_range(lo..=hi), seq)));
    }
    acc
}

/// turmoil's idle floor: the same four hosts, doing nothing, for the same virtual time. With
/// `connected`, each holder first opens the TCP connections the driver opens (one to each
/// database) and then idles on them: turmoil's per-tick cost grows with the links that exist
/// (each step walks every link for every host), whether or not a message is sent, so that is
/// the floor of a run that talks at all.
fn idle_floor(tick_ms: u64, virtual_ms: u64, connected: bool) -> f64 {
    use turmoil::net::{TcpListener, TcpStream};
    let start = Instant::now();
    let mut sim = turmoil::Builder::new()
        .rng_seed(1)
        .epoch(UNIX_EPOCH + Duration::from_secs(1_767_225_600))
        .tick_duration(Duration::from_millis(tick_ms))
        .simulation_duration(Duration::from_millis(virtual_ms + 60_000))
        .build();
    for h in ["lease-db", "res-db"] {
        sim.host(h, move || async move {
            let mut held = Vec::new();
            if connected {
                let listener = TcpListener::bind(("0.0.0.0", 5432)).await?;
                while held.len() < 2 {
                    held.push(listener.accept().await?.0);
                }
            }
            loop {
                tokio::time::sleep(Duration::from_secs(3600)).await;
            }
        });
    }
    for c in ["holder-a", "holder-b"] {
        sim.client(c, async move {
            let mut held = Vec::new();
            if connected {
                for db in ["lease-db", "res-db"] {
                    held.push(TcpStream::connect((db, 5432)).await?);
                }
            }
            let end = Duration::from_millis(virtual_ms);
            while turmoil::elapsed() < end {
                tokio::time::sleep(Duration::from_millis(400)).await;
            }
            drop(held);
            Ok(())
        });
    }
    let _ = sim.run();
    start.elapsed().as_secs_f64()
}

/// Minimum and median of a sample (this machine is shared: single timings vary by ±30%, so
/// every figure is a repeated measurement, and ratios compare like with like).
fn min_median(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(|a, b| a.total_cmp(b));
    (v[0], v[v.len() / 2])
}

fn arg(name: &str) -> bool {
    std::env::args().any(|a| a == name)
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// One turmoil-driver run of seed 1 at `tick_ms`, in seconds.
fn turmoil_run(std_opts: &SimOptions, tick_ms: u64) -> f64 {
    let opts = SimOptions {
        tick_ms,
        ..std_opts.clone()
    };
    let t = Instant::now();
    run_seed(1, &opts, Driver::Turmoil);
    t.elapsed().as_secs_f64()
}

fn main() {
    let std_opts = SimOptions::default();
    let virtual_ms = std_opts.safety_ms + std_opts.liveness_ms;
    println!("standard scenario: 2 holders, {virtual_ms} ms virtual, all fault kinds, scope fence");

    // Profiling aids (one run each, e.g. under callgrind): `floor` runs only turmoil's idle
    // floor, `turmoil` only the turmoil driver, at BENCH_TICK_MS (default 1).
    let tick = env_u64("BENCH_TICK_MS", 1);
    if arg("floor") {
        println!(
            "idle floor: {:.3} s/run",
            idle_floor(tick, virtual_ms, false)
        );
        return;
    }
    if arg("floor-connected") {
        println!(
            "idle floor, connected: {:.3} s/run",
            idle_floor(tick, virtual_ms, true)
        );
        return;
    }
    if arg("turmoil") {
        println!("turmoil driver: {:.3} s/run", turmoil_run(&std_opts, tick));
        return;
    }

    // Fast driver: BENCH_RUNS seeds (default 2,000) in 5 rounds; best and median round. Each
    // round is followed by the bare loop over the same seeds and event counts (interleaved, so
    // both see the same machine).
    let n = env_u64("BENCH_RUNS", 2000);
    let rounds = 5;
    let per = (n / rounds).max(1);
    let mut rates = Vec::new();
    let mut floor_rates = Vec::new();
    let mut events = 0usize;
    let mut queue_events = 0u64;
    for r in 0..rounds {
        let mut sized = Vec::with_capacity(per as usize);
        let t = Instant::now();
        for seed in r * per..(r + 1) * per {
            let run = run_seed(seed, &std_opts, Driver::Fast);
            events += run.trace.history.events.len();
            queue_events += run.queue_events;
            sized.push((seed, run.queue_events, run.setup.latency_ms));
        }
        rates.push(per as f64 / t.elapsed().as_secs_f64());
        let t = Instant::now();
        for (seed, ev, lat) in sized {
            black_box(bare_loop(seed, ev, lat));
        }
        floor_rates.push(per as f64 / t.elapsed().as_secs_f64());
    }
    let (lo, med) = min_median(rates.clone());
    let best = rates.iter().copied().fold(0.0, f64::max);
    let runs = (per * rounds) as f64;
    let ev = events as f64 / runs;
    let qev = queue_events as f64 / runs;
    println!(
        "fast driver: {} runs in {rounds} rounds: best {best:.0} runs/s, median {med:.0} runs/s, worst {lo:.0} runs/s; {ev:.0} history events/run, {qev:.0} queue events/run, {:.0} ns/queue event at the median",
        per * rounds,
        1e9 / (med * qev)
    );
    let (flo, fmed) = min_median(floor_rates.clone());
    let fbest = floor_rates.iter().copied().fold(0.0, f64::max);
    println!(
        "bare loop (heap + ChaCha8, same seeds and event counts, nothing else): best {fbest:.0} runs/s, median {fmed:.0} runs/s, worst {flo:.0} runs/s, {:.0} ns/event at the median; fast driver / bare loop time, ratio of medians {:.1}",
        1e9 / (fmed * qev),
        fmed / med
    );
    if arg("fast") {
        return;
    }

    // turmoil driver against turmoil's idle floors, interleaved so all see the same machine.
    for (tick, rounds) in [(1u64, 5usize), (10, 15)] {
        let mut drv = Vec::new();
        let mut floor = Vec::new();
        let mut conn = Vec::new();
        for _ in 0..rounds {
            floor.push(idle_floor(tick, virtual_ms, false));
            conn.push(idle_floor(tick, virtual_ms, true));
            drv.push(turmoil_run(&std_opts, tick));
        }
        let (dmin, dmed) = min_median(drv);
        let (fmin, fmed) = min_median(floor);
        let (cmin, cmed) = min_median(conn);
        println!(
            "turmoil driver, tick {tick} ms, {rounds} interleaved rounds: driver min {dmin:.3} / median {dmed:.3} s/run; idle floor min {fmin:.3} / median {fmed:.3} (ratio of minima {:.2}, of medians {:.2}); connected idle floor min {cmin:.3} / median {cmed:.3} (ratio of minima {:.2}, of medians {:.2})",
            dmin / fmin,
            dmed / fmed,
            dmin / cmin,
            dmed / cmed
        );
    }

    let controls: [(&str, SimOptions); 4] = [
        (
            "off",
            SimOptions {
                fence: FenceMode::Off,
                ..std_opts.clone()
            },
        ),
        (
            "check-then-write",
            SimOptions {
                fence: FenceMode::CheckThenWrite,
                ..std_opts.clone()
            },
        ),
        (
            "row",
            SimOptions {
                fence: FenceMode::Row,
                ..std_opts.clone()
            },
        ),
        (
            "unlogged lease table",
            SimOptions {
                lease_table: LeaseDurability::Unlogged,
                faults: vec![FaultKind::Crash],
                ..std_opts.clone()
            },
        ),
    ];
    if arg("no-controls") {
        return;
    }
    for (name, opts) in controls {
        let t = Instant::now();
        let mut seed = 0;
        let found = loop {
            let r = run_seed(seed, &opts, Driver::Fast);
            if r.failed() || seed > 10_000 {
                break r.first_failure();
            }
            seed += 1;
        };
        println!(
            "negative control {name}: first found at seed {seed} ({:?}) after {:.1} ms wall",
            found,
            t.elapsed().as_secs_f64() * 1e3
        );
    }
}
