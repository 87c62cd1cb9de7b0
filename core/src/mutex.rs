//! `Mutex<T>`: a semaphore with one permit guarding a value. It inherits the
//! semaphore's FIFO fairness, cancel safety and allocation-free waiting.

use core::cell::UnsafeCell;
use core::marker::PhantomData;
use core::ops::{Deref, DerefMut};
use core::ptr::NonNull;
use std::sync::Arc;
#[cfg(not(volt_loom))]
use std::time::Duration;

use crate::guard::never_declined;
use crate::Semaphore;

/// A fair (FIFO) mutual-exclusion lock usable from async tasks and plain threads.
///
/// Waiters get the lock in the order they asked for it; an unlock hands it
/// straight to the oldest waiter. Locking is cancel-safe (a dropped `lock()`
/// future gives up its place) and allocates nothing.
///
/// ```
/// use std::sync::Arc;
/// use volt_sem::Mutex;
/// # futures::executor::block_on(async {
/// let counter = Arc::new(Mutex::new(0));
/// *counter.lock().await += 1; // from a task
/// let c = counter.clone();
/// std::thread::spawn(move || *c.lock_blocking() += 1).join().unwrap(); // from a thread
/// assert_eq!(*counter.lock().await, 2);
/// # });
/// ```
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
///
/// ```
/// let m = volt_sem::Mutex::new(vec![1]);
/// let mut guard = m.try_lock().unwrap();
/// guard.push(2);
/// assert_eq!(format!("{guard:?}"), "[1, 2]");
/// ```
#[must_use = "dropping the guard unlocks the mutex at once"]
pub struct MutexGuard<'a, T: ?Sized> {
    mutex: &'a Mutex<T>,
}

// SAFETY: the guard gives `&T`/`&mut T`; sharing it across threads is like sharing `&T`.
unsafe impl<T: ?Sized + Sync> Sync for MutexGuard<'_, T> {}

/// Exclusive access to a [`Mutex`] held through an `Arc`: `'static`, so it can
/// move into a spawned task. Unlocks when dropped.
///
/// ```
/// use std::sync::Arc;
/// use volt_sem::Mutex;
///
/// let m = Arc::new(Mutex::new(1));
/// let mut guard = m.clone().try_lock_owned().unwrap();
/// std::thread::spawn(move || *guard += 1).join().unwrap(); // the lock moves too
/// assert_eq!(*m.try_lock().unwrap(), 2);
/// ```
#[must_use = "dropping the guard unlocks the mutex at once"]
pub struct OwnedMutexGuard<T: ?Sized> {
    mutex: Arc<Mutex<T>>,
}

// SAFETY: `&guard` gives `&T` only; the guard itself holds the lock, which may be
// released from any thread.
unsafe impl<T: ?Sized + Send + Sync> Sync for OwnedMutexGuard<T> {}

/// A [`MutexGuard`] narrowed to a part of the value by [`MutexGuard::map`] or
/// [`MutexGuard::try_map`]; unlocks the whole mutex when dropped.
///
/// ```
/// use volt_sem::{Mutex, MutexGuard};
///
/// let m = Mutex::new((String::from("key"), 1));
/// let mut count = MutexGuard::map(m.try_lock().unwrap(), |(_, n)| n);
/// *count += 1;
/// drop(count);
/// assert_eq!(m.try_lock().unwrap().1, 2);
/// ```
#[must_use = "dropping the guard unlocks the mutex at once"]
pub struct MappedMutexGuard<'a, T: ?Sized> {
    sem: &'a Semaphore,
    value: NonNull<T>,
    _borrow: PhantomData<&'a mut T>,
}

// SAFETY: the guard is a unique borrow of the value plus the duty to release one
// permit, which any thread may do: like `&mut T`.
unsafe impl<T: ?Sized + Send> Send for MappedMutexGuard<'_, T> {}
// SAFETY: `&guard` gives `&T` only.
unsafe impl<T: ?Sized + Sync> Sync for MappedMutexGuard<'_, T> {}

const NEVER_FAILS: &str = "a Mutex's semaphore is never closed and 1 <= MAX_PERMITS";

impl<T> Mutex<T> {
    /// A new, unlocked mutex.
    ///
    /// ```
    /// let m = volt_sem::Mutex::new(5);
    /// assert_eq!(*m.try_lock().unwrap(), 5);
    /// ```
    pub fn new(value: T) -> Self {
        Mutex {
            sem: Semaphore::new(1),
            value: UnsafeCell::new(value),
        }
    }

    /// A new, unlocked mutex, in a `const` context.
    ///
    /// ```
    /// static COUNT: volt_sem::Mutex<u32> = volt_sem::Mutex::const_new(0);
    /// *COUNT.lock_blocking() += 1;
    /// assert_eq!(*COUNT.try_lock().unwrap(), 1);
    /// ```
    #[cfg(not(volt_loom))]
    pub const fn const_new(value: T) -> Self {
        Mutex {
            sem: Semaphore::const_new(1),
            value: UnsafeCell::new(value),
        }
    }

    /// Consumes the mutex, returning the value.
    ///
    /// ```
    /// assert_eq!(volt_sem::Mutex::new(3).into_inner(), 3);
    /// ```
    pub fn into_inner(self) -> T {
        self.value.into_inner()
    }
}

impl<T: ?Sized> Mutex<T> {
    /// Locks, waiting in FIFO order. Cancel-safe: dropping the future gives up
    /// its place in the queue.
    ///
    /// ```
    /// # futures::executor::block_on(async {
    /// let m = volt_sem::Mutex::new(1);
    /// *m.lock().await += 1;
    /// assert_eq!(*m.lock().await, 2);
    /// # });
    /// ```
    pub async fn lock(&self) -> MutexGuard<'_, T> {
        self.sem.acquire(1).await.expect(NEVER_FAILS).forget();
        MutexGuard { mutex: self }
    }

    /// Locks if nobody holds or waits for the lock.
    ///
    /// ```
    /// let m = volt_sem::Mutex::new(());
    /// let guard = m.try_lock().unwrap();
    /// assert!(m.try_lock().is_none());
    /// drop(guard);
    /// ```
    pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        let permit = self.sem.try_acquire(1).ok()?;
        permit.forget(); // the guard's Drop gives the permit back
        Some(MutexGuard { mutex: self })
    }

    /// Locks, blocking the current thread.
    ///
    /// # Panics
    /// As [`Semaphore::acquire_blocking`] (with the `tokio` feature, when it
    /// would wait inside a tokio task).
    ///
    /// ```
    /// let m = volt_sem::Mutex::new(1);
    /// *m.lock_blocking() += 1;
    /// assert_eq!(*m.lock_blocking(), 2);
    /// ```
    #[inline]
    pub fn lock_blocking(&self) -> MutexGuard<'_, T> {
        // The uncontended lock inline, one CAS, as std's (issue 30: the call
        // chain of the blocking acquire cost a tenth of an uncontended lock);
        // everything else, the executor check included, in the slow path.
        if self.sem.try_take(1).is_err() {
            self.lock_blocking_slow();
        }
        MutexGuard { mutex: self }
    }

    #[cold]
    #[inline(never)]
    fn lock_blocking_slow(&self) {
        self.sem.acquire_blocking(1).expect(NEVER_FAILS).forget();
    }

    /// Locks, blocking the current thread for at most `timeout`.
    ///
    /// # Panics
    /// As [`Semaphore::acquire_blocking`].
    ///
    /// ```
    /// use std::time::Duration;
    /// let m = volt_sem::Mutex::new(());
    /// let _held = m.try_lock().unwrap();
    /// assert!(m.lock_timeout(Duration::from_millis(1)).is_none());
    /// ```
    #[cfg(not(volt_loom))]
    pub fn lock_timeout(&self, timeout: Duration) -> Option<MutexGuard<'_, T>> {
        let permit = self.sem.acquire_timeout(1, timeout).ok()?;
        permit.forget();
        Some(MutexGuard { mutex: self })
    }

    /// Locks an `Arc<Mutex>`, waiting in FIFO order; the guard owns a reference
    /// to the mutex, so it can move into a spawned task. Cancel-safe.
    ///
    /// ```
    /// use std::sync::Arc;
    /// # futures::executor::block_on(async {
    /// let m = Arc::new(volt_sem::Mutex::new(0));
    /// let mut guard = m.clone().lock_owned().await;
    /// std::thread::spawn(move || *guard = 7).join().unwrap();
    /// assert_eq!(*m.lock().await, 7);
    /// # });
    /// ```
    pub async fn lock_owned(self: Arc<Self>) -> OwnedMutexGuard<T> {
        self.sem.acquire(1).await.expect(NEVER_FAILS).forget();
        OwnedMutexGuard { mutex: self }
    }

    /// Locks an `Arc<Mutex>` if nobody holds or waits for the lock.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let m = Arc::new(volt_sem::Mutex::new(0));
    /// let guard = m.clone().try_lock_owned().unwrap();
    /// assert!(m.clone().try_lock_owned().is_none());
    /// drop(guard);
    /// ```
    pub fn try_lock_owned(self: Arc<Self>) -> Option<OwnedMutexGuard<T>> {
        let permit = self.sem.try_acquire(1).ok()?;
        permit.forget();
        Some(OwnedMutexGuard { mutex: self })
    }

    /// Locks an `Arc<Mutex>`, blocking the current thread.
    ///
    /// # Panics
    /// As [`Semaphore::acquire_blocking`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// let m = Arc::new(volt_sem::Mutex::new(0));
    /// let mut guard = m.clone().lock_owned_blocking();
    /// *guard += 1;
    /// ```
    pub fn lock_owned_blocking(self: Arc<Self>) -> OwnedMutexGuard<T> {
        self.sem.acquire_blocking(1).expect(NEVER_FAILS).forget();
        OwnedMutexGuard { mutex: self }
    }

    /// Mutable access without locking: `&mut self` proves nobody else has it.
    ///
    /// ```
    /// let mut m = volt_sem::Mutex::new(1);
    /// *m.get_mut() = 2;
    /// assert_eq!(m.into_inner(), 2);
    /// ```
    pub fn get_mut(&mut self) -> &mut T {
        self.value.get_mut()
    }
}

lock_impls!(Mutex, try_lock);

impl<'a, T: ?Sized> MutexGuard<'a, T> {
    /// Narrows the guard to a part of the value. An associated function
    /// (`MutexGuard::map(guard, f)`), so it does not shadow a method of `T`.
    /// If `f` panics, the lock is released.
    ///
    /// ```
    /// use volt_sem::{Mutex, MutexGuard};
    /// let m = Mutex::new([0u8; 4]);
    /// let mut first = MutexGuard::map(m.try_lock().unwrap(), |a| &mut a[0]);
    /// *first = 9;
    /// drop(first);
    /// assert_eq!(m.try_lock().unwrap()[0], 9);
    /// ```
    pub fn map<U: ?Sized>(this: Self, f: impl FnOnce(&mut T) -> &mut U) -> MappedMutexGuard<'a, U> {
        never_declined(Self::try_map(this, |v| Some(f(v))))
    }

    /// Like [`map`](Self::map), but `f` may decline; the original guard comes
    /// back then, still locked.
    ///
    /// ```
    /// use volt_sem::{Mutex, MutexGuard};
    /// let m = Mutex::new(vec![1, 2]);
    /// let guard = m.try_lock().unwrap();
    /// let guard = MutexGuard::try_map(guard, |v| v.get_mut(5)).unwrap_err();
    /// let second = MutexGuard::try_map(guard, |v| v.get_mut(1)).unwrap();
    /// assert_eq!(*second, 2);
    /// ```
    pub fn try_map<U: ?Sized>(
        mut this: Self,
        f: impl FnOnce(&mut T) -> Option<&mut U>,
    ) -> Result<MappedMutexGuard<'a, U>, Self> {
        // `f` runs while `this` still owns the lock, so a panic unlocks it.
        let Some(value) = f(&mut *this).map(NonNull::from) else {
            return Err(this);
        };
        let sem = &this.mutex.sem;
        core::mem::forget(this);
        Ok(MappedMutexGuard {
            sem,
            value,
            _borrow: PhantomData,
        })
    }

    /// The mutex this guard locks.
    ///
    /// ```
    /// let m = volt_sem::Mutex::new(0);
    /// let guard = m.try_lock().unwrap();
    /// assert!(std::ptr::eq(volt_sem::MutexGuard::mutex(&guard), &m));
    /// ```
    pub fn mutex(this: &Self) -> &'a Mutex<T> {
        this.mutex
    }
}

impl<T: ?Sized> Drop for MutexGuard<'_, T> {
    fn drop(&mut self) {
        // Cannot overflow: one permit back into a semaphore of one.
        let _ = self.mutex.sem.release(1);
    }
}

impl<T: ?Sized> OwnedMutexGuard<T> {
    /// The mutex this guard locks.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let m = Arc::new(volt_sem::Mutex::new(0));
    /// let guard = m.clone().try_lock_owned().unwrap();
    /// assert!(Arc::ptr_eq(volt_sem::OwnedMutexGuard::mutex(&guard), &m));
    /// ```
    pub fn mutex(this: &Self) -> &Arc<Mutex<T>> {
        &this.mutex
    }
}

impl<T: ?Sized> Drop for OwnedMutexGuard<T> {
    fn drop(&mut self) {
        // Cannot overflow: one permit back into a semaphore of one.
        let _ = self.mutex.sem.release(1);
    }
}

impl<'a, T: ?Sized> MappedMutexGuard<'a, T> {
    /// Narrows the guard further.
    ///
    /// ```
    /// use volt_sem::{MappedMutexGuard, Mutex, MutexGuard};
    /// let m = Mutex::new(((1, 2), 3));
    /// let outer = MutexGuard::map(m.try_lock().unwrap(), |v| &mut v.0);
    /// let inner = MappedMutexGuard::map(outer, |v| &mut v.1);
    /// assert_eq!(*inner, 2);
    /// ```
    pub fn map<U: ?Sized>(this: Self, f: impl FnOnce(&mut T) -> &mut U) -> MappedMutexGuard<'a, U> {
        never_declined(Self::try_map(this, |v| Some(f(v))))
    }

    /// Like [`map`](Self::map), but `f` may decline; the guard comes back then.
    ///
    /// ```
    /// use volt_sem::{MappedMutexGuard, Mutex, MutexGuard};
    /// let m = Mutex::new((vec![1], 0));
    /// let v = MutexGuard::map(m.try_lock().unwrap(), |t| &mut t.0);
    /// let v = MappedMutexGuard::try_map(v, |v| v.get_mut(3)).unwrap_err();
    /// assert_eq!(v.len(), 1);
    /// ```
    pub fn try_map<U: ?Sized>(
        mut this: Self,
        f: impl FnOnce(&mut T) -> Option<&mut U>,
    ) -> Result<MappedMutexGuard<'a, U>, Self> {
        let Some(value) = f(&mut *this).map(NonNull::from) else {
            return Err(this);
        };
        let sem = this.sem;
        core::mem::forget(this);
        Ok(MappedMutexGuard {
            sem,
            value,
            _borrow: PhantomData,
        })
    }
}

impl<T: ?Sized> Drop for MappedMutexGuard<'_, T> {
    fn drop(&mut self) {
        // Cannot overflow: one permit back into a semaphore of one.
        let _ = self.sem.release(1);
    }
}

shared_deref! {
    MutexGuard<'a, T> => |g| &*g.mutex.value.get();
    OwnedMutexGuard<T> => |g| &*g.mutex.value.get();
    MappedMutexGuard<'a, T> => |g| g.value.as_ref();
}

exclusive_deref! {
    MutexGuard<'a, T> => |g| &mut *g.mutex.value.get();
    OwnedMutexGuard<T> => |g| &mut *g.mutex.value.get();
    MappedMutexGuard<'a, T> => |g| g.value.as_mut();
}
