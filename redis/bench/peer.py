"""The Python peer of `make bench-redis`: redis-py's `redis.asyncio.lock.Lock`
(a mutex: Python has no semaphore on Redis), driven by redis/bench/driver.py
with the protocol of redis/examples/redis_bench.rs: print `ready`, wait for a
line on stdin, run, print `result <json>`. Clock stamps are
time.monotonic_ns() (CLOCK_MONOTONIC, as the other languages').

    python peer.py ping URL N
    python peer.py uncontended URL KEY N SLEEP
    python peer.py handoff URL KEY N hold|wait SLEEP
    python peer.py clients URL KEY COUNT SECS HOLD_US SLEEP

SLEEP: `default` (the Lock's 0.1 s between tries) or seconds.
"""
import asyncio
import json
import os
import sys
import time

import redis.asyncio as aredis
from redis.asyncio.lock import Lock

now = time.monotonic_ns


def lock(r, key, sleep):
    if sleep == "default":
        return Lock(r, key, timeout=10)
    return Lock(r, key, timeout=10, sleep=float(sleep))


async def ready_and_wait():
    print("ready", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)


def result(obj):
    print("result " + json.dumps(obj, separators=(",", ":")), flush=True)


async def main():
    role, url, *a = sys.argv[1:]
    r = aredis.from_url(url)
    await r.ping()
    if role == "ping":
        n = int(a[0])
        await ready_and_wait()
        v = []
        for _ in range(n):
            t = now()
            await r.ping()
            v.append(round((now() - t) / 1e3, 2))
        result({"us": v})
    elif role == "uncontended":
        key, n, sleep = a[0], int(a[1]), a[2]
        await ready_and_wait()
        v = []
        for _ in range(n):
            t = now()
            lk = lock(r, key, sleep)
            await lk.acquire()
            await lk.release()
            v.append(round((now() - t) / 1e3, 2))
        result({"us": v})
    elif role == "handoff":
        # Two processes pass one lock back and forth (see redis_bench.rs).
        key, n, start, sleep = a[0], int(a[1]), a[2], a[3]
        coord = aredis.from_url(url)
        held = None
        if start == "hold":
            held = lock(r, key, sleep)
            await held.acquire()
        await ready_and_wait()
        v = []
        for _ in range(n):
            if held is not None:
                await coord.blpop([key + ":ready"], 0)
                await asyncio.sleep(0.002)
                t0 = now()
                await held.release()
                held = None
                await coord.lpush(key + ":t0", str(t0))
                await coord.blpop([key + ":got"], 0)
            else:
                await coord.lpush(key + ":ready", "1")
                lk = lock(r, key, sleep)
                await lk.acquire()
                t1 = now()
                await coord.lpush(key + ":got", "1")
                _, t0 = await coord.blpop([key + ":t0"], 0)
                v.append(round((t1 - int(t0)) / 1e3, 2))
                held = lk
        if held is not None:
            await held.release()
        result({"us": v})
        await coord.aclose()
    elif role == "clients":
        key, count, secs, hold_us, sleep = a[0], int(a[1]), float(a[2]), int(a[3]), a[4]
        conns = [aredis.from_url(url) for _ in range(count)]
        for c in conns:
            await c.ping()
        await ready_and_wait()
        stop = False
        grants = []

        async def loop(i):
            while not stop:
                lk = lock(conns[i], key, sleep)
                sent = now()
                await lk.acquire()
                granted = now()
                if hold_us:
                    await asyncio.sleep(hold_us / 1e6)
                await lk.release()
                grants.append([i, sent, sent, granted, 0])

        tasks = [asyncio.create_task(loop(i)) for i in range(count)]
        await asyncio.sleep(secs)
        stop = True
        await asyncio.gather(*tasks)
        result({"weight": 1, "pid": os.getpid(), "grants": grants})
        for c in conns:
            await c.aclose()
    else:
        raise SystemExit("unknown role " + role)
    await r.aclose()


asyncio.run(main())
