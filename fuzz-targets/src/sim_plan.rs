//! `sim_plan`: bytes → a simulation setup (a seed for latencies and start times, 2–4 holders,
//! a fault plan of up to [`MAX_FAULTS`] faults of every kind with the swarm's value ranges:
//! pauses at code points and at times, partitions, delays, clock offsets and rate skews, NTP
//! steps, database crashes) → a run on the fast driver with the scope fence. Every check must
//! hold, liveness must pass once the faults heal, the driver must report no error, and the
//! same setup run again must give the same trace, byte for byte.

use crate::bytes::{pick, wide, wide_bytes};
use crate::Finding;
use arbitrary::{Arbitrary, Unstructured};
use leaselab_model::names::defaults;
use leaselab_model::{DbName, FenceMode, Millis};
use leaselab_sim::clock::PauseKind;
use leaselab_sim::{run_setup, Driver, Fault, FaultKind, FaultPlan, Point, Setup, SimOptions};

/// Faults in one plan, at most.
pub const MAX_FAULTS: usize = 6;
/// The safety phase (faults act), virtual ms.
pub const SAFETY_MS: u64 = 10_000;
/// The liveness phase after the heal, virtual ms.
pub const LIVENESS_MS: u64 = 10_000;

const TTL: u64 = defaults::TTL_MS;
const DBS: [DbName; 2] = [DbName::Lease, DbName::Res];
const PAUSES: [PauseKind; 2] = [PauseKind::Sigstop, PauseKind::Freeze];
/// Rate skew is read as (wide − 32,768) × this, ppm: about ±200,000 like the swarm's.
const PPM_STEP: i64 = 6;

/// One decoded input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Input {
    /// Derives latencies, retry gaps and start offsets ([`Setup::derive`]).
    pub seed: u64,
    /// 2–4.
    pub holders: usize,
    /// The plan.
    pub faults: Vec<Fault>,
}

/// A value in `lo..=hi` from two bytes.
fn range(u: &mut Unstructured<'_>, lo: u64, hi: u64) -> arbitrary::Result<u64> {
    Ok(lo + wide(u)? % (hi - lo + 1))
}

fn fault(u: &mut Unstructured<'_>, holders: usize) -> arbitrary::Result<Fault> {
    let k = FaultKind::ALL[pick(u, FaultKind::ALL.len())?];
    let holder = pick(u, holders)?;
    Ok(match k {
        FaultKind::PausePoint => Fault::PauseAtPoint {
            holder,
            point: Point::ALL[pick(u, Point::ALL.len())?],
            nth: 1 + pick(u, 4)? as u32,
            dur_ms: range(u, 100, 3 * TTL)?,
            kind: PAUSES[pick(u, 2)?],
        },
        FaultKind::PauseTime => Fault::PauseAtTime {
            holder,
            at: Millis(range(u, 0, SAFETY_MS - 1)?),
            dur_ms: range(u, 100, 3 * TTL)?,
            kind: PAUSES[pick(u, 2)?],
        },
        FaultKind::Partition => Fault::Partition {
            holder,
            db: DBS[pick(u, 2)?],
            at: Millis(range(u, 0, SAFETY_MS - 1)?),
            dur_ms: range(u, 100, 3 * TTL)?,
        },
        FaultKind::Delay => Fault::Delay {
            holder,
            db: DBS[pick(u, 2)?],
            at: Millis(range(u, 0, SAFETY_MS - 1)?),
            dur_ms: range(u, 100, 2 * TTL)?,
            extra_ms: range(u, 10, 2 * TTL)?,
        },
        FaultKind::Skew => Fault::Skew {
            holder,
            offset_ms: range(u, 0, 5_000)? as i64,
            ppm: (wide(u)? as i64 - 32_768) * PPM_STEP,
        },
        FaultKind::Step => Fault::Step {
            holder,
            at: Millis(range(u, 0, SAFETY_MS - 1)?),
            delta_ms: range(u, 0, 4 * TTL)? as i64 - 2 * TTL as i64,
        },
        FaultKind::Crash => Fault::Crash {
            db: DBS[pick(u, 2)?],
            at: Millis(range(u, 0, SAFETY_MS - 1)?),
            down_ms: range(u, 10, 2 * TTL)?,
        },
    })
}

impl<'a> Arbitrary<'a> for Input {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let seed = wide(u)?;
        let holders = 2 + pick(u, 3)?;
        let mut faults = Vec::new();
        while !u.is_empty() && faults.len() < MAX_FAULTS {
            faults.push(fault(u, holders)?);
        }
        Ok(Input {
            seed,
            holders,
            faults,
        })
    }
}

/// The bytes that decode to `input`, for inputs within the ranges above (a seed below 65,536,
/// values in the decoded ranges; others are clamped).
pub fn encode(input: &Input) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend(wide_bytes(input.seed));
    v.push((input.holders.clamp(2, 4) - 2) as u8);
    let w = |v: &mut Vec<u8>, x: u64, lo: u64| v.extend(wide_bytes(x.saturating_sub(lo)));
    let db = |d: DbName| u8::from(d == DbName::Res);
    let pk = |k: PauseKind| u8::from(k == PauseKind::Freeze);
    for f in &input.faults {
        let k = FaultKind::ALL
            .iter()
            .position(|k| *k == f.kind())
            .unwrap_or(0) as u8;
        v.push(k);
        match *f {
            Fault::PauseAtPoint {
                holder,
                point,
                nth,
                dur_ms,
                kind,
            } => {
                let p = Point::ALL.iter().position(|x| *x == point).unwrap_or(0) as u8;
                v.extend([holder as u8, p, (nth.clamp(1, 4) - 1) as u8]);
                w(&mut v, dur_ms, 100);
                v.push(pk(kind));
            }
            Fault::PauseAtTime {
                holder,
                at,
                dur_ms,
                kind,
            } => {
                v.push(holder as u8);
                w(&mut v, at.0, 0);
                w(&mut v, dur_ms, 100);
                v.push(pk(kind));
            }
            Fault::Partition {
                holder,
                db: d,
                at,
                dur_ms,
            } => {
                v.extend([holder as u8, db(d)]);
                w(&mut v, at.0, 0);
                w(&mut v, dur_ms, 100);
            }
            Fault::Delay {
                holder,
                db: d,
                at,
                dur_ms,
                extra_ms,
            } => {
                v.extend([holder as u8, db(d)]);
                w(&mut v, at.0, 0);
                w(&mut v, dur_ms, 100);
                w(&mut v, extra_ms, 10);
            }
            Fault::Skew {
                holder,
                offset_ms,
                ppm,
            } => {
                v.push(holder as u8);
                w(&mut v, offset_ms.max(0) as u64, 0);
                w(&mut v, (ppm / PPM_STEP + 32_768).clamp(0, 0xffff) as u64, 0);
            }
            Fault::Step {
                holder,
                at,
                delta_ms,
            } => {
                v.push(holder as u8);
                w(&mut v, at.0, 0);
                w(&mut v, (delta_ms + 2 * TTL as i64).max(0) as u64, 0);
            }
            Fault::Crash { db: d, at, down_ms } => {
                v.extend([0, db(d)]);
                w(&mut v, at.0, 0);
                w(&mut v, down_ms, 10);
            }
        }
    }
    v
}

/// The setup `input` describes.
pub fn setup(input: &Input) -> Setup {
    let mut kinds: Vec<FaultKind> = input.faults.iter().map(Fault::kind).collect();
    kinds.sort();
    kinds.dedup();
    let opts = SimOptions {
        fence: FenceMode::Scope,
        holders: input.holders.clamp(2, 4),
        faults: kinds.clone(),
        safety_ms: SAFETY_MS,
        liveness_ms: LIVENESS_MS,
        ..SimOptions::default()
    };
    let mut s = Setup::derive(input.seed, &opts);
    s.plan = FaultPlan {
        kinds,
        faults: input.faults.clone(),
    };
    s
}

/// Runs `input`; a finding carries the run's setup and fault lines.
pub fn run(input: &Input) -> Result<(), Finding> {
    run_checked(&setup(input))
}

/// Runs `s` (twice, when the first run passes) and judges it as [`run`] does.
pub fn run_checked(s: &Setup) -> Result<(), Finding> {
    let a = run_setup(s.clone(), Driver::Fast);
    let text = a.trace.to_text();
    let header: String = text
        .lines()
        .take_while(|l| *l != "events")
        .map(|l| format!("{l}\n"))
        .collect();
    let mut what = Vec::new();
    what.extend(a.driver_errors.iter().map(|e| format!("driver error: {e}")));
    what.extend(
        a.report
            .violations
            .iter()
            .map(|v| format!("{}: {}", v.check, v.message)),
    );
    if let Err(l) = &a.liveness {
        what.push(format!(
            "liveness: no write committed in the {} ms after the heal at {} ms",
            l.liveness_ms, l.heal
        ));
    }
    if what.is_empty() {
        let b = run_setup(s.clone(), Driver::Fast);
        if b.trace.to_text() != text {
            what.push("the same setup ran twice gave two different traces".into());
        }
    }
    if what.is_empty() {
        Ok(())
    } else {
        Err(Finding(format!("{}\n{header}", what.join("\n"))))
    }
}

/// What the fuzz binary calls: panics on a finding.
pub fn fuzz(data: &[u8]) {
    let Ok(input) = Input::arbitrary_take_rest(Unstructured::new(data)) else {
        return;
    };
    if let Err(f) = run(&input) {
        panic!("sim_plan: {f}");
    }
}
