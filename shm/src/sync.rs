//! The seam between the segment algorithm and its atomics (as in the core
//! crate's `sync.rs`): under `--cfg volt_loom` the words of a segment are
//! loom's model-checked atomics, so that the loom model explores the very
//! algorithm that ships (`src/loom_model.rs`); otherwise they are the plain
//! `core` atomics that a mapped segment is made of.

#[cfg(volt_loom)]
pub(crate) use loom::sync::atomic::{AtomicU32, AtomicU64};

#[cfg(not(volt_loom))]
pub(crate) use core::sync::atomic::{AtomicU32, AtomicU64};

/// One round of waiting for another process's thread to finish a lock-free
/// operation (a few instructions, unless it is preempted or stopped).
/// Returns `false` once the caller should give up: when `patient`, about
/// 50 ms in all (spinning, then yielding, then sleeping 1 ms per round);
/// otherwise after the spinning and yielding rounds only (microseconds), for
/// a retry of a recount that already gave up once, so that a process stopped
/// inside a fast operation does not cost every later slow path 50 ms.
pub(crate) fn pause(round: u32, patient: bool) -> bool {
    #[cfg(volt_loom)]
    {
        let _ = patient;
        loom::thread::yield_now();
        round < 8
    }
    #[cfg(not(volt_loom))]
    {
        match round {
            0..=63 => core::hint::spin_loop(),
            64..=127 => std::thread::yield_now(),
            128..=177 if patient => std::thread::sleep(std::time::Duration::from_millis(1)),
            _ => return false,
        }
        true
    }
}
