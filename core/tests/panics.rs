//! User code that panics inside the semaphore's wake path: a `Waker` whose
//! `wake` panics, a `Waker` whose `clone` re-enters the semaphore. Permits are
//! never lost and nothing hangs.

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};
use std::thread;
use std::time::Duration;

use volt_sem::Semaphore;

/// A waker that panics the first time it is woken (by reference or by value).
fn panicking_waker(armed: &'static AtomicBool) -> Waker {
    const VTABLE: RawWakerVTable = RawWakerVTable::new(clone, wake, wake_by_ref, drop);
    unsafe fn clone(p: *const ()) -> RawWaker {
        RawWaker::new(p, &VTABLE)
    }
    unsafe fn wake(p: *const ()) {
        unsafe { wake_by_ref(p) }
    }
    unsafe fn wake_by_ref(p: *const ()) {
        let armed = unsafe { &*(p as *const AtomicBool) };
        if armed.swap(false, SeqCst) {
            panic!("waker panicked");
        }
    }
    unsafe fn drop(_: *const ()) {}
    unsafe {
        Waker::from_raw(RawWaker::new(
            armed as *const AtomicBool as *const (),
            &VTABLE,
        ))
    }
}

/// 40 queued `acquire(1)`, one `release(40)` that needs two wake batches, and
/// the first waker panics: the panic reaches the releaser, but only after every
/// permit reached its waiter; none is lost, no waiter is left stuck.
#[test]
fn a_panicking_waker_loses_no_permit() {
    static ARMED: AtomicBool = AtomicBool::new(true);
    let sem = Semaphore::new(0);
    let waker = panicking_waker(&ARMED);
    let mut cx = Context::from_waker(&waker);
    let mut futs: Vec<_> = (0..40).map(|_| Box::pin(sem.acquire(1))).collect();
    for f in &mut futs {
        assert!(f.as_mut().poll(&mut cx).is_pending());
    }
    let released = catch_unwind(AssertUnwindSafe(|| sem.release(40)));
    assert!(released.is_err(), "the waker's panic is re-raised");
    let mut granted = 0;
    let mut permits = Vec::new();
    for f in &mut futs {
        if let Poll::Ready(p) = f.as_mut().poll(&mut cx) {
            permits.push(p.unwrap());
            granted += 1;
        }
    }
    assert_eq!(granted, 40, "every waiter got its permit");
    assert_eq!(sem.available_permits(), 0);
    drop(permits);
    drop(futs);
    assert_eq!(sem.available_permits(), 40, "conservation");
}

/// The same for `close`: every waiter is woken with Closed and every partial
/// grant banked before the panic is re-raised.
#[test]
fn a_panicking_waker_does_not_stop_close() {
    static ARMED: AtomicBool = AtomicBool::new(true);
    let sem = Semaphore::new(5);
    let waker = panicking_waker(&ARMED);
    let mut cx = Context::from_waker(&waker);
    let mut futs: Vec<_> = (0..40).map(|_| Box::pin(sem.acquire(2))).collect();
    // The first two complete at once (4 permits); the third holds 1 of 2.
    let mut ready = Vec::new();
    for f in &mut futs {
        if let Poll::Ready(p) = f.as_mut().poll(&mut cx) {
            ready.push(p.unwrap());
        }
    }
    assert_eq!(ready.len(), 2);
    assert!(catch_unwind(AssertUnwindSafe(|| sem.close())).is_err());
    for f in futs.iter_mut().skip(2) {
        assert!(matches!(f.as_mut().poll(&mut cx), Poll::Ready(Err(_))));
    }
    assert_eq!(sem.available_permits(), 1, "the partial grant came back");
    drop(ready);
    assert_eq!(sem.available_permits(), 5);
}

/// A waker whose `clone` calls `release` on the same semaphore. A future polled
/// again with a new waker must not clone it under the queue lock (it would
/// deadlock on it).
#[test]
fn a_waker_clone_may_reenter_the_semaphore() {
    struct Reentrant {
        sem: Arc<Semaphore>,
        clones: AtomicUsize,
    }
    const VTABLE: RawWakerVTable = RawWakerVTable::new(clone, noop, noop, noop);
    unsafe fn clone(p: *const ()) -> RawWaker {
        let r = unsafe { &*(p as *const Reentrant) };
        if r.clones.fetch_add(1, SeqCst) == 0 {
            // The clone made when the future is polled with this waker: queue
            // and cancel a request, which takes the semaphore's queue lock.
            let mut fut = Box::pin(r.sem.acquire(1));
            let _ = fut.as_mut().poll(&mut Context::from_waker(Waker::noop()));
        }
        RawWaker::new(p, &VTABLE)
    }
    unsafe fn noop(_: *const ()) {}
    let (tx, rx) = std::sync::mpsc::channel();
    thread::spawn(move || {
        let sem = Arc::new(Semaphore::new(0));
        let r = Box::new(Reentrant {
            sem: sem.clone(),
            clones: AtomicUsize::new(0),
        });
        // The waker borrows `r`, which outlives it and every clone of it.
        let waker = unsafe {
            Waker::from_raw(RawWaker::new(&*r as *const Reentrant as *const (), &VTABLE))
        };
        let mut fut = Box::pin(sem.acquire(2));
        // First poll with a noop waker, then with ours: the second poll replaces
        // the stored waker (a clone of ours, outside the lock).
        assert!(fut
            .as_mut()
            .poll(&mut Context::from_waker(Waker::noop()))
            .is_pending());
        assert!(fut
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_pending());
        assert!(fut
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_pending());
        sem.release(2).unwrap();
        let permit = match fut.as_mut().poll(&mut Context::from_waker(&waker)) {
            Poll::Ready(p) => p.unwrap(),
            Poll::Pending => panic!("granted future still pending"),
        };
        drop(permit);
        drop(fut);
        drop(waker);
        drop(r);
        tx.send(sem.available_permits()).unwrap();
    });
    let available = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("a waker's clone ran under the queue lock and deadlocked");
    assert_eq!(available, 2);
}

/// A future polled again with a different waker: the grant wakes the new one.
#[test]
fn a_repoll_with_a_new_waker_is_the_one_woken() {
    static FIRST: AtomicBool = AtomicBool::new(false);
    static SECOND: AtomicBool = AtomicBool::new(false);
    fn flag_waker(flag: &'static AtomicBool) -> Waker {
        const VTABLE: RawWakerVTable = RawWakerVTable::new(clone, wake, wake, noop);
        unsafe fn clone(p: *const ()) -> RawWaker {
            RawWaker::new(p, &VTABLE)
        }
        unsafe fn wake(p: *const ()) {
            unsafe { &*(p as *const AtomicBool) }.store(true, SeqCst);
        }
        unsafe fn noop(_: *const ()) {}
        unsafe {
            Waker::from_raw(RawWaker::new(
                flag as *const AtomicBool as *const (),
                &VTABLE,
            ))
        }
    }
    let sem = Semaphore::new(0);
    let mut fut = Box::pin(sem.acquire(1));
    let (w1, w2) = (flag_waker(&FIRST), flag_waker(&SECOND));
    assert!(fut
        .as_mut()
        .poll(&mut Context::from_waker(&w1))
        .is_pending());
    assert!(fut
        .as_mut()
        .poll(&mut Context::from_waker(&w2))
        .is_pending());
    sem.release(1).unwrap();
    assert!(SECOND.load(SeqCst), "the current waker is woken");
    assert!(!FIRST.load(SeqCst), "not the stale one");
    assert!(matches!(
        fut.as_mut().poll(&mut Context::from_waker(&w2)),
        Poll::Ready(Ok(_))
    ));
}
