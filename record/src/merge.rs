//! Several processes' records as one history. A deployment's services each record their own
//! calls, to their own file; whether two holders acted at once, or a stale write overtook a
//! newer one, is a question about all of them together.
//!
//! The files are merged by the server time the reader gave each event (its `server_time`, or
//! its `time` plus the process's clock bound: the latest the server's clock can have read), so
//! the merged order is the order of the one clock the files share. Each file's own order is
//! kept — a process's events are never reordered among themselves — and at equal times the
//! file named first goes first, so the same files give the same history.

use crate::read::{ReadError, Recorded};
use leaselab_model::History;
use std::collections::BTreeMap;

/// Merges `parts` (each read from one file) into one history. A process recorded in two files
/// is an error naming both (its events could not be ordered against each other), and so is a
/// connection name two processes use (the history knows a session by that name alone).
pub fn merge(parts: Vec<Recorded>) -> Result<Recorded, ReadError> {
    let name = |i: usize| {
        parts[i]
            .files
            .first()
            .map_or("?", String::as_str)
            .to_string()
    };
    let mut file_of_process: BTreeMap<&str, usize> = BTreeMap::new();
    let mut process_of_conn: BTreeMap<&str, &str> = BTreeMap::new();
    let mut bounds = BTreeMap::new();
    for (i, p) in parts.iter().enumerate() {
        for (k, e) in p.history.events.iter().enumerate() {
            let process = e.actor.as_str();
            let line = p.lines.get(k).map_or(1, |l| l[0]);
            let clash = |field: &str, message: String| ReadError {
                file: name(i),
                line,
                field: field.into(),
                message,
            };
            match file_of_process.insert(process, i) {
                Some(j) if j != i => {
                    return Err(clash(
                        "process",
                        format!(
                            "process `{process}` is also recorded in {}: merge the files of \
                             different processes (one file per process)",
                            name(j)
                        ),
                    ))
                }
                _ => {}
            }
            match process_of_conn.insert(e.conn_str(), process) {
                Some(other) if other != process => {
                    return Err(clash(
                        "conn",
                        format!(
                            "connection `{}` is used by process `{process}` here and by \
                             `{other}` in another file: a connection belongs to one process",
                            e.conn_str()
                        ),
                    ))
                }
                _ => {}
            }
        }
        for (k, v) in &p.clock_bounds {
            bounds.insert(k.clone(), *v);
        }
    }
    let total: usize = parts.iter().map(|p| p.history.events.len()).sum();
    let mut out = Recorded {
        history: History::default(),
        lines: Vec::with_capacity(total),
        clock_bounds: bounds,
        files: parts
            .iter()
            .map(|p| p.files.first().cloned().unwrap_or_default())
            .collect(),
        file_of: Vec::with_capacity(total),
    };
    out.history.events.reserve(total);
    let mut next = vec![0usize; parts.len()];
    loop {
        // The file whose next event comes first by the server's clock; the first file on a tie.
        let pick = (0..parts.len())
            .filter_map(|i| parts[i].history.events.get(next[i]).map(|e| (e.at, i)))
            .min();
        let Some((_, i)) = pick else { break };
        let e = &parts[i].history.events[next[i]];
        out.history.push(
            e.at,
            e.local,
            e.actor.clone(),
            e.conn.clone(),
            e.op.clone(),
            e.outcome.clone(),
        );
        out.lines.push(parts[i].lines[next[i]]);
        out.file_of.push(i as u32);
        next[i] += 1;
    }
    Ok(out)
}
