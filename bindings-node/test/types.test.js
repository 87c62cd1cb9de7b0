'use strict';
// index.d.ts / index.d.mts describe the API: a strict TypeScript program using
// both entries through the package's own name type-checks (tsc --noEmit).
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const PKG = path.resolve(__dirname, '..');

test('the declarations type-check a strict program using both entries', () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'volt-sem-types-'));
  try {
    // Resolve 'volt-sem' as a dependency would: node_modules/volt-sem -> this folder.
    fs.mkdirSync(path.join(tmp, 'node_modules'));
    fs.symlinkSync(PKG, path.join(tmp, 'node_modules', 'volt-sem'), 'dir');
    for (const f of ['usage.cts', 'usage.mts', 'tsconfig.json']) {
      fs.copyFileSync(path.join(__dirname, 'types', f), path.join(tmp, f));
    }
    const tsc = path.join(PKG, 'node_modules', 'typescript', 'bin', 'tsc');
    let out = '';
    try {
      execFileSync(process.execPath, [tsc, '-p', tmp], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (e) {
      out = `${e.stdout}${e.stderr}`;
    }
    assert.equal(out, '', 'tsc reported errors');
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
