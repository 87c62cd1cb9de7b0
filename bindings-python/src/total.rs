//! Changing a shared limit online: `set_total` and `reopen` of a named or
//! Redis semaphore (a local one refuses both with `TypeError`, as it refuses
//! `disconnect()`: it has no fixed total, and its close is final).

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use volt_sem_backend::{Error, Kind};

use crate::errors::{backend_error, count};
use crate::wake::after_wakes;
use crate::{detached, Core};

/// The `TypeError` of `what` on a local semaphore.
pub(crate) fn local_refusal(what: &str) -> PyErr {
    PyTypeError::new_err(format!(
        "{what} is for named and Redis semaphores (Semaphore.open, Semaphore.connect); a \
         local Semaphore has no total shared with anyone"
    ))
}

/// Refuses a local core; `Ok` for a named or Redis one.
pub(crate) fn shared_only(core: &Core, what: &str) -> PyResult<()> {
    match core.kind() {
        Kind::Local => Err(local_refusal(what)),
        _ => Ok(()),
    }
}

/// `Semaphore.set_total(n)`: Redis: one round trip with the GIL released.
/// The growth may complete waiters of this process at once (on this
/// thread, for a named one: hand-offs as a release makes them).
pub(crate) fn set_total(py: Python<'_>, core: &Core, n: &Bound<'_, PyAny>) -> PyResult<()> {
    shared_only(core, "set_total()")?;
    let n = count(n, "n")?;
    let r = detached::call(py, core, |core| core.set_total(n));
    let woke = after_wakes(py);
    let r = r.map_err(|e| match e {
        Error::InvalidPermits => {
            let max = match core.kind() {
                Kind::Redis => volt_sem_backend::redis::MAX_PERMITS,
                _ => volt_sem_backend::shm::MAX_PERMITS,
            };
            PyValueError::new_err(format!("n must be between 1 and {max}"))
        }
        e => backend_error(e),
    });
    r.and(woke)
}

/// `Semaphore.reopen()`: Redis: one round trip with the GIL released.
pub(crate) fn reopen(py: Python<'_>, core: &Core) -> PyResult<()> {
    shared_only(core, "reopen()")?;
    detached::call(py, core, |core| core.reopen()).map_err(backend_error)
}
