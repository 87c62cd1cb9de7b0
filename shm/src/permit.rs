//! [`Permit`]: permits held by this process through a [`SharedSemaphore`],
//! given back when the guard is dropped, as the in-process semaphore's.

use crate::{Error, SharedSemaphore};

/// Permits this process holds on a [`SharedSemaphore`]; released when
/// dropped (the hand-off to the FIFO, in any process, happens then).
///
/// The same shape as `volt_sem::Permit` and `volt_sem_redis::Permit`:
/// [`permits`](Self::permits), [`release`](Self::release) (or drop),
/// [`forget`](Self::forget).
///
/// ```no_run
/// use volt_sem_shm::{OpenOptions, SharedSemaphore};
/// # fn main() -> Result<(), volt_sem_shm::Error> {
/// let sem = SharedSemaphore::open("gpu", 4, OpenOptions::new())?;
/// let permit = sem.acquire_blocking(2)?;
/// assert_eq!(permit.permits(), 2);
/// // ... use two of the four slots ...
/// permit.release()?; // or drop it
/// # Ok(()) }
/// ```
///
/// Dropping releases like [`release`](Self::release) and ignores its error:
/// [`Error::Forked`] in a `fork()` child (the permits are the parent's),
/// [`Error::NotHeld`] if the process already gave them back by count with
/// [`SharedSemaphore::release`]. Permits are never lost: a process that
/// exits or dies with guards alive gives them back (see the crate's
/// *Liveness*).
#[must_use = "dropping a permit releases it at once"]
pub struct Permit<'a> {
    sem: &'a SharedSemaphore,
    permits: usize,
}

volt_sem::permit_debug!(Permit<'_>, permits);

impl<'a> Permit<'a> {
    /// A guard for `permits` permits this process holds on `sem`.
    pub(crate) fn new(sem: &'a SharedSemaphore, permits: usize) -> Self {
        Permit { sem, permits }
    }

    /// How many permits this holds.
    pub fn permits(&self) -> usize {
        self.permits
    }

    /// The semaphore these permits belong to.
    pub fn semaphore(&self) -> &'a SharedSemaphore {
        self.sem
    }

    /// Releases now, reporting what dropping would ignore: [`Error::Forked`]
    /// in a `fork()` child, [`Error::NotHeld`] if the process holds fewer
    /// (it released them by count already); nothing is released then.
    pub fn release(mut self) -> Result<(), Error> {
        let n = core::mem::take(&mut self.permits);
        if n == 0 {
            return Ok(());
        }
        self.sem.release(n)
    }

    /// Consumes the guard without releasing: the permits stay held by this
    /// process; give them back by count with [`SharedSemaphore::release`]
    /// (or they go back when the process detaches or dies).
    pub fn forget(mut self) {
        self.permits = 0;
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        if self.permits > 0 {
            // Errors: see the type's docs (a fork child, released by count).
            let _ = self.sem.release(self.permits);
        }
    }
}
