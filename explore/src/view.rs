//! What the Explorer shows a learner: actions named by holder, each step's outcome and the
//! state after it in milliseconds with only the run's holders, and the address that opens a
//! path (the shortest counterexample) directly — stateright's own view is the `Debug` dump of
//! the packed state, in ticks, with every slot of [`MAX_HOLDERS`](crate::system::MAX_HOLDERS).

use crate::system::{Action, Event, LeaseSystem, State, Stmt};
use leaselab_model::names::holder_name;
use std::fmt::Write as _;

/// A deferred statement in words, as a path item names it.
fn stmt_text(s: Stmt) -> String {
    match s {
        Stmt::Acquire => "its acquire".into(),
        Stmt::Renew(t) => format!("its renew (token {t})"),
        Stmt::Release(t) => format!("its release (token {t})"),
        Stmt::Begin => "the BEGIN of its write (its local check passed)".into(),
        Stmt::Fence(t) => format!("its fence (token {t})"),
        Stmt::Upsert { part, token } => format!("its upsert of part {} (token {token})", part + 1),
        Stmt::Commit => "its COMMIT".into(),
        Stmt::Rollback => "its ROLLBACK".into(),
    }
}

impl LeaseSystem {
    fn ms(&self, ticks: u8) -> u64 {
        ticks as u64 * self.b.tick_ms
    }

    /// An action in words: `holder-a timer`, `tick (+100 ms)`.
    pub fn action_text(&self, a: Action) -> String {
        let who = |i: u8| holder_name(i as usize);
        match a {
            Action::Tick => format!("tick (+{} ms)", self.b.tick_ms),
            Action::Crash => "both databases crash and restart".into(),
            Action::Timer(i) => format!("{} timer", who(i)),
            Action::Run(i, stmt) => format!("{} sends {}", who(i), stmt_text(stmt)),
        }
    }

    /// What a step did, in words: each statement sent and its answer, each client event.
    pub fn events_text(&self, events: &[Event]) -> String {
        let mut out = Vec::new();
        for e in events {
            match e {
                Event::Tick | Event::Crash => {}
                Event::Sent { op, outcome, .. } => out.push(format!("{op} → {outcome}")),
                Event::Record { op, .. } => out.push(op.to_string()),
                Event::Abandon { db, .. } => {
                    out.push(leaselab_model::Op::Disconnect { db: *db }.to_string())
                }
            }
        }
        out.join("; ")
    }

    /// The state in a few lines: database time, the lease row, the floor and the parts, then
    /// each of the run's holders, times in milliseconds.
    pub fn state_text(&self, s: &State) -> String {
        let mut out = format!("t={} ms", self.ms(s.now));
        match s.lease {
            None => out.push_str(" · lease: none"),
            Some(r) => {
                let until = r.expires.map_or("released".to_string(), |e| {
                    format!("until {} ms", self.ms(e))
                });
                let _ = write!(
                    out,
                    " · lease: {} token {} {until}",
                    holder_name(r.holder as usize),
                    r.token
                );
            }
        }
        let _ = write!(out, " · floor {}", s.floor);
        for (p, part) in ["summary", "detail"]
            .iter()
            .enumerate()
            .take(self.b.parts as usize)
        {
            if let Some((w, t)) = s.parts[p] {
                let _ = write!(out, " · {part}: {} token {t}", holder_name(w as usize));
            }
        }
        for (i, slot) in s.holders.iter().enumerate().take(self.b.holders) {
            let h = &slot.h;
            let at = match slot.pending.map(|p| p.stmt) {
                Some(Stmt::Begin) => "checked, next: begin the write".to_string(),
                Some(Stmt::Fence(_)) => "next: fence (waits for the floor's lock)".to_string(),
                Some(Stmt::Upsert { part, .. }) => format!("next: upsert part {}", part + 1),
                Some(Stmt::Commit) => "next: commit".to_string(),
                Some(other) => format!("next: {other:?}"),
                None if h.between_jobs() => "between jobs".to_string(),
                None => "working".to_string(),
            };
            let _ = write!(out, "\n{}: {at}", holder_name(i));
            if let (Some(t), Some(d)) = (h.token(), h.deadline()) {
                let _ = write!(
                    out,
                    ", token {}, deadline {} ms by its clock (now {} ms)",
                    t,
                    d.0,
                    self.ms(self.local(s, i as u8))
                );
            }
            if h.lost() {
                out.push_str(", lease lost");
            }
            if slot.cut {
                out.push_str(", its transaction cut by the crash");
            }
        }
        if s.broken != 0 {
            let broken: Vec<String> = crate::system::Always::ALL
                .iter()
                .filter(|p| s.broken & p.bit() != 0)
                .filter_map(|p| p.check())
                .map(|c| c.to_string())
                .collect();
            let _ = write!(out, "\nBROKEN: {}", broken.join(", "));
        }
        out
    }

    /// The Explorer's address of the state `actions` lead to: `#/steps/0/i/j/…`, each index
    /// the action's place among those enabled where it was taken (as the Explorer lists them).
    /// `None` if an action was not enabled.
    pub fn explorer_path(&self, actions: &[Action]) -> Option<String> {
        use stateright::Model;
        let mut s = self.init_states().remove(0);
        let mut path = String::from("#/steps/0");
        for &a in actions {
            let mut enabled = Vec::new();
            self.actions(&s, &mut enabled);
            let i = enabled.iter().position(|x| *x == a)?;
            let _ = write!(path, "/{i}");
            s = self.next_state(&s, a)?;
        }
        Some(path)
    }
}
