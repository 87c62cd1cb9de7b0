#!/usr/bin/env node
'use strict';
// Packs the npm packages: the main `volt-sem` package and the platform
// packages `volt-sem-<key>` (npm/<key>/), each from a staged copy so nothing
// is written into the repository.
//
//   node npm/pack.js --dest DIR [--dev] [KEY...]
//
// KEY is a platform key of binding.js's PLATFORMS (default: all; with --dev,
// this machine's). A platform's binary is npm/<key>/volt-sem.<key>.node (what
// `make dist-node` builds), or with --dev the development build next to
// index.js (what `make build` builds).
// Prints a JSON object: { main: tarball, platforms: { key: tarball } }.
//
// The main package's optionalDependencies (every platform package, at the
// main package's version) are written here, into the staged package.json, as
// `napi pre-publish` does before a publish: the repository's package.json
// cannot list them, because `npm ci` of the development dependencies would
// then have to lock packages that are only published with a release.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { PLATFORMS, platformKey } = require('../binding.js');

const PKG = path.resolve(__dirname, '..');
const ROOT = path.resolve(PKG, '..');
const LICENSES = ['LICENSE-MIT', 'LICENSE-APACHE'];

function npmPack(dir, dest) {
  const out = execFileSync('npm', ['pack', '--json', '--pack-destination', dest, '--loglevel=error'], {
    cwd: dir,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return path.join(dest, JSON.parse(out)[0].filename);
}

function copy(from, to) {
  fs.mkdirSync(path.dirname(to), { recursive: true });
  fs.copyFileSync(from, to);
}

/** The main package's manifest as published: optionalDependencies added. */
function mainManifest() {
  const manifest = JSON.parse(fs.readFileSync(path.join(PKG, 'package.json'), 'utf8'));
  manifest.optionalDependencies = Object.fromEntries(PLATFORMS.map((k) => [`${manifest.name}-${k}`, manifest.version]));
  delete manifest.scripts.prepack; // the staged copy has its licences already
  return manifest;
}

function stageMain(stage) {
  const manifest = mainManifest();
  const dir = path.join(stage, 'main');
  for (const f of manifest.files) copy(path.join(LICENSES.includes(f) ? ROOT : PKG, f), path.join(dir, f));
  fs.writeFileSync(path.join(dir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  return dir;
}

function stagePlatform(stage, key, dev, version) {
  const src = path.join(PKG, 'npm', key);
  const manifest = JSON.parse(fs.readFileSync(path.join(src, 'package.json'), 'utf8'));
  if (manifest.version !== version) {
    throw new Error(`npm/${key}/package.json has version ${manifest.version}, the main package ${version}`);
  }
  const binary = `volt-sem.${key}.node`;
  const from = dev ? path.join(PKG, binary) : path.join(src, binary);
  if (!fs.existsSync(from)) throw new Error(`no ${from}: run ${dev ? 'make build' : 'make dist-node'} first`);
  const dir = path.join(stage, key);
  copy(path.join(src, 'package.json'), path.join(dir, 'package.json'));
  copy(path.join(src, 'README.md'), path.join(dir, 'README.md'));
  for (const f of LICENSES) copy(path.join(ROOT, f), path.join(dir, f));
  copy(from, path.join(dir, binary));
  return dir;
}

function main(argv) {
  let dest = null;
  let dev = false;
  const keys = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--dest') dest = path.resolve(argv[++i]);
    else if (argv[i] === '--dev') dev = true;
    else if (PLATFORMS.includes(argv[i]) || !argv[i].startsWith('-')) keys.push(argv[i]);
    else throw new Error(`unknown argument ${argv[i]} (platforms: ${PLATFORMS.join(', ')})`);
  }
  if (!dest) throw new Error('usage: node npm/pack.js --dest DIR [--dev] [KEY...]');
  fs.mkdirSync(dest, { recursive: true });
  const stage = fs.mkdtempSync(path.join(os.tmpdir(), 'volt-sem-stage-'));
  try {
    const { version } = mainManifest();
    const result = { main: npmPack(stageMain(stage), dest), platforms: {} };
    const all = dev ? [platformKey(process.platform, process.arch)] : PLATFORMS;
    for (const key of keys.length ? keys : all) {
      result.platforms[key] = npmPack(stagePlatform(stage, key, dev, version), dest);
    }
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  } finally {
    fs.rmSync(stage, { recursive: true, force: true });
  }
}

if (require.main === module) main(process.argv.slice(2));

module.exports = { mainManifest };
