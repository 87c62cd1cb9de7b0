//! `setTotal(n)` and `reopen()` of a named or Redis semaphore: changing a
//! shared limit online, off the JS thread like `census()` (a Redis call is a
//! round trip; a named one takes the segment's lock, and one path serves
//! both). index.js refuses them on an in-process semaphore before they get
//! here; the seam's `Unsupported` would say the same.

use napi::sys;
use volt_sem_backend::Error;

use crate::connect::off_loop;
use crate::env::EnvCtx;
use crate::js_error::throw;
use crate::offloop::Done;
use crate::raw::{args, count, throw_internal};
use crate::raw::{RawEnv, RawValue};

// setTotal(h, refd, n): Promise<null>. index.js checked that `n` is an
// integer; its range (1 to the backend's maximum) is the backend's to check.
native!(js_set_total, |env, _ctx, argv: [3]| {
    let Some(n) = count(env, argv[2]) else {
        return throw(env, Error::InvalidPermits, "setTotal()");
    };
    off_loop(env, &argv, move |s| match s.core.set_total(n) {
        Ok(()) => Done::Unit,
        Err(e) => Done::Failed(e, "volt-sem: setTotal()"),
    })
});

// reopen(h, refd): Promise<null>. Undoes a close, for everyone.
native!(js_reopen, |env, _ctx, argv: [2]| {
    off_loop(env, &argv, |s| match s.core.reopen() {
        Ok(()) => Done::Unit,
        Err(e) => Done::Failed(e, "volt-sem: reopen()"),
    })
});
