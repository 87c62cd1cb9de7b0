//! Delivery of grants on shared semaphores.
//!
//! # Delivery
//!
//! A grant on a *shared* semaphore is reported as `GRANTED_HELD`: its slot
//! stays `Delivered` (owning the permits) until JS confirms, in a microtask
//! queued after the promise's reactions, that user code saw it, or until this
//! thread releases permits of that semaphore. So a worker terminated between
//! the native collection and its JS continuation gives the grant back.

use std::sync::Arc;

use napi::sys;

use crate::codes::BAD_ARGS;
use crate::env::{Enter, EnvCtx};
use crate::raw::{args, int, key_arg, throw_internal, RawEnv, RawValue};
use crate::removal::release_paying;
use crate::semaphore::Sem;

impl EnvCtx {
    /// Ends a delivered grant: JS handed it over (`keep`), or gave up on it
    /// (the permits are released).
    pub(crate) fn confirm_slot(&self, slot: u32, keep: bool) {
        self.delivered.borrow_mut().retain(|&d| d != slot);
        if !keep {
            let sem = self.slots.borrow()[slot as usize].node.sem.borrow().clone();
            let n = self.slots.borrow()[slot as usize].node.n.get();
            if let Some(sem) = sem {
                sem.sub_held(n);
                let _ = release_paying(&sem, n);
            }
        }
        self.release_slot(slot);
    }

    /// A release in this thread on `sem` means its code has seen the grants it
    /// had: confirm every delivered grant on `sem` first, so the env cleanup hook
    /// cannot return permits user code already gave back.
    #[inline]
    pub(crate) fn confirm_all_on(&self, sem: &Arc<Sem>) {
        // Inline: nothing delivered (no shared semaphore's grant waiting for
        // its confirmation) is every release's case but a shared one's.
        if !self.delivered.borrow().is_empty() {
            self.confirm_delivered_on(sem);
        }
    }

    fn confirm_delivered_on(&self, sem: &Arc<Sem>) {
        let mine: Vec<u32> = {
            let slots = self.slots.borrow();
            self.delivered
                .borrow()
                .iter()
                .copied()
                .filter(|&d| {
                    slots[d as usize]
                        .node
                        .sem
                        .borrow()
                        .as_ref()
                        .is_some_and(|s| Arc::ptr_eq(s, sem))
                })
                .collect()
        };
        for slot in mine {
            self.confirm_slot(slot, true);
        }
    }
}

// confirm(key, keep): k >= 0 outcomes written. Ends a GRANTED_HELD grant: JS
// handed it to user code (keep = true), or nobody will ever see it (false: the
// permits are released). Unknown keys (already confirmed) are ignored.
native!(js_confirm, |env, ctx, argv: [2]| {
    let Some(key) = key_arg(env, argv[0]) else { return int(env, BAD_ARGS) };
    let mut keep = true;
    // SAFETY: fails on a non-boolean, leaving `keep` as is.
    unsafe { sys::napi_get_value_bool(env, argv[1], &mut keep) };
    let Some(slot) = ctx.delivered_slot(key) else { return int(env, 0) };
    let enter = Enter::new(ctx);
    ctx.confirm_slot(slot, keep);
    let k = ctx.settle_local();
    drop(enter);
    int(env, k as i32)
});
