//! `end_sessions_on_signals` in a process that goes on after the signal:
//! the application had its own handler, which runs once the sessions are
//! ended (a graceful shutdown that then joins its workers, say). Each test
//! runs in a child process (this binary, re-run on an ignored test), since
//! the dispositions it installs are the whole process's.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
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

/// How many times the application's own SIGTERM handler ran.
static TERMS: AtomicUsize = AtomicUsize::new(0);

extern "C" fn on_term(_: libc::c_int) {
    TERMS.fetch_add(1, Ordering::SeqCst);
}

/// The child of `a_queued_acquire_completes_when_a_signal_ends_its_session`.
#[test]
#[ignore = "the body of the child process of a test below, not a test"]
fn signal_child() {
    let Ok(url) = std::env::var("VOLT_SIGNAL_CHILD") else {
        return;
    };
    // SAFETY: installs a handler that only touches an atomic.
    unsafe {
        libc::signal(
            libc::SIGTERM,
            on_term as extern "C" fn(libc::c_int) as libc::sighandler_t,
        )
    };
    volt_sem_redis::end_sessions_on_signals().unwrap();
    // The permit is held by the parent (another process: its session is
    // not ended by this one's signal, so nothing can grant the request).
    let waiter = RedisSemaphore::connect(&url, "sig", 1, o()).unwrap();
    let queued = acquire_in_thread(&waiter, 1);
    eventually("queued", Duration::from_secs(30), || {
        waiter.census().unwrap().queued == 1
    });
    // SAFETY: a signal at our own process.
    unsafe { libc::kill(libc::getpid(), libc::SIGTERM) };
    // The application's handler runs after the sessions were ended.
    eventually(
        "the application's handler ran",
        Duration::from_secs(30),
        || TERMS.load(Ordering::SeqCst) == 1,
    );
    let r = queued
        .recv_timeout(Duration::from_secs(20))
        .expect("the queued acquire was never completed after its session ended");
    assert_eq!(r.unwrap_err(), Error::Closed);
    // Every later request of the handle is refused the same way, as after
    // `disconnect` (a release answered NotHeld before).
    assert_eq!(waiter.try_acquire(1).unwrap_err(), Error::Closed);
    assert_eq!(waiter.release(1), Err(Error::Closed));
    // Its entry left the queue with the session.
    let i = volt_sem_redis::inspect(&url, "sig", opts()).unwrap();
    assert_eq!((i.available, i.waiters.len()), (0, 0), "{i:?}");
}

/// A request queued when a signal ends its session completes (`Closed`,
/// as when its handle is disconnected) rather than waiting for ever: the
/// session's end took its entry out of Redis, and the agent thread that
/// would have delivered a grant exits with it.
#[test]
fn a_queued_acquire_completes_when_a_signal_ends_its_session() {
    let s = Server::start();
    let holder = RedisSemaphore::connect(&s.url(), "sig", 1, o()).unwrap();
    let held = holder.acquire_blocking(1).unwrap();
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "signal_child", "--nocapture"])
        .env("VOLT_SIGNAL_CHILD", s.url())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "child failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    drop(held);
}
