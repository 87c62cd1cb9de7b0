'use strict';
// util.inspect and String() of a Redis and a named semaphore handle say
// whether its session is live (issue 27): a handle nobody references ends its
// session when collected, and a benchmark author could not tell a live handle
// from an ended one. A real redis-server, real shared memory.
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const util = require('node:util');
const { Semaphore } = require('..');
const { RedisServer } = require('./redis-server.js');
const { NAMED_SKIP } = require('./helpers');

let srv;
before(async () => {
  srv = await RedisServer.start();
});
after(async () => {
  await srv?.close();
});

test('a Redis handle shows its name, total and whether its session is live', async () => {
  const name = `inspect-${process.pid}`;
  const sem = await Semaphore.connect(srv.url(), name, 3);
  await sem.acquire(1);
  assert.equal(util.inspect(sem), `Semaphore { name: '${name}', totalPermits: 3, session: 'live', held: 1, pending: 0 }`);
  assert.equal(String(sem), util.inspect(sem));
  assert.equal(`${sem}`.includes(srv.url()), false, 'never the URL');
  await sem.disconnect();
  assert.equal(util.inspect(sem), `Semaphore { name: '${name}', totalPermits: 3, session: 'disconnected', held: 0, pending: 0 }`);
  assert.equal(String(sem), util.inspect(sem));
  await Semaphore.deleteRedis(srv.url(), name);
});

test('a named handle shows its name, total and whether it is live; a local one its counts', { skip: NAMED_SKIP }, async () => {
  const name = `node-test-${process.pid}-inspect`;
  try {
    const sem = Semaphore.open(name, 2);
    assert.equal(util.inspect(sem), `Semaphore { name: '${name}', totalPermits: 2, session: 'live', available: 2, pending: 0 }`);
    assert.equal(String(sem), util.inspect(sem));
    await sem.disconnect();
    assert.match(util.inspect(sem), /session: 'disconnected'/);
    assert.equal(String(sem), util.inspect(sem));
  } finally {
    Semaphore.unlink(name);
  }
  const local = new Semaphore(2);
  assert.ok(local.tryAcquire(1));
  assert.equal(util.inspect(local), 'Semaphore { available: 1, pending: 0 }');
  assert.equal(String(local), util.inspect(local));
});
