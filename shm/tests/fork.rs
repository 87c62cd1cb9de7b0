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
    let mut status = 0;
    // SAFETY: our child.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    assert!(libc::WIFEXITED(status), "child died: {status}");
    assert_eq!(libc::WEXITSTATUS(status), 0, "child check failed");
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
    let mut status = 0;
    // SAFETY: our child.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    assert!(libc::WIFEXITED(status), "child died: {status}");
    assert_eq!(
        libc::WEXITSTATUS(status),
        0,
        "another user could open a 0600 segment"
    );
    let c = assert_conserved(&sem);
    assert_eq!((c.available, c.live), (2, 1));
}
