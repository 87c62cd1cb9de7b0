//! A named volt-sem shared by the processes of one machine: fair (strict FIFO
//! across processes), weighted, with direct hand-off, and crash-safe (a
//! process killed with `SIGKILL` anywhere, even inside the segment lock, loses
//! no permit and leaves no ghost in the queue).
//!
//! ```no_run
//! use volt_sem_shm::{OpenOptions, SharedSemaphore};
//! # fn main() -> Result<(), volt_sem_shm::Error> {
//! // Every process that opens "gpu" with 4 permits shares the same 4.
//! let sem = SharedSemaphore::open("gpu", 4, OpenOptions::new())?;
//! let permit = sem.acquire_blocking(2)?;
//! // ... use two of the four slots ...
//! drop(permit); // gives them back (or `permit.release()?` to see an error)
//! # Ok(()) }
//! ```
//!
//! Linux only for now: on other targets the crate compiles and
//! [`SharedSemaphore::open`] returns [`Error::Unsupported`].
//!
//! # Segment
//!
//! `open(name)` maps the POSIX shared-memory object `/volt-sem.<name>`
//! (`/dev/shm/volt-sem.<name>`), created with mode 0600 unless
//! [`OpenOptions::mode`] says otherwise. Names are 1 to [`MAX_NAME_LEN`]
//! bytes, without `/` or NUL. The segment is one `repr(C)` struct, made only
//! of atomic integers and a `pthread_mutex_t`; positions, never pointers:
//!
//! ```text
//!   Header   magic "VOLTSHM\x01" | layout version (4) | lock ABI (1 glibc, 2 musl)
//!            | segment size | total permits
//!            | state word (available << 4 | DEBT | FROZEN | QUEUED | CLOSED) | closed
//!            | queue_len, head, tail | next ticket | recount owed | stats
//!   Lock     pthread_mutex_t, PTHREAD_PROCESS_SHARED + PTHREAD_MUTEX_ROBUST
//!   Procs    [MAX_PROCESSES = 128]  state | doorbell (futex word) | pid | start time
//!                                   | acct (held << 11 | busy) | lanes [16]
//!                                   | held_since | label (128 bytes) | host (64 bytes)
//!   Slots    [MAX_WAITERS = 1024]   state (also a futex word) | owner | requested
//!                                   | remaining | ticket | prev, next | direct | since
//! ```
//!
//! Layout versions: 1, the first; 2, the
//! lock-free fast path (state word, `acct`, lanes); 3, what
//! [`SharedSemaphore::inspect`] reads (labels, host names, time stamps), and
//! `set_total`'s debt; 4, the lock ABI. A
//! process of one version refuses a segment of another with
//! [`Error::VersionMismatch`] (`found`, `expected`: both versions; see
//! *Upgrading*).
//!
//! The lock is the C library's `pthread_mutex_t`, whose fields glibc and
//! musl lay out differently: a musl build and a glibc build of this crate
//! (a static musl C program and a glibc Python wheel on one machine, say)
//! would each take other words of it for the lock, and both enter it. So the
//! header records whose it is (the *lock ABI*, from layout 4), and a process
//! of another C library is refused with [`Error::LibcMismatch`].
//!
//! The first 32 bytes (magic, version, lock ABI, size, total) keep their
//! positions in every future layout version, so that any version can
//! recognise and refuse any other (the lock ABI was a reserved 0 before
//! layout 4). `open` of an existing name checks, *before mapping it* (with
//! `pread`, so a truncated file cannot raise `SIGBUS`): the magic
//! ([`Error::NotASegment`]), the version ([`Error::VersionMismatch`]), the
//! lock ABI ([`Error::LibcMismatch`]), the size
//! ([`Error::NotASegment`]) and the total ([`Error::TotalMismatch`]); a refused
//! `open` changes nothing. [`unlink`] removes the name only: attached
//! processes keep using the segment; the next `open` of the name creates a
//! new one.
//!
//! A new segment's pages are allocated (`posix_fallocate`) before it is
//! mapped: on a full `/dev/shm` (Docker's default is 64 MiB) `open` fails
//! with [`Error::Os`]`(ENOSPC)` and removes the empty file it created, where
//! a sparse file would let the first store raise `SIGBUS`.
//!
//! Creation is serialised by an OFD lock on byte 128 of the file (the *init
//! lock*), held from `shm_open` until the process is attached. Whoever holds
//! it and finds a size-0 file (a creator that has not started, or died before
//! sizing it), or a file whose magic is 0 (a creator that died anywhere
//! before writing the magic, whatever else it wrote; of any size, since it
//! may have been of another layout version: every version takes this lock
//! and writes the magic last), initialises the segment, at its own size; the magic is stored last, with `Release`, in one aligned store. So
//! a crashed creation is recovered by the next `open`, never reported as
//! foreign and never hangs (tested by killing creators at random moments:
//! `kill9_during_creation_never_bricks_the_name`;
//! `creation_by_another_layout_killed_before_the_magic_is_recovered`; a
//! live creator of another, larger layout raced by this release's opens and
//! killed at random is taken over only once dead, never shrunk under its
//! mapping: `a_creator_of_another_layout_is_only_taken_over_when_dead`). A
//! file with another non-zero magic is foreign ([`Error::NotASegment`]), left untouched.
//!
//! # Upgrading
//!
//! Processes of different releases (a rolling deploy, services in different
//! languages on different releases, a C program linked statically against an
//! older archive) share a name only while their layout versions are equal.
//! Where they differ, the process that comes second is refused at `open`
//! with [`Error::VersionMismatch`] (C `VOLT_VERSION_MISMATCH`, Python
//! `VersionMismatchError`, Node `ERR_VOLT_VERSION_MISMATCH`; the message
//! names both versions) and nothing is changed: the segment stays the first
//! release's, which goes on working. The same holds for builds of one release
//! for two C libraries ([`Error::LibcMismatch`]): every process of a name
//! must use builds for the same C library (all glibc: the manylinux wheels,
//! the `linux-x64-gnu` Node package, the gnu C archive; or all musl). So a new layout is rolled out under a
//! new name, or after a drain: stop every process of the old release,
//! [`unlink`] the name (any binding's `unlink`, or remove
//! `/dev/shm/volt-sem.<name>`), then start the new release. The layout
//! versions and the releases that introduced them: `docs/versioning.md`.
//!
//! # Trust boundary
//!
//! The segment is a writable shared mapping: whoever can open its file for
//! writing can rewrite every word of the semaphore (steal or invent permits,
//! stall or break every process attached). Who can: the same user, always;
//! the owner's group if the creator asked for it (mode 0660); every local
//! user with mode 0666; and root. The mode is set exactly as asked (with
//! `fchmod` after creation: the umask does not apply).
//!
//! So that another user cannot take a name over (create it first, mode 0666,
//! and control the processes that then attach: *name squatting*), `open`
//! attaches only to a segment whose owner is the caller's effective uid,
//! unless the caller opts in with [`OpenOptions::accept_foreign_owner`]
//! (refused: [`Error::PermissionDenied`], nothing changed, checked before
//! any lock of the file is taken).
//!
//! What a process that can write the segment can do, and what is still
//! guaranteed to the others:
//!
//! * every index read from the segment (FIFO links, head, tail, a slot's
//!   owner) is checked before use, every sum and difference of counts read
//!   from it saturates, and every walk of the FIFO is bounded by the slot
//!   table: a value this code never writes stops the operation short of it
//!   and is reported as [`Error::Corrupt`] (`Locked::is_corrupt`), never a
//!   panic, an endless loop or an out-of-range access (tested by
//!   `garbage_in_the_segment_is_a_typed_error_never_a_panic_or_a_hang`: a
//!   process writes random bytes at seeded offsets while three others run
//!   every operation);
//! * the calls with a time bound keep it (see *Crash safety of the lock*),
//!   and `open` waits at most 5 s in all for the init lock and the segment
//!   lock ([`Error::TimedOut`]): anyone who can *read* the file can hold the
//!   init lock (an OFD read lock);
//! * inherent to a writable mapping, not caught: truncating the file (every
//!   attached process dies of `SIGBUS` at its next access), holding the
//!   segment's `pthread_mutex_t` (the calls without a deadline wait) or a
//!   record's liveness lock (its permits never come back), rewriting counts
//!   within their ranges (permits appear or vanish).
//!
//! # Accounting and invariants
//!
//! Uncontended `try_acquire`, `release` and the collect of a blocking
//! acquire's grant are lock-free (see *The fast path*); everything else runs
//! under the segment lock. Permits live in exactly one of four places:
//!
//! * `available`: the counter, in the state word;
//! * `held` of a process record (in its `acct` word): acquired by that
//!   process, not yet released;
//! * a QUEUED slot: its partial grant, `requested - remaining`;
//! * a GRANTED slot: all of `requested`, granted but not yet collected by the
//!   owner process (its doorbell thread moves them into its `held`).
//!
//! 1. **Conservation**: `available + Σ held(LIVE records) + Σ granted(slots)
//!    == total + debt`, checked by the tests after every crash. `debt` is 0
//!    except after a shrink of the total below what is held (see *Changing
//!    the total*); while it is not 0, `available == 0`.
//! 2. **No floating permits**: a QUEUED slot exists ⇒ `available == 0` and
//!    the state word's QUEUED bit is set. An enqueuer drains the counter into
//!    its new slot and sets QUEUED in one CAS; a release hands its permits to
//!    the head of the FIFO first and banks only the surplus, and only when the
//!    FIFO is empty, in the CAS that clears QUEUED.
//! 3. **Strict FIFO, weights included**: the FIFO is ticket order; only the
//!    head is granted permits; a head that cannot be completed keeps its
//!    partial grant and the hand-off stops there. `try_acquire` and a new
//!    `acquire` see QUEUED (and `available == 0`) by (2) and cannot overtake,
//!    on the fast path or under the lock.
//! 4. **Per-process accounting**: `release(n)` takes `n` from the calling
//!    process's `held`; releasing more than the process holds fails with
//!    [`Error::NotHeld`] and changes nothing. Permits cannot be handed over
//!    between processes (process A acquires, process B releases): each
//!    process returns its own, which is what makes a dead process's permits
//!    recoverable without trusting anyone. Within one process, any thread or
//!    handle may release permits any other acquired (one record per process
//!    and segment).
//! 5. Capacities are hard limits with typed errors, never silent losses:
//!    [`MAX_WAITERS`] queued requests across all processes
//!    ([`Error::QueueFull`]: the request is not queued, FIFO intact),
//!    [`MAX_PROCESSES`] attached processes ([`Error::ProcessTableFull`]:
//!    what the `open` repaired or reclaimed on the way is handed on and its
//!    waiters woken all the same),
//!    totals and requests up to [`MAX_PERMITS`] (a request above the total is
//!    [`Error::TooManyPermits`]: it could never be granted).
//!
//! # The fast path
//!
//! Like the in-process semaphore, the counter lives in one **state word**
//! with flags: `available << 4 | DEBT | FROZEN | QUEUED | CLOSED`. With none
//! of the four flags set (`DEBT`: see *Changing the total*), `try_acquire(n)` and `release(n)` need no lock: one CAS
//! on the state word, plus the caller's own process record. Anything else
//! (a flag set, not enough permits) takes the lock, which is where queueing,
//! hand-off and repair happen; the locked code changes the state word only by
//! CAS too, since fast paths of other processes race with it.
//!
//! * QUEUED is set, with the counter drained into the new slot, by the
//!   enqueuer's single CAS; so a racing fast `release` either lands before it
//!   (and its permits are drained into the request) or sees QUEUED, undoes
//!   its first write and comes to the lock, where it hands over in FIFO
//!   order. QUEUED is cleared (with the surplus banked) in one CAS when the
//!   FIFO empties.
//! * CLOSED shuts the fast `try_acquire`; releases still work.
//! * FROZEN shuts both, while a locker takes a census (below).
//!
//! **Per-process accounting without the lock.** A process's `held` is one
//! word, `acct = held << 11 | busy`, changed by RMW only (its threads change
//! it at once). Every fast operation also marks itself *in flight* for the
//! whole window in which the state word and `held` disagree, in one of two
//! ways:
//!
//! * its thread's **lane**: each process record has 16 lane words; a thread
//!   of the process owns one (claimed on its first fast operation on that
//!   semaphore, released when the thread exits; the claims are a
//!   process-local bitmap), and only that thread writes it, with plain
//!   stores: odd while an operation is in flight, the next even value after.
//!   This is the normal case: two RMWs per operation (the state word and
//!   `held`), where the in-process semaphore needs one.
//! * `busy`, the low 11 bits of `acct`, when all 16 lanes are taken (a 17th
//!   thread) or the collect of a direct grant: one more RMW per operation.
//!
//! | operation | write 1 | write 2 | write 3 | write 4 |
//! | --- | --- | --- | --- | --- |
//! | `try_acquire(n)` | lane odd | state: `available − n` | `held + n` | lane even |
//! | `release(n)` | lane odd | `held − n` (checked) | state: `available + n` | lane even |
//! | `try_acquire(n)`, no lane | `busy + 1` | state: `available − n` | `held + n`, `busy − 1` | |
//! | `release(n)`, no lane | `held − n` (checked), `busy + 1` | state: `available + n` | `busy − 1` | |
//! | collect a direct grant | `busy + 1` | slot → FREE | `held + requested`, `busy − 1` | |
//!
//! Each follows the **transit rule** (below): permits leave one place before
//! they enter the next, so a death between two writes leaves them *in
//! transit*, counted nowhere, never counted twice; and an odd lane or
//! `busy != 0` marks every such window. (A fast release that finds QUEUED at
//! the state write undoes its `held − n` with one add and ends its mark.)
//!
//! **A death inside a fast operation** (no lock is held, so nobody sees
//! `EOWNERDEAD`): the process's record is found dead by a liveness sweep as
//! usual, with an odd lane or `busy != 0`. Its `held` is then not trusted (permits may be in
//! transit): the record is freed and a **recount** is owed
//! (`recount_pending`), which the sweeper runs at once:
//!
//! 1. set FROZEN (one RMW on the state word): from then on every fast
//!    operation's write 2 fails;
//! 2. *quiesce*: for each LIVE record, read its lanes, its `acct`, its lanes
//!    again, until the lanes are all even and unchanged and `busy` is 0 (a
//!    live thread finishes its few instructions), or its owner is found dead
//!    (then it is freed without trusting it);
//! 3. `available = total − Σ held(LIVE) − Σ granted(slots)`, flags rebuilt
//!    from the FIFO and `closed`, the free permits served to the FIFO head as a
//!    release would, FROZEN cleared.
//!
//! Why the sum in 3 is exact while other processes keep running their fast
//! paths (the RMWs are SeqCst; the lane stores are Relaxed when made odd and
//! Release when made even, the census loads them Acquire). Take any fast
//! operation O of a record, and the census's reads `lanes1`, `acct`,
//! `lanes2`:
//!
//! * if O's state write succeeded before FROZEN was set, FROZEN's RMW reads
//!   that write (or a later one), so O's "odd" store happens before it, hence
//!   before `lanes1`: `lanes1` shows O odd (rejected) or O's final even store,
//!   after which all of O's writes are visible to the `acct` read: complete.
//! * if the `acct` read sees one of O's `held` writes, O's "odd" store
//!   happens before that write, hence before `lanes2`: `lanes2` differs from
//!   `lanes1` unless `lanes1` already showed O (then odd, or even and O
//!   complete): rejected or complete.
//! * otherwise O's state write comes after FROZEN and fails: its only other
//!   write, a release's `held − n`, is undone by O itself, after the `acct`
//!   read. Net zero.
//!
//! With `busy` instead of a lane, `busy + 1` is in the same RMW as (or
//! before) every change of `held`, and the `acct` read is rejected while it
//! is not 0: the same three cases with `busy` as the mark. So every record's
//! `held` as read stays its truth for as long as FROZEN is set. Locked
//! operations cannot run meanwhile (the recounter holds the lock). On x86-64
//! every RMW is a locked instruction whatever its ordering: SeqCst costs
//! nothing there. The collect of a direct grant has no state-word write, so it
//! checks FROZEN itself after its `busy + 1`: both SeqCst, one of the two sees
//! the other (it then undoes and takes the lock).
//!
//! If some LIVE record stays busy for the whole wait (about 50 ms: a process
//! stopped with `SIGSTOP` inside a fast operation, or a dead one whose
//! liveness lock a forked child still holds), the recount gives up: the
//! counter is kept as it is (permits in transit stay lost *for now*, never
//! duplicated), FROZEN is cleared, and the recount stays owed: every later
//! sweep tries again, waiting only microseconds this time, so that a stopped
//! process does not cost every slow path 50 ms (tested by
//! `recount_gives_up_on_a_stuck_live_process_and_retries_later`). The segment
//! lock is held during that wait, as during any critical section; so a
//! process stopped inside a fast operation, like one stopped inside the lock,
//! slows the others down until it continues or dies, and never makes them
//! lose or duplicate a permit. `census()` (tests, diagnostics) takes the same frozen
//! snapshot. The crash tests kill every fast operation and every recount
//! after each of their writes (`crash_at_every_write_of_the_fast_path_and_of_its_recovery`),
//! and `kill9_inside_a_fast_release_is_recounted` does it to a real process.
//!
//! # Liveness
//!
//! Each attached process holds an OFD write lock (`F_OFD_SETLK`) on byte `i`
//! of the segment file, `i` being its record index, for as long as it is
//! attached. The kernel drops OFD locks when the last reference to the open
//! file description goes away (the fd and the mapping), on any death,
//! `SIGKILL` included. Another process tells "dead" by `F_OFD_GETLK` on that
//! byte: no pid is trusted (pid, start time, label and host name are
//! recorded for diagnostics and [`SharedSemaphore::inspect`] only). A record is claimed under the segment lock, taking its byte lock
//! before it is marked LIVE, and freed under the segment lock before the byte
//! lock is dropped; so a LIVE record without its byte lock is a dead process.
//!
//! **Reclaim** (under the lock): the record's `held` goes back, its QUEUED
//! slots leave the FIFO (their partial grants go back), its GRANTED slots go
//! back, then the record is freed, and everything returned is handed to the
//! head of the FIFO exactly like a release. A reclaim is idempotent: the
//! record stays LIVE until its last step, so a reclaimer that dies half-way
//! leaves it to the next one.
//!
//! A record found dead with `busy != 0` died inside a fast operation: it is
//! freed without trusting its `held`, and a recount returns what it had
//! (*The fast path*).
//!
//! **When**: (a) on `EOWNERDEAD`; (b) on every slow path: an acquire that
//! cannot be served at once, a failing `try_acquire`, an `open`; (c) every
//! [`SWEEP_PERIOD_MS`] (200 ms) in every process that has a request queued
//! (on its doorbell thread for raw and async waiters, on the blocked thread
//! itself for a blocking acquire). So a dead holder's permits reach a queued
//! waiter within one sweep period plus scheduling delay, even if no other
//! process does anything.
//!
//! # Crash safety of the lock
//!
//! The lock is a robust, process-shared `pthread_mutex_t`. A locker that gets
//! `EOWNERDEAD` knows the previous owner died inside a critical section and
//! repairs before anything else. The repair rests on splitting the segment's
//! words into **truth** and **derived**:
//!
//! * truth: slot `state`, `owner`, `requested`, `remaining`, `ticket`;
//!   record `state` and `acct` (`held`); `closed`. Each critical section
//!   changes each truth word with a single write (a store, or an RMW for the
//!   words the fast path shares), and every one of those writes leaves a
//!   meaningful state on its own: a `remaining` lowered, a slot marked
//!   GRANTED, a `held` raised or lowered. A slot's or record's `state` is
//!   stored last, with `Release`, after its other fields.
//! * derived: the state word (counter and flags), the FIFO links, `head`,
//!   `tail`, `queue_len`.
//!
//! **The transit rule**: a critical section that moves permits between two
//! truth places always takes them out of the first before putting them in
//! the second (release: `held` lowered, then slots served; cancel: slot freed,
//! then its partial grant served; collect: slot freed, then `held` raised;
//! reclaim: `held` zeroed and slots freed, then served). So a crash between
//! two stores can leave permits *in transit*, counted nowhere, but never
//! counted twice; and the recount below turns permits in transit into free
//! permits. (The dead owner's record may still look LIVE to the repairer, see
//! below; the rule is what makes that harmless: its truth is under-counted at
//! worst, and reclaimed exactly later.)
//!
//! The repair (`Locked::repair`) rebuilds the FIFO by sorting the QUEUED slots
//! by ticket, then runs the recount of *The fast path* (`available = total −
//! Σ held(LIVE) − Σ granted(slots)` at a frozen, quiescent moment, so permits
//! that were in transit inside the dead owner's `release` — taken from its
//! `held`, not yet given to a slot — count as free again, and fast paths of
//! live processes may run meanwhile), hands that counter to the FIFO head as
//! a release would (restoring invariant 2; a head whose `remaining` already
//! reached 0 is completed), finishes an interrupted `close`, then runs a
//! liveness sweep, which reclaims the dead owner's record itself, and calls
//! `pthread_mutex_consistent`. The crash windows:
//!
//! | dies inside | state left | repaired by |
//! | --- | --- | --- |
//! | `try_acquire` | `held` raised, `available` stale | recompute; then reclaim returns the `held` |
//! | `acquire` (enqueue) | slot QUEUED or not, links half-set | relink by ticket; reclaim frees the slot |
//! | `release` | `held` lowered, some slots served, permits in transit | recompute + serve; reclaim |
//! | cancel / collect | slot freed, permits in transit | recompute + serve; reclaim |
//! | `close` | some slots CLOSED, `closed` set | repair closes the rest |
//! | reclaim of another | some of its slots freed, record LIVE | next sweep reclaims it again |
//! | attach / detach | record LIVE with or without byte lock | a LIVE record without a lock is dead: reclaimed |
//! | a recount or census | FROZEN set, maybe some records freed | repair: relink, recount again |
//! | fast `try_acquire` / `release` / collect (no lock) | `busy != 0`, permits maybe in transit | sweep: record freed, recount |
//!
//! The unit tests `crash_at_every_store_of_every_operation` and
//! `crash_at_every_write_of_the_fast_path_and_of_its_recovery` kill each of
//! these operations after every possible number of writes (in program order),
//! from a state with a holder, a granted-but-uncollected slot, a partly served
//! head and more waiters, then runs the repair and checks conservation, the
//! FIFO (links, count, ticket order, no ghost, no completable head left), and
//! that the live processes can drain everything back to `total`.
//!
//! The kernel wakes the next locker with `EOWNERDEAD` (robust-list processing
//! in the dying task's `exit_mm`) *before* it closes the dying process's
//! files, so the repairer's sweep may still see the dead owner's liveness lock
//! and leave its record LIVE. Its permits then come back at the next sweep:
//! within [`SWEEP_PERIOD_MS`] if anybody is queued (measured: 0.4 to 100 ms in
//! `kill9_inside_the_lock_is_repaired`), else at the next slow path.
//!
//! A live process is never mid-critical-section when `EOWNERDEAD` is seen:
//! the owner is a thread that died, and a thread of this crate cannot exit
//! inside a critical section, so the owner's whole process is dead. A process
//! *stopped* (`SIGSTOP`, a debugger) inside the lock stalls the calls that
//! need the lock until it continues or dies, like any lock, except the ones
//! with a time bound, which take the lock with a deadline on
//! `CLOCK_MONOTONIC` (`pthread_mutex_clocklock`, glibc 2.30 and later,
//! looked up at run time so that the library still loads on the older glibc
//! of the manylinux baseline; there it falls back to
//! `pthread_mutex_timedlock`, whose deadline is on `CLOCK_REALTIME`, so a
//! wall-clock step during the wait shortens or lengthens it):
//! [`SharedSemaphore::try_acquire`] waits for it at most 10 ms and fails with
//! [`Error::NoPermits`]; a timed acquire waits at most until its deadline
//! (its periodic sweeps too) and fails with [`Error::TimedOut`], and if its
//! request is queued by then, leaves its removal to the process's doorbell
//! thread (a grant that comes first is released at once; a process that
//! cannot start that thread, out of threads or memory, removes the request
//! itself, waiting for the lock past the deadline). Killed there, the
//! stopped process is repaired as above (tested by
//! `a_process_stopped_inside_the_lock_does_not_stall_try_and_timed_acquires`
//! and `a_queued_timed_acquire_gives_up_on_time_when_the_lock_holder_stops`).
//!
//! # Waking without polling
//!
//! **Blocking acquires** (`acquire_blocking`, `acquire_timeout`) wait on a
//! futex word of their own: the `state` of their slot, marked `direct` under
//! the lock when queued. The process that grants (or closes) it stores
//! GRANTED (`Release`) under the lock, and after unlocking `FUTEX_WAKE`s that
//! word (shared, not `FUTEX_PRIVATE`): one wake-up, straight into the waiting
//! thread. The woken thread collects its grant lock-free (*The fast path*),
//! so it does not contend for the lock with the releaser still finishing its
//! critical section. It sleeps with the sweep period as timeout, and sweeps
//! for dead processes itself when it expires.
//!
//! **Raw and async waiters** go through a doorbell: each process record has
//! one, a futex word. A releaser grants under the lock, notes in a 128-bit
//! mask whose slots it completed, unlocks, then bumps those processes'
//! doorbells (`fetch_add`, `Release`) and `FUTEX_WAKE`s them. Each process
//! runs one doorbell thread per attached segment, started by its first raw
//! request that must wait, which loads its doorbell (`Acquire`), claims its completed
//! waiters from the process's local table (slot index → waiter), collects
//! their grants into its `held` under the lock (one lock for the batch), and
//! calls their callbacks one after another, outside every lock; then sleeps
//! in `FUTEX_WAIT` on the value it loaded (a ring in between makes the wait
//! return at once), with the sweep period as timeout while it has waiters.
//!
//! The callbacks keep volt-sem's waker contract (see the `volt_sem` crate
//! docs): called at most once per queued request, never under a lock, never
//! nested; [`finish_raw`](RawSemaphore::finish_raw) from another thread waits for a
//! running callback; from inside the callback it collects the outcome at
//! once; after it returns, the callback has returned or never will, and the
//! waiter may be freed. A blocking acquire inside a callback would wait for
//! itself and fails with [`Error::InCallback`].
//!
//! # Orderings
//!
//! The segment lock orders every truth and derived word, except those the
//! fast path shares: the state word and each record's `acct` are written only
//! by SeqCst RMWs, with or without the lock, and read SeqCst by the census
//! (see *The fast path* for why SeqCst). Outside the lock, also: slot `state`
//! (stored `Release` under the lock, loaded `Acquire` by the doorbell thread
//! and by a direct waiter to find completed slots; a direct waiter's collect
//! stores FREE with `Release`), the doorbell word (see above), the waiter's
//! `phase` (as in volt-sem: `Release` by the notifier, `Acquire` by the
//! owner), the counter and `closed` (read `Relaxed` for `available_permits`
//! and `is_closed`, which are snapshots). The loom model (`src/loom_model.rs`,
//! `make test-shm-loom`) explores the interleavings of the fast path, the
//! queue hand-off, the recount and deaths after any write.
//!
//! # fork, exec
//!
//! The fd is `O_CLOEXEC`. A child forked without `exec` shares the parent's
//! open file description, hence its liveness lock: the parent is not seen
//! dead until the child exits, execs, or drops the inherited handles (the
//! parent's doorbell thread does not keep them alive in the child; a handle
//! that another thread of the parent owned at the fork is copied into the
//! child, where no thread can drop it, and keeps it until exit or exec). A
//! handle opened by the parent fails in the child with [`Error::Forked`]
//! (a `pthread_atfork` handler bumps a generation counter; every operation
//! compares it, a relaxed load) instead of acting on the parent's record;
//! dropping it in the child neither detaches the parent nor joins the
//! parent's doorbell thread. The child calls [`SharedSemaphore::open`]
//! again, which attaches a record of its own (tested in `tests/fork.rs`),
//! also when another thread of the parent was inside `open` at the fork (the
//! child starts a registry of attachments of its own; the parent's may be
//! locked by that thread, which the child does not have). Nor does such a
//! child keep the segment's init lock, which an `open` holds for
//! microseconds: it is taken through a file description of its own, which a
//! `pthread_atfork` handler closes in every child, so a parent killed inside
//! `open` blocks nobody, whether or not a child it forked lives on (tested
//! in `tests/procs.rs`). In the child,
//! [`finish_raw`](RawSemaphore::finish_raw) of a waiter the parent queued
//! (a future dropped there) returns at once, [`Finish::Closed`] (or
//! [`Finish::Idle`] for an idle one), even while the parent's doorbell
//! thread runs its callback; the parent's request is not touched. So a
//! future the parent queued answers [`Error::Forked`] when polled in the
//! child, where it would otherwise wait for ever for a grant that only the
//! parent's doorbell thread delivers (tested in `tests/fork.rs`).

//! # Inspecting
//!
//! [`SharedSemaphore::inspect`] lists who holds the permits and who waits
//! for them, across every process attached: each process appears under the
//! label it opened the name with ([`OpenOptions::label`]; default
//! `"<hostname>:<pid>"`), with its host name and pid, which the segment
//! keeps in the process's record. Dead processes are reclaimed first, so a
//! process killed with `SIGKILL` is never listed.
//!
//! ```
//! use volt_sem_shm::{OpenOptions, SharedSemaphore};
//! # fn main() -> Result<(), volt_sem_shm::Error> {
//! # if cfg!(not(target_os = "linux")) { return Ok(()); }
//! # let name = format!("doc-inspect-{}", std::process::id());
//! let sem = SharedSemaphore::open(&name, 4, OpenOptions::new().label("web-1"))?;
//! let permit = sem.acquire_blocking(3)?;
//!
//! let report = sem.inspect()?;
//! assert_eq!((report.total, report.available), (4, 1));
//! for h in &report.holders {
//!     // "web-1 (pid 4242 on db-host) holds 3 for 12µs"
//!     println!(
//!         "{} (pid {} on {}) holds {} for {:?}",
//!         h.label, h.pid, h.host, h.permits, h.held_for.unwrap()
//!     );
//! }
//! assert_eq!(report.holders[0].label, "web-1");
//! assert_eq!(report.holders[0].pid, std::process::id());
//! for w in &report.waiters {
//!     // waiters[0] is served next; `granted` is a partial grant.
//!     println!(
//!         "#{} {} wants {} (has {}) since {:?}",
//!         w.position, w.label, w.permits, w.granted, w.waiting_for
//!     );
//! }
//! // Within one snapshot, every permit is in exactly one place.
//! assert_eq!(
//!     report.available + report.held() + report.granted_to_waiters(),
//!     report.total
//! );
//! drop(permit);
//! # volt_sem_shm::unlink(&name)?;
//! # Ok(()) }
//! ```
//!
//! What it costs the other operations: the lock-free path reads the kernel's
//! coarse clock (`CLOCK_MONOTONIC_COARSE`, a few ns through the vDSO) when a
//! process's held count rises from 0, and the slow paths read
//! `CLOCK_MONOTONIC` when a request is queued or completed; `inspect` itself
//! takes the segment lock and shuts the lock-free path for the moment of its
//! read, like [`census`](SharedSemaphore::census). The exact meaning of
//! `held_for` and `waiting_for` is in [`SharedSemaphore::inspect`].
//!
//! Where `inspect` answers "who holds and who waits, right now" for every
//! process, [`SharedSemaphore::stats`] answers "how has it gone for this
//! process": its grants (and their permits), cancels, timeouts and the dead
//! processes its sweeps reclaimed, a histogram of how long its granted
//! requests waited (from queueing to grant, stamped in the segment, so a
//! grant made by another process is timed on the same clock), and three
//! gauges read lock-free (`available`, this process's `held` and
//! `queued`). The counters are kept per process and name (one recorder for
//! every handle of the name in the process), from
//! [`SharedSemaphore::enable_stats`] on: off by default, since the
//! lock-free `try_acquire` would pay two atomic increments for them (off,
//! it pays one load and one predicted branch). The bindings switch it on.
//!
//! ```
//! use volt_sem_shm::{OpenOptions, SharedSemaphore};
//! # fn main() -> Result<(), volt_sem_shm::Error> {
//! # if cfg!(not(target_os = "linux")) { return Ok(()); }
//! # let name = format!("doc-crate-stats-{}", std::process::id());
//! let sem = SharedSemaphore::open(&name, 4, OpenOptions::new())?;
//! sem.enable_stats();
//! let permit = sem.acquire_blocking(3)?;
//! let s = sem.stats();
//! assert_eq!((s.grants, s.permits_granted), (1, 3));
//! assert_eq!((s.available, s.held, s.queued), (1, 3, 0));
//! println!("p50 {:?} p99 {:?} max {:?}", s.wait.p50(), s.wait.p99(), s.wait.max());
//! drop(permit);
//! # volt_sem_shm::unlink(&name)?;
//! # Ok(()) }
//! ```
//!
//! # Changing the total
//!
//! [`SharedSemaphore::set_total`] changes the total of a name for every
//! process, online; [`OpenOptions::resize`] does the same at `open` (a
//! rolling deploy from 8 to 10 permits is one option, not an unlink), and
//! without it an `open` with another total still fails with
//! [`Error::TotalMismatch`]. Under the segment lock:
//!
//! * **Growing** hands the new permits out as a release would: the head of
//!   the FIFO first, completing requests in order (a head it cannot complete
//!   keeps a partial grant and the hand-off stops there), the rest to the
//!   counter.
//! * **Shrinking never revokes held permits.** The cut is taken from the
//!   counter as far as it has permits; the rest becomes a **debt**, paid
//!   first by every permit that comes back (a release, a cancelled partial
//!   grant, a dead process's reclaimed permits), before any waiter or the
//!   counter. While a debt exists the state word has a `DEBT` bit that shuts
//!   the lock-free release (as `QUEUED` does), so no permit can reach the
//!   counter past the debt; the counter is 0 meanwhile. So permits in use
//!   never exceed the larger of the new total and the total before the
//!   shrink, and the new total holds from the moment the debt is paid.
//! * Either way, every **queued request for more than the new total fails at
//!   once** with [`Error::TooManyPermits`] (the error a request above the
//!   total always got), its partial grant handed on (debt first), the other
//!   requests keeping their place. An async acquire reports it the same
//!   way. A raw waiter's request ends as [`Finish::Closed`] (the raw phases
//!   know granted and closed only), and
//!   [`SharedSemaphore::failed_above_total`] then tells this failure from a
//!   close: an outcome the waiter keeps, whatever the total or the
//!   semaphore does afterwards.
//!
//! During a debt, [`SharedSemaphore::census`] reports it
//! ([`Census::debt`]; `conserved()` checks `available + held + granted ==
//! total + debt`), and [`SharedSemaphore::inspect`] reports the **new**
//! total, with `Σ holders.permits + Σ waiters.granted` above it by the debt
//! (and `available == 0`) until the debt is paid.
//!
//! Two processes that resize to different totals: the last one wins. A
//! process that dies inside `set_total` after writing the new total leaves
//! the counter and debt to the repair of the next locker, which recomputes
//! both from the truth (`debt = Σ held + Σ granted − total` when positive)
//! and fails the oversized requests. [`SharedSemaphore::reopen`] undoes
//! [`close`](SharedSemaphore::close) (requests the close failed stay
//! failed).
//!
//! # Cost
//!
//! `cargo bench -p volt-sem-shm --bench shm`; the figures, with the machine
//! and load, are in `docs/benchmarks.md`, *Shared memory*. In short:
//! uncontended `try_acquire(1)` + `release(1)` is four uncontended RMWs (two
//! per operation: the state word and the process's `held`; the in-process
//! semaphore needs two in all), about 2 to 2.5 times the in-process cost on
//! the measured machine (it was 4 to 5.5 times with the lock on every
//! operation); cross-process hand-off to a blocked thread is one futex
//! wake-up, within about 2 us of a POSIX named semaphore's `sem_post` ->
//! `sem_wait` (7.7 vs 5.6 us on a quiet 2-core VM; 32 us before).
//!
//! # Limits (for now)
//!
//! * Every `Pending` raw waiter must be finished before the process's last
//!   handle on the name is dropped: dropping it stops the doorbell thread
//!   and detaches (returning everything the process holds).
//! * A blocking acquire must not run on the doorbell thread
//!   ([`Error::InCallback`]); callbacks must be short, as in volt-sem.
//! * `open` of the same name by many threads of one process is serialised by
//!   a process-wide registry, and against other processes by the init lock.
//!   The registry knows a segment by its file (`st_dev`, `st_ino`), so two
//!   names of one file (a hard link in `/dev/shm`) opened by one process,
//!   even at the same time by two threads, share one record, as two opens
//!   of one name do.

#![warn(missing_docs)]
// Elsewhere only the segment algorithm compiles (and is tested); `open` fails.
#![cfg_attr(
    not(all(target_os = "linux", not(volt_loom))),
    allow(dead_code, unused_mut)
)]

mod clock;
mod error;
#[doc(hidden)]
pub mod hooks;
mod permit;
mod segment;
mod stats;
mod sync;

// The loom model of the segment algorithm (`make test-shm-loom`).
#[cfg(all(test, volt_loom))]
mod loom_model;

#[cfg(all(target_os = "linux", not(volt_loom)))]
mod imp;
#[cfg(not(all(target_os = "linux", not(volt_loom))))]
#[path = "unsupported.rs"]
mod imp;
#[cfg(all(target_os = "linux", not(volt_loom)))]
mod sys;

#[cfg(not(all(target_os = "linux", not(volt_loom))))]
use core::future::Future;
#[cfg(not(all(target_os = "linux", not(volt_loom))))]
use core::pin::Pin;
#[cfg(not(all(target_os = "linux", not(volt_loom))))]
use core::task::{Context, Poll};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use error::Error;
#[cfg(all(target_os = "linux", not(volt_loom)))]
pub use imp::{ShmWaiter, ShmWaiterState};
pub use permit::Permit;
pub use segment::{Census, MAX_HOST_LEN, MAX_PERMITS, MAX_PROCESSES, MAX_WAITERS};
pub use volt_sem::inspect::{Holder, Inspection, QueuedWaiter};
pub use volt_sem::raw::RawSemaphore;
pub use volt_sem::{Finish, RawAcquire, WakeFn};

/// The prefix of every segment's name in the shared-memory namespace.
pub const NAME_PREFIX: &str = "volt-sem.";
/// The longest name accepted, in bytes (`NAME_MAX` 255 minus the prefix).
pub const MAX_NAME_LEN: usize = 255 - NAME_PREFIX.len();
/// The liveness-sweep period of a process with queued requests, in ms.
pub const SWEEP_PERIOD_MS: u64 = 200;

/// Checks a semaphore name: 1 to [`MAX_NAME_LEN`] bytes, no `/`, no NUL.
pub fn validate_name(name: &str) -> Result<(), Error> {
    if name.is_empty() || name.len() > MAX_NAME_LEN || name.contains(['/', '\0']) {
        return Err(Error::InvalidName);
    }
    Ok(())
}

/// How [`SharedSemaphore::open`] treats an existing or a missing name, and
/// the label its process is listed under by [`SharedSemaphore::inspect`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenOptions {
    create: bool,
    attach: bool,
    mode: u32,
    accept_foreign_owner: bool,
    resize: bool,
    label: LabelChoice,
}

/// The label asked for, kept inline (not a `String`) so that the options
/// stay `Copy` and `new` stays `const`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum LabelChoice {
    /// `volt_sem::inspect::default_label()`, computed at `open`.
    Default,
    /// A valid label (`is_valid_label`): its first `len` bytes.
    Given {
        len: u8,
        bytes: [u8; volt_sem::inspect::MAX_LABEL_LEN],
    },
    /// An invalid one: `open` fails with `Error::InvalidLabel`.
    Invalid,
}

impl LabelChoice {
    fn as_str(&self) -> Option<&str> {
        match self {
            // Only valid labels (printable ASCII) are stored.
            LabelChoice::Given { len, bytes } => core::str::from_utf8(&bytes[..*len as usize]).ok(),
            _ => None,
        }
    }
}

impl core::fmt::Debug for LabelChoice {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            LabelChoice::Default => f.write_str("Default"),
            LabelChoice::Given { .. } => write!(f, "{:?}", self.as_str().unwrap_or_default()),
            LabelChoice::Invalid => f.write_str("Invalid"),
        }
    }
}

impl Default for OpenOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl OpenOptions {
    /// Create the semaphore if the name is free, else attach to it; mode 0600.
    pub const fn new() -> Self {
        OpenOptions {
            create: true,
            attach: true,
            mode: 0o600,
            accept_foreign_owner: false,
            resize: false,
            label: LabelChoice::Default,
        }
    }
    /// Fail with [`Error::AlreadyExists`] if the name exists.
    pub const fn create_only(mut self) -> Self {
        self.create = true;
        self.attach = false;
        self
    }
    /// Fail with [`Error::NotFound`] if the name does not exist.
    pub const fn attach_only(mut self) -> Self {
        self.create = false;
        self.attach = true;
        self
    }
    /// The permission bits of a newly created segment (e.g. `0o660` to share
    /// with the group), set exactly (the umask does not apply). Only the low
    /// 9 bits are used.
    pub const fn mode(mut self, mode: u32) -> Self {
        self.mode = mode & 0o777;
        self
    }
    /// Attach to an existing segment even if another user owns it (its file's
    /// owner is not this process's effective uid). Off by default: such an
    /// attach fails with [`Error::PermissionDenied`] and changes nothing.
    ///
    /// Whoever can write a segment can make every process attached to it
    /// misbehave (see *Trust boundary* in the crate docs): a segment another
    /// user created, or pre-created under a name you meant to create (name
    /// squatting), is only as trustworthy as that user. Turn this on only for
    /// a name another user shares with you on purpose (the creator gave the
    /// group or everyone access with [`mode`](Self::mode)).
    pub const fn accept_foreign_owner(mut self, accept: bool) -> Self {
        self.accept_foreign_owner = accept;
        self
    }
    /// When the name exists with another total, change its total to the one
    /// `open` asks for (as [`SharedSemaphore::set_total`] does, under the
    /// same lock as the attach) instead of failing with
    /// [`Error::TotalMismatch`]. Off by default. Meant for a rolling deploy
    /// that changes the total (8 to 10: the new processes open with 10 and
    /// `resize(true)`, nobody deletes the name).
    ///
    /// Two processes that open with different totals and `resize(true)`:
    /// **the last one wins**; each `open` sets the total it asked for, so
    /// the total ends up being the one of whichever `open` took the lock
    /// last (and changes each time). Deploy one total at a time.
    pub const fn resize(mut self, resize: bool) -> Self {
        self.resize = resize;
        self
    }
    /// The label this process is listed under by
    /// [`inspect`](SharedSemaphore::inspect) (as a holder or a waiter), with
    /// its host name and pid. Default:
    /// [`default_label`](volt_sem::inspect::default_label),
    /// `"<hostname>:<pid>"`. 1 to
    /// [`MAX_LABEL_LEN`](volt_sem::inspect::MAX_LABEL_LEN) (128) bytes of
    /// printable ASCII without spaces
    /// ([`is_valid_label`](volt_sem::inspect::is_valid_label)); `open` refuses
    /// any other with [`Error::InvalidLabel`].
    ///
    /// One label per process and name: the segment keeps it in the process's
    /// record, which every handle of the process on that name shares (see
    /// [`SharedSemaphore`]). While a handle on the name is open in this
    /// process, another `open` of it returns a handle on the same record and
    /// **its label is ignored: the first one wins** (checked for validity all
    /// the same); [`SharedSemaphore::label`] says which one is in use.
    pub fn label(mut self, label: impl Into<String>) -> Self {
        let label: String = label.into();
        self.label = if volt_sem::inspect::is_valid_label(&label) {
            let mut bytes = [0u8; volt_sem::inspect::MAX_LABEL_LEN];
            bytes[..label.len()].copy_from_slice(label.as_bytes());
            LabelChoice::Given {
                len: label.len() as u8,
                bytes,
            }
        } else {
            LabelChoice::Invalid
        };
        self
    }
}

/// One queued blocking request, as
/// [`SharedSemaphore::acquire_blocking_ticketed`] (or
/// [`acquire_blocking_interruptible_ticketed`](SharedSemaphore::acquire_blocking_interruptible_ticketed))
/// reports it, for
/// [`SharedSemaphore::fail_blocking`]: its slot and sequence number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockingTicket {
    pub(crate) slot: u32,
    pub(crate) seq: u64,
}

/// A handle on a named semaphore shared by the processes of this machine.
///
/// Cheap to clone; every handle of one process on one name shares one process
/// record (so permits acquired through one handle may be released through
/// another) and one doorbell thread. When the last handle of a process is
/// dropped, the process detaches and whatever it still holds goes back, as if
/// it had died.
///
/// Acquires return a [`Permit`] guard, as the in-process semaphore's do. The
/// raw waiter API is [`RawSemaphore`] (with a [`ShmWaiter`]): the callbacks
/// run on this process's doorbell thread of the name, whoever released, in
/// any process.
#[derive(Clone)]
pub struct SharedSemaphore {
    att: Arc<imp::Attachment>,
}

impl core::fmt::Debug for SharedSemaphore {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SharedSemaphore")
            .field("available", &self.available_permits())
            .field("closed", &self.is_closed())
            .finish_non_exhaustive()
    }
}

/// Removes the name `name` (only the name: processes attached keep the
/// semaphore). [`Error::NotFound`] if there is none.
pub fn unlink(name: &str) -> Result<(), Error> {
    validate_name(name)?;
    imp::unlink(name)
}

/// The names of the semaphores of this machine, sorted: the shared-memory
/// objects named [`NAME_PREFIX`]`<name>` (the files `/dev/shm/volt-sem.<name>`),
/// whoever created them (open one with [`SharedSemaphore::attach`] to see
/// it; a file another program planted under the prefix is listed too, and
/// refused there with [`Error::NotASegment`]). A snapshot: names come and go
/// with `open` and [`unlink`]. [`Error::Unsupported`] off Linux.
pub fn list() -> Result<Vec<String>, Error> {
    imp::list()
}

impl SharedSemaphore {
    /// Opens (or creates, see [`OpenOptions`]) the semaphore `name` with
    /// `permits` permits in total. Opening an existing name with another total
    /// fails with [`Error::TotalMismatch`] and changes nothing, unless
    /// [`OpenOptions::resize`] is on (then the total becomes `permits`).
    pub fn open(name: &str, permits: usize, options: OpenOptions) -> Result<Self, Error> {
        if permits == 0 || permits > MAX_PERMITS {
            validate_name(name)?;
            return Err(Error::InvalidPermits);
        }
        Self::open_with(name, Some(permits as u64), options)
    }

    /// Attaches to the existing semaphore `name`, whatever its total (read
    /// from the segment: [`total_permits`](Self::total_permits)), for a
    /// process that only looks at it, such as the `volt-sem` command line's
    /// `inspect`. Never creates it: [`Error::NotFound`] if there is no such
    /// name, or if its creator died before initialising it (the next `open`
    /// with a total does). The options' mode and create/attach choice are
    /// not used; their [label](OpenOptions::label) and
    /// [`accept_foreign_owner`](OpenOptions::accept_foreign_owner) are. The
    /// other checks and errors are those of [`open`](Self::open), and the
    /// process attaches as any other does (a process record, listed by
    /// [`inspect`](Self::inspect) only while it holds or waits).
    pub fn attach(name: &str, options: OpenOptions) -> Result<Self, Error> {
        Self::open_with(name, None, options.attach_only())
    }

    /// `open` (`total` given) or `attach` (`None`, attach-only).
    fn open_with(name: &str, total: Option<u64>, options: OpenOptions) -> Result<Self, Error> {
        validate_name(name)?;
        let label = match options.label {
            LabelChoice::Default => volt_sem::inspect::default_label(),
            LabelChoice::Invalid => return Err(Error::InvalidLabel),
            given => given.as_str().ok_or(Error::InvalidLabel)?.to_owned(),
        };
        #[cfg(all(target_os = "linux", not(volt_loom)))]
        {
            let create = match (options.create, options.attach) {
                (true, false) => sys::Create::Only,
                (false, _) => sys::Create::AttachOnly,
                (true, true) => sys::Create::OrAttach,
            };
            let att = imp::open(
                name,
                total,
                create,
                options.mode,
                options.accept_foreign_owner,
                options.resize,
                &label,
            )?;
            Ok(SharedSemaphore { att })
        }
        #[cfg(not(all(target_os = "linux", not(volt_loom))))]
        {
            let att = imp::open(
                name,
                total,
                options.mode,
                options.accept_foreign_owner,
                options.resize,
                &label,
            )?;
            Ok(SharedSemaphore { att })
        }
    }

    /// The total number of permits now: the one of creation, or of the
    /// last [`set_total`](Self::set_total) (any process).
    pub fn total_permits(&self) -> usize {
        self.att.total() as usize
    }

    /// Changes the total to `n` permits, for every process (see *Changing
    /// the total* in the crate docs). `n` is 1 to [`MAX_PERMITS`], else
    /// [`Error::InvalidPermits`] and nothing changes.
    ///
    /// Growing hands the new permits to the queued requests at once, in FIFO
    /// order (as a release would). Shrinking revokes nothing: what is held
    /// stays held, and the cut takes effect as permits come back (they pay
    /// the *debt* first, before any waiter or the counter). Either way, every
    /// queued request for more than `n` fails at once with
    /// [`Error::TooManyPermits`] (its partial grant is handed on, the other
    /// requests keep their place), and later requests for more than `n` fail
    /// as they always did. Works on a closed semaphore too.
    pub fn set_total(&self, n: usize) -> Result<(), Error> {
        self.set_total_until(n, None)
    }

    /// [`set_total`](Self::set_total), waiting for the segment's lock at
    /// most `timeout`: [`Error::TimedOut`] (nothing changed) when a process
    /// holds it that long, which one does only when it is stopped
    /// (`SIGSTOP`, a debugger) or stuck inside an operation. As
    /// [`inspect_timeout`](Self::inspect_timeout), for a process that must
    /// not hang on another's behalf (`volt-sem resize`).
    pub fn set_total_timeout(&self, n: usize, timeout: Duration) -> Result<(), Error> {
        self.set_total_until(n, Instant::now().checked_add(timeout))
    }

    fn set_total_until(&self, n: usize, deadline: Option<Instant>) -> Result<(), Error> {
        if n == 0 || n > MAX_PERMITS {
            return Err(Error::InvalidPermits);
        }
        self.att.set_total(n as u64, deadline)
    }

    /// After [`finish_raw`](RawSemaphore::finish_raw) returned
    /// [`Finish::Closed`] for `waiter`: whether its request was failed by
    /// [`set_total`](Self::set_total) (or [`OpenOptions::resize`]) because it
    /// asked for more than the new total, the failure every other API
    /// reports as [`Error::TooManyPermits`], rather than ended by
    /// [`close`](Self::close). The answer is the waiter's own (recorded when
    /// the request ended), not read from the total now, which may have grown
    /// back since. The waiter's next request clears it, whether it is
    /// queued or not (granted at once, or refused with an error).
    #[cfg(all(target_os = "linux", not(volt_loom)))]
    pub fn failed_above_total(&self, waiter: &ShmWaiter) -> bool {
        waiter.backend_word() == imp::FAILED_WORD
    }

    /// Fails `waiter`'s request if it is still queued in the segment through
    /// this process's attachment, as a request above a new total is failed
    /// ([`set_total`](Self::set_total)): its partial grant is handed on, its
    /// callback runs on the doorbell thread, and its owner's `finish_raw`
    /// reports [`Finish::Closed`] (with
    /// [`failed_above_total`](Self::failed_above_total) `true`). For a
    /// binding that ends one handle's requests (its `disconnect`) while the
    /// others of the process go on. `Ok(false)`, nothing changed, if the
    /// request was not queued (granted, closed, failed or cancelled already).
    ///
    /// # Safety
    /// `waiter` is live for the whole call: queued on this semaphore by its
    /// owner, whose `finish_raw` has not returned (the caller keeps it from
    /// returning, e.g. under a lock that `finish_raw`'s caller takes first),
    /// or idle.
    #[cfg(all(target_os = "linux", not(volt_loom)))]
    pub unsafe fn fail_queued(&self, waiter: &ShmWaiter) -> Result<bool, Error> {
        self.att.fail_queued(waiter)
    }

    /// Like [`acquire_timeout`](Self::acquire_timeout) (`None`: no timeout),
    /// calling `on_queued` once, on this thread, with the request's
    /// [`BlockingTicket`] if it has to queue (not on the fast path: an
    /// uncontended acquire costs what [`acquire_blocking`](Self::acquire_blocking)
    /// costs), before the thread sleeps. Another thread may then end the wait
    /// at once with [`fail_blocking`](Self::fail_blocking) (for a binding
    /// that ends one handle's requests: its `disconnect`). If `on_queued`
    /// panics, the request is cancelled (a partial grant is handed on), then
    /// the panic goes on.
    pub fn acquire_blocking_ticketed(
        &self,
        n: usize,
        timeout: Option<Duration>,
        mut on_queued: impl FnMut(BlockingTicket),
    ) -> Result<Permit<'_>, Error> {
        let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
        self.att
            .acquire_deadline_polled(n as u64, deadline, None, Some(&mut on_queued))?;
        Ok(Permit::new(self, n))
    }

    /// [`acquire_blocking_interruptible`](Self::acquire_blocking_interruptible)
    /// that also reports its [`BlockingTicket`] to `on_queued` if it has to
    /// queue, as [`acquire_blocking_ticketed`](Self::acquire_blocking_ticketed)
    /// does: a wait that polls (a binding's signal checks) and that another
    /// thread can end at once with [`fail_blocking`](Self::fail_blocking)
    /// (its acquire then returns [`Error::TooManyPermits`]).
    pub fn acquire_blocking_interruptible_ticketed(
        &self,
        n: usize,
        timeout: Option<Duration>,
        poll: Duration,
        mut interrupted: impl FnMut() -> bool,
        mut on_queued: impl FnMut(BlockingTicket),
    ) -> Result<Option<Permit<'_>>, Error> {
        self.interruptible(n, timeout, (poll, &mut interrupted), Some(&mut on_queued))
    }

    /// [`acquire_blocking_interruptible`](Self::acquire_blocking_interruptible),
    /// its ticket reported to `on_queued` if given.
    fn interruptible(
        &self,
        n: usize,
        timeout: Option<Duration>,
        poll: (Duration, &mut dyn FnMut() -> bool),
        on_queued: Option<&mut dyn FnMut(BlockingTicket)>,
    ) -> Result<Option<Permit<'_>>, Error> {
        let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
        let granted =
            self.att
                .acquire_deadline_polled(n as u64, deadline, Some(poll), on_queued)?;
        Ok(granted.then(|| Permit::new(self, n)))
    }

    /// Fails the blocking request of `ticket` (from
    /// [`acquire_blocking_ticketed`](Self::acquire_blocking_ticketed) on this
    /// handle's process) if it is still queued, as a request above a new
    /// total is failed ([`set_total`](Self::set_total)): its partial grant is
    /// handed on, its thread is woken at once and its acquire returns
    /// [`Error::TooManyPermits`]. `Ok(false)`, nothing changed, if the
    /// request is not queued any more (granted, closed, failed, timed out or
    /// cancelled: a ticket names one request, never a later one in the same
    /// slot), so a stale ticket is harmless.
    pub fn fail_blocking(&self, ticket: BlockingTicket) -> Result<bool, Error> {
        self.att.fail_blocking(ticket)
    }

    /// Undoes [`close`](Self::close), for every process: later acquires work
    /// again. Requests that the close failed stay failed. A no-op on a
    /// semaphore that is not closed.
    pub fn reopen(&self) -> Result<(), Error> {
        self.att.reopen(None)
    }

    /// [`reopen`](Self::reopen), waiting for the segment's lock at most
    /// `timeout` ([`Error::TimedOut`], nothing changed; see
    /// [`set_total_timeout`](Self::set_total_timeout)).
    pub fn reopen_timeout(&self, timeout: Duration) -> Result<(), Error> {
        self.att.reopen(Instant::now().checked_add(timeout))
    }

    /// Permits available right now (0 while anyone, in any process, is queued).
    /// A snapshot: other processes may change it at any moment.
    pub fn available_permits(&self) -> usize {
        self.att.available() as usize
    }

    /// Whether any process closed the semaphore.
    pub fn is_closed(&self) -> bool {
        self.att.is_closed()
    }

    /// Takes `n` permits if they are available now and nobody is queued.
    /// `n == 0` succeeds unless closed. Never blocks: when it needs the
    /// segment lock it waits at most 10 ms for it, then fails with
    /// [`Error::NoPermits`] (another process is stopped inside the lock).
    pub fn try_acquire(&self, n: usize) -> Result<Permit<'_>, Error> {
        if n == 0 {
            return self.att.zero_permits().map(|()| Permit::new(self, 0));
        }
        self.att.try_acquire(n as u64)?;
        Ok(Permit::new(self, n))
    }

    /// Gives back `n` permits this process holds, outside of a [`Permit`]
    /// (after [`Permit::forget`]), FIFO hand-off to the queue, in any
    /// process. [`Error::NotHeld`] if the process holds fewer; then nothing
    /// is released. Works after `close`.
    pub fn release(&self, n: usize) -> Result<(), Error> {
        self.att.release(n as u64)
    }

    /// Acquires `n` permits, blocking this thread (no polling: it sleeps on
    /// a futex word of its own queued request, which the granting process
    /// wakes) until they are granted in FIFO order across all processes, or
    /// the semaphore is closed.
    pub fn acquire_blocking(&self, n: usize) -> Result<Permit<'_>, Error> {
        self.att.acquire_deadline(n as u64, None)?;
        Ok(Permit::new(self, n))
    }

    /// Like [`acquire_blocking`](Self::acquire_blocking), giving up after
    /// `timeout` with [`Error::TimedOut`]; a partial grant is handed on. The
    /// timeout bounds the waits for the segment lock too (a process stopped
    /// inside it does not make this overrun it).
    pub fn acquire_timeout(&self, n: usize, timeout: Duration) -> Result<Permit<'_>, Error> {
        self.att
            .acquire_deadline(n as u64, Instant::now().checked_add(timeout))?;
        Ok(Permit::new(self, n))
    }

    /// Like [`acquire_timeout`](Self::acquire_timeout) (`None`: no timeout),
    /// also calling `interrupted()` on this thread about every `poll` while
    /// it waits (for a binding that must run signal handlers, for example):
    /// if it returns `true`, the request is cancelled (a partial grant is
    /// handed on) and the result is `Ok(None)`. `Ok(Some(permit))`: granted
    /// (also when the grant came before the interruption was honoured). The wait
    /// stays one queued request from start to end: it keeps its FIFO place,
    /// unlike a loop of short timeouts. If `interrupted()` panics, the
    /// request is cancelled as for `true` (a grant that came first is given
    /// back), then the panic goes on. If `interrupted()` forked (a signal
    /// handler that calls `fork()`), the child's call ends with
    /// [`Error::Forked`] (or the check's panic) and leaves the queued request,
    /// the parent's, to the parent.
    pub fn acquire_blocking_interruptible(
        &self,
        n: usize,
        timeout: Option<Duration>,
        poll: Duration,
        mut interrupted: impl FnMut() -> bool,
    ) -> Result<Option<Permit<'_>>, Error> {
        self.interruptible(n, timeout, (poll, &mut interrupted), None)
    }

    /// Acquires `n` permits asynchronously. Cancel-safe: dropping the future
    /// before it completes hands any partial grant on (and gives back a grant
    /// it never reported).
    pub fn acquire(&self, n: usize) -> Acquire<'_> {
        #[cfg(all(target_os = "linux", not(volt_loom)))]
        return volt_sem::raw::Wait::new(self, n);
        #[cfg(not(all(target_os = "linux", not(volt_loom))))]
        {
            let _ = n;
            Acquire { sem: self }
        }
    }

    /// Closes the semaphore for every process: every queued request, in every
    /// process, completes with [`Error::Closed`] (its partial grant goes back),
    /// and every later acquire fails. Permits held can still be released.
    pub fn close(&self) -> Result<(), Error> {
        self.att.close()
    }

    /// Permits held by this process (all its handles and threads).
    pub fn held_permits(&self) -> Result<usize, Error> {
        self.att.held().map(|h| h as usize)
    }

    /// The conservation sums, read under the lock after a liveness sweep (for
    /// tests and diagnostics).
    pub fn census(&self) -> Result<Census, Error> {
        self.att.census()
    }

    /// Who holds this semaphore's permits and who waits for them, in queue
    /// order, across every process attached (see *Inspecting* in the crate
    /// docs).
    ///
    /// First reclaims what dead processes had (as every slow path does), so
    /// a process killed with `SIGKILL` is not listed and its permits are
    /// back in `available` (or handed to the queue). Then reads, under the
    /// segment lock and with the lock-free path shut for a moment (as
    /// [`census`](Self::census) does):
    ///
    /// * `holders`: one per process holding permits (all its handles and
    ///   threads together), in record order, with the label it attached with
    ///   ([`OpenOptions::label`]), its host name (cut to [`MAX_HOST_LEN`]
    ///   bytes) and pid. A grant completed and not yet collected by its
    ///   process counts as held by it. `held_for` is the time since the
    ///   process's held count last rose from 0 (or since an uncollected
    ///   grant, if older): the age of its oldest grant still held when it
    ///   holds permits from one acquire, an upper bound on it otherwise (a
    ///   process that never drops to 0 keeps its first stamp; two threads of
    ///   one process racing at 0 may leave either one's stamp). It is
    ///   stamped with the kernel's coarse clock (one tick, 1 to 10 ms, of
    ///   resolution): never short, long by about a tick (up to 7 ms measured
    ///   on a 4 ms tick). `lease_remaining` and `token` are `None` (Redis
    ///   only).
    /// * `waiters`: the FIFO, `waiters[0]` next; `granted` is a partial
    ///   grant, `waiting_for` the time since the request was queued.
    ///
    /// Within one snapshot `available + Σ holders.permits + Σ
    /// waiters.granted == total`, unless a process stayed stopped inside a
    /// lock-free operation for the whole ~50 ms the read waits for it (then
    /// its count is read as it is, as by `census`), or a
    /// [`set_total`](Self::set_total) shrank the total below what is held
    /// (then the sum is above `total` by the permits still to be taken back
    /// as they are released). Times are measured on
    /// `CLOCK_MONOTONIC`, which every process of the machine shares.
    /// [`Error::Corrupt`] if the segment holds values this crate never writes.
    pub fn inspect(&self) -> Result<Inspection, Error> {
        self.att.inspect(None)
    }

    /// [`inspect`](Self::inspect), waiting for the segment's lock at most
    /// `timeout`: [`Error::TimedOut`] (nothing read) when a process holds it
    /// that long, which one does only when it is stopped (`SIGSTOP`, a
    /// debugger) or stuck inside an operation (the lock is held for
    /// microseconds otherwise). For a process that must not hang on
    /// another's behalf, such as the `volt-sem` command line's `watch`.
    pub fn inspect_timeout(&self, timeout: Duration) -> Result<Inspection, Error> {
        self.att.inspect(Instant::now().checked_add(timeout))
    }

    /// Whether this semaphore's name was removed since this handle was
    /// opened ([`unlink`], by any process): the handle still works, but the
    /// semaphore is no longer the one of its name (the next `open` of the
    /// name creates another). For a process that keeps looking at a name,
    /// such as the `volt-sem` command line's `watch`. Read from the
    /// segment's own file, so a semaphore created under the name since does
    /// not make it `false`. [`Error::Forked`] in a child of the process that
    /// opened it.
    pub fn is_unlinked(&self) -> Result<bool, Error> {
        self.att.is_unlinked()
    }

    /// The label this process is listed under by [`inspect`](Self::inspect):
    /// the one of the `open` that attached it (see [`OpenOptions::label`]).
    pub fn label(&self) -> &str {
        self.att.label()
    }

    /// This process's record index in the segment (diagnostics).
    pub fn process_record(&self) -> u32 {
        self.att.record()
    }

    /// The pid that opened this handle (a handle is not usable after `fork`).
    pub fn opener_pid(&self) -> u32 {
        self.att.pid()
    }
}

/// The future of [`SharedSemaphore::acquire`]: the waiter lives inside it
/// (`volt_sem::raw::Wait`), so waiting allocates nothing.
#[cfg(all(target_os = "linux", not(volt_loom)))]
pub type Acquire<'a> = volt_sem::raw::Wait<'a, SharedSemaphore>;

// SAFETY: `node` is the waiter's own node, the one `acquire_raw` queues and
// completes through the `raw` trampoline.
#[cfg(all(target_os = "linux", not(volt_loom)))]
unsafe impl volt_sem::raw::RawWait for SharedSemaphore {
    type Output<'a> = Result<Permit<'a>, Error>;

    fn new_waiter() -> ShmWaiter {
        ShmWaiter::new()
    }

    fn node(waiter: &ShmWaiter) -> &volt_sem::raw::Node {
        waiter.node()
    }

    fn immediate(&self, _n: usize) -> Option<Self::Output<'_>> {
        None
    }

    fn answered(&self, _: &ShmWaiter, n: usize, r: Result<(), Error>) -> Self::Output<'_> {
        r.map(|()| Permit::new(self, n))
    }

    fn finished(&self, w: &ShmWaiter, n: usize, finish: Finish) -> Self::Output<'_> {
        match finish {
            Finish::Granted => Ok(Permit::new(self, n)),
            _ if self.failed_above_total(w) => Err(Error::TooManyPermits),
            _ => Err(Error::Closed),
        }
    }

    fn abandoned(&self, _: &ShmWaiter, n: usize, finish: Finish) {
        if finish == Finish::Granted {
            // Granted after the last poll: the caller never saw it.
            let _ = self.release(n);
        }
    }

    fn stranded(&self) -> Option<Self::Output<'_>> {
        // A fork child's copy: the grant would come from the parent's
        // doorbell thread (and `finish_raw` there returns at once).
        self.att.forked().then_some(Err(Error::Forked))
    }
}

/// The future of [`SharedSemaphore::acquire`] (no shared memory here: a
/// handle cannot exist).
#[cfg(not(all(target_os = "linux", not(volt_loom))))]
#[must_use = "futures do nothing unless polled"]
#[derive(Debug)]
pub struct Acquire<'a> {
    sem: &'a SharedSemaphore,
}

#[cfg(not(all(target_os = "linux", not(volt_loom))))]
impl<'a> Future for Acquire<'a> {
    type Output = Result<Permit<'a>, Error>;

    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Self::Output> {
        match *self.sem.att {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(validate_name(""), Err(Error::InvalidName));
        assert_eq!(validate_name("a/b"), Err(Error::InvalidName));
        assert_eq!(validate_name("a\0b"), Err(Error::InvalidName));
        assert_eq!(
            validate_name(&"x".repeat(MAX_NAME_LEN + 1)),
            Err(Error::InvalidName)
        );
        assert_eq!(validate_name(&"x".repeat(MAX_NAME_LEN)), Ok(()));
        assert_eq!(validate_name("gpu-0.slots"), Ok(()));
    }
}
