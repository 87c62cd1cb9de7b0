'use strict';
// Closing for everyone has a name nobody types by habit (issue 27): on a
// shared handle (Semaphore.open, Semaphore.connect) `close()` - "I am done"
// in most client libraries - closed the limit for every process and every
// later deploy. Now it throws a TypeError that points at `disconnect()` (end
// this handle's session) and `closeForEveryone()`, and changes nothing; the
// local semaphore keeps `close()`. A real redis-server, real shared memory,
// a second process for the named semaphore.
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { execFile } = require('node:child_process');
const { Semaphore, Mutex } = require('..');
const { RedisServer, sleep } = require('./redis-server.js');
const { PKG, NAMED_SKIP, worker, nextMessage } = require('./helpers');

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

function refused(e) {
  assert.ok(e instanceof TypeError, String(e));
  assert.equal(e.code, 'ERR_INVALID_STATE');
  assert.match(e.message, /disconnect\(\)/);
  assert.match(e.message, /closeForEveryone\(\)/);
  return true;
}

/** Whether another process can take `n` permits of the named semaphore now. */
function otherProcessTakes(name, permits, n) {
  const script = `const { Semaphore } = require(${JSON.stringify(PKG)});
const s = Semaphore.open(${JSON.stringify(name)}, ${permits}, { attachOnly: true });
let r; try { r = String(s.tryAcquire(${n})); } catch (e) { r = e.code; }
if (r === 'true') s.release(${n});
console.log(r);`;
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['-e', script], { timeout: 30_000 }, (err, stdout, stderr) =>
      err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout.trim()),
    );
  });
}

test('Redis: close() throws and closes nothing; closeForEveryone() closes; delete() lets the name be used again', async () => {
  const name = fresh('rclose');
  const a = await Semaphore.connect(srv.url(), name, 1);
  const b = await Semaphore.connect(srv.url(), name, 1);
  assert.throws(() => a.close(), refused);
  assert.equal((await a.census()).closed, false, 'still open for everyone');
  await a.acquire(1);
  const waiting = b.acquire(1).catch((e) => e);
  await sleep(100);
  await a.closeForEveryone();
  assert.equal((await waiting).code, 'ERR_VOLT_CLOSED');
  await assert.rejects(b.acquire(1), { code: 'ERR_VOLT_CLOSED' });
  await a.release(1);
  // Reopening: every session ended, then delete the name; connect creates it afresh.
  await a.disconnect();
  await b[Symbol.asyncDispose]();
  await Semaphore.deleteRedis(srv.url(), name);
  const c = await Semaphore.connect(srv.url(), name, 1);
  assert.equal((await c.acquirePermit(1)).token > 0, true);
  await c.release(1);
  await c.disconnect();
  await Semaphore.deleteRedis(srv.url(), name);
});

test('named: close() throws and closes nothing; closeForEveryone() closes; unlink() lets the name be used again', { skip: NAMED_SKIP }, async () => {
  const name = fresh('nclose');
  const a = Semaphore.open(name, 2);
  assert.throws(() => a.close(), refused);
  assert.equal(a.closed, false);
  assert.equal(await otherProcessTakes(name, 2, 1), 'true', 'still open for another process');
  const b = Semaphore.open(name, 2);
  assert.equal(a.tryAcquire(2), true);
  const waiting = b.acquire(1).catch((e) => e);
  a.closeForEveryone();
  assert.equal((await waiting).code, 'ERR_VOLT_CLOSED');
  assert.equal(await otherProcessTakes(name, 2, 1), 'ERR_VOLT_CLOSED', 'closed for the other process too');
  a.release(2);
  // Reopening: unlink the name; the next open creates a new semaphore.
  Semaphore.unlink(name);
  const c = Semaphore.open(name, 2, { createOnly: true });
  assert.equal(c.closed, false);
  assert.equal(c.tryAcquire(2), true);
  c.release(2);
});

test('named: disconnect() ends this handle only: its waiters reject, what it holds goes back', { skip: NAMED_SKIP }, async () => {
  const name = fresh('ndisc');
  const a = Semaphore.open(name, 3);
  const b = Semaphore.open(name, 3);
  assert.equal(typeof a.disconnect, 'function');
  await a.acquire(2);
  assert.equal(b.tryAcquire(1), true); // b holds 1, a holds 2: none left
  const mine = a.acquire(1).catch((e) => e);
  const theirs = b.acquire(2);
  await a.disconnect();
  assert.equal((await mine).code, 'ERR_VOLT_CLOSED', "a's queued acquire rejects");
  await theirs; // a's 2 permits went back, to b's waiter
  assert.equal(b.closed, false, 'not closed for anyone');
  await assert.rejects(a.acquire(1), { code: 'ERR_VOLT_CLOSED' });
  assert.throws(() => a.tryAcquire(1), { code: 'ERR_VOLT_CLOSED' });
  assert.throws(() => a.release(1), { code: 'ERR_VOLT_CLOSED' });
  await a.disconnect(); // idempotent
  b.release(3);
  assert.equal(await otherProcessTakes(name, 3, 3), 'true', 'every permit back');
  // Symbol.asyncDispose (await using) disconnects too.
  const c = Semaphore.open(name, 3);
  await c.acquire(1);
  await c[Symbol.asyncDispose]();
  assert.equal(await otherProcessTakes(name, 3, 3), 'true');
});

/** available + held + granted to queued waiters == total, as inspect() sees it (every process). */
async function conserved(sem, total) {
  const i = await sem.inspect();
  const held = i.holders.reduce((k, h) => k + h.permits, 0);
  const partial = i.waiters.reduce((k, w) => k + w.granted, 0);
  assert.equal(i.available + held + partial, total, JSON.stringify({ available: i.available, held, partial }));
  return [i.available, held, partial];
}

test('named: disconnect() ends the handle, as C does: its attach()ed objects too; another open() of the name goes on', { skip: NAMED_SKIP }, async () => {
  const name = fresh('nhandle');
  const a = Semaphore.open(name, 4);
  const b = Semaphore.open(name, 4); // another handle of the name in this process
  const a2 = Semaphore.attach(a.share()); // the same handle as `a`
  assert.equal(a.tryAcquire(1), true);
  assert.equal(a2.tryAcquire(1), true);
  assert.equal(b.tryAcquire(1), true);
  assert.deepEqual(await conserved(b, 4), [1, 3, 0]);
  const mine = a2.acquire(2).catch((e) => e); // queued on the disconnected handle
  const theirs = b.acquire(3); // behind it, on the handle that goes on
  assert.deepEqual(await conserved(b, 4), [0, 3, 1]);
  await a.disconnect();
  const e = await mine;
  assert.equal(e.code, 'ERR_VOLT_CLOSED', "the handle's queued acquire rejects, through any of its objects");
  assert.match(e.message, /disconnected/);
  await theirs; // the handle's 2 permits went back, to b's waiter
  assert.deepEqual(await conserved(b, 4), [0, 4, 0]); // b's own 1 stayed held
  for (const s of [a, a2]) {
    assert.throws(() => s.tryAcquire(1), (x) => x.code === 'ERR_VOLT_CLOSED' && /disconnected/.test(x.message));
    assert.throws(() => s.release(1), { code: 'ERR_VOLT_CLOSED' });
    await assert.rejects(s.acquire(1), { code: 'ERR_VOLT_CLOSED' });
  }
  assert.match(String(a2), /session: 'disconnected'/);
  // Refused, not closed for everyone: the handle is disconnected.
  await assert.rejects(a2.closeForEveryone(), (x) => x.code === 'ERR_VOLT_CLOSED' && /disconnected/.test(x.message));
  assert.equal(b.closed, false);
  b.release(4);
  assert.deepEqual(await conserved(b, 4), [4, 0, 0]);
  assert.equal(b.tryAcquire(4), true); // b still works
  b.release(4);
  await b.disconnect();
});

test("named: disconnect() in one thread fails the handle's acquire queued in a worker that attach()ed it, and gives back what that worker holds", { skip: NAMED_SKIP }, async () => {
  const name = fresh('nworker');
  const a = Semaphore.open(name, 2);
  const b = Semaphore.open(name, 2);
  assert.equal(b.tryAcquire(1), true); // the worker takes the other: its acquire then queues
  const w = worker(
    `const s = volt.Semaphore.attach(workerData);
     parentPort.postMessage(s.tryAcquire(1) ? 'held' : 'not held');
     s.acquire(1).then(
       () => parentPort.postMessage({ granted: true }),
       (e) => parentPort.postMessage({ code: e.code, message: e.message }),
     );
     parentPort.on('message', (m) => {
       if (m !== 'release') return;
       try { s.release(1); parentPort.postMessage({ released: true }); }
       catch (e) { parentPort.postMessage({ code: e.code, message: e.message }); }
     });`,
    a.share(),
  );
  try {
    // Its acquire queued in the same turn.
    assert.equal(await nextMessage(w, (m) => typeof m === 'string'), 'held');
    const theirs = b.acquire(1); // behind it
    assert.deepEqual(await conserved(b, 2), [0, 2, 0]);
    await a.disconnect();
    const e = await nextMessage(w, (m) => typeof m === 'object' && m.code !== undefined);
    assert.equal(e.code, 'ERR_VOLT_CLOSED');
    assert.match(e.message, /disconnected/);
    await theirs; // the worker's permit went back, to b's waiter
    assert.deepEqual(await conserved(b, 2), [0, 2, 0]); // both b's
    w.messages.length = 0;
    w.postMessage('release'); // the handle refuses it in the worker too
    const r = await nextMessage(w, (m) => typeof m === 'object');
    assert.equal(r.code, 'ERR_VOLT_CLOSED');
    b.release(2);
    assert.deepEqual(await conserved(b, 2), [2, 0, 0]);
  } finally {
    await w.terminate();
  }
  await b.disconnect();
});

test('a local semaphore keeps close(); disconnect() there is a TypeError', async () => {
  const s = new Semaphore(1);
  const p = s.acquire(2).catch((e) => e);
  s.close();
  assert.equal((await p).code, 'ERR_VOLT_CLOSED');
  assert.throws(() => s.disconnect(), { name: 'TypeError', code: 'ERR_INVALID_STATE' });
  const t = new Semaphore(1);
  t.closeForEveryone();
  assert.equal(t.closed, true);
  const m = new Mutex();
  m.close();
  await assert.rejects(m.acquire(), { code: 'ERR_VOLT_CLOSED' });
});
