//! What a JS `Semaphore` object holds: an External owning a [`Handle`] (the
//! shared semaphore plus this object's own `ref()`/`unref()` setting), and the
//! unchecked accessors the entry points use to get it back.

use std::cell::Cell;
use std::ffi::c_void;
use std::ptr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use napi::sys;

use crate::raw::null;
use crate::raw::{RawEnv, RawValue};
use crate::semaphore::Sem;

/// What a JS `Semaphore` object holds (through an External): the semaphore,
/// and this object's own settings.
pub(crate) struct Handle {
    pub(crate) sem: Arc<Sem>,
    /// Identifies the requests queued through this handle (never dereferenced).
    pub(crate) id: u64,
    /// Whether waiters queued through it keep their thread alive (`ref()`/`unref()`).
    pub(crate) refd: Cell<bool>,
}

pub(crate) static NEXT_HANDLE_ID: AtomicU64 = AtomicU64::new(1);

/// The handle behind an External made by `handle()`.
///
/// # Safety
/// `v` is an External created by this addon (the JS layer keeps handles private);
/// the returned reference lives as long as `v` is reachable (the call's duration).
pub(crate) unsafe fn handle_of<'a>(env: RawEnv, v: RawValue) -> Option<&'a Handle> {
    let mut p = ptr::null_mut();
    // SAFETY: fails on a non-external, leaving p null.
    let status = unsafe { sys::napi_get_value_external(env, v, &mut p) };
    if status != sys::Status::napi_ok || p.is_null() {
        return None;
    }
    // SAFETY: our externals point at a boxed Handle, freed only by their finalizer.
    Some(unsafe { &*(p as *const Handle) })
}

/// The semaphore behind a handle made by `handle()`.
///
/// # Safety
/// As for [`handle_of`].
pub(crate) unsafe fn sem<'a>(env: RawEnv, v: RawValue) -> Option<&'a Arc<Sem>> {
    // SAFETY: forwarded.
    unsafe { handle_of(env, v) }.map(|h| &h.sem)
}

pub(crate) unsafe extern "C" fn drop_handle(_env: RawEnv, data: *mut c_void, _hint: *mut c_void) {
    // SAFETY: `data` is the Box<Handle> leaked by `handle`.
    let h = unsafe { Box::from_raw(data as *mut Handle) };
    // A private semaphore's one handle: its requests keep no spare
    // references past it (`Sem::take_ref`). On its thread, as every call
    // that touches them.
    if !h.sem.shared.load(Ordering::Relaxed) {
        h.sem.retire_spares(true);
    }
    drop(h);
}

/// Wraps an `Arc<Sem>` in a JS External that owns it.
pub(crate) fn handle(env: RawEnv, sem: Arc<Sem>) -> RawValue {
    let data = Box::into_raw(Box::new(Handle {
        sem,
        id: NEXT_HANDLE_ID.fetch_add(1, Ordering::Relaxed),
        refd: Cell::new(true),
    }));
    let mut out = ptr::null_mut();
    // SAFETY: the finalizer frees `data` exactly once.
    let status = unsafe {
        sys::napi_create_external(
            env,
            data.cast(),
            Some(drop_handle),
            ptr::null_mut(),
            &mut out,
        )
    };
    if status != sys::Status::napi_ok {
        // SAFETY: not handed to Node; still ours.
        drop(unsafe { Box::from_raw(data) });
        return null(env);
    }
    out
}
