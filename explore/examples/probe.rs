use leaselab_explore::search::{run, Options, Order};
use leaselab_explore::system::Bounds;
use leaselab_model::FenceMode;
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let ticks: u8 = a[1].parse().unwrap();
    let holders: usize = a[2].parse().unwrap();
    let threads: usize = a[3].parse().unwrap();
    let sym = a.get(4).is_some();
    let o = Options {
        bounds: Bounds {
            fence: FenceMode::Scope,
            holders,
            max_ticks: ticks,
            ..Bounds::default()
        },
        order: if a.get(5).is_some() {
            Order::Dfs
        } else {
            Order::Bfs
        },
        threads,
        symmetry: sym,
    };
    let f = run(&o);
    println!("ticks={ticks} holders={holders} threads={threads} sym={sym}: unique={} depth={} {:.2?} rate={:.0}/s viol={:?}", f.unique, f.depth, f.elapsed, f.rate(), f.violations.len());
}
