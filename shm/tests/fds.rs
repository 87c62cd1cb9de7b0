//! `open` leaves no file descriptor behind, on any of its outcomes: the
//! segment's own and the init lock's (a second description of the name,
//! since layout 4's fork fix), on success, on each refusal made while the
//! init lock is held, and on the refusals before it. Alone in its test
//! binary: it counts the process's descriptors, which other tests'
//! threads would change.

#![cfg(target_os = "linux")]

mod support;

use support::Name;
use volt_sem_shm::{Error, OpenOptions, SharedSemaphore};

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

#[test]
fn open_leaves_no_descriptor_behind_on_any_outcome() {
    let name = Name::new("fds");
    let path = name.path();
    let foreign = Name::new("fds-foreign");
    // Warm up what a first open sets up once (the registry, the fork
    // handlers; a doorbell thread is made only for raw waiters).
    drop(SharedSemaphore::open(&name, 3, OpenOptions::new()).unwrap());
    let before = open_fds();
    for _ in 0..50 {
        // Created and attached, then dropped (detached).
        let a = SharedSemaphore::open(&name, 3, OpenOptions::new()).unwrap();
        // Attached already in this process: the second open's map and
        // init lock are dropped.
        let b = SharedSemaphore::open(&name, 3, OpenOptions::new()).unwrap();
        assert_eq!(
            SharedSemaphore::open(&name, 2, OpenOptions::new()).unwrap_err(),
            Error::TotalMismatch { existing: 3 }
        );
        drop((a, b));
        // Not attached in this process: refused under the init lock.
        assert_eq!(
            SharedSemaphore::open(&name, 2, OpenOptions::new()).unwrap_err(),
            Error::TotalMismatch { existing: 3 }
        );
        // Refused before the init lock.
        assert_eq!(
            SharedSemaphore::open(&name, 3, OpenOptions::new().create_only()).unwrap_err(),
            Error::AlreadyExists
        );
        // A file that is no segment: refused under the init lock.
        std::fs::write(foreign.path(), b"not a segment").unwrap();
        assert_eq!(
            SharedSemaphore::open(&foreign, 3, OpenOptions::new()).unwrap_err(),
            Error::NotASegment
        );
        std::fs::remove_file(foreign.path()).unwrap();
        assert!(SharedSemaphore::open(&foreign, 3, OpenOptions::new().attach_only()).is_err());
    }
    assert!(std::path::Path::new(&path).exists());
    assert_eq!(open_fds(), before, "descriptors left open by open");
}
