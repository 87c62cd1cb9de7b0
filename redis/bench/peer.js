// The Node peer of `make bench-redis`: npm redis-semaphore 5.x with ioredis
// (its Semaphore and MultiSemaphore), driven by redis/bench/driver.py with
// the protocol of redis/examples/redis_bench.rs: print `ready`, wait for a
// line on stdin, run, print `result <json>`. Clock stamps are
// process.hrtime.bigint() (CLOCK_MONOTONIC, as the other languages'), so
// stamps of different processes compare.
//
//   node peer.js ping URL N
//   node peer.js uncontended URL KEY N IMPL RETRY_MS
//   node peer.js handoff URL KEY N hold|wait IMPL RETRY_MS
//   node peer.js clients URL KEY LIMIT WEIGHT COUNT SECS HOLD_US IMPL RETRY_MS
//
// IMPL: `semaphore` (Semaphore(limit)) or `multi` (MultiSemaphore(limit,
// weight)); RETRY_MS: `default` (its 10 ms) or a number.
'use strict';

const path = require('path');
const readline = require('readline');
const modules = process.env.PEER_NODE_MODULES || path.join(__dirname, 'node_modules');
const Redis = require(path.join(modules, 'ioredis'));
const { Semaphore, MultiSemaphore } = require(path.join(modules, 'redis-semaphore'));

const now = () => process.hrtime.bigint();
const usSince = (t) => Number(now() - t) / 1e3;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function client(url) {
  return new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 3 });
}

function options(retry) {
  return retry === 'default' ? {} : { retryInterval: Number(retry) };
}

function makeSem(redis, impl, key, limit, weight, retry) {
  return impl === 'multi'
    ? new MultiSemaphore(redis, key, limit, weight, options(retry))
    : new Semaphore(redis, key, limit, options(retry));
}

let lines;
function readyAndWait() {
  console.log('ready');
  return new Promise((resolve) => lines.once('line', resolve));
}

function result(obj) {
  console.log('result ' + JSON.stringify(obj));
}

const round2 = (x) => Math.round(x * 100) / 100;

async function main() {
  lines = readline.createInterface({ input: process.stdin });
  const [role, url, ...a] = process.argv.slice(2);
  const redis = client(url);
  await redis.ping();
  if (role === 'ping') {
    const n = Number(a[0]);
    await readyAndWait();
    const v = [];
    for (let i = 0; i < n; i++) {
      const t = now();
      await redis.ping();
      v.push(round2(usSince(t)));
    }
    result({ us: v });
  } else if (role === 'uncontended') {
    const [key, n, impl, retry] = [a[0], Number(a[1]), a[2], a[3]];
    const warm = makeSem(redis, impl, key, 2, 1, retry);
    await warm.acquire();
    await warm.release();
    await readyAndWait();
    const v = [];
    for (let i = 0; i < n; i++) {
      const t = now();
      const s = makeSem(redis, impl, key, 2, 1, retry);
      await s.acquire();
      await s.release();
      v.push(round2(usSince(t)));
    }
    result({ us: v });
  } else if (role === 'handoff') {
    // Two processes pass one permit back and forth (see redis_bench.rs).
    const [key, n, start, impl, retry] = [a[0], Number(a[1]), a[2], a[3], a[4]];
    const coord = client(url);
    let held = null;
    if (start === 'hold') {
      held = makeSem(redis, impl, key, 1, 1, retry);
      await held.acquire();
    }
    await readyAndWait();
    const v = [];
    for (let i = 0; i < n; i++) {
      if (held) {
        await coord.blpop(key + ':ready', 0);
        await sleep(2);
        const t0 = now();
        await held.release();
        held = null;
        await coord.lpush(key + ':t0', t0.toString());
        await coord.blpop(key + ':got', 0);
      } else {
        await coord.lpush(key + ':ready', '1');
        const s = makeSem(redis, impl, key, 1, 1, retry);
        await s.acquire();
        const t1 = now();
        await coord.lpush(key + ':got', '1');
        const [, t0] = await coord.blpop(key + ':t0', 0);
        v.push(round2(Number(t1 - BigInt(t0)) / 1e3));
        held = s;
      }
    }
    if (held) await held.release();
    result({ us: v });
    coord.disconnect();
  } else if (role === 'clients') {
    const [key, limit, weight, count, secs, holdUs, impl, retry] = [
      a[0], Number(a[1]), Number(a[2]), Number(a[3]), Number(a[4]), Number(a[5]), a[6], a[7]];
    const conns = [];
    for (let i = 0; i < count; i++) {
      const c = client(url);
      await c.ping();
      conns.push(c);
    }
    await readyAndWait();
    let stop = false;
    let timeouts = 0;
    const grants = [];
    const loop = async (i) => {
      while (!stop) {
        const s = makeSem(conns[i], impl, key, limit, weight, retry);
        const sent = now();
        try {
          await s.acquire();
        } catch (e) {
          timeouts++; // acquireTimeout (10 s by default) passed
          continue;
        }
        const granted = now();
        if (holdUs > 0) await sleep(holdUs / 1000);
        await s.release();
        grants.push([i, sent.toString(), sent.toString(), granted.toString(), 0]);
      }
    };
    const all = [];
    for (let i = 0; i < count; i++) all.push(loop(i));
    await sleep(secs * 1000);
    stop = true;
    await Promise.all(all);
    // Stamps as strings (BigInt); the driver parses them.
    result({ weight, pid: process.pid, timeouts, grants });
    for (const c of conns) c.disconnect();
  } else {
    throw new Error('unknown role ' + role);
  }
  redis.disconnect();
  lines.close();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
