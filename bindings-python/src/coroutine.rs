//! The generator protocol every awaitable of this crate speaks.
//!
//! `await x` on a native object calls `x.__await__()` and then drives what it
//! returns like a generator: asyncio calls `send(None)` (or `__next__`) each
//! time the task runs, expecting a Future to wait on or `StopIteration`
//! carrying the result, and `throw(exc)` when the task is cancelled. The
//! awaitables here (`Acquire`, `LeaseLost`) differ only in
//! their `step` (one resumption: `Ok(Some(future))` to wait again,
//! `Ok(None)` when done, the result left for `StopIteration`) and in what a
//! `throw` gives up first; [`coroutine_pymethods!`] writes the rest once,
//! with [`thrown`], the exception a `throw` raises.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyTuple, PyType};

/// Expands to `#[pymethods] impl $ty { ... }` with the given methods plus
/// `__iter__`, `__next__`, `send` and `throw`, all driven by the type's
/// `fn step(&mut self, py) -> PyResult<Option<Py<PyAny>>>`; an optional
/// `done: |slf, me| ...;` block runs, with `slf` the `&Bound` of the object
/// and `me` its borrow (the step's), after a step that finished with
/// `Ok(None)` (the wait is over and the `await` gives `None`). These three are
/// gated entry points (`interpreter::gate`, entered before the object is
/// borrowed): a daemon thread's loop resumes its awaitables through them,
/// and what they call (the loop's `create_future`, `call_soon`, trio's
/// probes) may drop the GIL. `throw` first
/// runs the `throw:` block with `$me` bound to `&mut self` (it gives up a
/// pending wait: any partial grant handed on, a full one released), then
/// raises the exception it was given.
macro_rules! coroutine_pymethods {
    (impl $ty:ident {
        throw: |$me:ident, $py:ident| $on_throw:expr;
        done: |$slf:ident, $done_me:ident| $on_done:expr;
        $($rest:tt)*
    }) => {
        #[::pyo3::pymethods]
        impl $ty {
            fn __iter__(slf: ::pyo3::Py<Self>) -> ::pyo3::Py<Self> {
                slf
            }

            fn __next__(
                slf: &::pyo3::Bound<'_, Self>,
            ) -> ::pyo3::PyResult<Option<::pyo3::Py<::pyo3::PyAny>>> {
                let py = slf.py();
                let _inside = $crate::interpreter::gate(py);
                let mut me = slf.try_borrow_mut()?;
                let step = me.step(py);
                if let Ok(None) = step {
                    let ($slf, $done_me) = (slf, me);
                    $on_done;
                }
                step
            }

            /// Resumes the wait; the value sent is ignored (asyncio sends `None`).
            #[pyo3(signature = (_value = None, /))]
            fn send(
                slf: &::pyo3::Bound<'_, Self>,
                _value: Option<&::pyo3::Bound<'_, ::pyo3::PyAny>>,
            ) -> ::pyo3::PyResult<::pyo3::Py<::pyo3::PyAny>> {
                let py = slf.py();
                let _inside = $crate::interpreter::gate(py);
                let mut me = slf.try_borrow_mut()?;
                match me.step(py)? {
                    Some(fut) => Ok(fut),
                    None => {
                        let ($slf, $done_me) = (slf, me);
                        $on_done;
                        Err(::pyo3::exceptions::PyStopIteration::new_err(()))
                    }
                }
            }

            /// Raises the given exception inside the wait, which is given up
            /// first (a partial grant handed on, a full grant released).
            #[pyo3(signature = (typ, val = None, tb = None, /))]
            fn throw(
                slf: &::pyo3::Bound<'_, Self>,
                typ: &::pyo3::Bound<'_, ::pyo3::PyAny>,
                val: Option<&::pyo3::Bound<'_, ::pyo3::PyAny>>,
                tb: Option<&::pyo3::Bound<'_, ::pyo3::PyAny>>,
            ) -> ::pyo3::PyResult<::pyo3::Py<::pyo3::PyAny>> {
                let py = slf.py();
                let _inside = $crate::interpreter::gate(py);
                let err = $crate::coroutine::thrown(py, typ, val, tb)?;
                {
                    let mut me = slf.try_borrow_mut()?;
                    let $me = &mut *me;
                    let $py = py;
                    $on_throw;
                }
                Err(err)
            }

            $($rest)*
        }
    };
    // Without a `done` block (matched second: this pattern matches the one above too).
    (impl $ty:ident { throw: |$me:ident, $py:ident| $on_throw:expr; $($rest:tt)* }) => {
        $crate::coroutine::coroutine_pymethods! {
            impl $ty { throw: |$me, $py| $on_throw; done: |_slf, _me| (); $($rest)* }
        }
    };
}

pub(crate) use coroutine_pymethods;

/// The exception `throw(typ, val, tb)` asks to raise, built the way generators do.
pub(crate) fn thrown(
    py: Python<'_>,
    typ: &Bound<'_, PyAny>,
    val: Option<&Bound<'_, PyAny>>,
    tb: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyErr> {
    let val = val.filter(|v| !v.is_none());
    let err = if let Ok(ty) = typ.cast::<PyType>() {
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
        PyErr::from_value(exc)
    } else if val.is_some() {
        return Ok(PyTypeError::new_err(
            "instance exception may not have a separate value",
        ));
    } else {
        PyErr::from_value(typ.clone())
    };
    if let Some(tb) = tb.filter(|t| !t.is_none()) {
        err.set_traceback(py, Some(tb.cast::<pyo3::types::PyTraceback>()?.clone()));
    }
    Ok(err)
}
