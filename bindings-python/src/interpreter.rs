//! What this thread's interpreter is doing, for every wait path: whether
//! `volt_sem`'s `atexit` hook ran (the interpreter is about to finalize),
//! and which asyncio loop runs on this thread. No other module of the
//! extension is imported here: the wake path and the waits both ask.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::thread;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

/// Set by the `atexit` hook: the interpreter is about to finalize.
static EXITING: AtomicBool = AtomicBool::new(false);

/// The thread that ran the `atexit` hook.
static EXIT_THREAD: OnceLock<thread::ThreadId> = OnceLock::new();

/// `asyncio._get_running_loop`, looked up once.
static GET_RUNNING_LOOP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// `volt_sem`'s `atexit` hook (registered by `volt_sem/__init__.py`).
#[pyfunction]
pub(crate) fn _interpreter_exiting() {
    let _ = EXIT_THREAD.set(thread::current().id());
    EXITING.store(true, Ordering::SeqCst);
}

/// Whether the `atexit` hook ran: the interpreter is finalizing, when
/// warnings from destructors are only noise.
pub(crate) fn interpreter_finalizing() -> bool {
    EXITING.load(Ordering::Relaxed)
}

/// Whether the `atexit` hook ran on another thread than this one: this thread
/// may be ended by finalization when it takes the GIL back.
pub(crate) fn interpreter_exiting() -> bool {
    EXITING.load(Ordering::SeqCst) && EXIT_THREAD.get() != Some(&thread::current().id())
}

/// The running asyncio loop of this thread, or `None` (C-level, no exception).
pub(crate) fn running_loop(py: Python<'_>) -> PyResult<Option<Bound<'_, PyAny>>> {
    let l = GET_RUNNING_LOOP
        .import(py, "asyncio", "_get_running_loop")?
        .call0()?;
    Ok(if l.is_none() { None } else { Some(l) })
}
