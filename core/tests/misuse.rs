//! Misuse of the raw API that the crate turns into a loud, immediate failure
//! instead of memory corruption.

use std::ffi::c_void;
use std::process::Command;
use volt_sem::raw::RawSemaphore;

use volt_sem::{RawAcquire, Semaphore, Waiter};

unsafe extern "C" fn nothing(_: *mut c_void) {}

/// A `Waiter` dropped while still queued would leave a dangling node in the
/// semaphore's queue. `Drop` aborts the process with a message instead. The
/// abort is observed from a child process running this same test.
#[test]
#[cfg_attr(miri, ignore = "spawns a process")]
fn dropping_a_queued_waiter_aborts_the_process() {
    if std::env::var_os("VOLT_SEM_TEST_DROP_BUSY").is_some() {
        let sem = Semaphore::new(0);
        let w = Box::pin(Waiter::new());
        let queued = unsafe { sem.acquire_raw(w.as_ref(), 1, nothing, std::ptr::null_mut()) };
        assert_eq!(queued, Ok(RawAcquire::Pending));
        drop(w); // aborts here
        std::process::exit(0); // not reached (exit 0 would fail the parent)
    }
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "dropping_a_queued_waiter_aborts_the_process",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("VOLT_SEM_TEST_DROP_BUSY", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(
            out.status.signal(),
            Some(6),
            "SIGABRT expected; stderr: {stderr}"
        );
    }
    assert!(!out.status.success());
    assert!(
        stderr.contains("a Waiter was dropped while queued"),
        "stderr: {stderr}"
    );
}
