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
use leaselab_model::{History, Millis};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

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
        warnings: parts.iter().flat_map(|p| p.warnings.clone()).collect(),
    };
    out.history.events.reserve(total);
    // Each file's next event, keyed by (server time, file): the smallest comes first, the
    // file named first on a tie. O(n log k) for n events in k files.
    let mut next = vec![0usize; parts.len()];
    let mut heads: BinaryHeap<Reverse<(Millis, usize)>> = parts
        .iter()
        .enumerate()
        .filter_map(|(i, p)| p.history.events.first().map(|e| Reverse((e.at, i))))
        .collect();
    while let Some(Reverse((_, i))) = heads.pop() {
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
        if let Some(e) = parts[i].history.events.get(next[i]) {
            heads.push(Reverse((e.at, i)));
        }
    }
    Ok(out)
}
