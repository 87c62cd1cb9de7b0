//! The type-erased semaphore: one enum, one `match` per operation.

use core::ffi::c_void;
use core::pin::Pin;
use std::time::Duration;

use volt_sem::{Finish, RawAcquire, WakeFn};
use volt_sem_shm::{OpenOptions, SharedSemaphore};

use crate::error::Error;
use crate::waiter::{kind, Waiter};

/// Which backend a [`Semaphore`] runs on.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// In this process's memory ([`volt_sem::Semaphore`]).
    Local,
    /// A named segment shared by the processes of this machine
    /// ([`volt_sem_shm::SharedSemaphore`]).
    Shared,
}

/// A semaphore of any backend, with the API the bindings need: `try`, raw
/// waiters (callback + context), blocking, close.
///
/// The local semaphore is held inline (not behind another `Arc`): a binding
/// keeps this type in its own reference-counted handle, exactly as it kept a
/// `volt_sem::Semaphore`, so the local path costs one `match` more than before
/// and no extra pointer.
#[non_exhaustive]
pub enum Semaphore {
    /// The in-process semaphore.
    Local(volt_sem::Semaphore),
    /// A named semaphore shared across processes (a cheap handle: clones share
    /// one attachment per process and name).
    Shared(SharedSemaphore),
}

impl core::fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Semaphore::Local(s) => f.debug_tuple("Local").field(s).finish(),
            Semaphore::Shared(s) => f.debug_tuple("Shared").field(s).finish(),
        }
    }
}

impl From<volt_sem::Semaphore> for Semaphore {
    fn from(s: volt_sem::Semaphore) -> Self {
        Semaphore::Local(s)
    }
}

impl From<SharedSemaphore> for Semaphore {
    fn from(s: SharedSemaphore) -> Self {
        Semaphore::Shared(s)
    }
}

/// Removes the shared semaphore's name (processes attached keep using it; the
/// next `open` of the name creates a new one). [`Error::NotFound`] if no
/// semaphore has this name.
pub fn unlink(name: &str) -> Result<(), Error> {
    volt_sem_shm::unlink(name).map_err(Error::from)
}

impl Semaphore {
    /// The largest request (and local permit count): [`volt_sem::Semaphore::MAX_PERMITS`].
    /// A shared semaphore's requests are further bounded by its total.
    pub const MAX_PERMITS: usize = volt_sem::Semaphore::MAX_PERMITS;

    /// A local semaphore with `permits` permits; `None` above `MAX_PERMITS`.
    pub fn local(permits: usize) -> Option<Self> {
        volt_sem::Semaphore::try_new(permits).map(Semaphore::Local)
    }

    /// Opens (or creates, see [`OpenOptions`]) the named semaphore `name` with
    /// `permits` permits in total, shared by every process of this machine
    /// that opens the same name. See [`volt_sem_shm`] for the segment, the
    /// crash safety and the limits.
    pub fn open(name: &str, permits: usize, options: OpenOptions) -> Result<Self, Error> {
        SharedSemaphore::open(name, permits, options)
            .map(Semaphore::Shared)
            .map_err(Error::from)
    }

    /// Which backend this is.
    pub fn kind(&self) -> Kind {
        match self {
            Semaphore::Local(_) => Kind::Local,
            Semaphore::Shared(_) => Kind::Shared,
        }
    }

    /// The local semaphore, if this is one (e.g. for its state word).
    pub fn as_local(&self) -> Option<&volt_sem::Semaphore> {
        match self {
            Semaphore::Local(s) => Some(s),
            _ => None,
        }
    }

    /// The shared semaphore, if this is one.
    pub fn as_shared(&self) -> Option<&SharedSemaphore> {
        match self {
            Semaphore::Shared(s) => Some(s),
            _ => None,
        }
    }

    /// Takes `n` permits if they are available now and nobody is queued (no
    /// barging, in any process). `n == 0` succeeds unless closed. The caller
    /// then holds them and gives them back with [`release`](Self::release).
    pub fn try_acquire(&self, n: usize) -> Result<(), Error> {
        match self {
            Semaphore::Local(s) => {
                s.try_acquire(n)?.forget();
                Ok(())
            }
            Semaphore::Shared(s) => Ok(s.try_acquire(n)?),
        }
    }

    /// Gives back `n` permits: to the oldest waiters first (in any process),
    /// the surplus to the counter. Works after `close`.
    ///
    /// Local: [`Error::Overflow`] when the counter would exceed `MAX_PERMITS`.
    /// Shared: [`Error::NotHeld`] when this process holds fewer than `n` (each
    /// process returns its own permits; see the shm crate's accounting).
    pub fn release(&self, n: usize) -> Result<(), Error> {
        match self {
            Semaphore::Local(s) => Ok(s.release(n)?),
            Semaphore::Shared(s) => Ok(s.release(n)?),
        }
    }

    /// Acquires `n` permits, blocking this thread until they are granted in
    /// FIFO order or the semaphore is closed.
    pub fn acquire_blocking(&self, n: usize) -> Result<(), Error> {
        match self {
            Semaphore::Local(s) => {
                s.acquire_blocking(n)?.forget();
                Ok(())
            }
            Semaphore::Shared(s) => Ok(s.acquire_blocking(n)?),
        }
    }

    /// Like [`acquire_blocking`](Self::acquire_blocking), giving up after
    /// `timeout` with [`Error::TimedOut`] (any partial grant is handed on).
    pub fn acquire_timeout(&self, n: usize, timeout: Duration) -> Result<(), Error> {
        match self {
            Semaphore::Local(s) => {
                s.acquire_timeout(n, timeout)?.forget();
                Ok(())
            }
            Semaphore::Shared(s) => Ok(s.acquire_timeout(n, timeout)?),
        }
    }

    /// Closes the semaphore: every queued request (in every process, for a
    /// shared one) completes as closed, later acquires fail. Held permits can
    /// still be released. Idempotent.
    pub fn close(&self) -> Result<(), Error> {
        match self {
            Semaphore::Local(s) => {
                s.close();
                Ok(())
            }
            Semaphore::Shared(s) => Ok(s.close()?),
        }
    }

    /// Whether the semaphore was closed (by anyone).
    pub fn is_closed(&self) -> bool {
        match self {
            Semaphore::Local(s) => s.is_closed(),
            Semaphore::Shared(s) => s.is_closed(),
        }
    }

    /// Permits available right now (0 while anyone is queued). A snapshot.
    pub fn available_permits(&self) -> usize {
        match self {
            Semaphore::Local(s) => s.available_permits(),
            Semaphore::Shared(s) => s.available_permits(),
        }
    }

    /// The fixed total of a shared semaphore; `None` for a local one (its
    /// releases may add permits: it has no fixed total).
    pub fn total_permits(&self) -> Option<usize> {
        match self {
            Semaphore::Local(_) => None,
            Semaphore::Shared(s) => Some(s.total_permits()),
        }
    }

    /// Queues an acquire of `n` permits that completes by calling `wake(ctx)`
    /// once (the waker contract of `volt_sem`): `Ready` means taken at once
    /// (no callback), `Pending` queued.
    ///
    /// Local: the callback runs on the thread that completes the grant (a
    /// releaser, a canceller, the closer). Shared: it runs on this process's
    /// doorbell thread of the name, whoever released, in any process.
    ///
    /// # Safety
    /// * `waiter` is not [busy](Waiter::is_busy).
    /// * After `Pending`, `waiter` stays valid (pinned) and `ctx` valid for
    ///   `wake`, until [`finish_raw`](Self::finish_raw) returned.
    /// * `wake(ctx)` may be called on another thread.
    pub unsafe fn acquire_raw(
        &self,
        waiter: Pin<&Waiter>,
        n: usize,
        wake: WakeFn,
        ctx: *mut c_void,
    ) -> Result<RawAcquire, Error> {
        debug_assert!(!waiter.is_busy(), "acquire_raw on a busy waiter");
        match self {
            Semaphore::Local(s) => {
                waiter.set_kind(kind::LOCAL);
                // SAFETY: forwarded contract.
                Ok(unsafe { s.acquire_raw(waiter.local(), n, wake, ctx) }?)
            }
            #[cfg(target_os = "linux")]
            Semaphore::Shared(s) => {
                waiter.set_kind(kind::SHARED);
                // SAFETY: not busy (contract): no trampoline reads it now.
                unsafe { waiter.set_wake(wake, ctx) };
                let me = waiter.get_ref() as *const Waiter as *mut c_void;
                // SAFETY: the backend waiter is pinned and outlives the
                // request (contract), so the trampoline's `ctx` (the waiter
                // itself) stays valid; the caller's `ctx` as forwarded.
                Ok(unsafe {
                    s.acquire_raw(waiter.shared(), n, crate::waiter::shared_trampoline, me)
                }?)
            }
            #[cfg(not(target_os = "linux"))]
            Semaphore::Shared(_) => Err(Error::Unsupported),
        }
    }

    /// Ends a raw request: cancels it if still queued (`Cancelled`: its
    /// partial grant is handed on), or collects its outcome (`Granted`: the
    /// caller holds the permits; `Closed`). When it returns, the callback has
    /// returned or never will, and the waiter and `ctx` may be freed. From
    /// another thread it waits for a running callback; from inside the
    /// waiter's own callback it returns at once.
    ///
    /// A waiter last queued on the other backend is reported `Idle` and left
    /// alone (under the contract below, it is idle).
    ///
    /// # Safety
    /// `waiter` is idle or was last queued on this semaphore ([`owns`](Self::owns)).
    pub unsafe fn finish_raw(&self, waiter: Pin<&Waiter>) -> Finish {
        match self {
            Semaphore::Local(s) if waiter.kind() == kind::LOCAL => {
                // SAFETY: forwarded contract.
                unsafe { s.finish_raw(waiter.local()) }
            }
            #[cfg(target_os = "linux")]
            Semaphore::Shared(s) if waiter.kind() == kind::SHARED => {
                // SAFETY: forwarded contract.
                unsafe { s.finish_raw(waiter.shared()) }
            }
            _ => Finish::Idle,
        }
    }

    /// Whether `waiter` was last queued on this semaphore (for a shared one:
    /// through a handle of this process on the same name).
    pub fn owns(&self, waiter: &Waiter) -> bool {
        match self {
            Semaphore::Local(s) => waiter.kind() == kind::LOCAL && waiter.local_ref().belongs_to(s),
            #[cfg(target_os = "linux")]
            Semaphore::Shared(s) => waiter.kind() == kind::SHARED && s.owns(waiter.shared_ref()),
            #[cfg(not(target_os = "linux"))]
            Semaphore::Shared(_) => false,
        }
    }
}
