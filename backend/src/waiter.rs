//! The waiter: one caller-owned node that can queue on either backend.
//!
//! It holds one waiter of each kind side by side, not an enum: a binding
//! initialises its waiter before it knows which semaphore it will queue on
//! (C's `volt_waiter_init`), and switching an enum's variant in place would
//! need `&mut` access to pinned memory. Only one of the two is ever in use;
//! `kind` says which (written by the owner in `acquire_raw`, before the
//! request can be seen by anyone, like the core waiter's own request fields).
//!
//! Shared and Redis waiters are called back through [`trampoline`], which
//! marks the waiter as the one whose callback runs on this thread, so that
//! [`Waiter::in_own_callback`] answers for every backend (the local core
//! tracks its own callbacks; the shm and Redis crates do not expose it).

use core::cell::{Cell, UnsafeCell};
use core::ffi::c_void;
use core::pin::Pin;
use core::sync::atomic::{AtomicU8, Ordering};

use volt_sem::{WaiterState, WakeFn};
#[cfg(feature = "redis")]
use volt_sem_redis::{RedisWaiter, RedisWaiterState};
#[cfg(target_os = "linux")]
use volt_sem_shm::{ShmWaiter, ShmWaiterState};

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
    local: volt_sem::Waiter,
    #[cfg(target_os = "linux")]
    shared: ShmWaiter,
    #[cfg(feature = "redis")]
    redis: RedisWaiter,
    kind: AtomicU8,
    /// The caller's callback for a shared or Redis request, called by the
    /// trampoline.
    /// Owner field: written before the request is queued, read by the
    /// trampoline after the shm crate published the grant.
    wake: UnsafeCell<Option<(WakeFn, *mut c_void)>>,
}

// SAFETY: the inner waiters are Send + Sync; `kind` is atomic; `wake` is
// written only by the owner while the waiter is not busy (no trampoline can
// run) and read by the trampoline, which the shm and Redis crates order after
// the queueing (their waiter-table locks). `ctx` is the caller's contract, as for
// the inner waiters.
unsafe impl Send for Waiter {}
// SAFETY: as above.
unsafe impl Sync for Waiter {}

impl Default for Waiter {
    fn default() -> Self {
        Self::new()
    }
}

impl core::fmt::Debug for Waiter {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Waiter")
            .field("state", &self.state())
            .field("requested", &self.requested())
            .finish_non_exhaustive()
    }
}

thread_local! {
    /// The shared or Redis waiter whose callback runs on this thread now
    /// (the shm doorbell thread and the Redis agent call them one after
    /// another; a callback that loses a Redis session may complete others
    /// inside it, hence the saved and restored previous mark).
    static CURRENT: Cell<*const Waiter> = const { Cell::new(core::ptr::null()) };
}

/// The callback the shm and Redis crates call for a backend waiter: runs the
/// caller's callback with the caller's context, marked as "inside" for
/// [`Waiter::in_own_callback`].
pub(crate) unsafe extern "C" fn trampoline(ctx: *mut c_void) {
    // SAFETY: `ctx` is the pinned `Waiter` given to `acquire_raw`, valid until
    // `finish_raw` returned, which waits for this callback to return.
    let w = unsafe { &*(ctx as *const Waiter) };
    // SAFETY: written by the owner before queueing; not written again while
    // the waiter is busy (it is: this callback has not returned).
    let wake = unsafe { *w.wake.get() };
    if let Some((wake, user_ctx)) = wake {
        let prev = CURRENT.with(|c| c.replace(w));
        // Restores the previous mark even if `wake` unwinds (a Rust callback's
        // panic; a foreign unwind aborts at the shm crate's boundary).
        struct Restore(*const Waiter);
        impl Drop for Restore {
            fn drop(&mut self) {
                let prev = self.0;
                let _ = CURRENT.try_with(|c| c.set(prev));
            }
        }
        let _restore = Restore(prev);
        // SAFETY: the caller of `acquire_raw` made `wake(ctx)` callable once,
        // from any thread, until `finish_raw` returned.
        unsafe { wake(user_ctx) };
    }
}

/// Whether this thread is running the wake callback of a waiter queued on a
/// shared or Redis semaphore: it is then that process's doorbell thread of
/// the name, or a Redis handle's agent thread, which run nothing but such
/// callbacks (or, for Redis, a thread of this process inside a release or a
/// lost session's cleanup). A binding that defers work "until the releasing
/// call returns" (Python's check for closed loops) must not defer it there:
/// on the first two, no call of its own will ever return.
pub fn in_shared_callback() -> bool {
    CURRENT.try_with(|c| !c.get().is_null()).unwrap_or(false)
}

impl Waiter {
    /// A new, idle waiter.
    pub fn new() -> Self {
        Waiter {
            local: volt_sem::Waiter::new(),
            #[cfg(target_os = "linux")]
            shared: ShmWaiter::new(),
            #[cfg(feature = "redis")]
            redis: RedisWaiter::new(),
            kind: AtomicU8::new(kind::NONE),
            wake: UnsafeCell::new(None),
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

    /// Owner only, while not busy (no trampoline can be running).
    pub(crate) unsafe fn set_wake(&self, wake: WakeFn, ctx: *mut c_void) {
        // SAFETY: forwarded contract: nobody else reads or writes it now.
        unsafe { *self.wake.get() = Some((wake, ctx)) };
    }

    #[inline]
    pub(crate) fn local(self: Pin<&Self>) -> Pin<&volt_sem::Waiter> {
        // SAFETY: structural pinning: the field never moves out of the pinned
        // waiter, and `Waiter` has no `Unpin` impl nor a moving `Drop`.
        unsafe { self.map_unchecked(|w| &w.local) }
    }

    #[cfg(target_os = "linux")]
    pub(crate) fn shared(self: Pin<&Self>) -> Pin<&ShmWaiter> {
        // SAFETY: as for `local`.
        unsafe { self.map_unchecked(|w| &w.shared) }
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

    /// The inner local waiter (e.g. for [`volt_sem::Waiter::belongs_to`]).
    pub(crate) fn local_ref(&self) -> &volt_sem::Waiter {
        &self.local
    }

    #[cfg(target_os = "linux")]
    pub(crate) fn shared_ref(&self) -> &ShmWaiter {
        &self.shared
    }

    /// Where the current (or last) request stands. `Granted` and `Closed` may
    /// be reported just before the callback has run, as for
    /// [`volt_sem::Waiter::state`].
    #[inline]
    pub fn state(&self) -> WaiterState {
        match self.kind() {
            kind::LOCAL => self.local.state(),
            #[cfg(target_os = "linux")]
            kind::SHARED => match self.shared.state() {
                ShmWaiterState::Idle => WaiterState::Idle,
                ShmWaiterState::Waiting => WaiterState::Waiting,
                ShmWaiterState::Granted => WaiterState::Granted,
                ShmWaiterState::Closed => WaiterState::Closed,
            },
            // A failed request holds nothing, like a closed one; its error
            // comes with `finish_raw`.
            #[cfg(feature = "redis")]
            kind::REDIS => match self.redis.state() {
                RedisWaiterState::Idle => WaiterState::Idle,
                RedisWaiterState::Waiting => WaiterState::Waiting,
                RedisWaiterState::Done => match self.redis.peek_outcome() {
                    Some(volt_sem_redis::Finish::Granted { .. }) => WaiterState::Granted,
                    _ => WaiterState::Closed,
                },
            },
            _ => WaiterState::Idle,
        }
    }

    /// Whether a semaphore still uses this waiter: queued, or its callback has
    /// not returned. A busy waiter must not be re-queued, moved or freed.
    #[inline]
    pub fn is_busy(&self) -> bool {
        #[cfg(target_os = "linux")]
        if self.shared.is_busy() {
            return true;
        }
        #[cfg(feature = "redis")]
        if self.redis.is_busy() {
            return true;
        }
        self.local.is_busy()
    }

    /// The permits of the current (or last) request.
    #[inline]
    pub fn requested(&self) -> usize {
        match self.kind() {
            kind::LOCAL => self.local.requested(),
            #[cfg(target_os = "linux")]
            kind::SHARED => self.shared.requested(),
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
        match self.kind() {
            kind::LOCAL => self.local.in_own_callback(),
            kind::SHARED => CURRENT
                .try_with(|c| core::ptr::eq(c.get(), self))
                .unwrap_or(false),
            #[cfg(feature = "redis")]
            kind::REDIS => CURRENT
                .try_with(|c| core::ptr::eq(c.get(), self))
                .unwrap_or(false),
            _ => false,
        }
    }

    /// Whether this waiter's callback is still to run on this thread, after
    /// the one running now (the same release, close or cancel completed
    /// both): `finish_raw` here then takes its outcome at once and the
    /// callback is never called. Local semaphores only (the core's
    /// per-thread deliveries); `false` for the other backends.
    #[inline]
    pub fn callback_pending_here(&self) -> bool {
        match self.kind() {
            kind::LOCAL => self.local.callback_pending_here(),
            _ => false,
        }
    }

    /// Whether a request on a local semaphore is still linked in a queue by the
    /// parent of this forked process (closed for this process; see
    /// [`volt_sem::Waiter::queued_before_fork`]). `false` for the other
    /// backends, whose handles refuse to work after `fork()`.
    #[inline]
    pub fn queued_before_fork(&self) -> bool {
        self.kind() == kind::LOCAL && self.local.queued_before_fork()
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
