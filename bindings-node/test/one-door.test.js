'use strict';
// Issue 28, one front door: the Redis-only methods of the one Semaphore class
// on a local and a named semaphore throw the "invalid state" TypeError naming
// the backend they need; the grant forms every backend shares (the releaser's
// token, runExclusive's argument, tryAcquirePermit) answer `null` tokens
// there. The Redis side of each is in redis.test.js.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { Semaphore } = require('..');
const { NAMED_SKIP } = require('./helpers');

const needsRedis = { name: 'TypeError', code: 'ERR_INVALID_STATE', message: /Redis semaphore \(Semaphore\.connect\)/ };

function refusesRedisOnly(s) {
  assert.throws(() => s.census(), needsRedis);
  assert.throws(() => s.leaseSignal, needsRedis);
  assert.throws(() => s.isLeaseLost(), needsRedis);
  assert.throws(() => s.leaseLost(), needsRedis);
}

test('local: Redis-only methods are refused; tokens are null', async () => {
  const s = new Semaphore(2);
  refusesRedisOnly(s);
  assert.throws(() => s.disconnect(), { code: 'ERR_INVALID_STATE', message: /named or Redis/ });
  const p = await s.acquirePermit(1);
  assert.equal(p.token, null);
  assert.equal(p.signal, undefined);
  const t = await s.tryAcquirePermit(1);
  assert.equal(t.token, null);
  assert.equal(t.permits, 1);
  assert.equal(await s.tryAcquirePermit(1), null, 'none left');
  p();
  t();
  assert.equal(s.availablePermits, 2);
  assert.deepEqual(await s.runExclusive(async (...args) => args, 2), [null]);
  assert.equal(s.heldPermits, 0);
  assert.equal(await s.closeForEveryone(), undefined, 'a promise on every backend');
  await assert.rejects(s.tryAcquirePermit(1), { code: 'ERR_VOLT_CLOSED' });
  assert.deepEqual(JSON.parse(JSON.stringify(s)), {});
});

test('named: Redis-only methods are refused; tokens are null', { skip: NAMED_SKIP }, async () => {
  const name = `node-test-${process.pid}-one-door`;
  try {
    const s = Semaphore.open(name, 2);
    refusesRedisOnly(s);
    const p = await s.tryAcquirePermit(2);
    assert.equal(p.token, null);
    assert.equal(s.heldPermits, 2);
    p();
    assert.deepEqual(await s.runExclusive(async (tok) => tok), null);
    assert.deepEqual(JSON.parse(JSON.stringify(s)), { name, totalPermits: 2 });
    await s.disconnect();
  } finally {
    Semaphore.unlink(name);
  }
});
