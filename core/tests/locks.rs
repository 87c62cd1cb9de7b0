//! Mutex and RwLock, built on the semaphore, through their public API.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::task::noop_waker_ref;
use volt_sem::{Mutex, RwLock};

fn poll<F: Future>(f: std::pin::Pin<&mut F>) -> Poll<F::Output> {
    f.poll(&mut Context::from_waker(noop_waker_ref()))
}

#[test]
fn mutex_async_try_and_blocking_forms() {
    let m = Mutex::new(vec![1]);
    {
        let mut g = futures::executor::block_on(m.lock());
        g.push(2);
        assert!(m.try_lock().is_none());
        assert!(m.lock_timeout(Duration::from_millis(5)).is_none());
        let mut waiting = pin!(m.lock());
        assert!(poll(waiting.as_mut()).is_pending());
        drop(g);
        match poll(waiting.as_mut()) {
            Poll::Ready(mut g) => g.push(3),
            Poll::Pending => panic!("unlock did not hand the lock to the waiter"),
        }
    }
    m.lock_blocking().push(4);
    assert_eq!(*m.try_lock().unwrap(), [1, 2, 3, 4]);
    let mut m = m;
    m.get_mut().clear();
    assert!(m.into_inner().is_empty());
}

#[test]
fn mutex_counts_correctly_across_threads() {
    let m = Arc::new(Mutex::new(0u64));
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let m = m.clone();
            std::thread::spawn(move || (0..2000).for_each(|_| *m.lock_blocking() += 1))
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    assert_eq!(*m.lock_blocking(), 8000);
}

#[test]
fn mutex_is_fifo() {
    let m = Mutex::new(Vec::new());
    let held = m.try_lock().unwrap();
    let mut a = pin!(async { m.lock().await.push("a") });
    let mut b = pin!(async { m.lock().await.push("b") });
    assert!(poll(a.as_mut()).is_pending());
    assert!(poll(b.as_mut()).is_pending());
    drop(held);
    assert!(poll(b.as_mut()).is_pending(), "b overtook a");
    assert!(poll(a.as_mut()).is_ready());
    assert!(poll(b.as_mut()).is_ready());
    assert_eq!(*m.try_lock().unwrap(), ["a", "b"]);
}

#[test]
fn rwlock_readers_share_writers_exclude() {
    let rw = RwLock::new(5);
    let r1 = rw.try_read().unwrap();
    let r2 = rw.read_blocking();
    assert_eq!(*r1 + *r2, 10);
    assert!(rw.try_write().is_none());
    assert!(rw.write_timeout(Duration::from_millis(5)).is_none());
    drop((r1, r2));
    let mut w = rw.try_write().unwrap();
    *w += 1;
    assert!(rw.try_read().is_none());
    assert!(rw.read_timeout(Duration::from_millis(5)).is_none());
    drop(w);
    assert_eq!(*futures::executor::block_on(rw.read()), 6);
    *rw.write_blocking() += 1;
    assert_eq!(rw.into_inner(), 7);
}

/// A queued writer is not starved by a stream of readers: readers arriving
/// after it wait behind it.
#[test]
fn rwlock_queued_writer_blocks_later_readers() {
    let rw = RwLock::new(0);
    let reader = rw.try_read().unwrap();
    let mut writer = pin!(async { *rw.write().await += 1 });
    assert!(poll(writer.as_mut()).is_pending());
    assert!(
        rw.try_read().is_none(),
        "a reader overtook the queued writer"
    );
    let mut late_reader = pin!(async { *rw.read().await });
    assert!(poll(late_reader.as_mut()).is_pending());
    drop(reader);
    assert!(poll(writer.as_mut()).is_ready());
    assert_eq!(poll(late_reader.as_mut()), Poll::Ready(1));
}

#[test]
fn rwlock_cancelled_writer_lets_readers_in() {
    let rw = RwLock::new(());
    let reader = rw.try_read().unwrap();
    {
        let mut writer = Box::pin(rw.write());
        assert!(poll(writer.as_mut()).is_pending());
        assert!(rw.try_read().is_none());
    } // cancelled: its partial grant goes back
    assert!(rw.try_read().is_some());
    drop(reader);
    assert!(rw.try_write().is_some());
}
