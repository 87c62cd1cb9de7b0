//! What a semaphore means in a child created by `fork()`.
//!
//! `fork()` copies the whole address space but only the calling thread. A
//! semaphore's queue in the child therefore still links the waiters of threads
//! (and event loops) that exist only in the parent: nobody would ever finish
//! them, the permits handed to them would be gone, and a release in the child
//! would feed a ghost. The rule, applied in the child only:
//!
//! * Every request that was queued at the moment of the fork is **closed for
//!   the child**: it leaves the queue without being woken (its callback or
//!   `Waker` belongs to the parent's threads: calling or dropping it could take
//!   locks that no thread of the child will ever release), its phase becomes
//!   `Closed` (a future polled in the child resolves with `AcquireError::Closed`,
//!   `finish_raw` returns `Finish::Closed`), and the permits granted to it so
//!   far go back to the counter.
//! * Permits *held* at the fork stay held: the child has a copy of whatever
//!   holds them (a guard, a counter in the caller's data) and may release them.
//! * A request whose outcome was decided before the fork but whose wake
//!   callback had not returned (it was running, or still to run, on another
//!   thread of the parent, which the child does not have) is never called
//!   back in the child either: `finish_raw` there returns the outcome at once
//!   (`Granted`: the permits are held, as any permit held at the fork;
//!   `Closed`; `Idle` if the callback had consumed it from inside) instead of
//!   waiting for ever for a callback that no thread will finish. Not when the
//!   fork was made from inside a wake callback: that thread's deliveries go
//!   on in the child, so its `finish_raw` waits for them as usual (and those
//!   of the parent's other threads, which never come, as before).
//! * The semaphore itself stays open and usable in the child. A semaphore the
//!   parent closed stays closed.
//!
//! Nothing is shared with the parent afterwards: the child's copy is a separate
//! semaphore. (A semaphore shared *across* processes is a different object,
//! built on shared memory; this one lives in one process's memory.)
//!
//! # How
//!
//! A process-wide generation number is bumped by a `pthread_atfork` child
//! handler, registered the first time any waiter is queued (before that there
//! is nothing to clean). The wait list remembers the generation it was filled
//! in; every critical section first compares the two and, on a mismatch,
//! empties the list as above (`Semaphore::purge_forked`). The lock-free paths
//! see the `QUEUED` bit the parent left: `release` then takes the lock anyway,
//! and a `try_acquire` that fails while `QUEUED` is set, or an
//! `available_permits` that sees it, takes the lock to clean up before giving
//! its answer, in children only. A waiter also remembers the generation it was
//! queued in (`Waiter::queued_before_fork`), so that the C ABI's
//! `volt_waiter_status` reports such a request closed without the semaphore.
//!
//! # The one window this cannot cover
//!
//! If another thread was *inside* one of the semaphore's critical sections (a
//! few pointer writes under its queue lock) at the instant of the fork, the
//! child inherits that lock held by a thread it does not have, as with any
//! mutex. POSIX allows a child of a multi-threaded process only
//! async-signal-safe calls until it calls `exec`; volt-sem does better in
//! every case but this one, where the child's first slow-path operation on that
//! semaphore blocks.

#[cfg(all(unix, not(volt_loom), not(miri)))]
mod imp {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Once;

    static GENERATION: AtomicUsize = AtomicUsize::new(0);
    /// Whether the thread that made the last `fork()` was delivering wake
    /// callbacks at the time (it forked from inside one): its deliveries then
    /// go on in the child, on that same thread.
    static FORKED_IN_DELIVERY: AtomicBool = AtomicBool::new(false);
    static REGISTER: Once = Once::new();

    extern "C" {
        fn pthread_atfork(
            prepare: Option<unsafe extern "C" fn()>,
            parent: Option<unsafe extern "C" fn()>,
            child: Option<unsafe extern "C" fn()>,
        ) -> core::ffi::c_int;
    }

    /// Runs in the parent, on the forking thread, just before the fork (the
    /// C library runs the prepare handlers and the fork as one step with
    /// respect to other forks): records whether that thread is delivering
    /// callbacks, for the child's copy of the flag. A thread-local read and
    /// an atomic store, in an ordinary (not a signal-handler) context.
    unsafe extern "C" fn before_fork() {
        FORKED_IN_DELIVERY.store(crate::raw::delivery::draining_here(), Ordering::Relaxed);
    }

    /// Runs in the child, in its only thread, before `fork()` returns there.
    /// Async-signal-safe: one atomic add.
    unsafe extern "C" fn in_child() {
        GENERATION.fetch_add(1, Ordering::Relaxed);
    }

    /// In a forked child: whether the fork was made from inside a wake
    /// callback (see `FORKED_IN_DELIVERY`).
    pub(crate) fn forked_in_delivery() -> bool {
        FORKED_IN_DELIVERY.load(Ordering::Relaxed)
    }

    pub(crate) fn generation() -> usize {
        // Relaxed: only the child's single thread writes it, before any other
        // thread of the child exists; later threads are spawned after it.
        GENERATION.load(Ordering::Relaxed)
    }

    /// Whether this process is (a descendant of) a forked child of a process
    /// that had queued waiters.
    pub(crate) fn in_forked_child() -> bool {
        generation() != 0
    }

    pub(crate) fn watch() {
        REGISTER.call_once(|| {
            // SAFETY: registers handlers that only read a thread-local and
            // store or bump an atomic. A failure (ENOMEM) leaves fork
            // behaviour as it was before this module: nothing becomes unsafe,
            // the ghosts just stay.
            let _ = unsafe { pthread_atfork(Some(before_fork), None, Some(in_child)) };
        });
    }
}

/// No `fork()` here (or not modelled): the generation never changes.
#[cfg(not(all(unix, not(volt_loom), not(miri))))]
mod imp {
    pub(crate) fn generation() -> usize {
        0
    }
    pub(crate) fn in_forked_child() -> bool {
        false
    }
    pub(crate) fn forked_in_delivery() -> bool {
        false
    }
    pub(crate) fn watch() {}
}

pub(crate) use imp::{forked_in_delivery, generation, in_forked_child, watch};
