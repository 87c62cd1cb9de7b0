'use strict';
// What a production Redis does behind the semaphore's back (the Rust crate's
// docs, *Running Redis in production*; redis/tests/eviction.rs and
// server_admin.rs), seen from Node: the same typed errors as in Rust, and no
// permit granted twice. Real redis-server (test/redis-server.js).

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { Semaphore } = require('..');
const { RedisServer, command, ownServer } = require('./redis-server.js');

const opts = { lease: 1500, commandTimeout: 2000, connectTimeout: 2000 };

/** One command as RESP (the helper's `command` adds the final CRLF). */
function resp(...args) {
  return `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(String(a))}\r\n${a}`).join('\r\n')}`;
}

async function conserved(sem, total) {
  const c = await sem.census();
  assert.equal(c.available + c.held + c.partial, c.total, `permits conserved: ${JSON.stringify(c)}`);
  assert.equal(c.total, total);
  return c;
}

test('a full Redis refuses with a typed OOM error (ERR_VOLT_REDIS_OUT_OF_MEMORY) and loses nothing', { skip: ownServer('CONFIG SET maxmemory') }, async () => {
  const s = await RedisServer.start({ extra: ['--maxmemory-policy', 'noeviction'] });
  try {
    const sem = await Semaphore.connect(s.url(), 'oom', 2, opts);
    const held = await sem.acquirePermit(1);
    const filler = 'x'.repeat(10_000);
    for (let i = 0; i < 200; i++) assert.equal(await command(s.port, resp('SET', `filler:${i}`, filler)), '+OK\r\n');
    const info = await command(s.port, 'INFO memory', (t) => t.includes('used_memory_peak:'));
    const used = Number(/used_memory:(\d+)/.exec(info)[1]);
    assert.equal(await command(s.port, resp('CONFIG', 'SET', 'maxmemory', used - 1_000_000)), '+OK\r\n');
    const oom = { code: 'ERR_VOLT_REDIS_OUT_OF_MEMORY', message: /OOM/ };
    await assert.rejects(sem.tryAcquirePermit(1), oom);
    await assert.rejects(Semaphore.connect(s.url(), 'oom-other', 2, opts), oom);
    for (let i = 0; i < 200; i++) await command(s.port, resp('DEL', `filler:${i}`));
    held();
    await sem.disconnect();
    const fresh = await Semaphore.connect(s.url(), 'oom', 2, opts);
    const both = await fresh.acquirePermit(2, { signal: AbortSignal.timeout(10_000) });
    await conserved(fresh, 2);
    both();
    await fresh.disconnect();
    assert.equal(await command(s.port, resp('EXISTS', '{volt-sem:oom-other}:meta')), ':0\r\n');
  } finally {
    await s.close();
  }
});

test('the meta hash evicted alone: ERR_VOLT_STATE_LOST, and the old holding is never granted again', { skip: ownServer('a raw DEL in its database') }, async () => {
  const s = await RedisServer.start();
  try {
    const old = await Semaphore.connect(s.url(), 'meta', 2, opts);
    await old.acquire(2);
    // What an allkeys-* eviction does to that one key.
    assert.equal(await command(s.port, resp('DEL', '{volt-sem:meta}:meta')), ':1\r\n');
    const fresh = await Semaphore.connect(s.url(), 'meta', 2, opts);
    assert.equal(await fresh.tryAcquirePermit(1), null, 'the old holding is carried over');
    await conserved(fresh, 2);
    await assert.rejects(old.census(), { code: 'ERR_VOLT_STATE_LOST' });
    await fresh.disconnect();
  } finally {
    await s.close();
  }
});

test('a command renamed away fails connect with ERR_VOLT_REDIS_ERROR naming it', { skip: ownServer('--rename-command') }, async () => {
  const s = await RedisServer.start({ extra: ['--rename-command', 'BLPOP', ''] });
  try {
    await assert.rejects(Semaphore.connect(s.url(), 'renamed', 1, opts), {
      code: 'ERR_VOLT_REDIS_ERROR',
      message: /BLPOP/,
    });
  } finally {
    await s.close();
  }
});

test('a value volt-sem never writes in its own hash (an HSET of avail above the total): ERR_VOLT_WRONG_TYPE naming the field, nothing granted', async () => {
  const s = await RedisServer.start();
  try {
    const sem = await Semaphore.connect(s.url(), 'garbage', 2, opts);
    const held = await sem.acquirePermit(1);
    // Something else writes the count of free permits (1 is right).
    assert.equal(await s.query(resp('HSET', '{volt-sem:garbage}:meta', 'avail', '1000')), ':0\r\n');
    const wrong = { code: 'ERR_VOLT_WRONG_TYPE', message: /avail/ };
    await assert.rejects(sem.tryAcquirePermit(2), wrong);
    await assert.rejects(sem.census(), wrong);
    await assert.rejects(Semaphore.connect(s.url(), 'garbage', 2, opts), wrong);
    // And a word where a count is kept.
    assert.equal(await s.query(resp('HSET', '{volt-sem:garbage}:meta', 'total', 'two')), ':0\r\n');
    await assert.rejects(sem.tryAcquirePermit(1), { code: 'ERR_VOLT_WRONG_TYPE', message: /total/ });
    // Put back, everything works and nothing was lost.
    assert.equal(await s.query(resp('HSET', '{volt-sem:garbage}:meta', 'avail', '1', 'total', '2')), ':0\r\n');
    const second = await sem.tryAcquirePermit(1);
    assert.ok(second);
    assert.equal(await sem.tryAcquirePermit(1), null);
    await conserved(sem, 2);
    held();
    second();
    await sem.disconnect();
  } finally {
    await s.close();
  }
});
