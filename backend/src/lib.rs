//! The backend seam of the volt-sem bindings: one [`Semaphore`] type that is
//! the in-process semaphore ([`volt_sem::Semaphore`]), the named one shared by
//! the processes of a machine ([`volt_sem_shm::SharedSemaphore`]), or (the
//! `redis` feature) the one stored in Redis and shared by every host
//! (`volt_sem_redis::RedisSemaphore`); one [`Waiter`] that queues on any of
//! them, one [`Finish`], one [`Grant`] and one [`Error`].
//!
//! The C ABI, the Python and the Node bindings hold this type where they held
//! a `volt_sem::Semaphore`, so that `volt_sem_open` / `Semaphore.open` (and
//! `volt_sem_connect` / `Semaphore.connect`) return the *same* handle type as
//! the local constructor and every existing operation works on all of them,
//! unchanged:
//!
//! ```
//! use volt_sem_backend::{Error, Semaphore};
//! let sem = Semaphore::local(2).unwrap();
//! sem.try_acquire(2).unwrap();
//! assert_eq!(sem.try_acquire(1), Err(Error::NoPermits));
//! sem.release(2).unwrap();
//! assert_eq!(sem.available_permits(), 2);
//! ```
//!
//! ```no_run
//! use volt_sem_backend::{OpenOptions, Semaphore};
//! # fn main() -> Result<(), volt_sem_backend::Error> {
//! // Every process that opens "gpu" with 4 permits shares the same 4.
//! let sem = Semaphore::open("gpu", 4, OpenOptions::new())?;
//! sem.acquire_blocking(1)?;
//! sem.release(1)?;
//! # Ok(()) }
//! ```
//!
//! # Rust users
//!
//! Rust code does not need this crate: the local semaphore is
//! [`volt_sem::Semaphore`], the shared one is
//! [`volt_sem_shm::SharedSemaphore`], with the same async, blocking, `try` and
//! raw-waiter API (`SharedSemaphore::open(name, permits, OpenOptions)`,
//! [`volt_sem_shm::unlink`]): the same RAII permits and method names, the
//! same [`RawSemaphore`] trait (the core's chapter
//! `volt_sem::docs::choosing_a_backend` shows the same code on the local,
//! named and Redis semaphores, and runs here as doctests). Where this crate
//! counts permits instead (a [`Grant`] per acquire, `release(n)`), it is for
//! the bindings, which hold permits by count. The shared one lives in its own crate, not in
//! the core crate, because the core has no dependencies at all (by design: it
//! is what every binding and every user builds on, on every platform) while
//! the shared one needs `libc` and the OS's shared memory, Linux only for now;
//! and the core cannot re-export it, since
//! `volt-sem-shm` depends on `volt-sem` (for the raw waiter types
//! [`RawAcquire`], [`Finish`], [`WakeFn`], which both share). Both crates are
//! re-exported here as [`local`] and [`shm`].
//!
//! # The seam
//!
//! * [`Semaphore`] is an enum with one variant per backend, `match`ed by
//!   every operation. The local semaphore is inline, so the local path pays
//!   one branch and no extra pointer. It is `#[non_exhaustive]`: a binding
//!   that needs a backend's own API (Node's lock-free views on the local
//!   state word, the shared semaphore's `census`) asks for it with
//!   [`Semaphore::as_local`] / [`Semaphore::as_shared`].
//! * [`Waiter`] holds a `volt_sem::Waiter`, which the local and the shared
//!   backend both queue (`volt_sem_shm::ShmWaiter` is that type), and, with
//!   the `redis` feature, a Redis waiter beside it (a binding initialises its
//!   waiter before it knows the semaphore; C's fixed 512-byte `volt_waiter`
//!   holds it: `size_of::<Waiter>()` is asserted below [`WAITER_MAX_SIZE`]).
//!   Its `kind` says which backend the current request uses;
//!   [`Semaphore::finish_raw`] of a waiter queued on another backend is
//!   `Idle`. Side by side rather than boxed: no allocation per wait on any
//!   backend, and no box whose last use (the Redis agent's, after a callback
//!   that collected its own outcome) would outlive `finish_raw`.
//! * Outcomes: a `try` or blocking acquire returns a [`Grant`] (the Redis
//!   fencing token and session; nothing for the other backends);
//!   [`Finish`] adds `Failed(error)` to the core's outcomes, for a Redis
//!   request whose session lease expired or whose state Redis lost.
//! * The raw waiter contract is `volt_sem`'s (see its crate docs, *The waker
//!   contract*) for every backend: the callback runs at most once, never under
//!   a lock, never nested; `finish_raw` outside the callback waits for a
//!   running callback; inside it returns the outcome at once. What differs is
//!   *where* the callback runs: local, on the releasing thread; shared, on the
//!   process's doorbell thread of that name (never on the releaser, which may
//!   be another process); Redis, on the handle's door thread (which makes
//!   the handle's round trips, so that `acquire_raw`, `release` and
//!   `finish_raw` never block on any backend), on a thread waiting in a call
//!   of the handle that made them itself (the door idle), on its agent
//!   thread, or on one that found the session lost. A binding whose wake path
//!   already posts to its event loop (every one here does) needs nothing more.
//! * Accounting differs, and [`Error`] says so: a shared semaphore has a fixed
//!   total and each *process* returns its own permits ([`Error::NotHeld`]), a
//!   local one accepts any release up to `MAX_PERMITS` ([`Error::Overflow`]).
//!
//! # How to plug a backend in
//!
//! (How the Redis backend was added; the same for a fourth.)
//!
//! 1. Add a variant to [`Semaphore`] holding the backend's handle, a
//!    constructor (`Semaphore::connect(url, name, permits, ConnectOptions)`), and a
//!    [`Kind`] variant. Give every method its arm; an operation the backend
//!    cannot do returns a typed [`Error`] (a new one is a row of the error
//!    table: see [*Adding an error*](Error#adding-an-error)), never a panic.
//! 2. Best, the backend queues `volt_sem::Waiter` itself, as the shared one
//!    does (`Waiter::set_foreign_request` tags it and records the request,
//!    its `raw` node carries the protocol, `backend_word` one word of the
//!    backend's own; what else it must know about a request it keeps in its
//!    own table); then only a `kind` value is new. Otherwise its raw waiter
//!    goes into [`Waiter`] as one more field (mind [`WAITER_MAX_SIZE`]: C's
//!    `volt_waiter` is fixed at 512 bytes, of which the C library uses 48 for
//!    its own bookkeeping), and `Waiter::node`, `is_busy`, `requested` get
//!    their arm. Either way it completes the `volt_sem::raw::Node` through
//!    `volt_sem::raw`'s per-thread trampoline, whatever thread it calls back
//!    from.
//! 3. Map its errors in `error.rs` (`From<TheirError> for Error`).
//! 4. The bindings need no change for existing operations: they call the
//!    methods of [`Semaphore`]. Each adds its front door (C `volt_sem_open`
//!    flags, Python `Semaphore.open`, Node `Semaphore.open`) and maps any new
//!    [`Error`] variant to its status / exception / `code`.
//! 5. Test through each binding's public API, like the shared backend's tests
//!    (`tests/c/test_shared.c`, `bindings-python/tests/test_shared.py`).

#![warn(missing_docs)]
// Elsewhere the shared backend cannot be opened: its raw-waiter plumbing is unused.
#![cfg_attr(not(target_os = "linux"), allow(dead_code))]

mod error;
mod outcome;
mod semaphore;
mod session;
mod waiter;

/// The examples of the core's chapter `volt_sem::docs::choosing_a_backend`
/// (the same code on the local, named and Redis semaphores), run as this
/// crate's doctests: the core cannot depend on the other two backends.
#[cfg(all(doctest, feature = "redis"))]
#[doc = include_str!("../../core/src/docs/backends.md")]
pub struct ChoosingABackendChapter;

pub use error::{Error, ErrorClass};
// For volt-sem-ffi's generated `volt_status` enum only.
#[doc(hidden)]
pub use error::{Status, STATUSES};
pub use outcome::{Expiry, Finish, Grant};
#[cfg(feature = "redis")]
pub use semaphore::delete_redis;
pub use semaphore::{unlink, Kind, Semaphore};
pub use session::SharedHandle;
pub use waiter::{in_shared_callback, Waiter};

pub use volt_sem as local;
pub use volt_sem::inspect;
pub use volt_sem::raw::RawSemaphore;
pub use volt_sem::{RawAcquire, WaiterState, WakeFn};
#[cfg(feature = "redis")]
pub use volt_sem_redis as redis;
#[cfg(feature = "redis")]
pub use volt_sem_redis::{ConnectOptions, LeaseWatch};
pub use volt_sem_shm as shm;
pub use volt_sem_shm::{OpenOptions, MAX_NAME_LEN};

/// The largest a [`Waiter`] may grow: what C's 512-byte `volt_waiter` leaves
/// after the C library's own bookkeeping (a magic word, flags, the user's
/// callback and context, a semaphore reference).
pub const WAITER_MAX_SIZE: usize = 512 - 48;

const _: () = {
    assert!(core::mem::size_of::<Waiter>() <= WAITER_MAX_SIZE);
    assert!(core::mem::align_of::<Waiter>() <= 8);
};
