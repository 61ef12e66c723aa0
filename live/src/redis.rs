//! The Redis lease: a recipe of three Lua scripts that the server runs atomically (read from a
//! file, so a user can point leaselab at their own), and throwaway `redis-server`s.
//!
//! The calling convention every recipe follows (`docs/store-redis.md`): `KEYS[1]` is the lease
//! key, `KEYS[2]` the token counter; `ARGV[1]` the holder, `ARGV[2]` the TTL in ms, `ARGV[3]`
//! the token (renew, release). `acquire` answers `{token, expiry}` or nil (held), `renew` the
//! new expiry or nil (not this holder's any more), `release` 1 or 0 — an expiry in ms since
//! the Unix epoch by the server's clock (`PEXPIRETIME`, Redis 7).

use crate::LiveError;
use leaselab_pg::spec::SpecError;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use toml::de::{DeTable, DeValue};

/// Whether the server keeps what it acknowledged across a restart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Persistence {
    /// The append-only file, fsynced before each reply (`appendonly yes`, `appendfsync
    /// always`): a kill -9 and restart loses no acknowledged write, the counter included.
    Always,
    /// Neither the append-only file nor snapshots: a restart starts empty and the counter
    /// begins again at 1 — a token handed out before is handed out again.
    None,
}

impl Persistence {
    /// Spelling in a recipe and in output.
    pub fn as_str(self) -> &'static str {
        match self {
            Persistence::Always => "always",
            Persistence::None => "none",
        }
    }
}

/// A Redis lease recipe.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedisRecipe {
    /// The file it was read from.
    pub file: PathBuf,
    /// The acquire script.
    pub acquire: String,
    /// The renew script.
    pub renew: String,
    /// The release script.
    pub release: String,
    /// The server's persistence.
    pub persistence: Persistence,
}

const SCRIPTS: [&str; 3] = ["acquire", "renew", "release"];

impl RedisRecipe {
    /// Reads the recipe at `path`; an error names the file, the line and the key.
    pub fn load(path: &Path) -> Result<RedisRecipe, LiveError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| {
            LiveError::Recipe(SpecError {
                file: file.clone(),
                line: None,
                place: None,
                message: format!("cannot read: {e}"),
            })
        })?;
        Self::parse(path, &text).map_err(LiveError::Recipe)
    }

    /// Reads a recipe from `text`; `path` names it.
    pub fn parse(path: &Path, text: &str) -> Result<RedisRecipe, SpecError> {
        let file = path.display().to_string();
        let err = |line: Option<usize>, place: &str, message: &str| SpecError {
            file: file.clone(),
            line,
            place: (!place.is_empty()).then(|| place.to_string()),
            message: message.to_string(),
        };
        let line_of = |at: usize| text[..at.min(text.len())].matches('\n').count() + 1;
        let root = DeTable::parse(text).map_err(|e| {
            err(
                e.span().map(|s| line_of(s.start)),
                "",
                &format!("not TOML: {}", e.message()),
            )
        })?;
        let root = root.get_ref();
        for (k, v) in root.iter() {
            if !matches!(k.get_ref().as_ref(), "persistence" | "scripts") {
                return Err(err(
                    Some(line_of(v.span().start)),
                    k.get_ref(),
                    "unknown key (a Redis recipe has `persistence` and `[scripts]`)",
                ));
            }
        }
        let persistence =
            match root.get("persistence").map(|v| (v.get_ref(), v.span())) {
                None => Persistence::Always,
                Some((DeValue::String(s), _)) if s.as_ref() == "always" => Persistence::Always,
                Some((DeValue::String(s), _)) if s.as_ref() == "none" => Persistence::None,
                Some((_, span)) => return Err(err(
                    Some(line_of(span.start)),
                    "persistence",
                    "must be \"always\" (append-only file, fsync before each reply) or \"none\"",
                )),
            };
        let Some(scripts) = root.get("scripts") else {
            return Err(err(None, "scripts", "missing `[scripts]`"));
        };
        let scripts_line = line_of(scripts.span().start);
        let DeValue::Table(scripts) = scripts.get_ref() else {
            return Err(err(Some(scripts_line), "scripts", "must be a table"));
        };
        for (k, v) in scripts.iter() {
            if !SCRIPTS.contains(&k.get_ref().as_ref()) {
                return Err(err(
                    Some(line_of(v.span().start)),
                    &format!("scripts.{}", k.get_ref()),
                    "unknown script (a recipe has `acquire`, `renew` and `release`)",
                ));
            }
        }
        let script = |name: &str| -> Result<String, SpecError> {
            let place = format!("scripts.{name}");
            let v = scripts
                .get(name)
                .ok_or_else(|| err(Some(scripts_line), &place, "missing script"))?;
            match v.get_ref() {
                DeValue::String(s) if !s.trim().is_empty() => Ok(s.to_string()),
                _ => Err(err(
                    Some(line_of(v.span().start)),
                    &place,
                    "must be a string of Lua",
                )),
            }
        };
        Ok(RedisRecipe {
            file: path.to_path_buf(),
            acquire: script("acquire")?,
            renew: script("renew")?,
            release: script("release")?,
            persistence,
        })
    }
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

/// The `redis-server` to run: `LEASELAB_REDIS_SERVER`, else the one on `PATH`.
fn program() -> Result<PathBuf, String> {
    if let Ok(p) = std::env::var("LEASELAB_REDIS_SERVER") {
        return Ok(PathBuf::from(p));
    }
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join("redis-server"))
        .find(|p| p.is_file())
        .ok_or_else(|| MISSING.to_string())
}

const MISSING: &str = "redis-server not found: install it (Debian/Ubuntu: `sudo apt-get install redis-server`) or set LEASELAB_REDIS_SERVER to its path";

/// Whether a Redis test can run; the same contract as `postgres_for_test`: a missing server is
/// a skip said in one line and logged to `LEASELAB_SKIP_LOG`, or, with
/// `LEASELAB_REQUIRE_REDIS=1`, a failure.
pub fn redis_for_test(test: &str) -> bool {
    let why = match program() {
        Ok(_) => return true,
        Err(why) => why,
    };
    leaselab_pg::cluster::skipped(test, &why, "LEASELAB_REQUIRE_REDIS")
}

/// A throwaway `redis-server` on a loopback port, its files in a folder of its own; killed and
/// its folder removed when dropped, by [`stop_all`], or — whatever ends this process — by the
/// watchdog.
pub struct RedisServer {
    child: Option<Child>,
    dir: PathBuf,
    port: u16,
    persistence: Persistence,
    watched: Option<leaselab_pg::watchdog::Entry>,
}

impl RedisServer {
    /// Starts a server in `root/name` (made anew) and waits until it answers.
    pub fn start(root: &Path, name: &str, persistence: Persistence) -> Result<Self, LiveError> {
        let dir = std::path::absolute(root.join(name)).map_err(|e| LiveError::io("folder", e))?;
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)
            .map_err(|e| LiveError::io(&format!("create {}", dir.display()), e))?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| LiveError::io("pick a port", e))?
            .port();
        let mut s = RedisServer {
            child: None,
            dir,
            port,
            persistence,
            watched: None,
        };
        s.watch(None);
        s.boot()?;
        Ok(s)
    }

    /// Starts the server process on its folder and port (again, after [`RedisServer::kill`]:
    /// with persistence it reads back its append-only file).
    pub fn boot(&mut self) -> Result<(), LiveError> {
        use std::os::unix::process::CommandExt;
        let prog = program().map_err(LiveError::Unexpected)?;
        let (aof, fsync) = match self.persistence {
            Persistence::Always => ("yes", "always"),
            Persistence::None => ("no", "no"),
        };
        let port = self.port.to_string();
        let log = self.dir.join("redis.log");
        let child = Command::new(&prog)
            .args(["--port", &port, "--bind", "127.0.0.1", "--daemonize", "no"])
            .args(["--protected-mode", "no", "--save", ""])
            .args(["--appendonly", aof, "--appendfsync", fsync])
            .arg("--dir")
            .arg(&self.dir)
            .arg("--logfile")
            .arg(&log)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            // Neither a Ctrl-C at the terminal nor a kill of this process's group reaches it:
            // this process decides when it stops.
            .process_group(0)
            .spawn()
            .map_err(|e| LiveError::io(&format!("start {}", prog.display()), e))?;
        live().push((child.id(), self.dir.clone()));
        self.watch(Some(child.id()));
        self.child = Some(child);
        let t = Instant::now();
        while !self.answers() {
            if t.elapsed() > Duration::from_secs(20) {
                return Err(LiveError::Unexpected(format!(
                    "redis-server on port {} did not answer within 20 s (its log: {})",
                    self.port,
                    log.display()
                )));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(())
    }

    /// Whether the server answers a PING.
    fn answers(&self) -> bool {
        use std::io::{Read, Write};
        let Ok(mut c) = std::net::TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let _ = c.set_read_timeout(Some(Duration::from_secs(1)));
        let mut buf = [0u8; 7];
        c.write_all(b"PING\r\n").is_ok() && c.read_exact(&mut buf).is_ok() && &buf == b"+PONG\r\n"
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

    /// Its address, as the holders connect to it.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// Its persistence.
    pub fn persistence(&self) -> Persistence {
        self.persistence
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
        if let Some(e) = self.watched.take() {
            leaselab_pg::watchdog::forget(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<RedisRecipe, String> {
        RedisRecipe::parse(Path::new("r.toml"), text).map_err(|e| e.to_string())
    }

    #[test]
    fn the_example_recipes_read() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/stores");
        for name in ["redis-counter.toml", "redis-no-persistence.toml"] {
            let r = RedisRecipe::load(&root.join(name)).expect(name);
            assert!(r.acquire.contains("INCR"), "{name}");
        }
    }

    #[test]
    fn a_bad_recipe_names_the_line_and_the_key() {
        let scripts = "[scripts]\nacquire = 'return 1'\nrenew = 'return 1'\nrelease = 'return 1'\n";
        assert!(parse(scripts).is_ok());
        assert_eq!(
            parse(&format!("persistence = \"fsync\"\n{scripts}")),
            Err("r.toml:1: persistence: must be \"always\" (append-only file, fsync before each reply) or \"none\"".into())
        );
        assert_eq!(
            parse("[scripts]\nacquire = 'return 1'\nrenew = 'return 1'\n"),
            Err("r.toml:1: scripts.release: missing script".into())
        );
        assert_eq!(
            parse(&format!("{scripts}renw = 'x'\n")),
            Err("r.toml:5: scripts.renw: unknown script (a recipe has `acquire`, `renew` and `release`)".into())
        );
        assert_eq!(
            parse(&format!("ttl = 3\n{scripts}")),
            Err(
                "r.toml:1: ttl: unknown key (a Redis recipe has `persistence` and `[scripts]`)"
                    .into()
            )
        );
        assert_eq!(
            parse("[scripts]\nacquire = 3\nrenew = 'return 1'\nrelease = 'return 1'\n"),
            Err("r.toml:2: scripts.acquire: must be a string of Lua".into())
        );
    }
}
