//! The phases of a waiter, stored in [`Node`](super::Node)'s `phase` byte:
//! the same seven for every backend.
//!
//! ```text
//!  IDLE --enqueue--> WAITING --completer claims (callback waiter)--> NOTIFYING_* --callback returned--> GRANTED/CLOSED
//!   ^                  |     \-completer claims (Waker waiter, core only)------------------------> GRANTED/CLOSED
//!   |                  +--finish: the backend cancels it--> IDLE                                         |
//!   +------------------------------------------------------------- finish (outcome consumed) ------------+
//! ```
//!
//! `NOTIFYING_GRANTED` and `NOTIFYING_CLOSED` say which way the request
//! ended. A backend whose outcomes are richer than granted/closed (Redis: a
//! token, a failure) keeps the detail in its own waiter and uses
//! `*_GRANTED` for a grant, `*_CLOSED` for every other end.

/// Not queued: new, cancelled, or its outcome was consumed.
pub const IDLE: u8 = 0;
/// Queued in its backend; only the backend may take it out.
pub const WAITING: u8 = 1;
/// Claimed by a completer with a grant; its callback has not returned yet.
pub const NOTIFYING_GRANTED: u8 = 2;
/// Claimed by a completer without a grant (closed, failed); its callback has
/// not returned yet.
pub const NOTIFYING_CLOSED: u8 = 3;
/// Granted; the backend no longer touches the waiter.
pub const GRANTED: u8 = 4;
/// Ended without a grant; the backend no longer touches the waiter.
pub const CLOSED: u8 = 5;
/// Still NOTIFYING, but the callback itself already consumed the outcome
/// through `finish`; the trampoline turns it into `IDLE` when the callback
/// returns.
pub const NOTIFYING_CONSUMED: u8 = 6;

/// The NOTIFYING phase for an outcome.
pub const fn notifying(granted: bool) -> u8 {
    if granted {
        NOTIFYING_GRANTED
    } else {
        NOTIFYING_CLOSED
    }
}
