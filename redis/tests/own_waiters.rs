//! A release that completes requests of its own session (other threads or
//! tasks of the same process) wakes them itself, before it returns, instead
//! of waiting for the agent's BLPOP; the agent's notification then finds
//! them done, and nothing is granted twice.

mod support;

use std::time::Duration;
use volt_sem_redis::RawSemaphore;

use support::*;
use volt_sem_redis::{ConnectOptions, RedisSemaphore};

#[test]
#[ignore = "the body of worker processes (support::worker_main), not a test"]
fn worker() {
    worker_main();
}

use std::ffi::c_void;
use std::pin::pin;
use std::sync::Mutex;
use volt_sem_redis::{Finish, RawAcquire, RedisWaiter, RedisWaiterState};

unsafe extern "C" fn record_thread(ctx: *mut c_void) {
    // SAFETY: the test passes a Mutex that outlives the waiter.
    let m = unsafe { &*(ctx as *const Mutex<Vec<(std::thread::ThreadId, String)>>) };
    let me = std::thread::current();
    m.lock()
        .unwrap()
        .push((me.id(), me.name().unwrap_or_default().to_string()));
}

#[test]
fn a_release_wakes_the_waiters_of_its_own_session_itself() {
    let s = Server::start();
    let a = RedisSemaphore::connect(&s.url(), "own", 2, ConnectOptions::new()).unwrap();
    let b = RedisSemaphore::connect(&s.url(), "own", 2, ConnectOptions::new()).unwrap();
    let held = a.acquire_blocking(2).unwrap();
    let seen = Mutex::new(Vec::new());
    let ctx = &seen as *const Mutex<Vec<(std::thread::ThreadId, String)>> as *mut c_void;
    let w1 = pin!(RedisWaiter::new());
    let w2 = pin!(RedisWaiter::new());
    // SAFETY: idle and pinned; `seen` outlives both.
    unsafe {
        assert_eq!(
            b.acquire_raw(w1.as_ref(), 1, record_thread, ctx).unwrap(),
            RawAcquire::Pending
        );
        assert_eq!(
            b.acquire_raw(w2.as_ref(), 1, record_thread, ctx).unwrap(),
            RawAcquire::Pending
        );
    }
    // The release completes both (same session) and its reply wakes them,
    // on the handle's door thread that ran it: one hop sooner than the
    // agent's notifications (which may still win the race and run a
    // callback itself: either way each callback runs exactly once, and on
    // one of the handle's two threads, never on the releasing one, which
    // returned at once).
    held.release().unwrap();
    eventually("both completed", Duration::from_secs(5), || {
        w1.state() == RedisWaiterState::Done && w2.state() == RedisWaiterState::Done
    });
    // SAFETY: queued on b.
    let (f1, f2) = unsafe { (b.finish_raw(w1.as_ref()), b.finish_raw(w2.as_ref())) };
    let names: Vec<String> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|(_, name): &(std::thread::ThreadId, String)| name.clone())
        .collect();
    assert!(
        names
            .iter()
            .all(|n| n == "volt-sem-redis-door" || n == "volt-sem-redis"),
        "{names:?}"
    );
    let (Finish::Granted { token: t1 }, Finish::Granted { token: t2 }) = (f1, f2) else {
        panic!("not granted")
    };
    assert!(t2 > t1, "FIFO: the first queued got the first token");
    assert_eq!(b.held_permits(), 2);
    b.release(2).unwrap();
    // The agent's notifications for them arrive later and find them done:
    // nothing is granted twice.
    std::thread::sleep(Duration::from_millis(200));
    let c = assert_conserved(&a);
    assert_eq!((c.available, c.held, c.queued), (2, 0, 0));
    assert_eq!(seen.lock().unwrap().len(), 2, "each callback ran once");
}
