//! Table 26-1 of the source, printed from the outcomes a lab run actually observed.

use std::collections::BTreeMap;

/// F5: lease + client-side check only.
pub const CLIENT_CHECK: &str = "client-check";
/// F6a: token + check-then-write.
pub const CHECK_THEN_WRITE: &str = "check-then-write";
/// F7 row: token + per-row compare.
pub const ROW: &str = "row";
/// F4: scope fence.
pub const SCOPE: &str = "scope";
/// F6b B-first: scope fence.
pub const SCOPE_F6B: &str = "scope-f6b";
/// F7 scope: scope fence.
pub const SCOPE_F7: &str = "scope-f7";
/// X6 (beyond the sources): lease + lock-delay, unfenced resource.
pub const LOCK_DELAY: &str = "lock-delay";

/// Renders the table; rows whose cases did not run in this invocation say so.
pub fn render(obs: &BTreeMap<&'static str, String>) -> String {
    let get = |k: &str| obs.get(k).cloned();
    let joined = |keys: &[&str]| -> String {
        let v: Vec<String> = keys.iter().filter_map(|k| get(k)).collect();
        if v.is_empty() {
            "not run".into()
        } else if v.iter().all(|x| x == &v[0]) {
            v[0].clone()
        } else {
            v.join("/")
        }
    };
    let rows: [(&str, String, &str, &str); 5] = [
        (
            "lease + client-side check only",
            get(CLIENT_CHECK).unwrap_or_else(|| "not run".into()),
            "no pause/delay between check and write",
            "F5",
        ),
        (
            "lease + lock-delay (Chubby)",
            get(LOCK_DELAY)
                .map(|v| format!("{v} (a pause longer than TTL + delay)"))
                .unwrap_or_else(|| "not run (the sources did not run it; --case X6 does)".into()),
            "pause shorter than the delay",
            "X6",
        ),
        (
            "token + check-then-write at the resource",
            get(CHECK_THEN_WRITE).unwrap_or_else(|| "not run".into()),
            "nobody commits between read and write",
            "F6a",
        ),
        (
            "token + per-row compare",
            get(ROW)
                .map(|v| format!("{v} (rows the new holder never wrote)"))
                .unwrap_or_else(|| "not run".into()),
            "stale holder only rewrites rows the new holder wrote",
            "F7",
        ),
        (
            "token + scope-level conditional update",
            joined(&[SCOPE, SCOPE_F6B, SCOPE_F7]),
            "monotonic, never-reused token; every write passes one floor",
            "F4, F6b, F7",
        ),
    ];
    let mut out = String::from("TABLE 26-1 (from this run's outcomes)\n");
    out.push_str(
        "| approach | stale holder's write after resume | relies on | case |\n|---|---|---|---|\n",
    );
    for (a, o, r, c) in rows {
        out.push_str(&format!("| {a} | {o} | {r} | {c} |\n"));
    }
    out
}
