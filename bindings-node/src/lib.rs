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
const PENDING_OR_BUSY: i32 = 1;
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
    ids: Vec<u32>,
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
    fn push_remote(&self, id: u32) {
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
    nodes: RefCell<HashMap<u32, Pin<Box<Node>>>>,
    /// Woken ids not yet written to the buffer (FIFO).
    ready: RefCell<VecDeque<u32>>,
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
    static LOCAL: RefCell<Vec<u32>> = const { RefCell::new(Vec::new()) };
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

/// A pending acquire: the queue node and what its wake callback needs.
struct Node {
    waiter: Waiter,
    id: u32,
    n: usize,
    sem: Arc<Sem>,
    env: Arc<EnvShared>,
    /// Identity of the owning `EnvCtx` (compared, never dereferenced off-thread).
    owner: *const EnvCtx,
    /// Whether this node holds a reference on the tsfn.
    counted: bool,
}

impl Node {
    fn waiter(self: Pin<&Self>) -> Pin<&Waiter> {
        // SAFETY: structural pinning: `waiter` is never moved out of a pinned Node.
        unsafe { self.map_unchecked(|n| &n.waiter) }
    }

    /// Ends the request (cancel or collect). Afterwards the node may be dropped.
    fn finish(self: Pin<&Self>) -> Finish {
        // SAFETY: the waiter is idle or was last queued on `self.sem` (it is only
        // ever queued there), and it stays valid and pinned for the call.
        unsafe { self.sem.core.finish_raw(self.waiter()) }
    }
}

/// The wake callback given to `acquire_raw`.
unsafe extern "C" fn wake(ctx: *mut c_void) {
    // SAFETY: `ctx` is the pinned Node passed to acquire_raw; it stays valid until
    // finish_raw returned, and finish_raw waits for this callback to return.
    let node = unsafe { &*(ctx as *const Node) };
    if CURRENT.with(|c| c.get()) == node.owner {
        // Inside one of the owner's own native calls on its thread: it collects
        // LOCAL before returning. `try_borrow_mut` never fails here (nothing holds
        // LOCAL across a semaphore call); if it did, the remote path is still right.
        let pushed = LOCAL.with(|l| match l.try_borrow_mut() {
            Ok(mut v) => {
                v.push(node.id);
                true
            }
            Err(_) => false,
        });
        if pushed {
            return;
        }
    }
    node.env.push_remote(node.id);
}

impl EnvCtx {
    /// Moves ids woken during the current call into `ready`.
    fn collect_local(&self) {
        let ids = LOCAL.with(|l| l.try_borrow_mut().map(|mut v| std::mem::take(&mut *v)).unwrap_or_default());
        if !ids.is_empty() {
            self.ready.borrow_mut().extend(ids);
        }
    }

    fn collect_remote(&self) {
        let ids = std::mem::take(&mut lock(&self.shared.remote).ids);
        if !ids.is_empty() {
            self.ready.borrow_mut().extend(ids);
        }
    }

    /// Finishes woken nodes and writes `(id, outcome)` pairs to the buffer.
    /// Returns the number of pairs; `== capacity` means "call drain() again".
    fn write_ready(&self) -> usize {
        let (buf, cap) = self.buf.get();
        let mut k = 0;
        while k < cap {
            let Some(id) = self.ready.borrow_mut().pop_front() else { break };
            // Absent: cancelled by JS after the wake was queued; nothing to report.
            let Some(node) = self.nodes.borrow_mut().remove(&id) else { continue };
            let code = match node.as_ref().finish() {
                Finish::Granted => GRANTED,
                Finish::Closed => WOKEN_CLOSED,
                // Cannot happen after a wake; report it rather than hang the promise.
                Finish::Cancelled { .. } | Finish::Idle => LOST,
            };
            // SAFETY: `buf` points to the live Uint32Array registered by init() (held
            // by a strong reference) of `2 * cap` elements, and k < cap.
            unsafe {
                *buf.add(2 * k) = id;
                *buf.add(2 * k + 1) = code;
            }
            k += 1;
            self.forget_node(&node);
        }
        k
    }

    /// Ends the current call's wake handling: LOCAL to ready, ready to the buffer.
    fn settle_local(&self) -> usize {
        self.collect_local();
        if self.ready.borrow().is_empty() {
            0
        } else {
            self.write_ready()
        }
    }

    fn add_node(&self, node: Pin<Box<Node>>) {
        if node.counted {
            let refs = self.refs.get();
            if refs == 0 {
                self.tsfn_ref(true);
            }
            self.refs.set(refs + 1);
        }
        self.nodes.borrow_mut().insert(node.id, node);
    }

    fn forget_node(&self, node: &Node) {
        if node.counted {
            let refs = self.refs.get() - 1;
            self.refs.set(refs);
            if refs == 0 {
                self.tsfn_ref(false);
            }
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

unsafe extern "C" fn tsfn_call_js(env: RawEnv, js_cb: RawValue, context: *mut c_void, _data: *mut c_void) {
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
        unsafe { sys::napi_release_threadsafe_function(t.0, sys::ThreadsafeFunctionReleaseMode::abort) };
    }
    let _enter = Enter::new(&ctx);
    let nodes = std::mem::take(&mut *ctx.nodes.borrow_mut());
    for (_, node) in nodes {
        if let Finish::Granted = node.as_ref().finish() {
            // A grant nobody will see: give it back (wakes the next waiters).
            let _ = node.sem.core.release(node.n);
        }
    }
    LOCAL.with(|l| l.borrow_mut().clear());
    drop(_enter);
}

// ---------------------------------------------------------------------------
// Raw Node-API helpers.

/// Reads up to N arguments and the function's data pointer (the EnvCtx).
///
/// # Safety
/// Called from a Node-API callback with its `env` and `info`.
unsafe fn args<const N: usize>(env: RawEnv, info: sys::napi_callback_info) -> ([RawValue; N], *const EnvCtx) {
    let mut argv = [ptr::null_mut(); N];
    let mut argc = N;
    let mut data = ptr::null_mut();
    // SAFETY: argv has room for argc values; missing ones are filled with undefined.
    unsafe { sys::napi_get_cb_info(env, info, &mut argc, argv.as_mut_ptr(), ptr::null_mut(), &mut data) };
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
    let status = unsafe { sys::napi_create_external(env, data.cast(), Some(drop_handle), ptr::null_mut(), &mut out) };
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

// tryAcquire(h, n): OK | PENDING_OR_BUSY (no permits) | CLOSED | BAD_COUNT
native!(js_try_acquire, |env, _ctx, argv: [2]| {
    // SAFETY: handle contract (see `sem`).
    let Some(s) = (unsafe { sem(env, argv[0]) }) else { return int(env, BAD_ARGS) };
    let Some(n) = count(env, argv[1]) else { return int(env, BAD_COUNT) };
    let code = match s.core.try_acquire(n) {
        Ok(p) => {
            p.forget();
            OK
        }
        Err(TryAcquireError::NoPermits) => PENDING_OR_BUSY,
        Err(TryAcquireError::Closed) => CLOSED,
        Err(TryAcquireError::TooManyPermits) => BAD_COUNT,
    };
    int(env, code)
});

// acquire(h, n, id): OK (taken) | PENDING_OR_BUSY (queued as `id`) | CLOSED | BAD_COUNT
native!(js_acquire, |env, ctx, argv: [3]| {
    // SAFETY: handle contract (see `sem`).
    let Some(s) = (unsafe { sem(env, argv[0]) }) else { return int(env, BAD_ARGS) };
    let Some(n) = count(env, argv[1]) else { return int(env, BAD_COUNT) };
    let Some(id) = uint32(env, argv[2]) else { return int(env, BAD_ARGS) };
    match s.core.try_acquire(n) {
        Ok(p) => {
            p.forget();
            return int(env, OK);
        }
        Err(TryAcquireError::Closed) => return int(env, CLOSED),
        Err(TryAcquireError::TooManyPermits) => return int(env, BAD_COUNT),
        Err(TryAcquireError::NoPermits) => {}
    }
    if ctx.nodes.borrow().contains_key(&id) {
        return int(env, BAD_ARGS);
    }
    let node = Box::pin(Node {
        waiter: Waiter::new(),
        id,
        n,
        sem: s.clone(),
        env: ctx.shared.clone(),
        owner: ctx,
        counted: s.shared.load(Ordering::Relaxed),
    });
    let node_ptr = &*node as *const Node as *mut c_void;
    // SAFETY: the waiter is new; after Pending the node stays boxed, pinned and
    // alive in `ctx.nodes` until finish_raw (drain, cancel or cleanup) returned.
    let r = unsafe { s.core.acquire_raw(node.as_ref().waiter(), n, wake, node_ptr) };
    let code = match r {
        Ok(RawAcquire::Ready) => OK,
        Ok(RawAcquire::Pending) => {
            ctx.add_node(node);
            PENDING_OR_BUSY
        }
        Err(AcquireError::Closed) => CLOSED,
        Err(AcquireError::TooManyPermits) => BAD_COUNT,
    };
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

// cancel(id): k >= 0 outcomes written (the cancelled id is not among them)
native!(js_cancel, |env, ctx, argv: [1]| {
    let Some(id) = uint32(env, argv[0]) else { return int(env, BAD_ARGS) };
    let enter = Enter::new(ctx);
    let node = ctx.nodes.borrow_mut().remove(&id);
    if let Some(node) = node {
        if let Finish::Granted = node.as_ref().finish() {
            // Granted but not yet delivered: JS gave up on it, so give it back.
            let _ = node.sem.core.release(node.n);
        }
        ctx.forget_node(&node);
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
    let k = if ctx.ready.borrow().is_empty() { 0 } else { ctx.write_ready() };
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
        shared: Arc::new(EnvShared { remote: Mutex::new(Remote { ids: Vec::new(), tsfn: None, notified: false }) }),
        nodes: RefCell::new(HashMap::new()),
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
            return Err(napi::Error::from_reason("volt-sem: cannot register the env cleanup hook"));
        }
        for (name, cb) in fns {
            let mut f = ptr::null_mut();
            sys::napi_create_function(env, name.as_ptr(), -1, Some(cb), ctx.cast(), &mut f);
            sys::napi_set_named_property(env, target, name.as_ptr(), f);
        }
        sys::napi_set_named_property(env, target, c"maxPermits".as_ptr(), double(env, MAX_JS as f64));
    }
    Ok(())
}
