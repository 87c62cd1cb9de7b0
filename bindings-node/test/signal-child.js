'use strict';
// A process shut down by a signal (signals.test.js spawns it): connects two
// handles to the Redis semaphore of its argv with a 30 s lease, holds its one
// permit through the first, queues an acquire through the second, opens a
// named semaphore and holds its permit too, then prints 'ready' and waits.
// argv: url name namedName mode; mode 'line': disconnectOnSignals() only;
// 'own': also a SIGTERM/SIGINT listener of its own that exits with code 7;
// 'none': without disconnectOnSignals() (the control).
// Run without arguments (e.g. picked up by `node --test`), it does nothing.
const [url, name, namedName, mode] = process.argv.slice(2);
if (url === undefined) return;

const { Semaphore, disconnectOnSignals } = require('..');

(async () => {
  if (mode !== 'none') disconnectOnSignals();
  if (mode === 'own') {
    const mine = () => setTimeout(() => process.exit(7), 200);
    process.on('SIGTERM', mine);
    process.on('SIGINT', mine);
  }
  const holder = await Semaphore.connect(url, name, 1, { lease: 30_000 });
  await holder.acquire(1);
  const waiter = await Semaphore.connect(url, name, 1, { lease: 30_000 });
  waiter.acquire(1).catch(() => {});
  // The acquire reaches Redis asynchronously: 'ready' only once it is queued
  // there, so that the test's census sees it.
  for (let t = Date.now(); (await holder.census()).queued < 1; ) {
    if (Date.now() - t > 10_000) throw new Error('the queued acquire never reached Redis');
    await new Promise((r) => setTimeout(r, 5));
  }
  const named = Semaphore.open(namedName, 1);
  await named.acquire(1);
  console.log('ready');
})().catch((e) => {
  console.log(`failed: ${e.code ?? e}`);
  process.exit(1);
});
