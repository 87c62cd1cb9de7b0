"""Load-independent counts of the work per contended acquire+release (issue 30).

    python bench/probe.py [--iters 2000] [--cpu-runs 5] [--cpu-iters 20000] [--top 0]

The scenario is bench.py's "contended" one: 8 tasks on Semaphore(2), each
doing ``async with sem: await asyncio.sleep(0)``. For each implementation it
counts, per acquire+release:

* Python-visible calls: every ``call`` and ``c_call`` event `sys.setprofile`
  sees (Python frames and calls of C functions made from Python code);
* loop iterations (``BaseEventLoop._run_once``) and ``loop.call_soon`` calls,
  both counted by wrapping them on the loop instance;

and then the CPU time per operation (user+sys, ``time.process_time``) over
``--cpu-runs`` alternating runs, on asyncio's loop and on uvloop when it is
installed. The counts do not move with the machine's load; the CPU times
confirm them. ``--top N`` lists the N most frequent calls per implementation.

``--run IMPL`` only runs the scenario (``--iters`` per task, no counting),
for a tool that counts from outside: the difference between two runs of
``valgrind --tool=callgrind --cache-sim=yes python bench/probe.py --run
volt_sem --iters N`` (N = 1000 and 3000) divided by 16,000 gives the
instructions and simulated instruction-cache misses per operation; ``strace
-c -e trace=getpid`` counts the system calls (``--uvloop``: on uvloop).
"""

import argparse
import asyncio
import collections
import statistics
import sys
import time

import volt_sem
from bench import FloorSemaphore  # the task switching alone

try:
    import uvloop
except ImportError:
    uvloop = None


IMPLS = {
    "floor (no-op)": FloorSemaphore,
    "volt_sem": volt_sem.Semaphore,
    "asyncio.Semaphore": asyncio.Semaphore,
}
TASKS, PERMITS = 8, 2


async def contended(sem, iters, ready=None):
    async def worker():
        for _ in range(iters):
            async with sem:
                await asyncio.sleep(0)

    tasks = [asyncio.ensure_future(worker()) for _ in range(TASKS)]
    await asyncio.sleep(0)  # every task started (and parked) before counting
    if ready is not None:
        ready()
    await asyncio.gather(*tasks)


def count(make, iters, top):
    """(calls, run_once, call_soon) per operation, and the call histogram."""
    loop = asyncio.new_event_loop()
    counters = collections.Counter()
    on = [False]
    run_once = loop._run_once
    call_soon = loop.call_soon

    def counted_run_once():
        if on[0]:
            counters["run_once"] += 1
        return run_once()

    def counted_call_soon(*args, **kwargs):
        if on[0]:
            counters["call_soon"] += 1
        return call_soon(*args, **kwargs)

    loop._run_once = counted_run_once
    loop.call_soon = counted_call_soon
    hist = collections.Counter()
    own = {counted_run_once.__code__, counted_call_soon.__code__}

    def profile(frame, event, arg):
        if event == "call":
            if frame.f_code in own:
                return
            hist[frame.f_code.co_qualname if hasattr(frame.f_code, "co_qualname") else frame.f_code.co_name] += 1
        elif event == "c_call":
            if arg is run_once or arg is call_soon:
                return
            hist["C " + getattr(arg, "__qualname__", getattr(arg, "__name__", repr(arg)))] += 1

    def start():
        on[0] = True
        sys.setprofile(profile)

    try:
        loop.run_until_complete(contended(make(PERMITS), iters, start))
    finally:
        sys.setprofile(None)
        loop.close()
    ops = TASKS * iters
    calls = sum(hist.values())
    return calls / ops, counters["run_once"] / ops, counters["call_soon"] / ops, hist


def cpu_per_op(make, iters, new_loop):
    loop = new_loop()
    try:
        t0 = time.process_time()
        loop.run_until_complete(contended(make(PERMITS), iters))
        return (time.process_time() - t0) / (TASKS * iters) * 1e9
    finally:
        loop.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=2000, help="iterations per task for the counts")
    ap.add_argument("--cpu-runs", type=int, default=5, help="alternating CPU-time runs (0: none)")
    ap.add_argument("--cpu-iters", type=int, default=20000, help="iterations per task per CPU-time run")
    ap.add_argument("--top", type=int, default=0, help="list the N most frequent calls")
    ap.add_argument("--run", choices=list(IMPLS), help="only run the scenario with this implementation")
    ap.add_argument("--uvloop", action="store_true", help="with --run: on uvloop")
    args = ap.parse_args()
    if args.run:
        new_loop = uvloop.new_event_loop if args.uvloop else asyncio.new_event_loop
        loop = new_loop()
        try:
            loop.run_until_complete(contended(IMPLS[args.run](PERMITS), args.iters))
        finally:
            loop.close()
        return
    ops = TASKS * args.iters
    print(f"8 tasks on Semaphore(2), async with + sleep(0); per acquire+release ({ops} ops):")
    print(f"{'':20} {'calls':>8} {'_run_once':>10} {'call_soon':>10}")
    for name, make in IMPLS.items():
        calls, iters, soons, hist = count(make, args.iters, args.top)
        print(f"{name:20} {calls:8.1f} {iters:10.2f} {soons:10.2f}")
        for fn, n in hist.most_common(args.top):
            print(f"    {n / ops:6.2f}  {fn}")
    if args.cpu_runs <= 0:
        return
    loops = {"asyncio": asyncio.new_event_loop}
    if uvloop is not None:
        loops["uvloop"] = uvloop.new_event_loop
    for loop_name, new_loop in loops.items():
        times = {name: [] for name in IMPLS}
        for _ in range(args.cpu_runs):
            for name, make in IMPLS.items():
                times[name].append(cpu_per_op(make, args.cpu_iters, new_loop))
        ratios = [v / a for v, a in zip(times["volt_sem"], times["asyncio.Semaphore"])]
        print(f"CPU ns/op ({loop_name}, median of {args.cpu_runs}): "
              + ", ".join(f"{k} {statistics.median(v):,.0f}" for k, v in times.items())
              + f"; volt_sem/asyncio {statistics.median(ratios):.3f}"
              + f" ({min(ratios):.3f}-{max(ratios):.3f})")


if __name__ == "__main__":
    main()
