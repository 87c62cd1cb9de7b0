//! `Semaphore::stats`: what each counter counts, through the public API.

use std::pin::pin;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use volt_sem::Semaphore;

#[test]
fn a_semaphore_that_does_not_record_reports_gauges_only() {
    let sem = Semaphore::new(3);
    let held = sem.try_acquire(2).unwrap();
    let s = sem.stats();
    assert!(!s.recording);
    assert_eq!((s.grants, s.wait.count()), (0, 0));
    assert_eq!((s.available, s.held, s.queued), (1, 2, 0));
    drop(held);
}

#[test]
fn queued_grants_are_timed_and_cancels_counted() {
    futures::executor::block_on(async {
        let sem = Semaphore::new(2);
        sem.enable_stats();
        let held = sem.acquire(2).await.unwrap();
        let mut first = pin!(sem.acquire(2));
        assert!(futures::poll!(first.as_mut()).is_pending());
        {
            let mut second = pin!(sem.acquire(1));
            assert!(futures::poll!(second.as_mut()).is_pending());
            let s = sem.stats();
            assert_eq!((s.available, s.held, s.queued), (0, 2, 2));
        } // the second request is dropped while queued: a cancel
        thread::sleep(Duration::from_millis(20));
        drop(held);
        let got = first.await.unwrap();
        let s = sem.stats();
        assert_eq!(
            (s.grants, s.permits_granted, s.cancels, s.timeouts),
            (2, 4, 1, 0)
        );
        assert_eq!(s.wait.count(), 2);
        // The queued grant waited at least the 20 ms sleep, and the histogram says so.
        assert!(s.wait.max() >= Duration::from_millis(20), "{:?}", s.wait);
        assert!(s.wait.sum() >= Duration::from_millis(20));
        assert!(s.wait.quantile(1.0) >= Duration::from_millis(20));
        assert_eq!(s.wait.buckets().next().unwrap().1, 1, "one grant at once");
        assert_eq!((s.available, s.held, s.queued), (0, 2, 0));
        drop(got);
    });
}

#[test]
fn a_partial_grant_is_not_held_and_a_timeout_is_a_cancel_too() {
    let sem = Arc::new(Semaphore::new(3));
    sem.enable_stats();
    let held = sem.try_acquire(2).unwrap();
    let sem2 = sem.clone();
    let waiter =
        thread::spawn(move || sem2.acquire_timeout(3, Duration::from_millis(200)).is_err());
    while sem.stats().queued == 0 {
        thread::yield_now();
    }
    let s = sem.stats();
    // 1 permit is granted to the queued request: neither available nor held.
    assert_eq!((s.available, s.held, s.queued), (0, 2, 1));
    assert!(waiter.join().unwrap(), "the request timed out");
    let s = sem.stats();
    assert_eq!((s.grants, s.cancels, s.timeouts), (1, 1, 1));
    assert_eq!((s.available, s.held, s.queued), (1, 2, 0));
    drop(held);
    assert_eq!(sem.stats().held, 0);
}

#[test]
fn counts_stay_exact_under_contention() {
    let sem = Arc::new(Semaphore::new(2));
    sem.enable_stats();
    let threads: Vec<_> = (0..4)
        .map(|i| {
            let sem = sem.clone();
            thread::spawn(move || {
                for _ in 0..2_000 {
                    let n = 1 + (i % 2);
                    drop(sem.acquire_blocking(n).unwrap());
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let s = sem.stats();
    assert_eq!(s.grants, 8_000);
    assert_eq!(s.permits_granted, 2 * 2_000 + 2 * 4_000);
    assert_eq!(s.wait.count(), 8_000);
    assert_eq!((s.available, s.held, s.queued, s.cancels), (2, 0, 0, 0));
}
