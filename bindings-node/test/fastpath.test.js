'use strict';
// The JS fast path (src/view.rs): uncontended acquire/tryAcquire/release run
// in JS with Atomics on the core's own state word. These tests race it against
// native waiters in other threads, and check it never overtakes a queued waiter.
const test = require('node:test');
const assert = require('node:assert/strict');
const { Semaphore } = require('..');
const { execFile } = require('node:child_process');
const { PKG, worker, nextMessage, exited, raceWithWorker } = require('./helpers');

// A Semaphore makes its fast-path views after VIEW_AFTER (16) native-path
// operations (index.js): these tests warm it up first, so that what follows
// runs on the fast path.
const WARM = 'for (let i = 0; i < 32; i++) s.tryAcquire(0);';
function warm(s) {
  for (let i = 0; i < 32; i++) s.tryAcquire(0);
  return s;
}

test('the fast path keeps the counts exact (available, held, closed, removal debt)', async () => {
  const s = warm(new Semaphore(3));
  assert.equal(s.tryAcquire(2), true);
  assert.equal(s.availablePermits, 1);
  assert.equal(s.heldPermits, 2);
  await s.acquire(1);
  assert.equal(s.tryAcquire(1), false);
  assert.equal(s.heldPermits, 3);
  s.release(3);
  assert.equal(s.availablePermits, 3);
  assert.equal(s.heldPermits, 0);
  s.addPermits(2); // not a give-back
  assert.equal(s.availablePermits, 5);
  assert.equal(s.heldPermits, 0);
  // A removal debt is paid natively, before the counter gets anything.
  assert.equal(s.tryAcquire(5), true);
  s.removePermits(2);
  assert.equal(s.pendingRemoval, 2);
  s.release(3);
  assert.equal(s.pendingRemoval, 0);
  assert.equal(s.availablePermits, 1);
  assert.equal(s.heldPermits, 2);
  s.release(2);
  assert.equal(s.availablePermits, 3);
  // Closed: the native path answers.
  s.close();
  assert.throws(() => s.tryAcquire(1), { code: 'ERR_VOLT_CLOSED' });
  await assert.rejects(s.acquire(1), { code: 'ERR_VOLT_CLOSED' });
  // Overflow: the native path reports it.
  const big = warm(new Semaphore(Semaphore.MAX_PERMITS));
  assert.throws(() => big.release(1), RangeError);
  assert.equal(big.availablePermits, Semaphore.MAX_PERMITS);
});

// A private semaphore's fast path uses plain reads and writes (only its own
// thread can reach it); share() must switch it to Atomics before another
// thread can attach. Here the views are made while it is private, then both
// threads hammer the fast path: a plain read-modify-write racing the other
// thread's compare-and-swap loses updates, and the counts drift.
test('share() switches a private fast path to Atomics: counts stay exact under a race', async () => {
  // Enough permits that no tryAcquire fails: both threads stay on the fast path.
  const CAP = 4;
  const ROUNDS = 1_000_000;
  const s = warm(new Semaphore(CAP)); // views made while private
  const loop = `for (let i = 0; i < ${ROUNDS}; i++) { if (s.tryAcquire(1)) s.release(1); if (s.tryAcquire(2)) s.release(2); }`;
  await raceWithWorker(s, loop, `const s = volt.Semaphore.attach(workerData.id);\n${WARM}`);
  assert.equal(s.availablePermits, CAP, 'permits lost or made up by a racing update');
  assert.equal(s.heldPermits, 0);
});

test('a queued waiter is never overtaken by a fast-path acquire (same thread)', async () => {
  const s = warm(new Semaphore(2));
  await s.acquire(2);
  const order = [];
  const first = s.acquire(2).then(() => order.push('first'));
  s.release(1); // a partial grant to `first`: nothing becomes available
  assert.equal(s.availablePermits, 0);
  for (let i = 0; i < 1000; i++) assert.equal(s.tryAcquire(1), false);
  const second = s.acquire(1).then(() => order.push('second'));
  assert.equal(s.pendingCount, 2);
  s.release(1); // completes `first` only
  await first;
  assert.deepEqual(order, ['first']);
  assert.equal(s.tryAcquire(1), false); // `second` is still queued
  s.release(2);
  await second;
  assert.deepEqual(order, ['first', 'second']);
  s.release(1);
  assert.equal(s.availablePermits, 2);
  assert.equal(s.heldPermits, 0);
});

test('a waiter queued in a worker is never overtaken by the main thread fast path', async () => {
  const s = warm(new Semaphore(0));
  const w = worker(
    `const s = volt.Semaphore.attach(workerData);
     s.acquire(4).then(() => { parentPort.postMessage('granted'); s.release(4); });
     parentPort.postMessage('queued');`,
    s.share(),
  );
  await nextMessage(w, (m) => m === 'queued');
  for (let i = 0; i < 3; i++) {
    s.release(1); // partial grants to the worker
    for (let j = 0; j < 2000; j++) assert.equal(s.tryAcquire(1), false);
    assert.equal(s.availablePermits, 0);
  }
  const mine = s.acquire(1); // queued behind the worker
  s.release(1); // completes the worker's request
  await nextMessage(w, (m) => m === 'granted');
  await mine; // served after the worker gave its 4 back
  await exited(w);
  s.release(1);
  assert.equal(s.availablePermits, 4);
  assert.equal(s.heldPermits, 0);
});

// main + 3 workers, weights 1..=4, tryAcquire (fast path), acquire (fast or
// queued) and aborted acquires, on a shared semaphore of CAP permits. Checks:
// never more than CAP permits in use (conservation), every heavy request is
// served (FIFO: no barging, so weight 4 never starves), and at the end every
// permit is back, nothing is held, nothing is queued.
const RACE = `
async function race(s, shared, tid, iters) {
  const CAP = 5;
  const useNow = (w) => {
    const now = Atomics.add(shared, 0, w) + w;
    if (now > CAP) Atomics.add(shared, 1, 1);
  };
  const done = (w) => Atomics.sub(shared, 0, w);
  const tick = () => new Promise((r) => setImmediate(r));
  async function actor(a) {
    for (let i = 0; i < iters; i++) {
      const w = 1 + ((i + tid + a) % 4);
      const mode = (i * 7 + tid + a) % 5;
      if (mode === 0) {
        if (!s.tryAcquire(w)) continue;
      } else if (mode === 1) {
        const ac = new AbortController();
        const p = s.acquire(w, { signal: ac.signal });
        if (i % 2 === 0) queueMicrotask(() => ac.abort());
        else setImmediate(() => ac.abort());
        try { await p; } catch { Atomics.add(shared, 3, 1); continue; }
      } else {
        await s.acquire(w);
        if (w === 4) Atomics.add(shared, 4, 1);
      }
      useNow(w);
      Atomics.add(shared, 2, 1);
      if (i % 3 === 0) await tick(); else await null;
      done(w);
      s.release(w);
    }
  }
  await Promise.all([actor(0), actor(1), actor(2)]);
}
`;

test('the fast path races native waiters in 3 workers: conservation and no starvation', async () => {
  const CAP = 5;
  const ITERS = 400;
  const s = warm(new Semaphore(CAP));
  const sab = new SharedArrayBuffer(4 * 8);
  const shared = new Int32Array(sab);
  const ws = [1, 2, 3].map((tid) =>
    worker(
      `${RACE}
       const { s: id, sab } = workerData;
       const s = volt.Semaphore.attach(id);
       ${WARM}
       race(s, new Int32Array(sab), ${tid}, ${ITERS}).then(() => parentPort.postMessage('done'));`,
      { s: s.share(), sab },
    ),
  );
  // eslint-disable-next-line no-new-func
  const race = new Function(`${RACE}; return race;`)();
  await race(s, shared, 0, ITERS);
  await Promise.all(ws.map((w) => nextMessage(w, (m) => m === 'done')));
  await Promise.all(ws.map(exited));
  assert.equal(Atomics.load(shared, 1), 0, 'more than CAP permits were in use at once');
  assert.equal(Atomics.load(shared, 0), 0);
  assert.ok(Atomics.load(shared, 2) > ITERS, `grants: ${Atomics.load(shared, 2)}`);
  assert.ok(Atomics.load(shared, 4) > 0, 'no weight-4 request was served');
  assert.equal(s.availablePermits, CAP);
  assert.equal(s.heldPermits, 0);
  assert.equal(s.pendingCount, 0);
  assert.equal(s.pendingRemoval, 0);
});

test('views keep the semaphore alive in a worker after every other handle is gone', async () => {
  const w = worker(
    `const s = volt.Semaphore.attach(workerData);
     ${WARM}
     parentPort.postMessage('attached');
     parentPort.once('message', () => {
       globalThis.gc?.();
       let ok = s.tryAcquire(1);
       s.release(1);
       parentPort.postMessage(ok && s.availablePermits === 2);
     });`,
    new Semaphore(2).share(),
  );
  await nextMessage(w, (m) => m === 'attached');
  w.postMessage('go');
  assert.equal(await nextMessage(w, (m) => typeof m === 'boolean'), true);
  await exited(w);
});

test('a view owns its semaphore: it stays alive (attachable) until the view is collected', async () => {
  // In a child with --expose-gc: the registry holds a semaphore weakly, so
  // attach() finds it exactly while something owns it.
  const script = `
    const assert = require('node:assert/strict');
    require(${JSON.stringify(PKG)}); // initialises this thread's runtime
    const native = require(${JSON.stringify(`${PKG}/binding.js`)}).loadNative();
    const gcAll = async () => {
      for (let i = 0; i < 6; i++) {
        globalThis.gc();
        await new Promise((r) => setImmediate(r));
      }
    };
    (async () => {
      let h = native.create(5);
      const id = native.share(h);
      let h2 = native.attach(id); // ends the share() pin
      let view = native.view(h);
      assert.notEqual(view, null);
      h = null;
      h2 = null;
      await gcAll();
      let again = native.attach(id);
      assert.notEqual(again, null, 'the view must keep the semaphore alive');
      assert.equal(Atomics.load(view[0], 0), 5n << 2n);
      again = null;
      view = null;
      await gcAll();
      assert.equal(native.attach(id), null, 'gone once the view is collected');
    })().catch((e) => { console.error(e); process.exit(1); });
  `;
  const res = await new Promise((resolve) => {
    execFile(process.execPath, ['--expose-gc', '-e', script], { timeout: 60_000 }, (err, _out, stderr) =>
      resolve(err ? `${err}\n${stderr}` : null),
    );
  });
  assert.equal(res, null);
});
