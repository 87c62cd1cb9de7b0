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
