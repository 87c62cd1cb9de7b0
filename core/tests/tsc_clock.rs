//! The TSC clock of the queue times (`inspect::stamp`) when a (TSC, clock)
//! pair of its calibration is torn: the thread taking it is preempted (or
//! interrupted, or its vCPU descheduled) between its clock read and its TSC
//! read. One torn pair must not skew every wait the process reports.
//!
//! The preemption is made, not waited for: this test binary defines
//! `clock_gettime` itself (`support/stalling_clock.rs`), which sleeps 10 ms
//! after the read that the calibration's first pair takes. Its own process (an integration test): the calibration runs once.
#![cfg(all(
    target_os = "linux",
    target_arch = "x86_64",
    target_env = "gnu",
    not(miri),
    not(volt_loom)
))]

use std::pin::pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::task::noop_waker_ref;
use volt_sem::Semaphore;

#[path = "support/stalling_clock.rs"]
mod stalling_clock;

fn kernel_uses_tsc() -> bool {
    std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
        .is_ok_and(|s| s.trim() == "tsc")
}

fn poll<F: std::future::Future>(f: std::pin::Pin<&mut F>) -> Poll<F::Output> {
    f.poll(&mut Context::from_waker(noop_waker_ref()))
}

/// The first pair is torn by 10 ms: the rate must still be the clock's, as
/// a queued request's `waiting_for` shows, bracketed by `Instant`s (0.1%,
/// as the clock's own unit test).
#[test]
fn a_torn_calibration_pair_does_not_skew_the_waits() {
    if !kernel_uses_tsc() {
        eprintln!("skipped: the kernel's clocksource is not the TSC");
        return;
    }
    let sem = Semaphore::new(0);
    // The process's first stamp: the epoch's read (1), then the calibration's
    // first pair: the read before the TSC (2) stalls.
    stalling_clock::stall_at(2);
    let _ = sem.inspect();
    assert!(stalling_clock::stalled(), "the stall was not reached");
    // Past the 50 ms span: the next stamps set the rate (or retry).
    let start = Instant::now();
    while start.elapsed() < Duration::from_millis(200) {
        let _ = sem.inspect();
        std::thread::sleep(Duration::from_millis(5));
    }
    let before = Instant::now();
    let mut waiting = pin!(sem.acquire(1));
    assert!(poll(waiting.as_mut()).is_pending());
    let queued = Instant::now();
    std::thread::sleep(Duration::from_millis(300));
    let a1 = Instant::now();
    let i = sem.inspect();
    let b1 = Instant::now();
    let waited = i.waiters[0].waiting_for;
    let (shortest, longest) = (a1 - queued, b1 - before);
    assert!(
        waited >= shortest - shortest / 1000,
        "waiting_for {waited:?} < {shortest:?}: the rate is skewed"
    );
    assert!(
        waited <= longest + longest / 1000,
        "waiting_for {waited:?} > {longest:?}: the rate is skewed"
    );
    sem.close();
    assert!(poll(waiting.as_mut()).is_ready());
}
