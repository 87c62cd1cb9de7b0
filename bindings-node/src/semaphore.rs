//! [`Sem`]: one semaphore as this binding sees it, shared (through `Arc`) by
//! every environment holding a handle to it: the core semaphore (in-process,
//! or named and shared by processes: `volt_sem_backend::Semaphore`) plus the
//! binding's bookkeeping (held permits, queued requests, the `removePermits`
//! debt and its orphans, whether it is shared or abandoned) and, for a Redis
//! one, the watches on the sessions that hold its grants ([`crate::lease`]).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use volt_sem_backend::{Kind, Semaphore as Core};

use crate::debt::Debt;
use crate::lease::Watch;
use crate::registry::NEXT_SEM_ID;
use crate::removal::OrphanNode;

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
}

impl Sem {
    /// A new semaphore around `core`. `shared`: its waiters may be granted by
    /// another thread (named and Redis semaphores: a doorbell or agent thread)
    /// and their grants are delivered with confirmation.
    pub(crate) fn new(core: Core, name: Option<Box<str>>) -> Arc<Sem> {
        let shared = core.kind() != Kind::Local;
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
        })
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
