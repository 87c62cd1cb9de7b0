//! The lock that guards the wait queue, in closure style: a leftover of the
//! `batch-queue` experiment (now in the `volt-sem-batch-lock` crate), whose
//! lock could run the closure on another thread, hence the `Send` bounds.

use crate::wait_list::WaitList;

pub(crate) struct QueueLock {
    inner: crate::sync::Mutex<WaitList>,
}

impl QueueLock {
    #[cfg(not(volt_loom))]
    pub(crate) const fn new() -> Self {
        let inner = crate::sync::Mutex::new(WaitList::new());
        QueueLock { inner }
    }

    #[cfg(volt_loom)]
    pub(crate) fn new() -> Self {
        let inner = crate::sync::Mutex::new(WaitList::new());
        QueueLock { inner }
    }

    /// Runs `f` with exclusive access to the queue.
    #[inline]
    pub(crate) fn with<R: Send>(&self, f: impl FnOnce(&mut WaitList) -> R + Send) -> R {
        f(&mut crate::sync::lock(&self.inner))
    }
}
