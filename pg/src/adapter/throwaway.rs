//! The throwaway backend: clusters started, the schema installed, databases reset between
//! runs, sessions terminated, both clusters crashed and restarted.

use super::error::*;
use super::sessions::*;
use super::state::*;
use crate::cluster::Cluster;
use crate::sql;
use leaselab_model::{Config, ConnId, DbName, LeaseDurability};
use std::path::Path;
use std::sync::Arc;
use tokio::runtime::Runtime;

pub(super) fn create_db(rt: &Runtime, conninfo: &str, name: &str) -> Result<(), PgError> {
    rt.block_on(async {
        let (c, _) = connect(conninfo, false)
            .await
            .map_err(|e| pe("connect", e))?;
        let exists = c
            .query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&name])
            .await
            .map_err(|e| pe("pg_database", e))?
            .is_some();
        if !exists {
            c.batch_execute(&format!("CREATE DATABASE {name}"))
                .await
                .map_err(|e| pe("create database", e))?;
        }
        Ok(())
    })
}

impl PgBackend {
    /// Starts (or connects to) the databases and creates the schema. `config` is the first
    /// trace's configuration; [`PgBackend::reset`] switches it.
    pub fn start(target: Target, virtual_time: bool) -> Result<PgBackend, PgError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| PgError::Setup(format!("tokio runtime: {e}")))?;
        let mk = Side::new;
        let sides = match target {
            Target::Throwaway(root) => {
                let lc = Cluster::start(&root, "lease26")?;
                let rc = Cluster::start(&root, "res26")?;
                let (li, ri) = (lc.conninfo("lease26"), rc.conninfo("res26"));
                let (lp, rp) = (lc.conninfo("postgres"), rc.conninfo("postgres"));
                let mut be = [mk("lease26", Some(lc), li), mk("res26", Some(rc), ri)];
                for (side, p) in be.iter_mut().zip([lp, rp]) {
                    create_db(&rt, &p, side.dbname())?;
                }
                be
            }
            Target::Existing(info) => {
                let p = format!("{info} dbname=postgres");
                for d in ["lease26", "res26"] {
                    create_db(&rt, &p, d)?;
                }
                [
                    mk("lease26", None, format!("{info} dbname=lease26")),
                    mk("res26", None, format!("{info} dbname=res26")),
                ]
            }
        };
        let mut be = PgBackend {
            rt,
            config: Config::default(),
            sides,
            virtual_time,
            spec: None,
            out_of_bound: 0,
            schema_builds: 0,
            restore: [None, None],
            rebuild_always: std::env::var("LEASELAB_RESET").is_ok_and(|v| v == "rebuild"),
        };
        be.install_schema()?;
        Ok(be)
    }

    /// Starts two throwaway clusters under `dir` (absolute or relative to the working directory).
    pub fn throwaway(dir: &Path) -> Result<PgBackend, PgError> {
        match std::env::var("LEASELAB_PG_CONNINFO") {
            Ok(info) if !info.is_empty() => Self::start(Target::Existing(info), true),
            _ => Self::start(Target::Throwaway(dir.to_path_buf()), true),
        }
    }

    pub(super) fn install_schema(&mut self) -> Result<(), PgError> {
        for i in 0..2 {
            let info = self.sides[i].conninfo().to_string();
            let ddl = if i == 0 {
                format!(
                    "{}\nDROP TABLE IF EXISTS lease;\n{}",
                    sql::LAB_SCHEMA,
                    sql::lease_table(false)
                )
            } else {
                format!(
                    "{}\nDROP TABLE IF EXISTS fence_floor, report_part, write_attempt, publish;\n{}",
                    sql::LAB_SCHEMA,
                    sql::RES_SCHEMA
                )
            };
            self.rt.block_on(async {
                let (c, _) = connect(&info, false).await.map_err(|e| pe("connect", e))?;
                c.batch_execute(&ddl).await.map_err(|e| pe("schema", e))
            })?;
        }
        self.config.lease_table = LeaseDurability::Logged;
        // The redirection must be active: now() must be the virtual clock.
        if self.virtual_time {
            let info = self.sides[0].conninfo().to_string();
            self.rt.block_on(async {
                let (c, _) = connect(&info, true).await.map_err(|e| pe("connect", e))?;
                c.query_one(sql::SET_NOW, &[&"1234".to_string()])
                    .await
                    .map_err(|e| pe("set lab.now", e))?;
                let ok: bool = c
                    .query_one(
                        &format!("SELECT now() = {} + interval '1.234 seconds'", sql::EPOCH),
                        &[],
                    )
                    .await
                    .map_err(|e| pe("now() check", e))?
                    .get(0);
                if ok {
                    Ok(())
                } else {
                    Err(PgError::Setup(
                        "now() is not redirected to lab.now(): check the search_path option".into(),
                    ))
                }
            })?;
        }
        Ok(())
    }

    /// Starts throwaway clusters (or uses `LEASELAB_PG_CONNINFO`'s server) that run `spec`
    /// instead of the source design: its DDL installed, every statement described by
    /// PostgreSQL and checked for the shape its operation reads. A bad spec is
    /// [`PgError::Spec`].
    pub fn audit(dir: &Path, spec: crate::spec::Spec) -> Result<PgBackend, PgError> {
        let mut be = Self::throwaway(dir)?;
        if spec.databases == crate::spec::Databases::One {
            // Both sides are one database: the resource side's sessions connect to it too.
            let lease = be.sides[0].conninfo().to_string();
            be.sides[1].connect_to(lease);
        }
        let mut shapes = Vec::new();
        for i in 0..2 {
            let info = be.sides[i].conninfo().to_string();
            be.rt.block_on(async {
                let (c, _) = connect(&info, true).await.map_err(|e| pe("connect", e))?;
                c.batch_execute(&format!("{}\n{}", Self::CLEAN, sql::LAB_SCHEMA))
                    .await
                    .map_err(|e| pe("schema", e))
            })?;
        }
        let (li, ri) = (
            be.sides[0].conninfo().to_string(),
            be.sides[1].conninfo().to_string(),
        );
        let checked = be.rt.block_on(async {
            let (l, _) = connect(&li, true).await.map_err(|e| pe("connect", e))?;
            let r = if spec.databases == crate::spec::Databases::One {
                None
            } else {
                Some(connect(&ri, true).await.map_err(|e| pe("connect", e))?.0)
            };
            let r = r.as_ref().unwrap_or(&l);
            for c in [&l, r] {
                // Tables go to `public` (the first schema on the path), while `now()` still
                // finds `lab.now()` before `pg_catalog`'s.
                c.batch_execute(
                    "SET search_path = public, lab, pg_catalog; SELECT set_config('lab.now', '0', false)",
                )
                    .await
                    .map_err(|e| pe("set lab.now", e))?;
            }
            Ok::<_, PgError>(crate::spec::check(&spec, &l, r).await)
        })?;
        shapes.extend(checked?);
        be.spec = Some(Arc::new(super::spec_run::SpecRun { spec, shapes }));
        Ok(be)
    }

    /// Empties the `public` schema (a spec's tables live there).
    const CLEAN: &'static str = "DROP SCHEMA IF EXISTS public CASCADE; DROP SCHEMA IF EXISTS lab_seed CASCADE; CREATE SCHEMA public;";

    /// A spec's reset: sessions terminated, then the spec's tables back to the rows its DDL
    /// left ([`Self::restore_sql`]), or — the first time, for a schema the restore cannot
    /// handle, or with `LEASELAB_RESET=rebuild` — `public` recreated from the DDL (seed rows
    /// included), on a connection whose `now()` is the run's clock.
    ///
    /// Rebuilding cost ≈ 15 ms a schedule (every table, index and type dropped and created,
    /// each a catalog change that every pooled session must reload), a third of an audit's
    /// time. A restore leaves what any statement can observe as a rebuild does: each table
    /// truncated (a new, empty file, as `CREATE TABLE` makes) and refilled with the same rows
    /// in the same order, each sequence set back; the schema's objects, and so the statements
    /// prepared against them, stay (`cli/tests/audit.rs` runs the same schedules both ways
    /// and compares the histories).
    fn reset_spec(&mut self, config: &Config) -> Result<(), PgError> {
        let Some(run) = self.spec.clone() else {
            return Ok(());
        };
        let one = run.spec.databases == crate::spec::Databases::One;
        self.fresh_sides()?;
        let mut rebuilt = false;
        for i in 0..2 {
            let ddl = match (one, i) {
                (true, 1) => continue,
                (true, _) => format!("{}\n{}", run.spec.lease_schema, run.spec.resource_schema),
                (false, 0) => run.spec.lease_schema.clone(),
                _ => run.spec.resource_schema.clone(),
            };
            if !self.rebuild_always {
                if let Some(sql) = self.restore[i].clone() {
                    self.wipe(i, &sql)?;
                    continue;
                }
            }
            self.wipe(
                i,
                &format!(
                    "SET search_path = public, lab, pg_catalog; SELECT set_config('lab.now', '0', false); {}\n{ddl}\n; RESET search_path;",
                    Self::CLEAN
                ),
            )?;
            rebuilt = true;
            // Restored at once, so that a rebuilt schedule starts from the state every restored
            // one does — for sequences this is not the DDL's own: its `nextval` WAL-logged 32
            // values ahead (`SEQ_LOG_VALS`, PostgreSQL's `sequence.c`), so a crash would skip
            // to past them, while `setval` logs its value exactly. Both are states PostgreSQL
            // can be in; a schedule must not see one or the other by how it was reset.
            let restore = self.restore_sql(i)?;
            if let (Some(sql), Ok((admin, _))) = (&restore, self.admin(i)) {
                self.rt
                    .block_on(admin.batch_execute(sql))
                    .map_err(|e| pe("seed rows", e))?;
            }
            self.restore[i] = if self.rebuild_always { None } else { restore };
        }
        if rebuilt {
            self.schema_builds += 1;
        }
        self.config = config.clone();
        Ok(())
    }

    /// After the spec's DDL ran on side `i`: its seed rows copied to `lab_seed`, and the SQL
    /// that puts every table and sequence of `public` back to this state — `None` where a
    /// table has a generated column (its value cannot be inserted; such a spec is rebuilt each
    /// time). Foreign keys and triggers are not fired by the refill
    /// (`session_replication_role = replica`): it restores a state the DDL already produced.
    fn restore_sql(&mut self, i: usize) -> Result<Option<String>, PgError> {
        let (admin, _) = self.admin(i)?;
        self.rt.block_on(async move {
            let q = |e| pe("seed rows", e);
            let rels = admin
                .query(
                    "SELECT format('%I.%I', n.nspname, c.relname), c.relkind::text, \
                            EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid \
                                    AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated <> '') \
                       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
                      WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'S') ORDER BY 1",
                    &[],
                )
                .await
                .map_err(q)?;
            let mut truncate = Vec::new();
            let mut copy = String::from("CREATE SCHEMA lab_seed;");
            let mut refill = String::new();
            for (k, r) in rels.iter().enumerate() {
                let (name, kind, generated): (String, String, bool) = (r.get(0), r.get(1), r.get(2));
                if generated {
                    return Ok(None);
                }
                match kind.as_str() {
                    "S" => {
                        let row = admin
                            .query_one(&format!("SELECT last_value, is_called FROM {name}"), &[])
                            .await
                            .map_err(q)?;
                        let (v, called): (i64, bool) = (row.get(0), row.get(1));
                        refill.push_str(&format!(
                            " SELECT setval({}::regclass, {v}, {called});",
                            sql::literal(&name)
                        ));
                    }
                    "r" => {
                        truncate.push(name.clone());
                        let rows: bool = admin
                            .query_one(&format!("SELECT EXISTS (SELECT 1 FROM ONLY {name})"), &[])
                            .await
                            .map_err(q)?
                            .get(0);
                        if rows {
                            copy.push_str(&format!(
                                " CREATE TABLE lab_seed.t{k} AS SELECT * FROM ONLY {name};"
                            ));
                            refill.push_str(&format!(
                                " INSERT INTO {name} OVERRIDING SYSTEM VALUE SELECT * FROM lab_seed.t{k};"
                            ));
                        }
                    }
                    _ => truncate.push(name.clone()),
                }
            }
            admin.batch_execute(&copy).await.map_err(q)?;
            let truncate = if truncate.is_empty() {
                String::new()
            } else {
                format!(" TRUNCATE {};", truncate.join(", "))
            };
            Ok(Some(format!(
                "SET session_replication_role = replica;{truncate}{refill} RESET session_replication_role;"
            )))
        })
    }

    /// Back to an empty state for a new trace with `config`: sessions closed, rows deleted,
    /// floors reseeded (DELETE + reseed: fast and honest). Crashed clusters are restarted.
    pub fn reset(&mut self, config: &Config) -> Result<(), PgError> {
        if self.spec.is_some() {
            return self.reset_spec(config);
        }
        self.fresh_sides()?;
        let recreate = config.lease_table != self.config.lease_table;
        let lease_sql = if recreate {
            format!(
                "DROP TABLE lease; {}",
                sql::lease_table(config.lease_table == LeaseDurability::Unlogged)
            )
        } else {
            "DELETE FROM lease;".to_string()
        };
        let mut res_sql = "DELETE FROM report_part; DELETE FROM write_attempt; DELETE FROM publish; DELETE FROM fence_floor;".to_string();
        for s in &config.scopes {
            res_sql.push_str(&format!(
                " INSERT INTO fence_floor VALUES ({}, 0);",
                sql::literal(s.as_str())
            ));
        }
        for (i, q) in [lease_sql, res_sql].into_iter().enumerate() {
            self.wipe(i, &q)?;
        }
        self.config = config.clone();
        Ok(())
    }

    /// Every session closed (or reset for the next schedule, [`Self::pool_sessions`]); a
    /// database that is down booted again (recovery keeps what was committed).
    fn fresh_sides(&mut self) -> Result<(), PgError> {
        // Held waiters go on first: their sessions are closed and their backends ended.
        self.release_all(0);
        self.release_all(1);
        for i in 0..2 {
            if self.sides[i].is_up() {
                self.pool_sessions(i);
            } else {
                self.drop_sessions(i);
            }
            self.sides[i].boot_if_down()?;
            self.sides[i].forget_lost();
        }
        Ok(())
    }

    /// On database `i`: every other backend ended (an orphan would hold its locks), then `sql`.
    ///
    /// `pg_terminate_backend(pid)` only signals; the backend releases its locks when it has
    /// exited. Row locks would make the reset wait anyway, but a *session* lock (a spec's
    /// advisory lock) would still be held when the next schedule's `pg_try_advisory_lock` runs
    /// — refused or granted by how busy the machine is. So wait for each exit
    /// (`pg_terminate_backend(pid, timeout)`, PostgreSQL 14+, "Server Signaling Functions").
    fn wipe(&mut self, i: usize, sql: &str) -> Result<(), PgError> {
        let (admin, _) = self.admin(i)?;
        let dbname = self.sides[i].dbname();
        let pooled = self.pooled_pids();
        self.rt.block_on(async move {
            admin
                .execute(
                    "SELECT pg_terminate_backend(pid, 60000) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid() AND pid <> ALL($2)",
                    &[&dbname, &pooled],
                )
                .await
                .map_err(|e| pe("terminate sessions", e))?;
            // A backend that was already exiting (its client just closed) is not waited for by
            // the call above (it answers `false`, "not a PostgreSQL backend process"): wait
            // until no client backend but this one is left.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            loop {
                let left: i64 = admin
                    .query_one(
                        "SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid() AND pid <> ALL($2) AND backend_type = 'client backend'",
                        &[&dbname, &pooled],
                    )
                    .await
                    .and_then(|r| r.try_get(0))
                    .map_err(|e| pe("terminate sessions", e))?;
                if left == 0 {
                    break;
                }
                if std::time::Instant::now() > deadline {
                    return Err(PgError::Setup(format!(
                        "reset: {left} sessions still running 60 s after pg_terminate_backend"
                    )));
                }
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            }
            admin.batch_execute(sql).await.map_err(|e| pe("reset", e))
        })
    }

    /// Fault injection: the server ends `conn`'s backend (`pg_terminate_backend`), as a
    /// server-side kill or a network cut would. The client learns of it at its next statement.
    pub fn terminate(&mut self, db: DbName, conn: &ConnId) -> Result<(), PgError> {
        let i = db.index();
        let Some(pid) = self.sides[i].mark_terminated(conn) else {
            return Ok(());
        };
        let (admin, _) = self.admin(i)?;
        let r = self.rt.block_on(async move {
            admin
                .execute("SELECT pg_terminate_backend($1)", &[&pid])
                .await
                .map_err(|e| pe("terminate", e))
        });
        // Held, it acts on the signal only once it runs again.
        self.release(i, pid);
        r.map(|_| ())
    }

    /// `pg_ctl stop -m immediate` on both clusters, then restart them (WAL recovery). Every
    /// session of the adapter is gone afterwards. For the real-time F8.
    pub fn crash_restart_all(&mut self) -> Result<(), PgError> {
        self.release_all(0);
        self.release_all(1);
        for i in 0..2 {
            self.drop_sessions(i);
            self.sides[i].forget_admin();
            if let Some(c) = self.sides[i].cluster_mut() {
                c.stop_immediate()?;
            } else {
                return Err(PgError::Setup(
                    "crash-restart needs the throwaway clusters".into(),
                ));
            }
        }
        for i in 0..2 {
            if let Some(c) = self.sides[i].cluster_mut() {
                c.boot()?;
            }
            self.sides[i].booted();
        }
        Ok(())
    }

    /// The connection string of a database (real `now()`: no redirection option).
    pub fn conninfo(&self, db: DbName) -> String {
        self.sides[db.index()].conninfo().to_string()
    }

    /// Rebuild a spec's schema from its DDL at every reset instead of restoring its seed rows
    /// (what `LEASELAB_RESET=rebuild` sets): the reference a restore is compared with.
    pub fn rebuild_every_reset(&mut self, on: bool) {
        self.rebuild_always = on;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backend(name: &str) -> Option<PgBackend> {
        if !crate::cluster::postgres_for_test(&format!("pg::adapter::{name}")) {
            return None;
        }
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../target/tmp/pg-{name}"));
        Some(PgBackend::throwaway(&dir).unwrap_or_else(|e| panic!("cannot start PostgreSQL: {e}")))
    }

    /// What a session leaves behind (an open transaction with a row lock, a session advisory
    /// lock, a temporary table, a setting) is gone when the next schedule's session takes its
    /// connection, and the connection is the same backend; one the server ended is not reused.
    #[test]
    fn a_reused_connection_starts_as_a_new_session() {
        let Some(mut pg) = backend("pool") else {
            return;
        };
        let config = Config::default();
        pg.reset(&config).expect("reset");
        let a = ConnId::new("a");
        let Ok((c, _, _)) = pg.session(DbName::Lease, &a) else {
            panic!("session a");
        };
        let pid = pg.sides[0].session(&a).map(Session::pid);
        assert!(pid.is_some(), "a has a session");
        pg.rt
            .block_on(c.batch_execute(
                "SELECT pg_advisory_lock(7); SET search_path = public; \
                 CREATE TEMP TABLE left_behind (x int); \
                 BEGIN; INSERT INTO lease VALUES ('report-job', 'holder-a', 1, now());",
            ))
            .expect("session a's statements");
        drop(c);
        pg.reset(&config).expect("reset");
        let b = ConnId::new("b");
        let Ok((c, _, _)) = pg.session(DbName::Lease, &b) else {
            panic!("session b");
        };
        assert_eq!(
            pg.sides[0].session(&b).map(Session::pid),
            pid,
            "the pooled backend serves b"
        );
        let row = pg
            .rt
            .block_on(c.query_one(
                "SELECT (SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'advisory'), \
                        current_setting('search_path'), \
                        to_regclass('pg_temp.left_behind') IS NULL, \
                        (SELECT count(*) FROM lease)",
                &[],
            ))
            .expect("session b reads");
        assert_eq!(row.get::<_, i64>(0), 0, "advisory lock released");
        assert_eq!(
            row.get::<_, String>(1),
            "lab,pg_catalog,public",
            "search_path as the connection started"
        );
        assert!(row.get::<_, bool>(2), "temporary table dropped");
        assert_eq!(row.get::<_, i64>(3), 0, "the open transaction rolled back");
        drop(c);
        // The server ends b's backend: the next session is a new one.
        pg.terminate(DbName::Lease, &b).expect("terminate");
        pg.reset(&config).expect("reset");
        let _ = pg.session(DbName::Lease, &a);
        assert_ne!(
            pg.sides[0].session(&a).map(Session::pid),
            pid,
            "an ended backend is not reused"
        );
    }
}
