//! What an acquire gives back, for every backend: the [`Grant`] of a `try`
//! or blocking acquire, and the [`Finish`] of a raw request.
//!
//! The local and shared backends complete a request in one of three ways
//! (granted, cancelled, closed); the Redis backend adds a fourth, a request
//! that *failed* (its session lease expired, Redis lost the state, the
//! connection could not be restored in time), and a fencing token on every
//! grant. One enum for all backends, so a binding matches every outcome once.

use crate::error::Error;

/// How a raw request ended, as [`Semaphore::finish_raw`](crate::RawSemaphore::finish_raw)
/// reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finish {
    /// Removed from the queue before its grant was complete; the `returned`
    /// permits it had collected were handed on to the next in line.
    Cancelled {
        /// The partial grant handed on (0 when nothing had arrived).
        returned: usize,
    },
    /// Fully granted: the caller holds the requested permits. The fencing
    /// token (Redis) is in [`Waiter::token`](crate::Waiter::token).
    Granted,
    /// The semaphore was closed while the request was queued; it holds nothing.
    Closed,
    /// The request failed and holds nothing: [`Error::TooManyPermits`] (a
    /// shared or Redis request above the total that `set_total` set while
    /// it was queued), or, Redis only, [`Error::LeaseExpired`],
    /// [`Error::StateLost`] or [`Error::Connection`].
    Failed(Error),
    /// Not queued (never used, already finished, or queued on another
    /// semaphore).
    Idle,
}

/// What [`Semaphore::expire_raw`](crate::Semaphore::expire_raw) did with a
/// raw request whose owner's deadline passed: the core's
/// [`Expiry`](volt_sem::raw::Expiry) over this crate's [`Finish`]
/// (`Deferred` only for a Redis request, until the end of its grace).
pub type Expiry = volt_sem::raw::Expiry<Finish>;

impl From<volt_sem::Finish> for Finish {
    fn from(f: volt_sem::Finish) -> Self {
        match f {
            volt_sem::Finish::Cancelled { returned } => Finish::Cancelled { returned },
            volt_sem::Finish::Granted => Finish::Granted,
            volt_sem::Finish::Closed => Finish::Closed,
            volt_sem::Finish::Idle => Finish::Idle,
        }
    }
}

/// A completed `try_acquire` / blocking acquire: the caller holds the
/// permits (and releases them by count with
/// [`Semaphore::release`](crate::Semaphore::release)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Grant {
    token: u64,
    session: u64,
}

impl Grant {
    /// A grant without a fencing token (local and shared backends).
    pub(crate) const UNFENCED: Grant = Grant {
        token: 0,
        session: 0,
    };

    #[cfg(feature = "redis")]
    pub(crate) fn fenced(token: u64, session: u64) -> Grant {
        Grant { token, session }
    }

    /// The grant's fencing token: strictly increasing with every grant of a
    /// Redis semaphore; `None` for the local and shared backends, which need
    /// none (a holder there cannot outlive its grant unnoticed), and for an
    /// acquire of 0 permits.
    pub fn token(&self) -> Option<u64> {
        (self.token != 0).then_some(self.token)
    }

    /// The Redis session that holds the grant (for
    /// `Semaphore::lease_watch`, with the `redis` feature); 0 for the
    /// other backends.
    pub fn session(&self) -> u64 {
        self.session
    }
}
