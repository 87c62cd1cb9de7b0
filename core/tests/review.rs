//! Adversarial tests of the public contract (an independent review): wakers
//! that re-enter the semaphore, long chains, limits, timeouts, conservation.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::task::{Context, Wake, Waker};

use volt_sem::{Acquire, Semaphore};

type Slot = Mutex<Option<Pin<Box<Acquire<'static>>>>>;

/// A waker that, when woken, drops the acquire future it belongs to (a
/// cancel right after the grant, from inside its own waker).
struct DropOnWake {
    slots: Arc<Vec<Slot>>,
    i: usize,
    dropped: Arc<AtomicUsize>,
}

impl Wake for DropOnWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        let fut = self.slots[self.i].lock().unwrap().take();
        if fut.is_some() {
            self.dropped.fetch_add(1, SeqCst);
        }
        drop(fut); // granted, unobserved: hands the permit on to the next waiter
    }
}

#[test]
fn a_long_chain_of_futures_dropped_inside_their_wakers_uses_bounded_stack() {
    const N: usize = if cfg!(miri) { 100 } else { 20_000 };
    static SEM: Semaphore = Semaphore::const_new(0);
    let sem: &'static Semaphore = &SEM;
    let slots: Arc<Vec<Slot>> = Arc::new((0..N).map(|_| Mutex::new(None)).collect());
    let dropped = Arc::new(AtomicUsize::new(0));
    for i in 0..N {
        let mut fut = Box::pin(sem.acquire(1));
        let waker = Waker::from(Arc::new(DropOnWake {
            slots: slots.clone(),
            i,
            dropped: dropped.clone(),
        }));
        assert!(fut
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_pending());
        *slots[i].lock().unwrap() = Some(fut);
    }
    // A small stack, as a binding's or musl's thread may have: the release must
    // not recurse once per waiter.
    std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || sem.release(1).unwrap())
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(dropped.load(SeqCst), N);
    assert_eq!(sem.available_permits(), 1);
}

/// A waker that polls its own future inline when woken (an executor that runs
/// a task on the waking thread) and drops the permit it gets at once.
struct PollOnWake {
    slots: Arc<Vec<Slot>>,
    i: usize,
    got: Arc<AtomicUsize>,
    me: Mutex<Option<Waker>>,
}

impl Wake for PollOnWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        let waker = self.me.lock().unwrap().clone().unwrap();
        let mut slot = self.slots[self.i].lock().unwrap();
        let Some(fut) = slot.as_mut() else { return };
        if let std::task::Poll::Ready(permit) = fut.as_mut().poll(&mut Context::from_waker(&waker))
        {
            *slot = None;
            drop(slot);
            self.got.fetch_add(1, SeqCst);
            drop(permit.unwrap()); // releases to the next waiter, from inside this waker
        }
    }
}

#[test]
fn a_long_chain_of_inline_polling_wakers_uses_bounded_stack() {
    const N: usize = if cfg!(miri) { 100 } else { 20_000 };
    static SEM: Semaphore = Semaphore::const_new(0);
    let sem: &'static Semaphore = &SEM;
    let slots: Arc<Vec<Slot>> = Arc::new((0..N).map(|_| Mutex::new(None)).collect());
    let got = Arc::new(AtomicUsize::new(0));
    let mut wakers = Vec::new();
    for i in 0..N {
        let w = Arc::new(PollOnWake {
            slots: slots.clone(),
            i,
            got: got.clone(),
            me: Mutex::new(None),
        });
        let waker = Waker::from(w.clone());
        *w.me.lock().unwrap() = Some(waker.clone());
        let mut fut = Box::pin(sem.acquire(1 + i % 3));
        assert!(fut
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_pending());
        *slots[i].lock().unwrap() = Some(fut);
        wakers.push(w);
    }
    std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || sem.release(3).unwrap())
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(got.load(SeqCst), N);
    assert_eq!(sem.available_permits(), 3);
    for w in &wakers {
        w.me.lock().unwrap().take(); // break the cycles
    }
}

struct CloseOnWake(&'static Semaphore, AtomicUsize);
impl Wake for CloseOnWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.1.fetch_add(1, SeqCst);
        self.0.close();
    }
}

#[test]
fn close_from_a_waker_during_a_release_spanning_many_batches_conserves_permits() {
    static SEM: Semaphore = Semaphore::const_new(0);
    let sem: &'static Semaphore = &SEM;
    let woken = Arc::new(CloseOnWake(sem, AtomicUsize::new(0)));
    let waker = Waker::from(woken.clone());
    let mut futs: Vec<_> = (0..200).map(|i| Box::pin(sem.acquire(1 + i % 2))).collect();
    for f in &mut futs {
        assert!(f
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_pending());
    }
    // Enough for the first 100 or so; the first wake closes the semaphore.
    sem.release(150).unwrap();
    let mut held = 0;
    let mut closed = 0;
    for f in &mut futs {
        match f.as_mut().poll(&mut Context::from_waker(&waker)) {
            std::task::Poll::Ready(Ok(p)) => {
                held += p.num_permits();
                p.forget();
            }
            std::task::Poll::Ready(Err(_)) => closed += 1,
            std::task::Poll::Pending => panic!("a waiter left pending after close"),
        }
    }
    assert!(closed > 0);
    assert_eq!(woken.1.load(SeqCst), 200);
    assert_eq!(sem.available_permits() + held, 150);
}

#[test]
fn wakers_that_drop_their_futures_on_several_releasing_threads_conserve_permits() {
    const N: usize = if cfg!(miri) { 40 } else { 4_000 };
    static SEM: Semaphore = Semaphore::const_new(0);
    let sem: &'static Semaphore = &SEM;
    let slots: Arc<Vec<Slot>> = Arc::new((0..N).map(|_| Mutex::new(None)).collect());
    let dropped = Arc::new(AtomicUsize::new(0));
    for i in 0..N {
        let mut fut = Box::pin(sem.acquire(1 + i % 3));
        let waker = Waker::from(Arc::new(DropOnWake {
            slots: slots.clone(),
            i,
            dropped: dropped.clone(),
        }));
        assert!(fut
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_pending());
        *slots[i].lock().unwrap() = Some(fut);
    }
    // Four threads release one permit each, at once: the chains of wakers run
    // on whichever thread's release reaches them, each with its own queue.
    let threads: Vec<_> = (0..4)
        .map(|_| {
            std::thread::Builder::new()
                .stack_size(256 * 1024)
                .spawn(move || sem.release(1).unwrap())
                .unwrap()
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(dropped.load(SeqCst), N);
    assert_eq!(sem.available_permits(), 4);
}

#[test]
fn select_between_two_acquires_on_a_multi_thread_runtime_conserves_permits() {
    // The loser of each select is dropped, often right after its grant (both
    // were queued; one release may complete both): its permits must go on.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    let sem = Arc::new(Semaphore::new(3));
    let rounds = if cfg!(miri) { 5 } else { 2_000 };
    rt.block_on(async {
        let tasks: Vec<_> = (0..6)
            .map(|t| {
                let sem = sem.clone();
                tokio::spawn(async move {
                    for i in 0..rounds {
                        let (a, b) = (1 + (i + t) % 3, 1 + (i * 7 + t) % 3);
                        let permit = tokio::select! {
                            p = sem.acquire(a) => p.unwrap(),
                            p = sem.acquire(b) => p.unwrap(),
                        };
                        if i % 3 == 0 {
                            tokio::task::yield_now().await;
                        }
                        drop(permit);
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
    });
    assert_eq!(sem.available_permits(), 3);
    if !cfg!(miri) {
        // `inspect` asks the host name: not under Miri.
        let i = sem.inspect();
        assert_eq!((i.total, i.held(), i.waiters.len()), (3, 0, 0));
    }
}

/// A task waker that, when woken, finishes a raw waiter of the same task (a
/// binding's select between a Rust future and a raw request: the winner's
/// wake cancels the other).
struct FinishOnWake {
    sem: &'static Semaphore,
    other: *const volt_sem::Waiter,
    outcome: Mutex<Option<volt_sem::Finish>>,
}
// SAFETY: `other` points to a pinned waiter that outlives the waker's use.
unsafe impl Send for FinishOnWake {}
// SAFETY: as above.
unsafe impl Sync for FinishOnWake {}

impl Wake for FinishOnWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        use volt_sem::raw::RawSemaphore;
        // SAFETY: the waiter is pinned and queued on `sem` (or done).
        let out = unsafe { self.sem.finish_raw(Pin::new_unchecked(&*self.other)) };
        *self.outcome.lock().unwrap() = Some(out);
    }
}

unsafe extern "C" fn count_call(ctx: *mut std::ffi::c_void) {
    // SAFETY: `ctx` is the counter below, alive until the waiter is finished.
    unsafe { &*(ctx as *const AtomicUsize) }.fetch_add(1, SeqCst);
}

#[test]
fn a_waker_may_finish_a_raw_sibling_completed_by_the_same_release() {
    use volt_sem::raw::RawSemaphore;
    use volt_sem::{Finish, RawAcquire, Waiter};
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        static SEM: Semaphore = Semaphore::const_new(0);
        let sem: &'static Semaphore = &SEM;
        let raw = Box::pin(Waiter::new());
        let calls = AtomicUsize::new(0);
        let probe = Arc::new(FinishOnWake {
            sem,
            other: &*raw,
            outcome: Mutex::new(None),
        });
        let waker = Waker::from(probe.clone());
        let mut fut = Box::pin(sem.acquire(1)); // first in the queue
        assert!(fut
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_pending());
        let ctx = &calls as *const AtomicUsize as *mut std::ffi::c_void;
        // SAFETY: pinned; finished (by the waker) before it goes away.
        let r = unsafe { sem.acquire_raw(raw.as_ref(), 1, count_call, ctx) };
        assert_eq!(r, Ok(RawAcquire::Pending));
        sem.release(2).unwrap(); // completes both: the future's waker finishes the raw one
        let out = probe.outcome.lock().unwrap().take();
        assert_eq!(out, Some(Finish::Granted));
        assert_eq!(
            calls.load(SeqCst),
            0,
            "a sibling taken is never called back"
        );
        sem.release(1).unwrap(); // the raw waiter's permit, owned by the finisher
        let permit = match fut.as_mut().poll(&mut Context::from_waker(&waker)) {
            std::task::Poll::Ready(p) => p.unwrap(),
            std::task::Poll::Pending => panic!("granted"),
        };
        drop(permit);
        // SAFETY: finished above.
        assert_eq!(unsafe { sem.finish_raw(raw.as_ref()) }, Finish::Idle);
        tx.send(sem.available_permits()).unwrap();
    });
    let available = rx
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("finish_raw of a sibling from inside a waker hung");
    assert_eq!(available, 2);
}

/// A waker whose drop finishes a raw waiter (the last clone of a task's
/// waker going away cancels the task's other request).
struct FinishOnDrop {
    sem: &'static Semaphore,
    other: *const volt_sem::Waiter,
    outcome: Arc<Mutex<Option<volt_sem::Finish>>>,
}
// SAFETY: as `FinishOnWake`.
unsafe impl Send for FinishOnDrop {}
// SAFETY: as above.
unsafe impl Sync for FinishOnDrop {}

impl Wake for FinishOnDrop {
    fn wake(self: Arc<Self>) {}
}

impl Drop for FinishOnDrop {
    fn drop(&mut self) {
        use volt_sem::raw::RawSemaphore;
        // SAFETY: the waiter is pinned and queued on `sem` (or done).
        let out = unsafe { self.sem.finish_raw(Pin::new_unchecked(&*self.other)) };
        *self.outcome.lock().unwrap() = Some(out);
    }
}

#[test]
fn a_waker_dropped_by_a_cancel_may_finish_the_waiter_the_cancel_completed() {
    use volt_sem::raw::RawSemaphore;
    use volt_sem::{Finish, RawAcquire, Waiter};
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        static SEM: Semaphore = Semaphore::const_new(0);
        let sem: &'static Semaphore = &SEM;
        let raw = Box::pin(Waiter::new());
        let calls = AtomicUsize::new(0);
        let outcome = Arc::new(Mutex::new(None));
        let waker = Waker::from(Arc::new(FinishOnDrop {
            sem,
            other: &*raw,
            outcome: outcome.clone(),
        }));
        let mut fut = Box::pin(sem.acquire(2)); // the head
        assert!(fut
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_pending());
        drop(waker); // the queued request holds the last clone
        let ctx = &calls as *const AtomicUsize as *mut std::ffi::c_void;
        // SAFETY: pinned; finished (by the waker's drop) before it goes away.
        let r = unsafe { sem.acquire_raw(raw.as_ref(), 1, count_call, ctx) };
        assert_eq!(r, Ok(RawAcquire::Pending));
        sem.release(1).unwrap(); // a partial grant to the head
        drop(fut); // cancels: its permit completes the raw waiter, then its waker drops
        assert_eq!(outcome.lock().unwrap().take(), Some(Finish::Granted));
        assert!(calls.load(SeqCst) <= 1, "called back at most once");
        sem.release(1).unwrap(); // the raw waiter's permit, owned by the finisher
        tx.send(sem.available_permits()).unwrap();
    });
    let available = rx
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("finish_raw from the drop of a cancelled future's waker hung");
    assert_eq!(available, 1);
}
