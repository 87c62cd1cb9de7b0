'use strict';
// Fairness: how long a large request (weight 3) waits amid a stream of small
// ones (weight 1), and how evenly the small clients share the grants.
//
//   node bench/fairness.js [--runs 5] [--out bench/results/fairness.json]
//
// The scenario is the one of core/benches/fairness.rs and
// bindings-python/bench/fairness.py: a limit of 4 permits; 6 small clients in
// a tight loop (acquire 1, hold it across one setImmediate, release, again);
// one large client that waits 1 ms (setTimeout), asks for 3 permits, holds
// them across one setImmediate, releases, and does it again, 200 times per
// run. A run ends after the large client's 200 requests, or when one of them
// has waited 1 s: then the small clients stop, so that request gets its
// permits ("starved": served only because the traffic stopped).
//
// Two variants: every client on the main thread (volt-sem, async-sema,
// async-mutex, multithreading), and the small clients split between the main
// thread and one worker thread, the large one on the main thread (volt-sem and
// multithreading: the others cannot be shared by workers).
//
// async-sema has no weighted acquire: its large request is three acquires of 1
// in a row, each kept while asking for the next.
//
// Measured per run: the large request's waiting time (call to grant); how
// many small requests overtook it: asked after it (a ticket is taken just
// before each small call, and just after the large call returns its promise)
// and were served while small clients held at least 2
// permits, so while the large request could not have its 3 yet (a lower
// bound; on one thread the count is exact, across two threads a call that
// reaches the semaphore just before the other thread's can count as one); the
// grants of each small client.
const fs = require('node:fs');
const os = require('node:os');
const { Worker, isMainThread, workerData, parentPort } = require('node:worker_threads');
const { performance } = require('node:perf_hooks');
const { loadavg, runMeta, toJson } = require('./machine.js');

// multithreading reads navigator.hardwareConcurrency, which Node 20 lacks.
globalThis.navigator ??= { hardwareConcurrency: os.availableParallelism() };

const PERMITS = 4;
const SMALL_CLIENTS = 6;
const BIG = 3;
const REQUESTS = 200;
const PAUSE_MS = 1;
const STARVED_MS = 1000; // a large request waiting this long stops the small clients

// Shared counters (an Int32Array on a SharedArrayBuffer, so a worker sees them).
const TICKET = 0;
const BIG_WAITING = 1; // the waiting large request's ticket, -1 when none
const OVERTAKES = 2;
const SMALL_HELD = 3; // permits held by small clients
const STOP = 4;

const tick = () => new Promise((r) => setImmediate(r));

// Adapters: { acquire(n): Promise<token>, release(n, token) }.
async function makers() {
  const volt = require('..');
  const { Sema } = require('async-sema');
  const asyncMutex = require('async-mutex');
  const mt = await import('multithreading');
  const mtSym = (obj, name) => Object.getOwnPropertySymbols(obj).find((x) => x.description === name);
  return {
    'volt-sem': {
      how: 'acquire(3)',
      weighted: true,
      shareable: true,
      make: () => volt.Semaphore && new volt.Semaphore(PERMITS),
      share: (s) => s.share(),
      adapt: (s) => ({ acquire: (n) => s.acquire(n), release: (n) => s.release(n) }),
    },
    'async-sema': {
      how: 'no weights: 3 acquires of 1 in a row',
      weighted: false,
      make: () => new Sema(PERMITS),
      adapt: (s) => ({
        acquire: async (n) => {
          for (let i = 0; i < n; i++) await s.acquire();
        },
        release: (n) => {
          for (let i = 0; i < n; i++) s.release();
        },
      }),
    },
    'async-mutex': {
      how: 'acquire(3) (weighted Semaphore)',
      weighted: true,
      make: () => new asyncMutex.Semaphore(PERMITS),
      adapt: (s) => ({ acquire: (n) => s.acquire(n), release: (n) => s.release(n) }),
    },
    multithreading: {
      how: 'acquire(3)',
      weighted: true,
      shareable: true,
      make: () => new mt.Semaphore(PERMITS),
      share: (s) => s[mtSym(Object.getPrototypeOf(s), 'Thread.Serialize')]()[0],
      adapt: (s) => ({ acquire: (n) => s.acquire(n), release: (n, guard) => guard.dispose() }),
    },
  };
}

async function attach(lib, handle) {
  if (lib === 'volt-sem') {
    const s = require('..').Semaphore.attach(handle);
    return { acquire: (n) => s.acquire(n), release: (n) => s.release(n) };
  }
  const mt = await import('multithreading');
  const des = Object.getOwnPropertySymbols(mt.Semaphore).find((x) => x.description === 'Thread.Deserialize');
  const s = mt.Semaphore[des](handle);
  return { acquire: (n) => s.acquire(n), release: (n, guard) => guard.dispose() };
}

async function smallClient(sem, sh) {
  let grants = 0;
  while (Atomics.load(sh, STOP) === 0) {
    const t = Atomics.add(sh, TICKET, 1);
    const token = await sem.acquire(1);
    const held = Atomics.add(sh, SMALL_HELD, 1) + 1;
    const b = Atomics.load(sh, BIG_WAITING);
    // An overtake only while the large request cannot hold its permits yet
    // (a later request may take the permit it leaves free once served).
    if (b >= 0 && t > b && held > PERMITS - BIG) Atomics.add(sh, OVERTAKES, 1);
    grants++;
    await tick();
    Atomics.sub(sh, SMALL_HELD, 1);
    sem.release(1, token);
  }
  return grants;
}

async function bigClient(sem, sh, out) {
  for (let i = 0; i < REQUESTS; i++) {
    await new Promise((r) => setTimeout(r, PAUSE_MS));
    if (Atomics.load(sh, STOP) !== 0) break;
    Atomics.store(sh, OVERTAKES, 0);
    const start = performance.now();
    out.since = start;
    // The request has arrived once the call returns (queued, or served): only
    // small requests that ask after that count as later. (A ticket taken
    // before the call would also count a worker's requests that reached the
    // semaphore while this call was on its way there.)
    const pending = sem.acquire(BIG);
    Atomics.store(sh, BIG_WAITING, Atomics.add(sh, TICKET, 1));
    const token = await pending;
    out.since = null;
    out.waits_us.push(Math.round((performance.now() - start) * 10000) / 10);
    Atomics.store(sh, BIG_WAITING, -1);
    out.overtaken.push(Atomics.exchange(sh, OVERTAKES, 0));
    if (Atomics.load(sh, STOP) !== 0) out.starved++;
    await tick();
    sem.release(BIG, token);
  }
  Atomics.store(sh, STOP, 1);
}

async function oneRun(lib, m, threads) {
  const load = loadavg();
  const sh = new Int32Array(new SharedArrayBuffer(4 * 5));
  Atomics.store(sh, BIG_WAITING, -1);
  const raw = m.make();
  const sem = m.adapt(raw);
  const out = { load, starved: 0, small_grants: [], overtaken: [], waits_us: [] };
  const mainSmall = threads === 1 ? SMALL_CLIENTS : SMALL_CLIENTS / 2;
  let worker;
  let workerDone;
  if (threads === 2) {
    worker = new Worker(__filename, {
      workerData: { lib, handle: m.share(raw), sab: sh.buffer, clients: SMALL_CLIENTS - mainSmall },
    });
    await new Promise((r) => worker.once('message', r)); // ready
    workerDone = new Promise((r) => worker.once('message', r));
    worker.postMessage('go');
  }
  out.since = null;
  const watchdog = setInterval(() => {
    if (out.since !== null && performance.now() - out.since > STARVED_MS) Atomics.store(sh, STOP, 1);
  }, 20);
  const smalls = Array.from({ length: mainSmall }, () => smallClient(sem, sh));
  await bigClient(sem, sh, out);
  out.small_grants = await Promise.all(smalls);
  if (worker) {
    out.small_grants.push(...(await workerDone));
    await worker.terminate();
  }
  clearInterval(watchdog);
  delete out.since;
  return out;
}



async function main() {
  const args = process.argv.slice(2);
  const opt = (name, dflt) => (args.includes(name) ? args[args.indexOf(name) + 1] : dflt);
  const runs = Number(opt('--runs', 5));
  const outPath = opt('--out', null);
  const libs = await makers();
  const cases = Object.keys(libs).map((lib) => ['1 thread', lib, 1]);
  for (const lib of Object.keys(libs)) if (libs[lib].shareable) cases.push(['main + 1 worker thread', lib, 2]);
  const results = cases.map(() => []);
  // Round-robin over the cases, so a burst of load from elsewhere hits them alike.
  for (let r = 0; r < runs; r++) {
    for (const [i, [variant, lib, threads]] of cases.entries()) {
      const out = await oneRun(lib, libs[lib], threads);
      const w = [...out.waits_us].sort((a, b) => a - b);
      console.error(
        `run ${r + 1} ${lib} (${variant}): ${w.length} requests, wait p50 ${w[w.length >> 1].toFixed(0)} us, ` +
          `max ${w[w.length - 1].toFixed(0)} us, starved ${out.starved}, load ${out.load}`,
      );
      results[i].push(out);
    }
  }
  const doc = {
    benchmark: 'fairness',
    language: 'node',
    meta: {
      ...runMeta(),
      runtime: 'clients are async functions on the main thread (and one worker thread)',
    },
    scenario: {
      permits: PERMITS,
      small_clients: SMALL_CLIENTS,
      big_weight: BIG,
      requests_per_run: REQUESTS,
      pause_ms: PAUSE_MS,
      starved_after_s: STARVED_MS / 1000,
      hold: 'one setImmediate',
    },
    results: cases.map(([variant, lib], i) => ({
      impl: lib,
      variant,
      weighted: libs[lib].weighted,
      how: libs[lib].how,
      runs: results[i],
    })),
  };
  // one line per list of numbers
  const text = toJson(doc);
  if (outPath) fs.writeFileSync(outPath, text);
  else process.stdout.write(text);
}

async function workerMain() {
  const { lib, handle, sab, clients } = workerData;
  const sh = new Int32Array(sab);
  const sem = await attach(lib, handle);
  parentPort.postMessage('ready');
  await new Promise((r) => parentPort.once('message', r));
  const grants = await Promise.all(Array.from({ length: clients }, () => smallClient(sem, sh)));
  parentPort.postMessage(grants);
}

(isMainThread ? main() : workerMain()).then(
  () => {
    if (isMainThread) process.exit(0);
  },
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
