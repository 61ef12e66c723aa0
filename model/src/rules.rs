//! The lease and fence rules as pure functions of a row and `now`. The database engine
//! ([`crate::model`]) and the thread-safe implementation in `leaselab-sync` both decide with
//! these, so loom checks interleavings of the same rules the model and the traces use.

use crate::config::FenceMode;
use crate::names::{Holder, Token};
use crate::rows::LeaseRow;
use crate::time::{Expiry, Millis};

/// `acquire`: the new row if the lease is free (no row), expired or released — token 1 on
/// insert, old token + 1 on takeover — or `None` while it is held.
pub fn acquire(
    row: Option<&LeaseRow>,
    holder: &Holder,
    ttl_ms: u64,
    lock_delay_ms: u64,
    now: Millis,
) -> Option<LeaseRow> {
    // Lock-delay (Chubby): an expired row is taken over only `lock_delay_ms` after its expiry;
    // `-infinity` (released) stays below every instant, as `'-infinity' + interval` is
    // `-infinity` in PostgreSQL (timestamp.c, `timestamptz_pl_interval` keeps infinities).
    let free = |r: &LeaseRow| match r.expires_at {
        Expiry::NegInfinity => true,
        Expiry::At(x) => x.plus(lock_delay_ms) <= now,
    };
    let token = match row {
        None => Token(1),
        Some(r) if free(r) => Token(r.token.0 + 1),
        Some(_) => return None,
    };
    Some(LeaseRow {
        holder: holder.clone(),
        token,
        expires_at: Expiry::At(now.plus(ttl_ms)),
    })
}

/// `renew`: the renewed row if holder and token match and the lease has not expired (or the
/// renew-after-expiry mistake is switched on). The token never changes.
pub fn renew(
    row: Option<&LeaseRow>,
    holder: &Holder,
    token: Token,
    ttl_ms: u64,
    now: Millis,
    renew_after_expiry: bool,
) -> Option<LeaseRow> {
    match row {
        Some(r)
            if &r.holder == holder
                && r.token == token
                && (renew_after_expiry || !r.expires_at.is_expired_at(now)) =>
        {
            Some(LeaseRow {
                expires_at: Expiry::At(now.plus(ttl_ms)),
                ..r.clone()
            })
        }
        _ => None,
    }
}

/// `release`: the row with `expires_at = -infinity` if holder and token match.
pub fn release(row: Option<&LeaseRow>, holder: &Holder, token: Token) -> Option<LeaseRow> {
    match row {
        Some(r) if &r.holder == holder && r.token == token => Some(LeaseRow {
            expires_at: Expiry::NegInfinity,
            ..r.clone()
        }),
        _ => None,
    }
}

/// The fence comparison of a mode that compares against a floor: `max_token <= token` for the
/// scope fence and check-then-write, `max_token < token` for the strict fence; modes without a
/// floor (row, off) always pass here. A missing floor row never passes, except for the guarded
/// upsert, which creates it.
pub fn floor_passes(mode: FenceMode, floor: Option<Token>, token: Token) -> bool {
    match (mode, floor) {
        (FenceMode::Row | FenceMode::Off, _) => true,
        (FenceMode::ScopeUpsert, None) => true,
        (_, None) => false,
        (FenceMode::Strict, Some(f)) => f < token,
        (FenceMode::Scope | FenceMode::ScopeUpsert | FenceMode::CheckThenWrite, Some(f)) => {
            f <= token
        }
    }
}

/// The row guard of the row fence: an existing part may be overwritten only by an equal or
/// higher token; a new part always passes (F7).
pub fn row_guard_passes(existing: Option<Token>, token: Token) -> bool {
    existing.is_none_or(|t| t <= token)
}
