'use strict';
// sem.stats(): per-handle counters, gauges and the wait histogram (issue 29,
// "Metrics"), synchronous on every backend, recording on every backend.
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { Semaphore } = require('..');
const { RedisServer, ownServer } = require('./redis-server.js');
const { NAMED_SKIP, worker, nextMessage, exited } = require('./helpers');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const counters = (s) => [s.grants, s.permitsGranted, s.timeouts, s.cancels, s.leaseLosses, s.reclaimsSeen];
const gauges = (s) => [s.available, s.held, s.queued];

test('counts every grant exactly, the JS fast path ones too; a failed tryAcquire is not one', () => {
  const s = new Semaphore(4);
  assert.ok(s.tryAcquire(3));
  assert.equal(s.tryAcquire(2), false);
  let st = s.stats();
  assert.deepEqual(counters(st), [1, 3, 0, 0, 0, 0]);
  assert.deepEqual(gauges(st), [1, 3, 0]);
  assert.equal(st.recording, true);
  s.release(3);
  // Past VIEW_AFTER (16) native operations the object takes uncontended
  // permits in JS without calling the addon: they must be counted all the same.
  for (let i = 0; i < 50; i++) {
    assert.ok(s.tryAcquire(2));
    s.release(2);
  }
  st = s.stats();
  assert.deepEqual(counters(st), [51, 103, 0, 0, 0, 0]);
  assert.deepEqual(gauges(st), [4, 0, 0]);
  // Every grant taken at once is a wait of zero, in the first bucket.
  assert.deepEqual([st.wait.count, st.wait.sum, st.wait.max, st.wait.p50, st.wait.p99], [51, 0, 0, 0, 0]);
  assert.equal(st.wait.buckets[0].count, 51);
});

test('acquire(0) and acquire() resolved at once count as grants', async () => {
  const s = new Semaphore(2);
  await s.acquire(0);
  const release = await s.acquirePermit(2);
  assert.deepEqual(counters(s.stats()), [2, 2, 0, 0, 0, 0]);
  release();
  assert.deepEqual(gauges(s.stats()), [2, 0, 0]);
});

test('stats() is a frozen plain object with the fixed log buckets, in seconds', () => {
  const st = new Semaphore(1).stats();
  assert.ok(Object.isFrozen(st) && Object.isFrozen(st.wait) && Object.isFrozen(st.wait.buckets));
  assert.ok(Object.isFrozen(st.wait.buckets[0]));
  assert.equal(st.wait.buckets.length, 28);
  st.wait.buckets.forEach((b, i) => assert.equal(b.le, i < 27 ? 2 ** i / 1e6 : Infinity, `bucket ${i}`));
  assert.throws(() => {
    'use strict';
    st.grants = 5;
  }, TypeError);
  assert.equal(Object.getPrototypeOf(st), Object.prototype);
  assert.deepEqual(Object.keys(st), [
    'grants',
    'permitsGranted',
    'timeouts',
    'cancels',
    'leaseLosses',
    'reclaimsSeen',
    'available',
    'held',
    'queued',
    'recording',
    'wait',
  ]);
});

test('a queued grant lands in the bucket of its wait; p50/p99 are bucket bounds capped at max', async () => {
  const s = new Semaphore(1);
  await s.acquire(1);
  const queued = s.acquire(1);
  assert.deepEqual(gauges(s.stats()), [0, 1, 1]);
  await sleep(20); // it waits at least this long: it is granted by the release below
  s.release(1);
  await queued;
  const st = s.stats();
  assert.deepEqual(counters(st), [2, 2, 0, 0, 0, 0]);
  const w = st.wait;
  assert.equal(w.count, 2);
  assert.ok(w.max >= 0.015, `waited ${w.max} s`);
  assert.equal(w.sum, w.max); // the other grant waited 0
  assert.equal(w.buckets[0].count, 1); // the one taken at once
  const k = w.buckets.findIndex((b, i) => i > 0 && b.count > 0);
  assert.ok(w.buckets[k].le >= w.max && w.buckets[k - 1].le < w.max, `max ${w.max} in bucket ${k}`);
  assert.equal(w.buckets.reduce((a, b) => a + b.count, 0), 2);
  assert.equal(w.p50, 1e-6); // rank 1: the first bucket's bound
  assert.equal(w.p99, w.max); // rank 2: its bucket, capped at the max
  assert.equal(w.quantile(0), 1e-6);
  assert.equal(w.quantile(1), w.max);
  for (const q of [-0.1, 1.5, NaN, '0.5', undefined]) {
    assert.throws(() => w.quantile(q), { name: 'RangeError', code: 'ERR_OUT_OF_RANGE' }, String(q));
  }
  assert.equal(new Semaphore(1).stats().wait.quantile(0.99), 0); // nothing recorded
  s.release(1);
});

test('an AbortSignal abort and cancel() are cancels, not timeouts; the queued gauge follows', async () => {
  const s = new Semaphore(1);
  await s.acquire(1);
  const ac = new AbortController();
  const a = s.acquire(1, { signal: ac.signal });
  const b = s.acquire(1);
  assert.equal(s.stats().queued, 2);
  ac.abort();
  await assert.rejects(a, { name: 'AbortError' });
  let st = s.stats();
  assert.deepEqual(counters(st), [1, 1, 0, 1, 0, 0]);
  assert.deepEqual(gauges(st), [0, 1, 1]);
  assert.equal(s.cancel(), 1);
  await assert.rejects(b, { code: 'ERR_VOLT_CANCELLED' });
  st = s.stats();
  assert.deepEqual(counters(st), [1, 1, 0, 2, 0, 0]);
  assert.deepEqual(gauges(st), [0, 1, 0]);
  // An already aborted signal never queues: nothing to cancel.
  await assert.rejects(s.acquire(1, { signal: AbortSignal.abort() }), { name: 'AbortError' });
  assert.deepEqual(counters(s.stats()), [1, 1, 0, 2, 0, 0]);
  s.release(1);
});

test('a timeout that passes is a timeout and a cancel; one the grant beats is neither', async () => {
  const s = new Semaphore(1);
  await s.acquire(1);
  await assert.rejects(s.acquire(1, { timeout: 10 }), { code: 'ERR_VOLT_TIMED_OUT' });
  assert.deepEqual(counters(s.stats()), [1, 1, 1, 1, 0, 0]);
  const beaten = s.acquire(1, { timeout: 60_000 });
  s.release(1);
  await beaten;
  const st = s.stats();
  assert.deepEqual(counters(st), [2, 2, 1, 1, 0, 0]);
  assert.deepEqual(gauges(st), [0, 1, 0]);
  s.release(1);
});

test('a partial grant is neither held nor available: the gauges while a weighted request fills', async () => {
  const s = new Semaphore(3);
  await s.acquire(2);
  const big = s.acquire(3); // takes the 1 left and waits for 2 more
  let st = s.stats();
  assert.deepEqual(gauges(st), [0, 2, 1]);
  assert.deepEqual(counters(st), [1, 2, 0, 0, 0, 0]);
  s.release(1); // 2 of 3 now
  st = s.stats();
  assert.deepEqual(gauges(st), [0, 1, 1]);
  s.release(1);
  await big;
  st = s.stats();
  assert.deepEqual(gauges(st), [0, 3, 0]);
  assert.deepEqual(counters(st), [2, 5, 0, 0, 0, 0]);
  assert.equal(st.wait.count, 2);
  s.release(3);
  assert.deepEqual(gauges(s.stats()), [3, 0, 0]);
});

test("another object of the semaphore (share/attach): its native grants are in this object's counters", async () => {
  const s = new Semaphore(2);
  const other = Semaphore.attach(s.share());
  await other.acquire(1);
  assert.deepEqual(counters(s.stats()), [1, 1, 0, 0, 0, 0]);
  assert.deepEqual(gauges(s.stats()), [1, 1, 0]);
  other.release(1);
});

const NAMED = `node-test-${process.pid}-stats`;

test('a named semaphore: stats() is synchronous, counts grants, timeouts and cancels, and reports its gauges', { skip: NAMED_SKIP }, async () => {
  try {
    const sem = Semaphore.open(NAMED, 3);
    assert.ok(sem.tryAcquire(2));
    assert.ok(!sem.tryAcquire(2)); // a failed try is not a grant
    const st = sem.stats();
    assert.equal(typeof st.then, 'undefined');
    assert.ok(Object.isFrozen(st));
    assert.equal(st.recording, true);
    assert.deepEqual(gauges(st), [1, 2, 0]);
    assert.deepEqual(counters(st).slice(0, 2), [1, 2]);
    assert.equal(st.wait.buckets.length, 28);
    // A request that waits, then times out: a timeout and a cancel.
    await assert.rejects(sem.acquire(2, { timeout: 30 }));
    // One that waits and is served by a release: a queued grant.
    const waiting = sem.acquire(2);
    await sleep(20);
    assert.equal(sem.stats().queued, 1);
    sem.release(2);
    await waiting;
    const after = sem.stats();
    assert.deepEqual(counters(after).slice(0, 4), [2, 4, 1, 1]);
    assert.ok(after.wait.max >= 0.015, `waited ${after.wait.max}s`);
    sem.release(2);
    assert.deepEqual(gauges(sem.stats()), [3, 0, 0]);
  } finally {
    Semaphore.unlink(NAMED);
  }
});

let srv;
before(async () => {
  srv = await RedisServer.start();
});
after(async () => {
  await srv?.close();
});

test('a Redis semaphore: stats() answers at once, with no round trip, even with the server stopped', { skip: ownServer('SIGSTOP') }, async () => {
  const name = `stats-${process.pid}`;
  const sem = await Semaphore.connect(srv.url(), name, 2);
  await sem.acquire(1);
  await assert.rejects(sem.acquire(2, { timeout: 50 }));
  const counted = sem.stats();
  assert.equal(counted.recording, true);
  assert.deepEqual(counters(counted).slice(0, 3), [1, 1, 1]);
  assert.equal(counted.held, 1);
  // A stopped server answers nothing: a stats() that waited for Redis would
  // hang here (until the test's timeout).
  srv.signal('SIGSTOP');
  let st;
  try {
    st = sem.stats();
  } finally {
    srv.signal('SIGCONT');
  }
  assert.equal(typeof st.then, 'undefined');
  assert.ok(Object.isFrozen(st) && Object.isFrozen(st.wait));
  assert.equal(st.wait.buckets.length, 28);
  sem.release(1);
  await sem.disconnect();
  assert.ok(Object.isFrozen(sem.stats())); // the last tally, after disconnect()
  await Semaphore.deleteRedis(srv.url(), name);
});

test('a Redis timed acquire: a grant answered within its grace is kept even when the grace timer fires before it is delivered', { skip: ownServer('SIGSTOP') }, async () => {
  const name = `stats-grace-${process.pid}`;
  const sem = await Semaphore.connect(srv.url(), name, 1);
  // The acquire script goes out to a stopped server: no answer, so its
  // 1 ms timeout leaves it to the answer for its grace (250 ms or more).
  srv.signal('SIGSTOP');
  const p = sem.acquirePermit(1, { timeout: 1 }).then((r) => r, (e) => e);
  await sleep(20);
  // The answer (a grant) comes once the server runs again, within the
  // grace, while this thread is busy past the grace's end (in a
  // check-phase callback: the next loop turn runs the expired grace timer
  // before the grant's delivery), so the grace
  // timer finds the request granted but not yet delivered: the grant is
  // still the caller's, as in Rust and Python. Before, the timer gave it
  // back and the acquire failed with ERR_VOLT_TIMED_OUT, counted as a grant
  // and a timeout but no cancel.
  await new Promise((resolve) => {
    setImmediate(() => {
      srv.signal('SIGCONT');
      const until = Date.now() + 600;
      while (Date.now() < until);
      resolve();
    });
  });
  const r = await p;
  assert.equal(typeof r, 'function', `rejected: ${r?.code}`);
  const st = sem.stats();
  assert.deepEqual([st.grants, st.timeouts, st.cancels, st.held], [1, 0, 0, 1]);
  r();
  await sem.disconnect();
  await Semaphore.deleteRedis(srv.url(), name);
});

/**
 * A timed acquire on `s` (1 permit, held by a worker running `prelude`,
 * which defines its `s` on the same semaphore) whose grant the worker's
 * release made before the `timeout` timer ran, the wake not delivered yet:
 * the check-phase callback below waits for that release and runs past the
 * timeout, so the loop's next turn runs the expired timer before the wake
 * (the threadsafe function's callback, in the poll phase). The grant is the
 * caller's, as in Rust, C and Python (and on Redis, where the same race with
 * the grace timer was fixed). Before, the timer gave it back and the acquire
 * failed with ERR_VOLT_TIMED_OUT.
 */
async function grantBeforeTimer(s, prelude, workerData) {
  const flags = new Int32Array(new SharedArrayBuffer(8)); // [go, released]
  const w = worker(
    `${prelude}
     const flags = new Int32Array(workerData.flags.buffer);
     if (!s.tryAcquire(1)) throw new Error('the permit is not free');
     parentPort.postMessage('held');
     Atomics.wait(flags, 0, 0);
     s.release(1); // grants it to the main thread's waiter, here and now
     Atomics.store(flags, 1, 1);
     Atomics.notify(flags, 1);`,
    { ...workerData, flags },
  );
  // Resolved in the poll phase (the worker's message): the check phase
  // comes next, the timer cannot run before it.
  await nextMessage(w, (m) => m === 'held');
  const t0 = Date.now();
  const p = s.acquirePermit(1, { timeout: 1 }).then((r) => r, (e) => e);
  await new Promise((resolve) => {
    setImmediate(() => {
      Atomics.store(flags, 0, 1);
      Atomics.notify(flags, 0);
      Atomics.wait(flags, 1, 0); // released: granted, not yet delivered
      while (Date.now() < t0 + 20); // past the timeout
      resolve();
    });
  });
  const r = await p;
  const st = s.stats();
  assert.equal(typeof r, 'function', `rejected: ${r?.code}; timeouts ${st.timeouts}, cancels ${st.cancels}, available ${s.availablePermits}`);
  assert.deepEqual([st.timeouts, st.cancels, st.held], [0, 0, 1]);
  assert.equal(s.availablePermits, 0);
  r();
  assert.equal(s.availablePermits, 1);
  await exited(w);
}

test('a local timed acquire: a grant made before the timer ran is kept even when the timer fires before its delivery', async () => {
  const s = new Semaphore(1);
  await grantBeforeTimer(s, 'const s = volt.Semaphore.attach(workerData.id);', { id: s.share() });
});

test('a named timed acquire: a grant made before the timer ran is kept even when the timer fires before its delivery', { skip: NAMED_SKIP }, async () => {
  const name = `${NAMED}-race`;
  try {
    const s = Semaphore.open(name, 1);
    await grantBeforeTimer(s, 'const s = volt.Semaphore.open(workerData.name, 1);', { name });
    await s.disconnect();
  } finally {
    Semaphore.unlink(name);
  }
});
