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
