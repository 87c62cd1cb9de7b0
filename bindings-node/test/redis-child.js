'use strict';
// A second process on a Redis semaphore (redis.test.js forks it): connects to
// the url/name/permits of its argv and runs the parent's commands, answering
// each with its outcome (its handle's label: VOLT_SEM_TEST_LABEL if set). Run without an IPC channel (e.g. picked up by
// `node --test`), it does nothing.
if (typeof process.send !== 'function') return;

const { Semaphore } = require('..');

const [url, name, permits, lease, cluster] = process.argv.slice(2);

(async () => {
  const options = { cluster: cluster === 'cluster' };
  if (lease) options.lease = Number(lease);
  if (process.env.VOLT_SEM_TEST_LABEL) options.label = process.env.VOLT_SEM_TEST_LABEL;
  const sem = await Semaphore.connect(url, name, Number(permits), options);
  process.on('message', async (m) => {
    try {
      if (m.op === 'acquire') {
        const { token } = await sem.acquirePermit(m.n);
        process.send({ op: m.op, n: m.n, token });
      } else if (m.op === 'release') {
        await sem.release(m.n);
        process.send({ op: m.op, n: m.n });
      } else if (m.op === 'exit') {
        await sem.disconnect();
        process.disconnect();
      }
    } catch (e) {
      process.send({ op: m.op, error: e.code ?? String(e) });
    }
  });
  process.send({ op: 'ready' });
})().catch((e) => {
  process.send({ op: 'ready', error: e.code ?? String(e) });
});
