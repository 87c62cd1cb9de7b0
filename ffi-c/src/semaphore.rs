//! `volt_sem`: the semaphore handle (a reference-counted backend semaphore)
//! and the operations every backend shares: create a local one, clone, free,
//! try-acquire, release, close and the queries.

use std::ptr;
use std::sync::Arc;

use volt_sem_backend::{Error, Semaphore};

use crate::boundary::{count, ffi_call, ffi_status, non_null, Checked};
use crate::last_error::{refuse, Refusal};
use crate::lease;
use crate::status::volt_status::{self, *};
use crate::status::{status, status_of};

/// A semaphore handle. Opaque; always used through a pointer obtained from
/// `volt_sem_new`, `volt_sem_open`, `volt_sem_connect` or `volt_sem_clone`,
/// and given back with `volt_sem_free`.
pub struct volt_sem {
    pub(crate) sem: Semaphore,
    /// The process that connected a Redis handle (0 for the other backends):
    /// a copy inherited through `fork()` shares the parent's sockets and
    /// session, so the child must not use it (see `forked`).
    pid: u32,
    /// The lease-loss registration of a Redis handle's current session
    /// (`volt_sem_watch_lease`; see lease.rs).
    pub(crate) hub: std::sync::Mutex<Option<Arc<lease::hub::Hub>>>,
}

impl volt_sem {
    pub(crate) fn new(sem: Semaphore) -> Self {
        let pid = if sem.as_redis().is_some() {
            std::process::id()
        } else {
            0
        };
        volt_sem {
            sem,
            pid,
            hub: std::sync::Mutex::new(None),
        }
    }

    /// Whether this is a Redis handle used in a child of the process that
    /// connected it: its commands would go out on the parent's connections,
    /// in the parent's session (a release would return the parent's
    /// permits). Every call then fails with `VOLT_FORKED`. (The shared
    /// backend detects its own fork case.)
    pub(crate) fn forked(&self) -> bool {
        self.pid != 0 && self.pid != std::process::id()
    }
}

/// Borrows the semaphore behind a handle, or `None` for NULL: for the
/// queries that answer a default (0, false) rather than a status.
///
/// # Safety
/// `sem` is NULL or a live handle from `volt_sem_new`/`volt_sem_clone`.
pub(crate) unsafe fn sem_ref<'a>(sem: *const volt_sem) -> Option<&'a volt_sem> {
    // SAFETY: forwarded caller contract.
    unsafe { sem.as_ref() }
}

/// The handle an operation acts on: `VOLT_INVALID_ARGUMENT` for NULL,
/// `VOLT_FORKED` for a Redis handle used in a child of the process that
/// connected it (see `volt_sem::forked`).
///
/// # Safety
/// `sem` is NULL or a live handle.
pub(crate) unsafe fn handle<'a>(sem: *const volt_sem) -> Checked<&'a volt_sem> {
    // SAFETY: forwarded caller contract.
    let Some(sem) = (unsafe { sem_ref(sem) }) else {
        return Err(refuse(VOLT_INVALID_ARGUMENT, Refusal::Null("sem")));
    };
    if sem.forked() {
        // Through `status_of`, for its message, as every backend error.
        return Err(status_of(Error::Forked));
    }
    Ok(sem)
}

/// `VOLT_UNSUPPORTED` for a Redis-only call on a local or named semaphore.
#[cold]
pub(crate) fn not_redis() -> volt_status {
    refuse(
        VOLT_UNSUPPORTED,
        Refusal::Text("`sem` is not a Redis semaphore (this call is for Redis semaphores only)"),
    )
}

/// Stores a new handle on `r`'s semaphore in `*out` and returns `VOLT_OK`,
/// or returns the error's status (`*out` left as it is: the constructors
/// set it to NULL first).
///
/// # Safety
/// `out` is non-NULL and writable.
pub(crate) unsafe fn hand_out(
    r: Result<Semaphore, Error>,
    out: *mut *const volt_sem,
) -> volt_status {
    match r {
        Ok(sem) => {
            // SAFETY: non-NULL and writable (contract).
            unsafe { out.write(Arc::into_raw(Arc::new(volt_sem::new(sem)))) };
            VOLT_OK
        }
        Err(e) => status_of(e),
    }
}

/// Creates a semaphore with `permits` permits and stores one reference to it in
/// `*out`. Free it with `volt_sem_free`.
///
/// Returns `VOLT_OK`, or `VOLT_INVALID_ARGUMENT` if `out` is NULL or `permits >
/// volt_max_permits()` (then `*out` is set to NULL when `out` is not NULL).
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn volt_sem_new(permits: usize, out: *mut *const volt_sem) -> volt_status {
    ffi_status!("volt_sem_new", || {
        non_null(out, "out")?;
        let Some(sem) = Semaphore::local(permits) else {
            // SAFETY: `out` is non-NULL and, by contract, writable.
            unsafe { out.write(ptr::null()) };
            let refusal = Refusal::Count {
                arg: "permits",
                n: permits,
            };
            return Err(refuse(VOLT_INVALID_ARGUMENT, refusal));
        };
        // SAFETY: as above.
        unsafe { out.write(Arc::into_raw(Arc::new(volt_sem::new(sem)))) };
        Ok(VOLT_OK)
    })
}

/// Returns another reference to the same semaphore (the same pointer value),
/// e.g. for another thread or library; each reference is freed with
/// `volt_sem_free`. Returns NULL if `sem` is NULL.
///
/// # Safety
/// `sem` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn volt_sem_clone(sem: *const volt_sem) -> *const volt_sem {
    ffi_call(ptr::null(), || {
        if sem.is_null() {
            return ptr::null();
        }
        // SAFETY: `sem` is a live reference from `Arc::into_raw` (contract).
        unsafe { Arc::increment_strong_count(sem) };
        sem
    })
}

/// Drops one reference; the semaphore is destroyed with its last reference
/// (busy waiters hold their own). NULL is a no-op. `sem` must not be used after.
///
/// Before freeing the last reference, settle its queued waiters: cancel
/// them with `volt_sem_cancel` (on this reference) or wait for their wake.
/// A waiter still queued keeps its own reference (only `volt_sem_cancel`,
/// which needs a live handle, gives it back), so the semaphore stays alive
/// and the waiter keeps its place in the queue; once granted, its permits
/// stay held, with no handle left to release them, until the process exits:
/// other processes of a shared semaphore, and every client of a Redis one
/// (whose session the agent keeps renewing), wait for them that long.
/// Freeing does not cancel them, because their wake callbacks would then
/// run inside `volt_sem_free`, in the middle of the caller's teardown, and
/// the waiter's owner would still have to call `volt_sem_cancel` with a
/// handle it no longer has.
///
/// # Safety
/// `sem` is NULL or a live handle, not used again by this caller.
#[no_mangle]
pub unsafe extern "C" fn volt_sem_free(sem: *const volt_sem) {
    ffi_call((), || {
        if !sem.is_null() {
            // SAFETY: `sem` is a live reference from `Arc::into_raw`; the caller
            // gives it up here.
            let handle = unsafe { Arc::from_raw(sem) };
            if handle.forked() {
                // The child's copy of a Redis handle: dropping the last one
                // would end the parent's session over the parent's sockets.
                std::mem::forget(handle);
                return;
            }
            drop(handle);
        }
    })
}

/// Takes `n` permits if they are available now and nobody is queued (FIFO: no
/// barging). Never blocks; on a shared semaphore it may wait up to 10 ms for
/// the segment's lock, then returns `VOLT_WOULD_BLOCK` (another process is
/// stopped, e.g. by `SIGSTOP` or a debugger, inside it).
///
/// Returns `VOLT_OK`, `VOLT_WOULD_BLOCK`, `VOLT_CLOSED` or
/// `VOLT_INVALID_ARGUMENT` (NULL, `n == 0`, `n > volt_max_permits()`, or above
/// a shared semaphore's total); on a shared semaphore also `VOLT_FORKED`,
/// `VOLT_CORRUPT` or `VOLT_OS_ERROR`. On a Redis semaphore (one round trip,
/// in order with the handle's other calls, up to the command timeout; `volt_sem_try_acquire_fenced` also returns the fencing token): `VOLT_CONNECTION_FAILED`, `VOLT_REDIS_ERROR`,
/// `VOLT_PROTOCOL_ERROR`, `VOLT_STATE_LOST`.
///
/// # Safety
/// `sem` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn volt_sem_try_acquire(sem: *const volt_sem, n: usize) -> volt_status {
    ffi_status!("volt_sem_try_acquire", || {
        // SAFETY: NULL or a live handle (contract).
        let sem = unsafe { handle(sem) }?;
        count(n)?;
        // The C caller owns the permits on VOLT_OK.
        Ok(status(sem.sem.try_acquire(n)))
    })
}

/// Returns `n` permits: to the oldest waiters first (which may run their wake
/// callbacks on this thread before it returns), the surplus to the counter.
/// Works on a closed semaphore.
///
/// Returns `VOLT_OK`, `VOLT_OVERFLOW` (the available permits would exceed
/// `volt_max_permits()`; nothing released) or `VOLT_INVALID_ARGUMENT` (NULL,
/// `n == 0`, `n > volt_max_permits()`). On a shared semaphore, a process
/// returns only permits it holds: `VOLT_NOT_HELD` (nothing released) when it
/// holds fewer than `n`; also `VOLT_FORKED`, `VOLT_CORRUPT`, `VOLT_OS_ERROR`.
/// On a Redis semaphore it returns at once (no round trip on this thread:
/// the handle's door thread applies the release in Redis right after, in
/// order with this handle's later calls, and calls back the waiters it
/// completes that were queued through this handle; those of other handles
/// and hosts are called back on their own agent threads):
/// `VOLT_NOT_HELD` when this handle's session holds fewer than `n`;
/// `VOLT_LEASE_EXPIRED` when the permits were lost with an expired session
/// (nothing released: they were reclaimed already); `VOLT_CLOSED` once
/// `volt_end_sessions_on_signals` ended the handle's session; `VOLT_FORKED`,
/// `VOLT_STATE_LOST`. Should Redis
/// then refuse it (or be out of reach), the session is given up: its
/// permits go back when it ends, and `volt_sem_watch_lease` tells its holders.
///
/// # Safety
/// `sem` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn volt_sem_release(sem: *const volt_sem, n: usize) -> volt_status {
    ffi_status!("volt_sem_release", || {
        // SAFETY: NULL or a live handle (contract).
        let sem = unsafe { handle(sem) }?;
        count(n)?;
        Ok(status(sem.sem.release(n)))
    })
}

/// Permits available right now (0 while anyone is queued, and for NULL). On a
/// Redis semaphore: one round trip (a census), up to the command timeout, and
/// 0 when Redis cannot be reached (`volt_sem_census` tells the error).
///
/// # Safety
/// `sem` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn volt_sem_available_permits(sem: *const volt_sem) -> usize {
    ffi_call(0, || {
        // SAFETY: NULL or a live handle (contract).
        unsafe { sem_ref(sem) }
            .filter(|sem| !sem.forked())
            .map_or(0, |sem| sem.sem.available_permits())
    })
}

/// Closes the semaphore: every queued waiter is woken (its status becomes
/// `VOLT_CLOSED`, on this thread, before this returns) and later acquires fail
/// with `VOLT_CLOSED`. Held permits can still be released. Idempotent.
/// A shared semaphore is closed for every process: their waiters' callbacks run
/// on their doorbell threads, shortly after this returns.
///
/// A Redis semaphore is closed for every client: waiters everywhere fail with
/// `VOLT_CLOSED` (their callbacks run on their agent threads), and a client
/// connecting later finds it closed.
///
/// Returns `VOLT_OK` or `VOLT_INVALID_ARGUMENT` (NULL); on a shared semaphore
/// also `VOLT_FORKED`, `VOLT_CORRUPT` or `VOLT_OS_ERROR`; on a Redis one (one
/// round trip) `VOLT_CONNECTION_FAILED`, `VOLT_REDIS_ERROR`,
/// `VOLT_PROTOCOL_ERROR`, `VOLT_STATE_LOST`.
///
/// # Safety
/// `sem` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn volt_sem_close(sem: *const volt_sem) -> volt_status {
    ffi_status!("volt_sem_close", || {
        // SAFETY: NULL or a live handle (contract).
        let sem = unsafe { handle(sem) }?;
        Ok(status(sem.sem.close()))
    })
}

/// Whether `volt_sem_close` was called (false for NULL).
///
/// # Safety
/// `sem` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn volt_sem_is_closed(sem: *const volt_sem) -> bool {
    ffi_call(false, || {
        // SAFETY: NULL or a live handle (contract).
        unsafe { sem_ref(sem) }.is_some_and(|sem| sem.sem.is_closed())
    })
}

/// The largest permit count a semaphore holds and the largest single request.
#[no_mangle]
pub extern "C" fn volt_max_permits() -> usize {
    ffi_call(0, || Semaphore::MAX_PERMITS)
}

/// The fixed total of a shared or Redis semaphore (from `volt_sem_open`,
/// `volt_sem_connect`; no round trip); 0 for a local one (its releases may add
/// permits: it has no fixed total) and for NULL.
///
/// # Safety
/// `sem` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn volt_sem_total_permits(sem: *const volt_sem) -> usize {
    ffi_call(0, || {
        // SAFETY: NULL or a live handle (contract).
        unsafe { sem_ref(sem) }
            .and_then(|sem| sem.sem.total_permits())
            .unwrap_or(0)
    })
}

/// Permits held by this handle's current session (and its clones), as the
/// handle counts them: what `volt_sem_release` may return without
/// `VOLT_NOT_HELD`. No round trip. 0 for NULL and for the other backends.
///
/// # Safety
/// `sem` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn volt_sem_held_permits(sem: *const volt_sem) -> usize {
    ffi_call(0, || {
        // SAFETY: NULL or a live handle (contract).
        unsafe { sem_ref(sem) }
            .and_then(|sem| sem.sem.as_redis())
            .map_or(0, |r| r.held_permits())
    })
}
