//! What `Semaphore.connect` adds to the one `Semaphore`: the Redis
//! backend's own state and methods, thin over the seam.
//!
//! A Redis handle is a `Semaphore` whose core is the seam's Redis variant:
//! `acquire`, `release`, the asyncio/trio awaitable and the blocking wait are
//! the ones of the local and named semaphores (`awaitable`, `blocking`,
//! `wake`). This module holds what only Redis has: the connect arguments,
//! the grants' fencing tokens and sessions per caller ([`Extra`]), the
//! `lease_lost()` awaitable and the census. How a call that waits for Redis
//! runs is decided in `detached.rs` ([`call`], [`round_trip`]).
//!
//! # Round trips and the main thread
//!
//! The seam never makes a round trip on the calling thread: a Redis
//! handle's door thread (in the redis crate) makes them all, in order. So
//! `acquire_raw`, a queued waiter's `finish_raw` and `release` return at
//! once and run in place, GIL held, as on a local semaphore; the calls that
//! answer (`try_acquire`, `close`, `census`, `disconnect`) wait for the
//! door with the GIL released ([`call`]), a wait that a signal does not
//! break (Python sees a Ctrl-C once it returned). Only `connect` and
//! deleting a name, which have no door yet, talk to Redis on the caller's
//! thread: [`round_trip`] runs them, on the main thread on a short-lived
//! thread of their own: Linux delivers a process-directed signal (Ctrl-C)
//! to the main thread, and an interrupted socket call would count as a
//! failed connection. The `*_async` forms run the waiting ones off the
//! event loop with `loop.run_in_executor` (trio: `trio.to_thread.run_sync`),
//! see `volt_sem/_offloop.py`.
//!
//! # Tokens and sessions, per caller
//!
//! Permits are held by count per handle. Each grant belongs to the handle's
//! current Redis session; the handle remembers the session of its latest
//! grant, which `lease_lost()` and `is_lease_lost()` watch. A plain
//! `release(n)` releases the caller's own latest grants (the caller: the
//! running asyncio or trio task, else the thread, see [`owner`]), so that a
//! task whose grant was lost with a session and a task granted in the next
//! one each release their own, in any order; `last_token` reads the
//! caller's latest grant's token.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use pyo3::exceptions::{PyRuntimeError, PyStopIteration, PyTypeError, PyValueError};
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyDict;
use pyo3::PyTraverseError;
use volt_sem_backend::{ConnectOptions, Error, LeaseWatch};

use crate::awaitable::wait_on;
use crate::coroutine::coroutine_pymethods;
use crate::detached::{call, round_trip};
use crate::errors::{backend_error, count};
use crate::future::{new_future, yield_future};
use crate::inert_core;
use crate::interpreter::running_loop;
use crate::wake::{asyncio_chan_or_setup, claim_owner, push_to_loop, waking, Chan, Channel, Slot};
use crate::Core;

/// Who acquires or releases: the running asyncio task, else the running
/// trio task (their addresses), else the thread.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Owner {
    Task(usize),
    Thread(std::thread::ThreadId),
}

impl Owner {
    pub(crate) fn thread() -> Self {
        Owner::Thread(std::thread::current().id())
    }
}

/// The current [`Owner`]. `asyncio.current_task()` (or trio's) raises
/// outside a running loop (or run): then the thread owns the grant.
///
/// Both are Python functions: running their bytecode runs any pending
/// signal handler, so a Ctrl-C that arrived during the previous round trip
/// surfaces here as `KeyboardInterrupt`. That is raised (never taken for
/// "no task"), and before any round trip of the caller: an interrupted
/// owner lookup has acquired or released nothing.
pub(crate) fn owner(py: Python<'_>) -> PyResult<Owner> {
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
    Ok(task.map_or_else(Owner::thread, Owner::Task))
}

/// One grant not yet released.
#[derive(Clone, Copy)]
struct Record {
    owner: Owner,
    session: u64,
    n: usize,
    token: Option<u64>,
}

/// The Redis state of a `Semaphore` handle (see the module docs).
pub(crate) struct Extra {
    prefix: String,
    /// The pending `lease_lost()` awaitables.
    watchers: Arc<Mutex<Watchers>>,
    /// The session of the latest grant (0: none yet).
    last_session: AtomicU64,
    /// The grants not yet released, oldest first.
    grants: Mutex<Vec<Record>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Extra {
    pub(crate) fn new(prefix: String) -> Self {
        Extra {
            prefix,
            watchers: Arc::default(),
            last_session: AtomicU64::new(0),
            grants: Mutex::default(),
        }
    }

    pub(crate) fn prefix(&self) -> &str {
        &self.prefix
    }

    /// A grant of `n` in `session` to `owner` (looked up before the round
    /// trip that granted it, see [`owner`]).
    pub(crate) fn granted(&self, owner: Owner, session: u64, n: usize, token: Option<u64>) {
        if session != 0 {
            self.last_session.store(session, Ordering::Relaxed);
            lock(&self.grants).push(Record {
                owner,
                session,
                n,
                token,
            });
        }
    }

    /// A grant released by the object that acquired it for `me` (its own
    /// session): forgotten, that owner's record first.
    pub(crate) fn forget_grant(&self, me: Owner, session: u64, n: usize) {
        let mut g = lock(&self.grants);
        let i = g
            .iter()
            .rposition(|r| r.owner == me && r.session == session && r.n == n)
            .or_else(|| g.iter().rposition(|r| r.session == session && r.n == n));
        if let Some(i) = i {
            g.remove(i);
        }
    }

    /// The token of the caller's latest grant not yet released.
    pub(crate) fn last_token(&self, py: Python<'_>) -> PyResult<Option<u64>> {
        let me = owner(py)?;
        Ok(lock(&self.grants)
            .iter()
            .rev()
            .find(|r| r.owner == me)
            .and_then(|r| r.token))
    }

    /// The session a plain `release(n)` of the current owner releases from:
    /// its latest grants, if they cover `n` and are of one session (taken
    /// off the records); else 0, counted per handle (permits acquired by one
    /// task and released by another, or `n` spanning sessions). An `Err` is
    /// a pending signal's exception, raised before anything was released.
    fn session_for_release(&self, py: Python<'_>, n: usize) -> PyResult<u64> {
        let me = owner(py)?;
        let mut g = lock(&self.grants);
        let (mut need, mut session) = (n, 0);
        for r in g.iter().rev().filter(|r| r.owner == me) {
            if session != 0 && r.session != session {
                return Ok(0);
            }
            session = r.session;
            need -= need.min(r.n);
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
            if g[i].owner != me {
                continue;
            }
            let take = need.min(g[i].n);
            g[i].n -= take;
            need -= take;
            if g[i].n == 0 {
                g.remove(i);
            }
        }
        Ok(session)
    }

    /// `release(n)` of the caller: per grant when its own grants cover `n`.
    pub(crate) fn release(&self, py: Python<'_>, core: &Core, n: usize) -> PyResult<()> {
        let session = self.session_for_release(py, n)?;
        let r = release_from(core, n, session);
        if session == 0 {
            self.trim(core);
        }
        r
    }

    /// After a release counted per handle (permits one caller acquired,
    /// given back by another): the records of the sessions still live may
    /// then cover more than the handle holds; the oldest go until they
    /// cover at most that. Without this, each such release left its
    /// acquirer's record for good (a table growing by one per cycle, which
    /// every release scans, and that a later task or thread at the same
    /// address took for its own: its `last_token` while holding nothing).
    /// A lost session's records stay: their owners' release must still
    /// fail with `LeaseExpiredError`.
    fn trim(&self, core: &Core) {
        let Some(r) = core.as_redis() else {
            return;
        };
        let held = r.held_permits();
        let mut g = lock(&self.grants);
        // Lease checks once per session (a handle has one live at a time).
        let mut lost: Vec<(u64, bool)> = Vec::new();
        let mut is_lost = |session: u64| match lost.iter().find(|(s, _)| *s == session) {
            Some(&(_, l)) => l,
            None => {
                let l = core.lease_watch(session).is_some_and(|w| w.is_lost());
                lost.push((session, l));
                l
            }
        };
        let live: Vec<bool> = g.iter().map(|rec| !is_lost(rec.session)).collect();
        let mut covered: usize = g
            .iter()
            .zip(&live)
            .filter(|(_, &l)| l)
            .fold(0usize, |a, (rec, _)| a.saturating_add(rec.n));
        let mut live = live.into_iter();
        g.retain_mut(|rec| {
            let is_live = live.next().unwrap_or(false);
            if covered <= held || !is_live {
                return true;
            }
            let take = (covered - held).min(rec.n);
            rec.n -= take;
            covered -= take;
            rec.n > 0
        });
    }

    pub(crate) fn session_lost(&self, core: &Core) -> bool {
        let session = self.last_session.load(Ordering::Relaxed);
        session != 0 && core.lease_watch(session).is_some_and(|w| w.is_lost())
    }
}

/// Releases `n` permits of `session` (0: counted per handle).
pub(crate) fn release_from(core: &Core, n: usize, session: u64) -> PyResult<()> {
    match core.as_redis() {
        Some(r) if session != 0 => r.release_session(n, session).map_err(Error::from),
        _ => core.release(n),
    }
    .map_err(redis_error)
}

/// Releases a grant nobody will hold (a cancel that met it): a Redis one
/// per its session.
pub(crate) fn give_back(py: Python<'_>, slot: &Slot) {
    let (_, woke) = waking(py, || {
        release_from(&slot.core, slot.n, slot.waiter().session())
    });
    crate::wake::unraisable(py, woke);
}

/// The exception of a request's error; `NotHeld` names the handle (the
/// seam's text names the process, as for a shared semaphore).
pub(crate) fn redis_error(e: Error) -> PyErr {
    match e {
        Error::NotHeld { held } => crate::errors::NotHeldError::new_err((
            format!("released more permits than this handle holds ({held})"),
            held,
        )),
        e => backend_error(e),
    }
}

/// The `TypeError` of a Redis-only method on a local or named semaphore.
pub(crate) fn needs_redis(what: &str) -> PyErr {
    PyTypeError::new_err(format!(
        "{what} needs a semaphore stored in Redis (Semaphore.connect); this one is local or \
         named (Semaphore.open)"
    ))
}

pub(crate) fn census_dict<'py>(py: Python<'py>, core: &Core) -> PyResult<Bound<'py, PyDict>> {
    let Some(r) = core.as_redis() else {
        return Err(needs_redis("census()"));
    };
    let c = call(py, core, |_| r.census()).map_err(|e| backend_error(e.into()))?;
    let d = PyDict::new(py);
    d.set_item("total", c.total)?;
    d.set_item("available", c.available)?;
    d.set_item("held", c.held)?;
    d.set_item("partial", c.partial)?;
    d.set_item("queued", c.queued)?;
    d.set_item("sessions", c.sessions)?;
    d.set_item("closed", c.closed)?;
    d.set_item("last_token", c.last_token)?;
    d.set_item("debt", c.debt)?;
    Ok(d)
}

/// Seconds to a positive duration (`ValueError` otherwise); a positive
/// value below a nanosecond is the shortest duration there is, 1 ns (not 0,
/// which the options refuse as not positive).
fn seconds(v: f64, what: &str) -> PyResult<Duration> {
    if v.is_nan() || v <= 0.0 {
        return Err(PyValueError::new_err(format!("{what} must be > 0 seconds")));
    }
    Duration::try_from_secs_f64(v)
        .map(|d| d.max(Duration::from_nanos(1)))
        .map_err(|_| PyValueError::new_err(format!("{what} is too large")))
}

/// The connection options shared by `connect` and `delete_redis`.
pub(crate) fn endpoint(
    prefix: &str,
    connect_timeout: f64,
    command_timeout: f64,
    cluster: bool,
    tls_ca_file: Option<std::path::PathBuf>,
    tls_client_cert: Option<(std::path::PathBuf, std::path::PathBuf)>,
) -> PyResult<ConnectOptions> {
    let mut options = ConnectOptions::new()
        .prefix(prefix)
        .connect_timeout(seconds(connect_timeout, "connect_timeout")?)
        .command_timeout(seconds(command_timeout, "command_timeout")?)
        .cluster(cluster);
    if let Some(ca) = tls_ca_file {
        options = options.tls_ca_file(ca);
    }
    if let Some((cert, key)) = tls_client_cert {
        options = options.tls_client_cert(cert, key);
    }
    Ok(options)
}

/// `Semaphore.connect`: checks the arguments, then connects (a round trip,
/// see [`round_trip`]); the core and the handle's [`Extra`].
#[allow(clippy::too_many_arguments)]
pub(crate) fn connect(
    py: Python<'_>,
    url: String,
    name: &str,
    permits: &Bound<'_, PyAny>,
    lease: f64,
    prefix: String,
    options: ConnectOptions,
    min_replicas_acked: Option<(usize, f64)>,
    label: Option<String>,
    resize: bool,
    attach_only: bool,
) -> PyResult<(Core, Extra)> {
    let permits = count(permits, "permits")?;
    let max = volt_sem_backend::redis::MAX_PERMITS;
    if permits == 0 || permits > max {
        return Err(PyValueError::new_err(format!(
            "permits must be between 1 and {max}"
        )));
    }
    let mut options = options.lease(seconds(lease, "lease")?).resize(resize);
    if attach_only {
        options = options.attach_only();
    }
    if let Some((replicas, timeout)) = min_replicas_acked {
        options =
            options.min_replicas_acked(replicas, seconds(timeout, "min_replicas_acked timeout")?);
    }
    if let Some(label) = label {
        options = options.label(label);
    }
    let core =
        round_trip(py, || Core::connect(&url, name, permits, options)).map_err(connect_error)?;
    Ok((core, Extra::new(prefix)))
}

/// `Semaphore.delete_redis`: one connection and one script, no session.
pub(crate) fn delete(
    py: Python<'_>,
    url: String,
    name: String,
    options: ConnectOptions,
) -> PyResult<()> {
    round_trip(py, || volt_sem_backend::delete_redis(&url, &name, options)).map_err(connect_error)
}

fn connect_error(e: Error) -> PyErr {
    match e {
        // The seam's text states both backends' rules; here only Redis's applies.
        Error::InvalidName => crate::errors::InvalidNameError::new_err(format!(
            "invalid semaphore name (1 to {} bytes, without '{{', '}}' or NUL)",
            volt_sem_backend::redis::MAX_NAME_LEN
        )),
        Error::TotalMismatch { existing } => crate::errors::total_mismatch_error(existing, true),
        e => backend_error(e),
    }
}

// ---------------------------------------------------------------------------
// lease_lost()
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

/// The waker registered for a session: it hands the watching slots to their
/// loops. It runs under the backend's session lock, which the drop of the
/// backend handle takes: it holds no reference to the core, and the slots
/// it delivers hold the inert core, never the Redis one, so nothing it
/// drops can drop the handle.
struct SessionWake {
    watchers: Arc<Mutex<Watchers>>,
    session: u64,
}

impl Wake for SessionWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        deliver_lost(&self.watchers, self.session);
    }
}

/// Delivers the slots waiting for the loss of `session`.
fn deliver_lost(watchers: &Mutex<Watchers>, session: u64) {
    let slots = {
        let mut w = lock(watchers);
        if w.session != session {
            return;
        }
        w.registered = false;
        std::mem::take(&mut w.slots)
    };
    for slot in slots {
        push_to_loop(slot, false);
    }
}

enum Watching {
    Start,
    Waiting(Pin<Arc<Slot>>),
    Done,
}

/// `await sem.lease_lost()`: the exception of the lost session.
#[pyclass(module = "volt_sem")]
pub(crate) struct LeaseLost {
    watchers: Arc<Mutex<Watchers>>,
    watch: LeaseWatch,
    session: u64,
    stage: Watching,
    /// trio: the loss found when the watch started.
    early: Option<Error>,
}

impl LeaseLost {
    /// `sem.lease_lost()`: `RuntimeError` before any grant.
    pub(crate) fn new(core: &Core, extra: &Extra) -> PyResult<Self> {
        let session = extra.last_session.load(Ordering::Relaxed);
        if session == 0 {
            return Err(PyRuntimeError::new_err(
                "lease_lost(): this handle has not been granted anything yet",
            ));
        }
        let watch = core
            .lease_watch(session)
            .ok_or_else(|| needs_redis("lease_lost()"))?;
        Ok(LeaseLost {
            watchers: extra.watchers.clone(),
            watch,
            session,
            stage: Watching::Start,
            early: None,
        })
    }

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

    /// Starts watching, `target` to be woken on `chan` at the loss; the loss
    /// itself if the session is lost already (then nothing waits).
    fn begin(&mut self, target: Py<PyAny>, chan: Arc<Chan>) -> Option<Error> {
        if let Some(e) = self.check() {
            self.stage = Watching::Done;
            return Some(e);
        }
        let slot = Slot::new(inert_core(), 0, target, chan);
        let register = {
            let mut w = lock(&self.watchers);
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
                watchers: self.watchers.clone(),
                session: self.session,
            }));
            let mut cx = Context::from_waker(&waker);
            if let Poll::Ready(e) = Pin::new(&mut self.watch).poll(&mut cx) {
                // Lost meanwhile: the others on the list are delivered as a
                // wake would.
                deliver_lost(&self.watchers, self.session);
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
                    let Some(event_loop) = running_loop(py)? else {
                        return Err(PyRuntimeError::new_err(
                            "lease_lost() must be awaited in an asyncio (or uvloop) or trio task",
                        ));
                    };
                    // As an acquire's wait: on a thread that may be a daemon
                    // one, a loop's first wait does not connect its wake
                    // channel here (`loop.add_reader` drops the GIL, and a
                    // daemon thread taking it back once the interpreter
                    // finalizes is ended by a forced unwind that cannot cross
                    // these frames: tests/scripts/exit_in_lease_watch.py);
                    // `wait_on` has asyncio's Task connect it.
                    let (chan, unconnected) = asyncio_chan_or_setup(py, &event_loop)?;
                    let fut = new_future(py, &event_loop)?;
                    if let Some(e) = self.begin(fut.clone().unbind(), chan) {
                        // Lost already: nothing waits. An unconnected channel
                        // stays so until the loop's next wait connects it.
                        return Err(PyStopIteration::new_err((Self::exception(py, e),)));
                    }
                    return wait_on(py, &event_loop, unconnected, &fut).map(Some);
                }
                Watching::Waiting(slot) => {
                    let fut = slot.target.clone_ref(py);
                    if !fut
                        .bind(py)
                        .call_method0(pyo3::intern!(py, "done"))?
                        .is_truthy()?
                    {
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

static TRIO_LEASE_WAIT: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

coroutine_pymethods! {
impl LeaseLost {
    throw: |me, _py| me.close();

    /// Itself under asyncio (or outside any loop: its step then raises);
    /// in a trio task, the iterator of `_glue`'s trio driver.
    fn __await__(slf: Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        // A gated entry point (`interpreter::gate`): trio's probes run here.
        let _inside = crate::interpreter::gate(py);
        let fresh = matches!(slf.borrow().stage, Watching::Start);
        if !fresh || running_loop(py)?.is_some() {
            return Ok(slf.into_any().unbind());
        }
        let it = TRIO_LEASE_WAIT
            .import(py, "volt_sem._glue", "trio_lease_wait")?
            .call1((&slf,))?;
        Ok(if it.is_none() { slf.into_any().unbind() } else { it.unbind() })
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
            lock(&self.watchers)
                .slots
                .retain(|s| !std::ptr::eq(&**s, &*slot));
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
