// Packaging: npm/pack.js packs the main package (JS, types, loader; no binary)
// and this platform's package (the development build, as `make build` made it);
// a fresh project installs both from the tarballs, offline, after which
// require() and import work and the addon comes from the platform package.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { PLATFORMS, platformKey } = require('../binding.js');

const PKG = path.resolve(__dirname, '..');
const NPM_FLAGS = ['--no-audit', '--no-fund', '--loglevel=error'];
const KEY = platformKey(process.platform, process.arch);

function npm(args, cwd) {
  return execFileSync('npm', [...args, ...NPM_FLAGS], { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

const list = (tarball) => execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' }).split('\n').filter(Boolean).map((f) => f.replace(/^package\//, '')).sort();
const manifest = (tarball) => JSON.parse(execFileSync('tar', ['-xzOf', tarball, 'package/package.json'], { encoding: 'utf8' }));

test('npm/pack.js + npm install of the tarballs in a fresh project: require and import work, the binary is the platform package\'s', () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'volt-sem-pack-'));
  try {
    const packed = JSON.parse(execFileSync(process.execPath, [path.join(PKG, 'npm', 'pack.js'), '--dest', tmp, '--dev', KEY], { encoding: 'utf8' }));
    const files = list(packed.main);
    for (const f of ['index.js', 'index.mjs', 'index.d.ts', 'index.d.mts', 'binding.js', 'package.json', 'README.md']) {
      assert.ok(files.includes(f), `${f} is in the main tarball (${files.join(', ')})`);
    }
    assert.ok(!files.some((f) => f.endsWith('.node')), 'the main package carries no binary');
    assert.ok(!files.some((f) => f.startsWith('test/') || f.startsWith('node_modules/') || f.startsWith('npm/')), 'no tests, deps or platform dirs packed');
    const main = manifest(packed.main);
    assert.equal(main.os, undefined, 'the main package pins no os');
    assert.equal(main.cpu, undefined, 'the main package pins no cpu');
    assert.deepEqual(main.optionalDependencies, Object.fromEntries(PLATFORMS.map((k) => [`volt-sem-${k}`, main.version])));

    const platformFiles = list(packed.platforms[KEY]);
    assert.deepEqual(platformFiles, ['LICENSE-APACHE', 'LICENSE-MIT', 'README.md', 'package.json', `volt-sem.${KEY}.node`]);
    for (const tarball of [packed.main, packed.platforms[KEY]]) {
      const dir = fs.mkdtempSync(path.join(tmp, 'x-'));
      execFileSync('tar', ['-xzf', tarball, '-C', dir]);
      for (const f of ['LICENSE-MIT', 'LICENSE-APACHE']) {
        assert.deepEqual(fs.readFileSync(path.join(dir, 'package', f)), fs.readFileSync(path.join(PKG, '..', f)), `${f} is the repository's`);
      }
    }

    const proj = path.join(tmp, 'app');
    fs.mkdirSync(proj);
    fs.writeFileSync(path.join(proj, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', private: true }));
    npm(['install', '--offline', packed.main, packed.platforms[KEY]], proj);
    assert.ok(!fs.readdirSync(path.join(proj, 'node_modules', 'volt-sem')).some((f) => f.endsWith('.node')));

    const cjs = `const { Semaphore } = require('volt-sem');
      (async () => { const s = new Semaphore(3); await s.acquire(2); s.release(2);
        const addon = Object.keys(require.cache).filter((f) => f.endsWith('.node'));
        console.log('cjs', s.availablePermits, JSON.stringify(addon)); })();`;
    const esm = `import { Semaphore, Mutex } from 'volt-sem';
      import volt from 'volt-sem';
      const s = new Semaphore(3); await s.acquire(2);
      console.log('esm', s.availablePermits, typeof Mutex, volt.Semaphore === Semaphore);`;
    const run = (args) => execFileSync(process.execPath, args, { cwd: proj, encoding: 'utf8' }).trim();
    const addon = path.join(fs.realpathSync(proj), 'node_modules', `volt-sem-${KEY}`, `volt-sem.${KEY}.node`);
    assert.equal(run(['-e', cjs]), `cjs 3 ${JSON.stringify([addon])}`);
    assert.equal(run(['--input-type=module', '-e', esm]), 'esm 1 function true');

    // Without its platform package the main package says which one is missing.
    const bare = path.join(tmp, 'bare');
    fs.mkdirSync(bare);
    fs.writeFileSync(path.join(bare, 'package.json'), JSON.stringify({ name: 'bare', version: '1.0.0', private: true }));
    npm(['install', '--offline', packed.main], bare);
    const probe = `try { require('volt-sem'); } catch (e) { console.log(e.code, e.message.includes('volt-sem-${KEY}')); }`;
    assert.equal(execFileSync(process.execPath, ['-e', probe], { cwd: bare, encoding: 'utf8' }).trim(), 'ERR_VOLT_BINARY_NOT_FOUND true');
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
