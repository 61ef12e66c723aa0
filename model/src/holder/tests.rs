//! The holder machine's own tests: its job loop, step by step, with no driver.

use super::*;

fn cfg() -> HolderCfg {
    HolderCfg {
        name: Holder::new("holder-a"),
        lease: LeaseName::new("report-job"),
        scope: Scope::new("daily-report"),
        parts: vec![Part::new("summary")],
        ttl_ms: 1500,
        renew_ms: 400,
        margin_ms: 300,
        rpc_timeout_ms: 1000,
        retry_ms: 50,
        job_gap_ms: 100,
        start_ms: 0,
        whole_writes: true,
    }
}

/// A driver that ends the holder waits while a request is out — the job's or the
/// renewer's alone is enough — and not once every reply is in.
#[test]
fn it_awaits_a_reply_while_any_request_is_out() {
    let mut m = HolderMachine::new(cfg());
    let mut out = Vec::new();
    assert!(!m.awaits_reply());
    m.on_timer(Millis(0), &mut out);
    let Some(Effect::Send { req, .. }) = out.first().cloned() else {
        panic!("no acquire sent: {out:?}");
    };
    assert!(m.awaits_reply(), "the acquire is out");
    out.clear();
    m.on_reply(Millis(1), req, &Outcome::Refused, &mut out);
    assert!(!m.awaits_reply(), "every reply is in");
}

fn sent(out: &[Effect]) -> Vec<(u64, Op)> {
    out.iter()
        .filter_map(|e| match e {
            Effect::Send { req, op, .. } => Some((*req, op.clone())),
            _ => None,
        })
        .collect()
}

/// A holder with `cfg` that has sent its acquire and been granted token 7; the effects
/// of the grant.
fn holding(cfg: HolderCfg) -> (HolderMachine, Vec<Effect>) {
    let mut m = HolderMachine::new(cfg);
    let mut out = Vec::new();
    m.on_timer(Millis(0), &mut out);
    let acquire = sent(&out)[0].0;
    out.clear();
    m.on_reply(Millis(1), acquire, &granted(7), &mut out);
    (m, out)
}

fn granted(token: u64) -> Outcome {
    Outcome::Granted {
        token: Token(token),
        expires: crate::time::Expiry::At(Millis(1500)),
    }
}

/// Each part carries who wrote it, with which token, in which job.
#[test]
fn a_part_names_its_writer_token_and_job() {
    let mut m = HolderMachine::new(cfg());
    let mut out = Vec::new();
    m.on_timer(Millis(0), &mut out);
    let [(acquire, _)] = sent(&out)[..] else {
        panic!("{out:?}")
    };
    out.clear();
    m.on_reply(Millis(1), acquire, &granted(7), &mut out);
    let [(_, Op::Write { ref content, .. })] = sent(&out)[..] else {
        panic!("{out:?}")
    };
    assert_eq!(content, "holder-a-t7-j1");
}

/// Requests that time out together are given up oldest first: a renew sent before the
/// write that is out marks the holding lost before the write's abort forgets it.
#[test]
fn timed_out_requests_are_given_up_oldest_first() {
    let (mut m, mut out) = holding(HolderCfg {
        parts: vec![Part::new("summary"), Part::new("detail")],
        ..cfg()
    });
    let first_write = sent(&out)[0].0;
    out.clear();
    m.on_timer(Millis(401), &mut out); // the renew goes out
    assert!(matches!(sent(&out)[..], [(_, Op::Renew { .. })]), "{out:?}");
    out.clear();
    m.on_reply(Millis(500), first_write, &Outcome::Accepted, &mut out);
    assert!(matches!(sent(&out)[..], [(_, Op::Write { .. })]), "{out:?}");
    out.clear();
    // Both the renew (sent at 401) and the second write (sent at 500) have timed out.
    m.on_timer(Millis(2000), &mut out);
    assert_eq!(
        shapes(&out),
        ["abandon lease", "lost", "abandon res"],
        "{out:?}"
    );

    // The other way round: the write (sent at 1) is older than the renew (sent at 401);
    // its abort forgets the holding first, so the renew's timeout has nothing to mark lost.
    let (mut m, mut out) = holding(cfg());
    m.on_timer(Millis(401), &mut out);
    out.clear();
    m.on_timer(Millis(2000), &mut out);
    assert_eq!(shapes(&out), ["abandon res", "abandon lease"], "{out:?}");
}

/// What each effect is, without its details.
fn shapes(out: &[Effect]) -> Vec<String> {
    out.iter()
        .map(|e| match e {
            Effect::Send { op, .. } => format!("send {op}"),
            Effect::Abandon { db, .. } => format!("abandon {}", db.as_str()),
            Effect::Record(op) => op.to_string(),
            Effect::Point(p) => p.as_str().to_string(),
        })
        .collect()
}

/// The renewer sends one renew at a time: a renew still out from an aborted job holds the
/// next job's renewer back until its reply or its timeout.
#[test]
fn one_renew_at_a_time() {
    let (mut m, mut out) = holding(cfg());
    let write = sent(&out)[0].0;
    m.on_timer(Millis(401), &mut out); // the renew goes out, and stays out
    out.clear();
    m.on_reply(Millis(450), write, &Outcome::Rejected, &mut out); // the job aborts
    m.on_timer(Millis(500), &mut out); // the next job acquires
    let acquire = sent(&out)[0].0;
    out.clear();
    m.on_reply(Millis(501), acquire, &granted(8), &mut out);
    out.clear();
    m.on_timer(Millis(901), &mut out); // the new holding's renew falls due
    assert!(
        !sent(&out)
            .iter()
            .any(|(_, op)| matches!(op, Op::Renew { .. })),
        "{out:?}"
    );
}

/// A renewed lease moves the local deadline and schedules the next renew; a refused one
/// marks the holding lost (once, in the history).
#[test]
fn a_renew_extends_or_loses_the_holding() {
    let (mut m, mut out) = holding(cfg());
    out.clear();
    m.on_timer(Millis(401), &mut out);
    let renew = sent(&out)[0].0;
    out.clear();
    let renewed = Outcome::Renewed {
        expires: crate::time::Expiry::At(Millis(1901)),
    };
    m.on_reply(Millis(402), renew, &renewed, &mut out);
    m.on_timer(Millis(802), &mut out);
    let [(renew, Op::Renew { .. })] = sent(&out)[..] else {
        panic!("no renew a period after the last: {out:?}")
    };
    out.clear();
    m.on_reply(Millis(803), renew, &Outcome::Refused, &mut out);
    assert_eq!(shapes(&out), ["lost"], "{out:?}");
}

/// The reply to a renew of an earlier holding changes nothing of the current one: not its
/// token, not its `lost`.
#[test]
fn a_renew_of_an_earlier_holding_is_ignored() {
    for late in [
        Outcome::Renewed {
            expires: crate::time::Expiry::At(Millis(1901)),
        },
        Outcome::Refused,
    ] {
        let (mut m, mut out) = holding(cfg());
        let write = sent(&out)[0].0;
        out.clear();
        m.on_timer(Millis(401), &mut out);
        let old_renew = sent(&out)[0].0;
        m.on_reply(Millis(450), write, &Outcome::Rejected, &mut out);
        out.clear();
        m.on_timer(Millis(500), &mut out);
        let acquire = sent(&out)[0].0;
        out.clear();
        m.on_reply(Millis(501), acquire, &granted(8), &mut out);
        let write = sent(&out)[0].0;
        out.clear();
        m.on_reply(Millis(600), old_renew, &late, &mut out);
        assert!(out.is_empty(), "{late}: {out:?}");
        m.on_reply(Millis(601), write, &Outcome::Accepted, &mut out);
        let [(_, Op::Release { token, .. })] = sent(&out)[..] else {
            panic!("{late}: {out:?}")
        };
        assert_eq!(token, Token(8), "{late}");
    }
}

/// An abandoned connection is replaced by a new one, and only the requests on it stop
/// being awaited: the renewer's failure leaves the write's reply awaited.
#[test]
fn an_abandoned_connection_is_replaced_and_only_its_requests_are_dropped() {
    let mut m = HolderMachine::new(cfg());
    let mut out = Vec::new();
    m.on_timer(Millis(0), &mut out);
    let Some(Effect::Send { conn: first, .. }) = out.first().cloned() else {
        panic!("{out:?}")
    };
    out.clear();
    m.on_timer(Millis(1000), &mut out); // the acquire times out
    m.on_timer(Millis(1050), &mut out); // and is sent again
    let again = out.iter().find_map(|e| match e {
        Effect::Send { conn, .. } => Some(conn.clone()),
        _ => None,
    });
    assert!(again.is_some_and(|c| c != first), "{out:?}");
    let acquire = sent(&out)[0].0;
    out.clear();
    m.on_reply(Millis(1051), acquire, &granted(7), &mut out);
    let write = sent(&out)[0].0;
    m.on_timer(Millis(1451), &mut out);
    let renew = sent(&out)[1].0;
    out.clear();
    let lost = Outcome::Error(crate::reason::Reason::ConnLost);
    m.on_reply(Millis(1452), renew, &lost, &mut out);
    assert_eq!(shapes(&out), ["abandon lease", "lost"], "{out:?}");
    out.clear();
    m.on_reply(Millis(1453), write, &Outcome::Accepted, &mut out);
    assert!(
        matches!(sent(&out)[..], [(_, Op::Release { .. })]),
        "the write's reply was dropped: {out:?}"
    );

    // And the other way: the write's connection failing leaves the renew awaited.
    let (mut m, mut out) = holding(cfg());
    let write = sent(&out)[0].0;
    m.on_timer(Millis(401), &mut out);
    m.on_reply(Millis(402), write, &lost, &mut out);
    assert!(m.awaits_reply(), "the renew's reply was dropped: {out:?}");
}

/// A holder that was refused once before it got the lease is in the same situation as one
/// that got it at once, up to its counters: with its renew in flight, the canonical forms
/// are equal while the states are not. And a failed renew shows as `lost`.
#[test]
fn the_canonical_form_sets_counters_aside_and_lost_shows_a_failed_renew() {
    let renewing = |refused_first: bool| {
        let mut m = HolderMachine::new(HolderCfg {
            retry_ms: 0,
            ..cfg()
        });
        let mut out = Vec::new();
        if refused_first {
            m.on_timer(Millis(0), &mut out);
            let acquire = sent(&out)[0].0;
            out.clear();
            m.on_reply(Millis(0), acquire, &Outcome::Refused, &mut out);
            out.clear();
        }
        m.on_timer(Millis(0), &mut out);
        let acquire = sent(&out)[0].0;
        out.clear();
        m.on_reply(Millis(0), acquire, &granted(7), &mut out);
        out.clear();
        m.on_timer(Millis(400), &mut out);
        let renew = sent(&out)[0].0;
        (m, renew)
    };
    let ((a, _), (b, renew_b)) = (renewing(false), renewing(true));
    assert_ne!(a.state(), b.state());
    assert_eq!(a.state().canonical(), b.state().canonical());
    let mut b = b;
    assert!(!b.state().lost());
    let mut out = Vec::new();
    b.on_reply(Millis(401), renew_b, &Outcome::Refused, &mut out);
    assert!(b.state().lost());
    assert_ne!(a.state().canonical(), b.state().canonical());
    let _ = a;
}

/// Timers that fell due count as due now: settling changes nothing about what fires next.
#[test]
fn settled_timers_fire_the_same() {
    let (m, _) = holding(cfg());
    let mut late = *m.state();
    late.settle(Millis(900));
    assert_eq!(
        HolderMachine::with_state(cfg(), late).next_timer(),
        Some(Millis(900)),
        "the renew due at 401 is due at 900"
    );
    let mut early = *m.state();
    early.settle(Millis(100));
    assert_eq!(early, *m.state(), "nothing due yet: nothing moves");
}

/// A connection's name carries its generation, one digit or several.
#[test]
fn connection_names_carry_their_generation() {
    let h = Holder::new("holder-a");
    assert_eq!(conn_name(&h, CONN_LEASE, 0).as_str(), "holder-a/lease/0");
    assert_eq!(conn_name(&h, CONN_RENEW, 9).as_str(), "holder-a/renew/9");
    assert_eq!(conn_name(&h, CONN_RES, 10).as_str(), "holder-a/res/10");
    assert_eq!(conn_name(&h, CONN_RES, 300).as_str(), "holder-a/res/300");
}
