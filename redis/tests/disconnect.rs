//! Ending one handle's session without closing the semaphore (issue 27):
//! `disconnect` hands what the handle held to the next waiter at once (the
//! lease is set far longer than the wait allowed, so the permit can only
//! come back through the session's end), fails the handle's own queued
//! requests with `Closed`, refuses every later request of the handle, and
//! leaves the semaphore open for every other client.

mod support;

use std::time::Duration;

use support::*;
use volt_sem_redis::{ConnectOptions, Error, RedisSemaphore};

#[test]
#[ignore = "the body of worker processes (support::worker_main), not a test"]
fn worker() {
    worker_main();
}

fn o() -> ConnectOptions {
    opts().own_session(true).lease(Duration::from_secs(60))
}

#[test]
fn disconnect_hands_permits_on_and_fails_own_waiters() {
    let s = Server::start();
    let a = RedisSemaphore::connect(&s.url(), "disc", 1, o()).unwrap();
    let b = RedisSemaphore::connect(&s.url(), "disc", 1, o()).unwrap();
    let held = a.acquire_blocking(1).unwrap();
    held.forget(); // counted by the handle only: the session's end must return it
    let own = acquire_in_thread(&a, 1);
    eventually("a's request queued", Duration::from_secs(30), || {
        b.census().unwrap().queued == 1
    });
    let other = acquire_in_thread(&b, 1);
    eventually("b's request queued", Duration::from_secs(30), || {
        b.census().unwrap().queued == 2
    });
    assert!(!a.is_disconnected());
    a.disconnect();
    assert!(a.is_disconnected());
    // Well before the 60 s lease: the permit came back with the session.
    let p = other
        .recv_timeout(Duration::from_secs(10))
        .unwrap()
        .unwrap();
    assert_eq!(
        own.recv_timeout(Duration::from_secs(10))
            .unwrap()
            .unwrap_err(),
        Error::Closed
    );
    assert_eq!(a.try_acquire(1).unwrap_err(), Error::Closed);
    assert_eq!(a.release(1).unwrap_err(), Error::Closed);
    a.disconnect(); // idempotent
    let c = b.census().unwrap();
    assert!(!c.closed);
    assert_eq!((c.held, c.queued, c.sessions), (1, 0, 1));
    drop(p);
    assert_eq!(assert_conserved(&b).available, 1);
}
