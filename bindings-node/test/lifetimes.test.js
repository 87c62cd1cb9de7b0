'use strict';
// What a pending acquire keeps alive, and what it promises to do by itself.
//
// * A waiter that can still end by itself (a `timeout`, a live `signal`)
//   settles then, even when nothing references its private semaphore any
//   more: it keeps its semaphore from being collected (and its waiters swept)
//   until it ended. Before, the semaphore was collected, its native slot
//   swept and reused by the next acquire of the thread, and the timeout or
//   the abort found another waiter in that slot: the promise never settled.
// * A `timeout` above setTimeout's limit (2^31 - 1 ms, about 24.8 days) is
//   waited for in full: Node fires a longer timer after 1 ms (with a
//   TimeoutOverflowWarning), so `{ timeout: 2 ** 31 }` timed out at once.
const test = require('node:test');
const assert = require('node:assert/strict');
const v8 = require('node:v8');
const vm = require('node:vm');
const { execFile } = require('node:child_process');
const { Semaphore } = require('..');
const { PKG, POSIX_SIGNALS_SKIP } = require('./helpers');

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc');

/**
 * Runs GC `rounds` times, letting the finalizers it queues run (the addon
 * sweeps a collected semaphore's waiters from one): whether `ref`'s target is gone.
 */
async function collect(ref, rounds = 8) {
  for (let i = 0; i < rounds; i++) {
    gc();
    await new Promise((r) => setImmediate(r));
  }
  return ref.deref() === undefined;
}

const tick = (ms) => new Promise((r) => setTimeout(r, ms));

/** 'pending', 'granted' or the rejection reason of `p`, once the microtasks ran. */
async function state(p) {
  let r = 'pending';
  p.then(
    () => (r = 'granted'),
    (e) => (r = e),
  );
  await new Promise((resolve) => setImmediate(resolve));
  return r;
}

/**
 * Runs `body` in a child with --expose-gc (a fresh thread: which native slot
 * the next acquire takes does not depend on the tests before), where
 * `collect(ref)` collects, `state(p)` reads a promise and `Semaphore` is
 * loaded; resolves with what the child printed, parsed.
 */
function runChild(body) {
  const src = `const { Semaphore } = require(${JSON.stringify(PKG)});
${collect.toString()}
${state.toString()}
const tick = (ms) => new Promise((r) => setTimeout(r, ms));
(async () => {
${body}
})();`;
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['--expose-gc', '-e', src], { timeout: 60_000 }, (err, stdout, stderr) =>
      err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(JSON.parse(stdout)),
    );
  });
}

test('a timed acquire on a semaphore nobody references any more still times out', async () => {
  const r = await runChild(`
  let ref;
  const p = (() => {
    const sem = new Semaphore(0);
    ref = new WeakRef(sem);
    return sem.acquire(1, { timeout: 300 });
  })();
  let s = 'pending';
  p.then(() => (s = 'granted'), (e) => (s = e));
  await collect(ref);
  // The next acquire of this thread takes the first free native slot.
  const other = new Semaphore(0);
  const q = other.acquire(1);
  await tick(400); // set after the acquire's timer: it fires first
  other.release(1);
  await q;
  console.log(JSON.stringify({ p: s.code ?? String(s), other: other.pendingCount }));`);
  assert.deepEqual(r, { p: 'ERR_VOLT_TIMED_OUT', other: 0 });
});

test('an acquire with a live signal on a semaphore nobody references any more still aborts', async () => {
  const r = await runChild(`
  const ac = new AbortController();
  let ref;
  const p = (() => {
    const sem = new Semaphore(0);
    ref = new WeakRef(sem);
    return sem.acquire(1, { signal: ac.signal });
  })();
  let s = 'pending';
  p.then(() => (s = 'granted'), (e) => (s = e));
  await collect(ref);
  const other = new Semaphore(0);
  const q = other.acquire(1);
  ac.abort(new Error('stop'));
  const o = await state(q);
  other.release(1);
  await q;
  console.log(JSON.stringify({ p: s.message ?? String(s), other: o }));`);
  assert.deepEqual(r, { p: 'stop', other: 'pending' });
});

test('once its timeout passed or its signal aborted, such a semaphore is collected', async () => {
  const ac = new AbortController();
  let ref1;
  let ref2;
  const p1 = (() => {
    const sem = new Semaphore(0);
    ref1 = new WeakRef(sem);
    return sem.acquire(1, { timeout: 5 });
  })();
  const p2 = (() => {
    const sem = new Semaphore(0);
    ref2 = new WeakRef(sem);
    return sem.acquire(1, { signal: ac.signal });
  })();
  await assert.rejects(p1, { code: 'ERR_VOLT_TIMED_OUT' });
  ac.abort();
  await assert.rejects(p2, { name: 'AbortError' });
  assert.ok(await collect(ref1), 'the timed-out semaphore was collected');
  assert.ok(await collect(ref2), 'the aborted semaphore was collected');
});

test('a timeout above 2^31 - 1 ms does not fire early', async () => {
  for (const timeout of [2 ** 31, 2 ** 31 - 1 + 0.5, 1e12]) {
    const sem = new Semaphore(0);
    const p = sem.acquire(1, { timeout });
    await tick(20);
    assert.equal(await state(p), 'pending', `timeout ${timeout}`);
    sem.release(1);
    assert.equal(await state(p), 'granted');
  }
  // The long timer never keeps the process alive after the grant, and an
  // unref'd semaphore's long timer does not either (checked by this test
  // file's process exiting).
  const sem = new Semaphore(0).unref();
  const p = sem.acquire(1, { timeout: 2 ** 32 });
  await tick(5);
  sem.cancel();
  await assert.rejects(p, { code: 'ERR_VOLT_CANCELLED' });
});

test("disconnectOnSignals({ timeout }) above 2^31 - 1 ms does not end its wait after 1 ms", { skip: POSIX_SIGNALS_SKIP }, async () => {
  // The bound on the wait for Redis was a plain setTimeout: Node warned
  // (TimeoutOverflowWarning) and fired it after 1 ms, so the signal was
  // raised again without waiting for the sessions to end.
  const src = `const { disconnectOnSignals } = require(${JSON.stringify(PKG)});
process.on('warning', (w) => console.log(w.name));
disconnectOnSignals({ timeout: 2 ** 31 });
const alive = setTimeout(() => console.log('no signal'), 30_000);
process.on('SIGTERM', () => setTimeout(() => (console.log('handled'), clearTimeout(alive)), 20));
process.kill(process.pid, 'SIGTERM');`;
  const out = await new Promise((resolve, reject) => {
    execFile(process.execPath, ['-e', src], { timeout: 60_000 }, (err, stdout, stderr) =>
      err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout.trim()),
    );
  });
  assert.equal(out, 'handled');
});
