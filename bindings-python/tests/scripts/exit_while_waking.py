"""Interpreter exit while daemon threads are waking waiters (issue 19, D1).

Three daemon threads run event loops whose tasks keep acquiring with a short
timeout; two daemon threads keep releasing. The loop class drops the GIL inside
`call_soon_threadsafe` and `call_soon` (a sleep), and an object whose finalizer
sleeps keeps the interpreter finalizing for a while, so that a daemon thread
that needs the GIL back during finalization is ended by CPython with
`pthread_exit`. The main thread returns after `argv[1]` seconds. The process
must exit with status 0: an unwind crossing an `extern "C"` frame aborts it
(status 134). Run by tests/test_exit.py in subprocesses.
"""

import asyncio
import sys
import threading
import time

import volt_sem

RUN_SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 0.3
# "asyncio": loop threads and releasers; "blocking": plus daemon threads
# waiting in acquire_blocking; "trio": plus daemon threads running trio;
# "own_loop": plus two non-daemon threads whose tasks release on their own
# loop (resolved inside release(), see `waking` in src/wake.rs) until just
# after the main thread returns (exit joins them, then finalizes).
MODE = sys.argv[2] if len(sys.argv) > 2 else "asyncio"
sem = volt_sem.Semaphore(0)
granted = [0]


class GilDroppingLoop(asyncio.SelectorEventLoop):
    def call_soon_threadsafe(self, *args, **kwargs):
        time.sleep(0.001)  # releases the GIL
        return super().call_soon_threadsafe(*args, **kwargs)

    def call_soon(self, *args, **kwargs):
        time.sleep(0)  # releases the GIL
        return super().call_soon(*args, **kwargs)


async def taker(k):
    while True:
        try:
            await asyncio.wait_for(sem.acquire(k), 0.001)
        except asyncio.TimeoutError:
            pass
        else:
            granted[0] += 1


def loop_thread():
    loop = GilDroppingLoop()
    asyncio.set_event_loop(loop)

    async def main():
        await asyncio.gather(*(taker(k) for k in (1, 2, 3)))

    loop.run_until_complete(main())


def releaser():
    while True:
        if sem.available_permits == 0:
            sem.release(1)
        time.sleep(0)


def blocker():
    while True:
        if sem.acquire_blocking(1, timeout=0.002):
            granted[0] += 1


def trio_thread():
    import trio

    async def take(k):
        while True:
            with trio.move_on_after(0.001):
                await sem.acquire(k)
                granted[0] += 1

    async def main():
        async with trio.open_nursery() as nursery:
            for k in (1, 2):
                nursery.start_soon(take, k)

    trio.run(main)


def own_loop_thread():
    """Tasks that hand a semaphore of this loop on to each other (same-loop
    wakes, through the GIL-dropping call_soon) and wake the shared one's
    waiters on other loops, until a little after the main thread returned."""
    loop = GilDroppingLoop()
    asyncio.set_event_loop(loop)
    deadline = time.monotonic() + RUN_SECONDS + 0.2

    async def main():
        own = volt_sem.Semaphore(1)

        async def worker():
            while time.monotonic() < deadline:
                async with own:
                    await asyncio.sleep(0)
                    granted[0] += 1
                sem.release(1)

        await asyncio.gather(*(worker() for _ in range(3)))

    loop.run_until_complete(main())
    loop.close()


class SlowFinalizer:
    def __del__(self):
        time.sleep(0.05)  # the interpreter is finalizing; the GIL is free meanwhile


keep_finalizing = [SlowFinalizer() for _ in range(4)]

targets = [loop_thread] * 3 + [releaser] * 2
if MODE == "blocking":
    targets += [blocker] * 2
if MODE == "trio":
    targets += [trio_thread] * 2
for target in targets:
    threading.Thread(target=target, daemon=True).start()
if MODE == "own_loop":
    for _ in range(2):
        threading.Thread(target=own_loop_thread, daemon=False).start()
time.sleep(RUN_SECONDS)
print(f"granted {granted[0]}", flush=True)
