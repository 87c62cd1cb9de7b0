//! The seam between the algorithm and its synchronisation primitives.
//!
//! Under `--cfg volt_loom` every atomic, lock, cell, thread-local and park/yield call
//! resolves to loom's model-checked version, so the loom tests in `tests/loom_*.rs`
//! explore every interleaving of the *same* code that ships. Nothing else in the crate
//! names `std::sync` directly.

#[cfg(volt_loom)]
pub(crate) use loom::{
    sync::atomic::{AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering},
    sync::{Mutex, MutexGuard},
    thread,
};

#[cfg(not(volt_loom))]
pub(crate) use std::{
    sync::atomic::{AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering},
    sync::{Mutex, MutexGuard},
    thread,
};

#[cfg(volt_loom)]
pub(crate) use loom::sync::atomic::AtomicPtr;
#[cfg(not(volt_loom))]
pub(crate) use std::sync::atomic::AtomicPtr;

/// `UnsafeCell` with loom's closure-based access API, so loom can check that
/// every access to a lock-guarded field really happens under the lock.
#[cfg(volt_loom)]
pub(crate) use loom::cell::UnsafeCell;

#[cfg(not(volt_loom))]
#[derive(Debug)]
pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(volt_loom))]
impl<T> UnsafeCell<T> {
    pub(crate) const fn new(value: T) -> Self {
        UnsafeCell(std::cell::UnsafeCell::new(value))
    }

    #[inline(always)]
    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }

    #[inline(always)]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

/// Declares a constructor `const`, except under loom, whose atomics and cells
/// have no `const` constructors: one body for both builds.
macro_rules! const_unless_loom {
    ($(#[$m:meta])* $vis:vis fn $name:ident($($args:tt)*) -> $ret:ty $body:block) => {
        $(#[$m])*
        #[cfg(not(volt_loom))]
        $vis const fn $name($($args)*) -> $ret $body

        $(#[$m])*
        #[cfg(volt_loom)]
        $vis fn $name($($args)*) -> $ret $body
    };
}
pub(crate) use const_unless_loom;

/// Tells the model (or the CPU) that this thread is waiting for another one to
/// make progress: a `yield_now` under loom, a pause hint followed by a yield in
/// real code.
pub(crate) fn spin_wait(round: u32) {
    #[cfg(volt_loom)]
    {
        let _ = round;
        thread::yield_now();
    }
    #[cfg(not(volt_loom))]
    {
        if round < 6 {
            for _ in 0..(1u32 << round) {
                std::hint::spin_loop();
            }
        } else {
            thread::yield_now();
        }
    }
}

/// Locks `mutex`, ignoring poisoning: no user code ever runs while one of the
/// crate's locks is held, so a poisoned lock can only come from a panic inside
/// the crate's own list manipulation, which never leaves the list half-edited
/// (every edit is a handful of pointer writes with no panicking call between).
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}
