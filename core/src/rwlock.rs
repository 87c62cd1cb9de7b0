//! `RwLock<T>`: a semaphore of `MAX_READS` permits; a reader takes one, a writer
//! takes all of them. FIFO order makes it fair both ways: a queued writer drains
//! the permits as readers leave, and readers arriving after it queue behind it.

use core::cell::UnsafeCell;
use core::ops::{Deref, DerefMut};
#[cfg(not(volt_loom))]
use std::time::Duration;

use crate::Semaphore;

/// A fair reader-writer lock usable from async tasks and plain threads.
pub struct RwLock<T: ?Sized> {
    sem: Semaphore,
    value: UnsafeCell<T>,
}

// SAFETY: writers get `&mut T` exclusively (they hold every permit); readers share `&T`.
unsafe impl<T: ?Sized + Send> Send for RwLock<T> {}
// SAFETY: as above; shared readers need `T: Sync`.
unsafe impl<T: ?Sized + Send + Sync> Sync for RwLock<T> {}

/// Shared access to an [`RwLock`]'s value.
#[must_use = "dropping the guard unlocks at once"]
pub struct RwLockReadGuard<'a, T: ?Sized> {
    lock: &'a RwLock<T>,
}

/// Exclusive access to an [`RwLock`]'s value.
#[must_use = "dropping the guard unlocks at once"]
pub struct RwLockWriteGuard<'a, T: ?Sized> {
    lock: &'a RwLock<T>,
}

// SAFETY: both guards hand out at most `&T` through `&guard`.
unsafe impl<T: ?Sized + Sync> Sync for RwLockReadGuard<'_, T> {}
// SAFETY: as above.
unsafe impl<T: ?Sized + Sync> Sync for RwLockWriteGuard<'_, T> {}

macro_rules! locked {
    ($e:expr) => {
        match $e {
            Ok(permit) => permit.forget(),
            Err(_) => {
                unreachable!("an RwLock's semaphore is never closed and MAX_READS <= MAX_PERMITS")
            }
        }
    };
}

impl<T> RwLock<T> {
    /// The most readers that can hold the lock at once.
    pub const MAX_READS: usize = Semaphore::MAX_PERMITS;

    /// A new, unlocked lock.
    pub fn new(value: T) -> Self {
        RwLock {
            sem: Semaphore::new(Self::MAX_READS),
            value: UnsafeCell::new(value),
        }
    }

    /// Consumes the lock, returning the value.
    pub fn into_inner(self) -> T {
        self.value.into_inner()
    }
}

impl<T: ?Sized> RwLock<T> {
    const WRITE: usize = Semaphore::MAX_PERMITS;

    /// Shared access, waiting in FIFO order. Cancel-safe.
    pub async fn read(&self) -> RwLockReadGuard<'_, T> {
        locked!(self.sem.acquire(1).await);
        RwLockReadGuard { lock: self }
    }

    /// Exclusive access, waiting in FIFO order. Cancel-safe.
    pub async fn write(&self) -> RwLockWriteGuard<'_, T> {
        locked!(self.sem.acquire(Self::WRITE).await);
        RwLockWriteGuard { lock: self }
    }

    /// Shared access if no writer holds or waits for the lock.
    pub fn try_read(&self) -> Option<RwLockReadGuard<'_, T>> {
        self.sem.try_acquire(1).ok().map(|p| {
            p.forget();
            RwLockReadGuard { lock: self }
        })
    }

    /// Exclusive access if nobody holds or waits for the lock.
    pub fn try_write(&self) -> Option<RwLockWriteGuard<'_, T>> {
        self.sem.try_acquire(Self::WRITE).ok().map(|p| {
            p.forget();
            RwLockWriteGuard { lock: self }
        })
    }

    /// Shared access, blocking the current thread.
    pub fn read_blocking(&self) -> RwLockReadGuard<'_, T> {
        locked!(self.sem.acquire_blocking(1));
        RwLockReadGuard { lock: self }
    }

    /// Exclusive access, blocking the current thread.
    pub fn write_blocking(&self) -> RwLockWriteGuard<'_, T> {
        locked!(self.sem.acquire_blocking(Self::WRITE));
        RwLockWriteGuard { lock: self }
    }

    /// Shared access, blocking for at most `timeout`.
    #[cfg(not(volt_loom))]
    pub fn read_timeout(&self, timeout: Duration) -> Option<RwLockReadGuard<'_, T>> {
        self.sem.acquire_timeout(1, timeout).ok().map(|p| {
            p.forget();
            RwLockReadGuard { lock: self }
        })
    }

    /// Exclusive access, blocking for at most `timeout`.
    #[cfg(not(volt_loom))]
    pub fn write_timeout(&self, timeout: Duration) -> Option<RwLockWriteGuard<'_, T>> {
        self.sem
            .acquire_timeout(Self::WRITE, timeout)
            .ok()
            .map(|p| {
                p.forget();
                RwLockWriteGuard { lock: self }
            })
    }

    /// Mutable access without locking: `&mut self` proves nobody else has it.
    pub fn get_mut(&mut self) -> &mut T {
        self.value.get_mut()
    }
}

impl<T: Default> Default for RwLock<T> {
    fn default() -> Self {
        RwLock::new(T::default())
    }
}

impl<T: ?Sized> Deref for RwLockReadGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: a reader permit excludes writers.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T: ?Sized> Deref for RwLockWriteGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the writer holds every permit.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T: ?Sized> DerefMut for RwLockWriteGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the writer holds every permit.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T: ?Sized> Drop for RwLockReadGuard<'_, T> {
    fn drop(&mut self) {
        let _ = self.lock.sem.release(1);
    }
}

impl<T: ?Sized> Drop for RwLockWriteGuard<'_, T> {
    fn drop(&mut self) {
        let _ = self.lock.sem.release(RwLock::<T>::WRITE);
    }
}
