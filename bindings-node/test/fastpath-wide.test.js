'use strict';
// The JS fast path works on the low 32 bits of the state word and of the
// `held` counter when a transition neither borrows from nor carries into the
// high half, and on the whole 64-bit word otherwise (index.js, View). These
// tests drive counts across the boundaries where that changes (a low half of
// 2^31 and 2^32: 2^29 and 2^30 permits in the state word, whose low 2 bits are
// flags; 2^31 and 2^32 held permits) and check every count against a model,
// FIFO order against queued waiters, and conservation across a worker.
const test = require('node:test');
const assert = require('node:assert/strict');
const { Semaphore } = require('..');
const { worker, nextMessage, exited } = require('./helpers');

// Views are made after 16 native-path operations (VIEW_AFTER in index.js).
function warm(s) {
  for (let i = 0; i < 32; i++) s.tryAcquire(0);
  return s;
}

const P29 = 2 ** 29;
const P30 = 2 ** 30;
const P31 = 2 ** 31;
const P32 = 2 ** 32;

test('counts stay exact across the 32-bit boundaries of the state word and of held', () => {
  const starts = [P29 - 2, P29 + 1, P30 - 2, P30 + 1, P31 + 3, P32 - 1, P32 + 1, 3 * P30 + 1, 2 ** 40 + 5];
  const sizes = [1, 2, 3, P29 - 1, P29, P29 + 1, P30 - 1, P30, P31 - 1, P31, P32 + 2];
  for (const start of starts) {
    const s = warm(new Semaphore(start));
    let available = start;
    let held = 0;
    // A fixed walk: every size taken and given back in an order that moves
    // the counts over each boundary in both directions.
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < sizes.length; i++) {
        const n = sizes[(i * 7 + round * 3) % sizes.length];
        const took = s.tryAcquire(n);
        assert.equal(took, n <= available, `start ${start}: tryAcquire(${n}) with ${available} available`);
        if (took) {
          available -= n;
          held += n;
        }
        assert.equal(s.availablePermits, available, `start ${start}: available after tryAcquire(${n})`);
        assert.equal(s.heldPermits, held, `start ${start}: held after tryAcquire(${n})`);
        if (i % 3 === 2 && held > 0) {
          const m = sizes[(i + round) % sizes.length];
          const back = Math.min(m, held);
          s.release(back);
          available += back;
          held -= back;
          assert.equal(s.availablePermits, available, `start ${start}: available after release(${back})`);
          assert.equal(s.heldPermits, held, `start ${start}: held after release(${back})`);
        }
      }
    }
    // More than held: held stops at 0, the rest grows the total.
    s.release(held + 3);
    available += held + 3;
    held = 0;
    assert.equal(s.availablePermits, available);
    assert.equal(s.heldPermits, 0);
    s.addPermits(P29 + 7); // not a give-back
    available += P29 + 7;
    assert.equal(s.availablePermits, available);
    assert.equal(s.heldPermits, 0);
  }
});

test('single permits step over each boundary of the state word and of held, both ways', async () => {
  // In the state word (available << 2): bit 31 at 2^29 permits, bit 32 at 2^30.
  for (const edge of [P29, P30, P31, P32]) {
    const s = warm(new Semaphore(edge - 2));
    s.release(1);
    s.addPermits(1); // edge - 1 -> edge: a carry out of the low half at 2^30
    assert.equal(s.availablePermits, edge, `up to ${edge}`);
    s.release(2);
    assert.equal(s.availablePermits, edge + 2);
    assert.equal(s.tryAcquire(3), true); // a borrow back under the edge
    assert.equal(s.availablePermits, edge - 1, `down from ${edge}`);
    await s.acquire(1);
    assert.equal(s.tryAcquire(1), true);
    assert.equal(s.availablePermits, edge - 3);
    s.release(5);
    assert.equal(s.availablePermits, edge + 2);
    assert.equal(s.heldPermits, 0);
  }
  // In held (a plain count): bit 31 at 2^31 held permits, bit 32 at 2^32.
  for (const edge of [P31, P32]) {
    const s = warm(new Semaphore(2 * edge));
    assert.equal(s.tryAcquire(edge - 2), true);
    for (let i = 0; i < 4; i++) {
      await s.acquire(1); // edge - 1, edge, edge + 1, edge + 2
      assert.equal(s.heldPermits, edge - 1 + i, `held up to ${edge}`);
    }
    for (let i = 0; i < 4; i++) {
      s.release(1); // and back down, one at a time
      assert.equal(s.heldPermits, edge + 1 - i, `held down from ${edge}`);
    }
    s.release(edge - 2);
    assert.equal(s.heldPermits, 0);
    assert.equal(s.availablePermits, 2 * edge);
  }
});

test('held counts past 2^31 and 2^32 taken by the fast path come back exactly', async () => {
  const s = warm(new Semaphore(3 * P32));
  assert.equal(s.tryAcquire(P31 - 1), true);
  await s.acquire(2); // held crosses 2^31
  assert.equal(s.heldPermits, P31 + 1);
  assert.equal(s.tryAcquire(P31 - 1), true); // held reaches 2^32
  assert.equal(s.heldPermits, P32);
  await s.acquire(1); // held crosses 2^32
  assert.equal(s.heldPermits, P32 + 1);
  s.release(2); // held back below 2^32
  assert.equal(s.heldPermits, P32 - 1);
  s.release(P31); // below 2^31
  assert.equal(s.heldPermits, P31 - 1);
  s.release(P31 - 1);
  assert.equal(s.heldPermits, 0);
  assert.equal(s.availablePermits, 3 * P32);
  const st = s.stats();
  assert.equal(st.held, 0);
  assert.equal(st.available, 3 * P32);
});

test('large counts: fast-path takes never overtake queued waiters, and every permit comes back', async () => {
  const start = P32 + 1; // the word's low half is small, its high half is not
  const s = warm(new Semaphore(start));
  assert.equal(s.tryAcquire(3), true); // borrows from the high half: the 64-bit path
  assert.equal(s.availablePermits, P32 - 2);
  assert.equal(s.tryAcquire(P32 - 2), true); // the low half from 2^32 - 8: negative as an Int32
  assert.equal(s.availablePermits, 0);
  const order = [];
  const big = s.acquire(P31 + 1).then(() => order.push('big'));
  const small = s.acquire(1).then(() => order.push('small'));
  s.release(P31); // a partial grant to `big`: nothing becomes available
  assert.equal(s.availablePermits, 0);
  for (let i = 0; i < 1000; i++) assert.equal(s.tryAcquire(1), false);
  s.release(2); // completes `big` (1 of them), then `small` (the other)
  await big;
  await small;
  assert.deepEqual(order, ['big', 'small']);
  assert.equal(s.availablePermits, 0);
  assert.equal(s.tryAcquire(1), false);
  s.release(P31 + 1); // big's
  s.release(1); // small's
  s.release(P31 - 1); // the rest of the first two takes (P31 + 2 went to the waiters)
  assert.equal(s.availablePermits, start);
  assert.equal(s.heldPermits, 0);
  assert.equal(s.pendingCount, 0);
});

test('a worker on the fast path at large counts and a main thread waiter: FIFO and conservation', async () => {
  const start = P32 + 5;
  const s = warm(new Semaphore(start));
  const sab = new SharedArrayBuffer(8);
  const w = worker(
    `const { id, sab } = workerData;
     const s = volt.Semaphore.attach(id);
     for (let i = 0; i < 32; i++) s.tryAcquire(0);
     const flag = new Int32Array(sab);
     const sizes = [1, ${P29 - 1}, ${P29 + 1}, ${P30}, ${P31 - 1}, 3];
     let took = 0;
     (async () => {
       // Take and give back until the main thread says stop. A take that
       // succeeds after a waiter was seen queued, before the main thread
       // stopped the loop (it stops it before releasing), overtook it.
       for (let i = 0; Atomics.load(flag, 0) === 0; i++) {
         const n = sizes[i % sizes.length];
         const waiter = s.pendingCount > 0;
         if (s.tryAcquire(n)) {
           if (waiter && Atomics.load(flag, 0) === 0) Atomics.store(flag, 1, 1);
           took++;
           if (i % 4 === 0) await null;
           s.release(n);
         } else if (i % 64 === 0) {
           await new Promise((r) => setImmediate(r));
         }
       }
       parentPort.postMessage({ took });
     })();
     parentPort.postMessage('ready');`,
    { id: s.share(), sab },
  );
  const flag = new Int32Array(sab);
  await nextMessage(w, (m) => m === 'ready');
  // Let the worker run on its own for a while (bounded: it loops until told).
  await new Promise((r) => setTimeout(r, 50));
  // Ask for every permit: queued behind (or served between) the worker's takes.
  await s.acquire(start);
  // Stop the worker before reading held: its release gives the permits back
  // first and takes them off held after (as the native release does), so a
  // grant can reach us in between and held still counts the worker's n (and
  // a failed assertion here must not leave the worker looping for ever).
  Atomics.store(flag, 0, 1);
  const msg = await nextMessage(w, (m) => typeof m === 'object');
  assert.equal(s.availablePermits, 0);
  assert.equal(s.heldPermits, start);
  s.release(start);
  await exited(w);
  assert.equal(Atomics.load(flag, 1), 0, 'the worker took permits while a waiter was queued');
  assert.ok(msg.took > 0);
  assert.equal(s.availablePermits, start);
  assert.equal(s.heldPermits, 0);
  assert.equal(s.pendingCount, 0);
});

test('a removePermits debt whose low 32 bits are zero is still paid before the fast path gives permits back', () => {
  for (const debt of [P32, 3 * P32, P32 + P31]) {
    const s = warm(new Semaphore(0));
    s.removePermits(debt); // nothing available: all of it is owed
    assert.equal(s.pendingRemoval, debt);
    s.release(1);
    assert.equal(s.pendingRemoval, debt - 1, `debt ${debt}: a release pays it`);
    assert.equal(s.availablePermits, 0);
    s.addPermits(1);
    assert.equal(s.pendingRemoval, debt - 2, `debt ${debt}: addPermits pays it`);
    assert.equal(s.availablePermits, 0);
    s.release(debt - 2);
    assert.equal(s.pendingRemoval, 0);
    assert.equal(s.availablePermits, 0);
    s.release(2); // no debt left: the permits are available again
    assert.equal(s.availablePermits, 2);
    assert.equal(s.tryAcquire(2), true);
    assert.equal(s.heldPermits, 2);
  }
});
