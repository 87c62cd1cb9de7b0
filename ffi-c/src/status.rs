//! `volt_status`: what every call returns (generated from the backend's error
//! table into `status_codes.rs`), the mapping of the backends' errors to it
//! (`status_of`, by the table's status number), and the two functions that
//! explain a failure: the statuses' names and the last error's message.

use std::ffi::{c_char, CStr};
use std::ptr;

use volt_sem_backend::Error;

use crate::boundary::{ffi_call, ffi_call_keeping_error};
use crate::last_error::{remember, with_last_error};
use volt_status::*;

pub use crate::status_codes::volt_status;

/// The status of a backend error. Requests too large for the semaphore are
/// invalid arguments, as for the local semaphore's `n > volt_max_permits()`.
pub(crate) fn status_of(e: Error) -> volt_status {
    // The table gives every error a status; the fallback is for a status
    // number this crate's generated enum does not have yet (it is stale).
    let status = volt_status::from_number(e.status()).unwrap_or(VOLT_OS_ERROR);
    remember(e);
    status
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

/// Copies the message of the last call on this thread into `buf`,
/// NUL-terminated and truncated to `len` bytes. Every failure the semaphore
/// or Redis reports has one, the error's own text: which command the ACL
/// refused (`VOLT_NO_PERMISSION`), which key holds a foreign value
/// (`VOLT_WRONG_TYPE`), the server's text for the other Redis errors, why
/// the connection or the TLS handshake failed, which option was refused,
/// the rule an invalid name or total broke, the two versions or C libraries
/// of a mismatch (for `VOLT_WOULD_BLOCK` or `VOLT_TIMED_OUT`, just what the
/// status says). A call that refused its arguments before reaching the
/// semaphore names itself and the argument at fault: "volt_sem_acquire:
/// `wake` is NULL", "volt_sem_try_acquire: `n` is 0: ...", a bad
/// `struct_size`, a waiter in the wrong state, a local handle for a
/// Redis-only call. It is "" after `VOLT_OK` and the outcomes that are no
/// failure (`VOLT_PENDING`, `VOLT_IDLE`, `VOLT_CANCELLED`, `VOLT_TRUNCATED`,
/// and the states `volt_waiter_status` reports), and in a wake callback
/// until the callback's own calls; in a lease-loss callback it is the
/// loss's text (that of `why`) until then. The text is written when this
/// function reads it: asking for the length, then for the text, gives the
/// same message. Every other `volt_*` call forgets the message when it
/// starts, so it always belongs to the call made just before, on the same
/// thread (the calls a wake callback makes inside another call, such as a
/// `volt_sem_release` that runs it, leave their messages to the callback:
/// that call's message is its own). Messages never contain the URL or a
/// password.
///
/// Returns the message's length in bytes (without the NUL), which may exceed
/// `len - 1`: then call again with a larger buffer. `buf` may be NULL when
/// `len` is 0 (to ask for the length).
///
/// # Safety
/// `buf` is NULL or `len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn volt_last_error_message(buf: *mut c_char, len: usize) -> usize {
    ffi_call_keeping_error(0, || {
        with_last_error(|m| {
            if !buf.is_null() && len > 0 {
                let n = m.len().min(len - 1);
                // SAFETY: `buf` has `len` writable bytes (contract); `n < len`.
                unsafe {
                    ptr::copy_nonoverlapping(m.as_ptr(), buf.cast::<u8>(), n);
                    buf.add(n).write(0);
                }
            }
            m.len()
        })
        .unwrap_or(0)
    })
}
