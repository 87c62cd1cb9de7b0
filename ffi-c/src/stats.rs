//! `volt_sem_stats`: this handle's metrics (counters, gauges and a wait-time
//! histogram), on every backend, into a struct the caller provides.
//!
//! Why a caller struct with `struct_size` first: nothing to free, and the
//! struct can grow. Fields are only ever appended; the caller says how many
//! bytes its struct has, the library fills what both know and zeroes the
//! rest, and says back how much it filled (see `volt_stats`).

use std::mem::{offset_of, size_of};

use volt_sem_backend::local::stats::{Stats, WAIT_BUCKETS};

use crate::boundary::{aligned, ffi_status, non_null, struct_size};
use crate::semaphore::handle;
use crate::semaphore::volt_sem;
use crate::status::volt_status::{self, *};

/// How many buckets `volt_stats.wait_buckets` has: bucket `i` (for `i <
/// VOLT_WAIT_BUCKETS - 1`) counts the grants that waited more than bucket
/// `i - 1`'s bound and at most 2^i microseconds (1 µs, 2 µs, 4 µs, ...
/// 2^26 µs, about 67 s); the last one counts every longer wait. Not
/// cumulative. Grants taken at once are in bucket 0.
pub const VOLT_WAIT_BUCKETS: usize = 28;

// The C constant is the core's bucket count: a change there must be a new
// constant (and fields appended) here, never a silent resize.
const _: () = assert!(VOLT_WAIT_BUCKETS == WAIT_BUCKETS);

/// This handle's metrics, as `volt_sem_stats` saw them.
///
/// Counters count this handle's requests since it was made (a named
/// semaphore's: this process's, shared by its handles of that name; a Redis
/// one's: the handle's session). Gauges are read at the call. Durations are
/// nanoseconds.
///
/// ABI: the caller allocates this struct and sets `struct_size` to
/// `sizeof(volt_stats)` before the call (`volt_stats st = { .struct_size = sizeof st };`).
/// Fields are only ever appended. The library fills the fields that both
/// its `volt_stats` and the caller's have, zeroes the caller's bytes beyond
/// its own, and sets `struct_size` to the number of bytes it filled. So a
/// program built against an older header (a smaller struct) gets its fields
/// and nothing is written past them; a program built against a newer header
/// and run with an older library sees the fields that library does not know
/// as 0 and can tell them apart by `struct_size` (a field is filled if
/// `offsetof(volt_stats, field) + sizeof field <= struct_size`). A leading
/// size rather than "check the version and trust `sizeof`": the struct is
/// written by the library, so a size mismatch in either direction would
/// otherwise be a write past the caller's memory or fields read unset; the
/// size makes both safe without a version check, the same rule as
/// `volt_connect_options` and `volt_open_options`.
// Adding a field: append it, never reorder or remove one; keep no trailing
// padding (a test checks it), so that a later field never lands inside the
// size an older caller passes.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct volt_stats {
    /// In: `sizeof(volt_stats)` as the caller compiled it. Out: the bytes
    /// the library filled (`min` of the caller's size and its own).
    pub struct_size: usize,
    /// Requests granted (each acquire of `n` permits that got them counts 1).
    pub grants: u64,
    /// Permits those grants carried (the sum of their `n`).
    pub permits_granted: u64,
    /// Requests that gave up at their timeout (also in `cancels` when they
    /// were queued).
    pub timeouts: u64,
    /// Queued requests that left without their permits: cancelled, freed,
    /// timed out. A close that fails queued requests is not a cancel.
    pub cancels: u64,
    /// Redis: how often the server expired this handle's session while it
    /// held or waited; 0 on the other backends.
    pub lease_losses: u64,
    /// Crashed holders this handle reclaimed (a named semaphore's dead
    /// processes, a Redis semaphore's expired sessions); 0 for a local one.
    pub reclaims_seen: u64,
    /// Gauge: permits available now (Redis: as last seen in a reply).
    pub available: usize,
    /// Gauge: permits held through this handle now.
    pub held: usize,
    /// Gauge: this handle's requests waiting now (partial grants are
    /// neither held nor available).
    pub queued: usize,
    /// Whether this handle records: `false` means the counters and the
    /// histogram are 0 because nothing was recorded, not because nothing
    /// happened.
    pub recording: bool,
    /// Grants recorded in the histogram (every grant, those taken at once
    /// too).
    pub wait_count: u64,
    /// Total nanoseconds those grants waited.
    pub wait_sum_ns: u64,
    /// The longest wait, in nanoseconds.
    pub wait_max_ns: u64,
    /// The median wait: the upper bound of its bucket, capped at
    /// `wait_max_ns` (an over-estimate by at most a factor of 2); 0 when
    /// nothing was recorded.
    pub wait_p50_ns: u64,
    /// The 99th percentile wait, as `wait_p50_ns`.
    pub wait_p99_ns: u64,
    /// Grants per wait bucket (see `VOLT_WAIT_BUCKETS`), not cumulative.
    pub wait_buckets: [u64; VOLT_WAIT_BUCKETS],
}

/// The size of the first version of `volt_stats`: the smallest
/// `struct_size` accepted. It stays this value when fields are appended.
const STATS_V1_SIZE: usize =
    offset_of!(volt_stats, wait_buckets) + size_of::<[u64; VOLT_WAIT_BUCKETS]>();

fn nanos(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

fn c_stats(s: &Stats, struct_size: usize) -> volt_stats {
    let mut wait_buckets = [0u64; VOLT_WAIT_BUCKETS];
    for (b, (_, count)) in wait_buckets.iter_mut().zip(s.wait.buckets()) {
        *b = count;
    }
    volt_stats {
        struct_size,
        grants: s.grants,
        permits_granted: s.permits_granted,
        timeouts: s.timeouts,
        cancels: s.cancels,
        lease_losses: s.lease_losses,
        reclaims_seen: s.reclaims_seen,
        available: s.available,
        held: s.held,
        queued: s.queued,
        recording: s.recording,
        wait_count: s.wait.count(),
        wait_sum_ns: nanos(s.wait.sum()),
        wait_max_ns: nanos(s.wait.max()),
        wait_p50_ns: nanos(s.wait.p50()),
        wait_p99_ns: nanos(s.wait.p99()),
        wait_buckets,
    }
}

/// Writes this handle's metrics to `*out`: counters since the handle was
/// made, gauges now, and the wait-time histogram of its grants.
///
/// Set `out->struct_size` to `sizeof(volt_stats)` first (see `volt_stats`
/// for how the struct grows). `*out` is the caller's, nothing to free; the
/// handle stays the caller's too. Thread-safe: never blocks and never does I/O, on any
/// backend (a Redis handle's `available` is what its last reply said), so
/// it may be called from an event loop's thread, from any thread, as often
/// as a metrics scrape likes. A snapshot taken while acquires run may be
/// mid-way through one of them (its grant counted, its permits not yet),
/// never off by more.
///
/// Returns `VOLT_OK`; `VOLT_INVALID_ARGUMENT` (NULL `sem` or `out`, a
/// misaligned `out`, or an `out->struct_size` smaller than the first
/// version's `volt_stats` or above 4096), with nothing written;
/// `VOLT_FORKED` for a Redis handle in a child of the process that connected
/// it (its session is the parent's).
///
/// # Safety
/// `sem` is NULL or a live handle; `out` is NULL or points to
/// `out->struct_size` writable bytes whose first field is that size.
#[no_mangle]
pub unsafe extern "C" fn volt_sem_stats(sem: *const volt_sem, out: *mut volt_stats) -> volt_status {
    ffi_status!("volt_sem_stats", || {
        // SAFETY: NULL or a live handle (contract).
        let sem = unsafe { handle(sem) }?;
        non_null(out, "out")?;
        aligned(out, "out")?;
        // SAFETY: non-NULL and aligned; its first field, a usize, is
        // readable (contract).
        let size = unsafe { out.cast::<usize>().read() };
        struct_size(size, STATS_V1_SIZE, "out->struct_size")?;
        let filled = size.min(size_of::<volt_stats>());
        let stats = c_stats(&sem.sem.stats(), filled);
        // SAFETY: `size` writable bytes at `out` (contract); `filled <= size`
        // bytes of `stats` are readable; the two do not overlap. Copying
        // bytes (padding included) into the caller's memory is a plain
        // memcpy.
        unsafe {
            std::ptr::write_bytes(out.cast::<u8>().add(filled), 0, size - filled);
            std::ptr::copy_nonoverlapping(
                (&stats as *const volt_stats).cast::<u8>(),
                out.cast::<u8>(),
                filled,
            );
        }
        Ok(VOLT_OK)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_layout_leaves_no_trailing_padding() {
        // Fields are only appended: trailing padding would let a later field
        // land inside the size an older caller passes.
        assert_eq!(STATS_V1_SIZE, size_of::<volt_stats>());
    }
}
