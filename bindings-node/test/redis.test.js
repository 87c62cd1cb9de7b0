'use strict';
// Semaphore.connect(): the Redis backend behind the one Semaphore class, against real redis-server
// instances this file starts (test/redis-server.js), never a mock: tokens,
// FIFO and weights across handles, a worker thread and a second process (on
// standalone Redis and on a 3-node Redis Cluster), a SIGKILLed holder,
// cancel and timeout handing partial grants on, close failing waiters
// everywhere, lease loss (the server SIGSTOPped past a short lease), Redis
// restarted empty, bad input. Conservation is checked through the census.

const { test, before, after } = require('node:test');
const { execFile } = require('node:child_process');
const v8 = require('node:v8');
const vm = require('node:vm');
const assert = require('node:assert/strict');
const { fork } = require('node:child_process');
const path = require('node:path');
const util = require('node:util');
const { Semaphore, RedisSemaphore } = require('..');
const { RedisServer, RedisCluster, sleep, ownServer } = require('./redis-server.js');
const { worker, nextMessage, exited } = require('./helpers.js');

let srv;
before(async () => {
  srv = await RedisServer.start();
});
after(async () => {
  await srv?.close();
});

/** Polls `pred` (async) every 10 ms until true; fails after `ms`. */
async function eventually(what, pred, ms = 10_000) {
  const end = Date.now() + ms;
  for (;;) {
    if (await pred()) return;
    if (Date.now() > end) assert.fail(`not reached within ${ms} ms: ${what}`);
    await sleep(10);
  }
}

async function conserved(sem) {
  const c = await sem.census();
  assert.equal(c.available + c.held + c.partial, c.total, `permits conserved: ${JSON.stringify(c)}`);
  return c;
}

/** Whether `p` settled (after letting pending callbacks run). */
async function settled(p) {
  let done = false;
  p.then(() => (done = true), () => (done = true));
  await sleep(50);
  return done;
}

test('the ESM entry exports RedisSemaphore, the deprecated alias of Semaphore', async () => {
  const esm = await import('../index.mjs');
  assert.equal(esm.RedisSemaphore, RedisSemaphore);
  assert.equal(esm.default.RedisSemaphore, RedisSemaphore);
  assert.equal(RedisSemaphore.connect, Semaphore.connect);
  assert.equal(RedisSemaphore.prototype, Semaphore.prototype);
});

/**
 * Whether the seam's Redis acquire still waits for its round trip on the
 * calling thread (before the non-blocking seam landed): an acquire of free
 * permits is then taken at once (nothing pending), where the non-blocking
 * seam always queues it for the agent. The tests of the event loop's
 * freedom during acquire, release and cancel need the latter.
 */
let seamBlocks;
async function probeSeam() {
  if (seamBlocks !== undefined) return seamBlocks;
  const sem = await Semaphore.connect(srv.url(), 'probe', 1);
  const p = sem.acquire(1);
  seamBlocks = sem.pendingCount === 0;
  await p;
  sem.release(1);
  await sem.disconnect();
  return seamBlocks;
}

test('connect, acquire and release with strictly increasing fencing tokens', async () => {
  const sem = await Semaphore.connect(srv.url(), 'basic', 3);
  assert.ok(sem instanceof Semaphore);
  assert.ok(sem instanceof RedisSemaphore);
  assert.equal(sem.totalPermits, 3);
  assert.equal(sem.name, 'basic');
  // acquire() resolves as on every backend; the token is the grant's.
  assert.equal(await sem.acquire(1), undefined);
  sem.release(1);
  const p1 = await sem.acquirePermit(2);
  const t1 = p1.token;
  assert.equal(typeof t1, 'number');
  assert.ok(t1 > 0 && Number.isSafeInteger(t1));
  assert.equal(sem.heldPermits, 2);
  const p2 = await sem.tryAcquirePermit(1);
  assert.ok(p2.token > t1, 'tokens increase with every grant');
  assert.equal(await sem.tryAcquirePermit(1), null, 'nothing left: null, not an error');
  assert.equal((await sem.acquirePermit(0)).token, 0, 'a grant of 0 has no token');
  assert.equal(await sem.acquire(0), undefined);
  // The calls that would wait for Redis on the event loop say which form to use.
  assert.throws(() => sem.tryAcquire(1), { name: 'TypeError', code: 'ERR_INVALID_STATE', message: /tryAcquirePermit/ });
  assert.throws(() => sem.availablePermits, { name: 'TypeError', code: 'ERR_INVALID_STATE', message: /census/ });
  assert.throws(() => sem.isLocked(), { code: 'ERR_INVALID_STATE' });
  assert.throws(() => sem.share(), { code: 'ERR_INVALID_STATE' });
  assert.throws(() => sem.addPermits(1), { code: 'ERR_VOLT_UNSUPPORTED' });
  assert.throws(() => sem.removePermits(1), { code: 'ERR_VOLT_UNSUPPORTED' });
  let c = await conserved(sem);
  assert.deepEqual([c.available, c.held], [0, 3]);
  p1();
  p2();
  assert.equal(sem.heldPermits, 0);
  const t3 = await sem.runExclusive(async (token) => token, 3);
  assert.ok(t3 > p2.token);
  const permit = await sem.acquirePermit(2);
  assert.equal(permit.permits, 2);
  assert.ok(permit.token > t3);
  assert.equal(permit.signal.aborted, false);
  assert.equal(permit.signal, sem.leaseSignal);
  assert.equal(sem.isLeaseLost(), false);
  assert.equal(sem.heldPermits, 2);
  // Disposable (`using permit = ...` where the syntax exists, and `await
  // using`, as the old Redis releaser was); once only.
  await permit[Symbol.asyncDispose ?? Symbol.for('nodejs.asyncDispose')]();
  permit[Symbol.dispose ?? Symbol.for('nodejs.dispose')]();
  permit();
  c = await conserved(sem);
  assert.deepEqual([c.available, c.held, c.closed], [3, 0, false]);
  assert.deepEqual(JSON.parse(JSON.stringify(sem)), { name: 'basic', totalPermits: 3 });
  await sem.disconnect();
  await assert.rejects(sem.acquire(1), { code: 'ERR_VOLT_CLOSED' });
  await assert.rejects(sem.tryAcquirePermit(1), { code: 'ERR_VOLT_CLOSED' });
  assert.throws(() => sem.release(1), { code: 'ERR_VOLT_CLOSED' });
});

test('strict FIFO with weights across handles: a queued acquire(3) is not overtaken by a later acquire(1)', async () => {
  const a = await Semaphore.connect(srv.url(), 'fifo', 3);
  const b = await Semaphore.connect(srv.url(), 'fifo', 3);
  await a.acquire(3);
  const order = [];
  const big = b.acquirePermit(3).then((p) => order.push(['b3', p.token]));
  await eventually('b queued', async () => (await a.census()).queued === 1);
  const small = a.acquirePermit(1).then((p) => order.push(['a1', p.token]));
  await eventually('a queued', async () => (await a.census()).queued === 2);
  assert.equal(await a.tryAcquirePermit(1), null, 'tryAcquirePermit does not barge either');
  await a.release(1);
  await a.release(1);
  assert.equal(await settled(big), false, 'b(3) holds a partial grant of 2');
  assert.equal(order.length, 0);
  assert.equal((await conserved(a)).partial, 2);
  await a.release(1);
  await big;
  await b.release(3);
  await small;
  assert.deepEqual(order.map((o) => o[0]), ['b3', 'a1']);
  assert.ok(order[1][1] > order[0][1]);
  await a.release(1);
  assert.equal((await conserved(a)).available, 3);
  await a.disconnect();
  await b.disconnect();
});

test('an aborted or timed-out waiter hands its partial grant on', async () => {
  const a = await Semaphore.connect(srv.url(), 'cancel', 4);
  const b = await Semaphore.connect(srv.url(), 'cancel', 4);
  await a.acquire(4);
  const ac = new AbortController();
  const first = b.acquire(3, { signal: ac.signal });
  await eventually('queued', async () => (await a.census()).queued === 1);
  const second = a.acquire(2);
  await eventually('queued', async () => (await a.census()).queued === 2);
  await a.release(2); // first collects 2 of its 3
  assert.equal((await conserved(a)).partial, 2);
  const reason = new Error('changed my mind');
  ac.abort(reason);
  await assert.rejects(first, (e) => e === reason);
  await second; // the 2 first had went on to it
  let c = await conserved(a);
  assert.deepEqual([c.queued, c.partial, c.held], [0, 0, 4]);
  // A timeout does the same, with its own code.
  const third = b.acquire(3, { timeout: 100 });
  await eventually('queued', async () => (await a.census()).queued === 1);
  await a.release(2); // third collects 2
  await assert.rejects(third, { code: 'ERR_VOLT_TIMED_OUT' });
  // Settled at once; its cancel reaches Redis just after (seen at once by
  // b's own later calls, shortly after by other clients).
  c = await conserved(b);
  assert.deepEqual([c.available, c.held, c.queued], [2, 2, 0]);
  // cancel() does it for every acquire of the object (c1's partial grant of
  // 2 goes to c2 first, whose grant is then given back: nothing is lost).
  const c1 = b.acquire(3);
  const c2 = b.acquire(1);
  await eventually('queued', async () => (await a.census()).queued === 2);
  assert.equal(b.pendingCount, 2);
  assert.equal(b.cancel(), 2);
  await assert.rejects(c1, { code: 'ERR_VOLT_CANCELLED' });
  await assert.rejects(c2, { code: 'ERR_VOLT_CANCELLED' });
  assert.equal(b.pendingCount, 0);
  // c2's grant is given back once its cancel's answer arrives.
  await eventually('c2 given back', async () => {
    c = await conserved(a);
    return c.available === 2 && c.held === 2 && c.queued === 0;
  });
  // An already-aborted signal rejects at once, and queues nothing.
  await assert.rejects(b.acquire(1, { signal: AbortSignal.abort('x') }), (e) => e === 'x');
  await a.release(2);
  c = await conserved(a);
  assert.deepEqual([c.available, c.held], [4, 0]);
  await a.disconnect();
  await b.disconnect();
});

test('closeForEveryone() fails the waiters of every handle, in this thread and in a worker', async () => {
  const a = await Semaphore.connect(srv.url(), 'close', 1);
  await a.acquire(1);
  const b = await Semaphore.connect(srv.url(), 'close', 1);
  const mine = b.acquire(1).catch((e) => e); // may reject before it is awaited
  const w = worker(
    `(async () => {
      const sem = await volt.Semaphore.connect(workerData.url, 'close', 1);
      parentPort.postMessage('connected');
      try { await sem.acquire(1); parentPort.postMessage('granted'); }
      catch (e) { parentPort.postMessage(e.code); }
      await sem.disconnect();
    })();`,
    { url: srv.url() },
  );
  await nextMessage(w, (m) => m === 'connected');
  await eventually('both queued', async () => (await a.census()).queued === 2);
  await a.closeForEveryone();
  assert.equal((await mine).code, 'ERR_VOLT_CLOSED');
  assert.equal(await nextMessage(w, (m) => m !== 'connected'), 'ERR_VOLT_CLOSED');
  assert.equal(await exited(w), 0);
  await assert.rejects(b.acquire(1), { code: 'ERR_VOLT_CLOSED' });
  assert.equal(b.closed, true);
  await a.release(1); // release still works after close
  const c = await conserved(a);
  assert.deepEqual([c.closed, c.available, c.queued], [true, 1, 0]);
  await a.disconnect();
  await b.disconnect();
});

test('a worker thread and the main thread share one semaphore', async () => {
  const main = await Semaphore.connect(srv.url(), 'workers', 2);
  await main.acquire(2);
  const w = worker(
    `(async () => {
      const sem = await volt.Semaphore.connect(workerData.url, 'workers', 2);
      const { token } = await sem.acquirePermit(2);
      parentPort.postMessage({ token, held: sem.heldPermits });
      await sem.release(2);
      await sem.disconnect();
      parentPort.postMessage('done');
    })();`,
    { url: srv.url() },
  );
  await eventually('worker queued', async () => (await main.census()).queued === 1);
  await main.release(2);
  const m = await nextMessage(w, (x) => typeof x === 'object');
  assert.equal(m.held, 2);
  assert.ok(m.token > 0);
  await nextMessage(w, (x) => x === 'done');
  assert.equal(await exited(w), 0);
  const c = await conserved(main);
  assert.deepEqual([c.available, c.held], [2, 0]);
  await main.disconnect();
});

test('a terminated worker gives back what it held and waited for', async () => {
  const main = await Semaphore.connect(srv.url(), 'terminate', 3);
  await main.acquire(1);
  const w = worker(
    `(async () => {
      const sem = await volt.Semaphore.connect(workerData.url, 'terminate', 3);
      await sem.acquire(2);
      parentPort.postMessage('holding');
      sem.acquire(3); // queued, collects nothing: main holds 1
    })();`,
    { url: srv.url() },
  );
  await nextMessage(w, (m) => m === 'holding');
  await eventually('worker queued', async () => (await main.census()).queued === 1);
  await w.terminate();
  await eventually('session ended', async () => {
    const c = await main.census();
    return c.queued === 0 && c.held === 1 && c.available === 2;
  });
  await main.release(1);
  await conserved(main);
  await main.disconnect();
});

test('FIFO across processes: a queued acquire(3) in a child is not overtaken by a later acquire(1) here', async () => {
  const name = 'procs';
  const parent = await Semaphore.connect(srv.url(), name, 3);
  await parent.acquire(3);
  const c = child(name, 3);
  assert.equal((await c.next('ready')).error, undefined);
  c.send({ op: 'acquire', n: 3 });
  await eventually('child queued', async () => (await parent.census()).queued === 1);
  const mine = parent.acquirePermit(1);
  await eventually('parent queued', async () => (await parent.census()).queued === 2);
  await parent.release(3); // all to the child's acquire(3), none to mine
  const granted = await c.next('acquire');
  assert.equal(granted.n, 3);
  assert.equal(await settled(mine), false, 'the later acquire(1) waits');
  c.send({ op: 'release', n: 3 });
  await c.next('release');
  const { token } = await mine;
  assert.ok(token > granted.token, 'the later grant has the larger token');
  c.send({ op: 'exit' });
  await c.exited;
  await parent.release(1);
  const cs = await conserved(parent);
  assert.deepEqual([cs.available, cs.held, cs.queued], [3, 0, 0]);
  await parent.disconnect();
});

/** Forks test/redis-child.js on `name`; `next(op)` resolves with its next message of that op. */
function child(name, permits, lease, url = srv.url(), cluster = false, label = undefined) {
  const args = [url, name, String(permits), lease === undefined ? '' : String(lease)];
  if (cluster) args.push('cluster');
  const env = label === undefined ? process.env : { ...process.env, VOLT_SEM_TEST_LABEL: label };
  const c = fork(path.join(__dirname, 'redis-child.js'), args, { stdio: 'inherit', env });
  const messages = [];
  const waiters = [];
  c.on('message', (m) => {
    messages.push(m);
    for (const w of waiters.splice(0)) w();
  });
  c.next = async (op) => {
    for (;;) {
      const i = messages.findIndex((m) => m.op === op);
      if (i >= 0) return messages.splice(i, 1)[0];
      await new Promise((r) => waiters.push(r));
    }
  };
  c.exited = new Promise((r) => c.once('exit', (code, sig) => r(sig ?? code)));
  return c;
}

test('a holder killed with SIGKILL: its permits reach the next waiter within its lease', async () => {
  const name = 'killed';
  const sem = await Semaphore.connect(srv.url(), name, 3);
  const c = child(name, 3, 1000);
  assert.equal((await c.next('ready')).error, undefined);
  c.send({ op: 'acquire', n: 2 });
  const held = await c.next('acquire');
  const waiting = sem.acquirePermit(3);
  await eventually('queued', async () => (await sem.census()).queued === 1);
  c.kill('SIGKILL');
  assert.equal(await c.exited, 'SIGKILL');
  const { token } = await waiting; // within lease + one heartbeat (~1.3 s)
  assert.ok(token > held.token);
  await sem.release(3);
  const cen = await conserved(sem);
  assert.deepEqual([cen.available, cen.held, cen.sessions], [3, 0, 1]);
  await sem.disconnect();
});

test('inspect() shows a client of another process under its label, with its token and lease; killed, it is gone', async () => {
  const name = 'labelled';
  const sem = await Semaphore.connect(srv.url(), name, 2);
  const c = child(name, 2, 1000, srv.url(), false, 'node-redis-holder');
  assert.equal((await c.next('ready')).error, undefined);
  c.send({ op: 'acquire', n: 2 });
  const held = await c.next('acquire');
  const waiting = sem.acquirePermit(1);
  await eventually('queued', async () => (await sem.census()).queued === 1);
  let i = await sem.inspect();
  assert.deepEqual([i.total, i.available, i.closed], [2, 0, false]);
  assert.equal(i.holders.length, 1);
  const [h] = i.holders;
  assert.deepEqual([h.label, h.pid, h.permits, h.token], ['node-redis-holder', c.pid, 2, held.token]);
  assert.ok(h.leaseRemaining > 0, `leaseRemaining ${h.leaseRemaining}`);
  assert.ok(typeof h.heldFor === 'number' && h.heldFor >= 0, `heldFor ${h.heldFor}`);
  assert.equal(i.waiters.length, 1);
  const [w] = i.waiters;
  assert.deepEqual([w.position, w.permits, w.granted, w.pid], [0, 1, 0, process.pid]);
  assert.equal(w.label, `${w.host}:${process.pid}`); // the default label
  c.kill('SIGKILL');
  assert.equal(await c.exited, 'SIGKILL');
  const { token } = await waiting; // its lease ends unrenewed
  i = await sem.inspect();
  assert.deepEqual(i.waiters, []);
  assert.deepEqual(i.holders.map((x) => [x.pid, x.label, x.token]), [[process.pid, w.label, token]]);
  await sem.release(1);
  await sem.disconnect();
  await Semaphore.deleteRedis(srv.url(), name);
});

test('connect() rejects an invalid label with ERR_VOLT_INVALID_ARGUMENT before connecting, creating nothing', async () => {
  const name = 'bad-label';
  for (const label of ['has space', 'x'.repeat(200), '']) {
    await assert.rejects(
      Semaphore.connect(srv.url(), name, 1, { label }),
      (e) => e instanceof Error && e.code === 'ERR_VOLT_INVALID_ARGUMENT' && /label/.test(e.message),
      JSON.stringify(label),
    );
  }
  await assert.rejects(Semaphore.connect(srv.url(), name, 1, { label: 7 }), (e) => e instanceof TypeError);
  await assert.rejects(Semaphore.deleteRedis(srv.url(), name), (e) => e.code === 'ERR_VOLT_NOT_FOUND');
});

test('stress: weights 1..3, random aborts and timeouts over 4 handles in 2 threads: limit kept, permits conserved', async () => {
  const name = 'stress';
  const LIMIT = 3;
  const handles = await Promise.all([0, 1, 2].map(() => Semaphore.connect(srv.url(), name, LIMIT)));
  const w = worker(
    `(async () => {
      const sem = await volt.Semaphore.connect(workerData.url, 'stress', 3);
      let grants = 0;
      for (let i = 0; i < 80; i++) {
        const n = 1 + (i % 3);
        try {
          await sem.acquire(n, { timeout: 1 + (i % 7) * 3 });
          grants++;
          await new Promise((r) => setTimeout(r, i % 2));
          await sem.release(n);
        } catch (e) {
          if (e.code !== 'ERR_VOLT_TIMED_OUT') throw e;
        }
      }
      await sem.disconnect();
      parentPort.postMessage(grants);
    })();`,
    { url: srv.url() },
  );
  let held = 0;
  let peak = 0;
  let grants = 0;
  let cancels = 0;
  let seed = 12345;
  const rnd = (k) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % k;
  };
  const run = async (sem) => {
    for (let i = 0; i < 80; i++) {
      const n = 1 + rnd(3);
      const ac = new AbortController();
      const r = rnd(4);
      if (r === 0) setTimeout(() => ac.abort(new Error('abort')), rnd(10));
      try {
        await sem.acquire(n, { signal: ac.signal, timeout: r === 1 ? 1 + rnd(10) : undefined });
      } catch (e) {
        assert.ok(e.message === 'abort' || e.code === 'ERR_VOLT_TIMED_OUT', String(e));
        cancels++;
        continue;
      }
      grants++;
      held += n; // the local view: other thread's grants are not counted, so check below via census
      peak = Math.max(peak, held);
      assert.ok(peak <= LIMIT, `held ${held} in this thread`);
      await sleep(rnd(2));
      held -= n;
      await sem.release(n);
    }
  };
  const census = setInterval(async () => {
    const c = await handles[0].census().catch(() => null);
    if (c !== null) assert.ok(c.held + c.partial + c.available === LIMIT && c.held <= LIMIT, JSON.stringify(c));
  }, 20);
  try {
    await Promise.all(handles.map(run));
  } finally {
    clearInterval(census);
  }
  const workerGrants = await nextMessage(w, (m) => typeof m === 'number');
  assert.equal(await exited(w), 0);
  assert.ok(grants > 0 && workerGrants >= 0);
  console.log(`stress: ${grants} grants and ${cancels} cancels here, ${workerGrants} grants in the worker`);
  const c = await conserved(handles[0]);
  assert.deepEqual([c.available, c.held, c.partial, c.queued], [LIMIT, 0, 0, 0]);
  await Promise.all(handles.map((h) => h.disconnect()));
});

test('a collected object ends its session: what it held goes back', async () => {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc');
  const keeper = await Semaphore.connect(srv.url(), 'gc', 2);
  await (async () => {
    const dropped = await Semaphore.connect(srv.url(), 'gc', 2);
    await dropped.acquire(2);
  })();
  assert.equal((await keeper.census()).held, 2);
  await eventually('collected and its session ended', async () => {
    gc();
    await sleep(20);
    const c = await keeper.census();
    return c.held === 0 && c.available === 2 && c.sessions === 1;
  });
  await keeper.disconnect();
});

test('a collected object lets go of its lease watch (its leaseSignal is collected too)', async () => {
  // Each session a grant used is watched (see leaseSignal); the watch's
  // callback, which holds the AbortController, was kept by the thread until
  // a LEASE_LOST that a collected object never gets: one entry leaked per
  // connect() left to GC, with its controller and signal.
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc');
  const keeper = await Semaphore.connect(srv.url(), 'gc-watch', 2);
  const signals = [];
  for (let i = 0; i < 3; i++) {
    await (async () => {
      const dropped = await Semaphore.connect(srv.url(), 'gc-watch', 2);
      const rel = await dropped.acquirePermit(1);
      assert.equal(rel.signal, dropped.leaseSignal);
      signals.push(new WeakRef(dropped.leaseSignal));
      rel();
    })();
  }
  await eventually('the objects and their lease signals collected', async () => {
    gc();
    await sleep(20);
    return signals.every((r) => r.deref() === undefined) && (await keeper.census()).sessions === 1;
  });
  await keeper.disconnect();
});

test('leaseLost() called once per job in a live session adds one listener to leaseSignal, not one per call', async () => {
  // Each call added an abort listener that stayed until the session was
  // lost: a program racing each job against leaseLost() grew it without
  // bound (and Node warned MaxListenersExceededWarning after 10).
  const { getEventListeners } = require('node:events');
  const sem = await Semaphore.connect(srv.url(), 'lease-lost-per-job', 1);
  try {
    await sem.acquire(1);
    const before = getEventListeners(sem.leaseSignal, 'abort').length;
    const calls = [];
    for (let i = 0; i < 1000; i++) calls.push(sem.leaseLost());
    const after = getEventListeners(sem.leaseSignal, 'abort').length;
    assert.ok(after <= before + 1, `${after} abort listeners after 1000 calls (${before} before)`);
    assert.equal(await settled(calls[999]), false);
    await sem.release(1);
  } finally {
    await sem.disconnect();
  }
});

test('an unref()d object waiting for permits does not keep the process alive', async () => {
  const sem = await Semaphore.connect(srv.url(), 'unref', 1);
  await sem.acquire(1);
  const code = `
    const { Semaphore } = require(${JSON.stringify(path.resolve(__dirname, '..'))});
    (async () => {
      const s = await Semaphore.connect(${JSON.stringify(srv.url())}, 'unref', 1);
      s.unref();
      s.acquire(1).then(() => console.log('granted?!'));
      console.log('waiting');
    })();`;
  const out = await new Promise((resolve, reject) => {
    execFile(process.execPath, ['-e', code], { timeout: 20_000 }, (err, stdout) => (err ? reject(err) : resolve(stdout)));
  });
  assert.equal(out.trim(), 'waiting');
  await eventually('its session ended at exit', async () => (await sem.census()).sessions === 1);
  assert.equal((await conserved(sem)).queued, 0);
  await sem.release(1);
  await sem.disconnect();
});

test('FIFO across processes on a 3-node Redis Cluster, for semaphores on different nodes', { skip: ownServer('a 3-node cluster') }, async () => {
  const c = await RedisCluster.start();
  try {
    const owners = new Set();
    for (const name of ['alpha', 'beta', 'gamma', 'delta']) {
      owners.add(await c.owner(`{volt-sem:${name}}`));
      const me = await Semaphore.connect(c.url(), name, 3, { cluster: true, connectTimeout: 3000 });
      await me.acquire(3);
      const a = child(name, 3, undefined, c.url(), true);
      assert.equal((await a.next('ready')).error, undefined);
      a.send({ op: 'acquire', n: 3 });
      await eventually('a queued', async () => (await me.census()).queued === 1);
      const mine = me.acquirePermit(1);
      await eventually('mine queued', async () => (await me.census()).queued === 2);
      await me.release(3);
      const granted = await a.next('acquire');
      assert.equal(granted.n, 3);
      let cs = await conserved(me);
      assert.deepEqual([cs.queued, cs.held], [1, 3], `the later acquire(1) overtook on ${name}`);
      a.send({ op: 'release', n: 3 });
      await a.next('release');
      assert.ok((await mine).token > granted.token);
      await me.release(1);
      cs = await conserved(me);
      assert.equal(cs.available, 3);
      a.send({ op: 'exit' });
      await a.exited;
      await me.disconnect();
    }
    assert.ok(owners.size >= 2, `every name on one node: ${[...owners]}`);
  } finally {
    await c.close();
  }
});

test('the round-trip calls never block the event loop, even while Redis does not answer', { skip: ownServer('SIGSTOP') }, async () => {
  const s = await RedisServer.start();
  try {
    const sem = await Semaphore.connect(s.url(), 'loop', 1, { commandTimeout: 1000, lease: 3000 });
    s.signal('SIGSTOP');
    let ticks = 0;
    const iv = setInterval(() => ticks++, 5);
    // Round trips that cannot complete: off the event loop.
    const pending = [sem.census(), sem.tryAcquirePermit(1), sem.closeForEveryone()].map((p) => p.catch((e) => e));
    await sleep(300);
    clearInterval(iv);
    s.signal('SIGCONT');
    assert.ok(ticks > 5, `timers ran while the calls were in flight (${ticks})`);
    // Each settles (Redis answers once it runs again); the try's grant goes back.
    const [, tried] = await Promise.all(pending);
    if (typeof tried === 'function') tried();
    // connect too: to a server that accepts and never answers.
    s.signal('SIGSTOP');
    ticks = 0;
    const iv2 = setInterval(() => ticks++, 5);
    const connecting = Semaphore.connect(s.url(), 'loop2', 1, { connectTimeout: 500 }).catch((x) => x);
    await sleep(200);
    clearInterval(iv2);
    assert.ok(ticks > 5, `timers ran while connect was in flight (${ticks})`);
    assert.equal((await connecting).code, 'ERR_VOLT_CONNECTION_FAILED');
    s.signal('SIGCONT');
    await sem.disconnect();
  } finally {
    await s.close();
  }
});

test('acquire, release and an abort never wait for Redis on the event loop (the non-blocking seam)', { skip: ownServer('SIGSTOP') }, async (t) => {
  if (await probeSeam()) {
    t.skip("the seam's Redis calls still wait for one round trip on the calling thread (until the non-blocking seam is on main)");
    return;
  }
  const s = await RedisServer.start();
  try {
    const sem = await Semaphore.connect(s.url(), 'loop3', 1, { commandTimeout: 1000, lease: 3000 });
    await sem.acquire(1);
    s.signal('SIGSTOP');
    let ticks = 0;
    const iv = setInterval(() => ticks++, 5);
    const ac = new AbortController();
    const waiting = sem.acquire(1, { signal: ac.signal }).catch((e) => e);
    await sleep(20);
    ac.abort(new Error('gone'));
    assert.equal((await waiting).message, 'gone');
    let released;
    try {
      sem.release(1);
      released = true;
    } catch (e) {
      released = e;
    }
    await sleep(300);
    clearInterval(iv);
    s.signal('SIGCONT');
    assert.ok(ticks > 5, `timers ran while acquire, abort and release were in flight (${ticks})`);
    assert.ok(released === true || released instanceof Error);
    await sem.disconnect();
  } finally {
    await s.close();
  }
});

test('lease loss (Redis stopped past a 1.5 s lease): waiters fail, the holder is told, release releases nothing', { skip: ownServer('SIGSTOP') }, async () => {
  const s = await RedisServer.start();
  try {
    // connectTimeout short too: the agent notices the loss only once its reconnect
    // attempts (each up to connectTimeout) gave up.
    const opts = { lease: 1500, commandTimeout: 500, connectTimeout: 500 };
    const sem = await Semaphore.connect(s.url(), 'lease', 2, opts);
    const other = await Semaphore.connect(s.url(), 'lease', 2, { commandTimeout: 2000 });
    const permit = await sem.acquirePermit(1);
    await other.acquire(1);
    const waiting = sem.acquire(2);
    waiting.catch(() => {});
    // Queued in Redis, and the answer read by sem's handle (stats().queued):
    // Redis may write another client's reply first (the census) and be
    // stopped before it writes this one, and a reply never read is an
    // uncertain outcome (ERR_VOLT_CONNECTION_FAILED), not a lease loss.
    await eventually('queued', async () => (await other.census()).queued === 1 && sem.stats().queued === 1);
    const signal = sem.leaseSignal;
    assert.equal(signal, permit.signal);
    let lost;
    signal.addEventListener('abort', () => (lost = signal.reason));
    const told = [sem.leaseLost(), sem.leaseLost()];
    s.signal('SIGSTOP');
    await assert.rejects(waiting, { code: 'ERR_VOLT_LEASE_EXPIRED' });
    s.signal('SIGCONT');
    await eventually('the holder was told', () => lost !== undefined);
    assert.equal(lost.code, 'ERR_VOLT_LEASE_EXPIRED');
    assert.equal(permit.signal.aborted, true);
    assert.equal(sem.isLeaseLost(), true);
    assert.equal((await sem.leaseLost()).code, 'ERR_VOLT_LEASE_EXPIRED');
    for (const p of told) assert.equal((await p).code, 'ERR_VOLT_LEASE_EXPIRED');
    assert.match(util.inspect(sem), /session: 'lease lost'/);
    assert.throws(() => permit(), { code: 'ERR_VOLT_LEASE_EXPIRED' });
    // The lost permit went back once: other's 1 + nothing of sem's.
    await eventually('reclaimed', async () => {
      const c = await other.census();
      return c.held === 1 && c.available === 1 && c.queued === 0;
    });
    await conserved(other);
    // The reclaimed permit goes to someone else, fenced by a newer token.
    assert.ok((await other.acquirePermit(1)).token > permit.token);
    await other.release(1);
    // The next acquire starts a new session, with a new signal.
    const t = (await sem.acquirePermit(1)).token;
    assert.ok(t > 0);
    assert.notEqual(sem.leaseSignal, signal);
    assert.equal(sem.leaseSignal.aborted, false);
    await sem.release(1);
    await other.release(1);
    // Each release reaches Redis from its handle's door thread right after
    // it returned; a census of the same handle runs after it.
    await sem.census();
    const c = await conserved(other);
    assert.deepEqual([c.available, c.held], [2, 0]);
    await sem.disconnect();
    await other.disconnect();
  } finally {
    await s.close();
  }
});

test('Redis restarted empty: holders and waiters fail with ERR_VOLT_STATE_LOST', { skip: ownServer('a restart') }, async () => {
  const s = await RedisServer.start();
  try {
    const opts = { lease: 1500, commandTimeout: 1000, connectTimeout: 3000 };
    const a = await Semaphore.connect(s.url(), 'restart', 1, opts);
    await a.acquire(1);
    const b = await Semaphore.connect(s.url(), 'restart', 1, opts);
    const waiting = b.acquire(1).catch((e) => e); // may reject before it is awaited
    // Queued in Redis, and the answer read by b's handle (as in the lease test).
    await eventually('queued', async () => (await a.census()).queued === 1 && b.stats().queued === 1);
    let lost;
    a.leaseSignal.addEventListener('abort', () => (lost = a.leaseSignal.reason));
    await s.restartEmpty();
    const failed = await waiting;
    assert.equal(failed.code, 'ERR_VOLT_STATE_LOST', failed.stack);
    // a's session learns it from its own agent (a's first call after the
    // restart may instead meet its connection's end: a connection error).
    await eventually('the holder was told', () => lost !== undefined);
    assert.equal(lost.code, 'ERR_VOLT_STATE_LOST');
    assert.throws(() => a.release(1), { code: 'ERR_VOLT_STATE_LOST' });
    await assert.rejects(b.tryAcquirePermit(1), { code: 'ERR_VOLT_STATE_LOST' });
    // Connecting again starts afresh.
    const fresh = await Semaphore.connect(s.url(), 'restart', 1);
    assert.ok((await fresh.tryAcquirePermit(1)).token > 0);
    await fresh.release(1);
    await a.disconnect();
    await b.disconnect();
    await fresh.disconnect();
  } finally {
    await s.close();
  }
});

test('bad input: typed errors, nothing changed, no password anywhere', { skip: ownServer('a password and an ACL user') }, async () => {
  const url = srv.url();
  await assert.rejects(Semaphore.connect('http://nope', 'x', 1), { code: 'ERR_VOLT_INVALID_URL' });
  await assert.rejects(Semaphore.connect('redis://127.0.0.1:notaport', 'x', 1), { code: 'ERR_VOLT_INVALID_URL' });
  await assert.rejects(Semaphore.connect(url, '', 1), { code: 'ERR_VOLT_INVALID_NAME' });
  await assert.rejects(Semaphore.connect(url, 'n'.repeat(1025), 1), { code: 'ERR_VOLT_INVALID_NAME' });
  await assert.rejects(Semaphore.connect(url, 'bad', 0), { name: 'RangeError', code: 'ERR_OUT_OF_RANGE' });
  await assert.rejects(Semaphore.connect(url, 'bad', 2 ** 41), { name: 'RangeError', code: 'ERR_OUT_OF_RANGE' });
  await assert.rejects(Semaphore.connect(url, 'bad', 1.5), { code: 'ERR_OUT_OF_RANGE' });
  await assert.rejects(Semaphore.connect(42, 'bad', 1), { code: 'ERR_INVALID_ARG_TYPE' });
  await assert.rejects(Semaphore.connect(url, 'bad', 1, { lease: -1 }), { code: 'ERR_OUT_OF_RANGE' });
  await assert.rejects(Semaphore.connect(url, 'bad', 1, { lease: 100 }), { code: 'ERR_VOLT_INVALID_OPTION' });
  await assert.rejects(Semaphore.connect(url, 'bad', 1, { prefix: 'a{b' }), { code: 'ERR_VOLT_INVALID_PREFIX' });
  // ':' ends the prefix inside the keys: with it, prefix 'a:b' + name 'c' would be prefix 'a' + name 'b:c'.
  await assert.rejects(Semaphore.connect(url, 'bad', 1, { prefix: 'a:b' }), { code: 'ERR_VOLT_INVALID_PREFIX' });
  await assert.rejects(Semaphore.connect(url, 'bad', 1, { cluster: 'yes' }), { code: 'ERR_INVALID_ARG_TYPE' });
  assert.throws(() => new RedisSemaphore(), { code: 'ERR_INVALID_ARG_TYPE' });
  await assert.rejects(Semaphore.connect(url, 42, 1), { code: 'ERR_INVALID_ARG_TYPE' });

  // Unreachable: a port nobody listens on, within the connect timeout.
  const { port } = srv;
  const closedPort = port === 1 ? 2 : 1;
  await assert.rejects(Semaphore.connect(`redis://127.0.0.1:${closedPort}`, 'x', 1, { connectTimeout: 1000 }), {
    code: 'ERR_VOLT_CONNECTION_FAILED',
  });

  // Wrong password: typed, and the password is nowhere in the error.
  const secret = 'hunter2-s3cret';
  const pw = await RedisServer.start({ password: 'right-one', extra: ['--user', 'alice', 'on', '>alice-pw', '~*', '&*', '+@all'] });
  try {
    const wrong = `redis://:${secret}@127.0.0.1:${pw.port}`;
    const e = await Semaphore.connect(wrong, 'auth', 1).catch((x) => x);
    assert.equal(e.code, 'ERR_VOLT_AUTH_FAILED');
    assert.ok(!util.inspect(e).includes(secret) && !e.message.includes(secret));
    const ok = await Semaphore.connect(`redis://:right-one@127.0.0.1:${pw.port}`, 'auth', 1);
    const shown = util.inspect(ok, { showHidden: true, depth: 5 }) + JSON.stringify(ok) + String(ok);
    assert.ok(!shown.includes('right-one'), shown);
    await ok.disconnect();
    // An ACL user: user:password.
    const alice = await Semaphore.connect(`redis://alice:alice-pw@127.0.0.1:${pw.port}`, 'auth', 1);
    assert.ok((await alice.tryAcquirePermit(1)).token > 0);
    await alice.release(1);
    await alice.disconnect();
    await assert.rejects(Semaphore.connect(`redis://alice:${secret}@127.0.0.1:${pw.port}`, 'auth', 1), (x) => {
      assert.equal(x.code, 'ERR_VOLT_AUTH_FAILED');
      assert.ok(!util.inspect(x).includes(secret));
      return true;
    });
  } finally {
    await pw.close();
  }

  // A total other than the existing semaphore's: refused, nothing changed.
  const sem = await Semaphore.connect(url, 'mismatch', 2);
  const m = await Semaphore.connect(url, 'mismatch', 3).catch((x) => x);
  assert.equal(m.code, 'ERR_VOLT_MISMATCH');
  assert.equal(m.existing, 2);
  assert.equal(sem.totalPermits, 2);

  // Requests and releases out of range.
  await sem.acquire(1);
  assert.throws(() => sem.release(2), { code: 'ERR_VOLT_NOT_HELD', held: 1 });
  await assert.rejects(sem.acquire(3), { code: 'ERR_OUT_OF_RANGE' });
  await assert.rejects(sem.acquire(-1), { code: 'ERR_OUT_OF_RANGE' });
  await assert.rejects(sem.acquire(1, { signal: 'no' }), { code: 'ERR_INVALID_ARG_TYPE' });
  await assert.rejects(sem.acquire(1, { timeout: -1 }), { code: 'ERR_OUT_OF_RANGE' });
  // timeout: 0 is one attempt (one round trip): 1 of 2 is held, so 2 time
  // out and 1 is granted, with its token.
  await assert.rejects(sem.acquire(2, { timeout: 0 }), { code: 'ERR_VOLT_TIMED_OUT' });
  const once = await sem.acquirePermit(1, { timeout: 0 });
  assert.equal(typeof once.token, 'number');
  once();
  await assert.rejects(sem.tryAcquirePermit(1.5), { code: 'ERR_OUT_OF_RANGE' });
  await sem.release(1);
  const c = await conserved(sem);
  assert.deepEqual([c.total, c.available, c.held], [2, 2, 0]);
  await sem.disconnect();
  await sem.disconnect(); // idempotent
});

test('TLS and replication options reach the connection (typed errors, nothing lost)', async () => {
  const fs = require('node:fs');
  const os = require('node:os');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'volt-sem-tls-'));
  const ca = path.join(dir, 'ca.pem');
  fs.writeFileSync(ca, 'not a certificate\n');
  const tlsUrl = srv.url().replace('redis://', 'rediss://');
  // A TLS handshake with a plain Redis port: a typed TLS failure.
  await assert.rejects(Semaphore.connect(tlsUrl, 'tls', 1, { tlsCaFile: ca, connectTimeout: 2000 }), {
    code: 'ERR_VOLT_TLS_FAILED',
  });
  // TLS options on a plain URL: refused, not ignored.
  await assert.rejects(Semaphore.connect(srv.url(), 'tls', 1, { tlsCaFile: ca }), {
    code: 'ERR_VOLT_INVALID_OPTION',
  });
  await assert.rejects(Semaphore.connect(srv.url(), 'tls', 1, { tlsClientCert: { cert: ca } }), {
    code: 'ERR_INVALID_ARG_TYPE',
  });
  await assert.rejects(Semaphore.connect(srv.url(), 'tls', 1, { minReplicasAcked: { replicas: 0 } }), RangeError);
  // WAIT for a replica this server does not have: the grant fails typed and goes back.
  const plain = await Semaphore.connect(srv.url(), 'replicated', 2);
  const strict = await Semaphore.connect(srv.url(), 'replicated', 2, { minReplicasAcked: { replicas: 1, timeout: 100 } });
  await assert.rejects(strict.tryAcquirePermit(1), { code: 'ERR_VOLT_NOT_REPLICATED' });
  await eventually('the grant went back', async () => (await conserved(plain)).available === 2);
  await strict.disconnect();
  await plain.disconnect();
  fs.rmSync(dir, { recursive: true, force: true });
});

test('setTotal(): a growth alone serves the acquire of another process; a shrink rejects the queued acquire above it and keeps a debt', async () => {
  const name = 'set-total';
  const parent = await Semaphore.connect(srv.url(), name, 1);
  await parent.acquire(1);
  const c = child(name, 1);
  assert.equal((await c.next('ready')).error, undefined);
  c.send({ op: 'acquire', n: 1 });
  await eventually('child queued', async () => (await parent.census()).queued === 1);
  await parent.setTotal(2); // no release: the growth is what serves the child
  assert.equal((await c.next('acquire')).n, 1);
  c.send({ op: 'release', n: 1 });
  await c.next('release');
  c.send({ op: 'exit' });
  await c.exited;
  let cs = await conserved(parent);
  assert.deepEqual([cs.total, cs.available, cs.held, cs.debt], [2, 1, 1, 0]);

  // acquire(2) takes the free permit as a partial grant; the shrink fails it.
  const big = parent.acquire(2);
  await eventually('acquire(2) queued', async () => (await parent.census()).partial === 1);
  const failed = assert.rejects(big, (e) => e instanceof RangeError && e.code === 'ERR_OUT_OF_RANGE');
  await parent.setTotal(1); // it may reject before this resolves
  await failed;
  cs = await conserved(parent);
  assert.deepEqual([cs.total, cs.available, cs.held, cs.queued], [1, 0, 1, 0]);

  await parent.setTotal(2);
  assert.notEqual(await parent.tryAcquirePermit(1), null);
  await parent.setTotal(1);
  cs = await parent.census();
  assert.deepEqual([cs.held, cs.available, cs.debt], [2, 0, 1]);
  assert.equal(cs.available + cs.held + cs.partial, cs.total + cs.debt);
  await parent.release(1);
  cs = await parent.census();
  assert.deepEqual([cs.available, cs.debt], [0, 0]);
  await parent.release(1);
  assert.equal((await conserved(parent)).available, 1);
  await assert.rejects(parent.setTotal(0), (e) => e instanceof RangeError);
  await parent.disconnect();
});

test('reopen() by another client undoes closeForEveryone(); connect() with another total needs resize: true', async () => {
  const name = 'reopen';
  const a = await Semaphore.connect(srv.url(), name, 1);
  const b = await Semaphore.connect(srv.url(), name, 1);
  await a.closeForEveryone();
  await assert.rejects(b.acquire(1), (e) => e.code === 'ERR_VOLT_CLOSED');
  await b.reopen();
  assert.equal((await a.census()).closed, false);
  await a.acquire(1);
  await a.release(1);
  await assert.rejects(Semaphore.connect(srv.url(), name, 3), (e) => e.code === 'ERR_VOLT_MISMATCH');
  await assert.rejects(Semaphore.connect(srv.url(), name, 3, { resize: 1 }), TypeError);
  const c = await Semaphore.connect(srv.url(), name, 3, { resize: true });
  const cs = await conserved(a);
  assert.deepEqual([cs.total, cs.available], [3, 3]);
  await Promise.all([a.disconnect(), b.disconnect(), c.disconnect()]);
});

test("a leaseSignal listener that releases another semaphore does not lose the outcomes drained with the loss", { skip: ownServer('SIGSTOP') }, async () => {
  // A lease loss is delivered by the same drain as the grants other threads
  // made meanwhile, through the thread's one outcome buffer. Its leaseSignal
  // listeners run then: one that releases a local semaphore with waiters (a
  // natural reaction to "stop using the resource") writes that release's
  // outcomes into the buffer. The grant drained after the loss must still be
  // delivered.
  const s = await RedisServer.start();
  try {
    const opts = { lease: 1500, commandTimeout: 500, connectTimeout: 500 };
    const sem = await Semaphore.connect(s.url(), 'lease-listener', 1, opts);
    await sem.acquirePermit(1);
    const local = new Semaphore(0);
    const mine = [local.acquire(1), local.acquire(1), local.acquire(1)];
    sem.leaseSignal.addEventListener('abort', () => local.release(3));
    const shared = new Semaphore(0);
    const granted = shared.acquire(1);
    const sab = new SharedArrayBuffer(8);
    const go = new Int32Array(sab);
    const rel = worker(
      `const L = volt.Semaphore.attach(workerData.id);
       const go = new Int32Array(workerData.sab);
       parentPort.postMessage('ready');
       Atomics.wait(go, 0, 0);
       L.release(1);
       Atomics.store(go, 1, 1);
       Atomics.notify(go, 1);`,
      { id: shared.share(), sab },
    );
    await nextMessage(rel, (m) => m === 'ready');
    s.signal('SIGSTOP');
    // Without returning to the event loop: wait until the session is lost
    // natively, then have the worker grant `granted`, so that one drain
    // carries the loss first and the grant after it.
    const end = Date.now() + 30_000;
    while (sem.stats().leaseLosses === 0 && Date.now() < end) Atomics.wait(go, 1, 0, 20);
    assert.ok(sem.stats().leaseLosses > 0, 'the session was lost');
    Atomics.store(go, 0, 1);
    Atomics.notify(go, 0);
    while (Atomics.load(go, 1) === 0) Atomics.wait(go, 1, 0, 1000);
    s.signal('SIGCONT');
    await Promise.all(mine);
    assert.equal(sem.isLeaseLost(), true);
    assert.equal(await settled(granted), true, "the other thread's grant was delivered");
    assert.equal(shared.heldPermits, 1);
    await exited(rel);
    await sem.disconnect();
  } finally {
    await s.close();
  }
});

test('a leaseSignal aborted by the grant of a lost session does not lose the outcomes drained after it', { skip: ownServer('SIGSTOP') }, async () => {
  // The first grant of a session watches it; a session already lost by then
  // aborts the leaseSignal at once, from inside the drain that delivered the
  // grant: a listener that releases a local semaphore with waiters must not
  // cost the grants drained after it (as with a lease loss itself).
  const s = await RedisServer.start();
  try {
    const opts = { lease: 1500, commandTimeout: 500, connectTimeout: 500 };
    const sem = await Semaphore.connect(s.url(), 'lease-first-grant', 1, opts);
    const shared = new Semaphore(0);
    const sab = new SharedArrayBuffer(16);
    const go = new Int32Array(sab);
    const w = worker(
      `(async () => {
         const r = await volt.Semaphore.connect(workerData.url, 'lease-first-grant', 1, { commandTimeout: 2000 });
         await r.acquire(1);
         const L = volt.Semaphore.attach(workerData.id);
         const go = new Int32Array(workerData.sab);
         parentPort.postMessage('held');
         Atomics.wait(go, 0, 0);
         r.release(1);
         Atomics.wait(go, 2, 0);
         L.release(1);
         Atomics.store(go, 1, 1);
         Atomics.notify(go, 1);
         await r.disconnect().catch(() => {});
       })();`,
      { url: s.url(), id: shared.share(), sab },
    );
    await nextMessage(w, (m) => m === 'held');
    const waiting = sem.acquire(1);
    await eventually('queued', () => sem.stats().queued === 1);
    const local = new Semaphore(0);
    const mine = [local.acquire(1), local.acquire(1), local.acquire(1)];
    sem.leaseSignal.addEventListener('abort', () => local.release(3));
    const granted = shared.acquire(1);
    // Without returning to the event loop: the worker's release grants
    // `waiting`, then its session is lost, then the worker grants `granted`.
    Atomics.store(go, 0, 1);
    Atomics.notify(go, 0);
    let end = Date.now() + 30_000;
    while (sem.stats().queued !== 0 && Date.now() < end) Atomics.wait(go, 3, 0, 10);
    assert.equal(sem.stats().queued, 0, 'granted natively');
    s.signal('SIGSTOP');
    end = Date.now() + 30_000;
    while (sem.stats().leaseLosses === 0 && Date.now() < end) Atomics.wait(go, 3, 0, 20);
    assert.ok(sem.stats().leaseLosses > 0, 'the session was lost');
    Atomics.store(go, 2, 1);
    Atomics.notify(go, 2);
    while (Atomics.load(go, 1) === 0) Atomics.wait(go, 1, 0, 1000);
    s.signal('SIGCONT');
    await waiting.catch(() => {});
    assert.equal(await settled(granted), true, "the other thread's grant was delivered");
    await Promise.all(mine);
    await exited(w);
    await sem.disconnect();
  } finally {
    await s.close();
  }
});

test("runExclusive: fn's error or value wins over a release that a disconnect or a lost lease left with nothing to release", async () => {
  const name = `run-exclusive-end-${process.pid}`;
  const other = await Semaphore.connect(srv.url(), name, 1);
  try {
    // fn returns after its handle was disconnected: its value (the
    // disconnect gave the permit back). Before, ERR_VOLT_CLOSED.
    const a = await Semaphore.connect(srv.url(), name, 1);
    const value = await a.runExclusive(async () => {
      await a.disconnect();
      return 42;
    });
    assert.equal(value, 42);
    // fn throws after the disconnect: its own error, not ERR_VOLT_CLOSED.
    const b = await Semaphore.connect(srv.url(), name, 1);
    const boom = new Error('boom');
    await assert.rejects(
      b.runExclusive(async () => {
        await b.disconnect();
        throw boom;
      }),
      (e) => e === boom,
    );
    // A synchronous throw too.
    const c = await Semaphore.connect(srv.url(), name, 1);
    await assert.rejects(
      c.runExclusive(() => {
        c.disconnect();
        throw boom;
      }),
      (e) => e === boom,
    );
    // Nothing held, nothing lost.
    await eventually('every permit back', async () => (await other.census()).available === 1);
    const census = await conserved(other);
    assert.deepEqual([census.held, census.queued], [0, 0]);
  } finally {
    await other.disconnect();
  }
});

test("runExclusive: a lease lost while fn ran rejects with ERR_VOLT_LEASE_EXPIRED, unless fn's own error", { skip: ownServer('SIGSTOP') }, async () => {
  const s = await RedisServer.start();
  try {
    const other = await Semaphore.connect(s.url(), 'run-lease', 1);
    for (const throws of [false, true]) {
      const sem = await Semaphore.connect(s.url(), 'run-lease', 1, { lease: 1000, commandTimeout: 500 });
      const boom = new Error('boom');
      const run = sem.runExclusive(async () => {
        s.signal('SIGSTOP');
        try {
          await sem.leaseLost();
        } finally {
          s.signal('SIGCONT');
        }
        if (throws) throw boom;
        return 1;
      });
      if (throws) await assert.rejects(run, (e) => e === boom);
      else await assert.rejects(run, { code: 'ERR_VOLT_LEASE_EXPIRED' });
      await sem.disconnect();
    }
    await eventually('every permit back', async () => (await other.census()).available === 1);
    await conserved(other);
    await other.disconnect();
  } finally {
    await s.close();
  }
});

test('a tiny timeout with permits free is granted: the first answer decides, whatever the deadline', { skip: ownServer('SIGSTOP') }, async () => {
  // The server is stopped while the acquire's round trip is under way, so
  // its `timeout` timer (1 ns, 1 ms) fires before any answer can come: no
  // race. Before, the timer cancelled the request and it rejected with
  // ERR_VOLT_TIMED_OUT, as local and named semaphores never do when permits
  // are free.
  const s = await RedisServer.start();
  try {
    const sem = await Semaphore.connect(s.url(), 'tiny', 3, { commandTimeout: 5000 });
    for (const timeout of [1e-6, 1]) {
      s.signal('SIGSTOP');
      const p = sem.acquire(1, { timeout }).then(
        () => 'granted',
        (e) => e.code,
      );
      await sleep(50); // the timer fired meanwhile
      s.signal('SIGCONT');
      assert.equal(await p, 'granted', `timeout ${timeout} ms`);
    }
    await sem.release(2);
    // Weighted: 2 of the 3 free.
    s.signal('SIGSTOP');
    const w = sem.acquire(2, { timeout: 1e-6 }).then(() => 'granted', (e) => e.code);
    await sleep(50);
    s.signal('SIGCONT');
    assert.equal(await w, 'granted', 'weighted, 2 of 3 free');
    let c = await conserved(sem);
    assert.deepEqual([c.available, c.held, c.queued], [1, 2, 0]);
    await sem.release(2);
    assert.equal(sem.stats().timeouts, 0);
    // Without the stop too (loopback answers within the timer's 1 ms or
    // not: granted either way).
    for (let i = 0; i < 10; i++) {
      await sem.acquire(2, { timeout: 1e-6 });
      await sem.release(2);
    }
    c = await conserved(sem);
    assert.deepEqual([c.available, c.held, c.queued], [3, 0, 0]);
    await sem.disconnect();
  } finally {
    await s.close();
  }
});

test('a queued request with a tiny timeout still times out, its partial grant handed back', { skip: ownServer('SIGSTOP') }, async () => {
  const s = await RedisServer.start();
  try {
    const sem = await Semaphore.connect(s.url(), 'tiny-queued', 3);
    const other = await Semaphore.connect(s.url(), 'tiny-queued', 3);
    await other.acquire(2);
    for (let i = 0; i < 6; i++) {
      const stop = i % 2 === 0; // the answer ("queued") after the deadline
      if (stop) s.signal('SIGSTOP');
      const p = sem.acquire(3, { timeout: i < 4 ? 1e-6 : 1 }).then(
        () => 'granted',
        (e) => e.code,
      );
      if (stop) {
        await sleep(50);
        s.signal('SIGCONT');
      }
      assert.equal(await p, 'ERR_VOLT_TIMED_OUT', `call ${i}`);
      await eventually('its cancel applied', async () => (await other.census()).queued === 0);
      const c = await conserved(sem);
      assert.deepEqual([c.available, c.held, c.partial, c.queued], [1, 2, 0, 0], `call ${i}`);
    }
    const st = sem.stats();
    assert.deepEqual([st.timeouts, st.cancels, st.grants], [6, 6, 0]);
    await other.release(2);
    await other.census(); // after other's release
    const c = await conserved(sem);
    assert.deepEqual([c.available, c.queued], [3, 0]);
    await sem.disconnect();
    await other.disconnect();
  } finally {
    await s.close();
  }
});

test('a short timeout on a stopped server rejects with ERR_VOLT_TIMED_OUT before the command timeout', { skip: ownServer('SIGSTOP') }, async () => {
  // The other promise: the first answer is waited for past the `timeout`
  // only for its grace (250 ms here), then the request is cancelled (a grant
  // answered later is given back). Before, the wait lasted the whole command
  // timeout (6 s) and rejected with ERR_VOLT_CONNECTION_FAILED. The bound
  // checked is half the command timeout, far above the grace.
  const s = await RedisServer.start();
  try {
    const commandTimeout = 6000;
    const sem = await Semaphore.connect(s.url(), 'stopped-timeout', 1, { commandTimeout });
    for (const timeout of [1e-6, 300]) {
      s.signal('SIGSTOP');
      const started = Date.now();
      const p = sem.acquire(1, { timeout }).then(
        () => 'granted',
        (e) => e.code,
      );
      let timer;
      const early = await Promise.race([
        p.then((r) => [r, Date.now() - started]),
        new Promise((resolve) => {
          timer = setTimeout(() => resolve(undefined), commandTimeout / 2);
        }),
      ]);
      clearTimeout(timer);
      s.signal('SIGCONT');
      const late = await p;
      assert.ok(early !== undefined, `timeout ${timeout} ms: settled only after ${Date.now() - started} ms: ${late}`);
      assert.equal(early[0], 'ERR_VOLT_TIMED_OUT', `timeout ${timeout} ms`);
      await eventually('the permit back', async () => {
        const c = await sem.census();
        return c.available === 1 && c.queued === 0;
      });
      await conserved(sem);
    }
    assert.equal(sem.stats().timeouts, 2);
    await sem.disconnect();
  } finally {
    await s.close();
  }
});
