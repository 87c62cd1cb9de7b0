"""Benchmarks for volt_sem's asyncio binding, in one process and one run.

    python bench/bench.py [--runs 7] [--json bench/results/throughput.json] [--quick]

Scenarios (each reports the time per acquire+release pair of every run; the
runs go round-robin over the implementations, and the report gives the median
and the spread over the runs):

1. uncontended ``async with sem:`` on one task;
2. 8 tasks on Semaphore(2), each doing acquire / ``await asyncio.sleep(0)`` / release;
3. cross-loop: 2 threads, each with its own loop and 4 tasks, sharing one
   Semaphore(2) (only volt_sem and aiologic can do this).

Implementations: volt_sem, asyncio.Semaphore, aiologic.Semaphore (if installed),
and a no-op "floor" semaphore (``async def __aenter__/__aexit__`` doing nothing)
that shows what the harness itself costs.
"""

import argparse
import asyncio
import os
import platform
import statistics
import sys
import threading
import time

import volt_sem
from machine import loadavg, run_meta, to_json

try:
    import aiologic
except ImportError:
    aiologic = None

try:
    import uvloop
except ImportError:
    uvloop = None

LOOPS = {"asyncio": asyncio.new_event_loop}
if uvloop is not None:
    LOOPS["uvloop"] = uvloop.new_event_loop


def run(coro, loop_kind="asyncio"):
    loop = LOOPS[loop_kind]()
    try:
        return loop.run_until_complete(coro)
    finally:
        loop.close()


def every_run(impls, repeats, measure):
    """Round-robin over the implementations, `repeats` times, keeping every
    run's time: background noise hits every implementation alike, and run i
    of two implementations were measured side by side."""
    times = {name: [] for name in impls}
    for _ in range(repeats):
        for name, make in impls.items():
            times[name].append(measure(make))
    return times


class FloorSemaphore:
    """A semaphore that does nothing: the cost of `async with` itself."""

    def __init__(self, permits=1):
        pass

    async def __aenter__(self):
        return None

    async def __aexit__(self, *exc):
        return None


def implementations(permits, cross_thread=False):
    impls = {"floor (no-op)": lambda: FloorSemaphore(permits), "volt_sem": lambda: volt_sem.Semaphore(permits)}
    if not cross_thread:
        impls["asyncio.Semaphore"] = lambda: asyncio.Semaphore(permits)
    if aiologic is not None:
        impls["aiologic.Semaphore"] = lambda: aiologic.Semaphore(permits)
    return impls


# -- scenario 1 -----------------------------------------------------------------


async def uncontended(sem, iters):
    t0 = time.perf_counter()
    for _ in range(iters):
        async with sem:
            pass
    return time.perf_counter() - t0


def bench_uncontended(iters, repeats, loop_kind="asyncio"):
    times = every_run(implementations(1), repeats, lambda make: run(uncontended(make(), iters), loop_kind))
    return {name: [t / iters * 1e9 for t in ts] for name, ts in times.items()}


# -- scenario 2 -----------------------------------------------------------------


async def contended(make, tasks, iters):
    sem = make()

    async def worker():
        for _ in range(iters):
            async with sem:
                await asyncio.sleep(0)

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(tasks)))
    return time.perf_counter() - t0


def bench_contended(tasks, iters, repeats, loop_kind="asyncio"):
    times = every_run(implementations(2), repeats, lambda make: run(contended(make, tasks, iters), loop_kind))
    return {name: [t / (tasks * iters) * 1e9 for t in ts] for name, ts in times.items()}


# -- scenario 3 -----------------------------------------------------------------


def cross_loop(make, threads, tasks, iters, loop_kind="asyncio"):
    sem = make()
    barrier = threading.Barrier(threads + 1)

    async def worker():
        for _ in range(iters):
            async with sem:
                await asyncio.sleep(0)

    async def loop_main():
        await asyncio.gather(*(worker() for _ in range(tasks)))

    def thread_main():
        loop = LOOPS[loop_kind]()
        try:
            barrier.wait()
            loop.run_until_complete(loop_main())
        finally:
            loop.close()

    ts = [threading.Thread(target=thread_main) for _ in range(threads)]
    for t in ts:
        t.start()
    barrier.wait()
    t0 = time.perf_counter()
    for t in ts:
        t.join()
    return time.perf_counter() - t0


def bench_cross_loop(threads, tasks, iters, repeats, loop_kind="asyncio"):
    impls = implementations(2, cross_thread=True)
    times = every_run(impls, repeats, lambda make: cross_loop(make, threads, tasks, iters, loop_kind))
    return {name: [t / (threads * tasks * iters) * 1e9 for t in ts] for name, ts in times.items()}




def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", help="write the results (every run) here")
    ap.add_argument("--runs", type=int, default=7, help="runs per implementation and scenario")
    ap.add_argument("--quick", action="store_true", help="fewer iterations (smoke run)")
    args = ap.parse_args()
    scale = 10 if args.quick else 1
    repeats = args.runs
    load = [loadavg()]
    scenarios = []

    def add(sid, title, results, loop="asyncio"):
        scenarios.append({"id": sid, "title": title, "loop": loop, "results": results})
        load.append(loadavg())
        print(f"{title} [{loop}]: " + ", ".join(f"{k} {statistics.median(v):,.0f} ns" for k, v in results.items()),
              file=sys.stderr)

    add("uncontended", "uncontended `async with`, one task", bench_uncontended(200_000 // scale, repeats))
    add("contended", "8 tasks on Semaphore(2), each holding across one `sleep(0)`",
        bench_contended(8, 20_000 // scale, repeats))
    add("cross_loop", "2 threads x (own loop, 4 tasks) on one Semaphore(2)",
        bench_cross_loop(2, 4, 10_000 // scale, repeats))
    if "uvloop" in LOOPS:
        add("contended", "8 tasks on Semaphore(2), each holding across one `sleep(0)`",
            bench_contended(8, 20_000 // scale, repeats, "uvloop"), "uvloop")
        add("cross_loop", "2 threads x (own loop, 4 tasks) on one Semaphore(2)",
            bench_cross_loop(2, 4, 10_000 // scale, repeats, "uvloop"), "uvloop")
    doc = {
        "benchmark": "throughput",
        "language": "python",
        "unit": "ns per acquire+release",
        "meta": {
            **run_meta(),
            "toolchain": f"CPython {platform.python_version()}, volt_sem wheel "
            + f"({os.environ.get('VOLT_SEM_BENCH_BUILD', 'release build')})"
            + (f", uvloop {uvloop.__version__}" if uvloop is not None else ""),
            "peers": f"aiologic {getattr(aiologic, '__version__', '?')}" if aiologic else "aiologic not installed",
            "runs": repeats,
            "load": load,
        },
        "reference": ["floor (no-op)"],
        "baseline": "volt_sem",
        "scenarios": scenarios,
    }
    # one line per list of numbers
    text = to_json(doc)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
