//! The explorer's compact view against the model it stands for: random walks through the
//! explored system, under every fence mode, both lease tables, with and without a crash and
//! with a slow clock, are each run again on the model (`trace::to_trace`), which compares every
//! outcome. A walk where the view and the model disagree fails the test with the step.
//! Also: the search's own verdict equals the History checkers' verdict on every walk.

use leaselab_explore::system::{Action, Bounds, LeaseSystem};
use leaselab_explore::trace::{search_verdict, to_trace};
use leaselab_model::{FenceMode, LeaseDurability};
use stateright::Model;

/// A small deterministic generator (no dependency, same walks every run).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n.max(1)
    }
}

fn involves(a: Action, h: u8) -> bool {
    matches!(a,
        Action::Acquire(i) | Action::Check(i) | Action::Fence(i) | Action::Upsert(i)
        | Action::Commit(i) | Action::Renew(i) | Action::Release(i) if i == h)
}

fn walks(b: Bounds, count: usize, seed: u64) -> usize {
    let sys = LeaseSystem::new(b.clone());
    let mut rng = Lcg(seed);
    let mut broken = 0;
    for w in 0..count {
        let mut s = sys.init_states().remove(0);
        let mut path = Vec::new();
        for _ in 0..120 {
            let mut acts: Vec<Action> = Vec::new();
            sys.actions(&s, &mut acts);
            if acts.is_empty() {
                break;
            }
            // Time passes often, and one holder at a time is slow to be scheduled (a pause):
            // that is where stale writes come from.
            let sleepy = (w % b.holders) as u8;
            let awake: Vec<Action> = acts
                .iter()
                .copied()
                .filter(|a| !involves(*a, sleepy) || rng.next(6) == 0)
                .collect();
            let pool = if awake.is_empty() { &acts } else { &awake };
            let a = if pool.contains(&Action::Tick) && rng.next(2) == 0 {
                Action::Tick
            } else {
                pool[rng.next(pool.len())]
            };
            s = sys
                .next_state(&s, a)
                .expect("an enabled action has a next state");
            path.push(a);
        }
        let t = to_trace(&sys, &path, "walk")
            .unwrap_or_else(|e| panic!("{b:?} walk {w}: {e}\npath: {path:?}"));
        let searched = search_verdict(&sys, &path);
        let judged: Vec<_> = t
            .expect
            .iter()
            .copied()
            .filter(|c| *c != leaselab_checkers::Check::Final)
            .collect();
        assert_eq!(searched, judged, "{b:?} walk {w}: {}", t.to_text());
        if !searched.is_empty() {
            broken += 1;
        }
    }
    broken
}

#[test]
fn the_view_agrees_with_the_model_on_random_walks() {
    let mut broke_somewhere = 0;
    for (k, fence) in FenceMode::ALL.into_iter().enumerate() {
        for (lease_table, crash) in [
            (LeaseDurability::Logged, false),
            (LeaseDurability::Logged, true),
            (LeaseDurability::Unlogged, true),
        ] {
            for holders in [2, 3] {
                let b = Bounds {
                    fence,
                    lease_table,
                    crash,
                    holders,
                    max_ticks: 40,
                    ..Bounds::default()
                };
                broke_somewhere += walks(b, 60, 7 + k as u64);
            }
        }
        broke_somewhere += walks(
            Bounds {
                fence,
                slow: (1, 3),
                max_ticks: 40,
                ..Bounds::default()
            },
            40,
            99 + k as u64,
        );
    }
    // The walks reach violations too (so the verdict comparison compares something).
    assert!(
        broke_somewhere > 100,
        "{broke_somewhere} walks broke an invariant"
    );
}

#[test]
fn an_action_the_view_does_not_allow_is_reported_not_run() {
    let sys = LeaseSystem::new(Bounds::default());
    let e = to_trace(&sys, &[Action::Commit(0)], "bad").expect_err("not enabled");
    assert_eq!(e.step, 1);
    assert!(e.to_string().contains("not enabled"), "{e}");
}

/// Every state a few walks visit, under `b`.
fn visited(b: &Bounds, walks: usize) -> Vec<leaselab_explore::system::State> {
    let sys = LeaseSystem::new(b.clone());
    let mut rng = Lcg(3);
    let mut out = Vec::new();
    for _ in 0..walks {
        let mut s = sys.init_states().remove(0);
        for _ in 0..100 {
            out.push(s.clone());
            let mut acts = Vec::new();
            sys.actions(&s, &mut acts);
            if acts.is_empty() {
                break;
            }
            let a = if acts.contains(&Action::Tick) && rng.next(2) == 0 {
                Action::Tick
            } else {
                acts[rng.next(acts.len())]
            };
            s = sys.next_state(&s, a).expect("enabled");
        }
    }
    out
}

/// `enabled` is exactly "the step can be taken and changes something": the search asks the
/// one, the trace runs the other.
#[test]
fn enabled_agrees_with_step() {
    for fence in FenceMode::ALL {
        let b = Bounds {
            fence,
            crash: true,
            holders: 3,
            max_ticks: 30,
            ..Bounds::default()
        };
        let sys = LeaseSystem::new(b.clone());
        for s in visited(&b, 40) {
            let all = (0..3)
                .flat_map(Action::of_holder)
                .chain([Action::Tick, Action::Crash]);
            for a in all {
                let step = sys.step(&s, a);
                let changes = step.as_ref().is_some_and(|(n, _)| *n != s);
                assert_eq!(
                    sys.enabled(&s, a),
                    changes,
                    "{fence:?} {a:?} in {s:?}: step gives {step:?}"
                );
            }
        }
    }
}

/// The packed hash is injective: two different visited states never share a fingerprint
/// (stateright identifies states by it).
#[test]
fn different_states_hash_differently() {
    use std::hash::{Hash, Hasher};
    let fp = |s: &leaselab_explore::system::State| {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        s.hash(&mut h);
        h.finish()
    };
    let mut by_fp: std::collections::BTreeMap<u64, String> = std::collections::BTreeMap::new();
    let mut distinct = 0;
    for fence in [FenceMode::Scope, FenceMode::Row, FenceMode::CheckThenWrite] {
        let b = Bounds {
            fence,
            crash: true,
            lease_table: LeaseDurability::Unlogged,
            holders: 3,
            max_ticks: 30,
            ..Bounds::default()
        };
        for s in visited(&b, 60) {
            let d = format!("{s:?}");
            match by_fp.get(&fp(&s)) {
                Some(other) => assert_eq!(other, &d, "two states, one fingerprint"),
                None => {
                    distinct += 1;
                    by_fp.insert(fp(&s), d);
                }
            }
        }
    }
    assert!(distinct > 1000, "{distinct}");
}

#[test]
fn a_holder_reads_its_own_clock_and_computes_its_deadline_from_it() {
    let b = Bounds {
        slow: (1, 2),
        ..Bounds::default()
    };
    let sys = LeaseSystem::new(b.clone());
    let mut s = sys.init_states().remove(0);
    for _ in 0..6 {
        s = sys.next_state(&s, Action::Tick).expect("tick");
    }
    assert_eq!((sys.local(&s, 0), sys.local(&s, 1)), (3, 6));
    let two_thirds = LeaseSystem::new(Bounds {
        slow: (2, 3),
        ..Bounds::default()
    });
    assert_eq!(two_thirds.local(&s, 0), 4);
    let a = sys.next_state(&s, Action::Acquire(0)).expect("acquire");
    // From its reading before sending: 3 + ttl 15 − margin 3; renew every 4 of its ticks.
    assert_eq!((a.holders[0].deadline, a.holders[0].renew_at), (15, 7));
    let b2 = sys.next_state(&s, Action::Acquire(1)).expect("acquire");
    assert_eq!((b2.holders[1].deadline, b2.holders[1].renew_at), (18, 10));
    // The trace records holder-a's own readings: 300 ms of its clock at t=600.
    let t = to_trace(
        &sys,
        &[Action::Tick; 6]
            .iter()
            .copied()
            .chain([Action::Acquire(0)])
            .collect::<Vec<_>>(),
        "slow",
    )
    .expect("agrees");
    let e = t.history.events.last().expect("the acquire");
    assert_eq!((e.at.0, e.local.0), (600, 300));
}

#[test]
fn after_a_crash_holders_use_new_connections() {
    let b = Bounds {
        crash: true,
        ..Bounds::default()
    };
    let sys = LeaseSystem::new(b);
    let path = [
        Action::Acquire(0),
        Action::Crash,
        Action::Check(0),
        Action::Fence(0),
    ];
    let t = to_trace(&sys, &path, "crash").expect("agrees");
    let conns: Vec<String> = t
        .history
        .events
        .iter()
        .filter_map(|e| e.conn.as_ref().map(|c| c.as_str().to_string()))
        .collect();
    assert_eq!(
        conns,
        ["holder-a/lease/0", "holder-a/res/1", "holder-a/res/1"],
        "{}",
        t.to_text()
    );
}

/// A takeover is a grant to another holder than the row's: after a release by holder-a,
/// holder-b's acquire is one, holder-a's own is not.
#[test]
fn a_takeover_is_another_holders_grant() {
    let sys = LeaseSystem::new(Bounds {
        parts: 1,
        ..Bounds::default()
    });
    let mut s = sys.init_states().remove(0);
    for a in [
        Action::Acquire(0),
        Action::Check(0),
        Action::Fence(0),
        Action::Upsert(0),
        Action::Commit(0),
        Action::Release(0),
    ] {
        s = sys.next_state(&s, a).expect("enabled");
    }
    let own = sys.next_state(&s, Action::Acquire(0)).expect("acquire");
    let other = sys.next_state(&s, Action::Acquire(1)).expect("acquire");
    assert_eq!(own.seen & 2, 0, "holder-a taking its own lease again");
    assert_eq!(other.seen & 2, 2, "holder-b taking over");
}
