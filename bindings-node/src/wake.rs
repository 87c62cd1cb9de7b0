//! The wake path: how a grant completed on any thread reaches its promise.
//!
//! # Wake path
//!
//! A pending acquire is a [`Node`] (a boxed, pinned [`Waiter`] plus its id) kept
//! in its environment's map until `finish_raw` consumed it. Its wake callback
//! runs on whichever thread completed the grant:
//!
//! * **Same environment, inside one of its own native calls** (`release`,
//!   `cancel`, `close`, which set the thread-local [`CURRENT`]): the id goes into
//!   the environment's [`local`] list (the node's `owner`). Before that call returns it finishes the
//!   woken nodes and writes `(id, outcome)` pairs into the environment's shared
//!   `Uint32Array`; the call returns how many, and the JS layer settles those
//!   promises right away, still inside the `release()` that caused them.
//!   A `release` of a local semaphore does not even call back this
//!   environment's waiters: the core's hand-off offers each waiter it serves
//!   to the claim of [`EnvCtx::release_local`] (under the queue lock), which
//!   takes this environment's own, puts their ids into the same `local` list
//!   in the same order, and leaves them `GRANTED`, with no callback and no
//!   trip through the thread's callback trampoline (`release_claiming`).
//! * **Anywhere else** (another worker, a foreign thread): the id goes into the
//!   environment's mutex-guarded remote list, and the environment's single
//!   threadsafe function is poked: at most once until `drain()` took the list,
//!   and, when the wake comes from a native call of another environment (a
//!   `release` on another worker), only once that call is over (`# One wake
//!   per batch` in [`crate::remote`]). Its JS callback calls `drain()`, which
//!   finishes every node of the list the same way.
//!
//! The threadsafe function is referenced only while the environment has pending
//! waiters on a *shared* semaphore (one that `share()` or `attach()` touched):
//! only then can a wake come from elsewhere, so only then must the thread stay
//! alive. A waiter on a private semaphore cannot be served by anyone but its own
//! thread, and must not keep it alive.
//!
//! [`Node`]: crate::semaphore::Node
//! [`Waiter`]: volt_sem::Waiter
//! [`CURRENT`]: crate::remote::CURRENT
//! [`local`]: crate::env::EnvCtx::local

use std::ffi::c_void;
use std::pin::Pin;
use std::ptr;
use std::sync::atomic::{fence, Ordering};
use std::sync::Arc;

use napi::sys;
use volt_sem_backend::Finish;

use crate::codes::{BAD_ARGS, FAILED, LEASE_LOST, LOST, OK, TIMED_OUT, WATCH_BIT, WOKEN_CLOSED};
use crate::env::{EnvCtx, Extra};
use crate::raw::{args, int, lock, throw_internal, RawEnv, RawValue};
use crate::remote::{EnvShared, Tsfn, CURRENT};
use crate::removal::orphan_woken;
use crate::semaphore::{Node, NOT_ORPHAN, ORPHAN, ORPHAN_CLAIMED};

/// The wake callback given to `acquire_raw`.
pub(crate) unsafe extern "C" fn wake(ctx: *mut c_void) {
    // SAFETY: `ctx` is the pinned Node passed to acquire_raw; it stays valid until
    // finish_raw returned, and finish_raw waits for this callback to return.
    let node = unsafe { &*(ctx as *const Node) };
    let current = CURRENT.with(|c| c.local.get());
    // Inside one of the owner's own native calls, this is the thread `orphan`
    // runs on (the owner's JS thread: `cancel_slot` and the env cleanup hook
    // call it, nobody else), so program order already decides between the
    // two: an `orphan` that ran before stored ORPHAN before this load, and one
    // that runs after reads the phase this thread claimed before calling back
    // (the claimer calls back, `raw` invariant 2). If the owner's env was torn
    // down (its `orphan` calls ran then) and a new one reuses its address,
    // the free and the reuse order them before this call too. Only a wake on
    // another thread (another env's release, the shm doorbell, the Redis
    // agent) races with `orphan` and needs the fence: the locked instruction
    // it costs was about 1.5% of the contended Node loop's time.
    let own = current == node.owner;
    if !own {
        fence(Ordering::SeqCst); // pairs with the fence in `orphan`
    }
    if node.orphan.load(Ordering::SeqCst) != NOT_ORPHAN {
        if node
            .orphan
            .compare_exchange(ORPHAN, ORPHAN_CLAIMED, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            orphan_woken(node);
        }
        return; // claimed by whoever orphaned or cancels it: it finishes it
    }
    let key = node.key.get();
    if own {
        // Inside one of the owner's own native calls on its thread: it collects
        // its `local` list before returning. `try_borrow_mut` never fails here
        // (nothing holds that list across a semaphore call); if it did, the
        // remote path is still right.
        // SAFETY: `owner` is the `local` list of the environment whose native
        // call runs on this thread right now (CURRENT), so it is alive, and
        // only this thread touches its RefCells.
        let local = unsafe { &*node.owner };
        if let Ok(mut v) = local.try_borrow_mut() {
            v.push(key);
            return;
        }
    }
    if current.is_null() {
        node.env.push_remote(key);
    } else {
        // Inside a native call of another environment on this thread (its
        // `release` handing permits on): wake the owner once that call is over
        // and this callback returned (`# One wake per batch` in crate::remote).
        node.env.push_remote_later(key);
    }
}

impl EnvCtx {
    /// Releases `n` permits of a local semaphore from one of this
    /// environment's native calls on its thread (`release`, inside its
    /// `Enter`). The waiters of this environment that the hand-off serves
    /// are claimed (`release_claiming`): their keys go straight into the
    /// `local` list, as their `wake` would have put them (the same order,
    /// oldest first), without this thread's callback trampoline and the
    /// callback; `settle_local` then finishes them (`GRANTED`) as any woken
    /// one. The others (another environment's, an orphan) are woken through
    /// `wake` as by `release`.
    pub(crate) fn release_local(
        &self,
        core: &volt_sem::Semaphore,
        n: usize,
    ) -> Result<(), volt_sem_backend::Error> {
        let own: *const std::cell::RefCell<Vec<u64>> = &self.local;
        let mut claim = |w: volt_sem::WakeFn, ctx: *mut c_void| -> bool {
            if !std::ptr::fn_addr_eq(w, wake as volt_sem::WakeFn) {
                // Not this addon's waiter (or, as a function's address
                // may differ between uses, a false "not": then `wake` runs).
                return false;
            }
            // SAFETY: a waiter queued with `wake` has its pinned Node as
            // `ctx`, valid until finish_raw returned; the core calls this
            // while it is linked, under the queue lock.
            let node = unsafe { &*(ctx as *const Node) };
            // `owner` never changes. Only a node of this environment, whose
            // JS thread this is, is read further (its Cells are this
            // thread's), and only if nobody orphaned it: `orphan` runs on
            // this thread, so program order decides, as in `wake`; an
            // orphan is left to `wake`, which hands it on.
            if node.owner != own || node.orphan.load(Ordering::SeqCst) != NOT_ORPHAN {
                return false;
            }
            // Never held across a semaphore call (see `wake`); if it were,
            // `wake` is still right.
            match self.local.try_borrow_mut() {
                Ok(mut v) => {
                    v.push(node.key.get());
                    true
                }
                Err(_) => false,
            }
        };
        // SAFETY: the claim is short, does not block or unwind (a push on a
        // reused Vec; an allocation failure aborts), and calls no semaphore;
        // a claimed waiter's key is in `local`, whose `settle_local` before
        // this call returns finishes it (its only news of the grant).
        Ok(unsafe { core.release_claiming(n, &mut claim) }?)
    }

    /// Finishes the woken request `key` (if still pending): its slot and outcome.
    fn collect(&self, key: u64) -> Option<(u32, u32)> {
        let (slot, node) = self.active(key)?;
        // SAFETY: slots never shrink while the env lives, and nodes are boxed.
        let node = unsafe { Pin::new_unchecked(&*node) };
        let code = match node.finish() {
            Finish::Granted => return Some((slot, self.granted(slot, node))),
            Finish::Closed => WOKEN_CLOSED,
            // A Redis request: its session was lost, Redis lost the state, ...;
            // or a shared request above the total a `setTotal` lowered.
            Finish::Failed(e) => {
                self.extras
                    .borrow_mut()
                    .insert(u64::from(slot), Extra::Failed(e));
                FAILED
            }
            // A Redis request whose timeout passed before its acquire
            // script answered "queued" (`expire_slot`): the door cancelled
            // it then. A timeout, on top of the cancel the door counted.
            Finish::Cancelled { .. }
                if node.sem.borrow().as_ref().is_some_and(|s| s.is_redis()) =>
            {
                if let Some(s) = &*node.sem.borrow() {
                    s.core.record_timeout();
                }
                TIMED_OUT
            }
            // Cannot happen after a wake; report it rather than hang the promise.
            Finish::Cancelled { .. } | Finish::Idle => LOST,
        };
        self.release_slot(slot);
        Some((slot, code))
    }

    /// Writes `(slot, outcome)` to pair `k` of the buffer.
    fn write(&self, k: usize, slot: u32, code: u32) {
        let (buf, cap) = self.buf.get();
        debug_assert!(k < cap);
        // SAFETY: `buf` points to the live Uint32Array registered by init() (held
        // by a strong reference) of `2 * cap` elements, and k < cap.
        unsafe {
            *buf.add(2 * k) = slot;
            *buf.add(2 * k + 1) = code;
        }
    }

    /// Writes the generation of the request just queued into the cell after
    /// the outcome pairs, where `acquire` leaves it for JS.
    pub(crate) fn write_gen(&self, gen: u32) {
        let (buf, cap) = self.buf.get();
        if buf.is_null() {
            return; // init() not called: nobody reads it
        }
        // SAFETY: `buf` points to the live Uint32Array registered by init() of
        // at least `2 * cap + 2` elements (init() leaves the last pair out of `cap`).
        unsafe { *buf.add(2 * cap) = gen };
    }

    /// Writes an entry point's result code into the cell after the
    /// generation cell (see `init`), where JS reads it when the call returned
    /// `undefined`. Whether the buffer exists (init() was called).
    pub(crate) fn write_result(&self, code: i32) -> bool {
        let (buf, cap) = self.buf.get();
        if buf.is_null() {
            return false;
        }
        // SAFETY: as in `write_gen`: this cell is the last of the array's
        // `2 * cap + 2` elements. A negative code is stored as its two's
        // complement, which JS reads back with `| 0`.
        unsafe { *buf.add(2 * cap + 1) = code as u32 };
        true
    }

    /// Finishes queued woken requests into the buffer. Returns the number of
    /// pairs; `== capacity` means "call drain() again".
    pub(crate) fn write_ready(&self, mut k: usize) -> usize {
        let cap = self.buf.get().1;
        while k < cap {
            let Some(key) = self.ready.borrow_mut().pop_front() else {
                break;
            };
            if key & WATCH_BIT != 0 {
                // A lease watch woke: lost, or not yet (polled again).
                let id = key as u32;
                if self.poll_watch(id) {
                    self.write(k, id, LEASE_LOST);
                    k += 1;
                }
                continue;
            }
            if let Some((slot, code)) = self.collect(key) {
                self.write(k, slot, code);
                k += 1;
            }
        }
        k
    }

    /// Ends the current call's wake handling: the requests of this environment
    /// woken during it go to the buffer (the overflow, if any, to `ready`).
    pub(crate) fn settle_local(&self) -> usize {
        let cap = self.buf.get().1;
        // Leftovers of an earlier call first (the buffer was full then): seldom.
        let mut k = if self.ready.borrow().is_empty() {
            0
        } else {
            self.write_ready(0)
        };
        let Ok(mut local) = self.local.try_borrow_mut() else {
            return k;
        };
        if local.is_empty() {
            return k;
        }
        // collect() never wakes anyone (it only consumes Granted/Closed), so
        // holding the list across it is fine.
        let mut rest = local.drain(..);
        for key in rest.by_ref() {
            if k == cap {
                self.ready.borrow_mut().push_back(key);
                break;
            }
            if let Some((slot, code)) = self.collect(key) {
                self.write(k, slot, code);
                k += 1;
            }
        }
        if !rest.as_slice().is_empty() {
            self.ready.borrow_mut().extend(rest);
        }
        k
    }

    pub(crate) fn collect_remote(&self) {
        let ids = self.shared.take_remote();
        if !ids.is_empty() {
            self.ready.borrow_mut().extend(ids);
        }
    }
}

pub(crate) unsafe extern "C" fn tsfn_call_js(
    env: RawEnv,
    js_cb: RawValue,
    _context: *mut c_void,
    _data: *mut c_void,
) {
    if env.is_null() || js_cb.is_null() {
        return; // the tsfn is being torn down
    }
    // The callback calls `drain()`, which takes the remote list and clears
    // its `notified` flag (`EnvShared::take_remote`) in one step.
    // SAFETY: plain Node-API calls on the JS thread the tsfn belongs to.
    unsafe {
        let mut recv = ptr::null_mut();
        sys::napi_get_undefined(env, &mut recv);
        let mut result = ptr::null_mut();
        sys::napi_call_function(env, recv, js_cb, 0, ptr::null(), &mut result);
    }
}

pub(crate) unsafe extern "C" fn tsfn_finalize(_env: RawEnv, data: *mut c_void, _hint: *mut c_void) {
    // SAFETY: `data` is the Arc<EnvShared> leaked for the tsfn in `init`.
    let shared = unsafe { Arc::from_raw(data as *const EnvShared) };
    *lock(&shared.tsfn) = None;
}

// init(buffer: Uint32Array, onWake: () => void): OK | BAD_ARGS. The buffer:
// (slot, outcome) pairs, then one pair more whose first element `acquire`
// sets to the generation of the request it queued, and whose second is the
// result code of `acquire` and `release` (see `write_result`).
native!(js_init, |env, ctx, argv: [2]| {
    if ctx.initialized.get() {
        return int(env, BAD_ARGS);
    }
    let mut ty = 0;
    let mut len = 0;
    let mut data = ptr::null_mut();
    let mut ab = ptr::null_mut();
    let mut off = 0;
    // SAFETY: fails on a non-typed-array.
    let status = unsafe { sys::napi_get_typedarray_info(env, argv[0], &mut ty, &mut len, &mut data, &mut ab, &mut off) };
    // At least one outcome pair, and the last pair for the generation cell.
    if status != sys::Status::napi_ok || ty != sys::TypedarrayType::uint32_array || len < 4 || data.is_null() {
        return int(env, BAD_ARGS);
    }
    let mut buf_ref = ptr::null_mut();
    // SAFETY: a strong reference keeps the array (and its fixed backing store)
    // alive for the environment's life; Node frees it at teardown.
    unsafe { sys::napi_create_reference(env, argv[0], 1, &mut buf_ref) };
    let mut name = ptr::null_mut();
    let mut tsfn = ptr::null_mut();
    let fin = Arc::into_raw(ctx.shared.clone());
    // SAFETY: `argv[1]` is the JS callback; `fin` is owned by the tsfn's finalizer;
    // the context pointer stays valid as long as that Arc.
    let status = unsafe {
        sys::napi_create_string_utf8(env, c"volt-sem wake".as_ptr(), -1, &mut name);
        sys::napi_create_threadsafe_function(
            env,
            argv[1],
            ptr::null_mut(),
            name,
            0,
            1,
            fin as *mut c_void,
            Some(tsfn_finalize),
            fin as *mut c_void,
            Some(tsfn_call_js),
            &mut tsfn,
        )
    };
    if status != sys::Status::napi_ok {
        // SAFETY: the tsfn was not created, so its finalizer will not run.
        drop(unsafe { Arc::from_raw(fin) });
        return int(env, BAD_ARGS);
    }
    // SAFETY: on the JS thread; the tsfn was just created.
    unsafe { sys::napi_unref_threadsafe_function(env, tsfn) };
    *lock(&ctx.shared.tsfn) = Some(Tsfn(tsfn));
    ctx.buf.set((data.cast::<u32>(), len / 2 - 1));
    ctx.initialized.set(true);
    int(env, OK)
});

// drain(): k >= 0 outcomes written (woken from other threads, or left over)
native!(js_drain, |env, ctx, argv: [0]| {
    let _ = argv;
    ctx.collect_remote();
    let k = ctx.write_ready(0);
    int(env, k as i32)
});
