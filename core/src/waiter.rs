//! The waiter: the node a waiting acquire links into the semaphore's queue.
//!
//! A `Waiter` lives inside the caller's own memory (the `Acquire` future, a C
//! struct, a binding's object), so waiting never allocates. Its fields fall into
//! three ownership classes, and every access below respects them:
//!
//! * **request fields** (`requested`, `semaphore`): written by the owning thread
//!   under the semaphore lock when it enqueues, read by notifiers under that
//!   lock; relaxed atomics only so that the public getters may be called from any
//!   thread at any time without a data race;
//! * **lock-guarded fields** (`links`, `remaining`, `node.notify`): read and
//!   written only with the semaphore's queue lock held, except that the owner
//!   may write `notify` before the waiter is published and a notifier reads a
//!   callback `notify` after popping the waiter (see `raw::phase::NOTIFYING_*`);
//! * **`node.phase`**: an atomic, the only field read without the lock.
//!
//! The phase machine, the wake callback's delivery and `finish_raw` are the
//! generic protocol of [`crate::raw`], shared with the other backends.

use core::marker::PhantomPinned;
use core::ptr::NonNull;

use crate::raw::{phase, Backend, Node, WaiterState};
use crate::sync::{const_unless_loom, AtomicPtr, AtomicU32, AtomicUsize, Ordering, UnsafeCell};

/// Intrusive links; `prev` points towards the head (older), `next` towards the tail.
#[derive(Clone, Copy)]
pub(crate) struct Links {
    pub(crate) prev: Option<NonNull<Waiter>>,
    pub(crate) next: Option<NonNull<Waiter>>,
}

/// A queue node for one pending acquire, embedded in caller-owned memory.
///
/// Most Rust code never sees this type: [`Semaphore::acquire`](crate::Semaphore::acquire)
/// embeds one in its future. It is public for the C ABI and language bindings,
/// which drive it through [`Semaphore::acquire_raw`](crate::raw::RawSemaphore::acquire_raw)
/// and [`Semaphore::finish_raw`](crate::raw::RawSemaphore::finish_raw).
///
/// A waiter must not move while it is queued, which is why the raw API takes it
/// pinned.
///
/// ```
/// use std::ffi::c_void;
/// use std::pin::pin;
/// use volt_sem::raw::RawSemaphore;
/// use volt_sem::{Finish, RawAcquire, Semaphore, Waiter, WaiterState};
///
/// unsafe extern "C" fn woken(ctx: *mut c_void) {
///     // SAFETY: `ctx` is the counter below, alive until `finish_raw` returned.
///     unsafe { *(ctx as *mut u32) += 1 };
/// }
///
/// let sem = Semaphore::new(0);
/// let mut wakes = 0u32;
/// let waiter = pin!(Waiter::new());
/// assert_eq!(waiter.state(), WaiterState::Idle);
/// let ctx = &mut wakes as *mut u32 as *mut c_void;
/// // SAFETY: the waiter is new and pinned; it and `wakes` outlive `finish_raw`.
/// let r = unsafe { sem.acquire_raw(waiter.as_ref(), 2, woken, ctx) };
/// assert_eq!(r, Ok(RawAcquire::Pending));
/// assert!(waiter.is_busy() && waiter.belongs_to(&sem));
/// assert_eq!((waiter.state(), waiter.requested()), (WaiterState::Waiting, 2));
/// sem.release(2).unwrap(); // the callback runs here, on this thread
/// assert_eq!(waiter.state(), WaiterState::Granted);
/// // SAFETY: queued on `sem`.
/// assert_eq!(unsafe { sem.finish_raw(waiter.as_ref()) }, Finish::Granted);
/// assert!(!waiter.is_busy());
/// assert_eq!(wakes, 1);
/// sem.release(2).unwrap();
/// ```
pub struct Waiter {
    pub(crate) links: UnsafeCell<Links>,
    /// Permits still missing. Lock-guarded.
    pub(crate) remaining: UnsafeCell<usize>,
    /// When a local request was queued, as `crate::inspect::stamp` (for
    /// `Semaphore::inspect`; 8 bytes, not an `Instant`'s 16). Lock-guarded.
    pub(crate) queued_at: UnsafeCell<u64>,
    /// Permits asked for by the current request. Owner field.
    pub(crate) requested: AtomicUsize,
    /// The semaphore this waiter was last enqueued on (identity only). Owner field.
    pub(crate) semaphore: AtomicPtr<()>,
    /// The protocol's part: phase, wake callback, delivery links (`crate::raw`).
    pub(crate) node: Node,
    /// A local request: the `fork` generation (`crate::fork`) of the process
    /// that queued it, written just before `phase` becomes `WAITING`. Lets
    /// [`state`](Self::state) tell a request that a forked child inherited
    /// from its parent (closed for the child) without the semaphore, whose
    /// lock the purge needs. Truncated to 32 bits: only equality is asked of
    /// it. A request of another backend (volt-sem-shm): that backend's own
    /// word ([`backend_word`](Self::backend_word), the shared semaphore's
    /// slot).
    pub(crate) fork_generation: AtomicU32,
    _pinned: PhantomPinned,
}

// SAFETY: every field shared between threads is either atomic (`phase`) or guarded
// by the queue lock of the semaphore the waiter is linked into; the owner fields
// (`requested`, `semaphore`) are relaxed atomics written under that lock. The raw `ctx` pointer in a
// callback is opaque to the crate; its thread-safety is the caller's contract
// (documented on `acquire_raw`).
unsafe impl Send for Waiter {}
// SAFETY: see `Send`: shared access goes through the atomic phase or the lock.
unsafe impl Sync for Waiter {}

crate::waiter_impls!(Waiter);

impl Waiter {
    const_unless_loom! {
        /// A new, idle waiter. `const`, so a waiter can be built in a static or
        /// inside a larger `const`-constructed structure.
        ///
        /// ```
        /// let w = volt_sem::Waiter::new();
        /// assert!(!w.is_busy());
        /// ```
        pub fn new() -> Self {
            Waiter {
                links: UnsafeCell::new(Links {
                    prev: None,
                    next: None,
                }),
                remaining: UnsafeCell::new(0),
                queued_at: UnsafeCell::new(0),
                requested: AtomicUsize::new(0),
                semaphore: AtomicPtr::new(core::ptr::null_mut()),
                node: Node::new(Backend::Local),
                fork_generation: AtomicU32::new(0),
                _pinned: PhantomPinned,
            }
        }
    }

    /// Where this waiter stands. `Granted` and `Closed` are reported as soon as the
    /// semaphore decided them, which may be just before the wake callback has run:
    /// it is the right question to ask *inside* the callback. Whether the
    /// semaphore is done with the waiter's memory is a different question, which
    /// only [`Semaphore::finish_raw`](crate::raw::RawSemaphore::finish_raw) answers.
    ///
    /// See the [`Waiter`] example for a request going through its states.
    ///
    /// ```
    /// assert_eq!(volt_sem::Waiter::new().state(), volt_sem::WaiterState::Idle);
    /// ```
    pub fn state(&self) -> WaiterState {
        self.node.state()
    }

    /// Whether the semaphore still uses this waiter: it is queued, or its wake
    /// callback has not returned yet. A busy waiter must not be passed to
    /// `acquire_raw`, moved or freed; [`finish_raw`](crate::raw::RawSemaphore::finish_raw)
    /// called outside its callback ends the busy period.
    ///
    /// ```
    /// use std::pin::pin;
    /// use volt_sem::raw::RawSemaphore;
    /// use volt_sem::{Semaphore, Waiter};
    /// unsafe extern "C" fn wake(_: *mut std::ffi::c_void) {}
    ///
    /// let sem = Semaphore::new(0);
    /// let waiter = pin!(Waiter::new());
    /// // SAFETY: new and pinned; finished below.
    /// unsafe { sem.acquire_raw(waiter.as_ref(), 1, wake, std::ptr::null_mut()) }.unwrap();
    /// assert!(waiter.is_busy()); // queued: must not move or be freed
    /// // SAFETY: queued on `sem`.
    /// unsafe { sem.finish_raw(waiter.as_ref()) };
    /// assert!(!waiter.is_busy());
    /// ```
    pub fn is_busy(&self) -> bool {
        self.node.is_busy()
    }

    /// Whether the current thread is running this waiter's wake callback now.
    /// (Callbacks never nest: those that a callback's own release completes run
    /// after it returns.) There, [`finish_raw`](crate::raw::RawSemaphore::finish_raw)
    /// collects the outcome at once but the waiter stays [busy](Self::is_busy)
    /// until the callback returns.
    ///
    /// ```
    /// use std::ffi::c_void;
    /// use std::pin::pin;
    /// use volt_sem::raw::RawSemaphore;
    /// use volt_sem::{Finish, Semaphore, Waiter};
    ///
    /// struct Ctx<'a> {
    ///     sem: &'a Semaphore,
    ///     waiter: *const Waiter,
    /// }
    /// unsafe extern "C" fn collect_inside(ctx: *mut c_void) {
    ///     // SAFETY: `ctx` is the `Ctx` below; the waiter is pinned and alive.
    ///     let ctx = unsafe { &*(ctx as *const Ctx) };
    ///     let waiter = unsafe { std::pin::Pin::new_unchecked(&*ctx.waiter) };
    ///     assert!(waiter.in_own_callback());
    ///     // SAFETY: queued on `ctx.sem`. Collect the grant and pass it on at once.
    ///     assert_eq!(unsafe { ctx.sem.finish_raw(waiter) }, Finish::Granted);
    ///     ctx.sem.release(1).unwrap();
    /// }
    ///
    /// let sem = Semaphore::new(0);
    /// let waiter = pin!(Waiter::new());
    /// let ctx = Ctx { sem: &sem, waiter: &*waiter };
    /// let ctx_ptr = &ctx as *const Ctx as *mut c_void;
    /// // SAFETY: pinned and new; `ctx` outlives the final `finish_raw`.
    /// unsafe { sem.acquire_raw(waiter.as_ref(), 1, collect_inside, ctx_ptr) }.unwrap();
    /// assert!(!waiter.in_own_callback());
    /// sem.release(1).unwrap(); // runs the callback, which releases the permit again
    /// assert_eq!(sem.available_permits(), 1);
    /// // SAFETY: the outcome was consumed inside; this ends the busy period.
    /// assert_eq!(unsafe { sem.finish_raw(waiter.as_ref()) }, Finish::Idle);
    /// ```
    pub fn in_own_callback(&self) -> bool {
        self.node.in_own_callback()
    }

    /// Whether this waiter is still linked in a queue by the parent of this
    /// forked process: its request is closed for this process (`crate::fork`)
    /// although [`state`](Self::state) reads `Waiting` until an operation that
    /// takes the semaphore's lock has purged it (then `Closed`). For the C
    /// ABI's `volt_waiter_status`, which reports `VOLT_CLOSED` at once, as its
    /// header promises, without a semaphore to lock. One relaxed load outside
    /// forked children.
    #[doc(hidden)]
    pub fn queued_before_fork(&self) -> bool {
        // The Acquire load of `phase` that saw WAITING also sees the
        // generation, written before the Release store of WAITING.
        crate::fork::in_forked_child()
            && self.node.backend() == Backend::Local
            && self.node.phase(Ordering::Acquire) == phase::WAITING
            && self.fork_generation.load(Ordering::Relaxed) != crate::fork::generation() as u32
    }

    /// Whether this is a forked child's copy of a local request whose outcome
    /// the parent decided (granted, or closed) but whose wake callback had not
    /// returned at the fork: it was running, or still to run, on a thread of
    /// the parent, which the child does not have, so it never returns here
    /// and [`finish_raw`](crate::raw::RawSemaphore::finish_raw) takes the
    /// outcome at once instead of waiting for it (`crate::fork`). Not when
    /// the fork was made from inside a wake callback: that thread goes on
    /// delivering in the child. For the C ABI's `volt_sem_try_cancel`, which
    /// must then not answer "the callback is running" for ever. One relaxed
    /// load outside forked children.
    #[doc(hidden)]
    pub fn callback_lost_to_fork(&self) -> bool {
        // A request queued before the fork cannot be claimed in the child:
        // every critical section there first closes the parent's requests
        // without a callback (`Semaphore::purge_forked_locked`). So a
        // NOTIFYING phase with the parent's generation was claimed by a
        // thread of the parent.
        crate::fork::in_forked_child()
            && self.node.backend() == Backend::Local
            && matches!(
                self.node.phase(Ordering::Acquire),
                phase::NOTIFYING_GRANTED | phase::NOTIFYING_CLOSED | phase::NOTIFYING_CONSUMED
            )
            && self.fork_generation.load(Ordering::Relaxed) != crate::fork::generation() as u32
            && !crate::fork::forked_in_delivery()
    }

    /// [`callback_lost_to_fork`](Self::callback_lost_to_fork)'s outcome,
    /// taken as the trampoline would have left it: `Granted` or `Closed`, or
    /// `Idle` if the callback consumed it; the waiter becomes idle. `None`
    /// if the callback was not lost.
    pub(crate) fn finish_lost_to_fork(&self) -> Option<crate::Finish> {
        if !self.callback_lost_to_fork() {
            return None;
        }
        // SAFETY: claimed by a thread of the parent (`callback_lost_to_fork`);
        // the owner is the caller of `finish_raw`.
        unsafe { crate::raw::finish_orphan(&self.node) }
    }

    /// Whether this waiter's wake callback is still to run on the current
    /// thread: a release, close or cancel made here completed it while another
    /// callback was running, and the thread's trampoline has not called it
    /// yet. [`finish_raw`](crate::raw::RawSemaphore::finish_raw) called here then
    /// collects its outcome at once and the callback is never called (waiting
    /// for it would hang). For the C ABI's `volt_sem_try_cancel`, which must
    /// not wait for a callback but need not here.
    #[doc(hidden)]
    pub fn callback_pending_here(&self) -> bool {
        self.node.callback_pending_here()
    }

    /// The protocol node ([`crate::raw`]) inside this waiter: what a seam over
    /// several backends asks (phase, callback) without knowing the backend.
    #[doc(hidden)]
    pub fn node(&self) -> &Node {
        &self.node
    }

    /// For another backend that queues this waiter (volt-sem-shm, whose
    /// `ShmWaiter` is this type): records a request as the local semaphore's
    /// enqueue does (which backend, the permits, the semaphore's identity for
    /// its `owns`). The backend then drives the phase through
    /// [`node`](Self::node) and the `raw` protocol; the local queue's fields
    /// (links, remaining permits) stay unused. Owner only, while the waiter
    /// is not busy.
    #[doc(hidden)]
    pub fn set_foreign_request(&self, backend: Backend, requested: usize, owner: *const ()) {
        self.node.set_backend(backend);
        self.requested.store(requested, Ordering::Relaxed);
        self.semaphore.store(owner.cast_mut(), Ordering::Relaxed);
    }

    /// The identity that the last request recorded: the local semaphore's
    /// address, or a foreign backend's `owner`.
    #[doc(hidden)]
    pub fn owner(&self) -> *const () {
        self.semaphore.load(Ordering::Relaxed)
    }

    /// A foreign backend's own 32-bit word for the current request (the
    /// shared semaphore's slot); see [`set_backend_word`](Self::set_backend_word).
    #[doc(hidden)]
    pub fn backend_word(&self) -> u32 {
        self.fork_generation.load(Ordering::Relaxed)
    }

    /// Sets a foreign backend's word. The owner, while the waiter is not
    /// yet published to its backend (before `WAITING`), so that whoever sees
    /// it queued sees the word; or the thread that claimed the waiter or
    /// took it out of its queue, before the phase store that hands it back,
    /// so that the owner sees the word with the outcome (the shared
    /// semaphore records a request failed by its `set_total` this way).
    #[doc(hidden)]
    pub fn set_backend_word(&self, word: u32) {
        self.fork_generation.store(word, Ordering::Relaxed);
    }

    /// The number of permits the current (or last) request asked for.
    ///
    /// ```
    /// assert_eq!(volt_sem::Waiter::new().requested(), 0);
    /// ```
    pub fn requested(&self) -> usize {
        self.requested.load(Ordering::Relaxed)
    }

    /// Whether this waiter was last enqueued on `semaphore`. Lets the C ABI reject
    /// a cancel aimed at the wrong semaphore instead of corrupting a queue.
    ///
    /// ```
    /// use std::pin::pin;
    /// use volt_sem::raw::RawSemaphore;
    /// use volt_sem::{Semaphore, Waiter};
    /// unsafe extern "C" fn wake(_: *mut std::ffi::c_void) {}
    ///
    /// let (a, b) = (Semaphore::new(0), Semaphore::new(0));
    /// let waiter = pin!(Waiter::new());
    /// // SAFETY: new and pinned; finished below.
    /// unsafe { a.acquire_raw(waiter.as_ref(), 1, wake, std::ptr::null_mut()) }.unwrap();
    /// assert!(waiter.belongs_to(&a) && !waiter.belongs_to(&b));
    /// // SAFETY: queued on `a`, which `belongs_to` just confirmed.
    /// unsafe { a.finish_raw(waiter.as_ref()) };
    /// ```
    pub fn belongs_to(&self, semaphore: &crate::Semaphore) -> bool {
        // The tag first: the address of a shared semaphore it queued on last
        // (gone since) could be this one's.
        self.node.backend() == Backend::Local
            && core::ptr::eq(
                self.semaphore.load(Ordering::Relaxed),
                semaphore as *const _ as *const (),
            )
    }
}
