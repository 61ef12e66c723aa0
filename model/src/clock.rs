//! A node's own clock on top of the one authority clock: a constant offset, a rate error, NTP
//! steps, and a freeze (a paused VM). Applied both to reading time and to timers (a timer set
//! for local time L fires at the first authority instant whose local reading is >= L). The
//! lab's clients (an offset only) and the simulation's holders (all of it) use this one model.

use crate::time::Millis;

/// One node's view of time.
#[derive(Clone, Debug, Default)]
pub struct NodeClock {
    /// Constant offset in ms (kept non-negative so readings stay non-negative).
    pub offset_ms: i64,
    /// Rate error in parts per million (positive: runs fast).
    pub skew_ppm: i64,
    /// NTP steps: at authority time `at`, the clock jumps by `delta_ms`.
    pub steps: Vec<(Millis, i64)>,
    /// While frozen (VM freeze), readings stay at the freeze instant.
    pub frozen_since: Option<Millis>,
}

impl NodeClock {
    fn raw(&self, t: Millis) -> i64 {
        let t_i = t.0 as i64;
        let skew = t_i.saturating_mul(self.skew_ppm) / 1_000_000;
        let steps: i64 = self
            .steps
            .iter()
            .filter(|(at, _)| *at <= t)
            .map(|(_, d)| *d)
            .sum();
        t_i + self.offset_ms + skew + steps
    }

    /// The local reading at authority time `t`.
    pub fn local(&self, t: Millis) -> Millis {
        let t = match self.frozen_since {
            Some(f) if f <= t => f,
            _ => t,
        };
        Millis(self.raw(t).max(0) as u64)
    }

    /// The first authority instant `>= now` at which the local reading reaches `target`, or
    /// `None` if the clock is frozen (a frozen node's timers wait for the thaw).
    pub fn when(&self, now: Millis, target: Millis) -> Option<Millis> {
        if self.frozen_since.is_some() {
            return None;
        }
        let cur = self.local(now).0 as i64;
        let need = target.0 as i64 - cur;
        if need <= 0 {
            return Some(now);
        }
        // Invert the rate, then walk forward over rounding and steps in between.
        let rate = 1_000_000 + self.skew_ppm;
        let mut t = now.0 + ((need * 1_000_000 + rate - 1) / rate.max(1)) as u64;
        for _ in 0..64 {
            if self.local(Millis(t)) >= target {
                return Some(Millis(t));
            }
            t += 1;
        }
        // A step backwards in between: ask again from there (the caller re-arms).
        Some(Millis(t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skew_and_steps_apply_to_readings_and_timers() {
        let c = NodeClock {
            offset_ms: 100,
            skew_ppm: 100_000, // 10% fast
            steps: vec![(Millis(1000), -50)],
            frozen_since: None,
        };
        assert_eq!(c.local(Millis(0)), Millis(100));
        assert_eq!(c.local(Millis(500)), Millis(650));
        assert_eq!(c.local(Millis(1000)), Millis(1150));
        let t = c.when(Millis(0), Millis(650)).expect("not frozen");
        assert!(c.local(t) >= Millis(650) && c.local(Millis(t.0 - 1)) < Millis(650));
    }

    #[test]
    fn a_freeze_starts_at_its_instant_not_before() {
        let c = NodeClock {
            frozen_since: Some(Millis(200)),
            ..NodeClock::default()
        };
        assert_eq!(c.local(Millis(150)), Millis(150), "not frozen yet");
        assert_eq!(c.local(Millis(250)), Millis(200));
    }

    #[test]
    fn a_timer_across_a_step_back_fires_when_the_reading_gets_there() {
        let c = NodeClock {
            steps: vec![(Millis(100), -50)],
            ..NodeClock::default()
        };
        // Reading 120 comes at authority 170: the step took 50 ms back at 100.
        assert_eq!(c.when(Millis(0), Millis(120)), Some(Millis(170)));
        assert_eq!(c.local(Millis(170)), Millis(120));
    }

    #[test]
    fn frozen_clock_stands_still() {
        let c = NodeClock {
            frozen_since: Some(Millis(200)),
            ..NodeClock::default()
        };
        assert_eq!(c.local(Millis(900)), Millis(200));
        assert_eq!(c.when(Millis(900), Millis(1000)), None);
    }
}
