//! The set of model states a run can be in when the database itself is nondeterministic.
//!
//! PostgreSQL decides some orders by a race (the waiters of an ended inserting transaction, see
//! the engine's module doc). The model does not guess: every such decision is a `Choices`
//! pick, and this module runs a step under every pick, keeping each resulting world whose
//! outcome the observer accepts. A replay or a differential compares a step against this set:
//! a step diverges only when *no* allowed world produced what was observed.

use crate::history::{Event, Outcome};
use crate::world::World;

/// How many worlds and alternatives one step may branch into (a few waiters race at most).
const MAX_WORLDS: usize = 16;
const MAX_RUNS: usize = 256;

/// Every world consistent with what was observed so far (never empty).
#[derive(Clone, Debug)]
pub struct Allowed {
    worlds: Vec<World>,
    /// Some step so far had more than one outcome or state under the orders PostgreSQL may
    /// take: what followed may depend on its timing.
    timing: bool,
}

impl Allowed {
    /// Starts from one world.
    pub fn new(world: World) -> Self {
        Allowed {
            worlds: vec![world],
            timing: false,
        }
    }

    /// Whether PostgreSQL's timing decided anything in the steps so far: some step could end
    /// in more than one outcome or state. A run where it did not is the same on every rerun.
    pub fn timing_decided(&self) -> bool {
        self.timing
    }

    /// The first world: the one FIFO picks lead to when they are allowed.
    pub fn first(&self) -> &World {
        &self.worlds[0]
    }

    /// All worlds still allowed.
    pub fn worlds(&self) -> &[World] {
        &self.worlds
    }

    /// Runs `e` again (as [`World::rerun`]) in every world under every order the database may
    /// take, keeps the worlds whose outcome `accept` accepts, and returns the outcome of the
    /// first kept one. If none is accepted, every outcome that was allowed is returned (the
    /// first is the FIFO world's) and the run continues from the FIFO world.
    pub fn step(
        &mut self,
        e: &Event,
        accept: impl Fn(&Outcome) -> bool,
    ) -> Result<Outcome, Vec<Outcome>> {
        // Fast path: one world, no race possible in this step — no copy needed.
        if self.worlds.len() == 1 && !self.worlds[0].model.race_possible() {
            let got = self.worlds[0].rerun(e);
            return if accept(&got) {
                Ok(got)
            } else {
                Err(vec![got])
            };
        }
        let mut kept: Vec<World> = Vec::new();
        let mut seen: Vec<Outcome> = Vec::new();
        let mut keys: Vec<String> = Vec::new();
        let mut all: Vec<(Outcome, String)> = Vec::new();
        let mut fifo: Option<World> = None;
        for w in &self.worlds {
            for (out, next) in alternatives(w, e) {
                if fifo.is_none() {
                    fifo = Some(next.clone());
                }
                let key = format!("{:?}", next.model);
                let branch = (out.clone(), key.clone());
                if !all.contains(&branch) {
                    all.push(branch);
                }
                if accept(&out) {
                    if !keys.contains(&key) && kept.len() < MAX_WORLDS {
                        keys.push(key);
                        kept.push(next);
                    }
                } else if !seen.contains(&out) {
                    seen.push(out);
                }
            }
        }
        self.timing |= all.len() > 1;
        if kept.is_empty() {
            // Keep going from the FIFO world, as a replay that lists every divergence does.
            if let Some(f) = fifo {
                self.worlds = vec![f];
            }
            return Err(seen);
        }
        let out = kept[0]
            .history
            .events
            .last()
            .map(|ev| ev.outcome.clone())
            .unwrap_or(Outcome::Ok);
        self.worlds = kept;
        Ok(out)
    }

    /// The worlds, for the final-state comparison.
    pub fn into_worlds(self) -> Vec<World> {
        self.worlds
    }
}

/// `e` run in a copy of `w` under every sequence of picks, FIFO first.
fn alternatives(w: &World, e: &Event) -> Vec<(Outcome, World)> {
    let mut out = Vec::new();
    let mut todo: Vec<Vec<usize>> = vec![Vec::new()];
    let mut runs = 0;
    while let Some(script) = todo.pop() {
        if runs == MAX_RUNS {
            break;
        }
        runs += 1;
        let mut next = w.clone();
        next.model.set_choices(script.clone());
        let got = next.rerun(e);
        let arities = next.model.choices_seen();
        next.model.set_choices(Vec::new());
        // Every later decision not yet varied: its other picks, with the earlier ones fixed.
        for i in (script.len()..arities.len()).rev() {
            for alt in (1..arities[i]).rev() {
                let mut s: Vec<usize> = (0..i)
                    .map(|j| script.get(j).copied().unwrap_or(0))
                    .collect();
                s.push(alt);
                todo.push(s);
            }
        }
        out.push((got, next));
    }
    out
}

/// Whether PostgreSQL's timing could have decided anything in `events` (run from `world`,
/// following each event's recorded outcome): a negative control shows a wrong rule only where
/// it did not, so that every rerun of the trace shows the same divergence.
pub fn timing_decides(world: World, events: &[Event]) -> bool {
    let mut a = Allowed::new(world);
    for e in events {
        let allowed = a.step(e, |o| *o == e.outcome).is_ok();
        if a.timing_decided() {
            return true;
        }
        if !allowed {
            // The right model does not allow this step at all: a divergence of its own, not
            // timing.
            return false;
        }
    }
    false
}
