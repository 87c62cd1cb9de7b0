//! What `inspect()` reports on every backend: who holds a semaphore's
//! permits and who waits for them, in queue order.
//!
//! One set of types for the local semaphore (this crate), the named one
//! (volt-sem-shm) and the Redis one (volt-sem-redis), so that the bindings
//! and the `volt-sem` command line show the same fields everywhere. A
//! holder or a waiter is named by its process: the **label** its semaphore
//! handle was opened with (default [`default_label`], `"<hostname>:<pid>"`),
//! the host and the pid. Times are durations measured by whoever keeps the
//! state (this process's monotonic clock; the machine's for a named
//! semaphore; the Redis server's clock for Redis), never wall-clock
//! instants, so that two hosts' clocks never need to agree.
//!
//! The lists are snapshots: a holder may release, and a waiter may be
//! granted, a moment after they were read. The sums hold within one
//! snapshot: `available + Σ holders.permits + Σ waiters.granted == total`
//! (while `total` is not being changed; after a shrink of a named or Redis
//! semaphore below what is held, the sum is above `total` by the permits
//! still to be taken back as they are released).

use core::time::Duration;

use crate::Semaphore;

/// Nanoseconds since this process's first call (at least 1), for the
/// queue times of local waiters: a `u64` in the waiter where an `Instant`
/// would take 16 bytes.
///
/// Read for every queued request (its queue time) and once per release that
/// serves waiters (the end of their waits), so it is on the contended path:
/// on 64-bit Linux it reads `CLOCK_MONOTONIC` (the clock `Instant` reads
/// there) itself and subtracts two integers, where `Instant::elapsed` takes
/// a general `timespec` subtraction and a 128-bit conversion, about 70 more
/// instructions than the clock read itself.
///
/// On x86-64 Linux whose kernel keeps time with the TSC (its clocksource is
/// `tsc`: the TSC is invariant and in step across CPUs, and
/// `CLOCK_MONOTONIC` reads it too), the clock is the TSC itself, scaled to
/// nanoseconds by a rate measured against `CLOCK_MONOTONIC` over the
/// process's first 50 ms of stamps ([`tsc`]): a `clock_gettime` there is an
/// ordered TSC read plus the kernel's scaling, about 20 ns, of which the
/// ordering fence stalls the contended path most; a plain `rdtsc` costs
/// about half and stalls nothing (Node's contended loop: 5-13% of its time).
pub(crate) fn stamp() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    // Not a `OnceLock`: a fork while another thread set it (the first
    // stamp's `/sys` read and TSC calibration included) left the child
    // waiting for that thread for good. 0: not set; the first to set it
    // wins, the others take its value. Relaxed: the value is all there is.
    static EPOCH: AtomicU64 = AtomicU64::new(0);
    let now = clock_ns();
    let epoch = match EPOCH.load(Relaxed) {
        0 => match EPOCH.compare_exchange(0, now, Relaxed, Relaxed) {
            Ok(_) => now,
            Err(set) => set,
        },
        set => set,
    };
    now.saturating_sub(epoch).max(1)
}

/// The clock of [`stamp`], in nanoseconds from an unspecified start.
#[cfg(all(target_os = "linux", target_arch = "x86_64", not(miri), not(volt_loom)))]
#[inline]
fn clock_ns() -> u64 {
    tsc::now()
}

/// The clock of [`stamp`], in nanoseconds from an unspecified start.
#[cfg(not(all(target_os = "linux", target_arch = "x86_64", not(miri), not(volt_loom))))]
#[inline]
fn clock_ns() -> u64 {
    monotonic_ns()
}

/// `CLOCK_MONOTONIC` read through the TSC (see [`stamp`]).
///
/// Until the rate is known, and for good when the kernel's clocksource is
/// not the TSC (or `/sys` cannot tell), [`now`](tsc::now) is
/// `CLOCK_MONOTONIC` itself. The first call notes a (TSC, clock) pair; the
/// first call 50 ms of clock later notes a second one and sets the rate
/// (`2^32` ns per tick, fixed point), from then on the clock is the first
/// pair's clock plus the ticks since, scaled: equal to `CLOCK_MONOTONIC` at
/// both pairs, within half the width of each pair's two clock reads: the
/// narrowest of five tries, 20-40 ns as a rule (under 1 ppm of the 50 ms),
/// and never more than 2 µs (40 ppm): a process whose every try is wider
/// (preempted between its reads) keeps `CLOCK_MONOTONIC`. Afterwards the
/// two may drift apart by the rate at which NTP slews `CLOCK_MONOTONIC` (at
/// most 500 ppm; usually a few ppm): the stamps are compared only with
/// each other (queue times, waits), never with `Instant`s. A reading taken before the rate was set and one after agree
/// to the same precision. A TSC read that goes backwards (it is not
/// ordered) counts as no time passed. A TSC that restarts (a suspend to RAM
/// or to disk resets it on most machines) puts the clock back on
/// `CLOCK_MONOTONIC` for good (`HIGH`). A forked child inherits the state,
/// which holds there (the same machine's TSC and clock); one forked while
/// another thread had claimed a step keeps `CLOCK_MONOTONIC`, through the
/// slow path (that thread is not in the child to end the step).
#[cfg(all(target_os = "linux", target_arch = "x86_64", not(miri), not(volt_loom)))]
mod tsc {
    use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

    /// Nobody looked yet; one call is looking; measuring the rate; one call
    /// sets the rate; the TSC is the clock; `CLOCK_MONOTONIC` is.
    const UNTRIED: u8 = 0;
    const PROBING: u8 = 1;
    const MEASURING: u8 = 2;
    const SETTING: u8 = 3;
    const READY: u8 = 4;
    const OFF: u8 = 5;

    /// The span of clock over which the rate is measured.
    const SPAN_NS: u64 = 50_000_000;

    static STATE: AtomicU8 = AtomicU8::new(UNTRIED);
    /// The first pair: TSC and clock.
    static T0: AtomicU64 = AtomicU64::new(0);
    static N0: AtomicU64 = AtomicU64::new(0);
    /// Nanoseconds per tick, times 2^32.
    static RATE: AtomicU64 = AtomicU64::new(0);

    #[inline]
    fn rdtsc() -> u64 {
        // SAFETY: `rdtsc` exists on every x86-64 CPU and only reads the
        // time-stamp counter.
        let t = unsafe { core::arch::x86_64::_rdtsc() };
        #[cfg(test)]
        let t = t.wrapping_sub(SHIFT.load(Ordering::Relaxed));
        t
    }

    /// Tests: subtracted from every TSC read, to restart the TSC as a
    /// suspend to RAM or to disk does on most machines.
    #[cfg(test)]
    static SHIFT: AtomicU64 = AtomicU64::new(0);

    /// Tests: the TSC reads `left` ticks from now on, as after a reset.
    #[cfg(test)]
    pub(super) fn restart_tsc(left: u64) {
        SHIFT.store(rdtsc().wrapping_sub(left), Ordering::Relaxed);
    }

    /// The widest (clock read, TSC read, clock read) accepted as a pair: its
    /// error is at most half of it, 1 µs, 40 ppm of the 50 ms span for the
    /// two pairs of the rate. Unpreempted, the three reads take 20-40 ns (a
    /// few hundred where the clock is read through a system call).
    const MAX_PAIR_NS: u64 = 2_000;

    /// A (TSC, clock) pair: the TSC between two clock reads, and their mean;
    /// the narrowest of a few tries, so that a try torn by a preemption, an
    /// interrupt or a descheduled vCPU between its reads (which would offset
    /// the pair by up to half the stall, and the rate by that over the span,
    /// for good) is not the one kept. `None` if every try was torn.
    fn pair() -> Option<(u64, u64)> {
        let mut best: Option<(u64, u64, u64)> = None; // (width, tsc, clock)
        for _ in 0..5 {
            let a = super::monotonic_ns();
            let t = rdtsc();
            let b = super::monotonic_ns();
            let width = b.saturating_sub(a);
            if best.map_or(true, |(w, _, _)| width < w) {
                best = Some((width, t, a + width / 2));
            }
        }
        best.filter(|&(w, _, _)| w <= MAX_PAIR_NS)
            .map(|(_, t, n)| (t, n))
    }

    /// Whether the kernel keeps time with the TSC. Allocates nothing (a
    /// waiting thread must not: `tests/alloc.rs`): std opens a path this
    /// short from a buffer on the stack, and the answer is read into one.
    fn kernel_uses_tsc() -> bool {
        use std::io::Read;
        let path = "/sys/devices/system/clocksource/clocksource0/current_clocksource";
        let Ok(mut f) = std::fs::File::open(path) else {
            return false;
        };
        let mut buf = [0u8; 16];
        let n = f.read(&mut buf).unwrap_or(0);
        matches!(&buf[..n], b"tsc\n" | b"tsc")
    }

    /// A TSC read at most `STEP` ticks below the highest one a stamp made
    /// (or lower, by a read that was slow to store it): a read `SLACK` below
    /// it is a TSC that restarted. A suspend to RAM or to disk resets the TSC
    /// on most machines, while `CLOCK_MONOTONIC` goes on from where it was;
    /// the clock then scaled from T0 would stand still (below T0) or go back
    /// by the uptime before the suspend, for as long again.
    static HIGH: AtomicU64 = AtomicU64::new(0);
    /// 2^24 ticks: 3-17 ms at 1-5 GHz. Far beyond the skew of two CPUs' TSCs
    /// and the reordering of an unfenced read (hundreds of ticks), so that a
    /// restart is never seen where there is none; an update of `HIGH` (a
    /// locked instruction) every 2^24 ticks at most per thread.
    const STEP: u64 = 1 << 24;
    const SLACK: u64 = 1 << 24;

    #[inline]
    pub(super) fn now() -> u64 {
        // Acquire: pairs with the Release that published T0, N0, RATE, HIGH.
        if STATE.load(Ordering::Acquire) == READY {
            // Before the TSC read: the HIGH seen came from an earlier read.
            let high = HIGH.load(Ordering::Relaxed);
            let tsc = rdtsc();
            if tsc.saturating_add(SLACK) >= high {
                if tsc > high.saturating_add(STEP) {
                    HIGH.fetch_max(tsc, Ordering::Relaxed);
                }
                let ticks = tsc.saturating_sub(T0.load(Ordering::Relaxed));
                let ns = (u128::from(ticks) * u128::from(RATE.load(Ordering::Relaxed))) >> 32;
                return N0.load(Ordering::Relaxed).wrapping_add(ns as u64);
            }
            return restarted();
        }
        slow()
    }

    /// The TSC restarted (see `HIGH`): `CLOCK_MONOTONIC` from now on, for
    /// good. It goes on from where the TSC clock was, give or take how far
    /// the two parted since the rate was set (the rate's error, at most
    /// 40 ppm, and NTP's slews): a wait across the restart is off by that
    /// much at most (never negative: waits saturate at 0), where the TSC
    /// clock would have made every wait 0 for as long as the uptime before.
    #[cold]
    fn restarted() -> u64 {
        STATE.store(OFF, Ordering::Relaxed);
        super::monotonic_ns()
    }

    /// Moves `STATE` from `from` to its busy step (PROBING, SETTING):
    /// whether this call won it.
    fn claim(from: u8) -> bool {
        let busy = if from == UNTRIED { PROBING } else { SETTING };
        STATE
            .compare_exchange(from, busy, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    #[cold]
    fn slow() -> u64 {
        let ns = super::monotonic_ns();
        match STATE.load(Ordering::Acquire) {
            // One call claims each step; the others read the clock meanwhile.
            UNTRIED if claim(UNTRIED) => {
                // A machine whose every try is torn is not one to trust a
                // rate from: CLOCK_MONOTONIC for good.
                match kernel_uses_tsc().then(pair).flatten() {
                    Some((t, n)) => {
                        T0.store(t, Ordering::Relaxed);
                        N0.store(n, Ordering::Relaxed);
                        STATE.store(MEASURING, Ordering::Release);
                    }
                    None => STATE.store(OFF, Ordering::Relaxed),
                }
            }
            MEASURING
                if ns.saturating_sub(N0.load(Ordering::Relaxed)) >= SPAN_NS && claim(MEASURING) =>
            {
                let (t0, n0) = (T0.load(Ordering::Relaxed), N0.load(Ordering::Relaxed));
                let Some((t, n)) = pair() else {
                    STATE.store(OFF, Ordering::Relaxed);
                    return ns;
                };
                let ticks = t.saturating_sub(t0);
                let rate = (u128::from(n.saturating_sub(n0)) << 32)
                    .checked_div(u128::from(ticks))
                    .and_then(|r| u64::try_from(r).ok());
                match rate {
                    // A TSC that did not advance (or a rate that does not
                    // fit): not a clock to scale.
                    Some(r) if r > 0 && ticks > 0 => {
                        RATE.store(r, Ordering::Relaxed);
                        HIGH.store(t, Ordering::Relaxed);
                        // Release: publishes RATE, HIGH (T0, N0 were before).
                        STATE.store(READY, Ordering::Release);
                    }
                    _ => STATE.store(OFF, Ordering::Relaxed),
                }
            }
            _ => {}
        }
        ns
    }

    /// Whether the TSC is the clock now (tests).
    #[cfg(test)]
    pub(super) fn ready() -> bool {
        STATE.load(Ordering::Acquire) == READY
    }

    /// Whether the TSC will be the clock once the rate is measured (tests).
    #[cfg(test)]
    pub(super) fn usable() -> bool {
        kernel_uses_tsc()
    }
}

/// The monotonic clock in nanoseconds from an unspecified start.
#[cfg(all(target_os = "linux", target_pointer_width = "64", not(miri)))]
fn monotonic_ns() -> u64 {
    /// `struct timespec` of 64-bit Linux (glibc and musl): two 64-bit fields.
    #[repr(C)]
    struct Timespec {
        sec: i64,
        nsec: i64,
    }
    extern "C" {
        fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
    }
    const CLOCK_MONOTONIC: i32 = 1;
    let mut ts = Timespec { sec: 0, nsec: 0 };
    // SAFETY: `ts` is a valid, writable `timespec` for the call; the C
    // library std links on Linux provides `clock_gettime`.
    let r = unsafe { clock_gettime(CLOCK_MONOTONIC, &mut ts) };
    // Cannot fail for CLOCK_MONOTONIC with a valid pointer (std's `Instant`
    // treats a failure as impossible too).
    debug_assert_eq!(r, 0);
    (ts.sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.nsec as u64)
}

/// The monotonic clock in nanoseconds from an unspecified start.
#[cfg(not(all(target_os = "linux", target_pointer_width = "64", not(miri))))]
fn monotonic_ns() -> u64 {
    use std::time::Instant;
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

impl Semaphore {
    /// Who holds this semaphore's permits and who waits, in queue order
    /// (one snapshot, taken under the queue's lock).
    ///
    /// A local semaphore lives in one process, so its holders are that
    /// process: `holders` has one entry (label [`default_label`], this
    /// process's host and pid) when any permit is held, and `held_for` is
    /// `None` (timing each grant would cost the uncontended path a clock
    /// read). `waiters` are the queued requests, with `waiting_for` since
    /// each was queued.
    ///
    /// `total` is the semaphore's nominal size: the permits it was created
    /// with, plus [`add_permits`](Self::add_permits), minus
    /// [`forget_permits`](Self::forget_permits). A guard's `forget` does not
    /// change it (its permits count as held: whoever took them over, such as
    /// the C ABI's caller, releases them later), and
    /// [`release`](Self::release) is taken to give back what was acquired.
    /// A release beyond that (which a local semaphore allows) shows in
    /// `total` only while its extra permits are available or granted to
    /// waiters: the local semaphore does not count what is held, so once
    /// they are acquired again, `total` and the holder's count are the
    /// nominal ones (a holder of 4 on a semaphore of 3 that one such release
    /// grew is reported holding 3). Grow it with
    /// [`add_permits`](Self::add_permits) to have `inspect` count them.
    ///
    /// ```
    /// use std::pin::pin;
    /// use volt_sem::Semaphore;
    /// # futures::executor::block_on(async {
    /// let sem = Semaphore::new(3);
    /// let held = sem.acquire(2).await.unwrap();
    /// let mut waiting = pin!(sem.acquire(3)); // queued behind the holder
    /// assert!(futures::poll!(waiting.as_mut()).is_pending());
    /// let i = sem.inspect();
    /// assert_eq!((i.total, i.available, i.closed), (3, 0, false));
    /// assert_eq!(i.holders.len(), 1);
    /// assert_eq!(i.holders[0].permits, 2); // and 1 is granted to the waiter
    /// assert_eq!(i.holders[0].pid, std::process::id());
    /// assert_eq!((i.waiters[0].permits, i.waiters[0].granted), (3, 1));
    /// assert_eq!(i.available + i.held() + i.granted_to_waiters(), i.total);
    /// # drop(held);
    /// # });
    /// ```
    pub fn inspect(&self) -> Inspection {
        // Under the lock, only numbers (one growing buffer): the records,
        // with their strings, are built after it, so that a long queue
        // holds releasers up for a copy, not for two allocations a waiter.
        let mut queue: Vec<(usize, usize, u64)> = Vec::new();
        let (available, closed, nominal, now) = self.snapshot(|word, nominal, list| {
            list.for_each(|w| {
                let requested = w.requested.load(core::sync::atomic::Ordering::Relaxed);
                // SAFETY: lock-guarded fields of a queued waiter; the lock is
                // held for the whole walk.
                let remaining = w.remaining.with(|r| unsafe { *r });
                // SAFETY: as above.
                let queued_at = w.queued_at.with(|q| unsafe { *q });
                queue.push((requested, requested.saturating_sub(remaining), queued_at));
            });
            (
                word >> Semaphore::STATE_SHIFT,
                word & Semaphore::STATE_CLOSED != 0,
                nominal,
                stamp(),
            )
        });
        let process = Process::this(None);
        let waiters: Vec<QueuedWaiter> = queue
            .iter()
            .enumerate()
            .map(|(position, &(requested, granted, queued_at))| {
                let waiting_for = Duration::from_nanos(now.saturating_sub(queued_at));
                QueuedWaiter::new(&process, requested, granted, waiting_for, position)
            })
            .collect();
        let granted: usize = waiters.iter().map(|w| w.granted).sum();
        let total = nominal.max(available + granted);
        let held = total - available - granted;
        let holders = if held > 0 {
            vec![Holder::new(&process, held, None)]
        } else {
            Vec::new()
        };
        Inspection::new(total, available, closed, holders, waiters)
    }
}

/// A semaphore as `inspect()` saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Inspection {
    /// The number of permits the semaphore has.
    pub total: usize,
    /// Permits free now.
    pub available: usize,
    /// Whether the semaphore is closed (every acquire fails).
    pub closed: bool,
    /// Who holds permits: one entry per holding process (per Redis session:
    /// a process with several connected handles may appear once per
    /// handle). Largest holders are not sorted first: the order is the
    /// backend's (for Redis, session order; for a named semaphore, slot
    /// order).
    pub holders: Vec<Holder>,
    /// Who waits, in queue order: `waiters[i].position == i`, and
    /// `waiters[0]` is the next to be served.
    pub waiters: Vec<QueuedWaiter>,
}

impl Inspection {
    /// Permits held by the holders listed.
    pub fn held(&self) -> usize {
        self.holders.iter().map(|h| h.permits).sum()
    }

    /// Permits already granted to queued waiters (partial grants).
    pub fn granted_to_waiters(&self) -> usize {
        self.waiters.iter().map(|w| w.granted).sum()
    }
}

/// A process (or Redis session) that holds permits.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Holder {
    /// The label of the handle that holds them.
    pub label: String,
    /// The holder's host name.
    pub host: String,
    /// The holder's process id.
    pub pid: u32,
    /// Permits it holds.
    pub permits: usize,
    /// Time since its oldest grant that is still held; `None` where the
    /// backend does not time grants (see each backend's `inspect`).
    pub held_for: Option<Duration>,
    /// Redis: what remains of the holder's lease, by the server's clock.
    /// `None` on the other backends (they have no lease).
    pub lease_remaining: Option<Duration>,
    /// Redis: the fencing token of the holder's latest grant. `None` on the
    /// other backends.
    pub token: Option<u64>,
}

/// A queued request.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct QueuedWaiter {
    /// The label of the handle that queued it.
    pub label: String,
    /// The waiter's host name.
    pub host: String,
    /// The waiter's process id.
    pub pid: u32,
    /// Permits requested.
    pub permits: usize,
    /// Permits granted to it so far (a weighted request is filled across
    /// releases; they go back to the queue if it is cancelled).
    pub granted: usize,
    /// Time since it was queued.
    pub waiting_for: Duration,
    /// Its place in the queue: 0 is the next to be served.
    pub position: usize,
}

impl Holder {
    /// A holder record (for the backend crates; fields can be added to
    /// these types without breaking their users, so they are not built
    /// with a struct literal outside this crate).
    #[doc(hidden)]
    pub fn new(process: &Process, permits: usize, held_for: Option<Duration>) -> Self {
        Holder {
            label: process.label.clone(),
            host: process.host.clone(),
            pid: process.pid,
            permits,
            held_for,
            lease_remaining: None,
            token: None,
        }
    }

    /// Sets the Redis fields.
    #[doc(hidden)]
    pub fn with_lease(mut self, lease_remaining: Duration, token: u64) -> Self {
        self.lease_remaining = Some(lease_remaining);
        self.token = Some(token);
        self
    }
}

impl QueuedWaiter {
    /// A waiter record (see [`Holder::new`]).
    #[doc(hidden)]
    pub fn new(
        process: &Process,
        permits: usize,
        granted: usize,
        waiting_for: Duration,
        position: usize,
    ) -> Self {
        QueuedWaiter {
            label: process.label.clone(),
            host: process.host.clone(),
            pid: process.pid,
            permits,
            granted,
            waiting_for,
            position,
        }
    }
}

impl Inspection {
    /// An inspection record (see [`Holder::new`]).
    #[doc(hidden)]
    pub fn new(
        total: usize,
        available: usize,
        closed: bool,
        holders: Vec<Holder>,
        waiters: Vec<QueuedWaiter>,
    ) -> Self {
        Inspection {
            total,
            available,
            closed,
            holders,
            waiters,
        }
    }
}

/// Who a handle is: its label, host and pid, as the backends record them.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Process {
    /// The handle's label (default: [`default_label`]).
    pub label: String,
    /// The host name ([`hostname`]).
    pub host: String,
    /// The process id.
    pub pid: u32,
}

impl Process {
    /// This process, labelled `label` (`None`: [`default_label`]).
    pub fn this(label: Option<&str>) -> Self {
        let host = hostname();
        let pid = std::process::id();
        let label = match label {
            Some(l) => l.to_owned(),
            None => format!("{host}:{pid}"),
        };
        Process { label, host, pid }
    }
}

/// `"<hostname>:<pid>"` of this process: the label of a handle opened
/// without one.
pub fn default_label() -> String {
    Process::this(None).label
}

/// This machine's host name (`gethostname`; the `COMPUTERNAME` variable on
/// Windows); `"localhost"` if it cannot be read.
pub fn hostname() -> String {
    #[cfg(unix)]
    {
        extern "C" {
            fn gethostname(name: *mut core::ffi::c_char, len: usize) -> core::ffi::c_int;
        }
        let mut buf = [0u8; 256];
        // SAFETY: `buf` is writable for its whole length; gethostname writes
        // at most `len` bytes and we read only up to the first NUL within it.
        let rc = unsafe { gethostname(buf.as_mut_ptr().cast(), buf.len()) };
        if rc == 0 {
            let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
            if end > 0 {
                return String::from_utf8_lossy(&buf[..end]).into_owned();
            }
        }
    }
    #[cfg(windows)]
    {
        if let Ok(h) = std::env::var("COMPUTERNAME") {
            if !h.is_empty() {
                return h;
            }
        }
    }
    "localhost".to_owned()
}

/// The longest label the backends keep, in bytes: a longer one is refused
/// at `open`/`connect` (a named semaphore stores labels in fixed slots of
/// its segment, and Redis client names must stay short).
pub const MAX_LABEL_LEN: usize = 128;

/// What [`is_valid_label`] asks, as the error messages say it.
pub const LABEL_RULE: &str = "invalid label (1 to 128 bytes of printable ASCII, without spaces)";

/// Whether `label` can be a handle's label: 1 to [`MAX_LABEL_LEN`] bytes of
/// printable ASCII without spaces (what Redis accepts as a client name, and
/// what prints as one column in the `volt-sem` command line's tables).
pub fn is_valid_label(label: &str) -> bool {
    !label.is_empty() && label.len() <= MAX_LABEL_LEN && label.bytes().all(|b| b.is_ascii_graphic())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Once the TSC is the clock of `stamp` (where the kernel keeps time
    /// with it), a span of stamps is the span of `Instant`s around it, to
    /// the precision of the measured rate. Bracketed: each stamp is read
    /// between two `Instant`s, so a preemption only widens the bounds.
    #[test]
    #[cfg(all(target_os = "linux", target_arch = "x86_64", not(miri), not(volt_loom)))]
    fn the_tsc_clock_agrees_with_clock_monotonic() {
        use std::time::Instant;
        if !tsc::usable() {
            return; // CLOCK_MONOTONIC itself: nothing to compare
        }
        let start = Instant::now();
        while !tsc::ready() {
            stamp(); // the rate is set by a stamp 50 ms after the first
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "the rate was never set"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        let bracket = || {
            let before = Instant::now();
            let s = stamp();
            (before, s, Instant::now())
        };
        let (a0, s0, b0) = bracket();
        std::thread::sleep(Duration::from_millis(30));
        let (a1, s1, b1) = bracket();
        let stamps = Duration::from_nanos(s1 - s0);
        let (shortest, longest) = (a1 - b0, b1 - a0);
        // 0.1%: the rate's error is under 1 ppm, NTP slews at most 500 ppm.
        assert!(
            stamps >= shortest - shortest / 1000,
            "{stamps:?} < {shortest:?}"
        );
        assert!(
            stamps <= longest + longest / 1000,
            "{stamps:?} > {longest:?}"
        );

        // The TSC restarts (a suspend to RAM or disk resets it on most
        // machines; CLOCK_MONOTONIC goes on from where it was): the stamps
        // still go forward with the clock, never back nor frozen. (This
        // leaves the process's clock on CLOCK_MONOTONIC: last in this test.)
        let before = stamp();
        tsc::restart_tsc(1_000);
        let after = stamp();
        std::thread::sleep(Duration::from_millis(20));
        let later = stamp();
        // 1 ms: the TSC clock and CLOCK_MONOTONIC part by the rate's error
        // (at most 40 ppm) over this test's span, far less.
        assert!(after + 1_000_000 >= before, "back from {before} to {after}");
        assert!(
            later.saturating_sub(before) >= 19_000_000,
            "20 ms after a TSC reset: {before} then {after} then {later}"
        );
    }

    #[test]
    #[cfg_attr(miri, ignore = "gethostname is a foreign call")]
    fn default_label_is_host_and_pid() {
        let l = default_label();
        assert_eq!(l, format!("{}:{}", hostname(), std::process::id()));
        assert!(!hostname().is_empty());
    }

    #[test]
    fn labels() {
        assert!(is_valid_label("worker-3@eu"));
        assert!(!is_valid_label(""));
        assert!(!is_valid_label("a b"));
        assert!(!is_valid_label("é"));
        assert!(!is_valid_label(&"x".repeat(MAX_LABEL_LEN + 1)));
        assert!(is_valid_label(&"x".repeat(MAX_LABEL_LEN)));
    }
}
