//! The JS fast path's view of a semaphore: the uncontended `acquire`,
//! `tryAcquire` and `release` run in `index.js` with no Node-API call.
//!
//! # The JS fast path
//!
//! `view(h)` gives each JS `Semaphore` object two `BigInt64Array`s over
//! memory this addon owns (external `ArrayBuffer`s, no copy):
//!
//! * the core's own state word ([`Semaphore::state_word`]: `available << 2 |
//!   QUEUED | CLOSED`, one 64-bit word), and
//! * the binding's `held` and `debt` counters of [`Sem`] (two adjacent words,
//!   `Sem` is `repr(C)`).
//!
//! On that word JS makes exactly the transitions the core's lock-free fast
//! paths make, and nothing else (the contract of `state_word`):
//!
//! * **take** `n` (`acquire`, `tryAcquire`): only from a word with neither
//!   QUEUED nor CLOSED set and `available >= n`, by one
//!   `Atomics.compareExchange(word, cur, cur - (n << 2))` that fails on any
//!   concurrent change (then JS re-decides on the fresh word). Permits are
//!   never taken while QUEUED is set (by invariant 2 none are available then
//!   anyway): a queued waiter is never overtaken, FIFO holds across JS, the
//!   native paths and every thread. Then `held += n`, as the native path does.
//! * **give back** `n` (`release`, `addPermits`): only when the word has
//!   neither QUEUED nor CLOSED set, no `removePermits` debt is owed (the debt
//!   is paid first, natively; whether one is owed is bit 0 of the debt
//!   word, see [`crate::debt`]), this thread has no grant waiting for its
//!   confirmation (the native release confirms those first), and
//!   `available + n` stays an exact JS integer; then `cur -> cur + (n << 2)`
//!   and, for a release, `held -= min(held, n)`.
//!
//! JS works on these words through `Int32Array`s of their halves (made in
//! JS over the same buffers; every target this module makes views on is
//! little-endian, so index 0 is the low half) whenever a transition neither
//! borrows from nor carries into the high half: then one CAS of the low half
//! (which holds QUEUED and CLOSED, and fails on any change to them) makes
//! exactly the 64-bit transition, whatever the high half holds, and no BigInt
//! is allocated. Other values (a low half of 2^31 or more, a borrow or a
//! carry, a request of 2^29 permits or more) use the `BigInt64Array`s. The
//! halves are accessed with the same sequentially consistent `Atomics`, and a
//! 32-bit atomic access to an aligned half of a 64-bit word is atomic against
//! the core's 64-bit ones on x86-64 (locked instructions on any operand size)
//! and arm64 (single-copy atomicity of aligned accesses; a write to any byte
//! of a location clears another core's exclusive monitor on it).
//!
//! Each CAS starts from the word this thread last wrote (a guess, so the
//! uncontended case makes no load): a wrong guess only makes the CAS fail and
//! return the real word, and the decision to go native is only ever taken on
//! a word just read from memory, as in Rust.
//!
//! A local semaphore that share() never touched is reached by one thread
//! only (its JS object's; the addon's calls on it run on that thread too,
//! one after the other): there JS makes the same transitions with plain
//! `Int32Array` reads and writes, which V8 compiles inline (an `Atomics` call
//! is a call), and the binding updates its `held` and `queued` counters with
//! a load and a store ([`Sem`]'s `alone`). share() marks it shared, on that
//! thread, before any other thread can attach; from then on both use atomic
//! read-modify-writes.
//!
//! After an attempt that found the word queued, closed or short, a JS
//! `Semaphore` goes straight to the native path until a native acquire takes
//! permits at once again: under contention a failed attempt costs more than
//! it saves (this only ever sends more operations native).
//!
//! Everything else (QUEUED or CLOSED set, not enough permits, a debt, an
//! overflow) calls the native function exactly as before, which decides again
//! on the fresh word. A waiter is only ever queued by the native path, under
//! the core's queue lock, after setting QUEUED with a CAS that a concurrent
//! JS CAS makes fail (and vice versa), or finding it set already (when no JS
//! CAS can succeed).
//!
//! # Orderings
//!
//! The core takes permits with an Acquire CAS and gives them back with a
//! Release CAS (the releaser's critical section happens-before the next
//! taker's). `Atomics.compareExchange`, `Atomics.load` and `Atomics.add` on
//! a `BigInt64Array` or an `Int32Array` are sequentially consistent (ECMAScript memory model,
//! `SeqCst` on every platform V8 supports: `lock cmpxchg` on x86-64, `ldaxr/
//! stlxr` or `casal` on arm64), which is at least Acquire and Release: the
//! JS fast path gives the core's guarantees, and mixes with the Rust side's
//! atomics on the same word like any other SeqCst access.
//!
//! # Memory lifetime
//!
//! Each external `ArrayBuffer` owns a strong `Arc<Sem>` (released by its
//! finalizer), so its memory cannot be freed while any view of it is
//! reachable, in whichever thread: a worker holding a view after every
//! handle is gone still reads a live semaphore. In practice the views live in
//! a private field of the JS `Semaphore` object (beside its handle, which
//! holds a strong reference too; for `attach()` likewise), so they go when
//! that object goes. A `Semaphore` asks for its views only after 16 of its
//! operations went native (`VIEW_AFTER` in `index.js`): making them costs
//! about 4x creating the semaphore, which a short-lived one should not pay. On targets whose `usize` is not 64 bits, or if the
//! runtime refuses external buffers, `view` returns `null` and JS always takes
//! the native path.
//!
//! [`Semaphore::state_word`]: volt_sem::Semaphore::state_word

use std::ffi::c_void;
use std::mem::{offset_of, size_of};
use std::ptr;
use std::sync::Arc;

use napi::sys;

use crate::env::EnvCtx;
use crate::handle::sem;
use crate::raw::{args, null, throw_internal};
use crate::raw::{RawEnv, RawValue};
use crate::semaphore::Sem;

// The counters view covers `held` then `debt`.
const _: () = assert!(offset_of!(Sem, debt) == offset_of!(Sem, held) + size_of::<usize>());

unsafe extern "C" fn drop_view(_env: RawEnv, _data: *mut c_void, hint: *mut c_void) {
    // SAFETY: `hint` is the Arc<Sem> leaked by `typed` for this buffer.
    drop(unsafe { Arc::from_raw(hint as *const Sem) });
}

/// A `BigInt64Array` of `len` words at `data` (inside `sem`), in an external
/// ArrayBuffer that keeps `sem` alive.
fn typed(env: RawEnv, sem: &Arc<Sem>, data: *const u8, len: usize) -> Option<RawValue> {
    let hint = Arc::into_raw(sem.clone());
    let mut ab = ptr::null_mut();
    // SAFETY: `data..data + 8 * len` lies inside the Sem that `hint` keeps
    // alive until the finalizer runs; the finalizer frees `hint` exactly once.
    let status = unsafe {
        sys::napi_create_external_arraybuffer(
            env,
            data as *mut c_void,
            len * 8,
            Some(drop_view),
            hint as *mut c_void,
            &mut ab,
        )
    };
    if status != sys::Status::napi_ok {
        // SAFETY: not handed to Node; still ours.
        drop(unsafe { Arc::from_raw(hint) });
        return None;
    }
    let mut out = ptr::null_mut();
    // SAFETY: `ab` is 8-byte aligned (an AtomicUsize) and `8 * len` long.
    let status = unsafe {
        sys::napi_create_typedarray(
            env,
            sys::TypedarrayType::bigint64_array,
            len,
            ab,
            0,
            &mut out,
        )
    };
    (status == sys::Status::napi_ok).then_some(out)
}

// view(h): [state: BigInt64Array(1), counters: BigInt64Array(2)] | null
native!(js_view, |env, _ctx, argv: [1]| {
    // SAFETY: handle contract (see `sem`).
    let Some(s) = (unsafe { sem(env, argv[0]) }) else { return null(env) };
    if size_of::<usize>() != 8 || cfg!(target_endian = "big") {
        return null(env);
    }
    // A named semaphore's state is in the shared segment, under its lock: JS
    // never touches it (every operation goes native).
    let Some(local) = s.core.as_local() else { return null(env) };
    let word = local.state_word() as *const _ as *const u8;
    let counters = &s.held as *const _ as *const u8;
    let (Some(a), Some(b)) = (typed(env, s, word, 1), typed(env, s, counters, 2)) else {
        return null(env);
    };
    let mut arr = ptr::null_mut();
    // SAFETY: plain value creation on the JS thread.
    unsafe {
        sys::napi_create_array_with_length(env, 2, &mut arr);
        sys::napi_set_element(env, arr, 0, a);
        sys::napi_set_element(env, arr, 1, b);
    }
    arr
});
