//! The seam on PostgreSQL: one backend (sessions, clusters, the virtual clock) and two
//! statement sets that each implement the seam's statements on it — the source design's SQL
//! ([`SourceSql`]: `lease_store.rs`, `fenced_resource.rs`) and a user's spec ([`SpecSql`]:
//! `spec_seam.rs`). The backend picks the set once per operation, here, so no statement asks
//! which set it belongs to.

use super::spec_run::SpecRun;
use super::state::PgBackend;
use leaselab_model::{apply_event, Admin, Event, FencedResource, LeaseStore, Outcome};
use std::sync::Arc;

/// The source design's statements on a backend.
pub(super) struct SourceSql<'a>(pub(super) &'a mut PgBackend);

/// A user's spec on a backend; `pause`: the operation stops after this statement of its list
/// (0-based; past its last, before its COMMIT) until the holder's `await` (`leaselab audit`).
pub(super) struct SpecSql<'a> {
    pub(super) be: &'a mut PgBackend,
    pub(super) run: Arc<SpecRun>,
    pub(super) pause: Option<usize>,
}

/// Either set, as the backend runs it.
pub(super) trait Statements: LeaseStore + FencedResource {}
impl<T: LeaseStore + FencedResource> Statements for T {}

impl PgBackend {
    /// The statements this backend's operations run.
    fn statements(&mut self) -> Box<dyn Statements + '_> {
        match self.spec.clone() {
            Some(run) => Box::new(SpecSql {
                be: self,
                run,
                pause: None,
            }),
            None => Box::new(SourceSql(self)),
        }
    }

    /// Runs event `e` with its operation stopped after its statement `after` (0-based; after
    /// its last, that is before COMMIT) until the holder's `await`: a holder stopped inside
    /// its operation, with its transaction and locks held. Only a spec's operations are lists
    /// a pause can fall inside; without a spec, `e` runs whole.
    pub fn apply_paused(&mut self, e: &Event, after: usize) -> Outcome {
        match self.spec.clone() {
            Some(run) => apply_event(
                &mut SpecSql {
                    be: self,
                    run,
                    pause: Some(after),
                },
                e,
            ),
            None => apply_event(self, e),
        }
    }
}

leaselab_model::delegate_statements!(PgBackend, self => self.statements());

/// Sessions and faults are the backend's, whatever the statements.
impl Admin for SpecSql<'_> {
    fn session(
        &mut self,
        cx: &leaselab_model::Ctx<'_>,
        db: leaselab_model::DbName,
        step: leaselab_model::SessionStep,
    ) -> Outcome {
        Admin::session(&mut *self.be, cx, db, step)
    }

    fn crash(&mut self, cx: &leaselab_model::Ctx<'_>, db: leaselab_model::DbName) -> Outcome {
        self.be.crash(cx, db)
    }

    fn restart(&mut self, cx: &leaselab_model::Ctx<'_>, db: leaselab_model::DbName) -> Outcome {
        self.be.restart(cx, db)
    }
}
