//! `RedisSemaphore::stats` (issue 29): what a handle's session recorded
//! (counters, wait histogram) and its gauges, read without I/O.
//!
//! Per session, not per clone: the counters live in the session's `Inner`,
//! so every handle that shares it (clones, and the other `connect` calls of
//! this process to the same URL, options and name, see
//! [`ConnectOptions::own_session`](crate::ConnectOptions::own_session))
//! shares one set of counters, as they share the permits they hold.
//!
//! Where each counter is recorded (one place each):
//! * grants taken at once: the acquire script's `READY` (`door.rs`:
//!   `acquire_reply`, `try_reply`), and the acquires of 0 permits;
//! * queued grants, with their wait: `Inner::complete`, wherever the grant
//!   reaches the process (a notification, a heartbeat, a release of its own
//!   session), timed from the request's `acquire_raw`;
//! * cancels: `Inner::finish` taking a waiting request out (a cancel, a
//!   dropped future, a timeout); timeouts: `acquire_timeout` and the
//!   bindings' [`record_timeout`](crate::RedisSemaphore::record_timeout);
//! * lease losses: `Inner::lose_locked`, the one place a session is given
//!   up (a script answered `EXPIRED`, the lease ran out on the handle's
//!   clock, an uncertain outcome), when the session held or waited;
//! * reclaims: the `r=` note of every script reply of the session
//!   ([`Reply::reaped`](crate::scripts::Reply::reaped)), through
//!   [`SessionStats::noted`].
//!
//! Recording costs a few relaxed atomic increments per call, next to a
//! round trip to Redis: a `OnceLock` holds the recorder once enabled.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::OnceLock;

use volt_sem::stats::{Gauges, Recorder};

use crate::reply::Reply;
use crate::RedisSemaphore;

/// The stats of one session's `Inner`.
#[derive(Debug, Default)]
pub(crate) struct SessionStats {
    recorder: OnceLock<Recorder>,
    /// The permits available as last seen in a reply (`a=`, a census, an
    /// inspect): the gauge needs no round trip.
    available: AtomicU64,
}

impl SessionStats {
    /// Starts recording (idempotent).
    pub(crate) fn enable(&self) {
        self.recorder.get_or_init(Recorder::new);
    }

    /// The recorder, once recording.
    pub(crate) fn recorder(&self) -> Option<&Recorder> {
        self.recorder.get()
    }

    /// What a script's reply tells the stats: the sessions it reaped, the
    /// permits available after it.
    pub(crate) fn noted(&self, r: &Reply) {
        if let Some(a) = r.available {
            self.saw_available(a);
        }
        if r.reaped > 0 {
            if let Some(rec) = self.recorder() {
                rec.reclaimed(r.reaped);
            }
        }
    }

    /// The permits available, as a reply (or a census, an inspect) said.
    pub(crate) fn saw_available(&self, available: u64) {
        self.available.store(available, Relaxed);
    }

    fn available(&self) -> usize {
        usize::try_from(self.available.load(Relaxed)).unwrap_or(usize::MAX)
    }
}

impl RedisSemaphore {
    /// Starts recording this handle's [`stats`](Self::stats): counters
    /// from now on. Idempotent. The counters belong to the handle's
    /// session: the handles that share it (clones, and the other `connect`
    /// calls of this process to the same URL, options and name unless
    /// [`ConnectOptions::own_session`](crate::ConnectOptions::own_session))
    /// share them, so enabling it on one enables it on all. The bindings
    /// (through the seam) enable it for every handle they make.
    pub fn enable_stats(&self) {
        self.inner.stats.enable();
    }

    /// This handle's metrics: counters since
    /// [`enable_stats`](Self::enable_stats) (zero, with `recording:
    /// false`, if it was never called), recorded for the handle's session
    /// (shared by the handles that share it), and gauges read now, without
    /// any I/O (it answers at once while Redis is out of reach):
    ///
    /// * `available`: the permits available **as last seen** in a reply
    ///   from Redis (an acquire granted, queued or refused, a release, a
    ///   cancel, a census, an inspect): other clients change it between
    ///   two replies, and a grant that reaches the handle through a
    ///   notification carries none;
    /// * `held`: the permits this session holds now, as the handle counts
    ///   them ([`held_permits`](Self::held_permits));
    /// * `queued`: this session's requests waiting in the Redis queue now
    ///   (a partial grant is neither held nor available).
    ///
    /// Counters: `grants`/`permits_granted` (every entry point: `acquire`,
    /// `try_acquire`, `acquire_blocking`, `acquire_timeout`, the raw API;
    /// a request of 0 permits counts), `cancels` (a waiting request
    /// cancelled, dropped or timed out), `timeouts`
    /// ([`acquire_timeout`](Self::acquire_timeout) running out, and
    /// [`record_timeout`](Self::record_timeout)), `lease_losses` (the
    /// session given up while it held or waited: its lease expired in
    /// Redis, ran out on the handle's clock, or a call's outcome was
    /// uncertain), `reclaims_seen` (expired sessions of other clients that
    /// this session's scripts reaped). The wait histogram times a queued
    /// request from its call to the moment its grant reached this process;
    /// grants made at once count in its first bucket.
    ///
    /// ```no_run
    /// use volt_sem_redis::{ConnectOptions, RedisSemaphore};
    /// # fn main() -> Result<(), volt_sem_redis::Error> {
    /// let sem = RedisSemaphore::connect("redis://127.0.0.1:6379", "db-pool", 50, ConnectOptions::new())?;
    /// sem.enable_stats();
    /// let permit = sem.acquire_blocking(2)?;
    /// let s = sem.stats(); // no round trip
    /// assert_eq!((s.grants, s.permits_granted, s.held), (1, 2, 2));
    /// println!("available (as last seen) {}, p99 wait {:?}, reclaimed {}",
    ///     s.available, s.wait.p99(), s.reclaims_seen);
    /// drop(permit);
    /// # Ok(()) }
    /// ```
    pub fn stats(&self) -> volt_sem::stats::Stats {
        let (held, queued) = self.inner.gauges();
        let gauges = Gauges {
            available: self.inner.stats.available(),
            held,
            queued,
        };
        match self.inner.stats.recorder() {
            Some(r) => r.snapshot(gauges),
            None => gauges.without_counters(),
        }
    }

    /// Records that one of this handle's requests timed out (a binding
    /// that times its own waits calls it, after cancelling the request
    /// through `finish_raw`, which counted the cancel). Nothing happens
    /// unless recording.
    pub fn record_timeout(&self) {
        if let Some(r) = self.inner.stats.recorder() {
            r.timed_out();
        }
    }
}
