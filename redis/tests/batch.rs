//! A handle's releases and acquires sent together in one pipeline (see
//! `session/batch.rs`): they keep the order the handle's calls were made in
//! (a `try_acquire` right after a release sees it, every time), including
//! when Redis refuses some of them without running them (`NOSCRIPT` after
//! `SCRIPT FLUSH`: each is sent again alone), and no permit is lost when
//! many threads and futures queue, cancel and release at once.

mod support;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::Duration;

use support::*;
use volt_sem_redis::{Error, RedisSemaphore};

#[test]
#[ignore = "the body of worker processes (support::worker_main), not a test"]
fn worker() {
    worker_main();
}

/// Flushes Redis's script cache every few milliseconds until `stop`: the
/// commands of a pipeline then meet `NOSCRIPT` now and then, some of them
/// only (a script another call loaded again since).
fn flusher(s: &Server, stop: Arc<AtomicBool>) -> thread::JoinHandle<usize> {
    let mut raw = s.raw();
    thread::spawn(move || {
        let mut n = 0;
        while !stop.load(Ordering::Relaxed) {
            let _: () = redis::cmd("SCRIPT").arg("FLUSH").query(&mut raw).unwrap();
            n += 1;
            thread::sleep(Duration::from_millis(3));
        }
        n
    })
}

#[test]
fn try_acquire_after_a_release_sees_it_every_time() {
    let s = Server::start();
    let sem = connect(&s, "batch-try", 1);
    let stop = Arc::new(AtomicBool::new(false));
    let f = flusher(&s, stop.clone());
    for i in 0..1500 {
        let p = sem
            .try_acquire(1)
            .unwrap_or_else(|e| panic!("iteration {i}: {e:?}"));
        drop(p); // queued to the door: the try_acquire below comes after it
    }
    for i in 0..1500 {
        let p = sem
            .acquire_blocking(1)
            .unwrap_or_else(|e| panic!("iteration {i}: {e:?}"));
        drop(p);
    }
    stop.store(true, Ordering::Relaxed);
    assert!(f.join().unwrap() > 0);
    let c = assert_conserved(&sem);
    assert_eq!((c.available, c.held, c.queued), (1, 0, 0));
}

/// Polls `fut` once with a waker that does nothing.
fn poll_once<F: Future>(fut: Pin<&mut F>) -> Poll<F::Output> {
    fut.poll(&mut Context::from_waker(Waker::noop()))
}

#[test]
fn many_requests_at_once_keep_fifo_and_every_permit() {
    let s = Server::start();
    let sem = connect(&s, "batch-fifo", 3);
    let other = connect(&s, "batch-fifo", 3);
    let held = other.acquire_blocking(3).unwrap();
    // 40 futures queued at once on one handle: the door sends them in a
    // few pipelines, in order.
    let mut futs: Vec<_> = (0..40).map(|_| Box::pin(sem.acquire(1))).collect();
    for f in &mut futs {
        assert!(poll_once(f.as_mut()).is_pending());
    }
    eventually("all queued", Duration::from_secs(30), || {
        other.census().unwrap().queued == 40
    });
    // Every fourth one cancelled (dropped) before its turn.
    for i in (0..40).rev().filter(|i| i % 4 == 3) {
        drop(futs.remove(i));
    }
    drop(held);
    // Served in the order they were queued, three at a time.
    let mut tokens = Vec::new();
    for mut f in futs {
        let p = loop {
            match poll_once(f.as_mut()) {
                Poll::Ready(r) => break r.unwrap(),
                Poll::Pending => thread::sleep(Duration::from_millis(1)),
            }
        };
        tokens.push(p.token());
        drop(p);
    }
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "FIFO: {tokens:?}");
    let c = assert_conserved(&sem);
    assert_eq!((c.available, c.held, c.queued), (3, 0, 0));
}

#[test]
fn threads_queueing_cancelling_and_releasing_under_script_flushes_lose_nothing() {
    let s = Server::start();
    let sem = connect(&s, "batch-stress", 3);
    let stop = Arc::new(AtomicBool::new(false));
    let f = flusher(&s, stop.clone());
    let hs: Vec<_> = (0..6)
        .map(|t| {
            let sem = sem.clone();
            thread::spawn(move || {
                let mut rng = Rng::new(t + 1);
                let mut grants = 0;
                for _ in 0..150 {
                    let n = 1 + (rng.next() % 2) as usize;
                    let r = match rng.next() % 3 {
                        0 => sem.try_acquire(n),
                        1 => sem.acquire_timeout(n, Duration::from_millis(2)),
                        _ => sem.acquire_blocking(n),
                    };
                    match r {
                        Ok(p) => {
                            grants += 1;
                            drop(p);
                        }
                        Err(Error::NoPermits | Error::TimedOut) => {}
                        Err(e) => panic!("{e:?}"),
                    }
                }
                grants
            })
        })
        .collect();
    let grants: usize = hs.into_iter().map(|h| h.join().unwrap()).sum();
    stop.store(true, Ordering::Relaxed);
    f.join().unwrap();
    assert!(grants > 0);
    sem.flush().unwrap();
    let c = assert_conserved(&sem);
    assert_eq!((c.available, c.held, c.queued), (3, 0, 0));
}

/// Two handles with sessions of their own, two threads each taking and
/// giving back permits: their batches interleave in Redis.
#[test]
fn two_handles_batches_interleave() {
    let s = Server::start();
    let a = connect(&s, "batch-two", 2);
    let b = RedisSemaphore::connect(&s.url(), "batch-two", 2, opts().own_session(true)).unwrap();
    let hs: Vec<_> = [a.clone(), b.clone(), a.clone(), b.clone()]
        .into_iter()
        .map(|sem| {
            thread::spawn(move || {
                for _ in 0..300 {
                    drop(sem.acquire_blocking(1).unwrap());
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    a.flush().unwrap();
    b.flush().unwrap();
    let c = assert_conserved(&a);
    assert_eq!((c.available, c.held, c.queued), (2, 0, 0));
}
