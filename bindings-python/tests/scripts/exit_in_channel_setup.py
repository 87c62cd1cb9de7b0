"""Interpreter exit while a daemon thread's loop sets up its wake channel.

The first wait on a loop connects the loop's wake channel (`add_reader`,
whose selector call drops the GIL). Here the loop's `add_reader` keeps the GIL
dropped until the interpreter is finalizing, so the daemon thread takes it
back during finalization and CPython ends it with `pthread_exit`. Before the
fix the setup ran under the extension's `extern "C"` frames (`Acquire.__next__`
-> `park` -> `_glue.asyncio_channel`): the forced unwind could not cross them
and the process aborted (status 134) every time. Now the setup runs in a
Python frame of its own, so the thread simply ends: status 0. Run by
tests/test_exit.py.
"""

import asyncio
import sys
import threading
import time

import volt_sem

sem = volt_sem.Semaphore(0)
in_setup = threading.Event()


class SetupBlockingLoop(asyncio.SelectorEventLoop):
    def add_reader(self, *args, **kwargs):
        in_setup.set()
        while not sys.is_finalizing():
            time.sleep(0.01)  # releases the GIL; taking it back may end the thread
        return super().add_reader(*args, **kwargs)


def loop_thread():
    loop = SetupBlockingLoop()
    asyncio.set_event_loop(loop)
    loop.run_until_complete(sem.acquire(1))


class SlowFinalizer:
    def __del__(self):
        time.sleep(0.2)  # the interpreter is finalizing; the GIL is free meanwhile


keep_finalizing = [SlowFinalizer() for _ in range(3)]

threading.Thread(target=loop_thread, daemon=True).start()
in_setup.wait()
print("in setup", flush=True)
