"""Interpreter exit while a daemon thread's loop starts a `lease_lost()` watch.

`await sem.lease_lost()` is, on a loop that has not waited on volt_sem yet,
that loop's first wait: it connects the loop's wake channel
(`loop.add_reader`, whose selector call drops the GIL). A daemon thread that
takes the GIL back once the interpreter finalizes is ended by CPython 3.9 to
3.13 with `pthread_exit`, a forced unwind; under the extension's `extern "C"`
frames (`LeaseLost.__next__` -> `asyncio_chan` -> `_glue.asyncio_channel`)
it cannot be unwound and the process aborts (SIGABRT, status 134 / -6).

Usage: exit_in_lease_watch.py URL NAME MODE

* ``held``: the loop's `add_reader` keeps the GIL dropped until the
  interpreter is finalizing (deterministic: every run met the unwind there).
* ``race``: daemon threads start watches on fresh loops over and over while
  the main thread exits (the natural race; aborts in some runs).

Exits 0 when the daemon threads were simply ended. Run by tests/test_exit.py.
"""

import asyncio
import sys
import threading
import time

import volt_sem

url, name, mode = sys.argv[1], sys.argv[2], sys.argv[3]
sem = volt_sem.Semaphore.connect(url, name, 8, lease=10.0)
sem.acquire_blocking(1)  # lease_lost() watches the session of the latest grant
started = threading.Event()


class SetupBlockingLoop(asyncio.SelectorEventLoop):
    def add_reader(self, *args, **kwargs):
        started.set()
        while not sys.is_finalizing():
            time.sleep(0.01)  # releases the GIL; taking it back may end the thread
        return super().add_reader(*args, **kwargs)


async def watch(timeout):
    # The loop's first wait on volt_sem (the grant was a blocking acquire of
    # the main thread). The session stays alive: the watch only times out.
    try:
        await asyncio.wait_for(sem.lease_lost(), timeout)
    except asyncio.TimeoutError:
        pass


def held_thread():
    loop = SetupBlockingLoop()
    asyncio.set_event_loop(loop)
    loop.run_until_complete(watch(60))


def race_thread():
    while True:
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(watch(0.001))
        finally:
            loop.close()
        started.set()


class SlowFinalizer:
    def __del__(self):
        time.sleep(0.2)  # the interpreter is finalizing; the GIL is free meanwhile


keep_finalizing = [SlowFinalizer() for _ in range(3)]

if mode == "held":
    threading.Thread(target=held_thread, daemon=True).start()
elif mode == "race":
    for _ in range(4):
        threading.Thread(target=race_thread, daemon=True).start()
else:
    raise SystemExit(f"unknown mode {mode!r}")
started.wait()
if mode == "race":
    time.sleep(0.05)
print("watching", flush=True)
