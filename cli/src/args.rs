//! The argument set of a simulation run, shared by every command that runs seeds (`sim`,
//! `diff --sim-seeds`), so that the same seed and the same flags mean the same run everywhere.

use crate::error::CliError;
use clap::builder::PossibleValue;
use clap::ValueEnum;
use leaselab_model::{FenceMode, LeaseDurability};
use leaselab_sim::{FaultKind, SimOptions};
use std::sync::LazyLock;

/// The longest phase of a simulated run, virtual ms (an hour): a run's cost grows with its
/// virtual time, and a longer one would look like a hang. Also the longest TTL, renew period
/// and margin of a holder process.
pub const MAX_PHASE_MS: u64 = 3_600_000;

/// The most intents of one generated schedule (`diff --gen`, `audit --gen`).
pub const MAX_STEPS: u64 = 1_000;

/// How a run is set up; everything else comes from the seed.
#[derive(clap::Args, Clone, Debug, PartialEq, Eq)]
pub struct RunArgs {
    /// The resource's fence.
    #[arg(long, value_enum, default_value_t = SimOptions::default().fence)]
    pub fence: FenceMode,
    /// Number of holders.
    #[arg(long, default_value_t = SimOptions::default().holders as u64,
          value_parser = clap::value_parser!(u64).range(1..=26))]
    pub holders: u64,
    /// Fault kinds the swarm may switch on: `all`, `none`, or a comma list of kinds.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "all")]
    pub faults: Vec<FaultsArg>,
    /// Lease table durability (`unlogged`: the negative control for I2).
    #[arg(long, value_enum, default_value_t = SimOptions::default().lease_table)]
    pub lease_table: LeaseDurability,
    /// Safety phase length (faults active), virtual ms, 1 to 3,600,000 (an hour: a run costs
    /// time in proportion).
    #[arg(long, default_value_t = SimOptions::default().safety_ms,
          value_parser = clap::value_parser!(u64).range(1..=MAX_PHASE_MS))]
    pub safety_ms: u64,
    /// Liveness phase length after the faults heal, virtual ms, 0 (no liveness check) to
    /// 3,600,000.
    #[arg(long, default_value_t = SimOptions::default().liveness_ms,
          value_parser = clap::value_parser!(u64).range(0..=MAX_PHASE_MS))]
    pub liveness_ms: u64,
    /// turmoil's tick, ms, 1 to 60,000 (turmoil driver only).
    #[arg(long, default_value_t = SimOptions::default().tick_ms,
          value_parser = clap::value_parser!(u64).range(1..=60_000))]
    pub tick_ms: u64,
}

impl RunArgs {
    /// The simulation's options.
    pub fn options(&self) -> Result<SimOptions, CliError> {
        Ok(SimOptions {
            fence: self.fence,
            lease_table: self.lease_table,
            holders: usize::try_from(self.holders)
                .map_err(|e| CliError::Input(format!("--holders: {e}")))?,
            faults: fault_kinds(&self.faults)?,
            safety_ms: self.safety_ms,
            liveness_ms: self.liveness_ms,
            tick_ms: self.tick_ms,
            ..SimOptions::default()
        })
    }

    /// The argument ids, for `conflicts_with_all` where a run is set up otherwise.
    pub const IDS: [&'static str; 7] = [
        "fence",
        "holders",
        "faults",
        "lease_table",
        "safety_ms",
        "liveness_ms",
        "tick_ms",
    ];
}

/// How each run of `audit --sim-seeds` is set up: `sim`'s options without those the spec
/// decides (the fence, the lease table) or that only turmoil reads (the tick).
#[derive(clap::Args, Clone, Debug, PartialEq, Eq)]
pub struct AuditSimArgs {
    /// Number of holders.
    #[arg(long, default_value_t = SimOptions::default().holders as u64,
          value_parser = clap::value_parser!(u64).range(1..=26))]
    pub holders: u64,
    /// Fault kinds the swarm may switch on: `all`, `none`, or a comma list of kinds.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "all")]
    pub faults: Vec<FaultsArg>,
    /// Safety phase length (faults active), virtual ms, 1 to 3,600,000.
    #[arg(long, default_value_t = SimOptions::default().safety_ms,
          value_parser = clap::value_parser!(u64).range(1..=MAX_PHASE_MS))]
    pub safety_ms: u64,
    /// Liveness phase length after the faults heal, virtual ms, 0 (no liveness check) to
    /// 3,600,000.
    #[arg(long, default_value_t = SimOptions::default().liveness_ms,
          value_parser = clap::value_parser!(u64).range(0..=MAX_PHASE_MS))]
    pub liveness_ms: u64,
}

impl AuditSimArgs {
    /// The simulation's options: the same run as `sim` with these flags and the defaults.
    pub fn options(&self) -> Result<SimOptions, CliError> {
        RunArgs {
            fence: SimOptions::default().fence,
            holders: self.holders,
            faults: self.faults.clone(),
            lease_table: SimOptions::default().lease_table,
            safety_ms: self.safety_ms,
            liveness_ms: self.liveness_ms,
            tick_ms: SimOptions::default().tick_ms,
        }
        .options()
    }
}

/// One word of `--faults`: a kind, or `all` / `none`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultsArg {
    /// Every kind.
    All,
    /// No faults at all.
    None,
    /// One kind.
    Kind(FaultKind),
}

static FAULTS_ARGS: LazyLock<Vec<FaultsArg>> = LazyLock::new(|| {
    let mut v = vec![FaultsArg::All, FaultsArg::None];
    v.extend(FaultKind::ALL.into_iter().map(FaultsArg::Kind));
    v
});

impl ValueEnum for FaultsArg {
    fn value_variants<'a>() -> &'a [Self] {
        &FAULTS_ARGS
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        match self {
            FaultsArg::All => Some(PossibleValue::new("all").help("Every kind")),
            FaultsArg::None => Some(PossibleValue::new("none").help("No faults")),
            FaultsArg::Kind(k) => k.to_possible_value(),
        }
    }
}

/// The kinds a `--faults` list names; `all` and `none` stand alone.
pub fn fault_kinds(words: &[FaultsArg]) -> Result<Vec<FaultKind>, CliError> {
    match words {
        [] => Err(CliError::Input(
            "--faults: give all, none or a comma list of kinds".into(),
        )),
        [FaultsArg::All] => Ok(FaultKind::ALL.to_vec()),
        [FaultsArg::None] => Ok(Vec::new()),
        _ => {
            let mut v = Vec::new();
            for w in words {
                match w {
                    FaultsArg::Kind(k) => {
                        if !v.contains(k) {
                            v.push(*k);
                        }
                    }
                    FaultsArg::All | FaultsArg::None => {
                        return Err(CliError::Input(
                            "--faults: `all` and `none` stand alone, not in a list of kinds".into(),
                        ))
                    }
                }
            }
            Ok(v)
        }
    }
}

/// Where the lab runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BackendArg {
    /// The in-memory model.
    Model,
    /// PostgreSQL with the source SQL, on two throwaway clusters.
    Pg,
}

/// The exit status of every command, by outcome class (documented in `--help` and README).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// Everything checked held.
    Clean = 0,
    /// A safety check failed (I1–I3, acceptance, final state), or a replayed verdict changed.
    Violation = 1,
    /// Bad usage or input (unreadable file, malformed trace, unknown value), or the tool itself
    /// could not run (no PostgreSQL).
    Usage = 2,
    /// Only liveness failed: no holder completed a write after the faults healed.
    Liveness = 3,
    /// The model and PostgreSQL (or a replay and its recording) disagree.
    Divergence = 4,
    /// Stopped by Ctrl-C or SIGTERM; what was found so far is written.
    Interrupted = 5,
    /// `judge`: no check is certainly broken, but one is if an operation whose outcome nobody
    /// learned turned out a certain way.
    Possible = 6,
    /// `judge`: no check is certainly broken, but one could not be decided: more operations
    /// with an unknown outcome bear on it than the judgement tries (it names them).
    Undecided = 7,
}

impl Exit {
    /// The text `--help` shows.
    pub const HELP: &'static str = "Exit status: 0 clean, 1 safety violation (or a changed \
verdict), 2 usage or input error, 3 liveness failure only, 4 divergence (model vs PostgreSQL, \
replay vs recording), 5 interrupted (Ctrl-C/SIGTERM; results so far are written), 6 (judge) a violation is possible, \
depending on how an operation with an unknown outcome turned out, 7 (judge) a check is undecided: more such operations \
bear on it than the judgement tries.";
}

impl From<Exit> for std::process::ExitCode {
    fn from(e: Exit) -> Self {
        std::process::ExitCode::from(e as u8)
    }
}

/// Prints a command's text, or its error as `leaselab CMD: …` with the usage exit class.
pub fn print_or_fail(cmd: &str, r: Result<String, CliError>) -> Exit {
    match r {
        Ok(text) => {
            print!("{text}");
            Exit::Clean
        }
        Err(e) => {
            eprintln!("leaselab {cmd}: {e}");
            Exit::Usage
        }
    }
}
