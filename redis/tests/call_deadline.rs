//! Issue 32, item 2: a call on a session whose Redis went silent blocks at
//! most its own timeout. A cancel whose round trip times out gives the
//! session up (its outcome is unknown); ending that session in Redis is the
//! agent's business, not the caller's: before, the cancelling thread also
//! reconnected and sent the end script itself, through the same silence,
//! and returned about three command timeouts late.

mod support;

use std::sync::mpsc;
use std::time::{Duration, Instant};

use support::*;
use volt_sem_redis::{Error, RedisSemaphore};

/// Scheduling slack on a loaded 2-core machine. The defect this catches
/// returned after 4.56 s, so the bound (timeout + command timeout + slack,
/// 3.7 s) stays under it.
const SLACK: Duration = Duration::from_millis(1200);

#[test]
fn a_timed_out_acquire_returns_within_its_cancels_timeout() {
    let s = Server::start();
    let proxy = Proxy::start(s.port);
    let t = Duration::from_secs(1);
    let o = opts()
        .connect_timeout(t)
        .command_timeout(t)
        .own_session(true);
    let holder = RedisSemaphore::connect(&s.url(), "deadline", 1, opts()).unwrap();
    let waiter = RedisSemaphore::connect(&proxy.url(), "deadline", 1, o).unwrap();
    let permit = holder.acquire_blocking(1).unwrap();
    let wait = Duration::from_millis(1500);
    let (tx, rx) = mpsc::channel();
    let w = waiter.clone();
    std::thread::spawn(move || {
        let started = Instant::now();
        let r = w.acquire_timeout(1, wait);
        let _ = tx.send((started.elapsed(), r.map(|p| p.forget())));
    });
    eventually("queued", Duration::from_secs(10), || {
        holder.census().unwrap().queued == 1
    });
    // Silence before the acquire's timeout: its cancel then times out.
    proxy.black_hole();
    let (took, r) = rx.recv_timeout(Duration::from_secs(30)).expect("hung");
    assert!(
        matches!(
            r,
            Err(Error::TimedOut | Error::LeaseExpired | Error::Connection(_))
        ),
        "{r:?}"
    );
    eprintln!("acquire_timeout({wait:?}) returned after {took:?}: {r:?}");
    // Its own timeout, then one cancel round trip (the command timeout).
    assert!(
        took <= wait + t + SLACK,
        "the acquire returned {took:?} after it started (timeout {wait:?}, command timeout {t:?})"
    );
    drop(permit);
}
