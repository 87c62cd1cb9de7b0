//! Lease loss seen in time when Redis goes silent (issue 26, item 3): a
//! holder cut off by a black hole (sockets open, nothing forwarded: no
//! error, only silence) must learn its loss at most one lease after the
//! start of the last renewal Redis confirmed, whatever its agent is blocked
//! in (BLPOP, a heartbeat, a reconnect), and in any case before another
//! client can be granted the permit it held.

mod support;

use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use support::*;
use volt_sem_redis::{ConnectOptions, Error, RedisSemaphore};

/// The loss must be visible at most one lease after the cut (the last
/// confirmed renewal started before it); this much more is allowed for a
/// loaded machine's scheduling. The defect was seconds late (8.6 s past a
/// 10 s lease, 1.2-3.7 s past a 2 s one).
const SLACK: Duration = Duration::from_millis(700);

/// One holder behind a black-holing proxy, one client waiting for its only
/// permit on a direct connection. Returns how long after the cut the
/// holder's loss was visible (its lease watch woke).
fn loss_after_cut(name: &str, lease: Duration, holder_opts: ConnectOptions) -> Duration {
    let s = Server::start();
    let proxy = Proxy::start(s.port);
    let holder = RedisSemaphore::connect(&proxy.url(), name, 1, holder_opts).unwrap();
    let other = RedisSemaphore::connect(&s.url(), name, 1, opts()).unwrap();
    let permit = holder.acquire_blocking(1).unwrap();
    // A waiter of the holder's too: it must fail with the loss, not hang.
    let holder_wait = acquire_in_thread(&holder, 1);
    let other_wait = acquire_in_thread(&other, 1);
    // Queued in Redis, and each Pending answer read by its own handle
    // (`stats().queued`): an answer the cut dropped would be an uncertain
    // outcome, failing the holder at its command timeout with a connection
    // error before its lease ends (Redis may answer the census first).
    eventually("two queued", Duration::from_secs(30), || {
        other.census().unwrap().queued == 2
            && holder.stats().queued == 1
            && other.stats().queued == 1
    });

    // The watch (the mechanism of every binding's loss signal): a thread
    // blocks on it and reports when it woke.
    let (lost_tx, lost_rx) = mpsc::channel();
    let watch = holder.lease_watch(permit.session());
    thread::spawn(move || {
        let why = futures::executor::block_on(watch);
        let _ = lost_tx.send((Instant::now(), why));
    });

    let cut = Instant::now();
    proxy.black_hole();

    let limit = lease * 3 + Duration::from_secs(20);
    let (lost_at, why) = lost_rx
        .recv_timeout(limit)
        .expect("the holder never learnt its loss");
    assert_eq!(why, Error::LeaseExpired);
    let seen = lost_at - cut;
    assert!(
        seen <= lease + SLACK,
        "loss visible {seen:?} after the cut, lease {lease:?}"
    );
    assert_eq!(
        holder_wait.recv_timeout(limit).unwrap().unwrap_err(),
        Error::LeaseExpired,
        "the holder's waiter fails with the loss"
    );

    // Causality: by the time the other client is granted the only permit,
    // the holder already reports its permit lost (is_lost reads the
    // handle's clock, no agent needed).
    let granted = other_wait
        .recv_timeout(limit)
        .expect("the other client must be granted once the lease ended")
        .unwrap();
    assert!(
        permit.is_lost(),
        "two clients believed they held the only permit"
    );
    assert!(lost_at <= Instant::now());
    drop(granted);
    assert_eq!(permit.release().unwrap_err(), Error::LeaseExpired);
    let c = assert_conserved(&other);
    assert_eq!((c.available, c.held), (1, 0));
    eprintln!("{name}: lease {lease:?}, loss visible {seen:?} after the cut");
    seen
}

#[test]
fn loss_is_seen_within_the_lease_with_a_2s_lease() {
    loss_after_cut(
        "hole-2s",
        Duration::from_secs(2),
        opts()
            .lease(Duration::from_secs(2))
            .connect_timeout(Duration::from_secs(3))
            .command_timeout(Duration::from_secs(5)),
    );
}

#[test]
fn loss_is_seen_within_the_lease_with_the_defaults() {
    // The defaults: lease 10 s, connect and command timeouts 5 s.
    loss_after_cut(
        "hole-default",
        Duration::from_secs(10),
        ConnectOptions::new(),
    );
}

/// Polled, not woken: `is_lost` turns true at the lease's end even while the
/// agent is still blocked (here in a reconnect that the black hole holds up:
/// every connection is accepted and never answered).
#[test]
fn is_lost_turns_true_at_the_end_of_the_lease_while_the_agent_reconnects() {
    let s = Server::start();
    let proxy = Proxy::start(s.port);
    let lease = Duration::from_millis(1500);
    let o = opts()
        .lease(lease)
        .connect_timeout(Duration::from_secs(5))
        .command_timeout(Duration::from_millis(300));
    let holder = RedisSemaphore::connect(&proxy.url(), "hole-poll", 1, o).unwrap();
    let permit = holder.acquire_blocking(1).unwrap();
    let cut = Instant::now();
    proxy.black_hole();
    let deadline = cut + lease + SLACK;
    while !permit.is_lost() {
        assert!(
            Instant::now() < deadline,
            "is_lost still false {:?} after the cut",
            cut.elapsed()
        );
        thread::sleep(Duration::from_millis(5));
    }
}
