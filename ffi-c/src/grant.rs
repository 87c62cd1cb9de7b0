//! Fencing tokens in C: `volt_grant` (a grant's token and session) and the
//! `_fenced` acquires that return it.

use volt_sem_backend::{Error, Grant};

use crate::blocking::wait;
use crate::boundary::{count, ffi_status, non_null, Checked};
use crate::semaphore::handle;
use crate::semaphore::volt_sem;
use crate::status::status_of;
use crate::status::volt_status::{self, *};

/// What a `_fenced` acquire returns besides its status: the grant's fencing
/// token and the session that holds it (both 0 for a local or shared
/// semaphore, which need none).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct volt_grant {
    /// The fencing token: strictly increasing with every grant of the Redis
    /// semaphore, across every client. Pass it to what the permits guard, so
    /// that a holder whose lease expired is rejected there (see "FENCING
    /// TOKENS" at the top for where a "larger than the last" check is
    /// sound). 0: no token.
    pub token: u64,
    /// The session of the handle that holds the permits, for
    /// `volt_sem_watch_lease`. 0: none.
    pub session: u64,
}

impl From<Grant> for volt_grant {
    fn from(g: Grant) -> Self {
        volt_grant {
            token: g.token().unwrap_or(0),
            session: g.session(),
        }
    }
}

/// Writes `g` to `out` and returns `VOLT_OK`, or the error's status (`*out`
/// zeroed).
///
/// # Safety
/// `out` is writable.
unsafe fn fenced(r: Result<Grant, Error>, out: *mut volt_grant) -> volt_status {
    let (status, grant) = match r {
        Ok(g) => (VOLT_OK, g.into()),
        Err(e) => (status_of(e), volt_grant::default()),
    };
    // SAFETY: writable (contract).
    unsafe { out.write(grant) };
    status
}

/// The checks both `*_fenced` calls start with: `*grant` zeroed first (so it
/// is zero on every failure), then the handle, the fork and the count.
///
/// # Safety
/// `sem` is NULL or a live handle; `grant` is NULL or writable.
unsafe fn fenced_checks<'a>(
    sem: *const volt_sem,
    n: usize,
    grant: *mut volt_grant,
) -> Checked<&'a volt_sem> {
    non_null(grant, "grant")?;
    // SAFETY: non-NULL and writable (contract).
    unsafe { grant.write(volt_grant::default()) };
    // SAFETY: NULL or a live handle (contract).
    let sem = unsafe { handle(sem) }?;
    count(n)?;
    Ok(sem)
}

/// `volt_sem_try_acquire` that also returns the grant's fencing token and
/// session in `*grant` (zeroed unless `VOLT_OK`). On a Redis semaphore:
/// one round trip (on the handle's door thread, or on this one when the door
/// is idle), up to the command timeout.
///
/// Returns what `volt_sem_try_acquire` returns; `VOLT_INVALID_ARGUMENT` also
/// for a NULL `grant`.
///
/// # Safety
/// `sem` is NULL or a live handle; `grant` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn volt_sem_try_acquire_fenced(
    sem: *const volt_sem,
    n: usize,
    grant: *mut volt_grant,
) -> volt_status {
    ffi_status!("volt_sem_try_acquire_fenced", || {
        // SAFETY: forwarded contract.
        let sem = unsafe { fenced_checks(sem, n, grant) }?;
        // SAFETY: as above.
        Ok(unsafe { fenced(sem.sem.try_acquire(n), grant) })
    })
}

/// `volt_sem_acquire_blocking` that also returns the grant's fencing token and
/// session in `*grant` (zeroed unless `VOLT_OK`).
///
/// Returns what `volt_sem_acquire_blocking` returns; `VOLT_INVALID_ARGUMENT`
/// also for a NULL `grant`.
///
/// # Safety
/// `sem` is NULL or a live handle; `grant` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn volt_sem_acquire_blocking_fenced(
    sem: *const volt_sem,
    n: usize,
    timeout_ns: i64,
    grant: *mut volt_grant,
) -> volt_status {
    ffi_status!("volt_sem_acquire_blocking_fenced", || {
        // SAFETY: forwarded contract.
        let sem = unsafe { fenced_checks(sem, n, grant) }?;
        // SAFETY: as above.
        Ok(unsafe { fenced(wait(sem, n, timeout_ns), grant) })
    })
}
