//! A pool of 3 permits shared by 20 async tasks of mixed weights and two plain
//! threads. Everyone queues while the pool is fully held; then the pool opens.
//! Prints the queue order, the service order and the peak number of permits
//! held, and checks that the limit held and the service was first-in first-out.
//!
//! `cargo run -p volt-sem --example shared_pool` (or `make demo`).

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use volt_sem::Semaphore;

const POOL: usize = 3;

struct Board {
    held: AtomicUsize,
    peak: AtomicUsize,
    served: Mutex<Vec<String>>,
}

impl Board {
    /// Runs one job holding `n` permits, then gives them back one at a time
    /// (each single release completes at most one waiter, so the order in which
    /// waiters resume is the order in which they were granted).
    fn work(&self, sem: &Semaphore, who: &str, n: usize) {
        let now = self.held.fetch_add(n, SeqCst) + n;
        self.peak.fetch_max(now, SeqCst);
        assert!(now <= POOL, "limit exceeded: {now}");
        self.served.lock().unwrap().push(format!("{who}(w{n})"));
        std::thread::sleep(Duration::from_millis(2));
        for _ in 0..n {
            self.held.fetch_sub(1, SeqCst);
            sem.release(1).unwrap();
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

fn main() {
    let sem = Arc::new(Semaphore::new(POOL));
    let board = Arc::new(Board {
        held: AtomicUsize::new(0),
        peak: AtomicUsize::new(0),
        served: Mutex::new(Vec::new()),
    });
    let gate = sem.try_acquire(POOL).unwrap(); // hold the pool while everyone queues
    let mut queue_order = Vec::new();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let local = tokio::task::LocalSet::new();
    let mut threads = Vec::new();

    for i in 0..22 {
        if i == 7 || i == 15 {
            // a plain thread, blocking
            let name = format!("thread{}", threads.len() + 1);
            let n = 2;
            let (sem, board, who) = (sem.clone(), board.clone(), name.clone());
            threads.push(std::thread::spawn(move || {
                let permit = sem.acquire_blocking(n).unwrap();
                permit.forget();
                board.work(&sem, &who, n);
            }));
            std::thread::sleep(Duration::from_millis(30)); // let it queue before the next
            queue_order.push(format!("{name}(w{n})"));
            continue;
        }
        let n = 1 + (i * 7) % 3; // weights 1..=3
        let name = format!("task{i:02}");
        queue_order.push(format!("{name}(w{n})"));
        let (sem, board) = (sem.clone(), board.clone());
        // Poll the acquire once right here, so the task is queued in this order.
        let (queued_tx, queued_rx) = tokio::sync::oneshot::channel();
        local.spawn_local(async move {
            {
                let mut acquire = pin!(sem.acquire(n));
                let mut queued_tx = Some(queued_tx);
                let permit = std::future::poll_fn(|cx| {
                    let poll = acquire.as_mut().poll(cx);
                    if let Some(tx) = queued_tx.take() {
                        let _ = tx.send(());
                    }
                    poll
                })
                .await
                .unwrap();
                permit.forget(); // `work` gives them back one at a time
            }
            tokio::task::spawn_blocking(move || board.work(&sem, &name, n))
                .await
                .unwrap();
        });
        local.block_on(&rt, async {
            let _ = queued_rx.await;
        });
    }

    println!(
        "volt-sem demo: a pool of {POOL} permits, 20 async tasks + 2 plain threads, weights 1..=3"
    );
    println!("queue order:   {}", queue_order.join(" "));
    // Open the pool one permit at a time, like every holder gives them back.
    gate.forget();
    for _ in 0..POOL {
        sem.release(1).unwrap();
        std::thread::sleep(Duration::from_millis(1));
    }
    local.block_on(&rt, async {
        while board.served.lock().unwrap().len() < queue_order.len() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    });
    rt.block_on(local);
    for t in threads {
        t.join().unwrap();
    }
    let served = board.served.lock().unwrap().clone();
    println!("service order: {}", served.join(" "));
    let peak = board.peak.load(SeqCst);
    println!("peak permits held at once: {peak} (limit {POOL})");
    println!("limit held: {}", if peak <= POOL { "yes" } else { "NO" });
    println!(
        "first-in first-out: {}",
        if served == queue_order { "yes" } else { "NO" }
    );
    println!("permits back in the pool: {}", sem.available_permits());
    if peak > POOL || served != queue_order || sem.available_permits() != POOL {
        std::process::exit(1);
    }
}
