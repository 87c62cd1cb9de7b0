//! The Linux implementation: attachment (one per process and segment), the
//! doorbell thread, the local waiter table and the raw waiter protocol.

use core::cell::{Cell, RefCell};
use core::ffi::c_void;
use core::pin::Pin;
use core::ptr::{self, NonNull};
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering::*};
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use volt_sem::raw::{self, phase, Backend};
use volt_sem::stats::{Gauges, Recorder, Stats};
use volt_sem::{Finish, RawAcquire, WakeFn};

use crate::error::Error;
use crate::segment::{
    fast_collect, fast_release, fast_take, slot_state, Census, Enqueued, Fast, Ident, Locked,
    OpError, Rings, Segment, SlotOutcome, LANES, MAX_WAITERS,
};
use crate::sys::{self, Create, LockState, Mapping};
use crate::{BlockingTicket, SharedSemaphore};

/// How often a process with queued waiters checks the other processes'
/// liveness locks, so that a dead holder's permits reach its waiters even if
/// no other operation runs.
pub(crate) const SWEEP_PERIOD: Duration = Duration::from_millis(200);

/// How long `try_acquire` waits for the segment lock when its lock-free path
/// cannot decide: the lock is held for microseconds by a running process, so
/// this only runs out while a process is stopped (or dead, not yet noticed)
/// inside it; `try_acquire` then fails with `NoPermits` instead of waiting.
pub(crate) const TRY_LOCK_WAIT: Duration = Duration::from_millis(10);

/// How long `open` waits, in all, for the init lock and the segment lock
/// before it fails with `TimedOut`: both are held for microseconds by running
/// processes; longer only by a process stopped inside them or by one that
/// holds them on purpose (see *Trust boundary* in the crate docs).
pub(crate) const OPEN_WAIT: Duration = Duration::from_secs(5);

/// How long a timed acquire that gave up may wait past its deadline for the
/// lock to take its request out of the queue, before it leaves that to the
/// doorbell thread (see `Inner::abandoned`) and returns `TimedOut`.
const CANCEL_GRACE: Duration = Duration::from_millis(20);

/// Rounds of the blocking waiter's spin before its first sleep (1, 2, 4, 8,
/// 16, then 32 pauses per round): about 10 us here, close to one futex
/// wake-up on this VM, as the in-process blocking waiter's.
const SPIN_ROUNDS: u32 = 16;

fn op_error(e: OpError) -> Error {
    match e {
        OpError::Closed => Error::Closed,
        OpError::TooManyPermits => Error::TooManyPermits,
        OpError::NoPermits => Error::NoPermits,
        OpError::QueueFull => Error::QueueFull,
        OpError::NotHeld { held } => Error::NotHeld { held },
        OpError::ProcessTableFull => Error::ProcessTableFull,
    }
}

/// A queued request of this process, in caller-owned memory (a future, a C
/// struct, a binding's object): volt-sem's own [`Waiter`](volt_sem::Waiter),
/// so that one waiter type serves the local and the shared semaphore (and a
/// binding's seam holds one, not two). The segment only holds its slot index;
/// the process's local table maps the slot back to this waiter.
///
/// * Its `raw` node: IDLE -> WAITING by the owner under the local table lock
///   (tagged [`Backend::Shared`] first); WAITING -> NOTIFYING_* by the
///   doorbell thread under that lock (claiming it), or WAITING -> IDLE by the
///   owner's `finish_raw` (removing it); the doorbell thread's trampoline runs
///   the callback and stores the final phase.
/// * The permits, this attachment's identity (`owns`), the slot
///   (`backend_word`) and the callback: written by the owner before the
///   waiter is published in the local table, read after. The slot's sequence
///   number lives in the table, next to the pointer.
pub type ShmWaiter = volt_sem::Waiter;

/// The backend word of a waiter whose request `set_total` failed (above the
/// new total): written by the thread that ended the request, in place of
/// the slot (slots are below `MAX_WAITERS`), before the phase store that
/// publishes the outcome; the next queued request writes its slot again.
pub(crate) const FAILED_WORD: u32 = u32::MAX;

/// The backend word of a waiter whose last request was never queued
/// (granted at once, or refused): no slot, and not `FAILED_WORD`. Written by
/// `acquire_raw` at the start of every request, so that
/// `failed_above_total` answers for the last request only (it used to keep
/// answering `true` after a later request that was granted at once).
const NO_SLOT: u32 = u32::MAX - 1;

/// What a waiter's state looks like from its owner: volt-sem's
/// [`WaiterState`](volt_sem::WaiterState) (`Waiting`: queued in the segment's
/// FIFO; `Granted`/`Closed`: its callback may still be running).
pub type ShmWaiterState = volt_sem::WaiterState;

/// This process's waiters queued in the segment, by slot index.
struct Local {
    /// The waiter queued in each slot, with the slot's sequence number (which
    /// `finish` asks for) and the shared clock when it was queued (its
    /// slot's `since` then, for the wait time `stats()` records), or null.
    table: Vec<(*const ShmWaiter, u64, u64)>,
    count: usize,
}

// SAFETY: the pointers are only dereferenced under the waiter protocol.
unsafe impl Send for Local {}

/// One process's attachment to one segment; shared by every handle on it in
/// this process and by its doorbell thread.
pub(crate) struct Inner {
    map: Mapping,
    me: u32,
    pid: u32,
    /// The label written into the record at attach (`inspect`).
    label: String,
    /// `FORK_GEN` when attached: a handle used in a forked child fails with
    /// `Error::Forked` instead of acting on the parent's record.
    gen: u64,
    local: Mutex<Local>,
    stop: AtomicBool,
    /// Unique among this process's attachments, ever: the key of the
    /// threads' lane caches (never an address, which could be reused).
    id: u64,
    /// Which of the record's lanes a thread of this process owns (bit i:
    /// lane i). Process-local.
    lanes: AtomicU64,
    /// This attachment's metrics, once `SharedSemaphore::enable_stats` ran:
    /// null until then, set once, freed with the attachment (as the core's
    /// `Semaphore::recorder`). Shared by every handle of the name in this
    /// process and by its doorbell thread, which records the grants it
    /// delivers.
    recorder: AtomicPtr<Recorder>,
    /// This process's requests waiting in the FIFO now (the `queued` gauge
    /// of `stats()`): raised under the segment lock when one is queued,
    /// lowered when it leaves the wait (granted, closed, cancelled, given
    /// up). Relaxed: a gauge, ordering nothing.
    queued: AtomicUsize,
    /// Requests of timed acquires that gave up while the segment lock was
    /// held by a stopped process: `(slot, ticket, permits)`. The doorbell
    /// thread takes them out of the queue (or, if granted meanwhile, collects
    /// and releases their permits) once it gets the lock; meanwhile their
    /// permits stay counted in their slots.
    abandoned: Mutex<Vec<(u32, u64, u64)>>,
}

/// The next `Inner::id`.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// This thread's lanes, one per attachment it used lately (at most
/// `LANE_CACHE`): released when the thread exits or the entry is evicted.
struct LaneCache(Vec<(u64, Weak<Inner>, u32)>);

const LANE_CACHE: usize = 4;

fn release_lane(inner: &Weak<Inner>, lane: u32) {
    if let Some(inner) = inner.upgrade() {
        // Release: the next owner's claim (Acquire) sees our last lane store.
        inner.lanes.fetch_and(!(1u64 << lane), Release);
    }
}

impl Drop for LaneCache {
    fn drop(&mut self) {
        // A destructor of another thread-local that runs after this one (a
        // guard whose drop releases permits) must not use the hot lane any
        // more: it is released below, and another thread may claim it. Id 0
        // is no attachment's: `lane` then finds no cache and returns `None`
        // (the `busy` count marks the operation instead).
        let _ = HOT_LANE.try_with(|h| h.set((0, 0)));
        for (_, inner, lane) in self.0.drain(..) {
            release_lane(&inner, lane);
        }
    }
}

std::thread_local! {
    /// The lane of the attachment this thread used last: `(id, lane)`.
    static HOT_LANE: Cell<(u64, u32)> = const { Cell::new((0, 0)) };
    static LANE_CACHE_TL: RefCell<LaneCache> = const { RefCell::new(LaneCache(Vec::new())) };
}

/// This thread's lane in `inner`'s process record (claimed on first use), or
/// `None` if all `LANES` are owned by other threads (then the fast path marks
/// itself with the `busy` count instead), or during thread teardown.
#[inline]
fn lane(inner: &Arc<Inner>) -> Option<u32> {
    match HOT_LANE.try_with(Cell::get) {
        Ok((id, lane)) if id == inner.id => Some(lane),
        Ok(_) => claim_lane(inner),
        Err(_) => None,
    }
}

#[cold]
fn claim_lane(inner: &Arc<Inner>) -> Option<u32> {
    LANE_CACHE_TL
        .try_with(|c| {
            let mut c = c.try_borrow_mut().ok()?;
            if let Some(&(_, _, lane)) = c.0.iter().find(|e| e.0 == inner.id) {
                HOT_LANE.with(|h| h.set((inner.id, lane)));
                return Some(lane);
            }
            let all = if LANES >= 64 {
                u64::MAX
            } else {
                (1u64 << LANES) - 1
            };
            let mut taken = inner.lanes.load(Relaxed);
            let lane = loop {
                let free = !taken & all;
                if free == 0 {
                    return None;
                }
                let lane = free.trailing_zeros();
                match inner
                    .lanes
                    .compare_exchange(taken, taken | 1 << lane, Acquire, Relaxed)
                {
                    Ok(_) => break lane,
                    Err(now) => taken = now,
                }
            };
            if c.0.len() >= LANE_CACHE {
                let (_, old, old_lane) = c.0.remove(0);
                release_lane(&old, old_lane);
            }
            c.0.push((inner.id, Arc::downgrade(inner), lane));
            HOT_LANE.with(|h| h.set((inner.id, lane)));
            Some(lane)
        })
        .ok()
        .flatten()
}

/// Bumped in every forked child (a `pthread_atfork` handler).
static FORK_GEN: AtomicU64 = AtomicU64::new(0);

extern "C" fn forked_child() {
    sys::after_fork_in_child();
    FORK_GEN.fetch_add(1, Relaxed);
}

extern "C" fn before_fork() {
    sys::before_fork();
}

extern "C" fn forked_parent() {
    sys::after_fork_in_parent();
}

/// Registers the fork handlers, before this process's first `open` takes an
/// init lock (`open` calls it first): glibc and musl run registration and a
/// fork's handlers under one lock, so a fork either runs these handlers or
/// happened before the registration, when no init lock was held.
fn watch_forks() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: registers handlers that take and give back a spin lock on
        // an atomic (prepare, parent), and, in the child, close fds, clear
        // a list without freeing it, give the spin lock back and bump an
        // atomic: async-signal-safe (see `sys::after_fork_in_child`). A
        // failure (ENOMEM) leaves forks as before: a child forked during an
        // open may keep its init lock.
        unsafe { libc::pthread_atfork(Some(before_fork), Some(forked_parent), Some(forked_child)) };
    });
}

impl Drop for Inner {
    /// Detaches: whatever this process still holds goes back, as at a death.
    fn drop(&mut self) {
        // In a forked child the record is the parent's: leave it (the
        // mapping and the child's copy of the fd are still released).
        if !self.forked() {
            let (me, fd) = (self.me, self.map.fd);
            let _ = self.locked(|l| ((), l.detach(me, |i| sys::owner_dead(fd, i))));
        }
        let p = self.recorder.swap(ptr::null_mut(), Acquire);
        if !p.is_null() {
            // SAFETY: set once from `Box::into_raw` (`install_recorder`); no
            // borrow of `self` outlives `&mut self`.
            drop(unsafe { Box::from_raw(p) });
        }
    }
}

/// Wakes, after unlocking, what a critical section on `seg` asked for: the
/// blocked threads of the direct slots it completed, and the doorbell
/// threads of the processes whose raw waiters it completed.
fn ring_segment(seg: &Segment, rings: Rings) {
    if rings.is_empty() {
        return;
    }
    for i in rings.slots() {
        // A blocked thread sleeps on the slot's state word itself (stored
        // with Release under the lock).
        sys::futex_wake(&seg.slots[i].state);
    }
    for i in rings.iter() {
        let bell = &seg.procs[i].doorbell;
        // Release: the doorbell thread's Acquire load of the word before
        // it reads slot states pairs with it (the slot states were also
        // stored with Release under the lock).
        bell.fetch_add(1, Release);
        sys::futex_wake(bell);
    }
}

/// Unlocks the segment when dropped (also on a panic under the lock).
struct SegGuard<'a>(&'a Segment);
impl Drop for SegGuard<'_> {
    fn drop(&mut self) {
        sys::unlock(self.0);
    }
}

impl Inner {
    pub(crate) fn seg(&self) -> &Segment {
        self.map.seg()
    }

    /// The total now: `set_total` (any process) changes it under the lock;
    /// a check against it outside the lock is redone by `enqueue`.
    fn total(&self) -> u64 {
        self.seg().hdr.total.load(Relaxed)
    }

    /// Whether this is a `fork()` child's copy of a handle of its parent.
    fn forked(&self) -> bool {
        FORK_GEN.load(Relaxed) != self.gen
    }

    /// Runs `f` under the segment lock, repairing first if the previous owner
    /// died in its critical section, then rings the doorbells `f` asks for.
    fn locked<R>(&self, f: impl FnOnce(&Locked<'_>) -> (R, Rings)) -> Result<R, Error> {
        self.locked_until(None, f)
    }

    /// `locked`, waiting for the lock at most until `deadline` (then
    /// `Error::TimedOut`, nothing done).
    fn locked_until<R>(
        &self,
        deadline: Option<Instant>,
        f: impl FnOnce(&Locked<'_>) -> (R, Rings),
    ) -> Result<R, Error> {
        if self.forked() {
            return Err(Error::Forked);
        }
        let seg = self.seg();
        let state = sys::lock(seg, deadline)?;
        let recorder = self.recorder();
        let (r, rings, corrupt) = {
            let _guard = SegGuard(seg);
            // Every reclaim (of a dead process's record, by a sweep, a
            // repair or a recount) adds 1 to this word, under the lock: what
            // it gained during our critical section, we reclaimed.
            let reclaims = recorder.map(|_| seg.hdr.reclaims.load(Relaxed));
            let l = Locked::new(seg);
            let mut rings = Rings::default();
            if let LockState::OwnerDied = state {
                // Derived words first (the links must be sound before anything
                // is served), then the dead records (the lock's owner is one).
                let fd = self.map.fd;
                rings.merge(l.repair(Some(self.me), |i| sys::owner_dead(fd, i)));
                rings.merge(self.sweep_locked(&l));
                sys::mark_consistent(seg);
            }
            let (r, more) = f(&l);
            rings.merge(more);
            if let (Some(rec), Some(before)) = (recorder, reclaims) {
                let ours = seg.hdr.reclaims.load(Relaxed).wrapping_sub(before);
                if ours != 0 {
                    rec.reclaimed(ours);
                }
            }
            (r, rings, l.is_corrupt())
        };
        self.ring(rings);
        if corrupt {
            // A value in the segment this code never writes: another process
            // scribbled on it. The section stopped short of it.
            return Err(Error::Corrupt);
        }
        Ok(r)
    }

    fn sweep_locked(&self, l: &Locked<'_>) -> Rings {
        let fd = self.map.fd;
        l.sweep(Some(self.me), |i| sys::owner_dead(fd, i))
    }

    fn ring(&self, rings: Rings) {
        ring_segment(self.seg(), rings);
    }

    fn local(&self) -> MutexGuard<'_, Local> {
        self.local.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `finish_raw`'s cancel of a WAITING waiter (`raw::Finisher::cancel`):
    /// out of the local table, then its slot finished (a partial grant
    /// handed on). `None` if the doorbell thread claimed it first.
    fn cancel(&self, w: &ShmWaiter) -> Option<Finish> {
        let (slot, seq, queued_at) = {
            let mut local = self.local();
            // Read under the table lock: the doorbell thread, claiming the
            // waiter under it, may have replaced the slot by FAILED_WORD.
            let slot = w.backend_word();
            let &(queued, seq, queued_at) = local.table.get(slot as usize)?;
            if !ptr::eq(queued, w) {
                return None;
            }
            local.table[slot as usize].0 = ptr::null();
            local.count -= 1;
            self.queued.fetch_sub(1, Relaxed);
            (slot, seq, queued_at)
        };
        let me = self.me;
        let out = self.locked(|l| finish_stamped(l, me, slot, seq));
        w.node().set_phase(phase::IDLE, Relaxed);
        Some(match out {
            Ok((SlotOutcome::Cancelled { returned }, _)) => {
                self.cancelled();
                Finish::Cancelled {
                    returned: returned as usize,
                }
            }
            Ok((SlotOutcome::Granted, granted_at)) => {
                self.granted_after(w.requested(), queued_at, granted_at);
                Finish::Granted
            }
            Ok((SlotOutcome::TooManyPermits, _)) => {
                w.set_backend_word(FAILED_WORD);
                Finish::Closed
            }
            _ => Finish::Closed,
        })
    }

    /// Fails `w`'s request if it is still queued in the segment by this
    /// attachment (`SharedSemaphore::fail_queued`): FAILED as by `set_total`
    /// (`FAILED_WORD` once the doorbell thread claims it, which then runs its
    /// callback; its owner's `finish_raw` reports `Closed`), its partial
    /// grant handed on. `false` if it was not queued here.
    pub(crate) fn fail_queued(&self, w: &ShmWaiter) -> Result<bool, Error> {
        let me = self.me;
        self.locked(|l| {
            // Lock order: the segment, then the local table (as `acquire_raw`).
            let local = self.local();
            let slot = w.backend_word();
            let queued = local.table.get(slot as usize).copied();
            let rings = match queued {
                Some((queued, seq, _)) if ptr::eq(queued, w) => l.fail_queued(me, slot, seq),
                _ => None,
            };
            drop(local);
            (rings.is_some(), rings.unwrap_or_default())
        })
    }

    /// This attachment's recorder, if `enable_stats` ran.
    #[inline]
    fn recorder(&self) -> Option<&Recorder> {
        // Acquire: pairs with the Release that published the recorder, so
        // its counters are seen initialised.
        let p = self.recorder.load(Acquire);
        // SAFETY: non-null only once set from a leaked `Box`, which is freed
        // only in `drop`, after every borrow of `self` ended.
        unsafe { p.as_ref() }
    }

    /// Installs a recorder unless one is there; the first call wins.
    fn install_recorder(&self) {
        if !self.recorder.load(Acquire).is_null() {
            return;
        }
        let fresh = Box::into_raw(Box::new(Recorder::new()));
        // Release: publishes the zeroed counters with the pointer.
        if self
            .recorder
            .compare_exchange(ptr::null_mut(), fresh, Release, Acquire)
            .is_err()
        {
            // SAFETY: `fresh` was never shared: another call installed its own.
            drop(unsafe { Box::from_raw(fresh) });
        }
    }

    /// Records a grant taken at once (no wait), if recording.
    #[inline]
    fn granted(&self, n: u64) {
        if let Some(r) = self.recorder() {
            r.granted(n as usize);
        }
    }

    /// Records the grant of a queued request: queued at `queued_at`,
    /// completed at `granted_at` (its slot's stamps, on the shared clock:
    /// the granting process may be another one).
    fn granted_after(&self, n: usize, queued_at: u64, granted_at: u64) {
        if let Some(r) = self.recorder() {
            r.granted_after(
                n,
                Duration::from_nanos(granted_at.saturating_sub(queued_at)),
            );
        }
    }

    /// Records that a queued request left without its permits.
    fn cancelled(&self) {
        if let Some(r) = self.recorder() {
            r.cancelled();
        }
    }
}

/// `Locked::finish` of a slot of `me`, with the slot's `since` read first:
/// if the outcome is `Granted`, the moment the request was completed.
fn finish_stamped(l: &Locked<'_>, me: u32, slot: u32, seq: u64) -> ((SlotOutcome, u64), Rings) {
    let granted_at = Locked::slot_since(l.seg, slot);
    let (out, rings) = l.finish(me, slot, seq);
    ((out, granted_at), rings)
}

/// The attachment as handles see it: stops and joins the doorbell thread
/// when the last handle goes.
pub(crate) struct Attachment {
    inner: Arc<Inner>,
    doorbell: Mutex<Option<JoinHandle<()>>>,
}

impl Drop for Attachment {
    fn drop(&mut self) {
        if self.inner.forked() {
            // The doorbell thread is the parent's, not ours: it does not
            // exist in this child, and never drops the `Inner` it owns (nor
            // does any other thread of the parent that held a clone). So the
            // child's copies of the mapping and of the fd, whose open file
            // description carries the parent's liveness lock, would stay
            // until the child exits, and a parent killed meanwhile would
            // never be reclaimed. Release them now: the last handle of this
            // process on the attachment is gone.
            // SAFETY: in a forked child the attachment is reached only
            // through handles (every operation fails with `Forked` before
            // touching the segment, but `available_permits` and friends read
            // it), and this was the last one; the other owners of `inner`
            // are threads of the parent, which do not run in the child. The
            // lane caches hold weak references and only touch `Inner::lanes`.
            unsafe { self.inner.map.release() };
            return;
        }
        self.inner.stop.store(true, Release);
        self.inner.ring(Rings::proc(self.inner.me));
        let handle = self
            .doorbell
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(h) = handle {
            // The last handle may be dropped by a callback on the doorbell
            // thread itself: it then exits on its own.
            if h.thread().id() != std::thread::current().id() {
                let _ = h.join();
            }
        }
    }
}

type Registry = Vec<((u64, u64), u32, Weak<Attachment>)>;

/// The registry of the attachments of one process (one fork generation),
/// keyed by the segment file's identity (`st_dev`, `st_ino`), not by name:
/// two names of one file (a hard link in /dev/shm) are one segment, and the
/// process gets one record on it. What makes that hold for opens that race
/// is the file's init lock (an OFD lock, so per file whatever the name),
/// which `open` holds from before its look-up in `list` until it has
/// published a new attachment there. `open` also claims its name in
/// `opening` for its whole run, so that two threads opening one name wait
/// on a condition variable rather than poll the init lock; the opens of
/// other names run meanwhile (an open of one name may wait up to
/// `OPEN_WAIT` for a held init lock: the others must not queue behind it).
/// `list` is locked only to look an attachment up or add one.
struct Reg {
    gen: u64,
    list: Mutex<Registry>,
    /// The names an `open` of this process is running for.
    opening: Mutex<Vec<String>>,
    /// Notified when a name leaves `opening`.
    opened: Condvar,
    /// The registry this one replaced (the parent's), kept reachable so that
    /// leak checkers (valgrind, LeakSanitizer) do not report it in children.
    _replaced: *const Reg,
}

/// The current `Reg`, leaked (never freed), or null before the first `open`.
/// A forked child starts a registry of its own at its first `open`: the
/// parent's may be locked by a thread that does not exist in the child (one
/// inside `open` at the fork, waiting up to `OPEN_WAIT`), and its entries are
/// the parent's attachments, which the child never reuses.
static REGISTRY: AtomicPtr<Reg> = AtomicPtr::new(ptr::null_mut());

/// The registry of fork generation `gen` (`FORK_GEN` now).
fn registry(gen: u64) -> &'static Reg {
    loop {
        let cur = REGISTRY.load(Acquire);
        // SAFETY: non-null only once set from a leaked `Box`, never freed.
        if let Some(reg) = unsafe { cur.as_ref() } {
            if reg.gen == gen {
                return reg;
            }
        }
        let fresh = Box::into_raw(Box::new(Reg {
            gen,
            list: Mutex::new(Vec::new()),
            opening: Mutex::new(Vec::new()),
            opened: Condvar::new(),
            _replaced: cur,
        }));
        // AcqRel: publishes the fresh registry; reads a racing one's.
        match REGISTRY.compare_exchange(cur, fresh, AcqRel, Acquire) {
            // The one replaced (the parent's, in a forked child) is leaked:
            // its locks may be held for ever.
            // SAFETY: leaked from here on, never freed.
            Ok(_) => return unsafe { &*fresh },
            // SAFETY: `fresh` was never shared.
            Err(_) => drop(unsafe { Box::from_raw(fresh) }),
        }
    }
}

/// A name claimed in `Reg::opening` for the run of one `open`; given back
/// (and the waiting opens of the name woken) when dropped.
struct Claim<'a> {
    reg: &'a Reg,
    name: &'a str,
}

impl<'a> Claim<'a> {
    /// Claims `name`, waiting until `deadline` at most (then
    /// `Error::TimedOut`) for another thread's `open` of it to end.
    fn new(reg: &'a Reg, name: &'a str, deadline: Instant) -> Result<Self, Error> {
        let mut opening = reg.opening.lock().unwrap_or_else(|e| e.into_inner());
        while opening.iter().any(|n| n == name) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Error::TimedOut);
            }
            opening = reg
                .opened
                .wait_timeout(opening, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        opening.push(name.to_owned());
        Ok(Claim { reg, name })
    }
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        let mut opening = self.reg.opening.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = opening.iter().position(|n| n == self.name) {
            opening.swap_remove(i);
        }
        drop(opening);
        self.reg.opened.notify_all();
    }
}

pub(crate) fn open(
    name: &str,
    total: Option<u64>,
    create: Create,
    mode: u32,
    accept_foreign_owner: bool,
    resize: bool,
    label: &str,
) -> Result<Arc<Attachment>, Error> {
    watch_forks();
    let gen = FORK_GEN.load(Relaxed);
    let deadline = Instant::now() + OPEN_WAIT;
    let reg = registry(gen);
    // Another thread of this process opening the same name counts against
    // this open's bound, as the init and segment locks do.
    let _claim = Claim::new(reg, name, deadline)?;
    // `total`: the one asked for (`None` for `attach`, which takes the
    // segment's own and never resizes).
    let (map, _created, init_lock) = sys::open_segment(
        name,
        total,
        create,
        mode,
        accept_foreign_owner,
        resize,
        deadline,
    )?;
    let resize_to = total.filter(|_| resize);
    let pid = sys::pid();
    let found = {
        let mut list = reg.list.lock().unwrap_or_else(|e| e.into_inner());
        list.retain(|(_, _, w)| w.strong_count() > 0);
        list.iter()
            .filter(|(di, p, _)| *di == map.dev_ino && *p == pid)
            .filter(|(_, _, w)| w.upgrade().is_some_and(|a| a.inner.gen == gen))
            .find_map(|(_, _, w)| w.upgrade())
    };
    if let Some(att) = found {
        // Already attached in this process: one record, one doorbell thread,
        // and the record's label (the first one wins).
        drop(map);
        drop(init_lock);
        if let Some(t) = resize_to.filter(|&t| att.total() != t) {
            // Bounded like the other lock waits of `open` (a process stopped
            // inside the lock: TimedOut, nothing changed).
            att.inner
                .locked_until(Some(deadline), |l| ((), l.set_total(t)))?;
        }
        return Ok(att);
    }
    let seg = map.seg();
    let fd = map.fd;
    let state = sys::lock(seg, Some(deadline))?;
    let attached = {
        let _guard = SegGuard(seg);
        let l = Locked::new(seg);
        let mut rings = Rings::default();
        if let LockState::OwnerDied = state {
            rings.merge(l.repair(None, |i| sys::owner_dead(fd, i)));
            rings.merge(l.sweep(None, |i| sys::owner_dead(fd, i)));
            sys::mark_consistent(seg);
        }
        let host = volt_sem::inspect::hostname();
        let who = Ident {
            pid,
            start_time: sys::start_time(),
            label,
            host: &host,
        };
        let (attached, more) = l.attach(
            &who,
            |i| sys::ofd_lock(fd, i as i64, false).unwrap_or(false),
            |i| sys::owner_dead(fd, i),
        );
        rings.merge(more);
        if attached.is_ok() {
            // Under the same lock as the attach: the total this open asked
            // for is the one in force when it returns (unless another
            // process changes it after: the last one wins).
            if let Some(t) = resize_to.filter(|&t| l.total() != t) {
                rings.merge(l.set_total(t));
            }
        }
        (attached, rings)
    };
    let (me, rings) = match attached {
        (Ok(me), rings) => (me, rings),
        (Err(e), rings) => {
            drop(init_lock);
            // The repair and the sweeps above may have granted queued
            // requests (permits a dead lock owner had in transit, a dead
            // process's reclaimed ones) even though no record was free:
            // their wake-ups go out all the same, or those waiters would
            // only notice at their next periodic sweep.
            ring_segment(map.seg(), rings);
            return Err(op_error(e));
        }
    };
    let inner = Arc::new(Inner {
        map,
        me,
        pid,
        label: label.to_owned(),
        gen,
        local: Mutex::new(Local {
            table: vec![(ptr::null(), 0, 0); MAX_WAITERS],
            count: 0,
        }),
        stop: AtomicBool::new(false),
        id: NEXT_ID.fetch_add(1, Relaxed),
        lanes: AtomicU64::new(0),
        recorder: AtomicPtr::new(ptr::null_mut()),
        queued: AtomicUsize::new(0),
        abandoned: Mutex::new(Vec::new()),
    });
    let att = Arc::new(Attachment {
        inner,
        doorbell: Mutex::new(None),
    });
    // Published before the init lock goes: another thread of this process
    // opening the same segment under another name (a hard link in
    // /dev/shm) passes the same file's init lock (an OFD lock: the file's
    // identity, whatever the name), so it finds this attachment instead of
    // attaching a second record. The name claim above does not cover that:
    // it is per name.
    reg.list.lock().unwrap_or_else(|e| e.into_inner()).push((
        att.inner.map.dev_ino,
        pid,
        Arc::downgrade(&att),
    ));
    drop(init_lock);
    att.inner.ring(rings);
    crate::hooks::in_open_after_attach(name);
    Ok(att)
}

pub(crate) fn unlink(name: &str) -> Result<(), Error> {
    sys::unlink(name)
}

pub(crate) fn list() -> Result<Vec<String>, Error> {
    sys::list()
}

// ------------------------------------------------------------------ delivery

std::thread_local! {
    /// Whether this thread is a doorbell thread.
    static IS_DOORBELL: Cell<bool> = const { Cell::new(false) };
}

fn doorbell_loop(inner: Arc<Inner>) {
    IS_DOORBELL.with(|d| d.set(true));
    let bell = &inner.seg().procs[inner.me as usize].doorbell;
    let mut last_sweep = Instant::now();
    loop {
        // Acquire, and loaded before looking: a ring after this load changes
        // the word, so the wait below returns at once.
        let seen = bell.load(Acquire);
        if inner.stop.load(Acquire) {
            return;
        }
        deliver(&inner);
        if inner.forked() {
            // A callback of the batch just delivered called fork(), and this
            // is the child's copy of the thread (its only thread), which has
            // finished that batch (header, FORK). The queue it would go on
            // serving is the parent's: the grants are the parent's to
            // deliver, and their callbacks must never run here. Ending the
            // thread ends the child (as exit(0)) unless a callback exec()ed.
            return;
        }
        let abandoned = settle_abandoned(&inner);
        let waiting = inner.local().count > 0 || abandoned;
        let mut timeout = None;
        if waiting {
            if last_sweep.elapsed() >= SWEEP_PERIOD {
                let _ = inner.locked(|l| ((), inner.sweep_locked(l)));
                last_sweep = Instant::now();
            }
            timeout = Some(SWEEP_PERIOD.saturating_sub(last_sweep.elapsed()));
        }
        sys::futex_wait(bell, seen, timeout);
    }
}

/// Takes the abandoned requests of timed acquires out of the queue (see
/// `Inner::abandoned`): a queued one is cancelled (its partial grant handed
/// on), a granted one collected and released. Waits for the lock (this is the
/// doorbell thread: nobody waits for it). Returns whether some are left (the
/// lock failed: tried again at the next sweep period).
fn settle_abandoned(inner: &Inner) -> bool {
    let todo = core::mem::take(&mut *inner.abandoned.lock().unwrap_or_else(|e| e.into_inner()));
    if todo.is_empty() {
        return false;
    }
    let me = inner.me;
    let done = inner.locked(|l| {
        let mut rings = Rings::default();
        for &(slot, seq, n) in &todo {
            let (out, more) = l.finish(me, slot, seq);
            rings.merge(more);
            if out == SlotOutcome::Granted {
                // Collected into our `held`: give them back at once (the
                // acquire that asked for them has returned TimedOut).
                if let Ok(more) = l.release(me, n) {
                    rings.merge(more);
                }
            }
        }
        ((), rings)
    });
    if done.is_err() {
        inner
            .abandoned
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(todo);
        return true;
    }
    false
}

/// Claims this process's completed waiters, collects their grants into the
/// process's `held` (one lock for the batch), then calls their callbacks, one
/// after another, outside every lock.
fn deliver(inner: &Inner) {
    let seg = inner.seg();
    let mut claimed: Vec<(*const ShmWaiter, u32, u64, u64)> = Vec::new();
    {
        let mut local = inner.local();
        if local.count == 0 {
            return;
        }
        for slot in 0..MAX_WAITERS as u32 {
            let (w, seq, queued_at) = local.table[slot as usize];
            if w.is_null() {
                continue;
            }
            let st = Locked::slot_state(seg, slot);
            let notifying = match st {
                slot_state::GRANTED => phase::NOTIFYING_GRANTED,
                // The raw phases know granted and closed only: a request
                // failed by `set_total` ends as closed, with FAILED_WORD in
                // its backend word (`SharedSemaphore::failed_above_total`).
                slot_state::CLOSED | slot_state::FAILED => phase::NOTIFYING_CLOSED,
                _ => continue,
            };
            local.table[slot as usize].0 = ptr::null();
            local.count -= 1;
            inner.queued.fetch_sub(1, Relaxed);
            // SAFETY: a waiter in the table is valid until its owner's
            // finish_raw removed it (under this lock) or its callback returned.
            let wr = unsafe { &*w };
            if st == slot_state::FAILED {
                // Claimed (out of the table, under its lock): this thread
                // owns the waiter until the phase store below publishes it.
                wr.set_backend_word(FAILED_WORD);
            }
            // Release: pairs with the owner's Acquire load in `finish_raw`
            // (the outcome, and the backend word above, are seen with it).
            wr.node().set_phase(notifying, Release);
            claimed.push((w, slot, seq, queued_at));
        }
    }
    if claimed.is_empty() {
        return;
    }
    let me = inner.me;
    let outcomes = inner.locked(|l| {
        let o: Vec<(SlotOutcome, u64)> = claimed
            .iter()
            .map(|&(_, slot, seq, _)| finish_stamped(l, me, slot, seq).0)
            .collect();
        (o, Rings::default())
    });
    for (i, &(w, _, _, queued_at)) in claimed.iter().enumerate() {
        // A grant that could not be collected (the lock is unrecoverable, or
        // the slot vanished) is reported as Closed: never a permit we lack.
        let granted = match outcomes.as_ref().map(|o| o[i]) {
            Ok((SlotOutcome::Granted, granted_at)) => {
                // Recorded here, once: the owner's `finish_raw` then finds
                // the waiter claimed and only reads its outcome.
                // SAFETY: claimed above; valid until the final phase.
                let n = unsafe { &*w }.requested();
                inner.granted_after(n, queued_at, granted_at);
                true
            }
            _ => false,
        };
        if !granted {
            // SAFETY: claimed above; we own it until the final phase.
            unsafe { &*w }
                .node()
                .set_phase(phase::NOTIFYING_CLOSED, Release);
        }
    }
    // SAFETY: claimed by this thread above (NOTIFYING, out of the local
    // table, both locks released); valid until the trampoline's final store.
    unsafe { raw::deliver(claimed.iter().map(|c| NonNull::from((*c.0).node()))) };
}

// ------------------------------------------------------------------ operations

impl Attachment {
    /// See `SharedSemaphore::fail_queued`.
    pub(crate) fn fail_queued(&self, w: &ShmWaiter) -> Result<bool, Error> {
        self.inner.fail_queued(w)
    }

    fn ensure_doorbell(&self) -> Result<(), Error> {
        let mut slot = self.doorbell.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_none() {
            let inner = self.inner.clone();
            let h = std::thread::Builder::new()
                .name("volt-sem-shm-doorbell".into())
                .spawn(move || doorbell_loop(inner))
                .map_err(|e| Error::Os(e.raw_os_error().unwrap_or(libc::EAGAIN)))?;
            *slot = Some(h);
        }
        Ok(())
    }

    /// Whether this is a `fork()` child's copy of a handle of its parent.
    pub(crate) fn forked(&self) -> bool {
        self.inner.forked()
    }

    pub(crate) fn total(&self) -> u64 {
        self.inner.total()
    }

    /// See `SharedSemaphore::set_total` (and `set_total_timeout`: the lock
    /// waited for until `deadline` at most).
    pub(crate) fn set_total(&self, n: u64, deadline: Option<Instant>) -> Result<(), Error> {
        self.inner.locked_until(deadline, |l| ((), l.set_total(n)))
    }

    /// See `SharedSemaphore::reopen` (and `reopen_timeout`).
    pub(crate) fn reopen(&self, deadline: Option<Instant>) -> Result<(), Error> {
        self.inner.locked_until(deadline, |l| {
            l.reopen();
            ((), Rings::default())
        })
    }

    pub(crate) fn try_acquire(&self, n: u64) -> Result<(), Error> {
        let inner = &self.inner;
        if n > inner.total() {
            return Err(Error::TooManyPermits);
        }
        let me = inner.me;
        if inner.forked() {
            return Err(Error::Forked);
        }
        if fast_take(inner.seg(), me, lane(inner), n) == Fast::Done {
            // Off: one load of the recorder pointer, one predicted branch.
            inner.granted(n);
            return Ok(());
        }
        // Never waits long: a process stopped inside the lock would make it
        // wait for as long as it stays stopped.
        let deadline = Instant::now().checked_add(TRY_LOCK_WAIT);
        match inner.locked_until(deadline, |l| match l.try_take(me, n) {
            Err(OpError::NoPermits) => {
                // Slow path: a dead holder may be sitting on permits.
                let rings = inner.sweep_locked(l);
                (l.try_take(me, n), rings)
            }
            r => (r, Rings::default()),
        }) {
            Err(Error::TimedOut) => Err(Error::NoPermits),
            r => {
                r?.map_err(op_error)?;
                inner.granted(n);
                Ok(())
            }
        }
    }

    /// A request for 0 permits: granted at once (and recorded) unless the
    /// handle is a fork child's copy (`Forked`, as every call on it) or the
    /// semaphore is closed.
    pub(crate) fn zero_permits(&self) -> Result<(), Error> {
        if self.inner.forked() {
            return Err(Error::Forked);
        }
        if self.is_closed() {
            return Err(Error::Closed);
        }
        self.inner.granted(0);
        Ok(())
    }

    /// See `SharedSemaphore::enable_stats`.
    pub(crate) fn enable_stats(&self) {
        self.inner.install_recorder();
    }

    /// See `SharedSemaphore::record_timeout`.
    pub(crate) fn record_timeout(&self) {
        if let Some(r) = self.inner.recorder() {
            r.timed_out();
        }
    }

    /// See `SharedSemaphore::stats`: lock-free reads only.
    pub(crate) fn stats(&self) -> Stats {
        let inner = &self.inner;
        let available = self.available() as usize;
        if inner.forked() {
            // The record and the counters are the parent's: this handle
            // holds nothing, waits for nothing and records nothing here.
            return Gauges {
                available,
                ..Gauges::default()
            }
            .without_counters();
        }
        // Relaxed: a gauge. Between the two writes of a lock-free operation
        // of another thread of this process, it may be off by that
        // operation's permits for a moment, as any snapshot may.
        let acct = inner.seg().procs[inner.me as usize].acct.load(Relaxed);
        let gauges = Gauges {
            available,
            held: crate::segment::acct::held(acct) as usize,
            queued: inner.queued.load(Relaxed),
        };
        match inner.recorder() {
            Some(r) => r.snapshot(gauges),
            None => gauges.without_counters(),
        }
    }

    pub(crate) fn release(&self, n: u64) -> Result<(), Error> {
        if self.inner.forked() {
            return Err(Error::Forked);
        }
        if n == 0 {
            return Ok(());
        }
        let me = self.inner.me;
        match if crate::hooks::release_must_lock() {
            Fast::Slow
        } else {
            fast_release(self.inner.seg(), me, lane(&self.inner), n)
        } {
            Fast::Done => return Ok(()),
            Fast::NotHeld { held } => return Err(Error::NotHeld { held }),
            Fast::Slow => {}
        }
        self.inner
            .locked(|l| match l.release(me, n) {
                Ok(rings) => (Ok(()), rings),
                Err(e) => (Err(e), Rings::default()),
            })?
            .map_err(op_error)
    }

    pub(crate) fn close(&self) -> Result<(), Error> {
        self.inner.locked(|l| ((), l.close()))
    }

    pub(crate) fn available(&self) -> u64 {
        crate::segment::word::available(self.inner.seg().hdr.state.load(Relaxed))
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.inner.seg().hdr.closed.load(Relaxed) != 0
    }

    /// See `SharedSemaphore::is_unlinked`: the segment file's link count,
    /// read through this attachment's own fd (so it is this segment's, even
    /// when another one has been created under the name since).
    pub(crate) fn is_unlinked(&self) -> Result<bool, Error> {
        if self.inner.forked() {
            return Err(Error::Forked);
        }
        Ok(sys::file_stat(self.inner.map.fd)?.st_nlink == 0)
    }

    pub(crate) fn held(&self) -> Result<u64, Error> {
        let me = self.inner.me;
        self.inner.locked(|l| (l.held(me), Rings::default()))
    }

    /// Sweeps dead processes first, so that `live` counts live processes.
    pub(crate) fn census(&self) -> Result<Census, Error> {
        let inner = &self.inner;
        inner.locked(|l| {
            let rings = inner.sweep_locked(l);
            (l.census(), rings)
        })
    }

    pub(crate) fn record(&self) -> u32 {
        self.inner.me
    }

    /// Sweeps dead processes first, so that none is listed; the clock is read
    /// under the lock, after the sweep.
    pub(crate) fn inspect(
        &self,
        deadline: Option<Instant>,
    ) -> Result<volt_sem::inspect::Inspection, Error> {
        let inner = &self.inner;
        inner.locked_until(deadline, |l| {
            let rings = inner.sweep_locked(l);
            (l.inspect(crate::clock::now()), rings)
        })
    }

    pub(crate) fn label(&self) -> &str {
        &self.inner.label
    }

    /// A blocking acquire: the thread sleeps on the futex word of its own
    /// slot (the slot's `state`, marked `direct`), which the granting (or
    /// closing) process wakes itself after unlocking: one wake-up, no
    /// doorbell thread. While it waits it also runs the liveness sweep every
    /// `SWEEP_PERIOD` (the doorbell thread does that only for raw waiters).
    pub(crate) fn acquire_deadline(&self, n: u64, deadline: Option<Instant>) -> Result<(), Error> {
        self.acquire_deadline_polled(n, deadline, None, None)
            .map(|_| ())
    }

    /// Fails the blocking request of `ticket` if it is still queued (FAILED,
    /// as `fail_queued` fails a raw one: its partial grant handed on, its
    /// thread woken at once, its acquire returning `TooManyPermits`).
    /// `false` if it is not queued any more (the ticket names one request:
    /// its slot's owner and sequence number must match).
    pub(crate) fn fail_blocking(&self, ticket: BlockingTicket) -> Result<bool, Error> {
        let inner = &self.inner;
        let me = inner.me;
        inner.locked(|l| match l.fail_queued(me, ticket.slot, ticket.seq) {
            Some(rings) => (true, rings),
            None => (false, Rings::default()),
        })
    }

    /// `acquire_deadline`, also calling `poll.1()` about every `poll.0` while
    /// it waits; if that returns true, the request is cancelled (a partial
    /// grant is handed on) and the result is `Ok(false)`, unless the grant
    /// came first (`Ok(true)`). If the request queues, `on_queued` is called
    /// once with its ticket (outside the lock, before the wait), so that
    /// another thread can fail it (`fail_blocking`). (The one caller of
    /// `acquire_until`, which is inlined here: a second caller would make
    /// the fast path pay a call.)
    pub(crate) fn acquire_deadline_polled(
        &self,
        n: u64,
        deadline: Option<Instant>,
        poll: Option<(Duration, &mut dyn FnMut() -> bool)>,
        on_queued: Option<&mut dyn FnMut(BlockingTicket)>,
    ) -> Result<bool, Error> {
        let r = self.acquire_until(n, deadline, poll, on_queued);
        if r == Err(Error::TimedOut) {
            // Only a deadline makes it time out: before queueing (the lock
            // was held past it), or queued (then also counted as a cancel).
            self.record_timeout();
        }
        r
    }

    /// `acquire_deadline_polled`, recording grants and cancels.
    fn acquire_until(
        &self,
        n: u64,
        deadline: Option<Instant>,
        mut poll: Option<(Duration, &mut dyn FnMut() -> bool)>,
        on_queued: Option<&mut dyn FnMut(BlockingTicket)>,
    ) -> Result<bool, Error> {
        if IS_DOORBELL.with(|d| d.get()) {
            return Err(Error::InCallback);
        }
        let inner = &self.inner;
        if n > inner.total() {
            return Err(Error::TooManyPermits);
        }
        if n == 0 {
            return self.zero_permits().map(|()| true);
        }
        if inner.forked() {
            return Err(Error::Forked);
        }
        let me = inner.me;
        if fast_take(inner.seg(), me, lane(inner), n) == Fast::Done {
            inner.granted(n);
            return Ok(true);
        }
        // A deadline bounds the wait for the lock too (a process stopped
        // inside it): TimedOut, nothing queued.
        let queued = inner.locked_until(deadline, |l| {
            let rings = match l.try_take(me, n) {
                Ok(()) => return (Ok(None), Rings::default()),
                Err(OpError::Closed) => return (Err(Error::Closed), Rings::default()),
                // Slow path: a dead holder may be sitting on permits.
                Err(_) => inner.sweep_locked(l),
            };
            match l.enqueue(me, n) {
                Ok(Enqueued::Ready) => (Ok(None), rings),
                Ok(Enqueued::Queued { slot, seq }) => {
                    // Under the same lock: no grant can be rung before the
                    // slot says where to ring.
                    // (Only garbage written into the slot meanwhile can
                    // make this fail.)
                    if !l.set_direct(me, slot, seq) || l.is_corrupt() {
                        return (Err(Error::Corrupt), rings);
                    }
                    inner.queued.fetch_add(1, Relaxed);
                    (
                        Ok(Some((slot, seq, Locked::slot_since(l.seg, slot)))),
                        rings,
                    )
                }
                Err(e) => (Err(op_error(e)), rings),
            }
        })??;
        let Some((slot, seq, queued_at)) = queued else {
            inner.granted(n);
            return Ok(true);
        };
        let word = &inner.seg().slots[slot as usize].state;
        let mut interrupted = false;
        let mut panicked = None;
        if let Some(f) = on_queued {
            // Outside the lock: the callee may fail the request at once
            // (`fail_blocking` takes the lock), then the wait below ends at
            // its first look. A panic ends the wait as an interruption does.
            if let Err(p) =
                std::panic::catch_unwind(AssertUnwindSafe(|| f(BlockingTicket { slot, seq })))
            {
                panicked = Some(p);
                interrupted = true;
            }
        }
        // A short bounded spin before the first sleep (issue 30): with short
        // critical sections the grant usually lands within microseconds, and
        // catching it here saves this thread a FUTEX_WAIT and its wake-up
        // (several microseconds on a VM). About 380 pause instructions in all
        // (1, 2, 4, ... 32 per round), as the in-process blocking waiter; a
        // deadline or an interruption poll is checked by the loop below, no
        // later than after the spin.
        for round in 0..if interrupted { 0 } else { SPIN_ROUNDS } {
            // Acquire: as the load in the loop below.
            if word.load(Acquire) != slot_state::QUEUED {
                break;
            }
            for _ in 0..(1u32 << round.min(5)) {
                core::hint::spin_loop();
            }
        }
        let mut last_sweep = Instant::now();
        let mut last_poll = Instant::now();
        while !interrupted {
            // Acquire: pairs with the Release store of GRANTED or CLOSED under
            // the lock; the futex re-checks the value, so a grant between
            // this load and the wait makes the wait return at once.
            if word.load(Acquire) != slot_state::QUEUED {
                break;
            }
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                break;
            }
            if let Some((every, f)) = poll.as_mut() {
                if last_poll.elapsed() >= *every {
                    // A panic of the check ends the wait as an interruption
                    // does (the request must not stay queued: at the head it
                    // would stop the FIFO of every process until this one
                    // detaches), then goes on to the caller.
                    let polled = std::panic::catch_unwind(AssertUnwindSafe(f));
                    if inner.forked() {
                        // The check forked (a signal handler run by a
                        // binding's poll): this is the child, and the
                        // queued request is the parent's, which the parent
                        // still waits for. Leave its slot alone (collecting
                        // or cancelling it here would take the parent's
                        // grant, or fail its wait).
                        if let Err(p) = polled {
                            std::panic::resume_unwind(p);
                        }
                        return Err(Error::Forked);
                    }
                    match polled {
                        Ok(false) => {}
                        Ok(true) => {
                            interrupted = true;
                            break;
                        }
                        Err(p) => {
                            panicked = Some(p);
                            interrupted = true;
                            break;
                        }
                    }
                    // On to the sweep and the wait (no `continue`): a poll
                    // period shorter than one turn of this loop would
                    // otherwise starve the sweep for dead processes.
                    last_poll = Instant::now();
                }
            }
            if last_sweep.elapsed() >= SWEEP_PERIOD {
                // Bounded like the wait itself: a lock held by a stopped
                // process skips this sweep, it does not stall the wait.
                let mut until = now + SWEEP_PERIOD;
                if let Some(d) = deadline {
                    until = until.min(d);
                }
                let _ = inner.locked_until(Some(until), |l| ((), inner.sweep_locked(l)));
                last_sweep = Instant::now();
                continue;
            }
            let mut wait = SWEEP_PERIOD.saturating_sub(last_sweep.elapsed());
            if let Some(d) = deadline {
                // Read again: a poll above may have taken a while.
                wait = wait.min(d.saturating_duration_since(Instant::now()));
            }
            if let Some((every, _)) = &poll {
                wait = wait.min(every.saturating_sub(last_poll.elapsed()));
            }
            sys::futex_wait(word, slot_state::QUEUED, Some(wait));
        }
        let r = self.end_wait(n, (slot, seq, queued_at), deadline, interrupted);
        if let Some(p) = panicked {
            if r == Ok(true) {
                // Granted before the cancel: the caller gets no permit.
                let _ = self.release(n);
            }
            std::panic::resume_unwind(p);
        }
        r
    }

    /// The end of `acquire_until`'s wait for its queued request (`slot`,
    /// ticket `seq`, queued at `queued_at`): collects the grant (`Ok(true)`),
    /// or takes the request out of the queue (given up at the deadline, or
    /// `interrupted`: `Ok(false)`), or reports how it was ended.
    fn end_wait(
        &self,
        n: u64,
        (slot, seq, queued_at): (u32, u64, u64),
        deadline: Option<Instant>,
        interrupted: bool,
    ) -> Result<bool, Error> {
        let inner = &self.inner;
        let me = inner.me;
        let word = &inner.seg().slots[slot as usize].state;
        inner.queued.fetch_sub(1, Relaxed);
        // Granted: collect without the lock (the releaser that woke us may
        // still be in its critical section). Closed, or given up: finish
        // under the lock (cancelling hands the partial grant on). The stamp
        // of the grant is read first, while the slot is still ours (Acquire:
        // seen GRANTED, so its stamp, stored before, is seen too); a grant
        // that lands after this look is collected under the lock, which
        // reads its stamp there.
        let granted_at = (word.load(Acquire) == slot_state::GRANTED)
            .then(|| Locked::slot_since(inner.seg(), slot));
        if fast_collect(inner.seg(), me, slot, seq) == Fast::Done {
            let granted_at = granted_at.unwrap_or_else(crate::clock::now);
            inner.granted_after(n as usize, queued_at, granted_at);
            return Ok(true);
        }
        // (A deadline within CANCEL_GRACE of the end of what an `Instant`
        // can express, a timeout that is infinite in all but name, leaves
        // the finish unbounded too, rather than overflow.)
        let finish_by = deadline.and_then(|d| d.max(Instant::now()).checked_add(CANCEL_GRACE));
        let finished = match inner.locked_until(finish_by, |l| finish_stamped(l, me, slot, seq)) {
            Err(Error::TimedOut) => {
                // The lock is held by a stopped (or not yet noticed dead)
                // process: leave the cancel to the doorbell thread rather
                // than overrun the deadline. The request may still be
                // granted meanwhile; its permits then go straight back.
                inner
                    .abandoned
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push((slot, seq, n));
                // Given up while queued: a cancel (and a timeout, counted by
                // the caller), whatever the doorbell thread then finds.
                inner.cancelled();
                if self.ensure_doorbell().is_ok() {
                    inner.ring(Rings::proc(me));
                } else {
                    // No doorbell thread, and none can be created (the
                    // process is out of threads or memory): nobody would
                    // take the request out of the queue, where it would
                    // keep what it is granted (at the head, stop the FIFO
                    // of every process) until this process detaches. Do it
                    // here, waiting for the lock past the deadline.
                    settle_abandoned(inner);
                }
                return Err(Error::TimedOut);
            }
            r => r?,
        };
        match finished {
            (SlotOutcome::Granted, granted_at) => {
                inner.granted_after(n as usize, queued_at, granted_at);
                Ok(true)
            }
            (SlotOutcome::Cancelled { .. }, _) => {
                inner.cancelled();
                if interrupted {
                    Ok(false)
                } else {
                    Err(Error::TimedOut)
                }
            }
            (SlotOutcome::TooManyPermits, _) => Err(Error::TooManyPermits),
            (SlotOutcome::Closed | SlotOutcome::Gone, _) => Err(Error::Closed),
        }
    }

    pub(crate) fn pid(&self) -> u32 {
        self.inner.pid
    }
}

// SAFETY: a queued waiter is published in this process's waiter table under
// the segment lock and completed once, by the doorbell thread (or a local
// close or cancel), through the `raw` trampoline; `finish_raw` is
// `raw::finish`.
unsafe impl raw::RawSemaphore for SharedSemaphore {
    type Waiter = ShmWaiter;
    type Error = Error;
    type Finish = Finish;

    unsafe fn acquire_raw(
        &self,
        waiter: Pin<&ShmWaiter>,
        n: usize,
        wake: WakeFn,
        ctx: *mut c_void,
    ) -> Result<RawAcquire, Error> {
        let n = n as u64;
        let att = &self.att;
        let inner = &att.inner;
        let w = waiter.get_ref();
        debug_assert!(!w.is_busy(), "acquire_raw on a busy waiter");
        w.node().set_phase(phase::IDLE, Relaxed);
        // A new request: whatever the last one ended as is forgotten (the
        // waiter is idle, only its owner touches it); a queued request
        // writes its slot below.
        w.set_backend_word(NO_SLOT);
        if n > inner.total() {
            return Err(Error::TooManyPermits);
        }
        if n == 0 {
            return att.zero_permits().map(|()| RawAcquire::Ready);
        }
        if inner.forked() {
            return Err(Error::Forked);
        }
        w.set_foreign_request(Backend::Shared, n as usize, Arc::as_ptr(inner) as *const ());
        // SAFETY: the waiter is not busy: only its owner (us) touches it.
        unsafe { w.node().set_callback(wake, ctx) };
        if fast_take(inner.seg(), inner.me, lane(inner), n) == Fast::Done {
            inner.granted(n);
            return Ok(RawAcquire::Ready);
        }
        att.ensure_doorbell()?;
        let me = inner.me;
        let r = inner.locked(|l| {
            let rings = match l.try_take(me, n) {
                Ok(()) => return (Ok(RawAcquire::Ready), Rings::default()),
                Err(OpError::Closed) => return (Err(Error::Closed), Rings::default()),
                // Slow path: a dead holder may be sitting on permits.
                Err(_) => inner.sweep_locked(l),
            };
            match l.enqueue(me, n) {
                Ok(Enqueued::Ready) => (Ok(RawAcquire::Ready), rings),
                Ok(Enqueued::Queued { .. }) if l.is_corrupt() => {
                    // Never published: the caller gets Corrupt and an idle
                    // waiter.
                    (Err(Error::Corrupt), rings)
                }
                Ok(Enqueued::Queued { slot, seq }) => {
                    w.set_backend_word(slot);
                    // Published under the segment lock: no grant of this
                    // slot can be rung before the doorbell thread can find
                    // the waiter (lock order: segment, then local table).
                    let mut local = inner.local();
                    w.node().set_phase(phase::WAITING, Release);
                    local.table[slot as usize] = (w, seq, Locked::slot_since(l.seg, slot));
                    local.count += 1;
                    inner.queued.fetch_add(1, Relaxed);
                    let mut rings = rings;
                    if local.count == 1 {
                        // The doorbell thread may be asleep without a timeout
                        // (it had no waiter): wake it so that it starts its
                        // periodic liveness sweeps.
                        rings.merge(Rings::proc(me));
                    }
                    (Ok(RawAcquire::Pending), rings)
                }
                Err(e) => (Err(op_error(e)), rings),
            }
        })?;
        if r == Ok(RawAcquire::Ready) {
            inner.granted(n);
        }
        r
    }

    unsafe fn finish_raw(&self, waiter: Pin<&ShmWaiter>) -> Finish {
        let w = waiter.get_ref();
        if self.att.inner.forked() {
            // A forked child's copy of a waiter the parent queued: the
            // request is the parent's (its permits go to the parent's
            // record), and a callback the copy says is running runs on the
            // parent's doorbell thread, which this process does not have:
            // waiting for it (`raw::finish`) would never end, and so would
            // the local table's lock if that thread held it at the fork.
            // Nothing to cancel here: the copy is left idle, never granted.
            return if raw::reset_forked_copy(w.node()) {
                Finish::Idle
            } else {
                Finish::Closed
            };
        }
        // SAFETY: forwarded contract: idle or queued on this attachment, pinned.
        unsafe { raw::finish(w.node(), raw::CancelWith(|| self.att.inner.cancel(w))) }
    }

    fn owns(&self, waiter: &ShmWaiter) -> bool {
        ptr::eq(waiter.owner(), Arc::as_ptr(&self.att.inner) as *const ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fast operation run by a thread-local destructor after the lane
    /// cache's (destructors run in reverse order of first use) must not use
    /// the lane the cache gave back: another thread may own it by then, and
    /// two writers of one lane break the census's in-flight marks.
    #[test]
    fn no_lane_after_the_lane_cache_is_gone() {
        let name = format!("unit-lane-{}", std::process::id());
        let att = open(&name, Some(2), Create::OrAttach, 0o600, false, false, "t").unwrap();
        let inner = att.inner.clone();
        let _ = unlink(&name);

        type Seen = Arc<Mutex<Option<(Option<u32>, u64)>>>;
        struct Late(Option<(Arc<Inner>, Seen)>);
        impl Drop for Late {
            fn drop(&mut self) {
                if let Some((inner, seen)) = self.0.take() {
                    let got = lane(&inner);
                    *seen.lock().unwrap() = Some((got, inner.lanes.load(Relaxed)));
                }
            }
        }
        std::thread_local! {
            static LATE: RefCell<Late> = const { RefCell::new(Late(None)) };
        }
        let seen: Seen = Arc::default();
        let (inner2, seen2) = (inner.clone(), seen.clone());
        std::thread::spawn(move || {
            // First use: its destructor runs after the lane cache's.
            LATE.with(|l| l.borrow_mut().0 = Some((inner2.clone(), seen2)));
            assert_eq!(lane(&inner2), Some(0));
        })
        .join()
        .unwrap();
        let (got, owned) = seen.lock().unwrap().take().unwrap();
        if let Some(l) = got {
            assert_ne!(
                owned & (1 << l),
                0,
                "lane {l} used after the thread gave it back (owned: {owned:#b})"
            );
        }
        drop(inner);
        drop(att);
    }
}
