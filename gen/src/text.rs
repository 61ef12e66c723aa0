//! A schedule as text: the `setup` lines of the trace a failure is saved as, so that the trace
//! is enough to run exactly the schedule again (`leaselab audit SPEC --replay FILE`).
//!
//! A shrunk failure is a proptest draw; its history says what ran, but not everything that made
//! it run so: where an operation paused inside itself is derived from the intent that issued it
//! (`leaselab_pg::audit`), and the client turns intents into operations from what it observed.
//! So the intents themselves are written, one `setup intent` line each, after a
//! `setup schedule` line with the number of sessions:
//!
//! ```text
//! setup schedule actors=3
//! setup intent actor=0 kind=acquire a=3 b=1
//! setup intent actor=1 kind=write a=0 b=4
//! ```
//!
//! The configuration is the trace's `config` line. Lines of other kinds (`setup sim …`) are not
//! the schedule's and are left alone.

use crate::{Intent, Kind, Schedule};
use leaselab_model::text::{Fields, TextError};
use leaselab_model::Config;

impl Kind {
    /// Every kind, in declaration order.
    pub const ALL: [Kind; 18] = [
        Kind::Acquire,
        Kind::Renew,
        Kind::Release,
        Kind::BeginLease,
        Kind::EndLease,
        Kind::Write,
        Kind::BeginRes,
        Kind::Fence,
        Kind::Upsert,
        Kind::EndRes,
        Kind::Publish,
        Kind::Read,
        Kind::Now,
        Kind::Await,
        Kind::Disconnect,
        Kind::Crash,
        Kind::Advance,
        Kind::Contend,
    ];

    /// The kind's name in a `setup intent` line.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Acquire => "acquire",
            Kind::Renew => "renew",
            Kind::Release => "release",
            Kind::BeginLease => "begin-lease",
            Kind::EndLease => "end-lease",
            Kind::Write => "write",
            Kind::BeginRes => "begin-res",
            Kind::Fence => "fence",
            Kind::Upsert => "upsert",
            Kind::EndRes => "end-res",
            Kind::Publish => "publish",
            Kind::Read => "read",
            Kind::Now => "now",
            Kind::Await => "await",
            Kind::Disconnect => "disconnect",
            Kind::Crash => "crash",
            Kind::Advance => "advance",
            Kind::Contend => "contend",
        }
    }
}

impl Schedule {
    /// The schedule as `setup` lines (without the `setup ` word), for a trace.
    pub fn setup_lines(&self) -> Vec<String> {
        let mut lines = vec![format!("schedule actors={}", self.actors)];
        lines.extend(self.intents.iter().map(|i| {
            format!(
                "intent actor={} kind={} a={} b={}",
                i.actor,
                i.kind.as_str(),
                i.a,
                i.b
            )
        }));
        lines
    }

    /// The schedule a trace's `setup` lines hold — each with its line number in `file`
    /// (`leaselab_trace::header_lines`) — with the trace's `config`: `Ok(None)` when they hold
    /// none (no `schedule` line). The words are read by the one `key=value` reader of every
    /// trace line ([`Fields`]), so an error names the file, the line and the field.
    pub fn from_setup_lines(
        config: &Config,
        file: &str,
        lines: &[(usize, &str)],
    ) -> Result<Option<Schedule>, TextError> {
        let mut actors: Option<usize> = None;
        let mut intents = Vec::new();
        for &(line, text) in lines {
            let words: Vec<&str> = text.split_whitespace().collect();
            let Some((&kind, rest)) = words.split_first() else {
                continue;
            };
            if kind != "schedule" && kind != "intent" {
                continue;
            }
            let mut f = Fields::read(file, line, rest)?;
            let small = |f: &mut Fields<'_>, name: &str| -> Result<u8, TextError> {
                f.parse(name, "a number from 0 to 255")
            };
            match kind {
                "schedule" => {
                    if actors.is_some() {
                        return Err(f.err("schedule", "a second `schedule` line"));
                    }
                    let v = f.take("actors")?;
                    let n: usize = v
                        .parse()
                        .ok()
                        .filter(|n| (2..=4).contains(n))
                        .ok_or_else(|| f.err("actors", format!("`{v}` is not 2, 3 or 4")))?;
                    actors = Some(n);
                }
                _ => {
                    let Some(n) = actors else {
                        return Err(f.err("intent", "an `intent` line before the `schedule` line"));
                    };
                    let actor = small(&mut f, "actor")?;
                    if usize::from(actor) >= n {
                        return Err(f.err(
                            "actor",
                            format!("session {actor} of a schedule of {n} (0 to {})", n - 1),
                        ));
                    }
                    let k = f.take("kind")?;
                    let kind =
                        Kind::ALL
                            .into_iter()
                            .find(|x| x.as_str() == k)
                            .ok_or_else(|| {
                                let names: Vec<&str> =
                                    Kind::ALL.iter().map(|x| x.as_str()).collect();
                                f.err(
                                    "kind",
                                    format!("unknown kind `{k}` (one of {})", names.join(", ")),
                                )
                            })?;
                    let (a, b) = (small(&mut f, "a")?, small(&mut f, "b")?);
                    intents.push(Intent { actor, kind, a, b });
                }
            }
            if let Some(k) = f.leftover() {
                return Err(f.err(k, format!("unknown field `{k}`")));
            }
        }
        Ok(actors.map(|actors| Schedule {
            config: config.clone(),
            actors,
            intents,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<(usize, &str)> {
        text.lines().enumerate().map(|(i, l)| (i + 1, l)).collect()
    }

    #[test]
    fn a_schedule_reads_back_as_written() {
        let s = Schedule {
            config: Config::default(),
            actors: 3,
            intents: Kind::ALL
                .iter()
                .enumerate()
                .map(|(n, &kind)| Intent {
                    actor: (n % 3) as u8,
                    kind,
                    a: n as u8,
                    b: 255 - n as u8,
                })
                .collect(),
        };
        let mut text = vec!["sim driver=fast".to_string()];
        text.extend(s.setup_lines());
        let text = text.join("\n");
        let l = lines(&text);
        let back = Schedule::from_setup_lines(&s.config, "t", &l)
            .expect("reads")
            .expect("a schedule");
        assert_eq!(back.actors, 3);
        assert_eq!(back.intents, s.intents);
        assert!(matches!(
            Schedule::from_setup_lines(&s.config, "t", &l[..1]),
            Ok(None)
        ));
    }

    #[test]
    fn each_bad_line_names_its_field() {
        let c = Config::default();
        for (text, line, field) in [
            ("intent actor=0 kind=acquire a=0 b=0", 1, "intent"),
            ("schedule actors=5", 1, "actors"),
            ("schedule actors=2\nschedule actors=3", 2, "schedule"),
            (
                "schedule actors=2\nintent actor=2 kind=acquire a=0 b=0",
                2,
                "actor",
            ),
            (
                "schedule actors=2\nintent actor=0 kind=jump a=0 b=0",
                2,
                "kind",
            ),
            (
                "schedule actors=2\nintent actor=0 kind=acquire a=256 b=0",
                2,
                "a",
            ),
            ("schedule actors=2\nintent actor=0 kind=acquire a=1", 2, "b"),
            ("schedule actors=2 holders=2", 1, "holders"),
            ("schedule actors=2 actors=3", 1, "actors"),
            (
                "schedule actors=2\nintent actor=0 kind=acquire a",
                2,
                "kind",
            ),
        ] {
            let e = Schedule::from_setup_lines(&c, "t.trace", &lines(text)).expect_err(text);
            assert_eq!(
                (e.file.as_str(), e.line, e.field.as_str()),
                ("t.trace", line, field),
                "{text}: {e:?}"
            );
        }
    }
}
