'use strict';
// A Node process of the shared-limit scenes (demo/scenes/scene.py): opens the
// semaphore with its label, asks for its permits, prints `granted`, then
// releases when a line arrives on stdin (or holds until it is killed).
const path = require('node:path');
const readline = require('node:readline');
const { Semaphore } = require(path.resolve(__dirname, '..', '..', 'bindings-node'));

async function main() {
  const [kind, name, total, label, n, url] = process.argv.slice(2);
  const sem =
    kind === 'named'
      ? Semaphore.open(name, Number(total), { label })
      : await Semaphore.connect(url, name, Number(total), { label, lease: 2000 });
  console.log('ready');
  await sem.acquire(Number(n));
  console.log('granted');
  const rl = readline.createInterface({ input: process.stdin });
  await new Promise((resolve) => rl.once('line', resolve));
  rl.close();
  sem.release(Number(n));
  console.log('released');
  if (kind === 'redis') await sem.disconnect();
}
main().catch((e) => {
  console.error(e);
  process.exit(1);
});
