"""Benchmarks for volt_sem's asyncio binding, in one process and one run.

    python bench/bench.py [--out bench/RESULTS.md] [--quick]

Scenarios (each reports ns per acquire/release pair, best of several repeats):

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
import sys
import threading
import time

import volt_sem

try:
    import aiologic
except ImportError:
    aiologic = None


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


def bench_uncontended(iters, repeats):
    out = {}
    for name, make in implementations(1).items():
        best = float("inf")
        for _ in range(repeats):
            sem = make()
            best = min(best, asyncio.run(uncontended(sem, iters)))
        out[name] = best / iters * 1e9
    return out


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


def bench_contended(tasks, iters, repeats):
    out = {}
    for name, make in implementations(2).items():
        best = min(asyncio.run(contended(make, tasks, iters)) for _ in range(repeats))
        out[name] = best / (tasks * iters) * 1e9
    return out


# -- scenario 3 -----------------------------------------------------------------


def cross_loop(make, threads, tasks, iters):
    sem = make()
    barrier = threading.Barrier(threads + 1)

    async def worker():
        for _ in range(iters):
            async with sem:
                await asyncio.sleep(0)

    async def loop_main():
        await asyncio.gather(*(worker() for _ in range(tasks)))

    def thread_main():
        loop = asyncio.new_event_loop()
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


def bench_cross_loop(threads, tasks, iters, repeats):
    out = {}
    for name, make in implementations(2, cross_thread=True).items():
        best = min(cross_loop(make, threads, tasks, iters) for _ in range(repeats))
        out[name] = best / (threads * tasks * iters) * 1e9
    return out


# -- report ---------------------------------------------------------------------


def table(results, baseline_names):
    lines = ["| implementation | ns / acquire+release | " + " | ".join(f"x {b}" for b in baseline_names) + " |"]
    lines.append("|---|---:|" + "---:|" * len(baseline_names))
    for name, ns in results.items():
        ratios = []
        for b in baseline_names:
            ratios.append(f"{ns / results[b]:.2f}" if b in results else "n/a")
        lines.append(f"| {name} | {ns:,.0f} | " + " | ".join(ratios) + " |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", help="write a Markdown report here")
    ap.add_argument("--quick", action="store_true", help="fewer iterations (smoke run)")
    args = ap.parse_args()
    scale = 10 if args.quick else 1
    repeats = 3 if args.quick else 7

    r1 = bench_uncontended(200_000 // scale, repeats)
    r2 = bench_contended(8, 20_000 // scale, repeats)
    r3 = bench_cross_loop(2, 4, 10_000 // scale, repeats)

    v1 = r1["volt_sem"] / r1["floor (no-op)"]
    v2 = r2["volt_sem"] / r2["asyncio.Semaphore"]
    v3 = r3["volt_sem"] / r3["aiologic.Semaphore"] if "aiologic.Semaphore" in r3 else None

    def verdict(value, target):
        if value is None:
            return "n/a (aiologic not installed)"
        return f"{value:.2f}x (target <= {target}x: {'met' if value <= target else 'NOT met'})"

    report = f"""# volt_sem (Python) benchmark results

Generated by `make -C bindings-python bench` (`bench/bench.py`), one process, one run.
Each figure is the best of {repeats} repeats, in nanoseconds per acquire+release pair
(wall time / number of pairs). Default asyncio event loop.

Machine: {platform.machine()}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()};
Python {platform.python_version()} ({sys.implementation.name}); volt_sem abi3 wheel (release build);
aiologic {getattr(aiologic, '__version__', 'not installed') if aiologic else 'not installed'}.

## Headline ratios

| scenario | ratio | raw |
|---|---|---|
| (1) uncontended `async with`, volt_sem / no-op floor | {verdict(v1, 1.15)} | {r1['volt_sem']:,.0f} ns vs {r1['floor (no-op)']:,.0f} ns |
| (2) 8 tasks on Semaphore(2), volt_sem / asyncio.Semaphore | {verdict(v2, 0.8)} | {r2['volt_sem']:,.0f} ns vs {r2['asyncio.Semaphore']:,.0f} ns |
| (3) 2 loops x 4 tasks on one Semaphore(2), volt_sem / aiologic | {verdict(v3, 0.5)} | {r3['volt_sem']:,.0f} ns vs {r3.get('aiologic.Semaphore', float('nan')):,.0f} ns |

## (1) Uncontended `async with sem:` (one task, Semaphore(1))

{table(r1, ["floor (no-op)", "asyncio.Semaphore"])}

## (2) 8 tasks on Semaphore(2): acquire / `await asyncio.sleep(0)` / release

{table(r2, ["floor (no-op)", "asyncio.Semaphore"])}

The floor row is the harness alone (8 tasks doing `sleep(0)`), so the semaphore's own
cost is the difference to it.

## (3) Cross-loop: 2 threads x (own loop, 4 tasks) on one Semaphore(2)

{table(r3, ["floor (no-op)", "aiologic.Semaphore"])}

asyncio.Semaphore cannot take part: it is not thread-safe and binds to one loop.
Every contended hand-off here crosses threads through `loop.call_soon_threadsafe`
(volt_sem) or aiologic's own thread-safe wake-up.
"""
    print(report)
    if args.out:
        with open(args.out, "w") as f:
            f.write(report)


if __name__ == "__main__":
    main()
