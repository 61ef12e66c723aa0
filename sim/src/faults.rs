//! Fault plans. One seed derives everything (TigerBeetle's VOPR habit): which fault kinds are on
//! for this run (swarm testing), how many of each, and every parameter. The plan is printed at
//! start and written into the trace as `fault` lines, one per fault.

use crate::clock::PauseKind;
pub use leaselab_model::holder::Point;
use leaselab_model::{DbName, Millis};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::fmt;

/// The kinds a run can switch on (`--faults LIST`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum FaultKind {
    /// Pause a holder at a code point.
    #[cfg_attr(feature = "clap", value(name = "pause"))]
    PausePoint,
    /// Pause a holder at a time.
    PauseTime,
    /// Hold a link: messages wait until it heals.
    Partition,
    /// Extra latency on a link for a while.
    Delay,
    /// Clock offset and rate skew.
    Skew,
    /// NTP step of a holder's clock.
    Step,
    /// Crash-restart a database.
    Crash,
}

impl FaultKind {
    /// All kinds.
    pub const ALL: [FaultKind; 7] = [
        FaultKind::PausePoint,
        FaultKind::PauseTime,
        FaultKind::Partition,
        FaultKind::Delay,
        FaultKind::Skew,
        FaultKind::Step,
        FaultKind::Crash,
    ];
    /// Spelling in `--faults`.
    pub fn as_str(self) -> &'static str {
        match self {
            FaultKind::PausePoint => "pause",
            FaultKind::PauseTime => "pause-time",
            FaultKind::Partition => "partition",
            FaultKind::Delay => "delay",
            FaultKind::Skew => "skew",
            FaultKind::Step => "step",
            FaultKind::Crash => "crash",
        }
    }

    /// Parses a comma list; `all` and `none` are accepted.
    pub fn parse_list(s: &str) -> Result<Vec<FaultKind>, UnknownFaultKind> {
        match s {
            "all" => return Ok(Self::ALL.to_vec()),
            "none" | "" => return Ok(Vec::new()),
            _ => {}
        }
        let mut v = Vec::new();
        for w in s.split(',') {
            let k = Self::ALL
                .iter()
                .find(|k| k.as_str() == w)
                .ok_or_else(|| UnknownFaultKind(w.to_string()))?;
            if !v.contains(k) {
                v.push(*k);
            }
        }
        Ok(v)
    }
}

/// A word of a fault-kind list that names no kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownFaultKind(pub String);

impl fmt::Display for UnknownFaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = FaultKind::ALL.iter().map(|k| k.as_str()).collect();
        write!(
            f,
            "unknown fault kind `{}`; expected all, none or a comma list of {}",
            self.0,
            names.join(", ")
        )
    }
}

impl std::error::Error for UnknownFaultKind {}

/// One fault.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Pause `holder` the `nth` time it reaches `point`, for `dur_ms`.
    PauseAtPoint {
        /// Holder index.
        holder: usize,
        /// Code point.
        point: Point,
        /// Which occurrence (1-based).
        nth: u32,
        /// Duration.
        dur_ms: u64,
        /// Clock behaviour while paused.
        kind: PauseKind,
    },
    /// Pause `holder` at authority time `at`.
    PauseAtTime {
        /// Holder index.
        holder: usize,
        /// Start (authority time).
        at: Millis,
        /// Duration.
        dur_ms: u64,
        /// Clock behaviour.
        kind: PauseKind,
    },
    /// Hold the link between a holder and a database both ways.
    Partition {
        /// Holder index.
        holder: usize,
        /// Database.
        db: DbName,
        /// Start (authority time).
        at: Millis,
        /// Duration.
        dur_ms: u64,
    },
    /// Extra latency on a link for messages sent in the window.
    Delay {
        /// Holder index.
        holder: usize,
        /// Database.
        db: DbName,
        /// Start (authority time).
        at: Millis,
        /// Duration.
        dur_ms: u64,
        /// Extra latency.
        extra_ms: u64,
    },
    /// Clock offset and rate error of a holder.
    Skew {
        /// Holder index.
        holder: usize,
        /// Offset.
        offset_ms: i64,
        /// Rate error.
        ppm: i64,
    },
    /// NTP step of a holder's clock.
    Step {
        /// Holder index.
        holder: usize,
        /// When (authority time).
        at: Millis,
        /// Jump (negative: back).
        delta_ms: i64,
    },
    /// Crash a database at `at`; it restarts `down_ms` later.
    Crash {
        /// Database.
        db: DbName,
        /// When (authority time).
        at: Millis,
        /// Outage.
        down_ms: u64,
    },
}

/// The time window in which a link fault acts, as both drivers carry it out: from its start
/// until it ends or the faults heal, whichever is first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkWindow {
    /// Holder index.
    pub holder: usize,
    /// Database.
    pub db: DbName,
    /// First affected instant.
    pub from: Millis,
    /// First unaffected instant (capped at the heal).
    pub end: Millis,
    /// `None`: a partition (messages are held until `end`); `Some(ms)`: a delay adding `ms`.
    pub extra_ms: Option<u64>,
}

impl Fault {
    /// The window of a partition or delay that starts before `heal`; `None` for other
    /// faults and for link faults planned after the heal.
    pub fn link_window(&self, heal: Millis) -> Option<LinkWindow> {
        let (holder, db, at, dur_ms, extra_ms) = match *self {
            Fault::Partition {
                holder,
                db,
                at,
                dur_ms,
            } => (holder, db, at, dur_ms, None),
            Fault::Delay {
                holder,
                db,
                at,
                dur_ms,
                extra_ms,
            } => (holder, db, at, dur_ms, Some(extra_ms)),
            _ => return None,
        };
        (at < heal).then_some(LinkWindow {
            holder,
            db,
            from: at,
            end: at.plus(dur_ms).min(heal),
            extra_ms,
        })
    }

    /// The kind.
    pub fn kind(&self) -> FaultKind {
        match self {
            Fault::PauseAtPoint { .. } => FaultKind::PausePoint,
            Fault::PauseAtTime { .. } => FaultKind::PauseTime,
            Fault::Partition { .. } => FaultKind::Partition,
            Fault::Delay { .. } => FaultKind::Delay,
            Fault::Skew { .. } => FaultKind::Skew,
            Fault::Step { .. } => FaultKind::Step,
            Fault::Crash { .. } => FaultKind::Crash,
        }
    }

    /// A smaller version of this fault, for shrinking (shorter, gentler), if any.
    pub fn smaller(&self) -> Option<Fault> {
        let half = |x: u64| if x > 1 { Some(x / 2) } else { None };
        let halfi = |x: i64| if x.abs() > 1 { Some(x / 2) } else { None };
        let mut f = self.clone();
        match &mut f {
            Fault::PauseAtPoint { dur_ms, .. } | Fault::PauseAtTime { dur_ms, .. } => {
                *dur_ms = half(*dur_ms)?
            }
            Fault::Partition { dur_ms, .. } => *dur_ms = half(*dur_ms)?,
            Fault::Delay { extra_ms, .. } => *extra_ms = half(*extra_ms)?,
            Fault::Skew { offset_ms, ppm, .. } => {
                if *ppm != 0 {
                    *ppm = halfi(*ppm).unwrap_or(0);
                } else {
                    *offset_ms = halfi(*offset_ms)?;
                }
            }
            Fault::Step { delta_ms, .. } => *delta_ms = halfi(*delta_ms)?,
            Fault::Crash { down_ms, .. } => *down_ms = half(*down_ms)?,
        }
        Some(f)
    }
}

/// The faults of one run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FaultPlan {
    /// Kinds switched on by the swarm draw (for the printout).
    pub kinds: Vec<FaultKind>,
    /// Every fault, in the order drawn.
    pub faults: Vec<Fault>,
}

impl FaultPlan {
    /// Draws a plan from the run's rng. `allowed` limits the kinds; each allowed kind is on
    /// with probability 1/2 (at least one kind is on when any is allowed), with 1–3 faults.
    pub fn swarm(
        rng: &mut ChaCha8Rng,
        allowed: &[FaultKind],
        holders: usize,
        safety_ms: u64,
        ttl_ms: u64,
    ) -> FaultPlan {
        let mut kinds: Vec<FaultKind> = allowed
            .iter()
            .copied()
            .filter(|_| rng.random_bool(0.5))
            .collect();
        if kinds.is_empty() && !allowed.is_empty() {
            kinds.push(allowed[rng.random_range(0..allowed.len())]);
        }
        let mut faults = Vec::new();
        let span = safety_ms.max(1);
        for k in &kinds {
            let n = rng.random_range(1..=3);
            for _ in 0..n {
                let holder = rng.random_range(0..holders.max(1));
                let db = if rng.random_bool(0.5) {
                    DbName::Lease
                } else {
                    DbName::Res
                };
                let kind = if rng.random_bool(0.7) {
                    PauseKind::Sigstop
                } else {
                    PauseKind::Freeze
                };
                let f = match k {
                    FaultKind::PausePoint => Fault::PauseAtPoint {
                        holder,
                        point: Point::ALL[rng.random_range(0..Point::ALL.len())],
                        nth: rng.random_range(1..=4),
                        dur_ms: rng.random_range(100..=3 * ttl_ms),
                        kind,
                    },
                    FaultKind::PauseTime => Fault::PauseAtTime {
                        holder,
                        at: Millis(rng.random_range(0..span)),
                        dur_ms: rng.random_range(100..=3 * ttl_ms),
                        kind,
                    },
                    FaultKind::Partition => Fault::Partition {
                        holder,
                        db,
                        at: Millis(rng.random_range(0..span)),
                        dur_ms: rng.random_range(100..=3 * ttl_ms),
                    },
                    FaultKind::Delay => Fault::Delay {
                        holder,
                        db,
                        at: Millis(rng.random_range(0..span)),
                        dur_ms: rng.random_range(100..=2 * ttl_ms),
                        extra_ms: rng.random_range(10..=2 * ttl_ms),
                    },
                    FaultKind::Skew => Fault::Skew {
                        holder,
                        offset_ms: rng.random_range(0..=5_000),
                        ppm: rng.random_range(-200_000..=200_000),
                    },
                    FaultKind::Step => Fault::Step {
                        holder,
                        at: Millis(rng.random_range(0..span)),
                        delta_ms: rng.random_range(-2 * ttl_ms as i64..=2 * ttl_ms as i64),
                    },
                    FaultKind::Crash => Fault::Crash {
                        db,
                        at: Millis(rng.random_range(0..span)),
                        down_ms: rng.random_range(10..=2 * ttl_ms),
                    },
                };
                faults.push(f);
            }
        }
        FaultPlan { kinds, faults }
    }
}

/// A fault that happens at an instant, as both drivers carry it out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Timed {
    /// An NTP step of `holder`'s clock (the clock itself knows it, [`FaultPlan::clocks`]): its
    /// timers fall due earlier or later than the driver planned.
    ClockStep {
        /// Holder index.
        holder: usize,
    },
    /// `holder` pauses for `dur_ms`.
    Pause {
        /// Holder index.
        holder: usize,
        /// Duration.
        dur_ms: u64,
        /// Clock behaviour while paused.
        kind: PauseKind,
    },
    /// `db` crashes; it restarts `down_ms` later, or at the heal if that comes first.
    Crash {
        /// Database.
        db: DbName,
        /// Outage.
        down_ms: u64,
    },
}

impl FaultPlan {
    /// The faults that happen at an instant, with their place in the plan: a driver runs those
    /// that fall on the same instant in plan order. A pause or crash planned at or after the
    /// heal does not happen (the run is fault-free from then on); a clock step does, since the
    /// clock keeps it.
    pub(crate) fn timed(&self, heal: Millis) -> impl Iterator<Item = (usize, Millis, Timed)> + '_ {
        self.faults.iter().enumerate().filter_map(move |(i, f)| {
            let (at, t) = match *f {
                Fault::Step { holder, at, .. } => (at, Timed::ClockStep { holder }),
                Fault::PauseAtTime {
                    holder,
                    at,
                    dur_ms,
                    kind,
                } if at < heal => (
                    at,
                    Timed::Pause {
                        holder,
                        dur_ms,
                        kind,
                    },
                ),
                Fault::Crash { db, at, down_ms } if at < heal => (at, Timed::Crash { db, down_ms }),
                _ => return None,
            };
            Some((i, at, t))
        })
    }

    /// Each holder's clock as the plan sets it: offsets and skews added up, NTP steps listed.
    pub fn clocks(&self, holders: usize) -> Vec<crate::clock::NodeClock> {
        let mut clocks = vec![crate::clock::NodeClock::default(); holders];
        for f in &self.faults {
            match *f {
                Fault::Skew {
                    holder,
                    offset_ms,
                    ppm,
                } => {
                    if let Some(c) = clocks.get_mut(holder) {
                        c.offset_ms += offset_ms;
                        c.skew_ppm += ppm;
                    }
                }
                Fault::Step {
                    holder,
                    at,
                    delta_ms,
                } => {
                    if let Some(c) = clocks.get_mut(holder) {
                        c.steps.push((at, delta_ms));
                    }
                }
                _ => {}
            }
        }
        clocks
    }

    /// The pause planned for `holder` the `nth` time it reaches `point`: (duration, kind).
    pub fn point_pause(&self, holder: usize, point: Point, nth: u32) -> Option<(u64, PauseKind)> {
        self.faults.iter().find_map(|f| match *f {
            Fault::PauseAtPoint {
                holder: h,
                point: p,
                nth: n,
                dur_ms,
                kind,
            } if h == holder && p == point && n == nth => Some((dur_ms, kind)),
            _ => None,
        })
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
