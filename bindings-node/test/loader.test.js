'use strict';
// binding.js, the loader: which binary a platform gets, how musl is told from
// glibc, the errors where there is no binary, and the published layout it relies
// on (one npm/<key>/ package per supported platform, with matching os/cpu/libc).
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { PLATFORMS, loadNative, platformKey, isMusl } = require('../binding.js');
const { mainManifest } = require('../npm/pack.js');

const PKG = path.resolve(__dirname, '..');
const VERSION = require('../package.json').version;
const GLIBC_LDD = '#! /bin/bash\n# This is the glibc ldd\nTEXTDOMAIN=libc\nRTLDLIST="/lib64/ld-linux-x86-64.so.2"\n';
const MUSL_LDD = '#!/bin/sh\nexec /lib/ld-musl-x86_64.so.1 --list "$@"\n';
const never = (name) => () => assert.fail(`the ${name} probe is not consulted`);

function probes({ lddFile = null, report = null, lddVersion = null }) {
  return { lddFile: () => lddFile, report: () => report, lddVersion: () => lddVersion };
}

function emptyDir(t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'volt-sem-loader-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('platform keys: libc on Linux, the MinGW build on Windows, platform-arch elsewhere', () => {
  assert.equal(platformKey('linux', 'x64', () => false), 'linux-x64-gnu');
  assert.equal(platformKey('linux', 'arm64', () => true), 'linux-arm64-musl');
  assert.equal(platformKey('win32', 'x64', never('musl')), 'win32-x64-gnu');
  assert.equal(platformKey('darwin', 'arm64', never('musl')), 'darwin-arm64');
  assert.equal(platformKey('freebsd', 'x64', never('musl')), 'freebsd-x64');
  assert.deepEqual([...PLATFORMS].sort(), [
    'darwin-arm64', 'darwin-x64', 'linux-arm64-gnu', 'linux-arm64-musl', 'linux-x64-gnu', 'linux-x64-musl', 'win32-x64-gnu',
  ]);
});

test('musl detection: /usr/bin/ldd first, then the process report, then ldd --version', () => {
  assert.equal(isMusl({ ...probes({ lddFile: MUSL_LDD }), report: never('report'), lddVersion: never('ldd') }), true);
  assert.equal(isMusl({ ...probes({ lddFile: GLIBC_LDD }), report: never('report'), lddVersion: never('ldd') }), false);
  // No /usr/bin/ldd: the report decides (glibc names its runtime version; on musl a loader is mapped).
  const glibcReport = { header: { glibcVersionRuntime: '2.36' }, sharedObjects: ['/lib/x86_64-linux-gnu/libc.so.6'] };
  const muslReport = { header: {}, sharedObjects: ['/usr/bin/node', '/lib/ld-musl-aarch64.so.1'] };
  assert.equal(isMusl({ ...probes({ report: glibcReport }), lddVersion: never('ldd') }), false);
  assert.equal(isMusl({ ...probes({ report: muslReport }), lddVersion: never('ldd') }), true);
  assert.equal(isMusl({ ...probes({ report: { header: {}, sharedObjects: ['/usr/lib/libc.musl-x86_64.so.1'] } }), lddVersion: never('ldd') }), true);
  // Neither: `ldd --version` (musl prints "musl libc" on stderr, which the probe includes).
  assert.equal(isMusl(probes({ lddVersion: 'musl libc (x86_64)\nVersion 1.2.5\n' })), true);
  assert.equal(isMusl(probes({ lddVersion: 'ldd (Debian GLIBC 2.36-9) 2.36\n' })), false);
  assert.equal(isMusl(probes({})), false, 'no evidence of musl: glibc');
});

test('musl detection on this machine agrees with the process report', () => {
  const report = process.report.getReport();
  const musl = !report.header.glibcVersionRuntime;
  assert.equal(isMusl(), musl);
  assert.equal(platformKey(process.platform, process.arch), `${process.platform}-${process.arch}-${musl ? 'musl' : 'gnu'}`);
});

test('an unsupported platform: ERR_VOLT_UNSUPPORTED_PLATFORM naming it and listing the supported ones', (t) => {
  const dir = emptyDir(t);
  for (const [platform, arch, key] of [
    ['freebsd', 'x64', 'freebsd-x64'],
    ['linux', 'riscv64', 'linux-riscv64-gnu'],
    ['win32', 'arm64', 'win32-arm64-gnu'],
  ]) {
    assert.throws(
      () => loadNative({ platform, arch, musl: () => false, dir, require: never('require') }),
      (err) => {
        assert.equal(err.code, 'ERR_VOLT_UNSUPPORTED_PLATFORM');
        assert.equal(err.platform, key);
        assert.deepEqual(err.supported, [...PLATFORMS]);
        assert.ok(err.message.includes(`(${key})`), err.message);
        for (const k of PLATFORMS) assert.ok(err.message.includes(k), `${k} listed: ${err.message}`);
        return true;
      },
    );
  }
});

test('a supported platform whose package is missing: ERR_VOLT_BINARY_NOT_FOUND naming the package', (t) => {
  const dir = emptyDir(t);
  assert.throws(
    () => loadNative({ platform: 'darwin', arch: 'arm64', dir }),
    (err) => {
      assert.equal(err.code, 'ERR_VOLT_BINARY_NOT_FOUND');
      assert.equal(err.platform, 'darwin-arm64');
      assert.match(err.message, /volt-sem-darwin-arm64/);
      assert.equal(err.cause.code, 'MODULE_NOT_FOUND');
      return true;
    },
  );
});

test('a development build next to the package comes first; a failing binary is ERR_VOLT_BINARY_LOAD', (t) => {
  const dir = emptyDir(t);
  const seen = [];
  const fake = (id) => {
    seen.push(id);
    return { id, version: VERSION };
  };
  // No development build: the platform package.
  assert.deepEqual(loadNative({ platform: 'linux', arch: 'arm64', musl: () => true, dir, require: fake }), { id: 'volt-sem-linux-arm64-musl', version: VERSION });
  // A development build, even on a platform nothing is published for.
  for (const key of ['linux-arm64-musl', 'freebsd-x64']) fs.writeFileSync(path.join(dir, `volt-sem.${key}.node`), '');
  assert.deepEqual(loadNative({ platform: 'linux', arch: 'arm64', musl: () => true, dir, require: fake }), { id: path.join(dir, 'volt-sem.linux-arm64-musl.node'), version: VERSION });
  assert.deepEqual(loadNative({ platform: 'freebsd', arch: 'x64', dir, require: fake }), { id: path.join(dir, 'volt-sem.freebsd-x64.node'), version: VERSION });
  assert.equal(seen.length, 3);

  const broken = () => {
    throw new Error('wrong ELF class');
  };
  for (const [platform, arch] of [['linux', 'arm64'], ['darwin', 'x64']]) {
    assert.throws(
      () => loadNative({ platform, arch, musl: () => true, dir, require: broken }),
      (err) => err.code === 'ERR_VOLT_BINARY_LOAD' && err.cause.message === 'wrong ELF class' && err.message.includes('wrong ELF class'),
    );
  }
});

test('the addon exports its version, which is the package\'s', () => {
  const native = loadNative();
  assert.equal(native.version, VERSION);
});

test('a binary of another version is refused: ERR_VOLT_BINARY_VERSION naming both versions', (t) => {
  const dir = emptyDir(t);
  const refused = (found, what) => (err) => {
    assert.equal(err.code, 'ERR_VOLT_BINARY_VERSION');
    assert.equal(err.expected, VERSION);
    assert.equal(err.found, found);
    assert.equal(err.platform, 'linux-x64-gnu');
    assert.ok(err.message.includes(`version ${found ?? 'unknown'}`) && err.message.includes(`version ${VERSION}`), err.message);
    assert.ok(err.message.includes(what), err.message);
    return true;
  };
  const opts = (native) => ({ platform: 'linux', arch: 'x64', musl: () => false, dir, require: () => native });
  // The platform package of another release, or of none recorded.
  assert.throws(() => loadNative(opts({ version: '0.0.9' })), refused('0.0.9', 'volt-sem-linux-x64-gnu'));
  assert.throws(() => loadNative(opts({})), refused(null, 'volt-sem-linux-x64-gnu'));
  // A stale development build comes first, and is refused the same way.
  const file = path.join(dir, 'volt-sem.linux-x64-gnu.node');
  fs.writeFileSync(file, '');
  assert.throws(() => loadNative(opts({ version: '0.0.9' })), refused('0.0.9', file));
  assert.throws(() => loadNative(opts({ maxPermits: 1 })), refused(null, file));
  assert.deepEqual(loadNative(opts({ version: VERSION })), { version: VERSION });
});

test('a real development build under JavaScript of a newer version: require("volt-sem") names both versions (child)', (t) => {
  // The package's JavaScript with its version bumped, beside this build's
  // binary: what a checkout whose JavaScript moved on and whose native part
  // was not rebuilt loads.
  const native = fs.readdirSync(PKG).find((f) => /^volt-sem\..*\.node$/.test(f));
  if (!native) return t.skip('no development build here (`make -C bindings-node build`)');
  const dir = emptyDir(t);
  for (const f of ['index.js', 'binding.js']) fs.copyFileSync(path.join(PKG, f), path.join(dir, f));
  fs.copyFileSync(path.join(PKG, native), path.join(dir, native));
  const manifest = JSON.parse(fs.readFileSync(path.join(PKG, 'package.json'), 'utf8'));
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ ...manifest, version: '99.0.0' }));
  const script = `try { require(${JSON.stringify(dir)}); console.log('{"code":"loaded"}'); }
    catch (e) { console.log(JSON.stringify({ code: e.code, expected: e.expected, found: e.found, message: e.message })); }`;
  const out = JSON.parse(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' }));
  assert.equal(out.code, 'ERR_VOLT_BINARY_VERSION', out.message);
  assert.equal(out.expected, '99.0.0');
  assert.equal(out.found, VERSION);
  assert.ok(out.message.includes(path.join(dir, native)), out.message);
  assert.ok(out.message.includes('version 99.0.0') && out.message.includes(`version ${VERSION}`), out.message);
});

test('require("volt-sem") on a platform with no binary throws the typed error (child with process.platform/arch overridden)', () => {
  for (const [platform, arch, key] of [['aix', 'ppc64', 'aix-ppc64'], ['linux', 'ia32', 'linux-ia32-gnu'], ['darwin', 'riscv64', 'darwin-riscv64']]) {
    const script = `Object.defineProperty(process, 'platform', { value: ${JSON.stringify(platform)} });
      Object.defineProperty(process, 'arch', { value: ${JSON.stringify(arch)} });
      try { require(${JSON.stringify(PKG)}); console.log('loaded'); }
      catch (e) { console.log(JSON.stringify({ code: e.code, platform: e.platform, message: e.message })); }`;
    const out = JSON.parse(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' }));
    assert.equal(out.code, 'ERR_VOLT_UNSUPPORTED_PLATFORM');
    assert.equal(out.platform, key);
    assert.ok(out.message.includes(`(${key})`) && PLATFORMS.every((k) => out.message.includes(k)), out.message);
  }
});

test('one npm/<key> package per supported platform, with os/cpu/libc matching its key, at the main version', () => {
  const main = mainManifest();
  assert.equal(main.os, undefined);
  assert.equal(main.cpu, undefined);
  assert.deepEqual(Object.keys(main.optionalDependencies).sort(), PLATFORMS.map((k) => `volt-sem-${k}`).sort());
  assert.ok(Object.values(main.optionalDependencies).every((v) => v === main.version));
  assert.equal(main.napi.targets.length, PLATFORMS.length);
  const dirs = fs.readdirSync(path.join(PKG, 'npm'), { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name);
  assert.deepEqual(dirs.sort(), [...PLATFORMS].sort());
  for (const key of PLATFORMS) {
    const m = JSON.parse(fs.readFileSync(path.join(PKG, 'npm', key, 'package.json'), 'utf8'));
    const [platform, arch, libc] = key.split('-');
    assert.equal(m.name, `volt-sem-${key}`);
    assert.equal(m.version, main.version);
    assert.equal(m.main, `volt-sem.${key}.node`);
    assert.deepEqual(m.os, [platform]);
    assert.deepEqual(m.cpu, [arch]);
    // npm's libc field is Linux-only: on another OS any value makes npm skip the package.
    assert.deepEqual(m.libc, platform === 'linux' ? [libc === 'musl' ? 'musl' : 'glibc'] : undefined, key);
    assert.ok(m.files.includes(m.main));
  }
});
