//! `Semaphore.inspect()`: who holds the permits and who waits, as frozen
//! Python objects (`Inspection`, `Holder`, `QueuedWaiter`), on every backend.
//! Durations are float seconds (`None` where a backend has none).

use pyo3::prelude::*;
use volt_sem_backend::inspect;

use crate::detached;
use crate::errors::backend_error;
use crate::Core;

/// What ``Semaphore.inspect()`` saw: one snapshot, in which
/// ``available + sum(h.permits for h in holders) + sum(w.granted for w in
/// waiters) == total``.
#[pyclass(module = "volt_sem", frozen, get_all)]
pub(crate) struct Inspection {
    total: usize,
    available: usize,
    closed: bool,
    holders: Vec<Py<Holder>>,
    waiters: Vec<Py<QueuedWaiter>>,
}

/// A process (or Redis session) holding permits.
#[pyclass(module = "volt_sem", frozen, get_all)]
pub(crate) struct Holder {
    label: String,
    host: String,
    pid: u32,
    permits: usize,
    held_for: Option<f64>,
    lease_remaining: Option<f64>,
    token: Option<u64>,
}

/// A queued request.
#[pyclass(module = "volt_sem", frozen, get_all)]
pub(crate) struct QueuedWaiter {
    label: String,
    host: String,
    pid: u32,
    permits: usize,
    granted: usize,
    waiting_for: f64,
    position: usize,
}

#[pymethods]
impl Inspection {
    fn __repr__(&self) -> String {
        format!(
            "Inspection(total={}, available={}, closed={}, holders={}, waiters={})",
            self.total,
            self.available,
            if self.closed { "True" } else { "False" },
            self.holders.len(),
            self.waiters.len()
        )
    }
}

#[pymethods]
impl Holder {
    fn __repr__(&self) -> String {
        format!(
            "Holder(label={:?}, pid={}, permits={}, held_for={})",
            self.label,
            self.pid,
            self.permits,
            seconds(self.held_for)
        )
    }
}

#[pymethods]
impl QueuedWaiter {
    fn __repr__(&self) -> String {
        format!(
            "QueuedWaiter(position={}, label={:?}, pid={}, permits={}, granted={}, waiting_for={:.3})",
            self.position, self.label, self.pid, self.permits, self.granted, self.waiting_for
        )
    }
}

fn seconds(s: Option<f64>) -> String {
    s.map_or_else(|| "None".into(), |s| format!("{s:.3}"))
}

/// Reads the inspection (a Redis one waits for its round trip with the GIL
/// released, as `census` does; a named one's reclaim of dead processes is
/// short, and runs with it held) and builds its Python objects.
pub(crate) fn inspect(py: Python<'_>, core: &Core) -> PyResult<Inspection> {
    let i = detached::call(py, core, |c| c.inspect()).map_err(backend_error)?;
    let holders = i
        .holders
        .iter()
        .map(|h| {
            Py::new(
                py,
                Holder {
                    label: h.label.clone(),
                    host: h.host.clone(),
                    pid: h.pid,
                    permits: h.permits,
                    held_for: h.held_for.map(|d| d.as_secs_f64()),
                    lease_remaining: h.lease_remaining.map(|d| d.as_secs_f64()),
                    token: h.token,
                },
            )
        })
        .collect::<PyResult<_>>()?;
    let waiters = i
        .waiters
        .iter()
        .map(|w: &inspect::QueuedWaiter| {
            Py::new(
                py,
                QueuedWaiter {
                    label: w.label.clone(),
                    host: w.host.clone(),
                    pid: w.pid,
                    permits: w.permits,
                    granted: w.granted,
                    waiting_for: w.waiting_for.as_secs_f64(),
                    position: w.position,
                },
            )
        })
        .collect::<PyResult<_>>()?;
    Ok(Inspection {
        total: i.total,
        available: i.available,
        closed: i.closed,
        holders,
        waiters,
    })
}
