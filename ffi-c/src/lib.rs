//! C ABI for volt-sem.
//!
//! The header `include/volt_sem.h` is generated from this file by cbindgen (see
//! `cbindgen.toml`, whose header text holds the full contract: ownership,
//! threads, wake callbacks and the waiter lifetime rule). Regenerate it with
//! `VOLT_SEM_BLESS=1 cargo test -p volt-sem-ffi --test header`.
//!
//! Design, in the style of rustls-ffi:
//!
//! * `volt_sem` is an opaque `Arc`: `volt_sem_new` hands out one reference,
//!   `volt_sem_clone` adds one, `volt_sem_free` drops one.
//! * `volt_waiter` is caller-allocated, sized and aligned in the header, and holds
//!   a core [`Waiter`] plus the bookkeeping that makes misuse detectable: a magic
//!   word set by `volt_waiter_init`, a `busy` flag (set from PENDING until the
//!   owner's `volt_sem_cancel` returned), the user's callback, a `claim` word
//!   that lets `volt_sem_try_cancel` and the callback exclude each other, and
//!   one strong reference to the semaphore it is queued on, so that freeing
//!   every handle while a waiter is queued cannot free the queue under it.
//! * `volt_waiter_init` only writes: the memory it is given is usually fresh
//!   (stack or heap), and reading it first would read uninitialised memory.
//! * The core tells whether this thread is inside a waiter's callback
//!   (callbacks never nest: the core delivers them from a per-thread loop), so
//!   `volt_sem_cancel` can tell a call from inside (collects the outcome, the
//!   waiter stays busy) from the owner's final call (which waits for the
//!   callback and frees the waiter).
//! * Every entry point catches panics and returns `VOLT_PANIC` or a documented
//!   default; every pointer is checked for NULL.
//! * The semaphore behind a handle is a [`volt_sem_backend::Semaphore`]: the
//!   in-process one (`volt_sem_new`), the named one shared by the processes
//!   of the machine (`volt_sem_open`), or the one stored in Redis and shared
//!   by every host (`volt_sem_connect`). Every function works on all three
//!   through that one type; the waiter holds a backend waiter, which queues on
//!   any. The shared and Redis semaphores' errors get their own statuses
//!   (`VOLT_NOT_FOUND`, `VOLT_MISMATCH`, `VOLT_LEASE_EXPIRED`, ...), mapped in
//!   one place (`status_of`). They are new values after the existing ones
//!   (never renumbered), and only handles made by the new constructors return
//!   them, so a program that only calls `volt_sem_new` sees no new value.
//! * Redis extras: options in an extensible struct (`struct_size` first, 0
//!   meaning "default" for every field, unknown trailing bytes accepted only
//!   when zero); fencing tokens as out-parameters of `_fenced` variants and
//!   waiter getters, so the existing signatures stay; lease-loss callbacks
//!   through `lease.rs` (the Redis crate wakes its futures under a lock, so the
//!   C callback runs on a notifier thread instead).

#![allow(non_camel_case_types)]

use std::cell::Cell;
use std::ffi::{c_char, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use volt_core::{RawAcquire, WaiterState};
use volt_sem_backend::{ConnectOptions, Error, Finish, Grant, OpenOptions, Semaphore, Waiter};

/// Runs `$body` (a closure body) and turns a panic into `$default`.
///
/// No panic may cross the C boundary: unwinding out of an `extern "C"` function
/// aborts the process, so each entry point catches it and reports it as a value.
///
/// It also forgets the thread's last error message first, so that
/// `volt_last_error_message` never shows an earlier call's text.
macro_rules! ffi_boundary {
    ($default:expr, $body:expr) => {{
        forget_last_error();
        ffi_boundary!(keep_last_error, $default, $body)
    }};
    (keep_last_error, $default:expr, $body:expr) => {
        match catch_unwind(AssertUnwindSafe(|| $body)) {
            Ok(value) => value,
            Err(_) => $default,
        }
    };
}

/// Result codes. A fixed-width integer (`int32_t`) so that every language
/// binding sees the same type; values are stable.
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum volt_status {
    /// Success; for an acquire: the permits were taken (READY); for
    /// `volt_sem_cancel`/`volt_waiter_status`: the full grant arrived and the
    /// caller owns the requested permits.
    VOLT_OK = 0,
    /// The waiter was queued; its wake callback will be called once.
    VOLT_PENDING = 1,
    /// Not enough permits right now (or earlier requests are queued).
    VOLT_WOULD_BLOCK = 2,
    /// The semaphore is closed (or was closed while the waiter was queued; the
    /// waiter holds no permits).
    VOLT_CLOSED = 3,
    /// `volt_sem_acquire_blocking` gave up; any partial grant was handed on.
    VOLT_TIMED_OUT = 4,
    /// `volt_sem_cancel` removed a queued waiter before its grant was complete;
    /// the partial grant (possibly 0) was handed on to the next waiters.
    VOLT_CANCELLED = 5,
    /// The waiter is not queued and holds no outcome: never used, its acquire
    /// returned at once, or its outcome was already collected.
    VOLT_IDLE = 6,
    /// A NULL pointer, `n == 0`, `n > volt_max_permits()`, an uninitialised or
    /// misaligned waiter, a waiter that is still busy, or a waiter cancelled on a
    /// semaphore it is not queued on. Nothing was changed.
    VOLT_INVALID_ARGUMENT = 7,
    /// A release would raise the available permits above `volt_max_permits()`.
    /// Nothing was released.
    VOLT_OVERFLOW = 8,
    /// An internal error (a Rust panic) was caught at the boundary.
    VOLT_PANIC = 9,
    /// `volt_sem_open`/`volt_sem_unlink`: the name is empty, contains '/', is
    /// longer than `volt_sem_max_name_len()` bytes, or is not UTF-8.
    VOLT_INVALID_NAME = 10,
    /// No shared semaphore has this name (`VOLT_OPEN_ATTACH_ONLY`, unlink), or
    /// no Redis semaphore (`volt_sem_delete`).
    VOLT_NOT_FOUND = 11,
    /// `VOLT_OPEN_CREATE_ONLY`: a shared semaphore with this name exists.
    VOLT_EXISTS = 12,
    /// The OS refused access to the shared segment (its mode), or another
    /// user owns it and `VOLT_OPEN_ACCEPT_FOREIGN_OWNER` was not given.
    VOLT_PERMISSION = 13,
    /// The name exists with another total of permits; nothing was changed.
    VOLT_MISMATCH = 14,
    /// The segment was made by another layout version of the library.
    VOLT_VERSION_MISMATCH = 15,
    /// The file under the name is not a volt-sem segment (foreign or
    /// truncated, or a directory).
    VOLT_NOT_A_SEGMENT = 16,
    /// Every waiter slot of the shared segment is taken (`volt_sem_max_waiters()`
    /// requests queued across all processes); the request was not queued.
    VOLT_QUEUE_FULL = 17,
    /// Every process record of the shared segment is taken.
    VOLT_PROCESS_TABLE_FULL = 18,
    /// A shared semaphore's release of more permits than this process holds;
    /// nothing was released.
    VOLT_NOT_HELD = 19,
    /// A blocking acquire of a shared semaphore inside one of its wake
    /// callbacks (which run on the process's doorbell thread of that name,
    /// where it would wait for itself).
    VOLT_IN_CALLBACK = 20,
    /// A shared handle opened (or a Redis handle connected) before `fork()`,
    /// used in the child: open the name (connect) again in the child.
    VOLT_FORKED = 21,
    /// Named shared semaphores are not supported on this platform (Linux
    /// only); or a Redis-only call (`volt_sem_census`, `volt_sem_watch_lease`)
    /// on a local or shared semaphore.
    VOLT_UNSUPPORTED = 22,
    /// The shared segment is corrupt: it holds a value the library never
    /// writes (another process with write access scribbled on it; the call
    /// stopped short of it), or its lock is not recoverable.
    VOLT_CORRUPT = 23,
    /// Another OS error from the shared segment (`errno` is not preserved).
    VOLT_OS_ERROR = 24,
    /// `volt_sem_connect`: the URL is malformed, of an unsupported scheme, or
    /// not UTF-8. Nothing was contacted.
    VOLT_INVALID_URL = 25,
    /// `volt_sem_connect`: the key prefix is empty, longer than 256 bytes,
    /// contains '{' or '}', or is not UTF-8.
    VOLT_INVALID_PREFIX = 26,
    /// `volt_sem_connect`: an option is out of range (a lease below 300 ms),
    /// an unknown flag bit, or a non-zero option this library does not know
    /// (a `volt_connect_options` from a newer header; see there).
    VOLT_INVALID_OPTION = 27,
    /// Redis refused the credentials of the URL (wrong user or password).
    VOLT_AUTH_FAILED = 28,
    /// Redis could not be reached within the connect timeout, or the
    /// connection failed (or a command took longer than the command timeout).
    VOLT_CONNECTION_FAILED = 29,
    /// Redis answered a command with an error (e.g. out of memory, a script
    /// error; a replica is `VOLT_READ_ONLY`, an ACL refusal
    /// `VOLT_NO_PERMISSION`).
    VOLT_REDIS_ERROR = 30,
    /// Redis answered with a reply the library never expects (a foreign key
    /// in the semaphore's key space, or a bug).
    VOLT_PROTOCOL_ERROR = 31,
    /// This handle's session lease expired (the process was paused, Redis was
    /// out of reach, a partition) for longer than the lease: the permits it
    /// held went back to the pool and its queued requests were removed.
    /// Waiters fail with it; `volt_sem_release` of such permits returns it
    /// and releases nothing (they were already reclaimed). The handle goes on
    /// with a new session at its next acquire.
    VOLT_LEASE_EXPIRED = 32,
    /// Redis lost the semaphore's state (restarted without persistence,
    /// flushed, or its keys deleted): the handle fails its holders and
    /// waiters and refuses every later call rather than over-grant. Free it
    /// and connect again to start afresh.
    VOLT_STATE_LOST = 33,
    /// Redis over TLS: the handshake failed (the server's certificate is not
    /// trusted or not for this host, a `rediss://` URL to a plain port, an
    /// unreadable certificate file); `volt_last_error_message` says which.
    VOLT_TLS_FAILED = 34,
    /// Redis with a minimum of replicas to acknowledge each write: fewer
    /// acknowledged in time, so the session was given up (what it held went
    /// back; its waiters fail with `VOLT_LEASE_EXPIRED`).
    VOLT_NOT_REPLICATED = 35,
    /// Redis (its ACL) refuses this user a command the library needs:
    /// `volt_sem_connect` checks the ones it sends itself (`EVALSHA`,
    /// `EVAL`, `BLPOP`, `RPUSH`; `PUBLISH` and `WAIT` with
    /// `min_replicas_acked`), and a command refused inside a script is
    /// reported the same way; `volt_last_error_message` names the command.
    VOLT_NO_PERMISSION = 36,
    /// Redis is a read-only replica (`READONLY`): the URL names a replica, or
    /// a failover demoted the server. Through Sentinels the master is found
    /// again instead (the connection is replaced).
    VOLT_READ_ONLY = 37,
    /// `volt_sem_delete`: the Redis semaphore has live sessions (clients that
    /// hold permits, wait, or are connected); nothing was deleted.
    VOLT_IN_USE = 38,
}

use volt_status::*;

/// A semaphore handle. Opaque; always used through a pointer obtained from
/// `volt_sem_new`, `volt_sem_open`, `volt_sem_connect` or `volt_sem_clone`,
/// and given back with `volt_sem_free`.
pub struct volt_sem {
    sem: Semaphore,
    /// The process that connected a Redis handle (0 for the other backends):
    /// a copy inherited through `fork()` shares the parent's sockets and
    /// session, so the child must not use it (see `forked`).
    pid: u32,
    /// The lease-loss registration of a Redis handle's current session
    /// (`volt_sem_watch_lease`; see lease.rs).
    hub: std::sync::Mutex<Option<Arc<lease::Hub>>>,
}

impl volt_sem {
    fn new(sem: Semaphore) -> Self {
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
    fn forked(&self) -> bool {
        self.pid != 0 && self.pid != std::process::id()
    }
}

/// The wake callback: `wake(ctx)` is called at most once per PENDING acquire.
/// See "Wake callbacks" at the top of this header. It must return normally: a
/// C++ exception thrown out of it aborts the process, and `longjmp` out of it
/// is undefined behaviour.
// "C-unwind": a foreign exception escaping the callback is then defined
// behaviour on the Rust side: it reaches `trampoline`, an `extern "C"` function,
// whose unwind guard aborts the process (instead of unwinding through frames
// that hold the semaphore's state mid-update).
pub type volt_wake_fn = Option<unsafe extern "C-unwind" fn(ctx: *mut c_void)>;

/// Major version of the headers this program was compiled with; compare with
/// `volt_sem_version()` for the library it runs with.
pub const VOLT_SEM_VERSION_MAJOR: u32 = 0;
/// Minor version of the headers this program was compiled with.
pub const VOLT_SEM_VERSION_MINOR: u32 = 1;
/// Patch version of the headers this program was compiled with.
pub const VOLT_SEM_VERSION_PATCH: u32 = 0;

/// Parses a decimal `CARGO_PKG_VERSION_*` component at compile time.
const fn parse_version(text: &str) -> u32 {
    let bytes = text.as_bytes();
    assert!(!bytes.is_empty(), "empty version component");
    let mut value = 0u32;
    let mut i = 0;
    while i < bytes.len() {
        assert!(bytes[i].is_ascii_digit(), "non-numeric version component");
        value = value * 10 + (bytes[i] - b'0') as u32;
        i += 1;
    }
    value
}

// The header's version macros are literals (cbindgen cannot evaluate `env!`), so
// the build fails if they drift from Cargo.toml's version.
const _: () = {
    assert!(
        VOLT_SEM_VERSION_MAJOR == parse_version(env!("CARGO_PKG_VERSION_MAJOR")),
        "VOLT_SEM_VERSION_MAJOR differs from Cargo.toml's version"
    );
    assert!(
        VOLT_SEM_VERSION_MINOR == parse_version(env!("CARGO_PKG_VERSION_MINOR")),
        "VOLT_SEM_VERSION_MINOR differs from Cargo.toml's version"
    );
    assert!(
        VOLT_SEM_VERSION_PATCH == parse_version(env!("CARGO_PKG_VERSION_PATCH")),
        "VOLT_SEM_VERSION_PATCH differs from Cargo.toml's version"
    );
};

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
    _opaque: [u64; 64],
}

/// What actually lives inside a `volt_waiter`.
struct Slot {
    waiter: Waiter,
    /// `MAGIC` once `volt_waiter_init` ran; lets every call reject zeroed or
    /// uninitialised memory.
    magic: AtomicU32,
    /// From a PENDING acquire until the owner's `volt_sem_cancel` returned. While
    /// set, the slot may be referenced by the semaphore and must not be reused.
    busy: AtomicBool,
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
    /// queued on, while busy; NULL otherwise.
    sem: Cell<*const volt_sem>,
    /// An owner's `volt_sem_cancel`/`volt_sem_try_cancel` (outside the callback)
    /// is ending this request now. A callback that this very call's hand-off
    /// completes runs on the same thread before it returns, and may cancel this
    /// waiter too (a sibling it owns): that inner call must not end it a second
    /// time. Only the owner's thread reads or writes it (one-owner rule).
    ending: AtomicBool,
}

const MAGIC: u32 = 0x766f_6c74; // "volt"

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
        // SAFETY: the caller of `volt_sem_acquire` promised that `wake(ctx)` may be
        // called once, from any thread, until the waiter is finished. Should it
        // unwind (a C++ exception), this `extern "C"` function aborts the process.
        unsafe { wake(user_ctx) };
    }
    // Release: whatever the callback wrote happens-before a `volt_sem_try_cancel`
    // that reads CLAIM_RETURNED. The last access to the slot in this function.
    slot.claim.store(CLAIM_RETURNED, Ordering::Release);
}

/// Borrows the semaphore behind a handle, or `None` for NULL.
///
/// # Safety
/// `sem` is NULL or a live handle from `volt_sem_new`/`volt_sem_clone`.
unsafe fn sem_ref<'a>(sem: *const volt_sem) -> Option<&'a volt_sem> {
    // SAFETY: forwarded caller contract.
    unsafe { sem.as_ref() }
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

fn pinned(slot: &Slot) -> Pin<&Waiter> {
    // SAFETY: the C contract forbids moving a waiter while it is busy, and the
    // core only relies on the address between a PENDING acquire and the finish.
    unsafe { Pin::new_unchecked(&slot.waiter) }
}

fn valid_count(n: usize) -> bool {
    n != 0 && n <= Semaphore::MAX_PERMITS
}

/// The status of a backend error. Requests too large for the semaphore are
/// invalid arguments, as for the local semaphore's `n > volt_max_permits()`.
fn status_of(e: Error) -> volt_status {
    remember(&e);
    match e {
        Error::Closed => VOLT_CLOSED,
        Error::NoPermits => VOLT_WOULD_BLOCK,
        Error::TimedOut => VOLT_TIMED_OUT,
        Error::Overflow { .. } => VOLT_OVERFLOW,
        Error::TooManyPermits | Error::InvalidPermits => VOLT_INVALID_ARGUMENT,
        Error::InvalidName => VOLT_INVALID_NAME,
        Error::NotFound => VOLT_NOT_FOUND,
        Error::AlreadyExists => VOLT_EXISTS,
        Error::PermissionDenied => VOLT_PERMISSION,
        Error::TotalMismatch { .. } => VOLT_MISMATCH,
        Error::VersionMismatch { .. } => VOLT_VERSION_MISMATCH,
        Error::NotASegment => VOLT_NOT_A_SEGMENT,
        Error::QueueFull => VOLT_QUEUE_FULL,
        Error::ProcessTableFull => VOLT_PROCESS_TABLE_FULL,
        Error::NotHeld { .. } => VOLT_NOT_HELD,
        Error::InCallback => VOLT_IN_CALLBACK,
        Error::Forked => VOLT_FORKED,
        Error::Unsupported => VOLT_UNSUPPORTED,
        Error::Corrupt => VOLT_CORRUPT,
        Error::InvalidUrl(_) => VOLT_INVALID_URL,
        Error::InvalidPrefix => VOLT_INVALID_PREFIX,
        Error::InvalidOption(_) => VOLT_INVALID_OPTION,
        Error::Auth => VOLT_AUTH_FAILED,
        Error::Connection(_) => VOLT_CONNECTION_FAILED,
        Error::Redis(_) => VOLT_REDIS_ERROR,
        Error::Protocol(_) => VOLT_PROTOCOL_ERROR,
        Error::LeaseExpired => VOLT_LEASE_EXPIRED,
        Error::StateLost => VOLT_STATE_LOST,
        Error::Tls(_) => VOLT_TLS_FAILED,
        Error::NotReplicated { .. } => VOLT_NOT_REPLICATED,
        Error::NoPermission(_) => VOLT_NO_PERMISSION,
        Error::ReadOnly(_) => VOLT_READ_ONLY,
        Error::InUse { .. } => VOLT_IN_USE,
        // Os, and any later variant of the non_exhaustive error.
        _ => VOLT_OS_ERROR,
    }
}

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
/// `volt_last_error_message` starts with it (`ffi_boundary!`).
#[inline]
fn forget_last_error() {
    if HAS_LAST_ERROR.with(Cell::get) {
        HAS_LAST_ERROR.with(|h| h.set(false));
        let _ = LAST_ERROR.try_with(|m| m.borrow_mut().clear());
    }
}

fn set_last_error(message: impl FnOnce() -> String) {
    let _ = LAST_ERROR.try_with(|m| *m.borrow_mut() = message());
    HAS_LAST_ERROR.with(|h| h.set(true));
}

/// Remembers the message of an error that carries more than its status says
/// (which Redis error, why the connection failed, which option). Only those:
/// the everyday statuses (`VOLT_WOULD_BLOCK`, `VOLT_TIMED_OUT`, ...) stay
/// allocation-free.
fn remember(e: &Error) {
    let detailed = matches!(
        e,
        Error::InvalidUrl(_)
            | Error::InvalidPrefix
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
fn noted(status: volt_status, message: &str) -> volt_status {
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
    ffi_boundary!(keep_last_error, 0, {
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

/// `Ok` as `VOLT_OK`, an error as its status.
fn status<T>(r: Result<T, Error>) -> volt_status {
    r.map_or_else(status_of, |_| VOLT_OK)
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
    ffi_boundary!(VOLT_PANIC, {
        if out.is_null() {
            return VOLT_INVALID_ARGUMENT;
        }
        let (status, handle) = match Semaphore::local(permits) {
            Some(sem) => (VOLT_OK, Arc::into_raw(Arc::new(volt_sem::new(sem)))),
            None => (VOLT_INVALID_ARGUMENT, ptr::null()),
        };
        // SAFETY: `out` is non-NULL and, by contract, writable.
        unsafe { out.write(handle) };
        status
    })
}

/// `volt_sem_open` flag: fail with `VOLT_EXISTS` if the name exists.
pub const VOLT_OPEN_CREATE_ONLY: u32 = 1;
/// `volt_sem_open` flag: fail with `VOLT_NOT_FOUND` if the name does not exist.
pub const VOLT_OPEN_ATTACH_ONLY: u32 = 2;
/// Where the permission bits of a newly created segment go in `volt_sem_open`'s
/// flags: `flags | (0660 << VOLT_OPEN_MODE_SHIFT)`, or `VOLT_OPEN_MODE(0660)`.
/// 0 there means the default, 0600 (owner only).
pub const VOLT_OPEN_MODE_SHIFT: u32 = 16;
/// `volt_sem_open` flag: a new segment is readable and writable by the owner's
/// group too (mode 0660).
pub const VOLT_OPEN_SHARE_GROUP: u32 = 0o660 << VOLT_OPEN_MODE_SHIFT;
/// `volt_sem_open` flag: a new segment is readable and writable by every user
/// (mode 0666 exactly: the mode is set after creation, so the process umask
/// does not apply). Every local user can then attach (with
/// `VOLT_OPEN_ACCEPT_FOREIGN_OWNER`) and rewrite the segment: see "TRUST
/// BOUNDARY" at the top.
pub const VOLT_OPEN_SHARE_ALL: u32 = 0o666 << VOLT_OPEN_MODE_SHIFT;
/// `volt_sem_open` flag: attach to an existing segment even if another user
/// owns it. Without it, a segment whose owner is not the caller's effective
/// uid is refused with `VOLT_PERMISSION` (nothing changed): a segment another
/// user made (or pre-created under the name, "squatting") is only as
/// trustworthy as that user, who can rewrite its state at will. Set it only
/// for a name another user shares with you on purpose (`VOLT_OPEN_SHARE_GROUP`,
/// `VOLT_OPEN_SHARE_ALL`). Ignored when this call creates the segment.
pub const VOLT_OPEN_ACCEPT_FOREIGN_OWNER: u32 = 4;

/// Every flag bit `volt_sem_open` knows; any other is `VOLT_INVALID_ARGUMENT`.
const OPEN_KNOWN_FLAGS: u32 = VOLT_OPEN_CREATE_ONLY
    | VOLT_OPEN_ATTACH_ONLY
    | VOLT_OPEN_ACCEPT_FOREIGN_OWNER
    | (0o777 << VOLT_OPEN_MODE_SHIFT);

/// The options of `volt_sem_open`'s flags, or `None` for unknown bits or
/// both CREATE_ONLY and ATTACH_ONLY.
fn open_options(flags: u32) -> Option<OpenOptions> {
    if flags & !OPEN_KNOWN_FLAGS != 0 {
        return None;
    }
    let mut options = match (
        flags & VOLT_OPEN_CREATE_ONLY != 0,
        flags & VOLT_OPEN_ATTACH_ONLY != 0,
    ) {
        (true, true) => return None,
        (true, false) => OpenOptions::new().create_only(),
        (false, true) => OpenOptions::new().attach_only(),
        (false, false) => OpenOptions::new(),
    }
    .accept_foreign_owner(flags & VOLT_OPEN_ACCEPT_FOREIGN_OWNER != 0);
    let mode = (flags >> VOLT_OPEN_MODE_SHIFT) & 0o777;
    if mode != 0 {
        // The owner always keeps read and write: without them the creator
        // could not open its own semaphore again.
        options = options.mode(mode | 0o600);
    }
    Some(options)
}

/// A name from C: `Err(VOLT_INVALID_ARGUMENT)` for NULL, `Err(VOLT_INVALID_NAME)`
/// for a name that is not UTF-8 (the shm crate checks the rest).
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
unsafe fn name_arg<'a>(name: *const c_char) -> Result<&'a str, volt_status> {
    if name.is_null() {
        return Err(VOLT_INVALID_ARGUMENT);
    }
    // SAFETY: non-NULL and NUL-terminated (contract).
    let name = unsafe { std::ffi::CStr::from_ptr(name) };
    name.to_str().map_err(|_| VOLT_INVALID_NAME)
}

/// Opens the named semaphore `name`, shared by every process of this machine
/// that opens the same name, creating it with `permits` permits in total if it
/// does not exist, and stores one reference to it in `*out`: an ordinary
/// handle, used and freed like one from `volt_sem_new` (every function works on
/// it; `volt_sem_free` of the process's last reference detaches the process,
/// which returns whatever it still holds). See "SHARED SEMAPHORES" at the top.
///
/// `name`: 1 to `volt_sem_max_name_len()` bytes of UTF-8, without '/'; the
/// segment is `/dev/shm/volt-sem.<name>`. `permits`: 1 to
/// `volt_sem_max_shared_permits()`; an existing name must have been created with
/// the same total. `flags`: 0 (create or attach), or `VOLT_OPEN_CREATE_ONLY` or
/// `VOLT_OPEN_ATTACH_ONLY`, plus a mode for a new segment (`VOLT_OPEN_SHARE_GROUP`,
/// `VOLT_OPEN_SHARE_ALL`, or `VOLT_OPEN_MODE(m)`; default 0600, owner only; the
/// owner always keeps read and write; set exactly, the umask does not apply),
/// plus `VOLT_OPEN_ACCEPT_FOREIGN_OWNER` to attach to a segment another user
/// owns (refused with `VOLT_PERMISSION` without it).
///
/// Returns `VOLT_OK`, or (with `*out` set to NULL when `out` is not NULL, and
/// nothing changed):
/// * `VOLT_INVALID_ARGUMENT`: NULL `name` or `out`, `permits` 0 or too large,
///   unknown flag bits, or both CREATE_ONLY and ATTACH_ONLY;
/// * `VOLT_INVALID_NAME`, `VOLT_NOT_FOUND` (ATTACH_ONLY), `VOLT_EXISTS`
///   (CREATE_ONLY), `VOLT_PERMISSION` (the mode refuses this user, or another
///   user owns the segment and `VOLT_OPEN_ACCEPT_FOREIGN_OWNER` is not set),
///   `VOLT_MISMATCH` (another total),
///   `VOLT_VERSION_MISMATCH`, `VOLT_NOT_A_SEGMENT` (a foreign or truncated
///   file, or a directory at the name),
///   `VOLT_PROCESS_TABLE_FULL`, `VOLT_TIMED_OUT` (the segment's init lock or
///   lock stayed held for 5 s: a process stopped inside its open, or one
///   holding it on purpose), `VOLT_CORRUPT`, `VOLT_UNSUPPORTED` (not Linux),
///   `VOLT_OS_ERROR` (e.g. `/dev/shm` full).
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn volt_sem_open(
    name: *const c_char,
    permits: usize,
    flags: u32,
    out: *mut *const volt_sem,
) -> volt_status {
    ffi_boundary!(VOLT_PANIC, {
        if out.is_null() {
            return VOLT_INVALID_ARGUMENT;
        }
        // SAFETY: `out` is non-NULL and, by contract, writable.
        unsafe { out.write(ptr::null()) };
        // SAFETY: NULL or NUL-terminated (contract).
        let name = match unsafe { name_arg(name) } {
            Ok(name) => name,
            Err(status) => return status,
        };
        let Some(options) = open_options(flags) else {
            return VOLT_INVALID_ARGUMENT;
        };
        match Semaphore::open(name, permits, options) {
            Ok(sem) => {
                // SAFETY: as above.
                unsafe { out.write(Arc::into_raw(Arc::new(volt_sem::new(sem)))) };
                VOLT_OK
            }
            Err(e) => status_of(e),
        }
    })
}

/// Removes the name of a shared semaphore. Only the name: processes attached
/// keep using the semaphore, and the next `volt_sem_open` of the name creates a
/// new one.
///
/// Returns `VOLT_OK`, `VOLT_INVALID_ARGUMENT` (NULL), `VOLT_INVALID_NAME`,
/// `VOLT_NOT_FOUND`, `VOLT_PERMISSION`, `VOLT_UNSUPPORTED` or `VOLT_OS_ERROR`.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn volt_sem_unlink(name: *const c_char) -> volt_status {
    ffi_boundary!(VOLT_PANIC, {
        // SAFETY: NULL or NUL-terminated (contract).
        match unsafe { name_arg(name) } {
            Ok(name) => status(volt_sem_backend::unlink(name)),
            Err(status) => status,
        }
    })
}

/// The fixed total of a shared or Redis semaphore (from `volt_sem_open`,
/// `volt_sem_connect`; no round trip); 0 for a local one (its releases may add
/// permits: it has no fixed total) and for NULL.
///
/// # Safety
/// `sem` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn volt_sem_total_permits(sem: *const volt_sem) -> usize {
    ffi_boundary!(0, {
        // SAFETY: NULL or a live handle (contract).
        unsafe { sem_ref(sem) }
            .and_then(|sem| sem.sem.total_permits())
            .unwrap_or(0)
    })
}

/// The longest name `volt_sem_open` accepts, in bytes.
#[no_mangle]
pub extern "C" fn volt_sem_max_name_len() -> usize {
    ffi_boundary!(0, volt_sem_backend::MAX_NAME_LEN)
}

/// The largest total of a shared semaphore (and the largest request on one).
#[no_mangle]
pub extern "C" fn volt_sem_max_shared_permits() -> usize {
    ffi_boundary!(0, volt_sem_backend::shm::MAX_PERMITS)
}

/// How many requests may be queued on one shared semaphore, across all its
/// processes; one more fails with `VOLT_QUEUE_FULL`.
#[no_mangle]
pub extern "C" fn volt_sem_max_waiters() -> usize {
    ffi_boundary!(0, volt_sem_backend::shm::MAX_WAITERS)
}

/// The options of `volt_sem_connect`: an extensible struct. Fill it with
/// `volt_connect_options_init(&opts, sizeof opts)`, then change the fields
/// you need:
///
/// ```c
/// volt_connect_options opts;
/// volt_connect_options_init(&opts, sizeof opts);
/// opts.lease_ms = 3000;
/// opts.key_prefix = "tenant-a";
/// volt_status s = volt_sem_connect("redis://127.0.0.1:6379", "db-pool", 50, &opts, &sem);
/// ```
///
/// Every field's 0 (or NULL) means its default, so `volt_connect_options opts =
/// { sizeof opts };` is valid too. Strings are read (copied) during the call
/// only: the caller keeps them.
///
/// ABI: fields are only ever appended, each with 0 meaning "default", and
/// `struct_size` says how many bytes the caller's struct has. A program built
/// against an older header passes a smaller `struct_size`: the newer fields
/// get their defaults. A program built against a newer header and run with
/// an older library passes a larger one: accepted if every byte the library
/// does not know is 0 (options left at their defaults), else
/// `VOLT_INVALID_OPTION` (the program asked for an option this library
/// cannot honour). Sentinel needs no option: its URL names the master
/// (`redis+sentinel://host:port[,host:port]/master`).
// Adding an option:
// append a field whose 0 / NULL means the default, never reorder or remove
// one; read it in `connect_options` (it is 0 there when an older program's
// `struct_size` does not reach it); document it here and in the tests; keep
// no trailing padding (a test checks it).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct volt_connect_options {
    /// `sizeof(volt_connect_options)` as the caller compiled it (set by
    /// `volt_connect_options_init`).
    pub struct_size: usize,
    /// The session lease in milliseconds: a client not heard of for that long
    /// (crashed, paused, partitioned) loses its permits and queue places.
    /// At least 300; default (0) 10000. The heartbeat renews it every third.
    pub lease_ms: u64,
    /// How long `volt_sem_connect` (and a reconnect) may take, in
    /// milliseconds; default (0) 5000.
    pub connect_timeout_ms: u64,
    /// How long one command (one script, one round trip) may take before the
    /// connection counts as failed, in milliseconds; default (0) 5000. Bounds
    /// how long every call that talks to Redis blocks when Redis is out of
    /// reach.
    pub command_timeout_ms: u64,
    /// The key prefix (several tenants on one Redis): 1 to 256 bytes of
    /// UTF-8 without '{' or '}'. NULL: "volt-sem". Keys are
    /// `{<prefix>:<name>}:...`.
    pub key_prefix: *const c_char,
    /// `VOLT_CONNECT_*` bits; default 0.
    pub flags: u64,
    /// For `rediss://` (TLS): a PEM file of the CA certificate(s) to trust
    /// instead of the public roots. NULL: the public roots. Copied during the
    /// call. (Appended in version 2 of the struct, like every field below.)
    pub tls_ca_file: *const c_char,
    /// For `rediss://`: a client certificate and its private key (PEM files),
    /// for servers that require one; both or neither. Copied during the call.
    pub tls_client_cert_file: *const c_char,
    /// The key of `tls_client_cert_file`.
    pub tls_client_key_file: *const c_char,
    /// Every write waits (Redis `WAIT`) until this many replicas acknowledged
    /// it, for up to `min_replicas_timeout_ms`; if fewer did, the call fails
    /// with `VOLT_NOT_REPLICATED` and the session is given up (what it held
    /// goes back). Narrows the window of a failover that loses the last
    /// writes; it is not consensus. Default (0): no waiting.
    pub min_replicas_acked: u64,
    /// The `WAIT` timeout in milliseconds: positive and below a third of the
    /// lease; default (0) 100.
    pub min_replicas_timeout_ms: u64,
}

/// `volt_connect_options.flags`: the URL is one or more seed nodes of a Redis
/// Cluster, separated by commas (`"redis://h1:7000,redis://h2:7001"`).
pub const VOLT_CONNECT_CLUSTER: u64 = 1;

/// Every flag bit this library knows.
const CONNECT_KNOWN_FLAGS: u64 = VOLT_CONNECT_CLUSTER;

/// The size of the first version of the struct (up to `flags`): the smallest
/// `struct_size` accepted. Fields appended later are read only when the
/// caller's `struct_size` covers them (0, their default, otherwise).
const CONNECT_OPTIONS_V1_SIZE: usize =
    std::mem::offset_of!(volt_connect_options, flags) + std::mem::size_of::<u64>();

/// The largest `struct_size` accepted: far above any version of the struct,
/// so that a garbage size is rejected before anything is read past the
/// struct.
const CONNECT_OPTIONS_MAX_SIZE: usize = 4096;

/// Fills `opts` with the defaults: lease 10000 ms, timeouts 5000 ms, key prefix
/// NULL ("volt-sem"), no flags; `struct_size` is set to `struct_size`, which
/// must be `sizeof *opts` (every byte of it is written: fields this library
/// does not know are zeroed, which is their default).
///
/// Returns `VOLT_OK`, or `VOLT_INVALID_ARGUMENT` for NULL or a `struct_size`
/// below the first version's size (48 bytes on 64-bit targets) or above 4096
/// (nothing written).
///
/// # Safety
/// `opts` is NULL or points to `struct_size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn volt_connect_options_init(
    opts: *mut volt_connect_options,
    struct_size: usize,
) -> volt_status {
    ffi_boundary!(VOLT_PANIC, {
        if opts.is_null()
            || !opts.is_aligned()
            || !(CONNECT_OPTIONS_V1_SIZE..=CONNECT_OPTIONS_MAX_SIZE).contains(&struct_size)
        {
            return VOLT_INVALID_ARGUMENT;
        }
        let defaults = volt_connect_options {
            struct_size,
            lease_ms: 10_000,
            connect_timeout_ms: 5_000,
            command_timeout_ms: 5_000,
            key_prefix: ptr::null(),
            flags: 0,
            tls_ca_file: ptr::null(),
            tls_client_cert_file: ptr::null(),
            tls_client_key_file: ptr::null(),
            min_replicas_acked: 0,
            min_replicas_timeout_ms: 100,
        };
        // The caller's struct may be smaller (an older header: only the
        // fields it has) or larger (a newer one: the rest zeroed, their
        // default).
        let n = struct_size.min(std::mem::size_of::<volt_connect_options>());
        // SAFETY: `struct_size` writable bytes (contract); `n <= struct_size`
        // bytes of `defaults` are readable; the two do not overlap.
        unsafe {
            ptr::write_bytes(opts.cast::<u8>(), 0, struct_size);
            ptr::copy_nonoverlapping(
                (&defaults as *const volt_connect_options).cast::<u8>(),
                opts.cast::<u8>(),
                n,
            );
        }
        VOLT_OK
    })
}

/// The Rust options from the C struct (NULL: defaults).
///
/// # Safety
/// `opts` is NULL or points to a `volt_connect_options` of `struct_size`
/// readable bytes whose `key_prefix` is NULL or NUL-terminated.
unsafe fn connect_options(
    opts: *const volt_connect_options,
) -> Result<ConnectOptions, volt_status> {
    let mut options = ConnectOptions::new();
    if opts.is_null() {
        return Ok(options);
    }
    if !opts.is_aligned() {
        return Err(VOLT_INVALID_ARGUMENT);
    }
    // SAFETY: non-NULL and aligned; its first field is readable (contract).
    let size = unsafe { ptr::addr_of!((*opts).struct_size).read() };
    let known = std::mem::size_of::<volt_connect_options>();
    if !(CONNECT_OPTIONS_V1_SIZE..=CONNECT_OPTIONS_MAX_SIZE).contains(&size) {
        return Err(VOLT_INVALID_ARGUMENT);
    }
    if size > known {
        // Options of a newer header: honoured only if left at their defaults.
        // SAFETY: the caller's struct has `size` readable bytes (contract).
        let newer =
            unsafe { std::slice::from_raw_parts(opts.cast::<u8>().add(known), size - known) };
        if newer.iter().any(|&b| b != 0) {
            return Err(noted(
                VOLT_INVALID_OPTION,
                "invalid option: an option of a newer header that this library does not know",
            ));
        }
    }
    // The fields the caller's struct has; those of an older header lacks
    // stay 0, their default.
    let mut o = volt_connect_options {
        struct_size: 0,
        lease_ms: 0,
        connect_timeout_ms: 0,
        command_timeout_ms: 0,
        key_prefix: ptr::null(),
        flags: 0,
        tls_ca_file: ptr::null(),
        tls_client_cert_file: ptr::null(),
        tls_client_key_file: ptr::null(),
        min_replicas_acked: 0,
        min_replicas_timeout_ms: 0,
    };
    // SAFETY: `min(size, known)` bytes readable at `opts` (contract) and
    // writable in `o`; every bit pattern is valid for these integer and
    // pointer fields; no overlap.
    unsafe {
        ptr::copy_nonoverlapping(
            opts.cast::<u8>(),
            (&mut o as *mut volt_connect_options).cast::<u8>(),
            size.min(known),
        )
    };
    if o.flags & !CONNECT_KNOWN_FLAGS != 0 {
        return Err(noted(
            VOLT_INVALID_OPTION,
            "invalid option: unknown flag bits",
        ));
    }
    if o.lease_ms != 0 {
        options = options.lease(Duration::from_millis(o.lease_ms));
    }
    if o.connect_timeout_ms != 0 {
        options = options.connect_timeout(Duration::from_millis(o.connect_timeout_ms));
    }
    if o.command_timeout_ms != 0 {
        options = options.command_timeout(Duration::from_millis(o.command_timeout_ms));
    }
    if !o.key_prefix.is_null() {
        // SAFETY: NUL-terminated (contract); read during this call only.
        let prefix = unsafe { std::ffi::CStr::from_ptr(o.key_prefix) };
        let prefix = prefix
            .to_str()
            .map_err(|_| noted(VOLT_INVALID_PREFIX, "invalid key prefix (not UTF-8)"))?;
        options = options.prefix(prefix);
    }
    // The paths: NUL-terminated or NULL (contract), read during this call only.
    let path = |p: *const c_char| -> Result<Option<std::path::PathBuf>, volt_status> {
        if p.is_null() {
            return Ok(None);
        }
        // SAFETY: as above.
        let s = unsafe { std::ffi::CStr::from_ptr(p) };
        s.to_str().map(|s| Some(s.into())).map_err(|_| {
            noted(
                VOLT_INVALID_OPTION,
                "invalid option: a TLS file path is not UTF-8",
            )
        })
    };
    if let Some(ca) = path(o.tls_ca_file)? {
        options = options.tls_ca_file(ca);
    }
    match (path(o.tls_client_cert_file)?, path(o.tls_client_key_file)?) {
        (Some(cert), Some(key)) => options = options.tls_client_cert(cert, key),
        (None, None) => {}
        _ => {
            return Err(noted(
                VOLT_INVALID_OPTION,
                "invalid option: tls_client_cert_file and tls_client_key_file go together",
            ))
        }
    }
    if o.min_replicas_acked != 0 {
        let timeout = match o.min_replicas_timeout_ms {
            0 => 100,
            t => t,
        };
        options = options.min_replicas_acked(
            usize::try_from(o.min_replicas_acked).unwrap_or(usize::MAX),
            Duration::from_millis(timeout),
        );
    }
    Ok(options.cluster(o.flags & VOLT_CONNECT_CLUSTER != 0))
}

/// The arguments naming a Redis semaphore (`volt_sem_connect`,
/// `volt_sem_delete`): the URL as UTF-8, the name, and the options.
///
/// # Safety
/// `url` is non-NULL and NUL-terminated; `name` is NULL or NUL-terminated;
/// `opts` is NULL or a valid options struct.
unsafe fn redis_target<'a>(
    url: *const c_char,
    name: *const c_char,
    opts: *const volt_connect_options,
) -> Result<(&'a str, &'a str, ConnectOptions), volt_status> {
    // SAFETY: non-NULL and NUL-terminated (contract).
    let Ok(url) = (unsafe { std::ffi::CStr::from_ptr(url) }).to_str() else {
        return Err(noted(VOLT_INVALID_URL, "invalid Redis URL (not UTF-8)"));
    };
    // SAFETY: NULL or NUL-terminated (contract).
    let name = unsafe { name_arg(name) }?;
    // SAFETY: NULL or a valid options struct (contract).
    let options = unsafe { connect_options(opts) }?;
    Ok((url, name, options))
}

/// Connects to the semaphore `name` stored in the Redis at `url`, with
/// `permits` permits in total, creating it if it does not exist, and stores
/// one reference to it in `*out`: an ordinary handle, used and freed like one
/// from `volt_sem_new` (every function works on it). Every client, on every
/// host, that connects to the same Redis, key prefix and name shares the same
/// permits. See "REDIS SEMAPHORES" at the top. Talks to Redis at once: blocks
/// up to the connect timeout (default 5 s) when Redis is out of reach.
///
/// `url`: `redis://[user:password@]host[:port][/db]`, `rediss://...` (TLS),
/// `redis+sentinel://host:port[,host:port]/master[/db]` or `unix:///path`
/// (several comma-separated seed URLs with `VOLT_CONNECT_CLUSTER`); copied
/// during the call, never kept in the handle nor shown in any output.
/// `name`: 1 to `volt_sem_max_redis_name_len()` bytes of UTF-8, without '{'
/// or '}'. `permits`: 1 to `volt_sem_max_redis_permits()`; an existing
/// semaphore must have been created with the same total. `opts`: NULL for the
/// defaults, or a `volt_connect_options` (see there).
///
/// Returns `VOLT_OK`, or (with `*out` set to NULL when `out` is not NULL,
/// and nothing changed in Redis):
/// * `VOLT_INVALID_ARGUMENT`: NULL `url`, `name` or `out`; `permits` 0 or
///   too large; a bad `opts->struct_size`;
/// * `VOLT_INVALID_URL`, `VOLT_INVALID_NAME`, `VOLT_INVALID_PREFIX`,
///   `VOLT_INVALID_OPTION` (checked before any connection is made);
/// * `VOLT_AUTH_FAILED`, `VOLT_CONNECTION_FAILED` (within the connect
///   timeout: one deadline for the whole connect), `VOLT_TLS_FAILED`,
///   `VOLT_REDIS_ERROR`, `VOLT_PROTOCOL_ERROR`;
/// * `VOLT_NO_PERMISSION`: the user may not run a command the library
///   needs (the message names it); `VOLT_READ_ONLY`: the server is a
///   replica;
/// * `VOLT_MISMATCH`: the semaphore exists with another total.
///
/// # Safety
/// `url` and `name` are NULL or NUL-terminated strings; `opts` is NULL or a
/// `volt_connect_options` as described there; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn volt_sem_connect(
    url: *const c_char,
    name: *const c_char,
    permits: usize,
    opts: *const volt_connect_options,
    out: *mut *const volt_sem,
) -> volt_status {
    ffi_boundary!(VOLT_PANIC, {
        if out.is_null() {
            return VOLT_INVALID_ARGUMENT;
        }
        // SAFETY: `out` is non-NULL and, by contract, writable.
        unsafe { out.write(ptr::null()) };
        if url.is_null() || name.is_null() {
            return VOLT_INVALID_ARGUMENT;
        }
        // SAFETY: forwarded caller contract (checked non-NULL above).
        let (url, name, options) = match unsafe { redis_target(url, name, opts) } {
            Ok(target) => target,
            Err(status) => return status,
        };
        match Semaphore::connect(url, name, permits, options) {
            Ok(sem) => {
                // SAFETY: as above.
                unsafe { out.write(Arc::into_raw(Arc::new(volt_sem::new(sem)))) };
                VOLT_OK
            }
            Err(e) => status_of(e),
        }
    })
}

/// Deletes the Redis semaphore `name` (its keys under `opts->prefix`), so
/// that a program deriving names (per tenant, per job) does not leave one in
/// Redis for each. Refused while the semaphore has a live session (a client
/// that holds permits, waits, or is only connected: deleting under it would
/// make that handle fail with `VOLT_STATE_LOST`); sessions whose lease
/// ended (crashed clients) are reclaimed first and do not count. One
/// connection (within the connect timeout) and one script; no session.
/// Without it, once every session ended, only the semaphore's `:meta` hash
/// (a few hundred bytes, no TTL) stays in Redis; everything else is empty or
/// expires within a minute. The next `volt_sem_connect` of the name creates
/// it afresh.
///
/// Returns `VOLT_OK`, or (nothing deleted): `VOLT_INVALID_ARGUMENT` (NULL
/// `url` or `name`, a bad `opts->struct_size`), `VOLT_INVALID_URL`,
/// `VOLT_INVALID_NAME`, `VOLT_INVALID_PREFIX`, `VOLT_INVALID_OPTION`,
/// `VOLT_NOT_FOUND` (no such semaphore), `VOLT_IN_USE` (live sessions),
/// `VOLT_AUTH_FAILED`, `VOLT_CONNECTION_FAILED`, `VOLT_TLS_FAILED`,
/// `VOLT_NO_PERMISSION`, `VOLT_READ_ONLY`, `VOLT_REDIS_ERROR`,
/// `VOLT_PROTOCOL_ERROR`.
///
/// # Safety
/// `url` and `name` are NULL or NUL-terminated strings; `opts` is NULL or a
/// valid `volt_connect_options` (as for `volt_sem_connect`).
#[no_mangle]
pub unsafe extern "C" fn volt_sem_delete(
    url: *const c_char,
    name: *const c_char,
    opts: *const volt_connect_options,
) -> volt_status {
    ffi_boundary!(VOLT_PANIC, {
        if url.is_null() || name.is_null() {
            return VOLT_INVALID_ARGUMENT;
        }
        // SAFETY: forwarded caller contract (checked non-NULL above).
        let (url, name, options) = match unsafe { redis_target(url, name, opts) } {
            Ok(target) => target,
            Err(status) => return status,
        };
        match volt_sem_backend::delete_redis(url, name, options) {
            Ok(()) => VOLT_OK,
            Err(e) => status_of(e),
        }
    })
}

/// Makes SIGTERM and SIGINT end every live Redis session of this process
/// before the signal takes effect: their permits go to the next waiters at
/// once and their queued requests leave the queue, instead of when the lease
/// expires (a process killed by a signal's default action runs no exit
/// handler). Call it once, early in `main` (it is idempotent):
///
///     volt_end_sessions_on_signals();
///
/// The signal then takes the effect it had before the call: by default the
/// process ends by it (its exit status says so, as without this call); a
/// handler the program installed earlier runs afterwards and decides (one
/// shot: after the first SIGTERM or SIGINT, that earlier disposition stays).
/// A handler installed after this call replaces it. The work is done on a
/// library thread (the signal handler itself only writes to a pipe), so it
/// is safe whatever the signal interrupts; it waits at most the command
/// timeout for a command in flight.
///
/// Not needed for a process that returns from `main` or calls `exit()`:
/// live sessions are ended by an `atexit` handler, as by `volt_sem_free` of
/// the last handle. `SIGKILL` cannot be caught: the lease bounds what a
/// killed process keeps. Named (shared-memory) semaphores need nothing: the
/// kernel gives a dead process's permits back.
///
/// Returns `VOLT_OK`, `VOLT_UNSUPPORTED` (not a Unix system) or
/// `VOLT_OS_ERROR` (no pipe, thread or handler could be made; the message
/// says which).
#[no_mangle]
pub extern "C" fn volt_end_sessions_on_signals() -> volt_status {
    ffi_boundary!(VOLT_PANIC, {
        match volt_sem_backend::redis::end_sessions_on_signals() {
            Ok(()) => VOLT_OK,
            Err(e) if e.kind() == std::io::ErrorKind::Unsupported => VOLT_UNSUPPORTED,
            Err(e) => {
                set_last_error(|| format!("volt_end_sessions_on_signals: {e}"));
                VOLT_OS_ERROR
            }
        }
    })
}

/// The longest name `volt_sem_connect` accepts, in bytes (1024).
#[no_mangle]
pub extern "C" fn volt_sem_max_redis_name_len() -> usize {
    ffi_boundary!(0, volt_sem_backend::redis::MAX_NAME_LEN)
}

/// The largest total of a Redis semaphore (2^40: Lua's numbers are doubles).
#[no_mangle]
pub extern "C" fn volt_sem_max_redis_permits() -> usize {
    ffi_boundary!(0, volt_sem_backend::redis::MAX_PERMITS)
}

/// The permit accounting of a Redis semaphore, read in one script (for
/// diagnostics and tests): `available + held + partial == total` always.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct volt_census {
    /// The total number of permits.
    pub total: u64,
    /// Permits free now.
    pub available: u64,
    /// Permits held by live sessions (every client), completed grants included.
    pub held: u64,
    /// Permits collected so far by queued requests (partial grants).
    pub partial: u64,
    /// Requests queued, from every client.
    pub queued: u64,
    /// Live sessions (clients holding or waiting, or connected).
    pub sessions: u64,
    /// The last fencing token issued.
    pub last_token: u64,
    /// Whether the semaphore is closed.
    pub closed: bool,
}

/// Reads the accounting of a Redis semaphore into `*out` (first reaping the
/// sessions whose lease expired). One round trip, up to the command timeout.
///
/// Returns `VOLT_OK`, `VOLT_INVALID_ARGUMENT` (NULL), `VOLT_UNSUPPORTED` (not
/// a Redis semaphore), or a network status (`VOLT_CONNECTION_FAILED`,
/// `VOLT_STATE_LOST`, ...); `*out` is written only on `VOLT_OK`.
///
/// # Safety
/// `sem` is NULL or a live handle; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn volt_sem_census(
    sem: *const volt_sem,
    out: *mut volt_census,
) -> volt_status {
    ffi_boundary!(VOLT_PANIC, {
        // SAFETY: NULL or a live handle (contract).
        let Some(sem) = (unsafe { sem_ref(sem) }) else {
            return VOLT_INVALID_ARGUMENT;
        };
        if sem.forked() {
            return VOLT_FORKED;
        }
        if out.is_null() {
            return VOLT_INVALID_ARGUMENT;
        }
        let Some(redis) = sem.sem.as_redis() else {
            return VOLT_UNSUPPORTED;
        };
        match redis.census() {
            Ok(c) => {
                // SAFETY: non-NULL and writable (contract).
                unsafe {
                    out.write(volt_census {
                        total: c.total,
                        available: c.available,
                        held: c.held,
                        partial: c.partial,
                        queued: c.queued,
                        sessions: c.sessions,
                        last_token: c.last_token,
                        closed: c.closed,
                    })
                };
                VOLT_OK
            }
            Err(e) => status_of(e.into()),
        }
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
    ffi_boundary!(0, {
        // SAFETY: NULL or a live handle (contract).
        unsafe { sem_ref(sem) }
            .and_then(|sem| sem.sem.as_redis())
            .map_or(0, |r| r.held_permits())
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
    ffi_boundary!(ptr::null(), {
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
    ffi_boundary!((), {
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
/// `VOLT_CORRUPT` or `VOLT_OS_ERROR`. On a Redis semaphore (one round trip, up
/// to the command timeout; `volt_sem_try_acquire_fenced` also returns the
/// fencing token): `VOLT_CONNECTION_FAILED`, `VOLT_REDIS_ERROR`,
/// `VOLT_PROTOCOL_ERROR`, `VOLT_STATE_LOST`.
///
/// # Safety
/// `sem` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn volt_sem_try_acquire(sem: *const volt_sem, n: usize) -> volt_status {
    ffi_boundary!(VOLT_PANIC, {
        // SAFETY: NULL or a live handle (contract).
        let Some(sem) = (unsafe { sem_ref(sem) }) else {
            return VOLT_INVALID_ARGUMENT;
        };
        if sem.forked() {
            return VOLT_FORKED;
        }
        if !valid_count(n) {
            return VOLT_INVALID_ARGUMENT;
        }
        // The C caller owns the permits on VOLT_OK.
        status(sem.sem.try_acquire(n))
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
/// On a Redis semaphore (one round trip, up to the command timeout; the
/// waiters it completes are called back on their own handles' agent threads,
/// on every host, except those queued through this same handle, called back
/// on this thread before it returns): `VOLT_NOT_HELD` when this handle's session holds fewer than `n`;
/// `VOLT_LEASE_EXPIRED` when the permits were lost with an expired session
/// (nothing released: they were reclaimed already); `VOLT_CONNECTION_FAILED`,
/// `VOLT_REDIS_ERROR`, `VOLT_PROTOCOL_ERROR`, `VOLT_STATE_LOST`.
///
/// # Safety
/// `sem` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn volt_sem_release(sem: *const volt_sem, n: usize) -> volt_status {
    ffi_boundary!(VOLT_PANIC, {
        // SAFETY: NULL or a live handle (contract).
        let Some(sem) = (unsafe { sem_ref(sem) }) else {
            return VOLT_INVALID_ARGUMENT;
        };
        if sem.forked() {
            return VOLT_FORKED;
        }
        if !valid_count(n) {
            return VOLT_INVALID_ARGUMENT;
        }
        status(sem.sem.release(n))
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
    ffi_boundary!(0, {
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
    ffi_boundary!(VOLT_PANIC, {
        // SAFETY: NULL or a live handle (contract).
        let Some(sem) = (unsafe { sem_ref(sem) }) else {
            return VOLT_INVALID_ARGUMENT;
        };
        if sem.forked() {
            return VOLT_FORKED;
        }
        status(sem.sem.close())
    })
}

/// Whether `volt_sem_close` was called (false for NULL).
///
/// # Safety
/// `sem` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn volt_sem_is_closed(sem: *const volt_sem) -> bool {
    ffi_boundary!(false, {
        // SAFETY: NULL or a live handle (contract).
        unsafe { sem_ref(sem) }.is_some_and(|sem| sem.sem.is_closed())
    })
}

/// The largest permit count a semaphore holds and the largest single request.
#[no_mangle]
pub extern "C" fn volt_max_permits() -> usize {
    ffi_boundary!(0, Semaphore::MAX_PERMITS)
}

/// `sizeof(volt_waiter)`, for bindings that allocate waiters dynamically.
#[no_mangle]
pub extern "C" fn volt_waiter_size() -> usize {
    ffi_boundary!(0, std::mem::size_of::<volt_waiter>())
}

/// `alignof(volt_waiter)`, for bindings that allocate waiters dynamically.
#[no_mangle]
pub extern "C" fn volt_waiter_align() -> usize {
    ffi_boundary!(0, std::mem::align_of::<volt_waiter>())
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
    ffi_boundary!(VOLT_PANIC, {
        if waiter.is_null() || !waiter.is_aligned() {
            return VOLT_INVALID_ARGUMENT;
        }
        let slot = Slot {
            waiter: Waiter::new(),
            magic: AtomicU32::new(MAGIC),
            busy: AtomicBool::new(false),
            wake: Cell::new(None),
            ctx: Cell::new(ptr::null_mut()),
            claim: AtomicU8::new(CLAIM_FREE),
            sem: Cell::new(ptr::null()),
            ending: AtomicBool::new(false),
        };
        // SAFETY: non-NULL, aligned, and `VOLT_WAITER_SIZE` bytes large enough for a
        // `Slot` (checked at compile time) and writable (contract). Not a busy
        // waiter (contract), so the semaphore does not reference it. `write` does
        // not read or drop the old content: an idle slot owns nothing.
        unsafe { (waiter as *mut Slot).write(slot) };
        VOLT_OK
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
    ffi_boundary!(false, {
        // SAFETY: NULL, zeroed or initialised waiter memory (contract); only read.
        unsafe { slot_ref(waiter.cast_mut()) }.is_some_and(|slot| slot.busy.load(Ordering::Acquire))
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
/// * On a Redis semaphore (queueing is one round trip, up to the command
///   timeout): `VOLT_CONNECTION_FAILED`, `VOLT_REDIS_ERROR`,
///   `VOLT_PROTOCOL_ERROR`, `VOLT_STATE_LOST`. Its `wake(ctx)` runs on the
///   handle's agent thread (or on a thread whose `volt_sem_release` through
///   this handle completed it, or on the thread that found the session lost):
///   when the grant is complete, the semaphore closed, or the session lost
///   (then `volt_sem_cancel` returns `VOLT_LEASE_EXPIRED` or
///   `VOLT_STATE_LOST`). After `VOLT_OK` here or from `volt_sem_cancel`,
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
    ffi_boundary!(VOLT_PANIC, {
        // SAFETY: NULL or live handle / waiter memory (contract).
        let (Some(handle), Some(slot)) = (unsafe { sem_ref(sem) }, unsafe { slot_ref(waiter) })
        else {
            return VOLT_INVALID_ARGUMENT;
        };
        if handle.forked() {
            return VOLT_FORKED;
        }
        if wake.is_none() || !valid_count(n) {
            return VOLT_INVALID_ARGUMENT;
        }
        // Only the owner sets `busy`, so this check-then-set is not a race unless
        // the caller breaks the one-owner rule.
        if slot.busy.load(Ordering::Acquire) || slot.waiter.state() != WaiterState::Idle {
            return VOLT_INVALID_ARGUMENT;
        }
        slot.wake.set(wake);
        slot.ctx.set(ctx);
        // The waiter's own reference, taken before it can be queued.
        // SAFETY: `sem` is a live handle (contract).
        unsafe { Arc::increment_strong_count(sem) };
        slot.sem.set(sem);
        slot.claim.store(CLAIM_FREE, Ordering::Relaxed);
        slot.busy.store(true, Ordering::Relaxed);
        let ctx = slot as *const Slot as *mut c_void;
        // SAFETY: the waiter is idle (checked above), and the C contract keeps it
        // valid and unmoved, with `ctx` (the slot itself) valid for the
        // trampoline, until `volt_sem_cancel` returned.
        let result = unsafe { handle.sem.acquire_raw(pinned(slot), n, trampoline, ctx) };
        let status = match result {
            Ok(RawAcquire::Pending) => return VOLT_PENDING,
            Ok(RawAcquire::Ready) => VOLT_OK,
            Err(e) => status_of(e),
        };
        // Not queued: undo the bookkeeping.
        slot.busy.store(false, Ordering::Relaxed);
        slot.sem.set(ptr::null());
        // SAFETY: the reference taken above; the caller still holds `sem`.
        unsafe { Arc::decrement_strong_count(sem) };
        status
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
    ffi_boundary!(VOLT_PANIC, {
        // SAFETY: NULL or waiter memory (contract).
        let Some(slot) = (unsafe { slot_ref(waiter) }) else {
            return VOLT_INVALID_ARGUMENT;
        };
        match slot.waiter.state() {
            // A request the parent of this forked child queued: closed here
            // (header, FORK), even before a call that takes the semaphore's
            // lock has purged it.
            WaiterState::Waiting if slot.waiter.queued_before_fork() => VOLT_CLOSED,
            WaiterState::Waiting => VOLT_PENDING,
            WaiterState::Granted => VOLT_OK,
            WaiterState::Closed => VOLT_CLOSED,
            WaiterState::Idle => VOLT_IDLE,
        }
    })
}

/// Ends a PENDING acquire: removes the waiter if it is still queued, or collects
/// its outcome. `sem` must be a handle to the semaphore the waiter was queued on.
/// If `returned` is not NULL, `*returned` is set to the partial grant handed back
/// (0 unless the result is `VOLT_CANCELLED`).
///
/// Returns
/// * `VOLT_OK`: the full grant had arrived: the caller owns the `n` permits and
///   must release them.
/// * `VOLT_CANCELLED`: removed while queued; its partial grant was handed on.
/// * `VOLT_CLOSED`: the semaphore was closed while it waited; it holds nothing.
/// * Redis: `VOLT_LEASE_EXPIRED` or `VOLT_STATE_LOST`: the session was lost
///   while it waited; it holds nothing. Removing a queued Redis waiter is one
///   round trip; if Redis cannot be reached, the waiter is removed locally
///   all the same and the handle's session given up (so that nothing can be
///   granted to a request nobody waits for): `VOLT_CANCELLED` (0 returned)
///   still means it holds nothing, and the session's other holders and
///   waiters learn `VOLT_LEASE_EXPIRED`.
/// * `VOLT_IDLE`: nothing to end: not busy, or the outcome was already collected
///   by a call from inside its wake callback (that call's `VOLT_OK` transferred
///   the permits: this `VOLT_IDLE` means the caller owns nothing more, so it must
///   not release them a second time), or a call on this thread is ending this
///   waiter right now (a callback that the owner's cancel of it completed, by
///   handing its partial grant on, cancels it again): that call returns the
///   outcome.
/// * `VOLT_INVALID_ARGUMENT`: NULL, uninitialised waiter, or `sem` is not the
///   semaphore the waiter is queued on (nothing changed).
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
    // SAFETY: forwarded caller contract.
    ffi_boundary!(VOLT_PANIC, unsafe {
        end_acquire(sem, waiter, returned, true)
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
/// `volt_sem_cancel` (nothing to wait for there). On a shared or Redis
/// semaphore, whose callbacks run on one thread per process (name, handle), a
/// sibling's callback still to run on it makes this return `VOLT_PENDING`.
///
/// # Safety
/// As for `volt_sem_cancel`.
#[no_mangle]
pub unsafe extern "C" fn volt_sem_try_cancel(
    sem: *const volt_sem,
    waiter: *mut volt_waiter,
    returned: *mut usize,
) -> volt_status {
    // SAFETY: forwarded caller contract.
    ffi_boundary!(VOLT_PANIC, unsafe {
        end_acquire(sem, waiter, returned, false)
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
) -> volt_status {
    if !returned.is_null() {
        // SAFETY: non-NULL and writable (contract).
        unsafe { returned.write(0) };
    }
    // SAFETY: NULL or live handle / waiter memory (contract).
    let (Some(handle), Some(slot)) = (unsafe { sem_ref(sem) }, unsafe { slot_ref(waiter) }) else {
        return VOLT_INVALID_ARGUMENT;
    };
    if handle.forked() {
        return VOLT_FORKED;
    }
    // Inside this waiter's own callback (the core tracks the one running now).
    let inside = slot.waiter.in_own_callback();
    if !inside && !slot.busy.load(Ordering::Acquire) {
        return VOLT_IDLE;
    }
    if !ptr::eq(slot.sem.get(), sem) {
        return VOLT_INVALID_ARGUMENT;
    }
    if !inside && slot.ending.load(Ordering::Relaxed) {
        // Nested inside the owner's own call ending this waiter (a callback it
        // completed, on this thread): that call has the outcome.
        return VOLT_IDLE;
    }
    if !wait && !inside {
        // Only the owner writes `claim` besides the trampoline, and the owner is
        // this thread (one-owner rule): no other claim can appear but RUNNING.
        match slot.claim.load(Ordering::Acquire) {
            // The callback is running, or returned (then `finish_raw` below only
            // waits for the core to mark the waiter done, a few instructions).
            CLAIM_RUNNING => return VOLT_PENDING,
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
                    return VOLT_PENDING;
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
                    return VOLT_PENDING;
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
        let own = slot.sem.replace(ptr::null());
        slot.busy.store(false, Ordering::Release);
        // SAFETY: the reference taken by `volt_sem_acquire`; the caller still
        // holds `sem`, so this never destroys the semaphore under `handle`.
        unsafe { Arc::decrement_strong_count(own) };
    }
    match finish {
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
    }
}

/// Acquires `n` permits, blocking (parked, no busy wait) the calling thread until
/// they are granted in FIFO order, the semaphore is closed, or `timeout_ns`
/// nanoseconds passed; a negative timeout waits for ever. Do not call it on an
/// event-loop thread.
///
/// `timeout_ns` is relative to the call (a duration, not a deadline), measured on
/// a monotonic clock (`CLOCK_MONOTONIC` on Linux): changes to the wall clock do
/// not shorten or lengthen it. A timeout too large for the clock waits for ever.
/// On a shared semaphore the timeout also bounds the waits for the segment's
/// lock: a process stopped inside it (`SIGSTOP`, a debugger) does not make a
/// timed acquire overrun its timeout; if the request is still queued then, its
/// removal from the queue is left to the process's doorbell thread (it holds
/// no permit meanwhile: a grant that comes first is given back at once).
///
/// Returns `VOLT_OK` (the caller owns the permits), `VOLT_TIMED_OUT` (any partial
/// grant was handed on), `VOLT_CLOSED` or `VOLT_INVALID_ARGUMENT` (NULL, `n == 0`,
/// `n > volt_max_permits()`, or above a shared semaphore's total); on a shared
/// semaphore also `VOLT_QUEUE_FULL`, `VOLT_IN_CALLBACK` (called inside one of its
/// wake callbacks), `VOLT_FORKED`, `VOLT_CORRUPT`, `VOLT_OS_ERROR`. On a Redis
/// semaphore (queueing is one round trip, then the wait; the grant arrives
/// without polling; `volt_sem_acquire_blocking_fenced` also returns the fencing
/// token): `VOLT_IN_CALLBACK` inside one of its wake callbacks,
/// `VOLT_LEASE_EXPIRED` and `VOLT_STATE_LOST` (the session was lost while
/// waiting), `VOLT_CONNECTION_FAILED`, `VOLT_REDIS_ERROR`,
/// `VOLT_PROTOCOL_ERROR`.
///
/// # Safety
/// `sem` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn volt_sem_acquire_blocking(
    sem: *const volt_sem,
    n: usize,
    timeout_ns: i64,
) -> volt_status {
    ffi_boundary!(VOLT_PANIC, {
        // SAFETY: NULL or a live handle (contract).
        let Some(sem) = (unsafe { sem_ref(sem) }) else {
            return VOLT_INVALID_ARGUMENT;
        };
        if sem.forked() {
            return VOLT_FORKED;
        }
        if !valid_count(n) {
            return VOLT_INVALID_ARGUMENT;
        }
        // The C caller owns the permits on VOLT_OK.
        if timeout_ns < 0 {
            return status(sem.sem.acquire_blocking(n));
        }
        status(
            sem.sem
                .acquire_timeout(n, Duration::from_nanos(timeout_ns as u64)),
        )
    })
}

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
) -> Result<&'a volt_sem, volt_status> {
    if grant.is_null() {
        return Err(VOLT_INVALID_ARGUMENT);
    }
    // SAFETY: non-NULL and writable (contract).
    unsafe { grant.write(volt_grant::default()) };
    // SAFETY: NULL or a live handle (contract).
    let sem = unsafe { sem_ref(sem) }.ok_or(VOLT_INVALID_ARGUMENT)?;
    if sem.forked() {
        return Err(VOLT_FORKED);
    }
    if !valid_count(n) {
        return Err(VOLT_INVALID_ARGUMENT);
    }
    Ok(sem)
}

/// `volt_sem_try_acquire` that also returns the grant's fencing token and
/// session in `*grant` (zeroed unless `VOLT_OK`). On a Redis semaphore:
/// one round trip, up to the command timeout.
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
    ffi_boundary!(VOLT_PANIC, {
        // SAFETY: forwarded contract.
        let sem = match unsafe { fenced_checks(sem, n, grant) } {
            Ok(sem) => sem,
            Err(status) => return status,
        };
        // SAFETY: as above.
        unsafe { fenced(sem.sem.try_acquire(n), grant) }
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
    ffi_boundary!(VOLT_PANIC, {
        // SAFETY: forwarded contract.
        let sem = match unsafe { fenced_checks(sem, n, grant) } {
            Ok(sem) => sem,
            Err(status) => return status,
        };
        let r = if timeout_ns < 0 {
            sem.sem.acquire_blocking(n)
        } else {
            sem.sem
                .acquire_timeout(n, Duration::from_nanos(timeout_ns as u64))
        };
        // SAFETY: as above.
        unsafe { fenced(r, grant) }
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
    ffi_boundary!(0, {
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
    ffi_boundary!(0, {
        // SAFETY: as for `volt_waiter_token`.
        unsafe { slot_ref(waiter.cast_mut()) }.map_or(0, |slot| slot.waiter.session())
    })
}

/// A lease watch from `volt_sem_watch_lease`. Opaque; freed with
/// `volt_lease_watch_free`.
pub struct volt_lease_watch {
    watch: Arc<lease::Watch>,
    hub: Arc<lease::Hub>,
    /// Keeps the handle (and so its session and connections) alive.
    _handle: Arc<volt_sem>,
}

/// The lease-loss callback: `lost(ctx, why)`, `why` being
/// `VOLT_LEASE_EXPIRED` or `VOLT_STATE_LOST`. It must return normally (as a
/// wake callback: a C++ exception thrown out of it aborts the process).
pub type volt_lease_lost_fn =
    Option<unsafe extern "C-unwind" fn(ctx: *mut c_void, why: volt_status)>;

/// Calls `lost(ctx, why)` once when the Redis session `session` of this
/// handle is lost (its lease expired, or Redis lost the state): the moment a
/// holder's permits stop being its own. `session` comes from
/// `volt_grant.session` or `volt_waiter_session()` of the grant to watch.
///
/// The callback runs on the library's lease thread ("volt-sem-lease", one per
/// process, started by the first watch), under no lock of the library: it may
/// call any function, including `volt_sem_release` (which then returns
/// `VOLT_LEASE_EXPIRED`) and `volt_lease_watch_free` on its own watch. Keep it
/// short: the callbacks of every watch of the process run on that thread, one
/// after another. No callback runs for a session that is never lost.
///
/// Returns `VOLT_OK` (`*out` is the watch: free it with `volt_lease_watch_free`,
/// after the callback or instead of it), `VOLT_LEASE_EXPIRED` or
/// `VOLT_STATE_LOST` (the session is already lost, or is not this handle's
/// current one: no callback; `*out` NULL), `VOLT_INVALID_ARGUMENT` (NULL `sem`,
/// `lost` or `out`; `session` 0), `VOLT_UNSUPPORTED` (not a Redis semaphore:
/// its grants cannot be lost), or `VOLT_OS_ERROR` (the lease thread could not
/// start). The watch keeps the handle's connections up until it is freed.
///
/// # Safety
/// `sem` is NULL or a live handle; `out` is NULL or writable; `ctx` stays
/// valid for `lost` until `volt_lease_watch_free` returned.
#[no_mangle]
pub unsafe extern "C" fn volt_sem_watch_lease(
    sem: *const volt_sem,
    session: u64,
    lost: volt_lease_lost_fn,
    ctx: *mut c_void,
    out: *mut *mut volt_lease_watch,
) -> volt_status {
    ffi_boundary!(VOLT_PANIC, {
        if out.is_null() {
            return VOLT_INVALID_ARGUMENT;
        }
        // SAFETY: non-NULL and writable (contract).
        unsafe { out.write(ptr::null_mut()) };
        // SAFETY: NULL or a live handle (contract).
        let (Some(sem), Some(lost)) = (unsafe { sem_ref(sem) }, lost) else {
            return VOLT_INVALID_ARGUMENT;
        };
        if sem.forked() {
            return VOLT_FORKED;
        }
        if session == 0 {
            return VOLT_INVALID_ARGUMENT;
        }
        if sem.sem.as_redis().is_none() {
            return VOLT_UNSUPPORTED;
        }
        // An owned reference for the watch.
        // SAFETY: `sem` is a live handle from `Arc::into_raw` (contract).
        let handle = unsafe {
            Arc::increment_strong_count(sem);
            Arc::from_raw(sem as *const volt_sem)
        };
        match lease::watch(&handle, session, lost, ctx) {
            Ok((hub, watch)) => {
                let w = Box::into_raw(Box::new(volt_lease_watch {
                    watch,
                    hub,
                    _handle: handle,
                }));
                // SAFETY: as above.
                unsafe { out.write(w) };
                VOLT_OK
            }
            Err(status) => status,
        }
    })
}

/// Ends a lease watch and frees it. When it returns, the callback has returned
/// or will never be called, and `ctx` may be freed (from inside the watch's own
/// callback it returns at once; the callback's return ends it). NULL is a
/// no-op. Never call it while holding a lock the callback takes: it waits for
/// a running callback.
///
/// # Safety
/// `watch` is NULL or a watch from `volt_sem_watch_lease` not freed yet.
#[no_mangle]
pub unsafe extern "C" fn volt_lease_watch_free(watch: *mut volt_lease_watch) {
    ffi_boundary!((), {
        if watch.is_null() {
            return;
        }
        // SAFETY: from `Box::into_raw` in `volt_sem_watch_lease`, given up here.
        let watch = unsafe { Box::from_raw(watch) };
        watch.hub.cancel(&watch.watch);
        // Dropped last: it may be the last reference to the handle.
    })
}

/// The library version ("MAJOR.MINOR.PATCH"), a static NUL-terminated string.
#[no_mangle]
pub extern "C" fn volt_sem_version() -> *const c_char {
    ffi_boundary!(
        ptr::null(),
        concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
    )
}

/// A static, NUL-terminated name for a status ("VOLT_OK", ...), or "unknown".
#[no_mangle]
pub extern "C" fn volt_status_str(status: i32) -> *const c_char {
    ffi_boundary!(c"unknown".as_ptr(), status_name(status).as_ptr().cast())
}

fn status_name(status: i32) -> &'static str {
    let name: &'static str = match status {
        0 => "VOLT_OK\0",
        1 => "VOLT_PENDING\0",
        2 => "VOLT_WOULD_BLOCK\0",
        3 => "VOLT_CLOSED\0",
        4 => "VOLT_TIMED_OUT\0",
        5 => "VOLT_CANCELLED\0",
        6 => "VOLT_IDLE\0",
        7 => "VOLT_INVALID_ARGUMENT\0",
        8 => "VOLT_OVERFLOW\0",
        9 => "VOLT_PANIC\0",
        10 => "VOLT_INVALID_NAME\0",
        11 => "VOLT_NOT_FOUND\0",
        12 => "VOLT_EXISTS\0",
        13 => "VOLT_PERMISSION\0",
        14 => "VOLT_MISMATCH\0",
        15 => "VOLT_VERSION_MISMATCH\0",
        16 => "VOLT_NOT_A_SEGMENT\0",
        17 => "VOLT_QUEUE_FULL\0",
        18 => "VOLT_PROCESS_TABLE_FULL\0",
        19 => "VOLT_NOT_HELD\0",
        20 => "VOLT_IN_CALLBACK\0",
        21 => "VOLT_FORKED\0",
        22 => "VOLT_UNSUPPORTED\0",
        23 => "VOLT_CORRUPT\0",
        24 => "VOLT_OS_ERROR\0",
        25 => "VOLT_INVALID_URL\0",
        26 => "VOLT_INVALID_PREFIX\0",
        27 => "VOLT_INVALID_OPTION\0",
        28 => "VOLT_AUTH_FAILED\0",
        29 => "VOLT_CONNECTION_FAILED\0",
        30 => "VOLT_REDIS_ERROR\0",
        31 => "VOLT_PROTOCOL_ERROR\0",
        32 => "VOLT_LEASE_EXPIRED\0",
        33 => "VOLT_STATE_LOST\0",
        34 => "VOLT_TLS_FAILED\0",
        35 => "VOLT_NOT_REPLICATED\0",
        36 => "VOLT_NO_PERMISSION\0",
        37 => "VOLT_READ_ONLY\0",
        38 => "VOLT_IN_USE\0",
        _ => "unknown\0",
    };
    name
}

mod lease;

#[cfg(test)]
mod tests;
