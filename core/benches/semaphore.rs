//! volt-sem beside tokio and async-lock (and std/parking_lot for the mutex), in
//! one run, on the same workloads. `make bench-throughput` runs it 5 times
//! (`scripts/bench_report.py rust-throughput`), keeps each run's criterion
//! medians in core/benches/results/throughput.json, and the tables and charts
//! of docs/benchmarks.md are drawn from that file. Never run in CI.

use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::sync::{Arc, Barrier};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion};
use futures::task::noop_waker_ref;

type Group<'a> = BenchmarkGroup<'a, criterion::measurement::WallTime>;

/// Polls an uncontended acquire to completion. A `Pending` here is a
/// cooperative yield (volt-sem yields once per 128 immediate grants; tokio's
/// semaphore has no budget outside a runtime), which an executor answers by
/// polling again: so does this, and the yield's cost is in the figure.
fn ready<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(noop_waker_ref());
    for _ in 0..2 {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
    panic!("uncontended acquire was not ready")
}

fn pending<F: Future>(f: std::pin::Pin<&mut F>) {
    assert!(f
        .poll(&mut Context::from_waker(noop_waker_ref()))
        .is_pending());
}

fn poll_ready<F: Future>(f: std::pin::Pin<&mut F>) -> F::Output {
    match f.poll(&mut Context::from_waker(noop_waker_ref())) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("hand-off did not complete the head"),
    }
}

fn configure(group: &mut Group<'_>) {
    group
        .sample_size(30)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
}

/// (a) uncontended try_acquire + release
fn uncontended_try(c: &mut Criterion) {
    let mut g = c.benchmark_group("a_uncontended_try_acquire_release");
    configure(&mut g);
    let volt = volt_sem::Semaphore::new(8);
    g.bench_function("volt-sem", |b| {
        b.iter(|| drop(black_box(volt.try_acquire(1).unwrap())))
    });
    // The same with `stats` recording (the bindings' setting): the cost of
    // two Relaxed counter increments on a path of two CAS.
    let recording = volt_sem::Semaphore::new(8);
    recording.enable_stats();
    g.bench_function("volt-sem (stats on)", |b| {
        b.iter(|| drop(black_box(recording.try_acquire(1).unwrap())))
    });
    let tokio = tokio::sync::Semaphore::new(8);
    g.bench_function("tokio", |b| {
        b.iter(|| drop(black_box(tokio.try_acquire().unwrap())))
    });
    let al = async_lock::Semaphore::new(8);
    g.bench_function("async-lock", |b| {
        b.iter(|| drop(black_box(al.try_acquire().unwrap())))
    });
    g.finish();
}

/// (b) uncontended acquire(1).await + drop
fn uncontended_async(c: &mut Criterion) {
    let mut g = c.benchmark_group("b_uncontended_acquire_await");
    configure(&mut g);
    let volt = volt_sem::Semaphore::new(8);
    g.bench_function("volt-sem", |b| {
        b.iter(|| drop(black_box(ready(volt.acquire(1)).unwrap())))
    });
    let tokio = tokio::sync::Semaphore::new(8);
    g.bench_function("tokio", |b| {
        b.iter(|| drop(black_box(ready(tokio.acquire()).unwrap())))
    });
    let al = async_lock::Semaphore::new(8);
    g.bench_function("async-lock", |b| {
        b.iter(|| drop(black_box(ready(al.acquire()))))
    });
    g.finish();
}

const TASKS: usize = 8;
const PER_TASK: usize = 1250;

/// Runs `TASKS` tasks doing `PER_TASK` acquire/yield/release rounds each on a
/// 2-worker runtime; returns the time per acquire.
fn contended_run<S, F, Fut>(
    rt: &tokio::runtime::Runtime,
    sem: Arc<S>,
    iters: u64,
    round: F,
) -> Duration
where
    S: Send + Sync + 'static,
    F: Fn(Arc<S>) -> Fut + Send + Sync + Copy + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let start = Instant::now();
        rt.block_on(async {
            let tasks: Vec<_> = (0..TASKS)
                .map(|_| {
                    let sem = sem.clone();
                    tokio::spawn(async move {
                        for _ in 0..PER_TASK {
                            round(sem.clone()).await;
                        }
                    })
                })
                .collect();
            for t in tasks {
                t.await.unwrap();
            }
        });
        total += start.elapsed();
    }
    total / (TASKS * PER_TASK) as u32
}

/// (c) contended: 8 tasks x 1250 `acquire(1).await` + drop on 2 permits, 2
/// workers (blitz-io's benchmark); `c2_*`: the same with the permit held across
/// a `yield_now`, so that most acquires really queue and are handed over.
fn contended(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    for (name, hold) in [
        ("c_contended_8_tasks_2_permits", false),
        ("c2_contended_held_across_yield", true),
    ] {
        let mut g = c.benchmark_group(name);
        configure(&mut g);
        g.bench_function("volt-sem", |b| {
            b.iter_custom(|iters| {
                contended_run(
                    &rt,
                    Arc::new(volt_sem::Semaphore::new(2)),
                    iters,
                    move |s| async move {
                        let p = s.acquire(1).await.unwrap();
                        if hold {
                            tokio::task::yield_now().await;
                        }
                        drop(p);
                    },
                )
            })
        });
        g.bench_function("tokio", |b| {
            b.iter_custom(|iters| {
                contended_run(
                    &rt,
                    Arc::new(tokio::sync::Semaphore::new(2)),
                    iters,
                    move |s| async move {
                        let p = s.acquire().await.unwrap();
                        if hold {
                            tokio::task::yield_now().await;
                        }
                        drop(p);
                    },
                )
            })
        });
        g.bench_function("async-lock", |b| {
            b.iter_custom(|iters| {
                contended_run(
                    &rt,
                    Arc::new(async_lock::Semaphore::new(2)),
                    iters,
                    move |s| async move {
                        let p = s.acquire().await;
                        if hold {
                            tokio::task::yield_now().await;
                        }
                        drop(p);
                    },
                )
            })
        });
        g.finish();
    }
}

const CHAIN: usize = 64;

/// (d) hand-off chain: 64 queued waiters, released one permit at a time; each
/// release completes the head. Time per hand-off (release + completion poll).
fn handoff_chain(c: &mut Criterion) {
    let mut g = c.benchmark_group("d_handoff_chain_64");
    configure(&mut g);
    g.bench_function("volt-sem", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let sem = volt_sem::Semaphore::new(0);
                let mut waiters: Vec<_> = (0..CHAIN).map(|_| Box::pin(sem.acquire(1))).collect();
                waiters.iter_mut().for_each(|w| pending(w.as_mut()));
                let start = Instant::now();
                for w in waiters.iter_mut() {
                    sem.release(1).unwrap();
                    poll_ready(w.as_mut()).unwrap().forget();
                }
                total += start.elapsed();
            }
            total / CHAIN as u32
        })
    });
    g.bench_function("tokio", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let sem = tokio::sync::Semaphore::new(0);
                let mut waiters: Vec<_> = (0..CHAIN).map(|_| Box::pin(sem.acquire())).collect();
                waiters.iter_mut().for_each(|w| pending(w.as_mut()));
                let start = Instant::now();
                for w in waiters.iter_mut() {
                    sem.add_permits(1);
                    poll_ready(w.as_mut()).unwrap().forget();
                }
                total += start.elapsed();
            }
            total / CHAIN as u32
        })
    });
    g.bench_function("async-lock", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                // async-lock has no add_permits: start with one permit held, and
                // pass it down the chain (release = dropping the guard).
                let sem = async_lock::Semaphore::new(1);
                let mut held = Some(sem.try_acquire().unwrap());
                let mut waiters: Vec<_> = (0..CHAIN).map(|_| Box::pin(sem.acquire())).collect();
                waiters.iter_mut().for_each(|w| pending(w.as_mut()));
                let start = Instant::now();
                for w in waiters.iter_mut() {
                    drop(held.take());
                    held = Some(poll_ready(w.as_mut()));
                }
                total += start.elapsed();
                drop(held);
            }
            total / CHAIN as u32
        })
    });
    g.finish();
}

const LOCKS: usize = 20_000;

/// Two threads each doing `LOCKS` lock/increment/unlock, started together
/// by a barrier; time per lock, from the first thread's start to the last
/// one's end (not the threads' spawn and join). Spawned one after the other
/// without a barrier, the first thread ran alone, uncontended, for most of
/// its loop before the second was scheduled (`cargo bench --bench handoff`,
/// which starts its threads the same way, prints that head start).
fn two_threads(iters: u64, op: impl Fn() + Sync) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let start_line = Barrier::new(2);
        let spans: Vec<(Instant, Instant)> = std::thread::scope(|s| {
            let threads: Vec<_> = (0..2)
                .map(|_| {
                    s.spawn(|| {
                        start_line.wait();
                        let begin = Instant::now();
                        (0..LOCKS).for_each(|_| op());
                        (begin, Instant::now())
                    })
                })
                .collect();
            threads.into_iter().map(|t| t.join().unwrap()).collect()
        });
        let begin = spans.iter().map(|s| s.0).min().expect("two threads");
        let end = spans.iter().map(|s| s.1).max().expect("two threads");
        total += end - begin;
    }
    total / (2 * LOCKS) as u32
}

/// (e) Mutex lock/unlock from 2 threads, blocking.
fn mutex(c: &mut Criterion) {
    let mut g = c.benchmark_group("e_mutex_2_threads_blocking");
    configure(&mut g);
    let volt = volt_sem::Mutex::new(0u64);
    g.bench_function("volt-sem", |b| {
        b.iter_custom(|i| two_threads(i, || *volt.lock_blocking() += 1))
    });
    let std_m = std::sync::Mutex::new(0u64);
    g.bench_function("std", |b| {
        b.iter_custom(|i| two_threads(i, || *std_m.lock().unwrap() += 1))
    });
    let pl = parking_lot::Mutex::new(0u64);
    g.bench_function("parking_lot", |b| {
        b.iter_custom(|i| two_threads(i, || *pl.lock() += 1))
    });
    let tokio_m = tokio::sync::Mutex::new(0u64);
    g.bench_function("tokio", |b| {
        b.iter_custom(|i| two_threads(i, || *tokio_m.blocking_lock() += 1))
    });
    g.finish();
}

criterion_group!(
    benches,
    uncontended_try,
    uncontended_async,
    contended,
    handoff_chain,
    mutex
);
criterion_main!(benches);
