//! Issue 29: changing the total of a named semaphore online
//! (`set_total`, `OpenOptions::resize`, `reopen`), with real processes.
//!
//! Children are this test binary re-executed with `VOLT_SHM_ROLE` set (see
//! `support::child`); they talk back through `@` lines.
#![cfg(target_os = "linux")]

mod support;

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::SeqCst};
use std::time::{Duration, Instant};

use support::child::{say, Child};
use support::Name;
use volt_sem_shm::{Census, Error, OpenOptions, SharedSemaphore};

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
    if role == "open" {
        let resize = std::env::var("RESIZE").is_ok();
        match SharedSemaphore::open(&name, total, OpenOptions::new().resize(resize)) {
            Ok(sem) => say(&format!("total {}", sem.total_permits())),
            Err(e) => say(&format!("err {e:?}")),
        }
        std::process::exit(0);
    }
    let sem = SharedSemaphore::open(&name, total, OpenOptions::new().attach_only()).unwrap();
    match role.as_str() {
        "acquire" => {
            // Acquires N, says how it went, then holds until the file GO
            // exists and releases.
            let n = env_num("N") as usize;
            say("start");
            match sem.acquire_blocking(n) {
                Ok(p) => {
                    p.forget();
                    say("got");
                    let go = std::env::var("GO").unwrap();
                    let t = Instant::now();
                    while !std::path::Path::new(&go).exists() {
                        assert!(t.elapsed() < Duration::from_secs(30));
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    sem.release(n).unwrap();
                    say("released");
                }
                Err(e) => say(&format!("err {e:?}")),
            }
        }
        "churn" => {
            let ctr = map_counters(&std::env::var("CTR").unwrap(), false);
            say("ready");
            std::thread::scope(|s| {
                for t in 0..2u64 {
                    let sem = &sem;
                    s.spawn(move || churn(sem, ctr, (std::process::id() as u64) << 8 | t));
                }
            });
            say("done");
        }
        other => panic!("unknown role {other}"),
    }
    drop(sem);
    std::process::exit(0);
}

fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < Duration::from_secs(10), "never: {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn wait_queued(s: &SharedSemaphore, n: u32) {
    wait_for("queued", || s.census().unwrap().queued == n);
}

/// The conservation sums with the debt term: `available + held + granted ==
/// total + debt`, and the debt is exactly what is held and granted beyond
/// the total (then nothing is available).
#[track_caller]
fn conserved(sem: &SharedSemaphore) -> Census {
    let c = sem.census().unwrap();
    assert!(c.conserved(), "permits not conserved: {c:?}");
    assert_eq!(
        c.debt,
        (c.held + c.granted).saturating_sub(c.total),
        "{c:?}"
    );
    assert!(c.queued == 0 || c.available == 0, "permits float: {c:?}");
    assert!(
        c.debt == 0 || c.available == 0,
        "debt with permits free: {c:?}"
    );
    c
}

/// The same check on an `inspect()` snapshot, which has no debt field: the
/// debt is what is held and granted beyond the total, so `available` must
/// be `total − held − granted`, or 0 when that is negative.
#[track_caller]
fn inspect_conserved(sem: &SharedSemaphore) -> volt_sem::inspect::Inspection {
    let i = sem.inspect().unwrap();
    let used = i.held() + i.granted_to_waiters();
    assert_eq!(i.available, i.total.saturating_sub(used), "{i:?}");
    i
}

struct Go(String);
impl Go {
    fn new() -> Go {
        static N: AtomicU64 = AtomicU64::new(0);
        Go(format!(
            "/tmp/volt-sem-resize-go.{}.{}",
            std::process::id(),
            N.fetch_add(1, SeqCst)
        ))
    }
    fn go(&self) {
        std::fs::write(&self.0, b"").unwrap();
    }
}
impl Drop for Go {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// A child that acquires `n` permits of `name` (which has `total` now).
fn acquirer(name: &str, total: usize, n: usize, go: &Go) -> Child {
    let env = [("N", n.to_string()), ("GO", go.0.clone())];
    let mut c = Child::spawn(name, total, "acquire", &env);
    c.expect("start", Duration::from_secs(10));
    c
}

/// Growing while requests of other processes are queued serves them at
/// once, in FIFO order, weights included: the new permits go to the head
/// first, and a head they cannot complete keeps them and stops the
/// hand-off (a later, smaller request does not overtake it).
#[test]
fn grow_serves_queued_waiters_at_once_in_fifo_order() {
    let name = Name::new("rgrow");
    let sem = SharedSemaphore::open(&name, 4, OpenOptions::new()).unwrap();
    sem.try_acquire(4).unwrap().forget();
    let go = Go::new();
    let mut a = acquirer(&name, 4, 3, &go);
    wait_queued(&sem, 1);
    let mut b = acquirer(&name, 4, 2, &go);
    wait_queued(&sem, 2);
    let mut c = acquirer(&name, 4, 1, &go);
    wait_queued(&sem, 3);
    // +4: A (3) complete, B gets 1 of 2 and stays the head; C (1) must not
    // overtake it.
    sem.set_total(8).unwrap();
    assert_eq!(sem.total_permits(), 8);
    a.expect("got", Duration::from_secs(10));
    let i = inspect_conserved(&sem);
    assert_eq!(i.total, 8);
    assert_eq!(
        i.waiters
            .iter()
            .map(|w| (w.permits, w.granted))
            .collect::<Vec<_>>(),
        vec![(2, 1), (1, 0)]
    );
    assert!(!b.saw("got") && !c.saw("got"));
    // +2: B completes, then C.
    sem.set_total(10).unwrap();
    b.expect("got", Duration::from_secs(10));
    c.expect("got", Duration::from_secs(10));
    let cen = conserved(&sem);
    assert_eq!(
        (cen.available, cen.queued, cen.held + cen.granted),
        (0, 0, 10)
    );
    go.go();
    for ch in [&mut a, &mut b, &mut c] {
        ch.expect("released", Duration::from_secs(10));
        ch.wait_exit(Duration::from_secs(10));
    }
    sem.release(4).unwrap();
    let cen = conserved(&sem);
    assert_eq!((cen.available, cen.total, cen.held), (10, 10, 0));
}

/// Shrinking below what is held revokes nothing: what comes back pays the
/// debt first, new acquires wait until enough came back; a queued request
/// above the new total fails at once with `TooManyPermits` (its partial
/// grant pays the debt), a smaller one keeps its place.
#[test]
fn shrink_below_held_leaves_a_debt_that_releases_pay_first() {
    let name = Name::new("rshrink");
    let sem = SharedSemaphore::open(&name, 6, OpenOptions::new()).unwrap();
    sem.try_acquire(5).unwrap().forget();
    let go = Go::new();
    // A wants 4: takes the 1 left, queues for 3. B wants 1: behind A.
    let mut a = acquirer(&name, 6, 4, &go);
    wait_queued(&sem, 1);
    let mut b = acquirer(&name, 6, 1, &go);
    wait_queued(&sem, 2);
    sem.set_total(3).unwrap();
    a.expect("err TooManyPermits", Duration::from_secs(10));
    a.wait_exit(Duration::from_secs(10));
    // Held 5 (ours), total 3: debt 2 (3 cut, 1 paid by A's partial grant).
    let c = conserved(&sem);
    assert_eq!((c.total, c.held, c.debt, c.queued), (3, 5, 2, 1), "{c:?}");
    let i = inspect_conserved(&sem);
    assert_eq!((i.total, i.held(), i.available), (3, 5, 0));
    assert_eq!(i.waiters.len(), 1);
    assert_eq!(held_of(&sem), 5, "nothing revoked");
    // Two releases pay the debt; B waits, and so does a new try.
    sem.release(1).unwrap();
    assert_eq!(conserved(&sem).debt, 1);
    assert_eq!(
        sem.try_acquire(1).map(|p| p.forget()),
        Err(Error::NoPermits)
    );
    sem.release(1).unwrap();
    let c = conserved(&sem);
    assert_eq!((c.debt, c.queued), (0, 1));
    std::thread::sleep(Duration::from_millis(50));
    assert!(!b.saw("got"), "served from the debt");
    // The next one serves B.
    sem.release(1).unwrap();
    b.expect("got", Duration::from_secs(10));
    let c = conserved(&sem);
    assert_eq!((c.held + c.granted, c.available), (3, 0));
    go.go();
    b.expect("released", Duration::from_secs(10));
    b.wait_exit(Duration::from_secs(10));
    sem.release(2).unwrap();
    let c = conserved(&sem);
    assert_eq!((c.available, c.total, c.debt), (3, 3, 0));
    // Out-of-range totals change nothing.
    assert_eq!(sem.set_total(0), Err(Error::InvalidPermits));
    assert_eq!(
        sem.set_total(volt_sem_shm::MAX_PERMITS + 1),
        Err(Error::InvalidPermits)
    );
    assert_eq!(sem.total_permits(), 3);
}

fn held_of(sem: &SharedSemaphore) -> usize {
    sem.held_permits().unwrap()
}

/// Polls `f` (woken by the doorbell thread, which this test does not wait
/// on) until it is ready, for at most 10 s.
fn ready<F: std::future::Future>(mut f: std::pin::Pin<&mut F>, what: &str) -> F::Output {
    let waker = futures::task::noop_waker();
    let mut cx = std::task::Context::from_waker(&waker);
    let t = Instant::now();
    loop {
        if let std::task::Poll::Ready(r) = f.as_mut().poll(&mut cx) {
            return r;
        }
        assert!(t.elapsed() < Duration::from_secs(10), "{what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// An async acquire of this process failed by a shrink reports
/// `TooManyPermits` too (the raw waiter's outcome is mapped back).
#[test]
fn shrink_fails_an_async_waiter_above_the_new_total() {
    use std::future::Future;
    use std::task::Context;
    let name = Name::new("rasync");
    let sem = SharedSemaphore::open(&name, 4, OpenOptions::new()).unwrap();
    sem.try_acquire(4).unwrap().forget();
    let waker = futures::task::noop_waker();
    let mut cx = Context::from_waker(&waker);
    let mut big = Box::pin(sem.acquire(3));
    let mut small = Box::pin(sem.acquire(1));
    assert!(big.as_mut().poll(&mut cx).is_pending());
    assert!(small.as_mut().poll(&mut cx).is_pending());
    sem.set_total(2).unwrap();
    let r = ready(big.as_mut(), "never failed");
    assert_eq!(r.map(|p| p.forget()), Err(Error::TooManyPermits));
    assert!(small.as_mut().poll(&mut cx).is_pending());
    // Debt 2: two releases pay it, the third serves the small one.
    sem.release(3).unwrap();
    let r = ready(small.as_mut(), "never served");
    r.unwrap().forget();
    sem.release(2).unwrap();
    let c = conserved(&sem);
    assert_eq!((c.available, c.total), (2, 2));
}

/// A request failed by a shrink stays failed with `TooManyPermits` when the
/// total grows back before its owner looks: the outcome is the waiter's,
/// not inferred from the total its owner reads later.
#[test]
fn a_shrink_failure_survives_the_total_growing_back() {
    use std::future::Future;
    use std::task::Context;
    let name = Name::new("rback");
    let sem = SharedSemaphore::open(&name, 4, OpenOptions::new()).unwrap();
    sem.try_acquire(4).unwrap().forget();
    let waker = futures::task::noop_waker();
    let mut cx = Context::from_waker(&waker);
    let mut big = Box::pin(sem.acquire(3));
    assert!(big.as_mut().poll(&mut cx).is_pending());
    sem.set_total(2).unwrap(); // fails `big` (3 > 2)
    sem.set_total(4).unwrap(); // and back: 3 fits again
    let r = ready(big.as_mut(), "never failed");
    assert_eq!(r.map(|p| p.forget()), Err(Error::TooManyPermits));
    assert!(!sem.is_closed());
    sem.release(4).unwrap();
    let c = conserved(&sem);
    assert_eq!((c.available, c.total), (4, 4));
}

/// Threads queue raw waiters for 1 to 4 permits and finish them after a
/// random short delay (cancelling or collecting), racing the doorbell
/// thread, while another thread flips the total between 2 and 4. Every
/// request ends granted, cancelled, or closed with `failed_above_total` (and
/// then it asked for more than 2): never closed otherwise, on a semaphore
/// nobody closes. Permits are conserved throughout.
#[test]
fn shrinks_racing_cancels_fail_only_requests_above_the_total() {
    use std::ffi::c_void;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    use volt_sem_shm::{Finish, RawAcquire, RawSemaphore, ShmWaiter};

    unsafe extern "C" fn noop(_: *mut c_void) {}

    let name = Name::new("rrace");
    let sem = SharedSemaphore::open(&name, 4, OpenOptions::new()).unwrap();
    // First without the race, the owner finishing right after the shrink:
    // mostly before the doorbell thread claims the request (the owner's
    // cancel finds the slot failed), sometimes after.
    let held = sem.try_acquire(4).unwrap();
    for _ in 0..20 {
        let w = Box::pin(ShmWaiter::new());
        // SAFETY: `w` lives until after finish_raw; no context.
        let r = unsafe { sem.acquire_raw(w.as_ref(), 3, noop, std::ptr::null_mut()) };
        assert_eq!(r, Ok(RawAcquire::Pending));
        sem.set_total(2).unwrap();
        // SAFETY: queued on `sem` above.
        assert_eq!(unsafe { sem.finish_raw(w.as_ref()) }, Finish::Closed);
        assert!(sem.failed_above_total(&w));
        sem.set_total(4).unwrap();
    }
    drop(held);
    let done = Arc::new(AtomicBool::new(false));
    let flipper = {
        let (sem, done) = (sem.clone(), done.clone());
        std::thread::spawn(move || {
            let mut flips = 0u64;
            while !done.load(SeqCst) {
                sem.set_total(if flips % 2 == 0 { 2 } else { 4 }).unwrap();
                flips += 1;
                conserved(&sem);
                std::thread::sleep(Duration::from_micros(100));
            }
            sem.set_total(4).unwrap();
            flips
        })
    };
    let workers: Vec<_> = (0..4u64)
        .map(|t| {
            let sem = sem.clone();
            std::thread::spawn(move || {
                let mut rng = t * 7919 + 1;
                let (mut granted, mut cancelled, mut failed) = (0u32, 0u32, 0u32);
                for i in 0..400usize {
                    let n = 1 + (i + t as usize) % 4;
                    let w = Box::pin(ShmWaiter::new());
                    // SAFETY: `w` lives until after finish_raw; no context.
                    let r = unsafe { sem.acquire_raw(w.as_ref(), n, noop, std::ptr::null_mut()) };
                    match r {
                        Ok(RawAcquire::Ready) => {
                            std::thread::sleep(Duration::from_micros(30));
                            sem.release(n).unwrap();
                            continue;
                        }
                        Ok(RawAcquire::Pending) => {}
                        // Above the total at the time of the call.
                        Err(Error::TooManyPermits) => continue,
                        Err(e) => panic!("acquire_raw({n}): {e:?}"),
                    }
                    support::yield_randomly(&mut rng, 64);
                    // SAFETY: queued on `sem` above.
                    match unsafe { sem.finish_raw(w.as_ref()) } {
                        Finish::Granted => {
                            granted += 1;
                            std::thread::sleep(Duration::from_micros(30));
                            sem.release(n).unwrap();
                        }
                        Finish::Cancelled { .. } => cancelled += 1,
                        Finish::Closed => {
                            assert!(sem.failed_above_total(&w), "closed, not failed: n = {n}");
                            assert!(n > 2, "a request for {n} failed");
                            failed += 1;
                        }
                        other => panic!("{other:?}"),
                    }
                }
                (granted, cancelled, failed)
            })
        })
        .collect();
    let mut totals = (0, 0, 0);
    for w in workers {
        let (g, c, f) = w.join().unwrap();
        totals = (totals.0 + g, totals.1 + c, totals.2 + f);
    }
    done.store(true, SeqCst);
    let flips = flipper.join().unwrap();
    // Requests did queue and end each way the race allows (how many of
    // each depends on the scheduling: only that some queued is asserted).
    eprintln!("{flips} flips; granted, cancelled, failed after queueing: {totals:?}");
    assert!(
        flips > 1 && totals.0 + totals.1 + totals.2 > 0,
        "{flips} flips, {totals:?}"
    );
    let c = conserved(&sem);
    assert_eq!(
        (c.available, c.total, c.debt),
        (4, 4, 0),
        "{c:?} after {totals:?}"
    );
}

/// `open` of an existing name with another total: `TotalMismatch` by
/// default (nothing changes), the total changed with `resize(true)`, seen
/// by every process.
#[test]
fn open_with_another_total_needs_resize() {
    let name = Name::new("ropen");
    let sem = SharedSemaphore::open(&name, 8, OpenOptions::new()).unwrap();
    let mut c = Child::spawn(&name, 10, "open", &[]);
    c.expect("err TotalMismatch { existing: 8 }", Duration::from_secs(10));
    c.wait_exit(Duration::from_secs(10));
    assert_eq!(sem.total_permits(), 8);
    let mut c = Child::spawn(&name, 10, "open", &[("RESIZE", "1".into())]);
    c.expect("total 10", Duration::from_secs(10));
    c.wait_exit(Duration::from_secs(10));
    assert_eq!(sem.total_permits(), 10);
    assert_eq!(conserved(&sem).available, 10);
    // In this process too (its handles share one record).
    assert_eq!(
        SharedSemaphore::open(&name, 6, OpenOptions::new()).map(|_| ()),
        Err(Error::TotalMismatch { existing: 10 })
    );
    let again = SharedSemaphore::open(&name, 6, OpenOptions::new().resize(true)).unwrap();
    assert_eq!((again.total_permits(), sem.total_permits()), (6, 6));
    assert_eq!(conserved(&sem).available, 6);
}

/// `reopen` undoes `close`: acquires work again; a waiter that the close
/// failed stays failed.
#[test]
fn reopen_after_close() {
    let name = Name::new("rreopen");
    let sem = SharedSemaphore::open(&name, 2, OpenOptions::new()).unwrap();
    sem.try_acquire(2).unwrap().forget();
    let go = Go::new();
    let mut a = acquirer(&name, 2, 1, &go);
    wait_queued(&sem, 1);
    sem.close().unwrap();
    a.expect("err Closed", Duration::from_secs(10));
    a.wait_exit(Duration::from_secs(10));
    assert_eq!(sem.try_acquire(1).map(|p| p.forget()), Err(Error::Closed));
    sem.reopen().unwrap();
    assert!(!sem.is_closed());
    assert!(a.seen.iter().all(|l| l != "got"), "{:?}", a.seen);
    sem.release(1).unwrap();
    sem.try_acquire(1).unwrap().forget();
    let mut b = acquirer(&name, 2, 1, &go);
    wait_queued(&sem, 1);
    sem.release(1).unwrap();
    b.expect("got", Duration::from_secs(10));
    go.go();
    b.wait_exit(Duration::from_secs(10));
    sem.reopen().unwrap(); // not closed: a no-op
    sem.release(1).unwrap();
    let c = conserved(&sem);
    assert_eq!((c.available, c.total), (2, 2));
}

// ------------------------------------------------------------------ under load

/// Shared between the test and its churning children, in a file of its own.
#[repr(C)]
struct Counters {
    /// Permits in use right now, as the workers count them (raised after
    /// an acquire returned, lowered before the release).
    current: AtomicI64,
    /// `generation << 32 | allowed`: the limit in force, as the resizer
    /// publishes it (raised before a grow, lowered only once the shrink's
    /// debt is paid), with how many times it changed.
    allowed: AtomicU64,
    stop: AtomicU64,
    ops: AtomicU64,
    checked: AtomicU64,
    too_many: AtomicU64,
    violations: AtomicU64,
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

/// One worker: weighted acquires (1 to 3 permits; 3 is above the total
/// while it is 2) by every kind of acquire, each checked against the limit
/// published around it.
fn churn(sem: &SharedSemaphore, ctr: &Counters, seed: u64) {
    let mut rng = Rng(seed | 1);
    while ctr.stop.load(SeqCst) == 0 {
        let k = 1 + rng.below(3);
        let got = match rng.below(3) {
            // A long deadline rather than none: a lost permit fails the
            // test instead of hanging it.
            0 => match sem.acquire_timeout(k as usize, Duration::from_secs(10)) {
                Err(Error::TimedOut) => panic!("acquire({k}) starved for 10 s"),
                r => r.map(|p| p.forget()),
            },
            1 => {
                let d = Duration::from_micros(rng.below(3000));
                match sem.acquire_timeout(k as usize, d) {
                    Err(Error::TimedOut) => continue,
                    r => r.map(|p| p.forget()),
                }
            }
            _ => match sem.try_acquire(k as usize) {
                Err(Error::NoPermits) => continue,
                r => r.map(|p| p.forget()),
            },
        };
        match got {
            Ok(()) => {}
            Err(Error::TooManyPermits) => {
                ctr.too_many.fetch_add(1, SeqCst);
                continue;
            }
            Err(e) => panic!("acquire({k}): {e}"),
        }
        // The limit in force at the moment `current` includes our permits
        // is one of the two values read around the raise, if it changed at
        // most once meanwhile (else this round is not checked).
        let w1 = ctr.allowed.load(SeqCst);
        let now = ctr.current.fetch_add(k as i64, SeqCst) + k as i64;
        let w2 = ctr.allowed.load(SeqCst);
        if (w2 >> 32) - (w1 >> 32) <= 1 {
            let allowed = (w1 & 0xffff_ffff).max(w2 & 0xffff_ffff) as i64;
            if now > allowed {
                ctr.violations.fetch_add(1, SeqCst);
                eprintln!("limit exceeded: {now} in use, allowed {allowed}");
            }
            ctr.checked.fetch_add(1, SeqCst);
        }
        if rng.below(2) == 0 {
            std::thread::sleep(Duration::from_micros(rng.below(300)));
        }
        ctr.current.fetch_sub(k as i64, SeqCst);
        sem.release(k as usize).unwrap();
        ctr.ops.fetch_add(1, SeqCst);
    }
}

/// Two processes of two threads and two threads of the test acquire and
/// release weighted permits while the test resizes 4 -> 8 -> 2 -> 5 over
/// and over: at every snapshot the sums are conserved (with the debt term),
/// the workers never count more permits in use than the limit (the total,
/// or the total before a shrink until its debt is paid), and at the end,
/// everything released, `available == total`.
#[test]
fn resize_under_load() {
    let name = Name::new("rload");
    let ctr_path = format!("/dev/shm/volt-sem-test-rctr.{}", std::process::id());
    struct Rm(String);
    impl Drop for Rm {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
    let _rm = Rm(ctr_path.clone());
    let ctr = map_counters(&ctr_path, true);
    let sem = SharedSemaphore::open(&name, 4, OpenOptions::new()).unwrap();
    ctr.allowed.store(4, SeqCst);
    let mut children: Vec<Child> = (0..2)
        .map(|_| {
            let mut c = Child::spawn(&name, 4, "churn", &[("CTR", ctr_path.clone())]);
            c.expect("ready", Duration::from_secs(10));
            c
        })
        .collect();
    let mut gen = 0u64;
    let mut publish = |allowed: u64| {
        gen += 1;
        ctr.allowed.store(gen << 32 | allowed, SeqCst);
    };
    let (mut snapshots, mut debts) = (0u32, 0u32);
    // A failed check below must stop the workers (here and in the
    // children), not leave them running for ever.
    struct StopOnDrop(&'static Counters);
    impl Drop for StopOnDrop {
        fn drop(&mut self) {
            self.0.stop.store(1, SeqCst);
        }
    }
    std::thread::scope(|s| {
        for t in 0..2u64 {
            let sem = &sem;
            s.spawn(move || churn(sem, ctr, 0x5eed_0000 | t));
        }
        let _stop = StopOnDrop(ctr);
        let mut total = 4u64;
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(3) {
            for next in [8u64, 2, 5, 4] {
                if next > total {
                    publish(next);
                    sem.set_total(next as usize).unwrap();
                } else {
                    sem.set_total(next as usize).unwrap();
                    // The old limit holds until the debt is paid.
                    let t = Instant::now();
                    loop {
                        let c = conserved(&sem);
                        snapshots += 1;
                        if c.debt == 0 {
                            break;
                        }
                        debts += 1;
                        assert!(t.elapsed() < Duration::from_secs(10), "debt never paid");
                        std::thread::sleep(Duration::from_micros(200));
                    }
                    publish(next);
                }
                total = next;
                inspect_conserved(&sem);
                snapshots += 1;
                std::thread::sleep(Duration::from_millis(2));
            }
        }
    });
    for c in &mut children {
        c.expect("done", Duration::from_secs(20));
        c.wait_exit(Duration::from_secs(20));
    }
    let c = conserved(&sem);
    let (ops, checked, too_many) = (
        ctr.ops.load(SeqCst),
        ctr.checked.load(SeqCst),
        ctr.too_many.load(SeqCst),
    );
    eprintln!(
        "resize under load: {ops} grants used ({checked} checked against the limit), \
         {too_many} TooManyPermits, {snapshots} snapshots ({debts} with a debt), {c:?}"
    );
    assert_eq!(ctr.violations.load(SeqCst), 0, "the limit was exceeded");
    assert_eq!(
        (c.available, c.total, c.held, c.queued, c.debt),
        (4, 4, 0, 0, 0)
    );
    assert!(
        ops > 100 && checked > 100,
        "the load did not run: {ops} ops"
    );
    assert!(
        debts > 0,
        "no shrink ever left a debt: the test did not test it"
    );
}

/// `failed_above_total` answers for the waiter's *last* request. A waiter
/// whose request `set_total` failed, reused for a request granted at once
/// (`RawAcquire::Ready`, never queued) or refused at once (`Err`), must not
/// keep saying "failed above the total": that request ended otherwise.
#[test]
fn failed_above_total_is_cleared_by_a_request_that_is_never_queued() {
    use volt_sem_shm::{Finish, RawAcquire, RawSemaphore, ShmWaiter};

    unsafe extern "C" fn noop(_: *mut std::ffi::c_void) {}

    let name = Name::new("faclear");
    let sem = SharedSemaphore::open(&name, 4, OpenOptions::new()).unwrap();
    let held = sem.try_acquire(4).unwrap();
    let w = Box::pin(ShmWaiter::new());
    // SAFETY: `w` lives until the end of the test, finished before reuse.
    let r = unsafe { sem.acquire_raw(w.as_ref(), 3, noop, std::ptr::null_mut()) };
    assert_eq!(r, Ok(RawAcquire::Pending));
    sem.set_total(2).unwrap();
    // SAFETY: queued on `sem` above.
    assert_eq!(unsafe { sem.finish_raw(w.as_ref()) }, Finish::Closed);
    assert!(sem.failed_above_total(&w));
    sem.set_total(4).unwrap();
    drop(held);
    assert_eq!(conserved(&sem).available, 4);

    // Reused: granted at once.
    // SAFETY: `w` is idle (finished above).
    let r = unsafe { sem.acquire_raw(w.as_ref(), 1, noop, std::ptr::null_mut()) };
    assert_eq!(r, Ok(RawAcquire::Ready));
    assert!(
        !sem.failed_above_total(&w),
        "an immediate grant still reads as failed above the total"
    );
    let c = conserved(&sem);
    assert_eq!((c.available, c.held), (3, 1));
    sem.release(1).unwrap();

    // Failed again, then reused for a request refused at once (closed).
    let held = sem.try_acquire(4).unwrap();
    // SAFETY: idle again (granted at once).
    let r = unsafe { sem.acquire_raw(w.as_ref(), 3, noop, std::ptr::null_mut()) };
    assert_eq!(r, Ok(RawAcquire::Pending));
    sem.set_total(2).unwrap();
    // SAFETY: queued on `sem` above.
    assert_eq!(unsafe { sem.finish_raw(w.as_ref()) }, Finish::Closed);
    assert!(sem.failed_above_total(&w));
    sem.set_total(4).unwrap();
    sem.close().unwrap();
    // SAFETY: idle (finished above).
    let r = unsafe { sem.acquire_raw(w.as_ref(), 1, noop, std::ptr::null_mut()) };
    assert_eq!(r, Err(Error::Closed));
    assert!(
        !sem.failed_above_total(&w),
        "a refused request reads as failed"
    );
    drop(held);
    sem.reopen().unwrap();
    assert_eq!(conserved(&sem).available, 4);
}
