//! A fair, weighted, async counting semaphore with direct hand-off, built to be
//! shared by every thread and every event loop of a process.
//!
//! * **Direct hand-off.** `release` gives permits to the oldest waiter first; only
//!   the surplus goes back to the counter, and only when nobody waits. A waiter
//!   cannot starve.
//! * **Weighted, strict FIFO.** `acquire(n)` may be filled across several releases;
//!   a queued `acquire(4)` is never overtaken by later `acquire(1)`s.
//! * **Cancel-safe.** Dropping a queued acquire hands its partial grant on.
//! * **No allocation per wait.** The queue node lives in the caller's future or
//!   struct; the queue is an intrusive list.
//! * **Lock-free when uncontended.** `try_acquire` is a CAS loop; `release` takes
//!   no lock when nobody waits ([`docs::algorithm`] says why that is safe).
//! * **Any event loop.** A waiter is woken by a Rust `Waker` or by a plain
//!   callback (function pointer + context), which is how the C ABI and the
//!   Python and Node bindings plug in; a thread blocked in `acquire_blocking`
//!   is unparked directly.
//!
//! ```
//! use volt_sem::Semaphore;
//! # futures::executor::block_on(async {
//! let sem = Semaphore::new(3);
//! let two = sem.acquire(2).await.unwrap();
//! assert_eq!(sem.available_permits(), 1);
//! assert!(sem.try_acquire(2).is_err()); // only one left
//! drop(two);
//! assert_eq!(sem.available_permits(), 3);
//! # });
//! ```
//!
//! Owned permits move into spawned tasks, and plain threads block on the same
//! semaphore (they queue in the same FIFO):
//!
//! ```
//! use std::sync::Arc;
//! use volt_sem::Semaphore;
//!
//! let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
//! let sem = Arc::new(Semaphore::new(2));
//! rt.block_on(async {
//!     let permit = sem.clone().acquire_owned(1).await.unwrap();
//!     let task = tokio::spawn(async move {
//!         let _permit = permit; // released when the task ends
//!     });
//!     let sem2 = sem.clone();
//!     let thread = std::thread::spawn(move || {
//!         let _two = sem2.acquire_blocking(2).unwrap(); // waits for the task's permit
//!     });
//!     task.await.unwrap();
//!     thread.join().unwrap();
//! });
//! assert_eq!(sem.available_permits(), 2);
//! ```
//!
//! [`Mutex`] and [`RwLock`] are built on the same semaphore and inherit its
//! fairness; they have async, blocking, timed and owned (`Arc`) forms:
//!
//! ```
//! use std::collections::HashMap;
//! use std::sync::Arc;
//! use volt_sem::{Mutex, RwLock};
//! # futures::executor::block_on(async {
//! let cache = Arc::new(Mutex::new(HashMap::new()));
//! cache.lock().await.insert("k", 1);
//! let guard = cache.clone().lock_owned().await; // 'static: may move into a task
//! assert_eq!(guard.get("k"), Some(&1));
//! drop(guard);
//!
//! let config = RwLock::new(String::from("v1"));
//! let w = config.write().await;
//! let r = volt_sem::RwLockWriteGuard::downgrade(w); // no writer can get in between
//! assert_eq!(*r, "v1");
//! # });
//! ```
//!
//! # Further reading
//!
//! * [`docs::algorithm`]: the algorithm, its invariants and memory orderings.
//! * [`docs::tokio_migration`]: the tokio name for every call, and the differences.
//! * Benchmarks and the memory footprint of each type: `docs/benchmarks.md` in
//!   the [repository](https://github.com/volt-sem/volt-sem/blob/main/docs/benchmarks.md).
//!
//! # Cargo features
//!
//! * `tokio`: acquires take part in tokio's cooperative-scheduling budget, and a
//!   blocking acquire that would wait inside a tokio task panics (see
//!   [`Semaphore::acquire_blocking`]). Without it the crate depends on no
//!   runtime, and acquires still yield once per 128 immediate grants.
//! * `cache-padded`: pads each semaphore's permit word to its own cache line
//!   (a `Semaphore` of 256 bytes instead of 56 on x86-64, and so every `Mutex`
//!   and `RwLock`). It can pay for one semaphore contended by many cores; the
//!   default suits many small locks.
//!
//! # The waker contract
//!
//! A waiter queued through [`Semaphore::acquire_raw`] carries `wake: WakeFn` and
//! `ctx: *mut c_void`:
//!
//! 1. `wake(ctx)` is called **at most once** per queued request: when its grant is
//!    complete, or when the semaphore is closed while it waits. It is never called
//!    if `acquire_raw` returned `Ready` or an error, nor after a cancel removed the
//!    waiter, nor for a waiter granted by a [`Semaphore::release_claiming`]
//!    whose claim took it (its caller then delivers the grant).
//! 2. It runs on whichever thread completed the grant (a releaser, a canceller
//!    handing on a partial grant, or the closer), **never while an internal lock
//!    is held**, so it may call back into the semaphore: release, try-acquire,
//!    queue another waiter, even [`Semaphore::finish_raw`] on its own waiter.
//! 3. **Callbacks never nest.** When a callback's own release (or close, or
//!    cancel) completes more waiters, their callbacks do not run inside it: the
//!    same thread runs them after the current callback returned, oldest grant
//!    first (a per-thread trampoline). So a chain of any length of callbacks that
//!    each release to the next uses a bounded amount of stack, and the release
//!    call inside a callback returns before the waiters it completed are called
//!    back ([`Waiter::state`] already says `Granted`). The trampoline is one
//!    per thread for every backend ([`raw`]): it holds across the local,
//!    shared-memory and Redis semaphores alike.
//! 4. It must be short, must not block and must not unwind (a `WakeFn` is
//!    `extern "C"`: a panic or foreign exception escaping it aborts the
//!    process). [`Semaphore::finish_raw`] on another thread waits for it to
//!    return. One release may complete several waiters; their callbacks run one
//!    after another on the releasing thread, so a callback that blocks (say, on
//!    an interpreter lock) also delays the callbacks after it, and anyone
//!    finishing those waiters. Never call `finish_raw` while holding a lock that
//!    a callback may need.
//! 5. **Lifetime rule:** after `finish_raw(waiter)` returns (called outside the
//!    waiter's callback), the callback has returned or will never be called, and
//!    the semaphore holds no reference to the waiter. Only then may the waiter or
//!    `ctx` be freed or reused. Every `Pending` waiter must be finished exactly
//!    once; `finish_raw` both cancels (handing back a partial grant) and collects
//!    a completed outcome (`Granted`: the caller owns the permits). Called from
//!    inside the waiter's own callback, it collects the outcome at once and the
//!    waiter stays busy until the callback returns. Called from a callback on a
//!    *sibling* waiter whose callback is still to run on this thread (the same
//!    release completed both), it collects the sibling's outcome at once and the
//!    sibling's callback is never called; so does a `Waker` that the same
//!    release wakes (or a cancel drops). A waiter dropped while busy aborts the
//!    process (it would otherwise be a use-after-free).
//! 6. [`Waiter::state`] may be read at any time, including inside the callback,
//!    to see whether the request was granted or closed.
//!
//!
//! [`Semaphore::acquire_raw`]: crate::raw::RawSemaphore::acquire_raw
//! [`Semaphore::finish_raw`]: crate::raw::RawSemaphore::finish_raw
//! # `fork()`
//!
//! A forked child gets a copy of the semaphore, not a share of it. In the
//! child, every request that was queued at the moment of the fork is closed
//! (its future resolves with [`AcquireError::Closed`], `finish_raw` returns
//! [`Finish::Closed`]) without being woken, since its wake-up belongs to a
//! thread of the parent, and the permits granted to it so far come back; the
//! semaphore stays open and permits held at the fork stay held. A raw
//! request whose wake callback a thread of the parent was running (or was
//! about to run) at the fork is not called back in the child either:
//! `finish_raw` there returns its outcome at once instead of waiting for a
//! callback that no thread of the child will finish (unless the fork was
//! made from inside a wake callback, whose thread goes on delivering its
//! callbacks in the child). One window is
//! not covered: a fork at the instant another thread is inside one of the
//! semaphore's critical sections leaves its queue lock held in the child, as
//! with any mutex (POSIX allows only async-signal-safe calls in such a child).
//! To share one limit between processes, use a semaphore in shared memory, not
//! a forked copy.
//!
//! Rust futures use the same queue but wake through a `Waker` that is moved out
//! of the waiter under the lock, so dropping a future never waits.
//!
//! A raw waiter from Rust (the form the C ABI and the bindings use):
//!
//! ```
//! use std::ffi::c_void;
//! use std::pin::pin;
//! use std::sync::atomic::{AtomicBool, Ordering};
//! use volt_sem::raw::RawSemaphore;
//! use volt_sem::{Finish, RawAcquire, Semaphore, Waiter, WaiterState};
//!
//! unsafe extern "C" fn on_wake(ctx: *mut c_void) {
//!     // SAFETY: `ctx` is the `AtomicBool` below, alive until `finish_raw` returned.
//!     unsafe { &*(ctx as *const AtomicBool) }.store(true, Ordering::Release);
//! }
//!
//! let sem = Semaphore::new(1);
//! let held = sem.try_acquire(1).unwrap();
//! let woken = AtomicBool::new(false);
//! let waiter = pin!(Waiter::new());
//! let ctx = &woken as *const AtomicBool as *mut c_void;
//! // SAFETY: the waiter is new and pinned; it and `woken` outlive `finish_raw` below.
//! let r = unsafe { sem.acquire_raw(waiter.as_ref(), 1, on_wake, ctx) };
//! assert_eq!(r, Ok(RawAcquire::Pending));
//! drop(held); // hands the permit to the waiter and runs `on_wake` on this thread
//! assert!(woken.load(Ordering::Acquire));
//! assert_eq!(waiter.state(), WaiterState::Granted);
//! // SAFETY: the waiter was queued on `sem`.
//! assert_eq!(unsafe { sem.finish_raw(waiter.as_ref()) }, Finish::Granted);
//! sem.release(1).unwrap(); // the caller owned the permit
//! ```

#![warn(missing_docs)]

mod acquire;
mod blocking;
mod coop;
pub mod docs;
mod error;
mod fork;
#[macro_use]
mod guard;
pub mod inspect;
mod mutex;
#[cfg(feature = "metrics")]
mod publish;
pub mod raw;
mod rwlock;
mod semaphore;
pub mod stats;
mod sync;
mod wait_list;
mod waiter;
mod wake_batch;

pub use acquire::{Acquire, AcquireOwned, OwnedPermit, Permit};
pub use error::{AcquireError, AcquireTimeoutError, ReleaseError, TryAcquireError};
pub use mutex::{MappedMutexGuard, Mutex, MutexGuard, OwnedMutexGuard};
pub use raw::outcome::{Finish, RawAcquire, WaiterState, WakeFn};
pub use rwlock::{
    OwnedRwLockReadGuard, OwnedRwLockWriteGuard, RwLock, RwLockMappedWriteGuard, RwLockReadGuard,
    RwLockWriteGuard,
};
pub use semaphore::Semaphore;
pub use waiter::Waiter;
