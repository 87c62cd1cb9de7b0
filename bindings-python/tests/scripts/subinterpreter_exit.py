"""A sub-interpreter that imports volt_sem and is destroyed runs its own
`atexit` hooks, volt_sem's among them: the main interpreter goes on, so its
threads' waits must go on too (the hook set the process-wide exit state, and
a thread's asyncio acquire then parked for good). Run by tests/test_exit.py.
"""

import asyncio
import threading

try:
    import _interpreters as interpreters  # CPython 3.13
except ImportError:
    import _xxsubinterpreters as interpreters  # CPython 3.9 to 3.12

import volt_sem

sub = interpreters.create()
interpreters.run_string(sub, "import volt_sem")
interpreters.destroy(sub)
print("sub-interpreter gone", flush=True)

sem = volt_sem.Semaphore(0)
done = threading.Event()


async def task():
    await sem.acquire(1)
    done.set()


threading.Thread(target=lambda: asyncio.run(task()), daemon=True).start()
sem.release(1)
# A generous bound, so that a parked thread fails the run instead of hanging it.
print("thread's acquire done" if done.wait(30) else "thread's acquire stuck", flush=True)
