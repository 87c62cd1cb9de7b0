//! Sessions of the shared handles: `disconnect()`, and the list of live
//! handles that `disconnect_on_signals()` ends.
//!
//! A handle of a named semaphore (`Semaphore.open`) or of a Redis one
//! (`Semaphore.connect`) is a *session* on a limit other processes share.
//! Ending the session (`disconnect()`, the end of a `with` block, a signal
//! handled by `disconnect_on_signals`) gives back what it holds and leaves
//! the limit open for everyone else; `close_for_everyone()` closes the limit
//! itself, so a shared handle's `close()` (the habit for "I am done") is
//! refused with a `TypeError` that names both.
//!
//! The seam's `Semaphore::disconnect` ends the handle, with the same rule
//! for both backends and for every language: its queued requests fail (an
//! asyncio task's, a trio task's, a blocking thread's: their wake callbacks
//! run, their outcome is `Error::Disconnected`, raised as
//! `DisconnectedError`), what it holds goes back at once (named: the
//! handle counts it, `Semaphore::counting_held`; Redis: its session's, in
//! Redis), and every later call of the handle is refused. The cell then
//! drops its core, so every later call raises `DisconnectedError` first.
//! Another handle of the same name, in this process or another, goes on.

use std::borrow::Cow;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

use crate::errors::disconnected_error;
use crate::Core;

/// The core of a `Semaphore`: fixed for a local one, a session (ended by
/// `disconnect()`) for a named or Redis one.
pub(crate) enum CoreCell {
    Fixed(Arc<Core>),
    Session(Arc<SessionCell>),
}

/// A shared (named or Redis) handle's session: its core (`None` once
/// disconnected).
pub(crate) struct SessionCell {
    core: Mutex<Option<Arc<Core>>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl CoreCell {
    /// A shared (named or Redis) semaphore's cell, listed for
    /// `disconnect_on_signals`.
    pub(crate) fn session(core: Core) -> Self {
        let cell = Arc::new(SessionCell {
            core: Mutex::new(Some(Arc::new(core))),
        });
        register(Arc::downgrade(&cell));
        CoreCell::Session(cell)
    }

    /// The core; `DisconnectedError` once the session ended.
    #[inline]
    pub(crate) fn get(&self) -> PyResult<Cow<'_, Arc<Core>>> {
        match self {
            CoreCell::Fixed(core) => Ok(Cow::Borrowed(core)),
            CoreCell::Session(cell) => cell.get().map(Cow::Owned),
        }
    }

    /// Whether this is a shared (named or Redis) semaphore's cell.
    pub(crate) fn is_shared(&self) -> bool {
        matches!(self, CoreCell::Session(_))
    }

    /// Ends a shared semaphore's session (the seam's `disconnect`: its
    /// queued acquires fail, what it holds goes back; a Redis one in Redis,
    /// one round trip, or at its lease's expiry if Redis is out of reach)
    /// and drops this handle's reference to the core, with the GIL released
    /// (a named handle's last one joins its doorbell thread). Idempotent; a
    /// no-op for a local semaphore.
    pub(crate) fn end(&self, py: Python<'_>) {
        if let CoreCell::Session(cell) = self {
            cell.end(py);
        }
    }
}

impl SessionCell {
    /// The session's core, or `DisconnectedError` once it ended (out of
    /// line: [`CoreCell::get`] of a local semaphore stays a field read).
    #[inline(never)]
    fn get(&self) -> PyResult<Arc<Core>> {
        lock(&self.core).clone().ok_or_else(disconnected_error)
    }

    fn end(&self, py: Python<'_>) -> bool {
        let core = lock(&self.core).take();
        if let Some(core) = &core {
            crate::detached::call(py, core, |core| {
                // Named: `Forked` in a fork() child (the handle is the
                // parent's: nothing changed), as every call there.
                let _ = core.disconnect();
            });
        }
        let was_live = core.is_some();
        py.detach(move || drop(core));
        was_live
    }
}

/// Every shared handle of the process not yet collected (weak references:
/// the list never keeps a handle alive), for `disconnect_on_signals`.
static LIVE: Mutex<Vec<Weak<SessionCell>>> = Mutex::new(Vec::new());

fn register(live: Weak<SessionCell>) {
    let mut list = lock(&LIVE);
    list.retain(|l| l.strong_count() > 0);
    list.push(live);
}

/// The `TypeError` of `close()` on a shared handle.
pub(crate) fn shared_close_error(redis: bool) -> PyErr {
    let (everyone, reopen) = if redis {
        (
            "every client on every host",
            "Semaphore.delete_redis(url, name)",
        )
    } else {
        ("every process of this machine", "Semaphore.unlink(name)")
    };
    PyTypeError::new_err(format!(
        "close() is not available on a shared semaphore: use disconnect() to end this handle's \
         session (what it holds goes back; the limit stays open for everyone else), or \
         close_for_everyone() to close the limit for {everyone} (a closed one is made anew \
         after {reopen})"
    ))
}

/// The `TypeError` of `with sem:` on a local semaphore, or nested.
pub(crate) fn with_error(why: &str) -> PyErr {
    PyTypeError::new_err(format!(
        "{why}: `with sem:` on a shared handle (Semaphore.open, Semaphore.connect) ends its \
         session on exit; it does not acquire. Acquire with `with sem.acquire(n):` from a \
         plain thread, or `async with sem.acquire(n):` in a task"
    ))
}

/// `volt_sem._disconnect_all()`: ends the session of every shared handle of
/// this process (`disconnect_on_signals`' handler); returns how many were
/// live. Redis sessions are ended one round trip each, GIL released.
#[pyfunction]
pub(crate) fn _disconnect_all(py: Python<'_>) -> usize {
    let list: Vec<Weak<SessionCell>> = std::mem::take(&mut *lock(&LIVE));
    list.iter()
        .filter_map(Weak::upgrade)
        .filter(|cell| cell.end(py))
        .count()
}
