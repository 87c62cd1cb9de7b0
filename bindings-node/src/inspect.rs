//! The JS value of an inspection (`Inspection` in index.d.ts): who holds a
//! semaphore's permits and who waits, as a plain object. `inspect(h, refd)`
//! itself runs off the JS thread with the other such calls (`connect.rs`).

use std::ptr;

use volt_sem_backend::inspect::{Holder, Inspection, Process, QueuedWaiter};

use napi::sys;

use crate::raw::{boolean, double, null};
use crate::raw::{RawEnv, RawValue};

/// The JS value of an inspection: durations in seconds, as in every
/// language (`null` where the backend has none).
pub(crate) fn inspection(env: RawEnv, i: &Inspection) -> RawValue {
    let obj = object(env);
    set(env, obj, c"total", double(env, i.total as f64));
    set(env, obj, c"available", double(env, i.available as f64));
    set(env, obj, c"closed", boolean(env, i.closed));
    let holders = array(env, i.holders.iter().map(|h| holder(env, h)));
    set(env, obj, c"holders", holders);
    let waiters = array(env, i.waiters.iter().map(|w| waiter(env, w)));
    set(env, obj, c"waiters", waiters);
    obj
}

/// A local semaphore's inspection with `held` (the binding's count,
/// `heldPermits`) as its one holder's permits. The core derives its holder
/// from its nominal total, which this binding's `addPermits` (a release) and
/// `removePermits` (a take, then a debt paid from releases) never change: it
/// showed the permits an `addPermits` let in as nobody's, and those a
/// `removePermits` took out as held. Its total is what the snapshot counts.
pub(crate) fn held_as_counted(i: Inspection, held: usize) -> Inspection {
    let total = i
        .available
        .saturating_add(held)
        .saturating_add(i.granted_to_waiters());
    let holders = if held > 0 {
        vec![Holder::new(&Process::this(None), held, None)]
    } else {
        Vec::new()
    };
    Inspection::new(total, i.available, i.closed, holders, i.waiters)
}

fn holder(env: RawEnv, h: &Holder) -> RawValue {
    let obj = who(env, &h.label, &h.host, h.pid);
    set(env, obj, c"permits", double(env, h.permits as f64));
    let secs =
        |d: Option<std::time::Duration>| d.map_or(null(env), |d| double(env, d.as_secs_f64()));
    set(env, obj, c"heldFor", secs(h.held_for));
    set(env, obj, c"leaseRemaining", secs(h.lease_remaining));
    let token = h.token.map_or(null(env), |t| double(env, t as f64));
    set(env, obj, c"token", token);
    obj
}

fn waiter(env: RawEnv, w: &QueuedWaiter) -> RawValue {
    let obj = who(env, &w.label, &w.host, w.pid);
    set(env, obj, c"permits", double(env, w.permits as f64));
    set(env, obj, c"granted", double(env, w.granted as f64));
    set(
        env,
        obj,
        c"waitingFor",
        double(env, w.waiting_for.as_secs_f64()),
    );
    set(env, obj, c"position", double(env, w.position as f64));
    obj
}

/// `{ label, host, pid }`
fn who(env: RawEnv, label: &str, host: &str, pid: u32) -> RawValue {
    let obj = object(env);
    set(env, obj, c"label", string(env, label));
    set(env, obj, c"host", string(env, host));
    set(env, obj, c"pid", double(env, f64::from(pid)));
    obj
}

fn object(env: RawEnv) -> RawValue {
    let mut obj = ptr::null_mut();
    // SAFETY: plain value creation on the JS thread.
    unsafe { sys::napi_create_object(env, &mut obj) };
    obj
}

fn array(env: RawEnv, items: impl ExactSizeIterator<Item = RawValue>) -> RawValue {
    let mut arr = ptr::null_mut();
    // SAFETY: plain value creation on the JS thread.
    unsafe {
        sys::napi_create_array_with_length(env, items.len(), &mut arr);
        for (k, v) in items.enumerate() {
            sys::napi_set_element(env, arr, k as u32, v);
        }
    }
    arr
}

fn set(env: RawEnv, obj: RawValue, name: &std::ffi::CStr, v: RawValue) {
    // SAFETY: plain property set on the JS thread; `name` is NUL-terminated.
    unsafe { sys::napi_set_named_property(env, obj, name.as_ptr(), v) };
}

fn string(env: RawEnv, s: &str) -> RawValue {
    let mut out = ptr::null_mut();
    // SAFETY: `s` is valid UTF-8 of `s.len()` bytes, on the JS thread.
    unsafe { sys::napi_create_string_utf8(env, s.as_ptr().cast(), s.len() as isize, &mut out) };
    out
}
