'use strict';
// volt-sem beside async-sema, async-mutex and multithreading, in one run.
// `make bench` (never in CI). Prints a markdown table: median ns per
// acquire+release pair over several repetitions, and volt-sem's ratio.
const path = require('node:path');
const { Worker } = require('node:worker_threads');
const { performance } = require('node:perf_hooks');

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

async function measure(fn, ops) {
  await fn(Math.max(1, ops >> 3)); // warm-up
  const times = [];
  for (let r = 0; r < REPS; r++) {
    const t0 = performance.now();
    await fn(ops);
    times.push(((performance.now() - t0) * 1e6) / ops);
  }
  return median(times);
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
  const libs = await adapters();
  const rows = [];
  const scenarios = [
    ['uncontended acquire+release', (m) => uncontended(m), 200_000, false],
    ['8 tasks on 2 permits', (m) => contended(m, 8, 2, [1]), 100_000, false],
    ['weighted 1,2,3 on 4 permits (6 tasks)', (m) => contended(m, 6, 4, [1, 2, 3]), 60_000, true],
  ];
  for (const [name, build, ops, weighted] of scenarios) {
    const res = {};
    for (const [lib, make] of Object.entries(libs)) {
      if (weighted && make(1).unweighted) continue;
      res[lib] = await measure(build(make), ops);
    }
    rows.push([name, res]);
  }
  const cross = {};
  for (const lib of ['volt-sem', 'multithreading']) {
    const xs = [];
    for (let r = 0; r < Math.max(3, REPS >> 1); r++) xs.push(await crossWorker(lib, 5_000));
    cross[lib] = median(xs);
  }
  rows.push(['cross-worker: main + 1 worker x 4 tasks, Semaphore(2)', cross]);

  const libNames = Object.keys(libs);
  const out = [];
  out.push(`Node ${process.version}, ${process.platform}-${process.arch}, median of ${REPS} runs, ns per acquire+release (lower is better).`);
  out.push('');
  out.push(`| scenario | ${libNames.join(' | ')} | volt-sem / async-sema | volt-sem / async-mutex | volt-sem / multithreading |`);
  out.push(`|---|${libNames.map(() => '---:').join('|')}|---:|---:|---:|`);
  const ratio = (res, other) => (res[other] ? (res['volt-sem'] / res[other]).toFixed(2) + 'x' : 'n/a');
  for (const [name, res] of rows) {
    const cells = libNames.map((l) => (res[l] === undefined ? 'n/a' : res[l].toFixed(0)));
    out.push(`| ${name} | ${cells.join(' | ')} | ${ratio(res, 'async-sema')} | ${ratio(res, 'async-mutex')} | ${ratio(res, 'multithreading')} |`);
  }
  console.log(out.join('\n'));
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
