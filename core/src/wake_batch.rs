//! Wakes collected under the queue lock and delivered after it is dropped.
//!
//! A release or close may complete many waiters. Running their wake-ups while
//! holding the lock would let arbitrary user code (a `Waker`, a C callback, a
//! binding's loop hand-off) run under it, so they are gathered here, at most
//! `CAPACITY` at a time with no allocation, and run by [`WakeBatch::wake_all`]
//! once the lock is released. When the batch fills up, the critical section
//! ends early, the batch is delivered, and a new critical section continues
//! (`Semaphore::hand_over`, `Semaphore::close`).

use core::ffi::c_void;
use core::ptr::{self, NonNull};
use core::task::Waker;

use crate::sync::Ordering;
use crate::waiter::{phase, Waiter, WakeFn};

const CAPACITY: usize = 32;

pub(crate) enum Wake {
    Waker(Waker),
    /// A callback waiter left in `NOTIFYING_*`; `final_phase` is stored into it once
    /// the callback has returned, and that store is the last access to it.
    Callback {
        waiter: NonNull<Waiter>,
        wake: WakeFn,
        ctx: *mut c_void,
        final_phase: u8,
    },
}

/// One running callback, linked to the one it is nested in (a callback that
/// releases permits runs further callbacks on the same thread, inside its own).
struct CallbackFrame {
    waiter: *const Waiter,
    outer: *const CallbackFrame,
}

type InCallback = core::cell::Cell<*const CallbackFrame>;

#[cfg(not(volt_loom))]
std::thread_local! {
    /// The innermost callback this thread is running, so that `finish_raw` called
    /// from inside a waiter's callback (or one nested in it) does not wait for it.
    static IN_CALLBACK: InCallback = const { InCallback::new(ptr::null()) };
}

#[cfg(volt_loom)]
loom::thread_local! {
    static IN_CALLBACK: InCallback = InCallback::new(ptr::null());
}

/// Whether the current thread is inside `waiter`'s wake callback, directly or
/// through callbacks nested in it.
pub(crate) fn in_own_callback(waiter: &Waiter) -> bool {
    IN_CALLBACK.with(|current| {
        let mut frame = current.get();
        while !frame.is_null() {
            // SAFETY: frames live on the stacks of `wake_all` calls that are still
            // running on this thread (each unlinks its frame before returning).
            let f = unsafe { &*frame };
            if ptr::eq(f.waiter, waiter) {
                return true;
            }
            frame = f.outer;
        }
        false
    })
}

pub(crate) struct WakeBatch {
    wakes: [Option<Wake>; CAPACITY],
    len: usize,
}

// SAFETY: a batch is filled inside a queue critical section, which may run on
// another thread (`batch-queue`) while its owner waits, and delivered by its
// owner. Its entries are `Waker`s (Send) and callback waiters, whose callbacks
// the waker contract allows to run on any thread.
unsafe impl Send for WakeBatch {}

impl WakeBatch {
    pub(crate) fn new() -> Self {
        WakeBatch {
            wakes: [const { None }; CAPACITY],
            len: 0,
        }
    }

    pub(crate) fn is_full(&self) -> bool {
        self.len == CAPACITY
    }

    pub(crate) fn push(&mut self, wake: Wake) {
        debug_assert!(!self.is_full());
        self.wakes[self.len] = Some(wake);
        self.len += 1;
    }

    /// Runs every collected wake, oldest waiter first. Must be called without the
    /// queue lock held.
    pub(crate) fn wake_all(&mut self) {
        let mut i = 0;
        while i < self.len {
            let wake = self.wakes[i].take();
            i += 1;
            match wake {
                Some(Wake::Waker(waker)) => waker.wake(),
                Some(Wake::Callback {
                    waiter,
                    wake,
                    ctx,
                    final_phase,
                }) => {
                    let frame = CallbackFrame {
                        waiter: waiter.as_ptr(),
                        outer: IN_CALLBACK.with(|c| c.get()),
                    };
                    let outer = IN_CALLBACK.with(|current| current.replace(&frame));
                    // SAFETY: `wake`/`ctx` were registered through `acquire_raw`, whose
                    // contract makes them callable once, from any thread, until the
                    // waiter leaves the NOTIFYING phase (which happens just below).
                    unsafe { wake(ctx) };
                    IN_CALLBACK.with(|current| current.set(outer));
                    // SAFETY: a waiter in a NOTIFYING phase cannot be freed: its owner's
                    // `finish_raw` spins until this store. The callback may have consumed
                    // the outcome from inside (phase NOTIFYING_CONSUMED), then it
                    // becomes IDLE. Only this thread and the callback (on this thread)
                    // write the phase during NOTIFYING, so load-then-store is race-free.
                    // Release publishes everything the callback did to the owner.
                    unsafe {
                        let phase = &waiter.as_ref().phase;
                        let next = if phase.load(Ordering::Relaxed) == phase::NOTIFYING_CONSUMED {
                            phase::IDLE
                        } else {
                            final_phase
                        };
                        phase.store(next, Ordering::Release);
                    }
                }
                None => {}
            }
        }
        self.len = 0;
    }
}

impl Drop for WakeBatch {
    /// If a `Waker` panicked in `wake_all`, still deliver the remaining wakes: a
    /// callback waiter left in NOTIFYING would make its owner wait for ever.
    fn drop(&mut self) {
        self.wake_all();
    }
}
