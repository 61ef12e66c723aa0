//! What the Explorer shows a learner: actions named by holder, each step's outcome and the
//! state after it in milliseconds with only the run's holders, and the address that opens a
//! path (the shortest counterexample) directly — stateright's own view is the `Debug` dump of
//! the packed state, in ticks, with every slot of [`MAX_HOLDERS`](crate::system::MAX_HOLDERS).

use crate::system::{Action, LeaseSystem, Pc, Said, State};
use leaselab_model::names::holder_name;
use std::fmt::Write as _;

impl LeaseSystem {
    fn ms(&self, ticks: u8) -> u64 {
        ticks as u64 * self.b.tick_ms
    }

    /// An action in words: `holder-a acquire`, `tick (+100 ms)`.
    pub fn action_text(&self, a: Action) -> String {
        let who = |i: u8| holder_name(i as usize);
        match a {
            Action::Tick => format!("tick (+{} ms)", self.b.tick_ms),
            Action::Crash => "both databases crash and restart".into(),
            Action::Acquire(i) => format!("{} acquire", who(i)),
            Action::Check(i) => format!("{} local check", who(i)),
            Action::Fence(i) => format!("{} fence", who(i)),
            Action::Upsert(i) => format!("{} upsert", who(i)),
            Action::Commit(i) => format!("{} commit", who(i)),
            Action::Renew(i) => format!("{} renew", who(i)),
            Action::Release(i) => format!("{} release", who(i)),
        }
    }

    /// What a step returned, in words.
    pub fn said_text(&self, said: Said) -> String {
        match said {
            Said::Nothing => String::new(),
            Said::Granted(t, e) => format!("granted token {t}, expires {} ms", self.ms(e)),
            Said::Refused => "refused".into(),
            Said::Renewed(e) => format!("renewed until {} ms", self.ms(e)),
            Said::Released => "released".into(),
            Said::Valid(true) => "valid".into(),
            Said::Valid(false) => "expired".into(),
            Said::Fence(true) => "passed".into(),
            Said::Fence(false) => "failed (rolled back)".into(),
            Said::Upsert(true) => "written".into(),
            Said::Upsert(false) => "refused (rolled back)".into(),
            Said::Committed => "committed".into(),
        }
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
                let _ = write!(out, " · {part}: {} t{t}", holder_name(w as usize));
            }
        }
        for (i, h) in s.holders.iter().enumerate().take(self.b.holders) {
            let at = match h.pc {
                Pc::Idle => "idle".to_string(),
                Pc::Check(p) => format!("next: check before part {}", p + 1),
                Pc::Checked(p) => format!("checked, next: fence of part {}", p + 1),
                Pc::Fenced(p) => format!("fenced, next: upsert part {}", p + 1),
                Pc::Upserted(p) => format!("upserted part {}, next: commit", p + 1),
                Pc::Release => "next: release".to_string(),
                Pc::Done => "done".to_string(),
            };
            let _ = write!(out, "\n{}: {at}", holder_name(i));
            if h.token > 0 {
                let _ = write!(
                    out,
                    ", token {}, deadline {} ms by its clock (now {} ms)",
                    h.token,
                    self.ms(h.deadline),
                    self.ms(self.local(s, i as u8))
                );
            }
            if h.lost {
                out.push_str(", lease lost");
            }
        }
        if s.broken != 0 {
            let broken: Vec<String> = crate::system::broke::CHECKS
                .iter()
                .filter(|(bit, _)| s.broken & bit != 0)
                .map(|(_, c)| c.to_string())
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
