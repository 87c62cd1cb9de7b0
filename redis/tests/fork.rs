//! A handle inherited through `fork()`: the child's copy refuses to act on
//! the parent's session (`Error::Forked`), and neither its drop nor its
//! exit (the `atexit` handler) ends that session behind the parent's back.

mod support;

use support::*;
use volt_sem_redis::Error;

#[test]
#[ignore = "the body of worker processes (support::worker_main), not a test"]
fn worker() {
    worker_main();
}

#[test]
fn a_forked_child_neither_uses_nor_ends_the_parents_session() {
    let s = Server::start();
    let sem = connect(&s, "fork", 2);
    let held = sem.try_acquire(1).unwrap();
    // SAFETY: the child only calls into this crate (no lock is held across
    // the fork: no other thread of this test uses the handle now) and exits.
    match unsafe { libc::fork() } {
        0 => {
            let refused = matches!(sem.try_acquire(1), Err(Error::Forked))
                && matches!(sem.release(1), Err(Error::Forked))
                && matches!(sem.census(), Err(Error::Forked));
            // Dropping every handle, then exiting through the atexit handler.
            drop(held);
            drop(sem);
            std::process::exit(if refused { 0 } else { 3 });
        }
        -1 => panic!("fork failed"),
        pid => {
            let mut status = 0;
            // SAFETY: waits for the child just forked.
            unsafe { libc::waitpid(pid, &mut status, 0) };
            assert!(
                libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
                "child status {status}"
            );
        }
    }
    // The parent's session and what it holds are untouched.
    let c = assert_conserved(&sem);
    assert_eq!((c.sessions, c.held, c.available), (1, 1, 1), "{c:?}");
    assert_eq!(sem.held_permits(), 1);
    sem.release(1).unwrap();
    assert_eq!(assert_conserved(&sem).available, 2);
}
