//! The Rust API against a real redis-server, several handles in one process
//! (handles with the same URL, options and name share one session, see
//! shared_session.rs; those with other options have their own).

mod support;

use std::future::Future;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;
use volt_sem_redis::RawSemaphore;

use support::*;
use volt_sem_redis::{ConnectOptions, Error, RedisSemaphore, MAX_NAME_LEN};

#[test]
#[ignore = "the body of worker processes (support::worker_main), not a test"]
fn worker() {
    worker_main();
}

#[test]
fn acquire_release_try_and_tokens() {
    let s = Server::start();
    let sem = connect(&s, "basic", 3);
    assert_eq!(sem.total_permits(), 3);
    // 0 permits: granted at once, token 0, nothing held.
    let zero = sem.try_acquire(0).unwrap();
    assert_eq!((zero.token(), sem.held_permits()), (0, 0));
    drop(zero);
    let a = sem.try_acquire(2).unwrap();
    assert_eq!(sem.held_permits(), 2);
    assert_eq!(sem.try_acquire(2).unwrap_err(), Error::NoPermits);
    let b = sem.acquire_blocking(1).unwrap();
    assert!(b.token() > a.token(), "tokens increase per grant");
    // `Debug`: the count and the token, as the other backends' permits.
    let debug = format!("Permit {{ permits: 2, token: {}, .. }}", a.token());
    assert_eq!(format!("{a:?}"), debug);
    let c = assert_conserved(&sem);
    assert_eq!((c.available, c.held), (0, 3));
    drop(a);
    drop(b);
    let c = assert_conserved(&sem);
    assert_eq!((c.available, c.held), (3, 0));
    assert_eq!(sem.held_permits(), 0);
    // A flushed script cache (as after a restart with persistence): EVALSHA
    // fails with NOSCRIPT and the scripts are sent again with EVAL.
    let _: () = redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query(&mut s.raw())
        .unwrap();
    drop(sem.acquire_blocking(3).unwrap());
    // A permit of 0 is free and never blocks.
    assert_eq!(sem.try_acquire(0).unwrap().token(), 0);
}

#[test]
fn weights_fifo_and_partial_grants() {
    let s = Server::start();
    let a = connect(&s, "fifo", 4);
    let b = connect(&s, "fifo", 4);
    let held = a.acquire_blocking(3).unwrap();
    // b queues for 4: it drains the 1 available as a partial grant.
    let (tx, rx) = mpsc::channel();
    let b2 = b.clone();
    let t4 = thread::spawn(move || {
        let p = b2.acquire_blocking(4).unwrap();
        tx.send(4).unwrap();
        p
    });
    eventually(
        "b queued with its partial grant",
        Duration::from_secs(5),
        || {
            let c = a.census().unwrap();
            c.queued == 1 && c.partial == 1 && c.available == 0
        },
    );
    // A later acquire(1) must not overtake the queued acquire(4).
    assert_eq!(a.try_acquire(1).unwrap_err(), Error::NoPermits);
    let a2 = a.clone();
    let (tx1, rx1) = mpsc::channel();
    let t1 = thread::spawn(move || {
        let p = a2.acquire_blocking(1).unwrap();
        tx1.send(1).unwrap();
        p
    });
    eventually(
        "the acquire(1) queued behind",
        Duration::from_secs(5),
        || a.census().unwrap().queued == 2,
    );
    drop(held); // 3 permits: completes the 4 at the head; nothing left for the 1.
    assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap(), 4);
    let p4 = t4.join().unwrap();
    assert!(rx1.try_recv().is_err(), "the acquire(1) overtook");
    assert_conserved(&a);
    drop(p4);
    assert_eq!(rx1.recv_timeout(Duration::from_secs(10)).unwrap(), 1);
    let p1 = t1.join().unwrap();
    drop(p1);
    let c = assert_conserved(&a);
    assert_eq!((c.available, c.queued), (4, 0));
}

#[test]
fn timeout_hands_partial_grant_on() {
    let s = Server::start();
    let a = connect(&s, "cancel", 4);
    let b = connect(&s, "cancel", 4);
    let held = a.acquire_blocking(2).unwrap();
    // c, behind b, needs 2: it can only be served if b's partial grant is handed on.
    // c connects before b's timeout starts: c must be queued before b gives
    // up, and a connection made on a loaded machine can take hundreds of ms.
    let c = connect(&s, "cancel", 4);
    let (tx, rx) = mpsc::channel();
    let bb = b.clone();
    let tb = thread::spawn(move || bb.acquire_timeout(4, Duration::from_secs(2)));
    eventually("b queued", Duration::from_secs(5), || {
        a.census().unwrap().partial == 2
    });
    let tc = thread::spawn(move || {
        let p = c.acquire_blocking(2).unwrap();
        tx.send(()).unwrap();
        (p, c)
    });
    eventually("c queued", Duration::from_secs(5), || {
        a.census().unwrap().queued == 2
    });
    assert_eq!(tb.join().unwrap().unwrap_err(), Error::TimedOut);
    rx.recv_timeout(Duration::from_secs(10)).unwrap();
    let (p, _c) = tc.join().unwrap();
    assert_conserved(&a);
    drop(p);
    drop(held);
    assert_eq!(assert_conserved(&a).available, 4);
}

#[test]
fn dropped_future_cancels_and_hands_on() {
    let s = Server::start();
    let a = connect(&s, "future", 3);
    let b = connect(&s, "future", 3);
    let held = a.acquire_blocking(2).unwrap();
    {
        let mut fut = Box::pin(b.acquire(3));
        let waker = futures::task::noop_waker();
        let mut cx = std::task::Context::from_waker(&waker);
        assert!(fut.as_mut().poll(&mut cx).is_pending());
        assert_eq!(a.census().unwrap().partial, 1);
    } // dropped: the partial grant of 1 goes back
    let c = assert_conserved(&a);
    assert_eq!((c.available, c.queued, c.partial), (1, 0, 0));
    // The async path end to end.
    let bb = b.clone();
    let t = thread::spawn(move || futures::executor::block_on(bb.acquire(3)));
    eventually("queued", Duration::from_secs(5), || {
        a.census().unwrap().queued == 1
    });
    drop(held);
    let p = t.join().unwrap().unwrap();
    assert_eq!(p.permits(), 3);
    assert!(p.token() > 0);
}

#[test]
fn close_wakes_every_client() {
    let s = Server::start();
    let a = connect(&s, "close", 1);
    let held = a.acquire_blocking(1).unwrap();
    let mut ts = Vec::new();
    for _ in 0..3 {
        let h = connect(&s, "close", 1);
        ts.push(thread::spawn(move || h.acquire_blocking(1).map(|_| ())));
    }
    eventually("3 queued", Duration::from_secs(5), || {
        a.census().unwrap().queued == 3
    });
    let closer = connect(&s, "close", 1);
    closer.close().unwrap();
    for t in ts {
        assert_eq!(t.join().unwrap(), Err(Error::Closed));
    }
    assert_eq!(a.try_acquire(1).unwrap_err(), Error::Closed);
    // acquire(0) as on every other backend: closed is closed, for a handle
    // that has not seen the close yet too.
    let fresh = connect(&s, "close", 1);
    assert_eq!(fresh.try_acquire(0).unwrap_err(), Error::Closed);
    assert_eq!(fresh.acquire_blocking(0).unwrap_err(), Error::Closed);
    // The async acquire(0) too (it was granted without asking Redis).
    let fresh_async =
        RedisSemaphore::connect(&s.url(), "close", 1, opts().own_session(true)).expect("connect");
    assert_eq!(
        futures::executor::block_on(fresh_async.acquire(0)).unwrap_err(),
        Error::Closed
    );
    assert_eq!(
        futures::executor::block_on(a.acquire(0)).unwrap_err(),
        Error::Closed
    );
    // Held permits can still be released after close.
    held.release().unwrap();
    let c = assert_conserved(&a);
    assert!(c.closed);
    assert_eq!(c.available, 1);
}

#[test]
fn bad_input() {
    let s = Server::start();
    let url = s.url();
    let o = opts;
    assert!(matches!(
        RedisSemaphore::connect("not a url", "x", 1, o()).unwrap_err(),
        Error::InvalidUrl(_)
    ));
    assert!(matches!(
        RedisSemaphore::connect("http://127.0.0.1:1", "x", 1, o()).unwrap_err(),
        Error::InvalidUrl(_)
    ));
    assert_eq!(
        RedisSemaphore::connect(&url, "", 1, o()).unwrap_err(),
        Error::InvalidName
    );
    let long = "x".repeat(MAX_NAME_LEN + 1);
    assert_eq!(
        RedisSemaphore::connect(&url, &long, 1, o()).unwrap_err(),
        Error::InvalidName
    );
    assert_eq!(
        RedisSemaphore::connect(&url, "a{b", 1, o()).unwrap_err(),
        Error::InvalidName
    );
    // NUL: no C caller (nor the command line) could name it.
    assert_eq!(
        RedisSemaphore::connect(&url, "a\0b", 1, o()).unwrap_err(),
        Error::InvalidName
    );
    assert_eq!(
        RedisSemaphore::connect(&url, "x", 1, o().prefix("p\0q")).unwrap_err(),
        Error::InvalidPrefix
    );
    assert!(RedisSemaphore::connect(&url, &"x".repeat(MAX_NAME_LEN), 1, o()).is_ok());
    assert_eq!(
        RedisSemaphore::connect(&url, "x", 0, o()).unwrap_err(),
        Error::InvalidPermits
    );
    assert_eq!(
        RedisSemaphore::connect(&url, "x", usize::MAX, o()).unwrap_err(),
        Error::InvalidPermits
    );
    assert_eq!(
        RedisSemaphore::connect(&url, "x", 1, o().prefix("")).unwrap_err(),
        Error::InvalidPrefix
    );
    // Tenants are kept apart by their prefix: prefix "a" with name "b:c" and
    // prefix "a:b" with name "c" would share the keys `{a:b:c}:*`. A ':' in
    // the prefix is refused, so that the first ':' of a key's tag ends it.
    let held = RedisSemaphore::connect(&url, "b:c", 1, o().prefix("a")).unwrap();
    let _p = held.try_acquire(1).unwrap();
    assert_eq!(
        RedisSemaphore::connect(&url, "c", 1, o().prefix("a:b"))
            .map(|other| other.try_acquire(1).map(|p| p.forget()))
            .unwrap_err(),
        Error::InvalidPrefix,
        "another tenant's prefix reached the semaphore of prefix \"a\""
    );
    assert!(matches!(
        RedisSemaphore::connect(&url, "x", 1, o().lease(Duration::from_millis(10))).unwrap_err(),
        Error::InvalidOption(_)
    ));
    // Another total for an existing semaphore: refused, nothing changed.
    let sem = connect(&s, "total", 3);
    assert_eq!(
        RedisSemaphore::connect(&url, "total", 4, o()).unwrap_err(),
        Error::TotalMismatch { existing: 3 }
    );
    assert_eq!(sem.census().unwrap().total, 3);
    // Prefixes separate tenants.
    let other = RedisSemaphore::connect(&url, "total", 4, o().prefix("tenant2")).unwrap();
    assert_eq!(other.total_permits(), 4);
    // More than the total: could never be granted.
    assert_eq!(sem.try_acquire(4).unwrap_err(), Error::TooManyPermits);
    assert_eq!(sem.acquire_blocking(4).unwrap_err(), Error::TooManyPermits);
    // Release of more than held: refused, nothing released.
    let p = sem.acquire_blocking(2).unwrap();
    assert_eq!(sem.release(3).unwrap_err(), Error::NotHeld { held: 2 });
    let c = assert_conserved(&sem);
    assert_eq!((c.held, c.available), (2, 1));
    drop(p);
    assert_eq!(sem.release(1).unwrap_err(), Error::NotHeld { held: 0 });
    assert_eq!(assert_conserved(&sem).available, 3);
}

#[test]
fn unreachable_and_wrong_password() {
    // Nothing listens on a port we just freed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let e = RedisSemaphore::connect(
        &format!("redis://127.0.0.1:{port}"),
        "x",
        1,
        opts().connect_timeout(Duration::from_millis(500)),
    )
    .unwrap_err();
    assert!(matches!(e, Error::Connection(_)), "{e:?}");

    let s = Server::start_with(Some("s3cret-pw"));
    let bad = format!("redis://:wrong-pw-123@127.0.0.1:{}", s.port);
    let e = RedisSemaphore::connect(&bad, "x", 1, opts()).unwrap_err();
    assert_eq!(e, Error::Auth);
    assert!(!format!("{e} {e:?}").contains("wrong-pw-123"));
    let e = RedisSemaphore::connect(&format!("redis://127.0.0.1:{}", s.port), "x", 1, opts())
        .unwrap_err();
    assert_eq!(e, Error::Auth, "no password given");
    let sem = RedisSemaphore::connect(&s.url(), "x", 1, opts()).unwrap();
    let shown = format!("{sem:?} {:?}", sem.try_acquire(1).unwrap());
    assert!(!shown.contains("s3cret-pw"), "{shown}");
}

#[test]
fn redis_restarted_empty_mid_wait() {
    let mut s = Server::start();
    let a = connect(&s, "restart", 1);
    let held = a.acquire_blocking(1).unwrap();
    let b = connect(&s, "restart", 1);
    let bb = b.clone();
    let t = thread::spawn(move || bb.acquire_blocking(1).map(|_| ()));
    // Queued in Redis, and b's Pending answer read by b (`stats().queued`):
    // Redis may answer a's census first, and an answer lost to the restart
    // is an uncertain outcome (a connection error), not the state loss.
    eventually("queued", Duration::from_secs(5), || {
        a.census().unwrap().queued == 1 && b.stats().queued == 1
    });
    s.restart_empty();
    // The waiter fails with a clear error (at its next heartbeat) instead of
    // a silent new semaphore with every permit free.
    assert_eq!(t.join().unwrap(), Err(Error::StateLost));
    assert_eq!(held.release().unwrap_err(), Error::StateLost);
    assert_eq!(b.try_acquire(1).unwrap_err(), Error::StateLost);
    // Connecting again starts afresh.
    let fresh = connect(&s, "restart", 1);
    drop(fresh.try_acquire(1).unwrap());
}

#[test]
fn lease_lost_in_process() {
    // Expire a's session behind its back (as a long pause would) and check
    // that it learns it: its permit reports the loss, its release reports
    // LeaseExpired and releases nothing, and the next acquire works.
    let s = Server::start();
    let a = RedisSemaphore::connect(&s.url(), "lease", 2, short_lease()).unwrap();
    let p = a.acquire_blocking(2).unwrap();
    let b = connect(&s, "lease", 2);
    let bb = b.clone();
    let t = thread::spawn(move || bb.acquire_blocking(1));
    eventually("queued", Duration::from_secs(5), || {
        b.census().unwrap().queued == 1
    });
    let keys = volt_sem_redis::scripts::Keys::new("volt-sem", "lease");
    let mut raw = s.raw();
    // a's session is the one holding 2.
    let held: Vec<(String, u64)> = redis::cmd("HGETALL")
        .arg(&keys.all()[4])
        .query(&mut raw)
        .unwrap();
    // (The other sessions' holdings are at 0.)
    let held: Vec<(String, u64)> = held.into_iter().filter(|(_, n)| *n > 0).collect();
    assert_eq!(held.len(), 1);
    let _: () = redis::cmd("ZADD")
        .arg(&keys.all()[3])
        .arg(1)
        .arg(&held[0].0)
        .query(&mut raw)
        .unwrap();
    // b's heartbeat reaps a's session and hands its permits to b.
    let q = t.join().unwrap().unwrap();
    assert!(q.token() > p.token(), "the new grant's token is larger");
    eventually("a learns the loss", Duration::from_secs(5), || p.is_lost());
    futures::executor::block_on(p.lost());
    assert_eq!(p.release().unwrap_err(), Error::LeaseExpired);
    let c = assert_conserved(&a);
    assert!(c.held <= 1);
    drop(a.acquire_timeout(1, Duration::from_secs(5)).unwrap());
}

#[test]
fn options_and_debug_are_clean() {
    let o = ConnectOptions::new();
    assert_eq!(o, ConnectOptions::default());
    let e = Error::Connection("x".into());
    assert!(e.to_string().contains("connection"));
}

#[test]
fn redis_unreachable_for_less_and_for_more_than_the_lease() {
    let s = Server::start();
    let o = || {
        opts()
            .lease(Duration::from_millis(2000))
            .command_timeout(Duration::from_millis(300))
    };
    let pause = |d: Duration| {
        // SAFETY: signals to the redis-server child this test started.
        unsafe { libc::kill(s.pid() as i32, libc::SIGSTOP) };
        thread::sleep(d);
        // SAFETY: as above.
        unsafe { libc::kill(s.pid() as i32, libc::SIGCONT) };
    };
    let a = RedisSemaphore::connect(&s.url(), "outage", 1, o()).unwrap();
    let b = RedisSemaphore::connect(&s.url(), "outage", 1, o()).unwrap();
    // Shorter than the lease: the waiter keeps its place and is served.
    let held = a.acquire_blocking(1).unwrap();
    let bb = b.clone();
    let t = thread::spawn(move || bb.acquire_blocking(1));
    // b's Pending answer read by b too: one still unwritten when Redis stops
    // would time out (300 ms), an uncertain outcome.
    eventually("queued", Duration::from_secs(5), || {
        a.census().unwrap().queued == 1 && b.stats().queued == 1
    });
    pause(Duration::from_millis(500));
    held.release().unwrap();
    let p = t.join().unwrap().unwrap();
    drop(p);
    assert_eq!(assert_conserved(&a).available, 1);
    // Longer than the lease: the waiter fails with a clear error, the
    // holder's release reports the loss, and every permit comes back.
    let held = a.acquire_blocking(1).unwrap();
    let bb = b.clone();
    let t = thread::spawn(move || bb.acquire_blocking(1));
    eventually("queued", Duration::from_secs(5), || {
        a.census().unwrap().queued == 1 && b.stats().queued == 1
    });
    pause(Duration::from_millis(3000));
    assert_eq!(t.join().unwrap().unwrap_err(), Error::LeaseExpired);
    assert_eq!(held.release().unwrap_err(), Error::LeaseExpired);
    eventually("all back", Duration::from_secs(10), || {
        let c = a.census().unwrap();
        c.conserved() && c.available == 1 && c.queued == 0
    });
    // Both handles work again with new sessions.
    drop(b.acquire_timeout(1, Duration::from_secs(5)).unwrap());
}

mod raw {
    use super::*;
    use std::ffi::c_void;
    use std::pin::pin;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use volt_sem_redis::{Finish, RawAcquire, RedisWaiter, RedisWaiterState};

    unsafe extern "C" fn count(ctx: *mut c_void) {
        // SAFETY: the tests pass an `AtomicUsize` that outlives the waiter.
        unsafe { &*(ctx as *const AtomicUsize) }.fetch_add(1, Ordering::SeqCst);
    }

    #[test]
    fn ready_pending_granted_and_cancelled() {
        let s = Server::start();
        let a = connect(&s, "raw", 2);
        let b = connect(&s, "raw", 2);
        let wakes = AtomicUsize::new(0);
        let ctx = &wakes as *const AtomicUsize as *mut c_void;
        let w = pin!(RedisWaiter::new());
        // Never Ready, even uncontended: the round trip is the door
        // thread's, and the grant comes through the callback.
        // SAFETY: idle and pinned; `wakes` outlives it.
        let r = unsafe { a.acquire_raw(w.as_ref(), 2, count, ctx) }.unwrap();
        assert_eq!(r, RawAcquire::Pending);
        assert!(a.owns(&w) && !b.owns(&w));
        eventually("a's callback", Duration::from_secs(5), || {
            wakes.load(Ordering::SeqCst) == 1
        });
        // SAFETY: queued on a.
        let Finish::Granted { token: first } = (unsafe { a.finish_raw(w.as_ref()) }) else {
            panic!("not granted")
        };
        assert!(first > 0 && w.token() == first && !w.is_busy());
        assert_eq!(a.held_permits(), 2);
        // b queues; the callback runs on b's agent thread when a releases.
        let wb = pin!(RedisWaiter::new());
        // SAFETY: as above.
        let r = unsafe { b.acquire_raw(wb.as_ref(), 1, count, ctx) }.unwrap();
        assert_eq!(r, RawAcquire::Pending);
        assert_eq!(wb.state(), RedisWaiterState::Waiting);
        a.release(2).unwrap();
        eventually("b's callback", Duration::from_secs(5), || {
            wakes.load(Ordering::SeqCst) == 2
        });
        // SAFETY: queued on b.
        let f = unsafe { b.finish_raw(wb.as_ref()) };
        let Finish::Granted { token } = f else {
            panic!("{f:?}")
        };
        assert!(token > first);
        assert_eq!(b.held_permits(), 1);
        // A queued request cancelled: its owner is done at once, and the
        // door hands its partial grant on (in order with a's later calls:
        // the census below sees it).
        let w2 = pin!(RedisWaiter::new());
        // SAFETY: as above.
        let r = unsafe { a.acquire_raw(w2.as_ref(), 2, count, ctx) }.unwrap();
        assert_eq!(r, RawAcquire::Pending);
        eventually("a's request queued", Duration::from_secs(5), || {
            a.census().unwrap().partial == 1
        });
        // SAFETY: queued on a.
        assert_eq!(
            unsafe { a.finish_raw(w2.as_ref()) },
            Finish::Cancelled { returned: 0 }
        );
        // SAFETY: idle now.
        assert_eq!(unsafe { a.finish_raw(w2.as_ref()) }, Finish::Idle);
        let c = a.census().unwrap();
        assert_eq!((c.partial, c.queued, c.available), (0, 0, 1));
        assert_eq!(wakes.load(Ordering::SeqCst), 2, "no callback for a cancel");
        b.release(1).unwrap();
        assert_eq!(assert_conserved(&b).available, 2);
    }

    struct Slot {
        sem: RedisSemaphore,
        waiter: RedisWaiter,
        seen: std::sync::Mutex<Option<Finish>>,
    }

    unsafe extern "C" fn finish_inside(ctx: *mut c_void) {
        // SAFETY: `ctx` is the `Slot`, alive until the test's finish_raw.
        let slot = unsafe { &*(ctx as *const Slot) };
        // SAFETY: the waiter is queued on `sem`; called from its own callback.
        let f = unsafe {
            slot.sem
                .finish_raw(std::pin::Pin::new_unchecked(&slot.waiter))
        };
        *slot.seen.lock().unwrap() = Some(f);
    }

    #[test]
    fn finish_from_inside_the_callback_and_close() {
        let s = Server::start();
        let a = connect(&s, "raw2", 1);
        let held = a.try_acquire(1).unwrap();
        let b = connect(&s, "raw2", 1);
        let slot = Arc::new(Slot {
            sem: b.clone(),
            waiter: RedisWaiter::new(),
            seen: std::sync::Mutex::new(None),
        });
        let ctx = Arc::as_ptr(&slot) as *mut c_void;
        // SAFETY: the Arc never moves its contents; it outlives the request.
        let w = unsafe { std::pin::Pin::new_unchecked(&slot.waiter) };
        // SAFETY: idle, pinned in the Arc, ctx alive.
        assert_eq!(
            unsafe { b.acquire_raw(w, 1, finish_inside, ctx) }.unwrap(),
            RawAcquire::Pending
        );
        drop(held);
        eventually("consumed in the callback", Duration::from_secs(5), || {
            slot.seen.lock().unwrap().is_some()
        });
        assert!(matches!(
            *slot.seen.lock().unwrap(),
            Some(Finish::Granted { .. })
        ));
        eventually("idle after the callback", Duration::from_secs(5), || {
            !slot.waiter.is_busy()
        });
        // SAFETY: idle.
        assert_eq!(unsafe { b.finish_raw(w) }, Finish::Idle);
        b.release(1).unwrap();
        // close wakes a raw waiter with Closed.
        let held = a.try_acquire(1).unwrap();
        let wakes = AtomicUsize::new(0);
        let w2 = pin!(RedisWaiter::new());
        // SAFETY: idle and pinned; `wakes` outlives it.
        let r = unsafe {
            b.acquire_raw(
                w2.as_ref(),
                1,
                count,
                &wakes as *const AtomicUsize as *mut c_void,
            )
        };
        assert_eq!(r.unwrap(), RawAcquire::Pending);
        a.close().unwrap();
        eventually("closed callback", Duration::from_secs(5), || {
            wakes.load(Ordering::SeqCst) == 1
        });
        // SAFETY: queued on b.
        assert_eq!(unsafe { b.finish_raw(w2.as_ref()) }, Finish::Closed);
        drop(held);
        assert_conserved(&a);
    }
}

/// `release_blocking` (on the handle and on a permit) returns once Redis has
/// applied the release: another session's census sees the permits free
/// without a `flush`. Its local checks are `release`'s.
#[test]
fn release_blocking_is_applied_when_it_returns() {
    let s = Server::start();
    let a = connect(&s, "release-blocking", 3);
    let other = RedisSemaphore::connect(&s.url(), "release-blocking", 3, opts().own_session(true))
        .expect("connect");
    let p = a.acquire_blocking(2).unwrap();
    let _one = a.try_acquire(1).unwrap();
    assert_eq!(other.census().unwrap().available, 0);
    p.release_blocking().unwrap();
    assert_eq!(other.census().unwrap().available, 2);
    // Repeated, so that some of them race the door thread's own wake-up.
    for _ in 0..50 {
        a.acquire_blocking(2).unwrap().forget();
        a.release_blocking(2).unwrap();
        assert_eq!(other.census().unwrap().available, 2);
    }
    assert_eq!(
        a.release_blocking(2).unwrap_err(),
        Error::NotHeld { held: 1 }
    );
    assert_eq!(a.release_blocking(0), Ok(()));
    a.release_blocking(1).unwrap();
    let c = assert_conserved(&other);
    assert_eq!((c.available, c.held), (3, 0));
}

/// A `release_blocking` whose release did not reach Redis (the handle's
/// connections cut just before it: the script's outcome is unknown, the
/// session is given up and ended later by the agent) does not return `Ok`:
/// it returned `Ok(())` while another client still saw the permits held.
/// `Ok` means applied; otherwise `LeaseExpired`, and the permits come back
/// with the session's end.
#[test]
fn release_blocking_is_ok_only_when_applied() {
    let s = Server::start();
    let o = || opts().own_session(true);
    let a = RedisSemaphore::connect(&s.url(), "release-cut", 2, o().label("cut")).unwrap();
    let other = RedisSemaphore::connect(&s.url(), "release-cut", 2, o()).unwrap();
    let mut raw = s.raw();
    for _ in 0..5 {
        let p = a.acquire_blocking(2).unwrap();
        // Used less than a second ago: the next script is sent unchecked.
        kill_clients_named(&mut raw, "cut");
        match p.release_blocking() {
            Ok(()) => assert_eq!(other.census().unwrap().available, 2, "Ok, but not applied"),
            Err(e) => assert_eq!(e, Error::LeaseExpired),
        }
        // Either way the permits come back (the given-up session ends).
        eventually("permits back", Duration::from_secs(30), || {
            other.census().unwrap().available == 2
        });
    }
    assert_conserved(&other);
}

/// Durations far beyond any use (`Duration::MAX`, a natural way to write
/// "no timeout") are refused by `connect` with `InvalidOption`, not taken
/// to an overflow: a connect timeout that large panicked in `connect`
/// (the deadline, the clock plus the timeout), and a command timeout or a
/// lease that large passed `connect` and killed the agent thread at its
/// first wait (a duration or an instant overflowed), so that no
/// notification would ever be delivered and the lease never renewed. The
/// bound is 2^64 - 1 ms, which every binding's range fits in.
/// `flush` promises that every call made before it was applied in Redis:
/// a release that went out on a cut connection (its outcome unknown, its
/// session given up) must make the next `flush` fail, not return `Ok` while
/// another client still counts the permits as held.
#[test]
fn flush_is_ok_only_when_the_releases_before_it_were_applied() {
    let s = Server::start();
    let o = || opts().own_session(true);
    let a = RedisSemaphore::connect(&s.url(), "flush-cut", 2, o().label("cut")).unwrap();
    let other = RedisSemaphore::connect(&s.url(), "flush-cut", 2, o()).unwrap();
    let mut raw = s.raw();
    let mut refused = 0;
    for _ in 0..5 {
        let p = a.acquire_blocking(2).unwrap();
        // Used less than a second ago: the next script is sent unchecked.
        kill_clients_named(&mut raw, "cut");
        drop(p); // the release returns at once; the door sends it
        match a.flush() {
            Ok(()) => assert_eq!(other.census().unwrap().available, 2, "Ok, but not applied"),
            Err(e) => {
                assert_eq!(e, Error::LeaseExpired);
                refused += 1;
            }
        }
        // Either way the permits come back (the given-up session ends).
        eventually("permits back", Duration::from_secs(30), || {
            other.census().unwrap().available == 2
        });
        // Reported once: the next flush has nothing unapplied before it.
        a.flush().unwrap();
    }
    assert!(
        refused > 0,
        "no release was ever cut: the test did not test"
    );
    assert_conserved(&other);
}

#[test]
fn durations_too_long_are_refused() {
    let s = Server::start();
    let url = s.url();
    for o in [
        opts().connect_timeout(Duration::MAX),
        opts().command_timeout(Duration::MAX),
        opts().lease(Duration::MAX),
    ] {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            RedisSemaphore::connect(&url, "too-long", 1, o.clone().own_session(true))
        }));
        assert!(
            matches!(r, Ok(Err(Error::InvalidOption(_)))),
            "{o:?}: {r:?}"
        );
    }
    // The longest accepted (what a C caller's u64 of ms can say) works: the
    // agent thread lives, and delivers the grant another handle's release
    // makes.
    let long = Duration::from_millis(u64::MAX);
    let o = opts()
        .own_session(true)
        .lease(long)
        .connect_timeout(long)
        .command_timeout(long);
    let a = RedisSemaphore::connect(&url, "longest", 1, o.clone()).unwrap();
    let b = RedisSemaphore::connect(&url, "longest", 1, o).unwrap();
    let held = a.acquire_blocking(1).unwrap();
    let waiting = acquire_in_thread(&b, 1);
    held.release().unwrap();
    let p = waiting
        .recv_timeout(Duration::from_secs(30))
        .expect("the grant was never delivered")
        .unwrap();
    drop(p);
    b.flush().unwrap();
    assert_eq!(assert_conserved(&a).available, 1);
}

/// The test support's servers: one started on a port that another server
/// holds (a port from `free_port` can be handed to two tests at once) does
/// not come up there, and is never taken for that other server; a retry on
/// another port works (its directory is made again: the failed attempt
/// removed it, and every retry failed). The readiness check took any `PONG` (or `NOAUTH`) on
/// the port for its own server's: a test then used another test's server
/// (seen under load: `connect` failing with `Auth` on a server started
/// without a password, answered by one with a password).
#[test]
fn a_test_server_never_takes_another_one_on_its_port_for_its_own() {
    let dir =
        std::env::temp_dir().join(format!("volt-sem-redis-test-taken-{}", std::process::id()));
    for secret in [Some("other-secret"), None] {
        let other = Server::start_with(secret);
        for password in [None, Some("other-secret"), Some("mine")] {
            let taken = Server::try_start_on(other.port, &dir, password, Vec::new(), None);
            assert!(
                taken.is_none(),
                "a server on the taken port {} (password {password:?})",
                other.port
            );
        }
        // The other one is untouched, and the retry on another port (with
        // the same directory, which the failed attempt removed) comes up.
        assert_eq!(answering_pid(other.port, secret), Some(other.pid()));
        let fresh = Server::try_start_on(free_port(), &dir, None, Vec::new(), None)
            .expect("a retry on another port");
        assert_eq!(answering_pid(fresh.port, None), Some(fresh.pid()));
    }
}
