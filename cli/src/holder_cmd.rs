//! `leaselab holder`: one holder process, started by `lab --backend pg` for F4/F5
//! ([`leaselab_pg::real`]) and by `live` ([`leaselab_live::run`]).

use crate::args::Exit;
use leaselab_model::names::defaults;
use std::path::PathBuf;

/// `leaselab holder`'s arguments.
#[derive(clap::Args, Debug)]
pub struct HolderArgs {
    /// a (waits for the parent after its first local check), b (straight through), or live
    /// (jobs until --until-ms, waiting for the parent after every local check).
    #[arg(long, value_parser = ["a", "b", "live"])]
    pub role: String,
    /// Live: when the last job may start, ms of its own clock.
    #[arg(long, default_value_t = 0)]
    pub until_ms: u64,
    /// Where the lease is kept: pg, redis, etcd, etcd-lease-id or redlock.
    #[arg(long, default_value = "pg", value_parser = ["pg", "redis", "etcd", "etcd-lease-id", "redlock"])]
    pub store: String,
    /// The Redis recipe (with --store redis).
    #[arg(long, value_name = "FILE")]
    pub recipe: Option<PathBuf>,
    /// Holder name.
    #[arg(long)]
    pub name: String,
    /// The lease service's address: a connection string (pg), redis://HOST:PORT/, etcd's
    /// http://HOST:PORT, or Redlock's redis:// addresses joined by commas.
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
    use leaselab_live::holder::{HolderArgs, Role};
    use leaselab_live::store::{Store, StoreKind};
    let role = match a.role.as_str() {
        "a" => Role::A,
        "b" => Role::B,
        _ => Role::Live {
            until_ms: a.until_ms,
        },
    };
    let Some(kind) = StoreKind::parse(&a.store) else {
        eprintln!(
            "leaselab holder: --store {}: not a store (pg, redis, etcd, etcd-lease-id, redlock)",
            a.store
        );
        return Exit::Usage;
    };
    let recipe = match (&a.recipe, kind) {
        (Some(f), _) => match leaselab_live::redis::RedisRecipe::load(f) {
            Ok(r) => Some(r),
            Err(e) => {
                eprintln!("leaselab holder: {e}");
                return Exit::Usage;
            }
        },
        (None, StoreKind::Redis) => {
            eprintln!("leaselab holder: --store redis needs --recipe FILE");
            return Exit::Usage;
        }
        (None, StoreKind::Pg | StoreKind::Etcd | StoreKind::EtcdLeaseId | StoreKind::Redlock) => {
            None
        }
    };
    let args = HolderArgs {
        role,
        name: a.name,
        store: Store {
            kind,
            addr: a.lease,
            recipe,
        },
        res: a.res,
        fenced: a.fence != "off",
        ttl_ms: a.ttl_ms,
        renew_ms: a.renew_ms,
        margin_ms: a.margin_ms,
        record: a.record,
        clock_origin_ms: a.clock_origin_ms,
    };
    match leaselab_live::holder::holder_main(&args) {
        Ok(()) => Exit::Clean,
        Err(e) => {
            eprintln!("leaselab holder: {e}");
            Exit::Usage
        }
    }
}
