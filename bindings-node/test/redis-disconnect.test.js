'use strict';
// What a disconnected Redis semaphore keeps in this process: nothing. Once
// `await sem.disconnect()` has resolved, the object's two session threads
// have exited and its two Redis connections are closed, while the object is
// still referenced (no garbage collection: this file never calls gc). Before,
// each disconnected object kept its door thread and one connection until it
// was collected, so a service connecting and disconnecting per request piled
// up threads and connections (Redis' maxclients) between collections.
//
// A file of its own: it counts this process's threads (/proc/self/task),
// which the objects of other tests (left to the collector) would change.

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const { Semaphore } = require('..');
const { RedisServer, sleep, command } = require('./redis-server.js');

let srv;
before(async () => {
  srv = await RedisServer.start();
});
after(async () => {
  await srv?.close();
});

// This process's Redis session threads (each object's door and agent, named
// volt-sem-redis...), not every thread: libuv's pool and Node's own come
// and go.
const threads = () =>
  fs.readdirSync('/proc/self/task').filter((t) => {
    try {
      return fs.readFileSync(`/proc/self/task/${t}/comm`, 'utf8').startsWith('volt-sem-redis');
    } catch {
      return false; // ended meanwhile
    }
  }).length;

/** The connections the server has open for clients named `label`. */
async function clientsNamed(label) {
  const whole = (t) => {
    const m = /^\$(\d+)\r\n/.exec(t);
    return m !== null && Buffer.byteLength(t) >= m[0].length + Number(m[1]) + 2;
  };
  const list = await command(srv.port, 'CLIENT LIST', whole);
  assert.notEqual(list, null, 'CLIENT LIST answered');
  return list.split('\n').filter((l) => l.includes(` name=${label} `)).length;
}

/**
 * Waits (bounded: the server notices a closed socket when it reads it) until
 * this process has no more threads than `base` and the server no connection
 * named `label`.
 */
async function nothingLeft(label, base, what) {
  const end = Date.now() + 20_000;
  for (;;) {
    const left = [threads(), await clientsNamed(label)];
    if (left[0] <= base && left[1] === 0) return;
    if (Date.now() > end) {
      assert.fail(
        `${what}: ${left[0]} threads (baseline ${base}) and ${left[1]} connections ` +
          `named ${label} still open 20 s after disconnect() resolved`,
      );
    }
    await sleep(20);
  }
}

// The threads are counted in /proc (Linux): elsewhere (Windows, under Wine in
// `make dist-test-node`) there is nothing to count them by.
const PROC_SKIP = process.platform === 'linux' ? false : 'counts this process\'s threads in /proc (Linux only)';

test('a disconnected object keeps no thread and no Redis connection', { skip: PROC_SKIP }, async () => {
  const label = `disc-res-${process.pid}`;
  const N = 20;
  // Warm up what the process starts once (libuv's pool, the off-loop
  // calls' threads come and go), then count.
  const warm = await Semaphore.connect(srv.url(), 'disc-res-warm', 1, { label: 'warm' });
  await warm.acquire(1);
  await warm.release(1);
  await warm.census();
  await warm.disconnect();
  await sleep(200);
  const base = threads();

  const sems = [];
  for (let i = 0; i < N; i++) sems.push(await Semaphore.connect(srv.url(), 'disc-res', N, { label }));
  for (const s of sems) await s.acquire(1);
  // Requests queued too, failed by the disconnect.
  const queued = sems.slice(0, 2).map((s) => s.acquire(N));
  for (const q of queued) q.catch(() => {});
  for (;;) {
    if ((await sems[N - 1].census()).queued === 2) break;
    await sleep(10);
  }
  // A session thread names itself once it runs: connect() may resolve
  // before both of an object's have.
  for (const end = Date.now() + 20_000; threads() < base + 2 * N; await sleep(10)) {
    if (Date.now() > end) assert.fail(`${threads()} session threads named 20 s after connect(), baseline ${base} + ${2 * N}`);
  }
  assert.equal(await clientsNamed(label), 2 * N);

  await Promise.all(sems.map((s) => s.disconnect()));
  await nothingLeft(label, base, 'after disconnect(), the objects kept');

  // The promises of a disconnect hold: queued acquires rejected with
  // ERR_VOLT_CLOSED, what was held went back, later calls rejected,
  // idempotent.
  for (const q of queued) await assert.rejects(q, { code: 'ERR_VOLT_CLOSED' });
  const other = await Semaphore.connect(srv.url(), 'disc-res', N);
  const c = await other.census();
  assert.deepEqual([c.held, c.queued, c.sessions], [0, 0, 1], JSON.stringify(c));
  for (const s of sems) {
    await assert.rejects(s.acquire(1), { code: 'ERR_VOLT_CLOSED' });
    await s.disconnect();
  }
  await other.disconnect();
  await nothingLeft(label, base, 'after calls on the disconnected objects');
  assert.equal(sems.length, N); // still referenced: no collection did it
});
