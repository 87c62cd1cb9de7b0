//! Node binding for volt-sem: the native half of the `volt-sem` npm package.
//!
//! The JS layer (`index.js`) owns the promises; this addon owns the semaphores
//! and the queue nodes. Every entry point is a hand-registered Node-API function
//! (the cheapest crossing, ~170 ns) that takes plain numbers and an `External`
//! handle and answers with a small integer code, so no JS object is created on
//! the hot path; `acquire` and `release`, the two calls of a contended
//! operation, leave their code in the outcome buffer instead and return
//! `undefined` (no JS number made), and read no count for one permit. The uncontended paths do not cross at all: `index.js` runs
//! them with `Atomics` on the core's own state word ([`view`]).
//!
//! # Modules, in layers
//!
//! One concept per file, as in the core crate, in layers: Node-API helpers and
//! the numbers shared with JS, then what other threads reach, then the
//! semaphore, then the per-environment state, then the life of requests, then
//! the operations JS calls, then registration; a module refers only to modules
//! of its own layer or lower ones, and never in a cycle (`test/module-graph.test.js`
//! checks both, with the list below).
//!
//! 1. Helpers and numbers:
//!    * [`raw`]: raw Node-API types and helpers, argument checks, the
//!      `native!` macro, panics turned into JS errors.
//!    * [`codes`]: result and outcome codes shared with `index.js`, and limits.
//!    * [`debt`]: how the `removePermits` debt is stored (its low 32 bits tell
//!      whether one is owed, for the JS fast path).
//!    * [`js_error`]: the JS error of a backend error, and `ERR_VOLT_UNSUPPORTED`.
//!    * [`inspect`]: the JS value of an inspection.
//! 2. What other threads reach:
//!    * [`remote`]: the part of an environment other threads wake (its remote
//!      list and threadsafe function), and the thread-local of the running
//!      native call, which puts such wakes off until that call is over.
//!    * [`watch`]: one watched Redis session and its waker.
//! 3. The semaphore:
//!    * [`semaphore`]: [`Sem`](semaphore::Sem), one semaphore and the binding's
//!      bookkeeping around the core's, and [`Node`](semaphore::Node), the
//!      queue node of one request on it.
//! 4. The environment:
//!    * [`handle`]: what a JS `Semaphore` object holds (an External).
//!    * [`mod@env`]: the per-environment state (one per main thread or worker): its
//!      slots and their states, and marking which one's native call runs.
//! 5. The life of requests:
//!    * [`removal`]: `removePermits`, its debt and orphaned waiters
//!      (`# Removing permits`).
//!    * [`lease`]: what Redis outcomes carry (tokens, errors) and lease loss.
//!    * [`wake`]: the wake path, from a grant on any thread to its promise
//!      (`# Wake path`).
//!    * [`delivery`]: grants on shared semaphores held until JS confirms them
//!      (`# Delivery`).
//!    * [`abandon`]: sweeping the requests of garbage-collected private
//!      semaphores (`# Abandoned semaphores`).
//!    * [`registry`]: the process-wide `share()`/`attach()` registry and its
//!      pins (and a semaphore's `Drop`, which leaves it).
//!    * [`teardown`]: the env cleanup hook (`# Teardown`).
//!    * [`offloop`]: running the calls that take a Redis round trip off the JS
//!      thread, answered by a promise.
//! 6. The operations JS calls:
//!    * [`ops`]: the semaphore operations (create, acquire, tryAcquire,
//!      release, cancel, close) and the queries.
//!    * [`named`]: `Semaphore.open`/`unlink`, and the queries of named and
//!      Redis semaphores.
//!    * [`connect`]: `Semaphore.connect`, the Redis backend behind the same
//!      class, and its calls that take a round trip.
//!    * [`total`]: `setTotal` and `reopen`.
//!    * [`stats`]: `metrics` and `recordTimeout`, behind `sem.stats()`.
//!    * [`view`]: the state word seen from JS, for the uncontended paths that
//!      run in `index.js` without a Node-API call (`# The JS fast path`).
//! 7. Registration:
//!    * [`exports`]: module registration: the raw functions and `maxPermits`.

#[macro_use]
mod raw;

mod abandon;
mod codes;
mod connect;
mod debt;
mod delivery;
mod env;
mod exports;
mod handle;
mod inspect;
mod js_error;
mod lease;
mod named;
mod offloop;
mod ops;
mod registry;
mod remote;
mod removal;
mod semaphore;
mod stats;
mod teardown;
mod total;
mod view;
mod wake;
mod watch;

// The module's entry point, public as it was when it lived here (and so that
// test builds, where napi-derive registers nothing, keep it and all it uses).
pub use exports::init;
