'use strict';
// The shipped linux-x64 addon needs nothing newer than glibc 2.17 (so it loads
// on Ubuntu 20.04, Debian 11, RHEL 8, Amazon Linux 2) and carries no symbols.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const ADDON = path.resolve(__dirname, '..', 'volt-sem.linux-x64-gnu.node');
const BASELINE = [2, 17];

function newer(v, base) {
  for (let i = 0; i < Math.max(v.length, base.length); i++) {
    const a = v[i] ?? 0;
    const b = base[i] ?? 0;
    if (a !== b) return a > b;
  }
  return false;
}

test('the addon requires at most GLIBC_2.17 (objdump -T)', () => {
  const out = execFileSync('objdump', ['-T', ADDON], { encoding: 'utf8' });
  const versions = [...new Set(out.match(/GLIBC_[0-9.]+/g) ?? [])];
  assert.ok(versions.length > 0, 'the addon links glibc dynamically');
  const tooNew = versions.filter((v) => newer(v.slice(6).split('.').map(Number), BASELINE));
  assert.deepEqual(tooNew, [], `symbol versions newer than GLIBC_${BASELINE.join('.')}`);
});

test('the addon is stripped', () => {
  const out = execFileSync('file', ['-L', ADDON], { encoding: 'utf8' });
  assert.match(out, /, stripped/);
});
