//! A handle opened before fork() fails in the child instead of acting on the
//! parent's record; the child opens the name again and gets its own.
//! (Its own test binary: fork() in a process with few threads.)
#![cfg(target_os = "linux")]

mod support;

use support::{assert_conserved, Name};
use volt_sem_shm::{Error, OpenOptions, SharedSemaphore};

#[test]
fn handles_do_not_cross_fork() {
    let name = Name::new("fork");
    let sem = SharedSemaphore::open(&name, 2, OpenOptions::new()).unwrap();
    sem.try_acquire(1).unwrap();
    let parent_record = sem.process_record();
    // SAFETY: the child only runs this crate's code and exits with _exit.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        let code = (|| {
            if sem.try_acquire(1) != Err(Error::Forked) || sem.release(1) != Err(Error::Forked) {
                return 2;
            }
            drop(sem); // must not detach the parent's record
            let own = match SharedSemaphore::open(&name, 2, OpenOptions::new().attach_only()) {
                Ok(s) => s,
                Err(_) => return 3,
            };
            if own.process_record() == parent_record || own.try_acquire(1).is_err() {
                return 4;
            }
            if own.release(1).is_err() {
                return 5;
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
    sem.release(1).unwrap();
    assert_eq!(sem.available_permits(), 2);
}
