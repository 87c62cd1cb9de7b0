//! Waiting allocates nothing on the polling thread: the Redis waiter lives
//! inside the `acquire` future (`volt_sem::raw::Wait`), not in an `Arc` per
//! wait. A counting global allocator checks it (as the core's `alloc.rs`);
//! the door thread's own work (scripts, replies) is not counted.

mod support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::task::noop_waker_ref;
use support::{connect, eventually, Server};
use volt_sem_redis::RedisSemaphore;

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

/// One contended async wait of `b` while `a` holds the permit: queued,
/// granted when `a` releases, collected. Returns the allocations made on
/// this thread by `b`'s future (creating and polling it; once complete,
/// its drop does nothing).
fn one_wait(a: &RedisSemaphore, b: &RedisSemaphore, cx: &mut Context<'_>) -> usize {
    let held = a.acquire_blocking(1).unwrap();
    let mut counted = 0;
    let before = allocs();
    let mut fut = pin!(b.acquire(1));
    assert!(fut.as_mut().poll(cx).is_pending());
    counted += allocs() - before;
    eventually("b queued", Duration::from_secs(10), || {
        a.census().unwrap().queued == 1
    });
    drop(held);
    let deadline = Instant::now() + Duration::from_secs(10);
    let permit = loop {
        let before = allocs();
        let r = fut.as_mut().poll(cx);
        counted += allocs() - before;
        match r {
            Poll::Ready(r) => break r.unwrap(),
            Poll::Pending if Instant::now() < deadline => std::thread::yield_now(),
            Poll::Pending => panic!("the grant never came"),
        }
    };
    drop(permit);
    eventually("released", Duration::from_secs(10), || {
        a.census().unwrap().available == 1
    });
    counted
}

#[test]
fn a_contended_async_wait_allocates_nothing() {
    let s = Server::start();
    let a = connect(&s, "alloc", 1);
    let b = connect(&s, "alloc", 1);
    let mut cx = Context::from_waker(noop_waker_ref());
    one_wait(&a, &b, &mut cx); // warms the handle's table and door queue
    let counted: usize = (0..20).map(|_| one_wait(&a, &b, &mut cx)).sum();
    assert_eq!(counted, 0, "heap allocations by contended async waits");
}
