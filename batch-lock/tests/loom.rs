//! loom models of `BatchLock`'s wait-free submit and consumer hand-off.
//! Part of `make test-loom`.
#![cfg(volt_loom)]

use loom::sync::Arc;
use loom::thread;
use volt_sem_batch_lock::BatchLock;

// The core's runner (preemption bound, iteration count for docs/testing.md).
#[path = "../../core/tests/support/loom_model.rs"]
mod loom_model;
use loom_model::model;

/// Every operation runs exactly once and each thread's operations run in its
/// submission order, whoever the consumer is.
fn submitters(threads: usize, ops_each: usize) {
    model(move || {
        let lock = Arc::new(BatchLock::new(Vec::new()));
        let handles: Vec<_> = (1..threads)
            .map(|t| {
                let lock = lock.clone();
                thread::spawn(move || {
                    (0..ops_each).for_each(|i| lock.run(|log: &mut Vec<_>| log.push((t, i))))
                })
            })
            .collect();
        (0..ops_each).for_each(|i| lock.run(|log: &mut Vec<_>| log.push((0, i))));
        handles.into_iter().for_each(|h| h.join().unwrap());
        let log = lock.run(|log| log.clone());
        assert_eq!(log.len(), threads * ops_each);
        for t in 0..threads {
            let mine: Vec<_> = log
                .iter()
                .filter(|(w, _)| *w == t)
                .map(|&(_, i)| i)
                .collect();
            assert_eq!(mine, (0..ops_each).collect::<Vec<_>>());
        }
    });
}

#[test]
fn two_submitters() {
    submitters(2, 1);
}

/// Two operations per thread: a submitter arrives while the consumer retires,
/// including the window where it swapped the tail but has not linked yet, so the
/// consumer leaves SENTINEL and the submitter takes the consumer role over.
#[test]
fn handoff_through_sentinel_and_arrival_while_retiring() {
    submitters(2, 2);
}

#[test]
fn three_submitters() {
    submitters(3, 1);
}

/// The async form under loom's executor, racing a blocking submitter.
#[test]
fn async_submitter_races_blocking_submitter() {
    model(|| {
        let lock = Arc::new(BatchLock::new(0));
        let l2 = lock.clone();
        let t = thread::spawn(move || l2.run(|v| *v += 1));
        loom::future::block_on(lock.run_async(|v| *v += 10));
        t.join().unwrap();
        assert_eq!(lock.run(|v| *v), 11);
    });
}
