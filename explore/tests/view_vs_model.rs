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
