//! `finish`: ends a request, whatever phase it is in, written once for every
//! backend. The backend supplies what varies through [`Finisher`].

use super::node::{Node, Notify};
use super::outcome::Finish;
use super::{delivery, phase};
use crate::sync::{self, Ordering};

/// The part of `finish` that varies per backend (maitake-sync style: the
/// protocol is generic over it): how a queued waiter is taken out of its
/// queue, and where its outcome lives.
pub trait Finisher {
    /// What `finish` returns (the backend's `Finish` type).
    type Output;

    /// The waiter is not queued and holds no outcome.
    fn idle(&mut self) -> Self::Output;

    /// The waiter was seen `WAITING`: take it out of the backend's queue,
    /// under the backend's lock, and leave its phase `IDLE` (its partial grant
    /// handed on). `None` if a completer claimed it first (the phase is no
    /// longer `WAITING` under that lock): `finish` then looks again.
    fn cancel(&mut self) -> Option<Self::Output>;

    /// The waiter's request ended, granted or not, and the caller now owns the
    /// outcome: read (and consume) it from where the backend keeps it.
    fn outcome(&mut self, granted: bool) -> Self::Output;
}

/// The [`Finisher`] of a backend whose outcomes are [`Finish`]'s (granted or
/// closed, kept in the phase itself): only the cancel varies, given as a
/// closure (see [`Finisher::cancel`]).
pub struct CancelWith<C>(pub C);

impl<C: FnMut() -> Option<Finish>> Finisher for CancelWith<C> {
    type Output = Finish;

    fn idle(&mut self) -> Finish {
        Finish::Idle
    }

    fn cancel(&mut self) -> Option<Finish> {
        (self.0)()
    }

    fn outcome(&mut self, granted: bool) -> Finish {
        if granted {
            Finish::Granted
        } else {
            Finish::Closed
        }
    }
}

/// Ends the request of `node`, whatever phase it is in, and returns its
/// outcome; afterwards no backend touches the waiter (unless this is called
/// from inside its own callback, see below).
///
/// * `IDLE`: nothing to end ([`Finisher::idle`]).
/// * `GRANTED`/`CLOSED`: the callback has returned; consume the outcome.
/// * `WAITING`: the backend cancels it ([`Finisher::cancel`]); a completer
///   that claimed it first makes this look again.
/// * `NOTIFYING_*` inside its own callback: consume the outcome now
///   (`NOTIFYING_CONSUMED`); the trampoline makes it `IDLE` when the callback
///   returns.
/// * `NOTIFYING_*` pending on this thread (a sibling completed by the same
///   operation as the callback running here): taken out of the thread's
///   deliveries, so its callback never runs, and its outcome consumed.
/// * `NOTIFYING_*` on another thread: wait (spin, then yield) for its
///   callback to return.
///
/// # Safety
/// `node` belongs to a waiter that is idle or was queued on the backend
/// behind `finisher`; the waiter does not move until this returns.
pub unsafe fn finish<F: Finisher>(node: &Node, mut finisher: F) -> F::Output {
    let mut round = 0;
    loop {
        // Acquire: pairs with the completer's or the trampoline's Release
        // store, so that the outcome and whatever the callback did are visible.
        match node.phase(Ordering::Acquire) {
            phase::IDLE => return finisher.idle(),
            p @ (phase::GRANTED | phase::CLOSED) => {
                let out = finisher.outcome(p == phase::GRANTED);
                // Release: a thread that sees IDLE (and reuses or frees the
                // waiter) sees the outcome consumed first.
                node.set_phase(phase::IDLE, Ordering::Release);
                return out;
            }
            phase::WAITING => {
                if let Some(out) = finisher.cancel() {
                    return out;
                }
                // Claimed by a completer meanwhile: look again.
            }
            p @ (phase::NOTIFYING_GRANTED | phase::NOTIFYING_CLOSED)
                if delivery::in_own_callback(node) =>
            {
                let out = finisher.outcome(p == phase::NOTIFYING_GRANTED);
                // Relaxed: only this thread writes the phase while NOTIFYING,
                // and the trampoline reading it back runs on this thread.
                node.set_phase(phase::NOTIFYING_CONSUMED, Ordering::Relaxed);
                return out;
            }
            p @ (phase::NOTIFYING_GRANTED | phase::NOTIFYING_CLOSED)
                if delivery::take_pending(node) =>
            {
                // Its callback was still to run on this thread, after the one
                // running now: waiting would hang. It was taken out of the
                // thread's deliveries instead and will never be called.
                let out = finisher.outcome(p == phase::NOTIFYING_GRANTED);
                // Release: publishes to the owner, as the trampoline would.
                node.set_phase(phase::IDLE, Ordering::Release);
                return out;
            }
            phase::NOTIFYING_CONSUMED if delivery::in_own_callback(node) => return finisher.idle(),
            _ => {
                // NOTIFYING on another thread: its callback is running.
                sync::spin_wait(round);
                round = round.saturating_add(1);
            }
        }
    }
}

/// Ends a node whose wake callback will never return in this process: the
/// thread that claimed it (moved it to a `NOTIFYING_*` phase) is a thread of
/// the parent of this forked child, which the child does not have. Returns
/// the outcome as the trampoline would have left it (`Granted`, `Closed`, or
/// `Idle` if the callback consumed it from inside) and makes the node idle,
/// without calling or dropping its callback; `None` if the node is not
/// `NOTIFYING_*`, or if the fork was made from inside a wake callback (that
/// thread goes on delivering in the child: `finish` must wait as usual). For
/// the local semaphore, whose requests' fork generation tells that their
/// claimer is the parent's (the shared semaphore ends a forked handle's
/// waiters in its own `finish_raw`).
///
/// # Safety
/// The node is not claimed by any thread of this process (the caller
/// established that it was claimed by a thread of the parent), and its owner
/// calls this (one-owner rule).
pub(crate) unsafe fn finish_orphan(node: &Node) -> Option<Finish> {
    if crate::fork::forked_in_delivery() {
        return None;
    }
    let out = match node.phase(Ordering::Acquire) {
        phase::NOTIFYING_GRANTED => Finish::Granted,
        phase::NOTIFYING_CLOSED => Finish::Closed,
        phase::NOTIFYING_CONSUMED => Finish::Idle,
        _ => return None,
    };
    // The parent's callback: neither call nor drop it (as the purge of the
    // parent's queued requests). Nobody else touches the node here.
    // SAFETY: no thread of this process owns the node (contract).
    let notify = node
        .notify
        .with_mut(|n| unsafe { core::mem::replace(&mut *n, Notify::None) });
    core::mem::forget(notify);
    // Release: publishes to a status reader, as the trampoline would.
    node.set_phase(phase::IDLE, Ordering::Release);
    Some(out)
}

/// Resets a `fork()` child's copy of a waiter its parent queued on a backend
/// whose requests live outside the process (a shared-memory segment, a
/// Redis session), for that backend's `finish_raw` in the child: the request
/// stays the parent's, and a callback the copy says is running runs on a
/// thread of the parent, which the child does not have, so waiting for it
/// would never end. The copy is left idle, never granted, its callback
/// neither called nor waited for. Returns whether it was idle already (the
/// backend answers `Idle`, else `Closed`).
#[doc(hidden)]
pub fn reset_forked_copy(node: &Node) -> bool {
    // Acquire: as `finish`'s load of the phase.
    let idle = node.phase(Ordering::Acquire) == phase::IDLE;
    // Relaxed: the copy belongs to this thread; no other thread of the child
    // references it.
    node.set_phase(phase::IDLE, Ordering::Relaxed);
    idle
}

/// Whether the last `fork()` of this process (as a child) was made from
/// inside a wake callback: that thread goes on delivering its callbacks in
/// the child, so nodes it was delivering are not orphans there. Only
/// maintained once [`watch_forks`] ran.
#[doc(hidden)]
pub fn forked_in_delivery() -> bool {
    crate::fork::forked_in_delivery()
}

/// Registers the `fork()` handlers that [`finish_orphan`] relies on (whether
/// a fork was made from inside a wake callback); idempotent and cheap after
/// the first call. A backend that queues nodes calls it before its first.
#[doc(hidden)]
pub fn watch_forks() {
    crate::fork::watch();
}
