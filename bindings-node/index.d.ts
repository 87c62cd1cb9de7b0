// Type definitions for volt-sem (Node binding), CommonJS entry (index.js).
// `require('volt-sem')` has exactly these named exports and no `default`;
// the ESM entry's types (with its default export) are in index.d.mts.

/**
 * The largest number of permits a semaphore can hold and the largest single
 * request or release: `Number.MAX_SAFE_INTEGER` (2^53 - 1), so every count is
 * an exact JS number. (The Rust core allows more; JS numbers do not.)
 */
export declare const MAX_PERMITS: number;

/** Options of an acquire. */
export interface AcquireOptions {
  /**
   * Cancels the wait: the promise rejects with `signal.reason`, and whatever
   * part of the request had already been granted is handed on to the next
   * waiter. An already-aborted signal rejects at once. Must be a real
   * `AbortSignal` (anything else rejects with a `TypeError` whose `code` is
   * `'ERR_INVALID_ARG_TYPE'`). One listener is added per signal however many
   * acquires wait on it, and removed once none does.
   *
   * While the acquire waits, the signal keeps the thread alive (as the
   * `timeout` option's timer does, and although Node unrefs the timer of
   * `AbortSignal.timeout()`), until it is granted, aborted, timed out,
   * cancelled or closed: unless the semaphore was `unref()`'d.
   */
  signal?: AbortSignal | null;
  /**
   * Gives up after this many milliseconds (0, or a positive number at most
   * 1e12; anything else rejects with a `RangeError`, `'ERR_OUT_OF_RANGE'`, or
   * a `TypeError`, `'ERR_INVALID_ARG_TYPE'`, if not a number): the promise
   * rejects with an error whose `code` is `'ERR_VOLT_TIMED_OUT'`, and a
   * partial grant is handed on. `0` is one attempt, as a zero timeout is in
   * Rust, C and Python: the permits if free now (on a Redis semaphore, after
   * one round trip), else `'ERR_VOLT_TIMED_OUT'` at once, nothing queued (a
   * deadline computed as what is left of one may reach 0). Permits free at
   * the call are taken whatever the timeout, on every backend: on a Redis
   * semaphore the answer to the request's first round trip is waited for past
   * the timeout and its grant kept, however short the timeout (1e-6 ms
   * included), for a grace counted from when it was sent (250 ms, or four
   * times the median recent round trip if longer, at most `commandTimeout`);
   * a request still unanswered then (a server that stopped answering) rejects
   * with `'ERR_VOLT_TIMED_OUT'`, a grant answered later given back. So a timed
   * acquire on Redis settles at the later of its timeout and that grace's end,
   * not at `commandTimeout`; a request that had to queue times out at its
   * deadline (or when Redis answered "queued", if later). A grant made
   * before the timer ran is the caller's, on every backend, as in Rust, C
   * and Python, even when the timer fires before the grant reaches this
   * thread (another thread or process released while this one was busy):
   * the promise resolves. Timeouts above 2^31 - 1 ms,
   * `setTimeout`'s limit, are waited for in full. The timer keeps the thread alive until then,
   * unless the semaphore was `unref()`'d (see `signal` for
   * `AbortSignal.timeout()`).
   *
   * Any other option name rejects with a `TypeError` whose `code` is
   * `'ERR_INVALID_ARG_VALUE'`.
   */
  timeout?: number;
}

/**
 * Gives back the permits it stands for, once: later calls do nothing. Also
 * disposable, so `using release = await sem.acquirePermit(2);` releases at the
 * end of the block. On a Redis semaphore it throws what `release(n)` throws
 * (`ERR_VOLT_LEASE_EXPIRED` when the grant was lost with its session).
 */
export interface Releaser {
  (): void;
  [Symbol.dispose](): void;
  /** How many permits it releases. */
  readonly permits: number;
  /**
   * The grant's fencing token on a Redis semaphore ({@link Semaphore.connect}):
   * a number (a server time in microseconds, strictly increasing with every
   * grant of the semaphore, exact below 2^53), 0 for a grant of 0 permits.
   * Pass it to the guarded resource, which rejects tokens smaller than the
   * largest it saw. `null` on local and named semaphores (a holder there
   * cannot outlive its grant unnoticed).
   */
  readonly token: number | null;
  /**
   * A Redis semaphore's: aborted when the session holding this grant is lost
   * (see {@link Semaphore.leaseSignal}); `undefined` on local and named ones.
   */
  readonly signal?: AbortSignal;
  /**
   * A Redis semaphore's releaser also has it (a release that throws rejects
   * instead), as the old Redis releaser did; `undefined` on local and named ones.
   */
  readonly [Symbol.asyncDispose]?: () => Promise<void>;
}

/**
 * What `share()` returns: a plain object that survives `postMessage` and
 * `workerData`. Pass it to `attach()` in another thread of the same process.
 */
export interface SharedHandle {
  readonly 'volt-sem': 1;
  readonly kind: 'Semaphore' | 'Mutex' | 'RwLock';
  readonly id: number;
}

/**
 * The error a closed semaphore rejects pending and new acquires with.
 */
export interface ClosedError extends Error {
  code: 'ERR_VOLT_CLOSED';
}

/** The default reason `cancel()` rejects queued acquires with. */
export interface CancelledError extends Error {
  code: 'ERR_VOLT_CANCELLED';
}

/**
 * Options of {@link Semaphore.open}. Any other name throws a `TypeError` with
 * `code === 'ERR_INVALID_ARG_VALUE'` naming it.
 */
export interface OpenOptions {
  /** Fail with `ERR_VOLT_EXISTS` if the name exists (default: attach to it). */
  createOnly?: boolean;
  /** Fail with `ERR_VOLT_NOT_FOUND` if the name does not exist (default: create it). */
  attachOnly?: boolean;
  /**
   * Permission bits of a newly created semaphore, `0..=0o777` (default
   * `0o600`: this user only; `0o660` shares it with the group, `0o666` with
   * every local user; set exactly, the umask does not apply).
   */
  mode?: number;
  /**
   * Attach to a semaphore another user owns (default `false`: that throws
   * `ERR_VOLT_PERMISSION`). Its owner can rewrite its state at will: set it
   * only for a name another user shares with you on purpose.
   */
  acceptForeignOwner?: boolean;
  /**
   * How {@link Semaphore.inspect} (in every process) names this process's
   * holds and queued requests: 1 to 128 bytes of printable ASCII without
   * spaces (default `"<hostname>:<pid>"`). One per process and name: while
   * the process has the name open, a further `open` keeps the first label.
   * Anything else throws an `Error` with `code === 'ERR_VOLT_INVALID_ARGUMENT'`
   * (nothing opened or created); a non-string, a `TypeError`.
   */
  label?: string;
  /**
   * When the name exists with another total, change its total to `permits`
   * for every process (as {@link Semaphore.setTotal} does) instead of
   * throwing `ERR_VOLT_MISMATCH` (default `false`). For a rolling deploy that
   * changes the total: the new processes open with the new total and
   * `resize: true`; the last such `open` wins.
   */
  resize?: boolean;
}

/**
 * The `code` of the errors of named semaphores ({@link Semaphore.open}), on
 * an `Error` (a `RangeError` with Node's `'ERR_OUT_OF_RANGE'` for counts):
 *
 * * `ERR_VOLT_INVALID_NAME`: empty, contains `/` or NUL, longer than 246 bytes, or holds a lone surrogate (no UTF-8 form).
 * * `ERR_VOLT_INVALID_ARGUMENT`: an invalid {@link OpenOptions.label}; the
 *   message says why.
 * * `ERR_VOLT_NOT_FOUND`: `attachOnly` (or `unlink`) and no such name.
 * * `ERR_VOLT_EXISTS`: `createOnly` and the name exists.
 * * `ERR_VOLT_PERMISSION`: the OS refused access (see `mode`), or another user
 *   owns the semaphore and `acceptForeignOwner` is not set.
 * * `ERR_VOLT_MISMATCH`: the name exists with another total (`existing` on the
 *   error) and `resize` is not set.
 * * `ERR_VOLT_VERSION_MISMATCH`: made by a release of volt-sem with another
 *   segment layout (`found`; this release's: `expected`); nothing changed.
 * * `ERR_VOLT_LIBC_MISMATCH`: the semaphore's lock is another C library's
 *   (a glibc build and a musl build, e.g. the `linux-x64-gnu` and
 *   `linux-x64-musl` packages, cannot share a name); nothing changed.
 * * `ERR_VOLT_NOT_A_SEGMENT`: the file under the name is not a volt-sem semaphore.
 * * `ERR_VOLT_PROCESS_TABLE_FULL`: 128 processes are attached already.
 * * `ERR_VOLT_QUEUE_FULL`: 1024 requests are queued across all processes;
 *   this one was not queued.
 * * `ERR_VOLT_NOT_HELD`: `release(n)` of more than this process holds
 *   (`held` on the error); nothing was released.
 * * `ERR_VOLT_UNSUPPORTED`: not Linux, or `addPermits`/`removePermits` (the
 *   total of a named semaphore is fixed).
 * * `ERR_VOLT_TIMED_OUT` from `open`: the semaphore's locks stayed held for
 *   5 s (a process stopped inside its `open`, or one holding them on purpose).
 * * `ERR_VOLT_CORRUPT`, `ERR_VOLT_FORKED`, `ERR_VOLT_OS_ERROR` (`errno`): the
 *   segment holds a value the library never writes (a process with write
 *   access scribbled on it) or its lock is unrecoverable, a handle used
 *   after `fork()`, another OS error (`ENOSPC`: `/dev/shm` is full).
 */
export type NamedErrorCode =
  | 'ERR_VOLT_INVALID_NAME'
  | 'ERR_VOLT_INVALID_ARGUMENT'
  | 'ERR_VOLT_NOT_FOUND'
  | 'ERR_VOLT_EXISTS'
  | 'ERR_VOLT_PERMISSION'
  | 'ERR_VOLT_MISMATCH'
  | 'ERR_VOLT_VERSION_MISMATCH'
  | 'ERR_VOLT_LIBC_MISMATCH'
  | 'ERR_VOLT_NOT_A_SEGMENT'
  | 'ERR_VOLT_PROCESS_TABLE_FULL'
  | 'ERR_VOLT_QUEUE_FULL'
  | 'ERR_VOLT_NOT_HELD'
  | 'ERR_VOLT_UNSUPPORTED'
  | 'ERR_VOLT_CORRUPT'
  | 'ERR_VOLT_FORKED'
  | 'ERR_VOLT_OS_ERROR'
  | 'ERR_VOLT_IN_CALLBACK';

/** An error of a named semaphore (see {@link NamedErrorCode}). */
export interface NamedError extends Error {
  code: NamedErrorCode;
  /** `ERR_VOLT_MISMATCH`: the total the existing semaphore was created with. */
  existing?: number;
  /**
   * `ERR_VOLT_VERSION_MISMATCH`: the layout version found;
   * `ERR_VOLT_LIBC_MISMATCH`: the segment's C library (1 glibc, 2 musl).
   */
  found?: number;
  /** The same, of this build. */
  expected?: number;
  /** `ERR_VOLT_NOT_HELD`: what this process holds. */
  held?: number;
  /** `ERR_VOLT_OS_ERROR`: the OS error number. */
  errno?: number;
}

/**
 * A fair, weighted, async counting semaphore, shared by every worker thread that
 * attaches to it; or named, shared by the processes of this machine
 * ({@link Semaphore.open}); or stored in Redis, shared by every client on every
 * host ({@link Semaphore.connect}). One class for the three: the same
 * acquire, release, abort and timeout everywhere; the backend-specific calls
 * say which backend they need.
 *
 * * **Strict FIFO, weights included**: a queued `acquire(3)` is never overtaken
 *   by later `acquire(1)`s; permits released while it waits accumulate at the
 *   head of the queue (a partial grant) until it is complete.
 * * **Cancellable**: `acquire(n, { signal })`; an aborted waiter hands its
 *   partial grant on to the next.
 * * **Cross-thread**: `share()` / `Semaphore.attach()`; a release in one worker
 *   wakes a waiter in another. A thread with waiters on a shared semaphore stays
 *   alive until they are served; a terminated worker gives back what it was
 *   waiting for (its partial grant, or a grant it never saw). Permits a
 *   terminated worker had already acquired are not returned automatically.
 *
 * Permits are not owned: any thread may release them.
 */
export declare class Semaphore {
  /**
   * @param permits the initial number of permits, an integer in `0..=MAX_PERMITS`.
   * @throws {RangeError} if `permits` is not such an integer (a `TypeError` if it is not a number).
   */
  constructor(permits: number);

  /** Same as the module's `MAX_PERMITS`. */
  static readonly MAX_PERMITS: number;

  /**
   * Waits for `n` permits, in FIFO order. Resolves at once (with a cached
   * promise) when they are available and nobody is queued.
   *
   * Rejects with a `RangeError` if `n` is not an integer in `0..=MAX_PERMITS` (a `TypeError` if not a number)
   * or is above a named or Redis semaphore's total (it could never be granted),
   * with a {@link ClosedError} (`code === 'ERR_VOLT_CLOSED'`) if the semaphore is
   * or becomes closed, and with `signal.reason` if `options.signal` aborts first.
   * `n === 0` resolves at once unless the semaphore is closed (Redis: after
   * asking Redis, off the event loop).
   *
   * Redis: FIFO and weights across every client; the acquire is queued at
   * once (the round trip runs on the backend's agent thread), its token is on
   * the grant (`acquirePermit`, `runExclusive`). An abort or timeout rejects
   * at once and the request leaves the queue in Redis, its partial grant
   * handed on (a grant that raced the abort is given back). Also rejects with
   * a {@link RedisError}: `ERR_VOLT_LEASE_EXPIRED`, `ERR_VOLT_STATE_LOST`,
   * `ERR_VOLT_CONNECTION_FAILED`, ...
   */
  acquire(n?: number, options?: AcquireOptions): Promise<void>;

  /**
   * Like `acquire`, but resolves to a {@link Releaser} for the `n` permits
   * (async-mutex's releaser idiom; disposable with `using`), which carries the
   * grant's fencing `token` on a Redis semaphore.
   */
  acquirePermit(n?: number, options?: AcquireOptions): Promise<Releaser>;

  /**
   * Takes `n` permits if they are available now and nobody is queued.
   * @returns whether the permits were taken.
   * @throws {RangeError} if `n` is not an integer in `0..=MAX_PERMITS` (a `TypeError` if it is not a number),
   *   or is above a named semaphore's total.
   * @throws {ClosedError} (`code === 'ERR_VOLT_CLOSED'`) if the semaphore is closed.
   * @throws {TypeError} `ERR_INVALID_STATE` on a Redis semaphore, whose try is
   *   a round trip the event loop must not wait for: use {@link tryAcquirePermit}.
   */
  tryAcquire(n?: number): boolean;

  /**
   * `tryAcquire` as a promise, on every backend: resolves to a
   * {@link Releaser} for the `n` permits (with the grant's `token` on a Redis
   * semaphore), or `null` if they are not available now or someone is queued
   * (in any client). The form to use on a Redis semaphore (one round trip,
   * off the event loop); local and named ones answer at once.
   * Rejects as `tryAcquire` throws (and with a {@link RedisError}).
   */
  tryAcquirePermit(n?: number): Promise<Releaser | null>;

  /**
   * Returns `n` permits: to the waiters at the head of the queue first (waiters
   * of this thread are settled before `release` returns), the surplus to the
   * counter. Works on a closed semaphore.
   *
   * Redis: gives back `n` permits held by this object's session, without
   * waiting for Redis.
   * @throws {RangeError} if `n` is not an integer in `0..=MAX_PERMITS` (a `TypeError` if it is not a number), or if the
   *   available permits would exceed `MAX_PERMITS` (nothing is released then).
   * @throws {RedisError} `ERR_VOLT_NOT_HELD` (more than this object's session
   *   holds; nothing released), `ERR_VOLT_LEASE_EXPIRED` (the permits were
   *   already reclaimed with the lost session: nothing is released twice),
   *   `ERR_VOLT_STATE_LOST`, `ERR_VOLT_CLOSED` after `disconnect()`.
   */
  release(n?: number): void;

  /**
   * Permits available right now; 0 while anyone is queued.
   * @throws {TypeError} `ERR_INVALID_STATE` on a Redis semaphore (a round
   *   trip): use `(await sem.census()).available`.
   */
  readonly availablePermits: number;

  /** The fixed total of a named or Redis semaphore; `null` for a local one. */
  readonly totalPermits: number | null;

  /** The name of a named or Redis semaphore; `null` for a local one. */
  readonly name: string | null;

  /**
   * Grows the total by `n`: like `release(n)` (waiters first), but it does not
   * count as held permits given back (`heldPermits` is unchanged).
   * @throws {RangeError} as `release`.
   */
  addPermits(n: number): void;

  /**
   * Shrinks the total by `n`: takes the available permits at once and owes
   * the rest ({@link pendingRemoval}), paid by the next permits released in
   * any thread before any waiter is served. From now on the permits held
   * never exceed the new total; permits already held are not revoked; FIFO
   * order is kept. While a removal is owed, an aborted or cancelled waiter
   * stays queued until the debt is paid (its promise rejects at once), so
   * that its partial grant is not handed on past the debt.
   * @throws {RangeError} if `n` is not an integer in `0..=MAX_PERMITS` (a `TypeError` if it is not a number), or if
   *   more than `MAX_PERMITS` would be owed.
   */
  removePermits(n: number): void;

  /** Permits `removePermits` still has to take out of the next releases. */
  readonly pendingRemoval: number;

  /**
   * Permits acquired and not released yet, in every thread (for metrics; with
   * `runExclusive(fn)` of 1 permit, the number of `fn`s running). A release
   * gives back held permits first; releasing more adds to the total. Named:
   * what this process holds; Redis: what this object's session holds, as it
   * counts them (no round trip).
   */
  readonly heldPermits: number;

  /**
   * Acquires queued on this semaphore, in every thread (one woken by another
   * thread counts until its own thread settled it).
   */
  readonly pendingCount: number;

  /** Whether no permit is available right now (`availablePermits === 0`; refused on Redis likewise). */
  isLocked(): boolean;

  /**
   * Resolves when `n` permits could be taken, in FIFO order with the other
   * acquires, without taking them (an acquire at once followed by a release).
   * Rejects like `acquire`.
   */
  waitForUnlock(n?: number, options?: AcquireOptions): Promise<void>;

  /**
   * Rejects every acquire still queued through this object, in this thread,
   * with `reason` (default: a {@link CancelledError}); a partial grant one of
   * them held goes to the next waiter that is not cancelled. Unlike `close()`,
   * the semaphore stays usable.
   * @returns how many acquires were rejected.
   */
  cancel(reason?: unknown): number;

  /**
   * Waiters queued through this object keep their thread alive (the
   * default): on a shared semaphore (share(), Semaphore.open) until served;
   * on a private one while they can still end by themselves, through their
   * `signal` or `timeout` (a private waiter with neither, that nobody else
   * can serve, never does).
   * @returns this
   */
  ref(): this;

  /**
   * Waiters queued through this object, now and later, no longer keep their
   * thread alive, like `timer.unref()` (nor do their `timeout` timers and
   * signals): the process may exit with them pending. They are still served.
   * @returns this
   */
  unref(): this;

  /** Whether `ref()` is in effect (the default). */
  hasRef(): boolean;

  /**
   * Closes the semaphore: pending and future acquires reject with
   * `ERR_VOLT_CLOSED` and `tryAcquire` throws it; `release` still works.
   * Affects every thread attached to it.
   *
   * On a named semaphore ({@link Semaphore.open}) it throws a `TypeError`
   * with `code === 'ERR_INVALID_STATE'` and changes nothing: closing there
   * closes the name for every process (until it is unlinked), which is not
   * what "I am done" means. Use `disconnect()` to end this handle (with the
   * objects `attach()`ed from it), or `closeForEveryone()`.
   */
  close(): void;

  /**
   * Closes the semaphore for everyone: every thread and, on a named
   * semaphore, every process that opened the name, now and later, until the
   * name is unlinked ({@link Semaphore.unlink}; the next `open` of it creates
   * a new, open semaphore) or {@link Semaphore.reopen} reopens it. Same as `close()` on a local semaphore.
   *
   * Redis: every client on every host, and every later `connect` of the name
   * (queued acquires everywhere reject with `ERR_VOLT_CLOSED`); to use the
   * name again once every session ended, {@link Semaphore.deleteRedis}. A
   * round trip, off the event loop: the promise resolves once Redis closed
   * it. Local and named ones close at once and return a resolved promise;
   * a named handle that was disconnected ({@link Semaphore.disconnect}, also
   * through an object `attach()`ed from it) closes nothing and rejects with
   * `ERR_VOLT_CLOSED` (the message says "disconnected").
   */
  closeForEveryone(): Promise<void>;

  /**
   * A Redis semaphore's conservation sums, read in one script (a round trip,
   * off the event loop; O(queue + sessions)).
   * @throws {TypeError} `ERR_INVALID_STATE` on a local or named semaphore.
   */
  census(): Promise<RedisCensus>;

  /**
   * Changes the total of a named or Redis semaphore to `n` permits, for
   * every process and client, off the event loop (Redis: a round trip).
   * Growing hands the new permits to the queued acquires at once, in FIFO
   * order (as a release would). Shrinking revokes nothing: what is held
   * stays held, and the cut takes effect as permits come back (they pay the
   * debt first, before any waiter). Either way, every queued acquire for
   * more than `n` rejects at once with a `RangeError` (`ERR_OUT_OF_RANGE`,
   * as a request above the total always did); the others keep their place.
   * Works on a closed semaphore.
   * @throws {TypeError} `ERR_INVALID_STATE` on an in-process semaphore.
   * Rejects with a `RangeError` for `n` not an integer in 1 to the
   * backend's maximum (nothing changed).
   */
  setTotal(n: number): Promise<void>;

  /**
   * Undoes {@link Semaphore.closeForEveryone} of a named or Redis semaphore,
   * for every process and client, off the event loop: later acquires work
   * again (acquires the close rejected stay rejected). Resolves at once on
   * one that is not closed.
   * @throws {TypeError} `ERR_INVALID_STATE` on an in-process semaphore (its
   * close is final).
   */
  reopen(): Promise<void>;

  /**
   * Who holds this semaphore's permits and who waits, in queue order, on
   * every backend (one snapshot: `available + Σ holders[].permits +
   * Σ waiters[].granted === total`). Off the event loop: a named semaphore
   * first reclaims what dead processes held, a Redis one reaps expired
   * sessions (a round trip). A local semaphore reports this process as its
   * holder, with `heldFor` `null`. Durations are in seconds, as in every
   * language.
   * @example
   * const { holders, waiters } = await sem.inspect();
   * for (const w of waiters) console.log(w.position, w.label, w.permits, w.waitingFor);
   */
  inspect(): Promise<Inspection>;

  /**
   * This object's metrics, for a dashboard or an alert (every backend;
   * synchronous: it never blocks and does no I/O, so a scrape may call it as
   * often as it likes). Counters count this semaphore's requests since it
   * was created or opened: `grants` (requests granted all their permits,
   * `acquire(0)` too; a failed `tryAcquire` is not one) and
   * `permitsGranted` (their permits), `cancels` (queued requests that left
   * without their permits: an aborted `signal`, `cancel()`, a `timeout`),
   * `timeouts` (requests whose `timeout` passed; counted in `cancels`
   * too), `leaseLosses` (Redis: sessions the server expired while they held
   * or waited), `reclaimsSeen` (crashed holders this handle reclaimed: dead
   * processes of a named semaphore, expired Redis sessions). Gauges are read
   * now: `available` (Redis: as last seen in a reply), `held` (permits held
   * through it), `queued` (its requests waiting; a partial grant is neither
   * held nor available). `wait` is how long the granted requests waited
   * (seconds, as {@link Semaphore.inspect}'s durations): fixed log buckets
   * from 1 µs to 2^26 µs (~67 s) and a last one to `Infinity`, with the
   * exact sum and max; a grant taken at once is in the first bucket.
   *
   * Whose requests: an in-process semaphore's, from every object and
   * thread, except that the uncontended grants an object takes without
   * calling into the addon (its JS fast path) are counted by that object
   * only (another object of it, e.g. a worker's from `share()`/`attach()`,
   * reports its own); a named semaphore's handles in this process (one
   * attachment per name); a Redis one's session. Still answers after
   * {@link Semaphore.disconnect} (the last tally).
   * @example
   * const s = sem.stats();
   * console.log(s.grants, s.timeouts, s.queued, s.wait.p99, s.wait.quantile(0.9));
   * for (const { le, count } of s.wait.buckets) console.log(`<= ${le}s: ${count}`);
   */
  stats(): Stats;

  /**
   * A Redis semaphore's: aborted when the session that holds this object's
   * grants is lost, with the `ERR_VOLT_LEASE_EXPIRED` (or
   * `ERR_VOLT_STATE_LOST`) error as its reason: stop using the guarded
   * resource. A grant in a later session gets a new signal. It aborts at most
   * one lease after the start of the last renewal Redis confirmed, even while
   * Redis does not answer (a black hole rather than a closed connection).
   * @throws {TypeError} `ERR_INVALID_STATE` on a local or named semaphore.
   */
  readonly leaseSignal: AbortSignal;

  /** `leaseSignal.aborted` (Redis only; `ERR_INVALID_STATE` elsewhere). */
  isLeaseLost(): boolean;

  /**
   * Resolves with the error (`ERR_VOLT_LEASE_EXPIRED`, `ERR_VOLT_STATE_LOST`)
   * once the session holding this object's grants is lost: `leaseSignal` as
   * a promise (Redis only; throws `ERR_INVALID_STATE` elsewhere). Every call
   * within one session returns the same promise (one listener on
   * `leaseSignal`, however often it is called).
   */
  leaseLost(): Promise<RedisError>;

  /**
   * A named or Redis semaphore's: ends this handle, as C's
   * `volt_sem_disconnect` and Python's `disconnect()` do. Its queued
   * acquires reject with `ERR_VOLT_CLOSED` (the message says
   * "disconnected"); what was acquired through it and not released goes back
   * to the next waiters at once (named: as far as the process still holds
   * it; Redis: the session ends in Redis, off the event loop, and the
   * promise resolves then); every later call through it that can fail
   * throws (or rejects with) `ERR_VOLT_CLOSED`. Named: the handle is what
   * `Semaphore.open` made, with every object `attach()`ed from it in any
   * thread (their queued acquires reject, their permits go back, their
   * later calls fail too); another `Semaphore.open` of the name, in this
   * process or another, is another handle: it keeps its permits and goes
   * on. The semaphore stays open for every other handle, process and
   * client. Idempotent. A named process's record goes when its last object is
   * collected or it exits; a Redis object's session also ends when it is
   * garbage-collected or its thread ends. Redis: once the promise resolves,
   * the object's two session threads have exited and its two Redis
   * connections are closed, even while the object is still referenced: a
   * disconnected object keeps no thread and no connection (before, its
   * door thread and one connection stayed until it was collected: 100
   * objects kept after `disconnect()`, 100 threads and 100 connections).
   * While Redis is out of reach, a session thread blocked in a call is
   * waited for only until a command timeout has passed since the
   * disconnect began; it exits, closing its connection, when that call
   * fails. Named: what a disconnected object
   * still has in this process goes only when it is collected: the name's
   * mapping and one file descriptor (per name, while any object of it
   * lives); a program that disconnects many objects of distinct names keeps
   * that much per object the garbage collector has not collected yet
   * (measured: 2,000 names disconnected, 2,000 descriptors until the next
   * collection): drop the objects.
   * @throws {TypeError} `ERR_INVALID_STATE` on a local semaphore (no session:
   *   `close()` closes it).
   */
  disconnect(): Promise<void>;

  /** `disconnect()`, for `await using` (named and Redis semaphores; a local one rejects with `ERR_INVALID_STATE`). */
  [Symbol.asyncDispose](): Promise<void>;

  /**
   * What `util.inspect` shows too: for a named semaphore
   * `Semaphore { name: 'x', totalPermits: 2, session: 'live', available: 2, pending: 0 }`
   * (`session: 'disconnected'` after `disconnect()`), for a Redis one (never
   * its URL) `Semaphore { name: 'x', totalPermits: 3, session: 'live', held: 1, pending: 0 }`
   * (`session`: `'live'`, `'lease lost'`, the next acquire starts a new one,
   * or `'disconnected'`), for a local one `Semaphore { available: 2, pending: 0 }`
   * (`closed: true` once closed).
   */
  toString(): string;

  /** `{ name, totalPermits }` of a named or Redis semaphore (never a URL); `{}` for a local one. */
  toJSON(): { name?: string; totalPermits?: number };

  /**
   * Whether `close()` was called (by any thread). Redis: whether this object
   * saw the semaphore closed (no round trip).
   */
  readonly closed: boolean;

  /**
   * Acquires `n` permits, runs `fn(token)`, and releases them even if `fn`
   * throws or its promise rejects. `token` is the grant's fencing token on a
   * Redis semaphore, `null` on the others (see {@link Releaser.token}).
   *
   * What `fn` did decides the outcome, never the release after it: if `fn`
   * throws (or rejects), its error, whatever the release meets; if `fn`
   * returns after this object was disconnected (`disconnect()`,
   * `disconnectOnSignals()`) while it ran, its value, since the disconnect
   * gave the permits back and there is nothing left to release. A release
   * that fails otherwise rejects: on Redis, `ERR_VOLT_LEASE_EXPIRED` when the
   * session's lease was lost while `fn` ran (it did not hold the permits to
   * the end). Python's `async with sem.acquire(n)` does the same.
   * @returns what `fn` returns (awaited).
   */
  runExclusive<T>(fn: (token: number | null) => T | PromiseLike<T>, n?: number, options?: AcquireOptions): Promise<T>;

  /**
   * A value to post to another thread (`postMessage`, `workerData`), where
   * `Semaphore.attach(value)` returns this same semaphore. The semaphore lives
   * as long as any thread holds a `Semaphore` for it, and, after `share()`,
   * until the next `attach()` (in any thread) or for 60 seconds, whichever
   * comes first, so the value can be attached after this object is gone.
   * @throws {TypeError} `ERR_INVALID_STATE` on a Redis semaphore: connect in
   *   each thread (each object has a session of its own).
   */
  share(): SharedHandle;

  /**
   * The semaphore that `share()` described, in this thread.
   * @throws {TypeError} if `value` is not what `Semaphore#share()` returned.
   * @throws {Error} with `code === 'ERR_VOLT_GONE'` if that semaphore no longer
   *   exists (every handle to it was garbage-collected or its threads ended).
   */
  static attach(value: SharedHandle): Semaphore;

  /**
   * The semaphore named `name` with `permits` permits in total, shared by
   * every process (and thread) of this machine that opens that name: created
   * if the name is free, else attached to (see {@link OpenOptions}). Same
   * methods and guarantees as a local `Semaphore` (strict FIFO and weights
   * across all processes, `AbortSignal`), with these differences:
   *
   * * the total is fixed (`addPermits`/`removePermits` throw
   *   `ERR_VOLT_UNSUPPORTED`);
   * * each process releases only what it holds (all its objects and threads
   *   together; `heldPermits` is that count): more throws `ERR_VOLT_NOT_HELD`;
   * * what a process still holds or waits for when it ends (exit, crash,
   *   `kill -9`) or closes its last handle goes back to the others: at once
   *   for another process with a request queued (within its 200 ms liveness
   *   sweep), else at the next acquire that has to wait;
   * * `close()` throws (`ERR_INVALID_STATE`): `disconnect()` ends this
   *   handle (with its `attach()`ed objects), `closeForEveryone()` closes it for every process
   *   (reopen it: `Semaphore.unlink(name)`, then `open`); `pendingCount` counts the
   *   requests queued through this object and those `attach()`ed to it, not
   *   those of other `open()`s of the name or of other processes;
   * * every operation is a native call (its state is in shared memory: no JS
   *   fast path).
   *
   * Linux only: elsewhere it throws `ERR_VOLT_UNSUPPORTED`.
   * @param name 1 to 246 bytes, no `/` or NUL (the file `/dev/shm/volt-sem.<name>`).
   * @param permits the total, an integer in `1..=MAX_PERMITS`.
   * @throws {TypeError} if `name` is not a string or `options` is malformed.
   * @throws {TypeError} if `permits` or `options.mode` is not a number (the message quotes it).
   * @throws {RangeError} if `permits` or `options.mode` is out of range.
   * @throws {NamedError} see {@link NamedErrorCode}.
   */
  static open(name: string, permits: number, options?: OpenOptions): Semaphore;

  /**
   * Removes the name (only the name: processes that opened it keep using the
   * semaphore; the next `open` of the name creates a new one).
   * @throws {NamedError} `ERR_VOLT_NOT_FOUND` if there is no such name,
   *   `ERR_VOLT_INVALID_NAME`, `ERR_VOLT_PERMISSION`.
   */
  static unlink(name: string): void;

  /**
   * Connects to the semaphore `name` of `permits` permits stored in the Redis
   * at `url`, shared by every client on every host that connects to the same
   * Redis, prefix and name (creating it if it does not exist): strictly FIFO
   * and weighted across every client, woken without polling, leased and
   * fenced (see the README's "Across machines (Redis)"). The connect runs off
   * the event loop, bounded by `connectTimeout`.
   *
   * The `Semaphore` it resolves to works like a named one, with these
   * differences: no call waits for Redis on the event loop, so the ones
   * that would answer synchronously are refused with `ERR_INVALID_STATE`
   * and name their promise form (`tryAcquire` → `tryAcquirePermit`,
   * `availablePermits` → `census()`); `closeForEveryone`, `census` and
   * `disconnect` are round trips answered by promises; each grant carries a
   * fencing token (`acquirePermit`'s releaser, `runExclusive`'s argument);
   * `leaseSignal`, `isLeaseLost()` and `leaseLost()` tell a lost session.
   * Each object has one session in Redis: the permits it acquires are held by
   * that session and released through the same object; `disconnect()` (or
   * `await using`, or the object's garbage collection, or its thread's end)
   * ends it. Works in the main thread and in workers (each connects its own
   * object; `share()` is refused). Acquires in flight keep the thread alive
   * (see `unref()`); held permits do not.
   *
   * `url`: `redis://[user:password@]host[:port][/db]`, `rediss://…` (TLS),
   * `unix:///path`, `redis+sentinel://…`, or with `cluster` comma-separated
   * seed node URLs. URLs are never shown in errors or `inspect`.
   * @param permits the total, an integer in `1..=2**40` (the largest total of a
   *   Redis semaphore, below `MAX_PERMITS`: Lua's numbers are doubles).
   * @returns a promise rejecting with a `TypeError` for arguments of the wrong
   *   type or an unknown option, a `RangeError` (`ERR_OUT_OF_RANGE`) for
   *   numbers out of range, a {@link RedisError} (see {@link RedisErrorCode}).
   */
  static connect(url: string, name: string, permits: number, options?: ConnectOptions): Promise<Semaphore>;

  /**
   * Deletes the Redis semaphore `name` (its keys under `options.prefix`), so
   * that a service deriving names does not leave one in Redis for each.
   * Rejects with `ERR_VOLT_IN_USE` (nothing deleted) while the semaphore has
   * a live session (a client that holds permits, waits, or is only
   * connected: deleting under it would make it fail with
   * `ERR_VOLT_STATE_LOST`); sessions whose lease ended (crashed clients) do
   * not count. `ERR_VOLT_NOT_FOUND` if there is no such semaphore. Without
   * it, once every session ended, only the semaphore's `:meta` hash (a few
   * hundred bytes, no TTL) stays in Redis; the rest is empty or expires
   * within a minute. The next `connect` of the name creates it afresh. The
   * connect options apply (the lease does not); a round trip, off the event
   * loop.
   */
  static deleteRedis(url: string, name: string, options?: ConnectOptions): Promise<void>;
}

/**
 * Options of {@link Semaphore.connect} (and {@link Semaphore.deleteRedis});
 * durations in milliseconds. Any other name rejects with a `TypeError` with
 * `code === 'ERR_INVALID_ARG_VALUE'` naming it.
 */
export interface ConnectOptions {
  /**
   * The session lease (default 10000, at least 300): a client not heard of
   * for that long (killed, partitioned, paused) loses its permits and queue
   * places to the others; its permits are back within its lease (and a few
   * milliseconds: a waiting client reaps as soon as that lease ends,
   * whatever its own lease).
   */
  lease?: number;
  /** The key prefix, for several tenants on one Redis (default `'volt-sem'`; 1 to 256 bytes, no `{`, `}` or `:`). */
  prefix?: string;
  /**
   * How long connecting (and reconnecting) may take (default 5000): one
   * deadline for the whole connect (TCP, TLS, AUTH, the checks, the first
   * script), even against a server that accepts and never answers.
   */
  connectTimeout?: number;
  /** How long one command may take before the connection counts as failed (default 5000). */
  commandTimeout?: number;
  /** A Redis Cluster: `url` is then one or more seed node URLs separated by commas. */
  cluster?: boolean;
  /**
   * For `rediss://` (TLS): a PEM file of the CA certificate(s) to trust instead of the public roots
   * (Mozilla's set, built in: the system store, the macOS keychain included, is never read, so a
   * keychain CA is exported to a PEM file, e.g. `security find-certificate -c "<CA name>" -p > ca.pem`).
   */
  tlsCaFile?: string;
  /** For `rediss://`: a client certificate and its key (PEM files), for servers that require one. */
  tlsClientCert?: { cert: string; key: string };
  /**
   * Every write waits (Redis `WAIT`, `timeout` ms, default 100, below a third
   * of the lease) until `replicas` replicas acknowledged it; if fewer did, the
   * call rejects with `ERR_VOLT_NOT_REPLICATED` and the session is given up
   * (what it held goes back). Narrows the window of a failover that loses the
   * last writes; it is not consensus.
   */
  minReplicasAcked?: { replicas: number; timeout?: number };
  /**
   * How {@link Semaphore.inspect} (on every host) names this handle's holds
   * and queued requests: 1 to 128 bytes of printable ASCII without spaces
   * (default `"<hostname>:<pid>"`). Anything else rejects with an `Error`
   * with `code === 'ERR_VOLT_INVALID_ARGUMENT'` before any connection; a
   * non-string, with a `TypeError`. Ignored by {@link Semaphore.deleteRedis}.
   */
  label?: string;
  /**
   * When the semaphore exists with another total, change its total to
   * `permits` for every client (as {@link Semaphore.setTotal} does) instead
   * of rejecting with `ERR_VOLT_MISMATCH` (default `false`); the last such
   * `connect` wins. Ignored by {@link Semaphore.deleteRedis}.
   */
  resize?: boolean;
  /**
   * Reject with `ERR_VOLT_NOT_FOUND` if no semaphore has this name (under
   * this prefix), writing nothing to Redis (default: create it), as
   * {@link OpenOptions.attachOnly} does for a named semaphore. Ignored by
   * {@link Semaphore.deleteRedis}.
   */
  attachOnly?: boolean;
}

/**
 * Options of a Redis acquire (the same as every acquire's).
 * @deprecated use {@link AcquireOptions}.
 */
export type RedisAcquireOptions = AcquireOptions;

/**
 * The `code` of the errors of Redis semaphores ({@link Semaphore.connect}; on an `Error`; a
 * `RangeError` with `'ERR_OUT_OF_RANGE'` for counts and `'ERR_VOLT_INVALID_OPTION'`
 * for options out of range; a `TypeError` with `'ERR_INVALID_ARG_TYPE'` for
 * arguments of the wrong type):
 * * `ERR_VOLT_INVALID_URL`: malformed, or a scheme other than `redis://`,
 *   `rediss://`, `unix://`, `redis+sentinel://`: the message says why (the
 *   scheme, no host, a port or database that is not a number) and shows the
 *   expected form, `redis://[user:password@]host[:port][/db]` or
 *   `rediss://…` (URLs are never shown in errors).
 * * `ERR_VOLT_INVALID_NAME`: empty, over 1024 bytes, contains `{` or `}`, or holds a lone surrogate (no UTF-8 form).
 * * `ERR_VOLT_INVALID_PREFIX`: see {@link ConnectOptions.prefix}.
 * * `ERR_VOLT_INVALID_ARGUMENT`: an invalid {@link ConnectOptions.label}; the
 *   message says why.
 * * `ERR_VOLT_AUTH_FAILED`: Redis refused the user or password.
 * * `ERR_VOLT_CONNECTION_FAILED`: Redis unreachable within the connect
 *   timeout, or a connection failed and could not be restored in time.
 * * `ERR_VOLT_MISMATCH`: the semaphore exists with another total (`existing`); nothing changed.
 * * `ERR_VOLT_NOT_HELD`: `release(n)` of more than this object's session
 *   holds (`held`; "this handle holds": another object of the same process
 *   holds its own); nothing released.
 * * `ERR_VOLT_LEASE_EXPIRED`: this object's session lease expired (a pause, a
 *   partition): its permits went back to the others, its waiters fail with
 *   this, and releasing those permits reports it and releases nothing.
 * * `ERR_VOLT_STATE_LOST`: Redis lost the semaphore (restarted empty,
 *   flushed): connect again.
 * * `ERR_VOLT_CLOSED`: closed by any client, or this object was disconnected
 *   (the message says "disconnected").
 * * `ERR_VOLT_TIMED_OUT`: the `timeout` of an acquire elapsed.
 * * `ERR_VOLT_REDIS_ERROR`, `ERR_VOLT_PROTOCOL_ERROR`: Redis answered with an
 *   error, or with a reply the scripts never produce.
 * * `ERR_VOLT_TLS_FAILED`: a `rediss://` handshake failed (an untrusted
 *   certificate, a TLS URL to a plain port).
 * * `ERR_VOLT_NOT_REPLICATED`: fewer replicas than required acknowledged a
 *   write (a Redis-side `min_replicas_acked`); the session was given up.
 * * `ERR_VOLT_NO_PERMISSION`: the Redis user (its ACL) may not run a command
 *   the backend needs; the message names it. `connect` checks the ones it
 *   sends itself (`EVALSHA`, `EVAL`, `BLPOP`, `RPUSH`; `PUBLISH` and `WAIT`
 *   with `minReplicasAcked`).
 * * `ERR_VOLT_IN_USE`: `delete` of a semaphore with live sessions; nothing deleted.
 * * `ERR_VOLT_NOT_FOUND`: `delete` of a name that does not exist, or
 *   `connect` with {@link ConnectOptions.attachOnly} to one (nothing created).
 * * `ERR_VOLT_READ_ONLY`: Redis is a read-only replica (the URL names a
 *   replica, or a failover demoted it; through Sentinels the master is found
 *   again instead).
 * * `ERR_VOLT_VERSION_MISMATCH`: `connect` or `deleteRedis` of a
 *   semaphore made by a release of volt-sem whose keys have another schema
 *   (`found`, 0 for a pre-release snapshot; this release's: `expected`);
 *   nothing written. See *Upgrading* in `docs/versioning.md`.
 * * `ERR_VOLT_WRONG_TYPE`: a key in the semaphore's key space holds a value of
 *   another type, or a field of one holds a value volt-sem never writes there
 *   (a word or a negative count, `avail` above the total; another program
 *   wrote it); the call changed nothing in Redis, and the message names the
 *   key (and the field) when known. Delete that key, or the semaphore.
 * * `ERR_VOLT_REDIS_OUT_OF_MEMORY`: Redis reached its `maxmemory` and refused
 *   the call's writes (`noeviction`, or a `volatile-*` policy with nothing to
 *   evict); the call changed nothing, and the message has the server's `OOM`
 *   text. Transient: retry once memory is freed (a `release()` so refused
 *   gave the session up, as any refused release: its permits come back).
 */
export type RedisErrorCode =
  | 'ERR_VOLT_INVALID_URL'
  | 'ERR_VOLT_INVALID_NAME'
  | 'ERR_VOLT_INVALID_PREFIX'
  | 'ERR_VOLT_INVALID_ARGUMENT'
  | 'ERR_VOLT_INVALID_OPTION'
  | 'ERR_VOLT_AUTH_FAILED'
  | 'ERR_VOLT_CONNECTION_FAILED'
  | 'ERR_VOLT_MISMATCH'
  | 'ERR_VOLT_NOT_HELD'
  | 'ERR_VOLT_LEASE_EXPIRED'
  | 'ERR_VOLT_STATE_LOST'
  | 'ERR_VOLT_CLOSED'
  | 'ERR_VOLT_TIMED_OUT'
  | 'ERR_VOLT_REDIS_ERROR'
  | 'ERR_VOLT_PROTOCOL_ERROR'
  | 'ERR_VOLT_TLS_FAILED'
  | 'ERR_VOLT_NOT_REPLICATED'
  | 'ERR_VOLT_NO_PERMISSION'
  | 'ERR_VOLT_READ_ONLY'
  | 'ERR_VOLT_IN_USE'
  | 'ERR_VOLT_NOT_FOUND'
  | 'ERR_VOLT_WRONG_TYPE'
  | 'ERR_VOLT_VERSION_MISMATCH'
  | 'ERR_VOLT_REDIS_OUT_OF_MEMORY'
  | 'ERR_OUT_OF_RANGE';

/** An error of a Redis semaphore (see {@link RedisErrorCode}). */
export interface RedisError extends Error {
  code: RedisErrorCode;
  /** `ERR_VOLT_MISMATCH`: the total of the existing semaphore. */
  existing?: number;
  /** `ERR_VOLT_NOT_HELD`: what this object's session holds. */
  held?: number;
  /** `ERR_VOLT_VERSION_MISMATCH`: the schema version of the semaphore's keys. */
  found?: number;
  /** `ERR_VOLT_VERSION_MISMATCH`: this release's schema version. */
  expected?: number;
}

/**
 * What `acquirePermit` resolves to on a Redis semaphore: a {@link Releaser}
 * whose `token` is a number and whose `signal` is set.
 * @deprecated use {@link Releaser} (one releaser for every backend).
 */
export type RedisReleaser = Releaser & {
  readonly token: number;
  readonly signal: AbortSignal;
  /** Releases (a failure rejects): what the old Redis releaser's `await using` called. */
  [Symbol.asyncDispose](): Promise<void>;
};

/** What {@link Semaphore.inspect} saw. */
export interface Inspection {
  /**
   * The permits the semaphore has (a local one: what it counts now, `available`
   * + its `heldPermits` + the partial grants, so `addPermits`, `removePermits`
   * and a release beyond what was acquired show in it).
   */
  total: number;
  /** Permits free now. */
  available: number;
  closed: boolean;
  /** Who holds permits: one entry per process (per Redis session). */
  holders: Holder[];
  /** Who waits, in queue order: `waiters[i].position === i`, `waiters[0]` is next. */
  waiters: QueuedWaiter[];
}

/** A process (or Redis session) holding permits. */
export interface Holder {
  /** The label of its handle (`label` option; default `"<hostname>:<pid>"`). */
  label: string;
  host: string;
  pid: number;
  permits: number;
  /** Seconds since its oldest grant still held; `null` on a local semaphore. */
  heldFor: number | null;
  /** Redis: seconds left of its lease (server clock); `null` on the others. */
  leaseRemaining: number | null;
  /** Redis: the fencing token of its latest grant; `null` on the others. */
  token: number | null;
}

/** A queued request. */
export interface QueuedWaiter {
  label: string;
  host: string;
  pid: number;
  /** Permits requested. */
  permits: number;
  /** Permits granted to it so far (a weighted request fills across releases). */
  granted: number;
  /** Seconds since it was queued. */
  waitingFor: number;
  /** Its place in the queue: 0 is the next to be served. */
  position: number;
}

/** What {@link Semaphore.stats} returns (frozen). */
export interface Stats {
  /** Requests granted all their permits. */
  readonly grants: number;
  /** The permits those grants carried. */
  readonly permitsGranted: number;
  /** Requests that gave up at their `timeout` (also counted in `cancels`). */
  readonly timeouts: number;
  /** Queued requests that left without their permits (abort, cancel, timeout). */
  readonly cancels: number;
  /** Redis: leases the server expired while this handle held or waited; 0 elsewhere. */
  readonly leaseLosses: number;
  /** Crashed holders this handle reclaimed (named, Redis); 0 for a local semaphore. */
  readonly reclaimsSeen: number;
  /** Gauge: permits available now (Redis: as last seen). */
  readonly available: number;
  /** Gauge: permits held through this handle now. */
  readonly held: number;
  /** Gauge: this handle's requests waiting now. */
  readonly queued: number;
  /**
   * Whether the counters are recorded: `false` means they are zero because
   * nothing was recorded (every handle of this binding records).
   */
  readonly recording: boolean;
  /** How long the granted requests waited. */
  readonly wait: WaitStats;
}

/** The wait-time histogram of {@link Stats}; every duration in seconds. */
export interface WaitStats {
  /** Waits recorded: one per grant (those taken at once too). */
  readonly count: number;
  /** Their total, seconds. */
  readonly sum: number;
  /** The longest, seconds. */
  readonly max: number;
  /** `quantile(0.5)`. */
  readonly p50: number;
  /** `quantile(0.99)`. */
  readonly p99: number;
  /**
   * The counts per bucket, NOT cumulative (a Prometheus `le` bucket is the
   * running sum), by upper bound: 1e-6, 2e-6, 4e-6 ... 2^26 µs, `Infinity`.
   */
  readonly buckets: ReadonlyArray<WaitBucket>;
  /**
   * The `q` quantile (`0..=1`), seconds: the upper bound of the bucket it
   * falls in, capped at `max` (at most 2x over); 0 when nothing was recorded.
   * @throws {RangeError} `ERR_OUT_OF_RANGE` for `q` not a number in 0..=1.
   */
  quantile(q: number): number;
}

/** One bucket of {@link WaitStats.buckets}. */
export interface WaitBucket {
  /** Its upper bound, seconds (`Infinity` for the last). */
  readonly le: number;
  /** Waits in it: longer than the previous bucket's bound, at most `le`. */
  readonly count: number;
}

/** The conservation sums of a Redis semaphore, read in one script. */
export interface RedisCensus {
  total: number;
  available: number;
  /** Held by live sessions (grants not yet collected included). */
  held: number;
  /** Partial grants of queued requests. */
  partial: number;
  queued: number;
  sessions: number;
  closed: boolean;
  /** The last fencing token issued. */
  lastToken: number;
  /**
   * Permits a shrink ({@link Semaphore.setTotal}) still waits for: the next
   * ones released pay it first. `available + held + partial === total + debt`.
   */
  debt: number;
}

/**
 * The deprecated name of a Redis semaphore: `Semaphore.connect` resolves to a
 * {@link Semaphore}, the one class of every backend.
 * @deprecated use {@link Semaphore} (kept for one release).
 */
export type RedisSemaphore = Semaphore;

/**
 * A deprecated alias of the {@link Semaphore} class (kept for one release):
 * `RedisSemaphore.connect` is `Semaphore.connect`, and the old static
 * `RedisSemaphore.delete` is {@link Semaphore.deleteRedis} (it emits a
 * `DeprecationWarning`, code `VOLT_SEM_DEP001`, once).
 * @deprecated use {@link Semaphore}, and {@link Semaphore.deleteRedis} for `delete`.
 */
export declare const RedisSemaphore: typeof Semaphore & {
  /** @deprecated use {@link Semaphore.deleteRedis}. */
  delete(url: string, name: string, options?: ConnectOptions): Promise<void>;
};

/**
 * The shutdown line: installs `SIGINT` and `SIGTERM` listeners that
 * disconnect every live named and Redis semaphore handle of this thread (so
 * other clients get their permits now, not at lease expiry, and their queued
 * requests leave), waiting at most `options.timeout` ms (default 5000) for
 * Redis, then raise the signal again with its default effect: the process
 * ends by it, with the conventional exit status (130, 143). If other
 * listeners of the signal exist (the application's own shutdown), the
 * process is not killed: they decide. A second signal while disconnecting
 * ends the process at once. Call it once, in the main thread (signals are
 * not delivered to workers); later calls only update the timeout.
 *
 * Unlike C's `volt_end_sessions_on_signals` and Python's
 * `disconnect_on_signals`, it cannot leave alone a signal the process was
 * started with ignored (a background job's `SIGINT`): Node shows no signal
 * disposition. In such a process, remove the listeners it returns, or do not
 * call it.
 * @returns a function that removes the listeners.
 * @throws {TypeError} `ERR_INVALID_ARG_VALUE` for an unknown option name.
 */
export declare function disconnectOnSignals(options?: { timeout?: number }): () => void;

/**
 * A fair async mutex (a semaphore of one permit) with the idioms of async-mutex:
 * `runExclusive`, `acquire()` returning a releaser, `release()`, `isLocked()`.
 * Shareable across workers like a `Semaphore`.
 */
export declare class Mutex {
  constructor();
  /** Waits for the lock (FIFO); resolves to a function that unlocks it. */
  acquire(options?: AcquireOptions): Promise<Releaser>;
  /** Resolves when the lock is free (FIFO), without locking it. */
  waitForUnlock(options?: AcquireOptions): Promise<void>;
  /** Rejects the acquires queued through this object; see `Semaphore#cancel`. */
  cancel(reason?: unknown): number;
  /** See `Semaphore#pendingCount`. */
  readonly pendingCount: number;
  /** See `Semaphore#ref`. */
  ref(): this;
  /** See `Semaphore#unref`. */
  unref(): this;
  /** See `Semaphore#hasRef`. */
  hasRef(): boolean;
  /**
   * The lock if it is free and nobody waits, else `null`.
   * @throws {ClosedError} (`code === 'ERR_VOLT_CLOSED'`) if the mutex is closed.
   */
  tryAcquire(): Releaser | null;
  /**
   * Unlocks a lock taken through this object (for code that does not keep the
   * releaser); its releaser then does nothing. A lock counts as taken from the
   * moment its grant is decided: `mutex.acquire(); mutex.release();` in one
   * tick unlocks a lock that was free, and a waiter handed the lock by a
   * release on this thread holds it before its promise's reactions run.
   * @throws {Error} with `code === 'ERR_VOLT_NOT_LOCKED'` if this object holds no
   * lock: never locked, already released (also through the releaser), or locked
   * through another `Mutex` object (another thread's `attach`).
   */
  release(): void;
  /** Locks, runs `fn`, unlocks even if it throws. */
  runExclusive<T>(fn: () => T | PromiseLike<T>, options?: AcquireOptions): Promise<T>;
  /** Whether someone holds the lock (or waits for it). */
  isLocked(): boolean;
  /** Rejects pending and future acquires with `ERR_VOLT_CLOSED`. */
  close(): void;
  /** See `Semaphore#share`. */
  share(): SharedHandle;
  /** See `Semaphore.attach`. */
  static attach(value: SharedHandle): Mutex;
}

/**
 * A fair reader-writer lock: a semaphore of `MAX_PERMITS` permits, a reader
 * takes one, a writer takes all. FIFO both ways: a waiting writer is not
 * starved by new readers, and readers that come after it wait behind it.
 * Shareable across workers like a `Semaphore`.
 */
export declare class RwLock {
  constructor();
  /** Shared access; resolves to a function that releases it. */
  acquireRead(options?: AcquireOptions): Promise<Releaser>;
  /** Exclusive access; resolves to a function that releases it. */
  acquireWrite(options?: AcquireOptions): Promise<Releaser>;
  /** Rejects the acquires queued through this object; see `Semaphore#cancel`. */
  cancel(reason?: unknown): number;
  /** See `Semaphore#pendingCount`. */
  readonly pendingCount: number;
  /** See `Semaphore#ref`. */
  ref(): this;
  /** See `Semaphore#unref`. */
  unref(): this;
  /** See `Semaphore#hasRef`. */
  hasRef(): boolean;
  /**
   * Shared access if no writer holds or waits for the lock, else `null`.
   * @throws {ClosedError} (`code === 'ERR_VOLT_CLOSED'`) if the lock is closed.
   */
  tryAcquireRead(): Releaser | null;
  /**
   * Exclusive access if nobody holds or waits for the lock, else `null`.
   * @throws {ClosedError} (`code === 'ERR_VOLT_CLOSED'`) if the lock is closed.
   */
  tryAcquireWrite(): Releaser | null;
  /** Runs `fn` with shared access. */
  runRead<T>(fn: () => T | PromiseLike<T>, options?: AcquireOptions): Promise<T>;
  /** Runs `fn` with exclusive access. */
  runWrite<T>(fn: () => T | PromiseLike<T>, options?: AcquireOptions): Promise<T>;
  /** Same as `runWrite`. */
  runExclusive<T>(fn: () => T | PromiseLike<T>, options?: AcquireOptions): Promise<T>;
  /** Whether anyone holds (or waits for) the lock. */
  isLocked(): boolean;
  /** Rejects pending and future acquires with `ERR_VOLT_CLOSED`. */
  close(): void;
  /** See `Semaphore#share`. */
  share(): SharedHandle;
  /** See `Semaphore.attach`. */
  static attach(value: SharedHandle): RwLock;
}

