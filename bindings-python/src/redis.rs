//! `Semaphore.connect`: the semaphore stored in Redis, shared by every client
//! on every host ([`RedisSemaphore`]), and its awaitables.
//!
//! # A class of its own
//!
//! `Semaphore.connect` returns a `RedisSemaphore`, not a `Semaphore`: its
//! `await sem.acquire(n)` evaluates to the grant's fencing token (an `int`
//! above 0) where the local one gives `True` (typed `Literal[True]`, so that
//! `asyncio.Semaphore` code type-checks unchanged), its acquires can fail in
//! ways a local one cannot (lease loss, connection), and it has methods of
//! its own (`lease_lost`, `census`, the `*_async` variants). One class
//! with a union return type would make every local caller narrow a type it
//! can never see; two classes keep both exact under mypy --strict and
//! pyright. The method names and meanings are the same.
//!
//! # No round trip on the event loop's thread
//!
//! Every Redis request is a network round trip (bounded by the command
//! timeout). The awaitables never make one on the loop's thread: `await
//! sem.acquire(n)`, the exit of `async with`, `release_async`,
//! `close_for_everyone_async`, `disconnect_async`, `census_async` and
//! `connect_async` queue their round trip
//! to the handle's worker thread and wait on a Future of their loop, woken
//! through the native wake path (`offloop` module). The plain methods
//! (`try_acquire`, `acquire_blocking`, `release`, `close_for_everyone`,
//! `disconnect`, `available_permits`, `locked`, `census`,
//! `Semaphore.connect`) block the
//! calling thread with the GIL released for one round trip, each bounded by
//! the command timeout (connect: the connect timeout): meant for plain
//! threads. On the main thread their round trip too runs on the worker
//! (`Handle::call`; a connect on a thread of its own), so that a signal handled by Python
//! (Ctrl-C) cannot interrupt a socket call of the calling thread: the client
//! library reports an interrupted call as a failed connection, and an
//! uncertain outcome gives the session up. Properties read local state only (`closed`, `held_permits`,
//! `total_permits`, `name`, `prefix`, `is_lease_lost()`).
//!
//! # Ending the session
//!
//! A handle is one Redis session: `disconnect` (and the `with` forms,
//! `session` module) ends it, `close` is refused. After the end, every
//! method raises `DisconnectedError` first (`check_live`).
//!
//! # Tokens and sessions
//!
//! Permits are held by count per handle, like a shared semaphore's per
//! process. Each grant belongs to the handle's current Redis session; the
//! handle remembers the session of its latest grant, which `lease_lost()`
//! and `is_lease_lost()` watch (the seam's `lease_watch`).
//!
//! # trio
//!
//! In a trio task, `__await__` returns the iterator of `_glue`'s trio driver
//! instead (plain Python frames, as for the local semaphore): the slot's
//! target is the trio task, the run's wake pump reschedules it when the
//! worker (or the agent) delivers the slot, and trio's abort callback gives
//! the wait up ([`abandon`]: the drain skips it, the worker's cancel job
//! finishes it) unless the task was already rescheduled.

use std::ffi::c_void;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use pyo3::exceptions::{PyRuntimeError, PyStopIteration, PyValueError};
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple};
use pyo3::PyTraverseError;
use volt_sem_backend::{ConnectOptions, Error, Finish, LeaseWatch, RawAcquire, Waiter};

use crate::awaitable::{new_future, ready, running_loop, yield_future};
use crate::blocking::{park, wake_parked, Parked};
use crate::coroutine::coroutine_pymethods;
use crate::errors::{acquire_error, backend_error, closed_error, count, timeout_arg, Permits};
use crate::offloop::{spawn_connect, Done, Job, Worker};
use crate::session::{check_live, shared_close_error};
use crate::wake::{abandon, asyncio_chan, claim_owner, finish_off, Chan, Channel, Slot};
use crate::{local_core, Core};

/// What the Python object and its awaitables share.
pub(crate) struct Handle {
    core: Arc<Core>,
    worker: Arc<Worker>,
    /// The pending `lease_lost()` awaitables.
    watchers: Arc<Mutex<Watchers>>,
    /// The session of the latest grant (0: none yet).
    last_session: AtomicU64,
    /// The grants not yet released, by who was granted them (see
    /// [`owner`]): `(owner, session, permits)`, oldest first. A plain
    /// `release(n)` releases the caller's own latest grants, per grant, so
    /// that a task whose grant was lost with a session and a task granted
    /// in the next one each release their own, in any order.
    grants: Mutex<Vec<(Owner, u64, usize)>>,
    name: String,
    prefix: String,
}

/// Who acquires or releases: the running asyncio task, else the running
/// trio task (their addresses), else the thread.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Owner {
    Task(usize),
    Thread(std::thread::ThreadId),
}

/// The current [`Owner`]. `asyncio.current_task()` (or trio's) raises
/// outside a running loop (or run): then the thread owns the grant.
///
/// Both are Python functions: running their bytecode runs any pending
/// signal handler, so a Ctrl-C that arrived during the previous round trip
/// surfaces here as `KeyboardInterrupt`. That is raised (never taken for
/// "no task"), and before any round trip of the caller: an interrupted
/// owner lookup has acquired or released nothing.
fn owner(py: Python<'_>) -> PyResult<Owner> {
    let task = |module: &str, path: &[&str]| -> PyResult<Option<usize>> {
        let Ok(mut f) = py.import("sys")?.getattr("modules")?.get_item(module) else {
            return Ok(None);
        };
        for attr in path {
            f = match f.getattr(*attr) {
                Ok(f) => f,
                // A module that another thread is still importing is in
                // sys.modules without its functions yet (and a child forked
                // meanwhile keeps it so for good): no loop of it can be
                // running a task, so the thread owns the grant.
                Err(e) if e.is_instance_of::<pyo3::exceptions::PyAttributeError>(py) => {
                    return Ok(None)
                }
                Err(e) => return Err(e),
            };
        }
        match f.call0() {
            Ok(t) => Ok((!t.is_none()).then(|| t.as_ptr() as usize)),
            // "no running event loop" / "must be called from async context"
            Err(e) if e.is_instance_of::<pyo3::exceptions::PyException>(py) => Ok(None),
            Err(e) => Err(e),
        }
    };
    let task = match task("asyncio", &["current_task"])? {
        Some(t) => Some(t),
        None => task("trio", &["lowlevel", "current_task"])?,
    };
    Ok(task.map_or_else(|| Owner::Thread(std::thread::current().id()), Owner::Task))
}

fn lock_grants(h: &Handle) -> std::sync::MutexGuard<'_, Vec<(Owner, u64, usize)>> {
    h.grants.lock().unwrap_or_else(|e| e.into_inner())
}

impl Handle {
    /// A grant of `n` in `session` to `owner` (looked up before the round
    /// trip that granted it, see [`owner`]).
    fn granted(&self, owner: Owner, session: u64, n: usize) {
        if session != 0 {
            self.last_session.store(session, Ordering::Relaxed);
            lock_grants(self).push((owner, session, n));
        }
    }

    /// A grant released by the object that acquired it for `me` (its own
    /// session): forgotten, that owner's record first.
    fn forget_grant(&self, me: Owner, session: u64, n: usize) {
        let mut g = lock_grants(self);
        let i = g
            .iter()
            .rposition(|r| *r == (me, session, n))
            .or_else(|| g.iter().rposition(|r| r.1 == session && r.2 == n));
        if let Some(i) = i {
            g.remove(i);
        }
    }

    /// The session a plain `release(n)` of the current owner releases from:
    /// its latest grants, if they cover `n` and are of one session (taken
    /// off the records); else 0, counted per handle (permits acquired by one
    /// task and released by another, or `n` spanning sessions).
    /// An `Err` is a pending signal's exception, raised before anything was
    /// released.
    fn session_for_release(&self, py: Python<'_>, n: usize) -> PyResult<u64> {
        let me = owner(py)?;
        let mut g = lock_grants(self);
        let (mut need, mut session) = (n, 0);
        for r in g.iter().rev().filter(|r| r.0 == me) {
            if session != 0 && r.1 != session {
                return Ok(0);
            }
            session = r.1;
            need -= need.min(r.2);
            if need == 0 {
                break;
            }
        }
        if need > 0 {
            return Ok(0);
        }
        let mut need = n;
        let mut i = g.len();
        while need > 0 && i > 0 {
            i -= 1;
            if g[i].0 != me {
                continue;
            }
            let take = need.min(g[i].2);
            g[i].2 -= take;
            need -= take;
            if g[i].2 == 0 {
                g.remove(i);
            }
        }
        Ok(session)
    }

    fn redis(&self) -> &volt_sem_backend::redis::RedisSemaphore {
        self.core
            .as_redis()
            .expect("a RedisSemaphore holds a Redis core")
    }

    /// Runs `f` on the worker thread and waits for it, GIL released. So a
    /// plain method's round trip never runs on the calling thread: a signal
    /// (Ctrl-C) delivered to that thread cannot interrupt the socket call
    /// (an interrupted round trip would count as failed and give the session
    /// up); Python sees the signal once the call returned. Queued behind the
    /// handle's pending jobs, each bounded by the command timeout.
    ///
    /// Only from the main thread: Linux delivers a process-directed signal
    /// to the main thread unless it blocks it, so another thread's call runs
    /// inline (GIL released), sparing the two thread hand-offs.
    fn call<T: Send + 'static>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&Core) -> T + Send + 'static,
    ) -> PyResult<T> {
        if !crate::on_main_thread() {
            let core = self.core.clone();
            return Ok(py.detach(move || f(&core)));
        }
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let core = self.core.clone();
        self.worker.submit(Job::Run(Box::new(move || {
            let _ = tx.send(f(&core));
        })))?;
        py.detach(move || rx.recv())
            .map_err(|_| PyRuntimeError::new_err("the Redis worker thread failed"))
    }

    /// `release(n)`: per grant when the caller's own grants cover `n`
    /// (see [`session_for_release`](Self::session_for_release)).
    fn release(&self, py: Python<'_>, n: usize) -> PyResult<()> {
        let session = self.session_for_release(py, n)?;
        self.release_from(py, n, session)
    }

    /// Releases `n` permits of `session` (0: counted per handle).
    fn release_from(&self, py: Python<'_>, n: usize, session: u64) -> PyResult<()> {
        self.call(py, move |core| match core.as_redis() {
            Some(r) if session != 0 => r.release_session(n, session).map_err(Error::from),
            _ => core.release(n),
        })?
        .map_err(redis_error)
    }

    /// A blocking acquire: `Some((token, session))`, or `None` on timeout.
    /// The acquire script and a cancel run on the worker (see [`call`]);
    /// this thread parks with the GIL released and checks for signals
    /// between slices, so Ctrl-C interrupts the wait (after a round trip in
    /// flight), handing any partial grant on.
    fn blocking_acquire(
        &self,
        py: Python<'_>,
        n: usize,
        timeout: Option<Duration>,
    ) -> PyResult<Option<(u64, u64)>> {
        if timeout == Some(Duration::ZERO) {
            return match self.call(py, move |core| core.try_acquire(n))? {
                Ok(g) => Ok(Some((g.token().unwrap_or(0), g.session()))),
                Err(Error::NoPermits) => Ok(None),
                Err(e) => Err(acquire_error(&self.core, e)),
            };
        }
        // A release by a task of this loop could never run: refuse to wait.
        crate::blocking::refuse_on_running_loop(py)?;
        let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
        let parked = Box::pin(Parked {
            waiter: Waiter::new(),
            thread: std::thread::current(),
        });
        let ctx = &*parked as *const Parked as usize;
        let waiter = &parked.waiter as *const Waiter as usize;
        // SAFETY (both closures): `parked` is pinned in its box and outlives
        // both jobs: this thread waits for each to finish, and leaks the box
        // if it cannot know (a job that never reported back).
        let queued = self.call(py, move |core| unsafe {
            core.acquire_raw(
                Pin::new_unchecked(&*(waiter as *const Waiter)),
                n,
                wake_parked,
                ctx as *mut c_void,
            )
        });
        let grant = |w: &Waiter| (w.token().unwrap_or(0), w.session());
        match queued {
            Ok(Ok(RawAcquire::Ready)) => return Ok(Some(grant(&parked.waiter))),
            Ok(Ok(RawAcquire::Pending)) => {}
            Ok(Err(e)) => return Err(acquire_error(&self.core, e)),
            Err(e) => {
                std::mem::forget(parked);
                return Err(e);
            }
        }
        // SAFETY: structural pinning, the waiter never moves out of the box.
        let pinned: Pin<&Waiter> = unsafe { parked.as_ref().map_unchecked(|p| &p.waiter) };
        let interrupted = park(py, pinned, deadline);
        let finish = match self.call(py, move |core| unsafe {
            core.finish_raw(Pin::new_unchecked(&*(waiter as *const Waiter)))
        }) {
            Ok(f) => f,
            Err(e) => {
                std::mem::forget(parked);
                return Err(e);
            }
        };
        let got = grant(&parked.waiter);
        drop(parked);
        match (finish, interrupted) {
            (Finish::Granted, Some(e)) => {
                let _ = self.call(py, move |core| core.release(n));
                Err(e)
            }
            (_, Some(e)) => Err(e),
            (Finish::Granted, None) => Ok(Some(got)),
            (Finish::Closed, None) => Err(closed_error()),
            (Finish::Failed(e), None) => Err(acquire_error(&self.core, e)),
            (Finish::Cancelled { .. } | Finish::Idle, None) => Ok(None),
        }
    }
}

/// A new Future of the running loop and the loop's wake channel, for a
/// request run off the loop; `RuntimeError` outside a running asyncio loop.
fn loop_target<'py>(py: Python<'py>, what: &str) -> PyResult<(Bound<'py, PyAny>, Arc<Chan>)> {
    let Some(event_loop) = running_loop(py)? else {
        return Err(PyRuntimeError::new_err(format!(
            "{what} of a RedisSemaphore must be awaited in an asyncio (or uvloop) or trio \
             task; from a plain thread use the blocking methods"
        )));
    };
    let chan = asyncio_chan(py, &event_loop)?;
    let fut = new_future(py, &event_loop)?;
    Ok((fut, chan))
}

/// A slot whose target is a new Future of the running loop (see [`loop_target`]).
fn loop_slot<'py>(
    py: Python<'py>,
    core: Arc<Core>,
    n: usize,
    what: &str,
) -> PyResult<(Pin<Arc<Slot>>, Bound<'py, PyAny>)> {
    let (fut, chan) = loop_target(py, what)?;
    Ok((Slot::new(core, n, fut.clone().unbind(), chan), fut))
}

static TRIO_REDIS_WAIT: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// What `__await__` of a Redis awaitable returns: itself under asyncio (or
/// outside any loop: its step then raises), or, in a trio task and before it
/// started, the iterator of `_glue`'s trio driver (plain Python frames).
fn trio_or_self(obj: Bound<'_, PyAny>, fresh: bool) -> PyResult<Py<PyAny>> {
    let py = obj.py();
    if !fresh || running_loop(py)?.is_some() {
        return Ok(obj.unbind());
    }
    let it = TRIO_REDIS_WAIT
        .import(py, "volt_sem._glue", "trio_redis_wait")?
        .call1((&obj,))?;
    Ok(if it.is_none() {
        obj.unbind()
    } else {
        it.unbind()
    })
}

fn future_done(py: Python<'_>, slot: &Slot) -> PyResult<bool> {
    slot.target
        .bind(py)
        .call_method0(pyo3::intern!(py, "done"))?
        .is_truthy()
}

/// Seconds to a positive duration (`ValueError` otherwise).
fn seconds(v: f64, what: &str) -> PyResult<Duration> {
    if v.is_nan() || v <= 0.0 {
        return Err(PyValueError::new_err(format!("{what} must be > 0 seconds")));
    }
    Duration::try_from_secs_f64(v)
        .map_err(|_| PyValueError::new_err(format!("{what} is too large")))
}

/// The TLS and replication options of `Semaphore.connect`.
pub(crate) struct Security {
    pub(crate) tls_ca_file: Option<std::path::PathBuf>,
    pub(crate) tls_client_cert: Option<(std::path::PathBuf, std::path::PathBuf)>,
    /// `(replicas, timeout in seconds)`.
    pub(crate) min_replicas_acked: Option<(usize, f64)>,
}

/// The arguments of `Semaphore.connect`, checked.
pub(crate) struct Connect {
    url: String,
    name: String,
    permits: usize,
    options: ConnectOptions,
    prefix: String,
}

impl Connect {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        url: String,
        name: String,
        permits: &Bound<'_, PyAny>,
        lease: f64,
        prefix: String,
        connect_timeout: f64,
        command_timeout: f64,
        cluster: bool,
        security: Security,
    ) -> PyResult<Self> {
        let permits = count(permits, "permits")?;
        let max = volt_sem_backend::redis::MAX_PERMITS;
        if permits == 0 || permits > max {
            return Err(PyValueError::new_err(format!(
                "permits must be between 1 and {max}"
            )));
        }
        let mut options = ConnectOptions::new()
            .lease(seconds(lease, "lease")?)
            .prefix(&prefix)
            .connect_timeout(seconds(connect_timeout, "connect_timeout")?)
            .command_timeout(seconds(command_timeout, "command_timeout")?)
            .cluster(cluster);
        if let Some(ca) = security.tls_ca_file {
            options = options.tls_ca_file(ca);
        }
        if let Some((cert, key)) = security.tls_client_cert {
            options = options.tls_client_cert(cert, key);
        }
        if let Some((replicas, timeout)) = security.min_replicas_acked {
            options = options
                .min_replicas_acked(replicas, seconds(timeout, "min_replicas_acked timeout")?);
        }
        Ok(Connect {
            url,
            name,
            permits,
            options,
            prefix,
        })
    }

    fn run(self) -> Result<Core, Error> {
        Core::connect(&self.url, &self.name, self.permits, self.options)
    }

    fn error(e: Error) -> PyErr {
        match e {
            // The seam's text for these names the shared backend's limits.
            Error::InvalidName => crate::errors::InvalidNameError::new_err(format!(
                "invalid semaphore name (1 to {} bytes, without '{{' or '}}')",
                volt_sem_backend::redis::MAX_NAME_LEN
            )),
            Error::TotalMismatch { existing } => {
                crate::errors::total_mismatch_error(existing, true)
            }
            e => backend_error(e),
        }
    }

    /// Connects on this thread, GIL released (up to the connect timeout).
    pub(crate) fn blocking(self, py: Python<'_>) -> PyResult<RedisSemaphore> {
        let (name, prefix) = (self.name.clone(), self.prefix.clone());
        // On a thread of its own, for the same reason as `Handle::call`.
        let connecting = std::thread::Builder::new()
            .name("volt_sem connect".into())
            .spawn(move || self.run())
            .map_err(|e| PyRuntimeError::new_err(format!("cannot start a connect thread: {e}")))?;
        let core = py
            .detach(|| connecting.join())
            .map_err(|_| PyRuntimeError::new_err("connect panicked"))?
            .map_err(Self::error)?;
        Ok(RedisSemaphore::new(core, name, prefix))
    }

    /// Connects on a thread of its own when awaited; the awaitable gives the
    /// handle.
    pub(crate) fn spawn(self) -> OffLoopCall {
        let meta = (self.name.clone(), self.prefix.clone());
        OffLoopCall {
            req: Some(Request::Connect(Box::new(self))),
            slot: None,
            meta: Some(meta),
            made: None,
            what: "connect_async",
        }
    }
}

/// A semaphore stored in Redis, shared by every client of every host that
/// connects to the same Redis, prefix and name (`Semaphore.connect`).
#[pyclass(module = "volt_sem", frozen, weakref)]
pub(crate) struct RedisSemaphore {
    h: Arc<Handle>,
    /// Inside `with sem:`: a nested `with sem:` is refused (see `session`).
    entered: std::sync::atomic::AtomicBool,
}

impl RedisSemaphore {
    fn new(core: Core, name: String, prefix: String) -> Self {
        let core = Arc::new(core);
        crate::session::register_redis(&core);
        RedisSemaphore {
            h: Arc::new(Handle {
                core,
                worker: Arc::new(Worker::default()),
                watchers: Arc::default(),
                last_session: AtomicU64::new(0),
                grants: Mutex::default(),
                name,
                prefix,
            }),
            entered: Default::default(),
        }
    }

    /// An awaitable of `job`, run off the loop once awaited.
    fn off_loop(
        &self,
        n: usize,
        what: &'static str,
        job: fn(Pin<Arc<Slot>>) -> Job,
    ) -> OffLoopCall {
        OffLoopCall::job(self.h.clone(), n, what, job, 0)
    }
}

impl RedisSemaphore {
    fn census_now(&self, py: Python<'_>) -> PyResult<volt_sem_backend::redis::Census> {
        self.h
            .call(py, |core| match core.as_redis() {
                Some(r) => r.census().map_err(Error::from),
                None => Err(Error::Unsupported),
            })?
            .map_err(backend_error)
    }
}

/// `n` of a Redis request. 0 is taken as by the local and the named
/// semaphore: granted at once unless closed (no round trip; its token is 0).
fn request(n: Permits) -> PyResult<usize> {
    Ok(n.0)
}

/// The exception of a request's error; `NotHeld` names the handle (the
/// seam's text names the process, as for a shared semaphore).
fn redis_error(e: Error) -> PyErr {
    match e {
        Error::NotHeld { held } => crate::errors::NotHeldError::new_err((
            format!("released more permits than this handle holds ({held})"),
            held,
        )),
        e => backend_error(e),
    }
}

fn census_dict<'py>(
    py: Python<'py>,
    c: &volt_sem_backend::redis::Census,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("total", c.total)?;
    d.set_item("available", c.available)?;
    d.set_item("held", c.held)?;
    d.set_item("partial", c.partial)?;
    d.set_item("queued", c.queued)?;
    d.set_item("sessions", c.sessions)?;
    d.set_item("closed", c.closed)?;
    d.set_item("last_token", c.last_token)?;
    Ok(d)
}

#[pymethods]
impl RedisSemaphore {
    /// Deletes the Redis semaphore `name` (its keys under `prefix`):
    /// refused with `InUseError` while it has a live session (a client that
    /// holds, waits or is connected), `FileNotFoundError` if there is none.
    /// One connection and one script on a thread of its own, GIL released
    /// (up to the connect timeout); no session. A thin call into the
    /// backend's `delete`.
    #[staticmethod]
    #[pyo3(
        signature = (url, name, *, prefix = "volt-sem".to_owned(), connect_timeout = 5.0, command_timeout = 5.0, cluster = false, tls_ca_file = None, tls_client_cert = None),
        text_signature = "(url, name, *, prefix='volt-sem', connect_timeout=5.0, command_timeout=5.0, cluster=False, tls_ca_file=None, tls_client_cert=None)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn delete(
        py: Python<'_>,
        url: String,
        name: String,
        prefix: String,
        connect_timeout: f64,
        command_timeout: f64,
        cluster: bool,
        tls_ca_file: Option<std::path::PathBuf>,
        tls_client_cert: Option<(std::path::PathBuf, std::path::PathBuf)>,
    ) -> PyResult<()> {
        let mut options = ConnectOptions::new()
            .prefix(&prefix)
            .connect_timeout(seconds(connect_timeout, "connect_timeout")?)
            .command_timeout(seconds(command_timeout, "command_timeout")?)
            .cluster(cluster);
        if let Some(ca) = tls_ca_file {
            options = options.tls_ca_file(ca);
        }
        if let Some((cert, key)) = tls_client_cert {
            options = options.tls_client_cert(cert, key);
        }
        // On a thread of its own, for the same reason as `Handle::call`.
        let deleting = std::thread::Builder::new()
            .name("volt_sem delete".into())
            .spawn(move || volt_sem_backend::delete_redis(&url, &name, options))
            .map_err(|e| PyRuntimeError::new_err(format!("cannot start a thread: {e}")))?;
        py.detach(|| deleting.join())
            .map_err(|_| PyRuntimeError::new_err("delete panicked"))?
            .map_err(Connect::error)
    }

    /// The name.
    #[getter]
    fn name(&self) -> String {
        self.h.name.clone()
    }

    /// The key prefix.
    #[getter]
    fn prefix(&self) -> String {
        self.h.prefix.clone()
    }

    /// The fixed total of permits.
    #[getter]
    fn total_permits(&self) -> usize {
        self.h.redis().total_permits()
    }

    /// Permits this handle holds in its current session, as it counts them
    /// (no round trip).
    #[getter]
    fn held_permits(&self) -> usize {
        self.h.redis().held_permits()
    }

    /// Waits for `n` permits (FIFO across every client, weights included);
    /// `await` gives the fencing token (an int > 0). `async with
    /// sem.acquire(n) as token:` releases them on exit (off the loop).
    #[pyo3(signature = (n = Permits(1)), text_signature = "($self, n=1)")]
    fn acquire(&self, n: Permits) -> PyResult<RedisAcquire> {
        check_live(&self.h.core)?;
        Ok(RedisAcquire::new(self.h.clone(), request(n)?))
    }

    /// Takes `n` permits if they are free now and nobody waits: the token,
    /// or `None`. One round trip on this thread (GIL released).
    #[pyo3(signature = (n = Permits(1)), text_signature = "($self, n=1)")]
    fn try_acquire(&self, py: Python<'_>, n: Permits) -> PyResult<Option<u64>> {
        check_live(&self.h.core)?;
        let n = request(n)?;
        let me = owner(py)?;
        match self.h.call(py, move |core| core.try_acquire(n))? {
            Ok(g) => {
                self.h.granted(me, g.session(), n);
                Ok(Some(g.token().unwrap_or(0)))
            }
            Err(Error::NoPermits) => Ok(None),
            Err(e) => Err(acquire_error(&self.h.core, e)),
        }
    }

    /// Blocks this thread (GIL released) until `n` permits are granted: the
    /// token, or `None` if `timeout` seconds passed first (a partial grant is
    /// handed on). Interruptible by Ctrl-C between round trips.
    #[pyo3(signature = (n = Permits(1), timeout = None), text_signature = "($self, n=1, timeout=None)")]
    fn acquire_blocking(
        &self,
        py: Python<'_>,
        n: Permits,
        timeout: Option<f64>,
    ) -> PyResult<Option<u64>> {
        check_live(&self.h.core)?;
        let n = request(n)?;
        let timeout = timeout_arg(timeout)?;
        let me = owner(py)?;
        let got = self.h.blocking_acquire(py, n, timeout)?;
        Ok(got.map(|(token, session)| {
            self.h.granted(me, session, n);
            token
        }))
    }

    /// Returns `n` permits this handle holds (to the oldest waiters first, on
    /// any host). One round trip on this thread (GIL released).
    /// `NotHeldError` if it holds fewer; `LeaseExpiredError` if they were
    /// lost with an expired session (nothing is released twice).
    #[pyo3(signature = (n = Permits(1)), text_signature = "($self, n=1)")]
    fn release(&self, py: Python<'_>, n: Permits) -> PyResult<()> {
        check_live(&self.h.core)?;
        self.h.release(py, request(n)?)
    }

    /// `release(n)` off the loop: an awaitable (a cancelled await does not
    /// undo the release).
    #[pyo3(signature = (n = Permits(1)), text_signature = "($self, n=1)")]
    fn release_async(&self, py: Python<'_>, n: Permits) -> PyResult<OffLoopCall> {
        check_live(&self.h.core)?;
        let n = request(n)?;
        let session = self.h.session_for_release(py, n)?;
        Ok(OffLoopCall::job(
            self.h.clone(),
            n,
            "release_async",
            Job::Release,
            session,
        ))
    }

    /// Refused with `TypeError`: it would close the limit for every client.
    /// Use `disconnect()` to end this handle's session, or
    /// `close_for_everyone()`.
    #[pyo3(text_signature = "($self)")]
    fn close(&self) -> PyResult<()> {
        Err(shared_close_error(true))
    }

    /// Refused with `TypeError`, as `close()`: use `disconnect_async()` or
    /// `close_for_everyone_async()`.
    #[pyo3(text_signature = "($self)")]
    fn close_async(&self) -> PyResult<OffLoopCall> {
        Err(shared_close_error(true))
    }

    /// Closes the semaphore for every client on every host: waiting
    /// acquires everywhere raise `ClosedError`, and so does every later
    /// acquire (held permits can still be released). One round trip. It
    /// stays closed, for later deploys too, until its keys are deleted
    /// (`RedisSemaphore.delete(url, name)`, once no client is connected):
    /// the next `connect` then creates it anew.
    #[pyo3(text_signature = "($self)")]
    fn close_for_everyone(&self, py: Python<'_>) -> PyResult<()> {
        check_live(&self.h.core)?;
        self.h.call(py, |core| core.close())?.map_err(backend_error)
    }

    /// `close_for_everyone()` off the loop: an awaitable.
    #[pyo3(text_signature = "($self)")]
    fn close_for_everyone_async(&self) -> PyResult<OffLoopCall> {
        check_live(&self.h.core)?;
        Ok(self.off_loop(0, "close_for_everyone_async", Job::Close))
    }

    /// Ends this handle's session, leaving the semaphore open for every
    /// other client: its queued acquires raise `DisconnectedError` (a
    /// `ClosedError`), what it holds goes to the next waiters at once (not
    /// at the lease's expiry), and every later call on the handle raises
    /// `DisconnectedError`. One round trip on this thread, GIL released
    /// (if Redis is out of reach, the session ends at its lease's expiry).
    /// Idempotent. From an event loop: `await sem.disconnect_async()`.
    #[pyo3(text_signature = "($self)")]
    fn disconnect(&self, py: Python<'_>) -> PyResult<()> {
        self.h.call(py, crate::session::disconnect_redis)
    }

    /// `disconnect()` off the loop: an awaitable.
    #[pyo3(text_signature = "($self)")]
    fn disconnect_async(&self) -> OffLoopCall {
        self.off_loop(0, "disconnect_async", Job::Disconnect)
    }

    /// `with Semaphore.connect(...) as sem:` disconnects on exit; it does
    /// not acquire (`with sem.acquire(n):` does). `TypeError` when nested,
    /// `DisconnectedError` once disconnected.
    fn __enter__(slf: Py<Self>) -> PyResult<Py<Self>> {
        let me = slf.get();
        check_live(&me.h.core)?;
        if me.entered.swap(true, Ordering::Relaxed) {
            return Err(crate::session::with_error(
                "this handle is already inside a `with` block",
            ));
        }
        Ok(slf)
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> PyResult<bool> {
        self.disconnect(py)?;
        Ok(false)
    }

    /// Whether this handle saw the semaphore closed (no round trip: a close
    /// by another client shows once a request of this handle met it).
    #[getter]
    fn closed(&self) -> bool {
        self.h.core.is_closed()
    }

    /// Permits available right now (0 while anyone waits). One round trip
    /// (GIL released).
    #[getter]
    fn available_permits(&self, py: Python<'_>) -> PyResult<usize> {
        check_live(&self.h.core)?;
        Ok(self.census_now(py)?.available as usize)
    }

    /// Whether an `acquire()` of one permit would wait. One round trip.
    #[pyo3(text_signature = "($self)")]
    fn locked(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(self.available_permits(py)? == 0)
    }

    /// The conservation sums read in one script: `total`, `available`,
    /// `held` (by every client), `partial` (of queued acquires), `queued`,
    /// `sessions`, `closed`, `last_token`. One round trip.
    #[pyo3(text_signature = "($self)")]
    fn census<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        check_live(&self.h.core)?;
        let c = self.census_now(py)?;
        census_dict(py, &c)
    }

    /// `census()` off the loop: an awaitable.
    #[pyo3(text_signature = "($self)")]
    fn census_async(&self) -> PyResult<OffLoopCall> {
        check_live(&self.h.core)?;
        Ok(self.off_loop(0, "census_async", Job::Census))
    }

    /// Completes when the session that holds this handle's latest grant is
    /// lost; `await` gives the exception (`LeaseExpiredError` or
    /// `StateLostError`) without raising it. `RuntimeError` before any grant.
    #[pyo3(text_signature = "($self)")]
    fn lease_lost(&self) -> PyResult<LeaseLost> {
        check_live(&self.h.core)?;
        let session = self.h.last_session.load(Ordering::Relaxed);
        if session == 0 {
            return Err(PyRuntimeError::new_err(
                "lease_lost(): this handle has not been granted anything yet",
            ));
        }
        let watch = self
            .h
            .core
            .lease_watch(session)
            .expect("a RedisSemaphore holds a Redis core");
        Ok(LeaseLost {
            h: self.h.clone(),
            watch,
            session,
            stage: Watching::Start,
            early: None,
        })
    }

    /// Whether the session of this handle's latest grant was lost (no round
    /// trip; `False` before any grant).
    #[pyo3(text_signature = "($self)")]
    fn is_lease_lost(&self) -> bool {
        let session = self.h.last_session.load(Ordering::Relaxed);
        session != 0
            && self
                .h
                .core
                .lease_watch(session)
                .is_some_and(|w| w.is_lost())
    }

    /// `async with sem:` takes one permit (off the loop) ...
    fn __aenter__(&self) -> PyResult<RedisAcquire> {
        check_live(&self.h.core)?;
        Ok(RedisAcquire::new(self.h.clone(), 1))
    }

    /// ... and releases it (off the loop).
    #[pyo3(signature = (*_args))]
    fn __aexit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> PyResult<OffLoopCall> {
        check_live(&self.h.core)?;
        let session = self.h.session_for_release(py, 1)?;
        Ok(OffLoopCall::job(
            self.h.clone(),
            1,
            "async with",
            Job::Release,
            session,
        ))
    }

    fn __repr__(&self) -> String {
        // Never the URL (it may hold a password), and no round trip.
        let r = self.h.redis();
        format!(
            "<volt_sem.RedisSemaphore name={:?} prefix={:?} total={} held={}{} session={}>",
            self.h.name,
            self.h.prefix,
            r.total_permits(),
            r.held_permits(),
            if r.is_closed() { " closed" } else { "" },
            if r.is_disconnected() { "ended" } else { "live" }
        )
    }
}

// ---------------------------------------------------------------------------
// RedisAcquire
// ---------------------------------------------------------------------------

enum Stage {
    Start,
    /// Queued to the worker (and maybe to Redis); the slot's target is the
    /// Future yielded.
    Waiting(Pin<Arc<Slot>>),
    Done,
}

/// One acquire of `n` permits of a `RedisSemaphore`: awaitable once (the
/// token), an async context manager (releases on exit, off the loop) and,
/// from a plain thread, a blocking one.
#[pyclass(module = "volt_sem")]
pub(crate) struct RedisAcquire {
    h: Arc<Handle>,
    n: usize,
    stage: Stage,
    /// Permits acquired through this object not yet released by an exit.
    held: bool,
    token: u64,
    /// The session of the grant (its exit releases per grant).
    session: u64,
    /// Who awaits (or enters) it, looked up before the acquire is queued
    /// (see [`owner`]); the grant is recorded as theirs.
    owner: Option<Owner>,
}

impl RedisAcquire {
    fn new(h: Arc<Handle>, n: usize) -> Self {
        RedisAcquire {
            h,
            n,
            stage: Stage::Start,
            held: false,
            token: 0,
            session: 0,
            owner: None,
        }
    }

    fn acquired(&mut self, token: u64, session: u64) -> u64 {
        self.stage = Stage::Done;
        self.held = true;
        self.token = token;
        self.session = session;
        let owner = self
            .owner
            .unwrap_or(Owner::Thread(std::thread::current().id()));
        self.h.granted(owner, session, self.n);
        token
    }

    /// Queues the acquire to the worker, `target` to be woken on `chan`.
    fn start(&mut self, target: Py<PyAny>, chan: Arc<Chan>) -> PyResult<()> {
        let slot = Slot::new(self.h.core.clone(), self.n, target, chan);
        self.h
            .worker
            .submit(Job::Acquire(slot.clone()))
            .inspect_err(|_| self.stage = Stage::Done)?;
        self.stage = Stage::Waiting(slot);
        Ok(())
    }

    /// Takes the outcome of a delivered wait: the token.
    fn collect(&mut self, py: Python<'_>) -> PyResult<u64> {
        let Stage::Waiting(slot) = std::mem::replace(&mut self.stage, Stage::Done) else {
            return Err(PyRuntimeError::new_err("acquire not waiting"));
        };
        let w = slot.waiter();
        match finish_off(py, &slot) {
            Some(Done::Granted { token, session }) => Ok(self.acquired(token, session)),
            Some(Done::Finished(Finish::Granted)) => {
                Ok(self.acquired(w.token().unwrap_or(0), w.session()))
            }
            Some(Done::Finished(Finish::Closed)) => Err(closed_error()),
            Some(Done::Finished(Finish::Failed(e)) | Done::Failed(e)) => {
                Err(acquire_error(&self.h.core, e))
            }
            None => Err(PyRuntimeError::new_err(
                "the grant arrived after the waiter's event loop was closed and was handed on",
            )),
            Some(_) => Err(PyRuntimeError::new_err(
                "acquire finished without an outcome",
            )),
        }
    }

    fn step(&mut self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        match &self.stage {
            Stage::Start => {
                self.owner = Some(owner(py)?);
                let (slot, fut) = loop_slot(py, self.h.core.clone(), self.n, "acquire")
                    .inspect_err(|_| self.stage = Stage::Done)?;
                self.h
                    .worker
                    .submit(Job::Acquire(slot.clone()))
                    .inspect_err(|_| self.stage = Stage::Done)?;
                self.stage = Stage::Waiting(slot);
                yield_future(py, &fut).map(Some)
            }
            Stage::Waiting(slot) => {
                if !future_done(py, slot)? {
                    let fut = slot.target.clone_ref(py);
                    return yield_future(py, fut.bind(py)).map(Some);
                }
                let token = self.collect(py)?;
                Err(PyStopIteration::new_err((token,)))
            }
            Stage::Done => Err(PyRuntimeError::new_err(
                "cannot reuse an already awaited acquire",
            )),
        }
    }

    /// Ends a pending wait from outside (`throw`, `close`, GC, drop): the
    /// worker cancels it (a round trip), after the acquire itself ran.
    fn cancel(&mut self) {
        if let Stage::Waiting(slot) = std::mem::replace(&mut self.stage, Stage::Done) {
            let _ = self.h.worker.submit(Job::Cancel(slot));
        }
    }
}

coroutine_pymethods! {
impl RedisAcquire {
    throw: |me, _py| me.cancel();

    /// The acquire itself under asyncio; in a trio task, the iterator of
    /// `_glue`'s trio driver.
    fn __await__(slf: Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let fresh = matches!(slf.borrow().stage, Stage::Start);
        trio_or_self(slf.into_any(), fresh)
    }

    /// trio: queues the acquire with the trio task as the target.
    fn _trio_start(&mut self, channel: &Bound<'_, Channel>, task: Py<PyAny>) -> PyResult<bool> {
        if !matches!(self.stage, Stage::Start) {
            return Err(PyRuntimeError::new_err(
                "cannot reuse an already awaited acquire",
            ));
        }
        // The trio task awaiting is the one trio's current_task() names.
        self.owner = Some(Owner::Task(task.as_ptr() as usize));
        self.start(task, channel.get().chan.clone())?;
        Ok(true)
    }

    /// trio's abort: `False` once the task was rescheduled (unless `force`);
    /// else the wait is given up and the worker cancels it.
    fn _trio_abort(&mut self, force: bool) -> bool {
        if let Stage::Waiting(slot) = &self.stage {
            if !force && slot.delivered() {
                return false;
            }
            let Stage::Waiting(slot) = std::mem::replace(&mut self.stage, Stage::Done) else {
                unreachable!()
            };
            if abandon(&slot) {
                let _ = self.h.worker.submit(Job::Cancel(slot));
            }
        }
        true
    }

    /// trio: the token, once the task was rescheduled.
    fn _trio_collect(&mut self, py: Python<'_>) -> PyResult<(bool, u64)> {
        Ok((true, self.collect(py)?))
    }

    fn close(&mut self) {
        self.cancel();
    }

    fn __aenter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Releases the permits acquired, off the loop (an awaitable; raises
    /// `LeaseExpiredError` if they were lost with the session).
    #[pyo3(signature = (*_args))]
    fn __aexit__(&mut self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        if !std::mem::take(&mut self.held) {
            return Ok(ready(py)?.into_any());
        }
        if let Some(me) = self.owner {
            self.h.forget_grant(me, self.session, self.n);
        }
        Ok(Py::new(
            py,
            OffLoopCall::job(
                self.h.clone(),
                self.n,
                "async with",
                Job::Release,
                self.session,
            ),
        )?
        .into_any())
    }

    /// `with sem.acquire(n) as token:` from a plain thread: blocks (GIL
    /// released) until granted.
    fn __enter__(&mut self, py: Python<'_>) -> PyResult<u64> {
        if !matches!(self.stage, Stage::Start) {
            return Err(PyRuntimeError::new_err(
                "cannot reuse an already used acquire",
            ));
        }
        let me = owner(py)?;
        self.owner = Some(me);
        self.stage = Stage::Done;
        let (token, session) = self
            .h
            .blocking_acquire(py, self.n, None)?
            .ok_or_else(|| PyRuntimeError::new_err("acquire without timeout timed out"))?;
        self.h.granted(me, session, self.n);
        self.held = true;
        self.token = token;
        self.session = session;
        Ok(token)
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&mut self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> PyResult<bool> {
        if std::mem::take(&mut self.held) {
            if let Some(me) = self.owner {
                self.h.forget_grant(me, self.session, self.n);
            }
            self.h.release_from(py, self.n, self.session)?;
        }
        Ok(false)
    }

    /// The number of permits asked for.
    #[getter]
    fn n(&self) -> usize {
        self.n
    }

    /// The fencing token of the grant (0 before it).
    #[getter]
    fn token(&self) -> u64 {
        self.token
    }

    /// Whether this object holds permits its exit will release.
    #[getter]
    fn held(&self) -> bool {
        self.held
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        if let Stage::Waiting(slot) = &self.stage {
            visit.call(&slot.target)?;
        }
        Ok(())
    }

    fn __clear__(&mut self) {
        self.cancel();
    }

    fn __repr__(&self) -> String {
        let stage = match self.stage {
            Stage::Start => "new".to_owned(),
            Stage::Waiting(_) => "waiting".to_owned(),
            Stage::Done if self.held => format!("held token={}", self.token),
            Stage::Done => "done".to_owned(),
        };
        format!("<volt_sem.RedisAcquire n={} {stage}>", self.n)
    }
}
}

impl Drop for RedisAcquire {
    fn drop(&mut self) {
        // Backstop: a task dropped without `close` (its loop abandoned).
        self.cancel();
    }
}

// ---------------------------------------------------------------------------
// OffLoopCall
// ---------------------------------------------------------------------------

/// What an [`OffLoopCall`] runs once awaited.
enum Request {
    Job(Arc<Handle>, usize, fn(Pin<Arc<Slot>>) -> Job, u64),
    // Boxed: a connect's options are far larger than a job.
    Connect(Box<Connect>),
}

/// A request run off the loop (release, close, census, connect): awaitable
/// once, under asyncio or trio; the request starts when awaited, and
/// cancelling the await does not undo it.
#[pyclass(module = "volt_sem", subclass)]
pub(crate) struct OffLoopCall {
    req: Option<Request>,
    slot: Option<Pin<Arc<Slot>>>,
    /// `connect_async`: the name and prefix of the handle it makes.
    meta: Option<(String, String)>,
    /// `connect_async`: the handle it made (for `RedisConnect.__aexit__`).
    pub(crate) made: Option<Py<RedisSemaphore>>,
    what: &'static str,
}

impl OffLoopCall {
    /// `session`: a `Release` job's grant session (0: counted per handle).
    fn job(
        h: Arc<Handle>,
        n: usize,
        what: &'static str,
        job: fn(Pin<Arc<Slot>>) -> Job,
        session: u64,
    ) -> Self {
        OffLoopCall {
            req: Some(Request::Job(h, n, job, session)),
            slot: None,
            meta: None,
            made: None,
            what,
        }
    }

    /// Starts the request, `target` to be woken on `chan`.
    fn start(&mut self, target: Py<PyAny>, chan: Arc<Chan>) -> PyResult<()> {
        let Some(req) = self.req.take() else {
            return Err(PyRuntimeError::new_err(
                "cannot reuse an already awaited call",
            ));
        };
        let slot = match req {
            Request::Job(h, n, job, session) => {
                let slot = Slot::new(h.core.clone(), n, target, chan);
                slot.session.store(session, Ordering::Relaxed);
                h.worker.submit(job(slot.clone()))?;
                slot
            }
            Request::Connect(c) => {
                // The slot's core is never used by a connect (its waiter
                // stays idle).
                let slot = Slot::new(Arc::new(local_core(0)), 0, target, chan);
                spawn_connect(slot.clone(), move || c.run())?;
                slot
            }
        };
        self.slot = Some(slot);
        Ok(())
    }

    /// The result of a delivered request.
    fn collect(&mut self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let Some(slot) = self.slot.take() else {
            return Err(PyRuntimeError::new_err("call not started"));
        };
        Ok(match finish_off(py, &slot) {
            Some(Done::Unit) => py.None(),
            Some(Done::Census(c)) => census_dict(py, &c)?.into_any().unbind(),
            Some(Done::Connected(core)) => {
                let (name, prefix) = self.meta.take().unwrap_or_default();
                let sem = Py::new(py, RedisSemaphore::new(*core, name, prefix))?;
                self.made = Some(sem.clone_ref(py));
                sem.into_any()
            }
            Some(Done::Failed(e)) if self.meta.is_some() => return Err(Connect::error(e)),
            Some(Done::Failed(e)) => return Err(redis_error(e)),
            None => {
                return Err(PyRuntimeError::new_err(
                    "the event loop was closed before the call completed",
                ))
            }
            Some(_) => return Err(PyRuntimeError::new_err("call finished without an outcome")),
        })
    }

    fn step(&mut self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        if self.req.is_some() {
            let (fut, chan) = loop_target(py, self.what)?;
            self.start(fut.clone().unbind(), chan)?;
            return yield_future(py, &fut).map(Some);
        }
        let Some(slot) = &self.slot else {
            return Err(PyRuntimeError::new_err(
                "cannot reuse an already awaited call",
            ));
        };
        if !future_done(py, slot)? {
            let fut = slot.target.clone_ref(py);
            return yield_future(py, fut.bind(py)).map(Some);
        }
        let value = self.collect(py)?;
        Err(PyStopIteration::new_err((value,)))
    }
}

coroutine_pymethods! {
impl OffLoopCall {
    throw: |me, _py| me.close();

    fn __await__(slf: Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let fresh = slf.borrow().req.is_some();
        trio_or_self(slf.into_any(), fresh)
    }

    /// trio: starts the request with the trio task as the target.
    fn _trio_start(&mut self, channel: &Bound<'_, Channel>, task: Py<PyAny>) -> PyResult<bool> {
        self.start(task, channel.get().chan.clone())?;
        Ok(true)
    }

    /// trio's abort: `False` once the task was rescheduled (unless `force`);
    /// else stops waiting (the request still runs).
    fn _trio_abort(&mut self, force: bool) -> bool {
        if let Some(slot) = &self.slot {
            if !force && slot.delivered() {
                return false;
            }
            abandon(slot);
            self.slot = None;
        }
        true
    }

    /// trio: the result, once the task was rescheduled.
    fn _trio_collect(&mut self, py: Python<'_>) -> PyResult<(bool, Py<PyAny>)> {
        Ok((true, self.collect(py)?))
    }

    /// Stops waiting; a request started still runs (a connection made is
    /// closed again); one never awaited never starts.
    fn close(&mut self) {
        self.req = None;
        if let Some(slot) = self.slot.take() {
            claim_owner(&slot);
        }
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        if let Some(slot) = &self.slot {
            visit.call(&slot.target)?;
        }
        if let Some(made) = &self.made {
            visit.call(made)?;
        }
        Ok(())
    }

    fn __clear__(&mut self) {
        self.close();
    }
}
}

// ---------------------------------------------------------------------------
// LeaseLost
// ---------------------------------------------------------------------------

/// The pending `lease_lost()` awaitables of one handle, for the session they
/// watch. One waker per session is registered with the seam's `LeaseWatch`
/// (its wakers are only dropped when the session is lost, so one per
/// awaitable would pile up with every cancelled watch); a cancelled
/// awaitable removes its own slot.
#[derive(Default)]
pub(crate) struct Watchers {
    session: u64,
    registered: bool,
    slots: Vec<Pin<Arc<Slot>>>,
}

impl Watchers {
    /// The slots waiting for the loss of `session` (the job of the waker).
    pub(crate) fn take_lost(&mut self, session: u64) -> Vec<Pin<Arc<Slot>>> {
        if self.session != session {
            return Vec::new();
        }
        self.registered = false;
        std::mem::take(&mut self.slots)
    }
}

/// The waker registered for a session: it only queues a job to the handle's
/// worker. It runs under the backend's session lock, so it must not deliver
/// there (a delivery may drop the last reference to a slot, and with it the
/// backend handle, whose drop takes that lock). It holds no reference to the
/// core: no cycle through the backend's waker list.
struct SessionWake {
    worker: Arc<Worker>,
    watchers: Arc<Mutex<Watchers>>,
    session: u64,
}

impl Wake for SessionWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        let _ = self
            .worker
            .submit_native(Job::LeaseLost(self.watchers.clone(), self.session));
    }
}

fn lock_watchers(w: &Mutex<Watchers>) -> std::sync::MutexGuard<'_, Watchers> {
    w.lock().unwrap_or_else(|e| e.into_inner())
}

enum Watching {
    Start,
    Waiting(Pin<Arc<Slot>>),
    Done,
}

/// `await sem.lease_lost()`: the exception of the lost session.
#[pyclass(module = "volt_sem")]
pub(crate) struct LeaseLost {
    h: Arc<Handle>,
    watch: LeaseWatch,
    session: u64,
    stage: Watching,
    /// trio: the loss found when the watch started.
    early: Option<Error>,
}

impl LeaseLost {
    fn exception(py: Python<'_>, e: Error) -> Py<PyAny> {
        backend_error(e).into_value(py).into_any()
    }

    /// The loss, if the watched session is lost (polled with a no-op waker:
    /// ready at once then).
    fn check(&mut self) -> Option<Error> {
        if !self.watch.is_lost() {
            return None;
        }
        let mut cx = Context::from_waker(Waker::noop());
        match Pin::new(&mut self.watch).poll(&mut cx) {
            Poll::Ready(e) => Some(e.into()),
            Poll::Pending => None,
        }
    }

    /// Takes this awaitable's slot off the handle's list.
    fn unlist(&self, slot: &Pin<Arc<Slot>>) {
        lock_watchers(&self.h.watchers)
            .slots
            .retain(|s| !std::ptr::eq(&**s, &**slot));
    }

    /// Starts watching, `target` to be woken on `chan` at the loss; the loss
    /// itself if the session is lost already (then nothing waits).
    fn begin(&mut self, target: Py<PyAny>, chan: Arc<Chan>) -> Option<Error> {
        if let Some(e) = self.check() {
            self.stage = Watching::Done;
            return Some(e);
        }
        let slot = Slot::new(self.h.core.clone(), 0, target, chan);
        let register = {
            let mut w = lock_watchers(&self.h.watchers);
            if w.session != self.session {
                // Another session's list: it was lost (delivered) already.
                w.session = self.session;
                w.registered = false;
                w.slots.clear();
            }
            w.slots.push(slot.clone());
            !std::mem::replace(&mut w.registered, true)
        };
        self.stage = Watching::Waiting(slot);
        if register {
            let waker = Waker::from(Arc::new(SessionWake {
                worker: self.h.worker.clone(),
                watchers: self.h.watchers.clone(),
                session: self.session,
            }));
            let mut cx = Context::from_waker(&waker);
            if let Poll::Ready(e) = Pin::new(&mut self.watch).poll(&mut cx) {
                // Lost meanwhile: the others on the list are delivered by a
                // job, as a wake would.
                let _ = self
                    .h
                    .worker
                    .submit_native(Job::LeaseLost(self.h.watchers.clone(), self.session));
                self.close();
                return Some(e.into());
            }
        }
        None
    }

    /// After a delivery: the loss, or `None` for a spurious wake (then the
    /// watch starts over).
    fn collect(&mut self) -> Option<Error> {
        if let Watching::Waiting(slot) = std::mem::replace(&mut self.stage, Watching::Start) {
            claim_owner(&slot);
        }
        let e = self.check()?;
        self.stage = Watching::Done;
        Some(e)
    }

    fn step(&mut self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        loop {
            match &self.stage {
                Watching::Start => {
                    let (fut, chan) = loop_target(py, "lease_lost")?;
                    if let Some(e) = self.begin(fut.clone().unbind(), chan) {
                        return Err(PyStopIteration::new_err((Self::exception(py, e),)));
                    }
                    return yield_future(py, &fut).map(Some);
                }
                Watching::Waiting(slot) => {
                    if !future_done(py, slot)? {
                        let fut = slot.target.clone_ref(py);
                        return yield_future(py, fut.bind(py)).map(Some);
                    }
                    if let Some(e) = self.collect() {
                        return Err(PyStopIteration::new_err((Self::exception(py, e),)));
                    }
                }
                Watching::Done => {
                    return Err(PyRuntimeError::new_err(
                        "cannot reuse an awaited lease_lost()",
                    ))
                }
            }
        }
    }
}

impl Drop for LeaseLost {
    fn drop(&mut self) {
        self.close();
    }
}

coroutine_pymethods! {
impl LeaseLost {
    throw: |me, _py| me.close();

    fn __await__(slf: Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let fresh = matches!(slf.borrow().stage, Watching::Start);
        trio_or_self(slf.into_any(), fresh)
    }

    /// trio: starts watching with the trio task as the target; `False` if
    /// the session is lost already (nothing to wait for).
    fn _trio_start(&mut self, channel: &Bound<'_, Channel>, task: Py<PyAny>) -> bool {
        match self.begin(task, channel.get().chan.clone()) {
            Some(e) => {
                self.early = Some(e);
                false
            }
            None => true,
        }
    }

    /// trio's abort: `False` once the task was rescheduled (unless `force`);
    /// else stops watching.
    fn _trio_abort(&mut self, force: bool) -> bool {
        if let Watching::Waiting(slot) = &self.stage {
            if !force && slot.delivered() {
                return false;
            }
        }
        self.close();
        true
    }

    /// trio: `(True, exception)` after the loss, `(False, None)` after a
    /// spurious wake.
    fn _trio_collect(&mut self, py: Python<'_>) -> (bool, Py<PyAny>) {
        match self.early.take().or_else(|| self.collect()) {
            Some(e) => (true, Self::exception(py, e)),
            None => (false, py.None()),
        }
    }

    /// Stops watching.
    fn close(&mut self) {
        if let Watching::Waiting(slot) = std::mem::replace(&mut self.stage, Watching::Done) {
            claim_owner(&slot);
            self.unlist(&slot);
        }
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        if let Watching::Waiting(slot) = &self.stage {
            visit.call(&slot.target)?;
        }
        Ok(())
    }

    fn __clear__(&mut self) {
        self.close();
    }
}
}
