'use strict';
// Mutex.release() must refuse a release of a lock this object does not hold
// (counting alone would let a release() without a lock free a permit nobody
// took and break exclusion), and must release a lock from the moment its grant
// is decided, as async-mutex's release() does.
const test = require('node:test');
const assert = require('node:assert/strict');
const { Mutex } = require('..');

const tick = () => new Promise((r) => setImmediate(r));

test('release() refuses a lock this object does not hold; a waiter holds from its grant on', async () => {
  const m = new Mutex();
  assert.throws(() => m.release(), { code: 'ERR_VOLT_NOT_LOCKED' }); // nothing held
  await m.acquire(); // A holds it
  let bHolds = false;
  const b = m.acquire().then((rel) => {
    bHolds = true;
    return rel;
  });
  await tick();
  m.release(); // A unlocks: the grant to B is decided here, so B holds it now
  assert.ok(m.isLocked());
  m.release(); // releases B's lock (the one this object holds), not a second unlock of A's
  assert.ok(!m.isLocked());
  assert.throws(() => m.release(), { code: 'ERR_VOLT_NOT_LOCKED' }); // nothing held again
  const releaseB = await b;
  assert.ok(bHolds);
  releaseB(); // already released through release(): nothing happens
  const only = m.tryAcquire();
  assert.ok(only, 'free exactly once');
  assert.equal(m.tryAcquire(), null);
  only();
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

// The lock is held from the moment the grant is decided: an acquire() that
// takes a free lock records its holder at once, so release() in the same tick
// (async-mutex's `mutex.acquire(); mutex.release();`) releases it (issue 26,
// item 2: it threw ERR_VOLT_NOT_LOCKED, the holder was recorded a microtask
// later).
test('release() in the same tick as an acquire() that took a free lock', async () => {
  const m = new Mutex();
  const p = m.acquire();
  assert.ok(m.isLocked());
  m.release();
  assert.ok(!m.isLocked());
  const rel = await p;
  rel(); // already released through release(): nothing happens
  assert.ok(!m.isLocked());
  const again = m.tryAcquire();
  assert.ok(again, 'free exactly once');
  assert.equal(m.tryAcquire(), null);
  again();
});

test('a queued acquire() is recorded as the holder before its promise reactions run', async () => {
  const m = new Mutex();
  await m.acquire();
  let seen;
  const b = m.acquire().then((rel) => {
    // By the time B's own continuation runs, release() must release B's lock.
    seen = m.isLocked();
    m.release();
    return rel;
  });
  await tick();
  m.release(); // A unlocks: the lock goes to B
  const relB = await b;
  assert.equal(seen, true);
  assert.ok(!m.isLocked(), 'release() inside the continuation released B');
  relB(); // nothing twice
  assert.ok(m.tryAcquire(), 'free exactly once');
});
