//! Waiting allocates nothing: the queue node lives in the future (async) or on
//! the waiting thread's stack (blocking). A counting global allocator checks it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::task::noop_waker_ref;
use volt_sem::Semaphore;

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

#[test]
fn a_contended_async_wait_allocates_nothing() {
    let sem = Semaphore::new(1);
    let mut cx = Context::from_waker(noop_waker_ref());
    let before = allocs();
    for _ in 0..100 {
        let held = sem.try_acquire(1).unwrap();
        let mut first = pin!(sem.acquire(2));
        let mut second = pin!(sem.acquire(1));
        assert!(first.as_mut().poll(&mut cx).is_pending());
        assert!(second.as_mut().poll(&mut cx).is_pending());
        drop(held); // partial grant to `first`
        assert!(first.as_mut().poll(&mut cx).is_pending());
        sem.release(1).unwrap(); // completes `first`
        let Poll::Ready(Ok(p)) = first.as_mut().poll(&mut cx) else {
            panic!()
        };
        drop(p); // completes `second`, surplus to the counter
        let Poll::Ready(Ok(p)) = second.as_mut().poll(&mut cx) else {
            panic!()
        };
        drop(p);
        sem.release(1).unwrap();
        sem.try_acquire(2).unwrap().forget();
    }
    assert_eq!(
        allocs() - before,
        0,
        "heap allocations during contended waits"
    );
    let boxed = Box::new(0u8); // the counter itself works
    assert_eq!(allocs() - before, 1);
    drop(boxed);
}

#[test]
fn a_blocking_wait_allocates_nothing_on_the_waiting_thread() {
    let sem = Arc::new(Semaphore::new(0));
    let s2 = sem.clone();
    let waiter = std::thread::spawn(move || {
        let _ = std::thread::current(); // the thread handle is created lazily once
        let before = allocs();
        for _ in 0..50 {
            s2.acquire_blocking(2).unwrap().forget();
        }
        allocs() - before
    });
    for _ in 0..100 {
        sem.release(1).unwrap();
        std::thread::yield_now();
    }
    assert_eq!(waiter.join().unwrap(), 0);
}
