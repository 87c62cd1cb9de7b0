//! Blocking acquires for plain threads: the thread queues a waiter on its own
//! stack that names the thread (`Notify::Thread`: the completer stores the
//! grant in the waiter's phase, then unparks the thread), spins briefly, then
//! parks.

use core::pin::pin;
#[cfg(not(volt_loom))]
use std::time::{Duration, Instant};

use crate::error::{AcquireError, AcquireTimeoutError};
use crate::raw::{Finish, RawAcquire, WaiterState};
use crate::raw::{Notify, RawSemaphore};
use crate::semaphore::Semaphore;
#[cfg(not(volt_loom))]
use crate::sync;
use crate::sync::thread;
use crate::waiter::Waiter;
#[cfg(all(feature = "tokio", not(volt_loom)))]
use crate::{coop, error::TryAcquireError};
use crate::{OwnedPermit, Permit};
use std::sync::Arc;

#[cfg(all(feature = "tokio", not(volt_loom)))]
#[cold]
#[inline(never)]
fn blocking_in_runtime() -> ! {
    panic!(
        "volt-sem: a blocking acquire would wait on a thread that is running a tokio task; \
         this blocks the executor (and deadlocks a current-thread runtime). Use the async \
         `acquire`, or call it from `spawn_blocking` or `block_in_place`."
    )
}

/// Rounds of `spin_wait` before parking: 1, 2, 4, 8, 16, then 32 pauses per round,
/// about 380 pauses (~10 us here, close to one futex wake-up on this VM).
#[cfg(not(volt_loom))]
const SPIN_ROUNDS: u32 = 16;

impl Semaphore {
    /// Acquires `n` permits, blocking the current thread (parked, no busy wait)
    /// until they are granted in FIFO order or the semaphore is closed.
    ///
    /// Do not call it from an async task: it blocks the executor thread, and on
    /// a single-threaded runtime the task that would release the permits can
    /// then never run (a deadlock). Use `spawn_blocking`-style threads, or the
    /// async [`acquire`](Self::acquire).
    ///
    /// # Panics
    /// With the `tokio` feature, if it would have to wait while called from a
    /// task polled by a tokio runtime (like tokio's own blocking calls; calls
    /// from `spawn_blocking` and `block_in_place` are fine). Without the
    /// feature the crate cannot see the executor, and the mistake stays a hang.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use volt_sem::Semaphore;
    ///
    /// let sem = Arc::new(Semaphore::new(1));
    /// let held = sem.try_acquire(1).unwrap();
    /// let waiter = {
    ///     let sem = sem.clone();
    ///     std::thread::spawn(move || sem.acquire_blocking(1).unwrap().num_permits())
    /// };
    /// drop(held); // wakes the blocked thread
    /// assert_eq!(waiter.join().unwrap(), 1);
    /// ```
    pub fn acquire_blocking(&self, n: usize) -> Result<Permit<'_>, AcquireError> {
        match self.acquire_deadline(n, None) {
            Ok(permit) => Ok(permit),
            Err(AcquireTimeoutError::Closed) => Err(AcquireError::Closed),
            Err(_) => Err(AcquireError::TooManyPermits),
        }
    }

    /// Like [`acquire_blocking`](Self::acquire_blocking), for an `Arc<Semaphore>`:
    /// the permit owns a reference to the semaphore.
    ///
    /// # Panics
    /// As [`acquire_blocking`](Self::acquire_blocking).
    ///
    /// ```
    /// use std::sync::Arc;
    /// let sem = Arc::new(volt_sem::Semaphore::new(2));
    /// let permit = sem.clone().acquire_owned_blocking(2).unwrap();
    /// std::thread::spawn(move || drop(permit)).join().unwrap();
    /// assert_eq!(sem.available_permits(), 2);
    /// ```
    pub fn acquire_owned_blocking(self: Arc<Self>, n: usize) -> Result<OwnedPermit, AcquireError> {
        self.acquire_blocking(n)?.forget();
        Ok(OwnedPermit::from_raw(self, n))
    }

    /// Like [`acquire_blocking`](Self::acquire_blocking), giving up after
    /// `timeout`; a timed-out request hands its partial grant on.
    ///
    /// # Panics
    /// As [`acquire_blocking`](Self::acquire_blocking).
    ///
    /// ```
    /// use std::time::Duration;
    /// use volt_sem::{AcquireTimeoutError, Semaphore};
    ///
    /// let sem = Semaphore::new(1);
    /// let _held = sem.try_acquire(1).unwrap();
    /// let err = sem.acquire_timeout(1, Duration::from_millis(5)).unwrap_err();
    /// assert_eq!(err, AcquireTimeoutError::TimedOut);
    /// ```
    #[cfg(not(volt_loom))]
    pub fn acquire_timeout(
        &self,
        n: usize,
        timeout: Duration,
    ) -> Result<Permit<'_>, AcquireTimeoutError> {
        // A timeout too large to represent as an instant means "no timeout".
        self.acquire_deadline(n, Instant::now().checked_add(timeout))
    }

    #[cfg(not(volt_loom))]
    fn acquire_deadline(
        &self,
        n: usize,
        deadline: Option<Instant>,
    ) -> Result<Permit<'_>, AcquireTimeoutError> {
        self.acquire_parked(n, |waiter| loop {
            if waiter.state() != WaiterState::Waiting {
                return;
            }
            match deadline {
                None => thread::park(),
                Some(deadline) => {
                    let now = Instant::now();
                    if now >= deadline {
                        return;
                    }
                    thread::park_timeout(deadline - now);
                }
            }
        })
    }

    #[cfg(volt_loom)]
    fn acquire_deadline(
        &self,
        n: usize,
        _deadline: Option<()>,
    ) -> Result<Permit<'_>, AcquireTimeoutError> {
        self.acquire_parked(n, |waiter| {
            while waiter.state() == WaiterState::Waiting {
                thread::park();
            }
        })
    }

    /// Queues a stack waiter that unparks this thread, lets `park` wait (it
    /// returns when the waiter is no longer waiting, or gives up), then finishes
    /// the waiter: a grant that raced with giving up still counts.
    fn acquire_parked(
        &self,
        n: usize,
        park: impl FnOnce(&Waiter),
    ) -> Result<Permit<'_>, AcquireTimeoutError> {
        // The uncontended path first, as `try_acquire`'s two CAS: a thread
        // handle (a reference count up and down) and a waiter to initialise
        // are for requests that must wait (issue 30: an uncontended
        // `Mutex::lock_blocking` ran at half the speed of std's).
        match self.try_take(n) {
            Ok(()) => return Ok(self.permit_from_raw(n)),
            // Only a request that must wait can stall an executor: check for
            // one then (the check costs about a microsecond).
            #[cfg(all(feature = "tokio", not(volt_loom)))]
            Err(TryAcquireError::NoPermits) if coop::in_runtime_task() => blocking_in_runtime(),
            Err(_) => {} // the raw path below reports it (or takes what arrived)
        }
        let waiter = pin!(Waiter::new());
        // Not a raw callback that unparks: a callback waiter is granted in two
        // steps (NOTIFYING, then GRANTED once the callback returned), and the
        // thread could only go on after the second, i.e. after the releaser's
        // unpark. A `Thread` is granted in one store, under the queue lock,
        // and unparked after it; the handle is owned by the notify slot, so
        // the releaser's late `unpark` never touches this frame.
        // SAFETY: the waiter is fresh (idle) and pinned on this stack frame;
        // `finish_raw` below runs before it goes away, on every path (no code
        // between can unwind: `park` only parks and reads the clock).
        match unsafe { self.start_acquire(&waiter, n, || Notify::Thread(thread::current())) } {
            Ok(RawAcquire::Ready) => return Ok(self.permit_from_raw(n)),
            Ok(RawAcquire::Pending) => {}
            Err(e) => return Err(e.into()),
        }
        // A short bounded spin before parking: with short critical sections the
        // grant usually arrives within a few microseconds, and catching it here
        // saves a futex sleep and wake (tens of microseconds on a VM). Without
        // it, strict FIFO hand-off between two busy threads turns every lock into
        // a park/unpark pair (a "convoy"). The spin is bounded (about 10 us),
        // then the thread parks.
        // (Not under loom: the model explores parking, and each spin is a branch.)
        #[cfg(not(volt_loom))]
        for round in 0..SPIN_ROUNDS {
            if waiter.state() != WaiterState::Waiting {
                break;
            }
            sync::spin_wait(round.min(5));
        }
        park(&waiter);
        // SAFETY: the waiter was queued on `self` just above.
        match unsafe { self.finish_raw(waiter.as_ref()) } {
            Finish::Granted => Ok(self.permit_from_raw(n)),
            Finish::Closed => Err(AcquireTimeoutError::Closed),
            Finish::Cancelled { .. } | Finish::Idle => {
                self.record_timeout();
                Err(AcquireTimeoutError::TimedOut)
            }
        }
    }
}
