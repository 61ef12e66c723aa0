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

/// A `setup` line of a schedule that cannot be read: which one (0-based among the trace's
/// `setup` lines), which field, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetupError {
    /// The index of the line among the trace's `setup` lines.
    pub index: usize,
    /// The field (`actors`, `actor`, `kind`, `a`, `b`, or the line's kind).
    pub field: String,
    /// What is wrong.
    pub message: String,
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

    /// The schedule a trace's `setup` lines hold, with the trace's `config`: `Ok(None)` when
    /// they hold none (no `schedule` line).
    pub fn from_setup_lines(
        config: &Config,
        lines: &[String],
    ) -> Result<Option<Schedule>, SetupError> {
        let mut actors: Option<usize> = None;
        let mut intents = Vec::new();
        for (index, line) in lines.iter().enumerate() {
            let err = |field: &str, message: String| SetupError {
                index,
                field: field.to_string(),
                message,
            };
            let mut words = line.split_whitespace();
            let kind = words.next().unwrap_or_default();
            let fields: Vec<(&str, &str)> = words
                .map(|w| w.split_once('=').unwrap_or((w, "")))
                .collect();
            let value = |name: &str| -> Result<&str, SetupError> {
                fields
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| *v)
                    .ok_or_else(|| err(name, format!("missing `{name}=`")))
            };
            let small = |name: &str| -> Result<u8, SetupError> {
                let v = value(name)?;
                v.parse()
                    .map_err(|_| err(name, format!("`{v}` is not a number from 0 to 255")))
            };
            let unknown = |known: &[&str]| -> Result<(), SetupError> {
                match fields.iter().find(|(k, _)| !known.contains(k)) {
                    Some((k, _)) => Err(err(k, format!("unknown field `{k}`"))),
                    None => Ok(()),
                }
            };
            match kind {
                "schedule" => {
                    if actors.is_some() {
                        return Err(err("schedule", "a second `schedule` line".into()));
                    }
                    unknown(&["actors"])?;
                    let v = value("actors")?;
                    let n: usize = v
                        .parse()
                        .ok()
                        .filter(|n| (2..=4).contains(n))
                        .ok_or_else(|| err("actors", format!("`{v}` is not 2, 3 or 4")))?;
                    actors = Some(n);
                }
                "intent" => {
                    let Some(n) = actors else {
                        return Err(err(
                            "intent",
                            "an `intent` line before the `schedule` line".into(),
                        ));
                    };
                    unknown(&["actor", "kind", "a", "b"])?;
                    let actor = small("actor")?;
                    if usize::from(actor) >= n {
                        return Err(err(
                            "actor",
                            format!("session {actor} of a schedule of {n} (0 to {})", n - 1),
                        ));
                    }
                    let k = value("kind")?;
                    let kind =
                        Kind::ALL
                            .into_iter()
                            .find(|x| x.as_str() == k)
                            .ok_or_else(|| {
                                let names: Vec<&str> =
                                    Kind::ALL.iter().map(|x| x.as_str()).collect();
                                err(
                                    "kind",
                                    format!("unknown kind `{k}` (one of {})", names.join(", ")),
                                )
                            })?;
                    intents.push(Intent {
                        actor,
                        kind,
                        a: small("a")?,
                        b: small("b")?,
                    });
                }
                _ => {}
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

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_string).collect()
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
        let mut l = vec!["sim driver=fast".to_string()];
        l.extend(s.setup_lines());
        let back = Schedule::from_setup_lines(&s.config, &l)
            .expect("reads")
            .expect("a schedule");
        assert_eq!(back.actors, 3);
        assert_eq!(back.intents, s.intents);
        assert!(matches!(
            Schedule::from_setup_lines(&s.config, &l[..1]),
            Ok(None)
        ));
    }

    #[test]
    fn each_bad_line_names_its_field() {
        let c = Config::default();
        for (text, index, field) in [
            ("intent actor=0 kind=acquire a=0 b=0", 0, "intent"),
            ("schedule actors=5", 0, "actors"),
            ("schedule actors=2\nschedule actors=3", 1, "schedule"),
            (
                "schedule actors=2\nintent actor=2 kind=acquire a=0 b=0",
                1,
                "actor",
            ),
            (
                "schedule actors=2\nintent actor=0 kind=jump a=0 b=0",
                1,
                "kind",
            ),
            (
                "schedule actors=2\nintent actor=0 kind=acquire a=256 b=0",
                1,
                "a",
            ),
            ("schedule actors=2\nintent actor=0 kind=acquire a=1", 1, "b"),
            ("schedule actors=2 holders=2", 0, "holders"),
        ] {
            let e = Schedule::from_setup_lines(&c, &lines(text)).expect_err(text);
            assert_eq!((e.index, e.field.as_str()), (index, field), "{text}: {e:?}");
        }
    }
}
