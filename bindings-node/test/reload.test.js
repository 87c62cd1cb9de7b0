'use strict';
// D1: loading the package a second time in one thread (Jest's per-file module
// registry, jest.isolateModules, a cleared require.cache) must give a working
// module that shares the thread's native state with the first one.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { execFile } = require('node:child_process');
const { PKG, worker, nextMessage, exited } = require('./helpers');

function freshRequire() {
  const entry = require.resolve(PKG);
  delete require.cache[entry];
  return require(PKG);
}

test('a second load after delete require.cache[...] works and shares the native state', async () => {
  const first = require(PKG);
  const second = freshRequire();
  assert.notEqual(first.Semaphore, second.Semaphore, 'really a second module instance');
  const third = freshRequire();

  // Waiters queued through different instances settle through one release.
  const s1 = new first.Semaphore(0);
  const s2 = new second.Semaphore(0);
  const s3 = new third.Semaphore(0);
  const order = [];
  const all = [
    s1.acquire(1).then(() => order.push('first')),
    s2.acquire(2).then(() => order.push('second')),
    s3.acquire(1).then(() => order.push('third')),
  ];
  s2.release(2);
  s3.release(1);
  s1.release(1);
  await Promise.all(all);
  assert.deepEqual(order, ['second', 'third', 'first']);

  // A semaphore shared by one instance is attached by another, and a waiter of
  // the second instance is woken from a worker (the threadsafe-function path).
  const shared = new first.Semaphore(0);
  const again = second.Semaphore.attach(shared.share());
  const woken = again.acquire(3);
  const w = worker(`volt.Semaphore.attach(workerData).release(3);`, shared.share());
  await woken;
  await exited(w);
  assert.equal(shared.availablePermits, 0);

  // Closed errors and aborts still work in the later instance.
  const c = new third.Semaphore(0);
  const p = c.acquire(1);
  c.close();
  await assert.rejects(p, { code: 'ERR_VOLT_CLOSED' });
  const ac = new AbortController();
  const q = new second.Semaphore(0).acquire(1, { signal: ac.signal });
  ac.abort(new Error('stop'));
  await assert.rejects(q, /stop/);
});

test('a second load after clearing the whole require cache (addon included) works', async () => {
  const script = `
    const PKG = ${JSON.stringify(PKG)};
    const a = require(PKG);
    for (const k of Object.keys(require.cache)) delete require.cache[k];
    const b = require(PKG);
    (async () => {
      const sa = new a.Semaphore(0), sb = new b.Semaphore(0);
      const pa = sa.acquire(1), pb = sb.acquire(1);
      sb.release(1); sa.release(1);
      await Promise.all([pa, pb]);
      const shared = new b.Semaphore(0);
      const x = a.Semaphore.attach(shared.share());
      const px = x.acquire(1);
      shared.release(1);
      await px;
      console.log('ok');
    })().catch((e) => { console.error(e); process.exit(1); });`;
  const out = await new Promise((resolve, reject) => {
    execFile(process.execPath, ['-e', script], { timeout: 60_000 }, (err, stdout, stderr) =>
      err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout.trim()),
    );
  });
  assert.equal(out, 'ok');
});

test('a second load inside a worker works too', async () => {
  const sem = new (require(PKG).Semaphore)(0);
  const w = worker(
    `delete require.cache[require.resolve(${JSON.stringify(PKG)})];
     const again = require(${JSON.stringify(PKG)});
     const s = again.Semaphore.attach(workerData);
     s.acquire(2).then(() => parentPort.postMessage('served'));
     parentPort.postMessage('queued');`,
    sem.share(),
  );
  await nextMessage(w, (m) => m === 'queued');
  sem.release(2);
  assert.equal(await nextMessage(w, (m) => m === 'served'), 'served');
  await exited(w);
  assert.equal(sem.availablePermits, 0);
});
