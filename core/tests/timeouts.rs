//! The timed blocking forms succeed when the permits arrive in time, not only
//! time out when they do not (mutation testing found the success side
//! untested: `acquire_timeout`'s deadline test inverted, or the lock forms
//! returning `None` unconditionally, went unnoticed).

use std::sync::Arc;
use std::thread;
use std::time::Duration;

use volt_sem::{Mutex, RwLock, Semaphore};

const LONG: Duration = Duration::from_secs(30);

/// Releases `n` permits of `sem` from another thread after `delay`, well past
/// the acquirer's spin phase, so the acquirer really parks with a deadline.
fn release_later(sem: Arc<Semaphore>, n: usize, delay: Duration) -> thread::JoinHandle<()> {
    thread::spawn(move || {
        thread::sleep(delay);
        sem.release(n).unwrap();
    })
}

#[test]
fn acquire_timeout_is_granted_by_a_release_before_the_deadline() {
    let sem = Arc::new(Semaphore::new(0));
    let t = release_later(sem.clone(), 2, Duration::from_millis(50));
    let permit = sem
        .acquire_timeout(2, LONG)
        .expect("granted within the timeout");
    assert_eq!(permit.num_permits(), 2);
    drop(permit);
    t.join().unwrap();
    assert_eq!(sem.available_permits(), 2);
}

#[test]
fn acquire_timeout_takes_free_permits_at_once() {
    let sem = Semaphore::new(3);
    assert_eq!(sem.acquire_timeout(3, LONG).unwrap().num_permits(), 3);
    assert_eq!(
        sem.acquire_timeout(1, Duration::ZERO)
            .unwrap()
            .num_permits(),
        1
    );
}

#[test]
fn lock_timeout_gets_a_free_or_released_mutex() {
    let m = Arc::new(Mutex::new(0u32));
    *m.lock_timeout(LONG).expect("free") += 1;
    let guard = m.lock_blocking();
    let m2 = m.clone();
    let t = thread::spawn(move || {
        *m2.lock_timeout(LONG).expect("released in time") += 1;
    });
    thread::sleep(Duration::from_millis(50));
    drop(guard);
    t.join().unwrap();
    assert_eq!(*m.lock_blocking(), 2);
}

#[test]
fn read_and_write_timeout_get_a_free_or_released_rwlock() {
    let l = Arc::new(RwLock::new(0u32));
    *l.write_timeout(LONG).expect("free") += 1;
    assert_eq!(*l.read_timeout(LONG).expect("free"), 1);
    let writer = l.write_blocking();
    let l2 = l.clone();
    let t = thread::spawn(move || *l2.read_timeout(LONG).expect("released in time"));
    thread::sleep(Duration::from_millis(50));
    drop(writer);
    assert_eq!(t.join().unwrap(), 1);
    let reader = l.read_blocking();
    let l3 = l.clone();
    let t = thread::spawn(move || *l3.write_timeout(LONG).expect("released in time") += 1);
    thread::sleep(Duration::from_millis(50));
    drop(reader);
    t.join().unwrap();
    assert_eq!(*l.read_blocking(), 2);
}
