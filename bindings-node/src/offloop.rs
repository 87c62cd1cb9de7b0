//! Calls that wait for the network, run off the JS thread: each on a thread
//! of its own, answered through a promise.
//!
//! The seam's acquire, release and cancel never wait for Redis (its agent
//! thread does), but `connect`, `census`, `close`, `disconnect`,
//! `try_acquire` and `delete_redis` take one round trip, bounded by the
//! connect or command timeout. The event loop must not wait for them, so
//! [`spawn`] runs one on a short-lived plain thread and resolves a promise
//! with its [`Done`] through a threadsafe function made for that call. Not
//! the libuv pool: its four threads would be blocked for a whole timeout
//! while Redis is out of reach, starving `fs` and `dns`; and not a pool of
//! our own: these calls are rare (one per connect, census, disconnect).
//! While the call is in flight its threadsafe function keeps the thread
//! alive, unless the semaphore was `unref()`'d.

use std::ffi::c_void;
use std::ptr;
use std::sync::Arc;

use napi::sys;
use volt_sem_backend::redis::Census;
use volt_sem_backend::{Error, Grant};

use crate::handle::handle;
use crate::js_error::error;
use crate::raw::{boolean, double, internal_error, null, panic_text};
use crate::raw::{RawEnv, RawValue};
use crate::semaphore::Sem;

/// The outcome of an off-loop call, turned into a JS value on the JS thread.
pub(crate) enum Done {
    Unit,
    /// `connect`: the new semaphore (an External of it).
    Connected(Arc<Sem>),
    Census(Census),
    /// `inspect`: who holds and who waits.
    Inspected(volt_sem_backend::inspect::Inspection),
    /// `tryAcquire`: the grant of `n` permits (`[token, session]`), or
    /// `None` when they are not available now (`null`).
    Tried(Option<(Grant, Arc<Sem>, usize)>),
    /// The call failed: rejects with the error (`what` in its message).
    Failed(Error, &'static str),
    /// The call panicked (a bug), saying this: rejects with an
    /// `ERR_VOLT_INTERNAL` error, as a panic in a native call throws one.
    Panicked(String),
}

struct Call {
    deferred: sys::napi_deferred,
}

/// Runs `job` on a thread of its own; returns the promise of its outcome.
/// `refd`: whether the call keeps the thread alive meanwhile.
pub(crate) fn spawn(
    env: RawEnv,
    refd: bool,
    job: impl FnOnce() -> Done + Send + 'static,
) -> RawValue {
    let mut deferred = ptr::null_mut();
    let mut promise = ptr::null_mut();
    // SAFETY: plain Node-API call on the JS thread.
    if unsafe { sys::napi_create_promise(env, &mut deferred, &mut promise) } != sys::Status::napi_ok
    {
        return null(env);
    }
    let call = Box::into_raw(Box::new(Call { deferred }));
    let mut name = ptr::null_mut();
    let mut tsfn = ptr::null_mut();
    // SAFETY: no JS function (call_js does the work); `call` is freed by the
    // finalizer, which runs once the thread released the tsfn (or at teardown).
    let status = unsafe {
        sys::napi_create_string_utf8(env, c"volt-sem off-loop call".as_ptr(), -1, &mut name);
        sys::napi_create_threadsafe_function(
            env,
            ptr::null_mut(),
            ptr::null_mut(),
            name,
            0,
            1,
            call.cast(),
            Some(finalize),
            call.cast(),
            Some(call_js),
            &mut tsfn,
        )
    };
    if status != sys::Status::napi_ok {
        // SAFETY: not handed to Node: still ours; the promise is settled here.
        drop(unsafe { Box::from_raw(call) });
        settle(
            env,
            deferred,
            Done::Failed(
                Error::Connection("cannot make a callback".into()),
                "volt-sem",
            ),
        );
        return promise;
    }
    if !refd {
        // SAFETY: on the JS thread; the tsfn was just created.
        unsafe { sys::napi_unref_threadsafe_function(env, tsfn) };
    }
    struct Tsfn(sys::napi_threadsafe_function);
    // SAFETY: a threadsafe function is meant to be called from any thread.
    unsafe impl Send for Tsfn {}
    let t = Tsfn(tsfn);
    let spawned = std::thread::Builder::new()
        .name("volt-sem off-loop call".into())
        .spawn(move || {
            let t = t;
            // A panic must not end this thread before it posts an outcome
            // and releases the tsfn: the promise would never settle, and a
            // ref'd tsfn would keep the JS thread alive for ever.
            let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job))
                .unwrap_or_else(|p| Done::Panicked(panic_text(&*p)));
            let done = Box::into_raw(Box::new(done));
            // SAFETY: the tsfn is alive until this thread releases it below;
            // a refused call (teardown) leaves `done` to us.
            unsafe {
                let status = sys::napi_call_threadsafe_function(
                    t.0,
                    done.cast(),
                    sys::ThreadsafeFunctionCallMode::blocking,
                );
                if status != sys::Status::napi_ok {
                    // (Dropping a semaphore may run its disconnect: guarded
                    // too, so the release below always happens.)
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        drop(Box::from_raw(done))
                    }));
                }
                sys::napi_release_threadsafe_function(
                    t.0,
                    sys::ThreadsafeFunctionReleaseMode::release,
                );
            }
        });
    if let Err(e) = spawned {
        // The closure (and its tsfn handle) came back in the error: release
        // the tsfn here, and settle the promise now.
        drop(e);
        // SAFETY: on the JS thread; nobody else holds this tsfn.
        unsafe {
            sys::napi_release_threadsafe_function(tsfn, sys::ThreadsafeFunctionReleaseMode::release)
        };
        settle(
            env,
            deferred,
            Done::Failed(
                Error::Connection("cannot start a thread".into()),
                "volt-sem",
            ),
        );
        // The finalizer must not settle it again.
        // SAFETY: `call` lives until the finalizer.
        unsafe { (*call).deferred = ptr::null_mut() };
    }
    promise
}

unsafe extern "C" fn call_js(
    env: RawEnv,
    _js_cb: RawValue,
    context: *mut c_void,
    data: *mut c_void,
) {
    // SAFETY: `data` is the Box<Done> posted by the call's thread (once).
    let done = unsafe { Box::from_raw(data as *mut Done) };
    if env.is_null() {
        return; // the environment is going: nobody awaits it (the outcome drops)
    }
    // SAFETY: `context` is the Call, alive until the finalizer.
    let call = unsafe { &mut *(context as *mut Call) };
    let deferred = std::mem::replace(&mut call.deferred, ptr::null_mut());
    if deferred.is_null() {
        return;
    }
    // Never unwind into Node.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        settle(env, deferred, *done)
    }));
}

unsafe extern "C" fn finalize(_env: RawEnv, data: *mut c_void, _hint: *mut c_void) {
    // SAFETY: `data` is the Box<Call> leaked in `spawn`.
    drop(unsafe { Box::from_raw(data as *mut Call) });
}

/// Resolves (or rejects) `deferred` with the JS value of `done`.
fn settle(env: RawEnv, deferred: sys::napi_deferred, done: Done) {
    let (ok, value) = match done {
        Done::Unit => (true, null(env)),
        Done::Connected(sem) => (true, handle(env, sem)),
        Done::Census(c) => (true, census(env, &c)),
        Done::Inspected(i) => (true, crate::inspect::inspection(env, &i)),
        Done::Tried(None) => (true, null(env)),
        Done::Tried(Some((g, sem, n))) => {
            sem.add_held(n);
            (
                true,
                pair(env, g.token().unwrap_or(0) as f64, g.session() as f64),
            )
        }
        Done::Failed(e, what) => (false, error(env, &e, &format!("{what}: {e}"))),
        Done::Panicked(what) => (false, internal_error(env, &what)),
    };
    // SAFETY: on the JS thread of `deferred`, which is settled once.
    unsafe {
        if ok {
            sys::napi_resolve_deferred(env, deferred, value);
        } else {
            sys::napi_reject_deferred(env, deferred, value);
        }
    }
}

/// `[a, b]`
pub(crate) fn pair(env: RawEnv, a: f64, b: f64) -> RawValue {
    let mut arr = ptr::null_mut();
    // SAFETY: plain value creation on the JS thread.
    unsafe {
        sys::napi_create_array_with_length(env, 2, &mut arr);
        sys::napi_set_element(env, arr, 0, double(env, a));
        sys::napi_set_element(env, arr, 1, double(env, b));
    }
    arr
}

fn census(env: RawEnv, c: &Census) -> RawValue {
    let mut obj = ptr::null_mut();
    let fields = [
        (c"total", c.total as f64),
        (c"available", c.available as f64),
        (c"held", c.held as f64),
        (c"partial", c.partial as f64),
        (c"queued", c.queued as f64),
        (c"sessions", c.sessions as f64),
        (c"lastToken", c.last_token as f64),
        (c"debt", c.debt as f64),
    ];
    // SAFETY: plain value creation on the JS thread.
    unsafe {
        sys::napi_create_object(env, &mut obj);
        for (name, v) in fields {
            sys::napi_set_named_property(env, obj, name.as_ptr(), double(env, v));
        }
        sys::napi_set_named_property(env, obj, c"closed".as_ptr(), boolean(env, c.closed));
    }
    obj
}
