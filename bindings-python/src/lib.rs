//! `volt_sem._volt_sem`: the asyncio binding of volt-sem.
//!
//! One Rust [`volt_sem::Semaphore`] backs every Python object (`Semaphore`,
//! `Mutex` = 1 permit, `RwLock` = `MAX_PERMITS` permits with writers taking all of
//! them), and one waiter implementation serves all of them.
//!
//! # The awaitable
//!
//! `sem.acquire(n)` returns an [`Acquire`] object that is its own iterator
//! (`__await__`, `__iter__`, `__next__`, `send`, `throw`, `close`). Its first step
//! tries the core's lock-free fast path and, when permits are free, finishes at
//! once: no Future, no loop call. Only when it must wait does it create a Future on
//! the running loop, queue a [`Slot`] (a pinned, boxed core [`Waiter`] plus the
//! wake context), and yield the Future through `Future.__await__`. Cancellation
//! reaches it only through `throw`/`close` (with `Drop` and the GC's `tp_clear` as
//! backstops); each of them finishes the waiter, handing a partial grant on and
//! releasing a full grant that arrived just before the cancel.
//!
//! `async with sem:` goes further: `__aenter__` takes the permit on the fast path
//! itself and returns a shared, already-finished awaitable, so an uncontended
//! `async with` allocates nothing.
//!
//! # The wake path, and why the GIL never deadlocks it
//!
//! The core calls [`wake_async`] on whichever thread completed the grant (a
//! releaser, a canceller handing on a partial grant, a closer). It attaches to the
//! interpreter (cheap and re-entrant: releases issued from Python already hold the
//! GIL) and
//!
//! * on the waiter loop's own thread sets the Future's result directly (after
//!   checking `fut.done()`: a cancelled task's Future is already done);
//! * on any other thread calls `loop.call_soon_threadsafe(_resolve, fut)`;
//! * if either raises (the loop is closed), or a panic is caught, it consumes its
//!   own outcome with `finish_raw` (which returns at once inside the waiter's own
//!   callback) and releases the permits, so they go to the next waiter.
//!
//! A callback that needs the GIL creates one hazard: `finish_raw` waits while the
//! waiter's callback runs on another thread, so a thread that calls it while
//! holding the GIL could wait for a callback that waits for the GIL. Each slot
//! therefore carries `py_done`, stored by the callback after its last Python call
//! (after it has let go of the GIL). The owner calls `finish_raw` with the GIL held
//! only when `py_done` is set, which is the normal "woken, now resume" path; every
//! other finish (cancel while queued, drop) runs with the GIL released
//! (`py.detach`). After `py_done` nothing left in the callback needs the GIL.
//! Blocking waits finish with the GIL released too, although their own callback
//! only unparks: a notifier runs a whole batch of callbacks in order, so the
//! callback of an async waiter granted just before ours may hold ours back while
//! it waits for the GIL.
//!
//! A GIL-free design (a per-loop queue plus an eventfd watched by `add_reader`)
//! was considered: it avoids the GIL in cross-thread wakes, but same-thread wakes,
//! the common case and the one the benchmarks stress, would pay a selector round
//! trip instead of a direct `set_result`, and a same-thread `set_result` needs the
//! GIL anyway. `call_soon_threadsafe` is also exactly what uvloop and asyncio
//! offer for the cross-thread case, so one code path serves both.
//!
//! # Blocking waits
//!
//! `acquire_blocking` queues a slot whose callback only unparks the thread (no
//! GIL), parks with the GIL released in slices of [`SIGNAL_SLICE`], and checks for
//! signals between slices, so Ctrl-C interrupts it without losing its FIFO place
//! until it actually gives up.

use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::sync::Arc;
use std::thread::{self, Thread, ThreadId};
use std::time::{Duration, Instant};

use pyo3::exceptions::{
    PyOverflowError, PyRuntimeError, PyStopIteration, PyTypeError, PyValueError,
};
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyTuple, PyType};
use pyo3::{create_exception, PyTraverseError};
use volt_sem::{AcquireError, Finish, RawAcquire, TryAcquireError, Waiter, WaiterState};

type Core = volt_sem::Semaphore;

/// The largest number of permits a semaphore can hold, and the largest request.
const MAX_PERMITS: usize = Core::MAX_PERMITS;

/// How long a blocking wait sleeps with the GIL released before it checks signals.
const SIGNAL_SLICE: Duration = Duration::from_millis(50);

create_exception!(
    volt_sem,
    ClosedError,
    PyRuntimeError,
    "The semaphore (or lock) was closed: raised by every later acquire, and by the \
     acquires that were waiting when it was closed."
);

fn closed_error() -> PyErr {
    ClosedError::new_err("semaphore closed")
}

fn too_many_error() -> PyErr {
    PyValueError::new_err(format!("n must be at most {MAX_PERMITS}"))
}

fn acquire_error(e: AcquireError) -> PyErr {
    match e {
        AcquireError::Closed => closed_error(),
        AcquireError::TooManyPermits => too_many_error(),
        // The core's error enums are non_exhaustive: a later variant lands here.
        e => PyRuntimeError::new_err(e.to_string()),
    }
}

/// A permit count taken from Python: `0 <= n <= MAX_PERMITS`, else `ValueError`
/// (including for integers too large for any machine word).
#[derive(Clone, Copy)]
struct Permits(usize);

impl<'a, 'py> FromPyObject<'a, 'py> for Permits {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> Result<Self, Self::Error> {
        match obj.extract::<i64>() {
            Ok(v) if v < 0 => Err(PyValueError::new_err("n must be >= 0")),
            Ok(v) if v as u64 > MAX_PERMITS as u64 => Err(too_many_error()),
            Ok(v) => Ok(Permits(v as usize)),
            Err(e) if e.is_instance_of::<PyOverflowError>(obj.py()) => {
                let negative = obj.lt(0i64).unwrap_or(false);
                Err(if negative {
                    PyValueError::new_err("n must be >= 0")
                } else {
                    too_many_error()
                })
            }
            Err(e) => Err(e),
        }
    }
}

/// A timeout in seconds: `None` waits for ever; negative or NaN is a `ValueError`.
fn timeout_arg(timeout: Option<f64>) -> PyResult<Option<Duration>> {
    match timeout {
        None => Ok(None),
        Some(t) if t.is_nan() || t < 0.0 => {
            Err(PyValueError::new_err("timeout must be >= 0 or None"))
        }
        // Too large to represent: as good as no timeout.
        Some(t) => Ok(Duration::try_from_secs_f64(t).ok()),
    }
}

/// `try_acquire` keeping the permits (they cross into Python's hands).
fn try_take(core: &Core, n: usize) -> Result<(), TryAcquireError> {
    core.try_acquire(n).map(volt_sem::Permit::forget)
}

fn release_on(core: &Core, n: usize) -> PyResult<()> {
    core.release(n).map_err(|_| {
        PyOverflowError::new_err(format!(
            "release({n}) would raise the available permits above the maximum ({MAX_PERMITS})"
        ))
    })
}

// ---------------------------------------------------------------------------
// Cached Python objects
// ---------------------------------------------------------------------------

static GET_RUNNING_LOOP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static RESOLVE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static READY: PyOnceLock<Py<Ready>> = PyOnceLock::new();

static FUTURE_TYPE: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static STOCK_CREATE_FUTURE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
/// The last loop type seen whose `create_future` is asyncio's own (it just builds
/// `asyncio.Future(loop=self)`). Holds a strong reference, leaked on purpose.
static STOCK_LOOP_TYPE: AtomicPtr<pyo3::ffi::PyObject> = AtomicPtr::new(std::ptr::null_mut());

/// `loop.create_future()`, built directly as `asyncio.Future(loop=loop)` when the
/// loop's `create_future` is asyncio's stock one (it does exactly that), which
/// skips a Python-level method frame on every wait. Other loops (uvloop, custom
/// ones) get their own `create_future`.
fn new_future<'py>(py: Python<'py>, event_loop: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let ty = event_loop.get_type();
    let future = FUTURE_TYPE.import(py, "asyncio", "Future")?;
    let stock = |py| -> PyResult<bool> {
        let base = STOCK_CREATE_FUTURE.get_or_try_init(py, || {
            PyResult::Ok(
                py.import("asyncio")?
                    .getattr("BaseEventLoop")?
                    .getattr("create_future")?
                    .unbind(),
            )
        })?;
        Ok(ty
            .getattr(pyo3::intern!(py, "create_future"))?
            .is(base.bind(py)))
    };
    if STOCK_LOOP_TYPE.load(Ordering::Acquire) == ty.as_ptr() || stock(py)? {
        if STOCK_LOOP_TYPE.load(Ordering::Relaxed) != ty.as_ptr() {
            STOCK_LOOP_TYPE.store(ty.clone().into_any().unbind().into_ptr(), Ordering::Release);
        }
        let kwargs = pyo3::types::PyDict::new(py);
        kwargs.set_item(pyo3::intern!(py, "loop"), event_loop)?;
        future.call((), Some(&kwargs))
    } else {
        event_loop.call_method0(pyo3::intern!(py, "create_future"))
    }
}

static INVALID_STATE_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// Whether `err` is an `asyncio.InvalidStateError` (a done Future refusing a result).
fn is_invalid_state(py: Python<'_>, err: &PyErr) -> bool {
    INVALID_STATE_ERROR
        .import(py, "asyncio", "InvalidStateError")
        .is_ok_and(|ty| err.is_instance(py, ty.as_any()))
}

fn running_loop(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    GET_RUNNING_LOOP
        .import(py, "asyncio", "get_running_loop")?
        .call0()
}

fn ready(py: Python<'_>) -> PyResult<Py<Ready>> {
    READY
        .get_or_try_init(py, || Py::new(py, Ready))
        .map(|r| r.clone_ref(py))
}

/// `fut.set_result(True)` unless `fut` is already done (its task was cancelled).
/// Scheduled on the waiter's loop by `call_soon_threadsafe`.
#[pyfunction]
fn _resolve(fut: &Bound<'_, PyAny>) -> PyResult<()> {
    if !fut
        .call_method0(pyo3::intern!(fut.py(), "done"))?
        .is_truthy()?
    {
        fut.call_method1(pyo3::intern!(fut.py(), "set_result"), (true,))?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// The async waiter
// ---------------------------------------------------------------------------

/// One queued async acquire: the core waiter and its wake context. Boxed and
/// pinned by its owner (an [`Acquire`]) from before `acquire_raw` until
/// `finish_raw` returned, which is what the core's lifetime rule asks for.
struct Slot {
    waiter: Waiter,
    core: Arc<Core>,
    n: usize,
    fut: Py<PyAny>,
    event_loop: Py<PyAny>,
    loop_thread: ThreadId,
    /// Set by the callback after its last use of Python (and of the GIL).
    py_done: AtomicBool,
    /// Set when the callback could not deliver and handed the outcome on itself.
    handed_on: AtomicBool,
}

impl Slot {
    fn waiter(self: Pin<&Self>) -> Pin<&Waiter> {
        // SAFETY: structural pinning: `waiter` is never moved out of a pinned `Slot`
        // (no method hands out `&mut Slot` or moves the field).
        unsafe { self.map_unchecked(|s| &s.waiter) }
    }
}

/// The core callback of an async waiter. Runs once, on any thread, never under a
/// core lock.
unsafe extern "C" fn wake_async(ctx: *mut c_void) {
    // SAFETY: `ctx` is the address of a pinned `Slot` whose owner keeps it alive
    // until `finish_raw` returned, and `finish_raw` waits for this callback to
    // return (or is called from inside it, below).
    let slot = unsafe { Pin::new_unchecked(&*(ctx as *const Slot)) };
    let delivered = catch_unwind(AssertUnwindSafe(|| Python::attach(|py| deliver(py, &slot))));
    if !matches!(delivered, Ok(true)) {
        // The loop is closed (or something failed): nobody will resume the owner's
        // task, so pass the permits on now. Inside the own callback `finish_raw`
        // returns at once and consumes the outcome.
        // SAFETY: the waiter was queued on `slot.core`.
        if let Finish::Granted = unsafe { slot.core.finish_raw(slot.waiter()) } {
            let _ = slot.core.release(slot.n);
        }
        slot.handed_on.store(true, Ordering::Relaxed);
    }
    // Release: the owner that sees this may call `finish_raw` with the GIL held.
    slot.py_done.store(true, Ordering::Release);
}

/// Resolves the slot's Future from the releasing thread. `false` if it could not
/// (the loop is closed): the caller then hands the permits on.
fn deliver(py: Python<'_>, slot: &Slot) -> bool {
    let fut = slot.fut.bind(py);
    let result = if thread::current().id() == slot.loop_thread {
        // The loop's own thread: resolve directly, as asyncio's own primitives do.
        // A cancelled task's Future is already done: set_result then raises
        // InvalidStateError, and the owner collects the grant in `throw`.
        match fut.call_method1(pyo3::intern!(py, "set_result"), (true,)) {
            Err(e) if is_invalid_state(py, &e) => Ok(()),
            other => other.map(drop),
        }
    } else {
        let resolve = match RESOLVE.get_or_try_init(py, || {
            Ok::<_, PyErr>(wrap_pyfunction!(_resolve, py)?.into_any().unbind())
        }) {
            Ok(f) => f,
            Err(e) => {
                e.write_unraisable(py, None);
                return false;
            }
        };
        slot.event_loop
            .bind(py)
            .call_method1(pyo3::intern!(py, "call_soon_threadsafe"), (resolve, fut))
            .map(drop)
    };
    match result {
        Ok(()) => true,
        // A closed loop is an expected race, not worth a warning.
        Err(e) if e.is_instance_of::<PyRuntimeError>(py) => false,
        Err(e) => {
            e.write_unraisable(py, Some(fut));
            false
        }
    }
}

/// Finishes a slot from its owner's side, with the GIL released unless the
/// callback has certainly stopped needing it (see the module docs).
fn finish_slot(py: Python<'_>, slot: Pin<&Slot>) -> Finish {
    if slot.py_done.load(Ordering::Acquire) {
        // SAFETY: the waiter was queued on `slot.core` and is still pinned.
        unsafe { slot.core.finish_raw(slot.waiter()) }
    } else {
        // SAFETY: as above; the slot outlives the closure.
        py.detach(|| unsafe { slot.core.finish_raw(slot.waiter()) })
    }
}

/// Abandons a queued slot: cancels it, or releases a grant nobody will use.
fn abandon(py: Python<'_>, slot: Pin<Box<Slot>>) {
    if let Finish::Granted = finish_slot(py, slot.as_ref()) {
        let _ = slot.core.release(slot.n);
    }
    drop(slot); // decrefs the Future and loop, with the GIL held
}

enum Stage {
    Start,
    Waiting(Pin<Box<Slot>>),
    Done,
}

/// An acquire of `n` permits: awaitable once, and an async (or blocking) context
/// manager that releases those permits on exit.
#[pyclass(module = "volt_sem")]
struct Acquire {
    core: Arc<Core>,
    n: usize,
    /// `await` evaluates to `True` (`sem.acquire()`, asyncio-compatible) or `None`.
    returns_true: bool,
    stage: Stage,
    /// Permits acquired through this object and not yet released by `__aexit__`.
    held: bool,
}

impl Acquire {
    fn new(core: Arc<Core>, n: usize, returns_true: bool) -> Self {
        Acquire {
            core,
            n,
            returns_true,
            stage: Stage::Start,
            held: false,
        }
    }

    /// The iterator has finished with the permits acquired.
    fn acquired(&mut self) -> PyResult<Option<Py<PyAny>>> {
        self.stage = Stage::Done;
        self.held = true;
        if self.returns_true {
            Err(PyStopIteration::new_err(true))
        } else {
            Ok(None)
        }
    }

    /// One step of the coroutine protocol: `Ok(Some(fut))` yields, `Ok(None)`
    /// returns `None`, an error raises (including `StopIteration(True)`).
    fn step(&mut self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        match &self.stage {
            Stage::Start => match try_take(&self.core, self.n) {
                Ok(()) => self.acquired(),
                Err(TryAcquireError::NoPermits) => self.park(py),
                Err(TryAcquireError::Closed) => {
                    self.stage = Stage::Done;
                    Err(closed_error())
                }
                Err(TryAcquireError::TooManyPermits) => {
                    self.stage = Stage::Done;
                    Err(too_many_error())
                }
                Err(e) => {
                    // non_exhaustive: a variant added to the core later
                    self.stage = Stage::Done;
                    Err(PyRuntimeError::new_err(e.to_string()))
                }
            },
            Stage::Waiting(slot) => {
                if slot.waiter.state() == WaiterState::Waiting {
                    // Resumed before the grant (nothing in asyncio does that): wait on.
                    return yield_future(py, slot.fut.bind(py)).map(Some);
                }
                let Stage::Waiting(slot) = std::mem::replace(&mut self.stage, Stage::Done) else {
                    unreachable!()
                };
                let finish = finish_slot(py, slot.as_ref());
                let handed_on = slot.handed_on.load(Ordering::Relaxed);
                drop(slot);
                match finish {
                    Finish::Granted => self.acquired(),
                    Finish::Closed => Err(closed_error()),
                    Finish::Cancelled { .. } | Finish::Idle if handed_on => Err(PyRuntimeError::new_err(
                        "the grant arrived after the waiter's event loop was closed and was handed on",
                    )),
                    Finish::Cancelled { .. } | Finish::Idle => {
                        Err(PyRuntimeError::new_err("acquire finished without an outcome"))
                    }
                }
            }
            Stage::Done => Err(PyRuntimeError::new_err(
                "cannot reuse an already awaited acquire",
            )),
        }
    }

    /// Slow path: queue a waiter and yield a Future of the running loop.
    fn park(&mut self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        let event_loop = running_loop(py).inspect_err(|_| self.stage = Stage::Done)?;
        let fut = new_future(py, &event_loop)?;
        let slot = Box::pin(Slot {
            waiter: Waiter::new(),
            core: self.core.clone(),
            n: self.n,
            fut: fut.clone().unbind(),
            event_loop: event_loop.unbind(),
            loop_thread: thread::current().id(),
            py_done: AtomicBool::new(false),
            handed_on: AtomicBool::new(false),
        });
        let ctx = &*slot as *const Slot as *mut c_void;
        // SAFETY: the waiter is new; the slot is pinned in a box that `self` keeps
        // until `finish_raw` returned (in `step`, `throw`, `close`, `__clear__` or
        // `Drop`), and `ctx` points into that same box.
        let raw = unsafe {
            self.core
                .acquire_raw(slot.as_ref().waiter(), self.n, wake_async, ctx)
        };
        match raw {
            Ok(RawAcquire::Ready) => self.acquired(),
            Ok(RawAcquire::Pending) => {
                self.stage = Stage::Waiting(slot);
                yield_future(py, &fut).map(Some)
            }
            Err(e) => {
                self.stage = Stage::Done;
                Err(acquire_error(e))
            }
        }
    }

    /// Ends a pending wait from outside (`throw`, `close`, GC, drop).
    fn cancel(&mut self, py: Python<'_>) {
        if let Stage::Waiting(slot) = std::mem::replace(&mut self.stage, Stage::Done) {
            abandon(py, slot);
        } else {
            self.stage = Stage::Done;
        }
    }
}

/// What the first step of `yield from fut.__await__()` does, without creating the
/// iterator: marks the Future as blocking (the flag asyncio's Task checks) and
/// returns it for the task to wait on.
fn yield_future(py: Python<'_>, fut: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    fut.setattr(pyo3::intern!(py, "_asyncio_future_blocking"), true)?;
    Ok(fut.clone().unbind())
}

/// The exception `throw(typ, val, tb)` asks to raise, built the way generators do.
fn thrown(
    py: Python<'_>,
    typ: &Bound<'_, PyAny>,
    val: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyErr> {
    let val = val.filter(|v| !v.is_none());
    if let Ok(ty) = typ.cast::<PyType>() {
        let base = py.get_type::<pyo3::exceptions::PyBaseException>();
        if !ty.is_subclass(&base)? {
            return Ok(PyTypeError::new_err(
                "exceptions must be classes or instances deriving from BaseException",
            ));
        }
        let exc = match val {
            Some(v) if v.is_instance(ty)? => v.clone(),
            Some(v) if v.is_instance_of::<PyTuple>() => ty.call1(v.cast::<PyTuple>()?)?,
            Some(v) => ty.call1((v,))?,
            None => ty.call0()?,
        };
        Ok(PyErr::from_value(exc))
    } else if val.is_some() {
        Ok(PyTypeError::new_err(
            "instance exception may not have a separate value",
        ))
    } else {
        Ok(PyErr::from_value(typ.clone()))
    }
}

#[pymethods]
impl Acquire {
    fn __await__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&mut self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        self.step(py)
    }

    /// Resumes the acquire; the value sent is ignored (asyncio always sends `None`).
    #[pyo3(signature = (_value = None))]
    fn send(&mut self, py: Python<'_>, _value: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        match self.step(py)? {
            Some(fut) => Ok(fut),
            None => Err(PyStopIteration::new_err(())),
        }
    }

    /// Raises the given exception inside the acquire: a pending wait is cancelled
    /// (any partial grant handed on, a full grant released) and the exception
    /// propagates.
    #[pyo3(signature = (typ, val = None, tb = None))]
    fn throw(
        &mut self,
        py: Python<'_>,
        typ: &Bound<'_, PyAny>,
        val: Option<&Bound<'_, PyAny>>,
        tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        self.cancel(py);
        let err = thrown(py, typ, val)?;
        if let Some(tb) = tb.filter(|t| !t.is_none()) {
            err.set_traceback(py, Some(tb.cast::<pyo3::types::PyTraceback>()?.clone()));
        }
        Err(err)
    }

    /// Cancels a pending wait (handing back whatever was granted).
    fn close(&mut self, py: Python<'_>) {
        self.cancel(py);
    }

    /// `async with sem.acquire(n):` waits for the permits ...
    fn __aenter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// ... and releases them on exit.
    #[pyo3(signature = (*_args))]
    fn __aexit__(&mut self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> PyResult<Py<Ready>> {
        if std::mem::take(&mut self.held) {
            release_on(&self.core, self.n)?;
        }
        ready(py)
    }

    /// `with sem.acquire(n):` from a plain thread: blocks (GIL released) until
    /// the permits are granted.
    fn __enter__(&mut self, py: Python<'_>) -> PyResult<()> {
        if !matches!(self.stage, Stage::Start) {
            return Err(PyRuntimeError::new_err(
                "cannot reuse an already used acquire",
            ));
        }
        self.stage = Stage::Done;
        blocking_acquire(py, &self.core, self.n, None)?;
        self.held = true;
        Ok(())
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&mut self, _args: &Bound<'_, PyTuple>) -> PyResult<bool> {
        if std::mem::take(&mut self.held) {
            release_on(&self.core, self.n)?;
        }
        Ok(false)
    }

    /// The number of permits this acquire asks for.
    #[getter]
    fn n(&self) -> usize {
        self.n
    }

    /// Whether this acquire is queued right now, waiting for its grant.
    #[getter]
    fn waiting(&self) -> bool {
        matches!(&self.stage, Stage::Waiting(slot) if slot.waiter.state() == WaiterState::Waiting)
    }

    /// Whether this object holds permits that its `__aexit__`/`__exit__` will release.
    #[getter]
    fn held(&self) -> bool {
        self.held
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        if let Stage::Waiting(slot) = &self.stage {
            visit.call(&slot.fut)?;
            visit.call(&slot.event_loop)?;
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
            Stage::Waiting(_) => "waiting",
            Stage::Done if self.held => "held",
            Stage::Done => "done",
        };
        format!("<volt_sem.Acquire n={} {stage}>", self.n)
    }
}

impl Drop for Acquire {
    fn drop(&mut self) {
        if let Stage::Waiting(_) = self.stage {
            // Backstop: the coroutine was dropped without `close` (e.g. a task
            // garbage-collected with its loop). Re-entrant: dealloc holds the GIL.
            Python::attach(|py| self.cancel(py));
        }
    }
}

/// A finished awaitable: `await` on it returns `None` at once. Returned by
/// `__aexit__`, and by `__aenter__` when the fast path succeeded.
#[pyclass(module = "volt_sem", frozen)]
struct Ready;

#[pymethods]
impl Ready {
    fn __await__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self) -> Option<Py<PyAny>> {
        None
    }

    #[pyo3(signature = (_value = None))]
    fn send(&self, _value: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        Err(PyStopIteration::new_err(()))
    }

    #[pyo3(signature = (typ, val = None, _tb = None))]
    fn throw(
        &self,
        py: Python<'_>,
        typ: &Bound<'_, PyAny>,
        val: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        Err(thrown(py, typ, val)?)
    }

    fn close(&self) {}
}

// ---------------------------------------------------------------------------
// Blocking waits
// ---------------------------------------------------------------------------

/// The context of a parked thread's waiter: its callback only unparks, without
/// the GIL.
struct Parked {
    waiter: Waiter,
    thread: Thread,
}

unsafe extern "C" fn wake_parked(ctx: *mut c_void) {
    // SAFETY: `ctx` is the pinned `Parked` of a thread inside `blocking_acquire`,
    // which does not return before `finish_raw` returned.
    let parked = unsafe { &*(ctx as *const Parked) };
    parked.thread.unpark();
}

/// Acquires `n` permits, blocking the calling thread with the GIL released.
/// `Ok(false)` on timeout; the wait can be interrupted by a signal handler's
/// exception (Ctrl-C), which hands any partial grant on.
fn blocking_acquire(
    py: Python<'_>,
    core: &Core,
    n: usize,
    timeout: Option<Duration>,
) -> PyResult<bool> {
    match core.try_acquire(n) {
        Ok(permit) => {
            permit.forget();
            return Ok(true);
        }
        Err(TryAcquireError::Closed) => return Err(closed_error()),
        Err(TryAcquireError::TooManyPermits) => return Err(too_many_error()),
        Err(TryAcquireError::NoPermits) => {}
        // non_exhaustive: a variant added to the core later
        Err(e) => return Err(PyRuntimeError::new_err(e.to_string())),
    }
    if timeout == Some(Duration::ZERO) {
        return Ok(false);
    }
    let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
    let parked = Box::pin(Parked {
        waiter: Waiter::new(),
        thread: thread::current(),
    });
    // SAFETY: structural pinning, `waiter` never moves out of the pinned box.
    let waiter = unsafe { parked.as_ref().map_unchecked(|p| &p.waiter) };
    let ctx = &*parked as *const Parked as *mut c_void;
    // SAFETY: the waiter is new and pinned; `parked` lives until after `finish_raw`
    // below, which every path reaches (no `?` in between).
    match unsafe { core.acquire_raw(waiter, n, wake_parked, ctx) } {
        Ok(RawAcquire::Ready) => return Ok(true),
        Ok(RawAcquire::Pending) => {}
        Err(e) => return Err(acquire_error(e)),
    }
    let mut interrupted = None;
    loop {
        let done = py.detach(|| {
            let slice_end = Instant::now() + SIGNAL_SLICE;
            loop {
                if waiter.state() != WaiterState::Waiting {
                    return true;
                }
                let now = Instant::now();
                let until = deadline.map_or(slice_end, |d| d.min(slice_end));
                if now >= until {
                    return deadline.is_some_and(|d| now >= d);
                }
                thread::park_timeout(until - now);
            }
        });
        if done {
            break;
        }
        if let Err(e) = py.check_signals() {
            interrupted = Some(e);
            break;
        }
    }
    // Without the GIL: our own callback only unparks, but the notifier runs a whole
    // batch of callbacks in order, and one before ours (an async waiter's) may be
    // waiting for the GIL; `finish_raw` waits for our callback, so holding the GIL
    // here could deadlock (seen in the stress test).
    // SAFETY: queued on `core` above.
    let finish = py.detach(|| unsafe { core.finish_raw(waiter) });
    drop(parked);
    match (finish, interrupted) {
        (Finish::Granted, Some(e)) => {
            let _ = core.release(n);
            Err(e)
        }
        (_, Some(e)) => Err(e),
        (Finish::Granted, None) => Ok(true),
        (Finish::Closed, None) => Err(closed_error()),
        (Finish::Cancelled { .. } | Finish::Idle, None) => Ok(false),
    }
}

// ---------------------------------------------------------------------------
// Semaphore
// ---------------------------------------------------------------------------

/// `__aenter__` for one permit: the fast path right here (returning a finished
/// awaitable, no allocation), else an awaitable that waits.
fn enter_one(py: Python<'_>, core: &Arc<Core>) -> PyResult<Py<PyAny>> {
    match core.try_acquire(1) {
        Ok(permit) => {
            permit.forget();
            Ok(ready(py)?.into_any())
        }
        Err(TryAcquireError::Closed) => Err(closed_error()),
        Err(_) => Ok(Py::new(py, Acquire::new(core.clone(), 1, false))?.into_any()),
    }
}

/// A fair, weighted, thread-safe async counting semaphore.
///
/// `Semaphore(permits=1)`. Waiters are served in strict FIFO order, weights
/// included: a waiting `acquire(3)` is never overtaken by later `acquire(1)`s; it
/// accumulates released permits until it has all three. One semaphore can be
/// shared by any number of threads, each running its own event loop (asyncio or
/// uvloop), and by plain threads using `acquire_blocking`.
#[pyclass(module = "volt_sem", frozen)]
struct Semaphore {
    core: Arc<Core>,
}

#[pymethods]
impl Semaphore {
    /// The largest number of permits a semaphore can hold, and the largest request.
    #[classattr]
    const MAX_PERMITS: usize = MAX_PERMITS;

    #[new]
    #[pyo3(signature = (permits = Permits(1)))]
    fn new(permits: Permits) -> Self {
        Semaphore {
            core: Arc::new(Core::new(permits.0)),
        }
    }

    /// Waits for `n` permits (FIFO, weights included); `await` returns `True`.
    /// Also `async with sem.acquire(n):`, which releases the `n` permits on exit.
    /// Raises `ClosedError` if the semaphore is (or gets) closed while waiting.
    #[pyo3(signature = (n = Permits(1)))]
    fn acquire(&self, n: Permits) -> Acquire {
        Acquire::new(self.core.clone(), n.0, true)
    }

    /// Returns `n` permits: to the oldest waiters first (on any thread or loop),
    /// the surplus to the counter. `OverflowError` if the available permits would
    /// exceed `MAX_PERMITS` (nothing is released then).
    #[pyo3(signature = (n = Permits(1)))]
    fn release(&self, n: Permits) -> PyResult<()> {
        release_on(&self.core, n.0)
    }

    /// Takes `n` permits if they are free right now and nobody waits; never waits.
    #[pyo3(signature = (n = Permits(1)))]
    fn try_acquire(&self, n: Permits) -> PyResult<bool> {
        match self.core.try_acquire(n.0) {
            Ok(permit) => {
                permit.forget();
                Ok(true)
            }
            Err(TryAcquireError::NoPermits) => Ok(false),
            Err(TryAcquireError::Closed) => Err(closed_error()),
            Err(TryAcquireError::TooManyPermits) => Err(too_many_error()),
            // non_exhaustive: a variant added to the core later
            Err(e) => Err(PyRuntimeError::new_err(e.to_string())),
        }
    }

    /// Blocks the calling thread (GIL released) until `n` permits are granted in
    /// FIFO order. Returns `False` if `timeout` seconds passed first (any partial
    /// grant is handed on). For plain threads: never call it on an event loop's
    /// thread.
    #[pyo3(signature = (n = Permits(1), timeout = None))]
    fn acquire_blocking(&self, py: Python<'_>, n: Permits, timeout: Option<f64>) -> PyResult<bool> {
        blocking_acquire(py, &self.core, n.0, timeout_arg(timeout)?)
    }

    /// Permits available right now (0 while anyone waits).
    #[getter]
    fn available_permits(&self) -> usize {
        self.core.available_permits()
    }

    /// Whether an `acquire()` of one permit would have to wait.
    fn locked(&self) -> bool {
        self.core.available_permits() == 0
    }

    /// Closes the semaphore: waiting acquires raise `ClosedError`, and so does
    /// every later acquire. Held permits can still be released. Idempotent.
    fn close(&self) {
        self.core.close();
    }

    /// Whether `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.core.is_closed()
    }

    fn __aenter__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        enter_one(py, &self.core)
    }

    #[pyo3(signature = (*_args))]
    fn __aexit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> PyResult<Py<Ready>> {
        release_on(&self.core, 1)?;
        ready(py)
    }

    fn __repr__(&self) -> String {
        format!(
            "<volt_sem.Semaphore available={}{}>",
            self.core.available_permits(),
            if self.core.is_closed() { " closed" } else { "" }
        )
    }
}

// ---------------------------------------------------------------------------
// Mutex
// ---------------------------------------------------------------------------

/// A fair mutual-exclusion lock for async tasks and plain threads (a semaphore of
/// one permit). `async with m:`; `await m.acquire()` / `m.release()`;
/// `m.acquire_blocking(timeout=None)` or `with m.acquire():` from threads.
#[pyclass(module = "volt_sem", frozen)]
struct Mutex {
    core: Arc<Core>,
}

#[pymethods]
impl Mutex {
    #[new]
    fn new() -> Self {
        Mutex {
            core: Arc::new(Core::new(1)),
        }
    }

    /// Waits for the lock (FIFO); `await` returns `True`. Also usable as
    /// `async with m.acquire():` and, from a thread, `with m.acquire():`.
    fn acquire(&self) -> Acquire {
        Acquire::new(self.core.clone(), 1, true)
    }

    /// Unlocks. `RuntimeError` if the lock is not held.
    fn release(&self) -> PyResult<()> {
        if self.core.available_permits() != 0 {
            return Err(PyRuntimeError::new_err("Mutex is not locked"));
        }
        release_on(&self.core, 1)
    }

    /// Locks if it is free and nobody waits; never waits.
    fn try_acquire(&self) -> bool {
        self.core.try_acquire(1).map(|p| p.forget()).is_ok()
    }

    /// Blocks the calling thread (GIL released) until the lock is granted;
    /// `False` on timeout.
    #[pyo3(signature = (timeout = None))]
    fn acquire_blocking(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<bool> {
        blocking_acquire(py, &self.core, 1, timeout_arg(timeout)?)
    }

    /// Whether the lock is held.
    fn locked(&self) -> bool {
        self.core.available_permits() == 0
    }

    fn __aenter__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        enter_one(py, &self.core)
    }

    #[pyo3(signature = (*_args))]
    fn __aexit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> PyResult<Py<Ready>> {
        release_on(&self.core, 1)?;
        ready(py)
    }

    fn __repr__(&self) -> String {
        format!(
            "<volt_sem.Mutex {}>",
            if self.locked() { "locked" } else { "unlocked" }
        )
    }
}

// ---------------------------------------------------------------------------
// RwLock
// ---------------------------------------------------------------------------

const WRITE: usize = MAX_PERMITS;

/// A fair reader-writer lock for async tasks and plain threads: a semaphore of
/// `MAX_PERMITS` permits where a reader takes one and a writer takes all. FIFO
/// both ways: a waiting writer is not overtaken by later readers.
#[pyclass(module = "volt_sem", frozen)]
struct RwLock {
    core: Arc<Core>,
}

#[pymethods]
impl RwLock {
    #[new]
    fn new() -> Self {
        RwLock {
            core: Arc::new(Core::new(MAX_PERMITS)),
        }
    }

    /// Shared access: `async with rw.read():`, or `with rw.read():` from a thread.
    /// Awaiting it alone (`await rw.read()`) locks until `release_read()`.
    fn read(&self) -> Acquire {
        Acquire::new(self.core.clone(), 1, true)
    }

    /// Exclusive access: `async with rw.write():`, or `with rw.write():` from a
    /// thread. Awaiting it alone locks until `release_write()`.
    fn write(&self) -> Acquire {
        Acquire::new(self.core.clone(), WRITE, true)
    }

    /// Ends one shared access taken with `await rw.read()`/`read_blocking()`.
    fn release_read(&self) -> PyResult<()> {
        self.core
            .release(1)
            .map_err(|_| PyRuntimeError::new_err("RwLock is not read-locked"))
    }

    /// Ends the exclusive access taken with `await rw.write()`/`write_blocking()`.
    fn release_write(&self) -> PyResult<()> {
        if self.core.available_permits() != 0 {
            return Err(PyRuntimeError::new_err("RwLock is not write-locked"));
        }
        self.core
            .release(WRITE)
            .map_err(|_| PyRuntimeError::new_err("RwLock is not write-locked"))
    }

    /// Shared access if no writer holds or waits; never waits.
    fn try_read(&self) -> bool {
        self.core.try_acquire(1).map(|p| p.forget()).is_ok()
    }

    /// Exclusive access if nobody holds or waits; never waits.
    fn try_write(&self) -> bool {
        self.core.try_acquire(WRITE).map(|p| p.forget()).is_ok()
    }

    /// Blocks the calling thread (GIL released) for shared access; `False` on timeout.
    #[pyo3(signature = (timeout = None))]
    fn read_blocking(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<bool> {
        blocking_acquire(py, &self.core, 1, timeout_arg(timeout)?)
    }

    /// Blocks the calling thread (GIL released) for exclusive access; `False` on timeout.
    #[pyo3(signature = (timeout = None))]
    fn write_blocking(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<bool> {
        blocking_acquire(py, &self.core, WRITE, timeout_arg(timeout)?)
    }

    /// Whether anyone (reader or writer) holds or waits for the lock.
    fn locked(&self) -> bool {
        self.core.available_permits() != MAX_PERMITS
    }

    fn __repr__(&self) -> String {
        let available = self.core.available_permits();
        let state = match available {
            MAX_PERMITS => "unlocked".to_owned(),
            0 => "write-locked or contended".to_owned(),
            a => format!("{} readers", MAX_PERMITS - a),
        };
        format!("<volt_sem.RwLock {state}>")
    }
}

/// The native part of `volt_sem`; import `volt_sem` instead.
#[pymodule]
fn _volt_sem(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<Semaphore>()?;
    m.add_class::<Mutex>()?;
    m.add_class::<RwLock>()?;
    m.add_class::<Acquire>()?;
    m.add_class::<Ready>()?;
    m.add("ClosedError", py.get_type::<ClosedError>())?;
    m.add("MAX_PERMITS", MAX_PERMITS)?;
    m.add_function(wrap_pyfunction!(_resolve, m)?)?;
    Ok(())
}
