//! `volt_sem._volt_sem`: the Python binding of volt-sem (asyncio, uvloop, trio,
//! anyio and plain threads, all on one semaphore).
//!
//! One Rust [`volt_sem::Semaphore`] backs every Python object (`Semaphore`,
//! `Mutex` = 1 permit, `RwLock` = `MAX_PERMITS` permits with writers taking all of
//! them), and one waiter implementation serves all of them. The modules follow
//! the path of a request:
//!
//! * `errors`: typed errors and argument conversion (no bad value reaches the
//!   core, so no core panic is reachable from Python);
//! * `awaitable`: `sem.acquire(n)`, a native awaitable; the asyncio wait, the
//!   trio wait, and the lock roles that make a wrong lock release an error;
//! * `wake`: the wake path, which runs no Python code at all on the releasing
//!   thread (a native per-loop queue and a socket pair the loop watches), so
//!   that interpreter exit can never abort the process in the middle of a wake;
//! * `blocking`: waits of plain threads, GIL released;
//! * `locks`: `Mutex` and `RwLock`;
//! * this file: `Semaphore` and the module.
//!
//! Python-side glue (creating and registering wake channels, draining them in
//! Python frames, the trio pump) lives in `volt_sem/_glue.py`.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyTuple;

mod awaitable;
mod blocking;
mod errors;
mod locks;
mod wake;
mod wake_socket;

use awaitable::{enter_one, ready, Acquire, Ready, Role, TrioWaiter};
use blocking::blocking_acquire;
use errors::{release_error, timeout_arg, try_acquire_error, ClosedError, Initial, Permits};
use volt_sem::TryAcquireError;
use wake::{after_wakes, Channel};

pub(crate) type Core = volt_sem::Semaphore;

/// The largest number of permits a semaphore can hold, and the largest request.
pub(crate) const MAX_PERMITS: usize = Core::MAX_PERMITS;

/// A fair, weighted, thread-safe async counting semaphore.
///
/// `Semaphore(permits=1)`. Waiters are served in strict FIFO order, weights
/// included: a waiting `acquire(3)` is never overtaken by later `acquire(1)`s; it
/// accumulates released permits until it has all three. One semaphore can be
/// shared at once by asyncio (or uvloop) loops and trio runs on any threads, and
/// by plain threads using `acquire_blocking`.
#[pyclass(module = "volt_sem", frozen, weakref)]
struct Semaphore {
    core: Arc<Core>,
}

#[pymethods]
impl Semaphore {
    /// The largest number of permits a semaphore can hold, and the largest request.
    #[classattr]
    const MAX_PERMITS: usize = MAX_PERMITS;

    #[new]
    #[pyo3(signature = (permits = Initial(1)))]
    fn new(permits: Initial) -> Self {
        Semaphore {
            core: Arc::new(Core::new(permits.0)),
        }
    }

    /// Waits for `n` permits (FIFO, weights included); `await` returns `True`.
    /// Also `async with sem.acquire(n):`, which releases the `n` permits on exit.
    /// Raises `ClosedError` if the semaphore is (or gets) closed while waiting.
    #[pyo3(signature = (n = Permits(1)), text_signature = "($self, n=1)")]
    fn acquire(&self, n: Permits) -> Acquire {
        Acquire::new(self.core.clone(), n.0, Role::Count, true)
    }

    /// Returns `n` permits: to the oldest waiters first (on any thread or loop),
    /// the surplus to the counter. `OverflowError` if the available permits would
    /// exceed `MAX_PERMITS` (nothing is released then).
    #[pyo3(signature = (n = Permits(1)), text_signature = "($self, n=1)")]
    fn release(&self, py: Python<'_>, n: Permits) -> PyResult<()> {
        let r = release_error(&self.core, n.0);
        after_wakes(py);
        r
    }

    /// Takes `n` permits if they are free right now and nobody waits; never waits.
    #[pyo3(signature = (n = Permits(1)), text_signature = "($self, n=1)")]
    fn try_acquire(&self, n: Permits) -> PyResult<bool> {
        match self.core.try_acquire(n.0) {
            Ok(permit) => {
                permit.forget();
                Ok(true)
            }
            Err(TryAcquireError::NoPermits) => Ok(false),
            Err(e) => Err(try_acquire_error(e)),
        }
    }

    /// Blocks the calling thread (GIL released) until `n` permits are granted in
    /// FIFO order. Returns `False` if `timeout` seconds passed first (any partial
    /// grant is handed on). For plain threads: never call it on an event loop's
    /// thread.
    #[pyo3(signature = (n = Permits(1), timeout = None), text_signature = "($self, n=1, timeout=None)")]
    fn acquire_blocking(&self, py: Python<'_>, n: Permits, timeout: Option<f64>) -> PyResult<bool> {
        blocking_acquire(py, &self.core, n.0, timeout_arg(timeout)?)
    }

    /// Permits available right now (0 while anyone waits).
    #[getter]
    fn available_permits(&self) -> usize {
        self.core.available_permits()
    }

    /// Whether an `acquire()` of one permit would have to wait.
    #[pyo3(text_signature = "($self)")]
    fn locked(&self) -> bool {
        self.core.available_permits() == 0
    }

    /// Closes the semaphore: waiting acquires raise `ClosedError`, and so does
    /// every later acquire. Held permits can still be released. Idempotent.
    #[pyo3(text_signature = "($self)")]
    fn close(&self, py: Python<'_>) {
        self.core.close();
        after_wakes(py);
    }

    /// Whether `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.core.is_closed()
    }

    fn __aenter__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        enter_one(py, &self.core, &Role::Count)
    }

    #[pyo3(signature = (*_args))]
    fn __aexit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> PyResult<Py<Ready>> {
        let r = release_error(&self.core, 1);
        after_wakes(py);
        r?;
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

/// The native part of `volt_sem`; import `volt_sem` instead.
#[pymodule]
fn _volt_sem(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<Semaphore>()?;
    m.add_class::<locks::Mutex>()?;
    m.add_class::<locks::RwLock>()?;
    m.add_class::<Acquire>()?;
    m.add_class::<Ready>()?;
    m.add_class::<Channel>()?;
    m.add_class::<TrioWaiter>()?;
    m.add("ClosedError", py.get_type::<ClosedError>())?;
    m.add("MAX_PERMITS", MAX_PERMITS)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(blocking::_interpreter_exiting, m)?)?;
    Ok(())
}
