//! loom models: every interleaving (up to `LOOM_MAX_PREEMPTIONS`) of the shipped
//! algorithm. Run with `make test-loom`, i.e.
//! `RUSTFLAGS="--cfg volt_loom" cargo test -p volt-sem --release --test loom`.
//!
//! Each model ends by checking permit conservation; loom itself reports
//! deadlocks (a waiter that sleeps for ever), data races on lock-guarded fields,
//! and leaks.
#![cfg(volt_loom)]

use std::ffi::c_void;
use std::pin::Pin;
use volt_sem::raw::RawSemaphore;

use loom::cell::UnsafeCell;
use loom::future::block_on;
use loom::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use loom::sync::Arc;
use loom::thread;
use volt_sem::{AcquireError, Finish, RawAcquire, Semaphore, Waiter, WaiterState};

#[path = "support/loom_model.rs"]
mod loom_model;
use loom_model::model;

/// The context a raw waiter's callback writes to. The owner reads `data` with
/// exclusive access after `finish_raw`: if the callback could still be running
/// (hazard d), loom reports the race.
struct Ctx {
    calls: AtomicUsize,
    data: UnsafeCell<u32>,
}

impl Ctx {
    fn new() -> Arc<Ctx> {
        Arc::new(Ctx {
            calls: AtomicUsize::new(0),
            data: UnsafeCell::new(0),
        })
    }
    fn ptr(&self) -> *mut c_void {
        self as *const Ctx as *mut c_void
    }
    /// Called by the owner once `finish_raw` returned: exclusive access.
    fn calls_after_finish(&self) -> usize {
        self.data.with_mut(|d| unsafe { *d });
        self.calls.load(SeqCst)
    }
}

unsafe extern "C" fn record(ctx: *mut c_void) {
    let ctx = unsafe { &*(ctx as *const Ctx) };
    ctx.calls.fetch_add(1, SeqCst);
    ctx.data.with_mut(|d| unsafe { *d += 1 });
}

fn queue(sem: &Semaphore, waiter: Pin<&Waiter>, n: usize, ctx: &Arc<Ctx>) -> RawAcquire {
    unsafe { sem.acquire_raw(waiter, n, record, ctx.ptr()) }.unwrap()
}

#[test]
fn basic_acquire_release_two_tasks() {
    model(|| {
        let sem = Arc::new(Semaphore::new(1));
        let s2 = sem.clone();
        let t = thread::spawn(move || drop(block_on(s2.acquire(1)).unwrap()));
        drop(block_on(sem.acquire(1)).unwrap());
        t.join().unwrap();
        assert_eq!(sem.available_permits(), 1);
    });
}

/// Hazard (a): a lock-free release must never leave a waiter asleep beside a
/// free permit. Semaphore(1), two tasks, each acquires and releases: loom
/// reports a deadlock if a wake is lost.
#[test]
fn hazard_a_no_lost_wakeup_blocking() {
    model(|| {
        let sem = Arc::new(Semaphore::new(1));
        let s2 = sem.clone();
        let t = thread::spawn(move || drop(s2.acquire_blocking(1).unwrap()));
        drop(sem.acquire_blocking(1).unwrap());
        t.join().unwrap();
        assert_eq!(sem.available_permits(), 1);
    });
}

/// The lock-free release path racing a waiter that is about to park.
#[test]
fn lock_free_release_races_parking_waiter() {
    model(|| {
        let sem = Arc::new(Semaphore::new(0));
        let s2 = sem.clone();
        let t = thread::spawn(move || s2.acquire_blocking(2).unwrap().num_permits());
        sem.release(1).unwrap();
        sem.release(1).unwrap();
        assert_eq!(t.join().unwrap(), 2);
        assert_eq!(sem.available_permits(), 2);
    });
}

/// A thread blocked in `acquire_blocking` is woken by `close` racing a
/// partial grant: it ends `Closed` (its partial grant banked), never hangs,
/// and the thread handle the waiter carries is unparked after the lock.
#[test]
fn close_wakes_a_blocked_thread() {
    model(|| {
        let sem = Arc::new(Semaphore::new(0));
        let s2 = sem.clone();
        let t = thread::spawn(move || s2.acquire_blocking(2).map(|p| p.num_permits()));
        sem.release(1).unwrap();
        sem.close();
        match t.join().unwrap() {
            // Only 1 permit ever exists: a grant of 2 would be a bug.
            Ok(n) => panic!("granted {n} of a request for 2 with 1 released"),
            Err(e) => assert_eq!(e, volt_sem::AcquireError::Closed),
        }
        assert_eq!(sem.available_permits(), 1);
    });
}

#[test]
fn release_during_async_acquire() {
    model(|| {
        let sem = Arc::new(Semaphore::new(0));
        let s2 = sem.clone();
        let t = thread::spawn(move || {
            s2.release(2).unwrap();
        });
        let permit = block_on(sem.acquire(2)).unwrap();
        assert_eq!(sem.available_permits(), 0);
        drop(permit);
        t.join().unwrap();
        assert_eq!(sem.available_permits(), 2);
    });
}

#[test]
fn batch_of_weighted_acquires() {
    model(|| {
        let sem = Arc::new(Semaphore::new(3));
        let handles: Vec<_> = [2usize, 3]
            .into_iter()
            .map(|n| {
                let s = sem.clone();
                thread::spawn(move || drop(block_on(s.acquire(n)).unwrap()))
            })
            .collect();
        drop(block_on(sem.acquire(1)).unwrap());
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(sem.available_permits(), 3);
    });
}

/// Hazard (b): strict FIFO. A queued acquire(2) is complete before a later
/// acquire(1) gets anything, whatever the releases' interleaving.
#[test]
fn hazard_b_fifo_weighted() {
    model(|| {
        let sem = Arc::new(Semaphore::new(0));
        let big = Box::pin(Waiter::new());
        let small = Box::pin(Waiter::new());
        let (cb, cs) = (Ctx::new(), Ctx::new());
        assert_eq!(queue(&sem, big.as_ref(), 2, &cb), RawAcquire::Pending);
        assert_eq!(queue(&sem, small.as_ref(), 1, &cs), RawAcquire::Pending);
        let s2 = sem.clone();
        let t = thread::spawn(move || s2.release(1).unwrap());
        sem.release(1).unwrap();
        // Whatever happened so far: small is never served before big.
        if small.state() == WaiterState::Granted {
            assert_eq!(big.state(), WaiterState::Granted);
        }
        t.join().unwrap();
        assert_eq!(big.state(), WaiterState::Granted);
        assert_eq!(small.state(), WaiterState::Waiting);
        sem.release(1).unwrap();
        unsafe {
            assert_eq!(sem.finish_raw(big.as_ref()), Finish::Granted);
            assert_eq!(sem.finish_raw(small.as_ref()), Finish::Granted);
        }
        assert_eq!((cb.calls_after_finish(), cs.calls_after_finish()), (1, 1));
        sem.release(3).unwrap();
        assert_eq!(sem.available_permits(), 3);
    });
}

/// Hazards (c) and (d): cancel racing a partial release. The waiter is never
/// lost between "list" and "releaser"; its partial grant comes back; after
/// `finish_raw` the callback has run or never will (loom checks the `data`
/// access); no permit is lost.
#[test]
fn hazard_c_cancel_races_partial_release() {
    model(
        || match cancel_races_two_releases(|s| s.release(1).unwrap()) {
            (Finish::Granted, _, calls) => assert_eq!(calls, 1),
            (Finish::Cancelled { .. }, _, calls) => assert_eq!(calls, 0),
            (other, ..) => panic!("{other:?}"),
        },
    );
}

/// A waiter of 2 on `Semaphore(0)` finished (cancelled, or collected) by its
/// owner while another thread gives 1 permit twice through `release`. Checks
/// that no permit is lost (a grant's 2 are released again) and that a
/// cancel got back at most 2; returns the outcome, the context's `data`
/// (read with exclusive access once `finish_raw` returned: loom reports a
/// write still racing) and its callback's calls.
fn cancel_races_two_releases(release: fn(&Semaphore)) -> (Finish, u32, usize) {
    let sem = Arc::new(Semaphore::new(0));
    let waiter = Box::pin(Waiter::new());
    let ctx = Ctx::new();
    assert_eq!(queue(&sem, waiter.as_ref(), 2, &ctx), RawAcquire::Pending);
    let s2 = sem.clone();
    let t = thread::spawn(move || {
        release(&s2);
        release(&s2);
    });
    let outcome = unsafe { sem.finish_raw(waiter.as_ref()) };
    let data = ctx.data.with_mut(|d| unsafe { *d });
    let calls = ctx.calls.load(SeqCst);
    drop(waiter); // freeing is allowed now
    match outcome {
        Finish::Granted => sem.release(2).unwrap(), // the caller owned them
        Finish::Cancelled { returned } => assert!(returned <= 2),
        _ => {}
    }
    t.join().unwrap();
    assert_eq!(sem.available_permits(), 2);
    (outcome, data, calls)
}

/// `release_claiming` racing the cancel of a partly served waiter: the claim
/// runs on the releasing thread, under the queue lock, and writes the
/// waiter's context (as the Node binding's claim records the waiter's key);
/// once `finish_raw` returned `Granted` the owner reads it (loom reports the
/// race if the claim's write is not ordered before: the `GRANTED` store's
/// Release, the owner's Acquire). A claimed waiter is never called back; a
/// cancel gets back its partial grant; no permit is lost.
#[test]
fn release_claiming_races_cancel() {
    model(|| {
        let claimed = cancel_races_two_releases(|s| {
            let claim = &mut |_, c: *mut c_void| {
                // SAFETY: the context of a queued waiter, alive until finished.
                let c = unsafe { &*(c as *const Ctx) };
                c.data.with_mut(|d| unsafe { *d += 10 });
                true
            };
            unsafe { s.release_claiming(1, claim) }.unwrap();
        });
        match claimed {
            (Finish::Granted, data, calls) => assert_eq!((data, calls), (10, 0)),
            (Finish::Cancelled { returned }, data, calls) => {
                assert!(returned <= 1);
                assert_eq!((data, calls), (0, 0));
            }
            (other, ..) => panic!("{other:?}"),
        }
    });
}

/// Hazard (d): the callback's context is owned by the waiting side, which frees
/// it as soon as `finish_raw` returns, possibly while the releaser is still
/// inside the callback. loom reports the race if `finish_raw` could return
/// before the callback's last access to the context.
#[test]
fn hazard_d_context_freed_right_after_finish() {
    model(|| {
        let sem = Arc::new(Semaphore::new(0));
        let waiter = Box::pin(Waiter::new());
        let ctx = Ctx::new();
        assert_eq!(queue(&sem, waiter.as_ref(), 1, &ctx), RawAcquire::Pending);
        let s2 = sem.clone();
        let t = thread::spawn(move || s2.release(1).unwrap());
        // Wait for the decision, then finish and free at once.
        while waiter.state() == WaiterState::Waiting {
            thread::yield_now();
        }
        assert_eq!(unsafe { sem.finish_raw(waiter.as_ref()) }, Finish::Granted);
        assert_eq!(ctx.calls_after_finish(), 1);
        drop(waiter);
        drop(ctx);
        t.join().unwrap();
        sem.release(1).unwrap();
        assert_eq!(sem.available_permits(), 1);
    });
}

/// A dropped (cancelled) future racing a release: the permit is never lost,
/// whether the future was granted before the drop or not.
#[test]
fn cancel_future_races_release() {
    model(|| {
        let sem = Arc::new(Semaphore::new(0));
        let s2 = sem.clone();
        let t = thread::spawn(move || s2.release(1).unwrap());
        {
            let mut fut = Box::pin(sem.acquire(1));
            let waker = futures_noop_waker();
            let mut cx = std::task::Context::from_waker(&waker);
            let _ = fut.as_mut().poll(&mut cx); // may complete or queue
        } // dropped: a queued or granted-but-unseen request gives its permit back
        t.join().unwrap();
        assert_eq!(sem.available_permits(), 1);
    });
}

/// Two waiters cancelled concurrently: the first's partial grant goes to the
/// second if it is still queued, to the counter otherwise.
#[test]
fn concurrent_cancels_hand_partial_grant_on() {
    model(|| {
        let sem = Arc::new(Semaphore::new(1));
        let a = Arc::new(Box::pin(Waiter::new()));
        let b = Arc::new(Box::pin(Waiter::new()));
        let (ca, cb) = (Ctx::new(), Ctx::new());
        assert_eq!(
            queue(&sem, a.as_ref().as_ref(), 2, &ca),
            RawAcquire::Pending
        ); // holds 1
        assert_eq!(
            queue(&sem, b.as_ref().as_ref(), 1, &cb),
            RawAcquire::Pending
        );
        let (s2, b2) = (sem.clone(), b.clone());
        let t = thread::spawn(move || unsafe { s2.finish_raw(b2.as_ref().as_ref()) });
        let fa = unsafe { sem.finish_raw(a.as_ref().as_ref()) };
        let fb = t.join().unwrap();
        // a's partial grant went to b if b was still queued.
        let mut held = 0;
        if fa == Finish::Granted {
            held += 2;
        }
        if fb == Finish::Granted {
            held += 1;
        }
        assert!(matches!(fa, Finish::Cancelled { returned: 1 }));
        sem.release(held).unwrap();
        assert_eq!(sem.available_permits(), 1);
    });
}

#[test]
fn close_wakes_a_waiting_task() {
    model(|| {
        let sem = Arc::new(Semaphore::new(1));
        let s2 = sem.clone();
        let t = thread::spawn(move || block_on(s2.acquire(2)).map(|p| p.num_permits()));
        sem.close();
        let r = t.join().unwrap();
        assert_eq!(r, Err(AcquireError::Closed));
        assert_eq!(sem.available_permits(), 1); // the partial grant came back
    });
}

#[test]
fn concurrent_close() {
    model(|| {
        let sem = Arc::new(Semaphore::new(0));
        let waiter = Box::pin(Waiter::new());
        let ctx = Ctx::new();
        assert_eq!(queue(&sem, waiter.as_ref(), 1, &ctx), RawAcquire::Pending);
        let s2 = sem.clone();
        let t = thread::spawn(move || s2.close());
        sem.close();
        t.join().unwrap();
        assert_eq!(unsafe { sem.finish_raw(waiter.as_ref()) }, Finish::Closed);
        assert_eq!(ctx.calls_after_finish(), 1);
    });
}

/// A semaphore of 1 with a head queued for 2, and two threads racing what
/// the model does next: a tail's `acquire_raw(1)` (behind the head: it links
/// without writing the state word) and `close`.
struct TailRace {
    sem: Arc<Semaphore>,
    head: Pin<Box<Waiter>>,
    tail: Arc<Pin<Box<Waiter>>>,
    chead: Arc<Ctx>,
    ctail: Arc<Ctx>,
    t1: thread::JoinHandle<Result<RawAcquire, AcquireError>>,
    t2: thread::JoinHandle<()>,
}

fn tail_races_close() -> TailRace {
    let sem = Arc::new(Semaphore::new(1));
    let (head, tail) = (Box::pin(Waiter::new()), Arc::new(Box::pin(Waiter::new())));
    let (chead, ctail) = (Ctx::new(), Ctx::new());
    assert_eq!(queue(&sem, head.as_ref(), 2, &chead), RawAcquire::Pending);
    let (s1, w1, c1) = (sem.clone(), tail.clone(), ctail.clone());
    let t1 =
        thread::spawn(move || unsafe { s1.acquire_raw(w1.as_ref().as_ref(), 1, record, c1.ptr()) });
    let s2 = sem.clone();
    let t2 = thread::spawn(move || s2.close());
    TailRace {
        sem,
        head,
        tail,
        chead,
        ctail,
        t1,
        t2,
    }
}

/// An acquire that queues behind a waiter (the word is already QUEUED, so it
/// links without writing it) racing `close` and a release: it ends closed
/// (at once, or woken by the close) or granted by the release after the
/// head was; never queued past the close, never a lost permit.
#[test]
fn enqueue_behind_a_waiter_races_close_and_release() {
    model(|| {
        // Bound to the end: the callbacks write to the contexts.
        let race = tail_races_close();
        let (sem, head, tail) = (&race.sem, &race.head, &race.tail);
        let (t1, t2) = (race.t1, race.t2);
        sem.release(2).unwrap();
        let queued = t1.join().unwrap();
        t2.join().unwrap();
        let tail_out = match queued {
            Err(AcquireError::Closed) => None,
            // The release came first: its second permit waited in the counter.
            Ok(RawAcquire::Ready) => Some(Finish::Granted),
            Ok(RawAcquire::Pending) => Some(unsafe { sem.finish_raw(tail.as_ref().as_ref()) }),
            other => panic!("{other:?}"),
        };
        let head_out = unsafe { sem.finish_raw(head.as_ref()) };
        let held = match (head_out, tail_out) {
            (Finish::Granted, Some(Finish::Granted)) => 3,
            (Finish::Granted, _) => 2,
            (Finish::Closed, Some(Finish::Closed) | None) => 0,
            other => panic!("{other:?}"),
        };
        assert!(sem.is_closed());
        assert_eq!(sem.available_permits() + held, 3);
    });
}

/// An acquire that may queue behind a waiter without writing the word,
/// racing that waiter's cancel (which, if it empties the queue first, clears
/// QUEUED and hands its partial grant on) and `close`: whichever order, the
/// tail ends granted, closed or cancelled by its owner, never left queued on
/// a closed semaphore (its `finish_raw` then returns `Closed`, with its
/// callback run once), and every permit is back.
#[test]
fn enqueue_behind_a_waiter_races_its_cancel_and_close() {
    model(|| {
        let race = tail_races_close();
        let (sem, head, tail) = (&race.sem, &race.head, &race.tail);
        let (chead, ctail) = (&race.chead, &race.ctail);
        let (t1, t2) = (race.t1, race.t2);
        let head_out = unsafe { sem.finish_raw(head.as_ref()) };
        let head_calls = chead.calls_after_finish();
        let queued = t1.join().unwrap();
        t2.join().unwrap();
        // Both joined: the close is over, so a tail still queued is a defect.
        let held = match queued {
            Err(AcquireError::Closed) => 0,
            // The head's cancel handed its 1 permit on, or put it back first.
            Ok(RawAcquire::Ready) => 1,
            Ok(RawAcquire::Pending) => {
                assert_ne!(tail.state(), WaiterState::Waiting, "queued past close");
                match unsafe { sem.finish_raw(tail.as_ref().as_ref()) } {
                    Finish::Granted => {
                        assert_eq!(ctail.calls_after_finish(), 1);
                        1
                    }
                    Finish::Closed => {
                        assert_eq!(ctail.calls_after_finish(), 1);
                        0
                    }
                    other => panic!("{other:?}"),
                }
            }
            other => panic!("{other:?}"),
        };
        match head_out {
            Finish::Closed => assert_eq!(head_calls, 1),
            Finish::Cancelled { returned: 1 } => assert_eq!(head_calls, 0),
            other => panic!("{other:?}"),
        }
        assert!(sem.is_closed());
        assert_eq!(sem.available_permits() + held, 1);
    });
}

/// Cancel racing close: either the cancel removes the waiter (returning its
/// partial grant) or the close wakes it; never both, never a lost permit.
#[test]
fn cancel_races_close() {
    model(|| {
        let sem = Arc::new(Semaphore::new(1));
        let waiter = Box::pin(Waiter::new());
        let ctx = Ctx::new();
        assert_eq!(queue(&sem, waiter.as_ref(), 3, &ctx), RawAcquire::Pending);
        let s2 = sem.clone();
        let t = thread::spawn(move || s2.close());
        let outcome = unsafe { sem.finish_raw(waiter.as_ref()) };
        let calls = ctx.calls_after_finish();
        match outcome {
            Finish::Closed => assert_eq!(calls, 1),
            Finish::Cancelled { returned: 1 } => assert_eq!(calls, 0),
            other => panic!("{other:?}"),
        }
        t.join().unwrap();
        assert_eq!(sem.available_permits(), 1);
    });
}

/// A callback that finishes its own waiter and releases from inside the wake
/// (re-entrancy: no lock is held, and finishing oneself does not wait).
#[test]
fn finish_and_release_from_inside_callback() {
    struct Chain {
        sem: Arc<Semaphore>,
        waiter: Pin<Box<Waiter>>,
    }
    unsafe extern "C" fn pass_on(ctx: *mut c_void) {
        let chain = unsafe { &*(ctx as *const Chain) };
        assert_eq!(
            unsafe { chain.sem.finish_raw(chain.waiter.as_ref()) },
            Finish::Granted
        );
        chain.sem.release(1).unwrap(); // hand our permit straight on
    }
    model(|| {
        let sem = Arc::new(Semaphore::new(0));
        let chain = Arc::new(Chain {
            sem: sem.clone(),
            waiter: Box::pin(Waiter::new()),
        });
        let ctx = Arc::as_ptr(&chain) as *mut c_void;
        assert_eq!(
            unsafe { sem.acquire_raw(chain.waiter.as_ref(), 1, pass_on, ctx) },
            Ok(RawAcquire::Pending)
        );
        let s2 = sem.clone();
        let t = thread::spawn(move || drop(block_on(s2.acquire(1)).unwrap()));
        sem.release(1).unwrap();
        t.join().unwrap();
        // Consumed inside the callback: nothing left to collect.
        assert_eq!(
            unsafe { sem.finish_raw(chain.waiter.as_ref()) },
            Finish::Idle
        );
        assert_eq!(sem.available_permits(), 1);
    });
}

/// Three threads: a release, an async enqueue and a cancel of a partly granted
/// waiter, all at once. No permit is lost and nobody sleeps beside a permit.
#[test]
fn three_threads_release_enqueue_cancel() {
    model(|| {
        let sem = Arc::new(Semaphore::new(1));
        let waiter = Box::pin(Waiter::new());
        let ctx = Ctx::new();
        assert_eq!(queue(&sem, waiter.as_ref(), 2, &ctx), RawAcquire::Pending); // holds 1
        let s1 = sem.clone();
        let releaser = thread::spawn(move || s1.release(1).unwrap());
        let s2 = sem.clone();
        let acquirer = thread::spawn(move || drop(block_on(s2.acquire(1)).unwrap()));
        let held = match unsafe { sem.finish_raw(waiter.as_ref()) } {
            Finish::Granted => 2,
            Finish::Cancelled { returned } => {
                assert!(returned <= 2);
                0
            }
            other => panic!("{other:?}"),
        };
        releaser.join().unwrap();
        sem.release(held).unwrap();
        acquirer.join().unwrap();
        assert_eq!(sem.available_permits(), 2);
    });
}

/// Close racing a partial release and a cancel. The waiter ends Closed or
/// Cancelled, never Granted after close drained it; every permit is banked.
#[test]
fn close_races_partial_release_and_cancel() {
    model(|| {
        let sem = Arc::new(Semaphore::new(0));
        let a = Box::pin(Waiter::new());
        let b = Arc::new(Box::pin(Waiter::new()));
        let (ca, cb) = (Ctx::new(), Ctx::new());
        assert_eq!(queue(&sem, a.as_ref(), 2, &ca), RawAcquire::Pending);
        assert_eq!(
            queue(&sem, b.as_ref().as_ref(), 1, &cb),
            RawAcquire::Pending
        );
        let s1 = sem.clone();
        let releaser = thread::spawn(move || s1.release(1).unwrap());
        let (s2, b2) = (sem.clone(), b.clone());
        let canceller = thread::spawn(move || unsafe { s2.finish_raw(b2.as_ref().as_ref()) });
        sem.close();
        releaser.join().unwrap();
        let fb = canceller.join().unwrap();
        let fa = unsafe { sem.finish_raw(a.as_ref()) };
        assert_eq!(fa, Finish::Closed, "a needs 2 and only 1 was released");
        assert!(
            matches!(fb, Finish::Closed | Finish::Cancelled { returned: 0 }),
            "{fb:?}"
        );
        assert_eq!(ca.calls_after_finish(), 1);
        assert_eq!(sem.available_permits(), 1);
    });
}

/// A future polled again with a different waker while a release grants it:
/// the grant is never lost. Either the second poll sees it, or the waker that
/// is registered when the grant lands is woken.
#[test]
fn update_waker_races_grant() {
    use std::task::{Context, Poll};
    model(|| {
        let sem = Arc::new(Semaphore::new(0));
        let mut fut = Box::pin(sem.acquire(1));
        let first = futures_noop_waker();
        assert!(fut
            .as_mut()
            .poll(&mut Context::from_waker(&first))
            .is_pending());
        let s2 = sem.clone();
        let t = thread::spawn(move || s2.release(1).unwrap());
        let (second, woken) = flag_waker();
        let again = fut.as_mut().poll(&mut Context::from_waker(&second));
        t.join().unwrap();
        let permit = match again {
            Poll::Ready(p) => p.unwrap(),
            Poll::Pending => {
                assert!(woken.load(SeqCst), "the grant's wake went to a stale waker");
                match fut.as_mut().poll(&mut Context::from_waker(&second)) {
                    Poll::Ready(p) => p.unwrap(),
                    Poll::Pending => panic!("woken but not granted"),
                }
            }
        };
        drop(permit);
        drop(fut);
        assert_eq!(sem.available_permits(), 1);
    });
}

/// Two threads enqueue at once (weights 2 and 1) while a third releases one
/// permit at a time: the queue links stay consistent (loom checks every access
/// to them), grants follow one FIFO order, and every permit arrives.
#[test]
fn fifo_under_concurrent_enqueue() {
    model(|| {
        let sem = Arc::new(Semaphore::new(0));
        let big = Arc::new(Box::pin(Waiter::new()));
        let small = Arc::new(Box::pin(Waiter::new()));
        let (cbig, csmall) = (Ctx::new(), Ctx::new());
        let (s1, w1, c1) = (sem.clone(), big.clone(), cbig.clone());
        let t1 = thread::spawn(move || queue(&s1, w1.as_ref().as_ref(), 2, &c1));
        let (s2, w2, c2) = (sem.clone(), small.clone(), csmall.clone());
        let t2 = thread::spawn(move || queue(&s2, w2.as_ref().as_ref(), 1, &c2));
        sem.release(1).unwrap();
        let (r1, r2) = (t1.join().unwrap(), t2.join().unwrap());
        // Both enqueued (or took the one permit at once); 1 permit so far.
        let ready = [r1, r2].iter().filter(|r| **r == RawAcquire::Ready).count();
        assert!(ready <= 1);
        // Whatever the order, a granted `small` means `big` was behind it: then
        // `big` holds at most the one permit of the next release.
        sem.release(1).unwrap();
        sem.release(1).unwrap();
        let (gb, gs) = (
            big.state() == WaiterState::Granted,
            small.state() == WaiterState::Granted,
        );
        assert!(gb || r1 == RawAcquire::Ready);
        assert!(gs || r2 == RawAcquire::Ready);
        unsafe {
            if r1 == RawAcquire::Pending {
                assert_eq!(sem.finish_raw(big.as_ref().as_ref()), Finish::Granted);
            }
            if r2 == RawAcquire::Pending {
                assert_eq!(sem.finish_raw(small.as_ref().as_ref()), Finish::Granted);
            }
        }
        sem.release(3).unwrap();
        assert_eq!(sem.available_permits(), 3);
    });
}

/// Under loom a wake batch holds 2 entries, so a release completing 3 waiters
/// hands over in two lock sections. A cancel of the third racing it: the
/// permit is never lost, whether it arrived before the cancel or not.
#[test]
fn release_spanning_two_wake_batches_races_cancel() {
    model(|| {
        let sem = Arc::new(Semaphore::new(0));
        let ws: Vec<_> = (0..3).map(|_| Arc::new(Box::pin(Waiter::new()))).collect();
        let cs: Vec<_> = (0..3).map(|_| Ctx::new()).collect();
        for (w, c) in ws.iter().zip(&cs) {
            assert_eq!(queue(&sem, w.as_ref().as_ref(), 1, c), RawAcquire::Pending);
        }
        let (s2, last) = (sem.clone(), ws[2].clone());
        let t = thread::spawn(move || unsafe { s2.finish_raw(last.as_ref().as_ref()) });
        sem.release(3).unwrap();
        let last = t.join().unwrap();
        let mut held = 0;
        for w in &ws[..2] {
            assert_eq!(
                unsafe { sem.finish_raw(w.as_ref().as_ref()) },
                Finish::Granted
            );
            held += 1;
        }
        match last {
            Finish::Granted => held += 1,
            Finish::Cancelled { returned: 0 } => {}
            other => panic!("{other:?}"),
        }
        assert_eq!(sem.available_permits() + held, 3);
    });
}

/// Close spanning two wake batches races a release: waiters close has not
/// reached yet may be granted by the release (documented on `close`); either
/// way every permit ends in the counter or with a granted waiter.
#[test]
fn close_spanning_two_wake_batches_races_release() {
    model(|| {
        let sem = Arc::new(Semaphore::new(0));
        let ws: Vec<_> = (0..3).map(|_| Box::pin(Waiter::new())).collect();
        let cs: Vec<_> = (0..3).map(|_| Ctx::new()).collect();
        for (w, c) in ws.iter().zip(&cs) {
            assert_eq!(queue(&sem, w.as_ref(), 1, c), RawAcquire::Pending);
        }
        let s2 = sem.clone();
        let t = thread::spawn(move || s2.release(1).unwrap());
        sem.close();
        t.join().unwrap();
        let mut held = 0;
        for (w, c) in ws.iter().zip(&cs) {
            match unsafe { sem.finish_raw(w.as_ref()) } {
                Finish::Granted => held += 1,
                Finish::Closed => {}
                other => panic!("{other:?}"),
            }
            assert_eq!(c.calls_after_finish(), 1);
        }
        assert!(held <= 1);
        assert_eq!(sem.available_permits() + held, 1);
    });
}

/// A waker that records that it was woken.
fn flag_waker() -> (std::task::Waker, Arc<loom::sync::atomic::AtomicBool>) {
    use std::task::{RawWaker, RawWakerVTable, Waker};
    type Flag = loom::sync::atomic::AtomicBool;
    const VTABLE: RawWakerVTable = RawWakerVTable::new(clone, wake, wake_by_ref, drop_raw);
    unsafe fn clone(p: *const ()) -> RawWaker {
        unsafe { Arc::increment_strong_count(p as *const Flag) };
        RawWaker::new(p, &VTABLE)
    }
    unsafe fn wake(p: *const ()) {
        unsafe {
            wake_by_ref(p);
            drop_raw(p);
        }
    }
    unsafe fn wake_by_ref(p: *const ()) {
        unsafe { &*(p as *const Flag) }.store(true, SeqCst);
    }
    unsafe fn drop_raw(p: *const ()) {
        unsafe { drop(Arc::from_raw(p as *const Flag)) };
    }
    let flag = Arc::new(Flag::new(false));
    let raw = Arc::into_raw(flag.clone()) as *const ();
    (
        unsafe { Waker::from_raw(RawWaker::new(raw, &VTABLE)) },
        flag,
    )
}

fn futures_noop_waker() -> std::task::Waker {
    std::task::Waker::noop().clone()
}

use std::future::Future;
