'use strict';
// Packaging: `npm pack` produces a tarball that a fresh project installs with
// `npm install <tarball>`, after which both require() and import work.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const PKG = path.resolve(__dirname, '..');
const NPM_FLAGS = ['--no-audit', '--no-fund', '--loglevel=error'];

function npm(args, cwd) {
  return execFileSync('npm', [...args, ...NPM_FLAGS], { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

test('npm pack + npm install <tarball> in a fresh project: require and import work', () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'volt-sem-pack-'));
  try {
    const out = npm(['pack', '--json', '--pack-destination', tmp], PKG);
    const [info] = JSON.parse(out);
    const files = info.files.map((f) => f.path).sort();
    for (const f of ['index.js', 'index.mjs', 'index.d.ts', 'index.d.mts', 'package.json', 'volt-sem.linux-x64-gnu.node']) {
      assert.ok(files.includes(f), `${f} is in the tarball (${files.join(', ')})`);
    }
    assert.ok(!files.some((f) => f.startsWith('test/') || f.startsWith('node_modules/')), 'no tests or deps packed');
    for (const f of ['LICENSE-MIT', 'LICENSE-APACHE']) {
      assert.ok(files.includes(f), `${f} is in the tarball`);
      assert.deepEqual(fs.readFileSync(path.join(PKG, f)), fs.readFileSync(path.join(PKG, '..', f)), `${f} is the repository's`);
    }
    const tarball = path.join(tmp, info.filename);

    const proj = path.join(tmp, 'app');
    fs.mkdirSync(proj);
    fs.writeFileSync(path.join(proj, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', private: true }));
    npm(['install', '--offline', tarball], proj);
    assert.ok(fs.existsSync(path.join(proj, 'node_modules', 'volt-sem', 'volt-sem.linux-x64-gnu.node')));

    const cjs = `const { Semaphore } = require('volt-sem');
      (async () => { const s = new Semaphore(3); await s.acquire(2); s.release(2);
        console.log('cjs', s.availablePermits); })();`;
    const esm = `import { Semaphore, Mutex } from 'volt-sem';
      import volt from 'volt-sem';
      const s = new Semaphore(3); await s.acquire(2);
      console.log('esm', s.availablePermits, typeof Mutex, volt.Semaphore === Semaphore);`;
    const run = (args) => execFileSync(process.execPath, args, { cwd: proj, encoding: 'utf8' }).trim();
    assert.equal(run(['-e', cjs]), 'cjs 3');
    assert.equal(run(['--input-type=module', '-e', esm]), 'esm 1 function true');
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
