//! Node binding for volt-sem: the native half of the `volt-sem` npm package.
//!
//! The JS layer (`index.js`) owns the promises; this addon owns the semaphores
//! and the queue nodes. Every entry point is a hand-registered Node-API function
//! (the cheapest crossing, ~170 ns) that takes plain numbers and an `External`
//! handle and answers with a small integer code, so no JS object is created on
//! the hot path.
//!
//! # Wake path
//!
//! A pending acquire is a [`Node`] (a boxed, pinned [`Waiter`] plus its id) kept
//! in its environment's map until `finish_raw` consumed it. Its wake callback
//! runs on whichever thread completed the grant:
//!
//! * **Same environment, inside one of its own native calls** (`release`,
//!   `cancel`, `close`, which set the thread-local [`CURRENT`]): the id goes into
//!   the thread-local [`LOCAL`] list. Before that call returns it finishes the
//!   woken nodes and writes `(id, outcome)` pairs into the environment's shared
//!   `Uint32Array`; the call returns how many, and the JS layer settles those
//!   promises right away, still inside the `release()` that caused them.
//! * **Anywhere else** (another worker, a foreign thread): the id goes into the
//!   environment's mutex-guarded remote list, and the environment's single
//!   threadsafe function is poked (at most once until it ran). Its JS callback
//!   calls `drain()`, which finishes the nodes the same way.
//!
//! The threadsafe function is referenced only while the environment has pending
//! waiters on a *shared* semaphore (one that `share()` or `attach()` touched):
//! only then can a wake come from elsewhere, so only then must the thread stay
//! alive. A waiter on a private semaphore cannot be served by anyone but its own
//! thread, and must not keep it alive.
//!
//! # Teardown
//!
//! An environment cleanup hook (a terminated worker, or the process exiting)
//! detaches the threadsafe function and finishes every node still in the map:
//! a queued waiter is cancelled (its partial grant handed on), a grant that
//! arrived but was never delivered to JS is released.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::ffi::c_void;
use std::pin::Pin;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, Weak};

use napi::bindgen_prelude::{JsValue, Object};
use napi::sys;
use napi_derive::napi;
use volt_sem::{AcquireError, Finish, RawAcquire, Semaphore, TryAcquireError, Waiter};

type RawEnv = sys::napi_env;
type RawValue = sys::napi_value;

/// The largest permit count JS sees: `min(Semaphore::MAX_PERMITS, 2^53 - 1)`,
/// so every count is an exact JS number.
const MAX_JS: usize = {
    let safe: u64 = (1 << 53) - 1;
    if (Semaphore::MAX_PERMITS as u64) < safe {
        Semaphore::MAX_PERMITS
    } else {
        safe as usize
    }
};

// Result codes shared with index.js.
const OK: i32 = 0;
const NO_PERMITS: i32 = 1;
const SLOT_BASE: i32 = 4;
const CLOSED: i32 = 2;
const BAD_COUNT: i32 = 3;
const RELEASE_OVERFLOW: i32 = -1;
const BAD_ARGS: i32 = -2;

// Outcome codes written into the ready buffer.
const GRANTED: u32 = 1;
const WOKEN_CLOSED: u32 = 2;
const LOST: u32 = 3;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A poisoned lock only means a panic elsewhere; the data (plain lists) is intact.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

// ---------------------------------------------------------------------------
// Semaphores and the process-wide registry used by share()/attach().

/// One semaphore, shared by every environment holding a handle to it.
struct Sem {
    core: Semaphore,
    id: u64,
    /// Set once share() or attach() touched it: waiters may then be woken from
    /// another thread, so they keep their thread alive.
    shared: AtomicBool,
}

static NEXT_SEM_ID: AtomicU64 = AtomicU64::new(1);
static REGISTRY: LazyLock<Mutex<HashMap<u64, Weak<Sem>>>> = LazyLock::new(Default::default);

impl Drop for Sem {
    fn drop(&mut self) {
        if self.shared.load(Ordering::Relaxed) {
            lock(&REGISTRY).remove(&self.id);
        }
    }
}

// ---------------------------------------------------------------------------
// Per-environment state.

/// The part of an environment other threads reach (through a node's `env`).
struct EnvShared {
    remote: Mutex<Remote>,
}

struct Remote {
    /// Ids woken from outside this environment's own native calls.
    ids: Vec<u64>,
    /// `None` once the environment is being torn down.
    tsfn: Option<Tsfn>,
    /// A call of the threadsafe function is queued and has not started yet.
    notified: bool,
}

#[derive(Clone, Copy)]
struct Tsfn(sys::napi_threadsafe_function);
// SAFETY: a threadsafe function handle is meant to be used from any thread; we only
// call it while it is alive (the `Remote` mutex orders calls against its finalizer).
unsafe impl Send for Tsfn {}

impl EnvShared {
    fn push_remote(&self, id: u64) {
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

/// The JS-thread-only state of one environment (one main thread or worker, per
/// load of this addon). Reached through the `data` pointer of every function.
struct EnvCtx {
    env: RawEnv,
    shared: Arc<EnvShared>,
    /// Queue nodes, reused across requests; a pending request is identified by
    /// its key `gen << 32 | slot`, and JS knows it by its slot.
    slots: RefCell<Vec<Slot>>,
    free: RefCell<Vec<u32>>,
    /// Woken keys not yet written to the buffer (FIFO).
    ready: RefCell<VecDeque<u64>>,
    /// The JS `Uint32Array` the outcomes go to: pointer and capacity in pairs.
    buf: Cell<(*mut u32, usize)>,
    /// Pending nodes on shared semaphores; the tsfn is referenced while > 0.
    refs: Cell<usize>,
    initialized: Cell<bool>,
}

thread_local! {
    /// The environment whose native call is running on this thread, if any.
    static CURRENT: Cell<*const EnvCtx> = const { Cell::new(ptr::null()) };
    /// Ids of `CURRENT`'s nodes woken during that call.
    static LOCAL: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

/// Marks `ctx` as running a native call on this thread; restores on drop.
struct Enter(*const EnvCtx);

impl Enter {
    fn new(ctx: &EnvCtx) -> Self {
        Enter(CURRENT.with(|c| c.replace(ctx)))
    }
}

impl Drop for Enter {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.0));
    }
}

/// A queue node: the waiter of one request at a time, and what its wake
/// callback needs. Boxed and pinned in a slot; reused once finished.
struct Node {
    waiter: Waiter,
    /// `gen << 32 | slot` of the current request. Written by the owner while the
    /// waiter is idle; the wake callback reads it after `acquire_raw` published
    /// the waiter under the semaphore's lock.
    key: Cell<u64>,
    /// Owner-thread fields of the current request.
    n: Cell<usize>,
    sem: RefCell<Option<Arc<Sem>>>,
    /// Whether this request holds a reference on the tsfn.
    counted: Cell<bool>,
    env: Arc<EnvShared>,
    /// Identity of the owning `EnvCtx` (compared, never dereferenced off-thread).
    owner: *const EnvCtx,
}

struct Slot {
    node: Pin<Box<Node>>,
    active: bool,
    gen: u32,
}

impl Node {
    fn waiter(self: Pin<&Self>) -> Pin<&Waiter> {
        // SAFETY: structural pinning: `waiter` is never moved out of a pinned Node.
        unsafe { self.map_unchecked(|n| &n.waiter) }
    }

    /// Ends the request (cancel or collect). Afterwards the node may be reused.
    fn finish(self: Pin<&Self>) -> Finish {
        let sem = self.sem.borrow();
        match &*sem {
            // SAFETY: the waiter is idle or was last queued on this semaphore (the
            // only one of the current request), and it stays valid and pinned.
            Some(s) => unsafe { s.core.finish_raw(self.waiter()) },
            None => Finish::Idle,
        }
    }
}

/// The wake callback given to `acquire_raw`.
unsafe extern "C" fn wake(ctx: *mut c_void) {
    // SAFETY: `ctx` is the pinned Node passed to acquire_raw; it stays valid until
    // finish_raw returned, and finish_raw waits for this callback to return.
    let node = unsafe { &*(ctx as *const Node) };
    let key = node.key.get();
    if CURRENT.with(|c| c.get()) == node.owner {
        // Inside one of the owner's own native calls on its thread: it collects
        // LOCAL before returning. `try_borrow_mut` never fails here (nothing holds
        // LOCAL across a semaphore call); if it did, the remote path is still right.
        let pushed = LOCAL.with(|l| match l.try_borrow_mut() {
            Ok(mut v) => {
                v.push(key);
                true
            }
            Err(_) => false,
        });
        if pushed {
            return;
        }
    }
    node.env.push_remote(key);
}

impl EnvCtx {
    /// The node of a pending request, by key; `None` if that request is over.
    fn active(&self, key: u64) -> Option<(u32, *const Node)> {
        let slot = key as u32;
        let slots = self.slots.borrow();
        let s = slots.get(slot as usize)?;
        (s.active && s.gen == (key >> 32) as u32).then(|| (slot, &*s.node as *const Node))
    }

    /// A free node for a new request of `n` permits on `sem`, and its slot.
    fn take_slot(&self, sem: &Arc<Sem>, n: usize) -> (u32, *const Node) {
        let mut slots = self.slots.borrow_mut();
        let slot = match self.free.borrow_mut().pop() {
            Some(slot) => slot,
            None => {
                slots.push(Slot {
                    node: Box::pin(Node {
                        waiter: Waiter::new(),
                        key: Cell::new(0),
                        n: Cell::new(0),
                        sem: RefCell::new(None),
                        counted: Cell::new(false),
                        env: self.shared.clone(),
                        owner: self,
                    }),
                    active: false,
                    gen: 0,
                });
                (slots.len() - 1) as u32
            }
        };
        let s = &slots[slot as usize];
        let node = &*s.node;
        node.key.set((s.gen as u64) << 32 | slot as u64);
        node.n.set(n);
        *node.sem.borrow_mut() = Some(sem.clone());
        node.counted.set(sem.shared.load(Ordering::Relaxed));
        (slot, node)
    }

    /// Marks a queued request's slot active (and refs the tsfn if needed).
    fn activate(&self, slot: u32) {
        let counted = {
            let mut slots = self.slots.borrow_mut();
            let s = &mut slots[slot as usize];
            s.active = true;
            s.node.counted.get()
        };
        if counted {
            let refs = self.refs.get();
            if refs == 0 {
                self.tsfn_ref(true);
            }
            self.refs.set(refs + 1);
        }
    }

    /// Returns a finished (or never queued) request's node to the free list.
    fn release_slot(&self, slot: u32) {
        let (was_active, counted, sem) = {
            let mut slots = self.slots.borrow_mut();
            let s = &mut slots[slot as usize];
            let was_active = std::mem::replace(&mut s.active, false);
            s.gen = s.gen.wrapping_add(1);
            let sem = s.node.sem.borrow_mut().take();
            (was_active, s.node.counted.get(), sem)
        };
        self.free.borrow_mut().push(slot);
        drop(sem); // may drop the last Arc: outside the borrows
        if was_active && counted {
            let refs = self.refs.get() - 1;
            self.refs.set(refs);
            if refs == 0 {
                self.tsfn_ref(false);
            }
        }
    }

    /// Finishes the woken request `key` (if still pending): its slot and outcome.
    fn collect(&self, key: u64) -> Option<(u32, u32)> {
        let (slot, node) = self.active(key)?;
        // SAFETY: slots never shrink while the env lives, and nodes are boxed.
        let node = unsafe { Pin::new_unchecked(&*node) };
        let code = match node.finish() {
            Finish::Granted => GRANTED,
            Finish::Closed => WOKEN_CLOSED,
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

    /// Finishes queued woken requests into the buffer. Returns the number of
    /// pairs; `== capacity` means "call drain() again".
    fn write_ready(&self, mut k: usize) -> usize {
        let cap = self.buf.get().1;
        while k < cap {
            let Some(key) = self.ready.borrow_mut().pop_front() else {
                break;
            };
            if let Some((slot, code)) = self.collect(key) {
                self.write(k, slot, code);
                k += 1;
            }
        }
        k
    }

    /// Ends the current call's wake handling: the requests of this environment
    /// woken during it go to the buffer (the overflow, if any, to `ready`).
    fn settle_local(&self) -> usize {
        let cap = self.buf.get().1;
        let mut k = self.write_ready(0);
        LOCAL.with(|l| {
            let Ok(mut local) = l.try_borrow_mut() else {
                return;
            };
            if local.is_empty() {
                return;
            }
            // collect() never wakes anyone (it only consumes Granted/Closed), so
            // holding LOCAL across it is fine.
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
            self.ready.borrow_mut().extend(rest);
        });
        k
    }

    fn collect_remote(&self) {
        let ids = std::mem::take(&mut lock(&self.shared.remote).ids);
        if !ids.is_empty() {
            self.ready.borrow_mut().extend(ids);
        }
    }

    fn tsfn_ref(&self, on: bool) {
        let tsfn = lock(&self.shared.remote).tsfn;
        if let Some(t) = tsfn {
            // SAFETY: on the JS thread of `self.env`, while the tsfn is alive (it is
            // finalized only at teardown, when no JS runs any more).
            unsafe {
                if on {
                    sys::napi_ref_threadsafe_function(self.env, t.0);
                } else {
                    sys::napi_unref_threadsafe_function(self.env, t.0);
                }
            }
        }
    }
}

unsafe extern "C" fn tsfn_call_js(
    env: RawEnv,
    js_cb: RawValue,
    context: *mut c_void,
    _data: *mut c_void,
) {
    if env.is_null() || js_cb.is_null() {
        return; // the tsfn is being torn down
    }
    // SAFETY: `context` is the EnvShared kept alive by the Arc owned by the tsfn's
    // finalize data, which outlives every call.
    let shared = unsafe { &*(context as *const EnvShared) };
    lock(&shared.remote).notified = false;
    // SAFETY: plain Node-API calls on the JS thread the tsfn belongs to.
    unsafe {
        let mut recv = ptr::null_mut();
        sys::napi_get_undefined(env, &mut recv);
        let mut result = ptr::null_mut();
        sys::napi_call_function(env, recv, js_cb, 0, ptr::null(), &mut result);
    }
}

unsafe extern "C" fn tsfn_finalize(_env: RawEnv, data: *mut c_void, _hint: *mut c_void) {
    // SAFETY: `data` is the Arc<EnvShared> leaked for the tsfn in `init`.
    let shared = unsafe { Arc::from_raw(data as *const EnvShared) };
    lock(&shared.remote).tsfn = None;
}

unsafe extern "C" fn env_cleanup(arg: *mut c_void) {
    // SAFETY: `arg` is the boxed EnvCtx leaked by module init; this hook runs once,
    // after the environment stopped running JS, so nothing else references it.
    let ctx = unsafe { Box::from_raw(arg as *mut EnvCtx) };
    let tsfn = lock(&ctx.shared.remote).tsfn.take();
    if let Some(t) = tsfn {
        // SAFETY: the tsfn was alive (its finalizer would have cleared the slot).
        unsafe {
            sys::napi_release_threadsafe_function(t.0, sys::ThreadsafeFunctionReleaseMode::abort)
        };
    }
    let _enter = Enter::new(&ctx);
    let slots = std::mem::take(&mut *ctx.slots.borrow_mut());
    for s in slots.iter().filter(|s| s.active) {
        if let Finish::Granted = s.node.as_ref().finish() {
            // A grant nobody will see: give it back (wakes the next waiters).
            if let Some(sem) = &*s.node.sem.borrow() {
                let _ = sem.core.release(s.node.n.get());
            }
        }
    }
    drop(slots);
    LOCAL.with(|l| l.borrow_mut().clear());
    drop(_enter);
}

// ---------------------------------------------------------------------------
// Raw Node-API helpers.

/// Reads up to N arguments and the function's data pointer (the EnvCtx).
///
/// # Safety
/// Called from a Node-API callback with its `env` and `info`.
unsafe fn args<const N: usize>(
    env: RawEnv,
    info: sys::napi_callback_info,
) -> ([RawValue; N], *const EnvCtx) {
    let mut argv = [ptr::null_mut(); N];
    let mut argc = N;
    let mut data = ptr::null_mut();
    // SAFETY: argv has room for argc values; missing ones are filled with undefined.
    unsafe {
        sys::napi_get_cb_info(
            env,
            info,
            &mut argc,
            argv.as_mut_ptr(),
            ptr::null_mut(),
            &mut data,
        )
    };
    (argv, data as *const EnvCtx)
}

fn int(env: RawEnv, v: i32) -> RawValue {
    let mut out = ptr::null_mut();
    // SAFETY: plain value creation on the JS thread.
    unsafe { sys::napi_create_int32(env, v, &mut out) };
    out
}

fn double(env: RawEnv, v: f64) -> RawValue {
    let mut out = ptr::null_mut();
    // SAFETY: plain value creation on the JS thread.
    unsafe { sys::napi_create_double(env, v, &mut out) };
    out
}

fn boolean(env: RawEnv, v: bool) -> RawValue {
    let mut out = ptr::null_mut();
    // SAFETY: plain value lookup on the JS thread.
    unsafe { sys::napi_get_boolean(env, v, &mut out) };
    out
}

fn null(env: RawEnv) -> RawValue {
    let mut out = ptr::null_mut();
    // SAFETY: plain value lookup on the JS thread.
    unsafe { sys::napi_get_null(env, &mut out) };
    out
}

/// A JS number that is an integer in `0..=MAX_JS`.
fn count(env: RawEnv, v: RawValue) -> Option<usize> {
    let mut d = f64::NAN;
    // SAFETY: fails (leaving NaN) on a non-number.
    unsafe { sys::napi_get_value_double(env, v, &mut d) };
    (d >= 0.0 && d <= MAX_JS as f64 && d.fract() == 0.0).then_some(d as usize)
}

fn uint32(env: RawEnv, v: RawValue) -> Option<u32> {
    let mut d = f64::NAN;
    // SAFETY: fails (leaving NaN) on a non-number.
    unsafe { sys::napi_get_value_double(env, v, &mut d) };
    (d >= 0.0 && d <= u32::MAX as f64 && d.fract() == 0.0).then_some(d as u32)
}

/// The semaphore behind a handle made by `handle()`.
///
/// # Safety
/// `v` is an External created by this addon (the JS layer keeps handles private);
/// the returned reference lives as long as `v` is reachable (the call's duration).
unsafe fn sem<'a>(env: RawEnv, v: RawValue) -> Option<&'a Arc<Sem>> {
    let mut p = ptr::null_mut();
    // SAFETY: fails on a non-external, leaving p null.
    let status = unsafe { sys::napi_get_value_external(env, v, &mut p) };
    if status != sys::Status::napi_ok || p.is_null() {
        return None;
    }
    // SAFETY: our externals point at a boxed Arc<Sem>, freed only by their finalizer.
    Some(unsafe { &*(p as *const Arc<Sem>) })
}

unsafe extern "C" fn drop_handle(_env: RawEnv, data: *mut c_void, _hint: *mut c_void) {
    // SAFETY: `data` is the Box<Arc<Sem>> leaked by `handle`.
    drop(unsafe { Box::from_raw(data as *mut Arc<Sem>) });
}

/// Wraps an `Arc<Sem>` in a JS External that owns it.
fn handle(env: RawEnv, sem: Arc<Sem>) -> RawValue {
    let data = Box::into_raw(Box::new(sem));
    let mut out = ptr::null_mut();
    // SAFETY: the finalizer frees `data` exactly once.
    let status = unsafe {
        sys::napi_create_external(
            env,
            data.cast(),
            Some(drop_handle),
            ptr::null_mut(),
            &mut out,
        )
    };
    if status != sys::Status::napi_ok {
        // SAFETY: not handed to Node; still ours.
        drop(unsafe { Box::from_raw(data) });
        return null(env);
    }
    out
}

/// Defines a raw Node-API function body with `env`, `info` and the EnvCtx.
macro_rules! native {
    ($name:ident, |$env:ident, $ctx:ident, $argv:ident : [$n:literal]| $body:block) => {
        unsafe extern "C" fn $name($env: RawEnv, info: sys::napi_callback_info) -> RawValue {
            // SAFETY: called by Node-API with a valid env/info; `data` is the EnvCtx
            // registered with this function, alive until the env cleanup hook, after
            // which no JS (hence no call) runs.
            let ($argv, ctx_ptr) = unsafe { args::<$n>($env, info) };
            // SAFETY: see above.
            let $ctx: &EnvCtx = unsafe { &*ctx_ptr };
            $body
        }
    };
}

// ---------------------------------------------------------------------------
// The functions index.js calls.

// init(buffer: Uint32Array, onWake: () => void): void
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
    if status != sys::Status::napi_ok || ty != sys::TypedarrayType::uint32_array || len < 2 || data.is_null() {
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
    lock(&ctx.shared.remote).tsfn = Some(Tsfn(tsfn));
    ctx.buf.set((data.cast::<u32>(), len / 2));
    ctx.initialized.set(true);
    int(env, OK)
});

// create(permits): External | null
native!(js_create, |env, _ctx, argv: [1]| {
    let Some(permits) = count(env, argv[0]) else { return null(env) };
    let Some(core) = Semaphore::try_new(permits) else { return null(env) };
    let id = NEXT_SEM_ID.fetch_add(1, Ordering::Relaxed);
    handle(env, Arc::new(Sem { core, id, shared: AtomicBool::new(false) }))
});

// share(h): number (the registry id) | null
native!(js_share, |env, _ctx, argv: [1]| {
    // SAFETY: handle contract (see `sem`).
    let Some(s) = (unsafe { sem(env, argv[0]) }) else { return null(env) };
    if !s.shared.swap(true, Ordering::Relaxed) {
        lock(&REGISTRY).insert(s.id, Arc::downgrade(s));
    }
    double(env, s.id as f64)
});

// attach(id): External | null (no such semaphore any more)
native!(js_attach, |env, _ctx, argv: [1]| {
    let mut d = f64::NAN;
    // SAFETY: fails (leaving NaN) on a non-number.
    unsafe { sys::napi_get_value_double(env, argv[0], &mut d) };
    if !(d >= 1.0 && d.fract() == 0.0 && d <= MAX_JS as f64) {
        return null(env);
    }
    let found = lock(&REGISTRY).get(&(d as u64)).and_then(Weak::upgrade);
    match found {
        Some(s) => handle(env, s),
        None => null(env),
    }
});

// tryAcquire(h, n): OK | NO_PERMITS | CLOSED | BAD_COUNT
native!(js_try_acquire, |env, _ctx, argv: [2]| {
    // SAFETY: handle contract (see `sem`).
    let Some(s) = (unsafe { sem(env, argv[0]) }) else { return int(env, BAD_ARGS) };
    let Some(n) = count(env, argv[1]) else { return int(env, BAD_COUNT) };
    let code = match s.core.try_acquire(n) {
        Ok(p) => {
            p.forget();
            OK
        }
        Err(TryAcquireError::NoPermits) => NO_PERMITS,
        Err(TryAcquireError::Closed) => CLOSED,
        Err(TryAcquireError::TooManyPermits) => BAD_COUNT,
        // The core's error enums are non_exhaustive: a later variant maps here.
        Err(_) => BAD_COUNT,
    };
    int(env, code)
});

// acquire(h, n): OK (taken) | CLOSED | BAD_COUNT | SLOT_BASE + slot (queued)
native!(js_acquire, |env, ctx, argv: [2]| {
    // SAFETY: handle contract (see `sem`).
    let Some(s) = (unsafe { sem(env, argv[0]) }) else { return int(env, BAD_ARGS) };
    let Some(n) = count(env, argv[1]) else { return int(env, BAD_COUNT) };
    match s.core.try_acquire(n) {
        Ok(p) => {
            p.forget();
            return int(env, OK);
        }
        Err(TryAcquireError::Closed) => return int(env, CLOSED),
        Err(TryAcquireError::TooManyPermits) => return int(env, BAD_COUNT),
        Err(TryAcquireError::NoPermits) => {}
        // The core's error enums are non_exhaustive: a later variant maps here.
        Err(_) => return int(env, BAD_COUNT),
    }
    let (slot, node) = ctx.take_slot(s, n);
    // SAFETY: the node is boxed in a slot that lives (unmoved) as long as the env.
    let node = unsafe { Pin::new_unchecked(&*node) };
    // SAFETY: the waiter is idle (its slot was free); after Pending the node stays
    // pinned in its slot, and the slot stays reserved until finish_raw (drain,
    // cancel or cleanup) returned.
    let r = unsafe { s.core.acquire_raw(node.waiter(), n, wake, &*node as *const Node as *mut c_void) };
    let code = match r {
        Ok(RawAcquire::Pending) => {
            ctx.activate(slot);
            return int(env, SLOT_BASE + slot as i32);
        }
        Ok(RawAcquire::Ready) => OK,
        Err(AcquireError::Closed) => CLOSED,
        Err(AcquireError::TooManyPermits) => BAD_COUNT,
        // The core's error enums are non_exhaustive: a later variant maps here.
        Err(_) => BAD_COUNT,
    };
    ctx.release_slot(slot);
    int(env, code)
});

// release(h, n): k >= 0 outcomes written | RELEASE_OVERFLOW | BAD_COUNT(-3)
native!(js_release, |env, ctx, argv: [2]| {
    // SAFETY: handle contract (see `sem`).
    let Some(s) = (unsafe { sem(env, argv[0]) }) else { return int(env, BAD_ARGS) };
    let Some(n) = count(env, argv[1]) else { return int(env, -BAD_COUNT) };
    // The core's limit is far above 2^53; keep JS counts exact. (Racy against a
    // concurrent release on another thread; the core's own check is exact.)
    if s.core.available_permits() > MAX_JS - n {
        return int(env, RELEASE_OVERFLOW);
    }
    let enter = Enter::new(ctx);
    if s.core.release(n).is_err() {
        return int(env, RELEASE_OVERFLOW);
    }
    let k = ctx.settle_local();
    drop(enter);
    int(env, k as i32)
});

// cancel(slot): k >= 0 outcomes written (the cancelled request is not among them)
native!(js_cancel, |env, ctx, argv: [1]| {
    let Some(slot) = uint32(env, argv[0]) else { return int(env, BAD_ARGS) };
    let enter = Enter::new(ctx);
    let found = {
        let slots = ctx.slots.borrow();
        slots.get(slot as usize).filter(|s| s.active).map(|s| &*s.node as *const Node)
    };
    if let Some(node) = found {
        // SAFETY: slots never shrink while the env lives, and nodes are boxed.
        let node = unsafe { Pin::new_unchecked(&*node) };
        if let Finish::Granted = node.finish() {
            // Granted but not yet delivered: JS gave up on it, so give it back.
            if let Some(sem) = &*node.sem.borrow() {
                let _ = sem.core.release(node.n.get());
            }
        }
        ctx.release_slot(slot);
    }
    let k = ctx.settle_local();
    drop(enter);
    int(env, k as i32)
});

// close(h): k >= 0 outcomes written
native!(js_close, |env, ctx, argv: [1]| {
    // SAFETY: handle contract (see `sem`).
    let Some(s) = (unsafe { sem(env, argv[0]) }) else { return int(env, BAD_ARGS) };
    let enter = Enter::new(ctx);
    s.core.close();
    let k = ctx.settle_local();
    drop(enter);
    int(env, k as i32)
});

// drain(): k >= 0 outcomes written (woken from other threads, or left over)
native!(js_drain, |env, ctx, argv: [0]| {
    let _ = argv;
    ctx.collect_remote();
    let k = ctx.write_ready(0);
    int(env, k as i32)
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

/// Registers the raw functions on `exports`, bound to a fresh per-environment
/// context that an env cleanup hook tears down.
#[napi(module_exports)]
pub fn init(exports: Object) -> napi::Result<()> {
    let env = exports.value().env;
    let target = exports.raw();
    let ctx = Box::into_raw(Box::new(EnvCtx {
        env,
        shared: Arc::new(EnvShared {
            remote: Mutex::new(Remote {
                ids: Vec::new(),
                tsfn: None,
                notified: false,
            }),
        }),
        slots: RefCell::new(Vec::new()),
        free: RefCell::new(Vec::new()),
        ready: RefCell::new(VecDeque::new()),
        buf: Cell::new((ptr::null_mut(), 0)),
        refs: Cell::new(0),
        initialized: Cell::new(false),
    }));
    type Cb = unsafe extern "C" fn(RawEnv, sys::napi_callback_info) -> RawValue;
    let fns: [(&std::ffi::CStr, Cb); 12] = [
        (c"init", js_init),
        (c"create", js_create),
        (c"share", js_share),
        (c"attach", js_attach),
        (c"tryAcquire", js_try_acquire),
        (c"acquire", js_acquire),
        (c"release", js_release),
        (c"cancel", js_cancel),
        (c"close", js_close),
        (c"drain", js_drain),
        (c"available", js_available),
        (c"isClosed", js_is_closed),
    ];
    // SAFETY: plain Node-API calls during module init on the JS thread; `ctx` lives
    // until the cleanup hook registered here frees it.
    unsafe {
        let status = sys::napi_add_env_cleanup_hook(env, Some(env_cleanup), ctx.cast());
        if status != sys::Status::napi_ok {
            drop(Box::from_raw(ctx));
            return Err(napi::Error::from_reason(
                "volt-sem: cannot register the env cleanup hook",
            ));
        }
        for (name, cb) in fns {
            let mut f = ptr::null_mut();
            sys::napi_create_function(env, name.as_ptr(), -1, Some(cb), ctx.cast(), &mut f);
            sys::napi_set_named_property(env, target, name.as_ptr(), f);
        }
        sys::napi_set_named_property(
            env,
            target,
            c"maxPermits".as_ptr(),
            double(env, MAX_JS as f64),
        );
    }
    Ok(())
}
