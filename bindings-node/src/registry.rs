//! The process-wide registry behind `share()`/`attach()`: a semaphore id maps
//! to a weak reference, plus a time-limited pin that keeps a shared semaphore
//! alive while its `share()` value is in flight to another thread.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, Weak};
use std::time::{Duration, Instant};

use napi::sys;

use crate::codes::MAX_JS;
use crate::env::EnvCtx;
use crate::handle::{handle, sem};
use crate::raw::{args, double, lock, null, throw_internal, RawEnv, RawValue};
use crate::semaphore::Sem;

pub(crate) static REGISTRY: LazyLock<Mutex<HashMap<u64, Entry>>> = LazyLock::new(Default::default);

/// How long `share()` keeps a semaphore alive for an `attach()` that has not
/// come yet (the first attach ends it sooner).
pub(crate) const SHARE_PIN: Duration = Duration::from_secs(60);

pub(crate) struct Entry {
    pub(crate) sem: Weak<Sem>,
    /// Set by share(): keeps the semaphore alive until the next attach() or
    /// until `deadline`, so a share() value in flight (workerData, postMessage)
    /// can still be attached after the sharing thread dropped its handle.
    pub(crate) pin: Option<(Arc<Sem>, Instant)>,
}

/// Takes the pins whose deadline passed out of the registry (the caller drops
/// them after unlocking: dropping the last Arc locks the registry again).
pub(crate) fn expired_pins(reg: &mut HashMap<u64, Entry>, now: Instant) -> Vec<Arc<Sem>> {
    let mut out = Vec::new();
    for e in reg.values_mut() {
        if e.pin.as_ref().is_some_and(|(_, deadline)| *deadline <= now) {
            out.extend(e.pin.take().map(|(s, _)| s));
        }
    }
    out
}

/// When `share()`/`attach()` last scanned the registry for expired pins (ms
/// since `EPOCH`): they scan at most once a second, so sharing many semaphores
/// stays O(1) each; the JS timer (`expirePins`) does the rest.
pub(crate) static LAST_SCAN_MS: AtomicU64 = AtomicU64::new(0);
pub(crate) static EPOCH: LazyLock<Instant> = LazyLock::new(Instant::now);

pub(crate) fn scan_due(now: Instant) -> bool {
    let ms = now.saturating_duration_since(*EPOCH).as_millis() as u64;
    let last = LAST_SCAN_MS.load(Ordering::Relaxed);
    ms >= last + 1000
        && LAST_SCAN_MS
            .compare_exchange(last, ms, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
}

/// Milliseconds until the earliest pin expires (`-1` if none is left).
pub(crate) fn next_pin_ms(reg: &HashMap<u64, Entry>, now: Instant) -> f64 {
    reg.values()
        .filter_map(|e| {
            e.pin
                .as_ref()
                .map(|(_, d)| d.saturating_duration_since(now).as_millis() as f64)
        })
        .fold(
            -1.0,
            |acc: f64, ms| if acc < 0.0 { ms } else { acc.min(ms) },
        )
}

impl Drop for Sem {
    fn drop(&mut self) {
        crate::semaphore::LIVE_SEMS.fetch_sub(1, Ordering::Relaxed);
        if let Some(r) = self.core.as_redis() {
            // Ending a Redis session is a round trip: on a thread of its own,
            // never the JS thread (a finalizer), with the last session clone.
            let (r, watches) = (r.clone(), std::mem::take(&mut *lock(&self.watches)));
            let _ = std::thread::Builder::new()
                .name("volt-sem redis end".into())
                .spawn(move || {
                    r.disconnect();
                    drop((watches, r));
                });
        }
        if self.shared.load(Ordering::Relaxed) {
            let mut reg = lock(&REGISTRY);
            // Only the entry of this semaphore: an entry whose Weak is dead.
            if reg.get(&self.id).is_some_and(|e| e.sem.strong_count() == 0) {
                reg.remove(&self.id);
            }
        }
    }
}

// share(h): number (the registry id) | null
native!(js_share, |env, ctx, argv: [1]| {
    // SAFETY: handle contract (see `sem`).
    let Some(s) = (unsafe { sem(env, argv[0]) }) else { return null(env) };
    let now = Instant::now();
    let expired = {
        let mut reg = lock(&REGISTRY);
        let expired = if scan_due(now) { expired_pins(&mut reg, now) } else { Vec::new() };
        let e = reg.entry(s.id).or_insert_with(|| Entry { sem: Arc::downgrade(s), pin: None });
        e.pin = Some((s.clone(), now + SHARE_PIN));
        expired
    };
    drop(expired);
    if !s.shared.load(Ordering::Relaxed) {
        // Other threads may reach it from now on: its spare references go
        // (`Sem::take_ref`), before `shared` is set, on its own thread.
        s.retire_spares(false);
    }
    if !s.shared.swap(true, Ordering::Relaxed) {
        // Its waiters of this thread may now be served by others: they keep
        // the thread alive like any waiter on a shared semaphore.
        ctx.recount(|node| node.sem.borrow().as_ref().is_some_and(|x| Arc::ptr_eq(x, s)));
    }
    double(env, s.id as f64)
});

// expirePins(): drops the share() pins whose time is up; returns the ms until
// the next one expires, or -1 if none is left.
native!(js_expire_pins, |env, _ctx, argv: [0]| {
    let _ = argv;
    let now = Instant::now();
    let (expired, next) = {
        let mut reg = lock(&REGISTRY);
        let expired = expired_pins(&mut reg, now);
        (expired, next_pin_ms(&reg, now))
    };
    drop(expired);
    double(env, next)
});

// attach(id): External | null (no such semaphore any more)
native!(js_attach, |env, _ctx, argv: [1]| {
    let mut d = f64::NAN;
    // SAFETY: fails (leaving NaN) on a non-number.
    unsafe { sys::napi_get_value_double(env, argv[0], &mut d) };
    if !(d >= 1.0 && d.fract() == 0.0 && d <= MAX_JS as f64) {
        return null(env);
    }
    let (found, unpinned) = {
        let mut reg = lock(&REGISTRY);
        let now = Instant::now();
        let mut expired = if scan_due(now) { expired_pins(&mut reg, now) } else { Vec::new() };
        let found = match reg.get_mut(&(d as u64)) {
            Some(e) => {
                expired.extend(e.pin.take().map(|(s, _)| s)); // attached: pin no more
                e.sem.upgrade()
            }
            None => None,
        };
        (found, expired)
    };
    drop(unpinned);
    match found {
        Some(s) => handle(env, s),
        None => null(env),
    }
});
