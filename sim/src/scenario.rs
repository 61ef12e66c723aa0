//! What one run is: options from the command line, settings derived from the seed, and the
//! result (trace, checker report, liveness). Shared by both drivers.

use crate::faults::{FaultKind, FaultPlan};
use leaselab_checkers::{facts, Check, Report};
use leaselab_model::holder::{HolderCfg, HolderStats};
use leaselab_model::names::defaults;
use leaselab_model::{
    Config, FenceMode, History, Holder, LeaseDurability, LeaseName, Millis, Part, Scope,
};
use leaselab_trace::Trace;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Which driver runs the holders.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Driver {
    /// The discrete-event loop (fast sweeps).
    Fast,
    /// turmoil hosts over its simulated TCP (network realism, the tokio code path).
    Turmoil,
}

impl Driver {
    /// Spelling on the command line and in traces.
    pub fn as_str(self) -> &'static str {
        match self {
            Driver::Fast => "fast",
            Driver::Turmoil => "turmoil",
        }
    }
}

/// What the user chose (`leaselab sim …`). Everything else comes from the seed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimOptions {
    /// The resource's fence.
    pub fence: FenceMode,
    /// Lease table durability (unlogged: the I2 negative control).
    pub lease_table: LeaseDurability,
    /// Number of holders.
    pub holders: usize,
    /// Fault kinds the swarm may switch on.
    pub faults: Vec<FaultKind>,
    /// Length of the safety phase (faults active), virtual ms.
    pub safety_ms: u64,
    /// Length of the liveness phase after healing, virtual ms; within it some holder must
    /// complete a write. 0 disables the liveness check.
    pub liveness_ms: u64,
    /// Lease TTL.
    pub ttl_ms: u64,
    /// Renew period.
    pub renew_ms: u64,
    /// Local safety margin.
    pub margin_ms: u64,
    /// turmoil's tick, for the turmoil driver.
    pub tick_ms: u64,
    /// The lease table's lock-delay (Chubby; 0: none, the source design). Not a command-line
    /// flag: `leaselab envelope --lock-delay-ms` sets it, and a trace's config line carries it.
    pub lock_delay_ms: u64,
}

impl SimOptions {
    /// When the faults heal: the end of the safety phase, which starts at time zero.
    pub fn heal(&self) -> Millis {
        Millis::ZERO.plus(self.safety_ms)
    }

    /// The command-line flags that set these options (`--fence` always; the others only when
    /// they differ from the defaults).
    pub fn flags(&self, driver: Driver) -> String {
        let d = SimOptions::default();
        let mut c = format!("--fence {}", self.fence);
        if self.holders != d.holders {
            c.push_str(&format!(" --holders {}", self.holders));
        }
        if self.faults != d.faults {
            let k: Vec<&str> = self.faults.iter().map(|k| k.as_str()).collect();
            let list = if k.is_empty() {
                "none".into()
            } else {
                k.join(",")
            };
            c.push_str(&format!(" --faults {list}"));
        }
        if self.lease_table != d.lease_table {
            c.push_str(&format!(" --lease-table {}", self.lease_table));
        }
        if self.safety_ms != d.safety_ms {
            c.push_str(&format!(" --safety-ms {}", self.safety_ms));
        }
        if self.liveness_ms != d.liveness_ms {
            c.push_str(&format!(" --liveness-ms {}", self.liveness_ms));
        }
        if driver == Driver::Turmoil {
            c.push_str(" --driver turmoil");
        }
        if self.tick_ms != d.tick_ms {
            c.push_str(&format!(" --tick-ms {}", self.tick_ms));
        }
        c
    }
}

impl Default for SimOptions {
    /// The standard scenario: 2 holders, the source's TTL/renew/margin, 50 s of faults then
    /// 10 s to recover (60 s virtual), every fault kind available to the swarm.
    fn default() -> Self {
        SimOptions {
            fence: FenceMode::Scope,
            lease_table: LeaseDurability::Logged,
            holders: 2,
            faults: FaultKind::ALL.to_vec(),
            safety_ms: 50_000,
            liveness_ms: 10_000,
            ttl_ms: defaults::TTL_MS,
            renew_ms: defaults::RENEW_MS,
            margin_ms: defaults::MARGIN_MS,
            tick_ms: 1,
            lock_delay_ms: 0,
        }
    }
}

/// Everything a run derives from its seed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Setup {
    /// The seed.
    pub seed: u64,
    /// The options.
    pub opts: SimOptions,
    /// The fault plan.
    pub plan: FaultPlan,
    /// One-way latency range.
    pub latency_ms: (u64, u64),
    /// Holder configurations.
    pub holders: Vec<HolderCfg>,
}

pub use leaselab_model::names::holder_name;

impl Setup {
    /// Derives the setup of `seed`: the swarm plan first, then latencies and start offsets, all
    /// from one `ChaCha8Rng`.
    pub fn derive(seed: u64, opts: &SimOptions) -> Setup {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let plan = FaultPlan::swarm(
            &mut rng,
            &opts.faults,
            opts.holders,
            opts.safety_ms,
            opts.ttl_ms,
        );
        let lo = rng.random_range(1..=5);
        let hi = lo + rng.random_range(0..=45);
        let holders = (0..opts.holders)
            .map(|i| HolderCfg {
                name: Holder::new(holder_name(i)),
                lease: LeaseName::new(defaults::LEASE),
                scope: Scope::new(defaults::SCOPE),
                parts: vec![Part::new(defaults::SUMMARY), Part::new(defaults::DETAIL)],
                ttl_ms: opts.ttl_ms,
                renew_ms: opts.renew_ms,
                margin_ms: opts.margin_ms,
                rpc_timeout_ms: opts.ttl_ms,
                retry_ms: 100 + rng.random_range(0..=200),
                job_gap_ms: 200 + rng.random_range(0..=300),
                start_ms: rng.random_range(0..=500),
                whole_writes: false,
            })
            .collect();
        Setup {
            seed,
            opts: opts.clone(),
            plan,
            latency_ms: (lo, hi),
            holders,
        }
    }

    /// The database configuration.
    pub fn config(&self) -> Config {
        Config {
            fence: self.opts.fence,
            lease_table: self.opts.lease_table,
            lock_delay_ms: self.opts.lock_delay_ms,
            ..Config::default()
        }
    }

    /// Holder names in index order.
    pub fn names(&self) -> Vec<String> {
        self.holders.iter().map(|h| h.name.to_string()).collect()
    }

    /// Whether this setup is exactly what its seed derives under its options — then
    /// `leaselab sim --seed …` reproduces it; otherwise (a shrunk or edited plan) only the trace
    /// file does (`leaselab sim --from-trace FILE`).
    fn derivable(&self) -> bool {
        Setup::derive(self.seed, &self.opts) == *self
    }

    /// The `leaselab sim --seed …` command that re-derives this setup, or `None` when the seed
    /// does not derive it (`Setup::derivable`). Options at their defaults are left out.
    pub fn command(&self, driver: Driver) -> Option<String> {
        if !self.derivable() {
            return None;
        }
        let o = &self.opts;
        let d = SimOptions::default();
        if o.ttl_ms != d.ttl_ms
            || o.renew_ms != d.renew_ms
            || o.margin_ms != d.margin_ms
            || o.lock_delay_ms != d.lock_delay_ms
        {
            // Not options of the command line: only the trace file carries them.
            return None;
        }
        let c = format!("leaselab sim --seed {} {}", self.seed, o.flags(driver));
        Some(c)
    }

    /// The trace's title: the command that re-derives the run, or what the file itself is.
    pub fn title(&self, driver: Driver) -> String {
        match self.command(driver) {
            Some(c) => c,
            None => format!(
                "seed {} with an edited (shrunk) setup: run it with leaselab sim --from-trace <this file>",
                self.seed
            ),
        }
    }
}

/// What can fail in a run: the target a shrinker keeps failing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failing {
    /// A safety check.
    Check(Check),
    /// No holder completed a write after the faults healed.
    Liveness,
    /// The driver itself (an unreadable wire message, a history cut short).
    Driver,
}

/// One finished run.
#[derive(Clone, Debug)]
pub struct SimRun {
    /// Its setup.
    pub setup: Setup,
    /// The driver that ran it.
    pub driver: Driver,
    /// Its trace (history + settings + verdict).
    pub trace: Trace,
    /// The checkers' report.
    pub report: Report,
    /// `Err` when no holder completed a write in the liveness phase.
    pub liveness: Result<(), LivenessFailure>,
    /// Per-holder counts.
    pub stats: Vec<HolderStats>,
    /// What went wrong in the driver itself (turmoil: an unreadable wire message, a history cut
    /// short). A run with driver errors is a failed run, whatever the checkers say.
    pub driver_errors: Vec<String>,
    /// Events the fast driver's queue delivered (0 under turmoil, whose scheduler is its own):
    /// the figure the benchmark's bare-loop floor is sized by.
    pub queue_events: u64,
}

impl SimRun {
    /// Whether any check (safety or liveness) failed.
    pub fn failed(&self) -> bool {
        !self.report.violations.is_empty()
            || self.liveness.is_err()
            || !self.driver_errors.is_empty()
    }

    /// What failed first: a driver error, else the first violated check, else liveness.
    pub fn first_failure(&self) -> Option<Failing> {
        if !self.driver_errors.is_empty() {
            return Some(Failing::Driver);
        }
        match self.report.violations.first() {
            Some(v) => Some(Failing::Check(v.check)),
            None => self.liveness.as_ref().err().map(|_| Failing::Liveness),
        }
    }

    /// Whether `what` failed in this run.
    pub fn fails(&self, what: Failing) -> bool {
        match what {
            Failing::Driver => !self.driver_errors.is_empty(),
            Failing::Check(c) => self.report.violated(c),
            Failing::Liveness => self.liveness.is_err(),
        }
    }
}

/// No holder completed a write within the liveness phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("no holder completed a write within {liveness_ms} ms after the faults healed at t={heal}")]
pub struct LivenessFailure {
    /// When the faults healed (authority time).
    pub heal: Millis,
    /// The length of the liveness phase.
    pub liveness_ms: u64,
}

/// Liveness: after the faults heal at `heal`, some holder's write must commit within the
/// liveness phase.
pub fn liveness(f: &facts::Facts, heal: Millis, liveness_ms: u64) -> Result<(), LivenessFailure> {
    if liveness_ms == 0 {
        return Ok(());
    }
    let ok = f.writes.iter().any(|w| {
        w.certainty == facts::Certainty::Accepted && w.at >= heal && w.at <= heal.plus(liveness_ms)
    });
    if ok {
        Ok(())
    } else {
        Err(LivenessFailure { heal, liveness_ms })
    }
}

/// Builds the run's result from its history.
pub fn finish(setup: Setup, driver: Driver, history: History, stats: Vec<HolderStats>) -> SimRun {
    let facts = facts::derive(&history);
    let report = leaselab_checkers::check_with(&history, &facts);
    let live = liveness(&facts, setup.opts.heal(), setup.opts.liveness_ms);
    let mut trace = Trace::new(&format!("sim-{}", setup.seed), setup.config(), history);
    trace.title = setup.title(driver);
    trace.seed = setup.seed;
    trace.setup = setup.setup_lines(driver);
    trace.faults = setup.fault_lines();
    trace.expect = report.verdict();
    SimRun {
        setup,
        driver,
        trace,
        report,
        liveness: live,
        stats,
        driver_errors: Vec::new(),
        queue_events: 0,
    }
}
