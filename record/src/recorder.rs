//! Recording from a service: wrap each lease call and each write in `invoke` … `complete`,
//! and the file is what `leaselab judge` reads. The recorder is shared (`&self`, one lock
//! around the output) so every task of a service can use one; lines are written whole, in the
//! order the calls reach it.
//!
//! ```
//! use leaselab_model::{Expiry, Millis, Op, Outcome, Token};
//! use leaselab_record::recorder::Recorder;
//!
//! let rec = Recorder::new(Vec::new())?;
//! // Around the service's own acquire: the recorder's clock before and after the call.
//! let call = rec.invoke("holder-a", None, 0, &Op::acquire("holder-a", 1000))?;
//! let granted = Outcome::Granted { token: Token(7), expires: Expiry::At(Millis(1000)) };
//! rec.complete(call, 2, &granted)?;
//! // A write whose answer never came (a timeout): complete it as unknown.
//! let call = rec.invoke("holder-a", None, 10, &Op::write("summary", "rows=200", 7))?;
//! rec.complete(call, 5_010, &Outcome::Indeterminate("timeout".into()))?;
//!
//! let bytes = rec.into_inner()?;
//! let text = String::from_utf8(bytes)?;
//! let back = leaselab_record::read::parse(&text, "recorded.jsonl")?;
//! // The grant, then the write: waiting from its invoke (it may have taken effect from then
//! // on) until its unknown answer.
//! assert_eq!(back.history.events.len(), 3);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::write::{completion_line, header, invoke_line, word, Head};
use leaselab_model::{Op, Outcome};
use std::io::{self, Write};
use std::sync::Mutex;

/// Writes invokes and completions as they happen.
pub struct Recorder<W: Write> {
    out: Mutex<W>,
}

/// An invoked operation waiting for its completion.
#[must_use = "complete it, with `Outcome::Indeterminate` if its answer never came"]
#[derive(Debug)]
pub struct Call {
    process: String,
    conn: Option<String>,
    word: &'static str,
}

impl<W: Write> Recorder<W> {
    /// Starts a file: writes the format's first line.
    pub fn new(mut out: W) -> io::Result<Self> {
        out.write_all(header().as_bytes())?;
        Ok(Recorder {
            out: Mutex::new(out),
        })
    }

    fn line(&self, text: &str) -> io::Result<()> {
        let mut out = self
            .out
            .lock()
            .map_err(|_| io::Error::other("a recording thread panicked while writing"))?;
        out.write_all(text.as_bytes())
    }

    /// Records that `process` (on `conn`, if it has several) sends `op` at `time_ms` on the
    /// recorder's clock.
    pub fn invoke(
        &self,
        process: &str,
        conn: Option<&str>,
        time_ms: u64,
        op: &Op,
    ) -> io::Result<Call> {
        self.invoke_at(process, conn, (time_ms, None), op)
    }

    /// [`Recorder::invoke`] with the clock read in microseconds: the line carries both
    /// (`time`, `time_us`), and merged files are ordered within a millisecond by them.
    pub fn invoke_us(
        &self,
        process: &str,
        conn: Option<&str>,
        time_us: u64,
        op: &Op,
    ) -> io::Result<Call> {
        self.invoke_at(process, conn, (time_us / 1000, Some(time_us)), op)
    }

    fn invoke_at(
        &self,
        process: &str,
        conn: Option<&str>,
        (time, time_us): (u64, Option<u64>),
        op: &Op,
    ) -> io::Result<Call> {
        let mut text = String::new();
        let head = Head {
            process,
            conn,
            time,
            time_us,
            server_time: None,
        };
        invoke_line(head, op, &mut text);
        self.line(&text)?;
        Ok(Call {
            process: process.to_string(),
            conn: conn.map(str::to_string),
            word: word(op),
        })
    }

    /// Records the answer of `call` at `time_ms`.
    pub fn complete(&self, call: Call, time_ms: u64, outcome: &Outcome) -> io::Result<()> {
        self.complete_at(call, (time_ms, None), outcome)
    }

    /// [`Recorder::complete`] with the clock read in microseconds.
    pub fn complete_us(&self, call: Call, time_us: u64, outcome: &Outcome) -> io::Result<()> {
        self.complete_at(call, (time_us / 1000, Some(time_us)), outcome)
    }

    fn complete_at(
        &self,
        call: Call,
        (time, time_us): (u64, Option<u64>),
        outcome: &Outcome,
    ) -> io::Result<()> {
        let mut text = String::new();
        let head = Head {
            process: &call.process,
            conn: call.conn.as_deref(),
            time,
            time_us,
            server_time: None,
        };
        completion_line(head, call.word, outcome, &mut text);
        self.line(&text)
    }

    /// Flushes and returns the output.
    pub fn into_inner(self) -> io::Result<W> {
        let mut out = self
            .out
            .into_inner()
            .map_err(|_| io::Error::other("a recording thread panicked while writing"))?;
        out.flush()?;
        Ok(out)
    }
}
