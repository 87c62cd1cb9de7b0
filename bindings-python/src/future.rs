//! asyncio Futures, made and awaited the way `await fut` would, without its
//! Python frames: the waits of `Acquire` and `LeaseLost` use them.

use std::cell::Cell;
use std::sync::atomic::{AtomicPtr, Ordering};

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyType};

static FUTURE_TYPE: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static STOCK_CREATE_FUTURE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
/// The last loop type seen whose `create_future` is asyncio's own (it just builds
/// `asyncio.Future(loop=self)`). Holds a strong reference, leaked on purpose.
static STOCK_LOOP_TYPE: AtomicPtr<pyo3::ffi::PyObject> = AtomicPtr::new(std::ptr::null_mut());

/// `loop.create_future()`, built directly as `asyncio.Future(loop=loop)` when the
/// loop's `create_future` is asyncio's stock one (it does exactly that), which
/// skips a Python-level method frame on every wait. Other loops (uvloop, custom
/// ones) get their own `create_future`.
pub(crate) fn new_future<'py>(
    py: Python<'py>,
    event_loop: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
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
        stock_future(py, future, event_loop)
    } else {
        event_loop.call_method0(pyo3::intern!(py, "create_future"))
    }
}

thread_local! {
    /// [`stock_future`]'s `{"loop": None}`, kept between calls: a dict made,
    /// filled and freed per wait cost about 430 instructions and 30
    /// instruction-cache misses (its keys' allocation, the insert, its
    /// dealloc). `None` while a call uses it (a nested one makes its own).
    static LOOP_KWARGS: Cell<Option<Py<PyDict>>> = const { Cell::new(None) };
}

/// `asyncio.Future(loop=event_loop)`, its keyword arguments in this thread's
/// reused dict: the loop is set in it for the call and replaced by `None`
/// after, so the dict never keeps a loop alive. `Future.__init__` calls the
/// loop's `get_debug()`, which may be Python code (a loop subclass's) and
/// come back here: the dict is taken out of the thread's cell meanwhile,
/// and one with other references (kept by such code) is not reused.
fn stock_future<'py>(
    py: Python<'py>,
    future: &Bound<'py, PyType>,
    event_loop: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let name = pyo3::intern!(py, "loop");
    let kwargs = match LOOP_KWARGS.try_with(Cell::take).ok().flatten() {
        Some(d) => d.into_bound(py),
        None => PyDict::new(py),
    };
    kwargs.set_item(name, event_loop)?;
    let fut = future.call((), Some(&kwargs));
    kwargs.set_item(name, py.None())?;
    if crate::only_reference(&kwargs) {
        let _ = LOOP_KWARGS.try_with(|c| c.set(Some(kwargs.unbind())));
    }
    fut
}

/// What the first step of `yield from fut.__await__()` does, without creating the
/// iterator: marks the Future as blocking (the flag asyncio's Task checks) and
/// returns it for the task to wait on.
pub(crate) fn yield_future(py: Python<'_>, fut: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    fut.setattr(pyo3::intern!(py, "_asyncio_future_blocking"), true)?;
    Ok(fut.clone().unbind())
}
