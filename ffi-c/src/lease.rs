//! `volt_lease_watch`: a callback when a Redis session's lease is lost
//! (`volt_sem_watch_lease`, `volt_lease_watch_free`). The machinery (one
//! notifier thread, one hub per session) is in `hub.rs`.

use std::ffi::c_void;
use std::ptr;
use std::sync::Arc;

use crate::boundary::{ffi_call, ffi_status, invalid, non_null};
use crate::last_error::{refuse, Refusal};
use crate::semaphore::volt_sem;
use crate::semaphore::{handle, not_redis};
use crate::status::volt_status::{self, *};

pub(crate) mod hub;

/// A lease watch from `volt_sem_watch_lease`. Opaque; freed with
/// `volt_lease_watch_free`.
pub struct volt_lease_watch {
    watch: Arc<hub::Watch>,
    hub: Arc<hub::Hub>,
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
/// after another. In the callback, `volt_last_error_message` gives the loss's
/// text (that of `why`) until the callback's own calls replace it. No
/// callback runs for a session that is never lost. After a `fork()` made
/// inside a callback, the child's one thread is its copy of the lease
/// thread: once it has called that session's callbacks it ends, and the
/// child with it, as by `exit(0)`, unless a callback `exec()`ed or
/// `_exit()`ed first.
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
    ffi_status!("volt_sem_watch_lease", || {
        non_null(out, "out")?;
        // SAFETY: non-NULL and writable (contract).
        unsafe { out.write(ptr::null_mut()) };
        let Some(lost) = lost else {
            return Err(refuse(VOLT_INVALID_ARGUMENT, Refusal::Null("lost")));
        };
        // SAFETY: NULL or a live handle (contract).
        let sem = unsafe { handle(sem) }?;
        if session == 0 {
            return invalid("`session` is 0 (no session has that number)");
        }
        if sem.sem.as_redis().is_none() {
            return Err(not_redis());
        }
        // An owned reference for the watch.
        // SAFETY: `sem` is a live handle from `Arc::into_raw` (contract).
        let handle = unsafe {
            Arc::increment_strong_count(sem);
            Arc::from_raw(sem as *const volt_sem)
        };
        Ok(match hub::watch(&handle, session, lost, ctx) {
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
        })
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
    ffi_call((), || {
        if watch.is_null() {
            return;
        }
        // SAFETY: from `Box::into_raw` in `volt_sem_watch_lease`, given up here.
        let watch = unsafe { Box::from_raw(watch) };
        watch.hub.cancel(&watch.watch);
        // Dropped last: it may be the last reference to the handle.
    })
}
