//! The safety envelope: how large a fault must be before a stale write gets through, found by
//! bisection over simulation runs. One fault at a time on an otherwise quiet run (two holders,
//! one seed): a pause between the local check and the write, a slow holder clock (rate skew),
//! and — at a given skew — the holder's safety margin. With the scope fence no size lets a
//! stale write through, and the search says so with every size it tried.
//!
//! Bisection assumes that a larger fault breaks at least as often as a smaller one; the runs
//! are deterministic, so the boundary it reports is a pair of runs anyone can re-run: the
//! largest size that held and the smallest that broke.

use crate::clock::PauseKind;
use crate::faults::{Fault, FaultKind, FaultPlan, Point};
use crate::run_setup;
use crate::scenario::{Driver, Setup, SimOptions, SimRun};
use leaselab_checkers::Check;

/// Parts of holder-a's job under the clock probes (about 70 ms each: a job of ~2 s).
pub const LONG_JOB_PARTS: usize = 30;

/// Which fault is grown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probe {
    /// A SIGSTOP-style pause of holder-a in its first write, in ms: after the part's upsert and
    /// before its commit (the write has left the holder, so neither its local deadline nor its
    /// `lost` flag can call it back); under check-then-write, between its floor check and its
    /// write (F6a's spot).
    Pause,
    /// holder-a's clock runs slow by this many parts per million (its renewer's period and its
    /// local deadline stretch), with no pause; its job writes [`LONG_JOB_PARTS`] parts, so it
    /// lasts longer than the TTL and depends on its renewer.
    Skew,
    /// holder-a's safety margin in ms, under a fixed slow clock: the largest margin that still
    /// lets a stale write through.
    Margin,
}

impl Probe {
    /// The name in the table.
    pub fn as_str(self) -> &'static str {
        match self {
            Probe::Pause => "pause",
            Probe::Skew => "skew",
            Probe::Margin => "margin",
        }
    }

    /// The unit of its sizes.
    pub fn unit(self) -> &'static str {
        match self {
            Probe::Pause | Probe::Margin => "ms",
            Probe::Skew => "ppm slow",
        }
    }
}

/// What the search is run on.
#[derive(Clone, Debug)]
pub struct Envelope {
    /// The run's options (fence, TTL, renew, margin); faults are replaced by the probe's.
    pub opts: SimOptions,
    /// The seed of the quiet run (latencies, start offsets, job gaps).
    pub seed: u64,
    /// The slow clock under which [`Probe::Margin`] is searched, in ppm.
    pub margin_skew_ppm: u64,
}

/// One probe's result.
#[derive(Clone, Debug)]
pub struct Boundary {
    /// Which fault.
    pub probe: Probe,
    /// Every size tried, in order, with whether a stale write got through.
    pub tried: Vec<(u64, bool)>,
    /// The boundary: for pause and skew the smallest size that broke, for margin the largest
    /// margin that broke. `None`: no size tried broke.
    pub found: Option<u64>,
    /// The run at the boundary (or at the largest size tried when none broke).
    pub run: SimRun,
}

/// Whether a run let a stale write through: the resource kept a write whose token was below
/// one already accepted (I3) or a stale holder's effect was kept (acceptance).
pub fn broke(run: &SimRun) -> bool {
    run.report.violated(Check::I3) || run.report.violated(Check::Acceptance)
}

impl Envelope {
    /// The standard envelope of `fence`-like options: two holders, 20 s of one fault, seed 0.
    pub fn new(opts: SimOptions) -> Envelope {
        Envelope {
            opts: SimOptions {
                holders: 2,
                safety_ms: 20_000,
                liveness_ms: 0,
                ..opts
            },
            seed: 0,
            margin_skew_ppm: 850_000,
        }
    }

    /// The setup of one probe at `size`.
    pub fn setup(&self, probe: Probe, size: u64) -> Setup {
        let mut opts = self.opts.clone();
        let fault = match probe {
            Probe::Pause => Fault::PauseAtPoint {
                holder: 0,
                point: if opts.fence == leaselab_model::FenceMode::CheckThenWrite {
                    Point::AfterFence
                } else {
                    Point::BeforeCommit
                },
                nth: if opts.fence == leaselab_model::FenceMode::CheckThenWrite {
                    1
                } else {
                    2
                },
                dur_ms: size,
                kind: PauseKind::Sigstop,
            },
            Probe::Skew => Fault::Skew {
                holder: 0,
                offset_ms: 0,
                ppm: -(size as i64),
            },
            Probe::Margin => {
                opts.margin_ms = size;
                Fault::Skew {
                    holder: 0,
                    offset_ms: 0,
                    ppm: -(self.margin_skew_ppm as i64),
                }
            }
        };
        opts.faults = vec![fault.kind()];
        let mut s = Setup::derive(self.seed, &opts);
        s.plan = FaultPlan {
            kinds: vec![fault.kind()],
            faults: vec![fault],
        };
        if probe != Probe::Pause {
            // A job longer than the TTL, so that a slow renewer lets the lease expire while
            // holder-a is still writing: its parts are written one after another.
            s.holders[0].parts = (0..LONG_JOB_PARTS)
                .map(|i| leaselab_model::Part::new(format!("part-{i:02}")))
                .collect();
        }
        s
    }

    /// Runs one probe at `size` on the fast driver.
    pub fn run(&self, probe: Probe, size: u64) -> SimRun {
        run_setup(self.setup(probe, size), Driver::Fast)
    }

    /// The sizes a probe ranges over: from `lo` to `hi` inclusive.
    pub fn range(&self, probe: Probe) -> (u64, u64) {
        match probe {
            Probe::Pause => (1, 4 * self.opts.ttl_ms + self.opts.lock_delay_ms),
            Probe::Skew => (0, 950_000),
            Probe::Margin => (0, self.opts.ttl_ms - 1),
        }
    }

    /// Searches one probe: a ladder of sizes over the whole range first (so a fence that never
    /// breaks is shown not to at every scale), then bisection between the last size that held
    /// and the first that broke.
    pub fn search(&self, probe: Probe) -> Boundary {
        let (lo, hi) = self.range(probe);
        let mut tried: Vec<(u64, bool)> = Vec::new();
        let probe_at = |size: u64, tried: &mut Vec<(u64, bool)>| -> bool {
            let b = broke(&self.run(probe, size));
            tried.push((size, b));
            b
        };
        // Pause and skew break above a size; margin breaks below one (a larger margin is safer).
        let grows = probe != Probe::Margin;
        let ladder: Vec<u64> = (0..=12).map(|i| lo + (hi - lo) * i / 12).collect();
        let mut edge: Option<(u64, u64)> = None; // (held, broke)
        let mut prev: Option<(u64, bool)> = None;
        let order: Vec<u64> = if grows {
            ladder
        } else {
            ladder.into_iter().rev().collect()
        };
        for size in order {
            let b = probe_at(size, &mut tried);
            if let Some((p, pb)) = prev {
                if !pb && b && edge.is_none() {
                    edge = Some((p, size));
                }
            }
            prev = Some((size, b));
        }
        let first_broke = tried.iter().find(|(_, b)| *b).map(|(s, _)| *s);
        let (held, mut brk) = match (edge, first_broke) {
            (Some(e), _) => e,
            // Broke already at the first rung: the boundary is below it.
            (None, Some(s)) => (if grows { lo } else { hi }, s),
            (None, None) => {
                let last = if grows { hi } else { lo };
                return Boundary {
                    probe,
                    run: self.run(probe, last),
                    tried,
                    found: None,
                };
            }
        };
        let mut held = held;
        while held.abs_diff(brk) > 1 {
            let mid = (held + brk) / 2;
            if probe_at(mid, &mut tried) {
                brk = mid;
            } else {
                held = mid;
            }
        }
        Boundary {
            probe,
            run: self.run(probe, brk),
            tried,
            found: Some(brk),
        }
    }
}

/// The kinds a probe's fault belongs to (for the printout).
pub fn kind_of(probe: Probe) -> FaultKind {
    match probe {
        Probe::Pause => FaultKind::PausePoint,
        Probe::Skew | Probe::Margin => FaultKind::Skew,
    }
}
