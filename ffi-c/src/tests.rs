//! Rust-side checks of the C ABI. The behavioural suites are in C (`tests/c`),
//! libuv (`tests/libuv`) and Zig (`tests/zig`), driven by `make -C tests test`.

use super::*;
use crate::status::volt_status::*;
use std::ffi::c_void;
use std::ptr;
use std::sync::atomic::Ordering;
use volt_sem_backend::OpenOptions;

use crate::shared::open_options;
use crate::waiter::Slot;
use std::ffi::CStr;
use std::sync::atomic::AtomicUsize;

/// The `version` of `[workspace.package]` in the root Cargo.toml, read as text.
fn workspace_version() -> String {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.toml")).unwrap();
    let mut in_package = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_package = line == "[workspace.package]";
        } else if in_package && line.starts_with("version") {
            let value = line.split('=').nth(1).unwrap().trim();
            return value.trim_matches('"').to_owned();
        }
    }
    panic!("no [workspace.package] version in Cargo.toml");
}

#[test]
fn version_matches_cargo_toml() {
    // SAFETY: a static NUL-terminated string.
    let version = unsafe { CStr::from_ptr(volt_sem_version()) };
    assert_eq!(version.to_str().unwrap(), workspace_version());
}

#[test]
fn status_names_match_variants() {
    for (status, name) in [
        (VOLT_OK, "VOLT_OK"),
        (VOLT_PENDING, "VOLT_PENDING"),
        (VOLT_PANIC, "VOLT_PANIC"),
    ] {
        // SAFETY: static NUL-terminated strings.
        let got = unsafe { CStr::from_ptr(volt_status_str(status as i32)) };
        assert_eq!(got.to_str().unwrap(), name);
    }
    // Every status has its own name, and the names are the variants' (the
    // header's constants), checked through the enum's Debug form.
    let all = [
        VOLT_OK,
        VOLT_PENDING,
        VOLT_WOULD_BLOCK,
        VOLT_CLOSED,
        VOLT_TIMED_OUT,
        VOLT_CANCELLED,
        VOLT_IDLE,
        VOLT_INVALID_ARGUMENT,
        VOLT_OVERFLOW,
        VOLT_PANIC,
        VOLT_INVALID_NAME,
        VOLT_NOT_FOUND,
        VOLT_EXISTS,
        VOLT_PERMISSION,
        VOLT_MISMATCH,
        VOLT_VERSION_MISMATCH,
        VOLT_NOT_A_SEGMENT,
        VOLT_QUEUE_FULL,
        VOLT_PROCESS_TABLE_FULL,
        VOLT_NOT_HELD,
        VOLT_IN_CALLBACK,
        VOLT_FORKED,
        VOLT_UNSUPPORTED,
        VOLT_CORRUPT,
        VOLT_OS_ERROR,
        VOLT_INVALID_URL,
        VOLT_INVALID_PREFIX,
        VOLT_INVALID_OPTION,
        VOLT_AUTH_FAILED,
        VOLT_CONNECTION_FAILED,
        VOLT_REDIS_ERROR,
        VOLT_PROTOCOL_ERROR,
        VOLT_LEASE_EXPIRED,
        VOLT_STATE_LOST,
        VOLT_TLS_FAILED,
        VOLT_NOT_REPLICATED,
        VOLT_NO_PERMISSION,
        VOLT_READ_ONLY,
        VOLT_IN_USE,
        VOLT_TRUNCATED,
        VOLT_WRONG_TYPE,
        VOLT_LIBC_MISMATCH,
        VOLT_REDIS_OUT_OF_MEMORY,
        VOLT_DISCONNECTED,
    ];
    for (i, status) in all.into_iter().enumerate() {
        assert_eq!(status as i32, i as i32);
        // SAFETY: static NUL-terminated strings.
        let got = unsafe { CStr::from_ptr(volt_status_str(status as i32)) };
        assert_eq!(got.to_str().unwrap(), format!("{status:?}"));
    }
    // SAFETY: as above.
    assert_eq!(
        unsafe { CStr::from_ptr(volt_status_str(all.len() as i32)) }
            .to_str()
            .unwrap(),
        "unknown"
    );
    // SAFETY: as above.
    assert_eq!(
        unsafe { CStr::from_ptr(volt_status_str(-1)) }
            .to_str()
            .unwrap(),
        "unknown"
    );
}

unsafe extern "C-unwind" fn count_wake(ctx: *mut c_void) {
    // SAFETY: the tests pass a live `AtomicUsize`.
    unsafe { &*(ctx as *const AtomicUsize) }.fetch_add(1, Ordering::SeqCst);
}

#[test]
fn pending_grant_then_cancel_collects_permits() {
    let wakes = AtomicUsize::new(0);
    let ctx = &wakes as *const AtomicUsize as *mut c_void;
    let mut w = volt_waiter { _opaque: [0; 64] };
    let w = &mut w as *mut volt_waiter;
    // SAFETY: `w` is a properly sized and aligned local that outlives every use;
    // every PENDING acquire is finished below.
    unsafe {
        let mut sem = ptr::null();
        assert_eq!(volt_sem_new(1, &mut sem), VOLT_OK);
        assert_eq!(volt_waiter_init(w), VOLT_OK);
        assert_eq!(
            volt_sem_acquire(sem, w, 2, Some(count_wake), ctx),
            VOLT_PENDING
        );
        assert_eq!(
            volt_sem_acquire(sem, w, 1, Some(count_wake), ctx),
            VOLT_INVALID_ARGUMENT
        );
        assert!(volt_waiter_is_busy(w));
        assert_eq!(volt_waiter_status(w), VOLT_PENDING);
        // Freeing the only handle must not free the queue under the waiter.
        let other = volt_sem_clone(sem);
        volt_sem_free(sem);
        assert_eq!(volt_sem_release(other, 1), VOLT_OK);
        assert_eq!(wakes.load(Ordering::SeqCst), 1);
        assert_eq!(volt_waiter_status(w), VOLT_OK);
        assert_eq!(volt_sem_cancel(other, w, ptr::null_mut()), VOLT_OK);
        assert!(!volt_waiter_is_busy(w));
        assert_eq!(volt_sem_cancel(other, w, ptr::null_mut()), VOLT_IDLE);
        assert_eq!(volt_sem_release(other, 2), VOLT_OK);
        assert_eq!(volt_sem_available_permits(other), 2);
        volt_sem_free(other);
    }
}

#[test]
fn zeroed_waiter_is_rejected() {
    let mut w = volt_waiter { _opaque: [0; 64] };
    let mut sem = ptr::null();
    // SAFETY: valid local memory; the acquire is rejected before queueing.
    unsafe {
        assert_eq!(volt_sem_new(0, &mut sem), VOLT_OK);
        assert_eq!(
            volt_sem_acquire(sem, &mut w, 1, Some(count_wake), ptr::null_mut()),
            VOLT_INVALID_ARGUMENT
        );
        assert_eq!(volt_waiter_status(&mut w), VOLT_INVALID_ARGUMENT);
        assert!(!volt_waiter_is_busy(&w));
        volt_sem_free(sem);
    }
}

/// Two waiters; the first one's callback releases, which completes the second.
/// Callbacks never nest: the second callback runs on the same thread after the
/// first returned, and cancels the *first* waiter. Its callback has returned,
/// so that cancel finishes it (the owner's later cancel finds it idle).
struct Nested {
    sem: *const volt_sem,
    outer: *mut volt_waiter,
    seen_from_inner: AtomicUsize,
    outer_returned: AtomicUsize,
}

unsafe extern "C-unwind" fn outer_wake(ctx: *mut c_void) {
    // SAFETY: the test passes a live `Nested`.
    let n = unsafe { &*(ctx as *const Nested) };
    // SAFETY: `n.sem` is a live handle.
    assert_eq!(unsafe { volt_sem_release(n.sem, 1) }, VOLT_OK);
    n.outer_returned.store(1, Ordering::SeqCst);
}

unsafe extern "C-unwind" fn inner_wake(ctx: *mut c_void) {
    // SAFETY: the test passes a live `Nested`; `outer` is a busy waiter.
    let n = unsafe { &*(ctx as *const Nested) };
    assert_eq!(
        n.outer_returned.load(Ordering::SeqCst),
        1,
        "callbacks nested"
    );
    let status = unsafe { volt_sem_cancel(n.sem, n.outer, ptr::null_mut()) };
    n.seen_from_inner.store(status as usize, Ordering::SeqCst);
}

#[test]
fn a_later_callback_may_cancel_an_earlier_waiter() {
    let mut outer = volt_waiter { _opaque: [0; 64] };
    let mut inner = volt_waiter { _opaque: [0; 64] };
    // SAFETY: local waiters that outlive every use; both PENDING acquires are
    // finished below.
    unsafe {
        let mut sem = ptr::null();
        assert_eq!(volt_sem_new(0, &mut sem), VOLT_OK);
        let n = Nested {
            sem,
            outer: &mut outer,
            seen_from_inner: AtomicUsize::new(usize::MAX),
            outer_returned: AtomicUsize::new(0),
        };
        let ctx = &n as *const Nested as *mut c_void;
        assert_eq!(volt_waiter_init(&mut outer), VOLT_OK);
        assert_eq!(volt_waiter_init(&mut inner), VOLT_OK);
        assert_eq!(
            volt_sem_acquire(sem, &mut outer, 1, Some(outer_wake), ctx),
            VOLT_PENDING
        );
        assert_eq!(
            volt_sem_acquire(sem, &mut inner, 1, Some(inner_wake), ctx),
            VOLT_PENDING
        );
        assert_eq!(volt_sem_release(sem, 1), VOLT_OK);
        assert_eq!(n.seen_from_inner.load(Ordering::SeqCst), VOLT_OK as usize);
        // Finished by the inner callback's cancel: nothing left for the owner.
        assert!(!volt_waiter_is_busy(&outer));
        assert_eq!(volt_sem_cancel(sem, &mut outer, ptr::null_mut()), VOLT_IDLE);
        assert_eq!(volt_sem_cancel(sem, &mut inner, ptr::null_mut()), VOLT_OK);
        volt_sem_release(sem, 2);
        assert_eq!(volt_sem_available_permits(sem), 2);
        volt_sem_free(sem);
    }
}

#[test]
fn open_flags() {
    assert_eq!(open_options(0), Some(OpenOptions::new()));
    assert_eq!(
        open_options(VOLT_OPEN_CREATE_ONLY),
        Some(OpenOptions::new().create_only())
    );
    assert_eq!(
        open_options(VOLT_OPEN_ATTACH_ONLY | VOLT_OPEN_SHARE_GROUP),
        Some(OpenOptions::new().attach_only().mode(0o660))
    );
    // The owner always keeps read and write.
    assert_eq!(
        open_options(0o044 << VOLT_OPEN_MODE_SHIFT),
        Some(OpenOptions::new().mode(0o644))
    );
    assert_eq!(
        open_options(VOLT_OPEN_CREATE_ONLY | VOLT_OPEN_ATTACH_ONLY),
        None
    );
    assert_eq!(
        open_options(VOLT_OPEN_ATTACH_ONLY | VOLT_OPEN_ACCEPT_FOREIGN_OWNER),
        Some(OpenOptions::new().attach_only().accept_foreign_owner(true))
    );
    assert_eq!(
        open_options(VOLT_OPEN_ATTACH_ONLY | VOLT_OPEN_RESIZE),
        Some(OpenOptions::new().attach_only().resize(true))
    );
    assert_eq!(open_options(16), None);
    assert_eq!(open_options(1 << 31), None);
    assert_eq!(open_options(0o1000 << VOLT_OPEN_MODE_SHIFT), None);
}

#[test]
fn a_waiter_slot_fits_the_c_storage() {
    // Also a compile-time assertion; this names the numbers when it fails.
    assert!(
        std::mem::size_of::<Slot>() <= VOLT_WAITER_SIZE,
        "Slot is {} bytes",
        std::mem::size_of::<Slot>()
    );
}

#[test]
fn connect_options_layout_leaves_no_trailing_padding() {
    // Fields are only ever appended (see `volt_connect_options`): trailing
    // padding would let a later field land inside the size an older library
    // knows, where it would be ignored instead of rejected.
    let end = std::mem::offset_of!(volt_connect_options, label)
        + std::mem::size_of::<*const std::ffi::c_char>();
    assert_eq!(end, std::mem::size_of::<volt_connect_options>());
    let end = std::mem::offset_of!(volt_open_options, label)
        + std::mem::size_of::<*const std::ffi::c_char>();
    assert_eq!(end, std::mem::size_of::<volt_open_options>());
}

#[test]
fn connect_options_init_zeroes_a_larger_struct_and_rejects_bad_sizes() {
    #[repr(C)]
    struct Newer {
        o: volt_connect_options,
        more: [u64; 2],
    }
    let mut n = std::mem::MaybeUninit::<Newer>::uninit();
    // SAFETY: `n` has `size_of::<Newer>()` writable bytes, aligned.
    unsafe {
        assert_eq!(
            volt_connect_options_init(n.as_mut_ptr().cast(), std::mem::size_of::<Newer>()),
            VOLT_OK
        );
        let n = n.assume_init();
        assert_eq!(n.o.struct_size, std::mem::size_of::<Newer>());
        assert_eq!(n.more, [0, 0]);
        assert_eq!(n.o.lease_ms, 10_000);
        let mut o = std::mem::MaybeUninit::<volt_connect_options>::uninit();
        assert_eq!(
            volt_connect_options_init(o.as_mut_ptr(), 8),
            VOLT_INVALID_ARGUMENT
        );
        assert_eq!(
            volt_connect_options_init(o.as_mut_ptr(), 1 << 20),
            VOLT_INVALID_ARGUMENT
        );
    }
}

/// The error a status comes from leaves its text for
/// `volt_last_error_message`, whichever error it is (the errors below were
/// once left out of a list of "detailed" ones, so their messages were ""),
/// and a message the call already stored is kept.
#[test]
fn every_backend_error_leaves_its_message() {
    use crate::last_error::{forget_last_error, noted, with_last_error};
    use crate::status::status_of;
    use volt_sem_backend::Error;
    let message = || with_last_error(str::to_owned).unwrap();
    for e in [
        Error::NoPermission("EVALSHA".into()),
        Error::WrongType("WRONGTYPE {volt-sem:x}:queue holds a string".into()),
        Error::InUse { sessions: 2 },
        Error::ReadOnly("READONLY replica".into()),
        Error::Tls("no CA file".into()),
        Error::NotReplicated {
            acked: 0,
            wanted: 1,
        },
        Error::NoPermits,
        Error::TimedOut,
        Error::Closed,
        Error::NotHeld { held: 0 },
    ] {
        forget_last_error();
        let text = e.to_string();
        let status_number = e.status();
        let status = status_of(e);
        assert_eq!(status as i32, status_number, "{text}");
        assert_eq!(message(), text);
    }
    forget_last_error();
    let status = noted(VOLT_UNSUPPORTED, "the more specific message");
    status_of(Error::Unsupported);
    assert_eq!(status, VOLT_UNSUPPORTED);
    assert_eq!(message(), "the more specific message");
    forget_last_error();
    assert_eq!(message(), "");
}

/// A wake callback's calls leave the message of the call that runs it as it
/// was, whatever it is made of (a backend error kept whole, an everyday one,
/// a refused argument, a text), read before or not.
#[test]
fn a_stashed_message_comes_back_whole() {
    use crate::boundary::{count, ffi_status};
    use crate::last_error::{
        forget_last_error, restore_last_error, stash_last_error, with_last_error,
    };
    use crate::status::status_of;
    use volt_sem_backend::Error;
    let message = || with_last_error(str::to_owned).unwrap();
    let refused = || ffi_status!("volt_test_call", || count(0).map(|()| VOLT_OK));
    let makers: [(&dyn Fn() -> volt_status, &str); 3] = [
        (
            &|| status_of(Error::Tls("no CA file".into())),
            "TLS failed: no CA file",
        ),
        (&|| status_of(Error::NoPermits), "no permits available"),
        (
            &refused,
            "volt_test_call: `n` is 0: a count is 1 to volt_max_permits() (",
        ),
    ];
    for (make, text) in makers {
        for read_first in [false, true] {
            forget_last_error();
            make();
            if read_first {
                assert!(message().starts_with(text), "{}", message());
            }
            let saved = stash_last_error();
            assert_eq!(message(), "");
            status_of(Error::TimedOut); // the callback's own call
            assert_eq!(message(), "timed out waiting for permits");
            restore_last_error(saved);
            assert!(message().starts_with(text), "{}", message());
        }
    }
    forget_last_error();
    assert_eq!(message(), "");
}
