//! `metrics(h)` and `recordTimeout(h)`: the numbers behind `sem.stats()` (the
//! seam's [`stats`](volt_sem_backend::Semaphore::stats), on every backend),
//! and the timeouts `index.js` times itself.
//!
//! `metrics` answers a flat array of numbers that `index.js` turns into the
//! frozen `Stats` object of index.d.ts: one crossing, no property set per
//! field, and the grants the JS fast path took without crossing (see
//! [`crate::view`]) are added there, where they are counted. Synchronous: the
//! seam's `stats()` never blocks and never does I/O (Redis: the gauges are
//! what the handle last saw), so a metrics scrape may call it at any rate.
//!
//! Durations cross as seconds, as `inspect()`'s do.

use std::ptr;

use napi::sys;
use volt_sem::stats::{bucket_bound, WAIT_BUCKETS};

use crate::codes::{BAD_ARGS, OK};
use crate::env::EnvCtx;
use crate::handle::sem;
use crate::raw::{args, double, int, null, throw_internal};
use crate::raw::{RawEnv, RawValue};

/// The fields of `metrics`' array before the bucket counts, in order: the
/// six counters, the three gauges, `recording` (0 or 1), then the wait
/// histogram's count, sum and max (seconds).
const HEAD: usize = 13;

fn array_of(env: RawEnv, values: &[f64]) -> RawValue {
    let mut arr = ptr::null_mut();
    // SAFETY: plain value creation on the JS thread.
    unsafe {
        sys::napi_create_array_with_length(env, values.len(), &mut arr);
        for (k, &v) in values.iter().enumerate() {
            sys::napi_set_element(env, arr, k as u32, double(env, v));
        }
    }
    arr
}

// metrics(h): [grants, permitsGranted, timeouts, cancels, leaseLosses,
// reclaimsSeen, available, held, queued, recording, waitCount, waitSum,
// waitMax, ...bucket counts] | null (not a handle)
native!(js_metrics, |env, _ctx, argv: [1]| {
    // SAFETY: handle contract (see `sem`).
    let Some(s) = (unsafe { sem(env, argv[0]) }) else { return null(env) };
    let st = s.core.stats();
    // A local semaphore's permits held are the binding's count (heldPermits):
    // the core derives them from its nominal total, which addPermits and
    // removePermits never change here (see inspect::held_as_counted).
    let held = match s.core.as_local() {
        Some(_) => s.held.load(std::sync::atomic::Ordering::Relaxed),
        None => st.held,
    };
    // Counters beyond 2^53 lose their last digits as JS numbers: at a
    // billion grants a second, after three years.
    let mut v = Vec::with_capacity(HEAD + WAIT_BUCKETS);
    v.extend([
        st.grants as f64,
        st.permits_granted as f64,
        st.timeouts as f64,
        st.cancels as f64,
        st.lease_losses as f64,
        st.reclaims_seen as f64,
        st.available as f64,
        held as f64,
        st.queued as f64,
        if st.recording { 1.0 } else { 0.0 },
        st.wait.count() as f64,
        st.wait.sum().as_secs_f64(),
        st.wait.max().as_secs_f64(),
    ]);
    v.extend(st.wait.buckets().map(|(_, c)| c as f64));
    array_of(env, &v)
});

// waitBuckets(): the upper bounds of the wait histogram's buckets, seconds,
// the last one Infinity (fixed: index.js asks once).
native!(js_wait_buckets, |env, _ctx, argv: [0]| {
    let _ = argv;
    let bounds: Vec<f64> = (0..WAIT_BUCKETS)
        .map(|i| bucket_bound(i).map_or(f64::INFINITY, |b| b.as_secs_f64()))
        .collect();
    array_of(env, &bounds)
});

// recordTimeout(h): OK | BAD_ARGS. index.js calls it when the `timeout`
// option's timer won and cancelled the request (the cancel itself was
// counted by the cancel).
native!(js_record_timeout, |env, _ctx, argv: [1]| {
    // SAFETY: handle contract (see `sem`).
    let Some(s) = (unsafe { sem(env, argv[0]) }) else { return int(env, BAD_ARGS) };
    s.core.record_timeout();
    int(env, OK)
});
