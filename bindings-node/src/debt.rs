//! [`Debt`]: the `removePermits` debt, stored so that whether one is owed
//! can be read from its low 32 bits alone.
//!
//! The JS fast path (`index.js`, see [`crate::view`]) must not give permits
//! back while a debt is owed: they pay it first, natively. It reads the debt
//! through an `Int32Array` (no BigInt), and one 32-bit load cannot tell
//! whether a 64-bit count is zero (a debt of `k << 32` has a zero low half).
//! So the word holds `debt << 1 | (debt != 0)`: bit 0 is set exactly when a
//! debt is owed, and one atomic load of the low half answers. Every access
//! here decodes, so the rest of the binding works on plain counts; the
//! encoding is injective, so a compare-and-swap on encoded words succeeds
//! exactly when it would on the counts. A debt is at most `MAX_JS` (2^53 - 1;
//! `removePermits` refuses more), so the encoded word never overflows.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Permits `removePermits` still has to take out of the total (see the
/// [module](self) docs for how they are stored).
#[repr(transparent)]
pub(crate) struct Debt(AtomicUsize);

const fn encode(d: usize) -> usize {
    d << 1 | (d != 0) as usize
}

const fn decode(w: usize) -> usize {
    w >> 1
}

impl Debt {
    pub(crate) const fn new() -> Debt {
        Debt(AtomicUsize::new(0))
    }

    pub(crate) fn load(&self, order: Ordering) -> usize {
        decode(self.0.load(order))
    }

    /// As [`AtomicUsize::compare_exchange_weak`], on the counts.
    pub(crate) fn compare_exchange_weak(
        &self,
        current: usize,
        new: usize,
        success: Ordering,
        failure: Ordering,
    ) -> Result<usize, usize> {
        self.0
            .compare_exchange_weak(encode(current), encode(new), success, failure)
            .map(decode)
            .map_err(decode)
    }
}
