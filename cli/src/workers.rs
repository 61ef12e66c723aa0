//! The databases a generated search runs its schedules on (`--jobs J`): one backend per worker,
//! each its own throwaway clusters, so that a crash a schedule injects on one never reaches
//! another's.

use crate::error::CliError;
use leaselab_pg::{PgBackend, PgError};
use std::path::Path;

/// The backends of workers 2 to `jobs` (the first is the caller's), made by `make` in
/// `pg_dir/worker-K`, started side by side.
///
/// Once Ctrl-C or SIGTERM came, no more are started: only those already up are returned, and the
/// search that follows runs no schedule and reports the interruption. On a loaded machine a
/// pair of clusters took a minute and a half to start; an interrupt that waited for them could
/// take longer than the person who pressed Ctrl-C.
pub fn start_more(
    pg_dir: &Path,
    jobs: usize,
    make: impl Fn(&Path) -> Result<PgBackend, PgError> + Sync,
) -> Result<Vec<PgBackend>, CliError> {
    if crate::interrupt::requested() {
        return Ok(Vec::new());
    }
    let make = &make;
    let more: Vec<Result<Option<PgBackend>, PgError>> = std::thread::scope(|scope| {
        let started: Vec<_> = (1..jobs.max(1))
            .map(|k| {
                let dir = pg_dir.join(format!("worker-{k}"));
                // Never forgotten: the watchdog removes the folder, once its clusters are gone,
                // at whatever end this process meets (a normal one included).
                let _ = leaselab_pg::watchdog::guard(
                    leaselab_pg::watchdog::Order::Folder,
                    format!(
                        "rmdir {} 2>/dev/null",
                        leaselab_pg::watchdog::quote(&dir.to_string_lossy())
                    ),
                );
                scope.spawn(move || {
                    if crate::interrupt::requested() {
                        return Ok(None);
                    }
                    make(&dir).map(Some)
                })
            })
            .collect();
        started
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(PgError::Setup(
                        "a worker's databases failed to start".into(),
                    ))
                })
            })
            .collect()
    });
    let mut pgs = Vec::new();
    for pg in more {
        pgs.extend(pg?);
    }
    Ok(pgs)
}

/// `--jobs`' default: the machine's cores, at most 4 (each job is two PostgreSQL clusters).
pub fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(4))
}

/// A search's result as the commands report it.
pub fn settled<F>(
    result: Result<
        Option<leaselab_gen::search::Found<F>>,
        leaselab_gen::search::SearchError<PgError>,
    >,
) -> Result<Option<leaselab_gen::search::Found<F>>, CliError> {
    match result {
        Ok(f) => Ok(f),
        Err(leaselab_gen::search::SearchError::Aborted(why)) => {
            Err(CliError::GeneratorAborted(why))
        }
        Err(leaselab_gen::search::SearchError::Run(e)) => Err(e.into()),
    }
}
