//! `leaselab holder`: one holder process of the real-time F4/F5 experiment, started by
//! `lab --backend pg` ([`leaselab_pg::real`]).

use crate::args::Exit;
use leaselab_model::names::defaults;
use std::path::PathBuf;

/// `leaselab holder`'s arguments.
#[derive(clap::Args, Debug)]
pub struct HolderArgs {
    /// a or b.
    #[arg(long)]
    pub role: String,
    /// Holder name.
    #[arg(long)]
    pub name: String,
    /// lease26 connection string.
    #[arg(long)]
    pub lease: String,
    /// res26 connection string.
    #[arg(long)]
    pub res: String,
    /// scope or off.
    #[arg(long, default_value = "scope")]
    pub fence: String,
    /// TTL, ms, 1 to 3,600,000.
    #[arg(long, default_value_t = defaults::TTL_MS,
          value_parser = clap::value_parser!(u64).range(1..=crate::args::MAX_PHASE_MS))]
    pub ttl_ms: u64,
    /// Renew period, ms, 1 to 3,600,000.
    #[arg(long, default_value_t = defaults::RENEW_MS,
          value_parser = clap::value_parser!(u64).range(1..=crate::args::MAX_PHASE_MS))]
    pub renew_ms: u64,
    /// Local margin, ms, 0 to 3,600,000.
    #[arg(long, default_value_t = defaults::MARGIN_MS,
          value_parser = clap::value_parser!(u64).range(0..=crate::args::MAX_PHASE_MS))]
    pub margin_ms: u64,
    /// Record every call this process makes to FILE (JSON lines, `leaselab judge`).
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Time 0 of the recording, in ms since the Unix epoch (the same for every process of
    /// one experiment, so their files merge).
    #[arg(long, default_value_t = 0)]
    pub clock_origin_ms: u64,
}

/// Runs the holder process.
pub fn main(a: HolderArgs) -> Exit {
    let args = leaselab_pg::real::HolderArgs {
        role: a.role,
        name: a.name,
        lease: a.lease,
        res: a.res,
        fenced: a.fence != "off",
        ttl_ms: a.ttl_ms,
        renew_ms: a.renew_ms,
        margin_ms: a.margin_ms,
        record: a.record,
        clock_origin_ms: a.clock_origin_ms,
    };
    match leaselab_pg::real::holder_main(&args) {
        Ok(()) => Exit::Clean,
        Err(e) => {
            eprintln!("leaselab holder: {e}");
            Exit::Usage
        }
    }
}
