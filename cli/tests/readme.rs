//! Every `cargo run --release -- …` command of the README runs as written: none is a usage
//! error (exit 2) or a panic (101). Each runs with `leaselab` for `cargo run --release --`, in a
//! scratch folder that sees the repository's `traces/` and `examples/`; one still running after
//! a few seconds (a sweep, the Explorer, a search on PostgreSQL) gets Ctrl-C, which must end it
//! with exit 5 — and leave no PostgreSQL server of it behind.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;

/// How long a command may run before it gets Ctrl-C.
const BUDGET: Duration = Duration::from_secs(4);

fn commands(readme: &str) -> Vec<String> {
    readme
        .lines()
        .filter_map(|l| l.strip_prefix("cargo run --release -- "))
        .map(|l| l.split("  #").next().unwrap_or(l).trim().to_string())
        .collect()
}

fn postmasters_under(dir: &Path) -> usize {
    let needle = format!("{}/", dir.display());
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains("bin/postgres") && c.contains(&needle))
        .count()
}

#[test]
fn every_readme_command_runs_as_written() {
    let root = common::root();
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    let cmds = commands(&readme);
    assert!(cmds.len() >= 30, "{} commands found", cmds.len());
    let scratch = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("readme");
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).expect("scratch");
    for d in ["traces", "examples"] {
        std::os::unix::fs::symlink(root.join(d).canonicalize().expect("dir"), scratch.join(d))
            .expect("link");
    }
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_leaselab"));
    let bin_dir = bin.parent().expect("bin dir");
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let pg = leaselab_pg::cluster::postgres_for_test("cli::every_readme_command_runs_as_written");
    let redis = leaselab_live::server::redis_for_test("cli::every_readme_command_runs_as_written");
    let etcd = leaselab_live::server::etcd_for_test("cli::every_readme_command_runs_as_written");
    let mut report = Vec::new();
    for cmd in &cmds {
        if !pg
            && (cmd.contains("--backend pg")
                || cmd.starts_with("diff")
                || cmd.starts_with("audit")
                || cmd.starts_with("live"))
            || (!redis && (cmd.contains("--store redis") || cmd.contains("--store redlock")))
            || (!etcd && cmd.contains("--store etcd"))
        {
            continue;
        }
        let t0 = Instant::now();
        let mut child = Command::new("bash")
            .arg("-c")
            // `exec`: the signal reaches leaselab itself, not the shell.
            .arg(format!("exec leaselab {cmd}"))
            .current_dir(&scratch)
            .env("PATH", &path)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("bash");
        // Read as it comes, so that what it printed is at hand even if it never ends.
        let printed = std::sync::Arc::new(std::sync::Mutex::new(Vec::<u8>::new()));
        if let Some(mut e) = child.stderr.take() {
            let printed = printed.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n) = std::io::Read::read(&mut e, &mut buf) {
                    if n == 0 {
                        break;
                    }
                    if let Ok(mut p) = printed.lock() {
                        p.extend_from_slice(&buf[..n]);
                    }
                }
            });
        }
        let stderr_now = || {
            printed
                .lock()
                .map(|p| String::from_utf8_lossy(&p).into_owned())
                .unwrap_or_default()
        };
        let mut signalled = false;
        let status = loop {
            if let Some(st) = child.try_wait().expect("wait") {
                break st;
            }
            if !signalled && t0.elapsed() > BUDGET {
                let _ = Command::new("kill")
                    .args(["-INT", &child.id().to_string()])
                    .status();
                signalled = true;
            }
            if t0.elapsed() >= Duration::from_secs(180) {
                // What it was doing, for the next look: its processes and what it printed.
                let ps = Command::new("ps")
                    .args(["-eo", "pid,ppid,stat,etime,wchan:20,args"])
                    .output()
                    .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                    .unwrap_or_default();
                let ps: Vec<&str> = ps
                    .lines()
                    .filter(|l| l.contains("leaselab") || l.contains("postgres"))
                    .collect();
                let _ = child.kill();
                let _ = child.wait();
                let err = stderr_now();
                panic!(
                    "`{cmd}` did not end within 3 minutes of its start (Ctrl-C after {} s)\nits stderr:\n{err}\nprocesses:\n{}",
                    BUDGET.as_secs(),
                    ps.join("\n")
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        // Its stderr is whole once the reader saw its end (a second at most after the exit).
        let t_end = Instant::now();
        let err = loop {
            let done = std::sync::Arc::strong_count(&printed) == 1;
            if done || t_end.elapsed() > Duration::from_secs(5) {
                break stderr_now();
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let code = status.code();
        // The Explorer's port taken by something else on this machine is not the README's fault.
        let port_taken = err.contains("--serve") && err.contains("cannot listen there");
        // The exit statuses the README documents, but usage errors; 5 only after Ctrl-C.
        let ok = match code {
            Some(0 | 1 | 3 | 4 | 6) => true,
            Some(5) => signalled,
            Some(2) => port_taken,
            _ => false,
        };
        if !ok {
            report.push(format!("`{cmd}`: exit {code:?}: {}", err.trim()));
        }
    }
    assert!(
        report.is_empty(),
        "README commands that failed:\n{}",
        report.join("\n")
    );
    assert_eq!(
        postmasters_under(&scratch),
        0,
        "servers left under {}",
        scratch.display()
    );
}

/// Every picture the README and EXERCISES.md show is committed.
#[test]
fn every_picture_the_docs_show_exists() {
    let root = common::root();
    let mut n = 0;
    for doc in ["README.md", "EXERCISES.md"] {
        let text = std::fs::read_to_string(root.join(doc)).expect("doc");
        for link in text.split("](").skip(1).filter_map(|r| r.split(')').next()) {
            if link.ends_with(".png") {
                assert!(root.join(link).is_file(), "{doc}: {link} is missing");
                n += 1;
            }
        }
    }
    assert!(n >= 6, "{n} pictures");
}

/// Every relative link of the repository's Markdown files resolves to a file, and every
/// `docs/….md`, `README.md`, `EXERCISES.md` or `BENCHMARKS.md` a source comment names exists:
/// a doc that points nowhere is found here, not by a reader.
#[test]
fn every_doc_link_resolves() {
    let root = common::root();
    let mut docs: Vec<PathBuf> = [
        "README.md",
        "EXERCISES.md",
        "BENCHMARKS.md",
        "traces/README.md",
    ]
    .iter()
    .map(|d| root.join(d))
    .collect();
    for e in std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .flatten()
    {
        if e.path().extension().is_some_and(|x| x == "md") {
            docs.push(e.path());
        }
    }
    let mut links = 0;
    for doc in &docs {
        let text =
            std::fs::read_to_string(doc).unwrap_or_else(|e| panic!("{}: {e}", doc.display()));
        let dir = doc.parent().expect("a folder");
        for link in text.split("](").skip(1).filter_map(|r| r.split(')').next()) {
            let target = link.split('#').next().unwrap_or("");
            if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            assert!(
                dir.join(target).exists(),
                "{}: link `{link}` resolves to nothing",
                doc.display()
            );
            links += 1;
        }
    }
    assert!(links > 10, "{links} links");
    // Source comments that name a document of the repository.
    let mut named = 0;
    let mut stack = vec![root.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if p.is_dir() {
                if !name.starts_with('.') && name != "target" && name != "fuzz" {
                    stack.push(p);
                }
                continue;
            }
            // This file names the documents it looks for.
            if p.extension().is_none_or(|x| x != "rs") || p.ends_with("cli/tests/readme.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&p).unwrap_or_default();
            for word in text.split(|c: char| c.is_whitespace() || "`()[],;:'\"".contains(c)) {
                let word = word.trim_end_matches('.');
                // A document under docs/, or a top-level one (an upper-case name: README.md…).
                let is_doc = word.strip_suffix(".md").is_some_and(|stem| {
                    stem.starts_with("docs/")
                        || (!stem.is_empty()
                            && stem.chars().all(|c| c.is_ascii_uppercase() || c == '_'))
                });
                if is_doc {
                    assert!(
                        root.join(word).exists(),
                        "{}: names `{word}`, which is not in the repository",
                        p.display()
                    );
                    named += 1;
                }
            }
        }
    }
    assert!(named > 5, "{named} names");
}

/// The README's own figures, checked against what they count: the envelope block is what
/// `envelope --fence off --margin` prints; the mistakes it counts are the rows of its table and
/// the specs in `examples/leases/` (beside the two correct ones); the fuzz targets it counts
/// are the rows of its table and the binaries in `fuzz/fuzz_targets/`.
#[test]
fn the_readmes_figures_are_true() {
    let root = common::root();
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    let words = [
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        "eleven", "twelve", "thirteen", "fourteen", "fifteen",
    ];
    // The envelope block.
    let block: String = readme
        .lines()
        .skip_while(|l| !l.starts_with("ENVELOPE fence=off"))
        .take_while(|l| !l.starts_with("```"))
        .map(|l| format!("{l}\n"))
        .collect();
    let (code, shown) = common::leaselab(&["envelope", "--fence", "off", "--margin"]);
    assert_eq!(code, 0, "{shown}");
    assert_eq!(block, shown, "the README's envelope block");
    // The mistakes.
    let rows = |header: &str| -> Vec<String> {
        readme
            .lines()
            .skip_while(|l| !l.starts_with(header))
            .skip(2)
            .take_while(|l| l.starts_with('|'))
            .map(str::to_string)
            .collect()
    };
    let mistakes = rows("| spec | what is wrong |");
    let specs = std::fs::read_dir(root.join("examples/leases"))
        .expect("examples/leases")
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "toml"))
        })
        .count();
    assert_eq!(
        mistakes.len(),
        specs - 2,
        "seed.toml and lease-row-share.toml are correct"
    );
    let said = format!("and {}\nmistakes", words[mistakes.len()]);
    assert!(readme.contains(&said), "the README says `{said}`");
    assert!(
        readme.contains(&format!(
            "the source design, a correct design written differently, and {} mistakes",
            words[mistakes.len()]
        )),
        "the layout table's count"
    );
    // The fuzz targets.
    let targets = rows("| target | input | a finding is |");
    let binaries = std::fs::read_dir(root.join("fuzz/fuzz_targets"))
        .expect("fuzz/fuzz_targets")
        .count();
    assert_eq!(targets.len(), binaries);
    let said = words[binaries];
    let said = format!("{}{} targets", said[..1].to_uppercase(), &said[1..]);
    assert!(readme.contains(&said), "the README says `{said}`");
}
