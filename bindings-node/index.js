'use strict';
// volt-sem for Node: a fair, weighted, async semaphore shared by worker threads.
//
// This file is the whole JS layer: it owns the promises and calls the native
// addon (raw Node-API functions taking an External handle and numbers). See
// src/lib.rs for the wake path. Types and docs: index.d.ts.

// From the module, not the global: test frameworks' fake timers (Jest) replace
// the globals, and the share() pin timer must stay a real, unref'd one.
const timers = require('node:timers');
const { inspect } = require('node:util');

// The addon for this platform (binding.js: a development build, else the
// volt-sem-<platform> package).
const native = require('./binding.js').loadNative();
// The addon's exports object has too many properties for V8's fast layout
// (it is a dictionary), so optimized code reads each of them through the
// LoadIC builtin, a hash lookup: the functions called on every contended
// operation (and on every grant of a shared semaphore) are read once.
const nativeAcquire = native.acquire;
const nativeRelease = native.release;
const nativeConfirm = native.confirm;

/** The largest permit count and request: Number.MAX_SAFE_INTEGER on 64-bit. */
const MAX_PERMITS = native.maxPermits;

// Outcome codes the addon writes into the runtime's buffer.
const GRANTED = 1;
const WOKEN_CLOSED = 2;
const GRANTED_HELD = 4; // granted on a shared semaphore: confirm once user code ran
const FAILED = 5; // a Redis request failed: native.extra(slot) is its error
const LEASE_LOST = 6; // not a request: Redis lease watch `slot` saw its session lost
const TIMED_OUT = 7; // a Redis request expired before its first answer, which queued it: cancelled then
const DEFERRED = -1; // native.expire() <= DEFERRED: left to the Redis acquire script's answer for DEFERRED - k ms
const KEPT = 2 ** 28; // native.expire() >= KEPT: granted before the expiry could cancel it (GRANTED), k - KEPT other outcomes
const KEPT_HELD = 2 ** 29; // as KEPT, delivered as GRANTED_HELD
const SLOT_BASE = 4;
const SLOTS = 2 ** 32; // a request key is gen * 2^32 + slot

const RESOLVED = Promise.resolve();
const SHARE_TAG = 'volt-sem';

// The JS fast path (src/view.rs): the core's state word is
// `available << 2 | QUEUED | CLOSED`, seen through an Int32Array of its two
// halves (the common case: no BigInt made) and a BigInt64Array (big values).
const FLAGS = 3n; // QUEUED | CLOSED
const MAX_BIG = BigInt(MAX_PERMITS);
const LIMIT_1 = MAX_BIG << 2n; // a word from which releasing 1 would overflow
const FLAGS_32 = 3;
/** The largest low half the 32-bit path leaves (it never carries into bit 31). */
const LOW_MAX = 0x7fffffff;
/** The largest request the 32-bit path takes or gives back (`n << 2` fits). */
const N_32 = LOW_MAX >> 2;
/**
 * The largest low half a 32-bit give-back may leave. Without a carry, the
 * word can only pass MAX_PERMITS << 2 (2^55 - 4: high half 2^23 - 1, low half
 * 2^32 - 4) if its high half already is 2^23 - 1 and the new low half passes
 * 2^32 - 4; below 2^31 it never does, so no load of the high half is needed.
 */
const GIVE_TOP = Math.min(LOW_MAX, Number((MAX_BIG << 2n) & 0xffffffffn));

// ---------------------------------------------------------------------------
// The per-thread runtime.
//
// The addon keeps one native context per load of the .node file in a thread;
// Node caches that load, so every evaluation of this file in the thread (Jest
// gives each test file a fresh module registry, jest.isolateModules, a cleared
// require.cache) gets the same native exports object. The state tied to that
// context (the outcome buffer, the slot -> waiter table, the wake callback) is
// created once and kept on that object; later evaluations reuse it. A waiter
// record carries its own module instance's `done` method, so each promise is
// settled with the errors of the realm that created it.

const RUNTIME = Symbol.for('volt-sem.runtime.v1');

function createRuntime() {
  const CAPACITY = 256;
  // CAPACITY (slot, outcome) pairs, then one more pair: the generation of
  // the last queued acquire, and the result code of the last native.acquire
  // or native.release (see result()).
  const buffer = new Uint32Array(CAPACITY * 2 + 2);
  const GEN_AT = CAPACITY * 2;
  const RESULT_AT = GEN_AT + 1;
  /**
   * slot -> pending waiter record (the addon reuses slots). A waiter on a
   * shared semaphore is held here strongly: another thread may grant it. A
   * waiter on a private semaphore is held by its Semaphore object only (here
   * through a WeakRef to that object's slot -> record map), so an unreachable
   * private semaphore is collected with its waiters.
   */
  const table = [];
  /** Redis lease watch number -> what to call with the error when its session is lost. */
  const leases = new Map();

  function lookup(slot) {
    const e = table[slot];
    if (e === undefined || e.deref === undefined) return e;
    const pending = e.deref();
    return pending === undefined ? undefined : pending[slot];
  }

  /** Removes a pending record from the table and from its semaphore's map. */
  function remove(w) {
    table[w.slot] = undefined;
    w.owner[w.slot] = undefined;
  }

  function rethrow(e) {
    throw e;
  }

  // Settles the k outcomes in the buffer, then keeps draining while it came
  // back full. One waiter's failure never stops the others: every outcome is
  // delivered first, the first error is rethrown afterwards (as an uncaught
  // exception, like a throwing event listener). `own`, if given, is the
  // slot -> record array of the Semaphore object whose call produced the
  // outcomes: most of them are its own waiters, found there without the
  // WeakRef of the table (whose deref() adds to V8's kept-objects set).
  //
  // A lease loss aborts a leaseSignal, whose listeners are user code that may
  // call into the addon (release another semaphore) and so overwrite the
  // buffer: such callbacks (see afterSettle) run once every outcome of the
  // buffer was delivered, when the outermost settle() ends.
  const later = [];
  let settling = 0;
  function settle(k, own) {
    let failed = false;
    let error;
    settling++;
    try {
      for (;;) {
        for (let i = 0; i < k; i++) {
          const slot = buffer[2 * i];
          const code = buffer[2 * i + 1];
          if (code === LEASE_LOST) {
            const f = leases.get(slot);
            leases.delete(slot);
            const e = native.extra(slot, true);
            if (f !== undefined) later.push(f, e);
            continue;
          }
          let w;
          if (own !== undefined) w = own[slot];
          if (w === undefined) w = lookup(slot);
          table[slot] = undefined;
          if (w === undefined) continue; // its private semaphore was collected
          w.owner[slot] = undefined;
          try {
            w.done(code);
          } catch (e) {
            if (!failed) {
              failed = true;
              error = e;
            }
          }
        }
        if (k < CAPACITY) break;
        k = native.drain();
      }
    } finally {
      settling--;
    }
    while (settling === 0 && later.length !== 0) {
      const f = later.shift();
      const arg = later.shift();
      try {
        f(arg);
      } catch (e) {
        if (!failed) {
          failed = true;
          error = e;
        }
      }
    }
    if (failed) process.nextTick(rethrow, error);
  }

  /** Calls `f(arg)` now, or once the settle() under way delivered every outcome (see settle). */
  function afterSettle(f, arg) {
    if (settling === 0) f(arg);
    else later.push(f, arg);
  }

  // Called through the thread's threadsafe function when another thread woke
  // waiters of this one.
  function onRemoteWake() {
    settle(native.drain());
  }

  if (native.init(buffer, onRemoteWake) !== 0) {
    throw new Error('volt-sem: the native addon could not be initialised in this thread');
  }
  // unconfirmed: GRANTED_HELD grants of this thread whose confirmation has not
  // run yet; a release must go native while there are any (it confirms them).
  /** The generation of the request native.acquire() just queued. */
  function lastGen() {
    return buffer[GEN_AT];
  }
  /**
   * The result of native.acquire() or native.release(), given what the call
   * returned: `undefined` when the code is in the buffer's result cell (the
   * addon makes no JS number for it), else the code itself.
   */
  function result(r) {
    return r === undefined ? buffer[RESULT_AT] | 0 : r;
  }
  return { table, lookup, remove, settle, afterSettle, leases, lastGen, result, unconfirmed: 0 };
}

let runtime = native[RUNTIME];
if (runtime === undefined) {
  runtime = createRuntime();
  Object.defineProperty(native, RUNTIME, { value: runtime });
}
const { table, lookup, remove, settle, lastGen, result } = runtime;

// A private semaphore's JS object was collected: its waiters can never be
// served; the addon sweeps them (see js_abandon), and whatever keep-alive its
// waiters still had goes (their records may be gone with it).
const abandoned = new FinalizationRegistry(({ h, alive }) => {
  letGoAll(alive);
  const k = native.abandon(h);
  if (k > 0) settle(k);
});

// A Redis semaphore's JS object was collected (its session ends natively):
// the callbacks of its lease watches go, or the thread would keep them (and
// their AbortControllers) for a LEASE_LOST that never comes.
const redisCollected = new FinalizationRegistry((watches) => {
  for (const id of watches) runtime.leases.delete(id);
});

// ---------------------------------------------------------------------------
// Keeping the thread alive for a private semaphore's waiters.
//
// A waiter on a shared semaphore keeps its thread alive natively (another
// thread or process may grant it). A waiter on a private one can only be served
// by this thread, so it keeps the thread alive only while something can still
// end it by itself: an AbortSignal (its `timeout` option has a timer of its
// own). Node unrefs the timer of `AbortSignal.timeout()`, so without this the
// process would exit with the acquire pending (code 13 for an awaited one).
// One ref'd interval per module instance while any such waiter is pending.

let keepers = 0;
let keepTimer;

function hold() {
  if (keepers++ !== 0) return;
  if (keepTimer === undefined) keepTimer = timers.setInterval(() => {}, 0x7fffffff);
  else keepTimer.ref();
}

function unhold(n) {
  keepers -= n;
  if (keepers === 0) keepTimer.unref();
}

/**
 * `alive`: { n } of one Semaphore object, the keep-alives its waiters hold;
 * shared with the FinalizationRegistry, which lets go of what is left when the
 * object is collected (no waiter record may survive to do it).
 */
function letGoAll(alive) {
  if (alive.n === 0) return;
  const n = alive.n;
  alive.n = 0;
  unhold(n);
}

/** An error of class `Ctor` with Node's `code` property. */
function coded(Ctor, message, code) {
  return Object.assign(new Ctor(message), { code });
}

function closedError() {
  return coded(Error, 'volt-sem: the semaphore is closed', 'ERR_VOLT_CLOSED');
}

function cancelledError() {
  return coded(Error, 'volt-sem: the acquire was cancelled', 'ERR_VOLT_CANCELLED');
}

/**
 * `close()` on a shared handle: it used to close the semaphore for every
 * process and client, where most client libraries' close() means "this
 * client is done". A TypeError with Node's `code: 'ERR_INVALID_STATE'`.
 */
function sharedCloseError(what) {
  return coded(
    TypeError,
    `volt-sem: close() of ${what} is refused, as it would close the semaphore for every process and client: ` +
      "use disconnect() to end this handle's session (what it holds goes back, its queued acquires leave), " +
      'or closeForEveryone() to close the semaphore for everyone',
    'ERR_INVALID_STATE',
  );
}

/** An operation on a Redis semaphore's object after its disconnect(). */
function disconnectedError() {
  return coded(Error, 'volt-sem: the Redis semaphore was disconnected (connect again)', 'ERR_VOLT_CLOSED');
}

/** A call this kind of semaphore cannot answer: a TypeError with Node's `code: 'ERR_INVALID_STATE'`. */
function invalidState(message) {
  return coded(TypeError, `volt-sem: ${message}`, 'ERR_INVALID_STATE');
}

function timedOutError() {
  return coded(Error, 'volt-sem: timed out waiting for permits', 'ERR_VOLT_TIMED_OUT');
}

function checkMs(v, what, dflt) {
  if (v === undefined) return dflt;
  checkNumber(v, `options.${what}`);
  if (!Number.isFinite(v) || v <= 0 || v > 1e12) {
    throw rangeError(`volt-sem: options.${what} must be a positive number of milliseconds, got ${String(v)}`);
  }
  return v;
}

/** An acquire's `timeout`: 0 (one attempt) or a positive number of ms, at most 1e12. */
function checkTimeout(v) {
  checkNumber(v, 'options.timeout');
  if (v === 0) return 0;
  if (!Number.isFinite(v) || v < 0 || v > 1e12) {
    throw rangeError(
      `volt-sem: options.timeout must be 0 (one attempt) or a positive number of milliseconds up to 1e12, got ${String(v)}`,
    );
  }
  return v;
}

function lostError() {
  return coded(Error, 'volt-sem: internal error, the waiter was lost', 'ERR_VOLT_INTERNAL');
}

/** A RangeError with Node's `code: 'ERR_OUT_OF_RANGE'`. */
function rangeError(message) {
  return coded(RangeError, message, 'ERR_OUT_OF_RANGE');
}

/** A TypeError with Node's `code: 'ERR_INVALID_ARG_TYPE'`. */
function typeError(message) {
  return coded(TypeError, message, 'ERR_INVALID_ARG_TYPE');
}

/**
 * A request the semaphore can never grant (above a named semaphore's total;
 * `total` null: above MAX_PERMITS): the RangeError says why, with the total,
 * as Python's ValueError does.
 */
function tooManyError(n, total) {
  const limit = total === null ? `MAX_PERMITS (${MAX_PERMITS})` : `the semaphore's total (${total})`;
  return rangeError(`volt-sem: cannot acquire ${n} permits: more than ${limit}, so they could never be granted`);
}

function checkNumber(n, what) {
  if (typeof n !== 'number') {
    const shown = typeof n === 'string' ? `'${n}'` : typeof n === 'bigint' ? `${n}n` : String(n);
    throw typeError(`volt-sem: ${what} must be a number, got ${typeof n} ${shown}`);
  }
}

/** The total of a named or Redis semaphore: a number (TypeError), in 1..=MAX_PERMITS (RangeError). */
function checkTotal(permits) {
  checkNumber(permits, 'permits');
  if (!Number.isInteger(permits) || permits < 1 || permits > MAX_PERMITS) {
    throw rangeError(`volt-sem: permits must be an integer in 1..=${MAX_PERMITS}, got ${String(permits)}`);
  }
}

function checkCount(n, what) {
  checkNumber(n, what);
  if (!Number.isInteger(n) || n < 0 || n > MAX_PERMITS) {
    throw rangeError(`volt-sem: ${what} must be an integer in 0..=${MAX_PERMITS}, got ${String(n)}`);
  }
}

/**
 * Refuses an options object with a name the call does not know (a typo such as
 * `{ timout }` would otherwise be ignored silently): a TypeError with Node's
 * `code: 'ERR_INVALID_ARG_VALUE'` naming it.
 */
function checkOptionNames(options, known) {
  if (typeof options !== 'object') {
    throw typeError(`volt-sem: options must be an object, got ${typeof options}`);
  }
  for (const name in options) {
    if (!known.includes(name)) {
      throw coded(
        TypeError,
        `volt-sem: unknown option '${name}' (this call takes ${known.map((k) => `'${k}'`).join(', ')})`,
        'ERR_INVALID_ARG_VALUE',
      );
    }
  }
}

const ACQUIRE_OPTIONS = ['signal', 'timeout'];
const OPEN_OPTIONS = ['createOnly', 'attachOnly', 'acceptForeignOwner', 'mode', 'label', 'resize'];
// deleteRedis() takes them too: the lease, the label, resize and attachOnly
// (it opens no session) are then ignored.
const CONNECT_OPTIONS = [
  'lease', 'prefix', 'connectTimeout', 'commandTimeout', 'cluster', 'tlsCaFile', 'tlsClientCert', 'minReplicasAcked',
  'label', 'resize', 'attachOnly',
];

/**
 * `options.label` (a handle's name in inspect()): a string, or null/undefined
 * for the default "<hostname>:<pid>". Its content (1 to 128 bytes of
 * printable ASCII without spaces) is checked by the backend, which refuses
 * it as every language does: an Error with code ERR_VOLT_INVALID_ARGUMENT
 * (the C status) and a message that says why.
 */
function checkLabel(options) {
  const label = options?.label;
  if (label === undefined || label === null) return null;
  if (typeof label !== 'string') throw typeError('volt-sem: options.label must be a string');
  return label;
}

// ---------------------------------------------------------------------------
// AbortSignal handling: a real AbortSignal only (brand-checked through the
// `aborted` getter, which throws on anything else), and one 'abort' listener
// per signal however many acquires wait on it (no MaxListenersExceededWarning).
// The EventTarget methods are taken from the prototype, so a patched instance
// cannot break the settling of a batch.

const abortedGetter = Object.getOwnPropertyDescriptor(AbortSignal.prototype, 'aborted').get;
const addListener = EventTarget.prototype.addEventListener;
const removeListener = EventTarget.prototype.removeEventListener;

function invalidSignal(signal) {
  const shown = signal === null || typeof signal !== 'object' ? String(signal) : `an instance of ${signal.constructor?.name ?? 'Object'}`;
  return typeError(`volt-sem: options.signal must be an AbortSignal, got ${shown}`);
}

/** The signal of `options`, or undefined; throws a TypeError for anything but an AbortSignal. */
function checkSignal(signal) {
  if (signal === undefined || signal === null) return undefined;
  if (typeof signal !== 'object') throw invalidSignal(signal);
  try {
    abortedGetter.call(signal);
  } catch {
    throw invalidSignal(signal);
  }
  return signal;
}

/** signal -> Set of the waiter records listening on it (insertion = FIFO order). */
const listening = new WeakMap();

function onSignalAbort() {
  const signal = this;
  const set = listening.get(signal);
  if (set === undefined) return;
  listening.delete(signal);
  removeListener.call(signal, 'abort', onSignalAbort);
  // Every waiter on the signal leaves the queue before any hand-off is
  // settled, the last queued first (as cancel() does): withdrawing the head
  // first would hand its partial grant to a later waiter on this same signal,
  // which would then be granted although its signal aborted while it waited.
  // Only a head can hold a partial grant, and once it is withdrawn no waiter
  // of this signal is left behind it to receive it. The withdrawn ones are
  // rejected (in queue order) before the waiters a hand-off completed resolve.
  const ws = [...set];
  const gone = [];
  const reason = signal.reason;
  let failed = false;
  let error;
  for (let i = ws.length - 1; i >= 0; i--) {
    try {
      const k = ws[i].withdraw();
      if (k < 0) continue;
      gone.push(ws[i]);
      if (k === 0) continue;
      rejectAll(gone, reason);
      settle(k); // before the next withdrawal reuses the outcome buffer
    } catch (e) {
      if (!failed) {
        failed = true;
        error = e;
      }
    }
  }
  rejectAll(gone, reason);
  if (failed) throw error; // after every waiter was aborted
}

/** Rejects the withdrawn waiters `gone` (the last queued first in it) in queue order, and empties it. */
function rejectAll(gone, reason) {
  for (let i = gone.length - 1; i >= 0; i--) gone[i].reject(reason);
  gone.length = 0;
}

function listen(signal, w) {
  let set = listening.get(signal);
  if (set === undefined) {
    set = new Set();
    listening.set(signal, set);
    addListener.call(signal, 'abort', onSignalAbort);
  }
  set.add(w);
}

function unlisten(signal, w) {
  const set = listening.get(signal);
  if (set === undefined || !set.delete(w) || set.size !== 0) return;
  listening.delete(signal);
  removeListener.call(signal, 'abort', onSignalAbort);
}

// ---------------------------------------------------------------------------
// Pending acquires.

let nextSeq = 0;

/**
 * The resolving functions of the promise being made: one executor for every
 * waiter, so that a queued acquire allocates no closure (nor its context)
 * just to get them out.
 */
const captured = { resolve: undefined, reject: undefined };
function capture(resolve, reject) {
  captured.resolve = resolve;
  captured.reject = reject;
}

class Waiter {
  constructor(slot, gen, owner, signal, value, resolve, reject, onGrant) {
    this.slot = slot;
    this.gen = gen; // the request's key, for the addon, is gen * 2^32 + slot
    this.owner = owner; // the slot -> record array of its Semaphore object
    this.seq = nextSeq++; // the order of the acquires (cancel() withdraws the last first)
    this.signal = signal;
    this.value = value; // what the promise resolves to
    this.resolve = resolve;
    this.reject = reject;
    this.onGrant = onGrant; // maps the value at the grant (a Mutex records its holder)
    this.timer = undefined; // the `timeout` option's timer
    this.timerRef = true; // whether that timer is ref'd (a fired timer's hasRef() says false)
    this.alive = undefined; // its semaphore's { n } while this waiter keeps the thread alive
    // Its private semaphore, held while the waiter can still end by itself (a
    // timeout, a signal): see Semaphore#enqueue.
    this.sem = undefined;
  }

  /** Takes a keep-alive (see hold()) until this waiter ends or is unref'd. */
  keep(alive) {
    if (this.alive !== undefined) return;
    this.alive = alive;
    alive.n++;
    hold();
  }

  /** Lets go of its keep-alive, if any (once; never twice after letGoAll). */
  letGo() {
    const alive = this.alive;
    if (alive === undefined) return;
    this.alive = undefined;
    if (alive.n === 0) return; // let go already, with its collected semaphore
    alive.n--;
    unhold(1);
  }

  /** Delivers the addon's outcome (the record was already taken out of the table). */
  done(code) {
    this.sem = undefined; // ended: its semaphore may go (see Semaphore#enqueue)
    this.letGo();
    if (this.timer !== undefined) timers.clearTimeout(this.timer);
    if ((code === GRANTED || code === GRANTED_HELD) && this.onGrant !== undefined) {
      this.value = this.onGrant(this.value);
    }
    // The promise first: nothing after it may keep the waiter from its outcome.
    if (code === GRANTED) this.resolve(this.value);
    else if (code === GRANTED_HELD) {
      // The addon keeps this grant (a terminated thread gives it back) until
      // the reactions already waiting on the promise have run: they are queued
      // by resolve(), this confirmation after them.
      this.resolve(this.value);
      const key = this.gen * SLOTS + this.slot;
      runtime.unconfirmed++;
      // A promise job, not queueMicrotask(): fake timers may replace that one.
      RESOLVED.then(() => {
        runtime.unconfirmed--;
        const k = nativeConfirm(key, true);
        if (k > 0) settle(k);
      });
    } else if (code === WOKEN_CLOSED) this.reject(closedError());
    else if (code === TIMED_OUT) this.reject(timedOutError()); // (the addon counted the timeout)
    else if (code === FAILED) this.reject(native.extra(this.slot, false));
    else this.reject(lostError());
    if (this.signal !== undefined) unlisten(this.signal, this);
  }

  /**
   * The signal aborted (or the timeout passed): cancel the request unless it
   * was settled already. Whether it was still queued (and is now cancelled).
   */
  abort(reason) {
    const k = this.withdraw();
    if (k < 0) return false;
    this.reject(reason);
    if (k !== 0) settle(k);
    return true;
  }

  /**
   * The `timeout` passed: cancel the request, as abort() does, unless it was
   * granted already, its wake not delivered yet (the timer ran first): that
   * grant is the caller's, on every backend, as in Rust, C and Python; or
   * unless it is a Redis request whose acquire script has not answered yet. That one is
   * left to the answer (every backend tries before it waits) until its grace
   * ends (the addon says when: see the Redis crate's text on timeouts): it
   * settles as any request does, granted, or rejected with
   * ERR_VOLT_TIMED_OUT (TIMED_OUT) if the answer queued it, which cancels it
   * then; still unanswered at the grace's end (a server that stopped
   * answering), it is cancelled then as by abort() (onGrace).
   */
  expire(h, last = false) {
    if (lookup(this.slot) !== this) {
      this.letGo(); // as withdraw() does: also when its semaphore was collected
      return;
    }
    const k = native.expire(this.gen * SLOTS + this.slot, last);
    this.timer = undefined; // fired
    if (k <= DEFERRED) {
      // Ref'd as the `timeout` timer was (that keeps the wait alive the same).
      this.timer = timers.setTimeout(onGrace, DEFERRED - k, this, h);
      if (!this.timerRef) this.timer.unref();
      return;
    }
    if (k >= KEPT) {
      // Granted before the expiry could cancel it, its wake not delivered
      // yet: the caller's grant, delivered here as a wake would (the other
      // backends keep a grant that beats the cancel of a timeout too).
      remove(this);
      const held = k >= KEPT_HELD;
      this.done(held ? GRANTED_HELD : GRANTED);
      const others = k - (held ? KEPT_HELD : KEPT);
      if (others !== 0) settle(others);
      return;
    }
    this.letGo();
    this.sem = undefined;
    remove(this);
    if (this.signal !== undefined) unlisten(this.signal, this);
    this.reject(timedOutError());
    // A timeout, on top of the cancel the expiry counted.
    native.recordTimeout(h);
    if (k !== 0) settle(k);
  }

  /**
   * Cancels the native request without settling anything: -1 if it was
   * settled already, else the number of outcomes to settle (waiters the
   * cancel completed by handing a partial grant on).
   */
  withdraw() {
    this.letGo(); // also when its semaphore was collected (then it is not found)
    if (lookup(this.slot) !== this) return -1;
    this.sem = undefined;
    remove(this);
    if (this.timer !== undefined) timers.clearTimeout(this.timer);
    if (this.signal !== undefined) unlisten(this.signal, this);
    // Removes the waiter and hands any partial grant on (a grant that arrived
    // but was not delivered yet is released).
    return native.cancel(this.gen * SLOTS + this.slot);
  }
}

// The longest delay setTimeout takes: Node fires a longer one after 1 ms
// (with a TimeoutOverflowWarning), so a longer `timeout` is waited for in
// steps of at most this.
const MAX_TIMER_MS = 0x7fffffff;

/** Arms `w`'s `timeout` timer for `ms` (re-armed in steps; ref'd as `ref` says). */
function armTimeout(w, ms, h, ref) {
  const step = Math.min(ms, MAX_TIMER_MS);
  w.timer = timers.setTimeout(onTimeout, step, w, ms - step, h);
  w.timerRef = ref;
  if (!ref) w.timer.unref();
}

function onTimeout(w, left, h) {
  if (left > 0) {
    // Still queued (a settled waiter cleared its timer): wait for the rest,
    // ref'd as the timer was (ref()/unref() may have changed it since).
    armTimeout(w, left, h, w.timerRef);
    return;
  }
  // The timer ran before the outcome was delivered (the request may have
  // been granted meanwhile: expire() then delivers the grant).
  w.expire(h);
}

/**
 * A Redis request's grace past its `timeout` ended with its outcome not
 * delivered yet: cancelled, unless it was granted meanwhile (its answer
 * came within the grace, its wake not run yet), which is the caller's (a
 * grant answered later is given back by the addon); a timeout on top of the
 * cancel the expiry counted.
 */
function onGrace(w, h) {
  w.timer = undefined; // fired
  w.expire(h, true);
}

/** Aborts `controller` with `r` (a lease lost before its watch began). */
function abortWith({ controller, r }) {
  controller.abort(r);
}

const dispose = Symbol.dispose ?? Symbol.for('nodejs.dispose');
const asyncDispose = Symbol.asyncDispose ?? Symbol.for('nodejs.asyncDispose');

/** The promise of an acquire granted at once (after `onGrant`, if any, has run). */
function granted(value, onGrant) {
  if (onGrant !== undefined) value = onGrant(value);
  return value === undefined ? RESOLVED : Promise.resolve(value);
}

/** A Redis releaser's `Symbol.asyncDispose`: releases, reporting a failure as a rejection. */
function redisAsyncDispose() {
  try {
    this();
    return RESOLVED;
  } catch (e) {
    return Promise.reject(e);
  }
}

/**
 * A releaser: a function that gives `n` permits back once; also disposable.
 * A Redis grant sets its `token` and `signal` (see Semaphore#redisGrant).
 */
function releaser(sem, n) {
  let done = false;
  const release = () => {
    if (done) return;
    done = true;
    sem.release(n);
  };
  release.permits = n;
  release.token = null;
  release[dispose] = release;
  return release;
}

// Share pins last 60 s (SHARE_PIN in src/lib.rs). One timer per thread drops
// the expired ones (and re-arms while pins are left); it never keeps the
// thread alive.
const SHARE_PIN_MS = 60_000;
let pinTimer;
function armPinTimer(ms) {
  if (pinTimer !== undefined) return;
  pinTimer = timers.setTimeout(expirePins, ms + 100);
  pinTimer.unref();
}
function expirePins() {
  pinTimer = undefined;
  const next = native.expirePins();
  if (next >= 0) armPinTimer(next);
}

// ---------------------------------------------------------------------------
// The shared handles of this thread (named and Redis semaphores), for
// disconnectOnSignals(): weakly held, so a handle nobody references is still
// collected (which ends its session too).

const liveHandles = new Set();
let liveSweepAt = 64;

function addLive(sem) {
  liveHandles.add(new WeakRef(sem));
  if (liveHandles.size < liveSweepAt) return;
  for (const r of liveHandles) if (r.deref() === undefined) liveHandles.delete(r);
  liveSweepAt = Math.max(64, liveHandles.size * 2);
}

const INSPECT = Symbol.for('nodejs.util.inspect.custom');

// Passed to constructors by attach() only: the next argument is a native handle
// (Semaphore) or a Semaphore (Mutex, RwLock).
const INTERNAL = Symbol('volt-sem internal');

// ---------------------------------------------------------------------------
// stats(): the seam's per-handle metrics (src/stats.rs), as a frozen object.

/** The upper bounds of the wait histogram's buckets, in seconds (Infinity last). */
const WAIT_BOUNDS = Object.freeze(native.waitBuckets());
/** Where the bucket counts start in native.metrics()'s array (src/stats.rs). */
const METRICS_HEAD = 13;

/**
 * The `q` quantile of a wait histogram, in seconds: the upper bound of the
 * bucket it falls in, capped at the longest wait (an over-estimate by at most
 * a factor of 2, as in Rust); 0 when nothing was recorded.
 */
function waitQuantile(counts, count, max, q) {
  if (typeof q !== 'number' || !(q >= 0 && q <= 1)) {
    throw rangeError(`volt-sem: a quantile is a number in 0..=1, got ${String(q)}`);
  }
  if (count === 0) return 0;
  const rank = Math.max(Math.ceil(q * count), 1);
  let seen = 0;
  for (let i = 0; i < counts.length; i++) {
    seen += counts[i];
    if (seen >= rank) return Math.min(WAIT_BOUNDS[i], max);
  }
  return max;
}

/**
 * The `Stats` of index.d.ts from native.metrics()'s numbers, plus `g` grants
 * of `p` permits the JS fast path took (at once: the first bucket).
 */
function makeStats(a, g, p) {
  const counts = a.slice(METRICS_HEAD);
  counts[0] += g;
  const count = a[10] + g;
  const max = a[12];
  const quantile = (q) => waitQuantile(counts, count, max, q);
  const wait = Object.freeze({
    count,
    sum: a[11],
    max,
    p50: quantile(0.5),
    p99: quantile(0.99),
    buckets: Object.freeze(counts.map((c, i) => Object.freeze({ le: WAIT_BOUNDS[i], count: c }))),
    quantile,
  });
  return Object.freeze({
    grants: a[0] + g,
    permitsGranted: a[1] + p,
    timeouts: a[2],
    cancels: a[3],
    leaseLosses: a[4],
    reclaimsSeen: a[5],
    available: a[6],
    held: a[7],
    queued: a[8],
    recording: a[9] === 1,
    wait,
  });
}

/**
 * The views of a semaphore the JS fast path works on (see src/view.rs): the
 * core's state word (`w`: a BigInt64Array of one; `w32`: an Int32Array of its
 * two halves, low half first), and the binding's `held`, `debt` counters (`c`:
 * a BigInt64Array of two; `c32`: their four halves). Every target the addon
 * makes views on is little-endian (it refuses big-endian ones), so index 0 of
 * an Int32Array is the low half of the 64-bit word at index 0.
 *
 * Why halves are enough: an operation on the low half alone equals the same
 * operation on the 64-bit word whenever it neither borrows from nor carries
 * into the high half. The 32-bit path only makes such transitions (a take
 * from a low half of at least `n << 2`, a give-back that leaves the low half
 * below 2^31), each by one compare-and-swap of the low half, which fails if
 * the low half changed (QUEUED and CLOSED are in it, so a set flag always
 * fails it). Whatever the high half holds, the 64-bit word then made exactly
 * the transition the core's own CAS would have. Anything else (a low half
 * at 2^31 or more, a borrow or carry, `n` of 2^29 or more) goes to the
 * 64-bit functions below, which decide on the whole word as before.
 *
 * `lo` is the low half as this thread last wrote it, and `last` the whole
 * word as the 64-bit path last wrote it: only guesses for the first
 * compare-and-swap (which fails on any other value and returns the real one),
 * never the basis of a decision to go native.
 *
 * A semaphore no other thread can reach (never shared: `atomic` false) is
 * only ever read and written by this thread, JavaScript and addon alike, one
 * after the other: its 32-bit path then reads and writes the halves with plain
 * element accesses, which V8 compiles inline, where each `Atomics` call is a
 * call (about 10 ns here). share() switches the view to `Atomics` before the
 * semaphore can reach another thread.
 */
class View {
  constructor(a, atomic) {
    /** Whether another thread may touch these words (see above). */
    this.atomic = atomic;
    this.w = a[0];
    this.c = a[1];
    this.w32 = new Int32Array(this.w.buffer, this.w.byteOffset, 2);
    this.c32 = new Int32Array(this.c.buffer, this.c.byteOffset, 4);
    this.lo = 0;
    /** The low half of `held` as this thread last wrote it (a guess too). */
    this.h = 0;
    this.last = 0n;
    /**
     * The word `last` was made from, by this thread's last 64-bit fast
     * operation: a take of `-k` permits (k < 0) or a give-back of `k` (k > 0;
     * 0: none).
     */
    this.back = 0n;
    this.k = 0;
    /**
     * The last fast attempt found the word queued, closed or short: go native
     * without trying (a failed attempt costs more than it saves under
     * contention) until a native acquire takes permits at once again.
     */
    this.skip = false;
    /**
     * Grants (and their permits) this fast path took without crossing into
     * the addon, which never sees them: stats() adds them to the core's.
     * Plain numbers, one writer (this thread): two increments per fast take.
     */
    this.g = 0;
    this.p = 0;
  }
}

/**
 * A Semaphore makes its fast-path views (two external ArrayBuffers: a native
 * call and ~2.5 us, 4x the cost of creating the semaphore) only once this many
 * of its operations went native: a short-lived semaphore never pays for them.
 */
const VIEW_AFTER = 16;

/**
 * The fast path's views of handle `h`, or undefined (the native path only).
 * `shared`: whether another thread may reach the semaphore.
 */
function viewOf(h, shared) {
  const a = native.view(h);
  return a === null ? undefined : new View(a, shared);
}

/**
 * Takes `n` permits if they are free and nobody is queued and the semaphore is
 * open: exactly the Rust core's try_take CAS. false: go native.
 */
function fastTake(v, n) {
  if (n > N_32) return fastTake64(v, n);
  if (!v.atomic) return takeAlone(v, n);
  const w = v.w32;
  const need = n << 2;
  let cur = v.lo;
  let fresh = false;
  for (;;) {
    // QUEUED means 0 available anyway (invariant 2): never barge past a waiter.
    // A low half of 2^31 or more reads negative here, so `cur < need` too.
    if ((cur & FLAGS_32) !== 0 || cur < need) {
      if (!fresh) {
        cur = Atomics.load(w, 0);
        fresh = true;
        continue;
      }
      // Queued or closed, or short with nothing in the high half: native.
      if ((cur & FLAGS_32) !== 0 || (cur >= 0 && Atomics.load(w, 1) === 0)) {
        v.skip = true;
        return false;
      }
      return fastTake64(v, n); // a borrow from the high half, or a big low half
    }
    const seen = Atomics.compareExchange(w, 0, cur, cur - need);
    if (seen === cur) break;
    cur = seen;
    fresh = true;
  }
  v.lo = cur - need;
  addHeld(v, n);
  v.g++; // for stats(): the core counts only what it grants
  v.p += n;
  return true;
}

/**
 * fastTake's 32-bit path on a semaphore only this thread reaches (see View):
 * the same decisions, on plain reads and writes of the halves.
 */
function takeAlone(v, n) {
  const w = v.w32;
  const need = n << 2;
  const cur = w[0];
  if ((cur & FLAGS_32) !== 0 || cur < need) {
    if ((cur & FLAGS_32) !== 0 || (cur >= 0 && w[1] === 0)) {
      v.skip = true;
      return false;
    }
    return fastTake64(v, n); // a borrow from the high half, or a big low half
  }
  w[0] = cur - need;
  v.lo = cur - need;
  const c = v.c32;
  const h = c[0];
  if (h >= 0 && h <= LOW_MAX - n) {
    c[0] = h + n;
    v.h = h + n;
  } else Atomics.add(v.c, 0, BigInt(n));
  v.g++;
  v.p += n;
  return true;
}

/** fastTake on the whole 64-bit word (the values the 32-bit path leaves). */
function fastTake64(v, n) {
  const w = v.w;
  let bn = 1n;
  let need = 4n;
  if (n !== 1) {
    bn = BigInt(n);
    need = bn << 2n;
  }
  let cur = v.last;
  let fresh = false;
  for (;;) {
    if ((cur & FLAGS) !== 0n || cur < need) {
      if (fresh) {
        v.skip = true;
        return false;
      }
      cur = Atomics.load(w, 0);
      fresh = true;
      continue;
    }
    // The word this take leads to: when this thread's last operation was the
    // give-back of as many permits, the word it started from (no BigInt made).
    const next = v.k === n && cur === v.last ? v.back : cur - need;
    const seen = Atomics.compareExchange(w, 0, cur, next);
    if (seen === cur) {
      v.last = next;
      v.back = cur;
      v.k = -n;
      break;
    }
    cur = seen;
    fresh = true;
  }
  Atomics.add(v.c, 0, bn); // held, as the native path counts it
  v.g++;
  v.p += n;
  return true;
}

/**
 * held += n, as the native path counts it: by a CAS of the low half from this
 * thread's last guess (no load when no other thread counted meanwhile), as
 * long as it does not carry into the high half; else on the 64-bit word.
 */
function addHeld(v, n) {
  const c = v.c32;
  let h = v.h;
  let fresh = false;
  for (;;) {
    if (h < 0 || h > LOW_MAX - n) {
      if (fresh) break;
      h = Atomics.load(c, 0);
      fresh = true;
      continue;
    }
    const seen = Atomics.compareExchange(c, 0, h, h + n);
    if (seen === h) {
      v.h = h + n;
      return;
    }
    h = seen;
  }
  Atomics.add(v.c, 0, BigInt(n));
}

/** held -= min(held, n), as the native path does (32 bits when nothing borrows). */
function subHeld(v, n) {
  const c = v.c32;
  let h = v.h;
  let fresh = false;
  for (;;) {
    if (h < n) {
      // a borrow, or a low half of 2^31 or more (negative)
      if (fresh) break;
      h = Atomics.load(c, 0);
      fresh = true;
      continue;
    }
    const seen = Atomics.compareExchange(c, 0, h, h - n);
    if (seen === h) {
      v.h = h - n;
      return;
    }
    h = seen;
  }
  const bn = BigInt(n);
  let b = Atomics.load(v.c, 0);
  for (;;) {
    const seen = Atomics.compareExchange(v.c, 0, b, b > bn ? b - bn : 0n);
    if (seen === b) return;
    b = seen;
  }
}

/**
 * Gives `n` permits back if nobody is queued, the semaphore is open, no
 * removal debt is owed and this thread has no grant to confirm first:
 * exactly the Rust core's lock-free release CAS. false: go native.
 */
function fastGive(v, n, giveBack) {
  if (runtime.unconfirmed !== 0) return false;
  const c = v.c32;
  // The debt is paid natively. It is stored as `debt << 1 | (debt != 0)`
  // (src/debt.rs): its low half is 0 exactly when no debt is owed.
  if (!v.atomic) {
    if (c[2] !== 0) return false;
    if (n > N_32) return fastGive64(v, n, giveBack);
    return giveAlone(v, n, giveBack);
  }
  if (Atomics.load(c, 2) !== 0) return false;
  if (n > N_32) return fastGive64(v, n, giveBack);
  const w = v.w32;
  const add = n << 2;
  const room = GIVE_TOP - add; // the largest low half this give-back may start from
  let cur = v.lo;
  let fresh = false;
  for (;;) {
    if ((cur & FLAGS_32) !== 0 || cur < 0 || cur > room) {
      if (!fresh) {
        cur = Atomics.load(w, 0);
        fresh = true;
        continue;
      }
      if ((cur & FLAGS_32) !== 0) {
        v.skip = true;
        return false;
      }
      return fastGive64(v, n, giveBack); // a carry into the high half
    }
    const seen = Atomics.compareExchange(w, 0, cur, cur + add);
    if (seen === cur) break;
    cur = seen;
    fresh = true;
  }
  v.lo = cur + add;
  if (giveBack) subHeld(v, n);
  return true;
}

/**
 * fastGive's 32-bit path on a semaphore only this thread reaches (see View):
 * the same decisions, on plain reads and writes of the halves.
 */
function giveAlone(v, n, giveBack) {
  const w = v.w32;
  const add = n << 2;
  const cur = w[0];
  if ((cur & FLAGS_32) !== 0 || cur < 0 || cur > GIVE_TOP - add) {
    if ((cur & FLAGS_32) !== 0) {
      v.skip = true;
      return false;
    }
    return fastGive64(v, n, giveBack); // a carry into the high half
  }
  w[0] = cur + add;
  v.lo = cur + add;
  if (giveBack) {
    const c = v.c32;
    const h = c[0];
    if (h >= n) {
      c[0] = h - n;
      v.h = h - n;
    } else subHeld(v, n); // a borrow, or a low half of 2^31 or more
  }
  return true;
}

/** fastGive on the whole 64-bit word (the values the 32-bit path leaves). */
function fastGive64(v, n, giveBack) {
  const w = v.w;
  let bn = 1n;
  let add = 4n;
  let limit = LIMIT_1;
  if (n !== 1) {
    bn = BigInt(n);
    add = bn << 2n;
    limit = (MAX_BIG - bn + 1n) << 2n; // available + n > MAX_PERMITS from here on
  }
  let cur = v.last;
  let fresh = false;
  for (;;) {
    if ((cur & FLAGS) !== 0n || cur >= limit) {
      if (fresh) {
        v.skip = true;
        return false;
      }
      cur = Atomics.load(w, 0);
      fresh = true;
      continue;
    }
    const next = v.k === -n && cur === v.last ? v.back : cur + add;
    const seen = Atomics.compareExchange(w, 0, cur, next);
    if (seen === cur) {
      v.last = next;
      v.back = cur;
      v.k = n;
      break;
    }
    cur = seen;
    fresh = true;
  }
  if (giveBack) subHeld(v, n);
  return true;
}

// `acquirePermit` with a grant hook, for Mutex (set by Semaphore's static block).
let acquireOwned;

class Semaphore {
  #h;
  /** The JS fast path's views (see viewOf), or undefined (not yet, or unsupported). */
  #v = undefined;
  /** Operations that went native (the views are made at VIEW_AFTER). */
  #slow = 0;
  /** Whether share() or attach() made it reachable from other threads. */
  #shared = false;
  /** slot -> pending waiter record of this object, an array indexed by slot (created on first wait). */
  #pending = undefined;
  /** WeakRef to #pending, what the runtime table holds for a private semaphore. */
  #weak = undefined;
  /** Whether its waiters keep the thread alive (shared semaphores only). */
  #ref = true;
  /** Whether it is a named semaphore shared by processes (Semaphore.open). */
  #named = false;
  /** { n }: keep-alives its waiters hold (see hold()), made with #weak. */
  #alive = undefined;
  /**
   * Whether disconnect() ended this Redis semaphore's object (set at once:
   * its session ends off the event loop). A named handle's end is the
   * native handle's own (the seam's disconnect), seen by every object and
   * thread that attach()ed it: its calls fail natively.
   */
  #disconnected = false;
  /** Whether it is stored in Redis (Semaphore.connect). */
  #redis = false;
  /**
   * Redis: the latest session's lease signal (session 0: none granted yet),
   * and the numbers of this object's lease watches (see src/lease.rs).
   */
  #lease = undefined;
  #watches = undefined;

  /**
   * @param {number} permits initial permits, an integer in 0..=MAX_PERMITS
   */
  constructor(permits) {
    if (permits === INTERNAL) {
      const h = arguments[1];
      this.#h = h;
      this.#shared = true;
      const kind = native.kind(h); // 0 local, 1 named, 2 Redis
      if (kind !== 0) {
        this.#named = kind === 1;
        this.#redis = kind === 2;
        if (this.#redis) {
          this.#lease = { session: 0, controller: new AbortController() };
          this.#watches = [];
          redisCollected.register(this, this.#watches);
        }
        addLive(this);
        // Its state is in the shared segment or in Redis: the JS fast path
        // never applies (native.view would say so), so never ask for the views.
        this.#slow = VIEW_AFTER;
      }
      return;
    }
    checkCount(permits, 'permits');
    const h = native.create(permits);
    if (h === null) throw rangeError(`volt-sem: cannot create a semaphore of ${permits} permits`);
    this.#h = h;
  }

  static get MAX_PERMITS() {
    return MAX_PERMITS;
  }

  acquire(n = 1, options) {
    return this.#acquire(n, options, undefined);
  }

  /**
   * Like acquire(), but resolves to a releaser: a function that releases the
   * `n` permits once (later calls do nothing), also usable with `using`.
   */
  acquirePermit(n = 1, options) {
    return this.#acquire(n, options, releaser(this, n));
  }

  static {
    acquireOwned = (sem, options, onGrant) => sem.#acquire(1, options, releaser(sem, 1), onGrant);
  }

  // `onGrant(value)`, if given, runs synchronously when the grant is decided
  // here (before any promise reaction), and its result is what the promise
  // resolves to.
  #acquire(n, options, value, onGrant) {
    if (n !== 1) {
      try {
        checkCount(n, 'n');
      } catch (e) {
        return Promise.reject(e);
      }
    }
    let signal;
    let timeout;
    if (options !== undefined && options !== null) {
      try {
        checkOptionNames(options, ACQUIRE_OPTIONS);
        signal = checkSignal(options.signal);
        if (options.timeout !== undefined) timeout = checkTimeout(options.timeout);
      } catch (e) {
        return Promise.reject(e);
      }
      if (signal !== undefined && signal.aborted) return Promise.reject(signal.reason);
      if (timeout === 0) return this.#acquireOnce(n, value, onGrant);
    }
    const v = this.#v;
    if (v !== undefined) {
      if (!v.skip && fastTake(v, n)) return granted(value, onGrant);
    } else if (++this.#slow === VIEW_AFTER) this.#v = viewOf(this.#h, this.#shared);
    if (this.#disconnected) return Promise.reject(this.#gone());
    let r;
    try {
      // No count for one permit (the addon reads none then). Throws for a
      // named or Redis semaphore's failures.
      r = result(n === 1 ? nativeAcquire(this.#h) : nativeAcquire(this.#h, n));
    } catch (e) {
      return Promise.reject(e);
    }
    if (r === 0) {
      if (v !== undefined) v.skip = false; // taken at once: uncontended again
      if (this.#redis) value = this.#redisGrant(native.extra(-1, false), value);
      return granted(value, onGrant);
    }
    if (r >= SLOT_BASE) {
      const slot = r - SLOT_BASE;
      const gen = lastGen();
      if (this.#redis) {
        // The grant's token and session wait in the extras, by slot.
        const then = onGrant;
        onGrant = (x) => {
          x = this.#redisGrant(native.extra(slot, false), x);
          return then === undefined ? x : then(x);
        };
      }
      return this.#enqueue(slot, gen, signal, timeout, value, onGrant);
    }
    if (r === 2) return Promise.reject(closedError());
    return Promise.reject(tooManyError(n, this.totalPermits));
  }

  #enqueue(slot, gen, signal, timeout, value, onGrant) {
    const promise = new Promise(capture);
    const resolve = captured.resolve;
    const reject = captured.reject;
    // Not kept here: they hold the promise, and through its reactions
    // possibly a private semaphore that must stay collectable.
    captured.resolve = captured.reject = undefined;
    let pending = this.#pending;
    if (pending === undefined) pending = this.#pending = [];
    const w = new Waiter(slot, gen, pending, signal, value, resolve, reject, onGrant);
    pending[w.slot] = w;
    if (this.#shared) {
      table[w.slot] = w;
    } else {
      if (this.#weak === undefined) {
        this.#weak = new WeakRef(pending);
        this.#alive = { n: 0 };
        abandoned.register(this, { h: this.#h, alive: this.#alive });
      }
      table[w.slot] = this.#weak;
    }
    // A waiter that can still end by itself keeps its private semaphore from
    // being collected until it ended: a collected semaphore's waiters are
    // swept (see js_abandon) and their slots reused, after which its timeout
    // or abort would find another request in the slot and never settle it.
    // Held through the timer and the signal only: a waiter with neither, that
    // nobody can serve, is collected with its semaphore.
    if (!this.#shared && (signal !== undefined || timeout !== undefined)) w.sem = this;
    if (signal !== undefined) {
      listen(signal, w);
      // Only this thread can grant it: it keeps the thread alive while its
      // signal may still end it (a shared semaphore's waiters are ref'd natively).
      if (!this.#shared && this.#ref) w.keep(this.#alive);
    }
    if (timeout !== undefined) {
      // A real timer (fake timers must not fire it); it keeps the thread alive
      // until the deadline unless this object is unref()'d.
      armTimeout(w, timeout, this.#h, this.#ref);
    }
    return promise;
  }

  /**
   * A Redis grant (`[token, session]`, from the extras): watches a new
   * session, and gives a releaser its token and lease signal.
   */
  #redisGrant(info, value) {
    const session = info === null ? 0 : info[1];
    if (session !== 0 && session !== this.#lease.session) this.#watch(session);
    if (typeof value === 'function' && value.permits !== undefined) {
      value.token = info === null ? 0 : info[0];
      value.signal = this.#lease.controller.signal;
      // `await using` and the old Redis releaser's asyncDispose keep working.
      value[asyncDispose] = redisAsyncDispose;
    }
    return value;
  }

  /** Watches Redis `session` (its loss aborts its lease signal). */
  #watch(session) {
    const lease = this.#lease;
    if (lease.session === 0) lease.session = session;
    else this.#lease = { session, controller: new AbortController() };
    const { controller } = this.#lease;
    const r = native.watch(this.#h, session);
    if (typeof r === 'number') {
      this.#watches.push(r);
      runtime.leases.set(r, (err) => controller.abort(err));
    } else if (r !== null) runtime.afterSettle(abortWith, { controller, r }); // user code: not inside a settle
  }

  /**
   * `timeout: 0`: one attempt, as a zero timeout is in Rust, C and Python:
   * the permits if free now (on Redis, after one round trip), else
   * `ERR_VOLT_TIMED_OUT` (counted in `stats().timeouts`); nothing is queued.
   */
  #acquireOnce(n, value, onGrant) {
    const none = () => {
      native.recordTimeout(this.#h);
      return timedOutError();
    };
    try {
      if (this.#disconnected) throw this.#gone();
      if (this.#redis) {
        return this.#tryRedis(n, value).then((x) => {
          if (x === null) throw none();
          return onGrant === undefined ? x : onGrant(x);
        });
      }
      return this.tryAcquire(n) ? granted(value, onGrant) : Promise.reject(none());
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /** A Redis tryAcquire (a round trip, off the event loop): the value, or null if not taken. */
  #tryRedis(n, value, onGrant) {
    return native.tryAcquireAsync(this.#h, this.#ref, n).then((info) => {
      if (info === null) return null;
      value = this.#redisGrant(info, value);
      return onGrant === undefined ? value : onGrant(value);
    });
  }

  /** The error of a call on this Redis object after its disconnect(). */
  #gone() {
    return disconnectedError();
  }

  /** Whether disconnect() ended this object's handle (named: through any of its objects). */
  #isDisconnected() {
    return this.#disconnected || (this.#named && native.isDisconnected(this.#h));
  }

  tryAcquire(n = 1) {
    if (n !== 1) checkCount(n, 'n');
    if (this.#redis) {
      throw invalidState(
        'tryAcquire() of a Redis semaphore would wait for Redis on the event loop: use await sem.tryAcquirePermit(n)',
      );
    }
    const v = this.#v;
    if (v !== undefined) {
      if (!v.skip && fastTake(v, n)) return true;
    } else if (++this.#slow === VIEW_AFTER) this.#v = viewOf(this.#h, this.#shared);
    const r = native.tryAcquire(this.#h, n);
    if (r === 0) {
      if (v !== undefined) v.skip = false;
      return true;
    }
    if (r === 2) throw closedError(); // as in Rust, C and Python: closed is not "busy"
    if (r === 3) throw tooManyError(n, this.totalPermits);
    return false;
  }

  /**
   * Like tryAcquire(), on every backend, as a promise: resolves to a releaser
   * (with the grant's token on a Redis semaphore), or null if the permits were
   * not taken. The form for a Redis semaphore, whose try is a round trip.
   */
  tryAcquirePermit(n = 1) {
    try {
      if (n !== 1) checkCount(n, 'n');
      if (this.#disconnected) throw this.#gone();
      if (!this.#redis) return Promise.resolve(this.tryAcquire(n) ? releaser(this, n) : null);
    } catch (e) {
      return Promise.reject(e);
    }
    return this.#tryRedis(n, releaser(this, n));
  }

  release(n = 1) {
    if (n !== 1) checkCount(n, 'n');
    const v = this.#v;
    if (v !== undefined) {
      if (!v.skip && fastGive(v, n, true)) return;
    } else if (++this.#slow === VIEW_AFTER) this.#v = viewOf(this.#h, this.#shared);
    if (this.#disconnected) throw this.#gone();
    const k = result(n === 1 ? nativeRelease(this.#h) : nativeRelease(this.#h, n));
    if (k !== 0) {
      if (k < 0) {
        throw rangeError(`volt-sem: releasing ${n} permits would exceed the maximum of ${MAX_PERMITS}`);
      }
      settle(k, this.#pending);
    }
  }

  get availablePermits() {
    if (this.#redis) {
      throw invalidState(
        'availablePermits of a Redis semaphore would wait for Redis on the event loop: use (await sem.census()).available',
      );
    }
    return native.available(this.#h);
  }

  /** The fixed total of a named or Redis semaphore; null for a local one. */
  get totalPermits() {
    return native.total(this.#h);
  }

  /** The name of a named or Redis semaphore; null for a local one. */
  get name() {
    return native.name(this.#h);
  }

  /**
   * Adds `n` permits to the total (to the waiters first, like release(n), but
   * not counted as held permits given back), for code that resizes a limit
   * (p-limit's `concurrency` setter, async-mutex's setValue).
   */
  addPermits(n) {
    checkCount(n, 'n');
    const v = this.#v;
    if (v !== undefined) {
      if (!v.skip && fastGive(v, n, false)) return;
    } else if (++this.#slow === VIEW_AFTER) this.#v = viewOf(this.#h, this.#shared);
    const k = result(native.release(this.#h, n, true)); // not a give-back: heldPermits stays
    if (k !== 0) {
      if (k < 0) throw rangeError(`volt-sem: adding ${n} permits would exceed the maximum of ${MAX_PERMITS}`);
      settle(k);
    }
  }

  /**
   * Takes `n` permits out of the total: the available ones at once, the rest
   * from the next permits released (in any thread), before any waiter is
   * served, so the permits held never exceed the new total from now on.
   * Queued acquires keep their FIFO order. Permits already held are not
   * revoked; a request larger than the new total waits until it is grown again.
   */
  removePermits(n) {
    checkCount(n, 'n');
    if (native.removePermits(this.#h, n) !== 0) {
      throw rangeError(`volt-sem: cannot remove ${n} more permits (at most ${MAX_PERMITS} may be owed)`);
    }
  }

  /** Permits removePermits() still has to take out of the next releases. */
  get pendingRemoval() {
    return native.debt(this.#h);
  }

  /**
   * Permits acquired and not released yet, in every thread (for metrics). A
   * release gives back held permits first; releasing more adds to the total.
   */
  get heldPermits() {
    // A named semaphore: what this process holds, through every object and
    // thread (the process's record in the segment); a Redis one: what this
    // object's session holds.
    return this.#named || this.#redis ? native.processHeld(this.#h) : native.held(this.#h);
  }

  /** Acquires queued on this semaphore, in every thread. */
  get pendingCount() {
    return native.pending(this.#h);
  }

  /** Whether no permit is available right now (someone holds or waits for them all). */
  isLocked() {
    return this.availablePermits === 0;
  }

  /**
   * Resolves when `n` permits could be taken, in FIFO order with the other
   * acquires, without taking them (an acquire immediately followed by a release).
   */
  async waitForUnlock(n = 1, options) {
    await this.#acquire(n, options, undefined);
    this.release(n);
  }

  /**
   * Rejects every acquire still queued through this Semaphore object (in
   * this thread) with `reason` (default: an Error with code
   * 'ERR_VOLT_CANCELLED'). Unlike close(), the semaphore stays usable.
   * Returns how many were rejected.
   */
  cancel(reason = cancelledError()) {
    const pending = this.#pending;
    if (pending === undefined) return 0;
    const ws = pending.filter((w) => w !== undefined).sort((a, b) => a.seq - b.seq);
    if (ws.length === 0) return 0;
    // Withdraw from the tail: only the head can hold a partial grant, and by
    // the time it is withdrawn none of these waiters is left to receive it.
    const gone = [];
    let k = 0;
    for (let i = ws.length - 1; i >= 0; i--) {
      const r = ws[i].withdraw();
      if (r < 0) continue;
      gone.push(ws[i]);
      if (r > 0) settle(r); // waiters of other objects completed by a hand-off
      k++;
    }
    for (let i = gone.length - 1; i >= 0; i--) gone[i].reject(reason);
    return k;
  }

  /**
   * Waiters queued through this object keep the thread alive (the default,
   * for a shared semaphore; a private one never does). Returns `this`.
   */
  ref() {
    if (!this.#ref) {
      this.#ref = true;
      native.setRef(this.#h, true);
      this.#setRef(true);
    }
    return this;
  }

  /** Applies ref()/unref() to the waiters already queued through this object. */
  #setRef(on) {
    const pending = this.#pending;
    if (pending === undefined) return;
    for (const w of pending) {
      if (w === undefined) continue;
      if (w.timer !== undefined) {
        w.timerRef = on;
        if (on) w.timer.ref();
        else w.timer.unref();
      }
      if (!on) w.letGo();
      else if (w.signal !== undefined && !this.#shared) w.keep(this.#alive);
    }
  }

  /**
   * Waiters queued through this object (now or later) no longer keep the
   * thread alive, like `timer.unref()`. Returns `this`.
   */
  unref() {
    if (this.#ref) {
      this.#ref = false;
      native.setRef(this.#h, false);
      this.#setRef(false);
    }
    return this;
  }

  hasRef() {
    return this.#ref;
  }

  /**
   * Closes the semaphore (every thread's waiters reject). Refused on a named
   * semaphore, where that would close it for every process: see
   * closeForEveryone() and disconnect().
   */
  close() {
    if (this.#named) throw sharedCloseError('a named semaphore (Semaphore.open)');
    if (this.#redis) throw sharedCloseError('a Redis semaphore (Semaphore.connect)');
    this.closeForEveryone();
  }

  /**
   * Closes the semaphore for every thread and, if named, every process; if
   * stored in Redis, every client (a round trip: the promise says when).
   */
  closeForEveryone() {
    if (this.#redis) {
      if (this.#disconnected) return Promise.reject(this.#gone());
      return native.closeAsync(this.#h, this.#ref).then(() => undefined);
    }
    let k;
    try {
      k = native.close(this.#h); // throws once a named handle was disconnected
    } catch (e) {
      return Promise.reject(e);
    }
    if (k > 0) settle(k);
    return RESOLVED;
  }

  /**
   * Who holds the permits and who waits, in queue order (every backend; off
   * the event loop). See index.d.ts.
   */
  inspect() {
    if (this.#disconnected) return Promise.reject(this.#gone());
    return native.inspect(this.#h, this.#ref);
  }

  /**
   * This object's metrics (counters, gauges, wait histogram), synchronously:
   * never blocks, no I/O, works after disconnect() (the last tally). See
   * index.d.ts.
   */
  stats() {
    const v = this.#v;
    const a = native.metrics(this.#h);
    return v === undefined ? makeStats(a, 0, 0) : makeStats(a, v.g, v.p);
  }

  /**
   * Changes the total of a named or Redis semaphore to `n` permits, for
   * every process and client (off the event loop). See index.d.ts.
   */
  setTotal(n) {
    if (!this.#named && !this.#redis) throw invalidState(sharedOnly('setTotal()'));
    if (this.#disconnected) return Promise.reject(this.#gone());
    try {
      checkNumber(n, 'n');
      if (!Number.isInteger(n) || n < 1 || n > MAX_PERMITS) {
        throw rangeError(`volt-sem: n must be an integer in 1..=${MAX_PERMITS}, got ${String(n)}`);
      }
    } catch (e) {
      return Promise.reject(e);
    }
    return native.setTotal(this.#h, this.#ref, n).then(() => undefined);
  }

  /**
   * Undoes closeForEveryone() of a named or Redis semaphore, for every
   * process and client (off the event loop). See index.d.ts.
   */
  reopen() {
    if (!this.#named && !this.#redis) throw invalidState(sharedOnly('reopen()'));
    if (this.#disconnected) return Promise.reject(this.#gone());
    return native.reopen(this.#h, this.#ref).then(() => undefined);
  }

  /** A Redis semaphore's conservation sums, read in one script (a round trip). */
  census() {
    if (!this.#redis) throw invalidState('census() is for a Redis semaphore (Semaphore.connect)');
    if (this.#disconnected) return Promise.reject(this.#gone());
    return native.census(this.#h, this.#ref);
  }

  /**
   * A Redis semaphore's: aborted (with ERR_VOLT_LEASE_EXPIRED or
   * ERR_VOLT_STATE_LOST as its reason) when the session holding this
   * object's grants is lost; a grant in a later session gets a new one.
   */
  get leaseSignal() {
    if (!this.#redis) throw invalidState('leaseSignal is for a Redis semaphore (Semaphore.connect)');
    return this.#lease.controller.signal;
  }

  /** Whether the session holding this Redis semaphore's grants was lost. */
  isLeaseLost() {
    return this.leaseSignal.aborted;
  }

  /** Resolves with the error once the session holding this Redis semaphore's grants is lost. */
  leaseLost() {
    const signal = this.leaseSignal;
    if (signal.aborted) return Promise.resolve(signal.reason);
    // One promise per session, shared by every call: a listener per call
    // stayed on the signal until the session was lost, so a program racing
    // each job against leaseLost() grew the signal's listeners without bound.
    const lease = this.#lease;
    lease.lost ??= new Promise((resolve) => addListener.call(signal, 'abort', () => resolve(signal.reason), { once: true }));
    return lease.lost;
  }

  /**
   * Ends this handle of a named semaphore (every object attach()ed from it,
   * in any thread), as C's volt_sem_disconnect does: its queued acquires
   * reject with ERR_VOLT_CLOSED ("disconnected"), what was acquired through
   * it and not released goes back at once, and it refuses every later
   * acquire or release. Another open() of the name, and every other
   * process, go on. A Redis object's session ends in Redis.
   */
  disconnect() {
    if (!this.#named && !this.#redis) {
      throw invalidState(
        'disconnect() is for a named or Redis semaphore (Semaphore.open, Semaphore.connect); close() closes a local one',
      );
    }
    if (this.#redis) {
      if (this.#disconnected) return RESOLVED;
      // Its queued acquires leave at once; the session ends in Redis (what
      // it holds goes back) off the event loop.
      this.cancel(disconnectedError());
      this.#disconnected = true;
      native.unwatch(this.#h);
      for (const id of this.#watches.splice(0)) runtime.leases.delete(id);
      return native.disconnectAsync(this.#h, this.#ref).then(() => undefined);
    }
    // The seam's disconnect (idempotent): its queued requests fail through
    // their wakes, what it holds goes back now.
    try {
      native.disconnect(this.#h);
    } catch (e) {
      return Promise.reject(e);
    }
    return RESOLVED;
  }

  [asyncDispose]() {
    try {
      return this.disconnect();
    } catch (e) {
      return Promise.reject(e);
    }
  }

  get closed() {
    return native.isClosed(this.#h);
  }

  // A named or Redis one says whether this object's session is live
  // (disconnect() ends it; a Redis lease may be lost). Never a Redis URL (it
  // may carry a password).
  [INSPECT]() {
    const closed = this.closed ? ', closed: true' : '';
    if (this.#redis) {
      const session = this.#disconnected ? 'disconnected' : this.#lease.controller.signal.aborted ? 'lease lost' : 'live';
      return (
        `Semaphore { name: ${inspect(this.name)}, totalPermits: ${this.totalPermits}, session: '${session}', ` +
        `held: ${this.heldPermits}, pending: ${this.pendingCount}${closed} }`
      );
    }
    const counts = `available: ${this.availablePermits}, pending: ${this.pendingCount}${closed}`;
    if (!this.#named) return `Semaphore { ${counts} }`;
    const session = this.#isDisconnected() ? 'disconnected' : 'live';
    return `Semaphore { name: ${inspect(this.name)}, totalPermits: ${this.totalPermits}, session: '${session}', ${counts} }`;
  }

  toString() {
    return this[INSPECT]();
  }

  /** A named or Redis semaphore's name and total (never a URL); `{}` for a local one. */
  toJSON() {
    return this.#named || this.#redis ? { name: this.name, totalPermits: this.totalPermits } : {};
  }

  /**
   * Acquires `n` permits, runs `fn(token)` (null but on Redis), releases them
   * even if it throws. What `fn` did decides the outcome, not the release
   * after it: if `fn` threw (or its promise rejected), that error, whatever
   * the release met; if `fn` returned and this object was disconnected
   * meanwhile (disconnect(), disconnectOnSignals()), `fn`'s value: the
   * disconnect gave the permits back, so there is nothing left to release.
   * Otherwise a release that fails rejects (a Redis lease lost while `fn`
   * ran: ERR_VOLT_LEASE_EXPIRED, for `fn` did not hold the permits to the
   * end). Python's `async with sem.acquire(n)` does the same.
   */
  async runExclusive(fn, n = 1, options) {
    if (typeof fn !== 'function') throw typeError('volt-sem: runExclusive needs a function');
    let release;
    if (this.#redis) {
      release = await this.acquirePermit(n, options);
    } else {
      await this.acquire(n, options);
      release = () => this.release(n);
    }
    let value;
    try {
      value = await fn(this.#redis ? release.token : null);
    } catch (e) {
      try {
        release();
      } catch {
        // fn's error is the one to report (the release's follows from the
        // same disconnect or lost lease, if any).
      }
      throw e;
    }
    try {
      release();
    } catch (e) {
      if (!this.#isDisconnected()) throw e;
    }
    return value;
  }

  share() {
    if (this.#redis) throw invalidState('share() of a Redis semaphore: connect in each thread (each has its own session)');
    const id = native.share(this.#h);
    armPinTimer(SHARE_PIN_MS);
    if (!this.#shared) {
      this.#shared = true;
      // From now on another thread may touch its words: Atomics only.
      if (this.#v !== undefined) this.#v.atomic = true;
      // Its waiters may now be granted by other threads: hold them strongly.
      if (this.#pending !== undefined) for (const w of this.#pending) if (w !== undefined) table[w.slot] = w;
    }
    return { [SHARE_TAG]: 1, kind: 'Semaphore', id };
  }

  static attach(value) {
    return new Semaphore(INTERNAL, attachHandle(value, 'Semaphore'));
  }

  /**
   * Opens (creating it if needed) the semaphore `name` of `permits` permits
   * shared by every process of this machine that opens that name (Linux; see
   * the README's "One limit across processes").
   */
  static open(name, permits, options) {
    checkName(name, 'open');
    checkTotal(permits);
    let flags = 0;
    let mode = 0o600;
    let label = null;
    if (options !== undefined && options !== null) {
      if (typeof options !== 'object') throw typeError('volt-sem: Semaphore.open() options must be an object');
      checkOptionNames(options, OPEN_OPTIONS);
      const { createOnly = false, attachOnly = false } = options;
      if (typeof createOnly !== 'boolean' || typeof attachOnly !== 'boolean') {
        throw typeError('volt-sem: options.createOnly and options.attachOnly must be booleans');
      }
      if (createOnly && attachOnly) {
        throw typeError('volt-sem: options.createOnly and options.attachOnly exclude each other');
      }
      const { acceptForeignOwner = false } = options;
      if (typeof acceptForeignOwner !== 'boolean') {
        throw typeError('volt-sem: options.acceptForeignOwner must be a boolean');
      }
      flags =
        (createOnly ? OPEN_CREATE_ONLY : 0) |
        (attachOnly ? OPEN_ATTACH_ONLY : 0) |
        (acceptForeignOwner ? OPEN_ACCEPT_FOREIGN_OWNER : 0) |
        (checkResize(options) ? OPEN_RESIZE : 0);
      if (options.mode !== undefined) {
        mode = options.mode;
        checkNumber(mode, 'options.mode');
        if (!Number.isInteger(mode) || mode < 0 || mode > 0o777) {
          throw rangeError(`volt-sem: options.mode must be an integer in 0..=0o777, got ${String(mode)}`);
        }
      }
      label = checkLabel(options);
    }
    return new Semaphore(INTERNAL, native.open(name, permits, flags, mode, label));
  }

  /**
   * Removes the name of a named semaphore: processes that opened it keep
   * using it; the next open() of the name creates a new one.
   */
  static unlink(name) {
    checkName(name, 'unlink');
    native.unlink(name);
  }

  /**
   * Connects to the semaphore `name` of `permits` permits stored in the Redis
   * at `url` (see index.d.ts and the README's "Across machines (Redis)"):
   * resolves to a Semaphore. The connect runs off the event loop.
   */
  static connect(url, name, permits, options) {
    try {
      checkUrlName(url, name, 'connect');
      checkTotal(permits);
      const opts = connectOptions(options, 'connect');
      const label = checkLabel(options);
      const resize = checkResize(options);
      const attachOnly = checkAttachOnly(options);
      return native
        .connect(url, name, permits, ...opts, label, resize, attachOnly, true)
        .then((h) => new Semaphore(INTERNAL, h));
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /**
   * Deletes the Redis semaphore `name` (its keys under `options.prefix`; the
   * connect options apply, the lease and the label do not): rejects with
   * `ERR_VOLT_IN_USE` while it has a live session, `ERR_VOLT_NOT_FOUND` if
   * there is none.
   */
  static deleteRedis(url, name, options) {
    try {
      checkUrlName(url, name, 'deleteRedis');
      return native.deleteRedis(url, name, ...connectOptions(options, 'deleteRedis')).then(() => undefined);
    } catch (e) {
      return Promise.reject(e);
    }
  }
}

// Semaphore.connect() options.

function checkUrlName(url, name, what) {
  if (typeof url !== 'string') throw typeError(`volt-sem: Semaphore.${what}() needs a URL string`);
  checkName(name, what);
}

/**
 * The native arguments of connect options: lease, prefix, connectTimeout,
 * commandTimeout, cluster, tlsCaFile, tlsCert, tlsKey, minReplicas,
 * minReplicasTimeout (src/connect.rs).
 */
function connectOptions(options, what) {
  const o = [10_000, 'volt-sem', 5_000, 5_000, false, null, null, null, 0, 0];
  if (options === undefined || options === null) return o;
  if (typeof options !== 'object') throw typeError(`volt-sem: Semaphore.${what}() options must be an object`);
  checkOptionNames(options, CONNECT_OPTIONS);
  o[0] = checkMs(options.lease, 'lease', o[0]);
  o[2] = checkMs(options.connectTimeout, 'connectTimeout', o[2]);
  o[3] = checkMs(options.commandTimeout, 'commandTimeout', o[3]);
  if (options.prefix !== undefined) {
    if (typeof options.prefix !== 'string') throw typeError('volt-sem: options.prefix must be a string');
    // As for a name (checkName): Node-API would pass U+FFFD for a lone
    // surrogate, and two tenants' prefixes would share their keys.
    if (!options.prefix.isWellFormed()) {
      throw coded(
        Error,
        `volt-sem: Semaphore.${what}(): invalid key prefix (a lone surrogate)`,
        'ERR_VOLT_INVALID_PREFIX',
      );
    }
    o[1] = options.prefix;
  }
  if (options.cluster !== undefined) {
    if (typeof options.cluster !== 'boolean') throw typeError('volt-sem: options.cluster must be a boolean');
    o[4] = options.cluster;
  }
  if (options.tlsCaFile !== undefined) {
    if (typeof options.tlsCaFile !== 'string') throw typeError('volt-sem: options.tlsCaFile must be a path string');
    o[5] = options.tlsCaFile;
  }
  if (options.tlsClientCert !== undefined) {
    const c = options.tlsClientCert;
    if (c === null || typeof c !== 'object' || typeof c.cert !== 'string' || typeof c.key !== 'string') {
      throw typeError('volt-sem: options.tlsClientCert must be { cert, key } path strings');
    }
    o[6] = c.cert;
    o[7] = c.key;
  }
  if (options.minReplicasAcked !== undefined) {
    const m = options.minReplicasAcked;
    if (m === null || typeof m !== 'object') throw typeError('volt-sem: options.minReplicasAcked must be { replicas, timeout }');
    if (!Number.isInteger(m.replicas) || m.replicas < 1 || m.replicas > 1000) {
      throw rangeError(`volt-sem: minReplicasAcked.replicas must be an integer in 1..=1000, got ${String(m.replicas)}`);
    }
    o[8] = m.replicas;
    o[9] = checkMs(m.timeout, 'minReplicasAcked.timeout', 100);
  }
  return o;
}

// `RedisSemaphore`: a deprecated alias of Semaphore (one release), whose old
// static `delete` is Semaphore.deleteRedis.
let warnedDelete = false;
function deprecatedDelete(url, name, options) {
  if (!warnedDelete) {
    warnedDelete = true;
    process.emitWarning('RedisSemaphore.delete() is deprecated: use Semaphore.deleteRedis()', 'DeprecationWarning', 'VOLT_SEM_DEP001');
  }
  return Semaphore.deleteRedis(url, name, options);
}
const RedisSemaphore = new Proxy(Semaphore, {
  get: (target, prop, receiver) => (prop === 'delete' ? deprecatedDelete : Reflect.get(target, prop, receiver)),
});

// Semaphore.open() flags (src/named.rs).
const OPEN_CREATE_ONLY = 1;
const OPEN_ATTACH_ONLY = 2;
const OPEN_ACCEPT_FOREIGN_OWNER = 4;
const OPEN_RESIZE = 8;

/**
 * `options.resize` of open() and connect(): when the semaphore exists with
 * another total, change its total to `permits` instead of refusing with
 * ERR_VOLT_TOTAL_MISMATCH. A boolean; default false.
 */
function checkResize(options) {
  const resize = options?.resize;
  if (resize === undefined) return false;
  if (typeof resize !== 'boolean') throw typeError('volt-sem: options.resize must be a boolean');
  return resize;
}

/**
 * `options.attachOnly` of connect(), as of open(): reject with
 * ERR_VOLT_NOT_FOUND instead of creating a missing semaphore. A boolean;
 * default false.
 */
function checkAttachOnly(options) {
  const attachOnly = options?.attachOnly;
  if (attachOnly === undefined) return false;
  if (typeof attachOnly !== 'boolean') throw typeError('volt-sem: options.attachOnly must be a boolean');
  return attachOnly;
}

function sharedOnly(what) {
  return (
    `${what} is for named and Redis semaphores (Semaphore.open, Semaphore.connect); ` +
    'an in-process Semaphore has no total shared with anyone'
  );
}

function checkName(name, what) {
  if (typeof name !== 'string') {
    throw typeError(`volt-sem: Semaphore.${what}() needs a name string, got ${name === null ? 'null' : typeof name}`);
  }
  // A lone surrogate has no UTF-8 form: Node-API would pass U+FFFD in its
  // place, and two different names would reach one semaphore.
  if (!name.isWellFormed()) {
    throw coded(
      Error,
      `volt-sem: Semaphore.${what}(${JSON.stringify(name)}): invalid semaphore name (a lone surrogate)`,
      'ERR_VOLT_INVALID_NAME',
    );
  }
}

function attachHandle(value, kind) {
  // share() ids are integers from 1: any other id was never one of its values.
  const id = value?.id;
  if (value === null || typeof value !== 'object' || value[SHARE_TAG] !== 1 || !(Number.isSafeInteger(id) && id >= 1)) {
    throw typeError('volt-sem: attach() needs the value returned by share()');
  }
  if (value.kind !== kind) {
    throw typeError(`volt-sem: this value shares a ${value.kind}, not a ${kind}`);
  }
  const h = native.attach(value.id);
  if (h === null) {
    throw coded(
      Error,
      `volt-sem: ${kind} #${value.id} no longer exists (every handle to it was garbage-collected or its threads ended)`,
      'ERR_VOLT_GONE',
    );
  }
  return h;
}

// The Semaphore under a Mutex or RwLock, for the subclasses only (set by the
// base class's static block: a private field cannot be read by subclasses).
let semOf;

/** What Mutex and RwLock share: the Semaphore underneath, its queue controls and sharing. */
class SemaphoreLock {
  #s;
  #kind;

  constructor(sem, kind) {
    this.#s = sem;
    this.#kind = kind;
  }

  static {
    semOf = (lock) => lock.#s;
  }

  /** Rejects the acquires waiting through this object; see `Semaphore#cancel`. */
  cancel(reason) {
    return this.#s.cancel(reason);
  }

  get pendingCount() {
    return this.#s.pendingCount;
  }

  ref() {
    this.#s.ref();
    return this;
  }

  unref() {
    this.#s.unref();
    return this;
  }

  hasRef() {
    return this.#s.hasRef();
  }

  close() {
    this.#s.close();
  }

  share() {
    return { ...this.#s.share(), kind: this.#kind };
  }
}

/** A fair async mutex (a Semaphore of one permit), with async-mutex's idioms. */
class Mutex extends SemaphoreLock {
  // The releasers of the locks taken through this object that are not released
  // yet, oldest first. `release()` releases the oldest one, so a release of a
  // lock this object does not hold (a second release() while the lock is being
  // handed to the next waiter, or a release() after the releaser) is refused
  // instead of letting two holders in. The semaphore's count cannot tell: it is
  // 0 both while locked and while handing over.
  #held = [];
  /** `#own` for the grant hook: the holder is recorded when the grant is decided. */
  #onGrant = (rel) => this.#own(rel);

  constructor() {
    super(arguments[0] === INTERNAL ? arguments[1] : new Semaphore(1), 'Mutex');
  }

  #own(rel) {
    let done = false;
    const release = () => {
      if (done) return;
      done = true;
      const i = this.#held.indexOf(release);
      if (i >= 0) this.#held.splice(i, 1);
      rel();
    };
    release.permits = 1;
    release.token = null; // a Releaser's (index.d.ts): null off Redis
    release[dispose] = release;
    this.#held.push(release);
    return release;
  }

  acquire(options) {
    return acquireOwned(semOf(this), options, this.#onGrant);
  }

  /** Resolves when the mutex is free (in FIFO order), without locking it. */
  waitForUnlock(options) {
    return semOf(this).waitForUnlock(1, options);
  }

  tryAcquire() {
    const s = semOf(this);
    return s.tryAcquire(1) ? this.#own(releaser(s, 1)) : null;
  }

  /** Releases the lock taken through this object (the oldest, if several threads' worth). */
  release() {
    const oldest = this.#held[0];
    if (oldest === undefined) {
      throw coded(Error, 'volt-sem: release() of a Mutex that this object has not locked', 'ERR_VOLT_NOT_LOCKED');
    }
    oldest();
  }

  async runExclusive(fn, options) {
    if (typeof fn !== 'function') throw typeError('volt-sem: runExclusive needs a function');
    const release = await this.acquire(options);
    try {
      return await fn();
    } finally {
      release();
    }
  }

  isLocked() {
    return semOf(this).availablePermits === 0;
  }

  static attach(value) {
    return new Mutex(INTERNAL, new Semaphore(INTERNAL, attachHandle(value, 'Mutex')));
  }
}

/**
 * A fair reader-writer lock: a Semaphore of MAX_PERMITS permits; a reader takes
 * one, a writer takes all. FIFO both ways.
 */
class RwLock extends SemaphoreLock {
  constructor() {
    super(arguments[0] === INTERNAL ? arguments[1] : new Semaphore(MAX_PERMITS), 'RwLock');
  }

  acquireRead(options) {
    return semOf(this).acquirePermit(1, options);
  }

  acquireWrite(options) {
    return semOf(this).acquirePermit(MAX_PERMITS, options);
  }

  tryAcquireRead() {
    const s = semOf(this);
    return s.tryAcquire(1) ? releaser(s, 1) : null;
  }

  tryAcquireWrite() {
    const s = semOf(this);
    return s.tryAcquire(MAX_PERMITS) ? releaser(s, MAX_PERMITS) : null;
  }

  runRead(fn, options) {
    return semOf(this).runExclusive(fn, 1, options);
  }

  runWrite(fn, options) {
    return semOf(this).runExclusive(fn, MAX_PERMITS, options);
  }

  runExclusive(fn, options) {
    return this.runWrite(fn, options);
  }

  isLocked() {
    return semOf(this).availablePermits !== MAX_PERMITS;
  }

  static attach(value) {
    return new RwLock(INTERNAL, new Semaphore(INTERNAL, attachHandle(value, 'RwLock')));
  }
}

// ---------------------------------------------------------------------------
// disconnectOnSignals(): on SIGINT/SIGTERM, end every shared handle's session
// of this thread before the process goes, so that other clients get its
// permits (and its queued requests leave) now instead of at lease expiry.

const SIGNALS = ['SIGINT', 'SIGTERM'];
let signalState; // { signals, ms, handler } while installed

/** Disconnects every live shared handle of this thread; resolves when all settled. */
function disconnectAll() {
  const all = [];
  for (const r of liveHandles) {
    const sem = r.deref();
    liveHandles.delete(r);
    if (sem === undefined) continue;
    try {
      all.push(Promise.resolve(sem.disconnect()).catch(() => {}));
    } catch {
      // a handle that cannot be disconnected any more: nothing to end
    }
  }
  return Promise.all(all);
}

function onShutdownSignal(signal) {
  const state = signalState;
  if (state === undefined) return;
  // Another listener of the signal (the user's own shutdown) decides whether
  // and when the process ends: only disconnect.
  const mine = state.handlers.get(signal);
  const others = process.listeners(signal).some((l) => l !== mine);
  const reraise = () => {
    if (others) return;
    uninstallSignals();
    // With no listener left the signal has its default effect: the process
    // ends by it (exit status 128 + its number in a shell), as without us.
    process.kill(process.pid, signal);
  };
  if (state.stopping) {
    reraise(); // a second Ctrl-C while disconnecting: go now
    return;
  }
  state.stopping = true;
  let timer;
  const bound = new Promise((resolve) => {
    timer = timers.setTimeout(resolve, Math.min(state.ms, MAX_TIMER_MS)); // a longer one fires after 1 ms
    timer.unref();
  });
  Promise.race([disconnectAll(), bound]).then(() => {
    timers.clearTimeout(timer);
    state.stopping = false;
    reraise();
  });
}

function uninstallSignals() {
  const state = signalState;
  if (state === undefined) return;
  signalState = undefined;
  for (const [signal, handler] of state.handlers) process.removeListener(signal, handler);
}

/**
 * Installs SIGINT and SIGTERM listeners that disconnect every live named and
 * Redis semaphore handle of this thread, then raise the signal again with its
 * default effect (the process ends by it) unless other listeners of it exist.
 * Returns a function that removes them. Idempotent.
 */
function disconnectOnSignals(options) {
  let ms = 5_000;
  if (options !== undefined && options !== null) {
    checkOptionNames(options, ['timeout']);
    ms = checkMs(options.timeout, 'timeout', ms);
  }
  if (signalState === undefined) {
    const handlers = new Map();
    for (const signal of SIGNALS) {
      const handler = () => onShutdownSignal(signal);
      handlers.set(signal, handler);
      process.on(signal, handler);
    }
    signalState = { handlers, ms, stopping: false };
  } else {
    signalState.ms = ms;
  }
  return uninstallSignals;
}

module.exports = { Semaphore, Mutex, RwLock, RedisSemaphore, MAX_PERMITS, disconnectOnSignals };
