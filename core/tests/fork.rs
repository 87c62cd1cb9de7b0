//! `fork()` with waiters queued by other threads (see the `fork` rules in the
//! crate docs): in the child those requests are closed, their partial grants
//! come back, and the semaphore keeps working. Real processes, no mocks.
#![cfg(all(unix, not(miri)))]

use std::ffi::c_int;
use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::Duration;

use volt_sem::{AcquireError, Semaphore, TryAcquireError};

extern "C" {
    fn fork() -> c_int;
    fn waitpid(pid: c_int, status: *mut c_int, options: c_int) -> c_int;
    fn _exit(code: c_int) -> !;
}

/// Runs `child` in a forked child (which must not allocate if another thread
/// might hold the allocator's lock: these children only touch the semaphore)
/// and returns its exit code; a failed check in the child exits with its
/// number.
fn in_child(child: impl FnOnce() -> c_int) -> c_int {
    // SAFETY: the child only runs `child`, then `_exit`s without unwinding or
    // running destructors.
    let pid = unsafe { fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        // The child has only this (test) thread: a panic ending it would end
        // the process with status 0, so it becomes an exit code here.
        let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(child)).unwrap_or(99);
        unsafe { _exit(code) };
    }
    let mut status = 0;
    // SAFETY: our own child.
    assert_eq!(unsafe { waitpid(pid, &mut status, 0) }, pid);
    assert_eq!(
        status & 0x7f,
        0,
        "the child died of signal {}",
        status & 0x7f
    );
    (status >> 8) & 0xff
}

fn queued(sem: &Semaphore) -> bool {
    format!("{sem:?}").contains("queued: true")
}

/// The scenario: a thread blocked in `acquire_blocking(1)` on a
/// semaphore with 0 permits, then `fork()`. In the child, `release(1)` must
/// not feed the ghost waiter.
#[test]
fn a_release_in_the_child_is_not_swallowed_by_a_parent_thread_waiter() {
    let sem = Arc::new(Semaphore::new(0));
    let s2 = sem.clone();
    let blocked = thread::spawn(move || s2.acquire_blocking(1).map(|p| p.forget()));
    while !queued(&sem) {
        thread::sleep(Duration::from_millis(1));
    }
    let code = in_child(|| {
        if sem.release(1).is_err() {
            return 10;
        }
        if sem.available_permits() != 1 {
            return 11;
        }
        match sem.try_acquire(1) {
            Ok(p) => p.forget(),
            Err(_) => return 12,
        }
        0
    });
    assert_eq!(code, 0, "child check {code} failed");
    sem.release(1).unwrap(); // the parent's waiter is still served here
    assert_eq!(blocked.join().unwrap(), Ok(()));
}

/// A partly granted request of another thread is closed in the child and its
/// grant comes back; `try_acquire` alone (no other operation first) already
/// sees it.
#[test]
fn a_partial_grant_of_a_parent_thread_comes_back_in_the_child() {
    let sem = Arc::new(Semaphore::new(2));
    let s2 = sem.clone();
    let blocked = thread::spawn(move || s2.acquire_blocking(3).map(|p| p.forget()));
    while !queued(&sem) {
        thread::sleep(Duration::from_millis(1));
    }
    let code = in_child(|| {
        // The ghost holds 2 of 3: they come back.
        match sem.try_acquire(2) {
            Ok(p) => drop(p),
            Err(TryAcquireError::NoPermits) => return 20,
            Err(_) => return 21,
        }
        if sem.available_permits() != 2 {
            return 22;
        }
        0
    });
    assert_eq!(code, 0, "child check {code} failed");
    sem.release(1).unwrap();
    assert_eq!(blocked.join().unwrap(), Ok(()));
    assert_eq!(sem.available_permits(), 0);
}

/// The forking thread's own queued future resolves with `Closed` in the child,
/// and new requests there queue and are served as usual.
#[test]
fn the_forking_threads_own_request_is_closed_in_the_child() {
    let sem = Semaphore::new(0);
    let mut fut = Box::pin(sem.acquire(1));
    let mut cx = Context::from_waker(Waker::noop());
    assert!(fut.as_mut().poll(&mut cx).is_pending());
    let code = in_child(|| {
        match fut.as_mut().poll(&mut cx) {
            Poll::Ready(Err(AcquireError::Closed)) => {}
            _ => return 30,
        }
        if sem.is_closed() {
            return 31; // only the request is closed, not the semaphore
        }
        let mut next = Box::pin(sem.acquire(2));
        if next.as_mut().poll(&mut cx).is_ready() {
            return 32;
        }
        if sem.release(2).is_err() {
            return 33;
        }
        match next.as_mut().poll(&mut cx) {
            Poll::Ready(Ok(p)) => drop(p),
            _ => return 34,
        }
        if sem.available_permits() != 2 {
            return 35;
        }
        0
    });
    assert_eq!(code, 0, "child check {code} failed");
    sem.release(1).unwrap();
    assert!(matches!(fut.as_mut().poll(&mut cx), Poll::Ready(Ok(_))));
}

/// Issue 33, item 3: `available_permits` is the first call in the child. It
/// used to read the parent's word (0, the ghost's partial grant missing) until
/// some call took the lock; now it cleans up first, as `try_acquire` does.
#[test]
fn available_permits_first_in_the_child_counts_the_ghosts_partial_grant() {
    let sem = Arc::new(Semaphore::new(2));
    let s2 = sem.clone();
    let blocked = thread::spawn(move || s2.acquire_blocking(3).map(|p| p.forget()));
    while !queued(&sem) {
        thread::sleep(Duration::from_millis(1));
    }
    let code = in_child(|| {
        if sem.available_permits() != 2 {
            return 40;
        }
        if queued(&sem) {
            return 41;
        }
        0
    });
    assert_eq!(code, 0, "child check {code} failed");
    assert_eq!(sem.available_permits(), 0); // the parent's request still waits
    sem.release(1).unwrap();
    assert_eq!(blocked.join().unwrap(), Ok(()));
}
