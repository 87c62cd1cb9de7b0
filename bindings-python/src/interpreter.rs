//! What this thread's interpreter is doing, for every wait path: whether
//! `volt_sem`'s `atexit` hook ran (the interpreter is about to finalize),
//! and which asyncio loop runs on this thread. No other module of the
//! extension is imported here: the wake path and the waits both ask.
//!
//! # The exit gate
//!
//! CPython 3.9 to 3.13 end a thread that takes the GIL back once the
//! interpreter finalizes with `pthread_exit`, a forced unwind. It crosses
//! Python's and CPython's own frames, but not this extension's: pyo3's
//! trampolines are `extern "C"` (abort on unwind) and call the body under
//! `catch_unwind` (which cannot let a foreign unwind through either), and
//! pyo3-ffi declares CPython's functions `extern "C"`, so an unwind out of
//! one meets a call site that may not unwind. The process then aborts
//! (SIGABRT, at times SIGSEGV). CPython 3.14 hangs such a thread instead
//! (gh-87135, python/cpython#105805). pyo3-ffi (0.30, built for the abi3
//! 3.9 target, i.e. for 3.9-3.13) does the same around the two calls it
//! wraps itself, `PyEval_RestoreThread` (the end of every `py.detach`) and
//! `PyGILState_Ensure` (`Python::attach` on a thread not attached yet): it
//! calls them as `C-unwind` with a guard whose drop parks the thread, so a
//! thread of ours that takes the GIL back *there* parks for good. Any other place where Python code called from
//! these frames drops the GIL and takes it back (a selector call in
//! `loop.add_reader`, an import lock, a custom loop's `create_future`, or
//! just the eval loop handing the GIL to another thread every switch
//! interval) is not covered by that, and aborts if finalization began in
//! between. Moving each such call out (as `_glue.ConnectThenWait` does for a
//! loop's first wait) only removes the ones found.
//!
//! The gate closes that window for every call made under a gated entry
//! point ([`gate`]): the resumptions of the awaitables (`__await__`,
//! `__next__`, `send` and `throw` of `Acquire` and `LeaseLost`), through
//! which a daemon thread's asyncio loop resumes its waits and under which
//! they call the loop's code (`create_future`, `call_soon`,
//! `add_done_callback`, a custom loop's methods) and, in `__await__`, trio's
//! probes. Such an entry counts the threads inside (threads other than the
//! main one, which finalizes and is never ended that way), and `volt_sem`'s
//! `atexit` hook, after setting [`EXITING`], waits with the GIL released
//! until none is inside (at most [`EXIT_WAIT`]). A thread that reaches a
//! gated entry after that waits there, GIL released, for [`EXIT_WAIT`]
//! after the hook returned. `atexit` hooks run after `threading` joined the
//! non-daemon threads and before finalization starts (`Py_FinalizeEx`); the
//! hooks that run after ours (registered before `import volt_sem`, such as
//! `logging`'s flush, where the GIL passes to other threads) are usually
//! done well within that time, and CPython sets the finalizing state right
//! after the last one. So a daemon thread's loop is kept out of our frames
//! from our hook until finalization has begun; it then takes the GIL back
//! at the end of that wait, which pyo3-ffi's guarded `PyEval_RestoreThread`
//! turns into parking for good (as CPython 3.14 parks it). The argument
//! needs nothing about *which* Python code runs under a gated entry: it
//! covers calls not written yet too.
//!
//! Bounded, not for good: a later `atexit` hook may itself wait for a
//! daemon thread's loop (a library that runs its loop in a daemon thread
//! and, at exit, hands it its last work, cancels its tasks or joins it);
//! that loop must go on. Such a hook is delayed by [`EXIT_WAIT`] once (then
//! the gate is open again for every thread:
//! `tests/test_exit.py::test_daemon_loop_served_while_a_later_atexit_hook_waits_for_it`).
//! The window the gate closes then reopens only for a process whose later
//! hooks run longer than that.
//!
//! A child made by `fork()` starts with no thread inside ([`_forked_child`],
//! an `os.register_at_fork` hook): the parent's threads that were are not
//! in the child (`tests/test_exit.py::test_a_forked_child_counts_none_of_the_parents_threads_inside_the_gate`).
//!
//! Not gated, so not covered: the release paths (`release`, `__aexit__`,
//! `__exit__`, the locks'). A later `atexit` hook may wait for a daemon
//! thread's release (`tests/scripts/blocking_in_atexit.py`), which must not
//! wait; their only Python call that may drop the GIL is the owner lookup of
//! a Redis handle in a trio task (`trio.lowlevel.current_task`, Python code;
//! asyncio's is C). Nor a thread still inside after the hook's own wait: one
//! whose Python call blocks; it aborts as before only if that call comes
//! back during finalization. Destructors (`Acquire`'s drop cancels its
//! wait), which run on whichever thread drops the object, and the methods of
//! `TrioWaiter` that `_glue`'s trio driver calls are not gated either.

use std::cell::Cell;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

/// Set by the `atexit` hook: the interpreter is about to finalize.
static EXITING: AtomicBool = AtomicBool::new(false);

/// The thread that ran the `atexit` hook.
static EXIT_THREAD: OnceLock<thread::ThreadId> = OnceLock::new();

/// Threads other than the main one inside a gated entry point.
static INSIDE: AtomicUsize = AtomicUsize::new(0);

/// Signalled when a thread leaves the gate once the `atexit` hook ran.
static LEFT: (Mutex<()>, Condvar) = (Mutex::new(()), Condvar::new());

/// When the `atexit` hook returned: gated entries wait until [`EXIT_WAIT`]
/// after it, then the gate is open again ([`REOPENED`]).
static HOOK_DONE: OnceLock<Instant> = OnceLock::new();

/// The gate's wait after the hook is over: every entry goes on.
static REOPENED: AtomicBool = AtomicBool::new(false);

/// How long the `atexit` hook waits for the threads inside the gate (they
/// only wait for the GIL, which the hook released, or run a Python call of
/// the loop: `create_future`, `call_soon`, ...; a call blocked for good must
/// not keep the process from exiting), and how long after it the gate stays
/// closed (the later `atexit` hooks, then finalization, begin within it).
const EXIT_WAIT: Duration = Duration::from_secs(2);

std::thread_local! {
    /// Gated entry points this thread is inside (nested ones count once in
    /// [`INSIDE`]); `u32::MAX` on the main thread, which is not counted.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

const MAIN: u32 = u32::MAX;

/// `volt_sem`'s `atexit` hook (registered by `volt_sem/__init__.py`): the
/// interpreter is about to finalize. Waits, GIL released, until no other
/// thread is inside a gated entry point (see the module docs).
#[pyfunction]
pub(crate) fn _interpreter_exiting(py: Python<'_>) {
    // A sub-interpreter that imported `volt_sem` runs its own `atexit` hooks
    // when it is destroyed, this one among them, while the main interpreter
    // (the process) goes on: only the main one's exit (ID 0) closes the gate
    // and ends blocking waits; the state is process-wide.
    // SAFETY: plain queries of the current interpreter; the GIL is held.
    let id = unsafe { pyo3::ffi::PyInterpreterState_GetID(pyo3::ffi::PyInterpreterState_Get()) };
    if id != 0 {
        return;
    }
    let _ = EXIT_THREAD.set(thread::current().id());
    EXITING.store(true, Ordering::SeqCst);
    // The hook's own thread, if not the main one, may be counted (a hook run
    // from inside an entry point, by `atexit._run_exitfuncs()`).
    let own = usize::from(DEPTH.with(|d| d.get() != 0 && d.get() != MAIN));
    if INSIDE.load(Ordering::SeqCst) > own {
        wait_for_inside(py, own);
    }
    let _ = HOOK_DONE.set(Instant::now());
}

/// `os.register_at_fork(after_in_child=...)` (registered by
/// `volt_sem/__init__.py`): a child made by `fork()` has only the forking
/// thread, which CPython makes its main thread. None of the parent's other
/// threads exists there, so none is inside the gate: a count copied from the
/// parent would make the child's `atexit` hook wait for them (up to
/// [`EXIT_WAIT`]) for nothing.
#[pyfunction]
pub(crate) fn _forked_child() {
    crate::set_main_thread_here();
    record::after_fork();
    INSIDE.store(0, Ordering::SeqCst);
    // Entries this thread is inside (if it forked from one) now count as the
    // main thread's: never in INSIDE, so their guards' drops must not leave.
    let _ = DEPTH.try_with(|d| d.set(MAIN));
}

/// How many threads (other than the main one) are inside a gated entry
/// point now: for the tests of the exit gate (`tests/test_exit.py`).
#[pyfunction]
pub(crate) fn _exit_gate_threads_inside() -> usize {
    INSIDE.load(Ordering::SeqCst)
}

/// The hook's wait: until at most `own` threads are inside (GIL released,
/// at most [`EXIT_WAIT`]).
fn wait_for_inside(py: Python<'_>, own: usize) {
    py.detach(|| {
        let deadline = Instant::now() + EXIT_WAIT;
        let mut guard = LEFT.0.lock().unwrap_or_else(|e| e.into_inner());
        while INSIDE.load(Ordering::SeqCst) > own {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            guard = LEFT
                .1
                .wait_timeout(guard, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    });
}

/// A thread inside a gated entry point (see [`gate`]). Neither `Send` nor
/// `Sync`: its drop must run on the thread that entered (it updates that
/// thread's [`DEPTH`]), so it cannot be moved to, or kept in an object
/// dropped on, another thread.
pub(crate) struct Inside {
    /// Counted in [`DEPTH`] (not the main thread): the drop leaves.
    counted: bool,
    _thread_bound: PhantomData<*const ()>,
}

/// Enters a gated entry point of this extension: call it first, before
/// anything runs Python code or takes a borrow of a `#[pyclass]` (a thread
/// parked here holds none). Counts the thread inside until the returned
/// guard drops; once the `atexit` hook ran, first waits (GIL released)
/// until [`EXIT_WAIT`] after the hook returned, unless the gate reopened
/// already (not on the main thread, nor the hook's); the GIL re-take at the
/// end of that wait parks the thread for good if finalization has begun.
/// See the module docs.
#[inline]
pub(crate) fn gate(py: Python<'_>) -> Inside {
    // Not counted either once this thread's locals are gone (a destructor
    // run while the thread ends).
    let depth = DEPTH.try_with(Cell::get).unwrap_or(MAIN);
    if depth == MAIN {
        // Nothing to undo: the drop need not read `DEPTH` again.
        return Inside {
            counted: false,
            _thread_bound: PhantomData,
        };
    }
    enter(py, depth)
}

/// [`gate`] on a thread other than the main one (or the main one's first
/// entry), out of line: the main thread's entries, the commonest, stay a
/// thread-local read in their callers.
#[inline(never)]
fn enter(py: Python<'_>, depth: u32) -> Inside {
    if depth == 0 && crate::on_main_thread() {
        let _ = DEPTH.try_with(|d| d.set(MAIN));
        return Inside {
            counted: false,
            _thread_bound: PhantomData,
        };
    }
    if depth == 0 {
        INSIDE.fetch_add(1, Ordering::SeqCst);
        // SeqCst with the hook's store and load: either the hook sees this
        // thread inside, or this thread sees the hook ran.
        if interpreter_exiting() && !REOPENED.load(Ordering::SeqCst) {
            leave();
            // Out of our frames until finalization has begun (or a later
            // hook has run for EXIT_WAIT): the GIL is taken back at the end
            // by pyo3-ffi's guarded call, which parks for good if the
            // interpreter is finalizing by then.
            py.detach(wait_for_reopening);
            INSIDE.fetch_add(1, Ordering::SeqCst);
        }
    }
    let _ = DEPTH.try_with(|d| d.set(depth + 1));
    Inside {
        counted: true,
        _thread_bound: PhantomData,
    }
}

/// Waits (GIL released) until [`EXIT_WAIT`] after the `atexit` hook
/// returned, then opens the gate for every thread.
fn wait_for_reopening() {
    loop {
        let now = Instant::now();
        match HOOK_DONE.get() {
            Some(&done) if now >= done + EXIT_WAIT => break,
            Some(&done) => thread::sleep(done + EXIT_WAIT - now),
            // The hook is still waiting for the threads inside.
            None => thread::sleep(Duration::from_millis(10)),
        }
    }
    REOPENED.store(true, Ordering::SeqCst);
}

fn leave() {
    INSIDE.fetch_sub(1, Ordering::SeqCst);
    if EXITING.load(Ordering::SeqCst) {
        drop(LEFT.0.lock().unwrap_or_else(|e| e.into_inner()));
        LEFT.1.notify_all();
    }
}

impl Drop for Inside {
    /// Inline: the main thread's guard, the commonest, has nothing to undo
    /// (a flag test in the caller, where an out-of-line drop cost a call and
    /// its instruction-cache lines per entry).
    #[inline]
    fn drop(&mut self) {
        if self.counted {
            left_gate();
        }
    }
}

/// [`Inside`]'s drop for a counted entry (off the main thread), out of line.
#[inline(never)]
fn left_gate() {
    let _ = DEPTH.try_with(|d| match d.get() {
        MAIN | 0 => {}
        1 => {
            d.set(0);
            leave();
        }
        depth => d.set(depth - 1),
    });
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

/// `asyncio._get_running_loop`, looked up once.
static GET_RUNNING_LOOP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// The running asyncio loop of this thread, or `None` (C-level, no exception).
/// Where `asyncio` was never imported no loop can run, and nothing is
/// looked up: that lookup would import it, Python code run under this
/// extension's frames, where a blocking wait's is not gated (see the module
/// docs).
pub(crate) fn running_loop(py: Python<'_>) -> PyResult<Option<Bound<'_, PyAny>>> {
    if GET_RUNNING_LOOP.get(py).is_none() && !asyncio_imported(py) {
        return Ok(None);
    }
    if let Some(answer) = record::running_loop(py) {
        return Ok(answer);
    }
    let l = GET_RUNNING_LOOP
        .import(py, "asyncio", "_get_running_loop")?
        .call0()?;
    let l = if l.is_none() { None } else { Some(l) };
    record::learn(py, l.as_ref());
    Ok(l)
}

/// asyncio's own record of a thread's running loop, read without
/// `_get_running_loop`'s `getpid` system call (about 140 ns here; uvloop's
/// loops, whose running thread has no attribute to read, asked it twice per
/// contended acquire+release: issue 30).
///
/// CPython 3.9 to 3.11 (`Modules/_asynciomodule.c`) keep it in the thread
/// state's dict under `__asyncio_running_event_loop__`: a
/// `_RunningLoopHolder` with the loop (or `None`) and the id of the process
/// that set it; `_get_running_loop` gives the loop when that id is this
/// process's (a forked child sees none), which is what [`running_loop`]
/// answers here, with the process id read once (and again in a forked child,
/// [`after_fork`]). The holder's layout is not public, so it is checked
/// once against `_get_running_loop`'s own answer ([`learn`]), on a thread
/// running a loop; any other outcome (another version, another layout, no
/// record) leaves the reading off for good, and every call asks
/// `_get_running_loop` as before. CPython 3.12 and later keep it otherwise
/// and ask no `getpid`: never read there.
#[cfg(unix)]
mod record {
    use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicU8, Ordering};

    use pyo3::ffi;
    use pyo3::prelude::*;

    /// `PyRunningLoopHolder` of CPython 3.9 to 3.11 (Unix).
    #[repr(C)]
    struct Holder {
        head: ffi::PyObject,
        rl_loop: *mut ffi::PyObject,
        rl_pid: i32,
    }

    const UNKNOWN: u8 = 0;
    const ON: u8 = 1;
    const OFF: u8 = 2;

    static STATE: AtomicU8 = AtomicU8::new(UNKNOWN);
    /// The holder's type, as checked by [`learn`].
    static HOLDER_TYPE: AtomicPtr<ffi::PyTypeObject> = AtomicPtr::new(std::ptr::null_mut());
    /// This process's id (`getpid`), as of [`learn`] or the last fork.
    static PID: AtomicI32 = AtomicI32::new(0);

    /// The record of the calling thread (borrowed; GIL held), if any.
    fn holder(py: Python<'_>) -> Option<*mut ffi::PyObject> {
        let key = pyo3::intern!(py, "__asyncio_running_event_loop__");
        // SAFETY: GIL held. `PyThreadState_GetDict` returns a borrowed dict
        // (NULL, no error set, without a thread state); the item is
        // borrowed too, valid while no Python code runs (none does before
        // the caller reads it). An error of the lookup is cleared: the
        // caller then asks `_get_running_loop`.
        unsafe {
            let dict = ffi::PyThreadState_GetDict();
            if dict.is_null() {
                return None;
            }
            let h = ffi::PyDict_GetItemWithError(dict, key.as_ptr());
            if h.is_null() {
                if !ffi::PyErr_Occurred().is_null() {
                    ffi::PyErr_Clear();
                }
                return None;
            }
            Some(h)
        }
    }

    /// `_get_running_loop()`'s answer from the record (`None`: ask it).
    pub(super) fn running_loop(py: Python<'_>) -> Option<Option<Bound<'_, PyAny>>> {
        if STATE.load(Ordering::Relaxed) != ON {
            return None;
        }
        let h = holder(py)?;
        // SAFETY: `h` is a live object (see `holder`); it is read as a
        // holder only when its type is the one `learn` checked the layout
        // of, and its loop is a live object it references.
        unsafe {
            if ffi::Py_TYPE(h) != HOLDER_TYPE.load(Ordering::Relaxed) {
                return None;
            }
            let holder = &*(h as *const Holder);
            if holder.rl_loop == ffi::Py_None() || holder.rl_pid != PID.load(Ordering::Relaxed) {
                return Some(None);
            }
            Some(Some(Bound::from_borrowed_ptr(py, holder.rl_loop)))
        }
    }

    /// Checks the record's layout against `_get_running_loop`'s answer
    /// `answer`, once, on the first call that finds a loop running.
    pub(super) fn learn(py: Python<'_>, answer: Option<&Bound<'_, PyAny>>) {
        if STATE.load(Ordering::Relaxed) != UNKNOWN {
            return;
        }
        let Some(running) = answer else {
            return; // nothing to check against yet
        };
        if py.version_info() >= (3, 12) {
            STATE.store(OFF, Ordering::Relaxed);
            return;
        }
        let Some(h) = holder(py) else {
            STATE.store(OFF, Ordering::Relaxed);
            return;
        };
        let pid = std::process::id() as i32;
        // SAFETY: on 3.9 to 3.11 the record is always a holder (the
        // layout above, at least as large), never `None` itself; the fields
        // are only compared with known values.
        let fits = unsafe {
            let holder = &*(h as *const Holder);
            h != ffi::Py_None() && holder.rl_loop == running.as_ptr() && holder.rl_pid == pid
        };
        if fits {
            // SAFETY: `h` is a live object.
            HOLDER_TYPE.store(unsafe { ffi::Py_TYPE(h) }, Ordering::Relaxed);
            PID.store(pid, Ordering::Relaxed);
        }
        STATE.store(if fits { ON } else { OFF }, Ordering::Relaxed);
    }

    /// In a child made by `fork()`: records set by the parent name the
    /// parent's process, and are no longer this one's.
    pub(super) fn after_fork() {
        PID.store(std::process::id() as i32, Ordering::Relaxed);
    }
}

#[cfg(not(unix))]
mod record {
    use pyo3::prelude::*;

    pub(super) fn running_loop(_py: Python<'_>) -> Option<Option<Bound<'_, PyAny>>> {
        None
    }

    pub(super) fn learn(_py: Python<'_>, _answer: Option<&Bound<'_, PyAny>>) {}

    pub(super) fn after_fork() {}
}

/// Whether `asyncio` is in `sys.modules` (a dictionary lookup: no import).
fn asyncio_imported(py: Python<'_>) -> bool {
    let name = pyo3::intern!(py, "asyncio");
    // SAFETY: `name` is a live str; `PyImport_GetModule` returns a new
    // reference, or NULL when the module is not there (an error set only
    // if the lookup itself failed, taken below).
    let module =
        unsafe { Bound::from_owned_ptr_or_opt(py, pyo3::ffi::PyImport_GetModule(name.as_ptr())) };
    if module.is_none() {
        let _ = PyErr::take(py);
    }
    module.is_some()
}
