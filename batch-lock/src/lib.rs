//! The combining lock of the batched-critical-sections experiment (seed 002),
//! kept out of `volt-sem` because it lost.
//!
//! # The pattern
//!
//! Seed 002 proposed *batched critical sections*: threads do not take turns
//! holding a lock, they submit an operation (an intrusive node owned by the
//! caller, no allocation). The submitter that finds the queue empty becomes the
//! consumer and runs every queued operation, its own first, in FIFO order,
//! until the queue is empty; the other submitters are woken after their
//! operation ran, outside the critical section. Submit is wait-free: one swap
//! on the tail and at most one on the predecessor's link, with a sentinel that
//! hands the consumer role to a submitter the consumer could not see yet
//! instead of spinning for it. [`BatchLock::run`] blocks (spins briefly, then
//! parks), [`BatchLock::run_async`] returns a future ([`RunAsync`]). The
//! algorithm and its progress argument are in the `batch_lock` module's source.
//!
//! ```
//! use std::sync::Arc;
//! use volt_sem_batch_lock::BatchLock;
//!
//! let log = Arc::new(BatchLock::new(Vec::new()));
//! let threads: Vec<_> = (0..2)
//!     .map(|t| {
//!         let log = log.clone();
//!         // Whichever thread finds the queue empty runs both pushes.
//!         std::thread::spawn(move || log.run(move |v: &mut Vec<u32>| v.push(t)))
//!     })
//!     .collect();
//! threads.into_iter().for_each(|t| t.join().unwrap());
//! assert_eq!(log.run(|v| v.len()), 2);
//! ```
//!
//! # What was measured
//!
//! `docs/benchmarks.md`, appendix B, on a 2-core VM (`make bench-batch` reruns
//! the lock comparison):
//!
//! * Against `std::sync::Mutex` and `parking_lot::Mutex`, 2 and 4 threads, a
//!   short and a longer critical section: 3.5-5x slower than parking_lot and
//!   level with std's mutex on the longer section; its fairness spread was the
//!   lowest in two of four cases only. The goal was parking_lot's throughput
//!   with a 5x smaller spread. Each operation moves at least three cache lines
//!   between cores (tail, predecessor's link, completion flag), where a barging
//!   lock runs many sections on one core with the lock's line in its cache.
//! * As the semaphore's wait-queue lock (the former `batch-queue` feature of
//!   `volt-sem`): 2-6% slower where acquires rarely queue and 34-47% slower on
//!   the hand-off-heavy workloads, where every release and enqueue is an
//!   operation another thread may have to run and signal.
//!
//! # Why it is not in the core
//!
//! The semaphore keeps its mutex, so the core has no use for the lock, and
//! keeping the variant there cost every critical section of the semaphore a
//! closure seam, a `Send` bound and an `unsafe` `Send` wrapper for the waiter
//! reference, only so the closure could run on another thread. This crate
//! keeps the lock, its tests, its loom models (`make test-loom`) and its
//! benchmark (core/benches/batch_lock.rs, with the other criterion
//! benchmarks) so the experiment stays reproducible; it is not published.

mod batch_lock;
mod sync;

pub use batch_lock::{BatchLock, RunAsync};
