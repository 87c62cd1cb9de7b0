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
