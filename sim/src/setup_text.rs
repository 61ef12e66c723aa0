//! A run's setup as trace header lines, and back: what `leaselab sim --from-trace` reads.
//!
//! A simulation trace carries everything its run was made from, so the holders can run again on
//! exactly that setup (a shrunk plan included) — unlike `replay`, which only re-executes the
//! recorded statements:
//!
//! ```text
//! seed 3
//! config fence=off lease_table=logged …                      <- fence and lease table
//! setup sim driver=fast holders=2 faults=all safety_ms=3353 liveness_ms=0 ttl_ms=1500 renew_ms=400 margin_ms=300 tick_ms=1 latency_ms=3..42 swarm=pause-time,crash
//! setup holder name=holder-a start_ms=396 retry_ms=200 job_gap_ms=476 rpc_timeout_ms=1500
//! setup holder name=holder-b start_ms=70 retry_ms=177 job_gap_ms=444 rpc_timeout_ms=1500
//! fault pause holder=holder-a at_ms=805 dur_ms=2443 kind=freeze
//! ```
//!
//! Traces written before the `setup` lines existed carry the same settings as `fault sim …` and
//! `fault holder …` lines without `faults=` and `tick_ms=`; they are read with the defaults
//! (`all`, 1 ms) those runs had.

use crate::clock::PauseKind;
use crate::faults::{Fault, FaultKind, FaultPlan, Point};
use crate::scenario::{Driver, Setup, SimOptions};
use leaselab_model::holder::HolderCfg;
use leaselab_model::names::defaults;
use leaselab_model::{Config, DbName, Holder, LeaseName, Millis, Part, Scope};
use leaselab_trace::{Fields, TextError, Trace};

/// A setup line that cannot be read: where and what — the event text's error, since setup
/// lines are trace lines.
pub(crate) type SetupError = TextError;

/// A simulation trace read back: the setup to run again, the driver that ran it, the trace.
#[derive(Clone, Debug)]
pub struct FromTrace {
    /// The run's setup, as the simulation's own types.
    pub setup: Setup,
    /// The driver named in the trace.
    pub driver: Driver,
    /// The trace as parsed.
    pub trace: Trace,
}

impl Setup {
    /// The `setup` lines: the run's settings, then one line per holder.
    pub fn setup_lines(&self, driver: Driver) -> Vec<String> {
        let o = &self.opts;
        let mut v = vec![format!(
            "sim driver={} holders={} faults={} safety_ms={} liveness_ms={} ttl_ms={} renew_ms={} margin_ms={} tick_ms={} latency_ms={}..{} swarm={}",
            driver.as_str(),
            o.holders,
            kinds_text(&o.faults, true),
            o.safety_ms,
            o.liveness_ms,
            o.ttl_ms,
            o.renew_ms,
            o.margin_ms,
            o.tick_ms,
            self.latency_ms.0,
            self.latency_ms.1,
            kinds_text(&self.plan.kinds, false),
        )];
        for h in &self.holders {
            let mut line = format!(
                "holder name={} start_ms={} retry_ms={} job_gap_ms={} rpc_timeout_ms={}",
                h.name, h.start_ms, h.retry_ms, h.job_gap_ms, h.rpc_timeout_ms
            );
            if h.whole_writes {
                line.push_str(" whole_writes=1");
            }
            v.push(line);
        }
        v
    }

    /// The `fault` lines, one per fault, holders by name.
    pub fn fault_lines(&self) -> Vec<String> {
        let names = self.names();
        self.plan.faults.iter().map(|f| f.line(&names)).collect()
    }

    /// Reads a simulation trace's setup back (`file` is only used in error messages).
    pub fn from_trace_text(text: &str, file: &str) -> Result<FromTrace, SetupError> {
        let trace = Trace::parse(text, file)?;
        Reader { file }.read(text, trace)
    }
}

/// `all` for every kind (when `all_word`), `none` for no kind, else a comma list.
fn kinds_text(kinds: &[FaultKind], all_word: bool) -> String {
    if all_word && kinds == FaultKind::ALL {
        return "all".into();
    }
    if kinds.is_empty() {
        return "none".into();
    }
    kinds
        .iter()
        .map(|k| k.as_str())
        .collect::<Vec<_>>()
        .join(",")
}

impl Fault {
    /// The text of the fault's trace line, with holder names resolved.
    pub fn line(&self, names: &[String]) -> String {
        let h = |i: &usize| {
            names
                .get(*i)
                .cloned()
                .unwrap_or_else(|| format!("holder-{i}"))
        };
        match self {
            Fault::PauseAtPoint {
                holder,
                point,
                nth,
                dur_ms,
                kind,
            } => format!(
                "pause holder={} point={} nth={nth} dur_ms={dur_ms} kind={}",
                h(holder),
                point.as_str(),
                kind.as_str()
            ),
            Fault::PauseAtTime {
                holder,
                at,
                dur_ms,
                kind,
            } => format!(
                "pause holder={} at_ms={at} dur_ms={dur_ms} kind={}",
                h(holder),
                kind.as_str()
            ),
            Fault::Partition {
                holder,
                db,
                at,
                dur_ms,
            } => format!(
                "partition holder={} db={} at_ms={at} dur_ms={dur_ms}",
                h(holder),
                db.as_str()
            ),
            Fault::Delay {
                holder,
                db,
                at,
                dur_ms,
                extra_ms,
            } => format!(
                "delay holder={} db={} at_ms={at} dur_ms={dur_ms} extra_ms={extra_ms}",
                h(holder),
                db.as_str()
            ),
            Fault::Skew {
                holder,
                offset_ms,
                ppm,
            } => {
                format!("skew holder={} offset_ms={offset_ms} ppm={ppm}", h(holder))
            }
            Fault::Step {
                holder,
                at,
                delta_ms,
            } => {
                format!("step holder={} at_ms={at} delta_ms={delta_ms}", h(holder))
            }
            Fault::Crash { db, at, down_ms } => {
                format!("crash db={} at_ms={at} down_ms={down_ms}", db.as_str())
            }
        }
    }
}

struct Reader<'f> {
    file: &'f str,
}

impl Reader<'_> {
    fn err(&self, line: usize, field: &str, message: impl Into<String>) -> SetupError {
        TextError::at(self.file, line, field, message)
    }

    fn done(&self, f: &Fields<'_>) -> Result<(), SetupError> {
        match f.leftover() {
            Some(k) => Err(f.err(k, "unknown field")),
            None => Ok(()),
        }
    }

    fn kinds(&self, line: usize, key: &str, v: &str) -> Result<Vec<FaultKind>, SetupError> {
        FaultKind::parse_list(v).map_err(|m| self.err(line, key, m.to_string()))
    }

    fn read(&self, text: &str, trace: Trace) -> Result<FromTrace, SetupError> {
        // Line numbers of the setup and fault lines, in file order.
        let mut setup = Trace::header_lines(text, "setup");
        let mut faults = Trace::header_lines(text, "fault");
        let legacy = setup.is_empty();
        if legacy {
            // Format v1 before `setup` lines: the settings were the first `fault` lines.
            let n = faults
                .iter()
                .take_while(|(_, l)| l.starts_with("sim ") || l.starts_with("holder "))
                .count();
            setup = faults.drain(..n).collect();
        }
        let Some((&(sim_line, sim_text), holder_lines)) = setup.split_first() else {
            return Err(self.err(
                0,
                "setup",
                "no `setup sim …` line: this trace was not written by `leaselab sim`",
            ));
        };
        let words: Vec<&str> = sim_text.split(' ').collect();
        if words.first() != Some(&"sim") {
            return Err(self.err(sim_line, "setup", "expected `setup sim …` first"));
        }
        let mut f = Fields::read(self.file, sim_line, &words[1..])?;
        let driver = match f.take("driver")? {
            "fast" => Driver::Fast,
            "turmoil" => Driver::Turmoil,
            other => {
                return Err(self.err(
                    sim_line,
                    "driver",
                    format!("expected fast or turmoil, found `{other}`"),
                ))
            }
        };
        let holders: usize = f.parse("holders", "a number of holders")?;
        let allowed = match f.opt("faults") {
            Some(v) => self.kinds(sim_line, "faults", v)?,
            None if legacy => FaultKind::ALL.to_vec(),
            None => return Err(self.err(sim_line, "faults", "missing field")),
        };
        let safety_ms = f.parse("safety_ms", "milliseconds")?;
        let liveness_ms = f.parse("liveness_ms", "milliseconds")?;
        let ttl_ms = f.parse("ttl_ms", "milliseconds")?;
        let renew_ms = f.parse("renew_ms", "milliseconds")?;
        let margin_ms = f.parse("margin_ms", "milliseconds")?;
        let tick_ms = match f.opt("tick_ms") {
            Some(v) => v.parse::<u64>().ok().filter(|t| *t > 0).ok_or_else(|| {
                self.err(
                    sim_line,
                    "tick_ms",
                    format!("expected at least 1, found `{v}`"),
                )
            })?,
            None if legacy => 1,
            None => return Err(self.err(sim_line, "tick_ms", "missing field")),
        };
        let lat = f.take("latency_ms")?;
        let latency_ms = lat
            .split_once("..")
            .and_then(|(a, b)| Some((a.parse::<u64>().ok()?, b.parse::<u64>().ok()?)))
            .filter(|(a, b)| a <= b)
            .ok_or_else(|| {
                self.err(
                    sim_line,
                    "latency_ms",
                    format!("expected LO..HI, found `{lat}`"),
                )
            })?;
        let swarm_text = f.take("swarm")?;
        let swarm = self.kinds(sim_line, "swarm", swarm_text)?;
        self.done(&f)?;

        let c = &trace.config;
        let plain = Config {
            fence: c.fence,
            lease_table: c.lease_table,
            lock_delay_ms: c.lock_delay_ms,
            ..Config::default()
        };
        if *c != plain {
            return Err(self.err(
                0,
                "config",
                "the simulation runs only the default configuration apart from fence, lease_table and lock_delay_ms",
            ));
        }
        let opts = SimOptions {
            fence: c.fence,
            lease_table: c.lease_table,
            holders,
            faults: allowed,
            safety_ms,
            liveness_ms,
            ttl_ms,
            renew_ms,
            margin_ms,
            tick_ms,
            lock_delay_ms: c.lock_delay_ms,
        };
        let mut cfgs = Vec::new();
        for &(n, text) in holder_lines {
            let words: Vec<&str> = text.split(' ').collect();
            if words.first() != Some(&"holder") {
                return Err(self.err(n, "setup", "expected `setup holder …`"));
            }
            let mut f = Fields::read(self.file, n, &words[1..])?;
            let name = f.take("name")?;
            if cfgs.iter().any(|h: &HolderCfg| h.name.as_str() == name) {
                return Err(self.err(n, "name", format!("holder `{name}` named twice")));
            }
            let cfg = HolderCfg {
                name: Holder::new(name),
                lease: LeaseName::new(defaults::LEASE),
                scope: Scope::new(defaults::SCOPE),
                parts: vec![Part::new(defaults::SUMMARY), Part::new(defaults::DETAIL)],
                ttl_ms,
                renew_ms,
                margin_ms,
                start_ms: f.parse("start_ms", "milliseconds")?,
                retry_ms: f.parse("retry_ms", "milliseconds")?,
                job_gap_ms: f.parse("job_gap_ms", "milliseconds")?,
                rpc_timeout_ms: f.parse("rpc_timeout_ms", "milliseconds")?,
                whole_writes: match f.opt("whole_writes") {
                    None | Some("0") => false,
                    Some("1") => true,
                    Some(_) => return Err(self.err(n, "whole_writes", "expected 0 or 1")),
                },
            };
            self.done(&f)?;
            cfgs.push(cfg);
        }
        if cfgs.len() != holders {
            return Err(self.err(
                sim_line,
                "holders",
                format!("says {holders}, but {} `holder` lines follow", cfgs.len()),
            ));
        }
        let names: Vec<String> = cfgs.iter().map(|h| h.name.to_string()).collect();
        let mut plan = FaultPlan {
            kinds: swarm,
            faults: Vec::new(),
        };
        for &(n, text) in &faults {
            plan.faults.push(self.fault(n, text, &names)?);
        }
        let setup = Setup {
            seed: trace.seed,
            opts,
            plan,
            latency_ms,
            holders: cfgs,
        };
        Ok(FromTrace {
            setup,
            driver,
            trace,
        })
    }

    fn fault(&self, n: usize, text: &str, names: &[String]) -> Result<Fault, SetupError> {
        let words: Vec<&str> = text.split(' ').collect();
        let (kind, rest) = words
            .split_first()
            .ok_or_else(|| self.err(n, "fault", "empty fault line"))?;
        let mut f = Fields::read(self.file, n, rest)?;
        let holder = |r: &Self, f: &mut Fields<'_>| -> Result<usize, SetupError> {
            let h = f.take("holder")?;
            names.iter().position(|x| x == h).ok_or_else(|| {
                r.err(
                    n,
                    "holder",
                    format!(
                        "`{h}` is not one of the setup's holders ({})",
                        names.join(", ")
                    ),
                )
            })
        };
        let db = |r: &Self, f: &mut Fields<'_>| -> Result<DbName, SetupError> {
            match f.take("db")? {
                "lease" => Ok(DbName::Lease),
                "res" => Ok(DbName::Res),
                other => Err(r.err(n, "db", format!("expected lease or res, found `{other}`"))),
            }
        };
        let pause_kind = |r: &Self, f: &mut Fields<'_>| -> Result<PauseKind, SetupError> {
            match f.take("kind")? {
                "sigstop" => Ok(PauseKind::Sigstop),
                "freeze" => Ok(PauseKind::Freeze),
                other => Err(r.err(
                    n,
                    "kind",
                    format!("expected sigstop or freeze, found `{other}`"),
                )),
            }
        };
        let fault = match *kind {
            "pause" if f.has("point") => {
                let holder = holder(self, &mut f)?;
                let p = f.take("point")?;
                let point = Point::ALL
                    .into_iter()
                    .find(|x| x.as_str() == p)
                    .ok_or_else(|| {
                        self.err(
                            n,
                            "point",
                            format!(
                                "expected after-check, after-fence or before-commit, found `{p}`"
                            ),
                        )
                    })?;
                Fault::PauseAtPoint {
                    holder,
                    point,
                    nth: f.parse("nth", "a count from 1")?,
                    dur_ms: f.parse("dur_ms", "milliseconds")?,
                    kind: pause_kind(self, &mut f)?,
                }
            }
            "pause" => Fault::PauseAtTime {
                holder: holder(self, &mut f)?,
                at: Millis(f.parse("at_ms", "milliseconds")?),
                dur_ms: f.parse("dur_ms", "milliseconds")?,
                kind: pause_kind(self, &mut f)?,
            },
            "partition" => Fault::Partition {
                holder: holder(self, &mut f)?,
                db: db(self, &mut f)?,
                at: Millis(f.parse("at_ms", "milliseconds")?),
                dur_ms: f.parse("dur_ms", "milliseconds")?,
            },
            "delay" => Fault::Delay {
                holder: holder(self, &mut f)?,
                db: db(self, &mut f)?,
                at: Millis(f.parse("at_ms", "milliseconds")?),
                dur_ms: f.parse("dur_ms", "milliseconds")?,
                extra_ms: f.parse("extra_ms", "milliseconds")?,
            },
            "skew" => Fault::Skew {
                holder: holder(self, &mut f)?,
                offset_ms: f.parse("offset_ms", "signed milliseconds")?,
                ppm: f.parse("ppm", "signed parts per million")?,
            },
            "step" => Fault::Step {
                holder: holder(self, &mut f)?,
                at: Millis(f.parse("at_ms", "milliseconds")?),
                delta_ms: f.parse("delta_ms", "signed milliseconds")?,
            },
            "crash" => Fault::Crash {
                db: db(self, &mut f)?,
                at: Millis(f.parse("at_ms", "milliseconds")?),
                down_ms: f.parse("down_ms", "milliseconds")?,
            },
            other => {
                return Err(self.err(
                    n,
                    "fault",
                    format!(
                        "unknown fault `{other}`; expected pause, partition, delay, skew, step or crash"
                    ),
                ))
            }
        };
        self.done(&f)?;
        Ok(fault)
    }
}
