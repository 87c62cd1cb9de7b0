//! `volt_sem._volt_sem`: the Python binding of volt-sem (asyncio, uvloop, trio,
//! anyio and plain threads, all on one semaphore).
//!
//! One Rust [`volt_sem::Semaphore`] backs every Python object (`Semaphore`,
//! `Mutex` = 1 permit, `RwLock` = `MAX_PERMITS` permits with writers taking all of
//! them), and one waiter implementation serves all of them. `Semaphore.open`
//! gives a `Semaphore` whose core is instead the named semaphore shared by the
//! processes of the machine, `Semaphore.connect` one whose core is stored in
//! Redis: all are a [`volt_sem_backend::Semaphore`], so every method, the
//! asyncio/trio awaitable and the blocking wait work unchanged on each (the
//! shared and Redis wake callbacks run on the doorbell or agent thread, which
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
//! * `redis`: what `Semaphore.connect` adds (a `Semaphore` whose core is
//!   the seam's Redis variant): the grants' tokens and sessions, the lease
//!   watch, the census, and where a call that waits for a round trip runs;
//! * `session`: the sessions of the shared handles (`disconnect`, the `with`
//!   forms, `close_for_everyone`, `disconnect_on_signals`' list of handles);
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
mod detached;
mod errors;
mod future;
mod inspect;
mod interpreter;
mod locks;
mod redis;
mod session;
mod stats;
mod total;
mod trio;
mod wake;
mod wake_socket;

use awaitable::{enter_one_in, finished, ready, Acquire, Ready, Role};
use blocking::blocking_acquire;
use errors::{
    acquire_error, backend_error, count, release_error, timeout_arg, Initial, Label, Mode, Name,
    Permits,
};
use pyo3::types::PyDict;
use trio::TrioWaiter;
use volt_sem_backend::{Error, OpenOptions};
use wake::{after_wakes, waking, Channel};

pub(crate) type Core = volt_sem_backend::Semaphore;

/// The largest number of permits a semaphore can hold, and the largest request.
pub(crate) const MAX_PERMITS: usize = Core::MAX_PERMITS;

/// A local (in-process) core with `permits` permits (already checked to be at
/// most `MAX_PERMITS`), recording its `stats()` from the start as every
/// handle the seam makes does (`Core::local`, whose `Option` only says "above
/// `MAX_PERMITS`", which the callers ruled out).
pub(crate) fn local_core(permits: usize) -> Core {
    Core::local(permits).expect("a checked count is at most MAX_PERMITS")
}

/// Whether the caller holds the only reference to `obj` (a reused
/// object's check: nobody else can see it change). Read with the GIL held,
/// so no other thread changes the count meanwhile.
pub(crate) fn only_reference(obj: &Bound<'_, PyAny>) -> bool {
    // SAFETY: `obj` is a live object; reading its count is a plain load.
    unsafe { pyo3::ffi::Py_REFCNT(obj.as_ptr()) == 1 }
}

/// The core a finished acquire of an ended session holds instead of the
/// attachment: a local semaphore of 0 permits, never used.
pub(crate) fn inert_core() -> Arc<Core> {
    static INERT: std::sync::OnceLock<Arc<Core>> = std::sync::OnceLock::new();
    INERT.get_or_init(|| Arc::new(crate::local_core(0))).clone()
}

/// A fair, weighted, thread-safe async counting semaphore.
///
/// `Semaphore(permits=1)`. Waiters are served in strict FIFO order, weights
/// included: a waiting `acquire(3)` is never overtaken by later `acquire(1)`s; it
/// accumulates released permits until it has all three. One semaphore can be
/// shared at once by asyncio (or uvloop) loops and trio runs on any threads, and
/// by plain threads using `acquire_blocking`. `Semaphore.open` and
/// `Semaphore.connect` give one shared by processes, or by every host.
#[pyclass(module = "volt_sem", frozen, weakref, subclass)]
struct Semaphore {
    /// Fixed for a local semaphore; a named or Redis one's session, which
    /// `disconnect()` ends.
    core: session::CoreCell,
    /// The name of a shared semaphore (`Semaphore.open`, `Semaphore.connect`);
    /// `None` for a local one.
    name: Option<String>,
    /// A Redis handle's own state (`None`: local or named).
    redis: Option<Arc<redis::Extra>>,
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
            redis: None,
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
    /// only trust one shared with you on purpose). `label`: how `inspect()`
    /// (in every process) names this process's holds and queued requests: 1
    /// to 128 bytes of printable ASCII without spaces; default
    /// `"<hostname>:<pid>"`; one per process and name (while the process has
    /// the name open, a further `open` keeps the first label). `resize`: when
    /// the name exists with another total, change its total to `permits` for
    /// every process (as `set_total` does) instead of raising
    /// `TotalMismatchError`; for a rolling deploy that changes the total (the
    /// last `open` with `resize=True` wins). Errors change
    /// nothing: `InvalidLabelError` (a `ValueError`),
    /// `TotalMismatchError` (the name exists with another total and `resize`
    /// is false),
    /// `VersionMismatchError` (a segment of another layout version),
    /// `LibcMismatchError` (a segment made by a build for another C library),
    /// `NotASegmentError`, `InvalidNameError`,
    /// `PermissionError`, `ValueError` (bad `permits` or `mode`),
    /// `TimeoutError` (the segment's locks stayed held for 5 s), `CorruptError`,
    /// `OSError` (e.g. `/dev/shm` full), `NotImplementedError` (not Linux).
    #[classmethod]
    #[pyo3(
        signature = (name, permits, *, create = None, mode = Mode(0o600), accept_foreign_owner = false, label = None, resize = false),
        text_signature = "($cls, name, permits, *, create=None, mode=0o600, accept_foreign_owner=False, label=None, resize=False)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn open(
        _cls: &Bound<'_, pyo3::types::PyType>,
        py: Python<'_>,
        name: Name,
        permits: &Bound<'_, PyAny>,
        create: Option<bool>,
        mode: Mode,
        accept_foreign_owner: bool,
        label: Option<Label>,
        resize: bool,
    ) -> PyResult<Self> {
        let Name(name) = name;
        let permits = count(permits, "permits")?;
        let mode = mode.0;
        let options = match create {
            None => OpenOptions::new(),
            Some(true) => OpenOptions::new().create_only(),
            Some(false) => OpenOptions::new().attach_only(),
        }
        .mode(mode | 0o600)
        .accept_foreign_owner(accept_foreign_owner)
        .resize(resize);
        let options = match label {
            Some(label) => options.label(label.0),
            None => options,
        };
        // The GIL is released: creation may wait for another process's
        // initialisation of the same name (its init lock).
        // Counting what it holds: its `disconnect()` gives that back (the
        // seam's per-handle rule, as in C and Node).
        let core = py
            .detach(|| Core::open(&name, permits, options))
            .map_err(backend_error)?
            .counting_held();
        Ok(Semaphore {
            core: session::CoreCell::session(core),
            name: Some(name),
            redis: None,
            role: Role::Count,
            entered: AtomicBool::new(false),
        })
    }

    /// Connects to the semaphore `name` stored in the Redis at `url`, shared
    /// by every client on every host that connects to the same Redis, prefix
    /// and name, creating it with `permits` in total if it does not exist
    /// (`create=False`: only attach, as for `open`).
    /// Returns a `Semaphore` with every method of a local one, plus the
    /// Redis ones (`census`, `lease_lost`, `held_permits`, ...); the fencing
    /// token of a grant is the acquire object's `token` (`async with
    /// sem.acquire(n) as grant: grant.token`). Talks to Redis at once, GIL
    /// released, for up to `connect_timeout` seconds: from an event loop use
    /// `await Semaphore.connect_async(...)`.
    ///
    /// `with Semaphore.connect(...) as sem:` disconnects the handle on exit
    /// (`disconnect()`); a handle nobody references any more ends its
    /// session when collected (what it held goes to the next waiter).
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
    /// `NOT_REPLICATED`) and gives the session up. `label`: how `inspect()`
    /// (on every host) names this handle's holds and queued requests: 1 to
    /// 128 bytes of printable ASCII without spaces; default
    /// `"<hostname>:<pid>"`. `resize`: when the semaphore exists with another
    /// total, change its total to `permits` for every client (as `set_total`
    /// does) instead of raising `TotalMismatchError`; for a rolling deploy
    /// (the last connect with `resize=True` wins). `create`: `None` (the
    /// default) creates a missing semaphore; `False` only attaches: no
    /// semaphore of that name (under `prefix`) raises `FileNotFoundError`
    /// and nothing is written (checked in the script that would create it);
    /// `True` (create only, as for `open`) is not offered for Redis and
    /// raises `ValueError`. Errors: `InvalidUrlError`,
    /// `InvalidLabelError` (a `ValueError`; both before any connection),
    /// `InvalidNameError`, `ValueError`, `AuthenticationError`,
    /// `RedisConnectionError`, `TotalMismatchError` (another total without
    /// `resize`; nothing changed), `FileNotFoundError` (`create=False`).
    #[classmethod]
    #[pyo3(
        signature = (url, name, permits, *, lease = 10.0, prefix = "volt-sem".to_owned(), connect_timeout = 5.0, command_timeout = 5.0, cluster = false, tls_ca_file = None, tls_client_cert = None, min_replicas_acked = None, label = None, resize = false, create = None),
        text_signature = "($cls, url, name, permits, *, lease=10.0, prefix='volt-sem', connect_timeout=5.0, command_timeout=5.0, cluster=False, tls_ca_file=None, tls_client_cert=None, min_replicas_acked=None, label=None, resize=False, create=None)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn connect(
        _cls: &Bound<'_, pyo3::types::PyType>,
        py: Python<'_>,
        url: String,
        name: Name,
        permits: &Bound<'_, PyAny>,
        lease: f64,
        prefix: String,
        connect_timeout: f64,
        command_timeout: f64,
        cluster: bool,
        tls_ca_file: Option<std::path::PathBuf>,
        tls_client_cert: Option<(std::path::PathBuf, std::path::PathBuf)>,
        min_replicas_acked: Option<(usize, f64)>,
        label: Option<Label>,
        resize: bool,
        create: Option<bool>,
    ) -> PyResult<Self> {
        let attach_only = match create {
            None => false,
            Some(false) => true,
            Some(true) => {
                return Err(pyo3::exceptions::PyValueError::new_err(
                    "create=True (create only) is not available for a Redis semaphore: \
                     connect creates a missing one by default, create=False only attaches",
                ))
            }
        };
        let Name(name) = name;
        let options = redis::endpoint(
            &prefix,
            connect_timeout,
            command_timeout,
            cluster,
            tls_ca_file,
            tls_client_cert,
        )?;
        let (core, extra) = redis::connect(
            py,
            url,
            &name,
            permits,
            lease,
            prefix,
            options,
            min_replicas_acked,
            label.map(|l| l.0),
            resize,
            attach_only,
        )?;
        Ok(Semaphore {
            core: session::CoreCell::session(core),
            name: Some(name),
            redis: Some(Arc::new(extra)),
            role: Role::Count,
            entered: AtomicBool::new(false),
        })
    }

    /// `connect` off the event loop: `await Semaphore.connect_async(...)`
    /// connects on a thread of the loop's executor (trio: a worker thread)
    /// while the loop runs on. Also `async with Semaphore.connect_async(...)
    /// as sem:`, which disconnects the handle (off the loop) on exit. Same
    /// arguments as `connect`.
    #[classmethod]
    #[pyo3(
        signature = (*args, **kwargs),
        text_signature = "($cls, url, name, permits, *, lease=10.0, prefix='volt-sem', connect_timeout=5.0, command_timeout=5.0, cluster=False, tls_ca_file=None, tls_client_cert=None, min_replicas_acked=None, label=None, resize=False, create=None)"
    )]
    fn connect_async<'py>(
        cls: &Bound<'py, pyo3::types::PyType>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = cls.py();
        let connect = cls.getattr(pyo3::intern!(py, "connect"))?;
        py.import("volt_sem._offloop")?
            .getattr("RedisConnect")?
            .call1((connect, args, kwargs))
    }

    /// Deletes the Redis semaphore `name` (its keys under `prefix`):
    /// refused with `InUseError` while it has a live session (a client that
    /// holds, waits or is connected), `FileNotFoundError` if there is none.
    /// One connection and one script, GIL released (up to the connect
    /// timeout); no session. (`RedisSemaphore.delete`, deprecated, is this.)
    #[staticmethod]
    #[pyo3(
        signature = (url, name, *, prefix = "volt-sem".to_owned(), connect_timeout = 5.0, command_timeout = 5.0, cluster = false, tls_ca_file = None, tls_client_cert = None),
        text_signature = "(url, name, *, prefix='volt-sem', connect_timeout=5.0, command_timeout=5.0, cluster=False, tls_ca_file=None, tls_client_cert=None)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn delete_redis(
        py: Python<'_>,
        url: String,
        name: Name,
        prefix: String,
        connect_timeout: f64,
        command_timeout: f64,
        cluster: bool,
        tls_ca_file: Option<std::path::PathBuf>,
        tls_client_cert: Option<(std::path::PathBuf, std::path::PathBuf)>,
    ) -> PyResult<()> {
        let options = redis::endpoint(
            &prefix,
            connect_timeout,
            command_timeout,
            cluster,
            tls_ca_file,
            tls_client_cert,
        )?;
        redis::delete(py, url, name.0, options)
    }

    /// Removes the name of a shared semaphore: processes that opened it keep
    /// using it, and the next `open` of the name creates a new one.
    /// `FileNotFoundError` if no semaphore has this name.
    #[staticmethod]
    #[pyo3(text_signature = "(name)")]
    fn unlink(name: Name) -> PyResult<()> {
        volt_sem_backend::unlink(&name.0).map_err(backend_error)
    }

    /// The name of a shared semaphore (`Semaphore.open`, `Semaphore.connect`),
    /// `None` for a local one.
    #[getter]
    fn name(&self) -> Option<String> {
        self.name.clone()
    }

    /// The key prefix of a Redis semaphore; `None` for the others.
    #[getter]
    fn prefix(&self) -> Option<String> {
        self.redis.as_ref().map(|r| r.prefix().to_owned())
    }

    /// The fixed total of a shared or Redis semaphore; `None` for a local
    /// one (whose releases may add permits).
    #[getter]
    fn total_permits(&self) -> PyResult<Option<usize>> {
        Ok(self.core.get()?.total_permits())
    }

    /// Redis: permits this handle holds in its current session, as it counts
    /// them (no round trip). `TypeError` on a local or named semaphore.
    #[getter]
    fn held_permits(&self) -> PyResult<usize> {
        let core = self.core.get()?;
        match core.as_redis() {
            Some(r) => Ok(r.held_permits()),
            None => Err(redis::needs_redis("held_permits")),
        }
    }

    /// Redis: the fencing token of the calling task's (or thread's) latest
    /// grant on this handle not yet released (`try_acquire`,
    /// `acquire_blocking` and `async with sem:` give no object to read it
    /// from); `None` if it holds none, and always on a local or named
    /// semaphore.
    #[getter]
    fn last_token(&self, py: Python<'_>) -> PyResult<Option<u64>> {
        match &self.redis {
            Some(extra) => extra.last_token(py),
            None => Ok(None),
        }
    }

    /// Waits for `n` permits (FIFO, weights included); `await` returns `True`.
    /// Also `async with sem.acquire(n) as grant:`, which releases the `n`
    /// permits on exit (`grant.token`: a Redis grant's fencing token).
    /// Raises `ClosedError` if the semaphore is (or gets) closed while waiting.
    #[pyo3(signature = (n = Permits(1)), text_signature = "($self, n=1)")]
    fn acquire(&self, n: Permits) -> PyResult<Acquire> {
        Ok(
            Acquire::new(self.core.get()?.into_owned(), n.0, self.role.clone(), true)
                .of_redis(self.redis.clone()),
        )
    }

    /// Returns `n` permits: to the oldest waiters first (on any thread or loop),
    /// the surplus to the counter. `OverflowError` if the available permits would
    /// exceed `MAX_PERMITS` (nothing is released then). Redis: the caller's
    /// own latest grants first; `NotHeldError` if the handle holds fewer,
    /// `LeaseExpiredError` if they were lost with an expired session
    /// (nothing is released twice).
    #[pyo3(signature = (n = Permits(1)), text_signature = "($self, n=1)")]
    fn release(&self, py: Python<'_>, n: Permits) -> PyResult<()> {
        let core = self.core.get()?;
        if self.redis.is_some() || !matches!(self.role, Role::Count) {
            return self.release_other(py, &core, n.0);
        }
        let (r, woke) = waking(py, || release_error(&core, n.0));
        r.and(woke)
    }

    /// `release(n)`, as an awaitable: a release never waits, so it is done
    /// when this returns (errors are raised here); kept for the code of
    /// `RedisSemaphore`.
    #[pyo3(signature = (n = Permits(1)), text_signature = "($self, n=1)")]
    fn release_async(&self, py: Python<'_>, n: Permits) -> PyResult<Py<Ready>> {
        self.release(py, n)?;
        ready(py)
    }

    /// Takes `n` permits if they are free right now and nobody waits; never
    /// waits. Redis: one round trip (GIL released); the grant's token is
    /// then `last_token`.
    #[pyo3(signature = (n = Permits(1)), text_signature = "($self, n=1)")]
    fn try_acquire(&self, py: Python<'_>, n: Permits) -> PyResult<bool> {
        let core = self.core.get()?;
        let me = match &self.redis {
            Some(_) => Some(redis::owner(py)?),
            None => None,
        };
        match detached::call(py, &core, |core| core.try_acquire(n.0)) {
            Ok(g) => {
                self.role.taken(n.0);
                if let (Some(extra), Some(me)) = (&self.redis, me) {
                    extra.granted(me, g.session(), n.0, g.token());
                }
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
    /// Redis: the grant's token is then `last_token`.
    #[pyo3(signature = (n = Permits(1), timeout = None), text_signature = "($self, n=1, timeout=None)")]
    fn acquire_blocking(&self, py: Python<'_>, n: Permits, timeout: Option<f64>) -> PyResult<bool> {
        let core = self.core.get()?;
        let timeout = timeout_arg(timeout)?;
        let me = match &self.redis {
            Some(_) => Some(redis::owner(py)?),
            None => None,
        };
        let Some((token, session)) = blocking_acquire(py, &core, n.0, timeout)? else {
            return Ok(false);
        };
        self.role.taken(n.0);
        if let (Some(extra), Some(me)) = (&self.redis, me) {
            extra.granted(me, session, n.0, token);
        }
        Ok(true)
    }

    /// Permits available right now (0 while anyone waits). Redis: one round
    /// trip (GIL released).
    #[getter]
    fn available_permits(&self, py: Python<'_>) -> PyResult<usize> {
        let core = self.core.get()?;
        match core.as_redis() {
            Some(r) => Ok(detached::call(py, &core, |_| r.census())
                .map_err(|e| backend_error(e.into()))?
                .available as usize),
            None => Ok(core.available_permits()),
        }
    }

    /// Whether an `acquire()` of one permit would have to wait. Redis: one
    /// round trip.
    #[pyo3(text_signature = "($self)")]
    fn locked(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(self.available_permits(py)? == 0)
    }

    /// Closes the semaphore: waiting acquires raise `ClosedError`, and so does
    /// every later acquire. Held permits can still be released. Idempotent.
    /// A shared or Redis semaphore refuses it with `TypeError`: it would
    /// close the limit for every process; use `disconnect()` to end this
    /// handle's session, or `close_for_everyone()`.
    #[pyo3(text_signature = "($self)")]
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        if self.core.is_shared() {
            return Err(session::shared_close_error(self.redis.is_some()));
        }
        self.close_for_everyone(py)
    }

    /// Refused with `TypeError` on a shared or Redis semaphore, as `close()`;
    /// on a local one, `close()` as an awaitable.
    #[pyo3(text_signature = "($self)")]
    fn close_async(&self, py: Python<'_>) -> PyResult<Py<Ready>> {
        self.close(py)?;
        ready(py)
    }

    /// Closes the semaphore for every process that uses it: its waiting
    /// acquires (in every process, on every host) raise `ClosedError`, and
    /// so does every later acquire; held permits can still be released.
    /// Idempotent. A closed shared semaphore stays closed until `reopen()`
    /// or until its name is removed (`Semaphore.unlink(name)`; Redis: `Semaphore.delete_redis(url,
    /// name)`, once no client is connected): the next `open` (`connect`) of
    /// the name then creates a new one. For a local semaphore, the same as
    /// `close()`. Redis: one round trip (GIL released).
    #[pyo3(text_signature = "($self)")]
    fn close_for_everyone(&self, py: Python<'_>) -> PyResult<()> {
        let core = self.core.get()?;
        let r = detached::call(py, &core, |core| core.close()).map_err(backend_error);
        let woke = after_wakes(py);
        r.and(woke)
    }

    /// `close_for_everyone()` off the event loop: an awaitable.
    #[pyo3(text_signature = "($self)")]
    fn close_for_everyone_async<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        slf.get().core.get()?;
        off_loop(slf, "close_for_everyone")
    }

    /// Whether the semaphore was closed (`close()`, `close_for_everyone()`,
    /// by any process for a shared one; Redis: as far as this handle's
    /// requests saw). `False` once disconnected.
    #[getter]
    fn closed(&self) -> bool {
        self.core.get().is_ok_and(|c| c.is_closed())
    }

    /// Ends this handle's session on a shared or Redis semaphore, leaving the
    /// semaphore open for every other handle and process (as C's
    /// `volt_sem_disconnect` and Node's `disconnect()`): its queued acquires
    /// (asyncio and trio tasks, blocking threads) raise `DisconnectedError`
    /// (a `ClosedError`) at once, what it holds goes to the next waiters at
    /// once, and every later call on this handle raises `DisconnectedError`.
    /// Named: what this handle holds is what was acquired through it and not
    /// released through it (also inside an `async with sem.acquire(n):`
    /// still running), as far as the process still holds it; another
    /// `Semaphore.open` of the same name in this process is another handle,
    /// whose permits stay held and which goes on. Redis: what its session
    /// holds (one round trip, GIL released; if Redis is out of reach, at the
    /// lease's expiry); when it returns, the handle's two
    /// threads have exited and its two Redis connections are closed, even
    /// while the handle (or an `Acquire` or `lease_lost()` of it) is still
    /// referenced (while Redis is out of reach, a session thread blocked in a
    /// call is waited for only until a command timeout has passed since the
    /// call began; it exits, closing its connection, when that call
    /// fails). Idempotent. `TypeError` on a local semaphore (it has no
    /// session; `close()` it).
    #[pyo3(text_signature = "($self)")]
    fn disconnect(&self, py: Python<'_>) -> PyResult<()> {
        if !self.core.is_shared() {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "disconnect() ends the session of a shared semaphore (Semaphore.open, \
                 Semaphore.connect); a local Semaphore has none: close() it",
            ));
        }
        self.core.end(py);
        Ok(())
    }

    /// `disconnect()` off the event loop: an awaitable.
    #[pyo3(text_signature = "($self)")]
    fn disconnect_async<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        if !slf.get().core.is_shared() {
            return slf
                .get()
                .disconnect(slf.py())
                .map(|_| slf.clone().into_any());
        }
        off_loop(slf, "disconnect")
    }

    /// Who holds the permits and who waits, in queue order (every backend):
    /// an `Inspection` with `total`, `available`, `closed`, `holders` and
    /// `waiters`. A named semaphore first reclaims what dead processes held;
    /// a Redis one reaps expired sessions (one round trip, GIL released).
    #[pyo3(text_signature = "($self)")]
    fn inspect(&self, py: Python<'_>) -> PyResult<inspect::Inspection> {
        let core = self.core.get()?;
        inspect::inspect(py, &core)
    }

    /// This handle's metrics: a frozen `Stats` with the counters since the
    /// handle was made (`grants`, `permits_granted`, `timeouts`, `cancels`,
    /// `lease_losses`, `reclaims_seen`), the gauges now (`available`,
    /// `held`, `queued`), `recording`, and `wait`, the `WaitHistogram` of
    /// its grants (seconds). Never blocks and never does I/O, on every
    /// backend: safe on an event loop's thread.
    #[pyo3(text_signature = "($self)")]
    fn stats(&self, py: Python<'_>) -> PyResult<stats::Stats> {
        let core = self.core.get()?;
        stats::stats(py, &core)
    }

    /// `inspect()` off the event loop: an awaitable that runs it on the
    /// loop's executor (trio: a worker thread), as `census_async` does.
    #[pyo3(text_signature = "($self)")]
    fn inspect_async<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        off_loop(slf, "inspect")
    }

    /// Redis: the conservation sums read in one script: `total`,
    /// `available`, `held` (by every client), `partial` (of queued acquires),
    /// `queued`, `sessions`, `closed`, `last_token`, `debt` (what a shrink
    /// still waits for). One round trip (GIL
    /// released). `TypeError` on a local or named semaphore.
    #[pyo3(text_signature = "($self)")]
    fn census<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let core = self.core.get()?;
        redis::census_dict(py, &core)
    }

    /// `census()` off the event loop: an awaitable.
    #[pyo3(text_signature = "($self)")]
    fn census_async<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        if slf.get().core.get()?.as_redis().is_none() {
            return Err(redis::needs_redis("census_async()"));
        }
        off_loop(slf, "census")
    }

    /// Changes the total of a named or Redis semaphore to `n` permits, for
    /// every process or client. Growing hands the new permits to the waiting
    /// acquires at once, in FIFO order (as a release would). Shrinking
    /// revokes nothing: what is held stays held, and the cut takes effect as
    /// permits come back (they pay the debt first, before any waiter). Either
    /// way, every waiting acquire for more than `n` raises `ValueError` at
    /// once (above the total, as such a request always did); the others keep
    /// their place. Works on a closed semaphore. Redis: one round trip (GIL
    /// released; from an event loop, `await set_total_async(n)`). `ValueError`
    /// (`n` 0 or above the backend's maximum; nothing changed); `TypeError`
    /// on a local semaphore (it has no shared total).
    #[pyo3(text_signature = "($self, n)")]
    fn set_total(&self, py: Python<'_>, n: &Bound<'_, PyAny>) -> PyResult<()> {
        let core = self.core.get()?;
        total::set_total(py, &core, n)
    }

    /// `set_total(n)` off the event loop: an awaitable.
    #[pyo3(text_signature = "($self, n)")]
    fn set_total_async<'py>(
        slf: &Bound<'py, Self>,
        n: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        total::shared_only(&**slf.get().core.get()?, "set_total_async()")?;
        off_loop_with(slf, "set_total", n)
    }

    /// Undoes `close_for_everyone()` of a named or Redis semaphore, for every
    /// process or client: later acquires work again. Acquires the close
    /// failed stay failed; a semaphore that is not closed is left as it is.
    /// Redis: one round trip (GIL released); a handle that saw the close
    /// learns of the reopen from its next request. `TypeError` on a local
    /// semaphore (its close is final).
    #[pyo3(text_signature = "($self)")]
    fn reopen(&self, py: Python<'_>) -> PyResult<()> {
        let core = self.core.get()?;
        total::reopen(py, &core)
    }

    /// `reopen()` off the event loop: an awaitable.
    #[pyo3(text_signature = "($self)")]
    fn reopen_async<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        total::shared_only(&**slf.get().core.get()?, "reopen_async()")?;
        off_loop(slf, "reopen")
    }

    /// Redis: completes when the session that holds this handle's latest
    /// grant is lost; `await` gives the exception (`LeaseExpiredError` or
    /// `StateLostError`) without raising it. `RuntimeError` before any
    /// grant; `TypeError` on a local or named semaphore.
    #[pyo3(text_signature = "($self)")]
    fn lease_lost(&self) -> PyResult<redis::LeaseLost> {
        let core = self.core.get()?;
        match &self.redis {
            Some(extra) => redis::LeaseLost::new(&core, extra),
            None => Err(redis::needs_redis("lease_lost()")),
        }
    }

    /// Redis: whether the session of this handle's latest grant was lost (no
    /// round trip; `False` before any grant). `TypeError` on a local or
    /// named semaphore.
    #[pyo3(text_signature = "($self)")]
    fn is_lease_lost(&self) -> PyResult<bool> {
        let core = self.core.get()?;
        match &self.redis {
            Some(extra) => Ok(extra.session_lost(&core)),
            None => Err(redis::needs_redis("is_lease_lost()")),
        }
    }

    /// `with Semaphore.open(name, permits) as sem:` (or `Semaphore.connect`)
    /// ends the handle's session on exit (`disconnect()`); it does not
    /// acquire (that is `with sem.acquire(n):`). `TypeError` on a local
    /// semaphore, and on a handle already inside a `with` block;
    /// `DisconnectedError` once disconnected.
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
        enter_one_in(py, &core, &self.role, self.redis.clone())
    }

    #[pyo3(signature = (*_args))]
    fn __aexit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        self.release(py, Permits(1))?;
        finished(py)
    }

    fn __repr__(&self) -> String {
        let Ok(core) = self.core.get() else {
            return format!(
                "<volt_sem.Semaphore name={:?} session=ended>",
                self.name.as_deref().unwrap_or("")
            );
        };
        if let (Some(r), Some(extra)) = (core.as_redis(), &self.redis) {
            // Never the URL (it may hold a password), and no round trip.
            return format!(
                "<volt_sem.Semaphore redis name={:?} prefix={:?} total={} held={}{} session=live>",
                self.name.as_deref().unwrap_or(""),
                extra.prefix(),
                r.total_permits(),
                r.held_permits(),
                if r.is_closed() { " closed" } else { "" },
            );
        }
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

impl Semaphore {
    /// `release(n)` of a Redis handle or a `BoundedSemaphore` (out of line:
    /// a counting semaphore's, the commonest, stays short).
    #[inline(never)]
    fn release_other(&self, py: Python<'_>, core: &Core, n: usize) -> PyResult<()> {
        if let Some(extra) = &self.redis {
            let r = extra.release(py, core, n);
            let woke = after_wakes(py);
            return r.and(woke);
        }
        self.role.release(py, core, n)
    }
}

/// An awaitable running `slf.<method>()` off the event loop (`_offloop.OffLoop`:
/// the loop's executor, or a trio worker thread).
fn off_loop<'py>(slf: &Bound<'py, Semaphore>, method: &str) -> PyResult<Bound<'py, PyAny>> {
    let py = slf.py();
    let f = slf.getattr(method)?;
    py.import("volt_sem._offloop")?
        .getattr("OffLoop")?
        .call1((f,))
}

/// `off_loop` of a method that takes one argument (bound with
/// `functools.partial`).
fn off_loop_with<'py>(
    slf: &Bound<'py, Semaphore>,
    method: &str,
    arg: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = slf.py();
    let f = slf.getattr(method)?;
    let bound = py
        .import("functools")?
        .getattr("partial")?
        .call1((f, arg))?;
    py.import("volt_sem._offloop")?
        .getattr("OffLoop")?
        .call1((bound,))
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
            redis: None,
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

/// In a child made by `fork()`: the forking thread is the main thread now
/// (CPython's rule), whichever thread of the parent it was.
pub(crate) fn set_main_thread_here() {
    // SAFETY: a plain query of the calling thread's identifier.
    let me = unsafe { pyo3::ffi::PyThread_get_thread_ident() } as u64;
    MAIN_THREAD_IDENT.store(me, Ordering::Relaxed);
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
    awaitable::init_finished(py)?;
    m.add_class::<Semaphore>()?;
    m.add_class::<BoundedSemaphore>()?;
    m.add_class::<locks::Mutex>()?;
    m.add_class::<locks::RwLock>()?;
    m.add_class::<Acquire>()?;
    m.add_class::<Ready>()?;
    m.add_class::<Channel>()?;
    m.add_class::<wake::Batch>()?;
    m.add_class::<TrioWaiter>()?;
    m.add_class::<redis::LeaseLost>()?;
    m.add_class::<inspect::Inspection>()?;
    m.add_class::<inspect::Holder>()?;
    m.add_class::<inspect::QueuedWaiter>()?;
    m.add_class::<stats::Stats>()?;
    m.add_class::<stats::WaitHistogram>()?;
    m.add("MAX_REDIS_PERMITS", volt_sem_backend::redis::MAX_PERMITS)?;
    errors::add_exceptions(m)?;
    m.add("MAX_NAME_LEN", volt_sem_backend::MAX_NAME_LEN)?;
    m.add("MAX_SHARED_PERMITS", volt_sem_backend::shm::MAX_PERMITS)?;
    m.add("MAX_PERMITS", MAX_PERMITS)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(interpreter::_interpreter_exiting, m)?)?;
    m.add_function(wrap_pyfunction!(interpreter::_exit_gate_threads_inside, m)?)?;
    m.add_function(wrap_pyfunction!(interpreter::_forked_child, m)?)?;
    m.add_function(wrap_pyfunction!(session::_disconnect_all, m)?)?;
    Ok(())
}
