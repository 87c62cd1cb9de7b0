//! The wake path: how a grant completed on one thread reaches a task waiting on
//! an event loop (asyncio, uvloop) or in a trio run, possibly on another thread.
//!
//! # No Python on the wake path
//!
//! The core calls [`wake_async`] on whichever thread completed the grant (a
//! releaser, a canceller handing a partial grant on, a closer). That callback is
//! an `extern "C"` function: no unwind may cross it, and CPython (3.9 to 3.13)
//! ends a daemon thread that takes the GIL back during interpreter finalization
//! with `pthread_exit`, a forced unwind. The callback therefore never touches
//! Python: it neither attaches a thread nor calls anything that could release the
//! GIL. It only
//!
//! * pushes its [`Slot`] (an `Arc`, so the waiter stays valid for whoever holds it)
//!   onto the waiter's [`Chan`], a small native queue with one per event loop or
//!   trio run, and
//! * when that queue was empty, writes one byte to the channel's socket pair.
//!
//! The loop watches the read end: asyncio and uvloop through `loop.add_reader`,
//! trio through a system task blocked in `trio.lowlevel.wait_readable`; a loop
//! with no `add_reader` (Windows' `ProactorEventLoop`) through a helper thread
//! that blocks in `recv` and schedules the drain with `call_soon_threadsafe`
//! (the *thread* wake path, `volt_sem/_glue.py`). The pair is an `AF_UNIX`
//! socket pair on Unix and a loopback TCP pair on Windows
//! (`src/wake_socket.rs`). There,
//! on the loop's own thread and in *Python* frames (`volt_sem/_glue.py`), the
//! queue is taken ([`Channel::take`], a [`Batch`]) and each asyncio Future is
//! resolved, or each trio task rescheduled. A releasing daemon thread thus never needs the GIL
//! while it wakes anyone, and the code that does run Python (the drain, the
//! owner's resume) runs in ordinary Python frames, exactly like asyncio's own
//! primitives.
//!
//! Alternatives rejected: checking `sys.is_finalizing()` before calling
//! `call_soon_threadsafe` is racy (finalization starts *while* the call has the
//! GIL dropped, which is exactly the abort seen); catching the forced unwind is
//! impossible in Rust (and pyo3's own trampolines are `extern "C"` too, so a
//! `C-unwind` wake function in the core would only move the abort); parking the
//! releasing thread for good when it comes back during finalization needs a hook
//! CPython 3.9-3.13 do not offer. Only a wake path without Python calls removes
//! the window instead of narrowing it.
//!
//! A wake on the loop's own thread needs neither the socket nor the selector:
//! a release (or a cancel handing a partial grant on) runs its core call inside
//! [`waking`], whose callback queues the slot *without* the signal byte when the
//! channel belongs to a loop created on this thread; [`after_wakes`], right
//! after, resolves the Futures of the thread's running loop at once
//! (`Chan::drain_on_own_loop`), so the woken task runs in the next iteration,
//! as with asyncio's own semaphore, and writes the byte it owes for any other
//! loop. `set_result` then runs in the Python-facing call, not in the callback.
//! That call still has the extension's `extern "C"` frames under it, and the
//! loop's `call_soon` may drop the GIL: so only on the main thread and on
//! non-daemon threads, which interpreter exit joins before it finalizes (never
//! ended by the forced unwind described above), and not once `atexit` ran. A
//! loop on a daemon thread keeps the socket for its own wakes too.
//!
//! # Loops that can no longer run
//!
//! A waiter whose loop is closed must not keep its grant. A closed asyncio loop
//! cannot be observed from the callback, so the callback records the channel in a
//! thread-local list; the Python-facing call that caused the wake
//! ([`after_wakes`], called by `release`, `close`, a cancel, ...) then checks each
//! channel that received entries. The check itself runs no Python code that can
//! drop the GIL: it reads the loop's `_closed` attribute when the loop uses
//! asyncio's stock `is_closed`, or calls a native `is_closed` (uvloop); a loop
//! class whose `is_closed` is Python code is never probed (its waiters are then
//! handed on when the GC collects their tasks, like those of an abandoned loop).
//! A channel found dead stays dead: its queued slots are handed on at once, and
//! later callbacks hand on inline. A trio run marks its channel dead itself when
//! its pump task ends.
//!
//! Handing on and the owner's own finish race for a slot: both claim it first
//! (`claim`, a compare-exchange), and only the winner calls `finish_raw`. The
//! loser never touches the waiter again; the `Arc` keeps it valid.

use std::cell::{Cell, RefCell};
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use volt_sem_backend::RawSemaphore;

use pyo3::exceptions::PyBaseException;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyWeakrefMethods, PyWeakrefReference};
use volt_sem_backend::{Finish, Waiter, WaiterState};

use crate::interpreter::running_loop;
use crate::wake_socket::{RawSocket, WakeSocket};
use crate::Core;

const OPEN: u8 = 0;
const OWNER: u8 = 1;
const HANDED_ON: u8 = 2;

/// A grant: its fencing token (Redis) and the session that holds it (0
/// for the local and named backends).
pub(crate) type Got = (Option<u64>, u64);

/// One queued async acquire: the core waiter and what waking it means. Always
/// lives in a `Pin<Arc<Slot>>` (see [`Slot::new`]); the core's `ctx` is its
/// address, and every holder of the `Arc` keeps the waiter valid.
pub(crate) struct Slot {
    waiter: Waiter,
    pub(crate) core: Arc<Core>,
    pub(crate) n: usize,
    /// asyncio: the Future to resolve; trio: the task to reschedule.
    pub(crate) target: Py<PyAny>,
    chan: Arc<Chan>,
    /// Who finishes the waiter: `OPEN`, then `OWNER` (the awaiting side) or
    /// `HANDED_ON` (a dead loop's grant passed on).
    claim: AtomicU8,
    /// The drain handed `target` to its loop (trio: rescheduled the task).
    delivered: AtomicBool,
}

impl Slot {
    pub(crate) fn new(
        core: Arc<Core>,
        n: usize,
        target: Py<PyAny>,
        chan: Arc<Chan>,
    ) -> Pin<Arc<Slot>> {
        Arc::pin(Slot {
            waiter: Waiter::new(),
            core,
            n,
            target,
            chan,
            claim: AtomicU8::new(OPEN),
            delivered: AtomicBool::new(false),
        })
    }

    /// A slot for a new request of `n` permits of `core`, resolving
    /// `target` through `chan`: `spare` itself (from [`Slot::retire`]) when
    /// nobody else holds it and its waiter is idle, else a new one.
    ///
    /// Reuse is safe because both conditions are checked here: `finish_raw`
    /// returned (called outside the callback, by [`finish_owned`]), so the
    /// core no longer references the waiter and its callback returned or
    /// never will (the core's raw waiter contract); and the callback's own
    /// `Arc` (taken by [`slot_from_ctx`], then held by the channel's queue,
    /// the drain's batch or this thread's direct list) is gone, which
    /// `Arc::get_mut` sees: no old wake can reach the slot any more.
    pub(crate) fn renew(
        py: Python<'_>,
        spare: Arc<Slot>,
        core: &Arc<Core>,
        n: usize,
        target: Py<PyAny>,
        chan: Arc<Chan>,
    ) -> Pin<Arc<Slot>> {
        let mut spare = spare;
        match Arc::get_mut(&mut spare) {
            Some(s) if !s.waiter.is_busy() => {
                // Only the unpinned fields are written; the waiter stays
                // where it was pinned.
                if !Arc::ptr_eq(&s.core, core) {
                    s.core = core.clone();
                }
                s.n = n;
                // The old target (`None`) let go attached: no check of
                // the thread's attachment, as dropping a `Py` makes.
                drop(std::mem::replace(&mut s.target, target).into_bound(py));
                s.chan = chan;
                *s.claim.get_mut() = OPEN;
                *s.delivered.get_mut() = false;
                // SAFETY: the slot was pinned in this Arc by `new` and never
                // moved (`retire` took the Arc out of its `Pin` only to reach
                // `Arc::get_mut`, as here, never the waiter by value).
                unsafe { Pin::new_unchecked(spare) }
            }
            _ => Slot::new(core.clone(), n, target, chan),
        }
    }

    /// Keeps a finished slot for its owner's next wait ([`Slot::renew`]):
    /// `Some` when the owner holds its only `Arc`, its target (the done
    /// Future) let go so that the spare keeps no Future, and so no loop,
    /// alive. `None` (the slot dropped) otherwise.
    pub(crate) fn retire(py: Python<'_>, slot: Pin<Arc<Slot>>) -> Option<Arc<Slot>> {
        // SAFETY: the Arc leaves its `Pin` but its contents never move:
        // only `Arc::get_mut` is used on it, here and in `renew`, to write
        // the unpinned fields; `renew` pins it again.
        let mut slot = unsafe { Pin::into_inner_unchecked(slot) };
        let s = Arc::get_mut(&mut slot)?;
        drop(std::mem::replace(&mut s.target, py.None()).into_bound(py));
        Some(slot)
    }

    pub(crate) fn waiter(&self) -> Pin<&Waiter> {
        // SAFETY: a `Slot` only exists inside `Arc::pin` (see `new`): it never moves.
        unsafe { Pin::new_unchecked(&self.waiter) }
    }

    pub(crate) fn delivered(&self) -> bool {
        self.delivered.load(Ordering::Relaxed)
    }

    /// Queues the waiter. `ctx` is the slot's address; the owner keeps its `Arc`
    /// until it has finished the slot (or lost the claim to a hand-on, which
    /// holds its own `Arc`). Never blocks (a Redis request is sent by the
    /// handle's door thread); its callback may run before this returns, on
    /// another thread, like a named semaphore's.
    pub(crate) fn queue(
        self: &Pin<Arc<Self>>,
    ) -> Result<volt_sem_backend::RawAcquire, volt_sem_backend::Error> {
        let me: &Slot = self;
        let ctx = me as *const Slot as usize;
        // SAFETY: the waiter is new and pinned inside the Arc; `ctx` stays valid
        // while any Arc lives, and the owner's Arc lives until `finish_raw`
        // returned (or a hand-on, holding its own Arc, finished it).
        unsafe {
            self.core
                .acquire_raw(me.waiter(), me.n, wake_async, ctx as *mut c_void)
        }
    }
}

/// How the owner's finish went.
pub(crate) enum Owned {
    Finished(Finish),
    /// A hand-on claimed the slot first (its loop could not run any more).
    HandedOn,
}

/// Finishes a slot from its owner's side, GIL held: no callback ever needs
/// the GIL, so `finish_raw` waiting for one running on another thread cannot
/// deadlock.
/// The wakes a cancel causes go through [`waking`].
pub(crate) fn finish_owned(py: Python<'_>, slot: &Slot) -> Owned {
    if slot
        .claim
        .compare_exchange(OPEN, OWNER, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        return Owned::HandedOn;
    }
    // A complete grant of the local semaphore (the resumed wait's usual
    // case): finishing it only collects the outcome and wakes nobody (only
    // giving up a queued wait hands permits on), so no `waking` scope.
    if slot.core.as_local().is_some() && slot.waiter().state() == WaiterState::Granted {
        // SAFETY: as below.
        return Owned::Finished(unsafe { slot.core.finish_raw(slot.waiter()) });
    }
    // SAFETY: queued on `slot.core`, pinned, and ours to finish (claimed).
    let (finish, woke) = waking(py, || unsafe { slot.core.finish_raw(slot.waiter()) });
    if woke.is_err() {
        // The owner's outcome (a grant, an error) is what its caller acts
        // on: the wake's exception cannot replace it without losing a grant.
        unraisable(py, woke);
    }
    Owned::Finished(finish)
}

/// Passes a slot's grant on when nobody can resume its owner. Native only; may
/// run inside the slot's own callback (then `finish_raw` returns at once).
#[cold]
#[inline(never)]
fn hand_on(slot: &Slot) {
    if slot
        .claim
        .compare_exchange(OPEN, HANDED_ON, Ordering::AcqRel, Ordering::Acquire)
        .is_ok()
    {
        // SAFETY: queued on `slot.core` (or idle: then `Idle`), pinned (kept
        // alive by the caller's Arc).
        let granted = matches!(
            unsafe { slot.core.finish_raw(slot.waiter()) },
            Finish::Granted
        );
        if granted {
            let _ = slot.core.release(slot.n);
        }
    }
}

/// Claims a slot for its owner without finishing it (a stopped
/// `lease_lost()` watch, whose waiter is never queued): false if a hand-on
/// claimed it first.
pub(crate) fn claim_owner(slot: &Slot) -> bool {
    slot.claim
        .compare_exchange(OPEN, OWNER, Ordering::AcqRel, Ordering::Acquire)
        .is_ok()
}

// ---------------------------------------------------------------------------
// Channels
// ---------------------------------------------------------------------------

/// How to tell, without running Python code, that an asyncio loop was closed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Probe {
    /// Never probed (trio marks its channel dead itself; unknown loop classes).
    Never,
    /// asyncio's stock `is_closed`: read the `_closed` attribute.
    ClosedAttr,
    /// A native `is_closed` method (uvloop): call it.
    NativeMethod,
}

/// The wake queue of one event loop or trio run.
pub(crate) struct Chan {
    queue: Mutex<Vec<Pin<Arc<Slot>>>>,
    sock: WakeSocket,
    /// The loop (or trio's pump) reads the socket itself, and the drain
    /// empties it; false on the thread wake path, whose helper thread reads it.
    reader: bool,
    dead: AtomicBool,
    probe: Probe,
    /// `weakref.ref(loop)`, for the probe and for the per-thread cache; read
    /// with `PyWeakref_GetRef` (`upgrade`), not by calling it.
    loop_ref: Option<Py<PyWeakrefReference>>,
    /// The thread that created the channel (the loop's thread while it ran;
    /// `PyThread_get_thread_ident`), 0 for a trio run: a wake on that thread
    /// inside [`waking`] may leave the signal to [`after_wakes`].
    thread: u64,
    /// A wake queued here inside [`waking`] left out the signal byte:
    /// [`after_wakes`] resolves the queue on its own loop or writes the byte.
    owed: AtomicBool,
    /// A signal byte may be pending in the socket: the own-loop drain reads
    /// the socket only then (the selector's drain always reads it).
    signalled: AtomicBool,
}

impl Chan {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Pin<Arc<Slot>>>> {
        // Nothing panics while holding it; a poisoned queue is still consistent.
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues a woken slot; the first entry of a batch signals the loop, or,
    /// `direct`, owes the signal to this thread's [`after_wakes`].
    fn push(&self, slot: Pin<Arc<Slot>>, direct: bool) {
        let was_empty = {
            let mut q = self.lock();
            let was_empty = q.is_empty();
            if was_empty && self.loop_ref.is_some() {
                UNDRAINED.fetch_add(1, Ordering::AcqRel);
            }
            q.push(slot);
            was_empty
        };
        if was_empty {
            if direct {
                self.owed.store(true, Ordering::Relaxed);
            } else {
                self.signal();
            }
        }
    }

    fn signal(&self) {
        self.signalled.store(true, Ordering::Release);
        self.sock.signal();
    }

    /// Writes the signal a `direct` push left out, if it is still owed.
    fn pay_owed(&self) {
        if self.owed.swap(false, Ordering::Relaxed) {
            self.signal();
        }
    }

    /// Takes every queued slot. The signal bytes are consumed *before* the queue
    /// is swapped, so a push after the swap always leaves a byte behind. (On the
    /// thread wake path the helper consumed them before it scheduled the drain:
    /// the same order.)
    fn take_all(&self) -> Vec<Pin<Arc<Slot>>> {
        if self.reader {
            self.signalled.store(false, Ordering::Release);
            self.sock.drain();
        }
        let mut out = Vec::new();
        self.move_queue(&mut out);
        out
    }

    /// [`take_all`](Self::take_all) for the own-loop drain, into `out`: reads
    /// the socket only when a byte may be pending, so a wake that never wrote
    /// one costs no system call. A byte written after the check stays for the
    /// selector, whose drain reads it and finds the queue empty (harmless).
    fn take_direct(&self, out: &mut Vec<Pin<Arc<Slot>>>) {
        self.owed.store(false, Ordering::Relaxed);
        if self.reader && self.signalled.swap(false, Ordering::AcqRel) {
            self.sock.drain();
        }
        self.move_queue(out);
    }

    /// Moves the queued slots to `out`. The queue keeps its capacity, and
    /// `out` is the drain's reused buffer: a wake allocates nothing.
    fn move_queue(&self, out: &mut Vec<Pin<Arc<Slot>>>) {
        let mut q = self.lock();
        if !q.is_empty() {
            if self.loop_ref.is_some() {
                UNDRAINED.fetch_sub(1, Ordering::AcqRel);
            }
            out.append(&mut q);
        }
    }

    fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// Marks the channel dead and hands on everything queued on it.
    #[cold]
    #[inline(never)]
    fn kill(&self) {
        self.dead.store(true, Ordering::SeqCst);
        self.owed.store(false, Ordering::Relaxed);
        for slot in self.take_all() {
            hand_on(&slot);
        }
        // A helper thread polling a reader channel (a loop found without
        // `add_reader`: `_glue._connect`) waits for a byte `take_all` may
        // just have read: one more, so that it wakes, sees the channel
        // dead and ends (else it lived until the loop was collected).
        if self.reader {
            self.sock.signal();
        }
    }

    /// Whether the loop behind this channel can no longer run (see the module
    /// docs: runs no Python code that can release the GIL).
    #[inline(never)]
    fn loop_closed(&self, py: Python<'_>) -> bool {
        if self.dead.load(Ordering::SeqCst) {
            return true;
        }
        let Some(loop_ref) = &self.loop_ref else {
            return false;
        };
        let probe = || -> PyResult<bool> {
            let Some(event_loop) = loop_ref.bind(py).upgrade() else {
                return Ok(true); // the loop itself is gone
            };
            match self.probe {
                Probe::Never => Ok(false),
                Probe::ClosedAttr => event_loop
                    .getattr(pyo3::intern!(py, "_closed"))?
                    .is_truthy(),
                Probe::NativeMethod => event_loop
                    .call_method0(pyo3::intern!(py, "is_closed"))?
                    .is_truthy(),
            }
        };
        probe().unwrap_or(false)
    }
}

/// The channel of every asyncio loop (registered once, at its creation), for
/// [`reap_closed_loops`].
static LOOP_CHANS: Mutex<Vec<Weak<Chan>>> = Mutex::new(Vec::new());

/// How many asyncio loops' channels hold woken slots not yet drained (each
/// counted once, while its queue is not empty; updated under the queue's
/// lock): [`reap_closed_loops`] has nothing to look for while it is 0, the
/// usual case, since a wake on the loop's own thread is drained at once.
static UNDRAINED: AtomicUsize = AtomicUsize::new(0);

/// Hands on the grants still queued on the channel of a loop closed since
/// they arrived. A grant that reaches a stopped loop (not closed) waits in
/// its channel for the loop's next drain; if the loop is then closed and the
/// program keeps its task (so the GC never cancels the wait), no later wake
/// probes that channel, and the permits would stay there. An acquire that
/// has to wait (asyncio, trio, blocking) calls this before it queues, so those
/// permits come back to the queue it joins. Probes only channels holding
/// undelivered grants, as [`after_wakes`] does (no Python code that can
/// release the GIL).
pub(crate) fn reap_closed_loops(py: Python<'_>) {
    if UNDRAINED.load(Ordering::Acquire) == 0 {
        return;
    }
    let chans: Vec<Arc<Chan>> = {
        let mut all = LOOP_CHANS.lock().unwrap_or_else(|e| e.into_inner());
        all.retain(|c| c.strong_count() > 0);
        all.iter().filter_map(Weak::upgrade).collect()
    };
    // Outside the registry's lock: dropping the last `Arc` of a channel may
    // run Python code (its queued Futures), which may wait and come back here.
    let mut killed = false;
    for chan in &chans {
        if !chan.dead.load(Ordering::SeqCst) && !chan.is_empty() && chan.loop_closed(py) {
            chan.kill();
            killed = true;
        }
    }
    drop(chans);
    if killed {
        unraisable(py, after_wakes(py)); // the handed-on grants may have woken others
    }
}

thread_local! {
    /// Channels that received a slot from a callback on this thread since the last
    /// [`after_wakes`].
    static TOUCHED: RefCell<Vec<Arc<Chan>>> = const { RefCell::new(Vec::new()) };
    /// The channel of the loop this thread parked on last.
    static LAST_CHAN: RefCell<Option<Arc<Chan>>> = const { RefCell::new(None) };
    /// Inside [`waking`]: the core call's wakes are followed by [`after_wakes`]
    /// on this thread.
    static IN_WAKING: Cell<bool> = const { Cell::new(false) };
    /// Whether this thread may run Python code under this extension's frames
    /// while it wakes (see [`direct_thread`]): `UNKNOWN` until it first parks.
    static DIRECT_THREAD: Cell<u8> = const { Cell::new(UNKNOWN) };
    /// The own-loop drain's buffer, kept between drains with its capacity.
    static DRAIN_BUFFER: Cell<Vec<Pin<Arc<Slot>>>> = const { Cell::new(Vec::new()) };
    /// Slots woken inside [`waking`] for a loop created on this thread, kept
    /// for the [`after_wakes`] that follows (`resolve_direct`); the list
    /// keeps its capacity.
    static DIRECT: RefCell<Vec<Pin<Arc<Slot>>>> = const { RefCell::new(Vec::new()) };
}

const UNKNOWN: u8 = 0;
const SAFE: u8 = 1;
const UNSAFE: u8 = 2;

/// Whether the calling thread may resolve Futures directly (the own-loop
/// drain, [`Chan::drain_on_own_loop`]): the main thread and non-daemon
/// threads. Interpreter exit joins every non-daemon thread before it
/// finalizes, so neither is ever ended by the forced unwind the module docs
/// describe; a daemon thread (or a thread started outside `threading`, which
/// `threading` sees as a daemon) may be, and keeps the socket. Known once the
/// thread parked a waiter ([`asyncio_chan_or_setup`]); unknown means no.
fn direct_thread() -> bool {
    DIRECT_THREAD.try_with(|d| d.get() == SAFE).unwrap_or(false)
        && !crate::interpreter::interpreter_finalizing()
}

/// The calling thread's identifier (`pthread_self` on Unix): a C query, no Python.
fn thread_ident() -> u64 {
    // SAFETY: a plain query of the calling thread's identifier.
    (unsafe { pyo3::ffi::PyThread_get_thread_ident() }) as u64
}

/// Runs a core call that may wake async waiters (a release, a cancel that
/// hands a partial grant on), then [`after_wakes`]. A waiter of a loop that
/// runs on this thread is then queued without the signal byte, and
/// `after_wakes` resolves its Future at once when that loop is the running
/// one, as asyncio's own semaphore does in `release()`: no socket write or
/// read, and the task runs in the next loop iteration. Otherwise
/// `after_wakes` writes the byte it owes. Every other wake (another thread,
/// another loop, a daemon thread, trio) signals from the callback as before.
/// Returns the call's result and `after_wakes`' (an exception raised by the
/// loop's `call_soon` while a Future was resolved, once every wake was
/// delivered).
pub(crate) fn waking<R>(py: Python<'_>, call: impl FnOnce() -> R) -> (R, PyResult<()>) {
    struct Scope(bool);
    impl Drop for Scope {
        // Inline, the unwinding case out of line: an out-of-line drop cost
        // a call and its instruction-cache lines per release.
        #[inline]
        fn drop(&mut self) {
            let _ = IN_WAKING.try_with(|w| w.set(self.0));
            if std::thread::panicking() {
                unwound_wakes();
            }
        }
    }
    let outer = IN_WAKING.try_with(|w| w.replace(true)).unwrap_or(false);
    let scope = Scope(outer);
    let r = call();
    drop(scope);
    (r, after_wakes(py))
}

/// Reports an exception [`after_wakes`] raised where the caller cannot raise
/// it (a cancel, a finalizer, a grant that must not be lost): through
/// `sys.unraisablehook`, as a callback's error is. Cold.
#[cold]
#[inline(never)]
pub(crate) fn unraisable(py: Python<'_>, r: PyResult<()>) {
    if let Err(e) = r {
        e.write_unraisable(py, None);
    }
}

/// [`waking`]'s scope ended by a panic: `after_wakes` will not run, so this
/// pays what the scope owes (the slots kept for it queued, the signals
/// owed written).
#[cold]
#[inline(never)]
fn unwound_wakes() {
    let kept = DIRECT
        .try_with(|d| d.try_borrow_mut().map(|mut d| std::mem::take(&mut *d)))
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    for slot in kept {
        queue_on_chan(slot, false, false);
    }
    let _ = TOUCHED.try_with(|t| {
        if let Ok(t) = t.try_borrow() {
            t.iter().for_each(|c| c.pay_owed());
        }
    });
}

/// The core callback of an async waiter. Runs once, on any thread, never under a
/// core lock, and never touches Python (see the module docs).
pub(crate) unsafe extern "C" fn wake_async(ctx: *mut c_void) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: as for `slot_from_ctx`.
        let slot = unsafe { slot_from_ctx(ctx) };
        // Not on a shared or Redis semaphore's callback thread: no
        // `after_wakes` ever runs there, so the list would only grow (a grant
        // to a closed loop is handed on when its task is cancelled or
        // collected instead).
        push_to_loop(slot, !volt_sem_backend::in_shared_callback());
    }));
}

/// A new `Arc` on the slot whose address a core callback was given.
///
/// # Safety
/// `ctx` is the address of a slot inside a `Pin<Arc<Slot>>` whose owner keeps
/// an Arc until `finish_raw` returned, and `finish_raw` waits for the callback
/// to return: the count is at least 1 here.
pub(crate) unsafe fn slot_from_ctx(ctx: *mut c_void) -> Pin<Arc<Slot>> {
    let ptr = ctx as *const Slot;
    // SAFETY: see the function's contract.
    unsafe {
        Arc::increment_strong_count(ptr);
        Pin::new_unchecked(Arc::from_raw(ptr))
    }
}

/// Hands a finished slot to its loop (or on, if the loop is gone). Native
/// only. `track`: remember the channel for this thread's next `after_wakes`
/// (only on threads that run Python-facing calls).
pub(crate) fn push_to_loop(slot: Pin<Arc<Slot>>, track: bool) {
    if slot.chan.dead.load(Ordering::SeqCst) {
        hand_on(&slot);
        return;
    }
    // Inside `waking` on the loop's own thread: `after_wakes` follows and
    // either resolves the Future at once or writes the byte.
    let direct = track
        && slot.chan.thread != 0
        && IN_WAKING.try_with(Cell::get).unwrap_or(false)
        && slot.chan.thread == thread_ident()
        && direct_thread();
    let mut slot = Some(slot);
    if direct {
        // Kept on this thread for `after_wakes` (`resolve_direct`): no
        // queue lock when it resolves the Future itself.
        let _ = DIRECT.try_with(|d| {
            if let Ok(mut d) = d.try_borrow_mut() {
                d.extend(slot.take());
            }
        });
    }
    if let Some(slot) = slot {
        queue_on_chan(slot, direct, track);
    }
}

/// Queues a woken slot on its channel: the signal written now, or, `direct`,
/// owed to this thread's [`after_wakes`] (`track`: the channel is listed for
/// it).
fn queue_on_chan(slot: Pin<Arc<Slot>>, direct: bool, track: bool) {
    let chan = slot.chan.clone();
    chan.push(slot, direct);
    // A loop closed meanwhile would miss this entry; `kill` takes the queue
    // after setting `dead`, so one of the two sees it.
    if chan.dead.load(Ordering::SeqCst) {
        for slot in chan.take_all() {
            hand_on(&slot);
        }
        return;
    }
    if !track {
        return;
    }
    let tracked = TOUCHED
        .try_with(|t| match t.try_borrow_mut() {
            Ok(mut t) => {
                if !t.iter().any(|c| Arc::ptr_eq(c, &chan)) {
                    t.push(chan.clone());
                }
                true
            }
            Err(_) => false,
        })
        .unwrap_or(false);
    if !tracked {
        chan.pay_owed(); // no `after_wakes` will see it
    }
}

/// Takes this thread's list `key` when it is not empty; an empty one stays,
/// keeping its capacity for the next wakes (no allocation per release).
fn take_list<T: 'static>(key: &'static std::thread::LocalKey<RefCell<Vec<T>>>) -> Vec<T> {
    key.try_with(|l| {
        l.try_borrow_mut()
            .map(|mut l| {
                if l.is_empty() {
                    Vec::new()
                } else {
                    std::mem::take(&mut *l)
                }
            })
            .unwrap_or_default()
    })
    .unwrap_or_default()
}

/// After a core call that may have woken waiters on this thread: resolves at
/// once the Futures of this thread's running loop (see [`waking`]), hands on
/// the grants of waiters whose loop is closed, and writes the signal bytes
/// [`waking`] left out for the rest. Called with the GIL held by every
/// Python-facing operation that releases, cancels or closes.
///
/// An exception raised while a Future was resolved (by the loop's
/// `call_soon`, which `set_result` calls: a `KeyboardInterrupt` arriving
/// there, a loop subclass's error) does not stop the other wakes: they are
/// all delivered first, then the first such exception is returned for the
/// caller to raise, as `asyncio.Semaphore.release()` raises it (later ones
/// go to `sys.unraisablehook`). The waiter whose Future failed gives its
/// grant back ([`resolve_here`]).
pub(crate) fn after_wakes(py: Python<'_>) -> PyResult<()> {
    let mut err = None;
    resolve_direct(py, &mut err);
    // A look, not a take: the commonest release (a task of its own running
    // loop woken) touched no channel, and an empty list taken out cost a
    // call of its drop glue.
    let touched = TOUCHED
        .try_with(|t| t.try_borrow().is_ok_and(|t| !t.is_empty()))
        .unwrap_or(false);
    if touched {
        after_queued_wakes(py, &mut err);
    }
    match err {
        None => Ok(()),
        Some(e) => Err(e),
    }
}

/// The part of [`after_wakes`] for channels that received queued slots
/// (out of line: a release that woke a task of its own running loop, the
/// commonest, has none).
#[inline(never)]
fn after_queued_wakes(py: Python<'_>, err: &mut Option<PyErr>) {
    let mut touched = take_list(&TOUCHED);
    loop {
        // This thread's running loop, looked up once and only if needed.
        let mut running: Option<Option<Bound<'_, PyAny>>> = None;
        for chan in &touched {
            // A running loop is not closed: no probe needed (and a queue
            // emptied meanwhile leaves the drain nothing to do).
            if direct_thread() && chan.runs_here(py, &mut running) {
                chan.drain_on_own_loop(py, err);
                continue;
            }
            if chan.is_empty() {
                chan.owed.store(false, Ordering::Relaxed);
                continue;
            }
            if chan.loop_closed(py) {
                chan.kill(); // may wake more waiters: loop again
                continue;
            }
            chan.pay_owed();
        }
        touched.clear();
        // The emptied list goes back for the next wakes (no allocation per
        // release), unless those drains woke more: then once more.
        let more = TOUCHED
            .try_with(|t| match t.try_borrow_mut() {
                Ok(mut t) if t.is_empty() => {
                    *t = std::mem::take(&mut touched);
                    false
                }
                Ok(_) => true,
                Err(_) => false,
            })
            .unwrap_or(false);
        if !more {
            return;
        }
        touched = take_list(&TOUCHED);
        if touched.is_empty() {
            return;
        }
    }
}

impl Chan {
    /// Whether this channel's loop is the one running on this thread (never
    /// for a trio run). `running`: this thread's running loop, looked up once
    /// per [`after_wakes`] and only if needed.
    fn runs_here<'py>(
        &self,
        py: Python<'py>,
        running: &mut Option<Option<Bound<'py, PyAny>>>,
    ) -> bool {
        let Some(loop_ref) = &self.loop_ref else {
            return false; // a trio run: its pump drains
        };
        let Some(event_loop) = loop_ref.bind(py).upgrade() else {
            return false;
        };
        if self.probe == Probe::ClosedAttr {
            return stock_loop_runs_here(py, &event_loop);
        }
        let here = running.get_or_insert_with(|| running_loop(py).ok().flatten());
        here.as_ref().is_some_and(|h| h.is(&event_loop))
    }

    /// A wake on the waiter's own loop, from a call made on that loop's thread
    /// (a `release` by a task or callback of the same loop): resolves the
    /// Futures now, as asyncio's own semaphore does, so the woken task runs in
    /// the next loop iteration instead of after the selector reports the
    /// signal byte (two iterations later); a wake queued inside [`waking`]
    /// wrote no byte at all, and a byte written anyway is consumed with the
    /// queue. Only `Future.set_result` runs (it schedules the callbacks with
    /// `call_soon`; they never run nested), in a Python-facing call that
    /// already holds the GIL: not the wake callback, which stays free of
    /// Python (module docs). Cross-thread and cross-loop wakes keep the socket.
    ///
    /// Only on a thread [`direct_thread`] allows, and not once the interpreter
    /// exits: `call_soon` may be Python code, which may drop the GIL, and a
    /// *daemon* thread that takes it back during finalization is ended by a
    /// forced unwind that must not cross this extension's `extern "C"` frames
    /// (the abort the module docs describe; `tests/test_exit.py` provokes it).
    /// A loop on a daemon thread keeps the socket path.
    fn drain_on_own_loop(&self, py: Python<'_>, err: &mut Option<PyErr>) {
        // The buffer of this thread's last drain (empty, with its capacity);
        // a nested drain (a loop whose `call_soon` releases) gets a new one.
        let mut batch = DRAIN_BUFFER.with(Cell::take);
        self.take_direct(&mut batch);
        for slot in &batch {
            resolve_here(py, slot, err);
        }
        batch.clear();
        DRAIN_BUFFER.with(|b| b.set(batch));
    }
}

/// Resolves a woken slot's Future on its own loop's thread (that loop
/// running here), unless its owner finished it already. An exception of
/// `set_result` other than a cancelled Future's refusal goes to `err`
/// ([`refused`]).
fn resolve_here(py: Python<'_>, slot: &Slot, err: &mut Option<PyErr>) {
    if slot.claim.load(Ordering::Acquire) != OPEN {
        return; // its owner finished it already
    }
    slot.delivered.store(true, Ordering::Relaxed);
    let fut = slot.target.bind(py);
    // A Future cancelled meanwhile (its task's cancel, whose throw will
    // finish the slot) refuses the result: rare, so checked only then
    // rather than with a `done()` call per wake.
    if let Err(e) = set_result_true(py, fut) {
        refused(py, slot, fut, e, err);
    }
}

/// `set_result` raised. A Future cancelled meanwhile refuses the result:
/// its task's cancel (whose throw finishes the slot) deals with the grant.
/// Anything else came from the loop's `call_soon` (`set_result` marks the
/// Future done, then schedules its callbacks; one that fails drops them
/// all, the task's wake-up among them) or from a Future that refused for
/// another reason: either way the task is not woken, and may never run
/// again (asyncio's own semaphore strands it the same way). Its grant is
/// handed on (released to the next waiters) rather than kept for a task
/// that may never use it: permits stay conserved; should the task resume
/// after all, its acquire raises `RuntimeError` (the grant was handed on).
/// The exception goes to `err`, for the release that ran the wake (or the
/// drain, [`Batch::undelivered`]) to raise once every other wake is
/// delivered; a second one to `sys.unraisablehook`.
#[cold]
#[inline(never)]
fn refused(py: Python<'_>, slot: &Slot, fut: &Bound<'_, PyAny>, e: PyErr, err: &mut Option<PyErr>) {
    let cancelled = fut
        .call_method0(pyo3::intern!(py, "cancelled"))
        .and_then(|d| d.is_truthy())
        .unwrap_or(false);
    if cancelled {
        return;
    }
    slot.delivered.store(false, Ordering::Relaxed); // a trio task can still abort
    hand_on(slot);
    keep_first(py, err, e, Some(fut));
}

/// Keeps `e` in `err` for the caller to raise if it holds none yet; else
/// reports it through `sys.unraisablehook` (with `obj`).
#[cold]
#[inline(never)]
fn keep_first(py: Python<'_>, err: &mut Option<PyErr>, e: PyErr, obj: Option<&Bound<'_, PyAny>>) {
    match err {
        None => *err = Some(e),
        Some(_) => e.write_unraisable(py, obj),
    }
}

/// The first part of [`after_wakes`]: the slots [`push_to_loop`] kept on
/// this thread ([`DIRECT`]), woken inside [`waking`] for a loop created on
/// this thread. When that loop is the one running here (the usual case: a
/// task releasing to a task of its own loop), each Future is resolved at
/// once, with no queue lock and no socket; grants other threads queued on
/// the same channel before are resolved with them, as the own-loop drain
/// does. A slot whose loop does not run here (another loop of this thread,
/// one stopped or closed) goes the general way: queued on its channel, the
/// signal owed to the loop below.
fn resolve_direct(py: Python<'_>, err: &mut Option<PyErr>) {
    // A nested release (a loop whose `call_soon` releases) fills a new one.
    let mut batch = take_list(&DIRECT);
    if batch.is_empty() {
        return;
    }
    let mut running: Option<Option<Bound<'_, PyAny>>> = None;
    // The channel last asked about and whether its loop runs here: one
    // question per channel (a batch is almost always one loop's).
    let mut asked: Option<(*const Chan, bool)> = None;
    // A slot of the channel whose loop runs here.
    let mut ran_here: Option<usize> = None;
    for (i, slot) in batch.iter().enumerate() {
        let chan = Arc::as_ptr(&slot.chan);
        let here = match asked {
            Some((c, here)) if std::ptr::eq(c, chan) => here,
            _ => {
                let here =
                    !slot.chan.dead.load(Ordering::SeqCst) && slot.chan.runs_here(py, &mut running);
                asked = Some((chan, here));
                here
            }
        };
        if here {
            ran_here = Some(i);
            resolve_here(py, slot, err);
        } else {
            queue_on_chan(slot.clone(), true, true);
        }
    }
    if let Some(i) = ran_here {
        // Wakes other threads queued on this loop's channel (rare: only
        // then does any channel hold undrained slots).
        let chan = &batch[i].chan;
        if UNDRAINED.load(Ordering::Acquire) != 0 && !chan.is_empty() {
            chan.drain_on_own_loop(py, err);
        }
    }
    batch.clear();
    let _ = DIRECT.try_with(|d| {
        if let Ok(mut d) = d.try_borrow_mut() {
            if d.is_empty() {
                let old = std::mem::replace(&mut *d, batch);
                if old.capacity() == 0 {
                    // The list `take_list` left, never allocated: nothing
                    // to free, so no call of the drop glue per release.
                    std::mem::forget(old);
                }
            }
        }
    });
}

/// `fut.set_result(True)` through `PyObject_CallMethodObjArgs`, which
/// calls the method without creating a bound method or an argument tuple.
fn set_result_true(py: Python<'_>, fut: &Bound<'_, PyAny>) -> PyResult<()> {
    let name = pyo3::intern!(py, "set_result");
    // SAFETY: GIL held; `fut`, `name` and `Py_True` are valid objects for
    // the call, and the argument list ends with NULL as the function
    // requires. The result is a new reference (or NULL with an exception
    // set), owned by the `Bound` that takes it.
    unsafe {
        let r = pyo3::ffi::PyObject_CallMethodObjArgs(
            fut.as_ptr(),
            name.as_ptr(),
            pyo3::ffi::Py_True(),
            std::ptr::null_mut::<pyo3::ffi::PyObject>(),
        );
        Bound::from_owned_ptr_or_err(py, r).map(drop)
    }
}

// ---------------------------------------------------------------------------
// The Python face of a channel
// ---------------------------------------------------------------------------

/// A wake channel (internal): created by `volt_sem._glue` once per event loop or
/// trio run, its `fileno()` watched by that loop.
#[pyclass(module = "volt_sem._volt_sem", frozen)]
pub(crate) struct Channel {
    pub(crate) chan: Arc<Chan>,
}

#[pymethods]
impl Channel {
    /// `Channel(loop_ref, probe, reader=True)`: `loop_ref` is
    /// `weakref.ref(loop)` or `None` (trio); `probe` 0 never, 1 read `_closed`,
    /// 2 call a native `is_closed`; `reader` false for the thread wake path (a
    /// helper thread reads `reader_handle()`, `take` leaves the socket alone).
    #[new]
    #[pyo3(signature = (loop_ref, probe, reader = true))]
    fn new(loop_ref: Option<Py<PyWeakrefReference>>, probe: u8, reader: bool) -> PyResult<Self> {
        let sock = WakeSocket::new()?;
        let probe = match probe {
            1 => Probe::ClosedAttr,
            2 => Probe::NativeMethod,
            _ => Probe::Never,
        };
        // Created on the loop's thread while it runs (`volt_sem._glue`).
        let thread = if loop_ref.is_some() {
            thread_ident()
        } else {
            0
        };
        let channel = Channel {
            chan: Arc::new(Chan {
                queue: Mutex::new(Vec::new()),
                sock,
                reader,
                dead: AtomicBool::new(false),
                probe,
                loop_ref,
                thread,
                owed: AtomicBool::new(false),
                signalled: AtomicBool::new(false),
            }),
        };
        if channel.chan.loop_ref.is_some() {
            let mut all = LOOP_CHANS.lock().unwrap_or_else(|e| e.into_inner());
            all.retain(|c| c.strong_count() > 0);
            all.push(Arc::downgrade(&channel.chan));
        }
        Ok(channel)
    }

    /// The socket the loop watches for readability (a file descriptor on Unix,
    /// a `SOCKET` handle on Windows).
    fn fileno(&self) -> RawSocket {
        self.chan.sock.fileno()
    }

    /// A new descriptor of the read end, owned by the caller (the thread wake
    /// path's helper wraps it in a `socket.socket`).
    fn reader_handle(&self) -> PyResult<RawSocket> {
        Ok(self.chan.sock.reader_handle()?)
    }

    /// Writes a signal byte as a wake does (the thread wake path uses it to
    /// stop its helper once the loop is gone).
    fn signal(&self) {
        self.chan.sock.signal();
    }

    /// The slots woken since the last call, as a [`Batch`] that yields
    /// their targets (Futures or trio tasks).
    fn take(&self) -> Batch {
        Batch {
            slots: self.chan.take_all().into_iter(),
            current: None,
        }
    }

    /// The loop (or run) is over: hand on every grant queued here or arriving later.
    fn kill(&self, py: Python<'_>) -> PyResult<()> {
        self.chan.kill();
        after_wakes(py)
    }

    /// Whether the channel was killed.
    #[getter]
    fn dead(&self) -> bool {
        self.chan.dead.load(Ordering::SeqCst)
    }

    /// How many woken slots wait for the next drain (tests: settle the thread
    /// wake path before checking who was woken).
    #[getter]
    fn queued(&self) -> usize {
        self.chan.lock().len()
    }

    /// Whether the loop reads the socket itself (false: the thread wake path).
    #[getter]
    fn reader(&self) -> bool {
        self.chan.reader
    }
}

/// The slots one drain took from its channel ([`Channel::take`]), for the
/// drain in `volt_sem._glue` (Python frames, see the module docs) to
/// iterate: each step yields the target of the next slot its owner has not
/// finished yet, marked delivered. When the drain cannot deliver a target
/// (`set_result` raised: the loop's `call_soon`, a `KeyboardInterrupt`
/// arriving there; trio's `reschedule`), it calls
/// [`undelivered`](Batch::undelivered) and goes on with the rest: that
/// slot's grant is handed on, as a release on the loop's own thread does
/// ([`refused`]), and the drain raises the first exception once every other
/// target was delivered. A batch dropped before its end (an exception
/// outside that handling) queues the slots it did not reach back on their
/// channel, for the next drain.
#[pyclass(module = "volt_sem._volt_sem")]
pub(crate) struct Batch {
    slots: std::vec::IntoIter<Pin<Arc<Slot>>>,
    /// The slot of the target yielded last.
    current: Option<Pin<Arc<Slot>>>,
}

#[pymethods]
impl Batch {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&mut self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.current = None;
        for slot in self.slots.by_ref() {
            if slot.claim.load(Ordering::Acquire) == OPEN {
                slot.delivered.store(true, Ordering::Relaxed);
                let target = slot.target.clone_ref(py);
                self.current = Some(slot);
                return Some(target);
            }
        }
        None
    }

    /// The target yielded last could not be delivered: `exc` was raised.
    /// Hands its grant on (unless its Future was cancelled meanwhile: its
    /// task's cancel deals with the grant) and returns the exception the
    /// drain raises at its end: `first`, the one an earlier call returned,
    /// if any (`exc` then goes to `sys.unraisablehook`), else `exc`.
    #[pyo3(signature = (exc, first = None))]
    fn undelivered(
        &mut self,
        py: Python<'_>,
        exc: Bound<'_, PyBaseException>,
        first: Option<Bound<'_, PyBaseException>>,
    ) -> Option<Py<PyBaseException>> {
        let mut err = first.map(|e| PyErr::from_value(e.into_any()));
        let exc = PyErr::from_value(exc.into_any());
        if let Some(slot) = self.current.take() {
            refused(py, &slot, slot.target.bind(py), exc, &mut err);
            // The grants it handed on may have woken others (on this
            // thread's running loop: resolved here, as a release does).
            if let Err(e) = after_wakes(py) {
                keep_first(py, &mut err, e, None);
            }
        } else {
            keep_first(py, &mut err, exc, None);
        }
        err.map(|e| e.into_value(py))
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        for slot in self.slots.by_ref() {
            queue_on_chan(slot, false, false);
        }
    }
}

static ASYNCIO_CHANNEL: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static DIRECT_WAKES_SAFE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static DAEMON_CHANNEL: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// Whether `event_loop`, an asyncio loop with asyncio's own `is_closed`
/// (`Probe::ClosedAttr`), runs on this thread: asyncio's `run_forever` keeps
/// the running thread's ident in `_thread_id` (None when stopped), and one
/// thread runs one loop at a time. An attribute read instead of
/// `_get_running_loop`, whose fork check is a `getpid` system call. A
/// subclass that runs otherwise leaves it None: the caller then takes the
/// general path.
fn stock_loop_runs_here(py: Python<'_>, event_loop: &Bound<'_, PyAny>) -> bool {
    use pyo3::ffi;
    let name = pyo3::intern!(py, "_thread_id");
    // Through the C API (twice per contended acquire+release: the wait's
    // loop lookup and the wake): an attribute read and an int compare.
    // SAFETY: GIL held; `event_loop` and `name` are live objects. The
    // attribute is a new reference (NULL with an error set, which is
    // cleared: the answer is then no), released before returning; an int
    // is read only after the type check, so no error is set by it (one
    // that overflows a u64 is no thread's identifier, and its error is
    // cleared too).
    unsafe {
        let t = ffi::PyObject_GetAttr(event_loop.as_ptr(), name.as_ptr());
        if t.is_null() {
            ffi::PyErr_Clear();
            return false;
        }
        let here = if ffi::PyLong_Check(t) != 0 {
            let v = ffi::PyLong_AsUnsignedLongLong(t);
            if v == u64::MAX && !ffi::PyErr_Occurred().is_null() {
                ffi::PyErr_Clear();
                false
            } else {
                v == thread_ident()
            }
        } else {
            false // None: not running
        };
        ffi::Py_DECREF(t);
        here
    }
}

/// This thread's running loop and its channel without `_get_running_loop`,
/// when that loop is the one this thread parked on last and runs asyncio's
/// own `run_forever` ([`stock_loop_runs_here`]); `None`: look it up.
pub(crate) fn cached_running_loop(py: Python<'_>) -> Option<(Bound<'_, PyAny>, Arc<Chan>)> {
    let chan = LAST_CHAN.with(|c| c.borrow().clone())?;
    if chan.probe != Probe::ClosedAttr || chan.dead.load(Ordering::SeqCst) {
        return None;
    }
    let event_loop = chan.loop_ref.as_ref()?.bind(py).upgrade()?;
    if !stock_loop_runs_here(py, &event_loop) {
        return None;
    }
    Some((event_loop, chan))
}

/// The wake channel of `event_loop` (the running loop of this thread) for a
/// wait (an acquire's or a `lease_lost()` watch's), created and registered
/// with the loop by `volt_sem._glue` the first time; the last one is cached
/// per thread, checked by identity of its loop. It must not be connected
/// under this extension's frames on a thread that may be a daemon one (not
/// known safe for [`direct_thread`]): there, before a loop's first wait, the
/// channel comes back made but not connected, with its Python object, and
/// the wait, once registered on it, yields `volt_sem._glue.ConnectThenWait`
/// instead of its Future (`awaitable::wait_on`). Connecting calls
/// `loop.add_reader` (or starts the thread wake path's helper), which drops
/// the GIL; a daemon thread taking it back once the interpreter finalizes is
/// ended by a forced unwind (`pthread_exit`) that cannot cross `extern "C"`
/// frames: under `park` (`tests/scripts/exit_in_channel_setup.py`) and under
/// `LeaseLost`'s step (`tests/scripts/exit_in_lease_watch.py`), the process
/// aborted. asyncio's Task calls the yielded object's `add_done_callback`
/// from its own C frame, where the connect runs in Python frames only. A
/// known non-daemon thread is joined before finalization and connects in
/// place.
#[inline(never)]
pub(crate) fn asyncio_chan_or_setup<'py>(
    py: Python<'py>,
    event_loop: &Bound<'py, PyAny>,
) -> PyResult<(Arc<Chan>, Option<Bound<'py, PyAny>>)> {
    let cached = LAST_CHAN.with(|c| c.borrow().clone());
    if let Some(chan) = cached {
        if let Some(loop_ref) = &chan.loop_ref {
            let same = loop_ref
                .bind(py)
                .upgrade()
                .is_some_and(|l| l.is(event_loop));
            if same && !chan.dead.load(Ordering::SeqCst) {
                return Ok((chan, None));
            }
        }
    }
    if DIRECT_THREAD.with(Cell::get) == UNKNOWN {
        // Once per thread, in a call that runs Python code anyway.
        let safe = DIRECT_WAKES_SAFE
            .import(py, "volt_sem._glue", "direct_wakes_safe")?
            .call0()?
            .is_truthy()?;
        DIRECT_THREAD.with(|d| d.set(if safe { SAFE } else { UNSAFE }));
    }
    let (channel, connected) = if DIRECT_THREAD.with(Cell::get) == SAFE {
        let channel = ASYNCIO_CHANNEL
            .import(py, "volt_sem._glue", "asyncio_channel")?
            .call1((event_loop,))?;
        (channel, true)
    } else {
        // No call that drops the GIL: it returns the channel as it is.
        DAEMON_CHANNEL
            .import(py, "volt_sem._glue", "channel_or_setup")?
            .call1((event_loop,))?
            .extract::<(Bound<'py, PyAny>, bool)>()?
    };
    let chan = channel.cast::<Channel>()?.get().chan.clone();
    if !connected {
        return Ok((chan, Some(channel)));
    }
    LAST_CHAN.with(|c| *c.borrow_mut() = Some(chan.clone()));
    Ok((chan, None))
}
