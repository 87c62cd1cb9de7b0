'use strict';
const { Worker } = require('node:worker_threads');
const path = require('node:path');
const { Semaphore } = require('..');

test('close rejects pending acquires with ERR_VOLT_CLOSED', async () => {
  const s = new Semaphore(0);
  const p = s.acquire(1);
  s.close();
  await expect(p).rejects.toMatchObject({ code: 'ERR_VOLT_CLOSED' });
  expect(() => s.tryAcquire()).toThrow(/closed/);
});

test('an abort rejects with the reason', async () => {
  const s = new Semaphore(0);
  const ac = new AbortController();
  const p = s.acquire(1, { signal: ac.signal });
  ac.abort(new Error('stop'));
  await expect(p).rejects.toThrow('stop');
  await expect(s.acquire(1, { signal: { aborted: false, addEventListener() {} } })).rejects.toMatchObject({
    code: 'ERR_INVALID_ARG_TYPE',
  });
});

test('a worker wakes a waiter of this test file', async () => {
  const s = new Semaphore(0);
  const got = s.acquire(2);
  const w = new Worker(
    `const { workerData } = require('node:worker_threads');
     require(${JSON.stringify(path.resolve(__dirname, '..'))}).Semaphore.attach(workerData).release(2);`,
    { eval: true, workerData: s.share() },
  );
  await got;
  await new Promise((r) => w.once('exit', r));
  expect(s.availablePermits).toBe(0);
});

test('works under fake timers: a cross-thread grant, share() and its pin timer', async () => {
  jest.useFakeTimers();
  try {
    const s = new Semaphore(0);
    const got = s.acquire(1);
    const w = new Worker(
      `const { workerData } = require('node:worker_threads');
       require(${JSON.stringify(path.resolve(__dirname, '..'))}).Semaphore.attach(workerData).release(1);`,
      { eval: true, workerData: s.share() },
    );
    await got;
    await new Promise((r) => w.once('exit', r));
    s.release(1);
    expect(s.availablePermits).toBe(1);
  } finally {
    jest.useRealTimers();
  }
});
