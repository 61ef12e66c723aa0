//! A path of the search, run again on the model itself: each action becomes the statements the
//! holder sends (on its own connections, with its own clock reading), and each outcome the
//! model returns is compared with what the explorer's view said. The result is a trace in the
//! project's format — `leaselab replay` replays it, `leaselab diff` runs it on PostgreSQL, and
//! the History checkers judge it — or the first step where the view and the model disagree.

use crate::system::{Action, Bounds, LeaseSystem, Said, State};
use leaselab_checkers::check;
use leaselab_model::names::defaults::{DETAIL, SUMMARY};
use leaselab_model::{
    Config, ConnId, DbName, Expiry, Holder, Millis, Op, Outcome, Scope, Token, World,
};
use leaselab_trace::Trace;
use stateright::Model;

/// The view and the model answered one step differently.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("step {step} ({action:?}): the explorer said {said:?}, the model answered `{model}`")]
pub struct Disagreement {
    /// 1-based position in the path.
    pub step: usize,
    /// The action.
    pub action: Action,
    /// The explorer's outcome.
    pub said: Said,
    /// The model's outcome.
    pub model: String,
}

/// The configuration a search runs the model with.
pub fn config(b: &Bounds) -> Config {
    Config {
        fence: b.fence,
        lease_table: b.lease_table,
        ..Config::default()
    }
}

fn part_name(p: u8) -> &'static str {
    if p == 0 {
        SUMMARY
    } else {
        DETAIL
    }
}

struct Runner<'a> {
    sys: &'a LeaseSystem,
    w: World,
}

impl Runner<'_> {
    fn ms(&self, ticks: u8) -> u64 {
        ticks as u64 * self.sys.b.tick_ms
    }

    /// Runs `op` as holder `i` on its connection `kind` of this crash generation.
    fn run(&mut self, s: &State, i: u8, kind: &str, op: Op) -> Outcome {
        let name = leaselab_model::names::holder_name(i as usize);
        let conn = (!kind.is_empty()).then(|| ConnId::new(format!("{name}/{kind}/{}", s.crashes)));
        let local = Millis(self.ms(self.sys.local(s, i)));
        self.w
            .exec_at_local(Holder::new(&name), conn, op, local)
            .outcome
            .clone()
    }

    fn admin(&mut self, op: Op) -> Outcome {
        self.w.run("admin", op)
    }
}

/// Runs `actions` from the initial state on the model; returns the trace, judged by the
/// checkers, or the first disagreement.
pub fn to_trace(sys: &LeaseSystem, actions: &[Action], name: &str) -> Result<Trace, Disagreement> {
    to_trace_steps(sys, actions, name).map(|(t, _)| t)
}

/// [`to_trace`], with how many of the trace's events each action wrote (a tick none, a crash
/// four), so that a listing of the actions can point at the events.
pub fn to_trace_steps(
    sys: &LeaseSystem,
    actions: &[Action],
    name: &str,
) -> Result<(Trace, Vec<usize>), Disagreement> {
    let b = &sys.b;
    let mut counts = Vec::with_capacity(actions.len());
    let mut r = Runner {
        sys,
        w: World::new(config(b)),
    };
    let mut s = sys.init_states().remove(0);
    let scope = Scope::new(leaselab_model::names::defaults::SCOPE);
    for (k, &a) in actions.iter().enumerate() {
        let Some((n, said)) = sys.step(&s, a) else {
            return Err(Disagreement {
                step: k + 1,
                action: a,
                said: Said::Nothing,
                model: "(the action is not enabled in the explorer's state)".into(),
            });
        };
        let token = |i: u8| Token(s.holders[i as usize].token as u64);
        let mut got: Vec<Outcome> = Vec::new();
        let want: Vec<Outcome> = match (a, said) {
            (Action::Tick, _) => {
                r.w.advance(b.tick_ms);
                vec![]
            }
            (Action::Crash, _) => {
                for db in DbName::ALL {
                    got.push(r.admin(Op::Crash { db }));
                    got.push(r.admin(Op::Restart { db }));
                }
                vec![Outcome::Ok; 4]
            }
            (Action::Acquire(i), said) => {
                let holder = Holder::new(leaselab_model::names::holder_name(i as usize));
                got.push(r.run(
                    &s,
                    i,
                    "lease",
                    Op::Acquire {
                        lease: leaselab_model::LeaseName::new(
                            leaselab_model::names::defaults::LEASE,
                        ),
                        holder,
                        ttl_ms: r.ms(b.ttl),
                    },
                ));
                vec![match said {
                    Said::Granted(t, e) => Outcome::Granted {
                        token: Token(t as u64),
                        expires: Expiry::At(Millis(r.ms(e))),
                    },
                    _ => Outcome::Refused,
                }]
            }
            (Action::Check(i), Said::Valid(ok)) => {
                if s.holders[i as usize].lost {
                    // The guard stops the job before any check: nothing reaches the history.
                    vec![]
                } else {
                    let d = Millis(r.ms(s.holders[i as usize].deadline));
                    got.push(r.run(&s, i, "", Op::Check { deadline: d }));
                    vec![if ok { Outcome::Valid } else { Outcome::Expired }]
                }
            }
            (Action::Fence(i), Said::Fence(pass)) => {
                let mut want = Vec::new();
                if b.fence != leaselab_model::FenceMode::CheckThenWrite {
                    got.push(r.run(&s, i, "res", Op::Begin { db: DbName::Res }));
                    want.push(Outcome::Ok);
                }
                got.push(r.run(
                    &s,
                    i,
                    "res",
                    Op::Fence {
                        scope: scope.clone(),
                        token: token(i),
                    },
                ));
                want.push(if pass {
                    Outcome::Passed
                } else {
                    Outcome::Failed
                });
                if !pass && b.fence != leaselab_model::FenceMode::CheckThenWrite {
                    got.push(r.run(&s, i, "res", Op::Rollback { db: DbName::Res }));
                    want.push(Outcome::Ok);
                }
                want
            }
            (Action::Upsert(i), Said::Upsert(ok)) => {
                let p = match s.holders[i as usize].pc {
                    crate::system::Pc::Fenced(p) => p,
                    _ => 0,
                };
                let content = format!(
                    "{}-t{}",
                    leaselab_model::names::holder_name(i as usize),
                    token(i).0
                );
                got.push(r.run(
                    &s,
                    i,
                    "res",
                    Op::Upsert {
                        scope: scope.clone(),
                        part: leaselab_model::Part::new(part_name(p)),
                        content,
                        token: token(i),
                    },
                ));
                if b.fence == leaselab_model::FenceMode::CheckThenWrite {
                    vec![Outcome::Accepted]
                } else if ok {
                    vec![Outcome::Ok]
                } else {
                    got.push(r.run(&s, i, "res", Op::Rollback { db: DbName::Res }));
                    vec![Outcome::Failed, Outcome::Ok]
                }
            }
            (Action::Commit(i), _) => {
                got.push(r.run(&s, i, "res", Op::Commit { db: DbName::Res }));
                vec![Outcome::Ok]
            }
            (Action::Renew(i), said) => {
                let holder = Holder::new(leaselab_model::names::holder_name(i as usize));
                got.push(r.run(
                    &s,
                    i,
                    "renew",
                    Op::Renew {
                        lease: leaselab_model::LeaseName::new(
                            leaselab_model::names::defaults::LEASE,
                        ),
                        holder,
                        token: token(i),
                        ttl_ms: r.ms(b.ttl),
                    },
                ));
                match said {
                    Said::Renewed(e) => vec![Outcome::Renewed {
                        expires: Expiry::At(Millis(r.ms(e))),
                    }],
                    _ => {
                        got.push(r.run(&s, i, "", Op::Lost));
                        vec![Outcome::Refused, Outcome::Ok]
                    }
                }
            }
            (Action::Release(i), said) => {
                let holder = Holder::new(leaselab_model::names::holder_name(i as usize));
                got.push(r.run(
                    &s,
                    i,
                    "lease",
                    Op::Release {
                        lease: leaselab_model::LeaseName::new(
                            leaselab_model::names::defaults::LEASE,
                        ),
                        holder,
                        token: token(i),
                    },
                ));
                vec![if said == Said::Released {
                    Outcome::Released
                } else {
                    Outcome::Refused
                }]
            }
            (a, said) => {
                return Err(Disagreement {
                    step: k + 1,
                    action: a,
                    said,
                    model: "(no statement for this outcome)".into(),
                })
            }
        };
        if got != want {
            return Err(Disagreement {
                step: k + 1,
                action: a,
                said,
                model: got
                    .iter()
                    .map(|o| o.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
        s = n;
        counts.push(got.len());
    }
    let mut t = Trace::new(name, config(b), r.w.history.clone());
    t.expect = check(&t.history).verdict();
    Ok((t, counts))
}

/// The checks the search's state at the end of `actions` says are broken, as the History
/// checkers name them (the explorer's `progress` has no checker).
pub fn search_verdict(sys: &LeaseSystem, actions: &[Action]) -> Vec<leaselab_checkers::Check> {
    let mut s = sys.init_states().remove(0);
    for &a in actions {
        match sys.step(&s, a) {
            Some((n, _)) => s = n,
            None => break,
        }
    }
    crate::system::broke::CHECKS
        .iter()
        .filter(|(bit, _)| s.broken & bit != 0)
        .map(|(_, c)| *c)
        .collect()
}
