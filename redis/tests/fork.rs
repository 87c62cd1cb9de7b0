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

/// A future queued in the parent and polled in a `fork()` child: its grant
/// would come from the parent's agent thread, which the child does not
/// have, so waiting for it there would never end. The child's poll answers
/// `Forked` at once and its drop leaves the parent's request alone (no
/// cancel sent, no lock of the parent's threads taken); the parent's future
/// is then granted as if nothing happened.
#[test]
fn a_future_queued_before_fork_fails_with_forked_in_the_child() {
    use std::future::Future;
    use std::task::{Context, Poll, Waker};
    use std::time::{Duration, Instant};
    let s = Server::start();
    let sem = connect(&s, "forkfut", 1);
    let held = sem.try_acquire(1).unwrap();
    let mut fut = Box::pin(sem.acquire(1));
    let mut cx = Context::from_waker(Waker::noop());
    assert!(fut.as_mut().poll(&mut cx).is_pending());
    // Queued in Redis before the fork, so that the parent's request exists.
    let t = Instant::now();
    while assert_conserved(&sem).queued == 0 {
        assert!(t.elapsed() < Duration::from_secs(20), "never queued");
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: the child only polls and drops its copy of the future and
    // exits with _exit (no destructor of the parent's runs there).
    match unsafe { libc::fork() } {
        0 => {
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
            // SAFETY: ends the child at once.
            unsafe { libc::_exit(code) };
        }
        -1 => panic!("fork failed"),
        pid => {
            let t = Instant::now();
            let mut status = 0;
            // SAFETY: our child.
            while unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) } != pid {
                if t.elapsed() > Duration::from_secs(20) {
                    // SAFETY: our child, not yet reaped.
                    unsafe {
                        libc::kill(pid, libc::SIGKILL);
                        libc::waitpid(pid, &mut status, 0);
                    }
                    panic!("the child hung polling or dropping the future");
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            assert!(libc::WIFEXITED(status), "child died: {status}");
            let code = libc::WEXITSTATUS(status);
            assert_ne!(code, 4, "the child's poll stayed pending for ever");
            assert_eq!(code, 0, "the child's poll did not answer Forked");
        }
    }
    // The parent's request is untouched: the release grants it.
    drop(held);
    let t = Instant::now();
    let p = loop {
        match fut.as_mut().poll(&mut cx) {
            Poll::Ready(r) => break r.expect("the parent's request failed"),
            Poll::Pending => {
                assert!(t.elapsed() < Duration::from_secs(20), "not granted");
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    };
    assert_eq!(assert_conserved(&sem).held, 1);
    drop(p);
    assert_eq!(assert_conserved(&sem).available, 1);
}
