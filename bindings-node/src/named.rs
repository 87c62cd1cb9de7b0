//! `Semaphore.open(name, permits, options)` and `Semaphore.unlink(name)`: the
//! named semaphore shared by the processes of this machine (the
//! `volt-sem-shm` crate; Linux), and the queries of named and Redis semaphores
//! (`total`, `name`, `processHeld`).
//!
//! A named semaphore is a [`Sem`] like any other, whose core (the seam's
//! `volt_sem_backend::Semaphore`) is the process's handle on the segment. Opening the same name again (in this
//! thread, a worker, or another process) gives another handle on the same
//! permits; in one process every handle shares one process record, so
//! permits acquired through one JS object may be released through another
//! (in any thread), and whatever the process still holds when its last
//! handle goes (every JS object collected, or the process exiting or
//! killed) goes back to the others.
//!
//! # Errors
//!
//! Every failure the OS, another process or a file under `/dev/shm` can cause
//! is thrown as an `Error` with a stable `code` (see
//! [`code_of`](crate::js_error::code_of)); counts out
//! of range are `RangeError`s (`ERR_OUT_OF_RANGE`) as for `new Semaphore`.

use napi::sys;
use std::ptr;
use volt_sem_backend::{Error, OpenOptions, Semaphore as Core};

use crate::env::EnvCtx;
use crate::handle::{handle, sem};
use crate::js_error::throw;
use crate::raw::{
    args, boolean, count, double, null, string_arg, throw_internal, RawEnv, RawValue,
};
use crate::semaphore::Sem;

// open() flags, as index.js passes them.
const CREATE_ONLY: u32 = 1;
const ATTACH_ONLY: u32 = 2;
const ACCEPT_FOREIGN_OWNER: u32 = 4;
const RESIZE: u32 = 8;

fn u32_arg(env: RawEnv, v: RawValue) -> u32 {
    let mut out = 0u32;
    // SAFETY: fails on a non-number, leaving 0.
    unsafe { sys::napi_get_value_uint32(env, v, &mut out) };
    out
}

// open(name, permits, flags, mode, label): External | throws. index.js checked
// the argument types (label: a string, or null for the default); the name's
// and the label's content and the permits' range are checked here (by
// volt-sem-shm), so every language refuses the same names and labels.
native!(js_open, |env, _ctx, argv: [5]| {
    let Some(name) = string_arg(env, argv[0]) else {
        return throw(env, Error::InvalidName, "Semaphore.open(): the name must be a string");
    };
    let Some(permits) = count(env, argv[1]) else {
        return throw(env, Error::InvalidPermits, "Semaphore.open()");
    };
    let flags = u32_arg(env, argv[2]);
    let mut options = OpenOptions::new()
        .mode(u32_arg(env, argv[3]))
        .accept_foreign_owner(flags & ACCEPT_FOREIGN_OWNER != 0)
        .resize(flags & RESIZE != 0);
    if flags & CREATE_ONLY != 0 {
        options = options.create_only();
    } else if flags & ATTACH_ONLY != 0 {
        options = options.attach_only();
    }
    if let Some(label) = string_arg(env, argv[4]) {
        options = options.label(label);
    }
    // Counting what it holds: its disconnect() gives that back (the seam's
    // per-handle rule, as in C and Python).
    let core = match Core::open(&name, permits, options) {
        Ok(s) => s.counting_held(),
        Err(e) => return throw(env, e, &format!("Semaphore.open({name:?}, {permits})")),
    };
    // Shared (Sem::new): its grants come from the process's doorbell thread,
    // and other processes release: waiters keep their thread alive, and grants
    // are delivered with confirmation, like a share()d semaphore's.
    handle(env, Sem::new(core, Some(name.into())))
});

// unlink(name): undefined | throws. Removes the name only.
native!(js_unlink, |env, _ctx, argv: [1]| {
    let Some(name) = string_arg(env, argv[0]) else {
        return throw(env, Error::InvalidName, "Semaphore.unlink(): the name must be a string");
    };
    if let Err(e) = volt_sem_backend::unlink(&name) {
        return throw(env, e, &format!("Semaphore.unlink({name:?})"));
    }
    null(env)
});

// disconnect(h): undefined | throws. Ends a named semaphore's handle (the
// seam's disconnect; index.js refuses a local one first, and a Redis one
// takes disconnectAsync): its queued requests fail (their wakes deliver
// `Disconnected`, in every thread that attach()ed it), what it holds goes
// back, every later call of it fails. Idempotent.
native!(js_disconnect, |env, _ctx, argv: [1]| {
    // SAFETY: handle contract (see `sem`).
    let Some(s) = (unsafe { sem(env, argv[0]) }) else { return null(env) };
    if let Err(e) = s.core.disconnect() {
        return throw(env, e, "disconnect()");
    }
    null(env)
});

// isDisconnected(h): whether disconnect() ended this handle (any of its
// objects, in any thread).
native!(js_is_disconnected, |env, _ctx, argv: [1]| {
    // SAFETY: handle contract (see `sem`).
    let Some(s) = (unsafe { sem(env, argv[0]) }) else { return null(env) };
    boolean(env, s.core.is_disconnected())
});

// total(h): the total of a named or Redis semaphore (null for an in-process one).
native!(js_total, |env, _ctx, argv: [1]| {
    // SAFETY: handle contract (see `sem`).
    let Some(s) = (unsafe { sem(env, argv[0]) }) else { return null(env) };
    match s.core.total_permits() {
        Some(total) => double(env, total as f64),
        None => null(env),
    }
});

// name(h): the name of a named or Redis semaphore (null for an in-process one).
native!(js_name, |env, _ctx, argv: [1]| {
    // SAFETY: handle contract (see `sem`).
    let Some(s) = (unsafe { sem(env, argv[0]) }) else { return null(env) };
    let Some(name) = s.name.as_deref() else { return null(env) };
    let mut out = ptr::null_mut();
    // SAFETY: plain value creation on the JS thread; `name` is UTF-8 of that length.
    unsafe { sys::napi_create_string_utf8(env, name.as_ptr().cast(), name.len() as isize, &mut out) };
    out
});

// processHeld(h): what this process holds on a named semaphore, all its
// handles and threads; what this handle's session holds on a Redis one, as it
// counts them (no round trip); null for an in-process one.
native!(js_process_held, |env, _ctx, argv: [1]| {
    // SAFETY: handle contract (see `sem`).
    let Some(s) = (unsafe { sem(env, argv[0]) }) else { return null(env) };
    if let Some(r) = s.core.as_redis() {
        return double(env, r.held_permits() as f64);
    }
    match s.core.as_shared().map(|n| n.held_permits()) {
        Some(Ok(h)) => double(env, h as f64),
        Some(Err(e)) => throw(env, e.into(), "heldPermits"),
        None => null(env),
    }
});
