//! Cooperative yielding for the async acquire paths.
//!
//! An uncontended `acquire(n).await` completes without ever returning
//! `Pending`, so a task looping on acquire + drop would never give its executor
//! thread back: on a single-threaded runtime, every other task starves. Two
//! mechanisms bound that loop:
//!
//! * **Per-thread grant budget (always on).** Every acquire future that starts
//!   counts one on the polling thread (one thread-local access). After
//!   [`BUDGET`] starts in a row that did not return `Pending`, the next start
//!   returns `Pending` once, after waking its own task, and the count starts
//!   again. Any `Pending` returned by an acquire future (queued, or yielding)
//!   also restarts the count, since the task is yielding anyway.
//! * **tokio's task budget (feature `tokio`).** Each start of an acquire asks
//!   [`tokio::task::coop::poll_proceed`] first, and an immediate grant consumes
//!   one unit of the task's budget, exactly as tokio's own resources do; on a
//!   tokio runtime the task then yields at the same point it would with
//!   `tokio::sync::Semaphore`. Outside a tokio runtime it costs nothing (the
//!   budget is unconstrained there) and the grant budget still applies.
//!
//! Yielding happens only for a request that would complete at once (enough
//! permits available, nobody queued). A request that must wait queues at its
//! first poll even with the budget spent (its `Pending` is the yield), a
//! queued request keeps its place, and a completed grant is always returned,
//! so cooperative yielding never costs a request its place in the FIFO.
//!
//! Not under loom: the models drive futures by hand and a spurious `Pending`
//! would only multiply their branches; the logic is single-threaded.

use core::task::{Context, Poll};

/// Immediate grants a thread may make in a row before an acquire yields once.
/// Same as tokio's per-task budget.
#[cfg_attr(volt_loom, allow(dead_code))]
pub(crate) const BUDGET: u32 = 128;

#[cfg(not(volt_loom))]
std::thread_local! {
    static GRANTS: core::cell::Cell<u32> = const { core::cell::Cell::new(0) };
}

/// Permission to try an immediate grant. Hand it to [`made_progress`] if the
/// grant happened; dropping it instead (the request queued) restores tokio's
/// budget.
pub(crate) struct Proceed {
    #[cfg(feature = "tokio")]
    tokio: tokio::task::coop::RestoreOnPending,
}

/// Decides whether an acquire may try to complete now, or must yield first.
/// On `Pending`, the task's waker has been (or, under tokio, will be) woken.
#[inline]
pub(crate) fn poll_proceed(cx: &mut Context<'_>) -> Poll<Proceed> {
    #[cfg(not(volt_loom))]
    {
        // Counts the grant before it happens (one thread-local access per
        // acquire): if the request queues instead, `yielded` resets the count
        // anyway. `try_with`: during thread-local destruction there is no
        // budget to keep.
        let exhausted = GRANTS
            .try_with(|g| {
                let n = g.get();
                g.set(if n >= BUDGET { 0 } else { n + 1 });
                n >= BUDGET
            })
            .unwrap_or(false);
        if exhausted {
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
    }
    #[cfg(feature = "tokio")]
    let tokio = match tokio::task::coop::poll_proceed(cx) {
        Poll::Ready(restore) => restore,
        Poll::Pending => {
            yielded();
            return Poll::Pending;
        }
    };
    #[cfg(not(feature = "tokio"))]
    let _ = cx;
    Poll::Ready(Proceed {
        #[cfg(feature = "tokio")]
        tokio,
    })
}

/// Records an immediate grant (the thread's count already has it, see
/// `poll_proceed`; this commits tokio's budget). `None`: the budget was spent
/// and the request went on to queue, but its permits arrived meanwhile.
#[inline]
pub(crate) fn made_progress(proceed: Option<Proceed>) {
    #[cfg(feature = "tokio")]
    if let Some(proceed) = proceed {
        proceed.tokio.made_progress();
    }
    #[cfg(not(feature = "tokio"))]
    let _ = proceed;
}

/// The task is about to return `Pending` from an acquire: the count restarts.
#[inline]
pub(crate) fn yielded() {
    #[cfg(not(volt_loom))]
    let _ = GRANTS.try_with(|g| g.set(0));
}

/// Whether the current thread is polling a task of a tokio runtime (where
/// blocking would stall the executor). Inside such a poll tokio's coop budget
/// is constrained; in `spawn_blocking`, `block_in_place` and outside any
/// runtime it is unconstrained. The public API only says whether budget
/// remains, so this spends it one unit at a time (at most 255, the budget is a
/// `u8`) until `poll_proceed` refuses, then gives all of it back: each
/// `RestoreOnPending` restores the value from before its own call, so dropping
/// them newest first restores the original budget. About a microsecond; only
/// called on the path that is about to block.
#[cfg(all(feature = "tokio", not(volt_loom)))]
pub(crate) fn in_runtime_task() -> bool {
    use tokio::task::coop::RestoreOnPending;
    if tokio::runtime::Handle::try_current().is_err() {
        return false;
    }
    let waker = noop_waker();
    let mut cx = Context::from_waker(&waker);
    let mut spent: [Option<RestoreOnPending>; 256] = [const { None }; 256];
    let mut constrained = false;
    for slot in spent.iter_mut() {
        match tokio::task::coop::poll_proceed(&mut cx) {
            Poll::Ready(restore) => *slot = Some(restore),
            Poll::Pending => {
                constrained = true;
                break;
            }
        }
    }
    for slot in spent.iter_mut().rev() {
        drop(slot.take());
    }
    constrained
}

#[cfg(all(feature = "tokio", not(volt_loom)))]
fn noop_waker() -> core::task::Waker {
    use core::task::{RawWaker, RawWakerVTable, Waker};
    const VTABLE: RawWakerVTable = RawWakerVTable::new(|_| RAW, |_| {}, |_| {}, |_| {});
    const RAW: RawWaker = RawWaker::new(core::ptr::null(), &VTABLE);
    // SAFETY: every vtable function ignores the data pointer and does nothing
    // (clone returns the same no-op waker), which meets RawWaker's contract.
    unsafe { Waker::from_raw(RAW) }
}
