//! Callbacks never nest and a sibling can be collected from a callback: a
//! chain of waiters of one session, each of whose callbacks collects its own
//! grant and releases it to the next, runs in constant stack on a thread with
//! a small stack; and a callback that finishes a sibling completed by the same
//! release gets its outcome at once (its callback never runs) instead of
//! waiting for a callback only its own thread would run. Both failed
//! before the per-thread delivery queue (the first with a stack overflow,
//! the second spinning for ever).

mod support;

use std::ffi::c_void;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;
use volt_sem_redis::RawSemaphore;

use support::*;
use volt_sem_redis::{Finish, RawAcquire, RedisSemaphore, RedisWaiter};

#[test]
#[ignore = "the body of worker processes (support::worker_main), not a test"]
fn worker() {
    worker_main();
}

/// Every waiter of the chain: its handle, its waiter, a shared count.
struct Link {
    sem: RedisSemaphore,
    waiter: RedisWaiter,
    woken: &'static AtomicUsize,
    failures: &'static Mutex<Vec<String>>,
}

unsafe extern "C" fn collect_and_pass_on(ctx: *mut c_void) {
    // SAFETY: `ctx` is a boxed `Link`, alive until the test finished it.
    let l = unsafe { &*(ctx as *const Link) };
    // SAFETY: the waiter is boxed (pinned) and queued on `l.sem`.
    let w = unsafe { Pin::new_unchecked(&l.waiter) };
    // SAFETY: as above; inside its own callback it returns at once.
    match unsafe { l.sem.finish_raw(w) } {
        Finish::Granted { .. } => {
            if let Err(e) = l.sem.release(1) {
                l.failures.lock().unwrap().push(format!("release: {e}"));
            }
        }
        f => l.failures.lock().unwrap().push(format!("finish: {f:?}")),
    }
    l.woken.fetch_add(1, Ordering::SeqCst);
}

#[test]
fn a_chain_of_callbacks_releasing_to_the_next_runs_in_constant_stack() {
    const N: usize = 3000;
    static WOKEN: AtomicUsize = AtomicUsize::new(0);
    static FAILURES: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let s = Server::start();
    let sem = connect(&s, "chain", 1);
    sem.try_acquire(1).unwrap().forget();
    let links: Vec<Pin<Box<Link>>> = (0..N)
        .map(|_| {
            Box::pin(Link {
                sem: sem.clone(),
                waiter: RedisWaiter::new(),
                woken: &WOKEN,
                failures: &FAILURES,
            })
        })
        .collect();
    for l in &links {
        let ctx = &**l as *const Link as *mut c_void;
        // SAFETY: boxed and pinned until finished below; `ctx` is the box.
        let w = unsafe { Pin::new_unchecked(&l.waiter) };
        // SAFETY: idle, pinned, ctx valid until finish_raw.
        let r = unsafe { sem.acquire_raw(w, 1, collect_and_pass_on, ctx) }.unwrap();
        assert_eq!(r, RawAcquire::Pending);
    }
    // The first release, on a thread with a 256 KiB stack: every waiter is
    // of this session, so the release completes the head and runs its
    // callback here, which releases to the next, and so on. Nested, that is
    // N frames of a release each (a network call): far beyond 256 KiB.
    let sem2 = sem.clone();
    std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || sem2.release(1).unwrap())
        .unwrap()
        .join()
        .expect("the releasing thread overflowed its stack or panicked");
    eventually("every link woken", Duration::from_secs(60), || {
        WOKEN.load(Ordering::SeqCst) == N
    });
    assert!(
        FAILURES.lock().unwrap().is_empty(),
        "{:?}",
        FAILURES.lock().unwrap()
    );
    for l in &links {
        // SAFETY: queued on `sem`; its callback collected it already.
        let w = unsafe { Pin::new_unchecked(&l.waiter) };
        assert_eq!(unsafe { sem.finish_raw(w) }, Finish::Idle);
    }
    let c = assert_conserved(&sem);
    assert_eq!((c.available, c.held, c.queued), (1, 0, 0), "{c:?}");
}

struct Pair {
    sem: RedisSemaphore,
    first: RedisWaiter,
    second: RedisWaiter,
    calls: AtomicUsize,
    outcomes: Mutex<Option<(Finish, Finish)>>,
}

unsafe extern "C" fn first_finishes_the_sibling(ctx: *mut c_void) {
    // SAFETY: `ctx` is the boxed `Pair`, alive until the test finished both.
    let p = unsafe { &*(ctx as *const Pair) };
    p.calls.fetch_add(1, Ordering::SeqCst);
    // SAFETY: both waiters are boxed (pinned) and queued on `p.sem`.
    let (first, second) = unsafe { (Pin::new_unchecked(&p.first), Pin::new_unchecked(&p.second)) };
    // The callback runs for whichever of the two was delivered first: it
    // collects both. The other was completed in the same batch, on this
    // thread, and its callback has not run: it is collected here at once
    // (before: this spun for ever, waiting for a callback that only this
    // thread would run).
    // SAFETY: as above.
    let a = unsafe { p.sem.finish_raw(first) };
    // SAFETY: as above.
    let b = unsafe { p.sem.finish_raw(second) };
    *p.outcomes.lock().unwrap() = Some((a, b));
}

#[test]
fn a_callback_collects_a_sibling_completed_in_the_same_batch() {
    let mut s = Server::start();
    let holder = connect(&s, "sibling", 2);
    let held = holder.acquire_blocking(2).unwrap();
    // Lease loss completes every waiter of the session in one batch on the
    // thread that found it (here the agent, when the lease ran out with Redis
    // unreachable): deterministic, unlike the race of a release's own-session
    // wakes with the agent's notifications.
    let lease = opts()
        .lease(Duration::from_millis(1500))
        .command_timeout(Duration::from_millis(300));
    let sem = RedisSemaphore::connect(&s.url(), "sibling", 2, lease).unwrap();
    let p = Box::pin(Pair {
        sem: sem.clone(),
        first: RedisWaiter::new(),
        second: RedisWaiter::new(),
        calls: AtomicUsize::new(0),
        outcomes: Mutex::new(None),
    });
    let ctx = &*p as *const Pair as *mut c_void;
    // SAFETY: boxed and pinned until finished; `ctx` is the box.
    unsafe {
        let first = Pin::new_unchecked(&p.first);
        let second = Pin::new_unchecked(&p.second);
        assert_eq!(
            sem.acquire_raw(first, 1, first_finishes_the_sibling, ctx)
                .unwrap(),
            RawAcquire::Pending
        );
        assert_eq!(
            sem.acquire_raw(second, 1, first_finishes_the_sibling, ctx)
                .unwrap(),
            RawAcquire::Pending
        );
    }
    // Both sent and queued in Redis before it stops answering.
    sem.flush().unwrap();
    // SAFETY: signals to the redis-server child this test started.
    unsafe { libc::kill(s.pid() as i32, libc::SIGSTOP) };
    eventually(
        "the batch's first callback ran",
        Duration::from_secs(20),
        || p.outcomes.lock().unwrap().is_some(),
    );
    // SAFETY: as above.
    unsafe { libc::kill(s.pid() as i32, libc::SIGCONT) };
    let (a, b) = p.outcomes.lock().unwrap().clone().unwrap();
    assert_eq!(a, Finish::Failed(volt_sem_redis::Error::LeaseExpired));
    assert_eq!(b, Finish::Failed(volt_sem_redis::Error::LeaseExpired));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        p.calls.load(Ordering::SeqCst),
        1,
        "the collected sibling's callback never runs"
    );
    // SAFETY: both collected already.
    unsafe {
        assert_eq!(sem.finish_raw(Pin::new_unchecked(&p.first)), Finish::Idle);
        assert_eq!(sem.finish_raw(Pin::new_unchecked(&p.second)), Finish::Idle);
    }
    held.release().unwrap();
    assert_conserved(&holder);
    s.stop();
}
