//! `SharedSemaphore::stats` (issue 29) with real processes: counters of this
//! process's requests only, through every entry point (the `Permit` API, the
//! async future, the raw waiter API), exact under contention between threads
//! and between processes; queued waits in the histogram; cancels, timeouts
//! and reclaims of a holder killed with `SIGKILL`; the gauges while a
//! request waits with a partial grant.
#![cfg(target_os = "linux")]

mod support;

use std::ffi::c_void;
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Context;
use std::time::{Duration, Instant};

use futures::FutureExt;
use support::child::{say, Child};
use support::Name;
use volt_sem::stats::Stats;
use volt_sem_shm::{
    Error, Finish, OpenOptions, RawAcquire, RawSemaphore, SharedSemaphore, ShmWaiter,
};

/// How long a queued request is kept waiting before its release, in the
/// tests of the histogram: the recorded wait must be at least this.
const HOLD: Duration = Duration::from_millis(300);

fn env(key: &str) -> Option<String> {
    std::env::var(key).ok()
}

fn env_num(key: &str) -> usize {
    env(key).unwrap().parse().unwrap()
}

/// The line a child reports its own stats with (see `parse`).
fn report(tag: &str, s: &Stats, done: (u64, u64)) {
    say(&format!(
        "{tag} {} {} {} {} {} {} {} {} {}",
        done.0,
        done.1,
        s.grants,
        s.permits_granted,
        s.wait.count(),
        s.cancels,
        s.timeouts,
        s.wait.max().as_nanos(),
        s.recording as u8,
    ));
}

/// A child's `tag` line: the numbers `report` wrote.
#[track_caller]
fn parse(c: &mut Child, tag: &str, within: Duration) -> Vec<u64> {
    let t = Instant::now();
    loop {
        c.drain();
        let prefix = format!("{tag} ");
        if let Some(l) = c.seen.iter().find(|l| l.starts_with(&prefix)) {
            return l[prefix.len()..]
                .split(' ')
                .map(|x| x.parse().unwrap())
                .collect();
        }
        assert!(t.elapsed() < within, "child never said {tag}: {:?}", c.seen);
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Not a test of its own: the entry point of the child processes (see
/// `support::child`). Roles: `hold` (acquires `N` permits and holds them
/// until killed), `contend` (`ROUNDS` rounds of every kind of acquire,
/// then reports its stats and its own tally of grants), `wait` (one
/// blocking acquire of `N`, then reports its stats).
#[test]
fn child_main() {
    let Some(role) = env("VOLT_SHM_ROLE") else {
        return;
    };
    let name = env("VOLT_SHM_NAME").unwrap();
    let total = env_num("VOLT_SHM_TOTAL");
    let sem = SharedSemaphore::open(&name, total, OpenOptions::new().attach_only()).unwrap();
    sem.enable_stats();
    match role.as_str() {
        "hold" => {
            sem.acquire_blocking(env_num("N")).unwrap().forget();
            say("got");
            loop {
                std::thread::sleep(Duration::from_secs(60));
            }
        }
        "contend" => {
            say("ready");
            let done = contend(&sem, env_num("ROUNDS"), 7);
            report("stats", &sem.stats(), done);
            loop {
                std::thread::sleep(Duration::from_secs(60));
            }
        }
        "wait" => {
            say("queueing");
            let p = sem.acquire_blocking(env_num("N")).unwrap();
            report("stats", &sem.stats(), (1, p.permits() as u64));
            drop(p);
            loop {
                std::thread::sleep(Duration::from_secs(60));
            }
        }
        other => panic!("unknown role {other}"),
    }
}

/// `rounds` rounds of acquires of every kind (lock-free and slow
/// `try_acquire`, blocking, timed with a timeout that never runs out, async,
/// and `n == 0`), each permit held a moment then released. Returns the
/// grants this caller saw and their permits: what its stats must say.
fn contend(sem: &SharedSemaphore, rounds: usize, seed: u64) -> (u64, u64) {
    let (mut grants, mut permits) = (0u64, 0u64);
    let mut x = seed;
    for i in 0..rounds {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let n = 1 + (x % 2) as usize;
        let got = match i % 5 {
            0 => sem.try_acquire(n).ok(),
            1 => Some(sem.acquire_blocking(n).unwrap()),
            2 => Some(sem.acquire_timeout(n, Duration::from_secs(60)).unwrap()),
            3 => Some(futures::executor::block_on(sem.acquire(n)).unwrap()),
            _ => Some(sem.try_acquire(0).unwrap()),
        };
        if let Some(p) = got {
            grants += 1;
            permits += p.permits() as u64;
            std::thread::yield_now();
            drop(p);
        }
    }
    (grants, permits)
}

/// Waits until this process has `n` requests queued (its `queued` gauge).
#[track_caller]
fn wait_queued(sem: &SharedSemaphore, n: usize) -> Stats {
    let t = Instant::now();
    loop {
        let s = sem.stats();
        if s.queued == n {
            return s;
        }
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "never {n} queued: {s:?}"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Waits until `n` requests, of any process, are queued (read by `inspect`).
#[track_caller]
fn wait_waiters(sem: &SharedSemaphore, n: usize) {
    let t = Instant::now();
    while sem.inspect().unwrap().waiters.len() != n {
        assert!(t.elapsed() < Duration::from_secs(10), "never {n} waiters");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The histogram's grants that waited at least `d` (by bucket bounds: the
/// buckets whose upper bound is above `d`).
fn waits_of_at_least(s: &Stats, d: Duration) -> u64 {
    s.wait
        .buckets()
        .filter(|(bound, _)| bound.map_or(true, |b| b >= d))
        .map(|(_, c)| c)
        .sum()
}

#[test]
fn off_by_default_gauges_only() {
    let name = Name::new("soff");
    let sem = SharedSemaphore::open(&name, 4, OpenOptions::new()).unwrap();
    let p = sem.try_acquire(3).unwrap();
    let q = sem.acquire_blocking(1).unwrap();
    let s = sem.stats();
    assert!(!s.recording);
    assert_eq!(
        (s.grants, s.permits_granted, s.cancels, s.timeouts),
        (0, 0, 0, 0)
    );
    assert_eq!((s.reclaims_seen, s.lease_losses, s.wait.count()), (0, 0, 0));
    assert_eq!((s.available, s.held, s.queued), (0, 4, 0));
    sem.record_timeout(); // nothing happens unless recording
    assert_eq!(sem.stats().timeouts, 0);
    drop((p, q));
    assert_eq!(sem.stats().available, 4);
}

#[test]
fn every_entry_point_counts_a_grant_once() {
    let name = Name::new("sentry");
    let sem = SharedSemaphore::open(&name, 4, OpenOptions::new()).unwrap();
    sem.enable_stats();
    sem.enable_stats(); // idempotent: the counters are not reset
    drop(sem.try_acquire(2).unwrap());
    sem.enable_stats();
    drop(sem.acquire_blocking(1).unwrap());
    drop(sem.acquire_timeout(3, Duration::from_secs(5)).unwrap());
    drop(futures::executor::block_on(sem.acquire(4)).unwrap());
    drop(sem.try_acquire(0).unwrap()); // n == 0 counts as a grant
    drop(sem.acquire_blocking(0).unwrap());
    let w = pin!(ShmWaiter::new());
    // SAFETY: a fresh, pinned waiter; `noop` never reads its context.
    let r = unsafe { sem.acquire_raw(w.as_ref(), 2, noop, std::ptr::null_mut()) };
    assert_eq!(r, Ok(RawAcquire::Ready));
    sem.release(2).unwrap();
    // Failed tries are not counted.
    let all = sem.try_acquire(4).unwrap();
    assert_eq!(sem.try_acquire(1).unwrap_err(), Error::NoPermits);
    // Another handle of the same name in this process shares the counters.
    let other = SharedSemaphore::open(&name, 4, OpenOptions::new()).unwrap();
    assert_eq!(other.stats().grants, 8);
    drop(all);
    drop(other.clone().try_acquire(1).unwrap());
    let s = sem.stats();
    assert!(s.recording);
    assert_eq!(
        (s.grants, s.permits_granted),
        (9, 2 + 1 + 3 + 4 + 2 + 4 + 1)
    );
    // None of them waited: all in the first bucket.
    assert_eq!(s.wait.count(), 9);
    assert_eq!(s.wait.max(), Duration::ZERO);
    assert_eq!(
        (s.cancels, s.timeouts, s.reclaims_seen, s.lease_losses),
        (0, 0, 0, 0)
    );
    assert_eq!((s.available, s.held, s.queued), (4, 0, 0));
}

unsafe extern "C" fn noop(_ctx: *mut c_void) {}

/// Counts the calls of a raw waiter's callback.
unsafe extern "C" fn count_wake(ctx: *mut c_void) {
    // SAFETY: the tests pass an `AtomicUsize` that outlives finish_raw.
    unsafe { &*(ctx as *const AtomicUsize) }.fetch_add(1, Ordering::SeqCst);
}

#[test]
fn threads_of_one_process_count_exactly() {
    let name = Name::new("sthreads");
    let sem = SharedSemaphore::open(&name, 2, OpenOptions::new()).unwrap();
    sem.enable_stats();
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let sem = sem.clone();
            std::thread::spawn(move || contend(&sem, 300, 11 + t))
        })
        .collect();
    let (mut grants, mut permits) = (0, 0);
    for t in threads {
        let (g, p) = t.join().unwrap();
        grants += g;
        permits += p;
    }
    let s = sem.stats();
    assert_eq!((s.grants, s.permits_granted), (grants, permits), "{s:?}");
    assert_eq!(s.wait.count(), grants);
    assert_eq!((s.cancels, s.timeouts), (0, 0));
    assert_eq!((s.available, s.held, s.queued), (2, 0, 0));
}

#[test]
fn two_processes_count_their_own_grants() {
    let name = Name::new("sprocs");
    let sem = SharedSemaphore::open(&name, 2, OpenOptions::new()).unwrap();
    sem.enable_stats();
    let mut c = Child::spawn(&name, 2, "contend", &[("ROUNDS", "400".into())]);
    c.expect("ready", Duration::from_secs(10));
    let threads: Vec<_> = (0..2)
        .map(|t| {
            let sem = sem.clone();
            std::thread::spawn(move || contend(&sem, 300, 23 + t))
        })
        .collect();
    let (mut grants, mut permits) = (0, 0);
    for t in threads {
        let (g, p) = t.join().unwrap();
        grants += g;
        permits += p;
    }
    let theirs = parse(&mut c, "stats", Duration::from_secs(60));
    let s = sem.stats();
    // Each process counts its own grants only...
    assert_eq!((s.grants, s.permits_granted), (grants, permits), "{s:?}");
    assert_eq!(s.wait.count(), grants);
    // The child's counters match what it saw: grants, permits, waits.
    assert_eq!(
        &theirs[2..5],
        &[theirs[0], theirs[1], theirs[0]],
        "{theirs:?}"
    );
    assert_eq!((theirs[5], theirs[6], theirs[8]), (0, 0, 1));
    // ...so the two sum to every grant made.
    assert_eq!(s.grants + theirs[2], grants + theirs[0]);
    assert_eq!((s.cancels, s.timeouts), (0, 0));
}

#[test]
fn a_queued_grant_records_its_wait() {
    let name = Name::new("swait");
    let sem = SharedSemaphore::open(&name, 1, OpenOptions::new()).unwrap();
    sem.enable_stats();
    // Blocking, async and raw waiters of this process, each released HOLD
    // after it was seen queued.
    for kind in 0..3 {
        let held = sem.try_acquire(1).unwrap();
        let waiter = {
            let sem = sem.clone();
            std::thread::spawn(move || match kind {
                0 => drop(sem.acquire_blocking(1).unwrap()),
                1 => drop(futures::executor::block_on(sem.acquire(1)).unwrap()),
                _ => {
                    let calls = AtomicUsize::new(0);
                    let w = pin!(ShmWaiter::new());
                    let ctx = &calls as *const AtomicUsize as *mut c_void;
                    // SAFETY: fresh, pinned; `calls` outlives finish_raw.
                    let r = unsafe { sem.acquire_raw(w.as_ref(), 1, count_wake, ctx) };
                    assert_eq!(r, Ok(RawAcquire::Pending));
                    while calls.load(Ordering::SeqCst) == 0 {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    // SAFETY: queued on `sem`.
                    assert_eq!(unsafe { sem.finish_raw(w.as_ref()) }, Finish::Granted);
                    sem.release(1).unwrap();
                }
            })
        };
        wait_queued(&sem, 1);
        std::thread::sleep(HOLD);
        drop(held);
        waiter.join().unwrap();
        let s = sem.stats();
        assert_eq!((s.grants, s.permits_granted), (2 * kind + 2, 2 * kind + 2));
        assert_eq!(waits_of_at_least(&s, HOLD), kind + 1, "{s:?}");
        assert!(s.wait.max() >= HOLD && s.wait.sum() >= HOLD * (kind as u32 + 1));
        assert_eq!(s.queued, 0);
    }
    // One waiting in another process, released by this one: recorded there,
    // not here.
    let held = sem.try_acquire(1).unwrap();
    let before = sem.stats();
    let mut c = Child::spawn(&name, 1, "wait", &[("N", "1".into())]);
    c.expect("queueing", Duration::from_secs(10));
    wait_waiters(&sem, 1);
    std::thread::sleep(HOLD);
    drop(held);
    let theirs = parse(&mut c, "stats", Duration::from_secs(10));
    assert_eq!(&theirs[2..5], &[1, 1, 1], "{theirs:?}");
    assert!(theirs[7] >= HOLD.as_nanos() as u64, "{theirs:?}");
    let s = sem.stats();
    assert_eq!(
        (s.grants, s.wait.count()),
        (before.grants, before.wait.count())
    );
}

#[test]
fn cancels_and_timeouts() {
    let name = Name::new("scancel");
    let sem = SharedSemaphore::open(&name, 1, OpenOptions::new()).unwrap();
    sem.enable_stats();
    let held = sem.try_acquire(1).unwrap();
    // A timed acquire that runs out: a timeout, and a cancel (it was queued).
    let r = sem.acquire_timeout(1, Duration::from_millis(50));
    assert_eq!(r.unwrap_err(), Error::TimedOut);
    let s = sem.stats();
    assert_eq!((s.timeouts, s.cancels, s.queued), (1, 1, 0));
    // An async acquire dropped while queued: a cancel.
    {
        let mut f = Box::pin(sem.acquire(1));
        let waker = futures::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        assert!(f.poll_unpin(&mut cx).is_pending());
        assert_eq!(sem.stats().queued, 1);
    }
    assert_eq!((sem.stats().cancels, sem.stats().queued), (2, 0));
    // A raw waiter cancelled by `finish_raw`: a cancel; the binding's own
    // timer records its timeout.
    let w = pin!(ShmWaiter::new());
    // SAFETY: fresh, pinned; `noop` reads nothing.
    let r = unsafe { sem.acquire_raw(w.as_ref(), 1, noop, std::ptr::null_mut()) };
    assert_eq!(r, Ok(RawAcquire::Pending));
    assert_eq!(sem.stats().queued, 1);
    // SAFETY: queued on `sem`.
    assert_eq!(
        unsafe { sem.finish_raw(w.as_ref()) },
        Finish::Cancelled { returned: 0 }
    );
    sem.record_timeout();
    // An interrupted blocking acquire: a cancel.
    let r = sem.acquire_blocking_interruptible(1, None, Duration::from_millis(5), || true);
    assert!(matches!(r, Ok(None)));
    let s = sem.stats();
    assert_eq!((s.timeouts, s.cancels, s.queued), (2, 4, 0));
    // A request failed by `close` is not a cancel.
    let waiter = {
        let sem = sem.clone();
        std::thread::spawn(move || sem.acquire_blocking(1).map(|p| p.forget()))
    };
    wait_queued(&sem, 1);
    sem.close().unwrap();
    assert_eq!(waiter.join().unwrap(), Err(Error::Closed));
    let s = sem.stats();
    assert_eq!((s.grants, s.timeouts, s.cancels, s.queued), (1, 2, 4, 0));
    drop(held);
}

#[test]
fn a_killed_holder_reclaimed_by_this_process() {
    let name = Name::new("sreclaim");
    let sem = SharedSemaphore::open(&name, 2, OpenOptions::new()).unwrap();
    sem.enable_stats();
    let mut h = Child::spawn(&name, 2, "hold", &[("N", "2".into())]);
    h.expect("got", Duration::from_secs(10));
    assert_eq!(sem.stats().reclaims_seen, 0);
    h.kill9();
    // The slow path of this acquire (or the sweeps of its wait) finds the
    // dead holder and takes its permits back.
    let p = sem
        .acquire_timeout(2, Duration::from_secs(10))
        .expect("the dead holder's permits came back");
    let s = sem.stats();
    assert!(s.reclaims_seen >= 1, "{s:?}");
    assert_eq!((s.grants, s.permits_granted, s.held), (1, 2, 2));
    drop(p);
}

#[test]
fn gauges_while_a_request_waits_with_a_partial_grant() {
    let name = Name::new("sgauge");
    let sem = SharedSemaphore::open(&name, 5, OpenOptions::new()).unwrap();
    sem.enable_stats();
    // Another process holds 1: neither held nor queued here.
    let mut h = Child::spawn(&name, 5, "hold", &[("N", "1".into())]);
    h.expect("got", Duration::from_secs(10));
    let mine = sem.try_acquire(2).unwrap();
    assert_eq!(
        (sem.stats().available, sem.stats().held, sem.stats().queued),
        (2, 2, 0)
    );
    // Wants 3, gets the 2 available at once (a partial grant) and waits.
    let waiter = {
        let sem = sem.clone();
        std::thread::spawn(move || sem.acquire_blocking(3).map(|p| p.forget()))
    };
    let s = wait_queued(&sem, 1);
    // The partial grant is neither held nor available.
    assert_eq!((s.available, s.held, s.queued), (0, 2, 1), "{s:?}");
    let i = sem.inspect().unwrap();
    assert_eq!((i.waiters.len(), i.waiters[0].granted), (1, 2));
    drop(mine);
    waiter.join().unwrap().unwrap();
    let s = sem.stats();
    assert_eq!((s.available, s.held, s.queued), (1, 3, 0), "{s:?}");
    assert_eq!((s.grants, s.permits_granted, s.wait.count()), (2, 5, 2));
    sem.release(3).unwrap();
    h.kill9();
}

/// Switched on through one clone, recorded through another: one recorder
/// per process and name.
#[test]
fn clones_share_one_recorder() {
    let name = Name::new("sclone");
    let sem = SharedSemaphore::open(&name, 1, OpenOptions::new()).unwrap();
    let twin = sem.clone();
    twin.enable_stats();
    drop(sem.try_acquire(1).unwrap());
    assert!(sem.stats().recording);
    assert_eq!((sem.stats().grants, twin.stats().grants), (1, 1));
}
