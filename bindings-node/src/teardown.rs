//! Environment teardown.
//!
//! # Teardown
//!
//! An environment cleanup hook (a terminated worker, or the process exiting)
//! detaches the threadsafe function and finishes every node still in the map:
//! a queued waiter is cancelled (its partial grant handed on, or orphaned while
//! a removal is owed), a grant that arrived but was never delivered to JS, or
//! was delivered and not confirmed, is released.

use std::ffi::c_void;
use std::sync::atomic::Ordering;

use napi::sys;
use volt_sem_backend::Finish;

use crate::env::{Enter, EnvCtx, Slot, SlotState};
use crate::raw::lock;
use crate::removal::{orphan, release_paying};

pub(crate) unsafe extern "C" fn env_cleanup(arg: *mut c_void) {
    // SAFETY: `arg` is the boxed EnvCtx leaked by module init; this hook runs once,
    // after the environment stopped running JS, so nothing else references it.
    let ctx = unsafe { Box::from_raw(arg as *mut EnvCtx) };
    let tsfn = lock(&ctx.shared.tsfn).take();
    if let Some(t) = tsfn {
        // SAFETY: the tsfn was alive (its finalizer would have cleared the slot).
        unsafe {
            sys::napi_release_threadsafe_function(t.0, sys::ThreadsafeFunctionReleaseMode::abort)
        };
    }
    let _enter = Enter::new(&ctx);
    let mut slots = std::mem::take(&mut *ctx.slots.borrow_mut());
    // A panic must not unwind into Node; if one happened half-way, the nodes may
    // still be queued: leak them rather than free memory a semaphore points to.
    let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        give_back_all(&ctx, &mut slots)
    }));
    if done.is_err() {
        std::mem::forget(slots);
    } else {
        drop(slots);
    }
    ctx.local.borrow_mut().clear();
    drop(_enter);
}

/// Env teardown: cancels queued requests and gives back grants nobody saw.
pub(crate) fn give_back_all(ctx: &EnvCtx, slots: &mut [Slot]) {
    for s in slots.iter_mut() {
        if s.state == SlotState::Active {
            let sem = s.node.sem.borrow().clone();
            if let Some(sem) = sem {
                if sem.debt.load(Ordering::SeqCst) > 0
                    && s.node.waiter.state() == volt_sem::WaiterState::Waiting
                {
                    // As in `cancel_slot`: do not hand a partial grant on past
                    // a pending `removePermits` debt.
                    sem.queued.fetch_sub(1, Ordering::Relaxed);
                    s.node.sem.borrow_mut().take();
                    s.state = SlotState::Free;
                    let old = std::mem::replace(&mut s.node, ctx.new_node());
                    orphan(old, &sem);
                    continue;
                }
            }
        }
        let give_back = match s.state {
            SlotState::Free => false,
            SlotState::Active => {
                if let Some(sem) = &*s.node.sem.borrow() {
                    sem.queued.fetch_sub(1, Ordering::Relaxed);
                }
                matches!(s.node.as_ref().finish(), Finish::Granted)
            }
            // Reported to JS, but the code awaiting it never ran.
            SlotState::Delivered => {
                if let Some(sem) = &*s.node.sem.borrow() {
                    sem.sub_held(s.node.n.get());
                }
                true
            }
        };
        if give_back {
            // A grant nobody will see: give it back (wakes the next waiters).
            if let Some(sem) = &*s.node.sem.borrow() {
                let _ = release_paying(sem, s.node.n.get());
            }
        }
    }
}
