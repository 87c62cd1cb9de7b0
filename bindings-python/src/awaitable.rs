//! The awaitable `sem.acquire(n)` ([`Acquire`]), the finished awaitable
//! ([`finished`]), and the lock roles that make a wrong release an error.
//!
//! # asyncio (and uvloop)
//!
//! [`Acquire`] is its own iterator (`__await__`, `__iter__`, `__next__`, `send`,
//! `throw`, `close`). Its first step tries the core's lock-free fast path and,
//! when permits are free, finishes at once: no Future, no loop call. Only when it
//! must wait does it create a Future on the running loop, queue a
//! [`Slot`](crate::wake::Slot) whose target is that Future, and yield the Future
//! as `Future.__await__` would. The wake path (`wake` module) resolves the Future
//! on the loop's own thread; the resumed step then finishes the waiter.
//! Cancellation reaches it only through `throw`/`close` (with `Drop` and the
//! GC's `tp_clear` as backstops); each of them finishes the waiter, handing a
//! partial grant on and releasing a full grant that arrived just before the
//! cancel.
//!
//! A contended `async with sem:` (a local semaphore's) reuses its objects:
//! the `Acquire` its `__aenter__` returns comes from the thread's pool of
//! acquires whose wait ended ([`pooled_acquire`], only when the pool holds
//! the last reference), and keeps the wait slot of its last wait for the
//! next ([`Slot::renew`]: only when nothing else holds the slot and its
//! waiter is idle, so no wake of the old wait can reach it).
//!
//! # trio (and anyio on trio)
//!
//! `__await__` checks for a running asyncio loop (one C call). Without one, and
//! inside a trio task (or with one, in a trio task of a guest run hosted by
//! that loop: one more Python call, only once trio is imported), it returns the iterator of `volt_sem._glue`'s coroutine
//! instead of the acquire itself, so trio drives plain Python frames, never a
//! native frame with Python code under it. That coroutine takes the fast path
//! or queues a [`TrioWaiter`] (`trio.rs`) whose slot targets the trio task,
//! and parks the task with `trio.lowlevel.wait_task_rescheduled`; the run's
//! wake pump reschedules it. Trio's abort callback (`TrioWaiter::abort`)
//! cancels the wait, handing a partial grant on and releasing a full grant
//! not yet delivered; once the pump has rescheduled the task the abort fails,
//! as trio's protocol requires, and the acquire completes. Outside asyncio and
//! trio, a step that must wait raises `RuntimeError` naming the supported
//! libraries.
//!
//! # Lock roles
//!
//! `Mutex` and `RwLock` are semaphores whose releases must match an acquire.
//! Counting available permits cannot tell "a writer holds" from "a reader holds
//! and a writer waits", so each lock keeps its own [`Held`] record, updated when
//! an acquire *completes* (not when the core grants: a grant in transit to a
//! waiter is not held yet) and checked by every release, which raises
//! `RuntimeError` and changes nothing when it does not match.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use pyo3::exceptions::{PyRuntimeError, PyStopIteration, PyValueError};
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyTuple;
use pyo3::PyTraverseError;
use volt_sem_backend::{Error, Finish, RawAcquire, Waiter, WaiterState};

use crate::blocking::blocking_acquire;
use crate::coroutine::{coroutine_pymethods, thrown};
use crate::errors::{acquire_error, closed_error, disconnected_error, release_error};
use crate::future::{new_future, yield_future};
use crate::interpreter::running_loop;
use crate::redis::{give_back, owner, Extra, Owner};
use crate::trio::TrioWaiter;
use crate::wake::{
    asyncio_chan_or_setup, cached_running_loop, finish_owned, reap_closed_loops, waking, Owned,
    Slot,
};
use crate::Core;

// ---------------------------------------------------------------------------
// Lock roles
// ---------------------------------------------------------------------------

/// Who holds a `Mutex` or `RwLock`, as far as completed acquires tell.
#[derive(Default)]
pub(crate) struct Held {
    readers: AtomicUsize,
    writer: AtomicBool,
}

/// What an acquire means to its lock, if any.
#[derive(Clone)]
pub(crate) enum Role {
    /// A counting semaphore: releases are not matched.
    Count,
    /// A `BoundedSemaphore`: the permits taken through it and not released
    /// yet; a release of more raises `ValueError` (asyncio's rule).
    Bounded(Arc<AtomicUsize>),
    /// The exclusive holder (`Mutex`, `RwLock` writer); the error of a
    /// release that does not match, and the call that acquires (for the
    /// warning of an acquire never awaited).
    Exclusive(Arc<Held>, &'static str, &'static str),
    /// One shared holder (`RwLock` reader).
    Shared(Arc<Held>),
}

impl Role {
    /// Records a completed acquire of `n` permits.
    pub(crate) fn taken(&self, n: usize) {
        match self {
            Role::Count => {}
            Role::Bounded(held) => {
                held.fetch_add(n, Ordering::AcqRel);
            }
            Role::Exclusive(h, _, _) => h.writer.store(true, Ordering::Release),
            Role::Shared(h) => {
                h.readers.fetch_add(1, Ordering::AcqRel);
            }
        }
    }

    /// The call a user writes to acquire `n` permits in this role (for the
    /// warning of an acquire never awaited).
    fn call(&self, n: usize) -> String {
        match self {
            Role::Count | Role::Bounded(_) => format!("sem.acquire({n})"),
            Role::Exclusive(_, _, call) => (*call).to_owned(),
            Role::Shared(_) => "rw.read()".to_owned(),
        }
    }

    /// Releases `n` permits for this role: `RuntimeError` (nothing changed) if the
    /// role does not hold the lock.
    pub(crate) fn release(&self, py: Python<'_>, core: &Core, n: usize) -> PyResult<()> {
        match self {
            Role::Count => {}
            Role::Bounded(held) => {
                if held
                    .fetch_update(Ordering::AcqRel, Ordering::Acquire, |h| h.checked_sub(n))
                    .is_err()
                {
                    return Err(PyValueError::new_err(
                        "BoundedSemaphore released too many times",
                    ));
                }
            }
            Role::Exclusive(h, msg, _) => {
                if !h.writer.swap(false, Ordering::AcqRel) {
                    return Err(PyRuntimeError::new_err(*msg));
                }
            }
            Role::Shared(h) => {
                if h.readers
                    .fetch_update(Ordering::AcqRel, Ordering::Acquire, |r| r.checked_sub(1))
                    .is_err()
                {
                    return Err(PyRuntimeError::new_err("RwLock is not read-locked"));
                }
            }
        }
        let (r, woke) = waking(py, || release_error(core, n));
        if r.is_err() {
            self.taken(n); // undo: nothing changed
        }
        r.and(woke)
    }
}

// ---------------------------------------------------------------------------
// Cached Python objects
// ---------------------------------------------------------------------------

static TRIO_WAIT: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static NO_LOOP_ERROR: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static FINISHED: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static READY: PyOnceLock<Py<Ready>> = PyOnceLock::new();
static EXHAUSTED: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// Whether trio was imported, and its import finished: without it no trio run
/// can await this, and `__await__` skips the running-loop lookup (whose fork
/// check is a `getpid` system call; `park` looks the loop up anyway). A trio
/// still being imported (by another thread: `trio` is in `sys.modules`, its
/// spec `_initializing`) counts as not imported: no trio run exists before its
/// import ends, and [`trio_may_run_here`]'s own `import trio` would wait for
/// that import's lock with the GIL dropped, under this extension's `extern
/// "C"` frames; a daemon thread taking the GIL back once the interpreter
/// finalizes is ended by a forced unwind that cannot cross them (an abort;
/// `tests/scripts/acquire_during_trio_import.py`). The module last seen
/// finished is remembered (by address), so the spec is read once.
#[inline(always)]
pub(crate) fn trio_loaded(py: Python<'_>) -> bool {
    use pyo3::ffi;
    let name = pyo3::intern!(py, "trio");
    // SAFETY: GIL held; `sys.modules` (borrowed) and `name` are live. The
    // item is borrowed, NULL when absent (no error) or when the lookup
    // failed (`sys.modules` replaced by a non-dict: an error, cleared; then
    // trio counts as imported, the safe answer).
    let trio = unsafe {
        let t = ffi::PyDict_GetItemWithError(ffi::PyImport_GetModuleDict(), name.as_ptr());
        if t.is_null() {
            if ffi::PyErr_Occurred().is_null() {
                return false;
            }
            ffi::PyErr_Clear();
            return true;
        }
        t
    };
    if TRIO_IMPORTED.load(Ordering::Relaxed) == trio as usize {
        return true;
    }
    // SAFETY: `trio` is a live object (borrowed from `sys.modules`).
    trio_import_finished(py, unsafe { &Bound::from_borrowed_ptr(py, trio) })
}

/// [`trio_loaded`] when `sys.modules` holds a `trio` not seen finished yet
/// (out of line: asyncio's contended path never gets here).
#[cold]
#[inline(never)]
fn trio_import_finished(py: Python<'_>, trio: &Bound<'_, PyAny>) -> bool {
    let address = trio.as_ptr() as usize;
    // Plain attribute reads (a module's and a `ModuleSpec`'s dict): no Python
    // code runs, as `import` itself checks it.
    let initializing = trio
        .getattr(pyo3::intern!(py, "__spec__"))
        .and_then(|spec| spec.getattr(pyo3::intern!(py, "_initializing")))
        .and_then(|i| i.is_truthy())
        .unwrap_or(false);
    if !initializing {
        TRIO_IMPORTED.store(address, Ordering::Relaxed);
    }
    !initializing
}

/// The address of the `trio` module last seen in `sys.modules` with its
/// import finished (0: none yet).
static TRIO_IMPORTED: AtomicUsize = AtomicUsize::new(0);

/// Whether the caller may be a trio task: trio is imported, and either no
/// asyncio loop runs on this thread (no Python call; the acquire's step
/// decides) or one does and a trio task runs on it anyway (trio's guest
/// mode, `trio.lowlevel.start_guest_run` on an asyncio host), which must
/// wait trio's way: an asyncio Future yielded to trio is a `TypeError`.
#[inline]
fn trio_may_run_here(py: Python<'_>) -> PyResult<bool> {
    if !trio_loaded(py) {
        return Ok(false);
    }
    trio_task_may_run_here(py)
}

/// [`trio_may_run_here`] once trio is imported (out of line: an asyncio
/// program's contended path, the commonest, never gets here).
#[inline(never)]
fn trio_task_may_run_here(py: Python<'_>) -> PyResult<bool> {
    if running_loop(py)?.is_none() {
        return Ok(true);
    }
    TRIO_TASK_HERE
        .get_or_try_init(py, || {
            py.import("volt_sem._glue")?
                .call_method0("trio_task_probe")
                .map(Bound::unbind)
        })?
        .bind(py)
        .call0()?
        .is_truthy()
}

static TRIO_TASK_HERE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static CONNECT_THEN_WAIT: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// What a wait on `fut` yields to asyncio's Task: the Future itself, or,
/// when the loop's wake channel came back unconnected from
/// [`asyncio_chan_or_setup`] (the loop's first wait, on a thread that may be
/// a daemon one), a `volt_sem._glue.ConnectThenWait`, whose
/// `add_done_callback` connects it from the Task's own frame: connecting
/// drops the GIL, which must not happen under this extension's frames there.
/// The waiter was registered before, so it loses no wake meanwhile (a wake
/// writes its byte to the socket, read once connected). Every wait on an
/// asyncio loop (`Acquire`, `LeaseLost`) yields through here.
#[inline]
pub(crate) fn wait_on(
    py: Python<'_>,
    event_loop: &Bound<'_, PyAny>,
    unconnected: Option<Bound<'_, PyAny>>,
    fut: &Bound<'_, PyAny>,
) -> PyResult<Py<PyAny>> {
    match unconnected {
        Some(channel) => connect_then_wait(py, event_loop, channel, fut),
        None => yield_future(py, fut),
    }
}

/// [`wait_on`] for a channel not connected yet (a loop's first wait),
/// out of line.
#[cold]
#[inline(never)]
fn connect_then_wait(
    py: Python<'_>,
    event_loop: &Bound<'_, PyAny>,
    channel: Bound<'_, PyAny>,
    fut: &Bound<'_, PyAny>,
) -> PyResult<Py<PyAny>> {
    Ok(CONNECT_THEN_WAIT
        .import(py, "volt_sem._glue", "ConnectThenWait")?
        .call1((event_loop, channel, fut))?
        .unbind())
}

/// The finished awaitable (`volt_sem._finished.FINISHED`, looked up when the
/// module is imported: [`init_finished`]): `await` on it gives `None` at
/// once, and the interpreter completes that `await` without calling into
/// this extension.
pub(crate) fn finished(py: Python<'_>) -> PyResult<Py<PyAny>> {
    match FINISHED.get(py) {
        Some(f) => Ok(f.clone_ref(py)),
        None => init_finished(py),
    }
}

/// Looks up [`finished`]'s object: from the module's initialisation, so
/// that no later call imports (an import may drop the GIL, which the
/// release paths, not gated, must not do under this extension's frames;
/// see `interpreter`).
pub(crate) fn init_finished(py: Python<'_>) -> PyResult<Py<PyAny>> {
    FINISHED
        .import(py, "volt_sem._finished", "FINISHED")
        .map(|f| f.clone().unbind())
}

/// The finished coroutine of `release_async()` and `close_async()`: what
/// their callers may start as a task (`asyncio.create_task`, `asyncio.run`,
/// trio's `start_soon` and `trio.run`), which takes only a
/// `collections.abc.Coroutine` (asyncio since 3.12; trio always), not the
/// generator [`finished`] returns (that one serves the `async with` paths,
/// which only `await` it). One object for all (frozen, stateless).
pub(crate) fn ready(py: Python<'_>) -> PyResult<Py<Ready>> {
    READY
        .get_or_try_init(py, || Py::new(py, Ready))
        .map(|r| r.clone_ref(py))
}

/// A finished coroutine: `await` on it (or `send`) gives `None` at once.
/// `__await__` hands the interpreter an exhausted iterator (`iter(())`, one
/// for all), whose end the interpreter reads without calling back into this
/// extension: an `await` costs one call here, not two. (Not the generator of
/// [`finished`]: `__await__` may not return a coroutine, and a
/// `types.coroutine` generator counts as one.)
#[pyclass(module = "volt_sem", frozen)]
pub(crate) struct Ready;

#[pymethods]
impl Ready {
    fn __await__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        EXHAUSTED
            .get_or_try_init(py, || {
                let it = pyo3::types::PyTuple::empty(py).try_iter()?;
                Ok::<_, PyErr>(it.into_any().unbind())
            })
            .map(|it| it.clone_ref(py))
    }

    #[pyo3(signature = (_value = None, /))]
    fn send(&self, _value: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        Err(PyStopIteration::new_err(()))
    }

    #[pyo3(signature = (typ, val = None, tb = None, /))]
    fn throw(
        &self,
        py: Python<'_>,
        typ: &Bound<'_, PyAny>,
        val: Option<&Bound<'_, PyAny>>,
        tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        Err(thrown(py, typ, val, tb)?)
    }

    fn close(&self) {}
}

// ---------------------------------------------------------------------------
// Acquire
// ---------------------------------------------------------------------------

enum Stage {
    Start,
    /// asyncio: queued, the slot's target is the Future yielded.
    Waiting(Pin<Arc<Slot>>),
    /// trio: `__await__` handed the wait to `_glue`'s coroutine, which drives
    /// this waiter and reports a success through `_acquired`.
    Trio(Py<TrioWaiter>),
    Done,
}

/// An acquire of `n` permits: awaitable once, and an async (or blocking) context
/// manager that releases those permits on exit; the grant (`token`).
#[pyclass(module = "volt_sem")]
pub(crate) struct Acquire {
    core: Arc<Core>,
    n: usize,
    role: Role,
    /// `await` evaluates to `True` (`sem.acquire()`, asyncio-compatible) or `None`.
    returns_true: bool,
    /// `async with sem.acquire(n) as grant:`: the `await` of `__aenter__`
    /// evaluates to this object itself (a reference cycle until the wait
    /// ends, visited by the GC).
    enter_self: Option<Py<PyAny>>,
    stage: Stage,
    /// Permits acquired through this object and not yet released by `__aexit__`.
    held: bool,
    /// A Redis handle's state (`None`: local or named).
    redis: Option<Arc<Extra>>,
    /// Redis: who awaits (or enters), looked up before the request (see
    /// `redis::owner`); the grant is recorded as theirs.
    owner: Option<Owner>,
    /// The grant's fencing token (Redis) and its session.
    token: Option<u64>,
    grant_session: u64,
    /// Made by `__aenter__` after its fast path found no permits, outside
    /// trio: `__await__` asks no more, and the first step queues at once.
    contended_enter: bool,
    /// The slot of this object's last wait, kept for its next one
    /// ([`Slot::renew`]) when the object is pooled ([`Acquire::poolable`]).
    spare: Option<Arc<Slot>>,
}

impl Acquire {
    pub(crate) fn new(core: Arc<Core>, n: usize, role: Role, returns_true: bool) -> Self {
        Acquire {
            core,
            n,
            role,
            returns_true,
            enter_self: None,
            stage: Stage::Start,
            held: false,
            redis: None,
            owner: None,
            token: None,
            grant_session: 0,
            contended_enter: false,
            spare: None,
        }
    }

    /// Whether this object goes back to the thread's pool once its wait
    /// ends ([`pool_finished`]): a contended `__aenter__`'s, whose object
    /// nobody sees (`async with sem:` awaits it and lets it go), of a local
    /// semaphore. A named or Redis handle's is not pooled: a pooled object
    /// must not keep a session's core alive after the handle is gone.
    fn poolable(&self) -> bool {
        self.contended_enter && self.core.as_local().is_some()
    }

    /// A pooled object made ready again as [`enter_one_in`] makes a new
    /// one for a contended `__aenter__` (`Acquire::new(core, 1, role,
    /// false)`, `contended_enter`); what a pooled object holds is left as
    /// it is only where it already has the value (the same core, the
    /// counting role), and `spare` is kept.
    fn renew_for_enter(&mut self, core: &Arc<Core>, role: &Role) {
        if !Arc::ptr_eq(&self.core, core) {
            self.core = core.clone();
        }
        if !matches!((&self.role, role), (Role::Count, Role::Count)) {
            self.role = role.clone();
        }
        self.n = 1;
        self.returns_true = false;
        self.enter_self = None;
        self.stage = Stage::Start;
        self.held = false;
        self.owner = None;
        self.token = None;
        self.grant_session = 0;
        self.contended_enter = true;
        // `redis` is `None` in every pooled object (a local semaphore's).
    }

    /// This acquire belongs to a Redis handle.
    pub(crate) fn of_redis(mut self, redis: Option<Arc<Extra>>) -> Self {
        self.redis = redis;
        self
    }

    /// Records the grant's token and session (Redis: as the owner's grant).
    fn record(&mut self, (token, session): crate::wake::Got) {
        self.token = token;
        self.grant_session = session;
        if let Some(extra) = &self.redis {
            let owner = self.owner.unwrap_or_else(Owner::thread);
            extra.granted(owner, session, self.n, token);
        }
    }

    /// Releases what this object holds (its exit): a Redis grant per its
    /// session, else through the role.
    fn release_held(&mut self, py: Python<'_>) -> PyResult<()> {
        if !std::mem::take(&mut self.held) {
            return Ok(());
        }
        match &self.redis {
            Some(extra) => {
                let owner = self.owner.unwrap_or_else(Owner::thread);
                extra.forget_grant(owner, self.grant_session, self.n);
                crate::redis::release_from(&self.core, self.n, self.grant_session)
            }
            None => self.role.release(py, &self.core, self.n),
        }
    }

    /// The exit of `async with` / `with` (`args`: the exception the body
    /// raised, if any): releases the permits. The body's outcome decides
    /// how the block ends, never a release that fails after it: with the
    /// body's own exception whatever the release meets (raising from here
    /// would replace it), and normally when the handle was disconnected
    /// while the body ran (the disconnect gave the permits back: nothing
    /// is left to release). Otherwise a failed release raises (a Redis
    /// lease lost meanwhile: `LeaseExpiredError`, for the body did not hold
    /// the permits to its end). Node's `runExclusive` does the same.
    fn exit(&mut self, py: Python<'_>, args: &Bound<'_, PyTuple>) -> PyResult<()> {
        let raised = args.get_item(0).is_ok_and(|t| !t.is_none());
        match self.release_held(py) {
            Err(_) if raised => Ok(()),
            Err(_) if self.core.is_disconnected() => Ok(()),
            r => r,
        }
    }

    /// What the finished `await` evaluates to, as `StopIteration` (or `Ok(None)`).
    fn result(&mut self) -> PyResult<Option<Py<PyAny>>> {
        if let Some(me) = self.enter_self.take() {
            return Err(PyStopIteration::new_err((me,)));
        }
        if self.returns_true {
            Err(PyStopIteration::new_err(true))
        } else {
            Ok(None)
        }
    }

    /// After its handle was disconnected, a finished acquire that holds
    /// nothing lets go of the handle (an exception's traceback may keep this
    /// object alive for long): the process detaches once nothing else uses
    /// the name.
    fn leave_session(&mut self) {
        if !self.held && matches!(self.stage, Stage::Done) && self.core.is_disconnected() {
            self.core = crate::inert_core();
        }
    }

    /// The iterator has finished with the permits acquired (`waiter`: the
    /// request's, for the grant's token and session).
    #[inline]
    fn acquired(&mut self, waiter: Option<Pin<&Waiter>>) -> PyResult<Option<Py<PyAny>>> {
        self.stage = Stage::Done;
        self.held = true;
        self.role.taken(self.n);
        if let Some(w) = waiter {
            self.record((w.token(), w.session()));
        }
        self.result()
    }

    /// One step of the coroutine protocol: `Ok(Some(x))` yields, `Ok(None)`
    /// returns `None`, an error raises (including `StopIteration(True)`).
    fn step(&mut self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        match &self.stage {
            Stage::Start if self.core.is_disconnected() => {
                self.stage = Stage::Done;
                self.leave_session();
                Err(disconnected_error())
            }
            Stage::Start if self.redis.is_some() => {
                // Straight to the request (a `try_acquire` first would be one
                // more round trip); the owner first (see `redis::owner`).
                self.owner = Some(owner(py).inspect_err(|_| self.stage = Stage::Done)?);
                self.park(py)
            }
            // `__aenter__`'s fast path just failed: no second try.
            Stage::Start if self.contended_enter => self.park(py),
            Stage::Start => match self.core.try_acquire(self.n) {
                Ok(_) => self.acquired(None),
                Err(Error::NoPermits) => self.park(py),
                Err(Error::Closed) => {
                    self.stage = Stage::Done;
                    Err(closed_error())
                }
                Err(e) => {
                    self.stage = Stage::Done;
                    Err(acquire_error(&self.core, e))
                }
            },
            Stage::Waiting(slot) => {
                if slot.waiter().state() == WaiterState::Waiting {
                    // Resumed before the grant (nothing in asyncio does that): wait on.
                    let fut = slot.target.clone_ref(py);
                    return yield_future(py, fut.bind(py)).map(Some);
                }
                let Stage::Waiting(slot) = std::mem::replace(&mut self.stage, Stage::Done) else {
                    unreachable!()
                };
                match finish_owned(py, &slot) {
                    Owned::Finished(Finish::Granted) => {
                        let r = self.acquired(Some(slot.waiter()));
                        if self.poolable() {
                            self.spare = Slot::retire(py, slot);
                        }
                        r
                    }
                    Owned::Finished(Finish::Closed) => Err(closed_error()),
                    Owned::Finished(Finish::Failed(e)) => Err(acquire_error(&self.core, e)),
                    Owned::HandedOn => Err(runtime_error("the grant could not be delivered (the waiter's event loop was closed, or its call_soon raised) and was handed on")),
                    Owned::Finished(Finish::Cancelled { .. } | Finish::Idle) => {
                        Err(runtime_error("acquire finished without an outcome"))
                    }
                }
            }
            Stage::Trio(_) | Stage::Done => {
                Err(runtime_error("cannot reuse an already awaited acquire"))
            }
        }
    }

    /// Slow path: queue a waiter and yield a Future of the running loop.
    fn park(&mut self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        let (event_loop, chan) = match cached_running_loop(py) {
            Some((event_loop, chan)) => (event_loop, Some(chan)),
            None => (self.looked_up_loop(py)?, None),
        };
        // Permits stranded on a closed loop's channel come back first.
        reap_closed_loops(py);
        let result = (|| {
            let (chan, unconnected) = match chan {
                Some(chan) => (chan, None),
                None => asyncio_chan_or_setup(py, &event_loop)?,
            };
            let fut = new_future(py, &event_loop)?;
            let target = fut.clone().unbind();
            let slot = match self.spare.take() {
                Some(spare) => Slot::renew(py, spare, &self.core, self.n, target, chan),
                None => Slot::new(self.core.clone(), self.n, target, chan),
            };
            match slot.queue() {
                Ok(RawAcquire::Ready) => Ok((slot, None, unconnected)),
                Ok(RawAcquire::Pending) => Ok((slot, Some(fut), unconnected)),
                Err(e) => Err(acquire_error(&self.core, e)),
            }
        })();
        match result {
            Ok((slot, None, _)) => self.acquired(Some(slot.waiter())),
            Ok((slot, Some(fut), unconnected)) => {
                self.stage = Stage::Waiting(slot);
                // Queued (its place kept); an unconnected channel is connected
                // from asyncio's Task, outside these frames.
                wait_on(py, &event_loop, unconnected, &fut).map(Some)
            }
            Err(e) => {
                self.stage = Stage::Done;
                Err(e)
            }
        }
    }

    /// [`park`](Self::park)'s loop when the thread's last one is not the
    /// one running (uvloop, another loop, the first wait), out of line; no
    /// loop at all raises (a trio task awaits through `__await__`, never
    /// here).
    #[inline(never)]
    fn looked_up_loop<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match running_loop(py).inspect_err(|_| self.stage = Stage::Done)? {
            Some(event_loop) => Ok(event_loop),
            None => {
                self.stage = Stage::Done;
                NO_LOOP_ERROR
                    .import(py, "volt_sem._glue", "no_loop_error")?
                    .call0()?;
                Err(runtime_error("no running event loop"))
            }
        }
    }

    /// Ends a pending wait from outside (`throw`, `close`, GC, drop).
    fn cancel(&mut self, py: Python<'_>) {
        match std::mem::replace(&mut self.stage, Stage::Done) {
            Stage::Waiting(slot) => {
                if let Owned::Finished(Finish::Granted) = finish_owned(py, &slot) {
                    give_back(py, &slot);
                }
            }
            Stage::Trio(waiter) => {
                if let Ok(mut w) = waiter.try_borrow_mut(py) {
                    w.cancel(py);
                }
            }
            _ => {}
        }
        self.enter_self = None;
        self.leave_session();
    }
}

coroutine_pymethods! {
impl Acquire {
    throw: |me, py| me.cancel(py);
    done: |slf, me| pool_finished(slf, me);

    /// The acquire itself (asyncio, or no loop at all), or, in a trio task, the
    /// iterator of `_glue`'s coroutine, so that trio drives Python frames only.
    fn __await__(slf: Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        {
            // No Python code runs on this way out, so it needs no gate: the
            // one of a contended `async with sem:` (`enter_one_in` asked
            // about trio already), the commonest.
            let me = slf.borrow();
            if me.contended_enter || !matches!(me.stage, Stage::Start) {
                drop(me);
                return Ok(slf.into_any().unbind());
            }
        }
        await_new(py, slf)
    }

    /// Called by `_glue`'s trio coroutine when its wait failed (the waiter
    /// already gave it up): the acquire is over; after its session ended it
    /// lets go of the attachment.
    fn _trio_failed(&mut self) {
        self.stage = Stage::Done;
        self.enter_self = None;
        self.leave_session();
    }

    /// Called by `_glue`'s trio coroutine once the permits are acquired: what
    /// the `await` evaluates to (`True`, `None` for `async with sem:`, this
    /// object for `async with sem.acquire(n) as grant:`).
    fn _acquired(&mut self, py: Python<'_>) -> Py<PyAny> {
        let got = match std::mem::replace(&mut self.stage, Stage::Done) {
            Stage::Trio(w) => w.borrow(py).got(),
            _ => None,
        };
        self.held = true;
        self.role.taken(self.n);
        if let Some(got) = got {
            self.record(got);
        }
        if let Some(me) = self.enter_self.take() {
            return me;
        }
        if self.returns_true {
            true.into_pyobject(py)
                .map(|b| b.to_owned().into_any().unbind())
                .unwrap_or_else(|_| py.None())
        } else {
            py.None()
        }
    }

    /// Cancels a pending wait (handing back whatever was granted).
    fn close(&mut self, py: Python<'_>) {
        self.cancel(py);
    }

    /// `async with sem.acquire(n) as grant:` waits for the permits (the
    /// `await` gives this object, the grant) ...
    fn __aenter__(slf: Bound<'_, Self>) -> Py<Self> {
        {
            let mut me = slf.borrow_mut();
            if matches!(me.stage, Stage::Start) {
                me.enter_self = Some(slf.clone().into_any().unbind());
            }
        }
        slf.unbind()
    }

    /// ... and releases them on exit.
    #[pyo3(signature = (*args))]
    fn __aexit__(&mut self, py: Python<'_>, args: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        self.exit(py, args)?;
        finished(py)
    }

    /// `with sem.acquire(n) as grant:` from a plain thread: blocks (GIL
    /// released) until the permits are granted; gives this object.
    fn __enter__(slf: Bound<'_, Self>) -> PyResult<Py<Self>> {
        let py = slf.py();
        {
            let mut me = slf.borrow_mut();
            if !matches!(me.stage, Stage::Start) {
                return Err(PyRuntimeError::new_err(
                    "cannot reuse an already used acquire",
                ));
            }
            me.stage = Stage::Done;
            if me.redis.is_some() {
                me.owner = Some(owner(py)?);
            }
            let got = blocking_acquire(py, &me.core, me.n, None)?
                .ok_or_else(|| PyRuntimeError::new_err("acquire without timeout timed out"))?;
            me.held = true;
            me.role.taken(me.n);
            me.record(got);
        }
        Ok(slf.unbind())
    }

    #[pyo3(signature = (*args))]
    fn __exit__(&mut self, py: Python<'_>, args: &Bound<'_, PyTuple>) -> PyResult<bool> {
        self.exit(py, args)?;
        Ok(false)
    }

    /// The number of permits this acquire asks for.
    #[getter]
    fn n(&self) -> usize {
        self.n
    }

    /// The fencing token of the grant: strictly increasing with every grant
    /// of a Redis semaphore; `None` before the grant, and always on a local
    /// or named semaphore (they need none).
    #[getter]
    fn token(&self) -> Option<u64> {
        self.token
    }

    /// Whether this acquire is queued right now, waiting for its grant.
    #[getter]
    fn waiting(&self, py: Python<'_>) -> bool {
        match &self.stage {
            Stage::Waiting(slot) => slot.waiter().state() == WaiterState::Waiting,
            Stage::Trio(w) => w.try_borrow(py).is_ok_and(|w| w.is_waiting()),
            _ => false,
        }
    }

    /// Whether this object holds permits that its `__aexit__`/`__exit__` will release.
    #[getter]
    fn held(&self) -> bool {
        self.held
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        match &self.stage {
            Stage::Waiting(slot) => visit.call(&slot.target)?,
            Stage::Trio(w) => visit.call(w)?,
            _ => {}
        }
        if let Some(me) = &self.enter_self {
            visit.call(me)?;
        }
        Ok(())
    }

    /// An unreachable waiting task (its loop abandoned): cancel the wait so the
    /// queue does not stay blocked behind it.
    fn __clear__(&mut self) {
        // tp_clear runs attached: this only borrows the current attachment.
        Python::attach(|py| self.cancel(py));
    }

    fn __repr__(&self) -> String {
        let stage = match self.stage {
            Stage::Start => "new",
            Stage::Waiting(_) | Stage::Trio(_) => "waiting",
            Stage::Done if self.held => "held",
            Stage::Done => "done",
        };
        format!("<volt_sem.Acquire n={} {stage}>", self.n)
    }
}
}

/// `Acquire.__await__` of an acquire not started by a contended
/// `__aenter__` (out of line: that one, the commonest, returns at once): a
/// gated entry point (`interpreter::gate`), where trio's probes run.
#[inline(never)]
fn await_new(py: Python<'_>, slf: Bound<'_, Acquire>) -> PyResult<Py<PyAny>> {
    let _inside = crate::interpreter::gate(py);
    if !trio_may_run_here(py)? {
        return Ok(slf.into_any().unbind());
    }
    let (core, n) = {
        let mut me = slf.borrow_mut();
        if me.redis.is_some() {
            me.owner = Some(owner(py)?);
        }
        (me.core.clone(), me.n)
    };
    let waiter = Py::new(py, TrioWaiter::new(core, n))?;
    let it = TRIO_WAIT
        .import(py, "volt_sem._glue", "trio_wait")?
        .call1((waiter.clone_ref(py), &slf))?;
    if it.is_none() {
        return Ok(slf.into_any().unbind()); // not in trio: the step decides
    }
    slf.borrow_mut().stage = Stage::Trio(waiter);
    Ok(it.unbind())
}

impl Drop for Acquire {
    fn drop(&mut self) {
        match self.stage {
            // Backstop: the coroutine was dropped without `close` (e.g. a task
            // garbage-collected with its loop). Re-entrant: dealloc holds the GIL.
            Stage::Waiting(_) => Python::attach(|py| self.cancel(py)),
            // Never awaited, entered or closed: a forgotten `await`, which
            // takes nothing, and a later release would then add permits.
            Stage::Start if !crate::interpreter::interpreter_finalizing() => {
                Python::attach(|py| warn_never_awaited(py, &self.role.call(self.n)))
            }
            _ => {}
        }
    }
}

/// The `RuntimeWarning` asyncio gives a coroutine that was never awaited, for
/// an acquire object collected unused. A warning turned into an error (`-W
/// error`) cannot propagate from a destructor: it is reported as unraisable,
/// as CPython does for coroutines.
fn warn_never_awaited(py: Python<'_>, call: &str) {
    let message = format!(
        "volt-sem: {call} was never awaited, so it took nothing; \
         write `await {call}` or `async with {call}:`"
    );
    let Ok(message) = std::ffi::CString::new(message) else {
        return;
    };
    let category = py.get_type::<pyo3::exceptions::PyRuntimeWarning>();
    if let Err(e) = PyErr::warn(py, &category, &message, 1) {
        e.write_unraisable(py, None);
    }
}

/// A `RuntimeError` of a rare outcome, out of line: the contended path's
/// code stays compact (it runs once per operation between long stretches of
/// the interpreter, so its size counts in instruction-cache misses).
#[cold]
#[inline(never)]
fn runtime_error(msg: &'static str) -> PyErr {
    PyRuntimeError::new_err(msg)
}

/// `__aenter__` for one permit: the fast path right here (returning a finished
/// awaitable, no allocation), else an awaitable that waits. Not where a trio
/// task may run ([`trio_may_run_here`]): the acquire object then decides, so
/// that a trio task's `async with` is a checkpoint.
pub(crate) fn enter_one(py: Python<'_>, core: &Arc<Core>, role: &Role) -> PyResult<Py<PyAny>> {
    enter_one_in(py, core, role, None)
}

/// `__aenter__` through an acquire object from the start: a Redis handle's
/// (no fast path: the request itself is the first round trip), or where a
/// trio task may run (the object's `__await__` takes trio's path, a
/// checkpoint even when permits are free: trio's rule). Out of line, as
/// [`runtime_error`].
#[cold]
#[inline(never)]
fn enter_by_acquire(
    py: Python<'_>,
    core: &Arc<Core>,
    role: &Role,
    redis: Option<Arc<Extra>>,
) -> PyResult<Py<PyAny>> {
    let acquire = Acquire::new(core.clone(), 1, role.clone(), false).of_redis(redis);
    Ok(Py::new(py, acquire)?.into_any())
}

/// [`enter_one`] of any handle (`redis`: a Redis handle's state).
pub(crate) fn enter_one_in(
    py: Python<'_>,
    core: &Arc<Core>,
    role: &Role,
    redis: Option<Arc<Extra>>,
) -> PyResult<Py<PyAny>> {
    if redis.is_some() || trio_may_run_here(py)? {
        return enter_by_acquire(py, core, role, redis);
    }
    // A local core's own `try_acquire`: the backend's inlines every
    // backend's (Redis never gets here).
    let taken = match core.as_local() {
        Some(local) => local
            .try_acquire(1)
            .map(|p| p.forget())
            .map_err(Error::from),
        None => core.try_acquire(1).map(drop),
    };
    match taken {
        Ok(()) => {
            role.taken(1);
            finished(py)
        }
        Err(Error::NoPermits) => {
            if core.as_local().is_some() {
                if let Some(acquire) = pooled_acquire(py, core, role) {
                    return Ok(acquire);
                }
            }
            let mut acquire = Acquire::new(core.clone(), 1, role.clone(), false);
            acquire.contended_enter = true;
            Ok(Py::new(py, acquire)?.into_any())
        }
        Err(e) => Err(acquire_error(core, e)),
    }
}

/// How many finished acquires a thread keeps for its next contended
/// `__aenter__`s. One goes in per finished wait and one comes out per
/// contended enter, so a few cover any number of tasks (8 tasks on a
/// `Semaphore(2)` use at most 2); more finishing at once than this are
/// freed as before.
const POOL_SIZE: usize = 8;

thread_local! {
    /// Finished acquires of contended `__aenter__`s ([`Acquire::poolable`]),
    /// each with the slot of its last wait: the next contended `__aenter__`
    /// on this thread takes one instead of allocating an object and a slot
    /// (pyo3's object creation and `tp_dealloc`, the slot's allocation and
    /// free: about 800 instructions and 50 instruction-cache misses per
    /// contended acquire+release). Each holds its last core (a local
    /// semaphore's, never a session's) and channel, no Future.
    static POOL: std::cell::RefCell<Vec<Py<Acquire>>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// The `done` step of [`Acquire`]: a poolable object whose wait just ended
/// goes back to this thread's pool (once: `contended_enter` is cleared), where
/// [`pooled_acquire`] takes it again only when the pool holds its last
/// reference. The interpreter drops its own reference right after this step.
///
/// A pooled object still reads `held` (the `await` of a caller who kept it
/// acquired the permit), though its `async with` block released that permit
/// through the lock's `__aexit__`: so the pool keeps it out of the GC's
/// lists, where `gc.get_objects()` would find it and its `__exit__` would
/// release a permit nobody holds. [`pooled_acquire`] puts it back.
fn pool_finished(slf: &Bound<'_, Acquire>, mut me: PyRefMut<'_, Acquire>) {
    if !me.poolable() {
        return;
    }
    me.contended_enter = false;
    drop(me);
    let pooled = POOL
        .try_with(|p| match p.try_borrow_mut() {
            Ok(mut p) if p.len() < POOL_SIZE => {
                p.push(slf.clone().unbind());
                true
            }
            _ => false,
        })
        .unwrap_or(false);
    if pooled {
        // SAFETY: GIL held; `slf` is a live object of a GC type (`Acquire`
        // has `__traverse__`), tracked since its creation. Untracking only
        // takes it off the GC's lists: it can be in no reference cycle
        // meanwhile (a finished acquire's `__traverse__` visits nothing and
        // nothing makes it refer to an object again before `renew_for_enter`,
        // which follows its re-tracking), and its deallocation untracks
        // only a tracked object (`PyObject_GC_UnTrack` checks).
        unsafe { pyo3::ffi::PyObject_GC_UnTrack(slf.as_ptr().cast()) };
    }
}

/// A pooled acquire made ready for a contended `__aenter__` of `core`, if
/// this thread's pool has one that nothing else refers to. A reference
/// taken meanwhile (`gc.get_objects()`, a task's `cr_await` kept by a
/// debugger) keeps it out: it leaves the pool, an ordinary object again.
/// With the pool the only holder and the GIL held, nobody sees it change;
/// no Python code runs here.
#[inline]
fn pooled_acquire(py: Python<'_>, core: &Arc<Core>, role: &Role) -> Option<Py<PyAny>> {
    let acquire = POOL
        .try_with(|p| p.try_borrow_mut().ok()?.pop())
        .ok()
        .flatten()?;
    let acquire = acquire.into_bound(py);
    // Under the GC's watch again ([`pool_finished`] took it off), whether
    // reused or let go (a caller kept it).
    // SAFETY: GIL held; `acquire` is a live object of a GC type, tracked
    // again only if it is not (tracking a tracked object is a fatal error).
    unsafe {
        let p = acquire.as_ptr();
        if pyo3::ffi::PyObject_GC_IsTracked(p) == 0 {
            pyo3::ffi::PyObject_GC_Track(p.cast());
        }
    }
    if !crate::only_reference(acquire.as_any()) {
        return None;
    }
    acquire.try_borrow_mut().ok()?.renew_for_enter(core, role);
    Some(acquire.into_any().unbind())
}
