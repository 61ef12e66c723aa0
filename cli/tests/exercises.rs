//! Every exercise of EXERCISES.md, run as written: its one command (with `leaselab` the binary
//! under test), its exit status, every `<!-- see: … -->` line of its claims found in the
//! output, and every timeline it prints within 12 lines.

mod common;
use common::{leaselab_in, root};
use std::path::PathBuf;

struct Exercise {
    title: String,
    command: String,
    exit: i32,
    see: Vec<String>,
}

fn exercises() -> Vec<Exercise> {
    let text = std::fs::read_to_string(root().join("EXERCISES.md")).expect("EXERCISES.md");
    let mut out: Vec<Exercise> = Vec::new();
    let mut in_sh = false;
    let mut after_command = false;
    for line in text.lines() {
        if let Some(t) = line.strip_prefix("## ") {
            if t.starts_with(|c: char| c.is_ascii_digit()) {
                out.push(Exercise {
                    title: t.to_string(),
                    command: String::new(),
                    exit: -1,
                    see: Vec::new(),
                });
            }
            after_command = false;
            continue;
        }
        let Some(e) = out.last_mut() else { continue };
        if line.starts_with("**Command.**") {
            after_command = true;
        } else if line == "```sh" && after_command && e.command.is_empty() {
            in_sh = true;
        } else if line == "```" && in_sh {
            in_sh = false;
            after_command = false;
        } else if in_sh {
            e.command = line.to_string();
        } else if let Some(x) = line.strip_prefix("<!-- exit: ") {
            e.exit = x.trim_end_matches(" -->").parse().expect("exit status");
        } else if let Some(x) = line.strip_prefix("<!-- see: ") {
            e.see.push(x.trim_end_matches(" -->").to_string());
        }
    }
    out
}

/// Each timeline in `out`: from its `t ms │` header to its verdict line.
fn timelines(out: &str) -> Vec<Vec<String>> {
    let mut all = Vec::new();
    let mut cur: Option<Vec<String>> = None;
    for l in out.lines() {
        let t = l.trim_start();
        if t.starts_with("t ms │") {
            cur = Some(vec![t.to_string()]);
        } else if let Some(c) = cur.as_mut() {
            c.push(t.to_string());
            if t.starts_with('✓') || t.starts_with('✗') {
                all.extend(cur.take());
            }
        }
    }
    all
}

#[test]
fn every_exercise_shows_what_it_says() {
    let list = exercises();
    assert!(list.len() >= 10, "{} exercises", list.len());
    // The commands' relative paths (traces/…) resolve; files they write land in a scratch dir.
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("exercises");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    #[cfg(unix)]
    std::os::unix::fs::symlink(root().join("traces"), dir.join("traces")).expect("link traces");
    for e in &list {
        assert!(!e.command.is_empty(), "{}: no command", e.title);
        assert!(e.exit >= 0, "{}: no exit status", e.title);
        assert!(!e.see.is_empty(), "{}: no claim to check", e.title);
        let words: Vec<&str> = e.command.split_whitespace().collect();
        assert_eq!(words[0], "leaselab", "{}: {}", e.title, e.command);
        let (code, out) = leaselab_in(&dir, &words[1..]);
        assert_eq!(code, e.exit, "{}: `{}`\n{out}", e.title, e.command);
        for s in &e.see {
            assert!(
                out.contains(s.as_str()),
                "{}: `{}` does not show `{s}`:\n{out}",
                e.title,
                e.command
            );
        }
        for t in timelines(&out) {
            assert!(
                t.len() <= 12,
                "{}: a timeline of {} lines:\n{}",
                e.title,
                t.len(),
                t.join("\n")
            );
        }
    }
}

#[test]
fn the_breaking_exercises_print_a_timeline_with_the_violating_pair() {
    for e in exercises() {
        if !e
            .see
            .iter()
            .any(|s| s.contains("negative control exposes") || s.contains("STALE"))
        {
            continue;
        }
        let words: Vec<&str> = e.command.split_whitespace().collect();
        let (_, out) = leaselab_in(&root(), &words[1..]);
        let ts = timelines(&out);
        assert!(
            ts.iter()
                .any(|t| t.iter().filter(|l| l.contains('◀')).count() >= 2
                    && t.last().is_some_and(|v| v.starts_with('✗'))),
            "{}: no timeline marks a violating pair:\n{out}",
            e.title
        );
    }
}
