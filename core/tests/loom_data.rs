//! loom models in which the permits guard real data. Each model writes a
//! `loom::cell::UnsafeCell` only while holding permits, so loom's causality
//! tracking reports a data race whenever a permit moves from one holder to the
//! next without a happens-before edge: a missing Acquire/Release pairing.
//! Part of `make test-loom`.
//!
//! Which weakening each model catches (checked by hand by changing the ordering
//! in `core/src/semaphore.rs` or `core/src/acquire.rs` to `Relaxed` and running
//! the model; `scripts/loom-weakenings.sh` repeats the check):
//!
//! | model | path | caught weakening |
//! |---|---|---|
//! | `fast_path_guards_data` | lock-free take / lock-free release | `try_take` success `Acquire`; `release` fast-path `Release` |
//! | `drain_on_enqueue_guards_data` | slow path drains the counter | `start_acquire` drain CAS `Acquire` |
//! | `hand_off_guards_data` | release hands to a queued waiter | `Acquire` load of the phase in `Acquire::poll` |
//! | `partial_grant_handed_on_by_cancel_guards_data` | cancel hands a partial grant on | `finish_raw` phase load `Acquire` |
//! | `blocking_path_guards_data` | blocking acquire | none on its own: loom's `unpark` synchronises by itself |
//! | `raw_waiter_owner_guards_data` | raw waiter, owner polls its state | `Waiter::state` + `finish_raw` phase loads `Acquire` (together: either one alone orders it) |
//! | `hazard_d_context_freed_right_after_finish` (in `loom.rs`) | callback waiter | the trampoline's final phase store `Release` |
//! | `mutex_guards_data`, `rwlock_guards_data` | the locks built on it | all of the above |
#![cfg(volt_loom)]

use loom::cell::UnsafeCell;
use loom::future::block_on;
use loom::sync::Arc;
use loom::thread;
use volt_sem::raw::RawSemaphore;
use volt_sem::{Mutex, RwLock, Semaphore};

#[path = "support/loom_model.rs"]
mod loom_model;
use loom_model::model;

/// A semaphore and the data its permits guard.
struct Guarded {
    sem: Semaphore,
    data: UnsafeCell<u32>,
}

// SAFETY: `data` is only touched while holding all of `sem`'s permits (the
// property the models check).
unsafe impl Sync for Guarded {}

impl Guarded {
    fn new(permits: usize) -> Arc<Guarded> {
        Arc::new(Guarded {
            sem: Semaphore::new(permits),
            data: UnsafeCell::new(0),
        })
    }
    /// Called with the permits held.
    fn bump(&self) {
        self.data.with_mut(|d| unsafe { *d += 1 });
    }
    fn read(&self) -> u32 {
        self.data.with(|d| unsafe { *d })
    }
}

/// Both sides take the permit without queueing whenever they can: the permit
/// travels through the counter (Release CAS in `release`, Acquire CAS in
/// `try_take`).
#[test]
fn fast_path_guards_data() {
    model(|| {
        let g = Guarded::new(1);
        let g2 = g.clone();
        let t = thread::spawn(move || {
            if let Ok(p) = g2.sem.try_acquire(1) {
                g2.bump();
                drop(p);
            }
        });
        if let Ok(p) = g.sem.try_acquire(1) {
            g.bump();
            drop(p);
        }
        t.join().unwrap();
        let _p = g.sem.try_acquire(1).unwrap();
        assert!(g.read() >= 1);
    });
}

/// The second acquirer asks for 2 while only 1 is free: it drains the counter
/// in the enqueue CAS (its Acquire must see the first holder's write) and gets
/// the rest by hand-off.
#[test]
fn drain_on_enqueue_guards_data() {
    model(|| {
        let g = Guarded::new(2);
        let p = g.sem.try_acquire(1).unwrap();
        let g2 = g.clone();
        let t = thread::spawn(move || {
            let both = block_on(g2.sem.acquire(2)).unwrap();
            g2.bump();
            drop(both);
        });
        let q = g.sem.try_acquire(1);
        if let Ok(q) = q {
            // Holding both permits: exclusive.
            g.bump();
            drop(q);
        }
        drop(p);
        t.join().unwrap();
        let all = g.sem.try_acquire(2).unwrap();
        assert!(g.read() >= 1);
        drop(all);
    });
}

/// A queued async waiter receives the permit by direct hand-off from the
/// holder's release (under the queue lock, then the waiter's phase).
#[test]
fn hand_off_guards_data() {
    model(|| {
        let g = Guarded::new(1);
        let held = g.sem.try_acquire(1).unwrap();
        let g2 = g.clone();
        let t = thread::spawn(move || {
            let p = block_on(g2.sem.acquire(1)).unwrap();
            g2.bump();
            drop(p);
        });
        g.bump();
        drop(held);
        t.join().unwrap();
        let _p = g.sem.try_acquire(1).unwrap();
        assert_eq!(g.read(), 2);
    });
}

/// A holds 1 of the 2 permits it asked for; B waits behind it. A is cancelled
/// and its partial grant goes on to B, so the permit released by the first
/// holder reaches B through the cancel.
#[test]
fn partial_grant_handed_on_by_cancel_guards_data() {
    use std::future::Future;
    use std::task::{Context, Poll};
    model(|| {
        let g = Guarded::new(1);
        g.sem.try_acquire(1).unwrap().forget(); // held by `holder` below
        let mut a = Box::pin(g.sem.acquire(2));
        let waker = std::task::Waker::noop().clone();
        assert!(a
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_pending());
        let g2 = g.clone();
        let t = thread::spawn(move || {
            let p = block_on(g2.sem.acquire(1)).unwrap();
            g2.bump();
            drop(p);
        });
        let g3 = g.clone();
        let holder = thread::spawn(move || {
            g3.bump();
            g3.sem.release(1).unwrap(); // goes to A (head) as a partial grant
        });
        holder.join().unwrap();
        match a.as_mut().poll(&mut Context::from_waker(&waker)) {
            Poll::Pending => drop(a), // cancel: A's 1 permit goes on to B
            Poll::Ready(_) => unreachable!("only 1 permit exists"),
        }
        t.join().unwrap();
        let _p = g.sem.try_acquire(1).unwrap();
        assert_eq!(g.read(), 2);
    });
}

/// The blocking path: a parked thread gets the permit by hand-off.
#[test]
fn blocking_path_guards_data() {
    model(|| {
        let g = Guarded::new(1);
        let held = g.sem.try_acquire(1).unwrap();
        let g2 = g.clone();
        let t = thread::spawn(move || {
            let p = g2.sem.acquire_blocking(1).unwrap();
            g2.bump();
            drop(p);
        });
        g.bump();
        drop(held);
        t.join().unwrap();
        let _p = g.sem.acquire_blocking(1).unwrap();
        assert_eq!(g.read(), 2);
    });
}

/// A raw waiter whose owner polls `Waiter::state()` instead of parking, then
/// finishes it: the phase loads alone must order the hand-off. (In
/// `blocking_path_guards_data` loom's `unpark` already synchronises the two
/// threads, even when the owner never parks, so that model cannot catch a
/// weakened phase load; this one can.)
#[test]
fn raw_waiter_owner_guards_data() {
    use std::ffi::c_void;
    use volt_sem::{Finish, RawAcquire, Waiter, WaiterState};
    unsafe extern "C" fn nothing(_: *mut c_void) {}
    model(|| {
        let g = Guarded::new(1);
        g.sem.try_acquire(1).unwrap().forget(); // held by the main thread
        let g2 = g.clone();
        let t = thread::spawn(move || {
            let w = Box::pin(Waiter::new());
            let queued = unsafe {
                g2.sem
                    .acquire_raw(w.as_ref(), 1, nothing, core::ptr::null_mut())
            };
            if queued == Ok(RawAcquire::Pending) {
                while w.state() == WaiterState::Waiting {
                    thread::yield_now();
                }
                assert_eq!(unsafe { g2.sem.finish_raw(w.as_ref()) }, Finish::Granted);
            } else {
                assert_eq!(queued, Ok(RawAcquire::Ready)); // released first
            }
            g2.bump();
            g2.sem.release(1).unwrap();
        });
        g.bump();
        g.sem.release(1).unwrap();
        t.join().unwrap();
        let _p = g.sem.try_acquire(1).unwrap();
        assert_eq!(g.read(), 2);
    });
}

/// `Mutex<T>` over loom-tracked data: two tasks increment it.
#[test]
fn mutex_guards_data() {
    model(|| {
        let m = Arc::new(Mutex::new(UnsafeCell::new(0u32)));
        let m2 = m.clone();
        let t = thread::spawn(move || {
            let guard = block_on(m2.lock());
            guard.with_mut(|v| unsafe { *v += 1 });
        });
        {
            let guard = m.lock_blocking();
            guard.with_mut(|v| unsafe { *v += 1 });
        }
        t.join().unwrap();
        let guard = m.try_lock().unwrap();
        assert_eq!(guard.with(|v| unsafe { *v }), 2);
    });
}

/// Loom's cell is not `Sync`; readers share it through the lock's guarantee.
struct SharedCell(UnsafeCell<u32>);
// SAFETY: written only under the write lock, read only under a read lock.
unsafe impl Sync for SharedCell {}
impl core::ops::Deref for SharedCell {
    type Target = UnsafeCell<u32>;
    fn deref(&self) -> &UnsafeCell<u32> {
        &self.0
    }
}

/// `RwLock<T>`: a writer and a reader; the reader sees 0 or 1, never a torn or
/// racing value.
#[test]
fn rwlock_guards_data() {
    model(|| {
        let l = Arc::new(RwLock::new(SharedCell(UnsafeCell::new(0u32))));
        let l2 = l.clone();
        let t = thread::spawn(move || {
            let guard = block_on(l2.write());
            guard.with_mut(|v| unsafe { *v += 1 });
        });
        {
            let guard = block_on(l.read());
            let seen = guard.with(|v| unsafe { *v });
            assert!(seen <= 1);
        }
        t.join().unwrap();
        let guard = l.try_write().unwrap();
        assert_eq!(guard.with(|v| unsafe { *v }), 1);
    });
}
