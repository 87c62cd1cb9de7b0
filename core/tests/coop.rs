//! Cooperative yielding (issue 20): a task looping on uncontended acquires must
//! let the other tasks of a current-thread runtime run. `make test-core` runs
//! this file with and without the `tokio` feature: without it the per-thread
//! grant budget bounds the loop; with it tokio's task budget does (and the
//! grant budget still applies).

#![cfg(not(volt_loom))]

use std::cell::Cell;
use std::future::Future;
use std::pin::pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::task::noop_waker_ref;
use volt_sem::{Mutex, RwLock, Semaphore};

/// The loop must yield within this many immediate grants (tokio's semaphore
/// yields after 128 operations; the grant budget is 128 as well).
const BOUND: u32 = 129;
const GIVE_UP: u32 = 1_000_000;

/// Runs `acquire_once` in a loop on a current-thread runtime beside a task that
/// only sets a flag; returns the iteration at which that task had run.
fn iterations_until_the_other_task_runs<F, Fut>(acquire_once: F) -> u32
where
    F: Fn() -> Fut + 'static,
    Fut: Future<Output = ()>,
{
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async move {
        let ran = Rc::new(Cell::new(false));
        let looper = tokio::task::spawn_local({
            let ran = ran.clone();
            async move {
                for i in 1..=GIVE_UP {
                    acquire_once().await;
                    if ran.get() {
                        return i;
                    }
                }
                GIVE_UP
            }
        });
        tokio::task::spawn_local(async move { ran.set(true) });
        looper.await.unwrap()
    })
}

#[test]
fn a_task_looping_on_uncontended_acquire_lets_another_task_run() {
    let sem = Arc::new(Semaphore::new(4));
    let n = iterations_until_the_other_task_runs(move || {
        let sem = sem.clone();
        async move { drop(sem.acquire(1).await.unwrap()) }
    });
    assert!(n <= BOUND, "the other task ran only after {n} acquires");
}

#[test]
fn owned_acquire_mutex_and_rwlock_loops_yield_too() {
    let sem = Arc::new(Semaphore::new(1));
    let n = iterations_until_the_other_task_runs(move || {
        let sem = sem.clone();
        async move { drop(sem.acquire_owned(1).await.unwrap()) }
    });
    assert!(n <= BOUND, "acquire_owned: {n}");
    let m = Arc::new(Mutex::new(0u64));
    let n = iterations_until_the_other_task_runs(move || {
        let m = m.clone();
        async move { *m.lock().await += 1 }
    });
    assert!(n <= BOUND, "Mutex::lock: {n}");
    let l = Arc::new(RwLock::new(0u64));
    let n = iterations_until_the_other_task_runs(move || {
        let l = l.clone();
        async move { *l.write().await += 1 }
    });
    assert!(n <= BOUND, "RwLock::write: {n}");
}

/// A yield is a `Pending` with the task woken, before anything was queued: the
/// semaphore is untouched and the next poll completes.
#[test]
fn a_yield_takes_nothing_and_wakes_the_task() {
    let sem = Semaphore::new(1);
    let woken = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    struct Count(Arc<std::sync::atomic::AtomicUsize>);
    impl std::task::Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }
    let waker = std::task::Waker::from(Arc::new(Count(woken.clone())));
    let mut cx = Context::from_waker(&waker);
    let mut yields = 0;
    for _ in 0..1000 {
        let mut acquire = pin!(sem.acquire(1));
        loop {
            match acquire.as_mut().poll(&mut cx) {
                Poll::Ready(p) => {
                    drop(p.unwrap());
                    break;
                }
                Poll::Pending => {
                    yields += 1;
                    assert_eq!(sem.available_permits(), 1, "a yield took no permit");
                }
            }
        }
    }
    // Outside tokio only the grant budget applies: one yield per 128 grants.
    assert!(
        (7..=8).contains(&yields),
        "{yields} yields in 1000 acquires"
    );
    assert_eq!(woken.load(std::sync::atomic::Ordering::SeqCst), yields);
}

/// A queued request never yields away its place: once the grant arrived, the
/// next poll returns it even when the budget is spent.
#[test]
fn a_granted_request_is_returned_even_with_the_budget_spent() {
    let sem = Semaphore::new(1);
    let held = sem.try_acquire(1).unwrap();
    let mut queued = pin!(sem.acquire(1));
    let mut cx = Context::from_waker(noop_waker_ref());
    assert!(queued.as_mut().poll(&mut cx).is_pending());
    // Spend the thread's grant budget on other immediate acquires.
    let other = Semaphore::new(1);
    for _ in 0..200 {
        let mut a = pin!(other.acquire(1));
        while a.as_mut().poll(&mut cx).is_pending() {}
    }
    drop(held);
    assert!(queued.as_mut().poll(&mut cx).is_ready());
}

/// Spends this thread's grant budget: immediate acquires on a semaphore of its
/// own, so the next acquire start would yield if it could complete at once.
fn spend_the_grant_budget(cx: &mut Context<'_>) {
    let other = Semaphore::new(1);
    let mut grants = 0;
    while grants < 128 {
        let mut a = pin!(other.acquire(1));
        if let Poll::Ready(p) = a.as_mut().poll(cx) {
            drop(p.unwrap());
            grants += 1;
        }
    }
}

/// Only an acquire that would complete at once may yield. One that must wait
/// queues at its first poll, whatever the budget says: otherwise a request
/// made after it is queued first and served first (issue 26, item 1).
#[test]
fn a_request_that_must_wait_queues_at_its_first_poll_even_with_the_budget_spent() {
    let sem = Semaphore::new(1);
    let held = sem.try_acquire(1).unwrap();
    let mut cx = Context::from_waker(noop_waker_ref());
    spend_the_grant_budget(&mut cx);
    let mut first = pin!(sem.acquire(1));
    assert!(first.as_mut().poll(&mut cx).is_pending());
    let mut second = pin!(sem.acquire(1));
    assert!(second.as_mut().poll(&mut cx).is_pending());
    drop(held);
    assert!(
        second.as_mut().poll(&mut cx).is_pending(),
        "the later request was served first"
    );
    assert!(first.as_mut().poll(&mut cx).is_ready());
}

/// The same through `Mutex::lock`, with tokio's own task budget spent
/// (a port of tokio's `mutex_fifo_with_coop_budget` idea: the budget runs out,
/// then two tasks queue on a held lock and must get it in order).
#[cfg(feature = "tokio")]
#[test]
fn mutex_stays_fifo_when_the_tokio_budget_is_spent() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        let m = Mutex::new(());
        let guard = m.lock().await;
        // Spend the task's tokio budget (without touching the grant budget)
        // on a tokio resource that is always ready.
        let tsem = tokio::sync::Semaphore::new(1);
        while tokio::task::coop::has_budget_remaining() {
            drop(tsem.acquire().await.unwrap());
        }
        let mut first = pin!(m.lock());
        let mut second = pin!(m.lock());
        std::future::poll_fn(|cx| {
            assert!(first.as_mut().poll(cx).is_pending());
            assert!(second.as_mut().poll(cx).is_pending());
            Poll::Ready(())
        })
        .await;
        drop(guard);
        // Each round polls the later request first: a request that yielded
        // instead of queueing would take the lock ahead of the earlier one.
        let granted = std::future::poll_fn(|cx| {
            let second = second.as_mut().poll(cx).is_ready();
            let first = first.as_mut().poll(cx).is_ready();
            if first || second {
                Poll::Ready((first, second))
            } else {
                Poll::Pending
            }
        })
        .await;
        assert_eq!(
            granted,
            (true, false),
            "(first, second) granted: FIFO lost to the coop budget"
        );
    });
}
