//! Speed of the simulation (a benchmark, not a test: wall time is measured here and nowhere in
//! the simulation itself). `cargo run --release -p leaselab-sim --example bench`
//!
//! Prints: fast-driver runs/s on the standard scenario; turmoil-driver runs/s next to turmoil's
//! own idle floor (the same hosts doing nothing) at the same tick; wall time until each negative
//! control is first found by a sweep from seed 0.

use leaselab_model::{FenceMode, LeaseDurability};
use leaselab_sim::{run_seed, Driver, FaultKind, SimOptions};
use std::time::{Duration, Instant, UNIX_EPOCH};

fn idle_floor(tick_ms: u64, virtual_ms: u64) -> f64 {
    let start = Instant::now();
    let mut sim = turmoil::Builder::new()
        .rng_seed(1)
        .epoch(UNIX_EPOCH + Duration::from_secs(1_767_225_600))
        .tick_duration(Duration::from_millis(tick_ms))
        .simulation_duration(Duration::from_millis(virtual_ms + 60_000))
        .build();
    for h in ["lease-db", "res-db"] {
        sim.host(h, || async {
            loop {
                tokio::time::sleep(Duration::from_secs(3600)).await;
            }
        });
    }
    for c in ["holder-a", "holder-b"] {
        sim.client(c, async move {
            let end = Duration::from_millis(virtual_ms);
            while turmoil::elapsed() < end {
                tokio::time::sleep(Duration::from_millis(400)).await;
            }
            Ok(())
        });
    }
    let _ = sim.run();
    start.elapsed().as_secs_f64()
}

fn main() {
    let std_opts = SimOptions::default();
    let virtual_ms = std_opts.safety_ms + std_opts.liveness_ms;
    println!("standard scenario: 2 holders, {virtual_ms} ms virtual, all fault kinds, scope fence");

    let only_fast = std::env::args().any(|a| a == "fast");
    // Profiling aids: `floor` runs only the idle floor, `turmoil` only the turmoil driver.
    let tick: u64 = std::env::var("BENCH_TICK_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    if std::env::args().any(|a| a == "floor") {
        println!("idle floor: {:.3} s/run", idle_floor(tick, virtual_ms));
        return;
    }
    if std::env::args().any(|a| a == "turmoil") {
        let t = Instant::now();
        let opts = SimOptions {
            tick_ms: tick,
            ..std_opts.clone()
        };
        run_seed(1, &opts, Driver::Turmoil);
        println!("turmoil driver: {:.3} s/run", t.elapsed().as_secs_f64());
        return;
    }
    let n: u64 = std::env::var("BENCH_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(2000);
    let t = Instant::now();
    let mut events = 0usize;
    for seed in 0..n {
        events += run_seed(seed, &std_opts, Driver::Fast)
            .trace
            .history
            .events
            .len();
    }
    let s = t.elapsed().as_secs_f64();
    println!(
        "fast driver: {n} runs in {s:.2} s = {:.0} runs/s, {:.0} events/run, {:.0} ns/event",
        n as f64 / s,
        events as f64 / n as f64,
        s * 1e9 / events as f64
    );

    if only_fast {
        return;
    }
    for tick in [1u64, 10] {
        let opts = SimOptions {
            tick_ms: tick,
            ..std_opts.clone()
        };
        let runs = if tick == 1 { 3 } else { 10 };
        let t = Instant::now();
        for seed in 0..runs {
            run_seed(seed, &opts, Driver::Turmoil);
        }
        let per_run = t.elapsed().as_secs_f64() / runs as f64;
        let floor = (0..3).map(|_| idle_floor(tick, virtual_ms)).sum::<f64>() / 3.0;
        println!(
            "turmoil driver, tick {tick} ms: {:.2} s/run ({:.1} runs/s); idle floor {:.2} s/run ({:.1} runs/s); ratio {:.2}",
            per_run,
            1.0 / per_run,
            floor,
            1.0 / floor,
            per_run / floor
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
