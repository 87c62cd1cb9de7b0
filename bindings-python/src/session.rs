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
//! * Redis: the backend's `RedisSemaphore::disconnect` ends the handle's own
//!   session in Redis at once (its queued requests fail, what it held goes
//!   to the next waiters) and refuses every later request; the binding maps
//!   those refusals to `DisconnectedError` (`errors::acquire_error`). The
//!   handle's cell then drops its core, as for a named one, so every later
//!   call raises `DisconnectedError` first.
//! * Named: the permits are held per process, by the process's attachment
//!   to the segment, which every handle of the process on that name and
//!   their pending acquires share. `disconnect()` ([`CoreCell::end`]) fails
//!   the handle's own queued acquires ([`SessionWaits`]: an asyncio task's
//!   Future gets `DisconnectedError`, which its acquire's `throw` turns into
//!   a cancel; a trio task's wait is given up on its run's thread and the
//!   task rescheduled with the error; a blocking wait sees the end between
//!   its signal slices) and
//!   drops the handle's reference; when it was the last one, the process
//!   detaches, and whatever it held goes back at once, as at its exit.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyWeakrefReference;

use crate::errors::disconnected_error;
use crate::trio::TrioWaiter;
use crate::Core;

/// The core of a `Semaphore`: fixed for a local one, a session (ended by
/// `disconnect()`) for a named or Redis one.
pub(crate) enum CoreCell {
    Fixed(Arc<Core>),
    Session(Arc<SessionCell>),
}

/// A shared (named or Redis) handle's session: its core (`None` once
/// disconnected) and its queued acquires.
pub(crate) struct SessionCell {
    core: Mutex<Option<Arc<Core>>>,
    waits: Arc<SessionWaits>,
}

/// The acquires of a named handle that may be queued, so that `disconnect()`
/// can fail them: the Futures of asyncio tasks' waits (pruned when done or
/// collected), trio tasks' waits (with their run's token; pruned when no
/// longer queued), and the flag blocking waits check between their signal
/// slices.
///
/// A Future is listed by a weak reference when its type allows one
/// (asyncio's and uvloop's do): a strong one, which the GC cannot see, kept
/// the task of a loop closed or dropped with the wait pending (the Future's
/// callback holds the task, the task the acquire) from ever being
/// collected, so its request stayed queued in the segment for good, took
/// the next grant, and kept its loop and the loop's sockets open.
///
/// The lock is never held while Python code may run (a Future's `done()`,
/// the drop of a Future): a thread holding the GIL may wait for it.
#[derive(Default)]
pub(crate) struct SessionWaits {
    ended: AtomicBool,
    futures: Mutex<Vec<Listed>>,
    trio: Mutex<Vec<TrioWait>>,
}

/// A listed Future: a weak reference to it, or the Future itself when its
/// type refuses weak references (a loop's own Future class).
enum Listed {
    Weak(Py<PyWeakrefReference>),
    Strong(Py<PyAny>),
}

impl Listed {
    fn new(fut: &Bound<'_, PyAny>) -> Listed {
        match PyWeakrefReference::new(fut) {
            Ok(weak) => Listed::Weak(weak.unbind()),
            Err(_) => Listed::Strong(fut.clone().unbind()),
        }
    }

    /// The Future, unless it was collected (its acquire then gave the wait
    /// up when it was collected too).
    fn get<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyAny>> {
        match self {
            Listed::Weak(weak) => weak.bind(py).upgrade(),
            Listed::Strong(fut) => Some(fut.bind(py).clone()),
        }
    }
}

/// A trio task's queued wait: the run's token, the task, its waiter.
struct TrioWait {
    token: Py<PyAny>,
    task: Py<PyAny>,
    waiter: Py<TrioWaiter>,
}

impl SessionWaits {
    /// Whether the session ended (a wait must give up with
    /// `DisconnectedError`).
    pub(crate) fn ended(&self) -> bool {
        self.ended.load(Ordering::SeqCst)
    }

    /// Lists an asyncio wait's Future; `false` if the session ended already
    /// (the caller gives its wait up).
    pub(crate) fn list(&self, py: Python<'_>, fut: &Bound<'_, PyAny>) -> bool {
        let listed = std::mem::take(&mut *lock(&self.futures));
        let mut keep: Vec<Listed> = listed
            .into_iter()
            .filter(|f| {
                f.get(py).is_some_and(|f| {
                    !f.call_method0(pyo3::intern!(py, "done"))
                        .and_then(|d| d.is_truthy())
                        .unwrap_or(true)
                })
            })
            .collect();
        let new = Listed::new(fut);
        {
            let mut g = lock(&self.futures);
            // `end` sets the flag before it takes the list: seen false here,
            // under the lock, its take comes later and finds these.
            if !self.ended() {
                g.extend(keep.drain(..));
                g.push(new);
                return true;
            }
        }
        // Ended meanwhile: the waits taken out above are failed here.
        for f in keep.iter().filter_map(|f| f.get(py)) {
            let _ = fail_future(py, &f);
        }
        false
    }

    /// Lists a trio task's queued wait, as [`list`](Self::list) a Future.
    pub(crate) fn list_trio(
        &self,
        py: Python<'_>,
        token: Py<PyAny>,
        task: Py<PyAny>,
        waiter: Py<TrioWaiter>,
    ) -> bool {
        let listed = std::mem::take(&mut *lock(&self.trio));
        let mut keep: Vec<TrioWait> = listed
            .into_iter()
            .filter(|w| w.waiter.try_borrow(py).map_or(true, |w| w.is_queued()))
            .collect();
        {
            let mut g = lock(&self.trio);
            if !self.ended() {
                g.extend(keep.drain(..));
                g.push(TrioWait {
                    token,
                    task,
                    waiter,
                });
                return true;
            }
        }
        for w in keep {
            let _ = fail_trio(py, w);
        }
        false
    }

    /// Ends the session: every listed Future not done yet gets
    /// `DisconnectedError`, set on its own loop's thread; every listed trio
    /// wait still queued is given up on its run's thread and its task
    /// rescheduled with `DisconnectedError`.
    fn end(&self, py: Python<'_>) {
        self.ended.store(true, Ordering::SeqCst);
        let futures = std::mem::take(&mut *lock(&self.futures));
        for fut in futures.iter().filter_map(|f| f.get(py)) {
            let _ = fail_future(py, &fut);
        }
        let trio = std::mem::take(&mut *lock(&self.trio));
        for w in trio {
            let _ = fail_trio(py, w);
        }
    }
}

static FAIL_FUTURE: pyo3::sync::PyOnceLock<Py<PyAny>> = pyo3::sync::PyOnceLock::new();
static FAIL_TRIO: pyo3::sync::PyOnceLock<Py<PyAny>> = pyo3::sync::PyOnceLock::new();

/// `_glue.fail_trio_wait(token, task, waiter, DisconnectedError(...))`: on the
/// run's thread, gives the wait up unless the task was rescheduled already.
fn fail_trio(py: Python<'_>, w: TrioWait) -> PyResult<()> {
    let f = FAIL_TRIO.import(py, "volt_sem._glue", "fail_trio_wait")?;
    let exc = disconnected_error().into_value(py);
    f.call1((w.token, w.task, w.waiter, exc))?;
    Ok(())
}

/// `loop.call_soon_threadsafe(_glue.fail_future, fut, DisconnectedError(...))`
/// on `fut`'s loop (a closed loop's Future is left alone: its wait is handed
/// on by the wake path).
fn fail_future(py: Python<'_>, fut: &Bound<'_, PyAny>) -> PyResult<()> {
    let f = FAIL_FUTURE.import(py, "volt_sem._glue", "fail_future")?;
    let exc = disconnected_error().into_value(py);
    fut.call_method0(pyo3::intern!(py, "get_loop"))?
        .call_method1(pyo3::intern!(py, "call_soon_threadsafe"), (f, fut, exc))?;
    Ok(())
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
            waits: Arc::default(),
        });
        register(Arc::downgrade(&cell));
        CoreCell::Session(cell)
    }

    /// A named handle's waits (`None` for a local semaphore).
    pub(crate) fn waits(&self) -> Option<Arc<SessionWaits>> {
        match self {
            CoreCell::Fixed(_) => None,
            CoreCell::Session(cell) => Some(cell.waits.clone()),
        }
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

    /// Ends a shared semaphore's session: a Redis one in Redis first (one
    /// round trip, `redis::call`; if Redis is out of reach the session ends
    /// at its lease's expiry); fails its queued acquires and drops this
    /// handle's reference to the core, with the GIL released (a named
    /// handle's last one joins its doorbell thread). Idempotent; a no-op for
    /// a local semaphore.
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
                // Redis: the seam's disconnect (the backend's own, which ends
                // the session in Redis). Named: dropping this reference below
                // (the process's permits go back with its last handle).
                if core.as_redis().is_some() {
                    let _ = core.disconnect();
                }
            });
        }
        self.waits.end(py);
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
