//! The seam through its public API: every operation on both backends, raw
//! waiters (queued, granted, cancelled with a partial grant, closed, reused
//! across backends, collected inside their own callback), and the error
//! mapping of each shared-only failure.

mod common;

use std::ffi::c_void;
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;
use volt_sem_backend::RawSemaphore;

use volt_sem_backend::{
    unlink, Error, Finish, Kind, OpenOptions, RawAcquire, Semaphore, Waiter, WaiterState,
};

/// A name no other test (or earlier run) uses, unlinked on drop.
struct Name(String);

impl Name {
    fn new(tag: &str) -> Name {
        let n = format!("backend-test-{}-{tag}", std::process::id());
        let _ = unlink(&n);
        Name(n)
    }
}

impl Drop for Name {
    fn drop(&mut self) {
        let _ = unlink(&self.0);
    }
}

fn both(tag: &str, permits: usize) -> (Name, Vec<Semaphore>) {
    let name = Name::new(tag);
    let shared = Semaphore::open(&name.0, permits, OpenOptions::new()).unwrap();
    (name, vec![Semaphore::local(permits).unwrap(), shared])
}

/// A callback that counts its calls and signals a condition variable.
#[derive(Default)]
struct Signal {
    calls: AtomicUsize,
    done: Mutex<bool>,
    cv: Condvar,
}

impl Signal {
    fn wait(&self) {
        let mut d = self.done.lock().unwrap();
        while !*d {
            d = self.cv.wait(d).unwrap();
        }
    }
}

unsafe extern "C" fn signal(ctx: *mut c_void) {
    // SAFETY: the tests pass a `Signal` that outlives finish_raw.
    let s = unsafe { &*(ctx as *const Signal) };
    s.calls.fetch_add(1, Ordering::SeqCst);
    *s.done.lock().unwrap() = true;
    s.cv.notify_all();
}

fn ctx(s: &Signal) -> *mut c_void {
    s as *const Signal as *mut c_void
}

#[test]
fn try_release_close_on_both() {
    let (_name, sems) = both("basic", 3);
    for sem in &sems {
        assert_eq!(sem.available_permits(), 3);
        sem.try_acquire(2).unwrap();
        assert_eq!(sem.try_acquire(2), Err(Error::NoPermits));
        sem.try_acquire(0).unwrap();
        assert_eq!(sem.available_permits(), 1);
        sem.release(2).unwrap();
        assert_eq!(sem.available_permits(), 3);
        sem.acquire_blocking(3).unwrap();
        assert_eq!(
            sem.acquire_timeout(1, Duration::from_millis(10)),
            Err(Error::TimedOut)
        );
        sem.release(3).unwrap();
        assert!(!sem.is_closed());
        sem.close().unwrap();
        assert!(sem.is_closed());
        assert_eq!(sem.try_acquire(1), Err(Error::Closed));
        assert_eq!(sem.acquire_blocking(1), Err(Error::Closed));
    }
    assert_eq!(sems[0].kind(), Kind::Local);
    assert_eq!(sems[1].kind(), Kind::Shared);
    assert_eq!(sems[0].total_permits(), None);
    assert_eq!(sems[1].total_permits(), Some(3));
    assert!(sems[0].as_local().is_some() && sems[0].as_shared().is_none());
    assert!(sems[1].as_shared().is_some() && sems[1].as_local().is_none());
}

#[test]
fn accounting_errors_differ_by_backend() {
    let (_name, sems) = both("accounting", 2);
    // Local: any release up to MAX_PERMITS; beyond is Overflow, nothing added.
    sems[0].release(5).unwrap();
    assert_eq!(
        sems[0].release(Semaphore::MAX_PERMITS),
        Err(Error::Overflow {
            unreleased: Semaphore::MAX_PERMITS
        })
    );
    assert_eq!(sems[0].available_permits(), 7);
    // Shared: a process returns only what it holds.
    assert_eq!(sems[1].release(1), Err(Error::NotHeld { held: 0 }));
    assert_eq!(sems[1].try_acquire(3), Err(Error::TooManyPermits));
    assert_eq!(sems[1].available_permits(), 2);
    assert_eq!(
        sems[0].try_acquire(Semaphore::MAX_PERMITS + 1),
        Err(Error::TooManyPermits)
    );
}

#[test]
fn raw_waiter_granted_then_reused_on_the_other_backend() {
    let (_name, sems) = both("raw", 2);
    let waiter = pin!(Waiter::new());
    for (i, sem) in sems.iter().enumerate() {
        sem.try_acquire(2).unwrap();
        let sig = Signal::default();
        // SAFETY: not busy; `waiter` and `sig` outlive finish_raw below.
        let r = unsafe { sem.acquire_raw(waiter.as_ref(), 2, signal, ctx(&sig)) };
        assert_eq!(r, Ok(RawAcquire::Pending));
        assert!(waiter.is_busy());
        assert_eq!(waiter.is_shared(), i == 1);
        assert!(sem.owns(&waiter));
        assert!(!sems[1 - i].owns(&waiter));
        assert_eq!(waiter.state(), WaiterState::Waiting);
        assert_eq!(waiter.requested(), 2);
        // The other backend does not touch it.
        // SAFETY: the contract is kept: for the other semaphore it is idle.
        assert_eq!(
            unsafe { sems[1 - i].finish_raw(waiter.as_ref()) },
            Finish::Idle
        );
        assert!(waiter.is_busy());
        sem.release(2).unwrap();
        sig.wait();
        assert_eq!(waiter.state(), WaiterState::Granted);
        // SAFETY: queued on `sem`.
        assert_eq!(unsafe { sem.finish_raw(waiter.as_ref()) }, Finish::Granted);
        assert!(!waiter.is_busy());
        assert_eq!(sig.calls.load(Ordering::SeqCst), 1);
        sem.release(2).unwrap();
        assert_eq!(sem.available_permits(), 2);
    }
}

#[test]
fn raw_waiter_cancel_hands_the_partial_grant_on() {
    let (_name, sems) = both("cancel", 3);
    for sem in &sems {
        sem.try_acquire(3).unwrap();
        let (big, small) = (pin!(Waiter::new()), pin!(Waiter::new()));
        let (s_big, s_small) = (Signal::default(), Signal::default());
        // SAFETY: fresh waiters; they and the signals outlive finish_raw.
        unsafe {
            assert_eq!(
                sem.acquire_raw(big.as_ref(), 3, signal, ctx(&s_big)),
                Ok(RawAcquire::Pending)
            );
            assert_eq!(
                sem.acquire_raw(small.as_ref(), 1, signal, ctx(&s_small)),
                Ok(RawAcquire::Pending)
            );
        }
        // FIFO: 2 released go to the head (big), not to the later small one.
        sem.release(2).unwrap();
        assert_eq!(small.state(), WaiterState::Waiting);
        // Cancelling big hands its 2 on: small is served, 1 is left over.
        // SAFETY: queued on `sem`.
        assert_eq!(
            unsafe { sem.finish_raw(big.as_ref()) },
            Finish::Cancelled { returned: 2 }
        );
        s_small.wait();
        // SAFETY: queued on `sem`.
        assert_eq!(unsafe { sem.finish_raw(small.as_ref()) }, Finish::Granted);
        assert_eq!(s_big.calls.load(Ordering::SeqCst), 0);
        assert_eq!(sem.available_permits(), 1);
        sem.release(2).unwrap();
        assert_eq!(sem.available_permits(), 3);
    }
}

#[test]
fn raw_waiter_closed() {
    let (_name, sems) = both("closed", 1);
    for sem in &sems {
        sem.try_acquire(1).unwrap();
        let w = pin!(Waiter::new());
        let sig = Signal::default();
        // SAFETY: fresh; outlives finish_raw.
        let r = unsafe { sem.acquire_raw(w.as_ref(), 1, signal, ctx(&sig)) };
        assert_eq!(r, Ok(RawAcquire::Pending));
        sem.close().unwrap();
        sig.wait();
        assert_eq!(w.state(), WaiterState::Closed);
        // SAFETY: queued on `sem`.
        assert_eq!(unsafe { sem.finish_raw(w.as_ref()) }, Finish::Closed);
        sem.release(1).unwrap();
        // SAFETY: not busy.
        let r = unsafe { sem.acquire_raw(w.as_ref(), 1, signal, ctx(&sig)) };
        assert_eq!(r, Err(Error::Closed));
        assert!(!w.is_busy());
    }
}

/// A callback that collects its own outcome (`finish_raw` inside) and hands
/// the permit straight back, as C's documented `on_wake` pattern does.
struct Inside<'a> {
    sem: &'a Semaphore,
    waiter: *const Waiter,
    was_inside: AtomicUsize,
    on_doorbell: AtomicUsize,
    sig: Signal,
}

unsafe extern "C" fn collect_inside(ctx: *mut c_void) {
    // SAFETY: `ctx` is the `Inside` below, alive until finish_raw returned.
    let c = unsafe { &*(ctx as *const Inside) };
    // SAFETY: the waiter is pinned by the test and busy (its callback runs).
    let w = unsafe { std::pin::Pin::new_unchecked(&*c.waiter) };
    if w.in_own_callback() {
        c.was_inside.fetch_add(1, Ordering::SeqCst);
    }
    if volt_sem_backend::in_shared_callback() {
        c.on_doorbell.fetch_add(1, Ordering::SeqCst);
    }
    // SAFETY: queued on `c.sem`.
    if unsafe { c.sem.finish_raw(w) } == Finish::Granted {
        c.sem.release(1).unwrap();
    }
    // SAFETY: `c.sig` lives as long as `c`.
    unsafe { signal(&c.sig as *const Signal as *mut c_void) };
}

#[test]
fn in_own_callback_on_both() {
    let (_name, sems) = both("inside", 1);
    for (i, sem) in sems.iter().enumerate() {
        sem.try_acquire(1).unwrap();
        let w = pin!(Waiter::new());
        let c = Inside {
            sem,
            waiter: &*w,
            was_inside: AtomicUsize::new(0),
            on_doorbell: AtomicUsize::new(0),
            sig: Signal::default(),
        };
        // SAFETY: fresh; `c` outlives finish_raw.
        let r = unsafe {
            sem.acquire_raw(
                w.as_ref(),
                1,
                collect_inside,
                &c as *const Inside as *mut c_void,
            )
        };
        assert_eq!(r, Ok(RawAcquire::Pending));
        assert!(!w.in_own_callback());
        sem.release(1).unwrap();
        c.sig.wait();
        // The outcome was consumed inside: the owner's finish says Idle.
        // SAFETY: queued on `sem`.
        assert_eq!(unsafe { sem.finish_raw(w.as_ref()) }, Finish::Idle);
        assert!(!w.is_busy());
        assert_eq!(c.was_inside.load(Ordering::SeqCst), 1);
        // Only a shared semaphore's callbacks run on a doorbell thread.
        assert_eq!(c.on_doorbell.load(Ordering::SeqCst), i);
        assert!(!volt_sem_backend::in_shared_callback());
        assert_eq!(sem.available_permits(), 1);
    }
}

/// The local and the shared semaphore queue the same inner waiter: each
/// request must name the backend that queued it, so that its callback knows
/// where it runs (on a doorbell thread or not), whichever queued it before.
#[test]
fn one_waiter_names_the_backend_that_queued_it() {
    let (_name, sems) = both("tagged", 1);
    let w = pin!(Waiter::new());
    for i in [1, 0, 1, 0] {
        let sem = &sems[i];
        sem.try_acquire(1).unwrap();
        let c = Inside {
            sem,
            waiter: &*w,
            was_inside: AtomicUsize::new(0),
            on_doorbell: AtomicUsize::new(0),
            sig: Signal::default(),
        };
        // SAFETY: idle (finished below each round); `c` outlives finish_raw.
        let r = unsafe {
            sem.acquire_raw(
                w.as_ref(),
                1,
                collect_inside,
                &c as *const Inside as *mut c_void,
            )
        };
        assert_eq!(r, Ok(RawAcquire::Pending));
        assert!(sem.owns(&w) && !sems[1 - i].owns(&w));
        sem.release(1).unwrap();
        c.sig.wait();
        // SAFETY: queued on `sem`.
        assert_eq!(unsafe { sem.finish_raw(w.as_ref()) }, Finish::Idle);
        assert_eq!(c.was_inside.load(Ordering::SeqCst), 1);
        assert_eq!(c.on_doorbell.load(Ordering::SeqCst), i, "round on {i}");
        assert_eq!(sem.available_permits(), 1);
    }
}

#[test]
fn open_errors_are_typed() {
    let name = Name::new("errors");
    assert_eq!(
        Semaphore::open(&name.0, 2, OpenOptions::new().attach_only()).unwrap_err(),
        Error::NotFound
    );
    let a = Semaphore::open(&name.0, 2, OpenOptions::new().create_only()).unwrap();
    assert_eq!(
        Semaphore::open(&name.0, 2, OpenOptions::new().create_only()).unwrap_err(),
        Error::AlreadyExists
    );
    let e = Semaphore::open(&name.0, 3, OpenOptions::new()).unwrap_err();
    assert_eq!(e, Error::TotalMismatch { existing: 2 });
    assert_eq!(e.code(), "TOTAL_MISMATCH");
    assert!(e.to_string().contains("2 permits"), "{e}");
    for bad in ["", "a/b", &"x".repeat(volt_sem_backend::MAX_NAME_LEN + 1)] {
        assert_eq!(
            Semaphore::open(bad, 1, OpenOptions::new()).unwrap_err(),
            Error::InvalidName
        );
    }
    assert_eq!(
        Semaphore::open(&name.0, 0, OpenOptions::new()).unwrap_err(),
        Error::InvalidPermits
    );
    // Attach-only finds it; a second handle shares the same permits.
    let b = Semaphore::open(&name.0, 2, OpenOptions::new().attach_only()).unwrap();
    a.try_acquire(2).unwrap();
    assert_eq!(b.available_permits(), 0);
    b.release(2).unwrap(); // one process: any handle returns its permits
    unlink(&name.0).unwrap();
    assert_eq!(unlink(&name.0), Err(Error::NotFound));
    // Attached handles keep working after unlink.
    a.try_acquire(1).unwrap();
    a.release(1).unwrap();
}

#[test]
fn codes_are_distinct_and_messages_nonempty() {
    let all = [
        Error::Closed,
        Error::NoPermits,
        Error::TooManyPermits,
        Error::TimedOut,
        Error::Overflow { unreleased: 1 },
        Error::InvalidName,
        Error::InvalidPermits,
        Error::NotFound,
        Error::AlreadyExists,
        Error::PermissionDenied,
        Error::TotalMismatch { existing: 1 },
        Error::VersionMismatch {
            found: 9,
            expected: 3,
        },
        Error::NotASegment,
        Error::ProcessTableFull,
        Error::QueueFull,
        Error::NotHeld { held: 0 },
        Error::Corrupt,
        Error::InCallback,
        Error::Forked,
        Error::Unsupported,
        Error::Os(5),
        Error::InvalidUrl("no host"),
        Error::InvalidPrefix,
        Error::InvalidOption("lease"),
        Error::Auth,
        Error::Connection("refused".into()),
        Error::Redis("ERR".into()),
        Error::Protocol("?".into()),
        Error::LeaseExpired,
        Error::StateLost,
        Error::Tls("untrusted".into()),
        Error::NotReplicated {
            acked: 0,
            wanted: 1,
        },
    ];
    let mut codes: Vec<_> = all.iter().map(Error::code).collect();
    codes.sort_unstable();
    codes.dedup();
    assert_eq!(codes.len(), all.len());
    for e in all {
        assert!(!e.to_string().is_empty());
        // Every shared-only error round-trips through the shm crate's error.
        if let Ok(shm) = volt_sem_backend::shm::Error::try_from(e.clone()) {
            assert_eq!(Error::from(shm), e);
        }
    }
}

#[test]
fn shared_blocking_from_threads_of_one_process() {
    let name = Name::new("threads");
    let sem = Arc::new(Semaphore::open(&name.0, 2, OpenOptions::new()).unwrap());
    let peak = Arc::new(AtomicUsize::new(0));
    let now = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..4)
        .map(|i| {
            let (sem, peak, now) = (sem.clone(), peak.clone(), now.clone());
            std::thread::spawn(move || {
                for _ in 0..200 {
                    let n = 1 + i % 2;
                    sem.acquire_blocking(n).unwrap();
                    let held = now.fetch_add(n, Ordering::SeqCst) + n;
                    peak.fetch_max(held, Ordering::SeqCst);
                    now.fetch_sub(n, Ordering::SeqCst);
                    sem.release(n).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert!(peak.load(Ordering::SeqCst) <= 2);
    assert_eq!(sem.available_permits(), 2);
}

#[test]
fn set_total_and_reopen_through_the_seam() {
    let (_name, sems) = both("total", 1);
    let (local, shared) = (&sems[0], &sems[1]);
    // A local semaphore has no total to change and its close is final.
    assert_eq!(local.set_total(2), Err(Error::Unsupported));
    assert_eq!(local.reopen(), Err(Error::Unsupported));

    // A queued raw waiter is served by the growth, without any release.
    let _held = shared.try_acquire(1).unwrap();
    let w = pin!(Waiter::new());
    let sig = Signal::default();
    // SAFETY: fresh; outlives finish_raw.
    let r = unsafe { shared.acquire_raw(w.as_ref(), 1, signal, ctx(&sig)) };
    assert_eq!(r, Ok(RawAcquire::Pending));
    shared.set_total(2).unwrap();
    sig.wait();
    // SAFETY: queued on `shared`.
    assert_eq!(unsafe { shared.finish_raw(w.as_ref()) }, Finish::Granted);
    assert_eq!(shared.total_permits(), Some(2));

    // A queued request above the new total fails with the error of a request
    // above the total (its raw waiter is woken as by a close).
    let big = pin!(Waiter::new());
    let sig2 = Signal::default();
    // SAFETY: fresh; outlives finish_raw.
    let r = unsafe { shared.acquire_raw(big.as_ref(), 2, signal, ctx(&sig2)) };
    assert_eq!(r, Ok(RawAcquire::Pending));
    shared.set_total(1).unwrap();
    sig2.wait();
    assert_eq!(
        // SAFETY: queued on `shared`.
        unsafe { shared.finish_raw(big.as_ref()) },
        Finish::Failed(Error::TooManyPermits)
    );
    assert!(!shared.is_closed());
    shared.set_total(2).unwrap();

    // The failure is the waiter's outcome: the total growing back before
    // its owner looks does not turn it into a close.
    let big = pin!(Waiter::new());
    let sig3 = Signal::default();
    // SAFETY: fresh; outlives finish_raw.
    let r = unsafe { shared.acquire_raw(big.as_ref(), 2, signal, ctx(&sig3)) };
    assert_eq!(r, Ok(RawAcquire::Pending));
    shared.set_total(1).unwrap();
    shared.set_total(2).unwrap();
    sig3.wait();
    assert_eq!(
        // SAFETY: queued on `shared`.
        unsafe { shared.finish_raw(big.as_ref()) },
        Finish::Failed(Error::TooManyPermits)
    );

    // A shrink revokes nothing: both permits stay held, none is available
    // until the debt is paid.
    shared.set_total(1).unwrap();
    assert_eq!(shared.total_permits(), Some(1));
    shared.release(1).unwrap();
    assert!(
        shared.try_acquire(1).is_err(),
        "the first release pays the debt"
    );
    shared.release(1).unwrap();
    shared.try_acquire(1).unwrap();
    shared.release(1).unwrap();
    assert_eq!(shared.set_total(0), Err(Error::InvalidPermits));

    // Reopen undoes a close.
    shared.close().unwrap();
    assert_eq!(shared.try_acquire(1).err(), Some(Error::Closed));
    shared.reopen().unwrap();
    assert!(!shared.is_closed());
    shared.try_acquire(1).unwrap();
    shared.release(1).unwrap();
}

/// `stats()` through the seam, on both backends, over the raw waiter API
/// the bindings use: the seam records from the start; a queued raw grant's
/// wait (from its queueing to the release that served it) lands in the
/// histogram; a cancel by `finish_raw`, a binding's `record_timeout`, and a
/// request failed by `close` (not a cancel); the gauges while a raw request
/// waits.
#[test]
fn stats_through_the_seam_raw_path() {
    const HOLD: Duration = Duration::from_millis(200);
    let (_name, sems) = both("stats", 2);
    for sem in &sems {
        let s = sem.stats();
        assert!(s.recording, "{:?}", sem.kind());
        assert_eq!((s.grants, s.available, s.held, s.queued), (0, 2, 0, 0));
        sem.try_acquire(2).unwrap();
        assert!(sem.try_acquire(1).is_err()); // not counted
        let w = pin!(Waiter::new());
        let sig = Signal::default();
        // SAFETY: fresh; the waiter and the signal outlive finish_raw.
        let r = unsafe { sem.acquire_raw(w.as_ref(), 1, signal, ctx(&sig)) };
        assert_eq!(r, Ok(RawAcquire::Pending));
        let s = sem.stats();
        assert_eq!(
            (s.available, s.held, s.queued),
            (0, 2, 1),
            "{:?}",
            sem.kind()
        );
        std::thread::sleep(HOLD);
        sem.release(1).unwrap();
        sig.wait();
        // SAFETY: queued on `sem`.
        assert_eq!(unsafe { sem.finish_raw(w.as_ref()) }, Finish::Granted);
        let s = sem.stats();
        assert_eq!((s.grants, s.permits_granted, s.wait.count()), (2, 3, 2));
        assert!(s.wait.max() >= HOLD, "{:?}: {s:?}", sem.kind());
        assert_eq!((s.available, s.held, s.queued), (0, 2, 0));
        // Cancelled by the binding's timer: one cancel, one timeout.
        let sig = Signal::default();
        // SAFETY: idle again; outlives finish_raw.
        let r = unsafe { sem.acquire_raw(w.as_ref(), 2, signal, ctx(&sig)) };
        assert_eq!(r, Ok(RawAcquire::Pending));
        // SAFETY: queued on `sem`.
        assert_eq!(
            unsafe { sem.finish_raw(w.as_ref()) },
            Finish::Cancelled { returned: 0 }
        );
        sem.record_timeout();
        // Failed by close: not a cancel.
        let sig = Signal::default();
        // SAFETY: idle again; outlives finish_raw.
        let r = unsafe { sem.acquire_raw(w.as_ref(), 1, signal, ctx(&sig)) };
        assert_eq!(r, Ok(RawAcquire::Pending));
        sem.close().unwrap();
        sig.wait();
        // SAFETY: queued on `sem`.
        assert_eq!(unsafe { sem.finish_raw(w.as_ref()) }, Finish::Closed);
        let s = sem.stats();
        assert_eq!(
            (s.grants, s.cancels, s.timeouts, s.queued),
            (2, 1, 1, 0),
            "{:?}",
            sem.kind()
        );
        assert_eq!((s.reclaims_seen, s.lease_losses), (0, 0));
        sem.release(2).unwrap();
    }
}

/// Polls `cond` until it holds (no timing assertion: a hang fails the run).
fn until(mut cond: impl FnMut() -> bool) {
    while !cond() {
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn disconnect_ends_one_named_handle_only() {
    let (_name, a, b) = counted_and_other("disconnect", 3);
    a.try_acquire(2).unwrap();
    b.try_acquire(1).unwrap();
    // Queued, in this order: a raw request of `a`, one of `b` for 2, a
    // blocking acquire of `a`.
    let wa = pin!(Waiter::new());
    let sa = Signal::default();
    // SAFETY: fresh; outlives finish_raw.
    let r = unsafe { a.acquire_raw(wa.as_ref(), 1, signal, ctx(&sa)) };
    assert_eq!(r, Ok(RawAcquire::Pending));
    let wb = pin!(Waiter::new());
    let sb = Signal::default();
    // SAFETY: as above.
    let r = unsafe { b.acquire_raw(wb.as_ref(), 2, signal, ctx(&sb)) };
    assert_eq!(r, Ok(RawAcquire::Pending));
    std::thread::scope(|scope| {
        let blocked = scope.spawn(|| a.acquire_blocking(1));
        until(|| b.inspect().unwrap().waiters.len() == 3);
        a.disconnect().unwrap();
        sa.wait();
        // SAFETY: queued on `a`.
        let f = unsafe { a.finish_raw(wa.as_ref()) };
        assert_eq!(f, Finish::Failed(Error::Disconnected));
        assert_eq!(blocked.join().unwrap(), Err(Error::Disconnected));
    });
    // What `a` held went to the next waiter, `b`'s.
    sb.wait();
    // SAFETY: queued on `b`.
    assert_eq!(unsafe { b.finish_raw(wb.as_ref()) }, Finish::Granted);
    assert!(a.is_disconnected() && !b.is_disconnected());
    // Every later call of `a` that can fail is refused; the queries answer.
    let gone = Err(Error::Disconnected);
    assert_eq!(a.try_acquire(1).map(|_| ()), gone);
    assert_eq!(
        a.acquire_timeout(1, Duration::from_secs(1)).map(|_| ()),
        gone
    );
    assert_eq!(a.release(1), gone);
    assert_eq!(a.close(), gone);
    assert_eq!(a.set_total(4), gone);
    assert_eq!(a.reopen(), gone);
    assert_eq!(a.inspect().map(|_| ()), gone);
    let w = pin!(Waiter::new());
    // SAFETY: fresh.
    let r = unsafe { a.acquire_raw(w.as_ref(), 1, signal, ctx(&sa)) };
    assert_eq!(r, Err(Error::Disconnected));
    assert_eq!(a.total_permits(), Some(3));
    assert!(!a.is_closed());
    assert_eq!(a.disconnect(), Ok(()), "idempotent");
    // The semaphore is open for the others: every permit accounted for.
    assert_eq!(b.available_permits(), 0);
    b.release(3).unwrap();
    assert_eq!(b.available_permits(), 3);
    assert!(!b.is_closed());
}

/// Another handle of `name` (of `total` permits), counting what it holds.
fn counted(name: &Name, total: usize) -> Semaphore {
    Semaphore::open(&name.0, total, OpenOptions::new())
        .unwrap()
        .counting_held()
}

/// Two handles of a new name with `total` permits: `a` counting what it
/// holds (`counting_held`, as every binding's named handles), `b` not.
fn counted_and_other(tag: &str, total: usize) -> (Name, Semaphore, Semaphore) {
    let (name, a, b) = two_handles(tag, total);
    (name, a.counting_held(), b)
}

/// Two uncounted handles of a new name with `total` permits.
fn two_handles(tag: &str, total: usize) -> (Name, Semaphore, Semaphore) {
    let name = Name::new(tag);
    let a = Semaphore::open(&name.0, total, OpenOptions::new()).unwrap();
    let b = Semaphore::open(&name.0, total, OpenOptions::new()).unwrap();
    (name, a, b)
}

/// A blocking acquire of a disconnected named handle is failed by the
/// disconnect itself (not left to a check of the blocked thread's): when
/// `disconnect` returns, its request is out of the queue and its partial
/// grant handed on.
#[test]
fn disconnect_fails_a_blocked_named_acquire_at_once() {
    let (_name, a, b) = two_handles("disconnect-blocked", 3);
    b.try_acquire(2).unwrap();
    std::thread::scope(|scope| {
        // Granted 1 of 3 at once, then queued for the other 2.
        let blocked = scope.spawn(|| a.acquire_blocking(3));
        until(|| b.inspect().unwrap().waiters.len() == 1);
        assert_eq!(b.available_permits(), 0);
        a.disconnect().unwrap();
        // Before the blocked thread returns: nothing queued, its 1 back.
        assert_eq!(b.inspect().unwrap().waiters.len(), 0);
        assert_eq!(b.available_permits(), 1);
        assert_eq!(blocked.join().unwrap(), Err(Error::Disconnected));
    });
    b.release(2).unwrap();
    assert_eq!(b.available_permits(), 3);
}

#[test]
fn disconnect_gives_back_no_more_than_the_process_holds() {
    let (_name, a, b) = counted_and_other("disconnect-held", 2);
    a.try_acquire(2).unwrap();
    // The process releases through `b` what it took through `a`.
    b.release(1).unwrap();
    b.try_acquire(1).unwrap();
    a.disconnect().unwrap();
    // `a` counted 2; the process held 2 (one of them `b`'s by now): both
    // went back, and `b`'s release of its own is refused as not held.
    assert_eq!(b.available_permits(), 2);
    assert!(matches!(b.release(1), Err(Error::NotHeld { .. })));
}

#[test]
fn disconnect_of_a_local_semaphore_is_refused() {
    let sem = Semaphore::local(1).unwrap();
    assert_eq!(sem.disconnect(), Err(Error::Unsupported));
    assert!(!sem.is_disconnected());
    sem.try_acquire(1).unwrap();
    sem.release(1).unwrap();
}

#[test]
fn disconnect_of_an_uncounted_named_handle_leaves_the_process_its_permits() {
    let (_name, a, b) = two_handles("disconnect-uncounted", 2);
    a.try_acquire(1).unwrap();
    b.try_acquire(1).unwrap();
    let w = pin!(Waiter::new());
    let sig = Signal::default();
    // SAFETY: fresh; outlives finish_raw.
    let r = unsafe { a.acquire_raw(w.as_ref(), 1, signal, ctx(&sig)) };
    assert_eq!(r, Ok(RawAcquire::Pending));
    a.disconnect().unwrap();
    sig.wait();
    // SAFETY: queued on `a`.
    let f = unsafe { a.finish_raw(w.as_ref()) };
    assert_eq!(f, Finish::Failed(Error::Disconnected));
    assert_eq!(a.try_acquire(1).map(|_| ()), Err(Error::Disconnected));
    // Nothing counted, nothing given back: the process still holds both,
    // and returns them through its other handle.
    assert_eq!(b.available_permits(), 0);
    b.release(2).unwrap();
    assert_eq!(b.available_permits(), 2);
}

/// A counted handle's `release` racing its `disconnect`: either order of the
/// two gives the handle's permits back once. (The old code released them
/// through `release`, then `disconnect` read the count not yet lowered and
/// released as many again: permits of another handle of the process, whose
/// holder still runs with them.)
#[test]
fn a_release_racing_disconnect_gives_the_handle_s_permits_back_once() {
    let name = Name::new("disconnect-release-race");
    let b = Semaphore::open(&name.0, 4, OpenOptions::new()).unwrap();
    b.try_acquire(2).unwrap();
    let mut refused = 0;
    for _ in 0..20_000 {
        let a = counted(&name, 4);
        a.try_acquire(2).unwrap();
        let released = common::release_racing_disconnect(&a, 2);
        match released {
            Ok(()) => {}
            Err(Error::Disconnected) => refused += 1,
            Err(e) => panic!("release racing disconnect: {e:?}"),
        }
        // `b`'s 2 are still held by the process, and nothing else.
        assert_eq!(
            (
                b.available_permits(),
                b.as_shared().unwrap().held_permits().unwrap()
            ),
            (2, 2),
            "after {refused} refused releases"
        );
    }
    b.release(2).unwrap();
    assert_eq!(b.available_permits(), 4);
}

/// A wake callback's context that disconnects `sem` (on the doorbell
/// thread), records the outcome and what was available when it returned,
/// then signals.
struct DisconnectIn<'a> {
    sem: &'a Semaphore,
    sig: Signal,
    disconnected: Mutex<Option<Result<(), Error>>>,
    seen: AtomicUsize,
}

impl<'a> DisconnectIn<'a> {
    fn new(sem: &'a Semaphore) -> Self {
        DisconnectIn {
            sem,
            sig: Signal::default(),
            disconnected: Mutex::new(None),
            seen: AtomicUsize::new(usize::MAX),
        }
    }

    /// Queues a raw request of `n` on `self.sem` whose wake disconnects it.
    ///
    /// # Safety
    /// `w` is idle; `self` outlives its `finish_raw`.
    unsafe fn queue(&self, w: std::pin::Pin<&Waiter>, n: usize) {
        unsafe extern "C" fn disconnect_here(p: *mut c_void) {
            // SAFETY: the test's `DisconnectIn`, alive until finish_raw returned.
            let c = unsafe { &*(p as *const DisconnectIn<'_>) };
            *c.disconnected.lock().unwrap() = Some(c.sem.disconnect());
            let available = c.sem.as_shared().unwrap().available_permits();
            c.seen.store(available, Ordering::SeqCst);
            // SAFETY: the signal in the same `DisconnectIn`.
            unsafe { signal(ctx(&c.sig)) };
        }
        let p = self as *const DisconnectIn<'_> as *mut c_void;
        // SAFETY: forwarded contract.
        let r = unsafe { self.sem.acquire_raw(w, n, disconnect_here, p) };
        assert_eq!(r, Ok(RawAcquire::Pending));
    }
}

/// A wake callback (on the doorbell thread) that disconnects its own handle,
/// which has another request queued: the disconnect fails that one (its
/// callback runs after this one on the same thread), gives back what the
/// handle holds (the first request's grant, collected after the disconnect),
/// and nothing hangs.
#[test]
fn disconnect_from_a_doorbell_callback() {
    let (_name, a, b) = counted_and_other("disconnect-in-callback", 2);
    b.try_acquire(2).unwrap();
    let c = DisconnectIn::new(&a);
    let w1 = pin!(Waiter::new());
    // SAFETY: fresh; `c` outlives finish_raw.
    unsafe { c.queue(w1.as_ref(), 1) };
    let w2 = pin!(Waiter::new());
    let s2 = Signal::default();
    // SAFETY: as above.
    let r = unsafe { a.acquire_raw(w2.as_ref(), 2, signal, ctx(&s2)) };
    assert_eq!(r, Ok(RawAcquire::Pending));
    b.release(2).unwrap(); // 1 to w1 (its callback disconnects), 1 to w2 (partial)
    c.sig.wait();
    s2.wait();
    assert_eq!(*c.disconnected.lock().unwrap(), Some(Ok(())));
    // SAFETY: queued on `a`.
    assert_eq!(
        unsafe { a.finish_raw(w2.as_ref()) },
        Finish::Failed(Error::Disconnected)
    );
    // SAFETY: queued on `a`; granted before the disconnect, collected after.
    assert_eq!(
        unsafe { a.finish_raw(w1.as_ref()) },
        Finish::Failed(Error::Disconnected)
    );
    // Both permits are back: w2's partial one handed on, w1's given back.
    assert_eq!(b.available_permits(), 2);
    b.try_acquire(2).unwrap();
    b.release(2).unwrap();
}

/// A wake callback (on the doorbell thread) that disconnects its handle
/// while the handle holds a permit: the disconnect gives that permit back
/// from the doorbell thread (a release there is allowed) before it returns,
/// and the callback's own grant, collected after, goes back too.
#[test]
fn disconnect_from_a_doorbell_callback_gives_back_what_the_handle_holds() {
    let (_name, a, b) = counted_and_other("disconnect-in-callback-held", 3);
    a.try_acquire(1).unwrap();
    b.try_acquire(2).unwrap();
    let c = DisconnectIn::new(&a);
    let w = pin!(Waiter::new());
    // SAFETY: fresh; `c` outlives finish_raw.
    unsafe { c.queue(w.as_ref(), 1) };
    b.release(1).unwrap(); // granted to `w`: its callback disconnects `a`
    c.sig.wait();
    assert_eq!(*c.disconnected.lock().unwrap(), Some(Ok(())));
    // `a`'s counted permit was back (the callback's grant not yet).
    assert_eq!(c.seen.load(Ordering::SeqCst), 1);
    // SAFETY: queued on `a`; granted before the disconnect, collected after.
    assert_eq!(
        unsafe { a.finish_raw(w.as_ref()) },
        Finish::Failed(Error::Disconnected)
    );
    assert_eq!(b.available_permits(), 2);
    b.release(1).unwrap();
    assert_eq!(b.available_permits(), 3);
}

/// A blocked acquire of a counted handle, its grant (a release of another
/// handle) racing the handle's `disconnect`, and for half the rounds its
/// timeout too: whichever comes first, every permit is accounted for once
/// (granted before the disconnect and given back by it, or failed with its
/// partial grant handed on, or timed out), and nothing stays queued.
#[test]
fn a_blocked_acquire_s_grant_racing_disconnect_loses_no_permit() {
    let name = Name::new("disconnect-grant-race");
    let b = Semaphore::open(&name.0, 3, OpenOptions::new()).unwrap();
    let mut outcomes = std::collections::BTreeMap::new();
    for round in 0..2_000u32 {
        let a = counted(&name, 3);
        b.try_acquire(3).unwrap();
        let go = std::sync::Barrier::new(3);
        let r = std::thread::scope(|scope| {
            let blocked = scope.spawn(|| {
                go.wait();
                if round % 2 == 0 {
                    a.acquire_blocking(2).map(|_| ())
                } else {
                    a.acquire_timeout(2, Duration::from_micros(50)).map(|_| ())
                }
            });
            let releaser = scope.spawn(|| {
                go.wait();
                b.release(1).unwrap();
                b.release(2).unwrap();
            });
            go.wait();
            a.disconnect().unwrap();
            releaser.join().unwrap();
            blocked.join().unwrap()
        });
        *outcomes.entry(format!("{r:?}")).or_insert(0u32) += 1;
        // Ok: granted (and counted) before the disconnect, which gave the
        // permits back with the handle's.
        assert!(
            matches!(r, Ok(()) | Err(Error::Disconnected | Error::TimedOut)),
            "round {round}: {r:?}"
        );
        assert_eq!(b.available_permits(), 3, "round {round}: {r:?}");
        assert_eq!(b.inspect().unwrap().waiters.len(), 0);
    }
    eprintln!("outcomes: {outcomes:?}");
}

/// Raw requests of a counted handle on four threads (queued behind each
/// other: two permits for four), each finished after its wake, its grant
/// released; the handle disconnected meanwhile. Every request ends granted
/// (before the end) or `Disconnected`, never waits for ever, and every permit
/// is accounted for once.
#[test]
fn raw_requests_racing_disconnect_lose_no_permit() {
    let name = Name::new("disconnect-raw-race");
    let b = Semaphore::open(&name.0, 3, OpenOptions::new()).unwrap();
    b.try_acquire(1).unwrap();
    for round in 0..200 {
        let a = counted(&name, 3);
        let go = std::sync::Barrier::new(5);
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    go.wait();
                    loop {
                        let w = pin!(Waiter::new());
                        let sig = Signal::default();
                        // SAFETY: fresh; `sig` outlives finish_raw below.
                        let r = unsafe { a.acquire_raw(w.as_ref(), 1, signal, ctx(&sig)) };
                        let f = match r {
                            Ok(RawAcquire::Ready) => Finish::Granted,
                            Ok(RawAcquire::Pending) => {
                                sig.wait();
                                // SAFETY: queued on `a`.
                                unsafe { a.finish_raw(w.as_ref()) }
                            }
                            Err(e) => Finish::Failed(e),
                        };
                        match f {
                            Finish::Granted => match a.release(1) {
                                Ok(()) | Err(Error::Disconnected) => {}
                                Err(e) => panic!("release: {e:?}"),
                            },
                            Finish::Failed(Error::Disconnected) => return,
                            f => panic!("round {round}: {f:?}"),
                        }
                    }
                });
            }
            go.wait();
            std::thread::sleep(Duration::from_micros(200 * (round % 5)));
            a.disconnect().unwrap();
        });
        assert_eq!(b.available_permits(), 2, "round {round}");
        assert_eq!(b.inspect().unwrap().waiters.len(), 0, "round {round}");
    }
    b.release(1).unwrap();
    assert_eq!(b.available_permits(), 3);
}

/// `acquire_blocking_interruptible` (Python's named blocking waits): a
/// granted wait is counted as the handle's (its `disconnect` gives it
/// back), an interrupted one leaves the queue with its partial grant
/// handed on (`Ok(false)`), a blocked one is failed at once by the
/// handle's `disconnect` (`Disconnected`). Conservation: available + held
/// + partial grants == total.
#[test]
fn acquire_blocking_interruptible_is_counted_interrupted_and_disconnected() {
    let (_name, a, b) = counted_and_other("interruptible", 3);
    let conserved = || {
        let i = b.inspect().unwrap();
        let held: usize = i.holders.iter().map(|h| h.permits).sum();
        let partial: usize = i.waiters.iter().map(|w| w.granted).sum();
        assert_eq!(i.available + held + partial, 3, "{i:?}");
        (i.available, held, partial)
    };
    let tick = Duration::from_millis(1);
    // Uncontended: granted, counted as `a`'s.
    assert_eq!(
        a.acquire_blocking_interruptible(1, None, tick, || false),
        Ok(true)
    );
    b.try_acquire(1).unwrap();
    assert_eq!(conserved(), (1, 2, 0));
    // Queued for 2 (1 granted at once), then interrupted: the 1 handed back.
    let mut polls = 0;
    let r = a.acquire_blocking_interruptible(2, None, tick, || {
        polls += 1;
        polls > 2
    });
    assert_eq!(r, Ok(false));
    assert_eq!(conserved(), (1, 2, 0));
    // Queued again, blocked: `a`'s disconnect fails it at once and gives
    // back the 1 `a` holds (`b` keeps its own).
    std::thread::scope(|scope| {
        let blocked = scope.spawn(|| a.acquire_blocking_interruptible(2, None, tick, || false));
        until(|| b.inspect().unwrap().waiters.len() == 1);
        assert_eq!(conserved(), (0, 2, 1));
        a.disconnect().unwrap();
        assert_eq!(b.inspect().unwrap().waiters.len(), 0);
        assert_eq!(blocked.join().unwrap(), Err(Error::Disconnected));
    });
    assert_eq!(conserved(), (2, 1, 0));
    assert_eq!(
        a.acquire_blocking_interruptible(1, None, tick, || false),
        Err(Error::Disconnected)
    );
    // The other backends have no such wait.
    let local = Semaphore::local(1).unwrap();
    assert_eq!(
        local.acquire_blocking_interruptible(1, None, tick, || false),
        Err(Error::Unsupported)
    );
    b.release(1).unwrap();
    assert_eq!(conserved(), (3, 0, 0));
}

/// A small xorshift for the stress test's choices (seeded per round and
/// thread: a failing round can be replayed).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// One thread's random acquires and releases through `sem` (try, timed,
/// interruptible, raw queued then collected or cancelled), counting what it
/// holds, until an acquire meets `Disconnected` (`stop`: or until `stop`
/// is set, for a handle nobody disconnects). Returns what it still holds,
/// and panics on an outcome the seam does not allow.
fn random_ops(sem: &Semaphore, seed: u64, stop: &std::sync::atomic::AtomicBool) -> usize {
    let mut rng = Rng(seed | 1);
    let mut held = 0usize;
    let tick = Duration::from_micros(100);
    while !stop.load(Ordering::SeqCst) {
        let k = 1 + rng.below(3) as usize;
        let got: Result<bool, Error> = match rng.below(5) {
            0 => sem.try_acquire(k).map(|_| true),
            1 => sem
                .acquire_timeout(k, Duration::from_micros(rng.below(300)))
                .map(|_| true),
            2 => {
                let mut polls = rng.below(4);
                sem.acquire_blocking_interruptible(k, None, tick, || {
                    polls = polls.saturating_sub(1);
                    polls == 0
                })
            }
            3 => {
                let w = pin!(Waiter::new());
                let sig = Signal::default();
                // Waiting for more than the others can give back would
                // wait for ever (a handle nobody disconnects).
                let cancel = rng.below(2) == 0 || held + k > sem.total_permits().unwrap();
                // SAFETY: fresh; `sig` outlives finish_raw below.
                match unsafe { sem.acquire_raw(w.as_ref(), k, signal, ctx(&sig)) } {
                    Ok(RawAcquire::Ready) => Ok(true),
                    Ok(RawAcquire::Pending) => {
                        if !cancel {
                            sig.wait();
                        }
                        // SAFETY: queued on `sem`.
                        match unsafe { sem.finish_raw(w.as_ref()) } {
                            Finish::Granted => Ok(true),
                            Finish::Cancelled { .. } => Ok(false),
                            Finish::Failed(e) => Err(e),
                            f => panic!("raw request: {f:?}"),
                        }
                    }
                    Err(e) => Err(e),
                }
            }
            _ => {
                let r = rng.below(held as u64 + 1) as usize;
                match sem.release(r) {
                    Ok(()) => held -= r,
                    Err(Error::Disconnected) => return held,
                    Err(e) => panic!("release({r}) of {held} held: {e:?}"),
                }
                continue;
            }
        };
        match got {
            Ok(true) => held += k,
            Ok(false) | Err(Error::NoPermits | Error::TimedOut) => {}
            Err(Error::Disconnected) => return held,
            Err(e) => panic!("acquire({k}): {e:?}"),
        }
    }
    held
}

/// Randomized: three threads acquire and release through a counted handle
/// `a` in every way the seam offers (try, timed, interruptible, raw queued
/// then collected or cancelled) while one thread does the same through
/// another counted handle `b` of the process, and `a` is disconnected at a
/// random moment. Afterwards `a`'s threads hold nothing (what they held
/// went back with `a`, their later releases are refused), `b`'s holding
/// is the process's, and once `b` releases it every permit is back:
/// available + held + partial grants == total at the end of every round.
#[test]
fn random_ops_racing_disconnect_conserve_every_permit() {
    const TOTAL: usize = 5;
    let name = Name::new("disconnect-random");
    let b = counted(&name, TOTAL);
    for round in 0..1_000u64 {
        let a = counted(&name, TOTAL);
        let stop_b = std::sync::atomic::AtomicBool::new(false);
        let never = std::sync::atomic::AtomicBool::new(false);
        let b_held = std::thread::scope(|scope| {
            let b_thread = scope.spawn(|| random_ops(&b, round * 7919 + 1, &stop_b));
            let a_threads: Vec<_> = (0..3u64)
                .map(|t| {
                    let (a, never) = (&a, &never);
                    scope.spawn(move || random_ops(a, round * 104_729 + t * 31 + 3, never))
                })
                .collect();
            std::thread::sleep(Duration::from_micros(100 + 500 * (round % 7)));
            a.disconnect().unwrap();
            for t in a_threads {
                let left = t.join().unwrap();
                // What it held went back with `a`: a release is refused.
                if left > 0 {
                    assert_eq!(a.release(left), Err(Error::Disconnected));
                }
            }
            stop_b.store(true, Ordering::SeqCst);
            b_thread.join().unwrap()
        });
        let i = b.inspect().unwrap();
        let held: usize = i.holders.iter().map(|h| h.permits).sum();
        assert_eq!(
            (i.available, held, i.waiters.len()),
            (TOTAL - b_held, b_held, 0),
            "round {round}: {i:?}"
        );
        if b_held > 0 {
            b.release(b_held).unwrap();
        }
        assert_eq!(b.available_permits(), TOTAL, "round {round}");
    }
}
