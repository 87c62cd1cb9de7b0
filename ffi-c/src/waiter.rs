//! `volt_waiter`: the caller-allocated waiter of a non-blocking acquire, its
//! wake callback (through `trampoline`), and the calls that queue it
//! (`volt_sem_acquire`), ask it (`volt_waiter_status`, `volt_waiter_token`,
//! ...) and end it (`volt_sem_cancel`, `volt_sem_try_cancel`).

use std::cell::Cell;
use std::ffi::c_void;
use std::pin::Pin;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU8, Ordering};
use std::sync::Arc;
use volt_sem_backend::RawSemaphore;

use volt_core::{RawAcquire, WaiterState};
use volt_sem_backend::{Finish, Waiter};

use crate::boundary::{aligned, count, ffi_call, ffi_status, invalid, non_null, Checked};
use crate::last_error::{refuse, Refusal};
use crate::semaphore::handle;
use crate::semaphore::volt_sem;
use crate::status::status_of;
use crate::status::volt_status::{self, *};

/// The wake callback: `wake(ctx)` is called at most once per PENDING acquire.
/// See "Wake callbacks" at the top of this header. It must return normally: a
/// C++ exception thrown out of it aborts the process, and `longjmp` out of it
/// is undefined behaviour.
// "C-unwind": a foreign exception escaping the callback is then defined
// behaviour on the Rust side: it reaches `trampoline`, an `extern "C"` function,
// whose unwind guard aborts the process (instead of unwinding through frames
// that hold the semaphore's state mid-update).
pub type volt_wake_fn = Option<unsafe extern "C-unwind" fn(ctx: *mut c_void)>;

/// Size in bytes of `volt_waiter`.
pub const VOLT_WAITER_SIZE: usize = 512;
/// Alignment in bytes of `volt_waiter`.
pub const VOLT_WAITER_ALIGN: usize = 8;

/// A caller-allocated waiter: the queue node of one waiting acquire. Opaque:
/// initialise it with `volt_waiter_init` before first use; never copy or move it
/// while it is busy (from a PENDING `volt_sem_acquire` until the owner's
/// `volt_sem_cancel` returned). An idle waiter needs no destructor: just free it.
#[repr(C)]
pub struct volt_waiter {
    // A literal length: cbindgen cannot evaluate `VOLT_WAITER_SIZE / 8`. The
    // assertions below tie the two together.
    pub(crate) _opaque: [u64; 64],
}

/// What actually lives inside a `volt_waiter`.
pub(crate) struct Slot {
    waiter: Waiter,
    /// `MAGIC` once `volt_waiter_init` ran; lets every call reject zeroed or
    /// uninitialised memory.
    magic: AtomicU32,
    /// Owner fields, written before the waiter is queued (the queue lock publishes
    /// them to the notifying thread) and read by the trampoline.
    wake: Cell<volt_wake_fn>,
    ctx: Cell<*mut c_void>,
    /// Who owns the delivery of this PENDING acquire's outcome: `CLAIM_FREE` when
    /// queued, then either the trampoline (`CLAIM_RUNNING` while the user's
    /// callback runs, `CLAIM_RETURNED` after) or `volt_sem_try_cancel`
    /// (`CLAIM_CANCELLING`: the user's callback will not be called).
    claim: AtomicU8,
    /// One strong reference (from `Arc::into_raw`) to the semaphore this waiter is
    /// queued on, while busy; NULL otherwise. Non-NULL is what "busy" means to C:
    /// from a PENDING acquire until the owner's `volt_sem_cancel` returned; the
    /// slot may be referenced by the semaphore then and must not be reused.
    /// Written by the owner only.
    sem: AtomicPtr<volt_sem>,
    /// An owner's `volt_sem_cancel`/`volt_sem_try_cancel` (outside the callback)
    /// is ending this request now. A callback that this very call's hand-off
    /// completes runs on the same thread before it returns, and may cancel this
    /// waiter too (a sibling it owns): that inner call must not end it a second
    /// time. Only the owner's thread reads or writes it (one-owner rule).
    ending: AtomicBool,
}

const MAGIC: u32 = 0x766f_6c74; // "volt"

impl Slot {
    /// Busy in the C sense (see `sem`). Acquire: pairs with the Release that
    /// ends a request, so a caller that sees it idle sees it finished.
    fn is_busy(&self) -> bool {
        !self.sem.load(Ordering::Acquire).is_null()
    }
}

const CLAIM_FREE: u8 = 0;
const CLAIM_RUNNING: u8 = 1;
const CLAIM_RETURNED: u8 = 2;
const CLAIM_CANCELLING: u8 = 3;

const _: () = {
    assert!(std::mem::size_of::<Slot>() <= std::mem::size_of::<volt_waiter>());
    assert!(std::mem::align_of::<Slot>() <= std::mem::align_of::<volt_waiter>());
    assert!(std::mem::size_of::<volt_waiter>() == VOLT_WAITER_SIZE);
    assert!(std::mem::align_of::<volt_waiter>() == VOLT_WAITER_ALIGN);
};

/// The core's callback for every C waiter: calls the user's callback with the
/// user's context (the core's context is the slot), unless `volt_sem_try_cancel`
/// claimed the outcome first.
unsafe extern "C" fn trampoline(ctx: *mut c_void) {
    // SAFETY: `ctx` is the slot passed to `acquire_raw` in `volt_sem_acquire`. The
    // core calls this at most once, while the waiter is in a NOTIFYING phase, and
    // the owner cannot free or reuse the slot before its `volt_sem_cancel` or
    // `volt_sem_try_cancel` returned an outcome, which both wait for this
    // function to return (the core keeps the waiter NOTIFYING until then).
    let slot = unsafe { &*(ctx as *const Slot) };
    // Acquire: pairs with the owner's release of CLAIM_CANCELLING (nothing to read
    // then); AcqRel on success orders the user callback after the claim.
    if slot
        .claim
        .compare_exchange(
            CLAIM_FREE,
            CLAIM_RUNNING,
            Ordering::AcqRel,
            Ordering::Acquire,
        )
        .is_err()
    {
        // `volt_sem_try_cancel` took the outcome: its caller is told directly.
        return;
    }
    // `wake`/`ctx` were written before the waiter was queued; the queue lock
    // orders those writes before this read.
    let (wake, user_ctx) = (slot.wake.get(), slot.ctx.get());
    if let Some(wake) = wake {
        // The calls the callback makes leave their messages to it: the call
        // that runs it on this thread (a release, a cancel, a close) keeps
        // its own for `volt_last_error_message`.
        let saved = crate::last_error::stash_last_error();
        // SAFETY: the caller of `volt_sem_acquire` promised that `wake(ctx)` may be
        // called once, from any thread, until the waiter is finished. Should it
        // unwind (a C++ exception), this `extern "C"` function aborts the process.
        unsafe { wake(user_ctx) };
        crate::last_error::restore_last_error(saved);
    }
    // Release: whatever the callback wrote happens-before a `volt_sem_try_cancel`
    // that reads CLAIM_RETURNED. The last access to the slot in this function.
    slot.claim.store(CLAIM_RETURNED, Ordering::Release);
}

/// Borrows an initialised slot, or `None` for NULL, misaligned or uninitialised
/// memory.
///
/// # Safety
/// `waiter` is NULL or points to `VOLT_WAITER_SIZE` readable, writable bytes.
unsafe fn slot_ref<'a>(waiter: *mut volt_waiter) -> Option<&'a Slot> {
    if waiter.is_null() || !waiter.is_aligned() {
        return None;
    }
    let slot = waiter as *const Slot;
    // SAFETY: non-NULL, aligned and large enough (caller contract + the size
    // assertions above), and initialised by `volt_waiter_init` or zeroed (the
    // contract of every caller of this function: only `volt_waiter_init` accepts
    // memory never written). The magic word is read through a raw pointer before
    // any reference to the slot exists; zeroed memory fails the check.
    let magic = unsafe { (*ptr::addr_of!((*slot).magic)).load(Ordering::Relaxed) };
    if magic != MAGIC {
        return None;
    }
    // SAFETY: initialised by `volt_waiter_init` (magic), every field is
    // interior-mutable, so a shared reference is sound even while the semaphore or
    // the trampoline on another thread holds one too.
    Some(unsafe { &*slot })
}

/// [`slot_ref`] as a check: `VOLT_INVALID_ARGUMENT` for NULL, misaligned or
/// uninitialised memory.
///
/// # Safety
/// As for [`slot_ref`].
unsafe fn slot<'a>(waiter: *mut volt_waiter) -> Checked<&'a Slot> {
    // SAFETY: forwarded caller contract.
    if let Some(slot) = unsafe { slot_ref(waiter) } {
        return Ok(slot);
    }
    non_null(waiter, "waiter")?;
    aligned(waiter, "waiter")?;
    invalid("`waiter` is not initialised (volt_waiter_init), or was overwritten")
}

fn pinned(slot: &Slot) -> Pin<&Waiter> {
    // SAFETY: the C contract forbids moving a waiter while it is busy, and the
    // core only relies on the address between a PENDING acquire and the finish.
    unsafe { Pin::new_unchecked(&slot.waiter) }
}

/// `sizeof(volt_waiter)`, for bindings that allocate waiters dynamically.
#[no_mangle]
pub extern "C" fn volt_waiter_size() -> usize {
    ffi_call(0, std::mem::size_of::<volt_waiter>)
}

/// `alignof(volt_waiter)`, for bindings that allocate waiters dynamically.
#[no_mangle]
pub extern "C" fn volt_waiter_align() -> usize {
    ffi_call(0, std::mem::align_of::<volt_waiter>)
}

/// Initialises a waiter: must be called once on its memory before its first use
/// (fresh stack or heap memory is fine: this only writes). Memory that was never
/// initialised must not be passed to any other function; zeroed memory is
/// rejected by all of them with `VOLT_INVALID_ARGUMENT`.
///
/// An idle waiter is reusable without re-initialising. Re-initialising a busy
/// waiter (see `volt_waiter_is_busy`) is undefined behaviour: it would corrupt the
/// semaphore's queue; this function cannot detect it without reading memory that
/// is normally uninitialised.
///
/// Returns `VOLT_OK`, or `VOLT_INVALID_ARGUMENT` if `waiter` is NULL or misaligned.
///
/// # Safety
/// `waiter` is NULL or points to `VOLT_WAITER_SIZE` writable bytes that are not a
/// busy waiter.
#[no_mangle]
pub unsafe extern "C" fn volt_waiter_init(waiter: *mut volt_waiter) -> volt_status {
    ffi_status!("volt_waiter_init", || {
        non_null(waiter, "waiter")?;
        aligned(waiter, "waiter")?;
        let slot = Slot {
            waiter: Waiter::new(),
            magic: AtomicU32::new(MAGIC),
            wake: Cell::new(None),
            ctx: Cell::new(ptr::null_mut()),
            claim: AtomicU8::new(CLAIM_FREE),
            sem: AtomicPtr::new(ptr::null_mut()),
            ending: AtomicBool::new(false),
        };
        // SAFETY: non-NULL, aligned, and `VOLT_WAITER_SIZE` bytes large enough for a
        // `Slot` (checked at compile time) and writable (contract). Not a busy
        // waiter (contract), so the semaphore does not reference it. `write` does
        // not read or drop the old content: an idle slot owns nothing.
        unsafe { (waiter as *mut Slot).write(slot) };
        Ok(VOLT_OK)
    })
}

/// Whether an initialised waiter is busy: from a `volt_sem_acquire` that returned
/// `VOLT_PENDING` until the owner's `volt_sem_cancel` (or a `volt_sem_try_cancel`
/// that returned an outcome), made outside its callback, has returned. A busy
/// waiter must not be re-initialised, reused, moved or freed. Like the other calls
/// that take a waiter, only its owner may ask (or its own callback).
///
/// Returns false for NULL, misaligned or zeroed memory.
///
/// # Safety
/// `waiter` is NULL or points to an initialised or zeroed `volt_waiter`.
#[no_mangle]
pub unsafe extern "C" fn volt_waiter_is_busy(waiter: *const volt_waiter) -> bool {
    ffi_call(false, || {
        // SAFETY: NULL, zeroed or initialised waiter memory (contract); only read.
        unsafe { slot_ref(waiter.cast_mut()) }.is_some_and(Slot::is_busy)
    })
}

/// Acquires `n` permits without blocking the calling thread.
///
/// Returns
/// * `VOLT_OK` (READY): the permits were taken at once; `wake` will not be called;
///   the waiter stays idle and may be reused or freed at once.
/// * `VOLT_PENDING`: the waiter is queued (FIFO) and busy; `wake(ctx)` will be
///   called exactly once, on whichever thread completes the grant or closes the
///   semaphore, unless `volt_sem_cancel` removes the waiter first. Every PENDING
///   waiter must be passed to `volt_sem_cancel` (see "Waiter lifetime").
/// * `VOLT_CLOSED`: the semaphore is closed.
/// * `VOLT_INVALID_ARGUMENT`: NULL `sem`, `waiter` or `wake`; `n == 0` or `n >
///   volt_max_permits()` (or above a shared semaphore's total); a waiter that
///   was not initialised or is still busy.
/// * On a shared semaphore: `VOLT_QUEUE_FULL` (not queued: nothing changed),
///   `VOLT_FORKED`, `VOLT_CORRUPT`, `VOLT_OS_ERROR`. Its `wake(ctx)` runs on the
///   process's doorbell thread of that name, whichever process released.
/// * On a Redis semaphore it never blocks and is always `VOLT_PENDING` when
///   accepted (the handle's door thread sends the request; at once only the
///   errors the handle knows itself: `VOLT_STATE_LOST`, `VOLT_FORKED`; a
///   close is Redis's to report, through the callback, since another client
///   may have reopened the name). Its `wake(ctx)` runs on the handle's door thread (the
///   request granted at once, or by a release through this handle; or a
///   thread waiting in a call of the handle that ran the door's work
///   itself), its agent thread (granted by another client), or the thread
///   that found the session lost: when the grant is complete, the semaphore closed, or the
///   request failed (then `volt_sem_cancel` returns the error:
///   `VOLT_LEASE_EXPIRED`, `VOLT_STATE_LOST`, `VOLT_CONNECTION_FAILED`,
///   `VOLT_REDIS_ERROR`, `VOLT_PROTOCOL_ERROR`, ...). After `VOLT_OK` from
///   `volt_waiter_token` gives the grant's fencing token.
///
/// # Safety
/// `sem` is NULL or a live handle; `waiter` is NULL or a `volt_waiter`
/// owned by the caller; if PENDING, the waiter lifetime rules at the top of
/// this header apply to `waiter` and `ctx`.
#[no_mangle]
pub unsafe extern "C" fn volt_sem_acquire(
    sem: *const volt_sem,
    waiter: *mut volt_waiter,
    n: usize,
    wake: volt_wake_fn,
    ctx: *mut c_void,
) -> volt_status {
    ffi_status!("volt_sem_acquire", || {
        // SAFETY: NULL or live handle / waiter memory (contract).
        let slot = unsafe { slot(waiter) }?;
        // SAFETY: as above.
        let handle = unsafe { handle(sem) }?;
        if wake.is_none() {
            return Err(refuse(VOLT_INVALID_ARGUMENT, Refusal::Null("wake")));
        }
        count(n)?;
        // Only the owner sets `sem`, so this check-then-set is not a race unless
        // the caller breaks the one-owner rule.
        if slot.is_busy() || slot.waiter.state() != WaiterState::Idle {
            return invalid("`waiter` is busy: its last acquire is not ended (volt_sem_cancel)");
        }
        slot.wake.set(wake);
        slot.ctx.set(ctx);
        // The waiter's own reference, taken before it can be queued.
        // SAFETY: `sem` is a live handle (contract).
        unsafe { Arc::increment_strong_count(sem) };
        slot.claim.store(CLAIM_FREE, Ordering::Relaxed);
        // Relaxed: read by this owner, or by its callback, which the queue lock
        // (or the backend's hand-off) orders after this store.
        slot.sem.store(sem.cast_mut(), Ordering::Relaxed);
        let ctx = slot as *const Slot as *mut c_void;
        // SAFETY: the waiter is idle (checked above), and the C contract keeps it
        // valid and unmoved, with `ctx` (the slot itself) valid for the
        // trampoline, until `volt_sem_cancel` returned.
        let result = unsafe { handle.sem.acquire_raw(pinned(slot), n, trampoline, ctx) };
        let status = match result {
            Ok(RawAcquire::Pending) => return Ok(VOLT_PENDING),
            Ok(RawAcquire::Ready) => VOLT_OK,
            Err(e) => status_of(e),
        };
        // Not queued: undo the bookkeeping.
        slot.sem.store(ptr::null_mut(), Ordering::Relaxed);
        // SAFETY: the reference taken above; the caller still holds `sem`.
        unsafe { Arc::decrement_strong_count(sem) };
        Ok(status)
    })
}

/// Where a waiter stands; callable from any thread, including inside its wake
/// callback (the right place to ask), concurrently with every other call on the
/// waiter except `volt_waiter_init` (and freeing its memory): the caller must make
/// the initialisation happen-before this call from another thread (e.g. publish
/// the waiter through a mutex or a release store), and must not free or
/// re-initialise the waiter while another thread may be asking.
///
/// Returns `VOLT_PENDING` (queued), `VOLT_OK` (the full grant arrived),
/// `VOLT_CLOSED` (closed while queued), `VOLT_IDLE` (not queued, no outcome), or
/// `VOLT_INVALID_ARGUMENT` (NULL or uninitialised). `VOLT_OK`/`VOLT_CLOSED` may be
/// reported just before the callback runs: only `volt_sem_cancel` says when the
/// waiter's memory is free. On a shared semaphore the status may lag the grant
/// or the close by as long as this process's doorbell thread takes to collect
/// it (see SHARED SEMAPHORES at the top). In a child created by `fork()`, a
/// request that the parent had queued on a local semaphore reads `VOLT_CLOSED`
/// (see FORK). For a Redis waiter, `VOLT_CLOSED` also stands for a
/// request that failed (its session lost: it holds nothing either);
/// `volt_sem_cancel` returns the precise status (`VOLT_LEASE_EXPIRED`,
/// `VOLT_STATE_LOST`).
///
/// # Safety
/// `waiter` is NULL or points to a `volt_waiter`.
#[no_mangle]
pub unsafe extern "C" fn volt_waiter_status(waiter: *mut volt_waiter) -> volt_status {
    ffi_status!("volt_waiter_status", || {
        // SAFETY: NULL or waiter memory (contract).
        let slot = unsafe { slot(waiter) }?;
        Ok(match slot.waiter.state() {
            // A request the parent of this forked child queued: closed here
            // (header, FORK), even before a call that takes the semaphore's
            // lock has purged it.
            WaiterState::Waiting if slot.waiter.queued_before_fork() => VOLT_CLOSED,
            WaiterState::Waiting => VOLT_PENDING,
            WaiterState::Granted => VOLT_OK,
            WaiterState::Closed => VOLT_CLOSED,
            WaiterState::Idle => VOLT_IDLE,
        })
    })
}

/// Ends a PENDING acquire: removes the waiter if it is still queued, or collects
/// its outcome. `sem` must be a handle to the semaphore the waiter was queued on:
/// the one it was queued through, a clone of it, or, for a named semaphore,
/// another `volt_sem_open` of the same name in this process (not one opened
/// after the name was unlinked: that is a new semaphore). A Redis waiter only
/// through the handle it was queued through or a clone of it (the handle of
/// another `volt_sem_connect` is refused, even one that shares its session).
/// If `returned` is not NULL, `*returned` is set to the partial grant handed back
/// (0 unless the result is `VOLT_CANCELLED`).
///
/// Returns
/// * `VOLT_OK`: the full grant had arrived: the caller owns the `n` permits and
///   must release them.
/// * `VOLT_CANCELLED`: removed while queued; its partial grant was handed on.
/// * `VOLT_CLOSED`: the semaphore was closed while it waited; it holds nothing.
/// * Redis: the error that ended the request (`VOLT_LEASE_EXPIRED` or
///   `VOLT_STATE_LOST`: the session was lost while it waited;
///   `VOLT_CONNECTION_FAILED` and the like: its round trip failed); it holds
///   nothing. Removing a queued Redis waiter never blocks: it is removed
///   here (`VOLT_CANCELLED`, `*returned` 0) and taken out of Redis by the
///   handle's door thread, which hands its partial grant on and gives back
///   a grant that came first; if Redis cannot be reached, the handle's
///   session is given up (so that nothing can be granted to a request
///   nobody waits for), and its other holders and waiters learn
///   `VOLT_LEASE_EXPIRED`.
/// * `VOLT_IDLE`: nothing to end: not busy, or the outcome was already collected
///   by a call from inside its wake callback (that call's `VOLT_OK` transferred
///   the permits: this `VOLT_IDLE` means the caller owns nothing more, so it must
///   not release them a second time), or a call on this thread is ending this
///   waiter right now (a callback that the owner's cancel of it completed, by
///   handing its partial grant on, cancels it again): that call returns the
///   outcome.
/// * `VOLT_INVALID_ARGUMENT`: NULL, uninitialised waiter, or `sem` is not the
///   semaphore the waiter is queued on (nothing changed).
/// * `VOLT_FORKED`: `sem` is a Redis handle used in a child of the process
///   that connected it (nothing changed: the request is the parent's, and
///   the waiter stays busy in the child).
///
/// Outside the waiter's callback, this waits for a callback running on another
/// thread to return; when it returns the waiter is idle and the waiter and `ctx`
/// may be freed or reused. So never call it while holding a lock (or anything
/// else) that a wake callback may be waiting for: it would wait for the callback,
/// and the callback for it. Drop the lock first, or use `volt_sem_try_cancel`.
/// Inside its own callback it returns at once with the outcome, and the waiter
/// stays busy until the owner's call outside.
///
/// # Safety
/// `sem` is NULL or a live handle; `waiter` is NULL or a `volt_waiter`
/// owned by the caller (or called from its own callback); `returned` is NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn volt_sem_cancel(
    sem: *const volt_sem,
    waiter: *mut volt_waiter,
    returned: *mut usize,
) -> volt_status {
    ffi_status!("volt_sem_cancel", || {
        // SAFETY: forwarded caller contract.
        unsafe { end_acquire(sem, waiter, returned, true) }
    })
}

/// Like `volt_sem_cancel`, but never waits for the waiter's wake callback: for an
/// owner that must end a PENDING acquire while holding a lock the callback takes.
///
/// Returns what `volt_sem_cancel` returns, or `VOLT_PENDING` when ending the
/// acquire now would mean waiting for its callback: the grant or the close has
/// arrived and `wake(ctx)` is running on another thread or about to. Nothing
/// changed: the callback is or will be called as usual; wait for it (e.g. in
/// `pthread_cond_wait`, which drops the lock) and call this again. It stays
/// `VOLT_PENDING` until the callback has returned, a moment after its last
/// action (e.g. its signal): if that was seen, yield and call again. If this call
/// wins the race against an arriving grant or close, it returns that outcome
/// (`VOLT_OK`, `VOLT_CLOSED`) itself and `wake(ctx)` is not called.
///
/// Only this waiter's callback is never waited for: if a release wakes several
/// waiters at once while this call removes the waiter, it may wait for the
/// callbacks of the waiters woken just before it. So the lock held across this
/// call must not be one that other waiters' callbacks take; the wait for this
/// waiter's own callback, the deadlock of `volt_sem_cancel`, cannot happen.
///
/// Inside the waiter's own callback it is the same as `volt_sem_cancel`; so it
/// is inside another waiter's callback when this waiter's callback is still to
/// run on the same thread (one release, close or cancel completed both): it
/// returns the outcome at once and that callback is never called, as with
/// `volt_sem_cancel` (nothing to wait for there). The same on a shared
/// semaphore, whose callbacks a release delivers together on one thread (a
/// process's doorbell thread of the name), and on a Redis one for the
/// callbacks one thread delivers (a Redis handle's door or agent thread; the
/// agent may deliver the first grant of a release before the handle learns of
/// the others: a sibling not yet completed is then still queued, and this
/// cancels it, `VOLT_CANCELLED`, its grant given back); a sibling whose
/// callback runs, or is to run, on another thread (e.g. a Redis handle's
/// other one) makes this return `VOLT_PENDING`, as anywhere.
///
/// # Safety
/// As for `volt_sem_cancel`.
#[no_mangle]
pub unsafe extern "C" fn volt_sem_try_cancel(
    sem: *const volt_sem,
    waiter: *mut volt_waiter,
    returned: *mut usize,
) -> volt_status {
    ffi_status!("volt_sem_try_cancel", || {
        // SAFETY: forwarded caller contract.
        unsafe { end_acquire(sem, waiter, returned, false) }
    })
}

/// `volt_sem_cancel` (`wait`) and `volt_sem_try_cancel` (`!wait`).
///
/// # Safety
/// The contract of `volt_sem_cancel`.
unsafe fn end_acquire(
    sem: *const volt_sem,
    waiter: *mut volt_waiter,
    returned: *mut usize,
    wait: bool,
) -> Checked<volt_status> {
    if !returned.is_null() {
        // SAFETY: non-NULL and writable (contract).
        unsafe { returned.write(0) };
    }
    // SAFETY: NULL or live handle / waiter memory (contract).
    let slot = unsafe { slot(waiter) }?;
    // SAFETY: as above.
    let handle = unsafe { handle(sem) }?;
    // Inside this waiter's own callback (the core tracks the one running now).
    let inside = slot.waiter.in_own_callback();
    if !inside && !slot.is_busy() {
        return Ok(VOLT_IDLE);
    }
    // Any handle of this process on the semaphore the waiter was queued on:
    // the one it was queued through, a clone, or another `volt_sem_open` of
    // the same name (one attachment per process and name; a new semaphore
    // under the name after an unlink is another one). A Redis handle from
    // another `volt_sem_connect` is refused (its `owns` is per handle and
    // clones, even when the two share a session). The waiter's
    // own reference (`slot.sem`) is what the end below gives back, whichever
    // handle this is.
    if !ptr::eq(slot.sem.load(Ordering::Relaxed), sem) && !handle.sem.owns(&slot.waiter) {
        return invalid("`waiter` is not queued on `sem` (nothing changed)");
    }
    if !inside && slot.ending.load(Ordering::Relaxed) {
        // Nested inside the owner's own call ending this waiter (a callback it
        // completed, on this thread): that call has the outcome.
        return Ok(VOLT_IDLE);
    }
    // Nothing to wait for, so nothing for `volt_sem_try_cancel` to answer
    // PENDING about: the backend is done with the waiter (its callback has
    // returned, or will never be called: in a forked child, a request the
    // parent queued that a call has purged, closed without its callback),
    // or, in a forked child, a callback that a thread of the parent was
    // running (claim RUNNING) or was about to run never returns.
    let nothing_to_wait_for =
        !slot.waiter.is_busy() || handle.sem.callback_lost_to_fork(&slot.waiter);
    if !wait && !inside && !nothing_to_wait_for {
        // Only the owner writes `claim` besides the trampoline, and the owner is
        // this thread (one-owner rule): no other claim can appear but RUNNING.
        match slot.claim.load(Ordering::Acquire) {
            // The callback is running, or returned (then `finish_raw` below only
            // waits for the core to mark the waiter done, a few instructions).
            CLAIM_RUNNING => return Ok(VOLT_PENDING),
            CLAIM_RETURNED => {}
            // Unlinked by a notifier whose trampoline has not started. If that
            // trampoline is this thread's (this call runs inside another
            // callback that the same release, close or cancel completed),
            // `finish_raw` takes the outcome at once, as `volt_sem_cancel`
            // does: nothing to wait for, so no reason to answer otherwise.
            _ if slot.waiter.state() != WaiterState::Waiting => {
                if !slot.waiter.callback_pending_here() {
                    // The callback will be called elsewhere; leave the outcome
                    // to it.
                    return Ok(VOLT_PENDING);
                }
            }
            _ => {
                // Queued: take the outcome from the callback. From here on the
                // trampoline returns without calling it, so `finish_raw` cannot
                // wait for it (only for the core's own bookkeeping, or for earlier
                // callbacks of the same wake batch, as documented).
                if let Err(CLAIM_RUNNING) = slot.claim.compare_exchange(
                    CLAIM_FREE,
                    CLAIM_CANCELLING,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                ) {
                    return Ok(VOLT_PENDING);
                }
            }
        }
    }
    if !inside {
        slot.ending.store(true, Ordering::Relaxed);
    }
    // SAFETY: the waiter is busy on exactly this semaphore (checked above).
    let finish = unsafe { handle.sem.finish_raw(pinned(slot)) };
    if !inside {
        slot.ending.store(false, Ordering::Relaxed);
        // The callback has returned or will never run; the semaphore no longer
        // references the waiter: drop its reference and make it idle.
        // Release: an `is_busy` that reads NULL sees the waiter finished.
        let own = slot.sem.swap(ptr::null_mut(), Ordering::Release);
        // SAFETY: the reference taken by `volt_sem_acquire`; the caller still
        // holds `sem`, so this never destroys the semaphore under `handle`
        // (when `sem` is another handle on the same named semaphore, this may
        // drop the last reference of the one the waiter was queued through,
        // after the end: that handle's own business, like `volt_sem_free`).
        unsafe { Arc::decrement_strong_count(own) };
    }
    Ok(match finish {
        Finish::Granted => VOLT_OK,
        Finish::Closed => VOLT_CLOSED,
        Finish::Failed(e) => status_of(e),
        Finish::Idle => VOLT_IDLE,
        Finish::Cancelled { returned: partial } => {
            if !returned.is_null() {
                // SAFETY: non-NULL and writable (contract).
                unsafe { returned.write(partial) };
            }
            VOLT_CANCELLED
        }
    })
}

/// The fencing token of the last grant collected through this waiter on a
/// Redis semaphore: read it after `volt_sem_acquire` or `volt_sem_cancel`
/// (or `volt_sem_try_cancel`) returned `VOLT_OK`; until the next such
/// `VOLT_OK` it keeps that grant's token (a later request that fails or is
/// cancelled does not change it). 0 before any grant, for a local or shared
/// semaphore, and for NULL or uninitialised memory. The same calling rules
/// as `volt_waiter_status`.
///
/// # Safety
/// `waiter` is NULL or points to an initialised or zeroed `volt_waiter`.
#[no_mangle]
pub unsafe extern "C" fn volt_waiter_token(waiter: *const volt_waiter) -> u64 {
    ffi_call(0, || {
        // SAFETY: NULL, zeroed or initialised waiter memory (contract); only read.
        unsafe { slot_ref(waiter.cast_mut()) }.map_or(0, |slot| slot.waiter.token().unwrap_or(0))
    })
}

/// The Redis session the waiter's last request ran in (after `VOLT_OK`, the
/// session that holds its permits), for `volt_sem_watch_lease`; 0 for a local
/// or shared semaphore, NULL or uninitialised memory.
///
/// # Safety
/// As for `volt_waiter_token`.
#[no_mangle]
pub unsafe extern "C" fn volt_waiter_session(waiter: *const volt_waiter) -> u64 {
    ffi_call(0, || {
        // SAFETY: as for `volt_waiter_token`.
        unsafe { slot_ref(waiter.cast_mut()) }.map_or(0, |slot| slot.waiter.session())
    })
}
