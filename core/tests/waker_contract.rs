//! The raw waker contract (crate docs, "The waker contract"), tested through the
//! public raw API on real threads. Also run under Miri (`scripts/miri.sh`),
//! which checks the waiter lifecycle for use-after-free and data races.

use std::ffi::c_void;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::thread::{self, ThreadId};
use std::time::Duration;
use volt_sem::raw::RawSemaphore;

use volt_sem::{Finish, RawAcquire, ReleaseError, Semaphore, Waiter, WaiterState};

#[derive(Default)]
struct Probe {
    calls: AtomicUsize,
    thread: Mutex<Option<ThreadId>>,
    state_inside: Mutex<Option<WaiterState>>,
    waiter: AtomicPtr<Waiter>, // to read the waiter's state inside the callback
}

unsafe extern "C" fn probe(ctx: *mut c_void) {
    let p = unsafe { &*(ctx as *const Probe) };
    p.calls.fetch_add(1, SeqCst);
    *p.thread.lock().unwrap() = Some(thread::current().id());
    let waiter = p.waiter.load(SeqCst);
    if !waiter.is_null() {
        *p.state_inside.lock().unwrap() = Some(unsafe { &*waiter }.state());
    }
}

fn queue(sem: &Semaphore, w: Pin<&Waiter>, n: usize, p: &Probe) -> RawAcquire {
    p.waiter.store(&*w as *const Waiter as *mut Waiter, SeqCst);
    unsafe { sem.acquire_raw(w, n, probe, p as *const Probe as *mut c_void) }.unwrap()
}

#[test]
fn callback_runs_once_on_the_releasing_thread_after_the_grant() {
    let sem = Arc::new(Semaphore::new(0));
    let w = Box::pin(Waiter::new());
    let p = Probe::default();
    assert_eq!(queue(&sem, w.as_ref(), 2, &p), RawAcquire::Pending);
    let s2 = sem.clone();
    let releaser = thread::spawn(move || {
        s2.release(1).unwrap();
        s2.release(5).unwrap();
        thread::current().id()
    })
    .join()
    .unwrap();
    assert_eq!(p.calls.load(SeqCst), 1);
    assert_eq!(*p.thread.lock().unwrap(), Some(releaser));
    assert_eq!(*p.state_inside.lock().unwrap(), Some(WaiterState::Granted));
    assert_eq!(unsafe { sem.finish_raw(w.as_ref()) }, Finish::Granted);
    assert_eq!(sem.available_permits(), 4);
    assert_eq!(
        unsafe { sem.finish_raw(w.as_ref()) },
        Finish::Idle,
        "outcome is consumed once"
    );
}

#[test]
fn callback_never_runs_for_ready_errors_or_cancelled_waiters() {
    let sem = Semaphore::new(1);
    let w = Box::pin(Waiter::new());
    let p = Probe::default();
    assert_eq!(queue(&sem, w.as_ref(), 1, &p), RawAcquire::Ready);
    assert_eq!(queue(&sem, w.as_ref(), 0, &p), RawAcquire::Ready);
    assert_eq!(queue(&sem, w.as_ref(), 2, &p), RawAcquire::Pending);
    assert_eq!(
        unsafe { sem.finish_raw(w.as_ref()) },
        Finish::Cancelled { returned: 0 }
    );
    sem.release(10).unwrap();
    sem.close();
    let err = unsafe { sem.acquire_raw(w.as_ref(), 100, probe, &p as *const Probe as *mut c_void) };
    assert!(err.is_err());
    assert_eq!(p.calls.load(SeqCst), 0);
}

#[test]
fn close_wakes_with_closed_and_returns_the_partial_grant() {
    let sem = Semaphore::new(1);
    let w = Box::pin(Waiter::new());
    let p = Probe::default();
    assert_eq!(queue(&sem, w.as_ref(), 3, &p), RawAcquire::Pending);
    assert_eq!(sem.available_permits(), 0);
    sem.close();
    assert_eq!(p.calls.load(SeqCst), 1);
    assert_eq!(*p.state_inside.lock().unwrap(), Some(WaiterState::Closed));
    assert_eq!(unsafe { sem.finish_raw(w.as_ref()) }, Finish::Closed);
    assert_eq!(sem.available_permits(), 1);
}

/// The callback runs with no internal lock held: it can use the semaphore.
#[test]
fn callback_may_reenter_the_semaphore() {
    struct Reenter {
        sem: Arc<Semaphore>,
        second: Pin<Box<Waiter>>,
        second_probe: Probe,
        did: AtomicBool,
    }
    unsafe extern "C" fn reenter(ctx: *mut c_void) {
        let r = unsafe { &*(ctx as *const Reenter) };
        assert!(r.sem.try_acquire(1).is_err()); // nothing floats while someone waits
        r.sem.release(1).unwrap(); // hands straight to the queued head (none) or counter
        r.sem.try_acquire(1).unwrap().forget();
        let queued = unsafe {
            r.sem.acquire_raw(
                r.second.as_ref(),
                1,
                probe,
                &r.second_probe as *const Probe as *mut c_void,
            )
        };
        assert_eq!(queued, Ok(RawAcquire::Pending));
        r.did.store(true, SeqCst);
    }
    let sem = Arc::new(Semaphore::new(0));
    let r = Box::new(Reenter {
        sem: sem.clone(),
        second: Box::pin(Waiter::new()),
        second_probe: Probe::default(),
        did: AtomicBool::new(false),
    });
    let first = Box::pin(Waiter::new());
    let ctx = &*r as *const Reenter as *mut c_void;
    assert_eq!(
        unsafe { sem.acquire_raw(first.as_ref(), 1, reenter, ctx) },
        Ok(RawAcquire::Pending)
    );
    sem.release(1).unwrap();
    assert!(r.did.load(SeqCst));
    assert_eq!(unsafe { sem.finish_raw(first.as_ref()) }, Finish::Granted);
    sem.release(1).unwrap(); // first's permit completes the second waiter
    assert_eq!(r.second_probe.calls.load(SeqCst), 1);
    assert_eq!(
        unsafe { sem.finish_raw(r.second.as_ref()) },
        Finish::Granted
    );
    sem.release(1).unwrap();
    assert_eq!(sem.available_permits(), 1);
}

/// Hazard (d): the owner sees the grant decided while the callback is still
/// running on the releasing thread. `finish_raw` must not return before the
/// callback has, so the owner may free the context right after.
#[test]
fn finish_waits_for_an_in_flight_callback() {
    struct Slow {
        entered: AtomicBool,
        done: AtomicBool,
    }
    unsafe extern "C" fn slow(ctx: *mut c_void) {
        let s = unsafe { &*(ctx as *const Slow) };
        s.entered.store(true, SeqCst);
        thread::sleep(Duration::from_millis(20));
        s.done.store(true, SeqCst);
    }
    let sem = Arc::new(Semaphore::new(0));
    let w = Box::pin(Waiter::new());
    let ctx = Box::new(Slow {
        entered: AtomicBool::new(false),
        done: AtomicBool::new(false),
    });
    let ctx_ptr = &*ctx as *const Slow as *mut c_void;
    assert_eq!(
        unsafe { sem.acquire_raw(w.as_ref(), 1, slow, ctx_ptr) },
        Ok(RawAcquire::Pending)
    );
    let s2 = sem.clone();
    let t = thread::spawn(move || s2.release(1).unwrap());
    while !ctx.entered.load(SeqCst) {
        thread::yield_now();
    }
    assert_eq!(w.state(), WaiterState::Granted);
    assert_eq!(unsafe { sem.finish_raw(w.as_ref()) }, Finish::Granted);
    assert!(
        ctx.done.load(SeqCst),
        "finish_raw returned while the callback was running"
    );
    drop(ctx); // allowed now
    drop(w);
    t.join().unwrap();
}

#[test]
fn a_waiter_can_be_reused_after_finish() {
    let sem = Semaphore::new(0);
    let w = Box::pin(Waiter::new());
    let p = Probe::default();
    for round in 1..=3 {
        assert_eq!(queue(&sem, w.as_ref(), round, &p), RawAcquire::Pending);
        assert_eq!(w.requested(), round);
        assert!(w.belongs_to(&sem));
        sem.release(round).unwrap();
        assert_eq!(unsafe { sem.finish_raw(w.as_ref()) }, Finish::Granted);
    }
    assert_eq!(p.calls.load(SeqCst), 3);
    assert!(!w.belongs_to(&Semaphore::new(0)));
}

/// A callback that releases permits runs the next waiter's callback nested in
/// its own, on the same thread. That inner callback may finish the *outer*
/// waiter: it gets the outcome at once instead of waiting for a callback that
/// cannot return before it does.
#[test]
fn finishing_an_outer_waiter_from_a_nested_callback_does_not_hang() {
    struct Pair {
        sem: Semaphore,
        outer: Pin<Box<Waiter>>,
        inner: Pin<Box<Waiter>>,
        outer_seen_from_inner: Mutex<Option<Finish>>,
    }
    unsafe extern "C" fn outer_cb(ctx: *mut c_void) {
        let p = unsafe { &*(ctx as *const Pair) };
        p.sem.release(1).unwrap(); // completes `inner`: its callback runs nested here
    }
    unsafe extern "C" fn inner_cb(ctx: *mut c_void) {
        let p = unsafe { &*(ctx as *const Pair) };
        let outcome = unsafe { p.sem.finish_raw(p.outer.as_ref()) };
        *p.outer_seen_from_inner.lock().unwrap() = Some(outcome);
    }
    let (tx, rx) = std::sync::mpsc::channel();
    thread::spawn(move || {
        let pair = Box::new(Pair {
            sem: Semaphore::new(0),
            outer: Box::pin(Waiter::new()),
            inner: Box::pin(Waiter::new()),
            outer_seen_from_inner: Mutex::new(None),
        });
        let ctx = &*pair as *const Pair as *mut c_void;
        unsafe {
            assert_eq!(
                pair.sem.acquire_raw(pair.outer.as_ref(), 1, outer_cb, ctx),
                Ok(RawAcquire::Pending)
            );
            assert_eq!(
                pair.sem.acquire_raw(pair.inner.as_ref(), 1, inner_cb, ctx),
                Ok(RawAcquire::Pending)
            );
        }
        pair.sem.release(1).unwrap();
        assert!(!pair.outer.is_busy() && !pair.inner.is_busy());
        let seen = pair.outer_seen_from_inner.lock().unwrap().take();
        let outer_after = unsafe { pair.sem.finish_raw(pair.outer.as_ref()) };
        let inner_after = unsafe { pair.sem.finish_raw(pair.inner.as_ref()) };
        tx.send((seen, outer_after, inner_after)).unwrap();
    });
    let (seen, outer_after, inner_after) = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("nested finish_raw hung");
    assert_eq!(seen, Some(Finish::Granted));
    assert_eq!(outer_after, Finish::Idle, "consumed from inside");
    assert_eq!(inner_after, Finish::Granted);
}

/// A chain of waiters whose callbacks each collect their grant and release it
/// to the next one. Callbacks never nest (the per-thread trampoline), so a
/// 100,000-long chain runs on a 128 KiB thread stack (musl's default). With
/// nested delivery this overflowed at a few hundred waiters.
#[test]
fn a_long_chain_of_releases_inside_callbacks_uses_bounded_stack() {
    const CHAIN: usize = if cfg!(miri) { 200 } else { 100_000 };
    struct Link {
        sem: Arc<Semaphore>,
        waiter: Waiter,
        calls: AtomicUsize,
    }
    unsafe extern "C" fn pass_on(ctx: *mut c_void) {
        let link = unsafe { &*(ctx as *const Link) };
        link.calls.fetch_add(1, SeqCst);
        let own = unsafe { Pin::new_unchecked(&link.waiter) };
        assert_eq!(unsafe { link.sem.finish_raw(own) }, Finish::Granted);
        link.sem.release(1).unwrap();
    }
    let sem = Arc::new(Semaphore::new(0));
    let links: Vec<Link> = (0..CHAIN)
        .map(|_| Link {
            sem: sem.clone(),
            waiter: Waiter::new(),
            calls: AtomicUsize::new(0),
        })
        .collect();
    for link in &links {
        let w = unsafe { Pin::new_unchecked(&link.waiter) };
        let ctx = link as *const Link as *mut c_void;
        assert_eq!(
            unsafe { sem.acquire_raw(w, 1, pass_on, ctx) },
            Ok(RawAcquire::Pending)
        );
    }
    let s2 = sem.clone();
    thread::Builder::new()
        .stack_size(128 * 1024)
        .spawn(move || s2.release(1).unwrap())
        .unwrap()
        .join()
        .expect("the releasing thread died");
    assert!(links.iter().all(|l| l.calls.load(SeqCst) == 1));
    assert!(links.iter().all(|l| !l.waiter.is_busy()));
    assert_eq!(
        sem.available_permits(),
        1,
        "the last link's permit is banked"
    );
}

/// One release completes A and B; A's callback finishes B, whose callback was
/// still to run on this very thread. That used to spin for ever; now A gets
/// B's outcome at once and B's callback never runs.
#[test]
fn a_callback_may_finish_a_sibling_completed_by_the_same_release() {
    struct Pair {
        sem: Semaphore,
        a: Waiter,
        b: Waiter,
        b_probe: Probe,
        seen: Mutex<Option<Finish>>,
    }
    unsafe extern "C" fn a_cb(ctx: *mut c_void) {
        let p = unsafe { &*(ctx as *const Pair) };
        let b = unsafe { Pin::new_unchecked(&p.b) };
        *p.seen.lock().unwrap() = Some(unsafe { p.sem.finish_raw(b) });
    }
    let (tx, rx) = std::sync::mpsc::channel();
    thread::spawn(move || {
        let pair = Box::new(Pair {
            sem: Semaphore::new(0),
            a: Waiter::new(),
            b: Waiter::new(),
            b_probe: Probe::default(),
            seen: Mutex::new(None),
        });
        let (a, b) = unsafe { (Pin::new_unchecked(&pair.a), Pin::new_unchecked(&pair.b)) };
        let ctx = &*pair as *const Pair as *mut c_void;
        let b_ctx = &pair.b_probe as *const Probe as *mut c_void;
        unsafe {
            assert_eq!(
                pair.sem.acquire_raw(a, 1, a_cb, ctx),
                Ok(RawAcquire::Pending)
            );
            assert_eq!(
                pair.sem.acquire_raw(b, 2, probe, b_ctx),
                Ok(RawAcquire::Pending)
            );
        }
        pair.sem.release(3).unwrap();
        let seen = pair.seen.lock().unwrap().take();
        let b_calls = pair.b_probe.calls.load(SeqCst);
        let a_after = unsafe { pair.sem.finish_raw(a) };
        let b_after = unsafe { pair.sem.finish_raw(b) };
        assert!(!pair.a.is_busy() && !pair.b.is_busy());
        tx.send((seen, b_calls, a_after, b_after)).unwrap();
    });
    let (seen, b_calls, a_after, b_after) = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("finishing a sibling from a callback hung");
    assert_eq!(seen, Some(Finish::Granted), "A collected B's grant");
    assert_eq!(b_calls, 0, "B's callback never runs once collected");
    assert_eq!(a_after, Finish::Granted);
    assert_eq!(b_after, Finish::Idle);
}

/// A waiter whose last outcome was Granted, re-queued: if that request is
/// `Ready` (or fails), the old outcome must not be reported again, or a caller
/// trusting `finish_raw` would release permits it does not hold.
#[test]
fn requeueing_a_granted_waiter_forgets_the_old_outcome() {
    let sem = Semaphore::new(0);
    let w = Box::pin(Waiter::new());
    let p = Probe::default();
    assert_eq!(queue(&sem, w.as_ref(), 1, &p), RawAcquire::Pending);
    sem.release(1).unwrap();
    assert_eq!(w.state(), WaiterState::Granted); // the caller owns 1 permit
                                                 // Re-queue without collecting: the caller keeps that permit and releases it.
    sem.release(1).unwrap();
    assert_eq!(queue(&sem, w.as_ref(), 1, &p), RawAcquire::Ready);
    assert_eq!(w.state(), WaiterState::Idle);
    assert_eq!(unsafe { sem.finish_raw(w.as_ref()) }, Finish::Idle);
    // The same after an error.
    sem.close();
    let w2 = Box::pin(Waiter::new());
    let sem2 = Semaphore::new(0);
    assert_eq!(queue(&sem2, w2.as_ref(), 1, &p), RawAcquire::Pending);
    sem2.close();
    assert_eq!(w2.state(), WaiterState::Closed);
    let again =
        unsafe { sem2.acquire_raw(w2.as_ref(), 1, probe, &p as *const Probe as *mut c_void) };
    assert!(again.is_err());
    assert_eq!(w2.state(), WaiterState::Idle);
    assert_eq!(unsafe { sem2.finish_raw(w2.as_ref()) }, Finish::Idle);
}

/// One release of `BATCH + 18` permits to 33 queued waiters of weight 1: the
/// first wake batch (32) is handed over, then, between two batches, the first
/// callback cancels the last waiter (the queue empties) and fills the counter
/// to `MAX_PERMITS - room`. The 18 permits still in transit must then go to
/// the counter if they fit, or stay with the caller. Returns the release's
/// outcome and the permits available after it; checks that every waiter of the
/// first batch got its permit and the cancelled one nothing.
fn release_across_a_cancel_that_fills_the_counter(
    room: usize,
) -> (Result<(), ReleaseError>, usize) {
    const BATCH: usize = 32;
    struct Ctx {
        sem: Arc<Semaphore>,
        last: Pin<Box<Waiter>>,
        fill: usize,
        filled: AtomicBool,
    }
    unsafe extern "C" fn first_cb(ctx: *mut c_void) {
        let c = unsafe { &*(ctx as *const Ctx) };
        if c.filled.swap(true, SeqCst) {
            return;
        }
        assert_eq!(
            unsafe { c.sem.finish_raw(c.last.as_ref()) },
            Finish::Cancelled { returned: 0 }
        );
        c.sem.release(c.fill).unwrap();
    }
    let sem = Arc::new(Semaphore::new(0));
    let ctx = Box::new(Ctx {
        sem: sem.clone(),
        last: Box::pin(Waiter::new()),
        fill: Semaphore::MAX_PERMITS - room,
        filled: AtomicBool::new(false),
    });
    let ctx_ptr = &*ctx as *const Ctx as *mut c_void;
    let first: Vec<Pin<Box<Waiter>>> = (0..BATCH).map(|_| Box::pin(Waiter::new())).collect();
    for w in &first {
        assert_eq!(
            unsafe { sem.acquire_raw(w.as_ref(), 1, first_cb, ctx_ptr) },
            Ok(RawAcquire::Pending)
        );
    }
    let p = Probe::default();
    assert_eq!(queue(&sem, ctx.last.as_ref(), 1, &p), RawAcquire::Pending);
    let result = sem.release(BATCH + 18);
    for w in &first {
        assert_eq!(unsafe { sem.finish_raw(w.as_ref()) }, Finish::Granted);
    }
    assert_eq!(p.calls.load(SeqCst), 0);
    (result, sem.available_permits())
}

/// `release` reports how many permits it did not release when the queue
/// empties between two wake batches and the counter fills up: the permits
/// already handed to waiters stay given, the rest stay with the caller.
#[test]
fn release_reports_what_it_could_not_release_after_a_partial_hand_off() {
    let (result, available) = release_across_a_cancel_that_fills_the_counter(0);
    let err = result.expect_err("the counter is full");
    assert_eq!(err.unreleased(), 18, "32 went to the first batch");
    assert_eq!(available, Semaphore::MAX_PERMITS);
}

/// `Waiter::in_own_callback` is true inside the waiter's callback only.
#[test]
fn in_own_callback_is_true_only_inside_the_callback() {
    struct Seen {
        waiter: Waiter,
        inside: AtomicBool,
    }
    unsafe extern "C" fn look(ctx: *mut c_void) {
        let s = unsafe { &*(ctx as *const Seen) };
        s.inside.store(s.waiter.in_own_callback(), SeqCst);
    }
    let sem = Semaphore::new(0);
    let seen = Box::new(Seen {
        waiter: Waiter::new(),
        inside: AtomicBool::new(false),
    });
    let w = unsafe { Pin::new_unchecked(&seen.waiter) };
    let ctx = &*seen as *const Seen as *mut c_void;
    assert_eq!(
        unsafe { sem.acquire_raw(w, 1, look, ctx) },
        Ok(RawAcquire::Pending)
    );
    assert!(!seen.waiter.in_own_callback());
    sem.release(1).unwrap();
    assert!(seen.inside.load(SeqCst), "true inside");
    assert!(!seen.waiter.in_own_callback(), "false after");
    assert_eq!(unsafe { sem.finish_raw(w) }, Finish::Granted);
}

/// From inside one callback, finishing a waiter whose callback is running on
/// another thread waits for that callback (it is not this thread's to skip).
#[test]
fn finish_from_a_callback_waits_for_a_callback_on_another_thread() {
    struct Two {
        sem_a: Semaphore,
        sem_b: Semaphore,
        a: Waiter,
        b: Waiter,
        b_entered: AtomicBool,
        b_done: AtomicBool,
        seen: Mutex<Option<(Finish, bool)>>,
    }
    unsafe extern "C" fn slow_b(ctx: *mut c_void) {
        let t = unsafe { &*(ctx as *const Two) };
        t.b_entered.store(true, SeqCst);
        thread::sleep(Duration::from_millis(50));
        t.b_done.store(true, SeqCst);
    }
    unsafe extern "C" fn a_finishes_b(ctx: *mut c_void) {
        let t = unsafe { &*(ctx as *const Two) };
        while !t.b_entered.load(SeqCst) {
            thread::yield_now();
        }
        let b = unsafe { Pin::new_unchecked(&t.b) };
        let f = unsafe { t.sem_b.finish_raw(b) };
        *t.seen.lock().unwrap() = Some((f, t.b_done.load(SeqCst)));
    }
    let two = Arc::new(Two {
        sem_a: Semaphore::new(0),
        sem_b: Semaphore::new(0),
        a: Waiter::new(),
        b: Waiter::new(),
        b_entered: AtomicBool::new(false),
        b_done: AtomicBool::new(false),
        seen: Mutex::new(None),
    });
    let ctx = Arc::as_ptr(&two) as *mut c_void;
    unsafe {
        let a = Pin::new_unchecked(&two.a);
        let b = Pin::new_unchecked(&two.b);
        assert_eq!(
            two.sem_a.acquire_raw(a, 1, a_finishes_b, ctx),
            Ok(RawAcquire::Pending)
        );
        assert_eq!(
            two.sem_b.acquire_raw(b, 1, slow_b, ctx),
            Ok(RawAcquire::Pending)
        );
    }
    let t2 = two.clone();
    let releaser_b = thread::spawn(move || t2.sem_b.release(1).unwrap());
    two.sem_a.release(1).unwrap(); // runs a_finishes_b here, while slow_b runs there
    releaser_b.join().unwrap();
    let seen = two.seen.lock().unwrap().take();
    assert_eq!(
        seen,
        Some((Finish::Granted, true)),
        "finish returned before b's callback"
    );
    assert_eq!(
        unsafe { two.sem_a.finish_raw(Pin::new_unchecked(&two.a)) },
        Finish::Granted
    );
}

/// A partly granted waiter cancelled in front of more waiters than one wake
/// batch holds: its grant goes on to all of them, in several batches.
#[test]
fn a_cancelled_partial_grant_serves_more_than_one_wake_batch() {
    const BEHIND: usize = 40; // more than the wake batch (32)
    let sem = Semaphore::new(0);
    let head = Box::pin(Waiter::new());
    let p = Probe::default();
    assert_eq!(
        queue(&sem, head.as_ref(), BEHIND + 1, &p),
        RawAcquire::Pending
    );
    let behind: Vec<Pin<Box<Waiter>>> = (0..BEHIND).map(|_| Box::pin(Waiter::new())).collect();
    let probes: Vec<Probe> = (0..BEHIND).map(|_| Probe::default()).collect();
    for (w, pr) in behind.iter().zip(&probes) {
        assert_eq!(queue(&sem, w.as_ref(), 1, pr), RawAcquire::Pending);
    }
    sem.release(BEHIND).unwrap(); // the head holds BEHIND of BEHIND + 1
    assert_eq!(
        unsafe { sem.finish_raw(head.as_ref()) },
        Finish::Cancelled { returned: BEHIND }
    );
    for (w, pr) in behind.iter().zip(&probes) {
        assert_eq!(pr.calls.load(SeqCst), 1);
        assert_eq!(unsafe { sem.finish_raw(w.as_ref()) }, Finish::Granted);
    }
    assert_eq!(sem.available_permits(), 0);
}

/// The boundary of the same overflow check: filling the counter to exactly
/// `MAX_PERMITS` is allowed.
#[test]
fn a_release_may_fill_the_counter_to_exactly_max_after_a_partial_hand_off() {
    let (result, available) = release_across_a_cancel_that_fills_the_counter(18);
    result.expect("exactly MAX_PERMITS fits");
    assert_eq!(available, Semaphore::MAX_PERMITS);
}

/// A raw callback that waits, up to a bound, for a flag.
struct WaitsForFlag {
    flag: Arc<AtomicBool>,
    saw_it: AtomicBool,
}

unsafe extern "C" fn wait_for_flag(ctx: *mut c_void) {
    let w = unsafe { &*(ctx as *const WaitsForFlag) };
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while std::time::Instant::now() < deadline {
        if w.flag.load(SeqCst) {
            w.saw_it.store(true, SeqCst);
            return;
        }
        thread::yield_now();
    }
}

/// A thread blocked in `acquire_blocking` goes on as soon as its grant is
/// stored: it does not wait for the releasing thread to deliver the other
/// wakes of the same release first (a slow callback of a raw waiter granted
/// just before it). Before issue 30 the blocked thread was itself a callback
/// waiter, delivered after that callback returned: here the callback waited
/// for it in vain (for its whole 10 s bound).
#[test]
fn a_blocked_thread_does_not_wait_for_another_waiters_callback() {
    let sem = Arc::new(Semaphore::new(0));
    let flag = Arc::new(AtomicBool::new(false));
    let slow = WaitsForFlag {
        flag: flag.clone(),
        saw_it: AtomicBool::new(false),
    };
    let w = std::pin::pin!(Waiter::new());
    // SAFETY: pinned here, finished below; `slow` outlives the callback.
    let r = unsafe {
        sem.acquire_raw(
            w.as_ref(),
            1,
            wait_for_flag,
            &slow as *const WaitsForFlag as *mut c_void,
        )
    };
    assert_eq!(r, Ok(RawAcquire::Pending));
    let blocked = {
        let (sem, flag) = (sem.clone(), flag.clone());
        thread::spawn(move || {
            let p = sem.acquire_blocking(1).unwrap();
            flag.store(true, SeqCst);
            drop(p);
        })
    };
    // Both queued (the raw waiter first), then one release grants both: its
    // thread runs the raw waiter's callback, which waits for the blocked one.
    // (`stats`, not `inspect`: Miri cannot ask for the host name.)
    while sem.stats().queued < 2 {
        thread::yield_now();
    }
    sem.release(2).unwrap();
    blocked.join().unwrap();
    assert!(
        slow.saw_it.load(SeqCst),
        "the blocked thread waited for the other waiter's callback to return"
    );
    // SAFETY: queued on `sem`; its callback has returned (release returned).
    assert_eq!(unsafe { sem.finish_raw(w.as_ref()) }, Finish::Granted);
    sem.release(1).unwrap();
    assert_eq!(sem.available_permits(), 2);
}

/// `release_claiming`: the raw waiters served that the claim takes are not
/// called back (their grant is final, `Granted`, for their owner's
/// `finish_raw`); the others are, as by `release`. FIFO order, partial grants
/// (a partly served head is not offered to the claim until it is complete),
/// the surplus banked and the wait statistics are `release`'s.
#[test]
fn release_claiming_grants_claimed_waiters_without_their_callbacks() {
    let sem = Semaphore::new(0);
    sem.enable_stats();
    let (w1, w2, w3) = (
        Box::pin(Waiter::new()),
        Box::pin(Waiter::new()),
        Box::pin(Waiter::new()),
    );
    let (p1, p2, p3) = (Probe::default(), Probe::default(), Probe::default());
    assert_eq!(queue(&sem, w1.as_ref(), 2, &p1), RawAcquire::Pending);
    assert_eq!(queue(&sem, w2.as_ref(), 1, &p2), RawAcquire::Pending);
    assert_eq!(queue(&sem, w3.as_ref(), 2, &p3), RawAcquire::Pending);
    let ctx = |p: &Probe| p as *const Probe as *mut c_void;
    let mut offered = Vec::new();
    // (The `wake` passed is `probe`; not compared: a function's address
    // may differ from one use to the next, and does under Miri.)
    {
        let mut claim = |_: volt_sem::WakeFn, c: *mut c_void| {
            offered.push(c);
            c != ctx(&p2) // w2 is left to its callback
        };
        // w1 (2) and w2 (1) served; w3 waits.
        unsafe { sem.release_claiming(3, &mut claim) }.unwrap();
        // w3 partly served (1 of 2): not offered yet.
        unsafe { sem.release_claiming(1, &mut claim) }.unwrap();
        assert_eq!(w3.state(), WaiterState::Waiting);
        // w3 complete, 1 banked.
        unsafe { sem.release_claiming(2, &mut claim) }.unwrap();
        // No waiter: lock-free, nothing offered.
        unsafe { sem.release_claiming(1, &mut claim) }.unwrap();
    }
    assert_eq!(offered, [ctx(&p1), ctx(&p2), ctx(&p3)]);
    assert_eq!(
        [&p1, &p2, &p3].map(|p| p.calls.load(SeqCst)),
        [0, 1, 0],
        "only the waiter not claimed is called back"
    );
    assert_eq!(*p2.state_inside.lock().unwrap(), Some(WaiterState::Granted));
    assert_eq!(w1.state(), WaiterState::Granted);
    assert_eq!(w3.state(), WaiterState::Granted);
    for w in [&w1, &w2, &w3] {
        assert_eq!(unsafe { sem.finish_raw(w.as_ref()) }, Finish::Granted);
        assert_eq!(unsafe { sem.finish_raw(w.as_ref()) }, Finish::Idle);
    }
    assert_eq!(sem.available_permits(), 2);
    let stats = sem.stats();
    assert_eq!((stats.grants, stats.permits_granted), (3, 5));
    assert_eq!(stats.wait.count(), 3, "every wait recorded, claimed or not");
    assert_eq!(stats.queued, 0);
}

/// A waiter cancelled before `release_claiming` is not offered to the claim;
/// the permit goes to the next waiter, which the claim takes.
#[test]
fn release_claiming_offers_only_waiters_still_queued() {
    let sem = Semaphore::new(0);
    let (w1, w2) = (Box::pin(Waiter::new()), Box::pin(Waiter::new()));
    let (p1, p2) = (Probe::default(), Probe::default());
    assert_eq!(queue(&sem, w1.as_ref(), 1, &p1), RawAcquire::Pending);
    assert_eq!(queue(&sem, w2.as_ref(), 1, &p2), RawAcquire::Pending);
    assert_eq!(
        unsafe { sem.finish_raw(w1.as_ref()) },
        Finish::Cancelled { returned: 0 }
    );
    let mut offered = 0;
    unsafe {
        sem.release_claiming(1, &mut |_, _| {
            offered += 1;
            true
        })
    }
    .unwrap();
    assert_eq!(offered, 1);
    assert_eq!(unsafe { sem.finish_raw(w2.as_ref()) }, Finish::Granted);
    assert_eq!(p1.calls.load(SeqCst) + p2.calls.load(SeqCst), 0);
    assert_eq!(sem.available_permits(), 0);
}
