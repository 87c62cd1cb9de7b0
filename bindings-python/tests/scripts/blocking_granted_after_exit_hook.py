"""A daemon thread's blocking wait granted after volt_sem's `atexit` hook ran
(by a later hook, which then lets the GIL go for a while): the thread must
stay parked, not come back for the GIL (src/blocking.rs, module docs: a
thread that takes the GIL back once the interpreter finalizes is ended by
CPython inside the extension's frames). `argv[1]`: "local" or "named". Run
by tests/test_exit.py in a subprocess: prints "came back" only if the thread
returned from its wait.
"""

import atexit
import os
import sys
import threading
import time


def late_hook():
    sem.release(1)  # grants the daemon thread's queued request
    time.sleep(0.3)  # the GIL is free: a thread that comes back runs now
    print("late hook done", flush=True)


atexit.register(late_hook)  # before volt_sem's hook: runs after it

import volt_sem  # noqa: E402

if sys.argv[1] == "named":
    name = f"exit-grant-{os.getpid()}"
    sem = volt_sem.Semaphore.open(name, 1)
    volt_sem.Semaphore.unlink(name)
else:
    sem = volt_sem.Semaphore(1)
assert sem.try_acquire(1)


def blocker():
    got = sem.acquire_blocking(1)
    print("came back", got, flush=True)


threading.Thread(target=blocker, daemon=True).start()
while not sem.inspect().waiters:
    time.sleep(0.001)
print("queued", flush=True)
