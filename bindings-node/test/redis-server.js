'use strict';
// Test support: a real redis-server of our own (Debian's package; `make
// test-node` installs it), on a free loopback port, in a temp dir, without
// persistence (--save '' --appendonly no), stopped by pid. Never a mock.
//
// With VOLT_SEM_TEST_REDIS_URL set (redis://127.0.0.1:PORT, a server started
// with enough --databases), every start() is a fresh database of that
// external server instead: where no redis-server can be run (the Windows
// suite under Wine, which reaches a Linux server on the host's loopback).
// It cannot be stopped, restarted, configured or multiplied: the tests that
// need that skip with `ownServer(why)` as their reason.

const { execFile, spawn } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');

/** A free loopback port (bound and closed: a race with other processes is retried by start()). */
function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.unref();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/**
 * Sends one inline command to the server on `port`; resolves with the reply
 * text once `complete(text)` says it is whole (default: one line), or null.
 */
function command(port, line, complete = (t) => t.includes('\r\n')) {
  return new Promise((resolve) => {
    const sock = net.connect(port, '127.0.0.1');
    let data = '';
    const done = (v) => {
      sock.destroy();
      resolve(v);
    };
    sock.setTimeout(1000, () => done(null));
    sock.once('error', () => done(null));
    sock.once('connect', () => sock.write(`${line}\r\n`));
    sock.on('data', (d) => {
      data += d;
      if (complete(data)) done(data);
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** One command as a RESP array (without its final CRLF, which `command` adds). */
function resp(...args) {
  return `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}`).join('\r\n')}`;
}

/**
 * The pid of the redis-server answering on loopback `port` (INFO server's
 * process_id, after AUTH with `password`), or null (nothing there yet, a
 * refusal, no answer).
 */
async function answeringPid(port, password) {
  const req = (password === undefined ? '' : `${resp('AUTH', password)}\r\n`) + resp('INFO', 'server');
  const r = await command(port, req, (t) => /\r\nprocess_id:\d+\r\n/.test(t) || t.startsWith('-') || t.includes('\r\n-'));
  const m = r === null ? null : /\r\nprocess_id:(\d+)\r\n/.exec(r);
  return m === null ? null : Number(m[1]);
}

const EXTERNAL_URL = process.env.VOLT_SEM_TEST_REDIS_URL || null;

/**
 * A test's skip reason where it needs a server of its own (`why`: what it
 * does to the server), which an external one is not; else false.
 */
function ownServer(why) {
  return EXTERNAL_URL === null ? false : `needs a redis-server of its own (${why}); VOLT_SEM_TEST_REDIS_URL gives a shared one`;
}

/** The RESP replies in `text`, each with its end offset, as far as they are whole (simple, error, integer, bulk). */
function replyEnd(text, from = 0) {
  const eol = text.indexOf('\r\n', from);
  if (eol < 0) return -1;
  if (text[from] !== '$') return eol + 2;
  const len = Number(text.slice(from + 1, eol));
  if (len < 0) return eol + 2;
  const end = eol + 2 + len + 2;
  return text.length >= end ? end : -1;
}

/**
 * One fresh database of the external server: its number from INCR on a
 * counter in database 0 (unique across the test processes sharing it).
 */
class ExternalRedisServer {
  constructor(url, db) {
    const u = new URL(url);
    this.host = u.hostname;
    this.port = Number(u.port || 6379);
    this.db = db;
  }

  static async start({ password, extra, port } = {}) {
    if (password !== undefined || extra !== undefined || port !== undefined) {
      throw new Error('VOLT_SEM_TEST_REDIS_URL: an external server takes no password, arguments or port (skip the test: ownServer())');
    }
    const probe = new ExternalRedisServer(EXTERNAL_URL, 0);
    const r = await command(probe.port, 'INCR volt-sem-test:databases');
    const db = r !== null && /^:\d+\r\n$/.test(r) ? Number(r.slice(1)) : NaN;
    if (!Number.isInteger(db)) throw new Error(`VOLT_SEM_TEST_REDIS_URL ${EXTERNAL_URL}: no answer to INCR (${JSON.stringify(r)})`);
    const s = new ExternalRedisServer(EXTERNAL_URL, db);
    const sel = await s.query('DBSIZE');
    if (sel !== ':0\r\n') throw new Error(`VOLT_SEM_TEST_REDIS_URL: database ${db} is not a fresh one (${JSON.stringify(sel)}; start the server with more --databases)`);
    return s;
  }

  get pid() {
    throw new Error('an external redis-server has no pid of ours');
  }

  url() {
    return `redis://${this.host}:${this.port}/${this.db}`;
  }

  /** One command in this database: its reply (the rest as `command`), or null. */
  async query(line, complete = (t) => t.includes('\r\n')) {
    const r = await command(this.port, `SELECT ${this.db}\r\n${line}`, (t) => {
      const end = replyEnd(t);
      return end > 0 && (t[0] === '-' || complete(t.slice(end)));
    });
    if (r === null) return null;
    if (!r.startsWith('+OK\r\n')) throw new Error(`SELECT ${this.db}: ${r}`);
    return r.slice(5);
  }

  restartEmpty() {
    throw new Error('an external redis-server cannot be restarted here');
  }

  kill() {
    throw new Error('an external redis-server cannot be killed here');
  }

  signal() {
    throw new Error('an external redis-server cannot be signalled here');
  }

  stop() {}

  /** Empties this database (the server is the script's to stop). */
  async close() {
    await this.query('FLUSHDB');
  }
}

class RedisServer {
  constructor(password, extra = []) {
    this.password = password;
    this.extra = extra;
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'volt-sem-node-redis-'));
    this.child = null;
    this.port = 0;
  }

  /**
   * Starts a server, retrying on another free port if the chosen one was
   * taken; on a given `port`, one attempt (its caller picks another).
   */
  static async start({ password, extra, port } = {}) {
    if (EXTERNAL_URL !== null) return ExternalRedisServer.start({ password, extra, port });
    const s = new RedisServer(password, extra);
    for (let i = 0; i < (port === undefined ? 5 : 1); i++) {
      s.port = port ?? (await freePort());
      if (await s.#spawn()) return s;
    }
    fs.rmSync(s.dir, { recursive: true, force: true });
    throw new Error(
      port === undefined
        ? 'could not start redis-server (is it installed? `make redis-server` installs it)'
        : `could not start redis-server on port ${port}`,
    );
  }

  async #spawn() {
    const args = ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', this.dir];
    if (this.password !== undefined) args.push('--requirepass', this.password);
    args.push(...this.extra);
    const child = spawn('redis-server', args, { stdio: 'ignore' });
    let exited = false;
    child.once('exit', () => {
      exited = true;
    });
    child.once('error', () => {
      exited = true;
    });
    this.child = child;
    // Ready when the process answering on the port is ours, not on any
    // PONG: the port can be handed to another test's server too (another
    // test file runs beside this one) before ours binds it; ours then exits,
    // and the other one must not be taken for it.
    for (let i = 0; i < 500 && !exited; i++) {
      if ((await answeringPid(this.port, this.password)) === child.pid) return true;
      await sleep(10);
    }
    this.stop();
    return false;
  }

  get pid() {
    return this.child.pid;
  }

  /** The database of url() (always the default one here). */
  get db() {
    return 0;
  }

  /** One command (see `command`): its reply, or null. */
  query(line, complete) {
    return command(this.port, line, complete);
  }

  url() {
    const auth = this.password === undefined ? '' : `:${this.password}@`;
    return `redis://${auth}127.0.0.1:${this.port}`;
  }

  /** Restarts the server empty on the same port (no persistence: the state is gone). */
  async restartEmpty() {
    await this.kill();
    if (!(await this.#spawn())) throw new Error('redis-server did not come back');
  }

  /** SIGKILL, and waits for the exit. */
  kill() {
    const c = this.child;
    if (c === null || c.exitCode !== null || c.signalCode !== null) return Promise.resolve();
    const gone = new Promise((r) => c.once('exit', r));
    c.kill('SIGKILL');
    return gone;
  }

  signal(sig) {
    process.kill(this.child.pid, sig);
  }

  stop() {
    const c = this.child;
    if (c !== null && c.exitCode === null && c.signalCode === null) {
      try {
        process.kill(c.pid, 'SIGCONT'); // in case a test left it stopped
      } catch {}
      c.kill('SIGKILL');
    }
  }

  async close() {
    await this.kill();
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Whether nothing listens on loopback `port` now. */
function portFree(port) {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.unref();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/**
 * A 3-node local Redis Cluster (no replicas), made with `redis-cli --cluster
 * create`. Each node needs its port and port + 10000 (the cluster bus) free.
 */
class RedisCluster {
  constructor(nodes) {
    this.nodes = nodes;
  }

  static async start() {
    if (EXTERNAL_URL !== null) throw new Error('VOLT_SEM_TEST_REDIS_URL: no cluster of an external server (skip the test: ownServer())');
    const nodes = [];
    let taken = 0;
    try {
      while (nodes.length < 3) {
        const port = 20000 + Math.floor(Math.random() * 20000);
        if (!(await portFree(port)) || !(await portFree(port + 10000))) continue;
        // Taken between the check and the bind (another test file's server
        // runs beside this one): another port, a bounded number of times.
        const node = await RedisServer.start({
          port,
          extra: ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf'],
        }).catch((e) => {
          if (++taken > 20) throw e;
          return null;
        });
        if (node !== null) nodes.push(node);
      }
      const addrs = nodes.map((n) => `127.0.0.1:${n.port}`);
      await new Promise((resolve, reject) => {
        execFile('redis-cli', ['--cluster', 'create', ...addrs, '--cluster-replicas', '0', '--cluster-yes'], (err, out) =>
          err ? reject(new Error(`cluster create: ${err.message} ${out}`)) : resolve(),
        );
      });
      const c = new RedisCluster(nodes);
      for (let i = 0; ; i++) {
        const states = await Promise.all(nodes.map((n) => command(n.port, 'CLUSTER INFO', (t) => t.includes('cluster_stats_messages'))));
        if (states.every((t) => t !== null && t.includes('cluster_state:ok'))) return c;
        if (i > 3000) throw new Error('the cluster never reached cluster_state:ok');
        await sleep(10);
      }
    } catch (e) {
      await Promise.all(nodes.map((n) => n.close()));
      throw e;
    }
  }

  /** Seed URLs, comma-separated (as `connect` takes them with `cluster: true`). */
  url() {
    return this.nodes.map((n) => n.url()).join(',');
  }

  /** The index of the node that owns `key`'s slot. */
  async owner(key) {
    const r = await command(this.nodes[0].port, `CLUSTER KEYSLOT ${key}`);
    return Math.floor((Number(r.slice(1)) * 3) / 16384);
  }

  async close() {
    await Promise.all(this.nodes.map((n) => n.close()));
  }
}

module.exports = { RedisServer, RedisCluster, sleep, command, answeringPid, ownServer, EXTERNAL_URL };
