//! `volt_sem._volt_sem`: the Python binding of volt-sem (asyncio, uvloop, trio,
//! anyio and plain threads, all on one semaphore).
//!
//! One Rust [`volt_sem::Semaphore`] backs every Python object (`Semaphore`,
//! `Mutex` = 1 permit, `RwLock` = `MAX_PERMITS` permits with writers taking all of
//! them), and one waiter implementation serves all of them. `Semaphore.open`
//! gives a `Semaphore` whose core is instead the named semaphore shared by the
//! processes of the machine: both are a [`volt_sem_backend::Semaphore`], so every
//! method, the asyncio/trio awaitable and the blocking wait work unchanged on
//! either (the shared one's wake callbacks run on its doorbell thread, which
//! the wake path already handles like any other releasing thread). The modules
//! follow the path of a request:
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
//! * `redis`: `Semaphore.connect`'s `RedisSemaphore` (the Redis backend, a
//!   class of its own: its acquire gives a fencing token) and its
//!   awaitables;
//! * `session`: the sessions of the shared handles (`disconnect`, the `with`
//!   forms, `close_for_everyone`, `disconnect_on_signals`' list of handles);
//! * `offloop`: the per-handle worker thread that runs every Redis round trip
//!   of an awaitable off the event loop's thread, delivering through the wake
//!   path;
//! * this file: `Semaphore` and the module.
//!
//! Python-side glue (creating and registering wake channels, draining them in
//! Python frames, the trio pump) lives in `volt_sem/_glue.py`.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyTuple;

mod awaitable;
mod blocking;
mod coroutine;
mod errors;
mod locks;
mod offloop;
mod redis;
mod session;
mod wake;
mod wake_socket;

use awaitable::{enter_one_in, ready, Acquire, Ready, Role, TrioWaiter};
use blocking::blocking_acquire_in;
use errors::{
    acquire_error, backend_error, count, release_error, timeout_arg, Initial, Mode, Permits,
};
use volt_sem_backend::{Error, OpenOptions};
use wake::{after_wakes, Channel};

pub(crate) type Core = volt_sem_backend::Semaphore;

/// The largest number of permits a semaphore can hold, and the largest request.
pub(crate) const MAX_PERMITS: usize = Core::MAX_PERMITS;

/// A local (in-process) core with `permits` permits (already checked to be at
/// most `MAX_PERMITS`).
pub(crate) fn local_core(permits: usize) -> Core {
    Core::Local(volt_sem::Semaphore::new(permits))
}

/// A fair, weighted, thread-safe async counting semaphore.
///
/// `Semaphore(permits=1)`. Waiters are served in strict FIFO order, weights
/// included: a waiting `acquire(3)` is never overtaken by later `acquire(1)`s; it
/// accumulates released permits until it has all three. One semaphore can be
/// shared at once by asyncio (or uvloop) loops and trio runs on any threads, and
/// by plain threads using `acquire_blocking`.
#[pyclass(module = "volt_sem", frozen, weakref, subclass)]
struct Semaphore {
    /// Fixed for a local semaphore; a named one's session, which
    /// `disconnect()` ends.
    core: session::CoreCell,
    /// The name of a shared semaphore (`Semaphore.open`); `None` for a local one.
    name: Option<String>,
    /// `Role::Count`, or `Role::Bounded` for a `BoundedSemaphore`.
    role: Role,
    /// Inside `with sem:` (a named one): a nested `with sem:` is refused.
    entered: AtomicBool,
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
            core: session::CoreCell::Fixed(Arc::new(local_core(permits.0))),
            name: None,
            role: Role::Count,
            entered: AtomicBool::new(false),
        }
    }

    /// Opens the semaphore named `name`, shared by every process of this machine
    /// that opens the same name (Linux), creating it with `permits` permits in
    /// total if it does not exist. The result has every method of a local
    /// `Semaphore`, usable from any loop and thread of this process.
    ///
    /// `create`: `None` creates or attaches; `True` only creates
    /// (`FileExistsError` if the name exists); `False` only attaches
    /// (`FileNotFoundError` if it does not). `mode`: the permission bits of a new
    /// segment (default `0o600`, owner only; the owner always keeps read and
    /// write; set exactly, the umask does not apply). `accept_foreign_owner`:
    /// attach to a segment another user owns (by default that is a
    /// `PermissionError`: whoever owns a segment can rewrite its state, so
    /// only trust one shared with you on purpose). Errors change nothing:
    /// `TotalMismatchError` (the name exists with another total),
    /// `VersionMismatchError`, `NotASegmentError`, `InvalidNameError`,
    /// `PermissionError`, `ValueError` (bad `permits` or `mode`),
    /// `TimeoutError` (the segment's locks stayed held for 5 s), `CorruptError`,
    /// `OSError` (e.g. `/dev/shm` full), `NotImplementedError` (not Linux).
    #[classmethod]
    #[pyo3(
        signature = (name, permits, *, create = None, mode = Mode(0o600), accept_foreign_owner = false),
        text_signature = "($cls, name, permits, *, create=None, mode=0o600, accept_foreign_owner=False)"
    )]
    fn open(
        _cls: &Bound<'_, pyo3::types::PyType>,
        py: Python<'_>,
        name: String,
        permits: &Bound<'_, PyAny>,
        create: Option<bool>,
        mode: Mode,
        accept_foreign_owner: bool,
    ) -> PyResult<Self> {
        let permits = count(permits, "permits")?;
        let mode = mode.0;
        let options = match create {
            None => OpenOptions::new(),
            Some(true) => OpenOptions::new().create_only(),
            Some(false) => OpenOptions::new().attach_only(),
        }
        .mode(mode | 0o600)
        .accept_foreign_owner(accept_foreign_owner);
        // The GIL is released: creation may wait for another process's
        // initialisation of the same name (its init lock).
        let core = py
            .detach(|| Core::open(&name, permits, options))
            .map_err(backend_error)?;
        Ok(Semaphore {
            core: session::CoreCell::session(core),
            name: Some(name),
            role: Role::Count,
            entered: AtomicBool::new(false),
        })
    }

    /// Connects to the semaphore `name` stored in the Redis at `url`, shared
    /// by every client on every host that connects to the same Redis, prefix
    /// and name, creating it with `permits` in total if it does not exist.
    /// Returns a `RedisSemaphore` (same methods; `await sem.acquire(n)` gives
    /// the fencing token). Talks to Redis at once, on this thread with the GIL
    /// released, for up to `connect_timeout` seconds: from an event loop use
    /// `await Semaphore.connect_async(...)`.
    ///
    /// `with Semaphore.connect(...) as sem:` disconnects the handle on exit
    /// (`RedisSemaphore.disconnect`); a handle nobody references any more
    /// ends its session when collected (what it held goes to the next
    /// waiter).
    ///
    /// `url`: `redis://[user:password@]host[:port][/db]`, `rediss://` (TLS),
    /// `redis+sentinel://host:port[,host:port]/master`, or `unix:///path`
    /// (with `cluster=True`, seed node URLs separated by commas). `lease`:
    /// seconds a client may go unheard of before its permits return (at least
    /// 0.3). `tls_ca_file`: the CA certificate(s) (PEM) to trust for
    /// `rediss://` instead of the public roots; `tls_client_cert`: a
    /// `(cert, key)` pair of PEM files; `min_replicas_acked`: `(replicas,
    /// timeout)`: every write waits (Redis `WAIT`) until that many replicas
    /// acknowledged it, else fails with `RedisCommandError` (code
    /// `NOT_REPLICATED`) and gives the session up. Errors: `InvalidUrlError`, `InvalidNameError`, `ValueError`,
    /// `AuthenticationError`, `RedisConnectionError`, `TotalMismatchError`
    /// (nothing changed).
    #[classmethod]
    #[pyo3(
        signature = (url, name, permits, *, lease = 10.0, prefix = "volt-sem".to_owned(), connect_timeout = 5.0, command_timeout = 5.0, cluster = false, tls_ca_file = None, tls_client_cert = None, min_replicas_acked = None),
        text_signature = "($cls, url, name, permits, *, lease=10.0, prefix='volt-sem', connect_timeout=5.0, command_timeout=5.0, cluster=False, tls_ca_file=None, tls_client_cert=None, min_replicas_acked=None)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn connect(
        _cls: &Bound<'_, pyo3::types::PyType>,
        py: Python<'_>,
        url: String,
        name: String,
        permits: &Bound<'_, PyAny>,
        lease: f64,
        prefix: String,
        connect_timeout: f64,
        command_timeout: f64,
        cluster: bool,
        tls_ca_file: Option<std::path::PathBuf>,
        tls_client_cert: Option<(std::path::PathBuf, std::path::PathBuf)>,
        min_replicas_acked: Option<(usize, f64)>,
    ) -> PyResult<redis::RedisSemaphore> {
        redis::Connect::new(
            url,
            name,
            permits,
            lease,
            prefix,
            connect_timeout,
            command_timeout,
            cluster,
            redis::Security {
                tls_ca_file,
                tls_client_cert,
                min_replicas_acked,
            },
        )?
        .blocking(py)
    }

    /// `connect` off the event loop: `await Semaphore.connect_async(...)`
    /// connects on a thread of its own while the loop runs on. Also `async
    /// with Semaphore.connect_async(...) as sem:`, which disconnects the
    /// handle (off the loop) on exit (`RedisConnect`).
    #[classmethod]
    #[pyo3(
        signature = (url, name, permits, *, lease = 10.0, prefix = "volt-sem".to_owned(), connect_timeout = 5.0, command_timeout = 5.0, cluster = false, tls_ca_file = None, tls_client_cert = None, min_replicas_acked = None),
        text_signature = "($cls, url, name, permits, *, lease=10.0, prefix='volt-sem', connect_timeout=5.0, command_timeout=5.0, cluster=False, tls_ca_file=None, tls_client_cert=None, min_replicas_acked=None)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn connect_async(
        _cls: &Bound<'_, pyo3::types::PyType>,
        py: Python<'_>,
        url: String,
        name: String,
        permits: &Bound<'_, PyAny>,
        lease: f64,
        prefix: String,
        connect_timeout: f64,
        command_timeout: f64,
        cluster: bool,
        tls_ca_file: Option<std::path::PathBuf>,
        tls_client_cert: Option<(std::path::PathBuf, std::path::PathBuf)>,
        min_replicas_acked: Option<(usize, f64)>,
    ) -> PyResult<Py<session::RedisConnect>> {
        redis::Connect::new(
            url,
            name,
            permits,
            lease,
            prefix,
            connect_timeout,
            command_timeout,
            cluster,
            redis::Security {
                tls_ca_file,
                tls_client_cert,
                min_replicas_acked,
            },
        )
        .and_then(|c| session::redis_connect(py, c.spawn()))
    }

    /// Removes the name of a shared semaphore: processes that opened it keep
    /// using it, and the next `open` of the name creates a new one.
    /// `FileNotFoundError` if no semaphore has this name.
    #[staticmethod]
    #[pyo3(text_signature = "(name)")]
    fn unlink(name: &str) -> PyResult<()> {
        volt_sem_backend::unlink(name).map_err(backend_error)
    }

    /// The name of a shared semaphore (`Semaphore.open`), `None` for a local one.
    #[getter]
    fn name(&self) -> Option<String> {
        self.name.clone()
    }

    /// The fixed total of a shared semaphore; `None` for a local one (whose
    /// releases may add permits).
    #[getter]
    fn total_permits(&self) -> PyResult<Option<usize>> {
        Ok(self.core.get()?.total_permits())
    }

    /// Waits for `n` permits (FIFO, weights included); `await` returns `True`.
    /// Also `async with sem.acquire(n):`, which releases the `n` permits on exit.
    /// Raises `ClosedError` if the semaphore is (or gets) closed while waiting.
    #[pyo3(signature = (n = Permits(1)), text_signature = "($self, n=1)")]
    fn acquire(&self, n: Permits) -> PyResult<Acquire> {
        Ok(
            Acquire::new(self.core.get()?.into_owned(), n.0, self.role.clone(), true)
                .in_session(self.core.waits()),
        )
    }

    /// Returns `n` permits: to the oldest waiters first (on any thread or loop),
    /// the surplus to the counter. `OverflowError` if the available permits would
    /// exceed `MAX_PERMITS` (nothing is released then).
    #[pyo3(signature = (n = Permits(1)), text_signature = "($self, n=1)")]
    fn release(&self, py: Python<'_>, n: Permits) -> PyResult<()> {
        let core = self.core.get()?;
        if let Role::Bounded(_) = self.role {
            return self.role.release(py, &core, n.0);
        }
        let r = release_error(&core, n.0);
        after_wakes(py);
        r
    }

    /// Takes `n` permits if they are free right now and nobody waits; never waits.
    #[pyo3(signature = (n = Permits(1)), text_signature = "($self, n=1)")]
    fn try_acquire(&self, n: Permits) -> PyResult<bool> {
        let core = self.core.get()?;
        match core.try_acquire(n.0) {
            Ok(_) => {
                self.role.taken(n.0);
                Ok(true)
            }
            Err(Error::NoPermits) => Ok(false),
            Err(e) => Err(acquire_error(&core, e)),
        }
    }

    /// Blocks the calling thread (GIL released) until `n` permits are granted in
    /// FIFO order. Returns `False` if `timeout` seconds passed first (any partial
    /// grant is handed on). For plain threads: `RuntimeError` where it would
    /// wait on the thread of a running event loop (it would block it for ever).
    #[pyo3(signature = (n = Permits(1), timeout = None), text_signature = "($self, n=1, timeout=None)")]
    fn acquire_blocking(&self, py: Python<'_>, n: Permits, timeout: Option<f64>) -> PyResult<bool> {
        let core = self.core.get()?;
        let waits = self.core.waits();
        let got = blocking_acquire_in(py, &core, n.0, timeout_arg(timeout)?, waits.as_deref())?;
        if got {
            self.role.taken(n.0);
        }
        Ok(got)
    }

    /// Permits available right now (0 while anyone waits).
    #[getter]
    fn available_permits(&self) -> PyResult<usize> {
        Ok(self.core.get()?.available_permits())
    }

    /// Whether an `acquire()` of one permit would have to wait.
    #[pyo3(text_signature = "($self)")]
    fn locked(&self) -> PyResult<bool> {
        Ok(self.core.get()?.available_permits() == 0)
    }

    /// Closes the semaphore: waiting acquires raise `ClosedError`, and so does
    /// every later acquire. Held permits can still be released. Idempotent.
    /// A shared semaphore (`Semaphore.open`) refuses it with `TypeError`: it
    /// would close the limit for every process; use `disconnect()` to end
    /// this handle's session, or `close_for_everyone()`.
    #[pyo3(text_signature = "($self)")]
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        if self.core.is_shared() {
            return Err(session::shared_close_error(false));
        }
        self.close_for_everyone(py)
    }

    /// Closes the semaphore for every process that uses it: its waiting
    /// acquires (in every process) raise `ClosedError`, and so does every
    /// later acquire; held permits can still be released. Idempotent. A
    /// closed shared semaphore stays closed until its name is removed
    /// (`Semaphore.unlink(name)`): the next `open` of the name then creates
    /// a new one (processes still attached keep the closed one). For a local
    /// semaphore, the same as `close()`.
    #[pyo3(text_signature = "($self)")]
    fn close_for_everyone(&self, py: Python<'_>) -> PyResult<()> {
        let r = self.core.get()?.close().map_err(backend_error);
        after_wakes(py);
        r
    }

    /// Whether the semaphore was closed (`close()`, `close_for_everyone()`,
    /// by any process for a shared one). `False` once disconnected.
    #[getter]
    fn closed(&self) -> bool {
        self.core.get().is_ok_and(|c| c.is_closed())
    }

    /// Ends this handle's session on a shared semaphore (`Semaphore.open`),
    /// leaving the semaphore open for every other process: its queued
    /// acquires (asyncio and trio tasks, blocking threads) and every later
    /// call on this handle raise `DisconnectedError` (a `ClosedError`). Permits
    /// are held per process, by the process's attachment to the name, which
    /// every handle of this process on the name and their pending acquires
    /// share: once none is left, what the process holds goes back at once,
    /// to the next waiter, as at its exit. Idempotent. `TypeError` on a
    /// local semaphore (it has no session; `close()` it).
    #[pyo3(text_signature = "($self)")]
    fn disconnect(&self, py: Python<'_>) -> PyResult<()> {
        if !self.core.is_shared() {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "disconnect() ends the session of a shared semaphore (Semaphore.open); a local \
                 Semaphore has none: close() it",
            ));
        }
        self.core.end(py);
        Ok(())
    }

    /// `with Semaphore.open(name, permits) as sem:` ends the handle's
    /// session on exit (`disconnect()`); it does not acquire (that is `with
    /// sem.acquire(n):`). `TypeError` on a local semaphore, and on a handle
    /// already disconnected.
    fn __enter__(slf: Py<Self>) -> PyResult<Py<Self>> {
        let me = slf.get();
        if !me.core.is_shared() {
            return Err(session::with_error(
                "a local Semaphore has no session to scope",
            ));
        }
        me.core.get()?;
        if me.entered.swap(true, Ordering::Relaxed) {
            return Err(session::with_error(
                "this handle is already inside a `with` block",
            ));
        }
        Ok(slf)
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> bool {
        self.core.end(py);
        false
    }

    fn __aenter__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let core = self.core.get()?;
        enter_one_in(py, &core, &self.role, self.core.waits())
    }

    #[pyo3(signature = (*_args))]
    fn __aexit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> PyResult<Py<Ready>> {
        self.release(py, Permits(1))?;
        ready(py)
    }

    fn __repr__(&self) -> String {
        let Ok(core) = self.core.get() else {
            return format!(
                "<volt_sem.Semaphore name={:?} session=ended>",
                self.name.as_deref().unwrap_or("")
            );
        };
        let shared = match (&self.name, core.total_permits()) {
            (Some(name), Some(total)) => format!(" name={name:?} total={total}"),
            _ => String::new(),
        };
        format!(
            "<volt_sem.Semaphore{shared} available={}{}{}>",
            core.available_permits(),
            if core.is_closed() { " closed" } else { "" },
            if self.core.is_shared() {
                " session=live"
            } else {
                ""
            }
        )
    }
}

/// A `Semaphore` whose releases cannot outnumber its acquires, as
/// `asyncio.BoundedSemaphore`: `release(n)` raises `ValueError` ("released too
/// many times") and releases nothing when fewer than `n` permits taken through
/// it are held, so a stray release cannot raise the count above `permits`.
///
/// `BoundedSemaphore(permits=1)`; local only.
#[pyclass(module = "volt_sem", frozen, extends = Semaphore)]
struct BoundedSemaphore;

#[pymethods]
impl BoundedSemaphore {
    #[new]
    #[pyo3(signature = (permits = Initial(1)))]
    fn new(permits: Initial) -> PyClassInitializer<Self> {
        let base = Semaphore {
            core: session::CoreCell::Fixed(Arc::new(local_core(permits.0))),
            name: None,
            role: Role::Bounded(Arc::new(AtomicUsize::new(0))),
            entered: AtomicBool::new(false),
        };
        PyClassInitializer::from(base).add_subclass(BoundedSemaphore)
    }

    fn __repr__(slf: PyRef<'_, Self>) -> String {
        let base = slf.as_super();
        match base.core.get() {
            Ok(core) => format!(
                "<volt_sem.BoundedSemaphore available={}{}>",
                core.available_permits(),
                if core.is_closed() { " closed" } else { "" }
            ),
            Err(_) => "<volt_sem.BoundedSemaphore>".to_owned(),
        }
    }
}

/// `threading.main_thread().ident`, read once when the module is imported.
static MAIN_THREAD_IDENT: AtomicU64 = AtomicU64::new(0);

/// Whether the calling thread is the interpreter's main thread: a plain C
/// query, no Python code. (Running Python code here, such as
/// `threading.main_thread()`, can raise a pending `KeyboardInterrupt`, which
/// a caller that only wants a yes or no would swallow.)
pub(crate) fn on_main_thread() -> bool {
    // SAFETY: a plain query of the calling thread's identifier.
    let me = unsafe { pyo3::ffi::PyThread_get_thread_ident() } as u64;
    me == MAIN_THREAD_IDENT.load(Ordering::Relaxed)
}

/// The native part of `volt_sem`; import `volt_sem` instead.
#[pymodule]
fn _volt_sem(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let main: u64 = py
        .import("threading")?
        .call_method0("main_thread")?
        .getattr("ident")?
        .extract()?;
    MAIN_THREAD_IDENT.store(main, Ordering::Relaxed);
    m.add_class::<Semaphore>()?;
    m.add_class::<BoundedSemaphore>()?;
    m.add_class::<locks::Mutex>()?;
    m.add_class::<locks::RwLock>()?;
    m.add_class::<Acquire>()?;
    m.add_class::<Ready>()?;
    m.add_class::<Channel>()?;
    m.add_class::<TrioWaiter>()?;
    m.add_class::<redis::RedisSemaphore>()?;
    m.add_class::<redis::RedisAcquire>()?;
    m.add_class::<redis::OffLoopCall>()?;
    m.add_class::<session::RedisConnect>()?;
    m.add_class::<redis::LeaseLost>()?;
    m.add("MAX_REDIS_PERMITS", volt_sem_backend::redis::MAX_PERMITS)?;
    m.add("ClosedError", py.get_type::<errors::ClosedError>())?;
    m.add("SharedError", py.get_type::<errors::SharedError>())?;
    m.add(
        "InvalidNameError",
        py.get_type::<errors::InvalidNameError>(),
    )?;
    m.add(
        "TotalMismatchError",
        py.get_type::<errors::TotalMismatchError>(),
    )?;
    m.add(
        "VersionMismatchError",
        py.get_type::<errors::VersionMismatchError>(),
    )?;
    m.add(
        "NotASegmentError",
        py.get_type::<errors::NotASegmentError>(),
    )?;
    m.add("QueueFullError", py.get_type::<errors::QueueFullError>())?;
    m.add(
        "ProcessTableFullError",
        py.get_type::<errors::ProcessTableFullError>(),
    )?;
    m.add("NotHeldError", py.get_type::<errors::NotHeldError>())?;
    m.add("ForkedError", py.get_type::<errors::ForkedError>())?;
    m.add(
        "DisconnectedError",
        py.get_type::<errors::DisconnectedError>(),
    )?;
    m.add("CorruptError", py.get_type::<errors::CorruptError>())?;
    m.add("MAX_NAME_LEN", volt_sem_backend::MAX_NAME_LEN)?;
    m.add("MAX_SHARED_PERMITS", volt_sem_backend::shm::MAX_PERMITS)?;
    m.add("MAX_PERMITS", MAX_PERMITS)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(blocking::_interpreter_exiting, m)?)?;
    m.add_function(wrap_pyfunction!(session::_disconnect_all, m)?)?;
    Ok(())
}
