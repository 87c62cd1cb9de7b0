//! The test binary's own `clock_gettime` (the executable's definition is the
//! one the core's and std's calls bind to): the clock through the system
//! call (not the vDSO: slower, and as exact), and, when a thread armed it,
//! a stall after one of that thread's reads, as a preemption there would
//! make. x86-64 Linux (glibc) only.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::time::Duration;

thread_local! {
    /// Counts down this thread's `clock_gettime` calls; the one that takes it
    /// from 1 to 0 stalls after reading the clock.
    static STALL_AT: Cell<u32> = const { Cell::new(0) };
}

/// How long a stall lasts, in milliseconds.
pub static STALL_MS: AtomicU64 = AtomicU64::new(10);
/// Set while a stall is under way.
pub static STALLING: AtomicBool = AtomicBool::new(false);

/// Makes this thread's `call`-th `clock_gettime` from now on stall.
pub fn stall_at(call: u32) {
    STALL_AT.with(|c| c.set(call));
}

/// Whether this thread's armed stall happened.
pub fn stalled() -> bool {
    STALL_AT.with(Cell::get) == 0
}

extern "C" {
    fn syscall(num: i64, ...) -> i64;
}

/// `struct timespec` of x86-64 Linux.
#[repr(C)]
pub struct Timespec {
    sec: i64,
    nsec: i64,
}

/// `clock_gettime(2)`, with the armed stall.
///
/// # Safety
/// As the C function: `ts` points to a writable `timespec`.
#[no_mangle]
pub unsafe extern "C" fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32 {
    const SYS_CLOCK_GETTIME: i64 = 228;
    // SAFETY: the caller passes a valid `timespec` pointer (the C contract).
    let r = unsafe { syscall(SYS_CLOCK_GETTIME, i64::from(clock), ts) } as i32;
    let stall = STALL_AT.with(|c| match c.get() {
        0 => false,
        k => {
            c.set(k - 1);
            k == 1
        }
    });
    if stall {
        STALLING.store(true, SeqCst);
        // nanosleep: no clock read
        std::thread::sleep(Duration::from_millis(STALL_MS.load(SeqCst)));
        STALLING.store(false, SeqCst);
    }
    r
}
