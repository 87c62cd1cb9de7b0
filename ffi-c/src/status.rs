//! `volt_status`: what every call returns (generated from the backend's error
//! table into `status_codes.rs`), the mapping of the backends' errors to it
//! (`status_of`, by the table's status number), and the statuses' names.

use std::ffi::{c_char, CStr};

use volt_sem_backend::Error;

use crate::boundary::ffi_call;
use crate::last_error::remember;
use volt_status::*;

pub use crate::status_codes::volt_status;

/// The status of a backend error. Requests too large for the semaphore are
/// invalid arguments, as for the local semaphore's `n > volt_max_permits()`.
pub(crate) fn status_of(e: Error) -> volt_status {
    remember(&e);
    // The table gives every error a status; the fallback is for a status
    // number this crate's generated enum does not have yet (it is stale).
    volt_status::from_number(e.status()).unwrap_or(VOLT_OS_ERROR)
}

/// `Ok` as `VOLT_OK`, an error as its status.
pub(crate) fn status<T>(r: Result<T, Error>) -> volt_status {
    r.map_or_else(status_of, |_| VOLT_OK)
}

/// A static, NUL-terminated name for a status ("VOLT_OK", ...), or "unknown".
#[no_mangle]
pub extern "C" fn volt_status_str(status: i32) -> *const c_char {
    ffi_call(c"unknown".as_ptr(), || status_name(status).as_ptr())
}

fn status_name(status: i32) -> &'static CStr {
    volt_status::from_number(status).map_or(c"unknown", volt_status::name)
}
