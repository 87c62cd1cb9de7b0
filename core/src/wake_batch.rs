//! Wakes collected under the queue lock and delivered after it is dropped.
//!
//! A release or close may complete many waiters. Running their wake-ups while
//! holding the lock would let arbitrary user code (a `Waker`, a C callback, a
//! binding's loop hand-off) run under it, so they are gathered here, at most
//! `CAPACITY` at a time with no allocation, and run by [`WakeBatch::wake_all`]
//! once the lock is released. When the batch fills up, the critical section
//! ends early, the batch is delivered, and a new critical section continues
//! (`Semaphore::hand_over`, `Semaphore::close`).
//!
//! `Waker`s are woken at once. Callback waiters go through this thread's
//! trampoline ([`crate::raw::delivery`]), which never nests one callback inside
//! another.
//!
//! # Panics
//!
//! A `Waker` is user code and may panic. The permits of a hand-off in progress
//! are then in transit (taken from the releaser, not yet given to a waiter or
//! the counter), so a panic must not cut the hand-off short: `wake_all` catches
//! it, keeps delivering, and leaves the first payload in a [`Rethrow`] that the
//! operation re-raises once every permit has reached its place.

use core::mem::MaybeUninit;
use core::ptr::NonNull;
use core::task::Waker;
use std::any::Any;
use std::panic::{self, AssertUnwindSafe};

use crate::raw::delivery;
use crate::waiter::Waiter;

/// Entries per batch. Small under loom so that the models reach the paths taken
/// when a release or close needs more than one batch.
#[cfg(not(volt_loom))]
pub(crate) const CAPACITY: usize = 32;
#[cfg(volt_loom)]
pub(crate) const CAPACITY: usize = 2;

pub(crate) enum Wake {
    Waker(Waker),
    /// A thread blocked in a blocking acquire, already given its final phase.
    Thread(crate::sync::thread::Thread),
    /// A callback waiter left in `NOTIFYING_*`, its `Notify::Callback` still in
    /// place; the trampoline calls it and stores the final phase.
    Callback(NonNull<Waiter>),
}

/// The first panic raised by a `Waker` during an operation, re-raised when the
/// operation has finished moving its permits.
#[derive(Default)]
pub(crate) struct Rethrow(Option<Box<dyn Any + Send>>);

impl Rethrow {
    pub(crate) fn new() -> Self {
        Rethrow(None)
    }

    /// Re-raises the panic caught, if any.
    pub(crate) fn finish(self) {
        if let Some(payload) = self.0 {
            panic::resume_unwind(payload);
        }
    }
}

/// Entries `done..len` of `wakes` are initialised and not yet delivered.
///
/// The slots are `MaybeUninit` rather than `Option` because a batch is built
/// and dropped on every release that serves a waiter: an `Option` array costs
/// a 32-entry fill at creation and a 32-entry drop-glue scan at the end, which
/// measured as more than a third of such a release's instructions.
pub(crate) struct WakeBatch {
    wakes: [MaybeUninit<Wake>; CAPACITY],
    /// Entries pushed.
    len: usize,
    /// Entries already taken out for delivery (`done <= len`), so that a
    /// delivery cut short by a panic resumes, from `Drop`, after the last one
    /// taken and never reads an entry twice.
    done: usize,
    /// Entries whose callback waiter is already in this thread's deliveries
    /// (`done <= ... <= len` once `wake_all` started), so that none is pushed
    /// twice.
    pushed: usize,
}

impl WakeBatch {
    pub(crate) fn new() -> Self {
        WakeBatch {
            wakes: [const { MaybeUninit::uninit() }; CAPACITY],
            len: 0,
            done: 0,
            pushed: 0,
        }
    }

    pub(crate) fn is_full(&self) -> bool {
        self.len == CAPACITY
    }

    pub(crate) fn push(&mut self, wake: Wake) {
        debug_assert!(!self.is_full());
        self.wakes[self.len].write(wake);
        self.len += 1;
    }

    /// Delivers every collected wake: `Waker`s now, callbacks through this
    /// thread's trampoline (now if no delivery is running below on the stack,
    /// else right after the callback that is running returns). A `Waker`'s panic
    /// is caught and kept in `rethrow`. Must be called without the queue lock.
    #[inline]
    pub(crate) fn wake_all(&mut self, rethrow: &mut Rethrow) {
        // Inline: a batch with nothing to deliver (a release whose waiters
        // were all claimed, `Semaphore::release_claiming`; the second call,
        // from `Drop`) costs a compare, not a call.
        if self.done != self.len {
            self.deliver(rethrow);
        }
    }

    fn deliver(&mut self, rethrow: &mut Rethrow) {
        let drainer = delivery::enter();
        // Every callback waiter into this thread's deliveries first: a `Waker`
        // woken below may finish one of them (a sibling completed by the same
        // operation), which takes it out of the deliveries (`take_pending`)
        // instead of waiting for a callback still to run on this thread.
        for i in self.pushed.max(self.done)..self.len {
            // SAFETY: `i` is in `done..len`: initialised, not yet taken.
            if let Wake::Callback(waiter) = unsafe { self.wakes[i].assume_init_ref() } {
                // SAFETY: the notifier (this thread) just unlinked it and left
                // it NOTIFYING with its callback in place; pushed once
                // (`pushed`).
                unsafe { delivery::push(NonNull::from(&waiter.as_ref().node)) };
            }
        }
        self.pushed = self.len;
        while self.done < self.len {
            let i = self.done;
            self.done += 1;
            // SAFETY: `i` is in `done..len` (initialised, not yet taken), and
            // `done` moved past it before the read, so it is read only once.
            let wake = unsafe { self.wakes[i].assume_init_read() };
            match wake {
                Wake::Waker(waker) => wake_waker(waker, rethrow),
                // Cannot unwind (std's and loom's `unpark` do not panic).
                Wake::Thread(thread) => thread.unpark(),
                // In the deliveries already (above).
                Wake::Callback(_) => {}
            }
        }
        self.len = 0;
        self.done = 0;
        self.pushed = 0;
        if drainer {
            delivery::drain();
        }
    }
}

/// A `Waker` is user code, and may re-enter the semaphore: drop the future it
/// wakes (handing its grant on), or poll it inline and release. The wakes
/// such a nested operation collects are not run inside the running `Waker`
/// but queued here and run by the `wake_all` below on the stack, after it
/// returned, oldest first: as callbacks never nest (the trampoline), a chain
/// of any length of wakers that each release to the next uses bounded stack.
/// The queue allocates only for such nested wakes.
#[cfg(not(volt_loom))]
struct Nested {
    /// A `wake_all` of this thread is running a `Waker` now.
    waking: bool,
    deferred: std::collections::VecDeque<Waker>,
}

#[cfg(not(volt_loom))]
std::thread_local! {
    static NESTED: core::cell::RefCell<Nested> = const {
        core::cell::RefCell::new(Nested { waking: false, deferred: std::collections::VecDeque::new() })
    };
}

/// Wakes `waker` (see [`Nested`]), keeping a panic in `rethrow`.
fn wake_waker(waker: Waker, rethrow: &mut Rethrow) {
    #[cfg(not(volt_loom))]
    {
        let mut waker = Some(waker);
        // During thread-local destruction there is no queue: wake at once.
        let _ = NESTED.try_with(|n| {
            let mut n = n.borrow_mut();
            if n.waking {
                n.deferred.extend(waker.take());
            } else {
                n.waking = true;
            }
        });
        let Some(first) = waker else { return };
        let mut next = Some(first);
        while let Some(waker) = next {
            wake_one(waker, rethrow);
            next = NESTED
                .try_with(|n| {
                    let mut n = n.borrow_mut();
                    let next = n.deferred.pop_front();
                    n.waking = next.is_some();
                    next
                })
                .ok()
                .flatten();
        }
    }
    #[cfg(volt_loom)]
    wake_one(waker, rethrow);
}

fn wake_one(waker: Waker, rethrow: &mut Rethrow) {
    if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(|| waker.wake())) {
        // Keep the first; a later payload is dropped (its own drop
        // cannot be allowed to unwind here either).
        if rethrow.0.is_none() {
            rethrow.0 = Some(payload);
        } else {
            let _ = panic::catch_unwind(AssertUnwindSafe(|| drop(payload)));
        }
    }
}

impl Drop for WakeBatch {
    /// Never leaves a callback waiter undelivered (its owner would wait for
    /// ever), should a panic inside the crate skip a `wake_all`.
    fn drop(&mut self) {
        let mut ignored = Rethrow::new();
        self.wake_all(&mut ignored);
        core::mem::forget(ignored);
    }
}
