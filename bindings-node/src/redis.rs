//! `Semaphore.connect(url, name, permits, options)`: the front door of the
//! Redis backend (the seam's `Kind::Redis`), a semaphore shared by every
//! client on every host that connects to the same Redis, prefix and name.
//!
//! # Why a door of its own
//!
//! Every operation on a Redis semaphore is a network round trip (connect,
//! acquire's first step, tryAcquire, release, close, the census, a cancel),
//! up to the command timeout (5 s by default) when Redis is out of reach.
//! None of them may run on a JS thread: that thread is the event loop. So a
//! connected JS object owns a **door**: one helper thread (a plain std
//! thread; it never keeps the process alive) that runs the object's
//! operations one by one, in the order JS called them, and posts each
//! outcome back through the object's own threadsafe function. One thread
//! per door keeps the calls of one object in order (a `release()` called
//! before an `acquire()` reaches Redis first, even if neither was awaited)
//! and off the libuv pool (whose four threads a Redis outage would block for
//! the whole command timeout, starving `fs` and `dns`).
//!
//! The state is in Redis, so this path never uses the JS fast path over the
//! core's state word ([`view`](crate::view)), nor the queue nodes and the
//! shared `Uint32Array` of the local wake path ([`wake`](crate::wake)): like a
//! named semaphore it cannot be decided in this process, and unlike one its
//! outcomes carry more than a code (a fencing token, a session, a typed
//! error).
//!
//! # Wake path
//!
//! A queued acquire is a boxed, pinned [`Wait`] (the seam's [`Waiter`] plus
//! its JS id), owned by the door thread until `finish_raw` returned. Its wake
//! callback runs on the handle's agent thread (or a thread that found the
//! session lost); it only queues a `Collect` job for the door thread, which
//! calls `finish_raw` (no round trip once the request completed) and posts
//! the outcome. Only the door thread ever calls `finish_raw`, so a cancel
//! (`AbortSignal`, `timeout`) racing a grant is decided in one place: a
//! `Cancel` job finds the wait still there (it cancels it in Redis, handing
//! a partial grant on, and releases a grant that arrived meanwhile) or
//! already collected (JS then gets the grant and gives it back). Every
//! operation id gets exactly one outcome.
//!
//! # Lease loss
//!
//! Every grant carries the session that holds it. The door watches each new
//! session with the seam's `lease_watch` future, polled on the door thread
//! with a waker that queues a `Watch` job; when it completes, JS gets a
//! lease-lost event for that session (index.js aborts the session's
//! `AbortSignal`, `sem.leaseSignal` and `permit.signal`).
//!
//! # Life
//!
//! `disconnect()` (or the JS object's collection, or its thread's end) stops
//! the door: queued requests are cancelled in Redis, the handle is dropped
//! (its session ends, whatever it still held goes back) and the thread
//! exits. The threadsafe function is referenced only while JS has operations
//! in flight on the object (index.js counts them), like a timer: holding
//! permits keeps nothing alive.

use std::collections::{HashMap, VecDeque};
use std::ffi::c_void;
use std::future::Future;
use std::pin::Pin;
use std::ptr;
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use napi::sys;
use volt_sem_backend::redis::RedisSemaphore;
use volt_sem_backend::{
    ConnectOptions, Error, Finish, LeaseWatch, RawAcquire, Semaphore as Core, Waiter,
};

use crate::env::EnvCtx;
use crate::error_code::code_of;
use crate::raw::{args, boolean, count, double, lock, null, throw_internal};
use crate::{RawEnv, RawValue};

// Outcome kinds, as index.js reads them (`onRedisEvent`).
/// The operation succeeded; `vals` says with what.
const EV_OK: u32 = 0;
/// The operation failed with the error.
const EV_ERR: u32 = 1;
/// The acquire was cancelled (its partial grant, `vals[0]`, handed on).
const EV_CANCELLED: u32 = 2;
/// The session `vals[0]` was lost; the error says why.
const EV_LEASE_LOST: u32 = 3;
/// `tryAcquire`: not available now.
const EV_BUSY: u32 = 4;
/// The door stopped (the answer to `disconnect`); no event follows.
const EV_STOPPED: u32 = 5;

/// One operation, run on the door thread in submission order.
enum Job {
    Connect {
        url: String,
        name: String,
        permits: usize,
        // Boxed: the options are far larger than every other job.
        options: Box<ConnectOptions>,
    },
    /// `RedisSemaphore.delete`: a door of its own that deletes the name
    /// (no session), reports it as event 0 and stops.
    Delete {
        url: String,
        name: String,
        options: Box<ConnectOptions>,
    },
    TryAcquire {
        id: u32,
        n: usize,
    },
    Acquire {
        id: u32,
        n: usize,
    },
    /// A queued acquire was woken: collect its outcome.
    Collect {
        id: u32,
    },
    Cancel {
        id: u32,
    },
    Release {
        id: u32,
        n: usize,
    },
    Close {
        id: u32,
    },
    Census {
        id: u32,
    },
    /// A lease watch was woken: poll it again.
    Watch {
        session: u64,
    },
    Stop {
        id: u32,
    },
}

/// An outcome on its way to JS.
struct Event {
    id: u32,
    kind: u32,
    vals: [f64; 8],
    len: usize,
    err: Option<Error>,
}

impl Event {
    fn new(id: u32, kind: u32, vals: &[f64], err: Option<Error>) -> Self {
        let mut v = [0.0; 8];
        v[..vals.len()].copy_from_slice(vals);
        Event {
            id,
            kind,
            vals: v,
            len: vals.len(),
            err,
        }
    }
}

struct Tsfn(sys::napi_threadsafe_function);
// SAFETY: a threadsafe function may be called from any thread (that is its
// point); it is released and ref'd only on its JS thread.
unsafe impl Send for Tsfn {}

struct Out {
    events: Vec<Event>,
    tsfn: Option<Tsfn>,
    notified: bool,
}

/// What the door thread, the wake callbacks and the JS thread share.
struct Shared {
    jobs: Mutex<Jobs>,
    cv: Condvar,
    out: Mutex<Out>,
    /// A clone of the connected handle, for the JS thread's reads that need
    /// no round trip (held permits, closed); the door thread owns the
    /// handle and clears this when it stops, so that the session ends then
    /// (not when the last `Arc<Shared>` goes, which may be never for an
    /// External left to a finished thread).
    view: Mutex<Option<RedisSemaphore>>,
    /// index.js's number for this door (its events carry it).
    door: u32,
}

struct Jobs {
    queue: VecDeque<Job>,
    /// A `Stop` was submitted: later submissions are refused.
    stopping: bool,
}

impl Shared {
    /// Queues a job for the door thread; false once the door is stopping.
    fn submit(&self, job: Job) -> bool {
        let mut j = lock(&self.jobs);
        let internal = matches!(job, Job::Collect { .. } | Job::Watch { .. });
        if j.stopping && !internal {
            return false;
        }
        if matches!(job, Job::Stop { .. }) {
            j.stopping = true;
        }
        j.queue.push_back(job);
        drop(j);
        self.cv.notify_one();
        true
    }

    fn next(&self) -> Job {
        let mut j = lock(&self.jobs);
        loop {
            if let Some(job) = j.queue.pop_front() {
                return job;
            }
            j = self.cv.wait(j).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Posts an outcome to the JS thread (dropped if that thread is gone).
    fn emit(&self, ev: Event) {
        let mut o = lock(&self.out);
        let Some(t) = o.tsfn.as_ref().map(|t| t.0) else {
            return;
        };
        o.events.push(ev);
        if !o.notified {
            // SAFETY: `tsfn` is Some only until its finalizer (or our release)
            // cleared it, under this same lock.
            let status = unsafe {
                sys::napi_call_threadsafe_function(
                    t,
                    ptr::null_mut(),
                    sys::ThreadsafeFunctionCallMode::nonblocking,
                )
            };
            o.notified = status == sys::Status::napi_ok;
        }
    }
}

/// A queued acquire, pinned in its box from `acquire_raw` to `finish_raw`.
struct Wait {
    waiter: Waiter,
    id: u32,
    n: usize,
    shared: Arc<Shared>,
}

impl Wait {
    fn waiter(self: &Pin<Box<Self>>) -> Pin<&Waiter> {
        // SAFETY: the box is pinned and the waiter never moves out of it.
        unsafe { self.as_ref().map_unchecked(|w| &w.waiter) }
    }
}

/// The wake callback: runs on the agent thread (or one that found the
/// session lost); hands the collection to the door thread.
unsafe extern "C" fn wake(ctx: *mut c_void) {
    // SAFETY: `ctx` is the pinned Wait, alive until finish_raw returned, which
    // waits for this callback to return.
    let w = unsafe { &*(ctx as *const Wait) };
    // Must not unwind into the agent thread.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        w.shared.submit(Job::Collect { id: w.id });
    }));
}

/// Wakes the door thread to poll the watch of one session again.
struct WatchWake {
    shared: Arc<Shared>,
    session: u64,
}

impl Wake for WatchWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.shared.submit(Job::Watch {
            session: self.session,
        });
    }
}

/// The door thread's own state.
struct Door {
    shared: Arc<Shared>,
    core: Option<Core>,
    waits: HashMap<u32, Pin<Box<Wait>>>,
    watches: HashMap<u64, (LeaseWatch, Waker)>,
}

impl Door {
    fn core(&self) -> Result<&Core, Error> {
        // index.js submits nothing before connect resolved; a failed connect
        // stops the door.
        self.core.as_ref().ok_or(Error::Closed)
    }

    fn ok(&self, id: u32, vals: &[f64]) {
        self.shared.emit(Event::new(id, EV_OK, vals, None));
    }

    fn err(&self, id: u32, e: Error) {
        self.shared.emit(Event::new(id, EV_ERR, &[], Some(e)));
    }

    /// A grant held by `session`: watch that session if it is new.
    fn granted(&mut self, id: u32, token: u64, session: u64) {
        self.ok(id, &[token as f64, session as f64]);
        if session == 0 || self.watches.contains_key(&session) {
            return;
        }
        let Some(watch) = self.core().ok().and_then(|c| c.lease_watch(session)) else {
            return;
        };
        let waker = Waker::from(Arc::new(WatchWake {
            shared: self.shared.clone(),
            session,
        }));
        self.watches.insert(session, (watch, waker));
        self.poll_watch(session);
    }

    fn poll_watch(&mut self, session: u64) {
        let Some((watch, waker)) = self.watches.get_mut(&session) else {
            return;
        };
        let mut cx = Context::from_waker(waker);
        if let Poll::Ready(e) = Pin::new(watch).poll(&mut cx) {
            self.watches.remove(&session);
            self.shared.emit(Event::new(
                0,
                EV_LEASE_LOST,
                &[session as f64],
                Some(e.into()),
            ));
        }
    }

    /// Ends the wait `w` (finish_raw) and reports it as `id`'s outcome;
    /// `cancelled`: JS gave up on it (a grant that arrived is given back).
    fn finish(&mut self, w: Pin<Box<Wait>>, cancelled: bool) {
        let Ok(core) = self.core() else { return };
        // SAFETY: `w` was queued on this handle by `acquire` and is pinned.
        let f = unsafe { core.finish_raw(w.waiter()) };
        let (id, n) = (w.id, w.n);
        match f {
            Finish::Granted if cancelled => {
                // Granted before the cancel reached Redis: JS never sees it.
                let _ = core.release(n);
                self.shared
                    .emit(Event::new(id, EV_CANCELLED, &[n as f64], None));
            }
            Finish::Granted => {
                let (token, session) = (w.waiter.token().unwrap_or(0), w.waiter.session());
                self.granted(id, token, session);
            }
            Finish::Cancelled { returned } => {
                self.shared
                    .emit(Event::new(id, EV_CANCELLED, &[returned as f64], None));
            }
            Finish::Closed => self.err(id, Error::Closed),
            Finish::Failed(e) => self.err(id, e),
            Finish::Idle => self.err(id, Error::Protocol("the request vanished".into())),
        }
    }

    fn run(&mut self, job: Job) -> bool {
        match job {
            Job::Connect {
                url,
                name,
                permits,
                options,
            } => match Core::connect(&url, &name, permits, *options) {
                Ok(core) => {
                    let total = core.total_permits().unwrap_or(permits) as f64;
                    *lock(&self.shared.view) = core.as_redis().cloned();
                    self.core = Some(core);
                    self.ok(0, &[total]);
                }
                Err(e) => {
                    self.err(0, e);
                    return false;
                }
            },
            Job::Delete { url, name, options } => {
                match volt_sem_backend::delete_redis(&url, &name, *options) {
                    Ok(()) => self.ok(0, &[0.0]),
                    Err(e) => self.err(0, e),
                }
                return false;
            }
            Job::TryAcquire { id, n } => match self.core().and_then(|c| c.try_acquire(n)) {
                Ok(g) => self.granted(id, g.token().unwrap_or(0), g.session()),
                Err(Error::NoPermits) => self.shared.emit(Event::new(id, EV_BUSY, &[], None)),
                Err(e) => self.err(id, e),
            },
            Job::Acquire { id, n } => {
                let core = match self.core() {
                    Ok(c) => c,
                    Err(e) => {
                        self.err(id, e);
                        return true;
                    }
                };
                let w = Box::pin(Wait {
                    waiter: Waiter::new(),
                    id,
                    n,
                    shared: self.shared.clone(),
                });
                let ctx = &*w as *const Wait as *mut c_void;
                // SAFETY: the waiter is new (not busy); after Pending it stays
                // pinned in `waits` (with `ctx`, the same box) until finish_raw.
                match unsafe { core.acquire_raw(w.waiter(), n, wake, ctx) } {
                    Ok(RawAcquire::Ready) => {
                        let (token, session) = (w.waiter.token().unwrap_or(0), w.waiter.session());
                        self.granted(id, token, session);
                    }
                    Ok(RawAcquire::Pending) => {
                        // Its wake may have queued a Collect already: it runs
                        // after this job, and finds it here.
                        self.waits.insert(id, w);
                    }
                    Err(e) => self.err(id, e),
                }
            }
            Job::Collect { id } => {
                if let Some(w) = self.waits.remove(&id) {
                    self.finish(w, false);
                }
            }
            Job::Cancel { id } => {
                // Not there: already collected, its outcome is on its way.
                if let Some(w) = self.waits.remove(&id) {
                    self.finish(w, true);
                }
            }
            Job::Release { id, n } => match self.core().and_then(|c| c.release(n)) {
                Ok(()) => self.ok(id, &[]),
                Err(e) => self.err(id, e),
            },
            Job::Close { id } => match self.core().and_then(|c| c.close()) {
                Ok(()) => self.ok(id, &[]),
                Err(e) => self.err(id, e),
            },
            Job::Census { id } => {
                let r = self.core().and_then(|c| match c.as_redis() {
                    Some(r) => r.census().map_err(Error::from),
                    None => Err(Error::Unsupported),
                });
                match r {
                    Ok(c) => self.ok(
                        id,
                        &[
                            c.total as f64,
                            c.available as f64,
                            c.held as f64,
                            c.partial as f64,
                            c.queued as f64,
                            c.sessions as f64,
                            if c.closed { 1.0 } else { 0.0 },
                            c.last_token as f64,
                        ],
                    ),
                    Err(e) => self.err(id, e),
                }
            }
            Job::Watch { session } => self.poll_watch(session),
            Job::Stop { id } => {
                self.stop();
                self.shared.emit(Event::new(id, EV_STOPPED, &[], None));
                return false;
            }
        }
        true
    }

    /// Cancels what is still queued (in Redis) and drops the watches; the
    /// handle itself is dropped with the door (its session ends).
    fn stop(&mut self) {
        let waits: Vec<_> = self.waits.drain().map(|(_, w)| w).collect();
        if let Ok(core) = self.core() {
            for w in waits {
                // SAFETY: queued on this handle, pinned.
                if let Finish::Granted = unsafe { core.finish_raw(w.waiter()) } {
                    let _ = core.release(w.n);
                }
            }
        }
        self.watches.clear();
        *lock(&self.shared.view) = None;
        self.core = None; // its session ends (a round trip), on this thread
    }
}

fn door_thread(shared: Arc<Shared>) {
    let mut door = Door {
        shared: shared.clone(),
        core: None,
        waits: HashMap::new(),
        watches: HashMap::new(),
    };
    let mut stopped = false;
    loop {
        let job = shared.next();
        let id = match &job {
            Job::TryAcquire { id, .. }
            | Job::Acquire { id, .. }
            | Job::Release { id, .. }
            | Job::Close { id }
            | Job::Census { id }
            | Job::Stop { id } => Some(*id),
            Job::Connect { .. } => Some(0),
            _ => None,
        };
        let stop = matches!(job, Job::Stop { .. });
        stopped |= stop;
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| door.run(job))) {
            Ok(true) => {}
            Ok(false) => break,
            Err(_) => {
                // A bug: report it on the operation rather than leave its
                // promise pending forever.
                if let Some(id) = id {
                    let kind = if stop { EV_STOPPED } else { EV_ERR };
                    shared.emit(Event::new(
                        id,
                        kind,
                        &[],
                        Some(Error::Protocol("internal error (panic)".into())),
                    ));
                }
                if stop {
                    break;
                }
            }
        }
    }
    // Refuse later submissions; drop the handle here, off the JS thread (its
    // session ends with a round trip).
    lock(&shared.jobs).stopping = true;
    door.stop();
    drop(door);
    if !stopped {
        // A failed connect: let the JS thread release the threadsafe function.
        shared.emit(Event::new(u32::MAX, EV_STOPPED, &[], None));
    }
}

// ---------------------------------------------------------------------------
// Errors

fn string(env: RawEnv, s: &str) -> RawValue {
    let mut out = ptr::null_mut();
    // SAFETY: plain value creation on the JS thread; `s` is UTF-8 of that length.
    unsafe { sys::napi_create_string_utf8(env, s.as_ptr().cast(), s.len() as isize, &mut out) };
    out
}

/// The JS error for `e` (not thrown). Its message is the backend's, which
/// never carries the URL or a password.
fn js_error(env: RawEnv, e: &Error) -> RawValue {
    let (code, range) = code_of(e);
    let js_code = string(env, &code);
    let js_msg = match e {
        // The backend's text speaks of a process (as for a named semaphore,
        // whose permits are the process's); here they are the handle's own
        // session's: another RedisSemaphore object of this process holds its own.
        Error::NotHeld { held } => string(
            env,
            &format!(
                "volt-sem (Redis): released more permits than this handle holds ({held}); \
                 permits are released through the RedisSemaphore object that acquired them"
            ),
        ),
        _ => string(env, &format!("volt-sem (Redis): {e}")),
    };
    let mut err = ptr::null_mut();
    // SAFETY: plain value creation on the JS thread.
    unsafe {
        if range {
            sys::napi_create_range_error(env, js_code, js_msg, &mut err);
        } else {
            sys::napi_create_error(env, js_code, js_msg, &mut err);
        }
    }
    if err.is_null() {
        return null(env);
    }
    let extra = match e {
        Error::TotalMismatch { existing } => Some((c"existing", *existing as f64)),
        Error::NotHeld { held } => Some((c"held", *held as f64)),
        _ => None,
    };
    if let Some((name, v)) = extra {
        // SAFETY: plain Node-API call on the JS thread.
        unsafe { sys::napi_set_named_property(env, err, name.as_ptr(), double(env, v)) };
    }
    err
}

// ---------------------------------------------------------------------------
// The threadsafe function: outcomes to JS.

unsafe extern "C" fn call_js(
    env: RawEnv,
    js_cb: RawValue,
    context: *mut c_void,
    _data: *mut c_void,
) {
    if env.is_null() || js_cb.is_null() {
        return; // being torn down
    }
    // SAFETY: `context` is the Shared kept alive by the Arc the tsfn's
    // finalizer owns.
    let shared = unsafe { &*(context as *const Shared) };
    let events = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut o = lock(&shared.out);
        o.notified = false;
        std::mem::take(&mut o.events)
    })) {
        Ok(ev) => ev,
        Err(_) => return,
    };
    for ev in events {
        // SAFETY: plain Node-API calls on the JS thread the tsfn belongs to.
        unsafe {
            let mut recv = ptr::null_mut();
            sys::napi_get_undefined(env, &mut recv);
            let mut vals = ptr::null_mut();
            sys::napi_create_array_with_length(env, ev.len, &mut vals);
            for (i, v) in ev.vals[..ev.len].iter().enumerate() {
                sys::napi_set_element(env, vals, i as u32, double(env, *v));
            }
            let err = match &ev.err {
                Some(e) => js_error(env, e),
                None => null(env),
            };
            let argv = [
                double(env, f64::from(shared.door)),
                double(env, f64::from(ev.id)),
                double(env, f64::from(ev.kind)),
                vals,
                err,
            ];
            let mut result = ptr::null_mut();
            let status =
                sys::napi_call_function(env, recv, js_cb, argv.len(), argv.as_ptr(), &mut result);
            if status == sys::Status::napi_pending_exception {
                // index.js's handler does not throw; if it did, report it
                // rather than lose the remaining events.
                let mut exc = ptr::null_mut();
                sys::napi_get_and_clear_last_exception(env, &mut exc);
                sys::napi_fatal_exception(env, exc);
            }
        }
        if ev.kind == EV_STOPPED {
            let t = lock(&shared.out).tsfn.take();
            if let Some(t) = t {
                // SAFETY: on the tsfn's JS thread; the last call on it.
                unsafe {
                    sys::napi_release_threadsafe_function(
                        t.0,
                        sys::ThreadsafeFunctionReleaseMode::release,
                    )
                };
            }
        }
    }
}

unsafe extern "C" fn finalize(_env: RawEnv, data: *mut c_void, _hint: *mut c_void) {
    // SAFETY: `data` is the Arc<Shared> leaked for the tsfn in `js_connect`.
    let shared = unsafe { Arc::from_raw(data as *const Shared) };
    lock(&shared.out).tsfn = None;
    // The thread ended (a worker terminated, Node exiting): stop the door
    // (its handle ends its session). A no-op after `disconnect`.
    shared.submit(Job::Stop { id: 0 });
}

/// What the JS object holds (through an External).
struct Handle {
    shared: Arc<Shared>,
}

unsafe extern "C" fn drop_handle(_env: RawEnv, data: *mut c_void, _hint: *mut c_void) {
    // SAFETY: `data` is the Box<Handle> leaked by `js_connect`.
    let h = unsafe { Box::from_raw(data as *mut Handle) };
    // The JS object was collected: nobody can await its outcomes.
    h.shared.submit(Job::Stop { id: 0 });
}

/// # Safety
/// `v` is an External made by `js_connect` (index.js keeps them private).
unsafe fn handle_of<'a>(env: RawEnv, v: RawValue) -> Option<&'a Handle> {
    let mut p = ptr::null_mut();
    // SAFETY: fails on a non-external, leaving p null.
    let status = unsafe { sys::napi_get_value_external(env, v, &mut p) };
    if status != sys::Status::napi_ok || p.is_null() {
        return None;
    }
    // SAFETY: only js_connect makes the externals passed here; each points at
    // a boxed Handle freed by its finalizer, after the last call.
    Some(unsafe { &*(p as *const Handle) })
}

fn ms(env: RawEnv, v: RawValue) -> Option<Duration> {
    let mut d = f64::NAN;
    // SAFETY: fails (leaving NaN) on a non-number.
    unsafe { sys::napi_get_value_double(env, v, &mut d) };
    (d.is_finite() && d > 0.0 && d <= 1e12).then(|| Duration::from_secs_f64(d / 1000.0))
}

fn u32_of(env: RawEnv, v: RawValue) -> u32 {
    let mut out = 0u32;
    // SAFETY: fails on a non-number, leaving 0.
    unsafe { sys::napi_get_value_uint32(env, v, &mut out) };
    out
}

fn bool_of(env: RawEnv, v: RawValue) -> bool {
    let mut out = false;
    // SAFETY: fails on a non-boolean, leaving false.
    unsafe { sys::napi_get_value_bool(env, v, &mut out) };
    out
}

fn throw_type(env: RawEnv, msg: &std::ffi::CStr) -> RawValue {
    // SAFETY: plain Node-API call on the JS thread.
    unsafe { sys::napi_throw_type_error(env, c"ERR_INVALID_ARG_TYPE".as_ptr(), msg.as_ptr()) };
    ptr::null_mut()
}

// redisConnect(door, url, name, permits, lease, prefix, connectTimeout,
// commandTimeout, cluster, onEvent, tlsCaFile, tlsCert, tlsKey, minReplicas,
// minReplicasTimeout, deleteOnly): External. With `deleteOnly` the door
// deletes the name instead of connecting (`RedisSemaphore.delete`), reports
// it as event 0 and stops. index.js checked the types;
// the content (URL, name, prefix, permits, option ranges) is checked by the
// backend on the door thread, and reported as connect's outcome (event 0).
native!(js_connect, |env, _ctx, argv: [16]| {
    let door = u32_of(env, argv[0]);
    let (Some(url), Some(name), Some(prefix)) = (
        crate::named::string_arg(env, argv[1]),
        crate::named::string_arg(env, argv[2]),
        crate::named::string_arg(env, argv[5]),
    ) else {
        return throw_type(env, c"volt-sem: connect() needs string url, name and prefix");
    };
    let permits = count(env, argv[3]).unwrap_or(0); // 0: refused by the backend
    let mut options = ConnectOptions::new().prefix(&prefix).cluster(bool_of(env, argv[8]));
    // Out of range: handed on as zero, which the backend refuses with its
    // typed error (index.js checks the ranges first).
    options = options
        .lease(ms(env, argv[4]).unwrap_or(Duration::ZERO))
        .connect_timeout(ms(env, argv[6]).unwrap_or(Duration::ZERO))
        .command_timeout(ms(env, argv[7]).unwrap_or(Duration::ZERO));
    // TLS and replication (null/undefined where not given).
    if let Some(ca) = crate::named::string_arg(env, argv[10]) {
        options = options.tls_ca_file(ca);
    }
    if let (Some(cert), Some(key)) = (
        crate::named::string_arg(env, argv[11]),
        crate::named::string_arg(env, argv[12]),
    ) {
        options = options.tls_client_cert(cert, key);
    }
    let replicas = count(env, argv[13]).unwrap_or(0);
    if replicas > 0 {
        options =
            options.min_replicas_acked(replicas, ms(env, argv[14]).unwrap_or(Duration::ZERO));
    }
    let shared = Arc::new(Shared {
        jobs: Mutex::new(Jobs {
            queue: VecDeque::new(),
            stopping: false,
        }),
        cv: Condvar::new(),
        out: Mutex::new(Out {
            events: Vec::new(),
            tsfn: None,
            notified: false,
        }),
        view: Mutex::new(None),
        door,
    });
    let mut res_name = ptr::null_mut();
    let mut tsfn = ptr::null_mut();
    let fin = Arc::into_raw(shared.clone());
    // SAFETY: `argv[9]` is the JS callback; `fin` is owned by the tsfn's
    // finalizer, and the context pointer stays valid as long as it.
    let status = unsafe {
        sys::napi_create_string_utf8(env, c"volt-sem redis".as_ptr(), -1, &mut res_name);
        sys::napi_create_threadsafe_function(
            env,
            argv[9],
            ptr::null_mut(),
            res_name,
            0,
            1,
            fin as *mut c_void,
            Some(finalize),
            fin as *mut c_void,
            Some(call_js),
            &mut tsfn,
        )
    };
    if status != sys::Status::napi_ok {
        // SAFETY: the tsfn was not created: its finalizer will not run.
        drop(unsafe { Arc::from_raw(fin) });
        return throw_type(env, c"volt-sem: connect() could not create its callback");
    }
    // Referenced while operations are in flight (index.js: `redisRef`).
    // SAFETY: on the JS thread; the tsfn was just created.
    unsafe { sys::napi_unref_threadsafe_function(env, tsfn) };
    lock(&shared.out).tsfn = Some(Tsfn(tsfn));
    if bool_of(env, argv[15]) {
        shared.submit(Job::Delete {
            url,
            name,
            options: Box::new(options),
        });
    } else {
        shared.submit(Job::Connect {
            url,
            name,
            permits,
            options: Box::new(options),
        });
    }
    let thread_shared = shared.clone();
    let spawned = std::thread::Builder::new()
        .name("volt-sem redis door".into())
        .spawn(move || door_thread(thread_shared));
    if spawned.is_err() {
        shared.emit(Event::new(0, EV_ERR, &[], Some(Error::Connection("cannot start a thread".into()))));
    }
    let data = Box::into_raw(Box::new(Handle { shared }));
    let mut out = ptr::null_mut();
    // SAFETY: the finalizer frees `data` exactly once.
    let status = unsafe { sys::napi_create_external(env, data.cast(), Some(drop_handle), ptr::null_mut(), &mut out) };
    if status != sys::Status::napi_ok {
        // SAFETY: not handed to Node; still ours.
        drop(unsafe { Box::from_raw(data) });
        return null(env);
    }
    out
});

/// Submits `job` (made from the handle and the arguments); false if the
/// door is stopped.
fn submit(env: RawEnv, argv: &[RawValue], job: impl FnOnce(u32) -> Option<Job>) -> RawValue {
    // SAFETY: index.js passes its private External.
    let Some(h) = (unsafe { handle_of(env, argv[0]) }) else {
        return boolean(env, false);
    };
    let Some(job) = job(u32_of(env, argv[1])) else {
        return boolean(env, false);
    };
    boolean(env, h.shared.submit(job))
}

// redisAcquire(h, id, n) / redisTryAcquire / redisRelease: bool (submitted).
native!(js_acquire, |env, _ctx, argv: [3]| {
    let n = count(env, argv[2]);
    submit(env, &argv, |id| n.map(|n| Job::Acquire { id, n }))
});
native!(js_try_acquire, |env, _ctx, argv: [3]| {
    let n = count(env, argv[2]);
    submit(env, &argv, |id| n.map(|n| Job::TryAcquire { id, n }))
});
native!(js_release, |env, _ctx, argv: [3]| {
    let n = count(env, argv[2]);
    submit(env, &argv, |id| n.map(|n| Job::Release { id, n }))
});
// redisCancel(h, id) / redisClose / redisCensus / redisStop: bool.
native!(js_cancel, |env, _ctx, argv: [2]| { submit(env, &argv, |id| Some(Job::Cancel { id })) });
native!(js_close, |env, _ctx, argv: [2]| { submit(env, &argv, |id| Some(Job::Close { id })) });
native!(js_census, |env, _ctx, argv: [2]| { submit(env, &argv, |id| Some(Job::Census { id })) });
native!(js_stop, |env, _ctx, argv: [2]| { submit(env, &argv, |id| Some(Job::Stop { id })) });

// redisRef(h, on): whether the object's operations in flight keep the thread
// alive (index.js turns it on while any is, unless unref()'d).
native!(js_ref, |env, _ctx, argv: [2]| {
    // SAFETY: index.js passes its private External.
    let Some(h) = (unsafe { handle_of(env, argv[0]) }) else { return null(env) };
    let on = bool_of(env, argv[1]);
    if let Some(t) = lock(&h.shared.out).tsfn.as_ref() {
        // SAFETY: on the tsfn's JS thread, before its release.
        unsafe {
            if on {
                sys::napi_ref_threadsafe_function(env, t.0);
            } else {
                sys::napi_unref_threadsafe_function(env, t.0);
            }
        }
    }
    null(env)
});

// redisHeld(h): permits held by this handle's current session, as it counts
// them (no round trip); redisClosed(h): whether it saw the semaphore closed.
native!(js_held, |env, _ctx, argv: [1]| {
    // SAFETY: index.js passes its private External.
    let Some(h) = (unsafe { handle_of(env, argv[0]) }) else { return null(env) };
    let held = lock(&h.shared.view).as_ref().map_or(0, |r| r.held_permits());
    double(env, held as f64)
});
native!(js_closed, |env, _ctx, argv: [1]| {
    // SAFETY: index.js passes its private External.
    let Some(h) = (unsafe { handle_of(env, argv[0]) }) else { return null(env) };
    boolean(env, lock(&h.shared.view).as_ref().is_some_and(|r| r.is_closed()))
});
