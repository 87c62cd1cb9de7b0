//! A session the handle gives up while its agent thread is blocked in its
//! `BLPOP` (on that session's notification list, for up to a third of the
//! lease, until its next heartbeat): the agent ends the given-up session
//! (what Redis counts for it goes back) and moves to the handle's next
//! session only once that `BLPOP` returns. It used to return only at the
//! heartbeat, so what others waited for came up to a third of the lease
//! late. The handle now wakes the agent when it gives a session up after
//! an answer from Redis (a `bye` on that session's list, as the end
//! script's).
//!
//! No timing assertion: the leases are 90 s (a heartbeat every 30 s) and
//! each test waits at most 10 s for what it expects, far more than the
//! round trips it takes, far less than the heartbeat the old code needed.

mod support;

use std::time::Duration;

use support::*;
use volt_sem_redis::scripts::Keys;
use volt_sem_redis::RedisSemaphore;

/// Far below a heartbeat interval of the 90 s lease (30 s).
const BOUND: Duration = Duration::from_secs(10);

/// Semaphore `name` of `total` permits: its keys, and two handles of 90 s
/// leases, labelled `holder` and `waiter`.
fn holder_and_waiter(
    s: &Server,
    name: &str,
    total: usize,
) -> (Keys, RedisSemaphore, RedisSemaphore) {
    let handle = |label: &str| {
        let o = opts()
            .lease(Duration::from_secs(90))
            .own_session(true)
            .label(label);
        RedisSemaphore::connect(&s.url(), name, total, o).unwrap()
    };
    (
        Keys::new("volt-sem", name),
        handle("holder"),
        handle("waiter"),
    )
}

/// A release Redis refuses (`NOTHELD`: it counts fewer permits for the
/// session than the handle does) gives the session up; what Redis still
/// counts for it goes back when the agent ends it. Here one of the
/// holder's two permits was moved (conserving) to the partial grant of
/// another handle's queued request for both: that request completes when
/// the holder's session ends, its other permit handed on.
#[test]
fn a_refused_release_ends_the_session_now() {
    let s = Server::start();
    let name = "refused";
    let (k, a, c) = holder_and_waiter(&s, name, 2);
    let held = a.try_acquire(2).unwrap();
    let waiter = acquire_in_thread(&c, 2);
    let mut raw = s.raw();
    let queued: Vec<String> = redis::cmd("ZRANGE")
        .arg(&k.all()[1])
        .arg(0)
        .arg(-1)
        .query(&mut raw)
        .unwrap();
    assert_eq!(queued.len(), 1, "{queued:?}");
    let sid = session_of(&s, name, "holder");
    let _: () = redis::pipe()
        .atomic()
        .cmd("HINCRBY")
        .arg(&k.all()[4])
        .arg(&sid)
        .arg(-1)
        .cmd("HSET")
        .arg(&k.all()[2])
        .arg(&queued[0])
        .arg("2:1")
        .query(&mut raw)
        .unwrap();
    assert_conserved(&a);
    drop(held);
    assert!(
        matches!(a.flush(), Err(volt_sem_redis::Error::LeaseExpired)),
        "the release was not refused"
    );
    let got = waiter.recv_timeout(BOUND);
    assert!(
        matches!(got, Ok(Ok(_))),
        "the waiter got {got:?} within {BOUND:?} of the holder's session given up \
         (its agent's heartbeat is up to 30 s on)"
    );
    let census = assert_conserved(&c);
    assert_eq!((census.held, census.queued), (2, 0), "{census:?}");
    drop(got);
    drop((a, c));
}

/// A lease the handle finds lost at a call (the script answers `EXPIRED`:
/// here its session's deadline was moved into the past): the call goes on
/// in a new session, and that session's notifications come on a new list,
/// which the agent reads only once its `BLPOP` on the old one returns. A
/// request queued in the new session is granted by another handle's
/// release: its waiter gets the permit now, not at the agent's next
/// heartbeat.
#[test]
fn a_lease_found_lost_moves_the_agent_to_the_next_session_now() {
    let s = Server::start();
    let name = "expired";
    let (k, c, b) = holder_and_waiter(&s, name, 1);
    let held = c.try_acquire(1).unwrap();
    // b's session registered, its agent blocked on its list.
    assert!(b.try_acquire(1).is_err());
    let old = session_of(&s, name, "waiter");
    let _: () = redis::cmd("ZADD")
        .arg(&k.all()[3])
        .arg("XX")
        .arg(1)
        .arg(&old)
        .query(&mut s.raw())
        .unwrap();
    let waiter = acquire_in_thread(&b, 1);
    assert_ne!(session_of(&s, name, "waiter"), old, "no new session");
    drop(held);
    c.flush().unwrap();
    let got = waiter.recv_timeout(BOUND);
    assert!(
        matches!(got, Ok(Ok(_))),
        "the waiter got {got:?} within {BOUND:?} of its grant \
         (its agent's heartbeat is up to 30 s on)"
    );
    assert_conserved(&b);
    drop(got);
    drop((b, c));
}
