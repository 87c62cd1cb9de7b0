'use strict';
// volt-sem beside async-sema, async-mutex and multithreading, in one process.
// `make bench` (never in CI): `node bench/run.js [--json FILE]`. Every scenario
// runs BENCH_REPS times (default 7), round-robin over the implementations, so
// run i of two implementations were measured side by side; the JSON keeps
// every run's time per acquire+release pair (scripts/bench_report.py makes the
// tables, scripts/bench_charts.py the charts). `--only ID` runs one scenario
// (`cross_worker`, ...), to compare two builds of the addon on it.
const path = require('node:path');
const fs = require('node:fs');
const { Worker } = require('node:worker_threads');
const { performance } = require('node:perf_hooks');
const { loadavg, runMeta, toJson } = require('./machine.js');

const volt = require('..');
// The addon's exports (the object index.js uses): only to switch the JS fast
// path off for the "volt-sem (native path)" column, the same code without it.
const native = require('../binding.js').loadNative();
const { Sema } = require('async-sema');
const asyncMutex = require('async-mutex');

const REPS = Number(process.env.BENCH_REPS || 7);

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1];
}

async function measureOnce(fn, ops) {
  const t0 = performance.now();
  await fn(ops);
  return ((performance.now() - t0) * 1e6) / ops;
}

// Adapters: acquire(n) -> Promise<release function>.
// multithreading reads navigator.hardwareConcurrency, which Node 20 lacks.
const NAVIGATOR_SHIM = `globalThis.navigator ??= { hardwareConcurrency: require('node:os').availableParallelism() };`;
eval(NAVIGATOR_SHIM);

async function adapters() {
  const mt = await import('multithreading');
  return {
    'volt-sem': (permits) => {
      const s = new volt.Semaphore(permits);
      return { acquire: (n) => s.acquire(n), release: (n) => s.release(n) };
    },
    // Every operation crosses Node-API, as before the JS fast path (issue 12):
    // its views are refused while it passes the point where it would make them.
    'volt-sem (native path)': (permits) => {
      const s = new volt.Semaphore(permits);
      const view = native.view;
      native.view = () => null;
      try {
        for (let i = 0; i < 32; i++) s.tryAcquire(0);
      } finally {
        native.view = view;
      }
      return { acquire: (n) => s.acquire(n), release: (n) => s.release(n) };
    },
    // Not a semaphore: the floor of any design whose queue lives in native
    // code (as a queue that threads share must). async-sema's operations,
    // each also crossing Node-API once with a call that does nothing (the
    // `available` getter), as volt-sem's contended acquire (the enqueue) and
    // release (the hand-off) each make one native call. Contended scenarios
    // only: volt-sem's uncontended path makes no native call.
    'floor: async-sema + 1 Node-API call per operation': (permits) => {
      const s = new Sema(permits);
      const h = native.create(1);
      return {
        acquire: () => {
          native.available(h);
          return s.acquire();
        },
        release: () => {
          native.available(h);
          s.release();
        },
        unweighted: true,
        contendedOnly: true,
      };
    },
    'async-sema': (permits) => {
      const s = new Sema(permits);
      return { acquire: () => s.acquire(), release: () => s.release(), unweighted: true };
    },
    'async-mutex': (permits) => {
      const s = new asyncMutex.Semaphore(permits);
      return { acquire: (n) => s.acquire(n), release: (n) => s.release(n) };
    },
    multithreading: (permits) => {
      const s = new mt.Semaphore(permits);
      let guards = [];
      return {
        acquire: (n) => s.acquire(n).then((g) => guards.push(g)),
        release: () => guards.shift().dispose(),
      };
    },
  };
}

// Uncontended: one task, acquire + release, back to back.
function uncontended(make) {
  return async (ops) => {
    const s = make(4);
    for (let i = 0; i < ops; i++) {
      await s.acquire(1);
      s.release(1);
    }
  };
}

// `tasks` tasks share `permits`; each holds its weight across one yield.
function contended(make, tasks, permits, weights) {
  return async (ops) => {
    const s = make(permits);
    const per = Math.ceil(ops / tasks);
    const task = async (w) => {
      for (let i = 0; i < per; i++) {
        await s.acquire(w);
        await null;
        s.release(w);
      }
    };
    await Promise.all(Array.from({ length: tasks }, (_, i) => task(weights[i % weights.length])));
  };
}

// Cross-worker: main + 1 worker, 4 tasks each, on one shared Semaphore(2).
const WORKER_SRC = (lib) => `
const { parentPort, workerData } = require('node:worker_threads');
${NAVIGATOR_SHIM}
(async () => {
  const { ops } = workerData;
  let s;
  ${
    lib === 'volt-sem'
      ? `const volt = require(${JSON.stringify(path.resolve(__dirname, '..'))});
         const sem = volt.Semaphore.attach(workerData.handle);
         s = { acquire: () => sem.acquire(1), release: () => sem.release(1) };`
      : `const mt = await import('multithreading');
         const des = Object.getOwnPropertySymbols(mt.Semaphore).find((x) => x.description === 'Thread.Deserialize');
         const sem = mt.Semaphore[des](workerData.handle);
         s = { acquire: () => sem.acquire(1), release: (g) => g.dispose() };`
  }
  parentPort.postMessage('ready');
  await new Promise((r) => parentPort.once('message', r));
  const task = async () => { for (let i = 0; i < ops; i++) { const g = await s.acquire(); await null; s.release(g); } };
  await Promise.all([task(), task(), task(), task()]);
  parentPort.postMessage('done');
})();`;

async function crossWorker(lib, opsPerTask) {
  let handle;
  let s;
  if (lib === 'volt-sem') {
    const sem = new volt.Semaphore(2);
    handle = sem.share();
    s = { acquire: () => sem.acquire(1), release: () => sem.release(1) };
  } else {
    const mt = await import('multithreading');
    const sem = new mt.Semaphore(2);
    const ser = Object.getOwnPropertySymbols(Object.getPrototypeOf(sem)).find(
      (x) => x.description === 'Thread.Serialize',
    );
    handle = sem[ser]()[0];
    s = { acquire: () => sem.acquire(1), release: (g) => g.dispose() };
  }
  const w = new Worker(WORKER_SRC(lib), { eval: true, workerData: { handle, ops: opsPerTask } });
  await new Promise((r) => w.once('message', r));
  const done = new Promise((r) => w.once('message', r));
  const t0 = performance.now();
  w.postMessage('go');
  const task = async () => {
    for (let i = 0; i < opsPerTask; i++) {
      const g = await s.acquire();
      await null;
      s.release(g);
    }
  };
  await Promise.all([task(), task(), task(), task(), done]);
  const ns = ((performance.now() - t0) * 1e6) / (opsPerTask * 8);
  await w.terminate();
  return ns;
}




async function main() {
  const args = process.argv.slice(2);
  const jsonPath = args.includes('--json') ? args[args.indexOf('--json') + 1] : null;
  const only = args.includes('--only') ? args[args.indexOf('--only') + 1] : null;
  const ids = ['uncontended', 'contended', 'weighted', 'cross_worker'];
  if (only !== null && !ids.includes(only)) throw new Error(`--only: one of ${ids.join(', ')}`);
  const wanted = (id) => only === null || only === id;
  const libs = await adapters();
  const load = [loadavg()];
  const scenarios = [];
  const defs = [
    ['uncontended', 'uncontended acquire+release, one task', (m) => uncontended(m), 200_000, false],
    ['contended', '8 tasks on 2 permits, each holding across one `await null`', (m) => contended(m, 8, 2, [1]), 100_000, false],
    ['weighted', 'weighted 1,2,3 on 4 permits (6 tasks)', (m) => contended(m, 6, 4, [1, 2, 3]), 60_000, true],
  ];
  for (const [id, title, build, ops, weighted] of defs.filter(([id]) => wanted(id))) {
    const names = Object.keys(libs).filter((lib) => {
      const a = libs[lib](1);
      return !(weighted && a.unweighted) && !(id === 'uncontended' && a.contendedOnly);
    });
    for (const lib of names) await build(libs[lib])(Math.max(1, ops >> 3)); // warm-up
    const results = Object.fromEntries(names.map((n) => [n, []]));
    for (let r = 0; r < REPS; r++) {
      for (const lib of names) results[lib].push(await measureOnce(build(libs[lib]), ops));
    }
    scenarios.push({ id, title, results });
    load.push(loadavg());
    console.error(`${title}: ${names.map((n) => `${n} ${median(results[n]).toFixed(0)} ns`).join(', ')}`);
  }
  if (wanted('cross_worker')) {
    const cross = { 'volt-sem': [], multithreading: [] };
    for (let r = 0; r < REPS; r++) {
      for (const lib of Object.keys(cross)) cross[lib].push(await crossWorker(lib, 5_000));
    }
    scenarios.push({ id: 'cross_worker', title: 'main + 1 worker thread, 4 tasks each, Semaphore(2)', results: cross });
    load.push(loadavg());
    console.error(`cross-worker: ${Object.keys(cross).map((n) => `${n} ${median(cross[n]).toFixed(0)} ns`).join(', ')}`);
  }
  const doc = {
    benchmark: 'throughput',
    language: 'node',
    unit: 'ns per acquire+release',
    meta: {
      ...runMeta(),
      runs: REPS,
      load,
    },
    reference: ['volt-sem (native path)', 'floor: async-sema + 1 Node-API call per operation'],
    baseline: 'volt-sem',
    scenarios,
  };
  // one line per list of numbers
  const text = toJson(doc);
  if (jsonPath) fs.writeFileSync(jsonPath, text);
  else process.stdout.write(text);
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
