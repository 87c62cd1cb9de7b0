//! The part of a waiter that the protocol owns, embedded in every backend's
//! waiter: its phase, how it is woken, and its links in the per-thread
//! delivery queue.

use core::ffi::c_void;
use core::ptr::NonNull;
use core::task::Waker;

use super::outcome::{WaiterState, WakeFn};
use super::phase;
use crate::sync::{const_unless_loom, AtomicU8, Ordering, UnsafeCell};

/// Which backend a [`Node`] belongs to: lets the one per-thread trampoline
/// answer "whose callback runs here" (see [`current_backend`](super::current_backend)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Backend {
    /// A [`Semaphore`](crate::Semaphore) of this process.
    Local,
    /// A shared-memory semaphore (volt-sem-shm).
    Shared,
    /// A Redis semaphore (volt-sem-redis).
    Redis,
}

/// How a waiter is woken.
pub(crate) enum Notify {
    None,
    /// A Rust task (core only). The completer moves the `Waker` out under the
    /// queue lock and stores the final phase before unlocking, so it never
    /// touches the waiter again.
    Waker(Waker),
    /// A thread blocked in the core's own blocking acquire (core only). As
    /// for a `Waker`, the completer moves the handle out and stores the final
    /// phase under the queue lock, then unparks the thread after it: the
    /// waiter sees its grant one phase store earlier than through a callback
    /// (no `NOTIFYING_*` step to wait out), which is what a FIFO hand-off
    /// between two busy threads waits on (issue 30).
    Thread(crate::sync::thread::Thread),
    /// A raw callback (C ABI, bindings, the shm and Redis
    /// backends). The waiter stays in a `NOTIFYING_*` phase until the callback
    /// returned, which is what lets `finish` promise that the callback is
    /// finished when it returns.
    Callback(WakeFn, *mut c_void),
}

/// Links in this thread's delivery queue; `prev` towards the head (older).
#[derive(Clone, Copy)]
pub(crate) struct Links {
    pub(crate) prev: Option<NonNull<Node>>,
    pub(crate) next: Option<NonNull<Node>>,
}

/// The protocol's part of a waiter, embedded (pinned) in each backend's
/// waiter: the phase machine of [`phase`], the wake callback, and the links
/// that the per-thread trampoline uses once a completer has claimed it.
///
/// Ownership: `phase` is read by anyone; `notify` is written by the owner
/// while the waiter is not busy ([`set_callback`](Self::set_callback)) and
/// read by the one completer that claimed it (moved from `WAITING` to a
/// `NOTIFYING_*` phase under its backend's lock); `pending` belongs to the
/// thread whose delivery queue holds the node.
pub struct Node {
    phase: AtomicU8,
    /// A [`Backend`] as its `u8`: the backend that last queued the waiter
    /// (one waiter type may queue on several, see `set_backend`). A plain
    /// `core` atomic even under loom: a tag the owner writes while idle,
    /// read by the thread that claimed the node (ordered by the backend's
    /// lock, as `notify` is), not a synchronisation point to model.
    backend: core::sync::atomic::AtomicU8,
    pub(crate) notify: UnsafeCell<Notify>,
    pub(crate) pending: UnsafeCell<Links>,
}

// SAFETY: `phase` is atomic; `notify` and `pending` are accessed only by the
// owner while nobody else can see the node, or by the single thread that
// claimed it (module docs of `raw`). The raw `ctx` pointer of a callback is
// opaque; its thread-safety is the contract of the backends' `acquire_raw`.
unsafe impl Send for Node {}
// SAFETY: as for `Send`.
unsafe impl Sync for Node {}

impl Drop for Node {
    /// A waiter dropped while busy would leave a dangling node in its
    /// backend's queue or table (or a callback about to run on freed memory):
    /// a use-after-free that the `unsafe` contract of every `acquire_raw`
    /// forbids. Rather than let it corrupt memory, the process aborts with a
    /// message naming the waiter's type.
    fn drop(&mut self) {
        if self.is_busy() {
            let what = match self.backend() {
                Backend::Local => "volt-sem: a Waiter",
                Backend::Shared => "volt-sem-shm: a ShmWaiter",
                Backend::Redis => "volt-sem-redis: a RedisWaiter",
            };
            eprintln!("{what} was dropped while queued or being woken; aborting");
            std::process::abort();
        }
    }
}

impl Node {
    const_unless_loom! {
        /// A new, idle node of `backend`.
        pub fn new(backend: Backend) -> Self {
            Node {
                phase: AtomicU8::new(phase::IDLE),
                backend: core::sync::atomic::AtomicU8::new(backend as u8),
                notify: UnsafeCell::new(Notify::None),
                pending: UnsafeCell::new(Links {
                    prev: None,
                    next: None,
                }),
            }
        }
    }

    /// The backend that last queued this node (the one it was made for
    /// before that).
    pub fn backend(&self) -> Backend {
        match self.backend.load(Ordering::Relaxed) {
            b if b == Backend::Shared as u8 => Backend::Shared,
            b if b == Backend::Redis as u8 => Backend::Redis,
            _ => Backend::Local,
        }
    }

    /// Records which backend queues the node now: the core's `Waiter` serves
    /// the local semaphore and the shared-memory one (volt-sem-shm), and each
    /// says so before it publishes the request, so that
    /// [`current_backend`](super::current_backend) names the right one.
    /// Owner only, while the node is not busy.
    pub fn set_backend(&self, backend: Backend) {
        self.backend.store(backend as u8, Ordering::Relaxed);
    }

    /// The phase (one of [`phase`]'s constants).
    #[inline]
    pub fn phase(&self, order: Ordering) -> u8 {
        self.phase.load(order)
    }

    /// Stores a phase. Who may store which phase, and with which ordering, is
    /// the protocol of the `raw` module docs.
    #[inline]
    pub fn set_phase(&self, p: u8, order: Ordering) {
        self.phase.store(p, order);
    }

    /// Where the request stands, read from the phase alone: the same for
    /// every backend (a Redis request that failed reads `Closed`, its
    /// `NOTIFYING_*` phase being `CLOSED`'s). `Granted`/`Closed` may be
    /// reported just before the callback has run; an outcome consumed inside
    /// its own callback reads `Idle`.
    pub fn state(&self) -> WaiterState {
        match self.phase.load(Ordering::Acquire) {
            phase::IDLE => WaiterState::Idle,
            phase::WAITING => WaiterState::Waiting,
            phase::NOTIFYING_GRANTED | phase::GRANTED => WaiterState::Granted,
            phase::NOTIFYING_CLOSED | phase::CLOSED => WaiterState::Closed,
            // Consumed from inside its own callback: as good as idle to its owner.
            _ => WaiterState::Idle,
        }
    }

    /// Whether a backend still uses the waiter: queued, or its callback has
    /// not returned.
    pub fn is_busy(&self) -> bool {
        !matches!(
            self.phase.load(Ordering::Acquire),
            phase::IDLE | phase::GRANTED | phase::CLOSED
        )
    }

    /// Registers the callback that the trampoline will call once a completer
    /// claimed the node.
    ///
    /// # Safety
    /// Only the owner, while the node is not busy (no completer can see it).
    pub unsafe fn set_callback(&self, wake: WakeFn, ctx: *mut c_void) {
        // SAFETY: nobody else reads or writes `notify` now (contract).
        self.notify
            .with_mut(|n| unsafe { *n = Notify::Callback(wake, ctx) });
    }

    /// Whether this thread is running this node's wake callback now.
    pub fn in_own_callback(&self) -> bool {
        super::delivery::in_own_callback(self)
    }

    /// Whether this node's callback is still to run on this thread, after the
    /// one running now (the same operation completed both): `finish` here
    /// then takes its outcome at once and the callback is never called.
    pub fn callback_pending_here(&self) -> bool {
        super::delivery::is_pending_here(self)
    }
}
