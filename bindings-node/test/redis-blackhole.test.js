'use strict';
// Redis gone silent (issue 26, items 3 and 5): a TCP proxy written here
// black-holes a holder's connections (sockets stay open, nothing is
// forwarded: no error, only silence). The holder's `leaseSignal` must abort
// at most one lease after the cut (the last renewal Redis confirmed started
// before it), whatever its agent is blocked in; and `connect` to a server
// that accepts and never answers must end at `connectTimeout`, not at a
// multiple of it. Real redis-server (test/redis-server.js), never a mock.

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const { Worker } = require('node:worker_threads');
const { Semaphore } = require('..');
const { RedisServer, sleep, command, ownServer } = require('./redis-server.js');

/**
 * Scheduling slack on a loaded machine (a run beside other builds, load 7.6
 * on 2 cores, once took 3.7 s for a 2 s bound with 0.7 s of slack). The
 * defects these bounds catch waited for the 5 s command timeout or longer
 * (15.3 s in the review), so every bound below stays under 5 s.
 */
const SLACK_MS = 2000;

let srv;
before(async () => {
  srv = await RedisServer.start();
});
after(async () => {
  await srv?.close();
});

/**
 * A loopback TCP proxy to `port` that can black-hole every connection. It
 * runs in a worker thread, on an event loop of its own: the client under
 * test may wait for Redis on this thread's loop (the seam's calls did, one
 * round trip, before the non-blocking seam), which must not stop the proxy.
 */
class Proxy {
  static async start(port, db = 0) {
    const p = new Proxy();
    p.db = db;
    p.worker = new Worker(PROXY_CODE, { eval: true, workerData: { port } });
    p.port = await new Promise((resolve, reject) => {
      p.worker.once('message', resolve);
      p.worker.once('error', reject);
    });
    return p;
  }

  url() {
    return `redis://127.0.0.1:${this.port}${this.db === 0 ? '' : `/${this.db}`}`;
  }

  async blackHole() {
    this.worker.postMessage('hole');
    await new Promise((r) => this.worker.once('message', r));
  }

  async close() {
    await this.worker.terminate();
  }
}

const PROXY_CODE = `
const net = require('node:net');
const { Worker } = require('node:worker_threads');
const { parentPort, workerData } = require('node:worker_threads');
let hole = false;
const keep = (s) => s.on('error', () => {});
const server = net.createServer((client) => {
  keep(client);
  if (hole) {
    client.on('data', () => {}); // accepted, read, never answered
    return;
  }
  const upstream = net.connect(workerData.port, '127.0.0.1');
  keep(upstream);
  client.setNoDelay(true);
  upstream.setNoDelay(true);
  // Forwarded while the hole is closed; dropped (sockets open) after.
  client.on('data', (d) => hole || upstream.write(d));
  upstream.on('data', (d) => hole || client.write(d));
  client.on('close', () => upstream.destroy());
  upstream.on('close', () => client.destroy());
});
server.listen(0, '127.0.0.1', () => parentPort.postMessage(server.address().port));
parentPort.on('message', () => {
  hole = true;
  parentPort.postMessage('holed');
});
`;

/** How long after a black-hole cut the holder's leaseSignal aborted. */
async function lossAfterCut(name, lease, holderOpts) {
  const proxy = await Proxy.start(srv.port, srv.db);
  const holder = await Semaphore.connect(proxy.url(), name, 1, holderOpts);
  const other = await Semaphore.connect(srv.url(), name, 1, { commandTimeout: 2000 });
  let holderWait = Promise.resolve('not asked');
  let otherWait = Promise.resolve('not asked');
  try {
    await holder.acquire(1);
    const signal = holder.leaseSignal;
    const aborted = new Promise((resolve) => signal.addEventListener('abort', () => resolve(Date.now())));
    // A waiter of the holder's: it must fail with the loss, not hang.
    holderWait = holder.acquire(1);
    holderWait.catch(() => {});
    otherWait = other.acquire(1);
    // Awaited below; a rejection before that must not become an unhandled
    // one that hides the assertion that failed first (a CI run once failed
    // with only the finally's disconnect error to show).
    otherWait.catch(() => {});
    // Both queued in Redis, and each answer read by its own handle
    // (stats().queued): an Acquire whose Pending answer the cut dropped would
    // be an uncertain outcome, failing the holder at its command timeout
    // (5 s) with a connection error, before its lease. (A CI run once failed
    // that way, 5.1 s into this test; Redis writes the replies of one turn
    // in reverse order, so the census can be answered first.)
    for (let i = 0; ; i++) {
      const queued = (await other.census()).queued;
      if (queued === 2 && holder.stats().queued === 1 && other.stats().queued === 1) break;
      assert.ok(i < 1000, 'two queued');
      await sleep(10);
    }
    const cut = Date.now();
    await proxy.blackHole();
    const lostAt = await aborted;
    const seen = lostAt - cut;
    assert.equal(signal.reason.code, 'ERR_VOLT_LEASE_EXPIRED');
    assert.ok(seen <= lease + SLACK_MS, `leaseSignal aborted ${seen} ms after the cut, lease ${lease} ms`);
    await assert.rejects(holderWait, { code: 'ERR_VOLT_LEASE_EXPIRED' });
    // The permit went to the other client (once the lease ended in Redis).
    assert.equal(await otherWait, undefined);
    await other.release(1);
    const c = await other.census();
    assert.equal(c.available + c.held + c.partial, c.total);
    console.log(`${name}: lease ${lease} ms, leaseSignal aborted ${seen} ms after the cut`);
  } catch (e) {
    // What each side saw, for a failure that could not be reproduced here.
    const settled = (p) =>
      Promise.race([p.then((v) => `settled (${v})`, (err) => `rejected (${err.code})`), sleep(0).then(() => 'pending')]);
    console.log(
      `${name} failed: leaseSignal ${holder.leaseSignal.aborted ? `aborted (${holder.leaseSignal.reason?.code})` : 'not aborted'}` +
        `, holder's wait ${await settled(holderWait)}, other's wait ${await settled(otherWait)}` +
        `, queued as each handle knows it: holder ${holder.stats().queued}, other ${other.stats().queued}`,
    );
    throw e;
  } finally {
    await proxy.close();
    await other.disconnect();
    await holder.disconnect().catch(() => {});
  }
}

test('a black-holed holder sees its lease lost within a 2 s lease', async () => {
  await lossAfterCut('hole-2s', 2000, { lease: 2000, connectTimeout: 3000, commandTimeout: 5000 });
});

test('a black-holed holder sees its lease lost within the default lease (10 s)', async () => {
  await lossAfterCut('hole-default', 10_000, {});
});

/** `connect` with a 2 s connect timeout (and a longer command timeout): ends within it. */
async function connectWithin(url) {
  const t = Date.now();
  const e = await Semaphore.connect(url, 'silent', 1, { connectTimeout: 2000, commandTimeout: 5000 }).then(
    (s) => s.disconnect().then(() => assert.fail('connected to a server that never answers')),
    (err) => err,
  );
  const took = Date.now() - t;
  assert.equal(e.code, 'ERR_VOLT_CONNECTION_FAILED', e.message);
  assert.ok(took <= 2000 + SLACK_MS, `connect took ${took} ms for a connect timeout of 2000 ms`);
  return took;
}

test('connect to a server that accepts and never answers ends at connectTimeout', async () => {
  const kept = new Set();
  const silent = net.createServer((s) => {
    kept.add(s);
    s.on('error', () => {});
  });
  await new Promise((r) => silent.listen(0, '127.0.0.1', r));
  try {
    const { port } = silent.address();
    const plain = await connectWithin(`redis://127.0.0.1:${port}`);
    const withPassword = await connectWithin(`redis://user:secret@127.0.0.1:${port}`);
    console.log(`silent server: connect failed after ${plain} ms (${withPassword} ms with a password)`);
  } finally {
    for (const s of kept) s.destroy();
    await new Promise((r) => silent.close(r));
  }
});

test('connect to a server that holds the scripts (CLIENT PAUSE WRITE) ends at connectTimeout', { skip: ownServer('CLIENT PAUSE') }, async () => {
  const s = await RedisServer.start();
  try {
    assert.equal(await command(s.port, 'CLIENT PAUSE 10000 WRITE'), '+OK\r\n');
    const took = await connectWithin(s.url());
    console.log(`scripts held: connect failed after ${took} ms`);
  } finally {
    await s.close();
  }
});

// Issue 32, item 2: with Redis out of reach, an aborted acquire settles at
// once (the review: 15.3 s after abort() with 5 s timeouts), and the release
// of a permit lost with the session answers at once.
test('calls on a black-holed session keep their deadline', async () => {
  const proxy = await Proxy.start(srv.port, srv.db);
  const opts = { lease: 10_000, connectTimeout: 2000, commandTimeout: 2000 };
  const holder = await Semaphore.connect(proxy.url(), 'hole-deadline', 2, opts);
  const other = await Semaphore.connect(srv.url(), 'hole-deadline', 2, { commandTimeout: 2000 });
  try {
    const probe = holder.acquire(1);
    const blocking = holder.pendingCount === 0; // taken at once: the seam waited for Redis
    await probe;
    await other.acquire(1);
    const ac = new AbortController();
    const wait = holder.acquire(1, { signal: ac.signal });
    wait.catch(() => {});
    for (let i = 0; (await other.census()).queued !== 1; i++) {
      assert.ok(i < 1000, 'queued');
      await sleep(10);
    }
    await proxy.blackHole();
    let t = Date.now();
    ac.abort();
    await assert.rejects(wait);
    const aborted = Date.now() - t;
    t = Date.now();
    try {
      holder.release(1);
    } catch (e) {
      assert.ok(['ERR_VOLT_LEASE_EXPIRED', 'ERR_VOLT_CONNECTION_FAILED'].includes(e.code), e.message);
    }
    const released = Date.now() - t;
    console.log(`2 s timeouts: aborted acquire settled after ${aborted} ms, release after ${released} ms`);
    // At once (well below the 2 s command timeout its cancel may take), and
    // at most one command timeout for the release (a known loss needs no I/O).
    // The seam's cancel waited for its round trip on this thread before the
    // non-blocking seam (probed as in redis.test.js): then only the bound
    // of one command timeout holds.
    assert.ok(aborted <= (blocking ? 2000 : 0) + SLACK_MS, `aborted acquire settled after ${aborted} ms`);
    assert.ok(released <= 2000 + SLACK_MS, `release took ${released} ms`);
    await other.release(1);
  } finally {
    await proxy.close();
    await other.disconnect();
    await holder.disconnect().catch(() => {});
  }
});
