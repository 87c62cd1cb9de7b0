//! The message of the last error on each thread (read by
//! `volt_last_error_message`, in `status.rs`):
//! the details a status alone cannot carry (why a connection failed, which
//! option was refused, which command the ACL refused, which argument of which
//! entry point was refused); every error status has one. Every other entry
//! point forgets it when it starts (`ffi_call`), so it always belongs to the
//! call made just before.
//!
//! A failing call stores what the message is made of (the backend error
//! itself, a static text, the refused argument), not the text: the text is
//! written when `volt_last_error_message` reads it, into the thread's buffer.
//! Most error statuses are never asked for their message (`VOLT_WOULD_BLOCK`
//! from a `volt_sem_try_acquire`, `VOLT_TIMED_OUT`), and formatting each of
//! them cost a failed `try_acquire` a third more time.

use std::cell::{Cell, RefCell};
use std::fmt::{self, Write as _};

use volt_sem_backend::{Error, Semaphore};

use crate::boundary::OPTIONS_MAX_SIZE;
use crate::status_codes::volt_status;

/// What this thread's last error message is made of. `Copy`, and kept in a
/// `Cell` without destructor: a failed call stores it with one write of a
/// thread-local, no lock of a `RefCell`, no allocation.
#[derive(Clone, Copy)]
enum Last {
    /// An everyday backend error (`VOLT_WOULD_BLOCK`, `VOLT_TIMED_OUT`,
    /// `VOLT_CLOSED`): its `Display` text.
    Error(&'static Error),
    /// A text of the C layer.
    Static(&'static str),
    /// An argument the entry point `call` refused ("" until `ffi_status`
    /// names it: the checks do not know which entry point they check for).
    Refused {
        call: &'static str,
        refusal: Refusal,
    },
    /// In `STORED`: its error's text, or its text if it has no error (a
    /// message formatted when stored, or one read already).
    Stored,
}

/// What is wrong with an argument: the message is `call: refusal`, e.g.
/// "volt_sem_acquire_blocking: `sem` is NULL".
#[derive(Clone, Copy)]
pub(crate) enum Refusal {
    /// The argument named is NULL.
    Null(&'static str),
    /// A permit count of 0, or above `volt_max_permits()`.
    Count { arg: &'static str, n: usize },
    /// The pointer named is not aligned for its type.
    Misaligned(&'static str),
    /// The `struct_size` named is out of `min..=OPTIONS_MAX_SIZE`.
    StructSize {
        arg: &'static str,
        size: usize,
        min: usize,
    },
    /// Anything else, said whole (it names the argument).
    Text(&'static str),
    /// A refusal no check described (none is known): the status's name.
    Status(volt_status),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Refusal::Null(arg) => write!(f, "`{arg}` is NULL"),
            Refusal::Count { arg, n: 0 } => write!(
                f,
                "`{arg}` is 0: a count is 1 to volt_max_permits() ({})",
                Semaphore::MAX_PERMITS
            ),
            Refusal::Count { arg, n } => write!(
                f,
                "`{arg}` is above volt_max_permits(): {n} > {}",
                Semaphore::MAX_PERMITS
            ),
            Refusal::Misaligned(arg) => write!(f, "`{arg}` is misaligned"),
            Refusal::StructSize { arg, size, min } => write!(
                f,
                "`{arg}` is {size}: not from {min} (the first version's size) to {OPTIONS_MAX_SIZE}"
            ),
            Refusal::Text(text) => f.write_str(text),
            Refusal::Status(status) => write!(
                f,
                "refused its arguments ({})",
                status.name().to_string_lossy()
            ),
        }
    }
}

/// The errors [`remember`] keeps as [`Last::Error`]: those a program meets
/// every day, whose text has no field.
static NO_PERMITS: Error = Error::NoPermits;
static TIMED_OUT: Error = Error::TimedOut;
static CLOSED: Error = Error::Closed;

/// The rest of a thread's last error: a backend error with fields, and the
/// buffer every message is written into when read (kept across messages:
/// once a thread has read a message, reading another allocates nothing
/// unless it is longer).
struct Stored {
    error: Option<Error>,
    text: String,
}

thread_local! {
    /// What this thread's last error message is made of, if `HAS_LAST_ERROR`.
    static LAST: Cell<Last> = const { Cell::new(Last::Stored) };
    /// The error and the text of [`Last::Stored`].
    static STORED: RefCell<Stored> = const {
        RefCell::new(Stored { error: None, text: String::new() })
    };
    /// Whether this thread has a message: one thread-local load per call
    /// decides whether there is anything to forget (no destructor, so no
    /// registration and no failure during thread exit).
    static HAS_LAST_ERROR: Cell<bool> = const { Cell::new(false) };
}

/// Forgets the last error message: every entry point but
/// `volt_last_error_message` starts with it (`ffi_call`).
#[inline]
pub(crate) fn forget_last_error() {
    if HAS_LAST_ERROR.with(Cell::get) {
        forget_stored();
    }
}

#[cold]
fn forget_stored() {
    HAS_LAST_ERROR.with(|h| h.set(false));
    if let Last::Stored = LAST.with(Cell::get) {
        // Drops the error (its strings) now rather than at the next one.
        let _ = STORED.try_with(|m| m.borrow_mut().error = None);
    }
}

/// Stores `last` as this thread's last error, replacing any.
fn store(last: Last) {
    LAST.with(|l| l.set(last));
    HAS_LAST_ERROR.with(|h| h.set(true));
}

/// A thread's last error, taken out for the duration of a wake callback
/// ([`stash_last_error`]).
pub(crate) struct Saved {
    last: Last,
    error: Option<Error>,
    text: String,
}

/// Takes this thread's last error out (`None`: there is none), for the
/// duration of a wake callback (`trampoline`): the calls the callback
/// makes set and forget messages of their own, which belong to it, not to
/// the call on this thread that runs it (a `volt_sem_release`, say). Put
/// back with [`restore_last_error`] when the callback returned.
pub(crate) fn stash_last_error() -> Option<Saved> {
    if !HAS_LAST_ERROR.with(Cell::get) {
        return None;
    }
    HAS_LAST_ERROR.with(|h| h.set(false));
    let last = LAST.with(Cell::get);
    let (error, text) = match last {
        Last::Stored => STORED
            .try_with(|m| {
                let mut m = m.borrow_mut();
                (m.error.take(), std::mem::take(&mut m.text))
            })
            .ok()?,
        _ => (None, String::new()),
    };
    Some(Saved { last, error, text })
}

/// Undoes [`stash_last_error`]: the thread's message is again what it was
/// before the callback, whatever the callback's calls left.
pub(crate) fn restore_last_error(saved: Option<Saved>) {
    forget_last_error();
    let Some(Saved { last, error, text }) = saved else {
        return;
    };
    if let Last::Stored = last {
        let _ = STORED.try_with(|m| *m.borrow_mut() = Stored { error, text });
    }
    store(last);
}

/// Stores a message formatted now (for the rare messages made of values no
/// [`Last`] keeps).
pub(crate) fn set_last_error(message: impl FnOnce() -> String) {
    let _ = STORED.try_with(|m| {
        let mut m = m.borrow_mut();
        m.error = None;
        m.text = message();
    });
    store(Last::Stored);
}

/// Remembers a backend error for its message: every error status that comes
/// from one (`status_of`, the one place errors become statuses) has its
/// `Display` text, unless this call already stored a more specific message
/// (`noted`, `set_last_error`). No list of "detailed" errors to keep up to
/// date: one used to miss `NoPermission`, `WrongType`, `InUse`, `ReadOnly`,
/// `Tls` and `NotReplicated`, whose messages the header promises.
///
/// The error is kept as it is, its text written only if
/// `volt_last_error_message` asks for it; the everyday ones as a reference
/// to a static copy (nothing but two thread-local writes), the others moved
/// into the thread's `STORED`.
#[inline]
pub(crate) fn remember(e: Error) {
    if HAS_LAST_ERROR.with(Cell::get) {
        return;
    }
    let everyday = match e {
        Error::NoPermits => &NO_PERMITS,
        Error::TimedOut => &TIMED_OUT,
        Error::Closed => &CLOSED,
        e => return remember_stored(e),
    };
    store(Last::Error(everyday));
}

#[cold]
fn remember_stored(e: Error) {
    let _ = STORED.try_with(|m| m.borrow_mut().error = Some(e));
    store(Last::Stored);
}

/// `status`, with `message` remembered for `volt_last_error_message` (for the
/// detailed statuses the C layer raises itself).
pub(crate) fn noted(status: volt_status, message: &'static str) -> volt_status {
    store(Last::Static(message));
    status
}

/// `status`, refused by an argument check for `refusal`: the entry point
/// (`ffi_status`) adds its name to the message ([`name_the_call`]).
#[cold]
pub(crate) fn refuse(status: volt_status, refusal: Refusal) -> volt_status {
    store(Last::Refused { call: "", refusal });
    status
}

/// For `ffi_status`, when its body ended with `Err(status)`: names `call` in
/// the message of a refused argument, and returns `status`; a refusal that
/// left no message (no check is known to) gets the status's name.
#[cold]
pub(crate) fn name_the_call(call: &'static str, status: volt_status) -> volt_status {
    if !HAS_LAST_ERROR.with(Cell::get) {
        store(Last::Refused {
            call,
            refusal: Refusal::Status(status),
        });
    } else if let Last::Refused { call: "", refusal } = LAST.with(Cell::get) {
        store(Last::Refused { call, refusal });
    }
    // Opaque, so that the entry point's `Err` arm stays a tail call (known
    // to return its argument, the caller would keep `status` across the
    // call, in a register every entry point then saves).
    std::hint::black_box(status)
}

/// Runs `f` on this thread's last error message ("" when there is none),
/// writing its text first if this is its first read; `None` during thread
/// exit.
pub(crate) fn with_last_error<R>(f: impl FnOnce(&str) -> R) -> Option<R> {
    if !HAS_LAST_ERROR.with(Cell::get) {
        return Some(f(""));
    }
    let last = LAST.with(|l| l.replace(Last::Stored));
    STORED
        .try_with(|m| {
            let mut m = m.borrow_mut();
            let Stored { error, text } = &mut *m;
            let _ = match (last, error.take()) {
                (Last::Stored, None) => Ok(()),
                (Last::Stored, Some(e)) => rewrite(text, format_args!("{e}")),
                (Last::Error(e), _) => rewrite(text, format_args!("{e}")),
                (Last::Static(message), _) => rewrite(text, format_args!("{message}")),
                (Last::Refused { call: "", refusal }, _) => {
                    rewrite(text, format_args!("{refusal}"))
                }
                (Last::Refused { call, refusal }, _) => {
                    rewrite(text, format_args!("{call}: {refusal}"))
                }
            };
            f(text)
        })
        .ok()
}

/// Replaces `text` with `args`, in its buffer.
fn rewrite(text: &mut String, args: fmt::Arguments<'_>) -> fmt::Result {
    text.clear();
    text.write_fmt(args)
}
