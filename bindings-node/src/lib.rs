//! Node binding for volt-sem: the native half of the `volt-sem` npm package.
//!
//! The JS layer (`index.js`) owns the promises; this addon owns the semaphores
//! and the queue nodes. Every entry point is a hand-registered Node-API function
//! (the cheapest crossing, ~170 ns) that takes plain numbers and an `External`
//! handle and answers with a small integer code, so no JS object is created on
//! the hot path. The uncontended paths do not cross at all: `index.js` runs
//! them with `Atomics` on the core's own state word ([`view`]).
//!
//! # Modules
//!
//! One concept per file, as in the core crate:
//!
//! * [`exports`]: module registration: the raw functions and `maxPermits`.
//! * [`ops`]: the semaphore operations (create, acquire, tryAcquire, release,
//!   cancel, close) and the queries.
//! * [`semaphore`]: [`Sem`](semaphore::Sem), one semaphore and the binding's
//!   bookkeeping around the core's.
//! * [`named`]: `Semaphore.open`/`unlink` and the errors of named semaphores.
//! * [`connect`]: `Semaphore.connect`, the Redis backend behind the same
//!   class, and its calls that take a round trip.
//! * [`offloop`]: running those calls off the JS thread, answered by a promise.
//! * [`lease`]: what Redis outcomes carry (tokens, errors) and lease loss.
//! * [`handle`]: what a JS `Semaphore` object holds (an External).
//! * [`env`]: the per-environment state (one per main thread or worker): queue
//!   nodes, slots, the thread-locals of the running native call.
//! * [`wake`]: the wake path, from a grant on any thread to its promise
//!   (`# Wake path`).
//! * [`delivery`]: grants on shared semaphores held until JS confirms them
//!   (`# Delivery`).
//! * [`registry`]: the process-wide `share()`/`attach()` registry and its pins.
//! * [`abandon`]: sweeping the requests of garbage-collected private
//!   semaphores (`# Abandoned semaphores`).
//! * [`removal`]: `removePermits`, its debt and orphaned waiters
//!   (`# Removing permits`); [`debt`]: how the debt is stored (its low 32
//!   bits tell whether one is owed, for the JS fast path).
//! * [`stats`]: `metrics` and `recordTimeout`, behind `sem.stats()`.
//! * [`teardown`]: the env cleanup hook (`# Teardown`).
//! * [`view`]: the state word seen from JS, for the uncontended paths that
//!   run in `index.js` without a Node-API call (`# The JS fast path`).
//! * [`codes`]: result and outcome codes shared with `index.js`, and limits.
//! * [`raw`]: raw Node-API helpers, argument checks, the `native!` macro,
//!   panics turned into JS errors.

use napi::sys;

type RawEnv = sys::napi_env;
type RawValue = sys::napi_value;

#[macro_use]
mod raw;

mod abandon;
mod codes;
mod connect;
mod debt;
mod delivery;
mod env;
mod error_code;
mod exports;
mod handle;
mod inspect;
mod lease;
mod named;
mod offloop;
mod ops;
mod registry;
mod removal;
mod semaphore;
mod stats;
mod teardown;
mod total;
mod view;
mod wake;

// The module's entry point, public as it was when it lived here (and so that
// test builds, where napi-derive registers nothing, keep it and all it uses).
pub use exports::init;
