//! `RwLock<T>`: a semaphore of `MAX_READS` permits; a reader takes one, a writer
//! takes all of them. FIFO order makes it fair both ways: a queued writer drains
//! the permits as readers leave, and readers arriving after it queue behind it.

use core::cell::UnsafeCell;
use core::marker::PhantomData;
use core::ops::{Deref, DerefMut};
use core::ptr::NonNull;
use std::sync::Arc;
#[cfg(not(volt_loom))]
use std::time::Duration;

use crate::guard::never_declined;
use crate::Semaphore;

/// A fair reader-writer lock usable from async tasks and plain threads.
///
/// Requests are served in arrival order: a writer waits for the readers ahead
/// of it, and readers that arrive after a queued writer wait behind it, so
/// neither side can starve the other.
///
/// ```
/// use volt_sem::RwLock;
/// # futures::executor::block_on(async {
/// let lock = RwLock::new(5);
/// {
///     let r1 = lock.read().await;
///     let r2 = lock.read().await; // readers share
///     assert_eq!(*r1 + *r2, 10);
///     assert!(lock.try_write().is_none());
/// }
/// *lock.write().await += 1;
/// assert_eq!(*lock.read().await, 6);
/// # });
/// ```
pub struct RwLock<T: ?Sized> {
    sem: Semaphore,
    value: UnsafeCell<T>,
}

// SAFETY: writers get `&mut T` exclusively (they hold every permit); readers share `&T`.
unsafe impl<T: ?Sized + Send> Send for RwLock<T> {}
// SAFETY: as above; shared readers need `T: Sync`.
unsafe impl<T: ?Sized + Send + Sync> Sync for RwLock<T> {}

/// Shared access to an [`RwLock`]'s value (or, after
/// [`map`](RwLockReadGuard::map), a part of it).
///
/// ```
/// let lock = volt_sem::RwLock::new(String::from("hi"));
/// let guard = lock.try_read().unwrap();
/// assert_eq!(format!("{guard:?}"), "\"hi\"");
/// ```
#[must_use = "dropping the guard unlocks at once"]
pub struct RwLockReadGuard<'a, T: ?Sized> {
    sem: &'a Semaphore,
    value: NonNull<T>,
    _borrow: PhantomData<&'a T>,
}

/// Exclusive access to an [`RwLock`]'s value.
///
/// ```
/// let lock = volt_sem::RwLock::new(vec![1]);
/// lock.try_write().unwrap().push(2);
/// assert_eq!(*lock.try_read().unwrap(), [1, 2]);
/// ```
#[must_use = "dropping the guard unlocks at once"]
pub struct RwLockWriteGuard<'a, T: ?Sized> {
    lock: &'a RwLock<T>,
}

/// Exclusive access to a part of an [`RwLock`]'s value, made by
/// [`RwLockWriteGuard::map`]. Unlocks the whole lock when dropped.
///
/// ```
/// use volt_sem::{RwLock, RwLockWriteGuard};
/// let lock = RwLock::new((0, 0));
/// *RwLockWriteGuard::map(lock.try_write().unwrap(), |p| &mut p.1) = 4;
/// assert_eq!(*lock.try_read().unwrap(), (0, 4));
/// ```
#[must_use = "dropping the guard unlocks at once"]
pub struct RwLockMappedWriteGuard<'a, T: ?Sized> {
    sem: &'a Semaphore,
    value: NonNull<T>,
    _borrow: PhantomData<&'a mut T>,
}

/// Shared access to an `Arc<RwLock>`'s value; `'static`, so it can move into a
/// spawned task.
///
/// ```
/// use std::sync::Arc;
/// let lock = Arc::new(volt_sem::RwLock::new(1));
/// let guard = lock.clone().try_read_owned().unwrap();
/// std::thread::spawn(move || assert_eq!(*guard, 1)).join().unwrap();
/// ```
#[must_use = "dropping the guard unlocks at once"]
pub struct OwnedRwLockReadGuard<T: ?Sized> {
    lock: Arc<RwLock<T>>,
}

/// Exclusive access to an `Arc<RwLock>`'s value; `'static`, so it can move into
/// a spawned task.
///
/// ```
/// use std::sync::Arc;
/// let lock = Arc::new(volt_sem::RwLock::new(1));
/// let mut guard = lock.clone().try_write_owned().unwrap();
/// std::thread::spawn(move || *guard += 1).join().unwrap();
/// assert_eq!(*lock.try_read().unwrap(), 2);
/// ```
#[must_use = "dropping the guard unlocks at once"]
pub struct OwnedRwLockWriteGuard<T: ?Sized> {
    lock: Arc<RwLock<T>>,
}

// SAFETY: a read guard is a shared borrow (`&T`) plus the duty to release one
// permit, which any thread may do: sending or sharing it needs `T: Sync`.
unsafe impl<T: ?Sized + Sync> Send for RwLockReadGuard<'_, T> {}
// SAFETY: as above.
unsafe impl<T: ?Sized + Sync> Sync for RwLockReadGuard<'_, T> {}
// SAFETY: the write guards hand out at most `&T` through `&guard`.
unsafe impl<T: ?Sized + Sync> Sync for RwLockWriteGuard<'_, T> {}
// SAFETY: a mapped write guard is a unique borrow (`&mut T`) plus the duty to
// release the permits: like `&mut T`.
unsafe impl<T: ?Sized + Send> Send for RwLockMappedWriteGuard<'_, T> {}
// SAFETY: `&guard` gives `&T` only.
unsafe impl<T: ?Sized + Sync> Sync for RwLockMappedWriteGuard<'_, T> {}
// SAFETY: `&guard` gives `&T` only (the `Arc` needs `Send + Sync` to be shared).
unsafe impl<T: ?Sized + Send + Sync> Sync for OwnedRwLockReadGuard<T> {}
// SAFETY: as above.
unsafe impl<T: ?Sized + Send + Sync> Sync for OwnedRwLockWriteGuard<T> {}

const NEVER_FAILS: &str = "an RwLock's semaphore is never closed and MAX_READS <= MAX_PERMITS";

/// The permits a writer holds: all of them.
const WRITE: usize = Semaphore::MAX_PERMITS;

impl<T> RwLock<T> {
    /// The most readers that can hold the lock at once.
    ///
    /// ```
    /// assert_eq!(volt_sem::RwLock::<()>::MAX_READS, volt_sem::Semaphore::MAX_PERMITS);
    /// ```
    pub const MAX_READS: usize = Semaphore::MAX_PERMITS;

    /// A new, unlocked lock.
    ///
    /// ```
    /// let lock = volt_sem::RwLock::new(1);
    /// assert_eq!(*lock.try_read().unwrap(), 1);
    /// ```
    pub fn new(value: T) -> Self {
        RwLock {
            sem: Semaphore::new(Self::MAX_READS),
            value: UnsafeCell::new(value),
        }
    }

    /// A new, unlocked lock, in a `const` context.
    ///
    /// ```
    /// static CONFIG: volt_sem::RwLock<u32> = volt_sem::RwLock::const_new(7);
    /// assert_eq!(*CONFIG.read_blocking(), 7);
    /// ```
    #[cfg(not(volt_loom))]
    pub const fn const_new(value: T) -> Self {
        RwLock {
            sem: Semaphore::const_new(Self::MAX_READS),
            value: UnsafeCell::new(value),
        }
    }

    /// Consumes the lock, returning the value.
    ///
    /// ```
    /// assert_eq!(volt_sem::RwLock::new(3).into_inner(), 3);
    /// ```
    pub fn into_inner(self) -> T {
        self.value.into_inner()
    }
}

impl<T: ?Sized> RwLock<T> {
    fn read_guard(&self) -> RwLockReadGuard<'_, T> {
        RwLockReadGuard {
            sem: &self.sem,
            // SAFETY: `UnsafeCell::get` never returns null.
            value: unsafe { NonNull::new_unchecked(self.value.get()) },
            _borrow: PhantomData,
        }
    }

    /// Shared access, waiting in FIFO order. Cancel-safe.
    ///
    /// ```
    /// # futures::executor::block_on(async {
    /// let lock = volt_sem::RwLock::new(1);
    /// assert_eq!(*lock.read().await, 1);
    /// # });
    /// ```
    pub async fn read(&self) -> RwLockReadGuard<'_, T> {
        self.sem.acquire(1).await.expect(NEVER_FAILS).forget();
        self.read_guard()
    }

    /// Exclusive access, waiting in FIFO order. Cancel-safe.
    ///
    /// ```
    /// # futures::executor::block_on(async {
    /// let lock = volt_sem::RwLock::new(1);
    /// *lock.write().await = 2;
    /// assert_eq!(*lock.read().await, 2);
    /// # });
    /// ```
    pub async fn write(&self) -> RwLockWriteGuard<'_, T> {
        self.sem.acquire(WRITE).await.expect(NEVER_FAILS).forget();
        RwLockWriteGuard { lock: self }
    }

    /// Shared access if no writer holds or waits for the lock.
    ///
    /// ```
    /// let lock = volt_sem::RwLock::new(1);
    /// let w = lock.try_write().unwrap();
    /// assert!(lock.try_read().is_none());
    /// drop(w);
    /// assert!(lock.try_read().is_some());
    /// ```
    pub fn try_read(&self) -> Option<RwLockReadGuard<'_, T>> {
        self.sem.try_acquire(1).ok()?.forget();
        Some(self.read_guard())
    }

    /// Exclusive access if nobody holds or waits for the lock.
    ///
    /// ```
    /// let lock = volt_sem::RwLock::new(1);
    /// let r = lock.try_read().unwrap();
    /// assert!(lock.try_write().is_none());
    /// drop(r);
    /// assert!(lock.try_write().is_some());
    /// ```
    pub fn try_write(&self) -> Option<RwLockWriteGuard<'_, T>> {
        self.sem.try_acquire(WRITE).ok()?.forget();
        Some(RwLockWriteGuard { lock: self })
    }

    /// Shared access, blocking the current thread.
    ///
    /// # Panics
    /// As [`Semaphore::acquire_blocking`].
    ///
    /// ```
    /// let lock = volt_sem::RwLock::new(1);
    /// assert_eq!(*lock.read_blocking(), 1);
    /// ```
    pub fn read_blocking(&self) -> RwLockReadGuard<'_, T> {
        self.sem.acquire_blocking(1).expect(NEVER_FAILS).forget();
        self.read_guard()
    }

    /// Exclusive access, blocking the current thread.
    ///
    /// # Panics
    /// As [`Semaphore::acquire_blocking`].
    ///
    /// ```
    /// let lock = volt_sem::RwLock::new(1);
    /// *lock.write_blocking() += 1;
    /// assert_eq!(*lock.read_blocking(), 2);
    /// ```
    pub fn write_blocking(&self) -> RwLockWriteGuard<'_, T> {
        self.sem
            .acquire_blocking(WRITE)
            .expect(NEVER_FAILS)
            .forget();
        RwLockWriteGuard { lock: self }
    }

    /// Shared access, blocking for at most `timeout`.
    ///
    /// ```
    /// use std::time::Duration;
    /// let lock = volt_sem::RwLock::new(1);
    /// let _w = lock.try_write().unwrap();
    /// assert!(lock.read_timeout(Duration::from_millis(1)).is_none());
    /// ```
    #[cfg(not(volt_loom))]
    pub fn read_timeout(&self, timeout: Duration) -> Option<RwLockReadGuard<'_, T>> {
        self.sem.acquire_timeout(1, timeout).ok()?.forget();
        Some(self.read_guard())
    }

    /// Exclusive access, blocking for at most `timeout`.
    ///
    /// ```
    /// use std::time::Duration;
    /// let lock = volt_sem::RwLock::new(1);
    /// let _r = lock.try_read().unwrap();
    /// assert!(lock.write_timeout(Duration::from_millis(1)).is_none());
    /// ```
    #[cfg(not(volt_loom))]
    pub fn write_timeout(&self, timeout: Duration) -> Option<RwLockWriteGuard<'_, T>> {
        self.sem.acquire_timeout(WRITE, timeout).ok()?.forget();
        Some(RwLockWriteGuard { lock: self })
    }

    /// Shared access to an `Arc<RwLock>`, waiting in FIFO order. Cancel-safe.
    ///
    /// ```
    /// use std::sync::Arc;
    /// # futures::executor::block_on(async {
    /// let lock = Arc::new(volt_sem::RwLock::new(1));
    /// let guard = lock.clone().read_owned().await;
    /// std::thread::spawn(move || assert_eq!(*guard, 1)).join().unwrap();
    /// # });
    /// ```
    pub async fn read_owned(self: Arc<Self>) -> OwnedRwLockReadGuard<T> {
        self.sem.acquire(1).await.expect(NEVER_FAILS).forget();
        OwnedRwLockReadGuard { lock: self }
    }

    /// Exclusive access to an `Arc<RwLock>`, waiting in FIFO order. Cancel-safe.
    ///
    /// ```
    /// use std::sync::Arc;
    /// # futures::executor::block_on(async {
    /// let lock = Arc::new(volt_sem::RwLock::new(1));
    /// let mut guard = lock.clone().write_owned().await;
    /// std::thread::spawn(move || *guard = 3).join().unwrap();
    /// assert_eq!(*lock.read().await, 3);
    /// # });
    /// ```
    pub async fn write_owned(self: Arc<Self>) -> OwnedRwLockWriteGuard<T> {
        self.sem.acquire(WRITE).await.expect(NEVER_FAILS).forget();
        OwnedRwLockWriteGuard { lock: self }
    }

    /// Shared access to an `Arc<RwLock>` if no writer holds or waits for it.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let lock = Arc::new(volt_sem::RwLock::new(1));
    /// assert!(lock.clone().try_read_owned().is_some());
    /// ```
    pub fn try_read_owned(self: Arc<Self>) -> Option<OwnedRwLockReadGuard<T>> {
        self.sem.try_acquire(1).ok()?.forget();
        Some(OwnedRwLockReadGuard { lock: self })
    }

    /// Exclusive access to an `Arc<RwLock>` if nobody holds or waits for it.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let lock = Arc::new(volt_sem::RwLock::new(1));
    /// let w = lock.clone().try_write_owned().unwrap();
    /// assert!(lock.clone().try_read_owned().is_none());
    /// drop(w);
    /// ```
    pub fn try_write_owned(self: Arc<Self>) -> Option<OwnedRwLockWriteGuard<T>> {
        self.sem.try_acquire(WRITE).ok()?.forget();
        Some(OwnedRwLockWriteGuard { lock: self })
    }

    /// Shared access to an `Arc<RwLock>`, blocking the current thread.
    ///
    /// # Panics
    /// As [`Semaphore::acquire_blocking`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// let lock = Arc::new(volt_sem::RwLock::new(1));
    /// assert_eq!(*lock.clone().read_owned_blocking(), 1);
    /// ```
    pub fn read_owned_blocking(self: Arc<Self>) -> OwnedRwLockReadGuard<T> {
        self.sem.acquire_blocking(1).expect(NEVER_FAILS).forget();
        OwnedRwLockReadGuard { lock: self }
    }

    /// Exclusive access to an `Arc<RwLock>`, blocking the current thread.
    ///
    /// # Panics
    /// As [`Semaphore::acquire_blocking`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// let lock = Arc::new(volt_sem::RwLock::new(1));
    /// *lock.clone().write_owned_blocking() += 1;
    /// assert_eq!(*lock.read_blocking(), 2);
    /// ```
    pub fn write_owned_blocking(self: Arc<Self>) -> OwnedRwLockWriteGuard<T> {
        self.sem
            .acquire_blocking(WRITE)
            .expect(NEVER_FAILS)
            .forget();
        OwnedRwLockWriteGuard { lock: self }
    }

    /// Mutable access without locking: `&mut self` proves nobody else has it.
    ///
    /// ```
    /// let mut lock = volt_sem::RwLock::new(1);
    /// *lock.get_mut() = 2;
    /// assert_eq!(lock.into_inner(), 2);
    /// ```
    pub fn get_mut(&mut self) -> &mut T {
        self.value.get_mut()
    }
}

lock_impls!(RwLock, try_read);

impl<'a, T: ?Sized> RwLockReadGuard<'a, T> {
    /// Narrows the guard to a part of the value (an associated function, so it
    /// does not shadow a method of `T`). The read lock stays held.
    ///
    /// ```
    /// use volt_sem::{RwLock, RwLockReadGuard};
    /// let lock = RwLock::new((1, String::from("x")));
    /// let name = RwLockReadGuard::map(lock.try_read().unwrap(), |t| &t.1);
    /// assert_eq!(*name, "x");
    /// ```
    pub fn map<U: ?Sized>(this: Self, f: impl FnOnce(&T) -> &U) -> RwLockReadGuard<'a, U> {
        never_declined(Self::try_map(this, |v| Some(f(v))))
    }

    /// Like [`map`](Self::map), but `f` may decline; the guard comes back then.
    ///
    /// ```
    /// use volt_sem::{RwLock, RwLockReadGuard};
    /// let lock = RwLock::new(vec![1, 2]);
    /// let guard = RwLockReadGuard::try_map(lock.try_read().unwrap(), |v| v.get(9)).unwrap_err();
    /// assert_eq!(*RwLockReadGuard::map(guard, |v| &v[1]), 2);
    /// ```
    pub fn try_map<U: ?Sized>(
        this: Self,
        f: impl FnOnce(&T) -> Option<&U>,
    ) -> Result<RwLockReadGuard<'a, U>, Self> {
        let Some(value) = f(&*this).map(NonNull::from) else {
            return Err(this);
        };
        let sem = this.sem;
        core::mem::forget(this);
        Ok(RwLockReadGuard {
            sem,
            value,
            _borrow: PhantomData,
        })
    }
}

impl<'a, T: ?Sized> RwLockWriteGuard<'a, T> {
    /// Turns the write lock into a read lock without letting anyone in between:
    /// the writer gives back all its permits but one. Readers queued right
    /// behind it get in at once; a queued writer still waits for this reader.
    ///
    /// ```
    /// use volt_sem::{RwLock, RwLockWriteGuard};
    /// let lock = RwLock::new(1);
    /// let mut w = lock.try_write().unwrap();
    /// *w = 2;
    /// let r = RwLockWriteGuard::downgrade(w);
    /// assert_eq!(*r, 2);
    /// assert_eq!(*lock.try_read().unwrap(), 2); // other readers may join
    /// assert!(lock.try_write().is_none());
    /// ```
    pub fn downgrade(this: Self) -> RwLockReadGuard<'a, T> {
        let lock = this.lock;
        core::mem::forget(this);
        // Cannot overflow: the writer held every permit, so none are available.
        let _ = lock.sem.release(WRITE - 1);
        lock.read_guard()
    }

    /// Narrows the guard to a part of the value (an associated function, so it
    /// does not shadow a method of `T`). If `f` panics, the lock is released.
    ///
    /// ```
    /// use volt_sem::{RwLock, RwLockWriteGuard};
    /// let lock = RwLock::new([0; 3]);
    /// *RwLockWriteGuard::map(lock.try_write().unwrap(), |a| &mut a[2]) = 5;
    /// assert_eq!(lock.try_read().unwrap()[2], 5);
    /// ```
    pub fn map<U: ?Sized>(
        this: Self,
        f: impl FnOnce(&mut T) -> &mut U,
    ) -> RwLockMappedWriteGuard<'a, U> {
        never_declined(Self::try_map(this, |v| Some(f(v))))
    }

    /// Like [`map`](Self::map), but `f` may decline; the guard comes back then.
    ///
    /// ```
    /// use volt_sem::{RwLock, RwLockWriteGuard};
    /// let lock = RwLock::new(vec![1]);
    /// let w = RwLockWriteGuard::try_map(lock.try_write().unwrap(), |v| v.get_mut(4)).unwrap_err();
    /// assert_eq!(w.len(), 1);
    /// ```
    pub fn try_map<U: ?Sized>(
        mut this: Self,
        f: impl FnOnce(&mut T) -> Option<&mut U>,
    ) -> Result<RwLockMappedWriteGuard<'a, U>, Self> {
        let Some(value) = f(&mut *this).map(NonNull::from) else {
            return Err(this);
        };
        let sem = &this.lock.sem;
        core::mem::forget(this);
        Ok(RwLockMappedWriteGuard {
            sem,
            value,
            _borrow: PhantomData,
        })
    }
}

impl<'a, T: ?Sized> RwLockMappedWriteGuard<'a, T> {
    /// Narrows the guard further.
    ///
    /// ```
    /// use volt_sem::{RwLock, RwLockMappedWriteGuard, RwLockWriteGuard};
    /// let lock = RwLock::new(((0, 0), 0));
    /// let outer = RwLockWriteGuard::map(lock.try_write().unwrap(), |v| &mut v.0);
    /// *RwLockMappedWriteGuard::map(outer, |v| &mut v.1) = 8;
    /// assert_eq!(lock.try_read().unwrap().0, (0, 8));
    /// ```
    pub fn map<U: ?Sized>(
        mut this: Self,
        f: impl FnOnce(&mut T) -> &mut U,
    ) -> RwLockMappedWriteGuard<'a, U> {
        let value = NonNull::from(f(&mut *this));
        let sem = this.sem;
        core::mem::forget(this);
        RwLockMappedWriteGuard {
            sem,
            value,
            _borrow: PhantomData,
        }
    }
}

impl<T: ?Sized> OwnedRwLockWriteGuard<T> {
    /// Turns the write lock into a read lock without letting anyone in between.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use volt_sem::{OwnedRwLockWriteGuard, RwLock};
    /// let lock = Arc::new(RwLock::new(1));
    /// let w = lock.clone().try_write_owned().unwrap();
    /// let r = OwnedRwLockWriteGuard::downgrade(w);
    /// assert!(lock.try_read().is_some());
    /// drop(r);
    /// ```
    pub fn downgrade(this: Self) -> OwnedRwLockReadGuard<T> {
        // SAFETY: `this` is forgotten right after, so the `Arc` moves out exactly once.
        let lock = unsafe { core::ptr::read(&this.lock) };
        core::mem::forget(this);
        // Cannot overflow: the writer held every permit, so none are available.
        let _ = lock.sem.release(WRITE - 1);
        OwnedRwLockReadGuard { lock }
    }
}

shared_deref! {
    RwLockReadGuard<'a, T> => |g| g.value.as_ref();
    RwLockWriteGuard<'a, T> => |g| &*g.lock.value.get();
    RwLockMappedWriteGuard<'a, T> => |g| g.value.as_ref();
    OwnedRwLockReadGuard<T> => |g| &*g.lock.value.get();
    OwnedRwLockWriteGuard<T> => |g| &*g.lock.value.get();
}

exclusive_deref! {
    RwLockWriteGuard<'a, T> => |g| &mut *g.lock.value.get();
    RwLockMappedWriteGuard<'a, T> => |g| g.value.as_mut();
    OwnedRwLockWriteGuard<T> => |g| &mut *g.lock.value.get();
}

// Releasing cannot overflow in any guard: the permits came out of the lock's
// own semaphore, which nobody else can release into.
impl<T: ?Sized> Drop for RwLockReadGuard<'_, T> {
    fn drop(&mut self) {
        let _ = self.sem.release(1);
    }
}

impl<T: ?Sized> Drop for RwLockWriteGuard<'_, T> {
    fn drop(&mut self) {
        let _ = self.lock.sem.release(WRITE);
    }
}

impl<T: ?Sized> Drop for RwLockMappedWriteGuard<'_, T> {
    fn drop(&mut self) {
        let _ = self.sem.release(WRITE);
    }
}

impl<T: ?Sized> Drop for OwnedRwLockReadGuard<T> {
    fn drop(&mut self) {
        let _ = self.lock.sem.release(1);
    }
}

impl<T: ?Sized> Drop for OwnedRwLockWriteGuard<T> {
    fn drop(&mut self) {
        let _ = self.lock.sem.release(WRITE);
    }
}
