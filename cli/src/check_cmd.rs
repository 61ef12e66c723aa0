//! `leaselab check`: the bounded exhaustive search ([`leaselab_explore`]) from the command
//! line — the bounds, the result, and a violation's shortest counterexample as a trace with
//! the commands that replay it on the model and diff it on PostgreSQL.

use crate::args::Exit;
use crate::error::CliError;
use leaselab_checkers::sometimes::Sometimes;
use leaselab_explore::search::{self, Found, Options, Order, Progress, Stopped};
use leaselab_explore::system::Action;
use leaselab_explore::system::LeaseSystem;
use leaselab_explore::trace::{search_verdict, to_trace_steps};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The one-line description of a search's bounds.
pub fn describe(o: &Options) -> String {
    let b = &o.bounds;
    format!(
        "CHECK fence={} holders={} lease_table={} crash={} max_ticks={} tick_ms={} ttl={} renew={} margin={} parts={} acquires={} skew={}/{} {} threads={}{}",
        b.fence,
        b.holders,
        b.lease_table.as_str(),
        b.crash,
        b.max_ticks,
        b.tick_ms,
        b.ttl,
        b.renew,
        b.margin,
        b.parts,
        b.acquires,
        b.slow.0,
        b.slow.1,
        match o.order {
            Order::Bfs => "bfs",
            Order::Dfs => "dfs",
        },
        o.threads,
        if o.symmetry { " symmetry" } else { "" }
    )
}

/// The `leaselab check` command that searches these bounds again.
pub fn command(o: &Options) -> String {
    let b = &o.bounds;
    let d = leaselab_explore::system::Bounds::default();
    let mut c = format!("leaselab check --fence {}", b.fence);
    if b.holders != d.holders {
        c.push_str(&format!(" --holders {}", b.holders));
    }
    if b.lease_table != d.lease_table {
        c.push_str(&format!(" --lease-table {}", b.lease_table.as_str()));
    }
    if b.crash {
        c.push_str(" --crash");
    }
    if b.max_ticks != d.max_ticks {
        c.push_str(&format!(" --max-ticks {}", b.max_ticks));
    }
    if b.parts != d.parts {
        c.push_str(&format!(" --parts {}", b.parts));
    }
    if b.slow != d.slow {
        c.push_str(&format!(" --skew {}/{}", b.slow.0, b.slow.1));
    }
    c
}

/// `leaselab check`'s arguments.
#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    /// The resource's fence.
    #[arg(long, value_enum, default_value_t = leaselab_model::FenceMode::Scope)]
    pub fence: leaselab_model::FenceMode,
    /// Holders (1–3; 3 uses depth-first search with symmetry reduction unless --bfs).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u8).range(1..=3))]
    pub holders: u8,
    /// The last tick database time may reach (a tick is 100 ms; the TTL is 15 ticks, so a lease can expire from --max-ticks 16 on).
    #[arg(long, default_value_t = leaselab_explore::system::Bounds::default().max_ticks)]
    pub max_ticks: u8,
    /// A crash-restart of both databases is an action (at most one).
    #[arg(long)]
    pub crash: bool,
    /// The lease table's durability (unlogged with --crash: the I2 negative control).
    #[arg(long, value_enum, default_value_t = leaselab_model::LeaseDurability::Logged)]
    pub lease_table: leaselab_model::LeaseDurability,
    /// Breadth-first (default for 1–2 holders): every counterexample is a shortest one.
    #[arg(long, conflicts_with = "dfs")]
    pub bfs: bool,
    /// Depth-first (default for 3 holders, with symmetry reduction).
    #[arg(long)]
    pub dfs: bool,
    /// Worker threads, 1 to 1,024.
    #[arg(long, default_value_t = 1, value_parser = parse_threads)]
    pub threads: usize,
    /// Parts each job writes (1 or 2).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u8).range(1..=2))]
    pub parts: u8,
    /// holder-a's clock runs at N/D of the database clock's rate (e.g. 1/2: half as fast;
    /// its renewer and local deadline stretch).
    #[arg(long, value_name = "N/D", value_parser = parse_rate)]
    pub skew: Option<(u8, u8)>,
    /// Write the shortest counterexample as a trace.
    #[arg(long, value_name = "FILE")]
    pub trace_out: Option<PathBuf>,
    /// Open stateright's Explorer on ADDR (e.g. 127.0.0.1:3000) instead of searching.
    #[arg(long, value_name = "ADDR", conflicts_with_all = ["trace_out", "all", "max_states", "max_memory_mb", "threads"])]
    pub serve: Option<String>,
    /// Explore every state and report every property (default: stop at the first
    /// violation, as TLC does).
    #[arg(long)]
    pub all: bool,
    /// Stop after this many states (generated, with repeats); the result then says the
    /// search was cut short.
    #[arg(long, value_name = "N", value_parser = parse_max_states)]
    pub max_states: Option<usize>,
    /// Stop when the process's resident memory passes this many MiB (1 or more).
    #[arg(long, value_name = "MIB", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_memory_mb: Option<u64>,
}

/// Runs `leaselab check` as its arguments say: the Explorer with `--serve`, else the search.
pub fn main(a: CheckArgs) -> Exit {
    let CheckArgs {
        fence,
        holders,
        max_ticks,
        crash,
        lease_table,
        bfs,
        dfs,
        threads,
        parts,
        skew,
        trace_out,
        serve,
        all,
        max_states,
        max_memory_mb,
    } = a;
    let bounds = leaselab_explore::system::Bounds {
        holders: holders as usize,
        fence,
        lease_table,
        crash,
        max_ticks,
        parts,
        slow: skew.unwrap_or((1, 1)),
        ..Default::default()
    };
    if let Some(addr) = serve {
        if let Err(e) = can_serve(&addr) {
            eprintln!("leaselab check: {e}");
            return Exit::Usage;
        }
        print!("{}", serve_intro(&bounds, &addr));
        leaselab_explore::search::serve(&bounds, &addr);
        return Exit::Clean;
    }
    let order = if dfs || (holders == 3 && !bfs) {
        Order::Dfs
    } else {
        Order::Bfs
    };
    let o = Options {
        threads,
        symmetry: order == Order::Dfs && holders > 1,
        all,
        max_states,
        max_memory_mb,
        ..Options::new(bounds, order)
    };
    match run(&o, trace_out.as_deref()) {
        Ok((text, exit)) => {
            print!("{text}");
            exit
        }
        Err(e) => {
            eprintln!("leaselab check: {e}");
            Exit::Usage
        }
    }
}

/// `--threads`: 1 to 1,024 (0 would search with none).
fn parse_threads(s: &str) -> Result<usize, CliError> {
    match s.parse::<usize>() {
        Ok(n @ 1..=1024) => Ok(n),
        _ => Err(CliError::Input(format!(
            "`{s}`: expected a number of threads from 1 to 1024"
        ))),
    }
}

/// `--max-states`: 1 or more (0 would cut the search before its first state).
fn parse_max_states(s: &str) -> Result<usize, CliError> {
    match s.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(CliError::Input(format!(
            "`{s}`: expected a number of states, 1 or more"
        ))),
    }
}

/// `N/D` with 1 <= N, D <= 10: a clock rate as a fraction.
pub fn parse_rate(s: &str) -> Result<(u8, u8), CliError> {
    let (n, d) = s
        .split_once('/')
        .ok_or_else(|| CliError::Input(format!("`{s}`: expected N/D, e.g. 1/2")))?;
    let num = |x: &str| -> Result<u8, CliError> {
        x.parse::<u8>()
            .ok()
            .filter(|v| (1..=10).contains(v))
            .ok_or_else(|| {
                CliError::Input(format!(
                    "`{x}` in `{s}`: expected a whole number from 1 to 10"
                ))
            })
    };
    Ok((num(n)?, num(d)?))
}

/// Whether `--serve ADDR` can work: an address that parses, and a port free to listen on. One
/// clear line otherwise (stateright's server would panic).
pub fn can_serve(addr: &str) -> Result<(), CliError> {
    use std::net::ToSocketAddrs;
    let mut addrs = addr.to_socket_addrs().map_err(|e| {
        CliError::Input(format!(
            "--serve {addr}: not an address to listen on ({e}); e.g. 127.0.0.1:3000"
        ))
    })?;
    let first = addrs
        .next()
        .ok_or_else(|| CliError::Input(format!("--serve {addr}: names no address")))?;
    std::net::TcpListener::bind(first)
        .map(drop)
        .map_err(|e| CliError::Input(format!("--serve {addr}: cannot listen there: {e}")))
}

/// What `check --serve` prints before it serves: the address, and — found first by a
/// breadth-first search of the same bounds (at most 20 million states) — the address that
/// opens the shortest counterexample, or how to look for one.
pub fn serve_intro(bounds: &leaselab_explore::system::Bounds, addr: &str) -> String {
    let mut o = Options::new(bounds.clone(), Order::Bfs);
    o.max_states = Some(20_000_000);
    eprintln!("searching for the shortest counterexample first (progress about once a second)");
    let mut shown = false;
    let f = search::run_with(&o, crate::interrupt::flag(), &mut |p| {
        shown = true;
        show(p)
    });
    if shown && std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        eprintln!();
    }
    let mut s = format!("stateright Explorer for these bounds: http://{addr}/ (Ctrl-C stops it)\n");
    let sys = LeaseSystem::for_explorer(bounds.clone());
    match f.violations.iter().min_by_key(|(_, a)| a.len()) {
        Some((name, actions)) => match sys.explorer_path(actions) {
            Some(path) => {
                let _ = writeln!(
                    s,
                    "the shortest counterexample ({name}, {} steps) opens at: http://{addr}/{path}\n  each step lists the action, what it returned and the state after it (times in ms); the last state says BROKEN: {name}",
                    actions.len()
                );
            }
            None => {
                let _ = writeln!(s, "(the search's counterexample is not a path of the Explorer: a defect, please report it)");
            }
        },
        None => {
            let _ = writeln!(
                s,
                "no violation within these bounds{}: click a state to see its successors, or \"Run to completion\" to let the Explorer search",
                if f.stopped.is_some() { " in the first 20 million states" } else { "" }
            );
        }
    }
    s
}

/// Progress on stderr about once a second while a search runs: rewritten in place on a
/// terminal, a line each otherwise.
fn show(p: &Progress) {
    let rate = p.unique as f64 / p.elapsed.as_secs_f64().max(1e-9);
    let line = format!(
        "  {} distinct states ({} generated, {} queued), depth {}, {:.0} states/s, {} MiB, {:.0} s",
        p.unique,
        p.states,
        p.queue,
        p.depth,
        rate,
        p.memory_mb,
        p.elapsed.as_secs_f64()
    );
    if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        eprint!("\r{line}");
    } else {
        eprintln!("{line}");
    }
}

/// The result of `leaselab check`: the text to print, and how to exit (1 a violation; 5 stopped
/// by Ctrl-C with none found; 0 otherwise, a cap stated in the text).
pub fn run(o: &Options, trace_out: Option<&Path>) -> Result<(String, Exit), CliError> {
    eprintln!(
        "searching: progress about once a second; Ctrl-C prints what was found so far{}",
        if o.all {
            ""
        } else {
            "; stops at the first violation (--all: everything)"
        }
    );
    let mut shown = false;
    let f: Found = search::run_with(o, crate::interrupt::flag(), &mut |p| {
        shown = true;
        show(p)
    });
    if shown && std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        eprintln!();
    }
    let mut s = String::new();
    let _ = writeln!(s, "{}", describe(o));
    crate::summary::count("states", f.states as u64);
    crate::summary::count("distinct_states", f.unique as u64);
    crate::summary::count("depth", f.depth as u64);
    let stats = format!(
        "{} distinct states ({} generated), depth {}, {:.1} s, {:.0} states/s",
        f.unique,
        f.states,
        f.depth,
        f.elapsed.as_secs_f64(),
        f.rate()
    );
    let reached: Vec<String> = f
        .sometimes
        .iter()
        .map(|(n, d)| match d {
            Some(k) => format!("{n} (in {k} steps)"),
            None => format!("{n} NEVER"),
        })
        .collect();
    let Some((name, actions)) = f.violations.iter().min_by_key(|(_, a)| a.len()).cloned() else {
        match f.stopped {
            None => {
                let _ = writeln!(
                    s,
                    "no violation of I1, I2, I3, acceptance, progress within the bounds: {stats}"
                );
            }
            Some(why) => {
                let _ = writeln!(
                    s,
                    "no violation found before the search was {}: {stats} — the bounds were NOT fully explored",
                    stopped_text(why)
                );
            }
        }
        let _ = writeln!(s, "sometimes: {}", reached.join(", "));
        if f.stopped.is_none() {
            if let Some(w) = proves_nothing(o, &f) {
                let _ = writeln!(s, "{w}");
            }
        }
        let exit = if f.stopped == Some(Stopped::Interrupted) {
            Exit::Interrupted
        } else {
            Exit::Clean
        };
        return Ok((s, exit));
    };
    let names: Vec<&str> = f.violations.iter().map(|(n, _)| *n).collect();
    let again = format!(
        "{}{}",
        command(o),
        trace_out.map_or(String::new(), |p| format!(" --trace-out {}", p.display()))
    );
    crate::summary::failure(
        &format!(
            "{} (shortest counterexample: {name} in {} steps)",
            names.join(", "),
            actions.len()
        ),
        trace_out,
        Some(&again),
        None,
    );
    let _ = writeln!(s, "VIOLATION {}: {stats}", names.join(", "));
    // stateright counts depth in states, the initial one being 1, and reports the deepest it
    // visited — which a breadth-first search reaches past the counterexample's end.
    let _ = writeln!(
        s,
        "(depth {} is the deepest state the search visited, the initial state being depth 1: a path of N steps ends at depth N + 1)",
        f.depth
    );
    if f.stopped_at_violation {
        let _ = writeln!(
            s,
            "(the search stopped at its first violation; --all explores every state and reports every property)"
        );
    }
    let _ = writeln!(
        s,
        "shortest counterexample: {name} in {} steps{}",
        actions.len(),
        match o.order {
            Order::Bfs => "",
            Order::Dfs => " (depth-first: not necessarily the shortest; use --bfs)",
        }
    );
    let sys = LeaseSystem::new(o.bounds.clone());
    let name_of = match o.bounds.lease_table {
        leaselab_model::LeaseDurability::Unlogged => "check-unlogged".to_string(),
        _ => format!("check-{}", o.bounds.fence),
    };
    let (mut t, counts) = to_trace_steps(&sys, &actions, &name_of)?;
    t.title = format!(
        "shortest counterexample ({name}, {} steps) of: {} --trace-out FILE",
        actions.len(),
        command(o)
    );
    let searched: Vec<String> = search_verdict(&sys, &actions)
        .iter()
        .map(|c| c.to_string())
        .collect();
    let judged: Vec<String> = t.expect.iter().map(|c| c.to_string()).collect();
    let _ = writeln!(
        s,
        "the search says broken: {}; the History checkers judge the trace: {}",
        list(&searched),
        list(&judged)
    );
    let story =
        leaselab_picture::Story::new(&t.history, &t.config, &leaselab_checkers::check(&t.history));
    s.push_str(&crate::picture_cmd::indented(&story, "  "));
    s.push_str(&steps_text(&actions, &counts, &t.history, o.bounds.tick_ms));
    if let Some(p) = trace_out {
        t.save(p)?;
        let _ = writeln!(
            s,
            "trace: {} ({} events)",
            p.display(),
            t.history.events.len()
        );
        let _ = writeln!(s, "  replay: leaselab replay {}", p.display());
        let _ = writeln!(s, "  on PostgreSQL: leaselab diff {}", p.display());
        let _ = writeln!(s, "  in plain words: leaselab explain {}", p.display());
    } else {
        let _ = writeln!(s, "(add --trace-out FILE to write it as a trace)");
    }
    Ok((s, Exit::Violation))
}

/// Every action of a counterexample, numbered as the search counts them: a run of ticks on one
/// line with the database time it reaches, each other action with the statements it ran and
/// what they returned (`#N`: the trace's event), so that which steps matter can be read off.
fn steps_text(
    actions: &[Action],
    counts: &[usize],
    h: &leaselab_model::History,
    tick_ms: u64,
) -> String {
    let mut s = format!(
        "the {} steps (a tick is {tick_ms} ms of database time; #N is the trace's event):\n",
        actions.len()
    );
    let (mut k, mut event, mut now) = (0usize, 0usize, 0u64);
    // The holders the trace has paused (held back by the search), with the pause's event.
    let mut held: Vec<(leaselab_model::Holder, u64)> = Vec::new();
    while k < actions.len() {
        if actions[k] == Action::Tick {
            let from = k;
            while k < actions.len() && actions[k] == Action::Tick {
                k += 1;
            }
            let n = (k - from) as u64;
            let before = now;
            now += n * tick_ms;
            let steps = if n == 1 {
                format!("{}", from + 1)
            } else {
                format!("{}–{}", from + 1, k)
            };
            let ticks = if n == 1 { "tick" } else { "ticks" };
            let _ = write!(s, "  {steps:>7}  {n} {ticks}: t={before} → {now} ms");
            // A holder that could have sent its next statement was held back by the search:
            // the trace pauses it at the first such tick and resumes it before its next step.
            let n_ev: usize = counts[from..k].iter().sum();
            for e in h.events.iter().skip(event).take(n_ev) {
                if e.op == leaselab_model::Op::Pause {
                    held.push((e.actor.clone(), e.seq));
                }
            }
            if !held.is_empty() {
                let names: Vec<String> = held.iter().map(|(a, _)| a.to_string()).collect();
                let at: Vec<String> = held.iter().map(|(_, q)| format!("#{q}")).collect();
                let _ = write!(
                    s,
                    " — {} took no step for these {} ms (held back by the search: paused at {})",
                    names.join(" and "),
                    n * tick_ms,
                    at.join(" and ")
                );
            }
            match n_ev {
                0 => {}
                1 => {
                    let _ = write!(s, "  #{}", event + 1);
                }
                _ => {
                    let _ = write!(s, "  #{}–#{}", event + 1, event + n_ev);
                }
            }
            event += n_ev;
            s.push('\n');
            continue;
        }
        let n = counts.get(k).copied().unwrap_or(0);
        for e in h.events.iter().skip(event).take(n) {
            if e.op == leaselab_model::Op::Resume {
                held.retain(|(a, _)| *a != e.actor);
            }
        }
        let said: Vec<String> = h
            .events
            .iter()
            .skip(event)
            .take(n)
            .map(|e| {
                let mut line = format!("{} {}", e.actor, leaselab_model::text::op_text(&e.op));
                if e.outcome != leaselab_model::Outcome::Ok || n == 1 {
                    let _ = write!(
                        line,
                        " → {}",
                        leaselab_model::text::outcome_text(&e.outcome)
                    );
                }
                line
            })
            .collect();
        let text = match (actions[k], said.is_empty()) {
            (Action::Crash, _) => format!("both databases crash and restart: {}", said.join("; ")),
            (a, true) => format!("{a:?} (no statement)"),
            (_, false) => said.join("; "),
        };
        let at = match n {
            0 => String::new(),
            1 => format!("  #{}", event + 1),
            _ => format!("  #{}–#{}", event + 1, event + n),
        };
        let _ = writeln!(s, "  {:>7}  {text}{at}", k + 1);
        event += n;
        k += 1;
    }
    s
}

fn stopped_text(why: Stopped) -> String {
    match why {
        Stopped::Interrupted => "interrupted (Ctrl-C)".into(),
        Stopped::MaxStates(n) => format!("cut at --max-states {n}"),
        Stopped::Memory(mb) => format!("cut at --max-memory-mb {mb}"),
    }
}

/// A clean result of bounds in which no stale write can even be attempted says nothing about
/// fencing: the warning, with the smallest `--max-ticks` that lets a lease expire.
fn proves_nothing(o: &Options, f: &Found) -> Option<String> {
    let attempted = f
        .sometimes
        .iter()
        .any(|(n, d)| *n == Sometimes::StaleWriteAttempted && d.is_some());
    if attempted {
        return None;
    }
    let b = &o.bounds;
    let expire = b.ttl.saturating_add(1);
    Some(if b.max_ticks < expire {
        format!(
            "WARNING: no lease can expire within --max-ticks {} (TTL {} ticks of {} ms): no stale write can be attempted, so this result says nothing about fencing; --max-ticks {expire} is the smallest bound that lets a lease expire",
            b.max_ticks, b.ttl, b.tick_ms
        )
    } else {
        "WARNING: no stale write was attempted within these bounds, so this result says nothing about fencing; raise --max-ticks (a stale write needs a pause past an expiry, then a write)".to_string()
    })
}

fn list(v: &[String]) -> String {
    if v.is_empty() {
        "none".to_string()
    } else {
        v.join(", ")
    }
}
