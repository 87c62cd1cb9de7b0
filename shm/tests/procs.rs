//! Real processes on one name: FIFO across processes, `kill -9` of a holder,
//! of a queued waiter and of a process stopped inside the segment lock, and a
//! multi-process stress with random kills.
//!
//! Children are this test binary re-executed with `VOLT_SHM_ROLE` set: the
//! test `child_main` then plays the role instead of being a no-op. They talk
//! back through stdout lines starting with `@`.
#![cfg(target_os = "linux")]

mod support;

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::SeqCst};
use std::time::{Duration, Instant};

use support::child::{say, Child};
use support::{assert_conserved, Name};
use volt_sem_shm::{Error, OpenOptions, Permit, SharedSemaphore};

// ------------------------------------------------------------------ children

fn env_num(key: &str) -> u64 {
    std::env::var(key).unwrap().parse().unwrap()
}

/// Not a test of its own: the entry point of the child processes.
#[test]
fn child_main() {
    let Ok(role) = std::env::var("VOLT_SHM_ROLE") else {
        return;
    };
    let name = std::env::var("VOLT_SHM_NAME").unwrap();
    let total = env_num("VOLT_SHM_TOTAL") as usize;
    if role == "open-on-full" {
        // Runs with a /dev/shm too small for a segment (see
        // `open_on_a_full_dev_shm_is_a_typed_error`).
        let r = SharedSemaphore::open(&name, total, OpenOptions::new());
        say(&format!("open {:?}", r.as_ref().map(|_| ())));
        let path = format!("/dev/shm/{}{}", volt_sem_shm::NAME_PREFIX, name);
        say(&format!("left {}", std::path::Path::new(&path).exists()));
        std::process::exit(0);
    }
    if role == "open-expect-full" {
        // Opens the name once and says how it went (see
        // `an_open_that_repairs_then_finds_the_table_full_still_rings`).
        let r = SharedSemaphore::open(&name, total, OpenOptions::new().attach_only());
        say(&format!("open {:?}", r.as_ref().map(|_| ())));
        std::process::exit(0);
    }
    if role == "scribble" {
        // Writes garbage into the segment's file: SCRIBBLES writes of 1 to 8
        // random bytes at seeded random offsets, one every 2 ms, never into
        // the bytes of the lock itself (see `garbage_in_the_segment_...`).
        use std::os::unix::fs::FileExt;
        let path = format!("/dev/shm/{}{}", volt_sem_shm::NAME_PREFIX, name);
        let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
        let size = f.metadata().unwrap().len();
        let mut rng = Rng(env_num("SEED") | 1);
        say("scribbling");
        // Mostly where the live state is: the header's mutable words, the
        // first process records, the first slots (the victims' own).
        // (Offsets of layout version 4: records of 384 bytes from 192,
        // slots of 56 bytes from 49344; checked by the unit test
        // `layout_offsets`.)
        let regions = [
            (32, 96),
            (192, 192 + 4 * 384),
            (49344, 49344 + 64 * 56),
            (0, size),
        ];
        for _ in 0..env_num("SCRIBBLES") {
            let len = 1 + rng.below(8);
            let (lo, hi) = regions[rng.below(4) as usize];
            let at = lo + rng.below(hi - lo - len);
            if at + len > LOCK_CELL.0 && at < LOCK_CELL.1 {
                continue;
            }
            let bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
            f.write_all_at(&bytes, at).unwrap();
            std::thread::sleep(Duration::from_millis(2));
        }
        say("scribbled");
        std::process::exit(0);
    }
    if role == "other-layout-create-loop" {
        other_layout_create_loop(&name);
    }
    if role == "create-loop" {
        // Creates, detaches from and unlinks the name over and over, until
        // killed: a kill lands anywhere in a creation.
        say("looping");
        loop {
            match SharedSemaphore::open(&name, total, OpenOptions::new()) {
                Ok(sem) => drop(sem),
                Err(e) => {
                    say(&format!("open failed: {e:?}"));
                    std::process::exit(1);
                }
            }
            let _ = volt_sem_shm::unlink(&name);
        }
    }
    if role == "fork-during-open" {
        fork_during_open(&name, total);
    }
    let opts = if role == "create-and-hold" {
        OpenOptions::new().create_only()
    } else {
        OpenOptions::new().attach_only()
    };
    let sem = SharedSemaphore::open(&name, total, opts).unwrap();
    match role.as_str() {
        "create-and-hold" => {
            sem.try_acquire(total).unwrap().forget();
            say("got");
            loop {
                std::thread::sleep(Duration::from_secs(60));
            }
        }
        "acquire" => {
            let n = env_num("N") as usize;
            say("start");
            sem.acquire_blocking(n).unwrap().forget();
            say("got");
            let hold = env_num("HOLD_MS");
            if hold == u64::MAX {
                loop {
                    std::thread::sleep(Duration::from_secs(60));
                }
            }
            std::thread::sleep(Duration::from_millis(hold));
            sem.release(n).unwrap();
            say("released");
        }
        "stop-in-release" => {
            sem.acquire_blocking(2).unwrap().forget();
            say("held");
            volt_sem_shm::hooks::stop_in_next_release();
            sem.release(1).unwrap(); // stops inside the lock; killed there
            say("resumed");
        }
        "hold-then-stop-in-release" => {
            sem.acquire_blocking(2).unwrap().forget();
            say("held");
            release_stopping_inside_once_told(&sem);
        }
        "stop-in-fast-release" => {
            sem.try_acquire(2).unwrap().forget(); // the fast path: no queue
            say("held");
            volt_sem_shm::hooks::stop_in_next_fast_release();
            sem.release(2).unwrap(); // stops with the permits in transit
            say("resumed");
        }
        "victim" => {
            // Runs every kind of operation for a while on a segment another
            // process scribbles on; any Result is fine (a typed value), a
            // panic or a hang is not.
            say("ready");
            let (mut ok, mut errs) = (0u64, Vec::new());
            let mut note = |r: Result<(), Error>| match r {
                Ok(()) => ok += 1,
                Err(e) => {
                    if !errs.contains(&e) {
                        errs.push(e);
                    }
                }
            };
            let t = Instant::now();
            while t.elapsed() < Duration::from_millis(1500) {
                match sem.try_acquire(1) {
                    Ok(permit) => note(permit.release()),
                    Err(e) => note(Err(e)),
                }
                match sem.acquire_timeout(2, Duration::from_millis(20)) {
                    Ok(permit) => note(permit.release()),
                    Err(e) => note(Err(e)),
                }
                note(sem.held_permits().map(|_| ()));
                note(sem.census().map(|_| ()));
                note(sem.inspect().map(|_| ()));
                let _ = sem.available_permits();
            }
            say(&format!("done {ok} ok, errors {errs:?}"));
        }
        "doorbell-then-fork" => {
            // Holds every permit, then queues an async acquire behind its own
            // permits and drops it (cancelled): that starts this process's
            // doorbell thread, which keeps running. Then forks a child that
            // drops its inherited handle and lives on.
            use std::future::Future;
            sem.try_acquire(total).unwrap().forget();
            {
                let waker = futures::task::noop_waker();
                let mut cx = std::task::Context::from_waker(&waker);
                let mut fut = std::pin::pin!(sem.acquire(1));
                assert!(fut.as_mut().poll(&mut cx).is_pending());
            }
            // SAFETY: the child runs only this crate's drop and `say`.
            let pid = unsafe { libc::fork() };
            assert!(pid >= 0);
            if pid == 0 {
                drop(sem);
                say("child dropped its handle");
                loop {
                    std::thread::sleep(Duration::from_secs(60));
                }
            }
            say(&format!("forked {pid}"));
            loop {
                std::thread::sleep(Duration::from_secs(60));
            }
        }
        "timed-waiter-without-threads" => {
            // A timed acquire queued behind the permits another child holds;
            // once it is queued, this process can create no more threads
            // (its address space is capped just above its size now).
            let s2 = sem.clone();
            let waiter = std::thread::spawn(move || {
                drop(Vec::<u8>::with_capacity(4096)); // this thread's arena, now
                s2.acquire_timeout(1, Duration::from_millis(1000))
                    .map(Permit::forget)
            });
            let start = Instant::now();
            while sem.census().unwrap().queued != 1 {
                std::thread::sleep(Duration::from_millis(1));
            }
            say("queued");
            let status = std::fs::read_to_string("/proc/self/status").unwrap();
            let vm_kb: u64 = status
                .lines()
                .find_map(|l| l.strip_prefix("VmSize:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
                .unwrap();
            let cap = (vm_kb + 1024) * 1024;
            let lim = libc::rlimit {
                rlim_cur: cap,
                rlim_max: libc::RLIM_INFINITY,
            };
            // SAFETY: plain syscall with a valid rlimit.
            assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_AS, &lim) }, 0);
            say("limited");
            while start.elapsed() < Duration::from_millis(1500) {
                std::thread::sleep(Duration::from_millis(5));
            }
            say("past deadline");
            let r = waiter.join().unwrap();
            say(&format!("result {r:?}"));
            loop {
                std::thread::sleep(Duration::from_secs(60));
            }
        }
        "hold-fork-then-stop-in-release" => {
            // Holds every permit, forks a child that keeps the inherited
            // handle (so the liveness lock outlives this process), then,
            // once the file GO exists, stops inside the lock half-way
            // through a release of 1.
            sem.try_acquire(total).unwrap().forget();
            let done = std::env::var("DONE").unwrap();
            // SAFETY: the child only sleeps and polls a path, then _exits.
            let pid = unsafe { libc::fork() };
            assert!(pid >= 0);
            if pid == 0 {
                let t = Instant::now();
                while !std::path::Path::new(&done).exists() && t.elapsed() < Duration::from_secs(60)
                {
                    std::thread::sleep(Duration::from_millis(10));
                }
                // The file was for this process alone: taken, so that no
                // run leaves it behind in the temp dir.
                let _ = std::fs::remove_file(&done);
                // SAFETY: ends the child without running the parent's destructors.
                unsafe { libc::_exit(0) };
            }
            say(&format!("forked {pid}"));
            say("held");
            release_stopping_inside_once_told(&sem);
        }
        "queue-async" => {
            // Queues an async acquire of 1 (its grant comes through this
            // process's doorbell thread), says its record, and polls it
            // until it is granted.
            use std::future::Future;
            let waker = futures::task::noop_waker();
            let mut cx = std::task::Context::from_waker(&waker);
            let mut fut = Box::pin(sem.acquire(1));
            assert!(fut.as_mut().poll(&mut cx).is_pending());
            say(&format!("queued {}", sem.process_record()));
            loop {
                std::thread::sleep(Duration::from_millis(2));
                if let std::task::Poll::Ready(r) = fut.as_mut().poll(&mut cx) {
                    drop(r.unwrap());
                    say("granted");
                    break;
                }
            }
            loop {
                std::thread::sleep(Duration::from_secs(60));
            }
        }
        "fill" => {
            // Attaches FILL more processes (forked children, each with a
            // record of its own), which live until this process dies.
            // SAFETY: getpid cannot fail.
            let me = unsafe { libc::getpid() };
            for _ in 0..env_num("FILL") {
                // SAFETY: the child opens the name and sleeps; glibc's fork
                // leaves malloc usable in the child.
                let pid = unsafe { libc::fork() };
                assert!(pid >= 0);
                if pid == 0 {
                    // SAFETY: plain syscalls.
                    unsafe {
                        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                        if libc::getppid() != me {
                            libc::_exit(0);
                        }
                    }
                    let r = SharedSemaphore::open(&name, total, OpenOptions::new().attach_only());
                    match r {
                        Ok(s) => std::mem::forget(s),
                        // SAFETY: ends the child.
                        Err(_) => unsafe { libc::_exit(1) },
                    }
                    loop {
                        std::thread::sleep(Duration::from_secs(60));
                    }
                }
            }
            say("forked");
            loop {
                std::thread::sleep(Duration::from_secs(60));
            }
        }
        "stress" => stress_child(&sem, &name),
        other => panic!("unknown role {other}"),
    }
    drop(sem);
    std::process::exit(0);
}

fn open(name: &str, total: usize) -> SharedSemaphore {
    SharedSemaphore::open(name, total, OpenOptions::new()).unwrap()
}

fn wait_queued(s: &SharedSemaphore, n: u32) {
    let t = Instant::now();
    while s.census().unwrap().queued != n {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "never queued: {:?}",
            s.census()
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn acquire_env(n: usize, hold_ms: u64) -> Vec<(&'static str, String)> {
    vec![("N", n.to_string()), ("HOLD_MS", hold_ms.to_string())]
}

// ------------------------------------------------------------------ tests

#[test]
fn fifo_across_processes_weighted() {
    let name = Name::new("xfifo");
    let sem = open(&name, 4);
    sem.try_acquire(4).unwrap().forget();
    let mut a = Child::spawn(&name, 4, "acquire", &acquire_env(3, 300));
    wait_queued(&sem, 1);
    let mut b = Child::spawn(&name, 4, "acquire", &acquire_env(1, 0));
    wait_queued(&sem, 2);
    // One permit: it goes to A's acquire(3) (partly), not to B's later acquire(1).
    sem.release(1).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    assert!(!a.saw("got") && !b.saw("got"));
    let c = assert_conserved(&sem);
    assert_eq!((c.available, c.granted, c.queued), (0, 1, 2));
    // Two more: A completes; B still waits (A holds 3, we hold 1).
    sem.release(2).unwrap();
    let a_got = a.expect("got", Duration::from_secs(5));
    std::thread::sleep(Duration::from_millis(100));
    assert!(!b.saw("got"), "B overtook or shared A's grant");
    // A releases after 300 ms: B gets its permit.
    let b_got = b.expect("got", Duration::from_secs(5));
    assert!(b_got > a_got);
    a.wait_exit(Duration::from_secs(5));
    b.wait_exit(Duration::from_secs(5));
    sem.release(1).unwrap();
    let c = assert_conserved(&sem);
    assert_eq!((c.available, c.live), (4, 1));
}

#[test]
fn kill9_holder_permits_reach_waiter_within_bound() {
    let name = Name::new("xholder");
    let sem = open(&name, 2);
    let mut h = Child::spawn(&name, 2, "acquire", &acquire_env(2, u64::MAX));
    h.expect("got", Duration::from_secs(5));
    assert_eq!(sem.try_acquire(1).err(), Some(Error::NoPermits));
    let s2 = sem.clone();
    let waiter = std::thread::spawn(move || {
        s2.acquire_timeout(2, Duration::from_secs(10))
            .unwrap()
            .forget();
        Instant::now()
    });
    wait_queued(&sem, 1);
    let killed = Instant::now();
    h.kill9();
    // Nobody else touches the semaphore: the waiter's own doorbell thread
    // finds the dead holder on its periodic sweep.
    let granted = waiter.join().unwrap();
    let reclaim = granted - killed;
    eprintln!("kill -9 of a holder -> queued waiter granted after {reclaim:?}");
    assert!(
        reclaim < Duration::from_millis(volt_sem_shm::SWEEP_PERIOD_MS + 800),
        "{reclaim:?}"
    );
    let c = assert_conserved(&sem);
    assert_eq!((c.held, c.live, c.queued), (2, 1, 0));
    sem.release(2).unwrap();

    // Without a waiter: the next slow path (a failing try_acquire) reclaims.
    let mut h = Child::spawn(&name, 2, "acquire", &acquire_env(2, u64::MAX));
    h.expect("got", Duration::from_secs(5));
    h.kill9();
    sem.try_acquire(2).unwrap().forget();
    sem.release(2).unwrap();
    assert_eq!(assert_conserved(&sem).available, 2);
}

/// A blocking acquire that checks for interruption very often (a binding
/// polling for signals; `Duration::ZERO`: every turn) is still a queued
/// request whose thread must sweep for dead processes every
/// `SWEEP_PERIOD_MS` (crate docs, *Liveness* (c)). Before the fix the poll
/// branch restarted the loop every time, so the sweep never ran: a holder
/// killed with `SIGKILL` was never reclaimed (nobody else touches the
/// semaphore) and the waiter spun until its check gave up.
#[test]
fn an_interruptible_acquire_with_a_tiny_poll_still_sweeps_for_dead_holders() {
    let name = Name::new("xpollsweep");
    let sem = open(&name, 1);
    let mut h = Child::spawn(&name, 1, "acquire", &acquire_env(1, u64::MAX));
    h.expect("got", Duration::from_secs(5));
    let s2 = sem.clone();
    let waiter = std::thread::spawn(move || {
        let t = Instant::now();
        // Gives up after 30 s: the test then fails instead of hanging.
        s2.acquire_blocking_interruptible(1, None, Duration::ZERO, || {
            t.elapsed() > Duration::from_secs(30)
        })
        .map(|p| p.map(|p| p.forget()).is_some())
    });
    wait_queued(&sem, 1);
    h.kill9();
    // Nothing else runs a sweep until the waiter returns.
    assert_eq!(
        waiter.join().unwrap(),
        Ok(true),
        "the dead holder's permit never reached the waiter"
    );
    let c = assert_conserved(&sem);
    assert_eq!((c.held, c.live, c.queued), (1, 1, 0));
    sem.release(1).unwrap();
    assert_eq!(assert_conserved(&sem).available, 1);
}

#[test]
fn kill9_queued_waiter_hands_its_partial_grant_on() {
    let name = Name::new("xwaiter");
    let sem = open(&name, 3);
    sem.try_acquire(3).unwrap().forget();
    let mut w = Child::spawn(&name, 3, "acquire", &acquire_env(3, u64::MAX));
    wait_queued(&sem, 1);
    let mut v = Child::spawn(&name, 3, "acquire", &acquire_env(1, 0));
    wait_queued(&sem, 2);
    sem.release(1).unwrap(); // W holds 1 of 3 in its slot
    assert_eq!(assert_conserved(&sem).granted, 1);
    let killed = Instant::now();
    w.kill9();
    // W's partial grant goes on to V (found by V's own periodic sweep).
    let got = v.expect("got", Duration::from_secs(5));
    eprintln!(
        "kill -9 of a queued waiter -> next waiter granted after {:?}",
        got - killed
    );
    v.wait_exit(Duration::from_secs(5));
    let c = assert_conserved(&sem);
    assert_eq!((c.queued, c.held, c.available, c.live), (0, 2, 1, 1));
    sem.release(2).unwrap();
    assert_eq!(sem.available_permits(), 3);
}

#[test]
fn kill9_inside_the_lock_is_repaired() {
    let name = Name::new("xlock");
    let sem = open(&name, 2);
    let mut s = Child::spawn(&name, 2, "stop-in-release", &[]);
    s.expect("held", Duration::from_secs(5));
    // It is now stopped inside release(1): its held is already lowered, the
    // permit is in transit, and it owns the segment lock.
    s.wait_stopped();
    let s2 = sem.clone();
    let blocked = std::thread::spawn(move || {
        let r = s2
            .acquire_timeout(2, Duration::from_secs(10))
            .map(Permit::forget);
        (r, Instant::now())
    });
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        !blocked.is_finished(),
        "got past a lock held by a stopped process"
    );
    let killed = Instant::now();
    s.kill9();
    let (r, at) = blocked.join().unwrap();
    r.unwrap();
    // The kernel wakes the next locker (EOWNERDEAD) before it has closed the
    // dead process's files, so the repair may still see its liveness lock:
    // then its permits come back at the waiter's next periodic sweep.
    // Bounded by the waiter's own timeout above (no timing assert: the
    // machine may be loaded); typically well under a sweep period.
    let took = at - killed;
    eprintln!("kill -9 inside the lock -> next locker done after {took:?}");
    assert!(!s.saw("resumed"));
    let c = assert_conserved(&sem);
    assert!(c.repairs >= 1, "{c:?}");
    assert_eq!((c.held, c.live, c.available), (2, 1, 0));
    sem.release(2).unwrap();
    assert_eq!(sem.available_permits(), 2);
}

#[test]
fn kill9_inside_a_fast_release_is_recounted() {
    let name = Name::new("xfast");
    let sem = open(&name, 3);
    let mut s = Child::spawn(&name, 3, "stop-in-fast-release", &[]);
    s.expect("held", Duration::from_secs(5));
    // Stopped between the two writes of a lock-free release(2): its `held`
    // is already 0, its `busy` 1, the counter still 1. No lock is held, so
    // this process's fast path goes on meanwhile.
    s.wait_stopped();
    sem.try_acquire(1).unwrap().forget();
    assert_eq!(
        sem.try_acquire(1).err(),
        Some(volt_sem_shm::Error::NoPermits)
    );
    s.kill9();
    // The next slow path sweeps: the dead record is busy, so its `held` is not
    // trusted and the counter is recounted: the 2 in transit come back, once.
    sem.acquire_timeout(2, Duration::from_secs(10))
        .unwrap()
        .forget();
    assert!(!s.saw("resumed"));
    let c = assert_conserved(&sem);
    assert!(c.recounts >= 1, "{c:?}");
    assert_eq!((c.held, c.live, c.available, c.repairs), (3, 1, 0, 0));
    sem.release(3).unwrap();
    assert_eq!(sem.available_permits(), 3);
    assert_eq!(
        sem.try_acquire(4).err(),
        Some(volt_sem_shm::Error::TooManyPermits)
    );
}

/// The pid of the fork child that `p` announced (`forked <pid>`), waiting
/// for the line (10 s at most).
fn forked_pid(p: &mut Child) -> i32 {
    let t = Instant::now();
    loop {
        p.drain();
        if let Some(pid) = p.seen.iter().find_map(|l| l.strip_prefix("forked ")) {
            return pid.parse::<i32>().unwrap();
        }
        assert!(t.elapsed() < Duration::from_secs(10), "{:?}", p.seen);
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A process that ran an async acquire (so it has a doorbell thread) forks
/// a child, which drops the handle it inherited: the child must not keep the
/// parent's liveness lock after that (crate docs, *fork, exec*), so the
/// parent's permits come back when it is killed, while the child lives on.
#[test]
fn kill9_of_a_parent_whose_forked_child_dropped_its_handle_is_reclaimed() {
    let name = Name::new("xforkbell");
    let sem = open(&name, 3);
    let mut p = Child::spawn(&name, 3, "doorbell-then-fork", &[]);
    p.expect("child dropped its handle", Duration::from_secs(10));
    let grandchild = forked_pid(&mut p);
    // Killed and reaped: its own files are closed; the child's copy of the
    // segment's fd was closed when it dropped its handle.
    p.kill9();
    let c = sem.census().unwrap(); // sweeps: the dead parent is reclaimed
                                   // SAFETY: plain syscall; the grandchild (reparented) is ours to end.
    unsafe { libc::kill(grandchild, libc::SIGKILL) };
    assert!(c.conserved(), "{c:?}");
    assert_eq!(
        (c.available, c.live),
        (3, 1),
        "the killed parent's record stayed live (its forked child keeps the \
         liveness lock after dropping its handle): {c:?}"
    );
}

/// The role of `a_child_forked_during_an_open_does_not_keep_the_init_lock`:
/// a thread opens `name` (fresh) and pauses holding the segment's init lock
/// (a test hook); the main thread then forks. The fork child says
/// `forked <pid>`, opens the name itself (which waits for the parent's
/// lock), says how that went, and sleeps until killed (60 s at most). The
/// parent waits to be killed.
fn fork_during_open(name: &str, total: usize) -> ! {
    volt_sem_shm::hooks::pause_next_open_of_holding_init_lock(name);
    let opener = {
        let name = name.to_owned();
        std::thread::spawn(move || SharedSemaphore::open(&name, total, OpenOptions::new()))
    };
    assert!(volt_sem_shm::hooks::wait_open_paused(Duration::from_secs(
        10
    )));
    // SAFETY: the child runs this crate's code (what a program that forks
    // while another of its threads opens a name does) and ends with _exit.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        // SAFETY: getpid cannot fail.
        say(&format!("forked {}", unsafe { libc::getpid() }));
        let r = SharedSemaphore::open(name, total, OpenOptions::new());
        say(&format!("child open {:?}", r.as_ref().map(|_| ())));
        std::thread::sleep(Duration::from_secs(60));
        // SAFETY: ends the child without the parent's destructors.
        unsafe { libc::_exit(0) };
    }
    say("parent paused");
    let _ = opener.join();
    std::process::exit(3); // not reached: killed while paused
}

/// Found by the C API fuzzer (`--fork-during-open`, seed 220077): a process
/// killed inside `open` while holding the segment's init lock, after another
/// of its threads forked, left the lock held by the fork child's copy of the
/// open file description, for as long as the child lived: every `open` of
/// the name, the child's own included, answered `TimedOut` after 5 s. A
/// killed process must never block a name for others: the child must not
/// keep the init lock, and both the child's open and a third process's
/// must succeed while the child lives.
#[test]
fn a_child_forked_during_an_open_does_not_keep_the_init_lock() {
    let name = Name::new("forkopen");
    let mut p = Child::spawn(&name, 2, "fork-during-open", &[]);
    p.expect("parent paused", Duration::from_secs(10));
    let grandchild = forked_pid(&mut p);
    /// Kills the fork child (reparented, not ours to reap) at the end,
    /// whatever happens.
    struct KillAtEnd(i32);
    impl Drop for KillAtEnd {
        fn drop(&mut self) {
            // SAFETY: plain syscall on the fork child's pid.
            unsafe { libc::kill(self.0, libc::SIGKILL) };
        }
    }
    let _grandchild = KillAtEnd(grandchild);
    // Killed (and reaped) while it holds the init lock.
    p.kill9();
    let r = SharedSemaphore::open(&name, 2, OpenOptions::new());
    // The fork child is still alive: it is what kept the lock.
    let state = std::fs::read_to_string(format!("/proc/{grandchild}/stat")).unwrap();
    let state = state
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .next()
        .unwrap();
    assert_ne!(state, "Z", "the fork child ended before the check");
    let sem = r.expect("an open after the kill (the fork child lives)");
    p.expect("child open Ok(())", Duration::from_secs(10));
    let c = sem.census().unwrap();
    assert!(c.conserved(), "{c:?}");
    assert_eq!(c.available, 2, "{c:?}");
}

/// This process's record's doorbell word, read from the segment's file
/// (layout version 4: records of 384 bytes from offset 192, the doorbell the
/// second u32 of a record; checked by the unit test `layout_offsets`). Every
/// ring of the record's doorbell adds 1 to it.
fn doorbell_word(name: &Name, record: u32) -> u32 {
    use std::os::unix::fs::FileExt;
    let f = std::fs::File::open(name.path()).unwrap();
    let mut b = [0u8; 4];
    f.read_exact_at(&mut b, 192 + 384 * u64::from(record) + 4)
        .unwrap();
    u32::from_le_bytes(b)
}

/// An `open` that finds the lock's owner dead repairs the segment, which can
/// grant a queued request (the permits the dead owner had in transit); if
/// the process table is then full, the `open` fails with
/// `ProcessTableFull`, and the grant's wake-up must still go out: the
/// waiting process's doorbell is rung before `open` returns. (Without it the
/// waiter is only woken by its periodic sweep, up to `SWEEP_PERIOD_MS`
/// later; the test does not time that, it reads the doorbell word, which
/// every ring raises by 1, with the waiter stopped meanwhile.)
///
/// The table: this process, the dead owner's record (kept LIVE by its
/// forked child, which holds the liveness lock), the waiter and a filler
/// with 124 children: 128. The waiter is stopped (`SIGSTOP`, outside the
/// lock) so that its own sweeps cannot be the ones that repair.
#[test]
fn an_open_that_repairs_then_finds_the_table_full_still_rings() {
    let name = Name::new("fullring");
    let go = format!("/tmp/{}.go", &*name);
    let done = format!("/tmp/{}.done", &*name);
    let _ = std::fs::remove_file(&go);
    let _ = std::fs::remove_file(&done);
    /// GO and DONE, removed at the end. On a failure before the dead
    /// owner's child saw DONE, DONE is written first so that it exits (it
    /// removes DONE as it goes; given a second for that, DONE is removed
    /// here anyway).
    struct Rm {
        go: String,
        done: String,
        child_gone: bool,
    }
    impl Drop for Rm {
        fn drop(&mut self) {
            if !self.child_gone {
                let _ = std::fs::write(&self.done, b"");
                let t = Instant::now();
                while std::path::Path::new(&self.done).exists()
                    && t.elapsed() < Duration::from_secs(1)
                {
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
            let _ = std::fs::remove_file(&self.done);
            let _ = std::fs::remove_file(&self.go);
        }
    }
    let mut rm = Rm {
        go: go.clone(),
        done: done.clone(),
        child_gone: false,
    };
    let sem = open(&name, 2);
    let mut d = Child::spawn(
        &name,
        2,
        "hold-fork-then-stop-in-release",
        &[("GO", go.clone()), ("DONE", done.clone())],
    );
    d.expect("held", Duration::from_secs(10));
    let mut w = Child::spawn(&name, 2, "queue-async", &[]);
    let t = Instant::now();
    let record = loop {
        w.drain();
        if let Some(r) = w.seen.iter().find_map(|l| l.strip_prefix("queued ")) {
            break r.parse::<u32>().unwrap();
        }
        assert!(t.elapsed() < Duration::from_secs(10), "{:?}", w.seen);
        std::thread::sleep(Duration::from_millis(1));
    };
    wait_queued(&sem, 1);
    let mut filler = Child::spawn(&name, 2, "fill", &[("FILL", "124".into())]);
    filler.expect("forked", Duration::from_secs(30));
    let t = Instant::now();
    while sem.census().unwrap().live != volt_sem_shm::MAX_PROCESSES as u32 {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "the table never filled: {:?}",
            sem.census()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // Stop the waiter outside the segment lock (its doorbell thread takes
    // it for a periodic sweep): stopped inside, the lock would time out.
    loop {
        w.signal(libc::SIGSTOP);
        w.wait_stopped();
        if sem.inspect_timeout(Duration::from_secs(2)).is_ok() {
            break;
        }
        w.signal(libc::SIGCONT);
        std::thread::sleep(Duration::from_millis(1));
    }
    let before = doorbell_word(&name, record);
    std::fs::write(&go, b"").unwrap();
    d.wait_stopped(); // inside release(1): held lowered, 1 permit in transit
    d.kill9(); // its record stays LIVE: its forked child holds the byte lock
    let mut f = Child::spawn(&name, 2, "open-expect-full", &[]);
    f.expect("open Err(ProcessTableFull)", Duration::from_secs(10));
    f.wait_exit(Duration::from_secs(10));
    let after = doorbell_word(&name, record);
    let c = assert_conserved(&sem);
    assert!(c.repairs >= 1, "the open did not repair: {c:?}");
    // The repair's recount granted the waiter the permit in transit.
    assert_eq!((c.granted, c.held, c.available), (1, 1, 0), "{c:?}");
    assert_eq!(
        after,
        before.wrapping_add(1),
        "the failed open dropped the wake-up of the waiter it granted"
    );
    w.signal(libc::SIGCONT);
    w.expect("granted", Duration::from_secs(10));
    drop(w);
    drop(filler);
    let _ = std::fs::write(&done, b""); // the dead owner's child exits
    let t = Instant::now();
    loop {
        let c = assert_conserved(&sem);
        if c.live == 1 {
            // The dead owner's child has exited (its record is gone), and
            // took DONE with it.
            rm.child_gone = true;
            assert_eq!(c.available, 2, "{c:?}");
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(30), "{c:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        !std::path::Path::new(&done).exists(),
        "the dead owner's child left {done}"
    );
}

#[test]
fn stale_segment_of_a_crashed_run_is_recovered_on_open() {
    // A process creates the semaphore, takes every permit and is killed; no
    // other process was attached. The next open finds its dead record (its
    // liveness lock is gone) and takes it back at once.
    let name = Name::new("xstale");
    let mut h = Child::spawn(&name, 3, "create-and-hold", &[]);
    h.expect("got", Duration::from_secs(5));
    h.kill9();
    let sem = SharedSemaphore::open(&name, 3, OpenOptions::new().attach_only()).unwrap();
    assert_eq!(sem.available_permits(), 3);
    let c = assert_conserved(&sem);
    assert_eq!((c.live, c.reclaims), (1, 1));
    sem.try_acquire(3).unwrap().forget();
    sem.release(3).unwrap();
}

/// Issue 26, item 11: a process stopped (SIGSTOP) inside the segment lock made
/// another process's `try_acquire` ("never blocks") and `acquire_timeout`
/// wait for as long as it stayed stopped. They now wait for the lock at most
/// a few ms (try) or until their deadline, and fail with NoPermits / TimedOut.
/// If they still block, the stopped process is killed after 5 s (which
/// unblocks them) and the test fails.
#[test]
fn a_process_stopped_inside_the_lock_does_not_stall_try_and_timed_acquires() {
    let name = Name::new("xstall");
    let sem = open(&name, 2);
    let mut s = Child::spawn(&name, 2, "stop-in-release", &[]);
    s.expect("held", Duration::from_secs(5));
    s.wait_stopped(); // inside release(1), holding the segment lock
    let s2 = sem.clone();
    let probe = std::thread::spawn(move || {
        let t = Instant::now();
        let tried = s2.try_acquire(1).map(Permit::forget);
        let tried_in = t.elapsed();
        let t = Instant::now();
        let timed = s2
            .acquire_timeout(1, Duration::from_millis(100))
            .map(Permit::forget);
        (tried, tried_in, timed, t.elapsed())
    });
    let t = Instant::now();
    while !probe.is_finished() && t.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(5));
    }
    let stalled = !probe.is_finished();
    s.kill9(); // unblocks the probe if it is stuck
    let (tried, tried_in, timed, timed_in) = probe.join().unwrap();
    eprintln!("stopped lock holder: try_acquire {tried:?} after {tried_in:?}, acquire_timeout(100 ms) {timed:?} after {timed_in:?}");
    assert!(!stalled, "try/timed acquires waited for a stopped process");
    assert_eq!(tried, Err(Error::NoPermits));
    assert_eq!(timed, Err(Error::TimedOut));
    // Deadline bounds with generous slack (a loaded machine), not timing claims.
    assert!(tried_in < Duration::from_secs(2), "{tried_in:?}");
    assert!(timed_in < Duration::from_secs(2), "{timed_in:?}");
    // The death inside the lock is repaired as ever: every permit comes back.
    sem.acquire_timeout(2, Duration::from_secs(10))
        .unwrap()
        .forget();
    let c = assert_conserved(&sem);
    assert_eq!((c.held, c.queued), (2, 0));
    sem.release(2).unwrap();
}

/// `open` waits at most 5 s in all for the segment lock (crate docs, *Trust
/// boundary*), also when this process is attached to the name already and
/// the open asks for `resize` to another total: before the fix that path
/// changed the total with an unbounded lock wait, so a process stopped
/// inside the lock stalled the open until it continued or died.
#[test]
fn an_open_with_resize_of_an_attached_name_gives_up_when_the_lock_holder_stops() {
    let name = Name::new("xresizestall");
    let sem = open(&name, 2);
    let mut s = Child::spawn(&name, 2, "stop-in-release", &[]);
    s.expect("held", Duration::from_secs(5));
    s.wait_stopped(); // inside release(1), holding the segment lock
    let n2 = name.0.clone();
    let opener = std::thread::spawn(move || {
        let t = Instant::now();
        let r = SharedSemaphore::open(&n2, 3, OpenOptions::new().resize(true))
            .map(|s| s.total_permits());
        (r, t.elapsed())
    });
    let t = Instant::now();
    while !opener.is_finished() && t.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let stalled = !opener.is_finished();
    s.kill9(); // unblocks the opener if it is stuck
    let (r, took) = opener.join().unwrap();
    eprintln!("open(resize) of an attached name, lock holder stopped: {r:?} after {took:?}");
    assert!(!stalled, "the open waited for a stopped lock holder");
    assert_eq!(r, Err(Error::TimedOut));
    // Refused: nothing changed. The death inside the lock is repaired.
    assert_eq!(sem.total_permits(), 2);
    sem.acquire_timeout(2, Duration::from_secs(10))
        .unwrap()
        .forget();
    let c = assert_conserved(&sem);
    assert_eq!((c.held, c.queued, c.total), (2, 0, 2));
    sem.release(2).unwrap();
}

/// `inspect_timeout` gives up, with `TimedOut` and nothing read, while a
/// process stopped inside the lock holds it; `inspect` would wait for as
/// long as it stays stopped. Once it dies, the repair gives every permit back
/// and the bounded inspect sees them.
#[test]
fn inspect_timeout_gives_up_when_the_lock_holder_stops() {
    let name = Name::new("xinspectstall");
    let sem = open(&name, 2);
    let mut s = Child::spawn(&name, 2, "stop-in-release", &[]);
    s.expect("held", Duration::from_secs(5));
    s.wait_stopped(); // inside release(1), holding the segment lock
    let s2 = sem.clone();
    let looker = std::thread::spawn(move || s2.inspect_timeout(Duration::from_millis(200)));
    let t = Instant::now();
    while !looker.is_finished() && t.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let stalled = !looker.is_finished();
    s.kill9(); // unblocks the looker if it is stuck
    let r = looker.join().unwrap();
    assert!(!stalled, "inspect_timeout waited for a stopped lock holder");
    assert_eq!(r.map(|i| i.total), Err(Error::TimedOut));
    let i = sem.inspect_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!((i.total, i.available, i.held()), (2, 2, 0));
}

/// `set_total_timeout` and `reopen_timeout` give up as `inspect_timeout`
/// does when a process stops inside the segment lock (`volt-sem resize` and
/// `reopen` use them), with nothing changed; once it dies, they work.
#[test]
fn set_total_and_reopen_timeout_give_up_when_the_lock_holder_stops() {
    let name = Name::new("xchangestall");
    let sem = open(&name, 2);
    let mut s = Child::spawn(&name, 2, "stop-in-release", &[]);
    s.expect("held", Duration::from_secs(5));
    s.wait_stopped(); // inside release(1), holding the segment lock
    let s2 = sem.clone();
    let changer = std::thread::spawn(move || {
        (
            s2.set_total_timeout(5, Duration::from_millis(200)),
            s2.reopen_timeout(Duration::from_millis(200)),
        )
    });
    let t = Instant::now();
    while !changer.is_finished() && t.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let stalled = !changer.is_finished();
    s.kill9(); // unblocks the changer if it is stuck
    let r = changer.join().unwrap();
    assert!(!stalled, "a timed change waited for a stopped lock holder");
    assert_eq!(r, (Err(Error::TimedOut), Err(Error::TimedOut)));
    assert_eq!(sem.total_permits(), 2); // nothing changed
    sem.set_total_timeout(3, Duration::from_secs(10)).unwrap();
    sem.close().unwrap();
    sem.reopen_timeout(Duration::from_secs(10)).unwrap();
    let i = sem.inspect_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!((i.total, i.available, i.closed), (3, 3, false));
}

/// Issue 26, item 11, the other half: a timed acquire already queued when a
/// process stops inside the lock must still give up on time. It cannot take
/// its request out of the queue without the lock, so it leaves that to its
/// doorbell thread and returns TimedOut; once the stopped process dies the
/// request is gone and every permit is back.
#[test]
fn a_queued_timed_acquire_gives_up_on_time_when_the_lock_holder_stops() {
    let name = Name::new("xstall2");
    let sem = open(&name, 2);
    let go = format!("/tmp/volt-sem-test-go.{}", std::process::id());
    let _ = std::fs::remove_file(&go);
    let mut s = Child::spawn(&name, 2, "hold-then-stop-in-release", &[("GO", go.clone())]);
    s.expect("held", Duration::from_secs(5));
    let s2 = sem.clone();
    let waiter = std::thread::spawn(move || {
        let t = Instant::now();
        let r = s2
            .acquire_timeout(1, Duration::from_millis(500))
            .map(Permit::forget);
        (r, t.elapsed())
    });
    wait_queued(&sem, 1);
    std::fs::write(&go, b"").unwrap();
    s.wait_stopped(); // inside release(1), holding the segment lock
    let t = Instant::now();
    while !waiter.is_finished() && t.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(5));
    }
    let stalled = !waiter.is_finished();
    s.kill9();
    let _ = std::fs::remove_file(&go);
    let (r, took) = waiter.join().unwrap();
    eprintln!("queued acquire_timeout(500 ms), lock holder stopped: {r:?} after {took:?}");
    assert!(
        !stalled,
        "a queued timed acquire waited for a stopped process"
    );
    assert_eq!(r, Err(Error::TimedOut));
    assert!(took < Duration::from_secs(3), "{took:?}");
    // The abandoned request leaves the queue once the lock is free again,
    // and the dead holder's permits come back.
    sem.acquire_timeout(2, Duration::from_secs(10))
        .unwrap()
        .forget();
    let t = Instant::now();
    loop {
        let c = assert_conserved(&sem);
        if c.queued == 0 && c.granted == 0 {
            assert_eq!(c.held, 2);
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "abandoned request left: {c:?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    sem.release(2).unwrap();
    assert_eq!(sem.available_permits(), 2);
}

/// As above, in a process that cannot create the doorbell thread that would
/// take the abandoned request out of the queue (no room for a thread's
/// stack): the request must not stay queued, holding the permits that come
/// back, until the process detaches.
#[test]
fn a_timed_acquire_that_gives_up_without_a_doorbell_thread_leaves_nothing_queued() {
    let name = Name::new("xstall3");
    let sem = open(&name, 2);
    let go = format!("/tmp/volt-sem-test-go3.{}", std::process::id());
    let _ = std::fs::remove_file(&go);
    let mut s = Child::spawn(&name, 2, "hold-then-stop-in-release", &[("GO", go.clone())]);
    s.expect("held", Duration::from_secs(5));
    let mut w = Child::spawn(&name, 2, "timed-waiter-without-threads", &[]);
    w.expect("limited", Duration::from_secs(5));
    std::fs::write(&go, b"").unwrap();
    s.wait_stopped(); // inside release(1), holding the segment lock
                      // The waiter's deadline passes while the lock holder is stopped.
    w.expect("past deadline", Duration::from_secs(10));
    s.kill9();
    let _ = std::fs::remove_file(&go);
    let t = Instant::now();
    let result = loop {
        w.drain();
        if let Some(r) = w.seen.iter().find_map(|l| l.strip_prefix("result ")) {
            break r.to_owned();
        }
        assert!(t.elapsed() < Duration::from_secs(10), "{:?}", w.seen);
        std::thread::sleep(Duration::from_millis(5));
    };
    let c = assert_conserved(&sem);
    eprintln!("timed acquire without a doorbell thread: {result}, then {c:?}");
    assert_eq!(result, "Err(TimedOut)");
    assert_eq!(
        (c.queued, c.granted, c.available),
        (0, 0, 2),
        "the abandoned request was left in the queue: {c:?}"
    );
}

/// The byte range of the segment's `pthread_mutex_t` (its `LockCell`, after
/// the 96-byte header, 64-aligned): whoever can write there can hold the lock
/// for good, which is inherent to a writable mapping (documented), so the
/// scribbler leaves it alone.
const LOCK_CELL: (u64, u64) = (128, 192);

/// Issue 26, item 12: a process that can write the segment wrote garbage and
/// the victims panicked (an index out of bounds) or hung. Now a value read
/// from the segment that this library never writes is a typed error
/// (`Error::Corrupt`), never a panic; timed calls stay timed. Several seeds;
/// each round: three victim processes run every operation while a fourth
/// writes random bytes at random offsets; every victim must finish, exit
/// cleanly and report, within a generous bound.
#[test]
fn garbage_in_the_segment_is_a_typed_error_never_a_panic_or_a_hang() {
    for seed in [1u64, 2, 3, 0x5eed, 0xdead_beef] {
        let name = Name::new("xgarbage");
        let sem = open(&name, 4);
        let mut victims: Vec<Child> = (0..3)
            .map(|_| {
                let mut c = Child::spawn(&name, 4, "victim", &[]);
                c.expect("ready", Duration::from_secs(10));
                c
            })
            .collect();
        let env = [("SEED", seed.to_string()), ("SCRIBBLES", "300".to_string())];
        let mut scribbler = Child::spawn(&name, 4, "scribble", &env);
        scribbler.expect("scribbled", Duration::from_secs(30));
        scribbler.wait_exit(Duration::from_secs(10));
        for v in &mut victims {
            v.wait_exit(Duration::from_secs(30));
            // Its last line may still be on its way through the pipe.
            let t = Instant::now();
            let report = loop {
                v.drain();
                if let Some(l) = v.seen.iter().find(|l| l.starts_with("done")) {
                    break l.clone();
                }
                assert!(
                    t.elapsed() < Duration::from_secs(10),
                    "seed {seed}: victim said {:?}",
                    v.seen
                );
                std::thread::sleep(Duration::from_millis(5));
            };
            eprintln!("seed {seed}: victim {}: {report}", v.pid());
        }
        // This process's handle on the scribbled segment: values, no panic.
        let _ = sem.try_acquire(1);
        let _ = sem.acquire_timeout(1, Duration::from_millis(20));
        let _ = sem.census();
        let _ = sem.held_permits();
    }
}

/// Issue 26, item 8: a creator killed anywhere inside its creation must not
/// leave a file that every later open refuses. Creators are killed at random
/// moments of a create/unlink loop; after each kill an open must succeed.
#[test]
fn kill9_during_creation_never_bricks_the_name() {
    let name = Name::new("xcreate");
    let mut rng = Rng(0x2545f4914f6cdd1d ^ std::process::id() as u64);
    let mut failures = Vec::new();
    for round in 0..60 {
        let mut c = Child::spawn(&name, 2, "create-loop", &[]);
        c.expect("looping", Duration::from_secs(10));
        std::thread::sleep(Duration::from_micros(rng.below(3000)));
        c.kill9();
        match SharedSemaphore::open(&name, 2, OpenOptions::new()) {
            Ok(sem) => {
                // Whatever the creator left, it is a working semaphore now.
                assert_conserved(&sem);
                sem.try_acquire(2).unwrap().forget();
                sem.release(2).unwrap();
            }
            Err(e) => failures.push((round, e)),
        }
        let _ = volt_sem_shm::unlink(&name);
    }
    assert!(
        failures.is_empty(),
        "opens refused after a kill: {failures:?}"
    );
}

/// What a creator of another layout version (another release in a rolling
/// deploy) does, by the protocol every layout keeps: `shm_open`, the init
/// lock (an OFD lock on byte 128, held until the segment is complete), and,
/// if the file is new (size 0) or a crashed creation (magic 0), size it at
/// *its* size (`OTHER_SIZE`, larger than this layout's), map it, write its
/// header and touch every page (slowly: a creator that is slow, not dead),
/// the magic last; then let go and unlink the name. Over and over, until
/// killed. A takeover of its file while it is mapped (an `ftruncate` to
/// this layout's smaller size) would kill it with SIGBUS.
fn other_layout_create_loop(name: &str) -> ! {
    let path = std::ffi::CString::new(format!("/{}{}", volt_sem_shm::NAME_PREFIX, name)).unwrap();
    let size = env_num("OTHER_SIZE") as usize;
    let page = 4096;
    say("looping");
    loop {
        // SAFETY: plain syscalls on our own fd and mapping, whose length is
        // the file's size as we set it (a store beyond a shrunk file faults:
        // what this role is there to show).
        unsafe {
            let fd = libc::shm_open(path.as_ptr(), libc::O_RDWR | libc::O_CREAT, 0o600);
            assert!(fd >= 0);
            let mut fl: libc::flock = core::mem::zeroed();
            fl.l_type = libc::F_WRLCK as libc::c_short;
            fl.l_whence = libc::SEEK_SET as libc::c_short;
            fl.l_start = 128;
            fl.l_len = 1;
            assert_eq!(libc::fcntl(fd, libc::F_OFD_SETLKW, &fl), 0);
            let mut st: libc::stat = core::mem::zeroed();
            assert_eq!(libc::fstat(fd, &mut st), 0);
            let mut magic = [0u8; 8];
            let got = libc::pread(fd, magic.as_mut_ptr().cast(), 8, 0);
            if st.st_nlink > 0 && (st.st_size == 0 || (got == 8 && magic == [0; 8])) {
                assert_eq!(libc::ftruncate(fd, size as libc::off_t), 0);
                let p = libc::mmap(
                    core::ptr::null_mut(),
                    size,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED,
                    fd,
                    0,
                );
                assert_ne!(p, libc::MAP_FAILED);
                let b = p.cast::<u8>();
                core::ptr::write_volatile(b.add(8).cast::<u32>(), 5);
                core::ptr::write_volatile(b.add(16).cast::<u64>(), size as u64);
                for round in 0..3 {
                    for at in (page..size).step_by(page) {
                        core::ptr::write_volatile(b.add(at), round as u8 + 1);
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
                core::ptr::write_volatile(b.cast::<u64>(), u64::from_le_bytes(*b"VOLTSHM\x01"));
                libc::munmap(p, size);
                // Its semaphore, for a while, for the other side to meet.
                libc::fcntl(
                    fd,
                    libc::F_OFD_SETLK,
                    &libc::flock {
                        l_type: libc::F_UNLCK as libc::c_short,
                        ..fl
                    },
                );
                std::thread::sleep(Duration::from_millis(1));
            }
            libc::close(fd);
            libc::shm_unlink(path.as_ptr());
        }
        // Room for the other side's opens (a name unlinked under every one
        // of them a hundred times in a row is Os(EAGAIN)).
        std::thread::sleep(Duration::from_micros(300));
    }
}

/// Version skew (review of the takeover of a crashed creation of another
/// layout): this release's opens race a creator of another, larger layout
/// that keeps creating and unlinking the name and is killed at random
/// moments. An open may take over a file only when its creator is dead:
/// the live creator never dies of SIGBUS (its file shrunk under its
/// mapping), and every open either gets a working semaphore or is refused
/// by the other layout's version; after the kill the name is never bricked.
#[test]
fn a_creator_of_another_layout_is_only_taken_over_when_dead() {
    let name = Name::new("xotherlayout");
    let ours = {
        drop(open(&name, 1));
        let path = format!("/dev/shm/{}{}", volt_sem_shm::NAME_PREFIX, &*name);
        let size = std::fs::metadata(&path).unwrap().len();
        volt_sem_shm::unlink(&name).unwrap();
        size
    };
    let other = (ours + 64 * 4096).to_string();
    let mut rng = Rng(0x9e3779b97f4a7c15 ^ std::process::id() as u64);
    let (mut ok, mut refused, mut taken_over) = (0, 0, 0);
    for round in 0..60 {
        let mut c = Child::spawn(
            &name,
            2,
            "other-layout-create-loop",
            &[("OTHER_SIZE", other.clone())],
        );
        c.expect("looping", Duration::from_secs(10));
        let until = Instant::now() + Duration::from_micros(500 + rng.below(5000));
        while Instant::now() < until {
            match SharedSemaphore::open(&name, 2, OpenOptions::new()) {
                Ok(sem) => {
                    ok += 1;
                    assert_conserved(&sem);
                    sem.try_acquire(2).unwrap().forget();
                    sem.release(2).unwrap();
                }
                Err(Error::VersionMismatch {
                    found: 5,
                    expected: _,
                }) => refused += 1,
                // The name unlinked under the open a hundred times running.
                Err(Error::Os(libc::EAGAIN)) => {}
                Err(e) => panic!("round {round}: open failed with {e:?}"),
            }
            std::thread::sleep(Duration::from_micros(rng.below(1000)));
        }
        // The creator alone for a moment: killed in its creation, mostly.
        std::thread::sleep(Duration::from_micros(rng.below(4000)));
        assert!(
            c.ended().is_none(),
            "round {round}: the live creator died: {:?}",
            c.ended()
        );
        c.kill9();
        let path = format!("/dev/shm/{}{}", volt_sem_shm::NAME_PREFIX, &*name);
        // A crashed creation: killed before its magic, or before it sized
        // the file at all (empty).
        let crashed = std::fs::read(&path)
            .is_ok_and(|f| f.len() as u64 != ours && f.iter().take(8).all(|&b| b == 0));
        match SharedSemaphore::open(&name, 2, OpenOptions::new()) {
            Ok(sem) => {
                assert_conserved(&sem);
                sem.try_acquire(2).unwrap().forget();
                sem.release(2).unwrap();
                assert_eq!(std::fs::metadata(&path).unwrap().len(), ours);
                taken_over += crashed as u32;
                ok += 1;
            }
            Err(Error::VersionMismatch {
                found: 5,
                expected: _,
            }) => refused += 1,
            Err(e) => panic!("round {round}: open after the kill failed with {e:?}"),
        }
        let _ = volt_sem_shm::unlink(&name);
    }
    eprintln!("ok {ok}, refused {refused}, taken over {taken_over}");
    // Both sides of the race happened (not a test of luck: 60 rounds).
    assert!(
        ok > 0 && refused > 0 && taken_over > 0,
        "ok {ok}, refused {refused}, taken over {taken_over}"
    );
}

/// Issue 26, item 9: `open` on a full `/dev/shm` died of SIGBUS (the file was
/// sized sparse and the first store faulted) and left a broken name. The
/// child runs in a mount namespace of its own with a 40 KiB tmpfs on
/// `/dev/shm` (a segment is larger): its open must fail with ENOSPC and leave
/// no name behind.
#[test]
fn open_on_a_full_dev_shm_is_a_typed_error() {
    let probe = Command::new("unshare")
        .args([
            "-m",
            "sh",
            "-c",
            "mount -t tmpfs -o size=40k volt-full /dev/shm",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if !probe.is_ok_and(|s| s.success()) {
        eprintln!("SKIPPED: open_on_a_full_dev_shm_is_a_typed_error (cannot unshare -m and mount a tmpfs here)");
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let out = Command::new("unshare")
        .args([
            "-m",
            "sh",
            "-c",
            "mount -t tmpfs -o size=40k volt-full /dev/shm && exec \"$0\" \"$@\"",
        ])
        .arg(exe)
        .args(["--exact", "child_main", "--nocapture", "--test-threads=1"])
        .env("VOLT_SHM_ROLE", "open-on-full")
        .env("VOLT_SHM_NAME", "full")
        .env("VOLT_SHM_TOTAL", "2")
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    let said: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.find('@').map(|i| l[i + 1..].trim().to_string()))
        .collect();
    assert!(
        out.status.success(),
        "child died: {:?} {said:?}",
        out.status
    );
    assert_eq!(
        said,
        [
            format!("open Err({:?})", Error::Os(libc::ENOSPC)),
            "left false".to_string()
        ]
    );
}

// ------------------------------------------------------------------ stress

const STRESS_TOTAL: usize = 6;
const MAX_CHILDREN: usize = 64;

/// The test's own shared counters, in a separate shared-memory file.
#[repr(C)]
struct Counters {
    /// Permits in use right now, as the children report them.
    current: AtomicI64,
    /// The largest `current` ever seen.
    peak: AtomicI64,
    stop: AtomicU64,
    ops: AtomicU64,
    per_child: [AtomicI64; MAX_CHILDREN],
}

fn map_counters(path: &str, create: bool) -> &'static Counters {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(create)
        .truncate(create)
        .open(path)
        .unwrap();
    f.set_len(4096).unwrap();
    use std::os::fd::AsRawFd;
    // SAFETY: maps 4096 bytes of a file of that size; leaked for the process's
    // life; all-zero is a valid `Counters`.
    unsafe {
        let p = libc::mmap(
            core::ptr::null_mut(),
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            0,
        );
        assert_ne!(p, libc::MAP_FAILED);
        &*(p as *const Counters)
    }
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn stress_child(sem: &SharedSemaphore, _name: &str) {
    let ctr = map_counters(&std::env::var("CTR").unwrap(), false);
    let idx = env_num("IDX") as usize;
    say("ready");
    std::thread::scope(|s| {
        for t in 0..3u64 {
            s.spawn(move || {
                let mut rng = Rng((std::process::id() as u64) << 8 | (t + 1));
                let use_permits = |k: u64, rng: &mut Rng| {
                    ctr.per_child[idx].fetch_add(k as i64, SeqCst);
                    let now = ctr.current.fetch_add(k as i64, SeqCst) + k as i64;
                    ctr.peak.fetch_max(now, SeqCst);
                    if rng.below(2) == 0 {
                        std::thread::sleep(Duration::from_micros(rng.below(400)));
                    }
                    ctr.current.fetch_sub(k as i64, SeqCst);
                    ctr.per_child[idx].fetch_sub(k as i64, SeqCst);
                    sem.release(k as usize).unwrap();
                    ctr.ops.fetch_add(1, SeqCst);
                };
                while ctr.stop.load(SeqCst) == 0 {
                    let k = 1 + rng.below(4);
                    match rng.below(10) {
                        0..=3 => {
                            sem.acquire_blocking(k as usize).unwrap().forget();
                            use_permits(k, &mut rng);
                        }
                        4..=6 => {
                            let d = Duration::from_micros(rng.below(3000));
                            match sem.acquire_timeout(k as usize, d) {
                                Ok(permit) => {
                                    permit.forget();
                                    use_permits(k, &mut rng);
                                }
                                Err(Error::TimedOut) => {}
                                Err(e) => panic!("{e}"),
                            }
                        }
                        7..=8 => {
                            // Async, cancelled (dropped) if not done after a while.
                            use std::future::Future;
                            use std::task::{Context, Poll};
                            let waker = futures::task::noop_waker();
                            let mut cx = Context::from_waker(&waker);
                            let mut fut = Box::pin(sem.acquire(k as usize));
                            let mut done = false;
                            for _ in 0..3 {
                                if let Poll::Ready(r) = fut.as_mut().poll(&mut cx) {
                                    r.unwrap().forget();
                                    done = true;
                                    break;
                                }
                                std::thread::sleep(Duration::from_micros(rng.below(1000)));
                            }
                            drop(fut);
                            if done {
                                use_permits(k, &mut rng);
                            }
                        }
                        _ => {
                            if let Ok(permit) = sem.try_acquire(k as usize) {
                                permit.forget();
                                use_permits(k, &mut rng);
                            }
                        }
                    }
                }
            });
        }
    });
    say("done");
}

#[test]
fn stress_processes_threads_cancels_and_kill9() {
    let name = Name::new("xstress");
    let ctr_path = format!("/dev/shm/volt-sem-test-ctr.{}", std::process::id());
    struct Rm(String);
    impl Drop for Rm {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
    let _rm = Rm(ctr_path.clone());
    let ctr = map_counters(&ctr_path, true);
    let sem = open(&name, STRESS_TOTAL);
    let spawn = |idx: usize| {
        let env = [("CTR", ctr_path.clone()), ("IDX", idx.to_string())];
        let mut c = Child::spawn(&name, STRESS_TOTAL, "stress", &env);
        c.expect("ready", Duration::from_secs(10));
        (idx, c)
    };
    let mut next_idx = 0;
    let mut children: Vec<(usize, Child)> = (0..4)
        .map(|_| {
            next_idx += 1;
            spawn(next_idx - 1)
        })
        .collect();
    let mut rng = Rng(0x9e3779b97f4a7c15 ^ std::process::id() as u64);
    let mut kills = 0;
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(300 + rng.below(400)));
        // kill -9 a random child, anywhere (possibly inside the segment
        // lock). Stop it first so that its share of the test's counter can
        // be taken out before its permits are reclaimed: the counter may
        // under-count for a moment, never over-count.
        let i = rng.below(children.len() as u64) as usize;
        let (idx, mut c) = children.swap_remove(i);
        c.signal(libc::SIGSTOP);
        c.wait_stopped();
        let share = ctr.per_child[idx].swap(0, SeqCst);
        ctr.current.fetch_sub(share, SeqCst);
        c.kill9();
        kills += 1;
        if next_idx < MAX_CHILDREN {
            next_idx += 1;
            children.push(spawn(next_idx - 1));
        }
        assert!(ctr.peak.load(SeqCst) <= STRESS_TOTAL as i64);
    }
    ctr.stop.store(1, SeqCst);
    for (_, c) in &mut children {
        c.wait_exit(Duration::from_secs(20));
        assert!(c.saw("done"));
    }
    let peak = ctr.peak.load(SeqCst);
    let ops = ctr.ops.load(SeqCst);
    let c = assert_conserved(&sem);
    eprintln!("stress: {ops} grants used, {kills} kill -9, peak {peak}/{STRESS_TOTAL}, {c:?}");
    assert!(peak <= STRESS_TOTAL as i64, "peak {peak} above the limit");
    assert!(peak >= 1 && ops > 100, "the stress did not run: {ops} ops");
    assert_eq!(
        (c.available, c.queued, c.live, c.held),
        (STRESS_TOTAL as u64, 0, 1, 0)
    );
}

/// A role's release of 1 that stops inside the segment lock (a test hook),
/// once the test creates the file named by `GO`; the test kills the process
/// there.
fn release_stopping_inside_once_told(sem: &SharedSemaphore) {
    let go = std::env::var("GO").unwrap();
    while !std::path::Path::new(&go).exists() {
        std::thread::sleep(Duration::from_millis(1));
    }
    volt_sem_shm::hooks::stop_in_next_release();
    sem.release(1).unwrap(); // stops inside the lock; killed there
    say("resumed");
}
