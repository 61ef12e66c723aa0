//! The spec file, read without a server: its TOML, the statements' named parameters and the
//! wall-clock functions virtual time would not reach.

use super::sqltext::{pieces, words, Piece};
use super::*;
use toml::de::{DeString, DeTable, DeValue};
use toml::Spanned;

/// Functions and keywords that read the wall clock inside PostgreSQL, with what to write
/// instead. `now()` and `transaction_timestamp()` are the transaction's start (PostgreSQL
/// manual §9.9.5), which the run sets to virtual time; these are not.
const WALL_CLOCK: [(&str, &str); 8] = [
    ("current_timestamp", "now()"),
    ("localtimestamp", "now()::timestamp"),
    ("current_time", "now()::timetz"),
    ("localtime", "now()::time"),
    ("current_date", "now()::date"),
    ("clock_timestamp", "now()"),
    ("statement_timestamp", "now()"),
    ("timeofday", "now()"),
];

/// Reads the spec in `text`; `file` names it in errors.
pub fn parse(file: &str, text: &str) -> Result<Spec, SpecError> {
    let err = |line: Option<usize>, place: Option<&str>, message: String| SpecError {
        file: file.to_string(),
        line,
        place: place.map(str::to_string),
        message,
    };
    let line_of = |at: usize| text[..at.min(text.len())].matches('\n').count() + 1;
    let root = DeTable::parse(text).map_err(|e| {
        err(
            e.span().map(|s| line_of(s.start)),
            None,
            format!("not TOML: {}", e.message()),
        )
    })?;
    let root = root.get_ref();
    for (k, v) in root.iter() {
        if !matches!(
            k.get_ref().as_ref(),
            "databases"
                | "lease"
                | "ttl_ms"
                | "lease_txn"
                | "lease_conns"
                | "schema"
                | "statements"
        ) {
            return Err(err(
                Some(line_of(v.span().start)),
                Some(k.get_ref()),
                "unknown key (a spec has `databases`, `lease`, `ttl_ms`, `lease_txn`, `lease_conns`, `[schema]` and `[statements]`)"
                    .into(),
            ));
        }
    }
    let databases = match root.get("databases").map(|v| (v.get_ref(), v.span())) {
        None => Databases::Two,
        Some((DeValue::String(s), _)) if s.as_ref() == "two" => Databases::Two,
        Some((DeValue::String(s), _)) if s.as_ref() == "one" => Databases::One,
        Some((_, span)) => {
            return Err(err(
                Some(line_of(span.start)),
                Some("databases"),
                "must be \"one\" or \"two\"".into(),
            ))
        }
    };
    let lease = match root.get("lease").map(|v| (v.get_ref(), v.span())) {
        None => super::LEASE.to_string(),
        Some((DeValue::String(s), _)) if !s.is_empty() => s.to_string(),
        Some((_, span)) => {
            return Err(err(
                Some(line_of(span.start)),
                Some("lease"),
                "must be a non-empty string: the lease name the holders compete for".into(),
            ))
        }
    };
    let ttl_ms = match root.get("ttl_ms").map(|v| (v.get_ref(), v.span())) {
        None => None,
        Some((DeValue::Integer(i), span)) => match i.as_str().parse::<u64>() {
            Ok(t) if (1..=super::MAX_TTL_MS).contains(&t) => Some(t),
            _ => {
                return Err(err(
                    Some(line_of(span.start)),
                    Some("ttl_ms"),
                    format!("must be an integer from 1 to {}", super::MAX_TTL_MS),
                ))
            }
        },
        Some((_, span)) => {
            return Err(err(
                Some(line_of(span.start)),
                Some("ttl_ms"),
                format!("must be an integer from 1 to {}", super::MAX_TTL_MS),
            ))
        }
    };
    let lease_txn = match root.get("lease_txn").map(|v| (v.get_ref(), v.span())) {
        None => false,
        Some((DeValue::Boolean(b), _)) => *b,
        Some((_, span)) => {
            return Err(err(
                Some(line_of(span.start)),
                Some("lease_txn"),
                "must be true or false: whether holders call the lease inside transactions they hold open".into(),
            ))
        }
    };
    let lease_conns = match root.get("lease_conns").map(|v| (v.get_ref(), v.span())) {
        None => 1,
        Some((DeValue::Integer(i), _)) if matches!(i.as_str(), "1" | "2") => {
            u8::from(i.as_str() == "2") + 1
        }
        Some((_, span)) => {
            return Err(err(
                Some(line_of(span.start)),
                Some("lease_conns"),
                "must be 1 or 2: on how many connections each holder calls the lease".into(),
            ))
        }
    };
    let table = |name: &str| -> Result<(&DeTable<'_>, usize), SpecError> {
        match root.get(name) {
            Some(v) => match v.get_ref() {
                DeValue::Table(t) => Ok((t, line_of(v.span().start))),
                _ => Err(err(
                    Some(line_of(v.span().start)),
                    Some(name),
                    "must be a table".into(),
                )),
            },
            None => Err(err(None, Some(name), format!("missing `[{name}]`"))),
        }
    };
    let (schema, schema_line) = table("schema")?;
    let ddl = |side: &str| -> Result<String, SpecError> {
        let place = format!("schema.{side}");
        let v = schema
            .get(side)
            .ok_or_else(|| err(Some(schema_line), Some(&place), "missing".into()))?;
        let DeValue::String(s) = v.get_ref() else {
            return Err(err(
                Some(line_of(v.span().start)),
                Some(&place),
                "must be a string of DDL".into(),
            ));
        };
        wall_clock(s).map_err(|m| err(Some(line_of(v.span().start)), Some(&place), m))?;
        Ok(s.to_string())
    };
    let lease_schema = ddl("lease")?;
    let resource_schema = ddl("resource")?;
    for (k, v) in schema.iter() {
        if !matches!(k.get_ref().as_ref(), "lease" | "resource") {
            return Err(err(
                Some(line_of(v.span().start)),
                Some(&format!("schema.{}", k.get_ref())),
                "unknown key (`[schema]` has `lease` and `resource`)".into(),
            ));
        }
    }
    let (stmts, stmts_line) = table("statements")?;
    for (k, v) in stmts.iter() {
        if !OpKind::ALL
            .iter()
            .any(|o| o.as_str() == k.get_ref().as_ref())
        {
            return Err(err(
                Some(line_of(v.span().start)),
                Some(k.get_ref()),
                format!(
                    "unknown statement (a spec names {})",
                    OpKind::ALL.map(|o| format!("`{}`", o.as_str())).join(", ")
                ),
            ));
        }
    }
    let mut ops = Vec::new();
    for kind in OpKind::ALL {
        let Some(v) = stmts.get(kind.as_str()) else {
            if kind.required() {
                return Err(err(
                    Some(stmts_line),
                    Some(kind.as_str()),
                    "missing statement".into(),
                ));
            }
            continue;
        };
        ops.push(
            operation(kind, v, &line_of)
                .map_err(|(line, place, m)| err(Some(line), Some(&place), m))?,
        );
    }
    Ok(Spec {
        file: file.to_string(),
        databases,
        lease,
        ttl_ms,
        lease_txn,
        lease_conns,
        lease_schema,
        resource_schema,
        ops,
        schema_line,
    })
}

type Failure = (usize, String, String);

/// `acquire = "…"`, `write = ["…", "…"]`, or `[statements.write]` with `sql` and
/// `transaction`.
fn operation(
    kind: OpKind,
    v: &Spanned<DeValue<'_>>,
    line_of: &dyn Fn(usize) -> usize,
) -> Result<Operation, Failure> {
    let name = kind.as_str().to_string();
    let line = line_of(v.span().start);
    let fail = |l: usize, m: &str| (l, name.clone(), m.to_string());
    let (sql, transaction) = match v.get_ref() {
        DeValue::Table(t) => {
            for (k, x) in t.iter() {
                if !matches!(k.get_ref().as_ref(), "sql" | "transaction") {
                    return Err(fail(
                        line_of(x.span().start),
                        "unknown key (a statement table has `sql` and `transaction`)",
                    ));
                }
            }
            let sql = t.get("sql").ok_or_else(|| fail(line, "missing `sql`"))?;
            let txn = match t.get("transaction").map(|x| (x.get_ref(), x.span())) {
                None => true,
                Some((DeValue::Boolean(b), _)) => *b,
                Some((_, s)) => {
                    return Err(fail(
                        line_of(s.start),
                        "`transaction` must be true or false",
                    ))
                }
            };
            (sql, txn)
        }
        _ => (v, true),
    };
    let texts: Vec<(&DeString<'_>, usize)> = match sql.get_ref() {
        DeValue::String(s) => vec![(s, line_of(sql.span().start))],
        DeValue::Array(a) if !a.is_empty() => a
            .iter()
            .map(|x| match x.get_ref() {
                DeValue::String(s) => Ok((s, line_of(x.span().start))),
                _ => Err(fail(
                    line_of(x.span().start),
                    "each statement must be a string",
                )),
            })
            .collect::<Result<_, _>>()?,
        _ => {
            return Err(fail(
                line_of(sql.span().start),
                "must be a statement (a string) or a non-empty list of statements",
            ))
        }
    };
    let many = texts.len() > 1;
    let mut statements = Vec::new();
    for (i, (text, l)) in texts.into_iter().enumerate() {
        let place = if many {
            format!("{name}[{}]", i + 1)
        } else {
            name.clone()
        };
        let s = statement(kind, text, l).map_err(|m| (l, place, m))?;
        statements.push(s);
    }
    Ok(Operation {
        kind,
        statements,
        transaction,
        line,
    })
}

/// One statement: parameters replaced, its kind, wall-clock functions refused.
fn statement(kind: OpKind, text: &str, line: usize) -> Result<Statement, String> {
    if text.trim().is_empty() {
        return Err("empty statement".into());
    }
    wall_clock(text)?;
    let mut sql = String::new();
    let mut params: Vec<Param> = Vec::new();
    let mut code_words = Vec::new();
    for (piece, t) in pieces(text) {
        if piece != Piece::Code {
            sql.push_str(t);
            continue;
        }
        code_words.extend(words(t).into_iter().map(|(_, w)| w));
        if t.contains(';') && !t.trim_end().trim_end_matches(';').trim_end().is_empty() {
            let inner = t.trim_end().trim_end_matches(';');
            if inner.contains(';') {
                return Err(
                    "more than one statement in one string: give a list of statements instead"
                        .into(),
                );
            }
        }
        let mut rest = t;
        while let Some(at) = rest.find(':') {
            let (head, tail) = rest.split_at(at);
            sql.push_str(head);
            let name: String = tail[1..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            let is_param = !sql.ends_with(':')
                && name
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
            if !is_param {
                sql.push(':');
                rest = &tail[1..];
                continue;
            }
            let allowed = kind.params();
            let p = Param::ALL
                .into_iter()
                .find(|p| p.name() == name)
                .filter(|p| allowed.contains(p))
                .ok_or_else(|| {
                    format!(
                        "unknown parameter :{name} (`{}` knows {})",
                        kind.as_str(),
                        allowed
                            .iter()
                            .map(|p| format!(":{}", p.name()))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                })?;
            let n = match params.iter().position(|q| *q == p) {
                Some(n) => n + 1,
                None => {
                    params.push(p);
                    params.len()
                }
            };
            sql.push_str(&format!("${n}::{}", p.sql_type()));
            rest = &tail[1 + name.len()..];
        }
        sql.push_str(rest);
    }
    // Utility statements PostgreSQL cannot prepare with parameters; anything else is
    // described by the server (a misspelt keyword then gets PostgreSQL's syntax error).
    let kind = match code_words.first().map(String::as_str) {
        Some("insert" | "update" | "delete" | "merge") => StatementKind::Change,
        Some("set" | "lock" | "savepoint" | "reset" | "release" | "discard" | "notify") => {
            StatementKind::Utility
        }
        _ => StatementKind::Query,
    };
    if kind == StatementKind::Utility && !params.is_empty() {
        return Err(format!(
            "a utility statement ({}) cannot take parameters",
            code_words.first().map_or("?", String::as_str)
        ));
    }
    Ok(Statement {
        source: text.to_string(),
        sql: sql.trim().trim_end_matches(';').trim_end().to_string(),
        params,
        kind,
        line,
    })
}

/// Refuses what would run on the wall clock.
fn wall_clock(text: &str) -> Result<(), String> {
    for (piece, t) in pieces(text) {
        match piece {
            Piece::Code => {
                let ws = words(t);
                for (k, (_, w)) in ws.iter().enumerate() {
                    if let Some((_, instead)) = WALL_CLOCK.iter().find(|(f, _)| f == w) {
                        return Err(format!(
                            "`{w}` reads the wall clock, which the run's virtual time does not \
                             reach: write {instead} (the transaction's start, which the run sets)"
                        ));
                    }
                    if w == "now" && k > 0 && ws[k - 1].1 == "pg_catalog" {
                        return Err("`pg_catalog.now()` bypasses the run's virtual time: write \
                                    now()"
                            .into());
                    }
                }
            }
            Piece::Str => {
                let inner = t.trim_matches('\'').trim().to_ascii_lowercase();
                if matches!(inner.as_str(), "now" | "today" | "tomorrow" | "yesterday") {
                    return Err(format!(
                        "the literal {t} is read at the wall clock: write now() (or \
                         now()::date) instead"
                    ));
                }
            }
            Piece::Opaque => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
[schema]
lease = "CREATE TABLE lease (name text PRIMARY KEY, holder text, token bigint, expires_at timestamptz)"
resource = "CREATE TABLE part (scope text, part text, content text, writer text, token bigint)"

[statements]
acquire = "SELECT 1 AS token WHERE :lease <> '' AND :holder <> '' AND :ttl_ms > 0"
renew = "UPDATE lease SET expires_at = now() + make_interval(secs => :ttl_ms / 1000.0) WHERE name = :lease AND token = :token AND holder = :holder"
release = "UPDATE lease SET expires_at = '-infinity' WHERE name = :lease AND token = :token"
write = [
  "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ",
  "UPDATE part SET content = :content, token = :token::bigint WHERE scope = :scope AND part = :part AND token <= :token",
]
"#;

    fn bad(text: &str) -> SpecError {
        parse("s.toml", text).expect_err("refused")
    }

    #[test]
    fn parameters_become_typed_positions_and_casts_stay() {
        let s = parse("s.toml", GOOD).expect("parses");
        let w = s.op(OpKind::Write).expect("write");
        assert_eq!(w.statements.len(), 2);
        assert_eq!(w.statements[0].kind, StatementKind::Utility);
        let u = &w.statements[1];
        assert_eq!(u.kind, StatementKind::Change);
        assert_eq!(
            u.sql,
            "UPDATE part SET content = $1::text, token = $2::bigint::bigint WHERE scope = $3::text AND part = $4::text AND token <= $2::bigint"
        );
        assert_eq!(
            u.params,
            vec![Param::Content, Param::Token, Param::Scope, Param::Part]
        );
        assert_eq!(u.line, 12);
        assert!(s.op(OpKind::ReadPart).is_none());
        assert_eq!(s.databases, Databases::Two);
    }

    #[test]
    fn a_missing_statement_is_named() {
        let e = bad(&GOOD.replace("release = ", "# release = "));
        assert_eq!(e.place.as_deref(), Some("release"));
        assert!(e.message.contains("missing"), "{e}");
    }

    #[test]
    fn an_unknown_parameter_names_the_ones_it_may_use() {
        let e = bad(&format!("ttl_ms = 0\n{GOOD}"));
        assert_eq!(
            (e.line, e.place.as_deref()),
            (Some(1), Some("ttl_ms")),
            "{e}"
        );
        assert!(e.message.contains("from 1 to 3600000"), "{e}");
        let e = bad(&format!("lease = \"\"\n{GOOD}"));
        assert_eq!(
            (e.line, e.place.as_deref()),
            (Some(1), Some("lease")),
            "{e}"
        );
        let s = parse("t.toml", &format!("lease = \"x\"\nttl_ms = 900\n{GOOD}")).expect("parses");
        assert_eq!((s.lease.as_str(), s.ttl_ms), ("x", Some(900)));
        let s = parse("t.toml", GOOD).expect("parses");
        assert_eq!((s.lease.as_str(), s.ttl_ms), (crate::spec::LEASE, None));
        let e = bad(&GOOD.replace("AND :ttl_ms > 0", "AND :ttl > 0"));
        assert_eq!(e.place.as_deref(), Some("acquire"));
        assert!(
            e.message.contains(":ttl ") && e.message.contains(":ttl_ms"),
            "{e}"
        );
        assert_eq!(e.line, Some(7));
        // A parameter of another operation is unknown here too.
        let e = bad(&GOOD.replace("AND :ttl_ms > 0", "AND :token > 0"));
        assert!(e.message.contains("unknown parameter :token"), "{e}");
    }

    #[test]
    fn wall_clock_functions_are_refused_with_what_to_write() {
        let e = bad(&GOOD.replace("expires_at = now()", "expires_at = clock_timestamp()"));
        assert_eq!(e.place.as_deref(), Some("renew"));
        assert!(
            e.message.contains("clock_timestamp") && e.message.contains("now()"),
            "{e}"
        );
        let e = bad(&GOOD.replace("expires_at = now()", "expires_at = CURRENT_TIMESTAMP"));
        assert!(e.message.contains("current_timestamp"), "{e}");
        let e = bad(&GOOD.replace(
            "token bigint)\"\n",
            "token bigint, at timestamptz DEFAULT statement_timestamp())\"\n",
        ));
        assert_eq!(e.place.as_deref(), Some("schema.resource"), "{e}");
        let e = bad(&GOOD.replace("'-infinity'", "'now'"));
        assert!(e.message.contains("'now'"), "{e}");
        // In a string or a comment it is not a call.
        parse(
            "s.toml",
            &GOOD.replace("'-infinity'", "'-infinity' /* not clock_timestamp() */"),
        )
        .expect("a comment is not code");
    }

    #[test]
    fn toml_errors_and_unknown_keys_name_the_line() {
        let e = bad("[schema\nlease = 1");
        assert!(e.message.starts_with("not TOML"), "{e}");
        assert_eq!(e.line, Some(1));
        let e = bad(&GOOD.replace("[statements]", "[statements]\nacquier = \"SELECT 1\""));
        assert_eq!(e.place.as_deref(), Some("acquier"));
        assert_eq!(e.line, Some(7));
        let e = bad(&GOOD.replace("acquire = \"SELECT", "acquire = \"SELECT 1; SELECT"));
        assert!(e.message.contains("more than one statement"), "{e}");
    }

    #[test]
    fn two_autocommit_statements_are_a_table_with_transaction_false() {
        let text = GOOD.replace(
            "release = \"",
            "[statements.release]\ntransaction = false\nsql = \"",
        );
        // `[statements.release]` must come after the plain keys of `[statements]`.
        let text = text.replace(
            "[statements.release]\ntransaction = false\nsql = \"UPDATE lease SET expires_at = '-infinity' WHERE name = :lease AND token = :token\"\n",
            "",
        ) + "[statements.release]\ntransaction = false\nsql = [\"SELECT 1 FROM lease WHERE name = :lease FOR UPDATE\", \"UPDATE lease SET expires_at = '-infinity' WHERE name = :lease AND token = :token\"]\n";
        let s = parse("s.toml", &text).expect("parses");
        let r = s.op(OpKind::Release).expect("release");
        assert!(!r.transaction);
        assert_eq!(r.statements.len(), 2);
        assert_eq!(r.statements[0].kind, StatementKind::Query);
    }
}
