'use strict';
// Cross-thread semantics: share/attach, wakes across workers, teardown of a
// terminated worker, keep-alive of a waiting thread.
const test = require('node:test');
const assert = require('node:assert/strict');
const { execFile } = require('node:child_process');
const v8 = require('node:v8');
const vm = require('node:vm');
const { Semaphore, Mutex, RwLock } = require('..');
const { PKG, worker, nextMessage, exited, raceWithWorker } = require('./helpers');

test('attach() in a worker returns the same semaphore', async () => {
  const s = new Semaphore(5);
  const w = worker(
    `const s = volt.Semaphore.attach(workerData);
     parentPort.postMessage(s.availablePermits);
     s.tryAcquire(2);
     parentPort.postMessage(s.availablePermits);`,
    s.share(),
  );
  await exited(w);
  assert.deepEqual(w.messages, [5, 3]);
  assert.equal(s.availablePermits, 3);
});

test('a release in one thread wakes a waiter in another, in FIFO order with weights', async () => {
  const s = new Semaphore(0);
  const w = worker(
    `const s = volt.Semaphore.attach(workerData);
     s.acquire(3).then(() => parentPort.postMessage('w3'));
     parentPort.postMessage('queued');`,
    s.share(),
  );
  await nextMessage(w, (m) => m === 'queued');
  const order = [];
  const mine = s.acquire(1).then(() => order.push('main1'));
  s.release(2); // the worker's request (first in line) gets 2 of 3
  assert.equal(s.availablePermits, 0);
  s.release(1); // completes the worker's request; main1 still waits
  await nextMessage(w, (m) => m === 'w3');
  assert.deepEqual(order, []);
  s.release(1);
  await mine;
  assert.deepEqual(order, ['main1']);
  await exited(w);
});

// A release of this thread takes its own waiters' grants straight from the
// hand-off (the core's release_claiming), and must leave another thread's
// waiter between them to that thread's wake: FIFO across both, partial
// grants, and every permit where it belongs.
test("one release serves this thread's waiters and a worker's between them, in FIFO order", async () => {
  const s = new Semaphore(0);
  const shared = s.share();
  const order = [];
  const a1 = s.acquire(1).then(() => order.push('a1'));
  const w = worker(
    `const s = volt.Semaphore.attach(workerData);
     s.acquire(2).then(() => {
       parentPort.postMessage('w2');
       s.release(2);
     });
     parentPort.postMessage('queued');`,
    shared,
  );
  await nextMessage(w, (m) => m === 'queued');
  const a2 = s.acquire(3).then(() => order.push('a2'));
  s.release(5); // a1 gets 1, the worker 2, a2 2 of its 3
  assert.equal(s.availablePermits, 0);
  await a1;
  assert.deepEqual(order, ['a1']);
  await nextMessage(w, (m) => m === 'w2'); // its release completes a2, 1 left over
  await a2;
  assert.deepEqual(order, ['a1', 'a2']);
  assert.equal(await exited(w), 0);
  assert.equal(s.availablePermits, 1);
  s.release(4);
  assert.equal(s.availablePermits, 5);
});

test('a worker releasing wakes the main thread', async () => {
  const s = new Semaphore(1);
  const held = s.tryAcquire(1);
  assert.equal(held, true);
  const got = s.acquire(2);
  const w = worker(`volt.Semaphore.attach(workerData).release(2);`, s.share());
  await got;
  assert.equal(s.availablePermits, 0);
  await exited(w);
});

// A thread is woken once for all the grants other threads made while a wake
// was pending (src/remote.rs, `# One wake per batch`), and a release hands
// its grants to another thread's waiters only once its own native call is
// over. Whatever the batches, every grant must arrive, in FIFO order, and no
// permit may be lost or made up. More grants than the outcome buffer holds
// (256), so the receiving thread drains them in several passes.
test('bursts of grants across threads all arrive, in FIFO order, and the permits add up', async (t) => {
  const N = 600;
  const s = new Semaphore(0);
  const w = worker(
    `const s = volt.Semaphore.attach(workerData);
     const N = 600;
     // Queues N acquires of 1 and reports the order they were granted in.
     const queue = (name) => {
       const order = [];
       const all = [];
       for (let i = 0; i < N; i++) all.push(s.acquire(1).then(() => order.push(i)));
       Promise.all(all).then(() => parentPort.postMessage({ name, order }));
       parentPort.postMessage('queued ' + name);
     };
     parentPort.on('message', (m) => {
       if (m === 'ones' || m === 'all') queue(m);
       if (m === 'give back') {
         // The 2N permits this thread holds, to the main thread's waiters:
         // N releases of 1 in one go, then one release of N.
         for (let i = 0; i < N; i++) s.release(1);
         s.release(N);
         parentPort.close();
       }
     });
     queue('ones');`,
    s.share(),
  );
  // A failed assertion must not leave the worker (and this file) hanging.
  t.after(() => w.terminate());
  const inOrder = Array.from({ length: N }, (_, i) => i);
  const round = async (name, release) => {
    await nextMessage(w, (m) => m === `queued ${name}`);
    release();
    const got = await nextMessage(w, (m) => m.name === name);
    assert.deepEqual(got.order, inOrder, `${name}: granted in FIFO order`);
  };
  // N releases of 1, each a native call of its own: their wakes ride on one
  // pending wake of the worker.
  await round('ones', () => {
    for (let i = 0; i < N; i++) s.release(1);
  });
  w.postMessage('all');
  // One release of N: N grants made inside one native call.
  await round('all', () => s.release(N));
  assert.equal(s.availablePermits, 0);
  // And back: 2N waiters here, served by the worker in FIFO order.
  const order = [];
  const mine = [];
  for (let i = 0; i < N; i++) mine.push(s.acquire(1).then(() => order.push(i)));
  mine.push(s.acquire(N).then(() => order.push(N)));
  w.postMessage('give back');
  await Promise.all(mine);
  assert.deepEqual(order, [...inOrder, N]);
  await exited(w);
  assert.equal(s.availablePermits, 0);
  assert.equal(s.pendingCount, 0);
  // Every permit released is here again: none lost, none made up.
  s.release(2 * N);
  assert.equal(s.availablePermits, 2 * N);
  assert.equal(s.heldPermits, 0);
});

test('a thread waiting on a shared semaphore stays alive until served', async () => {
  const s = new Semaphore(0);
  // Nothing but the pending acquire keeps this worker's event loop alive.
  const w = worker(
    `const s = volt.Semaphore.attach(workerData);
     s.acquire(1).then(() => parentPort.postMessage('served'));
     parentPort.postMessage('queued');`,
    s.share(),
  );
  await nextMessage(w, (m) => m === 'queued');
  await new Promise((r) => setTimeout(r, 200));
  s.release(1);
  assert.equal(await nextMessage(w, (m) => m === 'served'), 'served');
  await exited(w);
});

// A local semaphore nobody shared updates its held and queued counters
// without read-modify-writes (src/semaphore.rs); share() must switch them
// back before another thread can attach. Both threads here hammer the native
// path (views refused, as bench/run.js does for its native-path row), whose
// tryAcquire and release update held: a load-and-store racing the other
// thread's loses updates, and held drifts.
test('held stays exact when a semaphore used privately is then shared and raced on its native path', async () => {
  const ROUNDS = 1_000_000;
  const noViews = `const native = require(${JSON.stringify(`${PKG}/binding.js`)}).loadNative();
    const view = native.view;
    native.view = () => null;`;
  const loop = `for (let i = 0; i < ${ROUNDS}; i++) { if (s.tryAcquire(1)) { if (s.tryAcquire(1)) s.release(1); s.release(1); } }`;
  const native = require('../binding.js').loadNative();
  const view = native.view;
  native.view = () => null;
  let s;
  try {
    s = new Semaphore(4);
    for (let i = 0; i < 64; i++) {
      s.tryAcquire(1); // private use first
      s.release(1);
    }
  } finally {
    native.view = view;
  }
  await raceWithWorker(
    s,
    loop,
    `${noViews}
     const s = volt.Semaphore.attach(workerData.id);
     for (let i = 0; i < 64; i++) s.tryAcquire(0); // past the point where views would be made
     native.view = view;`,
  );
  assert.equal(s.heldPermits, 0, 'held drifted');
  assert.equal(s.availablePermits, 4);
});

test('a terminated worker hands its partial grant on (env cleanup hook)', async () => {
  const s = new Semaphore(0);
  const w = worker(
    `const s = volt.Semaphore.attach(workerData);
     s.acquire(3);
     parentPort.postMessage('queued');`,
    s.share(),
  );
  await nextMessage(w, (m) => m === 'queued');
  s.release(2); // the worker holds 2 of its 3
  assert.equal(s.availablePermits, 0);
  const mine = s.acquire(2); // queued behind the worker
  await w.terminate();
  await mine; // served by the worker's 2 permits
  assert.equal(s.availablePermits, 0);
  s.release(2);
  assert.equal(s.availablePermits, 2);
});

test('a terminated worker gives back a grant it never saw', async () => {
  const s = new Semaphore(0);
  const w = worker(
    `const s = volt.Semaphore.attach(workerData);
     s.acquire(2).then(() => parentPort.postMessage('saw it'));
     parentPort.postMessage('queued');
     // Block this thread so the grant can never be delivered to JS.
     Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);`,
    s.share(),
  );
  await nextMessage(w, (m) => m === 'queued');
  s.release(2); // granted to the blocked worker
  assert.equal(s.availablePermits, 0);
  await w.terminate();
  assert.deepEqual(w.messages, ['queued']);
  assert.equal(s.availablePermits, 2, 'the undelivered grant was released');
});

test('a worker can abort its waiter; the partial grant goes to the main thread', async () => {
  const s = new Semaphore(0);
  const w = worker(
    `const s = volt.Semaphore.attach(workerData);
     const ac = new AbortController();
     s.acquire(4, { signal: ac.signal }).catch((e) => {
       parentPort.postMessage('aborted:' + e);
       parentPort.close();
     });
     parentPort.on('message', () => ac.abort('bye'));
     parentPort.postMessage('queued');`,
    s.share(),
  );
  await nextMessage(w, (m) => m === 'queued');
  s.release(3); // the worker holds 3 of 4
  const mine = s.acquire(3);
  w.postMessage('abort');
  await mine;
  assert.equal(await nextMessage(w, (m) => String(m).startsWith('aborted')), 'aborted:bye');
  assert.equal(s.availablePermits, 0);
  await exited(w);
});

test('closing in one thread rejects waiters in another', async () => {
  const s = new Semaphore(0);
  const w = worker(
    `const s = volt.Semaphore.attach(workerData);
     s.acquire(1).catch((e) => parentPort.postMessage(e.code));
     parentPort.postMessage('queued');`,
    s.share(),
  );
  await nextMessage(w, (m) => m === 'queued');
  s.close();
  assert.equal(await nextMessage(w, (m) => m !== 'queued'), 'ERR_VOLT_CLOSED');
  await exited(w);
});

test('Mutex and RwLock are shared the same way', async () => {
  const m = new Mutex();
  const l = new RwLock();
  const release = await m.acquire();
  const readers = await l.acquireRead();
  const w = worker(
    `const m = volt.Mutex.attach(workerData.m);
     const l = volt.RwLock.attach(workerData.l);
     (async () => {
       const r = await m.acquire();
       parentPort.postMessage('mutex');
       r();
       await l.runWrite(() => parentPort.postMessage('write'));
     })();`,
    { m: m.share(), l: l.share() },
  );
  await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual(w.messages, []);
  release();
  await nextMessage(w, (x) => x === 'mutex');
  assert.deepEqual(w.messages, ['mutex']);
  readers();
  await nextMessage(w, (x) => x === 'write');
  await exited(w);
  assert.equal(m.isLocked(), false);
  assert.equal(l.isLocked(), false);
});

test('attaching to a semaphore that no longer exists throws a clear error', async () => {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc');
  let shared = (() => new Semaphore(1).share())();
  for (let i = 0; i < 10; i++) {
    gc();
    await new Promise((r) => setImmediate(r)); // finalizers may be deferred
    try {
      Semaphore.attach(shared);
    } catch (e) {
      assert.equal(e.code, 'ERR_VOLT_GONE');
      assert.match(e.message, /Semaphore #\d+ no longer exists/);
      return;
    }
  }
  assert.fail('the semaphore was never collected');
});

test('a private semaphore does not keep the process alive (no hang)', async () => {
  const script = `const { Semaphore } = require(${JSON.stringify(PKG)});
    new Semaphore(0).acquire(1).then(() => process.exit(3));`;
  const res = await new Promise((resolve) => {
    execFile(process.execPath, ['-e', script], { timeout: 60_000 }, (err) => resolve(err));
  });
  assert.equal(res, null, `the child should exit by itself with 0: ${res}`);
});
