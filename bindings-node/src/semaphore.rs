//! [`Sem`]: one semaphore as this binding sees it, shared (through `Arc`) by
//! every environment holding a handle to it: the core semaphore (in-process,
//! or named and shared by processes: `volt_sem_backend::Semaphore`) plus the
//! binding's bookkeeping (held permits, queued requests, the `removePermits`
//! debt and its orphans, whether it is shared or abandoned) and, for a Redis
//! one, the watches on the sessions that hold its grants ([`crate::lease`]);
//! and [`Node`], the queue node of one request on it.
//!
//! The two are one file because each holds the other: a node its semaphore,
//! a semaphore its orphaned nodes (see [`crate::removal`]). Its `Drop` is the
//! registry's ([`crate::registry`]): leaving the registry is what it does.

use std::cell::{Cell, RefCell};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use volt_sem_backend::{
    Expiry, Finish, Kind, RawSemaphore, Semaphore as Core, Waiter as CoreWaiter,
};

use crate::debt::Debt;
use crate::remote::EnvShared;
use crate::watch::Watch;

/// The ids of [`Sem`]s (the registry's keys).
pub(crate) static NEXT_SEM_ID: AtomicU64 = AtomicU64::new(1);

/// [`Sem`]s alive in the process (`stats()`, for tests: what is freed when).
pub(crate) static LIVE_SEMS: AtomicUsize = AtomicUsize::new(0);

/// One semaphore, shared by every environment holding a handle to it.
///
/// `repr(C)`: `held` and `debt` are adjacent words, which the JS fast path
/// sees as one `BigInt64Array` of two (see [`crate::view`]).
#[repr(C)]
pub(crate) struct Sem {
    pub(crate) core: Core,
    pub(crate) id: u64,
    /// Set once share() or attach() touched it: waiters may then be woken from
    /// another thread, so they keep their thread alive.
    pub(crate) shared: AtomicBool,
    /// Queued requests (all threads): counted from the Pending acquire until
    /// the owning thread collected or cancelled the request.
    pub(crate) queued: AtomicUsize,
    /// A private semaphore whose JS object was garbage-collected: nobody can
    /// release or close it any more, so its waiters can be swept.
    pub(crate) abandoned: AtomicBool,
    /// Permits handed to JS (acquired) and not released since, all threads:
    /// a release first gives back held permits, the rest adds to the total.
    pub(crate) held: AtomicUsize,
    /// Permits `removePermits` still has to take out of the total: every
    /// permit coming back through this binding pays it first.
    pub(crate) debt: Debt,
    /// Cancelled requests that may hold a partial grant, left queued while
    /// `debt > 0` (a cancel would hand the partial grant on to the next waiter
    /// past the debt). Cancelled for real once the debt is paid; a grant that
    /// completes one meanwhile is released through `release_paying`.
    pub(crate) orphans: Mutex<Vec<OrphanNode>>,
    /// Orphans finished from inside their own wake callback: their memory may
    /// only be freed after it returned, so when the semaphore goes.
    pub(crate) graveyard: Mutex<Vec<OrphanNode>>,
    /// The name of a named (`Semaphore.open`) or Redis (`Semaphore.connect`)
    /// semaphore.
    pub(crate) name: Option<Box<str>>,
    /// Redis: the lease watches of this semaphore's sessions, owned here so
    /// that they (and the session clones they hold) go with the semaphore.
    pub(crate) watches: Mutex<Vec<Watch>>,
    /// Strong references to this semaphore kept for the next requests
    /// instead of dropped (see [`Sem::take_ref`]): a queued request holds
    /// one, and a private semaphore's next request takes it back without
    /// the two locked instructions of a clone and a drop.
    pub(crate) spares: AtomicUsize,
    /// Set when the private semaphore's handle went: no more spares.
    pub(crate) spares_retired: AtomicBool,
}

impl Sem {
    /// A new semaphore around `core`. `shared`: its waiters may be granted by
    /// another thread (named and Redis semaphores: a doorbell or agent thread)
    /// and their grants are delivered with confirmation.
    pub(crate) fn new(core: Core, name: Option<Box<str>>) -> Arc<Sem> {
        let shared = core.kind() != Kind::Local;
        LIVE_SEMS.fetch_add(1, Ordering::Relaxed);
        Arc::new(Sem {
            core,
            id: NEXT_SEM_ID.fetch_add(1, Ordering::Relaxed),
            shared: AtomicBool::new(shared),
            queued: AtomicUsize::new(0),
            abandoned: AtomicBool::new(false),
            held: AtomicUsize::new(0),
            debt: Debt::new(),
            orphans: Mutex::new(Vec::new()),
            graveyard: Mutex::new(Vec::new()),
            name,
            watches: Mutex::new(Vec::new()),
            spares: AtomicUsize::new(0),
            spares_retired: AtomicBool::new(false),
        })
    }

    /// A strong reference for a request on this semaphore: a spare one kept
    /// by [`put_ref`](Self::put_ref) if there is one, else a clone.
    ///
    /// # Spare references
    ///
    /// A queued request owns a reference to its semaphore (its waiter is
    /// linked in that semaphore's queue, and the JS object may be collected
    /// meanwhile). On a private semaphore (`alone`) its thread alone makes
    /// and ends requests, so instead of a clone (a locked increment) and a
    /// drop (a locked decrement) per request, a finished request's
    /// reference is kept, counted in `spares`, for the next one. The spares
    /// go back (`retire_spares`) when the semaphore stops being private
    /// (`share()`, on that thread) or when its one handle is finalized (on
    /// that thread too): until then the handle keeps the semaphore alive
    /// anyway, so a spare never does.
    pub(crate) fn take_ref(self: &Arc<Sem>) -> Arc<Sem> {
        let spares = self.spares.load(Ordering::Relaxed);
        if spares == 0 || !self.alone() {
            return self.clone();
        }
        // Plain load and store: only this thread touches `spares` while the
        // semaphore is private (as `add_held`).
        self.spares.store(spares - 1, Ordering::Relaxed);
        // SAFETY: `put_ref` leaked this strong reference (`Arc::into_raw`
        // of an `Arc<Sem>` to this very allocation) and counted it in
        // `spares`; taking one off the count takes that reference back.
        unsafe { Arc::from_raw(Arc::as_ptr(self)) }
    }

    /// Ends a request's reference: kept as a spare on a private semaphore
    /// whose handle is alive (see [`take_ref`](Self::take_ref)), else dropped.
    pub(crate) fn put_ref(this: Arc<Sem>) {
        if this.alone() && !this.spares_retired.load(Ordering::Relaxed) {
            this.spares
                .store(this.spares.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
            let _ = Arc::into_raw(this); // counted in `spares`
        }
    }

    /// Gives back every spare reference (see [`take_ref`](Self::take_ref)).
    /// `last`: the handle is going, no more spares are kept. On the thread of
    /// the private semaphore's handle, which still holds its own reference
    /// (so this never drops the semaphore), before `shared` is set.
    pub(crate) fn retire_spares(self: &Arc<Sem>, last: bool) {
        if last {
            self.spares_retired.store(true, Ordering::Relaxed);
        }
        let n = self.spares.swap(0, Ordering::Relaxed);
        for _ in 0..n {
            // SAFETY: each of the `n` counted spares is a strong reference
            // leaked by `put_ref`; the caller's own keeps the count above 0.
            unsafe { Arc::decrement_strong_count(Arc::as_ptr(self)) };
        }
    }

    /// Whether this is a Redis semaphore (its round trips stay off the JS thread).
    pub(crate) fn is_redis(&self) -> bool {
        self.core.kind() == Kind::Redis
    }

    /// Whether only the thread of its one JS object can reach it: a local
    /// semaphore that share() never touched (named and Redis ones are shared
    /// from the start). Its counters are then updated by that thread alone,
    /// so a load and a store do what a read-modify-write does, without its
    /// locked instruction (the JS fast path does the same, see index.js's
    /// `View`). share() sets `shared` on that thread before any other can
    /// attach, so every later update is a read-modify-write again.
    fn alone(&self) -> bool {
        !self.shared.load(Ordering::Relaxed)
    }

    pub(crate) fn add_held(&self, n: usize) {
        if self.alone() {
            self.held
                .store(self.held.load(Ordering::Relaxed) + n, Ordering::Relaxed);
        } else {
            self.held.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Held permits given back (a release beyond them adds to the total).
    pub(crate) fn sub_held(&self, n: usize) {
        if self.alone() {
            let h = self.held.load(Ordering::Relaxed);
            self.held.store(h - h.min(n), Ordering::Relaxed);
            return;
        }
        let _ = self
            .held
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |h| Some(h - h.min(n)));
    }

    /// One more queued request (see `queued`).
    pub(crate) fn queue_one(&self) {
        if self.alone() {
            self.queued
                .store(self.queued.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        } else {
            self.queued.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// One queued request less (collected or cancelled by its thread).
    pub(crate) fn unqueue_one(&self) {
        if self.alone() {
            self.queued
                .store(self.queued.load(Ordering::Relaxed) - 1, Ordering::Relaxed);
        } else {
            self.queued.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// A queue node: the waiter of one request at a time, and what its wake
/// callback needs. Boxed and pinned in a slot; reused once finished.
pub(crate) struct Node {
    pub(crate) waiter: CoreWaiter,
    /// `gen << 32 | slot` of the current request. Written by the owner while the
    /// waiter is idle; the wake callback reads it after `acquire_raw` published
    /// the waiter under the semaphore's lock.
    pub(crate) key: Cell<u64>,
    /// Owner-thread fields of the current request.
    pub(crate) n: Cell<usize>,
    pub(crate) sem: RefCell<Option<Arc<Sem>>>,
    /// Whether this request holds a reference on the tsfn.
    pub(crate) counted: Cell<bool>,
    /// The handle it was queued through, and whether that handle was ref'd.
    pub(crate) handle: Cell<u64>,
    pub(crate) refd: Cell<bool>,
    pub(crate) env: Arc<EnvShared>,
    /// The `local` list of the owning environment (its `EnvCtx`), which is
    /// also its identity: compared with [`CURRENT`](crate::remote::CURRENT),
    /// never dereferenced off-thread.
    pub(crate) owner: *const RefCell<Vec<u64>>,
    /// NOT_ORPHAN, or ORPHAN / ORPHAN_CLAIMED (see `Sem::orphans`).
    pub(crate) orphan: AtomicU8,
    /// The semaphore of an orphan (set before `orphan` becomes ORPHAN).
    pub(crate) orphan_sem: AtomicPtr<Sem>,
}

impl Node {
    pub(crate) fn waiter(self: Pin<&Self>) -> Pin<&CoreWaiter> {
        // SAFETY: structural pinning: `waiter` is never moved out of a pinned Node.
        unsafe { self.map_unchecked(|n| &n.waiter) }
    }

    /// The request's timeout passed: `expire_raw` (a Redis request not yet
    /// answered is left to the answer until its grace ends: `Deferred`, the
    /// node stays queued).
    pub(crate) fn expire(self: Pin<&Self>) -> Expiry {
        let sem = self.sem.borrow();
        match &*sem {
            // SAFETY: as in `finish`.
            Some(s) => unsafe { s.core.expire_raw(self.waiter()) },
            None => Expiry::Finished(Finish::Idle),
        }
    }

    /// Ends the request (cancel or collect). Afterwards the node may be reused.
    pub(crate) fn finish(self: Pin<&Self>) -> Finish {
        let sem = self.sem.borrow();
        match &*sem {
            // SAFETY: the waiter is idle or was last queued on this semaphore (the
            // only one of the current request), and it stays valid and pinned.
            Some(s) => unsafe { s.core.finish_raw(self.waiter()) },
            None => Finish::Idle,
        }
    }
}

/// A leaked `Pin<Box<Node>>` owned by its semaphore's orphan lists.
pub(crate) struct OrphanNode(pub(crate) *mut Node);
// SAFETY: an orphan is only touched through its atomics and `finish_raw` by
// whoever claimed it (see `Node::orphan`), and freed by the semaphore's drop.
unsafe impl Send for OrphanNode {}

impl Drop for OrphanNode {
    fn drop(&mut self) {
        // SAFETY: leaked by `orphan()` from a Box; dropped once, when the
        // semaphore (whose queue is the last thing that may reference it) goes.
        drop(unsafe { Box::from_raw(self.0) });
    }
}

// Node::orphan states.
pub(crate) const NOT_ORPHAN: u8 = 0;
pub(crate) const ORPHAN: u8 = 1;
pub(crate) const ORPHAN_CLAIMED: u8 = 2;
