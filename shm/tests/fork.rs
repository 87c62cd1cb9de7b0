//! A handle opened before fork() fails in the child instead of acting on the
//! parent's record; the child opens the name again and gets its own.
//! (Its own test binary: fork() in a process with few threads.)
#![cfg(target_os = "linux")]

mod support;

use support::{assert_conserved, Name};
use volt_sem_shm::{Error, OpenOptions, Permit, SharedSemaphore};

/// fork() only while no other test of this binary runs (a lock held by
/// another thread at fork time would stay held in the child).
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Waits for our forked child `pid`, which must exit (not die of a
/// signal); its exit code.
fn exit_code(pid: libc::pid_t) -> i32 {
    let mut status = 0;
    // SAFETY: our child.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    assert!(libc::WIFEXITED(status), "child died: {status}");
    libc::WEXITSTATUS(status)
}

#[test]
fn handles_do_not_cross_fork() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let name = Name::new("fork");
    let sem = SharedSemaphore::open(&name, 2, OpenOptions::new()).unwrap();
    let held = sem.try_acquire(1).unwrap();
    let parent_record = sem.process_record();
    // SAFETY: the child only runs this crate's code and exits with _exit.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        // The parent's guard, copied by fork: dropping it here must not
        // release the parent's permit (the release is refused: Forked).
        drop(held);
        let code = (|| {
            if sem.try_acquire(1).err() != Some(Error::Forked)
                || sem.release(1) != Err(Error::Forked)
            {
                return 2;
            }
            // Zero permits too: every call on an inherited handle.
            if sem.try_acquire(0).err() != Some(Error::Forked)
                || sem.release(0) != Err(Error::Forked)
                || sem.acquire_blocking(0).err() != Some(Error::Forked)
            {
                return 6;
            }
            drop(sem); // must not detach the parent's record
            let own = match SharedSemaphore::open(&name, 2, OpenOptions::new().attach_only()) {
                Ok(s) => s,
                Err(_) => return 3,
            };
            if own.process_record() == parent_record {
                return 4;
            }
            match own.try_acquire(1).map(Permit::release) {
                Ok(Ok(())) => {}
                Ok(Err(_)) => return 5,
                Err(_) => return 4,
            }
            0
        })();
        // SAFETY: ends the child without running the parent's destructors.
        unsafe { libc::_exit(code) };
    }
    assert_eq!(exit_code(pid), 0, "child check failed");
    // The parent still holds its permit, and can release it.
    assert_eq!(sem.held_permits(), Ok(1));
    let c = assert_conserved(&sem);
    assert_eq!((c.held, c.available), (1, 1));
    held.release().unwrap();
    assert_eq!(sem.available_permits(), 2);
}

#[test]
fn permission_denied_is_typed_and_changes_nothing() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let name = Name::new("perm");
    let sem = SharedSemaphore::open(&name, 2, OpenOptions::new()).unwrap(); // mode 0600
                                                                            // SAFETY: the child only drops privileges, opens, and exits with _exit.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        // SAFETY: plain syscalls; uid/gid 65534 is "nobody" on Linux.
        let code = unsafe {
            if libc::geteuid() == 0 && (libc::setgid(65534) != 0 || libc::setuid(65534) != 0) {
                libc::_exit(3)
            }
            match SharedSemaphore::open(&name, 2, OpenOptions::new()) {
                Err(Error::PermissionDenied) => 0,
                Err(_) => 2,
                Ok(_) => 1,
            }
        };
        // SAFETY: ends the child without running the parent's destructors.
        unsafe { libc::_exit(code) };
    }
    assert_eq!(exit_code(pid), 0, "another user could open a 0600 segment");
    let c = assert_conserved(&sem);
    assert_eq!((c.available, c.live), (2, 1));
}

/// A mode without the owner's write (or read) permission: the creator still
/// creates and uses the semaphore (its `open` takes the init lock through a
/// second open of the file, made before the mode is set), and the mode is
/// the one asked for. In a child that is not root (root passes every
/// permission check), hence here.
#[test]
fn a_mode_the_owner_cannot_write_still_lets_the_creator_open() {
    use std::os::unix::fs::PermissionsExt;
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let name = Name::new("modero");
    // SAFETY: the child only drops privileges, opens, and exits with _exit.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        let code = (|| {
            // SAFETY: plain syscalls; uid/gid 65534 is "nobody" on Linux.
            unsafe {
                if libc::geteuid() == 0 && (libc::setgid(65534) != 0 || libc::setuid(65534) != 0) {
                    return 3;
                }
            }
            for asked in [0o400, 0o000, 0o044] {
                let s = match SharedSemaphore::open(&name, 2, OpenOptions::new().mode(asked)) {
                    Ok(s) => s,
                    Err(_) => return 1,
                };
                let mode = std::fs::metadata(name.path()).map(|m| m.permissions().mode() & 0o777);
                if mode.ok() != Some(asked) {
                    return 2;
                }
                if s.try_acquire(2).map(Permit::release).ok() != Some(Ok(())) {
                    return 4;
                }
                drop(s);
                let _ = volt_sem_shm::unlink(&name);
            }
            0
        })();
        // SAFETY: ends the child without running the parent's destructors.
        unsafe { libc::_exit(code) };
    }
    assert_eq!(
        exit_code(pid),
        0,
        "1: the creator's open failed, 2: another mode, 3: setuid, 4: acquire"
    );
}

/// fork() while another thread is inside `open` (here: waiting for a name's
/// init lock, which this test holds): the child's own `open` must not wait
/// for that thread, which does not exist in the child (crate docs, *fork,
/// exec*: the child calls `open` again).
#[test]
fn open_in_a_child_forked_during_another_threads_open_does_not_hang() {
    use std::time::Duration;
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let busy = Name::new("forkopen-busy");
    let free = Name::new("forkopen-free");
    drop(SharedSemaphore::open(&busy, 1, OpenOptions::new()).unwrap());
    // Hold the init lock (byte 128, an OFD lock) through a file description
    // of our own: an `open` of the name waits for it (at most 5 s).
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(busy.path())
        .unwrap();
    // SAFETY: all-zero is a valid flock; the fields are set below.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = libc::F_WRLCK as libc::c_short;
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    fl.l_start = 128;
    fl.l_len = 1;
    // SAFETY: valid fd and flock.
    let r = unsafe {
        libc::fcntl(
            std::os::fd::AsRawFd::as_raw_fd(&file),
            libc::F_OFD_SETLK,
            &fl,
        )
    };
    assert_eq!(r, 0);
    let opener = {
        let name = busy.0.clone();
        std::thread::spawn(move || SharedSemaphore::open(&name, 1, OpenOptions::new()).map(drop))
    };
    // Let the opener get into `open` (if it has not yet, the test passes
    // without testing anything; it never fails because of this sleep).
    std::thread::sleep(Duration::from_millis(100));
    // SAFETY: the child only runs this crate's `open` and exits with _exit.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        let code = match SharedSemaphore::open(&free, 1, OpenOptions::new()) {
            Ok(_) => 0,
            Err(_) => 2,
        };
        // SAFETY: ends the child without running the parent's destructors.
        unsafe { libc::_exit(code) };
    }
    let (exited, status) = reap_within(pid, Duration::from_secs(3));
    drop(file);
    let r = opener.join().unwrap();
    assert!(matches!(r, Ok(()) | Err(Error::TimedOut)), "{r:?}");
    assert!(
        exited,
        "the child's open hung (another thread's open at fork time)"
    );
    assert!(libc::WIFEXITED(status), "child died: {status}");
    assert_eq!(libc::WEXITSTATUS(status), 0, "the child's open failed");
}

static IN_CALLBACK: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
static LEAVE_CALLBACK: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// A wake callback that stays inside until the test lets it go.
unsafe extern "C" fn slow_callback(_: *mut core::ffi::c_void) {
    use std::sync::atomic::Ordering::SeqCst;
    IN_CALLBACK.store(true, SeqCst);
    while !LEAVE_CALLBACK.load(SeqCst) {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// fork() while the parent's doorbell thread runs a raw waiter's callback:
/// in the child, the waiter's copy says a callback is running, on a thread
/// the child does not have. Finishing it there (a binding's future dropped
/// in the child) must return, not wait for that callback for ever; the
/// parent's request is untouched.
#[test]
fn finish_raw_in_a_child_forked_during_a_callback_does_not_hang() {
    use std::sync::atomic::Ordering::SeqCst;
    use std::time::{Duration, Instant};
    use volt_sem_shm::{Finish, RawAcquire, RawSemaphore, ShmWaiter};
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let name = Name::new("forkcb");
    let sem = SharedSemaphore::open(&name, 2, OpenOptions::new()).unwrap();
    sem.try_acquire(2).unwrap().forget();
    let w = Box::pin(ShmWaiter::new());
    // SAFETY: a fresh, pinned waiter, finished below before it is dropped;
    // the callback reads no context.
    let r = unsafe { sem.acquire_raw(w.as_ref(), 1, slow_callback, std::ptr::null_mut()) };
    assert_eq!(r, Ok(RawAcquire::Pending));
    sem.release(1).unwrap(); // granted: the doorbell thread calls back
    let t = Instant::now();
    while !IN_CALLBACK.load(SeqCst) {
        assert!(t.elapsed() < Duration::from_secs(10), "no callback");
        std::thread::sleep(Duration::from_millis(1));
    }
    // SAFETY: the child only finishes its copy of the waiter and exits with
    // _exit.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        // SAFETY: the child's copy of a waiter queued on this handle.
        let f = unsafe { sem.finish_raw(w.as_ref()) };
        let code = if f == Finish::Granted { 2 } else { 0 };
        // SAFETY: ends the child without running the parent's destructors.
        unsafe { libc::_exit(code) };
    }
    let (exited, status) = reap_within(pid, Duration::from_secs(3));
    LEAVE_CALLBACK.store(true, SeqCst);
    // SAFETY: queued on `sem`, pinned.
    assert_eq!(unsafe { sem.finish_raw(w.as_ref()) }, Finish::Granted);
    sem.release(2).unwrap();
    assert_eq!(assert_conserved(&sem).available, 2);
    assert!(
        exited,
        "finish_raw in the child waited for the parent's callback"
    );
    assert!(libc::WIFEXITED(status), "child died: {status}");
    assert_eq!(
        libc::WEXITSTATUS(status),
        0,
        "the child was told it was granted the parent's permit"
    );
}

/// Waits up to `limit` for child `pid` to exit, else kills it (a hang):
/// whether it exited by itself, and its wait status.
fn reap_within(pid: libc::pid_t, limit: std::time::Duration) -> (bool, libc::c_int) {
    let t = std::time::Instant::now();
    let mut status = 0;
    loop {
        // SAFETY: our child.
        if unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) } == pid {
            return (true, status);
        }
        if t.elapsed() > limit {
            // SAFETY: our child, not yet reaped.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            return (false, status);
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// A future queued in the parent and polled in a `fork()` child: its grant
/// would come from the parent's doorbell thread, which the child does not
/// have, so waiting for it there would never end. The child's poll answers
/// `Forked` at once (as every other call on an inherited handle does) and
/// its drop leaves the parent's request alone; the parent's future is then
/// granted as if nothing happened.
#[test]
fn a_future_queued_before_fork_fails_with_forked_in_the_child() {
    use std::future::Future;
    use std::task::{Context, Poll, Waker};
    use std::time::Duration;
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let name = Name::new("forkfut");
    let sem = SharedSemaphore::open(&name, 1, OpenOptions::new()).unwrap();
    let held = sem.try_acquire(1).unwrap();
    let mut fut = Box::pin(sem.acquire(1));
    let mut cx = Context::from_waker(Waker::noop());
    assert!(fut.as_mut().poll(&mut cx).is_pending());
    // SAFETY: the child only polls and drops its copy of the future and
    // exits with _exit.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        let code = match fut.as_mut().poll(&mut cx) {
            Poll::Ready(Err(Error::Forked)) => 0,
            Poll::Ready(Err(_)) => 2,
            Poll::Ready(Ok(p)) => {
                p.forget();
                3
            }
            Poll::Pending => 4,
        };
        drop(fut);
        // SAFETY: ends the child without running the parent's destructors.
        unsafe { libc::_exit(code) };
    }
    let (exited, status) = reap_within(pid, Duration::from_secs(10));
    assert!(exited, "the child hung polling or dropping the future");
    assert!(libc::WIFEXITED(status), "child died: {status}");
    let code = libc::WEXITSTATUS(status);
    assert_ne!(code, 4, "the child's poll stayed pending for ever");
    assert_eq!(code, 0, "the child's poll did not answer Forked");
    // The parent's request is untouched: the release grants it.
    drop(held);
    match fut.as_mut().poll(&mut cx) {
        Poll::Ready(Ok(p)) => drop(p),
        Poll::Ready(Err(e)) => panic!("the parent's request failed: {e:?}"),
        Poll::Pending => {
            // The grant is delivered by the doorbell thread: wait for it.
            let t = std::time::Instant::now();
            loop {
                std::thread::sleep(Duration::from_millis(2));
                match fut.as_mut().poll(&mut cx) {
                    Poll::Ready(r) => break drop(r.expect("granted")),
                    Poll::Pending => assert!(t.elapsed() < Duration::from_secs(10), "not granted"),
                }
            }
        }
    }
    assert_eq!(assert_conserved(&sem).available, 1);
}
