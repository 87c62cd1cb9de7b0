'use strict';
// Mutex.release() must refuse a release of a lock this object does not hold:
// the semaphore's count is 0 both while locked and while the lock is being
// handed to the next waiter, so counting alone lets a second release() in and
// breaks exclusion (found by the Python binding's review of the same class of
// misuse).
const test = require('node:test');
const assert = require('node:assert/strict');
const { Mutex } = require('..');

const tick = () => new Promise((r) => setImmediate(r));

test('a second release() while the lock is handed to a waiter is refused', async () => {
  const m = new Mutex();
  await m.acquire(); // A holds it
  let bHolds = false;
  const b = m.acquire().then((rel) => {
    bHolds = true;
    return rel;
  });
  await tick();
  m.release(); // A unlocks: the lock goes to B
  assert.throws(() => m.release(), { code: 'ERR_VOLT_NOT_LOCKED' }); // A again: refused
  const releaseB = await b;
  assert.ok(bHolds);
  assert.equal(m.tryAcquire(), null, 'B still holds it alone');
  assert.ok(m.isLocked());
  releaseB();
  assert.ok(!m.isLocked());
});

test('release() after the releaser, and the releaser after release(), do nothing twice', async () => {
  const m = new Mutex();
  const rel = await m.acquire();
  rel();
  assert.throws(() => m.release(), { code: 'ERR_VOLT_NOT_LOCKED' });
  assert.ok(!m.isLocked());
  const rel2 = await m.acquire();
  m.release();
  rel2(); // already released through release(): nothing happens
  const third = m.tryAcquire();
  assert.ok(third, 'free again, exactly once');
  assert.equal(m.tryAcquire(), null);
  third();
  assert.ok(!m.isLocked());
});

test('runExclusive holds the lock against a stray release()', async () => {
  const m = new Mutex();
  await m.runExclusive(async () => {
    assert.ok(m.isLocked());
    // The lock belongs to runExclusive: a bare release() releases it (oldest
    // lock of this object), so a second one is refused.
    m.release();
    assert.throws(() => m.release(), { code: 'ERR_VOLT_NOT_LOCKED' });
  });
  assert.ok(!m.isLocked());
  assert.ok(m.tryAcquire(), 'released exactly once');
});

test('release() of a never-locked mutex is refused', () => {
  assert.throws(() => new Mutex().release(), { code: 'ERR_VOLT_NOT_LOCKED' });
});
