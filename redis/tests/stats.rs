//! `stats()` on the Redis backend (issue 29): what a handle's session
//! recorded through every entry point, and its gauges, against a real
//! redis-server (and a real worker process for a crashed holder).

mod support;

use std::ffi::c_void;
use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::task::Context;
use std::thread;
use std::time::Duration;

use support::*;
use volt_sem_redis::{
    ConnectOptions, Error, Finish, RawAcquire, RawSemaphore, RedisSemaphore, RedisWaiter,
    RedisWaiterState,
};

#[test]
#[ignore = "the body of worker processes (support::worker_main), not a test"]
fn worker() {
    worker_main();
}

/// A client of its own (its own session: its own counters), recording.
fn client(s: &Server, name: &str, permits: usize, o: ConnectOptions) -> RedisSemaphore {
    let sem = RedisSemaphore::connect(&s.url(), name, permits, o.own_session(true)).unwrap();
    sem.enable_stats();
    sem
}

unsafe extern "C" fn count_wake(ctx: *mut c_void) {
    // SAFETY: the tests pass an AtomicUsize that outlives the waiter.
    let c = unsafe { &*(ctx as *const AtomicUsize) };
    c.fetch_add(1, Ordering::SeqCst);
}

/// Acquires `n` permits through the raw API (as the seam and the bindings
/// do), waits (bounded) for the grant, and releases them.
fn raw_acquire_release(sem: &RedisSemaphore, n: usize) {
    let woken = AtomicUsize::new(0);
    let w = pin!(RedisWaiter::new());
    let ctx = &woken as *const AtomicUsize as *mut c_void;
    // SAFETY: idle and pinned; `woken` outlives it (finish_raw below).
    let r = unsafe { sem.acquire_raw(w.as_ref(), n, count_wake, ctx) }.unwrap();
    assert_eq!(r, RawAcquire::Pending);
    eventually("the raw grant", Duration::from_secs(20), || {
        w.state() == RedisWaiterState::Done
    });
    // SAFETY: queued on `sem`.
    let f = unsafe { sem.finish_raw(w.as_ref()) };
    assert!(matches!(f, Finish::Granted { .. }), "{f:?}");
    sem.release(n).unwrap();
}

/// The session id of the one request queued on the semaphore `name`.
fn queued_session(s: &Server, name: &str) -> String {
    let keys = volt_sem_redis::scripts::Keys::new("volt-sem", name);
    let q: Vec<String> = redis::cmd("ZRANGE")
        .arg(&keys.all()[1])
        .arg(0)
        .arg(-1)
        .query(&mut s.raw())
        .unwrap();
    assert_eq!(q.len(), 1, "{q:?}");
    q[0].split_once(':').unwrap().0.to_string()
}

/// The session id of the one session holding permits of `name`.
fn holding_session(s: &Server, name: &str) -> String {
    let keys = volt_sem_redis::scripts::Keys::new("volt-sem", name);
    let held: Vec<(String, u64)> = redis::cmd("HGETALL")
        .arg(&keys.all()[4])
        .query(&mut s.raw())
        .unwrap();
    // (The other sessions' holdings are at 0.)
    let held: Vec<(String, u64)> = held.into_iter().filter(|(_, n)| *n > 0).collect();
    assert_eq!(held.len(), 1, "{held:?}");
    held[0].0.clone()
}

/// Expires session `sid` of `name` in Redis, behind its handle's back (as
/// a pause longer than the lease would): its deadline is set in the past.
fn expire(s: &Server, name: &str, sid: &str) {
    let keys = volt_sem_redis::scripts::Keys::new("volt-sem", name);
    let _: () = redis::cmd("ZADD")
        .arg(&keys.all()[3])
        .arg(1)
        .arg(sid)
        .query(&mut s.raw())
        .unwrap();
}

#[test]
fn grants_and_permits_are_counted_exactly_through_every_entry_point() {
    let s = Server::start();
    let clients: Vec<RedisSemaphore> = (0..2).map(|_| client(&s, "count", 3, opts())).collect();
    let mut threads = Vec::new();
    for (c, sem) in clients.iter().enumerate() {
        for t in 0..3usize {
            let sem = sem.clone();
            threads.push(thread::spawn(move || {
                let (mut grants, mut permits) = (0u64, 0u64);
                for i in 0..20usize {
                    let n = 1 + (i + t) % 3;
                    match i % 5 {
                        0 => drop(sem.acquire_blocking(n).unwrap()),
                        1 => drop(sem.acquire_timeout(n, Duration::from_secs(60)).unwrap()),
                        2 => drop(futures::executor::block_on(sem.acquire(n)).unwrap()),
                        3 => raw_acquire_release(&sem, n),
                        _ => match sem.try_acquire(n) {
                            Ok(p) => drop(p),
                            // A failed try is not a grant.
                            Err(Error::NoPermits) => continue,
                            Err(e) => panic!("try_acquire: {e:?}"),
                        },
                    }
                    grants += 1;
                    permits += n as u64;
                }
                // Requests of 0 permits count as grants too.
                drop(sem.acquire_blocking(0).unwrap());
                drop(sem.try_acquire(0).unwrap());
                drop(futures::executor::block_on(sem.acquire(0)).unwrap());
                (c, grants + 3, permits)
            }));
        }
    }
    let mut want = [(0u64, 0u64); 2];
    for t in threads {
        let (c, g, p) = t.join().unwrap();
        want[c].0 += g;
        want[c].1 += p;
    }
    for (c, sem) in clients.iter().enumerate() {
        sem.flush().unwrap();
        let st = sem.stats();
        assert!(st.recording);
        assert_eq!(
            (st.grants, st.permits_granted),
            want[c],
            "client {c}: {st:?}"
        );
        assert_eq!(
            st.wait.count(),
            st.grants,
            "every grant is in the histogram"
        );
        assert_eq!((st.cancels, st.timeouts, st.lease_losses), (0, 0, 0));
        assert_eq!((st.held, st.queued), (0, 0));
    }
    assert_conserved(&clients[0]);
}

#[test]
fn handles_sharing_a_session_share_its_counters() {
    let s = Server::start();
    let a = connect(&s, "shared", 3);
    let b = connect(&s, "shared", 3); // the same session (same URL, options, name)
    assert!(!a.stats().recording, "off until enabled");
    b.enable_stats();
    b.enable_stats(); // idempotent: nothing reset
    assert!(a.stats().recording);
    drop(a.acquire_blocking(1).unwrap());
    let p = b.try_acquire(2).unwrap();
    let (sa, sb) = (a.stats(), b.stats());
    assert_eq!((sa.grants, sa.permits_granted, sa.held), (2, 3, 2));
    assert_eq!(sa, sb);
    b.enable_stats();
    assert_eq!(b.stats().grants, 2);
    drop(p);
}

#[test]
fn a_queued_grant_waits_at_least_the_hold_and_gauges_show_a_partial_grant() {
    let s = Server::start();
    let h = client(&s, "wait", 3, opts());
    let w = client(&s, "wait", 3, opts());
    let held = h.acquire_blocking(2).unwrap();
    // Seen in the grant's reply: 3 - 2.
    assert_eq!((h.stats().available, h.stats().held), (1, 2));
    let ww = w.clone();
    let t = thread::spawn(move || ww.acquire_blocking(2));
    eventually("w queued", Duration::from_secs(10), || {
        w.stats().queued == 1
    });
    // It waits with a partial grant of 1: neither held nor available.
    let c = assert_conserved(&w);
    assert_eq!((c.queued, c.partial, c.available), (1, 1, 0));
    let sw = w.stats();
    assert_eq!((sw.available, sw.held, sw.queued), (0, 0, 1));
    assert_eq!((sw.grants, sw.wait.count()), (0, 0));
    // h last saw 1 available (its grant's reply): the gauge is what the
    // handle last heard, until it hears more.
    assert_eq!(h.stats().available, 1);
    assert_conserved(&h);
    assert_eq!(h.stats().available, 0);
    // The request was queued before the hold below starts, and is granted
    // by the release after it: its wait covers the hold.
    let hold = Duration::from_millis(300);
    thread::sleep(hold);
    held.release_blocking().unwrap();
    let p = t.join().unwrap().unwrap();
    let sw = w.stats();
    assert_eq!((sw.grants, sw.permits_granted, sw.wait.count()), (1, 2, 1));
    assert!(sw.wait.max() >= hold, "{:?} < {hold:?}", sw.wait.max());
    assert!(sw.wait.sum() >= hold);
    assert!(sw.wait.p50() >= hold);
    assert_eq!((sw.held, sw.queued), (2, 0));
    // h's release handed 1 to w's request and banked the other.
    let sh = h.stats();
    assert_eq!(
        (sh.grants, sh.permits_granted, sh.held, sh.available),
        (1, 2, 0, 1)
    );
    assert_eq!(sh.wait.max(), Duration::ZERO, "granted at once");
    drop(p);
}

#[test]
fn cancels_and_timeouts_are_counted_failed_tries_are_not() {
    let s = Server::start();
    let h = client(&s, "cancel", 1, opts());
    let w = client(&s, "cancel", 1, opts());
    let held = h.acquire_blocking(1).unwrap();
    assert_eq!(w.try_acquire(1).unwrap_err(), Error::NoPermits);
    // acquire_timeout running out: a timeout, and a cancel (it was queued).
    assert_eq!(
        w.acquire_timeout(1, Duration::from_millis(200))
            .unwrap_err(),
        Error::TimedOut
    );
    // An async acquire dropped while queued.
    {
        let mut fut = Box::pin(w.acquire(1));
        let mut cx = Context::from_waker(futures::task::noop_waker_ref());
        assert!(fut.as_mut().poll(&mut cx).is_pending());
        eventually("queued", Duration::from_secs(10), || w.stats().queued == 1);
    }
    // A raw request cancelled by finish_raw (as the bindings cancel).
    {
        let woken = AtomicUsize::new(0);
        let wt = pin!(RedisWaiter::new());
        let ctx = &woken as *const AtomicUsize as *mut c_void;
        // SAFETY: idle and pinned; `woken` outlives it (finish_raw below).
        let r = unsafe { w.acquire_raw(wt.as_ref(), 1, count_wake, ctx) }.unwrap();
        assert_eq!(r, RawAcquire::Pending);
        eventually("queued", Duration::from_secs(10), || w.stats().queued == 1);
        // SAFETY: queued on `w`.
        let f = unsafe { w.finish_raw(wt.as_ref()) };
        assert!(matches!(f, Finish::Cancelled { .. }), "{f:?}");
    }
    // A binding that timed its own wait says so.
    w.record_timeout();
    let st = w.stats();
    assert_eq!(
        (st.grants, st.cancels, st.timeouts, st.queued),
        (0, 3, 2, 0),
        "{st:?}"
    );
    assert_eq!(h.stats().cancels, 0);
    // The cancelled requests left nothing behind: w gets the permit next.
    held.release().unwrap();
    drop(w.acquire_timeout(1, Duration::from_secs(20)).unwrap());
    assert_eq!(w.stats().grants, 1);
    assert_conserved(&w);
}

#[test]
fn a_lease_lost_while_holding_or_waiting_is_counted_once() {
    let s = Server::start();
    let a = client(&s, "lease", 2, short_lease());
    let b = client(&s, "lease", 2, opts());
    // Held: Redis expires the session; a's heartbeat learns it (EXPIRED).
    let p = a.acquire_blocking(1).unwrap();
    expire(&s, "lease", &holding_session(&s, "lease"));
    eventually("a learns the loss", Duration::from_secs(10), || {
        a.stats().lease_losses == 1
    });
    assert!(p.is_lost());
    assert_eq!(p.release().unwrap_err(), Error::LeaseExpired);
    assert_eq!(a.stats().held, 0);
    // Waiting: a's next session expires while its request is queued.
    let hb = b.acquire_blocking(2).unwrap();
    let aa = a.clone();
    let t = thread::spawn(move || aa.acquire_blocking(1));
    eventually("a queued", Duration::from_secs(10), || {
        a.stats().queued == 1
    });
    expire(&s, "lease", &queued_session(&s, "lease"));
    assert_eq!(t.join().unwrap().unwrap_err(), Error::LeaseExpired);
    let st = a.stats();
    assert_eq!(
        (st.lease_losses, st.grants, st.cancels, st.queued),
        (2, 1, 0, 0),
        "{st:?}"
    );
    // A session that holds and waits for nothing loses nothing.
    assert_eq!(b.stats().lease_losses, 0);
    drop(hb);
}

#[test]
fn expired_sessions_this_session_reaps_are_counted_as_reclaims() {
    let s = Server::start();
    let b = client(&s, "reclaim", 2, opts());
    // A holder that crashes (kill -9): its session stays until its lease
    // (1 s) passes, and b's scripts (b is the only client left) reap it.
    let mut worker = Worker::spawn(&s.url(), "reclaim", 2, 1000);
    worker.send("try 2");
    assert!(worker.line().starts_with("granted 2 "));
    worker.kill9();
    assert_eq!(b.stats().reclaims_seen, 0);
    let p = b.acquire_timeout(2, Duration::from_secs(30)).unwrap();
    let st = b.stats();
    assert_eq!(
        (st.reclaims_seen, st.grants, st.lease_losses),
        (1, 1, 0),
        "{st:?}"
    );
    // Counted once: later scripts find nothing more to reap.
    assert_conserved(&b);
    assert_eq!(b.stats().reclaims_seen, 1);
    drop(p);
}

#[test]
fn stats_answers_without_io_while_the_server_is_paused() {
    let mut s = Server::start();
    // A paused server answers nothing: any round trip would wait for the
    // (long) command timeout, or the lease.
    let o = opts()
        .command_timeout(Duration::from_secs(60))
        .lease(Duration::from_secs(60));
    let sem = client(&s, "quiet", 2, o);
    let p = sem.acquire_blocking(1).unwrap();
    let before = sem.stats();
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(s.pid() as i32, libc::SIGSTOP) };
    let (tx, rx) = mpsc::channel();
    let sem2 = sem.clone();
    thread::spawn(move || {
        let _ = tx.send(sem2.stats());
    });
    // Generous: a round trip would block for a minute.
    let got = rx.recv_timeout(Duration::from_secs(10));
    // SAFETY: as above.
    unsafe { libc::kill(s.pid() as i32, libc::SIGCONT) };
    let got = got.expect("stats() waited for Redis");
    assert_eq!(got, before);
    assert_eq!((got.grants, got.held, got.available), (1, 1, 1));
    drop(p);
    sem.flush().unwrap();
    s.stop();
}
