//! [`Core`]: the semaphore under a JS `Semaphore` object, either the
//! in-process one (`new Semaphore(n)`) or a named one shared by the processes
//! of the machine (`Semaphore.open(name, n)`), behind the few operations this
//! binding needs; and [`CoreWaiter`], a queue node's waiter usable on both.
//!
//! The rest of the binding (slots, wake path, delivery, teardown) is the same
//! for both: a named semaphore's grants are completed on its doorbell thread
//! (see the `volt-sem-shm` crate docs), which for this binding is just
//! another thread, so they take the remote wake path through the env's
//! threadsafe function. What differs:
//!
//! * a named semaphore is always *shared* (its waiters keep their thread
//!   alive, its grants are delivered with confirmation);
//! * its total is fixed: `addPermits`/`removePermits` are unsupported, and a
//!   release above what this process holds fails (`NotHeld`) instead of
//!   growing the total (each process gives back its own permits, which is
//!   what lets a killed process's permits be reclaimed);
//! * its state lives in the segment, so the JS fast path (`view`) never
//!   applies to it: every operation takes the native path.

use std::ffi::c_void;
use std::pin::Pin;

use volt_sem::{Finish, RawAcquire, Semaphore, Waiter, WaiterState, WakeFn};
use volt_sem_shm::SharedSemaphore;
#[cfg(target_os = "linux")]
use volt_sem_shm::{ShmWaiter, ShmWaiterState};

/// The semaphore of one [`Sem`](crate::semaphore::Sem).
pub(crate) enum Core {
    Local(Semaphore),
    Named(SharedSemaphore),
}

/// Why a take (try_acquire, or the first step of acquire) failed.
pub(crate) enum TakeError {
    NoPermits,
    Closed,
    /// More than the semaphore can ever grant.
    TooMany,
    /// Any other failure of a named semaphore (queue full, corrupt, forked...).
    Named(volt_sem_shm::Error),
}

/// Why a release failed.
pub(crate) enum GiveError {
    /// The total would exceed the maximum (local).
    Overflow,
    /// Any failure of a named semaphore (`NotHeld` first of all).
    Named(volt_sem_shm::Error),
}

fn named_take_error(e: volt_sem_shm::Error) -> TakeError {
    use volt_sem_shm::Error as E;
    match e {
        E::NoPermits => TakeError::NoPermits,
        E::Closed => TakeError::Closed,
        E::TooManyPermits => TakeError::TooMany,
        e => TakeError::Named(e),
    }
}

impl Core {
    pub(crate) fn is_named(&self) -> bool {
        matches!(self, Core::Named(_))
    }

    /// The in-process semaphore, for the features only it has (resizing, the
    /// JS fast path on its state word).
    pub(crate) fn local(&self) -> Option<&Semaphore> {
        match self {
            Core::Local(s) => Some(s),
            Core::Named(_) => None,
        }
    }

    /// Takes `n` permits now (nobody queued, enough available), or fails.
    pub(crate) fn try_take(&self, n: usize) -> Result<(), TakeError> {
        match self {
            Core::Local(s) => match s.try_acquire(n) {
                Ok(p) => {
                    p.forget();
                    Ok(())
                }
                Err(volt_sem::TryAcquireError::NoPermits) => Err(TakeError::NoPermits),
                Err(volt_sem::TryAcquireError::Closed) => Err(TakeError::Closed),
                // TooManyPermits, and any later variant of the non_exhaustive enum.
                Err(_) => Err(TakeError::TooMany),
            },
            Core::Named(s) => s.try_acquire(n).map_err(named_take_error),
        }
    }

    /// Queues (or takes at once) an acquire of `n` permits; see
    /// `volt_sem::Semaphore::acquire_raw`.
    ///
    /// # Safety
    /// The raw waiter contract of both crates: `w` is not busy; after
    /// `Pending` it stays pinned and valid, and `ctx` valid for `wake`, until
    /// [`finish_raw`](Self::finish_raw) returned; `wake` may run on another
    /// thread.
    pub(crate) unsafe fn acquire_raw(
        &self,
        w: Pin<&CoreWaiter>,
        n: usize,
        wake: WakeFn,
        ctx: *mut c_void,
    ) -> Result<RawAcquire, TakeError> {
        match self {
            // SAFETY: forwarded contract.
            Core::Local(s) => match unsafe { s.acquire_raw(w.local(), n, wake, ctx) } {
                Ok(r) => Ok(r),
                Err(volt_sem::AcquireError::Closed) => Err(TakeError::Closed),
                Err(_) => Err(TakeError::TooMany),
            },
            #[cfg(target_os = "linux")]
            Core::Named(s) => {
                // SAFETY: forwarded contract.
                unsafe { s.acquire_raw(w.named(), n, wake, ctx) }.map_err(named_take_error)
            }
            #[cfg(not(target_os = "linux"))]
            Core::Named(_) => {
                let _ = (w, n, wake, ctx);
                Err(TakeError::Named(volt_sem_shm::Error::Unsupported))
            }
        }
    }

    /// Ends the request of `w` (cancel or collect).
    ///
    /// # Safety
    /// `w` is idle or was last queued on this semaphore.
    pub(crate) unsafe fn finish_raw(&self, w: Pin<&CoreWaiter>) -> Finish {
        match self {
            // SAFETY: forwarded contract.
            Core::Local(s) => unsafe { s.finish_raw(w.local()) },
            // SAFETY: forwarded contract (queued through a handle of this
            // process on this name: the Sem's own handle).
            #[cfg(target_os = "linux")]
            Core::Named(s) => unsafe { s.finish_raw(w.named()) },
            #[cfg(not(target_os = "linux"))]
            Core::Named(_) => Finish::Idle,
        }
    }

    pub(crate) fn release(&self, n: usize) -> Result<(), GiveError> {
        match self {
            Core::Local(s) => s.release(n).map_err(|_| GiveError::Overflow),
            Core::Named(s) => s.release(n).map_err(GiveError::Named),
        }
    }

    pub(crate) fn close(&self) {
        match self {
            Core::Local(s) => {
                s.close();
            }
            // Only fails on a corrupt or forked handle: then there is nothing
            // this process could close anyway.
            Core::Named(s) => {
                let _ = s.close();
            }
        }
    }

    pub(crate) fn available_permits(&self) -> usize {
        match self {
            Core::Local(s) => s.available_permits(),
            Core::Named(s) => s.available_permits(),
        }
    }

    pub(crate) fn is_closed(&self) -> bool {
        match self {
            Core::Local(s) => s.is_closed(),
            Core::Named(s) => s.is_closed(),
        }
    }
}

/// A queue node's waiter: one of each kind, so that a node can be reused for
/// a request on either kind of semaphore (a node is only ever queued on one
/// semaphore at a time, through the waiter of that semaphore's kind).
pub(crate) struct CoreWaiter {
    local: Waiter,
    #[cfg(target_os = "linux")]
    named: ShmWaiter,
}

impl CoreWaiter {
    pub(crate) fn new() -> Self {
        CoreWaiter {
            local: Waiter::new(),
            #[cfg(target_os = "linux")]
            named: ShmWaiter::new(),
        }
    }

    fn local(self: Pin<&Self>) -> Pin<&Waiter> {
        // SAFETY: structural pinning: the fields are never moved out.
        unsafe { self.map_unchecked(|w| &w.local) }
    }

    #[cfg(target_os = "linux")]
    fn named(self: Pin<&Self>) -> Pin<&ShmWaiter> {
        // SAFETY: structural pinning: the fields are never moved out.
        unsafe { self.map_unchecked(|w| &w.named) }
    }

    /// Whether the current request is still queued (on either kind).
    pub(crate) fn is_waiting(&self) -> bool {
        #[cfg(target_os = "linux")]
        if self.named.state() == ShmWaiterState::Waiting {
            return true;
        }
        self.local.state() == WaiterState::Waiting
    }
}
