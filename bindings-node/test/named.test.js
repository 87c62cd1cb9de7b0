'use strict';
// Semaphore.open(): one limit shared by processes (Linux). Real processes
// (child_process.fork of test/named-child.js), real SIGKILLs, a worker thread;
// every test unlinks the names it made. Elsewhere than Linux (named
// semaphores are Linux-only, docs/platforms.md) its tests skip with the
// reason, but the first: there, it asserts the typed unsupported error.
const nodeTest = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { fork, spawn, execFileSync } = require('node:child_process');
const { Semaphore, MAX_PERMITS } = require('..');
const { PKG, NAMED_SKIP, worker, nextMessage, exited } = require('./helpers');

const test = NAMED_SKIP ? Object.assign((name) => nodeTest(name, { skip: NAMED_SKIP }, () => {}), nodeTest) : nodeTest;

// Run on every platform: where it is documented unsupported, Semaphore.open
// and unlink throw the typed error (not a crash, nothing created).
nodeTest('Semaphore.open works on Linux; elsewhere open and unlink throw ERR_VOLT_UNSUPPORTED, naming the call', async () => {
  const name = `node-test-${process.pid}-platform`;
  if (process.platform === 'linux') {
    const sem = Semaphore.open(name, 1, { createOnly: true });
    try {
      assert.equal(sem.tryAcquire(1), true);
      sem.release(1);
      await sem.disconnect();
    } finally {
      Semaphore.unlink(name);
    }
    return;
  }
  const unsupported = (call) => (e) => {
    assert.ok(e instanceof Error, String(e));
    assert.equal(e.code, 'ERR_VOLT_UNSUPPORTED', e.message);
    assert.ok(e.message.includes(`Semaphore.${call}(${JSON.stringify(name)}`), e.message);
    assert.match(e.message, /not supported on this platform/);
    return true;
  };
  assert.throws(() => Semaphore.open(name, 1), unsupported('open'));
  assert.throws(() => Semaphore.open(name, 1, { attachOnly: true }), unsupported('open'));
  assert.throws(() => Semaphore.unlink(name), unsupported('unlink'));
});

const CHILD = path.join(__dirname, 'named-child.js');
const T = { timeout: 60_000 };

let seq = 0;
const made = new Set();
/** A fresh name for this test run (unlinked at the end). */
function fresh(tag) {
  const name = `node-test-${process.pid}-${tag}-${seq++}`;
  made.add(name);
  return name;
}
test.after(() => {
  for (const name of made) {
    try {
      Semaphore.unlink(name);
    } catch (e) {
      if (e.code !== 'ERR_VOLT_NOT_FOUND') throw e;
    }
  }
});

/** A forked child with a message log and `next(pred)`, `call(op)`. */
function child(options = {}) {
  const c = fork(CHILD, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], ...options });
  c.log = [];
  c.waiters = [];
  c.ids = 0;
  c.on('message', (m) => {
    c.log.push(m);
    c.waiters = c.waiters.filter((w) => !(w.pred(m) && (w.resolve(m), true)));
  });
  c.gone = new Promise((resolve) => c.once('exit', (code, signal) => resolve({ code, signal })));
  c.gone.then((how) => {
    for (const w of c.waiters) w.reject(new Error(`child exited (${JSON.stringify(how)}) before ${w.what}`));
    c.waiters = [];
  });
  c.next = (pred, what = 'the expected message') => {
    const seen = c.log.find(pred);
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise((resolve, reject) => c.waiters.push({ pred, resolve, reject, what }));
  };
  /** Sends a command; resolves with its first reply (`ev` given: that event). */
  c.call = (m, ev) => {
    const id = ++c.ids;
    c.send({ ...m, id });
    return c.next((r) => r.id === id && (ev === undefined || r.ev === ev || r.ev === 'error'), `${m.op} #${id}`);
  };
  c.open = async (name, total, opts) => {
    c.send({ op: 'open', name, total, options: opts });
    const r = await c.next((m) => m.ev === 'opened' || m.ev === 'error', 'opened');
    if (r.ev === 'error') throw Object.assign(new Error(r.message), { code: r.code });
    return r;
  };
  c.kill9 = async () => {
    c.kill('SIGKILL');
    return c.gone;
  };
  return c;
}

async function quit(c) {
  if (c.exitCode === null && c.signalCode === null) c.send({ op: 'exit' });
  await c.gone;
}

function code(c) {
  return (e) => e.code === c;
}

// ---------------------------------------------------------------- open, unlink

test('open() creates, a second open() attaches to the same permits, unlink() removes the name', T, () => {
  const name = fresh('basic');
  const a = Semaphore.open(name, 3);
  const b = Semaphore.open(name, 3, { attachOnly: true });
  assert.equal(a.name, name);
  assert.equal(a.totalPermits, 3);
  assert.equal(new Semaphore(3).name, null);
  assert.equal(new Semaphore(3).totalPermits, null);
  assert.equal(a.tryAcquire(2), true);
  assert.equal(b.availablePermits, 1);
  // One process, one record: permits taken through one object may be
  // released through another; heldPermits is the process's.
  assert.equal(b.heldPermits, 2);
  b.release(2);
  assert.equal(a.availablePermits, 3);
  assert.equal(a.heldPermits, 0);
  assert.throws(() => Semaphore.open(name, 3, { createOnly: true }), code('ERR_VOLT_EXISTS'));
  Semaphore.unlink(name);
  assert.throws(() => Semaphore.unlink(name), code('ERR_VOLT_NOT_FOUND'));
  assert.throws(() => Semaphore.open(name, 3, { attachOnly: true }), code('ERR_VOLT_NOT_FOUND'));
  // The objects opened before unlink() keep working on the old semaphore;
  // the next open() makes a new one.
  assert.equal(a.tryAcquire(3), true);
  const c = Semaphore.open(name, 5, { createOnly: true });
  assert.equal(c.availablePermits, 5);
  assert.equal(b.availablePermits, 0);
  a.release(3);
  assert.equal(b.availablePermits, 3);
});

test('open() of an existing name with another total throws ERR_VOLT_MISMATCH and changes nothing', T, () => {
  const name = fresh('mismatch');
  const a = Semaphore.open(name, 4);
  assert.equal(a.tryAcquire(1), true);
  assert.throws(
    () => Semaphore.open(name, 5),
    (e) => e instanceof Error && e.code === 'ERR_VOLT_MISMATCH' && e.existing === 4 && /4 permits/.test(e.message),
  );
  assert.equal(a.availablePermits, 3);
  a.release(1);
  assert.equal(Semaphore.open(name, 4).availablePermits, 4);
});

test('bad input: names, permits and options get typed errors, nothing is created', T, () => {
  const long = 'x'.repeat(300);
  // A lone surrogate has no UTF-8 form: converted, it would become U+FFFD,
  // and two different names would reach one semaphore.
  for (const bad of ['', 'a/b', '/abs', 'nul\0byte', long, '\ud800', 'a\udc00b']) {
    assert.throws(() => Semaphore.open(bad, 1), code('ERR_VOLT_INVALID_NAME'), JSON.stringify(bad));
    assert.throws(() => Semaphore.unlink(bad), code('ERR_VOLT_INVALID_NAME'), JSON.stringify(bad));
  }
  for (const bad of [undefined, null, 42, {}, Symbol('s')]) {
    assert.throws(() => Semaphore.open(bad, 1), (e) => e instanceof TypeError && e.code === 'ERR_INVALID_ARG_TYPE');
    assert.throws(() => Semaphore.unlink(bad), (e) => e instanceof TypeError && e.code === 'ERR_INVALID_ARG_TYPE');
  }
  const name = fresh('bad');
  for (const bad of [0, -1, 1.5, NaN, MAX_PERMITS + 1]) {
    assert.throws(() => Semaphore.open(name, bad), (e) => e instanceof RangeError && e.code === 'ERR_OUT_OF_RANGE', String(bad));
  }
  // Not a number at all: a TypeError, as for acquire('2') (issue 27).
  for (const bad of ['3', undefined]) {
    assert.throws(() => Semaphore.open(name, bad), (e) => e instanceof TypeError && e.code === 'ERR_INVALID_ARG_TYPE', String(bad));
  }
  assert.throws(() => Semaphore.open(name, 1, { createOnly: true, attachOnly: true }), TypeError);
  assert.throws(() => Semaphore.open(name, 1, { createOnly: 'yes' }), TypeError);
  assert.throws(() => Semaphore.open(name, 1, 'x'), TypeError);
  assert.throws(() => Semaphore.open(name, 1, { mode: 0o1000 }), RangeError);
  assert.throws(() => Semaphore.open(name, 1, { mode: -1 }), RangeError);
  // None of these created the name.
  assert.throws(() => Semaphore.unlink(name), code('ERR_VOLT_NOT_FOUND'));
  // The longest valid name works.
  const longest = `n${process.pid}-`.padEnd(246, 'y');
  made.add(longest);
  Semaphore.open(longest, 1);
  assert.throws(() => Semaphore.open(`${longest}z`, 1), code('ERR_VOLT_INVALID_NAME'));
});

test('version skew: a segment of another layout version, or whose lock is another C library\'s, is refused (both named) and left alone', T, () => {
  const name = fresh('skew');
  const file = `/dev/shm/volt-sem.${name}`;
  Semaphore.open(name, 2); // a real segment of this build
  const seg = fs.readFileSync(file);
  const layout = seg.readUInt32LE(8);
  const ours = seg.readUInt32LE(12); // the lock's C library: 1 glibc, 2 musl
  assert.ok(ours === 1 || ours === 2, `lock ABI ${ours}`);
  Semaphore.unlink(name);
  const other = Buffer.from(seg);
  other.writeUInt32LE(99, 8);
  fs.writeFileSync(file, other, { mode: 0o600 });
  assert.throws(() => Semaphore.open(name, 2), {
    code: 'ERR_VOLT_VERSION_MISMATCH',
    found: 99,
    expected: layout,
    message: new RegExp(`version 99; this release's: ${layout}`),
  });
  assert.deepEqual(fs.readFileSync(file), other);
  Semaphore.unlink(name);
  const otherLibc = Buffer.from(seg);
  otherLibc.writeUInt32LE(3 - ours, 12);
  fs.writeFileSync(file, otherLibc, { mode: 0o600 });
  assert.throws(() => Semaphore.open(name, 2), {
    code: 'ERR_VOLT_LIBC_MISMATCH',
    found: 3 - ours,
    expected: ours,
    message: /glibc.*musl|musl.*glibc/,
  });
  assert.deepEqual(fs.readFileSync(file), otherLibc);
  Semaphore.unlink(name);
});

test('a file under the name that is not a volt-sem segment is refused and left alone', T, () => {
  const name = fresh('foreign');
  const file = `/dev/shm/volt-sem.${name}`;
  for (const content of [Buffer.from('not a semaphore at all, just text'.repeat(100)), Buffer.alloc(0x10000, 0xab), Buffer.from('VOLTSHM')]) {
    fs.writeFileSync(file, content, { mode: 0o600 });
    assert.throws(() => Semaphore.open(name, 2), code('ERR_VOLT_NOT_A_SEGMENT'));
    assert.deepEqual(fs.readFileSync(file), content);
  }
  Semaphore.unlink(name);
});

test('mode and owner: a segment of another user is refused with ERR_VOLT_PERMISSION unless accepted', T, async (t) => {
  const name = fresh('perm');
  if (process.getuid() === 0) {
    // As root every open succeeds: the other user is `nobody`, who must not
    // open an owner-only (0600) segment, but may open a 0666 one.
    try {
      execFileSync(process.execPath, ['-e', `require(${JSON.stringify(PKG)})`], { uid: 65534, gid: 65534, stdio: 'pipe' });
    } catch {
      t.skip('user nobody cannot load the addon from this checkout');
      return;
    }
    Semaphore.open(name, 2);
    const open = (n, options = {}) =>
      execFileSync(
        process.execPath,
        ['-e', `try { require(${JSON.stringify(PKG)}).Semaphore.open(${JSON.stringify(n)}, 2, ${JSON.stringify(options)}); console.log('ok') } catch (e) { console.log(e.code) }`],
        { uid: 65534, gid: 65534, encoding: 'utf8' },
      ).trim();
    assert.equal(open(name), 'ERR_VOLT_PERMISSION');
    // Issue 26, item 10: a segment another user owns (here root's, mode 0666,
    // as a squatter would leave it) is refused unless the opener accepts it.
    const shared = fresh('perm-shared');
    Semaphore.open(shared, 2, { mode: 0o666 });
    assert.equal(open(shared), 'ERR_VOLT_PERMISSION');
    assert.equal(open(shared, { attachOnly: true }), 'ERR_VOLT_PERMISSION');
    assert.equal(open(shared, { acceptForeignOwner: true }), 'ok');
  } else {
    Semaphore.open(name, 2, { mode: 0o000 });
    assert.throws(() => Semaphore.open(name, 2), code('ERR_VOLT_PERMISSION'));
  }
});

// ---------------------------------------------------------------- the methods

test('a named semaphore has the methods of a local one', T, async () => {
  const s = Semaphore.open(fresh('methods'), 4);
  await s.acquire(); // n = 1
  await s.acquire(2);
  assert.equal(s.availablePermits, 1);
  assert.equal(s.isLocked(), false);
  assert.equal(s.tryAcquire(2), false);
  assert.equal(s.tryAcquire(1), true);
  assert.equal(s.isLocked(), true);
  assert.equal(s.heldPermits, 4);
  const later = s.acquire(3);
  assert.equal(s.pendingCount, 1);
  s.release(4);
  await later;
  assert.equal(s.availablePermits, 1);
  s.release(3);

  const release = await s.acquirePermit(2);
  assert.equal(release.permits, 2);
  release();
  release(); // once only
  assert.equal(s.availablePermits, 4);
  assert.equal(await s.runExclusive(async () => s.availablePermits, 3), 1);
  assert.equal(s.availablePermits, 4);
  await s.waitForUnlock(4);
  assert.equal(s.availablePermits, 4);

  // A request above the total could never be granted: refused at once.
  await assert.rejects(s.acquire(5), (e) => e instanceof RangeError);
  assert.throws(() => s.tryAcquire(5), RangeError);
  // The total is fixed; a process releases only what it holds.
  assert.throws(() => s.addPermits(1), code('ERR_VOLT_UNSUPPORTED'));
  assert.throws(() => s.removePermits(1), code('ERR_VOLT_UNSUPPORTED'));
  assert.throws(() => s.release(1), (e) => e.code === 'ERR_VOLT_NOT_HELD' && e.held === 0);
  assert.equal(s.availablePermits, 4);
});

test('AbortSignal and cancel(): a partial grant of an aborted request goes to the next in line', T, async () => {
  const s = Semaphore.open(fresh('abort'), 3);
  assert.equal(s.tryAcquire(3), true);
  const ac = new AbortController();
  const big = s.acquire(3, { signal: ac.signal });
  const small = s.acquire(2);
  s.release(2); // big holds 2 of its 3; small waits behind it
  assert.equal(s.availablePermits, 0);
  ac.abort(new Error('stop'));
  await assert.rejects(big, /stop/);
  await small; // got the 2 that big gave back
  assert.equal(s.availablePermits, 0);
  await assert.rejects(s.acquire(1, { signal: AbortSignal.abort() }), (e) => e.name === 'AbortError');
  const timed = s.acquire(1, { signal: AbortSignal.timeout(20) });
  await assert.rejects(timed, (e) => e.name === 'TimeoutError');
  const c1 = s.acquire(2);
  const c2 = s.acquire(1);
  assert.equal(s.cancel(), 2);
  await assert.rejects(c1, code('ERR_VOLT_CANCELLED'));
  await assert.rejects(c2, code('ERR_VOLT_CANCELLED'));
  s.release(3);
  assert.equal(s.availablePermits, 3);
  assert.equal(s.heldPermits, 0);
});

test('the waiter queue is bounded: the request past the last slot gets ERR_VOLT_QUEUE_FULL, FIFO intact', T, async () => {
  const s = Semaphore.open(fresh('full'), 1);
  assert.equal(s.tryAcquire(1), true);
  const waiting = [];
  let full;
  for (let i = 0; i < 5000; i++) {
    const p = s.acquire(1);
    let rejected;
    p.catch((e) => {
      rejected = e;
    });
    await null;
    await null;
    if (rejected !== undefined) {
      full = rejected;
      break;
    }
    waiting.push(p);
  }
  assert.equal(full?.code, 'ERR_VOLT_QUEUE_FULL');
  assert.ok(waiting.length >= 1, 'some requests were queued');
  // Everyone queued is served in order; nothing was lost.
  const order = [];
  waiting.forEach((p, i) => p.then(() => order.push(i)));
  for (let i = 0; i < waiting.length; i++) {
    s.release(1);
    await waiting[i];
  }
  assert.deepEqual(order, waiting.map((_, i) => i));
  s.release(1);
  assert.equal(s.availablePermits, 1);
});

test('closeForEveryone() in one process rejects the waiters of another, and later acquires', T, async () => {
  const name = fresh('close');
  const s = Semaphore.open(name, 2);
  assert.equal(s.tryAcquire(2), true);
  const c = child();
  try {
    await c.open(name, 2);
    const r = c.call({ op: 'acquire', n: 1 }, 'error');
    await c.next((m) => m.ev === 'queued');
    s.closeForEveryone();
    assert.equal((await r).code, 'ERR_VOLT_CLOSED');
    assert.equal(s.closed, true);
    await assert.rejects(s.acquire(1), code('ERR_VOLT_CLOSED'));
    assert.throws(() => s.tryAcquire(1), code('ERR_VOLT_CLOSED'));
    s.release(2); // releasing still works after close
    assert.equal((await c.call({ op: 'state' })).closed, true);
  } finally {
    await quit(c);
  }
});

// ---------------------------------------------------------------- processes

test('FIFO across processes: a queued acquire(3) in A is not overtaken by a later acquire(1) in B', T, async () => {
  const name = fresh('fifo');
  const s = Semaphore.open(name, 3);
  assert.equal(s.tryAcquire(3), true);
  const a = child();
  const b = child();
  try {
    await Promise.all([a.open(name, 3), b.open(name, 3)]);
    a.send({ op: 'acquire', n: 3, id: 'a3' });
    await a.next((m) => m.ev === 'queued');
    b.send({ op: 'acquire', n: 1, id: 'b1' });
    await b.next((m) => m.ev === 'queued');
    const grants = [];
    a.next((m) => m.ev === 'granted').then(() => grants.push('A'));
    b.next((m) => m.ev === 'granted').then(() => grants.push('B'));
    // One permit at a time: each goes to A (the head), none to B; if B took
    // one, A could never reach 3 while B holds it, and this test would time out.
    s.release(1);
    assert.equal(s.availablePermits, 0);
    s.release(2);
    await a.next((m) => m.ev === 'granted');
    assert.deepEqual(grants, ['A']);
    assert.equal(s.availablePermits, 0);
    // A hands its permits back: B is served, the rest is available.
    await a.call({ op: 'release', n: 3 });
    await b.next((m) => m.ev === 'granted');
    assert.deepEqual(grants, ['A', 'B']);
    assert.equal(s.availablePermits, 2);
    await b.call({ op: 'release', n: 1 });
    assert.equal(s.availablePermits, 3);
  } finally {
    await Promise.all([quit(a), quit(b)]);
  }
});

test('past the JS fast path threshold, a named semaphore still sees every process (it always goes native)', T, async () => {
  const name = fresh('native');
  const s = Semaphore.open(name, 2);
  // A local Semaphore switches to Atomics on its own state word after 16
  // operations; a named one's state is in the segment.
  for (let i = 0; i < 50; i++) {
    assert.equal(s.tryAcquire(1), true);
    s.release(1);
    await s.acquire(2);
    s.release(2);
  }
  const c = child();
  try {
    await c.open(name, 2);
    assert.equal((await c.call({ op: 'tryAcquire', n: 2 })).ok, true);
    assert.equal(s.availablePermits, 0);
    assert.equal(s.tryAcquire(1), false);
    const mine = s.acquire(1);
    await c.call({ op: 'release', n: 2 });
    await mine;
    assert.equal(s.availablePermits, 1);
    s.release(1);
    assert.equal(s.availablePermits, 2);
  } finally {
    await quit(c);
  }
});

test('a holder killed with SIGKILL gives its permits back to the waiter of another process', T, async () => {
  const name = fresh('kill-holder');
  const s = Semaphore.open(name, 2);
  const c = child();
  await c.open(name, 2);
  assert.equal((await c.call({ op: 'tryAcquire', n: 2 })).ok, true);
  assert.equal(s.availablePermits, 0);
  const mine = s.acquire(2); // queued: its process's sweep finds the dead holder
  const how = await c.kill9();
  assert.equal(how.signal, 'SIGKILL');
  await mine;
  assert.equal(s.heldPermits, 2);
  s.release(2);
  assert.equal(s.availablePermits, 2);
});

test('inspect() shows a holder of another process under its label; killed with SIGKILL, it is gone', T, async () => {
  const name = fresh('label');
  const s = Semaphore.open(name, 2);
  const c = child();
  try {
    await c.open(name, 2, { attachOnly: true, label: 'node-child-holder' });
    assert.equal((await c.call({ op: 'tryAcquire', n: 2 })).ok, true);
    const mine = s.acquire(1); // queued in the segment by the time acquire() returns
    let i = await s.inspect();
    assert.deepEqual([i.total, i.available, i.closed], [2, 0, false]);
    assert.equal(i.holders.length, 1);
    const [h] = i.holders;
    assert.deepEqual([h.label, h.pid, h.permits], ['node-child-holder', c.pid, 2]);
    assert.ok(typeof h.heldFor === 'number' && h.heldFor >= 0, `heldFor ${h.heldFor}`);
    assert.deepEqual([h.leaseRemaining, h.token], [null, null]);
    assert.equal(i.waiters.length, 1);
    const [w] = i.waiters;
    assert.deepEqual([w.position, w.permits, w.granted, w.pid], [0, 1, 0, process.pid]);
    assert.equal(w.label, `${w.host}:${process.pid}`); // the default label
    assert.equal(w.host, h.host);
    await c.kill9();
    // inspect() reclaims what the dead process held (it reaches our request).
    i = await s.inspect();
    assert.ok(i.holders.every((x) => x.pid !== c.pid && x.label !== 'node-child-holder'), JSON.stringify(i.holders));
    await mine;
    s.release(1);
    assert.equal(s.availablePermits, 2);
  } finally {
    await quit(c);
  }
});

test('open() refuses an invalid label with ERR_VOLT_INVALID_ARGUMENT (a non-string with a TypeError), creating nothing', T, () => {
  const name = fresh('bad-label');
  for (const label of ['has space', 'x'.repeat(200), '', 'caf\u00e9']) {
    assert.throws(
      () => Semaphore.open(name, 1, { label }),
      (e) => e instanceof Error && e.code === 'ERR_VOLT_INVALID_ARGUMENT' && /label/.test(e.message),
      JSON.stringify(label),
    );
    assert.throws(() => Semaphore.open(name, 1, { attachOnly: true }), code('ERR_VOLT_NOT_FOUND'));
  }
  assert.throws(() => Semaphore.open(name, 1, { label: 7 }), (e) => e instanceof TypeError);
  assert.throws(() => Semaphore.open(name, 1, { attachOnly: true }), code('ERR_VOLT_NOT_FOUND'));
  const ok = Semaphore.open(name, 1, { label: null }); // null: the default label
  assert.equal(ok.totalPermits, 1);
});

test('a waiter killed with SIGKILL, holding a partial grant, leaves no ghost and loses nothing', T, async () => {
  const name = fresh('kill-waiter');
  const s = Semaphore.open(name, 3);
  assert.equal(s.tryAcquire(3), true);
  const c = child();
  await c.open(name, 3);
  c.send({ op: 'acquire', n: 3, id: 'big' });
  await c.next((m) => m.ev === 'queued');
  s.release(2); // the child's request holds 2 of its 3
  assert.equal(s.availablePermits, 0);
  await c.kill9();
  // The next slow path (this acquire cannot be served at once) reclaims the
  // dead process: its partial grant and its place in the queue.
  await s.acquire(2);
  assert.equal(s.heldPermits, 3);
  s.release(3);
  assert.equal(s.availablePermits, 3);
  assert.equal(s.tryAcquire(3), true);
  s.release(3);
});

test('the main thread, a worker and another process share one limit', T, async () => {
  const name = fresh('three');
  const s = Semaphore.open(name, 2);
  const w = worker(
    `const s = volt.Semaphore.open(workerData, 2);
     parentPort.on('message', async (m) => {
       if (m === 'take') { await s.acquire(1); parentPort.postMessage('took'); }
       if (m === 'give') { s.release(1); parentPort.postMessage('gave'); }
       if (m === 'bye') { parentPort.close(); }
     });
     parentPort.postMessage('ready');`,
    name,
  );
  const c = child();
  try {
    await Promise.all([nextMessage(w, (m) => m === 'ready'), c.open(name, 2)]);
    await s.acquire(1);
    w.postMessage('take');
    await nextMessage(w, (m) => m === 'took');
    // Both permits are held (main, worker): the other process must wait.
    assert.equal((await c.call({ op: 'tryAcquire', n: 1 })).ok, false);
    c.send({ op: 'acquire', n: 2, id: 'c2' });
    await c.next((m) => m.ev === 'queued');
    s.release(1); // the child's request gets 1 of 2, still waiting
    assert.equal(s.availablePermits, 0);
    w.postMessage('give'); // the worker's release completes it
    await c.next((m) => m.ev === 'granted');
    assert.equal(s.availablePermits, 0);
    // Now main and the worker wait on the child: FIFO across all three.
    const order = [];
    const mainGot = s.acquire(1).then(() => order.push('main'));
    w.postMessage('take');
    await c.call({ op: 'release', n: 2 });
    await mainGot;
    await nextMessage(w, (m) => m === 'took' && w.messages.filter((x) => x === 'took').length === 2);
    assert.equal(s.availablePermits, 0);
    s.release(1);
    w.postMessage('give');
    await nextMessage(w, (m) => m === 'gave' && w.messages.filter((x) => x === 'gave').length === 2);
    assert.equal(s.availablePermits, 2);
  } finally {
    w.postMessage('bye');
    await exited(w);
    await quit(c);
  }
});

test('a worker terminated while queued or holding gives its permits back when its thread ends', T, async () => {
  const name = fresh('terminate');
  const s = Semaphore.open(name, 3);
  assert.equal(s.tryAcquire(2), true);
  const w = worker(
    `const s = volt.Semaphore.open(workerData, 3);
     s.acquire(3); // gets 1 now, waits for 2 more
     parentPort.postMessage('queued');`,
    name,
  );
  await nextMessage(w, (m) => m === 'queued');
  assert.equal(s.availablePermits, 0);
  await w.terminate();
  // Its request was cancelled at teardown: the partial grant came back.
  assert.equal(s.availablePermits, 1);
  s.release(2);
  assert.equal(s.availablePermits, 3);
});

test('a process exiting normally while holding permits gives them back', T, async () => {
  const name = fresh('exit');
  const s = Semaphore.open(name, 2);
  const c = child();
  await c.open(name, 2);
  assert.equal((await c.call({ op: 'tryAcquire', n: 2 })).ok, true);
  assert.equal(s.availablePermits, 0);
  await quit(c);
  await s.acquire(2);
  s.release(2);
  assert.equal(s.availablePermits, 2);
});

test('a waiter on a named semaphore keeps the process alive until it is served', T, async () => {
  const name = fresh('alive');
  const s = Semaphore.open(name, 1);
  assert.equal(s.tryAcquire(1), true);
  const script = `const { Semaphore } = require(${JSON.stringify(PKG)});
    const s = Semaphore.open(${JSON.stringify(name)}, 1);
    s.acquire(1).then(() => { s.release(1); console.log('served'); });
    console.log('waiting');`;
  const p = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  p.stdout.on('data', (d) => {
    out += d;
  });
  await new Promise((resolve) => {
    const check = () => (out.includes('waiting') ? resolve() : setTimeout(check, 5));
    check();
  });
  assert.equal(p.exitCode, null); // still running: its waiter keeps it alive
  s.release(1);
  const codeOut = await new Promise((resolve) => p.once('exit', resolve));
  assert.equal(codeOut, 0);
  assert.match(out, /served/);
  assert.equal(s.availablePermits, 1);
});

// ---------------------------------------------------------------- total

test('setTotal(): a growth alone serves the waiter of another process; a shrink rejects the queued acquire above it and revokes nothing', T, async () => {
  const name = fresh('total');
  const s = Semaphore.open(name, 1);
  assert.equal(s.tryAcquire(1), true);
  const c = child();
  try {
    await c.open(name, 1);
    const granted = c.call({ op: 'acquire', n: 1 }, 'granted');
    await c.next((m) => m.ev === 'queued');
    await s.setTotal(2); // no release: the growth is what serves the child
    assert.equal((await granted).ev, 'granted');
    assert.equal(s.totalPermits, 2);
    await c.call({ op: 'release', n: 1 });
    assert.equal(s.availablePermits, 1);
  } finally {
    await quit(c);
  }
  // acquire(2) takes the free permit as a partial grant; the shrink fails it.
  const big = s.acquire(2);
  const failed = assert.rejects(big, (e) => e instanceof RangeError && e.code === 'ERR_OUT_OF_RANGE');
  await s.setTotal(1); // it may reject before this resolves
  await failed;
  assert.equal(s.totalPermits, 1);
  assert.equal(s.availablePermits, 0); // ours stays held
  await s.setTotal(2);
  assert.equal(s.tryAcquire(1), true);
  await s.setTotal(1);
  s.release(1);
  assert.equal(s.availablePermits, 0); // that release paid the debt
  s.release(1);
  assert.equal(s.availablePermits, 1);
  await assert.rejects(s.setTotal(0), (e) => e instanceof RangeError);
  await assert.rejects(s.setTotal(1.5), (e) => e instanceof RangeError);
  await assert.rejects(s.setTotal('2'), (e) => e instanceof TypeError);
  assert.equal(s.totalPermits, 1);
});

test('reopen() undoes closeForEveryone(); open() with another total needs resize: true', T, async () => {
  const name = fresh('reopen');
  const s = Semaphore.open(name, 1);
  await s.reopen(); // not closed: nothing to do
  await s.closeForEveryone();
  assert.throws(() => s.tryAcquire(1), code('ERR_VOLT_CLOSED'));
  await s.reopen();
  assert.equal(s.closed, false);
  assert.equal(s.tryAcquire(1), true);
  s.release(1);
  assert.throws(() => Semaphore.open(name, 3), code('ERR_VOLT_MISMATCH'));
  assert.throws(() => Semaphore.open(name, 3, { resize: 'yes' }), TypeError);
  const other = Semaphore.open(name, 3, { attachOnly: true, resize: true });
  assert.equal(s.totalPermits, 3);
  assert.equal(other.totalPermits, 3);
  assert.equal(s.availablePermits, 3);
  const local = new Semaphore(1);
  assert.throws(() => local.setTotal(2), (e) => e.code === 'ERR_INVALID_STATE' && /named and Redis/.test(e.message));
  assert.throws(() => local.reopen(), (e) => e.code === 'ERR_INVALID_STATE');
});

test("runExclusive across a disconnect: fn's value or error, not the release's ERR_VOLT_CLOSED", T, async () => {
  const name = fresh('run-exclusive-end');
  const watcher = Semaphore.open(name, 2);
  const a = Semaphore.open(name, 2);
  // The disconnect gave the permits back: fn's value, nothing to release.
  assert.equal(
    await a.runExclusive(async () => {
      a.disconnect();
      return 'done';
    }, 2),
    'done',
  );
  const b = Semaphore.open(name, 2);
  const boom = new Error('boom');
  await assert.rejects(
    b.runExclusive(async () => {
      b.disconnect();
      throw boom;
    }),
    (e) => e === boom,
  );
  assert.equal(watcher.availablePermits, 2);
  watcher.disconnect();
});

// What the objects attach()ed from a named semaphore's object hold goes back
// with its disconnect(), so they are disconnected with it: a worker's copy
// cannot release those permits a second time (the old code let it: the
// process then gave back a permit another handle held, and the worker's
// acquires went on), and its queued acquire leaves with its partial grant.
test("disconnect() ends the objects attach()ed from it: their permits go back once", T, async () => {
  const name = fresh('disconnect-attached');
  const s = Semaphore.open(name, 4, { createOnly: true });
  const other = Semaphore.open(name, 4, { attachOnly: true });
  assert.equal(other.tryAcquire(2), true);
  const w = worker(
    `const s = volt.Semaphore.attach(workerData);
     const code = (f) => { try { f(); return 'ok'; } catch (e) { return e.code; } };
     s.tryAcquire(1);
     const queued = s.acquire(2).then(() => 'granted', (e) => e.code);
     parentPort.postMessage('ready');
     parentPort.once('message', async () => {
       const got = await queued;
       parentPort.postMessage([got, code(() => s.release(1)), code(() => s.tryAcquire(1))]);
       parentPort.close();
     });`,
    s.share(),
  );
  await nextMessage(w, (m) => m === 'ready');
  assert.equal(other.availablePermits, 0); // the worker's acquire(2) has 1 of 2
  await s.disconnect();
  w.postMessage('go');
  const [got, release, tryAcquire] = await nextMessage(w, Array.isArray);
  assert.equal(await exited(w), 0);
  assert.deepEqual([got, release, tryAcquire], ['ERR_VOLT_CLOSED', 'ERR_VOLT_CLOSED', 'ERR_VOLT_CLOSED']);
  // Only `other`'s 2 are held.
  assert.equal(other.availablePermits, 2);
  other.release(2);
  assert.equal(other.availablePermits, 4);
  await other.disconnect();
});
