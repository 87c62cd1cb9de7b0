'use strict';
// D3: a private semaphore that nobody can reach any more, with acquires that
// nobody can serve, is garbage-collected with its waiters (their promises stay
// pending for ever, as with the pure-JS libraries), JS heap and native slots.
const test = require('node:test');
const assert = require('node:assert/strict');
const { execFile } = require('node:child_process');
const { PKG } = require('./helpers');

function runChild(script) {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['--expose-gc', '-e', script], { timeout: 240_000 }, (err, stdout, stderr) =>
      err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(JSON.parse(stdout)),
    );
  });
}

test('abandoned semaphores with queued acquires are collected (--expose-gc)', async () => {
  const ROUNDS = 50_000;
  const res = await runChild(`
    const { Semaphore } = require(${JSON.stringify(PKG)});
    const settle = async () => {
      for (let i = 0; i < 6; i++) { gc(); await new Promise((r) => setImmediate(r)); }
    };
    (async () => {
      // Warm up the slot pool and the heap before measuring.
      for (let i = 0; i < 2000; i++) { const s = new Semaphore(0); for (let j = 0; j < 5; j++) s.acquire(1); }
      await settle();
      const heap0 = process.memoryUsage().heapUsed;
      for (let i = 0; i < ${ROUNDS}; i++) {
        const s = new Semaphore(0);
        for (let j = 0; j < 5; j++) s.acquire(1).then(() => s.release(1));
        if (i % 5000 === 0) await new Promise((r) => setImmediate(r));
      }
      await settle();
      const heap1 = process.memoryUsage().heapUsed;
      // A waiter with a live signal keeps its semaphore; aborting it still works.
      const ac = new AbortController();
      const kept = new Semaphore(0).acquire(1, { signal: ac.signal }).catch((e) => e);
      await settle();
      ac.abort(new Error('aborted'));
      const aborted = (await kept).message;
      await settle();
      const stats = require(${JSON.stringify(PKG)} + '/binding.js').loadNative().stats();
      console.log(JSON.stringify({ growthMB: (heap1 - heap0) / 2 ** 20, aborted, stats }));
    })();`);
  assert.ok(res.growthMB < 8, `heap grew by ${res.growthMB.toFixed(1)} MB over ${ROUNDS} abandoned semaphores`);
  assert.equal(res.aborted, 'aborted');
  assert.ok(res.stats.active < 1000, `native slots still pending: ${JSON.stringify(res.stats)}`);
});

// A request on a private semaphore keeps a reference to it, and since the
// contended path's work on issue 30 a served request leaves that reference
// for the next one instead of dropping it (two locked instructions less per
// request): those spares must go with the semaphore's object, or every
// private semaphore that ever had a waiter would outlive its object.
test('a private semaphore whose queued acquires were served is freed with its object (--expose-gc)', async () => {
  const SEMS = 200;
  const res = await runChild(`
    const { Semaphore } = require(${JSON.stringify(PKG)});
    const native = require(${JSON.stringify(PKG)} + '/binding.js').loadNative();
    const settle = async () => {
      for (let i = 0; i < 6; i++) { gc(); await new Promise((r) => setImmediate(r)); }
    };
    const contend = async (s) => {
      const task = async () => {
        for (let i = 0; i < 4; i++) { await s.acquire(1); await null; s.release(1); }
      };
      const all = Promise.all([task(), task(), task(), task()]);
      const queued = s.stats().queued;
      await all;
      return queued;
    };
    (async () => {
      await settle();
      const before = native.stats().semaphores;
      let queued = 0;
      for (let i = 0; i < ${SEMS}; i++) {
        const s = new Semaphore(1);
        queued += await contend(s);
      }
      const during = native.stats().semaphores;
      await settle();
      const after = native.stats().semaphores;
      console.log(JSON.stringify({ before, during, after, queued }));
    })();`);
  assert.ok(res.queued >= SEMS, `too few acquires queued: ${JSON.stringify(res)}`);
  assert.ok(res.during > res.before, `the count does not see the semaphores: ${JSON.stringify(res)}`);
  assert.ok(res.after <= res.before + 5, `semaphores left alive after their objects were collected: ${JSON.stringify(res)}`);
});
