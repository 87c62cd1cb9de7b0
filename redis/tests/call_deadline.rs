//! Issue 32, item 2: a call on a session whose Redis went silent blocks at
//! most its own timeout. A cancel whose round trip times out gives the
//! session up (its outcome is unknown); ending that session in Redis is the
//! agent's business, not the caller's: before, the cancelling thread also
//! reconnected and sent the end script itself, through the same silence,
//! and returned about three command timeouts late. The cancel itself is the
//! door thread's too: a timed-out acquire does not wait for it at all.
//! The one round trip a timed acquire does wait for past its deadline is its
//! first (the acquire script's), and only for its grace: its answer decides,
//! whatever the timeout, as the other backends try before they wait, if it
//! comes within the grace (the tests below the zero timeout's); a server
//! that stopped answering is given up at the grace's end.

mod support;

use std::sync::mpsc;
use std::time::{Duration, Instant};

use support::*;
use volt_sem_redis::{Error, RedisSemaphore};

#[test]
fn a_timed_out_acquire_returns_within_its_cancels_timeout() {
    let s = Server::start();
    let proxy = Proxy::start(s.port);
    // Far above the acquire's own timeout: waiting for the cancel's round
    // trip would show as seconds.
    let t = Duration::from_secs(6);
    let o = opts()
        .connect_timeout(Duration::from_secs(1))
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
    eprintln!("acquire_timeout({wait:?}) returned after {took:?}: {r:?}");
    // The request was queued in Redis before the silence: the timeout takes
    // it out of the handle's table at once, and the cancel goes to Redis
    // from the door thread.
    assert_eq!(r, Err(Error::TimedOut));
    // Its own timeout, and not the cancel's round trip (which lasts the
    // command timeout here): the bound is half of that beyond the timeout.
    assert!(
        took < wait + t / 2,
        "the acquire returned {took:?} after it started (timeout {wait:?}, command timeout {t:?})"
    );
    drop(permit);
}

/// The caller's deadline bounds a blocking acquire even when the request
/// itself cannot reach Redis: the server is stopped (`SIGSTOP`) before the
/// call, so the acquire script's round trip would last the whole command
/// timeout. Before, the calling thread made that round trip itself (its
/// turn at the handle's door) and returned only after the command timeout
/// (8 s here), with a connection error instead of `TimedOut`. The bound
/// asserted is half the command timeout, far above the 300 ms asked for.
#[test]
fn a_short_timeout_bounds_an_acquire_on_a_stopped_server() {
    timed_out_on_a_stopped_server(
        "stopped",
        Duration::from_millis(300),
        Duration::from_secs(8),
    );
}

/// `acquire_timeout(1, wait)` on a semaphore whose server is stopped before
/// the call must end with `TimedOut` before half the command timeout (else
/// the test panics with what it returned and when), and the permit come
/// back once the server runs again (a grant answered late is given back).
fn timed_out_on_a_stopped_server(name: &str, wait: Duration, command_timeout: Duration) {
    let s = Server::start();
    let o = opts().command_timeout(command_timeout);
    let sem = RedisSemaphore::connect(&s.url(), name, 1, o).unwrap();
    let pid = s.pid() as i32;
    // SAFETY: signals to the redis-server child this test started.
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    let (tx, rx) = mpsc::channel();
    let w = sem.clone();
    std::thread::spawn(move || {
        let started = Instant::now();
        let r = w.acquire_timeout(1, wait);
        let _ = tx.send((started.elapsed(), r.map(|p| p.forget())));
    });
    let early = rx.recv_timeout(command_timeout / 2);
    // SAFETY: as above (the server runs again whatever the outcome).
    unsafe { libc::kill(pid, libc::SIGCONT) };
    let (took, r) = match early {
        Ok(x) => x,
        Err(_) => {
            let late = rx.recv_timeout(Duration::from_secs(30)).expect("hung");
            panic!(
                "acquire_timeout({wait:?}) returned after {:?} (command timeout {command_timeout:?}): {:?}",
                late.0, late.1
            );
        }
    };
    eprintln!("acquire_timeout({wait:?}) on a stopped server returned after {took:?}: {r:?}");
    assert_eq!(r, Err(Error::TimedOut));
    // The request reached Redis once it ran again, and was granted to a
    // caller that had given up: the handle gives the permit back.
    eventually("the permit back", Duration::from_secs(20), || {
        sem.census()
            .is_ok_and(|c| c.conserved() && c.available == 1 && c.queued == 0)
    });
    assert_conserved(&sem);
}

/// The same with a timeout far shorter than a round trip (1 ms), which the
/// grace extends (the first answer is waited for past the deadline, so that
/// free permits are granted on a healthy server): on a stopped server the
/// grace ends the wait, with `TimedOut`, long before the command timeout
/// (6 s). Before the grace, h76's first design waited for the answer until
/// the command timeout and failed with `Connection`. Never `Ok`; once the
/// server runs again, the permit is back. The bound asserted is half the
/// command timeout, far above the grace (250 ms).
#[test]
fn a_tiny_timeout_on_a_stopped_server_ends_with_its_grace() {
    timed_out_on_a_stopped_server(
        "stopped-tiny",
        Duration::from_millis(1),
        Duration::from_secs(6),
    );
}

/// A zero timeout is one attempt, as in the in-process and the shared
/// semaphore (and as C's `volt_sem_acquire_blocking(sem, n, 0)` and the
/// bindings' `timeout=0` read it): granted when permits are free and nobody
/// queues, `TimedOut` otherwise. Before, with the request sent by the door
/// thread and the deadline already past, a zero timeout timed out even on
/// an idle semaphore (0 of 50 granted).
#[test]
fn a_zero_timeout_is_one_attempt() {
    let s = Server::start();
    let sem = RedisSemaphore::connect(&s.url(), "zero", 2, opts()).unwrap();
    for i in 0..50 {
        let p = sem.acquire_timeout(2, Duration::ZERO);
        assert!(p.is_ok(), "call {i}: {p:?} on an idle semaphore");
    }
    let held = sem.acquire_blocking(1).unwrap();
    assert_eq!(
        sem.acquire_timeout(2, Duration::ZERO).map(|p| p.forget()),
        Err(Error::TimedOut)
    );
    drop(held);
    sem.flush().unwrap();
    let c = assert_conserved(&sem);
    assert_eq!((c.available, c.queued), (2, 0));
}

/// A positive timeout far shorter than any round trip (1 ns, 1 µs) with the
/// permits free is granted, as on the in-process and shared semaphores: the
/// first attempt (the acquire script's round trip) is always made and its
/// grant honoured whatever the deadline; only a request that had to queue
/// is bound by it. Weighted requests too (2 of 3 free). Before, the
/// deadline had passed before the answer could come: every call timed out
/// on an idle semaphore. No timing assert: the outcome is decided by the
/// answer, not by how fast it comes.
#[test]
fn a_tiny_timeout_with_permits_free_is_granted() {
    let s = Server::start();
    let sem = RedisSemaphore::connect(&s.url(), "tiny", 3, opts()).unwrap();
    sem.enable_stats();
    for (i, t) in [Duration::from_nanos(1), Duration::from_micros(1)]
        .into_iter()
        .cycle()
        .take(20)
        .enumerate()
    {
        let p = sem.acquire_timeout(1, t);
        assert!(p.is_ok(), "call {i} ({t:?}): {p:?} on an idle semaphore");
    }
    let held = sem.acquire_blocking(1).unwrap();
    let p = sem.acquire_timeout(2, Duration::from_nanos(1));
    assert!(p.is_ok(), "2 of the 2 free, 1 ns: {p:?}");
    drop(p);
    drop(held);
    sem.flush().unwrap();
    let c = assert_conserved(&sem);
    assert_eq!((c.available, c.queued, c.partial), (3, 0, 0));
    assert_eq!(sem.stats().timeouts, 0);
}

/// The other half: a request that has to queue is still bound by its tiny
/// deadline, even though the deadline passed before the acquire script's
/// answer said "queued": it is cancelled (its partial grant handed back),
/// nothing stays queued, no permit is lost or kept.
#[test]
fn a_queued_request_with_a_tiny_timeout_times_out_and_conserves() {
    let s = Server::start();
    let sem = RedisSemaphore::connect(&s.url(), "tiny-queued", 3, opts()).unwrap();
    sem.enable_stats();
    let o = opts().own_session(true);
    let other = RedisSemaphore::connect(&s.url(), "tiny-queued", 3, o).unwrap();
    // 2 of 3 held elsewhere: a request for 3 queues with a partial grant of 1.
    let held = other.acquire_blocking(2).unwrap();
    for i in 0..10 {
        let t = if i % 2 == 0 {
            Duration::from_nanos(1)
        } else {
            Duration::from_micros(1)
        };
        let r = sem.acquire_timeout(3, t).map(|p| p.forget());
        assert_eq!(r, Err(Error::TimedOut), "call {i} ({t:?})");
        // Nothing left behind: its cancel went out before this flush.
        sem.flush().unwrap();
        let c = assert_conserved(&sem);
        assert_eq!(
            (c.available, c.held, c.partial, c.queued),
            (1, 2, 0, 0),
            "call {i}: {c:?}"
        );
    }
    assert_eq!(sem.held_permits(), 0);
    let st = sem.stats();
    assert_eq!((st.timeouts, st.cancels, st.grants), (10, 10, 0));
    drop(held);
    other.flush().unwrap();
    let c = assert_conserved(&sem);
    assert_eq!((c.available, c.queued), (3, 0));
}
