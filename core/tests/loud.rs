//! Failures that used to be silent (issue 20) and are now loud: a permit that
//! cannot go back into an over-filled semaphore, `add_permits` beyond the
//! maximum, and (feature `tokio`) a blocking acquire that would stall a tokio
//! runtime. `make test-core` runs this file with and without `tokio`.

#![cfg(not(volt_loom))]

use std::sync::Arc;

use volt_sem::Semaphore;

fn panic_message(r: std::thread::Result<()>) -> String {
    let e = r.expect_err("expected a panic");
    if let Some(s) = e.downcast_ref::<String>() {
        s.clone()
    } else {
        e.downcast_ref::<&str>().unwrap().to_string()
    }
}

#[test]
fn a_permit_dropped_into_an_over_filled_semaphore_panics() {
    let sem = Semaphore::new(2);
    let permit = sem.try_acquire(2).unwrap();
    sem.add_permits(Semaphore::MAX_PERMITS); // someone over-fills it
    let msg = panic_message(std::panic::catch_unwind(std::panic::AssertUnwindSafe(
        || drop(permit),
    )));
    assert!(
        msg.contains("over-filled") && msg.contains("2 permits lost"),
        "{msg}"
    );
    assert_eq!(sem.available_permits(), Semaphore::MAX_PERMITS);

    let sem = Arc::new(Semaphore::new(1));
    let owned = sem.clone().try_acquire_owned(1).unwrap();
    sem.add_permits(Semaphore::MAX_PERMITS);
    let msg = panic_message(std::panic::catch_unwind(std::panic::AssertUnwindSafe(
        || drop(owned),
    )));
    assert!(msg.contains("1 permits lost"), "{msg}");
}

#[test]
fn add_permits_beyond_the_maximum_panics_and_adds_nothing() {
    let sem = Semaphore::new(1);
    let msg = panic_message(std::panic::catch_unwind(|| {
        sem.add_permits(Semaphore::MAX_PERMITS)
    }));
    assert!(msg.contains("exceed MAX_PERMITS"), "{msg}");
    assert_eq!(sem.available_permits(), 1);
    // The value-returning form reports the same as an error.
    let err = sem.release(Semaphore::MAX_PERMITS).unwrap_err();
    assert_eq!(err.unreleased(), Semaphore::MAX_PERMITS);
}

#[test]
fn a_refused_add_permits_leaves_the_nominal_total_as_it_was() {
    let sem = Semaphore::new(10);
    let held = sem.try_acquire(4).unwrap();
    for n in [Semaphore::MAX_PERMITS, usize::MAX] {
        let msg = panic_message(std::panic::catch_unwind(|| sem.add_permits(n)));
        assert!(msg.contains("exceed MAX_PERMITS"), "{msg}");
        let i = sem.inspect();
        assert_eq!(
            (i.total, i.available, i.held()),
            (10, 6, 4),
            "after add_permits({n})"
        );
    }
    drop(held);
}

#[cfg(feature = "tokio")]
mod with_tokio {
    use super::*;

    fn contended() -> (Arc<Semaphore>, volt_sem::OwnedPermit) {
        let sem = Arc::new(Semaphore::new(1));
        let held = sem.clone().try_acquire_owned(1).unwrap();
        (sem, held)
    }

    #[test]
    fn blocking_acquire_inside_a_current_thread_runtime_task_panics() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let (sem, _held) = contended();
        let r = rt.block_on(async {
            let sem = sem.clone();
            tokio::spawn(async move {
                let _ = sem.acquire_blocking(1); // would deadlock: nobody can release
            })
            .await
        });
        let msg = panic_message(r.map_err(|e| e.into_panic()));
        assert!(msg.contains("running a tokio task"), "{msg}");
        // The budget probe gave the budget back: the runtime still works.
        assert_eq!(rt.block_on(async { 5 }), 5);
    }

    #[test]
    fn blocking_lock_inside_block_on_panics() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .build()
            .unwrap();
        let m = volt_sem::Mutex::new(0);
        let _held = m.try_lock().unwrap();
        let msg = panic_message(std::panic::catch_unwind(std::panic::AssertUnwindSafe(
            || {
                rt.block_on(async {
                    let _ = m.lock_blocking();
                })
            },
        )));
        assert!(msg.contains("running a tokio task"), "{msg}");
    }

    #[test]
    fn blocking_acquire_is_fine_in_spawn_blocking_and_when_uncontended() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_time()
            .build()
            .unwrap();
        let (sem, held) = contended();
        rt.block_on(async {
            let blocked = tokio::task::spawn_blocking({
                let sem = sem.clone();
                move || sem.acquire_blocking(1).map(|p| p.num_permits())
            });
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            drop(held);
            assert_eq!(blocked.await.unwrap(), Ok(1));
            // Uncontended, a blocking call cannot stall anything: allowed.
            assert_eq!(sem.acquire_blocking(1).unwrap().num_permits(), 1);
        });
    }

    #[test]
    fn blocking_acquire_in_block_in_place_is_allowed() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_time()
            .build()
            .unwrap();
        let (sem, held) = contended();
        rt.block_on(async {
            let releaser = tokio::spawn(async move {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                drop(held);
            });
            let task = tokio::spawn({
                let sem = sem.clone();
                async move {
                    tokio::task::block_in_place(|| sem.acquire_blocking(1).map(|p| p.num_permits()))
                }
            });
            assert_eq!(task.await.unwrap(), Ok(1));
            releaser.await.unwrap();
        });
    }
}
