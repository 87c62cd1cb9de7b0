'use strict';
const { Semaphore, Mutex } = require('..');

test('acquire, release and FIFO hand-off', async () => {
  const s = new Semaphore(1);
  await s.acquire();
  const order = [];
  const a = s.acquire(1).then(() => order.push('a'));
  const b = s.acquire(1).then(() => order.push('b'));
  s.release();
  s.release();
  await Promise.all([a, b]);
  expect(order).toEqual(['a', 'b']);
  expect(s.availablePermits).toBe(0);
});

test('a mutex serialises', async () => {
  const m = new Mutex();
  const seen = [];
  await Promise.all([1, 2, 3].map((i) => m.runExclusive(async () => seen.push(i))));
  expect(seen).toEqual([1, 2, 3]);
  expect(m.isLocked()).toBe(false);
});

test('jest.isolateModules loads another instance that works', async () => {
  let again;
  jest.isolateModules(() => {
    again = require('..');
  });
  expect(again.Semaphore).not.toBe(Semaphore);
  const s = new again.Semaphore(0);
  const p = s.acquire(2);
  s.release(2);
  await expect(p).resolves.toBeUndefined();
});
