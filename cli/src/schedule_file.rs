//! A generated schedule saved in a trace (its `setup schedule` and `setup intent` lines), read
//! back for `audit --replay` and `diff --replay`, and what a rerun answered beside what was
//! recorded.

use crate::error::CliError;
use leaselab_gen::Schedule;
use leaselab_model::Event;
use leaselab_trace::Trace;
use std::path::Path;

/// The trace in `file` and the schedule it holds; an error names the file, line and field, or
/// says that the trace holds no schedule (`written_by`: the command whose traces do).
pub fn read(file: &Path, written_by: &str) -> Result<(Trace, Schedule), CliError> {
    let name = file.display().to_string();
    let text =
        std::fs::read_to_string(file).map_err(|error| leaselab_trace::TraceFileError::Read {
            path: name.clone(),
            error,
        })?;
    let t = Trace::parse(&text, &name)?;
    // An audit's trace names its spec; a differential's names none. Run by the other command
    // it would replay a schedule against statements it was not drawn for, and say so only as
    // "step #1 differs".
    let audit = written_by.starts_with("audit");
    match (&t.spec, audit) {
        (Some(spec), false) => {
            return Err(CliError::Input(format!(
                "{name}: the trace of an audit of {spec}: replay it with `leaselab audit {spec} --replay {name}`"
            )))
        }
        (None, true) if t.setup.iter().any(|l| l.starts_with("schedule")) => {
            return Err(CliError::Input(format!(
                "{name}: the trace of a `diff --gen` search (it names no spec): replay it with `leaselab diff --replay {name}`"
            )))
        }
        _ => {}
    }
    let lines = Trace::header_lines(&text, "setup");
    let schedule = Schedule::from_setup_lines(&t.config, &name, &lines)?.ok_or_else(|| {
        CliError::Input(format!(
            "{name}: no `setup schedule` line: only the traces `{written_by}` writes hold the schedule to replay"
        ))
    })?;
    Ok((t, schedule))
}

/// Whether a rerun answered every step as recorded, else the first step that differs.
pub fn compare(recorded: &[Event], now: &[Event]) -> String {
    let recorded: Vec<String> = recorded.iter().map(leaselab_trace::event_line).collect();
    let now: Vec<String> = now.iter().map(leaselab_trace::event_line).collect();
    match recorded.iter().zip(&now).position(|(a, b)| a != b) {
        None if recorded.len() == now.len() => "every step answered as recorded".to_string(),
        None => format!("{} steps recorded, {} now", recorded.len(), now.len()),
        Some(k) => format!(
            "step #{} differs: recorded `{}`, now `{}`",
            k + 1,
            recorded[k],
            now[k]
        ),
    }
}
