//! The semaphore algorithm. Its description (the state word, the invariants,
//! why release needs no lock, the memory orderings) is part of the public docs:
//! [`crate::docs::algorithm`]. Keep the two in step.

use core::ffi::c_void;
use core::pin::Pin;
use core::ptr::NonNull;
use core::task::Waker;

use crate::error::{AcquireError, ReleaseError, TryAcquireError};
use crate::raw;
use crate::raw::{phase, Backend, Finish, Notify, RawAcquire, WakeFn};
use crate::stats::Recorder;
use crate::sync::{self, AtomicPtr, AtomicUsize, Mutex, Ordering};
use crate::wait_list::WaitList;
use crate::waiter::Waiter;
use crate::wake_batch::{Rethrow, Wake, WakeBatch};

/// `release_claiming`'s claim: called under the queue lock with a callback
/// waiter's `wake` and `ctx`; `true` takes its grant without the callback.
type Claim<'a> = dyn FnMut(WakeFn, *mut c_void) -> bool + 'a;

const CLOSED: usize = 0b01;
const QUEUED: usize = 0b10;
const SHIFT: u32 = 2;

/// With feature `cache-padded`, keeps the hot atomic word on its own cache line
/// (two lines on x86-64, where the adjacent-line prefetcher pairs them), away
/// from the queue lock that contended acquirers hammer. Off by default: it makes
/// a `Semaphore` 256 bytes instead of 56 and paid only on the contended
/// benchmarks (see `docs/benchmarks.md`, *Footprint*).
#[cfg_attr(
    all(
        feature = "cache-padded",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ),
    repr(align(128))
)]
#[cfg_attr(
    all(
        feature = "cache-padded",
        not(any(target_arch = "x86_64", target_arch = "aarch64"))
    ),
    repr(align(64))
)]
struct CachePadded<T>(T);

/// A fair, weighted counting semaphore with direct hand-off to waiters.
///
/// Requests are served in FIFO order, weights included; a release hands its
/// permits straight to the oldest waiters. Async tasks ([`acquire`](Self::acquire)),
/// blocking threads ([`acquire_blocking`](Self::acquire_blocking)) and raw
/// callback waiters ([`acquire_raw`](crate::raw::RawSemaphore::acquire_raw))
/// share one queue. See
/// [`docs::algorithm`](crate::docs::algorithm) for the algorithm and the
/// [crate documentation](crate#the-waker-contract) for the waker contract.
///
/// ```
/// use std::sync::Arc;
/// use volt_sem::Semaphore;
/// # futures::executor::block_on(async {
/// // At most 3 units of work in flight; a big job takes 2.
/// let budget = Arc::new(Semaphore::new(3));
/// let big = budget.acquire(2).await.unwrap();
/// let small = budget.acquire(1).await.unwrap();
/// assert!(budget.try_acquire(1).is_err());
/// drop((big, small));
/// assert_eq!(budget.available_permits(), 3);
/// # });
/// ```
pub struct Semaphore {
    state: CachePadded<AtomicUsize>,
    /// This handle's metrics, once [`enable_stats`](Self::enable_stats) ran:
    /// null until then, set once, freed on drop. Beside the state word, so
    /// the fast path's check reads a line it already has.
    recorder: AtomicPtr<Recorder>,
    queue: Mutex<WaitList>,
    /// The nominal total, for [`inspect`](Self::inspect) only: the permits
    /// the semaphore was created with, plus `add_permits`, minus
    /// `forget_permits`. Only those rare calls change it (`release` never
    /// does; a guard's `forget` neither: its permits stay held, by whoever
    /// took them over); Relaxed, as it orders nothing.
    nominal_total: AtomicUsize,
}

impl Drop for Semaphore {
    fn drop(&mut self) {
        let p = self.recorder.swap(core::ptr::null_mut(), Ordering::Acquire);
        if !p.is_null() {
            // SAFETY: set once from `Box::into_raw` (`install_recorder`); no
            // borrow of `self` outlives `&mut self`.
            drop(unsafe { Box::from_raw(p) });
        }
    }
}

impl Default for Semaphore {
    /// A semaphore with no permits.
    fn default() -> Self {
        Self::with_permits(0)
    }
}

impl core::fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let state = self.state.0.load(Ordering::Relaxed);
        f.debug_struct("Semaphore")
            .field("available", &(state >> SHIFT))
            .field("queued", &(state & QUEUED != 0))
            .field("closed", &(state & CLOSED != 0))
            .finish()
    }
}

impl Semaphore {
    /// The largest number of permits a semaphore can hold, and the largest single
    /// request. Larger requests fail with `TooManyPermits`; releases that would
    /// exceed it fail with [`ReleaseError`].
    ///
    /// ```
    /// use volt_sem::{Semaphore, TryAcquireError};
    /// assert_eq!(Semaphore::MAX_PERMITS, usize::MAX >> 3);
    /// let sem = Semaphore::new(Semaphore::MAX_PERMITS);
    /// let err = sem.try_acquire(Semaphore::MAX_PERMITS + 1).unwrap_err();
    /// assert_eq!(err, TryAcquireError::TooManyPermits);
    /// ```
    pub const MAX_PERMITS: usize = usize::MAX >> 3;

    /// Creates a semaphore with `permits` available permits.
    ///
    /// # Panics
    /// If `permits > MAX_PERMITS`. Use [`Semaphore::try_new`] where the count comes
    /// from outside the program.
    ///
    /// ```
    /// let sem = volt_sem::Semaphore::new(4);
    /// assert_eq!(sem.available_permits(), 4);
    /// ```
    pub fn new(permits: usize) -> Self {
        assert!(
            permits <= Self::MAX_PERMITS,
            "a semaphore holds at most {} permits",
            Self::MAX_PERMITS
        );
        Self::with_permits(permits)
    }

    /// Creates a semaphore, or returns `None` if `permits > MAX_PERMITS`.
    ///
    /// ```
    /// use volt_sem::Semaphore;
    /// assert!(Semaphore::try_new(10).is_some());
    /// assert!(Semaphore::try_new(Semaphore::MAX_PERMITS + 1).is_none());
    /// ```
    pub fn try_new(permits: usize) -> Option<Self> {
        (permits <= Self::MAX_PERMITS).then(|| Self::with_permits(permits))
    }

    /// Creates a semaphore in a `const` context, e.g. a `static`.
    ///
    /// # Panics
    /// At compile time, if `permits > MAX_PERMITS`.
    ///
    /// ```
    /// static CONNECTIONS: volt_sem::Semaphore = volt_sem::Semaphore::const_new(16);
    /// let conn = CONNECTIONS.try_acquire(1).unwrap();
    /// assert_eq!(CONNECTIONS.available_permits(), 15);
    /// # drop(conn);
    /// ```
    #[cfg(not(volt_loom))]
    pub const fn const_new(permits: usize) -> Self {
        assert!(permits <= Self::MAX_PERMITS);
        Semaphore {
            state: CachePadded(AtomicUsize::new(permits << SHIFT)),
            recorder: AtomicPtr::new(core::ptr::null_mut()),
            queue: Mutex::new(WaitList::new()),
            nominal_total: AtomicUsize::new(permits),
        }
    }

    fn with_permits(permits: usize) -> Self {
        Semaphore {
            state: CachePadded(AtomicUsize::new(permits << SHIFT)),
            recorder: AtomicPtr::new(core::ptr::null_mut()),
            queue: Mutex::new(WaitList::new()),
            nominal_total: AtomicUsize::new(permits),
        }
    }

    /// Permits available right now. While anyone is queued this is 0.
    ///
    /// ```
    /// let sem = volt_sem::Semaphore::new(3);
    /// let _p = sem.try_acquire(2).unwrap();
    /// assert_eq!(sem.available_permits(), 1);
    /// ```
    pub fn available_permits(&self) -> usize {
        let word = self.state.0.load(Ordering::Acquire);
        // In a forked child the queue may hold the parent's requests, whose
        // partial grants come back to the child (`crate::fork`): clean up first.
        if word & QUEUED != 0 && crate::fork::in_forked_child() && self.purge_forked() {
            return self.state.0.load(Ordering::Acquire) >> SHIFT;
        }
        word >> SHIFT
    }

    /// The bit layout of [`state_word`](Self::state_word): the available
    /// permits are `word >> STATE_SHIFT`.
    #[doc(hidden)]
    pub const STATE_SHIFT: u32 = SHIFT;
    /// The state word's bit set while anyone is queued (then 0 permits are available).
    #[doc(hidden)]
    pub const STATE_QUEUED: usize = QUEUED;
    /// The state word's bit set once the semaphore is closed.
    #[doc(hidden)]
    pub const STATE_CLOSED: usize = CLOSED;

    /// The semaphore's state word (`available << STATE_SHIFT | STATE_QUEUED |
    /// STATE_CLOSED`, see [`docs::algorithm`](crate::docs::algorithm)), for a
    /// binding that runs the uncontended fast paths in another language on the
    /// very same word (the Node binding's JS `Atomics`). Not for Rust code:
    /// use [`try_acquire`](Self::try_acquire) and [`release`](Self::release).
    ///
    /// # Contract
    /// Reading the word is always allowed. The only writes allowed are
    /// compare-and-swaps making the transitions the core's own lock-free fast
    /// paths make, with at least their orderings:
    ///
    /// * **take** `n` (as `try_acquire`): from a word with neither `QUEUED` nor
    ///   `CLOSED` set and `available >= n`, to `word - (n << STATE_SHIFT)`,
    ///   with Acquire (or stronger) ordering on success;
    /// * **give back** `n` (as `release`'s lock-free path): from a word without
    ///   `QUEUED` (`CLOSED` may be set) and with `available + n <=
    ///   MAX_PERMITS`, to `word + (n << STATE_SHIFT)`, with Release (or
    ///   stronger) ordering.
    ///
    /// Anything else (a word with `QUEUED` set, enqueueing, closing, handing
    /// permits to waiters) must go through the safe API, which holds the queue
    /// lock where the algorithm needs it. Permits taken this way are owed back
    /// through [`release`](Self::release) or the give-back transition. The
    /// reference lives as long as the semaphore: whoever keeps a pointer to it
    /// must keep the semaphore alive.
    #[doc(hidden)]
    #[cfg(not(volt_loom))]
    pub fn state_word(&self) -> &core::sync::atomic::AtomicUsize {
        &self.state.0
    }

    /// Whether [`close`](Self::close) was called.
    ///
    /// ```
    /// let sem = volt_sem::Semaphore::new(1);
    /// assert!(!sem.is_closed());
    /// sem.close();
    /// assert!(sem.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        self.state.0.load(Ordering::Acquire) & CLOSED != 0
    }

    /// Whether a request for `n` permits would complete at once right now
    /// (granted, or failed because the semaphore is closed or `n` too large):
    /// the one case where an acquire may yield to its executor before it
    /// queues (see `coop`). Relaxed: a hint, decided again by the next poll.
    pub(crate) fn would_grant_at_once(&self, n: usize) -> bool {
        let cur = self.state.0.load(Ordering::Relaxed);
        // By invariant 2 a queued waiter means 0 available, so `n <= available`
        // also means nobody is queued (for n > 0; n == 0 completes at once).
        n > Self::MAX_PERMITS || cur & CLOSED != 0 || cur >> SHIFT >= n
    }

    /// Takes `n` permits if they are available now and nobody is queued.
    /// `n == 0` succeeds unless the semaphore is closed. Lock-free.
    #[inline]
    pub(crate) fn try_take(&self, n: usize) -> Result<(), TryAcquireError> {
        if n > Self::MAX_PERMITS {
            return Err(TryAcquireError::TooManyPermits);
        }
        let mut cur = self.state.0.load(Ordering::Relaxed);
        loop {
            if cur & CLOSED != 0 {
                return Err(TryAcquireError::Closed);
            }
            // By invariant 2 a queued waiter means 0 available: no barging.
            if cur >> SHIFT < n {
                // In a forked child the queue may hold the parent's ghosts
                // (`crate::fork`): clean up once, then decide on the fresh word.
                if cur & QUEUED != 0 && crate::fork::in_forked_child() && self.purge_forked() {
                    cur = self.state.0.load(Ordering::Relaxed);
                    continue;
                }
                return Err(TryAcquireError::NoPermits);
            }
            // Acquire: pairs with the Release that put these permits in the counter.
            match self.state.0.compare_exchange_weak(
                cur,
                cur - (n << SHIFT),
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    if let Some(r) = self.recorder() {
                        r.granted(n);
                    }
                    return Ok(());
                }
                Err(actual) => cur = actual,
            }
        }
    }

    /// Returns `n` permits: to the queue's head first, in FIFO order, the surplus to
    /// the counter. Lock-free when nobody is queued. Works on a closed semaphore.
    ///
    /// Fails if the available permits would exceed [`MAX_PERMITS`](Self::MAX_PERMITS).
    /// [`ReleaseError::unreleased`] says how many of the `n` permits were not
    /// released (the caller still holds those): all of them, except in one race.
    /// A release that completes more waiters than one wake batch holds (32)
    /// hands permits over in several steps; if, between two steps, the remaining
    /// waiters cancel and other releases fill the counter to near `MAX_PERMITS`,
    /// the permits already handed to waiters stay given and only the rest is
    /// reported as unreleased.
    ///
    /// This is the form for counts that come from outside (the C ABI and the
    /// bindings use it); [`add_permits`](Self::add_permits) panics instead, for
    /// code where an overflow is a bug. Permit guards release by themselves.
    ///
    /// # Panics
    /// If a `Waker` panics while being woken. The hand-off is completed first (every
    /// permit reaches a waiter or the counter, every other waiter is woken), then
    /// the first panic is re-raised.
    ///
    /// ```
    /// use volt_sem::Semaphore;
    /// let sem = Semaphore::new(0);
    /// sem.release(2).unwrap();
    /// assert_eq!(sem.available_permits(), 2);
    /// let err = sem.release(Semaphore::MAX_PERMITS).unwrap_err();
    /// assert_eq!(err.unreleased(), Semaphore::MAX_PERMITS); // nothing was added
    /// ```
    #[inline]
    pub fn release(&self, n: usize) -> Result<(), ReleaseError> {
        if n == 0 {
            return Ok(());
        }
        if n > Self::MAX_PERMITS {
            return Err(ReleaseError { unreleased: n });
        }
        let mut cur = self.state.0.load(Ordering::Relaxed);
        loop {
            if cur & QUEUED != 0 {
                return self.release_slow(n, None);
            }
            let available = cur >> SHIFT;
            // Cannot overflow: both terms are at most MAX_PERMITS = usize::MAX >> 3.
            if available + n > Self::MAX_PERMITS {
                return Err(ReleaseError { unreleased: n });
            }
            // Release: publishes the releaser's critical section to whoever takes
            // these permits. A failure (a concurrent take, release, or an enqueue
            // setting QUEUED) re-decides on the fresh word.
            match self.state.0.compare_exchange_weak(
                cur,
                cur + (n << SHIFT),
                Ordering::Release,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Ok(()),
                Err(actual) => cur = actual,
            }
        }
    }

    /// Removes up to `n` permits from the available ones (tokio's
    /// `forget_permits`) and returns how many were removed. Permits that are
    /// held or granted to queued waiters are not touched (while anyone waits,
    /// none are available). Lock-free. Works on a closed semaphore.
    ///
    /// ```
    /// let sem = volt_sem::Semaphore::new(5);
    /// let held = sem.try_acquire(2).unwrap();
    /// assert_eq!(sem.forget_permits(4), 3); // only 3 were available
    /// drop(held);
    /// assert_eq!(sem.available_permits(), 2);
    /// ```
    pub fn forget_permits(&self, n: usize) -> usize {
        let mut cur = self.state.0.load(Ordering::Relaxed);
        loop {
            let taken = (cur >> SHIFT).min(n);
            if taken == 0 {
                return 0;
            }
            // Acquire, as any take of permits from the counter.
            match self.state.0.compare_exchange_weak(
                cur,
                cur - (taken << SHIFT),
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    self.forgotten(taken);
                    return taken;
                }
                Err(actual) => cur = actual,
            }
        }
    }

    /// `n` permits left the semaphore for good (see `nominal_total`).
    pub(crate) fn forgotten(&self, n: usize) {
        // Saturating: releases beyond what was acquired are allowed locally.
        let _ = self
            .nominal_total
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |t| {
                Some(t.saturating_sub(n))
            });
    }

    /// `n` permits were added by `add_permits` (see `nominal_total`).
    pub(crate) fn added(&self, n: usize) {
        let _ = self
            .nominal_total
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |t| {
                Some(t.saturating_add(n))
            });
    }

    /// This handle's recorder, if [`enable_stats`](Self::enable_stats) ran.
    #[inline]
    pub(crate) fn recorder(&self) -> Option<&Recorder> {
        // Acquire: pairs with the Release that published the recorder, so its
        // counters are seen initialised.
        let p = self.recorder.load(Ordering::Acquire);
        // SAFETY: non-null only once set from a leaked `Box`, which is freed
        // only in `drop`, after every borrow of `self` ended.
        unsafe { p.as_ref() }
    }

    /// Installs a recorder unless one is there; the first call wins.
    pub(crate) fn install_recorder(&self) {
        if !self.recorder.load(Ordering::Acquire).is_null() {
            return;
        }
        let fresh = Box::into_raw(Box::new(Recorder::new()));
        // Release: publishes the zeroed counters with the pointer.
        if self
            .recorder
            .compare_exchange(
                core::ptr::null_mut(),
                fresh,
                Ordering::Release,
                Ordering::Acquire,
            )
            .is_err()
        {
            // SAFETY: `fresh` was never shared: another call installed its own.
            drop(unsafe { Box::from_raw(fresh) });
        }
    }

    /// Runs `f` with the lock held on the state word, the nominal total and
    /// the queue: one consistent snapshot (`crate::inspect`).
    pub(crate) fn snapshot<R>(&self, f: impl FnOnce(usize, usize, &WaitList) -> R) -> R {
        self.locked(|list| {
            // Acquire, as `available_permits`; while the lock is held, the
            // word changes only by lock-free takes and releases, which move
            // permits between the counter and holders, never the queue.
            let word = self.state.0.load(Ordering::Acquire);
            let total = self.nominal_total.load(Ordering::Relaxed);
            f(word, total, list)
        })
    }

    #[cold]
    fn release_slow(&self, n: usize, claim: Option<&mut Claim<'_>>) -> Result<(), ReleaseError> {
        let mut wakes = WakeBatch::new();
        let mut rethrow = Rethrow::new();
        let result = self.hand_over(n, claim, &mut wakes, &mut rethrow);
        rethrow.finish();
        result
    }

    /// [`release`](Self::release), but a raw waiter this call serves for
    /// which `claim(wake, ctx)` (its `acquire_raw` arguments) returns `true`
    /// is not called back: its grant is complete as soon as it is unlinked,
    /// and the caller, which claimed it, sees to it that its owner learns of
    /// it (the owner finishes it with `finish_raw`, which returns
    /// `Granted`, as after a callback). For a binding whose release runs on
    /// the thread that owns some of the waiters it serves (Node's event loop
    /// thread): their grants go straight back to the caller instead of
    /// through this thread's callback trampoline and the callback. Waiters
    /// it returns `false` for, and `Waker` and blocking waiters, are woken as
    /// by `release`. FIFO order, partial grants, the wait statistics and
    /// `inspect()` are the same as `release`'s; without waiters queued this
    /// is `release` (lock-free, `claim` not called).
    ///
    /// # Safety
    /// `claim` runs with the queue lock held, once per callback waiter this
    /// call grants in full, just after unlinking it (a head it serves only
    /// in part stays queued and is not offered): it must be short, must not
    /// block, unwind, or call into this semaphore (or anything that may wait
    /// for this release). A waiter it claims is the caller's to deliver: its
    /// callback is never called (waker contract rule 1 then holds with no
    /// call at all), and its owner must still finish it (rule 5); the claim
    /// is the owner's only news of the grant.
    pub unsafe fn release_claiming(
        &self,
        n: usize,
        claim: &mut dyn FnMut(WakeFn, *mut c_void) -> bool,
    ) -> Result<(), ReleaseError> {
        // Relaxed: a hint, as in `release`, whose lock-free path re-decides
        // on every CAS; a QUEUED seen here is checked again under the lock.
        if self.state.0.load(Ordering::Relaxed) & QUEUED == 0 || n == 0 || n > Self::MAX_PERMITS {
            return self.release(n);
        }
        self.release_slow(n, Some(claim))
    }

    /// Hands `n` permits to the queue's head(s) in FIFO order, the surplus to the
    /// counter, delivering wakes between lock sections of at most one batch. A
    /// `Waker`'s panic is kept in `rethrow` and does not stop the hand-off.
    fn hand_over(
        &self,
        n: usize,
        mut claim: Option<&mut Claim<'_>>,
        wakes: &mut WakeBatch,
        rethrow: &mut Rethrow,
    ) -> Result<(), ReleaseError> {
        let mut rem = n;
        loop {
            let done =
                self.locked(|list| self.serve_locked(list, &mut rem, claim.as_deref_mut(), wakes));
            wakes.wake_all(rethrow);
            if let Some(result) = done {
                return result;
            }
        }
    }

    /// With the lock held: gives `rem` permits to the head(s), FIFO. Returns
    /// `None` when the wake batch filled up first (deliver it, then call again with
    /// what is left in `rem`), else the outcome; when the queue ends up empty it
    /// clears `QUEUED` and banks the surplus in the same CAS. A callback waiter
    /// served that `claim` claims is left `GRANTED` (`release_claiming`).
    fn serve_locked(
        &self,
        list: &mut WaitList,
        rem: &mut usize,
        mut claim: Option<&mut Claim<'_>>,
        wakes: &mut WakeBatch,
    ) -> Option<Result<(), ReleaseError>> {
        // One clock reading for every waiter this call serves (the wait
        // figures of a recorder; none without one).
        let mut now = None;
        while *rem > 0 {
            let Some(head) = list.front() else { break };
            if wakes.is_full() {
                return None;
            }
            // SAFETY: linked waiters are valid until unlinked (enqueue contract), and
            // `remaining` is guarded by the lock we hold.
            let waiter = unsafe { head.as_ref() };
            let remaining = waiter.remaining.with(|r| unsafe { *r });
            let given = (*rem).min(remaining);
            // SAFETY: lock-guarded field, lock held.
            waiter
                .remaining
                .with_mut(|r| unsafe { *r = remaining - given });
            *rem -= given;
            if given < remaining {
                break; // the head is partly served: the hand-off stops here (FIFO)
            }
            list.pop_front();
            if let Some(r) = self.recorder() {
                // SAFETY: lock-guarded field of a waiter just unlinked, lock held.
                let queued_at = waiter.queued_at.with(|q| unsafe { *q });
                let now = *now.get_or_insert_with(crate::inspect::stamp);
                let waited = now.saturating_sub(queued_at);
                // The queue lock is held, and this is the only place the
                // core records a wait.
                r.granted_after_locked(
                    waiter.requested(),
                    core::time::Duration::from_nanos(waited),
                );
            }
            // SAFETY: just unlinked under the lock; still valid (see above).
            unsafe { Self::grant_locked(head, claim.as_deref_mut(), wakes) };
        }
        if !list.is_empty() {
            debug_assert_eq!(*rem, 0);
            return Some(Ok(()));
        }
        // The queue is empty: clear QUEUED and bank the surplus in one CAS.
        let mut cur = self.state.0.load(Ordering::Relaxed);
        loop {
            let available = cur >> SHIFT;
            if available + *rem > Self::MAX_PERMITS {
                // Only reachable when the queue was already empty on entry (the
                // counter is 0 while QUEUED), or emptied by a cancel between two
                // wake batches; nothing beyond MAX can be stored, and what is left
                // in transit stays with the caller.
                return Some(Err(ReleaseError { unreleased: *rem }));
            }
            let new = ((available + *rem) << SHIFT) | (cur & CLOSED);
            // Release: publishes to whoever takes the surplus from the counter.
            match self
                .state
                .0
                .compare_exchange_weak(cur, new, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => {
                    *rem = 0;
                    return Some(Ok(()));
                }
                Err(actual) => cur = actual,
            }
        }
    }

    /// Runs a critical section on the queue. In a forked child it first removes
    /// the waiters the parent queued (see `crate::fork`).
    #[inline]
    fn locked<R>(&self, f: impl FnOnce(&mut WaitList) -> R) -> R {
        let mut list = sync::lock(&self.queue);
        if list.queued_before_fork() {
            self.purge_forked_locked(&mut list);
        }
        f(&mut list)
    }

    /// Takes the lock to remove the parent's waiters in a forked child. Returns
    /// whether there were any.
    #[cold]
    fn purge_forked(&self) -> bool {
        let mut list = sync::lock(&self.queue);
        let forked = list.queued_before_fork();
        if forked {
            self.purge_forked_locked(&mut list);
        }
        forked
    }

    /// With the lock held, in a forked child: closes every waiter the parent
    /// queued, without waking it (its wake belongs to a thread of the parent),
    /// and banks the permits granted to them, clearing `QUEUED`.
    #[cold]
    fn purge_forked_locked(&self, list: &mut WaitList) {
        let mut returned = 0usize;
        while let Some(head) = list.pop_front() {
            // SAFETY: linked, hence valid (the child has a copy of the parent's
            // memory); lock-guarded fields, lock held.
            let w = unsafe { head.as_ref() };
            returned += w.requested() - w.remaining.with(|r| unsafe { *r });
            // Neither call nor drop it: a callback or `Waker` of the parent's
            // threads may take locks that nobody in the child will release. A
            // `Waker` leaks (a reference count, in a child).
            let notify = w
                .node
                .notify
                .with_mut(|n| unsafe { core::mem::replace(&mut *n, Notify::None) });
            core::mem::forget(notify);
            w.node.set_phase(phase::CLOSED, Ordering::Release);
        }
        list.stamp_generation();
        // The queue is empty now: clear QUEUED and bank the partial grants. No
        // overflow: the counter was 0 while they were queued.
        let mut cur = self.state.0.load(Ordering::Relaxed);
        loop {
            let new = (((cur >> SHIFT) + returned) << SHIFT) | (cur & CLOSED);
            match self
                .state
                .0
                .compare_exchange_weak(cur, new, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(actual) => cur = actual,
            }
        }
    }

    /// Grants an unlinked waiter: as `notify_locked`, unless it is a callback
    /// waiter that `claim` claims (`release_claiming`). Then its grant is
    /// final at once: its callback is dropped unrun (a function and a
    /// pointer, nothing to free) and `GRANTED` stored, as the trampoline
    /// would after the callback, with no wake queued. That store is this
    /// thread's last access, as for a waiter woken through a `Waker`: the
    /// owner's `finish_raw` (Acquire) sees `GRANTED` and consumes it. No
    /// trampoline is involved, so no callback runs, nested or not.
    ///
    /// # Safety
    /// As `notify_locked`; `claim` keeps `release_claiming`'s contract.
    #[inline]
    unsafe fn grant_locked(
        waiter: NonNull<Waiter>,
        claim: Option<&mut Claim<'_>>,
        wakes: &mut WakeBatch,
    ) {
        if let Some(claim) = claim {
            // SAFETY: the caller guarantees validity; `notify` is lock-guarded.
            let w = unsafe { waiter.as_ref() };
            let cb = w.node.notify.with(|n| match unsafe { &*n } {
                Notify::Callback(wake, ctx) => Some((*wake, *ctx)),
                _ => None,
            });
            if let Some((wake, ctx)) = cb {
                if claim(wake, ctx) {
                    // SAFETY: lock-guarded, lock held.
                    w.node.notify.with_mut(|n| unsafe { *n = Notify::None });
                    // Release: publishes the grant (and the wait figures
                    // recorded under the lock) to the owner's Acquire in
                    // `finish`; last access, as in `notify_locked`.
                    w.node.set_phase(phase::GRANTED, Ordering::Release);
                    return;
                }
            }
        }
        // SAFETY: forwarded contract.
        unsafe { Self::notify_locked(waiter, phase::GRANTED, wakes) }
    }

    /// Records the outcome of an unlinked waiter and queues its wake.
    ///
    /// # Safety
    /// `waiter` was just unlinked under the queue lock, which is still held.
    unsafe fn notify_locked(waiter: NonNull<Waiter>, final_phase: u8, wakes: &mut WakeBatch) {
        // SAFETY: the caller guarantees validity; `notify` is lock-guarded.
        let w = unsafe { waiter.as_ref() };
        let is_callback = w
            .node
            .notify
            .with(|n| unsafe { matches!(&*n, Notify::Callback(..)) });
        if is_callback {
            // The callback stays in `notify`: from NOTIFYING on, the waiter belongs
            // to this thread's trampoline (`delivery`), which calls it and stores
            // the final phase.
            let notifying = if final_phase == phase::GRANTED {
                phase::NOTIFYING_GRANTED
            } else {
                phase::NOTIFYING_CLOSED
            };
            w.node.set_phase(notifying, Ordering::Release);
            wakes.push(Wake::Callback(waiter));
            return;
        }
        let notify = w
            .node
            .notify
            .with_mut(|n| unsafe { core::mem::replace(&mut *n, Notify::None) });
        // Last access: once the owner sees the final phase, it may free the waiter.
        w.node.set_phase(final_phase, Ordering::Release);
        match notify {
            Notify::Waker(waker) => wakes.push(Wake::Waker(waker)),
            Notify::Thread(thread) => wakes.push(Wake::Thread(thread)),
            Notify::None | Notify::Callback(..) => {}
        }
    }

    /// Closes the semaphore: every queued waiter is woken with `Closed` (their
    /// partial grants go back to the counter) and every later acquire fails with
    /// `Closed`. Permits already held can still be released. Idempotent.
    ///
    /// Closing is not atomic with respect to a long queue: it wakes the waiters
    /// in batches of 32, and a release that runs between two batches may still
    /// grant a waiter that close has not reached yet. Such a waiter sees
    /// `Granted` (and holds its permits) rather than `Closed`. Every acquire that
    /// *starts* after `close` returned fails.
    ///
    /// # Panics
    /// If a `Waker` panics while being woken: after every waiter was woken and
    /// every partial grant banked, the first panic is re-raised.
    ///
    /// ```
    /// use std::pin::pin;
    /// use volt_sem::{AcquireError, Semaphore};
    /// # futures::executor::block_on(async {
    /// let sem = Semaphore::new(1);
    /// let held = sem.acquire(1).await.unwrap();
    /// let waiting = sem.acquire(1);
    /// sem.close();
    /// assert_eq!(waiting.await.unwrap_err(), AcquireError::Closed);
    /// drop(held); // permits held can still be released
    /// assert_eq!(sem.available_permits(), 1);
    /// # });
    /// ```
    pub fn close(&self) {
        // Release/Acquire: an acquirer that sees CLOSED also sees what the closer
        // did before closing.
        let prev = self.state.0.fetch_or(CLOSED, Ordering::AcqRel);
        if prev & CLOSED != 0 {
            return; // the first close drains the queue; nobody can enqueue since
        }
        let mut wakes = WakeBatch::new();
        let mut rethrow = Rethrow::new();
        let mut returned = 0usize;
        loop {
            let drained = self.locked(|list| {
                while let Some(head) = list.front() {
                    if wakes.is_full() {
                        return false;
                    }
                    list.pop_front();
                    // SAFETY: was linked, so valid; lock-guarded fields, lock held.
                    unsafe {
                        let w = head.as_ref();
                        returned += w.requested() - w.remaining.with(|r| *r);
                        Self::notify_locked(head, phase::CLOSED, &mut wakes);
                    }
                }
                // Empty queue: clear QUEUED and bank the partial grants. No overflow:
                // the counter was 0 while waiters were queued, and what they were
                // granted fits.
                let mut cur = self.state.0.load(Ordering::Relaxed);
                loop {
                    let new = (((cur >> SHIFT) + returned) << SHIFT) | CLOSED;
                    match self.state.0.compare_exchange_weak(
                        cur,
                        new,
                        Ordering::Release,
                        Ordering::Relaxed,
                    ) {
                        Ok(_) => return true,
                        Err(actual) => cur = actual,
                    }
                }
            });
            wakes.wake_all(&mut rethrow);
            if drained {
                rethrow.finish();
                return;
            }
        }
    }

    /// Starts an acquire: takes the permits at once if it can, else queues
    /// `waiter` with the wake that `notify` builds.
    ///
    /// # Safety
    /// `waiter` is not queued (phase IDLE, GRANTED or CLOSED) and stays valid and
    /// unmoved until it is finished (see `finish_raw`) or its final phase is seen.
    pub(crate) unsafe fn start_acquire(
        &self,
        waiter: &Waiter,
        n: usize,
        notify: impl FnOnce() -> Notify,
    ) -> Result<RawAcquire, AcquireError> {
        match self.try_take(n) {
            Ok(()) => return Ok(RawAcquire::Ready),
            Err(TryAcquireError::Closed) => return Err(AcquireError::Closed),
            Err(TryAcquireError::TooManyPermits) => return Err(AcquireError::TooManyPermits),
            Err(TryAcquireError::NoPermits) => {}
        }
        // Slow path: lock *before* the CAS that drains the counter, so the decision
        // to queue and the queueing are one step as seen by lock-taking releasers;
        // lock-free releasers are handled by the QUEUED bit in the same CAS.
        let notify = notify();
        let queued_at = crate::inspect::stamp();
        crate::fork::watch();
        let (result, unused) = self.locked(move |list| {
            let mut cur = self.state.0.load(Ordering::Relaxed);
            loop {
                if cur & CLOSED != 0 {
                    return (Err(AcquireError::Closed), Some(notify));
                }
                let available = cur >> SHIFT; // 0 if QUEUED (invariant 2)
                let (new, taken) = if available >= n {
                    (cur - (n << SHIFT), n)
                } else {
                    (QUEUED, available) // drain everything, mark the queue non-empty
                };
                // Already QUEUED: the counter is 0 (invariant 2), so there is
                // nothing to drain, and the bit stays as it is: this waiter
                // links behind the others without writing the word (one locked
                // instruction less per queued acquire on a busy queue). Only a
                // lock holder sets or clears QUEUED, so under the lock the bit
                // read here is current; the lock-free writers (a release, a
                // take, `forget_permits`) leave a QUEUED word alone, all but
                // `close`, whose CLOSED, if this load missed it, orders the
                // close after this enqueue: it drains the queue under the lock,
                // this waiter included, once this section is over.
                let swapped = if cur & QUEUED != 0 {
                    debug_assert_eq!(available, 0);
                    Ok(cur)
                } else {
                    // Acquire: pairs with the Release that banked the drained permits.
                    self.state.0.compare_exchange_weak(
                        cur,
                        new,
                        Ordering::Acquire,
                        Ordering::Relaxed,
                    )
                };
                match swapped {
                    Ok(_) if taken == n => {
                        if let Some(r) = self.recorder() {
                            r.granted(n);
                        }
                        return (Ok(RawAcquire::Ready), Some(notify));
                    }
                    Ok(_) => {
                        // The waiter may have queued on a shared semaphore last.
                        waiter.node.set_backend(Backend::Local);
                        waiter.requested.store(n, Ordering::Relaxed);
                        waiter
                            .semaphore
                            .store(self as *const Self as *mut (), Ordering::Relaxed);
                        // SAFETY: lock-guarded fields, lock held; the waiter is not
                        // yet reachable by anyone else.
                        waiter.remaining.with_mut(|r| unsafe { *r = n - taken });
                        // SAFETY: as above.
                        waiter.queued_at.with_mut(|q| unsafe { *q = queued_at });
                        waiter
                            .node
                            .notify
                            .with_mut(|slot| unsafe { *slot = notify });
                        // Release: whoever sees WAITING sees the generation too
                        // (`Waiter::state` in a forked child).
                        waiter
                            .fork_generation
                            .store(crate::fork::generation() as u32, Ordering::Relaxed);
                        waiter.node.set_phase(phase::WAITING, Ordering::Release);
                        if list.is_empty() {
                            list.stamp_generation();
                        }
                        // SAFETY: not linked (caller contract), stays valid and
                        // pinned until finished; lock held.
                        unsafe { list.push_back(NonNull::from(waiter)) };
                        return (Ok(RawAcquire::Pending), None);
                    }
                    Err(actual) => cur = actual,
                }
            }
        });
        drop(unused); // a Waker's drop is user code: outside the lock
        result
    }

    /// Replaces the waker of a queued `Waker` waiter. Returns `false` if the waiter
    /// is no longer queued (its outcome is decided: poll again).
    ///
    /// A `Waker`'s `clone` and `drop` are user code, so neither runs under the
    /// lock: the new waker is cloned before it, and whichever of the two is not
    /// kept is dropped after it.
    pub(crate) fn update_waker(&self, waiter: &Waiter, waker: &Waker) -> bool {
        let mut new = Some(Notify::Waker(waker.clone()));
        let still_queued = self.locked(|_| {
            if waiter.node.phase(Ordering::Relaxed) != phase::WAITING {
                return false;
            }
            // SAFETY: lock-guarded field, lock held; the waiter is queued here.
            waiter.node.notify.with_mut(|slot| unsafe {
                if !matches!(&*slot, Notify::Waker(old) if old.will_wake(waker)) {
                    new = Some(core::mem::replace(&mut *slot, new.take().unwrap()));
                }
            });
            true
        });
        drop(new); // the unused or the replaced waker, outside the lock
        still_queued
    }

    /// Removes a WAITING waiter. `None` if a notifier unlinked it first.
    fn cancel_queued(&self, waiter: &Waiter) -> Option<Finish> {
        let mut wakes = WakeBatch::new();
        let mut rethrow = Rethrow::new();
        let (returned, rem, served, notify) = self.locked(|list| {
            if waiter.node.phase(Ordering::Relaxed) != phase::WAITING {
                return None;
            }
            // SAFETY: WAITING under the lock means linked in this semaphore's queue
            // (finish_raw's contract names the semaphore); fields are lock-guarded.
            let (returned, notify) = unsafe {
                list.remove(NonNull::from(waiter));
                let returned = waiter.requested() - waiter.remaining.with(|r| *r);
                let notify = waiter
                    .node
                    .notify
                    .with_mut(|n| core::mem::replace(&mut *n, Notify::None));
                (returned, notify)
            };
            waiter.node.set_phase(phase::IDLE, Ordering::Relaxed);
            let mut rem = returned;
            let served = if returned > 0 {
                // The partial grant goes on to the next waiters, FIFO. Cannot
                // overflow: these permits came out of this semaphore, and the
                // counter is 0 while anything is queued.
                self.serve_locked(list, &mut rem, None, &mut wakes)
                    .is_some()
            } else {
                if list.is_empty() {
                    // The counter is 0 (invariant 2); just clear QUEUED.
                    self.state.0.fetch_and(!QUEUED, Ordering::Relaxed);
                }
                true
            };
            Some((returned, rem, served, notify))
        })?;
        wakes.wake_all(&mut rethrow);
        if !served {
            // A full wake batch interrupted it. Fails only if someone released
            // permits they never held and filled the counter meanwhile.
            let _ = self.hand_over(rem, None, &mut wakes, &mut rethrow);
        }
        // A Waker's drop is user code: outside the lock, and after the
        // hand-off delivered its wakes, since it may finish a waiter this
        // cancel completed (whose callback is then no longer to run here).
        drop(notify);
        rethrow.finish();
        if let Some(r) = self.recorder() {
            r.cancelled();
        }
        Some(Finish::Cancelled { returned })
    }
}

// SAFETY: a queued waiter is completed once, through the `raw` trampoline
// (the release, close and fork paths claim it under the queue lock and
// deliver after it); `finish_raw` is `raw::finish`, which returns only once
// the callback returned or never will.
unsafe impl raw::RawSemaphore for Semaphore {
    type Waiter = Waiter;
    type Error = AcquireError;
    type Finish = Finish;

    unsafe fn acquire_raw(
        &self,
        waiter: Pin<&Waiter>,
        n: usize,
        wake: WakeFn,
        ctx: *mut c_void,
    ) -> Result<RawAcquire, AcquireError> {
        debug_assert!(!waiter.is_busy(), "acquire_raw on a busy waiter");
        // A previous outcome (Granted/Closed) belongs to the caller from now on:
        // forget it, so that a `Ready` or an error leaves the waiter Idle rather
        // than reporting the old outcome again. The waiter is not busy, so only
        // its owner (this thread) touches the phase.
        waiter.node.set_phase(phase::IDLE, Ordering::Relaxed);
        // SAFETY: forwarded caller contract.
        unsafe { self.start_acquire(waiter.get_ref(), n, || Notify::Callback(wake, ctx)) }
    }

    unsafe fn finish_raw(&self, waiter: Pin<&Waiter>) -> Finish {
        let waiter = waiter.get_ref();
        // A forked child's copy of a request whose callback a thread of the
        // parent was delivering: no thread here will ever finish it.
        if let Some(out) = waiter.finish_lost_to_fork() {
            return out;
        }
        // SAFETY: forwarded contract: idle or queued on this semaphore, pinned.
        unsafe { raw::finish(&waiter.node, raw::CancelWith(|| self.cancel_queued(waiter))) }
    }

    fn owns(&self, waiter: &Waiter) -> bool {
        waiter.belongs_to(self)
    }
}
