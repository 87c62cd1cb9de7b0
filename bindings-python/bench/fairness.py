"""Fairness: how long a large request (weight 3) waits amid a stream of small
ones (weight 1), and how evenly the small clients share the grants.

    python bench/fairness.py [--runs 5] [--out bench/results/fairness.json]

The scenario is the one of core/benches/fairness.rs and
bindings-node/bench/fairness.js: a limit of 4 permits; 6 small clients in a
tight loop (acquire 1, hold it across one ``await asyncio.sleep(0)``, release,
again); one large client that sleeps 1 ms, asks for 3 permits, holds them
across one ``sleep(0)``, releases, and does it again, 200 times per run. A run
ends after the large client's 200 requests, or when one of them has waited
1 s: then the small clients stop, so that request gets its permits
("starved": served only because the traffic stopped).

Two variants: every client on one asyncio loop (volt_sem, asyncio.Semaphore,
aiologic), and the small clients split over two threads with a loop each, the
large one on the first (volt_sem and aiologic only: asyncio.Semaphore belongs to
one loop).

asyncio.Semaphore and aiologic.Semaphore have no weighted acquire: their large
request is three acquires of 1 in a row, each kept while asking for the next.

Measured per run: the large request's waiting time (call to grant); how many
small requests overtook it: asked after it (a ticket is taken just before each
call) and were served while small clients held at least 2 permits, so while the
large request could not have its 3 yet (a lower bound: the permit a served
large request leaves free is not counted; on one loop the count is exact,
across two threads a call that reaches the semaphore just before the other
thread's can count as one); the grants of each small client.
"""

import argparse
import asyncio
import itertools
import platform
import sys
import threading
import time

import volt_sem
from machine import loadavg, run_meta, to_json

try:
    import aiologic
except ImportError:
    aiologic = None

PERMITS = 4
SMALL_CLIENTS = 6
BIG = 3
REQUESTS = 200
PAUSE_S = 0.001
STARVED_S = 1.0  # a large request waiting this long stops the small clients


class Volt:
    weighted = True
    how = "acquire(3)"

    def __init__(self):
        self.s = volt_sem.Semaphore(PERMITS)

    async def acquire(self, n):
        await self.s.acquire(n)

    def release(self, n):
        self.s.release(n)


class AsyncioSem:
    weighted = False
    how = "no weights: 3 acquires of 1 in a row"

    def __init__(self):
        self.s = asyncio.Semaphore(PERMITS)

    async def acquire(self, n):
        for _ in range(n):
            await self.s.acquire()

    def release(self, n):
        for _ in range(n):
            self.s.release()


class Aiologic:
    weighted = False
    how = "no weights: 3 acquires of 1 in a row"

    def __init__(self):
        self.s = aiologic.Semaphore(PERMITS)

    async def acquire(self, n):
        for _ in range(n):
            await self.s.async_acquire()

    def release(self, n):
        for _ in range(n):
            self.s.async_release()


class Shared:
    def __init__(self):
        self.tickets = itertools.count()
        self.big_waiting = None  # the waiting large request's ticket
        self.big_since = None  # when it asked (perf_counter)
        self.overtakes = 0
        self.small_held = 0  # permits held by small clients
        self.stop = False


async def small_client(sem, sh, grants, i):
    while not sh.stop:
        t = next(sh.tickets)
        await sem.acquire(1)
        sh.small_held += 1
        b = sh.big_waiting
        # An overtake only while the large request cannot hold its permits yet
        # (a later request may take the permit it leaves free once served).
        if b is not None and t > b and sh.small_held > PERMITS - BIG:
            sh.overtakes += 1
        grants[i] += 1
        await asyncio.sleep(0)
        sh.small_held -= 1
        sem.release(1)


async def big_client(sem, sh, out):
    for _ in range(REQUESTS):
        await asyncio.sleep(PAUSE_S)
        if sh.stop:
            break
        sh.overtakes = 0
        t = next(sh.tickets)
        sh.big_waiting = t
        start = time.perf_counter()
        sh.big_since = start
        await sem.acquire(BIG)
        out["waits_us"].append(round((time.perf_counter() - start) * 1e6, 1))
        sh.big_waiting = None
        sh.big_since = None
        out["overtaken"].append(sh.overtakes)
        sh.overtakes = 0
        if sh.stop:
            out["starved"] += 1
        await asyncio.sleep(0)
        sem.release(BIG)
    sh.stop = True


def one_run(make, loops):
    """`loops` = 1: everything on one loop; 2: small clients split over two
    threads with a loop each, the large client on the first."""
    load = loadavg()
    sem = make()
    sh = Shared()
    grants = [0] * SMALL_CLIENTS
    out = {"load": load, "starved": 0, "small_grants": grants, "overtaken": [], "waits_us": []}
    def watchdog():
        while not sh.stop:
            time.sleep(0.02)
            since = sh.big_since
            if since is not None and time.perf_counter() - since > STARVED_S:
                sh.stop = True

    timer = threading.Thread(target=watchdog)
    timer.start()
    per_loop = [list(range(i, SMALL_CLIENTS, loops)) for i in range(loops)]

    async def loop_main(k):
        tasks = [small_client(sem, sh, grants, i) for i in per_loop[k]]
        if k == 0:
            tasks.append(big_client(sem, sh, out))
        await asyncio.gather(*tasks)

    threads = [threading.Thread(target=asyncio.run, args=(loop_main(k),)) for k in range(1, loops)]
    for t in threads:
        t.start()
    asyncio.run(loop_main(0))
    for t in threads:
        t.join()
    timer.join()
    return out



def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out")
    args = ap.parse_args()
    impls = {"volt_sem": Volt, "asyncio.Semaphore": AsyncioSem}
    if aiologic is not None:
        impls["aiologic"] = Aiologic
    cases = [("1 event loop", name, cls, 1) for name, cls in impls.items()]
    cases += [("2 event loops (threads)", name, cls, 2) for name, cls in impls.items() if cls is not AsyncioSem]
    runs = {i: [] for i in range(len(cases))}
    # Round-robin over the cases, so a burst of load from elsewhere hits them alike.
    for r in range(args.runs):
        for i, (variant, name, cls, loops) in enumerate(cases):
            out = one_run(cls, loops)
            w = sorted(out["waits_us"])
            print(
                f"run {r + 1} {name} ({variant}): {len(w)} requests, wait p50 {w[len(w) // 2]:.0f} us, "
                f"max {w[-1]:.0f} us, starved {out['starved']}, load {out['load']}",
                file=sys.stderr,
            )
            runs[i].append(out)
    doc = {
        "benchmark": "fairness",
        "language": "python",
        "meta": {
            **run_meta(),
            "toolchain": f"CPython {platform.python_version()}, volt_sem wheel (release build)",
            "peers": f"aiologic {getattr(aiologic, '__version__', 'not installed') if aiologic else 'not installed'}",
            "runtime": "default asyncio loop; clients are tasks",
        },
        "scenario": {
            "permits": PERMITS,
            "small_clients": SMALL_CLIENTS,
            "big_weight": BIG,
            "requests_per_run": REQUESTS,
            "pause_ms": PAUSE_S * 1000,
            "starved_after_s": STARVED_S,
            "hold": "one await asyncio.sleep(0)",
        },
        "results": [
            {"impl": name, "variant": variant, "weighted": cls.weighted, "how": cls.how, "runs": runs[i]}
            for i, (variant, name, cls, _) in enumerate(cases)
        ],
    }
    # one line per list of numbers
    text = to_json(doc)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
