/*
 * volt_sem.h: C ABI of volt-sem, a fair, weighted counting semaphore with direct
 * hand-off. Link libvolt_sem.a plus the system libraries rustc lists for it
 * (`ffi-c/link-flags.sh libs`; on Linux -lgcc_s -lutil -lrt -lpthread -lm -ldl
 * -lc), or libvolt_sem.so (SONAME libvolt_sem.so: give the linker -L and the
 * program an rpath or another way to find it at run time). The README has the
 * exact lines; `ffi-c/link-flags.sh pc LIBDIR` writes a pkg-config volt_sem.pc.
 *
 * OWNERSHIP
 *   volt_sem_new() (and volt_sem_open(), volt_sem_connect(), see SHARED
 *   SEMAPHORES and REDIS SEMAPHORES) gives the caller one reference to a
 *   semaphore;
 *   volt_sem_clone() adds one (same pointer); volt_sem_free() drops one (NULL is a
 *   no-op). The semaphore is destroyed with its last reference. A busy waiter
 *   (see below) holds a reference of its own, so dropping every handle while
 *   waiters are queued is memory-safe, but the handle passed to volt_sem_cancel()
 *   must still be a live reference: keep one while waiters are queued on it.
 *   Acquired permits belong to the caller until it passes them to
 *   volt_sem_release(); nothing is released automatically, except by
 *   volt_sem_disconnect() of a named or Redis handle, which ends the handle's
 *   session before its last reference goes: what it holds goes back, its
 *   queued waiters and every later call on it (any reference) fail with
 *   VOLT_DISCONNECTED; each reference is still freed with volt_sem_free().
 *
 * COUNTS
 *   A count `n` must be 1..=volt_max_permits(). Unlike the Rust, Python and Node
 *   APIs, where acquire(0) is an immediate no-op, the C ABI rejects n == 0 with
 *   VOLT_INVALID_ARGUMENT: in C a zero count is far more often an uninitialised
 *   or miscomputed variable than a request.
 *
 * ERROR DETAILS
 *   The status says what failed; volt_last_error_message() gives the details
 *   of the call made just before on the calling thread (every other call
 *   forgets the previous message when it starts): the error's own text for a
 *   failure the semaphore or Redis reports, and for an argument the call
 *   refused, the call and the argument at fault ("volt_sem_acquire: `wake` is
 *   NULL"). It is "" after VOLT_OK and the outcomes that are no failure.
 *
 * THREADS
 *   Every function may be called from any thread, concurrently, on the same
 *   semaphore. A volt_waiter has one owner at a time: calls that take a given
 *   waiter must not run concurrently with each other, except calls made from
 *   inside that waiter's own wake callback, and volt_waiter_status(), which any
 *   thread may call at any time between the waiter's volt_waiter_init() and the
 *   end of its memory: a thread other than the initialising one must see the
 *   init through a synchronising operation (mutex, release/acquire, thread
 *   creation), and the waiter must not be re-initialised or freed while another
 *   thread may be asking.
 *
 * WAKE CALLBACKS (volt_sem_acquire() returned VOLT_PENDING)
 *   - wake(ctx) runs at most once per PENDING acquire: when the full grant has
 *     arrived or the semaphore was closed. Never after VOLT_OK/an error, nor after
 *     volt_sem_cancel() removed the waiter or volt_sem_try_cancel() returned an
 *     outcome.
 *   - It runs on whichever thread completed the grant: a releaser, a canceller
 *     handing on a partial grant, or the closer, possibly before volt_sem_acquire()
 *     has returned on the owner's thread.
 *   - It is never called while an internal lock is held: it may call back into
 *     the library (volt_sem_release(), volt_sem_try_acquire(), volt_sem_acquire()
 *     with another waiter, volt_waiter_status(), and volt_sem_cancel() on its own
 *     waiter or on another waiter it owns, see below).
 *   - Callbacks never nest. The waiters that a callback's own release (or close,
 *     or cancel) completes are called back on the same thread after the current
 *     callback returned, oldest grant first, never inside it. So a chain of any
 *     length of callbacks that each release to the next runs in constant stack
 *     (tested: 100,000 on a 128 KiB thread), and a volt_sem_release() made
 *     inside a callback returns before the callbacks it caused have run
 *     (volt_waiter_status() already says VOLT_OK for those waiters).
 *   - A callback may cancel another waiter it owns (no other thread may be
 *     ending that waiter at the same time: the one-owner rule). If that waiter's
 *     callback is still to run on this thread (the same release completed both),
 *     the cancel returns its outcome at once (VOLT_OK: the callback now owns its
 *     permits; or VOLT_CLOSED), ends its busy period, and its callback is never
 *     called. If its callback runs on another thread, the cancel waits for it,
 *     like any cancel: a callback must not do that while the other callback
 *     could be waiting for it.
 *   - A cancel made inside the callback collects the outcome: its VOLT_OK hands
 *     the permits to the callback, which then owns them (and must release them
 *     or pass them on). The waiter stays busy until its owner's volt_sem_cancel()
 *     from outside, which then returns VOLT_IDLE: it owns nothing more and must
 *     not release again. Generic owner code therefore releases only on VOLT_OK:
 *
 *       static void on_wake(void *ctx) {            // runs on the releaser
 *           job *j = ctx;
 *           if (volt_sem_cancel(j->sem, &j->w, NULL) == VOLT_OK) {
 *               run_job(j);                         // short, non-blocking
 *               volt_sem_release(j->sem, j->n);     // the callback's permits
 *           }
 *       }
 *       ...                                         // later, in the owner:
 *       switch (volt_sem_cancel(j->sem, &j->w, NULL)) {
 *       case VOLT_OK:   run_job(j); volt_sem_release(j->sem, j->n); break;
 *       case VOLT_IDLE: break;       // the callback took and released them
 *       default:        break;       // cancelled or closed: nothing held
 *       }
 *   - It must be short and must not block: the owner's volt_sem_cancel() waits for
 *     it. Typical bodies: set a flag, post to an event loop (uv_async_send), signal
 *     a condition variable.
 *   - Never call volt_sem_cancel() while holding anything the callback takes
 *     (e.g. the mutex of the condition variable it signals): cancel waits for a
 *     callback that runs on another thread, which waits for that mutex: a
 *     deadlock. After pthread_cond_timedwait() times out, unlock, then cancel;
 *     or cancel under the lock with volt_sem_try_cancel(), which returns
 *     VOLT_PENDING instead of waiting for this waiter's callback (the lock must
 *     not be one that other waiters' callbacks take: see volt_sem_try_cancel();
 *     ffi-c/examples/timed_wait.c shows both ways).
 *   - It must return normally. A C++ exception thrown out of it aborts the
 *     process (the library cannot unwind through a semaphore operation half
 *     done: the queue and the permit count would be left inconsistent);
 *     longjmp() out of it is undefined behaviour. Catch exceptions inside it.
 *   - Inside it, volt_waiter_status() tells VOLT_OK (granted) or VOLT_CLOSED.
 *
 * WAITER LIFETIME
 *   A volt_waiter is caller-allocated (stack, struct member, or heap with
 *   volt_waiter_size()/volt_waiter_align()) and initialised once with
 *   volt_waiter_init(), which only writes (fresh, uninitialised memory is the
 *   expected input). It is busy from a volt_sem_acquire() that returned
 *   VOLT_PENDING until a volt_sem_cancel() on it (or a volt_sem_try_cancel()
 *   that returned an outcome), made outside its own wake callback, has returned.
 *   Every PENDING waiter must be ended that way exactly once (after the wake, to
 *   collect the outcome; before it, to give up). While busy, the waiter must not
 *   be moved, copied, freed, re-initialised or reused, and ctx must stay valid
 *   for wake; re-initialising a busy waiter is undefined behaviour that
 *   volt_waiter_init() does not detect (ask volt_waiter_is_busy() first if in
 *   doubt). After the ending call returns, the callback has returned or will
 *   never be called and the library holds no reference to the waiter or ctx:
 *   both may be freed or reused. A waiter whose acquire returned VOLT_OK or an
 *   error was never busy and may be freed or reused at once; an idle waiter is
 *   reused without re-initialising.
 *
 * TIMEOUTS
 *   volt_sem_acquire_blocking()'s timeout_ns is relative (a duration from the
 *   call, not a deadline) and measured on the monotonic clock (CLOCK_MONOTONIC):
 *   wall-clock changes do not affect it.
 *
 * FORK
 *   A child created by fork() gets a copy of each semaphore, not a share of it.
 *   In the child, every request that was queued at the fork (by any thread) is
 *   closed without its callback being called (it belongs to a thread of the
 *   parent): volt_waiter_status() says VOLT_CLOSED and volt_sem_cancel() returns
 *   VOLT_CLOSED; the permits granted to it come back to the counter. A request
 *   whose grant (or close) came before the fork but whose wake callback had
 *   not returned (it was running, or still to run, on another thread of the
 *   parent) is never called back in the child either: volt_waiter_status()
 *   says its outcome and volt_sem_cancel() (or volt_sem_try_cancel()) returns
 *   it at once: VOLT_OK (the child's copy holds the permits), VOLT_CLOSED, or
 *   VOLT_IDLE if the callback had collected the outcome from inside. (After a
 *   fork made from inside a wake callback, that thread goes on delivering its
 *   callbacks in the child and a cancel waits for them, as usual; do not
 *   cancel the requests of the parent's other threads there: it would wait
 *   for ever.) Permits held at the fork stay held; the semaphore stays open.
 *   A fork at the instant another thread is inside a semaphore operation (a
 *   few pointer writes under its internal lock) leaves that lock held in the
 *   child, as with any mutex: POSIX allows only async-signal-safe calls in
 *   such a child until exec().
 *
 * SHARED SEMAPHORES (one limit for every process of the machine; Linux)
 *   volt_sem_open(name, permits, flags, &sem) returns an ordinary handle on the
 *   named semaphore /dev/shm/volt-sem.<name>, shared by every process that opens
 *   the name: strict FIFO across processes (weights included), direct hand-off,
 *   close for everyone (volt_sem_open_with(name, permits, &opts, &sem) is the
 *   same with a volt_open_options: the flags and the label volt_sem_inspect
 *   shows for this process). Every function above works on it unchanged; what
 *   differs:
 *   - Each process returns its own permits: volt_sem_release(n) with n above what
 *     this process holds (through any of its handles and threads) is
 *     VOLT_NOT_HELD and releases nothing, whatever the total (after a shrink,
 *     see volt_sem_set_total(), a process may hold more than the total and
 *     releases it as usual). The total is set at creation
 *     (volt_sem_total_permits()); an acquire of n above it is
 *     VOLT_INVALID_ARGUMENT.
 *   - Crash safety: when a process dies (even by SIGKILL, even inside an
 *     operation), the permits it held and its queued requests go back to the
 *     others, within 200 ms if anyone is queued (else at the next operation
 *     that has to wait). Freeing a process's last handle on a name returns
 *     whatever that process still holds, as a death would: end every PENDING
 *     waiter first (a busy waiter keeps its own reference, so this only
 *     happens after its volt_sem_cancel()).
 *   - Wake callbacks of a shared semaphore run on one "doorbell" thread per
 *     process and name, never on the releasing thread (the releaser may be
 *     another process); the rules of WAKE CALLBACKS hold there too. A blocking
 *     acquire inside such a callback is VOLT_IN_CALLBACK.
 *   - volt_waiter_status() of a waiter queued on a shared semaphore may lag
 *     its grant (or the close): the releasing process (any process) decides
 *     the grant in the segment, in FIFO order, under the segment's lock; the
 *     status lives in this process's memory and changes when this process's
 *     doorbell thread collects the grant, usually microseconds later, longer
 *     while that thread is still calling earlier callbacks or is not
 *     scheduled. A blocking acquire is woken directly instead, so it may
 *     return VOLT_OK while an earlier waiter of the same process still reads
 *     VOLT_PENDING: that waiter's grant came first all the same. The callback
 *     and volt_sem_cancel() (which collects a grant that has arrived, even
 *     one the doorbell thread has not seen yet) give the outcome; do not
 *     infer the order of grants from status reads.
 *   - Capacities: volt_sem_max_waiters() requests queued across all processes
 *     (one more is VOLT_QUEUE_FULL, not queued: FIFO intact), 128 processes
 *     attached (VOLT_PROCESS_TABLE_FULL), volt_sem_max_shared_permits().
 *   - fork(): a handle opened before fork() fails in the child with
 *     VOLT_FORKED (it would act on the parent's record); the child opens the
 *     name again. volt_sem_free() of such a handle in the child is fine. A
 *     waiter that was PENDING on it at the fork ends in the child at once:
 *     volt_sem_cancel() (or volt_sem_try_cancel()) returns VOLT_CLOSED, the
 *     child holding nothing, even when the parent's doorbell thread was
 *     delivering its grant (its callback is never called in the child; the
 *     grant is the parent's), and VOLT_IDLE if that callback had collected
 *     it. (After a fork made from inside a wake callback, as under FORK;
 *     the child's one thread is then its copy of the doorbell thread: once
 *     it has delivered that batch it ends, and the child with it, as by
 *     exit(0), unless a callback exec()ed or _exit()ed first. It never
 *     delivers a later grant there: those are the parent's.)
 *   - volt_sem_unlink(name) removes the name only; attached processes keep the
 *     semaphore, the next open of the name creates a new one.
 *   - Other platforms: volt_sem_open() returns VOLT_UNSUPPORTED.
 *   - A process stopped (SIGSTOP, a debugger) inside the segment's lock (held
 *     for microseconds by a running process) stalls the calls that need the
 *     lock until it continues or dies, except volt_sem_try_acquire() (waits
 *     at most 10 ms, then VOLT_WOULD_BLOCK) and volt_sem_acquire_blocking()
 *     with a timeout (VOLT_TIMED_OUT on time); a process killed there is
 *     repaired by the next one that takes the lock.
 *   - Trust boundary: every process that can open the segment file for
 *     writing can rewrite the semaphore's state (steal or invent permits,
 *     stall or break every process attached). Who can: the same user always;
 *     the owner's group too if it was created with VOLT_OPEN_SHARE_GROUP
 *     (mode 0660); every local user with VOLT_OPEN_SHARE_ALL (mode 0666; the
 *     umask does not apply); root. So volt_sem_open() attaches only to a
 *     segment owned by the caller's effective uid: one another user owns
 *     (shared with you on purpose, or pre-created under the name to take it
 *     over) is VOLT_PERMISSION unless the caller passes
 *     VOLT_OPEN_ACCEPT_FOREIGN_OWNER, which says "I trust that user".
 *     What such a writer can do, and what the library still guarantees: a
 *     value it wrote that the library never writes (an index out of range,
 *     counts that do not add up) is VOLT_CORRUPT from the call that reads it,
 *     never a crash; timed calls stay timed and volt_sem_open() waits at most
 *     5 s for the segment's locks (then VOLT_TIMED_OUT). Inherent to a
 *     writable mapping, and not caught: truncating the file (every attached
 *     process dies of SIGBUS at its next access), holding the segment's lock
 *     (untimed calls wait) or a process record's liveness lock (its permits
 *     never come back), rewriting the counts within their ranges.
 *   A name is opened with another total (VOLT_MISMATCH), by another layout
 *   version (VOLT_VERSION_MISMATCH), or is a foreign file or a directory
 *   (VOLT_NOT_A_SEGMENT):
 *   the open fails and changes nothing.
 *
 * REDIS SEMAPHORES (one limit across machines)
 *   volt_sem_connect(url, name, permits, opts, &sem) returns an ordinary handle
 *   on the semaphore `name` stored in the Redis at `url` (standalone or, with
 *   VOLT_CONNECT_CLUSTER, a Cluster), shared by every client on every host that
 *   connects to the same Redis, key prefix and name: strict FIFO across all of
 *   them (weights included: a queued acquire of 3 is never overtaken by a later
 *   acquire of 1 from any client), direct hand-off, close for everyone. Every
 *   function above works on it; what differs:
 *   - Network round trips never run on the calling thread: each connected
 *     handle (and its clones) has a door thread that makes them, one at a
 *     time, in the order the handle's threads made the calls. So
 *     volt_sem_acquire() (queueing), volt_sem_release() and volt_sem_cancel()
 *     of a queued waiter return at once, as on the other backends, and are
 *     safe on an event-loop thread: an acquire's outcome (granted, closed, or
 *     an error such as VOLT_CONNECTION_FAILED) comes through its wake
 *     callback, even when the permits are free (volt_sem_acquire() never
 *     returns VOLT_OK at once on a Redis semaphore); a
 *     release is applied in Redis right after (another client sees it one
 *     round trip later; this handle's later calls come after it). The calls
 *     that must answer wait for their round trip, each at most the command
 *     timeout (default 5 s), then VOLT_CONNECTION_FAILED (when the door
 *     thread is idle, such a call makes its round trip, and those of the
 *     handle's requests queued before it, on the calling thread, with every
 *     signal blocked meanwhile: a signal that arrives then is handled when
 *     the round trip ends):
 *     volt_sem_connect() (the connect timeout), volt_sem_try_acquire(),
 *     volt_sem_acquire_blocking() (plus the wait), volt_sem_close(),
 *     volt_sem_available_permits(), volt_sem_census(). volt_sem_is_closed(),
 *     volt_sem_total_permits(), volt_sem_held_permits(),
 *     volt_sem_watch_lease(), volt_lease_watch_free() and the waiter calls
 *     make no round trip.
 *   - Threads: each connected handle (and its clones) has two threads, which
 *     hold its two connections: the door (above) and the agent, which renews
 *     the lease and receives the grants. Wake callbacks run on one of them
 *     (the door for a grant its own request or release completed, the agent
 *     for a grant made by another client's release), on a thread of this
 *     process waiting in one of the calls above on the same handle (when it
 *     made the round trips itself), or, when this process finds its session
 *     lost, on the thread that found it. Releases on other
 *     handles or hosts never run them. The rules of WAKE CALLBACKS hold there
 *     too (callbacks never nest; a blocking acquire inside one is
 *     VOLT_IN_CALLBACK). Neither thread keeps the process alive.
 *   - Accounting: each handle returns the permits its session holds:
 *     volt_sem_release(n) above volt_sem_held_permits() is VOLT_NOT_HELD and
 *     releases nothing, whatever the total (a release is bounded by what the
 *     session holds, which may exceed the total after a shrink). The total is
 *     set at connect (volt_sem_total_permits()); an acquire of n above it is
 *     VOLT_INVALID_ARGUMENT. volt_sem_free() of the last reference ends the
 *     session: whatever it still holds goes back right away, not at lease
 *     expiry (from the agent thread if it is in the middle of a command); so
 *     does the process's normal exit.
 *   - Sessions and leases: a handle's session has a lease (default 10 s,
 *     volt_connect_options.lease_ms) renewed by the agent every third of it,
 *     with Redis's clock. A client that stops renewing (killed, paused, cut
 *     off) loses its permits and queue places: they reach the next waiter
 *     within its lease (a waiting client reaps as soon as it ends, whatever
 *     its own lease). The client itself learns it as
 *     VOLT_LEASE_EXPIRED: its waiters fail with it (their callbacks run),
 *     volt_sem_release() of the lost permits returns it and releases nothing
 *     (nothing is ever released twice), and volt_sem_watch_lease() calls its
 *     callback. Its next acquire starts a new session.
 *   - Redis restarted empty or flushed: the handle detects it (an incarnation
 *     id in the semaphore's keys) and fails holders and waiters with
 *     VOLT_STATE_LOST instead of over-granting; every later call returns it.
 *     Free the handle and connect again.
 *   - Guarantees: while leases hold and Redis keeps its acknowledged writes, at
 *     most `permits` are held at once and grants are strictly FIFO across every
 *     client. Not guaranteed: a holder paused past its lease (a stop-the-world
 *     pause, SIGSTOP, a partition) still believes it holds its permits when it
 *     runs again, although they were given to someone else meanwhile; and a
 *     failover to a replica that missed the last writes may grant permits again.
 *     Fencing tokens are the defence against the first. Against the second,
 *     Redis WAIT (volt_connect_options.min_replicas_acked) narrows the
 *     window: a grant then waits until replicas acknowledged it;
 *     it is not consensus (a failover may still pick a replica that missed
 *     it).
 *   - fork(): a handle connected before fork() fails in the child with
 *     VOLT_FORKED (it would send the parent's commands on the parent's
 *     connections, in the parent's session); volt_sem_free() of it in the
 *     child does nothing, and neither does its exit() (the exit handler
 *     that ends the sessions still open skips those of another process).
 *     Connect again in the child, after fork(). After a fork made from
 *     inside a wake callback on the handle's door or agent thread, the
 *     child's one thread is its copy of that thread: once it has delivered
 *     that batch it ends, and the child with it, as by exit(0), unless a
 *     callback exec()ed or _exit()ed first; it never uses the parent's
 *     connections nor calls back the parent's later grants there. A wake
 *     callback may also run on the thread of a call that ran the handle's
 *     queued jobs itself (volt_sem_try_acquire(), volt_sem_census(),
 *     volt_sem_acquire_blocking() and the others that wait for Redis do,
 *     when no thread runs them); after a fork made from inside it, that
 *     call returns VOLT_FORKED in the child (the callbacks of the same
 *     batch still run there first), takes no lock of the handle (another
 *     thread of the parent may have held one at the fork) and sends
 *     nothing; the child goes on from there.
 *   - Error details (see ERROR DETAILS): e.g. why the connection failed,
 *     which command the ACL refused. The URL (which may hold a password) is
 *     copied during volt_sem_connect(); no message and no output ever shows
 *     it or the password.
 *
 * FENCING TOKENS
 *   Every grant of a Redis semaphore carries a token, strictly increasing with
 *   every grant of that semaphore across all clients (and still increasing
 *   after a failover that lost the last token, as long as the new primary's
 *   clock is not behind: a token is max(last + 1, Redis time in microseconds)).
 *   Get it with volt_sem_try_acquire_fenced(), volt_sem_acquire_blocking_fenced()
 *   (a volt_grant) or volt_waiter_token() after a waiter's VOLT_OK.
 *   Where one holder at a time owns what it writes (a semaphore of 1 permit
 *   used as a lock, or a record only the current holder may change), send the
 *   token with every write; the resource remembers the largest token it has
 *   accepted and rejects smaller ones. Then a holder whose lease expired while
 *   it was paused cannot overwrite the work of the client that got its permits
 *   next: its token is smaller. With several holders at once (permits > 1) a
 *   smaller token is no sign of a stale holder (a concurrent one may simply
 *   write later): there the token identifies and orders the grants, and the
 *   comparison belongs to each exclusively owned record (e.g. a job row that
 *   stores the token of the grant that claimed it).
 *   ffi-c/examples/redis_slots.c shows both. Local and shared semaphores give
 *   token 0 (none needed: their holders cannot outlive their grants
 *   unnoticed).
 *
 * VERSIONS
 *   VOLT_SEM_VERSION_MAJOR/MINOR/PATCH are the version of this header;
 *   volt_sem_version() returns the version of the library linked at run time.
 */

#ifndef VOLT_SEM_H
#define VOLT_SEM_H


/* Generated by cbindgen from ffi-c/src/lib.rs: do not edit. Regenerate with:
 *   VOLT_SEM_BLESS=1 cargo test -p volt-sem-ffi --test header */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/**
 * `volt_sem_open` flag: fail with `VOLT_EXISTS` if the name exists.
 */
#define VOLT_OPEN_CREATE_ONLY 1

/**
 * `volt_sem_open` flag: fail with `VOLT_NOT_FOUND` if the name does not exist.
 */
#define VOLT_OPEN_ATTACH_ONLY 2

/**
 * Where the permission bits of a newly created segment go in `volt_sem_open`'s
 * flags: `flags | (0660 << VOLT_OPEN_MODE_SHIFT)`, or `VOLT_OPEN_MODE(0660)`.
 * 0 there means the default, 0600 (owner only).
 */
#define VOLT_OPEN_MODE_SHIFT 16

/**
 * `volt_sem_open` flag: a new segment is readable and writable by the owner's
 * group too (mode 0660).
 */
#define VOLT_OPEN_SHARE_GROUP (432 << VOLT_OPEN_MODE_SHIFT)

/**
 * `volt_sem_open` flag: a new segment is readable and writable by every user
 * (mode 0666 exactly: the mode is set after creation, so the process umask
 * does not apply). Every local user can then attach (with
 * `VOLT_OPEN_ACCEPT_FOREIGN_OWNER`) and rewrite the segment: see "TRUST
 * BOUNDARY" at the top.
 */
#define VOLT_OPEN_SHARE_ALL (438 << VOLT_OPEN_MODE_SHIFT)

/**
 * `volt_sem_open` flag: attach to an existing segment even if another user
 * owns it. Without it, a segment whose owner is not the caller's effective
 * uid is refused with `VOLT_PERMISSION` (nothing changed): a segment another
 * user made (or pre-created under the name, "squatting") is only as
 * trustworthy as that user, who can rewrite its state at will. Set it only
 * for a name another user shares with you on purpose (`VOLT_OPEN_SHARE_GROUP`,
 * `VOLT_OPEN_SHARE_ALL`). Ignored when this call creates the segment.
 */
#define VOLT_OPEN_ACCEPT_FOREIGN_OWNER 4

/**
 * `volt_sem_open` flag: when the name exists with another total, change
 * its total to `permits` (as `volt_sem_set_total` does, under the lock of the
 * attach) instead of failing with `VOLT_MISMATCH`. Meant for a rolling deploy
 * that changes the total (the new processes open with the new total and this
 * flag; nobody unlinks the name). Two processes that open with different
 * totals and this flag: the last one wins. Ignored when this call creates the
 * segment.
 */
#define VOLT_OPEN_RESIZE 8

/**
 * `volt_connect_options.flags`: the URL is one or more seed nodes of a Redis
 * Cluster, separated by commas (`"redis://h1:7000,redis://h2:7001"`).
 */
#define VOLT_CONNECT_CLUSTER 1

/**
 * `volt_connect_options.flags`: when the semaphore exists with another
 * total, change its total to `permits` (as `volt_sem_set_total` does, in the
 * same script as the connect) instead of failing with `VOLT_MISMATCH`. Meant
 * for a rolling deploy that changes the total. Two clients that connect with
 * different totals and this flag: the last one wins.
 */
#define VOLT_CONNECT_RESIZE 2

/**
 * `volt_connect_options.flags`: connect only to a semaphore that exists:
 * if none has this name (under this key prefix), `volt_sem_connect` fails
 * with `VOLT_NOT_FOUND` and writes nothing, instead of creating it (checked
 * in the same script that would create it). The Redis counterpart of
 * `VOLT_OPEN_ATTACH_ONLY`. Ignored by `volt_sem_delete`.
 */
#define VOLT_CONNECT_ATTACH_ONLY 4

/**
 * Size in bytes of `volt_waiter`.
 */
#define VOLT_WAITER_SIZE 512

/**
 * Alignment in bytes of `volt_waiter`.
 */
#define VOLT_WAITER_ALIGN 8

/**
 * Size of the `label` arrays of `volt_holder` and `volt_queued_waiter`: the
 * longest label (128 bytes) and its NUL.
 */
#define VOLT_LABEL_CAP 129

/**
 * Size of the `host` arrays: a host name of up to 255 bytes and its NUL
 * (longer ones are cut).
 */
#define VOLT_HOST_CAP 256

/**
 * How many buckets `volt_stats.wait_buckets` has: bucket `i` (for `i <
 * VOLT_WAIT_BUCKETS - 1`) counts the grants that waited more than bucket
 * `i - 1`'s bound and at most 2^i microseconds (1 µs, 2 µs, 4 µs, ...
 * 2^26 µs, about 67 s); the last one counts every longer wait. Not
 * cumulative. Grants taken at once are in bucket 0.
 */
#define VOLT_WAIT_BUCKETS 28

/**
 * Major version of the headers this program was compiled with; compare with
 * `volt_sem_version()` for the library it runs with.
 */
#define VOLT_SEM_VERSION_MAJOR 0

/**
 * Minor version of the headers this program was compiled with.
 */
#define VOLT_SEM_VERSION_MINOR 1

/**
 * Patch version of the headers this program was compiled with.
 */
#define VOLT_SEM_VERSION_PATCH 0

/**
 * Result codes. A fixed-width integer (`int32_t`) so that every language
 * binding sees the same type; values are stable.
 */
enum volt_status
#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L
  : int32_t
#endif // defined(__cplusplus) || __STDC_VERSION__ >= 202311L
 {
  /**
   * Success; for an acquire: the permits were taken (READY); for
   * `volt_sem_cancel`/`volt_waiter_status`: the full grant arrived and the
   * caller owns the requested permits.
   */
  VOLT_OK = 0,
  /**
   * The waiter was queued; its wake callback will be called once.
   */
  VOLT_PENDING = 1,
  /**
   * Not enough permits right now (or earlier requests are queued).
   */
  VOLT_WOULD_BLOCK = 2,
  /**
   * The semaphore is closed (or was closed while the waiter was queued; the
   * waiter holds no permits).
   */
  VOLT_CLOSED = 3,
  /**
   * `volt_sem_acquire_blocking` gave up; any partial grant was handed on.
   */
  VOLT_TIMED_OUT = 4,
  /**
   * `volt_sem_cancel` removed a queued waiter before its grant was complete;
   * the partial grant (possibly 0) was handed on to the next waiters.
   */
  VOLT_CANCELLED = 5,
  /**
   * The waiter is not queued and holds no outcome: never used, its acquire
   * returned at once, or its outcome was already collected.
   */
  VOLT_IDLE = 6,
  /**
   * A NULL pointer, `n == 0`, `n > volt_max_permits()`, an uninitialised or
   * misaligned waiter, a waiter that is still busy, or a waiter cancelled on a
   * semaphore it is not queued on. Nothing was changed.
   * `volt_last_error_message` names the call and the argument at fault.
   */
  VOLT_INVALID_ARGUMENT = 7,
  /**
   * A release would raise the available permits above `volt_max_permits()`.
   * Nothing was released.
   */
  VOLT_OVERFLOW = 8,
  /**
   * An internal error (a Rust panic) was caught at the boundary.
   */
  VOLT_PANIC = 9,
  /**
   * `volt_sem_open`/`volt_sem_unlink`: the name is empty, contains '/', is
   * longer than `volt_sem_max_name_len()` bytes, or is not UTF-8.
   */
  VOLT_INVALID_NAME = 10,
  /**
   * No shared semaphore has this name (`VOLT_OPEN_ATTACH_ONLY`, unlink), or
   * no Redis semaphore (`VOLT_CONNECT_ATTACH_ONLY`, `volt_sem_delete`).
   */
  VOLT_NOT_FOUND = 11,
  /**
   * `VOLT_OPEN_CREATE_ONLY`: a shared semaphore with this name exists.
   */
  VOLT_EXISTS = 12,
  /**
   * The OS refused access to the shared segment (its mode), or another
   * user owns it and `VOLT_OPEN_ACCEPT_FOREIGN_OWNER` was not given.
   */
  VOLT_PERMISSION = 13,
  /**
   * The name exists with another total of permits; nothing was changed
   * (`VOLT_OPEN_RESIZE` / `VOLT_CONNECT_RESIZE` change the total instead).
   */
  VOLT_MISMATCH = 14,
  /**
   * The semaphore was made by another release of the library: a shared
   * segment of another layout version, or a Redis semaphore whose keys
   * have another schema version (`volt_sem_open`; `volt_sem_connect`,
   * `volt_sem_delete`); nothing was changed.
   */
  VOLT_VERSION_MISMATCH = 15,
  /**
   * The file under the name is not a volt-sem segment (foreign or
   * truncated, or a directory).
   */
  VOLT_NOT_A_SEGMENT = 16,
  /**
   * Every waiter slot of the shared segment is taken (`volt_sem_max_waiters()`
   * requests queued across all processes); the request was not queued.
   */
  VOLT_QUEUE_FULL = 17,
  /**
   * Every process record of the shared segment is taken.
   */
  VOLT_PROCESS_TABLE_FULL = 18,
  /**
   * A shared semaphore's release of more permits than this process holds;
   * nothing was released.
   */
  VOLT_NOT_HELD = 19,
  /**
   * A blocking acquire of a shared semaphore inside one of its wake
   * callbacks (which run on the process's doorbell thread of that name,
   * where it would wait for itself).
   */
  VOLT_IN_CALLBACK = 20,
  /**
   * A shared handle opened (or a Redis handle connected) before `fork()`,
   * used in the child: open the name (connect) again in the child.
   */
  VOLT_FORKED = 21,
  /**
   * Named shared semaphores are not supported on this platform (Linux
   * only); or a Redis-only call (`volt_sem_census`, `volt_sem_watch_lease`)
   * on a local or shared semaphore; or a call for named and Redis
   * semaphores (`volt_sem_set_total`, `volt_sem_reopen`) on a local one.
   */
  VOLT_UNSUPPORTED = 22,
  /**
   * The shared segment is corrupt: it holds a value the library never
   * writes (another process with write access scribbled on it; the call
   * stopped short of it), or its lock is not recoverable.
   */
  VOLT_CORRUPT = 23,
  /**
   * Another OS error from the shared segment (`errno` is not preserved).
   */
  VOLT_OS_ERROR = 24,
  /**
   * `volt_sem_connect`: the URL is malformed, of an unsupported scheme, or
   * not UTF-8. Nothing was contacted.
   */
  VOLT_INVALID_URL = 25,
  /**
   * `volt_sem_connect`: the key prefix is empty, longer than 256 bytes,
   * contains '{', '}' or ':', or is not UTF-8.
   */
  VOLT_INVALID_PREFIX = 26,
  /**
   * `volt_sem_connect`: an option is out of range (a lease below 300 ms),
   * an unknown flag bit, or a non-zero option this library does not know
   * (a `volt_connect_options` from a newer header; see there).
   */
  VOLT_INVALID_OPTION = 27,
  /**
   * Redis refused the credentials of the URL (wrong user or password).
   */
  VOLT_AUTH_FAILED = 28,
  /**
   * Redis could not be reached within the connect timeout, or the
   * connection failed (or a command took longer than the command timeout).
   */
  VOLT_CONNECTION_FAILED = 29,
  /**
   * Redis answered a command with an error (e.g. a script error; a
   * replica is `VOLT_READ_ONLY`, an ACL refusal `VOLT_NO_PERMISSION`, a
   * full Redis `VOLT_REDIS_OUT_OF_MEMORY`).
   */
  VOLT_REDIS_ERROR = 30,
  /**
   * Redis answered with a reply the library never expects (a foreign key
   * in the semaphore's key space, or a bug).
   */
  VOLT_PROTOCOL_ERROR = 31,
  /**
   * This handle's session lease expired (the process was paused, Redis was
   * out of reach, a partition) for longer than the lease: the permits it
   * held went back to the pool and its queued requests were removed.
   * Waiters fail with it; `volt_sem_release` of such permits returns it
   * and releases nothing (they were already reclaimed). The handle goes on
   * with a new session at its next acquire.
   */
  VOLT_LEASE_EXPIRED = 32,
  /**
   * Redis lost the semaphore's state (restarted without persistence,
   * flushed, or its keys deleted): the handle fails its holders and
   * waiters and refuses every later call rather than over-grant. Free it
   * and connect again to start afresh.
   */
  VOLT_STATE_LOST = 33,
  /**
   * Redis over TLS: the handshake failed (the server's certificate is not
   * trusted or not for this host, a `rediss://` URL to a plain port, an
   * unreadable certificate file); `volt_last_error_message` says which.
   */
  VOLT_TLS_FAILED = 34,
  /**
   * Redis with a minimum of replicas to acknowledge each write: fewer
   * acknowledged in time, so the session was given up (what it held went
   * back; its waiters fail with `VOLT_LEASE_EXPIRED`).
   */
  VOLT_NOT_REPLICATED = 35,
  /**
   * Redis (its ACL) refuses this user a command the library needs:
   * `volt_sem_connect` checks the ones it sends itself (`EVALSHA`,
   * `EVAL`, `BLPOP`, `RPUSH`; `PUBLISH` and `WAIT` with
   * `min_replicas_acked`), and a command refused inside a script is
   * reported the same way; `volt_last_error_message` names the command.
   */
  VOLT_NO_PERMISSION = 36,
  /**
   * Redis is a read-only replica (`READONLY`): the URL names a replica, or
   * a failover demoted the server. Through Sentinels the master is found
   * again instead (the connection is replaced).
   */
  VOLT_READ_ONLY = 37,
  /**
   * `volt_sem_delete`: the Redis semaphore has live sessions (clients that
   * hold permits, wait, or are connected); nothing was deleted.
   */
  VOLT_IN_USE = 38,
  /**
   * `volt_sem_inspect`: the report was written, but the arrays were too
   * small for every holder or waiter: the counts in the report say how
   * many there were; the arrays hold the first ones.
   */
  VOLT_TRUNCATED = 39,
  /**
   * A key in the Redis semaphore's key space holds a value of another type
   * than volt-sem keeps there, or a field of one holds a value volt-sem
   * never writes there (a word or a negative number where a count is kept,
   * `avail` above the total; another program wrote it): the call changed
   * nothing in Redis; `volt_last_error_message` names the key (and the
   * field) when known. Delete that key, or the semaphore, or use another
   * name or prefix.
   */
  VOLT_WRONG_TYPE = 40,
  /**
   * The shared segment was made by a process whose build of the library
   * uses another C library (glibc and musl lock the segment differently
   * and cannot share it); nothing was changed. Use builds for one C
   * library (all glibc, or all musl) for every process of a name.
   */
  VOLT_LIBC_MISMATCH = 41,
  /**
   * Redis reached its `maxmemory` and refused the call's writes (`OOM`;
   * `noeviction` or a `volatile-*` policy): nothing was changed.
   * Transient: retry once memory is freed (a release so refused gave the
   * session up, as any refused release: its permits come back).
   * `volt_last_error_message` has the server's text.
   */
  VOLT_REDIS_OUT_OF_MEMORY = 42,
  /**
   * The handle was disconnected (`volt_sem_disconnect`): its session
   * ended, its queued acquires failed with this status, and every later
   * call on it (on any of its references) fails with it. The semaphore
   * stays open for everyone else: open (connect) it again for a new
   * handle.
   */
  VOLT_DISCONNECTED = 43,
};
#ifndef __cplusplus
#if __STDC_VERSION__ >= 202311L
typedef enum volt_status volt_status;
#else
typedef int32_t volt_status;
#endif // __STDC_VERSION__ >= 202311L
#endif // __cplusplus

/**
 * A lease watch from `volt_sem_watch_lease`. Opaque; freed with
 * `volt_lease_watch_free`.
 */
typedef struct volt_lease_watch volt_lease_watch;

/**
 * A semaphore handle. Opaque; always used through a pointer obtained from
 * `volt_sem_new`, `volt_sem_open`, `volt_sem_connect` or `volt_sem_clone`,
 * and given back with `volt_sem_free`.
 */
typedef struct volt_sem volt_sem;

/**
 * The options of `volt_sem_open_with`: an extensible struct, like
 * `volt_connect_options`. Every field's 0 (or NULL) means its default, so
 *
 * ```c
 * volt_open_options opts = { sizeof opts };
 * opts.flags = VOLT_OPEN_SHARE_GROUP;
 * opts.label = "billing-worker-3";
 * volt_status s = volt_sem_open_with("gpu", 4, &opts, &sem);
 * ```
 *
 * is the whole setup (`volt_open_options_init(&opts, sizeof opts)` does the
 * same). Strings are read (copied) during the call only.
 *
 * ABI: as for `volt_connect_options`: fields are only ever appended, each
 * with 0 meaning "default"; `struct_size` is the caller's `sizeof`; a
 * larger one than this library knows is accepted only if the bytes it does
 * not know are 0, else `VOLT_INVALID_OPTION`.
 */
typedef struct volt_open_options {
  /**
   * `sizeof(volt_open_options)` as the caller compiled it.
   */
  size_t struct_size;
  /**
   * `volt_sem_open`'s flags (`VOLT_OPEN_*`, a mode); default 0: create or
   * attach, mode 0600. Bits above 31 are `VOLT_INVALID_ARGUMENT`, as unknown
   * flags are.
   */
  uint64_t flags;
  /**
   * The label `volt_sem_inspect` shows for this process's holds and
   * queued requests (to every process that inspects the semaphore): 1 to
   * 128 bytes of printable ASCII without spaces. NULL: `"<hostname>:<pid>"`.
   * One label per process and name: while the process has the name open,
   * a further open of it keeps the first handle's label (this one is still
   * checked). Invalid: `VOLT_INVALID_ARGUMENT`, nothing created.
   */
  const char *label;
} volt_open_options;

/**
 * The options of `volt_sem_connect`: an extensible struct. Fill it with
 * `volt_connect_options_init(&opts, sizeof opts)`, then change the fields
 * you need:
 *
 * ```c
 * volt_connect_options opts;
 * volt_connect_options_init(&opts, sizeof opts);
 * opts.lease_ms = 3000;
 * opts.key_prefix = "tenant-a";
 * volt_status s = volt_sem_connect("redis://127.0.0.1:6379", "db-pool", 50, &opts, &sem);
 * ```
 *
 * Every field's 0 (or NULL) means its default, so `volt_connect_options opts =
 * { sizeof opts };` is valid too. Strings are read (copied) during the call
 * only: the caller keeps them.
 *
 * ABI: fields are only ever appended, each with 0 meaning "default", and
 * `struct_size` says how many bytes the caller's struct has. A program built
 * against an older header passes a smaller `struct_size`: the newer fields
 * get their defaults. A program built against a newer header and run with
 * an older library passes a larger one: accepted if every byte the library
 * does not know is 0 (options left at their defaults), else
 * `VOLT_INVALID_OPTION` (the program asked for an option this library
 * cannot honour). Sentinel needs no option: its URL names the master
 * (`redis+sentinel://host:port[,host:port]/master`).
 */
typedef struct volt_connect_options {
  /**
   * `sizeof(volt_connect_options)` as the caller compiled it (set by
   * `volt_connect_options_init`).
   */
  size_t struct_size;
  /**
   * The session lease in milliseconds: a client not heard of for that long
   * (crashed, paused, partitioned) loses its permits and queue places.
   * At least 300; default (0) 10000. The heartbeat renews it every third.
   */
  uint64_t lease_ms;
  /**
   * How long `volt_sem_connect` (and a reconnect) may take, in
   * milliseconds; default (0) 5000.
   */
  uint64_t connect_timeout_ms;
  /**
   * How long one command (one script, one round trip) may take before the
   * connection counts as failed, in milliseconds; default (0) 5000. Bounds
   * how long every call that talks to Redis blocks when Redis is out of
   * reach.
   */
  uint64_t command_timeout_ms;
  /**
   * The key prefix (several tenants on one Redis): 1 to 256 bytes of
   * UTF-8 without '{', '}' or ':' (it ends the prefix in the keys, so
   * two prefixes never share one). NULL: "volt-sem". Keys are
   * `{<prefix>:<name>}:...`.
   */
  const char *key_prefix;
  /**
   * `VOLT_CONNECT_*` bits; default 0.
   */
  uint64_t flags;
  /**
   * For `rediss://` (TLS): a PEM file of the CA certificate(s) to trust
   * instead of the public roots. NULL: the public roots. Copied during the
   * call. (Appended in version 2 of the struct, like every field below.)
   */
  const char *tls_ca_file;
  /**
   * For `rediss://`: a client certificate and its private key (PEM files),
   * for servers that require one; both or neither. Copied during the call.
   */
  const char *tls_client_cert_file;
  /**
   * The key of `tls_client_cert_file`.
   */
  const char *tls_client_key_file;
  /**
   * Every write waits (Redis `WAIT`) until this many replicas acknowledged
   * it, for up to `min_replicas_timeout_ms`; if fewer did, the call fails
   * with `VOLT_NOT_REPLICATED` and the session is given up (what it held
   * goes back). Narrows the window of a failover that loses the last
   * writes; it is not consensus. Default (0): no waiting.
   */
  uint64_t min_replicas_acked;
  /**
   * The `WAIT` timeout in milliseconds: positive and below a third of the
   * lease; default (0) 100.
   */
  uint64_t min_replicas_timeout_ms;
  /**
   * The label `volt_sem_inspect` shows for this handle's holds and queued
   * requests (on every host): 1 to 128 bytes of printable ASCII without
   * spaces, such as `"billing-worker-3"`. NULL: `"<hostname>:<pid>"`. An
   * invalid one is `VOLT_INVALID_ARGUMENT` (with `volt_last_error_message`
   * saying why), before any connection is made. Copied during the call.
   * (Appended in version 3 of the struct.)
   */
  const char *label;
} volt_connect_options;

/**
 * The permit accounting of a Redis semaphore, read in one script (for
 * diagnostics and tests): `available + held + partial == total + debt` at
 * all times. `debt` is 0 except after `volt_sem_set_total` cut the total
 * below what was held or partly granted: the permits that come back pay it
 * first, before any becomes available.
 */
typedef struct volt_census {
  /**
   * The total number of permits.
   */
  uint64_t total;
  /**
   * Permits free now.
   */
  uint64_t available;
  /**
   * Permits held by live sessions (every client), completed grants included.
   */
  uint64_t held;
  /**
   * Permits collected so far by queued requests (partial grants).
   */
  uint64_t partial;
  /**
   * Requests queued, from every client.
   */
  uint64_t queued;
  /**
   * Live sessions (clients holding or waiting, or connected).
   */
  uint64_t sessions;
  /**
   * The last fencing token issued.
   */
  uint64_t last_token;
  /**
   * Permits a shrink of the total (`volt_sem_set_total`) still waits
   * for; while it is not 0, `available` is 0.
   */
  uint64_t debt;
  /**
   * Whether the semaphore is closed.
   */
  bool closed;
} volt_census;

/**
 * A caller-allocated waiter: the queue node of one waiting acquire. Opaque:
 * initialise it with `volt_waiter_init` before first use; never copy or move it
 * while it is busy (from a PENDING `volt_sem_acquire` until the owner's
 * `volt_sem_cancel` returned). An idle waiter needs no destructor: just free it.
 */
typedef struct volt_waiter {
  uint64_t _opaque[64];
} volt_waiter;

/**
 * The wake callback: `wake(ctx)` is called at most once per PENDING acquire.
 * See "Wake callbacks" at the top of this header. It must return normally: a
 * C++ exception thrown out of it aborts the process, and `longjmp` out of it
 * is undefined behaviour.
 */
typedef void (*volt_wake_fn)(void *ctx);

/**
 * What a `_fenced` acquire returns besides its status: the grant's fencing
 * token and the session that holds it (both 0 for a local or shared
 * semaphore, which need none).
 */
typedef struct volt_grant {
  /**
   * The fencing token: strictly increasing with every grant of the Redis
   * semaphore, across every client. Pass it to what the permits guard, so
   * that a holder whose lease expired is rejected there (see "FENCING
   * TOKENS" at the top for where a "larger than the last" check is
   * sound). 0: no token.
   */
  uint64_t token;
  /**
   * The session of the handle that holds the permits, for
   * `volt_sem_watch_lease`. 0: none.
   */
  uint64_t session;
} volt_grant;

/**
 * The semaphore as a whole, as `volt_sem_inspect` saw it.
 */
typedef struct volt_inspection {
  /**
   * The number of permits the semaphore has (for a local one, see
   * `volt_sem_inspect`).
   */
  size_t total;
  /**
   * Permits free now.
   */
  size_t available;
  /**
   * Whether the semaphore is closed.
   */
  bool closed;
  /**
   * How many holders there are (the array holds the first
   * `min(holders, holders_cap)`).
   */
  size_t holders;
  /**
   * How many waiters are queued (the array holds the first
   * `min(waiters, waiters_cap)`, in queue order).
   */
  size_t waiters;
} volt_inspection;

/**
 * A process (or Redis session) holding permits.
 */
typedef struct volt_holder {
  /**
   * The label of the holder's handle, NUL-terminated.
   */
  char label[VOLT_LABEL_CAP];
  /**
   * The holder's host name, NUL-terminated.
   */
  char host[VOLT_HOST_CAP];
  /**
   * The holder's process id.
   */
  uint32_t pid;
  /**
   * Permits held.
   */
  size_t permits;
  /**
   * Nanoseconds since the holder's oldest grant still held; -1 where the
   * backend does not time grants (a local semaphore).
   */
  int64_t held_for_ns;
  /**
   * Redis: nanoseconds left of the holder's lease, by the server's clock;
   * -1 on the other backends.
   */
  int64_t lease_remaining_ns;
  /**
   * Redis: the fencing token of the holder's latest grant; 0 on the other
   * backends (a Redis grant's token is never 0).
   */
  uint64_t token;
} volt_holder;

/**
 * A queued request.
 */
typedef struct volt_queued_waiter {
  /**
   * The label of the handle that queued it, NUL-terminated.
   */
  char label[VOLT_LABEL_CAP];
  /**
   * Its host name, NUL-terminated.
   */
  char host[VOLT_HOST_CAP];
  /**
   * Its process id.
   */
  uint32_t pid;
  /**
   * Permits requested.
   */
  size_t permits;
  /**
   * Permits granted to it so far (a partial grant).
   */
  size_t granted;
  /**
   * Nanoseconds since it was queued.
   */
  uint64_t waiting_for_ns;
  /**
   * Its place in the queue: 0 is the next to be served (equal to its index
   * in the array).
   */
  size_t position;
} volt_queued_waiter;

/**
 * This handle's metrics, as `volt_sem_stats` saw them.
 *
 * Counters count this handle's requests since it was made (a named
 * semaphore's: this process's, shared by its handles of that name; a Redis
 * one's: the handle's session). Gauges are read at the call. Durations are
 * nanoseconds.
 *
 * ABI: the caller allocates this struct and sets `struct_size` to
 * `sizeof(volt_stats)` before the call (`volt_stats st = { .struct_size = sizeof st };`).
 * Fields are only ever appended. The library fills the fields that both
 * its `volt_stats` and the caller's have, zeroes the caller's bytes beyond
 * its own, and sets `struct_size` to the number of bytes it filled. So a
 * program built against an older header (a smaller struct) gets its fields
 * and nothing is written past them; a program built against a newer header
 * and run with an older library sees the fields that library does not know
 * as 0 and can tell them apart by `struct_size` (a field is filled if
 * `offsetof(volt_stats, field) + sizeof field <= struct_size`). A leading
 * size rather than "check the version and trust `sizeof`": the struct is
 * written by the library, so a size mismatch in either direction would
 * otherwise be a write past the caller's memory or fields read unset; the
 * size makes both safe without a version check, the same rule as
 * `volt_connect_options` and `volt_open_options`.
 */
typedef struct volt_stats {
  /**
   * In: `sizeof(volt_stats)` as the caller compiled it. Out: the bytes
   * the library filled (`min` of the caller's size and its own).
   */
  size_t struct_size;
  /**
   * Requests granted (each acquire of `n` permits that got them counts 1).
   */
  uint64_t grants;
  /**
   * Permits those grants carried (the sum of their `n`).
   */
  uint64_t permits_granted;
  /**
   * Requests that gave up at their timeout (also in `cancels` when they
   * were queued).
   */
  uint64_t timeouts;
  /**
   * Queued requests that left without their permits: cancelled, freed,
   * timed out. A close that fails queued requests is not a cancel.
   */
  uint64_t cancels;
  /**
   * Redis: how often the server expired this handle's session while it
   * held or waited; 0 on the other backends.
   */
  uint64_t lease_losses;
  /**
   * Crashed holders this handle reclaimed (a named semaphore's dead
   * processes, a Redis semaphore's expired sessions); 0 for a local one.
   */
  uint64_t reclaims_seen;
  /**
   * Gauge: permits available now (Redis: as last seen in a reply).
   */
  size_t available;
  /**
   * Gauge: permits held through this handle now.
   */
  size_t held;
  /**
   * Gauge: this handle's requests waiting now (partial grants are
   * neither held nor available).
   */
  size_t queued;
  /**
   * Whether this handle records: `false` means the counters and the
   * histogram are 0 because nothing was recorded, not because nothing
   * happened.
   */
  bool recording;
  /**
   * Grants recorded in the histogram (every grant, those taken at once
   * too).
   */
  uint64_t wait_count;
  /**
   * Total nanoseconds those grants waited.
   */
  uint64_t wait_sum_ns;
  /**
   * The longest wait, in nanoseconds.
   */
  uint64_t wait_max_ns;
  /**
   * The median wait: the upper bound of its bucket, capped at
   * `wait_max_ns` (an over-estimate by at most a factor of 2); 0 when
   * nothing was recorded.
   */
  uint64_t wait_p50_ns;
  /**
   * The 99th percentile wait, as `wait_p50_ns`.
   */
  uint64_t wait_p99_ns;
  /**
   * Grants per wait bucket (see `VOLT_WAIT_BUCKETS`), not cumulative.
   */
  uint64_t wait_buckets[VOLT_WAIT_BUCKETS];
} volt_stats;

/**
 * The lease-loss callback: `lost(ctx, why)`, `why` being
 * `VOLT_LEASE_EXPIRED` or `VOLT_STATE_LOST`. It must return normally (as a
 * wake callback: a C++ exception thrown out of it aborts the process).
 */
typedef void (*volt_lease_lost_fn)(void *ctx, volt_status why);

#ifdef __cplusplus
extern "C" {
#endif // __cplusplus

/**
 * A static, NUL-terminated name for a status ("VOLT_OK", ...), or "unknown".
 */
const char *volt_status_str(int32_t status);

/**
 * Copies the message of the last call on this thread into `buf`,
 * NUL-terminated and truncated to `len` bytes. Every failure the semaphore
 * or Redis reports has one, the error's own text: which command the ACL
 * refused (`VOLT_NO_PERMISSION`), which key holds a foreign value
 * (`VOLT_WRONG_TYPE`), the server's text for the other Redis errors, why
 * the connection or the TLS handshake failed, which option was refused,
 * the rule an invalid name or total broke, the two versions or C libraries
 * of a mismatch (for `VOLT_WOULD_BLOCK` or `VOLT_TIMED_OUT`, just what the
 * status says). A call that refused its arguments before reaching the
 * semaphore names itself and the argument at fault: "volt_sem_acquire:
 * `wake` is NULL", "volt_sem_try_acquire: `n` is 0: ...", a bad
 * `struct_size`, a waiter in the wrong state, a local handle for a
 * Redis-only call. It is "" after `VOLT_OK` and the outcomes that are no
 * failure (`VOLT_PENDING`, `VOLT_IDLE`, `VOLT_CANCELLED`, `VOLT_TRUNCATED`,
 * and the states `volt_waiter_status` reports), and in a wake callback
 * until the callback's own calls; in a lease-loss callback it is the
 * loss's text (that of `why`) until then. The text is written when this
 * function reads it: asking for the length, then for the text, gives the
 * same message. Every other `volt_*` call forgets the message when it
 * starts, so it always belongs to the call made just before, on the same
 * thread (the calls a wake callback makes inside another call, such as a
 * `volt_sem_release` that runs it, leave their messages to the callback:
 * that call's message is its own). Messages never contain the URL or a
 * password.
 *
 * Returns the message's length in bytes (without the NUL), which may exceed
 * `len - 1`: then call again with a larger buffer. `buf` may be NULL when
 * `len` is 0 (to ask for the length).
 *
 * # Safety
 * `buf` is NULL or `len` writable bytes.
 */
size_t volt_last_error_message(char *buf, size_t len);

/**
 * Creates a semaphore with `permits` permits and stores one reference to it in
 * `*out`. Free it with `volt_sem_free`.
 *
 * Returns `VOLT_OK`, or `VOLT_INVALID_ARGUMENT` if `out` is NULL or `permits >
 * volt_max_permits()` (then `*out` is set to NULL when `out` is not NULL).
 *
 * # Safety
 * `out` is NULL or writable.
 */
volt_status volt_sem_new(size_t permits, const struct volt_sem **out);

/**
 * Returns another reference to the same semaphore (the same pointer value),
 * e.g. for another thread or library; each reference is freed with
 * `volt_sem_free`. Returns NULL if `sem` is NULL.
 *
 * # Safety
 * `sem` is NULL or a live handle.
 */
const struct volt_sem *volt_sem_clone(const struct volt_sem *sem);

/**
 * Drops one reference; the semaphore is destroyed with its last reference
 * (busy waiters hold their own). NULL is a no-op. `sem` must not be used after.
 *
 * Before freeing the last reference, settle its queued waiters: cancel
 * them with `volt_sem_cancel` (on this reference) or wait for their wake.
 * A waiter still queued keeps its own reference (only `volt_sem_cancel`,
 * which needs a live handle, gives it back), so the semaphore stays alive
 * and the waiter keeps its place in the queue; once granted, its permits
 * stay held, with no handle left to release them, until the process exits:
 * other processes of a shared semaphore, and every client of a Redis one
 * (whose session the agent keeps renewing), wait for them that long.
 * Freeing does not cancel them, because their wake callbacks would then
 * run inside `volt_sem_free`, in the middle of the caller's teardown, and
 * the waiter's owner would still have to call `volt_sem_cancel` with a
 * handle it no longer has.
 *
 * # Safety
 * `sem` is NULL or a live handle, not used again by this caller.
 */
void volt_sem_free(const struct volt_sem *sem);

/**
 * Takes `n` permits if they are available now and nobody is queued (FIFO: no
 * barging). Never blocks; on a shared semaphore it may wait up to 10 ms for
 * the segment's lock, then returns `VOLT_WOULD_BLOCK` (another process is
 * stopped, e.g. by `SIGSTOP` or a debugger, inside it).
 *
 * Returns `VOLT_OK`, `VOLT_WOULD_BLOCK`, `VOLT_CLOSED` or
 * `VOLT_INVALID_ARGUMENT` (NULL, `n == 0`, `n > volt_max_permits()`, or above
 * a shared semaphore's total); on a shared semaphore also `VOLT_FORKED`,
 * `VOLT_CORRUPT` or `VOLT_OS_ERROR`. On a Redis semaphore (one round trip,
 * in order with the handle's other calls, up to the command timeout; `volt_sem_try_acquire_fenced` also returns the fencing token): `VOLT_CONNECTION_FAILED`, `VOLT_REDIS_ERROR`,
 * `VOLT_PROTOCOL_ERROR`, `VOLT_STATE_LOST`.
 *
 * # Safety
 * `sem` is NULL or a live handle.
 */
volt_status volt_sem_try_acquire(const struct volt_sem *sem,
                                 size_t n);

/**
 * Returns `n` permits: to the oldest waiters first (which may run their wake
 * callbacks on this thread before it returns), the surplus to the counter.
 * Works on a closed semaphore.
 *
 * Returns `VOLT_OK`, `VOLT_OVERFLOW` (the available permits would exceed
 * `volt_max_permits()`; nothing released) or `VOLT_INVALID_ARGUMENT` (NULL,
 * `n == 0`, `n > volt_max_permits()`). On a shared semaphore, a process
 * returns only permits it holds: `VOLT_NOT_HELD` (nothing released) when it
 * holds fewer than `n`; also `VOLT_FORKED`, `VOLT_CORRUPT`, `VOLT_OS_ERROR`.
 * On a Redis semaphore it returns at once (no round trip on this thread:
 * the handle's door thread applies the release in Redis right after, in
 * order with this handle's later calls, and calls back the waiters it
 * completes that were queued through this handle; those of other handles
 * and hosts are called back on their own agent threads):
 * `VOLT_NOT_HELD` when this handle's session holds fewer than `n`;
 * `VOLT_LEASE_EXPIRED` when the permits were lost with an expired session
 * (nothing released: they were reclaimed already); `VOLT_CLOSED` once
 * `volt_end_sessions_on_signals` ended the handle's session; `VOLT_FORKED`,
 * `VOLT_STATE_LOST`. Should Redis
 * then refuse it (or be out of reach), the session is given up: its
 * permits go back when it ends, and `volt_sem_watch_lease` tells its holders.
 *
 * # Safety
 * `sem` is NULL or a live handle.
 */
volt_status volt_sem_release(const struct volt_sem *sem, size_t n);

/**
 * Permits available right now (0 while anyone is queued, and for NULL). On a
 * Redis semaphore: one round trip (a census), up to the command timeout, and
 * 0 when Redis cannot be reached (`volt_sem_census` tells the error).
 *
 * # Safety
 * `sem` is NULL or a live handle.
 */
size_t volt_sem_available_permits(const struct volt_sem *sem);

/**
 * Closes the semaphore: every queued waiter is woken (its status becomes
 * `VOLT_CLOSED`, on this thread, before this returns) and later acquires fail
 * with `VOLT_CLOSED`. Held permits can still be released. Idempotent.
 * A shared semaphore is closed for every process: their waiters' callbacks run
 * on their doorbell threads, shortly after this returns.
 *
 * A Redis semaphore is closed for every client: waiters everywhere fail with
 * `VOLT_CLOSED` (their callbacks run on their agent threads), and a client
 * connecting later finds it closed.
 *
 * Returns `VOLT_OK` or `VOLT_INVALID_ARGUMENT` (NULL); on a shared semaphore
 * also `VOLT_FORKED`, `VOLT_CORRUPT` or `VOLT_OS_ERROR`; on a Redis one (one
 * round trip) `VOLT_CONNECTION_FAILED`, `VOLT_REDIS_ERROR`,
 * `VOLT_PROTOCOL_ERROR`, `VOLT_STATE_LOST`.
 *
 * # Safety
 * `sem` is NULL or a live handle.
 */
volt_status volt_sem_close(const struct volt_sem *sem);

/**
 * Whether `volt_sem_close` was called (false for NULL).
 *
 * # Safety
 * `sem` is NULL or a live handle.
 */
bool volt_sem_is_closed(const struct volt_sem *sem);

/**
 * The largest permit count a semaphore holds and the largest single request.
 */
size_t volt_max_permits(void);

/**
 * The fixed total of a shared or Redis semaphore (from `volt_sem_open`,
 * `volt_sem_connect`; no round trip); 0 for a local one (its releases may add
 * permits: it has no fixed total) and for NULL.
 *
 * # Safety
 * `sem` is NULL or a live handle.
 */
size_t volt_sem_total_permits(const struct volt_sem *sem);

/**
 * Permits held by this handle's current session (and its clones), as the
 * handle counts them: what `volt_sem_release` may return without
 * `VOLT_NOT_HELD`. No round trip. 0 for NULL and for the other backends.
 *
 * # Safety
 * `sem` is NULL or a live handle.
 */
size_t volt_sem_held_permits(const struct volt_sem *sem);

/**
 * Opens the named semaphore `name`, shared by every process of this machine
 * that opens the same name, creating it with `permits` permits in total if it
 * does not exist, and stores one reference to it in `*out`: an ordinary
 * handle, used and freed like one from `volt_sem_new` (every function works on
 * it; `volt_sem_free` of the process's last reference detaches the process,
 * which returns whatever it still holds). See "SHARED SEMAPHORES" at the top.
 *
 * `name`: 1 to `volt_sem_max_name_len()` bytes of UTF-8, without '/'; the
 * segment is `/dev/shm/volt-sem.<name>`. `permits`: 1 to
 * `volt_sem_max_shared_permits()`; an existing name must have the same total
 * unless `VOLT_OPEN_RESIZE` is given (then its total becomes `permits`). `flags`: 0 (create or attach), or `VOLT_OPEN_CREATE_ONLY` or
 * `VOLT_OPEN_ATTACH_ONLY`, plus a mode for a new segment (`VOLT_OPEN_SHARE_GROUP`,
 * `VOLT_OPEN_SHARE_ALL`, or `VOLT_OPEN_MODE(m)`; default 0600, owner only; the
 * owner always keeps read and write; set exactly, the umask does not apply),
 * plus `VOLT_OPEN_ACCEPT_FOREIGN_OWNER` to attach to a segment another user
 * owns (refused with `VOLT_PERMISSION` without it), plus `VOLT_OPEN_RESIZE`.
 *
 * Returns `VOLT_OK`, or (with `*out` set to NULL when `out` is not NULL, and
 * nothing changed):
 * * `VOLT_INVALID_ARGUMENT`: NULL `name` or `out`, `permits` 0 or too large,
 *   unknown flag bits, or both CREATE_ONLY and ATTACH_ONLY;
 * * `VOLT_INVALID_NAME`, `VOLT_NOT_FOUND` (ATTACH_ONLY), `VOLT_EXISTS`
 *   (CREATE_ONLY), `VOLT_PERMISSION` (the mode refuses this user, or another
 *   user owns the segment and `VOLT_OPEN_ACCEPT_FOREIGN_OWNER` is not set),
 *   `VOLT_MISMATCH` (another total, without `VOLT_OPEN_RESIZE`),
 *   `VOLT_VERSION_MISMATCH` (a segment of another layout version: the
 *   message names both), `VOLT_LIBC_MISMATCH` (a segment made by a build
 *   of the library for another C library, glibc or musl: the message names
 *   both), `VOLT_NOT_A_SEGMENT` (a foreign or truncated
 *   file, or a directory at the name),
 *   `VOLT_PROCESS_TABLE_FULL`, `VOLT_TIMED_OUT` (the segment's init lock or
 *   lock stayed held for 5 s: a process stopped inside its open, or one
 *   holding it on purpose), `VOLT_CORRUPT`, `VOLT_UNSUPPORTED` (not Linux),
 *   `VOLT_OS_ERROR` (e.g. `/dev/shm` full).
 *
 * # Safety
 * `name` is NULL or a NUL-terminated string; `out` is NULL or writable.
 */
volt_status volt_sem_open(const char *name,
                          size_t permits,
                          uint32_t flags,
                          const struct volt_sem **out);

/**
 * Fills `opts` with the defaults (flags 0, label NULL) and sets its
 * `struct_size`, which must be `sizeof *opts`.
 *
 * Returns `VOLT_OK`, or `VOLT_INVALID_ARGUMENT` for NULL or a `struct_size`
 * below the first version's size (24 bytes on 64-bit targets) or above 4096
 * (nothing written).
 *
 * # Safety
 * `opts` is NULL or points to `struct_size` writable bytes.
 */
volt_status volt_open_options_init(struct volt_open_options *opts, size_t struct_size);

/**
 * `volt_sem_open` with options: the same semaphore, arguments, results and
 * errors, with the flags in `opts->flags` and the handle's label in
 * `opts->label` (see `volt_open_options`). `opts` NULL: the defaults (as
 * `volt_sem_open(name, permits, 0, out)`).
 *
 * Returns what `volt_sem_open` returns, and `VOLT_INVALID_ARGUMENT` for a
 * bad `opts->struct_size` or an invalid label (`volt_last_error_message`
 * says why), or `VOLT_INVALID_OPTION` for options of a newer header that this
 * library does not know (all with `*out` NULL and nothing created).
 *
 * # Safety
 * `name` is NULL or a NUL-terminated string; `opts` is NULL or a
 * `volt_open_options` of `opts->struct_size` readable bytes whose `label` is
 * NULL or NUL-terminated; `out` is NULL or writable.
 */
volt_status volt_sem_open_with(const char *name,
                               size_t permits,
                               const struct volt_open_options *opts,
                               const struct volt_sem **out);

/**
 * Removes the name of a shared semaphore. Only the name: processes attached
 * keep using the semaphore, and the next `volt_sem_open` of the name creates a
 * new one.
 *
 * Returns `VOLT_OK`, `VOLT_INVALID_ARGUMENT` (NULL), `VOLT_INVALID_NAME`,
 * `VOLT_NOT_FOUND`, `VOLT_PERMISSION`, `VOLT_UNSUPPORTED` or `VOLT_OS_ERROR`.
 *
 * # Safety
 * `name` is NULL or a NUL-terminated string.
 */
volt_status volt_sem_unlink(const char *name);

/**
 * The longest name `volt_sem_open` accepts, in bytes.
 */
size_t volt_sem_max_name_len(void);

/**
 * The largest total of a shared semaphore (and the largest request on one).
 */
size_t volt_sem_max_shared_permits(void);

/**
 * How many requests may be queued on one shared semaphore, across all its
 * processes; one more fails with `VOLT_QUEUE_FULL`.
 */
size_t volt_sem_max_waiters(void);

/**
 * Fills `opts` with the defaults: lease 10000 ms, timeouts 5000 ms, key prefix
 * NULL ("volt-sem"), no flags; `struct_size` is set to `struct_size`, which
 * must be `sizeof *opts` (every byte of it is written: fields this library
 * does not know are zeroed, which is their default).
 *
 * Returns `VOLT_OK`, or `VOLT_INVALID_ARGUMENT` for NULL or a `struct_size`
 * below the first version's size (48 bytes on 64-bit targets) or above 4096
 * (nothing written).
 *
 * # Safety
 * `opts` is NULL or points to `struct_size` writable bytes.
 */
volt_status volt_connect_options_init(struct volt_connect_options *opts, size_t struct_size);

/**
 * Connects to the semaphore `name` stored in the Redis at `url`, with
 * `permits` permits in total, creating it if it does not exist (unless
 * `VOLT_CONNECT_ATTACH_ONLY`), and stores
 * one reference to it in `*out`: an ordinary handle, used and freed like one
 * from `volt_sem_new` (every function works on it). Every client, on every
 * host, that connects to the same Redis, key prefix and name shares the same
 * permits. See "REDIS SEMAPHORES" at the top. Talks to Redis at once: blocks
 * up to the connect timeout (default 5 s) when Redis is out of reach.
 *
 * `url`: `redis://[user:password@]host[:port][/db]`, `rediss://...` (TLS),
 * `redis+sentinel://host:port[,host:port]/master[/db]` or `unix:///path`
 * (several comma-separated seed URLs with `VOLT_CONNECT_CLUSTER`); copied
 * during the call, never kept in the handle nor shown in any output.
 * `name`: 1 to `volt_sem_max_redis_name_len()` bytes of UTF-8, without '{'
 * or '}'. `permits`: 1 to `volt_sem_max_redis_permits()`; an existing
 * semaphore must have been created with the same total. `opts`: NULL for the
 * defaults, or a `volt_connect_options` (see there).
 *
 * Returns `VOLT_OK`, or (with `*out` set to NULL when `out` is not NULL,
 * and nothing changed in Redis):
 * * `VOLT_INVALID_ARGUMENT`: NULL `url`, `name` or `out`; `permits` 0 or
 *   too large; a bad `opts->struct_size`; an invalid `opts->label` (the
 *   message, from `volt_last_error_message`, says why);
 * * `VOLT_INVALID_URL`, `VOLT_INVALID_NAME`, `VOLT_INVALID_PREFIX`,
 *   `VOLT_INVALID_OPTION` (checked before any connection is made);
 * * `VOLT_AUTH_FAILED`, `VOLT_CONNECTION_FAILED` (within the connect
 *   timeout: one deadline for the whole connect), `VOLT_TLS_FAILED`,
 *   `VOLT_REDIS_ERROR`, `VOLT_PROTOCOL_ERROR`;
 * * `VOLT_NO_PERMISSION`: the user may not run a command the library
 *   needs (the message names it); `VOLT_READ_ONLY`: the server is a
 *   replica;
 * * `VOLT_MISMATCH`: the semaphore exists with another total;
 * * `VOLT_NOT_FOUND`: `VOLT_CONNECT_ATTACH_ONLY` and no semaphore has this
 *   name (under this key prefix); nothing was created;
 * * `VOLT_VERSION_MISMATCH`: the semaphore was made by a release of the
 *   library whose keys have another schema version; nothing was written
 *   (`volt_last_error_message` names both versions).
 *
 * # Safety
 * `url` and `name` are NULL or NUL-terminated strings; `opts` is NULL or a
 * `volt_connect_options` as described there; `out` is NULL or writable.
 */
volt_status volt_sem_connect(const char *url,
                             const char *name,
                             size_t permits,
                             const struct volt_connect_options *opts,
                             const struct volt_sem **out);

/**
 * Deletes the Redis semaphore `name` (its keys under `opts->prefix`), so
 * that a program deriving names (per tenant, per job) does not leave one in
 * Redis for each. Refused while the semaphore has a live session (a client
 * that holds permits, waits, or is only connected: deleting under it would
 * make that handle fail with `VOLT_STATE_LOST`); sessions whose lease
 * ended (crashed clients) are reclaimed first and do not count. One
 * connection (within the connect timeout) and one script; no session.
 * Without it, once every session ended, only the semaphore's `:meta` hash
 * (a few hundred bytes, no TTL) stays in Redis; everything else is empty or
 * expires within a minute. The next `volt_sem_connect` of the name creates
 * it afresh.
 *
 * Returns `VOLT_OK`, or (nothing deleted): `VOLT_INVALID_ARGUMENT` (NULL
 * `url` or `name`, a bad `opts->struct_size`, an invalid `opts->label`),
 * `VOLT_INVALID_URL`,
 * `VOLT_INVALID_NAME`, `VOLT_INVALID_PREFIX`, `VOLT_INVALID_OPTION`,
 * `VOLT_NOT_FOUND` (no such semaphore), `VOLT_IN_USE` (live sessions),
 * `VOLT_VERSION_MISMATCH` (made by a release of another key schema),
 * `VOLT_AUTH_FAILED`, `VOLT_CONNECTION_FAILED`, `VOLT_TLS_FAILED`,
 * `VOLT_NO_PERMISSION`, `VOLT_READ_ONLY`, `VOLT_REDIS_ERROR`,
 * `VOLT_PROTOCOL_ERROR`.
 *
 * # Safety
 * `url` and `name` are NULL or NUL-terminated strings; `opts` is NULL or a
 * valid `volt_connect_options` (as for `volt_sem_connect`).
 */
volt_status volt_sem_delete(const char *url,
                            const char *name,
                            const struct volt_connect_options *opts);

/**
 * Makes SIGTERM and SIGINT end every live Redis session of this process
 * before the signal takes effect: their permits go to the next waiters at
 * once and their queued requests leave the queue, instead of when the lease
 * expires (a process killed by a signal's default action runs no exit
 * handler). Call it once, early in `main` (it is idempotent):
 *
 *     volt_end_sessions_on_signals();
 *
 * The signal then takes the effect it had before the call: by default the
 * process ends by it (its exit status says so, as without this call); a
 * handler the program installed earlier runs afterwards and decides (one
 * shot: after the first SIGTERM or SIGINT, that earlier disposition stays).
 * If the process goes on, the ended sessions' queued requests have failed
 * (`volt_sem_cancel` returns `VOLT_CLOSED`; their wake callbacks run on the
 * library's signal thread) and their lease watches were called; every
 * later request of those handles returns `VOLT_CLOSED`.
 * A signal ignored when this is called (a background job's SIGINT, say)
 * stays ignored: it ends neither the sessions nor the process.
 * A handler installed after this call replaces it. The work is done on a
 * library thread (the signal handler itself only writes to a pipe), so it
 * is safe whatever the signal interrupts; it waits at most the command
 * timeout for a command in flight.
 *
 * Not needed for a process that returns from `main` or calls `exit()`:
 * live sessions are ended by an `atexit` handler, as by `volt_sem_free` of
 * the last handle. `SIGKILL` cannot be caught: the lease bounds what a
 * killed process keeps. Named (shared-memory) semaphores need nothing: the
 * kernel gives a dead process's permits back.
 *
 * Returns `VOLT_OK`, `VOLT_UNSUPPORTED` (not a Unix system) or
 * `VOLT_OS_ERROR` (no pipe, thread or handler could be made; the message
 * says which).
 */
volt_status volt_end_sessions_on_signals(void);

/**
 * The longest name `volt_sem_connect` accepts, in bytes (1024).
 */
size_t volt_sem_max_redis_name_len(void);

/**
 * The largest total of a Redis semaphore (2^40: Lua's numbers are doubles).
 */
size_t volt_sem_max_redis_permits(void);

/**
 * Reads the accounting of a Redis semaphore into `*out` (first reaping the
 * sessions whose lease expired). One round trip, up to the command timeout.
 *
 * Returns `VOLT_OK`, `VOLT_INVALID_ARGUMENT` (NULL), `VOLT_UNSUPPORTED` (not
 * a Redis semaphore), or a network status (`VOLT_CONNECTION_FAILED`,
 * `VOLT_STATE_LOST`, ...); `*out` is written only on `VOLT_OK`.
 *
 * # Safety
 * `sem` is NULL or a live handle; `out` is NULL or writable.
 */
volt_status volt_sem_census(const struct volt_sem *sem, struct volt_census *out);

/**
 * `sizeof(volt_waiter)`, for bindings that allocate waiters dynamically.
 */
size_t volt_waiter_size(void);

/**
 * `alignof(volt_waiter)`, for bindings that allocate waiters dynamically.
 */
size_t volt_waiter_align(void);

/**
 * Initialises a waiter: must be called once on its memory before its first use
 * (fresh stack or heap memory is fine: this only writes). Memory that was never
 * initialised must not be passed to any other function; zeroed memory is
 * rejected by all of them with `VOLT_INVALID_ARGUMENT`.
 *
 * An idle waiter is reusable without re-initialising. Re-initialising a busy
 * waiter (see `volt_waiter_is_busy`) is undefined behaviour: it would corrupt the
 * semaphore's queue; this function cannot detect it without reading memory that
 * is normally uninitialised.
 *
 * Returns `VOLT_OK`, or `VOLT_INVALID_ARGUMENT` if `waiter` is NULL or misaligned.
 *
 * # Safety
 * `waiter` is NULL or points to `VOLT_WAITER_SIZE` writable bytes that are not a
 * busy waiter.
 */
volt_status volt_waiter_init(struct volt_waiter *waiter);

/**
 * Whether an initialised waiter is busy: from a `volt_sem_acquire` that returned
 * `VOLT_PENDING` until the owner's `volt_sem_cancel` (or a `volt_sem_try_cancel`
 * that returned an outcome), made outside its callback, has returned. A busy
 * waiter must not be re-initialised, reused, moved or freed. Like the other calls
 * that take a waiter, only its owner may ask (or its own callback).
 *
 * Returns false for NULL, misaligned or zeroed memory.
 *
 * # Safety
 * `waiter` is NULL or points to an initialised or zeroed `volt_waiter`.
 */
bool volt_waiter_is_busy(const struct volt_waiter *waiter);

/**
 * Acquires `n` permits without blocking the calling thread.
 *
 * Returns
 * * `VOLT_OK` (READY): the permits were taken at once; `wake` will not be called;
 *   the waiter stays idle and may be reused or freed at once.
 * * `VOLT_PENDING`: the waiter is queued (FIFO) and busy; `wake(ctx)` will be
 *   called exactly once, on whichever thread completes the grant or closes the
 *   semaphore, unless `volt_sem_cancel` removes the waiter first. Every PENDING
 *   waiter must be passed to `volt_sem_cancel` (see "Waiter lifetime").
 * * `VOLT_CLOSED`: the semaphore is closed.
 * * `VOLT_INVALID_ARGUMENT`: NULL `sem`, `waiter` or `wake`; `n == 0` or `n >
 *   volt_max_permits()` (or above a shared semaphore's total); a waiter that
 *   was not initialised or is still busy.
 * * On a shared semaphore: `VOLT_QUEUE_FULL` (not queued: nothing changed),
 *   `VOLT_FORKED`, `VOLT_CORRUPT`, `VOLT_OS_ERROR`. Its `wake(ctx)` runs on the
 *   process's doorbell thread of that name, whichever process released.
 * * On a Redis semaphore it never blocks and is always `VOLT_PENDING` when
 *   accepted (the handle's door thread sends the request; at once only the
 *   errors the handle knows itself: `VOLT_STATE_LOST`, `VOLT_FORKED`; a
 *   close is Redis's to report, through the callback, since another client
 *   may have reopened the name). Its `wake(ctx)` runs on the handle's door thread (the
 *   request granted at once, or by a release through this handle; or a
 *   thread waiting in a call of the handle that ran the door's work
 *   itself), its agent thread (granted by another client), or the thread
 *   that found the session lost: when the grant is complete, the semaphore closed, or the
 *   request failed (then `volt_sem_cancel` returns the error:
 *   `VOLT_LEASE_EXPIRED`, `VOLT_STATE_LOST`, `VOLT_CONNECTION_FAILED`,
 *   `VOLT_REDIS_ERROR`, `VOLT_PROTOCOL_ERROR`, ...). After `VOLT_OK` from
 *   `volt_waiter_token` gives the grant's fencing token.
 *
 * # Safety
 * `sem` is NULL or a live handle; `waiter` is NULL or a `volt_waiter`
 * owned by the caller; if PENDING, the waiter lifetime rules at the top of
 * this header apply to `waiter` and `ctx`.
 */
volt_status volt_sem_acquire(const struct volt_sem *sem,
                             struct volt_waiter *waiter,
                             size_t n,
                             volt_wake_fn wake,
                             void *ctx);

/**
 * Where a waiter stands; callable from any thread, including inside its wake
 * callback (the right place to ask), concurrently with every other call on the
 * waiter except `volt_waiter_init` (and freeing its memory): the caller must make
 * the initialisation happen-before this call from another thread (e.g. publish
 * the waiter through a mutex or a release store), and must not free or
 * re-initialise the waiter while another thread may be asking.
 *
 * Returns `VOLT_PENDING` (queued), `VOLT_OK` (the full grant arrived),
 * `VOLT_CLOSED` (closed while queued), `VOLT_IDLE` (not queued, no outcome), or
 * `VOLT_INVALID_ARGUMENT` (NULL or uninitialised). `VOLT_OK`/`VOLT_CLOSED` may be
 * reported just before the callback runs: only `volt_sem_cancel` says when the
 * waiter's memory is free. On a shared semaphore the status may lag the grant
 * or the close by as long as this process's doorbell thread takes to collect
 * it (see SHARED SEMAPHORES at the top). In a child created by `fork()`, a
 * request that the parent had queued on a local semaphore reads `VOLT_CLOSED`
 * (see FORK). For a Redis waiter, `VOLT_CLOSED` also stands for a
 * request that failed (its session lost: it holds nothing either);
 * `volt_sem_cancel` returns the precise status (`VOLT_LEASE_EXPIRED`,
 * `VOLT_STATE_LOST`).
 *
 * # Safety
 * `waiter` is NULL or points to a `volt_waiter`.
 */
volt_status volt_waiter_status(struct volt_waiter *waiter);

/**
 * Ends a PENDING acquire: removes the waiter if it is still queued, or collects
 * its outcome. `sem` must be a handle to the semaphore the waiter was queued on:
 * the one it was queued through, a clone of it, or, for a named semaphore,
 * another `volt_sem_open` of the same name in this process (not one opened
 * after the name was unlinked: that is a new semaphore). A Redis waiter only
 * through the handle it was queued through or a clone of it (the handle of
 * another `volt_sem_connect` is refused, even one that shares its session).
 * If `returned` is not NULL, `*returned` is set to the partial grant handed back
 * (0 unless the result is `VOLT_CANCELLED`).
 *
 * Returns
 * * `VOLT_OK`: the full grant had arrived: the caller owns the `n` permits and
 *   must release them.
 * * `VOLT_CANCELLED`: removed while queued; its partial grant was handed on.
 * * `VOLT_CLOSED`: the semaphore was closed while it waited; it holds nothing.
 * * Redis: the error that ended the request (`VOLT_LEASE_EXPIRED` or
 *   `VOLT_STATE_LOST`: the session was lost while it waited;
 *   `VOLT_CONNECTION_FAILED` and the like: its round trip failed); it holds
 *   nothing. Removing a queued Redis waiter never blocks: it is removed
 *   here (`VOLT_CANCELLED`, `*returned` 0) and taken out of Redis by the
 *   handle's door thread, which hands its partial grant on and gives back
 *   a grant that came first; if Redis cannot be reached, the handle's
 *   session is given up (so that nothing can be granted to a request
 *   nobody waits for), and its other holders and waiters learn
 *   `VOLT_LEASE_EXPIRED`.
 * * `VOLT_IDLE`: nothing to end: not busy, or the outcome was already collected
 *   by a call from inside its wake callback (that call's `VOLT_OK` transferred
 *   the permits: this `VOLT_IDLE` means the caller owns nothing more, so it must
 *   not release them a second time), or a call on this thread is ending this
 *   waiter right now (a callback that the owner's cancel of it completed, by
 *   handing its partial grant on, cancels it again): that call returns the
 *   outcome.
 * * `VOLT_INVALID_ARGUMENT`: NULL, uninitialised waiter, or `sem` is not the
 *   semaphore the waiter is queued on (nothing changed).
 * * `VOLT_FORKED`: `sem` is a Redis handle used in a child of the process
 *   that connected it (nothing changed: the request is the parent's, and
 *   the waiter stays busy in the child).
 *
 * Outside the waiter's callback, this waits for a callback running on another
 * thread to return; when it returns the waiter is idle and the waiter and `ctx`
 * may be freed or reused. So never call it while holding a lock (or anything
 * else) that a wake callback may be waiting for: it would wait for the callback,
 * and the callback for it. Drop the lock first, or use `volt_sem_try_cancel`.
 * Inside its own callback it returns at once with the outcome, and the waiter
 * stays busy until the owner's call outside.
 *
 * # Safety
 * `sem` is NULL or a live handle; `waiter` is NULL or a `volt_waiter`
 * owned by the caller (or called from its own callback); `returned` is NULL or
 * writable.
 */
volt_status volt_sem_cancel(const struct volt_sem *sem,
                            struct volt_waiter *waiter,
                            size_t *returned);

/**
 * Like `volt_sem_cancel`, but never waits for the waiter's wake callback: for an
 * owner that must end a PENDING acquire while holding a lock the callback takes.
 *
 * Returns what `volt_sem_cancel` returns, or `VOLT_PENDING` when ending the
 * acquire now would mean waiting for its callback: the grant or the close has
 * arrived and `wake(ctx)` is running on another thread or about to. Nothing
 * changed: the callback is or will be called as usual; wait for it (e.g. in
 * `pthread_cond_wait`, which drops the lock) and call this again. It stays
 * `VOLT_PENDING` until the callback has returned, a moment after its last
 * action (e.g. its signal): if that was seen, yield and call again. If this call
 * wins the race against an arriving grant or close, it returns that outcome
 * (`VOLT_OK`, `VOLT_CLOSED`) itself and `wake(ctx)` is not called.
 *
 * Only this waiter's callback is never waited for: if a release wakes several
 * waiters at once while this call removes the waiter, it may wait for the
 * callbacks of the waiters woken just before it. So the lock held across this
 * call must not be one that other waiters' callbacks take; the wait for this
 * waiter's own callback, the deadlock of `volt_sem_cancel`, cannot happen.
 *
 * Inside the waiter's own callback it is the same as `volt_sem_cancel`; so it
 * is inside another waiter's callback when this waiter's callback is still to
 * run on the same thread (one release, close or cancel completed both): it
 * returns the outcome at once and that callback is never called, as with
 * `volt_sem_cancel` (nothing to wait for there). The same on a shared
 * semaphore, whose callbacks a release delivers together on one thread (a
 * process's doorbell thread of the name), and on a Redis one for the
 * callbacks one thread delivers (a Redis handle's door or agent thread; the
 * agent may deliver the first grant of a release before the handle learns of
 * the others: a sibling not yet completed is then still queued, and this
 * cancels it, `VOLT_CANCELLED`, its grant given back); a sibling whose
 * callback runs, or is to run, on another thread (e.g. a Redis handle's
 * other one) makes this return `VOLT_PENDING`, as anywhere.
 *
 * # Safety
 * As for `volt_sem_cancel`.
 */
volt_status volt_sem_try_cancel(const struct volt_sem *sem,
                                struct volt_waiter *waiter,
                                size_t *returned);

/**
 * The fencing token of the last grant collected through this waiter on a
 * Redis semaphore: read it after `volt_sem_acquire` or `volt_sem_cancel`
 * (or `volt_sem_try_cancel`) returned `VOLT_OK`; until the next such
 * `VOLT_OK` it keeps that grant's token (a later request that fails or is
 * cancelled does not change it). 0 before any grant, for a local or shared
 * semaphore, and for NULL or uninitialised memory. The same calling rules
 * as `volt_waiter_status`.
 *
 * # Safety
 * `waiter` is NULL or points to an initialised or zeroed `volt_waiter`.
 */
uint64_t volt_waiter_token(const struct volt_waiter *waiter);

/**
 * The Redis session the waiter's last request ran in (after `VOLT_OK`, the
 * session that holds its permits), for `volt_sem_watch_lease`; 0 for a local
 * or shared semaphore, NULL or uninitialised memory.
 *
 * # Safety
 * As for `volt_waiter_token`.
 */
uint64_t volt_waiter_session(const struct volt_waiter *waiter);

/**
 * Acquires `n` permits, blocking (parked, no busy wait) the calling thread until
 * they are granted in FIFO order, the semaphore is closed, or `timeout_ns`
 * nanoseconds passed; a negative timeout waits for ever. Do not call it on an
 * event-loop thread.
 *
 * `timeout_ns` is relative to the call (a duration, not a deadline), measured on
 * a monotonic clock (`CLOCK_MONOTONIC` on Linux): changes to the wall clock do
 * not shorten or lengthen it. A timeout too large for the clock waits for ever.
 * A timeout of 0 is one attempt (`VOLT_TIMED_OUT` when the permits are not free
 * now). Permits free at the call are granted whatever the timeout, on every
 * backend: on a Redis semaphore the answer to the request's first round trip
 * (the acquire script) is waited for past the timeout, and its grant kept,
 * even with a timeout far shorter than that round trip (1 ns), for a grace
 * counted from when the script was sent: 250 ms, or four times the median
 * of the handle's last eight round trips to Redis if longer (a far-away
 * Redis), at most the command timeout. A request still unanswered at the
 * grace's end (a server that stopped answering) is cancelled then:
 * `VOLT_TIMED_OUT`, a grant answered later given back. So a timed acquire on
 * Redis returns at the later of its timeout and that grace's end, not at the
 * command timeout. A request that had to queue is bound by the timeout
 * (cancelled, its partial grant handed on).
 * On a shared semaphore the timeout also bounds the waits for the segment's
 * lock: a process stopped inside it (`SIGSTOP`, a debugger) does not make a
 * timed acquire overrun its timeout; if the request is still queued then, its
 * removal from the queue is left to the process's doorbell thread (it holds
 * no permit meanwhile: a grant that comes first is given back at once).
 * That wait for the lock is on `CLOCK_MONOTONIC` too where the C library has
 * `pthread_mutex_clocklock` (glibc 2.30 and later, found at run time); on an
 * older one it falls back to `pthread_mutex_timedlock`, on `CLOCK_REALTIME`,
 * and a wall-clock step during that wait shortens or lengthens it.
 *
 * Returns `VOLT_OK` (the caller owns the permits), `VOLT_TIMED_OUT` (any partial
 * grant was handed on), `VOLT_CLOSED` or `VOLT_INVALID_ARGUMENT` (NULL, `n == 0`,
 * `n > volt_max_permits()`, or above a shared semaphore's total); on a shared
 * semaphore also `VOLT_QUEUE_FULL`, `VOLT_IN_CALLBACK` (called inside one of its
 * wake callbacks), `VOLT_FORKED`, `VOLT_CORRUPT`, `VOLT_OS_ERROR`. On a Redis
 * semaphore (the request is sent by the handle's door thread, then the
 * wait; the grant arrives without polling; `volt_sem_acquire_blocking_fenced` also returns the fencing
 * token): `VOLT_IN_CALLBACK` inside one of its wake callbacks,
 * `VOLT_LEASE_EXPIRED` and `VOLT_STATE_LOST` (the session was lost while
 * waiting), `VOLT_CONNECTION_FAILED`, `VOLT_REDIS_ERROR`,
 * `VOLT_PROTOCOL_ERROR`.
 *
 * # Safety
 * `sem` is NULL or a live handle.
 */
volt_status volt_sem_acquire_blocking(const struct volt_sem *sem,
                                      size_t n,
                                      int64_t timeout_ns);

/**
 * `volt_sem_try_acquire` that also returns the grant's fencing token and
 * session in `*grant` (zeroed unless `VOLT_OK`). On a Redis semaphore:
 * one round trip (on the handle's door thread, or on this one when the door
 * is idle), up to the command timeout.
 *
 * Returns what `volt_sem_try_acquire` returns; `VOLT_INVALID_ARGUMENT` also
 * for a NULL `grant`.
 *
 * # Safety
 * `sem` is NULL or a live handle; `grant` is NULL or writable.
 */
volt_status volt_sem_try_acquire_fenced(const struct volt_sem *sem,
                                        size_t n,
                                        struct volt_grant *grant);

/**
 * `volt_sem_acquire_blocking` that also returns the grant's fencing token and
 * session in `*grant` (zeroed unless `VOLT_OK`).
 *
 * Returns what `volt_sem_acquire_blocking` returns; `VOLT_INVALID_ARGUMENT`
 * also for a NULL `grant`.
 *
 * # Safety
 * `sem` is NULL or a live handle; `grant` is NULL or writable.
 */
volt_status volt_sem_acquire_blocking_fenced(const struct volt_sem *sem,
                                             size_t n,
                                             int64_t timeout_ns,
                                             struct volt_grant *grant);

/**
 * Reports who holds `sem`'s permits and who waits for them, in queue order.
 *
 * Writes the totals and the counts to `*out`, the first `holders_cap`
 * holders to `holders` and the first `waiters_cap` waiters to `waiters`
 * (either array may be NULL when its capacity is 0). One snapshot:
 * `available + Σ holders[i].permits + Σ waiters[i].granted == total` when
 * every entry fit (after a `volt_sem_set_total` below what is held, the sum
 * is above `total` by the permits still to be taken back as released).
 *
 * A local semaphore reports this process as its one holder (label
 * `"<hostname>:<pid>"`, `held_for_ns` -1) and its own queue; its `total` is
 * the permits it was created with: `volt_sem_release` is taken to give back
 * what was acquired: a release beyond that shows in `total` only while its
 * extra permits are available or granted (a local semaphore does not count
 * what is held: once they are acquired again, `total` and the holder's
 * count are back to the nominal ones, e.g. a holder of 4 on a semaphore
 * created with 3 is reported holding 3). A shared
 * semaphore reports every process of the machine, after reclaiming what
 * dead ones held; a Redis one every client, after reaping expired sessions
 * (one round trip, up to the command timeout; this thread waits for it, so
 * do not call it from an event loop's thread).
 *
 * Returns `VOLT_OK`; `VOLT_TRUNCATED` if an array was too small (`*out`
 * has the full counts; call again with larger arrays); `VOLT_INVALID_ARGUMENT`
 * (NULL `sem` or `out`, or a NULL array with a non-zero capacity); or the
 * backend's failure (`VOLT_CONNECTION_FAILED`, `VOLT_STATE_LOST`, ...), with
 * nothing written.
 *
 * # Safety
 * `sem` is NULL or a live handle; `out` is NULL or writable; `holders` and
 * `waiters` are NULL or point to `holders_cap` / `waiters_cap` writable
 * elements.
 */
volt_status volt_sem_inspect(const struct volt_sem *sem,
                             struct volt_inspection *out,
                             struct volt_holder *holders,
                             size_t holders_cap,
                             struct volt_queued_waiter *waiters,
                             size_t waiters_cap);

/**
 * Writes this handle's metrics to `*out`: counters since the handle was
 * made, gauges now, and the wait-time histogram of its grants.
 *
 * Set `out->struct_size` to `sizeof(volt_stats)` first (see `volt_stats`
 * for how the struct grows). `*out` is the caller's, nothing to free; the
 * handle stays the caller's too. Thread-safe: never blocks and never does I/O, on any
 * backend (a Redis handle's `available` is what its last reply said), so
 * it may be called from an event loop's thread, from any thread, as often
 * as a metrics scrape likes. A snapshot taken while acquires run may be
 * mid-way through one of them (its grant counted, its permits not yet),
 * never off by more.
 *
 * Returns `VOLT_OK`; `VOLT_INVALID_ARGUMENT` (NULL `sem` or `out`, a
 * misaligned `out`, or an `out->struct_size` smaller than the first
 * version's `volt_stats` or above 4096), with nothing written;
 * `VOLT_FORKED` for a Redis handle in a child of the process that connected
 * it (its session is the parent's).
 *
 * # Safety
 * `sem` is NULL or a live handle; `out` is NULL or points to
 * `out->struct_size` writable bytes whose first field is that size.
 */
volt_status volt_sem_stats(const struct volt_sem *sem, struct volt_stats *out);

/**
 * Changes the total of a named (`volt_sem_open`) or Redis
 * (`volt_sem_connect`) semaphore to `n` permits, for every process or client
 * that uses it:
 * * growing hands the new permits to the queued requests at once, in FIFO
 *   order, as a release would (their wake callbacks may run on the process's
 *   doorbell thread, or the Redis handle's threads, before this returns);
 * * shrinking revokes nothing: what is held stays held, and the cut becomes a
 *   debt that the next permits released pay first, before any waiter;
 * * either way, every queued request for more than `n` fails at once (a
 *   blocking acquire with `VOLT_INVALID_ARGUMENT`, as a request above the
 *   total always did; a raw waiter is woken, its `volt_waiter_status`
 *   reads `VOLT_CLOSED`, the only failure that call reports, and its
 *   `volt_sem_cancel` returns `VOLT_INVALID_ARGUMENT`), the others keeping
 *   their place.
 *
 * Works on a closed semaphore too. Redis: one round trip (one script), up to
 * the command timeout, blocking the calling thread like `volt_sem_census`.
 *
 * Returns `VOLT_OK`, `VOLT_INVALID_ARGUMENT` (NULL, or `n` 0 or above the
 * backend's maximum: nothing changed), `VOLT_UNSUPPORTED` (a local semaphore:
 * it has no fixed total), `VOLT_FORKED`, or a shared or network status
 * (`VOLT_CONNECTION_FAILED`, `VOLT_READ_ONLY`, ...).
 *
 * # Safety
 * `sem` is NULL or a live handle.
 */
volt_status volt_sem_set_total(const struct volt_sem *sem, size_t n);

/**
 * Undoes `volt_sem_close` of a named or Redis semaphore, for every process
 * or client: later acquires work again. Requests the close failed stay
 * failed; a semaphore that is not closed is left as it is (`VOLT_OK`). Redis:
 * one round trip, blocking the calling thread like `volt_sem_census` (a
 * handle that saw the close learns of the reopen from its next request).
 *
 * Returns `VOLT_OK`, `VOLT_INVALID_ARGUMENT` (NULL), `VOLT_UNSUPPORTED` (a
 * local semaphore: its close is final), `VOLT_FORKED`, or a shared or network
 * status.
 *
 * # Safety
 * `sem` is NULL or a live handle.
 */
volt_status volt_sem_reopen(const struct volt_sem *sem);

/**
 * Ends the session of a named (`volt_sem_open`) or Redis (`volt_sem_connect`)
 * handle, leaving the semaphore open for every other process and client
 * (`volt_sem_close` closes it for everyone). The handle is the object behind
 * `sem`: every reference to it (`volt_sem_clone` returns the same pointer)
 * is disconnected; another `volt_sem_open` or `volt_sem_connect` of the same
 * name, in this process or another, is another handle and goes on.
 *
 * * What the handle holds goes back, to the next waiters, before this
 *   returns. Named: the permits granted through this handle and not
 *   released through it, as far as the process still holds them (the
 *   process's handles on a name share one count: what another handle of the
 *   process released for it is not released twice). Redis: everything its
 *   session holds (one round trip, up to the command timeout; if Redis is out
 *   of reach, the permits come back at the lease's expiry); when it returns,
 *   the handle's threads have exited and its connections are closed.
 * * Its queued requests fail, on any thread. A `volt_waiter` queued on it
 *   (`volt_sem_acquire`) is woken: its callback runs (named: on the
 *   process's doorbell thread, shortly after this returns; Redis: before
 *   this returns, on the handle's threads), `volt_waiter_status` reads
 *   `VOLT_CLOSED`, and the owner's `volt_sem_cancel` (still required: it
 *   gives the waiter's reference back) returns `VOLT_DISCONNECTED`; a
 *   partial grant is handed on. A grant that arrived before the disconnect
 *   and was not collected yet is given back too (`volt_sem_cancel` then
 *   returns `VOLT_DISCONNECTED`: the permits are not the caller's). A
 *   thread blocked in `volt_sem_acquire_blocking` on it returns
 *   `VOLT_DISCONNECTED` at once (its request is failed, which wakes it;
 *   named: a partial grant is handed on).
 * * Every later call on it that returns a status returns
 *   `VOLT_DISCONNECTED`: acquires (a `volt_waiter` is left idle), releases
 *   (the permits went back already), `volt_sem_close`, `volt_sem_set_total`,
 *   `volt_sem_reopen`, a named semaphore's `volt_sem_inspect`... The
 *   queries without a status still answer (`volt_sem_is_closed`,
 *   `volt_sem_total_permits`, `volt_sem_available_permits`,
 *   `volt_sem_stats`), and so do a Redis semaphore's `volt_sem_census` and
 *   `volt_sem_inspect` (reads of the semaphore, on a connection for that
 *   call, closed when it returns; the handle holds and queues nothing
 *   there). `volt_sem_cancel` of a waiter queued before works. Free each
 *   reference with `volt_sem_free` as usual.
 * * Thread-safe: may be called from any thread, concurrently with the
 *   handle's other calls (a call racing it either completes before the end,
 *   and its permits go back with the handle's, or fails with
 *   `VOLT_DISCONNECTED`), and from inside a wake callback.
 *
 * Idempotent: a second call returns `VOLT_OK` and does nothing (one racing
 * the first, on another thread, returns once the first one gave back what
 * the handle held; Redis: unless made from a wake callback that the first
 * one runs, or that runs on the handle's own threads or on the thread of a
 * call running the handle's queued jobs itself, such as
 * `volt_sem_try_acquire` (the first one waits for all of these): that
 * one returns at once).
 *
 * Returns `VOLT_OK`, `VOLT_INVALID_ARGUMENT` (NULL), `VOLT_UNSUPPORTED` (a
 * local semaphore has no session: nothing changed; `volt_sem_close` it), or
 * `VOLT_FORKED` (a handle opened or connected before `fork()`, in the child:
 * nothing changed; its session is the parent's).
 *
 * # Safety
 * `sem` is NULL or a live handle.
 */
volt_status volt_sem_disconnect(const struct volt_sem *sem);

/**
 * Calls `lost(ctx, why)` once when the Redis session `session` of this
 * handle is lost (its lease expired, or Redis lost the state): the moment a
 * holder's permits stop being its own. `session` comes from
 * `volt_grant.session` or `volt_waiter_session()` of the grant to watch.
 *
 * The callback runs on the library's lease thread ("volt-sem-lease", one per
 * process, started by the first watch), under no lock of the library: it may
 * call any function, including `volt_sem_release` (which then returns
 * `VOLT_LEASE_EXPIRED`) and `volt_lease_watch_free` on its own watch. Keep it
 * short: the callbacks of every watch of the process run on that thread, one
 * after another. In the callback, `volt_last_error_message` gives the loss's
 * text (that of `why`) until the callback's own calls replace it. No
 * callback runs for a session that is never lost. After a `fork()` made
 * inside a callback, the child's one thread is its copy of the lease
 * thread: once it has called that session's callbacks it ends, and the
 * child with it, as by `exit(0)`, unless a callback `exec()`ed or
 * `_exit()`ed first.
 *
 * Returns `VOLT_OK` (`*out` is the watch: free it with `volt_lease_watch_free`,
 * after the callback or instead of it), `VOLT_LEASE_EXPIRED` or
 * `VOLT_STATE_LOST` (the session is already lost, or is not this handle's
 * current one: no callback; `*out` NULL), `VOLT_INVALID_ARGUMENT` (NULL `sem`,
 * `lost` or `out`; `session` 0), `VOLT_UNSUPPORTED` (not a Redis semaphore:
 * its grants cannot be lost), or `VOLT_OS_ERROR` (the lease thread could not
 * start). The watch keeps the handle's connections up until it is freed.
 *
 * # Safety
 * `sem` is NULL or a live handle; `out` is NULL or writable; `ctx` stays
 * valid for `lost` until `volt_lease_watch_free` returned.
 */
volt_status volt_sem_watch_lease(const struct volt_sem *sem,
                                 uint64_t session,
                                 volt_lease_lost_fn lost,
                                 void *ctx,
                                 struct volt_lease_watch **out);

/**
 * Ends a lease watch and frees it. When it returns, the callback has returned
 * or will never be called, and `ctx` may be freed (from inside the watch's own
 * callback it returns at once; the callback's return ends it). NULL is a
 * no-op. Never call it while holding a lock the callback takes: it waits for
 * a running callback.
 *
 * # Safety
 * `watch` is NULL or a watch from `volt_sem_watch_lease` not freed yet.
 */
void volt_lease_watch_free(struct volt_lease_watch *watch);

/**
 * The library version ("MAJOR.MINOR.PATCH"), a static NUL-terminated string.
 */
const char *volt_sem_version(void);

#ifdef __cplusplus
}  // extern "C"
#endif  // __cplusplus

/* volt_sem_open() flags: the permission bits of a newly created segment. */
#define VOLT_OPEN_MODE(mode) ((uint32_t)(mode) << VOLT_OPEN_MODE_SHIFT)

/* The waiter's layout is part of the ABI: the Rust side asserts the same. C99
 * has no static assertion: a negative array size fails the build instead, and
 * the offset of a member after a char is the alignment. */
#if defined(__cplusplus)
static_assert(sizeof(volt_waiter) == VOLT_WAITER_SIZE, "volt_waiter size");
static_assert(alignof(volt_waiter) == VOLT_WAITER_ALIGN, "volt_waiter alignment");
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
_Static_assert(sizeof(volt_waiter) == VOLT_WAITER_SIZE, "volt_waiter size");
_Static_assert(_Alignof(volt_waiter) == VOLT_WAITER_ALIGN, "volt_waiter alignment");
#else
struct volt_waiter_align_probe {
  char c;
  volt_waiter w;
};
typedef char volt_waiter_size_check[(sizeof(volt_waiter) == VOLT_WAITER_SIZE) ? 1 : -1];
typedef char volt_waiter_align_check
    [(offsetof(struct volt_waiter_align_probe, w) == VOLT_WAITER_ALIGN) ? 1 : -1];
#endif

#endif /* VOLT_SEM_H */
