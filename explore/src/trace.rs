//! A path of the search, run again on the model itself: each action becomes the statements the
//! holder sends (on its own connections, with its own clock reading), and each outcome the
//! model returns is compared with what the explorer's view said. The result is a trace in the
//! project's format — `leaselab replay` replays it, `leaselab diff` runs it on PostgreSQL, and
//! the History checkers judge it — or the first step where the view and the model disagree.

use crate::system::{Action, Bounds, Event, LeaseSystem, State};
use leaselab_checkers::check;
use leaselab_model::{Config, DbName, Holder, Millis, Op, Outcome, World};
use leaselab_trace::Trace;
use stateright::Model;

/// The view and the model answered one statement differently.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "step {step} ({action:?}): `{op}` — the explorer said `{said}`, the model answered `{model}`"
)]
pub struct Disagreement {
    /// 1-based position in the path.
    pub step: usize,
    /// The action.
    pub action: Action,
    /// The statement (or what went wrong before any).
    pub op: String,
    /// The explorer's outcome.
    pub said: String,
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

/// Runs `actions` from the initial state on the model; returns the trace, judged by the
/// checkers, or the first disagreement.
pub fn to_trace(sys: &LeaseSystem, actions: &[Action], name: &str) -> Result<Trace, Disagreement> {
    to_trace_steps(sys, actions, name).map(|(t, _)| t)
}

/// [`to_trace`], with how many of the trace's events each action wrote (a tick none, or the
/// pauses it begins; a crash four), so that a listing of the actions can point at the events.
///
/// A holder that could send its next statement when the search let time pass instead was held
/// back — what a pause does to a real holder (a GC pause, SIGSTOP). The trace says so: a
/// `pause` before the first such tick and a `resume` before the holder's next step, so every
/// view draws the span it was not scheduled and the checkers' counters see the pause.
pub fn to_trace_steps(
    sys: &LeaseSystem,
    actions: &[Action],
    name: &str,
) -> Result<(Trace, Vec<usize>), Disagreement> {
    let b = &sys.b;
    let mut counts = Vec::with_capacity(actions.len());
    let mut w = World::new(config(b));
    let mut s = sys.init_states().remove(0);
    let mut held = [false; crate::bounds::MAX_HOLDERS];
    for (k, &a) in actions.iter().enumerate() {
        let before = w.history.events.len();
        match a {
            Action::Tick => {
                for i in 0..b.holders as u8 {
                    let could = s.holders[i as usize]
                        .pending
                        .is_some_and(|p| sys.enabled(&s, Action::Run(i, p.stmt)));
                    if could && !held[i as usize] {
                        held[i as usize] = true;
                        w.exec_at_local(holder_of(i), None, Op::Pause, local_of(sys, &s, i));
                    }
                }
            }
            Action::Run(i, _) | Action::Timer(i) if held[i as usize] => {
                held[i as usize] = false;
                w.exec_at_local(holder_of(i), None, Op::Resume, local_of(sys, &s, i));
            }
            _ => {}
        }
        let mut events = Vec::new();
        let Some(n) = sys.step(&s, a, &mut |e| events.push(e)) else {
            return Err(Disagreement {
                step: k + 1,
                action: a,
                op: String::new(),
                said: String::new(),
                model: "(the action is not enabled in the explorer's state)".into(),
            });
        };
        for e in events {
            run_event(sys, &s, &mut w, e).map_err(|(op, said, model)| Disagreement {
                step: k + 1,
                action: a,
                op,
                said,
                model,
            })?;
        }
        counts.push(w.history.events.len() - before);
        s = n;
    }
    let mut t = Trace::new(name, config(b), w.history.clone());
    t.expect = check(&t.history).verdict();
    Ok((t, counts))
}

/// Runs one event of a step on the model, as the holder's driver would: each statement on the
/// holder's own connection with its own clock reading, compared with the view's answer.
fn run_event(
    sys: &LeaseSystem,
    s: &State,
    w: &mut World,
    e: Event,
) -> Result<(), (String, String, String)> {
    let actor = holder_of;
    let local = |i: u8| local_of(sys, s, i);
    let differs = |op: &Op, said: &Outcome, got: &Outcome| {
        (op.to_string(), said.to_string(), got.to_string())
    };
    match e {
        Event::Tick => {
            w.advance(sys.b.tick_ms);
        }
        Event::Crash => {
            for db in DbName::ALL {
                for op in [Op::Crash { db }, Op::Restart { db }] {
                    let got = w.run("admin", op.clone());
                    if got != Outcome::Ok {
                        return Err(differs(&op, &Outcome::Ok, &got));
                    }
                }
            }
        }
        Event::Sent {
            holder,
            conn,
            op,
            outcome,
        } => {
            let got = w
                .exec_at_local(actor(holder), Some(conn), op.clone(), local(holder))
                .outcome
                .clone();
            if got != outcome {
                return Err(differs(&op, &outcome, &got));
            }
        }
        Event::Record { holder, op } => {
            w.exec_at_local(actor(holder), None, op, local(holder));
        }
        Event::Abandon { holder, db, conn } => {
            w.exec_at_local(
                actor(holder),
                Some(conn),
                Op::Disconnect { db },
                local(holder),
            );
        }
    }
    Ok(())
}

/// Holder `i`'s name in a trace.
fn holder_of(i: u8) -> Holder {
    Holder::new(leaselab_model::names::holder_name(i as usize))
}

/// Holder `i`'s own clock in state `s`, in milliseconds.
fn local_of(sys: &LeaseSystem, s: &State, i: u8) -> Millis {
    Millis(sys.local(s, i) as u64 * sys.b.tick_ms)
}

/// The checks the search's state at the end of `actions` says are broken, as the History
/// checkers name them (the explorer's `progress` has no checker).
pub fn search_verdict(sys: &LeaseSystem, actions: &[Action]) -> Vec<leaselab_checkers::Check> {
    let mut s = sys.init_states().remove(0);
    for &a in actions {
        match sys.step(&s, a, &mut |_| {}) {
            Some(n) => s = n,
            None => break,
        }
    }
    crate::system::Always::ALL
        .iter()
        .filter(|p| s.broken & p.bit() != 0)
        .filter_map(|p| p.check())
        .collect()
}
