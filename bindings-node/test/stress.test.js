'use strict';
// Main thread + 3 workers x 20 tasks on one Semaphore(4): weights 1..=3,
// random aborts. A SharedArrayBuffer counts the permits held; it must never
// exceed 4, and every permit must be back at the end.
const test = require('node:test');
const assert = require('node:assert/strict');
const { Semaphore } = require('..');
const { worker, exited } = require('./helpers');

const PERMITS = 4;
const TASKS = 20;
const WORKERS = 3;

// Runs in the main thread and (as source) in each worker.
async function runTasks(volt, shared, stats, seed, tasks) {
  const s = volt.Semaphore.attach(shared);
  const PERMITS_ = 4;
  const held = stats; // [0] held now, [1] max held, [2] grants, [3] aborts, [4] violations
  let x = seed >>> 0 || 1;
  const rand = (n) => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) % n;
  };
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const one = async () => {
    const w = 1 + rand(3);
    const ac = rand(4) === 0 ? new AbortController() : undefined;
    if (ac) setTimeout(() => ac.abort(new Error('random abort')), rand(3));
    try {
      await s.acquire(w, { signal: ac?.signal });
    } catch (e) {
      if (e.message !== 'random abort') throw e;
      Atomics.add(held, 3, 1);
      return;
    }
    const now = Atomics.add(held, 0, w) + w;
    if (now > PERMITS_) Atomics.add(held, 4, 1);
    for (let m = Atomics.load(held, 1); now > m; m = Atomics.load(held, 1)) {
      if (Atomics.compareExchange(held, 1, m, now) === m) break;
    }
    Atomics.add(held, 2, 1);
    if (rand(2)) await sleep(rand(2));
    else await null;
    Atomics.sub(held, 0, w);
    s.release(w);
  };
  const all = [];
  for (let i = 0; i < tasks; i++) {
    all.push(one());
    if (rand(3) === 0) await null;
  }
  await Promise.all(all);
}

for (let round = 0; round < 4; round++) {
  test(`stress round ${round}: main + 3 workers x 20 tasks, weights 1..=3, random aborts, Semaphore(4)`, async () => {
    const sem = new Semaphore(PERMITS);
    const stats = new Int32Array(new SharedArrayBuffer(5 * 4));
    const shared = sem.share();
    const workers = [];
    for (let i = 0; i < WORKERS; i++) {
      workers.push(
        worker(
          `const runTasks = ${runTasks.toString()};
           runTasks(volt, workerData.shared, workerData.stats, workerData.seed, workerData.tasks)
             .then(() => parentPort.postMessage('done'));`,
          { shared, stats, seed: (0x9e3779b9 * (i + 2) + round * 7919) >>> 0, tasks: TASKS },
        ),
      );
    }
    await runTasks(require('..'), shared, stats, 12345 + round, TASKS);
    await Promise.all(workers.map(exited));
    for (const w of workers) assert.deepEqual(w.messages, ['done'], 'each worker finished its tasks');
    const [heldNow, maxHeld, grants, aborts, violations] = stats;
    assert.equal(violations, 0, 'never more than 4 permits held');
    assert.ok(maxHeld <= PERMITS && maxHeld >= 1, `max held ${maxHeld}`);
    assert.equal(heldNow, 0);
    assert.equal(grants + aborts, (WORKERS + 1) * TASKS, 'every task was granted or aborted');
    assert.equal(sem.availablePermits, PERMITS, 'every permit is back');
    assert.equal(sem.heldPermits, 0, 'nothing counted as held');
    assert.equal(sem.tryAcquire(PERMITS), true);
  });
}
