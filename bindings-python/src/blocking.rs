//! Blocking waits for plain threads (`acquire_blocking`, `with sem.acquire():`,
//! the locks' `*_blocking`).
//!
//! A blocking wait queues a waiter whose callback only unparks the thread (no
//! GIL), parks with the GIL released in slices of [`SIGNAL_SLICE`], and checks
//! for signals between slices, so Ctrl-C interrupts it without losing its FIFO
//! place until it actually gives up.
//!
//! Taking the GIL back is the one moment a daemon thread can be ended by
//! CPython's finalization (`pthread_exit`, a forced unwind that must not cross
//! the extension's `extern "C"` frames). Once `volt_sem`'s `atexit` hook has run
//! ([`interpreter_exiting`]; atexit runs after non-daemon threads were joined and
//! before finalization proper), a parked thread other than the one running the
//! `atexit` hooks therefore stays parked for good instead of coming back for the
//! GIL, as CPython 3.14 itself does with daemon threads. (The thread running the
//! hooks, normally the main thread, is never ended that way, so a blocking wait
//! in a later `atexit` hook still works.)

use std::ffi::c_void;
use std::pin::Pin;
use std::thread::{self, Thread};
use std::time::{Duration, Instant};
use volt_sem_backend::RawSemaphore;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use volt_sem_backend::{Error, Expiry, Finish, RawAcquire, Waiter, WaiterState};

use pyo3::exceptions::PyRuntimeError;

use crate::errors::{acquire_error, closed_error};
use crate::interpreter::{interpreter_exiting, running_loop};
use crate::wake::{after_wakes, unraisable, Got};
use crate::Core;

/// How long a blocking wait sleeps with the GIL released before it checks signals.
const SIGNAL_SLICE: Duration = Duration::from_millis(50);

/// The context of a parked thread's waiter: its callback only unparks, without
/// the GIL.
pub(crate) struct Parked {
    pub(crate) waiter: Waiter,
    pub(crate) thread: Thread,
}

pub(crate) unsafe extern "C" fn wake_parked(ctx: *mut c_void) {
    // SAFETY: `ctx` is the pinned `Parked` of a thread inside `blocking_acquire`,
    // which does not return before `finish_raw` returned. `unpark` does not panic.
    let parked = unsafe { &*(ctx as *const Parked) };
    parked.thread.unpark();
}

/// Refuses a wait that would block the thread of a running asyncio loop (or
/// trio run): the
/// release it waits for would have to come from that loop (or from a thread
/// whose release wakes a task of it), which cannot run while its thread is
/// parked here, so it would deadlock for ever, deaf to Ctrl-C. (The Rust
/// core's `tokio` feature panics in the same case.) Only called when the wait
/// is about to happen: an immediate grant is fine anywhere.
pub(crate) fn refuse_on_running_loop(py: Python<'_>) -> PyResult<()> {
    if running_loop(py)?.is_some() || trio_runs_here(py)? {
        return Err(PyRuntimeError::new_err(
            "volt-sem: a blocking acquire (`with sem.acquire(n):`, `acquire_blocking()`) \
             would wait on the thread of a running event loop and block it for ever; \
             use `async with sem.acquire(n):` or `await sem.acquire(n)` there",
        ));
    }
    Ok(())
}

/// Whether a trio run runs on this thread: the same deadlock as on an asyncio
/// loop's thread (the run's tasks, the releasing one included, cannot run
/// while the thread is parked). Without trio imported no run can exist, and
/// no Python code runs.
fn trio_runs_here(py: Python<'_>) -> PyResult<bool> {
    if !crate::awaitable::trio_loaded(py) {
        return Ok(false);
    }
    TRIO_RUNS_HERE
        .import(py, "volt_sem._glue", "trio_runs_here")?
        .call0()?
        .is_truthy()
}

static TRIO_RUNS_HERE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// Acquires `n` permits, blocking the calling thread with the GIL released.
/// Refused with `RuntimeError` where it would wait on a running loop's thread.
/// `Ok(None)` on timeout; the wait can be interrupted by a signal handler's
/// exception (Ctrl-C), which hands any partial grant on. A shared handle's
/// `disconnect()` fails a wait still queued (`DisconnectedError`, through
/// the seam's outcome). A Redis request goes straight to the queue (a
/// separate `try_acquire` would be one more round trip), unless `timeout`
/// is 0: so on a running loop's thread it is refused even when permits are
/// free (its answer is a wait).
pub(crate) fn blocking_acquire(
    py: Python<'_>,
    core: &Core,
    n: usize,
    timeout: Option<Duration>,
) -> PyResult<Option<Got>> {
    let redis = core.as_redis().is_some();
    if !redis || timeout == Some(Duration::ZERO) {
        match crate::detached::call(py, core, |core| core.try_acquire(n)) {
            Ok(g) => return Ok(Some((g.token(), g.session()))),
            Err(Error::NoPermits) => {}
            Err(e) => return Err(acquire_error(core, e)),
        }
        if timeout == Some(Duration::ZERO) {
            // Gave up at its timeout (never queued: not a cancel).
            core.record_timeout();
            return Ok(None);
        }
    }
    refuse_on_running_loop(py)?;
    // Permits stranded on a closed loop's channel come back first.
    crate::wake::reap_closed_loops(py);
    if core.as_shared().is_some() {
        return shared_blocking_acquire(py, core, n, timeout);
    }
    let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
    let parked = Box::pin(Parked {
        waiter: Waiter::new(),
        thread: thread::current(),
    });
    // SAFETY: structural pinning, `waiter` never moves out of the pinned box.
    let waiter: Pin<&Waiter> = unsafe { parked.as_ref().map_unchecked(|p| &p.waiter) };
    let ctx = &*parked as *const Parked as usize;
    // SAFETY: the waiter is new and pinned; `parked` lives until after `finish_raw`
    // below, which every path reaches (no `?` in between).
    let queued = unsafe { core.acquire_raw(waiter, n, wake_parked, ctx as *mut c_void) };
    let got = || (waiter.token(), waiter.session());
    match queued {
        Ok(RawAcquire::Ready) => return Ok(Some(got())),
        Ok(RawAcquire::Pending) => {}
        Err(e) => return Err(acquire_error(core, e)),
    }
    // A Redis request is completed by the handle's threads, which a child
    // made by `fork()` (a signal handler's, between two slices) does not
    // have: its wait would never end there.
    let stranded = redis.then(std::process::id);
    let mut interrupted = park_in(py, waiter, deadline, stranded);
    // With the GIL: no callback needs it (async wakes are native, see
    // `wake`), so `finish_raw` waiting for a callback running elsewhere
    // cannot deadlock.
    let finish = if interrupted.is_none() && waiter.state() == WaiterState::Waiting {
        // The deadline passed. A Redis request whose acquire script has not
        // answered yet is left to that answer until its grace ends (a grant
        // is kept, whatever the deadline, as every backend tries before it
        // waits; a queued one is cancelled then): wait for its callback, as
        // for a grant, at most until `until`; `finish_raw` then cancels one
        // still unanswered (a server that stopped answering).
        // SAFETY: queued on `core` above.
        match unsafe { core.expire_raw(waiter) } {
            Expiry::Finished(f) => f,
            Expiry::Deferred { until } => {
                interrupted = park_in(py, waiter, Some(until), stranded);
                // SAFETY: as above.
                unsafe { core.finish_raw(waiter) }
            }
        }
    } else {
        // SAFETY: queued on `core` above.
        unsafe { core.finish_raw(waiter) }
    };
    let grant = got();
    drop(parked);
    let granted_but_interrupted = matches!(finish, Finish::Granted) && interrupted.is_some();
    if granted_but_interrupted {
        let _ = crate::redis::release_from(core, n, grant.1);
    }
    // A loop's Futures are resolved here only while it runs on this thread,
    // where a blocking wait is refused: the outcome above is what counts.
    unraisable(py, after_wakes(py));
    match (finish, interrupted) {
        (_, Some(e)) => Err(e),
        (Finish::Granted, None) => Ok(Some(grant)),
        (Finish::Closed, None) => Err(closed_error()),
        (Finish::Failed(e), None) => Err(acquire_error(core, e)),
        // Still queued when `park_in` came back without an error: the
        // deadline passed (this binding times the wait itself; the cancel
        // was counted by `finish_raw`).
        (Finish::Cancelled { .. } | Finish::Idle, None) => {
            core.record_timeout();
            Ok(None)
        }
    }
}

/// [`blocking_acquire`] on a named (shared-memory) semaphore: the thread
/// sleeps on its queued request's own futex word, which the granting process
/// wakes (one wake-up; a raw waiter's callback would run on this process's
/// doorbell thread first, which then unparks this one: two), and which its
/// handle's `disconnect()` wakes at once (the seam's
/// `acquire_blocking_interruptible`: `Disconnected`). The request keeps its
/// FIFO place from start to end; every [`SIGNAL_SLICE`] the seam calls back
/// on this thread, where the checks of [`park_in`] run: the interpreter's
/// exit (never come back for the GIL), then signals.
fn shared_blocking_acquire(
    py: Python<'_>,
    core: &Core,
    n: usize,
    timeout: Option<Duration>,
) -> PyResult<Option<Got>> {
    let mut interruption: Option<PyErr> = None;
    let r = py.detach(|| {
        let r = core.acquire_blocking_interruptible(n, timeout, SIGNAL_SLICE, || {
            if interpreter_exiting() {
                // Never come back for the GIL (see the module docs).
                park_for_good();
            }
            {
                // SAFETY: this runs inside this thread's own `py.detach`
                // below: the thread keeps its thread state, and taking it
                // back is what the end of that `detach` does too (without
                // checks either). Not `Python::attach`, whose checks refuse
                // (panic) once finalization has begun, where a wait in a
                // finalizer on the main thread must work as anywhere else
                // (tests/test_exit.py::test_a_blocking_wait_in_a_finalizer_during_finalization_times_out).
                interruption = unsafe { Python::attach_unchecked(|py| py.check_signals()) }.err();
            }
            interruption.is_some()
        });
        // A grant or the deadline ends the wait without a poll: the hook
        // may have run since the last one (as `park_in` checks on every
        // wake-up; tests/test_exit.py::test_a_blocking_wait_granted_after_the_exit_hook_stays_parked).
        if interpreter_exiting() {
            park_for_good();
        }
        r
    });
    // A loop's Futures are resolved here only while it runs on this thread,
    // where a blocking wait is refused: the outcome above is what counts.
    unraisable(py, after_wakes(py));
    match (r, interruption) {
        // A grant that came before the interruption was honoured goes back,
        // as in `blocking_acquire`.
        (Ok(true), Some(e)) => {
            let _ = core.release(n);
            Err(e)
        }
        (_, Some(e)) => Err(e),
        (Ok(true), None) => Ok(Some((None, 0))),
        // The deadline passed (the shared semaphore counted the timeout and
        // the cancel). `Ok(false)` only follows an interruption, which set
        // `interruption`.
        (Ok(false), None) | (Err(Error::TimedOut), None) => Ok(None),
        (Err(e), None) => Err(acquire_error(core, e)),
    }
}

/// Parks this thread (GIL released) for good: a blocking wait that ended
/// after the `atexit` hook ran never comes back for the GIL (see the module
/// docs); what it was granted stays held until the process exits.
fn park_for_good() -> ! {
    loop {
        thread::park();
    }
}

/// Parks this thread, GIL released, until `waiter` leaves `Waiting` or the
/// deadline passes, checking for signals every [`SIGNAL_SLICE`] (the error
/// of a signal handler, Ctrl-C, if one interrupted the wait). With
/// `stranded`, the process that queued a Redis request: a signal handler
/// that forked leaves the child's copy of the wait without the threads
/// that would complete it, and the child's wait ends with `ForkedError`
/// (the caller's `finish_raw` leaves the parent's request alone), as on a
/// named semaphore.
fn park_in(
    py: Python<'_>,
    waiter: Pin<&Waiter>,
    deadline: Option<Instant>,
    stranded: Option<u32>,
) -> Option<PyErr> {
    loop {
        let done = py.detach(|| {
            let slice_end = Instant::now() + SIGNAL_SLICE;
            loop {
                if interpreter_exiting() {
                    // Never come back for the GIL (see the module docs).
                    park_for_good();
                }
                if waiter.state() != WaiterState::Waiting {
                    return true;
                }
                let now = Instant::now();
                let until = deadline.map_or(slice_end, |d| d.min(slice_end));
                if now >= until {
                    return deadline.is_some_and(|d| now >= d);
                }
                thread::park_timeout(until - now);
            }
        });
        if done {
            return None;
        }
        if let Err(e) = py.check_signals() {
            return Some(e);
        }
        if stranded.is_some_and(|pid| pid != std::process::id()) {
            return Some(crate::errors::forked_error(Some(true)));
        }
    }
}
