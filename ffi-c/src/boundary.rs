//! The panic boundary and the argument checks every entry point shares.
//!
//! Every `extern "C"` function of this crate runs its body through
//! [`ffi_call`] (or [`ffi_status`]), the one place that catches a panic: no
//! panic may cross the C boundary, because unwinding out of an `extern "C"`
//! function aborts the process. The handle checks (NULL, a Redis handle
//! inherited through `fork()`) and the count check are written here once and
//! used with `?` inside [`ffi_status`] bodies.

use std::ffi::c_char;
use std::panic::{catch_unwind, AssertUnwindSafe};

use volt_sem_backend::Semaphore;

use crate::last_error::forget_last_error;
use crate::semaphore::volt_sem;
use crate::status::volt_status::{self, *};

/// The status a failed check returns: `Err(status)` ends an [`ffi_status`]
/// body with that status, through `?`.
pub(crate) type Checked<T> = Result<T, volt_status>;

/// Runs an entry point's `body` and turns a panic into `on_panic` (the
/// function's documented default: `VOLT_PANIC`, 0, false, NULL).
///
/// It also forgets the thread's last error message first, so that
/// `volt_last_error_message` never shows an earlier call's text.
pub(crate) fn ffi_call<T>(on_panic: T, body: impl FnOnce() -> T) -> T {
    forget_last_error();
    ffi_call_keeping_error(on_panic, body)
}

/// [`ffi_call`] without forgetting the last error message: for
/// `volt_last_error_message` alone, which reads it.
pub(crate) fn ffi_call_keeping_error<T>(on_panic: T, body: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(on_panic)
}

/// [`ffi_call`] for an entry point that returns a status: a panic is
/// `VOLT_PANIC`, a failed check (`Err`) its status, and `Ok` the outcome.
pub(crate) fn ffi_status(body: impl FnOnce() -> Checked<volt_status>) -> volt_status {
    ffi_call(VOLT_PANIC, || {
        let (Ok(status) | Err(status)) = body();
        status
    })
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
    let sem = unsafe { sem_ref(sem) }.ok_or(VOLT_INVALID_ARGUMENT)?;
    if sem.forked() {
        return Err(VOLT_FORKED);
    }
    Ok(sem)
}

/// A permit count: 1..=`volt_max_permits()`, else `VOLT_INVALID_ARGUMENT`.
pub(crate) fn count(n: usize) -> Checked<()> {
    if n != 0 && n <= Semaphore::MAX_PERMITS {
        Ok(())
    } else {
        Err(VOLT_INVALID_ARGUMENT)
    }
}

/// Checks that `ptr` is not NULL: `VOLT_INVALID_ARGUMENT` otherwise.
pub(crate) fn non_null<T>(ptr: *const T) -> Checked<()> {
    if ptr.is_null() {
        Err(VOLT_INVALID_ARGUMENT)
    } else {
        Ok(())
    }
}

/// A name from C: `Err(VOLT_INVALID_ARGUMENT)` for NULL, `Err(VOLT_INVALID_NAME)`
/// for a name that is not UTF-8 (the backends check the rest).
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
pub(crate) unsafe fn name_arg<'a>(name: *const c_char) -> Checked<&'a str> {
    non_null(name)?;
    // SAFETY: non-NULL and NUL-terminated (contract).
    let name = unsafe { std::ffi::CStr::from_ptr(name) };
    name.to_str().map_err(|_| VOLT_INVALID_NAME)
}
