//! Redlock, as published (redis.io, "Distributed Locks with Redis"): N independent Redis
//! instances (5, or 3), no replication between them. To acquire, a client notes the time, sets
//! the lock key to a random value (`SET key value NX PX ttl`) on every instance in turn — each
//! call bounded by a timeout small against the TTL — and holds the lock if it set it on a
//! majority and the whole round took less than the TTL minus a clock-drift allowance (1 % of
//! the TTL plus 2 ms). Otherwise it deletes its value everywhere. Extending and releasing are
//! compare-and-set scripts run on every instance; an extension counts on a majority, like an
//! acquire.
//!
//! **No token.** The value is random: nothing a resource could compare, so nothing to fence
//! with. The history still needs to tell an older holding from a newer one to say which write
//! was stale, so a Redlock grant is recorded with the microsecond the client decided it held the
//! lock, on this machine's clock (every holder of a live run shares it), as its token. No
//! service handed that number out and no resource on another machine could fence with it —
//! their clocks differ, which is Kleppmann's point — so a live run on Redlock refuses a fence.
//!
//! **Validity.** The published client holds the lock for `ttl − elapsed − drift` after the
//! round. This one accepts a round of at most a tenth of the TTL and then holds the lock for
//! `ttl − drift − ttl/10` from its decision, never longer than the published validity: a
//! fixed length the history can state as the acquire's `ttl_ms` (its expiry is the decision
//! time plus that, and the grant is placed at the decision, not before it). The keys
//! themselves live at least `ttl` from the round's start on each instance, so without a fault
//! the recorded holding ends a drift allowance before any key of it could.

use crate::LiveError;
use leaselab_model::Token;
use leaselab_pg::recording::Recording;
use redis::aio::MultiplexedConnection;
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long one instance may take to answer one call before the client moves on: the
/// published algorithm's "small compared to the TTL" (5–50 ms for a 10 s TTL).
const PER_INSTANCE: Duration = Duration::from_millis(20);

/// The keys' time to live for a holding of `validity_ms`: the smallest TTL whose validity
/// ([`validity_ms`]) is at least it.
pub fn key_ttl_ms(validity_ms: u64) -> u64 {
    ((validity_ms + 2) * 100).div_ceil(89)
}

/// How long a holding lasts from the client's decision, for keys of `key_ttl_ms`: the TTL less
/// the drift allowance (1 % + 2 ms) and less the longest round the client accepts (a tenth).
pub fn validity_ms(key_ttl_ms: u64) -> u64 {
    key_ttl_ms.saturating_sub(drift_ms(key_ttl_ms) + max_round_ms(key_ttl_ms))
}

/// The clock-drift allowance of the published algorithm.
fn drift_ms(key_ttl_ms: u64) -> u64 {
    key_ttl_ms / 100 + 2
}

/// The longest acquire or extend round the client accepts.
fn max_round_ms(key_ttl_ms: u64) -> u64 {
    key_ttl_ms / 10
}

/// Sets the key to the value only if absent, with a TTL.
const SET_NX: &str = "return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) and 1 or 0";
/// Deletes the key only if it holds the value.
const UNLOCK: &str = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end";
/// Sets the key's TTL only if it holds the value.
const EXTEND: &str = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) else return 0 end";

/// The random value of each holding this process was granted, by its token: the holder
/// machine renews and releases by token, on any of its lease connections.
static VALUES: Mutex<BTreeMap<u64, String>> = Mutex::new(BTreeMap::new());

fn values() -> std::sync::MutexGuard<'static, BTreeMap<u64, String>> {
    VALUES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// One lease connection's view of the instances: a connection to each, opened when first
/// needed and again after one failed.
pub struct Redlock {
    urls: Vec<String>,
    conns: tokio::sync::Mutex<Vec<Option<MultiplexedConnection>>>,
}

/// What one instance answered to one call: a number, or nothing in time (an error or the
/// timeout — the call may still have taken effect there).
type Answer = Option<i64>;

impl Redlock {
    /// The instances at `addr`: their `redis://` addresses joined by commas.
    pub fn new(addr: &str) -> Result<Redlock, LiveError> {
        let urls: Vec<String> = addr.split(',').map(str::to_string).collect();
        if urls.len() < 3 || urls.iter().any(|u| !u.starts_with("redis://")) {
            return Err(LiveError::Unexpected(format!(
                "Redlock needs at least three redis:// addresses joined by commas, not `{addr}`"
            )));
        }
        Ok(Redlock {
            conns: tokio::sync::Mutex::new(vec![None; urls.len()]),
            urls,
        })
    }

    fn quorum(&self) -> usize {
        self.urls.len() / 2 + 1
    }

    /// Runs `script` on instance `i`, within [`PER_INSTANCE`].
    async fn on(&self, i: usize, script: &redis::Script, key: &str, args: (&str, u64)) -> Answer {
        let conn = self.conns.lock().await.get(i).cloned().flatten();
        let call = async {
            let mut c = match conn {
                Some(c) => c,
                None => {
                    let c = redis::Client::open(self.urls.get(i)?.as_str())
                        .ok()?
                        .get_multiplexed_async_connection()
                        .await
                        .ok()?;
                    if let Some(slot) = self.conns.lock().await.get_mut(i) {
                        *slot = Some(c.clone());
                    }
                    c
                }
            };
            script
                .key(key)
                .arg(args.0)
                .arg(args.1)
                .invoke_async::<i64>(&mut c)
                .await
                .ok()
        };
        let answer = tokio::time::timeout(PER_INSTANCE, call)
            .await
            .ok()
            .flatten();
        if answer.is_none() {
            // In doubt (a killed server, a cut connection): the next call opens a new one.
            if let Some(slot) = self.conns.lock().await.get_mut(i) {
                *slot = None;
            }
        }
        answer
    }

    /// `script` on every instance in turn: how many answered 1, and whether any answered
    /// nothing in time.
    async fn round(&self, script: &str, key: &str, args: (&str, u64)) -> (usize, bool) {
        let script = redis::Script::new(script);
        let (mut yes, mut unknown) = (0, false);
        for i in 0..self.urls.len() {
            match self.on(i, &script, key, args).await {
                Some(1) => yes += 1,
                Some(_) => {}
                None => unknown = true,
            }
        }
        (yes, unknown)
    }

    /// The grant — its token (the decision's microsecond on `rec`'s clock) and expiry (ms
    /// since the epoch) — or `None`: no majority, or a round too slow.
    pub async fn acquire(
        &self,
        lease: &str,
        holder: &str,
        validity: u64,
        rec: &Recording,
    ) -> Result<Option<(Token, i64)>, LiveError> {
        let key = key(lease);
        let ttl = key_ttl_ms(validity);
        let value = format!("{holder}:{:016x}", rand::random::<u64>());
        let t1 = Instant::now();
        let (set, _) = self.round(SET_NX, &key, (&value, ttl)).await;
        let elapsed = t1.elapsed();
        if set >= self.quorum() && elapsed <= Duration::from_millis(max_round_ms(ttl)) {
            let token = rec.now_us().max(1);
            values().insert(token, value);
            let expires = leaselab_pg::recording::epoch_ms() + validity;
            return Ok(Some((Token(token), expires as i64)));
        }
        // Not held: the value goes from every instance, those that did not answer included.
        self.round(UNLOCK, &key, (&value, 0)).await;
        Ok(None)
    }

    /// The new expiry (ms since the epoch): the keys' TTL set again on a majority within an
    /// accepted round, where they still hold this holding's value; `None` otherwise.
    pub async fn renew(
        &self,
        lease: &str,
        token: Token,
        validity: u64,
    ) -> Result<Option<i64>, LiveError> {
        let Some(value) = values().get(&token.0).cloned() else {
            return Ok(None);
        };
        let ttl = key_ttl_ms(validity);
        let t1 = Instant::now();
        let (set, _) = self.round(EXTEND, &key(lease), (&value, ttl)).await;
        let elapsed = t1.elapsed();
        if set >= self.quorum() && elapsed <= Duration::from_millis(max_round_ms(ttl)) {
            let expires = leaselab_pg::recording::epoch_ms() + validity;
            return Ok(Some(expires as i64));
        }
        Ok(None)
    }

    /// Whether the holding's value was deleted from some instance. None deleted and some
    /// instance silent: the outcome is unknown (an error), as the value may be gone there.
    pub async fn release(&self, lease: &str, token: Token) -> Result<bool, LiveError> {
        let Some(value) = values().remove(&token.0) else {
            return Ok(false);
        };
        match self.round(UNLOCK, &key(lease), (&value, 0)).await {
            (0, true) => Err(LiveError::Unexpected(
                "no Redlock instance answered the release in time".into(),
            )),
            (deleted, _) => Ok(deleted > 0),
        }
    }
}

/// The lock key on every instance.
fn key(lease: &str) -> String {
    format!("redlock:{lease}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A holding never outlasts the published validity of its keys: `validity ≤ ttl − drift −
    /// the longest accepted round`, for the TTL its keys get.
    #[test]
    fn the_recorded_holding_ends_within_the_published_validity() {
        for v in [1, 2, 100, 1_333, 1_500, 10_000, 3_600_000] {
            let ttl = key_ttl_ms(v);
            assert!(validity_ms(ttl) >= v, "validity {v}: keys of {ttl} ms");
            assert!(v + drift_ms(ttl) + max_round_ms(ttl) <= ttl, "validity {v}");
        }
        assert_eq!(key_ttl_ms(1_333), 1_500);
        assert_eq!(validity_ms(1_500), 1_333);
    }

    #[test]
    fn addresses_are_checked() {
        assert!(Redlock::new("redis://a/,redis://b/").is_err());
        assert!(Redlock::new("redis://a/,redis://b/,http://c").is_err());
        assert!(Redlock::new("redis://a/,redis://b/,redis://c/").is_ok());
    }
}
