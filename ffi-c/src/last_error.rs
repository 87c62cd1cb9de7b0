//! The message of the last error on each thread (`volt_last_error_message`):
//! the details a status alone cannot carry (why a connection failed, which
//! option was refused). Every other entry point forgets it when it starts
//! (`ffi_call`), so it always belongs to the call made just before.

use std::cell::Cell;
use std::ffi::c_char;
use std::ptr;

use volt_sem_backend::Error;

use crate::boundary::ffi_call_keeping_error;
use crate::status::volt_status;

thread_local! {
    /// The message of the last error with details on this thread (see
    /// `volt_last_error_message`).
    static LAST_ERROR: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
    /// Whether `LAST_ERROR` holds a message: one thread-local load per call
    /// decides whether there is anything to forget (no destructor, so no
    /// registration and no failure during thread exit).
    static HAS_LAST_ERROR: Cell<bool> = const { Cell::new(false) };
}

/// Forgets the last error message: every entry point but
/// `volt_last_error_message` starts with it (`ffi_call`).
#[inline]
pub(crate) fn forget_last_error() {
    if HAS_LAST_ERROR.with(Cell::get) {
        HAS_LAST_ERROR.with(|h| h.set(false));
        let _ = LAST_ERROR.try_with(|m| m.borrow_mut().clear());
    }
}

pub(crate) fn set_last_error(message: impl FnOnce() -> String) {
    let _ = LAST_ERROR.try_with(|m| *m.borrow_mut() = message());
    HAS_LAST_ERROR.with(|h| h.set(true));
}

/// Remembers the message of an error that carries more than its status says
/// (which Redis error, why the connection failed, which option). Only those:
/// the everyday statuses (`VOLT_WOULD_BLOCK`, `VOLT_TIMED_OUT`, ...) stay
/// allocation-free.
pub(crate) fn remember(e: &Error) {
    let detailed = matches!(
        e,
        Error::InvalidUrl(_)
            | Error::InvalidPrefix
            | Error::InvalidLabel
            | Error::InvalidOption(_)
            | Error::Auth
            | Error::Connection(_)
            | Error::Redis(_)
            | Error::Protocol(_)
            | Error::LeaseExpired
            | Error::StateLost
            | Error::TotalMismatch { .. }
            | Error::Os(_)
    );
    if detailed {
        set_last_error(|| e.to_string());
    }
}

/// `status`, with `message` remembered for `volt_last_error_message` (for the
/// detailed statuses the C layer raises itself).
pub(crate) fn noted(status: volt_status, message: &str) -> volt_status {
    set_last_error(|| message.to_owned());
    status
}

/// Copies the message of the last call on this thread into `buf`,
/// NUL-terminated and truncated to `len` bytes: the details of its failure
/// when it had more to say than its status (a network or Redis failure, an
/// invalid option, a total mismatch, a lost lease, an OS error), else "".
/// Every other `volt_*` call forgets the message when it starts, so it always
/// belongs to the call made just before, on the same thread. Messages never
/// contain the URL or a password.
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
        LAST_ERROR
            .try_with(|m| {
                let m = m.borrow();
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
