//! The semaphore operations `index.js` calls: create, acquire (taken at once,
//! or queued in a slot), tryAcquire, release, cancel, close, and the queries
//! (available, isClosed, held, debt, pending).

use std::ffi::c_void;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::time::Instant;
use volt_sem_backend::RawSemaphore;

use napi::sys;
use volt_sem::RawAcquire;
use volt_sem_backend::{Error, Semaphore as Core};

use crate::codes::{
    BAD_ARGS, BAD_COUNT, CLOSED, DEFERRED, DEFERRED_MAX_MS, GRANTED_HELD, KEPT, KEPT_HELD,
    LAST_GRANT, MAX_JS, NO_PERMITS, OK, RELEASE_OVERFLOW, SLOT_BASE,
};
use crate::env::{Enter, EnvCtx, Extra};
use crate::handle::{handle, handle_of, sem};
use crate::js_error::{error, throw, throw_unsupported};
use crate::raw::{args, boolean, count, double, int, key_arg, null, throw_internal};
use crate::raw::{RawEnv, RawValue};
use crate::removal::release_paying_with;
use crate::removal::Expired;
use crate::semaphore::{Node, Sem};
use crate::wake::wake;

/// The permit count of argument `v`, 1 when the caller left it out (`argc`
/// arguments passed): index.js passes no count for one permit, which saves
/// reading a JS number (a Node-API call) on the common path.
fn count_or_1(env: RawEnv, v: RawValue, argc: usize) -> Option<usize> {
    if argc < 2 {
        return Some(1);
    }
    count(env, v)
}

/// Returns `code` through the buffer's result cell (`init`), making no JS
/// number (a Node-API call and a V8 allocation): JS gets `undefined` and
/// reads the cell. Before `init` (nobody reads the cell), as a number.
fn result(env: RawEnv, ctx: &EnvCtx, code: i32) -> RawValue {
    if ctx.write_result(code) {
        std::ptr::null_mut() // `undefined`
    } else {
        int(env, code)
    }
}

// create(permits): External | null
native!(js_create, |env, _ctx, argv: [1]| {
    let Some(permits) = count(env, argv[0]) else { return null(env) };
    let Some(core) = Core::local(permits) else { return null(env) };
    handle(env, Sem::new(core, None))
});

// tryAcquire(h, n): OK | NO_PERMITS | CLOSED | BAD_COUNT | throws (named)
native!(js_try_acquire, |env, _ctx, argv: [2]| {
    // SAFETY: handle contract (see `sem`).
    let Some(s) = (unsafe { sem(env, argv[0]) }) else { return int(env, BAD_ARGS) };
    let Some(n) = count(env, argv[1]) else { return int(env, BAD_COUNT) };
    let code = match s.core.try_acquire(n) {
        Ok(_) => {
            s.add_held(n);
            OK
        }
        Err(Error::NoPermits) => NO_PERMITS,
        Err(Error::Closed) => CLOSED,
        Err(Error::TooManyPermits) => BAD_COUNT,
        Err(e) => return throw(env, e, "tryAcquire()"),
    };
    int(env, code)
});

// acquire(h, n = 1): OK (taken) | CLOSED | BAD_COUNT | SLOT_BASE + slot
// (queued: the request's generation is in the buffer's generation cell, see
// `init`) | throws (named: queue full, ...; Redis: a lost session, ...). The
// code is returned in the buffer's result cell (`result`: undefined is
// returned then). A Redis grant taken at once leaves its token in the extras
// (`LAST_GRANT`).
native!(js_acquire, |env, ctx, argv: [2], argc| {
    // SAFETY: handle contract (see `sem`).
    let Some(h) = (unsafe { handle_of(env, argv[0]) }) else { return result(env, ctx, BAD_ARGS) };
    let s = &h.sem;
    let Some(n) = count_or_1(env, argv[1], argc) else { return result(env, ctx, BAD_COUNT) };
    // A Redis try is a round trip: straight to the queue, which never waits
    // for the network (an acquire of 0 too: whether the semaphore is closed
    // comes back through the callback).
    let redis = s.is_redis();
    // With anyone queued on an in-process semaphore nothing can be taken at
    // once (FIFO: its counter is 0): straight to the queue, whose acquire
    // decides again on the fresh word (an acquire that queues on a busy
    // semaphore does not try twice).
    let queued = s
        .core
        .as_local()
        .is_some_and(|c| c.state_word().load(Ordering::Relaxed) & volt_sem::Semaphore::STATE_QUEUED != 0);
    if !redis && !queued {
        match s.core.try_acquire(n) {
            Ok(_) => {
                s.add_held(n);
                return result(env, ctx, OK);
            }
            Err(Error::Closed) => return result(env, ctx, CLOSED),
            Err(Error::TooManyPermits) => return result(env, ctx, BAD_COUNT),
            Err(Error::NoPermits) => {}
            Err(e) => return throw(env, e, "acquire()"),
        }
    }
    let (slot, node) = ctx.take_slot(h, n);
    // SAFETY: the node is boxed in a slot that lives (unmoved) as long as the env.
    let node = unsafe { Pin::new_unchecked(&*node) };
    // SAFETY: the waiter is idle (its slot was free); after Pending the node stays
    // pinned in its slot, and the slot stays reserved until finish_raw (drain,
    // cancel or cleanup) returned.
    let r = unsafe { s.core.acquire_raw(node.waiter(), n, wake, &*node as *const Node as *mut c_void) };
    let code = match r {
        Ok(RawAcquire::Pending) => {
            ctx.activate(slot);
            ctx.write_gen((node.key.get() >> 32) as u32);
            // A small integer (no heap number made) unless there are ~2^31 slots.
            return match i32::try_from(slot).ok().and_then(|s| s.checked_add(SLOT_BASE)) {
                Some(code) => result(env, ctx, code),
                None => double(env, SLOT_BASE as f64 + f64::from(slot)),
            };
        }
        Ok(RawAcquire::Ready) => {
            s.add_held(n);
            if redis {
                let (token, session) = (node.waiter.token().unwrap_or(0), node.waiter.session());
                ctx.extras.borrow_mut().insert(LAST_GRANT, Extra::Grant { token, session });
            }
            OK
        }
        Err(Error::Closed) => CLOSED,
        Err(Error::TooManyPermits) => BAD_COUNT,
        Err(e) => {
            ctx.release_slot(slot);
            return throw(env, e, "acquire()");
        }
    };
    ctx.release_slot(slot);
    result(env, ctx, code)
});

// release(h, n = 1, adding?): k >= 0 outcomes written | RELEASE_OVERFLOW |
// BAD_COUNT(-3) | throws (named: more than this process holds, or adding).
// Returned as acquire's code is (`result`).
native!(js_release, |env, ctx, argv: [3], argc| {
    // SAFETY: handle contract (see `sem`).
    let Some(s) = (unsafe { sem(env, argv[0]) }) else { return result(env, ctx, BAD_ARGS) };
    let Some(n) = count_or_1(env, argv[1], argc) else { return result(env, ctx, -BAD_COUNT) };
    // A third argument `true` (addPermits) grows the total: no held permits back.
    // (release() passes at most two arguments: no call to read an `undefined`.)
    let mut adding = false;
    if argc > 2 {
        // SAFETY: fails on a non-boolean (undefined), leaving `adding` false.
        unsafe { sys::napi_get_value_bool(env, argv[2], &mut adding) };
    }
    if adding && s.core.total_permits().is_some() {
        return throw_unsupported(env, "addPermits() on a named or Redis semaphore (its total is fixed)");
    }
    // The core's limit is far above 2^53; keep JS counts exact. (Racy against a
    // concurrent release on another thread; the core's own check is exact.)
    // A fixed total (named, Redis) never overflows; Redis's count is a round trip.
    if s.core.total_permits().is_none() && s.core.available_permits() > MAX_JS - n {
        return result(env, ctx, RELEASE_OVERFLOW);
    }
    ctx.confirm_all_on(s);
    let enter = Enter::new(ctx);
    // A local semaphore's waiters of this environment are claimed by the
    // hand-off (`EnvCtx::release_local`).
    let released = release_paying_with(s, n, |core, n| match core.as_local() {
        Some(local) => ctx.release_local(local, n),
        None => core.release(n),
    });
    match released {
        Ok(()) => {}
        Err(Error::Overflow { .. }) => return result(env, ctx, RELEASE_OVERFLOW),
        Err(e) => {
            // Nothing was released, so nothing was woken in this call (the
            // confirmations above release nothing, and a named semaphore's
            // waiters are woken on its doorbell thread anyway): no outcome
            // is left to settle; leftovers of earlier calls stay in `ready`.
            drop(enter);
            if let (true, Error::NotHeld { held }) = (s.is_redis(), &e) {
                // The backend speaks of a process (a named semaphore's permits
                // are the process's); a Redis object's are its own session's.
                let msg = format!(
                    "volt-sem: release(): released more permits than this handle holds ({held}); \
                     permits are released through the Semaphore object that acquired them"
                );
                // SAFETY: throws the error just made, on the JS thread.
                unsafe { sys::napi_throw(env, error(env, &e, &msg)) };
                return std::ptr::null_mut();
            }
            return throw(env, e, "release()");
        }
    }
    if !adding {
        s.sub_held(n);
    }
    let k = ctx.settle_local();
    drop(enter);
    result(env, ctx, k as i32)
});

// cancel(key): k >= 0 outcomes written (the cancelled request is not among them)
native!(js_cancel, |env, ctx, argv: [1]| {
    let Some(key) = key_arg(env, argv[0]) else { return int(env, BAD_ARGS) };
    let enter = Enter::new(ctx);
    if let Some((slot, _)) = ctx.active(key) {
        ctx.cancel_slot(slot);
    }
    let k = ctx.settle_local();
    drop(enter);
    int(env, k as i32)
});

// expire(key, last): the `timeout` of request `key` passed (`last`: its
// Redis grace too). DEFERRED - ms (<= -1): a Redis request whose acquire
// script has not answered yet, left to that answer for `ms` more
// milliseconds, the rest of its grace (it settles as any wake does: granted,
// or TIMED_OUT; else JS calls again with `last` then); KEPT + k or
// KEPT_HELD + k: granted before the expiry could cancel it, the caller's
// grant (GRANTED or GRANTED_HELD), k other outcomes written; else, as
// cancel, k >= 0 outcomes written (the cancelled request is not among them).
native!(js_expire, |env, ctx, argv: [2]| {
    let Some(key) = key_arg(env, argv[0]) else { return int(env, BAD_ARGS) };
    let mut last = false;
    // SAFETY: fails on a non-boolean (undefined), leaving `last` false.
    unsafe { sys::napi_get_value_bool(env, argv[1], &mut last) };
    let enter = Enter::new(ctx);
    let expired = match ctx.active(key) {
        Some((slot, _)) => ctx.expire_slot(slot, last),
        None => Expired::Ended,
    };
    let k = ctx.settle_local();
    drop(enter);
    match expired {
        Expired::Deferred(until) => {
            // Nothing ran: no outcome was written.
            debug_assert_eq!(k, 0);
            let left = until.saturating_duration_since(Instant::now());
            // Rounded up: the timer fires at or after the grace's end.
            let ms = left.as_nanos().div_ceil(1_000_000);
            let ms = i32::try_from(ms).unwrap_or(DEFERRED_MAX_MS).min(DEFERRED_MAX_MS);
            int(env, DEFERRED - ms)
        }
        Expired::Kept(code) => {
            let base = if code == GRANTED_HELD { KEPT_HELD } else { KEPT };
            int(env, base + k as i32)
        }
        Expired::Ended => int(env, k as i32),
    }
});

// close(h): k >= 0 outcomes written | throws (a disconnected named handle)
native!(js_close, |env, ctx, argv: [1]| {
    // SAFETY: handle contract (see `sem`).
    let Some(s) = (unsafe { sem(env, argv[0]) }) else { return int(env, BAD_ARGS) };
    let enter = Enter::new(ctx);
    // Only a named semaphore's close can fail: a disconnected handle's is
    // refused (closeForEveryone() rejects, as its other calls); a corrupt
    // segment or a handle used after fork cannot close it anyway.
    if let Err(e @ Error::Disconnected) = s.core.close() {
        drop(enter);
        return throw(env, e, "closeForEveryone()");
    }
    let k = ctx.settle_local();
    drop(enter);
    int(env, k as i32)
});

// held(h): permits acquired and not released, all threads.
native!(js_held, |env, _ctx, argv: [1]| {
    // SAFETY: handle contract (see `sem`).
    let Some(s) = (unsafe { sem(env, argv[0]) }) else { return null(env) };
    double(env, s.held.load(Ordering::Relaxed) as f64)
});

// debt(h): permits removePermits still has to take out.
native!(js_debt, |env, _ctx, argv: [1]| {
    // SAFETY: handle contract (see `sem`).
    let Some(s) = (unsafe { sem(env, argv[0]) }) else { return null(env) };
    double(env, s.debt.load(Ordering::SeqCst) as f64)
});

// pending(h): queued requests on this semaphore, all threads.
native!(js_pending, |env, _ctx, argv: [1]| {
    // SAFETY: handle contract (see `sem`).
    let Some(s) = (unsafe { sem(env, argv[0]) }) else { return null(env) };
    double(env, s.queued.load(Ordering::Relaxed) as f64)
});

// available(h): number
native!(js_available, |env, _ctx, argv: [1]| {
    // SAFETY: handle contract (see `sem`).
    let Some(s) = (unsafe { sem(env, argv[0]) }) else { return null(env) };
    double(env, s.core.available_permits() as f64)
});

// isClosed(h): boolean
native!(js_is_closed, |env, _ctx, argv: [1]| {
    // SAFETY: handle contract (see `sem`).
    let Some(s) = (unsafe { sem(env, argv[0]) }) else { return null(env) };
    boolean(env, s.core.is_closed())
});
