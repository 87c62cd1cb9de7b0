//! Test-only fault injection, compiled in (one relaxed load on the release
//! paths) so that the crash tests can use the very library that ships.

use core::sync::atomic::{AtomicU8, Ordering};

const OFF: u8 = 0;
/// The next release takes the lock and stops inside it.
const LOCKED: u8 = 1;
/// The next release stops inside the fast path.
const FAST: u8 = 2;

static STOP_IN_RELEASE: AtomicU8 = AtomicU8::new(OFF);

/// Whether the next release must take the lock (so that the locked hook fires).
#[inline]
pub(crate) fn release_must_lock() -> bool {
    STOP_IN_RELEASE.load(Ordering::Relaxed) == LOCKED
}

/// Called inside `release`'s critical section, after the releaser's `held`
/// was lowered and before the permits reach the FIFO or the counter: the
/// worst moment to die.
#[inline]
pub(crate) fn in_release_critical_section() {
    if STOP_IN_RELEASE.load(Ordering::Relaxed) == LOCKED {
        stop_self();
    }
}

/// Called inside the lock-free release, after `held` was lowered and `busy`
/// raised and before the permits reach the counter: the permits are in
/// transit, no lock is held.
#[inline]
pub(crate) fn in_fast_release() {
    if STOP_IN_RELEASE.load(Ordering::Relaxed) == FAST {
        stop_self();
    }
}

#[cold]
fn stop_self() {
    STOP_IN_RELEASE.store(OFF, Ordering::Relaxed);
    #[cfg(target_os = "linux")]
    // SAFETY: raise is async-signal-safe and has no memory preconditions.
    unsafe {
        libc::raise(libc::SIGSTOP);
    }
}

/// **Tests only.** The next `release` of this process stops it (`SIGSTOP`)
/// inside the segment lock, half-way through, so that a test can `kill -9` it
/// there and check the repair.
#[doc(hidden)]
pub fn stop_in_next_release() {
    STOP_IN_RELEASE.store(LOCKED, Ordering::Relaxed);
}

/// **Tests only.** The next `release` of this process stops it (`SIGSTOP`)
/// inside the lock-free fast path, with the permits in transit, so that a
/// test can `kill -9` it there and check the recount.
#[doc(hidden)]
pub fn stop_in_next_fast_release() {
    STOP_IN_RELEASE.store(FAST, Ordering::Relaxed);
}

/// The name whose next `open` pauses (see [`pause_next_open_of`] and
/// [`pause_next_open_of_holding_init_lock`]), where it pauses, and where that
/// pause stands.
static OPEN_PAUSE: std::sync::Mutex<(Option<String>, OpenPause, PauseAt)> =
    std::sync::Mutex::new((None, OpenPause::Off, PauseAt::AfterAttach));
static OPEN_PAUSED: std::sync::Condvar = std::sync::Condvar::new();
/// Whether a pause is armed: one relaxed load per `open` otherwise.
static OPEN_PAUSE_ARMED: core::sync::atomic::AtomicBool =
    core::sync::atomic::AtomicBool::new(false);

#[derive(Clone, Copy, PartialEq, Eq)]
enum OpenPause {
    Off,
    Armed,
    Paused,
}

/// The two points of `open` a test can pause it at.
#[derive(Clone, Copy, PartialEq, Eq)]
enum PauseAt {
    /// Attached, init lock released, about to return.
    AfterAttach,
    /// Holding the segment's init lock, before reading the file.
    HoldingInitLock,
}

fn open_pause() -> std::sync::MutexGuard<'static, (Option<String>, OpenPause, PauseAt)> {
    OPEN_PAUSE.lock().unwrap_or_else(|e| e.into_inner())
}

fn pause_if_armed(name: &str, at: PauseAt) {
    if !OPEN_PAUSE_ARMED.load(Ordering::Relaxed) {
        return;
    }
    let mut p = open_pause();
    if p.1 != OpenPause::Armed || p.2 != at || p.0.as_deref() != Some(name) {
        return;
    }
    p.1 = OpenPause::Paused;
    OPEN_PAUSED.notify_all();
    while p.1 == OpenPause::Paused {
        p = OPEN_PAUSED.wait(p).unwrap_or_else(|e| e.into_inner());
    }
}

/// Called by `open` once it has attached a new record and released the
/// segment's init lock, just before it returns the handle: the point where
/// another thread's `open` of the same segment must already find this
/// attachment.
pub(crate) fn in_open_after_attach(name: &str) {
    pause_if_armed(name, PauseAt::AfterAttach);
}

/// Called by `open` right after it took the segment's init lock: the point
/// where a `fork()` by another thread, or a kill, finds the lock held.
/// (`path`: the name's `shm_open` path, `"/volt-sem.<name>"`.)
#[cfg(all(target_os = "linux", not(volt_loom)))]
pub(crate) fn in_open_holding_init_lock(path: &core::ffi::CStr) {
    if !OPEN_PAUSE_ARMED.load(Ordering::Relaxed) {
        return;
    }
    let name = path.to_str().ok().and_then(|p| p.strip_prefix('/'));
    if let Some(name) = name.and_then(|p| p.strip_prefix(crate::NAME_PREFIX)) {
        pause_if_armed(name, PauseAt::HoldingInitLock);
    }
}

fn arm(name: &str, at: PauseAt) {
    let mut p = open_pause();
    *p = (Some(name.to_owned()), OpenPause::Armed, at);
    OPEN_PAUSE_ARMED.store(true, Ordering::Relaxed);
}

/// **Tests only.** The next `open` of `name` in this process that attaches a
/// new record pauses just before it returns (after it released the init
/// lock), until [`resume_open`]; [`wait_open_paused`] waits for it to get
/// there.
#[doc(hidden)]
pub fn pause_next_open_of(name: &str) {
    arm(name, PauseAt::AfterAttach);
}

/// **Tests only.** The next `open` of `name` in this process pauses while it
/// holds the segment's init lock (right after taking it), until
/// [`resume_open`] (or until the process dies there); [`wait_open_paused`]
/// waits for it to get there. Linux only (elsewhere `open` never gets
/// there).
#[doc(hidden)]
pub fn pause_next_open_of_holding_init_lock(name: &str) {
    arm(name, PauseAt::HoldingInitLock);
}

/// **Tests only.** Waits (at most `limit`) until an `open` armed by
/// [`pause_next_open_of`] or [`pause_next_open_of_holding_init_lock`]
/// pauses; whether it did.
#[doc(hidden)]
pub fn wait_open_paused(limit: std::time::Duration) -> bool {
    let mut p = open_pause();
    let deadline = std::time::Instant::now() + limit;
    while p.1 != OpenPause::Paused {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return false;
        }
        p = OPEN_PAUSED
            .wait_timeout(p, left)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
    true
}

/// **Tests only.** Lets the paused `open` go on (or disarms a pause that
/// was never reached).
#[doc(hidden)]
pub fn resume_open() {
    let mut p = open_pause();
    *p = (None, OpenPause::Off, PauseAt::AfterAttach);
    OPEN_PAUSE_ARMED.store(false, Ordering::Relaxed);
    OPEN_PAUSED.notify_all();
}

/// **Tests only.** The clock the timed waits for the segment lock run on in
/// this process: `"monotonic"` (`pthread_mutex_clocklock(CLOCK_MONOTONIC)`,
/// found at run time) or `"realtime"` (the fallback,
/// `pthread_mutex_timedlock`). Linux only; `"none"` elsewhere.
#[doc(hidden)]
pub fn timed_lock_clock() -> &'static str {
    #[cfg(all(target_os = "linux", not(volt_loom)))]
    return if crate::sys::timed_lock_is_monotonic() {
        "monotonic"
    } else {
        "realtime"
    };
    #[cfg(not(all(target_os = "linux", not(volt_loom))))]
    "none"
}

/// **Tests only.** Makes the timed waits for the segment lock use the
/// fallback, `pthread_mutex_timedlock` on `CLOCK_REALTIME` (`true`), or the
/// normal choice again (`false`), so that the fallback is tested on a C
/// library that has `pthread_mutex_clocklock`.
#[doc(hidden)]
pub fn force_realtime_timed_lock(on: bool) {
    #[cfg(all(target_os = "linux", not(volt_loom)))]
    crate::sys::FORCE_REALTIME.store(on, Ordering::Relaxed);
    #[cfg(not(all(target_os = "linux", not(volt_loom))))]
    let _ = on;
}
