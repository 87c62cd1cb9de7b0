'use strict';
// sem.inspect(): who holds and who waits, in queue order (issue 29).
const test = require('node:test');
const assert = require('node:assert/strict');
const os = require('node:os');
const { Semaphore } = require('..');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const conserved = (i) =>
  i.available + i.holders.reduce((a, h) => a + h.permits, 0) + i.waiters.reduce((a, w) => a + w.granted, 0);

test('a local semaphore: its queue in order with partial grants, this process as holder', async () => {
  const s = new Semaphore(3);
  await s.acquire(2);
  const a = s.acquire(3); // takes the 1 left
  const b = s.acquire(1);
  await sleep(30);
  const i = await s.inspect();
  assert.equal(i.total, 3);
  assert.equal(i.available, 0);
  assert.equal(i.closed, false);
  assert.deepEqual(
    i.waiters.map((w) => [w.position, w.permits, w.granted]),
    [[0, 3, 1], [1, 1, 0]],
  );
  for (const w of i.waiters) {
    assert.equal(w.pid, process.pid);
    assert.equal(w.label, `${w.host}:${process.pid}`);
    assert.ok(w.waitingFor >= 0.025 && w.waitingFor < 5, `waitingFor ${w.waitingFor}`);
  }
  assert.equal(i.holders.length, 1);
  const [h] = i.holders;
  assert.deepEqual([h.permits, h.pid, h.heldFor, h.leaseRemaining, h.token], [2, process.pid, null, null, null]);
  // Host names are case-insensitive: on Windows the label's host is the
  // COMPUTERNAME variable (in capitals), os.hostname() the DNS host name.
  const [host, hostname] = [h.host.toLowerCase(), os.hostname().toLowerCase()];
  assert.ok(hostname.startsWith(host) || host.startsWith(hostname), `${h.host} vs ${os.hostname()}`);
  assert.equal(conserved(i), i.total);

  s.release(2); // completes a; b is now the head
  await a;
  const j = await s.inspect();
  assert.deepEqual(j.waiters.map((w) => [w.position, w.permits, w.granted]), [[0, 1, 0]]);
  assert.deepEqual([j.holders[0].permits, j.available, conserved(j)], [3, 0, 3]);
  s.release(3); // a's: 1 to b, 2 back
  await b;
  s.release(1);
  const k = await s.inspect();
  assert.deepEqual([k.total, k.available, k.holders.length, k.waiters.length], [3, 3, 0, 0]);
});

test('inspect() of a closed semaphore says so; many waiters keep their order', async () => {
  const s = new Semaphore(1);
  await s.acquire(1);
  const waits = [];
  for (let n = 0; n < 200; n++) waits.push(s.acquire(1 + (n % 2)).catch((e) => e.code));
  const i = await s.inspect();
  assert.equal(i.waiters.length, 200);
  i.waiters.forEach((w, k) => {
    assert.equal(w.position, k);
    assert.equal(w.permits, 1 + (k % 2));
  });
  s.close();
  assert.equal((await s.inspect()).closed, true);
  assert.deepEqual(new Set(await Promise.all(waits)), new Set(['ERR_VOLT_CLOSED']));
  assert.equal((await s.inspect()).waiters.length, 0);
});

test('inspect() and stats() of a local semaphore count what addPermits/removePermits changed as heldPermits does', async () => {
  // addPermits grows the total, removePermits shrinks it: every permit held
  // is a holder's (heldPermits), and none is a holder's when none is held.
  for (const warm of [false, true]) {
    const s = new Semaphore(2);
    if (warm) for (let i = 0; i < 20; i++) s.release(s.tryAcquire(1) ? 1 : 0); // the JS fast path's views
    s.addPermits(3);
    await s.acquire(5);
    let i = await s.inspect();
    assert.deepEqual([i.total, i.available, i.holders.map((h) => h.permits), conserved(i)], [5, 0, [5], 5]);
    assert.equal(s.stats().held, s.heldPermits);
    s.release(5);
    s.removePermits(1);
    i = await s.inspect();
    assert.deepEqual([i.total, i.available, i.holders.length, conserved(i)], [4, 4, 0, 4]);
    assert.deepEqual([s.stats().held, s.heldPermits], [0, 0]);
  }
});
