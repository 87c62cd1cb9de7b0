'use strict';
// The Node worker of the mixed-language stress (tests/multiproc/driver.py):
//
//   node worker.js NAME TOTAL DEADLINE_MS SEED
//
// The main thread and one worker thread each open the name and run three
// async loops until DEADLINE_MS, each round with a random weight 1..=4 and one
// of: tryAcquire; acquire with AbortSignal.timeout(random); acquire aborted by
// an AbortController after a random delay; a plain acquire. A grant is
// reported to the driver's counter ("+ w") before the permits are used and
// "- w" before they are released, each a synchronous round trip on the pipes
// VOLT_MP_WFD / VOLT_MP_RFD, one at a time per process (a lock in a
// SharedArrayBuffer shared by the two threads). At the end the main thread
// checks that the process holds nothing, reports "d 0" and waits, still
// attached, until the driver's conservation check is over; then prints one
// JSON line of counts. Any unexpected error exits 1.
//
// With VOLT_MP_REDIS set (a Redis URL), the semaphore is the one stored there
// under NAME (Semaphore.connect, lease VOLT_MP_LEASE_MS) instead of a named
// segment; its calls are asynchronous, hence the awaits on tryAcquire and
// release (harmless on a named semaphore's synchronous ones).
const fs = require('node:fs');
const path = require('node:path');
const { Worker, isMainThread, workerData, parentPort } = require('node:worker_threads');

const PKG = process.env.VOLT_MP_NODE_PKG || path.resolve(__dirname, '../../bindings-node');
const { Semaphore } = require(PKG);

const [name, totalArg, deadlineArg, seedArg] = isMainThread ? process.argv.slice(2) : workerData.args;
const total = Number(totalArg);
const deadline = Number(deadlineArg);
const rfd = Number(process.env.VOLT_MP_RFD);
const wfd = Number(process.env.VOLT_MP_WFD);
// [0]: the pipe lock (0 free, 1 taken)
const lock = new Int32Array(isMainThread ? new SharedArrayBuffer(4) : workerData.lock);

let seed = (Number(seedArg) * 2654435761 + (isMainThread ? 1 : 2)) >>> 0;
function rand(n) {
  // xorshift32: reproducible from the seed
  seed ^= seed << 13;
  seed >>>= 0;
  seed ^= seed >>> 17;
  seed ^= seed << 5;
  seed >>>= 0;
  return seed % n;
}

const okBuf = Buffer.alloc(3);
function counter(sign, w) {
  while (Atomics.compareExchange(lock, 0, 0, 1) !== 0) Atomics.wait(lock, 0, 1, 5);
  try {
    fs.writeSync(wfd, `${sign} ${w}\n`);
    let got = 0;
    while (got < 3) {
      const r = fs.readSync(rfd, okBuf, got, 3 - got, null);
      if (r === 0) throw new Error('the driver went away');
      got += r;
    }
  } finally {
    Atomics.store(lock, 0, 0);
    Atomics.notify(lock, 0, 1);
  }
}

const stats = { grants: 0, timeouts: 0, aborts: 0, try_fails: 0 };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function useAndRelease(sem, w) {
  stats.grants++;
  counter('+', w);
  await sleep(rand(4));
  counter('-', w);
  await sem.release(w);
}

async function loop(sem) {
  while (Date.now() < deadline) {
    const w = 1 + rand(4);
    const mode = rand(4);
    if (mode === 0) {
      // The promise form: a Redis semaphore refuses the synchronous try (a
      // round trip); a named one answers at once.
      if ((await sem.tryAcquirePermit(w)) !== null) await useAndRelease(sem, w);
      else {
        stats.try_fails++;
        await sleep(1);
      }
      continue;
    }
    let signal;
    let ac;
    if (mode === 1) signal = AbortSignal.timeout(1 + rand(50));
    else if (mode === 2) {
      ac = new AbortController();
      signal = ac.signal;
      setTimeout(() => ac.abort(), rand(30));
    } else signal = AbortSignal.timeout(Math.max(1, deadline - Date.now()) + 2000); // plain, bounded
    try {
      await sem.acquire(w, { signal });
    } catch (e) {
      if (e && e.name === 'TimeoutError') stats.timeouts++;
      else if (e && e.name === 'AbortError') stats.aborts++;
      else throw e;
      continue;
    }
    await useAndRelease(sem, w);
  }
}

async function main() {
  const url = process.env.VOLT_MP_REDIS;
  const sem = url
    ? await Semaphore.connect(url, name, total, { lease: Number(process.env.VOLT_MP_LEASE_MS) })
    : Semaphore.open(name, total);
  let thread;
  if (isMainThread) {
    thread = new Worker(__filename, { workerData: { args: [name, totalArg, deadlineArg, seedArg], lock: lock.buffer } });
    thread.done = new Promise((resolve, reject) => {
      thread.once('message', resolve);
      thread.once('error', reject);
    });
  }
  await Promise.all([loop(sem), loop(sem), loop(sem)]);
  if (!isMainThread) {
    parentPort.postMessage(stats);
    return;
  }
  const other = await thread.done;
  for (const k of Object.keys(stats)) stats[k] += other[k];
  // Both threads released everything: the process holds nothing. Stay
  // attached until the driver's conservation check is over.
  if (!url && sem.heldPermits !== 0) throw new Error(`the process still holds ${sem.heldPermits} permits`);
  counter('d', 0);
  process.stdout.write(`${JSON.stringify({ lang: 'node', ...stats })}\n`);
}

main().catch((e) => {
  process.stderr.write(`node worker ${process.pid}: ${(e && e.stack) || e}\n`);
  process.exit(1);
});
