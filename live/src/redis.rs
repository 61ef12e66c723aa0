//! The Redis lease: a recipe of three Lua scripts that the server runs atomically (read from a
//! file, so a user can point leaselab at their own).
//!
//! The calling convention every recipe follows (`docs/store-redis.md`): `KEYS[1]` is the lease
//! key, `KEYS[2]` the token counter; `ARGV[1]` the holder, `ARGV[2]` the TTL in ms, `ARGV[3]`
//! the token (renew, release). `acquire` answers `{token, expiry}` or nil (held), `renew` the
//! new expiry or nil (not this holder's any more), `release` 1 or 0 — an expiry in ms since
//! the Unix epoch by the server's clock (`PEXPIRETIME`, Redis 7).

use crate::LiveError;
use leaselab_pg::spec::SpecError;
use std::path::{Path, PathBuf};
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

/// What a forward jump of the server's clock by `ARGV[1]` ms does to the leases: every key's
/// time to live is that much shorter, and a key with less left is gone.
const JUMP: &str = "local by = tonumber(ARGV[1])
for _, k in ipairs(redis.call('KEYS', '*')) do
  local left = redis.call('PTTL', k)
  if left > 0 then
    if left <= by then redis.call('DEL', k) else redis.call('PEXPIRE', k, left - by) end
  end
end
return 1";

/// Jumps the clock of the Redis server at `url` (`redis://host:port/`) forward by `by_ms`, as
/// far as its leases can tell: each key's expiry comes that much nearer, at once, in one
/// script. A real clock jump would do the same to them (Redis expires a key when its wall clock
/// passes the key's expiry time); the clock itself cannot be moved here, because libfaketime
/// hangs a `redis-server` linked with jemalloc, as Debian's is, at start (libfaketime issue
/// #130). A backward jump only lengthens leases, the safe side, and is not modelled.
pub fn jump(url: &str, by_ms: u64) -> Result<(), LiveError> {
    use std::io::{BufRead, Write};
    let host = url
        .strip_prefix("redis://")
        .map(|h| h.trim_end_matches('/'))
        .ok_or_else(|| LiveError::Unexpected(format!("not a redis:// address: {url}")))?;
    let io = |e| LiveError::io("jump the server's clock", e);
    let c = std::net::TcpStream::connect(host).map_err(io)?;
    c.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .map_err(io)?;
    let by = by_ms.to_string();
    let args = ["EVAL", JUMP, "0", &by];
    let mut ask = format!("*{}\r\n", args.len());
    for a in args {
        ask.push_str(&format!("${}\r\n{a}\r\n", a.len()));
    }
    (&c).write_all(ask.as_bytes()).map_err(io)?;
    let mut answer = String::new();
    std::io::BufReader::new(&c)
        .read_line(&mut answer)
        .map_err(io)?;
    if answer.trim_end() == ":1" {
        Ok(())
    } else {
        Err(LiveError::Unexpected(format!(
            "the clock jump answered {}",
            answer.trim_end()
        )))
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
