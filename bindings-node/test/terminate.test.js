'use strict';
// D2: a worker terminated right after a cross-thread grant (after its thread
// collected the grant natively, before its JS continuation ran) must not lose
// the permits. The worker gives its permit back as soon as it sees it, so
// after every termination exactly one permit must be available again.
const test = require('node:test');
const assert = require('node:assert/strict');
const { Semaphore } = require('..');
const { worker, nextMessage } = require('./helpers');

function spin(us) {
  const end = process.hrtime.bigint() + BigInt(Math.round(us * 1000));
  while (process.hrtime.bigint() < end);
}

test('a worker terminated 0-3 ms after a cross-thread grant never loses the permit', async () => {
  const TRIALS = 50;
  let lost = 0;
  let extra = 0;
  for (let i = 0; i < TRIALS; i++) {
    const s = new Semaphore(0);
    const w = worker(
      // The first reaction keeps the thread busy for 2 ms after the grant
      // was collected natively: a termination then lands before the second
      // reaction, which gives the permit back, has run.
      `const s = volt.Semaphore.attach(workerData);
       const p = s.acquire(1);
       p.then(() => { const end = process.hrtime.bigint() + 2000000n; while (process.hrtime.bigint() < end); });
       p.then(() => s.release(1));
       parentPort.postMessage('queued');`,
      s.share(),
    );
    await nextMessage(w, (m) => m === 'queued');
    s.release(1);
    spin((i * 3000) / TRIALS);
    await w.terminate();
    const a = s.availablePermits;
    if (a < 1) lost++;
    if (a > 1) extra++;
  }
  assert.equal(lost, 0, `grants lost in ${lost} of ${TRIALS} trials`);
  assert.equal(extra, 0, `permits duplicated in ${extra} of ${TRIALS} trials`);
});

test('a delivered grant is confirmed even if queueMicrotask is replaced (fake timers)', async () => {
  const stats = require('../binding.js').loadNative().stats;
  const real = globalThis.queueMicrotask;
  globalThis.queueMicrotask = () => {};
  try {
    const s = new Semaphore(0);
    const got = s.acquire(2);
    const w = worker(`volt.Semaphore.attach(workerData).release(2);`, s.share());
    await got;
    await new Promise((r) => setImmediate(r));
    assert.equal(stats().delivered, 0, 'no grant left unconfirmed');
    await w.terminate();
  } finally {
    globalThis.queueMicrotask = real;
  }
});
