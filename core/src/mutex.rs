//! `Mutex<T>`: a semaphore with one permit guarding a value. It inherits the
//! semaphore's FIFO fairness, cancel safety and allocation-free waiting.

use core::cell::UnsafeCell;
use core::ops::{Deref, DerefMut};
#[cfg(not(volt_loom))]
use std::time::Duration;

use crate::Semaphore;

/// A fair (FIFO) mutual-exclusion lock usable from async tasks and plain threads.
pub struct Mutex<T: ?Sized> {
    sem: Semaphore,
    value: UnsafeCell<T>,
}

// SAFETY: the semaphore's single permit gives exclusive access to `value`, so
// sharing the mutex only ever hands `&mut T` to one thread at a time.
unsafe impl<T: ?Sized + Send> Send for Mutex<T> {}
// SAFETY: as above.
unsafe impl<T: ?Sized + Send> Sync for Mutex<T> {}

/// Exclusive access to a [`Mutex`]'s value; unlocks when dropped.
#[must_use = "dropping the guard unlocks the mutex at once"]
pub struct MutexGuard<'a, T: ?Sized> {
    mutex: &'a Mutex<T>,
}

// SAFETY: the guard gives `&T`/`&mut T`; sharing it across threads is like sharing `&T`.
unsafe impl<T: ?Sized + Sync> Sync for MutexGuard<'_, T> {}

impl<T> Mutex<T> {
    /// A new, unlocked mutex.
    pub fn new(value: T) -> Self {
        Mutex {
            sem: Semaphore::new(1),
            value: UnsafeCell::new(value),
        }
    }

    /// A new, unlocked mutex, in a `const` context.
    #[cfg(not(volt_loom))]
    pub const fn const_new(value: T) -> Self {
        Mutex {
            sem: Semaphore::const_new(1),
            value: UnsafeCell::new(value),
        }
    }

    /// Consumes the mutex, returning the value.
    pub fn into_inner(self) -> T {
        self.value.into_inner()
    }
}

impl<T: ?Sized> Mutex<T> {
    /// Locks, waiting in FIFO order. Cancel-safe.
    pub async fn lock(&self) -> MutexGuard<'_, T> {
        match self.sem.acquire(1).await {
            Ok(permit) => self.guard(permit),
            Err(_) => unreachable!("a Mutex's semaphore is never closed and 1 <= MAX_PERMITS"),
        }
    }

    /// Locks if nobody holds or waits for the lock.
    pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        self.sem
            .try_acquire(1)
            .ok()
            .map(|permit| self.guard(permit))
    }

    /// Locks, blocking the current thread.
    pub fn lock_blocking(&self) -> MutexGuard<'_, T> {
        match self.sem.acquire_blocking(1) {
            Ok(permit) => self.guard(permit),
            Err(_) => unreachable!("a Mutex's semaphore is never closed and 1 <= MAX_PERMITS"),
        }
    }

    /// Locks, blocking the current thread for at most `timeout`.
    #[cfg(not(volt_loom))]
    pub fn lock_timeout(&self, timeout: Duration) -> Option<MutexGuard<'_, T>> {
        self.sem
            .acquire_timeout(1, timeout)
            .ok()
            .map(|permit| self.guard(permit))
    }

    /// Mutable access without locking: `&mut self` proves nobody else has it.
    pub fn get_mut(&mut self) -> &mut T {
        self.value.get_mut()
    }

    fn guard(&self, permit: crate::Permit<'_>) -> MutexGuard<'_, T> {
        permit.forget(); // the guard's Drop gives the permit back
        MutexGuard { mutex: self }
    }
}

impl<T: Default> Default for Mutex<T> {
    fn default() -> Self {
        Mutex::new(T::default())
    }
}

impl<T: ?Sized + core::fmt::Debug> core::fmt::Debug for Mutex<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let mut d = f.debug_struct("Mutex");
        match self.try_lock() {
            Some(guard) => d.field("value", &&*guard),
            None => d.field("value", &format_args!("<locked>")),
        };
        d.finish()
    }
}

impl<T: ?Sized> Deref for MutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard holds the only permit.
        unsafe { &*self.mutex.value.get() }
    }
}

impl<T: ?Sized> DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard holds the only permit.
        unsafe { &mut *self.mutex.value.get() }
    }
}

impl<T: ?Sized> Drop for MutexGuard<'_, T> {
    fn drop(&mut self) {
        // Cannot overflow: one permit back into a semaphore of one.
        let _ = self.mutex.sem.release(1);
    }
}

impl<T: ?Sized + core::fmt::Debug> core::fmt::Debug for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::Debug::fmt(&**self, f)
    }
}
