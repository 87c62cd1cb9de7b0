//! Ported from a tokio program: async tasks and a pool of plain blocking
//! threads share one `Arc<Semaphore>` limiting access to a resource (say, 3
//! database connections). Tasks use `acquire(1).await`; threads use
//! `acquire_blocking` and `acquire_owned_blocking`. Both kinds queue in the same
//! FIFO, so neither side can starve the other.
//!
//! Checks that at most 3 connections were ever in use and that both sides
//! got their turns. `cargo run -p volt-sem --example blocking_pool`

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use volt_sem::Semaphore;

const CONNECTIONS: usize = 3;
const ROUNDS: usize = 50;

#[derive(Default)]
struct Db {
    in_use: AtomicUsize,
    peak: AtomicUsize,
    by_tasks: AtomicUsize,
    by_threads: AtomicUsize,
}

impl Db {
    fn enter(&self) {
        let now = self.in_use.fetch_add(1, SeqCst) + 1;
        self.peak.fetch_max(now, SeqCst);
        assert!(now <= CONNECTIONS, "{now} connections in use");
    }
    fn leave(&self) {
        self.in_use.fetch_sub(1, SeqCst);
    }
}

fn main() {
    let sem = Arc::new(Semaphore::new(CONNECTIONS));
    let db = Arc::new(Db::default());

    // Blocking side: two plain threads (a legacy thread pool).
    let threads: Vec<_> = (0..2)
        .map(|i| {
            let (sem, db) = (sem.clone(), db.clone());
            std::thread::spawn(move || {
                for round in 0..ROUNDS {
                    // Borrowed and owned forms, alternately.
                    if round % 2 == 0 {
                        let _conn = sem.acquire_blocking(1).unwrap();
                        db.enter();
                        std::thread::sleep(Duration::from_micros(100));
                        db.leave();
                    } else {
                        let conn = sem.clone().acquire_owned_blocking(1).unwrap();
                        db.enter();
                        std::thread::sleep(Duration::from_micros(100));
                        db.leave();
                        drop(conn);
                    }
                    db.by_threads.fetch_add(1, SeqCst);
                }
                i
            })
        })
        .collect();

    // Async side: a tokio runtime with 4 tasks, plus `spawn_blocking` work that
    // uses the blocking form from inside the runtime's blocking pool.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut tasks = Vec::new();
        for _ in 0..4 {
            let (sem, db) = (sem.clone(), db.clone());
            tasks.push(tokio::spawn(async move {
                for _ in 0..ROUNDS {
                    let _conn = sem.acquire(1).await.unwrap();
                    db.enter();
                    tokio::time::sleep(Duration::from_micros(100)).await;
                    db.leave();
                    db.by_tasks.fetch_add(1, SeqCst);
                }
            }));
        }
        let (sem2, db2) = (sem.clone(), db.clone());
        let blocking = tokio::task::spawn_blocking(move || {
            for _ in 0..ROUNDS {
                let _conn = sem2.acquire_blocking(1).unwrap();
                db2.enter();
                std::thread::sleep(Duration::from_micros(50));
                db2.leave();
                db2.by_threads.fetch_add(1, SeqCst);
            }
        });
        for t in tasks {
            t.await.unwrap();
        }
        blocking.await.unwrap();
    });
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(db.by_tasks.load(SeqCst), 4 * ROUNDS);
    assert_eq!(db.by_threads.load(SeqCst), 3 * ROUNDS);
    assert_eq!(sem.available_permits(), CONNECTIONS);
    println!(
        "blocking_pool: {} uses by tasks, {} by threads, peak {} of {CONNECTIONS} connections",
        db.by_tasks.load(SeqCst),
        db.by_threads.load(SeqCst),
        db.peak.load(SeqCst)
    );
}
