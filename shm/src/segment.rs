//! The segment layout and the algorithm that runs on it: the lock-free fast
//! path ([`fast_take`], [`fast_release`]) and everything else under the
//! segment lock ([`Locked`]).
//!
//! Nothing here talks to the OS: every function reads and writes atomics of a
//! [`Segment`], and the few things only the OS knows (is process record `i`
//! dead?) come in as closures. That keeps the algorithm testable over plain
//! memory (the crash tests below) and model-checkable (`src/loom_model.rs`),
//! and the crash-repair argument local: see the crate documentation, *Crash
//! safety*, for which words are *truth* and which are *derived*, and *The
//! fast path* for the state word and the per-process accounting word.

use core::sync::atomic::Ordering::{self, *};

use crate::sync::{AtomicU32, AtomicU64};
// The words only `inspect()` reads (labels, host names, time stamps): plain
// atomics even in the loom model, which checks the algorithm and never reads
// them (loom would only multiply its interleavings by their stores).
use core::sync::atomic::{AtomicU32 as InfoU32, AtomicU64 as InfoU64};
use volt_sem::inspect::{Holder, Inspection, Process, QueuedWaiter, MAX_LABEL_LEN};

/// `b"VOLTSHM\x01"`: the first eight bytes of every segment.
pub(crate) const MAGIC: u64 = u64::from_le_bytes(*b"VOLTSHM\x01");
/// Bumped whenever the layout below changes. 2: the state word and the
/// per-process accounting word of the lock-free fast path. 3: what
/// `inspect()` reads: each process record's label, host name and
/// `held_since` stamp, each slot's `since` stamp; also (changed in place
/// before 3 was released) `set_total`'s debt: `Header::debt`, the state
/// word's `DEBT` bit (so `SHIFT` is 4) and the slot state `FAILED`. 4: the
/// header records whose `pthread_mutex_t` the segment lock is
/// ([`Header::lock_abi`], where 3 had a reserved 0): glibc's and musl's
/// differ (a musl process and a glibc one locked different words of it, so
/// both entered; a glibc process took a musl-made lock for one held by
/// thread 132). Also tells 0.1.0's segments from those of the layout-3
/// snapshots from before `set_total`, whose state word had `SHIFT` 3.
pub(crate) const LAYOUT_VERSION: u32 = 4;
/// [`Header::lock_abi`] of this build: whose `pthread_mutex_t` the segment
/// lock is. Processes of different C libraries cannot share one (each
/// library reads and writes its own fields of it), so such a segment is
/// refused ([`Error::LibcMismatch`](crate::Error::LibcMismatch)).
pub(crate) const LOCK_ABI: u32 = if cfg!(target_env = "gnu") {
    1
} else if cfg!(target_env = "musl") {
    2
} else if cfg!(target_env = "uclibc") {
    3
} else {
    // Any other C library (Android's bionic, OpenHarmony's...): one number
    // for all of them, so two of them are not told apart; the named
    // semaphore is built and tested for glibc and musl (docs/platforms.md).
    0xFFFF
};
/// Capacity of the FIFO of waiter slots (queued requests, all processes).
#[cfg(not(volt_loom))]
pub const MAX_WAITERS: usize = 1024;
/// Capacity of the process table (processes attached at once).
#[cfg(not(volt_loom))]
pub const MAX_PROCESSES: usize = 128;
/// The loom model runs on a small segment (every atomic is tracked).
#[cfg(volt_loom)]
pub const MAX_WAITERS: usize = 4;
/// The loom model runs on a small segment (every atomic is tracked).
#[cfg(volt_loom)]
pub const MAX_PROCESSES: usize = 4;
/// In-flight markers per process record: one per thread of the process that
/// uses the fast path (more threads fall back to the `busy` count).
#[cfg(not(volt_loom))]
pub(crate) const LANES: usize = 16;
#[cfg(volt_loom)]
pub(crate) const LANES: usize = 2;
/// The largest `total` a segment can be created with, and the largest request:
/// 2^53 - 1, so that every count is exact in a JavaScript number.
pub const MAX_PERMITS: usize = (1 << 53) - 1;

pub(crate) const NIL: u32 = u32::MAX;

/// Room for a host name in a process record, in bytes (Linux's
/// `HOST_NAME_MAX` is 64): a longer one is cut there.
pub const MAX_HOST_LEN: usize = 64;
/// A label in a process record: `MAX_LABEL_LEN` bytes, as 8-byte words.
const LABEL_WORDS: usize = MAX_LABEL_LEN / 8;
const HOST_WORDS: usize = MAX_HOST_LEN / 8;

/// `Header::recount_pending`: a recount attempt already gave up.
const GAVE_UP: u32 = 2;

/// The state word (`Header::state`): `available << SHIFT | DEBT | FROZEN |
/// QUEUED | CLOSED`.
pub(crate) mod word {
    /// Set once by `close` (derived from `Header::closed`).
    pub(crate) const CLOSED: u64 = 0b001;
    /// The FIFO is not empty (then `available == 0`): the fast path is shut.
    pub(crate) const QUEUED: u64 = 0b010;
    /// A locker is taking a census of the per-process words: the fast path is
    /// shut (only ever set under the segment lock).
    pub(crate) const FROZEN: u64 = 0b100;
    /// A shrink of the total (`Locked::set_total`) left a debt
    /// (`Header::debt`, then `available == 0`): permits given back must pay
    /// it before anything else, so the fast release is shut (derived from
    /// `Header::debt != 0`, only ever changed under the segment lock).
    pub(crate) const DEBT: u64 = 0b1000;
    pub(crate) const SHIFT: u32 = 4;
    /// One permit in the state word.
    pub(crate) const ONE: u64 = 1 << SHIFT;
    pub(crate) const fn available(s: u64) -> u64 {
        s >> SHIFT
    }
}

/// The per-process accounting word (`Proc::acct`): `held << BUSY_BITS | busy`.
pub(crate) mod acct {
    /// `held` fits in the remaining 53 bits (`MAX_PERMITS`).
    pub(crate) const BUSY_BITS: u32 = 11;
    /// `busy`: how many of the process's threads are inside a fast operation,
    /// between their announcement and their last step.
    pub(crate) const BUSY: u64 = (1 << BUSY_BITS) - 1;
    /// One permit held.
    pub(crate) const HELD: u64 = 1 << BUSY_BITS;
    pub(crate) const fn held(a: u64) -> u64 {
        a >> BUSY_BITS
    }
    pub(crate) const fn busy(a: u64) -> u64 {
        a & BUSY
    }
}

/// Every write of the algorithm goes through `put` (stores) or one of the
/// read-modify-writes below, so that the crash tests can stop an operation
/// before any of them (a process dying there: the writes before reach memory,
/// none after).
pub(crate) trait Put<T> {
    fn put(&self, v: T, o: Ordering);
}

impl Put<u32> for AtomicU32 {
    #[inline(always)]
    fn put(&self, v: u32, o: Ordering) {
        crash_point();
        self.store(v, o)
    }
}

impl Put<u64> for AtomicU64 {
    #[inline(always)]
    fn put(&self, v: u64, o: Ordering) {
        crash_point();
        self.store(v, o)
    }
}

/// The read-modify-writes of the state and accounting words (each one write,
/// each one crash point).
pub(crate) trait Rmw {
    fn cas(&self, cur: u64, new: u64) -> Result<u64, u64>;
    fn add(&self, v: u64) -> u64;
    fn sub(&self, v: u64) -> u64;
    fn or(&self, v: u64) -> u64;
    fn and(&self, v: u64) -> u64;
}

// SeqCst throughout: the census (`Locked::quiesce`) relies on one total order
// of the state word's RMWs and the accounting words' RMWs and loads (see
// *The fast path* in the crate docs). On x86-64 every RMW is a locked
// instruction whatever the ordering, so this costs nothing there.
impl Rmw for AtomicU64 {
    #[inline(always)]
    fn cas(&self, cur: u64, new: u64) -> Result<u64, u64> {
        crash_point();
        self.compare_exchange(cur, new, SeqCst, SeqCst)
    }
    #[inline(always)]
    fn add(&self, v: u64) -> u64 {
        crash_point();
        self.fetch_add(v, SeqCst)
    }
    #[inline(always)]
    fn sub(&self, v: u64) -> u64 {
        crash_point();
        self.fetch_sub(v, SeqCst)
    }
    #[inline(always)]
    fn or(&self, v: u64) -> u64 {
        crash_point();
        self.fetch_or(v, SeqCst)
    }
    #[inline(always)]
    fn and(&self, v: u64) -> u64 {
        crash_point();
        self.fetch_and(v, SeqCst)
    }
}

#[cfg(not(any(test, volt_loom)))]
#[inline(always)]
fn crash_point() {}

#[cfg(any(test, volt_loom))]
fn crash_point() {
    crash::tick();
}

/// Crash injection (tests and the loom model): a per-thread budget of writes;
/// the write that would exceed it unwinds instead, leaving the operation
/// abandoned after exactly that many writes, as a process killed there would.
#[cfg(any(test, volt_loom))]
pub(crate) mod crash {
    use std::cell::Cell;

    // Under loom, model threads share OS threads: loom's own thread-locals.
    #[cfg(volt_loom)]
    loom::thread_local! {
        static BUDGET: Cell<Option<u32>> = Cell::new(None);
    }
    #[cfg(not(volt_loom))]
    std::thread_local! {
        static BUDGET: Cell<Option<u32>> = const { Cell::new(None) };
    }

    pub(crate) struct Crashed;

    pub(crate) fn tick() {
        BUDGET.with(|b| match b.get() {
            Some(0) => std::panic::resume_unwind(Box::new(Crashed)),
            Some(n) => b.set(Some(n - 1)),
            None => {}
        });
    }

    /// Runs `f`, dying before its `budget + 1`-th write. Returns whether it died.
    pub(crate) fn run(budget: u32, f: impl FnOnce()) -> bool {
        BUDGET.with(|b| b.set(Some(budget)));
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        BUDGET.with(|b| b.set(None));
        match r {
            Ok(()) => false,
            Err(e) if e.is::<Crashed>() => true,
            Err(e) => std::panic::resume_unwind(e),
        }
    }
}

/// Slot states (`Slot::state`).
pub(crate) mod slot_state {
    /// Unused.
    pub(crate) const FREE: u32 = 0;
    /// In the FIFO; `remaining` permits still missing.
    pub(crate) const QUEUED: u32 = 1;
    /// Out of the FIFO, fully granted: its `requested` permits belong to the
    /// slot until the owner process collects them into its `held`.
    pub(crate) const GRANTED: u32 = 2;
    /// Out of the FIFO, closed: holds nothing; waits for the owner to free it.
    pub(crate) const CLOSED: u32 = 3;
    /// Out of the FIFO, failed because it asks for more than the total
    /// after `set_total` shrank it: holds nothing (its partial grant was
    /// handed on); waits for the owner to free it, like CLOSED.
    pub(crate) const FAILED: u32 = 4;
}

/// Process-record states (`Proc::state`).
pub(crate) mod proc_state {
    pub(crate) const FREE: u32 = 0;
    pub(crate) const LIVE: u32 = 1;
}

/// The fixed header. Immutable after initialisation except the words from
/// `state` on.
#[repr(C)]
pub(crate) struct Header {
    /// Written last at initialisation (Release): a segment whose magic is set is
    /// fully initialised.
    pub(crate) magic: AtomicU64,
    pub(crate) version: AtomicU32,
    /// Whose `pthread_mutex_t` [`Segment::lock`] is: the creator's
    /// [`LOCK_ABI`] (1 glibc, 2 musl). Checked at `open` with the version.
    pub(crate) lock_abi: AtomicU32,
    /// `size_of::<Segment>()` of the layout that created it.
    pub(crate) size: AtomicU64,
    /// Truth: the permits of the semaphore: set at creation, changed under
    /// the segment lock by `set_total`.
    pub(crate) total: AtomicU64,
    // ---- changed under the segment lock, and by the fast path ----
    /// Derived: `available << SHIFT | DEBT | FROZEN | QUEUED | CLOSED` (see
    /// [`word`]).
    /// The fast path changes it by CAS without the lock.
    pub(crate) state: AtomicU64,
    // ---- guarded by the segment lock from here on ----
    /// Truth: set by `close`, cleared by `reopen`.
    pub(crate) closed: AtomicU32,
    /// Derived: number of QUEUED slots.
    pub(crate) queue_len: AtomicU32,
    /// Derived: oldest QUEUED slot, or NIL.
    pub(crate) head: AtomicU32,
    /// Derived: youngest QUEUED slot, or NIL.
    pub(crate) tail: AtomicU32,
    /// Truth-ish: the next ticket; repair raises it above every queued ticket.
    pub(crate) next_seq: AtomicU64,
    /// Where the search for a free slot starts (a hint only).
    pub(crate) free_hint: AtomicU32,
    /// Diagnostics: how many times a locker found the lock's owner dead.
    pub(crate) repairs: AtomicU32,
    /// Diagnostics: how many dead process records were reclaimed.
    pub(crate) reclaims: AtomicU64,
    /// A recount is owed (1): a process died inside a fast operation; or
    /// owed and an attempt already gave up waiting for a quiescent moment
    /// (`GAVE_UP`: later attempts only wait briefly).
    pub(crate) recount_pending: AtomicU32,
    /// Diagnostics: how many recounts ran.
    pub(crate) recounts: AtomicU32,
    /// Derived (a recount rebuilds it from the truth as `Σ held + Σ granted
    /// − total` when positive): permits a shrink of `total` could not take
    /// from the counter because they were held. Paid first by every permit
    /// given back (release, cancel, reclaim); while it is not 0 the counter
    /// is 0 and the state word has `DEBT`.
    pub(crate) debt: AtomicU64,
}

/// Room for a `pthread_mutex_t` (40 bytes on x86-64 glibc, 48 on aarch64).
///
/// An `UnsafeCell`: the pthread functions write the mutex through a pointer
/// derived from a shared `&Segment` (other processes and threads hold one
/// too), which is only allowed for bytes inside an `UnsafeCell`.
#[repr(C, align(64))]
pub(crate) struct LockCell(pub(crate) core::cell::UnsafeCell<[u64; 8]>);

// SAFETY: Rust code never reads or writes the cell's bytes: only the
// process-shared pthread mutex functions do, through `sys::mutex_ptr`, and
// they synchronise their own accesses (across threads and processes).
unsafe impl Sync for LockCell {}

/// One attached process.
#[repr(C, align(64))]
pub(crate) struct Proc {
    /// Truth: FREE or LIVE; stored last (Release) when attaching.
    pub(crate) state: AtomicU32,
    /// The futex word of the process's doorbell thread. Never reset.
    pub(crate) doorbell: AtomicU32,
    /// Diagnostics only (liveness comes from the OFD lock, not from pids).
    pub(crate) pid: AtomicU32,
    pub(crate) _reserved: AtomicU32,
    /// Diagnostics only: the process's start time in clock ticks since boot.
    pub(crate) start_time: AtomicU64,
    /// Truth: `held << BUSY_BITS | busy` (see [`acct`]): permits this process
    /// holds (acquired and collected, not released), and how many of its
    /// threads are inside a fast operation. Changed only by RMW (several
    /// threads of the process change it at once, with or without the lock).
    pub(crate) acct: AtomicU64,
    /// Per-thread in-flight markers (see [`fast_take`]): lane `i` is written
    /// only by the thread of this process that owns it, with plain stores;
    /// odd while that thread is inside a fast operation.
    pub(crate) lanes: [AtomicU64; LANES],
    /// Diagnostics (`inspect`): the shared clock ([`crate::clock::coarse`])
    /// when this record's `held` last rose from 0, stored by whichever
    /// operation raised it (fast path or not). Meaningful only while `held`
    /// is not 0.
    pub(crate) held_since: InfoU64,
    /// Diagnostics (`inspect`): the label the process attached with, and its
    /// host name (cut to [`MAX_HOST_LEN`] bytes), as byte lengths and bytes
    /// (little-endian in each word). Written at attach, before the record is
    /// marked LIVE; read under the lock.
    pub(crate) label_len: InfoU32,
    pub(crate) host_len: InfoU32,
    pub(crate) label: [InfoU64; LABEL_WORDS],
    pub(crate) host: [InfoU64; HOST_WORDS],
}

/// One queued (or completed, not yet collected) request.
#[repr(C)]
pub(crate) struct Slot {
    /// Truth: see [`slot_state`]; stored last (Release) when a slot is filled.
    /// Also the futex word a blocked thread of the owner sleeps on when the
    /// slot is `direct`.
    pub(crate) state: AtomicU32,
    /// Truth: index of the owning process record.
    pub(crate) owner: AtomicU32,
    /// Truth: permits asked for.
    pub(crate) requested: AtomicU64,
    /// Truth: permits still missing (QUEUED only).
    pub(crate) remaining: AtomicU64,
    /// Truth: the ticket; FIFO order is ticket order.
    pub(crate) seq: AtomicU64,
    /// Derived: links of the FIFO, towards the head (older) and the tail.
    pub(crate) prev: AtomicU32,
    pub(crate) next: AtomicU32,
    /// 1: the owner waits on `state` itself (a blocked thread), so a grant or
    /// close wakes that futex instead of the owner's doorbell thread.
    pub(crate) direct: AtomicU32,
    pub(crate) _reserved: AtomicU32,
    /// Diagnostics (`inspect`): the shared clock ([`crate::clock::now`]) when
    /// the request was queued; once GRANTED, when it was completed.
    pub(crate) since: InfoU64,
}

/// The whole segment, as mapped.
#[repr(C)]
pub(crate) struct Segment {
    pub(crate) hdr: Header,
    pub(crate) lock: LockCell,
    pub(crate) procs: [Proc; MAX_PROCESSES],
    pub(crate) slots: [Slot; MAX_WAITERS],
}

/// The size of a segment of this layout.
pub(crate) const SEGMENT_SIZE: usize = core::mem::size_of::<Segment>();

#[cfg(any(test, volt_loom))]
impl Segment {
    /// A segment in ordinary memory, initialised with `total` permits.
    pub(crate) fn boxed(total: u64) -> Box<Segment> {
        #[cfg(not(volt_loom))]
        // SAFETY: a fresh allocation with `Segment`'s layout (null checked),
        // owned by the Box; every field is an atomic integer or an integer
        // array, for which all-zero is a valid value.
        let seg: Box<Segment> = unsafe {
            let layout = std::alloc::Layout::new::<Segment>();
            let p = std::alloc::alloc_zeroed(layout) as *mut Segment;
            if p.is_null() {
                std::alloc::handle_alloc_error(layout);
            }
            Box::from_raw(p)
        };
        #[cfg(volt_loom)]
        let seg = {
            let a32 = || AtomicU32::new(0);
            let a64 = || AtomicU64::new(0);
            Box::new(Segment {
                hdr: Header {
                    magic: a64(),
                    version: a32(),
                    lock_abi: a32(),
                    size: a64(),
                    total: a64(),
                    state: a64(),
                    closed: a32(),
                    queue_len: a32(),
                    head: a32(),
                    tail: a32(),
                    next_seq: a64(),
                    free_hint: a32(),
                    repairs: a32(),
                    reclaims: a64(),
                    recount_pending: a32(),
                    recounts: a32(),
                    debt: a64(),
                },
                lock: LockCell(core::cell::UnsafeCell::new([0; 8])),
                procs: core::array::from_fn(|_| Proc {
                    state: a32(),
                    doorbell: a32(),
                    pid: a32(),
                    _reserved: a32(),
                    start_time: a64(),
                    acct: a64(),
                    lanes: core::array::from_fn(|_| a64()),
                    held_since: InfoU64::new(0),
                    label_len: InfoU32::new(0),
                    host_len: InfoU32::new(0),
                    label: core::array::from_fn(|_| InfoU64::new(0)),
                    host: core::array::from_fn(|_| InfoU64::new(0)),
                }),
                slots: core::array::from_fn(|_| Slot {
                    state: a32(),
                    owner: a32(),
                    requested: a64(),
                    remaining: a64(),
                    seq: a64(),
                    prev: a32(),
                    next: a32(),
                    direct: a32(),
                    _reserved: a32(),
                    since: InfoU64::new(0),
                }),
            })
        };
        Locked::new(&seg).init(total);
        seg
    }
}

/// Processes whose doorbells, and direct slots whose futex words, to wake
/// after unlocking.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rings {
    pub(crate) procs: u128,
    pub(crate) slots: [u64; MAX_WAITERS.div_ceil(64)],
}

impl Rings {
    pub(crate) fn proc(p: u32) -> Rings {
        let mut r = Rings::default();
        r.procs |= 1u128 << p;
        r
    }
    fn add_slot(&mut self, seg: &Segment, i: u32) {
        let s = &seg.slots[i as usize];
        let owner = s.owner.load(Relaxed);
        if s.direct.load(Relaxed) != 0 {
            self.slots[i as usize / 64] |= 1u64 << (i % 64);
        } else if (owner as usize) < MAX_PROCESSES {
            // (An owner out of range is garbage written by another process:
            // nobody to ring.)
            self.procs |= 1u128 << owner;
        }
    }
    pub(crate) fn merge(&mut self, other: Rings) {
        self.procs |= other.procs;
        for (a, b) in self.slots.iter_mut().zip(other.slots) {
            *a |= b;
        }
    }
    /// The process records to ring, lowest first.
    pub(crate) fn iter(self) -> impl Iterator<Item = usize> {
        bits(self.procs)
    }
    /// The direct slots to wake, lowest first.
    pub(crate) fn slots(self) -> impl Iterator<Item = usize> {
        self.slots
            .into_iter()
            .enumerate()
            .flat_map(|(k, w)| bits(w as u128).map(move |b| k * 64 + b))
    }
    pub(crate) fn is_empty(&self) -> bool {
        self.procs == 0 && self.slots.iter().all(|&w| w == 0)
    }
}

/// The set bits of `bits`, lowest first (only as many steps as bits set).
fn bits(mut bits: u128) -> impl Iterator<Item = usize> {
    core::iter::from_fn(move || {
        if bits == 0 {
            return None;
        }
        let i = bits.trailing_zeros() as usize;
        bits &= bits - 1;
        Some(i)
    })
}

/// Why an operation under the lock failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OpError {
    Closed,
    /// More than the total (which `set_total` may have lowered since the
    /// caller checked it).
    TooManyPermits,
    NoPermits,
    QueueFull,
    NotHeld {
        held: u64,
    },
    ProcessTableFull,
}

/// What `enqueue` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Enqueued {
    /// Taken at once.
    Ready,
    /// Queued in `slot` with ticket `seq`.
    Queued { slot: u32, seq: u64 },
}

/// What `finish` found in a slot the caller owns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SlotOutcome {
    /// Was queued: removed; `returned` partial permits were handed on.
    Cancelled { returned: u64 },
    /// Was granted: the permits moved into the owner's `held`.
    Granted,
    /// Was closed.
    Closed,
    /// Was failed by `set_total`: it asked for more than the new total.
    TooManyPermits,
    /// Not the caller's slot any more (should not happen; reported, not trusted).
    Gone,
}

/// Sums used by the conservation check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Census {
    /// The total now (see `SharedSemaphore::set_total`).
    pub total: u64,
    /// The permits in the counter.
    pub available: u64,
    /// Σ `held` of LIVE process records.
    pub held: u64,
    /// Σ granted-so-far of QUEUED slots plus Σ requested of GRANTED slots
    /// not yet collected by their owner.
    pub granted: u64,
    /// QUEUED slots.
    pub queued: u32,
    /// LIVE process records.
    pub live: u32,
    /// How many times a locker found the lock's owner dead and repaired.
    pub repairs: u32,
    /// How many dead (or detached) process records were reclaimed.
    pub reclaims: u64,
    /// How many recounts of the counter ran (after a death inside a fast
    /// operation, or a repair).
    pub recounts: u32,
    /// Permits a shrink of the total still waits for: held (or granted)
    /// beyond the new total, paid first by the permits that come back.
    /// While it is not 0, `available` is 0.
    pub debt: u64,
}

impl Census {
    /// `available + held + granted == total + debt`.
    pub fn conserved(&self) -> bool {
        // Checked: the sums come from shared memory another process may have
        // scribbled on.
        self.available
            .checked_add(self.held)
            .and_then(|x| x.checked_add(self.granted))
            == self.total.checked_add(self.debt)
    }
}

// ------------------------------------------------------------------ fast path

/// What a lock-free attempt did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fast {
    /// Done, without the lock.
    Done,
    /// `release`: the process holds only `held` (nothing was changed).
    NotHeld { held: u64 },
    /// Not possible without the lock (queued, closed, frozen, not enough
    /// permits, or 2047 lane-less threads of this process inside the fast path):
    /// nothing was changed; take the slow path.
    Slow,
}

/// Takes `n` permits for process `me` without the lock, if nobody is queued,
/// the semaphore is open and `n` are available.
///
/// With the caller's `lane` (a thread's own lane of the record, see the
/// crate docs, *The fast path*), four writes: lane odd (plain store), take
/// (`available - n`, one CAS on the state word), `held + n` (one add), lane
/// even. Without one, three: announce (`busy + 1`), take, commit (`held + n`
/// and `busy - 1` in one add). Died after the first write: the mark says an
/// operation may be in flight, the counter is intact; after the take: the
/// permits are in transit (out of the counter, not yet in `held`) and the
/// mark says so. Either way the reclaim of the dead process, seeing the mark,
/// does not trust `held` and recounts (see `Locked::recount`).
#[inline]
pub(crate) fn fast_take(seg: &Segment, me: u32, lane: Option<u32>, n: u64) -> Fast {
    use word::*;
    let state = &seg.hdr.state;
    let proc = &seg.procs[me as usize];
    let acct = &proc.acct;
    let mut s = state.load(Relaxed);
    if s & (CLOSED | QUEUED | FROZEN | DEBT) != 0 || available(s) < n {
        return Fast::Slow;
    }
    let Some(lane) = lane else {
        if !announce(acct) {
            return Fast::Slow;
        }
        loop {
            if s & (CLOSED | QUEUED | FROZEN | DEBT) != 0 || available(s) < n {
                acct.sub(1);
                return Fast::Slow;
            }
            match state.cas(s, s - n * ONE) {
                Ok(_) => break,
                Err(now) => s = now,
            }
        }
        add_held(proc, n * acct::HELD - 1, n);
        return Fast::Done;
    };
    // The same with the caller's lane as the in-flight marker: plain stores
    // instead of the two `busy` RMWs.
    let w = &proc.lanes[lane as usize];
    // Even unless another process wrote garbage into our lane: then start
    // from the even value below it (only this thread writes the lane).
    let v = w.load(Relaxed) & !1;
    w.put(v.wrapping_add(1), Relaxed);
    loop {
        if s & (CLOSED | QUEUED | FROZEN | DEBT) != 0 || available(s) < n {
            w.put(v.wrapping_add(2), Release);
            return Fast::Slow;
        }
        match state.cas(s, s - n * ONE) {
            Ok(_) => break,
            Err(now) => s = now,
        }
    }
    add_held(proc, n * acct::HELD, n);
    w.put(v.wrapping_add(2), Release);
    Fast::Done
}

/// Gives back `n` permits that process `me` holds without the lock, if nobody
/// is queued (then there is nobody to hand them to: they go to the counter).
///
/// With a lane: lane odd, take out of `held` (`held - n`, one CAS on the
/// accounting word, which also checks `held >= n`), put into the counter (one
/// CAS on the state word), lane even. Without one, `busy + 1` rides on the
/// `held - n` CAS and `busy - 1` is a last add. Between the `held` and state
/// writes the permits are in transit, and the mark says so, as in
/// [`fast_take`]. If the state word turns QUEUED (or FROZEN, or DEBT: a
/// shrink's debt must be paid under the lock first) meanwhile, the
/// `held - n` is undone (one add, with `busy - 1` without a lane) and the
/// caller takes the lock.
#[inline]
pub(crate) fn fast_release(seg: &Segment, me: u32, lane: Option<u32>, n: u64) -> Fast {
    use word::*;
    let state = &seg.hdr.state;
    let proc = &seg.procs[me as usize];
    let acct = &proc.acct;
    let mut s = state.load(Relaxed);
    if s & (QUEUED | FROZEN | DEBT) != 0 {
        return Fast::Slow;
    }
    // With a lane, the in-flight marker is the lane (odd), not `busy`.
    let (lane, mark) = match lane {
        Some(l) => {
            let w = &proc.lanes[l as usize];
            // See `fast_take`.
            let v = w.load(Relaxed) & !1;
            w.put(v.wrapping_add(1), Relaxed);
            (Some((w, v.wrapping_add(2))), 0)
        }
        None => (None, 1),
    };
    let done = |lane: Option<(&AtomicU64, u64)>| {
        if let Some((w, v)) = lane {
            w.put(v, Release);
        }
    };
    let mut a = acct.load(Relaxed);
    loop {
        if acct::held(a) < n {
            done(lane);
            return Fast::NotHeld {
                held: acct::held(a),
            };
        }
        if acct::busy(a) == acct::BUSY {
            done(lane);
            return Fast::Slow;
        }
        match acct.cas(a, a - n * acct::HELD + mark) {
            Ok(_) => break,
            Err(now) => a = now,
        }
    }
    crate::hooks::in_fast_release();
    loop {
        // (A counter that would overflow is garbage: the lock's path decides.)
        let Some(new) = s
            .checked_add(n * ONE)
            .filter(|_| s & (QUEUED | FROZEN | DEBT) == 0)
        else {
            acct.add(n * acct::HELD - mark);
            done(lane);
            return Fast::Slow;
        };
        match state.cas(s, new) {
            Ok(_) => break,
            Err(now) => s = now,
        }
    }
    if mark != 0 {
        acct.sub(mark);
    }
    done(lane);
    Fast::Done
}

/// Collects the grant of `slot` (ticket `seq`), a GRANTED request of `me`,
/// into `me`'s `held` without the lock: what a blocked thread does when its
/// direct futex wake-up arrives, so that it does not contend for the lock
/// with the releaser that woke it.
///
/// Three writes: announce (`busy + 1`), free the slot (its permits are in
/// transit), commit (`held + requested`, `busy - 1`). Only the owner changes
/// a GRANTED slot of a live process, so the slot needs no CAS; a census in
/// progress (FROZEN, read after the announcement) sends the caller to the
/// lock instead (see `Locked::quiesce`).
#[inline]
pub(crate) fn fast_collect(seg: &Segment, me: u32, slot: u32, seq: u64) -> Fast {
    let s = &seg.slots[slot as usize];
    if s.state.load(Acquire) != slot_state::GRANTED
        || s.owner.load(Relaxed) != me
        || s.seq.load(Relaxed) != seq
    {
        return Fast::Slow;
    }
    let requested = s.requested.load(Relaxed);
    let proc = &seg.procs[me as usize];
    let acct = &proc.acct;
    if !announce(acct) {
        return Fast::Slow;
    }
    if seg.hdr.state.load(SeqCst) & word::FROZEN != 0 {
        acct.sub(1);
        return Fast::Slow;
    }
    s.state.put(slot_state::FREE, Release);
    add_held(
        proc,
        requested.wrapping_mul(acct::HELD).wrapping_sub(1),
        requested,
    );
    Fast::Done
}

/// The permits granted so far to a QUEUED slot: `requested - remaining`
/// (0, not a panic, if another process wrote a `remaining` above it).
fn partial(s: &Slot) -> u64 {
    s.requested
        .load(Relaxed)
        .saturating_sub(s.remaining.load(Relaxed))
}

/// Adds `delta` to `proc`'s accounting word (one RMW, as before this
/// helper), an operation that raises its `held` by `n`; if `held` was 0,
/// stamps `held_since` with the coarse shared clock (see `crate::clock`):
/// the only clock read of the fast path, and only on that transition, so a
/// process that keeps some permits pays nothing on its other acquires.
///
/// The stamp is not exact when threads of one process race on 0 (one drops
/// `held` to 0 and another raises it between this RMW and the stamp): it may
/// then be the older or the newer of the two rises, a few instructions apart
/// unless a thread is preempted there. It is a diagnostic, never read by the
/// algorithm, and not a crash point (a death before it leaves the previous
/// value, an older time).
#[inline(always)]
fn add_held(proc: &Proc, delta: u64, n: u64) {
    let before = proc.acct.add(delta);
    if acct::held(before) == 0 && n != 0 {
        proc.held_since.store(crate::clock::coarse(), Relaxed);
    }
}

/// `busy + 1` on an accounting word, unless it is saturated.
#[inline(always)]
fn announce(acct: &AtomicU64) -> bool {
    let mut a = acct.load(Relaxed);
    loop {
        if acct::busy(a) == acct::BUSY {
            return false;
        }
        match acct.cas(a, a + 1) {
            Ok(_) => return true,
            Err(now) => a = now,
        }
    }
}

// ------------------------------------------------------------------ under the lock

/// Who attaches a process record: what `inspect` reports about it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ident<'s> {
    pub(crate) pid: u32,
    /// The process's start time in clock ticks since boot (diagnostics).
    pub(crate) start_time: u64,
    /// At most `MAX_LABEL_LEN` bytes are kept (`open` refuses longer ones).
    pub(crate) label: &'s str,
    /// At most `MAX_HOST_LEN` bytes are kept.
    pub(crate) host: &'s str,
}

#[cfg(any(test, volt_loom))]
impl Ident<'static> {
    /// A process of the unit tests and loom models.
    pub(crate) const fn test(pid: u32) -> Self {
        Ident {
            pid,
            start_time: pid as u64,
            label: "test",
            host: "localhost",
        }
    }
}

/// Writes `text` (cut to the room of `words`) into a record's text field.
/// Relaxed: the record's `state` (Release) publishes it.
fn store_text(words: &[InfoU64], len: &InfoU32, text: &str) {
    let bytes = &text.as_bytes()[..text.len().min(words.len() * 8)];
    for (k, w) in words.iter().enumerate() {
        let mut b = [0u8; 8];
        let from = (k * 8).min(bytes.len());
        let to = (k * 8 + 8).min(bytes.len());
        b[..to - from].copy_from_slice(&bytes[from..to]);
        w.store(u64::from_le_bytes(b), Relaxed);
    }
    len.store(bytes.len() as u32, Relaxed);
}

/// Reads a text field written by `store_text`. A length beyond the field
/// (garbage) is cut to it; bytes that are not UTF-8 (garbage, or a host name
/// cut inside a character) are replaced, never trusted.
fn load_text(words: &[InfoU64], len: &InfoU32) -> String {
    let len = (len.load(Relaxed) as usize).min(words.len() * 8);
    let mut bytes = Vec::with_capacity(words.len() * 8);
    for w in words {
        bytes.extend_from_slice(&w.load(Relaxed).to_le_bytes());
    }
    bytes.truncate(len);
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Whether process record `i` is dead (its liveness lock is free). Never
/// asked about the caller's own record.
pub(crate) type Dead<'d> = &'d mut dyn FnMut(u32) -> bool;

/// The segment, seen by a caller that holds its lock.
pub(crate) struct Locked<'a> {
    pub(crate) seg: &'a Segment,
    /// Set when a value read from the segment is one this code never writes
    /// (an index out of range, a FIFO longer than the slot table): another
    /// process with write access scribbled on it. The operation stops short
    /// of the bad value and the caller reports `Error::Corrupt`.
    corrupt: core::cell::Cell<bool>,
}

impl<'a> Locked<'a> {
    /// # Safety (logical)
    /// The caller holds the segment lock for as long as the value lives.
    pub(crate) fn new(seg: &'a Segment) -> Self {
        Locked {
            seg,
            corrupt: core::cell::Cell::new(false),
        }
    }

    /// Whether this critical section read a value this code never writes.
    pub(crate) fn is_corrupt(&self) -> bool {
        self.corrupt.get()
    }

    /// Slot `i`, an index read from the segment (a link, the head, the
    /// tail): `None`, and the section marked corrupt, if it is out of range.
    fn linked(&self, i: u32) -> Option<&Slot> {
        let s = self.seg.slots.get(i as usize);
        if s.is_none() {
            self.corrupt.set(true);
        }
        s
    }

    fn hdr(&self) -> &Header {
        &self.seg.hdr
    }
    fn slot(&self, i: u32) -> &Slot {
        &self.seg.slots[i as usize]
    }
    fn proc(&self, i: u32) -> &Proc {
        &self.seg.procs[i as usize]
    }

    pub(crate) fn total(&self) -> u64 {
        self.hdr().total.load(Relaxed)
    }
    pub(crate) fn available(&self) -> u64 {
        word::available(self.hdr().state.load(SeqCst))
    }
    pub(crate) fn is_closed(&self) -> bool {
        self.hdr().closed.load(Relaxed) != 0
    }
    pub(crate) fn held(&self, me: u32) -> u64 {
        acct::held(self.proc(me).acct.load(SeqCst))
    }

    /// Initialises a zeroed (or garbage) segment's mutable part.
    pub(crate) fn init(&self, total: u64) {
        let h = self.hdr();
        h.version.put(LAYOUT_VERSION, Relaxed);
        h.lock_abi.put(LOCK_ABI, Relaxed);
        h.size.put(SEGMENT_SIZE as u64, Relaxed);
        h.total.put(total, Relaxed);
        h.state.put(total * word::ONE, Relaxed);
        h.closed.put(0, Relaxed);
        h.queue_len.put(0, Relaxed);
        h.head.put(NIL, Relaxed);
        h.tail.put(NIL, Relaxed);
        h.next_seq.put(1, Relaxed);
        h.free_hint.put(0, Relaxed);
        h.repairs.put(0, Relaxed);
        h.reclaims.put(0, Relaxed);
        h.recount_pending.put(0, Relaxed);
        h.recounts.put(0, Relaxed);
        h.debt.put(0, Relaxed);
        for p in &self.seg.procs {
            p.state.put(proc_state::FREE, Relaxed);
            p.acct.put(0, Relaxed);
            for l in &p.lanes {
                l.put(0, Relaxed);
            }
        }
        for s in &self.seg.slots {
            s.state.put(slot_state::FREE, Relaxed);
            s.prev.put(NIL, Relaxed);
            s.next.put(NIL, Relaxed);
            s.direct.put(0, Relaxed);
        }
    }

    // ---------------------------------------------------------------- processes

    /// Claims a FREE process record. `lock_byte(i)` takes the liveness lock of
    /// record `i` (false: somebody still holds it, try the next one); `dead(i)`
    /// tells whether a LIVE record's owner is gone (it is reclaimed first).
    /// The rings are returned whether or not a record was claimed: a recount
    /// run on the way may have granted queued requests even when the table
    /// turns out to be full.
    pub(crate) fn attach(
        &self,
        who: &Ident<'_>,
        mut lock_byte: impl FnMut(u32) -> bool,
        mut dead: impl FnMut(u32) -> bool,
    ) -> (Result<u32, OpError>, Rings) {
        let mut rings = Rings::default();
        for i in 0..MAX_PROCESSES as u32 {
            let p = self.proc(i);
            let mut state = p.state.load(Relaxed);
            if state == proc_state::LIVE && dead(i) {
                rings.merge(self.reclaim(i));
                state = proc_state::FREE;
            }
            if state != proc_state::FREE || !lock_byte(i) {
                continue;
            }
            p.acct.put(0, SeqCst);
            for l in &p.lanes {
                l.put(0, Relaxed);
            }
            p.pid.put(who.pid, Relaxed);
            p.start_time.put(who.start_time, Relaxed);
            store_text(&p.label, &p.label_len, who.label);
            store_text(&p.host, &p.host_len, who.host);
            // Release: a reader that sees LIVE sees the fields above.
            p.state.put(proc_state::LIVE, Release);
            rings.merge(self.settle(Some(i), &mut dead));
            return (Ok(i), rings);
        }
        rings.merge(self.settle(None, &mut dead));
        (Err(OpError::ProcessTableFull), rings)
    }

    /// Reclaims every LIVE record other than `me` whose owner `dead` says is
    /// gone, then runs a recount if one is owed.
    pub(crate) fn sweep(&self, me: Option<u32>, mut dead: impl FnMut(u32) -> bool) -> Rings {
        let mut rings = Rings::default();
        for i in 0..MAX_PROCESSES as u32 {
            if Some(i) != me && self.proc(i).state.load(Relaxed) == proc_state::LIVE && dead(i) {
                rings.merge(self.reclaim(i));
            }
        }
        rings.merge(self.settle(me, &mut dead));
        rings
    }

    /// Runs the recount owed by a death inside a fast operation, if any.
    fn settle(&self, me: Option<u32>, dead: Dead<'_>) -> Rings {
        if self.hdr().recount_pending.load(Relaxed) != 0 {
            self.recount(me, dead)
        } else {
            Rings::default()
        }
    }

    /// Returns everything record `p` had (held permits, queued and granted
    /// slots) and frees it; the permits go to the head of the FIFO like a
    /// release. Idempotent: a reclaim interrupted by the reclaimer's own death
    /// is simply done again by the next repairer (the record stays LIVE until
    /// its last step).
    ///
    /// A record whose `busy` is not 0 died inside a fast operation: its
    /// `held` may miss permits in transit (or count some it never got), so it
    /// is freed without trusting `held`, and a recount is owed (the caller
    /// runs it: `sweep`, `attach`, `detach`).
    pub(crate) fn reclaim(&self, p: u32) -> Rings {
        let proc = self.proc(p);
        let a = proc.acct.load(SeqCst);
        let h = self.hdr();
        if acct::busy(a) != 0 || proc.lanes.iter().any(|l| l.load(Acquire) & 1 != 0) {
            if h.recount_pending.load(Relaxed) == 0 {
                h.recount_pending.put(1, Relaxed);
            }
            self.drop_slots(p);
            proc.acct.put(0, SeqCst);
            proc.state.put(proc_state::FREE, Release);
            h.reclaims
                .put(h.reclaims.load(Relaxed).wrapping_add(1), Relaxed);
            return Rings::default();
        }
        proc.acct.put(0, SeqCst);
        let back = acct::held(a).saturating_add(self.drop_slots(p));
        proc.state.put(proc_state::FREE, Release);
        h.reclaims
            .put(h.reclaims.load(Relaxed).wrapping_add(1), Relaxed);
        self.serve(back)
    }

    /// Frees every slot of record `p`; returns the permits they had.
    fn drop_slots(&self, p: u32) -> u64 {
        let mut back = 0u64;
        for i in 0..MAX_WAITERS as u32 {
            let s = self.slot(i);
            let st = s.state.load(Relaxed);
            if st == slot_state::FREE || s.owner.load(Relaxed) != p {
                continue;
            }
            match st {
                slot_state::QUEUED => {
                    self.unlink(i);
                    back = back.saturating_add(partial(s));
                }
                slot_state::GRANTED => back = back.saturating_add(s.requested.load(Relaxed)),
                _ => {}
            }
            s.state.put(slot_state::FREE, Release);
        }
        back
    }

    /// Detaches `me` (a live process with no request in flight): like a reclaim.
    pub(crate) fn detach(&self, me: u32, mut dead: impl FnMut(u32) -> bool) -> Rings {
        let mut rings = self.reclaim(me);
        rings.merge(self.settle(None, &mut dead));
        rings
    }

    // ---------------------------------------------------------------- permits

    /// Takes `n` permits at once if nobody is queued and enough are available
    /// (the fast path's take, under the lock: the counter still races with
    /// other processes' fast paths, hence the CAS).
    pub(crate) fn try_take(&self, me: u32, n: u64) -> Result<(), OpError> {
        use word::*;
        let state = &self.hdr().state;
        let mut s = state.load(SeqCst);
        loop {
            if s & CLOSED != 0 {
                return Err(OpError::Closed);
            }
            // Invariant 2: queued => available == 0, so a later request cannot
            // overtake a queued one.
            if s & QUEUED != 0 || available(s) < n {
                return Err(OpError::NoPermits);
            }
            match state.cas(s, s - n * ONE) {
                Ok(_) => break,
                Err(now) => s = now,
            }
        }
        // Out of the counter first, then into `held` (the transit rule).
        add_held(self.proc(me), n * acct::HELD, n);
        Ok(())
    }

    /// Takes `n` permits at once, or queues a request for them in a free slot.
    /// The slot's partial grant starts with whatever is available (only when
    /// nobody is queued, which by invariant 2 is the only time anything is).
    pub(crate) fn enqueue(&self, me: u32, n: u64) -> Result<Enqueued, OpError> {
        use word::*;
        match self.try_take(me, n) {
            Ok(()) => return Ok(Enqueued::Ready),
            Err(OpError::NoPermits) => {}
            Err(e) => return Err(e),
        }
        // The caller checked `n` against the total it read without the lock:
        // a `set_total` may have lowered it since.
        if n > self.total() {
            return Err(OpError::TooManyPermits);
        }
        let slot = self.find_free_slot().ok_or(OpError::QueueFull)?;
        let h = self.hdr();
        // Drain the counter into the request and raise QUEUED in one CAS: a
        // fast release racing with us either lands first (and is drained) or
        // sees QUEUED and comes to the lock, behind us.
        let mut s = h.state.load(SeqCst);
        let taken = loop {
            if s & CLOSED != 0 {
                return Err(OpError::Closed);
            }
            let a = available(s);
            if s & QUEUED == 0 && a >= n {
                // A fast release refilled the counter since `try_take`.
                match h.state.cas(s, s - n * ONE) {
                    Ok(_) => {
                        add_held(self.proc(me), n * acct::HELD, n);
                        return Ok(Enqueued::Ready);
                    }
                    Err(now) => s = now,
                }
                continue;
            }
            match h.state.cas(s, (s & (CLOSED | FROZEN | DEBT)) | QUEUED) {
                Ok(_) => break a, // < n, and 0 if anyone is queued
                Err(now) => s = now,
            }
        };
        let seq = h.next_seq.load(Relaxed);
        h.next_seq.put(seq.wrapping_add(1), Relaxed);
        let s = self.slot(slot);
        s.owner.put(me, Relaxed);
        s.requested.put(n, Relaxed);
        // `taken < n` unless QUEUED was set with permits in the counter,
        // which only garbage written by another process can do.
        if taken >= n {
            self.corrupt.set(true);
        }
        s.remaining.put(n.saturating_sub(taken), Relaxed);
        s.seq.put(seq, Relaxed);
        s.direct.put(0, Relaxed);
        s.since.store(crate::clock::now(), Relaxed);
        // Release: whoever sees QUEUED (a repairer after our death) sees the
        // request's fields.
        s.state.put(slot_state::QUEUED, Release);
        self.link_tail(slot);
        Ok(Enqueued::Queued { slot, seq })
    }

    /// Marks `slot` of `me` as waited on directly (its `state` is a futex a
    /// thread of the owner sleeps on): its grant or close wakes that futex
    /// instead of the owner's doorbell. Returns false if the slot is not the
    /// caller's queued request any more (granted or closed meanwhile).
    pub(crate) fn set_direct(&self, me: u32, slot: u32, seq: u64) -> bool {
        let s = self.slot(slot);
        if s.state.load(Relaxed) != slot_state::QUEUED
            || s.owner.load(Relaxed) != me
            || s.seq.load(Relaxed) != seq
        {
            return false;
        }
        s.direct.put(1, Relaxed);
        true
    }

    /// Gives back `n` permits that `me` holds, FIFO to the queue first.
    pub(crate) fn release(&self, me: u32, n: u64) -> Result<Rings, OpError> {
        let acct = &self.proc(me).acct;
        let mut a = acct.load(SeqCst);
        loop {
            if acct::held(a) < n {
                return Err(OpError::NotHeld {
                    held: acct::held(a),
                });
            }
            match acct.cas(a, a - n * acct::HELD) {
                Ok(_) => break,
                Err(now) => a = now,
            }
        }
        crate::hooks::in_release_critical_section();
        Ok(self.serve(n))
    }

    /// Hands `rem` permits to the head of the FIFO, completing slots in order;
    /// a head that cannot be completed keeps its partial grant and the hand-off
    /// stops there. The surplus goes to the counter only when the FIFO is
    /// empty, in the same CAS that clears QUEUED.
    ///
    /// A shrink's debt is paid first: only what is left of `rem` after it
    /// goes to the FIFO.
    pub(crate) fn serve(&self, rem: u64) -> Rings {
        let mut rings = Rings::default();
        let h = self.hdr();
        // (Still in debt: nothing for the FIFO, but an empty FIFO still has
        // QUEUED cleared below.)
        let mut rem = self.pay(rem);
        // At most one turn per slot: a longer FIFO is garbage.
        for _ in 0..=MAX_WAITERS {
            let head = h.head.load(Relaxed);
            if head == NIL {
                self.bank(rem);
                return rings;
            }
            let Some(s) = self.linked(head) else {
                return rings;
            };
            let remaining = s.remaining.load(Relaxed);
            let given = rem.min(remaining);
            s.remaining.put(remaining - given, Relaxed);
            rem -= given;
            if given < remaining {
                return rings; // partly served: FIFO stops here, nothing left
            }
            self.unlink(head);
            // Until its owner collects it, `inspect` counts the grant as held
            // by the owner since now.
            s.since.store(crate::clock::now(), Relaxed);
            // Release: the owner reads the state without the lock.
            s.state.put(slot_state::GRANTED, Release);
            rings.add_slot(self.seg, head);
        }
        self.corrupt.set(true);
        rings
    }

    /// Pays the debt (if any) from `rem`; returns what is left (0 while
    /// a debt remains). Clears `DEBT` from the state word when the debt
    /// reaches 0 (the counter is 0 until then, so nothing else changes in
    /// it).
    fn pay(&self, rem: u64) -> u64 {
        let h = self.hdr();
        let debt = h.debt.load(Relaxed);
        if debt == 0 {
            return rem;
        }
        let paid = rem.min(debt);
        h.debt.put(debt - paid, Relaxed);
        if paid == debt {
            h.state.and(!word::DEBT);
        }
        rem - paid
    }

    /// The FIFO is empty: `rem` permits go to the counter and QUEUED is
    /// cleared, in one CAS (the fast path reopens with them).
    fn bank(&self, rem: u64) {
        use word::*;
        let state = &self.hdr().state;
        let mut s = state.load(SeqCst);
        while rem != 0 || s & QUEUED != 0 {
            // Wrapping: only a scribbled counter can overflow here.
            match state.cas(s, (s & !QUEUED).wrapping_add(rem * ONE)) {
                Ok(_) => break,
                Err(now) => s = now,
            }
        }
    }

    /// Ends the request in `slot` (ticket `seq`) of process `me`: cancels it if
    /// still queued (handing its partial grant on), or collects its outcome.
    pub(crate) fn finish(&self, me: u32, slot: u32, seq: u64) -> (SlotOutcome, Rings) {
        let s = self.slot(slot);
        let st = s.state.load(Relaxed);
        if st == slot_state::FREE || s.owner.load(Relaxed) != me || s.seq.load(Relaxed) != seq {
            return (SlotOutcome::Gone, Rings::default());
        }
        match st {
            slot_state::QUEUED => {
                self.unlink(slot);
                let returned = partial(s);
                s.state.put(slot_state::FREE, Release);
                (SlotOutcome::Cancelled { returned }, self.serve(returned))
            }
            slot_state::GRANTED => {
                // The slot first: a crash between the two writes leaves the
                // permits in transit (counted nowhere), which the repair's
                // recount frees; the other order would count them twice.
                s.state.put(slot_state::FREE, Release);
                let requested = s.requested.load(Relaxed);
                add_held(self.proc(me), requested.wrapping_mul(acct::HELD), requested);
                (SlotOutcome::Granted, Rings::default())
            }
            slot_state::FAILED => {
                s.state.put(slot_state::FREE, Release);
                (SlotOutcome::TooManyPermits, Rings::default())
            }
            _ => {
                s.state.put(slot_state::FREE, Release);
                (SlotOutcome::Closed, Rings::default())
            }
        }
    }

    /// Closes the semaphore for every process: every queued slot becomes
    /// CLOSED (its partial grant goes back to the counter) and its owner is
    /// woken. Idempotent.
    pub(crate) fn close(&self) -> Rings {
        let h = self.hdr();
        h.closed.put(1, Relaxed);
        if h.state.load(SeqCst) & word::CLOSED == 0 {
            h.state.or(word::CLOSED);
        }
        let mut rings = Rings::default();
        let mut back = 0u64;
        // At most one turn per slot: a longer FIFO is garbage.
        for _ in 0..=MAX_WAITERS {
            let head = h.head.load(Relaxed);
            if head == NIL {
                // The partial grants pay a shrink's debt first.
                self.bank(self.pay(back));
                return rings;
            }
            let Some(s) = self.linked(head) else {
                return rings;
            };
            back = back.saturating_add(partial(s));
            self.unlink(head);
            s.state.put(slot_state::CLOSED, Release);
            rings.add_slot(self.seg, head);
        }
        self.corrupt.set(true);
        rings
    }

    /// Undoes `close`: later acquires work again. Requests that `close`
    /// failed stay failed (their slots stay CLOSED until their owners
    /// collect them). The truth first: a crash between the two writes
    /// leaves `closed == 0` with `CLOSED` in the state word, which the
    /// repair's rebase rebuilds from the truth.
    pub(crate) fn reopen(&self) {
        let h = self.hdr();
        h.closed.put(0, Relaxed);
        if h.state.load(SeqCst) & word::CLOSED != 0 {
            h.state.and(!word::CLOSED);
        }
    }

    /// Changes the total to `n` (1..=MAX_PERMITS, checked by the caller).
    ///
    /// Growing hands the new permits out as a release would: to a shrink's
    /// debt first, then to the head of the FIFO, then to the counter.
    /// Shrinking revokes nothing: it takes what it can from the counter and
    /// the rest becomes debt (`Header::debt`, `DEBT` in the state word, which
    /// shuts the fast release so that every permit given back pays it
    /// first). Either way, queued requests for more than `n` then fail
    /// (`fail_oversized`).
    ///
    /// The truth (`total`) first: a crash after it leaves the derived words
    /// (counter, debt) to the repair's recount, which rebuilds them from
    /// `total`, and the oversized requests to the repair too.
    pub(crate) fn set_total(&self, n: u64) -> Rings {
        let h = self.hdr();
        let old = self.total();
        h.total.put(n, Relaxed);
        let mut rings = Rings::default();
        if n > old {
            rings.merge(self.serve(n - old));
        } else if n < old {
            self.owe(old - n);
        }
        rings.merge(self.fail_oversized());
        rings
    }

    /// Takes `cut` permits out of circulation: from the counter as far as it
    /// has them (one CAS, racing with the fast path like `enqueue`'s drain),
    /// the rest as debt. A fast release racing with it either lands in the
    /// counter first (and is taken) or sees `DEBT` and comes to the lock,
    /// where it pays the debt.
    fn owe(&self, cut: u64) {
        use word::*;
        let h = self.hdr();
        let mut s = h.state.load(SeqCst);
        let short = loop {
            let take = available(s).min(cut);
            let short = cut - take;
            let flag = if short != 0 { DEBT } else { 0 };
            match h.state.cas(s, (s - take * ONE) | flag) {
                Ok(_) => break short,
                Err(now) => s = now,
            }
        };
        if short != 0 {
            h.debt
                .put(h.debt.load(Relaxed).saturating_add(short), Relaxed);
        }
    }

    /// Fails every queued request for more than the total (FAILED, owner
    /// woken, as `close` does to all of them); their partial grants are
    /// handed on as by a cancel (debt first, then the FIFO, whose order is
    /// otherwise kept).
    pub(crate) fn fail_oversized(&self) -> Rings {
        let h = self.hdr();
        let total = self.total();
        let mut rings = Rings::default();
        let mut back = 0u64;
        let mut cur = h.head.load(Relaxed);
        // At most one turn per slot: a longer FIFO is garbage.
        for _ in 0..=MAX_WAITERS {
            if cur == NIL {
                rings.merge(self.serve(back));
                return rings;
            }
            let Some(s) = self.linked(cur) else {
                return rings;
            };
            let next = s.next.load(Relaxed);
            if s.requested.load(Relaxed) > total {
                back = back.saturating_add(partial(s));
                self.unlink(cur);
                s.state.put(slot_state::FAILED, Release);
                rings.add_slot(self.seg, cur);
            }
            cur = next;
        }
        self.corrupt.set(true);
        rings
    }

    /// Fails the queued request in `slot` (ticket `seq`) of process `me` as
    /// [`fail_oversized`](Self::fail_oversized) fails one above the total
    /// (FAILED, its partial grant handed on, its owner woken), for a
    /// handle's `disconnect`. `None`, nothing changed, if that request is not
    /// queued any more (granted, closed, failed or cancelled: its outcome
    /// stands).
    pub(crate) fn fail_queued(&self, me: u32, slot: u32, seq: u64) -> Option<Rings> {
        let s = self.slot(slot);
        if s.state.load(Relaxed) != slot_state::QUEUED
            || s.owner.load(Relaxed) != me
            || s.seq.load(Relaxed) != seq
        {
            return None;
        }
        self.unlink(slot);
        let back = partial(s);
        s.state.put(slot_state::FAILED, Release);
        let mut rings = Rings::default();
        rings.add_slot(self.seg, slot);
        rings.merge(self.serve(back));
        Some(rings)
    }

    // ---------------------------------------------------------------- census

    /// Shuts the fast path (FROZEN) and reads every LIVE record's `held` at a
    /// moment when none of its threads is inside a fast operation (`busy ==
    /// 0`). Returns Σ held and the records found dead with `busy != 0` (their
    /// `held` is not trusted), or `None` if some live record stayed busy for
    /// the whole `sync::pause` budget (a process stopped inside a fast
    /// operation, or a dead one whose liveness lock a forked child keeps).
    ///
    /// Why the sum is exact: FROZEN is set by an RMW on the state word, and
    /// every fast operation's take/put is a CAS on that word that requires
    /// FROZEN clear, all SeqCst; each record is read seqlock-style (lanes,
    /// `acct`, lanes). An operation whose state write came before the freeze
    /// made its lane odd before it (so the first lane read shows it in flight
    /// or complete); one whose `held` write the `acct` read sees made its lane
    /// odd before that (so the second lane read differs, or the first showed
    /// it); any other one's state write fails after the freeze and it undoes
    /// its own `held` write. `busy` works the same way inside `acct`. The
    /// full argument is in the crate docs, *The fast path*. So the value read
    /// is the record's `held` for as long as FROZEN stays set.
    ///
    /// `each(i, held)` is called with each LIVE record's value as read.
    fn quiesce(
        &self,
        me: Option<u32>,
        dead: Dead<'_>,
        patient: bool,
        mut each: impl FnMut(u32, u64),
    ) -> Option<(u64, u128)> {
        let mut held = 0;
        let mut gone = 0u128;
        for i in 0..MAX_PROCESSES as u32 {
            let p = self.proc(i);
            if p.state.load(Relaxed) != proc_state::LIVE {
                continue;
            }
            let mut round = 0;
            loop {
                // Lanes, then `acct`, then the lanes again (a seqlock read):
                // all even and unchanged, and `busy == 0`, means no operation
                // of this process was in flight around the `acct` read.
                let lanes1: [u64; LANES] = core::array::from_fn(|k| p.lanes[k].load(Acquire));
                let a = p.acct.load(SeqCst);
                let lanes2: [u64; LANES] = core::array::from_fn(|k| p.lanes[k].load(Acquire));
                let idle = lanes1.iter().all(|v| v & 1 == 0);
                if idle && acct::busy(a) == 0 && lanes1 == lanes2 {
                    each(i, acct::held(a));
                    held = acct::held(a).saturating_add(held);
                    break;
                }
                if Some(i) != me && dead(i) {
                    gone |= 1u128 << i;
                    break;
                }
                if !crate::sync::pause(round, patient) {
                    return None;
                }
                round += 1;
            }
        }
        Some((held, gone))
    }

    /// Σ permits in slots: the partial grants of QUEUED ones and all of
    /// GRANTED ones.
    fn granted(&self) -> (u64, u32) {
        let (mut granted, mut queued) = (0, 0);
        for s in &self.seg.slots {
            match s.state.load(Relaxed) {
                slot_state::QUEUED => {
                    granted = partial(s).saturating_add(granted);
                    queued += 1;
                }
                slot_state::GRANTED => granted = s.requested.load(Relaxed).saturating_add(granted),
                _ => {}
            }
        }
        (granted, queued)
    }

    /// Recomputes the counter from the truth: `total − Σ held(LIVE) −
    /// Σ granted(slots)`, at a quiescent moment (`quiesce`); records found
    /// dead there are freed first. Permits in transit (a process died between
    /// two writes of an operation, with or without the lock) are counted
    /// nowhere in the truth, so they come back as free; never twice, by the
    /// transit rule. If no quiescent moment came, the counter is kept as it
    /// is (permits in transit stay lost for now, never duplicated) and the
    /// recount stays owed: the next sweep tries again. Then the state word's
    /// flags are rebuilt and the free permits served as by a release.
    pub(crate) fn recount(&self, me: Option<u32>, dead: Dead<'_>) -> Rings {
        let h = self.hdr();
        h.recounts
            .put(h.recounts.load(Relaxed).wrapping_add(1), Relaxed);
        h.state.or(word::FROZEN);
        // A retry of a recount that gave up before waits only briefly (see
        // `sync::pause`); the sweep after it tries again.
        let patient = h.recount_pending.load(Relaxed) != GAVE_UP;
        let free = match self.quiesce(me, dead, patient, |_, _| {}) {
            Some((held, gone)) => {
                for p in bits(gone) {
                    self.drop_slots(p as u32);
                    let proc = self.proc(p as u32);
                    proc.acct.put(0, SeqCst);
                    proc.state.put(proc_state::FREE, Release);
                    h.reclaims
                        .put(h.reclaims.load(Relaxed).wrapping_add(1), Relaxed);
                }
                h.recount_pending.put(0, Relaxed);
                // Held and granted beyond the total are a shrink's debt
                // (or, only if the segment was written by something else
                // than this code, garbage: then hand out nothing rather
                // than too much, until enough comes back).
                let owed = held.saturating_add(self.granted().0);
                let total = self.total();
                h.debt.put(owed.saturating_sub(total), Relaxed);
                total.saturating_sub(owed)
            }
            None => {
                h.recount_pending.put(GAVE_UP, Relaxed);
                word::available(h.state.load(SeqCst))
            }
        };
        self.rebase(free)
    }

    /// Rewrites the (frozen) state word: flags from the truth and the FIFO,
    /// `free` permits served as a release would (or banked after finishing a
    /// close); then reopens the fast path.
    fn rebase(&self, free: u64) -> Rings {
        use word::*;
        let h = self.hdr();
        let queued = if h.head.load(Relaxed) != NIL {
            QUEUED
        } else {
            0
        };
        let closed = if self.is_closed() { CLOSED } else { 0 };
        let debt = if h.debt.load(Relaxed) != 0 { DEBT } else { 0 };
        // FROZEN keeps every fast path out while the word is rewritten.
        h.state.put(FROZEN | debt | queued | closed, SeqCst);
        let mut rings = Rings::default();
        if closed != 0 {
            // A closer died half-way: finish its job.
            rings.merge(self.close());
        }
        rings.merge(self.serve(free));
        h.state.and(!FROZEN);
        rings
    }

    // ---------------------------------------------------------------- repair

    /// Rebuilds every derived word from the truth, after a locker found the
    /// previous lock owner dead: the FIFO from the QUEUED slots' tickets, then
    /// the counter by a recount (which also frees the records found dead
    /// inside a fast operation). Returns the wake-ups owed: the recounted
    /// counter is handed to the FIFO, since permits in transit in the dead
    /// owner's critical section are counted as available again.
    pub(crate) fn repair(&self, me: Option<u32>, mut dead: impl FnMut(u32) -> bool) -> Rings {
        let h = self.hdr();
        h.repairs
            .put(h.repairs.load(Relaxed).wrapping_add(1), Relaxed);
        let mut queued: [(u64, u32); MAX_WAITERS] = [(0, 0); MAX_WAITERS];
        let mut nq = 0;
        let mut max_seq = 0;
        for i in 0..MAX_WAITERS as u32 {
            let s = self.slot(i);
            let st = s.state.load(Acquire);
            if st == slot_state::FREE {
                continue;
            }
            let owner = s.owner.load(Relaxed);
            if owner as usize >= MAX_PROCESSES
                || self.proc(owner).state.load(Relaxed) != proc_state::LIVE
            {
                // A slot of a record that is gone (a reclaim interrupted
                // between its slot and record steps cannot leave this, but a
                // slot stored with a garbage owner could): drop it.
                s.state.put(slot_state::FREE, Release);
                continue;
            }
            let req = s.requested.load(Relaxed);
            max_seq = max_seq.max(s.seq.load(Relaxed));
            if st == slot_state::QUEUED {
                let rem = s.remaining.load(Relaxed).min(req);
                s.remaining.put(rem, Relaxed);
                queued[nq] = (s.seq.load(Relaxed), i);
                nq += 1;
            }
        }
        let queued = &mut queued[..nq];
        queued.sort_unstable();
        h.head.put(NIL, Relaxed);
        h.tail.put(NIL, Relaxed);
        h.queue_len.put(0, Relaxed);
        for &(_, i) in queued.iter() {
            self.link_tail(i);
        }
        if h.next_seq.load(Relaxed) <= max_seq {
            h.next_seq.put(max_seq.saturating_add(1), Relaxed);
        }
        let mut rings = self.recount(me, &mut dead);
        // A `set_total` that died after lowering the total left these.
        rings.merge(self.fail_oversized());
        rings
    }

    /// The conservation sums (for tests and diagnostics), read at a quiescent
    /// moment when one comes (else as they are).
    pub(crate) fn census(&self) -> Census {
        let h = self.hdr();
        h.state.or(word::FROZEN);
        let quiet = self
            .quiesce(None, &mut |_| false, true, |_, _| {})
            .map(|q| q.0);
        let held = quiet.unwrap_or_else(|| {
            self.seg
                .procs
                .iter()
                .filter(|p| p.state.load(Relaxed) == proc_state::LIVE)
                .map(|p| acct::held(p.acct.load(SeqCst)))
                .fold(0u64, u64::saturating_add)
        });
        let (granted, queued) = self.granted();
        let c = Census {
            total: self.total(),
            available: self.available(),
            held,
            granted,
            queued,
            live: self
                .seg
                .procs
                .iter()
                .filter(|p| p.state.load(Relaxed) == proc_state::LIVE)
                .count() as u32,
            repairs: h.repairs.load(Relaxed),
            reclaims: h.reclaims.load(Relaxed),
            recounts: h.recounts.load(Relaxed),
            debt: h.debt.load(Relaxed),
        };
        h.state.and(!word::FROZEN);
        c
    }

    /// Who holds and who waits (`inspect()`), read at the quiescent moment
    /// the census uses, so that `available + Σ holders + Σ waiters' partial
    /// grants == total` holds in the snapshot (unless no quiescent moment
    /// came: then `held` is read as it is, as by `census`). `now` is the
    /// shared clock (`crate::clock::now`). The caller swept dead records
    /// first, so every holder and waiter listed is a live process.
    ///
    /// A grant completed but not yet collected by its owner counts as held
    /// by the owner, since its completion; a holder's `held_for` is the time
    /// since the oldest of: the last rise of its `held` from 0, its
    /// uncollected grants.
    pub(crate) fn inspect(&self, now: u64) -> Inspection {
        let h = self.hdr();
        h.state.or(word::FROZEN);
        let mut held = [0u64; MAX_PROCESSES];
        let quiet = self.quiesce(None, &mut |_| false, true, |i, v| held[i as usize] = v);
        let live = |i: usize| self.seg.procs[i].state.load(Relaxed) == proc_state::LIVE;
        if quiet.is_none() {
            for (i, p) in self.seg.procs.iter().enumerate() {
                if live(i) {
                    held[i] = acct::held(p.acct.load(SeqCst));
                }
            }
        }
        let mut since: [Option<u64>; MAX_PROCESSES] = [None; MAX_PROCESSES];
        for (i, p) in self.seg.procs.iter().enumerate() {
            if live(i) && held[i] > 0 {
                since[i] = Some(p.held_since.load(Relaxed));
            }
        }
        for s in &self.seg.slots {
            if s.state.load(Relaxed) != slot_state::GRANTED {
                continue;
            }
            let o = s.owner.load(Relaxed) as usize;
            if o >= MAX_PROCESSES || !live(o) {
                self.corrupt.set(true); // a sweep leaves none: garbage
                continue;
            }
            held[o] = held[o].saturating_add(s.requested.load(Relaxed));
            let t = s.since.load(Relaxed);
            since[o] = Some(since[o].map_or(t, |u| u.min(t)));
        }
        let ago = |t: u64| core::time::Duration::from_nanos(now.saturating_sub(t));
        let holders = (0..MAX_PROCESSES)
            .filter(|&i| live(i) && held[i] > 0)
            .map(|i| Holder::new(&self.process(i), held[i] as usize, since[i].map(ago)))
            .collect();
        let mut waiters = Vec::new();
        let mut cur = h.head.load(Relaxed);
        // At most one turn per slot: a longer FIFO is garbage.
        for position in 0..=MAX_WAITERS {
            if cur == NIL {
                break;
            }
            let Some(s) = self.linked(cur) else { break };
            let o = s.owner.load(Relaxed) as usize;
            if position == MAX_WAITERS || o >= MAX_PROCESSES {
                self.corrupt.set(true);
                break;
            }
            waiters.push(QueuedWaiter::new(
                &self.process(o),
                s.requested.load(Relaxed) as usize,
                partial(s) as usize,
                ago(s.since.load(Relaxed)),
                position,
            ));
            cur = s.next.load(Relaxed);
        }
        let inspection = Inspection::new(
            self.total() as usize,
            self.available() as usize,
            self.is_closed(),
            holders,
            waiters,
        );
        h.state.and(!word::FROZEN);
        inspection
    }

    /// The identity record `i` was attached with.
    fn process(&self, i: usize) -> Process {
        let p = &self.seg.procs[i];
        Process {
            label: load_text(&p.label, &p.label_len),
            host: load_text(&p.host, &p.host_len),
            pid: p.pid.load(Relaxed),
        }
    }

    // ---------------------------------------------------------------- FIFO links

    fn find_free_slot(&self) -> Option<u32> {
        let h = self.hdr();
        let start = h.free_hint.load(Relaxed) as usize % MAX_WAITERS;
        for k in 0..MAX_WAITERS {
            let i = ((start + k) % MAX_WAITERS) as u32;
            if self.slot(i).state.load(Relaxed) == slot_state::FREE {
                h.free_hint.put((i + 1) % MAX_WAITERS as u32, Relaxed);
                return Some(i);
            }
        }
        None
    }

    fn link_tail(&self, i: u32) {
        let h = self.hdr();
        let s = self.slot(i);
        let mut tail = h.tail.load(Relaxed);
        if tail != NIL && self.linked(tail).is_none() {
            tail = NIL; // garbage: `i` starts the list again
        }
        s.prev.put(tail, Relaxed);
        s.next.put(NIL, Relaxed);
        match self.seg.slots.get(tail as usize) {
            Some(t) => t.next.put(i, Relaxed),
            None => h.head.put(i, Relaxed),
        }
        h.tail.put(i, Relaxed);
        h.queue_len
            .put(h.queue_len.load(Relaxed).wrapping_add(1), Relaxed);
    }

    fn unlink(&self, i: u32) {
        let h = self.hdr();
        let s = self.slot(i);
        let (mut prev, mut next) = (s.prev.load(Relaxed), s.next.load(Relaxed));
        // Garbage links end the list there (the operation reports Corrupt).
        if prev != NIL && self.linked(prev).is_none() {
            prev = NIL;
        }
        if next != NIL && self.linked(next).is_none() {
            next = NIL;
        }
        match self.seg.slots.get(prev as usize) {
            Some(p) => p.next.put(next, Relaxed),
            None => h.head.put(next, Relaxed),
        }
        match self.seg.slots.get(next as usize) {
            Some(n) => n.prev.put(prev, Relaxed),
            None => h.tail.put(prev, Relaxed),
        }
        s.prev.put(NIL, Relaxed);
        s.next.put(NIL, Relaxed);
        h.queue_len
            .put(h.queue_len.load(Relaxed).saturating_sub(1), Relaxed);
    }

    /// The state of `slot` (for the doorbell thread and direct waiters).
    pub(crate) fn slot_state(seg: &Segment, slot: u32) -> u32 {
        seg.slots[slot as usize].state.load(Acquire)
    }

    /// The `since` stamp of `slot` (see [`Slot::since`]), for the wait
    /// times of `stats()`: read under the lock right after `enqueue`, the
    /// moment the request was queued; read by its owner while the slot is
    /// GRANTED (after an Acquire load of that state, or under the lock, and
    /// before collecting it), the moment it was completed. Only the owner
    /// frees a GRANTED slot, so the stamp cannot change under it meanwhile.
    pub(crate) fn slot_since(seg: &Segment, slot: u32) -> u64 {
        seg.slots[slot as usize].since.load(Relaxed)
    }
}

#[cfg(test)]
pub(crate) mod tests;
