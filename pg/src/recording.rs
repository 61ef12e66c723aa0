//! What each process of the real-time experiment saw, written as it happens in the JSON-lines
//! history format (`leaselab_record`): every holder process records its own calls to its own
//! file, the way a service would, and `leaselab judge --merge` judges the files together with
//! the checkers alone — no model, no knowledge of the SQL.
//!
//! Times are milliseconds since an origin the parent hands to every process, read from the
//! system clock; the server runs on the same machine, so its `now()` reads that same clock, and
//! the expiries it returns are converted to the same origin. A call that fails (the server
//! raised, the connection broke) is completed as unknown: the recorder cannot tell whether it
//! took effect.

use leaselab_model::{Expiry, Millis, Op, Outcome};
use leaselab_record::recorder::Recorder;
use std::fs::File;
use std::future::Future;
use std::io;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

/// The system clock in milliseconds since the Unix epoch: the one clock every process and the
/// server share.
pub fn epoch_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// One process's record; with no file, calls run unrecorded.
pub struct Recording {
    rec: Option<Recorder<File>>,
    process: String,
    origin_ms: u64,
}

impl Recording {
    /// Records `process`'s calls to `path` (a new file), times counted from `origin_ms`.
    pub fn open(path: Option<&Path>, process: &str, origin_ms: u64) -> io::Result<Self> {
        // Unbuffered: each line is one write, so a process stopped or ended at any moment
        // leaves whole lines, and a thread still running at exit loses nothing written.
        let rec = match path {
            Some(p) => Some(Recorder::new(File::create(p)?)?),
            None => None,
        };
        Ok(Recording {
            rec,
            process: process.to_string(),
            origin_ms,
        })
    }

    /// Now, on the recording's clock.
    pub fn now(&self) -> Millis {
        Millis(epoch_ms().saturating_sub(self.origin_ms))
    }

    /// Now, on the recording's clock, in µs: what the file records, so that two processes'
    /// calls within one millisecond are still ordered when their files are merged.
    pub fn now_us(&self) -> u64 {
        let epoch_us = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as u64);
        epoch_us.saturating_sub(self.origin_ms.saturating_mul(1000))
    }

    /// A server timestamp (ms since the epoch) on the recording's clock.
    pub fn at(&self, epoch_ms: i64) -> Expiry {
        Expiry::At(Millis(
            u64::try_from(epoch_ms)
                .unwrap_or(0)
                .saturating_sub(self.origin_ms),
        ))
    }

    /// Runs `call`, recording `op` before it and its outcome (`outcome` of the answer) after;
    /// a call that errs is recorded as unknown and its error returned.
    pub async fn around<T, E: std::fmt::Display>(
        &self,
        conn: Option<&str>,
        op: &Op,
        call: impl Future<Output = Result<T, E>>,
        outcome: impl FnOnce(&T) -> Outcome,
    ) -> io::Result<Result<T, E>> {
        let pending = match &self.rec {
            Some(r) => Some(r.invoke_us(&self.process, conn, self.now_us(), op)?),
            None => None,
        };
        let answer = call.await;
        if let (Some(r), Some(p)) = (&self.rec, pending) {
            let o = match &answer {
                Ok(v) => outcome(v),
                Err(e) => Outcome::Indeterminate(e.to_string()),
            };
            r.complete_us(p, self.now_us(), &o)?;
        }
        Ok(answer)
    }

    /// A step on the client alone (the local check): recorded as done when it was taken.
    pub fn local(&self, op: &Op, outcome: &Outcome) -> io::Result<()> {
        if let Some(r) = &self.rec {
            let t = self.now_us();
            let p = r.invoke_us(&self.process, None, t, op)?;
            r.complete_us(p, t, outcome)?;
        }
        Ok(())
    }
}
