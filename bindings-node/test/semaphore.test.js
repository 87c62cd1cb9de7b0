'use strict';
// Single-thread semantics: counting, strict weighted FIFO, partial grants,
// AbortSignal, close, errors, runExclusive, Mutex and RwLock.
const test = require('node:test');
const assert = require('node:assert/strict');
const { getEventListeners } = require('node:events');
const { Semaphore, Mutex, RwLock, MAX_PERMITS } = require('..');

const tick = () => new Promise((r) => setImmediate(r));

// Records the order in which promises settle.
function track(order, label, p) {
  return p.then(
    () => order.push(label),
    (e) => order.push(`${label}!${e.code ?? e.message}`),
  );
}

test('counts permits: tryAcquire, acquire fast path, release, availablePermits', async () => {
  const s = new Semaphore(3);
  assert.equal(s.availablePermits, 3);
  assert.equal(s.tryAcquire(2), true);
  assert.equal(s.availablePermits, 1);
  assert.equal(s.tryAcquire(2), false);
  await s.acquire();
  assert.equal(s.availablePermits, 0);
  s.release(3);
  assert.equal(s.availablePermits, 3);
  assert.equal(s.tryAcquire(0), true);
  await s.acquire(0);
  assert.equal(s.availablePermits, 3);
  assert.equal(MAX_PERMITS, Number.MAX_SAFE_INTEGER);
  assert.equal(Semaphore.MAX_PERMITS, MAX_PERMITS);
});

test('strict FIFO with weights: a queued large request is never overtaken', async () => {
  const s = new Semaphore(2);
  await s.acquire(2);
  const order = [];
  const all = [
    track(order, 'a3', s.acquire(3)),
    track(order, 'b1', s.acquire(1)),
    track(order, 'c2', s.acquire(2)),
    track(order, 'd1', s.acquire(1)),
  ];
  s.release(1); // a3 has 1 of 3
  s.release(1); // a3 has 2 of 3
  await tick();
  assert.deepEqual(order, []);
  assert.equal(s.availablePermits, 0, 'partial grants stay at the head');
  assert.equal(s.tryAcquire(1), false, 'tryAcquire cannot barge past the queue');
  s.release(2); // a3 complete, b1 complete
  await tick();
  assert.deepEqual(order, ['a3', 'b1']);
  s.release(1); // c2 has 1 of 2; d1 must not overtake
  await tick();
  assert.deepEqual(order, ['a3', 'b1']);
  s.release(2); // c2 complete, d1 complete
  await Promise.all(all);
  assert.deepEqual(order, ['a3', 'b1', 'c2', 'd1']);
  assert.equal(s.availablePermits, 0);
  s.release(7);
  assert.equal(s.availablePermits, 7);
});

test('waiters of this thread are settled inside release()', async () => {
  const s = new Semaphore(0);
  let done = false;
  const p = s.acquire(1).then(() => {
    done = true;
  });
  s.release(1);
  assert.equal(s.availablePermits, 0, 'handed over directly, not via the counter');
  await p;
  assert.equal(done, true);
});

test('an aborted waiter rejects with signal.reason and hands its partial grant on', async () => {
  const s = new Semaphore(0);
  const ac = new AbortController();
  const order = [];
  const a = track(order, 'a', s.acquire(3, { signal: ac.signal }));
  const b = track(order, 'b', s.acquire(2));
  s.release(2); // a holds a partial grant of 2
  await tick();
  assert.deepEqual(order, []);
  assert.equal(s.availablePermits, 0);
  const reason = new Error('stop');
  ac.abort(reason);
  await Promise.all([a, b]);
  assert.deepEqual(order, ['a!stop', 'b']);
  assert.equal(s.availablePermits, 0, 'the 2 permits went to b');
  await assert.rejects(s.acquire(1, { signal: ac.signal }), (e) => e === reason);
});

test('an already-aborted signal rejects at once, without queueing', async () => {
  const s = new Semaphore(5);
  const ac = new AbortController();
  ac.abort();
  await assert.rejects(s.acquire(1, { signal: ac.signal }), (e) => e === ac.signal.reason);
  assert.equal(s.availablePermits, 5, 'nothing taken even though permits were free');
  await assert.rejects(s.runExclusive(() => 1, 1, { signal: AbortSignal.abort('why') }), (e) => e === 'why');
});

test('the abort listener is removed once the request is granted', async () => {
  const s = new Semaphore(0);
  const ac = new AbortController();
  const p = s.acquire(2, { signal: ac.signal });
  assert.equal(getEventListeners(ac.signal, 'abort').length, 1);
  s.release(2);
  await p;
  assert.equal(getEventListeners(ac.signal, 'abort').length, 0);
  ac.abort(); // too late: nothing changes
  assert.equal(s.availablePermits, 0);
  s.release(2);
  assert.equal(s.availablePermits, 2);
  // The fast path never adds a listener.
  await s.acquire(1, { signal: ac.signal }).catch(() => {});
  const ac2 = new AbortController();
  await s.acquire(1, { signal: ac2.signal });
  assert.equal(getEventListeners(ac2.signal, 'abort').length, 0);
});

test('one abort rejects every acquire queued on its signal, even those a partial grant it frees could complete', async () => {
  // a (head, partial grant of 2), b (no signal), c: all on one semaphore; a and
  // c wait on the signal. The abort must reject c too, not hand it a's permits.
  const s = new Semaphore(0);
  const ac = new AbortController();
  const order = [];
  const all = [
    track(order, 'a', s.acquire(3, { signal: ac.signal })),
    track(order, 'b', s.acquire(1)),
    track(order, 'c', s.acquire(1, { signal: ac.signal })),
    track(order, 'd', s.acquire(1, { signal: ac.signal })),
  ];
  s.release(2); // a holds a partial grant of 2
  ac.abort(new Error('stop'));
  await Promise.all(all);
  assert.deepEqual(order, ['a!stop', 'c!stop', 'd!stop', 'b']);
  assert.equal(s.heldPermits, 1, 'only b holds');
  assert.equal(s.availablePermits, 1, "a's partial grant: 1 to b, 1 back");
  assert.equal(s.pendingCount, 0);
});

test('aborting the head completes several waiters behind it', async () => {
  const s = new Semaphore(0);
  const ac = new AbortController();
  const order = [];
  const all = [
    track(order, 'big', s.acquire(10, { signal: ac.signal })),
    track(order, 'x1', s.acquire(1)),
    track(order, 'y2', s.acquire(2)),
    track(order, 'z4', s.acquire(4)),
  ];
  s.release(4);
  ac.abort(new Error('gone')); // 4 permits handed on: x1 and y2 complete, z4 gets 1
  await tick();
  assert.deepEqual(order, ['big!gone', 'x1', 'y2']);
  s.release(3);
  await Promise.all(all);
  assert.deepEqual(order, ['big!gone', 'x1', 'y2', 'z4']);
  assert.equal(s.availablePermits, 0);
});

test('close rejects pending and new acquires with ERR_VOLT_CLOSED; release still works', async () => {
  const s = new Semaphore(1);
  await s.acquire(1);
  const pending = s.acquire(2);
  s.release(1); // partial grant to the pending one
  assert.equal(s.closed, false);
  s.close();
  assert.equal(s.closed, true);
  await assert.rejects(pending, (e) => e instanceof Error && e.code === 'ERR_VOLT_CLOSED');
  await assert.rejects(s.acquire(1), { code: 'ERR_VOLT_CLOSED' });
  assert.throws(() => s.tryAcquire(1), { code: 'ERR_VOLT_CLOSED' });
  assert.equal(s.availablePermits, 1, 'the partial grant was banked');
  s.release(1);
  assert.equal(s.availablePermits, 2);
  s.close(); // idempotent
});

test('bad counts throw RangeError (TypeError if not numbers); a release past the maximum throws RangeError', async () => {
  for (const bad of ['1', null, 1n]) {
    assert.throws(() => new Semaphore(bad), TypeError, `new Semaphore(${bad})`);
    const s = new Semaphore(1);
    await assert.rejects(s.acquire(bad), TypeError, `acquire(${bad})`);
    assert.throws(() => s.tryAcquire(bad), TypeError, `tryAcquire(${bad})`);
    assert.throws(() => s.release(bad), TypeError, `release(${bad})`);
    assert.equal(s.availablePermits, 1);
  }
  for (const bad of [-1, 1.5, NaN, Infinity, MAX_PERMITS + 1, 2 ** 64]) {
    assert.throws(() => new Semaphore(bad), RangeError, `new Semaphore(${bad})`);
    const s = new Semaphore(1);
    await assert.rejects(s.acquire(bad), RangeError, `acquire(${bad})`);
    assert.throws(() => s.tryAcquire(bad), RangeError, `tryAcquire(${bad})`);
    assert.throws(() => s.release(bad), RangeError, `release(${bad})`);
    assert.equal(s.availablePermits, 1);
  }
  const s = new Semaphore(MAX_PERMITS - 1);
  s.release(1);
  assert.equal(s.availablePermits, MAX_PERMITS);
  assert.throws(() => s.release(1), RangeError);
  assert.equal(s.availablePermits, MAX_PERMITS, 'nothing was released');
  assert.equal(s.tryAcquire(MAX_PERMITS), true);
  await assert.rejects(s.acquire(1, { signal: 'nope' }), TypeError);
});

test('runExclusive releases even if fn throws, and returns its value', async () => {
  const s = new Semaphore(2);
  assert.equal(await s.runExclusive(async () => 42, 2), 42);
  assert.equal(s.availablePermits, 2);
  await assert.rejects(
    s.runExclusive(() => {
      throw new Error('boom');
    }, 2),
    /boom/,
  );
  assert.equal(s.availablePermits, 2);
  await assert.rejects(s.runExclusive(() => Promise.reject(new Error('async boom'))), /async boom/);
  assert.equal(s.availablePermits, 2);
  // Serialises: at most 2 run at once with n = 1.
  let running = 0;
  let peak = 0;
  await Promise.all(
    Array.from({ length: 10 }, () =>
      s.runExclusive(async () => {
        running++;
        peak = Math.max(peak, running);
        await tick();
        running--;
      }),
    ),
  );
  assert.equal(peak, 2);
});

test('many waiters on one thread (more than one outcome buffer) all settle', async () => {
  const s = new Semaphore(0);
  const n = 1000;
  const order = [];
  const all = Array.from({ length: n }, (_, i) => s.acquire(1).then(() => order.push(i)));
  s.release(n);
  await Promise.all(all);
  assert.deepEqual(order, Array.from({ length: n }, (_, i) => i));
  const s2 = new Semaphore(0);
  const closed = Array.from({ length: 600 }, () => s2.acquire(1).then(() => 'ok', (e) => e.code));
  s2.close();
  assert.deepEqual(new Set(await Promise.all(closed)), new Set(['ERR_VOLT_CLOSED']));
});

test('Mutex: async-mutex idioms, FIFO, releaser is idempotent', async () => {
  const m = new Mutex();
  assert.equal(m.isLocked(), false);
  const release = await m.acquire();
  assert.equal(m.isLocked(), true);
  assert.equal(m.tryAcquire(), null);
  const order = [];
  const a = m.runExclusive(async () => {
    order.push('a');
    return 'A';
  });
  const b = m.acquire().then((r) => {
    order.push('b');
    r();
  });
  release();
  release(); // no effect
  assert.equal(await a, 'A');
  await b;
  assert.deepEqual(order, ['a', 'b']);
  assert.equal(m.isLocked(), false);
  assert.throws(() => m.release(), { message: /not locked/, code: 'ERR_VOLT_NOT_LOCKED' });
  const r2 = m.tryAcquire();
  assert.equal(typeof r2, 'function');
  m.release();
  assert.equal(m.isLocked(), false);
  const ac = new AbortController();
  const held = await m.acquire();
  const waiting = m.acquire({ signal: ac.signal });
  ac.abort(new Error('cancelled'));
  await assert.rejects(waiting, /cancelled/);
  held();
  assert.equal(m.isLocked(), false);
});

test('RwLock: readers share, a writer excludes, FIFO both ways', async () => {
  const l = new RwLock();
  const r1 = await l.acquireRead();
  const r2 = await l.acquireRead();
  assert.equal(l.isLocked(), true);
  assert.equal(l.tryAcquireWrite(), null);
  const order = [];
  const w = l.acquireWrite().then((rel) => {
    order.push('w');
    return rel;
  });
  const r3 = l.acquireRead().then((rel) => {
    order.push('r3');
    return rel;
  });
  await tick();
  assert.equal(l.tryAcquireRead(), null, 'a reader may not pass a waiting writer');
  r1();
  await tick();
  assert.deepEqual(order, []);
  r2();
  const wrel = await w;
  assert.deepEqual(order, ['w']);
  wrel();
  (await r3)();
  assert.deepEqual(order, ['w', 'r3']);
  assert.equal(l.isLocked(), false);
  assert.equal(await l.runRead(() => 'read'), 'read');
  assert.equal(await l.runWrite(() => 'write'), 'write');
  assert.equal(await l.runExclusive(() => 'x'), 'x');
  assert.equal(l.isLocked(), false);
});

test('the ESM entry exposes the same classes as the CommonJS one', async () => {
  const esm = await import('../index.mjs');
  const cjs = require('..');
  assert.equal(esm.Semaphore, cjs.Semaphore);
  assert.equal(esm.Mutex, cjs.Mutex);
  assert.equal(esm.RwLock, cjs.RwLock);
  assert.equal(esm.default, cjs);
  assert.equal(esm.MAX_PERMITS, Number.MAX_SAFE_INTEGER);
});

test('share()/attach() validate their input', () => {
  const s = new Semaphore(1);
  const v = s.share();
  assert.equal(v.kind, 'Semaphore');
  assert.equal(Semaphore.attach(v).availablePermits, 1);
  assert.throws(() => Semaphore.attach({}), TypeError);
  assert.throws(() => Semaphore.attach(null), TypeError);
  assert.throws(() => Mutex.attach(v), TypeError);
  assert.throws(() => Semaphore.attach(new Mutex().share()), TypeError);
  assert.throws(
    () => Semaphore.attach({ ...v, id: 2 ** 52 }),
    (e) => e.code === 'ERR_VOLT_GONE' && /no longer exists/.test(e.message),
  );
});

test('D4: a hand-made signal object is rejected with ERR_INVALID_ARG_TYPE, nothing queued', async () => {
  const s = new Semaphore(0);
  const fake = { aborted: false, addEventListener() {}, removeEventListener() {} };
  const fakeNoRemove = { aborted: false, addEventListener() {} };
  for (const signal of [fake, fakeNoRemove, {}, 'nope', 1, new EventTarget()]) {
    await assert.rejects(s.acquire(1, { signal }), (e) => e instanceof TypeError && e.code === 'ERR_INVALID_ARG_TYPE');
  }
  assert.equal(s.pendingCount ?? 0, 0);
  s.release(1);
  assert.equal(s.availablePermits, 1, 'nothing was queued');
});

test('D4: one waiter whose signal misbehaves cannot strand the rest of a batch', async () => {
  const s = new Semaphore(0);
  const ac = new AbortController();
  // Only the instance is patched: the library must not depend on it.
  ac.signal.removeEventListener = () => {
    throw new TypeError('removeEventListener is not a function');
  };
  const order = [];
  const all = [
    track(order, 'a', s.acquire(1, { signal: ac.signal })),
    track(order, 'b', s.acquire(1)),
    track(order, 'c', s.acquire(1, { signal: new AbortController().signal })),
  ];
  s.release(3); // settles the whole batch
  await Promise.all(all);
  assert.deepEqual(order, ['a', 'b', 'c']);
  assert.equal(s.availablePermits, 0);
  s.release(3);
  assert.equal(s.availablePermits, 3, 'every permit accounted for');
});

test('many acquires on one signal share one abort listener (no MaxListenersExceededWarning)', async () => {
  const warnings = [];
  const onWarning = (w) => warnings.push(w);
  process.on('warning', onWarning);
  try {
    const s = new Semaphore(0);
    const ac = new AbortController();
    const order = [];
    const all = Array.from({ length: 25 }, (_, i) => track(order, `w${i}`, s.acquire(1, { signal: ac.signal })));
    assert.equal(getEventListeners(ac.signal, 'abort').length, 1);
    s.release(2); // w0 and w1 granted; their records leave the signal's set
    await tick();
    assert.equal(getEventListeners(ac.signal, 'abort').length, 1);
    ac.abort(new Error('all'));
    await Promise.all(all);
    assert.deepEqual(order, ['w0', 'w1', ...Array.from({ length: 23 }, (_, i) => `w${i + 2}!all`)]);
    assert.equal(getEventListeners(ac.signal, 'abort').length, 0);
    s.release(1);
    assert.equal(s.availablePermits, 1, 'nothing left queued');
    await tick();
    assert.deepEqual(warnings.map((w) => w.name), []);
  } finally {
    process.off('warning', onWarning);
  }
});

test('errors carry Node-style codes', async () => {
  const s = new Semaphore(1);
  assert.throws(() => new Semaphore(-1), { name: 'RangeError', code: 'ERR_OUT_OF_RANGE' });
  await assert.rejects(s.acquire(1.5), { name: 'RangeError', code: 'ERR_OUT_OF_RANGE' });
  assert.throws(() => s.release(MAX_PERMITS), { name: 'RangeError', code: 'ERR_OUT_OF_RANGE' });
  await assert.rejects(s.runExclusive('nope'), { name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' });
  assert.throws(() => Semaphore.attach({}), { name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' });
  await assert.rejects(s.acquire(1, { signal: {} }), { name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' });
});
