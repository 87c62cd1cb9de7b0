//! The waiter: one caller-owned node that can queue on either backend.
//!
//! The local and the shared semaphore queue the same waiter type
//! (`volt_sem::Waiter`, which volt-sem-shm's `ShmWaiter` is), so one serves
//! both; a Redis waiter sits beside it (with the `redis` feature), not in an
//! enum: a binding initialises its waiter before it knows which semaphore it
//! will queue on (C's `volt_waiter_init`), and switching an enum's variant
//! in place would race with a reader of the other variant's state on
//! another thread (C's `volt_waiter_status` may run concurrently). `kind`
//! says which backend the current request uses (written by the owner in
//! `acquire_raw`, before the request can be seen by anyone, like the core
//! waiter's own request fields).
//!
//! Every backend's callbacks run through the core's one per-thread
//! trampoline (`volt_sem::raw::delivery`), so [`Waiter::in_own_callback`]
//! and [`Waiter::callback_pending_here`] answer for every backend, and
//! callbacks never nest, across backends too.

use core::pin::Pin;
use core::sync::atomic::{AtomicU8, Ordering};

use volt_sem::raw::{current_backend, Backend, Node};
use volt_sem::WaiterState;
#[cfg(feature = "redis")]
use volt_sem_redis::RedisWaiter;

/// Which backend a waiter was last queued on.
pub(crate) mod kind {
    pub(crate) const NONE: u8 = 0;
    pub(crate) const LOCAL: u8 = 1;
    pub(crate) const SHARED: u8 = 2;
    #[cfg(feature = "redis")]
    pub(crate) const REDIS: u8 = 3;
}

/// A queue node for one pending acquire on a [`Semaphore`](crate::Semaphore)
/// of either backend, embedded in caller-owned memory (a C `volt_waiter`, a
/// binding's object). Pinned while busy, like [`volt_sem::Waiter`].
///
/// Dropping a busy waiter aborts the process (as both inner waiters do): the
/// queue would otherwise point to freed memory.
pub struct Waiter {
    /// The local and the shared semaphore's waiter (`ShmWaiter` is this type).
    local: volt_sem::Waiter,
    #[cfg(feature = "redis")]
    redis: RedisWaiter,
    kind: AtomicU8,
}

volt_sem::waiter_impls!(Waiter);

/// Whether this thread is running the wake callback of a waiter queued on a
/// shared or Redis semaphore: it is then that process's doorbell thread of
/// the name, or a Redis handle's agent thread, which run nothing but such
/// callbacks (or, for Redis, a thread of this process inside a release or a
/// lost session's cleanup). A binding that defers work "until the releasing
/// call returns" (Python's check for closed loops) must not defer it there:
/// on the first two, no call of its own will ever return.
pub fn in_shared_callback() -> bool {
    matches!(current_backend(), Some(Backend::Shared | Backend::Redis))
}

impl Waiter {
    /// A new, idle waiter.
    pub fn new() -> Self {
        Waiter {
            local: volt_sem::Waiter::new(),
            #[cfg(feature = "redis")]
            redis: RedisWaiter::new(),
            kind: AtomicU8::new(kind::NONE),
        }
    }

    #[inline]
    pub(crate) fn kind(&self) -> u8 {
        self.kind.load(Ordering::Relaxed)
    }

    /// Owner only, while not busy.
    #[inline]
    pub(crate) fn set_kind(&self, k: u8) {
        self.kind.store(k, Ordering::Relaxed);
    }

    #[inline]
    pub(crate) fn local(self: Pin<&Self>) -> Pin<&volt_sem::Waiter> {
        // SAFETY: structural pinning: the field never moves out of the pinned
        // waiter, and `Waiter` has no `Unpin` impl nor a moving `Drop`.
        unsafe { self.map_unchecked(|w| &w.local) }
    }

    #[cfg(feature = "redis")]
    pub(crate) fn redis(self: Pin<&Self>) -> Pin<&RedisWaiter> {
        // SAFETY: as for `local`.
        unsafe { self.map_unchecked(|w| &w.redis) }
    }

    #[cfg(feature = "redis")]
    pub(crate) fn redis_ref(&self) -> &RedisWaiter {
        &self.redis
    }

    /// The inner local (and shared) waiter (e.g. for
    /// [`volt_sem::Waiter::belongs_to`]).
    pub(crate) fn local_ref(&self) -> &volt_sem::Waiter {
        &self.local
    }

    /// The protocol node of the inner waiter the current (or last) request
    /// used: every backend's waiter embeds one (`volt_sem::raw::Node`), so
    /// the questions below are asked once, whatever the backend.
    fn node(&self) -> Option<&Node> {
        match self.kind() {
            kind::LOCAL | kind::SHARED => Some(self.local.node()),
            #[cfg(feature = "redis")]
            kind::REDIS => Some(self.redis.node()),
            _ => None,
        }
    }

    /// Where the current (or last) request stands. `Granted` and `Closed` may
    /// be reported just before the callback has run, as for
    /// [`volt_sem::Waiter::state`]. A failed Redis request holds nothing and
    /// reads `Closed` (its phase is `CLOSED`'s); its error comes with
    /// `finish_raw`.
    #[inline]
    pub fn state(&self) -> WaiterState {
        self.node().map_or(WaiterState::Idle, Node::state)
    }

    /// Whether a semaphore still uses this waiter: queued, or its callback has
    /// not returned. A busy waiter must not be re-queued, moved or freed. A
    /// Redis waiter stays busy until `finish_raw` collected its outcome (it
    /// may hold an error), as `volt_sem_redis::RedisWaiter::is_busy` says.
    #[inline]
    pub fn is_busy(&self) -> bool {
        match self.kind() {
            #[cfg(feature = "redis")]
            kind::REDIS => self.redis.is_busy(),
            _ => self.node().is_some_and(Node::is_busy),
        }
    }

    /// The permits of the current (or last) request.
    #[inline]
    pub fn requested(&self) -> usize {
        match self.kind() {
            kind::LOCAL | kind::SHARED => self.local.requested(),
            #[cfg(feature = "redis")]
            kind::REDIS => self.redis.requested(),
            _ => 0,
        }
    }

    /// The fencing token of the last grant collected through this waiter (a
    /// `Ready` acquire or a `Granted` finish) on a Redis semaphore; `None`
    /// for the other backends and before any grant.
    pub fn token(&self) -> Option<u64> {
        match self.kind() {
            #[cfg(feature = "redis")]
            kind::REDIS => Some(self.redis.token()).filter(|&t| t != 0),
            _ => None,
        }
    }

    /// The Redis session of the last request (see
    /// `Semaphore::lease_watch`, with the `redis` feature); 0 for the
    /// other backends.
    pub fn session(&self) -> u64 {
        match self.kind() {
            #[cfg(feature = "redis")]
            kind::REDIS => self.redis.session(),
            _ => 0,
        }
    }

    /// Whether this thread is running this waiter's wake callback now; there,
    /// `finish_raw` collects the outcome at once and the waiter stays busy
    /// until the callback returns.
    #[inline]
    pub fn in_own_callback(&self) -> bool {
        self.node().is_some_and(Node::in_own_callback)
    }

    /// Whether this waiter's callback is still to run on this thread, after
    /// the one running now (the same release, close or cancel completed
    /// both): `finish_raw` here then takes its outcome at once and the
    /// callback is never called.
    #[inline]
    pub fn callback_pending_here(&self) -> bool {
        self.node().is_some_and(Node::callback_pending_here)
    }

    /// Whether a request on a local semaphore is still linked in a queue by the
    /// parent of this forked process (closed for this process; see
    /// [`volt_sem::Waiter::queued_before_fork`]). `false` for the other
    /// backends, whose handles refuse to work after `fork()`.
    #[inline]
    pub fn queued_before_fork(&self) -> bool {
        self.kind() == kind::LOCAL && self.local.queued_before_fork()
    }

    /// Whether this is a forked child's copy of a local request whose wake
    /// callback a thread of the parent was delivering at the fork (see
    /// [`volt_sem::Waiter::callback_lost_to_fork`]): it never returns here,
    /// and `finish_raw` takes the outcome at once. `false` for the other
    /// backends, whose handles refuse to work after `fork()`.
    #[inline]
    pub fn callback_lost_to_fork(&self) -> bool {
        self.kind() == kind::LOCAL && self.local.callback_lost_to_fork()
    }

    /// Whether the current (or last) request went to a shared semaphore.
    pub fn is_shared(&self) -> bool {
        self.kind() == kind::SHARED
    }

    /// Whether the current (or last) request went to a Redis semaphore.
    pub fn is_redis(&self) -> bool {
        #[cfg(feature = "redis")]
        {
            self.kind() == kind::REDIS
        }
        #[cfg(not(feature = "redis"))]
        {
            false
        }
    }
}
