//! Multi-thread stress: async tasks on a multi-thread runtime and plain
//! threads, weights 1..=4, random cancellations and timeouts. Checks that the
//! limit is never exceeded and that every permit is back at the end
//! (conservation). Small by default; `cargo test --release -- --ignored` runs
//! the large version.

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::task::noop_waker_ref;
use volt_sem::Semaphore;

const TOTAL: usize = 6;

#[path = "support/rng.rs"]
mod rng;
use rng::Rng;

/// Tracks permits held by callers and the peak, asserting the limit.
struct Ledger {
    held: AtomicUsize,
    peak: AtomicUsize,
    granted: AtomicUsize,
}

impl Ledger {
    fn take(&self, n: usize) {
        let now = self.held.fetch_add(n, SeqCst) + n;
        assert!(now <= TOTAL, "{now} permits held out of {TOTAL}");
        self.peak.fetch_max(now, SeqCst);
        self.granted.fetch_add(1, SeqCst);
    }
    fn give(&self, n: usize) {
        self.held.fetch_sub(n, SeqCst);
    }
}

fn stress(threads: usize, async_tasks: usize, rounds: usize) {
    let sem = Arc::new(Semaphore::new(TOTAL));
    let ledger = Arc::new(Ledger {
        held: AtomicUsize::new(0),
        peak: AtomicUsize::new(0),
        granted: AtomicUsize::new(0),
    });

    // Plain threads: blocking acquires, some with timeouts that expire.
    let blocking: Vec<_> = (0..threads)
        .map(|t| {
            let (sem, ledger) = (sem.clone(), ledger.clone());
            std::thread::spawn(move || {
                let mut rng = Rng(0x9E37_79B9 + t as u64);
                for _ in 0..rounds {
                    let n = 1 + rng.below(4) as usize;
                    let permit = if rng.below(4) == 0 {
                        match sem.acquire_timeout(n, Duration::from_micros(rng.below(200))) {
                            Ok(p) => p,
                            Err(_) => continue, // timed out: partial grant handed on
                        }
                    } else {
                        sem.acquire_blocking(n).unwrap()
                    };
                    ledger.take(n);
                    if rng.below(2) == 0 {
                        std::thread::yield_now();
                    }
                    ledger.give(n);
                    drop(permit);
                }
            })
        })
        .collect();

    // Async tasks on a 2-worker runtime: random cancellation by timeout and by
    // dropping a queued future after one poll.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        let tasks: Vec<_> = (0..async_tasks)
            .map(|t| {
                let (sem, ledger) = (sem.clone(), ledger.clone());
                tokio::spawn(async move {
                    let mut rng = Rng(0xC0FF_EE00 + t as u64);
                    for _ in 0..rounds {
                        let n = 1 + rng.below(4) as usize;
                        match rng.below(5) {
                            0 => {
                                let wait = Duration::from_micros(rng.below(300));
                                if let Ok(Ok(p)) = tokio::time::timeout(wait, sem.acquire(n)).await
                                {
                                    ledger.take(n);
                                    ledger.give(n);
                                    drop(p);
                                }
                            }
                            1 => {
                                // poll once, then drop: cancels a queued request
                                let mut fut = pin!(sem.acquire(n));
                                let mut cx = Context::from_waker(noop_waker_ref());
                                if let Poll::Ready(Ok(p)) = fut.as_mut().poll(&mut cx) {
                                    ledger.take(n);
                                    ledger.give(n);
                                    drop(p);
                                }
                            }
                            _ => {
                                let p = sem.acquire(n).await.unwrap();
                                ledger.take(n);
                                tokio::task::yield_now().await;
                                ledger.give(n);
                                drop(p);
                            }
                        }
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
    });
    for t in blocking {
        t.join().unwrap();
    }
    assert_eq!(ledger.held.load(SeqCst), 0);
    assert_eq!(sem.available_permits(), TOTAL, "permits lost or created");
    assert!(ledger.peak.load(SeqCst) <= TOTAL);
    assert!(ledger.granted.load(SeqCst) > 0);
}

#[test]
fn stress_small() {
    stress(8, 8, 200);
}

#[test]
#[ignore = "large: cargo test --release -p volt-sem --test stress -- --ignored"]
fn stress_large() {
    stress(8, 32, 20_000);
}

/// A weight-4 request queued behind weight-1 requests is served in its turn:
/// after the ones queued before it, before the ones queued after it, although
/// every single release could have satisfied a later weight-1 request.
/// Releases come from another thread, one permit at a time.
#[test]
fn heavy_waiter_is_served_in_its_turn() {
    let sem = Arc::new(Semaphore::new(0));
    let requests = [
        ("a", 1),
        ("b", 1),
        ("c", 1),
        ("HEAVY", 4),
        ("d", 1),
        ("e", 1),
    ];
    let mut futures: Vec<_> = requests
        .iter()
        .map(|&(id, n)| (id, Box::pin(sem.acquire(n))))
        .collect();
    let mut cx = Context::from_waker(noop_waker_ref());
    let mut order = Vec::new();
    let mut permits = Vec::new();
    for _ in 0..=9 {
        futures.retain_mut(|(id, fut)| match fut.as_mut().poll(&mut cx) {
            Poll::Ready(p) => {
                order.push(*id);
                permits.push(p.unwrap());
                false
            }
            Poll::Pending => true,
        });
        let s = sem.clone();
        std::thread::spawn(move || s.release(1).unwrap())
            .join()
            .unwrap();
    }
    assert!(futures.is_empty());
    assert_eq!(order, ["a", "b", "c", "HEAVY", "d", "e"]);
    drop(permits);
    assert_eq!(sem.available_permits(), 10);
}

/// `close` racing queued acquires (blocking, async, timed: the enqueues
/// behind a waiter that write no state word), releases, `add_permits` and
/// `forget_permits`, over many rounds: every acquire ends (granted, or
/// `Closed`: a waiter left queued on the closed semaphore would hang its
/// thread's join), the ones that start after `close` fail, and every permit
/// is back: available == initial + added - forgotten.
fn close_races(rounds: u64) {
    const INITIAL: usize = 3;
    for round in 0..rounds {
        let sem = Arc::new(Semaphore::new(INITIAL));
        let net_added = Arc::new(AtomicUsize::new(0));
        let closed_seen = Arc::new(AtomicUsize::new(0));
        let mut threads = Vec::new();
        for t in 0..6u64 {
            let (sem, closed_seen) = (sem.clone(), closed_seen.clone());
            threads.push(std::thread::spawn(move || {
                let mut rng = Rng(0x5EED_0000 + round * 64 + t);
                loop {
                    let n = 1 + rng.below(3) as usize;
                    let got = match t % 3 {
                        0 => sem.acquire_blocking(n).map(Some),
                        1 => futures::executor::block_on(sem.acquire(n)).map(Some),
                        _ => match sem.acquire_timeout(n, Duration::from_micros(rng.below(50))) {
                            Ok(p) => Ok(Some(p)),
                            Err(volt_sem::AcquireTimeoutError::Closed) => {
                                Err(volt_sem::AcquireError::Closed)
                            }
                            Err(_) => Ok(None), // timed out: cancelled
                        },
                    };
                    match got {
                        Ok(p) => {
                            if rng.below(2) == 0 {
                                std::thread::yield_now();
                            }
                            drop(p);
                        }
                        Err(e) => {
                            assert_eq!(e, volt_sem::AcquireError::Closed);
                            closed_seen.fetch_add(1, SeqCst);
                            return;
                        }
                    }
                }
            }));
        }
        let (s, net) = (sem.clone(), net_added.clone());
        threads.push(std::thread::spawn(move || {
            while !s.is_closed() {
                s.add_permits(1);
                net.fetch_add(1, SeqCst);
                std::thread::yield_now();
                let forgot = s.forget_permits(1);
                net.fetch_sub(forgot, SeqCst);
            }
        }));
        let mut rng = Rng(0xC105E + round);
        for _ in 0..rng.below(2000) {
            std::hint::spin_loop();
        }
        if round % 2 == 0 {
            std::thread::yield_now();
        }
        sem.close();
        assert_eq!(
            sem.try_acquire(1).unwrap_err(),
            volt_sem::TryAcquireError::Closed
        );
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(closed_seen.load(SeqCst), 6);
        assert_eq!(
            sem.available_permits(),
            INITIAL + net_added.load(SeqCst),
            "round {round}: permits lost or created"
        );
    }
}

#[test]
fn close_races_queued_acquires() {
    close_races(200);
}

#[test]
#[ignore = "large: cargo test --release -p volt-sem --test stress -- --ignored"]
fn close_races_queued_acquires_large() {
    close_races(20_000);
}
