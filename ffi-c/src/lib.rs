//! C ABI for volt-sem.
//!
//! The header `include/volt_sem.h` is generated from this crate by cbindgen (see
//! `cbindgen.toml`, whose header text holds the full contract: ownership,
//! threads, wake callbacks and the waiter lifetime rule). Regenerate it with
//! `VOLT_SEM_BLESS=1 cargo test -p volt-sem-ffi --test header`.
//!
//! Design, in the style of rustls-ffi:
//!
//! * `volt_sem` is an opaque `Arc`: `volt_sem_new` hands out one reference,
//!   `volt_sem_clone` adds one, `volt_sem_free` drops one.
//! * `volt_waiter` is caller-allocated, sized and aligned in the header, and holds
//!   a `volt_sem_backend::Waiter` plus the bookkeeping that makes misuse detectable: a magic
//!   word set by `volt_waiter_init`, the user's callback, a `claim` word
//!   that lets `volt_sem_try_cancel` and the callback exclude each other, and
//!   one strong reference to the semaphore it is queued on, so that freeing
//!   every handle while a waiter is queued cannot free the queue under it
//!   (held exactly while the waiter is busy: from PENDING until the owner's
//!   `volt_sem_cancel` returned).
//! * `volt_waiter_init` only writes: the memory it is given is usually fresh
//!   (stack or heap), and reading it first would read uninitialised memory.
//! * The core tells whether this thread is inside a waiter's callback
//!   (callbacks never nest: the core delivers them from a per-thread loop), so
//!   `volt_sem_cancel` can tell a call from inside (collects the outcome, the
//!   waiter stays busy) from the owner's final call (which waits for the
//!   callback and frees the waiter).
//! * Every entry point runs through one panic boundary (`boundary.rs`), which
//!   catches panics and returns `VOLT_PANIC` or a documented default; the
//!   handle checks (NULL, a Redis handle used after `fork()`) are written
//!   there once; every pointer is checked for NULL.
//! * The semaphore behind a handle is a [`volt_sem_backend::Semaphore`]: the
//!   in-process one (`volt_sem_new`), the named one shared by the processes
//!   of the machine (`volt_sem_open`), or the one stored in Redis and shared
//!   by every host (`volt_sem_connect`). Every function works on all three
//!   through that one type; the waiter holds a backend waiter, which queues on
//!   any. The shared and Redis semaphores' errors get their own statuses
//!   (`VOLT_NOT_FOUND`, `VOLT_MISMATCH`, `VOLT_LEASE_EXPIRED`, ...), numbered
//!   in one place, the backend's error table (`status_codes.rs` is generated
//!   from it). They are new values after the existing ones
//!   (never renumbered), and only handles made by the new constructors return
//!   them, so a program that only calls `volt_sem_new` sees no new value.
//! * Redis extras: options in an extensible struct (`struct_size` first, 0
//!   meaning "default" for every field, unknown trailing bytes accepted only
//!   when zero); fencing tokens as out-parameters of `_fenced` variants and
//!   waiter getters, so the existing signatures stay; lease-loss callbacks
//!   through `lease.rs` (the Redis crate wakes its futures under a lock, so the
//!   C callback runs on a notifier thread instead).

#![allow(non_camel_case_types)]

// One file per C object. cbindgen writes the header in the order it reads
// them: this file's items, then each module in the order declared here (one
// declaration per comment, so that rustfmt keeps the order).

// The panic boundary and the shared argument checks (no C items).
mod boundary;
// The last error message of each thread (no C items).
mod last_error;
// `volt_status`, `volt_status_str`, `volt_last_error_message`.
mod status;
// The `volt_status` enum, generated from the backend's error table (`tests/status.rs`).
mod status_codes;
// `volt_sem`: the handle and the operations of every backend.
mod semaphore;
// `volt_sem_open`: named semaphores shared by the processes of the machine.
mod shared;
// `volt_sem_connect`: semaphores stored in Redis.
mod redis;
// `volt_waiter`: the non-blocking acquire, its callback and its end.
mod waiter;
// `volt_sem_acquire_blocking`.
mod blocking;
// `volt_grant`: fencing tokens, the `_fenced` acquires.
mod grant;
// `volt_sem_inspect`: who holds and who waits, on every backend.
mod inspect;
// `volt_sem_stats`: this handle's counters, gauges and wait histogram.
mod stats;
mod total;
// `volt_sem_disconnect`.
mod session;
// `volt_lease_watch`: lease-loss callbacks.
mod lease;
// The version macros and `volt_sem_version`.
mod version;

pub use blocking::*;
pub use grant::*;
pub use inspect::*;
pub use lease::*;
pub use redis::*;
pub use semaphore::*;
pub use shared::*;
pub use stats::*;
pub use status::{volt_last_error_message, volt_status, volt_status_str};
pub use total::*;
pub use version::*;
pub use waiter::*;

#[cfg(test)]
mod tests;
