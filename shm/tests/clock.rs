//! The timed waits for the segment lock (`acquire_timeout`, `try_acquire`'s
//! 10 ms, the `*_timeout` calls) run on `CLOCK_MONOTONIC` where the C
//! library has `pthread_mutex_clocklock` (glibc 2.30 and later, looked up at
//! run time), else on `CLOCK_REALTIME` with `pthread_mutex_timedlock`.
//!
//! What these tests can prove without stepping the wall clock (which a CI
//! job must not do): which function the timed waits go through (this binary
//! interposes `pthread_mutex_timedlock` and counts its calls), which clock
//! is chosen on this C library, and that both paths still time out, not
//! before their deadline, against a lock held by a stopped process. What
//! they cannot prove: the behaviour during an actual wall-clock step (that
//! rests on the kernel's `FUTEX_CLOCK_REALTIME`-less futex wait, which is
//! what glibc's clocklock does with `CLOCK_MONOTONIC`).
// glibc only: the clock chosen depends on glibc's version (musl has no
// `gnu_get_libc_version`, and its timed locks are not what these tests pin).
#![cfg(all(target_os = "linux", target_env = "gnu"))]

mod support;

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use support::Name;
use volt_sem_shm::{hooks, Error, OpenOptions, SharedSemaphore};

/// The tests fork: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

static TIMEDLOCK_CALLS: AtomicUsize = AtomicUsize::new(0);

/// Interposes glibc's `pthread_mutex_timedlock` in this test binary (the
/// shm crate, linked into it, calls this definition): counts the calls and
/// forwards them to the C library's.
///
/// # Safety
///
/// As `pthread_mutex_timedlock`.
#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_timedlock(
    m: *mut libc::pthread_mutex_t,
    at: *const libc::timespec,
) -> libc::c_int {
    type Real =
        unsafe extern "C" fn(*mut libc::pthread_mutex_t, *const libc::timespec) -> libc::c_int;
    TIMEDLOCK_CALLS.fetch_add(1, SeqCst);
    // SAFETY: dlsym only reads the NUL-terminated name.
    let real = unsafe { libc::dlsym(libc::RTLD_NEXT, c"pthread_mutex_timedlock".as_ptr()) };
    if real.is_null() {
        return libc::EINVAL;
    }
    // SAFETY: the C library's pthread_mutex_timedlock, of that type; the
    // caller's arguments forwarded as they are.
    unsafe { core::mem::transmute::<*mut libc::c_void, Real>(real)(m, at) }
}

/// glibc's version, `(major, minor)`.
fn glibc() -> (u32, u32) {
    // SAFETY: returns a static NUL-terminated string.
    let v = unsafe { std::ffi::CStr::from_ptr(libc::gnu_get_libc_version()) };
    let mut it = v
        .to_str()
        .unwrap()
        .split('.')
        .map(|x| x.parse().unwrap_or(0));
    (it.next().unwrap_or(0), it.next().unwrap_or(0))
}

/// Runs `check` while a forked child, attached with a record of its own,
/// is stopped inside the segment lock (half-way through a release of the
/// only permit), then kills it and checks the repair: the permit it had in
/// transit is back, permits are conserved.
fn with_the_lock_held_by_a_stopped_child(check: impl FnOnce(&SharedSemaphore)) {
    let name = Name::new("clock");
    let sem = SharedSemaphore::open(&name, 1, OpenOptions::new()).unwrap();
    // SAFETY: the child opens the name, takes the permit and stops inside
    // the lock (then is killed); it never returns into the test harness.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        let code = match SharedSemaphore::open(&name, 1, OpenOptions::new().attach_only()) {
            Ok(s) => match s.try_acquire(1) {
                Ok(p) => {
                    p.forget();
                    hooks::stop_in_next_release();
                    let _ = s.release(1); // stops inside the lock
                    3
                }
                Err(_) => 2,
            },
            Err(_) => 1,
        };
        // SAFETY: ends the child without running the parent's destructors.
        unsafe { libc::_exit(code) };
    }
    /// Kills and reaps the child when dropped, also when a check panics:
    /// the handle's drop (a detach, which waits for the lock) would
    /// otherwise wait for the stopped child for ever.
    struct Kill(libc::pid_t);
    impl Drop for Kill {
        fn drop(&mut self) {
            let mut status = 0;
            // SAFETY: our child, not reaped yet; then reaped.
            unsafe {
                libc::kill(self.0, libc::SIGKILL);
                libc::waitpid(self.0, &mut status, 0);
            }
        }
    }
    let kill = Kill(pid);
    let mut status = 0;
    // SAFETY: our child; WUNTRACED returns once it is stopped.
    let r = unsafe { libc::waitpid(pid, &mut status, libc::WUNTRACED) };
    assert_eq!(r, pid);
    assert!(
        libc::WIFSTOPPED(status),
        "the child did not stop inside the lock: {status:#x}"
    );
    check(&sem);
    drop(kill);
    let c = support::assert_conserved(&sem);
    assert!(c.repairs >= 1, "{c:?}");
    assert_eq!((c.live, c.available, c.held), (1, 1, 0), "{c:?}");
}

/// Waits for the lock past a stopped holder: `acquire_timeout` and
/// `try_acquire` give up, and not before their deadline.
fn times_out(sem: &SharedSemaphore) {
    let timeout = Duration::from_millis(150);
    let t = Instant::now();
    let r = sem.acquire_timeout(1, timeout).map(|p| p.forget());
    let waited = t.elapsed();
    assert_eq!(r, Err(Error::TimedOut));
    assert!(waited >= timeout, "gave up before its deadline: {waited:?}");
    let t = Instant::now();
    assert_eq!(
        sem.try_acquire(1).map(|p| p.forget()),
        Err(Error::NoPermits)
    );
    let waited = t.elapsed();
    assert!(
        waited >= Duration::from_millis(10),
        "try_acquire gave up on the lock before its 10 ms: {waited:?}"
    );
}

#[test]
fn timed_lock_waits_run_on_the_monotonic_clock_where_glibc_has_clocklock() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let has_clocklock = glibc() >= (2, 30);
    assert_eq!(
        hooks::timed_lock_clock(),
        if has_clocklock {
            "monotonic"
        } else {
            "realtime"
        },
        "glibc {:?}",
        glibc()
    );
    with_the_lock_held_by_a_stopped_child(|sem| {
        let before = TIMEDLOCK_CALLS.load(SeqCst);
        times_out(sem);
        let calls = TIMEDLOCK_CALLS.load(SeqCst) - before;
        if has_clocklock {
            assert_eq!(
                calls,
                0,
                "timed waits went through pthread_mutex_timedlock (CLOCK_REALTIME) \
                 on glibc {:?}, which has pthread_mutex_clocklock",
                glibc()
            );
        } else {
            assert!(calls >= 2, "{calls}");
        }
    });
}

#[test]
fn the_realtime_fallback_still_times_out() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    hooks::force_realtime_timed_lock(true);
    struct Restore;
    impl Drop for Restore {
        fn drop(&mut self) {
            hooks::force_realtime_timed_lock(false);
        }
    }
    let _restore = Restore;
    assert_eq!(hooks::timed_lock_clock(), "realtime");
    with_the_lock_held_by_a_stopped_child(|sem| {
        let before = TIMEDLOCK_CALLS.load(SeqCst);
        times_out(sem);
        let calls = TIMEDLOCK_CALLS.load(SeqCst) - before;
        assert!(calls >= 2, "the fallback was not used: {calls} calls");
    });
}
