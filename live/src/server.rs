//! Throwaway lease servers — `redis-server` and `etcd` — each on loopback ports, its files in a
//! folder of its own: started, killed with SIGKILL and started again on the same folder by the
//! nemesis, and stopped whatever ends this process (dropped, [`stop_all`] from an abandoning
//! Ctrl-C, or the watchdog when this process dies first).

use crate::redis::Persistence;
use crate::LiveError;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Which server, and how it keeps what it acknowledged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Program {
    /// `redis-server` with this persistence.
    Redis(Persistence),
    /// A member of an `etcd` cluster: its write-ahead log is fsynced before a reply, so a
    /// kill -9 and restart loses nothing acknowledged (revisions go on from where they were).
    Etcd,
}

impl Program {
    /// The executable's name on `PATH`, and the variable that overrides it.
    fn binary(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Program::Redis(_) => (
                "redis-server",
                "LEASELAB_REDIS_SERVER",
                "redis-server not found: install it (Debian/Ubuntu: `sudo apt-get install redis-server`) or set LEASELAB_REDIS_SERVER to its path",
            ),
            Program::Etcd => (
                "etcd",
                "LEASELAB_ETCD",
                "etcd not found: install it (Debian/Ubuntu: `sudo apt-get install etcd-server`) or set LEASELAB_ETCD to its path",
            ),
        }
    }

    /// The program to run: the variable's path, else the one on `PATH`; or why there is none.
    fn path(self) -> Result<PathBuf, String> {
        let (name, var, missing) = self.binary();
        if let Ok(p) = std::env::var(var) {
            return Ok(PathBuf::from(p));
        }
        std::env::var_os("PATH")
            .into_iter()
            .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
            .map(|d| d.join(name))
            .find(|p| p.is_file())
            .ok_or_else(|| missing.to_string())
    }
}

/// Whether a test that needs `program` can run; the same contract as `postgres_for_test`: a
/// missing server is a skip said in one line and logged to `LEASELAB_SKIP_LOG`, or, with the
/// variable `require` set to 1 (`.ci/run` sets it), a failure.
pub fn for_test(program: Program, test: &str, require: &str) -> bool {
    match program.path() {
        Ok(_) => true,
        Err(why) => leaselab_pg::cluster::skipped(test, &why, require),
    }
}

/// Whether a Redis test can run (`LEASELAB_REQUIRE_REDIS=1`: it must).
pub fn redis_for_test(test: &str) -> bool {
    for_test(
        Program::Redis(Persistence::Always),
        test,
        "LEASELAB_REQUIRE_REDIS",
    )
}

/// Whether an etcd test can run (`LEASELAB_REQUIRE_ETCD=1`: it must).
pub fn etcd_for_test(test: &str) -> bool {
    for_test(Program::Etcd, test, "LEASELAB_REQUIRE_ETCD")
}

/// The servers this process started and has not stopped: what an abandoned command stops
/// ([`stop_all`]) before it exits, since a process that exits from a signal handler runs no
/// destructor.
static LIVE: Mutex<Vec<(u32, PathBuf)>> = Mutex::new(Vec::new());

fn live() -> std::sync::MutexGuard<'static, Vec<(u32, PathBuf)>> {
    LIVE.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Kills every server this process started and removes its folder.
pub fn stop_all() {
    for (pid, dir) in std::mem::take(&mut *live()) {
        kill(pid);
        let _ = std::fs::remove_dir_all(dir);
    }
}

fn kill(pid: u32) {
    let _ = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .stderr(Stdio::null())
        .status();
}

/// A free loopback port (another process may take it before the server binds it; the server
/// then fails to start and says so in its log).
fn free_port() -> Result<u16, LiveError> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| LiveError::io("pick a port", e))
}

/// A throwaway server; killed and its folder removed when dropped.
pub struct Server {
    program: Program,
    child: Option<Child>,
    dir: PathBuf,
    /// The clients' port, and etcd's peer port.
    port: u16,
    peer_port: u16,
    /// etcd: the member's name and the whole cluster (`name=peer-url,…`).
    member: String,
    cluster: String,
    watched: Option<leaselab_pg::watchdog::Entry>,
}

impl Server {
    /// A server of `program` in `root/name` (made anew), not started.
    fn new(root: &Path, name: &str, program: Program) -> Result<Self, LiveError> {
        let dir = std::path::absolute(root.join(name)).map_err(|e| LiveError::io("folder", e))?;
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)
            .map_err(|e| LiveError::io(&format!("create {}", dir.display()), e))?;
        let mut s = Server {
            program,
            child: None,
            dir,
            port: free_port()?,
            peer_port: free_port()?,
            member: name.to_string(),
            cluster: String::new(),
            watched: None,
        };
        s.cluster = format!("{name}={}", s.peer_url());
        s.watch(None);
        Ok(s)
    }

    /// Starts `program` in `root/name` (made anew) and waits until it answers; etcd as a
    /// cluster of this one member.
    pub fn start(root: &Path, name: &str, program: Program) -> Result<Self, LiveError> {
        let mut s = Server::new(root, name, program)?;
        s.boot()?;
        Ok(s)
    }

    /// Starts an etcd cluster of `members` members, `root/etcd-1`, `root/etcd-2`, …, and waits
    /// until each answers (a member answers once the cluster has a leader: all are started
    /// before any is waited for).
    pub fn start_etcd(root: &Path, members: usize) -> Result<Vec<Self>, LiveError> {
        let mut all = (1..=members)
            .map(|i| Server::new(root, &format!("etcd-{i}"), Program::Etcd))
            .collect::<Result<Vec<_>, _>>()?;
        let cluster = all
            .iter()
            .map(|s| format!("{}={}", s.member, s.peer_url()))
            .collect::<Vec<_>>()
            .join(",");
        for s in &mut all {
            s.cluster.clone_from(&cluster);
            s.spawn()?;
        }
        for s in &all {
            s.wait_until_it_answers()?;
        }
        Ok(all)
    }

    fn peer_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.peer_port)
    }

    /// The command line that starts the server on its folder and ports.
    fn command(&self, prog: &Path) -> Command {
        let mut c = Command::new(prog);
        let port = self.port.to_string();
        match self.program {
            Program::Redis(persistence) => {
                let (aof, fsync) = match persistence {
                    Persistence::Always => ("yes", "always"),
                    Persistence::None => ("no", "no"),
                };
                c.args(["--port", &port, "--bind", "127.0.0.1", "--daemonize", "no"])
                    .args(["--protected-mode", "no", "--save", ""])
                    .args(["--appendonly", aof, "--appendfsync", fsync])
                    .arg("--dir")
                    .arg(&self.dir)
                    .arg("--logfile")
                    .arg(self.log());
            }
            Program::Etcd => {
                let client = format!("http://127.0.0.1:{port}");
                let peer = self.peer_url();
                c.args(["--name", &self.member, "--data-dir"])
                    .arg(self.dir.join("data"))
                    .args(["--listen-client-urls", &client])
                    .args(["--advertise-client-urls", &client])
                    .args(["--listen-peer-urls", &peer])
                    .args(["--initial-advertise-peer-urls", &peer])
                    .args(["--initial-cluster", &self.cluster])
                    .args(["--initial-cluster-state", "new"])
                    .args(["--log-outputs", "stderr"]);
            }
        }
        c
    }

    fn log(&self) -> PathBuf {
        self.dir.join("server.log")
    }

    /// Starts the server process on its folder and ports (again, after [`Server::kill`]: it
    /// reads back what it kept on disk) and waits until it answers.
    pub fn boot(&mut self) -> Result<(), LiveError> {
        self.spawn()?;
        self.wait_until_it_answers()
    }

    /// Starts the server process.
    fn spawn(&mut self) -> Result<(), LiveError> {
        use std::os::unix::process::CommandExt;
        let prog = self.program.path().map_err(LiveError::Unexpected)?;
        let log = self.log();
        // etcd logs to its standard error, Redis to the file it is given.
        let stderr = match self.program {
            Program::Etcd => std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&log)
                .map(Stdio::from)
                .map_err(|e| LiveError::io(&format!("open {}", log.display()), e))?,
            Program::Redis(_) => Stdio::null(),
        };
        let child = self
            .command(&prog)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            // Neither a Ctrl-C at the terminal nor a kill of this process's group reaches it:
            // this process decides when it stops.
            .process_group(0)
            .spawn()
            .map_err(|e| LiveError::io(&format!("start {}", prog.display()), e))?;
        live().push((child.id(), self.dir.clone()));
        self.watch(Some(child.id()));
        self.child = Some(child);
        Ok(())
    }

    fn wait_until_it_answers(&self) -> Result<(), LiveError> {
        let log = self.log();
        let t = Instant::now();
        while !self.answers() {
            if t.elapsed() > Duration::from_secs(30) {
                return Err(LiveError::Unexpected(format!(
                    "{} on port {} did not answer within 30 s (its log: {})",
                    self.program.binary().0,
                    self.port,
                    log.display()
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    /// Whether the server answers: Redis a PING, etcd its health check (it has a leader).
    fn answers(&self) -> bool {
        use std::io::{Read, Write};
        let Ok(mut c) = std::net::TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let _ = c.set_read_timeout(Some(Duration::from_secs(1)));
        match self.program {
            Program::Redis(_) => {
                let mut buf = [0u8; 7];
                c.write_all(b"PING\r\n").is_ok()
                    && c.read_exact(&mut buf).is_ok()
                    && &buf == b"+PONG\r\n"
            }
            Program::Etcd => {
                let ask = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
                let mut answer = String::new();
                c.write_all(ask.as_bytes()).is_ok()
                    && c.read_to_string(&mut answer).is_ok()
                    && answer.contains("\"health\":\"true\"")
            }
        }
    }

    /// Kills the server outright (SIGKILL: nothing of it runs after), keeping its folder.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let pid = c.id();
            let _ = c.kill();
            let _ = c.wait();
            live().retain(|(p, _)| *p != pid);
        }
        self.watch(None);
    }

    /// Sends `sig` (`-STOP`, `-CONT`) to the running server; whether one ran to take it. Its
    /// process is not reaped before [`Server::kill`], so the pid cannot be another's.
    pub fn signal(&self, sig: &str) -> bool {
        self.child.as_ref().is_some_and(|c| {
            Command::new("kill")
                .args([sig, &c.id().to_string()])
                .status()
                .is_ok_and(|st| st.success())
        })
    }

    /// What the watchdog does if this process ends first: kill the server `pid` (when one
    /// runs) and remove the folder.
    fn watch(&mut self, pid: Option<u32>) {
        if let Some(e) = self.watched.take() {
            leaselab_pg::watchdog::forget(e);
        }
        let dir = leaselab_pg::watchdog::quote(&self.dir.display().to_string());
        let cmd = match pid {
            Some(pid) => format!("kill -KILL {pid} 2>/dev/null; rm -rf {dir}"),
            None => format!("rm -rf {dir}"),
        };
        self.watched = leaselab_pg::watchdog::guard(leaselab_pg::watchdog::Order::Server, cmd);
    }

    /// Its address, as the holders connect to it: `redis://127.0.0.1:P/`, or etcd's
    /// `http://127.0.0.1:P`.
    pub fn url(&self) -> String {
        match self.program {
            Program::Redis(_) => format!("redis://127.0.0.1:{}/", self.port),
            Program::Etcd => format!("http://127.0.0.1:{}", self.port),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
        if let Some(e) = self.watched.take() {
            leaselab_pg::watchdog::forget(e);
        }
    }
}
