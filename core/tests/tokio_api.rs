//! The API a tokio user looks for when switching (issue 20): owned lock guards,
//! guard maps and downgrade, const constructors, `Debug` everywhere, the permit
//! API (`forget_permits`, `split`, `merge`, `semaphore`, `add_permits`), the
//! named owned future and the blocking owned acquire.

#![cfg(not(volt_loom))]

use std::future::Future;
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::task::noop_waker_ref;
use volt_sem::{
    AcquireError, AcquireOwned, MappedMutexGuard, Mutex, MutexGuard, OwnedMutexGuard, OwnedPermit,
    OwnedRwLockReadGuard, OwnedRwLockWriteGuard, Permit, RwLock, RwLockMappedWriteGuard,
    RwLockReadGuard, RwLockWriteGuard, Semaphore,
};

fn poll<F: Future>(f: Pin<&mut F>) -> Poll<F::Output> {
    f.poll(&mut Context::from_waker(noop_waker_ref()))
}

static STATIC_SEM: Semaphore = Semaphore::const_new(2);
static STATIC_MUTEX: Mutex<Vec<u32>> = Mutex::const_new(Vec::new());
static STATIC_RWLOCK: RwLock<u32> = RwLock::const_new(3);

#[test]
fn const_constructors_make_usable_statics() {
    let p = STATIC_SEM.try_acquire(2).unwrap();
    assert!(STATIC_SEM.try_acquire(1).is_err());
    drop(p);
    STATIC_MUTEX.lock_blocking().push(1);
    assert_eq!(*STATIC_MUTEX.try_lock().unwrap(), [1]);
    *STATIC_RWLOCK.write_blocking() += 1;
    assert_eq!(*STATIC_RWLOCK.read_blocking(), 4);
}

/// `#[derive(Debug)]` on a struct holding any lock or guard compiles (it did not
/// for `RwLock` and the guards before).
#[allow(dead_code)]
#[derive(Debug)]
struct HoldsEverything<'a> {
    rwlock: RwLock<u8>,
    mutex_guard: MutexGuard<'a, u8>,
    mapped_mutex_guard: MappedMutexGuard<'a, u8>,
    owned_mutex_guard: OwnedMutexGuard<u8>,
    read: RwLockReadGuard<'a, u8>,
    write: RwLockWriteGuard<'a, u8>,
    mapped_write: RwLockMappedWriteGuard<'a, u8>,
    owned_read: OwnedRwLockReadGuard<u8>,
    owned_write: OwnedRwLockWriteGuard<u8>,
    permit: Permit<'a>,
    owned_permit: OwnedPermit,
    acquire_owned: AcquireOwned,
}

#[test]
fn debug_output_of_locks_and_guards() {
    let lock = RwLock::new(7);
    assert_eq!(format!("{lock:?}"), "RwLock { value: 7 }");
    let w = lock.try_write().unwrap();
    assert_eq!(format!("{w:?}"), "7");
    assert_eq!(format!("{lock:?}"), "RwLock { value: <locked> }");
    let r = RwLockWriteGuard::downgrade(w);
    assert_eq!(format!("{r:?} {r}"), "7 7");
    let m = Arc::new(Mutex::new("x"));
    let g = m.clone().try_lock_owned().unwrap();
    assert_eq!(format!("{g:?} {g}"), "\"x\" x");
}

#[cfg_attr(miri, ignore = "a tokio runtime under Miri is too slow")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn owned_mutex_guard_moves_into_a_spawned_task() {
    let m = Arc::new(Mutex::new(0u64));
    let guard = m.clone().lock_owned().await;
    assert!(m.try_lock().is_none());
    let task = tokio::spawn(async move {
        let mut guard = guard;
        tokio::task::yield_now().await;
        *guard += 1;
        // unlocked here, on whichever worker runs the task
    });
    let waiter = tokio::spawn({
        let m = m.clone();
        async move { *m.lock_owned().await + 10 }
    });
    task.await.unwrap();
    assert_eq!(waiter.await.unwrap(), 11);
    assert_eq!(*m.lock().await, 1);
}

#[cfg_attr(miri, ignore = "a tokio runtime under Miri is too slow")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn owned_rwlock_guards_move_into_spawned_tasks() {
    let lock = Arc::new(RwLock::new(String::new()));
    let mut w = lock.clone().write_owned().await;
    let reader = tokio::spawn({
        let lock = lock.clone();
        async move { lock.read_owned().await.clone() }
    });
    tokio::spawn(async move {
        w.push_str("written");
        let r = OwnedRwLockWriteGuard::downgrade(w);
        assert_eq!(*r, "written");
    })
    .await
    .unwrap();
    assert_eq!(reader.await.unwrap(), "written");
    let r = lock.clone().try_read_owned().unwrap();
    assert!(lock.clone().try_write_owned().is_none());
    drop(r);
    let w = tokio::task::spawn_blocking({
        let lock = lock.clone();
        move || {
            let mut w = lock.clone().write_owned_blocking();
            w.push('!');
            drop(w);
            lock.read_owned_blocking().len()
        }
    });
    assert_eq!(w.await.unwrap(), 8);
}

#[test]
fn owned_mutex_blocking_and_try_forms() {
    let m = Arc::new(Mutex::new(1));
    let g = m.clone().lock_owned_blocking();
    assert!(m.clone().try_lock_owned().is_none());
    let t = std::thread::spawn({
        let m = m.clone();
        move || *m.lock_owned_blocking() * 10
    });
    drop(g);
    assert_eq!(t.join().unwrap(), 10);
    assert!(Arc::ptr_eq(
        OwnedMutexGuard::mutex(&m.clone().try_lock_owned().unwrap()),
        &m
    ));
}

#[test]
fn downgrade_admits_queued_readers_but_not_a_queued_writer() {
    let lock = RwLock::new(0);
    let w = lock.try_write().unwrap();
    let mut reader = pin!(lock.read());
    let mut writer = pin!(lock.write());
    let mut late_reader = pin!(lock.read());
    assert!(poll(reader.as_mut()).is_pending());
    assert!(poll(writer.as_mut()).is_pending());
    assert!(poll(late_reader.as_mut()).is_pending());
    let r = RwLockWriteGuard::downgrade(w);
    // The reader queued first gets in beside the downgraded guard...
    let Poll::Ready(r2) = poll(reader.as_mut()) else {
        panic!("a queued reader must get in after a downgrade")
    };
    // ...the writer behind it waits for both readers, and FIFO keeps the late
    // reader behind the writer.
    assert!(poll(writer.as_mut()).is_pending());
    assert!(poll(late_reader.as_mut()).is_pending());
    drop(r);
    assert!(poll(writer.as_mut()).is_pending());
    drop(r2);
    let Poll::Ready(mut wg) = poll(writer.as_mut()) else {
        panic!("the writer must get in once the readers left")
    };
    *wg = 5;
    drop(wg);
    let Poll::Ready(lr) = poll(late_reader.as_mut()) else {
        panic!()
    };
    assert_eq!(*lr, 5);
}

#[test]
fn guard_maps_keep_the_lock_and_release_it_once() {
    let m = Mutex::new((1, vec![2, 3]));
    let mapped = MutexGuard::map(m.try_lock().unwrap(), |t| &mut t.1);
    assert!(m.try_lock().is_none());
    let mut last = MappedMutexGuard::map(mapped, |v| v.last_mut().unwrap());
    *last = 30;
    drop(last);
    assert_eq!(m.try_lock().unwrap().1, [2, 30]);

    let g = m.try_lock().unwrap();
    let g = MutexGuard::try_map(g, |t| t.1.get_mut(9)).unwrap_err();
    assert_eq!(g.0, 1); // still locked, same guard
    drop(g);
    assert!(m.try_lock().is_some());

    let lock = RwLock::new((1, 2));
    let r = RwLockReadGuard::map(lock.try_read().unwrap(), |t| &t.1);
    assert!(lock.try_write().is_none());
    assert!(lock.try_read().is_some());
    drop(r);
    let w = RwLockWriteGuard::map(lock.try_write().unwrap(), |t| &mut t.0);
    assert!(lock.try_read().is_none());
    drop(w);
    assert!(
        lock.try_write().is_some(),
        "a mapped write guard released every permit"
    );
    let w = RwLockWriteGuard::try_map(lock.try_write().unwrap(), |_| None::<&mut u8>).unwrap_err();
    drop(w);
    assert!(lock.try_write().is_some());
}

#[test]
fn a_panicking_map_closure_unlocks() {
    let m = Mutex::new(0);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = MutexGuard::map(m.try_lock().unwrap(), |_| -> &mut u8 { panic!("in map") });
    }));
    assert!(r.is_err());
    assert!(m.try_lock().is_some());
    let lock = RwLock::new(0);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = RwLockWriteGuard::map(lock.try_write().unwrap(), |_| -> &mut u8 { panic!() });
    }));
    assert!(r.is_err());
    assert!(lock.try_write().is_some());
}

#[test]
fn forget_permits_takes_only_available_ones() {
    let sem = Semaphore::new(5);
    let held = sem.try_acquire(4).unwrap();
    assert_eq!(sem.forget_permits(3), 1);
    assert_eq!(sem.forget_permits(3), 0);
    drop(held);
    assert_eq!(sem.available_permits(), 4);
    // While someone waits, nothing is available, so nothing is forgotten and
    // the waiter's partial grant is untouched.
    let mut big = pin!(sem.acquire(6));
    assert!(poll(big.as_mut()).is_pending());
    assert_eq!(sem.forget_permits(10), 0);
    sem.add_permits(2);
    assert!(poll(big.as_mut()).is_ready());
    sem.close();
    assert!(sem.is_closed());
}

#[test]
fn split_and_merge_permits() {
    let sem = Semaphore::new(5);
    let mut p = sem.try_acquire(5).unwrap();
    assert!(p.split(6).is_none());
    assert_eq!(p.num_permits(), 5);
    let q = p.split(2).unwrap();
    assert_eq!((p.num_permits(), q.num_permits()), (3, 2));
    assert!(std::ptr::eq(q.semaphore(), &sem));
    drop(q);
    assert_eq!(sem.available_permits(), 2);
    p.merge(sem.try_acquire(2).unwrap());
    assert_eq!(p.num_permits(), 5);
    assert_eq!(sem.available_permits(), 0);
    let zero = p.split(0).unwrap();
    assert_eq!(zero.num_permits(), 0);
    drop(zero);
    drop(p);
    assert_eq!(sem.available_permits(), 5);

    let sem = Arc::new(Semaphore::new(3));
    let mut p = sem.clone().try_acquire_owned(3).unwrap();
    let q = p.split(1).unwrap();
    std::thread::spawn(move || drop(q)).join().unwrap();
    assert_eq!(sem.available_permits(), 1);
    p.merge(sem.clone().try_acquire_owned(1).unwrap());
    assert_eq!(p.num_permits(), 3);
    assert!(Arc::ptr_eq(p.semaphore(), &sem));
    drop(p);
    assert_eq!(sem.available_permits(), 3);
}

#[test]
fn merging_permits_of_two_semaphores_panics_and_keeps_both() {
    let a = Semaphore::new(1);
    let b = Semaphore::new(1);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut pa = a.try_acquire(1).unwrap();
        pa.merge(b.try_acquire(1).unwrap());
    }));
    let msg = *r.unwrap_err().downcast::<&str>().unwrap();
    assert!(msg.contains("different semaphores"), "{msg}");
    // Both permits went back to their own semaphore while unwinding.
    assert_eq!((a.available_permits(), b.available_permits()), (1, 1));
}

#[test]
fn add_permits_hands_off_in_fifo_order() {
    let sem = Semaphore::new(0);
    let mut two = pin!(sem.acquire(2));
    let mut one = pin!(sem.acquire(1));
    assert!(poll(two.as_mut()).is_pending());
    assert!(poll(one.as_mut()).is_pending());
    sem.add_permits(1);
    assert!(
        poll(one.as_mut()).is_pending(),
        "no barging past the queued acquire(2)"
    );
    sem.add_permits(2);
    assert!(poll(two.as_mut()).is_ready());
    assert!(poll(one.as_mut()).is_ready());
}

/// A hand-written future with an `AcquireOwned` field, polled through a pin
/// projection: no `Box::pin`.
struct WithPermit<F> {
    acquire: AcquireOwned,
    permit: Option<OwnedPermit>,
    work: F,
}

impl<F: FnMut(&OwnedPermit) -> u32 + Unpin> Future for WithPermit<F> {
    type Output = Result<u32, AcquireError>;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: `acquire` is structurally pinned: never moved out of `self`.
        let this = unsafe { self.get_unchecked_mut() };
        if this.permit.is_none() {
            // SAFETY: as above.
            let acquire = unsafe { Pin::new_unchecked(&mut this.acquire) };
            match acquire.poll(cx) {
                Poll::Ready(Ok(p)) => this.permit = Some(p),
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        Poll::Ready(Ok((this.work)(this.permit.as_ref().unwrap())))
    }
}

#[test]
fn acquire_owned_is_a_nameable_future() {
    let sem = Arc::new(Semaphore::new(1));
    let held = sem.clone().try_acquire_owned(1).unwrap();
    {
        let mut fut = pin!(WithPermit {
            acquire: sem.clone().acquire_owned(1),
            permit: None,
            work: |p: &OwnedPermit| p.num_permits() as u32 * 7,
        });
        assert!(poll(fut.as_mut()).is_pending());
        drop(held);
        assert_eq!(poll(fut.as_mut()), Poll::Ready(Ok(7)));
    } // the permit goes with the future
      // Dropping a queued AcquireOwned cancels it and hands its grant on.
    let held = sem.clone().try_acquire_owned(1).unwrap();
    {
        let mut queued = pin!(sem.clone().acquire_owned(1));
        assert!(poll(queued.as_mut()).is_pending());
        assert!(format!("{queued:?}").contains("Queued"));
    }
    drop(held);
    assert_eq!(sem.available_permits(), 1);
    assert_eq!(
        Arc::strong_count(&sem),
        1,
        "no future or permit kept the Arc"
    );
    sem.close();
    let closed = futures::executor::block_on(sem.clone().acquire_owned(1));
    assert_eq!(closed.unwrap_err(), AcquireError::Closed);
}

#[test]
fn acquire_owned_blocking_waits_for_a_release() {
    let sem = Arc::new(Semaphore::new(0));
    let started = Arc::new(AtomicBool::new(false));
    let t = std::thread::spawn({
        let (sem, started) = (sem.clone(), started.clone());
        move || {
            started.store(true, Ordering::SeqCst);
            sem.acquire_owned_blocking(2).map(|p| p.num_permits())
        }
    });
    while !started.load(Ordering::SeqCst) {
        std::thread::yield_now();
    }
    sem.add_permits(2);
    assert_eq!(t.join().unwrap(), Ok(2));
    assert_eq!(sem.available_permits(), 2);
    sem.close();
    assert_eq!(
        sem.clone().acquire_owned_blocking(1).unwrap_err(),
        AcquireError::Closed
    );
}

/// What the docs tell a tokio user: cancelling loses the place in the queue,
/// and a request larger than the total blocks everyone behind it until close.
#[test]
fn cancelling_loses_the_place_and_an_oversized_head_blocks_until_close() {
    let sem = Semaphore::new(1);
    let held = sem.try_acquire(1).unwrap();
    let mut first = Box::pin(sem.acquire(1));
    let mut second = pin!(sem.acquire(1));
    assert!(poll(first.as_mut()).is_pending());
    assert!(poll(second.as_mut()).is_pending());
    drop(first); // cancelled: its place is gone
    let mut again = pin!(sem.acquire(1));
    assert!(poll(again.as_mut()).is_pending());
    drop(held);
    let Poll::Ready(Ok(p)) = poll(second.as_mut()) else {
        panic!("`second` is now the head")
    };
    assert!(
        poll(again.as_mut()).is_pending(),
        "the re-queued request went to the tail"
    );
    drop(p);
    assert!(poll(again.as_mut()).is_ready());

    let sem = Semaphore::new(2);
    let mut huge = pin!(sem.acquire(3));
    let mut small = pin!(sem.acquire(1));
    assert!(poll(huge.as_mut()).is_pending());
    assert!(
        poll(small.as_mut()).is_pending(),
        "the oversized head blocks it"
    );
    assert!(sem.try_acquire(1).is_err());
    sem.close();
    assert_eq!(
        poll(huge.as_mut()).map(|r| r.err()),
        Poll::Ready(Some(AcquireError::Closed))
    );
    assert_eq!(
        poll(small.as_mut()).map(|r| r.err()),
        Poll::Ready(Some(AcquireError::Closed))
    );
    assert_eq!(sem.available_permits(), 2, "the partial grant went back");
}

#[test]
fn error_enums_are_non_exhaustive_values() {
    // A wildcard arm is required outside the crate (this would not compile
    // without it): the enums may grow.
    #[allow(unreachable_patterns)]
    let describe = |e: AcquireError| match e {
        AcquireError::Closed => "closed",
        AcquireError::TooManyPermits => "too many",
        _ => "other",
    };
    assert_eq!(describe(AcquireError::TooManyPermits), "too many");
    let sem = Semaphore::new(0);
    assert_eq!(
        futures::executor::block_on(sem.acquire(Semaphore::MAX_PERMITS + 1)).unwrap_err(),
        AcquireError::TooManyPermits
    );
}

// Found by mutation testing: the edges of the permit and owned-guard API.

#[test]
fn split_takes_all_or_refuses_more_than_held() {
    let sem = Semaphore::new(3);
    let mut p = sem.try_acquire(3).unwrap();
    let all = p.split(3).expect("splitting off everything is allowed");
    assert_eq!((p.num_permits(), all.num_permits()), (0, 3));
    assert!(p.split(1).is_none());
    drop((p, all));
    assert_eq!(sem.available_permits(), 3);

    let sem = Arc::new(Semaphore::new(3));
    let mut p = sem.clone().try_acquire_owned(2).unwrap();
    assert!(p.split(3).is_none(), "more than held");
    assert_eq!(p.num_permits(), 2);
    let one = p.split(1).unwrap();
    let all = p.split(1).expect("the rest");
    assert_eq!(
        (p.num_permits(), one.num_permits(), all.num_permits()),
        (0, 1, 1)
    );
    drop((p, one, all));
    assert_eq!(sem.available_permits(), 3);
}

#[test]
fn forgetting_an_owned_permit_keeps_its_permits_out() {
    let sem = Arc::new(Semaphore::new(3));
    sem.clone().try_acquire_owned(2).unwrap().forget();
    assert_eq!(sem.available_permits(), 1);
}

#[test]
fn try_new_accepts_up_to_max_permits() {
    assert_eq!(Semaphore::try_new(0).unwrap().available_permits(), 0);
    let max = Semaphore::try_new(Semaphore::MAX_PERMITS).expect("MAX_PERMITS is allowed");
    assert_eq!(max.available_permits(), Semaphore::MAX_PERMITS);
    assert!(Semaphore::try_new(Semaphore::MAX_PERMITS + 1).is_none());
}

#[test]
fn try_write_owned_and_an_owned_downgrade_release_exactly_what_they_hold() {
    let lock = Arc::new(RwLock::new(1u32));
    let w = lock.clone().try_write_owned().expect("free");
    assert!(lock.clone().try_write_owned().is_none(), "held");
    let r = OwnedRwLockWriteGuard::downgrade(w);
    assert_eq!(*r, 1);
    assert!(
        lock.try_read().is_some(),
        "readers share with the downgraded guard"
    );
    assert!(lock.try_write().is_none(), "a writer still waits for it");
    drop(r); // must not over-release: the lock is free, exactly once
    let w = lock.clone().try_write_owned().expect("free again");
    drop(w);
    assert!(lock.try_read().is_some());
}
