//! Throwaway PostgreSQL clusters for tests and the differential mode: own data directory under
//! `target/`, an absolute socket directory, no TCP listener, `fsync=off` and
//! `full_page_writes=off` (safe to lose on a crash of the *machine*, irrelevant to an
//! immediate stop of the server), `synchronous_commit` left on (with it off, acknowledged
//! commits — and tokens — are lost in a crash). `initdb` refuses root, so as root every
//! server command runs as the `postgres` user.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// Every cluster this process started and has not yet removed: what an interrupted command
/// stops and deletes before it exits ([`stop_all`]), since a process that exits by a signal
/// runs no destructor.
static LIVE: Mutex<Vec<Owned>> = Mutex::new(Vec::new());

/// Set once [`stop_all`] has begun: no server of this process may start after it.
static CLOSED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Stops under way (a `Drop` on another thread, say): [`stop_all`] waits for them, so that the
/// process does not exit with a `pg_ctl stop` of its own still running.
static STOPPING: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// What it takes to stop and remove one cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Owned {
    bin: PathBuf,
    dir: PathBuf,
    as_root: bool,
}

/// PostgreSQL's program `prog` from `bin`, as the `postgres` user when we are root (`initdb`
/// refuses root).
fn server_cmd(bin: &Path, prog: &str, as_root: bool) -> Command {
    let path = bin.join(prog);
    if as_root {
        let mut c = Command::new("runuser");
        c.arg("-u").arg("postgres").arg("--").arg(path);
        c
    } else {
        Command::new(path)
    }
}

impl Owned {
    fn pg_ctl(&self) -> Command {
        server_cmd(&self.bin, "pg_ctl", self.as_root)
    }

    /// What the watchdog runs if this process ends with the cluster still up: the same passes
    /// as [`Owned::stop_and_remove_now`] in `sh` (a postmaster `pg_ctl` could not stop is
    /// killed), until the folder is gone.
    fn shell_cleanup(&self) -> String {
        use crate::watchdog::quote;
        let pg_ctl = quote(&self.bin.join("pg_ctl").to_string_lossy());
        let pg_ctl = if self.as_root {
            format!("runuser -u postgres -- {pg_ctl}")
        } else {
            pg_ctl
        };
        let data = self.dir.join("data");
        let pidfile = quote(&data.join("postmaster.pid").to_string_lossy());
        let dir = quote(&self.dir.to_string_lossy());
        format!(
            "i=0; while [ -e {dir} ] && [ $i -lt {PASSES} ]; do if [ -f {pidfile} ]; then {pg_ctl} -D {} -m immediate -w -t 20 stop >/dev/null 2>&1; if [ -f {pidfile} ]; then kill -KILL \"$(head -n 1 {pidfile})\" 2>/dev/null; fi; fi; rm -rf {dir} 2>/dev/null; if [ -e {dir} ]; then sleep 0.1; fi; i=$((i+1)); done",
            quote(&data.to_string_lossy()),
        )
    }

    /// Stops the server and removes its folder, in passes until the folder is gone: a server
    /// may be starting as this runs — `pg_ctl start` puts the postmaster in a session of its
    /// own, so killing the helper does not end it, and it may write its lock file and sockets
    /// only after a first pass found none and removed the folder under it — and a server's
    /// last processes may still be closing files as `pg_ctl -w` returns.
    fn stop_and_remove(&self) {
        use std::sync::atomic::Ordering;
        STOPPING.fetch_add(1, Ordering::SeqCst);
        self.stop_and_remove_now();
        STOPPING.fetch_sub(1, Ordering::SeqCst);
    }

    fn stop_and_remove_now(&self) {
        let pidfile = self.dir.join("data").join("postmaster.pid");
        for _ in 0..PASSES {
            if pidfile.exists() {
                let mut c = self.pg_ctl();
                c.arg("-D")
                    .arg(self.dir.join("data"))
                    .args(["-m", "immediate", "-w", "stop"]);
                let _ = c.output();
            }
            match std::fs::remove_dir_all(&self.dir) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
                Ok(()) if !self.dir.exists() => break,
                _ => std::thread::sleep(std::time::Duration::from_millis(100)),
            }
        }
    }
}

/// How many stop-and-remove passes a cluster's cleanup makes at most (100 ms apart).
const PASSES: u32 = 100;

/// Stops and removes every cluster this process started: for a command interrupted by Ctrl-C
/// or SIGTERM, which exits without running destructors.
pub fn stop_all() {
    CLOSED.store(true, std::sync::atomic::Ordering::SeqCst);
    // Its helper programs (by process group), and every other child that must not outlive it.
    crate::children::kill_all();
    let live = match LIVE.lock() {
        Ok(mut l) => std::mem::take(&mut *l),
        Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
    };
    for c in live {
        c.stop_and_remove();
    }
    // Another thread's stop (a cluster being dropped) finishes too, for at most a minute.
    let t = std::time::Instant::now();
    while STOPPING.load(std::sync::atomic::Ordering::SeqCst) > 0
        && t.elapsed() < std::time::Duration::from_secs(60)
    {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

fn register(c: Owned) {
    if let Ok(mut l) = LIVE.lock() {
        l.push(c);
    }
}

fn unregister(dir: &Path) {
    if let Ok(mut l) = LIVE.lock() {
        l.retain(|c| c.dir != dir);
    }
}

/// Clusters under `root` left by processes that no longer exist (killed by a signal, a test
/// harness that gave up): stopped and removed. A cluster folder is `<name>-<pid>`; one whose
/// process is alive is never touched.
fn reap_dead(root: &Path, bin: &Path, as_root: bool) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for e in entries.flatten() {
        let dir = e.path();
        let name = e.file_name().to_string_lossy().to_string();
        let Some(pid) = name
            .rsplit_once('-')
            .and_then(|(_, p)| p.parse::<u32>().ok())
        else {
            continue;
        };
        let alive = Path::new("/proc").join(pid.to_string()).exists();
        let looks_like_a_cluster = dir.join("data").is_dir() || dir.join("server.log").exists();
        if pid != std::process::id() && !alive && looks_like_a_cluster {
            Owned {
                bin: bin.to_path_buf(),
                dir,
                as_root,
            }
            .stop_and_remove();
        }
    }
}

/// Why a cluster could not be had or driven.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// The server binaries are not installed (or not where `LEASELAB_PG_BIN` says): why.
    #[error("{0}")]
    Missing(String),
    /// A file or folder of the cluster could not be used.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// A helper program (`initdb`, `pg_ctl`, `chown`, `kill`) could not start.
    #[error("{program}: cannot run: {source}")]
    Spawn {
        /// Which program.
        program: String,
        /// What the OS said.
        source: std::io::Error,
    },
    /// A helper program ran and failed.
    #[error("{program} failed ({status}): {output}")]
    Failed {
        /// Which program.
        program: String,
        /// Its exit status.
        status: std::process::ExitStatus,
        /// Its stdout and stderr.
        output: String,
    },
    /// The server did not come up (or go down) in time.
    #[error("{0}")]
    Timeout(String),
    /// `postmaster.pid` had no readable pid.
    #[error("no postmaster pid in {}", .0.display())]
    NoPid(PathBuf),
}

/// The one plain line the tests print when the server binaries are missing.
const MISSING: &str = "PostgreSQL server binaries (initdb, pg_ctl, postgres) not found: install them (Debian/Ubuntu: `sudo apt-get install postgresql`; they land in /usr/lib/postgresql/<version>/bin) or set LEASELAB_PG_BIN to their directory";

/// Whether a database test can run. When it cannot, says so in one line and records the skip
/// in the file `LEASELAB_SKIP_LOG` names (the test command prints that file in its final
/// summary, so a skip is not hidden in captured output); with `LEASELAB_REQUIRE_PG=1` a missing
/// PostgreSQL is a failure instead (panics).
pub fn postgres_for_test(test: &str) -> bool {
    let why = match find_bin() {
        Ok(_) => return true,
        Err(_) if std::env::var("LEASELAB_PG_CONNINFO").is_ok() => return true,
        Err(why) => why,
    };
    skipped(test, &why, "LEASELAB_REQUIRE_PG")
}

/// A test that cannot run for want of a server (`why`): says so in one line and records the
/// skip in the file `LEASELAB_SKIP_LOG` names, or — with `required` (an environment variable)
/// set, as CI sets it — fails (panics). Always `false`: the test does not run.
pub fn skipped(test: &str, why: &str, required: &str) -> bool {
    println!("{why}");
    assert!(std::env::var(required).is_err(), "{why}");
    if let Ok(log) = std::env::var("LEASELAB_SKIP_LOG") {
        use std::io::Write as _;
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
        {
            let _ = writeln!(f, "{test}: skipped: {why}");
        }
    }
    false
}

/// Finds the directory holding `initdb`, `pg_ctl` and `postgres`: `LEASELAB_PG_BIN`, then
/// `pg_config --bindir`, then `/usr/lib/postgresql/<newest>/bin`, then `PATH`; or says why
/// not (a `LEASELAB_PG_BIN` that points elsewhere is named with what it lacks).
fn find_bin() -> Result<PathBuf, String> {
    let lacks = |d: &Path| -> Vec<&str> {
        ["initdb", "pg_ctl", "postgres"]
            .into_iter()
            .filter(|b| !d.join(b).exists())
            .collect()
    };
    let has_all = |d: &Path| lacks(d).is_empty();
    if let Ok(d) = std::env::var("LEASELAB_PG_BIN") {
        let d = PathBuf::from(d);
        return if has_all(&d) {
            Ok(d)
        } else {
            Err(format!(
                "LEASELAB_PG_BIN={} has no {}: point it at the directory of PostgreSQL's server programs (e.g. /usr/lib/postgresql/15/bin), or unset it to search the usual places",
                d.display(),
                lacks(&d).join(", ")
            ))
        };
    }
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output() {
        let d = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if has_all(&d) {
            return Ok(d);
        }
    }
    if let Ok(rd) = std::fs::read_dir("/usr/lib/postgresql") {
        let mut vs: Vec<(u32, PathBuf)> = rd
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let v = e.file_name().to_string_lossy().parse::<u32>().ok()?;
                Some((v, e.path().join("bin")))
            })
            .filter(|(_, d)| has_all(d))
            .collect();
        vs.sort();
        if let Some((_, d)) = vs.pop() {
            return Ok(d);
        }
    }
    std::env::var_os("PATH")
        .and_then(|p| std::env::split_paths(&p).find(|d| has_all(d)))
        .ok_or_else(|| MISSING.to_string())
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

/// One running throwaway cluster.
#[derive(Debug)]
pub struct Cluster {
    bin: PathBuf,
    dir: PathBuf,
    /// Absolute socket directory (the `host` to connect to).
    pub socket_dir: PathBuf,
    /// Port (names the socket file; no TCP listener).
    pub port: u16,
    as_root: bool,
    /// Its line in the watchdog's script: the server ends with this process, however it ends.
    watched: Option<crate::watchdog::Entry>,
}

impl Cluster {
    fn cmd(&self, prog: &str) -> Command {
        server_cmd(&self.bin, prog, self.as_root)
    }

    /// Runs a helper program to its end, in a process group of its own that [`stop_all`] kills
    /// if the command is abandoned meanwhile.
    fn run(&self, mut c: Command, what: &str) -> Result<(), ClusterError> {
        use std::process::Stdio;
        let spawn_error = |source| ClusterError::Spawn {
            program: what.to_string(),
            source,
        };
        c.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // A process group of its own, listed in the one registry of children.
        let child = crate::children::spawn(
            &mut c,
            crate::children::Reach::Group,
            crate::watchdog::Order::Helper,
        )
        .map_err(|e| match e {
            crate::children::SpawnError::Io(source) => spawn_error(source),
            closed => spawn_error(std::io::Error::other(closed.to_string())),
        })?;
        let group = child.id();
        let out = child.wait_with_output();
        crate::children::unlist(group);
        let out = out.map_err(spawn_error)?;
        if out.status.success() {
            Ok(())
        } else {
            Err(ClusterError::Failed {
                program: what.to_string(),
                status: out.status,
                output: format!(
                    "{}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                ),
            })
        }
    }

    /// Creates and starts a cluster in `root/<name>-<pid>` (absolute path required).
    pub fn start(root: &Path, name: &str) -> Result<Cluster, ClusterError> {
        let bin = find_bin().map_err(ClusterError::Missing)?;
        let root = std::path::absolute(root).map_err(|source| ClusterError::Io {
            path: root.to_path_buf(),
            source,
        })?;
        let as_root = is_root();
        reap_dead(&root, &bin, as_root);
        let dir = root.join(format!("{name}-{}", std::process::id()));
        // In the watchdog's script before the folder exists: a process killed between the two
        // (while `chown` runs, say) would leave a folder nothing removes. Its cleanup does
        // nothing while there is no folder.
        let watched = crate::watchdog::guard(
            crate::watchdog::Order::Server,
            Owned {
                bin: bin.clone(),
                dir: dir.clone(),
                as_root,
            }
            .shell_cleanup(),
        );
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|source| ClusterError::Io {
            path: dir.clone(),
            source,
        })?;
        register(Owned {
            bin: bin.clone(),
            dir: dir.clone(),
            as_root,
        });
        if as_root {
            let st = Command::new("chown")
                .arg("-R")
                .arg("postgres:postgres")
                .arg(&dir)
                .status()
                .map_err(|source| ClusterError::Spawn {
                    program: "chown".into(),
                    source,
                })?;
            if !st.success() {
                return Err(ClusterError::Failed {
                    program: "chown".into(),
                    status: st,
                    output: format!("chown -R postgres:postgres {}", dir.display()),
                });
            }
        }
        let mut c = Cluster {
            bin,
            socket_dir: dir.clone(),
            dir,
            port: 5432,
            as_root,
            watched,
        };
        let mut init = c.cmd("initdb");
        init.arg("-D").arg(c.dir.join("data")).args([
            "-A",
            "trust",
            "-U",
            "postgres",
            "--no-sync",
            "-E",
            "UTF8",
            "--locale=C",
        ]);
        c.run(init, "initdb")?;
        c.boot()?;
        Ok(c)
    }

    /// Starts the server (after `start` or after a crash: WAL recovery happens here).
    ///
    /// `lock_timeout` is only a net against a wait that never ends: a statement of a generated
    /// schedule may legitimately wait while many later steps run, and on a busy machine 20 s
    /// was reached (SQLSTATE 55P03 where the model still waits). It stays above the adapter's
    /// own bound for one step (two minutes), so it never decides an outcome.
    ///
    /// `deadlock_timeout` is 10 ms instead of 1 s: a deadlock is resolved as soon as the
    /// adapter has seen the cycle, which it waits for (a step never ends inside a cycle).
    pub fn boot(&mut self) -> Result<(), ClusterError> {
        if CLOSED.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(ClusterError::Timeout(
                "not started: the process is stopping its clusters (Ctrl-C or SIGTERM)".into(),
            ));
        }
        let opts = format!(
            "-k {} -p {} -c listen_addresses='' -c fsync=off -c full_page_writes=off -c max_connections=300 -c shared_buffers=16MB -c lock_timeout=600000 -c deadlock_timeout=10ms",
            self.socket_dir.display(),
            self.port
        );
        let mut c = self.cmd("pg_ctl");
        c.arg("-D")
            .arg(self.dir.join("data"))
            .arg("-l")
            .arg(self.dir.join("server.log"))
            .args(["-W", "-o", &opts, "start"]);
        self.run(c, "pg_ctl start")?;
        // pg_ctl -w polls every 100 ms; the postmaster's status line says `ready` sooner.
        let pidfile = self.dir.join("data").join("postmaster.pid");
        let start = std::time::Instant::now();
        loop {
            let ready = std::fs::read_to_string(&pidfile)
                .map(|t| t.lines().nth(7).is_some_and(|l| l.trim() == "ready"))
                .unwrap_or(false);
            if ready {
                break;
            }
            if start.elapsed() > std::time::Duration::from_secs(60) {
                let log = std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default();
                return Err(ClusterError::Timeout(format!(
                    "server did not become ready within 60 s; log:\n{log}"
                )));
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        Ok(())
    }

    /// Immediate stop without checkpoint: a crash. This is what `pg_ctl stop -m immediate`
    /// does — SIGQUIT to the postmaster, which kills every backend at once — but waited for by
    /// polling the postmaster's lock file every millisecond (pg_ctl polls every 100 ms, which
    /// made crashes the slowest step of the generated differential).
    pub fn crash(&mut self) -> Result<(), ClusterError> {
        let pidfile = self.dir.join("data").join("postmaster.pid");
        let pid = std::fs::read_to_string(&pidfile)
            .ok()
            .and_then(|t| t.lines().next().map(|l| l.trim().to_string()))
            .filter(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
            .ok_or_else(|| ClusterError::NoPid(pidfile.clone()))?;
        let mut c = Command::new("kill");
        c.args(["-QUIT", &pid]);
        self.run(c, "kill -QUIT <postmaster>")?;
        let start = std::time::Instant::now();
        while pidfile.exists() {
            if start.elapsed() > std::time::Duration::from_secs(60) {
                return Err(ClusterError::Timeout(format!(
                    "postmaster {pid} still running 60 s after SIGQUIT"
                )));
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        Ok(())
    }

    /// `pg_ctl stop -m immediate`, literally (the real-time F8 runs it as the source did).
    pub fn stop_immediate(&mut self) -> Result<(), ClusterError> {
        let mut c = self.cmd("pg_ctl");
        c.arg("-D")
            .arg(self.dir.join("data"))
            .args(["stop", "-m", "immediate", "-w"]);
        self.run(c, "pg_ctl stop -m immediate")?;
        Ok(())
    }

    /// The data directory.
    pub fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// The directory of PostgreSQL's programs (`psql`, `pg_ctl`).
    pub fn bin_dir(&self) -> &Path {
        &self.bin
    }

    /// How to run `pg_ctl` on this cluster from a shell: as `postgres` when we are root.
    pub fn pg_ctl_shell(&self) -> String {
        let pg_ctl = self.bin.join("pg_ctl");
        if self.as_root {
            format!("runuser -u postgres -- {}", pg_ctl.display())
        } else {
            pg_ctl.display().to_string()
        }
    }

    /// A libpq-style connection string for `dbname`.
    pub fn conninfo(&self, dbname: &str) -> String {
        format!(
            "host={} port={} user=postgres dbname={dbname}",
            self.socket_dir.display(),
            self.port
        )
    }
}

impl Drop for Cluster {
    /// Stops first and forgets after: a signal that arrives meanwhile finds the cluster still
    /// listed and stops it too (both stops wait for the server to be gone) before the process
    /// exits, rather than exiting in the middle of this one.
    fn drop(&mut self) {
        Owned {
            bin: self.bin.clone(),
            dir: self.dir.clone(),
            as_root: self.as_root,
        }
        .stop_and_remove();
        unregister(&self.dir);
        if let Some(e) = self.watched.take() {
            crate::watchdog::forget(e);
        }
    }
}
