//! The spec an audit runs, as the command line sets it: read and checked, with `--lease`,
//! `--ttl-ms` and `--lease-txn` applied, and the backend that runs its statements. What both
//! `audit --gen` ([`crate::audit_cmd`]) and `audit --sim-seeds` ([`crate::audit_sim`]) start from.

use crate::error::{CliError, FileOp};
use leaselab_pg::spec::Spec;
use leaselab_pg::{PgBackend, PgError};
use std::path::Path;

/// Reads and checks the spec at `file` (an error names the file, line and statement).
pub fn load(file: &Path, pg_dir: &Path) -> Result<(Spec, PgBackend), CliError> {
    load_as(file, pg_dir, &Overrides::default())
}

/// The spec's `lease` and `ttl_ms` as the command line sets them (`--lease`, `--ttl-ms`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Overrides {
    /// `--lease NAME`.
    pub lease: Option<String>,
    /// `--ttl-ms MS`.
    pub ttl_ms: Option<u64>,
    /// `--lease-txn`.
    pub lease_txn: bool,
}

impl Overrides {
    /// As flags to repeat in a printed command (empty, or starting with a space).
    pub fn flags(&self) -> String {
        let mut f = String::new();
        if let Some(l) = &self.lease {
            f.push_str(&format!(" --lease {l}"));
        }
        if let Some(t) = self.ttl_ms {
            f.push_str(&format!(" --ttl-ms {t}"));
        }
        if self.lease_txn {
            f.push_str(" --lease-txn");
        }
        f
    }
}

/// [`load`], with the spec's `lease` and `ttl_ms` replaced where `o` sets them.
pub fn load_as(file: &Path, pg_dir: &Path, o: &Overrides) -> Result<(Spec, PgBackend), CliError> {
    let text = std::fs::read_to_string(file).map_err(CliError::file(FileOp::Read, file))?;
    let mut spec = leaselab_pg::spec::parse(&file.display().to_string(), &text)?;
    if let Some(l) = &o.lease {
        spec.lease = l.clone();
    }
    if let Some(t) = o.ttl_ms {
        spec.ttl_ms = Some(t);
    }
    spec.lease_txn |= o.lease_txn;
    let pg = PgBackend::audit(pg_dir, spec.clone()).map_err(|e| match e {
        PgError::Spec(s) => CliError::Spec(s),
        e => CliError::Postgres(e),
    })?;
    Ok((spec, pg))
}
