//! `Semaphore.stats()`: this handle's metrics as frozen Python objects
//! (`Stats`, `WaitHistogram`), on every backend. Durations are float seconds,
//! as `inspect()`'s are.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use pyo3::IntoPyObjectExt;
use volt_sem_backend::local::stats;

use crate::Core;

/// This handle's metrics (``Semaphore.stats()``): counters since the handle
/// was made, gauges read at the call, and the wait-time histogram of its
/// grants.
#[pyclass(module = "volt_sem", frozen)]
pub(crate) struct Stats {
    // The core's counters and gauges; its histogram is `wait`'s.
    s: stats::Stats,
    wait: Py<WaitHistogram>,
}

/// How long this handle's granted requests waited, in fixed logarithmic
/// buckets (1 µs, 2 µs, 4 µs, ... 2**26 µs, then unbounded), with the exact
/// sum and maximum. Seconds, as floats.
#[pyclass(module = "volt_sem", frozen)]
pub(crate) struct WaitHistogram {
    // The core's histogram, kept whole for `quantile(q)`.
    h: stats::WaitHistogram,
}

/// A getter per counter and gauge of the core's `Stats` (all its fields but
/// `wait`), and the `repr` that lists them: the fields named once.
macro_rules! stats_getters {
    ($($field:ident)*) => {
        #[pymethods]
        impl Stats {
            $(
                #[getter]
                fn $field<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
                    self.s.$field.into_bound_py_any(py)
                }
            )*

            #[getter]
            fn wait(&self, py: Python<'_>) -> Py<WaitHistogram> {
                self.wait.clone_ref(py)
            }

            fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
                let mut r = String::from("Stats(");
                $(
                    let v = self.$field(py)?.repr()?;
                    r += &format!("{}={v}, ", stringify!($field));
                )*
                Ok(format!("{r}wait={})", self.wait.get().repr()))
            }
        }
    };
}

stats_getters! {
    grants permits_granted timeouts cancels lease_losses reclaims_seen available held queued recording
}

#[pymethods]
impl WaitHistogram {
    /// How many waits were recorded (every grant, those taken at once too).
    #[getter]
    fn count(&self) -> u64 {
        self.h.count()
    }

    /// The total time the recorded grants waited, in seconds.
    #[getter]
    fn sum(&self) -> f64 {
        self.h.sum().as_secs_f64()
    }

    /// The longest wait, in seconds.
    #[getter]
    fn max(&self) -> f64 {
        self.h.max().as_secs_f64()
    }

    /// The median wait (``quantile(0.5)``), in seconds.
    #[getter]
    fn p50(&self) -> f64 {
        self.h.p50().as_secs_f64()
    }

    /// The 99th percentile wait (``quantile(0.99)``), in seconds.
    #[getter]
    fn p99(&self) -> f64 {
        self.h.p99().as_secs_f64()
    }

    /// The ``q`` quantile (``0.0 <= q <= 1.0``) in seconds: the upper bound
    /// of the bucket it falls in, capped at ``max`` (an over-estimate by at
    /// most a factor of 2); 0.0 when nothing was recorded. ``ValueError``
    /// for a ``q`` outside ``[0, 1]`` (or NaN).
    #[pyo3(text_signature = "($self, q)")]
    fn quantile(&self, q: f64) -> PyResult<f64> {
        if !(0.0..=1.0).contains(&q) {
            return Err(PyValueError::new_err(format!(
                "quantile must be between 0 and 1, got {q}"
            )));
        }
        Ok(self.h.quantile(q).as_secs_f64())
    }

    /// ``(upper_bound_seconds, count)`` per bucket, the last bound
    /// ``math.inf``; counts are per bucket, not cumulative.
    #[getter]
    fn buckets<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let buckets: Vec<(f64, u64)> = self
            .h
            .buckets()
            .map(|(bound, count)| (bound.map_or(f64::INFINITY, |b| b.as_secs_f64()), count))
            .collect();
        PyTuple::new(py, buckets)
    }

    fn __repr__(&self) -> String {
        self.repr()
    }
}

impl WaitHistogram {
    fn repr(&self) -> String {
        format!(
            "WaitHistogram(count={}, sum={:.6}, max={:.6}, p50={:.6}, p99={:.6})",
            self.h.count(),
            self.h.sum().as_secs_f64(),
            self.h.max().as_secs_f64(),
            self.h.p50().as_secs_f64(),
            self.h.p99().as_secs_f64()
        )
    }
}

/// Reads the handle's stats (never blocks, never does I/O: no need to
/// release the GIL) and builds their Python objects.
pub(crate) fn stats(py: Python<'_>, core: &Core) -> PyResult<Stats> {
    let mut s = core.stats();
    let wait = Py::new(
        py,
        WaitHistogram {
            h: std::mem::take(&mut s.wait),
        },
    )?;
    Ok(Stats { s, wait })
}
