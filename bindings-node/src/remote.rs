//! The part of an environment other threads reach: [`EnvShared`], the list
//! of request keys woken outside the environment's own native calls and the
//! threadsafe function that makes its JS thread drain it (`# Wake path` in
//! [`crate::wake`]). Everything that wakes an environment from another thread
//! (a grant, a lease watch) goes through [`EnvShared::push_remote`].

use std::ptr;
use std::sync::Mutex;

use napi::sys;

use crate::raw::lock;

/// The part of an environment other threads reach (through a node's `env`).
pub(crate) struct EnvShared {
    pub(crate) remote: Mutex<Remote>,
}

pub(crate) struct Remote {
    /// Ids woken from outside this environment's own native calls.
    pub(crate) ids: Vec<u64>,
    /// `None` once the environment is being torn down.
    pub(crate) tsfn: Option<Tsfn>,
    /// A call of the threadsafe function is queued and has not started yet.
    pub(crate) notified: bool,
}

#[derive(Clone, Copy)]
pub(crate) struct Tsfn(pub(crate) sys::napi_threadsafe_function);
// SAFETY: a threadsafe function handle is meant to be used from any thread; we only
// call it while it is alive (the `Remote` mutex orders calls against its finalizer).
unsafe impl Send for Tsfn {}

impl EnvShared {
    pub(crate) fn push_remote(&self, id: u64) {
        let mut r = lock(&self.remote);
        r.ids.push(id);
        if !r.notified {
            if let Some(t) = r.tsfn {
                // SAFETY: `tsfn` is Some only between creation and its finalizer (or
                // our cleanup hook), both of which clear it under this same lock.
                let status = unsafe {
                    sys::napi_call_threadsafe_function(
                        t.0,
                        ptr::null_mut(),
                        sys::ThreadsafeFunctionCallMode::nonblocking,
                    )
                };
                r.notified = status == sys::Status::napi_ok;
            }
        }
    }
}
