//! Ending one handle's session without closing the semaphore (issue 27):
//! `disconnect` hands what the handle held to the next waiter at once (the
//! lease is set far longer than the wait allowed, so the permit can only
//! come back through the session's end), fails the handle's own queued
//! requests with `Closed`, refuses every later request of the handle, and
//! leaves the semaphore open for every other client.

mod support;

use std::future::Future;
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

/// The child of `disconnect_has_ended_the_session_when_it_returns`: two
/// handles with sessions of their own (a 60 s lease); the first holds the
/// one permit, the second queues for it. On "go" it disconnects both at
/// once (as Node's and Python's signal handlers disconnect every handle)
/// while other threads keep both cores busy, and leaves with `_exit` the
/// moment both calls returned: a process killed by the signal it re-raised
/// runs nothing more (no exit handler, no destructor).
#[test]
#[ignore = "the body of the child processes of a test below, not a test"]
fn disconnect_child() {
    let Ok(spec) = std::env::var("VOLT_DISCONNECT_CHILD") else {
        return;
    };
    let (url, name) = spec.split_once(' ').unwrap();
    let holder = RedisSemaphore::connect(url, name, 1, o()).unwrap();
    holder.acquire_blocking(1).unwrap().forget();
    let waiter = RedisSemaphore::connect(url, name, 1, o()).unwrap();
    // Polled once: queued; dropped below, as a signal handler cancels the
    // handle's waiters before it disconnects it.
    let mut queued = Box::pin(waiter.acquire(1));
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    assert!(queued.as_mut().poll(&mut cx).is_pending());
    eventually("queued", Duration::from_secs(30), || {
        holder.census().unwrap().queued == 1
    });
    println!("@@ ready");
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    for _ in 0..4 {
        let stop = stop.clone();
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        });
    }
    let h = holder.clone();
    let t = std::thread::spawn(move || h.disconnect());
    drop(queued);
    waiter.disconnect();
    t.join().unwrap();
    // SAFETY: _exit(2) ends the process at once; nothing of it is used after.
    unsafe { libc::_exit(0) };
}

/// A disconnect that returned has ended the session in Redis: a process
/// that dies right after (a signal re-raised once the handles were
/// disconnected) leaves nothing held until a lease expiry. The agent thread
/// also ends given-up sessions, and it could take the disconnected session
/// off the list the door was about to end it from (it wakes up when the
/// first handle's end grants the permit to the second's queued request):
/// disconnect then returned with the end script not yet sent, and the
/// process died before the agent sent it (a Node test saw the other
/// client's grant only at the lease's expiry).
#[test]
fn disconnect_has_ended_the_session_when_it_returns() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Command, Stdio};
    let s = Server::start();
    for i in 0..40 {
        let name = format!("disc-exit-{i}");
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--ignored", "--exact", "disconnect_child", "--nocapture"])
            .env("VOLT_DISCONNECT_CHILD", format!("{} {name}", s.url()))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        while !line.contains("@@ ready") {
            line.clear();
            assert!(
                out.read_line(&mut line).unwrap() > 0,
                "the child ended early"
            );
        }
        let other = RedisSemaphore::connect(&s.url(), &name, 1, o()).unwrap();
        let mine = acquire_in_thread(&other, 1);
        eventually("queued behind the child's", Duration::from_secs(30), || {
            other.census().unwrap().queued == 2
        });
        writeln!(child.stdin.as_mut().unwrap(), "go").unwrap();
        assert!(child.wait().unwrap().success());
        // Both sessions ended before the child was gone: nothing of them is
        // left (a session the child's agent had yet to end would hold the
        // permit until its 60 s lease expired).
        let c = other.census().unwrap();
        assert_eq!(
            (c.sessions, c.held + c.partial, c.queued),
            (1, 1, 0),
            "iteration {i}: the child's sessions are still in Redis after it exited: {c:?}"
        );
        drop(mine.recv_timeout(Duration::from_secs(10)).unwrap().unwrap());
        other.disconnect();
    }
}
