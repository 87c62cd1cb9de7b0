//! The local side of a queued request: a node in caller-owned memory (a
//! future, a C struct, a binding's object), found by the agent thread through
//! the handle's waiter table when the request's notification arrives.
//!
//! * `node`: the protocol of `volt_sem::raw`. IDLE -> WAITING by the owner
//!   before the acquire script is sent (it is in the table from then on);
//!   WAITING -> NOTIFYING_* by whoever removes it from the table to complete
//!   it (the door or agent on a reply, a notification or a heartbeat's
//!   reconciliation, or a thread that found the session lost), which sets
//!   `outcome` first (`NOTIFYING_GRANTED` for a grant, `NOTIFYING_CLOSED`
//!   for every other end); the trampoline then runs the callback and stores
//!   the final phase; WAITING -> IDLE by the owner's `finish_raw` when it
//!   removed the waiter itself (a cancel).
//! * `ctr`, `requested`, the callback: written by the owner while the waiter
//!   is not in the table, read by the notifier after it removed it.

use core::marker::PhantomPinned;
use core::ptr::NonNull;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::sync::Mutex;

use volt_sem::raw::{self, phase, Backend, Node};

use crate::error::Error;

/// How a queued request ended, as [`finish_raw`](crate::RawSemaphore::finish_raw)
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

/// What [`expire_raw`](crate::RedisSemaphore::expire_raw) did with a
/// request whose owner's deadline passed: the core's
/// [`Expiry`](volt_sem::raw::Expiry) over this crate's [`Finish`].
/// `Finished`: ended as by [`finish_raw`](crate::RawSemaphore::finish_raw)
/// (a request queued in Redis: cancelled, its partial grant handed on; or
/// one unanswered for its whole grace: cancelled, a grant answered later
/// given back). `Deferred { until }`: left to its acquire script's answer,
/// which has not come yet (or has completed it, its callback run or
/// coming); `until` is when the acquire script was sent plus the grace
/// (see the crate's text on timeouts).
pub type Expiry = volt_sem::raw::Expiry<Finish>;

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
/// from a `Pending` [`acquire_raw`](crate::RawSemaphore::acquire_raw) until
/// [`finish_raw`](crate::RawSemaphore::finish_raw) returned.
pub struct RedisWaiter {
    pub(crate) node: Node,
    pub(crate) ctr: AtomicU64,
    pub(crate) requested: AtomicU64,
    pub(crate) token: AtomicU64,
    /// The handle's session epoch of the last request.
    pub(crate) epoch: AtomicU64,
    pub(crate) sem: AtomicPtr<()>,
    pub(crate) outcome: Mutex<Option<Finish>>,
    _pinned: PhantomPinned,
}

volt_sem::waiter_impls!(RedisWaiter);

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
            node: Node::new(Backend::Redis),
            ctr: AtomicU64::new(0),
            requested: AtomicU64::new(0),
            token: AtomicU64::new(0),
            epoch: AtomicU64::new(0),
            sem: AtomicPtr::new(core::ptr::null_mut()),
            outcome: Mutex::new(None),
            _pinned: PhantomPinned,
        }
    }

    /// Where the request stands.
    pub fn state(&self) -> RedisWaiterState {
        match self.node.phase(Ordering::Acquire) {
            phase::IDLE => RedisWaiterState::Idle,
            phase::WAITING => RedisWaiterState::Waiting,
            _ => RedisWaiterState::Done,
        }
    }

    /// Whether `finish_raw` must still be called before the waiter may be
    /// dropped or reused.
    pub fn is_busy(&self) -> bool {
        self.node.phase(Ordering::Acquire) != phase::IDLE
    }

    /// Whether this thread is running this waiter's wake callback now.
    pub fn in_own_callback(&self) -> bool {
        self.node.in_own_callback()
    }

    /// Whether this waiter's callback is still to run on this thread, after
    /// the one running now (see `volt_sem::Waiter::callback_pending_here`).
    pub fn callback_pending_here(&self) -> bool {
        self.node.callback_pending_here()
    }

    /// The protocol node (`volt_sem::raw`) inside this waiter.
    pub fn node(&self) -> &Node {
        &self.node
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

/// Runs the callbacks of claimed waiters through this thread's trampoline
/// (`volt_sem::raw::delivery`): one after another, never nested, in
/// constant stack however long a chain of callbacks that release to the
/// next gets, and after the current callback if one runs here.
///
/// Callbacks run on the door and agent threads, on a releasing thread (a
/// release that completed waiters of its own session) and on a thread that
/// found the session lost.
pub(crate) fn deliver(claimed: impl IntoIterator<Item = Claimed>) {
    // SAFETY: every `Claimed` was made by `Claimed::claim` under the state
    // lock (now released): NOTIFYING, out of the table, owned by this thread.
    unsafe { raw::deliver(claimed.into_iter().map(|c| NonNull::from(&(*c.0).node))) };
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
        let granted = matches!(outcome, Finish::Granted { .. });
        if let Finish::Granted { token } = outcome {
            wr.token.store(token, Ordering::Relaxed);
        }
        *wr.outcome.lock().unwrap_or_else(|e| e.into_inner()) = Some(outcome);
        // Release: the owner's Acquire load of the phase sees the outcome.
        wr.node
            .set_phase(phase::notifying(granted), Ordering::Release);
        Claimed(w)
    }
}
