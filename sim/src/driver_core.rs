//! What both drivers do the same way around a holder: turn each of its effects into a message
//! to carry or a pause to take ([`carry`]), count the code points it reaches and find the
//! pause the plan puts there, record its client-side events (`check`, `pause`, `lost`, …) at
//! the authority time with the holder's own clock reading, and begin and end a pause
//! (SIGSTOP or a frozen VM). A driver only carries messages and keeps time.

use crate::clock::{NodeClock, PauseKind};
use crate::faults::{FaultPlan, Point};
use crate::host::DbHosts;
use leaselab_model::holder::Effect;
use leaselab_model::{Backend, ConnId, DbName, Holder, Millis, Op, Waits};
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

/// What a driver must do about one effect of its holder.
#[derive(Debug)]
pub(crate) enum Carry {
    /// Carry this request to database `db` (an abandoned connection is a `disconnect` with
    /// request id 0, whose reply nobody awaits).
    Send {
        /// Request id, echoed in the reply.
        req: u64,
        /// Target database.
        db: DbName,
        /// Connection.
        conn: ConnId,
        /// Statement.
        op: Op,
    },
    /// The plan pauses the holder right here, before its next effects (duration, kind).
    Pause(u64, PauseKind),
    /// Nothing left to do (a client event was recorded, or a code point passed).
    Done,
}

/// One holder's part of a run, as both drivers keep it.
pub(crate) struct HolderSide<'a, B> {
    /// The databases, which also keep the history.
    pub(crate) hosts: &'a mut DbHosts<B>,
    /// The holder's own clock.
    pub(crate) clock: &'a NodeClock,
    /// Its name in the history.
    pub(crate) name: &'a Holder,
    /// Its index in the plan.
    pub(crate) idx: usize,
    /// Its code point arrivals.
    pub(crate) points: &'a mut PointCounts,
    /// The fault plan.
    pub(crate) plan: &'a FaultPlan,
}

/// Decides what effect `e` of a holder asks of its driver at authority time `now`, recording
/// client events and counting code points on the way. Inlined: it runs for every effect of
/// every holder, and moving the statement through it is then free.
#[inline]
pub(crate) fn carry<B: Backend + Waits>(side: HolderSide<'_, B>, now: Millis, e: Effect) -> Carry {
    match e {
        Effect::Send { req, db, conn, op } => Carry::Send { req, db, conn, op },
        Effect::Abandon { db, conn } => Carry::Send {
            req: 0,
            db,
            conn,
            op: Op::Disconnect { db },
        },
        Effect::Record(op) => {
            record_holder(side.hosts, side.clock, side.name, now, op);
            Carry::Done
        }
        Effect::Point(p) => match side.points.reach(side.plan, side.idx, p) {
            Some((dur, kind)) => Carry::Pause(dur, kind),
            None => Carry::Done,
        },
    }
}

/// A pause begins at `now`: recorded, and a frozen VM's clock stops.
pub(crate) fn pause_begins<B: Backend + Waits>(
    hosts: &mut DbHosts<B>,
    clock: &mut NodeClock,
    name: &Holder,
    now: Millis,
    kind: PauseKind,
) {
    record_holder(hosts, clock, name, now, Op::Pause);
    if kind == PauseKind::Freeze {
        clock.frozen_since = Some(now);
    }
}

/// A pause ends at `now`: a frozen clock jumps to the right time on thaw, then the resume is
/// recorded.
pub(crate) fn pause_ends<B: Backend + Waits>(
    hosts: &mut DbHosts<B>,
    clock: &mut NodeClock,
    name: &Holder,
    now: Millis,
) {
    clock.frozen_since = None;
    record_holder(hosts, clock, name, now, Op::Resume);
}

#[cfg(test)]
mod tests {
    use super::*;
    use leaselab_model::Config;

    /// A frozen VM's clock stands still from the pause to the thaw, then reads right again; a
    /// SIGSTOPped process's clock keeps running. A request of the paused holder that lands
    /// meanwhile is stamped with that reading.
    #[test]
    fn only_a_freeze_stops_the_holders_clock() {
        let name = Holder::new("holder-a");
        for (kind, frozen_at_500) in [(PauseKind::Freeze, 100), (PauseKind::Sigstop, 500)] {
            let mut hosts = DbHosts::new(Config::default());
            let mut clock = NodeClock::default();
            pause_begins(&mut hosts, &mut clock, &name, Millis(100), kind);
            assert_eq!(clock.local(Millis(500)), Millis(frozen_at_500), "{kind:?}");
            pause_ends(&mut hosts, &mut clock, &name, Millis(600));
            assert_eq!(clock.local(Millis(700)), Millis(700), "{kind:?}");
            let ops: Vec<Op> = hosts
                .world
                .history
                .events
                .iter()
                .map(|e| e.op.clone())
                .collect();
            assert_eq!(ops, [Op::Pause, Op::Resume], "{kind:?}");
        }
    }
}
