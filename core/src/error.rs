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

/// Declares an error enum from a table: each variant with its message.
/// Generates the enum (with the attributes and documentation given), its
/// `Display` and `std::error::Error`. The in-process semaphore's errors, the
/// shared-memory and Redis crates' `Error` and the bindings' seam's (which
/// adds codes and C statuses on top) are all written with it, so an error's
/// message is said once, beside its variant. Not meant for other crates.
///
/// A variant is a unit, a tuple variant naming its one field (`Os(errno:
/// i32)`, which declares `Os(i32)`), or a struct variant; after `=>`, its
/// message:
/// * a format string, which may name the variant's fields (`"{held}"`);
/// * `(format string, arguments...)`, as `write!` takes them (the fields are
///   bound by reference);
/// * the name of a function `fn(&Error, &mut fmt::Formatter) -> fmt::Result`
///   of the calling module, for a message neither can say.
///
/// A crate that derives more from its table (the seam: a code, a C status
/// and a class per error) gives each row more columns in braces after its
/// message, and names its own macro after the enum: `then my_table! {
/// ... }`. That macro is called with its own tokens followed by `errors {
/// ... }`, one entry per variant: its name, its bindings (`(errno)` or `{
/// found, expected }`, as a pattern names them) and its columns in
/// brackets.
#[doc(hidden)]
#[macro_export]
macro_rules! error_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $(
                $(#[doc = $doc:literal])*
                $variant:ident
                    $( ( $tbind:ident : $tty:ty ) )?
                    $( {
                        $( $(#[doc = $fdoc:literal])* $fname:ident : $fty:ty ),* $(,)?
                    } )?
                => $msg:tt $( { $($more:tt)* } )?
            ),* $(,)?
        }
        $( then $($then:tt)+ )?
    ) => {
        $(#[$meta])*
        $vis enum $name {
            $(
                $(#[doc = $doc])*
                $variant
                    $( ( $tty ) )?
                    $( { $( $(#[doc = $fdoc])* $fname : $fty ),* } )?,
            )*
        }

        impl ::core::fmt::Display for $name {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                match self {
                    $(
                        #[allow(unused_variables)]
                        $name::$variant $( ( $tbind ) )? $( { $( $fname ),* } )?
                            => $crate::error_enum!(@message self, f, $msg),
                    )*
                }
            }
        }

        impl ::std::error::Error for $name {}

        $crate::error_enum!(@then ( $( $($then)+ )? ) {
            $( $variant $( ( $tbind ) )? $( { $( $fname ),* } )? [ $( $($more)* )? ] )*
        });
    };
    (@then () { $($rows:tt)* }) => {};
    (@then ( $then:ident ! { $($args:tt)* } ) { $($rows:tt)* }) => {
        $then! { $($args)* errors { $($rows)* } }
    };
    (@message $self:ident, $f:ident, $msg:literal) => {
        $f.write_fmt(::core::format_args!($msg))
    };
    (@message $self:ident, $f:ident, ($fmt:literal, $($arg:expr),+ $(,)?)) => {
        $f.write_fmt(::core::format_args!($fmt, $($arg),+))
    };
    (@message $self:ident, $f:ident, $func:ident) => {
        $func($self, $f)
    };
}

crate::error_enum! {
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
        Closed => "semaphore closed",
        /// More permits were requested than [`Semaphore::MAX_PERMITS`](crate::Semaphore::MAX_PERMITS).
        TooManyPermits => "requested more permits than the semaphore's maximum",
    }
}

crate::error_enum! {
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
        Closed => "semaphore closed",
        /// Not enough permits are available right now (or earlier requests are queued).
        NoPermits => "no permits available",
        /// More permits were requested than [`Semaphore::MAX_PERMITS`](crate::Semaphore::MAX_PERMITS).
        TooManyPermits => "requested more permits than the semaphore's maximum",
    }
}

crate::error_enum! {
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
        Closed => "semaphore closed",
        /// The timeout elapsed first; any partial grant was handed back.
        TimedOut => "timed out waiting for permits",
        /// More permits were requested than [`Semaphore::MAX_PERMITS`](crate::Semaphore::MAX_PERMITS).
        TooManyPermits => "requested more permits than the semaphore's maximum",
    }
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

impl fmt::Display for ReleaseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("release would exceed the semaphore's maximum number of permits")
    }
}

impl std::error::Error for ReleaseError {}

impl From<AcquireError> for AcquireTimeoutError {
    fn from(e: AcquireError) -> Self {
        match e {
            AcquireError::Closed => AcquireTimeoutError::Closed,
            AcquireError::TooManyPermits => AcquireTimeoutError::TooManyPermits,
        }
    }
}
