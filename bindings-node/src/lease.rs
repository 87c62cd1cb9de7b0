//! What a Redis outcome carries beyond its code (`extra`: a grant's token
//! and session, a failure's error), and lease loss: `leaseSignal` and the
//! releaser's `signal`.
//!
//! Every Redis grant is held by a session of its handle. The first grant of
//! each session makes JS ask for a watch on it (`watch(h, session)`): the
//! seam's `lease_watch` future, owned by the [`Sem`](crate::semaphore::Sem) (so that it, and the
//! session clone it holds, go with the semaphore) and known to the
//! environment by a number. Its waker only posts that number (with
//! [`WATCH_BIT`]) through the environment's remote list and threadsafe
//! function, like a grant from another thread; the JS thread polls the watch
//! again in `drain()`, and once it completed writes `(number, LEASE_LOST)`
//! with the error kept in the extras. No thread of its own, and nothing that
//! keeps the thread alive: a held permit keeps nothing alive.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};

use napi::sys;

use crate::codes::{LAST_GRANT, WATCH_BIT};
use crate::env::{EnvCtx, Extra};
use crate::handle::sem;
use crate::js_error::error;
use crate::raw::{args, count, double, lock, null, throw_internal, RawEnv, RawValue};
use crate::watch::Watch;

/// The least size at which an environment's `watches` is pruned.
pub(crate) const WATCH_PRUNE_MIN: usize = 64;

impl EnvCtx {
    /// Polls watch `id`; true once it completed (the error is in the extras).
    pub(crate) fn poll_watch(&self, id: u32) -> bool {
        let Some(sem) = self.watches.borrow().get(&id).and_then(Weak::upgrade) else {
            self.watches.borrow_mut().remove(&id);
            return false;
        };
        let lost = {
            let mut watches = lock(&sem.watches);
            let Some(i) = watches.iter().position(|w| w.id == id) else {
                return false;
            };
            let w = &mut watches[i];
            match Pin::new(&mut w.future).poll(&mut Context::from_waker(&w.waker)) {
                Poll::Ready(e) => {
                    watches.swap_remove(i);
                    e
                }
                Poll::Pending => return false,
            }
        };
        self.watches.borrow_mut().remove(&id);
        self.extras
            .borrow_mut()
            .insert(WATCH_BIT | u64::from(id), Extra::Failed(lost.into()));
        true
    }
}

// watch(h, session): number (the watch; its loss comes as LEASE_LOST) | Error
// (lost already) | null (not a Redis semaphore).
native!(js_watch, |env, ctx, argv: [2]| {
    // SAFETY: handle contract (see `sem`).
    let Some(s) = (unsafe { sem(env, argv[0]) }) else { return null(env) };
    let Some(session) = count(env, argv[1]) else { return null(env) };
    let Some(future) = s.core.lease_watch(session as u64) else { return null(env) };
    let id = ctx.next_watch.get();
    ctx.next_watch.set(id.wrapping_add(1));
    lock(&s.watches).push(Watch::new(id, Arc::downgrade(&ctx.shared), future));
    {
        let mut watches = ctx.watches.borrow_mut();
        if watches.len() >= ctx.watch_prune_at.get() {
            // The watches of semaphores collected since (their objects' JS
            // finalizers dropped the callbacks): amortised O(1) per watch.
            watches.retain(|_, w| w.strong_count() > 0);
            ctx.watch_prune_at
                .set((watches.len() * 2).max(WATCH_PRUNE_MIN));
        }
        watches.insert(id, Arc::downgrade(s));
    }
    if ctx.poll_watch(id) {
        return match ctx.extras.borrow_mut().remove(&(WATCH_BIT | u64::from(id))) {
            Some(Extra::Failed(e)) => error(env, &e, &format!("volt-sem: {e}")),
            _ => null(env),
        };
    }
    double(env, f64::from(id))
});

// unwatch(h): drops this environment's watches of the semaphore (its
// disconnect(): the session clones they hold must not keep it up).
native!(js_unwatch, |env, ctx, argv: [1]| {
    // SAFETY: handle contract (see `sem`).
    let Some(s) = (unsafe { sem(env, argv[0]) }) else { return null(env) };
    let me = Arc::downgrade(&ctx.shared);
    let gone: Vec<Watch> = {
        let mut watches = lock(&s.watches);
        let (gone, kept) = std::mem::take(&mut *watches)
            .into_iter()
            .partition(|w| w.env.ptr_eq(&me));
        *watches = kept;
        gone
    };
    for w in &gone {
        ctx.watches.borrow_mut().remove(&w.id);
    }
    drop(gone); // outside the lock: may drop a session clone
    null(env)
});

// extra(slot | -1, isWatch): [token, session] | Error | null. -1: the grant of
// the last acquire taken at once.
native!(js_extra, |env, ctx, argv: [2]| {
    let mut d = f64::NAN;
    // SAFETY: fails (leaving NaN) on a non-number.
    unsafe { sys::napi_get_value_double(env, argv[0], &mut d) };
    let mut watch = false;
    // SAFETY: fails on a non-boolean, leaving false.
    unsafe { sys::napi_get_value_bool(env, argv[1], &mut watch) };
    let key = if d < 0.0 {
        LAST_GRANT
    } else if watch {
        WATCH_BIT | d as u64
    } else {
        d as u64
    };
    match ctx.extras.borrow_mut().remove(&key) {
        Some(Extra::Grant { token, session }) => {
            let mut arr = std::ptr::null_mut();
            // SAFETY: plain value creation on the JS thread.
            unsafe {
                sys::napi_create_array_with_length(env, 2, &mut arr);
                sys::napi_set_element(env, arr, 0, double(env, token as f64));
                sys::napi_set_element(env, arr, 1, double(env, session as f64));
            }
            arr
        }
        Some(Extra::Failed(e)) => error(env, &e, &format!("volt-sem: {e}")),
        None => null(env),
    }
});
