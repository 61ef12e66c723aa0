//! The explorer's compact view against the model it stands for: random walks through the
//! explored system, under every fence mode, both lease tables, with and without a crash and
//! with a slow clock, are each run again on the model (`trace::to_trace`), which compares every
//! outcome. A walk where the view and the model disagree fails the test with the step.
//! Also: the search's own verdict equals the History checkers' verdict on every walk.

use leaselab_explore::system::{Action, Bounds, LeaseSystem, Pending, State, Stmt};
use leaselab_explore::trace::{search_verdict, to_trace};
use leaselab_model::{FenceMode, LeaseDurability, Millis, Op};
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

/// Holder `i`'s Run in `s`: it names the statement the holder has pending.
fn run(s: &State, i: u8) -> Action {
    let p = s.holders[i as usize].pending.expect("a statement pending");
    Action::Run(i, p.stmt)
}

fn involves(a: Action, h: u8) -> bool {
    matches!(a, Action::Timer(i) | Action::Run(i, _) if i == h)
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
    let e = to_trace(&sys, &[Action::Run(0, Stmt::Commit)], "bad").expect_err("not enabled");
    assert_eq!(e.step, 1);
    assert!(e.to_string().contains("not enabled"), "{e}");
}

/// Every state a few walks visit, under `b`.
fn visited(b: &Bounds, walks: usize) -> Vec<State> {
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

/// A state's fingerprint (stateright identifies states by it).
fn fp(s: &State) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}

/// `enabled` is exactly "the step can be taken and changes something" (up to the names the
/// canonical form sets aside): the search asks the one, the trace runs the other.
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
            // Each holder's Run names the statement it has pending; a Run of another
            // statement is neither enabled nor a step.
            let all = (0..3)
                .flat_map(|i| {
                    let p = s.holders[i as usize].pending;
                    [
                        Some(Action::Timer(i)),
                        p.map(|p| Action::Run(i, p.stmt)),
                        Some(Action::Run(i, Stmt::Rollback))
                            .filter(|_| p.is_none_or(|p| p.stmt != Stmt::Rollback)),
                    ]
                })
                .flatten()
                .chain([Action::Tick, Action::Crash]);
            for a in all {
                let step = sys.step(&s, a, &mut |_| {});
                let changes = step.as_ref().is_some_and(|n| fp(n) != fp(&s));
                assert_eq!(
                    sys.enabled(&s, a),
                    changes,
                    "{fence:?} {a:?} in {s:?}: step gives {step:?}"
                );
            }
        }
    }
}

/// The state with what the hash sets aside set aside: each holder in its canonical form, the
/// request ids of deferred statements dropped.
fn canonical(s: &State) -> String {
    let mut c = s.clone();
    for slot in c.holders.iter_mut() {
        slot.h = slot.h.canonical();
        slot.pending = slot.pending.map(|p| Pending { req: 0, ..p });
    }
    format!("{c:?}")
}

/// The hash is injective on canonical forms: two visited states share a fingerprint only if
/// they are the same situation up to job numbers, connection generations and request ids — and
/// such states do occur (else the canonical form would merge nothing).
#[test]
fn states_share_a_fingerprint_only_when_canonically_equal() {
    let mut by_fp: std::collections::BTreeMap<u64, (String, String)> = Default::default();
    let (mut distinct, mut merged) = (0, 0);
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
            let (c, d) = (canonical(&s), format!("{s:?}"));
            match by_fp.get(&fp(&s)) {
                Some((other, full)) => {
                    assert_eq!(other, &c, "two states, one fingerprint");
                    if *full != d {
                        merged += 1;
                    }
                }
                None => {
                    distinct += 1;
                    by_fp.insert(fp(&s), (c, d));
                }
            }
        }
    }
    assert!(distinct > 1000, "{distinct}");
    assert!(merged > 0, "no two different states merged");
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
    let a = sys.next_state(&s, Action::Timer(0)).expect("acquire");
    // From its reading before sending: 300 ms + ttl 1500 − margin 300; renew 400 ms later.
    let h = a.holders[0].h;
    assert_eq!(h.deadline(), Some(Millis(1500)));
    assert_eq!(sys.machine(0, h).next_timer(), Some(Millis(700)));
    let b2 = sys.next_state(&s, Action::Timer(1)).expect("acquire");
    let h = b2.holders[1].h;
    assert_eq!(h.deadline(), Some(Millis(1800)));
    assert_eq!(sys.machine(1, h).next_timer(), Some(Millis(1000)));
    // The trace records holder-a's own readings: 300 ms of its clock at t=600.
    let t = to_trace(
        &sys,
        &[Action::Tick; 6]
            .iter()
            .copied()
            .chain([Action::Timer(0)])
            .collect::<Vec<_>>(),
        "slow",
    )
    .expect("agrees");
    let e = t
        .history
        .events
        .iter()
        .find(|e| matches!(e.op, Op::Acquire { .. }))
        .expect("the acquire");
    assert_eq!((e.at.0, e.local.0), (600, 300));
}

/// A crash cuts the open transaction: the connection's next statement is answered
/// `conn-lost`, the holder abandons it and gives the job up, and its next write goes out on a
/// new connection.
#[test]
fn after_a_crash_the_holder_writes_on_a_new_connection() {
    let b = Bounds {
        crash: true,
        max_ticks: 20,
        ..Bounds::default()
    };
    let sys = LeaseSystem::new(b);
    // Each Run names the statement holder-a has pending where it is taken.
    let mut path = Vec::new();
    let mut at = sys.init_states().remove(0);
    let mut take = |a: Option<Action>, at: &mut State| {
        let a = a.unwrap_or_else(|| {
            let p = at.holders[0].pending.expect("a statement pending");
            Action::Run(0, p.stmt)
        });
        path.push(a);
        *at = sys.next_state(at, a).expect("enabled");
    };
    take(Some(Action::Timer(0)), &mut at);
    take(None, &mut at);
    take(Some(Action::Crash), &mut at);
    take(None, &mut at);
    // The lease it still holds expires; the next job acquires it again and begins a write.
    for _ in 0..15 {
        take(Some(Action::Tick), &mut at);
    }
    take(Some(Action::Timer(0)), &mut at);
    take(None, &mut at);
    let t = to_trace(&sys, &path, "crash").expect("agrees");
    let mut s = sys.init_states().remove(0);
    for a in &path[..3] {
        s = sys.next_state(&s, *a).expect("enabled");
    }
    assert_eq!(s.crashes, 1);
    assert!(!sys.enabled(&s, Action::Crash), "one crash at most");
    let res: Vec<String> = t
        .history
        .events
        .iter()
        .filter(|e| {
            e.conn
                .as_ref()
                .is_some_and(|c| c.as_str().contains("/res/"))
        })
        .map(|e| {
            format!(
                "{} {} {}",
                e.conn.as_ref().map_or("", |c| c.as_str()),
                e.op,
                e.outcome
            )
        })
        .collect();
    assert_eq!(res.len(), 6, "{}", t.to_text());
    assert!(
        res[2].contains("holder-a/res/0") && res[2].contains("conn-lost"),
        "{res:?}"
    );
    assert!(res[3].starts_with("holder-a/res/0 disconnect"), "{res:?}");
    assert!(res[4].starts_with("holder-a/res/1 begin"), "{res:?}");
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
    // Acquire (and check); begin and fence; upsert; commit and release.
    for a in [Some(Action::Timer(0)), None, None, None] {
        let a = a.unwrap_or_else(|| run(&s, 0));
        s = sys.next_state(&s, a).expect("enabled");
    }
    assert!(
        s.lease.is_some_and(|r| r.expires.is_none()),
        "released: {s:?}"
    );
    let own = sys.next_state(&s, Action::Timer(0)).expect("acquire");
    let other = sys.next_state(&s, Action::Timer(1)).expect("acquire");
    assert_eq!(own.seen & 2, 0, "holder-a taking its own lease again");
    assert_eq!(other.seen & 2, 2, "holder-b taking over");
}

/// A holder starts no job past its acquires, and the state says what each holder does next.
#[test]
fn the_acquires_bound_holds_and_the_state_tells_the_next_statement() {
    let sys = LeaseSystem::new(Bounds {
        parts: 2,
        acquires: 1,
        ..Bounds::default()
    });
    let mut s = sys.init_states().remove(0);
    let text = |s: &State| sys.state_text(s);
    s = sys.next_state(&s, Action::Timer(0)).expect("acquire");
    assert!(
        text(&s).contains("holder-a: checked, next: begin the write"),
        "{}",
        text(&s)
    );
    s = sys.next_state(&s, run(&s, 0)).expect("begin and fence");
    assert!(
        text(&s).contains("holder-a: next: upsert part 1"),
        "{}",
        text(&s)
    );
    // Upsert, commit (and the next part's check), begin and fence, upsert.
    for _ in 0..4 {
        s = sys.next_state(&s, run(&s, 0)).expect("the job goes on");
    }
    assert!(text(&s).contains("holder-a: next: commit"), "{}", text(&s));
    s = sys.next_state(&s, run(&s, 0)).expect("commit and release");
    assert!(s.lease.is_some_and(|r| r.expires.is_none()), "{}", text(&s));
    assert_eq!(s.holders[0].acquired, 1);
    assert!(
        !sys.enabled(&s, Action::Timer(0)),
        "a second acquire past the bound"
    );
    assert!(
        sys.enabled(&s, Action::Timer(1)),
        "holder-b has its acquire"
    );
}

/// Symmetry: the representative renames every holder index with the holders it sorts, so a
/// state and its mirror (holder-a and holder-b swapped) have one representative, and the lease
/// row still names the holder that holds it.
#[test]
fn a_state_and_its_mirror_have_one_representative() {
    use leaselab_explore::system::representative;
    let sys = LeaseSystem::new(Bounds::default());
    let s = sys.init_states().remove(0);
    let a = sys
        .next_state(&s, Action::Timer(0))
        .expect("holder-a acquires");
    let b = sys
        .next_state(&s, Action::Timer(1))
        .expect("holder-b acquires");
    let (ra, rb) = (representative(&a, 2, false), representative(&b, 2, false));
    assert_eq!(fp(&ra), fp(&rb), "{ra:?}\n{rb:?}");
    for r in [&ra, &rb] {
        let holder = r.lease.expect("a lease row").holder;
        assert_eq!(
            r.holders[holder as usize].h.token(),
            Some(leaselab_model::Token(1)),
            "{r:?}"
        );
    }
    // With holder-a's clock slow it is not interchangeable: it keeps its place.
    let fixed = representative(&b, 2, true);
    assert_eq!(fixed.lease.expect("row").holder, 1);
}
