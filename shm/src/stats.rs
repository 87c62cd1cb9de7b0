//! `SharedSemaphore::stats` (issue 29): this process's metrics for a name,
//! recorded per attachment (one per process and name, shared by every
//! handle of the name in the process), as `volt_sem::stats` defines them.
//! The recording itself is in `imp` (each entry point records its own
//! outcome); this file is the public face.

use volt_sem::stats::Stats;

use crate::SharedSemaphore;

impl SharedSemaphore {
    /// Starts recording this process's [`stats`](Self::stats) for the name:
    /// counters from now on. Idempotent; the first call allocates the
    /// counters (about 300 bytes), which live as long as the process's
    /// attachment to the name (until its last handle is dropped). One
    /// recorder per process and name: switched on through one handle, it
    /// records what every handle (clones, other `open`s of the name, the
    /// raw waiter API) of this process does.
    ///
    /// Off by default, as the in-process semaphore's: while off, the
    /// lock-free `try_acquire` pays one load of a pointer and one predicted
    /// branch; on, two relaxed atomic increments per grant. The bindings'
    /// seam (`volt-sem-backend`) switches it on for every handle it opens.
    ///
    /// ```
    /// use volt_sem_shm::{OpenOptions, SharedSemaphore};
    /// # fn main() -> Result<(), volt_sem_shm::Error> {
    /// # if cfg!(not(target_os = "linux")) { return Ok(()); }
    /// # let name = format!("doc-enable-stats-{}", std::process::id());
    /// let sem = SharedSemaphore::open(&name, 2, OpenOptions::new())?;
    /// assert!(!sem.stats().recording);
    /// sem.enable_stats();
    /// drop(sem.try_acquire(1)?);
    /// let other = sem.clone(); // same process and name: same counters
    /// drop(other.acquire_blocking(2)?);
    /// let s = sem.stats();
    /// assert!(s.recording);
    /// assert_eq!((s.grants, s.permits_granted), (2, 3));
    /// # volt_sem_shm::unlink(&name)?;
    /// # Ok(()) }
    /// ```
    pub fn enable_stats(&self) {
        self.att.enable_stats();
    }

    /// This process's metrics for the name ([`volt_sem::stats::Stats`]):
    /// the counters since [`enable_stats`](Self::enable_stats) (zero, with
    /// `recording: false`, if it was never called in this process), and the
    /// gauges now. Lock-free: a few relaxed loads of the segment and of the
    /// process's own counters; never waits for another process.
    ///
    /// * Counters count **this process's** requests on the name (through
    ///   any of its handles), never another process's: summed over the
    ///   processes, they count every request. `grants` and
    ///   `permits_granted`: requests that got all their permits (`n == 0`
    ///   too), through every entry point: `try_acquire`, `acquire`,
    ///   `acquire_blocking`, `acquire_timeout`,
    ///   `acquire_blocking_interruptible` and the raw waiter API (a failed
    ///   `try_acquire` is not counted). `cancels`: queued requests that left
    ///   without their permits (a dropped `acquire` future, a `finish_raw`
    ///   that cancelled, an interrupted or timed-out wait); a request failed
    ///   by [`close`](Self::close) (or by [`set_total`](Self::set_total)) is
    ///   not one. `timeouts`: acquires that ran out of time
    ///   ([`acquire_timeout`](Self::acquire_timeout), also when the lock
    ///   was held past the deadline before anything was queued), and the
    ///   [`record_timeout`](Self::record_timeout) calls of a binding that
    ///   times its waits itself. `reclaims_seen`: dead processes this
    ///   process's sweeps reclaimed (see *Liveness* in the crate docs).
    ///   `lease_losses`: always 0 (Redis only).
    /// * The wait histogram: a grant taken at once counts in the first
    ///   bucket; a queued one, the time from its queueing to its grant,
    ///   both stamped in the segment on the shared `CLOCK_MONOTONIC` (the
    ///   granting process may be another one), so the time until the
    ///   waiting thread woke up is not included.
    /// * Gauges: `available`, the permits in the counter (0 while any
    ///   process is queued); `held`, the permits this process holds (all its
    ///   handles and threads); `queued`, this process's requests waiting now.
    ///   A partial grant of a waiting request is in neither `held` nor
    ///   `available` ([`inspect`](Self::inspect) lists it).
    ///
    /// In a `fork()` child, a handle the parent opened reports the
    /// `available` gauge only (its record and counters are the parent's).
    ///
    /// ```
    /// use volt_sem_shm::{Error, OpenOptions, SharedSemaphore};
    /// use std::time::Duration;
    /// # fn main() -> Result<(), Error> {
    /// # if cfg!(not(target_os = "linux")) { return Ok(()); }
    /// # let name = format!("doc-stats-{}", std::process::id());
    /// let sem = SharedSemaphore::open(&name, 3, OpenOptions::new())?;
    /// sem.enable_stats();
    /// let held = sem.acquire_blocking(2)?;
    /// let late = sem.acquire_timeout(2, Duration::from_millis(10));
    /// assert_eq!(late.unwrap_err(), Error::TimedOut);
    ///
    /// let s = sem.stats();
    /// assert_eq!((s.grants, s.permits_granted), (1, 2));
    /// assert_eq!((s.timeouts, s.cancels), (1, 1)); // it was queued
    /// assert_eq!((s.available, s.held, s.queued), (1, 2, 0));
    /// assert_eq!(s.wait.count(), 1);
    /// println!("p99 wait {:?}, longest {:?}", s.wait.p99(), s.wait.max());
    /// drop(held);
    /// # volt_sem_shm::unlink(&name)?;
    /// # Ok(()) }
    /// ```
    pub fn stats(&self) -> Stats {
        self.att.stats()
    }

    /// Records that one of this process's requests on the name timed out:
    /// for a binding that times its raw waits itself, after cancelling the
    /// request with `finish_raw` (which counted the cancel). Nothing
    /// happens unless recording.
    ///
    /// ```
    /// use volt_sem_shm::{OpenOptions, SharedSemaphore};
    /// # fn main() -> Result<(), volt_sem_shm::Error> {
    /// # if cfg!(not(target_os = "linux")) { return Ok(()); }
    /// # let name = format!("doc-record-timeout-{}", std::process::id());
    /// let sem = SharedSemaphore::open(&name, 1, OpenOptions::new())?;
    /// sem.record_timeout(); // not recording yet: ignored
    /// sem.enable_stats();
    /// sem.record_timeout();
    /// assert_eq!(sem.stats().timeouts, 1);
    /// # volt_sem_shm::unlink(&name)?;
    /// # Ok(()) }
    /// ```
    pub fn record_timeout(&self) {
        self.att.record_timeout();
    }
}
