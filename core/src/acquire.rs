//! The async API: the `Acquire` future and the RAII permits.

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};

use crate::coop;
use crate::error::{AcquireError, ReleaseError, TryAcquireError};
use crate::raw::{phase, Notify, RawSemaphore};
use crate::raw::{Finish, RawAcquire};
use crate::semaphore::Semaphore;
use crate::sync::Ordering;
use crate::waiter::Waiter;

use std::sync::Arc;

/// Permits acquired from a [`Semaphore`], released when dropped.
///
/// ```
/// use volt_sem::Semaphore;
///
/// let sem = Semaphore::new(4);
/// let mut permit = sem.try_acquire(3).unwrap();
/// assert_eq!(permit.num_permits(), 3);
/// assert!(std::ptr::eq(permit.semaphore(), &sem));
///
/// let one = permit.split(1).unwrap(); // now two guards: 2 + 1
/// assert_eq!(permit.num_permits(), 2);
/// drop(one);
/// assert_eq!(sem.available_permits(), 2);
///
/// permit.merge(sem.try_acquire(1).unwrap());
/// assert_eq!(permit.num_permits(), 3);
/// drop(permit);
/// assert_eq!(sem.available_permits(), 4);
/// ```
///
/// # Panics
///
/// Dropping a permit panics if its semaphore cannot take the permits back
/// because someone over-filled it in the meantime (with
/// [`add_permits`](Semaphore::add_permits) or [`release`](Semaphore::release))
/// up to [`MAX_PERMITS`](Semaphore::MAX_PERMITS): the permits would otherwise be
/// lost without a trace. tokio panics in the same case. (If the thread is
/// already panicking, the loss is reported on stderr instead of aborting.)
#[must_use = "dropping a permit releases it at once"]
pub struct Permit<'a> {
    sem: &'a Semaphore,
    permits: usize,
}

/// Permits acquired from an `Arc<Semaphore>`, released when dropped; `'static`,
/// so it can move into a spawned task.
///
/// ```
/// use std::sync::Arc;
/// use volt_sem::Semaphore;
///
/// let sem = Arc::new(Semaphore::new(2));
/// let permit = sem.clone().try_acquire_owned(2).unwrap();
/// let worker = std::thread::spawn(move || {
///     // ... the permits travel with the work ...
///     assert_eq!(permit.num_permits(), 2);
///     drop(permit);
/// });
/// worker.join().unwrap();
/// assert_eq!(sem.available_permits(), 2);
/// ```
///
/// # Panics
///
/// On drop, in the same case as [`Permit`].
#[must_use = "dropping a permit releases it at once"]
pub struct OwnedPermit {
    sem: Arc<Semaphore>,
    permits: usize,
}

/// `Debug` for a permit guard: its type's name, how many permits it holds
/// (the field named first) and any other fields named (Redis's token), not
/// the whole semaphore; the same for every backend's permits.
#[doc(hidden)]
#[macro_export]
macro_rules! permit_debug {
    ($t:ident $(<$lt:lifetime>)?, $permits:ident $(, $field:ident)*) => {
        impl ::core::fmt::Debug for $t $(<$lt>)? {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.debug_struct(stringify!($t))
                    .field("permits", &self.$permits)
                    $( .field(stringify!($field), &self.$field) )*
                    .finish_non_exhaustive()
            }
        }
    };
}

crate::permit_debug!(Permit<'_>, permits);
crate::permit_debug!(OwnedPermit, permits);

/// Gives permits a guard held back to their semaphore; see `Permit`'s panics.
#[inline]
pub(crate) fn release_held(sem: &Semaphore, n: usize) {
    if let Err(e) = sem.release(n) {
        lost_permits(e.unreleased());
    }
}

#[cold]
#[inline(never)]
fn lost_permits(n: usize) {
    let msg = "volt-sem: a permit could not be returned because the semaphore was \
               over-filled (more permits were added with `add_permits` or `release` than \
               `MAX_PERMITS` allows)";
    if std::thread::panicking() {
        eprintln!("{msg}; {n} permits lost");
    } else {
        panic!("{msg}; {n} permits lost");
    }
}

impl<'a> Permit<'a> {
    /// How many permits this holds (the name every backend's permit has).
    ///
    /// ```
    /// let sem = volt_sem::Semaphore::new(5);
    /// assert_eq!(sem.try_acquire(3).unwrap().permits(), 3);
    /// ```
    pub fn permits(&self) -> usize {
        self.permits
    }

    /// [`permits`](Self::permits), under tokio's name.
    pub fn num_permits(&self) -> usize {
        self.permits
    }

    /// Releases now, reporting what dropping would panic on: the semaphore
    /// was over-filled (see *Panics* above); the error counts the permits
    /// that could not go back.
    ///
    /// ```
    /// let sem = volt_sem::Semaphore::new(2);
    /// sem.try_acquire(2).unwrap().release().unwrap();
    /// assert_eq!(sem.available_permits(), 2);
    /// ```
    pub fn release(mut self) -> Result<(), ReleaseError> {
        self.sem.release(core::mem::take(&mut self.permits))
    }

    /// The semaphore these permits belong to.
    ///
    /// ```
    /// let sem = volt_sem::Semaphore::new(1);
    /// let permit = sem.try_acquire(1).unwrap();
    /// assert_eq!(permit.semaphore().available_permits(), 0);
    /// ```
    pub fn semaphore(&self) -> &'a Semaphore {
        self.sem
    }

    /// Consumes the guard without releasing: the permits stay taken, by
    /// nobody in particular, until [`Semaphore::release`] gives them back by
    /// count (as on every backend).
    ///
    /// ```
    /// let sem = volt_sem::Semaphore::new(3);
    /// sem.try_acquire(2).unwrap().forget();
    /// assert_eq!(sem.available_permits(), 1);
    /// sem.release(2).unwrap();
    /// assert_eq!(sem.available_permits(), 3);
    /// ```
    pub fn forget(mut self) {
        self.permits = 0;
    }

    /// Splits `n` permits off into a new guard, or returns `None` (and changes
    /// nothing) if this one holds fewer than `n`.
    ///
    /// ```
    /// let sem = volt_sem::Semaphore::new(3);
    /// let mut three = sem.try_acquire(3).unwrap();
    /// let two = three.split(2).unwrap();
    /// assert_eq!((three.num_permits(), two.num_permits()), (1, 2));
    /// assert!(three.split(2).is_none());
    /// ```
    pub fn split(&mut self, n: usize) -> Option<Permit<'a>> {
        if n > self.permits {
            return None;
        }
        self.permits -= n;
        Some(Permit {
            sem: self.sem,
            permits: n,
        })
    }

    /// Moves the permits of `other` into this guard.
    ///
    /// # Panics
    /// If `other` belongs to a different semaphore (a programming error, as in
    /// tokio). The permits of both guards are still released on unwinding.
    ///
    /// ```
    /// let sem = volt_sem::Semaphore::new(3);
    /// let mut a = sem.try_acquire(1).unwrap();
    /// a.merge(sem.try_acquire(2).unwrap());
    /// assert_eq!(a.num_permits(), 3);
    /// ```
    pub fn merge(&mut self, mut other: Permit<'_>) {
        assert!(
            core::ptr::eq(self.sem, other.sem),
            "volt-sem: merging permits of two different semaphores"
        );
        self.permits += core::mem::take(&mut other.permits);
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        release_held(self.sem, self.permits);
    }
}

impl OwnedPermit {
    /// How many permits this holds (the name every backend's permit has).
    ///
    /// ```
    /// let sem = std::sync::Arc::new(volt_sem::Semaphore::new(5));
    /// assert_eq!(sem.try_acquire_owned(3).unwrap().permits(), 3);
    /// ```
    pub fn permits(&self) -> usize {
        self.permits
    }

    /// [`permits`](Self::permits), under tokio's name.
    pub fn num_permits(&self) -> usize {
        self.permits
    }

    /// Releases now, reporting what dropping would panic on (see
    /// [`Permit::release`]).
    pub fn release(mut self) -> Result<(), ReleaseError> {
        self.sem.release(core::mem::take(&mut self.permits))
    }

    /// The semaphore these permits belong to.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let sem = Arc::new(volt_sem::Semaphore::new(1));
    /// let permit = sem.clone().try_acquire_owned(1).unwrap();
    /// assert!(Arc::ptr_eq(permit.semaphore(), &sem));
    /// ```
    pub fn semaphore(&self) -> &Arc<Semaphore> {
        &self.sem
    }

    /// Consumes the guard without releasing: the permits stay taken until
    /// [`Semaphore::release`] gives them back by count.
    ///
    /// ```
    /// let sem = std::sync::Arc::new(volt_sem::Semaphore::new(3));
    /// sem.clone().try_acquire_owned(2).unwrap().forget();
    /// assert_eq!(sem.available_permits(), 1);
    /// ```
    pub fn forget(mut self) {
        self.permits = 0;
    }

    /// Splits `n` permits off into a new guard, or returns `None` (and changes
    /// nothing) if this one holds fewer than `n`.
    ///
    /// ```
    /// let sem = std::sync::Arc::new(volt_sem::Semaphore::new(3));
    /// let mut three = sem.try_acquire_owned(3).unwrap();
    /// let one = three.split(1).unwrap();
    /// std::thread::spawn(move || drop(one)).join().unwrap();
    /// assert_eq!(three.num_permits(), 2);
    /// ```
    pub fn split(&mut self, n: usize) -> Option<OwnedPermit> {
        if n > self.permits {
            return None;
        }
        self.permits -= n;
        Some(OwnedPermit {
            sem: Arc::clone(&self.sem),
            permits: n,
        })
    }

    /// Moves the permits of `other` into this guard.
    ///
    /// # Panics
    /// If `other` belongs to a different semaphore.
    ///
    /// ```
    /// let sem = std::sync::Arc::new(volt_sem::Semaphore::new(3));
    /// let mut a = sem.clone().try_acquire_owned(1).unwrap();
    /// a.merge(sem.clone().try_acquire_owned(2).unwrap());
    /// assert_eq!(a.num_permits(), 3);
    /// ```
    pub fn merge(&mut self, mut other: OwnedPermit) {
        assert!(
            Arc::ptr_eq(&self.sem, &other.sem),
            "volt-sem: merging permits of two different semaphores"
        );
        self.permits += core::mem::take(&mut other.permits);
    }
}

impl OwnedPermit {
    /// Wraps `n` permits of `sem` the caller already owns into a guard.
    pub(crate) fn from_raw(sem: Arc<Semaphore>, n: usize) -> Self {
        OwnedPermit { sem, permits: n }
    }
}

impl Drop for OwnedPermit {
    fn drop(&mut self) {
        release_held(&self.sem, self.permits);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Start,
    Queued,
    Done,
}

/// The state both acquire futures share: the request, where it stands, and the
/// queue node.
struct Request {
    permits: usize,
    stage: Stage,
    waiter: Waiter,
}

impl Request {
    fn new(permits: usize) -> Self {
        Request {
            permits,
            stage: Stage::Start,
            waiter: Waiter::new(),
        }
    }

    /// Drives the request on `sem`; `Ready(Ok)` means the caller now owns
    /// `permits` permits.
    ///
    /// # Safety
    /// `self` is pinned (it lives in a pinned future and is never moved out),
    /// and `sem` is the same semaphore at every call and in `cancel`.
    #[inline(always)]
    unsafe fn poll(
        &mut self,
        sem: &Semaphore,
        cx: &mut Context<'_>,
    ) -> Poll<Result<(), AcquireError>> {
        // The uncontended case, kept small enough to inline into the future's
        // `poll`: one thread-local count and one CAS, no waker clone.
        if self.stage == Stage::Start {
            let proceed = match coop::poll_proceed(cx) {
                Poll::Ready(proceed) => Some(proceed),
                // Only a request that would complete at once may yield: it
                // holds no place, and nobody is queued for it to lose one to.
                // One that must wait queues now (its `Pending` is the yield):
                // yielding first would let a later request queue ahead of it.
                // (The state may change before the next poll; either way the
                // request was not queued, so no FIFO order is broken.)
                Poll::Pending if sem.would_grant_at_once(self.permits) => return Poll::Pending,
                Poll::Pending => None,
            };
            if proceed.is_some() && sem.try_take(self.permits).is_ok() {
                coop::made_progress(proceed);
                self.stage = Stage::Done;
                return Poll::Ready(Ok(()));
            }
            // SAFETY: forwarded caller contract.
            return unsafe { self.start_slow(sem, cx, proceed) };
        }
        // SAFETY: forwarded caller contract.
        unsafe { self.poll_queued(sem, cx) }
    }

    /// `poll` in stage `Start` when the fast path failed: queue (or take what
    /// arrived meanwhile), or report the error.
    ///
    /// # Safety
    /// As `poll`.
    #[inline(never)]
    unsafe fn start_slow(
        &mut self,
        sem: &Semaphore,
        cx: &mut Context<'_>,
        proceed: Option<coop::Proceed>,
    ) -> Poll<Result<(), AcquireError>> {
        // SAFETY: the waiter is idle (stage Start), and pinned inside the
        // future (caller contract), whose Drop finishes it before the
        // memory goes away.
        let started = unsafe {
            sem.start_acquire(&self.waiter, self.permits, || {
                Notify::Waker(cx.waker().clone())
            })
        };
        match started {
            Ok(RawAcquire::Ready) => {
                coop::made_progress(proceed);
                self.stage = Stage::Done;
                Poll::Ready(Ok(()))
            }
            Ok(RawAcquire::Pending) => {
                coop::yielded();
                self.stage = Stage::Queued;
                Poll::Pending
            }
            Err(e) => {
                self.stage = Stage::Done;
                Poll::Ready(Err(e))
            }
        }
    }

    /// `poll` after the request was queued.
    ///
    /// # Safety
    /// As `poll`.
    #[inline(never)]
    unsafe fn poll_queued(
        &mut self,
        sem: &Semaphore,
        cx: &mut Context<'_>,
    ) -> Poll<Result<(), AcquireError>> {
        loop {
            match self.stage {
                Stage::Start => unreachable!("started by `poll`"),
                Stage::Queued => {
                    // Acquire: pairs with the notifier's Release store, so the grant
                    // (and the releasers' critical sections) happen-before our return.
                    match self.waiter.node.phase(Ordering::Acquire) {
                        phase::GRANTED => {
                            self.waiter.node.set_phase(phase::IDLE, Ordering::Relaxed);
                            self.stage = Stage::Done;
                            return Poll::Ready(Ok(()));
                        }
                        phase::CLOSED => {
                            self.waiter.node.set_phase(phase::IDLE, Ordering::Relaxed);
                            self.stage = Stage::Done;
                            return Poll::Ready(Err(AcquireError::Closed));
                        }
                        _ => {
                            if sem.update_waker(&self.waiter, cx.waker()) {
                                coop::yielded();
                                return Poll::Pending;
                            }
                            // decided meanwhile: look at the phase again
                        }
                    }
                }
                Stage::Done => panic!("volt-sem: an acquire future was polled after it completed"),
            }
        }
    }

    /// Cancels a queued request (the future is dropped): a partial grant, or a
    /// complete grant nobody observed, goes back and on to the next waiters.
    fn cancel(&mut self, sem: &Semaphore) {
        if self.stage != Stage::Queued {
            return;
        }
        // SAFETY: the waiter was queued on `sem` (the same semaphore at every
        // call) and has not moved (the future is pinned once polled); a Waker
        // waiter never sits in a NOTIFYING phase, so this does not wait.
        let finish = unsafe { sem.finish_raw(Pin::new_unchecked(&self.waiter)) };
        if finish == Finish::Granted {
            release_held(sem, self.permits);
        }
    }
}

/// Future returned by [`Semaphore::acquire`]. Its queue node lives inside it, so
/// waiting allocates nothing. Dropping it while queued cancels the request and
/// hands any partial grant on to the next waiter.
///
/// Cancelling loses the request's place in the queue: a new `acquire` queues
/// at the tail again.
///
/// A task that keeps completing acquires without waiting yields now and then
/// (see [`Semaphore::acquire`], *Cooperative yielding*).
///
/// # Leaking
///
/// Do not [`mem::forget`](core::mem::forget) a pinned, queued `Acquire` (or leak
/// it in a reference cycle). Its node stays in the queue for ever: once it is at
/// the head it absorbs every released permit and never completes, so every
/// request behind it starves until the semaphore is closed. (Forgetting a future
/// that was never polled, or has completed, is harmless.) The same holds for
/// tokio's semaphore and every queue-based fair lock: fairness means the head
/// is served first, even when nobody will ever collect it.
///
/// ```
/// use std::future::Future;
/// use std::pin::pin;
/// use std::task::{Context, Poll};
/// use volt_sem::Semaphore;
///
/// let sem = Semaphore::new(1);
/// let held = sem.try_acquire(1).unwrap();
/// let mut acquire = pin!(sem.acquire(1));
/// let waker = futures::task::noop_waker();
/// let mut cx = Context::from_waker(&waker);
/// assert!(acquire.as_mut().poll(&mut cx).is_pending()); // queued
/// drop(held); // hands the permit straight to the queued request
/// assert!(matches!(acquire.as_mut().poll(&mut cx), Poll::Ready(Ok(_))));
/// ```
#[must_use = "futures do nothing unless polled"]
pub struct Acquire<'a> {
    sem: &'a Semaphore,
    request: Request,
}

impl core::fmt::Debug for Acquire<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Acquire")
            .field("permits", &self.request.permits)
            .field("stage", &self.request.stage)
            .finish()
    }
}

impl<'a> Future for Acquire<'a> {
    type Output = Result<Permit<'a>, AcquireError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: nothing is moved out of `self`; the waiter stays where it is.
        let this = unsafe { self.get_unchecked_mut() };
        let sem = this.sem;
        // SAFETY: `this.request` is pinned with the future; `sem` never changes.
        let done = unsafe { this.request.poll(sem, cx) };
        done.map(|r| {
            r.map(|()| Permit {
                sem,
                permits: this.request.permits,
            })
        })
    }
}

impl Drop for Acquire<'_> {
    fn drop(&mut self) {
        self.request.cancel(self.sem);
    }
}

/// Future returned by [`Semaphore::acquire_owned`]: like [`Acquire`], for an
/// `Arc<Semaphore>`, resolving to an [`OwnedPermit`]. A named type, so it can be
/// a field of a hand-written future or stream (pinned with it) without boxing.
///
/// Everything said on [`Acquire`] (cancellation, leaking, yielding) applies.
///
/// ```
/// use std::future::Future;
/// use std::pin::Pin;
/// use std::sync::Arc;
/// use std::task::{Context, Poll};
/// use volt_sem::{AcquireOwned, OwnedPermit, Semaphore};
///
/// /// Runs `job` once `weight` permits are held, keeping them until it is done.
/// struct Throttled<F> {
///     acquire: AcquireOwned,
///     permit: Option<OwnedPermit>,
///     job: F,
/// }
///
/// impl<F: Future + Unpin> Future for Throttled<F> {
///     type Output = F::Output;
///     fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
///         // SAFETY: `acquire` is never moved out of the pinned struct.
///         let this = unsafe { self.get_unchecked_mut() };
///         if this.permit.is_none() {
///             let acquire = unsafe { Pin::new_unchecked(&mut this.acquire) };
///             match acquire.poll(cx) {
///                 Poll::Ready(permit) => this.permit = Some(permit.expect("closed")),
///                 Poll::Pending => return Poll::Pending,
///             }
///         }
///         Pin::new(&mut this.job).poll(cx)
///     }
/// }
///
/// let sem = Arc::new(Semaphore::new(4));
/// let job = Throttled {
///     acquire: sem.clone().acquire_owned(3),
///     permit: None,
///     job: std::future::ready(42),
/// };
/// assert_eq!(futures::executor::block_on(job), 42);
/// assert_eq!(sem.available_permits(), 4); // the permits left with the future
/// ```
#[must_use = "futures do nothing unless polled"]
pub struct AcquireOwned {
    /// `None` once the permit (which takes the `Arc`) was returned.
    sem: Option<Arc<Semaphore>>,
    request: Request,
}

impl core::fmt::Debug for AcquireOwned {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("AcquireOwned")
            .field("permits", &self.request.permits)
            .field("stage", &self.request.stage)
            .finish()
    }
}

impl Future for AcquireOwned {
    type Output = Result<OwnedPermit, AcquireError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: nothing is moved out of `self` but the `Arc`, which is not pinned
        // (the waiter stays where it is).
        let this = unsafe { self.get_unchecked_mut() };
        let Some(sem) = this.sem.as_deref() else {
            panic!("volt-sem: an acquire future was polled after it completed");
        };
        // SAFETY: `this.request` is pinned with the future; `sem` is the same
        // semaphore until the request is done (it is only taken out below).
        let done = unsafe { this.request.poll(sem, cx) };
        done.map(|r| {
            r.map(|()| OwnedPermit {
                sem: this.sem.take().expect("present until the request is done"),
                permits: this.request.permits,
            })
        })
    }
}

impl Drop for AcquireOwned {
    fn drop(&mut self) {
        if let Some(sem) = &self.sem {
            self.request.cancel(sem);
        }
    }
}

impl Semaphore {
    /// Acquires `n` permits, waiting in FIFO order behind earlier requests.
    ///
    /// Fails with [`AcquireError::Closed`] if the semaphore is (or gets) closed,
    /// and with [`AcquireError::TooManyPermits`] if `n > MAX_PERMITS`.
    /// `acquire(0)` completes at once. Cancel-safe: dropping the future gives back
    /// whatever was granted to it, and loses its place in the queue.
    ///
    /// A request for more permits than the semaphore will ever hold waits at the
    /// head of the queue, and so blocks every request behind it, until the
    /// permits are added or the semaphore is closed: strict FIFO means nobody
    /// overtakes it.
    ///
    /// # Cooperative yielding
    ///
    /// An acquire that can complete at once still yields (returns `Pending` once,
    /// having woken its task) when the thread has made 128 immediate grants in a
    /// row, and, with the `tokio` feature, when the tokio task has used up its
    /// coop budget. A task looping on `acquire` cannot starve its executor.
    /// A request that must wait never yields: it queues at its first poll,
    /// whatever the budget, so yielding never costs a place in the queue.
    ///
    /// ```
    /// use volt_sem::Semaphore;
    /// # futures::executor::block_on(async {
    /// let sem = Semaphore::new(2);
    /// let permit = sem.acquire(2).await.unwrap();
    /// assert_eq!(sem.available_permits(), 0);
    /// drop(permit);
    /// sem.close();
    /// assert!(sem.acquire(1).await.is_err());
    /// # });
    /// ```
    pub fn acquire(&self, n: usize) -> Acquire<'_> {
        Acquire {
            sem: self,
            request: Request::new(n),
        }
    }

    /// Takes `n` permits now, or fails without waiting. Never overtakes a queued
    /// request.
    ///
    /// ```
    /// use volt_sem::{Semaphore, TryAcquireError};
    ///
    /// let sem = Semaphore::new(2);
    /// let _one = sem.try_acquire(1).unwrap();
    /// assert_eq!(sem.try_acquire(2).unwrap_err(), TryAcquireError::NoPermits);
    /// ```
    pub fn try_acquire(&self, n: usize) -> Result<Permit<'_>, TryAcquireError> {
        self.try_take(n)?;
        Ok(Permit {
            sem: self,
            permits: n,
        })
    }

    /// Like [`acquire`](Self::acquire), for an `Arc<Semaphore>`: the permit owns a
    /// reference to the semaphore, so it can move into a spawned task. The
    /// future is the named type [`AcquireOwned`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// use volt_sem::Semaphore;
    /// # futures::executor::block_on(async {
    /// let sem = Arc::new(Semaphore::new(3));
    /// let permit = sem.clone().acquire_owned(2).await.unwrap();
    /// let task = std::thread::spawn(move || {
    ///     let _held_here = permit; // released when the thread is done
    /// });
    /// task.join().unwrap();
    /// assert_eq!(sem.available_permits(), 3);
    /// # });
    /// ```
    pub fn acquire_owned(self: Arc<Self>, n: usize) -> AcquireOwned {
        AcquireOwned {
            sem: Some(self),
            request: Request::new(n),
        }
    }

    /// Like [`try_acquire`](Self::try_acquire), for an `Arc<Semaphore>`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let sem = Arc::new(volt_sem::Semaphore::new(1));
    /// let permit = sem.clone().try_acquire_owned(1).unwrap();
    /// assert!(sem.clone().try_acquire_owned(1).is_err());
    /// drop(permit);
    /// ```
    pub fn try_acquire_owned(self: Arc<Self>, n: usize) -> Result<OwnedPermit, TryAcquireError> {
        self.try_take(n)?;
        Ok(OwnedPermit {
            sem: self,
            permits: n,
        })
    }

    /// Adds `n` permits: to the queue's head first, in FIFO order, the surplus
    /// to the counter (tokio's `add_permits`). Use it where the count is the
    /// program's own; [`release`](Self::release) is the form that returns the
    /// overflow as an error value.
    ///
    /// # Panics
    /// If the available permits would exceed [`MAX_PERMITS`](Self::MAX_PERMITS)
    /// (nothing was added then), or as [`release`](Self::release) does when a
    /// `Waker` panics.
    ///
    /// ```
    /// let sem = volt_sem::Semaphore::new(0);
    /// sem.add_permits(3);
    /// assert_eq!(sem.available_permits(), 3);
    /// ```
    pub fn add_permits(&self, n: usize) {
        // Counted first (an `inspect` meanwhile sees them as held, not lost);
        // a count that cannot fit is never counted: `added` saturates, and
        // taking back a saturated `n` would wipe the whole total.
        let counted = n <= Self::MAX_PERMITS;
        if counted {
            self.added(n);
        }
        if let Err(e) = self.release(n) {
            if counted {
                // Only what was not released: in the one race `release`
                // documents, the permits already handed to waiters stay.
                self.forgotten(e.unreleased());
            }
            panic!(
                "volt-sem: add_permits({n}) would exceed MAX_PERMITS ({}); {} permits not added",
                Self::MAX_PERMITS,
                e.unreleased()
            );
        }
    }

    /// Wraps `n` permits the caller already owns (for instance after
    /// [`finish_raw`](crate::raw::RawSemaphore::finish_raw) returned `Granted`) into a guard.
    pub(crate) fn permit_from_raw(&self, n: usize) -> Permit<'_> {
        Permit {
            sem: self,
            permits: n,
        }
    }
}
