'use strict';
// Growing and shrinking the total (async-mutex setValue, p-limit's
// concurrency setter): FIFO is kept and, once removePermits() returned, the
// permits held never exceed the new total.
const test = require('node:test');
const assert = require('node:assert/strict');
const { Semaphore } = require('..');
const { worker, nextMessage, exited } = require('./helpers');

const tick = () => new Promise((r) => setImmediate(r));

test('removePermits takes available permits at once and owes the rest', async () => {
  const s = new Semaphore(5);
  await s.acquire(2);
  s.removePermits(2);
  assert.equal(s.availablePermits, 1);
  assert.equal(s.pendingRemoval, 0);
  s.removePermits(3); // 1 available now, 2 owed
  assert.equal(s.availablePermits, 0);
  assert.equal(s.pendingRemoval, 2);
  s.release(2); // pays the debt: total is now 0
  assert.equal(s.availablePermits, 0);
  assert.equal(s.pendingRemoval, 0);
  s.addPermits(3);
  assert.equal(s.availablePermits, 3);
  assert.throws(() => s.removePermits(-1), { code: 'ERR_OUT_OF_RANGE' });
});

test('shrinking while permits are held: no waiter is served until holders fit the new total', async () => {
  const s = new Semaphore(4);
  await s.acquire(4); // 4 held
  let held = 4;
  let peak = 0;
  const order = [];
  const all = ['a', 'b', 'c'].map((name) =>
    s.acquire(1).then(() => {
      held += 1;
      peak = Math.max(peak, held);
      order.push(name);
    }),
  );
  s.removePermits(2); // new total 2: nobody may be served until held < 2
  const give = () => {
    held -= 1;
    s.release(1);
  };
  give(); // held 3 -> pays debt
  give(); // held 2 -> pays debt
  await tick();
  assert.deepEqual(order, []);
  give(); // held 1 -> a
  await tick();
  assert.deepEqual(order, ['a']);
  give(); // held 1 (a) -> b
  await tick();
  assert.deepEqual(order, ['a', 'b']);
  assert.equal(held, 2);
  give();
  give();
  await Promise.all(all);
  assert.deepEqual(order, ['a', 'b', 'c']);
  assert.ok(peak <= 2, `peak held ${peak} > new total 2`);
  give();
  assert.equal(s.availablePermits, 2, 'the new total');
});

test('a cancelled head with a partial grant does not pass it on past a pending removal', async () => {
  const s = new Semaphore(4);
  await s.acquire(2); // A holds 2
  const ac = new AbortController();
  const b = s.acquire(4, { signal: ac.signal }).catch((e) => e.message); // takes the 2 available as a partial grant
  let cDone = false;
  const c = s.acquire(2).then(() => (cDone = true));
  assert.equal(s.availablePermits, 0);
  s.removePermits(2); // total 2, owed 2 (A holds 2, B's partial 2)
  assert.equal(s.pendingRemoval, 2);
  ac.abort(new Error('gave up'));
  assert.equal(await b, 'gave up');
  await tick();
  assert.equal(cDone, false, "B's partial grant must not make C a holder while A holds the whole new total");
  s.release(2); // A done: pays the debt, then B's 2 go on to C
  await c;
  assert.equal(s.pendingRemoval, 0);
  s.release(2); // C done
  assert.equal(s.availablePermits, 2, 'the new total, every permit accounted for');
  // cancel() behaves the same.
  await s.acquire(2);
  const d = s.acquire(2).catch((e) => e.code);
  s.removePermits(1);
  assert.equal(s.cancel(), 1);
  assert.equal(await d, 'ERR_VOLT_CANCELLED');
  s.release(2);
  assert.equal(s.availablePermits, 1);
});

test('a worker terminated with a partial grant during a pending removal does not leak or pass it on', async () => {
  const s = new Semaphore(3);
  await s.acquire(2); // main holds 2
  const w = worker(
    `const s = volt.Semaphore.attach(workerData);
     s.acquire(3); // takes the 1 available as a partial grant
     parentPort.postMessage('queued');`,
    s.share(),
  );
  await nextMessage(w, (m) => m === 'queued');
  let cDone = false;
  const c = s.acquire(1).then(() => (cDone = true));
  s.removePermits(1); // total 2: main holds both
  await w.terminate();
  await tick();
  assert.equal(cDone, false, "the worker's partial grant must not go to C yet");
  s.release(1); // pays the debt; the worker's 1 then goes to C
  await c;
  s.release(1);
  s.release(1);
  assert.equal(s.availablePermits, 2);
  await exited(w);
});

test('a release that pays the debt and completes an orphaned head passes its grant on', async () => {
  const s = new Semaphore(6);
  await s.acquire(4); // A holds 4
  const ac = new AbortController();
  const b = s.acquire(4, { signal: ac.signal }).catch((e) => e.message); // partial grant of 2
  const c = s.acquire(3);
  s.removePermits(2); // total 4, owed 2
  ac.abort(new Error('gave up')); // B stays queued as an orphan
  assert.equal(await b, 'gave up');
  s.release(4); // pays 2; the other 2 complete B's 4, which go on: C gets 3
  await c;
  assert.equal(s.pendingRemoval, 0);
  assert.equal(s.availablePermits, 1);
  s.release(3);
  assert.equal(s.availablePermits, 4, 'the new total');
});
