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
//!   in-process one (`volt_sem_new`) or the named one shared by the processes
//!   of the machine (`volt_sem_open`). Every function works on both through
//!   that one type; the waiter holds a backend waiter, which queues on either.
//!   A shared semaphore's errors get their own statuses (`VOLT_NOT_FOUND`,
//!   `VOLT_MISMATCH`, ...), mapped in one place (`status_of`).

#![allow(non_camel_case_types)]

use std::cell::Cell;
use std::ffi::{c_char, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use volt_core::{Finish, RawAcquire, WaiterState};
use volt_sem_backend::{Error, OpenOptions, Semaphore, Waiter};

/// Runs `$body` (a closure body) and turns a panic into `$default`.
///
/// No panic may cross the C boundary: unwinding out of an `extern "C"` function
/// aborts the process, so each entry point catches it and reports it as a value.
macro_rules! ffi_boundary {
    ($default:expr, $body:expr) => {
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
    /// No shared semaphore has this name (`VOLT_OPEN_ATTACH_ONLY`, unlink).
    VOLT_NOT_FOUND = 11,
    /// `VOLT_OPEN_CREATE_ONLY`: a shared semaphore with this name exists.
    VOLT_EXISTS = 12,
    /// The OS refused access to the shared segment (its mode or owner).
    VOLT_PERMISSION = 13,
    /// The name exists with another total of permits; nothing was changed.
    VOLT_MISMATCH = 14,
    /// The segment was made by another layout version of the library.
    VOLT_VERSION_MISMATCH = 15,
    /// The file under the name is not a volt-sem segment (foreign or truncated).
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
    /// A shared handle opened before `fork()`, used in the child: open the
    /// name again in the child.
    VOLT_FORKED = 21,
    /// Named shared semaphores are not supported on this platform (Linux only).
    VOLT_UNSUPPORTED = 22,
    /// The shared segment's lock is not recoverable.
    VOLT_CORRUPT = 23,
    /// Another OS error from the shared segment (`errno` is not preserved).
    VOLT_OS_ERROR = 24,
}

use volt_status::*;

/// A semaphore handle. Opaque; always used through a pointer obtained from
/// `volt_sem_new`, `volt_sem_open` or `volt_sem_clone`, and given back with
/// `volt_sem_free`.
pub struct volt_sem {
    sem: Semaphore,
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
pub const VOLT_WAITER_SIZE: usize = 256;
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
    _opaque: [u64; 32],
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
        // Os, and any later variant of the non_exhaustive error.
        _ => VOLT_OS_ERROR,
    }
}

/// `Ok` as `VOLT_OK`, an error as its status.
fn status(r: Result<(), Error>) -> volt_status {
    r.map_or_else(status_of, |()| VOLT_OK)
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
            Some(sem) => (VOLT_OK, Arc::into_raw(Arc::new(volt_sem { sem }))),
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
/// (mode 0666; subject to the process umask, like any created file).
pub const VOLT_OPEN_SHARE_ALL: u32 = 0o666 << VOLT_OPEN_MODE_SHIFT;

/// Every flag bit `volt_sem_open` knows; any other is `VOLT_INVALID_ARGUMENT`.
const OPEN_KNOWN_FLAGS: u32 =
    VOLT_OPEN_CREATE_ONLY | VOLT_OPEN_ATTACH_ONLY | (0o777 << VOLT_OPEN_MODE_SHIFT);

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
    };
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
/// owner always keeps read and write).
///
/// Returns `VOLT_OK`, or (with `*out` set to NULL when `out` is not NULL, and
/// nothing changed):
/// * `VOLT_INVALID_ARGUMENT`: NULL `name` or `out`, `permits` 0 or too large,
///   unknown flag bits, or both CREATE_ONLY and ATTACH_ONLY;
/// * `VOLT_INVALID_NAME`, `VOLT_NOT_FOUND` (ATTACH_ONLY), `VOLT_EXISTS`
///   (CREATE_ONLY), `VOLT_PERMISSION`, `VOLT_MISMATCH` (another total),
///   `VOLT_VERSION_MISMATCH`, `VOLT_NOT_A_SEGMENT` (a foreign or truncated file),
///   `VOLT_PROCESS_TABLE_FULL`, `VOLT_UNSUPPORTED` (not Linux), `VOLT_OS_ERROR`.
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
                unsafe { out.write(Arc::into_raw(Arc::new(volt_sem { sem }))) };
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

/// The fixed total of a shared semaphore (from `volt_sem_open`); 0 for a local
/// one (its releases may add permits: it has no fixed total) and for NULL.
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
/// # Safety
/// `sem` is NULL or a live handle, not used again by this caller.
#[no_mangle]
pub unsafe extern "C" fn volt_sem_free(sem: *const volt_sem) {
    ffi_boundary!((), {
        if !sem.is_null() {
            // SAFETY: `sem` is a live reference from `Arc::into_raw`; the caller
            // gives it up here.
            drop(unsafe { Arc::from_raw(sem) });
        }
    })
}

/// Takes `n` permits if they are available now and nobody is queued (FIFO: no
/// barging). Never blocks.
///
/// Returns `VOLT_OK`, `VOLT_WOULD_BLOCK`, `VOLT_CLOSED` or
/// `VOLT_INVALID_ARGUMENT` (NULL, `n == 0`, `n > volt_max_permits()`, or above
/// a shared semaphore's total); on a shared semaphore also `VOLT_FORKED`,
/// `VOLT_CORRUPT` or `VOLT_OS_ERROR`.
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
        if !valid_count(n) {
            return VOLT_INVALID_ARGUMENT;
        }
        status(sem.sem.release(n))
    })
}

/// Permits available right now (0 while anyone is queued, and for NULL).
///
/// # Safety
/// `sem` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn volt_sem_available_permits(sem: *const volt_sem) -> usize {
    ffi_boundary!(0, {
        // SAFETY: NULL or a live handle (contract).
        unsafe { sem_ref(sem) }.map_or(0, |sem| sem.sem.available_permits())
    })
}

/// Closes the semaphore: every queued waiter is woken (its status becomes
/// `VOLT_CLOSED`, on this thread, before this returns) and later acquires fail
/// with `VOLT_CLOSED`. Held permits can still be released. Idempotent.
/// A shared semaphore is closed for every process: their waiters' callbacks run
/// on their doorbell threads, shortly after this returns.
///
/// Returns `VOLT_OK` or `VOLT_INVALID_ARGUMENT` (NULL); on a shared semaphore
/// also `VOLT_FORKED`, `VOLT_CORRUPT` or `VOLT_OS_ERROR`.
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
/// waiter's memory is free.
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
/// * `VOLT_IDLE`: nothing to end: not busy, or the outcome was already collected
///   by a call from inside its wake callback (that call's `VOLT_OK` transferred
///   the permits: this `VOLT_IDLE` means the caller owns nothing more, so it must
///   not release them a second time).
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
/// Inside the waiter's own callback it is the same as `volt_sem_cancel`.
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
    // Inside this waiter's own callback (the core tracks the one running now).
    let inside = slot.waiter.in_own_callback();
    if !inside && !slot.busy.load(Ordering::Acquire) {
        return VOLT_IDLE;
    }
    if !ptr::eq(slot.sem.get(), sem) {
        return VOLT_INVALID_ARGUMENT;
    }
    if !wait && !inside {
        // Only the owner writes `claim` besides the trampoline, and the owner is
        // this thread (one-owner rule): no other claim can appear but RUNNING.
        match slot.claim.load(Ordering::Acquire) {
            // The callback is running, or returned (then `finish_raw` below only
            // waits for the core to mark the waiter done, a few instructions).
            CLAIM_RUNNING => return VOLT_PENDING,
            CLAIM_RETURNED => {}
            _ => {
                if slot.waiter.state() != WaiterState::Waiting {
                    // Unlinked by a notifier whose trampoline has not started: the
                    // callback will be called; leave the outcome to it.
                    return VOLT_PENDING;
                }
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
    // SAFETY: the waiter is busy on exactly this semaphore (checked above).
    let finish = unsafe { handle.sem.finish_raw(pinned(slot)) };
    if !inside {
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
///
/// Returns `VOLT_OK` (the caller owns the permits), `VOLT_TIMED_OUT` (any partial
/// grant was handed on), `VOLT_CLOSED` or `VOLT_INVALID_ARGUMENT` (NULL, `n == 0`,
/// `n > volt_max_permits()`, or above a shared semaphore's total); on a shared
/// semaphore also `VOLT_QUEUE_FULL`, `VOLT_IN_CALLBACK` (called inside one of its
/// wake callbacks), `VOLT_FORKED`, `VOLT_CORRUPT`, `VOLT_OS_ERROR`.
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
        _ => "unknown\0",
    };
    name
}

#[cfg(test)]
mod tests;
