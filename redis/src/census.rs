//! [`Census`]: the permit accounting of a semaphore, read in one script.

use crate::error::Error;
use crate::reply::Reply;

/// Conservation sums read in one script (tests, diagnostics).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Census {
    /// The total.
    pub total: u64,
    /// Permits free.
    pub available: u64,
    /// Permits held by live sessions (granted ones included).
    pub held: u64,
    /// Partial grants of queued requests.
    pub partial: u64,
    /// Requests queued.
    pub queued: u64,
    /// Live sessions.
    pub sessions: u64,
    /// Whether closed.
    pub closed: bool,
    /// The last fencing token issued.
    pub last_token: u64,
    /// Permits a shrink of the total ([`set_total`]) still waits for: held
    /// (or granted) beyond the new total, paid first by the permits that
    /// come back. While it is not 0, `available` is 0.
    ///
    /// [`set_total`]: crate::RedisSemaphore::set_total
    pub debt: u64,
}

impl Census {
    /// `available + held + partial == total + debt`.
    pub fn conserved(&self) -> bool {
        self.available + self.held + self.partial == self.total + self.debt
    }
}

impl Census {
    /// The census script's reply, in its order.
    pub(crate) fn from_reply(r: &Reply) -> Result<Self, Error> {
        Ok(Census {
            total: r.int(0)?,
            available: r.int(1)?,
            held: r.int(2)?,
            partial: r.int(3)?,
            queued: r.int(4)?,
            sessions: r.int(5)?,
            closed: r.int(6)? == 1,
            last_token: r.int(7)?,
            debt: r.int(8)?,
        })
    }
}
