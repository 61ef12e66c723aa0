//! `leaselab sim`: one seed (or one trace's setup) with its timeline, or a sweep that streams
//! its failures to disk, shows live progress and stops cleanly on Ctrl-C.

use crate::args::{Exit, RunArgs};
use crate::error::{CliError, FileOp};
use leaselab_sim::sweep::{sweep_streaming, Failure, Seeds, SweepSpec};
use leaselab_sim::{run_setup, Driver, Setup, SimOptions, SimRun};
use leaselab_trace::event_line;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// Parses `A..B` (B exclusive; `A..` runs to the largest seed).
pub fn parse_range(s: &str) -> Result<(u64, u64), CliError> {
    let (a, b) = s
        .split_once("..")
        .ok_or_else(|| CliError::Input(format!("expected A..B, found `{s}`")))?;
    let a: u64 = a
        .parse()
        .map_err(|_| CliError::Input(format!("`{a}` is not a seed")))?;
    let b: u64 = if b.is_empty() {
        u64::MAX
    } else {
        b.parse()
            .map_err(|_| CliError::Input(format!("`{b}` is not a seed")))?
    };
    if b <= a {
        return Err(CliError::Input(format!("empty range {a}..{b}")));
    }
    Ok((a, b))
}

/// Parses `K/N`.
pub fn parse_shard(s: &str) -> Result<(u64, u64), CliError> {
    let (k, n) = s
        .split_once('/')
        .ok_or_else(|| CliError::Input(format!("expected K/N, found `{s}`")))?;
    let number = |x: &str| {
        x.parse::<u64>()
            .map_err(|_| CliError::Input(format!("`{x}` is not a number")))
    };
    let (k, n) = (number(k)?, number(n)?);
    if n == 0 || k >= n {
        return Err(CliError::Input(format!("need 0 <= K < N, found {k}/{n}")));
    }
    Ok((k, n))
}

/// A readable timeline of a run.
pub fn timeline(run: &SimRun) -> String {
    let mut s = String::new();
    for e in &run.trace.history.events {
        let line = event_line(e);
        let _ = writeln!(s, "  {line}");
    }
    s
}

/// The short timeline of a run's key events (at most 12 lines), indented.
fn picture(run: &SimRun, indent: &str) -> String {
    let story = leaselab_picture::Story::new(&run.trace.history, &run.trace.config, &run.report);
    crate::picture_cmd::indented(&story, indent)
}

fn verdict_lines(run: &SimRun) -> String {
    let mut s = String::new();
    for e in &run.driver_errors {
        let _ = writeln!(s, "DRIVER ERROR {e}");
    }
    if run.report.violations.is_empty() {
        let _ = writeln!(s, "safety: I1 I2 I3 acceptance final all hold");
    }
    for v in &run.report.violations {
        let _ = writeln!(s, "VIOLATION {v}");
    }
    match &run.liveness {
        Ok(()) => {
            let _ = writeln!(s, "liveness: ok");
        }
        Err(e) => {
            let _ = writeln!(s, "LIVENESS FAILED: {e}");
        }
    }
    let _ = writeln!(s, "sometimes (occurrences): {}", run.report.sometimes);
    s
}

/// The exit class of one run.
pub fn exit_of(run: &SimRun) -> Exit {
    if !run.driver_errors.is_empty() {
        Exit::Usage
    } else if !run.report.violations.is_empty() {
        Exit::Violation
    } else if run.liveness.is_err() {
        Exit::Liveness
    } else {
        Exit::Clean
    }
}

/// The command that reproduces `run`: its seed command when the seed derives its setup, else
/// a run of the trace file it was (or will be) saved as.
pub fn reproduce(run: &SimRun, file: Option<&Path>) -> String {
    match (run.setup.command(run.driver), file) {
        (Some(c), _) => c,
        (None, Some(f)) => format!("leaselab sim --from-trace {}", f.display()),
        (None, None) => format!(
            "(an edited setup of seed {}: save it with --trace-out FILE, then leaselab sim --from-trace FILE)",
            run.setup.seed
        ),
    }
}

/// Where a single run's setup came from: a seed, or a trace file (with the driver it names).
#[derive(Clone, Copy, Debug)]
pub enum Source<'a> {
    /// `--seed N`: derived from the seed.
    Seed,
    /// `--from-trace FILE`: read from the file, which was run by this driver.
    Trace(&'a Path, Driver),
}

/// How much of a single run `sim` prints besides its setup and verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Detail {
    /// `--quiet`: a picture only when the run failed.
    Quiet,
    /// The default: the run's timeline picture (at most 12 lines), as every other command
    /// draws a run.
    Picture,
    /// `--events`: every event of the history too, before the picture.
    Events,
}

/// One run (a seed's, or a trace's setup run again): setup, timeline, verdict.
pub fn one(setup: Setup, driver: Driver, detail: Detail, source: Source<'_>) -> (String, SimRun) {
    let run = run_setup(setup, driver);
    let mut s = String::new();
    let again = match (run.setup.command(driver), source) {
        (Some(c), _) => c,
        (None, Source::Trace(f, recorded)) => {
            let mut c = format!("leaselab sim --from-trace {}", f.display());
            if driver != recorded {
                c.push_str(&format!(" --driver {}", driver.as_str()));
            }
            c
        }
        (None, Source::Seed) => reproduce(&run, None),
    };
    let _ = writeln!(s, "SEED {} :: {again}", run.setup.seed);
    for l in run.trace.setup.iter().chain(&run.trace.faults) {
        let _ = writeln!(s, "  {l}");
    }
    let events = run.trace.history.events.len();
    if detail == Detail::Events {
        let _ = writeln!(s, "events ({events}):");
        s.push_str(&timeline(&run));
    }
    if detail != Detail::Quiet || run.failed() {
        let _ = writeln!(s, "timeline ({events} events; the telling ones):");
        s.push_str(&picture(&run, "  "));
        if detail != Detail::Events {
            let _ = writeln!(s, "  (every event: add --events)");
        }
    }
    s.push_str(&verdict_lines(&run));
    if run.failed() {
        let _ = writeln!(s, "reproduce: {again}");
    }
    (s, run)
}

fn save(path: &Path, run: &SimRun) -> Result<(), CliError> {
    Ok(run.trace.save(path)?)
}

/// The sweep's own folder under `--out`: one per seed range, fence, driver and shard, so a
/// later sweep never leaves an earlier sweep's failures looking current.
pub fn sweep_dir(out: &Path, seeds: Seeds, opts: &SimOptions, driver: Driver) -> PathBuf {
    let mut name = format!(
        "{}-{}-seeds-{}",
        opts.fence,
        driver.as_str(),
        range_text(seeds.start, seeds.end)
    );
    if seeds.shard.1 > 1 {
        name.push_str(&format!("-shard-{}-of-{}", seeds.shard.0, seeds.shard.1));
    }
    out.join(name)
}

/// A seed range as the command line spells it: `A..B`, or `A..` for an open one.
pub fn range_text(start: u64, end: u64) -> String {
    if end == u64::MAX {
        format!("{start}..")
    } else {
        format!("{start}..{end}")
    }
}

/// The command line of a sweep (written to its manifest, and printed as the resume point):
/// every option that shapes what it runs and where it writes.
pub fn sweep_command(
    seeds: Seeds,
    opts: &SimOptions,
    driver: Driver,
    out: &Path,
    shrink: bool,
    caps: Caps,
) -> String {
    let mut c = format!(
        "leaselab sim --seeds {} {}",
        range_text(seeds.start, seeds.end),
        opts.flags(driver)
    );
    if seeds.shard.1 > 1 {
        c.push_str(&format!(" --shard {}/{}", seeds.shard.0, seeds.shard.1));
    }
    c.push_str(&format!(" --out {}", out.display()));
    if !shrink {
        c.push_str(" --no-shrink");
    }
    if let Some(n) = caps.max_failures {
        c.push_str(&format!(" --max-failures {n}"));
    }
    if let Some(n) = caps.max_trace_bytes {
        c.push_str(&format!(" --max-trace-bytes {n}"));
    }
    c
}

/// Limits that end a sweep cleanly: a `--fence off` sweep finds a failure in most seeds and
/// would otherwise write traces as fast as the disk takes them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Caps {
    /// Stop after this many failing seeds.
    pub max_failures: Option<u64>,
    /// Stop once this many bytes of traces are written.
    pub max_trace_bytes: Option<u64>,
}

impl Caps {
    /// The cap reached after `failures` failures and `bytes` bytes of traces, if one is.
    fn reached(&self, failures: u64, bytes: u64) -> Option<String> {
        if let Some(n) = self.max_failures.filter(|n| failures >= *n) {
            return Some(format!("--max-failures {n}"));
        }
        self.max_trace_bytes
            .filter(|n| bytes >= *n)
            .map(|n| format!("--max-trace-bytes {n}"))
    }
}

/// Appends lines to the sweep's manifest, `MANIFEST` in its folder.
struct Manifest {
    path: PathBuf,
}

impl Manifest {
    fn start(dir: &Path, command: &str) -> Result<Manifest, CliError> {
        std::fs::create_dir_all(dir).map_err(CliError::file(FileOp::Create, dir))?;
        // Whatever an earlier run of this same sweep left is stale now.
        let entries = std::fs::read_dir(dir).map_err(CliError::file(FileOp::Read, dir))?;
        for e in entries.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "trace") {
                std::fs::remove_file(&p).map_err(CliError::file(FileOp::Remove, &p))?;
            }
        }
        let m = Manifest {
            path: dir.join("MANIFEST"),
        };
        std::fs::write(
            &m.path,
            format!("# leaselab sweep manifest: every failure of this sweep, as it was found\ncommand {command}\n"),
        )
        .map_err(CliError::file(FileOp::Write, &m.path))?;
        Ok(m)
    }

    /// Goes on with the sweep whose manifest is in `dir`, if it stopped early: the seed to go on
    /// from (its last `status … resume_at=N`), with its failures before that seed kept — and
    /// those at or after it dropped from the manifest (rewritten whole, then renamed over it),
    /// since they will be found again: a run resumed from N and killed before it wrote a
    /// status leaves N the resume point, and its failures must not count twice. `None` when
    /// there is nothing to go on with: no manifest, or no status at all (the sweep was killed
    /// before its first one, and how far it got is unknown) — it starts afresh, and says so.
    fn resume(dir: &Path, command: &str) -> Result<Option<(Manifest, Resume)>, CliError> {
        let path = dir.join("MANIFEST");
        let Ok(text) = std::fs::read_to_string(&path) else {
            return Ok(None);
        };
        let theirs = text.lines().find_map(|l| l.strip_prefix("command "));
        if theirs != Some(command) {
            return Err(CliError::Input(format!(
                "{}: a sweep of another command ({}); --resume goes on only with the same one",
                path.display(),
                theirs.unwrap_or("none")
            )));
        }
        let status = text
            .lines()
            .filter_map(|l| l.strip_prefix("status "))
            .next_back();
        let resume = match status {
            None => {
                println!(
                    "RESUME: {} has no status line (the sweep was killed before it wrote one, so how far it got is unknown): starting over",
                    path.display()
                );
                return Ok(None);
            }
            Some("complete") => Resume::Complete {
                failures: text.lines().filter(|l| l.starts_with("failure ")).count(),
            },
            Some(s) => {
                let at = s
                    .rsplit_once("resume_at=")
                    .and_then(|(_, n)| n.trim().parse::<u64>().ok())
                    .ok_or_else(|| {
                        CliError::Input(format!(
                            "{}: status `{s}` names no resume_at",
                            path.display()
                        ))
                    })?;
                Resume::From(at)
            }
        };
        let m = Manifest { path };
        if let Resume::From(at) = resume {
            let kept: String = text
                .lines()
                .filter(|l| failure_seed(l).is_none_or(|s| s < at))
                .map(|l| format!("{l}\n"))
                .collect();
            if kept.len() != text.len() {
                let tmp = m.path.with_extension("rewrite");
                std::fs::write(&tmp, kept).map_err(CliError::file(FileOp::Write, &tmp))?;
                std::fs::rename(&tmp, &m.path).map_err(CliError::file(FileOp::Write, &m.path))?;
            }
            m.add(&format!("resumed at {at}"))?;
        }
        Ok(Some((m, resume)))
    }

    fn add(&self, line: &str) -> Result<(), CliError> {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.path)
            .map_err(CliError::file(FileOp::Open, &self.path))?;
        writeln!(f, "{line}").map_err(CliError::file(FileOp::Write, &self.path))
    }
}

/// A sweep's totals over the seeds folded so far, for an abandoning handler.
#[derive(Debug, Default)]
struct Known {
    runs: u64,
    failures: u64,
    events: u64,
    /// The sweep is writing (or has written) its own summary and status.
    written: bool,
}

/// A second Ctrl-C abandoned the running seeds: what is known is still written — the summary
/// so far, the resume point (the first seed not folded), the MANIFEST's summary and status —
/// so `--resume` goes on from there.
fn abandoned(k: &Known, seeds: Seeds, manifest: &Manifest, command: &str, folder: &str) {
    if k.written {
        return;
    }
    crate::summary::count("seeds", k.runs);
    crate::summary::count("failed", k.failures);
    crate::summary::count("events", k.events);
    println!(
        "SUMMARY seeds={} failed={} events={} {folder}",
        k.runs, k.failures, k.events
    );
    let again = format!("{command} --resume");
    let _ = manifest.add(&format!(
        "summary seeds={} failed={} events={}",
        k.runs, k.failures, k.events
    ));
    if let Some(next) = (k.runs < seeds.count())
        .then(|| seeds.nth(k.runs))
        .flatten()
    {
        println!("INTERRUPTED: seeds from {next} were not run (the running ones abandoned); resume: {again}");
        crate::summary::resume(&again);
        let _ = manifest.add(&format!("status interrupted resume_at={next}"));
    }
}

/// The seed of a manifest's `failure seed=N …` line.
fn failure_seed(line: &str) -> Option<u64> {
    line.strip_prefix("failure seed=")?
        .split(' ')
        .next()?
        .parse()
        .ok()
}

/// Where `--resume` finds an earlier run of the same sweep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Resume {
    /// It stopped early: go on from this seed.
    From(u64),
    /// It finished, with this many failures.
    Complete { failures: usize },
}

fn first_problem(r: &SimRun) -> String {
    r.driver_errors
        .first()
        .map(|e| format!("DRIVER ERROR {e}"))
        .or_else(|| r.report.violations.first().map(|v| v.to_string()))
        .or_else(|| {
            r.liveness
                .as_ref()
                .err()
                .map(|e| format!("liveness failed: {e}"))
        })
        .unwrap_or_default()
}

/// Writes one failing seed's traces into the sweep's folder and prints each with the command
/// that recreates it.
/// Writes and prints one failure; returns the bytes of trace written.
fn report_failure(
    dir: &Path,
    manifest: &Manifest,
    f: &Failure,
    with_picture: bool,
) -> Result<u64, CliError> {
    let r = &f.run;
    let seed = r.setup.seed;
    println!("FAIL seed={seed} {}", first_problem(r));
    let p = dir.join(format!("seed-{seed}.trace"));
    save(&p, r)?;
    let size = |p: &Path| std::fs::metadata(p).map_or(0, |m| m.len());
    let mut bytes = size(&p);
    println!(
        "  trace: {} ({} steps, {} faults)",
        p.display(),
        r.trace.history.events.len(),
        r.setup.plan.faults.len()
    );
    let again = reproduce(r, Some(&p));
    println!("    reproduce: {again}");
    crate::summary::failure(&first_problem(r), Some(&p), Some(&again), Some(seed));
    let mut line = format!("failure seed={seed} trace={}", p.display());
    if let Some(s) = &f.shrunk {
        let p = dir.join(format!("seed-{seed}.shrunk.trace"));
        save(&p, s)?;
        bytes += size(&p);
        println!(
            "  shrunk: {} ({} steps, {} faults: {})",
            p.display(),
            s.trace.history.events.len(),
            s.setup.plan.faults.len(),
            s.trace.faults.join("; ")
        );
        println!("    reproduce: {}", reproduce(s, Some(&p)));
        line.push_str(&format!(" shrunk={}", p.display()));
    }
    if with_picture {
        let (run, p) = match &f.shrunk {
            Some(s) => (s, dir.join(format!("seed-{seed}.shrunk.trace"))),
            None => (r, p.clone()),
        };
        println!("  picture of the first failure (any trace: leaselab diagram FILE, leaselab explain FILE):");
        print!("{}", picture(run, "    "));
        println!(
            "    leaselab diagram {} --html seed-{seed}.html",
            p.display()
        );
    }
    manifest.add(&line)?;
    Ok(bytes)
}

/// How a sweep runs and where it writes, beyond its seeds and simulation options.
#[derive(Clone, Copy, Debug)]
pub struct Sweep<'a> {
    /// The folder its sweep folder goes into (`--out`).
    pub out: &'a Path,
    /// Shrink failing seeds.
    pub shrink: bool,
    /// Worker threads.
    pub jobs: usize,
    /// Limits that end it cleanly.
    pub caps: Caps,
    /// Go on with an earlier run of the same sweep (`--resume`).
    pub resume: bool,
}

/// A sweep: failures are written and printed as soon as their turn comes (stdout), progress
/// goes to stderr, the summary closes it. Returns the exit class.
pub fn many(
    seeds: Seeds,
    opts: &SimOptions,
    driver: Driver,
    how: Sweep<'_>,
) -> Result<Exit, CliError> {
    let Sweep {
        out,
        shrink,
        jobs,
        caps,
        resume,
    } = how;
    let dir = sweep_dir(out, seeds, opts, driver);
    let command = sweep_command(seeds, opts, driver, out, shrink, caps);
    let (manifest, seeds) = match resume
        .then(|| Manifest::resume(&dir, &command))
        .transpose()?
    {
        Some(Some((_, Resume::Complete { failures }))) => {
            println!(
                "RESUME: the sweep in {} is complete ({failures} failures, MANIFEST): nothing to run",
                dir.display()
            );
            return Ok(if failures > 0 {
                Exit::Violation
            } else {
                Exit::Clean
            });
        }
        Some(Some((m, Resume::From(at)))) => {
            println!(
                "RESUME: going on from seed {at} in {} (the failures before it are kept)",
                dir.display()
            );
            (m, Seeds { start: at, ..seeds })
        }
        _ => (Manifest::start(&dir, &command)?, seeds),
    };
    let mut progress = crate::progress::Progress::on_terminal();
    let (mut safety, mut driver_error) = (false, false);
    let spec = SweepSpec {
        seeds,
        opts,
        driver,
        shrink,
        jobs,
    };
    let mut first = true;
    // Stops the sweep: Ctrl-C (seen at the next failure or progress tick), or a cap reached.
    let stop = AtomicBool::new(false);
    let mut capped: Option<String> = None;
    let (mut failures, mut written) = (0u64, 0u64);
    // What a second Ctrl-C, abandoning the running seeds, writes before the process ends.
    let known = std::sync::Arc::new(std::sync::Mutex::new(Known::default()));
    {
        let (known, path, command) = (known.clone(), manifest.path.clone(), command.clone());
        let folder = format!(
            "fence={} driver={} folder={}",
            opts.fence,
            driver.as_str(),
            dir.display()
        );
        crate::interrupt::on_abandon(move || {
            let k = known
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            abandoned(
                &k,
                seeds,
                &Manifest { path: path.clone() },
                &command,
                &folder,
            );
        });
    }
    let end = sweep_streaming(
        spec,
        &stop,
        &mut |f| {
            safety |= !f.run.report.violations.is_empty();
            driver_error |= !f.run.driver_errors.is_empty();
            let with_picture = std::mem::take(&mut first);
            // Held while the failure is written: an abandoning handler writes the status after
            // it, or before it starts.
            let _k = known
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            written += report_failure(&dir, &manifest, &f, with_picture)?;
            failures += 1;
            if let Some(cap) = caps.reached(failures, written) {
                capped.get_or_insert(cap);
                stop.store(true, Ordering::SeqCst);
            }
            if crate::interrupt::requested() {
                stop.store(true, Ordering::SeqCst);
            }
            Ok::<(), CliError>(())
        },
        &mut |t, total| {
            if crate::interrupt::requested() {
                stop.store(true, Ordering::SeqCst);
            }
            {
                let mut k = known
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                (k.runs, k.failures, k.events) = (t.runs, t.failures, t.events);
            }
            progress.show(t.runs, total, "seeds", &format!("{} failing", t.failures))
        },
    );
    progress.finish();
    // From here the sweep writes its own summary and status; a handler that abandons it now
    // finds them written (or waits for them) and writes nothing.
    let mut k = known
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    k.written = true;
    let end = end?;
    let t = &end.tally;
    crate::summary::count("seeds", t.runs);
    crate::summary::count("failed", t.failures);
    crate::summary::count("events", t.events);
    println!(
        "SUMMARY seeds={} failed={} events={} fence={} driver={} folder={}",
        t.runs,
        t.failures,
        t.events,
        opts.fence,
        driver.as_str(),
        dir.display()
    );
    println!(
        "sometimes, runs in which it fired (of {}): {}",
        t.runs, t.runs_with
    );
    println!("sometimes, occurrences over all runs: {}", t.sometimes);
    // Going on is the same command with --resume: the same folder, the failures kept.
    let again = format!("{command} --resume");
    let status = match (end.resume_at, &capped) {
        (Some(next), Some(cap)) => {
            println!("CAPPED: {cap} reached; seeds from {next} were not run; to go on: {again}");
            crate::summary::resume(&again);
            format!("status capped ({cap}) resume_at={next}")
        }
        (Some(next), None) => {
            println!("INTERRUPTED: seeds from {next} were not run; resume: {again}");
            crate::summary::resume(&again);
            format!("status interrupted resume_at={next}")
        }
        (None, _) => "status complete".to_string(),
    };
    manifest.add(&format!(
        "summary seeds={} failed={} events={}",
        t.runs, t.failures, t.events
    ))?;
    manifest.add(&status)?;
    Ok(if end.resume_at.is_some() && capped.is_none() {
        Exit::Interrupted
    } else if driver_error {
        Exit::Usage
    } else if safety {
        Exit::Violation
    } else if t.failures > 0 {
        Exit::Liveness
    } else {
        Exit::Clean
    })
}

/// `leaselab sim`'s arguments.
#[derive(clap::Args)]
pub struct SimArgs {
    /// Run one seed and print its timeline.
    #[arg(long, conflicts_with_all = ["seeds", "from_trace"])]
    pub seed: Option<u64>,
    /// Sweep a range of seeds, A..B (B exclusive; `A..` runs on until stopped).
    #[arg(long, value_name = "A..B", value_parser = parse_range,
          conflicts_with = "from_trace")]
    pub seeds: Option<(u64, u64)>,
    /// Run the setup a trace file carries (settings, holders, fault plan — a shrunk plan too):
    /// the holders run again, unlike `replay`. Its driver unless --driver is given.
    #[arg(long, value_name = "FILE", conflicts_with_all = RunArgs::IDS)]
    pub from_trace: Option<PathBuf>,
    /// How the run is set up.
    #[command(flatten)]
    pub run: RunArgs,
    /// fast (discrete-event) or turmoil [default: fast; with --from-trace, the trace's].
    #[arg(long, value_enum)]
    pub driver: Option<Driver>,
    /// Run every N-th seed from K (K/N), so a sweep splits across machines.
    #[arg(long, value_name = "K/N", default_value = "0/1", value_parser = parse_shard)]
    pub shard: (u64, u64),
    /// Write the single run's trace to FILE.
    #[arg(long, value_name = "FILE")]
    pub trace_out: Option<PathBuf>,
    /// Folder for failing traces of a sweep (each sweep writes into its own sub-folder, with a
    /// MANIFEST of what it found).
    #[arg(long, default_value = "sim-failures", value_name = "DIR")]
    pub out: PathBuf,
    /// Do not shrink failing seeds.
    #[arg(long)]
    pub no_shrink: bool,
    /// Single run: print settings and verdict only, no timeline (a failing run still draws
    /// its picture).
    #[arg(long, conflicts_with_all = ["seeds", "events"])]
    pub quiet: bool,
    /// Single run: print every event of the history as well as the timeline picture.
    #[arg(long, conflicts_with = "seeds")]
    pub events: bool,
    /// Worker threads for a sweep [default: one per core]. The result and the saved traces
    /// are the same for any number; only the wall time changes.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub jobs: Option<u64>,
    /// A sweep stops cleanly after N failing seeds (the summary says so, with the command
    /// that goes on from there).
    #[arg(long, value_name = "N", requires = "seeds", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_failures: Option<u64>,
    /// A sweep stops cleanly once its traces take this many bytes on disk.
    #[arg(long, value_name = "BYTES", requires = "seeds", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_trace_bytes: Option<u64>,
    /// Go on with an earlier run of this same sweep (same command, same --out) from the
    /// resume point its MANIFEST recorded, keeping its failures; a complete one is not run
    /// again; one with no status (killed) starts afresh. For retried batch jobs.
    #[arg(long, requires = "seeds")]
    pub resume: bool,
}

/// Runs `leaselab sim` as its arguments say: one seed, a trace's setup, or a sweep.
pub fn main(a: SimArgs) -> Exit {
    match run(a) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("leaselab sim: {e}");
            Exit::Usage
        }
    }
}

fn run(a: SimArgs) -> Result<Exit, CliError> {
    use {one, Source};
    let single = |setup: leaselab_sim::Setup, driver, source| -> Result<Exit, CliError> {
        let detail = match (a.quiet, a.events) {
            (true, _) => Detail::Quiet,
            (_, true) => Detail::Events,
            _ => Detail::Picture,
        };
        let (text, run) = one(setup, driver, detail, source);
        print!("{text}");
        if let Some(f) = &a.trace_out {
            run.trace.save(f)?;
            println!("trace: {}", f.display());
        }
        Ok(exit_of(&run))
    };
    if let Some(file) = &a.from_trace {
        let text = std::fs::read_to_string(file).map_err(CliError::file(FileOp::Read, file))?;
        let t = leaselab_sim::Setup::from_trace_text(&text, &file.display().to_string())?;
        let driver = a.driver.unwrap_or(t.driver);
        return single(t.setup, driver, Source::Trace(file, t.driver));
    }
    let opts = a.run.options()?;
    let driver = a.driver.unwrap_or(Driver::Fast);
    match (a.seed, a.seeds) {
        (Some(seed), _) => single(
            leaselab_sim::Setup::derive(seed, &opts),
            driver,
            Source::Seed,
        ),
        (None, Some((start, end))) => {
            let seeds = leaselab_sim::sweep::Seeds {
                start,
                end,
                shard: a.shard,
            };
            let jobs = match a.jobs {
                Some(j) => {
                    usize::try_from(j).map_err(|e| CliError::Input(format!("--jobs: {e}")))?
                }
                None => leaselab_sim::sweep::default_jobs(),
            };
            many(
                seeds,
                &opts,
                driver,
                Sweep {
                    out: &a.out,
                    shrink: !a.no_shrink,
                    jobs,
                    caps: Caps {
                        max_failures: a.max_failures,
                        max_trace_bytes: a.max_trace_bytes,
                    },
                    resume: a.resume,
                },
            )
        }
        (None, None) => Err(CliError::Input(
            "give --seed N, --seeds A..B or --from-trace FILE".into(),
        )),
    }
}
