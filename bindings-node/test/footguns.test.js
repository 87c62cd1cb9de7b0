'use strict';
// Footguns: ref/unref of waiters on a shared semaphore, share() keeping the
// semaphore alive until attached.
const test = require('node:test');
const assert = require('node:assert/strict');
const { execFile } = require('node:child_process');
const v8 = require('node:v8');
const vm = require('node:vm');
const { Semaphore, Mutex } = require('..');
const { PKG, worker, nextMessage, exited } = require('./helpers');

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc');

/** Runs `script` in a child; resolves 'exited:<code>' or 'alive' if still running after `ms`. */
function child(script, ms) {
  return new Promise((resolve) => {
    const c = execFile(process.execPath, ['-e', `const volt = require(${JSON.stringify(PKG)});\n${script}`], (err) => {
      clearTimeout(t);
      resolve(c.killedByUs ? 'alive' : `exited:${err ? err.code : 0}`);
    });
    const t = setTimeout(() => {
      c.killedByUs = true;
      c.kill();
    }, ms);
  });
}

test('unref(): a waiter on a shared semaphore no longer keeps the process alive', async () => {
  // Default: the waiter keeps it alive (someone may release from a worker).
  assert.equal(await child(`const s = new volt.Semaphore(0); s.share(); s.acquire(1);`, 1500), 'alive');
  assert.equal(await child(`const s = new volt.Semaphore(0); s.share(); s.unref(); s.acquire(1).then(() => process.exit(3));`, 20_000), 'exited:0');
  // unref() after the waiter queued, and on a Mutex.
  assert.equal(await child(`const s = new volt.Semaphore(0); s.share(); s.acquire(2); s.unref();`, 20_000), 'exited:0');
  assert.equal(await child(`const m = new volt.Mutex(); m.share(); m.acquire(); m.acquire(); m.unref();`, 20_000), 'exited:0');
  // ref() again: alive again.
  assert.equal(await child(`const s = new volt.Semaphore(0); s.share(); s.unref(); s.acquire(1); s.ref();`, 1500), 'alive');
  // A private semaphore shared after its waiter queued: now it keeps the thread alive.
  assert.equal(await child(`const s = new volt.Semaphore(0); s.acquire(1); s.share();`, 1500), 'alive');
  const s = new Semaphore(1);
  assert.equal(s.hasRef(), true);
  assert.equal(s.unref(), s);
  assert.equal(s.hasRef(), false);
  assert.equal(s.ref().hasRef(), true);
});

test('an unref()ed waiter is still served by another thread', async () => {
  const s = new Semaphore(0);
  const w = worker(
    `const s = volt.Semaphore.attach(workerData).unref();
     s.acquire(1).then(() => parentPort.postMessage('served'));
     parentPort.postMessage('queued');
     setTimeout(() => {}, 5000); // something else keeps it alive`,
    s.share(),
  );
  await nextMessage(w, (m) => m === 'queued');
  s.release(1);
  assert.equal(await nextMessage(w, (m) => m === 'served'), 'served');
  await w.terminate();
});

test('share() keeps the semaphore alive until attached, even if GC runs first', async () => {
  let v = (() => new Semaphore(2).share())();
  for (let i = 0; i < 5; i++) {
    gc();
    await new Promise((r) => setImmediate(r));
  }
  const a = Semaphore.attach(v);
  assert.equal(a.availablePermits, 2);
  // The attached handle now keeps it alive; once that is gone too, it is gone.
  const m = (() => new Mutex().share())();
  gc();
  await new Promise((r) => setImmediate(r));
  const w = worker(`const m = volt.Mutex.attach(workerData); parentPort.postMessage(m.isLocked());`, m);
  assert.equal(await nextMessage(w), false);
  await exited(w);
});

test('workerData: new Semaphore(n).share() works when a GC runs before the worker attaches', async () => {
  const w = worker(
    `const { receiveMessageOnPort } = require('node:worker_threads');
     // Wait until the main thread has collected its garbage.
     const sab = workerData.sab; Atomics.wait(new Int32Array(sab), 0, 0, 10000);
     const s = volt.Semaphore.attach(workerData.sem);
     parentPort.postMessage(s.availablePermits);`,
    { sem: new Semaphore(3).share(), sab: (globalThis.__sab = new SharedArrayBuffer(4)) },
  );
  for (let i = 0; i < 5; i++) {
    gc();
    await new Promise((r) => setImmediate(r));
  }
  Atomics.store(new Int32Array(globalThis.__sab), 0, 1);
  Atomics.notify(new Int32Array(globalThis.__sab), 0);
  assert.equal(await nextMessage(w), 3);
  await exited(w);
});

test('the share() pin ends at the first attach(), else after 60 s (a single unref()d timer)', async () => {
  const script = `
    const native = require(${JSON.stringify(PKG)} + '/binding.js').loadNative();
    const s = new volt.Semaphore(1);
    const v = s.share();
    const left = native.expirePins();
    volt.Semaphore.attach(v);
    const after = native.expirePins();
    console.log(JSON.stringify({ left, after }));`;
  const out = await new Promise((resolve, reject) =>
    execFile(process.execPath, ['-e', `const volt = require(${JSON.stringify(PKG)});\n${script}`], (err, stdout) =>
      err ? reject(err) : resolve(JSON.parse(stdout)),
    ),
  );
  assert.ok(out.left > 59_000 && out.left <= 60_000, `pin expires in ${out.left} ms`);
  assert.equal(out.after, -1, 'attach() ended the pin');
});
