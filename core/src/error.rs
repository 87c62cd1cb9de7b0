//! Error types. Every failure a caller can cause at run time is a value: the C
//! ABI and the bindings map each variant to their own typed error. (Programming
//! errors that tokio also reports by panicking, such as merging permits of two
//! semaphores or a blocking acquire inside an async task, panic; see each
//! method's *Panics* section.)
//!
//! The enums are `#[non_exhaustive]`: later versions may add variants, so a
//! `match` on them needs a wildcard arm.
//!
//! # Differences from tokio
//!
//! * `TooManyPermits` is a variant here: tokio's `acquire_many(n)` takes a `u32`
//!   and *panics* when `n` exceeds its `MAX_PERMITS`; volt-sem takes a `usize`
//!   and returns the error instead.
//! * tokio's `AcquireError` only means "closed"; here it is an enum, so
//!   `AcquireError::Closed` is the case to test for.
//! * tokio's `TryAcquireError::NoPermits` is also returned while earlier
//!   requests are queued, as here.

use core::fmt;

/// Why an `acquire` (async or blocking without timeout) failed.
///
/// Unlike tokio's `AcquireError` (which only means "closed"), this is an enum:
/// tokio's `acquire_many(n)` *panics* when `n` exceeds its maximum, volt-sem
/// returns [`TooManyPermits`](Self::TooManyPermits). Non-exhaustive: match it
/// with a wildcard arm.
///
/// ```
/// use volt_sem::{AcquireError, Semaphore};
/// # futures::executor::block_on(async {
/// let sem = Semaphore::new(1);
/// let too_many = sem.acquire(Semaphore::MAX_PERMITS + 1).await.unwrap_err();
/// assert_eq!(too_many, AcquireError::TooManyPermits);
/// sem.close();
/// match sem.acquire(1).await {
///     Err(AcquireError::Closed) => {}
///     other => panic!("{other:?}"),
/// };
/// # });
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AcquireError {
    /// The semaphore was closed before the request was granted.
    Closed,
    /// More permits were requested than [`Semaphore::MAX_PERMITS`](crate::Semaphore::MAX_PERMITS).
    TooManyPermits,
}

/// Why a `try_acquire` failed.
///
/// ```
/// use volt_sem::{Semaphore, TryAcquireError};
/// let sem = Semaphore::new(1);
/// let _p = sem.try_acquire(1).unwrap();
/// assert_eq!(sem.try_acquire(1).unwrap_err(), TryAcquireError::NoPermits);
/// sem.close();
/// assert_eq!(sem.try_acquire(1).unwrap_err(), TryAcquireError::Closed);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TryAcquireError {
    /// The semaphore is closed.
    Closed,
    /// Not enough permits are available right now (or earlier requests are queued).
    NoPermits,
    /// More permits were requested than [`Semaphore::MAX_PERMITS`](crate::Semaphore::MAX_PERMITS).
    TooManyPermits,
}

/// Why an `acquire_timeout` failed.
///
/// ```
/// use std::time::Duration;
/// use volt_sem::{AcquireTimeoutError, Semaphore};
/// let sem = Semaphore::new(0);
/// let e = sem.acquire_timeout(1, Duration::from_millis(1)).unwrap_err();
/// assert_eq!(e, AcquireTimeoutError::TimedOut);
/// assert_eq!(e.to_string(), "timed out waiting for permits");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AcquireTimeoutError {
    /// The semaphore was closed before the request was granted.
    Closed,
    /// The timeout elapsed first; any partial grant was handed back.
    TimedOut,
    /// More permits were requested than [`Semaphore::MAX_PERMITS`](crate::Semaphore::MAX_PERMITS).
    TooManyPermits,
}

/// A release would raise the available permits above
/// [`Semaphore::MAX_PERMITS`](crate::Semaphore::MAX_PERMITS).
///
/// [`unreleased`](Self::unreleased) permits were not released: the caller still
/// holds them. That is all of them, except in the race described on
/// [`Semaphore::release`](crate::Semaphore::release).
///
/// ```
/// use volt_sem::Semaphore;
/// let sem = Semaphore::new(Semaphore::MAX_PERMITS - 1);
/// let e = sem.release(3).unwrap_err();
/// assert_eq!(e.unreleased(), 3);
/// assert_eq!(sem.available_permits(), Semaphore::MAX_PERMITS - 1);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReleaseError {
    pub(crate) unreleased: usize,
}

impl ReleaseError {
    /// How many of the permits passed to `release` were not released.
    ///
    /// ```
    /// let sem = volt_sem::Semaphore::new(volt_sem::Semaphore::MAX_PERMITS);
    /// assert_eq!(sem.release(2).unwrap_err().unreleased(), 2);
    /// ```
    pub fn unreleased(&self) -> usize {
        self.unreleased
    }
}

impl fmt::Display for AcquireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AcquireError::Closed => "semaphore closed",
            AcquireError::TooManyPermits => "requested more permits than the semaphore's maximum",
        })
    }
}

impl fmt::Display for TryAcquireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TryAcquireError::Closed => "semaphore closed",
            TryAcquireError::NoPermits => "no permits available",
            TryAcquireError::TooManyPermits => {
                "requested more permits than the semaphore's maximum"
            }
        })
    }
}

impl fmt::Display for AcquireTimeoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AcquireTimeoutError::Closed => "semaphore closed",
            AcquireTimeoutError::TimedOut => "timed out waiting for permits",
            AcquireTimeoutError::TooManyPermits => {
                "requested more permits than the semaphore's maximum"
            }
        })
    }
}

impl fmt::Display for ReleaseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("release would exceed the semaphore's maximum number of permits")
    }
}

impl std::error::Error for AcquireError {}
impl std::error::Error for TryAcquireError {}
impl std::error::Error for AcquireTimeoutError {}
impl std::error::Error for ReleaseError {}

impl From<AcquireError> for AcquireTimeoutError {
    fn from(e: AcquireError) -> Self {
        match e {
            AcquireError::Closed => AcquireTimeoutError::Closed,
            AcquireError::TooManyPermits => AcquireTimeoutError::TooManyPermits,
        }
    }
}
