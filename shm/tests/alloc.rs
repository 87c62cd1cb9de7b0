//! Waiting allocates nothing on the polling thread: the shm waiter lives
//! inside the `acquire` future (`volt_sem::raw::Wait`), not in an `Arc` per
//! wait. A counting global allocator checks it (as the core's `alloc.rs`).

mod support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::task::noop_waker_ref;
use support::Name;
use volt_sem_shm::{OpenOptions, SharedSemaphore};

struct Counting;

thread_local! {
    static ALLOCS: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: forwards to the system allocator; only counts, per thread.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocs() -> usize {
    ALLOCS.with(Cell::get)
}

/// One contended async wait: queued, granted by a release of this thread
/// (delivered by the doorbell thread), collected. Returns the allocations
/// made on this thread by the future (creating and polling it; once
/// complete, its drop does nothing).
fn one_wait(sem: &SharedSemaphore, cx: &mut Context<'_>) -> usize {
    sem.try_acquire(2).unwrap().forget();
    let mut counted = 0;
    let before = allocs();
    let mut fut = pin!(sem.acquire(2));
    assert!(fut.as_mut().poll(cx).is_pending());
    counted += allocs() - before;
    sem.release(2).unwrap(); // the doorbell thread completes the waiter
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let before = allocs();
        let r = fut.as_mut().poll(cx);
        counted += allocs() - before;
        match r {
            Poll::Ready(r) => break r.unwrap().forget(),
            Poll::Pending if Instant::now() < deadline => std::thread::yield_now(),
            Poll::Pending => panic!("the grant never came"),
        }
    }
    sem.release(2).unwrap();
    counted
}

#[test]
fn a_contended_async_wait_allocates_nothing() {
    let name = Name::new("alloc");
    let sem = SharedSemaphore::open(&name, 2, OpenOptions::new()).unwrap();
    let mut cx = Context::from_waker(noop_waker_ref());
    one_wait(&sem, &mut cx); // starts the doorbell thread, claims a lane
    let counted: usize = (0..50).map(|_| one_wait(&sem, &mut cx)).sum();
    assert_eq!(counted, 0, "heap allocations by contended async waits");
    let boxed = Box::new(0u8); // the counter itself works
    assert!(allocs() > 0);
    drop(boxed);
}
