//! The segment layout and the algorithm that runs on it under the segment lock.
//!
//! Nothing here talks to the OS: every function takes a [`Locked`] view of a
//! [`Segment`] (the caller holds the segment lock) and only reads and writes
//! atomics in it. That keeps the algorithm testable over plain memory, and the
//! crash-repair argument local: see the crate documentation, *Crash safety*,
//! for which words are *truth* and which are *derived*.

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering::*};

/// `b"VOLTSHM\x01"`: the first eight bytes of every segment.
pub(crate) const MAGIC: u64 = u64::from_le_bytes(*b"VOLTSHM\x01");
/// Bumped whenever the layout below changes.
pub(crate) const LAYOUT_VERSION: u32 = 1;
/// Capacity of the FIFO of waiter slots (queued requests, all processes).
pub const MAX_WAITERS: usize = 1024;
/// Capacity of the process table (processes attached at once).
pub const MAX_PROCESSES: usize = 128;
/// The largest `total` a segment can be created with, and the largest request:
/// 2^53 - 1, so that every count is exact in a JavaScript number.
pub const MAX_PERMITS: usize = (1 << 53) - 1;

pub(crate) const NIL: u32 = u32::MAX;

/// Every store of the algorithm goes through `put`, so that the crash tests
/// can stop an operation after any number of stores (a process dying there:
/// the stores before reach memory, none after).
pub(crate) trait Put<T> {
    fn put(&self, v: T, o: core::sync::atomic::Ordering);
}

impl Put<u32> for AtomicU32 {
    #[inline(always)]
    fn put(&self, v: u32, o: core::sync::atomic::Ordering) {
        crash_point();
        self.store(v, o)
    }
}

impl Put<u64> for AtomicU64 {
    #[inline(always)]
    fn put(&self, v: u64, o: core::sync::atomic::Ordering) {
        crash_point();
        self.store(v, o)
    }
}

#[cfg(not(test))]
#[inline(always)]
fn crash_point() {}

#[cfg(test)]
fn crash_point() {
    tests::crash::tick();
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
}

/// Process-record states (`Proc::state`).
pub(crate) mod proc_state {
    pub(crate) const FREE: u32 = 0;
    pub(crate) const LIVE: u32 = 1;
}

/// The fixed header. Immutable after initialisation except the lock-guarded
/// words from `available` on.
#[repr(C)]
pub(crate) struct Header {
    /// Written last at initialisation (Release): a segment whose magic is set is
    /// fully initialised.
    pub(crate) magic: AtomicU64,
    pub(crate) version: AtomicU32,
    pub(crate) _reserved: AtomicU32,
    /// `size_of::<Segment>()` of the layout that created it.
    pub(crate) size: AtomicU64,
    /// The permits of the semaphore, fixed at creation.
    pub(crate) total: AtomicU64,
    // ---- guarded by the segment lock from here on ----
    /// Derived: permits nobody holds and no slot was granted.
    pub(crate) available: AtomicU64,
    /// Truth: set once by `close`, never cleared.
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
}

/// Room for a `pthread_mutex_t` (40 bytes on x86-64 glibc, 48 on aarch64).
#[repr(C, align(64))]
pub(crate) struct LockCell(pub(crate) [u64; 8]);

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
    /// Truth: permits this process holds (acquired and collected, not released).
    pub(crate) held: AtomicU64,
}

/// One queued (or completed, not yet collected) request.
#[repr(C)]
pub(crate) struct Slot {
    /// Truth: see [`slot_state`]; stored last (Release) when a slot is filled.
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

/// A bit per process record: whose doorbells to ring after unlocking.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rings(pub(crate) u128);

impl Rings {
    fn add(&mut self, proc: u32) {
        self.0 |= 1u128 << proc;
    }
    pub(crate) fn merge(&mut self, other: Rings) {
        self.0 |= other.0;
    }
    /// The set bits, lowest first (only as many steps as bits set).
    pub(crate) fn iter(self) -> impl Iterator<Item = usize> {
        let mut bits = self.0;
        core::iter::from_fn(move || {
            if bits == 0 {
                return None;
            }
            let i = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            Some(i)
        })
    }
}

/// Why an operation under the lock failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OpError {
    Closed,
    NoPermits,
    QueueFull,
    NotHeld { held: u64 },
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
    /// Not the caller's slot any more (should not happen; reported, not trusted).
    Gone,
}

/// Sums used by the conservation check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Census {
    /// The `total` fixed at creation.
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
}

impl Census {
    /// `available + held + granted == total`.
    pub fn conserved(&self) -> bool {
        self.available + self.held + self.granted == self.total
    }
}

/// The segment, seen by a caller that holds its lock.
pub(crate) struct Locked<'a> {
    pub(crate) seg: &'a Segment,
}

impl<'a> Locked<'a> {
    /// # Safety (logical)
    /// The caller holds the segment lock for as long as the value lives.
    pub(crate) fn new(seg: &'a Segment) -> Self {
        Locked { seg }
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
        self.hdr().available.load(Relaxed)
    }
    pub(crate) fn is_closed(&self) -> bool {
        self.hdr().closed.load(Relaxed) != 0
    }
    pub(crate) fn held(&self, me: u32) -> u64 {
        self.proc(me).held.load(Relaxed)
    }

    /// Initialises a zeroed (or garbage) segment's lock-guarded part.
    pub(crate) fn init(&self, total: u64) {
        let h = self.hdr();
        h.version.put(LAYOUT_VERSION, Relaxed);
        h.size.put(SEGMENT_SIZE as u64, Relaxed);
        h.total.put(total, Relaxed);
        h.available.put(total, Relaxed);
        h.closed.put(0, Relaxed);
        h.queue_len.put(0, Relaxed);
        h.head.put(NIL, Relaxed);
        h.tail.put(NIL, Relaxed);
        h.next_seq.put(1, Relaxed);
        h.free_hint.put(0, Relaxed);
        h.repairs.put(0, Relaxed);
        h.reclaims.put(0, Relaxed);
        for p in &self.seg.procs {
            p.state.put(proc_state::FREE, Relaxed);
            p.held.put(0, Relaxed);
        }
        for s in &self.seg.slots {
            s.state.put(slot_state::FREE, Relaxed);
            s.prev.put(NIL, Relaxed);
            s.next.put(NIL, Relaxed);
        }
    }

    // ---------------------------------------------------------------- processes

    /// Claims a FREE process record. `lock_byte(i)` takes the liveness lock of
    /// record `i` (false: somebody still holds it, try the next one); `dead(i)`
    /// tells whether a LIVE record's owner is gone (it is reclaimed first).
    pub(crate) fn attach(
        &self,
        pid: u32,
        start_time: u64,
        mut lock_byte: impl FnMut(u32) -> bool,
        mut dead: impl FnMut(u32) -> bool,
    ) -> Result<(u32, Rings), OpError> {
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
            p.held.put(0, Relaxed);
            p.pid.put(pid, Relaxed);
            p.start_time.put(start_time, Relaxed);
            // Release: a reader that sees LIVE sees the fields above.
            p.state.put(proc_state::LIVE, Release);
            return Ok((i, rings));
        }
        Err(OpError::ProcessTableFull)
    }

    /// Reclaims every LIVE record other than `me` whose owner `dead` says is gone.
    pub(crate) fn sweep(&self, me: Option<u32>, mut dead: impl FnMut(u32) -> bool) -> Rings {
        let mut rings = Rings::default();
        for i in 0..MAX_PROCESSES as u32 {
            if Some(i) != me && self.proc(i).state.load(Relaxed) == proc_state::LIVE && dead(i) {
                rings.merge(self.reclaim(i));
            }
        }
        rings
    }

    /// Returns everything record `p` had (held permits, queued and granted
    /// slots) and frees it; the permits go to the head of the FIFO like a
    /// release. Idempotent: a reclaim interrupted by the reclaimer's own death
    /// is simply done again by the next repairer (the record stays LIVE until
    /// its last step).
    pub(crate) fn reclaim(&self, p: u32) -> Rings {
        let proc = self.proc(p);
        let mut back = proc.held.load(Relaxed);
        proc.held.put(0, Relaxed);
        for i in 0..MAX_WAITERS as u32 {
            let s = self.slot(i);
            let st = s.state.load(Relaxed);
            if st == slot_state::FREE || s.owner.load(Relaxed) != p {
                continue;
            }
            match st {
                slot_state::QUEUED => {
                    self.unlink(i);
                    back += s.requested.load(Relaxed) - s.remaining.load(Relaxed);
                }
                slot_state::GRANTED => back += s.requested.load(Relaxed),
                _ => {}
            }
            s.state.put(slot_state::FREE, Release);
        }
        proc.state.put(proc_state::FREE, Release);
        let h = self.hdr();
        h.reclaims.put(h.reclaims.load(Relaxed) + 1, Relaxed);
        self.serve(back)
    }

    /// Detaches `me` (a live process with no request in flight): like a reclaim.
    pub(crate) fn detach(&self, me: u32) -> Rings {
        self.reclaim(me)
    }

    // ---------------------------------------------------------------- permits

    /// Takes `n` permits at once if nobody is queued and enough are available.
    pub(crate) fn try_take(&self, me: u32, n: u64) -> Result<(), OpError> {
        if self.is_closed() {
            return Err(OpError::Closed);
        }
        let h = self.hdr();
        let available = h.available.load(Relaxed);
        // Invariant 2: queued => available == 0, so a later request cannot
        // overtake a queued one.
        if h.queue_len.load(Relaxed) != 0 || available < n {
            return Err(OpError::NoPermits);
        }
        let p = self.proc(me);
        p.held.put(p.held.load(Relaxed) + n, Relaxed);
        h.available.put(available - n, Relaxed);
        Ok(())
    }

    /// Takes `n` permits at once, or queues a request for them in a free slot.
    /// The slot's partial grant starts with whatever is available (only when
    /// nobody is queued, which by invariant 2 is the only time anything is).
    pub(crate) fn enqueue(&self, me: u32, n: u64) -> Result<Enqueued, OpError> {
        match self.try_take(me, n) {
            Ok(()) => return Ok(Enqueued::Ready),
            Err(OpError::NoPermits) => {}
            Err(e) => return Err(e),
        }
        let slot = self.find_free_slot().ok_or(OpError::QueueFull)?;
        let h = self.hdr();
        let taken = h.available.load(Relaxed); // < n, and 0 if anyone is queued
        let seq = h.next_seq.load(Relaxed);
        h.next_seq.put(seq + 1, Relaxed);
        let s = self.slot(slot);
        s.owner.put(me, Relaxed);
        s.requested.put(n, Relaxed);
        s.remaining.put(n - taken, Relaxed);
        s.seq.put(seq, Relaxed);
        // Release: whoever sees QUEUED (a repairer after our death) sees the
        // request's fields.
        s.state.put(slot_state::QUEUED, Release);
        h.available.put(0, Relaxed);
        self.link_tail(slot);
        Ok(Enqueued::Queued { slot, seq })
    }

    /// Gives back `n` permits that `me` holds, FIFO to the queue first.
    pub(crate) fn release(&self, me: u32, n: u64) -> Result<Rings, OpError> {
        let p = self.proc(me);
        let held = p.held.load(Relaxed);
        if n > held {
            return Err(OpError::NotHeld { held });
        }
        p.held.put(held - n, Relaxed);
        crate::hooks::in_release_critical_section();
        Ok(self.serve(n))
    }

    /// Hands `rem` permits to the head of the FIFO, completing slots in order;
    /// a head that cannot be completed keeps its partial grant and the hand-off
    /// stops there. The surplus goes to the counter only when the FIFO is empty.
    pub(crate) fn serve(&self, mut rem: u64) -> Rings {
        let mut rings = Rings::default();
        let h = self.hdr();
        loop {
            let head = h.head.load(Relaxed);
            if head == NIL {
                break;
            }
            let s = self.slot(head);
            let remaining = s.remaining.load(Relaxed);
            let given = rem.min(remaining);
            s.remaining.put(remaining - given, Relaxed);
            rem -= given;
            if given < remaining {
                break; // partly served: FIFO stops here
            }
            self.unlink(head);
            // Release: the owner's doorbell thread reads the state without the lock.
            s.state.put(slot_state::GRANTED, Release);
            rings.add(s.owner.load(Relaxed));
        }
        if rem > 0 {
            debug_assert_eq!(h.queue_len.load(Relaxed), 0);
            h.available.put(h.available.load(Relaxed) + rem, Relaxed);
        }
        rings
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
                let returned = s.requested.load(Relaxed) - s.remaining.load(Relaxed);
                s.state.put(slot_state::FREE, Release);
                (SlotOutcome::Cancelled { returned }, self.serve(returned))
            }
            slot_state::GRANTED => {
                let p = self.proc(me);
                // The slot first: a crash between the two stores leaves the
                // permits in transit (counted nowhere), which the repair's
                // recount frees; the other order would count them twice.
                s.state.put(slot_state::FREE, Release);
                p.held
                    .put(p.held.load(Relaxed) + s.requested.load(Relaxed), Relaxed);
                (SlotOutcome::Granted, Rings::default())
            }
            _ => {
                s.state.put(slot_state::FREE, Release);
                (SlotOutcome::Closed, Rings::default())
            }
        }
    }

    /// Closes the semaphore for every process: every queued slot becomes
    /// CLOSED (its partial grant goes back to the counter) and its owner's
    /// doorbell rings. Idempotent.
    pub(crate) fn close(&self) -> Rings {
        let h = self.hdr();
        h.closed.put(1, Relaxed);
        let mut rings = Rings::default();
        let mut back = 0;
        loop {
            let head = h.head.load(Relaxed);
            if head == NIL {
                break;
            }
            let s = self.slot(head);
            back += s.requested.load(Relaxed) - s.remaining.load(Relaxed);
            self.unlink(head);
            s.state.put(slot_state::CLOSED, Release);
            rings.add(s.owner.load(Relaxed));
        }
        h.available.put(h.available.load(Relaxed) + back, Relaxed);
        rings
    }

    // ---------------------------------------------------------------- repair

    /// Rebuilds every derived word from the truth, after a locker found the
    /// previous lock owner dead (and the caller reclaimed every dead record).
    /// Returns the doorbells to ring: the recomputed counter is handed to the
    /// FIFO, since permits in transit in the dead owner's critical section are
    /// counted as available again.
    pub(crate) fn repair(&self) -> Rings {
        let h = self.hdr();
        h.repairs.put(h.repairs.load(Relaxed) + 1, Relaxed);
        let mut queued: [(u64, u32); MAX_WAITERS] = [(0, 0); MAX_WAITERS];
        let mut nq = 0;
        let mut granted = 0u64;
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
            match st {
                slot_state::QUEUED => {
                    let rem = s.remaining.load(Relaxed).min(req);
                    s.remaining.put(rem, Relaxed);
                    granted += req - rem;
                    queued[nq] = (s.seq.load(Relaxed), i);
                    nq += 1;
                }
                slot_state::GRANTED => granted += req,
                _ => {}
            }
        }
        let held: u64 = self
            .seg
            .procs
            .iter()
            .filter(|p| p.state.load(Relaxed) == proc_state::LIVE)
            .map(|p| p.held.load(Relaxed))
            .sum();
        let queued = &mut queued[..nq];
        queued.sort_unstable();
        h.head.put(NIL, Relaxed);
        h.tail.put(NIL, Relaxed);
        h.queue_len.put(0, Relaxed);
        for &(_, i) in queued.iter() {
            self.link_tail(i);
        }
        if h.next_seq.load(Relaxed) <= max_seq {
            h.next_seq.put(max_seq + 1, Relaxed);
        }
        let total = self.total();
        // Cannot underflow unless the segment was written by something else
        // than this code; then hand out nothing rather than too much.
        let free = total.saturating_sub(held + granted);
        h.available.put(0, Relaxed);
        if self.is_closed() {
            // A closer died half-way: finish its job.
            h.available.put(free, Relaxed);
            return self.close();
        }
        self.serve(free)
    }

    /// The conservation sums (for tests and diagnostics).
    pub(crate) fn census(&self) -> Census {
        let mut c = Census {
            total: self.total(),
            available: self.available(),
            held: 0,
            granted: 0,
            queued: 0,
            live: 0,
            repairs: self.hdr().repairs.load(Relaxed),
            reclaims: self.hdr().reclaims.load(Relaxed),
        };
        for p in &self.seg.procs {
            if p.state.load(Relaxed) == proc_state::LIVE {
                c.held += p.held.load(Relaxed);
                c.live += 1;
            }
        }
        for s in &self.seg.slots {
            match s.state.load(Relaxed) {
                slot_state::QUEUED => {
                    c.granted += s.requested.load(Relaxed) - s.remaining.load(Relaxed);
                    c.queued += 1;
                }
                slot_state::GRANTED => c.granted += s.requested.load(Relaxed),
                _ => {}
            }
        }
        c
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
        let tail = h.tail.load(Relaxed);
        s.prev.put(tail, Relaxed);
        s.next.put(NIL, Relaxed);
        if tail == NIL {
            h.head.put(i, Relaxed);
        } else {
            self.slot(tail).next.put(i, Relaxed);
        }
        h.tail.put(i, Relaxed);
        h.queue_len.put(h.queue_len.load(Relaxed) + 1, Relaxed);
    }

    fn unlink(&self, i: u32) {
        let h = self.hdr();
        let s = self.slot(i);
        let (prev, next) = (s.prev.load(Relaxed), s.next.load(Relaxed));
        if prev == NIL {
            h.head.put(next, Relaxed);
        } else {
            self.slot(prev).next.put(next, Relaxed);
        }
        if next == NIL {
            h.tail.put(prev, Relaxed);
        } else {
            self.slot(next).prev.put(prev, Relaxed);
        }
        s.prev.put(NIL, Relaxed);
        s.next.put(NIL, Relaxed);
        h.queue_len.put(h.queue_len.load(Relaxed) - 1, Relaxed);
    }

    /// The owner of `slot` and its state (for the doorbell thread).
    pub(crate) fn slot_state(seg: &Segment, slot: u32) -> u32 {
        seg.slots[slot as usize].state.load(Acquire)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Crash injection: a per-thread budget of stores; the store that would
    /// exceed it unwinds instead (without running the panic hook).
    pub(crate) mod crash {
        use std::cell::Cell;

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

        /// Runs `f`, dying before its `budget + 1`-th store. Returns whether it died.
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

    /// A zeroed segment on the heap (plain memory, no OS).
    pub(crate) fn heap_segment(total: u64) -> Box<Segment> {
        // SAFETY: every field is an atomic integer or an integer array, for
        // which all-zero is a valid value.
        let seg: Box<Segment> = unsafe { Box::new_zeroed().assume_init() };
        Locked::new(&seg).init(total);
        seg
    }

    fn attach(l: &Locked<'_>) -> u32 {
        l.attach(1, 1, |_| true, |_| false).unwrap().0
    }

    fn check(l: &Locked<'_>) {
        let c = l.census();
        assert!(c.conserved(), "{c:?}");
        assert!(c.queued == 0 || c.available == 0, "permits float: {c:?}");
    }

    #[test]
    fn fifo_weighted_partial_grants() {
        let seg = heap_segment(4);
        let l = Locked::new(&seg);
        let (a, b, c) = (attach(&l), attach(&l), attach(&l));
        assert_eq!(l.enqueue(a, 3), Ok(Enqueued::Ready));
        // b wants 3: takes the 1 left, queues for 2.
        let Ok(Enqueued::Queued { slot: sb, seq: qb }) = l.enqueue(b, 3) else {
            panic!()
        };
        assert_eq!(l.available(), 0);
        // c wants 1: must not overtake b.
        let Ok(Enqueued::Queued { slot: sc, seq: qc }) = l.enqueue(c, 1) else {
            panic!()
        };
        assert_eq!(l.try_take(c, 1), Err(OpError::NoPermits));
        check(&l);
        // a releases 1: goes to b (partial), not to c.
        assert_eq!(l.release(a, 1).unwrap(), Rings::default());
        check(&l);
        // a releases 2: b complete (1 more), c complete (1).
        let r = l.release(a, 2).unwrap();
        assert_eq!(r.iter().collect::<Vec<_>>(), vec![b as usize, c as usize]);
        check(&l);
        assert_eq!(l.finish(b, sb, qb).0, SlotOutcome::Granted);
        assert_eq!(l.finish(c, sc, qc).0, SlotOutcome::Granted);
        assert_eq!((l.held(b), l.held(c), l.available()), (3, 1, 0));
        check(&l);
        assert_eq!(l.release(b, 4), Err(OpError::NotHeld { held: 3 }));
        l.release(b, 3).unwrap();
        l.release(c, 1).unwrap();
        assert_eq!(l.available(), 4);
    }

    #[test]
    fn cancel_hands_partial_grant_on() {
        let seg = heap_segment(3);
        let l = Locked::new(&seg);
        let (a, b, c) = (attach(&l), attach(&l), attach(&l));
        l.enqueue(a, 2).unwrap();
        let Ok(Enqueued::Queued { slot: sb, seq: qb }) = l.enqueue(b, 3) else {
            panic!()
        };
        let Ok(Enqueued::Queued { slot: sc, seq: qc }) = l.enqueue(c, 1) else {
            panic!()
        };
        let (out, rings) = l.finish(b, sb, qb);
        assert_eq!(out, SlotOutcome::Cancelled { returned: 1 });
        assert_eq!(rings.iter().collect::<Vec<_>>(), vec![c as usize]);
        assert_eq!(l.finish(c, sc, qc).0, SlotOutcome::Granted);
        assert_eq!(l.finish(c, sc, qc).0, SlotOutcome::Gone);
        check(&l);
    }

    #[test]
    fn reclaim_dead_holder_and_waiter() {
        let seg = heap_segment(4);
        let l = Locked::new(&seg);
        let (a, b, c) = (attach(&l), attach(&l), attach(&l));
        l.enqueue(a, 4).unwrap();
        let Ok(Enqueued::Queued { .. }) = l.enqueue(b, 2) else {
            panic!()
        };
        let Ok(Enqueued::Queued { slot: sc, seq: qc }) = l.enqueue(c, 3) else {
            panic!()
        };
        l.release(a, 3).unwrap(); // b done, c has 1 of 3
        check(&l);
        // c dies while queued: its partial grant (1) goes back; a dies holding 1.
        let r = l.sweep(None, |p| p == c || p == a);
        assert!(r.iter().next().is_none());
        check(&l);
        assert_eq!(l.finish(c, sc, qc).0, SlotOutcome::Gone);
        assert_eq!(l.available(), 2); // 4 - b's granted 2
        assert_eq!(l.census().live, 1);
    }

    #[test]
    fn repair_recomputes_derived_words_and_serves() {
        let seg = heap_segment(5);
        let l = Locked::new(&seg);
        let (a, b, c) = (attach(&l), attach(&l), attach(&l));
        l.enqueue(a, 5).unwrap();
        let Ok(Enqueued::Queued { slot: sb, .. }) = l.enqueue(b, 2) else {
            panic!()
        };
        let Ok(Enqueued::Queued { .. }) = l.enqueue(c, 2) else {
            panic!()
        };
        // Simulate a releaser `a` that died inside `release(3)` after lowering
        // its `held` and half-serving: held 5 -> 2, b got 2 (remaining 0) but
        // is still QUEUED, the links were scrambled, the counter is stale.
        seg.procs[a as usize].held.store(2, Relaxed);
        seg.slots[sb as usize].remaining.store(0, Relaxed);
        seg.hdr.head.store(NIL, Relaxed);
        seg.hdr.available.store(77, Relaxed);
        // Repair first (the links must be sound before anything is served):
        // the 1 permit in transit goes to the head; b completes (it had all it
        // needed), c gets 1.
        let rings = l.repair();
        assert_eq!(rings.iter().collect::<Vec<_>>(), vec![b as usize]);
        check(&l);
        // Then the sweep: a is dead, its 2 held come back; c completes, 1 left.
        let rings = l.sweep(None, |p| p == a);
        assert_eq!(rings.iter().collect::<Vec<_>>(), vec![c as usize]);
        check(&l);
        assert_eq!(l.available(), 1);
    }

    #[test]
    fn close_wakes_everyone_and_banks_partials() {
        let seg = heap_segment(2);
        let l = Locked::new(&seg);
        let (a, b) = (attach(&l), attach(&l));
        l.enqueue(a, 1).unwrap();
        let Ok(Enqueued::Queued { slot, seq }) = l.enqueue(b, 2) else {
            panic!()
        };
        assert_eq!(l.close().iter().collect::<Vec<_>>(), vec![b as usize]);
        check(&l);
        assert_eq!(l.available(), 1);
        assert_eq!(l.enqueue(a, 1), Err(OpError::Closed));
        assert_eq!(l.finish(b, slot, seq).0, SlotOutcome::Closed);
        l.release(a, 1).unwrap();
        assert_eq!(l.available(), 2);
    }

    #[test]
    fn queue_full_is_an_error_not_a_loss() {
        let seg = heap_segment(1);
        let l = Locked::new(&seg);
        let a = attach(&l);
        l.enqueue(a, 1).unwrap();
        for _ in 0..MAX_WAITERS {
            assert!(matches!(l.enqueue(a, 1), Ok(Enqueued::Queued { .. })));
        }
        assert_eq!(l.enqueue(a, 1), Err(OpError::QueueFull));
        check(&l);
    }

    #[test]
    fn process_table_full() {
        let seg = heap_segment(1);
        let l = Locked::new(&seg);
        for _ in 0..MAX_PROCESSES {
            attach(&l);
        }
        assert_eq!(
            l.attach(1, 1, |_| true, |_| false).map(|x| x.0),
            Err(OpError::ProcessTableFull)
        );
        // One dies: its record is reused.
        assert_eq!(l.attach(1, 1, |_| true, |p| p == 7).unwrap().0, 7);
    }

    /// Every invariant the repair must restore, and that everything can still
    /// be drained back to `total` by the live processes.
    fn check_repaired(l: &Locked<'_>, dead: &[u32]) {
        let c = l.census();
        assert!(c.conserved(), "{c:?}");
        assert!(c.queued == 0 || c.available == 0, "permits float: {c:?}");
        // The FIFO: links, count and ticket order agree with the QUEUED slots.
        let h = l.hdr();
        let (mut i, mut prev, mut n, mut last_seq) = (h.head.load(Relaxed), NIL, 0, 0);
        while i != NIL {
            let s = l.slot(i);
            assert_eq!(s.state.load(Relaxed), slot_state::QUEUED);
            assert_eq!(s.prev.load(Relaxed), prev);
            assert!(s.seq.load(Relaxed) > last_seq, "FIFO order broken");
            assert!(!dead.contains(&s.owner.load(Relaxed)), "ghost in the queue");
            last_seq = s.seq.load(Relaxed);
            prev = i;
            i = s.next.load(Relaxed);
            n += 1;
        }
        assert_eq!(h.tail.load(Relaxed), prev);
        assert_eq!(n, c.queued);
        assert_eq!(h.queue_len.load(Relaxed), c.queued);
        if n > 0 {
            let head = l.slot(h.head.load(Relaxed));
            assert!(
                head.remaining.load(Relaxed) > 0,
                "a completable head was left"
            );
        }
        for s in &l.seg.slots {
            if s.state.load(Relaxed) != slot_state::FREE {
                assert!(
                    !dead.contains(&s.owner.load(Relaxed)),
                    "slot of a dead process"
                );
            }
        }
        // Drain: every live process finishes its slots and releases.
        for _ in 0..2 {
            for i in 0..MAX_WAITERS as u32 {
                let s = l.slot(i);
                if s.state.load(Relaxed) != slot_state::FREE {
                    let (o, sq) = (s.owner.load(Relaxed), s.seq.load(Relaxed));
                    assert_ne!(l.finish(o, i, sq).0, SlotOutcome::Gone);
                }
            }
            for p in 0..MAX_PROCESSES as u32 {
                if l.proc(p).state.load(Relaxed) == proc_state::LIVE {
                    l.release(p, l.held(p)).unwrap();
                }
            }
        }
        assert_eq!(l.available(), l.total(), "{:?}", l.census());
    }

    /// A crash after every number of stores of every operation, from a state
    /// with a holder, a granted-not-collected slot, a partly served head and
    /// more waiters: the repair (derived words, then a sweep of the dead)
    /// always restores every invariant.
    #[test]
    fn crash_at_every_store_of_every_operation() {
        // The state, built once per run: total 10. A holds 4; B has a GRANTED
        // slot of 5 not yet collected; C (head) has 1 of 2; D waits for 1;
        // A waits for 3.
        struct S {
            seg: Box<Segment>,
            p: [u32; 4],
            slot: [(u32, u64); 4],
        }
        fn build() -> S {
            let seg = heap_segment(10);
            let l = Locked::new(&seg);
            let [a, b, c, d] = [attach(&l), attach(&l), attach(&l), attach(&l)];
            let q = |p, n| match l.enqueue(p, n).unwrap() {
                Enqueued::Queued { slot, seq } => (slot, seq),
                Enqueued::Ready => (NIL, 0),
            };
            q(a, 7);
            let sb = q(b, 5);
            let sc = q(c, 2);
            let sd = q(d, 1);
            l.release(a, 2).unwrap();
            let sa = q(a, 3);
            l.release(a, 1).unwrap();
            check(&l);
            assert_eq!(l.held(a), 4);
            assert_eq!(l.slot(sb.0).state.load(Relaxed), slot_state::GRANTED);
            S {
                seg,
                p: [a, b, c, d],
                slot: [sa, sb, sc, sd],
            }
        }
        type Op = fn(&Locked<'_>, &S) -> Vec<u32>; // runs the op; returns who dies if it crashes
        let ops: Vec<(&str, Op)> = vec![
            ("release all of A", |l, s| {
                l.release(s.p[0], 4).unwrap();
                vec![s.p[0]]
            }),
            ("release 1 of A", |l, s| {
                l.release(s.p[0], 1).unwrap();
                vec![s.p[0]]
            }),
            ("collect B's grant", |l, s| {
                l.finish(s.p[1], s.slot[1].0, s.slot[1].1);
                vec![s.p[1]]
            }),
            ("cancel C (partial head)", |l, s| {
                l.finish(s.p[2], s.slot[2].0, s.slot[2].1);
                vec![s.p[2]]
            }),
            ("cancel D", |l, s| {
                l.finish(s.p[3], s.slot[3].0, s.slot[3].1);
                vec![s.p[3]]
            }),
            ("enqueue B", |l, s| {
                l.enqueue(s.p[1], 2).unwrap();
                vec![s.p[1]]
            }),
            ("close by D", |l, s| {
                l.close();
                vec![s.p[3]]
            }),
            ("A reclaims dead C", |l, s| {
                // C is dead from the start: the reclaimer A dies too.
                l.reclaim(s.p[2]);
                vec![s.p[0], s.p[2]]
            }),
            ("D reclaims dead A", |l, s| {
                l.reclaim(s.p[0]);
                vec![s.p[3], s.p[0]]
            }),
            ("attach E", |l, _| {
                let (e, _) = l.attach(9, 9, |_| true, |_| false).unwrap();
                assert_eq!(e, 4);
                vec![4]
            }),
            ("B repairs", |l, s| {
                l.repair();
                vec![s.p[1]]
            }),
        ];
        let mut crashes = 0;
        for (name, op) in &ops {
            for budget in 0.. {
                let s = build();
                let l = Locked::new(&s.seg);
                let mut dead = Vec::new();
                let died = crash::run(budget, || dead = op(&l, &s));
                if !died {
                    // Ran to completion: the state must be sound as it is
                    // (after the planned deaths of the reclaim cases).
                    let gone: Vec<u32> = dead.iter().skip(1).copied().collect();
                    l.sweep(None, |p| gone.contains(&p));
                    check_repaired(&l, &gone);
                    break;
                }
                crashes += 1;
                // What a process that finds the lock's owner dead does.
                let dead = if dead.is_empty() {
                    // `op` died before returning its list: recompute it.
                    let mut d = Vec::new();
                    crash::run(u32::MAX, || d = op(&Locked::new(&build().seg), &s));
                    d
                } else {
                    dead
                };
                l.repair();
                l.sweep(None, |p| dead.contains(&p));
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    check_repaired(&l, &dead)
                }));
                if r.is_err() {
                    panic!("{name}: crash after {budget} stores not repaired");
                }
            }
        }
        assert!(crashes > 50, "only {crashes} crash points");
    }
}
