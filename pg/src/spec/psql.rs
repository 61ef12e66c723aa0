//! A spec's history as plain psql scripts: one script per session, a setup script per
//! database, and `run.sh`, which feeds each session its statements in the history's order
//! through a FIFO (as PostgreSQL's isolation tester does with its sessions), checks that a step
//! the history shows waiting really waits (`pg_stat_activity`), and collects what each session
//! printed. Anyone can rerun a failure on PostgreSQL 13 or newer with psql and bash, no
//! leaselab needed. [`outcomes`] reads the printed results back by the spec's conventions, so a
//! test can compare them with the history.
//!
//! An operation runs exactly as the adapter runs it (`spec_ops`): `lab.now` set before it (its
//! `now()`), `BEGIN` when it is a list in a transaction, each statement in turn, stopping — and
//! rolling back — at the first that raises or affects or returns no row, then `COMMIT`. psql
//! cannot branch on a row count by itself, so after each statement the server is asked
//! `:ROW_COUNT > 0` into a variable that guards the next (`\if`); `:ERROR` and
//! `:LAST_ERROR_SQLSTATE` (psql 11+) report errors. A paused operation stops at its pause point;
//! the rest is fed at the `await` that resumed it.

use super::{OpKind, Param, Spec, StatementKind};
use crate::sql::LAB_SCHEMA;
use leaselab_model::Reason;
use leaselab_model::{DbName, Event, History, Op, Outcome};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Written files: a name relative to the scripts' folder, and its text.
pub type Files = Vec<(String, String)>;

/// The session a statement runs on: its database and its connection, as a file name.
fn session_name(db: DbName, e: &Event) -> String {
    let conn: String = e
        .conn_id()
        .to_string()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{}-{conn}", db.as_str())
}

/// The value of each parameter of one operation.
type Values<'a> = Box<dyn Fn(Param) -> Literal + 'a>;

/// The spec's operation an event runs, with the value of each parameter.
fn operation<'a>(e: &'a Event, lease: &'a str) -> Option<(OpKind, Values<'a>)> {
    let actor = e.actor.to_string();
    let text = |s: String| Literal::Text(s);
    let int = |i: u64| Literal::Int(i as i64);
    Some(match &e.op {
        Op::Acquire {
            lease,
            holder,
            ttl_ms,
        } => (
            OpKind::Acquire,
            Box::new(move |p| match p {
                Param::Lease => text(lease.to_string()),
                Param::Holder => text(holder.to_string()),
                Param::TtlMs => int(*ttl_ms),
                _ => Literal::Null,
            }),
        ),
        Op::Renew {
            lease,
            holder,
            token,
            ttl_ms,
        } => (
            OpKind::Renew,
            Box::new(move |p| match p {
                Param::Lease => text(lease.to_string()),
                Param::Holder => text(holder.to_string()),
                Param::TtlMs => int(*ttl_ms),
                Param::Token => int(token.0),
                _ => Literal::Null,
            }),
        ),
        Op::Release {
            lease,
            holder,
            token,
        } => (
            OpKind::Release,
            Box::new(move |p| match p {
                Param::Lease => text(lease.to_string()),
                Param::Holder => text(holder.to_string()),
                Param::Token => int(token.0),
                _ => Literal::Null,
            }),
        ),
        Op::Write {
            scope,
            part,
            content,
            token,
        } => (
            OpKind::Write,
            Box::new(move |p| match p {
                Param::Lease => text(lease.to_string()),
                Param::Holder => text(actor.clone()),
                Param::Token => int(token.0),
                Param::Scope => text(scope.to_string()),
                Param::Part => text(part.to_string()),
                Param::Content => text(content.clone()),
                _ => Literal::Null,
            }),
        ),
        Op::Publish {
            key,
            content,
            token,
        } => (
            OpKind::Publish,
            Box::new(move |p| match p {
                Param::Lease => text(lease.to_string()),
                Param::Holder => text(actor.clone()),
                Param::Token => int(token.0),
                Param::Key => text(key.clone()),
                Param::Content => text(content.clone()),
                _ => Literal::Null,
            }),
        ),
        Op::ReadPart { scope, part } => (
            OpKind::ReadPart,
            Box::new(move |p| match p {
                Param::Lease => text(lease.to_string()),
                Param::Scope => text(scope.to_string()),
                Param::Part => text(part.to_string()),
                _ => Literal::Null,
            }),
        ),
        _ => return None,
    })
}

enum Literal {
    Text(String),
    Int(i64),
    Null,
}

impl Literal {
    fn sql(&self) -> String {
        match self {
            Literal::Text(s) => crate::sql::literal(s),
            Literal::Int(i) => i.to_string(),
            Literal::Null => "NULL".into(),
        }
    }
}

/// `sql` with each `$n` replaced by the literal of parameter n (highest first, so `$1` never
/// eats the start of `$12`).
fn with_literals(sql: &str, params: &[Param], value: &dyn Fn(Param) -> Literal) -> String {
    let mut out = sql.to_string();
    for (i, p) in params.iter().enumerate().rev() {
        out = out.replace(&format!("${}", i + 1), &value(*p).sql());
    }
    out
}

/// The scripts that rerun `h` (recorded by `leaselab audit` on `spec`, with its `pauses`):
/// `run.sh`, `setup-lease.sql`, `setup-resource.sql` and one `sessions/<session>.sql` each.
pub fn scripts(spec: &Spec, h: &History, pauses: &BTreeMap<u64, usize>, title: &str) -> Files {
    let mut sessions: BTreeMap<String, String> = BTreeMap::new();
    let mut driver = String::new();
    // Per session: the step of its operation still running (waiting, or paused), and whether
    // its pause point is still ahead.
    let mut open: BTreeMap<String, (u64, bool)> = BTreeMap::new();
    let mut down = [false; 2];
    // Sessions in a transaction the holder holds open (`begin db=lease`).
    let mut held: std::collections::BTreeSet<String> = Default::default();
    for e in &h.events {
        let n = e.seq;
        // Before each step, every statement a wait let go runs on to its end (or waits again),
        // as the adapter lets it before its next step: otherwise the next step races with it —
        // a disconnect that cuts it before its COMMIT rolls back what the history committed.
        for (s, (k, paused)) in &open {
            if !paused {
                let _ = writeln!(driver, "settle {k} {s}");
            }
        }
        if let Some((kind, value)) = operation(e, &spec.lease) {
            let Some(op) = spec.op(kind) else {
                let _ = writeln!(driver, "recorded {n} 'the spec has no {}'", kind.as_str());
                continue;
            };
            let db = kind.db();
            let s = session_name(db, e);
            if down[db.index()] || !reached_server(&e.outcome) {
                // The adapter answered without the server (down, connection lost).
                let _ = writeln!(driver, "recorded {n} '{}'", e.outcome);
                continue;
            }
            let text = sessions.entry(s.clone()).or_default();
            let pause = pauses
                .get(&n)
                .map(|k| (*k).min(op.statements.len().saturating_sub(1)));
            let _ = writeln!(text, "-- step {n}");
            let _ = writeln!(text, "-- {} {} at t={}", e.actor, kind.as_str(), e.at.0);
            let _ = writeln!(text, "\\echo lab:step {n}");
            let _ = writeln!(text, "\\set lab_go true");
            let in_held = held.contains(&s);
            // Inside a held transaction `now()` stays its start, and a list is a savepoint.
            if !in_held {
                let _ = writeln!(
                    text,
                    "SELECT set_config('lab.now', '{}', false) \\g /dev/null",
                    e.at.0
                );
            }
            let list = op.transaction && op.statements.len() > 1;
            let txn = list && !in_held;
            let savepoint = list && in_held;
            if txn {
                let _ = writeln!(text, "BEGIN;");
            }
            if savepoint {
                let _ = writeln!(text, "SAVEPOINT lab_op;");
            }
            for (i, st) in op.statements.iter().enumerate() {
                let sql = with_literals(&st.sql, &st.params, &*value);
                let _ = writeln!(text, "\\if :lab_go");
                if i > 0 && !txn && pause.is_some_and(|k| k + 1 == i) {
                    // An autocommit statement after the pause runs at the time of the await.
                    let _ = writeln!(text, "\\if :lab_resumed");
                    let _ = writeln!(
                        text,
                        "SELECT set_config('lab.now', :'lab_resume_at', false) \\g /dev/null"
                    );
                    let _ = writeln!(text, "\\endif");
                }
                let _ = writeln!(text, "\\echo lab:statement {i}");
                let _ = writeln!(text, "{};", sql.trim().trim_end_matches(';'));
                let _ = writeln!(text, "\\if :ERROR");
                let _ = writeln!(text, "\\echo lab:error :LAST_ERROR_SQLSTATE");
                let _ = writeln!(text, "\\set lab_go false");
                if txn {
                    let _ = writeln!(text, "ROLLBACK;");
                }
                let _ = writeln!(text, "\\else");
                if st.kind != StatementKind::Utility {
                    let _ = writeln!(text, "\\echo lab:rows :ROW_COUNT");
                    let _ = writeln!(text, "SELECT :ROW_COUNT > 0 AS lab_go \\gset");
                    if txn || savepoint {
                        let _ = writeln!(text, "\\if :lab_go");
                        let _ = writeln!(text, "\\else");
                        let _ = writeln!(
                            text,
                            "{}",
                            if txn {
                                "ROLLBACK;"
                            } else {
                                "ROLLBACK TO SAVEPOINT lab_op; RELEASE SAVEPOINT lab_op;"
                            }
                        );
                        let _ = writeln!(text, "\\endif");
                    }
                }
                let _ = writeln!(text, "\\endif");
                let _ = writeln!(text, "\\endif");
                if pause == Some(i) {
                    // Stopped here with the transaction open, until the holder's `await`.
                    let _ = writeln!(text, "\\if :lab_go");
                    let _ = writeln!(text, "\\echo lab:paused {n}");
                    let _ = writeln!(text, "\\else");
                    let _ = writeln!(text, "\\echo lab:end {n}");
                    let _ = writeln!(text, "\\endif");
                    let _ = writeln!(text, "-- end {n}");
                    let _ = writeln!(text, "-- resume {n}");
                    let _ = writeln!(text, "\\set lab_resumed true");
                }
            }
            if savepoint {
                let _ = writeln!(text, "\\if :lab_go");
                let _ = writeln!(text, "RELEASE SAVEPOINT lab_op;");
                let _ = writeln!(text, "\\endif");
            }
            if txn {
                let _ = writeln!(text, "\\if :lab_go");
                let _ = writeln!(text, "COMMIT;");
                let _ = writeln!(text, "\\if :ERROR");
                let _ = writeln!(text, "\\echo lab:error :LAST_ERROR_SQLSTATE");
                let _ = writeln!(text, "\\endif");
                let _ = writeln!(text, "\\endif");
            }
            let _ = writeln!(text, "\\echo lab:end {n}");
            let _ = writeln!(text, "\\set lab_resumed false");
            let _ = writeln!(
                text,
                "-- {} {n}",
                if pause.is_some() { "end resume" } else { "end" }
            );
            let dbw = db.as_str();
            if e.outcome == Outcome::Blocked {
                let _ = writeln!(driver, "step {n} {s} {dbw}; expect_wait {n} {s}");
                open.insert(s, (n, pause.is_some()));
            } else {
                let _ = writeln!(driver, "step {n} {s} {dbw}; expect_end {n} {s}");
            }
            continue;
        }
        match &e.op {
            Op::Begin {
                db: db @ DbName::Lease,
            }
            | Op::BeginRepeatableRead {
                db: db @ DbName::Lease,
            }
            | Op::Commit {
                db: db @ DbName::Lease,
            }
            | Op::Rollback {
                db: db @ DbName::Lease,
            } if !down[db.index()] && reached_server(&e.outcome) => {
                // A transaction the holder holds open on its lease connection.
                let s = session_name(*db, e);
                let (sql, open_after) = match &e.op {
                    Op::Begin { .. } => ("BEGIN;".to_string(), true),
                    Op::BeginRepeatableRead { .. } => {
                        ("BEGIN ISOLATION LEVEL REPEATABLE READ;".to_string(), true)
                    }
                    Op::Commit { .. } => ("COMMIT;".to_string(), false),
                    _ => ("ROLLBACK;".to_string(), false),
                };
                let text = sessions.entry(s.clone()).or_default();
                let _ = writeln!(text, "-- step {n}");
                let _ = writeln!(text, "\\echo lab:step {n}");
                if open_after {
                    let _ = writeln!(
                        text,
                        "SELECT set_config('lab.now', '{}', false) \\g /dev/null",
                        e.at.0
                    );
                }
                let _ = writeln!(text, "{sql}");
                let _ = writeln!(text, "\\echo lab:end {n}");
                let _ = writeln!(text, "-- end {n}");
                if open_after {
                    held.insert(s.clone());
                } else {
                    held.remove(&s);
                }
                let _ = writeln!(driver, "step {n} {s} lease; expect_end {n} {s}");
            }
            Op::Await { db } => {
                let s = session_name(*db, e);
                let Some((k, paused)) = open.get(&s).copied() else {
                    let _ = writeln!(driver, "recorded {n} '{}'", e.outcome);
                    continue;
                };
                if paused {
                    let _ = writeln!(driver, "resume {k} {s} {}", e.at.0);
                    open.insert(s.clone(), (k, false));
                }
                if still_waiting(&e.outcome) {
                    let _ = writeln!(driver, "expect_wait {k} {s}");
                } else {
                    let _ = writeln!(driver, "expect_end {k} {s}");
                    open.remove(&s);
                }
            }
            Op::Disconnect { db } => {
                let s = session_name(*db, e);
                open.remove(&s);
                held.remove(&s);
                let _ = writeln!(driver, "disconnect {s}");
            }
            Op::Crash { db } => {
                down[db.index()] = true;
                open.retain(|s, _| !s.starts_with(db.as_str()));
                held.retain(|s| !s.starts_with(db.as_str()));
                let _ = writeln!(driver, "crash {}", db.as_str());
            }
            Op::Restart { db } => {
                down[db.index()] = false;
                let _ = writeln!(driver, "restart {}", db.as_str());
            }
            _ => {}
        }
    }
    let setup = |ddl: &str| {
        format!(
            "-- Run once, on an empty database.\n{LAB_SCHEMA}\nSET search_path = public, lab, pg_catalog;\nSELECT set_config('lab.now', '0', false);\n{ddl}\n"
        )
    };
    let (lease_ddl, res_ddl) = match spec.databases {
        super::Databases::Two => (spec.lease_schema.clone(), spec.resource_schema.clone()),
        super::Databases::One => (
            format!("{}\n{}", spec.lease_schema, spec.resource_schema),
            String::new(),
        ),
    };
    let mut files: Files = vec![
        ("run.sh".into(), run_sh(title, spec, &driver)),
        ("setup-lease.sql".into(), setup(&lease_ddl)),
    ];
    if spec.databases == super::Databases::Two {
        files.push(("setup-resource.sql".into(), setup(&res_ddl)));
    }
    for (s, text) in sessions {
        files.push((format!("sessions/{s}.sql"), text));
    }
    files
}

/// An `await` that found the statement still waiting (or still paused): it goes on.
fn still_waiting(o: &Outcome) -> bool {
    matches!(o, Outcome::Blocked) || matches!(o, Outcome::Error(Reason::StillBlocked))
}

/// Whether the adapter sent the operation to the server (not: down, connection lost).
fn reached_server(o: &Outcome) -> bool {
    !matches!(o, Outcome::Unavailable) && !matches!(o, Outcome::Error(r) if !r.is_sql_error())
}

fn run_sh(title: &str, spec: &Spec, steps: &str) -> String {
    let one = spec.databases == super::Databases::One;
    format!(
        r#"#!/usr/bin/env bash
# {title}
# Reruns the history on PostgreSQL 13 or newer with psql: each session is one psql reading its
# statements from a FIFO, fed in the history's order; a step the history shows waiting must be
# seen waiting on a lock (pg_stat_activity), every other step must end before the next starts.
#
#   LEASE_DB='host=… port=… dbname=…' RES_DB='…' bash run.sh
#
# The databases must be empty (setup-*.sql creates the schema{one_db}). A history with crashes
# also needs PG_CTL (pg_ctl's path) and LEASE_PGDATA / RES_PGDATA (the data directories).
# What each session printed is in out/<session>.out; `lab:` lines mark steps and results.
set -u
cd "$(dirname "$0")"
: "${{LEASE_DB:?set LEASE_DB to the connection string of the lease database}}"
{res_db}
WAIT_S=${{WAIT_S:-30}}
rm -rf out; mkdir -p out
declare -A FD PID DBOF
fail=0
conninfo() {{ if [ "$1" = lease ]; then echo "$LEASE_DB"; else echo "$RES_DB"; fi; }}
pgdata() {{ if [ "$1" = lease ]; then echo "${{LEASE_PGDATA:-}}"; else echo "${{RES_PGDATA:-}}"; fi; }}
start() {{ # session db
  local f="out/$1.fifo" fd
  mkfifo "$f"
  PGAPPNAME="lab-$1" PGOPTIONS='-c search_path=lab,pg_catalog,public' \
    psql -X -q -At -v ON_ERROR_STOP=0 -v lab_resumed=false -d "$(conninfo "$2")" -f "$f" >> "out/$1.out" 2>&1 &
  PID[$1]=$!; DBOF[$1]=$2
  exec {{fd}}>"$f"; FD[$1]=$fd
}}
stop() {{ # session
  [ -n "${{PID[$1]:-}}" ] || return 0
  local fd=${{FD[$1]}}
  kill -9 "${{PID[$1]}}" 2>/dev/null; wait "${{PID[$1]}}" 2>/dev/null
  exec {{fd}}>&-
  unset "PID[$1]" "FD[$1]"; rm -f "out/$1.fifo"
}}
block() {{ # file from-marker to-marker: the lines between, inclusive
  awk -v a="$2" -v b="$3" '$0==a{{on=1}} on{{print}} on&&$0==b{{exit}}' "$1"
}}
step() {{ # n session db
  [ -n "${{PID[$2]:-}}" ] || start "$2" "$3"
  block "sessions/$2.sql" "-- step $1" "-- end $1" >&"${{FD[$2]}}"
}}
resume() {{ # n session at
  printf '\\set lab_resume_at %s\n' "$3" >&"${{FD[$2]}}"
  block "sessions/$2.sql" "-- resume $1" "-- end resume $1" >&"${{FD[$2]}}"
}}
seen() {{ grep -qx "$2" "out/$1.out" 2>/dev/null; }}
waits() {{ # session: waiting on a lock, or stopped at its pause point
  [ "$(psql -X -At -d "$(conninfo "${{DBOF[$1]}}")" -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'lab-$1' AND wait_event_type = 'Lock'")" != 0 ]
}}
expect_end() {{ # n session
  local i
  for ((i = 0; i < WAIT_S * 20; i++)); do seen "$2" "lab:end $1" && return 0; sleep 0.05; done
  echo "MISMATCH step $1: $2 did not finish"; fail=1
}}
expect_wait() {{ # n session
  local i
  for ((i = 0; i < WAIT_S * 20; i++)); do
    seen "$2" "lab:paused $1" && return 0
    waits "$2" && return 0
    seen "$2" "lab:end $1" && break
    sleep 0.05
  done
  echo "MISMATCH step $1: $2 should wait, but it $(seen "$2" "lab:end $1" && echo finished || echo neither finished nor waited)"; fail=1
}}
settle() {{ # n session: its statement ends, stops at its pause point, or waits on a lock again
  local i
  for ((i = 0; i < WAIT_S * 20; i++)); do
    seen "$2" "lab:end $1" && return 0
    seen "$2" "lab:paused $1" && return 0
    blocked "$2" && return 0
    sleep 0.05
  done
}}
blocked() {{ # session: a server session blocks it (a wait the commit it waited for ended is over)
  [ "$(psql -X -At -d "$(conninfo "${{DBOF[$1]}}")" -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'lab-$1' AND cardinality(pg_blocking_pids(pid)) > 0")" != 0 ]
}}
recorded() {{ echo "lab:step $1 recorded $2" >> out/driver.out; }}
disconnect() {{ stop "$1"; }}
crash() {{ # db
  local d; d=$(pgdata "$1")
  [ -n "$d" ] && [ -n "${{PG_CTL:-}}" ] || {{ echo "a crash of the $1 database needs PG_CTL and ${{1^^}}_PGDATA"; exit 2; }}
  "$PG_CTL" -D "$d" stop -m immediate > /dev/null
  for s in "${{!PID[@]}}"; do [ "$(pgdata "${{DBOF[$s]}}")" = "$d" ] && stop "$s"; done
}}
# `restart` starts the server with the options it last ran with (postmaster.opts).
restart() {{ "$PG_CTL" -D "$(pgdata "$1")" restart -w > /dev/null 2>&1; }}

psql -X -q -v ON_ERROR_STOP=1 -d "$LEASE_DB" -f setup-lease.sql > /dev/null || exit 2
{res_setup}
{steps}
for s in "${{!PID[@]}}"; do stop "$s"; done
[ $fail = 0 ] && echo "ran as recorded: every step ended or waited as the history says" || exit 1
"#,
        one_db = if one { ", both sides in LEASE_DB" } else { "" },
        // One database: the resource side's sessions, setup and crashes are the lease
        // side's, whatever RES_DB and RES_PGDATA say.
        res_db = if one {
            "RES_DB=$LEASE_DB; RES_PGDATA=${LEASE_PGDATA:-}"
        } else {
            "RES_DB=${RES_DB:-$LEASE_DB}"
        },
        res_setup = if one {
            String::new()
        } else {
            "psql -X -q -v ON_ERROR_STOP=1 -d \"$RES_DB\" -f setup-resource.sql > /dev/null || exit 2"
                .into()
        },
    )
}

/// What the scripts' sessions printed, read by the spec's conventions: per step (the step
/// that started the operation), the same words as the history's outcome ([`outcome_words`]).
/// `outputs` are the `out/*.out` files' texts.
pub fn outcomes(
    spec: &Spec,
    shapes: &[super::Shape],
    h: &History,
    outputs: &[String],
) -> BTreeMap<u64, String> {
    let mut printed: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for text in outputs {
        let mut current: Option<u64> = None;
        for line in text.lines() {
            if let Some(n) = line.strip_prefix("lab:step ") {
                let mut w = n.splitn(2, ' ');
                let n = w.next().and_then(|n| n.parse().ok());
                if let (Some(n), Some(rest)) = (n, w.next()) {
                    // Answered by the driver as recorded.
                    let rest = rest.strip_prefix("recorded ").unwrap_or(rest);
                    printed
                        .entry(n)
                        .or_default()
                        .push(format!("lab:recorded {rest}"));
                    continue;
                }
                current = n;
                continue;
            }
            if let Some(n) = current {
                printed.entry(n).or_default().push(line.to_string());
            }
            if line.starts_with("lab:end ") {
                current = None;
            }
        }
    }
    let mut out = BTreeMap::new();
    for e in &h.events {
        let Some((kind, _)) = operation(e, "") else {
            continue;
        };
        let Some(lines) = printed.get(&e.seq) else {
            continue;
        };
        let at = spec.ops.iter().position(|o| o.kind == kind);
        let shape = at.and_then(|i| shapes.get(i));
        out.insert(e.seq, read_lines(kind, shape, lines));
    }
    out
}

/// One operation's printed lines, in the words of [`outcome_words`].
fn read_lines(kind: OpKind, shape: Option<&super::Shape>, lines: &[String]) -> String {
    let mut rows: Vec<&str> = Vec::new();
    let mut last_rows: Vec<&str> = Vec::new();
    let mut done = false;
    for l in lines {
        if let Some(r) = l.strip_prefix("lab:recorded ") {
            return format!("recorded {r}");
        }
        if let Some(code) = l.strip_prefix("lab:error ") {
            return format!("error sqlstate-{code}");
        }
        if l.starts_with("lab:statement ") {
            rows.clear();
        } else if let Some(n) = l.strip_prefix("lab:rows ") {
            done = n.trim() != "0";
            if !rows.is_empty() {
                last_rows = std::mem::take(&mut rows);
            }
        } else if !l.starts_with("lab:") && !server_message(l) {
            rows.push(l);
        }
    }
    let col = |i: Option<usize>| -> Option<String> {
        let r = last_rows.first()?;
        r.split('|').nth(i?).map(str::to_string)
    };
    match (kind, done) {
        (OpKind::Acquire, true) => format!(
            "granted token={}",
            col(shape.and_then(|s| s.token)).unwrap_or_default()
        ),
        (OpKind::Acquire | OpKind::Renew | OpKind::Release, false) => "refused".into(),
        (OpKind::Renew, true) => "renewed".into(),
        (OpKind::Release, true) => "released".into(),
        (OpKind::Write | OpKind::Publish, true) => "accepted".into(),
        (OpKind::Write | OpKind::Publish, false) => "rejected".into(),
        (OpKind::ReadPart, true) => format!(
            "part token={}",
            col(shape.and_then(|s| s.token)).unwrap_or_default()
        ),
        (OpKind::ReadPart, false) => "part none".into(),
    }
}

/// A line psql wrote to stderr (merged into the output): not a row.
fn server_message(l: &str) -> bool {
    l.starts_with("psql:")
        || [
            "ERROR:", "WARNING:", "NOTICE:", "DETAIL:", "HINT:", "CONTEXT:", "LINE ",
        ]
        .iter()
        .any(|p| l.starts_with(p))
}

/// What the history says each operation ended with, in the words of [`outcomes`]: per step
/// that started an operation, its own outcome, or — when it waited or paused — that of the
/// `await` that collected it (an operation never collected is left out).
pub fn expected(h: &History) -> BTreeMap<u64, String> {
    let mut out = BTreeMap::new();
    let mut open: BTreeMap<String, u64> = BTreeMap::new();
    for e in &h.events {
        if let Some((kind, _)) = operation(e, "") {
            let s = session_name(kind.db(), e);
            if e.outcome == Outcome::Blocked {
                open.insert(s, e.seq);
            } else {
                out.insert(e.seq, outcome_words(&e.outcome));
            }
            continue;
        }
        match &e.op {
            Op::Await { db } if !still_waiting(&e.outcome) => {
                if let Some(n) = open.remove(&session_name(*db, e)) {
                    out.insert(n, outcome_words(&e.outcome));
                }
            }
            Op::Disconnect { db } => {
                open.remove(&session_name(*db, e));
            }
            Op::Crash { db } => open.retain(|s, _| !s.starts_with(db.as_str())),
            _ => {}
        }
    }
    out
}

/// The history's outcome of an operation in the words [`outcomes`] uses.
pub fn outcome_words(o: &Outcome) -> String {
    match o {
        Outcome::Granted { token, .. } => format!("granted token={}", token.0),
        Outcome::Refused => "refused".into(),
        Outcome::Renewed { .. } => "renewed".into(),
        Outcome::Released => "released".into(),
        Outcome::Accepted => "accepted".into(),
        Outcome::Rejected => "rejected".into(),
        Outcome::Part(Some(p)) => format!("part token={}", p.token.0),
        Outcome::Part(None) => "part none".into(),
        Outcome::Error(r) if r.is_sql_error() => format!("error {r}"),
        o => format!("recorded {o}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Shape;

    #[test]
    fn parameters_become_literals_without_eating_longer_numbers() {
        let params = [Param::Holder; 12];
        let mut sql = String::from("SELECT $1::text");
        sql.push_str(", $12::text");
        let out = with_literals(&sql, &params, &|_| Literal::Text("o'k".into()));
        assert_eq!(out, "SELECT 'o''k'::text, 'o''k'::text");
        let out = with_literals("SELECT $1::bigint", &[Param::Token], &|_| Literal::Int(7));
        assert_eq!(out, "SELECT 7::bigint");
    }

    #[test]
    fn printed_results_read_as_the_history_words() {
        let shape = Shape {
            returns_rows: vec![true],
            token: Some(0),
            expires_at: Some(1),
            content: None,
            writer: None,
        };
        let lines = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let granted = lines(&[
            "lab:statement 0",
            "4|2026-01-01 00:00:01+00",
            "lab:rows 1",
            "lab:end 3",
        ]);
        assert_eq!(
            read_lines(OpKind::Acquire, Some(&shape), &granted),
            "granted token=4"
        );
        let refused = lines(&["lab:statement 0", "lab:rows 0", "lab:end 3"]);
        assert_eq!(
            read_lines(OpKind::Acquire, Some(&shape), &refused),
            "refused"
        );
        assert_eq!(read_lines(OpKind::Write, None, &refused), "rejected");
        // The last statement decides: the fence passed, the upsert affected a row.
        let two = lines(&[
            "lab:statement 0",
            "lab:rows 1",
            "lab:statement 1",
            "lab:rows 1",
        ]);
        assert_eq!(read_lines(OpKind::Write, None, &two), "accepted");
        let error = lines(&[
            "lab:statement 0",
            "psql:x:3: ERROR:  could not serialize access",
            "lab:error 40001",
        ]);
        assert_eq!(
            read_lines(OpKind::Write, None, &error),
            "error sqlstate-40001"
        );
        assert_eq!(
            outcome_words(&Outcome::Error(Reason::SERIALIZATION_FAILURE)),
            "error sqlstate-40001"
        );
        assert_eq!(
            read_lines(OpKind::Renew, None, &lines(&["lab:recorded unavailable"])),
            outcome_words(&Outcome::Unavailable)
        );
    }
}
