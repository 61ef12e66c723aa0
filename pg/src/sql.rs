//! The source design's schema and statements (seed 000), unchanged in shape. In replay mode
//! `now()` resolves to `lab.now()` — a STABLE plpgsql function in a schema placed first on the
//! connection's `search_path` — which reads the session setting `lab.now` (virtual
//! milliseconds). The adapter sets it before each autocommit statement and before `BEGIN`,
//! never inside a transaction, so a transaction sees its start time exactly as with real
//! `now()` (F2), and a statement that waits on a lock keeps its pre-wait `now()`.

/// Virtual time 0 as a timestamp.
pub const EPOCH: &str = "timestamptz '2026-01-01 00:00:00+00'";

/// `expires_at` as microseconds since [`EPOCH`], NULL for `-infinity` (extract fails on it).
pub fn expiry_us(col: &str) -> String {
    format!("CASE WHEN isfinite({col}) THEN (extract(epoch FROM ({col} - {EPOCH})) * 1000000)::bigint END")
}

/// The clock redirection, installed in both databases.
pub const LAB_SCHEMA: &str = "
CREATE SCHEMA IF NOT EXISTS lab;
CREATE OR REPLACE FUNCTION lab.now() RETURNS timestamptz LANGUAGE plpgsql STABLE AS $$
BEGIN
  RETURN timestamptz '2026-01-01 00:00:00+00' + make_interval(secs => current_setting('lab.now')::float8 / 1000);
END $$;
";

/// `lease26`.
pub fn lease_table(unlogged: bool) -> String {
    format!(
        "CREATE {}TABLE lease (
  name        text PRIMARY KEY,
  holder      text NOT NULL,
  token       bigint NOT NULL CHECK (token > 0),
  expires_at  timestamptz NOT NULL
);",
        if unlogged { "UNLOGGED " } else { "" }
    )
}

/// `res26`.
pub const RES_SCHEMA: &str = "
CREATE TABLE fence_floor (scope text PRIMARY KEY, max_token bigint NOT NULL);
CREATE TABLE report_part (
  scope text, part text, content text NOT NULL, writer text NOT NULL,
  token bigint NOT NULL, written_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  PRIMARY KEY (scope, part)
);
CREATE TABLE write_attempt (
  id bigserial PRIMARY KEY, scope text NOT NULL, part text NOT NULL, writer text NOT NULL,
  token bigint NOT NULL, accepted boolean NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE TABLE publish (key text PRIMARY KEY, content text NOT NULL, writer text NOT NULL, token bigint NOT NULL);
";

/// `expires_at` as milliseconds since the Unix epoch by the server's clock: what the real-time
/// holders record (a recorded history carries what the server reported).
pub fn expiry_epoch_ms(col: &str) -> String {
    format!("floor(extract(epoch FROM {col}) * 1000)::int8")
}

/// Acquire: one atomic statement; a returned row means success. With a lock-delay (Chubby; 0
/// in the source design, whose statement is then unchanged) an expired row is taken over only
/// that long after its expiry; `'-infinity' + interval` stays `-infinity`, so a released lease
/// is free at once. The expiry is returned in virtual microseconds ([`expiry_us`]).
pub fn acquire(lock_delay_ms: u64) -> String {
    acquire_returning(lock_delay_ms, &expiry_us("l.expires_at"))
}

/// [`acquire`] returning the token and `expiry` (an expression over `l.expires_at`).
pub fn acquire_returning(lock_delay_ms: u64, expiry: &str) -> String {
    let expired = if lock_delay_ms == 0 {
        "l.expires_at <= now()".to_string()
    } else {
        format!("l.expires_at + make_interval(secs => {lock_delay_ms}::float8 / 1000) <= now()")
    };
    format!(
        "INSERT INTO lease AS l (name, holder, token, expires_at)
VALUES ($1, $2, 1, now() + make_interval(secs => $3::float8 / 1000))
ON CONFLICT (name) DO UPDATE
   SET holder = EXCLUDED.holder,
       token = l.token + 1,
       expires_at = EXCLUDED.expires_at
 WHERE {expired}
RETURNING l.token, {expiry}"
    )
}

/// Renew: never after expiry (unless the renew-after-expiry mistake is on).
pub fn renew(after_expiry: bool) -> String {
    renew_returning(after_expiry, &expiry_us("expires_at"))
}

/// [`renew`] returning `expiry` (an expression over `expires_at`).
pub fn renew_returning(after_expiry: bool, expiry: &str) -> String {
    format!(
        "UPDATE lease SET expires_at = now() + make_interval(secs => $1::float8 / 1000)
 WHERE name = $2 AND holder = $3 AND token = $4{}
RETURNING {expiry}",
        if after_expiry {
            ""
        } else {
            " AND expires_at > now()"
        },
    )
}

/// Release: `-infinity`, the token stays.
pub const RELEASE: &str =
    "UPDATE lease SET expires_at = '-infinity' WHERE name = $1 AND holder = $2 AND token = $3";

/// Read a lease row.
pub fn read_lease() -> String {
    format!(
        "SELECT holder, token, {} FROM lease WHERE name = $1",
        expiry_us("expires_at")
    )
}

/// `now()` in milliseconds since the virtual epoch (microseconds, checked to be whole ms).
pub fn now_us() -> String {
    format!("SELECT (extract(epoch FROM (now() - {EPOCH})) * 1000000)::bigint")
}

/// The scope fence: compare and advance in one conditional UPDATE (holds the row lock).
pub const FENCE_SCOPE: &str =
    "UPDATE fence_floor SET max_token = $1 WHERE scope = $2 AND max_token <= $1";
/// Seed 003's strict fence.
pub const FENCE_STRICT: &str =
    "UPDATE fence_floor SET max_token = $1 WHERE scope = $2 AND max_token < $1";
/// The guarded upsert of the floor: creates the floor of a new scope, advances an existing one
/// only for an equal or higher token.
pub const FENCE_UPSERT: &str = "INSERT INTO fence_floor AS f (scope, max_token) VALUES ($2, $1)
ON CONFLICT (scope) DO UPDATE SET max_token = EXCLUDED.max_token WHERE f.max_token <= EXCLUDED.max_token";
/// Check-then-write, step 1: read.
pub const FLOOR_READ: &str = "SELECT max_token FROM fence_floor WHERE scope = $1";
/// Check-then-write, step 2: set, unconditionally.
pub const FLOOR_SET: &str = "UPDATE fence_floor SET max_token = $1 WHERE scope = $2";
/// The upsert of a part.
pub const UPSERT: &str = "INSERT INTO report_part (scope, part, content, writer, token) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (scope, part) DO UPDATE SET content = EXCLUDED.content, writer = EXCLUDED.writer, token = EXCLUDED.token";
/// The row fence: the upsert guarded per row (F7).
pub const UPSERT_ROW: &str = "INSERT INTO report_part AS r (scope, part, content, writer, token) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (scope, part) DO UPDATE SET content = EXCLUDED.content, writer = EXCLUDED.writer, token = EXCLUDED.token
WHERE r.token <= EXCLUDED.token";
/// F9: business-key deduplication.
pub const PUBLISH_KEY: &str = "INSERT INTO publish (key, content, writer, token) VALUES ($1, $2, $3, $4) ON CONFLICT (key) DO NOTHING";
/// F9's fix: keep only equal or newer.
pub const PUBLISH_VERSIONED: &str = "INSERT INTO publish AS p (key, content, writer, token) VALUES ($1, $2, $3, $4)
ON CONFLICT (key) DO UPDATE SET content = EXCLUDED.content, writer = EXCLUDED.writer, token = EXCLUDED.token
WHERE p.token <= EXCLUDED.token";
/// Log one write attempt.
pub const ATTEMPT: &str =
    "INSERT INTO write_attempt (scope, part, writer, token, accepted) VALUES ($1, $2, $3, $4, $5)";
/// Reads.
pub const READ_PART: &str =
    "SELECT content, writer, token FROM report_part WHERE scope = $1 AND part = $2";
/// Reads.
pub const READ_PUBLISH: &str = "SELECT content, writer, token FROM publish WHERE key = $1";
/// Count attempts.
pub const COUNT_ATTEMPTS: &str =
    "SELECT count(*) FROM write_attempt WHERE writer = $1 AND accepted = $2";
/// Set the session's virtual clock.
pub const SET_NOW: &str = "SELECT set_config('lab.now', $1, false)";

/// `s` as an SQL string literal (quotes doubled; `standard_conforming_strings` is on, so a
/// backslash is an ordinary character).
pub fn literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}
