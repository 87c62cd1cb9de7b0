//! Benchmarks of the shared-memory semaphore (not run by `make test`):
//!
//! ```text
//! cargo bench -p volt-sem-shm --bench shm            # everything
//! cargo bench -p volt-sem-shm --bench shm -- uncontended
//! cargo bench -p volt-sem-shm --bench shm -- handoff
//! ```
//!
//! 1. Uncontended `try_acquire(1)` + `release(1)`: this crate's shared
//!    semaphore vs the in-process `volt_sem::Semaphore` vs `sem_trywait` +
//!    `sem_post` on a POSIX named semaphore. `RUNS` runs of `ITERS` pairs
//!    each; prints the median, min and max of the per-pair time over runs.
//! 2. Cross-process hand-off latency: process A releases, process B's
//!    blocked `acquire_blocking` returns; vs `sem_post` -> a blocked
//!    `sem_wait` returning. B announces it is about to block, A waits 300 us
//!    (so that B is asleep in the kernel), stamps the time and releases; B
//!    stamps the time it woke. `ROUNDS` rounds per run, `RUNS` runs; prints
//!    p50 and p99 of each run.
//!
//! A plain binary (`harness = false`) rather than criterion: the hand-off
//! needs a second process, and both parts want the spread over runs on a
//! shared machine more than criterion's per-sample statistics.

#[cfg(target_os = "linux")]
fn main() {
    linux::main()
}

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("Linux only");
}

#[cfg(target_os = "linux")]
mod linux {
    use std::ffi::CString;
    use std::hint::black_box;
    use std::process::Command;
    use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
    use std::time::{Duration, Instant};

    use volt_sem_shm::{OpenOptions, SharedSemaphore};

    const RUNS: usize = 5;
    const ITERS: u32 = 2_000_000;
    const ROUNDS: usize = 500;

    fn now_ns() -> u64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: valid out-pointer.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    }

    /// `[t0 of the round, child's round announcement, parent's go-ahead,
    /// latencies...]` in a shared file, mapped by both processes.
    fn shared_words(path: &str, create: bool) -> &'static [AtomicU64] {
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(create)
            .truncate(create)
            .open(path)
            .unwrap();
        let len = 8 * (ROUNDS + 3);
        f.set_len(len as u64).unwrap();
        use std::os::fd::AsRawFd;
        // SAFETY: maps `len` bytes of a file of that size; leaked for the
        // process's life; all-zero is a valid AtomicU64.
        unsafe {
            let p = libc::mmap(
                core::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                f.as_raw_fd(),
                0,
            );
            assert_ne!(p, libc::MAP_FAILED);
            std::slice::from_raw_parts(p as *const AtomicU64, ROUNDS + 3)
        }
    }

    fn spread(mut v: Vec<f64>) -> String {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        format!(
            "median {:.1}, min {:.1}, max {:.1}",
            v[v.len() / 2],
            v[0],
            v[v.len() - 1]
        )
    }

    fn time_pairs(mut pair: impl FnMut()) -> f64 {
        for _ in 0..ITERS / 10 {
            pair(); // warm-up
        }
        let t = Instant::now();
        for _ in 0..ITERS {
            pair();
        }
        t.elapsed().as_nanos() as f64 / ITERS as f64
    }

    fn uncontended() {
        let local = volt_sem::Semaphore::new(4);
        let name = format!("bench-{}", std::process::id());
        let shared = SharedSemaphore::open(&name, 4, OpenOptions::new()).unwrap();
        let pname = CString::new(format!("/volt-bench-{}", std::process::id())).unwrap();
        // SAFETY: valid name; variadic mode and value as sem_open expects.
        let posix =
            unsafe { libc::sem_open(pname.as_ptr(), libc::O_CREAT | libc::O_EXCL, 0o600, 4) };
        assert!(posix != libc::SEM_FAILED);
        let (mut l, mut s, mut p) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..RUNS {
            l.push(time_pairs(|| {
                black_box(&local).try_acquire(1).unwrap().forget();
                black_box(&local).release(1).unwrap();
            }));
            s.push(time_pairs(|| {
                black_box(&shared).try_acquire(1).unwrap().forget();
                black_box(&shared).release(1).unwrap();
            }));
            p.push(time_pairs(|| {
                // SAFETY: an open semaphore.
                unsafe {
                    assert_eq!(libc::sem_trywait(black_box(posix)), 0);
                    libc::sem_post(black_box(posix));
                }
            }));
        }
        let ratios: Vec<f64> = s.iter().zip(&l).map(|(s, l)| s / l).collect();
        println!("uncontended try_acquire(1)+release(1), ns per pair over {RUNS} runs of {ITERS}:");
        println!("  in-process volt_sem::Semaphore   {}", spread(l));
        println!("  shared (volt-sem-shm)            {}", spread(s));
        println!("  POSIX sem_trywait+sem_post       {}", spread(p));
        println!("  shared / in-process (same run)   {}", spread(ratios));
        // SAFETY: our semaphore and name.
        unsafe {
            libc::sem_close(posix);
            libc::sem_unlink(pname.as_ptr());
        }
        volt_sem_shm::unlink(&name).unwrap();
    }

    fn percentiles(words: &[AtomicU64]) -> (f64, f64) {
        let mut lat: Vec<u64> = words[3..].iter().map(|w| w.load(SeqCst)).collect();
        lat.sort_unstable();
        (
            lat[lat.len() / 2] as f64 / 1000.0,
            lat[lat.len() * 99 / 100] as f64 / 1000.0,
        )
    }

    fn wait_announced(words: &[AtomicU64], round: usize) {
        let t = Instant::now();
        while words[1].load(SeqCst) != round as u64 + 1 {
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "round {round}: the child announced {}",
                words[1].load(SeqCst)
            );
            std::thread::yield_now();
        }
        // Let the child get into the kernel's futex wait.
        std::thread::sleep(Duration::from_micros(300));
    }

    fn handoff_shared(run: usize) -> (f64, f64) {
        let name = format!("bench-h-{}-{run}", std::process::id());
        let path = format!("/dev/shm/volt-sem-bench.{}", std::process::id());
        let words = shared_words(&path, true);
        let sem = SharedSemaphore::open(&name, 1, OpenOptions::new()).unwrap();
        sem.try_acquire(1).unwrap().forget();
        let mut child = Command::new(std::env::current_exe().unwrap())
            .env("BENCH_CHILD", "shared")
            .env("BENCH_NAME", &name)
            .env("BENCH_PATH", &path)
            .spawn()
            .unwrap();
        for i in 0..ROUNDS {
            // We hold the permit: the child may queue for it (without this,
            // it could release and take it again before we queue).
            words[2].store(i as u64 + 1, SeqCst);
            wait_announced(words, i);
            words[0].store(now_ns(), SeqCst);
            sem.release(1).unwrap();
            sem.acquire_blocking(1).unwrap().forget(); // the child releases after waking
        }
        assert!(child.wait().unwrap().success());
        sem.release(1).unwrap();
        volt_sem_shm::unlink(&name).unwrap();
        let r = percentiles(words);
        let _ = std::fs::remove_file(&path);
        r
    }

    fn handoff_posix(run: usize) -> (f64, f64) {
        let path = format!("/dev/shm/volt-sem-bench-p.{}", std::process::id());
        let words = shared_words(&path, true);
        let tag = format!("{}-{run}", std::process::id());
        let n1 = CString::new(format!("/vsb-go-{tag}")).unwrap();
        let n2 = CString::new(format!("/vsb-ack-{tag}")).unwrap();
        // SAFETY: valid names; variadic mode and value as sem_open expects.
        let (go, ack) = unsafe {
            (
                libc::sem_open(n1.as_ptr(), libc::O_CREAT | libc::O_EXCL, 0o600, 0),
                libc::sem_open(n2.as_ptr(), libc::O_CREAT | libc::O_EXCL, 0o600, 0),
            )
        };
        assert!(go != libc::SEM_FAILED && ack != libc::SEM_FAILED);
        let mut child = Command::new(std::env::current_exe().unwrap())
            .env("BENCH_CHILD", "posix")
            .env("BENCH_NAME", &tag)
            .env("BENCH_PATH", &path)
            .spawn()
            .unwrap();
        for i in 0..ROUNDS {
            wait_announced(words, i);
            words[0].store(now_ns(), SeqCst);
            // SAFETY: open semaphores.
            unsafe {
                libc::sem_post(go);
                libc::sem_wait(ack);
            }
        }
        assert!(child.wait().unwrap().success());
        // SAFETY: our names.
        unsafe {
            libc::sem_unlink(n1.as_ptr());
            libc::sem_unlink(n2.as_ptr());
        }
        let r = percentiles(words);
        let _ = std::fs::remove_file(&path);
        r
    }

    fn handoff() {
        println!("cross-process hand-off latency, us (p50 / p99 per run of {ROUNDS} rounds):");
        let (mut s, mut p) = (Vec::new(), Vec::new());
        for run in 0..RUNS {
            s.push(handoff_shared(run));
            p.push(handoff_posix(run));
        }
        let show = |v: &[(f64, f64)]| {
            v.iter()
                .map(|(a, b)| format!("{a:.1}/{b:.1}"))
                .collect::<Vec<_>>()
                .join("  ")
        };
        println!(
            "  shared release -> blocked acquire_blocking returns   {}",
            show(&s)
        );
        println!(
            "  POSIX sem_post -> blocked sem_wait returns           {}",
            show(&p)
        );
        let p50 = |v: &[(f64, f64)]| spread(v.iter().map(|x| x.0).collect());
        println!("  p50 over runs: shared {}; POSIX {}", p50(&s), p50(&p));
    }

    fn child(kind: &str) {
        let name = std::env::var("BENCH_NAME").unwrap();
        let words = shared_words(&std::env::var("BENCH_PATH").unwrap(), false);
        if kind == "shared" {
            let sem = SharedSemaphore::open(&name, 1, OpenOptions::new().attach_only()).unwrap();
            for i in 0..ROUNDS {
                while words[2].load(SeqCst) != i as u64 + 1 {
                    std::thread::yield_now();
                }
                words[1].store(i as u64 + 1, SeqCst);
                sem.acquire_blocking(1).unwrap().forget();
                words[3 + i].store(now_ns() - words[0].load(SeqCst), SeqCst);
                sem.release(1).unwrap();
            }
        } else {
            let n1 = CString::new(format!("/vsb-go-{name}")).unwrap();
            let n2 = CString::new(format!("/vsb-ack-{name}")).unwrap();
            // SAFETY: valid names of existing semaphores.
            let (go, ack) = unsafe {
                (
                    libc::sem_open(n1.as_ptr(), 0),
                    libc::sem_open(n2.as_ptr(), 0),
                )
            };
            assert!(go != libc::SEM_FAILED && ack != libc::SEM_FAILED);
            for i in 0..ROUNDS {
                words[1].store(i as u64 + 1, SeqCst);
                // SAFETY: open semaphores.
                unsafe { libc::sem_wait(go) };
                words[3 + i].store(now_ns() - words[0].load(SeqCst), SeqCst);
                // SAFETY: as above.
                unsafe { libc::sem_post(ack) };
            }
        }
    }

    pub(super) fn main() {
        if let Ok(kind) = std::env::var("BENCH_CHILD") {
            return child(&kind);
        }
        // `cargo bench` passes `--bench`; a filter word selects one part.
        let filter: Vec<String> = std::env::args()
            .skip(1)
            .filter(|a| !a.starts_with('-'))
            .collect();
        let want =
            |part: &str| filter.is_empty() || filter.iter().any(|f| part.contains(f.as_str()));
        let mut load = String::new();
        let _ = std::io::Read::read_to_string(
            &mut std::fs::File::open("/proc/loadavg").unwrap(),
            &mut load,
        );
        println!("loadavg at start: {}", load.trim());
        if want("uncontended") {
            uncontended();
        }
        if want("handoff") {
            handoff();
        }
        let mut load = String::new();
        let _ = std::io::Read::read_to_string(
            &mut std::fs::File::open("/proc/loadavg").unwrap(),
            &mut load,
        );
        println!("loadavg at end: {}", load.trim());
    }
}
