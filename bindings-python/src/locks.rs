//! `Mutex` and `RwLock`: one core semaphore each (1 permit; `MAX_PERMITS` permits
//! with writers taking all), plus a [`Held`] record so that every wrong or
//! unmatched release raises `RuntimeError` and changes nothing (see
//! `awaitable`'s module docs, *Lock roles*).

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::awaitable::{enter_one, finished, Acquire, Held, Role};
use crate::blocking::blocking_acquire;
use crate::errors::timeout_arg;
use crate::{Core, MAX_PERMITS};

const WRITE: usize = MAX_PERMITS;

/// `try_acquire(n)` that records the role on success.
fn try_take(core: &Core, n: usize, role: &Role) -> bool {
    match core.try_acquire(n) {
        Ok(_) => {
            role.taken(n);
            true
        }
        Err(_) => false,
    }
}

/// A fair mutual-exclusion lock for async tasks and plain threads (a semaphore of
/// one permit). `async with m:`; `await m.acquire()` / `m.release()`;
/// `m.acquire_blocking(timeout=None)` or `with m.acquire():` from threads.
#[pyclass(module = "volt_sem", frozen, weakref)]
pub(crate) struct Mutex {
    core: Arc<Core>,
    role: Role,
}

#[pymethods]
impl Mutex {
    #[new]
    fn new() -> Self {
        Mutex {
            core: Arc::new(crate::local_core(1)),
            role: Role::Exclusive(
                Arc::new(Held::default()),
                "Mutex is not locked",
                "m.acquire()",
            ),
        }
    }

    /// Waits for the lock (FIFO); `await` returns `True`. Also usable as
    /// `async with m.acquire():` and, from a thread, `with m.acquire():`.
    #[pyo3(text_signature = "($self)")]
    fn acquire(&self) -> Acquire {
        Acquire::new(self.core.clone(), 1, self.role.clone(), true)
    }

    /// Unlocks. `RuntimeError` if the lock is not held.
    #[pyo3(text_signature = "($self)")]
    fn release(&self, py: Python<'_>) -> PyResult<()> {
        self.role.release(py, &self.core, 1)
    }

    /// Locks if it is free and nobody waits; never waits.
    #[pyo3(text_signature = "($self)")]
    fn try_acquire(&self) -> bool {
        try_take(&self.core, 1, &self.role)
    }

    /// Blocks the calling thread (GIL released) until the lock is granted;
    /// `False` on timeout.
    #[pyo3(signature = (timeout = None), text_signature = "($self, timeout=None)")]
    fn acquire_blocking(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<bool> {
        let got = blocking_acquire(py, &self.core, 1, timeout_arg(timeout)?)?.is_some();
        if got {
            self.role.taken(1);
        }
        Ok(got)
    }

    /// Whether the lock is held.
    #[pyo3(text_signature = "($self)")]
    fn locked(&self) -> bool {
        self.core.available_permits() == 0
    }

    fn __aenter__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        enter_one(py, &self.core, &self.role)
    }

    #[pyo3(signature = (*_args))]
    fn __aexit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        self.role.release(py, &self.core, 1)?;
        finished(py)
    }

    fn __repr__(&self) -> String {
        format!(
            "<volt_sem.Mutex {}>",
            if self.locked() { "locked" } else { "unlocked" }
        )
    }
}

/// A fair reader-writer lock for async tasks and plain threads: a semaphore of
/// `MAX_PERMITS` permits where a reader takes one and a writer takes all. FIFO
/// both ways: a waiting writer is not overtaken by later readers.
#[pyclass(module = "volt_sem", frozen, weakref)]
pub(crate) struct RwLock {
    core: Arc<Core>,
    read: Role,
    write: Role,
}

#[pymethods]
impl RwLock {
    #[new]
    fn new() -> Self {
        let held = Arc::new(Held::default());
        RwLock {
            core: Arc::new(crate::local_core(MAX_PERMITS)),
            read: Role::Shared(held.clone()),
            write: Role::Exclusive(held, "RwLock is not write-locked", "rw.write()"),
        }
    }

    /// Shared access: `async with rw.read():`, or `with rw.read():` from a thread.
    /// Awaiting it alone (`await rw.read()`) locks until `release_read()`.
    #[pyo3(text_signature = "($self)")]
    fn read(&self) -> Acquire {
        Acquire::new(self.core.clone(), 1, self.read.clone(), true)
    }

    /// Exclusive access: `async with rw.write():`, or `with rw.write():` from a
    /// thread. Awaiting it alone locks until `release_write()`.
    #[pyo3(text_signature = "($self)")]
    fn write(&self) -> Acquire {
        Acquire::new(self.core.clone(), WRITE, self.write.clone(), true)
    }

    /// Ends one shared access taken with `await rw.read()`/`read_blocking()`/
    /// `try_read()`. `RuntimeError` (nothing changes) if no reader holds the lock.
    #[pyo3(text_signature = "($self)")]
    fn release_read(&self, py: Python<'_>) -> PyResult<()> {
        self.read.release(py, &self.core, 1)
    }

    /// Ends the exclusive access taken with `await rw.write()`/`write_blocking()`/
    /// `try_write()`. `RuntimeError` (nothing changes) if no writer holds the lock.
    #[pyo3(text_signature = "($self)")]
    fn release_write(&self, py: Python<'_>) -> PyResult<()> {
        self.write.release(py, &self.core, WRITE)
    }

    /// Shared access if no writer holds or waits; never waits.
    #[pyo3(text_signature = "($self)")]
    fn try_read(&self) -> bool {
        try_take(&self.core, 1, &self.read)
    }

    /// Exclusive access if nobody holds or waits; never waits.
    #[pyo3(text_signature = "($self)")]
    fn try_write(&self) -> bool {
        try_take(&self.core, WRITE, &self.write)
    }

    /// Blocks the calling thread (GIL released) for shared access; `False` on timeout.
    #[pyo3(signature = (timeout = None), text_signature = "($self, timeout=None)")]
    fn read_blocking(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<bool> {
        let got = blocking_acquire(py, &self.core, 1, timeout_arg(timeout)?)?.is_some();
        if got {
            self.read.taken(1);
        }
        Ok(got)
    }

    /// Blocks the calling thread (GIL released) for exclusive access; `False` on timeout.
    #[pyo3(signature = (timeout = None), text_signature = "($self, timeout=None)")]
    fn write_blocking(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<bool> {
        let got = blocking_acquire(py, &self.core, WRITE, timeout_arg(timeout)?)?.is_some();
        if got {
            self.write.taken(WRITE);
        }
        Ok(got)
    }

    /// Whether anyone (reader or writer) holds or waits for the lock.
    #[pyo3(text_signature = "($self)")]
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
