//! Facts derived from a history, once, for all checkers: which writes were accepted (and
//! where their commit can lie), which tokens were granted, what final reads saw.
//!
//! Concurrency: a statement that blocked finishes inside some later event (the blocker's commit
//! or rollback) that the history does not name; the client only sees it at `await`. So every
//! fact has a *window* `[earliest, latest]` of event positions where it took effect. Writes
//! that complete in one event have a window of one position. A checker reports "A before B"
//! only when A's window ends before B's begins — the Jepsen stance on concurrent operations.

use leaselab_model::{DbName, Event, History, Holder, LeaseName, Op, Outcome, Part, Scope, Token};
use std::collections::BTreeMap;

/// Where a fact took effect, as history positions (event `seq`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// Earliest possible position.
    pub earliest: u64,
    /// Latest possible position (the event that reported it).
    pub latest: u64,
}

impl Window {
    fn at(seq: u64) -> Self {
        Window {
            earliest: seq,
            latest: seq,
        }
    }
    /// Definitely before `other`.
    pub fn before(&self, other: &Window) -> bool {
        self.latest < other.earliest
    }
}

/// How sure we are that a write took effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Certainty {
    /// Acknowledged.
    Accepted,
    /// Outcome unknown (timeout, connection lost during commit).
    Maybe,
}

/// One write that took (or may have taken) effect.
#[derive(Clone, Debug)]
pub struct WriteFact {
    /// Scope.
    pub scope: Scope,
    /// Part.
    pub part: Part,
    /// Content written.
    pub content: String,
    /// Writer.
    pub writer: Holder,
    /// Token carried.
    pub token: Token,
    /// Where it committed.
    pub window: Window,
    /// Authority time of the reporting event.
    pub at: u64,
    /// Acknowledged or not.
    pub certainty: Certainty,
}

/// One grant of a lease.
#[derive(Clone, Debug)]
pub struct GrantFact {
    /// Lease.
    pub lease: LeaseName,
    /// Holder.
    pub holder: Holder,
    /// Token.
    pub token: Token,
    /// Where it took effect.
    pub window: Window,
    /// Authority time of the reporting event.
    pub at: u64,
}

/// One publish attempt with a definite result.
#[derive(Clone, Debug)]
pub struct PublishFact {
    /// Business key.
    pub key: String,
    /// Publisher.
    pub writer: Holder,
    /// Token carried.
    pub token: Token,
    /// Kept (`true`) or dropped.
    pub accepted: bool,
    /// Where.
    pub window: Window,
    /// Authority time.
    pub at: u64,
}

/// Everything the checkers need.
#[derive(Clone, Debug, Default)]
pub struct Facts {
    /// Accepted or possibly accepted writes, in reporting order.
    pub writes: Vec<WriteFact>,
    /// Grants, in reporting order.
    pub grants: Vec<GrantFact>,
    /// Publishes, in reporting order.
    pub publishes: Vec<PublishFact>,
}

#[derive(Clone, Debug)]
struct Pending<'h> {
    op: &'h Op,
    actor: &'h Holder,
    since: u64,
}

/// Per-connection state is keyed by borrowed names: no allocation per event.
type ConnKey<'h> = (DbName, &'h str);
type Drafts<'h> = BTreeMap<&'h str, Vec<(&'h Op, &'h Holder, u64)>>;

/// Derives the facts of a history.
pub fn derive(h: &History) -> Facts {
    let mut f = Facts::default();
    // Statements that blocked, per (db, connection): resolved by the next `await`.
    let mut blocked: BTreeMap<ConnKey, Pending> = BTreeMap::new();
    // Upserts done inside an open transaction, per connection: accepted at commit.
    let mut drafts: Drafts = BTreeMap::new();
    for e in &h.events {
        let conn = e.conn_str();
        match (&e.op, &e.outcome) {
            (Op::Await { db }, out) => {
                if let Some(p) = blocked.remove(&(*db, conn)) {
                    let w = Window {
                        earliest: p.since + 1,
                        latest: e.seq,
                    };
                    record(&mut f, &mut drafts, conn, p.op, p.actor, out, w, e);
                }
            }
            (op, Outcome::Blocked) => {
                if let Some(db) = op.db() {
                    blocked.insert(
                        (db, conn),
                        Pending {
                            op,
                            actor: &e.actor,
                            since: e.seq,
                        },
                    );
                }
            }
            (Op::Commit { db: DbName::Res }, out) => {
                let ds = drafts.remove(conn).unwrap_or_default();
                let certainty = match out {
                    Outcome::Ok => Some(Certainty::Accepted),
                    Outcome::Indeterminate(_) => Some(Certainty::Maybe),
                    _ => None,
                };
                if let Some(c) = certainty {
                    for (op, actor, _) in ds {
                        push_write(&mut f, op, actor, Window::at(e.seq), e.at.0, c);
                    }
                }
            }
            (Op::Rollback { db: DbName::Res }, _) => {
                drafts.remove(conn);
            }
            (Op::Crash { db: DbName::Res }, Outcome::Ok) => {
                drafts.clear();
                blocked.retain(|(db, _), _| *db != DbName::Res);
            }
            (Op::Crash { db: DbName::Lease }, Outcome::Ok) => {
                blocked.retain(|(db, _), _| *db != DbName::Lease);
            }
            (op, out) => record(
                &mut f,
                &mut drafts,
                conn,
                op,
                &e.actor,
                out,
                Window::at(e.seq),
                e,
            ),
        }
        if let Outcome::Error(r) = &e.outcome {
            if r == "conn-lost" {
                drafts.remove(conn);
            }
        }
    }
    f
}

#[allow(clippy::too_many_arguments)]
fn record<'h>(
    f: &mut Facts,
    drafts: &mut Drafts<'h>,
    conn: &'h str,
    op: &'h Op,
    actor: &'h Holder,
    out: &Outcome,
    w: Window,
    e: &Event,
) {
    let at = e.at.0;
    match (op, out) {
        (Op::Write { .. }, Outcome::Accepted) | (Op::Upsert { .. }, Outcome::Accepted) => {
            push_write(f, op, actor, w, at, Certainty::Accepted)
        }
        (Op::Write { .. }, Outcome::Indeterminate(_))
        | (Op::Upsert { .. }, Outcome::Indeterminate(_)) => {
            push_write(f, op, actor, w, at, Certainty::Maybe)
        }
        (Op::Upsert { .. }, Outcome::Ok) => {
            drafts.entry(conn).or_default().push((op, actor, w.latest));
        }
        (Op::Acquire { lease, holder, .. }, Outcome::Granted { token, .. }) => {
            f.grants.push(GrantFact {
                lease: lease.clone(),
                holder: holder.clone(),
                token: *token,
                window: w,
                at,
            })
        }
        (Op::Publish { key, token, .. }, Outcome::Accepted | Outcome::Rejected) => {
            f.publishes.push(PublishFact {
                key: key.clone(),
                writer: actor.clone(),
                token: *token,
                accepted: *out == Outcome::Accepted,
                window: w,
                at,
            })
        }
        _ => {}
    }
}

fn push_write(f: &mut Facts, op: &Op, actor: &Holder, w: Window, at: u64, c: Certainty) {
    if let Op::Write {
        scope,
        part,
        content,
        token,
    }
    | Op::Upsert {
        scope,
        part,
        content,
        token,
    } = op
    {
        f.writes.push(WriteFact {
            scope: scope.clone(),
            part: part.clone(),
            content: content.clone(),
            writer: actor.clone(),
            token: *token,
            window: w,
            at,
            certainty: c,
        });
    }
}
