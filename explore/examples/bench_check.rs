//! `cargo run --release -p leaselab-explore --example bench_check [MAX_TICKS]`: distinct states per
//! second of `leaselab check --fence scope` (2 holders) on 1 and 2 threads, next to the floor
//! measured in the same run — a bare stateright model of a lease of the same bounds (2
//! clients, 100 ms ticks, TTL 15 ticks, acquire / write / release / tick, no rules, no locks),
//! written only for this benchmark. BENCHMARKS.md has the figures.

use leaselab_explore::search::{run, Options, Order};
use leaselab_explore::system::Bounds;
use stateright::{Checker, Model, Property};
use std::time::Instant;

/// The bare model: each client acquires a free or expired lease (local deadline from the
/// reading before it), renews on its own step, checks its deadline before each of two parts,
/// writes each part in one step against a floor, releases; time ticks to the bound.
#[derive(Clone)]
struct Bare {
    max_ticks: u8,
    ttl: u8,
    renew: u8,
    margin: u8,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Client {
    pc: u8,
    token: u8,
    deadline: u8,
    renew_at: u8,
    acquired: u8,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct BareState {
    now: u8,
    lease: Option<(u8, u8, u8)>,
    floor: u8,
    clients: [Client; 2],
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BareAction {
    Tick,
    Acquire(u8),
    Check(u8),
    Write(u8),
    Renew(u8),
    Release(u8),
}

impl Model for Bare {
    type State = BareState;
    type Action = BareAction;
    fn init_states(&self) -> Vec<BareState> {
        let c = Client {
            pc: 0,
            token: 0,
            deadline: 0,
            renew_at: 0,
            acquired: 0,
        };
        vec![BareState {
            now: 0,
            lease: None,
            floor: 0,
            clients: [c; 2],
        }]
    }
    fn actions(&self, s: &BareState, out: &mut Vec<BareAction>) {
        out.push(BareAction::Tick);
        for i in 0..2u8 {
            out.extend([
                BareAction::Acquire(i),
                BareAction::Check(i),
                BareAction::Write(i),
                BareAction::Renew(i),
                BareAction::Release(i),
            ]);
        }
        out.retain(|a| self.next_state(s, *a).is_some());
    }
    fn next_state(&self, s: &BareState, a: BareAction) -> Option<BareState> {
        let mut n = s.clone();
        match a {
            BareAction::Tick => {
                if s.now >= self.max_ticks {
                    return None;
                }
                n.now += 1
            }
            BareAction::Acquire(i) => {
                let c = s.clients[i as usize];
                if c.pc != 0 || c.acquired >= 2 {
                    return None;
                }
                let token = match s.lease {
                    None => 1,
                    Some((_, t, e)) if e <= s.now => t + 1,
                    Some(_) => return None,
                };
                n.lease = Some((i, token, s.now + self.ttl));
                n.clients[i as usize] = Client {
                    pc: 1,
                    token,
                    deadline: s.now + self.ttl - self.margin,
                    renew_at: s.now + self.renew,
                    acquired: c.acquired + 1,
                };
            }
            BareAction::Check(i) => {
                let c = &mut n.clients[i as usize];
                if c.pc != 1 && c.pc != 3 {
                    return None;
                }
                if s.now < c.deadline {
                    c.pc += 1
                } else {
                    c.pc = 0
                }
            }
            BareAction::Write(i) => {
                let c = &mut n.clients[i as usize];
                if c.pc != 2 && c.pc != 4 {
                    return None;
                }
                if s.floor <= c.token {
                    n.floor = c.token;
                    c.pc += 1;
                } else {
                    c.pc = 0;
                }
            }
            BareAction::Renew(i) => {
                let c = s.clients[i as usize];
                if c.pc == 0 || c.pc == 5 || s.now < c.renew_at {
                    return None;
                }
                match s.lease {
                    Some((h, t, e)) if h == i && t == c.token && e > s.now => {
                        n.lease = Some((h, t, s.now + self.ttl));
                        let c = &mut n.clients[i as usize];
                        c.deadline = s.now + self.ttl - self.margin;
                        c.renew_at = s.now + self.renew;
                    }
                    _ => n.clients[i as usize].renew_at = u8::MAX,
                }
            }
            BareAction::Release(i) => {
                let c = s.clients[i as usize];
                if c.pc != 5 {
                    return None;
                }
                if let Some((h, t, _)) = s.lease {
                    if h == i && t == c.token {
                        n.lease = Some((h, t, 0));
                    }
                }
                n.clients[i as usize].pc = 0;
            }
        }
        Some(n)
    }
    fn properties(&self) -> Vec<Property<Self>> {
        vec![Property::always("floor", |_, s: &BareState| s.floor <= 4)]
    }
}

fn bare(max_ticks: u8, threads: usize) -> (usize, f64) {
    let start = Instant::now();
    let c = Bare {
        max_ticks,
        ttl: 15,
        renew: 4,
        margin: 3,
    }
    .checker()
    .threads(threads)
    .spawn_bfs()
    .join();
    (c.unique_state_count(), start.elapsed().as_secs_f64())
}

fn ours(max_ticks: u8, threads: usize) -> (usize, f64) {
    let o = Options {
        threads,
        all: true,
        ..Options::new(
            Bounds {
                max_ticks,
                ..Bounds::default()
            },
            Order::Bfs,
        )
    };
    let f = run(&o);
    assert!(
        f.violations.is_empty(),
        "the scope fence broke: {:?}",
        f.violations
    );
    (f.unique, f.elapsed.as_secs_f64())
}

fn main() {
    let max_ticks: u8 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    println!("max_ticks={max_ticks} (100 ms ticks), 2 holders, BFS");
    for threads in [1, 2] {
        let (bu, bs) = bare(max_ticks, threads);
        let (ou, os) = ours(max_ticks, threads);
        let (br, or) = (bu as f64 / bs, ou as f64 / os);
        println!(
            "threads={threads}: bare model {bu} states in {bs:.2} s = {br:.0}/s; leaselab check {ou} states in {os:.2} s = {or:.0}/s; ratio {:.2}",
            or / br
        );
    }
}
