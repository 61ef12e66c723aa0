//! What both drivers do the same way around a holder: count the code points it reaches and
//! find the pause the plan puts there, and record its client-side events (`check`, `pause`,
//! `lost`, …) at the authority time with the holder's own clock reading.

use crate::clock::{NodeClock, PauseKind};
use crate::faults::{FaultPlan, Point};
use crate::host::DbHosts;
use leaselab_model::{Backend, Holder, Millis, Op, Waits};
use std::collections::BTreeMap;

/// How often one holder reached each code point.
#[derive(Clone, Debug, Default)]
pub(crate) struct PointCounts(BTreeMap<Point, u32>);

impl PointCounts {
    /// Counts one more arrival of `holder` at `p`; returns the pause the plan puts on exactly
    /// this arrival, if any (duration, kind).
    pub(crate) fn reach(
        &mut self,
        plan: &FaultPlan,
        holder: usize,
        p: Point,
    ) -> Option<(u64, PauseKind)> {
        let n = self.0.entry(p).or_insert(0);
        *n += 1;
        plan.point_pause(holder, p, *n)
    }
}

/// Records a client-side event of `name` at authority time `now`, stamped with the reading of
/// the holder's own `clock`.
pub(crate) fn record_holder<B: Backend + Waits>(
    hosts: &mut DbHosts<B>,
    clock: &NodeClock,
    name: &Holder,
    now: Millis,
    op: Op,
) {
    hosts.record_client(now, clock.local(now), name, op);
}
