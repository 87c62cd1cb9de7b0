'use strict';
// Acquire options are read the same way on every semaphore: `timeout` works on
// a local one too, and a misspelt option or a count of the wrong type is an
// error instead of being ignored (issue 27: `{ timeout }` was silently
// ignored on a local semaphore, `acquire('2')` was a RangeError).
const test = require('node:test');
const assert = require('node:assert/strict');
const { execFile } = require('node:child_process');
const { Semaphore, Mutex, disconnectOnSignals } = require('..');
const { PKG } = require('./helpers');

test('timeout on a local semaphore rejects with ERR_VOLT_TIMED_OUT and hands a partial grant on', async () => {
  const sem = new Semaphore(2);
  assert.ok(sem.tryAcquire(1));
  const big = sem.acquirePermit(2, { timeout: 30 }); // granted 1 of 2, then times out
  const small = sem.acquirePermit(1); // queued behind it
  await assert.rejects(big, { code: 'ERR_VOLT_TIMED_OUT' });
  const rel = await small; // the partial grant went on to it
  rel();
  sem.release(1);
  assert.equal(sem.availablePermits, 2, 'every permit back');
});

test('a grant before the timeout clears the timer', async () => {
  const sem = new Semaphore(0);
  const p = sem.acquirePermit(1, { timeout: 60_000 });
  sem.release(1);
  const rel = await p;
  rel();
  assert.equal(sem.availablePermits, 1);
  // Mutex, waitForUnlock and runExclusive take it too.
  const m = new Mutex();
  const held = await m.acquire();
  await assert.rejects(m.acquire({ timeout: 20 }), { code: 'ERR_VOLT_TIMED_OUT' });
  await assert.rejects(m.waitForUnlock({ timeout: 20 }), { code: 'ERR_VOLT_TIMED_OUT' });
  held();
});

test('an unknown option name is a TypeError with ERR_INVALID_ARG_VALUE naming it', async () => {
  const sem = new Semaphore(0);
  await assert.rejects(sem.acquire(1, { timout: 5 }), (e) => {
    assert.ok(e instanceof TypeError);
    assert.equal(e.code, 'ERR_INVALID_ARG_VALUE');
    assert.match(e.message, /'timout'/);
    return true;
  });
  await assert.rejects(new Mutex().acquire({ signl: null }), { code: 'ERR_INVALID_ARG_VALUE' });
  await assert.rejects(sem.acquire(1, { timeout: -1 }), { code: 'ERR_OUT_OF_RANGE' });
  await assert.rejects(sem.acquire(1, 5), { code: 'ERR_INVALID_ARG_TYPE' });
  assert.equal(sem.pendingCount, 0, 'nothing was queued');
});

test('a count that is not a number is a TypeError quoting the value', async () => {
  const sem = new Semaphore(4);
  await assert.rejects(sem.acquire('2'), (e) => {
    assert.ok(e instanceof TypeError);
    assert.equal(e.code, 'ERR_INVALID_ARG_TYPE');
    assert.match(e.message, /string '2'/);
    return true;
  });
  assert.throws(() => sem.tryAcquire(2n), { name: 'TypeError', message: /bigint 2n/ });
  await assert.rejects(sem.acquire(1.5), { code: 'ERR_OUT_OF_RANGE' });
  assert.equal(sem.availablePermits, 4);
});

test('a waiter with a timeout keeps the process alive until it times out', async () => {
  const script = `const { Semaphore } = require(${JSON.stringify(PKG)});
const sem = new Semaphore(0);
sem.acquire(1, { timeout: 200 }).catch((e) => { console.log(e.code); });`;
  const out = await new Promise((resolve) => {
    execFile(process.execPath, ['-e', script], { timeout: 60_000 }, (err, stdout) => resolve({ err, stdout }));
  });
  assert.equal(out.err, null, `exit: ${out.err && out.err.code}`);
  assert.equal(out.stdout.trim(), 'ERR_VOLT_TIMED_OUT');
});

test('a duration or a share() value of the wrong type is a TypeError, as the types say', async () => {
  // index.d.ts: a TypeError with 'ERR_INVALID_ARG_TYPE' for arguments of the
  // wrong type (a RangeError only for numbers out of range); a `timeout` of
  // '100' was a RangeError. attach() of a value share() never returns (an
  // id no registry entry can have) was ERR_VOLT_GONE, as if it had existed.
  const sem = new Semaphore(0);
  for (const timeout of ['100', null, true, 100n]) {
    await assert.rejects(sem.acquire(1, { timeout }), { name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' }, String(timeout));
  }
  await assert.rejects(sem.acquire(1, { timeout: -1 }), { name: 'RangeError', code: 'ERR_OUT_OF_RANGE' });
  for (const lease of ['5000', null]) {
    await assert.rejects(Semaphore.connect('redis://127.0.0.1:1', 'x', 1, { lease }), {
      name: 'TypeError',
      code: 'ERR_INVALID_ARG_TYPE',
    });
  }
  assert.throws(() => disconnectOnSignals({ timeout: '5' }), { name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' });
  for (const id of [-1, 0, 1.5, NaN, Infinity]) {
    assert.throws(() => Semaphore.attach({ 'volt-sem': 1, kind: 'Semaphore', id }), { name: 'TypeError' }, String(id));
  }
  assert.equal(sem.pendingCount, 0);
});

test('timeout: 0 is one attempt, as in Rust, C and Python: the permits if free, else ERR_VOLT_TIMED_OUT, nothing queued', async () => {
  // It was a RangeError: a deadline computed as "what is left" that reached
  // 0 made a wrong call of a late one.
  const sem = new Semaphore(2);
  assert.equal(await sem.acquire(1, { timeout: 0 }), undefined);
  const release = await sem.acquirePermit(1, { timeout: 0 });
  assert.equal(typeof release, 'function');
  assert.equal(sem.availablePermits, 0);
  await assert.rejects(sem.acquire(1, { timeout: 0 }), { code: 'ERR_VOLT_TIMED_OUT' });
  await assert.rejects(sem.acquire(1, { timeout: -0 }), { code: 'ERR_VOLT_TIMED_OUT' });
  assert.equal(sem.pendingCount, 0, 'nothing was queued');
  assert.equal(sem.stats().timeouts, 2);
  release();
  sem.release(1);
  assert.equal(sem.availablePermits, 2);
  // A queued waiter is not overtaken by a zero-timeout try (FIFO).
  // The one released below goes to the queued acquire(2) (a partial grant),
  // so the try finds none, where a barging one would take it.
  await sem.acquire(2);
  const queued = sem.acquire(2);
  sem.release(1);
  await assert.rejects(sem.acquire(1, { timeout: 0 }), { code: 'ERR_VOLT_TIMED_OUT' });
  sem.release(1);
  await queued;
  // Closed is not "busy"; a bad count is still a RangeError.
  sem.close();
  await assert.rejects(sem.acquire(1, { timeout: 0 }), { code: 'ERR_VOLT_CLOSED' });
  await assert.rejects(new Semaphore(1).acquire(-1, { timeout: 0 }), { code: 'ERR_OUT_OF_RANGE' });
  // The Mutex takes it too.
  const m = new Mutex();
  const unlock = await m.acquire({ timeout: 0 });
  await assert.rejects(m.acquire({ timeout: 0 }), { code: 'ERR_VOLT_TIMED_OUT' });
  unlock();
});
