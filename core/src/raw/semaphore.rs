//! [`RawSemaphore`]: the raw waiter API, its contract written once for
//! every backend (the local [`Semaphore`](crate::Semaphore), the
//! shared-memory and the Redis semaphores, and the bindings' seam over the
//! three).

use core::ffi::c_void;
use core::pin::Pin;

use super::outcome::{RawAcquire, WakeFn};

/// A semaphore whose acquires can be driven by a wake callback: the C-style
/// waker contract the async futures, the blocking acquires and every
/// binding are built on.
///
/// A request is queued by [`acquire_raw`](crate::raw::RawSemaphore::acquire_raw) and always
/// ended by [`finish_raw`](crate::raw::RawSemaphore::finish_raw) (which cancels it if still
/// queued, or collects its outcome). Between the two, the waiter is pinned
/// and the backend calls `wake(ctx)` exactly once, through the one
/// per-thread trampoline of [`raw`](crate::raw): callbacks never nest, on
/// one thread, across backends. The callback only learns that the outcome
/// is ready; `finish_raw` has it.
///
/// Bring the trait into scope to call the methods:
/// `use volt_sem::raw::RawSemaphore;`.
///
/// # Example
///
/// A waiter whose callback hands the grant to a blocked thread (the
/// core's own [`acquire_blocking`](crate::Semaphore::acquire_blocking)
/// does the same without a callback, see [`docs::algorithm`](crate::docs::algorithm)). The same
/// code runs on the shared-memory and Redis semaphores with their waiter
/// types (`ShmWaiter`, `RedisWaiter`) and `Finish` (Redis's carries the
/// token).
///
/// ```
/// use std::ffi::c_void;
/// use std::pin::pin;
/// use std::sync::{Arc, Condvar, Mutex};
/// use volt_sem::raw::RawSemaphore;
/// use volt_sem::{Finish, RawAcquire, Semaphore, Waiter};
///
/// type Signal = (Mutex<bool>, Condvar);
/// unsafe extern "C" fn signal(ctx: *mut c_void) {
///     // SAFETY: `ctx` is the `Signal` below, alive until `finish_raw` returned.
///     let (done, cv) = unsafe { &*(ctx as *const Signal) };
///     *done.lock().unwrap() = true;
///     cv.notify_one();
/// }
///
/// let sem = Arc::new(Semaphore::new(0));
/// let releaser = {
///     let sem = sem.clone();
///     std::thread::spawn(move || sem.release(3).unwrap())
/// };
/// let sig: Signal = (Mutex::new(false), Condvar::new());
/// let waiter = pin!(Waiter::new());
/// let ctx = &sig as *const Signal as *mut c_void;
/// // SAFETY: the waiter is new and pinned; it and `sig` outlive `finish_raw`.
/// match unsafe { sem.acquire_raw(waiter.as_ref(), 3, signal, ctx) } {
///     Ok(RawAcquire::Ready) => {} // the release came first
///     Ok(RawAcquire::Pending) => {
///         let mut done = sig.0.lock().unwrap();
///         while !*done {
///             done = sig.1.wait(done).unwrap();
///         }
///         drop(done);
///         // SAFETY: queued on `sem`; called outside the callback.
///         assert_eq!(unsafe { sem.finish_raw(waiter.as_ref()) }, Finish::Granted);
///     }
///     Err(e) => panic!("{e}"),
/// }
/// releaser.join().unwrap();
/// sem.release(3).unwrap(); // the three permits were ours
/// ```
///
/// Cancelling: `finish_raw` on a request still queued hands its partial
/// grant on, and its callback never runs.
///
/// ```
/// use std::ffi::c_void;
/// use std::pin::pin;
/// use volt_sem::raw::RawSemaphore;
/// use volt_sem::{Finish, RawAcquire, Semaphore, Waiter};
///
/// unsafe extern "C" fn never(_: *mut c_void) {}
///
/// let sem = Semaphore::new(0);
/// let waiter = pin!(Waiter::new());
/// // SAFETY: the waiter is new and pinned, and outlives `finish_raw` below.
/// let r = unsafe { sem.acquire_raw(waiter.as_ref(), 2, never, std::ptr::null_mut()) };
/// assert_eq!(r, Ok(RawAcquire::Pending));
/// sem.release(1).unwrap(); // a partial grant
/// // SAFETY: queued on `sem`.
/// assert_eq!(unsafe { sem.finish_raw(waiter.as_ref()) }, Finish::Cancelled { returned: 1 });
/// assert_eq!(sem.available_permits(), 1);
/// // SAFETY: the waiter is idle now.
/// assert_eq!(unsafe { sem.finish_raw(waiter.as_ref()) }, Finish::Idle);
/// ```
///
/// # Safety
///
/// For implementors:
///
/// After `acquire_raw` returned `Pending`, the backend calls `wake(ctx)`
/// exactly once, through the [`raw`](crate::raw) trampoline, and does not
/// touch the waiter after `finish_raw` returned; `Ready` and errors leave
/// the waiter idle and never call `wake`.
pub unsafe trait RawSemaphore {
    /// The backend's waiter (it embeds a [`Node`](crate::raw::Node)); pinned
    /// while queued, reusable once finished.
    type Waiter;
    /// A refusal at once (closed, too many permits, a `fork()` child, ...).
    type Error;
    /// The outcome [`finish_raw`](crate::raw::RawSemaphore::finish_raw) collects: `Granted`,
    /// `Cancelled { returned }`, `Closed`, `Idle` (and, for Redis, the
    /// grant's token and `Failed`).
    type Finish;

    /// Queues an acquire of `n` permits that completes by calling
    /// `wake(ctx)`.
    ///
    /// `Ready`: the permits were taken at once (the callback will not run).
    /// `Pending`: `waiter` was queued; the callback runs exactly once, when
    /// the grant is complete, the semaphore closed (or, for Redis, the
    /// request failed or the session was lost), possibly before this
    /// returns, possibly on another thread (a releaser, a closer, the
    /// shared-memory doorbell thread, the Redis door or agent thread). A
    /// `Pending` waiter must eventually be passed to
    /// [`finish_raw`](crate::raw::RawSemaphore::finish_raw). `n == 0` is `Ready` at once unless
    /// the semaphore is closed (Redis: `Pending` too, since whether it is
    /// closed is Redis's knowledge). Never blocks, on any backend.
    ///
    /// # Safety
    /// * `waiter` is not busy (its `is_busy()`): it is new, or was finished
    ///   by `finish_raw` called outside its callback, or its outcome is final
    ///   (then the caller owns that outcome). A waiter whose callback is
    ///   still running (even one that consumed its outcome from inside) is
    ///   busy: re-queueing it would let the running notifier overwrite its
    ///   phase.
    /// * After `Pending`, `waiter` stays valid and unmoved (the `Pin`
    ///   promises the latter), and `ctx` stays valid for `wake`, until
    ///   `finish_raw` returned.
    /// * `wake(ctx)` may be called on another thread; it must not unwind.
    unsafe fn acquire_raw(
        &self,
        waiter: Pin<&Self::Waiter>,
        n: usize,
        wake: WakeFn,
        ctx: *mut c_void,
    ) -> Result<RawAcquire, Self::Error>;

    /// Ends a waiter's request: cancels it if still queued (`Cancelled`: its
    /// partial grant goes on to the next waiters; for Redis the cancel
    /// reaches Redis right after, `returned: 0`), or collects its outcome
    /// (`Granted`: the caller now holds the permits and must release them;
    /// `Closed`).
    ///
    /// When it returns, the semaphore no longer references `waiter`, and its
    /// callback has returned or never will, so the waiter and its `ctx` may
    /// be freed or reused. If the callback is running on another thread right
    /// now, this waits for it (spinning, then yielding: callbacks must be
    /// short). Called from inside the waiter's own callback (or one nested in
    /// it on the same thread), it returns the outcome at once; the waiter
    /// then stays busy until that callback returns. Never waits for the
    /// network.
    ///
    /// # Safety
    /// `waiter` is idle or was last queued on `self` ([`owns`](Self::owns)
    /// checks the latter).
    unsafe fn finish_raw(&self, waiter: Pin<&Self::Waiter>) -> Self::Finish;

    /// Whether `waiter` was last queued on this semaphore (for a shared one:
    /// through a handle of this process on the same name; for Redis: through
    /// this handle or a clone).
    fn owns(&self, waiter: &Self::Waiter) -> bool;
}
