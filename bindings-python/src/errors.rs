//! Errors and argument conversion: every bad value from Python becomes a typed
//! exception (`ValueError`, `TypeError`, `OverflowError`, [`ClosedError`]) before
//! it reaches the core, so no core panic is reachable from Python.

use std::time::Duration;

use pyo3::create_exception;
use pyo3::exceptions::{PyOverflowError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBool;
use volt_sem::{AcquireError, TryAcquireError};

use crate::{Core, MAX_PERMITS};

create_exception!(
    volt_sem,
    ClosedError,
    PyRuntimeError,
    "The semaphore (or lock) was closed: raised by every later acquire, and by the \
     acquires that were waiting when it was closed."
);

pub(crate) fn closed_error() -> PyErr {
    ClosedError::new_err("semaphore closed")
}

pub(crate) fn too_many_error(name: &str) -> PyErr {
    PyValueError::new_err(format!("{name} must be at most {MAX_PERMITS}"))
}

pub(crate) fn acquire_error(e: AcquireError) -> PyErr {
    match e {
        AcquireError::Closed => closed_error(),
        AcquireError::TooManyPermits => too_many_error("n"),
        // The core's error enums are non_exhaustive: a later variant lands here.
        e => PyRuntimeError::new_err(e.to_string()),
    }
}

pub(crate) fn try_acquire_error(e: TryAcquireError) -> PyErr {
    match e {
        TryAcquireError::Closed => closed_error(),
        TryAcquireError::TooManyPermits => too_many_error("n"),
        TryAcquireError::NoPermits => PyRuntimeError::new_err("no permits"),
        e => PyRuntimeError::new_err(e.to_string()),
    }
}

/// A count from Python named `name`: an `int` (not a `bool`) with
/// `0 <= v <= MAX_PERMITS`, else `TypeError`/`ValueError` (including for
/// integers too large for any machine word).
pub(crate) fn count(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<usize> {
    if obj.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err(format!(
            "{name} must be an int, not bool"
        )));
    }
    match obj.extract::<i64>() {
        Ok(v) if v < 0 => Err(PyValueError::new_err(format!("{name} must be >= 0"))),
        Ok(v) if v as u64 > MAX_PERMITS as u64 => Err(too_many_error(name)),
        Ok(v) => Ok(v as usize),
        Err(e) if e.is_instance_of::<PyOverflowError>(obj.py()) => {
            let negative = obj.lt(0i64).unwrap_or(false);
            Err(if negative {
                PyValueError::new_err(format!("{name} must be >= 0"))
            } else {
                too_many_error(name)
            })
        }
        Err(e) if e.is_instance_of::<PyTypeError>(obj.py()) => Err(PyTypeError::new_err(format!(
            "{name} must be an int, not {}",
            obj.get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_else(|_| "?".to_owned())
        ))),
        Err(e) => Err(e),
    }
}

/// A request size `n` (`acquire(n)`, `release(n)`, ...).
#[derive(Clone, Copy)]
pub(crate) struct Permits(pub(crate) usize);

impl<'a, 'py> FromPyObject<'a, 'py> for Permits {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> Result<Self, Self::Error> {
        count(&obj, "n").map(Permits)
    }
}

/// The initial count of `Semaphore(permits)`.
#[derive(Clone, Copy)]
pub(crate) struct Initial(pub(crate) usize);

impl<'a, 'py> FromPyObject<'a, 'py> for Initial {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> Result<Self, Self::Error> {
        count(&obj, "permits").map(Initial)
    }
}

/// A timeout in seconds: `None` waits for ever; negative or NaN is a `ValueError`.
pub(crate) fn timeout_arg(timeout: Option<f64>) -> PyResult<Option<Duration>> {
    match timeout {
        None => Ok(None),
        Some(t) if t.is_nan() || t < 0.0 => {
            Err(PyValueError::new_err("timeout must be >= 0 or None"))
        }
        // Too large to represent: as good as no timeout.
        Some(t) => Ok(Duration::try_from_secs_f64(t).ok()),
    }
}

/// `release(n)` on the core, as a Python error when it would overflow.
pub(crate) fn release_error(core: &Core, n: usize) -> PyResult<()> {
    core.release(n).map_err(|_| {
        PyOverflowError::new_err(format!(
            "release({n}) would raise the available permits above the maximum ({MAX_PERMITS})"
        ))
    })
}
