//! Live progress of a long run on stderr: how far, how fast, what it found, when it will end.
//! On a terminal one line redrawn about once a second; otherwise (a log, CI) a line every ten
//! seconds, for the commands that promise progress there too (`diff --gen`, `diff --sim-seeds`,
//! `audit`). Standard output keeps only results.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// One run's progress line.
pub struct Progress {
    tty: bool,
    /// How often a line is printed when stderr is not a terminal (`None`: never).
    off_tty: Option<Duration>,
    started: Instant,
    last: Option<Instant>,
    shown: bool,
}

/// `LEASELAB_PROGRESS_MS`, if set, is milliseconds (a whole number from 1): a value that is not
/// would otherwise be ignored without a word, and the progress the user asked for never come.
pub fn check_env() -> Result<(), String> {
    match std::env::var("LEASELAB_PROGRESS_MS") {
        Err(std::env::VarError::NotPresent) => Ok(()),
        Ok(v) if v.trim().parse::<u64>().is_ok_and(|ms| ms >= 1) => Ok(()),
        Ok(v) => Err(format!(
            "LEASELAB_PROGRESS_MS=`{v}`: expected the milliseconds between progress lines, a whole number from 1"
        )),
        Err(std::env::VarError::NotUnicode(_)) => Err(
            "LEASELAB_PROGRESS_MS is not text: expected the milliseconds between progress lines"
                .to_string(),
        ),
    }
}

impl Progress {
    /// Shown only on a terminal (`sim`'s sweep, whose failures already go to stdout as found).
    pub fn on_terminal() -> Self {
        Progress::new(None)
    }

    /// Shown on a terminal, and as a line every ten seconds elsewhere (every
    /// `LEASELAB_PROGRESS_MS` milliseconds, if set: [`check_env`] has refused a bad value).
    pub fn always() -> Self {
        let ms = std::env::var("LEASELAB_PROGRESS_MS")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(10_000);
        Progress::new(Some(Duration::from_millis(ms)))
    }

    fn new(off_tty: Option<Duration>) -> Self {
        Progress {
            tty: std::io::stderr().is_terminal(),
            off_tty,
            started: Instant::now(),
            last: None,
            shown: false,
        }
    }

    /// `done` of `total` `unit`s, then `found` (what was found so far, in words). Drawn when
    /// its interval has passed (on a terminal, always for the last unit).
    pub fn show(&mut self, done: u64, total: u64, unit: &str, found: &str) {
        let every = match (self.tty, self.off_tty) {
            (true, _) => Duration::from_secs(1),
            (false, Some(d)) => d,
            (false, None) => return,
        };
        let now = Instant::now();
        let last = self.tty && done == total;
        if !(self.due(now, every) || last) {
            return;
        }
        self.last = Some(now);
        let secs = (now - self.started).as_secs_f64().max(1e-3);
        let rate = done as f64 / secs;
        let eta = if rate > 0.0 {
            let left = total.saturating_sub(done) as f64 / rate;
            if left > 1e9 {
                "never".to_string()
            } else {
                let s = left as u64;
                format!("{}h{:02}m{:02}s", s / 3600, s / 60 % 60, s % 60)
            }
        } else {
            "?".into()
        };
        let line = format!(
            "{done}/{total} {unit} ({:.1}%), {rate:.1} {unit}/s, {found}, ETA {eta}",
            done as f64 * 100.0 / total.max(1) as f64,
        );
        self.say(&line);
    }

    /// A line of its own kind (a phase after the counted one, e.g. shrinking), drawn on the
    /// same interval.
    pub fn note(&mut self, line: &str) {
        let every = match (self.tty, self.off_tty) {
            (true, _) => Duration::from_secs(1),
            (false, Some(d)) => d,
            (false, None) => return,
        };
        let now = Instant::now();
        if !self.due(now, every) {
            return;
        }
        self.last = Some(now);
        self.say(line);
    }

    /// Whether a line is due: on a terminal at once, then every interval; elsewhere only once
    /// a first interval has passed (a short run prints nothing).
    fn due(&self, now: Instant, every: Duration) -> bool {
        match self.last {
            Some(l) => now - l >= every,
            None => self.tty || now - self.started >= every,
        }
    }

    fn say(&mut self, line: &str) {
        if self.tty {
            eprint!("\r{line}   ");
        } else {
            eprintln!("{line}");
        }
        let _ = std::io::stderr().flush();
        self.shown = true;
    }

    /// Ends the redrawn line (nothing to do elsewhere).
    pub fn finish(&self) {
        if self.tty && self.shown {
            eprintln!();
        }
    }
}
