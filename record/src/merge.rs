//! Several processes' records as one history. A deployment's services each record their own
//! calls, to their own file; whether two holders acted at once, or a stale write overtook a
//! newer one, is a question about all of them together.
//!
//! The files are merged by the server time the reader gave each event (its `server_time`, or
//! its `time` plus the process's clock bound: the latest the server's clock can have read), so
//! the merged order is the order of the one clock the files share; within one millisecond by
//! the lines' `time_us` where they give it — a millisecond clock cannot order a release and the
//! next holder's grant that fall in the same millisecond, and placed the wrong way round they
//! read as two holders at once. Each file's own order is
//! kept — a process's events are never reordered among themselves — and at equal times the
//! file named first goes first, so the same files give the same history.

use crate::read::{ReadError, Recorded};
use leaselab_model::{History, Millis, Outcome};
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
        micros: Vec::with_capacity(total),
        warnings: parts.iter().flat_map(|p| p.warnings.clone()).collect(),
    };
    out.history.events.reserve(total);
    // Each file's next event, keyed by (server time, rank, file): the smallest comes first, the
    // file named first on a tie. At one time t, the invokes (`blocked` events) go before the
    // answers, as far as each file's own order allows ([`ranks`]): so that two operations whose times touch — one
    // answered at t, the other invoked at t, in different files — overlap in the history too,
    // neither placed wholly before the other (the server may have taken them in either order).
    // A millisecond clock cannot always give that: two files that each answer and then invoke
    // at t cannot both have their invoke before the other's answer. O(n log k) for n events in
    // k files.
    let ranks: Vec<Vec<u32>> = parts.iter().map(ranks).collect();
    let key = |i: usize, j: usize| {
        let e = &parts[i].history.events[j];
        let us = parts[i].micros.get(j).copied().unwrap_or(0);
        Reverse((e.at, us, ranks[i][j], i))
    };
    let mut heads: BinaryHeap<Reverse<(Millis, u16, u32, usize)>> = parts
        .iter()
        .enumerate()
        .filter(|(_, p)| !p.history.events.is_empty())
        .map(|(i, _)| key(i, 0))
        .collect();
    let mut next = vec![0usize; parts.len()];
    while let Some(Reverse((_, _, _, i))) = heads.pop() {
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
        out.micros
            .push(parts[i].micros.get(next[i]).copied().unwrap_or(0));
        next[i] += 1;
        if next[i] < parts[i].history.events.len() {
            heads.push(key(i, next[i]));
        }
    }
    Ok(out)
}

/// Each event's rank among its file's run of events at one time (its millisecond and, where
/// the file gives them, its microseconds): the run cut after each
/// invoke (`blocked`) into chunks — the answers before an invoke, and the invoke — numbered
/// from 0; the answers after the run's last invoke last. The merge takes every file's chunk 0
/// at a time before any chunk 1, and every chunk before the last answers: one invoke of each
/// file at a time, each after as few answers as its own file makes it wait for.
fn ranks(part: &Recorded) -> Vec<u32> {
    let events = &part.history.events;
    let time = |j: usize| (events[j].at, part.micros.get(j).copied().unwrap_or(0));
    let mut ranks = vec![u32::MAX; events.len()];
    let mut start = 0;
    while start < events.len() {
        let at = time(start);
        let end = (start..events.len())
            .position(|j| time(j) != at)
            .map_or(events.len(), |n| start + n);
        let mut chunk = 0u32;
        for j in start..end {
            ranks[j] = chunk;
            if matches!(events[j].outcome, Outcome::Blocked) {
                chunk += 1;
            }
        }
        // After the run's last invoke: answers only.
        for j in (start..end).rev() {
            if matches!(events[j].outcome, Outcome::Blocked) {
                break;
            }
            ranks[j] = u32::MAX;
        }
        start = end;
    }
    ranks
}
