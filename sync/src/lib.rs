//! # leaselab-sync
//!
//! The sources' in-process Java classes — `LeaseService`, `FencedStore` and `LeaseGuard` with
//! its renewer thread and `lost` flag — in Rust, deciding with the model's own rules
//! ([`leaselab_model::rules`]), so loom can check every thread interleaving of exactly the
//! rules the model, the simulation and the traces use.
//!
//! Under `--cfg loom` the locks, atomics and `Arc` are loom's; otherwise std's. The loom
//! suite lives in `tests/loom.rs`:
//!
//! ```text
//! RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test --release -p leaselab-sync --test loom
//! ```
//!
//! `LOOM_MAX_PREEMPTIONS` bounds the preemptions per execution (the suite defaults to 3 when
//! unset: 3 threads unbounded do not finish in minutes; bound 3 explores every schedule with at
//! most 3 preemptions, which covers every race here — each needs one or two). Note that
//! `RUSTFLAGS` replaces the workspace's `build.rustflags`; that is fine for this crate, which
//! has no tokio.
//!
//! ```
//! use leaselab_sync::{Clock, FencedStore, LeaseService, StoreMode};
//!
//! let clock = Clock::new();
//! let svc = LeaseService::new(clock.clone());
//! let a = svc.acquire("report-job", "holder-a", 100).expect("free");
//! clock.advance(250);
//! let b = svc.acquire("report-job", "holder-b", 100).expect("expired");
//! let store = FencedStore::new(StoreMode::Scope);
//! assert!(store.write("summary", "B-new", b.token, "holder-b"));
//! assert!(!store.write("summary", "A-stale", a.token, "holder-a"));
//! ```

#![warn(missing_docs, unreachable_pub)]

use leaselab_model::rules;
use leaselab_model::{FenceMode, Holder, LeaseRow, Millis, Token};
use std::collections::BTreeMap;

#[cfg(loom)]
use loom::sync::atomic::{AtomicBool, AtomicU64, Ordering};
#[cfg(loom)]
use loom::sync::{Arc, Mutex, MutexGuard};
#[cfg(not(loom))]
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
#[cfg(not(loom))]
use std::sync::{Arc, Mutex, MutexGuard};

/// A poisoned lock only means another thread panicked while holding it; the data is still
/// what that thread left, which is what a test wants to inspect.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Seed 003's `ManualClock`, shareable between threads.
#[derive(Clone, Debug)]
pub struct Clock(Arc<AtomicU64>);

impl Default for Clock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock {
    /// At time 0.
    pub fn new() -> Self {
        Clock(Arc::new(AtomicU64::new(0)))
    }
    /// Now.
    pub fn now(&self) -> Millis {
        Millis(self.0.load(Ordering::SeqCst))
    }
    /// Moves time forward.
    pub fn advance(&self, ms: u64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

/// What a successful acquire hands out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    /// Lease name.
    pub name: String,
    /// Holder.
    pub holder: Holder,
    /// Fencing token.
    pub token: Token,
    /// TTL used for renewals.
    pub ttl_ms: u64,
}

/// The lease table: each operation is one critical section, as the source's single SQL
/// statement is one atomic step.
#[derive(Debug)]
pub struct LeaseService {
    clock: Clock,
    rows: Mutex<BTreeMap<String, LeaseRow>>,
}

impl LeaseService {
    /// An empty table on `clock`.
    pub fn new(clock: Clock) -> Self {
        LeaseService {
            clock,
            rows: Mutex::new(BTreeMap::new()),
        }
    }

    /// Acquire: a grant if free, expired or released; `None` while held.
    pub fn acquire(&self, name: &str, holder: &str, ttl_ms: u64) -> Option<Grant> {
        let mut rows = lock(&self.rows);
        let h = Holder::new(holder);
        let row = rules::acquire(rows.get(name), &h, ttl_ms, 0, self.clock.now())?;
        let token = row.token;
        rows.insert(name.to_string(), row);
        Some(Grant {
            name: name.to_string(),
            holder: h,
            token,
            ttl_ms,
        })
    }

    /// Renew: true only if the grant is still the current, unexpired holding.
    pub fn renew(&self, g: &Grant) -> bool {
        let mut rows = lock(&self.rows);
        match rules::renew(
            rows.get(&g.name),
            &g.holder,
            g.token,
            g.ttl_ms,
            self.clock.now(),
            false,
        ) {
            Some(r) => {
                rows.insert(g.name.clone(), r);
                true
            }
            None => false,
        }
    }

    /// Release: `expires_at = -infinity`, token kept.
    pub fn release(&self, g: &Grant) -> bool {
        let mut rows = lock(&self.rows);
        match rules::release(rows.get(&g.name), &g.holder, g.token) {
            Some(r) => {
                rows.insert(g.name.clone(), r);
                true
            }
            None => false,
        }
    }

    /// The current row.
    pub fn row(&self, name: &str) -> Option<LeaseRow> {
        lock(&self.rows).get(name).cloned()
    }
}

/// How the store fences.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreMode {
    /// Compare and advance the floor and write the part in one critical section.
    Scope,
    /// Seed 003's `FencedStore`: like `Scope` but rejects an equal token.
    Strict,
    /// Read and compare in one critical section, set the floor and write in another (F6a).
    CheckThenWrite,
}

#[derive(Debug, Default)]
struct StoreState {
    floor: Token,
    parts: BTreeMap<String, (String, Token, String)>,
    /// Tokens of accepted writes, in commit order.
    accepted: Vec<Token>,
    /// Every value the floor was set to, in order.
    floors: Vec<Token>,
    rejected: u64,
}

/// The protected resource.
#[derive(Debug)]
pub struct FencedStore {
    mode: StoreMode,
    state: Mutex<StoreState>,
}

impl FencedStore {
    /// An empty store, floor 0.
    pub fn new(mode: StoreMode) -> Self {
        FencedStore {
            mode,
            state: Mutex::new(StoreState::default()),
        }
    }

    fn fence_mode(&self) -> FenceMode {
        match self.mode {
            StoreMode::Scope => FenceMode::Scope,
            StoreMode::Strict => FenceMode::Strict,
            StoreMode::CheckThenWrite => FenceMode::CheckThenWrite,
        }
    }

    fn commit(st: &mut StoreState, part: &str, content: &str, token: Token, writer: &str) {
        st.floor = token;
        st.floors.push(token);
        st.parts.insert(
            part.to_string(),
            (content.to_string(), token, writer.to_string()),
        );
        st.accepted.push(token);
    }

    /// Writes `part` with `token`; true if accepted.
    pub fn write(&self, part: &str, content: &str, token: Token, writer: &str) -> bool {
        let mode = self.fence_mode();
        match self.mode {
            StoreMode::Scope | StoreMode::Strict => {
                let mut st = lock(&self.state);
                if rules::floor_passes(mode, Some(st.floor), token) {
                    Self::commit(&mut st, part, content, token, writer);
                    true
                } else {
                    st.rejected += 1;
                    false
                }
            }
            StoreMode::CheckThenWrite => {
                let pass = {
                    let st = lock(&self.state);
                    rules::floor_passes(mode, Some(st.floor), token)
                };
                // Another writer may commit right here.
                let mut st = lock(&self.state);
                if pass {
                    Self::commit(&mut st, part, content, token, writer);
                } else {
                    st.rejected += 1;
                }
                pass
            }
        }
    }

    /// Tokens of accepted writes in commit order.
    pub fn accepted(&self) -> Vec<Token> {
        lock(&self.state).accepted.clone()
    }

    /// Every value the floor took, in order.
    pub fn floors(&self) -> Vec<Token> {
        lock(&self.state).floors.clone()
    }

    /// The floor.
    pub fn floor(&self) -> Token {
        lock(&self.state).floor
    }

    /// A part's content, token and writer.
    pub fn part(&self, part: &str) -> Option<(String, Token, String)> {
        lock(&self.state).parts.get(part).cloned()
    }

    /// Rejected writes.
    pub fn rejected(&self) -> u64 {
        lock(&self.state).rejected
    }
}

/// What happened to one write attempt of a guarded worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attempt {
    /// `lost` was set: the write was not started.
    NotStarted,
    /// Started and accepted.
    Accepted,
    /// Started and rejected by the store's fence.
    Rejected,
}

/// Seed 003's `LeaseGuard`: a renewer sets `lost` on a failed renew; the worker checks `lost`
/// before each write and starts no new write once it is set.
#[derive(Clone, Debug)]
pub struct LeaseGuard {
    grant: Grant,
    service: Arc<LeaseService>,
    lost: Arc<AtomicBool>,
}

impl LeaseGuard {
    /// Guards `grant`.
    pub fn new(grant: Grant, service: Arc<LeaseService>) -> Self {
        LeaseGuard {
            grant,
            service,
            lost: Arc::new(AtomicBool::new(false)),
        }
    }

    /// One tick of the renewer thread (every TTL/3 in the source): a failed renew sets `lost`.
    pub fn renew_once(&self) -> bool {
        let ok = self.service.renew(&self.grant);
        if !ok {
            self.lost.store(true, Ordering::SeqCst);
        }
        ok
    }

    /// Whether the lease was observed lost.
    pub fn is_lost(&self) -> bool {
        self.lost.load(Ordering::SeqCst)
    }

    /// The guarded write: check `lost`, then write with the grant's token. Anything may happen
    /// between the check and the write (a pause); only the store's fence catches that.
    pub fn write(&self, store: &FencedStore, part: &str, content: &str) -> Attempt {
        if self.is_lost() {
            return Attempt::NotStarted;
        }
        if store.write(part, content, self.grant.token, self.grant.holder.as_str()) {
            Attempt::Accepted
        } else {
            Attempt::Rejected
        }
    }

    /// The grant.
    pub fn grant(&self) -> &Grant {
        &self.grant
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn resurrection_demo_with_and_without_strict_fence() {
        let clock = Clock::new();
        let svc = LeaseService::new(clock.clone());
        let a = svc.acquire("k", "A", 100).expect("free");
        let store = FencedStore::new(StoreMode::Strict);
        assert!(store.write("v", "A-old", a.token, "A"));
        clock.advance(250);
        let b = svc.acquire("k", "B", 100).expect("expired");
        assert_eq!(b.token, Token(2));
        assert!(store.write("v", "B-new", b.token, "B"));
        assert!(!store.write("v", "A-stale", a.token, "A"));
        assert_eq!(store.rejected(), 1);
        assert!(
            !store.write("w", "B-second-part", b.token, "B"),
            "strict rejects an equal token"
        );
    }

    #[test]
    fn guard_sets_lost_and_stops_new_writes() {
        let clock = Clock::new();
        let svc = Arc::new(LeaseService::new(clock.clone()));
        let g = LeaseGuard::new(svc.acquire("k", "A", 100).expect("free"), svc.clone());
        assert!(g.renew_once());
        clock.advance(200);
        assert!(!g.renew_once());
        assert!(g.is_lost());
        let store = FencedStore::new(StoreMode::Scope);
        assert_eq!(g.write(&store, "v", "x"), Attempt::NotStarted);
        assert!(store.accepted().is_empty());
    }
}
