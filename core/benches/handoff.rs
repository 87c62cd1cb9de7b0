//! Who takes the lock next (issue 30): two threads lock and unlock a mutex
//! `LOCKS` times each with a tiny critical section, as the criterion group
//! `e_mutex_2_threads_blocking`, and the critical section records its owner.
//! Printed per implementation: how many locks changed owner (a hand-off to the
//! other thread) against re-takes by the same thread, the longest run of one
//! owner, and the process's context switches (getrusage) per lock. The counts
//! do not depend on machine load the way wall-clock times do; the time per
//! lock is printed too, for reference only.
//!
//! `cargo bench -p volt-sem-benches --bench handoff [-- IMPL...]`, IMPL one of
//! none (no lock: the harness's own cost), volt-sem, std, parking_lot, tokio
//! (default: all). By default the threads
//! start as in the criterion group (spawned per round, started together by a
//! barrier, placed by the scheduler); `--pinned` pins them to CPUs 0 and 1 and starts them
//! together, so that they contend throughout; `--alone` runs one thread, for
//! the uncontended cost; `--spread` starts each round's threads together on
//! CPUs 0 and 1 and then lets the scheduler move them. One implementation per
//! run suits `perf stat` and `strace -c -f`.

use std::sync::Barrier;
use std::time::{Duration, Instant};

const LOCKS: usize = 200_000;

/// The guarded value: the last owner, the owner changes and the longest run.
#[derive(Default)]
struct Trace {
    last: u8,
    locks: u64,
    switches: u64,
    run: u64,
    longest_run: u64,
}

impl Trace {
    fn record(&mut self, me: u8) {
        self.locks += 1;
        if self.locks > 1 && me != self.last {
            self.switches += 1;
            self.run = 1;
        } else {
            self.run += 1;
        }
        self.longest_run = self.longest_run.max(self.run);
        self.last = me;
    }
}

/// Pins the calling thread to one CPU, so that the two threads run at the
/// same time on two cores (left to the scheduler, a woken thread often shares
/// its waker's core for milliseconds, and the two threads then take turns
/// by time slice instead of contending).
fn pin_to_cpus(cpus: &[usize]) {
    // SAFETY: a zeroed cpu_set_t is an empty set; CPU_SET writes inside it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus {
        // SAFETY: `cpu` is 0 or 1, inside the set's capacity.
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    // SAFETY: pid 0 is the calling thread; `set` is a valid cpu_set_t of the given size.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) };
    assert_eq!(
        rc, 0,
        "sched_setaffinity({cpus:?}) failed (fewer than 2 CPUs?)"
    );
}

fn rusage_switches() -> (i64, i64) {
    // SAFETY: `getrusage` fills the zeroed struct it is given; RUSAGE_SELF is valid.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above; `ru` is a valid, writable rusage.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    assert_eq!(rc, 0, "getrusage failed");
    (ru.ru_nvcsw, ru.ru_nivcsw)
}

/// How the two threads start.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    /// As the criterion group: each round spawns two threads that run
    /// `CRITERION_LOCKS` each, started together by a barrier (without it the
    /// first one spawned ran alone for most of its loop: see
    /// `semaphore.rs`'s `two_threads`), placed by the scheduler;
    /// `CRITERION_ROUNDS` rounds.
    Criterion,
    /// Both threads pinned (CPUs 0 and 1) and started together by a barrier,
    /// `LOCKS` each: contention from the first lock to the last.
    Pinned,
    /// As `Criterion`, but each round's two threads start together on CPUs
    /// 0 and 1 (pinned until a barrier) and are then free to move: does the
    /// contention last, or do the threads end up on one core?
    Spread,
    /// One thread alone, `LOCKS` locks: the uncontended cost.
    Alone,
}

const CRITERION_LOCKS: usize = 20_000;
const CRITERION_ROUNDS: usize = 20;

fn run(mode: Mode, name: &str, lock: impl Fn(u8) + Sync, read: impl Fn() -> (u64, u64, u64)) {
    let (rounds, per_thread) = match mode {
        Mode::Criterion | Mode::Spread => (CRITERION_ROUNDS, CRITERION_LOCKS),
        Mode::Pinned | Mode::Alone => (1, LOCKS),
    };
    let threads = if mode == Mode::Alone { 1 } else { 2 };
    let (v0, i0) = rusage_switches();
    let start = Instant::now();
    // Rounds in which the two loops overlapped in time, and in which the two
    // threads ended their loops on the same CPU; the head start of the
    // first loop over the second, and the rounds' loop time, summed.
    let (mut overlapped, mut same_cpu) = (0, 0);
    let (mut head_start, mut looped) = (Duration::ZERO, Duration::ZERO);
    for _ in 0..rounds {
        // Both threads start together (as in the criterion group): without
        // the barrier one thread may finish its loop before the other is
        // scheduled.
        let start_line = Barrier::new(usize::from(threads));
        let spans: Vec<(Instant, Instant, i32)> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|me| {
                    let (lock, start_line) = (&lock, &start_line);
                    s.spawn(move || {
                        if matches!(mode, Mode::Pinned | Mode::Spread) {
                            pin_to_cpus(&[usize::from(me)]);
                        }
                        start_line.wait();
                        if mode == Mode::Spread {
                            pin_to_cpus(&[0, 1]);
                        }
                        let begin = Instant::now();
                        (0..per_thread).for_each(|_| lock(me));
                        // SAFETY: sched_getcpu has no preconditions.
                        (begin, Instant::now(), unsafe { libc::sched_getcpu() })
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        if let [a, b] = spans[..] {
            overlapped += usize::from(a.0.max(b.0) < a.1.min(b.1));
            same_cpu += usize::from(a.2 == b.2);
            head_start += a.0.max(b.0) - a.0.min(b.0);
            looped += a.1.max(b.1) - a.0.min(b.0);
        }
    }
    let elapsed = start.elapsed();
    let (v1, i1) = rusage_switches();
    let (locks, switches, longest) = read();
    let per = |x: i64| x as f64 / locks as f64;
    println!(
        "{name:12} {} locks {locks}  hand-offs {switches} ({:.1}%)  re-takes {}  longest run {longest}  \
         voluntary cs/lock {:.4}  involuntary cs/lock {:.4}  {:.1} ns/lock",
        match mode {
            Mode::Criterion => "criterion-like",
            Mode::Pinned => "pinned",
            Mode::Spread => "spread",
            Mode::Alone => "alone",
        },
        100.0 * switches as f64 / locks as f64,
        locks - switches,
        per(v1 - v0),
        per(i1 - i0),
        elapsed.as_nanos() as f64 / locks as f64,
    );
    if matches!(mode, Mode::Criterion | Mode::Spread) {
        println!(
            "{:12} rounds {rounds}: loops overlapped in {overlapped}, ended on the same CPU in {same_cpu}; \
             head start of the first loop {:.1} us a round ({:.1}% of the loops' time)",
            "",
            head_start.as_secs_f64() * 1e6 / rounds as f64,
            100.0 * head_start.as_secs_f64() / looped.as_secs_f64(),
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let flag = |f: &str| std::env::args().any(|a| a == f);
    let mode = if flag("--pinned") {
        Mode::Pinned
    } else if flag("--spread") {
        Mode::Spread
    } else if flag("--alone") {
        Mode::Alone
    } else {
        Mode::Criterion
    };
    let want = |name: &str| args.is_empty() || args.iter().any(|a| a == name);
    // No lock at all, an uncontended atomic add per "lock": the harness's own
    // cost (spawning, starting and joining the threads) per lock.
    if want("none") {
        let n = std::sync::atomic::AtomicU64::new(0);
        run(
            mode,
            "none",
            |_| {
                n.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            },
            || (n.load(std::sync::atomic::Ordering::Relaxed), 0, 0),
        );
    }
    if want("volt-sem") {
        let m = volt_sem::Mutex::new(Trace::default());
        run(
            mode,
            "volt-sem",
            |me| m.lock_blocking().record(me),
            || {
                let t = m.try_lock().unwrap();
                (t.locks, t.switches, t.longest_run)
            },
        );
    }
    if want("std") {
        let m = std::sync::Mutex::new(Trace::default());
        run(
            mode,
            "std",
            |me| m.lock().unwrap().record(me),
            || {
                let t = m.lock().unwrap();
                (t.locks, t.switches, t.longest_run)
            },
        );
    }
    if want("parking_lot") {
        let m = parking_lot::Mutex::new(Trace::default());
        run(
            mode,
            "parking_lot",
            |me| m.lock().record(me),
            || {
                let t = m.lock();
                (t.locks, t.switches, t.longest_run)
            },
        );
    }
    if want("tokio") {
        let m = tokio::sync::Mutex::new(Trace::default());
        run(
            mode,
            "tokio",
            |me| m.blocking_lock().record(me),
            || {
                let t = m.try_lock().unwrap();
                (t.locks, t.switches, t.longest_run)
            },
        );
    }
}
