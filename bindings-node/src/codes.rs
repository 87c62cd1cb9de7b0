//! The numbers shared with `index.js`: result codes of the entry points,
//! outcome codes written into the ready buffer, and the limits that keep every
//! count and request key an exact JS number.

use volt_sem::Semaphore;

/// The largest permit count JS sees: `min(Semaphore::MAX_PERMITS, 2^53 - 1)`,
/// so every count is an exact JS number.
pub(crate) const MAX_JS: usize = {
    let safe: u64 = (1 << 53) - 1;
    if (Semaphore::MAX_PERMITS as u64) < safe {
        Semaphore::MAX_PERMITS
    } else {
        safe as usize
    }
};

// Result codes shared with index.js.
pub(crate) const OK: i32 = 0;
pub(crate) const NO_PERMITS: i32 = 1;
pub(crate) const SLOT_BASE: i32 = 4;
pub(crate) const CLOSED: i32 = 2;
pub(crate) const BAD_COUNT: i32 = 3;
pub(crate) const RELEASE_OVERFLOW: i32 = -1;
pub(crate) const BAD_ARGS: i32 = -2;

// Outcome codes written into the ready buffer.
pub(crate) const GRANTED: u32 = 1;
pub(crate) const WOKEN_CLOSED: u32 = 2;
pub(crate) const LOST: u32 = 3;
/// Granted on a shared semaphore: the slot keeps the grant until JS confirms
/// it saw it (`confirm`), so a terminated thread gives it back.
pub(crate) const GRANTED_HELD: u32 = 4;
/// The request failed (Redis: its session was lost, Redis lost the state, a
/// connection could not be restored): the error waits in the env's extras
/// under the slot.
pub(crate) const FAILED: u32 = 5;
/// Not a request: the Redis session watched as number `slot` was lost (the
/// error waits in the env's extras under `WATCH_BIT | slot`).
pub(crate) const LEASE_LOST: u32 = 6;
/// A Redis request whose `timeout` passed before its acquire script answered
/// ([`crate::removal`]'s `expire`), and the answer was "queued": the request
/// was cancelled then (its partial grant handed on); a timeout.
pub(crate) const TIMED_OUT: u32 = 7;
/// `expire(key)`: left to the Redis acquire script's answer until its grace
/// ends, `ms` milliseconds from now (at most [`DEFERRED_MAX_MS`]), returned
/// as `DEFERRED - ms` (so at most -1).
pub(crate) const DEFERRED: i32 = -1;
/// The longest wait `expire(key)` returns (JS's longest timer).
pub(crate) const DEFERRED_MAX_MS: i32 = 0x7fff_fffe;
/// `expire(key, last)`: the request was granted before the expiry could
/// cancel it, and the grant is the caller's: `KEPT + k` when it is
/// delivered as [`GRANTED`], `KEPT_HELD + k` as [`GRANTED_HELD`], with `k`
/// outcomes of other requests written as usual.
pub(crate) const KEPT: i32 = 1 << 28;
/// See [`KEPT`].
pub(crate) const KEPT_HELD: i32 = 1 << 29;

/// Marks a lease watch's number among the request keys of the remote list
/// and the extras (request keys stay below 2^52).
pub(crate) const WATCH_BIT: u64 = 1 << 63;
/// The extras key of the grant of the last acquire taken at once.
pub(crate) const LAST_GRANT: u64 = WATCH_BIT - 1;

/// Generations are masked so that a key `gen << 32 | slot` is an exact JS number.
pub(crate) const GEN_MASK: u32 = (1 << 20) - 1;
