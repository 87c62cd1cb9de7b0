'use strict';
// volt-sem demo: the main thread and two workers share one Semaphore(3).
// Weighted jobs queue in strict FIFO order across threads; one job is aborted
// while it waits (its partial grant, if any, goes to the next in line). A
// SharedArrayBuffer tracks the permits held, to show they never exceed 3.
const path = require('node:path');
const { Worker, isMainThread, parentPort, workerData } = require('node:worker_threads');
const { Semaphore } = require(path.resolve(__dirname, '..'));

const PERMITS = 3;
const JOBS = {
  main: [['main-a', 2], ['main-b', 1], ['main-c', 3]],
  w1: [['w1-a', 3], ['w1-b', 1], ['w1-c', 2]],
  w2: [['w2-a', 1], ['w2-big', 3, 'abort'], ['w2-c', 2]],
};
const NAMES = Object.values(JOBS).flat().map((j) => j[0]);

async function runJobs(thread, shared, sab) {
  const sem = Semaphore.attach(shared);
  const stats = new Int32Array(sab); // [0] held, [1] max held, [2] log length, [3..] log
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  await Promise.all(
    JOBS[thread].map(async ([name, weight, abort], i) => {
      await sleep(i * 4); // stagger arrivals
      const ac = new AbortController();
      if (abort) setTimeout(() => ac.abort(new Error(`${name} gave up`)), 10);
      try {
        await sem.acquire(weight, { signal: ac.signal });
      } catch (e) {
        console.log(`  ${thread}: ${e.message} (aborted while queued)`);
        return;
      }
      const held = Atomics.add(stats, 0, weight) + weight;
      for (let m = Atomics.load(stats, 1); held > m; m = Atomics.load(stats, 1)) {
        if (Atomics.compareExchange(stats, 1, m, held) === m) break;
      }
      stats[3 + Atomics.add(stats, 2, 1)] = NAMES.indexOf(name);
      await sleep(20);
      Atomics.sub(stats, 0, weight);
      sem.release(weight);
    }),
  );
}

if (isMainThread) {
  const sem = new Semaphore(PERMITS);
  const sab = new SharedArrayBuffer(4 * (3 + NAMES.length));
  const shared = sem.share();
  console.log(`volt-sem demo: main + 2 workers share one Semaphore(${PERMITS})`);
  const workers = ['w1', 'w2'].map(
    (t) => new Worker(__filename, { workerData: { thread: t, shared, sab } }),
  );
  const exits = workers.map((w) => new Promise((r) => w.once('exit', r)));
  const ready = workers.map((w) => new Promise((r) => w.once('message', r)));
  Promise.all(ready)
    .then(() => {
      for (const w of workers) w.postMessage('go'); // everyone starts together
      return Promise.all([runJobs('main', shared, sab), ...exits]);
    })
    .then(() => {
    const stats = new Int32Array(sab);
    const order = Array.from(stats.subarray(3, 3 + stats[2]), (i) => {
      const job = Object.values(JOBS).flat()[i];
      return `${job[0]}(${job[1]})`;
    });
    console.log(`service order: ${order.join(' -> ')}`);
    console.log(`max held: ${stats[1]} of ${PERMITS}; permits back at the end: ${sem.availablePermits}`);
    if (stats[1] > PERMITS || sem.availablePermits !== PERMITS) process.exitCode = 1;
    });
} else {
  parentPort.once('message', () => runJobs(workerData.thread, workerData.shared, workerData.sab));
  parentPort.postMessage('ready');
}
