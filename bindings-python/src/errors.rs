//! Errors and argument conversion: every bad value from Python becomes a typed
//! exception (`ValueError`, `TypeError`, `OverflowError`, [`ClosedError`]) before
//! it reaches the core, so no core panic is reachable from Python.
//!
//! A shared semaphore (`Semaphore.open`) adds the failures of a named segment
//! shared by processes ([`backend_error`]): the OS-level ones map to Python's
//! own (`FileNotFoundError`, `FileExistsError`, `PermissionError`, `OSError`,
//! `NotImplementedError`), bad names and totals to `ValueError` subclasses, and
//! the rest to subclasses of [`SharedError`], one per cause.

use std::time::Duration;

use pyo3::create_exception;
use pyo3::exceptions::{
    PyFileExistsError, PyFileNotFoundError, PyNotImplementedError, PyOSError, PyOverflowError,
    PyPermissionError, PyRuntimeError, PyTimeoutError, PyTypeError, PyValueError,
};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyModule, PyString};
use volt_sem_backend::{Error, ErrorClass};

use crate::{Core, MAX_PERMITS};

/// The exception classes, each named once: declared here, and added to the
/// module by the `add_exceptions` this generates.
macro_rules! exceptions {
    ($($name:ident($base:ident): $doc:expr;)*) => {
        $(create_exception!(volt_sem, $name, $base, $doc);)*

        /// Adds every exception class above to the module.
        pub(crate) fn add_exceptions(m: &Bound<'_, PyModule>) -> PyResult<()> {
            $(m.add(stringify!($name), m.py().get_type::<$name>())?;)*
            Ok(())
        }
    };
}

exceptions! {
    ClosedError(PyRuntimeError):
    "The semaphore (or lock) was closed: raised by every later acquire, and by the \
     acquires that were waiting when it was closed.";
    DisconnectedError(ClosedError):
    "This handle's session was ended (`disconnect()`, the end of its `with`/`async with` \
     block, or `disconnect_on_signals`): every later call on the handle raises it, and so do \
     its acquires that were queued then. The semaphore itself stays open for every other \
     handle and process: open or connect again for a new session. A `ClosedError`.";
    SharedError(PyRuntimeError):
    "A failure specific to a semaphore shared across processes (`Semaphore.open`); \
     the subclasses name the cause.";
    InvalidNameError(PyValueError):
    "`Semaphore.open`/`unlink`: the name is empty, contains '/' or NUL, or is too long; \
     `connect`/`delete_redis`: it is empty, contains '{', '}' or NUL, or is too long; any of them: \
     it has a lone surrogate.";
    TotalMismatchError(SharedError):
    "`Semaphore.open`: the name exists with another total of permits (in `args[1]`); \
     nothing was changed.";
    VersionMismatchError(SharedError):
    "The semaphore was made by another release of volt-sem (`Semaphore.open`: a segment of \
     another layout version; `connect`, `delete_redis`: Redis keys of another \
     schema version); the version found is in `args[1]`; nothing was changed.";
    LibcMismatchError(SharedError):
    "`Semaphore.open`: the segment's lock is another C library's (a glibc build and a musl \
     build of volt-sem cannot share a named semaphore); `args[1]` is the segment's C library \
     (1 glibc, 2 musl); nothing was changed.";
    NotASegmentError(SharedError):
    "`Semaphore.open`: the file under the name is not a volt-sem segment (foreign or truncated).";
    QueueFullError(SharedError):
    "Every waiter slot of the shared semaphore is taken; the request was not queued.";
    ProcessTableFullError(SharedError):
    "Every process record of the shared semaphore is taken.";
    NotHeldError(SharedError):
    "`release(n)` of a shared semaphore with `n` above what this process holds (each \
     process returns its own permits); nothing was released.";
    ForkedError(SharedError):
    "A shared semaphore opened (or a Redis one connected) before `fork()`, used in the child: \
     open or connect again there.";
    CorruptError(SharedError):
    "The shared segment holds a value the library never writes (a process with write access scribbled on it), or its lock is not recoverable.";
}

#[cold]
#[inline(never)]
pub(crate) fn closed_error() -> PyErr {
    ClosedError::new_err("semaphore closed")
}

/// The error of a call on a handle whose session ended (see [`DisconnectedError`]).
#[cold]
#[inline(never)]
pub(crate) fn disconnected_error() -> PyErr {
    DisconnectedError::new_err(
        "this handle was disconnected (disconnect(), the end of its `with` block, or a signal \
         handled by disconnect_on_signals()): its session ended; the semaphore stays open for \
         everyone else: open or connect again for a new session",
    )
}

/// The exception of a backend error (every operation of a local or shared
/// semaphore, and `open`/`unlink`): chosen by the error's
/// [`class`](Error::class), then by its `code` where Python has a class of its
/// own for it; an error without one raises its class's base exception.
#[cold]
#[inline(never)]
pub(crate) fn backend_error(e: Error) -> PyErr {
    let msg = e.to_string();
    match e.class() {
        ErrorClass::Closed if e == Error::Disconnected => disconnected_error(),
        ErrorClass::Closed => closed_error(),
        ErrorClass::WouldBlock => PyRuntimeError::new_err("no permits"),
        ErrorClass::Timeout => PyTimeoutError::new_err(msg),
        ErrorClass::Count => count_error(&e),
        ErrorClass::NotFound => PyFileNotFoundError::new_err(msg),
        ErrorClass::Exists => PyFileExistsError::new_err(msg),
        ErrorClass::Permission => PyPermissionError::new_err(msg),
        // A Python blocking wait never runs on a doorbell thread (no Python
        // code runs there); kept typed all the same.
        ErrorClass::Usage => PyRuntimeError::new_err(msg),
        ErrorClass::Unsupported => PyNotImplementedError::new_err(msg),
        ErrorClass::Os => {
            let errno = match e {
                Error::Os(errno) => errno,
                _ => 0,
            };
            PyOSError::new_err((errno, msg))
        }
        ErrorClass::Shared => shared_error(e, msg),
        ErrorClass::Value if e == Error::InvalidName => InvalidNameError::new_err(msg),
        // The classes of `volt_sem/_errors.py`, by code, else these bases.
        ErrorClass::Value | ErrorClass::Option => Python::attach(|py| redis_error(py, &e, None)),
        ErrorClass::Connection => {
            Python::attach(|py| redis_error(py, &e, Some("RedisConnectionError")))
        }
        ErrorClass::Lease => Python::attach(|py| redis_error(py, &e, Some("RedisError"))),
        ErrorClass::Redis => Python::attach(|py| redis_error(py, &e, Some("RedisCommandError"))),
        // ErrorClass is non_exhaustive: a later class stays typed.
        _ => SharedError::new_err(msg),
    }
}

/// A count out of range, in the words of Python's arguments.
fn count_error(e: &Error) -> PyErr {
    match e {
        Error::Overflow { .. } => PyOverflowError::new_err(format!(
            "release would raise the available permits above the maximum ({MAX_PERMITS})"
        )),
        Error::InvalidPermits => PyValueError::new_err(format!(
            "permits must be between 1 and {}",
            volt_sem_backend::shm::MAX_PERMITS
        )),
        _ => PyValueError::new_err(
            "n is above the largest grant (MAX_PERMITS, or a shared semaphore's total)",
        ),
    }
}

/// The [`SharedError`] subclass of a shared semaphore's error (the values it
/// carries in `args[1]`).
fn shared_error(e: Error, msg: String) -> PyErr {
    match e {
        Error::TotalMismatch { existing } => total_mismatch_error(existing, false),
        Error::VersionMismatch { found, expected } => {
            VersionMismatchError::new_err((msg, found, expected))
        }
        Error::NotHeld { held } => NotHeldError::new_err((msg, held)),
        Error::Forked => forked_error(None),
        Error::LibcMismatch { found, expected } => {
            LibcMismatchError::new_err((msg, found, expected))
        }
        Error::NotASegment => NotASegmentError::new_err(msg),
        Error::QueueFull => QueueFullError::new_err(msg),
        Error::ProcessTableFull => ProcessTableFullError::new_err(msg),
        Error::Corrupt => CorruptError::new_err(msg),
        _ => SharedError::new_err(msg),
    }
}

static REDIS_ERRORS: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

/// The exception of a Redis error (and of a bad URL): the class of
/// `volt_sem/_errors.py` (two of them have two bases, which a native exception
/// type cannot have) whose `code` is the error's, else the class named
/// `fallback` (with the error's `code`), else a `ValueError`. The texts come
/// from the backend, which never puts a password (or the URL) in them.
fn redis_error(py: Python<'_>, e: &Error, fallback: Option<&str>) -> PyErr {
    let made = (|| -> PyResult<PyErr> {
        let module = REDIS_ERRORS
            .get_or_try_init(py, || PyResult::Ok(py.import("volt_sem._errors")?.unbind()))?
            .bind(py);
        let class = match (class_of_code(module, e.code())?, fallback) {
            (Some(class), _) => class,
            (None, Some(name)) => module.getattr(name)?,
            (None, None) => return Ok(PyValueError::new_err(e.to_string())),
        };
        let exc = class.call1((e.to_string(),))?;
        exc.setattr("code", e.code())?;
        Ok(PyErr::from_value(exc))
    })();
    made.unwrap_or_else(|err| err)
}

/// The class of `module.__all__` whose `code` is `code`. A subclass that
/// keeps its base's code (`RedisCommandError`, `REDIS_ERROR`) is listed after
/// the base, and the last one wins.
fn class_of_code<'py>(
    module: &Bound<'py, PyModule>,
    code: &str,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let mut found = None;
    for name in module.getattr("__all__")?.try_iter()? {
        let class = module.getattr(name?.extract::<String>()?)?;
        if class.getattr("code")?.extract::<String>()? == code {
            found = Some(class);
        }
    }
    Ok(found)
}

/// `TotalMismatchError`: a sentence (its `str()`), with the existing total
/// in `args[1]` (and `.existing`) and how to change a total.
pub(crate) fn total_mismatch_error(existing: u64, redis: bool) -> PyErr {
    let msg = if redis {
        format!(
            "the Redis semaphore exists with {existing} permits in total (nothing was changed): \
             connect with permits={existing}, or, to change its total for every client, \
             connect with resize=True (or call set_total(n) on a handle)"
        )
    } else {
        format!(
            "the shared semaphore exists with {existing} permits in total (nothing was changed): \
             open it with permits={existing}, or, to change its total for every process, \
             open it with resize=True (or call set_total(n) on a handle)"
        )
    };
    TotalMismatchError::new_err((msg, existing))
}

/// `ForkedError`: what to do again in the child depends on the handle
/// (`Some(true)`: a Redis one, `Some(false)`: a named one, `None`: unknown).
pub(crate) fn forked_error(redis: Option<bool>) -> PyErr {
    ForkedError::new_err(match redis {
        Some(true) => {
            "this Redis handle was connected before fork(): connect again in the child \
             (Semaphore.connect); the parent's session stays the parent's"
        }
        Some(false) => {
            "this shared semaphore was opened before fork(): open the name again in the child \
             (Semaphore.open)"
        }
        None => {
            "this handle was opened or connected before fork(): open the name again \
             (Semaphore.open) or connect again (Semaphore.connect) in the child"
        }
    })
}

#[cold]
#[inline(never)]
pub(crate) fn too_many_error(name: &str) -> PyErr {
    PyValueError::new_err(format!("{name} must be at most {MAX_PERMITS}"))
}

/// An acquire's error; a request above a shared semaphore's total names it.
#[cold]
#[inline(never)]
pub(crate) fn acquire_error(core: &Core, e: Error) -> PyErr {
    match (e, core.total_permits()) {
        (Error::TooManyPermits, Some(total)) => {
            PyValueError::new_err(format!("n must be at most the semaphore's total ({total})"))
        }
        (Error::TooManyPermits, None) => too_many_error("n"),
        // A request queued when its handle disconnected: `Disconnected`
        // (the seam's), or `Closed` met by a request made as it ended.
        (Error::Closed, _) if core.is_disconnected() => disconnected_error(),
        (Error::Forked, _) => forked_error(Some(core.as_redis().is_some())),
        (e, _) => backend_error(e),
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

/// A semaphore name (`open`, `unlink`, `connect`, `delete_redis`): a `str`,
/// else `TypeError`. One with a lone surrogate has no UTF-8 form, so no
/// semaphore can have it: `InvalidNameError`, as for every other invalid name
/// (and as Node and C refuse it), not the `UnicodeEncodeError` of the
/// conversion, which is no `InvalidNameError` and has no `code`.
pub(crate) struct Name(pub(crate) String);

impl<'a, 'py> FromPyObject<'a, 'py> for Name {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> Result<Self, Self::Error> {
        match utf8_str(obj, "name")? {
            Some(name) => Ok(Name(name)),
            None => Err(InvalidNameError::new_err(
                "invalid semaphore name (it has a lone surrogate, which no UTF-8 name can hold)",
            )),
        }
    }
}

/// A `str` argument as UTF-8: `TypeError` naming `what` if it is no `str`,
/// `None` if it has a lone surrogate (no UTF-8 form; the caller says which
/// error that is).
fn utf8_str(obj: Borrowed<'_, '_, PyAny>, what: &str) -> PyResult<Option<String>> {
    let Ok(s) = obj.cast::<PyString>() else {
        let ty = obj
            .get_type()
            .name()
            .map(|n| n.to_string())
            .unwrap_or_else(|_| "?".to_owned());
        return Err(PyTypeError::new_err(format!(
            "{what} must be a str, not {ty}"
        )));
    };
    Ok(s.to_cow().ok().map(|c| c.into_owned()))
}

/// A handle's label (`open`, `connect`): a `str`, else `TypeError`. One
/// with a lone surrogate is an `InvalidLabelError` (no label can hold it, as
/// Node and C refuse it), not the `UnicodeEncodeError` of the conversion.
pub(crate) struct Label(pub(crate) String);

impl<'a, 'py> FromPyObject<'a, 'py> for Label {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> Result<Self, Self::Error> {
        match utf8_str(obj, "label")? {
            Some(label) => Ok(Label(label)),
            None => Err(redis_error(obj.py(), &Error::InvalidLabel, None)),
        }
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

/// The permission bits of a new shared segment (`Semaphore.open(mode=)`): an
/// `int` from 0 to `0o777`.
#[derive(Clone, Copy)]
pub(crate) struct Mode(pub(crate) u32);

impl<'a, 'py> FromPyObject<'a, 'py> for Mode {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> Result<Self, Self::Error> {
        // `count` rejects bools, non-ints and negatives with their own errors.
        match count(&obj, "mode")? {
            m if m <= 0o777 => Ok(Mode(m as u32)),
            _ => Err(PyValueError::new_err(
                "mode must be permission bits (0 to 0o777)",
            )),
        }
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

/// `release(n)` on the core, as a Python error when it would overflow (local)
/// or when this process holds fewer than `n` (shared, [`NotHeldError`]).
pub(crate) fn release_error(core: &Core, n: usize) -> PyResult<()> {
    core.release(n).map_err(|e| release_failed(n, e))
}

#[cold]
#[inline(never)]
fn release_failed(n: usize, e: Error) -> PyErr {
    match e {
        Error::Overflow { .. } => PyOverflowError::new_err(format!(
            "release({n}) would raise the available permits above the maximum ({MAX_PERMITS})"
        )),
        e => backend_error(e),
    }
}
