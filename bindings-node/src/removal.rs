//! Permit removal and resize: `removePermits` and the debt it leaves.
//!
//! # Removing permits
//!
//! `removePermits` owes the permits it could not take at once (`Sem::debt`);
//! every permit given back through this binding pays the debt first. A cancel
//! would hand a waiter's partial grant on past the debt, so while a debt is
//! owed a cancelled, still queued waiter is left queued as an *orphan* (owned
//! by its semaphore, out of its slot) and cancelled for real once the debt is
//! paid; if its grant completes first, its callback passes it on.

use std::pin::Pin;
use std::sync::atomic::{fence, Ordering};
use std::sync::Arc;
use std::time::Instant;

use napi::sys;
use volt_sem_backend::{Error, Expiry, Finish, RawSemaphore, Semaphore as Core};

use crate::codes::{BAD_ARGS, BAD_COUNT, GRANTED, GRANTED_HELD, MAX_JS, OK};
use crate::env::{EnvCtx, Extra};
use crate::handle::sem;
use crate::js_error::throw_unsupported;
use crate::raw::{args, count, int, lock, throw_internal, RawEnv, RawValue};
use crate::semaphore::{Node, OrphanNode, Sem, ORPHAN, ORPHAN_CLAIMED};

/// Gives `n` permits back: first to the debt of `removePermits`, the rest to
/// the semaphore. Paying the debt off cancels the orphans left meanwhile.
pub(crate) fn release_paying(sem: &Sem, n: usize) -> Result<(), Error> {
    release_paying_with(sem, n, |core, n| core.release(n))
}

/// [`release_paying`], the permits left after the debt given back by
/// `release` (`release()`'s, which claims its own waiters: see
/// `EnvCtx::release_local`).
pub(crate) fn release_paying_with(
    sem: &Sem,
    mut n: usize,
    release: impl FnOnce(&Core, usize) -> Result<(), Error>,
) -> Result<(), Error> {
    let mut cleared = false;
    let mut d = sem.debt.load(Ordering::SeqCst);
    while d > 0 && n > 0 {
        let pay = d.min(n);
        match sem
            .debt
            .compare_exchange_weak(d, d - pay, Ordering::SeqCst, Ordering::SeqCst)
        {
            Ok(_) => {
                n -= pay;
                cleared = d == pay;
                break;
            }
            Err(actual) => d = actual,
        }
    }
    let r = if n > 0 { release(&sem.core, n) } else { Ok(()) };
    if cleared {
        cancel_orphans(sem);
    }
    r
}

/// The debt is paid: cancel the orphans for real (their partial grants now go
/// on to the next waiters, as any cancel's).
pub(crate) fn cancel_orphans(sem: &Sem) {
    let taken = std::mem::take(&mut *lock(&sem.orphans));
    for o in taken {
        // SAFETY: an orphan stays allocated until the semaphore drops.
        let node = unsafe { &*o.0 };
        if node
            .orphan
            .compare_exchange(ORPHAN, ORPHAN_CLAIMED, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            // Its callback (or `orphan`) claimed it and finishes it, and may
            // still be using it: free it with the semaphore.
            lock(&sem.graveyard).push(o);
            continue;
        }
        // SAFETY: the node is pinned (leaked Box), last queued on `sem`.
        let finish = unsafe { sem.core.finish_raw(Pin::new_unchecked(&node.waiter)) };
        if let Finish::Granted = finish {
            let _ = release_paying(sem, node.n.get());
        }
        drop(o); // finished outside its callback: free it now
    }
}

/// Leaves a cancelled, still queued request `node` (out of its slot) as an
/// orphan of `sem` while `sem.debt > 0`, or finishes it if its grant already
/// came (or the debt was paid meanwhile).
pub(crate) fn orphan(node: Pin<Box<Node>>, sem: &Arc<Sem>) {
    // SAFETY: the Box stays where it is; it is freed through OrphanNode only.
    let raw = Box::into_raw(unsafe { Pin::into_inner_unchecked(node) });
    // SAFETY: just leaked, valid.
    let node = unsafe { &*raw };
    node.orphan_sem
        .store(Arc::as_ptr(sem) as *mut Sem, Ordering::SeqCst);
    lock(&sem.orphans).push(OrphanNode(raw));
    node.orphan.store(ORPHAN, Ordering::SeqCst);
    fence(Ordering::SeqCst);
    // Pairs with the fence in `wake`: either its callback sees ORPHAN and
    // claims it, or we see that the waiter left the queue. (A callback on this
    // thread, inside this env's own native call, needs no fence: program
    // order decides, see `wake`.)
    let waiting = node.waiter.state() == volt_sem::WaiterState::Waiting;
    if !waiting || sem.debt.load(Ordering::SeqCst) == 0 {
        // Granted/closed meanwhile, or nothing to protect any more: finish it
        // (if its callback has not claimed it).
        if node
            .orphan
            .compare_exchange(ORPHAN, ORPHAN_CLAIMED, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            let mine = {
                let mut list = lock(&sem.orphans);
                let at = list.iter().position(|o| o.0 == raw);
                at.map(|i| list.swap_remove(i))
            };
            // SAFETY: pinned, last queued on `sem`.
            let finish = unsafe { sem.core.finish_raw(Pin::new_unchecked(&node.waiter)) };
            if let Finish::Granted = finish {
                let _ = release_paying(sem, node.n.get());
            }
            // Frees it if it was still listed; else a canceller took it, and
            // files it in the graveyard when it sees it claimed.
            drop(mine);
        }
    }
}

/// An orphan's grant came (or its semaphore closed), inside its own callback:
/// pass the permits on through the debt, and file the node in the graveyard.
pub(crate) fn orphan_woken(node: &Node) {
    // SAFETY: set before the node became an orphan; the semaphore is alive while
    // one of its releases/closes runs this callback.
    let sem = unsafe { &*node.orphan_sem.load(Ordering::SeqCst) };
    // SAFETY: pinned (leaked Box), last queued on `sem`; inside its own callback
    // this returns the outcome at once.
    let finish = unsafe { sem.core.finish_raw(Pin::new_unchecked(&node.waiter)) };
    if let Finish::Granted = finish {
        let _ = release_paying(sem, node.n.get());
    }
    let raw = node as *const Node as *mut Node;
    let mine = {
        let mut list = lock(&sem.orphans);
        let at = list.iter().position(|o| o.0 == raw);
        at.map(|i| list.swap_remove(i))
    };
    // Still listed: the graveyard owns it now (it may only be freed after this
    // callback returned). Not listed: a canceller took it and files it there.
    if let Some(entry) = mine {
        lock(&sem.graveyard).push(entry);
    }
}

impl EnvCtx {
    /// Cancels the active request in `slot` and frees the slot. While a
    /// `removePermits` debt is pending, a request still queued (it may hold a
    /// partial grant) is left queued as an orphan instead of handing its
    /// partial grant on past the debt.
    pub(crate) fn cancel_slot(&self, slot: u32) {
        self.end_slot(slot, false);
    }

    /// Ends the active request in `slot` as [`cancel_slot`](Self::cancel_slot)
    /// does, except that with `keep` a grant it finds (made before the
    /// cancel, its wake not delivered yet) is the caller's: delivered as a
    /// wake would ([`granted`](Self::granted)), its outcome code returned.
    fn end_slot(&self, slot: u32, keep: bool) -> Option<u32> {
        let node: *const Node = {
            let slots = self.slots.borrow();
            &*slots[slot as usize].node
        };
        // SAFETY: slots never shrink while the env lives, and nodes are boxed.
        let node = unsafe { Pin::new_unchecked(&*node) };
        let sem = node.sem.borrow().clone();
        let Some(sem) = sem else {
            self.release_slot(slot);
            return None;
        };
        if sem.debt.load(Ordering::SeqCst) > 0
            && node.waiter.state() == volt_sem::WaiterState::Waiting
        {
            self.release_slot(slot); // the bookkeeping; the node stays queued
            let old = std::mem::replace(
                &mut self.slots.borrow_mut()[slot as usize].node,
                self.new_node(),
            );
            orphan(old, &sem);
            return None;
        }
        if let Finish::Granted = node.finish() {
            if keep {
                return Some(self.granted(slot, node));
            }
            // Granted but not yet delivered: JS gave up on it, so give it back.
            let _ = release_paying(&sem, node.n.get());
        }
        self.release_slot(slot);
        None
    }

    /// Hands the grant `finish` just returned for the request in `slot` to
    /// JS: counted as held, its Redis token and session kept for JS, and
    /// its slot released, or kept until JS confirms ([`GRANTED_HELD`]).
    /// The outcome code.
    pub(crate) fn granted(&self, slot: u32, node: Pin<&Node>) -> u32 {
        if let Some(s) = &*node.sem.borrow() {
            s.add_held(node.n.get());
            if s.is_redis() {
                let (token, session) = (node.waiter.token().unwrap_or(0), node.waiter.session());
                self.extras
                    .borrow_mut()
                    .insert(u64::from(slot), Extra::Grant { token, session });
            }
        }
        let shared = node
            .sem
            .borrow()
            .as_ref()
            .is_some_and(|s| s.shared.load(Ordering::Relaxed));
        if shared {
            // Another thread may terminate this one before JS ran the
            // code awaiting this grant: keep it until JS confirms.
            self.deliver_slot(slot);
            return GRANTED_HELD;
        }
        self.release_slot(slot);
        GRANTED
    }

    /// The `timeout` of the request in `slot` passed. On a Redis semaphore a
    /// request whose acquire script has not answered yet is left to that
    /// answer until its grace ends ([`Expired::Deferred`]: it stays in its
    /// slot, and completes through its wake as granted, or as `TIMED_OUT`,
    /// see `wake`; JS calls this again with `last` at `until` if it has not
    /// settled by then): every backend tries before it waits. `last` (the
    /// grace ended) cancels it whatever it is waiting for. A request the
    /// cancel finds granted, its wake not yet delivered (the grant came
    /// first, as in Rust, C and Python a grant that beats the cancel is
    /// kept), is the caller's on every backend: [`Expired::Kept`] with its
    /// outcome code. Anything else is cancelled as by
    /// [`cancel_slot`](Self::cancel_slot) ([`Expired::Ended`]).
    pub(crate) fn expire_slot(&self, slot: u32, last: bool) -> Expired {
        let node: *const Node = {
            let slots = self.slots.borrow();
            &*slots[slot as usize].node
        };
        // SAFETY: slots never shrink while the env lives, and nodes are boxed.
        let node = unsafe { Pin::new_unchecked(&*node) };
        let sem = node.sem.borrow().clone();
        match sem {
            // (No debt on Redis: removePermits is refused there.)
            Some(sem) if sem.is_redis() => {
                let finish = if last {
                    node.finish()
                } else {
                    match node.expire() {
                        Expiry::Finished(f) => f,
                        Expiry::Deferred { until } => return Expired::Deferred(until),
                    }
                };
                if let Finish::Granted = finish {
                    return Expired::Kept(self.granted(slot, node));
                }
                self.release_slot(slot);
            }
            _ => {
                if let Some(code) = self.end_slot(slot, true) {
                    return Expired::Kept(code);
                }
            }
        }
        Expired::Ended
    }
}

/// What [`EnvCtx::expire_slot`] did.
pub(crate) enum Expired {
    /// Left to the Redis answer until then.
    Deferred(Instant),
    /// Granted before the cancel: delivered with this outcome code.
    Kept(u32),
    /// Cancelled (or ended otherwise: JS reports the timeout).
    Ended,
}

// removePermits(h, n): OK | BAD_COUNT. Takes `n` permits out of the total:
// the available ones at once, the rest (the debt) from the next permits given
// back through this binding, before any waiter is served.
native!(js_remove_permits, |env, _ctx, argv: [2]| {
    // SAFETY: handle contract (see `sem`).
    let Some(s) = (unsafe { sem(env, argv[0]) }) else { return int(env, BAD_ARGS) };
    if s.core.total_permits().is_some() {
        return throw_unsupported(env, "removePermits() on a named or Redis semaphore (its total is fixed)");
    }
    let Some(n) = count(env, argv[1]) else { return int(env, BAD_COUNT) };
    if n == 0 {
        return int(env, OK);
    }
    let mut d = s.debt.load(Ordering::SeqCst);
    loop {
        if d > MAX_JS - n {
            return int(env, BAD_COUNT);
        }
        match s.debt.compare_exchange_weak(d, d + n, Ordering::SeqCst, Ordering::SeqCst) {
            Ok(_) => break,
            Err(actual) => d = actual,
        }
    }
    loop {
        let available = s.core.available_permits();
        let owed = s.debt.load(Ordering::SeqCst);
        if available == 0 || owed == 0 {
            break;
        }
        let taken = available.min(owed);
        match s.core.try_acquire(taken) {
            Ok(_) => {
                // Pay the debt with them; a release may have paid part of it
                // meanwhile: give the excess back.
                let mut d = s.debt.load(Ordering::SeqCst);
                loop {
                    let pay = d.min(taken);
                    match s.debt.compare_exchange_weak(d, d - pay, Ordering::SeqCst, Ordering::SeqCst) {
                        Ok(_) => {
                            if taken > pay {
                                let _ = release_paying(s, taken - pay);
                            }
                            if pay > 0 && d == pay {
                                cancel_orphans(s);
                            }
                            break;
                        }
                        Err(actual) => d = actual,
                    }
                }
            }
            Err(Error::NoPermits) => continue,
            Err(_) => break,
        }
    }
    int(env, OK)
});
