//! Redis round trips off the event loop's thread.
//!
//! Every request to a Redis semaphore is a network round trip on the calling
//! thread, up to the command timeout (5 s by default) when Redis is slow or
//! out of reach. On an event loop's thread that would freeze every task of
//! the loop, so the asyncio face of `RedisSemaphore` never makes one there:
//! it queues a [`Job`] to the handle's [`Worker`], a plain Rust thread (one
//! per connected handle, started on first use), and waits on a Future of its
//! loop. The worker runs the round trip, records what it found in the slot's
//! [`OffLoop`] cell, and hands the slot to the loop through the same native
//! wake path as a grant (`wake::push_to_loop`: a queue per loop and a socket
//! byte the loop watches; no Python code on the worker, which never takes
//! the GIL).
//!
//! An acquire is one job: `acquire_raw` on the worker. `Ready` (taken at
//! once) and errors are recorded and delivered at once; `Pending` means the
//! agent thread calls the waiter's callback later, possibly *before*
//! `acquire_raw` returned on the worker. Whichever of the two (the callback,
//! or the worker seeing `Pending`) comes second delivers the slot (the
//! [`WOKEN`] and [`QUEUED`] bits), so the owner never resumes before the
//! worker is done with the waiter.
//!
//! One worker per handle, running jobs in the order they were queued: two
//! acquires from one loop reach Redis in the order the tasks asked (FIFO
//! across tasks, as for the local semaphore), and a cancel always runs after
//! the acquire it cancels. A cancel (task cancelled, timed out, collected) is
//! a job too: finishing a queued Redis waiter is a round trip (the cancel
//! script), so the owner's `throw` only queues it and returns; the worker
//! hands any partial grant on and releases a full one.
//!
//! The worker holds no reference to the handle: when the Python object is
//! gone, its sender is dropped and the thread ends after the jobs queued
//! (each job's slot keeps the core alive until it ran). It never keeps the
//! process alive (a Rust thread; the interpreter does not join it).

use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{mpsc, Arc, Mutex};

use pyo3::exceptions::PyRuntimeError;
use pyo3::PyResult;
use volt_sem_backend::{Error, Finish, RawAcquire};

use crate::redis::Watchers;
use crate::wake::{claim_owner, push_to_loop, slot_from_ctx, Slot};
use crate::Core;

/// The waiter's callback ran.
const WOKEN: u8 = 1;
/// The worker saw `Pending` from `acquire_raw`.
const QUEUED: u8 = 2;

/// What an off-loop request found, for the owner to collect on its loop.
pub(crate) enum Done {
    /// Not run yet (or a local/shared slot, which never uses this cell).
    NotYet,
    /// The acquire is queued in Redis: its outcome comes from `finish_raw`.
    Queued,
    /// `finish_raw`'s outcome, collected by the owner (see `wake::finish_off`).
    Finished(Finish),
    /// Taken at once (no queueing): the token and the session that holds it.
    Granted { token: u64, session: u64 },
    /// The request failed; nothing is held.
    Failed(Error),
    /// A release or close went through.
    Unit,
    /// A census: available, held (by every client), partial, queued,
    /// sessions, total, closed, last token.
    Census(volt_sem_backend::redis::Census),
    /// `connect_async` connected.
    Connected(Box<Core>),
}

/// The cell of a slot that an off-loop request fills.
pub(crate) struct OffLoop {
    done: Mutex<Done>,
    flags: AtomicU8,
}

impl Default for OffLoop {
    fn default() -> Self {
        OffLoop {
            done: Mutex::new(Done::NotYet),
            flags: AtomicU8::new(0),
        }
    }
}

impl OffLoop {
    fn set(&self, d: Done) {
        *self.done.lock().unwrap_or_else(|e| e.into_inner()) = d;
    }

    /// Takes the result, leaving `NotYet`.
    pub(crate) fn take(&self) -> Done {
        std::mem::replace(
            &mut *self.done.lock().unwrap_or_else(|e| e.into_inner()),
            Done::NotYet,
        )
    }
}

/// Work for a handle's worker thread.
pub(crate) enum Job {
    /// `acquire_raw(slot.n)` with [`wake_redis`] as the callback.
    Acquire(Pin<Arc<Slot>>),
    /// Ends the slot's acquire: cancels it if still queued (its partial grant
    /// handed on), releases it if it was granted. Nothing is delivered.
    Cancel(Pin<Arc<Slot>>),
    /// `release(slot.n)`, per grant if `slot.session` names its session.
    Release(Pin<Arc<Slot>>),
    /// `close()`.
    Close(Pin<Arc<Slot>>),
    /// `disconnect()`: ends the handle's session (see `session`).
    Disconnect(Pin<Arc<Slot>>),
    /// The census script.
    Census(Pin<Arc<Slot>>),
    /// A plain method's round trip (`Handle::call` waits for it).
    Run(Box<dyn FnOnce() + Send>),
    /// The session was lost: deliver the `lease_lost()` awaitables waiting
    /// for it (queued by the waker registered with the seam's `LeaseWatch`).
    LeaseLost(Arc<Mutex<Watchers>>, u64),
}

/// The per-handle worker thread (see the module docs): its queue and the
/// process that started it.
#[derive(Default)]
pub(crate) struct Worker {
    tx: Mutex<Option<(u32, mpsc::Sender<Job>)>>,
}

impl Worker {
    /// Queues `job`, starting the thread on first use.
    pub(crate) fn submit(&self, job: Job) -> PyResult<()> {
        self.submit_native(job).map_err(PyRuntimeError::new_err)
    }

    /// [`submit`](Self::submit) without Python: usable on any thread.
    pub(crate) fn submit_native(&self, job: Job) -> Result<(), String> {
        let mut tx = self.tx.lock().unwrap_or_else(|e| e.into_inner());
        let pid = std::process::id();
        if tx.as_ref().is_some_and(|(p, _)| *p != pid) {
            // A child of fork() has the queue but not the thread: a job sent
            // there would never run (its awaitable would wait for ever). It
            // starts a worker of its own, whose round trips fail with
            // `ForkedError` (the handle's sessions are the parent's). The
            // inherited queue is leaked, not dropped: dropping its sender
            // takes the channel's internal lock, which the parent's worker
            // may have held at the fork.
            if let Some(inherited) = tx.take() {
                std::mem::forget(inherited);
            }
        }
        if tx.is_none() {
            let (s, r) = mpsc::channel::<Job>();
            let spawned = std::thread::Builder::new()
                .name("volt_sem redis".into())
                .spawn(move || {
                    while let Ok(job) = r.recv() {
                        run(job);
                    }
                });
            if let Err(e) = spawned {
                unrun(job);
                return Err(format!("cannot start the Redis worker thread: {e}"));
            }
            *tx = Some((pid, s));
        }
        let sent = match tx.as_ref() {
            Some((_, s)) => s.send(job).map_err(|e| e.0),
            None => Err(job),
        };
        sent.map_err(|job| {
            // The thread is gone (it never ends while the sender lives, short
            // of a panic, which `run` does not have).
            *tx = None;
            unrun(job);
            "the Redis worker thread ended".to_owned()
        })
    }
}

impl Drop for Worker {
    /// In a child of fork(), the inherited queue is leaked (see `submit_native`).
    fn drop(&mut self) {
        let tx = self.tx.get_mut().unwrap_or_else(|e| e.into_inner());
        if tx.as_ref().is_some_and(|(p, _)| *p != std::process::id()) {
            std::mem::forget(tx.take());
        }
    }
}

/// A job that could not be queued. A cancel's waiter may still be queued in
/// the backend, which keeps its address: its slot is leaked rather than
/// freed (only when no thread can be started at all). Any other job's slot
/// was never queued and is simply dropped.
fn unrun(job: Job) {
    if let Job::Cancel(slot) = job {
        std::mem::forget(slot);
    }
}

/// The callback of a Redis waiter queued by the worker: delivers the slot
/// unless the worker has not seen `Pending` yet (it then delivers it).
pub(crate) unsafe extern "C" fn wake_redis(ctx: *mut core::ffi::c_void) {
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: `ctx` is the slot's address, kept alive by the owner's (or
        // the worker's) Arc until `finish_raw` returned (contract of
        // `acquire_raw`).
        let slot = unsafe { slot_from_ctx(ctx) };
        if slot.off.flags.fetch_or(WOKEN, Ordering::AcqRel) & QUEUED != 0 {
            push_to_loop(slot, false);
        }
    }));
}

fn run(job: Job) {
    // Nothing here panics on purpose; a panic in the backend must not end
    // the worker (later jobs would never be delivered).
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match job {
        Job::Acquire(slot) => {
            let ctx = &*slot as *const Slot as *mut core::ffi::c_void;
            // SAFETY: the slot's waiter is new and pinned inside the Arc; the
            // owner keeps an Arc until it finished the waiter (through
            // `finish_off`, or a `Cancel` job queued after this one).
            let r = unsafe {
                slot.core
                    .acquire_raw(slot.waiter(), slot.n, wake_redis, ctx)
            };
            match r {
                Ok(RawAcquire::Ready) => {
                    let w = slot.waiter();
                    slot.off.set(Done::Granted {
                        token: w.token().unwrap_or(0),
                        session: w.session(),
                    });
                    push_to_loop(slot, false);
                }
                Ok(RawAcquire::Pending) => {
                    slot.off.set(Done::Queued);
                    if slot.off.flags.fetch_or(QUEUED, Ordering::AcqRel) & WOKEN != 0 {
                        push_to_loop(slot, false);
                    }
                }
                Err(e) => {
                    slot.off.set(Done::Failed(e));
                    push_to_loop(slot, false);
                }
            }
        }
        Job::Cancel(slot) => {
            if !claim_owner(&slot) {
                return; // handed on already
            }
            let granted = match slot.off.take() {
                Done::Granted { .. } => true,
                // SAFETY: queued on `slot.core` by the `Acquire` job that ran
                // before this one; ours (claimed).
                Done::Queued => matches!(
                    unsafe { slot.core.finish_raw(slot.waiter()) },
                    Finish::Granted
                ),
                _ => false,
            };
            if granted {
                let _ = slot.core.release(slot.n);
            }
        }
        Job::Release(slot) => {
            let session = slot.session.load(Ordering::Relaxed);
            let r = match slot.core.as_redis() {
                Some(r) if session != 0 => r.release_session(slot.n, session).map_err(Error::from),
                _ => slot.core.release(slot.n),
            };
            let d = match r {
                Ok(()) => Done::Unit,
                Err(e) => Done::Failed(e),
            };
            slot.off.set(d);
            push_to_loop(slot, false);
        }
        Job::Close(slot) => {
            let d = match slot.core.close() {
                Ok(()) => Done::Unit,
                Err(e) => Done::Failed(e),
            };
            slot.off.set(d);
            push_to_loop(slot, false);
        }
        Job::Disconnect(slot) => {
            if let Some(r) = slot.core.as_redis() {
                r.disconnect();
            }
            slot.off.set(Done::Unit);
            push_to_loop(slot, false);
        }
        Job::Run(f) => f(),
        Job::LeaseLost(watchers, session) => {
            let slots = watchers
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take_lost(session);
            for slot in slots {
                push_to_loop(slot, false);
            }
        }
        Job::Census(slot) => {
            let d = match slot.core.as_redis().map(|r| r.census()) {
                Some(Ok(c)) => Done::Census(c),
                Some(Err(e)) => Done::Failed(e.into()),
                None => Done::Failed(Error::Unsupported),
            };
            slot.off.set(d);
            push_to_loop(slot, false);
        }
    }));
}

/// Runs `connect` on a thread of its own and delivers the slot with the
/// connected core (`connect_async`).
pub(crate) fn spawn_connect(
    slot: Pin<Arc<Slot>>,
    connect: impl FnOnce() -> Result<Core, Error> + Send + 'static,
) -> PyResult<()> {
    std::thread::Builder::new()
        .name("volt_sem connect".into())
        .spawn(move || {
            let d = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(connect)) {
                Ok(Ok(core)) => Done::Connected(Box::new(core)),
                Ok(Err(e)) => Done::Failed(e),
                Err(_) => Done::Failed(Error::Protocol("connect panicked".into())),
            };
            slot.off.set(d);
            push_to_loop(slot, false);
        })
        .map(|_| ())
        .map_err(|e| PyRuntimeError::new_err(format!("cannot start a connect thread: {e}")))
}
