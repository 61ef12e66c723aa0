//! `trace_parse`: bytes → the trace parser. It never panics; what it accepts re-serialises
//! byte for byte and replays (on the model, judged by the checkers) without a panic, and when
//! every step reproduces, the replayed history gets the verdict the recorded one gets; what it
//! rejects, it rejects with an error naming the file, a line and a field.

use crate::Finding;
use leaselab_checkers::check;
use leaselab_trace::replay::replay;
use leaselab_trace::Trace;

/// The file name the parser is given (errors must carry it).
pub const FILE: &str = "fuzz.trace";

/// Checks one input.
pub fn run(data: &[u8]) -> Result<(), Finding> {
    let Ok(text) = std::str::from_utf8(data) else {
        // The CLI reads traces with `read_to_string`, which rejects non-UTF-8 itself.
        return Ok(());
    };
    match Trace::parse(text, FILE) {
        Err(e) => {
            if e.file != FILE || e.field.is_empty() || e.message.is_empty() {
                return Err(Finding(format!(
                    "an error that does not say where: {e:?} (input {text:?})"
                )));
            }
            let lines = text.split_inclusive('\n').count().max(1);
            if e.line == 0 || e.line > lines + 1 {
                return Err(Finding(format!(
                    "an error at line {} of a {lines}-line input: {e:?} (input {text:?})",
                    e.line
                )));
            }
            Ok(())
        }
        Ok(t) => {
            let again = t.to_text();
            if again != text {
                return Err(Finding(format!(
                    "accepted, but writes back differently:\n--- input\n{text}\n--- written\n{again}"
                )));
            }
            let c = replay(&t);
            // The report a person reads must not panic either.
            let _ = c.describe();
            if c.divergences.is_empty() {
                let recorded = check(&t.history).verdict();
                if c.verdict() != Some(recorded.clone()) {
                    return Err(Finding(format!(
                        "every step reproduced, yet the replayed history is judged {:?} and the recorded one {recorded:?}:\n{text}",
                        c.verdict()
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
        panic!("trace_parse: {f}");
    }
}
