//! The local side of a queued request: a node in caller-owned memory (a
//! future, a C struct, a binding's object), found by the agent thread through
//! the handle's waiter table when the request's notification arrives.
//!
//! * `phase`: read by anyone. IDLE -> WAITING by the owner before the
//!   acquire script is sent (it is in the table from then on); WAITING ->
//!   NOTIFYING by whoever removes it from the table to complete it (the agent
//!   on a notification or a heartbeat's reconciliation, or a thread that
//!   found the session lost), which sets `outcome` first; NOTIFYING -> DONE
//!   by that notifier after the callback returned (its last access);
//!   WAITING -> IDLE by the owner's `finish_raw` when it removed the waiter
//!   itself (a cancel).
//! * `ctr`, `requested`, `wake`: written by the owner while the waiter is
//!   not in the table, read by the notifier after it removed it.

use core::ffi::c_void;
use core::marker::PhantomPinned;
use std::cell::{Cell, RefCell, UnsafeCell};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicU8, Ordering};
use std::sync::Mutex;

use volt_sem::WakeFn;

use crate::error::Error;

pub(crate) mod phase {
    pub(crate) const IDLE: u8 = 0;
    pub(crate) const WAITING: u8 = 1;
    pub(crate) const NOTIFYING: u8 = 2;
    pub(crate) const DONE: u8 = 3;
    /// Still NOTIFYING, but the callback itself consumed the outcome.
    pub(crate) const CONSUMED: u8 = 4;
}

/// How a queued request ended, as [`finish_raw`](crate::RedisSemaphore::finish_raw)
/// reports it (and consumes it). volt-sem's `Finish`, plus the outcomes a
/// network adds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finish {
    /// Removed from the queue before its grant was complete; `returned`
    /// permits it had collected were handed on to the next in line.
    Cancelled {
        /// The partial grant handed on.
        returned: usize,
    },
    /// Fully granted: the caller holds the permits, fenced by `token`.
    Granted {
        /// The grant's fencing token.
        token: u64,
    },
    /// The semaphore was closed while the request was queued.
    Closed,
    /// The request failed: [`Error::LeaseExpired`], [`Error::StateLost`] or
    /// [`Error::Connection`].
    Failed(Error),
    /// Not queued (never used, or already finished).
    Idle,
}

/// What a waiter knows, as seen by [`RedisWaiter::state`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RedisWaiterState {
    /// Not queued.
    Idle,
    /// Queued.
    Waiting,
    /// Complete (granted, closed or failed); its callback may still be running.
    Done,
}

/// A queued request of this process in caller-owned memory. Must stay pinned
/// from a `Pending` [`acquire_raw`](crate::RedisSemaphore::acquire_raw) until
/// [`finish_raw`](crate::RedisSemaphore::finish_raw) returned.
pub struct RedisWaiter {
    pub(crate) phase: AtomicU8,
    pub(crate) ctr: AtomicU64,
    pub(crate) requested: AtomicU64,
    pub(crate) token: AtomicU64,
    /// The handle's session epoch of the last request.
    pub(crate) epoch: AtomicU64,
    pub(crate) sem: AtomicPtr<()>,
    pub(crate) wake: UnsafeCell<Option<(WakeFn, *mut c_void)>>,
    pub(crate) outcome: Mutex<Option<Finish>>,
    _pinned: PhantomPinned,
}

// SAFETY: shared access goes through atomics, the `outcome` mutex, or the
// handle's state mutex (the table); `wake` is written only while the waiter
// is unpublished and read only by the single notifier that removed it from
// the table. `ctx` is the caller's contract, as in volt-sem's `Waiter`.
unsafe impl Send for RedisWaiter {}
// SAFETY: as above.
unsafe impl Sync for RedisWaiter {}

impl Default for RedisWaiter {
    fn default() -> Self {
        Self::new()
    }
}

impl core::fmt::Debug for RedisWaiter {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RedisWaiter")
            .field("state", &self.state())
            .field("requested", &self.requested())
            .finish_non_exhaustive()
    }
}

impl Drop for RedisWaiter {
    /// A waiter dropped while busy would leave a dangling pointer in the
    /// waiter table (the `unsafe` contract of `acquire_raw` forbids it):
    /// abort rather than corrupt memory, as volt-sem's `Waiter` does.
    fn drop(&mut self) {
        if self.is_busy() {
            eprintln!("volt-sem-redis: a RedisWaiter was dropped while queued; aborting");
            std::process::abort();
        }
    }
}

impl RedisWaiter {
    /// A new, idle waiter.
    pub const fn new() -> Self {
        RedisWaiter {
            phase: AtomicU8::new(phase::IDLE),
            ctr: AtomicU64::new(0),
            requested: AtomicU64::new(0),
            token: AtomicU64::new(0),
            epoch: AtomicU64::new(0),
            sem: AtomicPtr::new(core::ptr::null_mut()),
            wake: UnsafeCell::new(None),
            outcome: Mutex::new(None),
            _pinned: PhantomPinned,
        }
    }

    /// Where the request stands.
    pub fn state(&self) -> RedisWaiterState {
        match self.phase.load(Ordering::Acquire) {
            phase::IDLE => RedisWaiterState::Idle,
            phase::WAITING => RedisWaiterState::Waiting,
            _ => RedisWaiterState::Done,
        }
    }

    /// Whether `finish_raw` must still be called before the waiter may be
    /// dropped or reused.
    pub fn is_busy(&self) -> bool {
        self.phase.load(Ordering::Acquire) != phase::IDLE
    }

    /// Permits asked for by the last request.
    pub fn requested(&self) -> usize {
        self.requested.load(Ordering::Relaxed) as usize
    }

    /// The fencing token of the last grant collected through this waiter
    /// (a `Ready` acquire or a `Granted` finish); 0 before any.
    pub fn token(&self) -> u64 {
        self.token.load(Ordering::Relaxed)
    }

    /// The session of the handle the last request ran in (its grant is held
    /// by that session): pass it to [`lease_watch`](crate::RedisSemaphore::lease_watch)
    /// to learn when the grant is lost.
    pub fn session(&self) -> u64 {
        self.epoch.load(Ordering::Relaxed)
    }

    /// The outcome of a completed request, not yet collected by
    /// `finish_raw` (which consumes it); `None` while queued or idle.
    pub fn peek_outcome(&self) -> Option<Finish> {
        self.outcome
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub(crate) fn take_outcome(&self) -> Finish {
        self.outcome
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .unwrap_or(Finish::Idle)
    }
}

thread_local! {
    /// The waiter whose callback this thread is running (so that `finish_raw`
    /// called from inside the callback returns at once).
    pub(crate) static CURRENT: Cell<*const RedisWaiter> = const { Cell::new(core::ptr::null()) };
    /// Waiters completed on this thread whose callbacks have not run yet, in
    /// completion order (see [`deliver`]).
    static PENDING: RefCell<VecDeque<*const RedisWaiter>> = const { RefCell::new(VecDeque::new()) };
    /// Whether this thread is inside [`deliver`]'s loop.
    static DELIVERING: Cell<bool> = const { Cell::new(false) };
}

/// Runs the callbacks of completed waiters, one after another, never nested.
///
/// Callbacks run on the agent thread, on a releasing thread (a release that
/// completed waiters of its own session) and on a thread that found the
/// session lost; a callback may itself release or lose the session and so
/// complete more waiters. Those are appended to this thread's pending queue
/// and run by the outermost `deliver` after the current callback returned,
/// so a chain of callbacks that each release to the next runs in constant
/// stack, whatever its length (as in volt-sem's own delivery).
///
/// A callback may call `finish_raw` on a sibling completed in the same batch
/// whose callback has not run yet: [`take_pending`] takes it off the queue
/// (its callback never runs; `finish_raw` returns its outcome at once)
/// instead of waiting for a callback that only this thread would run.
pub(crate) fn deliver(claimed: impl IntoIterator<Item = Claimed>) {
    PENDING.with(|q| q.borrow_mut().extend(claimed.into_iter().map(|c| c.0)));
    if DELIVERING.with(|d| d.replace(true)) {
        return; // the outer loop on this thread runs them
    }
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            let _ = DELIVERING.try_with(|d| d.set(false));
        }
    }
    let _reset = Reset;
    while let Some(w) = PENDING.with(|q| q.borrow_mut().pop_front()) {
        Claimed(w).notify();
    }
}

/// Takes `w` off this thread's pending queue if it is there (its callback
/// has not run and now never will). Pointer comparison only: a waiter that
/// is not queued here is not touched.
pub(crate) fn take_pending(w: *const RedisWaiter) -> bool {
    PENDING.with(|q| {
        let mut q = q.borrow_mut();
        match q.iter().position(|&p| core::ptr::eq(p, w)) {
            Some(i) => {
                q.remove(i);
                true
            }
            None => false,
        }
    })
}

/// A waiter removed from the table with its outcome set, to be woken after
/// the state lock is released, through [`deliver`].
pub(crate) struct Claimed(pub(crate) *const RedisWaiter);

// SAFETY: the waiter stays valid until its phase leaves NOTIFYING (the
// contract of `acquire_raw`), and only the claimer touches it until then.
unsafe impl Send for Claimed {}

impl Claimed {
    /// Sets the outcome and the NOTIFYING phase; called under the state lock
    /// right after the waiter left the table.
    ///
    /// # Safety
    /// The waiter is valid (it was in the table).
    pub(crate) unsafe fn claim(w: *const RedisWaiter, outcome: Finish) -> Claimed {
        // SAFETY: per the contract.
        let wr = unsafe { &*w };
        if let Finish::Granted { token } = outcome {
            wr.token.store(token, Ordering::Relaxed);
        }
        *wr.outcome.lock().unwrap_or_else(|e| e.into_inner()) = Some(outcome);
        wr.phase.store(phase::NOTIFYING, Ordering::Release);
        Claimed(w)
    }

    /// Runs the callback, then publishes DONE (the last access). Only
    /// through [`deliver`].
    fn notify(self) {
        // SAFETY: valid until the phase leaves NOTIFYING (below).
        let w = unsafe { &*self.0 };
        // SAFETY: the waiter is out of the table; only this notifier reads `wake`.
        let wake = unsafe { *w.wake.get() };
        if let Some((f, ctx)) = wake {
            let prev = CURRENT.with(|c| c.replace(self.0));
            // A panicking callback must not take the agent thread down; the
            // C contract forbids unwinding anyway.
            // SAFETY: the waker contract of `acquire_raw`.
            let _ = std::panic::catch_unwind(|| unsafe { f(ctx) });
            CURRENT.with(|c| c.set(prev));
        }
        if w.phase
            .compare_exchange(
                phase::NOTIFYING,
                phase::DONE,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_err()
        {
            // The callback consumed the outcome itself (CONSUMED).
            w.phase.store(phase::IDLE, Ordering::Release);
        }
    }
}
