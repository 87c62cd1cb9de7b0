//! The message of the last error on each thread (read by
//! `volt_last_error_message`, in `status.rs`):
//! the details a status alone cannot carry (why a connection failed, which
//! option was refused, which command the ACL refused); every error status
//! from a backend error has one. Every other entry point forgets it when it starts
//! (`ffi_call`), so it always belongs to the call made just before.

use std::cell::Cell;
use std::fmt::Write as _;

use volt_sem_backend::Error;

use crate::status_codes::volt_status;

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

/// Takes this thread's last error message out (`None`: there is none), for
/// the duration of a wake callback (`trampoline`): the calls the callback
/// makes set and forget messages of their own, which belong to it, not to
/// the call on this thread that runs it (a `volt_sem_release`, say). Put
/// back with [`restore_last_error`] when the callback returned.
pub(crate) fn stash_last_error() -> Option<String> {
    if !HAS_LAST_ERROR.with(Cell::get) {
        return None;
    }
    HAS_LAST_ERROR.with(|h| h.set(false));
    LAST_ERROR
        .try_with(|m| std::mem::take(&mut *m.borrow_mut()))
        .ok()
}

/// Undoes [`stash_last_error`]: the thread's message is again what it was
/// before the callback, whatever the callback's calls left.
pub(crate) fn restore_last_error(saved: Option<String>) {
    forget_last_error();
    if let Some(message) = saved {
        set_last_error(|| message);
    }
}

pub(crate) fn set_last_error(message: impl FnOnce() -> String) {
    let _ = LAST_ERROR.try_with(|m| *m.borrow_mut() = message());
    HAS_LAST_ERROR.with(|h| h.set(true));
}

/// Remembers the message of a backend error: every error status that comes
/// from one (`status_of`, the one place errors become statuses) has its
/// `Display` text, unless this call already stored a more specific message
/// (`noted`, `set_last_error`). No list of "detailed" errors to keep up to
/// date: one used to miss `NoPermission`, `WrongType`, `InUse`, `ReadOnly`,
/// `Tls` and `NotReplicated`, whose messages the header promises.
///
/// The text is written into the thread's buffer, which forgetting empties
/// but keeps: after a thread's first message the everyday statuses
/// (`VOLT_WOULD_BLOCK`, `VOLT_TIMED_OUT`, ...) allocate nothing.
pub(crate) fn remember(e: &Error) {
    if HAS_LAST_ERROR.with(Cell::get) {
        return;
    }
    let _ = LAST_ERROR.try_with(|m| {
        let mut m = m.borrow_mut();
        m.clear();
        let _ = write!(m, "{e}");
    });
    HAS_LAST_ERROR.with(|h| h.set(true));
}

/// `status`, with `message` remembered for `volt_last_error_message` (for the
/// detailed statuses the C layer raises itself).
pub(crate) fn noted(status: volt_status, message: &str) -> volt_status {
    set_last_error(|| message.to_owned());
    status
}

/// Runs `f` on this thread's last error message ("" when there is none),
/// or returns `None` during thread exit.
pub(crate) fn with_last_error<R>(f: impl FnOnce(&str) -> R) -> Option<R> {
    LAST_ERROR.try_with(|m| f(&m.borrow())).ok()
}
