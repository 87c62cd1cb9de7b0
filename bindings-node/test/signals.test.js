'use strict';
// Shutdown by a real signal (issue 27): a Node process stopped with Ctrl-C or
// SIGTERM left its Redis session's permits held, and its queued request in
// the queue, until the lease expired (30 s here). With the one line
// `disconnectOnSignals()` its sessions end first: another client gets the
// permit long before the lease could expire, the queued request leaves, the
// named semaphore's permit goes back, and the process still ends by the
// signal (or, with a listener of the user's own, as that listener decides).
// A real redis-server, real processes, real signals.
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { spawn, execFile } = require('node:child_process');
const { Semaphore } = require('..');
const { RedisServer, sleep } = require('./redis-server.js');
const { PKG, NAMED_SKIP, POSIX_SIGNALS_SKIP } = require('./helpers');

const CHILD = path.join(__dirname, 'signal-child.js');
// Far below the child's 30 s lease: a grant within this bound came from its
// sessions ending, not from their leases expiring.
const BOUND_MS = 10_000;

let srv;
before(async () => {
  srv = await RedisServer.start();
});
after(async () => {
  await srv?.close();
});

let seq = 0;
const named = [];
after(() => {
  for (const n of named) {
    try {
      Semaphore.unlink(n);
    } catch {
      // unlinked already
    }
  }
});

/** Spawns the child; resolves once it printed 'ready', with its exit promise. */
function startChild(name, namedName, mode) {
  const c = spawn(process.execPath, [CHILD, srv.url(), name, namedName, mode], { stdio: ['ignore', 'pipe', 'inherit'] });
  c.exit = new Promise((resolve) => c.once('exit', (code, signal) => resolve({ code, signal })));
  let out = '';
  c.ready = new Promise((resolve, reject) => {
    c.stdout.on('data', (d) => {
      out += d;
      if (out.includes('ready')) resolve();
      else if (out.includes('failed')) reject(new Error(out));
    });
    c.exit.then((e) => reject(new Error(`child exited before ready: ${JSON.stringify(e)} ${out}`)));
  });
  return c;
}

/** Whether `p` settled within `ms`. */
async function settledWithin(p, ms) {
  let done = false;
  p.then(() => (done = true), () => (done = true));
  const end = Date.now() + ms;
  while (!done && Date.now() < end) await sleep(10);
  return done;
}

/** Whether another process can take the named semaphore's permit now. */
function namedFree(namedName) {
  const script = `const { Semaphore } = require(${JSON.stringify(PKG)});
const s = Semaphore.open(${JSON.stringify(namedName)}, 1, { attachOnly: true });
console.log(String(s.tryAcquire(1)));`;
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['-e', script], { timeout: 30_000 }, (err, stdout, stderr) =>
      err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout.trim() === 'true'),
    );
  });
}

async function shutdownCase(signal, mode) {
  const name = `signals-${process.pid}-${seq++}`;
  const namedName = `node-test-${process.pid}-signals-${seq++}`;
  named.push(namedName);
  const child = startChild(name, namedName, mode);
  await child.ready;
  const other = await Semaphore.connect(srv.url(), name, 1);
  try {
    const census = await other.census();
    assert.deepEqual([census.held, census.queued], [1, 1], 'the child holds the permit and waits for another');
    const mine = other.acquire(1);
    assert.equal(await settledWithin(mine, 300), false, 'not granted while the child holds the permit');
    assert.equal(await namedFree(namedName), false, "the child holds the named semaphore's permit");
    const sent = Date.now();
    child.kill(signal);
    // Causality: granted after the signal and well before the child's 30 s
    // lease could have expired (only its session ending can explain it).
    assert.equal(await settledWithin(mine, BOUND_MS), true, `not granted within ${BOUND_MS} ms of ${signal}`);
    await mine;
    const took = Date.now() - sent;
    const exit = await child.exit;
    const after = await other.census();
    assert.deepEqual([after.held, after.queued, after.sessions], [1, 0, 1], "the child's queued request left too");
    await other.release(1);
    return { exit, took, namedBack: await namedFree(namedName) };
  } finally {
    child.kill('SIGKILL');
    await other.disconnect();
    await Semaphore.deleteRedis(srv.url(), name).catch(() => {});
  }
}

for (const signal of ['SIGTERM', 'SIGINT']) {
  test(`disconnectOnSignals(): on ${signal} the sessions end, then the process ends by ${signal}`, { skip: POSIX_SIGNALS_SKIP || NAMED_SKIP }, async () => {
    const r = await shutdownCase(signal, 'line');
    assert.deepEqual(r.exit, { code: null, signal }, 'ended by the signal, as without the listener');
    assert.equal(r.namedBack, true, "the named semaphore's permit went back");
    console.log(`${signal}: the permit was granted to another client ${r.took} ms after the signal (lease 30000 ms)`);
  });
}

test('disconnectOnSignals() with a listener of the user: sessions end, the process is not killed', { skip: POSIX_SIGNALS_SKIP || NAMED_SKIP }, async () => {
  const r = await shutdownCase('SIGTERM', 'own');
  assert.deepEqual(r.exit, { code: 7, signal: null }, "the user's listener decided the exit");
  assert.equal(r.namedBack, true);
});

test('disconnectOnSignals() is idempotent, takes only { timeout }, and returns its remover', () => {
  const { disconnectOnSignals } = require('..');
  const before = process.listenerCount('SIGTERM');
  const remove = disconnectOnSignals();
  disconnectOnSignals({ timeout: 1000 });
  assert.equal(process.listenerCount('SIGTERM'), before + 1);
  assert.equal(process.listenerCount('SIGINT') >= 1, true);
  remove();
  assert.equal(process.listenerCount('SIGTERM'), before);
  assert.throws(() => disconnectOnSignals({ timout: 5 }), { code: 'ERR_INVALID_ARG_VALUE' });
  assert.equal(process.listenerCount('SIGTERM'), before);
});
