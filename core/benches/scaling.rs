//! How throughput and fairness hold up as threads, executor workers and
//! processes grow, side by side with the peers in the same run:
//!
//! * `mutex`: N threads lock, run a critical section of about 40 ns, unlock,
//!   as fast as they can: volt-sem's FIFO `Mutex::lock_blocking` against
//!   `std::sync::Mutex`, `parking_lot::Mutex` and parking_lot with
//!   `unlock_fair`. Fairness is the fewest locks one thread got divided by
//!   the most (1.0: all alike).
//! * `tokio`: a multi-thread runtime of W workers, 4W tasks taking one of 2
//!   permits and yielding once while they hold it: volt-sem's `Semaphore`
//!   against tokio's and async-lock's. Fairness over tasks.
//! * `processes`: P processes take and give back the one permit of a named
//!   semaphore (`volt_sem_shm`, blocking) against a POSIX named semaphore
//!   (`sem_open`, `sem_wait`/`sem_post`, which lets a waker barge).
//!
//! Not a criterion bench: fairness needs each thread's count, and the
//! process runs need their own processes. One JSON object per line on
//! stdout (`make bench-scaling` keeps them in
//! `core/benches/results/scaling.json`; `scripts/bench_charts.py` draws
//! `docs/img/scaling.svg`).
//!
//! ```text
//! cargo bench --manifest-path core/benches/Cargo.toml --bench scaling -- \
//!     [--secs 1.0] [--threads 1,2,4,8] [--only mutex|tokio|processes] [--impl std]
//! ```

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// About 40 ns of work on this repository's machines: what the lock guards.
fn critical_section(x: &mut u64) {
    for i in 0..24u64 {
        *x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
    }
}

/// A lock under test: lock, run `f`, unlock.
trait Lock: Send + Sync + 'static {
    fn with(&self, f: impl FnOnce(&mut u64));
}

struct Volt(volt_sem::Mutex<u64>);
impl Lock for Volt {
    fn with(&self, f: impl FnOnce(&mut u64)) {
        f(&mut self.0.lock_blocking());
    }
}

struct Std(std::sync::Mutex<u64>);
impl Lock for Std {
    fn with(&self, f: impl FnOnce(&mut u64)) {
        f(&mut self.0.lock().unwrap());
    }
}

struct Parking(parking_lot::Mutex<u64>);
impl Lock for Parking {
    fn with(&self, f: impl FnOnce(&mut u64)) {
        f(&mut self.0.lock());
    }
}

struct ParkingFair(parking_lot::Mutex<u64>);
impl Lock for ParkingFair {
    fn with(&self, f: impl FnOnce(&mut u64)) {
        let mut g = self.0.lock();
        f(&mut g);
        parking_lot::MutexGuard::unlock_fair(g);
    }
}

/// What one run measured.
struct Run {
    ops_per_sec: f64,
    fairness: f64,
}

impl Run {
    fn of(counts: &[u64], secs: f64) -> Run {
        let total: u64 = counts.iter().sum();
        let max = counts.iter().copied().max().unwrap_or(0);
        let min = counts.iter().copied().min().unwrap_or(0);
        Run {
            ops_per_sec: total as f64 / secs,
            fairness: if max == 0 {
                0.0
            } else {
                min as f64 / max as f64
            },
        }
    }
}

fn run_threads<L: Lock>(lock: L, threads: usize, secs: f64) -> Run {
    let lock = Arc::new(lock);
    let stop = Arc::new(AtomicBool::new(false));
    let start = Arc::new(Barrier::new(threads + 1));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (lock, stop, start) = (lock.clone(), stop.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    lock.with(critical_section);
                    n += 1;
                }
                n
            })
        })
        .collect();
    start.wait();
    let t = Instant::now();
    std::thread::sleep(Duration::from_secs_f64(secs));
    stop.store(true, Ordering::Relaxed);
    let counts: Vec<u64> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    Run::of(&counts, t.elapsed().as_secs_f64())
}

fn mutex(threads: &[usize], secs: f64, only: Option<&str>) {
    let wants = |name: &str| only.is_none_or(|o| o == name);
    for &t in threads {
        if wants("volt-sem") {
            let r = run_threads(Volt(volt_sem::Mutex::new(0)), t, secs);
            emit("mutex", "volt-sem", t, r);
        }
        if wants("std") {
            emit(
                "mutex",
                "std",
                t,
                run_threads(Std(std::sync::Mutex::new(0)), t, secs),
            );
        }
        if wants("parking_lot") {
            let r = run_threads(Parking(parking_lot::Mutex::new(0)), t, secs);
            emit("mutex", "parking_lot", t, r);
        }
        if wants("parking_lot unlock_fair") {
            let r = run_threads(ParkingFair(parking_lot::Mutex::new(0)), t, secs);
            emit("mutex", "parking_lot unlock_fair", t, r);
        }
    }
}

/// An async semaphore of 2 permits under test.
#[derive(Clone)]
enum AsyncSem {
    Volt(Arc<volt_sem::Semaphore>),
    Tokio(Arc<tokio::sync::Semaphore>),
    AsyncLock(Arc<async_lock::Semaphore>),
}

impl AsyncSem {
    async fn hold_once(&self) {
        match self {
            AsyncSem::Volt(s) => {
                let _p = s.acquire(1).await.unwrap();
                tokio::task::yield_now().await;
            }
            AsyncSem::Tokio(s) => {
                let _p = s.acquire().await.unwrap();
                tokio::task::yield_now().await;
            }
            AsyncSem::AsyncLock(s) => {
                let _p = s.acquire().await;
                tokio::task::yield_now().await;
            }
        }
    }
}

fn run_tasks(sem: AsyncSem, workers: usize, secs: f64) -> Run {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_time()
        .build()
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let counts: Arc<Vec<AtomicU64>> =
        Arc::new((0..4 * workers).map(|_| AtomicU64::new(0)).collect());
    let t = Instant::now();
    rt.block_on(async {
        let tasks: Vec<_> = (0..4 * workers)
            .map(|i| {
                let (sem, stop, counts) = (sem.clone(), stop.clone(), counts.clone());
                tokio::spawn(async move {
                    while !stop.load(Ordering::Relaxed) {
                        sem.hold_once().await;
                        counts[i].fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_secs_f64(secs)).await;
        stop.store(true, Ordering::Relaxed);
        for task in tasks {
            task.await.unwrap();
        }
    });
    let counts: Vec<u64> = counts.iter().map(|c| c.load(Ordering::Relaxed)).collect();
    Run::of(&counts, t.elapsed().as_secs_f64())
}

fn tokio_workers(workers: &[usize], secs: f64) {
    for &w in workers {
        let volt = AsyncSem::Volt(Arc::new(volt_sem::Semaphore::new(2)));
        emit("tokio", "volt-sem", w, run_tasks(volt, w, secs));
        let tokio = AsyncSem::Tokio(Arc::new(tokio::sync::Semaphore::new(2)));
        emit("tokio", "tokio", w, run_tasks(tokio, w, secs));
        let al = AsyncSem::AsyncLock(Arc::new(async_lock::Semaphore::new(2)));
        emit("tokio", "async-lock", w, run_tasks(al, w, secs));
    }
}

#[cfg(target_os = "linux")]
mod processes {
    //! The process runs: this benchmark binary again, as a child
    //! (`VOLT_SCALING_CHILD=kind,name,start_unix_nanos,secs`), prints its
    //! count on stdout.

    use super::*;
    use std::ffi::CString;
    use std::process::{Command, Stdio};
    use std::time::{SystemTime, UNIX_EPOCH};

    const ENV: &str = "VOLT_SCALING_CHILD";

    fn unix_nanos() -> u128 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    }

    /// In a child: runs its part and exits; in the parent: returns.
    pub fn child_main() {
        let Ok(spec) = std::env::var(ENV) else { return };
        let parts: Vec<&str> = spec.split(',').collect();
        let (kind, name) = (parts[0], parts[1]);
        let start: u128 = parts[2].parse().unwrap();
        let secs: f64 = parts[3].parse().unwrap();
        let mut x = 0u64;
        let mut n = 0u64;
        let mut body = |take: &mut dyn FnMut()| {
            // Everyone starts together: the parent set the start a little
            // after spawning the last child.
            while unix_nanos() < start {
                std::thread::sleep(Duration::from_micros(200));
            }
            let end = Instant::now() + Duration::from_secs_f64(secs);
            while Instant::now() < end {
                for _ in 0..64 {
                    take();
                    n += 1;
                }
            }
        };
        match kind {
            "volt-sem" => {
                let sem = volt_sem_shm::SharedSemaphore::open(name, 1, Default::default()).unwrap();
                body(&mut || {
                    let p = sem.acquire_blocking(1).unwrap();
                    critical_section(&mut x);
                    drop(p);
                });
            }
            _ => {
                let cname = CString::new(name).unwrap();
                // SAFETY: a valid C string; the semaphore exists (the parent
                // created it) and is closed below.
                let sem = unsafe { libc::sem_open(cname.as_ptr(), 0) };
                assert_ne!(sem, libc::SEM_FAILED);
                body(&mut || {
                    // SAFETY: `sem` is open until sem_close below.
                    while unsafe { libc::sem_wait(sem) } != 0 {}
                    critical_section(&mut x);
                    // SAFETY: as above.
                    unsafe { libc::sem_post(sem) };
                });
                // SAFETY: opened above, not used after.
                unsafe { libc::sem_close(sem) };
            }
        }
        println!("{n}");
        std::process::exit(0);
    }

    fn run(kind: &str, name: &str, procs: usize, secs: f64) -> Run {
        let start = unix_nanos() + 300_000_000 + procs as u128 * 20_000_000;
        let children: Vec<_> = (0..procs)
            .map(|_| {
                Command::new(std::env::current_exe().unwrap())
                    .env(ENV, format!("{kind},{name},{start},{secs}"))
                    .stdout(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let counts: Vec<u64> = children
            .into_iter()
            .map(|c| {
                let out = c.wait_with_output().unwrap();
                assert!(out.status.success());
                String::from_utf8(out.stdout)
                    .unwrap()
                    .trim()
                    .parse()
                    .unwrap()
            })
            .collect();
        Run::of(&counts, secs)
    }

    pub fn bench(procs: &[usize], secs: f64) {
        let name = format!("bench-scaling-{}", std::process::id());
        let posix = format!("/volt-bench-scaling-{}", std::process::id());
        let cposix = CString::new(posix.clone()).unwrap();
        // SAFETY: a valid C string; O_CREAT with a mode and an initial value.
        let sem =
            unsafe { libc::sem_open(cposix.as_ptr(), libc::O_CREAT | libc::O_EXCL, 0o600, 1) };
        assert_ne!(sem, libc::SEM_FAILED, "sem_open");
        let keep = volt_sem_shm::SharedSemaphore::open(&name, 1, Default::default()).unwrap();
        for &p in procs {
            emit("processes", "volt-sem", p, run("volt-sem", &name, p, secs));
            emit("processes", "posix", p, run("posix", &posix, p, secs));
        }
        drop(keep);
        let _ = volt_sem_shm::unlink(&name);
        // SAFETY: opened above; unlinking the name only.
        unsafe {
            libc::sem_close(sem);
            libc::sem_unlink(cposix.as_ptr());
        }
    }
}

fn emit(bench: &str, name: &str, n: usize, run: Run) {
    println!(
        "{{\"bench\": \"{bench}\", \"impl\": \"{name}\", \"n\": {n}, \"ops_per_sec\": {:.0}, \"fairness\": {:.3}}}",
        run.ops_per_sec, run.fairness
    );
}

fn main() {
    #[cfg(target_os = "linux")]
    processes::child_main();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let secs: f64 = value("--secs").map_or(1.0, |s| s.parse().expect("--secs"));
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut threads: Vec<usize> = match value("--threads") {
        Some(list) => list
            .split(',')
            .map(|n| n.parse().expect("--threads"))
            .collect(),
        None => vec![1, 2, 4, 8, cores],
    };
    threads.sort_unstable();
    threads.dedup();
    let only = value("--only");
    let wants = |b: &str| only.as_deref().is_none_or(|o| o == b);
    // One implementation only (`--impl std`), e.g. to profile it alone.
    let imp = value("--impl");
    if wants("mutex") {
        mutex(&threads, secs, imp.as_deref());
    }
    if wants("tokio") {
        tokio_workers(&threads, secs);
    }
    #[cfg(target_os = "linux")]
    if wants("processes") {
        processes::bench(&threads, secs);
    }
}
