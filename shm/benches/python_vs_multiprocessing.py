"""volt_sem.Semaphore.open (the shared-memory semaphore, from Python) vs
multiprocessing.Semaphore. Not part of `make test`; run by hand with a Python
where volt_sem (with Semaphore.open) is installed:

    python shm/benches/python_vs_multiprocessing.py

1. Uncontended try_acquire(1) + release(1) in one process (RUNS runs of
   ITERS pairs): Semaphore.open vs the local volt_sem.Semaphore vs
   multiprocessing.Semaphore's acquire(False) + release().
2. Cross-process hand-off: process A releases, process B's blocked
   acquire_blocking(1) (resp. multiprocessing acquire()) returns. B says it
   is about to block, A waits until B's request is in the queue
   (`inspect()`; multiprocessing: a fixed 300 us) and then 300 us more (B
   asleep in the kernel), stamps the time, releases; B stamps the time it
   woke. p50 / p99 per run.
"""

import multiprocessing as mp
import os
import statistics
import sys
import time
from multiprocessing import shared_memory

import volt_sem

RUNS = 5
ITERS = 200_000
ROUNDS = 300


def spread(v):
    v = sorted(v)
    return f"median {v[len(v) // 2]:.0f}, min {v[0]:.0f}, max {v[-1]:.0f}"


def time_pairs(pair):
    for _ in range(ITERS // 10):
        pair()
    t = time.perf_counter_ns()
    for _ in range(ITERS):
        pair()
    return (time.perf_counter_ns() - t) / ITERS


def uncontended():
    name = f"pybench-{os.getpid()}"
    shared = volt_sem.Semaphore.open(name, 4)
    local = volt_sem.Semaphore(4)
    mps = mp.get_context("spawn").Semaphore(4)

    def s():
        shared.try_acquire(1)
        shared.release(1)

    def loc():
        local.try_acquire(1)
        local.release(1)

    def m():
        mps.acquire(False)
        mps.release()

    r = {"shared": [], "local": [], "mp": []}
    for _ in range(RUNS):
        r["local"].append(time_pairs(loc))
        r["shared"].append(time_pairs(s))
        r["mp"].append(time_pairs(m))
    print(f"uncontended try_acquire(1)+release(1), ns per pair over {RUNS} runs of {ITERS}:")
    print(f"  volt_sem.Semaphore (local)          {spread(r['local'])}")
    print(f"  volt_sem.Semaphore.open (shared)    {spread(r['shared'])}")
    print(f"  multiprocessing.Semaphore           {spread(r['mp'])}")
    volt_sem.Semaphore.unlink(name)


def wait_for(words, i, value):
    t = time.monotonic()
    while words[i] != value:
        if time.monotonic() - t > 20:
            raise RuntimeError(f"word {i} never became {value}: {words[i]}")
        time.sleep(0)


def child_shared(shm_name, name):
    shm = shared_memory.SharedMemory(shm_name)
    words = shm.buf.cast("q")
    sem = volt_sem.Semaphore.open(name, 1, create=False)
    for i in range(ROUNDS):
        wait_for(words, 2, i + 1)  # the parent holds the permit
        words[1] = i + 1
        sem.acquire_blocking(1)
        words[3 + i] = time.perf_counter_ns() - words[0]
        sem.release(1)
    del words
    shm.close()


def child_mp(shm_name, go, ack):
    shm = shared_memory.SharedMemory(shm_name)
    words = shm.buf.cast("q")
    for i in range(ROUNDS):
        words[1] = i + 1
        go.acquire()
        words[3 + i] = time.perf_counter_ns() - words[0]
        ack.release()
    del words
    shm.close()


def percentiles(words):
    lat = sorted(words[3 : 3 + ROUNDS])
    return lat[len(lat) // 2] / 1000, lat[len(lat) * 99 // 100] / 1000


def handoff_shared(ctx, run):
    name = f"pybench-h-{os.getpid()}-{run}"
    shm = shared_memory.SharedMemory(create=True, size=8 * (ROUNDS + 3))
    words = shm.buf.cast("q")
    sem = volt_sem.Semaphore.open(name, 1)
    assert sem.try_acquire(1)
    p = ctx.Process(target=child_shared, args=(shm.name, name))
    p.start()
    for i in range(ROUNDS):
        words[2] = i + 1
        wait_for(words, 1, i + 1)
        # Queued, not only about to be: a release that came first would
        # leave the permit free, and this process's acquire_blocking below
        # would take it back, leaving the child waiting for ever.
        t = time.monotonic()
        while not sem.inspect().waiters:
            if time.monotonic() - t > 20:
                raise RuntimeError("the child's request never queued")
            time.sleep(50e-6)
        time.sleep(300e-6)
        words[0] = time.perf_counter_ns()
        sem.release(1)
        sem.acquire_blocking(1)
    p.join()
    assert p.exitcode == 0
    sem.release(1)
    volt_sem.Semaphore.unlink(name)
    r = percentiles(words)
    del words
    shm.close()
    shm.unlink()
    return r


def handoff_mp(ctx, run):
    shm = shared_memory.SharedMemory(create=True, size=8 * (ROUNDS + 3))
    words = shm.buf.cast("q")
    go, ack = ctx.Semaphore(0), ctx.Semaphore(0)
    p = ctx.Process(target=child_mp, args=(shm.name, go, ack))
    p.start()
    for i in range(ROUNDS):
        wait_for(words, 1, i + 1)
        time.sleep(300e-6)
        words[0] = time.perf_counter_ns()
        go.release()
        ack.acquire()
    p.join()
    assert p.exitcode == 0
    r = percentiles(words)
    del words
    shm.close()
    shm.unlink()
    return r


def handoff():
    ctx = mp.get_context("spawn")
    s, m = [], []
    for run in range(RUNS):
        s.append(handoff_shared(ctx, run))
        m.append(handoff_mp(ctx, run))
    show = lambda v: "  ".join(f"{a:.1f}/{b:.1f}" for a, b in v)  # noqa: E731
    print(f"cross-process hand-off latency, us (p50 / p99 per run of {ROUNDS} rounds):")
    print(f"  Semaphore.open: release -> blocked acquire_blocking returns   {show(s)}")
    print(f"  multiprocessing.Semaphore: release -> blocked acquire returns {show(m)}")
    print(
        "  p50 over runs: shared median %.1f; multiprocessing median %.1f"
        % (statistics.median(x[0] for x in s), statistics.median(x[0] for x in m))
    )


if __name__ == "__main__":
    with open("/proc/loadavg") as f:
        print("loadavg at start:", f.read().strip())
    parts = sys.argv[1:] or ["uncontended", "handoff"]
    if "uncontended" in parts:
        uncontended()
    if "handoff" in parts:
        handoff()
    with open("/proc/loadavg") as f:
        print("loadavg at end:", f.read().strip())
