//! `leaselab envelope`: the table of the safety envelope ([`leaselab_sim::envelope`]) and the
//! HTML picture of its boundary case.

use crate::args::Exit;
use crate::error::{CliError, FileOp};
use leaselab_model::FenceMode;
use leaselab_sim::envelope::{Boundary, Envelope, Probe};
use leaselab_sim::SimOptions;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// `leaselab envelope`'s arguments.
#[derive(clap::Args, Debug)]
pub struct EnvelopeArgs {
    /// The resource's fence.
    #[arg(long, value_enum, default_value_t = FenceMode::Off)]
    pub fence: FenceMode,
    /// Also search the holder's safety margin under a slow clock.
    #[arg(long)]
    pub margin: bool,
    /// Chubby's lock-delay on the lease table: an expired lease is taken over only this
    /// long after its expiry (0: none, the source design).
    /// 0 to 600,000 (ten minutes).
    #[arg(long, default_value_t = 0, value_name = "MS",
          value_parser = clap::value_parser!(u64).range(0..=600_000))]
    pub lock_delay_ms: u64,
    /// Write the HTML picture of the boundary case.
    #[arg(long, value_name = "OUT.html")]
    pub html: Option<PathBuf>,
    /// Write the boundary case as a trace (`leaselab explain FILE`, `leaselab sim
    /// --from-trace FILE`).
    #[arg(long, value_name = "FILE")]
    pub trace_out: Option<PathBuf>,
}

/// `leaselab envelope`: the table, then the picture and the trace of the boundary case.
pub fn main(a: EnvelopeArgs) -> Exit {
    let (table, found) = run(a.fence, a.margin, a.lock_delay_ms);
    print!("{table}");
    let mut said = Ok(String::new());
    if let Some(out) = a.html {
        said = write_html(&found, &out);
    }
    if let (Ok(s), Some(out)) = (&said, a.trace_out) {
        said = write_trace(&found, &out).map(|t| format!("{s}{t}"));
    }
    crate::args::print_or_fail("envelope", said)
}

/// Runs the searches (`margin` too when asked) and returns the printed table and the
/// boundaries.
pub fn run(fence: FenceMode, margin: bool, lock_delay_ms: u64) -> (String, Vec<Boundary>) {
    let env = Envelope::new(SimOptions {
        fence,
        lock_delay_ms,
        ..SimOptions::default()
    });
    let mut probes = vec![Probe::Pause, Probe::Skew];
    if margin {
        probes.push(Probe::Margin);
    }
    let found: Vec<Boundary> = probes.iter().map(|p| env.search(*p)).collect();
    let o = &env.opts;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "ENVELOPE fence={} holders=2 seed={} ttl_ms={} renew_ms={} margin_ms={} lock_delay_ms={} (one fault on holder-a, bisection over simulation runs)",
        fence, env.seed, o.ttl_ms, o.renew_ms, o.margin_ms, o.lock_delay_ms
    );
    let _ = writeln!(
        s,
        "{:<8} {:<44} {:<24} {:>5} {:>12}  broke",
        "probe", "a stale write got through at", "nearest size that held", "runs", "stale writes"
    );
    for b in &found {
        let unit = b.probe.unit();
        let held = match b.probe {
            Probe::Margin => b
                .tried
                .iter()
                .filter(|(_, x)| !*x)
                .map(|(s, _)| *s)
                .filter(|s| b.found.is_none_or(|f| *s > f))
                .min(),
            _ => b
                .tried
                .iter()
                .filter(|(_, x)| !*x)
                .map(|(s, _)| *s)
                .filter(|s| b.found.is_none_or(|f| *s < f))
                .max(),
        };
        let (at, checks) = match b.found {
            Some(v) => {
                let what = match b.probe {
                    Probe::Margin => format!(
                        "margin ≤ {v} {unit} (clock {} ppm slow)",
                        env.margin_skew_ppm
                    ),
                    _ => format!("{v} {unit}"),
                };
                let checks: Vec<String> = b
                    .run
                    .report
                    .verdict()
                    .iter()
                    .map(|c| c.to_string())
                    .collect();
                (what, checks.join(","))
            }
            None => {
                // The run kept for the table is the harshest size tried.
                let (lo, hi) = env.range(b.probe);
                (
                    format!("none (tried {} sizes, {lo}–{hi} {unit})", b.tried.len()),
                    "-".to_string(),
                )
            }
        };
        if b.found.is_some() {
            // What the table says, in the JSON summary too: a stale write got through.
            crate::summary::failure(
                &format!(
                    "{}: a stale write got through at {at} ({checks} broken)",
                    b.probe.as_str()
                ),
                None,
                None,
                None,
            );
            crate::summary::described("violation");
        }
        let held = held.map_or("-".to_string(), |h| format!("{h} {unit}"));
        // Stale writes in the run shown (the boundary, or the harshest size tried), as the
        // pictures mark them: accepted or refused.
        let story =
            leaselab_picture::Story::new(&b.run.trace.history, &b.run.trace.config, &b.run.report);
        let stale = story.writes.iter().filter(|w| w.stale).count();
        let _ = writeln!(
            s,
            "{:<8} {:<44} {:<24} {:>5} {:>12}  {checks}",
            b.probe.as_str(),
            at,
            held,
            b.tried.len(),
            stale
        );
    }
    if let Some(b) = found
        .iter()
        .find(|b| b.probe == Probe::Skew && b.found.is_some())
    {
        if let Some(ppm) = b.found {
            let left = 1_000_000u64.saturating_sub(ppm).max(1);
            let _ = writeln!(
                s,
                "({ppm} ppm slow: holder-a's clock counts {} ms per real second, so its deadline passes {:.1} times later than it believes)",
                (left + 500) / 1000,
                1_000_000.0 / left as f64
            );
        }
    }
    let _ = writeln!(s, "{}", takeaway(fence, lock_delay_ms, &found));
    (s, found)
}

/// The one line to remember from the table.
fn takeaway(fence: FenceMode, lock_delay_ms: u64, found: &[Boundary]) -> String {
    let broke: Vec<String> = found
        .iter()
        .filter_map(|b| {
            b.found
                .map(|v| format!("{} {v} {}", b.probe.as_str(), b.probe.unit()))
        })
        .collect();
    if broke.is_empty() && fence == FenceMode::Off {
        // Nothing at the resource refuses anything: what held was the lease's own timing.
        format!(
            "takeaway: with fence=off no size tried let a stale write through — there is no fence: the lease held them off, since lock_delay_ms={lock_delay_ms} keeps an expired lease from being taken over for longer than any pause or clock skew tried; a fence refuses them whatever the size (leaselab envelope --fence scope)"
        )
    } else if broke.is_empty() {
        format!(
            "takeaway: with fence={fence} no size tried let a stale write through — the fence refused every stale write the holders sent, however long the pause or slow the clock"
        )
    } else {
        format!(
            "takeaway: with fence={fence} a stale write got through ({}): a lease and a local deadline only narrow the window; the scope fence closes it (leaselab envelope --fence scope)",
            broke.join(", ")
        )
    }
}

/// The boundary case the pictures show: the first probe that broke, else the pause probe.
fn boundary(found: &[Boundary]) -> Result<&Boundary, CliError> {
    found
        .iter()
        .find(|b| b.found.is_some())
        .or(found.first())
        .ok_or_else(|| CliError::Input("no probe ran".into()))
}

/// Writes the boundary case's trace to `out`, with the command that runs its setup again.
pub fn write_trace(found: &[Boundary], out: &Path) -> Result<String, CliError> {
    let run = &boundary(found)?.run;
    run.trace.save(out)?;
    Ok(format!(
        "wrote {} (run it again: leaselab sim --from-trace {})\n",
        out.display(),
        out.display()
    ))
}

/// Writes the HTML picture of the first boundary that broke (else of the pause probe's
/// largest run) to `out`.
pub fn write_html(found: &[Boundary], out: &Path) -> Result<String, CliError> {
    let b = boundary(found)?;
    let run = &b.run;
    let story = leaselab_picture::Story::new(&run.trace.history, &run.trace.config, &run.report);
    let title = match b.found {
        Some(v) => format!(
            "envelope boundary: {} {v} {} (fence={})",
            b.probe.as_str(),
            b.probe.unit(),
            run.setup.opts.fence
        ),
        None => format!(
            "envelope: no {} size broke fence={}",
            b.probe.as_str(),
            run.setup.opts.fence
        ),
    };
    std::fs::write(out, leaselab_picture::html::render(&story, &title))
        .map_err(CliError::file(FileOp::Write, out))?;
    Ok(format!("wrote {} ({title})\n", out.display()))
}
