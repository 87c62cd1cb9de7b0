//! A process forked while another of its threads takes the process's first
//! queue-time stamp (which sets the stamps' epoch, and on x86-64 Linux reads
//! `/sys` and calibrates the TSC first, tens of microseconds): the child's
//! own stamps must not wait for that thread, which the child does not have.
//!
//! The first stamp is made to stall inside the epoch's setting by this test
//! binary's own `clock_gettime` (`support/stalling_clock.rs`); the fork
//! happens during the stall. Its own process: the epoch is set once.
#![cfg(all(
    target_os = "linux",
    target_arch = "x86_64",
    target_env = "gnu",
    not(miri),
    not(volt_loom)
))]

use std::sync::atomic::Ordering::SeqCst;

use volt_sem::Semaphore;

#[path = "support/stalling_clock.rs"]
mod stalling_clock;

extern "C" {
    fn fork() -> i32;
    fn waitpid(pid: i32, status: *mut i32, options: i32) -> i32;
    fn kill(pid: i32, sig: i32) -> i32;
    fn _exit(code: i32) -> !;
}

#[test]
fn a_child_forked_during_the_first_stamp_can_stamp() {
    stalling_clock::STALL_MS.store(2_000, SeqCst);
    let first = std::thread::spawn(move || {
        let s = Semaphore::new(1);
        // The process's first stamp: its first clock read stalls, inside
        // the setting of the epoch.
        stalling_clock::stall_at(1);
        let _ = s.inspect();
        assert!(stalling_clock::stalled());
    });
    while !stalling_clock::STALLING.load(SeqCst) {
        std::thread::yield_now();
    }
    // SAFETY: the child only stamps (through `inspect`) and exits.
    let pid = unsafe { fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        // Another semaphore: the stalled thread holds `sem`'s queue lock.
        let _ = Semaphore::new(1).inspect();
        // SAFETY: ends the child at once (no test harness, no destructors).
        unsafe { _exit(0) };
    }
    // The child stamps at once, or never: give it 30 s (a hang guard, far
    // beyond the stall), then stop it.
    let mut status = 0;
    let mut done = false;
    for _ in 0..3_000 {
        // SAFETY: our own child; WNOHANG (1).
        if unsafe { waitpid(pid, &mut status, 1) } == pid {
            done = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    if !done {
        // SAFETY: our own child; SIGKILL (9), then reaped.
        unsafe {
            kill(pid, 9);
            waitpid(pid, &mut status, 0);
        }
    }
    first.join().unwrap();
    assert!(done, "the child hung in its first stamp");
    assert_eq!(status, 0, "the child failed: {status:#x}");
}
