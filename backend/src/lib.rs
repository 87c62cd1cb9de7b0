//! The backend seam of the volt-sem bindings: one [`Semaphore`] type that is
//! either the in-process semaphore ([`volt_sem::Semaphore`]) or the named one
//! shared by the processes of a machine ([`volt_sem_shm::SharedSemaphore`]),
//! one [`Waiter`] that queues on either, and one [`Error`].
//!
//! The C ABI, the Python and the Node bindings hold this type where they held
//! a `volt_sem::Semaphore`, so that `volt_sem_open` / `Semaphore.open` return
//! the *same* handle type as the local constructor and every existing
//! operation works on both, unchanged:
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
//! [`volt_sem_shm::unlink`]). The shared one lives in its own crate, not in
//! the core crate, because the core has no dependencies at all (it is the
//! `no-unsafe-dependency` base of everything) while the shared one needs
//! `libc` and the OS's shared memory; and the core cannot re-export it, since
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
//! * [`Waiter`] holds one waiter of each backend side by side (a binding
//!   initialises its waiter before it knows the semaphore; C's fixed
//!   256-byte `volt_waiter` holds it: `size_of::<Waiter>()` is asserted
//!   below [`WAITER_MAX_SIZE`]). Its `kind` says which one the current request
//!   uses; [`Semaphore::finish_raw`] of a waiter queued on the other backend is
//!   `Idle`.
//! * The raw waiter contract is `volt_sem`'s (see its crate docs, *The waker
//!   contract*) for every backend: the callback runs at most once, never under
//!   a lock, never nested; `finish_raw` outside the callback waits for a
//!   running callback; inside it returns the outcome at once. What differs is
//!   *where* the callback runs: local, on the releasing thread; shared, on the
//!   process's doorbell thread of that name (never on the releaser, which may
//!   be another process). A binding whose wake path already posts to its event
//!   loop (every one here does) needs nothing more.
//! * Accounting differs, and [`Error`] says so: a shared semaphore has a fixed
//!   total and each *process* returns its own permits ([`Error::NotHeld`]), a
//!   local one accepts any release up to `MAX_PERMITS` ([`Error::Overflow`]).
//!
//! # How to plug a backend in
//!
//! (For a third backend, e.g. the Redis one across machines.)
//!
//! 1. Add a variant to [`Semaphore`] holding the backend's handle, a
//!    constructor (`open_redis(...)`, or an [`OpenOptions`]-like value), and a
//!    [`Kind`] variant. Give every method its arm; an operation the backend
//!    cannot do returns a typed [`Error`] (add a variant, with a
//!    [`code`](Error::code)), never a panic.
//! 2. The backend's raw waiter goes into [`Waiter`] as one more field (mind
//!    [`WAITER_MAX_SIZE`]: C's `volt_waiter` is fixed at 256 bytes, of which
//!    the C library uses 32 for its own bookkeeping; if it does not fit, hold
//!    it in a box allocated at `acquire_raw`, freed by `finish_raw`), plus a
//!    `kind` value; `state`, `is_busy`, `requested` and `in_own_callback` get
//!    their arm. If the backend calls back from its own thread, route the
//!    callback through a trampoline like `shared_trampoline` so that
//!    `in_own_callback` stays true inside it.
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
mod semaphore;
mod waiter;

pub use error::Error;
pub use semaphore::{unlink, Kind, Semaphore};
pub use waiter::{in_shared_callback, Waiter};

pub use volt_sem as local;
pub use volt_sem::{Finish, RawAcquire, WaiterState, WakeFn};
pub use volt_sem_shm as shm;
pub use volt_sem_shm::{OpenOptions, MAX_NAME_LEN};

/// The largest a [`Waiter`] may grow: what C's 256-byte `volt_waiter` leaves
/// after the C library's own bookkeeping (a magic word, flags, the user's
/// callback and context, a semaphore reference).
pub const WAITER_MAX_SIZE: usize = 256 - 48;

const _: () = {
    assert!(core::mem::size_of::<Waiter>() <= WAITER_MAX_SIZE);
    assert!(core::mem::align_of::<Waiter>() <= 8);
};
