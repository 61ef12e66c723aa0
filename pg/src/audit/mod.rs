//! An audit of a user's lease (a spec): one owner for what the spec says, as the command line
//! set it — the client that calls the lease, the terms every call names — and the backends
//! that run the spec's statements. The CLI parses arguments, loads an [`Audit`], calls it and
//! prints; the spec is read once, here.
//!
//! - `run`: a generated schedule run on a spec, recorded from PostgreSQL's answers alone.
//! - `save`: what a search found, saved as a trace with its psql scripts.
//! - [`contention`]: how often the runs reached the interleavings where lease bugs live.

pub mod contention;
mod run;
mod save;

pub use run::{cross_check, read_back, Failure, Pauses};
pub use save::{spec_stem, unused_name, write_scripts};

use crate::adapter::{PgBackend, PgError};
use crate::spec::{OpKind, Spec};
use leaselab_gen::search::{Case, Found, Phase, Plan, SearchError};
use leaselab_gen::{Aim, Schedule, Service, Terms, WholeOps};
use leaselab_model::{History, LeaseName};
use leaselab_trace::TraceFileError;
use std::path::{Path, PathBuf};

/// What a command line sets of an audit: the spec's settings it replaces (`--lease`,
/// `--ttl-ms`, `--lease-txn`), and where the client aims (`--aim`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Overrides {
    /// The lease name every call names, instead of the spec's `lease`.
    pub lease: Option<String>,
    /// Every lease call's TTL, instead of the spec's `ttl_ms`.
    pub ttl_ms: Option<u64>,
    /// Held lease transactions, as the spec's `lease_txn = true` says.
    pub lease_txn: bool,
    /// On how many connections each holder calls the lease, instead of the spec's
    /// `lease_conns`.
    pub lease_conns: Option<u8>,
    /// Intents as drawn, or steered toward contention.
    pub aim: Aim,
}

impl Overrides {
    fn apply(&self, spec: &mut Spec) {
        if let Some(l) = &self.lease {
            spec.lease = l.clone();
        }
        if let Some(t) = self.ttl_ms {
            spec.ttl_ms = Some(t);
        }
        spec.lease_txn |= self.lease_txn;
        if let Some(n) = self.lease_conns {
            spec.lease_conns = n;
        }
    }
}

/// A spec under audit, and the backends that run it (the first started by [`Audit::load`],
/// more added for a search's workers).
pub struct Audit {
    spec: Spec,
    client: Service,
    terms: Terms,
    backends: Vec<PgBackend>,
}

impl Audit {
    /// `spec` as `o` sets it, with a first backend running it in `pg_dir` (its statements are
    /// checked against PostgreSQL there: [`PgError::Spec`] names the statement at fault).
    pub fn load(mut spec: Spec, o: &Overrides, pg_dir: &Path) -> Result<Audit, PgError> {
        o.apply(&mut spec);
        let first = PgBackend::audit(pg_dir, spec.clone())?;
        Ok(Audit {
            client: Service {
                ops: WholeOps {
                    publish: spec.op(OpKind::Publish).is_some(),
                    read_part: spec.op(OpKind::ReadPart).is_some(),
                },
                lease_txn: spec.lease_txn,
                second_conn: spec.lease_conns == 2,
                aim: o.aim,
            },
            terms: Terms {
                lease: LeaseName::new(&spec.lease),
                ttl_ms: spec.ttl_ms,
            },
            spec,
            backends: vec![first],
        })
    }

    /// The spec, overrides applied.
    pub fn spec(&self) -> &Spec {
        &self.spec
    }

    /// How the generated holders call the lease: the operations the spec offers besides the
    /// four, and whether they hold lease transactions open.
    pub fn client(&self) -> Service {
        self.client
    }

    /// The lease every call names and the TTL it asks for.
    pub fn terms(&self) -> &Terms {
        &self.terms
    }

    /// Another backend running this spec, in `dir` (a search's worker).
    pub fn start_backend(&self, dir: &Path) -> Result<PgBackend, PgError> {
        PgBackend::audit(dir, self.spec.clone())
    }

    /// Adds backends a search's workers run schedules on.
    pub fn add_backends(&mut self, more: impl IntoIterator<Item = PgBackend>) {
        self.backends.extend(more);
    }

    /// The backends (the first is the one [`Audit::load`] started).
    pub fn backends(&self) -> &[PgBackend] {
        &self.backends
    }

    /// The first backend, for a caller that sets it up or runs on it directly; `None` while it
    /// is lent ([`Audit::take_backend`]).
    pub fn first_backend(&mut self) -> Option<&mut PgBackend> {
        self.backends.first_mut()
    }

    /// The first backend, lent to a run that needs it whole (the simulation's hosts take it by
    /// value); [`Audit::put_backend`] gives it back. `None` while it is lent.
    pub fn take_backend(&mut self) -> Option<PgBackend> {
        (!self.backends.is_empty()).then(|| self.backends.remove(0))
    }

    /// Gives back a backend [`Audit::take_backend`] lent.
    pub fn put_backend(&mut self, b: PgBackend) {
        self.backends.insert(0, b);
    }

    /// Waits of every backend that ran out their bound ([`PgBackend::waits_out_of_bound`]).
    pub fn waits_out_of_bound(&self) -> u64 {
        self.backends
            .iter()
            .map(PgBackend::waits_out_of_bound)
            .sum()
    }

    /// Runs `schedule` on the first backend and returns what PostgreSQL answered (final reads
    /// included) and where operations paused.
    pub fn run(&mut self, schedule: &Schedule) -> Result<(History, Pauses), PgError> {
        let pg = self.backends.first_mut().ok_or_else(lent)?;
        run::audit_schedule(pg, schedule, self.client, &self.terms)
    }

    /// `plan`'s schedules on every backend, each judged by the checkers; the first failure
    /// shrunk ([`leaselab_gen::search::search`]). `stop` is asked before each run: once it
    /// says yes, the run is not made and counts as interrupted, never as a pass.
    pub fn search(
        &mut self,
        plan: &Plan,
        observe: impl FnMut(Phase, &Case<Failure>),
        stop: impl Fn() -> bool + Sync,
    ) -> Result<Option<Found<Failure>>, SearchError<PgError>> {
        let (client, terms) = (self.client, &self.terms);
        let stop = &stop;
        leaselab_gen::search::search(
            &mut self.backends,
            plan,
            |pg, s| {
                if stop() {
                    return Ok(Case::interrupted());
                }
                run::judge_schedule(pg, s, client, terms)
            },
            observe,
            stop,
        )
    }

    /// Saves what a search of this spec (drawn from `seed`) found into `out`: the shrunk
    /// schedule's failing run as `audit-<spec>-<seed>.trace` and its psql scripts; the trace's
    /// path.
    pub fn save(
        &self,
        found: &Found<Failure>,
        seed: u64,
        out: &Path,
    ) -> Result<PathBuf, TraceFileError> {
        save::save_found(&self.spec, self.client, found, seed, out)
    }
}

/// The start of the `setup` line of a saved failure whose schedules were steered (`aim
/// contention`, `aim mixed`; none for `uniform`, as every failure saved before the mix was).
pub const AIM: &str = "aim ";

/// The `setup` line of a saved failure whose holders called the lease on two connections.
pub const LEASE_CONNS_2: &str = "lease-conns 2";

/// On how many connections the holders of a saved failure called the lease, where its `setup`
/// lines say it was two.
pub fn lease_conns_of(setup: &[String]) -> Option<u8> {
    setup.iter().any(|l| l == LEASE_CONNS_2).then_some(2)
}

/// Where the client of a saved failure aimed: its `setup` lines say.
pub fn aim_of(setup: &[String]) -> Aim {
    setup
        .iter()
        .find_map(|l| l.strip_prefix(AIM).and_then(Aim::named))
        .unwrap_or(Aim::Uniform)
}

fn lent() -> PgError {
    PgError::Setup("the audit's backend is lent to a run and was not given back".into())
}
