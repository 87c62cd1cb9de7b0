'use strict';
// Test support: a real redis-server of our own (Debian's package; `make
// test-node` installs it), on a free loopback port, in a temp dir, without
// persistence (--save '' --appendonly no), stopped by pid. Never a mock.

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

module.exports = { RedisServer, RedisCluster, sleep, command, answeringPid };
