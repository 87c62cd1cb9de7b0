//! `fork()` with waiters queued by other threads (see the `fork` rules in the
//! crate docs): in the child those requests are closed, their partial grants
//! come back, and the semaphore keeps working. Real processes, no mocks.
#![cfg(all(unix, not(miri)))]

use std::ffi::{c_int, c_void};
use std::future::Future;
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::Duration;

use volt_sem::raw::RawSemaphore;
use volt_sem::{AcquireError, Finish, RawAcquire, Semaphore, TryAcquireError, Waiter};

extern "C" {
    fn alarm(seconds: u32) -> u32;
    fn fork() -> c_int;
    fn waitpid(pid: c_int, status: *mut c_int, options: c_int) -> c_int;
    fn _exit(code: c_int) -> !;
}

/// Runs `child` in a forked child (which must not allocate if another thread
/// might hold the allocator's lock: these children only touch the semaphore)
/// and returns its exit code (128 + the signal's number if a signal killed
/// it); a failed check in the child exits with its number.
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
    match status & 0x7f {
        0 => (status >> 8) & 0xff,
        // Killed by a signal: 128 + its number, as a shell says it (so that
        // the caller can clean up before its assertion fails).
        signal => 128 + signal,
    }
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

unsafe extern "C" fn no_op(_: *mut c_void) {}

/// A callback that signals it runs, then stays in until told to return.
struct Stall {
    entered: AtomicBool,
    go: AtomicBool,
}

unsafe extern "C" fn stall(ctx: *mut c_void) {
    // SAFETY: the `Stall` of the test, alive until its waiter is finished.
    let s = unsafe { &*(ctx as *const Stall) };
    s.entered.store(true, Ordering::Release);
    while !s.go.load(Ordering::Acquire) {
        thread::yield_now();
    }
}

/// A fork while a wake callback runs on another thread of the parent (and a
/// sibling's callback, completed by the same release, is still to run
/// there): the child has no such thread, so neither callback ever returns
/// in it. `finish_raw` there used to wait for ever; it returns the outcome
/// the parent decided (the permits are the child's copy's, as any permit
/// held at the fork).
#[test]
fn a_callback_running_on_a_parent_thread_at_the_fork_is_not_waited_for_in_the_child() {
    let sem = Arc::new(Semaphore::new(0));
    let st = Stall {
        entered: AtomicBool::new(false),
        go: AtomicBool::new(false),
    };
    let (a, b) = (pin!(Waiter::new()), pin!(Waiter::new()));
    let ctx = &st as *const Stall as *mut c_void;
    // SAFETY: pinned and finished below, in both processes; `st` outlives them.
    unsafe {
        assert_eq!(
            sem.acquire_raw(a.as_ref(), 1, stall, ctx),
            Ok(RawAcquire::Pending)
        );
        let null = std::ptr::null_mut();
        assert_eq!(
            sem.acquire_raw(b.as_ref(), 1, no_op, null),
            Ok(RawAcquire::Pending)
        );
    }
    let s2 = sem.clone();
    let releaser = thread::spawn(move || s2.release(2).unwrap());
    while !st.entered.load(Ordering::Acquire) {
        thread::yield_now();
    }
    // A child that hangs dies of SIGALRM: `in_child` returns 128 + 14 then.
    let code = in_child(|| {
        // SAFETY: only a signal's default action (a hang ends the child).
        unsafe { alarm(10) };
        // SAFETY: queued on `sem` (the child's copy).
        if unsafe { sem.finish_raw(a.as_ref()) } != Finish::Granted {
            return 50;
        }
        // SAFETY: as above.
        if unsafe { sem.finish_raw(b.as_ref()) } != Finish::Granted {
            return 51;
        }
        if a.is_busy() || b.is_busy() {
            return 52;
        }
        if sem.release(2).is_err() || sem.available_permits() != 2 {
            return 53;
        }
        0
    });
    // The parent ends its own requests first, so that a failed check leaves
    // no busy waiter behind.
    st.go.store(true, Ordering::Release);
    releaser.join().unwrap();
    // SAFETY: queued on `sem`; both callbacks have returned or will.
    unsafe {
        assert_eq!(sem.finish_raw(a.as_ref()), Finish::Granted);
        assert_eq!(sem.finish_raw(b.as_ref()), Finish::Granted);
    }
    sem.release(2).unwrap();
    assert_eq!(sem.available_permits(), 2);
    assert_eq!(code, 0, "child check {code} failed");
}

/// What the callback of `a_fork_from_inside_a_callback_...` needs.
struct ForkInside {
    sem: *const Semaphore,
    a: *const Waiter,
    b: *const Waiter,
    code: AtomicI32,
}

unsafe extern "C" fn fork_inside(ctx: *mut c_void) {
    // SAFETY: the test's `ForkInside`, its semaphore and waiters, alive and
    // pinned until both waiters are finished.
    let f = unsafe { &*(ctx as *const ForkInside) };
    let (sem, a, b) = unsafe {
        (
            &*f.sem,
            Pin::new_unchecked(&*f.a),
            Pin::new_unchecked(&*f.b),
        )
    };
    let code = in_child(|| {
        // SAFETY: only a signal's default action (a hang ends the child).
        unsafe { alarm(10) };
        // The forking thread goes on delivering in the child: inside its own
        // callback the outcome is collected at once and the waiter stays
        // busy until the callback returns, as anywhere.
        // SAFETY: queued on `sem`.
        if unsafe { sem.finish_raw(a) } != Finish::Granted {
            return 60;
        }
        if !a.is_busy() {
            return 61;
        }
        // The sibling, still to run on this thread: taken out at once.
        // SAFETY: as above.
        if unsafe { sem.finish_raw(b) } != Finish::Granted {
            return 62;
        }
        0
    });
    f.code.store(code, Ordering::Relaxed);
}

/// A fork made from inside a wake callback: that thread's deliveries go on
/// in the child, so the rule of the test above must not apply there (the
/// callback's own `finish_raw` would end a waiter whose callback still runs).
#[test]
fn a_fork_from_inside_a_callback_leaves_that_threads_deliveries_to_it() {
    let sem = Semaphore::new(0);
    let (a, b) = (pin!(Waiter::new()), pin!(Waiter::new()));
    let f = ForkInside {
        sem: &sem,
        a: &*a,
        b: &*b,
        code: AtomicI32::new(-1),
    };
    let ctx = &f as *const ForkInside as *mut c_void;
    // SAFETY: pinned and finished below; `f` outlives them.
    unsafe {
        assert_eq!(
            sem.acquire_raw(a.as_ref(), 1, fork_inside, ctx),
            Ok(RawAcquire::Pending)
        );
        let null = std::ptr::null_mut();
        assert_eq!(
            sem.acquire_raw(b.as_ref(), 1, no_op, null),
            Ok(RawAcquire::Pending)
        );
    }
    sem.release(2).unwrap(); // both callbacks run here: a's forks
    let code = f.code.load(Ordering::Relaxed);
    assert_eq!(code, 0, "child check {code} failed");
    // SAFETY: queued on `sem`; both callbacks have returned.
    unsafe {
        assert_eq!(sem.finish_raw(a.as_ref()), Finish::Granted);
        assert_eq!(sem.finish_raw(b.as_ref()), Finish::Granted);
    }
}
