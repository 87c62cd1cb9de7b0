//! The panic boundary and the argument checks every entry point shares.
//!
//! Every `extern "C"` function of this crate runs its body through
//! [`ffi_call`] (or [`ffi_status`]), the one place that catches a panic: no
//! panic may cross the C boundary, because unwinding out of an `extern "C"`
//! function aborts the process. The argument checks (NULL, a permit count,
//! a label, a versioned options struct) are written here once and used with
//! `?` inside [`ffi_status`] bodies; the handle's own check (NULL, a Redis
//! handle inherited through `fork()`) is with its type, `semaphore::handle`.

use std::ffi::c_char;
use std::panic::{catch_unwind, AssertUnwindSafe};

use volt_sem_backend::Semaphore;

use crate::last_error::{forget_last_error, noted, refuse, Refusal};
use crate::status_codes::volt_status::{self, *};

/// The status a failed check returns: `Err(status)` ends an [`ffi_status`]
/// body with that status, through `?`. A check that refuses an argument
/// describes it ([`refuse`]); the entry point adds its name.
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

/// [`ffi_call`] for an entry point that returns a status:
/// `ffi_status!("volt_sem_acquire", || body)`. A panic is `VOLT_PANIC`, a
/// failed check (`Err`) its status, and `Ok` the outcome. The first argument
/// is the entry point's name, for the message of a refused argument
/// ("volt_sem_acquire: `wake` is NULL"). A macro, so that the name is a
/// constant in the `Err` arm rather than a value the body's closure
/// captures: the success path pays nothing for it.
macro_rules! ffi_status {
    ($call:expr, $body:expr) => {
        $crate::boundary::ffi_call(
            $crate::status_codes::volt_status::VOLT_PANIC,
            || match ($body)() {
                Ok(status) => status,
                Err(status) => $crate::last_error::name_the_call($call, status),
            },
        )
    };
}
pub(crate) use ffi_status;

/// A permit count, the argument `n`: 1..=`volt_max_permits()`, else
/// `VOLT_INVALID_ARGUMENT`.
pub(crate) fn count(n: usize) -> Checked<()> {
    if n != 0 && n <= Semaphore::MAX_PERMITS {
        Ok(())
    } else {
        Err(refuse(
            VOLT_INVALID_ARGUMENT,
            Refusal::Count { arg: "n", n },
        ))
    }
}

/// Checks that `ptr`, the argument named `arg`, is not NULL:
/// `VOLT_INVALID_ARGUMENT` otherwise.
pub(crate) fn non_null<T>(ptr: *const T, arg: &'static str) -> Checked<()> {
    if ptr.is_null() {
        Err(refuse(VOLT_INVALID_ARGUMENT, Refusal::Null(arg)))
    } else {
        Ok(())
    }
}

/// `Err(VOLT_INVALID_ARGUMENT)`, refusing an argument for the reason `text`
/// states (it names the argument).
#[cold]
pub(crate) fn invalid<T>(text: &'static str) -> Checked<T> {
    Err(refuse(VOLT_INVALID_ARGUMENT, Refusal::Text(text)))
}

/// A versioned struct's `struct_size` (named `arg`) in
/// `min..=OPTIONS_MAX_SIZE`, else `VOLT_INVALID_ARGUMENT`.
pub(crate) fn struct_size(size: usize, min: usize, arg: &'static str) -> Checked<()> {
    if (min..=OPTIONS_MAX_SIZE).contains(&size) {
        Ok(())
    } else {
        Err(refuse(
            VOLT_INVALID_ARGUMENT,
            Refusal::StructSize { arg, size, min },
        ))
    }
}

/// `ptr`, the argument named `arg`, aligned for its type, else
/// `VOLT_INVALID_ARGUMENT`.
pub(crate) fn aligned<T>(ptr: *const T, arg: &'static str) -> Checked<()> {
    if ptr.is_aligned() {
        Ok(())
    } else {
        Err(refuse(VOLT_INVALID_ARGUMENT, Refusal::Misaligned(arg)))
    }
}

/// A name from C: `Err(VOLT_INVALID_ARGUMENT)` for NULL, `Err(VOLT_INVALID_NAME)`
/// for a name that is not UTF-8 (the backends check the rest).
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
pub(crate) unsafe fn name_arg<'a>(name: *const c_char) -> Checked<&'a str> {
    non_null(name, "name")?;
    // SAFETY: non-NULL and NUL-terminated (contract).
    let name = unsafe { std::ffi::CStr::from_ptr(name) };
    name.to_str()
        .map_err(|_| noted(VOLT_INVALID_NAME, "invalid semaphore name (not UTF-8)"))
}

/// An optional handle label from C: `None` for NULL (the default label),
/// `Err(VOLT_INVALID_ARGUMENT)` for one that is not UTF-8 (never a valid
/// label: the backends check the rest and answer `INVALID_LABEL`, which is
/// `VOLT_INVALID_ARGUMENT` too).
///
/// # Safety
/// `label` is NULL or a NUL-terminated string.
pub(crate) unsafe fn label_arg<'a>(label: *const c_char) -> Checked<Option<&'a str>> {
    if label.is_null() {
        return Ok(None);
    }
    // SAFETY: non-NULL and NUL-terminated (contract).
    let label = unsafe { std::ffi::CStr::from_ptr(label) };
    label.to_str().map(Some).map_err(|_| {
        crate::last_error::noted(VOLT_INVALID_ARGUMENT, volt_sem_backend::inspect::LABEL_RULE)
    })
}

/// The largest `struct_size` an options struct may declare: far above any
/// version of one, so that a garbage size is rejected before anything is
/// read past the struct.
pub(crate) const OPTIONS_MAX_SIZE: usize = 4096;

/// Reads an extensible options struct (`volt_connect_options`,
/// `volt_open_options`): `struct_size` first, fields only ever appended,
/// every field's 0 / NULL its default. `Ok(None)` for NULL (every default).
///
/// A smaller `struct_size` (at least `v1_size`, the first version's) is an
/// older header's: the fields it lacks read as 0. A larger one (up to
/// [`OPTIONS_MAX_SIZE`]) is a newer header's: accepted only if every byte
/// this library does not know is 0, else `VOLT_INVALID_OPTION`. A size out of
/// range, or a misaligned pointer, is `VOLT_INVALID_ARGUMENT`.
///
/// # Safety
/// `opts` is NULL or points to a `T` whose first field is a `usize` (the
/// size), with that many readable bytes; `T` is `repr(C)` and made only of
/// integers and raw pointers (all zeroes is a valid value of each).
pub(crate) unsafe fn read_versioned<T: Copy>(opts: *const T, v1_size: usize) -> Checked<Option<T>> {
    if opts.is_null() {
        return Ok(None);
    }
    aligned(opts, "opts")?;
    // SAFETY: non-NULL and aligned; its first field, a usize, is readable
    // (contract).
    let size = unsafe { opts.cast::<usize>().read() };
    let known = std::mem::size_of::<T>();
    struct_size(size, v1_size, "opts->struct_size")?;
    if size > known {
        // Options of a newer header: honoured only if left at their defaults.
        // SAFETY: the caller's struct has `size` readable bytes (contract).
        let newer =
            unsafe { std::slice::from_raw_parts(opts.cast::<u8>().add(known), size - known) };
        if newer.iter().any(|&b| b != 0) {
            return Err(crate::last_error::noted(
                VOLT_INVALID_OPTION,
                "invalid option: an option of a newer header that this library does not know",
            ));
        }
    }
    // SAFETY: integers and raw pointers only (contract): all zeroes (0,
    // NULL) is valid, and is the default of the fields an older header lacks.
    let mut o: T = unsafe { std::mem::zeroed() };
    // SAFETY: `min(size, known)` bytes readable at `opts` (contract) and
    // writable in `o`; every bit pattern is valid for these integer and
    // pointer fields; no overlap.
    unsafe {
        std::ptr::copy_nonoverlapping(
            opts.cast::<u8>(),
            (&mut o as *mut T).cast::<u8>(),
            size.min(known),
        )
    };
    Ok(Some(o))
}

/// Fills an extensible options struct of `struct_size` bytes with
/// `defaults` (the fields this library knows) and zeroes (the rest: their
/// default), or `VOLT_INVALID_ARGUMENT` for NULL, a misaligned pointer or a
/// size out of `v1_size..=OPTIONS_MAX_SIZE` (nothing written).
///
/// # Safety
/// `opts` is NULL or points to `struct_size` writable bytes; `T` as for
/// [`read_versioned`].
pub(crate) unsafe fn init_versioned<T: Copy>(
    opts: *mut T,
    struct_size: usize,
    v1_size: usize,
    defaults: T,
) -> Checked<volt_status> {
    non_null(opts, "opts")?;
    aligned(opts, "opts")?;
    self::struct_size(struct_size, v1_size, "struct_size")?;
    // The caller's struct may be smaller (an older header: only the fields it
    // has) or larger (a newer one: the rest zeroed, their default).
    let n = struct_size.min(std::mem::size_of::<T>());
    // SAFETY: `struct_size` writable bytes (contract); `n <= struct_size`
    // bytes of `defaults` are readable; the two do not overlap.
    unsafe {
        std::ptr::write_bytes(opts.cast::<u8>(), 0, struct_size);
        std::ptr::copy_nonoverlapping((&defaults as *const T).cast::<u8>(), opts.cast::<u8>(), n);
    }
    Ok(VOLT_OK)
}
