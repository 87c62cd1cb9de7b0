//! Named semaphores shared by the processes of the machine
//! (`volt_sem_open`, `volt_sem_open_with`): their flags and options, open and
//! unlink, and their limits.

use std::ffi::c_char;
use std::ptr;

use volt_sem_backend::{OpenOptions, Semaphore};

use crate::boundary::{
    ffi_call, ffi_status, init_versioned, invalid, label_arg, name_arg, non_null, read_versioned,
    Checked,
};
use crate::semaphore::{hand_out, volt_sem};
use crate::status::status;
use crate::status::volt_status;

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
/// `volt_sem_open` flag: when the name exists with another total, change
/// its total to `permits` (as `volt_sem_set_total` does, under the lock of the
/// attach) instead of failing with `VOLT_MISMATCH`. Meant for a rolling deploy
/// that changes the total (the new processes open with the new total and this
/// flag; nobody unlinks the name). Two processes that open with different
/// totals and this flag: the last one wins. Ignored when this call creates the
/// segment.
pub const VOLT_OPEN_RESIZE: u32 = 8;

/// Every flag bit `volt_sem_open` knows; any other is `VOLT_INVALID_ARGUMENT`.
const OPEN_KNOWN_FLAGS: u32 = VOLT_OPEN_CREATE_ONLY
    | VOLT_OPEN_ATTACH_ONLY
    | VOLT_OPEN_ACCEPT_FOREIGN_OWNER
    | VOLT_OPEN_RESIZE
    | (0o777 << VOLT_OPEN_MODE_SHIFT);

/// Why `open_options` refused `volt_sem_open`'s flags, and
/// `volt_sem_open_with`'s.
const FLAGS_RULE: &str =
    "`flags` has an unknown bit, or both VOLT_OPEN_CREATE_ONLY and VOLT_OPEN_ATTACH_ONLY";
const OPTS_FLAGS_RULE: &str =
    "`opts->flags` has an unknown bit, or both VOLT_OPEN_CREATE_ONLY and VOLT_OPEN_ATTACH_ONLY";

/// The options of `volt_sem_open`'s flags, or `None` for unknown bits or
/// both CREATE_ONLY and ATTACH_ONLY.
pub(crate) fn open_options(flags: u32) -> Option<OpenOptions> {
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
    .accept_foreign_owner(flags & VOLT_OPEN_ACCEPT_FOREIGN_OWNER != 0)
    .resize(flags & VOLT_OPEN_RESIZE != 0);
    let mode = (flags >> VOLT_OPEN_MODE_SHIFT) & 0o777;
    if mode != 0 {
        // The owner always keeps read and write: without them the creator
        // could not open its own semaphore again.
        options = options.mode(mode | 0o600);
    }
    Some(options)
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
/// `volt_sem_max_shared_permits()`; an existing name must have the same total
/// unless `VOLT_OPEN_RESIZE` is given (then its total becomes `permits`). `flags`: 0 (create or attach), or `VOLT_OPEN_CREATE_ONLY` or
/// `VOLT_OPEN_ATTACH_ONLY`, plus a mode for a new segment (`VOLT_OPEN_SHARE_GROUP`,
/// `VOLT_OPEN_SHARE_ALL`, or `VOLT_OPEN_MODE(m)`; default 0600, owner only; the
/// owner always keeps read and write; set exactly, the umask does not apply),
/// plus `VOLT_OPEN_ACCEPT_FOREIGN_OWNER` to attach to a segment another user
/// owns (refused with `VOLT_PERMISSION` without it), plus `VOLT_OPEN_RESIZE`.
///
/// Returns `VOLT_OK`, or (with `*out` set to NULL when `out` is not NULL, and
/// nothing changed):
/// * `VOLT_INVALID_ARGUMENT`: NULL `name` or `out`, `permits` 0 or too large,
///   unknown flag bits, or both CREATE_ONLY and ATTACH_ONLY;
/// * `VOLT_INVALID_NAME`, `VOLT_NOT_FOUND` (ATTACH_ONLY), `VOLT_EXISTS`
///   (CREATE_ONLY), `VOLT_PERMISSION` (the mode refuses this user, or another
///   user owns the segment and `VOLT_OPEN_ACCEPT_FOREIGN_OWNER` is not set),
///   `VOLT_MISMATCH` (another total, without `VOLT_OPEN_RESIZE`),
///   `VOLT_VERSION_MISMATCH` (a segment of another layout version: the
///   message names both), `VOLT_LIBC_MISMATCH` (a segment made by a build
///   of the library for another C library, glibc or musl: the message names
///   both), `VOLT_NOT_A_SEGMENT` (a foreign or truncated
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
    // SAFETY: forwarded contract.
    unsafe {
        open_into("volt_sem_open", name, permits, out, || {
            open_options(flags).map_or_else(|| invalid(FLAGS_RULE), Ok)
        })
    }
}

/// What `volt_sem_open` and `volt_sem_open_with` share: `*out` set to NULL
/// first, the name checked, then the options `options` reads (a failure
/// leaves `*out` NULL and creates nothing).
///
/// # Safety
/// As `volt_sem_open`.
unsafe fn open_into(
    call: &'static str,
    name: *const c_char,
    permits: usize,
    out: *mut *const volt_sem,
    options: impl FnOnce() -> Checked<OpenOptions>,
) -> volt_status {
    ffi_status!(call, || {
        non_null(out, "out")?;
        // SAFETY: `out` is non-NULL and, by contract, writable.
        unsafe { out.write(ptr::null()) };
        // SAFETY: NULL or NUL-terminated (contract).
        let name = unsafe { name_arg(name) }?;
        let options = options()?;
        // SAFETY: as above.
        Ok(unsafe {
            hand_out(
                // Counted: `volt_sem_disconnect` gives back what the handle holds.
                Semaphore::open(name, permits, options).map(Semaphore::counting_held),
                out,
            )
        })
    })
}

/// The options of `volt_sem_open_with`: an extensible struct, like
/// `volt_connect_options`. Every field's 0 (or NULL) means its default, so
///
/// ```c
/// volt_open_options opts = { sizeof opts };
/// opts.flags = VOLT_OPEN_SHARE_GROUP;
/// opts.label = "billing-worker-3";
/// volt_status s = volt_sem_open_with("gpu", 4, &opts, &sem);
/// ```
///
/// is the whole setup (`volt_open_options_init(&opts, sizeof opts)` does the
/// same). Strings are read (copied) during the call only.
///
/// ABI: as for `volt_connect_options`: fields are only ever appended, each
/// with 0 meaning "default"; `struct_size` is the caller's `sizeof`; a
/// larger one than this library knows is accepted only if the bytes it does
/// not know are 0, else `VOLT_INVALID_OPTION`.
// Adding an option: as for `volt_connect_options` (append, 0 is the default,
// no trailing padding: a test checks it).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct volt_open_options {
    /// `sizeof(volt_open_options)` as the caller compiled it.
    pub struct_size: usize,
    /// `volt_sem_open`'s flags (`VOLT_OPEN_*`, a mode); default 0: create or
    /// attach, mode 0600. Bits above 31 are `VOLT_INVALID_ARGUMENT`, as unknown
    /// flags are.
    pub flags: u64,
    /// The label `volt_sem_inspect` shows for this process's holds and
    /// queued requests (to every process that inspects the semaphore): 1 to
    /// 128 bytes of printable ASCII without spaces. NULL: `"<hostname>:<pid>"`.
    /// One label per process and name: while the process has the name open,
    /// a further open of it keeps the first handle's label (this one is still
    /// checked). Invalid: `VOLT_INVALID_ARGUMENT`, nothing created.
    pub label: *const c_char,
}

/// The first (and so far only) version of `volt_open_options`.
const OPEN_OPTIONS_V1_SIZE: usize = std::mem::size_of::<volt_open_options>();

/// Fills `opts` with the defaults (flags 0, label NULL) and sets its
/// `struct_size`, which must be `sizeof *opts`.
///
/// Returns `VOLT_OK`, or `VOLT_INVALID_ARGUMENT` for NULL or a `struct_size`
/// below the first version's size (24 bytes on 64-bit targets) or above 4096
/// (nothing written).
///
/// # Safety
/// `opts` is NULL or points to `struct_size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn volt_open_options_init(
    opts: *mut volt_open_options,
    struct_size: usize,
) -> volt_status {
    ffi_status!("volt_open_options_init", || {
        let defaults = volt_open_options {
            struct_size,
            flags: 0,
            label: ptr::null(),
        };
        // SAFETY: `struct_size` writable bytes or NULL (contract); integer and
        // pointer fields only.
        unsafe { init_versioned(opts, struct_size, OPEN_OPTIONS_V1_SIZE, defaults) }
    })
}

/// `volt_sem_open` with options: the same semaphore, arguments, results and
/// errors, with the flags in `opts->flags` and the handle's label in
/// `opts->label` (see `volt_open_options`). `opts` NULL: the defaults (as
/// `volt_sem_open(name, permits, 0, out)`).
///
/// Returns what `volt_sem_open` returns, and `VOLT_INVALID_ARGUMENT` for a
/// bad `opts->struct_size` or an invalid label (`volt_last_error_message`
/// says why), or `VOLT_INVALID_OPTION` for options of a newer header that this
/// library does not know (all with `*out` NULL and nothing created).
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `opts` is NULL or a
/// `volt_open_options` of `opts->struct_size` readable bytes whose `label` is
/// NULL or NUL-terminated; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn volt_sem_open_with(
    name: *const c_char,
    permits: usize,
    opts: *const volt_open_options,
    out: *mut *const volt_sem,
) -> volt_status {
    let options = || {
        // SAFETY: NULL or a valid options struct (contract); integer and
        // pointer fields only.
        let o = unsafe { read_versioned(opts, OPEN_OPTIONS_V1_SIZE) }?;
        let (flags, label) = o.map_or((0, ptr::null()), |o| (o.flags, o.label));
        let Ok(flags) = u32::try_from(flags) else {
            return invalid("`opts->flags` has bits above 31");
        };
        let Some(options) = open_options(flags) else {
            return invalid(OPTS_FLAGS_RULE);
        };
        // SAFETY: NULL or NUL-terminated (contract); read during this call.
        Ok(match unsafe { label_arg(label) }? {
            Some(label) => options.label(label),
            None => options,
        })
    };
    // SAFETY: forwarded contract.
    unsafe { open_into("volt_sem_open_with", name, permits, out, options) }
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
    ffi_status!("volt_sem_unlink", || {
        // SAFETY: NULL or NUL-terminated (contract).
        let name = unsafe { name_arg(name) }?;
        Ok(status(volt_sem_backend::unlink(name)))
    })
}

/// The longest name `volt_sem_open` accepts, in bytes.
#[no_mangle]
pub extern "C" fn volt_sem_max_name_len() -> usize {
    ffi_call(0, || volt_sem_backend::MAX_NAME_LEN)
}

/// The largest total of a shared semaphore (and the largest request on one).
#[no_mangle]
pub extern "C" fn volt_sem_max_shared_permits() -> usize {
    ffi_call(0, || volt_sem_backend::shm::MAX_PERMITS)
}

/// How many requests may be queued on one shared semaphore, across all its
/// processes; one more fails with `VOLT_QUEUE_FULL`.
#[no_mangle]
pub extern "C" fn volt_sem_max_waiters() -> usize {
    ffi_call(0, || volt_sem_backend::shm::MAX_WAITERS)
}
