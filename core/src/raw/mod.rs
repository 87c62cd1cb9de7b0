//! The waiting protocol, written once for every backend: the phase machine
//! of a waiter, the one per-thread trampoline that runs wake callbacks, and
//! the `finish` loop that ends a request whatever phase it is in.
//!
//! The local [`Semaphore`](crate::Semaphore), the shared-memory semaphore
//! (volt-sem-shm) and the Redis semaphore (volt-sem-redis) each drive a
//! [`Node`] embedded in their waiter (the first two queue the same one, the
//! core's [`Waiter`](crate::Waiter), tagged with the [`Backend`] that queued
//! it) and supply a [`Finisher`]: how a queued waiter is cancelled and where
//! its outcome lives. Everything else (who may store
//! which phase, how callbacks are run, how a callback finishes itself or a
//! sibling) is here, and holds across crates: a callback of one backend that
//! completes waiters of another does not run their callbacks nested inside
//! its own.
//!
//! [`RawSemaphore`] is the raw waiter API every backend implements
//! (`acquire_raw`, `finish_raw`, `owns`), its contract written once.
//! [`Wait`] is the async acquire over any backend's raw API (a
//! [`RawWait`]), with the backend's waiter embedded in the future: the
//! shared-memory and Redis semaphores' `acquire` futures, allocation-free.
//!
//! # The algorithm
//!
//! A request goes `IDLE -> WAITING` when its backend queues it (the owner,
//! under the backend's lock, after [`Node::set_callback`]). A *completer*
//! (a release, a close, the shm doorbell thread, the Redis door or agent)
//! claims it under the backend's lock: `WAITING -> NOTIFYING_GRANTED` or
//! `NOTIFYING_CLOSED`, and, once that lock is released, hands it to this
//! thread's trampoline ([`deliver`], or [`push`] + [`enter`] + [`drain`]).
//! The trampoline calls the callback, then stores `GRANTED`/`CLOSED` (or
//! `IDLE` if the callback consumed the outcome itself). The owner's
//! [`finish`] consumes the outcome and leaves the node `IDLE`, or cancels a
//! still-`WAITING` request through its backend.
//!
//! # Invariants
//!
//! 1. Exactly one thread moves a node out of `WAITING`: the completer that
//!    claims it or the owner's `finish` that cancels it, each under the
//!    backend's lock, each after checking the phase under that lock.
//! 2. From the claim until the trampoline's final store, the node belongs to
//!    the claiming thread: only it touches `notify` and the `pending` links,
//!    and only it (or the callback it runs, on the same thread) stores the
//!    phase. The trampoline's final store is its last access.
//! 3. At most one callback runs on a thread at a time (`current`); callbacks
//!    completed while one runs wait in the thread's FIFO, oldest first.
//! 4. `finish` never waits for a callback that only its own thread could run:
//!    inside its own callback it consumes at once (`NOTIFYING_CONSUMED`); for
//!    a sibling pending here it takes the node out of the FIFO.
//!
//! # Orderings
//!
//! * `WAITING` is stored with Release by the owner after writing the request
//!   (callback, permits, backend node); completers read it under the
//!   backend's lock, which already orders them, so the Release only matters
//!   to lock-free readers of the public state getters.
//! * The claim (`NOTIFYING_*`) is stored with Release after the backend wrote
//!   the outcome; the owner's Acquire load in `finish` (or a state getter)
//!   then sees the outcome.
//! * The trampoline's final store is Release: it publishes everything the
//!   callback did to the owner spinning in `finish` (Acquire).
//! * `NOTIFYING_CONSUMED` is Relaxed: stored by the callback on the thread
//!   that will read it back.
//! * `finish`'s store of `IDLE` is Release: a thread that sees the waiter
//!   idle, and reuses or frees it, sees the outcome consumed.
//!
//! Under `--cfg volt_loom` every atomic, cell and thread-local here is
//! loom's (see the crate's `sync` seam), so the core's loom models check
//! this protocol through the local semaphore.

pub mod delivery;
mod finish;
mod future;
mod node;
pub(crate) mod outcome;
pub mod phase;
mod semaphore;

pub use delivery::{current_backend, deliver, drain, enter, push};
pub(crate) use finish::finish_orphan;
pub use finish::{
    finish, forked_in_delivery, reset_forked_copy, watch_forks, CancelWith, Finisher,
};
pub use future::{RawWait, Wait};
pub(crate) use node::Notify;
pub use node::{Backend, Node};
pub use outcome::Expiry;
pub(crate) use outcome::{Finish, RawAcquire, WaiterState, WakeFn};
pub use semaphore::RawSemaphore;

/// `Default` (an idle waiter, `new()`) and `Debug` (its `state()` and
/// `requested()`) for a backend's waiter type: the same for every backend.
#[doc(hidden)]
#[macro_export]
macro_rules! waiter_impls {
    ($t:ident) => {
        impl Default for $t {
            fn default() -> Self {
                Self::new()
            }
        }

        impl core::fmt::Debug for $t {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.debug_struct(stringify!($t))
                    .field("state", &self.state())
                    .field("requested", &self.requested())
                    .finish_non_exhaustive()
            }
        }
    };
}
