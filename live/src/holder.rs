//! A holder process (`leaselab holder`): the one holder of the model crate
//! ([`leaselab_model::holder`]) — the machine the simulation and the exhaustive checker run —
//! driven in real time. Its lease calls go to the lease service through [`LeaseConn`], its
//! writes to the fenced PostgreSQL resource, each on the connection it names; its clock is
//! this process's monotonic clock. It prints one line per step for the parent and, with a
//! record file, writes every call as it happens (JSON lines, `leaselab judge`).
//!
//! The parent takes it through the code point after the local check ([`Point::AfterCheck`]):
//! there the holder says `READY` and waits for a line, its renewer still running — the moment
//! F4 stops it with SIGSTOP, and the live nemesis pauses it. `go` (or `stop`: finish this job
//! and end) lets it on; `pause` first has it record a `pause` and say `PAUSING`, and the `go`
//! after the parent resumed it records a `resume`, so the pause is in the history.

use crate::store::{LeaseConn, Store};
use crate::LiveError;
use leaselab_model::client::LocalDeadline;
use leaselab_model::holder::{Effect, HolderCfg, HolderMachine, Point};
use leaselab_model::names::defaults;
use leaselab_model::{ConnId, DbName, Holder, LeaseName, Millis, Op, Outcome, Part, Scope};
use leaselab_pg::recording::Recording;
use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio_postgres::Client;

/// When a holder process waits for its parent, and how long it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// F4's holder-a: one job, waiting for the parent once, after its first local check.
    A,
    /// F4's holder-b: one job, straight through.
    B,
    /// A live run's holder: jobs one after another until its own clock reaches `until_ms`,
    /// waiting for the parent after every local check.
    Live {
        /// When the last job may start (own clock, ms).
        until_ms: u64,
    },
}

impl Role {
    /// Whether the holder waits for the parent at `point`, having waited `waited` times.
    fn waits_at(self, point: Point, waited: u64) -> bool {
        point == Point::AfterCheck
            && match self {
                Role::A => waited == 0,
                Role::B => false,
                Role::Live { .. } => true,
            }
    }
}

/// Arguments of `leaselab holder`.
#[derive(Clone, Debug)]
pub struct HolderArgs {
    /// When it waits for the parent and how long it runs.
    pub role: Role,
    /// Holder name.
    pub name: String,
    /// The lease service.
    pub store: Store,
    /// Connection string of the resource database.
    pub res: String,
    /// Fenced (scope) or not (off).
    pub fenced: bool,
    /// TTL.
    pub ttl_ms: u64,
    /// Renew period.
    pub renew_ms: u64,
    /// Local margin.
    pub margin_ms: u64,
    /// Record this process's calls to this file (JSON lines).
    pub record: Option<PathBuf>,
    /// The recording's time 0, in ms since the epoch (the parent's, shared by every process).
    pub clock_origin_ms: u64,
}

/// A connection the holder named: to the lease service or to the resource.
#[derive(Clone)]
enum Conn {
    Lease(Arc<LeaseConn>),
    Res(Arc<Client>),
}

/// Runs one request of holder `writer` on `conn` (the connection the holder named `name`),
/// recorded: its outcome, or `Indeterminate` when the call failed (the holder then abandons
/// the connection, as it does a timed-out one).
async fn exec(
    conn: &Conn,
    rec: &Recording,
    (writer, name): (&str, &str),
    op: &Op,
    fenced: bool,
) -> Outcome {
    let call = async {
        match (conn, op) {
            (Conn::Lease(c), Op::Acquire { .. } | Op::Renew { .. } | Op::Release { .. }) => {
                c.call(op, rec).await
            }
            (Conn::Res(c), Op::Write { content, token, .. }) => Ok(
                if leaselab_pg::real::write(c, fenced, writer, token.0 as i64, content).await? {
                    Outcome::Accepted
                } else {
                    Outcome::Rejected
                },
            ),
            (_, other) => Err(LiveError::Unexpected(format!(
                "the real holder has no call for `{other}` on this connection"
            ))),
        }
    };
    match rec.around(Some(name), op, call, Outcome::clone).await {
        Ok(Ok(o)) => o,
        Ok(Err(e)) => Outcome::Indeterminate(e.to_string()),
        Err(e) => Outcome::Indeterminate(format!("record: {e}")),
    }
}

/// The line the process prints for a reply, for the parent to read.
fn reply_line(op: &Op, o: &Outcome) -> Option<String> {
    let ok = |yes: bool| if yes { "true" } else { "false" };
    Some(match (op, o) {
        (Op::Acquire { .. }, Outcome::Granted { token, .. }) => format!("ACQUIRED token={token}"),
        (Op::Acquire { .. }, Outcome::Refused) => return None, // the holder tries again
        (Op::Write { token, .. }, Outcome::Accepted | Outcome::Rejected) => format!(
            "WRITE accepted={} token={token}",
            ok(*o == Outcome::Accepted)
        ),
        (Op::Renew { .. }, Outcome::Renewed { .. } | Outcome::Refused) => {
            format!("RENEW ok={}", ok(*o != Outcome::Refused))
        }
        (Op::Release { .. }, Outcome::Released | Outcome::Refused) => {
            format!("RELEASE ok={}", ok(*o == Outcome::Released))
        }
        (op, o) => format!("ERROR {op} => {o}"),
    })
}

/// Runs the holder process: its jobs (acquire, local check, the write, release, the renewer
/// beside it) — one for roles A and B, as many as start before `until_ms` for a live holder —
/// and returns once every call it began is answered.
pub fn holder_main(a: &HolderArgs) -> Result<(), LiveError> {
    let rt = leaselab_pg::real::runtime()?;
    let rec = Arc::new(
        Recording::open(a.record.as_deref(), &a.name, a.clock_origin_ms)
            .map_err(|e| LiveError::io("open the record file", e))?,
    );
    let cfg = HolderCfg {
        name: Holder::new(a.name.as_str()),
        lease: LeaseName::new(defaults::LEASE),
        scope: Scope::new(defaults::SCOPE),
        parts: vec![Part::new(defaults::SUMMARY)],
        ttl_ms: a.ttl_ms,
        renew_ms: a.renew_ms,
        margin_ms: a.margin_ms,
        // Longer than the experiment: no statement of it is given up.
        rpc_timeout_ms: 60_000,
        retry_ms: 50,
        job_gap_ms: match a.role {
            Role::Live { .. } => 20,
            Role::A | Role::B => 60_000,
        },
        start_ms: 0,
        // The fenced write as the source's one call (BEGIN, fence, upsert, COMMIT or ROLLBACK,
        // and the attempt log), recorded as one `write`.
        whole_writes: true,
    };
    rt.block_on(RealHolder::new(a, cfg, rec).run())
}

/// A request's id and its outcome, from the task that ran it.
type Reply = (u64, Outcome);

/// The driver of [`holder_main`].
struct RealHolder<'a> {
    a: &'a HolderArgs,
    m: HolderMachine,
    rec: Arc<Recording>,
    /// The holder's clock: time 0 is its start, on the monotonic clock and on the recording's.
    start: Instant,
    start_rec: Millis,
    conns: BTreeMap<ConnId, Conn>,
    /// How many times it has waited for the parent.
    waited: u64,
    /// The parent said `stop`: no job starts after this one.
    stopping: bool,
    /// What each awaited request asked and on which connection, to print its reply.
    asked: BTreeMap<u64, (Op, ConnId)>,
    replies: (mpsc::UnboundedSender<Reply>, mpsc::UnboundedReceiver<Reply>),
    /// The effects after the stop point, carried out once the parent says so.
    held: Option<Vec<Effect>>,
    /// The parent said `pause` (and is about to stop this process): `resume` is recorded when
    /// it lets the holder go on.
    paused: bool,
}

impl<'a> RealHolder<'a> {
    fn new(a: &'a HolderArgs, cfg: HolderCfg, rec: Arc<Recording>) -> Self {
        let start = Instant::now();
        RealHolder {
            a,
            m: HolderMachine::new(cfg),
            start_rec: rec.now(),
            rec,
            start,
            conns: BTreeMap::new(),
            waited: 0,
            stopping: false,
            paused: false,
            asked: BTreeMap::new(),
            replies: mpsc::unbounded_channel(),
            held: None,
        }
    }

    fn local(&self) -> Millis {
        Millis(self.start.elapsed().as_millis() as u64)
    }

    fn say(&self, line: &str) {
        println!("{line}");
        let _ = std::io::stdout().flush();
    }

    async fn run(mut self) -> Result<(), LiveError> {
        // The parent's lines, read on a thread of their own (a blocking read): `go`, or `stop`
        // (finish the job and end).
        let (line_tx, mut lines) = mpsc::unbounded_channel::<String>();
        std::thread::spawn(move || {
            for l in std::io::stdin().lock().lines() {
                let Ok(l) = l else { break };
                if line_tx.send(l).is_err() {
                    break;
                }
            }
        });
        // A bound on a hang, not a measure of speed: a busy machine runs the job slowly.
        let until = match self.a.role {
            Role::Live { until_ms } => Duration::from_millis(until_ms),
            Role::A | Role::B => Duration::ZERO,
        };
        let give_up = until + Duration::from_secs(120);
        let mut effects = Vec::new();
        self.m.on_timer(self.local(), &mut effects);
        self.carry(effects).await?;
        loop {
            let s = self.m.stats;
            let done = match self.a.role {
                Role::A | Role::B => s.jobs + s.aborts >= 1,
                Role::Live { .. } => {
                    (self.stopping || self.start.elapsed() >= until)
                        && self.m.state().between_jobs()
                }
            };
            if done && !self.m.awaits_reply() && self.held.is_none() {
                return Ok(());
            }
            if self.start.elapsed() > give_up {
                return Err(LiveError::Unexpected(format!(
                    "{}: the job did not end within {} s",
                    self.a.name,
                    give_up.as_secs()
                )));
            }
            let now = self.local();
            let wake = self
                .m
                .next_timer()
                .map_or(1_000, |t| t.since(now).min(1_000));
            let held = self.held.is_some();
            let mut effects = Vec::new();
            tokio::select! {
                Some((req, o)) = self.replies.1.recv() => {
                    if let Some((op, conn)) = self.asked.remove(&req) {
                        if let Some(line) = reply_line(&op, &o) {
                            self.say(&line);
                        }
                        // A call that failed on its way leaves its connection in doubt (a killed
                        // server, a broken socket): the next call on it opens a new one.
                        if matches!(o, Outcome::Indeterminate(_)) {
                            self.conns.remove(&conn);
                        }
                    }
                    self.m.on_reply(self.local(), req, &o, &mut effects);
                    self.carry(effects).await?;
                }
                Some(line) = lines.recv(), if held => {
                    // The parent is about to stop this process (SIGSTOP): recorded first, so the
                    // history shows the pause — nothing of this process runs during it.
                    if line == "pause" {
                        self.rec
                            .local(&Op::Pause, &Outcome::Ok)
                            .map_err(|e| LiveError::io("record", e))?;
                        self.paused = true;
                        self.say("PAUSING");
                        continue;
                    }
                    if std::mem::take(&mut self.paused) {
                        self.rec
                            .local(&Op::Resume, &Outcome::Ok)
                            .map_err(|e| LiveError::io("record", e))?;
                    }
                    self.stopping |= line == "stop";
                    // Resumed: what fell due while the process was stopped runs first (the
                    // renewer's overdue renew), then the write it was stopped before.
                    self.m.on_timer(self.local(), &mut effects);
                    self.carry(effects).await?;
                    let rest = self.held.take().unwrap_or_default();
                    self.carry(rest).await?;
                }
                _ = tokio::time::sleep(Duration::from_millis(wake)) => {
                    self.m.on_timer(self.local(), &mut effects);
                    self.carry(effects).await?;
                }
            }
        }
    }

    /// A new connection of kind `db`.
    async fn open(&self, db: DbName) -> Result<Conn, LiveError> {
        Ok(match db {
            DbName::Lease => Conn::Lease(Arc::new(LeaseConn::connect(&self.a.store).await?)),
            DbName::Res => Conn::Res(Arc::new(leaselab_pg::real::connect(&self.a.res).await?)),
        })
    }

    /// Carries out the holder's effects in order; at a point where it waits for the parent,
    /// holds the ones after it.
    async fn carry(&mut self, effects: Vec<Effect>) -> Result<(), LiveError> {
        let mut it = effects.into_iter();
        while let Some(e) = it.next() {
            match e {
                Effect::Send { req, db, conn, op } => {
                    let opened = match self.conns.get(&conn) {
                        Some(c) => Ok(c.clone()),
                        None => self.open(db).await,
                    };
                    self.asked.insert(req, (op.clone(), conn.clone()));
                    let (rec, tx, fenced) =
                        (self.rec.clone(), self.replies.0.clone(), self.a.fenced);
                    let writer = self.a.name.clone();
                    match opened {
                        Ok(c) => {
                            self.conns.insert(conn.clone(), c.clone());
                            tokio::spawn(async move {
                                let o = exec(&c, &rec, (&writer, conn.as_str()), &op, fenced).await;
                                let _ = tx.send((req, o));
                            });
                        }
                        Err(_) => {
                            // Never sent (the server is down): definitely not applied.
                            let refused = async { Ok::<_, LiveError>(Outcome::Unavailable) };
                            let o = match rec
                                .around(Some(conn.as_str()), &op, refused, Outcome::clone)
                                .await
                            {
                                Ok(Ok(o)) => o,
                                Ok(Err(e)) => Outcome::Indeterminate(e.to_string()),
                                Err(e) => Outcome::Indeterminate(format!("record: {e}")),
                            };
                            let _ = tx.send((req, o));
                        }
                    }
                }
                Effect::Abandon { conn, .. } => {
                    // Closed once its last statement's task lets go of it.
                    self.conns.remove(&conn);
                }
                Effect::Record(Op::Check { deadline }) => {
                    let valid = LocalDeadline { deadline }.allows(self.local());
                    // On the recording's clock, as every other time in the file.
                    let check = Op::check(Millis(self.start_rec.0 + deadline.0));
                    let verdict = if valid {
                        Outcome::Valid
                    } else {
                        Outcome::Expired
                    };
                    self.rec
                        .local(&check, &verdict)
                        .map_err(|e| LiveError::io("record", e))?;
                    self.say(&format!("CHECK valid={valid}"));
                }
                Effect::Record(op) => {
                    self.rec
                        .local(&op, &Outcome::Ok)
                        .map_err(|e| LiveError::io("record", e))?;
                    self.say(&op.to_string().to_uppercase());
                }
                Effect::Point(p) if self.a.role.waits_at(p, self.waited) => {
                    self.waited += 1;
                    self.say("READY");
                    self.held = Some(it.collect());
                    return Ok(());
                }
                Effect::Point(_) => {}
            }
        }
        Ok(())
    }
}
