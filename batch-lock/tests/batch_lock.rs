//! `BatchLock`: every operation runs exactly once, per-thread order is kept,
//! panics stay with their submitter, and the async form works on a runtime.

use std::sync::Arc;

use volt_sem_batch_lock::BatchLock;

#[test]
fn counts_exactly_across_threads_and_keeps_per_thread_order() {
    let lock = Arc::new(BatchLock::new(Vec::<(usize, usize)>::new()));
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let lock = lock.clone();
            std::thread::spawn(move || {
                for i in 0..5000 {
                    let len = lock.run(|log| {
                        log.push((t, i));
                        log.len()
                    });
                    assert!(len > i);
                }
            })
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    let log = Arc::try_unwrap(lock).ok().unwrap().into_inner();
    assert_eq!(log.len(), 20_000);
    for t in 0..4 {
        let mine: Vec<usize> = log
            .iter()
            .filter(|(who, _)| *who == t)
            .map(|&(_, i)| i)
            .collect();
        assert_eq!(
            mine,
            (0..5000).collect::<Vec<_>>(),
            "thread {t}'s operations reordered"
        );
    }
}

#[test]
fn a_panicking_operation_panics_in_its_submitter_only() {
    let lock = BatchLock::new(0);
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        lock.run(|v| {
            *v += 1;
            panic!("boom")
        })
    }));
    assert!(caught.is_err());
    assert_eq!(
        lock.run(|v| *v),
        1,
        "the lock stays usable and the state keeps its writes"
    );
}

#[test]
fn async_and_blocking_submitters_share_one_lock() {
    let lock = Arc::new(BatchLock::new(0u64));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let blocking = {
        let lock = lock.clone();
        std::thread::spawn(move || (0..5000).for_each(|_| lock.run(|v| *v += 1)))
    };
    rt.block_on(async {
        let tasks: Vec<_> = (0..8)
            .map(|_| {
                let lock = lock.clone();
                tokio::spawn(async move {
                    for _ in 0..1000 {
                        lock.run_async(|v| *v += 1).await;
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
    });
    blocking.join().unwrap();
    assert_eq!(lock.run(|v| *v), 13_000);
}
