//! The Redis backend through the seam the bindings use: the same
//! `Semaphore` / `Waiter` / `Finish` as the local and shared backends, plus
//! fencing tokens, sessions and the failures a network adds. Against a real
//! `redis-server` started on a free loopback port (`make test-backend`
//! installs it).
#![cfg(feature = "redis")]

mod common;
#[path = "../../redis/tests/support/mod.rs"]
mod support;

use core::ffi::c_void;
use core::pin::pin;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;
use volt_sem_backend::RawSemaphore;

use support::{eventually, Server};
use volt_sem_backend::{
    ConnectOptions, Error, Expiry, Finish, Kind, RawAcquire, Semaphore, Waiter, WaiterState,
};

fn opts() -> ConnectOptions {
    ConnectOptions::new().connect_timeout(Duration::from_secs(3))
}

fn connect(s: &Server, name: &str, permits: usize) -> Semaphore {
    Semaphore::connect(&s.url(), name, permits, opts()).expect("connect")
}

/// Counts calls; records whether the waiter (ctx's pointee) saw itself
/// "inside" its own callback.
struct Probe {
    calls: AtomicUsize,
    inside: AtomicUsize,
    waiter: AtomicPtr<Waiter>,
}

unsafe extern "C" fn probe(ctx: *mut c_void) {
    // SAFETY: ctx is the test's `Probe`, alive until finish_raw returned.
    let p = unsafe { &*(ctx as *const Probe) };
    let w = p.waiter.load(Ordering::SeqCst);
    // SAFETY: the waiter is pinned in the test frame until finish_raw.
    if !w.is_null() && unsafe { &*w }.in_own_callback() {
        p.inside.fetch_add(1, Ordering::SeqCst);
    }
    p.calls.fetch_add(1, Ordering::SeqCst);
}

fn probe_for(w: &Waiter) -> Probe {
    Probe {
        calls: AtomicUsize::new(0),
        inside: AtomicUsize::new(0),
        waiter: AtomicPtr::new(w as *const Waiter as *mut Waiter),
    }
}

#[test]
fn try_acquire_release_and_tokens_through_the_seam() {
    let s = Server::start();
    let sem = connect(&s, "seam-try", 3);
    assert_eq!(sem.kind(), Kind::Redis);
    assert_eq!(sem.total_permits(), Some(3));
    let a = sem.try_acquire(2).unwrap();
    let b = sem.try_acquire(1).unwrap();
    let (ta, tb) = (a.token().unwrap(), b.token().unwrap());
    assert!(tb > ta, "tokens increase: {ta} then {tb}");
    assert_eq!(sem.try_acquire(1), Err(Error::NoPermits));
    assert_eq!(sem.available_permits(), 0);
    // Each handle returns what its session holds, no more.
    assert_eq!(sem.release(4), Err(Error::NotHeld { held: 3 }));
    sem.release(3).unwrap();
    assert_eq!(sem.available_permits(), 3);
    assert_eq!(sem.try_acquire(4), Err(Error::TooManyPermits));
    // A blocking acquire that can be served at once, with a token too.
    let g = sem.acquire_timeout(3, Duration::from_secs(5)).unwrap();
    assert!(g.token().unwrap() > tb);
    sem.release(3).unwrap();
    let c = sem.as_redis().unwrap().census().unwrap();
    assert!(c.conserved() && c.available == 3, "{c:?}");
}

#[test]
fn raw_waiter_is_woken_on_the_agent_thread_in_fifo_order() {
    let s = Server::start();
    let sem = connect(&s, "seam-raw", 4);
    let other = connect(&s, "seam-raw", 4);
    other.try_acquire(4).unwrap();

    let big = pin!(Waiter::new());
    let small = pin!(Waiter::new());
    let pb = probe_for(&big);
    let ps = probe_for(&small);
    // SAFETY: both waiters are pinned in this frame and the probes outlive
    // the finish_raw calls below.
    unsafe {
        assert_eq!(
            sem.acquire_raw(big.as_ref(), 3, probe, &pb as *const Probe as *mut c_void),
            Ok(RawAcquire::Pending)
        );
        assert_eq!(
            sem.acquire_raw(small.as_ref(), 1, probe, &ps as *const Probe as *mut c_void),
            Ok(RawAcquire::Pending)
        );
    }
    assert!(big.is_busy() && big.is_redis() && !big.is_shared());
    assert_eq!(big.state(), WaiterState::Waiting);
    assert_eq!(big.requested(), 3);
    assert!(sem.owns(&big) && !other.owns(&big));

    // Two permits back: the head (3) collects them and is not complete; the
    // later request for 1 must not overtake it.
    other.release(2).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(pb.calls.load(Ordering::SeqCst), 0);
    assert_eq!(ps.calls.load(Ordering::SeqCst), 0);
    other.release(2).unwrap();
    eventually("both woken", Duration::from_secs(10), || {
        pb.calls.load(Ordering::SeqCst) == 1 && ps.calls.load(Ordering::SeqCst) == 1
    });
    assert_eq!(
        pb.inside.load(Ordering::SeqCst),
        1,
        "in_own_callback inside the callback"
    );
    assert_eq!(big.state(), WaiterState::Granted);
    // SAFETY: queued on `sem`; the callbacks have run.
    unsafe {
        assert_eq!(sem.finish_raw(big.as_ref()), Finish::Granted);
        assert_eq!(sem.finish_raw(small.as_ref()), Finish::Granted);
        assert_eq!(sem.finish_raw(small.as_ref()), Finish::Idle);
    }
    let (tb, ts) = (big.token().unwrap(), small.token().unwrap());
    assert!(ts > tb, "FIFO grants carry increasing tokens: {tb}, {ts}");
    assert!(!big.is_busy());
    sem.release(4).unwrap();
    let c = sem.as_redis().unwrap().census().unwrap();
    assert!(c.conserved() && c.available == 4, "{c:?}");
}

/// `expire_raw`, what the bindings call at their timeout: a request made
/// with the permits free is granted whatever the deadline (its first answer
/// decides), one that has to queue ends `Cancelled` (at once, or when its
/// answer came), its partial grant handed back. Deterministic whichever
/// comes first, the answer or the call: both end the same way.
#[test]
fn expire_raw_keeps_a_first_grant_and_times_out_a_queued_request() {
    let s = Server::start();
    let sem = connect(&s, "seam-expire", 3);
    let o = opts().own_session(true);
    let other = Semaphore::connect(&s.url(), "seam-expire", 3, o).unwrap();
    for n in [1, 3] {
        let w = pin!(Waiter::new());
        let p = probe_for(&w);
        // SAFETY: pinned in this frame; the probe outlives finish_raw.
        unsafe {
            let r = sem.acquire_raw(w.as_ref(), n, probe, &p as *const Probe as *mut c_void);
            assert_eq!(r, Ok(RawAcquire::Pending));
            // The deadline passed at once: left to the first answer, for a
            // grace far longer than a round trip here.
            let e = sem.expire_raw(w.as_ref());
            assert!(matches!(e, Expiry::Deferred { .. }), "{e:?}");
        }
        eventually("its answer", Duration::from_secs(10), || {
            p.calls.load(Ordering::SeqCst) == 1
        });
        // SAFETY: queued on `sem`; the callback has run.
        assert_eq!(
            unsafe { sem.finish_raw(w.as_ref()) },
            Finish::Granted,
            "n = {n}"
        );
        sem.release(n).unwrap();
    }
    // `sem`'s releases are sent by its door thread after `release`
    // returned: a census through `sem`, behind them on that door, waits
    // until Redis has them (else `other`'s try below may come first).
    sem.as_redis().unwrap().census().unwrap();
    // Queued: `other` holds 2, a request for 3 collects a partial grant.
    other.try_acquire(2).unwrap();
    for _ in 0..5 {
        let w = pin!(Waiter::new());
        let p = probe_for(&w);
        // SAFETY: as above.
        let f = unsafe {
            let r = sem.acquire_raw(w.as_ref(), 3, probe, &p as *const Probe as *mut c_void);
            assert_eq!(r, Ok(RawAcquire::Pending));
            match sem.expire_raw(w.as_ref()) {
                Expiry::Finished(f) => f,
                Expiry::Deferred { .. } => {
                    eventually("its answer", Duration::from_secs(10), || {
                        p.calls.load(Ordering::SeqCst) == 1
                    });
                    sem.finish_raw(w.as_ref())
                }
            }
        };
        assert_eq!(f, Finish::Cancelled { returned: 0 });
        let r = sem.as_redis().unwrap();
        r.flush().unwrap();
        let c = r.census().unwrap();
        assert!(c.conserved(), "{c:?}");
        assert_eq!(
            (c.available, c.held, c.partial, c.queued),
            (1, 2, 0, 0),
            "{c:?}"
        );
    }
    // A local semaphore: expire_raw is finish_raw (the try came first).
    let local = Semaphore::local(1).unwrap();
    local.try_acquire(1).unwrap();
    let w = pin!(Waiter::new());
    // SAFETY: as above.
    unsafe {
        let r = local.acquire_raw(w.as_ref(), 1, probe, core::ptr::null_mut());
        assert_eq!(r, Ok(RawAcquire::Pending));
        assert_eq!(
            local.expire_raw(w.as_ref()),
            Expiry::Finished(Finish::Cancelled { returned: 0 })
        );
    }
}

#[test]
fn cancel_hands_the_partial_grant_on_and_close_fails_waiters() {
    let s = Server::start();
    let sem = connect(&s, "seam-cancel", 3);
    let holder = connect(&s, "seam-cancel", 3);
    holder.try_acquire(3).unwrap();
    let w = pin!(Waiter::new());
    let p = probe_for(&w);
    // SAFETY: pinned in this frame; `p` outlives finish_raw.
    let r = unsafe { sem.acquire_raw(w.as_ref(), 3, probe, &p as *const Probe as *mut c_void) };
    assert_eq!(r, Ok(RawAcquire::Pending));
    holder.release(1).unwrap();
    eventually("the partial grant", Duration::from_secs(10), || {
        sem.as_redis().unwrap().census().unwrap().partial == 1
    });
    // SAFETY: queued on `sem`, not in its callback.
    assert_eq!(
        unsafe { sem.finish_raw(w.as_ref()) },
        Finish::Cancelled { returned: 0 }
    );
    assert_eq!(p.calls.load(Ordering::SeqCst), 0);
    // The cancel reached Redis before this census (one door per handle):
    // its partial grant is back.
    assert_eq!(sem.available_permits(), 1);

    let w2 = pin!(Waiter::new());
    let p2 = probe_for(&w2);
    // SAFETY: as above.
    let r = unsafe { sem.acquire_raw(w2.as_ref(), 2, probe, &p2 as *const Probe as *mut c_void) };
    assert_eq!(r, Ok(RawAcquire::Pending));
    holder.close().unwrap();
    eventually("closed waiter woken", Duration::from_secs(10), || {
        p2.calls.load(Ordering::SeqCst) == 1
    });
    assert_eq!(w2.state(), WaiterState::Closed);
    // SAFETY: queued on `sem`; its callback ran.
    assert_eq!(unsafe { sem.finish_raw(w2.as_ref()) }, Finish::Closed);
    assert_eq!(sem.try_acquire(1), Err(Error::Closed));
    assert!(holder.is_closed());
    // Held permits can still be released after close.
    holder.release(2).unwrap();
}

struct Flag(std::sync::atomic::AtomicBool);
impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[test]
fn lease_loss_fails_waiters_and_completes_the_watch_of_a_grant() {
    let mut s = Server::start();
    let lease = ConnectOptions::new()
        .connect_timeout(Duration::from_secs(3))
        .command_timeout(Duration::from_millis(500))
        .lease(Duration::from_millis(1500));
    let sem = Semaphore::connect(&s.url(), "seam-lease", 2, lease).unwrap();
    let g = sem.try_acquire(1).unwrap();
    let blocker = connect(&s, "seam-lease", 2);
    blocker.try_acquire(1).unwrap();
    let w = pin!(Waiter::new());
    let p = probe_for(&w);
    // SAFETY: pinned in this frame; `p` outlives finish_raw.
    let r = unsafe { sem.acquire_raw(w.as_ref(), 2, probe, &p as *const Probe as *mut c_void) };
    assert_eq!(r, Ok(RawAcquire::Pending));
    // The request must be queued in Redis before Redis stops: until its
    // script's answer came back, a stop makes it fail with the call's own
    // Connection error, not LeaseExpired (the door sends it after
    // `acquire_raw` returned). Queued in the census is not enough: the
    // answer may still be on its way back to `sem`'s door (a CI run once saw
    // the stop drop it: Connection, "Resource temporarily unavailable"), so
    // wait for `sem`'s own stats too, set when its door read the answer.
    eventually("queued in Redis", Duration::from_secs(10), || {
        blocker.as_redis().unwrap().census().unwrap().queued == 1 && sem.stats().queued == 1
    });

    let mut watch = sem
        .lease_watch(g.session())
        .expect("a Redis grant has a session");
    let flag = Arc::new(Flag(false.into()));
    let waker = Waker::from(flag.clone());
    assert!(Pin::new(&mut watch)
        .poll(&mut Context::from_waker(&waker))
        .is_pending());
    assert!(!watch.is_lost());

    // Redis out of reach for longer than the lease: the handle cannot renew.
    // SAFETY: signals to the redis-server child this test started.
    unsafe { libc::kill(s.pid() as i32, libc::SIGSTOP) };
    eventually("waiter failed", Duration::from_secs(15), || {
        p.calls.load(Ordering::SeqCst) == 1
    });
    // SAFETY: as above.
    unsafe { libc::kill(s.pid() as i32, libc::SIGCONT) };
    // SAFETY: queued on `sem`; its callback ran.
    assert_eq!(
        unsafe { sem.finish_raw(w.as_ref()) },
        Finish::Failed(Error::LeaseExpired)
    );
    assert!(flag.0.load(Ordering::SeqCst), "the watch's waker was woken");
    assert!(watch.is_lost());
    assert_eq!(
        Pin::new(&mut watch).poll(&mut Context::from_waker(&waker)),
        Poll::Ready(volt_sem_backend::redis::Error::LeaseExpired)
    );
    // The lost permit is not released twice.
    assert_eq!(sem.release(1), Err(Error::LeaseExpired));
    eventually("permits reclaimed", Duration::from_secs(15), || {
        blocker
            .as_redis()
            .unwrap()
            .census()
            .is_ok_and(|c| c.conserved() && c.held == 1)
    });
    s.stop();
}

#[test]
fn connect_errors_are_typed_and_never_show_the_password() {
    let s = Server::start_with(Some("s3cret-pw"));
    let bad = |url: &str, name: &str, permits: usize| {
        Semaphore::connect(url, name, permits, opts())
            .map(|_| ())
            .unwrap_err()
    };
    let url = s.url();
    // The text says why and shows the expected form, never the URL.
    let e = bad("http://user:s3cret-pw@x", "n", 1);
    assert!(matches!(e, Error::InvalidUrl(_)), "{e:?}");
    let text = e.to_string();
    assert!(text.contains("unsupported scheme"), "{text}");
    assert!(
        text.contains("redis://[user:password@]host[:port][/db]"),
        "{text}"
    );
    assert!(!text.contains("s3cret-pw"), "{text}");
    let text = bad("redis://127.0.0.1:notaport", "n", 1).to_string();
    assert!(text.contains("the port must be a number"), "{text}");
    assert_eq!(bad(&url, "", 1), Error::InvalidName);
    assert_eq!(bad(&url, &"x".repeat(1025), 1), Error::InvalidName);
    assert_eq!(bad(&url, "n", 0), Error::InvalidPermits);
    let wrong = format!("redis://:wrong-pw@127.0.0.1:{}", s.port);
    assert_eq!(bad(&wrong, "n", 1), Error::Auth);
    let sem = Semaphore::connect(&url, "seam-errors", 2, opts()).unwrap();
    assert_eq!(
        bad(&url, "seam-errors", 3),
        Error::TotalMismatch { existing: 2 }
    );
    assert!(!format!("{sem:?}").contains("s3cret-pw"));
    for e in [
        Error::Auth,
        Error::LeaseExpired,
        Error::StateLost,
        Error::InvalidUrl("no host"),
    ] {
        assert!(!e.to_string().is_empty() && !e.code().is_empty());
    }
    // A closed port: a connection error within the connect timeout.
    let closed = format!("redis://127.0.0.1:{}", s.port.wrapping_add(1).max(1));
    match bad(&closed, "n", 1) {
        Error::Connection(d) => assert!(!d.contains("s3cret-pw")),
        e => panic!("expected a connection error, got {e:?}"),
    }
}

#[test]
fn stats_record_through_the_seam() {
    let s = Server::start();
    // Two clients, each with a session (and counters) of its own.
    let o = || opts().own_session(true);
    let sem = Semaphore::connect(&s.url(), "seam-stats", 2, o()).unwrap();
    let holder = Semaphore::connect(&s.url(), "seam-stats", 2, o()).unwrap();
    // The seam records from the start, as for every handle it makes.
    assert!(sem.stats().recording);
    sem.try_acquire(1).unwrap();
    sem.release(1).unwrap();
    holder.acquire_blocking(2).unwrap();
    // A binding timing its own wait: it cancels the raw request, then
    // records the timeout.
    let w = pin!(Waiter::new());
    let p = probe_for(&w);
    // SAFETY: pinned in this frame; `p` outlives finish_raw.
    let r = unsafe { sem.acquire_raw(w.as_ref(), 1, probe, &p as *const Probe as *mut c_void) };
    assert_eq!(r, Ok(RawAcquire::Pending));
    eventually("queued", Duration::from_secs(10), || {
        sem.stats().queued == 1
    });
    // SAFETY: queued on `sem`, not in its callback.
    assert_eq!(
        unsafe { sem.finish_raw(w.as_ref()) },
        Finish::Cancelled { returned: 0 }
    );
    sem.record_timeout();
    let st = sem.stats();
    assert_eq!(
        (st.grants, st.permits_granted, st.cancels, st.timeouts),
        (1, 1, 1, 1),
        "{st:?}"
    );
    assert_eq!((st.held, st.queued, st.available), (0, 0, 0));
    let sh = holder.stats();
    assert_eq!(
        (sh.grants, sh.permits_granted, sh.held),
        (1, 2, 2),
        "{sh:?}"
    );
    holder.release(2).unwrap();
}

#[test]
fn a_raw_waiter_fails_with_state_lost_when_redis_restarts_empty() {
    // As a binding waits: two handles with sessions of their own, a raw
    // waiter queued by b's door thread, Redis restarted without its data.
    let mut s = Server::start();
    let o = || {
        opts()
            .lease(Duration::from_millis(1500))
            .command_timeout(Duration::from_secs(1))
    };
    let a = Semaphore::connect(&s.url(), "seam-restart", 1, o()).unwrap();
    a.try_acquire(1).unwrap();
    let b = Semaphore::connect(&s.url(), "seam-restart", 1, o()).unwrap();
    let w = pin!(Waiter::new());
    let p = probe_for(&w);
    // SAFETY: pinned in this frame; the probe outlives finish_raw.
    let r = unsafe { b.acquire_raw(w.as_ref(), 1, probe, &p as *const Probe as *mut c_void) };
    assert_eq!(r, Ok(RawAcquire::Pending));
    let ra = a.as_redis().unwrap();
    // Queued in Redis, and its answer read by b's door (b's own gauge):
    // Redis may write a's census reply before b's, and a reply lost to the
    // restart is an uncertain outcome (Error::Connection), not StateLost.
    eventually("queued", Duration::from_secs(5), || {
        ra.census().unwrap().queued == 1 && b.stats().queued == 1
    });
    s.restart_empty();
    eventually("woken", Duration::from_secs(10), || {
        p.calls.load(Ordering::SeqCst) == 1
    });
    // SAFETY: queued on `b`; its callback has run.
    assert_eq!(
        unsafe { b.finish_raw(w.as_ref()) },
        Finish::Failed(Error::StateLost)
    );
}

#[test]
fn disconnect_ends_one_redis_handle_only() {
    let s = Server::start();
    let a = connect(&s, "seam-disconnect", 3);
    let b = connect(&s, "seam-disconnect", 3);
    a.try_acquire(2).unwrap();
    b.try_acquire(1).unwrap();
    let wa = pin!(Waiter::new());
    let pa = probe_for(&wa);
    // SAFETY: fresh; `pa` outlives finish_raw.
    let r = unsafe { a.acquire_raw(wa.as_ref(), 1, probe, &pa as *const Probe as *mut c_void) };
    assert_eq!(r, Ok(RawAcquire::Pending));
    eventually("a's request queued", Duration::from_secs(5), || {
        wa.state() == WaiterState::Waiting
    });
    let wb = pin!(Waiter::new());
    let pb = probe_for(&wb);
    // SAFETY: as above.
    let r = unsafe { b.acquire_raw(wb.as_ref(), 2, probe, &pb as *const Probe as *mut c_void) };
    assert_eq!(r, Ok(RawAcquire::Pending));
    std::thread::scope(|scope| {
        let blocked = scope.spawn(|| a.acquire_blocking(1));
        eventually("three queued", Duration::from_secs(5), || {
            b.inspect().is_ok_and(|i| i.waiters.len() == 3)
        });
        a.disconnect().unwrap();
        assert_eq!(pa.calls.load(Ordering::SeqCst), 1, "its callback ran");
        // SAFETY: queued on `a`.
        let f = unsafe { a.finish_raw(wa.as_ref()) };
        assert_eq!(f, Finish::Failed(Error::Disconnected));
        assert_eq!(
            blocked.join().unwrap().map(|_| ()),
            Err(Error::Disconnected)
        );
    });
    // What `a` held went to `b`'s request.
    eventually("b granted", Duration::from_secs(5), || {
        pb.calls.load(Ordering::SeqCst) == 1
    });
    // SAFETY: queued on `b`.
    assert_eq!(unsafe { b.finish_raw(wb.as_ref()) }, Finish::Granted);
    assert!(a.is_disconnected() && !b.is_disconnected());
    let gone = Err(Error::Disconnected);
    assert_eq!(a.try_acquire(1).map(|_| ()), gone);
    assert_eq!(a.release(1), gone);
    assert_eq!(a.close(), gone);
    assert_eq!(a.disconnect(), Ok(()), "idempotent");
    b.release(3).unwrap();
    assert_eq!(b.available_permits(), 3);
}

/// A timed wait that expires on a Redis handle being disconnected: whatever
/// `expire_raw` finds (a request the disconnect failed, or one it cancels
/// itself), the outcome is the handle's own error, `Disconnected`, as
/// `finish_raw` reports it, never a bare `Closed`. `expire_raw` of a
/// request queued in Redis looks it up, then cancels it: a disconnect in
/// between fails it, and its `Finished` outcome was the Redis crate's
/// `Closed`. Many requests expired while the disconnect runs, several
/// rounds, so that some expiry meets it in that window.
#[test]
fn expire_raw_on_a_disconnecting_handle_reports_disconnected() {
    const QUEUED: usize = 64;
    let s = Server::start();
    let holder = connect(&s, "seam-expire-disconnect", 1);
    holder.try_acquire(1).unwrap();
    for _round in 0..32 {
        let a = connect(&s, "seam-expire-disconnect", 1);
        let ws: Vec<Pin<Box<Waiter>>> = (0..QUEUED).map(|_| Box::pin(Waiter::new())).collect();
        let ps: Vec<Probe> = ws.iter().map(|w| probe_for(w)).collect();
        for (w, p) in ws.iter().zip(&ps) {
            // SAFETY: pinned in a box that outlives finish_raw; so does the probe.
            let r =
                unsafe { a.acquire_raw(w.as_ref(), 1, probe, p as *const Probe as *mut c_void) };
            assert_eq!(r, Ok(RawAcquire::Pending));
        }
        eventually(
            "every request queued in Redis",
            Duration::from_secs(10),
            || holder.inspect().is_ok_and(|i| i.waiters.len() == QUEUED),
        );
        let go = std::sync::Barrier::new(2);
        let outcomes = std::thread::scope(|scope| {
            scope.spawn(|| {
                go.wait();
                a.disconnect().unwrap();
            });
            go.wait();
            ws.iter()
                .zip(&ps)
                .map(|(w, p)| {
                    // SAFETY: queued on `a`, pinned; the probe outlives it.
                    match unsafe { a.expire_raw(w.as_ref()) } {
                        Expiry::Finished(f) => f,
                        Expiry::Deferred { .. } => {
                            eventually("its callback", Duration::from_secs(10), || {
                                p.calls.load(Ordering::SeqCst) == 1
                            });
                            // SAFETY: as above.
                            unsafe { a.finish_raw(w.as_ref()) }
                        }
                    }
                })
                .collect::<Vec<_>>()
        });
        for f in &outcomes {
            assert!(
                matches!(
                    f,
                    Finish::Cancelled { returned: 0 } | Finish::Failed(Error::Disconnected)
                ),
                "{f:?} (all: {outcomes:?})"
            );
        }
        // The disconnect ended `a`'s session in Redis: none of its requests
        // is left queued, the holder's permit is the only one held.
        let c = holder.as_redis().unwrap().census().unwrap();
        assert!(c.conserved(), "{c:?}");
        assert_eq!(
            (c.available, c.held, c.partial, c.queued),
            (0, 1, 0, 0),
            "{c:?}"
        );
    }
    holder.release(1).unwrap();
}

/// Queues a raw request of 1 permit on `a` whose callback is `wake(ctx)`
/// (`Pending`, checked), once Redis queued it (`census_by` sees one
/// waiter).
///
/// # Safety
/// `w` and `ctx` outlive the request's `finish_raw`.
unsafe fn queue_one<T>(
    a: &Semaphore,
    census_by: &Semaphore,
    w: Pin<&Waiter>,
    wake: unsafe extern "C" fn(*mut c_void),
    ctx: &T,
) {
    // SAFETY: forwarded contract.
    let r = unsafe { a.acquire_raw(w, 1, wake, ctx as *const T as *mut c_void) };
    assert_eq!(r, Ok(RawAcquire::Pending));
    eventually("the request queued", Duration::from_secs(5), || {
        census_by.inspect().is_ok_and(|i| i.waiters.len() == 1)
    });
}

/// Disconnects `a` on another thread: its result, or `None` if it did not
/// return within 20 s.
fn disconnect_on_a_thread(a: &Arc<Semaphore>) -> Option<Result<(), Error>> {
    let (tx, rx) = std::sync::mpsc::channel();
    let a = Arc::clone(a);
    std::thread::spawn(move || {
        let _ = tx.send(a.disconnect());
    });
    rx.recv_timeout(Duration::from_secs(20)).ok()
}

/// The context of [`disconnect_again`]: the handle, another handle of the
/// same semaphore (for the census), and the second disconnect's thread.
struct SecondDisconnect {
    a: Arc<Semaphore>,
    b: Arc<Semaphore>,
    second: std::sync::Mutex<Option<SecondCall>>,
}

/// The second disconnect's thread: its result, and what was available
/// when it returned.
type SecondCall = std::thread::JoinHandle<(Result<(), Error>, usize)>;

/// A wake callback that `a`'s first disconnect runs (it fails `a`'s queued
/// request on its own thread, before the session's end reaches Redis): it
/// disconnects `a` again on another thread, which then reads what is
/// available, and waits for that second call (a second at most: it must
/// not return before this callback does, then this wait ends empty, and
/// the test's verdict is the same).
unsafe extern "C" fn disconnect_again(ctx: *mut c_void) {
    // SAFETY: ctx is the test's `SecondDisconnect`, alive until the first
    // disconnect returned.
    let c = unsafe { &*(ctx as *const SecondDisconnect) };
    let (a, b) = (Arc::clone(&c.a), Arc::clone(&c.b));
    let (tx, rx) = std::sync::mpsc::channel();
    let t = std::thread::spawn(move || {
        let r = a.disconnect();
        let seen = b.available_permits();
        let _ = tx.send(());
        (r, seen)
    });
    let _ = rx.recv_timeout(Duration::from_secs(1));
    *c.second.lock().unwrap() = Some(t);
}

/// A second `disconnect` of a Redis handle, on another thread, while the
/// first one is still ending the session: when it returns, what the
/// session held is back (as the header promises of every disconnect), not
/// still on its way to Redis.
#[test]
fn a_second_redis_disconnect_returns_once_the_sessions_permits_are_back() {
    let s = Server::start();
    let a = Arc::new(connect(&s, "seam-second-disconnect", 2));
    let b = Arc::new(connect(&s, "seam-second-disconnect", 2));
    a.try_acquire(1).unwrap();
    b.try_acquire(1).unwrap();
    let ctx = SecondDisconnect {
        a: Arc::clone(&a),
        b: Arc::clone(&b),
        second: std::sync::Mutex::new(None),
    };
    let w = pin!(Waiter::new());
    // SAFETY: fresh; `ctx` outlives finish_raw.
    unsafe { queue_one(&a, &b, w.as_ref(), disconnect_again, &ctx) };
    a.disconnect().unwrap();
    // SAFETY: queued on `a`.
    assert_eq!(
        unsafe { a.finish_raw(w.as_ref()) },
        Finish::Failed(Error::Disconnected)
    );
    let second = ctx.second.lock().unwrap().take().expect("the callback ran");
    let (r, seen) = second.join().unwrap();
    assert_eq!(r, Ok(()));
    assert_eq!(
        seen, 1,
        "a's permit was back when the second disconnect returned"
    );
    b.release(1).unwrap();
}

/// The context of [`disconnect_once_another_began`].
struct DisconnectInCallback {
    a: Arc<Semaphore>,
    /// The callback runs.
    entered: std::sync::atomic::AtomicBool,
    /// Its disconnect returned.
    returned: std::sync::atomic::AtomicBool,
}

/// A grant's callback on the handle's door thread that waits (10 s at
/// most) until another thread's disconnect of the handle began, then
/// disconnects it too.
unsafe extern "C" fn disconnect_once_another_began(ctx: *mut c_void) {
    // SAFETY: ctx is the test's `DisconnectInCallback`, alive until
    // finish_raw returned.
    let c = unsafe { &*(ctx as *const DisconnectInCallback) };
    c.entered.store(true, Ordering::SeqCst);
    disconnect_once_begun(&c.a, &c.returned);
}

/// Waits (10 s at most) until another thread's disconnect of `a` began,
/// then disconnects it too; sets `returned` once that returned.
fn disconnect_once_begun(a: &Semaphore, returned: &std::sync::atomic::AtomicBool) {
    let until = std::time::Instant::now() + Duration::from_secs(10);
    while !a.is_disconnected() && std::time::Instant::now() < until {
        std::thread::sleep(Duration::from_millis(1));
    }
    let _ = a.disconnect();
    returned.store(true, Ordering::SeqCst);
}

/// A second disconnect made from a callback on the handle's own door
/// thread while another thread's disconnect runs returns at once: that
/// first disconnect waits for the door thread (its end goes out there,
/// then it joins it), so waiting for the first one there would wait for
/// ever.
#[test]
fn a_redis_disconnect_from_a_door_callback_during_another_returns() {
    let s = Server::start();
    let a = Arc::new(connect(&s, "seam-disconnect-in-door", 1));
    let ctx = DisconnectInCallback {
        a: Arc::clone(&a),
        entered: std::sync::atomic::AtomicBool::new(false),
        returned: std::sync::atomic::AtomicBool::new(false),
    };
    let w = pin!(Waiter::new());
    // SAFETY: fresh; `ctx` outlives finish_raw.
    let r = unsafe {
        a.acquire_raw(
            w.as_ref(),
            1,
            disconnect_once_another_began,
            &ctx as *const DisconnectInCallback as *mut c_void,
        )
    };
    assert_eq!(r, Ok(RawAcquire::Pending));
    eventually("the grant's callback runs", Duration::from_secs(5), || {
        ctx.entered.load(Ordering::SeqCst)
    });
    assert_eq!(
        disconnect_on_a_thread(&a),
        Some(Ok(())),
        "the first disconnect returned"
    );
    assert!(ctx.returned.load(Ordering::SeqCst), "so did the callback's");
    // A grant collected after the disconnect began is not the caller's:
    // the permit went back with the session.
    // SAFETY: queued on `a`; `ctx` alive.
    let f = unsafe { a.finish_raw(w.as_ref()) };
    assert_eq!(f, Finish::Failed(Error::Disconnected));
    let b = connect(&s, "seam-disconnect-in-door", 1);
    assert_eq!(b.available_permits(), 1);
}

/// The context of [`disconnect_in_a_turn`]: the handle, and the thread that
/// runs the handle's queued jobs itself (its `try_acquire` finds no thread
/// running them).
struct TurnDisconnect {
    a: Arc<Semaphore>,
    caller: std::sync::Mutex<Option<std::thread::ThreadId>>,
    /// The callback ran on the caller's thread (in its turn).
    in_turn: std::sync::atomic::AtomicBool,
    /// It ran elsewhere (the door thread took the job first).
    elsewhere: AtomicUsize,
    /// Its disconnect returned.
    returned: std::sync::atomic::AtomicBool,
}

/// A grant's callback: on the thread of a caller running the handle's jobs
/// itself (a `try_acquire` in its turn), it waits (10 s at most) until
/// another thread's disconnect of the handle began, then disconnects it too;
/// elsewhere it only counts.
unsafe extern "C" fn disconnect_in_a_turn(ctx: *mut c_void) {
    // SAFETY: ctx is the test's leaked `TurnDisconnect`.
    let c = unsafe { &*(ctx as *const TurnDisconnect) };
    if *c.caller.lock().unwrap() != Some(std::thread::current().id()) {
        c.elsewhere.fetch_add(1, Ordering::SeqCst);
        return;
    }
    c.in_turn.store(true, Ordering::SeqCst);
    disconnect_once_begun(&c.a, &c.returned);
}

/// A second disconnect made from a callback that runs on the thread of a
/// caller running the handle's queued jobs itself (`try_acquire` when no
/// thread runs them: the header's "a call that ran the handle's queued
/// jobs itself"), while another thread's disconnect runs, returns at once:
/// that first disconnect's end goes out after the jobs this caller runs
/// (it waits for the end of the caller's turn), so waiting for it there
/// would wait for ever (both disconnects hung, before).
#[test]
fn a_redis_disconnect_from_a_callback_in_a_callers_turn_during_another_returns() {
    let s = Server::start();
    let a = Arc::new(connect(&s, "seam-disconnect-in-turn", 2));
    // Leaked: should the disconnects hang, their threads keep using them.
    let ctx: &'static TurnDisconnect = Box::leak(Box::new(TurnDisconnect {
        a: Arc::clone(&a),
        caller: std::sync::Mutex::new(None),
        in_turn: std::sync::atomic::AtomicBool::new(false),
        elsewhere: AtomicUsize::new(0),
        returned: std::sync::atomic::AtomicBool::new(false),
    }));
    let w: &'static Waiter = Box::leak(Box::new(Waiter::new()));
    // SAFETY: leaked, never moved.
    let w = unsafe { Pin::new_unchecked(w) };
    let caller = {
        let a = Arc::clone(&a);
        std::thread::spawn(move || {
            *ctx.caller.lock().unwrap() = Some(std::thread::current().id());
            // The raw acquire wakes the door thread; the try right after
            // usually takes the turn first and sends the acquire itself
            // (granted at once: its callback runs here). Else again.
            for attempt in 1..=200 {
                // SAFETY: idle (fresh or finished below); `ctx` leaked.
                let r = unsafe {
                    a.acquire_raw(
                        w,
                        1,
                        disconnect_in_a_turn,
                        ctx as *const TurnDisconnect as *mut c_void,
                    )
                };
                assert_eq!(r, Ok(RawAcquire::Pending));
                let tried = a.try_acquire(1);
                if ctx.in_turn.load(Ordering::SeqCst) {
                    return (attempt, tried.err());
                }
                eventually("the callback on the door", Duration::from_secs(10), || {
                    ctx.elsewhere.load(Ordering::SeqCst) == attempt
                });
                // SAFETY: queued on `a`; its callback ran.
                assert_eq!(unsafe { a.finish_raw(w) }, Finish::Granted);
                a.release(1 + usize::from(tried.is_ok())).unwrap();
            }
            panic!("the try never took the turn in 200 attempts");
        })
    };
    eventually(
        "the callback runs in the caller's turn",
        Duration::from_secs(60),
        || ctx.in_turn.load(Ordering::SeqCst) || caller.is_finished(),
    );
    assert!(ctx.in_turn.load(Ordering::SeqCst), "{:?}", caller.join());
    assert_eq!(
        disconnect_on_a_thread(&a),
        Some(Ok(())),
        "the first disconnect returned"
    );
    eventually(
        "the callback's disconnect returns",
        Duration::from_secs(10),
        || ctx.returned.load(Ordering::SeqCst),
    );
    let (_, tried) = caller.join().unwrap();
    // The caller's own try: refused, or granted when it went to Redis in
    // one pipeline with the acquire, before the disconnect (its permit went
    // back with the session then).
    assert!(
        matches!(tried, None | Some(Error::Disconnected)),
        "the caller's own try: {tried:?}"
    );
    // SAFETY: queued on `a`; its callback returned.
    assert_eq!(
        unsafe { a.finish_raw(w) },
        Finish::Failed(Error::Disconnected)
    );
    let b = connect(&s, "seam-disconnect-in-turn", 2);
    assert_eq!(
        b.available_permits(),
        2,
        "the grant went back with the session"
    );
}

/// A wake callback that disconnects its handle (ctx: an `Arc<Semaphore>`).
unsafe extern "C" fn disconnect_in_callback(ctx: *mut c_void) {
    // SAFETY: ctx is the test's `Arc<Semaphore>`, alive until finish_raw
    // returned.
    let a = unsafe { &*(ctx as *const Arc<Semaphore>) };
    let _ = a.disconnect();
}

/// A disconnect made from a callback that the handle's disconnect runs on
/// its own thread (it fails the handle's queued request there) returns at
/// once: waiting for the disconnect it is inside of would wait for ever.
#[test]
fn a_redis_disconnect_from_a_callback_of_the_disconnect_returns() {
    let s = Server::start();
    let b = connect(&s, "seam-disconnect-in-own-cb", 1);
    b.try_acquire(1).unwrap();
    let a = Arc::new(connect(&s, "seam-disconnect-in-own-cb", 1));
    let ctx = Arc::clone(&a);
    let w = pin!(Waiter::new());
    // SAFETY: fresh; `ctx` outlives finish_raw.
    unsafe { queue_one(&a, &b, w.as_ref(), disconnect_in_callback, &ctx) };
    assert_eq!(
        disconnect_on_a_thread(&a),
        Some(Ok(())),
        "the disconnect (and the one in its callback) returned"
    );
    // SAFETY: queued on `a`.
    assert_eq!(
        unsafe { a.finish_raw(w.as_ref()) },
        Finish::Failed(Error::Disconnected)
    );
    b.release(1).unwrap();
}

/// A release through the handle racing its disconnect (another thread):
/// either the release comes first (its permit goes back with it, the rest
/// with the session's end) or it is refused (`Disconnected`: everything
/// went back with the session): never a permit left held. (The named
/// give-back read what the process held, then released it, which a
/// racing release could make fail; a Redis session's end gives back what
/// Redis counts for it, in one script.)
#[test]
fn a_release_racing_a_redis_disconnect_leaves_nothing_held() {
    let s = Server::start();
    let b = connect(&s, "seam-release-disconnect", 3);
    for round in 0..32 {
        let a = connect(&s, "seam-release-disconnect", 3);
        a.try_acquire(2).unwrap();
        let released = common::release_racing_disconnect(&a, 1);
        assert!(
            matches!(released, Ok(()) | Err(Error::Disconnected)),
            "round {round}: {released:?}"
        );
        let c = b.as_redis().unwrap().census().unwrap();
        assert!(c.conserved(), "round {round}: {c:?}");
        assert_eq!((c.available, c.held), (3, 0), "round {round}: {c:?}");
    }
}

/// A queued request whose grant races both its owner's cancel (another
/// thread's `finish_raw`) and the handle's disconnect (a third thread):
/// whichever comes first, the permit is counted once. Kept by the caller
/// (`Granted`: collected before the disconnect began; it went back with
/// the session, and the caller's release of it is refused), or not
/// (`Cancelled`, `Disconnected`): the census is conserved and the one
/// permit is free again once the handle is disconnected and the holder
/// released it, never lost nor counted twice.
#[test]
fn a_grant_racing_its_cancel_and_the_disconnect_is_counted_once() {
    let s = Server::start();
    let b = connect(&s, "seam-grant-cancel-disconnect", 1);
    let mut outcomes = std::collections::BTreeMap::new();
    for round in 0..40 {
        let a = connect(&s, "seam-grant-cancel-disconnect", 1);
        b.try_acquire(1).unwrap();
        let w = pin!(Waiter::new());
        let p = probe_for(&w);
        // SAFETY: fresh; `p` outlives finish_raw.
        unsafe { queue_one(&a, &b, w.as_ref(), probe, &p) };
        let go = std::sync::Barrier::new(3);
        let f = std::thread::scope(|scope| {
            let cancel = scope.spawn(|| {
                go.wait();
                // Spread the three over the grant's way to `a`.
                std::thread::sleep(Duration::from_micros(100 * (round % 8)));
                // SAFETY: queued on `a`, pinned; `p` outlives it.
                unsafe { a.finish_raw(w.as_ref()) }
            });
            let disconnect = scope.spawn(|| {
                go.wait();
                std::thread::sleep(Duration::from_micros(150 * (round % 5)));
                a.disconnect()
            });
            go.wait();
            b.release(1).unwrap();
            assert_eq!(disconnect.join().unwrap(), Ok(()));
            cancel.join().unwrap()
        });
        match &f {
            Finish::Granted => assert_eq!(a.release(1), Err(Error::Disconnected)),
            Finish::Cancelled { returned: 0 } | Finish::Failed(Error::Disconnected) => {}
            other => panic!("round {round}: {other:?}"),
        }
        *outcomes.entry(format!("{f:?}")).or_insert(0) += 1;
        // The grant's callback may still be on its way (an outcome read
        // before it ran): the census once it did.
        if p.calls.load(Ordering::SeqCst) == 0 {
            std::thread::sleep(Duration::from_millis(20));
        }
        let c = b.as_redis().unwrap().census().unwrap();
        assert!(c.conserved(), "round {round}: {c:?}");
        assert_eq!(
            (c.available, c.held, c.queued),
            (1, 0, 0),
            "round {round} ({f:?}): {c:?}"
        );
    }
    eprintln!("outcomes: {outcomes:?}");
}

/// A raw request the parent queued, finished in a `fork()` child made while
/// another thread of the parent held the handle's state lock (here: asking
/// `is_disconnected` in a loop; in a program, any call of the handle): it
/// ends at once (`Closed`: the request is the parent's), as the C header
/// promises for `volt_sem_cancel` there, instead of waiting for ever for
/// that lock. Several forks, so that some find the lock held. Each child
/// gets 10 s (then killed: the test fails).
#[test]
fn a_parents_redis_request_finished_in_a_fork_child_ends_at_once() {
    let s = Server::start();
    let a = connect(&s, "seam-fork-finish", 1);
    a.try_acquire(1).unwrap();
    let w = pin!(Waiter::new());
    let p = probe_for(&w);
    // SAFETY: fresh; `p` outlives finish_raw.
    unsafe { queue_one(&a, &a, w.as_ref(), probe, &p) };
    let stop = std::sync::atomic::AtomicBool::new(false);
    let ended = std::thread::scope(|scope| {
        scope.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                std::hint::black_box(a.is_disconnected());
            }
        });
        let mut ended = Vec::new();
        for _ in 0..20 {
            // SAFETY: the child only finishes the parent's request through
            // the seam, then `_exit`s.
            let pid = unsafe { libc::fork() };
            if pid == 0 {
                // SAFETY: queued by the parent on this handle.
                let f = unsafe { a.finish_raw(w.as_ref()) };
                // SAFETY: ends the child without the parent's exit code.
                unsafe { libc::_exit(if f == Finish::Closed { 0 } else { 1 }) };
            }
            assert!(pid > 0, "fork failed");
            ended.push(child_status_within(pid, Duration::from_secs(10)));
        }
        stop.store(true, Ordering::Relaxed);
        ended
    });
    // SAFETY: queued on `a`; `p` alive.
    let f = unsafe { a.finish_raw(w.as_ref()) };
    assert_eq!(f, Finish::Cancelled { returned: 0 });
    assert!(
        ended.iter().all(|e| *e == Some(0)),
        "each child's finish ended at once, Closed (None: killed after 10 s): {ended:?}"
    );
    a.release(1).unwrap();
}

/// The exit status of the child `pid`, or `None` if it did not end within
/// `limit` (it is killed then).
fn child_status_within(pid: libc::pid_t, limit: Duration) -> Option<i32> {
    let until = std::time::Instant::now() + limit;
    loop {
        let mut status = 0;
        // SAFETY: our own child.
        if unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) } == pid {
            return libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
        }
        if std::time::Instant::now() >= until {
            // SAFETY: our own child, not reaped yet.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
