//! The lock that guards the wait queue, in closure style so that it can be a
//! mutex (default) or a [`BatchLock`](crate::BatchLock) (feature `batch-queue`,
//! the experiment of `docs/benchmarks.md`, "Batched critical sections"): the
//! semaphore's critical sections are written once, as closures, for both.
//!
//! With a `BatchLock` the closure may run on another thread (the consumer's)
//! while the submitting thread waits, hence the `Send` bounds.

use crate::wait_list::WaitList;

pub(crate) struct QueueLock {
    #[cfg(not(feature = "batch-queue"))]
    inner: crate::sync::Mutex<WaitList>,
    #[cfg(feature = "batch-queue")]
    inner: crate::batch_lock::BatchLock<WaitList>,
}

impl QueueLock {
    #[cfg(not(volt_loom))]
    pub(crate) const fn new() -> Self {
        #[cfg(not(feature = "batch-queue"))]
        let inner = crate::sync::Mutex::new(WaitList::new());
        #[cfg(feature = "batch-queue")]
        let inner = crate::batch_lock::BatchLock::const_new(WaitList::new());
        QueueLock { inner }
    }

    #[cfg(volt_loom)]
    pub(crate) fn new() -> Self {
        #[cfg(not(feature = "batch-queue"))]
        let inner = crate::sync::Mutex::new(WaitList::new());
        #[cfg(feature = "batch-queue")]
        let inner = crate::batch_lock::BatchLock::new(WaitList::new());
        QueueLock { inner }
    }

    /// Runs `f` with exclusive access to the queue.
    #[inline]
    pub(crate) fn with<R: Send>(&self, f: impl FnOnce(&mut WaitList) -> R + Send) -> R {
        #[cfg(not(feature = "batch-queue"))]
        {
            f(&mut crate::sync::lock(&self.inner))
        }
        #[cfg(feature = "batch-queue")]
        {
            self.inner.run(f)
        }
    }
}
