'use strict';
// The idioms users bring from async-mutex, p-limit and async-sema.
const test = require('node:test');
const assert = require('node:assert/strict');
const { Semaphore, Mutex, RwLock } = require('..');
const { worker, nextMessage, exited } = require('./helpers');

const tick = () => new Promise((r) => setImmediate(r));

test('acquirePermit() resolves to a releaser: idempotent, carries its count, disposable', async () => {
  const s = new Semaphore(3);
  const release = await s.acquirePermit(2);
  assert.equal(typeof release, 'function');
  assert.equal(release.permits, 2);
  assert.equal(s.availablePermits, 1);
  release();
  release();
  assert.equal(s.availablePermits, 3, 'released once');
  {
    const p = await s.acquirePermit(3);
    assert.equal(s.availablePermits, 0);
    p[Symbol.dispose]();
    p[Symbol.dispose]();
  }
  assert.equal(s.availablePermits, 3);
  // Queued: resolves to the releaser once granted, FIFO with plain acquires.
  await s.acquire(3);
  const order = [];
  const a = s.acquirePermit(2).then((r) => (order.push('a'), r));
  const b = s.acquire(1).then(() => order.push('b'));
  s.release(3);
  const ra = await a;
  await b;
  assert.deepEqual(order, ['a', 'b']);
  ra();
  assert.equal(s.availablePermits, 2);
  const ac = new AbortController();
  ac.abort(new Error('no'));
  await assert.rejects(s.acquirePermit(1, { signal: ac.signal }), /no/);
  // Mutex and RwLock releasers are disposable too.
  const m = new Mutex();
  const r = await m.acquire();
  assert.equal(m.isLocked(), true);
  r[Symbol.dispose]();
  assert.equal(m.isLocked(), false);
  const l = new RwLock();
  const w = await l.acquireWrite();
  w[Symbol.dispose]();
  assert.equal(l.isLocked(), false);
});

test("every releaser has the Releaser type's fields: permits, and token null off Redis", async () => {
  // index.d.ts: `Mutex#acquire(): Promise<Releaser>`, whose `token` is
  // `number | null` ("null on local and named semaphores"). A Mutex's own
  // releaser left it undefined, so `rel.token !== null` was true.
  const s = new Semaphore(2);
  const m = new Mutex();
  const l = new RwLock();
  const rels = {
    acquirePermit: await s.acquirePermit(1),
    tryAcquirePermit: await s.tryAcquirePermit(1),
    'Mutex#acquire': await m.acquire(),
    'RwLock#acquireRead': await l.acquireRead(),
  };
  rels['Mutex#tryAcquire'] = (rels['Mutex#acquire'](), m.tryAcquire());
  rels['RwLock#tryAcquireRead'] = l.tryAcquireRead();
  for (const [what, rel] of Object.entries(rels)) {
    assert.equal(typeof rel, 'function', what);
    assert.equal(rel.token, null, `${what}: token`);
    assert.equal(rel.permits, 1, `${what}: permits`);
    assert.equal(rel[Symbol.dispose], rel, `${what}: Symbol.dispose`);
    rel();
  }
  assert.equal(m.isLocked(), false);
  assert.equal(l.isLocked(), false);
  assert.equal(s.availablePermits, 2);
});

test('isLocked() and waitForUnlock(): FIFO, without taking the permits', async () => {
  const s = new Semaphore(2);
  assert.equal(s.isLocked(), false);
  await s.acquire(2);
  assert.equal(s.isLocked(), true);
  const order = [];
  const first = s.acquire(1).then(() => order.push('acquire'));
  const waited = s.waitForUnlock(1).then(() => order.push('unlocked'));
  s.release(1);
  await tick();
  assert.deepEqual(order, ['acquire'], 'waitForUnlock does not overtake');
  s.release(1);
  await Promise.all([first, waited]);
  assert.deepEqual(order, ['acquire', 'unlocked']);
  assert.equal(s.availablePermits, 1, 'waitForUnlock took nothing');
  const m = new Mutex();
  const rel = await m.acquire();
  let free = false;
  const p = m.waitForUnlock().then(() => (free = true));
  await tick();
  assert.equal(free, false);
  rel();
  await p;
  assert.equal(m.isLocked(), false);
});

test('pendingCount counts queued acquires in every thread', async () => {
  const s = new Semaphore(0);
  assert.equal(s.pendingCount, 0);
  const mine = [s.acquire(1), s.acquire(2)];
  assert.equal(s.pendingCount, 2);
  const w = worker(
    `const s = volt.Semaphore.attach(workerData);
     s.acquire(1).then(() => parentPort.postMessage('served'));
     parentPort.postMessage(s.pendingCount);`,
    s.share(),
  );
  assert.equal(await nextMessage(w), 3);
  s.release(4);
  await Promise.all(mine);
  assert.equal(await nextMessage(w, (m) => m === 'served'), 'served');
  await exited(w);
  assert.equal(s.pendingCount, 0);
  const m = new Mutex();
  const r = await m.acquire();
  const q = m.acquire();
  assert.equal(m.pendingCount, 1);
  r();
  (await q)();
  assert.equal(m.pendingCount, 0);
});

test('cancel(reason) rejects every queued acquire; the semaphore stays usable; partial grants go on', async () => {
  const s = new Semaphore(0);
  const other = Semaphore.attach(s.share()); // another object, same semaphore
  const outcomes = [];
  const track = (label, p) => p.then(() => outcomes.push(label), (e) => outcomes.push(`${label}!${e.code ?? e.message}`));
  const all = [track('a3', s.acquire(3)), track('b1', s.acquire(1)), track('x2', other.acquire(2)), track('c1', s.acquire(1))];
  s.release(2); // a3 holds a partial grant of 2
  assert.equal(s.pendingCount, 4);
  assert.equal(s.cancel(), 3);
  await Promise.all(all);
  // a3's partial grant went to x2, the next waiter not being cancelled.
  assert.deepEqual(outcomes.sort(), ['a3!ERR_VOLT_CANCELLED', 'b1!ERR_VOLT_CANCELLED', 'c1!ERR_VOLT_CANCELLED', 'x2']);
  assert.equal(s.pendingCount, 0);
  assert.equal(s.availablePermits, 0);
  s.release(2);
  assert.equal(s.availablePermits, 2, 'every permit accounted for');
  // Reusable (unlike close), with a custom reason, rejected in FIFO order.
  await s.acquire(2);
  const order = [];
  const p1 = s.acquire(1).catch((e) => order.push(`p1:${e.message}`));
  const p2 = s.acquire(1).catch((e) => order.push(`p2:${e.message}`));
  assert.equal(s.cancel(new Error('shutdown')), 2);
  await Promise.all([p1, p2]);
  assert.deepEqual(order, ['p1:shutdown', 'p2:shutdown']);
  assert.equal(s.cancel(), 0);
  s.release(2);
  await s.acquire(2);
  s.release(2);
  // Mutex.cancel
  const m = new Mutex();
  const r = await m.acquire();
  const waiting = m.acquire();
  assert.equal(m.cancel(), 1);
  await assert.rejects(waiting, { code: 'ERR_VOLT_CANCELLED' });
  r();
  assert.equal(m.isLocked(), false);
});

test('heldPermits counts permits acquired and not released, in every thread', async () => {
  const s = new Semaphore(5);
  assert.equal(s.heldPermits, 0);
  await s.acquire(2);
  assert.equal(s.tryAcquire(1), true);
  assert.equal(s.heldPermits, 3);
  const big = s.acquire(3); // queued with a partial grant of 2: not held yet
  assert.equal(s.heldPermits, 3);
  s.release(3); // all held permits back; 1 of them completes big
  await big;
  assert.equal(s.heldPermits, 3);
  assert.equal(s.availablePermits, 2);
  const w = worker(
    `const s = volt.Semaphore.attach(workerData);
     s.acquire(2).then(() => parentPort.postMessage(s.heldPermits));`,
    s.share(),
  );
  assert.equal(await nextMessage(w), 5);
  await exited(w);
  s.release(7); // 5 held back, 2 more added to the total
  assert.equal(s.heldPermits, 0);
  assert.equal(s.availablePermits, 7);
  const ac = new AbortController();
  const r = await s.acquirePermit(7);
  const aborted = s.acquire(1, { signal: ac.signal }).catch(() => 'aborted');
  ac.abort();
  assert.equal(await aborted, 'aborted');
  assert.equal(s.heldPermits, 7);
  r();
  assert.equal(s.heldPermits, 0);
});
