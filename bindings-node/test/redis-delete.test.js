'use strict';
// Semaphore.deleteRedis (issue 26, item 6): a service that derives names must
// be able to remove them. Refused while anyone holds, waits or is connected
// (ERR_VOLT_IN_USE, nothing deleted), ERR_VOLT_NOT_FOUND for a name that does
// not exist; the name can be connected again afresh. Real redis-server.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { Semaphore, RedisSemaphore } = require('..');
const { RedisServer } = require('./redis-server.js');

test('delete is refused while the semaphore is in use, then deletes the name', async () => {
  const s = await RedisServer.start();
  try {
    const a = await Semaphore.connect(s.url(), 'del', 1);
    const b = await Semaphore.connect(s.url(), 'del', 1);
    await a.acquire(1);
    await assert.rejects(Semaphore.deleteRedis(s.url(), 'del'), { code: 'ERR_VOLT_IN_USE' });
    await a.release(1);
    await a.disconnect();
    // b holds nothing and waits for nothing: still refused (it is connected).
    await assert.rejects(Semaphore.deleteRedis(s.url(), 'del', { connectTimeout: 2000 }), { code: 'ERR_VOLT_IN_USE' });
    const c = await b.census();
    assert.equal(c.available + c.held + c.partial, c.total);
    await b.disconnect();
    assert.equal(await Semaphore.deleteRedis(s.url(), 'del'), undefined);
    // The deprecated alias's static name still works (one release), and says so once.
    const warned = new Promise((resolve) => process.once('warning', resolve));
    await assert.rejects(RedisSemaphore.delete(s.url(), 'del'), { code: 'ERR_VOLT_NOT_FOUND' });
    const w = await warned;
    assert.equal(w.name, 'DeprecationWarning');
    assert.equal(w.code, 'VOLT_SEM_DEP001');
    assert.match(w.message, /Semaphore\.deleteRedis/);
    await assert.rejects(Semaphore.deleteRedis(s.url(), 'a{b'), { code: 'ERR_VOLT_INVALID_NAME' });
    await assert.rejects(Semaphore.deleteRedis(42, 'del'), TypeError);
    await assert.rejects(Semaphore.deleteRedis(s.url(), 'del', { lease: 0 }), { code: 'ERR_OUT_OF_RANGE' });
    // The name works again, afresh (another total is fine now).
    const again = await Semaphore.connect(s.url(), 'del', 3);
    assert.equal(again.totalPermits, 3);
    await again.disconnect();
  } finally {
    await s.close();
  }
});

test('attachOnly, as for a named semaphore: an unknown or deleted name rejects with ERR_VOLT_NOT_FOUND and creates nothing; an existing one is joined', async () => {
  const s = await RedisServer.start();
  // Behind the library's back: the first line of a KEYS/EXISTS reply.
  const firstLine = async (line) => (await s.query(line)).split('\r\n')[0];
  try {
    await assert.rejects(Semaphore.connect(s.url(), 'att', 2, { attachOnly: true }), {
      code: 'ERR_VOLT_NOT_FOUND',
      message: /no semaphore has this name/,
    });
    assert.equal(await firstLine('KEYS {volt-sem:att}*'), '*0', 'no key written');
    await assert.rejects(Semaphore.connect(s.url(), 'att', 2, { attachOnly: 1 }), TypeError);
    const creator = await Semaphore.connect(s.url(), 'att', 2, { attachOnly: false });
    const joined = await Semaphore.connect(s.url(), 'att', 2, { attachOnly: true });
    const p = await joined.tryAcquirePermit(2);
    assert.notEqual(p, null);
    assert.equal(await creator.tryAcquirePermit(1), null, 'one semaphore: its permits are taken');
    p();
    const c = await joined.census(); // after the release, on its handle
    assert.equal(c.available, 2);
    await joined.disconnect();
    await creator.disconnect();
    await Semaphore.deleteRedis(s.url(), 'att', { attachOnly: true }); // ignored by deleteRedis
    await assert.rejects(Semaphore.connect(s.url(), 'att', 2, { attachOnly: true }), { code: 'ERR_VOLT_NOT_FOUND' });
    assert.equal(await firstLine('EXISTS {volt-sem:att}:meta'), ':0', 'not created again');
  } finally {
    await s.close();
  }
});

test('version skew: a semaphore whose keys have another schema is refused by connect and deleteRedis (ERR_VOLT_VERSION_MISMATCH, both versions named), nothing written', async () => {
  const s = await RedisServer.start();
  const firstLine = async (line) => (await s.query(line)).split('\r\n')[0];
  try {
    const a = await Semaphore.connect(s.url(), 'skew', 2);
    await a.disconnect();
    // What a release of another schema would have recorded.
    assert.equal(await firstLine('HSET {volt-sem:skew}:meta schema 99'), ':0');
    const refused = { code: 'ERR_VOLT_VERSION_MISMATCH', found: 99, expected: 1, message: /version 99; this release's: 1/ };
    await assert.rejects(Semaphore.connect(s.url(), 'skew', 2), refused);
    await assert.rejects(Semaphore.deleteRedis(s.url(), 'skew'), refused);
    assert.equal(await firstLine('HGET {volt-sem:skew}:meta schema'), '$2', 'left as it was');
    assert.equal(await firstLine('ZCARD {volt-sem:skew}:sessions'), ':0', 'no session registered');
  } finally {
    await s.close();
  }
});
