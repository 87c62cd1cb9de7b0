"""The Python worker of the mixed-language stress (tests/multiproc/driver.py).

    python worker.py NAME TOTAL DEADLINE_MS SEED

Opens the name (volt_sem.Semaphore.open) and runs, until DEADLINE_MS, four
asyncio tasks on one event loop and two blocking threads. Each round has a
random weight 1..=4 and one of:

* tasks: try_acquire; ``asyncio.wait_for(sem.acquire(w), random timeout)``;
  an acquire task cancelled after a random delay; a plain ``async with``;
* threads: try_acquire; ``acquire_blocking(w, timeout=random)``.

A grant is reported to the driver's counter ("+ w") before the permits are
used and "- w" before they are released, each a synchronous round trip on the
pipes VOLT_MP_WFD / VOLT_MP_RFD, one at a time per process (a lock). At the end
it reports "d 0" and waits, still attached, until the driver's conservation
check is over; then one JSON line of counts on stdout. Any unexpected
exception exits 1.

With VOLT_MP_REDIS set (a Redis URL), the semaphore is the one stored there
under NAME (``Semaphore.connect``, lease VOLT_MP_LEASE_MS) instead of a named
segment.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import sys
import threading
import time

import volt_sem

name, total, deadline_ms, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
deadline = deadline_ms / 1000.0
rfd = int(os.environ["VOLT_MP_RFD"])
wfd = int(os.environ["VOLT_MP_WFD"])
pipe_lock = threading.Lock()
stats_lock = threading.Lock()
stats = {"grants": 0, "timeouts": 0, "cancels": 0, "try_fails": 0}


def count(key: str) -> None:
    with stats_lock:
        stats[key] += 1


def counter(sign: str, w: int) -> None:
    with pipe_lock:
        os.write(wfd, f"{sign} {w}\n".encode())
        got = b""
        while len(got) < 3:
            chunk = os.read(rfd, 3 - len(got))
            if not chunk:
                raise RuntimeError("the driver went away")
            got += chunk


def blocking(sem: volt_sem.Semaphore, rng: random.Random) -> None:
    try:
        blocking_rounds(sem, rng)
    except BaseException as e:  # a thread's exception must fail the process
        print(f"python worker {os.getpid()}: thread: {e!r}", file=sys.stderr, flush=True)
        os._exit(1)


def blocking_rounds(sem: volt_sem.Semaphore, rng: random.Random) -> None:
    while time.time() < deadline:
        w = rng.randint(1, 4)
        if rng.random() < 0.3:
            ok = sem.try_acquire(w)
            if not ok:
                count("try_fails")
                time.sleep(0.001)
                continue
        elif not sem.acquire_blocking(w, timeout=rng.uniform(0.001, 0.05)):
            count("timeouts")
            continue
        count("grants")
        counter("+", w)
        time.sleep(rng.uniform(0, 0.003))
        counter("-", w)
        sem.release(w)


async def task(sem: volt_sem.Semaphore, rng: random.Random) -> None:
    while time.time() < deadline:
        w = rng.randint(1, 4)
        mode = rng.randrange(4)
        if mode == 0:
            if not sem.try_acquire(w):
                count("try_fails")
                await asyncio.sleep(0.001)
                continue
        elif mode == 1:
            try:
                await asyncio.wait_for(sem.acquire(w), rng.uniform(0.001, 0.05))
            except asyncio.TimeoutError:
                count("timeouts")
                continue
        elif mode == 2:
            t = asyncio.ensure_future(sem.acquire(w))
            await asyncio.sleep(rng.uniform(0, 0.03))
            if not t.done():
                t.cancel()
            try:
                await t
            except asyncio.CancelledError:
                count("cancels")
                continue
        else:
            async with sem.acquire(w):
                count("grants")
                counter("+", w)
                await asyncio.sleep(rng.uniform(0, 0.003))
                counter("-", w)
            continue
        count("grants")
        counter("+", w)
        await asyncio.sleep(rng.uniform(0, 0.003))
        counter("-", w)
        sem.release(w)


async def main() -> None:
    url = os.environ.get("VOLT_MP_REDIS")
    if url:
        lease = int(os.environ["VOLT_MP_LEASE_MS"]) / 1000
        sem = volt_sem.Semaphore.connect(url, name, total, lease=lease)
    else:
        sem = volt_sem.Semaphore.open(name, total)
    threads = [
        threading.Thread(target=blocking, args=(sem, random.Random(seed * 31 + i)))
        for i in range(2)
    ]
    for t in threads:
        t.start()
    await asyncio.gather(*(task(sem, random.Random(seed * 17 + i)) for i in range(4)))
    for t in threads:
        t.join()
    # Everything released: stay attached (a leak would stay held) until the
    # driver's conservation check is over.
    counter("d", 0)
    print(json.dumps({"lang": "python", **stats}), flush=True)


asyncio.run(main())
