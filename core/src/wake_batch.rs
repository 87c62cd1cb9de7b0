//! Wakes collected under the queue lock and delivered after it is dropped.
//!
//! A release or close may complete many waiters. Running their wake-ups while
//! holding the lock would let arbitrary user code (a `Waker`, a C callback, a
//! binding's loop hand-off) run under it, so they are gathered here, at most
//! `CAPACITY` at a time with no allocation, and run by [`WakeBatch::wake_all`]
//! once the lock is released. When the batch fills up, the caller drops the lock,
//! wakes the batch and re-takes the lock.

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

type InCallback = core::cell::Cell<*const Waiter>;

#[cfg(not(volt_loom))]
std::thread_local! {
    /// The callback waiter whose callback this thread is running right now, so that
    /// `finish_raw` called from inside that very callback does not wait for itself.
    static IN_CALLBACK: InCallback = const { InCallback::new(ptr::null()) };
}

#[cfg(volt_loom)]
loom::thread_local! {
    static IN_CALLBACK: InCallback = InCallback::new(ptr::null());
}

/// Whether the current thread is inside `waiter`'s own wake callback.
pub(crate) fn in_own_callback(waiter: &Waiter) -> bool {
    IN_CALLBACK.with(|current| ptr::eq(current.get(), waiter))
}

pub(crate) struct WakeBatch {
    wakes: [Option<Wake>; CAPACITY],
    len: usize,
}

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
                    let outer = IN_CALLBACK.with(|current| current.replace(waiter.as_ptr()));
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
