//! Every committed trace, written in the JSON-lines format and read back, judges to the
//! trace's own verdict: the format carries everything the checkers look at.

use leaselab_record::{read, write};
use std::path::PathBuf;

fn traces() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../traces");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("traces/ exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "trace"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_committed_trace_exports_and_judges_to_its_own_verdict() {
    let files = traces();
    assert!(files.len() >= 30, "{} traces", files.len());
    for file in files {
        let name = file.display().to_string();
        let text = std::fs::read_to_string(&file).expect("readable");
        let t = leaselab_trace::Trace::parse(&text, &name).expect("parses");
        let jsonl = write::history(&t.history);
        let back = read::parse(&jsonl, &name).unwrap_or_else(|e| panic!("{e}\n{jsonl}"));
        let verdict = leaselab_checkers::check(&back.history).verdict();
        assert_eq!(verdict, t.expect, "{name}\n{jsonl}");
        // Read back and written again, the same bytes: nothing is lost a second time.
        assert_eq!(write::history(&back.history), jsonl, "{name}");
        // Every event knows its lines, in file order.
        assert_eq!(back.lines.len(), back.history.events.len());
        assert!(back.lines.iter().all(|l| l[0] > 0));
    }
}

/// A client-side step answered on a later line takes that answer as its outcome: reading as a
/// stream holds the events after it back until then, and hands on the same events, numbers
/// and lines as reading whole.
#[test]
fn a_stream_gives_the_events_of_a_whole_read_even_when_a_step_is_answered_late() {
    let text = r#"{"format":"leaselab-history","version":1}
{"type":"invoke","process":"holder-a","time":10,"op":"check","deadline":100}
{"type":"invoke","process":"holder-b","time":11,"op":"now","db":"lease"}
{"type":"ok","process":"holder-b","time":11,"op":"now","value":11}
{"type":"invoke","process":"holder-b","time":12,"op":"acquire","ttl_ms":1000,"lease":"report-job"}
{"type":"ok","process":"holder-b","time":12,"op":"acquire","token":1,"expires":1012}
{"type":"ok","process":"holder-a","time":13,"op":"check","result":"valid"}
{"type":"invoke","process":"holder-a","time":14,"op":"pause"}
{"type":"ok","process":"holder-a","time":14,"op":"pause"}
"#;
    let whole = read::parse(text, "late.jsonl").unwrap_or_else(|e| panic!("{e}"));
    let mut streamed = Vec::new();
    let lines = text.lines().map(|l| Ok(l.to_string()));
    read::stream_lines(lines, "late.jsonl", &mut |e, l| streamed.push((e, l)))
        .unwrap_or_else(|e| panic!("{e}"));
    let whole: Vec<_> = whole.history.events.into_iter().zip(whole.lines).collect();
    assert_eq!(streamed, whole);
    assert_eq!(streamed[0].0.outcome, leaselab_model::Outcome::Valid);
    assert_eq!(streamed[0].1, [2, 7]);
    let seqs: Vec<u64> = streamed.iter().map(|(e, _)| e.seq).collect();
    assert_eq!(seqs, vec![1, 2, 3, 4]);
}
