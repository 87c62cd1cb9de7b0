"""Interpreter exit while a daemon thread's loop code, called from the
extension's frames, has the GIL dropped.

An acquire's wait calls the loop's `create_future` (here a custom loop's,
Python code) under the extension's `extern "C"` frames (`Acquire.__next__`).
Any Python code may drop the GIL (a blocking call, or just the eval loop
handing it to another thread); here `create_future` sleeps until the
`atexit` hooks run and returns a little later, once the interpreter may be
finalizing. A daemon thread taking the GIL back then is ended by CPython
3.9 to 3.13 with `pthread_exit`, a forced unwind that cannot cross those
frames: the process aborted (SIGABRT). Now `volt_sem`'s `atexit` hook waits
for the thread to leave the extension's frames before finalization starts,
and the thread parks for good at its next entry: status 0. Run by
tests/test_exit.py.
"""

import asyncio
import atexit
import threading
import time

import volt_sem

sem = volt_sem.Semaphore(0)
in_call = threading.Event()
exiting = threading.Event()
# Registered after `import volt_sem`: runs before its hook (atexit is LIFO).
atexit.register(exiting.set)


class SlowCreateFutureLoop(asyncio.SelectorEventLoop):
    def create_future(self):
        in_call.set()
        while not exiting.is_set():
            time.sleep(0.01)  # releases the GIL
        time.sleep(0.3)  # back once the interpreter may be finalizing
        return super().create_future()


def loop_thread():
    loop = SlowCreateFutureLoop()
    asyncio.set_event_loop(loop)
    loop.run_until_complete(sem.acquire(1))


class SlowFinalizer:
    def __del__(self):
        time.sleep(0.2)  # the interpreter is finalizing; the GIL is free meanwhile


keep_finalizing = [SlowFinalizer() for _ in range(3)]

threading.Thread(target=loop_thread, daemon=True).start()
in_call.wait()
print("in create_future", flush=True)
