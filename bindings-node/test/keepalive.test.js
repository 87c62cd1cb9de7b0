'use strict';
// A pending acquire keeps the process alive while it can still end by itself
// (issue 27): a local semaphore's waiter with `AbortSignal.timeout()` made the
// process exit with code 13 (an unsettled top-level await) and print nothing,
// as the signal's timer is unref'd. Real child processes, their exit codes and
// output. The keep-alive is let go on every way out (grant, abort, cancel,
// close, the semaphore collected), or the child would never exit: each child
// runs under execFile's timeout, which fails the test instead of hanging it.
const test = require('node:test');
const assert = require('node:assert/strict');
const { execFile } = require('node:child_process');
const { pathToFileURL } = require('node:url');
const { PKG } = require('./helpers');

/** Runs an ES module (top-level await) in a child: { code, signal, stdout, stderr }. */
function runModule(body, flags = []) {
  // A file: URL, not a path: an absolute Windows path (Z:\...) is no ES
  // module specifier (ERR_UNSUPPORTED_ESM_URL_SCHEME).
  const src = `import volt from ${JSON.stringify(pathToFileURL(`${PKG}/index.js`).href)};
const { Semaphore } = volt;
${body}`;
  return new Promise((resolve) => {
    execFile(process.execPath, [...flags, '--input-type=module', '-e', src], { timeout: 60_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? err.code : 0, signal: err ? err.signal : null, stdout: stdout.trim(), stderr }),
    );
  });
}

test('a local waiter with AbortSignal.timeout() keeps the process alive until it times out', async () => {
  const r = await runModule(`const sem = new Semaphore(0);
try { await sem.acquire(1, { signal: AbortSignal.timeout(150) }); console.log('granted'); }
catch (e) { console.log(e.name); }`);
  assert.deepEqual([r.code, r.stdout], [0, 'TimeoutError'], r.stderr);
});

test('the keep-alive is let go when the waiter is granted, aborted, cancelled or closed', async () => {
  // The signals never fire: only letting go of the keep-alive lets these exit.
  const r = await runModule(`const keep = [];
const sem = new Semaphore(0);
const ac = new AbortController(); keep.push(ac);
const p = sem.acquire(2, { signal: ac.signal });
setTimeout(() => sem.release(2), 20);
await p; console.log('granted');
const ac2 = new AbortController(); keep.push(ac2);
const q = sem.acquire(5, { signal: ac2.signal });
setTimeout(() => ac2.abort(new Error('aborted')), 20);
await q.catch((e) => console.log(e.message));
const ac3 = new AbortController(); keep.push(ac3);
const c = sem.acquire(5, { signal: ac3.signal });
setTimeout(() => sem.cancel(), 20);
await c.catch((e) => console.log(e.code));
const ac4 = new AbortController(); keep.push(ac4);
const d = sem.acquire(5, { signal: ac4.signal });
setTimeout(() => sem.close(), 20);
await d.catch((e) => console.log(e.code));`);
  assert.deepEqual(
    [r.code, r.stdout.split('\n')],
    [0, ['granted', 'aborted', 'ERR_VOLT_CANCELLED', 'ERR_VOLT_CLOSED']],
    r.stderr,
  );
});

test('a semaphore collected with a waiter lets go of its keep-alive (--expose-gc)', async () => {
  // The waiter's signal is not kept either: nothing can settle it, and once
  // its semaphore is collected nothing may keep the process alive for it.
  const r = await runModule(`(function () {
  new Semaphore(0).acquire(1, { signal: new AbortController().signal });
})();
for (let i = 0; i < 5; i++) { gc(); await new Promise((r) => setTimeout(r, 10)); }
console.log('collected');`, ['--expose-gc']);
  assert.deepEqual([r.code, r.stdout], [0, 'collected'], r.stderr);
});

test('unref() lets the process exit with the waiter pending (exit 13: an unsettled top-level await)', async () => {
  const r = await runModule(`const sem = new Semaphore(0).unref();
await sem.acquire(1, { signal: AbortSignal.timeout(60_000) });
console.log('never');`);
  assert.equal(r.code, 13, r.stderr);
  assert.equal(r.stdout, '');
  // ref() again after an unref() of a semaphore with a waiter: kept alive again.
  const s = await runModule(`const sem = new Semaphore(0);
const p = sem.acquire(1, { signal: AbortSignal.timeout(150) });
sem.unref(); sem.ref();
await p.catch((e) => console.log(e.name));`);
  assert.deepEqual([s.code, s.stdout], [0, 'TimeoutError'], s.stderr);
});
