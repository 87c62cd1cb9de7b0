//! [`Wait`]: the async acquire of a backend driven through its raw API, with
//! the backend's waiter embedded in the future, so that waiting allocates
//! nothing (no `Arc` per wait): the future is pinned while queued, which is
//! what the raw API asks of the waiter.

use core::ffi::c_void;
use core::future::Future;
use core::marker::PhantomPinned;
use core::pin::Pin;
use core::task::{Context, Poll, Waker};

use super::node::Node;
use super::outcome::RawAcquire;
use super::phase;
use super::semaphore::RawSemaphore;
use crate::sync::{lock, Mutex, Ordering};

/// The part of [`Wait`] that varies per backend, over its raw API: the
/// waiter it embeds, and what the future returns for each way a request
/// ends (a permit guard, an error).
///
/// # Safety
/// `node` returns the [`Node`] embedded in `waiter`, the one the backend's
/// [`acquire_raw`](RawSemaphore::acquire_raw) queues and completes through
/// the `raw` trampoline.
pub unsafe trait RawWait: RawSemaphore {
    /// What the future returns: it may borrow the semaphore (a permit
    /// guard).
    type Output<'a>
    where
        Self: 'a;

    /// A new, idle waiter.
    fn new_waiter() -> Self::Waiter;

    /// The protocol node inside `waiter`.
    fn node(waiter: &Self::Waiter) -> &Node;

    /// Answers at once when the request needs no queue (no permits asked).
    fn immediate(&self, n: usize) -> Option<Self::Output<'_>>;

    /// The output when `acquire_raw` answered at once: `Ok` (taken: `Ready`)
    /// or its refusal.
    fn answered(
        &self,
        waiter: &Self::Waiter,
        n: usize,
        r: Result<(), Self::Error>,
    ) -> Self::Output<'_>;

    /// The output of a request that left `WAITING`: `finish_raw`'s outcome.
    fn finished(&self, waiter: &Self::Waiter, n: usize, finish: Self::Finish) -> Self::Output<'_>;

    /// The future was dropped while queued and `finish_raw` ended the
    /// request with `finish`: give back a grant the caller never saw.
    fn abandoned(&self, waiter: &Self::Waiter, n: usize, finish: Self::Finish);

    /// The output for a queued request that this process can no longer see
    /// completed, checked at every poll of a queued future; `None` (the
    /// default) while it can. That is a `fork()` child's copy of a request
    /// its parent queued, on a backend whose grants arrive through a thread
    /// of the parent (the shared-memory doorbell, the Redis agent): the
    /// child has no such thread, so the future answers this at once instead
    /// of staying pending for ever. The in-process semaphore keeps the
    /// default: the child's copy of its queue is the child's own, and a
    /// release there grants the copied request.
    ///
    /// When it answers, the future passes the waiter to `finish_raw`, which
    /// must then return at once and leave the parent's request alone.
    fn stranded(&self) -> Option<Self::Output<'_>> {
        None
    }
}

/// Where a [`Wait`] stands.
#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Init,
    Queued,
    Done,
}

/// The async acquire of `n` permits on a backend's raw API, with its waiter
/// inside: no allocation per wait. Cancel-safe: dropped while queued, it
/// cancels the request (a partial grant is handed on) or gives back a grant
/// it never reported.
#[must_use = "futures do nothing unless polled"]
pub struct Wait<'a, Q: RawWait> {
    queue: &'a Q,
    n: usize,
    state: State,
    waiter: Q::Waiter,
    /// The task to wake; taken by [`wake_task`] on the trampoline's thread.
    waker: Mutex<Option<Waker>>,
    _pinned: PhantomPinned,
}

impl<'a, Q: RawWait> Wait<'a, Q> {
    /// A future for `n` permits of `queue`; nothing happens until polled.
    pub fn new(queue: &'a Q, n: usize) -> Self {
        Wait {
            queue,
            n,
            state: State::Init,
            waiter: Q::new_waiter(),
            waker: Mutex::new(None),
            _pinned: PhantomPinned,
        }
    }

    /// The permits asked for.
    pub fn permits(&self) -> usize {
        self.n
    }

    /// Whether the request is queued (polled once, not yet complete).
    pub fn is_queued(&self) -> bool {
        self.state == State::Queued
    }

    /// A `Waker`'s `clone` and `drop` are user code, which may complete this
    /// very request (dropping the old waker drops what it owned, a permit
    /// say) and so run [`wake_task`] on this thread, which takes the slot's
    /// lock: neither runs under it.
    fn set_waker(&self, waker: &Waker) {
        if lock(&self.waker)
            .as_ref()
            .is_some_and(|w| w.will_wake(waker))
        {
            return;
        }
        let new = waker.clone();
        let old = lock(&self.waker).replace(new);
        drop(old);
    }
}

/// The wake callback of every [`Wait`]: wakes its task.
unsafe extern "C" fn wake_task(ctx: *mut c_void) {
    // SAFETY: `ctx` is the future's `waker` field: the future is pinned and
    // does not end before `finish_raw` returned, which waits for this
    // callback to return.
    let slot = unsafe { &*(ctx as *const Mutex<Option<Waker>>) };
    let waker = lock(slot).take();
    if let Some(waker) = waker {
        // Not here: the task's waker may drop this very future, whose node
        // the trampoline still uses until this callback returned.
        super::delivery::wake_after_callback(waker);
    }
}

impl<'a, Q: RawWait> Future for Wait<'a, Q> {
    type Output = Q::Output<'a>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Q::Output<'a>> {
        // SAFETY: nothing is moved out of the pinned future; `waiter` and
        // `waker` are only used through shared references below.
        let this = unsafe { self.get_unchecked_mut() };
        // SAFETY: structural pinning of `waiter`: it never moves while the
        // future is pinned (no `Unpin`, and `Drop` ends the request in place).
        let waiter = unsafe { Pin::new_unchecked(&this.waiter) };
        match this.state {
            State::Done => panic!("`Acquire` polled after it completed"),
            State::Init => {
                if let Some(out) = this.queue.immediate(this.n) {
                    this.state = State::Done;
                    return Poll::Ready(out);
                }
                this.set_waker(cx.waker());
                let ctx = &this.waker as *const Mutex<Option<Waker>> as *mut c_void;
                // SAFETY: the waiter is new and pinned; it and `waker` (the
                // callback's `ctx`) live in this pinned future, which ends
                // the request (`finish_raw`, here or in `Drop`) before they go.
                let r = match unsafe { this.queue.acquire_raw(waiter, this.n, wake_task, ctx) } {
                    Ok(RawAcquire::Pending) => {
                        this.state = State::Queued;
                        return Poll::Pending;
                    }
                    Ok(RawAcquire::Ready) => Ok(()),
                    Err(e) => Err(e),
                };
                this.state = State::Done;
                Poll::Ready(this.queue.answered(&this.waiter, this.n, r))
            }
            State::Queued => {
                if let Some(out) = this.queue.stranded() {
                    this.state = State::Done;
                    // SAFETY: queued by `acquire_raw` on this queue; for a
                    // stranded request `finish_raw` returns at once (the
                    // `stranded` contract) and only resets this copy.
                    let _ = unsafe { this.queue.finish_raw(waiter) };
                    return Poll::Ready(out);
                }
                // Register first, then look: a completion after the look
                // finds the new waker; one before it is seen by the look
                // (Acquire pairs with the claim's Release store).
                this.set_waker(cx.waker());
                if Q::node(&this.waiter).phase(Ordering::Acquire) == phase::WAITING {
                    return Poll::Pending;
                }
                this.state = State::Done;
                // SAFETY: queued by `acquire_raw` on this queue.
                let finish = unsafe { this.queue.finish_raw(waiter) };
                Poll::Ready(this.queue.finished(&this.waiter, this.n, finish))
            }
        }
    }
}

impl<Q: RawWait> Drop for Wait<'_, Q> {
    fn drop(&mut self) {
        if self.state == State::Queued {
            // SAFETY: queued by `acquire_raw` on this queue; the waiter has
            // not moved (pinned since the first poll) and is ended in place.
            let finish = unsafe { self.queue.finish_raw(Pin::new_unchecked(&self.waiter)) };
            self.queue.abandoned(&self.waiter, self.n, finish);
        }
    }
}

impl<Q: RawWait> core::fmt::Debug for Wait<'_, Q> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Acquire")
            .field("n", &self.n)
            .field("queued", &self.is_queued())
            .finish()
    }
}
