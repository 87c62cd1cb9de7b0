//! The part of an environment other threads reach: [`EnvShared`], the list
//! of request keys woken outside the environment's own native calls and the
//! threadsafe function that makes its JS thread drain it (`# Wake path` in
//! [`crate::wake`]). Everything that wakes an environment from another thread
//! (a grant, a lease watch) goes through [`EnvShared::push_remote`] or
//! [`EnvShared::push_remote_later`].
//!
//! # One wake per batch
//!
//! The threadsafe function is called at most once until the environment
//! drained its list: a key pushed while a call is pending rides on it. The
//! list and its `notified` flag have a lock of their own, which nobody holds
//! while calling the threadsafe function; and a wake made inside a native
//! call of another environment on this thread (a `release` handing permits
//! to a waiter of another worker) calls it only once that native call is
//! over ([`flush_later`]). Both matter because the woken thread often runs
//! before the waking one got back from the call: it used to find the list's
//! lock still held, and the grant's wake callback still running (the core
//! makes `finish` wait for it), and paid a futex sleep and a `sched_yield`
//! on top of its wake (measured in `bench/RESULTS.md`, "Across worker
//! threads"). What is left of that is Node's: its threadsafe function holds
//! a mutex of its own while it signals the loop, which the woken thread's
//! dispatch takes too.

use std::cell::{Cell, RefCell};
use std::ptr;
use std::sync::{Arc, Mutex};

use napi::sys;

use crate::raw::lock;

/// The part of an environment other threads reach (through a node's `env`).
pub(crate) struct EnvShared {
    pub(crate) remote: Mutex<Remote>,
    /// The environment's threadsafe function: `None` before `init` and once
    /// it is being torn down. Held while calling it, so that its finalizer
    /// (which clears it under this lock) cannot run meanwhile.
    pub(crate) tsfn: Mutex<Option<Tsfn>>,
}

pub(crate) struct Remote {
    /// Ids woken from outside this environment's own native calls.
    pub(crate) ids: Vec<u64>,
    /// A call of the threadsafe function was made (or is about to be) and
    /// the environment has not drained `ids` since: pushers need not call it.
    pub(crate) notified: bool,
}

#[derive(Clone, Copy)]
pub(crate) struct Tsfn(pub(crate) sys::napi_threadsafe_function);
// SAFETY: a threadsafe function handle is meant to be used from any thread; we only
// call it while it is alive (the `tsfn` mutex orders calls against its finalizer).
unsafe impl Send for Tsfn {}

/// What this thread's native call is (see [`CURRENT`]).
pub(crate) struct Current {
    /// The environment whose native call is running on this thread, if any,
    /// by its `local` list (its nodes woken during that call go there; a
    /// node's `owner` is the same pointer).
    pub(crate) local: Cell<*const RefCell<Vec<u64>>>,
    /// Wakes of other environments were put off until the call is over
    /// ([`EnvShared::push_remote_later`]): set with them, so that a call that
    /// put none off (the common case) does not look at that list, a
    /// thread-local of its own.
    pub(crate) later: Cell<bool>,
}

thread_local! {
    /// This thread's native call ([`Current`]). `const` and without `Drop`:
    /// always accessible.
    pub(crate) static CURRENT: Current = const {
        Current { local: Cell::new(ptr::null()), later: Cell::new(false) }
    };
}

thread_local! {
    /// Environments to wake once the native call running on this thread is
    /// over (see [`EnvShared::push_remote_later`]).
    static LATER: RefCell<Vec<Arc<EnvShared>>> = const { RefCell::new(Vec::new()) };
}

impl EnvShared {
    /// Queues `id` and wakes the environment's JS thread now, unless a wake
    /// is pending already.
    pub(crate) fn push_remote(&self, id: u64) {
        if self.push(id) {
            self.notify();
        }
    }

    /// Queues `id`; the wake, if one is needed, is made by [`flush_later`] at
    /// the end of the native call running on this thread. Only for a thread
    /// inside a native call (between `Enter::new` and its drop).
    pub(crate) fn push_remote_later(self: &Arc<Self>, id: u64) {
        if self.push(id) {
            let this = self.clone();
            if LATER.try_with(|l| l.borrow_mut().push(this)).is_err() {
                self.notify(); // the thread is exiting: wake now
            } else {
                // Enter's drop flushes the list (see `Current::later`).
                CURRENT.with(|c| c.later.set(true));
            }
        }
    }

    /// Queues `id`; whether the caller must wake the environment.
    fn push(&self, id: u64) -> bool {
        let mut r = lock(&self.remote);
        r.ids.push(id);
        !std::mem::replace(&mut r.notified, true)
    }

    /// Calls the threadsafe function (the JS thread then drains the list).
    fn notify(&self) {
        let t = lock(&self.tsfn);
        let ok = t.is_some_and(|t| {
            // SAFETY: `tsfn` is Some only between creation and its finalizer (or
            // our cleanup hook), both of which clear it under this same lock.
            let status = unsafe {
                sys::napi_call_threadsafe_function(
                    t.0,
                    ptr::null_mut(),
                    sys::ThreadsafeFunctionCallMode::nonblocking,
                )
            };
            status == sys::Status::napi_ok
        });
        drop(t);
        if !ok {
            // Being torn down (its cleanup hook gives back every request):
            // a later push may try again.
            lock(&self.remote).notified = false;
        }
    }

    /// Takes the queued ids; the next push wakes the environment again.
    pub(crate) fn take_remote(&self) -> Vec<u64> {
        let mut r = lock(&self.remote);
        r.notified = false;
        std::mem::take(&mut r.ids)
    }
}

/// Makes the wakes [`EnvShared::push_remote_later`] put off on this thread.
pub(crate) fn flush_later() {
    loop {
        let Some(env) = LATER.try_with(|l| l.borrow_mut().pop()).ok().flatten() else {
            return;
        };
        env.notify();
    }
}
