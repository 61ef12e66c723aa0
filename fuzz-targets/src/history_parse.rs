//! `history_parse`: bytes → the recorded-history reader (`leaselab judge`'s JSON lines). It
//! never panics; what it accepts writes back in a form that reads back to the same history,
//! and is judged — certain and possible violations — without a panic; what it rejects, it
//! rejects with an error naming the file, a line of the input and a field.

use crate::Finding;
use leaselab_record::{read, write};

/// The file name the reader is given (errors must carry it).
pub const FILE: &str = "fuzz.jsonl";

/// Checks one input.
pub fn run(data: &[u8]) -> Result<(), Finding> {
    let Ok(text) = std::str::from_utf8(data) else {
        // `judge` reads files with `read_to_string`, which rejects non-UTF-8 itself.
        return Ok(());
    };
    match read::parse(text, FILE) {
        Err(e) => {
            let lines = text.lines().count().max(1);
            if e.file != FILE || e.field.is_empty() || e.message.is_empty() {
                return Err(Finding(format!("an error that does not say where: {e:?}")));
            }
            if e.line == 0 || e.line > lines {
                return Err(Finding(format!(
                    "an error at line {} of a {lines}-line input: {e:?}",
                    e.line
                )));
            }
            Ok(())
        }
        Ok(r) => {
            if r.lines.len() != r.history.events.len() || r.lines.iter().any(|l| l[0] == 0) {
                return Err(Finding(format!("events without their lines: {text:?}")));
            }
            let once = write::history(&r.history);
            let back = read::parse(&once, FILE)
                .map_err(|e| Finding(format!("written back, not readable: {e}\n{once}")))?;
            let twice = write::history(&back.history);
            if twice != once {
                return Err(Finding(format!(
                    "written back twice, different:\n--- once\n{once}\n--- twice\n{twice}"
                )));
            }
            let report = leaselab_checkers::check(&r.history);
            // A possible violation rests on some unknown outcome, and is not also certain.
            for p in &report.possible {
                let certain = report.violations.iter().any(|v| {
                    v.check == p.violation.check && v.events.last() == p.violation.events.last()
                });
                if p.conditions.is_empty() || certain {
                    return Err(Finding(format!(
                        "possible {} with no unknown outcome behind it, or certain too: {text:?}",
                        p.violation
                    )));
                }
            }
            Ok(())
        }
    }
}

/// What the fuzz binary calls: panics on a finding.
pub fn fuzz(data: &[u8]) {
    if let Err(f) = run(data) {
        panic!("history_parse: {f}");
    }
}
