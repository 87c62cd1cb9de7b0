//! BatchLock vs std::sync::Mutex vs parking_lot::Mutex: throughput (criterion,
//! fixed work per thread) and fairness (fixed time, spread of per-thread
//! operation counts), 2 and 4 threads, a short critical section (increment a
//! counter) and a longer one (touch 8 cache lines). `cargo bench -p
//! volt-sem-batch-lock --bench batch_lock` (`make bench-batch`); fairness
//! results go to target/criterion/fairness.json.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use criterion::{criterion_group, Criterion};
use volt_sem_batch_lock::BatchLock;

/// Eight cache lines of state.
#[repr(align(64))]
#[derive(Default, Clone, Copy)]
struct Line([u64; 8]);

#[derive(Default)]
struct State {
    counter: u64,
    lines: [Line; 8],
}

fn short(s: &mut State) {
    s.counter += 1;
}

fn long(s: &mut State) {
    for line in s.lines.iter_mut() {
        line.0[0] = line.0[0].wrapping_add(black_box(1));
    }
    s.counter += 1;
}

trait Lock: Sync {
    const NAME: &'static str;
    fn new() -> Self;
    fn with(&self, f: fn(&mut State));
}

impl Lock for BatchLock<State> {
    const NAME: &'static str = "BatchLock";
    fn new() -> Self {
        BatchLock::new(State::default())
    }
    fn with(&self, f: fn(&mut State)) {
        self.run(f)
    }
}

impl Lock for std::sync::Mutex<State> {
    const NAME: &'static str = "std::Mutex";
    fn new() -> Self {
        std::sync::Mutex::new(State::default())
    }
    fn with(&self, f: fn(&mut State)) {
        f(&mut self.lock().unwrap())
    }
}

impl Lock for parking_lot::Mutex<State> {
    const NAME: &'static str = "parking_lot";
    fn new() -> Self {
        parking_lot::Mutex::new(State::default())
    }
    fn with(&self, f: fn(&mut State)) {
        f(&mut self.lock())
    }
}

const OPS: usize = 20_000;

fn throughput<L: Lock>(threads: usize, cs: fn(&mut State), iters: u64) -> Duration {
    let lock = L::new();
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let start = Instant::now();
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| (0..OPS).for_each(|_| lock.with(cs)));
            }
        });
        total += start.elapsed();
    }
    total / (threads * OPS) as u32 // time per operation
}

fn bench_throughput(c: &mut Criterion) {
    for (cs_name, cs) in [
        ("short", short as fn(&mut State)),
        ("long", long as fn(&mut State)),
    ] {
        for threads in [2, 4] {
            let mut g = c.benchmark_group(format!("lock_{cs_name}_{threads}t"));
            g.sample_size(15)
                .warm_up_time(Duration::from_millis(300))
                .measurement_time(Duration::from_secs(2));
            g.bench_function(BatchLock::<State>::NAME, |b| {
                b.iter_custom(|i| throughput::<BatchLock<State>>(threads, cs, i))
            });
            g.bench_function(std::sync::Mutex::<State>::NAME, |b| {
                b.iter_custom(|i| throughput::<std::sync::Mutex<State>>(threads, cs, i))
            });
            g.bench_function(parking_lot::Mutex::<State>::NAME, |b| {
                b.iter_custom(|i| throughput::<parking_lot::Mutex<State>>(threads, cs, i))
            });
            g.finish();
        }
    }
}

/// Runs `threads` threads for `window`, each counting its operations; returns
/// (operations per second, (max - min) / mean of the per-thread counts).
fn fairness<L: Lock>(threads: usize, cs: fn(&mut State), window: Duration) -> (f64, f64) {
    let lock = L::new();
    let stop = AtomicBool::new(false);
    let counts: Vec<u64> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut n = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        lock.with(cs);
                        n += 1;
                    }
                    n
                })
            })
            .collect();
        std::thread::sleep(window);
        stop.store(true, Ordering::Relaxed);
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let total: u64 = counts.iter().sum();
    let mean = total as f64 / threads as f64;
    let spread = (*counts.iter().max().unwrap() - *counts.iter().min().unwrap()) as f64 / mean;
    (total as f64 / window.as_secs_f64(), spread)
}

fn report_fairness() {
    let window = Duration::from_millis(500);
    let mut rows = Vec::new();
    println!("\nfairness over {window:?} (spread = (max - min) / mean of per-thread op counts; lower is fairer)");
    for (cs_name, cs) in [
        ("short", short as fn(&mut State)),
        ("long", long as fn(&mut State)),
    ] {
        for threads in [2, 4] {
            for (name, (ops, spread)) in [
                (
                    BatchLock::<State>::NAME,
                    fairness::<BatchLock<State>>(threads, cs, window),
                ),
                (
                    std::sync::Mutex::<State>::NAME,
                    fairness::<std::sync::Mutex<State>>(threads, cs, window),
                ),
                (
                    parking_lot::Mutex::<State>::NAME,
                    fairness::<parking_lot::Mutex<State>>(threads, cs, window),
                ),
            ] {
                println!(
                    "{cs_name:>5} {threads}t {name:<12} {:>12.0} ops/s  spread {spread:.3}",
                    ops
                );
                rows.push(format!(
                    "{{\"cs\":\"{cs_name}\",\"threads\":{threads},\"lock\":\"{name}\",\"ops_per_sec\":{ops:.0},\"spread\":{spread:.4}}}"
                ));
            }
        }
    }
    // Beside criterion's own results (benches run with the package as cwd).
    let target = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap();
    let path = target.join("criterion").join("fairness.json");
    let _ = std::fs::create_dir_all(path.parent().unwrap());
    let _ = std::fs::write(&path, format!("[{}]\n", rows.join(",\n")));
}

criterion_group!(benches, bench_throughput);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    report_fairness();
}
