//! Per-handle metrics: what this handle's acquires did (counters and a
//! wait-time histogram), and what the semaphore looks like from it now
//! (gauges), for a dashboard or an alert.
//!
//! [`inspect`](crate::Semaphore::inspect) answers "who holds and who waits,
//! right now" for the whole semaphore; `stats` answers "how has it gone for
//! this handle": how many grants, how long they waited, how many requests
//! gave up. It never blocks and never does I/O, so a metrics scrape can call
//! it as often as it likes, on any backend.
//!
//! # Cost, and why recording is switched on per handle
//!
//! A [`Recorder`] is a handful of `Relaxed` atomic counters. On the
//! uncontended path of the in-process semaphore (one CAS to take, one to
//! give back: 7-8 ns in the core bench), the two counter increments a grant
//! needs cost about as much as one of those CAS again: +44% (the median of
//! 7 alternating rounds of `a_uncontended_try_acquire_release`, "volt-sem"
//! against "volt-sem (stats on)"), far above the 2% the fast path may lose.
//! So a handle records only once
//! [`enable_stats`](crate::Semaphore::enable_stats) was called; until then
//! the fast path pays one load of a pointer that sits beside the state word
//! and one predicted branch: 8.03 ns before stats existed, 8.18 ns after
//! (medians of the same 7 rounds, +1.9%, inside the rounds' spread of 6.7 to
//! 10.8 ns). The bindings (C, Python, Node) switch it on for every handle
//! they create: at their 100-300 ns per operation, 3-4 ns is what a user
//! asking for metrics expects to pay.
//!
//! Waiting is timed only on the slow path (a queued request already takes a
//! clock reading when it queues, for `inspect`): a grant taken at once counts
//! in the histogram's first bucket without reading the clock.

use core::time::Duration;

use crate::sync::{AtomicU64, Ordering};

/// How many buckets [`WaitHistogram`] has: bucket `i < WAIT_BUCKETS - 1`
/// counts the waits of at most `2^i` µs (and more than the bucket before);
/// the last one counts every longer wait. `2^(WAIT_BUCKETS - 2)` µs is about
/// 67 s.
pub const WAIT_BUCKETS: usize = 28;

/// The upper bound of bucket `i` of a [`WaitHistogram`], `None` for the last
/// (unbounded) one: 1 µs, 2 µs, 4 µs, ... 2^26 µs.
///
/// ```
/// use std::time::Duration;
/// use volt_sem::stats::{bucket_bound, WAIT_BUCKETS};
/// assert_eq!(bucket_bound(0), Some(Duration::from_micros(1)));
/// assert_eq!(bucket_bound(10), Some(Duration::from_micros(1024)));
/// assert_eq!(bucket_bound(WAIT_BUCKETS - 1), None);
/// ```
pub const fn bucket_bound(i: usize) -> Option<Duration> {
    if i + 1 >= WAIT_BUCKETS {
        None
    } else {
        Some(Duration::from_micros(1 << i))
    }
}

/// The bucket a wait of `waited` falls in.
fn bucket_of(waited: Duration) -> usize {
    let micros = waited.as_nanos().div_ceil(1_000);
    if micros <= 1 {
        return 0;
    }
    // The smallest i with 2^i >= micros.
    let i = (128 - (micros - 1).leading_zeros()) as usize;
    i.min(WAIT_BUCKETS - 1)
}

/// The counters one handle records (see the [module](self) docs). All
/// `Relaxed`: each is a tally, read as a tally; none orders anything else.
/// A snapshot taken while acquires run may be mid-way through one of them
/// (its grant counted, its permits not yet), never off by more.
#[derive(Debug, Default)]
pub struct Recorder {
    grants: AtomicU64,
    permits_granted: AtomicU64,
    timeouts: AtomicU64,
    cancels: AtomicU64,
    lease_losses: AtomicU64,
    reclaims_seen: AtomicU64,
    /// Grants that waited in the queue, by bucket; the grants that did not
    /// are `grants + locked_grants` minus the sum of these (counted into
    /// bucket 0).
    waited: [AtomicU64; WAIT_BUCKETS],
    waited_nanos: AtomicU64,
    max_wait_nanos: AtomicU64,
    /// The grants (and their permits) recorded by
    /// [`granted_after_locked`](Self::granted_after_locked), not in `grants`
    /// and `permits_granted`: those have writers that hold no lock (a grant
    /// taken at once), these only writers that hold the semaphore's lock.
    locked_grants: AtomicU64,
    locked_permits: AtomicU64,
}

impl Recorder {
    /// A recorder with every counter at zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// A request was granted `n` permits without waiting.
    #[inline]
    pub fn granted(&self, n: usize) {
        self.grants.fetch_add(1, Ordering::Relaxed);
        self.permits_granted.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// A request was granted `n` permits after waiting `waited` in the queue.
    pub fn granted_after(&self, n: usize, waited: Duration) {
        self.granted(n);
        self.waited[bucket_of(waited)].fetch_add(1, Ordering::Relaxed);
        let nanos = u64::try_from(waited.as_nanos()).unwrap_or(u64::MAX);
        self.waited_nanos.fetch_add(nanos, Ordering::Relaxed);
        self.max_wait_nanos.fetch_max(nanos, Ordering::Relaxed);
    }

    /// As [`granted_after`](Self::granted_after), by a caller that holds the
    /// lock every other call of this method on this recorder holds (the
    /// in-process semaphore's queue lock, in its hand-off), on a recorder
    /// whose wait figures nothing else writes (no `granted_after`). Those
    /// figures then have one writer at a time, ordered by the lock, so each
    /// update is a load and a store: no locked read-modify-write (five of
    /// them, one a compare-and-swap loop, were a third of the hand-off's time
    /// in a profile of the Node binding's contended loop). Readers still see
    /// whole values (the fields are atomics), and a snapshot may be mid-way
    /// through one grant, as with `granted_after`.
    pub(crate) fn granted_after_locked(&self, n: usize, waited: Duration) {
        let add = |c: &AtomicU64, v: u64| {
            c.store(c.load(Ordering::Relaxed).wrapping_add(v), Ordering::Relaxed)
        };
        add(&self.locked_grants, 1);
        add(&self.locked_permits, n as u64);
        add(&self.waited[bucket_of(waited)], 1);
        let nanos = u64::try_from(waited.as_nanos()).unwrap_or(u64::MAX);
        add(&self.waited_nanos, nanos);
        if nanos > self.max_wait_nanos.load(Ordering::Relaxed) {
            self.max_wait_nanos.store(nanos, Ordering::Relaxed);
        }
    }

    /// A queued request gave up before all its permits came (whatever it
    /// was granted went on to the next waiters): cancelled, dropped or timed
    /// out. A timeout is recorded with [`timed_out`](Self::timed_out) as
    /// well.
    pub fn cancelled(&self) {
        self.cancels.fetch_add(1, Ordering::Relaxed);
    }

    /// A request gave up because its timeout or deadline passed (record
    /// [`cancelled`](Self::cancelled) too if it was queued).
    pub fn timed_out(&self) {
        self.timeouts.fetch_add(1, Ordering::Relaxed);
    }

    /// This handle's lease expired while it held or waited for permits
    /// (Redis): they were taken back by the server.
    pub fn lease_lost(&self) {
        self.lease_losses.fetch_add(1, Ordering::Relaxed);
    }

    /// This handle reclaimed what a crashed holder left (a dead process of a
    /// named semaphore, an expired Redis session): `count` of them.
    pub fn reclaimed(&self, count: u64) {
        self.reclaims_seen.fetch_add(count, Ordering::Relaxed);
    }

    /// The counters now, with the gauges the handle read.
    pub fn snapshot(&self, gauges: Gauges) -> Stats {
        let grants = self
            .grants
            .load(Ordering::Relaxed)
            .wrapping_add(self.locked_grants.load(Ordering::Relaxed));
        let mut counts = [0u64; WAIT_BUCKETS];
        let mut queued_grants = 0u64;
        for (c, w) in counts.iter_mut().zip(&self.waited) {
            *c = w.load(Ordering::Relaxed);
            queued_grants += *c;
        }
        // The grants taken at once; saturating, as a grant may be counted in
        // its bucket a moment before `grants` is read (Relaxed).
        counts[0] += grants.saturating_sub(queued_grants);
        Stats {
            grants,
            permits_granted: self
                .permits_granted
                .load(Ordering::Relaxed)
                .wrapping_add(self.locked_permits.load(Ordering::Relaxed)),
            timeouts: self.timeouts.load(Ordering::Relaxed),
            cancels: self.cancels.load(Ordering::Relaxed),
            lease_losses: self.lease_losses.load(Ordering::Relaxed),
            reclaims_seen: self.reclaims_seen.load(Ordering::Relaxed),
            available: gauges.available,
            held: gauges.held,
            queued: gauges.queued,
            recording: true,
            wait: WaitHistogram {
                counts,
                sum: Duration::from_nanos(self.waited_nanos.load(Ordering::Relaxed)),
                max: Duration::from_nanos(self.max_wait_nanos.load(Ordering::Relaxed)),
            },
        }
    }
}

/// The gauges of a [`Stats`], read by the handle when asked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Gauges {
    /// Permits available to take now (as this handle last saw it, for Redis).
    pub available: usize,
    /// Permits held through this handle (granted and not yet released).
    pub held: usize,
    /// Requests of this handle waiting in the queue.
    pub queued: usize,
}

impl Gauges {
    /// The counters of a handle that does not record: zero, with these
    /// gauges (`Stats::recording` is `false`).
    pub fn without_counters(self) -> Stats {
        Stats {
            available: self.available,
            held: self.held,
            queued: self.queued,
            ..Stats::default()
        }
    }
}

/// One handle's metrics (see the [module](self) docs): counters since it
/// started recording, gauges read when asked.
///
/// ```
/// use volt_sem::Semaphore;
/// let sem = Semaphore::new(4);
/// sem.enable_stats();
/// let a = sem.try_acquire(3).unwrap();
/// assert!(sem.try_acquire(2).is_err()); // a failed try is not a grant
/// let s = sem.stats();
/// assert_eq!((s.grants, s.permits_granted), (1, 3));
/// assert_eq!((s.available, s.held, s.queued), (1, 3, 0));
/// assert_eq!(s.wait.count(), 1);
/// assert_eq!(s.wait.max(), std::time::Duration::ZERO); // taken at once
/// drop(a);
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// Requests granted (each `acquire(n)` that got its `n` permits counts 1).
    pub grants: u64,
    /// Permits those grants carried (the sum of their `n`).
    pub permits_granted: u64,
    /// Requests that gave up at their timeout or deadline.
    pub timeouts: u64,
    /// Queued requests that left the queue without their permits: cancelled,
    /// dropped, timed out (timeouts are counted here too).
    pub cancels: u64,
    /// Leases this handle lost (Redis: the server expired its session while
    /// it held or waited; 0 elsewhere).
    pub lease_losses: u64,
    /// Crashed holders this handle found and reclaimed (a dead process of a
    /// named semaphore, an expired Redis session; 0 for a local one).
    pub reclaims_seen: u64,
    /// Gauge: permits available now.
    pub available: usize,
    /// Gauge: permits held through this handle now.
    pub held: usize,
    /// Gauge: this handle's requests waiting now.
    pub queued: usize,
    /// Whether this handle records: `false` means every counter above and
    /// the histogram are zero because nothing was recorded, not because
    /// nothing happened.
    pub recording: bool,
    /// How long this handle's granted requests waited.
    pub wait: WaitHistogram,
}

/// How long granted requests waited, in fixed logarithmic buckets (see
/// [`bucket_bound`]), with the exact sum and maximum.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WaitHistogram {
    counts: [u64; WAIT_BUCKETS],
    sum: Duration,
    max: Duration,
}

impl WaitHistogram {
    /// How many waits were recorded (every grant, those taken at once too).
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The counts per bucket, with each bucket's upper bound (`None` for the
    /// last): not cumulative.
    pub fn buckets(&self) -> impl Iterator<Item = (Option<Duration>, u64)> + '_ {
        self.counts
            .iter()
            .enumerate()
            .map(|(i, &c)| (bucket_bound(i), c))
    }

    /// The total time the recorded requests waited.
    pub fn sum(&self) -> Duration {
        self.sum
    }

    /// The longest wait recorded.
    pub fn max(&self) -> Duration {
        self.max
    }

    /// The `q` quantile (`0.0..=1.0`), as the upper bound of the bucket it
    /// falls in, capped at [`max`](Self::max): an over-estimate by at most
    /// a factor of 2. Zero when nothing was recorded.
    ///
    /// ```
    /// let h = volt_sem::stats::WaitHistogram::default();
    /// assert_eq!(h.quantile(0.99), std::time::Duration::ZERO);
    /// ```
    pub fn quantile(&self, q: f64) -> Duration {
        let count = self.count();
        if count == 0 {
            return Duration::ZERO;
        }
        // The rank of the quantile, 1-based: at least the first sample.
        let rank = ((q.clamp(0.0, 1.0) * count as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (bound, c) in self.buckets() {
            seen += c;
            if seen >= rank {
                return bound.map_or(self.max, |b| b.min(self.max));
            }
        }
        self.max
    }

    /// The median wait ([`quantile(0.5)`](Self::quantile)).
    pub fn p50(&self) -> Duration {
        self.quantile(0.5)
    }

    /// The 99th percentile wait ([`quantile(0.99)`](Self::quantile)).
    pub fn p99(&self) -> Duration {
        self.quantile(0.99)
    }
}

impl crate::Semaphore {
    /// Starts recording this semaphore's [`stats`](Self::stats): counters
    /// from now on. Idempotent; the first call allocates the counters (about
    /// 300 bytes), which live as long as the semaphore. Off by default
    /// because it costs the uncontended path two atomic increments (see the
    /// [module](crate::stats) docs).
    ///
    /// ```
    /// let sem = volt_sem::Semaphore::new(1);
    /// assert!(!sem.stats().recording);
    /// sem.enable_stats();
    /// drop(sem.try_acquire(1).unwrap());
    /// assert_eq!(sem.stats().grants, 1);
    /// ```
    pub fn enable_stats(&self) {
        self.install_recorder();
    }

    /// This semaphore's metrics: the counters since
    /// [`enable_stats`](Self::enable_stats) (zero, with `recording: false`,
    /// if it was never called), and the gauges now: `available`, `held` (by
    /// this process: a local semaphore's every holder), `queued` (requests
    /// waiting). One short critical section on the queue's lock; no
    /// allocation.
    ///
    /// `cancels` counts queued requests that gave up (a dropped `acquire`
    /// future, a `finish_raw` that cancelled); `timeouts` those of
    /// [`acquire_timeout`](Self::acquire_timeout) (and of a binding's
    /// timeout) that ran out.
    pub fn stats(&self) -> Stats {
        let (available, queued, granted, nominal) = self.snapshot(|word, nominal, list| {
            let (mut queued, mut granted) = (0usize, 0usize);
            list.for_each(|w| {
                queued += 1;
                let requested = w.requested.load(Ordering::Relaxed);
                // SAFETY: a lock-guarded field of a queued waiter; the lock
                // is held for the whole walk.
                let remaining = w.remaining.with(|r| unsafe { *r });
                granted += requested.saturating_sub(remaining);
            });
            (word >> Self::STATE_SHIFT, queued, granted, nominal)
        });
        // As `inspect`: a release beyond what was taken raises the total.
        let total = nominal.max(available + granted);
        let gauges = Gauges {
            available,
            held: total - available - granted,
            queued,
        };
        match self.recorder() {
            Some(r) => r.snapshot(gauges),
            None => gauges.without_counters(),
        }
    }

    /// Records that a request on this semaphore timed out (a binding that
    /// times its own waits calls it, after cancelling the request through
    /// `finish_raw`). Nothing happens unless recording.
    pub fn record_timeout(&self) {
        if let Some(r) = self.recorder() {
            r.timed_out();
        }
    }
}

#[cfg(all(test, not(volt_loom)))]
mod tests {
    use super::*;

    #[test]
    fn waits_fall_in_the_smallest_bucket_that_holds_them() {
        assert_eq!(bucket_of(Duration::ZERO), 0);
        assert_eq!(bucket_of(Duration::from_nanos(1_000)), 0);
        assert_eq!(bucket_of(Duration::from_nanos(1_001)), 1);
        assert_eq!(bucket_of(Duration::from_micros(2)), 1);
        assert_eq!(bucket_of(Duration::from_micros(3)), 2);
        assert_eq!(bucket_of(Duration::from_micros(1024)), 10);
        assert_eq!(bucket_of(Duration::from_micros(1025)), 11);
        assert_eq!(bucket_of(Duration::from_secs(3600)), WAIT_BUCKETS - 1);
        for i in 0..WAIT_BUCKETS - 1 {
            let b = bucket_bound(i).unwrap();
            assert_eq!(bucket_of(b), i, "the bound of bucket {i} is in it");
            assert_eq!(bucket_of(b + Duration::from_nanos(1)), i + 1);
        }
    }

    #[test]
    fn quantiles_are_bucket_bounds_capped_at_the_max() {
        let r = Recorder::new();
        for _ in 0..98 {
            r.granted(1);
        }
        r.granted_after(2, Duration::from_micros(300)); // bucket 9 (512 µs)
        r.granted_after(1, Duration::from_millis(5)); // bucket 13 (8192 µs)
        let s = r.snapshot(Gauges::default());
        assert_eq!((s.grants, s.permits_granted), (100, 101));
        assert_eq!(s.wait.count(), 100);
        assert_eq!(s.wait.p50(), Duration::from_micros(1)); // bucket 0: at most 1 µs
        assert_eq!(s.wait.quantile(0.99), Duration::from_micros(512));
        assert_eq!(s.wait.quantile(1.0), Duration::from_millis(5)); // capped at max
        assert_eq!(s.wait.sum(), Duration::from_micros(5_300));
        assert_eq!(s.wait.max(), Duration::from_millis(5));
        assert!(s.recording);
    }

    #[test]
    fn grants_recorded_under_the_lock_add_up_with_the_others() {
        let r = Recorder::new();
        r.granted(1); // taken at once
        r.granted_after_locked(3, Duration::from_micros(5));
        r.granted_after_locked(2, Duration::from_micros(2));
        let s = r.snapshot(Gauges::default());
        assert_eq!((s.grants, s.permits_granted), (3, 6));
        assert_eq!(s.wait.count(), 3);
        let counts: Vec<u64> = s.wait.buckets().map(|(_, c)| c).collect();
        // At once in bucket 0 (<= 1 µs), 2 µs in bucket 1, 5 µs in bucket 3 (<= 8 µs).
        assert_eq!(&counts[..4], &[1, 1, 0, 1]);
        assert_eq!(s.wait.sum(), Duration::from_micros(7));
        // The longest wait stays the longest when a shorter one comes after it.
        assert_eq!(s.wait.max(), Duration::from_micros(5));
        r.granted_after_locked(1, Duration::from_micros(9));
        assert_eq!(
            r.snapshot(Gauges::default()).wait.max(),
            Duration::from_micros(9)
        );
    }

    #[test]
    fn counters_other_than_grants_count_what_they_name() {
        let r = Recorder::new();
        r.cancelled();
        r.cancelled();
        r.timed_out();
        r.lease_lost();
        r.reclaimed(3);
        let s = r.snapshot(Gauges {
            available: 1,
            held: 2,
            queued: 3,
        });
        assert_eq!(
            (s.cancels, s.timeouts, s.lease_losses, s.reclaims_seen),
            (2, 1, 1, 3)
        );
        assert_eq!((s.available, s.held, s.queued), (1, 2, 3));
        assert_eq!(s.grants, 0);
        assert_eq!(s.wait.count(), 0);
    }
}
