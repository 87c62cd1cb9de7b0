'use strict';
// Main + 2 workers on one Semaphore(4): weighted acquires with random aborts,
// while the main thread keeps shrinking and growing the total by 1-2. A
// SharedArrayBuffer tracks the permits held, which never exceed the largest
// total (the exact shrink bound is checked deterministically in
// resize.test.js: here grants in flight make a cross-thread check racy). At the
// end every permit is back and nothing is owed or queued.
const test = require('node:test');
const assert = require('node:assert/strict');
const { Semaphore } = require('..');
const { worker, exited } = require('./helpers');

async function runTasks(volt, shared, stats, seed, tasks, resizer) {
  const s = volt.Semaphore.attach(shared);
  // stats: [0] held, [1] violations, [2] grants, [3] aborts
  let x = seed >>> 0 || 1;
  const rand = (n) => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) % n;
  };
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const one = async () => {
    const w = 1 + rand(2);
    const ac = rand(3) === 0 ? new AbortController() : undefined;
    if (ac) setTimeout(() => ac.abort(new Error('random abort')), rand(3));
    try {
      await s.acquire(w, { signal: ac?.signal });
    } catch (e) {
      if (e.message !== 'random abort') throw e;
      Atomics.add(stats, 3, 1);
      return;
    }
    const now = Atomics.add(stats, 0, w) + w;
    if (now > 4) Atomics.add(stats, 1, 1); // never above the largest total
    Atomics.add(stats, 2, 1);
    if (rand(2)) await sleep(rand(2));
    else await null;
    Atomics.sub(stats, 0, w);
    s.release(w);
  };
  const all = [];
  for (let i = 0; i < tasks; i++) {
    all.push(one());
    if (resizer && rand(4) === 0) {
      const k = 1 + rand(2);
      s.removePermits(k);
      await sleep(rand(3));
      s.addPermits(k);
    }
    if (rand(3) === 0) await null;
  }
  await Promise.all(all);
}

for (let round = 0; round < 3; round++) {
  test(`resize stress round ${round}: main + 2 workers, aborts, shrink/grow, conservation`, async () => {
    const sem = new Semaphore(4);
    const stats = new Int32Array(new SharedArrayBuffer(4 * 4));
    const shared = sem.share();
    const workers = [0, 1].map((i) =>
      worker(
        `const runTasks = ${runTasks.toString()};
         runTasks(volt, workerData.shared, workerData.stats, workerData.seed, 40, false)
           .then(() => parentPort.postMessage('done'));`,
        { shared, stats, seed: (0x9e3779b9 * (i + 3) + round * 7919) >>> 0 },
      ),
    );
    await runTasks(require('..'), shared, stats, 777 + round, 40, true);
    await Promise.all(workers.map(exited));
    for (const w of workers) assert.deepEqual(w.messages, ['done']);
    const [held, violations, grants, aborts] = stats;
    assert.equal(held, 0);
    assert.equal(violations, 0, 'never more permits held than the total allowed');
    assert.equal(grants + aborts, 120);
    assert.equal(sem.pendingRemoval, 0);
    assert.equal(sem.pendingCount, 0);
    assert.equal(sem.availablePermits, 4, 'every permit is back');
    assert.equal(sem.heldPermits, 0, 'nothing counted as held');
  });
}
