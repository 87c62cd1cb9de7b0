//! The waiting protocol of `volt_sem::raw` on its own, over a toy backend (a
//! `Vec` behind a mutex) built from the public toolkit only, as the
//! shared-memory and Redis crates build theirs: so that Miri
//! (`scripts/miri.sh`) checks the trampoline's pointer work and `finish`'s
//! paths without a semaphore around them.
#![cfg(not(volt_loom))]

use std::cell::{Cell, RefCell};
use std::ffi::c_void;
use std::future::Future;
use std::pin::{pin, Pin};
use std::ptr::{self, NonNull};
use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::task::{Context, Poll, Waker};

use volt_sem::raw::{
    current_backend, deliver, finish, phase, Backend, CancelWith, Node, RawSemaphore, RawWait, Wait,
};
use volt_sem::{Finish, RawAcquire, WakeFn};

struct ToyWaiter {
    node: Node,
}

/// A backend whose queue is a list of waiters; `complete` claims them all.
struct Toy {
    backend: Backend,
    queue: Mutex<Vec<*const ToyWaiter>>,
}

impl Toy {
    fn new(backend: Backend) -> Self {
        Toy {
            backend,
            queue: Mutex::new(Vec::new()),
        }
    }

    fn waiter(&self) -> ToyWaiter {
        ToyWaiter {
            node: Node::new(self.backend),
        }
    }

    /// # Safety
    /// `w` is idle and stays put until `finish` returned; `ctx` valid for `wake`.
    unsafe fn enqueue(&self, w: &ToyWaiter, wake: WakeFn, ctx: *mut c_void) {
        // SAFETY: idle (contract): nobody else sees the node.
        unsafe { w.node.set_callback(wake, ctx) };
        let mut q = self.queue.lock().unwrap();
        w.node.set_phase(phase::WAITING, Ordering::Release);
        q.push(w);
    }

    /// Claims every queued waiter under the lock, delivers them after it.
    fn complete(&self, granted: bool) {
        let claimed: Vec<NonNull<Node>> = {
            let mut q = self.queue.lock().unwrap();
            q.drain(..)
                .map(|w| {
                    // SAFETY: queued waiters are valid until finished.
                    let w = unsafe { &*w };
                    w.node
                        .set_phase(phase::notifying(granted), Ordering::Release);
                    NonNull::from(&w.node)
                })
                .collect()
        };
        // SAFETY: claimed just above, the lock released.
        unsafe { deliver(claimed) };
    }

    fn cancel(&self, w: &ToyWaiter) -> Option<Finish> {
        let mut q = self.queue.lock().unwrap();
        let i = q.iter().position(|&p| ptr::eq(p, w))?;
        q.remove(i);
        w.node.set_phase(phase::IDLE, Ordering::Relaxed);
        Some(Finish::Cancelled { returned: 0 })
    }

    /// # Safety
    /// `w` is idle or queued here.
    unsafe fn finish(&self, w: &ToyWaiter) -> Finish {
        // SAFETY: forwarded contract.
        unsafe { finish(&w.node, CancelWith(|| self.cancel(w))) }
    }
}

/// What a callback does, and what it saw.
#[derive(Default)]
struct Probe<'a> {
    calls: Cell<u32>,
    log: Option<&'a RefCell<Vec<&'static str>>>,
    name: &'static str,
    run: Option<Box<dyn Fn() + 'a>>,
}

unsafe extern "C" fn probe(ctx: *mut c_void) {
    // SAFETY: every test passes a `Probe` that outlives the waiter's finish.
    let p = unsafe { &*(ctx as *const Probe) };
    p.calls.set(p.calls.get() + 1);
    if let Some(log) = p.log {
        log.borrow_mut().push(p.name);
    }
    if let Some(run) = &p.run {
        run();
    }
    if let Some(log) = p.log {
        log.borrow_mut().push("/");
    }
}

fn ctx(p: &Probe) -> *mut c_void {
    p as *const Probe as *mut c_void
}

#[test]
fn a_queued_waiter_is_cancelled_through_its_backend() {
    let toy = Toy::new(Backend::Local);
    let w = toy.waiter();
    let p = Probe::default();
    // SAFETY: `w` and `p` outlive the finish below.
    unsafe { toy.enqueue(&w, probe, ctx(&p)) };
    assert!(w.node.is_busy());
    // SAFETY: queued on `toy`.
    assert_eq!(unsafe { toy.finish(&w) }, Finish::Cancelled { returned: 0 });
    assert_eq!(p.calls.get(), 0);
    assert!(!w.node.is_busy());
    // SAFETY: idle.
    assert_eq!(unsafe { toy.finish(&w) }, Finish::Idle);
}

#[test]
fn a_completed_waiter_is_called_back_once_then_finished() {
    let toy = Toy::new(Backend::Shared);
    let w = toy.waiter();
    let p = Probe::default();
    // SAFETY: `w` and `p` outlive the finishes below.
    unsafe { toy.enqueue(&w, probe, ctx(&p)) };
    toy.complete(false);
    assert_eq!(p.calls.get(), 1);
    assert_eq!(w.node.phase(Ordering::Acquire), phase::CLOSED);
    assert!(!w.node.is_busy());
    // SAFETY: queued on `toy` (complete).
    assert_eq!(unsafe { toy.finish(&w) }, Finish::Closed);
    // SAFETY: idle.
    assert_eq!(unsafe { toy.finish(&w) }, Finish::Idle);
}

#[test]
fn callbacks_never_nest_across_backends_and_run_in_order() {
    let (local, redis) = (Toy::new(Backend::Local), Toy::new(Backend::Redis));
    let (a, b) = (local.waiter(), redis.waiter());
    let log = RefCell::new(Vec::new());
    let inner = Probe {
        log: Some(&log),
        name: "b",
        run: Some(Box::new(|| {
            assert!(b.node.in_own_callback() && !a.node.in_own_callback());
            assert_eq!(current_backend(), Some(Backend::Redis));
        })),
        ..Probe::default()
    };
    let outer = Probe {
        log: Some(&log),
        name: "a",
        run: Some(Box::new(|| {
            assert_eq!(current_backend(), Some(Backend::Local));
            redis.complete(true); // b's callback must wait for ours to return
            assert!(b.node.callback_pending_here());
        })),
        ..Probe::default()
    };
    // SAFETY: waiters and probes outlive the finishes below.
    unsafe {
        local.enqueue(&a, probe, ctx(&outer));
        redis.enqueue(&b, probe, ctx(&inner));
    }
    local.complete(true);
    assert_eq!(*log.borrow(), ["a", "/", "b", "/"]);
    assert_eq!(current_backend(), None);
    // SAFETY: queued on their toys.
    unsafe {
        assert_eq!(local.finish(&a), Finish::Granted);
        assert_eq!(redis.finish(&b), Finish::Granted);
    }
}

#[test]
fn a_callback_consumes_its_own_outcome_and_takes_a_pending_sibling() {
    let toy = Toy::new(Backend::Local);
    let (a, b) = (toy.waiter(), toy.waiter());
    let seen = RefCell::new(Vec::new());
    let pb = Probe::default();
    let pa = Probe {
        run: Some(Box::new(|| {
            // SAFETY: both queued on `toy`; inside a's callback.
            unsafe {
                seen.borrow_mut().push(toy.finish(&a));
                seen.borrow_mut().push(toy.finish(&a)); // consumed already
                seen.borrow_mut().push(toy.finish(&b)); // sibling, pending here
            }
            assert_eq!(a.node.phase(Ordering::Relaxed), phase::NOTIFYING_CONSUMED);
        })),
        ..Probe::default()
    };
    // SAFETY: waiters and probes outlive the finishes below.
    unsafe {
        toy.enqueue(&a, probe, ctx(&pa));
        toy.enqueue(&b, probe, ctx(&pb));
    }
    toy.complete(true);
    assert_eq!(
        *seen.borrow(),
        [Finish::Granted, Finish::Idle, Finish::Granted]
    );
    assert_eq!(pb.calls.get(), 0, "a taken sibling is never called back");
    assert!(!a.node.is_busy() && !b.node.is_busy());
    // SAFETY: idle.
    unsafe { assert_eq!(toy.finish(&a), Finish::Idle) };
}

// SAFETY: `enqueue` queues the waiter's node, `complete` delivers it through
// the trampoline, `finish` is `raw::finish`.
unsafe impl RawSemaphore for Toy {
    type Waiter = ToyWaiter;
    type Error = ();
    type Finish = Finish;

    unsafe fn acquire_raw(
        &self,
        waiter: Pin<&ToyWaiter>,
        _n: usize,
        wake: WakeFn,
        ctx: *mut c_void,
    ) -> Result<RawAcquire, ()> {
        // SAFETY: forwarded contract.
        unsafe { self.enqueue(&waiter, wake, ctx) };
        Ok(RawAcquire::Pending)
    }

    unsafe fn finish_raw(&self, waiter: Pin<&ToyWaiter>) -> Finish {
        // SAFETY: forwarded contract.
        unsafe { self.finish(&waiter) }
    }

    fn owns(&self, _waiter: &ToyWaiter) -> bool {
        true
    }
}

// SAFETY: `node` is the waiter's node, which `enqueue` queues.
unsafe impl RawWait for Toy {
    type Output<'a> = Finish;

    fn new_waiter() -> ToyWaiter {
        ToyWaiter {
            node: Node::new(Backend::Local),
        }
    }

    fn node(waiter: &ToyWaiter) -> &Node {
        &waiter.node
    }

    fn immediate(&self, n: usize) -> Option<Finish> {
        (n == 0).then_some(Finish::Granted)
    }

    fn answered(&self, _waiter: &ToyWaiter, _n: usize, r: Result<(), ()>) -> Finish {
        r.map_or(Finish::Closed, |()| Finish::Granted)
    }

    fn finished(&self, _waiter: &ToyWaiter, _n: usize, finish: Finish) -> Finish {
        finish
    }

    fn abandoned(&self, _waiter: &ToyWaiter, _n: usize, _finish: Finish) {}
}

#[test]
fn the_wait_future_holds_its_waiter_and_cancels_on_drop() {
    let toy = Toy::new(Backend::Local);
    let mut cx = Context::from_waker(Waker::noop());
    let mut fut = pin!(Wait::new(&toy, 1));
    assert!(fut.as_mut().poll(&mut cx).is_pending());
    assert!(fut.is_queued() && fut.as_mut().poll(&mut cx).is_pending());
    toy.complete(true);
    assert_eq!(fut.as_mut().poll(&mut cx), Poll::Ready(Finish::Granted));
    {
        let mut dropped = pin!(Wait::new(&toy, 1));
        assert!(dropped.as_mut().poll(&mut cx).is_pending());
        assert_eq!(toy.queue.lock().unwrap().len(), 1);
    }
    assert!(toy.queue.lock().unwrap().is_empty(), "cancelled on drop");
    let mut zero = pin!(Wait::new(&toy, 0));
    assert_eq!(zero.as_mut().poll(&mut cx), Poll::Ready(Finish::Granted));
}

#[test]
fn a_wait_future_dropped_inside_its_own_waker_is_not_freed_while_busy() {
    // The task's waker drops the future it wakes (a `select` that cancels
    // the loser from inside `wake`, an executor that polls and drops inline).
    std::thread_local! {
        static FUT: RefCell<Option<Pin<Box<Wait<'static, Toy>>>>> = const { RefCell::new(None) };
    }
    struct DropTheFuture;
    impl std::task::Wake for DropTheFuture {
        fn wake(self: std::sync::Arc<Self>) {
            drop(FUT.with(|f| f.borrow_mut().take()));
        }
    }
    let owned = Box::new(Toy::new(Backend::Shared));
    // SAFETY: `owned` outlives every use: the future (the only other borrower)
    // is gone, as asserted, before it is dropped at the end.
    let toy: &'static Toy = unsafe { &*(&*owned as *const Toy) };
    let waker = Waker::from(std::sync::Arc::new(DropTheFuture));
    let mut fut = Box::pin(Wait::new(toy, 1));
    assert!(fut
        .as_mut()
        .poll(&mut Context::from_waker(&waker))
        .is_pending());
    FUT.with(|f| *f.borrow_mut() = Some(fut));
    toy.complete(true); // the callback wakes the task, whose waker drops the future
    assert!(FUT.with(|f| f.borrow().is_none()), "the waker ran");
    assert!(toy.queue.lock().unwrap().is_empty());
    drop(owned);
}

#[test]
fn a_wait_future_may_be_repolled_with_a_new_waker_whose_old_one_completes_it_on_drop() {
    // The old waker's last clone goes away when the future is polled with a
    // new one (it moved to another task); dropping it drops what it owned,
    // which may release the semaphore and so complete this very request.
    struct CompleteOnDrop(&'static Toy);
    // SAFETY: used on one thread only (a `Waker` must be `Send + Sync`).
    unsafe impl Send for CompleteOnDrop {}
    // SAFETY: as above.
    unsafe impl Sync for CompleteOnDrop {}
    impl std::task::Wake for CompleteOnDrop {
        fn wake(self: std::sync::Arc<Self>) {}
    }
    impl Drop for CompleteOnDrop {
        fn drop(&mut self) {
            self.0.complete(true);
        }
    }
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let owned = Box::new(Toy::new(Backend::Shared));
        // SAFETY: `owned` outlives every use: the future is done before it
        // is dropped at the end.
        let toy: &'static Toy = unsafe { &*(&*owned as *const Toy) };
        let old = Waker::from(std::sync::Arc::new(CompleteOnDrop(toy)));
        let out = {
            let mut fut = pin!(Wait::new(toy, 1));
            assert!(fut
                .as_mut()
                .poll(&mut Context::from_waker(&old))
                .is_pending());
            drop(old); // the future holds the last clone
            let new = Waker::noop();
            loop {
                if let Poll::Ready(out) = fut.as_mut().poll(&mut Context::from_waker(new)) {
                    break out;
                }
            }
        };
        drop(owned);
        tx.send(out).unwrap();
    });
    let out = rx
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("a Wait repolled with a new waker hung");
    assert_eq!(out, Finish::Granted);
}
