//! The async API: the `Acquire` future and the RAII permits.

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};

use crate::error::{AcquireError, TryAcquireError};
use crate::semaphore::{Finish, RawAcquire, Semaphore};
use crate::sync::Ordering;
use crate::waiter::{phase, Notify, Waiter};

use std::sync::Arc;

/// Permits acquired from a [`Semaphore`], released when dropped.
#[must_use = "dropping a permit releases it at once"]
#[derive(Debug)]
pub struct Permit<'a> {
    sem: &'a Semaphore,
    permits: usize,
}

/// Permits acquired from an `Arc<Semaphore>`, released when dropped; `'static`,
/// so it can move into a spawned task.
#[must_use = "dropping a permit releases it at once"]
#[derive(Debug)]
pub struct OwnedPermit {
    sem: Arc<Semaphore>,
    permits: usize,
}

impl Permit<'_> {
    /// How many permits this holds.
    pub fn num_permits(&self) -> usize {
        self.permits
    }

    /// Consumes the permit without releasing it: the permits leave circulation.
    pub fn forget(mut self) {
        self.permits = 0;
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        // Cannot overflow: these permits came out of the semaphore (only a caller
        // who also released permits it never acquired could make this fail).
        let _ = self.sem.release(self.permits);
    }
}

impl OwnedPermit {
    /// How many permits this holds.
    pub fn num_permits(&self) -> usize {
        self.permits
    }

    /// The semaphore these permits belong to.
    pub fn semaphore(&self) -> &Arc<Semaphore> {
        &self.sem
    }

    /// Consumes the permit without releasing it: the permits leave circulation.
    pub fn forget(mut self) {
        self.permits = 0;
    }
}

impl Drop for OwnedPermit {
    fn drop(&mut self) {
        let _ = self.sem.release(self.permits);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Start,
    Queued,
    Done,
}

/// Future returned by [`Semaphore::acquire`]. Its queue node lives inside it, so
/// waiting allocates nothing. Dropping it while queued cancels the request and
/// hands any partial grant on to the next waiter.
///
/// Cancelling loses the request's place in the queue: a new `acquire` queues
/// at the tail again.
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
#[must_use = "futures do nothing unless polled"]
pub struct Acquire<'a> {
    sem: &'a Semaphore,
    permits: usize,
    stage: Stage,
    waiter: Waiter,
}

impl core::fmt::Debug for Acquire<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Acquire")
            .field("permits", &self.permits)
            .field("stage", &self.stage)
            .finish()
    }
}

impl<'a> Future for Acquire<'a> {
    type Output = Result<Permit<'a>, AcquireError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: nothing is moved out of `self`; the waiter stays where it is.
        let this = unsafe { self.get_unchecked_mut() };
        let (sem, permits) = (this.sem, this.permits);
        let ready = || Poll::Ready(Ok(Permit { sem, permits }));
        loop {
            match this.stage {
                Stage::Start => {
                    // SAFETY: the waiter is fresh, and pinned inside this future, whose
                    // Drop finishes it before the memory goes away.
                    let started = unsafe {
                        sem.start_acquire(&this.waiter, permits, || {
                            Notify::Waker(cx.waker().clone())
                        })
                    };
                    return match started {
                        Ok(RawAcquire::Ready) => {
                            this.stage = Stage::Done;
                            ready()
                        }
                        Ok(RawAcquire::Pending) => {
                            this.stage = Stage::Queued;
                            Poll::Pending
                        }
                        Err(e) => {
                            this.stage = Stage::Done;
                            Poll::Ready(Err(e))
                        }
                    };
                }
                Stage::Queued => {
                    // Acquire: pairs with the notifier's Release store, so the grant
                    // (and the releasers' critical sections) happen-before our return.
                    match this.waiter.phase.load(Ordering::Acquire) {
                        phase::GRANTED => {
                            this.waiter.phase.store(phase::IDLE, Ordering::Relaxed);
                            this.stage = Stage::Done;
                            return ready();
                        }
                        phase::CLOSED => {
                            this.waiter.phase.store(phase::IDLE, Ordering::Relaxed);
                            this.stage = Stage::Done;
                            return Poll::Ready(Err(AcquireError::Closed));
                        }
                        _ => {
                            if sem.update_waker(&this.waiter, cx.waker()) {
                                return Poll::Pending;
                            }
                            // decided meanwhile: look at the phase again
                        }
                    }
                }
                Stage::Done => panic!("`Acquire` polled after it completed"),
            }
        }
    }
}

impl Drop for Acquire<'_> {
    fn drop(&mut self) {
        if self.stage != Stage::Queued {
            return;
        }
        // SAFETY: the waiter was queued on `self.sem` and has not moved (the future
        // is pinned once polled); a Waker waiter never sits in a NOTIFYING phase,
        // so this does not wait.
        let finish = unsafe { self.sem.finish_raw(Pin::new_unchecked(&self.waiter)) };
        if finish == Finish::Granted {
            // Granted but never observed: the permits go back (and on to the next).
            let _ = self.sem.release(self.permits);
        }
    }
}

impl Semaphore {
    /// Acquires `n` permits, waiting in FIFO order behind earlier requests.
    ///
    /// Fails with [`AcquireError::Closed`] if the semaphore is (or gets) closed,
    /// and with [`AcquireError::TooManyPermits`] if `n > MAX_PERMITS`.
    /// `acquire(0)` completes at once. Cancel-safe: dropping the future gives back
    /// whatever was granted to it.
    pub fn acquire(&self, n: usize) -> Acquire<'_> {
        Acquire {
            sem: self,
            permits: n,
            stage: Stage::Start,
            waiter: Waiter::new(),
        }
    }

    /// Takes `n` permits now, or fails without waiting. Never overtakes a queued
    /// request.
    pub fn try_acquire(&self, n: usize) -> Result<Permit<'_>, TryAcquireError> {
        self.try_take(n)?;
        Ok(Permit {
            sem: self,
            permits: n,
        })
    }

    /// Like [`acquire`](Self::acquire), for an `Arc<Semaphore>`: the permit owns a
    /// reference to the semaphore.
    pub async fn acquire_owned(self: Arc<Self>, n: usize) -> Result<OwnedPermit, AcquireError> {
        self.acquire(n).await?.forget();
        Ok(OwnedPermit {
            sem: self,
            permits: n,
        })
    }

    /// Like [`try_acquire`](Self::try_acquire), for an `Arc<Semaphore>`.
    pub fn try_acquire_owned(self: Arc<Self>, n: usize) -> Result<OwnedPermit, TryAcquireError> {
        self.try_take(n)?;
        Ok(OwnedPermit {
            sem: self,
            permits: n,
        })
    }

    /// Wraps `n` permits the caller already owns (for instance after
    /// [`finish_raw`](Self::finish_raw) returned `Granted`) into a guard.
    pub(crate) fn permit_from_raw(&self, n: usize) -> Permit<'_> {
        Permit {
            sem: self,
            permits: n,
        }
    }
}
