//! Per-thread delivery of wake callbacks: a trampoline that keeps stack use
//! bounded however long a chain of re-entrant releases gets.
//!
//! # Why
//!
//! A wake callback may call back into the semaphore (waker contract, rule 2).
//! If a callback's own `release` ran the callbacks it completes right there,
//! nested inside the running one, a chain of N waiters whose callbacks each
//! collect their grant and release it again would recurse N deep on the
//! releasing thread: about a kilobyte of stack per level, so a few hundred
//! levels overflow a small thread stack (musl's default is 128 KiB).
//!
//! # How
//!
//! Every thread has one FIFO of *pending* callback waiters, linked through the
//! waiters' own `links` (free once a notifier has unlinked a waiter from its
//! semaphore's queue, so this allocates nothing). [`WakeBatch::wake_all`]
//! (crate::wake_batch) appends the batch's callback waiters to it; the first
//! `wake_all` on the stack (the *drainer*) then runs them one at a time, oldest
//! first. A `wake_all` reached from inside a callback (or a `Waker` the drainer
//! runs) only appends: its waiters run after the current callback returned, from
//! the drainer's loop. So callbacks never nest, the stack holds at most one
//! callback frame, and waiters are woken in the order they were granted.
//!
//! # What a thread knows
//!
//! * `current`: the waiter whose callback runs now (at most one, since callbacks
//!   never nest). `finish_raw` called from inside it collects the outcome at once.
//! * `pending`: waiters granted or closed but not yet called back. Their phase is
//!   `NOTIFYING_*`, and their owners' `finish_raw` on other threads waits for the
//!   callback. `finish_raw` on this very thread (a callback finishing a *sibling*
//!   completed by the same release) cannot wait, since the callback would run only
//!   after it returns: [`take_pending`] unlinks the sibling instead, so its
//!   callback never runs and the outcome goes to the caller.
//!
//! # Ownership
//!
//! A waiter in a `NOTIFYING_*` phase belongs to the thread that notified it: it
//! is no longer in any semaphore queue, its owner may only read its phase, and
//! `acquire_raw` refuses it (busy). So this thread may use its `links` and
//! `notify` fields without the queue lock, until the store of the final phase,
//! which is its last access.

use core::cell::RefCell;
use core::ptr::{self, NonNull};

use crate::sync::Ordering;
use crate::wait_list::WaitList;
use crate::waiter::{phase, Notify, Waiter};

struct Delivery {
    /// A `wake_all` below us on this thread's stack is delivering `pending`.
    draining: bool,
    /// The waiter whose callback is running now, or null.
    current: *const Waiter,
    pending: WaitList,
}

#[cfg(not(volt_loom))]
std::thread_local! {
    // `const` and without `Drop`: usable even while the thread's other
    // thread-locals are being destroyed (a release in a TLS destructor).
    static DELIVERY: RefCell<Delivery> = const {
        RefCell::new(Delivery { draining: false, current: ptr::null(), pending: WaitList::new() })
    };
}

#[cfg(volt_loom)]
loom::thread_local! {
    static DELIVERY: RefCell<Delivery> =
        RefCell::new(Delivery { draining: false, current: ptr::null(), pending: WaitList::new() });
}

/// Whether this thread is running `waiter`'s wake callback now.
pub(crate) fn in_own_callback(waiter: &Waiter) -> bool {
    DELIVERY.with(|d| ptr::eq(d.borrow().current, waiter))
}

/// Appends a notified callback waiter to this thread's pending deliveries.
///
/// # Safety
/// `waiter` was just unlinked by this thread (under the queue lock, now
/// released) and left in a `NOTIFYING_*` phase with a `Notify::Callback`.
pub(crate) unsafe fn defer(waiter: NonNull<Waiter>) {
    // SAFETY: a NOTIFYING waiter is owned by its notifier (module docs), is
    // valid until its final phase is stored, and is in no other list.
    DELIVERY.with(|d| unsafe { d.borrow_mut().pending.push_back(waiter) });
}

/// Becomes this thread's drainer, unless one is already below on the stack.
/// Returns whether the caller must call [`drain`].
pub(crate) fn enter() -> bool {
    DELIVERY.with(|d| {
        let mut d = d.borrow_mut();
        !core::mem::replace(&mut d.draining, true)
    })
}

/// Runs every pending callback, oldest first, including those that the callbacks
/// themselves add, then stops being the drainer.
pub(crate) fn drain() {
    loop {
        let next = DELIVERY.with(|d| d.borrow_mut().pending.pop_front());
        let Some(waiter) = next else { break };
        // SAFETY: pending waiters are NOTIFYING, owned by this thread and valid
        // until the final phase store below (module docs).
        let w = unsafe { waiter.as_ref() };
        // SAFETY: owned by this thread (see above); nobody else touches `notify`.
        let notify = w
            .notify
            .with_mut(|n| unsafe { core::mem::replace(&mut *n, Notify::None) });
        let Notify::Callback(wake, ctx) = notify else {
            unreachable!("only callback waiters are deferred")
        };
        let final_phase = match w.phase.load(Ordering::Relaxed) {
            phase::NOTIFYING_GRANTED => phase::GRANTED,
            _ => phase::CLOSED,
        };
        DELIVERY.with(|d| d.borrow_mut().current = waiter.as_ptr());
        // SAFETY: `wake`/`ctx` were registered through `acquire_raw`, whose
        // contract makes them callable once, from any thread, until the waiter
        // leaves the NOTIFYING phase (just below). Being `extern "C"`, a
        // callback cannot unwind into this loop (an unwind aborts).
        unsafe { wake(ctx) };
        DELIVERY.with(|d| d.borrow_mut().current = ptr::null());
        // The callback may have consumed the outcome itself (NOTIFYING_CONSUMED):
        // then the waiter becomes IDLE. Only this thread writes the phase while it
        // is NOTIFYING, so load-then-store is race-free. Release publishes
        // everything the callback did to the owner, whose `finish_raw` is
        // spinning on this store; it is the last access to the waiter.
        let next = if w.phase.load(Ordering::Relaxed) == phase::NOTIFYING_CONSUMED {
            phase::IDLE
        } else {
            final_phase
        };
        w.phase.store(next, Ordering::Release);
    }
    DELIVERY.with(|d| d.borrow_mut().draining = false);
}

/// Whether `waiter` is waiting in this thread's pending deliveries (its callback
/// is still to run here, after the one running now).
pub(crate) fn is_pending_here(waiter: &Waiter) -> bool {
    DELIVERY.with(|d| {
        let d = d.borrow();
        d.draining && d.pending.contains(waiter)
    })
}

/// If `waiter` is waiting in this thread's pending deliveries, unlinks it so that
/// its callback never runs, and returns `true`: the caller then owns its outcome.
pub(crate) fn take_pending(waiter: &Waiter) -> bool {
    DELIVERY.with(|d| {
        let mut d = d.borrow_mut();
        if !d.draining || !d.pending.contains(waiter) {
            return false;
        }
        let waiter = NonNull::from(waiter);
        // SAFETY: linked in this list (checked just above); owned by this thread.
        unsafe {
            d.pending.remove(waiter);
            waiter.as_ref().notify.with_mut(|n| *n = Notify::None);
        }
        true
    })
}
