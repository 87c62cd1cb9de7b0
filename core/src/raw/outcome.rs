//! The vocabulary of the raw waiter protocol, shared by every backend: the
//! wake callback's type, what `acquire_raw` answers, what `finish_raw`
//! found, and what a waiter knows of its request. Defined here, at the
//! bottom of the crate, so that the protocol depends on nothing above it;
//! the crate root re-exports them (`volt_sem::Finish`, ...).

use core::ffi::c_void;

/// A wake callback: called once, with the context pointer given at enqueue time,
/// when a queued waiter's grant is complete or its semaphore was closed.
///
/// See the crate documentation, section *The waker contract*, for when it runs
/// and what it may do.
///
/// ```
/// use std::ffi::c_void;
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use volt_sem::WakeFn;
///
/// unsafe extern "C" fn count(ctx: *mut c_void) {
///     // SAFETY: the caller passes an `AtomicUsize` that outlives the waiter.
///     unsafe { &*(ctx as *const AtomicUsize) }.fetch_add(1, Ordering::Relaxed);
/// }
/// let wake: WakeFn = count;
/// # let _ = wake;
/// ```
pub type WakeFn = unsafe extern "C" fn(ctx: *mut c_void);

/// What a waiter knows about its request, as seen by
/// [`Waiter::state`](crate::Waiter::state).
///
/// ```
/// use volt_sem::{Waiter, WaiterState};
/// assert_eq!(Waiter::new().state(), WaiterState::Idle);
/// ```
///
/// The [`Waiter`](crate::Waiter) example goes through `Waiting` and `Granted`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WaiterState {
    /// Not queued on any semaphore (new, cancelled, or already finished).
    Idle,
    /// Queued; the grant is not complete yet.
    Waiting,
    /// All requested permits were handed to this waiter.
    Granted,
    /// The semaphore was closed while this waiter was queued; it holds no permits.
    Closed,
}

/// The outcome of [`Semaphore::acquire_raw`] when it did not fail.
///
/// [`Semaphore::acquire_raw`]: crate::raw::RawSemaphore::acquire_raw
///
/// ```
/// use std::pin::pin;
/// use volt_sem::raw::RawSemaphore;
/// use volt_sem::{RawAcquire, Semaphore, Waiter};
/// unsafe extern "C" fn wake(_: *mut std::ffi::c_void) {}
///
/// let sem = Semaphore::new(1);
/// let waiter = pin!(Waiter::new());
/// // SAFETY: the waiter is new and pinned; `Ready` means it was not queued.
/// let r = unsafe { sem.acquire_raw(waiter.as_ref(), 1, wake, std::ptr::null_mut()) };
/// assert_eq!(r, Ok(RawAcquire::Ready)); // taken at once: the caller owns 1 permit
/// sem.release(1).unwrap();
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RawAcquire {
    /// The permits were taken at once; the waiter was not queued.
    Ready,
    /// The waiter is queued; its callback will run once.
    Pending,
}

/// What [`Semaphore::finish_raw`] found, and consumed. After it returns, the
/// semaphore no longer references the waiter and its callback has returned or
/// will never run.
///
/// [`Semaphore::finish_raw`]: crate::raw::RawSemaphore::finish_raw
///
/// ```
/// use std::pin::pin;
/// use volt_sem::raw::RawSemaphore;
/// use volt_sem::{Finish, Semaphore, Waiter};
/// unsafe extern "C" fn wake(_: *mut std::ffi::c_void) {}
///
/// let sem = Semaphore::new(0);
/// let waiter = pin!(Waiter::new());
/// // SAFETY: new and pinned; finished below before it goes away.
/// unsafe { sem.acquire_raw(waiter.as_ref(), 1, wake, std::ptr::null_mut()) }.unwrap();
/// sem.close();
/// // SAFETY: queued on `sem`.
/// assert_eq!(unsafe { sem.finish_raw(waiter.as_ref()) }, Finish::Closed);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Finish {
    /// The waiter was still queued and has been removed; `returned` permits it had
    /// been granted so far were handed back through the release path.
    Cancelled {
        /// The partial grant handed back (0 when nothing had arrived yet).
        returned: usize,
    },
    /// The full grant had arrived: the caller now owns the requested permits.
    Granted,
    /// The semaphore was closed while the waiter was queued; it holds nothing.
    Closed,
    /// The waiter was not queued (never used, or already finished).
    Idle,
}

/// What a backend did with a queued raw request whose owner's deadline
/// passed, when the request's first answer may still be on its way (a
/// Redis request whose acquire script has not answered yet): `F` is that
/// backend's [`Finish`]. The local semaphore never defers: its owners call
/// `finish_raw` at the deadline.
///
/// ```
/// use std::time::{Duration, Instant};
/// use volt_sem::raw::Expiry;
/// let later = Instant::now() + Duration::from_millis(250);
/// let e: Expiry<u8> = Expiry::Deferred { until: later };
/// assert_eq!(e.map(u32::from), Expiry::Deferred { until: later });
/// assert_eq!(Expiry::Finished(7u8).map(u32::from), Expiry::Finished(7u32));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Expiry<F> {
    /// Ended as by `finish_raw`, with what it found.
    Finished(F),
    /// Left to the first answer until `until`: the callback comes if that
    /// answer is in by then; the owner waits for it at most until `until`,
    /// then calls `finish_raw`, which collects the outcome or cancels.
    Deferred {
        /// When the owner stops waiting for the answer.
        until: std::time::Instant,
    },
}

impl<F> Expiry<F> {
    /// The same expiry with the finished outcome converted (a backend seam
    /// maps its backends' `Finish` to its own).
    pub fn map<G>(self, f: impl FnOnce(F) -> G) -> Expiry<G> {
        match self {
            Expiry::Finished(x) => Expiry::Finished(f(x)),
            Expiry::Deferred { until } => Expiry::Deferred { until },
        }
    }
}
