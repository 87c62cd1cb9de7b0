//! Behaviour of the public Rust API, single-threaded and deterministic.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::task::noop_waker_ref;
use volt_sem::{AcquireError, Semaphore, TryAcquireError};

fn poll_once<F: Future>(f: std::pin::Pin<&mut F>) -> Poll<F::Output> {
    f.poll(&mut Context::from_waker(noop_waker_ref()))
}

#[test]
fn try_acquire_and_release_conserve_permits() {
    let sem = Semaphore::new(3);
    let a = sem.try_acquire(2).unwrap();
    assert_eq!(a.num_permits(), 2);
    assert_eq!(sem.available_permits(), 1);
    assert_eq!(sem.try_acquire(2).unwrap_err(), TryAcquireError::NoPermits);
    drop(a);
    assert_eq!(sem.available_permits(), 3);
    sem.try_acquire(1).unwrap().forget();
    assert_eq!(sem.available_permits(), 2);
    sem.release(1).unwrap();
    assert_eq!(sem.available_permits(), 3);
}

#[test]
fn acquire_zero_is_immediate() {
    let sem = Semaphore::new(0);
    let mut f = pin!(sem.acquire(0));
    match poll_once(f.as_mut()) {
        Poll::Ready(Ok(p)) => assert_eq!(p.num_permits(), 0),
        other => panic!("{other:?}"),
    };
}

#[test]
fn weighted_fifo_with_partial_fill() {
    let sem = Semaphore::new(1);
    let mut big = pin!(sem.acquire(3));
    assert!(poll_once(big.as_mut()).is_pending()); // took the 1 available, needs 2 more
    assert_eq!(sem.available_permits(), 0);
    let mut small = pin!(sem.acquire(1));
    assert!(poll_once(small.as_mut()).is_pending());
    // A later small request never overtakes the big one, not even try_acquire.
    sem.release(1).unwrap();
    assert_eq!(sem.try_acquire(1).unwrap_err(), TryAcquireError::NoPermits);
    assert!(poll_once(small.as_mut()).is_pending());
    assert!(poll_once(big.as_mut()).is_pending());
    sem.release(2).unwrap(); // completes big (needs 1) and small (1)
    let big_permit = match poll_once(big.as_mut()) {
        Poll::Ready(Ok(p)) => p,
        other => panic!("{other:?}"),
    };
    assert_eq!(big_permit.num_permits(), 3);
    let small_permit = match poll_once(small.as_mut()) {
        Poll::Ready(Ok(p)) => p,
        other => panic!("{other:?}"),
    };
    assert_eq!(sem.available_permits(), 0);
    drop((big_permit, small_permit));
    assert_eq!(sem.available_permits(), 4);
}

#[test]
fn cancel_hands_partial_grant_to_next_waiter() {
    let sem = Semaphore::new(2);
    let mut big = Box::pin(sem.acquire(4));
    assert!(poll_once(big.as_mut()).is_pending()); // holds 2 of 4
    let mut next = pin!(sem.acquire(2));
    assert!(poll_once(next.as_mut()).is_pending());
    drop(big); // cancel: its 2 go to `next`
    assert!(matches!(poll_once(next.as_mut()), Poll::Ready(Ok(_))));
}

#[test]
fn granted_but_unobserved_acquire_returns_permits_on_drop() {
    let sem = Semaphore::new(0);
    let mut f = Box::pin(sem.acquire(2));
    assert!(poll_once(f.as_mut()).is_pending());
    sem.release(2).unwrap();
    drop(f); // granted, never polled again
    assert_eq!(sem.available_permits(), 2);
}

#[test]
fn close_wakes_waiters_and_returns_partial_grants() {
    let sem = Semaphore::new(1);
    let mut f = pin!(sem.acquire(2));
    assert!(poll_once(f.as_mut()).is_pending());
    sem.close();
    assert!(sem.is_closed());
    assert!(matches!(
        poll_once(f.as_mut()),
        Poll::Ready(Err(AcquireError::Closed))
    ));
    assert_eq!(sem.available_permits(), 1);
    assert_eq!(sem.try_acquire(1).unwrap_err(), TryAcquireError::Closed);
    let mut later = pin!(sem.acquire(1));
    assert!(matches!(
        poll_once(later.as_mut()),
        Poll::Ready(Err(AcquireError::Closed))
    ));
    sem.release(1).unwrap(); // held permits can still come back
    assert_eq!(sem.available_permits(), 2);
}

#[test]
fn bad_counts_are_errors_not_panics() {
    let sem = Semaphore::new(Semaphore::MAX_PERMITS);
    assert!(sem.release(1).is_err());
    assert_eq!(sem.available_permits(), Semaphore::MAX_PERMITS);
    assert_eq!(
        sem.try_acquire(Semaphore::MAX_PERMITS + 1).unwrap_err(),
        TryAcquireError::TooManyPermits
    );
    let mut f = pin!(sem.acquire(usize::MAX));
    assert!(matches!(
        poll_once(f.as_mut()),
        Poll::Ready(Err(AcquireError::TooManyPermits))
    ));
    assert!(sem.release(usize::MAX).is_err());
    assert!(Semaphore::try_new(Semaphore::MAX_PERMITS + 1).is_none());
    assert!(sem.acquire_blocking(usize::MAX).is_err());
}

#[test]
fn owned_permits_outlive_borrows() {
    let sem = Arc::new(Semaphore::new(2));
    let p = sem.clone().try_acquire_owned(2).unwrap();
    assert_eq!(p.num_permits(), 2);
    let fut = sem.clone().acquire_owned(1);
    let mut fut = pin!(fut);
    assert!(poll_once(fut.as_mut()).is_pending());
    drop(p);
    let q = match poll_once(fut.as_mut()) {
        Poll::Ready(Ok(q)) => q,
        other => panic!("{other:?}"),
    };
    assert_eq!(sem.available_permits(), 1);
    drop(q);
    assert_eq!(sem.available_permits(), 2);
}

#[test]
fn blocking_acquire_is_woken_by_another_thread() {
    let sem = Arc::new(Semaphore::new(0));
    let s2 = sem.clone();
    let t = std::thread::spawn(move || s2.acquire_blocking(3).map(|p| p.num_permits()));
    for _ in 0..3 {
        std::thread::sleep(std::time::Duration::from_millis(5));
        sem.release(1).unwrap();
    }
    assert_eq!(t.join().unwrap(), Ok(3));
    assert_eq!(sem.available_permits(), 3);
}

#[test]
fn blocking_timeout_hands_back_partial_grant() {
    let sem = Semaphore::new(1);
    let err = sem
        .acquire_timeout(2, std::time::Duration::from_millis(20))
        .unwrap_err();
    assert_eq!(err, volt_sem::AcquireTimeoutError::TimedOut);
    assert_eq!(sem.available_permits(), 1);
}

/// A guard's count and its explicit `release` (mutation run 3 found that no
/// test but the doctests read `permits()` or checked that `release()`
/// gives the permits back).
#[test]
fn guards_report_their_count_and_release_it() {
    let sem = std::sync::Arc::new(Semaphore::new(5));
    let p = sem.try_acquire(2).unwrap();
    assert_eq!((p.permits(), p.num_permits()), (2, 2));
    p.release().unwrap();
    assert_eq!(sem.available_permits(), 5);
    let o = sem.clone().try_acquire_owned(3).unwrap();
    assert_eq!((o.permits(), o.num_permits()), (3, 3));
    o.release().unwrap();
    assert_eq!(sem.available_permits(), 5);
    // A released guard gives nothing back again when dropped.
    let p = sem.try_acquire(5).unwrap();
    p.release().unwrap();
    assert_eq!(sem.available_permits(), 5);
    // `release()` reports what dropping cannot: an overflow, with the count
    // not released (here the counter was refilled behind the guard's back).
    let full = Semaphore::new(Semaphore::MAX_PERMITS);
    let p = full.try_acquire(1).unwrap();
    full.release(1).unwrap();
    assert_eq!(p.release().unwrap_err().unreleased(), 1);
    let full = std::sync::Arc::new(full);
    let o = full.clone().try_acquire_owned(1).unwrap();
    full.release(1).unwrap();
    assert_eq!(o.release().unwrap_err().unreleased(), 1);
}

/// A raw waiter is busy from a `Pending` acquire until its callback has
/// returned (mutation run 3: every test asserted only `!is_busy()`).
#[test]
fn a_raw_waiter_is_busy_while_queued() {
    use volt_sem::raw::RawSemaphore;
    use volt_sem::{Finish, RawAcquire, Waiter};
    unsafe extern "C" fn nothing(_: *mut std::ffi::c_void) {}
    let sem = Semaphore::new(0);
    let w = pin!(Waiter::new());
    assert!(!w.is_busy());
    // SAFETY: the waiter is new and pinned, and outlives finish_raw below.
    let r = unsafe { sem.acquire_raw(w.as_ref(), 1, nothing, std::ptr::null_mut()) };
    assert_eq!(r, Ok(RawAcquire::Pending));
    assert!(w.is_busy());
    sem.release(1).unwrap(); // the callback runs and returns here
    assert!(
        !w.is_busy(),
        "its memory is free once the callback returned"
    );
    // SAFETY: queued on `sem`.
    assert_eq!(unsafe { sem.finish_raw(w.as_ref()) }, Finish::Granted);
    assert!(!w.is_busy());
    sem.release(1).unwrap();
}
