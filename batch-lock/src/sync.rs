//! The seam between the lock and its synchronisation primitives, as in the
//! core (`core/src/sync.rs`): under `--cfg volt_loom` every atomic, mutex and
//! park/yield call resolves to loom's model-checked version, so the models in
//! `tests/loom.rs` explore the same code that the tests and the bench run.

#[cfg(volt_loom)]
pub(crate) use loom::{
    sync::atomic::{AtomicPtr, AtomicU8, Ordering},
    sync::{Mutex, MutexGuard},
    thread,
};

#[cfg(not(volt_loom))]
pub(crate) use std::{
    sync::atomic::{AtomicPtr, AtomicU8, Ordering},
    sync::{Mutex, MutexGuard},
    thread,
};

/// Tells the model (or the CPU) that this thread is waiting for another one to
/// make progress: a `yield_now` under loom (a spin loop would never end in a
/// model), a pause hint followed by a yield in real code.
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

/// Locks `mutex`, ignoring poisoning, as the core does: the only mutex guards
/// one task's waker slot, and a `Waker` that panicked in `clone` or `drop`
/// while it was held leaves a slot that still holds a waker or none.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}
