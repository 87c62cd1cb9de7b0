//! The clock of `inspect()`'s durations: one every process of the machine
//! shares (`CLOCK_MONOTONIC`), so that a stamp written into the segment by one
//! process can be subtracted from "now" read by another. Stamps are
//! nanoseconds of that clock, kept in segment words.
//!
//! Two readings: [`now`] (exact, for the slow paths: queueing a request,
//! completing one, `inspect` itself) and [`coarse`] (the same clock at the
//! resolution of the scheduler tick, `CLOCK_MONOTONIC_COARSE` on Linux: a few
//! nanoseconds through the vDSO, no hardware counter read, for the one stamp
//! the lock-free fast path writes). A coarse reading is never later than an
//! exact one taken after it (it is the exact clock as of the last tick), so a
//! duration `now() - coarse_stamp` is never short, and long by about one
//! tick (1 to 10 ms by the kernel's `HZ`, 4 ms with `HZ=250`; a little more
//! when a virtual machine's tick is late: up to 7 ms measured on a 4 ms
//! tick).
//!
//! Under the loom model both read 0: the model checks the algorithm, and a
//! stamp is never read by it.
//!
//! Off Unix (Windows), where a named semaphore cannot be opened (the crate's
//! `unsupported` module) but the segment code still compiles, both read this
//! process's monotonic clock (`Instant`): there is no segment to share a
//! stamp through.

/// The shared monotonic clock, in nanoseconds.
#[inline]
pub(crate) fn now() -> u64 {
    read(libc_clock::EXACT)
}

/// [`now`] at tick resolution (cheaper; never later than [`now`]).
#[inline]
pub(crate) fn coarse() -> u64 {
    read(libc_clock::COARSE)
}

#[cfg(all(unix, not(volt_loom)))]
mod libc_clock {
    pub(super) const EXACT: libc::clockid_t = libc::CLOCK_MONOTONIC;
    #[cfg(any(target_os = "linux", target_os = "android"))]
    pub(super) const COARSE: libc::clockid_t = libc::CLOCK_MONOTONIC_COARSE;
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    pub(super) const COARSE: libc::clockid_t = libc::CLOCK_MONOTONIC;
}

#[cfg(any(volt_loom, not(unix)))]
mod libc_clock {
    pub(super) const EXACT: u32 = 0;
    pub(super) const COARSE: u32 = 0;
}

#[cfg(all(unix, not(volt_loom)))]
#[inline]
fn read(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; clock_gettime only writes it.
    // It cannot fail for these clocks (both exist on every supported kernel);
    // if it did, `ts` stays 0 and the durations read as "since boot".
    unsafe { libc::clock_gettime(clock, &mut ts) };
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
}

#[cfg(volt_loom)]
#[inline]
fn read(_clock: u32) -> u64 {
    0
}

#[cfg(all(not(unix), not(volt_loom)))]
fn read(_clock: u32) -> u64 {
    static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    let epoch = *EPOCH.get_or_init(std::time::Instant::now);
    epoch.elapsed().as_nanos() as u64
}

#[cfg(all(test, not(volt_loom)))]
mod tests {
    #[test]
    fn coarse_is_never_later_than_a_later_exact_reading() {
        for _ in 0..1000 {
            let c = super::coarse();
            let n = super::now();
            assert!(c <= n, "coarse {c} after exact {n}");
        }
    }
}
