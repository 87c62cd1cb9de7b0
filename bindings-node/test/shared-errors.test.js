'use strict';
// Errors of the shared semaphores that new users hit (issue 27): the same
// acquire(0) on local, named and Redis semaphores; Redis's NOT_HELD speaks of
// the handle; an invalid Redis URL says why and shows the expected form; and
// Semaphore.open/connect refuse option names they do not know, like acquire.
// A real redis-server (test/redis-server.js), real shared memory.
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { Semaphore } = require('..');
const { RedisServer, sleep } = require('./redis-server.js');
const { NAMED_SKIP } = require('./helpers');

let srv;
before(async () => {
  srv = await RedisServer.start();
});
after(async () => {
  await srv?.close();
});

let seq = 0;
const made = [];
function fresh(tag) {
  const name = `node-test-${process.pid}-${tag}-${seq++}`;
  made.push(name);
  return name;
}
after(() => {
  for (const name of made) {
    try {
      Semaphore.unlink(name);
    } catch {
      // a Redis name, or unlinked already
    }
  }
});

/** 'granted', 'pending' (not settled 200 ms later) or the rejection's code. */
async function outcome(p) {
  return Promise.race([
    p.then(
      () => 'granted',
      (e) => e.code,
    ),
    sleep(200).then(() => 'pending'),
  ]);
}

/** 'granted', 'busy' or the error's code of a tryAcquire (sync or a promise). */
async function tried(f) {
  try {
    const r = await f();
    return r === false || r === null ? 'busy' : 'granted';
  } catch (e) {
    return e.code;
  }
}

/**
 * acquire(0)/tryAcquire(0) on `a` while `b` waits for a permit `a` holds, and
 * after `a` closed it for everyone: what each kind of semaphore does.
 */
async function zeroCase(a, b, closeIt, tryZero = () => a.tryAcquire(0)) {
  await a.acquire(1);
  const queued = b.acquire(1);
  queued.catch(() => {});
  await sleep(100);
  const open = [await outcome(a.acquire(0)), await tried(tryZero)];
  await closeIt();
  await queued.catch(() => {});
  const closed = [await outcome(a.acquire(0)), await tried(tryZero)];
  return { open, closed };
}

// What the core does (volt_sem::Semaphore): zero permits are granted at once,
// past the queue, unless the semaphore is closed (ERR_VOLT_CLOSED for both).
const CORE = { open: ['granted', 'granted'], closed: ['ERR_VOLT_CLOSED', 'ERR_VOLT_CLOSED'] };

test('acquire(0) and tryAcquire(0) do the same on local, named and Redis semaphores', { skip: NAMED_SKIP }, async () => {
  const local = new Semaphore(1);
  assert.deepEqual(await zeroCase(local, local, () => local.close()), CORE, 'local');

  const name = fresh('zero');
  const na = Semaphore.open(name, 1);
  const nb = Semaphore.open(name, 1);
  const closeNamed = () => (na.closeForEveryone ?? na.close).call(na);
  assert.deepEqual(await zeroCase(na, nb, closeNamed), CORE, 'named');

  const rname = fresh('zero');
  const ra = await Semaphore.connect(srv.url(), rname, 1);
  const rb = await Semaphore.connect(srv.url(), rname, 1);
  const closeRedis = () => ra.closeForEveryone();
  // A Redis try is a round trip: its promise form (the sync one is refused).
  assert.deepEqual(await zeroCase(ra, rb, closeRedis, () => ra.tryAcquirePermit(0)), CORE, 'Redis');
  assert.equal(await tried(() => ra.tryAcquire(0)), 'ERR_INVALID_STATE');
  await ra.disconnect();
  await rb.disconnect();
  await Semaphore.deleteRedis(srv.url(), rname);
});

test("Redis NOT_HELD says what this handle holds, not the process", async () => {
  const name = fresh('notheld');
  const a = await Semaphore.connect(srv.url(), name, 2);
  const b = await Semaphore.connect(srv.url(), name, 2);
  await a.acquire(1); // the process holds 1, through a; b holds nothing
  assert.throws(() => b.release(1), (e) => {
    assert.equal(e.code, 'ERR_VOLT_NOT_HELD');
    assert.equal(e.held, 0);
    assert.match(e.message, /this handle holds \(0\)/);
    assert.doesNotMatch(e.message, /process/);
    return true;
  });
  await a.release(1);
  await a.disconnect();
  await b.disconnect();
  await Semaphore.deleteRedis(srv.url(), name);
});

test('an invalid Redis URL says why and shows the expected form', async () => {
  const cases = [
    ['http://127.0.0.1:6379', /unsupported scheme/],
    ['localhost:6379', /no scheme/],
    ['redis://', /no host/],
    ['redis://127.0.0.1:port', /port must be a number/],
    ['redis://127.0.0.1/db1', /database .* must be a number/],
  ];
  for (const [url, why] of cases) {
    await assert.rejects(Semaphore.connect(url, 'x', 1), (e) => {
      assert.equal(e.code, 'ERR_VOLT_INVALID_URL', url);
      assert.match(e.message, why, url);
      assert.ok(e.message.includes('redis://[user:password@]host[:port][/db]'), e.message);
      assert.ok(e.message.includes('rediss://'), e.message);
      return true;
    });
  }
  // Never the password of the URL.
  await assert.rejects(Semaphore.connect('http://u:s3cret@h', 'x', 1), (e) => !e.message.includes('s3cret'));
});

test('Semaphore.open and Semaphore.connect refuse an unknown option name, naming it', { skip: NAMED_SKIP }, async () => {
  const invalid = (name) => (e) => {
    assert.ok(e instanceof TypeError, String(e));
    assert.equal(e.code, 'ERR_INVALID_ARG_VALUE');
    assert.match(e.message, new RegExp(`'${name}'`));
    return true;
  };
  const name = fresh('opts');
  assert.throws(() => Semaphore.open(name, 1, { createonly: true }), invalid('createonly'));
  assert.throws(() => Semaphore.open(name, 1, { mode: 0o600, acceptForeignOwnr: true }), invalid('acceptForeignOwnr'));
  assert.equal(Semaphore.open(name, 1, { createOnly: true, mode: 0o600 }).totalPermits, 1, 'known options still open');
  await assert.rejects(Semaphore.connect(srv.url(), name, 1, { leas: 1000 }), invalid('leas'));
  await assert.rejects(Semaphore.connect(srv.url(), name, 1, { commandTimeout: 100, tlsCAFile: 'x' }), invalid('tlsCAFile'));
  await assert.rejects(Semaphore.deleteRedis(srv.url(), name, { prefx: 'p' }), invalid('prefx'));
  // Known options still work.
  const s = await Semaphore.connect(srv.url(), name, 1, { lease: 5000, prefix: 'volt-sem-opts' });
  await s.disconnect();
  await Semaphore.deleteRedis(srv.url(), name, { prefix: 'volt-sem-opts' });
});

test('Semaphore.open and Semaphore.connect: a total that is not a number is a TypeError quoting it', { skip: NAMED_SKIP }, async () => {
  const typed = (e) => {
    assert.ok(e instanceof TypeError, String(e));
    assert.equal(e.code, 'ERR_INVALID_ARG_TYPE');
    assert.match(e.message, /string '2'/);
    return true;
  };
  const name = fresh('total');
  assert.throws(() => Semaphore.open(name, '2'), typed);
  await assert.rejects(Semaphore.connect(srv.url(), name, '2'), typed);
  assert.throws(() => Semaphore.open(name, 0), { code: 'ERR_OUT_OF_RANGE' });
  await assert.rejects(Semaphore.connect(srv.url(), name, 1.5), { code: 'ERR_OUT_OF_RANGE' });
});
