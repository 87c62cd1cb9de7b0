'use strict';
// A Redis that refuses the backend's commands (issue 26, item 4): an ACL user
// without BLPOP, and a server demoted to a replica at run time (READONLY).
// connect fails with a typed error naming the refusal, and a refusal after
// connect does not make the agent reconnect in a loop (the defect: thousands
// of connections a second), counted with the server's own
// total_connections_received. Real redis-server (test/redis-server.js).

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { Semaphore } = require('..');
const { RedisServer, sleep, command, ownServer } = require('./redis-server.js');
const net = require('node:net');

/** At most this many connections in 2 s (the back-off allows about 8). */
const MAX_CONNECTIONS = 40;

async function connectionsReceived(port) {
  const info = await command(port, 'INFO stats', (t) => t.includes('total_commands_processed'));
  return Number(/total_connections_received:(\d+)/.exec(info)[1]);
}

/** Connections received in a 2 s window (the count's own two excluded). */
async function connectionsIn2s(port) {
  const before = await connectionsReceived(port);
  await sleep(2000);
  return (await connectionsReceived(port)) - before - 1;
}

async function freePort() {
  const s = net.createServer();
  await new Promise((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address();
  await new Promise((r) => s.close(r));
  return port;
}

const opts = { lease: 3000, commandTimeout: 1000, connectTimeout: 2000 };

test('connect refuses an ACL user without BLPOP, naming the command, and a withdrawn BLPOP is no reconnect storm', { skip: ownServer('ACL SETUSER, and its connection count') }, async () => {
  const s = await RedisServer.start();
  try {
    const user = (rules) => command(s.port, `ACL SETUSER limited on >pw ~* &* ${rules}`);
    const url = `redis://limited:pw@127.0.0.1:${s.port}`;
    assert.equal(await user('+@all -blpop'), '+OK\r\n');
    const e = await Semaphore.connect(url, 'acl', 1, opts).then(
      () => assert.fail('connected without BLPOP'),
      (err) => err,
    );
    assert.equal(e.code, 'ERR_VOLT_NO_PERMISSION', e.message);
    assert.match(e.message, /BLPOP/);
    assert.doesNotMatch(e.message, /:pw@/);

    assert.equal(await user('+@all'), '+OK\r\n');
    const sem = await Semaphore.connect(url, 'acl', 1, opts);
    await sem.acquire(1);
    await sem.release(1);
    assert.equal(await user('+@all -blpop'), '+OK\r\n');
    const n = await connectionsIn2s(s.port);
    assert.ok(n <= MAX_CONNECTIONS, `${n} connections in 2 s after BLPOP was withdrawn`);
    console.log(`BLPOP withdrawn: ${n} connections in 2 s`);
    await sem.disconnect();
  } finally {
    await s.close();
  }
});

test('a server demoted to a replica: ERR_VOLT_READ_ONLY, and no reconnect storm', { skip: ownServer('REPLICAOF, and its connection count') }, async () => {
  const s = await RedisServer.start();
  try {
    const sem = await Semaphore.connect(s.url(), 'demoted', 2, opts);
    await sem.acquire(1);
    // A replica of a master that is not there: it keeps its data, refuses writes.
    assert.equal(await command(s.port, `REPLICAOF 127.0.0.1 ${await freePort()}`), '+OK\r\n');
    const n = await connectionsIn2s(s.port);
    assert.ok(n <= MAX_CONNECTIONS, `${n} connections in 2 s after the demotion`);
    console.log(`READONLY: ${n} connections in 2 s`);
    await assert.rejects(sem.tryAcquirePermit(1), { code: 'ERR_VOLT_READ_ONLY' });
    await assert.rejects(Semaphore.connect(s.url(), 'demoted', 2, opts), { code: 'ERR_VOLT_READ_ONLY' });
    await sem.disconnect().catch(() => {});
  } finally {
    await s.close();
  }
});
