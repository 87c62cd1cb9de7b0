//! Abandoned-semaphore collection.
//!
//! # Abandoned semaphores
//!
//! A private semaphore (never shared) has exactly one JS object; when it is
//! garbage-collected (a `FinalizationRegistry` calls `abandon`), nobody can
//! release or close it, so its pending requests are swept in batches.

use std::pin::Pin;
use std::sync::atomic::Ordering;

use napi::sys;
use volt_sem_backend::Finish;

use crate::codes::BAD_ARGS;
use crate::env::{Enter, EnvCtx};
use crate::handle::sem;
use crate::raw::{args, int, throw_internal};
use crate::raw::{RawEnv, RawValue};
use crate::semaphore::Node;

impl EnvCtx {
    /// Cancels every pending request of this environment on an abandoned
    /// semaphore (nobody can release or close it any more). Returns the
    /// outcomes written (requests of other semaphores are never completed by
    /// this, but `settle_local` also flushes leftovers).
    pub(crate) fn sweep_abandoned(&self) -> usize {
        self.zombies.set(0);
        let doomed: Vec<u32> = {
            let slots = self.slots.borrow();
            self.active_list
                .borrow()
                .iter()
                .copied()
                .filter(|&a| {
                    let sem = slots[a as usize].node.sem.borrow();
                    sem.as_ref()
                        .is_some_and(|s| s.abandoned.load(Ordering::Relaxed))
                })
                .collect()
        };
        let enter = Enter::new(self);
        for slot in doomed {
            let node: *const Node = {
                let slots = self.slots.borrow();
                &*slots[slot as usize].node
            };
            // SAFETY: slots never shrink while the env lives, and nodes are boxed.
            let node = unsafe { Pin::new_unchecked(&*node) };
            if let Finish::Granted = node.finish() {
                // Completed by a partial grant handed on in this sweep: the
                // permits go back to the (unreachable) semaphore.
                if let Some(sem) = &*node.sem.borrow() {
                    let _ = sem.core.release(node.n.get());
                }
            }
            self.release_slot(slot);
        }
        let k = self.settle_local();
        drop(enter);
        k
    }
}

// abandon(h): k >= 0 outcomes written. The JS object of a semaphore was
// garbage-collected. A private semaphore had only that object, so nobody can
// release or close it any more: its pending requests are swept (cancelled and
// their slots freed), in batches once they are at least half of the pending
// requests of this environment, so sweeping costs O(1) per request.
native!(js_abandon, |env, ctx, argv: [1]| {
    // SAFETY: handle contract (see `sem`).
    let Some(s) = (unsafe { sem(env, argv[0]) }) else { return int(env, BAD_ARGS) };
    if s.shared.load(Ordering::Relaxed) || s.abandoned.swap(true, Ordering::Relaxed) {
        return int(env, 0);
    }
    let queued = s.queued.load(Ordering::Relaxed);
    if queued == 0 {
        return int(env, 0);
    }
    ctx.zombies.set(ctx.zombies.get() + queued);
    if ctx.zombies.get() * 2 < ctx.active_list.borrow().len() {
        return int(env, 0);
    }
    let k = ctx.sweep_abandoned();
    int(env, k as i32)
});
