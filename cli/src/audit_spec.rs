//! The spec an audit runs, as the command line sets it: read, parsed and handed to its one
//! owner ([`leaselab_pg::audit::Audit`]) with `--lease`, `--ttl-ms` and `--lease-txn` applied.
//! What both `audit --gen` ([`crate::audit_cmd`]) and `audit --sim-seeds`
//! ([`crate::audit_sim`]) start from.

use crate::error::{CliError, FileOp};
use leaselab_pg::audit::Audit;
pub use leaselab_pg::audit::Overrides;
use leaselab_pg::PgError;
use std::path::Path;

/// Reads and checks the spec at `file` (an error names the file, line and statement).
pub fn load(file: &Path, pg_dir: &Path) -> Result<Audit, CliError> {
    load_as(file, pg_dir, &Overrides::default())
}

/// `o` as flags to repeat in a printed command (empty, or starting with a space).
pub fn flags(o: &Overrides) -> String {
    let mut f = String::new();
    if let Some(l) = &o.lease {
        f.push_str(&format!(" --lease {l}"));
    }
    if let Some(t) = o.ttl_ms {
        f.push_str(&format!(" --ttl-ms {t}"));
    }
    if o.lease_txn {
        f.push_str(" --lease-txn");
    }
    if let Some(n) = o.lease_conns {
        f.push_str(&format!(" --lease-conns {n}"));
    }
    if o.aim != leaselab_gen::Aim::default() {
        f.push_str(&format!(" --aim {}", o.aim.name()));
    }
    f
}

/// [`load`], with the spec's `lease`, `ttl_ms` and `lease_txn` as `o` sets them.
pub fn load_as(file: &Path, pg_dir: &Path, o: &Overrides) -> Result<Audit, CliError> {
    let text = std::fs::read_to_string(file).map_err(CliError::file(FileOp::Read, file))?;
    let spec = leaselab_pg::spec::parse(&file.display().to_string(), &text)?;
    Audit::load(spec, o, pg_dir).map_err(|e| match e {
        PgError::Spec(s) => CliError::Spec(s),
        e => CliError::Postgres(e),
    })
}
