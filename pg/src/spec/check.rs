//! What only PostgreSQL can say about a spec: whether its DDL runs, whether each statement
//! parses against that schema, and whether results have the shape their operation reads.

use super::*;
use tokio_postgres::types::Type;
use tokio_postgres::Client;

/// Where an operation's answer is in the rows its statements return (column indexes of the
/// last statement that returns rows).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Shape {
    /// Per statement: PostgreSQL describes rows for it (a query, or a change with RETURNING).
    pub returns_rows: Vec<bool>,
    /// `token` (acquire, read-part).
    pub token: Option<usize>,
    /// `expires_at` (acquire, renew), if returned.
    pub expires_at: Option<usize>,
    /// `content` (read-part).
    pub content: Option<usize>,
    /// `writer` (read-part).
    pub writer: Option<usize>,
}

/// Runs the spec's DDL on the (empty) databases behind `lease` and `res` — the same client
/// twice for [`Databases::One`] — and describes every statement. The clients must resolve
/// `now()` to the run's clock (their `search_path`), as the run's sessions do.
pub async fn check(spec: &Spec, lease: &Client, res: &Client) -> Result<Vec<Shape>, SpecError> {
    let err = |line: Option<usize>, place: &str, message: String| SpecError {
        file: spec.file.clone(),
        line,
        place: Some(place.to_string()),
        message,
    };
    let sides: Vec<(&str, &str, &Client)> = match spec.databases {
        Databases::Two => vec![
            ("schema.lease", &spec.lease_schema, lease),
            ("schema.resource", &spec.resource_schema, res),
        ],
        Databases::One => vec![
            ("schema.lease", &spec.lease_schema, lease),
            ("schema.resource", &spec.resource_schema, lease),
        ],
    };
    for (place, ddl, c) in sides {
        if let Err(e) = c.batch_execute(ddl).await {
            let at = e
                .as_db_error()
                .and_then(|d| match d.position() {
                    Some(tokio_postgres::error::ErrorPosition::Original(p)) => Some(*p as usize),
                    _ => None,
                })
                .map(|p| {
                    let upto: String = ddl.chars().take(p.saturating_sub(1)).collect();
                    format!(" (line {} of the DDL)", upto.matches('\n').count() + 1)
                })
                .unwrap_or_default();
            return Err(err(
                Some(spec.schema_line),
                place,
                format!("the DDL fails{at}: {}", pg_message(&e)),
            ));
        }
    }
    let mut shapes = Vec::new();
    for op in &spec.ops {
        let c = if op.kind.db() == leaselab_model::DbName::Lease || spec.databases == Databases::One
        {
            lease
        } else {
            res
        };
        let mut shape = Shape::default();
        let mut last_rows: Option<(usize, Vec<(String, Type)>)> = None;
        for (i, st) in op.statements.iter().enumerate() {
            let place = if op.statements.len() > 1 {
                format!("{}[{}]", op.kind.as_str(), i + 1)
            } else {
                op.kind.as_str().to_string()
            };
            if st.kind == StatementKind::Utility {
                // Utility statements are not prepared; run inside a transaction that is rolled
                // back, where `SET TRANSACTION` and `LOCK` are valid.
                let r = c
                    .batch_execute(&format!("BEGIN; {}; ROLLBACK", st.sql))
                    .await;
                let _ = c.batch_execute("ROLLBACK").await;
                if let Err(e) = r {
                    return Err(err(Some(st.line), &place, pg_message(&e)));
                }
                shape.returns_rows.push(false);
                continue;
            }
            let prepared = c
                .prepare_typed(&st.sql, &param_types(st))
                .await
                .map_err(|e| err(Some(st.line), &place, pg_message(&e)))?;
            let cols: Vec<(String, Type)> = prepared
                .columns()
                .iter()
                .map(|c| (c.name().to_string(), c.type_().clone()))
                .collect();
            shape.returns_rows.push(!cols.is_empty());
            if !cols.is_empty() {
                last_rows = Some((i, cols));
            }
        }
        let col = |cols: &[(String, Type)], name: &str| cols.iter().position(|(n, _)| n == name);
        let ints = [Type::INT2, Type::INT4, Type::INT8];
        let times = [Type::TIMESTAMPTZ, Type::TIMESTAMP];
        let texts = [Type::TEXT, Type::VARCHAR, Type::BPCHAR, Type::NAME];
        let describe = |cols: &[(String, Type)]| {
            cols.iter()
                .map(|(n, t)| format!("{n} {t}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let place = op.kind.as_str();
        let need = |cols: &[(String, Type)], name: &str, of: &[Type], what: &str| {
            match col(cols, name) {
                Some(i) if of.contains(&cols[i].1) => Ok(Some(i)),
                _ => Err(err(
                    Some(op.line),
                    place,
                    format!(
                        "wrong result shape: `{place}` must return a column `{name}` ({what}); it returns ({})",
                        describe(cols)
                    ),
                )),
            }
        };
        let maybe =
            |cols: &[(String, Type)], name: &str, of: &[Type], what: &str| match col(cols, name) {
                None => Ok(None),
                Some(_) => need(cols, name, of, what),
            };
        match op.kind {
            OpKind::Acquire | OpKind::ReadPart => {
                let Some((_, cols)) = &last_rows else {
                    return Err(err(
                        Some(op.line),
                        place,
                        format!(
                            "wrong result shape: `{place}` must return rows (a SELECT, or RETURNING); it returns none"
                        ),
                    ));
                };
                shape.token = need(cols, "token", &ints, "an integer")?;
                if op.kind == OpKind::Acquire {
                    shape.expires_at = maybe(cols, "expires_at", &times, "a timestamp")?;
                } else {
                    shape.content = need(cols, "content", &texts, "text")?;
                    shape.writer = need(cols, "writer", &texts, "text")?;
                }
            }
            OpKind::Renew => {
                if let Some((_, cols)) = &last_rows {
                    shape.expires_at = maybe(cols, "expires_at", &times, "a timestamp")?;
                }
            }
            _ => {}
        }
        shapes.push(shape);
    }
    Ok(shapes)
}

/// The types a statement's parameters are prepared with (each is cast to it in the SQL too).
pub fn param_types(st: &Statement) -> Vec<Type> {
    st.params
        .iter()
        .map(|p| match p.sql_type() {
            "bigint" => Type::INT8,
            _ => Type::TEXT,
        })
        .collect()
}

/// PostgreSQL's own words: severity, message, detail and hint.
fn pg_message(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(d) => {
            let mut m = format!("PostgreSQL: {}: {}", d.severity(), d.message());
            if let Some(x) = d.detail() {
                m.push_str(&format!(" ({x})"));
            }
            if let Some(h) = d.hint() {
                m.push_str(&format!(" hint: {h}"));
            }
            m
        }
        None => format!("PostgreSQL: {e}"),
    }
}
