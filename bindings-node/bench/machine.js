'use strict';
// What both benchmark scripts record about the run (machine, commit, load,
// peer versions) and how they write their JSON, in one place.
const path = require('node:path');
const fs = require('node:fs');
const os = require('node:os');
const { execFileSync } = require('node:child_process');

const PEERS = ['async-sema', 'async-mutex', 'multithreading'];

function loadavg() {
  return fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
}

function command(cmd, args) {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return 'unknown';
  }
}

function version(pkg) {
  try {
    return require(path.join(__dirname, '..', 'node_modules', pkg, 'package.json')).version;
  } catch {
    return '?';
  }
}

/** Date, commit, CPU, toolchain and peer versions of this run. */
function runMeta() {
  const cpu = os.cpus();
  return {
    date: new Date().toISOString().slice(0, 16).replace('T', ' ') + ' UTC',
    commit: command('git', ['-C', __dirname, 'rev-parse', '--short', 'HEAD']),
    cpu: `${cpu[0] ? cpu[0].model : os.arch()}, ${cpu.length} cores`,
    toolchain: `Node ${process.version}, volt-sem addon (release build)`,
    peers: PEERS.map((p) => `${p} ${version(p)}`).join(', '),
  };
}

/** Indented JSON with each list of numbers on one line (readable diffs). */
function toJson(doc) {
  return JSON.stringify(doc, null, 1).replace(/\[[-\d.,\s]+\]/g, (m) => m.replace(/\s+/g, ' ')) + '\n';
}

module.exports = { loadavg, runMeta, toJson };
