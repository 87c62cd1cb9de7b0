//! asyncio Futures, made and awaited the way `await fut` would, without its
//! Python frames: the waits of `Acquire` and `LeaseLost` use them.

use std::cell::Cell;
use std::sync::atomic::{AtomicPtr, Ordering};

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyType};

static FUTURE_TYPE: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static STOCK_CREATE_FUTURE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static METHOD_TYPE: PyOnceLock<Py<PyType>> = PyOnceLock::new();
/// The last loop type seen whose `create_future` is asyncio's own (it just builds
/// `asyncio.Future(loop=self)`). Holds a strong reference, leaked on purpose.
static STOCK_LOOP_TYPE: AtomicPtr<pyo3::ffi::PyObject> = AtomicPtr::new(std::ptr::null_mut());

/// `loop.create_future()`, built directly as `asyncio.Future(loop=loop)` when
/// the loop's `create_future` is asyncio's stock one (it does exactly that),
/// which skips a Python-level method frame on every wait. Other loops
/// (uvloop, custom ones) get their own `create_future`, and so does a loop
/// of a stock type whose `create_future` was set on the instance
/// (instrumentation, a test harness): asyncio's own primitives call
/// `loop.create_future()` and honour it. For a stock type the check is the
/// attribute that call would use, `loop.create_future`: a bound method of
/// `BaseEventLoop.create_future` unless the instance overrides it. (A look
/// at the loop's type alone missed the override; a read of its `__dict__`
/// builds the instance's dict on 3.11 and 3.12, after which every attribute
/// access of the loop's own code is slower: +17% per contended operation.)
pub(crate) fn new_future<'py>(
    py: Python<'py>,
    event_loop: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let ty = event_loop.get_type();
    let base = STOCK_CREATE_FUTURE.get_or_try_init(py, || {
        PyResult::Ok(
            py.import("asyncio")?
                .getattr("BaseEventLoop")?
                .getattr("create_future")?
                .unbind(),
        )
    })?;
    let stock_type = STOCK_LOOP_TYPE.load(Ordering::Acquire) == ty.as_ptr()
        || ty
            .getattr(pyo3::intern!(py, "create_future"))?
            .is(base.bind(py));
    if !stock_type {
        return event_loop.call_method0(pyo3::intern!(py, "create_future"));
    }
    if STOCK_LOOP_TYPE.load(Ordering::Relaxed) != ty.as_ptr() {
        STOCK_LOOP_TYPE.store(ty.clone().into_any().unbind().into_ptr(), Ordering::Release);
    }
    let create = event_loop.getattr(pyo3::intern!(py, "create_future"))?;
    let method = METHOD_TYPE.import(py, "types", "MethodType")?;
    if create.get_type().is(method) && method_func(py, &create)?.is(base.bind(py)) {
        let future = FUTURE_TYPE.import(py, "asyncio", "Future")?;
        return stock_future(py, future, event_loop);
    }
    create.call0() // the instance's own
}

/// `method.__func__` of a bound method (exactly `types.MethodType`): through
/// the member descriptor's `tp_descr_get` when [`FUNC_GETTER`] has it (about
/// 235 fewer instructions than `PyObject_GetAttr`, which looks the name up
/// on the type first), else by `getattr`.
fn method_func<'py>(py: Python<'py>, method: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    if let Some(g) = FUNC_GETTER.get_or_init(py, || func_getter(py)) {
        // SAFETY: GIL held; `method` is a live bound method, an instance of
        // the type the descriptor `g.descr` (a strong reference, kept) belongs
        // to; `g.get` is that descriptor's type's `tp_descr_get`, called as
        // attribute lookup calls it (descriptor, instance, type): a new
        // reference, or NULL with an exception set.
        unsafe {
            let r = (g.get)(
                g.descr as *mut pyo3::ffi::PyObject,
                method.as_ptr(),
                pyo3::ffi::Py_TYPE(method.as_ptr()) as *mut pyo3::ffi::PyObject,
            );
            return Bound::from_owned_ptr_or_err(py, r);
        }
    }
    method.getattr(pyo3::intern!(py, "__func__"))
}

/// `types.MethodType`'s `__func__` member descriptor and its type's
/// `tp_descr_get`.
struct FuncGetter {
    /// A strong reference, kept for good.
    descr: usize,
    get: pyo3::ffi::descrgetfunc,
}

static FUNC_GETTER: PyOnceLock<Option<FuncGetter>> = PyOnceLock::new();

/// Looks up [`FuncGetter`]: `None` (then `getattr`) when `__func__` is not a
/// member descriptor or `PyType_GetSlot` cannot read a static type's slot
/// (CPython 3.9), as for [`Blocking`].
fn func_getter(py: Python<'_>) -> Option<FuncGetter> {
    use pyo3::ffi;
    let method = METHOD_TYPE.import(py, "types", "MethodType").ok()?;
    let descr = method.getattr(pyo3::intern!(py, "__func__")).ok()?;
    let kind = std::ptr::addr_of_mut!(ffi::PyMemberDescr_Type);
    let get = descriptor_slot(&descr, kind, ffi::Py_tp_descr_get)?;
    Some(FuncGetter {
        descr: descr.into_ptr() as usize,
        // SAFETY: the slot read is `tp_descr_get`, whose C type is `descrgetfunc`.
        get: unsafe { std::mem::transmute::<*mut std::ffi::c_void, ffi::descrgetfunc>(get) },
    })
}

/// The slot `slot` of `descr`'s type, when that type is `kind` (a static
/// type of descriptors): `None` otherwise, or when `PyType_GetSlot` cannot
/// read a static type's slot (before 3.10; the error it sets is cleared).
fn descriptor_slot(
    descr: &Bound<'_, PyAny>,
    kind: *mut pyo3::ffi::PyTypeObject,
    slot: std::ffi::c_int,
) -> Option<*mut std::ffi::c_void> {
    use pyo3::ffi;
    // SAFETY: GIL held (`descr` is bound); `descr` is a live object, and its
    // type a live type object. `PyType_GetSlot` returns NULL with an error
    // set for a static type before 3.10.
    unsafe {
        let descr_type = ffi::Py_TYPE(descr.as_ptr());
        if descr_type != kind {
            return None;
        }
        let p = ffi::PyType_GetSlot(descr_type, slot);
        if p.is_null() {
            ffi::PyErr_Clear();
            return None;
        }
        Some(p)
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
    use pyo3::ffi;
    if let Some(b) = BLOCKING.get_or_init(py, || blocking_setter(py)) {
        // SAFETY: GIL held; `fut` is live and exactly asyncio's C Future
        // (checked), the type the descriptor belongs to; `b.set` is that
        // descriptor's type's `tp_descr_set`, called as `setattr` would
        // call it (descriptor, instance, value), -1 with an error set.
        unsafe {
            if ffi::Py_TYPE(fut.as_ptr()) as usize == b.future_type {
                if (b.set)(b.descr as *mut ffi::PyObject, fut.as_ptr(), ffi::Py_True()) != 0 {
                    return Err(PyErr::fetch(py));
                }
                return Ok(fut.clone().unbind());
            }
        }
    }
    fut.setattr(pyo3::intern!(py, "_asyncio_future_blocking"), true)?;
    Ok(fut.clone().unbind())
}

/// `asyncio.Future`'s `_asyncio_future_blocking` setter, reached without
/// `setattr`'s lookup: the C Future's getset descriptor and its type's
/// `tp_descr_set` (about 130 fewer instructions per wait than
/// `PyObject_SetAttr`). Used on instances of exactly that type, whose
/// attribute no subclass can override.
struct Blocking {
    future_type: usize,
    /// A strong reference, kept for good.
    descr: usize,
    set: pyo3::ffi::descrsetfunc,
}

static BLOCKING: PyOnceLock<Option<Blocking>> = PyOnceLock::new();

/// Looks up [`Blocking`]: `None` (the attribute then set by `setattr`)
/// when asyncio's Future is the pure-Python one (a plain class attribute)
/// or when `PyType_GetSlot` cannot read a static type's slot (CPython 3.9).
fn blocking_setter(py: Python<'_>) -> Option<Blocking> {
    use pyo3::ffi;
    let future = FUTURE_TYPE.import(py, "asyncio", "Future").ok()?;
    let descr = future
        .getattr(pyo3::intern!(py, "_asyncio_future_blocking"))
        .ok()?;
    let kind = std::ptr::addr_of_mut!(ffi::PyGetSetDescr_Type);
    let set = descriptor_slot(&descr, kind, ffi::Py_tp_descr_set)?;
    Some(Blocking {
        future_type: future.as_ptr() as usize,
        descr: descr.into_ptr() as usize,
        // SAFETY: the slot read is `tp_descr_set`, whose C type is `descrsetfunc`.
        set: unsafe { std::mem::transmute::<*mut std::ffi::c_void, ffi::descrsetfunc>(set) },
    })
}
