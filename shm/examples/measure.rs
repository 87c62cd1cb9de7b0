//! One-off measurements (not a benchmark harness; run by hand, in release):
//!
//! ```text
//! cargo run --release -p volt-sem-shm --example measure
//! ```
//!
//! 1. uncontended `try_acquire(1)` + `release(1)`: in-process `volt_sem::Semaphore`
//!    vs this crate's shared semaphore;
//! 2. cross-process hand-off latency: process A releases, process B's
//!    blocking waiter returns; vs `sem_post` -> `sem_wait` on a POSIX named
//!    semaphore.

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
    use std::hint::black_box;
    use std::process::Command;
    use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
    use std::time::Instant;

    use volt_sem_shm::{OpenOptions, SharedSemaphore};

    const ROUNDS: usize = 300;

    fn now_ns() -> u64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: valid out-pointer.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    }

    /// `[t0 of the current round, child ready flag, latencies...]` in a shared file.
    fn shared_words(path: &str, create: bool) -> &'static [AtomicU64] {
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(create)
            .truncate(create)
            .open(path)
            .unwrap();
        let len = 8 * (ROUNDS + 2);
        f.set_len(len as u64).unwrap();
        use std::os::fd::AsRawFd;
        // SAFETY: maps `len` bytes of a file of that size, leaked.
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
            std::slice::from_raw_parts(p as *const AtomicU64, ROUNDS + 2)
        }
    }

    fn uncontended() {
        const N: u32 = 2_000_000;
        let local = volt_sem::Semaphore::new(4);
        let t = Instant::now();
        for _ in 0..N {
            black_box(&local).try_acquire(1).unwrap().forget();
            black_box(&local).release(1).unwrap();
        }
        let local_ns = t.elapsed().as_nanos() as f64 / N as f64;
        let name = format!("measure-{}", std::process::id());
        let shared = SharedSemaphore::open(&name, 4, OpenOptions::new()).unwrap();
        let t = Instant::now();
        for _ in 0..N {
            black_box(&shared).try_acquire(1).unwrap();
            black_box(&shared).release(1).unwrap();
        }
        let shared_ns = t.elapsed().as_nanos() as f64 / N as f64;
        volt_sem_shm::unlink(&name).unwrap();
        println!(
            "uncontended try_acquire(1)+release(1): in-process {local_ns:.1} ns, shared {shared_ns:.1} ns ({:.1}x)",
            shared_ns / local_ns
        );
    }

    fn median(v: &mut [u64]) -> (u64, u64) {
        v.sort_unstable();
        (v[v.len() / 2], v[v.len() * 99 / 100])
    }

    fn handoff_shared() {
        let name = format!("measure-h-{}", std::process::id());
        let path = format!("/dev/shm/volt-sem-measure.{}", std::process::id());
        let words = shared_words(&path, true);
        let sem = SharedSemaphore::open(&name, 1, OpenOptions::new()).unwrap();
        sem.try_acquire(1).unwrap();
        let mut child = Command::new(std::env::current_exe().unwrap())
            .env("MEASURE_CHILD", "shared")
            .env("MEASURE_NAME", &name)
            .env("MEASURE_PATH", &path)
            .spawn()
            .unwrap();
        for i in 0..ROUNDS {
            // Let the child queue for this round; wait until it is queued,
            // then release and time its wake.
            words[1].store(i as u64 + 1, SeqCst);
            while sem.census().unwrap().queued == 0 {
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
            words[0].store(now_ns(), SeqCst);
            sem.release(1).unwrap();
            sem.acquire_blocking(1).unwrap(); // the child releases after waking
        }
        child.wait().unwrap();
        let mut lat: Vec<u64> = words[2..].iter().map(|w| w.load(SeqCst)).collect();
        let (med, p99) = median(&mut lat);
        println!("cross-process hand-off (release -> blocked acquire returns): median {med} ns, p99 {p99} ns");
        sem.release(1).unwrap();
        volt_sem_shm::unlink(&name).unwrap();
        let _ = std::fs::remove_file(&path);
    }

    fn handoff_posix() {
        let path = format!("/dev/shm/volt-sem-measure-p.{}", std::process::id());
        let words = shared_words(&path, true);
        let n1 = std::ffi::CString::new(format!("/vsm-go-{}", std::process::id())).unwrap();
        let n2 = std::ffi::CString::new(format!("/vsm-ack-{}", std::process::id())).unwrap();
        // SAFETY: valid names; variadic mode/value arguments as sem_open expects.
        let (go, ack) = unsafe {
            (
                libc::sem_open(n1.as_ptr(), libc::O_CREAT | libc::O_EXCL, 0o600, 0),
                libc::sem_open(n2.as_ptr(), libc::O_CREAT | libc::O_EXCL, 0o600, 0),
            )
        };
        assert!(go != libc::SEM_FAILED && ack != libc::SEM_FAILED);
        let mut child = Command::new(std::env::current_exe().unwrap())
            .env("MEASURE_CHILD", "posix")
            .env("MEASURE_NAME", format!("{}", std::process::id()))
            .env("MEASURE_PATH", &path)
            .spawn()
            .unwrap();
        for _ in 0..ROUNDS {
            // The child announces it is about to block in sem_wait.
            while words[1].swap(0, SeqCst) == 0 {
                std::thread::yield_now();
            }
            std::thread::sleep(std::time::Duration::from_micros(300));
            words[0].store(now_ns(), SeqCst);
            // SAFETY: open semaphores.
            unsafe {
                libc::sem_post(go);
                libc::sem_wait(ack);
            }
        }
        child.wait().unwrap();
        let mut lat: Vec<u64> = words[2..].iter().map(|w| w.load(SeqCst)).collect();
        let (med, p99) = median(&mut lat);
        println!("POSIX named semaphore (sem_post -> blocked sem_wait returns): median {med} ns, p99 {p99} ns");
        // SAFETY: our names.
        unsafe {
            libc::sem_unlink(n1.as_ptr());
            libc::sem_unlink(n2.as_ptr());
        }
        let _ = std::fs::remove_file(&path);
    }

    fn child(kind: &str) {
        let name = std::env::var("MEASURE_NAME").unwrap();
        let words = shared_words(&std::env::var("MEASURE_PATH").unwrap(), false);
        if kind == "shared" {
            let sem = SharedSemaphore::open(&name, 1, OpenOptions::new().attach_only()).unwrap();
            for i in 0..ROUNDS {
                while words[1].load(SeqCst) != i as u64 + 1 {
                    std::thread::yield_now();
                }
                sem.acquire_blocking(1).unwrap();
                words[2 + i].store(now_ns() - words[0].load(SeqCst), SeqCst);
                sem.release(1).unwrap();
            }
        } else {
            let n1 = std::ffi::CString::new(format!("/vsm-go-{name}")).unwrap();
            let n2 = std::ffi::CString::new(format!("/vsm-ack-{name}")).unwrap();
            // SAFETY: valid names of existing semaphores.
            let (go, ack) = unsafe {
                (
                    libc::sem_open(n1.as_ptr(), 0),
                    libc::sem_open(n2.as_ptr(), 0),
                )
            };
            for i in 0..ROUNDS {
                words[1].store(1, SeqCst);
                // SAFETY: open semaphores.
                unsafe { libc::sem_wait(go) };
                words[2 + i].store(now_ns() - words[0].load(SeqCst), SeqCst);
                // SAFETY: as above.
                unsafe { libc::sem_post(ack) };
            }
        }
    }

    pub(super) fn main() {
        if let Ok(kind) = std::env::var("MEASURE_CHILD") {
            return child(&kind);
        }
        uncontended();
        handoff_shared();
        handoff_posix();
    }
}
