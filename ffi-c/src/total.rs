//! Changing a shared limit online: `volt_sem_set_total` and
//! `volt_sem_reopen`, for named and Redis semaphores.

use volt_sem_backend::{Error, Kind, Semaphore};

use crate::boundary::{ffi_status, Checked};
use crate::last_error::{refuse, Refusal};
use crate::semaphore::handle;
use crate::semaphore::volt_sem;
use crate::status::status_of;
use crate::status::volt_status::{self, *};

/// The body of a call for named and Redis semaphores only
/// (`volt_sem_set_total`, `volt_sem_reopen`, `volt_sem_disconnect`): `op`
/// on `sem`'s semaphore, its status. NULL and a forked handle are refused
/// as by every call; a local semaphore with `VOLT_UNSUPPORTED` and a message
/// that says which semaphores the call is for (the status alone reads like
/// a platform limit).
///
/// # Safety
/// `sem` is NULL or a live handle.
pub(crate) unsafe fn on_shared(
    sem: *const volt_sem,
    op: impl FnOnce(&Semaphore) -> Result<(), Error>,
) -> Checked<volt_status> {
    // SAFETY: NULL or a live handle (contract).
    let sem = unsafe { handle(sem) }?;
    if sem.sem.kind() == Kind::Local {
        return Err(refuse(
            VOLT_UNSUPPORTED,
            Refusal::Text(
                "`sem` is a local semaphore: this call is for named and Redis semaphores",
            ),
        ));
    }
    Ok(op(&sem.sem).map_or_else(status_of, |()| VOLT_OK))
}

/// Changes the total of a named (`volt_sem_open`) or Redis
/// (`volt_sem_connect`) semaphore to `n` permits, for every process or client
/// that uses it:
/// * growing hands the new permits to the queued requests at once, in FIFO
///   order, as a release would (their wake callbacks may run on the process's
///   doorbell thread, or the Redis handle's threads, before this returns);
/// * shrinking revokes nothing: what is held stays held, and the cut becomes a
///   debt that the next permits released pay first, before any waiter;
/// * either way, every queued request for more than `n` fails at once (a
///   blocking acquire with `VOLT_INVALID_ARGUMENT`, as a request above the
///   total always did; a raw waiter is woken, its `volt_waiter_status`
///   reads `VOLT_CLOSED`, the only failure that call reports, and its
///   `volt_sem_cancel` returns `VOLT_INVALID_ARGUMENT`), the others keeping
///   their place.
///
/// Works on a closed semaphore too. Redis: one round trip (one script), up to
/// the command timeout, blocking the calling thread like `volt_sem_census`.
///
/// Returns `VOLT_OK`, `VOLT_INVALID_ARGUMENT` (NULL, or `n` 0 or above the
/// backend's maximum: nothing changed), `VOLT_UNSUPPORTED` (a local semaphore:
/// it has no fixed total), `VOLT_FORKED`, or a shared or network status
/// (`VOLT_CONNECTION_FAILED`, `VOLT_READ_ONLY`, ...).
///
/// # Safety
/// `sem` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn volt_sem_set_total(sem: *const volt_sem, n: usize) -> volt_status {
    // SAFETY: NULL or a live handle (contract).
    ffi_status!("volt_sem_set_total", || unsafe {
        on_shared(sem, |sem| sem.set_total(n))
    })
}

/// Undoes `volt_sem_close` of a named or Redis semaphore, for every process
/// or client: later acquires work again. Requests the close failed stay
/// failed; a semaphore that is not closed is left as it is (`VOLT_OK`). Redis:
/// one round trip, blocking the calling thread like `volt_sem_census` (a
/// handle that saw the close learns of the reopen from its next request).
///
/// Returns `VOLT_OK`, `VOLT_INVALID_ARGUMENT` (NULL), `VOLT_UNSUPPORTED` (a
/// local semaphore: its close is final), `VOLT_FORKED`, or a shared or network
/// status.
///
/// # Safety
/// `sem` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn volt_sem_reopen(sem: *const volt_sem) -> volt_status {
    // SAFETY: NULL or a live handle (contract).
    ffi_status!("volt_sem_reopen", || unsafe {
        on_shared(sem, |sem| sem.reopen())
    })
}
