//! Test-only fault injection, compiled in (one relaxed load on the release
//! path) so that the crash tests can use the very library that ships.

use core::sync::atomic::{AtomicBool, Ordering};

static STOP_IN_RELEASE: AtomicBool = AtomicBool::new(false);

/// Called inside `release`'s critical section, after the releaser's `held`
/// was lowered and before the permits reach the FIFO or the counter: the
/// worst moment to die.
#[inline]
pub(crate) fn in_release_critical_section() {
    if STOP_IN_RELEASE.load(Ordering::Relaxed) {
        stop_self();
    }
}

#[cold]
fn stop_self() {
    STOP_IN_RELEASE.store(false, Ordering::Relaxed);
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
    STOP_IN_RELEASE.store(true, Ordering::Relaxed);
}
