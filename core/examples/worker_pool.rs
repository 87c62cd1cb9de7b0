//! Ported from a `tokio::sync::Semaphore` program: a weighted worker pool on a
//! multi-threaded tokio runtime. Jobs cost 1 to 4 units of a budget of 6; each
//! acquires its weight as an `OwnedPermit`, which moves into the spawned task
//! and is released when the task ends. A hand-written `Throttled` future keeps
//! the named `AcquireOwned` future as a field (no `Box::pin`), the way a
//! tower-style service stores its pending acquire.
//!
//! Checks that the budget was never exceeded and every job ran.
//! `cargo run -p volt-sem --example worker_pool`

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use volt_sem::{AcquireError, AcquireOwned, OwnedPermit, Semaphore};

const BUDGET: usize = 6;
const JOBS: usize = 40;

/// Units in use right now, and the most ever in use.
#[derive(Default)]
struct Gauge {
    now: AtomicUsize,
    peak: AtomicUsize,
    done: AtomicUsize,
}

impl Gauge {
    async fn run_job(&self, id: usize, permit: &OwnedPermit) {
        let w = permit.num_permits();
        let now = self.now.fetch_add(w, SeqCst) + w;
        self.peak.fetch_max(now, SeqCst);
        assert!(now <= BUDGET, "job {id}: {now} units in use");
        tokio::time::sleep(Duration::from_micros(200 * w as u64)).await;
        self.now.fetch_sub(w, SeqCst);
        self.done.fetch_add(1, SeqCst);
    }
}

/// Waits for `weight` permits, then yields them to the caller. A plain
/// struct with the named future in it: what `acquire_owned` could not be
/// while it returned an anonymous `async fn` future.
struct Throttled {
    acquire: AcquireOwned,
}

impl Future for Throttled {
    type Output = Result<OwnedPermit, AcquireError>;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: structural pinning: `acquire` is never moved out of `self`.
        unsafe { self.map_unchecked_mut(|t| &mut t.acquire) }.poll(cx)
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    let sem = Arc::new(Semaphore::new(BUDGET));
    let gauge = Arc::new(Gauge::default());
    rt.block_on(async {
        let mut tasks = Vec::new();
        for id in 0..JOBS {
            let weight = 1 + id % 4;
            // The dispatcher waits for the permit, then hands it to the task:
            // admission is FIFO, so a weight-4 job is never starved by 1s.
            let permit = Throttled {
                acquire: sem.clone().acquire_owned(weight),
            }
            .await
            .expect("the pool is never closed");
            let gauge = gauge.clone();
            tasks.push(tokio::spawn(async move {
                gauge.run_job(id, &permit).await;
                drop(permit); // explicit: the permit lived in the task
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
    });
    assert_eq!(gauge.done.load(SeqCst), JOBS);
    assert_eq!(sem.available_permits(), BUDGET);
    println!(
        "worker_pool: {JOBS} jobs, peak {} of {BUDGET} units in use",
        gauge.peak.load(SeqCst)
    );
}
