'use strict';
// Test helpers: workers that load this package, and message waiting.
const path = require('node:path');
const { Worker } = require('node:worker_threads');

const PKG = path.resolve(__dirname, '..');

/**
 * The skip reason of a test of named semaphores (Semaphore.open) where they
 * are not supported (docs/platforms.md: Linux only), else false. There,
 * named.test.js asserts the typed unsupported error instead.
 */
const NAMED_SKIP =
  process.platform === 'linux'
    ? false
    : `named semaphores are Linux-only (docs/platforms.md); on ${process.platform} Semaphore.open throws ERR_VOLT_UNSUPPORTED, asserted in named.test.js`;

/**
 * The skip reason of a test that raises a POSIX signal in a process or sends
 * one to a child (on Windows, process.kill() ends the process at once, and no
 * handler runs), else false.
 */
const POSIX_SIGNALS_SKIP =
  process.platform === 'win32' ? 'raises POSIX signals (SIGTERM/SIGINT handlers): on Windows process.kill() terminates the process, no handler runs' : false;

/** Starts a worker running `body` (CommonJS) with `volt` = require('volt-sem'). */
function worker(body, workerData) {
  const code = `'use strict';
const { parentPort, workerData } = require('node:worker_threads');
const volt = require(${JSON.stringify(PKG)});
${body}`;
  const w = new Worker(code, { eval: true, workerData });
  w.messages = [];
  w.on('message', (m) => w.messages.push(m));
  w.exitCode = undefined;
  w.exited = new Promise((resolve, reject) => {
    w.once('exit', (c) => {
      w.exitCode = c;
      resolve(c);
    });
    w.once('error', reject);
  });
  return w;
}

/** Resolves with the first message satisfying `pred`; rejects if the worker exits first. */
function nextMessage(w, pred = () => true) {
  const seen = w.messages.find(pred);
  if (seen !== undefined) return Promise.resolve(seen);
  return new Promise((resolve, reject) => {
    const onMsg = (m) => {
      if (!pred(m)) return;
      cleanup();
      resolve(m);
    };
    if (w.exitCode !== undefined) {
      reject(new Error(`worker exited (${w.exitCode}) before the expected message; got ${JSON.stringify(w.messages)}`));
      return;
    }
    const onExit = (c) => {
      cleanup();
      reject(new Error(`worker exited (${c}) before the expected message; got ${JSON.stringify(w.messages)}`));
    };
    const onError = (e) => {
      cleanup();
      reject(e);
    };
    const cleanup = () => {
      w.off('message', onMsg);
      w.off('exit', onExit);
      w.off('error', onError);
    };
    w.on('message', onMsg);
    w.on('exit', onExit);
    w.on('error', onError);
  });
}

function exited(w) {
  return w.exited;
}

/**
 * Runs `loop` (statements on `s`) on this thread and, at the same moment, in
 * a worker on `s` shared: `prelude` runs first in the worker and defines its
 * `s` (from `workerData.id`). Resolves once both loops ended.
 */
async function raceWithWorker(s, loop, prelude) {
  const sab = new SharedArrayBuffer(8);
  const go = new Int32Array(sab);
  const w = worker(
    `${prelude}
     const go = new Int32Array(workerData.sab);
     Atomics.store(go, 1, 1);
     Atomics.wait(go, 0, 0);
     ${loop}
     parentPort.postMessage('done');`,
    { id: s.share(), sab },
  );
  while (Atomics.load(go, 1) === 0) await new Promise((r) => setImmediate(r));
  Atomics.store(go, 0, 1);
  Atomics.notify(go, 0);
  // eslint-disable-next-line no-new-func
  new Function('s', loop)(s);
  await nextMessage(w, (m) => m === 'done');
  await exited(w);
}

module.exports = { PKG, NAMED_SKIP, POSIX_SIGNALS_SKIP, worker, nextMessage, exited, raceWithWorker };
