//! The native half of a wait in a trio task ([`TrioWaiter`]), driven by
//! `volt_sem._glue`'s coroutine (see `awaitable.rs`, "trio"): it queues a
//! slot whose target is the trio task, and trio's abort callback cancels it.

use std::pin::Pin;
use std::sync::Arc;

use pyo3::exceptions::PyRuntimeError;
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::PyTraverseError;
use volt_sem_backend::{Error, Finish, RawAcquire, WaiterState};

use crate::errors::{acquire_error, closed_error};
use crate::redis::give_back;
use crate::wake::{finish_owned, Channel, Owned, Slot};
use crate::Core;

/// The native half of a wait in a trio task (internal, driven by
/// `volt_sem._glue`): queues a slot whose target is the trio task.
#[pyclass(module = "volt_sem._volt_sem")]
pub(crate) struct TrioWaiter {
    core: Arc<Core>,
    n: usize,
    slot: Option<Pin<Arc<Slot>>>,
    /// The grant's token and session, once granted.
    got: Option<crate::wake::Got>,
}

impl TrioWaiter {
    /// A wait for `n` permits of `core`, not queued yet (`enqueue`).
    pub(crate) fn new(core: Arc<Core>, n: usize) -> Self {
        TrioWaiter {
            core,
            n,
            slot: None,
            got: None,
        }
    }

    /// The grant's token and session, once granted.
    pub(crate) fn got(&self) -> Option<crate::wake::Got> {
        self.got
    }

    /// Whether the core still has the wait queued (the `waiting` property of
    /// the acquire that made it).
    pub(crate) fn is_waiting(&self) -> bool {
        self.slot
            .as_ref()
            .is_some_and(|s| s.waiter().state() == WaiterState::Waiting)
    }
}

#[pymethods]
impl TrioWaiter {
    /// The fast path: `True` if the permits were free and nobody waited.
    /// Never for Redis (the request itself is the first round trip).
    fn try_take(&self) -> PyResult<bool> {
        if self.core.as_redis().is_some() {
            return Ok(false);
        }
        match self.core.try_acquire(self.n) {
            Ok(_) => Ok(true),
            Err(Error::NoPermits) => Ok(false),
            Err(e) => Err(acquire_error(&self.core, e)),
        }
    }

    /// Queues the wait on `channel` for `task`; `True` if granted at once.
    fn enqueue(&mut self, channel: &Bound<'_, Channel>, task: Py<PyAny>) -> PyResult<bool> {
        if self.slot.is_some() {
            return Err(PyRuntimeError::new_err("already queued"));
        }
        // Permits stranded on a closed asyncio loop's channel come back first.
        crate::wake::reap_closed_loops(channel.py());
        let slot = Slot::new(self.core.clone(), self.n, task, channel.get().chan.clone());
        match slot.queue() {
            Ok(RawAcquire::Ready) => {
                self.got = Some((slot.waiter().token(), slot.waiter().session()));
                Ok(true)
            }
            Ok(RawAcquire::Pending) => {
                self.slot = Some(slot);
                Ok(false)
            }
            Err(e) => Err(acquire_error(&self.core, e)),
        }
    }

    /// trio's abort callback: `True` if the wait was cancelled (any partial
    /// grant handed on, an undelivered full grant released), `False` if the task
    /// was already rescheduled (the acquire then completes).
    fn abort(&mut self, py: Python<'_>) -> bool {
        let Some(slot) = &self.slot else {
            return true;
        };
        if slot.delivered() {
            return false;
        }
        let slot = self.slot.take().expect("checked above");
        if let Owned::Finished(Finish::Granted) = finish_owned(py, &slot) {
            give_back(py, &slot);
        }
        true
    }

    /// Ends the wait whatever its state (an exception other than trio's own
    /// cancellation reached the waiting coroutine): a grant is released.
    pub(crate) fn cancel(&mut self, py: Python<'_>) {
        if let Some(slot) = self.slot.take() {
            if let Owned::Finished(Finish::Granted) = finish_owned(py, &slot) {
                give_back(py, &slot);
            }
        }
    }

    /// After the task was rescheduled: takes the outcome (raises `ClosedError`
    /// if the semaphore was closed).
    fn collect(&mut self, py: Python<'_>) -> PyResult<()> {
        let Some(slot) = self.slot.take() else {
            return Err(PyRuntimeError::new_err("not queued"));
        };
        match finish_owned(py, &slot) {
            Owned::Finished(Finish::Granted) => {
                self.got = Some((slot.waiter().token(), slot.waiter().session()));
                Ok(())
            }
            Owned::Finished(Finish::Closed) => Err(closed_error()),
            Owned::Finished(Finish::Failed(e)) => Err(acquire_error(&self.core, e)),
            Owned::HandedOn => Err(PyRuntimeError::new_err(
                "the grant arrived after the trio run ended and was handed on",
            )),
            Owned::Finished(_) => Err(PyRuntimeError::new_err(
                "acquire finished without an outcome",
            )),
        }
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        if let Some(slot) = &self.slot {
            visit.call(&slot.target)?;
        }
        Ok(())
    }

    fn __clear__(&mut self) {
        Python::attach(|py| {
            let _ = self.abort(py);
        });
    }
}

impl Drop for TrioWaiter {
    fn drop(&mut self) {
        if self.slot.is_some() {
            Python::attach(|py| {
                if let Some(slot) = self.slot.take() {
                    if let Owned::Finished(Finish::Granted) = finish_owned(py, &slot) {
                        give_back(py, &slot);
                    }
                }
            });
        }
    }
}
