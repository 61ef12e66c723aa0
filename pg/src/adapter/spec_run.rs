//! What a session needs of a spec, apart from running it: the checked spec and its statements
//! prepared on a connection (so that the adapter's state and statements need nothing of
//! `spec_ops`).

use crate::spec::{Shape, Spec, StatementKind};
use leaselab_model::DbName;
use tokio_postgres::{Client, Statement};

/// A spec checked against PostgreSQL: its statements and where their answers are.
#[derive(Clone, Debug)]
pub struct SpecRun {
    /// The spec.
    pub spec: Spec,
    /// Per operation of `spec.ops`, in order.
    pub shapes: Vec<Shape>,
}

/// An operation's statements as a session prepared them (`None`: a utility statement, sent as
/// text).
pub(super) type Prepared = Vec<Vec<Option<Statement>>>;

/// Prepares a session's spec statements for database `db` (utility statements are sent as
/// text).
pub(super) async fn prepare_spec(
    c: &Client,
    db: DbName,
    run: &SpecRun,
) -> Result<Prepared, tokio_postgres::Error> {
    let mut out = Vec::new();
    for op in &run.spec.ops {
        let side = op.kind.db();
        let mut v = Vec::new();
        for s in &op.statements {
            if side != db || s.kind == StatementKind::Utility {
                v.push(None);
                continue;
            }
            v.push(Some(
                c.prepare_typed(&s.sql, &crate::spec::param_types(s))
                    .await?,
            ));
        }
        out.push(v);
    }
    Ok(out)
}

impl super::PgBackend {
    /// The checked spec this backend runs, if any: its statements' result shapes, in the
    /// order of its operations (how its printed results are read back).
    pub fn spec_shapes(&self) -> Option<&[Shape]> {
        self.spec.as_ref().map(|r| r.shapes.as_slice())
    }
}
