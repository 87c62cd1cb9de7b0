//! Per-environment state: one [`EnvCtx`] per main thread or worker (per load
//! of this addon), its slots of queue nodes and their states (free, `Active`,
//! `Delivered`, and the moves between them), the thread-local marking which
//! environment's native call is running, the outcomes of Redis requests
//! waiting for JS ([`Extra`]), and
//! the reference count that keeps the thread alive while a wake may come from
//! elsewhere.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::pin::Pin;
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicU8, Ordering};
use std::sync::{Arc, Weak};

use napi::sys;
use volt_sem_backend::{Error, Waiter as CoreWaiter};

use crate::codes::{BAD_ARGS, GEN_MASK, OK};
use crate::handle::{handle_of, Handle};
use crate::raw::{args, double, int, lock, throw_internal, RawEnv, RawValue};
use crate::remote::{flush_later, EnvShared, CURRENT};
use crate::semaphore::{Node, Sem, LIVE_SEMS, NOT_ORPHAN};

/// The JS-thread-only state of one environment (one main thread or worker, per
/// load of this addon). Reached through the `data` pointer of every function.
pub(crate) struct EnvCtx {
    pub(crate) env: RawEnv,
    pub(crate) shared: Arc<EnvShared>,
    /// Queue nodes, reused across requests; a pending request is identified by
    /// its key `gen << 32 | slot`, and JS knows it by its slot.
    pub(crate) slots: RefCell<Vec<Slot>>,
    pub(crate) free: RefCell<Vec<u32>>,
    /// Woken keys not yet written to the buffer (FIFO).
    pub(crate) ready: RefCell<VecDeque<u64>>,
    /// Keys of this environment's nodes woken inside one of its own native
    /// calls (while it is [`CURRENT`] on its thread): collected before that
    /// call returns.
    pub(crate) local: RefCell<Vec<u64>>,
    /// The JS `Uint32Array` the outcomes go to: pointer and capacity in pairs.
    pub(crate) buf: Cell<(*mut u32, usize)>,
    /// Pending nodes on shared semaphores; the tsfn is referenced while > 0.
    pub(crate) refs: Cell<usize>,
    /// Slots in the `Delivered` state (few: they live for one microtask).
    pub(crate) delivered: RefCell<Vec<u32>>,
    /// Slots in the `Active` state (each knows its index here).
    pub(crate) active_list: RefCell<Vec<u32>>,
    /// Pending requests on abandoned semaphores not swept yet.
    pub(crate) zombies: Cell<usize>,
    pub(crate) initialized: Cell<bool>,
    /// What a Redis outcome carries beyond its code, until JS reads it
    /// (`extra`): by slot, `WATCH_BIT | watch` or `LAST_GRANT`.
    pub(crate) extras: RefCell<HashMap<u64, Extra>>,
    /// Lease watches of this environment, by number (see [`crate::lease`]).
    pub(crate) watches: RefCell<HashMap<u32, Weak<Sem>>>,
    pub(crate) next_watch: Cell<u32>,
    /// `watches` is pruned of collected semaphores' entries when it reaches
    /// this size (then twice what is left): a collected semaphore's watches
    /// never complete, so nothing else would remove them.
    pub(crate) watch_prune_at: Cell<usize>,
}

/// The rest of a Redis outcome: a grant's fencing token and session, or the
/// error of a failed request or lost session.
pub(crate) enum Extra {
    Grant { token: u64, session: u64 },
    Failed(Error),
}

/// Marks `ctx` as running a native call on this thread; restores on drop.
pub(crate) struct Enter(pub(crate) *const RefCell<Vec<u64>>);

impl Enter {
    pub(crate) fn new(ctx: &EnvCtx) -> Self {
        Enter(CURRENT.with(|c| c.local.replace(&ctx.local)))
    }
}

impl Drop for Enter {
    fn drop(&mut self) {
        let later = CURRENT.with(|c| {
            c.local.set(self.0);
            c.later.replace(false)
        });
        if later {
            // The wakes of other environments this call made (its wake
            // callbacks have returned by now).
            flush_later();
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum SlotState {
    /// In the free list.
    Free,
    /// A pending request: the waiter is queued, or woken and not yet collected.
    Active,
    /// Granted on a shared semaphore and reported to JS, which has not yet
    /// confirmed (`confirm`) that it handed the grant to user code. Owns the
    /// `n` permits: the env cleanup hook releases them if JS never confirms.
    Delivered,
}

pub(crate) struct Slot {
    pub(crate) node: Pin<Box<Node>>,
    pub(crate) state: SlotState,
    pub(crate) gen: u32,
    /// Index in `EnvCtx::active` while `Active`.
    pub(crate) pos: u32,
}

impl EnvCtx {
    /// The node of a pending request, by key; `None` if that request is over.
    pub(crate) fn active(&self, key: u64) -> Option<(u32, *const Node)> {
        let slot = key as u32;
        let slots = self.slots.borrow();
        let s = slots.get(slot as usize)?;
        (s.state == SlotState::Active && s.gen == (key >> 32) as u32)
            .then(|| (slot, &*s.node as *const Node))
    }

    pub(crate) fn new_node(&self) -> Pin<Box<Node>> {
        Box::pin(Node {
            waiter: CoreWaiter::new(),
            key: Cell::new(0),
            n: Cell::new(0),
            sem: RefCell::new(None),
            counted: Cell::new(false),
            handle: Cell::new(0),
            refd: Cell::new(true),
            env: self.shared.clone(),
            owner: &self.local,
            orphan: AtomicU8::new(NOT_ORPHAN),
            orphan_sem: AtomicPtr::new(ptr::null_mut()),
        })
    }

    /// A free node for a new request of `n` permits on `sem`, and its slot.
    pub(crate) fn take_slot(&self, h: &Handle, n: usize) -> (u32, *const Node) {
        let sem = &h.sem;
        let mut slots = self.slots.borrow_mut();
        let slot = match self.free.borrow_mut().pop() {
            Some(slot) => slot,
            None => {
                slots.push(Slot {
                    node: self.new_node(),
                    state: SlotState::Free,
                    gen: 0,
                    pos: 0,
                });
                (slots.len() - 1) as u32
            }
        };
        let s = &slots[slot as usize];
        let node = &*s.node;
        node.key.set((s.gen as u64) << 32 | slot as u64);
        node.n.set(n);
        *node.sem.borrow_mut() = Some(sem.take_ref());
        node.handle.set(h.id);
        node.refd.set(h.refd.get());
        node.counted
            .set(h.refd.get() && sem.shared.load(Ordering::Relaxed));
        (slot, node)
    }

    /// Marks a queued request's slot active (and refs the tsfn if needed).
    pub(crate) fn activate(&self, slot: u32) {
        let counted = {
            let mut slots = self.slots.borrow_mut();
            let mut active = self.active_list.borrow_mut();
            let s = &mut slots[slot as usize];
            s.state = SlotState::Active;
            s.pos = active.len() as u32;
            active.push(slot);
            if let Some(sem) = &*s.node.sem.borrow() {
                sem.queue_one();
            }
            s.node.counted.get()
        };
        if counted {
            let refs = self.refs.get();
            if refs == 0 {
                self.tsfn_ref(true);
            }
            self.refs.set(refs + 1);
        }
    }

    /// Returns a finished (or never queued, or delivered) request's node to the
    /// free list.
    pub(crate) fn release_slot(&self, slot: u32) {
        let (was_active, counted, sem) = {
            let mut slots = self.slots.borrow_mut();
            let was_active = slots[slot as usize].state == SlotState::Active;
            if was_active {
                self.leave_active(&mut slots, slot);
            }
            let s = &mut slots[slot as usize];
            s.state = SlotState::Free;
            s.gen = s.gen.wrapping_add(1) & GEN_MASK;
            let sem = s.node.sem.borrow_mut().take();
            (was_active, s.node.counted.get(), sem)
        };
        self.free.borrow_mut().push(slot);
        if let Some(sem) = sem {
            Sem::put_ref(sem); // may drop the last Arc: outside the borrows
        }
        if was_active && counted {
            self.unref_one();
        }
    }

    /// Takes an `Active` slot out of the active list and its semaphore's count.
    pub(crate) fn leave_active(&self, slots: &mut [Slot], slot: u32) {
        let mut active = self.active_list.borrow_mut();
        let pos = slots[slot as usize].pos as usize;
        active.swap_remove(pos);
        if let Some(&moved) = active.get(pos) {
            slots[moved as usize].pos = pos as u32;
        }
        if let Some(sem) = &*slots[slot as usize].node.sem.borrow() {
            sem.unqueue_one();
        }
    }

    /// Active -> Delivered: the grant stays with the slot (and its key) until
    /// `confirm` or the env cleanup hook.
    pub(crate) fn deliver_slot(&self, slot: u32) {
        let counted = {
            let mut slots = self.slots.borrow_mut();
            self.leave_active(&mut slots, slot);
            let s = &mut slots[slot as usize];
            s.state = SlotState::Delivered;
            s.node.counted.get()
        };
        self.delivered.borrow_mut().push(slot);
        if counted {
            self.unref_one();
        }
    }

    /// The slot of a delivered grant, by key.
    pub(crate) fn delivered_slot(&self, key: u64) -> Option<u32> {
        let slot = key as u32;
        let slots = self.slots.borrow();
        let s = slots.get(slot as usize)?;
        (s.state == SlotState::Delivered && s.gen == (key >> 32) as u32).then_some(slot)
    }

    /// Recomputes whether the active requests selected by `pick` (which may
    /// update their `refd`) keep the thread alive: shared and ref'd.
    pub(crate) fn recount(&self, mut pick: impl FnMut(&Node) -> bool) {
        let (mut up, mut down) = (0usize, 0usize);
        {
            let slots = self.slots.borrow();
            for &a in self.active_list.borrow().iter() {
                let node = &*slots[a as usize].node;
                if !pick(node) {
                    continue;
                }
                let shared = node
                    .sem
                    .borrow()
                    .as_ref()
                    .is_some_and(|s| s.shared.load(Ordering::Relaxed));
                let want = shared && node.refd.get();
                if want != node.counted.replace(want) {
                    if want {
                        up += 1;
                    } else {
                        down += 1;
                    }
                }
            }
        }
        let before = self.refs.get();
        let after = before + up - down;
        self.refs.set(after);
        if before == 0 && after > 0 {
            self.tsfn_ref(true);
        } else if before > 0 && after == 0 {
            self.tsfn_ref(false);
        }
    }

    pub(crate) fn unref_one(&self) {
        let refs = self.refs.get() - 1;
        self.refs.set(refs);
        if refs == 0 {
            self.tsfn_ref(false);
        }
    }

    pub(crate) fn tsfn_ref(&self, on: bool) {
        let tsfn = *lock(&self.shared.tsfn);
        if let Some(t) = tsfn {
            // SAFETY: on the JS thread of `self.env`, while the tsfn is alive (it is
            // finalized only at teardown, when no JS runs any more).
            unsafe {
                if on {
                    sys::napi_ref_threadsafe_function(self.env, t.0);
                } else {
                    sys::napi_unref_threadsafe_function(self.env, t.0);
                }
            }
        }
    }
}

// setRef(h, on): whether waiters queued through this handle keep the thread alive.
native!(js_set_ref, |env, ctx, argv: [2]| {
    // SAFETY: handle contract (see `sem`).
    let Some(h) = (unsafe { handle_of(env, argv[0]) }) else { return int(env, BAD_ARGS) };
    let mut on = true;
    // SAFETY: fails on a non-boolean, leaving `on` as is.
    unsafe { sys::napi_get_value_bool(env, argv[1], &mut on) };
    if h.refd.replace(on) != on {
        let id = h.id;
        ctx.recount(|node| {
            if node.handle.get() == id {
                node.refd.set(on);
                true
            } else {
                false
            }
        });
    }
    int(env, OK)
});

// stats(): { slots, active, delivered, free } of this environment, and the
// semaphores alive in the process (tests).
native!(js_stats, |env, ctx, argv: [0]| {
    let _ = argv;
    let mut obj = ptr::null_mut();
    let fields = [
        (c"slots", ctx.slots.borrow().len()),
        (c"active", ctx.active_list.borrow().len()),
        (c"delivered", ctx.delivered.borrow().len()),
        (c"free", ctx.free.borrow().len()),
        (c"semaphores", LIVE_SEMS.load(Ordering::Relaxed)),
    ];
    // SAFETY: plain value creation on the JS thread.
    unsafe {
        sys::napi_create_object(env, &mut obj);
        for (name, v) in fields {
            sys::napi_set_named_property(env, obj, name.as_ptr(), double(env, v as f64));
        }
    }
    obj
});
