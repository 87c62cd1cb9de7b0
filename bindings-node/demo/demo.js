'use strict';
// volt-sem demo (the Node part of `make demo`): the main thread and a worker
// share one Semaphore(3). While the pool is held, weighted requests (1 to 3
// permits) arrive one at a time, alternating between the two threads, each
// queued before the next arrives; then the pool opens. Prints the arrival
// order beside the service order, checks FIFO and that the weight-3 request
// (queued by the worker) was never overtaken, then runs the same arrivals
// against a minimal barging semaphore written in plain JS (the usual shape:
// on release, every waiter retries and whoever fits first wins).
const path = require('node:path');
const { Worker, isMainThread, parentPort, workerData } = require('node:worker_threads');
const { Semaphore } = require(path.resolve(__dirname, '..'));

const PERMITS = 3;
const BIG = 3;
// [name, weight, thread]: the big request is fourth, queued by the worker.
const ARRIVALS = [
  ['m1', 1, 'main'], ['w1', 2, 'worker'], ['m2', 1, 'main'], ['BIG', BIG, 'worker'],
  ['m3', 1, 'main'], ['w2', 2, 'worker'], ['m4', 1, 'main'], ['w3', 1, 'worker'],
  ['m5', 2, 'main'], ['w4', 1, 'worker'], ['m6', 1, 'main'],
];
const WORK_MS = 5;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const tick = () => new Promise((resolve) => setImmediate(resolve));
const now = () => performance.timeOrigin + performance.now(); // comparable across threads

// Shared by both threads: the service log [count, who...], the permits held
// and the peak, and when the big request got in.
function board(sab) {
  return {
    entries: new Int32Array(sab, 0, 1 + ARRIVALS.length),
    held: new Int32Array(sab, 64, 2), // [held, peak]
    bigAt: new Float64Array(sab, 72, 1),
  };
}
const BOARD_BYTES = 80;

/** Queues `acquire(n)` at once; once granted, records, works, and gives the permits back. */
function startJob(who, acquire, b, giveBack) {
  const n = ARRIVALS[who][1];
  const granted = acquire(n);
  return (async () => {
    await granted;
    b.entries[1 + Atomics.add(b.entries, 0, 1)] = who;
    const held = Atomics.add(b.held, 0, n) + n;
    for (let peak = Atomics.load(b.held, 1); held > peak; peak = Atomics.load(b.held, 1)) {
      if (Atomics.compareExchange(b.held, 1, peak, held) === peak) break;
    }
    if (ARRIVALS[who][0] === 'BIG') b.bigAt[0] = now();
    await sleep(WORK_MS);
    giveBack(n);
  })();
}

// -------------------------------------------------------------------- worker

if (!isMainThread) {
  const sem = Semaphore.attach(workerData.shared);
  const b = board(workerData.sab);
  parentPort.on('message', async ({ arrive }) => {
    const done = startJob(arrive, (n) => sem.acquire(n), b, (n) => parentPort.postMessage({ release: n }));
    parentPort.postMessage({ queued: arrive }); // acquire() has queued it already
    await done;
  });
  return;
}

// ---------------------------------------------------------------- main thread

const sem = new Semaphore(PERMITS);
const sab = new SharedArrayBuffer(BOARD_BYTES);
const b = board(sab);

/**
 * Gives permits back one at a time; after each, lets the event loop turn until
 * the acquire it completed (if any) has got in. A waiter leaves the queue when
 * the semaphore grants it, so the recorded service order is the grant order.
 */
function makeReleaser(queuedTotal) {
  let chain = Promise.resolve();
  return (n) => {
    chain = chain.then(async () => {
      for (let i = 0; i < n; i++) {
        Atomics.sub(b.held, 0, 1);
        sem.release(1);
        const deadline = Date.now() + 2000;
        while (queuedTotal() - sem.pendingCount > Atomics.load(b.entries, 0) && Date.now() < deadline) {
          await tick();
        }
      }
    });
  };
}

async function runVoltSem() {
  const worker = new Worker(__filename, { workerData: { shared: sem.share(), sab } });
  const fromWorker = (key) => new Promise((resolve) => {
    const onMessage = (m) => {
      if (key in m) {
        worker.off('message', onMessage);
        resolve(m[key]);
      }
    };
    worker.on('message', onMessage);
  });
  let queued = 0;
  const release = makeReleaser(() => queued);
  worker.on('message', (m) => {
    if ('release' in m) release(m.release);
  });
  if (!sem.tryAcquire(PERMITS)) throw new Error('the pool should be free'); // hold it while everyone queues
  b.held[0] = PERMITS;
  const runs = [];
  for (let who = 0; who < ARRIVALS.length; who++) {
    if (ARRIVALS[who][2] === 'main') {
      runs.push(startJob(who, (n) => sem.acquire(n), b, release));
    } else {
      worker.postMessage({ arrive: who });
      await fromWorker('queued');
    }
    queued += 1;
    if (sem.pendingCount !== queued) throw new Error(`expected ${queued} queued, saw ${sem.pendingCount}`);
  }
  const opened = now();
  release(PERMITS); // open the pool
  await Promise.all(runs);
  const deadline = Date.now() + 10_000; // the worker's jobs, and the last releases
  while (Atomics.load(b.entries, 0) < ARRIVALS.length || sem.availablePermits < PERMITS) {
    if (Date.now() > deadline) throw new Error('the jobs did not finish');
    await sleep(1);
  }
  await worker.terminate();
  return b.bigAt[0] - opened;
}

// ------------------------------------------- the contrast: a barging semaphore

/** The usual pure-JS weighted semaphore: on release, every waiter retries. */
class BargingSemaphore {
  constructor(permits) {
    this.permits = permits;
    this.waiters = [];
  }

  async acquire(n) {
    while (this.permits < n) await new Promise((resolve) => this.waiters.push(resolve));
    this.permits -= n;
  }

  release(n) {
    this.permits += n;
    for (const wake of this.waiters.splice(0)) wake();
  }
}

async function runBarging() {
  const barging = new BargingSemaphore(0); // the pool is held while everyone queues
  const order = [];
  let bigAt = 0;
  const jobs = ARRIVALS.map(async ([name, n]) => {
    await barging.acquire(n);
    order.push(name);
    if (name === 'BIG') bigAt = now();
    await sleep(WORK_MS);
    for (let i = 0; i < n; i++) {
      barging.release(1);
      await tick();
    }
  });
  const opened = now();
  for (let i = 0; i < PERMITS; i++) {
    barging.release(1);
    await tick();
  }
  await Promise.all(jobs);
  return { order, wait: bigAt - opened };
}

function overtaken(order) {
  const names = ARRIVALS.map((a) => a[0]);
  const big = names.indexOf('BIG');
  return order.slice(0, order.indexOf('BIG')).filter((name) => names.indexOf(name) > big).length;
}

async function main() {
  const bigWait = await runVoltSem();
  const names = ARRIVALS.map((a) => a[0]);
  const served = Array.from(b.entries.subarray(1, 1 + Atomics.load(b.entries, 0)), (i) => names[i]);
  const show = (list) => list.map((name) => `${name}(w${ARRIVALS[names.indexOf(name)][1]})`).join(' ');
  const fifo = served.join() === names.join();
  const passed = overtaken(served);
  const later = names.length - names.indexOf('BIG') - 1;
  console.log(`volt-sem: Semaphore(${PERMITS}) shared by the main thread and a worker, weights 1..${BIG}`);
  console.log(`arrival order: ${show(names)}`);
  console.log(`service order: ${show(served)}`);
  console.log(`FIFO: ${fifo ? 'yes' : 'NO'}`);
  console.log(`weight-${BIG} request overtaken by later arrivals: ${passed} (never overtaken: ${passed === 0 ? 'yes' : 'NO'})`);
  const peak = Atomics.load(b.held, 1);
  console.log(`peak permits held: ${peak} of ${PERMITS}; permits back in the pool: ${sem.availablePermits}`);
  const barging = await runBarging();
  console.log(
    `contrast: a barging pure-JS semaphore, same arrivals: the weight-${BIG} request was overtaken by ` +
      `${overtaken(barging.order)} of the ${later} later arrivals and got in after ${barging.wait.toFixed(1)} ms ` +
      `(volt-sem: ${bigWait.toFixed(1)} ms, ${(barging.wait / bigWait).toFixed(1)}x longer)`,
  );
  if (!fifo || passed !== 0 || peak > PERMITS || sem.availablePermits !== PERMITS) process.exitCode = 1;
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
